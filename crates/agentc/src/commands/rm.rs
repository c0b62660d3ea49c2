//! `agentc rm`: removes containers agentc launched, and only those; with `--volumes`, also
//! agentc's volumes they mount.

use std::path::Path;

use agentc_engine::admin::{self, RemoveTarget};
use agentc_engine::session::{Sandboxes, SessionPort};
use agentc_engine::ExecError;

use crate::cli::RmArgs;
use crate::commands::launch;
use crate::commands::session::{is_profile_path, on_client, sandbox_named, OnClient};
use crate::context::{self, Failure};
use crate::lifecycle::store;
use agentc_lifecycle::state::State;

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
    // What `apply` keeps, under its lock: no apply or rollback runs meanwhile.
    let kept = match (&profile, args.state) {
        (Some(profile), true) => Some(Kept::read(profile)?),
        _ => None,
    };
    let images = kept.as_ref().map(Kept::retained).unwrap_or_default();
    let (removed, volumes, images) = on_client(
        args.backend,
        Removal {
            target,
            volumes: args.volumes,
            images,
        },
    )?;
    let state = match kept {
        Some(kept) => kept.remove()?,
        None => None,
    };
    let nothing = removed.is_empty() && volumes.is_empty() && images.is_empty() && state.is_none();
    if let (Some(profile), true) = (profile, nothing) {
        eprintln!("agentc: nothing agentc made for profile {profile} is left to remove");
    }
    for name in removed {
        println!("removed {name}");
    }
    for volume in volumes {
        println!("removed volume {volume}");
    }
    for image in images {
        println!("removed image {image}");
    }
    if let Some(state) = state {
        println!("removed state {}", state.display());
    }
    Ok(0)
}

/// A profile's deployment state as `agentc apply` keeps it, read under its lock
/// (`rm --state`).
struct Kept {
    path: std::path::PathBuf,
    _guard: store::StateLock,
    state: State,
}

impl Kept {
    fn read(profile: &str) -> Result<Kept, Failure> {
        let (path, guard, state) = super::apply::locked_state(profile)?;
        Ok(Kept {
            path,
            _guard: guard,
            state,
        })
    }

    /// The tags of the previous images its deployments kept for a rollback, each once.
    fn retained(&self) -> Vec<String> {
        let mut tags: Vec<String> = self
            .state
            .deployments
            .iter()
            .filter_map(|deployment| deployment.retained_tag.clone())
            .collect();
        tags.sort();
        tags.dedup();
        tags
    }

    /// Removes the state file (and its lock file); its path when there was one.
    fn remove(self) -> Result<Option<std::path::PathBuf>, Failure> {
        let lock = store::state_lock_file(&self.path);
        let removed = match std::fs::remove_file(&self.path) {
            Ok(()) => Some(self.path.clone()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => {
                return Err(Failure::new(
                    context::EXIT_FAILED,
                    format!("cannot remove {}: {error}", self.path.display()),
                ))
            }
        };
        drop(self);
        let _ = std::fs::remove_file(lock);
        Ok(removed)
    }
}

/// Removes `target` through the client's port ([`admin::remove`], written once for both
/// backends), with the volumes it mounts when `volumes`; the containers and volumes removed.
struct Removal {
    target: RemoveTarget,
    volumes: bool,
    /// Image tags to remove (`--state`: the previous images `apply` kept).
    images: Vec<String>,
}

impl OnClient for Removal {
    type Output = (Vec<String>, Vec<String>, Vec<String>);

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Self::Output, Failure> {
        let Removal {
            target,
            volumes,
            images,
        } = self;
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
        let mut removed_images = Vec::new();
        for image in images {
            let present = port
                .image_exists(&image)
                .await
                .map_err(|error| launch::exec_failure(error.at("inspect a retained image")))?;
            if present {
                port.remove_image(&image)
                    .await
                    .map_err(|error| launch::exec_failure(error.at("remove a retained image")))?;
                removed_images.push(image);
            }
        }
        Ok((removed, volumes, removed_images))
    }
}
