//! `agentc build`: builds the profile's image with `docker build`
//! ([`agentc_host::build`]): from the profile's own `[image] build_context`, or, for an agent
//! preset without one, from agentc's bundled context of the agent ([`crate::bundled`] writes
//! it into agentc's cache); this module prints what the build says.
//!
//! Only the cli backend builds: the Engine API's `/build` endpoint takes a single tar context,
//! while a profile's named build contexts (`docker build --build-context NAME=DIR`) need
//! BuildKit's session protocol, which bollard does not speak. `--backend api` is refused.

use agentc_host::build::BuildEvent;
use agentc_policy::{Hinted, LaunchSpec};

use crate::bundled::Bundled;
use crate::cli::{BackendArg, BuildArgs, KindArg, LaunchArgs};
use crate::commands::launch;
use crate::context::{self, Failure};

/// Runs `agentc build`; returns `docker build`'s exit code.
pub fn build(args: BuildArgs) -> Result<u8, Failure> {
    if args.backend == BackendArg::Api {
        return Err(Failure::usage(
            "the api backend does not build images: named build contexts need BuildKit, which the Engine API build endpoint does not offer",
        )
        .hinted("use --backend cli (the default), which runs `docker build`"));
    }
    let launch_args = LaunchArgs {
        profile: args.profile,
        kind: KindArg::Build,
        workspace: None,
        image: args.image,
        seed_target: None,
        agent_args: Vec::new(),
        overrides: Default::default(),
        build_args: args.build_args.into_iter().collect(),
    };
    let loaded = context::load_profile(&launch_args.profile)?;
    let (spec, bundled) = context::resolve_build(&loaded, &launch_args)?;
    let code = build_spec(spec, bundled.as_ref())?;
    Ok(agentc_engine::exit_status(i64::from(code)))
}

/// Builds a resolved build launch in the foreground ([`agentc_host::build::build_image`]),
/// printing what it says; returns `docker build`'s exit code.
pub fn build_spec(spec: LaunchSpec, bundled: Option<&Bundled>) -> Result<i32, Failure> {
    agentc_host::build::build_image(
        crate::engine(),
        &super::launch::process_env(),
        spec,
        bundled,
        &mut print_build,
    )
}

/// Prints what a build says: its notes on stderr, `built TAG` on stdout.
pub fn print_build(event: BuildEvent<'_>) {
    match event {
        BuildEvent::Note(line) => launch::notify(line),
        BuildEvent::Failed(failed) => launch::notify(&failed.with_hint().to_string()),
        BuildEvent::Built(tag) => println!("built {tag}"),
    }
}
