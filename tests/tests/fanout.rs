//! The API backend's connection and fan-out against the referee in engine mode
//! (`agentc_conformance::stand_in`), which records every request with the connection it came
//! on: the version is negotiated with `/_ping`, one connection serves a whole launch, the image
//! is inspected once, `launch_many` bounds its concurrency and starts a fleet whole or not at
//! all, and removal of a profile's containers leaves other profiles' alone.
//!
//! No daemon is needed: the stand-in answers on a unix socket of its own.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use agentc_backend_api::{connect, copy_names, RemoveTarget};
use agentc_conformance::launch::{launch, launch_many};
use agentc_conformance::referee::{RecordedRequest, Referee};
use agentc_conformance::stand_in::Faults;
use agentc_engine::launch::LaunchOptions;
use agentc_policy::{ContainerSpec, Hinted, LABEL_PROFILE};

const IMAGE: &str = "agentc-test/busybox:fanout";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

fn detached(name: &str, profile: &str) -> ContainerSpec {
    let mut spec = ContainerSpec::empty(IMAGE);
    spec.name = Some(name.to_string());
    spec.detach = true;
    spec.labels
        .insert(LABEL_PROFILE.to_string(), profile.to_string());
    spec
}

fn options() -> LaunchOptions {
    LaunchOptions::default()
}

fn lines(requests: &[RecordedRequest]) -> Vec<String> {
    requests
        .iter()
        .map(|request| format!("{} {}", request.method, strip_version(&request.path)))
        .collect()
}

fn strip_version(path: &str) -> String {
    match path.strip_prefix("/v") {
        Some(rest) if rest.starts_with(|c: char| c.is_ascii_digit()) => rest
            .find('/')
            .map_or(path, |slash| &rest[slash..])
            .to_string(),
        _ => path.to_string(),
    }
}

#[test]
fn a_detached_launch_pings_inspects_once_and_reuses_one_connection() {
    let referee = Referee::start_engine("1.41").expect("start the stand-in");
    let host = referee.docker_host();
    let outcome = runtime().block_on(async {
        let docker = connect(agentc_engine::Engine::Docker, Some(&host))
            .await
            .expect("connects");
        let version = docker.docker.client_version();
        assert_eq!((version.major_version, version.minor_version), (1, 41));
        launch(
            &docker,
            &detached("one", "fanout-one"),
            &BTreeMap::new(),
            &options(),
        )
        .await
        .expect("launches")
    });
    assert_eq!(outcome.exit_code, 0);
    let requests = referee.requests();
    assert_eq!(
        lines(&requests),
        [
            "GET /_ping",
            &format!("GET /images/{IMAGE}/json"),
            "POST /containers/create",
            &format!("POST /containers/{}/start", outcome.container_id),
        ],
        "no GET /version, one inspect, nothing else before the create"
    );
    let connections: BTreeSet<u64> = requests.iter().map(|request| request.connection).collect();
    assert_eq!(
        connections.len(),
        1,
        "one pooled connection serves the ping and every request: {requests:?}"
    );
}

#[test]
fn launch_many_starts_every_copy_at_most_jobs_at_a_time_on_one_pool() {
    let referee = Referee::start_engine("1.47").expect("start the stand-in");
    let engine = referee.engine().expect("engine mode");
    engine.set_faults(Faults {
        create_delay: Duration::from_millis(40),
        ..Faults::default()
    });
    let names = copy_names("fleet", 6);
    let specs: Vec<ContainerSpec> = names
        .iter()
        .map(|name| detached(name, "fanout-fleet"))
        .collect();
    let host = referee.docker_host();
    let launched = runtime().block_on(async {
        let docker = connect(agentc_engine::Engine::Docker, Some(&host))
            .await
            .expect("connects");
        launch_many(&docker, &specs, &BTreeMap::new(), &options(), 3)
            .await
            .unwrap_or_else(|error| panic!("{}", error.with_hint()))
    });
    let launched_names: Vec<&str> = launched
        .iter()
        .map(|copy| copy.placed.name.as_deref().unwrap_or_default())
        .collect();
    assert_eq!(
        launched_names,
        ["fleet-1", "fleet-2", "fleet-3", "fleet-4", "fleet-5", "fleet-6"]
    );
    assert_eq!(engine.container_names(), names);
    let most = engine.most_concurrent_creates();
    assert!(
        (2..=3).contains(&most),
        "at most 3 creates at once, and more than one: {most}"
    );
    let requests = referee.requests();
    let pings = requests
        .iter()
        .filter(|request| request.path == "/_ping")
        .count();
    assert_eq!(pings, 1, "one connect for the whole fleet");
    let inspects = requests
        .iter()
        .filter(|request| request.path.starts_with("/images/"))
        .count();
    assert_eq!(inspects, 1, "the image is inspected once for the fleet");
    let connections: BTreeSet<u64> = requests.iter().map(|request| request.connection).collect();
    assert!(
        connections.len() <= 3,
        "the pool opens no more connections than jobs: {connections:?}"
    );
}

