//! `agentc verify`: launches the profile's run with the probe in place of the agent, reads its
//! output and `docker inspect`, removes it, and compares (see [`crate::verify`]).
//!
//! The probe container always has a name (the spec's plus `-verify`, or
//! `agentc-verify-<profile>-<pid>`), so it can be removed whatever happens: after the
//! comparison, on any error, and on SIGINT or SIGTERM (exit 130 or 143).

use std::time::Duration;

use agentc_backend_api::exec::LaunchOptions;
use agentc_policy::{Action, ContainerSpec, LaunchSpec};
use bollard::query_parameters::{
    LogsOptionsBuilder, RemoveContainerOptionsBuilder, WaitContainerOptionsBuilder,
};
use futures_util::StreamExt;
use tokio::signal::unix::{signal, SignalKind};

use crate::cli::{BackendArg, KindArg, LaunchArgs, VerifyArgs};
use crate::commands::launch::{self, SignalShield};
use crate::context::{self, Failure, EXIT_DOCKER, EXIT_FAILED};
use crate::verify;

/// How long the probe may run before verify gives up.
const PROBE_TIMEOUT: Duration = Duration::from_secs(120);

/// What the probe left: its output, its exit code and `docker inspect`.
#[derive(Debug)]
struct Probed {
    logs: String,
    exit_code: i64,
    inspect: serde_json::Value,
}

/// Runs `agentc verify`: prints the table; 0 when every check passed, 1 otherwise.
pub fn verify(args: VerifyArgs) -> Result<u8, Failure> {
    let launch_args = LaunchArgs {
        profile: args.profile,
        kind: KindArg::Run,
        workspace: args.workspace,
        image: args.image,
        seed_target: None,
        agent_args: Vec::new(),
    };
    let loaded = context::load_profile(&launch_args.profile)?;
    let spec = context::resolve_launch(&loaded, &launch_args)?;
    let container = launch::container_of(&spec)?.clone();
    let mut probe = verify::probe_spec(&container);
    let name = probe
        .name
        .get_or_insert_with(|| format!("agentc-verify-{}-{}", spec.profile, std::process::id()))
        .clone();
    let probed = match args.backend {
        BackendArg::Cli => probe_cli(&spec, &probe, &name)?,
        BackendArg::Api => probe_api(&probe, &name)?,
    };
    let observed = verify::parse_probe(&probed.logs).map_err(|error| {
        Failure::new(
            EXIT_FAILED,
            format!(
                "the probe in {name} did not report (exit {}): {error}\n  hint: the image needs /bin/sh and busybox or coreutils; its output was:\n{}",
                probed.exit_code,
                tail(&probed.logs)
            ),
        )
    })?;
    let checks = verify::compare(&container, &observed, &probed.inspect);
    print!("{}", verify::render_table(&checks));
    Ok(if checks.iter().all(|check| check.ok) {
        0
    } else {
        EXIT_FAILED
    })
}

fn tail(logs: &str) -> String {
    let lines: Vec<&str> = logs.lines().collect();
    lines[lines.len().saturating_sub(10)..]
        .iter()
        .map(|line| format!("    {line}\n"))
        .collect()
}

/// Removes the probe container when dropped: after success, on error and on a signal.
struct RemoveOnDrop<'a> {
    name: &'a str,
}

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        let _ = std::process::Command::new("docker")
            .args(["rm", "--force", self.name])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

fn interrupted(signal: libc::c_int, name: &str) -> Failure {
    let (code, signal_name) = if signal == libc::SIGTERM {
        (143, "SIGTERM")
    } else {
        (130, "SIGINT")
    };
    Failure::new(
        code,
        format!("interrupted by {signal_name}; removed container {name}"),
    )
}

