//! The writer of `agentc explain`'s text, which each table's explanation (under `rules/`)
//! writes its section with: lines, `label: value  [origin]` items, sections, and every origin
//! in words. Control characters in values are shown escaped.

use crate::document::LoadedProfile;
use crate::spec::{LaunchSpec, Origin};

/// An origin in words: `default`, `preset claude-code`, `profile line 12 (resources.memory)`,
/// `env AGENTC_MEM_LIMIT`, `invocation --workspace`.
pub fn origin_words(origin: &Origin) -> String {
    match origin {
        Origin::Default => "default".to_string(),
        Origin::Preset { agent } => format!("preset {agent}"),
        Origin::Profile {
            field,
            line: Some(line),
            ..
        } => format!("profile line {line} ({field})"),
        Origin::Profile { field, .. } => format!("profile ({field})"),
        Origin::Environment { variable } => format!("env {variable}"),
        Origin::Invocation { input } => format!("invocation {input}"),
    }
}

/// The explanation being written.
pub(crate) struct Explainer<'a> {
    /// The launch explained.
    pub spec: &'a LaunchSpec,
    /// The profile it came from.
    pub profile: &'a LoadedProfile,
    /// The text so far.
    pub text: String,
}

impl Explainer<'_> {
    /// The origin recorded at `key`.
    pub fn origin(&self, key: &str) -> Option<&Origin> {
        self.spec.origins.get(key)
    }

    /// ` [origin]` for a key, or nothing when the spec records none.
    pub fn from(&self, key: &str) -> String {
        match self.origin(key) {
            Some(origin) => format!("  [{}]", origin_words(origin)),
            None => String::new(),
        }
    }

    /// The origin at `key` in words, `default` when none is recorded.
    pub fn words(&self, key: &str) -> String {
        self.origin(key)
            .map(origin_words)
            .unwrap_or_else(|| "default".to_string())
    }

    /// `profile line N (field)` for a field the profile wrote, else `default`.
    pub fn at(&self, field: &str) -> String {
        match self.profile.position(field) {
            Some((line, _)) => format!("profile line {line} ({field})"),
            None => "default".to_string(),
        }
    }

    /// Appends one line. Control characters in it (a newline or an escape sequence inside a
    /// command argument or an environment value) are shown escaped, so that a value can
    /// neither forge a line of the explanation nor drive the terminal.
    pub fn line(&mut self, text: impl AsRef<str>) {
        for c in text.as_ref().chars() {
            if c.is_control() && c != '\t' {
                self.text.extend(c.escape_default());
            } else {
                self.text.push(c);
            }
        }
        self.text.push('\n');
    }

    /// `  label: value  [origin of key]`.
    pub fn item(&mut self, label: &str, value: impl AsRef<str>, key: &str) {
        let from = self.from(key);
        self.line(format!("  {label}: {}{from}", value.as_ref()));
    }

    /// A blank line and a section title.
    pub fn section(&mut self, title: &str) {
        self.line("");
        self.line(title);
    }
}
