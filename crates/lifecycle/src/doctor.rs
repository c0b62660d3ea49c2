//! `agentc doctor`: whether this machine can run agentc's launches, as checks that each say
//! ok, warn or fail, with a fix.
//!
//! The caller gathers [`EngineFacts`] (and, with a profile, [`ProfileFacts`]) from the engine
//! and the host; this module only judges them. [`ENGINE_CHECKS`] is a list: another engine
//! (Podman), runtime (gVisor) or launch part (the egress proxy) adds a fact and a check to it,
//! and `doctor` runs, prints and counts it like the others.

use serde::Serialize;

/// The engines doctor knows: the one engine value of every crate.
pub use agentc_policy::Engine;

/// The oldest Engine API version agentc's launches are tested with (Docker 20.10).
pub const MIN_API_VERSION: (u32, u32) = (1, 41);

/// Free space below which the engine's data directory fails, and below which it warns.
pub const DISK_FAIL_BYTES: u64 = 1 << 30;
/// See [`DISK_FAIL_BYTES`].
pub const DISK_WARN_BYTES: u64 = 5 << 30;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Fine.
    Ok,
    /// Works, but weaker or riskier than it could be.
    Warn,
    /// A launch will fail, or run without a protection it relies on.
    Fail,
}

impl Status {
    /// `ok`, `warn`, `fail`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// A stable identifier (`engine`, `seccomp`, `image claude-code:latest`).
    pub id: String,
    /// How it came out.
    pub status: Status,
    /// What was found.
    pub summary: String,
    /// What to do, for a warning or failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn check(id: &str, status: Status, summary: impl Into<String>, fix: Option<&str>) -> Check {
    Check {
        id: id.to_string(),
        status,
        summary: summary.into(),
        fix: fix.map(str::to_string),
    }
}

/// What the engine and the host report, gathered by the caller. `None` means not asked or not
/// answered; the checks that need it are then left out (the engine check says why).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineFacts {
    /// Which engine.
    pub engine: Option<Engine>,
    /// Where it was reached (`unix:///var/run/docker.sock`, `DOCKER_HOST`).
    pub endpoint: String,
    /// Why it could not be reached, when it could not.
    pub unreachable: Option<String>,
    /// Its version.
    pub version: Option<String>,
    /// Its API version.
    pub api_version: Option<String>,
    /// The `docker` CLI's version, or why it cannot run.
    pub cli: Option<Result<String, String>>,
    /// What `--backend auto` (every command's default) chooses here, and why, in words.
    pub backend: Option<String>,
    /// The runtimes registered, the default first.
    pub runtimes: Vec<String>,
    /// The default runtime.
    pub default_runtime: Option<String>,
    /// `1` or `2`.
    pub cgroup_version: Option<String>,
    /// The engine's security options (`name=seccomp,profile=default`, `name=apparmor`,
    /// `name=userns`, `name=rootless`, `name=selinux`).
    pub security_options: Vec<String>,
    /// `/proc/sys/user/max_user_namespaces` of the host, where readable.
    pub max_user_namespaces: Option<u64>,
    /// Creating and removing an internal network with IPv4 inhibited: `Ok` or the error.
    pub isolated_network: Option<Result<(), String>>,
    /// The engine's data directory and its free bytes, or why they are unknown.
    pub disk: Option<Result<(String, u64), String>>,
    /// Whether Podman's rlimits fit this host: a process may raise a hard rlimit
    /// (`CAP_SYS_RESOURCE` in the bounding set of agentc's own), or `containers.conf` sets
    /// `default_ulimits`; Podman asks for more than the host has otherwise.
    pub rlimits_raisable: Option<bool>,
    /// gVisor's registration with the engine: the `runsc` runtime's path and arguments.
    pub gvisor: Option<String>,
    /// What launches killed before they finished left behind (agentc's isolated networks and
    /// egress proxies without their workload, workloads without their proxy): each as what it
    /// is and the command that removes it; or why they could not be listed.
    pub egress_leftovers: Option<Result<Vec<(String, String)>, String>>,
}

