//! The orchestration on the memory engine, at every failure point: each flow runs once to
//! count its engine calls (or the times it asks for a signal), then once more for each call
//! failing (or a SIGTERM arriving at each ask), and what is left is read back. A flow that
//! fails leaves nothing of itself; one that succeeds despite the fault (a removal it does best
//! effort) is whole.

use std::collections::BTreeMap;

use agentc_policy::Hinted;
use agentc_policy::{
    ContainerSpec, Instance, LaunchKind, LaunchSpec, Owner, PathProbe, ResolveInputs, Start,
};

use super::{block_on, MemoryEngine, RunState, World};
use crate::companion;
use crate::launch::{self, LaunchOptions};
use crate::port::{EngineError, EngineErrorKind};
use crate::session::{session_spec, SandboxClient, Sandboxes, SessionError};
use crate::signals::{Interrupts, NoInterrupts};
use crate::{ExecError, Interrupt};

const IMAGE: &str = "busybox:memory";
const PROXY_IMAGE: &str = "agentc-egress:memory";
const TOKEN: &str = "GATEWAY_TOKEN";

/// A custom sandbox whose allowlist the egress proxy enforces, holding one key: a launch with
/// every part of a companion (the network, the CA and audit volumes, the proxy).
const PROFILE: &str = r#"
name = "memo"
agent = "custom"

[image]
ref = "busybox:memory"

[workspace]
mount = false

[egress]
hosts = ["api.example.com"]

[credentials.gateway]
from_env = "GATEWAY_TOKEN"
hosts = ["api.example.com"]
header = "Authorization"
scheme = "bearer"
"#;

/// Every path a directory: the profile binds nothing of the host.
struct Directories;

impl PathProbe for Directories {
    fn kind(&self, _path: &str) -> agentc_policy::PathKind {
        agentc_policy::PathKind::Directory
    }
}

fn launch_spec(start: Start, name: &str) -> LaunchSpec {
    let loaded = agentc_policy::load("memo.toml", PROFILE).expect("the profile loads");
    let inputs = ResolveInputs {
        owner: Some(Owner {
            name: "dev".to_string(),
            uid: 1000,
            gid: 1000,
        }),
        instance: Instance {
            start,
            name: Some(name.to_string()),
            ..Instance::default()
        },
        ..ResolveInputs::new(LaunchKind::Run, "/srv/task", "/srv/profiles", "/home/dev")
    };
    let mut spec = agentc_policy::resolve(&loaded, &inputs, &Directories).expect("it resolves");
    if let agentc_policy::Action::Container(container) = &mut spec.action {
        with_proxy_image(container);
    }
    spec
}

/// The profile `text` (file `NAME.toml`) loaded and resolved as a session's launch named
/// `NAME-1`.
fn session_launch(name: &str, text: &str) -> (agentc_policy::LoadedProfile, LaunchSpec) {
    let loaded = agentc_policy::load(&format!("{name}.toml"), text).expect("the profile loads");
    let inputs = ResolveInputs {
        instance: Instance {
            start: Start::Session,
            default_name: Some(format!("{name}-1")),
            ..Instance::default()
        },
        ..ResolveInputs::new(LaunchKind::Run, "/srv/task", "/srv/profiles", "/home/dev")
    };
    let spec = agentc_policy::resolve(&loaded, &inputs, &Directories).expect("it resolves");
    (loaded, spec)
}

/// The proxy image named, so that no agentc executable is imaged.
fn with_proxy_image(container: &mut ContainerSpec) {
    if let Some(egress) = &mut container.egress {
        egress.proxy.image = PROXY_IMAGE.to_string();
    }
}

/// The container of a launch in the background, as a session starts it.
fn container(name: &str) -> ContainerSpec {
    session_spec(&launch_spec(Start::Session, name)).expect("a container")
}

/// The same container, attached (`agentc run` in the foreground).
fn attached(name: &str) -> ContainerSpec {
    ContainerSpec {
        detach: false,
        ..container(name)
    }
}

fn env() -> BTreeMap<String, String> {
    BTreeMap::from([(TOKEN.to_string(), "gw-secret-value".to_string())])
}

