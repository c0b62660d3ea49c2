//! `agentc build`: builds the profile's image with `docker build`.
//!
//! Only the cli backend builds: the Engine API's `/build` endpoint takes a single tar context,
//! while a profile's named build contexts (`docker build --build-context NAME=DIR`) need
//! BuildKit's session protocol, which bollard does not speak. `--backend api` is refused.

use crate::cli::{BackendArg, BuildArgs, KindArg, LaunchArgs};
use crate::commands::launch;
use crate::context::{self, Failure};
use agentc_policy::Action;

/// Runs `agentc build`; returns `docker build`'s exit code.
pub fn build(args: BuildArgs) -> Result<u8, Failure> {
    if args.backend == BackendArg::Api {
        return Err(Failure::usage(
            "the api backend does not build images: named build contexts need BuildKit, which the Engine API build endpoint does not offer\n  hint: use --backend cli (the default), which runs `docker build`",
        ));
    }
    let launch_args = LaunchArgs {
        profile: args.profile,
        kind: KindArg::Build,
        workspace: None,
        image: args.image,
        seed_target: None,
        agent_args: Vec::new(),
        overrides: Default::default(),
    };
    let loaded = context::load_profile(&launch_args.profile)?;
    let spec = context::resolve_launch(&loaded, &launch_args)?;
    let argv = agentc_backend_cli::render_argv(&spec).map_err(Failure::unlaunchable)?;
    let code = agentc_backend_cli::exec::docker::run_foreground(crate::engine(), &argv)
        .map_err(launch::exec_failure)?;
    if code == 0 {
        if let Action::Build(build) = &spec.action {
            println!("built {}", build.tag);
        }
    }
    Ok(agentc_backend_common::exit_status(i64::from(code)))
}
