//! The isolation floor at launch (`[security] isolation`): the engine's runtimes detected
//! through the launch's own backend ([`port`]: `docker info` / `podman info`, or `GET /info`),
//! each proven by a probe (a `--rm` container of the launch's image under it,
//! `--network=none`, reading `/proc/version` and `dmesg`; the proof remembered per engine and
//! runtime version, [`cache`]), and the runtime chosen by the pure
//! [`agentc_policy::choose_runtime`] before anything of the launch is created. None at the
//! floor: exit 65 naming what the engine has and how to get what is missing.

pub mod cache;
pub mod port;

use agentc_backend_common::EngineRuntimes;
use agentc_policy::{
    choose_runtime, ContainerSpec, DetectedRuntime, IsolationShortfall, IsolationTier,
};

use crate::context::Failure;

/// The label naming the tier a sandbox runs under (`container`, `gvisor`, `microvm`).
pub const LABEL_ISOLATION: &str = "io.agentc.isolation";
/// The label naming the runtime chosen for the floor.
pub const LABEL_RUNTIME: &str = "io.agentc.runtime";

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

/// The cache of probe results, unless bypassed ([`cache::location`]).
fn cache_location() -> Option<std::path::PathBuf> {
    cache::location(|name| std::env::var(name).ok())
}

/// What a probe runs and where its results are kept.
struct Probe<'a> {
    /// The launch's image.
    image: &'a str,
    /// The profile's name, for the probe containers' label.
    profile: &'a str,
    /// The cache file; `None` when bypassed.
    cache: Option<&'a std::path::Path>,
}

