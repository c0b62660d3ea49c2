//! Proof on a live Podman (4.3, rootful): agentc's launches mean the same through Podman's
//! command line and through its Docker-compatible API socket.
//!
//! - For every fixture launch that can run here (made runnable with `live::localize`, as the
//!   Docker proofs do), the container `podman create` makes from the CLI backend's argv and
//!   the one the API backend creates through the socket inspect the same on every security
//!   field ([`SECURITY_FIELDS`]), both with the Docker/Podman difference table applied
//!   (`agentc_engine::podman`).
//! - `agentc verify` (its library entry point) passes through both for a set of fixtures, one
//!   of them at a non-root user with preset capabilities (the row that rewrites `--cap-add`).
//! - gVisor through Podman: the CLI launches and verifies a runsc profile; the API socket,
//!   which ignores `HostConfig.Runtime`, refuses it before anything exists.
//!
//! The commands called in-process drive the engine `agentc::set_engine` chose, which is the
//! process's: Podman while a test of this file runs ([`OnPodman`]), Docker again for the other
//! files of the `live` binary; its ports and connections are Podman's by value.
//! Needs Podman and its socket (`scripts/setup-engines.sh`): skips with a printed reason
//! without them, fails instead when `AGENTC_REQUIRE_DOCKER=1`.

use std::collections::BTreeMap;
use std::time::Instant;

use agentc::cli::BackendArg;
use agentc::commands::verify::verify_launch;
use agentc::set_engine;
use agentc_backend_cli::exec::engine::podman_argv;
use agentc_conformance::engines::{
    ensure_podman_image, podman, podman_containers, podman_leaks, require_podman, PODMAN_SOCKET,
};
use agentc_conformance::fixtures::{self, fixture_files, load_fixture};
use agentc_conformance::image::ensure_test_image;
use agentc_conformance::live::{daemon_cpus, localize, LocalMachine, Localized};
use agentc_egress::image::ProxyExecutable;
use agentc_engine::{podman::adapt, resolve_env, Engine, ExecError};
use agentc_policy::Hinted;
use agentc_policy::{Action, LaunchSpec};
use agentc_verify::{render_table, EgressProbe};
use bollard::query_parameters::CreateContainerOptionsBuilder;
use serde_json::Value;

/// The fields of `podman inspect` compared between the two containers: what confines the
/// process (user, capabilities, privileges, seccomp and no-new-privileges, read-only root,
/// tmpfs, devices, IPC, network) and what limits it.
const SECURITY_FIELDS: &[&str] = &[
    "/Config/User",
    "/EffectiveCaps",
    "/BoundingCaps",
    "/HostConfig/CapAdd",
    "/HostConfig/CapDrop",
    "/HostConfig/Privileged",
    "/HostConfig/SecurityOpt",
    "/HostConfig/ReadonlyRootfs",
    "/HostConfig/Tmpfs",
    "/HostConfig/Devices",
    "/HostConfig/IpcMode",
    "/HostConfig/NetworkMode",
    "/HostConfig/Memory",
    "/HostConfig/MemorySwap",
    "/HostConfig/NanoCpus",
    "/HostConfig/CpuQuota",
    "/HostConfig/PidsLimit",
    "/HostConfig/ShmSize",
    "/HostConfig/Ulimits",
];

fn machine(image: &str, workspace: &std::path::Path, home: &std::path::Path) -> LocalMachine {
    LocalMachine {
        image: image.to_string(),
        workspace: workspace.to_path_buf(),
        home: home.to_path_buf(),
        // Podman's socket speaks Engine API 1.41 (no volume subpaths: Podman refuses them).
        api_version: (1, 41),
        host_cpus: daemon_cpus().unwrap_or(1),
    }
}

fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn image_user(image: &str) -> String {
    podman(&["image", "inspect", "--format", "{{.Config.User}}", image]).unwrap_or_default()
}

