//! A container launch through the docker CLI: the same refusals as the API backend (an unset
//! required secret, a value docker's argv cannot carry, a missing image unless asked to pull),
//! then `docker run` in the foreground, then, for a detached container, its inspect.

use agentc_backend_common::{resolve_env, ExecError};
use agentc_policy::ContainerSpec;
use bollard::models::ContainerInspectResponse;

use super::docker;
use crate::render::container_argv;

/// How a launch through the docker CLI ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// docker's exit code: the container's own for an attached launch (137 when it was
    /// killed), 0 once a detached one started, 125 when docker failed before it ran.
    pub exit_code: i32,
    /// A detached container that started and has a name: its inspect, to show where it can
    /// be reached.
    pub started: Option<ContainerInspectResponse>,
}

impl Outcome {
    /// A one-line explanation of an abnormal exit: 137 is a SIGKILL, which the out-of-memory
    /// killer sends (the docker CLI does not say whether it did).
    pub fn explanation(&self) -> Option<&'static str> {
        (self.exit_code == 137).then_some(
            "the container was killed (exit code 137, SIGKILL; the out-of-memory killer does this when resources.memory is reached)",
        )
    }
}

/// Launches a container with `docker run`: refuses an unset required secret first (the docker
/// CLI would silently drop an unset `--env=NAME`; only names leave this check), renders the
/// argv, makes sure the image is present ([`docker::ensure_image`]; `notify` is told when it is
/// pulled), runs docker in the foreground with SIGTERM passed on
/// ([`docker::run_foreground`]), and inspects a detached container that started under a name.
///
/// docker itself reads the secrets' values from the inherited environment: `env` is only
/// checked.
pub fn launch(
    spec: &ContainerSpec,
    env: &std::collections::BTreeMap<String, String>,
    pull: bool,
    notify: impl FnOnce(&str),
) -> Result<Outcome, ExecError> {
    resolve_env(spec, env)?;
    let argv = container_argv(spec)?;
    docker::ensure_image(&spec.image, pull, notify)?;
    let exit_code = docker::run_foreground(&argv)?;
    let started = match &spec.name {
        Some(name) if spec.detach && exit_code == 0 => Some(docker::inspect(name)?),
        _ => None,
    };
    Ok(Outcome { exit_code, started })
}
