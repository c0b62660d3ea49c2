//! The egress companions of launches as the engine holds them, judged alike for both backends:
//! whether a sandbox's egress proxy is up, down or missing ([`classify`], shown by `agentc ps`
//! and `agentc egress log`), and what a launch killed before it finished left behind: an
//! isolated network or a proxy without their workload, or a workload without its proxy
//! ([`unpaired`], listed by `agentc doctor`; [`existing_network`], the error of a launch whose
//! isolated network already exists).
//!
//! Each backend gathers the facts with its own engine calls (the docker CLI or the Engine API)
//! into the plain values here; nothing here calls the daemon.

use std::collections::BTreeMap;

use agentc_policy::{
    EgressSpec, Hint, KIND_EGRESS_PROXY, LABEL_EGRESS_FOR, LABEL_KIND, LABEL_PROFILE,
};
use bollard::models::{ContainerInspectResponse, ContainerStateStatusEnum, HealthStatusEnum};
use serde::Serialize;

use crate::error::ExecError;

/// The state of a sandbox's egress, when the sandbox sits behind agentc's egress proxy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum EgressState {
    /// The proxy runs (and, when the engine reports its health, is not unhealthy).
    Up {
        /// The proxy container's name.
        proxy: String,
        /// How many times the engine started it again after it died (its restart policy,
        /// [`agentc_policy::PROXY_RESTARTS`] at most), with the same launch CA.
        #[serde(skip_serializing_if = "is_zero")]
        restarts: i64,
    },
    /// The proxy exists but does not serve: exited, dead, paused, restarting, never started,
    /// or running unhealthy. The sandbox reaches nothing outside.
    Down {
        /// The proxy container's name.
        proxy: String,
        /// Why: the engine's state (`exited`, `paused`, ...) or `unhealthy`.
        reason: String,
        /// Its exit code, once it exited.
        #[serde(skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
        /// When it stopped (RFC 3339, as the engine reports it), once it did.
        #[serde(skip_serializing_if = "Option::is_none")]
        since: Option<String>,
        /// How many times the engine started it again before this.
        #[serde(skip_serializing_if = "is_zero")]
        restarts: i64,
    },
    /// No proxy container serves the sandbox's isolated network any more. The sandbox reaches
    /// nothing outside.
    Missing {
        /// The sandbox's isolated network.
        network: String,
    },
}

fn is_zero(count: &i64) -> bool {
    *count == 0
}

/// The exit status of a proxy that stopped on a credential replay (`on_replay = "stop"`),
/// which stays down: [`agentc_egress::credential::REPLAY_EXIT_CODE`] as the engine reports it.
const REPLAY_STOP: i64 = agentc_egress::credential::REPLAY_EXIT_CODE as i64;

impl EgressState {
    /// The word `agentc ps` prints: `up`, `up (restarted 1x)`, `down (exited 137)`,
    /// `down (exited 137, restarted 5x)`, `down (stopped on a replay)`, `down (unhealthy)`,
    /// `missing`.
    pub fn cell(&self) -> String {
        match self {
            EgressState::Up { restarts: 0, .. } => "up".to_string(),
            EgressState::Up { restarts, .. } => format!("up (restarted {restarts}x)"),
            EgressState::Down {
                reason,
                exit_code,
                restarts,
                ..
            } => {
                let restarted = match restarts {
                    0 => String::new(),
                    n => format!(", restarted {n}x"),
                };
                match exit_code {
                    // Its restarts after a replay stop are not deaths: each refused to serve.
                    Some(REPLAY_STOP) if reason == "exited" => {
                        "down (stopped on a replay)".to_string()
                    }
                    Some(code) => format!("down ({reason} {code}{restarted})"),
                    None => format!("down ({reason}{restarted})"),
                }
            }
            EgressState::Missing { .. } => "missing".to_string(),
        }
    }

    /// Whether the proxy serves.
    pub fn is_up(&self) -> bool {
        matches!(self, EgressState::Up { .. })
    }

