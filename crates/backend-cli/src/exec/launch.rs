//! A container launch through the docker CLI: the same refusals as the API backend (an unset
//! required secret, a value docker's argv cannot carry, a missing image unless asked to pull),
//! then `docker run` in the foreground, then, for a detached container, its inspect.
//!
//! `docker run` creates the container before it starts it, and leaves it behind when the
//! start fails (a missing network, say). agentc adds `--cidfile` to the argv it runs (only
//! there: `agentc render` shows the launch itself), so it knows the container it created and
//! removes it when docker fails before the container ran (exit 125, or 126 and 127 when the
//! daemon could not start its command), as the API backend does; docker's own refusal is then
//! reported with the API backend's hint (exit 125, as through the API).
//!
//! A launch whose allowlist is enforced outside it gets its isolated network and its egress
//! proxy first ([`super::egress`]); they are removed when the launch ends (an attached run's
//! exit, a refusal, an interrupt) and kept with a detached sandbox.

use agentc_backend_common::{resolve_env, ExecError};
use agentc_policy::ContainerSpec;
use bollard::models::ContainerInspectResponse;

use super::docker;
use super::engine::launch_argv;
use super::signals::{pending, SignalShield};
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
/// argv, makes sure the image is present ([`ensure_image`]; `notify` is told when it is
/// pulled), runs docker in the foreground ([`docker::run_launch`]), and inspects a detached
/// container that started under a name. A SIGINT or SIGTERM at any step ends the launch with
/// [`ExecError::Interrupted`] (exit 130 or 143) and removes what it created, TTY or not.
/// When docker fails before the container ran, the container it created is removed and
/// docker's refusal is the error ([`ExecError::CliRefused`]).
///
/// docker itself reads the secrets' values from its environment: the values of the spec's
/// secrets, from the profile where it holds them ([`ContainerSpec::held_secrets`]), else from
/// `env`, are handed to it on top of the inherited environment.
pub fn launch(
    spec: &ContainerSpec,
    env: &std::collections::BTreeMap<String, String>,
    pull: bool,
    notify: impl FnMut(&str) + Send,
) -> Result<Outcome, ExecError> {
    resolve_env(spec, env)?;
    container_argv(spec)?;
    // SIGINT and SIGTERM are recorded from here on and end the launch between its steps
    // (and the container once docker created it), leaving nothing behind, as through the API.
    let shield = SignalShield::new(true);
    ensure_image(&spec.image, pull, notify)?;
    not_interrupted()?;
    // The runtime is asked for, and Podman's rows applied, before anything is created.
    let mut argv = launch_argv(spec)?;
    ensure_volumes(spec)?;
    not_interrupted()?;
    // The allowlist enforced outside: the isolated network and the healthy proxy first;
    // removed on every way out below but a detached start (`agentc rm` removes them then).
    // The set may have moved to an instance of its own: the argv follows it.
    let mut placed = spec.clone();
    let egress = super::egress::setup_for(&mut placed, env).map_err(|error| match pending() {
        // A step cut short by the signal failed because of it.
        Some(signal) => ExecError::Interrupted {
            signal,
            container: None,
        },
        None => error,
    })?;
    if egress.is_some() {
        argv = launch_argv(&placed)?;
    }
    not_interrupted()?;
    let cid = docker::CidFile::new()?;
    argv.insert(2, format!("--cidfile={}", cid.path().display()));
    let secrets = agentc_backend_common::secrets::secret_values(&placed, env);
    let mut ran = docker::run_launch(&argv, &secrets, spec.detach, &shield, &cid)?;
    if let Some(signal) = ran.interrupted {
        // The container (if docker created it) is gone; the companion goes with `egress`.
        return Err(ExecError::Interrupted {
            signal,
            container: cid.id().map(|id| placed.name.clone().unwrap_or(id)),
        });
    }
    if ran.refusal.is_none()
        && ran.exit_code == 125
        && agentc_backend_common::engine() == agentc_backend_common::Engine::Podman
    {
        // Podman prints its own `Error: ...` (passed through) and exits 125 when it failed
        // before the container ran.
        ran.refusal = Some("podman failed before the container ran (its error is above)".into());
    }
    if let Some(message) = ran.refusal {
        // docker refused (exit 125, or 126 and 127 when the daemon could not start its
        // command; its own message): the container never ran.
        let created = cid.id();
        if let Some(id) = &created {
            log::debug!("docker failed before {id} ran; removing it");
            docker::remove_quietly(id);
        }
        {
            return Err(ExecError::CliRefused {
                step: if created.is_some() {
                    "start the container"
                } else {
                    "create the container"
                },
                message,
            });
        }
    }
    if let Some(egress) = egress {
        if spec.detach && ran.exit_code == 0 {
            egress.keep();
        }
    }
    let started = match spec.detach && ran.exit_code == 0 {
        true => started_inspect(&placed)?,
        false => None,
    };
    Ok(Outcome {
        exit_code: ran.exit_code,
        started,
    })
}

/// The inspect of a detached container that started from `placed` under a name, to show
/// where it can be reached: ports relayed by its egress proxy at the proxy's host bindings.
pub fn started_inspect(
    placed: &ContainerSpec,
) -> Result<Option<ContainerInspectResponse>, ExecError> {
    let Some(name) = &placed.name else {
        return Ok(None);
    };
    let mut inspect = docker::inspect(name)?;
    if let Some(companion) = placed.egress.as_ref().filter(|e| !e.relays().is_empty()) {
        let proxy = docker::inspect(companion.proxy.name.as_deref().unwrap_or_default())?;
        agentc_backend_common::egress::add_relayed_ports(&mut inspect, &proxy);
    }
    Ok(Some(inspect))
}

/// The SIGINT or SIGTERM recorded since the launch began, as the launch's error: nothing was
/// created yet, or what was is removed on the way out.
fn not_interrupted() -> Result<(), ExecError> {
    match pending() {
        Some(signal) => Err(ExecError::Interrupted {
            signal,
            container: None,
        }),
        None => Ok(()),
    }
}

/// Makes sure the engine has `image` through its command line
/// ([`agentc_backend_common::image::ensure_image`] over the command line's
/// [port](super::port::CliPort)): with `pull`, a missing image is pulled by `docker pull IMAGE`
/// (`notify` is handed a line saying so, then each line of its progress, for stderr: stdout
/// stays the container's); without, it is refused ([`ExecError::ImageMissing`]), as the API
/// backend refuses it: `docker run` would pull it, and agentc pulls only when asked (`--pull`).
pub fn ensure_image(
    image: &str,
    pull: bool,
    mut notify: impl FnMut(&str) + Send,
) -> Result<(), ExecError> {
    super::egress::block_on(agentc_backend_common::image::ensure_image(
        &super::egress::port(),
        image,
        pull,
        &mut notify,
    ))?
}

/// Creates the named volumes a launch mounts, labelled
/// ([`agentc_backend_common::volumes::ensure_volumes`], through the command line's engine
/// port).
pub fn ensure_volumes(spec: &agentc_policy::ContainerSpec) -> Result<(), ExecError> {
    super::egress::block_on(agentc_backend_common::volumes::ensure_volumes(
        &super::egress::port(),
        spec,
    ))?
}
