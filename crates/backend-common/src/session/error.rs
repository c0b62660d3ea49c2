//! Why a session operation failed, with its hint and exit status.

use crate::error::{ExecError, Interrupt, EXIT_DOCKER, EXIT_REFUSED};
use agentc_policy::LABEL_PROFILE;

/// Why an operation on a running sandbox failed, through either backend.
///
/// A non-zero exit of an executed command is not an error: it is the command's exit code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// Creating the sandbox (or talking to the daemon before it) failed.
    #[error(transparent)]
    Launch(#[from] ExecError),
    /// A NAME that cannot be a container name or ID (empty, a NUL byte, a leading `-`, a `/`).
    #[error("{name:?} is not a container name or ID\n  hint: `agentc ps` lists agentc's containers; a profile file is named by a path with a `/` or a `.toml` ending")]
    BadName {
        /// The name as given.
        name: String,
    },
    /// No container has this name or ID.
    #[error("no such container {name}\n  hint: `agentc ps --all` lists agentc's containers")]
    NoSuchContainer {
        /// The name or ID given.
        name: String,
    },
    /// The container exists but agentc did not create it.
    #[error("refusing {name}: it has no {LABEL_PROFILE} label, so agentc did not create it\n  hint: agentc drives only its own containers (`agentc ps`); use docker for others")]
    NotAgentc {
        /// The name or ID given.
        name: String,
    },
    /// A profile has no running container, or several.
    #[error("profile {profile} has {} {}containers{}\n  hint: name one container (`agentc ps`){}", found.len(), if *stopped_too { "" } else { "running " }, if found.is_empty() { String::new() } else { format!(": {}", found.join(", ")) }, if found.is_empty() { "; `agentc run PROFILE` starts its sandbox" } else { "" })]
    NotOneContainer {
        /// The profile's name.
        profile: String,
        /// The names of its (running) containers.
        found: Vec<String>,
        /// Whether stopped containers were counted too.
        stopped_too: bool,
    },
    /// The container is not running (exec and copies into a tmpfs need it running).
    #[error("container {name} is not running\n  hint: `agentc start {name}` starts it")]
    NotRunning {
        /// The container's name.
        name: String,
    },
    /// A request the sandbox cannot carry (a NUL byte, an empty command, an invalid variable
    /// name).
    #[error("{message}\n  hint: {hint}")]
    Invalid {
        /// What is wrong.
        message: String,
        /// What to do.
        hint: &'static str,
    },
    /// A path inside the container that agentc refuses (relative parts such as `..`, a NUL
    /// byte, the root itself).
    #[error("container path {path:?}: {reason}\n  hint: give an absolute path without `..`, such as /tmp/out")]
    BadContainerPath {
        /// The path as given.
        path: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A host path that cannot be used.
    #[error("{path}: {reason}")]
    HostPath {
        /// The host path.
        path: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// The container path does not exist.
    #[error("{path} does not exist in {name}")]
    NoSuchPath {
        /// The container's name.
        name: String,
        /// The container path.
        path: String,
    },
    /// A write the container's file system refuses: its read-only root or a read-only mount.
    #[error("cannot write {path} in {name}: {reason}\n  hint: copy into a tmpfs (such as /tmp), a volume or the workspace instead")]
    ReadOnly {
        /// The container's name.
        name: String,
        /// The container path.
        path: String,
        /// Which file system refuses it.
        reason: String,
    },
    /// Copying into or out of a tmpfs or past a read-only root streams a tar through exec,
    /// and the image has no `tar`.
    #[error("{name} has no `tar` (or no `sh`), which copying {path} needs: it lies in a tmpfs or past the read-only root, where the daemon's archive endpoint cannot reach\n  hint: add tar to the image, or copy into a volume or the workspace")]
    TarMissing {
        /// The container's name.
        name: String,
        /// The container path.
        path: String,
    },
    /// The tar stream failed inside the container (tar's own message).
    #[error("copying {path} in {name} failed: {message}")]
    CopyFailed {
        /// The container's name.
        name: String,
        /// The container path.
        path: String,
        /// What failed.
        message: String,
    },
    /// A tar stream from the container holds an entry agentc refuses to write on the host (an
    /// absolute path, `..`, a path outside the copied tree, a link leaving it).
    #[error("refusing the archive from {name}: {reason}\n  hint: the container sent an entry outside the copied path; nothing beyond it was written")]
    HostileArchive {
        /// The container's name.
        name: String,
        /// Which entry and why.
        reason: String,
    },
    /// The port is neither published nor reachable on the container's network.
    #[error("{message}\n  hint: {hint}")]
    NoEndpoint {
        /// What is missing.
        message: String,
        /// What to do.
        hint: String,
    },
    /// The daemon answered with an error.
    #[error("{} daemon refused to {step}: {message}{}", crate::engine::engine().as_str(), crate::hints::daemon_hint(message).map(|hint| format!("\n  hint: {hint}")).unwrap_or_default())]
    Daemon {
        /// What agentc was doing.
        step: &'static str,
        /// The daemon's message.
        message: String,
    },
    /// The connection to the daemon (or the docker CLI) failed mid-operation.
    #[error(
        "lost the connection to the {} daemon while trying to {step}: {message}\n  hint: {}",
        crate::engine::engine().as_str(),
        crate::hints::connection_hint(
            message,
            "check that the daemon is still running; `agentc ps` shows what is left"
        )
    )]
    ConnectionLost {
        /// What agentc was doing.
        step: &'static str,
        /// The underlying message.
        message: String,
    },
    /// The container went away while the operation ran.
    #[error("container {name} went away while trying to {step}")]
    Gone {
        /// The container's name.
        name: String,
        /// What agentc was doing.
        step: &'static str,
    },
    /// The docker CLI could not be run.
    #[error(
        "cannot run {}: {source}\n  hint: install the {} CLI, or use --backend api",
        engine.as_str(),
        engine.as_str()
    )]
    CannotRunDocker {
        /// The engine whose CLI it is (`docker` or `podman`, as `--engine` chose).
        engine: crate::Engine,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Local I/O failed (the terminal, a host file).
    #[error("i/o failed while trying to {step}: {source}")]
    Io {
        /// What agentc was doing.
        step: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// SIGINT or SIGTERM interrupted the operation; what it started was stopped.
    #[error("interrupted by {signal}; {cleanup}")]
    Interrupted {
        /// The signal.
        signal: Interrupt,
        /// What was cleaned up, or what is left and how to remove it.
        cleanup: String,
    },
}

impl SessionError {
    /// The process exit status: 1 for a refusal (not agentc's container, none by that name, a
    /// hostile path or archive), 2 for an invalid request, 130/143 when interrupted, the
    /// launch's own status for a launch error, and 125 (docker's status for a failure before
    /// the command ran) otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            SessionError::Launch(error) => error.exit_code(),
            SessionError::Interrupted { signal, .. } => signal.exit_code(),
            SessionError::BadName { .. }
            | SessionError::NoSuchContainer { .. }
            | SessionError::NotAgentc { .. }
            | SessionError::NotOneContainer { .. }
            | SessionError::BadContainerPath { .. }
            | SessionError::HostPath { .. }
            | SessionError::NoSuchPath { .. }
            | SessionError::ReadOnly { .. }
            | SessionError::TarMissing { .. }
            | SessionError::CopyFailed { .. }
            | SessionError::HostileArchive { .. }
            | SessionError::NoEndpoint { .. } => EXIT_REFUSED,
            SessionError::Invalid { .. } => 2,
            _ => EXIT_DOCKER,
        }
    }

    /// An [`SessionError::Invalid`] request.
    pub fn invalid(message: impl Into<String>, hint: &'static str) -> SessionError {
        SessionError::Invalid {
            message: message.into(),
            hint,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_exit_1_and_daemon_failures_125() {
        let refused = SessionError::NotAgentc { name: "db".into() };
        assert_eq!(refused.exit_code(), 1);
        assert!(refused.to_string().starts_with(
            "refusing db: it has no io.agentc.profile label, so agentc did not create it\n  hint: "
        ));
        let lost = SessionError::ConnectionLost {
            step: "exec",
            message: "eof".into(),
        };
        assert_eq!(lost.exit_code(), 125);
        let none = SessionError::NotOneContainer {
            profile: "p".into(),
            found: vec![],
            stopped_too: false,
        };
        assert_eq!(
            none.to_string(),
            "profile p has 0 running containers\n  hint: name one container (`agentc ps`); `agentc run PROFILE` starts its sandbox"
        );
    }
}