    /// The error line of a sandbox whose egress is down or missing (`None` when up), with what
    /// to do as its hint: `egress of SANDBOX is down: its proxy PROXY exited with code 137 at
    /// TIME; ...`.
    pub fn error_line(&self, sandbox: &str) -> Option<Hint<String>> {
        let again = format!("`agentc rm {sandbox}` and a new `agentc run` give it a new one");
        match self {
            EgressState::Up { .. } => None,
            EgressState::Down {
                proxy,
                reason,
                exit_code: Some(REPLAY_STOP),
                since,
                ..
            } if reason == "exited" => {
                let when = since
                    .as_deref()
                    .map(|since| format!(" at {since}"))
                    .unwrap_or_default();
                Some(Hint::new(
                    format!(
                        "egress of {sandbox} is down: its egress proxy {proxy} stopped on a \
                         credential replay{when} (credentials.on_replay = \"stop\") and stays \
                         down, started again or not; the sandbox reaches nothing outside"
                    ),
                    format!("`agentc egress log {sandbox}` shows the replay; {again}"),
                ))
            }
            EgressState::Down {
                proxy,
                reason,
                exit_code,
                since,
                restarts,
            } => {
                let code = exit_code
                    .map(|code| format!(" with code {code}"))
                    .unwrap_or_default();
                let when = since
                    .as_deref()
                    .map(|since| format!(" at {since}"))
                    .unwrap_or_default();
                let restarted = match restarts {
                    0 => String::new(),
                    1 => " after 1 restart".to_string(),
                    n => format!(" after {n} restarts"),
                };
                let what = match reason.as_str() {
                    "unhealthy" => "runs but is unhealthy".to_string(),
                    "exited" => format!("exited{code}{when}{restarted}"),
                    other => format!("is {other}{code}{when}{restarted}"),
                };
                Some(Hint::new(
                    format!(
                        "egress of {sandbox} is down: its egress proxy {proxy} {what}; the \
                         sandbox reaches nothing outside until it runs again"
                    ),
                    format!("`agentc start {proxy}` starts the proxy again; {again}"),
                ))
            }
            EgressState::Missing { network } => Some(Hint::new(
                format!(
                    "egress of {sandbox} is missing: no egress proxy serves its isolated network \
                     {network}; the sandbox reaches nothing outside"
                ),
                again,
            )),
        }
    }
}

/// The engine's zero time, which it reports for a container that never stopped.
const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

/// The state of egress through the proxy whose inspect is `proxy` (`None`: no proxy container
/// serves `network`, the sandbox's isolated network).
pub fn classify(network: &str, proxy: Option<&ContainerInspectResponse>) -> EgressState {
    let Some(proxy) = proxy else {
        return EgressState::Missing {
            network: network.to_string(),
        };
    };
    let name = proxy
        .name
        .as_deref()
        .unwrap_or_default()
        .trim_start_matches('/')
        .to_string();
    let restarts = proxy.restart_count.unwrap_or_default();
    let state = proxy.state.clone().unwrap_or_default();
    let status = state.status.unwrap_or(ContainerStateStatusEnum::EMPTY);
    let health = state.health.and_then(|health| health.status);
    let running = status == ContainerStateStatusEnum::RUNNING
        || (status == ContainerStateStatusEnum::EMPTY && state.running == Some(true));
    if running && state.paused != Some(true) {
        if health == Some(HealthStatusEnum::UNHEALTHY) {
            return EgressState::Down {
                proxy: name,
                reason: "unhealthy".to_string(),
                exit_code: None,
                since: None,
                restarts,
            };
        }
        return EgressState::Up {
            proxy: name,
            restarts,
        };
    }
    let reason = match status {
        ContainerStateStatusEnum::EMPTY if state.paused == Some(true) => "paused".to_string(),
        ContainerStateStatusEnum::EMPTY => "not running".to_string(),
        ContainerStateStatusEnum::RUNNING => "paused".to_string(),
        other => other.to_string(),
    };
    let stopped = matches!(
        status,
        ContainerStateStatusEnum::EXITED | ContainerStateStatusEnum::DEAD
    );
    EgressState::Down {
        proxy: name,
        reason,
        exit_code: state.exit_code.filter(|_| stopped),
        since: state
            .finished_at
            .filter(|at| stopped && !at.is_empty() && at != ZERO_TIME),
        restarts,
    }
}

/// Whether a network's labels make it an isolated network agentc created for an egress proxy
/// (`io.agentc.kind=egress-proxy` and `io.agentc.profile`).
pub fn is_isolated_network<'a>(labels: impl IntoIterator<Item = (&'a String, &'a String)>) -> bool {
    let mut kind = false;
    let mut profile = false;
    for (key, value) in labels {
        kind |= key == LABEL_KIND && value == KIND_EGRESS_PROXY;
        profile |= key == LABEL_PROFILE;
    }
    kind && profile
}