#[test]
fn a_failed_copy_rolls_the_fleet_back_and_names_every_failure() {
    let referee = Referee::start_engine("1.47").expect("start the stand-in");
    let engine = referee.engine().expect("engine mode");
    engine.set_faults(Faults {
        fail_start: BTreeSet::from(["fleet-2".to_string()]),
        ..Faults::default()
    });
    let specs: Vec<ContainerSpec> = copy_names("fleet", 5)
        .iter()
        .map(|name| detached(name, "fanout-failure"))
        .collect();
    let host = referee.docker_host();
    let error = runtime().block_on(async {
        let docker = connect(agentc_engine::Engine::Docker, Some(&host))
            .await
            .expect("connects");
        launch_many(&docker, &specs, &BTreeMap::new(), &options(), 1)
            .await
            .expect_err("copy 2 cannot start")
    });
    let failed: Vec<&str> = error.failed.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(failed, ["fleet-2"]);
    assert_eq!(error.not_started, ["fleet-3", "fleet-4", "fleet-5"]);
    assert_eq!(error.rolled_back, ["fleet-1"]);
    assert!(error.left.is_empty(), "{error}");
    let text = error.with_hint().to_string();
    assert!(
        text.contains("fleet-2: docker daemon refused to start the container"),
        "{text}"
    );
    assert!(
        text.contains("\n  hint: nothing of this launch is left"),
        "{text}"
    );
    assert_eq!(error.exit_code(), 125);
    assert!(
        engine.container_names().is_empty(),
        "nothing is left: {:?}",
        engine.container_names()
    );
}

#[test]
fn a_missing_image_fails_every_copy_before_anything_is_created() {
    let referee = Referee::start_engine("1.47").expect("start the stand-in");
    let engine = referee.engine().expect("engine mode");
    engine.set_faults(Faults {
        missing_images: BTreeSet::from([IMAGE.to_string()]),
        ..Faults::default()
    });
    let specs: Vec<ContainerSpec> = copy_names("fleet", 4)
        .iter()
        .map(|name| detached(name, "fanout-missing"))
        .collect();
    let host = referee.docker_host();
    let error = runtime().block_on(async {
        let docker = connect(agentc_engine::Engine::Docker, Some(&host))
            .await
            .expect("connects");
        launch_many(&docker, &specs, &BTreeMap::new(), &options(), 2)
            .await
            .expect_err("the image is missing")
    });
    assert!(!error.failed.is_empty());
    assert!(
        error.rolled_back.is_empty() && error.left.is_empty(),
        "{error}"
    );
    assert!(error.to_string().contains(IMAGE), "{error}");
    assert!(lines(&referee.requests())
        .iter()
        .all(|line| line != "POST /containers/create"));
}

#[test]
fn removing_a_profile_removes_its_containers_only() {
    let referee = Referee::start_engine("1.47").expect("start the stand-in");
    let engine = referee.engine().expect("engine mode");
    let mut specs: Vec<ContainerSpec> = copy_names("ours", 4)
        .iter()
        .map(|name| detached(name, "fanout-ours"))
        .collect();
    specs.push(detached("theirs-1", "fanout-theirs"));
    let host = referee.docker_host();
    let removed = runtime().block_on(async {
        let docker = connect(agentc_engine::Engine::Docker, Some(&host))
            .await
            .expect("connects");
        launch_many(&docker, &specs, &BTreeMap::new(), &options(), 4)
            .await
            .unwrap_or_else(|error| panic!("{}", error.with_hint()));
        agentc_engine::admin::remove(&docker, &RemoveTarget::Profile("fanout-ours".to_string()))
            .await
            .expect("removes")
    });
    assert_eq!(removed, copy_names("ours", 4));
    assert_eq!(engine.container_names(), ["theirs-1"]);
}

/// Docker 20.10 (API 1.41) can deadlock its network controller under concurrent removals
/// (moby/moby#42545), so agentc removes one container at a time there, and several at once on
/// a newer daemon.
#[test]
fn removals_run_one_at_a_time_on_a_daemon_older_than_api_1_42() {
    for (version, expected) in [
        ("1.41", 1),
        ("1.47", agentc_backend_api::admin::REMOVE_JOBS),
    ] {
        let referee = Referee::start_engine(version).expect("start the stand-in");
        let engine = referee.engine().expect("engine mode");
        engine.set_faults(Faults {
            remove_delay: Duration::from_millis(40),
            ..Faults::default()
        });
        let specs: Vec<ContainerSpec> = copy_names("fleet", 10)
            .iter()
            .map(|name| detached(name, "fanout-fleet"))
            .collect();
        let host = referee.docker_host();
        runtime().block_on(async {
            let docker = connect(agentc_engine::Engine::Docker, Some(&host))
                .await
                .expect("connects");
            launch_many(&docker, &specs, &BTreeMap::new(), &options(), 4)
                .await
                .unwrap_or_else(|error| panic!("{}", error.with_hint()));
            agentc_engine::admin::remove(
                &docker,
                &RemoveTarget::Profile("fanout-fleet".to_string()),
            )
            .await
            .expect("removes")
        });
        assert_eq!(engine.container_names(), Vec::<String>::new());
        assert_eq!(
            engine.most_concurrent_removals(),
            expected,
            "API {version}: removals at once"
        );
    }
}