fn engine() -> MemoryEngine {
    MemoryEngine::default()
        .with_image(IMAGE)
        .with_image(PROXY_IMAGE)
}

fn injected() -> EngineError {
    EngineError::new(EngineErrorKind::Failed, "injected failure")
}

/// What `world` holds of a launch that started: the workload and its proxy running, the proxy
/// on the isolated network, the network and the proxy's two volumes.
fn whole(world: &World, before: &World, workload: &str) -> Result<(), String> {
    let added = world.added_since(before);
    let running = |name: &str| {
        world
            .containers
            .get(name)
            .is_some_and(|found| found.state == RunState::Running)
    };
    let proxy = world
        .containers
        .values()
        .find(|found| {
            found
                .labels
                .get(agentc_policy::LABEL_KIND)
                .map(String::as_str)
                == Some(agentc_policy::KIND_EGRESS_PROXY)
        })
        .ok_or_else(|| format!("no proxy among {added:?}"))?;
    if !running(workload) || !running(&proxy.name) {
        return Err(format!("not both running: {added:?}"));
    }
    let networks: Vec<_> = added
        .iter()
        .filter(|item| item.starts_with("network "))
        .collect();
    let volumes = added
        .iter()
        .filter(|item| item.starts_with("volume "))
        .count();
    if networks.len() != 1 || volumes != 2 || added.len() != 5 {
        return Err(format!(
            "expected 2 containers, 1 network, 2 volumes: {added:?}"
        ));
    }
    let network = networks[0].trim_start_matches("network ");
    if !proxy.networks.iter().any(|joined| joined == network) {
        return Err(format!(
            "the proxy is not on {network}: {:?}",
            proxy.networks
        ));
    }
    Ok(())
}

fn detached_launch(
    port: &MemoryEngine,
    spec: &ContainerSpec,
) -> Result<launch::Started, ExecError> {
    block_on(launch::launch_detached(
        port,
        spec,
        &env(),
        &LaunchOptions::default(),
        &mut |_| {},
        &mut NoInterrupts,
    ))
}

#[test]
fn a_detached_launch_is_whole_and_its_steps_are_in_order() {
    let port = engine();
    let before = port.world();
    let started = detached_launch(&port, &container("memo-1")).expect("it starts");
    whole(&port.world(), &before, "memo-1").unwrap();
    assert!(started.companion.is_some());
    let operations: Vec<&str> = port
        .calls()
        .iter()
        .map(|call| call.operation)
        .filter(|operation| !matches!(*operation, "image_exists" | "volume_exists"))
        .collect();
    // Fail closed: the workload is created only after its proxy answered its health check.
    assert_eq!(
        operations,
        [
            "check_launch",
            "create_isolated_network",
            "create_volume",
            "create_volume",
            "create_proxy",
            "connect_proxy",
            "start",
            "exec_status",
            "start_launch",
        ]
    );
}

#[test]
fn a_detached_launch_failing_at_any_engine_call_leaves_nothing() {
    let spec = container("memo-1");
    let calls = {
        let port = engine();
        detached_launch(&port, &spec).expect("it starts");
        port.calls()
    };
    let mut failed = 0;
    for (index, call) in calls.iter().enumerate() {
        let port = engine();
        let before = port.world();
        port.fail_call(index, injected());
        match detached_launch(&port, &spec) {
            Ok(_) => whole(&port.world(), &before, "memo-1").unwrap_or_else(|problem| {
                panic!("{call:?} failed, and the launch went on: {problem}")
            }),
            Err(error) => {
                failed += 1;
                assert_eq!(
                    port.world().added_since(&before),
                    Vec::<String>::new(),
                    "{call:?} failed ({error}), and this was left"
                );
                assert!(
                    error.with_hint().to_string().contains("injected failure"),
                    "{call:?}: {error}"
                );
            }
        }
    }
    // Every step but the lookups that have a fallback stops the launch.
    assert!(
        failed >= calls.len() - 2,
        "{failed} of {} calls stopped it",
        calls.len()
    );
}