/// The label filter (`label=VALUE` without `label=`) that finds egress proxies.
pub fn proxy_kind_filter() -> String {
    format!("{LABEL_KIND}={KIND_EGRESS_PROXY}")
}

/// A container that uses a network (or is labelled for a workload), as listed: its name, its
/// `io.agentc.kind` label and its state (`running`, `exited`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The container's name, without the leading `/`.
    pub name: String,
    /// Its `io.agentc.kind` label (empty without one).
    pub kind: String,
    /// The engine's state.
    pub state: String,
}

impl Member {
    fn is_proxy(&self) -> bool {
        self.kind == KIND_EGRESS_PROXY
    }
}

/// An isolated network agentc created for an egress proxy, with the containers on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsolatedNetworkUse {
    /// The network's name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Every container on it, running or not (`docker ps -a --filter network=NAME`).
    pub members: Vec<Member>,
}

impl IsolatedNetworkUse {
    fn workload(&self) -> String {
        self.labels
            .get(LABEL_EGRESS_FOR)
            .cloned()
            .unwrap_or_default()
    }

    fn profile(&self) -> String {
        self.labels.get(LABEL_PROFILE).cloned().unwrap_or_default()
    }

    fn proxies(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|member| member.is_proxy())
    }

    fn users(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|member| !member.is_proxy())
    }
}

/// An egress proxy container with the networks it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyUse {
    /// The proxy as listed.
    pub proxy: Member,
    /// Its `io.agentc.egress-for` label: the workload it was made for.
    pub workload: String,
    /// Its `io.agentc.profile` label.
    pub profile: String,
    /// The networks it is on (the outside one and, once connected, the isolated one).
    pub networks: Vec<String>,
}

/// What a leftover is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeftoverKind {
    /// An isolated network no workload uses.
    Network,
    /// An egress proxy whose workload is gone.
    Proxy,
    /// A workload whose egress proxy is gone: it reaches nothing outside.
    Workload,
}

/// Something a launch killed before it finished (or a proxy removed by hand) left behind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Leftover {
    /// What it is.
    pub kind: LeftoverKind,
    /// The network's or container's name.
    pub name: String,
    /// The workload it was made for (its `io.agentc.egress-for` label).
    pub workload: String,
    /// Its `io.agentc.profile` label.
    pub profile: String,
    /// The command that removes it.
    pub remove: String,
}

impl Leftover {
    /// One line: what is left and why it is a leftover.
    pub fn describe(&self) -> String {
        match self {
            Leftover {
                kind: LeftoverKind::Network,
                name,
                workload,
                ..
            } => format!("isolated network {name}: no container of {workload} uses it"),
            Leftover {
                kind: LeftoverKind::Proxy,
                name,
                workload,
                ..
            } => format!("egress proxy {name}: no container of {workload} is behind it"),
            Leftover {
                kind: LeftoverKind::Workload,
                name,
                ..
            } => format!("sandbox {name}: its egress proxy is gone (it reaches nothing outside)"),
        }
    }
}

/// The leftovers among agentc's isolated networks `networks` and egress proxies `proxies`:
/// a network no workload uses (only proxies, or nothing, on it), a proxy none of whose networks
/// has a workload, and a workload on an isolated network that no proxy serves. Networks come
/// first, in the order given, then proxies, then workloads; each with the command that removes
/// it (the exact `docker` commands for a network or a proxy, since a workload name may be shared
/// by the per-run instances of unnamed launches; `agentc rm` for a workload).
pub fn unpaired(networks: &[IsolatedNetworkUse], proxies: &[ProxyUse]) -> Vec<Leftover> {
    let mut found = Vec::new();
    let in_use = |name: &str| {
        networks
            .iter()
            .any(|network| network.name == name && network.users().next().is_some())
    };
    for network in networks {
        if network.users().next().is_some() {
            continue;
        }
        let proxies: Vec<&str> = network.proxies().map(|p| p.name.as_str()).collect();
        found.push(Leftover {
            kind: LeftoverKind::Network,
            name: network.name.clone(),
            workload: network.workload(),
            profile: network.profile(),
            remove: remove_command(&proxies, Some(&network.name)),
        });
    }
    for proxy in proxies {
        if proxy.networks.iter().any(|network| in_use(network)) {
            continue;
        }
        found.push(Leftover {
            kind: LeftoverKind::Proxy,
            name: proxy.proxy.name.clone(),
            workload: proxy.workload.clone(),
            profile: proxy.profile.clone(),
            remove: remove_command(&[proxy.proxy.name.as_str()], None),
        });
    }
    for network in networks {
        if network.proxies().next().is_some() {
            continue;
        }
        for user in network.users() {
            found.push(Leftover {
                kind: LeftoverKind::Workload,
                name: user.name.clone(),
                workload: network.workload(),
                profile: network.profile(),
                remove: format!("agentc rm {}", user.name),
            });
        }
    }
    found
}

