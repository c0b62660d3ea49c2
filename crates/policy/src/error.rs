//! Errors of the policy crate: every one names where the bad value is and what to do.
//!
//! Every error displays in one format: `LOCATION: MESSAGE`; its hint is a field of its own
//! ([`Hinted::hint`]), which the command line prints as `  hint: HINT` on the next line
//! ([`Hinted::with_hint`]). A profile with several independent mistakes reports them all at
//! once, in file order, as [`PolicyErrors`].

use std::borrow::Cow;
use std::fmt;

use crate::hint::Hinted;

/// Where in the input a bad value sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A field of a profile file.
    Profile {
        /// The profile file as the user named it.
        file: String,
        /// The field path, such as `egress.gateway_port` or `mounts[2].target`; empty for the
        /// document as a whole.
        field: String,
        /// 1-based line and column of the value, where the TOML span is known.
        position: Option<(usize, usize)>,
    },
    /// An environment override such as `AGENTC_MEM_LIMIT`.
    Environment {
        /// The variable's name.
        variable: String,
    },
    /// An input of the invocation, such as `--workspace` or `--seed-target`.
    Invocation {
        /// The option or input.
        input: String,
    },
}

impl fmt::Display for Location {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Profile {
                file,
                field,
                position,
            } => {
                write!(formatter, "{file}")?;
                if let Some((line, column)) = position {
                    write!(formatter, ":{line}:{column}")?;
                }
                if !field.is_empty() {
                    write!(formatter, ": {field}")?;
                }
                Ok(())
            }
            Location::Environment { variable } => {
                write!(formatter, "environment variable {variable}")
            }
            Location::Invocation { input } => write!(formatter, "{input}"),
        }
    }
}

/// A profile, override or invocation that cannot become a launch.
///
/// Displayed as `FILE:LINE:COLUMN: FIELD: MESSAGE`; the hint is [`Hinted::hint`], which
/// [`Hinted::with_hint`] prints after it as `  hint: HINT`. Messages are lower case without a
/// final period and never contain a secret's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The input is not valid: bad TOML, a bad value, or fields that contradict each other.
    #[error("{location}: {message}")]
    Invalid {
        /// Where the bad value is.
        location: Location,
        /// What is wrong with it.
        message: String,
        /// What to do about it.
        hint: String,
    },
    /// The profile is valid, but this launch cannot be made from it on this machine (a missing
    /// file, a seed target that is not configured, a value docker cannot carry).
    #[error("{location}: {message}")]
    Unlaunchable {
        /// Where the value that blocks the launch is.
        location: Location,
        /// Why the launch cannot be made.
        message: String,
        /// What to do about it.
        hint: String,
    },
}

impl PolicyError {
    /// Where the error is.
    pub fn location(&self) -> &Location {
        match self {
            PolicyError::Invalid { location, .. } | PolicyError::Unlaunchable { location, .. } => {
                location
            }
        }
    }
}

impl PolicyError {
    /// What is wrong, without the location.
    pub fn message(&self) -> &str {
        match self {
            PolicyError::Invalid { message, .. } | PolicyError::Unlaunchable { message, .. } => {
                message
            }
        }
    }

    /// The 1-based (line, column) of the bad value in the profile, where known.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self.location() {
            Location::Profile { position, .. } => *position,
            _ => None,
        }
    }
}

impl Hinted for PolicyError {
    /// What to do about it: every policy error knows.
    fn hint(&self) -> Option<Cow<'_, str>> {
        match self {
            PolicyError::Invalid { hint, .. } | PolicyError::Unlaunchable { hint, .. } => {
                Some(Cow::Borrowed(hint))
            }
        }
    }
}

/// The most errors one profile reports; the rest are counted, not listed.
pub const MAX_REPORTED_ERRORS: usize = 20;

