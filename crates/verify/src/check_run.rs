//! Running one check container to its end and reading its stdout, over the [engine
//! port](agentc_engine::port): the egress checks ([`super::egress`]) and the host-path
//! row ([`super::host_path`]) both run their containers this way. A leaf: it depends on
//! neither.

use std::collections::BTreeMap;
use std::time::Duration;

use agentc_engine::port::EnginePort;
use agentc_policy::ContainerSpec;

/// How long a check container may run (its checks are bounded by a few seconds each).
const EGRESS_CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs a check container of `spec` (which names it) to its end, started detached, waited for
/// at most [`EGRESS_CHECK_TIMEOUT`], and returns what it wrote on stdout; the caller removes
/// it. `Err` says why it did not run.
pub(super) async fn check_output<P: EnginePort>(
    port: &P,
    spec: &ContainerSpec,
) -> Result<String, String> {
    let name = spec
        .name
        .as_deref()
        .ok_or("the check container has no name")?;
    port.run_detached(spec, &BTreeMap::new())
        .await
        .map_err(|error| error.to_string())?;
    tokio::time::timeout(EGRESS_CHECK_TIMEOUT, port.wait(name))
        .await
        .map_err(|_| {
            format!(
                "the check container did not finish within {} seconds",
                EGRESS_CHECK_TIMEOUT.as_secs()
            )
        })?
        .map_err(|error| error.to_string())?;
    port.logs(name, false)
        .await
        .map_err(|error| error.to_string())
}
