//! One launch against the real daemon, with the shared busybox test image.
//!
//! Skips (printing why) when `docker info` fails or the image cannot be built; fails instead
//! when `AGENTC_REQUIRE_DOCKER=1`. The comprehensive live proof lives in the conformance tests.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use agentc_backend_api::{connect, ApiPort, ExecError};
use agentc_engine::launch::{LaunchOptions, Launched};
use agentc_engine::signals::Signals;
use agentc_engine::Engine;
use agentc_policy::spec::{ContainerSpec, EnvValue, EnvVar, Network, Resources, Tmpfs};

/// The launch `agentc run` makes ([`agentc_engine::launch::launch`]) through this backend's
/// port, with `env` the caller's environment: the exit code (0 once a detached one started).
async fn launch(
    port: &ApiPort,
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
) -> Result<i64, ExecError> {
    let mut signals = Signals::new()?;
    let options = LaunchOptions::default();
    let launched =
        agentc_engine::launch::launch(port, spec, env, &options, &mut |_| {}, &mut signals).await?;
    Ok(match launched {
        Launched::Exited(exited) => exited.exit_code,
        Launched::Started(_) => 0,
    })
}

fn unavailable(reason: String) {
    if std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() == Ok("1") {
        panic!("docker is required (AGENTC_REQUIRE_DOCKER=1) but {reason}");
    }
    eprintln!("skipping live test: {reason}");
}

fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|error| format!("cannot run {program}: {error}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    } else {
        Err(format!(
            "{program} {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// The shared test image (scripts/build-test-image.sh), built when absent.
fn test_image() -> Result<String, String> {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/build-test-image.sh");
    let script = script.to_string_lossy();
    let tag = run("bash", &[&script, "--print-tag"])?;
    if run("docker", &["image", "inspect", &tag]).is_err() {
        run("bash", &[&script, &tag])?;
    }
    Ok(tag)
}

fn spec(image: &str, name: &str, script: &str) -> ContainerSpec {
    ContainerSpec {
        name: Some(name.into()),
        command: vec!["sh".into(), "-c".into(), script.into()],
        user: Some("65534".into()),
        working_dir: Some("/tmp".into()),
        env: vec![EnvVar {
            name: "TOKEN".into(),
            value: EnvValue::Secret { required: true },
        }],
        tmpfs: vec![Tmpfs {
            target: "/tmp".into(),
            exec: false,
        }],
        read_only_root: true,
        no_new_privileges: true,
        cap_drop_all: true,
        network: Network::None,
        resources: Resources {
            memory_bytes: Some(64 << 20),
            memory_swap_bytes: Some(64 << 20),
            nano_cpus: Some(500_000_000),
            pids_limit: Some(64),
            ..Resources::default()
        },
        labels: BTreeMap::from([("io.agentc.profile".into(), "backend-api-live".into())]),
        ..ContainerSpec::empty(image)
    }
}

fn exists(name: &str) -> bool {
    run("docker", &["container", "inspect", name]).is_ok()
}

#[tokio::test]
async fn launch_runs_waits_propagates_the_exit_code_and_removes() {
    if let Err(reason) = run("docker", &["info", "--format", "{{.ServerVersion}}"]) {
        return unavailable(reason);
    }
    let image = match test_image() {
        Ok(image) => image,
        Err(reason) => return unavailable(format!("no test image: {reason}")),
    };
    let docker = connect(Engine::Docker, std::env::var("DOCKER_HOST").ok().as_deref())
        .await
        .expect("connects");
    let name = format!("agentc-backend-api-live-{}", std::process::id());
    let options = BTreeMap::from([("TOKEN".to_string(), "s3cret".to_string())]);

    // The secret arrives, the exit code comes back, nothing is left behind.
    let probe = r#"test "$TOKEN" = s3cret && test "$(id -u)" = 65534 && exit 3"#;
    let exit_code = launch(&docker, &spec(&image, &name, probe), &options)
        .await
        .expect("launches");
    assert_eq!(exit_code, 3);
    assert!(!exists(&name), "{name} was not removed");

    // --rm and the default network (the "default" endpoint the CLI sends) on this daemon.
    let mut removed = spec(&image, &name, "exit 0");
    removed.auto_remove = true;
    removed.network = Network::Default;
    let exit_code = launch(&docker, &removed, &options).await.expect("launches");
    assert_eq!(exit_code, 0);
    assert!(!exists(&name), "{name} was not auto-removed");

    // A missing secret or image fails before anything is created.
    let error = launch(&docker, &spec(&image, &name, "exit 0"), &BTreeMap::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ExecError::MissingSecret { ref variable } if variable == "TOKEN"),
        "{error}"
    );
    let error = launch(
        &docker,
        &spec("agentc-absent/none:0", &name, "exit 0"),
        &options,
    )
    .await
    .unwrap_err();
    assert!(matches!(error, ExecError::ImageMissing { .. }), "{error}");
    assert!(!exists(&name));

    // SIGTERM while attached kills and removes the container and reports 143.
    let sleeper = spec(&image, &name, "sleep 30");
    let launch = launch(&docker, &sleeper, &options);
    let terminate = async {
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        // SAFETY: sends a signal to this process, whose handler tokio installed in `launch`.
        unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
        std::future::pending::<()>().await
    };
    let error = tokio::select! {
        result = launch => result.unwrap_err(),
        _ = terminate => unreachable!(),
    };
    assert_eq!(error.exit_code(), 143, "{error}");
    assert!(!exists(&name), "{name} survived SIGTERM");
}
