//! The command line's side of [`agentc_host`] (what a launch depends on from the machine):
//! its failures and exit statuses, and its resolving functions taking the command line's
//! [`LaunchArgs`] where the library takes a [`agentc_host::LaunchRequest`].

use std::path::Path;

use agentc_policy::{Instance, LaunchSpec, LoadedProfile, ResolveInputs};

pub use agentc_host::{
    agentc_environment, current_owner, file_sha256, load_profile, locked_path, profile_record,
    resolve_inputs, seed_targets, Failure, EXIT_DOCKER, EXIT_FAILED, EXIT_INVALID, EXIT_NO_INPUT,
    EXIT_USAGE,
};

use crate::bundled::Bundled;
use crate::cli::{KindArg, LaunchArgs};

/// Every launch a profile supports ([`agentc_host::every_launch`]); `agentc validate` checks
/// them all.
pub fn every_launch(loaded: &LoadedProfile, profile: &Path) -> Vec<LaunchArgs> {
    agentc_host::every_launch(loaded, profile)
        .into_iter()
        .map(LaunchArgs::from)
        .collect()
}

/// [`agentc_host::resolve_launch`] of `args`.
pub fn resolve_launch(loaded: &LoadedProfile, args: &LaunchArgs) -> Result<LaunchSpec, Failure> {
    agentc_host::resolve_launch(loaded, &args.request())
}

/// [`agentc_host::resolve_launch_unowned`] of `args`.
pub fn resolve_launch_unowned(
    loaded: &LoadedProfile,
    args: &LaunchArgs,
) -> Result<LaunchSpec, Failure> {
    agentc_host::resolve_launch_unowned(loaded, &args.request())
}

/// [`agentc_host::resolve_instance`] of `args`.
pub fn resolve_instance(
    loaded: &LoadedProfile,
    args: &LaunchArgs,
    instance: Instance,
) -> Result<LaunchSpec, Failure> {
    agentc_host::resolve_instance(loaded, &args.request(), instance)
}

/// [`agentc_host::launch_inputs`] of `args`.
pub fn launch_inputs(
    loaded: &LoadedProfile,
    args: &LaunchArgs,
    instance: Instance,
) -> Result<ResolveInputs, Failure> {
    agentc_host::launch_inputs(loaded, &args.request(), instance)
}

/// [`agentc_host::launch_inputs_in`] of `args`.
pub fn launch_inputs_in(
    loaded: &LoadedProfile,
    args: &LaunchArgs,
    instance: Instance,
    profile_dir: std::path::PathBuf,
) -> Result<ResolveInputs, Failure> {
    agentc_host::launch_inputs_in(loaded, &args.request(), instance, profile_dir)
}

/// [`agentc_host::resolve_build`] of `args`.
pub fn resolve_build(
    loaded: &LoadedProfile,
    args: &LaunchArgs,
) -> Result<(LaunchSpec, Option<Bundled>), Failure> {
    agentc_host::resolve_build(loaded, &args.request())
}

impl LaunchArgs {
    /// The launch these arguments ask for, as the library takes it.
    pub fn request(&self) -> agentc_host::LaunchRequest {
        agentc_host::LaunchRequest {
            profile: self.profile.clone(),
            kind: self.kind.into(),
            workspace: self.workspace.clone(),
            image: self.image.clone(),
            seed_target: self.seed_target.clone(),
            agent_args: self.agent_args.clone(),
            overrides: self.overrides.clone(),
            build_args: self.build_args.clone(),
        }
    }
}

impl From<agentc_host::LaunchRequest> for LaunchArgs {
    /// The arguments that ask for `request`.
    fn from(request: agentc_host::LaunchRequest) -> LaunchArgs {
        LaunchArgs {
            profile: request.profile,
            kind: KindArg::from(request.kind),
            workspace: request.workspace,
            image: request.image,
            seed_target: request.seed_target,
            agent_args: request.agent_args,
            overrides: request.overrides,
            build_args: request.build_args,
        }
    }
}

impl From<KindArg> for agentc_policy::LaunchKind {
    fn from(kind: KindArg) -> agentc_policy::LaunchKind {
        match kind {
            KindArg::Run => agentc_policy::LaunchKind::Run,
            KindArg::Seed => agentc_policy::LaunchKind::Seed,
            KindArg::Build => agentc_policy::LaunchKind::Build,
            KindArg::Decant => agentc_policy::LaunchKind::Decant,
        }
    }
}

impl From<agentc_policy::LaunchKind> for KindArg {
    /// A custom agent's sandbox is asked for as its run.
    fn from(kind: agentc_policy::LaunchKind) -> KindArg {
        match kind {
            agentc_policy::LaunchKind::Run | agentc_policy::LaunchKind::Sandbox => KindArg::Run,
            agentc_policy::LaunchKind::Seed => KindArg::Seed,
            agentc_policy::LaunchKind::Build => KindArg::Build,
            agentc_policy::LaunchKind::Decant => KindArg::Decant,
        }
    }
}

impl From<crate::cli::BackendArg> for agentc_host::backend::BackendChoice {
    fn from(backend: crate::cli::BackendArg) -> agentc_host::backend::BackendChoice {
        use agentc_host::backend::BackendChoice;
        match backend {
            crate::cli::BackendArg::Auto => BackendChoice::Auto,
            crate::cli::BackendArg::Cli => BackendChoice::Cli,
            crate::cli::BackendArg::Api => BackendChoice::Api,
        }
    }
}
