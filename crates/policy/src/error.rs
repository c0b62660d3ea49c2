//! Errors of the policy crate: every one names where the bad value is and what to do.

use std::fmt;

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
/// Displayed as `FILE:LINE:COLUMN: FIELD: MESSAGE` followed by `  hint: HINT`. Messages are
/// lower case without a final period and never contain a secret's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The input is not valid: bad TOML, a bad value, or fields that contradict each other.
    #[error("{location}: {message}\n  hint: {hint}")]
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
    #[error("{location}: {message}\n  hint: {hint}")]
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
