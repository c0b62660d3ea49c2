//! `agentc verify`: launches the profile's run with the probe in place of the agent, reads its
//! output and `docker inspect`, removes it, and compares (see [`crate::verify`]).
//!
//! The probe container always has a name (the spec's plus `-verify`, or
//! `agentc-verify-<profile>-<pid>`), so it can be removed whatever happens: after the
//! comparison, on any error, and on SIGINT or SIGTERM (exit 130 or 143).
//!
//! [`verify_launch`] is the whole flow for one resolved launch; the command and the live
//! conformance tests (`tests/tests/live_verify.rs`) both call it.

use std::collections::BTreeMap;
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

/// The processes the probe needs at once: its shell and one command (`id`, `cat`, a tmpfs
/// script). Measured: the probe reports in full under `--pids-limit 2`; under 1 the shell's
/// first fork fails and it stops after `PROBE=1`.
pub const PROBE_PIDS: u32 = 2;

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
    let checks = verify_launch(&spec, args.backend, &launch::process_env(), args.pull)?;
    print!("{}", verify::render_table(&checks));
    Ok(if checks.iter().all(|check| check.ok) {
        0
    } else {
        EXIT_FAILED
    })
}

/// Verifies one resolved container launch (a run, a sandbox or a seed) through `backend`:
/// starts [`verify::probe_spec`] of it, waits for the probe, reads its output and
/// `docker inspect`, removes the container, and returns [`verify::compare`]'s checks.
///
/// `env` is where secrets are resolved from, exactly as a launch resolves them: `agentc
/// verify` passes the process environment; the cli backend gives it to `docker run` on top of
/// the inherited one. The probe container is named after the spec (`NAME-verify`) or
/// `agentc-verify-<profile>-<pid>`; it is removed on success, on error and on SIGINT or
/// SIGTERM (a failure with exit 130 or 143). A build launch is refused. With `pull`, a
/// missing image is pulled first, as `agentc run --pull` does; without, it is refused.
pub fn verify_launch(
    spec: &LaunchSpec,
    backend: BackendArg,
    env: &BTreeMap<String, String>,
    pull: bool,
) -> Result<Vec<verify::Check>, Failure> {
    let container = launch::container_of(spec)?;
    require_probe_room(&spec.profile, container.resources.pids_limit)?;
    let mut probe = verify::probe_spec(container);
    let name = probe
        .name
        .get_or_insert_with(|| format!("agentc-verify-{}-{}", spec.profile, std::process::id()))
        .clone();
    let probed = match backend {
        BackendArg::Cli => probe_cli(spec, &probe, &name, env, pull)?,
        BackendArg::Api => probe_api(&probe, &name, env, pull)?,
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
    Ok(verify::compare(container, &observed, &probed.inspect))
}

/// Refuses, before anything is created, a launch whose pids limit leaves the probe no room to
/// fork: it would stop after its first line and say nothing about the container.
fn require_probe_room(profile: &str, pids_limit: Option<u32>) -> Result<(), Failure> {
    match pids_limit {
        Some(limit) if limit < PROBE_PIDS => Err(Failure::new(
            EXIT_FAILED,
            format!(
                "profile {:?}: resources.pids_limit = {limit} leaves the probe no process to run its commands (it needs {PROBE_PIDS})\n  hint: verify cannot observe this launch; verify a copy of the profile with pids_limit = {PROBE_PIDS} to check everything else",
                profile
            ),
        )),
        _ => Ok(()),
    }
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
fn probe_cli(
    spec: &LaunchSpec,
    probe: &ContainerSpec,
    name: &str,
    env: &BTreeMap<String, String>,
    pull: bool,
) -> Result<Probed, Failure> {
    agentc_backend_api::exec::resolve_env(probe, env).map_err(launch::exec_failure)?;
    let probe_launch = LaunchSpec {
        action: Action::Container(Box::new(probe.clone())),
        ..spec.clone()
    };
    let argv = agentc_backend_cli::render_argv(&probe_launch).map_err(Failure::unlaunchable)?;
    launch::ensure_image_cli(&probe.image, pull)?;
    let shield = SignalShield::new(true);
    let _remove = RemoveOnDrop { name };
    let check = |shield: &SignalShield| match shield.received() {
        Some(signal) => Err(interrupted(signal, name)),
        None => Ok(()),
    };
    let args: Vec<&str> = argv.iter().skip(1).map(String::as_str).collect();
    let started = launch::docker_output_with_env(&args, env);
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
fn probe_api(
    probe: &ContainerSpec,
    name: &str,
    env: &BTreeMap<String, String>,
    pull: bool,
) -> Result<Probed, Failure> {
    let runtime = launch::runtime()?;
    let env = env.clone();
    // `launch` removes what it created when it fails; after it returns, this removes the probe.
    runtime.block_on(async {
        let docker = launch::connect().await?;
        launch::ensure_image_api(&docker, &probe.image, pull).await?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: `agentc verify fixtures/valid/sandbox-cpus-max.toml` (pids_limit = 1)
    /// reported "the probe was cut short" after the shell's first fork failed.
    #[test]
    fn a_pids_limit_below_the_probes_needs_is_refused_before_launch() {
        let failure = require_probe_room("tiny", Some(1)).unwrap_err();
        assert_eq!(failure.code, EXIT_FAILED);
        assert!(
            failure
                .message
                .starts_with("profile \"tiny\": resources.pids_limit = 1 leaves the probe"),
            "{}",
            failure.message
        );
        for pids in [None, Some(PROBE_PIDS), Some(512)] {
            assert!(require_probe_room("tiny", pids).is_ok(), "{pids:?}");
        }
    }
}
