//! The build `agentc build` runs, for the command line and library callers alike: a resolved
//! build launch run by the engine's command line in the foreground (`docker build`'s progress
//! on the terminal), its bundled context written into agentc's cache first
//! ([`build_image`]); and the preset's own image built from that context when `agentc apply`
//! finds it missing ([`build_preset_image`]). What a build says goes to the caller's `say`
//! ([`BuildEvent`]).
//!
//! Only the command line builds: the Engine API's `/build` endpoint takes a single tar
//! context, while a profile's named build contexts (`docker build --build-context NAME=DIR`)
//! need BuildKit's session protocol, which bollard does not speak.

use std::collections::BTreeMap;
use std::path::Path;

use agentc_engine::Engine;
use agentc_lifecycle::images::{self, CONTEXT_LABEL};
use agentc_policy::{Action, Hint, LaunchKind, LaunchSpec, LoadedProfile};

use crate::backend::exec_failure;
use crate::bundled::{is_bundled_image, Bundled};
use crate::{current_owner, resolve_build, Failure, LaunchRequest};

/// What a build says as it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildEvent<'a> {
    /// A line for the caller's log (the bundled context built from, building as root).
    Note(&'a str),
    /// Why a bundled build failed, with what to pass instead as its hint.
    Failed(&'a Hint<String>),
    /// The image tagged this was built (`built TAG`).
    Built(&'a str),
}

/// Builds a resolved build launch with `engine`'s command line in the foreground (run with
/// `env` on top of agentc's environment: where the caller's engine is); returns
/// `docker build`'s exit code. Its `bundled` context (as [`resolve_build`] returns it with the
/// spec) is written into agentc's cache first and its digest recorded in the image's
/// [`CONTEXT_LABEL`]; building as root is said once (the agent user is then 1000:1000).
pub fn build_image(
    engine: Engine,
    env: &BTreeMap<String, String>,
    mut spec: LaunchSpec,
    bundled: Option<&Bundled>,
    say: &mut dyn FnMut(BuildEvent<'_>),
) -> Result<i32, Failure> {
    let Action::Build(build) = &mut spec.action else {
        return Err(Failure::unlaunchable(Hint::none("not a build launch")));
    };
    if let Some(bundled) = bundled {
        bundled.ensure_written()?;
        build
            .labels
            .insert(CONTEXT_LABEL.to_string(), bundled.context.digest());
        say(BuildEvent::Note(&format!(
            "building {} from agentc's bundled {} context ({})",
            build.tag,
            bundled.context.agent.as_str(),
            build.context
        )));
    }
    let owner = current_owner();
    let root = agentc_policy::presets::build_ids(owner.uid, owner.gid).2;
    if root && build.build_args.contains_key("UID") {
        say(BuildEvent::Note("building as root: the image's agent user is 1000:1000 (build as the user who runs the agent to get your own ids)"));
    }
    let tag = build.tag.clone();
    let argv = agentc_backend_cli::render_argv(&spec)
        .map_err(|error| Failure::from_hinted(crate::failure::EXIT_INVALID, &error))?;
    let code = agentc_backend_cli::exec::docker::run_foreground(engine, env, &argv)
        .map_err(exec_failure)?;
    if code == 0 {
        say(BuildEvent::Built(&tag));
    } else if let Some(bundled) = bundled {
        // The defaults need Docker Hub (the base) and the agent's registry (the package).
        let runtime = match images::agent_image(bundled.context.agent).map(|image| image.kind) {
            Some(images::PackageKind::Pip) => "Python 3",
            _ => "Node.js and npm",
        };
        say(BuildEvent::Failed(&Hint::new(
            format!("the bundled build failed (docker build exited {code})"),
            format!(
                "on a machine without Docker Hub or the package registry, pass --build-arg \
                 BASE_IMAGE=IMAGE (one with {runtime}) and --build-arg AGENT_PACKAGE=FILE \
                 (docs/images.md, \"Without a registry\")"
            ),
        )));
    }
    Ok(code)
}

/// Builds `image`, the preset's own image of `loaded` ([`is_bundled_image`]), from agentc's
/// bundled context, as `agentc build PROFILE` does ([`build_image`]): `docker build`'s exit
/// code, or `None` (nothing run) when `image` is not the preset's.
pub fn build_preset_image(
    engine: Engine,
    env: &BTreeMap<String, String>,
    loaded: &LoadedProfile,
    profile: &Path,
    image: &str,
    say: &mut dyn FnMut(BuildEvent<'_>),
) -> Result<Option<i32>, Failure> {
    if !is_bundled_image(loaded, image) {
        return Ok(None);
    }
    let request = LaunchRequest {
        kind: LaunchKind::Build,
        ..LaunchRequest::new(profile)
    };
    let (spec, bundled) = resolve_build(loaded, &request)?;
    build_image(engine, env, spec, bundled.as_ref(), say).map(Some)
}
