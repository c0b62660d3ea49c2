//! Where a caller's engine is: read from the environment it passes, never the process's.

use std::collections::BTreeMap;

use agentc_engine::session::{Sandboxes, SessionPort};

use super::*;

/// An environment naming only `DOCKER_HOST`.
fn docker_host(host: &str) -> BTreeMap<String, String> {
    BTreeMap::from([("DOCKER_HOST".to_string(), host.to_string())])
}

#[test]
fn the_engine_is_where_the_environment_passed_puts_it() {
    let remote = docker_host("tcp://engine.invalid:2376");
    assert_eq!(
        engine_host(Engine::Docker, &remote).as_deref(),
        Some("tcp://engine.invalid:2376")
    );
    assert!(engine_is_remote(Engine::Docker, &remote));
    // Without DOCKER_HOST, a docker context or a home to find one in: the local socket,
    // whatever this process's own environment says.
    assert_eq!(engine_host(Engine::Docker, &BTreeMap::new()), None);
    assert!(!engine_is_remote(Engine::Docker, &BTreeMap::new()));
    let local = docker_host("unix:///run/user/1000/docker.sock");
    assert!(!engine_is_remote(Engine::Docker, &local));
}

/// A step that must not run: the engine it was to run against cannot be reached.
struct Unreached;

impl OnClient for Unreached {
    type Output = ();
    async fn run<P: SessionPort>(self, _: &Sandboxes<P>) -> Result<(), Failure> {
        panic!("the step ran, though its engine cannot be reached")
    }
}

#[test]
fn a_driver_reaches_the_engine_its_environment_names() {
    let dir = tempfile::tempdir().expect("a directory");
    let socket = dir.path().join("no-engine.sock");
    let host = format!("unix://{}", socket.display());
    let driver = Driver {
        env: docker_host(&host),
        ..Driver::new(
            Engine::Docker,
            BackendChoice::Api,
            ProxyExecutable::default(),
        )
    };
    let failure = on_client(&driver, Unreached).expect_err("nothing answers there");
    assert_eq!(failure.code, EXIT_DOCKER, "{}", failure.message);
    assert!(
        failure.message.contains(&socket.display().to_string()),
        "the failure does not name the driver's engine: {}",
        failure.message
    );
}

#[test]
fn reaping_tells_the_caller_what_it_removed() {
    use std::sync::Mutex;

    use agentc_engine::companion::state::CompanionKind;
    use agentc_policy::Start;

    use crate::memory_fixtures::{block_on, engine, launch, launcher};

    // A detached launch behind the egress proxy, then killed: its workload is gone, its
    // companion (proxy, isolated network, volumes) is left.
    let port = engine();
    let spec = launch("orphaned", false, Start::Detached);
    let container = crate::container_of(&spec).expect("a container").clone();
    let name = container.name.clone().expect("a named launch");
    block_on(launcher().launch_on(&port, &container, false, &mut |_| {})).expect("it starts");
    block_on(port.remove_container(&name)).expect("the workload goes");
    let left = port.world();

    let told = Arc::new(Mutex::new(Vec::new()));
    let reaped = Reaped::new({
        let told = told.clone();
        move |orphans: &Orphans| told.lock().expect("the list").push(orphans.clone())
    });
    // The workload launched next is the orphan's: its leftovers go at once.
    block_on(reap(&port, &BTreeMap::new(), Some(&name), &reaped));
    let told = told.lock().expect("the list").clone();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].workload, name);
    let kinds: Vec<CompanionKind> = told[0].objects.iter().map(|(kind, _)| *kind).collect();
    assert!(
        kinds.contains(&CompanionKind::Proxy) && kinds.contains(&CompanionKind::Network),
        "{told:?}"
    );
    // What was told is what went, and nothing else.
    let mut gone = left.added_since(&port.world());
    let mut said: Vec<String> = told[0]
        .objects
        .iter()
        .map(|(kind, name)| match kind {
            CompanionKind::Proxy => format!("container {name}"),
            CompanionKind::Network => format!("network {name}"),
            CompanionKind::Volume => format!("volume {name}"),
        })
        .collect();
    gone.sort();
    said.sort();
    assert_eq!(gone, said);
    assert!(told[0].removed_line().contains(&name));
}

