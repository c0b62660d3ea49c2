//! `agentc seed`: runs the copy-once seed helper for one seed mount, or for all of them.

use crate::cli::{KindArg, LaunchArgs, SeedArgs};
use crate::commands::launch;
use crate::context::{self, Failure, EXIT_INVALID};
use crate::lifecycle::gather;

/// Runs `agentc seed`; 0 when every helper succeeded, else the failing helper's exit code
/// (its own message is on stderr already).
pub fn seed(args: SeedArgs) -> Result<u8, Failure> {
    let loaded = context::load_profile(&args.profile)?;
    gather::refuse_unlocked(
        args.locked,
        &loaded,
        &args.profile,
        gather::Workspace::Locked,
        args.image.as_deref(),
        &std::collections::BTreeMap::new(),
        || crate::commands::launch::lifecycle_engine(args.backend),
    )?;
    let targets = match &args.target {
        Some(target) => vec![target.clone()],
        None => {
            let targets = context::seed_targets(&loaded);
            if targets.is_empty() {
                return Err(Failure::new(
                    EXIT_INVALID,
                    format!("{}: this profile configures no seed mounts", loaded.file),
                )
                .hinted("add a [[mounts]] entry with type = \"seed\""));
            }
            targets
        }
    };
    // Resolve every launch before running any, so a bad mount stops nothing half-way.
    let mut specs = Vec::with_capacity(targets.len());
    for target in &targets {
        let launch_args = LaunchArgs {
            profile: args.profile.clone(),
            kind: KindArg::Seed,
            workspace: None,
            image: args.image.clone(),
            seed_target: Some(target.clone()),
            agent_args: Vec::new(),
            overrides: Default::default(),
            build_args: Default::default(),
        };
        specs.push((target, context::resolve_launch(&loaded, &launch_args)?));
    }
    for (target, spec) in &specs {
        let code = launch::execute(spec, args.backend, args.pull)?;
        if code != 0 {
            return Err(Failure::new(
                code,
                format!(
                    "seed {target}: the seed helper failed (exit {code}); its message is above"
                ),
            ));
        }
        println!("seeded {target}");
    }
    Ok(0)
}
