//! The security report: what in a launch widens the sandbox, each with a stable code, a
//! severity and the profile field that causes it.
//!
//! This module holds the report's vocabulary ([`Finding`], [`Severity`], the codes), the
//! [`Report`] each table's findings (under `rules/`) are pushed into, and the report's text
//! and JSON forms. `crate::findings()` gathers the findings of a launch; `agentc explain`
//! prints the report after the explanation, `--format json` prints [`report_json`], and
//! `--deny LEVEL` fails the command when [`deny`] says a finding is at or above the level.
//!
//! | code | severity | what |
//! |---|---|---|
//! | `docker-socket` | critical | the Docker socket is mounted in any form (the socket, a file named `docker.sock`, a directory holding one such as `/run`), or `DOCKER_HOST` is passed in; needs `security.allow_docker_socket` |
//! | `bind-root` | critical | a bind of the host's `/`; needs `security.allow_root_bind` |
//! | `bind-home` | high | a bind of the home directory or a directory above it, read-only or writable; needs `security.allow_home_bind` |
//! | `bind-engine-data` | critical | a bind of a container engine's data or sockets (`/var/lib/docker`, `/var/lib/containers`, `/run/containerd`, `/run/docker*`, `~/.local/share/containers`), anything in them or a directory above one (`/var/lib`), read-only or writable; needs `security.allow_engine_data_bind` |
//! | `bind-host-system` | critical | a bind of `/proc`, `/sys`, `/dev`, `/etc`, `/boot` or `/root` (not your home), or of anything in them, read-only or writable; needs `security.allow_host_system_bind` |
//! | `bind-credential-dir` | critical | a bind of a credential directory (`.ssh`, `.docker`, `.kube`, `.aws`, `.config/gcloud`, `.gnupg`), anything in it, or `~/.config`, read-only or writable; needs `security.allow_credential_dir_bind` |
//! | `bind-workspace-ancestor` | high | a writable bind of a directory above the workspace |
//! | `egress-unrestricted` | high | `egress.mode = "unrestricted"` |
//! | `egress-unenforced` | high | a custom image in `allowlist` mode: nothing enforces the allowlist |
//! | `egress-host-path` | high | behind the egress proxy, the sandbox holds `NET_ADMIN` or `NET_RAW` (`egress.allow_net_capabilities`): the host's own addresses on its isolated network, without the proxy |
//! | `egress-tld` | high | an allowlist entry that is one label after a leading `.` or `*.` (`com`, `.io`, `*.dev`) |
//! | `egress-domain` | medium | an allowlist entry for a whole domain: a leading `.` or `*.`, or a `*` anywhere |
//! | `egress-ip-range` | medium | an allowlist or gateway bootstrap entry that is a CIDR range wider than one address |
//! | `egress-ech` | high | `egress.allow_ech`: the egress proxy lets Encrypted Client Hello through for a host, hiding the name asked for (fronting through a shared CDN) |
//! | `credentials-env` | medium | behind the egress proxy, the sandbox holds a real key in its environment: `credentials.mode = "env"`, or a provider key agentc cannot bind to a host |
//! | `isolation-lowered` | high | `AGENTC_ISOLATION_MIN` (`--isolation-min`) below the profile's `security.isolation.min` |
//! | `fuse` | high | `security.fuse`: `/dev/fuse`, `SYS_ADMIN` and AppArmor unconfined |
//! | `capability-dangerous` | high | an added capability that approaches root (`SYS_ADMIN`, `SYS_MODULE`, `SYS_PTRACE`, ...) |
//! | `capability-added` | medium | any other capability beyond the agent preset |
//! | `port-public` | high | a port published on a non-loopback address: a `network.publish` entry written out so (also one the egress proxy publishes for the sandbox), or Decant's `bind_address` |
//! | `memory-unlimited` | medium | no memory limit (`AGENTC_MEM_LIMIT=off`) |
//! | `pids-unlimited` | medium | no process limit (`AGENTC_PIDS_LIMIT=off`) |
//! | `root-writable` | medium | the root filesystem is writable |
//! | `log-rotation-off` | low | container logs grow without bound |
//! | `network-named` | low | the container joins a named network shared with other containers |
//! | `host-gateway` | low | `host.docker.internal` reaches the host's services |
//! | `workspace-writable` | low | the workspace mount is writable: the two-way door (the agent writes files the host later runs, such as git hooks) |
//! | `bind-writable` | info | any other writable bind mount the profile asks for |

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::document::LoadedProfile;
use crate::paths::Danger;
use crate::spec::{LaunchKind, LaunchSpec, Origin};