/// A SIGTERM delivered at the `at`-th time the launch asks (and every time after).
struct SigtermAt {
    at: usize,
    asked: usize,
}

impl Interrupts for SigtermAt {
    fn pending(&mut self) -> Option<Interrupt> {
        self.asked += 1;
        (self.asked > self.at).then_some(Interrupt::Sigterm)
    }

    async fn recv(&mut self) -> Interrupt {
        if self.asked > self.at {
            return Interrupt::Sigterm;
        }
        std::future::pending().await
    }

    fn another(&self) -> Result<Self, ExecError> {
        Ok(SigtermAt {
            at: self.at.saturating_sub(self.asked),
            asked: 0,
        })
    }
}

#[test]
fn a_sigterm_between_any_two_steps_ends_the_launch_and_leaves_nothing() {
    for detach in [true, false] {
        let spec = if detach {
            container("memo-1")
        } else {
            attached("memo-1")
        };
        let mut asks = 0;
        for at in 0.. {
            let port = engine();
            let before = port.world();
            let mut signals = SigtermAt { at, asked: 0 };
            let result = block_on(launch::launch(
                &port,
                &spec,
                &env(),
                &LaunchOptions::default(),
                &mut |_| {},
                &mut signals,
            ));
            match result {
                Err(ExecError::Interrupted { signal, .. }) => {
                    assert_eq!(signal, Interrupt::Sigterm);
                    assert_eq!(
                        port.world().added_since(&before),
                        Vec::<String>::new(),
                        "a SIGTERM at ask {at} (detach {detach}) left this"
                    );
                    asks += 1;
                }
                Ok(launch::Launched::Started(_)) => {
                    whole(&port.world(), &before, "memo-1").unwrap();
                    break;
                }
                Ok(launch::Launched::Exited(exited)) => {
                    assert_eq!(exited.exit_code, 0);
                    assert_eq!(port.world().added_since(&before), Vec::<String>::new());
                    break;
                }
                Err(other) => panic!("a SIGTERM at ask {at} (detach {detach}): {other}"),
            }
        }
        assert!(
            asks >= 3,
            "the launch asked for signals {asks} times (detach {detach})"
        );
    }
}

#[test]
fn an_attached_launch_removes_its_companion_and_what_a_failed_removal_leaves_is_reaped() {
    let spec = attached("memo-1");
    let run = |port: &MemoryEngine| {
        block_on(launch::launch(
            port,
            &spec,
            &env(),
            &LaunchOptions::default(),
            &mut |_| {},
            &mut NoInterrupts,
        ))
    };
    let calls = {
        let port = engine().with_attached_exit(3);
        let before = port.world();
        match run(&port) {
            Ok(launch::Launched::Exited(exited)) => assert_eq!(exited.exit_code, 3),
            other => panic!("{other:?}"),
        }
        assert_eq!(port.world().added_since(&before), Vec::<String>::new());
        port.calls()
    };
    for (index, call) in calls.iter().enumerate() {
        let port = engine();
        let before = port.world();
        port.fail_call(index, injected());
        let result = run(&port);
        // A removal after the workload ended is best effort: what it leaves, the next
        // command's reaping removes (its workload is gone).
        block_on(companion::reap(&port, None, None)).expect("the reaping runs");
        assert_eq!(
            port.world().added_since(&before),
            Vec::<String>::new(),
            "{call:?} failed ({result:?}), and this was left after the reaping"
        );
    }
}

