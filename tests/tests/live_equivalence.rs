//! Proof on the live daemon: for every fixture launch that can run here, the container the CLI
//! backend creates (`docker create` with `render_argv`'s flags) and the one the API backend
//! creates (bollard with `render_create`'s body) have identical `Config` and `HostConfig` in
//! `docker inspect`, apart from the fields in [`EXCLUDED`], which the daemon fills per container,
//! and with the [`NORMALIZED`] rules.
//!
//! Each launch is made runnable here with [`live::localize`]: the test image instead of the
//! agent's, the real `fixtures/` and temporary directories instead of the virtual paths, unique
//! volume and network names (the networks are created for the test), and dummy secret values.
//! Launches that cannot run here are skipped with a printed reason (image builds, volume
//! subpaths on a daemon older than API 1.45, absent devices).
//!
//! Needs the daemon: skips with a printed reason without one, fails instead when
//! `AGENTC_REQUIRE_DOCKER=1`.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use agentc_backend_api::connect;
use agentc_backend_api::render_create;
use agentc_backend_cli::render_argv;
use agentc_conformance::fixtures::{self, fixture_files, load_fixture};
use agentc_conformance::image::ensure_test_image;
use agentc_conformance::live::{
    daemon_api_version, daemon_cpus, docker, inspect, localize, require_daemon, LeakGuard,
    LocalMachine, Localized, REQUIRE_DOCKER_VAR,
};
use agentc_conformance::referee::{apply_run_semantics, split_run_argv};
use agentc_engine::resolve_env;
use agentc_policy::Hinted;
use agentc_policy::{Action, LaunchSpec};
use bollard::query_parameters::CreateContainerOptionsBuilder;
use bollard::Docker;
use serde_json::Value;

/// Fields of `docker inspect` left out of the comparison, as (JSON path, why).
const EXCLUDED: &[(&str, &str)] = &[(
    "Config.Hostname",
    "the daemon sets it to the first 12 hex digits of the container's id when the create \
     request leaves it empty, so it differs for every container",
)];

/// How values are compared beyond equality, as (rule, why).
const NORMALIZED: &[(&str, &str)] = &[
    (
        "null, [] and {} are equal",
        "the daemon stores HostConfig as sent: the docker cli sends Go's empty slices and maps \
         (\"Dns\": []), the api backend leaves zero values out (render.rs's rule); the daemon \
         acts on both alike",
    ),
    (
        "Config.Env is compared sorted",
        "the docker cli rebuilds Env through a Go map (proxy settings), so its order is random \
         per run; names are unique, so order carries nothing",
    ),
    (
        "the cli's Config.AttachStdin/AttachStdout/AttachStderr/StdinOnce are cleared for a \
         detached launch",
        "`docker create` has no --detach; `docker run --detach` clears them before sending the \
         same body (the referee's apply_run_semantics)",
    ),
];

/// One launch that could not be compared, and why.
struct Skip {
    launch: String,
    reason: String,
}

/// One field whose value differs between the two containers.
struct Mismatch {
    launch: String,
    path: String,
    cli: Value,
    api: Value,
}

#[test]
fn live_cli_and_api_create_identical_containers_for_every_runnable_fixture() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "live_cli_and_api_create_identical_containers_for_every_runnable_fixture";
    if !require_daemon(test) {
        return;
    }
    let image = match ensure_test_image() {
        Ok(tag) => tag,
        Err(reason) => return skip_or_fail(test, &reason),
    };
    let api_version = daemon_api_version().expect("the daemon reports its api version");
    let workspace = tempfile::tempdir().expect("temporary workspace");
    let home = tempfile::tempdir().expect("temporary home");
    let docker_config = tempfile::tempdir().expect("temporary docker config");
    let machine = LocalMachine {
        image,
        workspace: workspace.path().to_path_buf(),
        home: home.path().to_path_buf(),
        api_version,
        host_cpus: daemon_cpus().expect("the daemon reports its cpu count"),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let host = std::env::var("DOCKER_HOST").ok();
    let client = runtime
        .block_on(connect(agentc_engine::Engine::Docker, host.as_deref()))
        .expect("connect to the daemon")
        .docker;

    // One profile label and volume suffix for the whole run, watched by one guard; each launch
    // removes its containers, volumes and networks itself, and the guard checks at the end.
    let unique = format!("lpeq{}", std::process::id());
    let guard = LeakGuard::new(test, &unique);
    let mut compared = 0;
    let mut skips = Vec::new();
    let mut adjustments = Vec::new();
    let mut mismatches = Vec::new();
    let mut index = 0;
    for file in fixture_files("valid") {
        let loaded = load_fixture(&file).expect("valid fixture loads");
        for launch in fixtures::launches(&loaded) {
            index += 1;
            let name = format!("{} {}", fixtures::display_name(&file), launch.label);
            // Whether every valid fixture resolves is the fixture snapshot tests' to assert.
            let spec = match fixtures::resolve(&loaded, &launch) {
                Ok(spec) => spec,
                Err(error) => {
                    skips.push(Skip {
                        launch: name,
                        reason: format!(
                            "does not resolve with the virtual inputs: {}",
                            error.with_hint()
                        ),
                    });
                    continue;
                }
            };
            let localized = match localize(&spec, &machine, &unique) {
                Ok(localized) => localized,
                Err(reason) => {
                    skips.push(Skip {
                        launch: name,
                        reason,
                    });
                    continue;
                }
            };
            adjustments.extend(
                localized
                    .adjustments
                    .iter()
                    .map(|adjustment| format!("{name}: {adjustment}")),
            );
            let found = compare(
                &runtime,
                &client,
                &spec,
                &localized,
                &format!("{unique}-{index}"),
                docker_config.path(),
            );
            match found {
                Ok(differences) => {
                    compared += 1;
                    mismatches.extend(differences.into_iter().map(|(path, cli, api)| Mismatch {
                        launch: name.clone(),
                        path,
                        cli,
                        api,
                    }));
                }
                Err(error) => panic!("{name}: {error}"),
            }
        }
    }

    println!("compared {compared} fixture launches on the live daemon");
    println!("excluded fields:");
    for (path, why) in EXCLUDED {
        println!("  {path}: {why}");
    }
    println!("normalized:");
    for (rule, why) in NORMALIZED {
        println!("  {rule}: {why}");
    }
    println!("adjusted to fit this machine:");
    for adjustment in &adjustments {
        println!("  {adjustment}");
    }
    println!("skipped {} launches:", skips.len());
    for skip in &skips {
        println!("  {}: {}", skip.launch, skip.reason);
    }
    for mismatch in &mismatches {
        println!(
            "MISMATCH {} at {}:\n  cli: {}\n  api: {}",
            mismatch.launch, mismatch.path, mismatch.cli, mismatch.api
        );
    }
    guard.finish();
    assert!(
        mismatches.is_empty(),
        "{} fields differ between the cli and api containers (printed above)",
        mismatches.len()
    );
    assert!(compared >= 20, "only {compared} launches could be compared");
}