/// How serious a finding is; ordered from [`Severity::Info`] to [`Severity::Critical`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; not a weakness by itself.
    Info,
    /// A small widening, usually intended.
    Low,
    /// A widening that deserves a reason.
    Medium,
    /// A widening an attacker in the sandbox can use against the host or the network.
    High,
    /// The sandbox no longer separates the agent from the host.
    Critical,
}

impl Severity {
    /// Every severity, lowest first.
    pub const ALL: [Severity; 5] = [
        Severity::Info,
        Severity::Low,
        Severity::Medium,
        Severity::High,
        Severity::Critical,
    ];

    /// The lower-case name (`info`, `low`, `medium`, `high`, `critical`).
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl FromStr for Severity {
    type Err = String;

    /// Reads a severity case-insensitively, for `--deny LEVEL`.
    fn from_str(text: &str) -> Result<Severity, String> {
        let lower = text.trim().to_ascii_lowercase();
        Severity::ALL
            .into_iter()
            .find(|severity| severity.as_str() == lower)
            .ok_or_else(|| {
                format!("{text:?} is not a severity; use info, low, medium, high or critical")
            })
    }
}

/// One weakness of a launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Its stable identifier, such as `egress-unrestricted` (see the module's table); its
    /// severity is the code's ([`Finding::severity`]).
    pub code: FindingCode,
    /// What causes it: a profile field, an environment override or an invocation input.
    pub source: FindingSource,
    /// What is wrong, lower case.
    pub message: String,
    /// What to do about it.
    pub hint: String,
    /// The `security.allow_*` field that accepted this request, for the findings that need one.
    pub allowed_by: Option<String>,
}

impl Finding {
    /// How serious it is: its code's severity.
    pub fn severity(&self) -> Severity {
        self.code.severity()
    }

    /// What causes it, as one text: the profile field path (`mounts[0].source`), the
    /// environment override (`$AGENTC_MEM_LIMIT`) or the invocation input (`--workspace`); the
    /// `field` of [`report_json`].
    pub fn field(&self) -> String {
        match &self.source {
            FindingSource::Field { field, .. } => field.clone(),
            FindingSource::Environment { variable } => format!("${variable}"),
            FindingSource::Invocation { input } => input.clone(),
        }
    }

    /// The 1-based line and column in the profile of the field that causes it, where the
    /// profile writes it (or its nearest written ancestor).
    pub fn position(&self) -> Option<(usize, usize)> {
        match &self.source {
            FindingSource::Field { position, .. } => *position,
            _ => None,
        }
    }
}

impl fmt::Display for Finding {
    /// The finding on one line, as a report and `agentc run`'s warnings show it:
    /// `high egress-unrestricted at profile line 5 (egress.mode): MESSAGE` (no hint).
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{} {} at {}: {}",
            self.severity(),
            self.code,
            self.source,
            self.message
        )
    }
}

/// What causes a finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FindingSource {
    /// A profile field (`mounts[0].source`): at its 1-based line and column where the profile
    /// writes it (or its nearest written ancestor), else `None`, a value the profile leaves to
    /// its default or its preset.
    Field {
        /// The field's path.
        field: String,
        /// Its line and column, where the profile writes it.
        position: Option<(usize, usize)>,
    },
    /// An environment override, such as `AGENTC_MEM_LIMIT` (named without `$`).
    Environment {
        /// The variable's name.
        variable: String,
    },
    /// An input of the invocation, such as `--workspace`.
    Invocation {
        /// The input, as the command line spells it.
        input: String,
    },
}

impl From<(String, Option<(usize, usize)>)> for FindingSource {
    /// A profile field and its position.
    fn from((field, position): (String, Option<(usize, usize)>)) -> FindingSource {
        FindingSource::Field { field, position }
    }
}

impl fmt::Display for FindingSource {
    /// Where a report says the finding is: `profile line 5 (egress.mode)`, `default
    /// (egress.mode)` for a field the profile does not write, `$AGENTC_MEM_LIMIT` or
    /// `--workspace`.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FindingSource::Field {
                field,
                position: Some((line, _)),
            } => write!(formatter, "profile line {line} ({field})"),
            FindingSource::Field {
                field,
                position: None,
            } => write!(formatter, "default ({field})"),
            FindingSource::Environment { variable } => write!(formatter, "${variable}"),
            FindingSource::Invocation { input } => formatter.write_str(input),
        }
    }
}

