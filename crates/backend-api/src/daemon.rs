//! The connection to the daemon and its errors: connecting with a negotiated API version, and
//! turning bollard's errors into [`ExecError`]s that say which step failed.

use agentc_backend_common::ExecError;
use bollard::errors::Error as BollardError;
use bollard::Docker;

/// Connects to the daemon and negotiates the API version (down to the daemon's, such as 1.41).
/// `docker_host` is `DOCKER_HOST` as read by the caller; `None` uses the local socket.
pub async fn connect(docker_host: Option<&str>) -> Result<Docker, ExecError> {
    let docker = match docker_host.filter(|host| !host.is_empty()) {
        Some(host) => Docker::connect_with_host(host),
        None => Docker::connect_with_local_defaults(),
    }
    .map_err(|error| ExecError::Connect {
        message: error.to_string(),
    })?;
    let docker = docker
        .negotiate_version()
        .await
        .map_err(|error| ExecError::Connect {
            message: error.to_string(),
        })?;
    log::debug!(
        "connected to the daemon at {} (engine api {})",
        if docker_host.is_some_and(|host| !host.is_empty()) {
            "DOCKER_HOST"
        } else {
            "the local socket"
        },
        docker.client_version()
    );
    Ok(docker)
}

/// The HTTP status of a daemon refusal, if the error is one.
pub(crate) fn status(error: &BollardError) -> Option<u16> {
    match error {
        BollardError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

/// Whether the daemon answered 404 (no such container or image).
pub(crate) fn is_not_found(error: &BollardError) -> bool {
    status(error) == Some(404)
}

/// A daemon refusal as [`ExecError::Daemon`], any other failure as a lost connection, both
/// naming `step`.
pub(crate) fn daemon_error(step: &'static str, error: BollardError) -> ExecError {
    match error {
        BollardError::DockerResponseServerError {
            status_code,
            message,
        } => ExecError::Daemon {
            step,
            status: status_code,
            message,
        },
        other => ExecError::ConnectionLost {
            step,
            message: other.to_string(),
        },
    }
}
