//! Why a session operation failed, with its hint and exit status.

use std::borrow::Cow;

use agentc_policy::Hinted;

use crate::error::{ExecError, EXIT_DOCKER, EXIT_REFUSED};

/// Why an operation on a running sandbox failed, through either backend.
///
/// A non-zero exit of an executed command is not an error: it is the command's exit code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// A failure a session shares with a launch: creating the sandbox failed, the engine
    /// refused or went away, no container has the name or it is not agentc's, or a signal
    /// interrupted the operation ([`ExecError`], its exit status its own).
    #[error(transparent)]
    Launch(#[from] ExecError),
    /// A NAME that cannot be a container name or ID (empty, a NUL byte, a leading `-`, a `/`).
    #[error("{name:?} is not a container name or ID")]
    BadName {
        /// The name as given.
        name: String,
    },
    /// A profile has no running container, or several.
    #[error("profile {profile} has {} {}containers{}", found.len(), if *stopped_too { "" } else { "running " }, if found.is_empty() { String::new() } else { format!(": {}", found.join(", ")) })]
    NotOneContainer {
        /// The profile's name.
        profile: String,
        /// The names of its (running) containers.
        found: Vec<String>,
        /// Whether stopped containers were counted too.
        stopped_too: bool,
    },
    /// The container is not running (exec and copies into a tmpfs need it running).
    #[error("container {name} is not running")]
    NotRunning {
        /// The container's name.
        name: String,
    },
    /// The container is paused (`agentc pause`): nothing runs in it until it is resumed.
    #[error("container {name} is paused")]
    Paused {
        /// The container's name.
        name: String,
    },
    /// A request the sandbox cannot carry (a NUL byte, an empty command, an invalid variable
    /// name).
    #[error("{message}")]
    Invalid {
        /// What is wrong.
        message: String,
        /// What to do.
        hint: &'static str,
    },
    /// A path inside the container that agentc refuses (relative parts such as `..`, a NUL
    /// byte, the root itself).
    #[error("container path {path:?}: {reason}")]
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
    #[error("cannot write {path} in {name}: {reason}")]
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
    #[error("{name} has no `tar` (or no `sh`), which copying {path} needs: it lies in a tmpfs or past the read-only root, where the daemon's archive endpoint cannot reach")]
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
    #[error("refusing the archive from {name}: {reason}")]
    HostileArchive {
        /// The container's name.
        name: String,
        /// Which entry and why.
        reason: String,
    },
    /// The port is neither published nor reachable on the container's network.
    #[error("{message}")]
    NoEndpoint {
        /// What is missing.
        message: String,
        /// What to do.
        hint: String,
    },
    /// A claimed pool member did not start the launch's command (it was removed).
    #[error("could not start the command in {name}: {message}")]
    NotStarted {
        /// The member's name.
        name: String,
        /// What the exec said.
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
    /// Local I/O failed (the terminal, a host file).
    #[error("i/o failed while trying to {step}: {source}")]
    Io {
        /// What agentc was doing.
        step: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl Hinted for SessionError {
    /// What to do about it, when agentc knows (the command line prints it on a line of its
    /// own after the message).
    fn hint(&self) -> Option<Cow<'_, str>> {
        let borrowed = |text: &'static str| Some(Cow::Borrowed(text));
        match self {
            SessionError::Launch(error) => error.hint(),
            SessionError::BadName { .. } => borrowed(
                "`agentc ps` lists agentc's containers; a profile file is named by a path with a \
                 `/` or a `.toml` ending",
            ),
            SessionError::NotOneContainer { found, .. } => borrowed(if found.is_empty() {
                "name one container (`agentc ps`); `agentc run PROFILE` starts its sandbox"
            } else {
                "name one container (`agentc ps`)"
            }),
            SessionError::NotRunning { name } => {
                Some(Cow::Owned(format!("`agentc start {name}` starts it")))
            }
            SessionError::Paused { name } => {
                Some(Cow::Owned(format!("`agentc resume {name}` resumes it")))
            }
            SessionError::Invalid { hint, .. } => borrowed(hint),
            SessionError::BadContainerPath { .. } => {
                borrowed("give an absolute path without `..`, such as /tmp/out")
            }
            SessionError::ReadOnly { .. } => {
                borrowed("copy into a tmpfs (such as /tmp), a volume or the workspace instead")
            }
            SessionError::TarMissing { .. } => {
                borrowed("add tar to the image, or copy into a volume or the workspace")
            }
            SessionError::HostileArchive { .. } => borrowed(
                "the container sent an entry outside the copied path; nothing beyond it was \
                 written",
            ),
            SessionError::NoEndpoint { hint, .. } => Some(Cow::Borrowed(hint)),
            SessionError::HostPath { .. }
            | SessionError::NoSuchPath { .. }
            | SessionError::CopyFailed { .. }
            | SessionError::NotStarted { .. }
            | SessionError::Gone { .. }
            | SessionError::Io { .. } => None,
        }
    }
}

impl SessionError {
    /// The process exit status: 1 for a refusal (a hostile path or archive, no one container
    /// of a profile), 2 for an invalid request, the launch's own status for what it shares with
    /// a launch (1 for a container that is not agentc's or not there, 130/143 when
    /// interrupted), and 125 (docker's status for a failure before the command ran) otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            SessionError::Launch(error) => error.exit_code(),
            SessionError::BadName { .. }
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
        let refused = SessionError::from(ExecError::NotAgentc { name: "db".into() });
        assert_eq!(refused.exit_code(), 1);
        assert!(refused.with_hint().to_string().starts_with(
            "refusing db: it has no io.agentc.profile label, so agentc did not create it\n  hint: "
        ));
        let lost = SessionError::from(ExecError::ConnectionLost {
            engine: crate::Engine::Podman,
            step: "exec",
            message: "eof".into(),
        });
        assert!(lost
            .with_hint()
            .to_string()
            .starts_with("lost the connection to the podman daemon while trying to exec: eof"));
        assert_eq!(lost.exit_code(), 125);
        let none = SessionError::NotOneContainer {
            profile: "p".into(),
            found: vec![],
            stopped_too: false,
        };
        assert_eq!(
            none.with_hint().to_string(),
            "profile p has 0 running containers\n  hint: name one container (`agentc ps`); `agentc run PROFILE` starts its sandbox"
        );
    }
}
