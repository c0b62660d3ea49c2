//! A failed request: what to say and the exit status a command line gives it.

use std::borrow::Cow;
use std::fmt::Display;

use agentc_policy::{Hinted, PolicyError};

use crate::bundled::BundledError;

/// Exit status for an invalid profile or an unlaunchable request (`EX_DATAERR`).
pub const EXIT_INVALID: u8 = 65;
/// Exit status for a profile file that cannot be read (`EX_NOINPUT`).
pub const EXIT_NO_INPUT: u8 = 66;
/// Exit status for a usage error, as clap uses.
pub const EXIT_USAGE: u8 = 2;
/// Exit status when `verify` found a mismatch or `rm` refused a container.
pub const EXIT_FAILED: u8 = 1;
/// Exit status when docker failed before the container ran (docker's own code).
pub const EXIT_DOCKER: u8 = 125;

/// A failed command: what to print and the exit status.
#[derive(Debug)]
pub struct Failure {
    /// The exit status.
    pub code: u8,
    /// The message, without the `error: ` prefix.
    pub message: String,
    /// What to do about it, printed on a line of its own after the message (`  hint: HINT`).
    pub hint: Option<String>,
}

impl Failure {
    /// An invalid profile or unlaunchable request (exit 65).
    pub fn invalid(error: PolicyError) -> Failure {
        Failure::from_hinted(EXIT_INVALID, &error)
    }

    /// A profile with one or more errors (exit 65): each printed as its own `error:` line in
    /// file order, then, when there are several, how many. One error alone keeps its hint in
    /// the field; several each keep theirs in the message, after their own line.
    pub fn invalid_profile(errors: agentc_policy::PolicyErrors) -> Failure {
        if let [one] = errors.errors() {
            if errors.omitted() == 0 {
                return Failure::invalid(one.clone());
            }
        }
        let mut message = errors
            .errors()
            .iter()
            .map(|error| error.with_hint().to_string())
            .collect::<Vec<_>>()
            .join("\nerror: ");
        let total = errors.errors().len() + errors.omitted();
        if errors.omitted() > 0 {
            message.push_str(&format!(
                "\nerror: ... and {} more (only the first {} are shown)",
                errors.omitted(),
                errors.errors().len()
            ));
        }
        if total > 1 {
            message.push_str(&format!("\nerror: {total} errors in the profile"));
        }
        Failure {
            code: EXIT_INVALID,
            message,
            hint: None,
        }
    }

    /// A launch a backend cannot express (exit 65), with the error's hint in its field (a
    /// message that is text comes as [`agentc_policy::Hint`]).
    pub fn unlaunchable(error: impl Hinted) -> Failure {
        Failure::from_hinted(EXIT_INVALID, &error)
    }

    /// A failure with an explicit exit status.
    pub fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            hint: None,
        }
    }

    /// A failure with an explicit exit status, saying what `error` says: its message and its
    /// hint, each in its own field.
    pub fn from_hinted(code: u8, error: &(impl Hinted + ?Sized)) -> Failure {
        Failure {
            code,
            message: error.to_string(),
            hint: error.hint().map(Cow::into_owned),
        }
    }

    /// This failure with `hint`, what to do about it.
    #[must_use]
    pub fn hinted(mut self, hint: impl Into<String>) -> Failure {
        self.hint = Some(hint.into());
        self
    }

    /// A usage error (exit 2).
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure {
            code: EXIT_USAGE,
            message: message.into(),
            hint: None,
        }
    }
}

impl From<BundledError> for Failure {
    /// A wrong input is a usage error (exit 2), a context that cannot be written a failure
    /// (exit 1).
    fn from(error: BundledError) -> Failure {
        match error {
            BundledError::Input(message) => Failure::from_hinted(EXIT_USAGE, &message),
            BundledError::Write(message) => Failure::from_hinted(EXIT_FAILED, &message),
        }
    }
}

impl Display for Failure {
    /// The message, without the `error: ` prefix, the hint or the exit status
    /// ([`Hinted::with_hint`] adds the hint).
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl Hinted for Failure {
    fn hint(&self) -> Option<Cow<'_, str>> {
        self.hint.as_deref().map(Cow::Borrowed)
    }
}

impl std::error::Error for Failure {}
