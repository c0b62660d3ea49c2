//! `agentc rm`: removes containers agentc launched, and only those; with `--volumes`, also
//! agentc's volumes they mount.

use std::path::Path;

use agentc_backend_common::admin::{self, RemoveTarget};
use agentc_backend_common::session::{Sandboxes, SessionPort};
use agentc_backend_common::ExecError;

use crate::cli::RmArgs;
use crate::commands::launch;
use crate::commands::session::{is_profile_path, on_client, sandbox_named, OnClient};
use crate::context::{self, Failure};

/// The containers NAMEs mean, as the session commands read them: a profile file, or a profile's
/// name that no container has (and that leaves nothing of a killed launch to remove), is its
/// one container, running or not; any other name is left to [`admin::remove`].
async fn resolve_names<P: SessionPort>(
    client: &Sandboxes<P>,
    names: Vec<String>,
) -> Result<Vec<String>, Failure> {
    let mut resolved = Vec::new();
    for name in names {
        if is_profile_path(&name) {
            resolved.push(sandbox_named(client, &name, true).await?.name);
            continue;
        }
        // Validate the name alone: only when it is no container, nor the leftovers of one,
        // may it be a profile's name.
        match admin::check_removable(client.port(), std::slice::from_ref(&name)).await {
            Err(ExecError::NoSuchContainer { .. }) => {
                resolved.push(sandbox_named(client, &name, true).await?.name);
            }
            _ => resolved.push(name),
        }
    }
    Ok(resolved)
}

/// Runs `agentc rm`: every named container is checked (it must exist and carry the
/// `io.agentc.profile` label) before any is removed; prints the names removed. With
/// `--volumes`, the agentc volumes (labelled `io.agentc.profile`) those containers mount are
/// removed after them (with `--all`, every agentc volume that no container uses; with
/// `--profile P`, those of profile P). `--profile P` (a profile's name or its file) removes
/// every object labelled with the profile, the networks and CA volumes made per launch
/// included, and says so on stderr when there is none. Removals run concurrently on one
/// connection pool.
pub fn rm(args: RmArgs) -> Result<u8, Failure> {
    let target = match args.profile {
        // A profile file means the profile it names, as a NAME does.
        Some(profile) if is_profile_path(&profile) => {
            RemoveTarget::Profile(context::load_profile(Path::new(&profile))?.profile.name)
        }
        Some(profile) => RemoveTarget::Profile(profile),
        None if args.all => {
            if !args.names.is_empty() {
                return Err(Failure::usage("pass container names or --all, not both"));
            }
            RemoveTarget::All
        }
        None => RemoveTarget::Names(args.names),
    };
    let profile = match &target {
        RemoveTarget::Profile(profile) => Some(profile.clone()),
        _ => None,
    };
    let (removed, volumes) = on_client(
        args.backend,
        Removal {
            target,
            volumes: args.volumes,
        },
    )?;
    if let (Some(profile), true) = (profile, removed.is_empty() && volumes.is_empty()) {
        eprintln!("agentc: nothing agentc made for profile {profile} is left to remove");
    }
    for name in removed {
        println!("removed {name}");
    }
    for volume in volumes {
        println!("removed volume {volume}");
    }
    Ok(0)
}

/// Removes `target` through the client's port ([`admin::remove`], written once for both
/// backends), with the volumes it mounts when `volumes`; the containers and volumes removed.
struct Removal {
    target: RemoveTarget,
    volumes: bool,
}

impl OnClient for Removal {
    type Output = (Vec<String>, Vec<String>);

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Self::Output, Failure> {
        let Removal { target, volumes } = self;
        let port = client.port();
        let target = match target {
            RemoveTarget::Names(names) => RemoveTarget::Names(resolve_names(client, names).await?),
            other => other,
        };
        let volumes = match (&target, volumes) {
            (_, false) => Vec::new(),
            (RemoveTarget::All | RemoveTarget::Profile(_), true) => admin::list_volumes(port)
                .await
                .map_err(launch::exec_failure)?
                .into_iter()
                .filter(|(_, profile)| match &target {
                    RemoveTarget::Profile(wanted) => profile == wanted,
                    _ => true,
                })
                .map(|(name, _)| name)
                .collect(),
            (RemoveTarget::Names(names), true) => admin::volumes_of(port, names)
                .await
                .map_err(launch::exec_failure)?,
        };
        let removed = admin::remove(port, &target)
            .await
            .map_err(launch::exec_failure)?;
        let skip_in_use = matches!(target, RemoveTarget::All | RemoveTarget::Profile(_));
        let volumes = admin::remove_volumes(port, &volumes, skip_in_use)
            .await
            .map_err(launch::exec_failure)?;
        Ok((removed, volumes))
    }
}
