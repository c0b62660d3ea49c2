//! `agentc rm`: removes containers agentc launched, and only those; with `--volumes`, also
//! agentc's volumes they mount.

use agentc_backend_api::RemoveTarget;

use crate::cli::RmArgs;
use crate::commands::launch;
use crate::context::Failure;

/// Runs `agentc rm`: every named container is checked (it must exist and carry the
/// `io.agentc.profile` label) before any is removed; prints the names removed. With
/// `--volumes`, the agentc volumes (labelled `io.agentc.profile`) those containers mount are
/// removed after them (with `--all`, every agentc volume that no container uses; with
/// `--all --profile P`, those of profile P). Removals run concurrently on one connection pool.
pub fn rm(args: RmArgs) -> Result<u8, Failure> {
    let target = if args.all {
        if !args.names.is_empty() {
            return Err(Failure::usage("pass container names or --all, not both"));
        }
        match args.profile {
            Some(profile) => RemoveTarget::Profile(profile),
            None => RemoveTarget::All,
        }
    } else {
        RemoveTarget::Names(args.names)
    };
    let runtime = launch::runtime()?;
    let (removed, volumes) = runtime.block_on(async {
        let docker = launch::connect().await?;
        let volumes = match (&target, args.volumes) {
            (_, false) => Vec::new(),
            (RemoveTarget::All | RemoveTarget::Profile(_), true) => {
                agentc_backend_api::list_volumes(&docker)
                    .await
                    .map_err(launch::exec_failure)?
                    .into_iter()
                    .filter(|(_, profile)| match &target {
                        RemoveTarget::Profile(wanted) => profile == wanted,
                        _ => true,
                    })
                    .map(|(name, _)| name)
                    .collect()
            }
            (RemoveTarget::Names(names), true) => agentc_backend_api::volumes_of(&docker, names)
                .await
                .map_err(launch::exec_failure)?,
        };
        let removed = agentc_backend_api::remove(&docker, &target)
            .await
            .map_err(launch::exec_failure)?;
        let skip_in_use = matches!(target, RemoveTarget::All | RemoveTarget::Profile(_));
        let volumes = agentc_backend_api::remove_volumes(&docker, &volumes, skip_in_use)
            .await
            .map_err(launch::exec_failure)?;
        Ok::<_, Failure>((removed, volumes))
    })?;
    for name in removed {
        println!("removed {name}");
    }
    for volume in volumes {
        println!("removed volume {volume}");
    }
    Ok(0)
}