#[test]
fn auto_is_decided_for_each_engine_address_a_caller_names() {
    let dir = tempfile::tempdir().expect("a directory");
    // One address where nothing listens, one where something accepts a connection (all `auto`
    // asks of an engine before it chooses its API).
    let dead = format!("unix://{}", dir.path().join("no-engine.sock").display());
    let answering = dir.path().join("engine.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&answering).expect("a socket");
    let answering = format!("unix://{}", answering.display());
    let auto = |host: &str| chosen(BackendChoice::Auto, Engine::Docker, &docker_host(host));
    assert_eq!(auto(&dead), Backend::Cli);
    // A second caller in the same process, whose engine answers, gets its own choice, not
    // the first caller's.
    assert_eq!(auto(&answering), Backend::Api);
    assert_eq!(auto(&dead), Backend::Cli);
}

#[test]
fn the_command_lines_engine_queries_go_where_the_callers_environment_says() {
    if std::process::Command::new("docker")
        .arg("--version")
        .output()
        .is_err()
    {
        let reason = "no docker command to run";
        assert!(
            std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() != Ok("1"),
            "docker is required (AGENTC_REQUIRE_DOCKER=1) but there is {reason}"
        );
        eprintln!("skipped: {reason}");
        return;
    }
    let dir = tempfile::tempdir().expect("a directory");
    let socket = dir.path().join("no-engine.sock");
    let env = docker_host(&format!("unix://{}", socket.display()));
    let port = agentc_backend_cli::exec::port::CliPort::new(Engine::Docker).in_env(&env);
    // The runtimes an isolation floor chooses from, and the runtime check before a launch.
    let runtime = runtime().expect("a runtime");
    let error = runtime
        .block_on(port.runtimes())
        .expect_err("no engine answers there");
    let text = error.with_hint().to_string();
    assert!(text.contains(&socket.display().to_string()), "{text}");
    let asked = agentc_backend_cli::exec::engine::runtimes(Engine::Docker, &env, "runsc");
    let text = asked
        .expect_err("no engine answers there")
        .with_hint()
        .to_string();
    assert!(text.contains(&socket.display().to_string()), "{text}");
}

#[test]
fn each_engine_a_caller_drives_is_reaped() {
    use std::sync::Mutex;

    use agentc_policy::Start;

    use crate::memory_fixtures::{block_on, engine, launch, launcher};

    // Two engines (two addresses), each with a killed launch's companion left, its proxy
    // ended (so it is an orphan at once, without the grace a running proxy gets).
    let orphaned = |name: &str| {
        let port = engine();
        let spec = launch(name, false, Start::Detached);
        let container = crate::container_of(&spec).expect("a container").clone();
        block_on(launcher().launch_on(&port, &container, false, &mut |_| {})).expect("it starts");
        let name = container.name.clone().expect("a named launch");
        block_on(port.remove_container(&name)).expect("the workload goes");
        let proxy = format!("{name}-egress-proxy");
        block_on(port.stop(&proxy, Some(0))).expect("the proxy ends");
        port
    };
    let told = Arc::new(Mutex::new(Vec::new()));
    let reaped = Reaped::new({
        let told = told.clone();
        move |orphans: &Orphans| {
            told.lock()
                .expect("the list")
                .push(orphans.workload.clone())
        }
    });
    let first = docker_host("unix:///run/agentc-test/first-engine.sock");
    let second = docker_host("unix:///run/agentc-test/second-engine.sock");
    block_on(reap(&orphaned("on-first"), &first, None, &reaped));
    block_on(reap(&orphaned("on-second"), &second, None, &reaped));
    // The first engine again: reaped already, once a process.
    block_on(reap(&orphaned("on-first-again"), &first, None, &reaped));
    let told = told.lock().expect("the list").clone();
    assert_eq!(
        told,
        ["agentc-sandbox-on-first", "agentc-sandbox-on-second"]
    );
}
