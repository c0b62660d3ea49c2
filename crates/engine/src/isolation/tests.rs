//! The floor's choice on the engine in memory: probes counted as the engine's calls, proofs
//! remembered until the engine or a runtime changes, failures never remembered.

use super::*;
use crate::memory::{block_on, MemoryEngine};
use crate::RuntimeFacts;
use agentc_policy::Hinted;

const HOST: &str = "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) #1 SMP\n";
const GVISOR: &str = "Linux version 4.4.0\n[ 0.0] Starting gVisor...\n";

#[test]
fn a_probe_proves_the_tier_from_the_kernel_it_saw() {
    assert_eq!(classify_probe(HOST, HOST), IsolationTier::Container);
    let gvisor = "Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016\n\
                  [   0.000000] Starting gVisor...\n";
    assert_eq!(classify_probe(HOST, gvisor), IsolationTier::Gvisor);
    let vm = "Linux version 6.1.62 (kata@build) #1 SMP\n";
    assert_eq!(classify_probe(HOST, vm), IsolationTier::Microvm);
}

fn runtimes(engine: &str, runtimes: &[(&str, &str)]) -> EngineRuntimes {
    EngineRuntimes {
        engine: engine.into(),
        default: Some("runc".into()),
        runtimes: runtimes
            .iter()
            .map(|(name, version)| {
                (
                    name.to_string(),
                    RuntimeFacts {
                        path: format!("/nowhere/{name}"),
                        version: version.to_string(),
                    },
                )
            })
            .collect(),
    }
}

/// An engine with `runtimes` whose runc is the host's kernel, runsc gVisor's, and `broken`
/// cannot start.
fn engine_with(found: &[(&str, &str)]) -> MemoryEngine {
    let engine = MemoryEngine::default()
        .with_image("img:1")
        .with_probe("runc", Ok(HOST))
        .with_probe("runsc", Ok(GVISOR))
        .with_probe(
            "broken",
            Err("fork/exec /nowhere: no such file or directory"),
        );
    engine.set_runtimes(runtimes("docker 20.10.24 FAKE", found));
    engine
}

fn floor(min: IsolationTier) -> ContainerSpec {
    let mut container = ContainerSpec::empty("img:1");
    container.isolation = Some(agentc_policy::Isolation {
        min,
        prefer: agentc_policy::IsolationPrefer::Min,
    });
    container
}

fn options(cache: Option<&std::path::Path>) -> FloorOptions {
    FloorOptions {
        cache: cache.map(std::path::Path::to_path_buf),
        proxy: Some(ProxyExecutable::running()),
        host_kernel: HOST.to_string(),
        local: false,
        search: None,
    }
}

/// How many probe containers were started since the last call.
fn probes(port: &MemoryEngine, since: &mut usize) -> usize {
    let calls = port.calls();
    let count = calls[*since..]
        .iter()
        .filter(|call| call.operation == "run_detached")
        .count();
    *since = calls.len();
    count
}

fn chosen(
    port: &MemoryEngine,
    min: IsolationTier,
    cache: Option<&std::path::Path>,
) -> Result<ChosenRuntime, IsolationShortfall> {
    let container = floor(min);
    block_on(choose(
        port,
        &container,
        container.isolation.unwrap(),
        "p",
        &options(cache),
    ))
    .unwrap()
}

#[test]
fn a_repeated_choice_takes_the_cached_proofs_until_a_runtime_changes() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("isolation-probes.json");
    let port = engine_with(&[("runc", "1.1.5"), ("runsc", "20221219")]);
    let mut since = 0;
    let first = chosen(&port, IsolationTier::Gvisor, Some(&cache)).unwrap();
    assert_eq!(first.name, "runsc");
    assert_eq!(probes(&port, &mut since), 2);
    let again = chosen(&port, IsolationTier::Gvisor, Some(&cache)).unwrap();
    assert_eq!(again, first);
    assert_eq!(probes(&port, &mut since), 0, "probed again");
    // A new runsc version (or a new engine) is probed again; runc is not.
    port.set_runtimes(runtimes(
        "docker 20.10.24 FAKE",
        &[("runc", "1.1.5"), ("runsc", "20240101")],
    ));
    chosen(&port, IsolationTier::Gvisor, Some(&cache)).unwrap();
    assert_eq!(probes(&port, &mut since), 1);
    port.set_runtimes(runtimes(
        "docker 24.0.7 FAKE",
        &[("runc", "1.1.5"), ("runsc", "20240101")],
    ));
    chosen(&port, IsolationTier::Gvisor, Some(&cache)).unwrap();
    assert_eq!(probes(&port, &mut since), 2);
    // Without a cache, every choice probes; the probe containers are gone each time.
    chosen(&port, IsolationTier::Gvisor, None).unwrap();
    assert_eq!(probes(&port, &mut since), 2);
    assert!(port.world().containers.is_empty());
}