/// Declares [`FindingCode`]: each code once, with its text and its severity.
macro_rules! finding_codes {
    ($($(#[$doc:meta])* $variant:ident = $text:literal, $severity:ident;)*) => {
        /// A finding's stable identifier (the module's table), with its one severity.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum FindingCode {
            $($(#[$doc])* $variant,)*
        }

        impl FindingCode {
            /// Every code, in the order of the module's table.
            pub const ALL: &'static [FindingCode] = &[$(FindingCode::$variant,)*];

            /// The code as reports and `--format json` spell it (`egress-unrestricted`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(FindingCode::$variant => $text,)*
                }
            }

            /// How serious a finding of this code is.
            pub fn severity(self) -> Severity {
                match self {
                    $(FindingCode::$variant => Severity::$severity,)*
                }
            }
        }
    };
}

finding_codes! {
    /// The Docker socket is mounted in any form, or `DOCKER_HOST` is passed in.
    DockerSocket = "docker-socket", Critical;
    /// A bind of the host's `/`.
    BindRoot = "bind-root", Critical;
    /// A bind of the home directory or a directory above it.
    BindHome = "bind-home", High;
    /// A bind of a container engine's data or sockets, anything in them or a directory above one.
    BindEngineData = "bind-engine-data", Critical;
    /// A bind of `/proc`, `/sys`, `/dev`, `/etc`, `/boot` or `/root`, or of anything in them.
    BindHostSystem = "bind-host-system", Critical;
    /// A bind of a credential directory, anything in it, or `~/.config`.
    BindCredentialDir = "bind-credential-dir", Critical;
    /// A writable bind of a directory above the workspace.
    BindWorkspaceAncestor = "bind-workspace-ancestor", High;
    /// `egress.mode = "unrestricted"`.
    EgressUnrestricted = "egress-unrestricted", High;
    /// A custom image in `allowlist` mode: nothing enforces the allowlist.
    EgressUnenforced = "egress-unenforced", High;
    /// Behind the egress proxy, the sandbox holds `NET_ADMIN` or `NET_RAW`.
    EgressHostPath = "egress-host-path", High;
    /// An allowlist entry that is one label after a leading `.` or `*.`.
    EgressTld = "egress-tld", High;
    /// An allowlist entry for a whole domain.
    EgressDomain = "egress-domain", Medium;
    /// An allowlist or gateway bootstrap entry that is a range wider than one address.
    EgressIpRange = "egress-ip-range", Medium;
    /// `egress.allow_ech`: Encrypted Client Hello let through for a host.
    EgressEch = "egress-ech", High;
    /// Behind the egress proxy, the sandbox holds a real key in its environment.
    CredentialsEnv = "credentials-env", Medium;
    /// `AGENTC_ISOLATION_MIN` (`--isolation-min`) below the profile's floor.
    IsolationLowered = "isolation-lowered", High;
    /// `security.fuse`: `/dev/fuse`, `SYS_ADMIN` and AppArmor unconfined.
    Fuse = "fuse", High;
    /// An added capability that approaches root.
    CapabilityDangerous = "capability-dangerous", High;
    /// Any other capability beyond the agent preset.
    CapabilityAdded = "capability-added", Medium;
    /// A port published on a non-loopback address.
    PortPublic = "port-public", High;
    /// No memory limit.
    MemoryUnlimited = "memory-unlimited", Medium;
    /// No process limit.
    PidsUnlimited = "pids-unlimited", Medium;
    /// The root filesystem is writable.
    RootWritable = "root-writable", Medium;
    /// Container logs grow without bound.
    LogRotationOff = "log-rotation-off", Low;
    /// The container joins a named network shared with other containers.
    NetworkNamed = "network-named", Low;
    /// `host.docker.internal` reaches the host's services.
    HostGateway = "host-gateway", Low;
    /// The workspace mount is writable: the two-way door.
    WorkspaceWritable = "workspace-writable", Low;
    /// Any other writable bind mount the profile asks for.
    BindWritable = "bind-writable", Info;
}

impl fmt::Display for FindingCode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl Serialize for FindingCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for FindingCode {
    fn eq(&self, text: &&str) -> bool {
        self.as_str() == *text
    }
}

impl PartialEq<String> for FindingCode {
    fn eq(&self, text: &String) -> bool {
        self.as_str() == text
    }
}

/// Whether any finding is at or above `level` (for `--deny LEVEL`).
pub fn deny(findings: &[Finding], level: Severity) -> bool {
    findings.iter().any(|finding| finding.severity() >= level)
}

/// The highest severity among the findings, if any.
pub fn highest(findings: &[Finding]) -> Option<Severity> {
    findings.iter().map(|finding| finding.severity()).max()
}

/// The report as JSON: `{"findings": [...], "counts": {...}, "highest": ...}`; each finding has
/// `code`, `severity`, `field`, `line`, `column`, `message`, `hint` and `allowed_by`.
pub fn report_json(findings: &[Finding]) -> Value {
    let items: Vec<Value> = findings
        .iter()
        .map(|finding| {
            json!({
                "code": finding.code,
                "severity": finding.severity(),
                "field": finding.field(),
                "line": finding.position().map(|p| p.0),
                "column": finding.position().map(|p| p.1),
                "message": finding.message,
                "hint": finding.hint,
                "allowed_by": finding.allowed_by,
            })
        })
        .collect();
    let mut counts = serde_json::Map::new();
    for severity in Severity::ALL.iter().rev() {
        let count = findings
            .iter()
            .filter(|f| f.severity() == *severity)
            .count();
        counts.insert(severity.as_str().to_string(), json!(count));
    }
    json!({
        "findings": items,
        "counts": counts,
        "highest": highest(findings),
    })
}

/// The report as text, as `agentc explain` ends: a `findings` line, then per finding
/// `  - high egress-unrestricted at profile line 5 (egress.mode): MESSAGE` (`default (FIELD)`
/// for a field the profile does not write, `$VARIABLE` or `--option` for other causes) and an
/// indented hint; `  (none)` when there are none.
pub fn report_text(findings: &[Finding]) -> String {
    let mut text = String::from("findings\n");
    if findings.is_empty() {
        text.push_str("  (none)\n");
    }
    for finding in findings {
        text.push_str(&format!("  - {finding}\n"));
        text.push_str(&format!("    hint: {}\n", finding.hint));
    }
    text
}

/// The findings of one launch being gathered.
pub(crate) struct Report<'a> {
    /// The profile.
    pub loaded: &'a LoadedProfile,
    /// The launch.
    pub spec: &'a LaunchSpec,
    /// The findings so far.
    pub list: Vec<Finding>,
}

