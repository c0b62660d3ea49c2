//! Why verify produced no checks: one variant per cause, each with the exit status `agentc
//! verify` ends with ([`VerifyError::exit_code`]). A check that fails is not an error: it is
//! a [`Check`](crate::Check) with `ok` false.

use std::borrow::Cow;

use agentc_engine::{ExecError, Interrupt};
use agentc_policy::{Hint, Hinted};

/// Exit status of a request verify cannot carry out as asked (`EX_DATAERR`, as a launch's).
pub const EXIT_UNVERIFIABLE: i32 = 65;
/// Exit status of a probe that could not report.
pub const EXIT_PROBE: i32 = 1;
/// Exit status of an engine or executor that failed (docker's own code).
pub const EXIT_ENGINE: i32 = 125;

/// Why verify produced no checks; everything it made is removed before it returns one. Its
/// `Display` is the message alone; [`Hinted::hint`] is what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The launch cannot be verified as asked, refused before anything is created: a build
    /// launch, a spec the engine cannot run, a rendering that cannot be played (exit 65).
    #[error("{0}")]
    Unverifiable(Hint<String>),
    /// The probe could not report: its pids limit leaves it no room, it timed out, or its
    /// output is missing or unreadable (exit 1).
    #[error("{0}")]
    Probe(Hint<String>),
    /// The engine or the executor (`podman`) failed or is missing (exit 125).
    #[error("{0}")]
    Engine(Hint<String>),
    /// A step the probe shares with a launch failed as a launch fails (the image, secrets,
    /// volumes, the egress companion), with the launch's own exit status.
    #[error(transparent)]
    Launch(#[from] ExecError),
    /// SIGINT or SIGTERM ended verify after it removed what it made (130, 143).
    #[error("interrupted by {signal}; removed {removed}")]
    Interrupted {
        /// The signal.
        signal: Interrupt,
        /// What was removed (`container NAME`, `the pod NAME`).
        removed: String,
    },
}

impl Hinted for VerifyError {
    /// What to do about it: the launch's hint, or the one given with the message.
    fn hint(&self) -> Option<Cow<'_, str>> {
        match self {
            VerifyError::Unverifiable(message)
            | VerifyError::Probe(message)
            | VerifyError::Engine(message) => message.hint(),
            VerifyError::Launch(error) => error.hint(),
            VerifyError::Interrupted { .. } => None,
        }
    }
}

impl VerifyError {
    /// The exit status `agentc verify` ends with for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            VerifyError::Unverifiable(_) => EXIT_UNVERIFIABLE,
            VerifyError::Probe(_) => EXIT_PROBE,
            VerifyError::Engine(_) => EXIT_ENGINE,
            VerifyError::Launch(error) => error.exit_code(),
            VerifyError::Interrupted { signal, .. } => signal.exit_code(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cause_exits_with_its_own_status() {
        let interrupted = |signal| VerifyError::Interrupted {
            signal,
            removed: "container c".to_string(),
        };
        let missing = ExecError::MissingSecret {
            variable: "KEY".to_string(),
        };
        for (error, code) in [
            (VerifyError::Unverifiable(Hint::none(String::new())), 65),
            (VerifyError::Probe(Hint::none(String::new())), 1),
            (VerifyError::Engine(Hint::none(String::new())), 125),
            (VerifyError::Launch(missing), 125),
            (interrupted(Interrupt::Sigint), 130),
            (interrupted(Interrupt::Sigterm), 143),
        ] {
            assert_eq!(error.exit_code(), code, "{error:?}");
        }
        assert_eq!(
            interrupted(Interrupt::Sigterm).with_hint().to_string(),
            "interrupted by SIGTERM; removed container c"
        );
    }
}
