//! The attached run of a launch through the Engine API ([`EnginePort::run_attached`] of
//! [`crate::port::ApiPort`]): the container created (the runtime asked for and Podman's rows
//! applied first), the attached session (`session`), and on any failure or signal the
//! container killed and removed, or named as left behind.
//!
//! [`EnginePort::run_attached`]: agentc_engine::port::EnginePort::run_attached

use std::collections::BTreeMap;

use agentc_engine::launch::Exited;
use agentc_engine::signals::Interrupts;
use agentc_engine::{resolve_env, Engine, ExecError};
use agentc_policy::ContainerSpec;
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, KillContainerOptionsBuilder, RemoveContainerOptionsBuilder,
};
use bollard::Docker;

use crate::daemon::wait_removed;
use crate::daemon::{daemon_error, is_not_found, status};
use crate::session::{run_attached, Step};

/// The attached run of a launch through the Engine API ([`EnginePort::run_attached`]): the
/// container created (the runtime asked for and Podman's rows applied first), the attached
/// session ([`run_attached`]), and on any failure or signal the container killed and removed,
/// or named as left behind.
///
/// [`EnginePort::run_attached`]: agentc_engine::port::EnginePort::run_attached
pub(crate) async fn attached<S: Interrupts>(
    docker: &Docker,
    engine: Engine,
    waits: &crate::daemon::Waits,
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
    terminal: bool,
    signals: &mut S,
) -> Result<Exited, ExecError> {
    let mut request = crate::engine::create_request(docker, engine, spec).await?;
    request.body.env = Some(resolve_env(spec, env)?).filter(|env| !env.is_empty());
    crate::engine::check_subpaths(docker, spec)?;
    let mut create = CreateContainerOptionsBuilder::new();
    if let Some(name) = &request.name {
        create = create.name(name);
    }
    let created = tokio::select! {
        result = docker.create_container(Some(create.build()), request.body) => {
            result.map_err(|error| daemon_error(engine, "create the container", error))?
        }
        signal = signals.recv() => {
            // The daemon may have created it anyway; only a name can find it again.
            let Some(name) = &request.name else {
                return Err(ExecError::interrupted(signal, None));
            };
            let removed = cleanup(docker, name).await;
            let cause = ExecError::interrupted(
                signal,
                (removed == Ok(Cleanup::Removed)).then_some(name.as_str()),
            );
            return Err(left_behind(cause, name, removed));
        }
    };
    let id = created.id;
    log::debug!(
        "created container {} ({id})",
        request.name.as_deref().unwrap_or("without a name")
    );
    let result = run_attached(
        docker,
        engine,
        waits,
        spec,
        spec.tty && terminal,
        &id,
        signals,
    )
    .await;
    // What `agentc rm` can name the container by, should it have to.
    let handle = request.name.as_deref().unwrap_or(&id);
    match result {
        Ok(exited) => Ok(Exited {
            exit_code: exited.exit_code,
            id: id.clone(),
            oom_killed: Some(exited.oom_killed),
        }),
        Err(Step::Interrupted(signal)) => {
            let removed = cleanup(docker, &id).await;
            let cause = ExecError::interrupted(signal, removed.is_ok().then_some(handle));
            Err(left_behind(cause, handle, removed))
        }
        Err(Step::Failed(error)) => {
            // Leave nothing behind a failed launch, or say what is left.
            let removed = cleanup(docker, &id).await;
            Err(left_behind(error, handle, removed))
        }
    }
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
