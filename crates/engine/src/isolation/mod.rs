//! The isolation floor at launch (`[security] isolation`), written once over the
//! [engine port](crate::port): the engine's runtimes detected ([`EnginePort::runtimes`]), each
//! proven by a probe ([`probe`]: a container under it reading the kernel it sees; the proof
//! remembered per engine and runtime version, [`cache`]), and the runtime chosen by the pure
//! [`agentc_policy::choose_runtime`] before anything of the launch is created. None at the
//! floor is a [`FloorError::Shortfall`] naming what the engine has and how to get what is
//! missing. `agentc run`, its pool claims and `verify` meet floors through it, and so does a
//! session's create ([`crate::session::SandboxClient::create`]).

pub mod cache;
pub mod probe;

use std::path::PathBuf;

use agentc_egress::image::ProxyExecutable;
use agentc_policy::{
    choose_runtime, ChosenRuntime, ContainerSpec, DetectedRuntime, Isolation, IsolationShortfall,
    IsolationTier,
};

use crate::port::EnginePort;
use crate::{Engine, EngineRuntimes, ExecError};

pub use agentc_policy::{LABEL_ISOLATION, LABEL_RUNTIME};

/// The tier a probe proves, from the kernel the probe container saw (`/proc/version`, then
/// `dmesg`) against the host's: gVisor says so in its boot log; a kernel other than the
/// host's is a virtual machine's; the host's own kernel is a container's. Pure.
pub fn classify_probe(host_version: &str, seen: &str) -> IsolationTier {
    let first = seen.lines().next().unwrap_or_default().trim();
    if seen.contains("gVisor") {
        IsolationTier::Gvisor
    } else if first == host_version.trim() {
        IsolationTier::Container
    } else {
        IsolationTier::Microvm
    }
}

/// How floors are met: where proofs are remembered, what the probes run, and what this
/// machine is.
#[derive(Debug, Clone)]
pub struct FloorOptions {
    /// The proofs' file ([`cache::location`]); `None` probes every time.
    pub cache: Option<PathBuf>,
    /// The agentc executable the probe's image is made of; `None` (a library caller that named
    /// none and has none on its `PATH`): the probe runs in the launch's own image instead.
    pub proxy: Option<ProxyExecutable>,
    /// This machine's kernel (`/proc/version`), which a container's probe sees too.
    pub host_kernel: String,
    /// Whether the engine runs on this machine (a runtime's program then identifies it).
    pub local: bool,
    /// The `PATH` a runtime named without a `/` is looked up on, when the engine is local.
    pub search: Option<String>,
}

impl FloorOptions {
    /// The options of a caller whose environment is `env`: the cache under its
    /// `XDG_CACHE_HOME` or `HOME` (none with `AGENTC_ISOLATION_CACHE=off`), its `PATH`, this
    /// machine's kernel, a local engine unless `DOCKER_HOST` names another machine, and the
    /// probe's image made of `proxy` ([`FloorOptions::proxy`]).
    pub fn from_env(
        env: &std::collections::BTreeMap<String, String>,
        proxy: Option<ProxyExecutable>,
    ) -> FloorOptions {
        let local = env
            .get("DOCKER_HOST")
            .is_none_or(|host| host.is_empty() || host.starts_with("unix://"));
        FloorOptions {
            cache: cache::location(|name| env.get(name).cloned()),
            proxy,
            host_kernel: std::fs::read_to_string("/proc/version").unwrap_or_default(),
            local,
            search: env.get("PATH").cloned(),
        }
    }
}

/// Why a floor was not met.
#[derive(Debug, thiserror::Error)]
pub enum FloorError {
    /// The engine could not be asked for its runtimes.
    #[error(transparent)]
    Engine(#[from] ExecError),
    /// No runtime of the engine meets the floor; nothing was created.
    #[error("no runtime of the engine meets security.isolation.min = {:?} ({}); found: {}", .0.min.as_str(), .0.min.words(), found(.0))]
    Shortfall(IsolationShortfall),
}

impl agentc_policy::Hinted for FloorError {
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            FloorError::Engine(error) => error.hint(),
            FloorError::Shortfall(shortfall) => Some(std::borrow::Cow::Borrowed(&shortfall.hint)),
        }
    }
}

/// What the engine was found to have, for a shortfall's message.
pub fn found(shortfall: &IsolationShortfall) -> String {
    if shortfall.found.is_empty() {
        "no runtimes".to_string()
    } else {
        shortfall.found.join("; ")
    }
}

/// The refusal of a floor `engine` cannot meet for `profile`, as `agentc run`, verify and a
/// session's create report it: what was asked, what the engine has, and how to get it.
pub fn not_met(shortfall: IsolationShortfall, engine: Engine, profile: &str) -> ExecError {
    ExecError::FloorNotMet {
        profile: profile.to_string(),
        engine,
        min: shortfall.min.as_str().to_string(),
        words: shortfall.min.words().to_string(),
        named: match &shortfall.runtime {
            Some(runtime) => format!(" with security.runtime {runtime:?}"),
            None => String::new(),
        },
        found: found(&shortfall),
        hint: shortfall.hint,
    }
}