/// The probe through the docker CLI: `docker run --detach ...` exactly as rendered, then
/// `docker wait`, `docker logs` and `docker inspect`.
fn probe_cli(spec: &LaunchSpec, probe: &ContainerSpec, name: &str) -> Result<Probed, Failure> {
    agentc_backend_api::exec::resolve_env(probe, &launch::process_env())
        .map_err(launch::exec_failure)?;
    let probe_launch = LaunchSpec {
        action: Action::Container(Box::new(probe.clone())),
        ..spec.clone()
    };
    let argv = agentc_backend_cli::render_argv(&probe_launch).map_err(Failure::unlaunchable)?;
    launch::require_image_cli(&probe.image)?;
    let shield = SignalShield::new(true);
    let _remove = RemoveOnDrop { name };
    let check = |shield: &SignalShield| match shield.received() {
        Some(signal) => Err(interrupted(signal, name)),
        None => Ok(()),
    };
    let args: Vec<&str> = argv.iter().skip(1).map(String::as_str).collect();
    let started = launch::docker_output(&args);
    check(&shield)?;
    started?;
    let waited = launch::docker_output(&["wait", name]);
    check(&shield)?;
    let exit_code = waited?.trim().parse::<i64>().unwrap_or(-1);
    let logs = launch::docker_output(&["logs", name]);
    check(&shield)?;
    let logs = logs.map_err(|failure| cannot_read_logs(name, &failure.message))?;
    let inspect_text = launch::docker_output(&["inspect", "--type", "container", name])?;
    let inspect = serde_json::from_str::<serde_json::Value>(&inspect_text)
        .ok()
        .and_then(|value| value.as_array().and_then(|array| array.first().cloned()))
        .ok_or_else(|| Failure::new(EXIT_DOCKER, format!("cannot read `docker inspect {name}`")))?;
    check(&shield)?;
    Ok(Probed {
        logs,
        exit_code,
        inspect,
    })
}

fn cannot_read_logs(name: &str, message: &str) -> Failure {
    Failure::new(
        EXIT_FAILED,
        format!(
            "cannot read the probe's output from {name}: {message}\n  hint: verify reads `docker logs`; a log driver that keeps no logs cannot be verified"
        ),
    )
}

/// The probe through the Engine API: `launch` creates and starts it (detached), then wait,
/// logs and inspect through bollard; SIGINT and SIGTERM remove it.
fn probe_api(probe: &ContainerSpec, name: &str) -> Result<Probed, Failure> {
    let runtime = launch::runtime()?;
    let env = launch::process_env();
    // `launch` removes what it created when it fails; after it returns, this removes the probe.
    runtime.block_on(async {
        let docker = launch::connect().await?;
        // Listen before anything is created: a signal between steps is then never lost.
        let listen = |kind| {
            signal(kind).map_err(|error| {
                Failure::new(EXIT_DOCKER, format!("cannot listen for signals: {error}"))
            })
        };
        let mut sigint = listen(SignalKind::interrupt())?;
        let mut sigterm = listen(SignalKind::terminate())?;
        let options = LaunchOptions {
            env,
            stdin_is_terminal: false,
        };
        let outcome = agentc_backend_api::launch(&docker, probe, &options)
            .await
            .map_err(launch::exec_failure)?;
        let id = outcome.container_id;
        let observe = async {
            let wait = async {
                let options = WaitContainerOptionsBuilder::new()
                    .condition("not-running")
                    .build();
                match docker.wait_container(&id, Some(options)).next().await {
                    Some(Ok(response)) => Ok(response.status_code),
                    Some(Err(bollard::errors::Error::DockerContainerWaitError {
                        code, ..
                    })) => Ok(code),
                    Some(Err(error)) => Err(Failure::new(
                        EXIT_DOCKER,
                        format!("cannot wait for {name}: {error}"),
                    )),
                    None => Err(Failure::new(
                        EXIT_DOCKER,
                        format!("the wait for {name} ended without a status"),
                    )),
                }
            };
            let exit_code = tokio::time::timeout(PROBE_TIMEOUT, wait)
                .await
                .map_err(|_| {
                    Failure::new(
                        EXIT_FAILED,
                        format!(
                            "the probe in {name} did not finish within {} seconds",
                            PROBE_TIMEOUT.as_secs()
                        ),
                    )
                })??;
            let options = LogsOptionsBuilder::new().stdout(true).stderr(true).build();
            let mut stream = docker.logs(&id, Some(options));
            let mut logs = String::new();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|error| cannot_read_logs(name, &error.to_string()))?;
                logs.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
            }
            let inspect = docker.inspect_container(&id, None).await.map_err(|error| {
                Failure::new(EXIT_DOCKER, format!("cannot inspect {name}: {error}"))
            })?;
            let inspect = serde_json::to_value(&inspect).map_err(|error| {
                Failure::new(
                    EXIT_DOCKER,
                    format!("cannot read the inspect of {name}: {error}"),
                )
            })?;
            Ok::<_, Failure>(Probed {
                logs,
                exit_code,
                inspect,
            })
        };
        let result = tokio::select! {
            result = observe => result,
            _ = sigint.recv() => Err(interrupted(libc::SIGINT, name)),
            _ = sigterm.recv() => Err(interrupted(libc::SIGTERM, name)),
        };
        let remove = RemoveContainerOptionsBuilder::new().force(true).build();
        let _ = docker.remove_container(&id, Some(remove)).await;
        result
    })
}