/// Every independent error of a profile, in file order (errors without a position last),
/// at most [`MAX_REPORTED_ERRORS`] of them; never empty.
///
/// One error alone displays as that error (its message; its hint is [`Hinted::hint`]).
/// Several display one after another, each with its own hint ([`Hinted::with_hint`]), then,
/// when some were left out, a line saying how many; the whole then has no hint of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyErrors {
    errors: Vec<PolicyError>,
    omitted: usize,
    /// The search stopped before the end of the profile: there may be more than `omitted`.
    truncated: bool,
}

impl PolicyErrors {
    /// Sorts errors into file order, drops exact repeats and keeps the first
    /// [`MAX_REPORTED_ERRORS`]. `None` when there are none.
    pub fn collect(errors: Vec<PolicyError>) -> Option<PolicyErrors> {
        let mut errors = errors;
        // A stable sort keeps the discovery order among errors at one position.
        errors.sort_by_key(|error| error.position().unwrap_or((usize::MAX, usize::MAX)));
        let mut unique: Vec<PolicyError> = Vec::with_capacity(errors.len());
        for error in errors {
            if !unique.contains(&error) {
                unique.push(error);
            }
        }
        if unique.is_empty() {
            return None;
        }
        let omitted = unique.len().saturating_sub(MAX_REPORTED_ERRORS);
        unique.truncate(MAX_REPORTED_ERRORS);
        Some(PolicyErrors {
            errors: unique,
            omitted,
            truncated: false,
        })
    }

    /// Marks that the search for errors stopped early, so that more may follow.
    pub(crate) fn truncated(mut self) -> PolicyErrors {
        self.truncated = true;
        self
    }

    /// The first error in file order.
    pub fn first(&self) -> &PolicyError {
        &self.errors[0]
    }

    /// The reported errors, in file order.
    pub fn errors(&self) -> &[PolicyError] {
        &self.errors
    }

    /// How many further errors were found but not reported.
    pub fn omitted(&self) -> usize {
        self.omitted
    }

    /// Whether the search stopped early, so that there may be more errors than counted.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }
}

impl From<PolicyError> for PolicyErrors {
    fn from(error: PolicyError) -> PolicyErrors {
        PolicyErrors {
            errors: vec![error],
            omitted: 0,
            truncated: false,
        }
    }
}

impl PolicyErrors {
    /// The one error, when there is exactly one and none was left out: its hint is the whole's.
    fn alone(&self) -> Option<&PolicyError> {
        match self.errors.as_slice() {
            [one] if self.omitted == 0 && !self.truncated => Some(one),
            _ => None,
        }
    }
}

impl fmt::Display for PolicyErrors {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(one) = self.alone() {
            return write!(formatter, "{one}");
        }
        for (index, error) in self.errors.iter().enumerate() {
            if index > 0 {
                writeln!(formatter)?;
            }
            write!(formatter, "{}", error.with_hint())?;
        }
        if self.omitted > 0 || self.truncated {
            let at_least = if self.truncated { "at least " } else { "" };
            write!(
                formatter,
                "\n... and {at_least}{} more error{} (fix these first)",
                self.omitted.max(1),
                if self.omitted == 1 { "" } else { "s" }
            )?;
        }
        Ok(())
    }
}

impl Hinted for PolicyErrors {
    /// The hint of the one error, when there is one alone; several errors print each their own.
    fn hint(&self) -> Option<Cow<'_, str>> {
        self.alone().and_then(Hinted::hint)
    }
}

impl std::error::Error for PolicyErrors {}

/// A value that does not parse, before it is placed: what is wrong (without the field or
/// variable it came from, which the caller puts in front) and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ValueError {
    /// What is wrong, such as `"4m" is below docker's minimum of 6m`.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

impl ValueError {
    /// A value error from its two parts.
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> ValueError {
        ValueError {
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// The error at a location, with `subject` (a field path or a variable name) in front of
    /// the message.
    pub fn at(self, location: Location, subject: &str) -> PolicyError {
        // A message may attach to its subject with a colon (`field: "ALL" is not accepted`).
        let separator = if self.message.starts_with(':') {
            ""
        } else {
            " "
        };
        PolicyError::Invalid {
            location,
            message: format!("{subject}{separator}{}", self.message),
            hint: self.hint,
        }
    }
}
