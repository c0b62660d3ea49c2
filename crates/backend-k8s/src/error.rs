//! Why a launch cannot be rendered for Kubernetes: each refusal names the field that asks for it.

use std::borrow::Cow;
use std::fmt;

use agentc_policy::Hinted;

/// One value of a launch that has no faithful, at-least-as-strict Kubernetes rendering, or an
/// option of the renderer that is missing or malformed.
///
/// `field` is the profile field path where the launch records one (`mounts[0]`,
/// `security.add_capabilities[1]`), else the invocation option (`--workspace-claim`) or the
/// spec path (`cap_add.NET_ADMIN`). It displays as `FIELD: MESSAGE`; what to do about it is
/// [`Hinted::hint`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// The launch asks for something a Pod cannot do at all, or not within Pod Security.
    #[error("{field}: {message}")]
    Refused {
        /// The field that asks for it.
        field: String,
        /// What cannot be rendered, and why.
        message: String,
        /// What to change.
        hint: String,
    },
    /// A renderer option (or a value that becomes an object name) is not a valid Kubernetes
    /// name.
    #[error("{field}: {value:?} is not a valid {what}")]
    InvalidName {
        /// The option or field holding it (`--namespace`, `mounts./home/claude`).
        field: String,
        /// The offending value.
        value: String,
        /// What it should be (`DNS-1123 label`).
        what: &'static str,
        /// What to change.
        hint: String,
    },
    /// A rendered pod breaks a Pod Security rule of its level: a bug of the renderer, refused
    /// rather than printed.
    #[error("{field}: the rendering breaks Pod Security rule {rule}: {detail}")]
    PodSecurity {
        /// The object and the pod field path.
        field: String,
        /// The rule broken.
        rule: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// An option the launch needs was not given.
    #[error("{field}: {message}")]
    MissingOption {
        /// The profile field whose value needs the option.
        field: String,
        /// What is missing.
        message: String,
        /// The option to pass.
        hint: String,
    },
}

impl Hinted for RenderError {
    /// What to change: every refusal knows.
    fn hint(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(match self {
            RenderError::Refused { hint, .. }
            | RenderError::InvalidName { hint, .. }
            | RenderError::MissingOption { hint, .. } => hint,
            RenderError::PodSecurity { .. } => {
                "this is a bug of agentc's kubernetes backend; please report it with the profile"
            }
        }))
    }
}

impl RenderError {
    /// The field the error is about.
    pub fn field(&self) -> &str {
        match self {
            RenderError::Refused { field, .. }
            | RenderError::InvalidName { field, .. }
            | RenderError::PodSecurity { field, .. }
            | RenderError::MissingOption { field, .. } => field,
        }
    }
}

/// Every refusal of one rendering, in the order of the spec's fields; never empty.
///
/// The renderer does not stop at the first problem, so one run names everything a profile
/// must change for Kubernetes. One refusal alone displays as `the kubernetes backend refuses
/// FIELD: MESSAGE`, its hint the whole's ([`Hinted::hint`]); several display as a list, each
/// with its own hint ([`Hinted::with_hint`]), and the whole has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderErrors(pub Vec<RenderError>);

impl RenderErrors {
    /// The fields refused, in order.
    pub fn fields(&self) -> Vec<&str> {
        self.0.iter().map(RenderError::field).collect()
    }
}

impl fmt::Display for RenderErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [one] => write!(f, "the kubernetes backend refuses {one}"),
            many => {
                write!(f, "the kubernetes backend refuses {} fields:", many.len())?;
                for error in many {
                    let text = error.with_hint().to_string().replace('\n', "\n    ");
                    write!(f, "\n  - {text}")?;
                }
                Ok(())
            }
        }
    }
}

impl Hinted for RenderErrors {
    /// The hint of the one refusal, when there is one alone; several print each their own.
    fn hint(&self) -> Option<Cow<'_, str>> {
        match self.0.as_slice() {
            [one] => one.hint(),
            _ => None,
        }
    }
}

impl std::error::Error for RenderErrors {}
