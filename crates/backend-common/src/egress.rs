//! The steps both executors take around setting up an egress companion
//! ([`agentc_policy::EgressSpec`]): preparing the spec (a per-run instance, the engines it
//! cannot run on) and moving it to another subnet when the daemon says its subnet is taken.
//! The set-up itself (network, proxy, health check) is each backend's own.

use agentc_policy::ContainerSpec;

use crate::engine::{engine, Engine};
use crate::error::ExecError;

/// The first step of a companion's set-up, as its error names it: the one a taken subnet fails.
pub const CREATE_NETWORK: &str = "create the isolated network";

/// How many other subnets a set-up tries after the daemon says one overlaps another network's.
const SUBNET_RETRIES: u32 = 3;

/// A suffix no other launch of this machine uses at the same time (process id and clock).
pub fn instance_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    format!("{:x}{:04x}", std::process::id(), nanos & 0xffff)
}

/// Readies `spec`'s companion for set-up: `false` when it has none; refused on Podman; moved to
/// an instance of its own when the container has no name (each run gets its set,
/// [`ContainerSpec::egress_instance`]).
pub fn prepare(spec: &mut ContainerSpec) -> Result<bool, ExecError> {
    if spec.egress.is_none() {
        return Ok(false);
    }
    if engine() == Engine::Podman {
        // Not built yet: Podman's networks take other options (no inhibit_ipv4).
        return Err(ExecError::Egress {
            step: "set up the egress proxy",
            message: "egress.enforce = \"outside\" is not available with --engine podman yet"
                .to_string(),
        });
    }
    if spec.name.is_none() {
        spec.egress_instance(&instance_suffix());
    }
    Ok(true)
}

/// After set-up attempt number `attempt` (from 1) failed with `error`: when the daemon said the
/// isolated network's subnet overlaps another network's and retries remain, moves the
/// companion to another subnet (the caller sets up again); otherwise returns the error.
pub fn move_if_subnet_taken(
    spec: &mut ContainerSpec,
    error: ExecError,
    attempt: u32,
) -> Result<(), ExecError> {
    match error {
        ExecError::Egress { step, message }
            if step == CREATE_NETWORK
                && message.contains("overlaps")
                && attempt <= SUBNET_RETRIES =>
        {
            log::debug!("the isolated network's subnet is taken ({message}); trying another");
            spec.egress_instance(&format!("n{attempt}"));
            Ok(())
        }
        error => Err(error),
    }
}
