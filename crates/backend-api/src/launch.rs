//! Launching a container through the Engine API: secrets resolved and the image checked
//! before anything is created, then create, start (detached) or the attached session, and on
//! any failure or interrupt the removal of what was created. A launch whose allowlist is
//! enforced outside it gets its isolated network and healthy egress proxy before the create
//! ([`crate::companion`]); they are removed with it, and kept with a detached sandbox.
//!
//! What `docker run` does beyond the API call, decided here explicitly: agentc pulls only when
//! asked (`--pull`, through [`crate::port::ensure_image`] before [`launch`]; otherwise a missing
//! image is an error that says how to build it); it does not inject the CLI config's
//! proxy variables (the profile's egress policy owns the environment); secrets are read from
//! the environment map handed in, and an unset optional secret is left out rather than sent
//! as a bare name.

use std::collections::BTreeMap;
use std::fmt;
use std::io::IsTerminal;

use agentc_backend_common::secrets::passed_secrets;
use agentc_backend_common::{resolve_env, ExecError};
use agentc_policy::ContainerSpec;
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, KillContainerOptionsBuilder, RemoveContainerOptionsBuilder,
};
use bollard::Docker;

use crate::admin::wait_removed;
use crate::daemon::{daemon_error, is_not_found, status};
use crate::render::render_create;
use crate::session::{run_attached, Step};
use crate::signals::Signals;

/// How to run a launch, beyond the spec.
#[derive(Clone, Default)]
pub struct LaunchOptions {
    /// The caller's environment, from which secrets are resolved.
    pub env: BTreeMap<String, String>,
    /// Whether stdin is a terminal: with a TTY spec, the terminal is switched to raw mode and
    /// its size follows the local window. [`LaunchOptions::from_terminal`] detects it.
    pub stdin_is_terminal: bool,
}

impl LaunchOptions {
    /// Options with `env`, detecting whether this process's stdin is a terminal.
    pub fn from_terminal(env: BTreeMap<String, String>) -> Self {
        LaunchOptions {
            env,
            stdin_is_terminal: std::io::stdin().is_terminal(),
        }
    }
}

impl fmt::Debug for LaunchOptions {
    // The environment holds secret values: show names only.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("LaunchOptions")
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("stdin_is_terminal", &self.stdin_is_terminal)
            .finish()
    }
}

/// How a launch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The container's exit code; 0 for a detached launch.
    pub exit_code: i64,
    /// The container's ID.
    pub container_id: String,
    /// The kernel's OOM killer ended the container (exit code 137), when the daemon could still
    /// say so.
    pub oom_killed: bool,
}

impl Outcome {
    /// A one-line explanation of an abnormal exit, such as a kill by the OOM killer.
    pub fn explanation(&self) -> Option<String> {
        match (self.exit_code, self.oom_killed) {
            (137, true) => Some(
                "container was killed by the out-of-memory killer (exit code 137)\n  hint: raise resources.memory"
                    .to_string(),
            ),
            (137, false) => Some("container was killed (exit code 137, SIGKILL)".to_string()),
            _ => None,
        }
    }
}

/// Launches a container: resolves secrets and checks the image before creating anything,
/// creates it, then either starts it detached or attaches, starts, waits and removes it.
/// SIGINT or SIGTERM at any step kills and removes what was created.
pub async fn launch(
    docker: &Docker,
    spec: &ContainerSpec,
    options: &LaunchOptions,
) -> Result<Outcome, ExecError> {
    launch_checked(docker, spec, options, false).await
}