#[test]
fn a_taken_subnet_moves_the_companion_and_a_dying_proxy_stops_the_launch() {
    // Other networks hold the block of the companion's name and of its first retry.
    let network = "memo-1-egress";
    let block = |key: &str| agentc_policy::spec::isolated_subnet(key).1;
    let port = engine().with_subnets_held([block("memo-1").as_str(), &block("memo-1#1")]);
    let before = port.world();
    let started = detached_launch(&port, &container("memo-1")).expect("it starts");
    whole(&port.world(), &before, "memo-1").unwrap();
    let tried: Vec<String> = port
        .calls()
        .into_iter()
        .filter(|call| call.operation == "create_isolated_network")
        .map(|call| call.target)
        .collect();
    assert_eq!(tried, [network; 3], "the names stay; only the block moves");
    assert_eq!(
        started.companion.map(|set| set.network),
        Some(network.to_string())
    );
    assert_eq!(port.subnet_of(network), Some(block("memo-1#2")));

    let port = engine().with_dying_proxy(2);
    let before = port.world();
    let error = detached_launch(&port, &container("memo-1")).expect_err("no healthy proxy");
    assert!(
        matches!(&error, ExecError::Egress { step, message, .. } if *step == companion::START_PROXY && message.contains("address in use")),
        "{error}"
    );
    assert!(port
        .calls()
        .iter()
        .all(|call| call.operation != "start_launch"));
    assert_eq!(port.world().added_since(&before), Vec::<String>::new());
}

#[test]
fn a_network_of_the_same_name_is_named_and_left_alone() {
    let spec = container("memo-1");
    let port = engine();
    // Another launch of the same name holds the network.
    detached_launch(&port, &spec).expect("the first starts");
    port.remove_behind("memo-1");
    let before = port.world();
    let error = detached_launch(&port, &spec).expect_err("the network is taken");
    let text = error.with_hint().to_string();
    let network = &spec.egress.as_ref().expect("egress").network.name;
    assert!(text.contains(network.as_str()), "{text}");
    assert_eq!(port.world(), before, "nothing was removed or added");
}

#[test]
fn a_fleet_failing_at_any_engine_call_is_removed_whole() {
    let specs: Vec<ContainerSpec> = launch::copy_names("memo", 3)
        .iter()
        .map(|name| container(name))
        .collect();
    let run = |port: &MemoryEngine| {
        block_on(launch::launch_copies(
            port,
            &specs,
            &env(),
            &LaunchOptions::default(),
            2,
            &mut |_| {},
            &mut NoInterrupts,
        ))
    };
    let calls = {
        let port = engine();
        let started = run(&port).expect("the fleet starts");
        assert_eq!(started.len(), 3);
        port.calls()
    };
    for (index, call) in calls.iter().enumerate() {
        let port = engine();
        let before = port.world();
        port.fail_call(index, injected());
        match run(&port) {
            Ok(started) => assert_eq!(started.len(), 3, "{call:?}"),
            Err(error) => {
                assert_eq!(
                    port.world().added_since(&before),
                    Vec::<String>::new(),
                    "{call:?} failed, and this was left"
                );
                let mut named: Vec<&String> = error
                    .failed
                    .iter()
                    .map(|(name, _)| name)
                    .chain(&error.not_started)
                    .chain(&error.rolled_back)
                    .collect();
                named.sort();
                assert_eq!(named, ["memo-1", "memo-2", "memo-3"], "{error}");
                assert!(error.left.is_empty(), "{error}");
            }
        }
    }
}

#[test]
fn a_pool_claim_takes_each_member_once_and_delete_removes_a_claimed_members_companion() {
    use crate::pool::{self, Wanted};
    use agentc_policy::pool::{member_name, member_spec};

    let client = Sandboxes::over(engine(), env());
    let before = client.port().world();
    let detached = launch_spec(Start::Detached, "memo");
    let fingerprints = BTreeMap::new();
    for (suffix, key) in [("a1", "key-1"), ("b2", "key-1"), ("c3", "key-old")] {
        let name = member_name("memo", suffix);
        let member = member_spec(&detached, key, &name, suffix, &fingerprints).expect("a member");
        block_on(client.create(&member)).expect("the member starts");
    }
    let wanted = Wanted {
        key: "key-1",
        credentials: &fingerprints,
    };
    let found = block_on(pool::members(&client, Some("memo"))).expect("members");
    assert_eq!(found.len(), 3);
    // Two claims that listed the pool at once, starting at one member: each gets its own.
    let first = block_on(pool::claim(&client, found.clone(), &wanted, 0)).expect("a claim");
    let second = block_on(pool::claim(&client, found.clone(), &wanted, 0)).expect("a claim");
    let third = block_on(pool::claim(&client, found, &wanted, 0)).expect("a claim");
    let (first, second) = (
        first.claimed.expect("one"),
        second.claimed.expect("another"),
    );
    assert_ne!(first.sandbox.name, second.sandbox.name);
    assert!(third.claimed.is_none());
    // The stale member (another key) was drained by the first claim, with its companion.
    let world = client.port().world();
    assert!(
        world.containers.keys().all(|name| !name.contains("c3")),
        "{:?}",
        world.containers.keys()
    );
    // Deleting a claimed member removes its companion, labelled for its member's name.
    for claimed in [first, second] {
        let report = block_on(client.delete(&claimed.sandbox));
        assert!(report.removed && report.left.is_empty(), "{report:?}");
    }
    let left = client.port().world().added_since(&before);
    assert_eq!(left, Vec::<String>::new());
}