/// `podman create` with the CLI backend's argv for Podman.
fn create_with_cli(localized: &Localized, name: &str) -> Result<(), String> {
    let mut container = localized.container.clone();
    container.name = Some(name.to_string());
    let adapted = adapt(&container, Some(&image_user(&container.image)))
        .map_err(|error| error.with_hint().to_string())?;
    let argv = podman_argv(&adapted).map_err(|error| error.with_hint().to_string())?;
    let args: Vec<&str> = std::iter::once("create")
        .chain(argv[2..].iter().map(String::as_str))
        .filter(|arg| *arg != "--detach")
        .collect();
    let output = std::process::Command::new("podman")
        .args(&args)
        .envs(localized.secrets.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|error| format!("cannot run podman: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "podman create failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(())
}

/// The API backend's create request for Podman, through the socket.
async fn create_with_api(
    client: &bollard::Docker,
    localized: &Localized,
    name: &str,
) -> Result<(), String> {
    let mut container = localized.container.clone();
    container.name = Some(name.to_string());
    let mut request = agentc_backend_api::engine::create_request(
        client,
        agentc_engine::Engine::Podman,
        &container,
    )
    .await
    .map_err(|error| error.with_hint().to_string())?;
    let env: BTreeMap<String, String> = localized.secrets.iter().cloned().collect();
    let resolved = resolve_env(&container, &env).map_err(|error| error.with_hint().to_string())?;
    request.body.env = Some(resolved).filter(|env| !env.is_empty());
    let options = CreateContainerOptionsBuilder::new().name(name).build();
    client
        .create_container(Some(options), request.body)
        .await
        .map(|_| ())
        .map_err(|error| format!("api create failed: {error}"))
}

fn inspect(name: &str) -> Result<Value, String> {
    let text = podman(&["inspect", "--type", "container", name])?;
    let value: Value = serde_json::from_str(&text).map_err(|error| error.to_string())?;
    value
        .get(0)
        .cloned()
        .ok_or_else(|| format!("podman inspect {name} found nothing"))
}

/// What one thread compared.
struct Outcome {
    compared: usize,
    refused: Vec<String>,
    differences: Vec<String>,
}

/// `null`, `[]`, `{}` and `""` are all "not set"; a pids limit of 0 (what the CLI's `-1`
/// is stored as) and -1 (the API's) are both "unlimited".
fn normalized(value: Option<&Value>) -> Value {
    match value {
        Some(Value::Number(number)) if number.as_i64() == Some(-1) => Value::from(0),
        None | Some(Value::Null) => Value::Null,
        Some(Value::Array(items)) if items.is_empty() => Value::Null,
        Some(Value::Object(map)) if map.is_empty() => Value::Null,
        Some(Value::String(text)) if text.is_empty() => Value::Null,
        Some(value) => value.clone(),
    }
}

/// Creates one launch both ways, compares, removes; the differences as text.
fn compare_one(
    runtime: &tokio::runtime::Runtime,
    client: &bollard::Docker,
    localized: &Localized,
    unique: &str,
) -> Result<Vec<String>, String> {
    for network in &localized.networks {
        podman(&["network", "create", network])?;
    }
    let cli_name = format!("cli-{unique}");
    let api_name = format!("api-{unique}");
    let created = create_with_cli(localized, &cli_name)
        .and_then(|()| runtime.block_on(create_with_api(client, localized, &api_name)));
    let inspected = created.and_then(|()| Ok((inspect(&cli_name)?, inspect(&api_name)?)));
    for name in [&cli_name, &api_name] {
        let _ = podman(&["rm", "--force", "--ignore", "--time=0", name]);
    }
    for network in &localized.networks {
        let _ = podman(&["network", "rm", "--force", network]);
    }
    for volume in &localized.volumes {
        let _ = podman(&["volume", "rm", "--force", volume]);
    }
    let (cli, mut api) = inspected?;
    // The difference table's row: Podman's socket mounts /var/tmp with a read-only root and
    // cannot be told not to; agentc makes it noexec there, as Docker's tmpfs defaults are.
    if let Some(Value::Object(tmpfs)) = api.pointer_mut("/HostConfig/Tmpfs") {
        if tmpfs
            .get("/var/tmp")
            .and_then(Value::as_str)
            .is_some_and(|options| options.starts_with("rw,noexec,nosuid,nodev"))
            && localized.container.read_only_root
        {
            tmpfs.remove("/var/tmp");
        }
    }
    Ok(SECURITY_FIELDS
        .iter()
        .filter_map(|path| {
            let (a, b) = (normalized(cli.pointer(path)), normalized(api.pointer(path)));
            (a != b).then(|| format!("{path}: cli {a}, api {b}"))
        })
        .collect())
}

/// How many of this file's tests drive Podman now.
static ON_PODMAN: std::sync::Mutex<usize> = std::sync::Mutex::new(0);

/// The in-process commands drive Podman until the last test of this file holding one of these
/// ends, then Docker again, as the other files of the binary expect (`agentc::set_engine` is
/// the process's; no other file's test runs meanwhile, `agentc_conformance::turn`).
struct OnPodman;

impl OnPodman {
    fn drive() -> OnPodman {
        let mut driving = ON_PODMAN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *driving += 1;
        set_engine(Engine::Podman);
        OnPodman
    }
}

impl Drop for OnPodman {
    fn drop(&mut self) {
        let mut driving = ON_PODMAN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *driving -= 1;
        if *driving == 0 {
            set_engine(Engine::Docker);
        }
    }
}

#[test]
fn live_podman_cli_and_api_create_the_same_containers_for_every_runnable_fixture() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "live_podman_cli_and_api_create_the_same_containers_for_every_runnable_fixture";
    if !require_podman(test) {
        return;
    }
    let _podman = OnPodman::drive();
    let started = Instant::now();
    let image = ensure_test_image().expect("the test image builds");
    ensure_podman_image(&image).expect("podman loads the test image");
    let workspace = tempfile::tempdir().expect("temporary workspace");
    let home = tempfile::tempdir().expect("temporary home");
    let machine = machine(&image, workspace.path(), home.path());
    let unique = format!("lpod{}", std::process::id());

    // Launches of one fixture share volumes: they run in one thread, one after the other.
    let mut runnable: Vec<Vec<(String, Localized)>> = Vec::new();
    let mut skipped = Vec::new();
    for file in fixture_files("valid") {
        runnable.push(Vec::new());
        let loaded = load_fixture(&file).expect("valid fixture loads");
        for launch in fixtures::launches(&loaded) {
            let name = format!("{} {}", fixtures::display_name(&file), launch.label);
            let localized = fixtures::resolve(&loaded, &launch)
                .map_err(|error| error.with_hint().to_string())
                .and_then(|spec| localize(&spec, &machine, &unique));
            match localized {
                Ok(localized) => runnable.last_mut().expect("pushed").push((name, localized)),
                Err(reason) => skipped.push(format!("{name}: {reason}")),
            }
        }
    }

    // Three threads, each with its own connection: about a second per launch otherwise.
    let chunks: Vec<Vec<(usize, (String, Localized))>> = {
        let mut chunks = vec![Vec::new(), Vec::new(), Vec::new()];
        let mut index = 0;
        for (file, launches) in runnable.into_iter().enumerate() {
            for item in launches {
                chunks[file % 3].push((index, item));
                index += 1;
            }
        }
        chunks
    };
    let results: Vec<Outcome> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let unique = &unique;
                scope.spawn(move || {
                    let runtime = tokio();
                    let client = runtime
                        .block_on(agentc_backend_api::connect(
                            agentc_engine::Engine::Podman,
                            Some(PODMAN_SOCKET),
                        ))
                        .expect("connect to podman's socket")
                        .docker;
                    let (mut compared, mut refused, mut differences) = (0, Vec::new(), Vec::new());
                    for (index, (name, localized)) in chunk {
                        match compare_one(
                            &runtime,
                            &client,
                            &localized,
                            &format!("{unique}-{index}"),
                        ) {
                            Ok(found) => {
                                compared += 1;
                                differences
                                    .extend(found.into_iter().map(|d| format!("{name}: {d}")));
                            }
                            Err(reason) => refused.push(format!("{name}: {reason}")),
                        }
                    }
                    Outcome {
                        compared,
                        refused,
                        differences,
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("thread"))
            .collect()
    });
    let compared: usize = results.iter().map(|outcome| outcome.compared).sum();
    let refused: Vec<&String> = results
        .iter()
        .flat_map(|outcome| &outcome.refused)
        .collect();
    let differences: Vec<&String> = results
        .iter()
        .flat_map(|outcome| &outcome.differences)
        .collect();
    println!(
        "compared {compared} fixture launches through podman's CLI and API in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    println!("not runnable here ({}):", skipped.len());
    for skip in &skipped {
        println!("  {skip}");
    }
    println!(
        "refused on podman by both backends' difference table or podman itself ({}):",
        refused.len()
    );
    for refusal in &refused {
        println!("  {refusal}");
    }
    for difference in &differences {
        println!("DIFFERENCE {difference}");
    }
    let leaks = podman_leaks(&unique);
    assert!(leaks.is_empty(), "left behind on podman: {leaks:?}");
    assert!(
        differences.is_empty(),
        "{} security fields differ (printed above)",
        differences.len()
    );
    assert!(compared >= 60, "only {compared} launches were compared");
    // Only the rows the table refuses, and what Podman itself cannot do, are refused.
    for refusal in &refused {
        assert!(
            refusal.contains("cannot be launched on podman")
                || refusal.contains("its API socket ignores HostConfig.Runtime")
                || refusal.contains("invalid mount option"),
            "unexpected refusal: {refusal}"
        );
    }
}

/// The fixtures verified through Podman: every agent preset, custom sandboxes with mounts,
/// init, a named network, published ports and a non-root user.
const VERIFIED: &[&str] = &[
    "claude-minimal",
    "codex-minimal",
    "hermes-minimal",
    "opencode-minimal",
    "claude-mounts",
    "sandbox-minimal",
    "sandbox-init",
    "sandbox-entrypoint",
    "sandbox-network-publish",
    "sandbox-workspace",
];

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

fn verify(
    spec: &LaunchSpec,
    localized: &Localized,
    backend: BackendArg,
) -> Result<Vec<agentc_verify::Check>, String> {
    for network in &localized.networks {
        podman(&["network", "create", network])?;
    }
    let launch = LaunchSpec {
        action: Action::Container(Box::new(localized.container.clone())),
        ..spec.clone()
    };
    let env: BTreeMap<String, String> = localized.secrets.iter().cloned().collect();
    // Nothing here is behind the egress proxy: its executable is the default.
    let no_proxy = ProxyExecutable::default();
    let result = verify_launch(&launch, backend, &env, false, &EgressProbe::Skip, &no_proxy)
        .map_err(|failure| failure.message);
    for network in &localized.networks {
        let _ = podman(&["network", "rm", "--force", network]);
    }
    for volume in &localized.volumes {
        let _ = podman(&["volume", "rm", "--force", volume]);
    }
    result
}

#[test]
fn live_agentc_verify_passes_through_podmans_cli_and_api() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "live_agentc_verify_passes_through_podmans_cli_and_api";
    if !require_podman(test) {
        return;
    }
    let _podman = OnPodman::drive();
    let image = ensure_test_image().expect("the test image builds");
    ensure_podman_image(&image).expect("podman loads the test image");
    let workspace = tempfile::tempdir().expect("temporary workspace");
    let home = tempfile::tempdir().expect("temporary home");
    let machine = machine(&image, workspace.path(), home.path());
    let unique = format!("lpodv{}", std::process::id());
    // Each backend's pass has its own names (containers, volumes, networks): they run side
    // by side.
    let mut cases = Vec::new();
    let mut uniques = Vec::new();
    for backend in [BackendArg::Cli, BackendArg::Api] {
        for (index, name) in VERIFIED.iter().enumerate() {
            let suffix = format!(
                "{unique}{}{index}",
                if backend == BackendArg::Cli { "c" } else { "a" }
            );
            uniques.push(suffix.clone());
            let (spec, mut localized) = run_spec(name, &machine, &suffix);
            localized.container.name = Some(format!("agentc-{suffix}"));
            cases.push((backend, name.to_string(), spec.clone(), localized.clone()));
            if *name == "claude-minimal" {
                // The preset's capabilities at a non-root user: Podman would make them
                // effective; agentc renders none there, and verify expects none.
                localized.container.user = Some("1000:1000".into());
                localized.container.name = Some(format!("agentc-{suffix}-uid"));
                cases.push((
                    backend,
                    "claude-minimal as uid 1000".into(),
                    spec,
                    localized,
                ));
            }
        }
    }
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = [BackendArg::Cli, BackendArg::Api]
            .into_iter()
            .map(|backend| {
                let cases = &cases;
                scope.spawn(move || {
                    let mut failures = Vec::new();
                    for (_, name, spec, localized) in cases.iter().filter(|case| case.0 == backend)
                    {
                        match verify(spec, localized, backend) {
                            Ok(checks) if checks.iter().all(|check| check.ok) => {
                                if name.contains("uid 1000") {
                                    let bounding = checks
                                        .iter()
                                        .find(|check| check.what == "capability bounding set");
                                    assert_eq!(bounding.map(|c| c.seen.as_str()), Some("none"));
                                }
                            }
                            Ok(checks) => failures.push(format!(
                                "{name} through {backend:?}:\n{}",
                                render_table(&checks)
                            )),
                            Err(message) => {
                                failures.push(format!("{name} through {backend:?}: {message}"))
                            }
                        }
                    }
                    failures
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().expect("thread"))
            .collect()
    });
    let mut leaks = Vec::new();
    for suffix in &uniques {
        leaks.extend(podman_leaks(suffix));
    }
    assert!(
        failures.is_empty(),
        "verify failed:\n{}",
        failures.join("\n")
    );
    assert!(leaks.is_empty(), "left behind on podman: {leaks:?}");
}

#[test]
fn live_gvisor_through_podman_runs_by_its_cli_and_is_refused_by_its_socket() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "live_gvisor_through_podman_runs_by_its_cli_and_is_refused_by_its_socket";
    if !require_podman(test) {
        return;
    }
    let _podman = OnPodman::drive();
    let image = ensure_test_image().expect("the test image builds");
    ensure_podman_image(&image).expect("podman loads the test image");
    let workspace = tempfile::tempdir().expect("temporary workspace");
    let home = tempfile::tempdir().expect("temporary home");
    let machine = machine(&image, workspace.path(), home.path());
    let unique = format!("lpodg{}", std::process::id());
    for name in ["sandbox-gvisor", "claude-gvisor"] {
        let (spec, localized) = run_spec(name, &machine, &unique);
        let checks = verify(&spec, &localized, BackendArg::Cli).expect("verify runs");
        assert!(
            checks.iter().all(|check| check.ok),
            "{name} through podman's CLI:\n{}",
            render_table(&checks)
        );
        assert_eq!(checks[0].what, "runtime");
        assert!(checks[0].seen.starts_with("gVisor"), "{:?}", checks[0]);
        // The socket would run it under runc: refused before anything exists.
        let runtime = tokio();
        let client = runtime
            .block_on(agentc_backend_api::connect(
                agentc_engine::Engine::Podman,
                Some(PODMAN_SOCKET),
            ))
            .expect("connect to podman's socket")
            .docker;
        let refused = runtime.block_on(agentc_backend_api::engine::create_request(
            &client,
            agentc_engine::Engine::Podman,
            &localized.container,
        ));
        assert!(
            matches!(refused, Err(ExecError::RuntimeMissing { .. })),
            "{name}: {:?}",
            refused.map(|_| ())
        );
        assert!(podman_containers(&unique).is_empty());
    }
    let leaks = podman_leaks(&unique);
    assert!(leaks.is_empty(), "left behind on podman: {leaks:?}");
}

mod kube_play;
