//! `agentc rm`: removes containers agentc launched, and only those; with `--volumes`, also
//! agentc's volumes they mount. The removal is the library's
//! ([`agentc_host::inventory::Removal`]); this module reads the arguments and prints what it
//! removed.

use std::path::Path;

use agentc_engine::admin::RemoveTarget;
use agentc_host::inventory::{KeptState, Removal};

use crate::cli::RmArgs;
use crate::commands::session::{is_profile_path, on_client};
use crate::context::{self, Failure};

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
        (Some(profile), true) => Some(KeptState::read(profile)?),
        _ => None,
    };
    let images = kept.as_ref().map(KeptState::retained).unwrap_or_default();
    let removed = on_client(
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
    let nothing = removed.containers.is_empty()
        && removed.volumes.is_empty()
        && removed.images.is_empty()
        && state.is_none();
    if let (Some(profile), true) = (profile, nothing) {
        eprintln!("agentc: nothing agentc made for profile {profile} is left to remove");
    }
    for name in removed.containers {
        println!("removed {name}");
    }
    for volume in removed.volumes {
        println!("removed volume {volume}");
    }
    for image in removed.images {
        println!("removed image {image}");
    }
    if let Some(state) = state {
        println!("removed state {}", state.display());
    }
    Ok(0)
}