#[test]
fn a_pool_is_two_calls_fill_and_claim_and_a_rotated_key_drains_it() {
    use crate::pool::{claim_member, fill, Pool};

    let client = Sandboxes::over(engine(), env());
    let before = client.port().world();
    let spec = launch_spec(Start::Detached, "memo");
    let pool = block_on(Pool::of(&client, &spec, &env(), b"the caller's key")).expect("a pool");
    assert_eq!(pool.credentials.len(), 1, "{pool:?}");
    let created = block_on(fill(&client, &spec, &pool, 2)).expect("filled");
    assert_eq!(created.len(), 2);
    assert!(created
        .iter()
        .all(|member| agentc_policy::pool::is_idle_name(&member.name)));
    // Full already: nothing more.
    assert!(block_on(fill(&client, &spec, &pool, 2)).unwrap().is_empty());
    let first = block_on(claim_member(&client, &pool))
        .unwrap()
        .expect("a member");
    let second = block_on(claim_member(&client, &pool))
        .unwrap()
        .expect("another");
    assert_ne!(first.sandbox.name, second.sandbox.name);
    assert!(block_on(claim_member(&client, &pool)).unwrap().is_none());
    // A rotated key: the member filled with the old one is drained, a new one made.
    let old = block_on(fill(&client, &spec, &pool, 1)).unwrap().remove(0);
    let rotated_env = BTreeMap::from([(TOKEN.to_string(), "gw-rotated".to_string())]);
    let rotated = block_on(Pool::of(&client, &spec, &rotated_env, b"the caller's key")).unwrap();
    assert_eq!(rotated.key, pool.key);
    assert_ne!(rotated.credentials, pool.credentials);
    let new = block_on(fill(&client, &spec, &rotated, 1))
        .unwrap()
        .remove(0);
    let world = client.port().world();
    assert!(
        !world.containers.contains_key(&old.name),
        "{:?}",
        world.containers.keys()
    );
    assert!(world.containers.contains_key(&new.name));
    let last = block_on(claim_member(&client, &rotated))
        .unwrap()
        .expect("the new one");
    assert!(block_on(claim_member(&client, &pool)).unwrap().is_none());
    for claimed in [first, second, last] {
        let report = block_on(client.delete(&claimed.sandbox));
        assert!(report.removed && report.left.is_empty(), "{report:?}");
    }
    assert_eq!(
        client.port().world().added_since(&before),
        Vec::<String>::new()
    );
}