#[test]
fn a_cached_proof_never_offers_a_runtime_the_engine_no_longer_has() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("isolation-probes.json");
    let port = engine_with(&[("runc", "1.1.5"), ("runsc", "20221219")]);
    chosen(&port, IsolationTier::Gvisor, Some(&cache)).unwrap();
    port.set_runtimes(runtimes("docker 20.10.24 FAKE", &[("runc", "1.1.5")]));
    let refused = chosen(&port, IsolationTier::Gvisor, Some(&cache)).unwrap_err();
    assert_eq!(refused.found, ["runc: container"]);
}

#[test]
fn a_failed_probe_is_not_remembered_and_a_failed_launch_forgets() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("isolation-probes.json");
    let port = engine_with(&[("broken", "1"), ("runc", "1.1.5")]);
    let mut since = 0;
    chosen(&port, IsolationTier::Container, Some(&cache)).unwrap();
    probes(&port, &mut since);
    chosen(&port, IsolationTier::Container, Some(&cache)).unwrap();
    assert_eq!(probes(&port, &mut since), 1, "a failure is probed again");
    cache::forget(&cache, "runc");
    chosen(&port, IsolationTier::Container, Some(&cache)).unwrap();
    assert_eq!(probes(&port, &mut since), 2);
}

#[test]
fn a_corrupt_cache_costs_only_the_probes() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("isolation-probes.json");
    std::fs::write(&cache, b"\x00\xffnot json").unwrap();
    let port = engine_with(&[("runc", "1.1.5")]);
    let chosen_once = chosen(&port, IsolationTier::Container, Some(&cache)).unwrap();
    assert_eq!(chosen_once.name, "runc");
    assert_eq!(cache::load(&cache).len(), 1, "rewritten as agentc's");
}

#[test]
fn a_floor_met_places_the_container_and_one_not_met_creates_nothing() {
    let port = engine_with(&[("runc", "1.1.5"), ("runsc", "20221219")]);
    let met = block_on(meet_floor(
        &port,
        &floor(IsolationTier::Gvisor),
        "p",
        &options(None),
    ))
    .unwrap();
    assert_eq!(met.container.runtime.as_deref(), Some("runsc"));
    assert_eq!(met.container.labels[LABEL_ISOLATION], "gvisor");
    assert_eq!(met.container.labels[LABEL_RUNTIME], "runsc");
    let port = engine_with(&[("runc", "1.1.5")]);
    let refused = block_on(meet_floor(
        &port,
        &floor(IsolationTier::Gvisor),
        "p",
        &options(None),
    ))
    .unwrap_err();
    assert!(
        refused
            .with_hint()
            .to_string()
            .contains("found: runc: container"),
        "{refused}"
    );
    assert!(port.world().containers.is_empty());
    // No floor: the engine is not asked.
    let plain = ContainerSpec::empty("img:1");
    let met = block_on(meet_floor(&port, &plain, "p", &options(None))).unwrap();
    assert!(met.chosen.is_none() && met.container == plain);
}

#[test]
fn a_container_resolved_with_its_floor_met_is_proven_again_and_left_as_it_was() {
    let port = engine_with(&[("runc", "1.1.5"), ("runsc", "20221219")]);
    let gvisor = |runtime: &str| ChosenRuntime {
        name: runtime.into(),
        tier: IsolationTier::Gvisor,
        above_floor: None,
    };
    let resolved =
        agentc_policy::isolation::placed(&floor(IsolationTier::Gvisor), &gvisor("runsc"));
    let met = block_on(meet_floor(&port, &resolved, "p", &options(None))).unwrap();
    assert_eq!(met.container, resolved);
    assert_eq!(
        met.chosen.map(|chosen| chosen.name).as_deref(),
        Some("runsc")
    );
    // A placement the engine does not prove (runc said to be gVisor) is refused, not trusted.
    let claimed = agentc_policy::isolation::placed(&floor(IsolationTier::Gvisor), &gvisor("runc"));
    let refused = block_on(meet_floor(&port, &claimed, "p", &options(None))).unwrap_err();
    assert!(matches!(refused, FloorError::Shortfall(_)), "{refused}");
    assert!(port.world().containers.is_empty());
}
