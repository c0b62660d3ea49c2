//! The security report: what in a launch widens the sandbox, each with a stable code, a
//! severity and the profile field that causes it.
//!
//! [`findings`] reads a loaded profile and the [`LaunchSpec`] resolved from it, and never fails:
//! a valid spec always has a report (possibly empty). `agentc explain` prints the report after
//! the explanation (see [`mod@crate::explain`]), `--format json` prints [`report_json`], and
//! `--deny LEVEL` fails the command when [`deny`] says a finding is at or above the level.
//!
//! This module also owns the classification of dangerous host paths (the Docker socket in any
//! form, `/`, the home directory), which [`mod@crate::validate`] and [`mod@crate::resolve`] use to
//! refuse such binds unless the profile accepts them with an explicit `[security] allow_*`
//! field. Paths are classified lexically (after [`normalize_path`]); symlinks are not
//! followed, so a link with an innocent name that points at the socket is not recognized.
//!
//! | code | severity | what |
//! |---|---|---|
//! | `docker-socket` | critical | the Docker socket is mounted in any form (the socket, a file named `docker.sock`, a directory holding one such as `/run`), or `DOCKER_HOST` is passed in; needs `security.allow_docker_socket` |
//! | `bind-root` | critical | a bind of the host's `/`; needs `security.allow_root_bind` |
//! | `bind-home` | high | a bind of the home directory or a directory above it, read-only or writable; needs `security.allow_home_bind` |
//! | `bind-workspace-ancestor` | high | a writable bind of a directory above the workspace |
//! | `egress-unrestricted` | high | `egress.mode = "unrestricted"` |
//! | `egress-unenforced` | high | a custom image in `allowlist` mode: nothing enforces the allowlist |
//! | `egress-tld` | high | an allowlist entry that is one label after a leading `.` or `*.` (`com`, `.io`, `*.dev`) |
//! | `egress-domain` | medium | an allowlist entry for a whole domain: a leading `.` or `*.`, or a `*` anywhere |
//! | `egress-ip-range` | medium | an allowlist or gateway bootstrap entry that is a CIDR range wider than one address |
//! | `fuse` | high | `security.fuse`: `/dev/fuse`, `SYS_ADMIN` and AppArmor unconfined |
//! | `capability-dangerous` | high | an added capability that approaches root (`SYS_ADMIN`, `SYS_MODULE`, `SYS_PTRACE`, ...) |
//! | `capability-added` | medium | any other capability beyond the agent preset |
//! | `port-public` | high | a port published on a non-loopback address (today: Decant's `bind_address`) |
//! | `memory-unlimited` | medium | no memory limit (`AGENTC_MEM_LIMIT=off`) |
//! | `pids-unlimited` | medium | no process limit (`AGENTC_PIDS_LIMIT=off`) |
//! | `root-writable` | medium | the root filesystem is writable |
//! | `log-rotation-off` | low | container logs grow without bound |
//! | `network-named` | low | the container joins a named network shared with other containers |
//! | `host-gateway` | low | `host.docker.internal` reaches the host's services |
//! | `workspace-writable` | low | the workspace mount is writable: the two-way door (the agent writes files the host later runs, such as git hooks) |
//! | `bind-writable` | info | any other writable bind mount the profile asks for |

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::capability::Capability;
use crate::load::LoadedProfile;
use crate::profile::{AgentName, SecurityConfig};
use crate::resolve::normalize_path;
use crate::spec::{Action, ContainerSpec, EnvValue, HostTarget, LaunchKind, LaunchSpec};
use crate::spec::{MountSource, Network, Origin};

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
    /// Stable identifier, such as `egress-unrestricted` (see the module's table).
    pub code: &'static str,
    /// How serious it is.
    pub severity: Severity,
    /// What causes it: a profile field path (`mounts[0].source`), an environment override
    /// (`$AGENTC_MEM_LIMIT`) or an invocation input (`--workspace`).
    pub field: String,
    /// 1-based line and column of the field in the profile, where known.
    pub position: Option<(usize, usize)>,
    /// What is wrong, lower case.
    pub message: String,
    /// What to do about it.
    pub hint: String,
    /// The `security.allow_*` field that accepted this request, for the findings that need one.
    pub allowed_by: Option<String>,
}

/// A host path that a profile may bind only with an explicit `[security] allow_*` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Danger {
    /// The host's root directory `/` (which also holds the socket and every home).
    Root,
    /// The home directory, or a directory above it such as `/home`.
    Home,
    /// The Docker socket, a file named `docker.sock`, or a directory holding the socket.
    DockerSocket,
}

impl Danger {
    /// The profile field that accepts it, such as `security.allow_docker_socket`.
    pub fn allow_field(self) -> &'static str {
        match self {
            Danger::Root => "security.allow_root_bind",
            Danger::Home => "security.allow_home_bind",
            Danger::DockerSocket => "security.allow_docker_socket",
        }
    }

    /// Whether the profile's `[security]` table accepts it.
    pub fn allowed(self, security: &SecurityConfig) -> bool {
        match self {
            Danger::Root => security.allow_root_bind,
            Danger::Home => security.allow_home_bind,
            Danger::DockerSocket => security.allow_docker_socket,
        }
    }

    /// `allow_root_bind = true`, as written in a `[security]` table.
    pub fn allow_setting(self) -> String {
        let name = self.allow_field().trim_start_matches("security.");
        format!("[security] {name} = true")
    }
}

/// Every finding code with its severity, in the order of the table above.
pub const CODES: &[(&str, Severity)] = &[
    ("docker-socket", Severity::Critical),
    ("bind-root", Severity::Critical),
    ("bind-home", Severity::High),
    ("bind-workspace-ancestor", Severity::High),
    ("egress-unrestricted", Severity::High),
    ("egress-unenforced", Severity::High),
    ("egress-tld", Severity::High),
    ("egress-domain", Severity::Medium),
    ("egress-ip-range", Severity::Medium),
    ("fuse", Severity::High),
    ("capability-dangerous", Severity::High),
    ("capability-added", Severity::Medium),
    ("port-public", Severity::High),
    ("memory-unlimited", Severity::Medium),
    ("pids-unlimited", Severity::Medium),
    ("root-writable", Severity::Medium),
    ("log-rotation-off", Severity::Low),
    ("network-named", Severity::Low),
    ("host-gateway", Severity::Low),
    ("workspace-writable", Severity::Low),
    ("bind-writable", Severity::Info),
];

/// The Docker socket's usual paths; the rootless daemon's `/run/user/UID/docker.sock` and
/// Docker Desktop's `~/.docker/run/docker.sock` are recognized by shape.
pub const DOCKER_SOCKETS: &[&str] = &["/var/run/docker.sock", "/run/docker.sock"];

/// The environment variable that points a docker client at a daemon.
pub const DOCKER_HOST: &str = "DOCKER_HOST";

/// `ancestor` is `path` or a directory above it (both absolute and normalized).
fn contains(ancestor: &str, path: &str) -> bool {
    ancestor == path || ancestor == "/" || path.starts_with(&format!("{ancestor}/"))
}