impl EngineFacts {
    fn option(&self, name: &str) -> Option<&str> {
        self.security_options.iter().find_map(|option| {
            option
                .split(',')
                .any(|part| part == format!("name={name}"))
                .then_some(option.as_str())
        })
    }
}

/// One check of the engine: its identifier and its judgement of the facts (`None`: not
/// applicable, such as every check but `engine` when the engine did not answer).
pub type EngineCheck = (&'static str, fn(&EngineFacts) -> Option<Check>);

/// Every engine check, in the order they print.
pub const ENGINE_CHECKS: &[EngineCheck] = &[
    ("engine", engine),
    ("api-version", api_version),
    ("docker-cli", docker_cli),
    ("backend", backend),
    ("runtimes", runtimes),
    ("gvisor", gvisor),
    ("rlimits", rlimits),
    ("cgroup", cgroup),
    ("seccomp", seccomp),
    ("apparmor", apparmor),
    ("user-namespaces", user_namespaces),
    ("isolated-network", isolated_network),
    ("egress-leftovers", egress_leftovers),
    ("disk", disk),
];

/// Runs every engine check.
pub fn engine_checks(facts: &EngineFacts) -> Vec<Check> {
    ENGINE_CHECKS
        .iter()
        .filter_map(|(_, judge)| judge(facts))
        .collect()
}

fn answered(facts: &EngineFacts) -> bool {
    facts.unreachable.is_none()
}

fn engine(facts: &EngineFacts) -> Option<Check> {
    let name = facts.engine.unwrap_or(Engine::Docker).as_str();
    Some(match &facts.unreachable {
        Some(error) if error.to_ascii_lowercase().contains("permission denied") => check(
            "engine",
            Status::Fail,
            format!(
                "{name} at {} refuses this user: {error}",
                facts.endpoint
            ),
            Some("the daemon runs, but this user may not open its socket: join the group that owns it (`sudo usermod -aG docker $USER`, then log in again), run agentc as a user who can, or point DOCKER_HOST (Podman: CONTAINER_HOST) at a rootless daemon's socket"),
        ),
        // The cli backend runs with the podman command alone: a silent socket fails only the
        // commands that need it, which the line names.
        Some(error) if facts.engine == Some(Engine::Podman) => check(
            "engine",
            if matches!(facts.cli, Some(Ok(_))) {
                Status::Warn
            } else {
                Status::Fail
            },
            format!(
                "podman's API socket at {} does not answer: {error}; `--backend api` needs it, \
                 the cli backend (the default) runs every command without it",
                facts.endpoint
            ),
            Some("agentc does not start it: run `podman system service --time=0 unix:///run/podman/podman.sock &` as root (or `systemctl start podman.socket`), or set CONTAINER_HOST"),
        ),
        Some(error) => check(
            "engine",
            Status::Fail,
            format!("{name} at {} does not answer: {error}", facts.endpoint),
            Some("start the daemon (`systemctl start docker`), check DOCKER_HOST, or join the `docker` group to use its socket"),
        ),
        None => check(
            "engine",
            Status::Ok,
            format!(
                "{name} {} at {}",
                facts.version.as_deref().unwrap_or("(version unknown)"),
                facts.endpoint
            ),
            None,
        ),
    })
}

fn parse_version(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

fn api_version(facts: &EngineFacts) -> Option<Check> {
    if !answered(facts) {
        return None;
    }
    let text = facts.api_version.as_deref()?;
    let (major, minor) = MIN_API_VERSION;
    Some(match parse_version(text) {
        Some(version) if version >= MIN_API_VERSION => check(
            "api-version",
            Status::Ok,
            format!("Engine API {text} (agentc needs {major}.{minor} or later)"),
            None,
        ),
        _ => check(
            "api-version",
            Status::Fail,
            format!("Engine API {text} is older than {major}.{minor}"),
            Some("upgrade the engine to Docker 20.10 or later"),
        ),
    })
}

fn docker_cli(facts: &EngineFacts) -> Option<Check> {
    Some(match facts.cli.as_ref()? {
        Ok(version) => check(
            "docker-cli",
            Status::Ok,
            format!(
                "{} CLI {version} (the cli backend and builds use it)",
                facts.engine.unwrap_or(Engine::Docker).as_str()
            ),
            None,
        ),
        Err(error) => check(
            "docker-cli",
            Status::Warn,
            format!(
                "the {} CLI cannot run: {error}",
                facts.engine.unwrap_or(Engine::Docker).as_str()
            ),
            Some("install the docker CLI for `--backend cli` and for builds; the Engine API backend works without it"),
        ),
    })
}

fn backend(facts: &EngineFacts) -> Option<Check> {
    let words = facts.backend.as_ref()?;
    Some(check(
        "backend",
        Status::Ok,
        format!("--backend auto (the default) uses {words}"),
        None,
    ))
}

fn runtimes(facts: &EngineFacts) -> Option<Check> {
    if !answered(facts) || facts.runtimes.is_empty() {
        return None;
    }
    let default = facts.default_runtime.as_deref().unwrap_or("runc");
    if facts.engine == Some(Engine::Podman) {
        return Some(check(
            "runtimes",
            Status::Ok,
            format!("default runtime {default}: Podman's API socket runs every container under it (it ignores HostConfig.Runtime, so agentc refuses another there); `--backend cli` passes --runtime"),
            None,
        ));
    }
    Some(check(
        "runtimes",
        Status::Ok,
        format!("runtimes {} (default {default})", facts.runtimes.join(", ")),
        None,
    ))
}

fn gvisor(facts: &EngineFacts) -> Option<Check> {
    if !answered(facts) {
        return None;
    }
    let registered = facts.gvisor.as_deref()?;
    Some(if registered.contains("--network=host") {
        check(
            "gvisor",
            Status::Warn,
            format!("gVisor registered as runsc ({registered}): it uses the host kernel's network stack inside the container's namespace, not its own"),
            Some("a runsc from August 2024 or later runs its own network stack on this kernel; see docs/engines.md"),
        )
    } else {
        check(
            "gvisor",
            Status::Ok,
            format!("gVisor registered as runsc ({registered}); the image's egress firewall does not run under it"),
            None,
        )
    })
}

fn rlimits(facts: &EngineFacts) -> Option<Check> {
    let raisable = facts.rlimits_raisable?;
    if facts.engine != Some(Engine::Podman) {
        return Some(check(
            "rlimits",
            Status::Ok,
            "docker sets no rlimits of its own: containers inherit the daemon's",
            None,
        ));
    }
    Some(match raisable {
        true => check(
            "rlimits",
            Status::Ok,
            "Podman's rlimits fit this host (CAP_SYS_RESOURCE, or default_ulimits in containers.conf)",
            None,
        ),
        false => check(
            "rlimits",
            Status::Warn,
            "this host forbids raising a hard rlimit (no CAP_SYS_RESOURCE): Podman's default nofile 1048576 fails with \"error setting rlimit type 7\" unless containers.conf sets default_ulimits",
            Some("write default_ulimits = [\"nofile=N:N\", \"nproc=M:M\"] at the host's limits into /etc/containers/containers.conf.d/ (scripts/setup-engines.sh does), then restart podman system service"),
        ),
    })
}

fn cgroup(facts: &EngineFacts) -> Option<Check> {
    if !answered(facts) {
        return None;
    }
    Some(match facts.cgroup_version.as_deref()? {
        "2" => check("cgroup", Status::Ok, "cgroup v2", None),
        other => check(
            "cgroup",
            Status::Warn,
            format!("cgroup v{other}: limits apply, but `agentc verify` reads cgroup v2 files and memory.swap limits may be ignored"),
            Some("boot with systemd.unified_cgroup_hierarchy=1 to use cgroup v2"),
        ),
    })
}

fn seccomp(facts: &EngineFacts) -> Option<Check> {
    if !answered(facts) {
        return None;
    }
    Some(match facts.option("seccomp") {
        Some(option) if option.contains("profile=unconfined") => check(
            "seccomp",
            Status::Fail,
            "seccomp is on but the daemon's default profile is unconfined",
            Some("remove `seccomp-profile: unconfined` from the daemon's configuration"),
        ),
        Some(option) => check(
            "seccomp",
            Status::Ok,
            format!("seccomp ({})", option.trim_start_matches("name=seccomp,")),
            None,
        ),
        None => check(
            "seccomp",
            Status::Fail,
            "the engine applies no seccomp filter: every system call is open to the agent",
            Some("use a kernel with CONFIG_SECCOMP and an engine built with seccomp support"),
        ),
    })
}

fn apparmor(facts: &EngineFacts) -> Option<Check> {
    if !answered(facts) {
        return None;
    }
    Some(if facts.option("apparmor").is_some() {
        check(
            "apparmor",
            Status::Ok,
            "AppArmor (docker-default profile)",
            None,
        )
    } else if facts.option("selinux").is_some() {
        check("apparmor", Status::Ok, "SELinux (no AppArmor)", None)
    } else {
        check(
            "apparmor",
            Status::Warn,
            "no AppArmor or SELinux confinement: containers rely on capabilities, seccomp and no-new-privileges alone",
            Some("enable AppArmor (`apparmor=1 security=apparmor` on the kernel command line) or SELinux"),
        )
    })
}

fn user_namespaces(facts: &EngineFacts) -> Option<Check> {
    if !answered(facts) {
        return None;
    }
    let kernel = match facts.max_user_namespaces {
        Some(0) => ", and the kernel allows none (max_user_namespaces = 0)",
        _ => "",
    };
    Some(if facts.option("rootless").is_some() {
        check(
            "user-namespaces",
            Status::Ok,
            "rootless engine: container root is an unprivileged host user",
            None,
        )
    } else if facts.option("userns").is_some() {
        check(
            "user-namespaces",
            Status::Ok,
            "userns-remap: container root is an unprivileged host user",
            None,
        )
    } else {
        check(
            "user-namespaces",
            Status::Warn,
            format!(
                "no user namespace remapping: uid 0 in a container is uid 0 on the host{kernel}"
            ),
            Some(if facts.engine == Some(Engine::Podman) {
                "run Podman rootless (as an ordinary user), or give containers their own user namespace (`userns = \"auto\"` in containers.conf); agentc's presets already run as non-root users"
            } else {
                "run the daemon with `userns-remap: default`, or use rootless Docker; agentc's presets already run as non-root users"
            }),
        )
    })
}

fn isolated_network(facts: &EngineFacts) -> Option<Check> {
    if !answered(facts) {
        return None;
    }
    Some(match facts.isolated_network.as_ref()? {
        Ok(()) => check(
            "isolated-network",
            Status::Ok,
            "an internal network with IPv4 inhibited can be created (egress isolation)",
            None,
        ),
        Err(error) => check(
            "isolated-network",
            Status::Warn,
            format!("an internal network with IPv4 inhibited cannot be created: {error}"),
            Some("use the bridge network driver of Docker 20.10 or later; egress allowlist launches need it"),
        ),
    })
}

fn egress_leftovers(facts: &EngineFacts) -> Option<Check> {
    if !answered(facts) {
        return None;
    }
    let id = "egress-leftovers";
    Some(match facts.egress_leftovers.as_ref()? {
        Ok(found) if found.is_empty() => check(
            id,
            Status::Ok,
            "no leftovers of killed launches (isolated networks, egress proxies)",
            None,
        ),
        Ok(found) => {
            let what: Vec<&str> = found.iter().map(|(what, _)| what.as_str()).collect();
            let how: Vec<String> = found.iter().map(|(_, how)| format!("`{how}`")).collect();
            Check {
                id: id.to_string(),
                status: Status::Warn,
                summary: format!(
                    "{} leftover{} of launches killed before they finished: {}",
                    found.len(),
                    if found.len() == 1 { "" } else { "s" },
                    what.join("; ")
                ),
                fix: Some(format!(
                    "remove {}: {} (a launch still starting shows here too: check again first); \
                     any agentc command removes them a minute after their launch died, and a \
                     later launch of the same sandbox at once",
                    if found.len() == 1 { "it" } else { "them" },
                    how.join("; ")
                )),
            }
        }
        Err(error) => check(
            id,
            Status::Warn,
            format!("cannot list agentc's isolated networks and egress proxies: {error}"),
            Some("`docker network ls --filter label=io.agentc.kind=egress-proxy` lists them"),
        ),
    })
}

fn disk(facts: &EngineFacts) -> Option<Check> {
    if !answered(facts) {
        return None;
    }
    let gib = |bytes: u64| format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30));
    Some(match facts.disk.as_ref()? {
        Ok((path, free)) if *free < DISK_FAIL_BYTES => check(
            "disk",
            Status::Fail,
            format!("{} free under {path}", gib(*free)),
            Some("free space on that file system: images and builds need more than 1 GiB"),
        ),
        Ok((path, free)) if *free < DISK_WARN_BYTES => check(
            "disk",
            Status::Warn,
            format!("{} free under {path}", gib(*free)),
            Some("free space on that file system (`docker system df` shows what images use)"),
        ),
        Ok((path, free)) => check(
            "disk",
            Status::Ok,
            format!("{} free under {path}", gib(*free)),
            None,
        ),
        Err(error) => check(
            "disk",
            Status::Warn,
            format!("free space unknown: {error}"),
            Some("check the engine host's free space (`docker system df`)"),
        ),
    })
}