/// [`launch`], skipping the image check when the caller has made it (`image_checked`: a
/// fan-out inspects each image once for all its copies).
pub(crate) async fn launch_checked(
    docker: &Docker,
    spec: &ContainerSpec,
    options: &LaunchOptions,
    image_checked: bool,
) -> Result<Outcome, ExecError> {
    render_create(spec)?;
    resolve_env(spec, &options.env)?;
    // The runtime is asked for, and Podman's rows applied, before anything is created.
    let mut request = crate::engine::create_request(docker, spec).await?;
    request.body.env = Some(resolve_env(spec, &options.env)?).filter(|env| !env.is_empty());
    let passed = passed_secrets(spec, &options.env);
    if !passed.is_empty() {
        log::debug!(
            "secrets passed from this environment, by name: {}",
            passed.join(", ")
        );
    }
    crate::engine::check_subpaths(docker, spec)?;
    let mut signals = Signals::new()?;

    if !image_checked {
        check_image(docker, spec, &mut signals).await?;
    }

    crate::admin::ensure_volumes(docker, spec).await?;
    // The allowlist enforced outside: the isolated network and the healthy proxy first;
    // removed on every way out below but a detached start (`agentc rm` removes them then).
    // The set may have moved to an instance of its own: the request follows it.
    let mut placed = spec.clone();
    let companion = {
        use futures_util::FutureExt;
        let mut interrupted = || signals.recv().now_or_never();
        crate::companion::setup_for(docker, &mut placed, &options.env, &mut interrupted).await?
    };
    let spec = &placed;
    let result = match &companion {
        Some(_) => match placed_request(spec, options) {
            Ok(request) => create_and_run(docker, spec, options, request, &mut signals).await,
            Err(error) => Err(error),
        },
        None => create_and_run(docker, spec, options, request, &mut signals).await,
    };
    if let Some(set) = &companion {
        if !(spec.detach && result.is_ok()) {
            crate::companion::teardown(docker, set).await;
        }
    }
    result
}

/// The create request of a spec whose egress companion moved, with its secrets resolved.
fn placed_request(
    spec: &ContainerSpec,
    options: &LaunchOptions,
) -> Result<crate::render::CreateRequest, ExecError> {
    let mut request = render_create(spec)?;
    request.body.env = Some(resolve_env(spec, &options.env)?).filter(|env| !env.is_empty());
    Ok(request)
}

/// Creates the workload, then starts it detached or runs it attached; removes it on failure.
async fn create_and_run(
    docker: &Docker,
    spec: &ContainerSpec,
    options: &LaunchOptions,
    request: crate::render::CreateRequest,
    signals: &mut Signals,
) -> Result<Outcome, ExecError> {
    let mut create = CreateContainerOptionsBuilder::new();
    if let Some(name) = &request.name {
        create = create.name(name);
    }
    let created = tokio::select! {
        result = docker.create_container(Some(create.build()), request.body) => {
            result.map_err(|error| daemon_error("create the container", error))?
        }
        signal = signals.recv() => {
            // The daemon may have created it anyway; only a name can find it again.
            let Some(name) = &request.name else {
                return Err(ExecError::Interrupted { signal, container: None });
            };
            let removed = cleanup(docker, name).await;
            let cause = ExecError::Interrupted {
                signal,
                container: (removed == Ok(Cleanup::Removed)).then(|| name.clone()),
            };
            return Err(left_behind(cause, name, removed));
        }
    };
    let id = created.id;
    log::debug!(
        "created container {} ({id})",
        request.name.as_deref().unwrap_or("without a name")
    );

    let result = if spec.detach {
        run_detached(docker, &id, signals).await
    } else {
        let terminal = spec.tty && options.stdin_is_terminal;
        run_attached(docker, spec, terminal, &id, signals)
            .await
            .map(|exited| Outcome {
                exit_code: exited.exit_code,
                container_id: id.clone(),
                oom_killed: exited.oom_killed,
            })
    };
    // What `agentc rm` can name the container by, should it have to.
    let handle = request.name.as_deref().unwrap_or(&id);
    match result {
        Ok(outcome) => Ok(outcome),
        Err(Step::Interrupted(signal)) => {
            let removed = cleanup(docker, &id).await;
            let cause = ExecError::Interrupted {
                signal,
                container: removed.is_ok().then(|| handle.to_string()),
            };
            Err(left_behind(cause, handle, removed))
        }
        Err(Step::Failed(error)) => {
            // Leave nothing behind a failed launch, or say what is left.
            let removed = cleanup(docker, &id).await;
            Err(left_behind(error, handle, removed))
        }
    }
}