/// `docker rm -f PROXY... && docker network rm NETWORK`, the parts given.
pub fn remove_command(containers: &[&str], network: Option<&str>) -> String {
    let mut parts = Vec::new();
    if !containers.is_empty() {
        parts.push(format!("docker rm -f {}", containers.join(" ")));
    }
    if let Some(network) = network {
        parts.push(format!("docker network rm {network}"));
    }
    parts.join(" && ")
}

/// Whether the daemon's message says a network of that name exists already (`docker network
/// create`, `POST /networks/create` with duplicate names refused).
pub fn network_exists(message: &str) -> bool {
    crate::daemon_text::refusal(message) == Some(crate::daemon_text::Refusal::NameInUse)
}

/// The error of a launch whose isolated network `found` exists already: a leftover of a
/// launch of the same sandbox that was killed before it finished (named with its proxy, the
/// command that removes them, and `agentc rm` of the workload, which does too), the network of
/// a sandbox of that name that still exists, or a network agentc did not make for this
/// sandbox. Nothing of this launch was created; nothing is removed.
pub fn existing_network(
    egress: &EgressSpec,
    found: &IsolatedNetworkUse,
    proxy: Option<&Member>,
) -> ExecError {
    let network = found.name.clone();
    let workload = egress
        .network
        .labels
        .get(LABEL_EGRESS_FOR)
        .cloned()
        .unwrap_or_default();
    let ours = is_isolated_network(&found.labels) && found.workload() == workload;
    if !ours {
        return ExecError::EgressNetworkExists {
            network: network.clone(),
            found: "a network of that name exists and agentc did not make it for this sandbox"
                .to_string(),
            hint: format!(
                "remove it (`docker network rm {network}`) if nothing uses it, or give the \
                 sandbox another name: its isolated network is named after it"
            ),
        };
    }
    if let Some(user) = found.users().next() {
        return ExecError::EgressNetworkExists {
            network,
            found: format!(
                "it belongs to the container {} ({}), which still exists",
                user.name, user.state
            ),
            hint: format!(
                "`agentc rm {}` removes it with its egress proxy and network; `agentc ps --all` \
                 lists agentc's containers",
                user.name
            ),
        };
    }
    let mut proxies: Vec<&Member> = found.proxies().collect();
    if let Some(proxy) = proxy.filter(|proxy| proxy.is_proxy()) {
        if !proxies.iter().any(|known| known.name == proxy.name) {
            proxies.push(proxy);
        }
    }
    let names: Vec<&str> = proxies.iter().map(|proxy| proxy.name.as_str()).collect();
    let with = match proxies.as_slice() {
        [] => String::new(),
        [proxy] => format!(", with its egress proxy {} ({})", proxy.name, proxy.state),
        _ => format!(", with its egress proxies {}", names.join(", ")),
    };
    ExecError::EgressNetworkExists {
        network: network.clone(),
        found: format!(
            "it is left from a launch of {workload} that was killed before it finished{with}; \
             no container uses it"
        ),
        hint: format!(
            "`agentc rm {workload}` removes it (or `{}`), then run again; `agentc doctor` lists \
             such leftovers",
            remove_command(&names, Some(&network))
        ),
    }
}

/// What an object agentc made for a launch's egress companion is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CompanionKind {
    /// The egress proxy container.
    Proxy,
    /// The isolated network.
    Network,
    /// The proxy's per-launch CA volume.
    Volume,
}

/// One object of a launch's egress companion, as the engine lists it (labelled
/// `io.agentc.kind=egress-proxy`, `io.agentc.profile` and `io.agentc.egress-for=WORKLOAD`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompanionObject {
    /// Proxy, network or CA volume.
    pub kind: CompanionKind,
    /// Its name.
    pub name: String,
    /// The workload it serves (`io.agentc.egress-for`).
    pub workload: String,
    /// Its profile (`io.agentc.profile`).
    pub profile: String,
    /// When it was created (Unix seconds), when the engine says.
    pub created: Option<i64>,
    /// A proxy that ended (exited or dead): its watch on its workload ended it.
    pub ended: bool,
}

