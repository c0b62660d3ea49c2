//! The error of rendering a spec to docker argv.

/// A spec value the `docker` command line cannot carry unchanged.
///
/// `resolve` validates specs, so these are rare: they name values that are valid for the
/// Engine API but that the docker CLI's flag syntax would split, rewrite or refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// A text value holds a NUL byte, which no process argument can hold. The value itself is
    /// not repeated (it may be an environment value).
    #[error("{field} contains a NUL byte, which no command-line argument can carry; hint: remove it from the profile")]
    Nul {
        /// The spec field path, such as `env.HTTP_PROXY` or `mounts[0].target`.
        field: String,
    },
    /// A value docker's flag syntax would split, rewrite or refuse.
    #[error("{field} = {value:?} cannot be passed to docker: {reason}; hint: {hint}")]
    Unrepresentable {
        /// The spec field path, such as `tmpfs[1].target` or `labels`.
        field: String,
        /// The offending value (never an environment value).
        value: String,
        /// Why docker's syntax cannot carry it.
        reason: &'static str,
        /// What to change.
        hint: &'static str,
    },
}

impl RenderError {
    /// The spec field path the error is about.
    pub fn field(&self) -> &str {
        match self {
            RenderError::Nul { field } | RenderError::Unrepresentable { field, .. } => field,
        }
    }
}