#[test]
fn a_sessions_create_meets_the_isolation_floor_or_creates_nothing() {
    let text = "name = \"floor\"\nagent = \"custom\"\n\n[image]\nref = \"busybox:memory\"\n\n\
                [workspace]\nmount = false\n\n[egress]\nmode = \"deny\"\n\n\
                [security]\nisolation = { min = \"gvisor\" }\n";
    let (_, spec) = session_launch("floor", text);
    let host = std::fs::read_to_string("/proc/version").unwrap_or_default();
    let gvisor = "Linux version 4.4.0\n[ 0.0] Starting gVisor...\n";
    let runtimes = |names: &[&str]| crate::EngineRuntimes {
        engine: "memory 1".into(),
        default: Some("runc".into()),
        runtimes: names
            .iter()
            .map(|name| (name.to_string(), crate::RuntimeFacts::default()))
            .collect(),
    };
    let port = engine()
        .with_probe("runc", Ok(&host))
        .with_probe("runsc", Ok(gvisor));
    port.set_runtimes(runtimes(&["runc", "runsc"]));
    let env = BTreeMap::from([("AGENTC_ISOLATION_CACHE".to_string(), "off".to_string())]);
    let client = Sandboxes::over(port, env.clone());
    let sandbox = block_on(client.create(&spec)).expect("created under gVisor");
    let world = client.port().world();
    let created = &world.containers[&sandbox.name];
    assert_eq!(created.runtime.as_deref(), Some("runsc"));
    assert_eq!(created.labels[crate::isolation::LABEL_ISOLATION], "gvisor");
    assert_eq!(world.containers.len(), 1, "the probes are gone");
    // An engine without gVisor: refused by the floor, nothing created.
    let port = engine().with_probe("runc", Ok(&host));
    port.set_runtimes(runtimes(&["runc"]));
    let client = Sandboxes::over(port, env);
    let refused = block_on(client.create(&spec)).expect_err("no runtime at the floor");
    assert!(
        matches!(&refused, SessionError::Launch(ExecError::FloorNotMet { found, .. }) if found == "runc: container"),
        "{refused}"
    );
    assert_eq!(refused.exit_code(), 65);
    // Worded as `agentc run` and verify word it: the profile, the floor and what it means.
    let message = refused.with_hint().to_string();
    assert!(
        message.starts_with(&format!(
            "profile {:?}: no runtime of the docker engine meets security.isolation.min = \"gvisor\" (",
            spec.profile
        )),
        "{message}"
    );
    assert!(message.contains("nothing was created\n  found: runc: container\n  hint: "));
    assert!(client.port().world().containers.is_empty());
}

#[test]
fn a_create_from_a_profile_returns_its_launchs_findings() {
    // A custom profile without `[egress]`: an allowlist no firewall enforces, a high finding,
    // as `agentc run` warns.
    let text = "name = \"open\"\nagent = \"custom\"\n\n[image]\nref = \"busybox:memory\"\n\n\
                [workspace]\nmount = false\n";
    let (loaded, spec) = session_launch("open", text);
    let client = Sandboxes::over(engine(), env());
    let created = block_on(crate::session::create_with_findings(
        &client, &loaded, &spec,
    ))
    .expect("created");
    assert_eq!(created.findings, agentc_policy::findings(&loaded, &spec));
    assert!(
        created
            .findings
            .iter()
            .any(|finding| finding.code == "egress-unenforced"
                && finding.severity() == agentc_policy::Severity::High),
        "{:?}",
        created.findings
    );
    assert!(client
        .port()
        .world()
        .containers
        .contains_key(&created.sandbox.name));
}

#[test]
fn a_sessions_create_refuses_a_host_port_in_use_and_creates_nothing() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("bound").port();
    let text = format!(
        "name = \"ported\"\nagent = \"custom\"\n\n[image]\nref = \"busybox:memory\"\n\n\
         [workspace]\nmount = false\n\n[egress]\nmode = \"deny\"\n\n\
         [network]\npublish = [\"127.0.0.1:{port}:8080\"]\n"
    );
    let (_, mut spec) = session_launch("ported", &text);
    // The port is published by the egress proxy (a deny launch's relay); its image named.
    if let agentc_policy::Action::Container(container) = &mut spec.action {
        with_proxy_image(container);
    }
    let client = Sandboxes::over(engine(), env());
    let refused = block_on(client.create(&spec)).expect_err("the port is held");
    assert!(
        matches!(
            &refused,
            SessionError::Launch(error @ ExecError::HostPortsInUse { .. })
                if error.with_hint().to_string().starts_with(&format!("network.publish[0]: host port {port}/tcp on 127.0.0.1 is in use"))
                    && error.with_hint().to_string().contains("; nothing was created\n  hint: ")
        ),
        "{refused}"
    );
    assert_eq!(refused.exit_code(), 125);
    assert!(client.port().world().containers.is_empty());
    assert!(client.port().world().networks.is_empty());
    drop(listener);
}
