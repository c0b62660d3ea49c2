//! Running one check container to its end and reading its stdout, through either backend:
//! the egress checks ([`super::egress`]) and the host-path row ([`super::host_path`]) both
//! run their containers this way. A leaf: it depends on neither.

use std::collections::BTreeMap;
use std::time::Duration;

use agentc_backend_cli::exec::docker;
use agentc_backend_cli::exec::SignalShield;
use agentc_policy::ContainerSpec;
use bollard::query_parameters::{LogsOptionsBuilder, WaitContainerOptionsBuilder};
use futures_util::StreamExt;

/// How long a check container may run (its checks are bounded by a few seconds each).
const EGRESS_CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs a check container of `spec`, named `name`, to its end through the docker CLI
/// (`docker run --detach`, `wait`, `logs`) and returns what it wrote on stdout; the caller
/// removes it. Stops between steps when a signal arrived.
pub(super) fn check_output_cli(
    spec: &ContainerSpec,
    name: &str,
    shield: &SignalShield,
) -> Result<String, String> {
    let interrupted = || match shield.received() {
        Some(_) => Err("interrupted".to_string()),
        None => Ok(()),
    };
    let argv =
        agentc_backend_cli::exec::engine::launch_argv(spec).map_err(|error| error.to_string())?;
    interrupted()?;
    let args: Vec<&str> = argv.iter().skip(1).map(String::as_str).collect();
    docker::output(&args).map_err(|error| error.to_string())?;
    interrupted()?;
    docker::output(&["wait", name]).map_err(|error| error.to_string())?;
    interrupted()?;
    docker::output(&["logs", name]).map_err(|error| error.to_string())
}

/// Runs a check container of `spec` to its end through the Engine API (`launch`, a wait of at
/// most [`EGRESS_CHECK_TIMEOUT`], logs) and returns what it wrote on stdout; the caller's
/// companion removal (by the `io.agentc.egress-for` label) removes it.
pub(super) async fn check_output_api(
    docker: &bollard::Docker,
    spec: &ContainerSpec,
) -> Result<String, String> {
    let options = agentc_backend_api::LaunchOptions {
        env: BTreeMap::new(),
        stdin_is_terminal: false,
    };
    let id = agentc_backend_api::launch(docker, spec, &options)
        .await
        .map_err(|error| error.to_string())?
        .container_id;
    let wait = async {
        let options = WaitContainerOptionsBuilder::new()
            .condition("not-running")
            .build();
        let _ = docker.wait_container(&id, Some(options)).next().await;
    };
    tokio::time::timeout(EGRESS_CHECK_TIMEOUT, wait)
        .await
        .map_err(|_| {
            format!(
                "the check container did not finish within {} seconds",
                EGRESS_CHECK_TIMEOUT.as_secs()
            )
        })?;
    let options = LogsOptionsBuilder::new().stdout(true).build();
    let mut stream = docker.logs(&id, Some(options));
    let mut logs = String::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|error| error.to_string())?;
        logs.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
    }
    Ok(logs)
}
