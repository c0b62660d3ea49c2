//! The launch of `agentc run` on the in-memory engine: what comes back for a detached, an
//! attached and a copied launch, and the words of a started sandbox.

use agentc_engine::memory::MemoryEngine;
use agentc_engine::session::session_spec;
use agentc_policy::Start;
use bollard::models::{ContainerInspectResponse, EndpointSettings, NetworkSettings, PortBinding};

use super::*;
use crate::memory_fixtures::{block_on, engine, launch, launcher};

/// The container of the profile `name`'s launch, detached or attached.
fn container(name: &str, start: Start) -> ContainerSpec {
    match launch(name, true, start).action {
        agentc_policy::Action::Container(container) => *container,
        other => panic!("not a container: {other:?}"),
    }
}

#[test]
fn a_detached_launch_comes_back_started_and_an_attached_one_with_its_exit_status() {
    let port = engine();
    let mut said = Vec::new();
    let detached = container("calm", Start::Detached);
    let outcome = block_on(launcher().launch_on(&port, &detached, false, &mut |line| {
        said.push(line.to_string())
    }))
    .expect("it starts");
    let Outcome::Started(started) = &outcome else {
        panic!("not started: {outcome:?}");
    };
    assert_eq!(started.name, detached.name.clone().unwrap_or_default());
    assert_eq!(outcome.status(), 0);
    assert!(
        started
            .to_string()
            .starts_with(&format!("started {} (", started.name)),
        "{started}"
    );

    let port = MemoryEngine::default()
        .with_image(crate::memory_fixtures::IMAGE)
        .with_attached_exit(3);
    // `agentc run` in the foreground.
    let attached = ContainerSpec {
        detach: false,
        ..container("calm", Start::AsLaunched)
    };
    let outcome =
        block_on(launcher().launch_on(&port, &attached, false, &mut |_| {})).expect("it runs");
    assert_eq!(outcome.status(), 3, "{outcome:?}");
    assert!(matches!(outcome, Outcome::Exited { status: 3, .. }));
}

#[test]
fn copies_come_back_in_order_and_a_copy_resolved_without_its_floor_is_refused() {
    let port = engine();
    let copies: Vec<ContainerSpec> = ["one", "two", "three"]
        .into_iter()
        .map(|name| session_spec(&launch(name, true, Start::Detached)).expect("a container"))
        .collect();
    let started =
        block_on(launcher().copies_on(&port, &copies, false, 2, &mut |_| {})).expect("they start");
    let names: Vec<String> = started
        .into_iter()
        .map(|copy| copy.expect("inspected").name)
        .collect();
    let wanted: Vec<String> = copies
        .iter()
        .map(|copy| copy.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(names, wanted);

    let mut unplaced = copies[0].clone();
    unplaced.isolation = Some(agentc_policy::isolation::Isolation {
        min: agentc_policy::isolation::IsolationTier::Gvisor,
        prefer: agentc_policy::isolation::IsolationPrefer::Strongest,
    });
    let refused = refuse_unplaced_copies(&[copies[1].clone(), unplaced], "p").unwrap_err();
    assert_eq!(refused.code, EXIT_INVALID);
    assert!(
        refused.message.contains("copy agentc-sandbox-one "),
        "{}",
        refused.message
    );
    assert!(refuse_unplaced_copies(&copies, "p").is_ok());
}

#[test]
fn a_started_sandbox_names_each_address_and_says_when_one_is_published_everywhere() {
    let binding = |ip: &str, port: &str| PortBinding {
        host_ip: Some(ip.into()),
        host_port: Some(port.into()),
    };
    let inspect = ContainerInspectResponse {
        id: Some("0123456789abcdef".into()),
        name: Some("/box".into()),
        network_settings: Some(NetworkSettings {
            ports: Some(std::collections::HashMap::from([
                (
                    "8080/tcp".to_string(),
                    Some(vec![binding("127.0.0.1", "18080")]),
                ),
                (
                    "8081/tcp".to_string(),
                    Some(vec![binding("0.0.0.0", "18081"), binding("::", "18081")]),
                ),
            ])),
            ..Default::default()
        }),
        ..Default::default()
    };
    let started = StartedSandbox::from_inspect(&inspect, &Network::Default);
    assert_eq!(
        started.to_string(),
        "started box (0123456789ab)\n  8080/tcp  127.0.0.1:18080\n  8081/tcp  127.0.0.1:18081  \
         (published on every address: reachable beyond this machine)\n  8081/tcp  [::1]:18081  \
         (published on every address: reachable beyond this machine)"
    );

    // On a named network: the names its peers reach it by, the daemon's short ID left out.
    let endpoint = EndpointSettings {
        aliases: Some(vec!["0123456789ab".into(), "box".into(), "web".into()]),
        ..Default::default()
    };
    let inspect = ContainerInspectResponse {
        id: Some("0123456789abcdef".into()),
        name: Some("/box".into()),
        network_settings: Some(NetworkSettings {
            networks: Some(std::collections::HashMap::from([(
                "lab".to_string(),
                endpoint,
            )])),
            ..Default::default()
        }),
        ..Default::default()
    };
    let named = Network::Named { name: "lab".into() };
    assert_eq!(
        StartedSandbox::from_inspect(&inspect, &named).to_string(),
        "started box (0123456789ab)\n  on network lab as box, web"
    );
}

#[test]
fn a_launcher_and_a_driver_show_the_names_of_their_secrets_never_the_values() {
    let env = BTreeMap::from([("API_KEY".to_string(), "sk-secret-value".to_string())]);
    let launcher = Launcher {
        env: env.clone(),
        ..launcher()
    };
    let driver = crate::backend::Driver {
        env,
        ..crate::backend::Driver::new(
            Engine::Docker,
            crate::backend::BackendChoice::Cli,
            ProxyExecutable::default(),
        )
    };
    for shown in [format!("{launcher:?}"), format!("{driver:?}")] {
        assert!(shown.contains("API_KEY"), "{shown}");
        assert!(!shown.contains("sk-secret-value"), "{shown}");
    }
}

#[test]
fn a_launcher_reaches_the_engine_its_environment_names() {
    // The fixtures' launcher names no engine: the local one, whose ports are this machine's.
    assert!(launcher().floor_options().local);
    let remote = Launcher {
        env: BTreeMap::from([(
            "DOCKER_HOST".to_string(),
            "tcp://engine.invalid:2376".to_string(),
        )]),
        ..launcher()
    };
    assert!(!remote.floor_options().local);
}
