//! `agentc rm`: removes containers agentc launched, and only those.

use agentc_backend_api::RemoveTarget;

use crate::cli::RmArgs;
use crate::commands::launch;
use crate::context::Failure;

/// Runs `agentc rm`: every named container is checked (it must exist and carry the
/// `io.agentc.profile` label) before any is removed; prints the names removed.
pub fn rm(args: RmArgs) -> Result<u8, Failure> {
    let target = if args.all {
        if !args.names.is_empty() {
            return Err(Failure::usage("pass container names or --all, not both"));
        }
        RemoveTarget::All
    } else {
        RemoveTarget::Names(args.names)
    };
    let runtime = launch::runtime()?;
    let removed = runtime.block_on(async {
        let docker = launch::connect().await?;
        agentc_backend_api::remove(&docker, &target)
            .await
            .map_err(launch::exec_failure)
    })?;
    for name in removed {
        println!("removed {name}");
    }
    Ok(0)
}
