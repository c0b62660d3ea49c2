//! Proof on the live Docker daemon with gVisor (`runsc`) registered: launches naming
//! `security.runtime = "runsc"` run under gVisor and `agentc verify` passes through both
//! backends without false mismatches (its kernel hides limits, `NoNewPrivs` and the seccomp
//! mode; verify reads them from inspect or says what gVisor does); a launch naming a runtime
//! the engine does not have is refused before anything exists, through both backends.
//!
//! Needs the daemon and runsc registered (`scripts/setup-engines.sh`): skips with a printed
//! reason without them, fails instead when `AGENTC_REQUIRE_DOCKER=1`.

use std::collections::BTreeMap;

use agentc::cli::BackendArg;
use agentc::commands::verify::verify_launch;
use agentc_conformance::engines::require_runsc;
use agentc_conformance::fixtures::{self, load_fixture};
use agentc_conformance::image::ensure_test_image;
use agentc_conformance::live::{
    containers_with_label, daemon_api_version, daemon_cpus, docker, localize, require_daemon,
    LeakGuard, LocalMachine, Localized, PROFILE_LABEL,
};
use agentc_egress::image::ProxyExecutable;
use agentc_engine::ExecError;
use agentc_policy::Hinted;
use agentc_policy::{Action, LaunchSpec};
use agentc_verify::{render_table, EgressProbe};

fn run_spec(name: &str, machine: &LocalMachine, unique: &str) -> (LaunchSpec, Localized) {
    let file = fixtures::fixtures_dir()
        .join("valid")
        .join(format!("{name}.toml"));
    let loaded = load_fixture(&file).expect("valid fixture loads");
    let launch = fixtures::launches(&loaded)
        .into_iter()
        .find(|launch| launch.label == "run")
        .expect("a run launch");
    let spec = fixtures::resolve(&loaded, &launch).expect("resolves");
    let localized = localize(&spec, machine, unique).expect("runnable here");
    (spec, localized)
}

fn machine(image: String, workspace: &std::path::Path, home: &std::path::Path) -> LocalMachine {
    LocalMachine {
        image,
        workspace: workspace.to_path_buf(),
        home: home.to_path_buf(),
        api_version: daemon_api_version().expect("api version"),
        host_cpus: daemon_cpus().expect("cpu count"),
    }
}

