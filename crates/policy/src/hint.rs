//! What to do about an error, held as a field beside its message rather than written into it.
//!
//! An error's `Display` says what went wrong; [`Hinted::hint`] says what to do about it. The
//! command line prints both as `MESSAGE`, then `  hint: HINT` on its own line, and that line is
//! written in one place: [`WithHint`] (through [`Hinted::with_hint`] or [`with_hint`]). An error
//! interpolated into a larger message carries its hint across with the same adapter
//! (`format!("...: {}", error.with_hint())`), or hands it on as a field of its own.

use std::borrow::Cow;
use std::fmt;

/// An error (or any message) that may know what to do about it.
pub trait Hinted: fmt::Display {
    /// What to do about it, when known, without the `hint: ` label.
    fn hint(&self) -> Option<Cow<'_, str>>;

    /// The message and its hint, as the command line prints them: [`WithHint`].
    fn with_hint(&self) -> WithHint<'_, Self> {
        WithHint(self)
    }
}

/// Displays a [`Hinted`] value as `MESSAGE`, then `\n  hint: HINT` when it has a hint: the
/// one place that format is written.
pub struct WithHint<'a, T: ?Sized>(pub &'a T);

impl<T: Hinted + ?Sized> fmt::Display for WithHint<'_, T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.0)?;
        match self.0.hint() {
            Some(hint) => write_hint(formatter, &hint),
            None => Ok(()),
        }
    }
}

/// A message and its hint, each given as it is (a message that is text, not an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint<M> {
    /// What went wrong.
    pub message: M,
    /// What to do about it.
    pub hint: Option<String>,
}

impl<M> Hint<M> {
    /// `message` without a hint.
    pub fn none(message: M) -> Hint<M> {
        Hint {
            message,
            hint: None,
        }
    }

    /// `message` with `hint`.
    pub fn new(message: M, hint: impl Into<String>) -> Hint<M> {
        Hint {
            message,
            hint: Some(hint.into()),
        }
    }

    /// `message`, which says `error` within a larger text, with `error`'s hint.
    pub fn carrying(message: M, error: &(impl Hinted + ?Sized)) -> Hint<M> {
        Hint {
            message,
            hint: error.hint().map(Cow::into_owned),
        }
    }
}

impl Hint<String> {
    /// `error`'s message and its hint, each kept as it is.
    pub fn of(error: &(impl Hinted + ?Sized)) -> Hint<String> {
        Hint::carrying(error.to_string(), error)
    }
}

impl<M: fmt::Display> fmt::Display for Hint<M> {
    /// The message alone; [`Hinted::with_hint`] adds the hint.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.message.fmt(formatter)
    }
}

impl<M: fmt::Display> Hinted for Hint<M> {
    fn hint(&self) -> Option<Cow<'_, str>> {
        self.hint.as_deref().map(Cow::Borrowed)
    }
}

/// `message`, then `\n  hint: HINT` when there is a hint: [`WithHint`] over a message that is
/// text.
pub fn with_hint<M: fmt::Display>(message: M, hint: Option<&str>) -> String {
    Hint {
        message,
        hint: hint.map(str::to_string),
    }
    .with_hint()
    .to_string()
}

/// The hint a message still writes into its text (`MESSAGE\n  hint: HINT`, the error's type
/// not yet holding it as a field): everything after the first hint line, trimmed. A reader of
/// such text (`agentc serve`'s `data.hint`) falls back on it when [`Hinted::hint`] is `None`.
pub fn hint_in_text(text: &str) -> Option<&str> {
    text.split_once(HINT_LINE).map(|(_, hint)| hint.trim())
}

const HINT_LINE: &str = "\n  hint: ";

fn write_hint(formatter: &mut fmt::Formatter<'_>, hint: &str) -> fmt::Result {
    write!(formatter, "{HINT_LINE}{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hint_is_its_own_line_after_the_message() {
        let hinted = Hint {
            message: "no such thing",
            hint: Some("make it".to_string()),
        };
        assert_eq!(hinted.to_string(), "no such thing");
        assert_eq!(
            hinted.with_hint().to_string(),
            "no such thing\n  hint: make it"
        );
        assert_eq!(with_hint("bare", None), "bare");
        assert_eq!(hint_in_text("a\n  hint: b \n"), Some("b"));
        assert_eq!(hint_in_text("a"), None);
        assert_eq!(
            with_hint(format_args!("{} {}", 1, 2), Some("h")),
            "1 2\n  hint: h"
        );
        let carried = Hint::carrying(format!("in a launch: {hinted}"), &hinted);
        assert_eq!(
            carried.with_hint().to_string(),
            "in a launch: no such thing\n  hint: make it"
        );
        assert_eq!(
            Hint::of(&hinted),
            Hint::new("no such thing".to_string(), "make it")
        );
    }
}