fn skip_or_fail(test: &str, reason: &str) {
    if std::env::var(REQUIRE_DOCKER_VAR).as_deref() == Ok("1") {
        panic!("{test}: {REQUIRE_DOCKER_VAR}=1 but {reason}");
    }
    eprintln!("skipping {test}: {reason}");
}

/// Creates the launch through both backends, inspects both and returns the differences of
/// their `Config` and `HostConfig` as (path, cli value, api value). Removes the containers,
/// volumes and networks it made (the caller's [`LeakGuard`] checks).
fn compare(
    runtime: &tokio::runtime::Runtime,
    client: &Docker,
    spec: &LaunchSpec,
    localized: &Localized,
    unique: &str,
    docker_config: &std::path::Path,
) -> Result<Vec<(String, Value, Value)>, String> {
    for network in &localized.networks {
        docker(&["network", "create", network])?;
    }
    let cli_name = format!("cli-{unique}");
    let api_name = format!("api-{unique}");
    let result = (|| {
        let cli = create_with_cli(spec, localized, &cli_name, docker_config)?;
        let api = runtime.block_on(create_with_api(client, localized, &api_name))?;
        Ok::<_, String>((cli, api))
    })();
    let inspected = result.map(|(cli, api)| (inspect(&cli), inspect(&api)));
    let removed = docker(&["rm", "--force", &cli_name, &api_name]);
    for network in &localized.networks {
        docker(&["network", "rm", network])?;
    }
    let (mut cli, mut api) = inspected?;
    removed?;
    if !localized.volumes.is_empty() {
        let mut args = vec!["volume", "rm"];
        args.extend(localized.volumes.iter().map(String::as_str));
        docker(&args)?;
    }
    if cli.is_null() || api.is_null() {
        return Err("docker inspect found no container".to_string());
    }
    // `docker create` cannot say `--detach`; `docker run --detach` clears the attach fields
    // before it sends the same body (the referee's rule).
    if let Some(config) = cli.get_mut("Config") {
        apply_run_semantics(config, localized.container.detach);
    }
    for inspected in [&mut cli, &mut api] {
        for (path, _) in EXCLUDED {
            remove_path(inspected, path);
        }
        sort_env(inspected);
    }
    let mut differences = Vec::new();
    for section in ["Config", "HostConfig"] {
        diff(section, &cli[section], &api[section], &mut differences);
    }
    Ok(differences)
}

