//! The lifecycle's one error type: each variant carries the input it refuses.

use std::fmt;

/// Why a lifecycle step refused its input. Displays as `WHERE: MESSAGE`; its hint is
/// [`Hinted::hint`](agentc_policy::Hinted::hint) (printed on its own line, `  hint: HINT`, by
/// [`Hinted::with_hint`](agentc_policy::Hinted::with_hint)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LifecycleError {
    /// A state or lock file that cannot be read as what it claims to be: corrupt, truncated,
    /// hand-edited into another shape, or of another version.
    #[error("{}: {message}", at(file, *line, *column))]
    Corrupt {
        /// The file.
        file: String,
        /// 1-based line of the offending value, where known.
        line: Option<usize>,
        /// 1-based column, where known.
        column: Option<usize>,
        /// What is wrong.
        message: String,
        /// How to recover.
        hint: String,
    },
    /// A starter profile that cannot be written as asked (`agentc init`).
    #[error("{option}: {message}")]
    Init {
        /// The command-line option at fault.
        option: String,
        /// What is wrong.
        message: String,
        /// How to fix it.
        hint: String,
    },
    /// A state transition that is refused (a rollback with nothing to return to, a state of
    /// another profile).
    #[error("{file}: {message}")]
    Refused {
        /// The state file.
        file: String,
        /// Why.
        message: String,
        /// What to do instead.
        hint: String,
    },
}

impl agentc_policy::Hinted for LifecycleError {
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            LifecycleError::Corrupt { hint, .. }
            | LifecycleError::Init { hint, .. }
            | LifecycleError::Refused { hint, .. } => Some(std::borrow::Cow::Borrowed(hint)),
        }
    }
}

fn at(file: &str, line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!("{file}:{line}:{column}"),
        (Some(line), None) => format!("{file}:{line}"),
        _ => file.to_string(),
    }
}

/// 1-based line and column of a byte offset in `text`.
pub fn position(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(0, |tail| tail.chars().count())
        + 1;
    (line, column)
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Reads `text` (the contents of `file`) as TOML into `T`; an error names the file, the line
/// and column of the offending value, and `hint`.
pub fn parse_toml<T: serde::de::DeserializeOwned>(
    file: &str,
    text: &str,
    hint: &str,
) -> Result<T, LifecycleError> {
    toml::from_str(text).map_err(|error| {
        let (line, column) = match error.span() {
            Some(span) => {
                let (line, column) = position(text, span.start);
                (Some(line), Some(column))
            }
            None => (None, None),
        };
        LifecycleError::Corrupt {
            file: file.to_string(),
            line,
            column,
            message: error.message().trim().replace('\n', " "),
            hint: hint.to_string(),
        }
    })
}

/// A display of a value for a drift or an error line: `(none)` for absent.
pub(crate) fn shown(value: Option<&str>) -> String {
    value.map_or_else(|| "(none)".to_string(), str::to_string)
}

impl LifecycleError {
    /// A corrupt file, positioned at the first occurrence of `needle` in its `text` (the
    /// offending value, found again after serde read it), or at no line when it is not there.
    pub(crate) fn corrupt_at(
        file: &str,
        text: &str,
        needle: &str,
        message: impl fmt::Display,
        hint: impl Into<String>,
    ) -> LifecycleError {
        let (line, column) = text
            .find(needle)
            .filter(|_| !needle.is_empty())
            .map(|offset| position(text, offset))
            .unzip();
        LifecycleError::Corrupt {
            file: file.to_string(),
            line,
            column,
            message: message.to_string(),
            hint: hint.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_policy::Hinted;

    #[test]
    fn positions_count_lines_and_characters_from_one() {
        assert_eq!(position("a\nbc\nd", 0), (1, 1));
        assert_eq!(position("a\nbc\nd", 3), (2, 2));
        assert_eq!(position("a\nbc\nd", 99), (3, 2));
        assert_eq!(position("é\nx", 1), (1, 1));
    }

    #[test]
    fn a_toml_error_names_file_line_and_column() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Doc {
            number: u32,
        }
        let error = parse_toml::<Doc>("x.lock", "\n\nnumber = \"seven\"\n", "fix it").unwrap_err();
        let text = error.with_hint().to_string();
        assert!(text.starts_with("x.lock:3:10: "), "{text}");
        assert!(text.ends_with("\n  hint: fix it"), "{text}");
    }
}
