//! `agentc build`: builds the profile's image with `docker build`: from the profile's own
//! `[image] build_context`, or, for an agent preset without one, from agentc's bundled context
//! of the agent ([`crate::bundled`] writes it into agentc's cache).
//!
//! Only the cli backend builds: the Engine API's `/build` endpoint takes a single tar context,
//! while a profile's named build contexts (`docker build --build-context NAME=DIR`) need
//! BuildKit's session protocol, which bollard does not speak. `--backend api` is refused.

use std::collections::BTreeMap;
use std::path::Path;

use agentc_lifecycle::images::{self, CONTEXT_LABEL};
use agentc_policy::{Action, LaunchSpec, LoadedProfile};

use crate::bundled::Bundled;
use crate::cli::{BackendArg, BuildArgs, KindArg, LaunchArgs};
use crate::commands::launch;
use crate::context::{self, Failure};

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
        build_args: args.build_args.into_iter().collect(),
    };
    let loaded = context::load_profile(&launch_args.profile)?;
    let (spec, bundled) = context::resolve_build(&loaded, &launch_args)?;
    let code = build_spec(spec, bundled.as_ref())?;
    Ok(agentc_engine::exit_status(i64::from(code)))
}

/// Builds a resolved build launch in the foreground (`docker build`'s progress on the
/// terminal); returns `docker build`'s exit code. Its `bundled` context (as
/// [`context::resolve_build`] returns it with the spec) is written into agentc's cache first
/// and its digest recorded in the image's [`CONTEXT_LABEL`]; building as root is said once
/// (the agent user is then 1000:1000).
pub fn build_spec(mut spec: LaunchSpec, bundled: Option<&Bundled>) -> Result<i32, Failure> {
    let Action::Build(build) = &mut spec.action else {
        return Err(Failure::unlaunchable("not a build launch".to_string()));
    };
    if let Some(bundled) = bundled {
        bundled.ensure_written()?;
        build
            .labels
            .insert(CONTEXT_LABEL.to_string(), bundled.context.digest());
        eprintln!(
            "agentc: building {} from agentc's bundled {} context ({})",
            build.tag,
            bundled.context.agent.as_str(),
            build.context
        );
    }
    let owner = context::current_owner();
    let root = agentc_policy::presets::build_ids(owner.uid, owner.gid).2;
    if root && build.build_args.contains_key("UID") {
        eprintln!("agentc: building as root: the image's agent user is 1000:1000 (build as the user who runs the agent to get your own ids)");
    }
    let tag = build.tag.clone();
    let argv = agentc_backend_cli::render_argv(&spec).map_err(Failure::unlaunchable)?;
    let code = agentc_backend_cli::exec::docker::run_foreground(crate::engine(), &argv)
        .map_err(launch::exec_failure)?;
    if code == 0 {
        println!("built {tag}");
    } else if let Some(bundled) = bundled {
        // The defaults need Docker Hub (the base) and the agent's registry (the package).
        let runtime = match images::agent_image(bundled.context.agent).map(|image| image.kind) {
            Some(images::PackageKind::Pip) => "Python 3",
            _ => "Node.js and npm",
        };
        eprintln!(
            "agentc: the bundled build failed (docker build exited {code})\n  hint: on a machine without Docker Hub or the package registry, pass --build-arg BASE_IMAGE=IMAGE (one with {runtime}) and --build-arg AGENT_PACKAGE=FILE (docs/images.md, \"Without a registry\")"
        );
    }
    Ok(code)
}

/// Builds `image`, the preset's own image of `loaded` (`crate::bundled::is_bundled_image`),
/// from agentc's bundled context, as `agentc build PROFILE` does: `docker build`'s exit code,
/// or `None` when `image` is not the preset's.
pub fn build_missing_preset_image(
    loaded: &LoadedProfile,
    profile: &Path,
    image: &str,
) -> Result<Option<i32>, Failure> {
    if !crate::bundled::is_bundled_image(loaded, image) {
        return Ok(None);
    }
    let launch_args = LaunchArgs {
        profile: profile.to_path_buf(),
        kind: KindArg::Build,
        workspace: None,
        image: None,
        seed_target: None,
        agent_args: Vec::new(),
        overrides: Default::default(),
        build_args: BTreeMap::new(),
    };
    let (spec, bundled) = context::resolve_build(loaded, &launch_args)?;
    build_spec(spec, bundled.as_ref()).map(Some)
}