/// The companion objects of one workload that is gone: a launch killed before it finished
/// (SIGKILL of agentc at any step), or a workload removed without agentc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphans {
    /// The workload's name.
    pub workload: String,
    /// Its objects, proxies first, then networks, then volumes (the order they can be
    /// removed in).
    pub objects: Vec<(CompanionKind, String)>,
}

impl Orphans {
    /// The line agentc prints on stderr once it removed them.
    pub fn removed_line(&self) -> String {
        let objects: Vec<String> = self
            .objects
            .iter()
            .map(|(kind, name)| match kind {
                CompanionKind::Proxy => format!("proxy {name}"),
                CompanionKind::Network => format!("network {name}"),
                CompanionKind::Volume => format!("volume {name}"),
            })
            .collect();
        format!(
            "removed the egress companion of {}, which is gone (its launch was killed): {}",
            self.workload,
            objects.join(", ")
        )
    }
}

/// How old a companion without its workload must be before [`orphans`] counts it as left
/// behind: a launch creates its workload seconds after its network, so a younger one may be a
/// launch still setting up (unless its proxy already ended, or the caller is about to launch
/// that very workload).
pub const ORPHAN_GRACE_SECS: i64 = 60;

/// The companions whose workload is gone, grouped by workload: `existing` holds the workloads
/// that exist (running or not). A workload's set is left alone while one of its objects is
/// younger than [`ORPHAN_GRACE_SECS`] at `now`, unless its proxy ended, or the workload is
/// `own` (the caller launches it next, so no other launch can be setting it up), or its
/// profile is `at_once` (a fault test's own profile).
pub fn orphans(
    objects: &[CompanionObject],
    existing: &std::collections::BTreeSet<String>,
    own: Option<&str>,
    at_once: Option<&str>,
    now: i64,
) -> Vec<Orphans> {
    let mut by_workload: BTreeMap<&str, Vec<&CompanionObject>> = BTreeMap::new();
    for object in objects.iter().filter(|o| !o.workload.is_empty()) {
        by_workload
            .entry(&object.workload)
            .or_default()
            .push(object);
    }
    let mut found = Vec::new();
    for (workload, mut set) in by_workload {
        if existing.contains(workload) {
            continue;
        }
        let young = set
            .iter()
            .any(|o| o.created.is_some_and(|at| now - at < ORPHAN_GRACE_SECS));
        let ended = set
            .iter()
            .any(|o| o.kind == CompanionKind::Proxy && o.ended);
        let test_profile = set.iter().any(|o| Some(o.profile.as_str()) == at_once);
        if young && !ended && own != Some(workload) && !test_profile {
            continue;
        }
        set.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
        found.push(Orphans {
            workload: workload.to_string(),
            objects: set.iter().map(|o| (o.kind, o.name.clone())).collect(),
        });
    }
    found
}