/// Makes the checks a profile's launches depend on fail instead of warn: a launch that creates
/// an internal network (the egress integration's isolated network) cannot start where
/// `isolated-network` warned. Reads the launches' parts, so a part that needs another engine
/// feature adds its rule here.
pub fn require_for(parts: &[crate::plan::Part], checks: &mut [Check]) {
    let needs_isolated_network = parts.iter().any(|part| {
        matches!(
            part,
            crate::plan::Part::Network {
                created: true,
                internal: true,
                ..
            }
        )
    });
    for check in checks.iter_mut() {
        if check.id == "isolated-network" && needs_isolated_network && check.status == Status::Warn
        {
            check.status = Status::Fail;
            check
                .summary
                .push_str("; the profile's launches create one");
        }
    }
}

/// A doctor's report: the checks and their counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The engine checked.
    pub engine: Engine,
    /// Every check, engine first, then the profile's.
    pub checks: Vec<Check>,
}

impl Report {
    /// How many checks came out `status`.
    pub fn count(&self, status: Status) -> usize {
        self.checks.iter().filter(|c| c.status == status).count()
    }

    /// Whether any check failed (doctor then exits 1).
    pub fn failed(&self) -> bool {
        self.count(Status::Fail) > 0
    }

    /// The report as text: one line per check, its fix below it, then the counts.
    pub fn text(&self) -> String {
        let width = self.checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
        let mut out = String::new();
        for check in &self.checks {
            out.push_str(&format!(
                "{:<4}  {:<width$}  {}\n",
                check.status.as_str(),
                check.id,
                check.summary
            ));
            if let Some(fix) = &check.fix {
                out.push_str(&format!("      {:<width$}  fix: {fix}\n", ""));
            }
        }
        out.push_str(&format!(
            "\n{} ok, {} warn, {} fail\n",
            self.count(Status::Ok),
            self.count(Status::Warn),
            self.count(Status::Fail)
        ));
        out
    }

    /// The report as JSON: `{"engine", "checks": [...], "ok", "warn", "fail"}`.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "engine": self.engine,
            "checks": self.checks,
            "ok": self.count(Status::Ok),
            "warn": self.count(Status::Warn),
            "fail": self.count(Status::Fail),
        })
    }
}

mod profile;
pub use profile::{profile_checks, ProfileFacts};

#[cfg(test)]
mod tests;
