//! `agentc run`: resolve the run launch (custom agents become the detached sandbox) and
//! execute it, or `--count` detached copies of it.

use std::io::IsTerminal;

use agentc_policy::{Instance, Start};

use crate::cli::{KindArg, LaunchArgs, RunArgs};
use crate::commands::launch;
use crate::context::{self, Failure};
use crate::lifecycle::gather;

/// Runs `agentc run`; returns the container's exit code (0 for a started detached launch).
pub fn run(args: RunArgs) -> Result<u8, Failure> {
    // An input of resolve, with the environment's overrides (in place of its
    // AGENTC_ISOLATION_MIN).
    let overrides = args
        .isolation_min
        .iter()
        .map(|tier| {
            (
                agentc_policy::overrides::ISOLATION_MIN.to_string(),
                tier.clone(),
            )
        })
        .collect();
    let launch_args = LaunchArgs {
        profile: args.profile,
        kind: KindArg::Run,
        workspace: args.workspace,
        image: args.image,
        seed_target: None,
        agent_args: args.agent_args,
        overrides,
        build_args: Default::default(),
    };
    let loaded = context::load_profile(&launch_args.profile)?;
    gather::refuse_unlocked(
        args.locked,
        &loaded,
        &launch_args.profile,
        gather::Workspace::Given(launch_args.workspace.as_deref()),
        launch_args.image.as_deref(),
        &launch_args.overrides,
        args.backend,
    )?;
    // How this invocation starts the container is an input of resolve: the spec it returns
    // is the one launched, its digest the one `plan` and `lock` show.
    let detach = args.detach || args.count > 1;
    let stdin_is_terminal = std::io::stdin().is_terminal();
    let profile_record = context::profile_record(&launch_args.profile);
    let instance = |copy: Option<u16>| Instance {
        start: if detach {
            Start::Detached
        } else {
            Start::AsLaunched
        },
        default_name: detach
            .then(|| format!("agentc-run-{}-{}", loaded.profile.name, std::process::id())),
        name: args.name.clone(),
        copy,
        stdin_is_terminal,
        profile_record: profile_record.clone(),
        own_home: false,
    };
    let spec = context::resolve_instance(&loaded, &launch_args, instance(None))?;
    if !args.no_warnings {
        for line in launch::finding_warnings(&agentc_policy::findings(&loaded, &spec)) {
            eprintln!("{line}");
        }
    }
    if args.count > 1 {
        let copies = (1..=args.count)
            .map(|copy| context::resolve_instance(&loaded, &launch_args, instance(Some(copy))))
            .collect::<Result<Vec<_>, Failure>>()?;
        return launch::execute_copies(&copies, args.backend, args.pull, usize::from(args.jobs));
    }
    let mut placed = None;
    if args.count == 1 {
        let claimed = super::pool::try_claim(super::pool::ClaimRequest {
            loaded: &loaded,
            profile: &launch_args.profile,
            image: launch_args.image.clone(),
            overrides: &launch_args.overrides,
            spec: &spec,
            mode: args.pool,
            backend: args.backend,
            name: args.name.clone(),
        })?;
        match claimed {
            super::pool::Claimed::Warm(status) => return Ok(status),
            // The floor the claim met, not asked of the engine again.
            super::pool::Claimed::Cold(met) => placed = met.map(|met| *met),
        }
    }
    launch::execute_placed(&spec, placed, args.backend, args.pull)
}