/// A floor met: the container with the chosen runtime and the [`LABEL_ISOLATION`] and
/// [`LABEL_RUNTIME`] labels, and the choice.
#[derive(Debug, Clone)]
pub struct Met {
    /// The container to launch.
    pub container: ContainerSpec,
    /// The runtime chosen and its tier; `None` for a container without a floor.
    pub chosen: Option<ChosenRuntime>,
}

/// Meets `container`'s isolation floor through `port`, when it has one: detects and probes
/// the engine's runtimes, chooses one, and returns the container placed under it
/// ([`agentc_policy::isolation::placed`], the rule `resolve` applies for
/// [`agentc_policy::Instance::floor`]). A container resolved with the floor met already
/// (placed under a runtime) is proven again (its runtime's probe, remembered) and comes back
/// as it was; one without a floor comes back unchanged, the engine not asked. Nothing of the
/// launch is created before (the probe containers are removed as they exit).
pub async fn meet_floor<P: EnginePort>(
    port: &P,
    container: &ContainerSpec,
    profile: &str,
    options: &FloorOptions,
) -> Result<Met, FloorError> {
    let Some(isolation) = container.isolation else {
        return Ok(Met {
            container: container.clone(),
            chosen: None,
        });
    };
    let chosen = choose(port, container, isolation, profile, options)
        .await?
        .map_err(FloorError::Shortfall)?;
    // Placing a container resolved with this very runtime changes nothing of it.
    let placed = agentc_policy::isolation::placed(container, &chosen);
    log::info!(
        "isolation: {} under runtime {} (security.isolation.min = {})",
        chosen.tier,
        chosen.name,
        isolation.min
    );
    Ok(Met {
        container: placed,
        chosen: Some(chosen),
    })
}

/// Detects and probes the engine's runtimes through `port` and chooses one for the floor: the
/// outer error when the engine cannot be asked, the inner one when nothing meets the floor.
pub async fn choose<P: EnginePort>(
    port: &P,
    container: &ContainerSpec,
    isolation: Isolation,
    profile: &str,
    options: &FloorOptions,
) -> Result<Result<ChosenRuntime, IsolationShortfall>, ExecError> {
    let found = port.runtimes().await?;
    let names: Vec<String> = found
        .runtimes
        .keys()
        .filter(|name| {
            container
                .runtime
                .as_ref()
                .is_none_or(|named| named == *name)
        })
        .cloned()
        .collect();
    let detected = detect(port, &found, &names, &container.image, profile, options).await;
    for runtime in &detected {
        log::debug!(
            "isolation probe {}: {:?} ({})",
            runtime.name,
            runtime.tier,
            runtime.evidence
        );
    }
    Ok(choose_runtime(
        isolation,
        container.runtime.as_deref(),
        found.default.as_deref(),
        &detected,
        !agentc_policy::image_firewall_holds_egress(container),
    ))
}

/// Each runtime of `found` named in `names` proven: from the cache when it holds a proof for
/// exactly this engine and runtime, else by a probe through `port` (a proof then remembered).
/// Only the runtimes detection found are considered, whatever the cache holds.
async fn detect<P: EnginePort>(
    port: &P,
    found: &EngineRuntimes,
    names: &[String],
    image: &str,
    profile: &str,
    options: &FloorOptions,
) -> Vec<DetectedRuntime> {
    let location = options.cache.as_deref();
    let mut entries = location.map(cache::load).unwrap_or_default();
    let mut changed = false;
    let mut detected = Vec::new();
    for name in names {
        let facts = found.runtimes.get(name).cloned().unwrap_or_default();
        let key = cache::ProbeKey {
            engine: found.engine.clone(),
            runtime: name.clone(),
            file: if options.local {
                cache::program_file(&facts.path, options.search.as_deref())
            } else {
                String::new()
            },
            path: facts.path,
            version: facts.version,
        };
        if let Some(entry) = cache::lookup(&entries, &key) {
            log::debug!("isolation probe {name}: {} (cached)", entry.tier);
            detected.push(DetectedRuntime {
                name: name.clone(),
                tier: Some(entry.tier),
                evidence: entry.evidence.clone(),
            });
            continue;
        }
        let runtime = match probe::probe(port, name, image, profile, options.proxy.as_ref()).await {
            Ok(seen) => DetectedRuntime {
                name: name.clone(),
                tier: Some(classify_probe(&options.host_kernel, &seen)),
                evidence: seen.lines().next().unwrap_or_default().to_string(),
            },
            Err(reason) => DetectedRuntime {
                name: name.clone(),
                tier: None,
                evidence: reason,
            },
        };
        if let Some(tier) = runtime.tier {
            cache::remember(
                &mut entries,
                cache::Entry {
                    key,
                    tier,
                    evidence: runtime.evidence.clone(),
                },
            );
            changed = true;
        }
        detected.push(runtime);
    }
    if let (Some(location), true) = (location, changed) {
        cache::store(location, &entries);
    }
    detected
}

#[cfg(test)]
mod tests;