/// Whether an absolute, normalized host path exposes the Docker socket: it is one of
/// [`DOCKER_SOCKETS`] or a directory above one (`/run`, `/var/run`, `/var`, `/`), a file named
/// `docker.sock` anywhere, the rootless daemon's `/run/user[/UID]`, or Docker Desktop's
/// `.docker`, `.docker/run` or `.docker/desktop`.
pub fn exposes_docker_socket(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or_default();
    if name == "docker.sock" || DOCKER_SOCKETS.iter().any(|socket| contains(path, socket)) {
        return true;
    }
    for runtime in ["/run/user", "/var/run/user"] {
        if let Some(rest) = path.strip_prefix(runtime) {
            let rest = rest.trim_start_matches('/');
            if rest.is_empty() || (!rest.contains('/') && rest.bytes().all(|b| b.is_ascii_digit()))
            {
                return true;
            }
        }
    }
    [".docker", ".docker/run", ".docker/desktop"]
        .iter()
        .any(|tail| path.ends_with(&format!("/{tail}")))
}

/// What an absolute, normalized host path is that needs an `allow_*` field, if anything.
/// `home` is the caller's home directory; pass `None` where it is not known (loading), which
/// leaves only [`Danger::Root`] and [`Danger::DockerSocket`]. The first match wins: `/` is
/// only [`Danger::Root`].
pub fn classify_path(path: &str, home: Option<&str>) -> Option<Danger> {
    let path = normalize_path(path);
    if path == "/" {
        return Some(Danger::Root);
    }
    if let Some(home) = home {
        let home = normalize_path(home);
        if home != "/" && contains(&path, &home) {
            return Some(Danger::Home);
        }
    }
    exposes_docker_socket(&path).then_some(Danger::DockerSocket)
}

/// Origin key under which [`mod@crate::resolve`] records the `allow_*` field that accepted the
/// bind at `target`: `mounts.<target>.allowed_by`.
pub fn allowed_by_key(target: &str) -> String {
    format!("mounts.{target}.allowed_by")
}

/// Capabilities that come close to root on the host or in the kernel.
pub const DANGEROUS_CAPABILITIES: &[Capability] = &[
    Capability::SysAdmin,
    Capability::SysModule,
    Capability::SysRawio,
    Capability::SysPtrace,
    Capability::SysBoot,
    Capability::DacReadSearch,
    Capability::Bpf,
    Capability::Perfmon,
    Capability::MacAdmin,
    Capability::MacOverride,
];

/// How much of the network an allowlist entry opens, when it is more than one host:
/// `(code, severity, what)`.
///
/// - an IP network in CIDR form wider than one address (`10.0.0.0/8`; not `/32` or `/128`):
///   `egress-ip-range`;
/// - after removing a leading `*.` or `.`, a single label (`com`, `.io`, `*.dev`):
///   `egress-tld`; `localhost` alone is not reported;
/// - a leading `.` or `*.` before two or more labels, or a `*` anywhere: `egress-domain`.
pub fn host_scope(entry: &str) -> Option<(&'static str, Severity, String)> {
    let host = entry.trim().trim_end_matches('.').to_ascii_lowercase();
    if let Some((address, prefix)) = host.split_once('/') {
        let address: IpAddr = address.parse().ok()?;
        let prefix: u8 = prefix.parse().ok()?;
        let single = match address {
            IpAddr::V4(_) => prefix >= 32,
            IpAddr::V6(_) => prefix >= 128,
        };
        return (!single).then(|| {
            (
                "egress-ip-range",
                Severity::Medium,
                format!("the network {host}"),
            )
        });
    }
    if host.parse::<IpAddr>().is_ok() {
        return None;
    }
    let (wild, rest) = match host.strip_prefix("*.").or_else(|| host.strip_prefix('.')) {
        Some(rest) => (true, rest),
        None => (false, host.as_str()),
    };
    let labels = rest.split('.').filter(|label| !label.is_empty()).count();
    if labels <= 1 && rest != "localhost" {
        return Some((
            "egress-tld",
            Severity::High,
            format!("every host under {rest}"),
        ));
    }
    if wild || rest.contains('*') {
        return Some((
            "egress-domain",
            Severity::Medium,
            format!("every host under {}", rest.trim_start_matches("*.")),
        ));
    }
    None
}

/// The findings of one launch, most severe first, then by code and field; the order is stable.
pub fn findings(loaded: &LoadedProfile, spec: &LaunchSpec) -> Vec<Finding> {
    let mut report = Report {
        loaded,
        spec,
        list: Vec::new(),
    };
    if let Action::Container(container) = &spec.action {
        report.container(container);
    }
    report.decant_elsewhere();
    let mut list = report.list;
    list.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.code.cmp(b.code))
            .then_with(|| a.field.cmp(&b.field))
    });
    list.dedup();
    list
}

/// Whether any finding is at or above `level` (for `--deny LEVEL`).
pub fn deny(findings: &[Finding], level: Severity) -> bool {
    findings.iter().any(|finding| finding.severity >= level)
}

/// The highest severity among the findings, if any.
pub fn highest(findings: &[Finding]) -> Option<Severity> {
    findings.iter().map(|finding| finding.severity).max()
}

/// The report as JSON: `{"findings": [...], "counts": {...}, "highest": ...}`; each finding has
/// `code`, `severity`, `field`, `line`, `column`, `message`, `hint` and `allowed_by`.
pub fn report_json(findings: &[Finding]) -> Value {
    let items: Vec<Value> = findings
        .iter()
        .map(|finding| {
            json!({
                "code": finding.code,
                "severity": finding.severity,
                "field": finding.field,
                "line": finding.position.map(|p| p.0),
                "column": finding.position.map(|p| p.1),
                "message": finding.message,
                "hint": finding.hint,
                "allowed_by": finding.allowed_by,
            })
        })
        .collect();
    let mut counts = serde_json::Map::new();
    for severity in Severity::ALL.iter().rev() {
        let count = findings.iter().filter(|f| f.severity == *severity).count();
        counts.insert(severity.as_str().to_string(), json!(count));
    }
    json!({
        "findings": items,
        "counts": counts,
        "highest": highest(findings),
    })
}

/// The whole `agentc explain --format json` document: the profile, the launch kind, the spec
/// and the report of [`report_json`].
pub fn explain_json(loaded: &LoadedProfile, spec: &LaunchSpec) -> Value {
    let report = findings(loaded, spec);
    let mut value = report_json(&report);
    if let Value::Object(map) = &mut value {
        map.insert("profile".to_string(), json!(spec.profile));
        map.insert("file".to_string(), json!(loaded.file));
        map.insert("kind".to_string(), json!(spec.kind));
        map.insert(
            "spec".to_string(),
            serde_json::to_value(spec).unwrap_or(Value::Null),
        );
    }
    value
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
        let at = match (finding.position, finding.field.starts_with(['$', '-'])) {
            (_, true) => finding.field.clone(),
            (Some((line, _)), false) => format!("profile line {line} ({})", finding.field),
            (None, false) => format!("default ({})", finding.field),
        };
        text.push_str(&format!(
            "  - {} {} at {at}: {}\n",
            finding.severity, finding.code, finding.message
        ));
        text.push_str(&format!("    hint: {}\n", finding.hint));
    }
    text
}