impl Report<'_> {
    /// The origin recorded at `key`.
    pub fn origin(&self, key: &str) -> Option<&Origin> {
        self.spec.origins.get(key)
    }

    /// What the origin recorded at `key` names as a finding's source; the profile field
    /// `fallback` when it names none (a default or a preset).
    pub fn field_of(&self, key: &str, fallback: &str) -> FindingSource {
        match self.origin(key) {
            Some(Origin::Profile {
                field,
                line,
                column,
            }) => {
                let position = line.zip(*column).or_else(|| self.position(field));
                (field.clone(), position).into()
            }
            Some(Origin::Environment { variable }) => FindingSource::Environment {
                variable: variable.clone(),
            },
            Some(Origin::Invocation { input }) => FindingSource::Invocation {
                input: input.clone(),
            },
            _ => (fallback.to_string(), self.position(fallback)).into(),
        }
    }

    /// The position of a field, or of its nearest written ancestor.
    pub fn position(&self, field: &str) -> Option<(usize, usize)> {
        match self.loaded.location(field) {
            crate::error::Location::Profile { position, .. } => position,
            _ => None,
        }
    }

    /// Adds a finding caused by `source`: a [`FindingSource`], or a profile field and its
    /// position.
    pub fn push(
        &mut self,
        code: FindingCode,
        source: impl Into<FindingSource>,
        message: String,
        hint: &str,
    ) {
        self.list.push(Finding {
            code,
            source: source.into(),
            message,
            hint: hint.to_string(),
            allowed_by: None,
        });
    }

    /// Adds a finding that an `allow_*` field accepted, naming it.
    pub fn push_allowed(
        &mut self,
        code: FindingCode,
        at: impl Into<FindingSource>,
        danger: Danger,
        message: String,
        hint: &str,
    ) {
        let allow = danger.allow_field();
        let allowed = match self.position(allow) {
            Some((line, _)) if self.loaded.position(allow).is_some() => {
                format!("{message}; accepted by {allow} (line {line})")
            }
            _ => format!("{message}; accepted by {allow}"),
        };
        self.push(code, at, allowed, hint);
        if let Some(last) = self.list.last_mut() {
            last.allowed_by = Some(allow.to_string());
        }
    }

    /// Whether the launch is the agent's (a run or a custom sandbox).
    pub fn agent_launch(&self) -> bool {
        matches!(self.spec.kind, LaunchKind::Run | LaunchKind::Sandbox)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities_order_and_parse() {
        assert!(Severity::Critical > Severity::High);
        assert_eq!("HIGH".parse::<Severity>(), Ok(Severity::High));
        assert!("urgent".parse::<Severity>().is_err());
        assert_eq!(FindingCode::ALL.len(), 28);
        let texts: std::collections::BTreeSet<&str> =
            FindingCode::ALL.iter().map(|code| code.as_str()).collect();
        assert_eq!(texts.len(), 28, "each code is spelled once");
    }
}