/// Each runtime of `found` proven: from the cache when it holds a proof for exactly this
/// engine and runtime, else by a probe through `port` (a proof then remembered). Only the
/// runtimes detection found are considered, whatever the cache holds.
fn detect(
    port: &mut dyn port::RuntimePort,
    found: &EngineRuntimes,
    names: &[String],
    probe: &Probe<'_>,
) -> Vec<DetectedRuntime> {
    let host_version = std::fs::read_to_string("/proc/version").unwrap_or_default();
    let location = probe.cache;
    let mut entries = location.map(cache::load).unwrap_or_default();
    let search = std::env::var("PATH").ok();
    let local = port.is_local();
    let mut changed = false;
    let detected = names
        .iter()
        .map(|name| {
            let facts = found.runtimes.get(name).cloned().unwrap_or_default();
            let key = cache::ProbeKey {
                engine: found.engine.clone(),
                runtime: name.clone(),
                file: if local {
                    cache::program_file(&facts.path, search.as_deref())
                } else {
                    String::new()
                },
                path: facts.path,
                version: facts.version,
            };
            if let Some(entry) = cache::lookup(&entries, &key) {
                log::debug!("isolation probe {name}: {} (cached)", entry.tier);
                return DetectedRuntime {
                    name: name.clone(),
                    tier: Some(entry.tier),
                    evidence: entry.evidence.clone(),
                };
            }
            let runtime = match port.probe(name, probe.image, probe.profile) {
                Ok(seen) => DetectedRuntime {
                    name: name.clone(),
                    tier: Some(classify_probe(&host_version, &seen)),
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
            runtime
        })
        .collect();
    if let (Some(location), true) = (location, changed) {
        cache::store(location, &entries);
    }
    detected
}

/// Forgets the cached proof of the runtime a failed launch ran under (`io.agentc.runtime`),
/// so that the next launch probes it again.
pub fn forget_on_failure(container: &ContainerSpec) {
    if container.isolation.is_none() {
        return;
    }
    if let (Some(runtime), Some(location)) = (&container.runtime, cache_location()) {
        cache::forget(&location, runtime);
    }
}

/// What the engine was found to have, for a shortfall's message.
fn found(shortfall: &IsolationShortfall) -> String {
    if shortfall.found.is_empty() {
        "no runtimes".to_string()
    } else {
        shortfall.found.join("; ")
    }
}

/// The refusal of a floor the engine cannot meet (exit 65), naming what it has.
fn refusal(shortfall: &IsolationShortfall, profile: &str) -> Failure {
    let named = match &shortfall.runtime {
        Some(runtime) => format!(" with security.runtime {runtime:?}"),
        None => String::new(),
    };
    Failure::unlaunchable(format!(
        "profile {profile:?}: no runtime of the {} engine meets security.isolation.min = {:?}{named} ({}); nothing was created\n  found: {}\n  hint: {}",
        crate::engine(),
        shortfall.min.as_str(),
        shortfall.min.words(),
        found(shortfall),
        shortfall.hint
    ))
}

/// Meets the container's isolation floor, when it has one: detects and probes the engine's
/// runtimes, chooses one, and returns the container with that runtime and the
/// `io.agentc.isolation` and `io.agentc.runtime` labels; a container without a floor is
/// returned unchanged. Nothing of the launch is created before (the probe containers are
/// removed as they exit).
pub fn meet_floor(
    container: &ContainerSpec,
    profile: &str,
    port: &mut dyn port::RuntimePort,
) -> Result<ContainerSpec, Failure> {
    let Some(isolation) = container.isolation else {
        return Ok(container.clone());
    };
    let chosen = choose(container, isolation, profile, port)?
        .map_err(|shortfall| refusal(&shortfall, profile))?;
    let mut placed = container.clone();
    placed.runtime = Some(chosen.name.clone());
    placed.labels.insert(
        LABEL_ISOLATION.to_string(),
        chosen.tier.as_str().to_string(),
    );
    placed
        .labels
        .insert(LABEL_RUNTIME.to_string(), chosen.name.clone());
    eprintln!(
        "agentc: isolation: {} under runtime {} (security.isolation.min = {}, prefer {})",
        chosen.tier,
        chosen.name,
        isolation.min,
        isolation.prefer.as_str()
    );
    if let Some(reason) = &chosen.above_floor {
        eprintln!(
            "agentc: isolation: {} is above the floor {}: {reason}",
            chosen.tier, isolation.min
        );
    }
    Ok(placed)
}

/// What `agentc doctor` says of a container's isolation floor: the runtime a launch would
/// take and its tier, or what the engine has and how to get what is missing (the same
/// detection and probes as a launch). `None` without a floor.
pub fn doctor_fact(
    container: &ContainerSpec,
    profile: &str,
    port: &mut dyn port::RuntimePort,
) -> Option<Result<String, (String, String)>> {
    let isolation = container.isolation?;
    Some(match choose(container, isolation, profile, port) {
        Ok(Ok(chosen)) => Ok(format!(
            "{} under runtime {} (min {}, prefer {}){}",
            chosen.tier,
            chosen.name,
            isolation.min,
            isolation.prefer.as_str(),
            chosen
                .above_floor
                .map(|reason| format!("; above the floor: {reason}"))
                .unwrap_or_default()
        )),
        Ok(Err(shortfall)) => Err((
            format!(
                "no runtime meets min {} ({}); found: {}",
                shortfall.min.as_str(),
                shortfall.min.words(),
                found(&shortfall)
            ),
            shortfall.hint.clone(),
        )),
        Err(failure) => Err((
            format!(
                "the engine's runtimes cannot be read: {}",
                failure.message.lines().next().unwrap_or_default()
            ),
            "`agentc doctor` without a profile checks the engine".to_string(),
        )),
    })
}

/// Detects and probes the engine's runtimes through `port` (the launch's own backend) and
/// chooses one for the floor: the outer error when the engine cannot be asked, the inner one
/// when nothing meets the floor.
fn choose(
    container: &ContainerSpec,
    isolation: agentc_policy::Isolation,
    profile: &str,
    port: &mut dyn port::RuntimePort,
) -> Result<Result<agentc_policy::ChosenRuntime, IsolationShortfall>, Failure> {
    let location = cache_location();
    let probe = Probe {
        image: &container.image,
        profile,
        cache: location.as_deref(),
    };
    choose_on(port, container, isolation, &probe)
}

/// [`choose`] through `port`.
fn choose_on(
    port: &mut dyn port::RuntimePort,
    container: &ContainerSpec,
    isolation: agentc_policy::Isolation,
    probe: &Probe<'_>,
) -> Result<Result<agentc_policy::ChosenRuntime, IsolationShortfall>, Failure> {
    let found = port.runtimes()?;
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
    let detected = detect(port, &found, &names, probe);
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

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) #1 SMP\n";

    #[test]
    fn a_probe_proves_the_tier_from_the_kernel_it_saw() {
        assert_eq!(classify_probe(HOST, HOST), IsolationTier::Container);
        let gvisor = "Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016\n\
                      [   0.000000] Starting gVisor...\n";
        assert_eq!(classify_probe(HOST, gvisor), IsolationTier::Gvisor);
        let vm = "Linux version 6.1.62 (kata@build) #1 SMP\n";
        assert_eq!(classify_probe(HOST, vm), IsolationTier::Microvm);
    }

    /// An engine that answers from a table and counts its probe containers.
    struct FakePort {
        found: EngineRuntimes,
        probes: Vec<String>,
    }

    impl port::RuntimePort for FakePort {
        fn is_local(&self) -> bool {
            true
        }

        fn runtimes(&mut self) -> Result<EngineRuntimes, Failure> {
            Ok(self.found.clone())
        }

        fn probe(&mut self, runtime: &str, _image: &str, _profile: &str) -> Result<String, String> {
            self.probes.push(runtime.to_string());
            match runtime {
                "runsc" => Ok("Linux version 4.4.0\n[ 0.0] Starting gVisor...\n".into()),
                "broken" => Err("fork/exec /nowhere: no such file or directory".into()),
                _ => Ok(std::fs::read_to_string("/proc/version").unwrap_or_default()),
            }
        }
    }

    fn engine_with(runtimes: &[(&str, &str)]) -> FakePort {
        FakePort {
            found: EngineRuntimes {
                engine: "docker 20.10.24 FAKE".into(),
                default: Some("runc".into()),
                runtimes: runtimes
                    .iter()
                    .map(|(name, version)| {
                        (
                            name.to_string(),
                            agentc_backend_common::RuntimeFacts {
                                path: format!("/nowhere/{name}"),
                                version: version.to_string(),
                            },
                        )
                    })
                    .collect(),
            },
            probes: Vec::new(),
        }
    }

    fn floor(min: IsolationTier) -> ContainerSpec {
        let mut container = ContainerSpec::empty("img:1");
        container.isolation = Some(agentc_policy::Isolation {
            min,
            prefer: agentc_policy::IsolationPrefer::Min,
        });
        container
    }

    fn chosen(
        port: &mut FakePort,
        min: IsolationTier,
        cache: Option<&std::path::Path>,
    ) -> Result<agentc_policy::ChosenRuntime, IsolationShortfall> {
        let container = floor(min);
        let probe = Probe {
            image: "img:1",
            profile: "p",
            cache,
        };
        choose_on(port, &container, container.isolation.unwrap(), &probe).unwrap()
    }

    #[test]
    fn a_repeated_choice_takes_the_cached_proofs_until_a_runtime_changes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("isolation-probes.json");
        let mut port = engine_with(&[("runc", "1.1.5"), ("runsc", "20221219")]);
        let first = chosen(&mut port, IsolationTier::Gvisor, Some(&cache)).unwrap();
        assert_eq!(first.name, "runsc");
        assert_eq!(port.probes, ["runc", "runsc"]);
        port.probes.clear();
        let again = chosen(&mut port, IsolationTier::Gvisor, Some(&cache)).unwrap();
        assert_eq!(again, first);
        assert!(port.probes.is_empty(), "probed again: {:?}", port.probes);
        // A new runsc version (or a new engine) is probed again; runc is not.
        port.found.runtimes.get_mut("runsc").unwrap().version = "20240101".into();
        chosen(&mut port, IsolationTier::Gvisor, Some(&cache)).unwrap();
        assert_eq!(port.probes, ["runsc"]);
        port.probes.clear();
        port.found.engine = "docker 24.0.7 FAKE".into();
        chosen(&mut port, IsolationTier::Gvisor, Some(&cache)).unwrap();
        assert_eq!(port.probes, ["runc", "runsc"]);
        // Without a cache, every launch probes.
        port.probes.clear();
        chosen(&mut port, IsolationTier::Gvisor, None).unwrap();
        assert_eq!(port.probes, ["runc", "runsc"]);
    }

    #[test]
    fn a_cached_proof_never_offers_a_runtime_the_engine_no_longer_has() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("isolation-probes.json");
        let mut port = engine_with(&[("runc", "1.1.5"), ("runsc", "20221219")]);
        chosen(&mut port, IsolationTier::Gvisor, Some(&cache)).unwrap();
        port.found.runtimes.remove("runsc");
        let refused = chosen(&mut port, IsolationTier::Gvisor, Some(&cache)).unwrap_err();
        assert_eq!(refused.found, ["runc: container"]);
    }

    #[test]
    fn a_failed_probe_is_not_remembered_and_a_failed_launch_forgets() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("isolation-probes.json");
        let mut port = engine_with(&[("broken", "1"), ("runc", "1.1.5")]);
        chosen(&mut port, IsolationTier::Container, Some(&cache)).unwrap();
        port.probes.clear();
        chosen(&mut port, IsolationTier::Container, Some(&cache)).unwrap();
        assert_eq!(port.probes, ["broken"], "a failure is probed again");
        port.probes.clear();
        cache::forget(&cache, "runc");
        chosen(&mut port, IsolationTier::Container, Some(&cache)).unwrap();
        assert_eq!(port.probes, ["broken", "runc"]);
    }

    #[test]
    fn a_corrupt_cache_costs_only_the_probes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("isolation-probes.json");
        std::fs::write(&cache, b"\x00\xffnot json").unwrap();
        let mut port = engine_with(&[("runc", "1.1.5")]);
        let chosen_once = chosen(&mut port, IsolationTier::Container, Some(&cache)).unwrap();
        assert_eq!(chosen_once.name, "runc");
        assert_eq!(port.probes, ["runc"]);
        assert_eq!(cache::load(&cache).len(), 1, "rewritten as agentc's");
    }
}