struct Report<'a> {
    loaded: &'a LoadedProfile,
    spec: &'a LaunchSpec,
    list: Vec<Finding>,
}

impl Report<'_> {
    fn origin(&self, key: &str) -> Option<&Origin> {
        self.spec.origins.get(key)
    }

    /// The field and position an origin names; `fallback` (a profile field) when it names
    /// none (a default or a preset).
    fn field_of(&self, key: &str, fallback: &str) -> (String, Option<(usize, usize)>) {
        match self.origin(key) {
            Some(Origin::Profile {
                field,
                line,
                column,
            }) => {
                let position = line.zip(*column).or_else(|| self.position(field));
                (field.clone(), position)
            }
            Some(Origin::Environment { variable }) => (format!("${variable}"), None),
            Some(Origin::Invocation { input }) => (input.clone(), None),
            _ => (fallback.to_string(), self.position(fallback)),
        }
    }

    /// The position of a field, or of its nearest written ancestor.
    fn position(&self, field: &str) -> Option<(usize, usize)> {
        match self.loaded.location(field) {
            crate::error::Location::Profile { position, .. } => position,
            _ => None,
        }
    }

    fn push(
        &mut self,
        code: &'static str,
        severity: Severity,
        (field, position): (String, Option<(usize, usize)>),
        message: String,
        hint: &str,
    ) {
        self.list.push(Finding {
            code,
            severity,
            field,
            position,
            message,
            hint: hint.to_string(),
            allowed_by: None,
        });
    }

    fn push_allowed(
        &mut self,
        code: &'static str,
        severity: Severity,
        at: (String, Option<(usize, usize)>),
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
        self.push(code, severity, at, allowed, hint);
        if let Some(last) = self.list.last_mut() {
            last.allowed_by = Some(allow.to_string());
        }
    }

    fn agent_launch(&self) -> bool {
        matches!(self.spec.kind, LaunchKind::Run | LaunchKind::Sandbox)
    }

    fn container(&mut self, c: &ContainerSpec) {
        if self.agent_launch() {
            self.egress();
        }
        self.mounts(c);
        self.docker_host(c);
        self.security(c);
        self.network(c);
        self.limits(c);
    }

    fn egress(&mut self) {
        let profile = &self.loaded.profile;
        let egress = &profile.egress;
        let mode = egress.mode.trim().to_ascii_lowercase();
        let at = ("egress.mode".to_string(), self.position("egress.mode"));
        if mode == "unrestricted" {
            self.push(
                "egress-unrestricted",
                Severity::High,
                at,
                "egress is unrestricted: the agent can reach any host and send it anything it can read"
                    .to_string(),
                "set egress.mode = \"allowlist\" with the hosts the agent needs, or \"deny\"",
            );
            return;
        }
        if profile.agent == AgentName::Custom {
            if mode != "deny" {
                self.push(
                    "egress-unenforced",
                    Severity::High,
                    at,
                    format!(
                        "egress mode {mode} is not enforced: a custom image has no egress firewall, \
                         so the sandbox reaches any host"
                    ),
                    "set egress.mode = \"deny\" to run without a network, or enforce the allowlist \
                     in the image or the network it joins",
                );
            }
            return;
        }
        if mode != "allowlist" && egress.gateway_host.is_none() {
            return;
        }
        if mode == "allowlist" {
            for (index, host) in egress.hosts.iter().enumerate() {
                if let Some((code, severity, what)) = host_scope(host) {
                    let field = format!("egress.hosts[{index}]");
                    let position = self.position(&field);
                    self.push(
                        code,
                        severity,
                        (field, position),
                        format!("allowlist entry {:?} opens {what}", host.trim()),
                        "name each host the agent needs instead of a domain or a network",
                    );
                }
            }
        }
        if egress.gateway_host.is_some() {
            for (index, entry) in egress.gateway_bootstrap_allow.iter().enumerate() {
                if let Some(("egress-ip-range", severity, what)) = host_scope(entry) {
                    let field = format!("egress.gateway_bootstrap_allow[{index}]");
                    let position = self.position(&field);
                    self.push(
                        "egress-ip-range",
                        severity,
                        (field, position),
                        format!(
                            "gateway bootstrap entry {:?} opens {what} before the gateway is up",
                            entry.trim()
                        ),
                        "allow only the gateway's own address",
                    );
                }
            }
        }
    }

    /// The workspace path, when the launch mounts it.
    fn workspace(&self, c: &ContainerSpec) -> Option<(String, bool, String)> {
        c.mounts.iter().find_map(|mount| {
            let key = format!("mounts.{}", mount.target);
            match (&mount.source, self.origin(&key)) {
                (MountSource::Bind { path }, Some(Origin::Invocation { input }))
                    if input == "--workspace" =>
                {
                    Some((path.clone(), mount.read_only, mount.target.clone()))
                }
                _ => None,
            }
        })
    }

    fn mounts(&mut self, c: &ContainerSpec) {
        let workspace = self.workspace(c);
        for mount in &c.mounts {
            let MountSource::Bind { path } = &mount.source else {
                continue;
            };
            let key = format!("mounts.{}", mount.target);
            let (mut field, mut position) = self.field_of(&key, "mounts");
            if field.starts_with("mounts[") || field.starts_with("configuration_mounts[") {
                field = format!("{field}.source");
                position = self.position(&field).or(position);
            }
            let at = (field, position);
            let allowed_by = match self.origin(&allowed_by_key(&mount.target)) {
                Some(Origin::Profile { field, .. }) => Some(field.clone()),
                _ => None,
            };
            let access = if mount.read_only {
                "read-only"
            } else {
                "writable"
            };
            let target = &mount.target;
            let danger = match classify_path(path, None) {
                Some(danger) => Some(danger),
                None if allowed_by.as_deref() == Some(Danger::Home.allow_field()) => {
                    Some(Danger::Home)
                }
                None => None,
            };
            match danger {
                Some(Danger::Root) => self.push_allowed(
                    "bind-root",
                    Severity::Critical,
                    at,
                    Danger::Root,
                    format!(
                        "the host's root directory is mounted {access} at {target}, with every \
                         home, key and the docker socket in it"
                    ),
                    "mount only the directories the agent needs, and remove allow_root_bind",
                ),
                Some(Danger::DockerSocket) => self.push_allowed(
                    "docker-socket",
                    Severity::Critical,
                    at,
                    Danger::DockerSocket,
                    format!(
                        "{path} exposes the docker socket at {target}: whoever reaches it is root \
                         on the host"
                    ),
                    "remove the mount and allow_docker_socket; give the agent a rootless or \
                     remote daemon of its own if it must run containers",
                ),
                Some(Danger::Home) => self.push_allowed(
                    "bind-home",
                    Severity::High,
                    at,
                    Danger::Home,
                    format!(
                        "the home directory {path} is mounted {access} at {target}, with the \
                         keys and tokens in it"
                    ),
                    "mount only the project and the files the agent needs, and remove \
                     allow_home_bind",
                ),
                None => {
                    let is_workspace = workspace
                        .as_ref()
                        .is_some_and(|(_, _, workspace_target)| workspace_target == target);
                    if is_workspace || mount.read_only {
                        continue;
                    }
                    let above = workspace.as_ref().is_some_and(|(workspace, _, _)| {
                        workspace != path && contains(path, workspace)
                    });
                    if above {
                        self.push(
                            "bind-workspace-ancestor",
                            Severity::High,
                            at,
                            format!(
                                "{path}, a directory above the workspace, is mounted writable at \
                                 {target}: the agent can change other projects and the files \
                                 around them"
                            ),
                            "mount the workspace alone, or mount the directory read-only",
                        );
                    } else if matches!(self.origin(&key), Some(Origin::Profile { .. })) {
                        self.push(
                            "bind-writable",
                            Severity::Info,
                            at,
                            format!("{path} is mounted writable at {target}"),
                            "set read_only = true unless the agent must write there",
                        );
                    }
                }
            }
        }
        if let Some((path, read_only, target)) = workspace {
            if !read_only {
                let position = self.position("workspace.read_only");
                self.push(
                    "workspace-writable",
                    Severity::Low,
                    ("workspace.read_only".to_string(), position),
                    format!(
                        "the workspace {path} is mounted writable at {target}: the two-way door, \
                         as files the agent writes (git hooks, scripts, build files) run later on \
                         the host"
                    ),
                    "review changes before running them on the host, or set [workspace] \
                     read_only = true for agents that only read",
                );
            }
        }
    }

    fn docker_host(&mut self, c: &ContainerSpec) {
        for var in &c.env {
            if var.name != DOCKER_HOST {
                continue;
            }
            let at = self.field_of(&format!("env.{DOCKER_HOST}"), "provider.api_key_env");
            let how = match var.value {
                EnvValue::Secret { .. } => "passed through from your environment",
                EnvValue::Literal { .. } => "set",
            };
            self.push_allowed(
                "docker-socket",
                Severity::Critical,
                at,
                Danger::DockerSocket,
                format!("{DOCKER_HOST} is {how}: it points the agent at your docker daemon"),
                "do not pass DOCKER_HOST into the sandbox, and remove allow_docker_socket",
            );
        }
    }

    fn security(&mut self, c: &ContainerSpec) {
        let profile = &self.loaded.profile;
        if profile.security.fuse && c.devices.iter().any(|d| d.host_path == "/dev/fuse") {
            let position = self.position("security.fuse");
            self.push(
                "fuse",
                Severity::High,
                ("security.fuse".to_string(), position),
                "fuse adds /dev/fuse, SYS_ADMIN and AppArmor unconfined: the kernel's mount \
                 surface and most of root's powers"
                    .to_string(),
                "remove security.fuse unless the sandbox must mount FUSE file systems",
            );
        }
        for capability in &c.cap_add {
            let key = format!("cap_add.{capability}");
            let Some(Origin::Profile { field, .. }) = self.origin(&key) else {
                continue;
            };
            if !field.starts_with("security.add_capabilities") {
                continue;
            }
            let at = self.field_of(&key, "security.add_capabilities");
            if DANGEROUS_CAPABILITIES.contains(capability) {
                self.push(
                    "capability-dangerous",
                    Severity::High,
                    at,
                    format!("capability {capability} is added: it comes close to root on the host"),
                    "remove it; grant the narrowest capability the tool needs",
                );
            } else {
                self.push(
                    "capability-added",
                    Severity::Medium,
                    at,
                    format!("capability {capability} is added beyond the agent preset"),
                    "remove it unless the agent needs it",
                );
            }
        }
        if !c.read_only_root {
            let at = self.field_of("read_only_root", "decant.enabled");
            if self.spec.kind == LaunchKind::Decant {
                self.push(
                    "root-writable",
                    Severity::Medium,
                    at,
                    "decant's root filesystem is writable: the companion is not hardened, as in \
                     agent-containers"
                        .to_string(),
                    "run decant only while you browse sessions; it reads the home volumes read-only",
                );
            } else {
                self.push(
                    "root-writable",
                    Severity::Medium,
                    at,
                    "the root filesystem is writable: the agent can change the image's programs \
                     for the rest of the container's life"
                        .to_string(),
                    "keep security.read_only_root = true and write to tmpfs or mounts",
                );
            }
        }
    }

    fn network(&mut self, c: &ContainerSpec) {
        if let Network::Named { name } = &c.network {
            let at = self.field_of("network", "network.name");
            self.push(
                "network-named",
                Severity::Low,
                at,
                format!(
                    "the container joins the named network {name}, shared with other containers"
                ),
                "use a network that only this sandbox and what it must reach are on",
            );
        }
        for host in &c.extra_hosts {
            if host.target == HostTarget::HostGateway {
                let at = self.field_of(
                    &format!("extra_hosts.{}", host.host),
                    "network.host_gateway",
                );
                self.push(
                    "host-gateway",
                    Severity::Low,
                    at,
                    format!("{} reaches the host's services", host.host),
                    "remove network.host_gateway unless the sandbox must reach a host service",
                );
            }
        }
        for port in &c.ports {
            if port.host_ip.is_loopback() {
                continue;
            }
            let key = format!("ports.{}/{}", port.container_port, port.protocol.as_str());
            let at = if self.spec.kind == LaunchKind::Decant {
                let field = "decant.bind_address".to_string();
                let position = self.position(&field);
                (field, position)
            } else {
                self.field_of(&key, "network.publish")
            };
            self.push(
                "port-public",
                Severity::High,
                at,
                format!(
                    "port {}/{} is published on {}, reachable beyond this machine",
                    port.container_port,
                    port.protocol.as_str(),
                    port.host_ip
                ),
                if self.spec.kind == LaunchKind::Decant {
                    "set decant.bind_address = \"127.0.0.1\""
                } else {
                    "publish on 127.0.0.1 only"
                },
            );
        }
    }

    /// Decant off loopback, reported on the profile's other launches too, so that a CI check
    /// of the default launch sees it.
    fn decant_elsewhere(&mut self) {
        let decant = &self.loaded.profile.decant;
        if self.spec.kind == LaunchKind::Decant || !decant.enabled {
            return;
        }
        let Ok(address) = decant.bind_address.trim().parse::<IpAddr>() else {
            return;
        };
        if address.is_loopback() {
            return;
        }
        let position = self.position("decant.bind_address");
        self.push(
            "port-public",
            Severity::High,
            ("decant.bind_address".to_string(), position),
            format!(
                "decant (`--kind decant`) publishes port {} on {address}, reachable beyond this \
                 machine",
                decant.port
            ),
            "set decant.bind_address = \"127.0.0.1\"",
        );
    }

    fn limits(&mut self, c: &ContainerSpec) {
        if c.resources.memory_bytes.is_none() {
            let at = self.field_of("resources.memory_bytes", "resources.memory");
            self.push(
                "memory-unlimited",
                Severity::Medium,
                at,
                "no memory limit: the agent can exhaust the host's memory".to_string(),
                "unset AGENTC_MEM_LIMIT=off, or set resources.memory",
            );
        }
        if c.resources.pids_limit.is_none() {
            let at = self.field_of("resources.pids_limit", "resources.pids_limit");
            self.push(
                "pids-unlimited",
                Severity::Medium,
                at,
                "no process limit: a fork bomb in the sandbox reaches the host".to_string(),
                "unset AGENTC_PIDS_LIMIT=off, or set resources.pids_limit",
            );
        }
        if c.log.is_none() {
            let at = self.field_of("log", "logging.max_size");
            self.push(
                "log-rotation-off",
                Severity::Low,
                at,
                "log rotation is off: the container's log grows without bound on the host's disk"
                    .to_string(),
                "remove logging.max_size = \"off\" and AGENTC_LOG_MAX_SIZE=off",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Location, PolicyError};
    use crate::inputs::{DecantSource, Owner, PathKind, PathProbe, RealPaths, ResolveInputs};
    use crate::load::load;
    use crate::resolve::resolve;
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn abs(path: &Path) -> String {
        normalize_path(&path.to_string_lossy())
    }

    /// The disk, plus `/`, `/home` and [`HOME`] as directories on every machine.
    struct Disk;

    impl PathProbe for Disk {
        fn kind(&self, path: &str) -> PathKind {
            match path {
                "/" | "/home" | HOME | SRC | WORKSPACE => PathKind::Directory,
                _ => RealPaths.kind(path),
            }
        }
    }

    const HOME: &str = "/home/dev";
    const SRC: &str = "/home/dev/src";
    const WORKSPACE: &str = "/home/dev/src/project";

    fn inputs(kind: LaunchKind, profile_dir: &str, env: &[(String, String)]) -> ResolveInputs {
        ResolveInputs {
            kind,
            workspace: WORKSPACE.to_string(),
            profile_dir: profile_dir.to_string(),
            home_dir: HOME.to_string(),
            owner: Owner {
                name: "dev".to_string(),
                uid: 1000,
                gid: 1000,
            },
            image: None,
            seed_target: None,
            agent_args: Vec::new(),
            env: env.iter().cloned().collect::<BTreeMap<_, _>>(),
            decant_sources: vec![DecantSource {
                profile: "claude-minimal".to_string(),
                agent: AgentName::ClaudeCode,
                home_volume: "claude-code-home-dev-1000-claude-minimal".to_string(),
            }],
        }
    }

    /// `# env: NAME=VALUE` lines of a fixture.
    fn fixture_env(text: &str) -> Vec<(String, String)> {
        text.lines()
            .filter_map(|line| line.strip_prefix("# env: "))
            .filter_map(|pair| pair.split_once('='))
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    fn fixtures(folder: &str, prefix: &str) -> Vec<PathBuf> {
        let dir = repo().join("fixtures").join(folder);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("fixtures folder")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| {
                path.file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with(prefix))
            })
            .collect();
        files.sort();
        files
    }

    /// Findings of every container launch of a profile text (run, and Decant when enabled).
    fn all_findings(text: &str, profile_dir: &str, env: &[(String, String)]) -> Vec<Finding> {
        let loaded = load("p.toml", text).unwrap_or_else(|error| panic!("{error}"));
        let mut kinds = vec![LaunchKind::Run];
        if loaded.profile.decant.enabled {
            kinds.push(LaunchKind::Decant);
        }
        let mut out = Vec::new();
        for kind in kinds {
            let spec = resolve(&loaded, &inputs(kind, profile_dir, env), &Disk)
                .unwrap_or_else(|error| panic!("{error}"));
            out.extend(findings(&loaded, &spec));
        }
        out
    }

    const PROFILE_DIR: &str = "/nowhere/profiles";

    fn codes_of(text: &str, env: &[(&str, &str)]) -> Vec<&'static str> {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        all_findings(text, PROFILE_DIR, &env)
            .into_iter()
            .map(|finding| finding.code)
            .collect()
    }

    fn one(text: &str, code: &str) -> Finding {
        let found: Vec<Finding> = all_findings(text, PROFILE_DIR, &[])
            .into_iter()
            .filter(|finding| finding.code == code)
            .collect();
        assert_eq!(found.len(), 1, "{code} once in {found:?}");
        found.into_iter().next().unwrap_or_else(|| unreachable!())
    }

    #[test]
    fn every_finding_fixture_triggers_its_code_at_the_tabled_severity() {
        let files = fixtures("valid", "finding-");
        let mut covered = BTreeSet::new();
        for path in files {
            let stem = path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let code = stem.trim_start_matches("finding-").to_string();
            let text = std::fs::read_to_string(&path).expect("fixture");
            let profile_dir = abs(path.parent().expect("folder"));
            let report = all_findings(&text, &profile_dir, &fixture_env(&text));
            let finding = report
                .iter()
                .find(|finding| finding.code == code)
                .unwrap_or_else(|| panic!("{stem} does not report {code}: {report:#?}"));
            let (_, severity) = CODES
                .iter()
                .find(|(known, _)| *known == code)
                .unwrap_or_else(|| panic!("{code} is not in CODES"));
            assert_eq!(finding.severity, *severity, "{stem}");
            assert!(!finding.message.is_empty() && !finding.hint.is_empty());
            covered.insert(code);
        }
        let all: BTreeSet<String> = CODES.iter().map(|(code, _)| code.to_string()).collect();
        assert_eq!(covered, all, "every code has a fixture");
    }

    #[test]
    fn every_report_severity_matches_the_table() {
        for path in fixtures("valid", "") {
            let text = std::fs::read_to_string(&path).expect("fixture");
            let Ok(loaded) = load("p.toml", &text) else {
                continue;
            };
            let profile_dir = abs(path.parent().expect("folder"));
            let spec = resolve(
                &loaded,
                &inputs(LaunchKind::Run, &profile_dir, &fixture_env(&text)),
                &Disk,
            );
            let Ok(spec) = spec else { continue };
            for finding in findings(&loaded, &spec) {
                assert!(
                    CODES.contains(&(finding.code, finding.severity)),
                    "{}: {finding:?}",
                    path.display()
                );
            }
        }
    }

    #[test]
    fn severities_are_ordered_parsed_and_serialized_in_lower_case() {
        assert!(Severity::Info < Severity::Low && Severity::High < Severity::Critical);
        assert_eq!("HIGH".parse::<Severity>(), Ok(Severity::High));
        assert_eq!(" medium ".parse::<Severity>(), Ok(Severity::Medium));
        let error = "severe".parse::<Severity>().expect_err("not a level");
        assert!(
            error.contains("info, low, medium, high or critical"),
            "{error}"
        );
        assert_eq!(
            serde_json::to_value(Severity::Critical).ok(),
            Some(json!("critical"))
        );
        for severity in Severity::ALL {
            assert_eq!(severity.to_string().parse::<Severity>(), Ok(severity));
        }
    }

    #[test]
    fn deny_fails_at_or_above_the_level_only() {
        let text = "name = \"dev\"\nagent = \"codex\"\n[egress]\nmode = \"unrestricted\"\n";
        let loaded = load("p.toml", text).unwrap_or_else(|e| panic!("{e}"));
        let spec = resolve(&loaded, &inputs(LaunchKind::Run, PROFILE_DIR, &[]), &Disk)
            .unwrap_or_else(|e| panic!("{e}"));
        let report = findings(&loaded, &spec);
        assert_eq!(highest(&report), Some(Severity::High));
        assert!(deny(&report, Severity::High));
        assert!(deny(&report, Severity::Low));
        assert!(!deny(&report, Severity::Critical));
        assert!(!deny(&[], Severity::Info));
        assert_eq!(report_json(&[])["highest"], Value::Null);
        // Most severe first.
        let severities: Vec<Severity> = report.iter().map(|f| f.severity).collect();
        let mut sorted = severities.clone();
        sorted.sort_by(|a, b| b.cmp(a));
        assert_eq!(severities, sorted);
    }

    #[test]
    fn the_json_report_carries_code_severity_field_and_position() {
        let text = "name = \"dev\"\nagent = \"codex\"\n[egress]\nmode = \"unrestricted\"\n";
        let loaded = load("p.toml", text).unwrap_or_else(|e| panic!("{e}"));
        let spec = resolve(&loaded, &inputs(LaunchKind::Run, PROFILE_DIR, &[]), &Disk)
            .unwrap_or_else(|e| panic!("{e}"));
        let report = report_json(&findings(&loaded, &spec));
        assert_eq!(report["highest"], json!("high"));
        assert_eq!(report["counts"]["high"], json!(1));
        assert_eq!(report["counts"]["critical"], json!(0));
        let first = &report["findings"][0];
        assert_eq!(first["code"], json!("egress-unrestricted"));
        assert_eq!(first["severity"], json!("high"));
        assert_eq!(first["field"], json!("egress.mode"));
        assert_eq!(first["line"], json!(4));
        assert_eq!(first["allowed_by"], Value::Null);
        let whole = explain_json(&loaded, &spec);
        assert_eq!(whole["kind"], json!("run"));
        assert_eq!(whole["profile"], json!("dev"));
        assert!(whole["spec"].is_object());
    }

    #[test]
    fn egress_entries_are_classified_precisely() {
        let cases: &[(&str, Option<&str>)] = &[
            ("api.anthropic.com", None),
            ("localhost", None),
            ("192.0.2.10", None),
            ("192.0.2.10/32", None),
            ("2001:db8::1/128", None),
            ("10.0.0.0/8", Some("egress-ip-range")),
            ("2001:db8::/32", Some("egress-ip-range")),
            ("0.0.0.0/0", Some("egress-ip-range")),
            (".example.com", Some("egress-domain")),
            ("*.example.com", Some("egress-domain")),
            ("api*.example.com", Some("egress-domain")),
            ("com", Some("egress-tld")),
            (".io", Some("egress-tld")),
            ("*.dev", Some("egress-tld")),
            ("COM.", Some("egress-tld")),
        ];
        for (entry, want) in cases {
            assert_eq!(host_scope(entry).map(|(code, _, _)| code), *want, "{entry}");
        }
        let codes = codes_of(
            "name = \"dev\"\nagent = \"codex\"\n[egress]\nhosts = [\"a.example.com\", \".example.org\", \"net\", \"10.1.0.0/16\"]\n",
            &[],
        );
        for code in ["egress-domain", "egress-tld", "egress-ip-range"] {
            assert_eq!(
                codes.iter().filter(|c| **c == code).count(),
                1,
                "{code}: {codes:?}"
            );
        }
        // A deny profile allows nothing, whatever its list says.
        let codes = codes_of(
            "name = \"dev\"\nagent = \"codex\"\n[egress]\nmode = \"deny\"\nhosts = [\".com\"]\n",
            &[],
        );
        assert!(!codes.contains(&"egress-tld"), "{codes:?}");
    }

    #[test]
    fn gateway_bootstrap_ranges_are_reported() {
        let text = "name = \"dev\"\nagent = \"claude-code\"\n[egress]\nmode = \"deny\"\n\
                    gateway_host = \"gw\"\ngateway_port = 22\n\
                    gateway_bootstrap_allow = [\"192.0.2.1\", \"198.51.100.0/24\"]\n\
                    [[mounts]]\nsource = \"/etc/hostname\"\ntarget = \"/etc/agent/gateway-key\"\n\
                    [[mounts]]\nsource = \"/etc/hostname\"\ntarget = \"/etc/agent/gateway-known-hosts\"\n";
        let finding = one(text, "egress-ip-range");
        assert_eq!(finding.field, "egress.gateway_bootstrap_allow[1]");
        assert_eq!(finding.position.map(|p| p.0), Some(7));
    }

    #[test]
    fn docker_socket_paths_are_recognized_in_every_spelling() {
        for path in [
            "/var/run/docker.sock",
            "/run/docker.sock",
            "/run",
            "/var/run",
            "/var",
            "/srv/elsewhere/docker.sock",
            "/run/user/1000/docker.sock",
            "/run/user/1000",
            "/run/user",
            "/home/dev/.docker",
            "/home/dev/.docker/run",
            "/home/dev/.docker/desktop",
        ] {
            assert!(exposes_docker_socket(path), "{path}");
        }
        for path in [
            "/srv",
            "/var/lib/data",
            "/run/user/1000/bus/x",
            "/home/dev/docker.socket",
        ] {
            assert!(!exposes_docker_socket(path), "{path}");
        }
        assert_eq!(
            classify_path("//var//run/../run/./docker.sock", None),
            Some(Danger::DockerSocket)
        );
        assert_eq!(classify_path("/..", None), Some(Danger::Root));
        assert_eq!(
            classify_path("/home", Some("/home/dev")),
            Some(Danger::Home)
        );
        assert_eq!(
            classify_path("/home/dev/", Some("/home/dev")),
            Some(Danger::Home)
        );
        assert_eq!(classify_path("/home/dev/src", Some("/home/dev")), None);
        assert_eq!(classify_path("/home", None), None);
        // A home of / (HOME unset) makes nothing a home bind but / itself.
        assert_eq!(classify_path("/srv", Some("/")), None);
    }

    /// (field, message, hint) of a refusal, at load or at resolve.
    fn refusal(text: &str) -> (String, String, String) {
        let error = match load("p.toml", text) {
            Err(error) => error,
            Ok(loaded) => {
                match resolve(&loaded, &inputs(LaunchKind::Run, PROFILE_DIR, &[]), &Disk) {
                    Err(error) => error,
                    Ok(_) => panic!("accepted:\n{text}"),
                }
            }
        };
        match error {
            PolicyError::Invalid {
                location,
                message,
                hint,
                ..
            } => {
                let field = match location {
                    Location::Profile { field, .. } => field,
                    Location::Invocation { input } => input,
                    Location::Environment { variable } => variable,
                };
                (field, message, hint)
            }
            other => panic!("not a refusal: {other}"),
        }
    }

    const CLAUDE: &str = "name = \"dev\"\nagent = \"claude-code\"\n";

    fn with_mount(source: &str, allow: &str) -> String {
        format!(
            "{CLAUDE}[[mounts]]\ntype = \"directory\"\nsource = {source:?}\ntarget = \"/x\"\n{allow}"
        )
    }

    #[test]
    fn the_docker_socket_is_refused_in_any_form_unless_allowed() {
        for (source, message) in [
            ("/var/run/docker.sock", "mounts[0].source exposes the docker socket: /var/run/docker.sock"),
            ("/run", "mounts[0].source exposes the docker socket: /run"),
            ("//run/../run/./docker.sock", "mounts[0].source exposes the docker socket: /run/docker.sock"),
            ("/var", "mounts[0].source exposes the docker socket: /var"),
            (
                "../../../run/docker.sock",
                "mounts[0].source /run/docker.sock resolves to the docker socket or a directory holding it",
            ),
            (
                "~/.docker/run",
                "mounts[0].source /home/dev/.docker/run resolves to the docker socket or a directory holding it",
            ),
        ] {
            let (field, actual, hint) = refusal(&with_mount(source, ""));
            assert_eq!(field, "mounts[0].source", "{source}");
            assert_eq!(actual, message, "{source}");
            assert!(hint.contains("[security] allow_docker_socket = true"), "{hint}");
        }
        let (field, message, hint) = refusal(&format!("{CLAUDE}[proxy]\nca_dir = \"/run\"\n"));
        assert_eq!(field, "proxy.ca_dir");
        assert_eq!(message, "proxy.ca_dir exposes the docker socket: /run");
        assert!(hint.contains("allow_docker_socket"));
        for (extra, field) in [
            (
                "[provider]\nkind = \"anthropic\"\napi_key_env = \"DOCKER_HOST\"\n",
                "provider.api_key_env",
            ),
            (
                "[egress]\nmode = \"unrestricted\"\n[langfuse]\nenabled = true\nbase_url = \"https://lf.example\"\nsecret_key_env = \"DOCKER_HOST\"\n",
                "langfuse.secret_key_env",
            ),
        ] {
            let (actual, message, hint) = refusal(&format!("{CLAUDE}{extra}"));
            assert_eq!(actual, field);
            assert_eq!(message, format!("{field} passes DOCKER_HOST into the container"));
            assert!(hint.contains("allow_docker_socket = true"), "{hint}");
        }
        // Accepted when the profile says so, and reported critical naming the field.
        let allowed = with_mount("/run", "[security]\nallow_docker_socket = true\n");
        let finding = one(&allowed, "docker-socket");
        assert_eq!(finding.severity, Severity::Critical);
        assert_eq!(finding.field, "mounts[0].source");
        assert_eq!(finding.position.map(|p| p.0), Some(5));
        assert_eq!(
            finding.allowed_by.as_deref(),
            Some("security.allow_docker_socket")
        );
        assert!(
            finding
                .message
                .ends_with("accepted by security.allow_docker_socket (line 8)"),
            "{}",
            finding.message
        );
        let host = format!(
            "{CLAUDE}[provider]\nkind = \"anthropic\"\napi_key_env = \"DOCKER_HOST\"\n\
             [security]\nallow_docker_socket = true\n"
        );
        let finding = one(&host, "docker-socket");
        assert_eq!(finding.field, "provider.api_key_env");
        assert!(
            finding.message.contains("DOCKER_HOST is passed through"),
            "{}",
            finding.message
        );
    }

    #[test]
    fn binds_of_root_and_home_are_refused_unless_allowed() {
        let (field, message, hint) = refusal(&with_mount("/", ""));
        assert_eq!(field, "mounts[0].source");
        assert_eq!(
            message,
            "mounts[0].source binds the host's root directory /"
        );
        assert!(hint.contains("[security] allow_root_bind = true"), "{hint}");
        let (_, message, _) = refusal(&with_mount("../../..", ""));
        assert_eq!(message, "mounts[0].source / is the host's root directory");
        for (source, message) in [
            (
                "~",
                "mounts[0].source /home/dev is the whole home directory",
            ),
            (
                "~/",
                "mounts[0].source /home/dev is the whole home directory",
            ),
            (
                "/home/dev/src/..",
                "mounts[0].source /home/dev is the whole home directory",
            ),
            (
                "/home",
                "mounts[0].source /home contains the home directory /home/dev",
            ),
            (
                "~/..",
                "mounts[0].source /home contains the home directory /home/dev",
            ),
        ] {
            let (field, actual, hint) = refusal(&with_mount(source, ""));
            assert_eq!(field, "mounts[0].source", "{source}");
            assert_eq!(actual, message, "{source}");
            assert!(hint.contains("[security] allow_home_bind = true"), "{hint}");
        }
        // A directory inside the home is an ordinary bind (here it fails only for being missing).
        let loaded =
            load("p.toml", &with_mount("~/missing-dir", "")).unwrap_or_else(|e| panic!("{e}"));
        let error = resolve(&loaded, &inputs(LaunchKind::Run, PROFILE_DIR, &[]), &Disk)
            .expect_err("missing");
        assert!(
            matches!(&error, PolicyError::Unlaunchable { message, .. }
                if message == "mount source does not exist: /home/dev/missing-dir"),
            "{error}"
        );
        // The seed helper's source is checked as well.
        let seed = format!(
            "{CLAUDE}[[mounts]]\ntype = \"seed\"\nsource = \"~\"\ntarget = \"/home/claude/all\"\n"
        );
        let loaded = load("p.toml", &seed).unwrap_or_else(|e| panic!("{e}"));
        let mut seed_inputs = inputs(LaunchKind::Seed, PROFILE_DIR, &[]);
        seed_inputs.seed_target = Some("/home/claude/all".to_string());
        let error = resolve(&loaded, &seed_inputs, &Disk).expect_err("refused");
        assert!(error.to_string().contains("allow_home_bind"), "{error}");
        // Accepted when allowed, and reported.
        let root = one(
            &with_mount("/", "[security]\nallow_root_bind = true\n"),
            "bind-root",
        );
        assert_eq!(root.severity, Severity::Critical);
        assert_eq!(root.allowed_by.as_deref(), Some("security.allow_root_bind"));
        let home = one(
            &with_mount("~", "[security]\nallow_home_bind = true\n"),
            "bind-home",
        );
        assert_eq!(home.severity, Severity::High);
        assert_eq!(home.field, "mounts[0].source");
        assert_eq!(home.allowed_by.as_deref(), Some("security.allow_home_bind"));
        assert!(home
            .message
            .contains("accepted by security.allow_home_bind (line 8)"));
    }

    #[test]
    fn the_home_as_workspace_is_refused_at_the_invocation_unless_allowed() {
        let loaded = load("p.toml", CLAUDE).unwrap_or_else(|e| panic!("{e}"));
        let mut at_home = inputs(LaunchKind::Run, PROFILE_DIR, &[]);
        at_home.workspace = "/home".to_string();
        match resolve(&loaded, &at_home, &Disk) {
            Err(PolicyError::Invalid {
                location: Location::Invocation { input },
                message,
                hint,
            }) => {
                assert_eq!(input, "--workspace");
                assert_eq!(
                    message,
                    "the workspace /home contains the home directory /home/dev"
                );
                assert!(hint.contains("allow_home_bind = true"));
            }
            other => panic!("{other:?}"),
        }
        let allowed = format!("{CLAUDE}[security]\nallow_home_bind = true\n");
        let loaded = load("p.toml", &allowed).unwrap_or_else(|e| panic!("{e}"));
        let spec = resolve(&loaded, &at_home, &Disk).unwrap_or_else(|e| panic!("{e}"));
        let report = findings(&loaded, &spec);
        let home = report
            .iter()
            .find(|finding| finding.code == "bind-home")
            .unwrap_or_else(|| panic!("{report:?}"));
        assert_eq!(home.field, "--workspace");
    }

    #[test]
    fn every_dangerous_fixture_is_refused_naming_its_field_and_allow_setting() {
        let files = fixtures("invalid", "dangerous-");
        assert!(files.len() >= 6);
        for path in files {
            let text = std::fs::read_to_string(&path).expect("fixture");
            let expect = text
                .lines()
                .next()
                .and_then(|line| line.strip_prefix("# expect: "))
                .and_then(|line| line.split_once(" — "))
                .map(|(field, _)| field.to_string())
                .unwrap_or_else(|| panic!("{}: no expect line", path.display()));
            let profile_dir = abs(path.parent().expect("folder"));
            let error = match load("p.toml", &text) {
                Err(error) => error,
                Ok(loaded) => resolve(&loaded, &inputs(LaunchKind::Run, &profile_dir, &[]), &Disk)
                    .expect_err("refused"),
            };
            let PolicyError::Invalid { location, hint, .. } = &error else {
                panic!("{}: {error}", path.display());
            };
            assert!(
                matches!(location, Location::Profile { field, .. } if *field == expect),
                "{}: {error}",
                path.display()
            );
            assert!(
                hint.contains("[security] allow_"),
                "{}: {hint}",
                path.display()
            );
        }
    }

    #[test]
    fn writable_binds_above_the_workspace_and_elsewhere_are_told_apart() {
        let parent = SRC;
        let text = format!(
            "{CLAUDE}[[mounts]]\ntype = \"directory\"\nsource = {parent:?}\ntarget = \"/up\"\nread_only = false\n\
             [[mounts]]\ntype = \"directory\"\nsource = {:?}\ntarget = \"/down\"\nread_only = false\n\
             [[mounts]]\ntype = \"directory\"\nsource = {parent:?}\ntarget = \"/up-ro\"\n",
            abs(&repo().join("crates"))
        );
        let report = all_findings(&text, PROFILE_DIR, &[]);
        let ancestor: Vec<&Finding> = report
            .iter()
            .filter(|f| f.code == "bind-workspace-ancestor")
            .collect();
        assert_eq!(ancestor.len(), 1, "{report:#?}");
        assert_eq!(ancestor[0].field, "mounts[0].source");
        let writable: Vec<&Finding> = report
            .iter()
            .filter(|f| f.code == "bind-writable")
            .collect();
        assert_eq!(writable.len(), 1, "{report:#?}");
        assert_eq!(writable[0].field, "mounts[1].source");
        let door = report
            .iter()
            .find(|f| f.code == "workspace-writable")
            .unwrap_or_else(|| panic!("{report:#?}"));
        assert_eq!(door.severity, Severity::Low);
        let read_only = format!("{CLAUDE}[workspace]\nread_only = true\n");
        assert!(!codes_of(&read_only, &[]).contains(&"workspace-writable"));
    }

    #[test]
    fn limits_removed_by_the_environment_name_the_variable() {
        let report = all_findings(
            CLAUDE,
            PROFILE_DIR,
            &[
                ("AGENTC_MEM_LIMIT".to_string(), "off".to_string()),
                ("AGENTC_PIDS_LIMIT".to_string(), "OFF".to_string()),
                ("AGENTC_LOG_MAX_SIZE".to_string(), "off".to_string()),
            ],
        );
        let fields: BTreeMap<&str, &str> = report
            .iter()
            .map(|finding| (finding.code, finding.field.as_str()))
            .collect();
        assert_eq!(fields.get("memory-unlimited"), Some(&"$AGENTC_MEM_LIMIT"));
        assert_eq!(fields.get("pids-unlimited"), Some(&"$AGENTC_PIDS_LIMIT"));
        assert_eq!(
            fields.get("log-rotation-off"),
            Some(&"$AGENTC_LOG_MAX_SIZE")
        );
        let text = report_text(&report);
        assert!(
            text.contains("at $AGENTC_MEM_LIMIT: no memory limit"),
            "{text}"
        );
        let defaults = codes_of(CLAUDE, &[]);
        for code in ["memory-unlimited", "pids-unlimited", "log-rotation-off"] {
            assert!(!defaults.contains(&code), "{code}");
        }
    }

    #[test]
    fn capabilities_beyond_the_preset_are_graded_and_preset_ones_are_not() {
        let text = format!("{CLAUDE}[security]\nadd_capabilities = [\"SYS_ADMIN\", \"NET_BIND_SERVICE\", \"NET_ADMIN\"]\n");
        let report = all_findings(&text, PROFILE_DIR, &[]);
        let caps: Vec<(&str, &str)> = report
            .iter()
            .filter(|f| f.code.starts_with("capability"))
            .map(|f| (f.code, f.field.as_str()))
            .collect();
        // NET_ADMIN is in the Claude Code preset already.
        assert_eq!(
            caps,
            vec![
                ("capability-dangerous", "security.add_capabilities[0]"),
                ("capability-added", "security.add_capabilities[1]"),
            ]
        );
        assert!(codes_of(CLAUDE, &[])
            .iter()
            .all(|c| !c.starts_with("capability")));
    }

    #[test]
    fn decant_off_loopback_is_reported_on_every_launch_and_loopback_is_not() {
        let public = format!(
            "{CLAUDE}[decant]\nenabled = true\nsource_profiles = [\"claude-minimal\"]\nbind_address = \"::\"\n"
        );
        let report = all_findings(&public, PROFILE_DIR, &[]);
        let fields: Vec<&str> = report
            .iter()
            .filter(|f| f.code == "port-public")
            .map(|f| f.field.as_str())
            .collect();
        assert_eq!(fields, vec!["decant.bind_address", "decant.bind_address"]);
        let local =
            format!("{CLAUDE}[decant]\nenabled = true\nsource_profiles = [\"claude-minimal\"]\n");
        assert!(!codes_of(&local, &[]).contains(&"port-public"));
        // Agent ports are published on loopback only.
        let ports = format!("{CLAUDE}[network]\npublish = [8080]\n");
        assert!(!codes_of(&ports, &[]).contains(&"port-public"));
    }

    #[test]
    fn a_hardened_profile_reports_only_the_two_way_door() {
        let codes = codes_of(
            "name = \"dev\"\nagent = \"claude-code\"\n[egress]\nhosts = [\"api.anthropic.com\"]\n",
            &[],
        );
        assert_eq!(codes, vec!["workspace-writable"]);
        let sandbox = codes_of(
            "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"busybox\"\n[egress]\nmode = \"deny\"\n",
            &[],
        );
        assert!(sandbox.is_empty(), "{sandbox:?}");
    }
}
