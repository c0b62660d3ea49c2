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