pub use crate::rfc3339::unix_seconds;

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_policy::Hinted;
    use bollard::models::{ContainerState, Health};

    fn proxy(
        status: ContainerStateStatusEnum,
        exit: i64,
        health: Option<HealthStatusEnum>,
    ) -> ContainerInspectResponse {
        ContainerInspectResponse {
            name: Some("/box-egress-proxy".into()),
            state: Some(ContainerState {
                status: Some(status),
                running: Some(status == ContainerStateStatusEnum::RUNNING),
                exit_code: Some(exit),
                finished_at: Some(if status == ContainerStateStatusEnum::RUNNING {
                    ZERO_TIME.to_string()
                } else {
                    "2026-12-01T19:50:00.5Z".to_string()
                }),
                health: health.map(|status| Health {
                    status: Some(status),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_running_proxy_is_up_and_anything_else_is_down_or_missing() {
        let up = classify(
            "box-egress",
            Some(&proxy(ContainerStateStatusEnum::RUNNING, 0, None)),
        );
        assert_eq!(
            up,
            EgressState::Up {
                proxy: "box-egress-proxy".into(),
                restarts: 0,
            }
        );
        assert_eq!(up.cell(), "up");
        assert_eq!(up.error_line("box"), None);
        let healthy = proxy(
            ContainerStateStatusEnum::RUNNING,
            0,
            Some(HealthStatusEnum::HEALTHY),
        );
        assert!(classify("n", Some(&healthy)).is_up());

        let killed = classify(
            "box-egress",
            Some(&proxy(ContainerStateStatusEnum::EXITED, 137, None)),
        );
        assert_eq!(
            killed,
            EgressState::Down {
                proxy: "box-egress-proxy".into(),
                reason: "exited".into(),
                exit_code: Some(137),
                since: Some("2026-12-01T19:50:00.5Z".into()),
                restarts: 0,
            }
        );
        assert_eq!(killed.cell(), "down (exited 137)");
        assert_eq!(
            killed.error_line("box").unwrap().with_hint().to_string(),
            "egress of box is down: its egress proxy box-egress-proxy exited with code 137 at \
             2026-12-01T19:50:00.5Z; the sandbox reaches nothing outside until it runs again\n  \
             hint: `agentc start box-egress-proxy` starts the proxy again; `agentc rm box` and a \
             new `agentc run` give it a new one"
        );
        assert_eq!(
            serde_json::to_value(&killed).unwrap(),
            serde_json::json!({"state": "down", "proxy": "box-egress-proxy", "reason": "exited",
                               "exit_code": 137, "since": "2026-12-01T19:50:00.5Z"})
        );

        let sick = proxy(
            ContainerStateStatusEnum::RUNNING,
            0,
            Some(HealthStatusEnum::UNHEALTHY),
        );
        let sick = classify("n", Some(&sick));
        assert_eq!(sick.cell(), "down (unhealthy)");
        assert!(sick
            .error_line("box")
            .unwrap()
            .with_hint()
            .to_string()
            .contains("runs but is unhealthy"));

        for (status, word) in [
            (ContainerStateStatusEnum::PAUSED, "down (paused)"),
            (ContainerStateStatusEnum::CREATED, "down (created)"),
            (ContainerStateStatusEnum::RESTARTING, "down (restarting)"),
        ] {
            let state = classify("n", Some(&proxy(status, 0, None)));
            assert_eq!(state.cell(), word);
            // Neither an exit code nor a time for a proxy that did not stop.
            assert!(matches!(
                state,
                EgressState::Down {
                    exit_code: None,
                    since: None,
                    ..
                }
            ));
        }

        // The engine's restarts (its restart policy) are shown, up or down.
        let mut restarted = proxy(ContainerStateStatusEnum::RUNNING, 137, None);
        restarted.restart_count = Some(2);
        let restarted = classify("n", Some(&restarted));
        assert_eq!(restarted.cell(), "up (restarted 2x)");
        assert_eq!(restarted.error_line("box"), None);
        assert_eq!(
            serde_json::to_value(&restarted).unwrap(),
            serde_json::json!({"state": "up", "proxy": "box-egress-proxy", "restarts": 2})
        );
        let mut spent = proxy(ContainerStateStatusEnum::EXITED, 137, None);
        spent.restart_count = Some(5);
        let spent = classify("n", Some(&spent));
        assert_eq!(spent.cell(), "down (exited 137, restarted 5x)");
        assert!(spent
            .error_line("box")
            .unwrap()
            .with_hint()
            .to_string()
            .contains("exited with code 137 at 2026-12-01T19:50:00.5Z after 5 restarts;"));

        // A replay stop stays down, its refused restarts not counted as deaths.
        let mut replayed = proxy(ContainerStateStatusEnum::EXITED, 3, None);
        replayed.restart_count = Some(5);
        let replayed = classify("n", Some(&replayed));
        assert_eq!(replayed.cell(), "down (stopped on a replay)");
        assert_eq!(
            replayed.error_line("box").unwrap().with_hint().to_string(),
            "egress of box is down: its egress proxy box-egress-proxy stopped on a credential \
             replay at 2026-12-01T19:50:00.5Z (credentials.on_replay = \"stop\") and stays \
             down, started again or not; the sandbox reaches nothing outside\n  hint: `agentc \
             egress log box` shows the replay; `agentc rm box` and a new `agentc run` give it a \
             new one"
        );

        let missing = classify("box-egress", None);
        assert_eq!(missing.cell(), "missing");
        assert_eq!(
            serde_json::to_value(&missing).unwrap(),
            serde_json::json!({"state": "missing", "network": "box-egress"})
        );
        assert!(missing
            .error_line("box")
            .unwrap()
            .with_hint()
            .to_string()
            .starts_with(
                "egress of box is missing: no egress proxy serves its isolated network box-egress;"
            ));
    }

    fn member(name: &str, kind: &str, state: &str) -> Member {
        Member {
            name: name.into(),
            kind: kind.into(),
            state: state.into(),
        }
    }

    fn network(name: &str, workload: &str, members: Vec<Member>) -> IsolatedNetworkUse {
        IsolatedNetworkUse {
            name: name.into(),
            labels: BTreeMap::from([
                (LABEL_KIND.to_string(), KIND_EGRESS_PROXY.to_string()),
                (LABEL_PROFILE.to_string(), "p".to_string()),
                (LABEL_EGRESS_FOR.to_string(), workload.to_string()),
            ]),
            members,
        }
    }

    #[test]
    fn unpaired_are_sets_without_their_workload_or_workloads_without_their_proxy() {
        let live = network(
            "live-egress",
            "live",
            vec![
                member("live", "sandbox", "exited"),
                member("live-egress-proxy", "egress-proxy", "running"),
            ],
        );
        let killed = network(
            "killed-egress",
            "killed",
            vec![member("killed-egress-proxy", "egress-proxy", "running")],
        );
        let bare = network("bare-egress", "bare", vec![]);
        let orphan = network(
            "orphan-egress",
            "orphan",
            vec![member("orphan", "sandbox", "running")],
        );
        let proxies = vec![
            ProxyUse {
                proxy: member("live-egress-proxy", "egress-proxy", "running"),
                workload: "live".into(),
                profile: "p".into(),
                networks: vec!["bridge".into(), "live-egress".into()],
            },
            ProxyUse {
                proxy: member("lost-egress-proxy", "egress-proxy", "created"),
                workload: "lost".into(),
                profile: "p".into(),
                networks: vec!["bridge".into()],
            },
        ];
        let found = unpaired(&[live, killed, bare, orphan], &proxies);
        let lines: Vec<(LeftoverKind, &str, &str)> = found
            .iter()
            .map(|left| (left.kind, left.name.as_str(), left.remove.as_str()))
            .collect();
        assert_eq!(
            lines,
            vec![
                (
                    LeftoverKind::Network,
                    "killed-egress",
                    "docker rm -f killed-egress-proxy && docker network rm killed-egress"
                ),
                (
                    LeftoverKind::Network,
                    "bare-egress",
                    "docker network rm bare-egress"
                ),
                (
                    LeftoverKind::Proxy,
                    "lost-egress-proxy",
                    "docker rm -f lost-egress-proxy"
                ),
                (LeftoverKind::Workload, "orphan", "agentc rm orphan"),
            ]
        );
        assert_eq!(
            found[0].describe(),
            "isolated network killed-egress: no container of killed uses it"
        );
    }

    fn spec_for(workload: &str) -> EgressSpec {
        let mut labels = BTreeMap::from([
            (LABEL_KIND.to_string(), KIND_EGRESS_PROXY.to_string()),
            (LABEL_PROFILE.to_string(), "p".to_string()),
            (LABEL_EGRESS_FOR.to_string(), workload.to_string()),
        ]);
        let mut proxy = agentc_policy::ContainerSpec::empty("agentc-egress");
        proxy.name = Some(format!("{workload}-egress-proxy"));
        proxy.labels = std::mem::take(&mut labels);
        EgressSpec {
            network: agentc_policy::IsolatedNetwork {
                name: format!("{workload}-egress"),
                subnet: "10.213.0.0/28".into(),
                internal: true,
                options: BTreeMap::new(),
                labels: proxy.labels.clone(),
            },
            outside: agentc_policy::Network::Default,
            proxy: Box::new(proxy),
            proxy_address: "10.213.0.2".parse().unwrap(),
            credentials: Vec::new(),
        }
    }

    #[test]
    fn an_existing_network_names_the_leftover_and_its_removal_without_the_enforce_hint() {
        let egress = spec_for("box");
        let left = network("box-egress", "box", vec![]);
        let error = existing_network(
            &egress,
            &left,
            Some(&member("box-egress-proxy", "egress-proxy", "exited")),
        );
        assert_eq!(
            error.with_hint().to_string(),
            "cannot create the isolated network box-egress for the egress allowlist: it is left \
             from a launch of box that was killed before it finished, with its egress proxy \
             box-egress-proxy (exited); no container uses it\n  hint: `agentc rm box` removes it \
             (or `docker rm -f box-egress-proxy && docker network rm box-egress`), then run \
             again; `agentc doctor` lists such leftovers"
        );
        assert!(!error.with_hint().to_string().contains("enforce"));
        assert_eq!(error.exit_code(), 125);

        let bare = existing_network(&egress, &left, None)
            .with_hint()
            .to_string();
        assert!(
            bare.contains("killed before it finished; no container uses it"),
            "{bare}"
        );
        assert!(
            bare.contains("(or `docker network rm box-egress`)"),
            "{bare}"
        );

        let used = network(
            "box-egress",
            "box",
            vec![member("box", "sandbox", "running")],
        );
        let used = existing_network(&egress, &used, None)
            .with_hint()
            .to_string();
        assert!(
            used.contains("belongs to the container box (running)"),
            "{used}"
        );
        assert!(used.contains("`agentc rm box` removes it"), "{used}");

        let mut foreign = network("box-egress", "other", vec![]);
        let text = existing_network(&egress, &foreign, None)
            .with_hint()
            .to_string();
        assert!(
            text.contains("agentc did not make it for this sandbox"),
            "{text}"
        );
        foreign.labels.clear();
        assert!(existing_network(&egress, &foreign, None)
            .with_hint()
            .to_string()
            .contains("`docker network rm box-egress`"));
        assert!(network_exists(
            "network with name box-egress already exists"
        ));
        assert!(!network_exists(
            "Pool overlaps with other one on this address space"
        ));
    }

    fn object(kind: CompanionKind, name: &str, workload: &str, created: i64) -> CompanionObject {
        CompanionObject {
            kind,
            name: name.to_string(),
            workload: workload.to_string(),
            profile: format!("p-{workload}"),
            created: Some(created),
            ended: false,
        }
    }

    #[test]
    fn orphans_are_the_sets_of_gone_workloads_past_the_grace() {
        let now = 10_000;
        let old = now - ORPHAN_GRACE_SECS;
        let objects = vec![
            object(CompanionKind::Volume, "killed-egress-ca", "killed", old),
            object(CompanionKind::Network, "killed-egress", "killed", old),
            object(CompanionKind::Proxy, "killed-egress-proxy", "killed", old),
            object(CompanionKind::Network, "live-egress", "live", old),
            object(CompanionKind::Proxy, "live-egress-proxy", "live", old),
            // Setting up right now: not yet its workload, not old enough to judge.
            object(CompanionKind::Network, "young-egress", "young", now - 5),
        ];
        let existing = std::collections::BTreeSet::from(["live".to_string()]);
        let found = orphans(&objects, &existing, None, None, now);
        assert_eq!(
            found,
            vec![Orphans {
                workload: "killed".into(),
                objects: vec![
                    (CompanionKind::Proxy, "killed-egress-proxy".into()),
                    (CompanionKind::Network, "killed-egress".into()),
                    (CompanionKind::Volume, "killed-egress-ca".into()),
                ],
            }]
        );
        assert_eq!(
            found[0].removed_line(),
            "removed the egress companion of killed, which is gone (its launch was killed): \
             proxy killed-egress-proxy, network killed-egress, volume killed-egress-ca"
        );
        // The caller's own next workload, or a proxy that ended, is judged at once.
        let own = orphans(&objects, &existing, Some("young"), None, now);
        assert_eq!(own.len(), 2, "{own:?}");
        let mut ended = objects.clone();
        ended.push(CompanionObject {
            ended: true,
            ..object(CompanionKind::Proxy, "young-egress-proxy", "young", now - 5)
        });
        assert_eq!(orphans(&ended, &existing, None, None, now).len(), 2);
        // A fault test's profile: judged at once too, and no other profile's.
        let at_once = orphans(&objects, &existing, None, Some("p-young"), now);
        assert_eq!(at_once.len(), 2);
        assert_eq!(
            orphans(&objects, &existing, None, Some("p-other"), now).len(),
            1
        );
    }

    #[test]
    fn engine_times_read_as_unix_seconds() {
        assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            unix_seconds("2026-12-02T03:44:50.123456789Z"),
            Some(1_796_183_090)
        );
        assert_eq!(
            unix_seconds("2026-12-02T04:44:50+01:00"),
            Some(1_796_183_090)
        );
        assert_eq!(unix_seconds("yesterday"), None);
    }
}