/// Refuses a missing image ([`ExecError::ImageMissing`]) before anything is created.
pub(crate) async fn check_image(
    docker: &Docker,
    spec: &ContainerSpec,
    signals: &mut Signals,
) -> Result<(), ExecError> {
    tokio::select! {
        result = docker.inspect_image(&spec.image) => match result {
            Ok(_) => log::debug!("image {} is present", spec.image),
            Err(error) if is_not_found(&error) => {
                return Err(ExecError::ImageMissing { image: spec.image.clone() })
            }
            Err(error) => return Err(daemon_error("inspect the image", error)),
        },
        signal = signals.recv() => return Err(ExecError::Interrupted { signal, container: None }),
    }
    Ok(())
}

async fn run_detached(docker: &Docker, id: &str, signals: &mut Signals) -> Result<Outcome, Step> {
    log::debug!("starting {id} detached");
    tokio::select! {
        result = docker.start_container(id, None) => {
            result.map_err(|error| daemon_error("start the container", error))?;
        }
        signal = signals.recv() => return Err(Step::Interrupted(signal)),
    }
    Ok(Outcome {
        exit_code: 0,
        container_id: id.to_string(),
        oom_killed: false,
    })
}

/// Kills then removes a container, best effort, ignoring "not found" and "not running".
/// Kills and force-removes the container of a launch that did not finish. `Ok` when it is
/// gone (also when it never existed); the daemon's or the connection's message when it could
/// not be removed, for example because the daemon is unreachable.
async fn cleanup(docker: &Docker, id: &str) -> Result<Cleanup, String> {
    log::debug!("killing and removing {id}: the launch did not finish");
    let kill = KillContainerOptionsBuilder::new().signal("KILL").build();
    let _ = docker.kill_container(id, Some(kill)).await;
    let options = RemoveContainerOptionsBuilder::new().force(true).build();
    match docker.remove_container(id, Some(options)).await {
        Ok(()) => Ok(Cleanup::Removed),
        Err(error) if is_not_found(&error) => Ok(Cleanup::Absent),
        Err(error) if status(&error) == Some(409) => {
            // The daemon's AutoRemove is already removing it (the kill ended it): return only
            // once it is gone, or it is still listed after agentc said it was removed.
            wait_removed(docker, id).await;
            Ok(Cleanup::Removed)
        }
        Err(error) => Err(error.to_string()),
    }
}

/// What [`cleanup`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cleanup {
    /// The container existed and is gone now.
    Removed,
    /// There was no such container (never created, or already removed).
    Absent,
}

/// `cause` as it is when the cleanup removed the container; wrapped in
/// [`ExecError::NotRemoved`], naming the container, when it did not.
fn left_behind(cause: ExecError, container: &str, removed: Result<Cleanup, String>) -> ExecError {
    match removed {
        Ok(_) => cause,
        Err(message) => ExecError::NotRemoved {
            cause: Box::new(cause),
            container: container.to_string(),
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller_env() -> BTreeMap<String, String> {
        BTreeMap::from([("TOKEN".to_string(), "s3cret-value".to_string())])
    }

    #[test]
    fn launch_options_debug_hides_values() {
        let options = LaunchOptions {
            env: caller_env(),
            stdin_is_terminal: false,
        };
        let debug = format!("{options:?}");
        assert!(debug.contains("TOKEN"), "{debug}");
        assert!(!debug.contains("s3cret-value"), "{debug}");
    }

    #[test]
    fn exit_137_is_explained() {
        let outcome = |exit_code, oom_killed| Outcome {
            exit_code,
            container_id: "x".into(),
            oom_killed,
        };
        assert!(outcome(137, true)
            .explanation()
            .unwrap()
            .contains("out-of-memory"));
        assert!(outcome(137, false)
            .explanation()
            .unwrap()
            .contains("SIGKILL"));
        assert_eq!(outcome(3, false).explanation(), None);
    }
}
