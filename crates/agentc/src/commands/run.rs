//! `agentc run`: resolve the run launch (custom agents become the detached sandbox) and
//! execute it, or `--count` detached copies of it.

use std::io::IsTerminal;

use crate::cli::{KindArg, LaunchArgs, RunArgs};
use crate::commands::launch;
use crate::context::{self, Failure};
use crate::lifecycle::gather;

/// Runs `agentc run`; returns the container's exit code (0 for a started detached launch).
pub fn run(args: RunArgs) -> Result<u8, Failure> {
    let launch_args = LaunchArgs {
        profile: args.profile,
        kind: KindArg::Run,
        workspace: args.workspace,
        image: args.image,
        seed_target: None,
        agent_args: args.agent_args,
    };
    let loaded = context::load_profile(&launch_args.profile)?;
    gather::refuse_unlocked(
        args.locked,
        &loaded,
        &launch_args.profile,
        gather::Workspace::Given(launch_args.workspace.as_deref()),
        launch_args.image.as_deref(),
        args.backend,
    )?;
    let mut spec = context::resolve_launch(&loaded, &launch_args)?;
    if !args.no_warnings {
        for line in launch::finding_warnings(&agentc_policy::findings(&loaded, &spec)) {
            eprintln!("{line}");
        }
    }
    launch::record_profile(&mut spec, &launch_args.profile);
    if args.detach || args.count > 1 {
        launch::force_detach(&mut spec);
    }
    if args.count > 1 {
        return launch::execute_copies(
            &spec,
            args.backend,
            args.pull,
            usize::from(args.count),
            usize::from(args.jobs),
        );
    }
    launch::adapt_to_terminal(&mut spec, std::io::stdin().is_terminal());
    launch::execute(&spec, args.backend, args.pull)
}