/// `docker create` with the CLI backend's argv (`run` turned into `create`, `--detach` dropped),
/// secrets in its environment, an empty docker config (no proxy variables injected).
fn create_with_cli(
    spec: &LaunchSpec,
    localized: &Localized,
    name: &str,
    docker_config: &std::path::Path,
) -> Result<String, String> {
    let mut container = localized.container.clone();
    container.name = Some(name.to_string());
    let spec = LaunchSpec {
        action: Action::Container(Box::new(container)),
        ..spec.clone()
    };
    let argv = render_argv(&spec).map_err(|error| error.with_hint().to_string())?;
    let split = split_run_argv(&argv).map_err(|error| error.to_string())?;
    let output = Command::new("docker")
        .arg("create")
        .args(&split.create_args)
        .env("DOCKER_CONFIG", docker_config)
        .envs(localized.secrets.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run docker: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "docker create {:?} failed: {}",
            split.create_args,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// `POST /containers/create` through bollard with `render_create`'s body, secrets resolved the
/// way `agentc_engine::launch` resolves them.
async fn create_with_api(
    client: &Docker,
    localized: &Localized,
    name: &str,
) -> Result<String, String> {
    let mut request =
        render_create(&localized.container).map_err(|error| error.with_hint().to_string())?;
    let env: BTreeMap<String, String> = localized.secrets.iter().cloned().collect();
    let resolved =
        resolve_env(&localized.container, &env).map_err(|error| error.with_hint().to_string())?;
    request.body.env = Some(resolved).filter(|env| !env.is_empty());
    let options = CreateContainerOptionsBuilder::new().name(name).build();
    client
        .create_container(Some(options), request.body)
        .await
        .map(|created| created.id)
        .map_err(|error| format!("api create failed: {error}"))
}

/// Sorts `Config.Env`. The docker CLI rebuilds `Env` through a Go map (to merge proxy
/// settings), so its order is random per run; names are unique, so the order carries nothing.
fn sort_env(inspected: &mut Value) {
    if let Some(Value::Array(env)) = inspected.pointer_mut("/Config/Env") {
        env.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    }
}

/// Removes `A.B.C` from a JSON object, if present.
fn remove_path(value: &mut Value, path: &str) {
    let mut parts: Vec<&str> = path.split('.').collect();
    let Some(last) = parts.pop() else { return };
    let mut current = value;
    for part in parts {
        match current.get_mut(part) {
            Some(next) => current = next,
            None => return,
        }
    }
    if let Some(object) = current.as_object_mut() {
        object.remove(last);
    }
}

/// Records every leaf (or shape) difference between `cli` and `api` under `path`.
fn diff(path: &str, cli: &Value, api: &Value, out: &mut Vec<(String, Value, Value)>) {
    match (cli, api) {
        (Value::Object(left), Value::Object(right)) => {
            let keys: std::collections::BTreeSet<&String> =
                left.keys().chain(right.keys()).collect();
            for key in keys {
                diff(
                    &format!("{path}.{key}"),
                    left.get(key).unwrap_or(&Value::Null),
                    right.get(key).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(left), Value::Array(right)) if left.len() == right.len() => {
            for (index, (l, r)) in left.iter().zip(right).enumerate() {
                diff(&format!("{path}[{index}]"), l, r, out);
            }
        }
        (left, right) if left != right && !(is_empty(left) && is_empty(right)) => {
            out.push((path.to_string(), left.clone(), right.clone()))
        }
        _ => {}
    }
}

/// `null`, `[]` and `{}`: "none" to the daemon. The daemon stores the create request's
/// `HostConfig` as sent; the CLI sends Go's empty slices and maps (`"Dns": []`), the API
/// backend leaves zero values out (render.rs's documented rule), so inspect shows `[]` for one
/// and `null` for the other while the daemon acts identically on both.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

#[test]
fn diff_names_each_differing_path_with_both_values() {
    let _turn = agentc_conformance::turn::turn(file!());
    let cli =
        serde_json::json!({"HostConfig": {"PidsLimit": 512, "Dns": [], "CapAdd": ["A", "B"]}});
    let api =
        serde_json::json!({"HostConfig": {"PidsLimit": 7, "Dns": null, "CapAdd": ["A", "C"]}});
    let mut out = Vec::new();
    diff(
        "HostConfig",
        &cli["HostConfig"],
        &api["HostConfig"],
        &mut out,
    );
    assert_eq!(
        out,
        vec![
            (
                "HostConfig.CapAdd[1]".to_string(),
                Value::from("B"),
                Value::from("C")
            ),
            (
                "HostConfig.PidsLimit".to_string(),
                Value::from(512),
                Value::from(7)
            ),
        ]
    );
    let mut out = Vec::new();
    diff("X", &Value::from(0), &Value::Null, &mut out);
    assert_eq!(out.len(), 1, "zero is not empty");
    let mut out = Vec::new();
    diff(
        "X",
        &serde_json::json!(["a"]),
        &serde_json::json!(["a", "b"]),
        &mut out,
    );
    assert_eq!(out.len(), 1, "a longer array differs as a whole");
}

#[test]
fn exclusions_and_env_sorting_touch_only_their_fields() {
    let _turn = agentc_conformance::turn::turn(file!());
    let mut inspected = serde_json::json!({
        "Config": {"Hostname": "0123456789ab", "Env": ["B=2", "A=1"], "User": "1000"},
        "HostConfig": {"Memory": 1}
    });
    remove_path(&mut inspected, "Config.Hostname");
    remove_path(&mut inspected, "Config.Nothing.Here");
    sort_env(&mut inspected);
    assert_eq!(
        inspected,
        serde_json::json!({
            "Config": {"Env": ["A=1", "B=2"], "User": "1000"},
            "HostConfig": {"Memory": 1}
        })
    );
}