#[test]
fn live_runsc_launches_verify_through_both_backends() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "live_runsc_launches_verify_through_both_backends";
    if !require_daemon(test) || !require_runsc(test) {
        return;
    }
    let image = ensure_test_image().expect("the test image builds");
    let workspace = tempfile::tempdir().expect("temporary workspace");
    let home = tempfile::tempdir().expect("temporary home");
    let machine = machine(image, workspace.path(), home.path());
    let unique = format!("lgv{}", std::process::id());
    let guard = LeakGuard::new(test, &unique);
    // sandbox-gvisor and claude-gvisor have no network; sandbox-minimal under runsc is on
    // Docker's bridge (runsc registered with --network=host on this kernel: docs/engines.md).
    let mut cases = Vec::new();
    for (index, name) in ["sandbox-gvisor", "claude-gvisor", "sandbox-minimal"]
        .iter()
        .enumerate()
    {
        for backend in [BackendArg::Cli, BackendArg::Api] {
            let (spec, mut localized) = run_spec(name, &machine, &unique);
            localized.container.runtime = Some("runsc".into());
            localized.container.name = Some(format!("agentc-{unique}-{index}-{backend:?}"));
            for volume in &mut localized.container.mounts {
                if let agentc_policy::MountSource::Volume { name, .. } = &mut volume.source {
                    name.push_str(&format!("-{backend:?}").to_lowercase());
                }
            }
            cases.push((name.to_string(), backend, spec, localized));
        }
    }
    // Nothing here is behind the egress proxy: its executable is the default.
    let no_proxy = ProxyExecutable::default();
    let no_proxy = &no_proxy;
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = cases
            .iter()
            .map(|(name, backend, spec, localized)| {
                scope.spawn(move || {
                    let launch = LaunchSpec {
                        action: Action::Container(Box::new(localized.container.clone())),
                        ..spec.clone()
                    };
                    let env: BTreeMap<String, String> = localized.secrets.iter().cloned().collect();
                    match verify_launch(
                        &launch,
                        *backend,
                        &env,
                        false,
                        &EgressProbe::Skip,
                        no_proxy,
                    ) {
                        Ok(checks) if checks.iter().all(|check| check.ok) => {
                            let runtime = &checks[0];
                            if runtime.what == "runtime" && runtime.seen.starts_with("gVisor") {
                                None
                            } else {
                                Some(format!(
                                    "{name} {backend:?}: did not run under gVisor: {runtime:?}"
                                ))
                            }
                        }
                        Ok(checks) => Some(format!(
                            "{name} through {backend:?}:\n{}",
                            render_table(&checks)
                        )),
                        Err(failure) => {
                            Some(format!("{name} through {backend:?}: {}", failure.message))
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|handle| handle.join().expect("thread"))
            .collect()
    });
    for volume in docker(&["volume", "ls", "--format", "{{.Name}}"])
        .unwrap_or_default()
        .lines()
        .filter(|name| name.contains(&unique))
    {
        let _ = docker(&["volume", "rm", "--force", volume]);
    }
    guard.finish();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn live_a_missing_runtime_is_refused_before_anything_exists() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "live_a_missing_runtime_is_refused_before_anything_exists";
    if !require_daemon(test) {
        return;
    }
    let image = ensure_test_image().expect("the test image builds");
    let workspace = tempfile::tempdir().expect("temporary workspace");
    let home = tempfile::tempdir().expect("temporary home");
    let machine = machine(image, workspace.path(), home.path());
    let unique = format!("lgvm{}", std::process::id());
    let guard = LeakGuard::new(test, &unique);
    let (_, mut localized) = run_spec("claude-minimal", &machine, &unique);
    localized.container.runtime = Some("agentc-no-such-runtime".into());
    localized.container.detach = true;
    localized.container.interactive = false;
    localized.container.tty = false;
    localized.container.name = Some(format!("agentc-{unique}"));
    let env: BTreeMap<String, String> = localized.secrets.iter().cloned().collect();
    let container = &localized.container;

    // Nothing here is behind the egress proxy: its executable is the default.
    let no_proxy = ProxyExecutable::default();
    let options = agentc_engine::launch::LaunchOptions {
        proxy_executable: no_proxy,
        ..Default::default()
    };
    let cli = agentc_conformance::launch::launch_cli(
        agentc_engine::Engine::Docker,
        container,
        &env,
        &options,
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let api = runtime.block_on(async {
        let host = std::env::var("DOCKER_HOST").ok();
        let docker = agentc_backend_api::connect(agentc_engine::Engine::Docker, host.as_deref())
            .await
            .expect("connect");
        agentc_conformance::launch::launch(&docker, container, &env, &options).await
    });
    for (backend, result) in [("cli", cli.map(|_| ())), ("api", api.map(|_| ()))] {
        let error = result.expect_err("refused");
        assert!(
            matches!(error, ExecError::RuntimeMissing { .. }),
            "{backend}: {error}"
        );
        let text = error.with_hint().to_string();
        assert!(text.contains("runtime agentc-no-such-runtime"), "{text}");
        assert!(text.contains("nothing was created"), "{text}");
        assert!(
            text.contains("\n  hint: register it in /etc/docker/daemon.json"),
            "{text}"
        );
        assert_eq!(error.exit_code(), 65, "{backend}");
    }
    // Nothing exists: no container, no home volume.
    assert!(containers_with_label(&format!("{PROFILE_LABEL}={unique}")).is_empty());
    for volume in &localized.volumes {
        assert!(
            docker(&["volume", "inspect", volume]).is_err(),
            "volume {volume} was created"
        );
    }
    guard.finish();
}

/// An isolation floor on the live daemon: `min = "gvisor"` and `prefer = "strongest"` choose
/// runsc (proven by its probe) and label the container so; `min = "microvm"` is refused with
/// exit 65 naming what the engine has, no probe container left behind.
#[test]
fn live_an_isolation_floor_chooses_a_proven_runtime_or_refuses() {
    let _turn = agentc_conformance::turn::turn(file!());
    use agentc_policy::{ContainerSpec, Isolation, IsolationPrefer, IsolationTier};
    let test = "live_an_isolation_floor_chooses_a_proven_runtime_or_refuses";
    if !require_daemon(test) || !require_runsc(test) {
        return;
    }
    let image = ensure_test_image().expect("the test image builds");
    let floor = |min, prefer| {
        let mut container = ContainerSpec::empty(image.clone());
        container.isolation = Some(Isolation { min, prefer });
        container
    };
    for (min, prefer) in [
        (IsolationTier::Gvisor, IsolationPrefer::Min),
        (IsolationTier::Container, IsolationPrefer::Strongest),
    ] {
        let placed = agentc::commands::launch::meet_floor(
            &floor(min, prefer),
            "iso",
            agentc::cli::BackendArg::Cli,
        )
        .expect("runsc meets the floor")
        .container;
        assert_eq!(placed.runtime.as_deref(), Some("runsc"), "{min} {prefer:?}");
        assert_eq!(
            placed.labels.get("io.agentc.isolation").map(String::as_str),
            Some("gvisor")
        );
    }
    let placed = agentc::commands::launch::meet_floor(
        &floor(IsolationTier::Container, IsolationPrefer::Min),
        "iso",
        agentc::cli::BackendArg::Cli,
    )
    .expect("the engine's default meets the container floor")
    .container;
    assert_eq!(
        placed.labels.get("io.agentc.isolation").map(String::as_str),
        Some("container")
    );
    let refused = agentc::commands::launch::meet_floor(
        &floor(IsolationTier::Microvm, IsolationPrefer::Min),
        "iso",
        agentc::cli::BackendArg::Cli,
    )
    .expect_err("no microVM runtime here");
    assert_eq!(refused.code, 65, "{}", refused.message);
    assert!(
        refused.message.contains("runsc: gvisor"),
        "{}",
        refused.message
    );
    assert!(
        refused.message.contains("Kata Containers"),
        "{}",
        refused.message
    );
    // The probes run with --network=none and --rm: none is left, and no network was made
    // (other tests on this daemon make networks concurrently, so the list is not compared).
    assert!(containers_with_label("io.agentc.probe=isolation").is_empty());
}

/// Each backend detects the engine's runtimes through its own port (issue 24): the CLI's
/// `docker info` and the Engine API's `GET /info` name the same engine, default and runtimes
/// (path, arguments, version) on this daemon, and choose the same runtime for a floor.
#[test]
fn live_both_backends_detect_the_same_runtimes() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "live_both_backends_detect_the_same_runtimes";
    if !require_daemon(test) {
        return;
    }
    use agentc_engine::port::EnginePort;
    let runtime = agentc::commands::launch::runtime().expect("a runtime");
    let cli = runtime
        .block_on(async {
            let port = agentc::commands::launch::cli_port_reaping(None).await;
            port.runtimes().await
        })
        .expect("the engine's runtimes through the command line");
    let api = runtime
        .block_on(async {
            let port = agentc::commands::launch::connect()
                .await
                .expect("the Engine API");
            port.runtimes().await
        })
        .expect("the engine's runtimes through the Engine API");
    assert_eq!(cli, api);
    assert!(
        cli.runtimes["runc"].version.starts_with("runc commit "),
        "the engine reports runc's version: {cli:?}"
    );
    assert!(cli.engine.starts_with("docker "), "{}", cli.engine);
    assert!(cli.runtimes.contains_key("runc"), "{cli:?}");
    assert_eq!(cli.default.as_deref(), Some("runc"), "{cli:?}");
    let registered = docker(&["info", "--format", "{{json .Runtimes}}"]).unwrap();
    let registered: serde_json::Value = serde_json::from_str(registered.trim()).unwrap();
    let names: Vec<&String> = registered.as_object().unwrap().keys().collect();
    assert_eq!(cli.runtimes.keys().collect::<Vec<_>>(), names);
}
