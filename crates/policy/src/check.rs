//! The rule stage of loading: a [`Checker`] that the rules of each table (under `rules/`) report
//! into, collecting every error instead of stopping at the first.
//!
//! A rule that reads a value the shape stage took out (a *poisoned* path, see
//! [`crate::document`]) stays silent: its error would only repeat the shape error, or be
//! wrong, since the value it sees is a default. Single-field rules name their field; rules
//! about several fields name them all with [`Checker::fail_when`].
//!
//! Messages never echo the value of an environment-variable-name field: a user who pastes a
//! key where its variable's name belongs must not see the key printed back.

use crate::document::{is_within, LoadedProfile, Removals};
use crate::error::PolicyError;
use crate::paths::DOCKER_HOST;
use crate::text::{http_url_host, is_env_name, is_volume_name, unprintable};

/// Collects the rule errors of one profile.
pub(crate) struct Checker<'a> {
    /// The profile being checked.
    pub loaded: &'a LoadedProfile,
    removals: &'a Removals,
    errors: Vec<PolicyError>,
}

impl<'a> Checker<'a> {
    /// A checker of `loaded`, silent about the paths the shape stage took out.
    pub fn new(loaded: &'a LoadedProfile, removals: &'a Removals) -> Checker<'a> {
        Checker {
            loaded,
            removals,
            errors: Vec::new(),
        }
    }

    /// The errors reported, in the order found.
    pub fn into_errors(self) -> Vec<PolicyError> {
        self.errors
    }

    /// Whether a field (a path as written), a value inside it or a table around it was
    /// taken out.
    fn is_poisoned(&self, field: &str) -> bool {
        self.removals
            .poisoned
            .iter()
            .any(|path| is_within(field, path) || is_within(path, field))
    }

    /// Reports an error at `field`, unless `field` is poisoned.
    pub fn fail(&mut self, field: &str, message: impl Into<String>, hint: impl Into<String>) {
        self.fail_when(&[], field, message, hint);
    }

    /// Reports an error at `field` of a rule that also reads `depends_on`, unless one of them
    /// or `field` is poisoned.
    pub fn fail_when(
        &mut self,
        depends_on: &[&str],
        field: &str,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) {
        // The profile value's arrays lack the items taken out: name the item as written, in
        // the location and in the message.
        let written = self.removals.original_field(field);
        let mut message = message.into();
        if written != field {
            message = message.replace(field, &written);
        }
        let field = written;
        let depends_on = depends_on
            .iter()
            .map(|path| self.removals.original_field(path));
        if self.is_poisoned(&field) || depends_on.into_iter().any(|path| self.is_poisoned(&path)) {
            return;
        }
        self.errors.push(PolicyError::Invalid {
            location: self.loaded.location(&field),
            message,
            hint: hint.into(),
        });
    }

    /// Non-blank text on one line, without NUL bytes or control characters.
    pub fn line(&mut self, field: &str, value: &str, what: &str) -> bool {
        if value.trim().is_empty() {
            self.fail(
                field,
                format!("{field} is blank"),
                format!("write {what}, or remove the field"),
            );
            return false;
        }
        if value.contains(['\n', '\r', '\0']) {
            self.fail(
                field,
                format!("{field} must be a single line without nul bytes"),
                format!("write {what} on one line"),
            );
            return false;
        }
        // Regression (`escape_sequences_in_text_fields_are_refused`): other control
        // characters (ESC, BEL) passed, and `agentc explain` or a shell line printed them raw,
        // letting a profile rewrite the reviewer's terminal. A tab is harmless and allowed.
        if value.chars().any(|c| c.is_control() && c != '\t') {
            self.fail(
                field,
                format!("{field} must not contain control characters"),
                format!("write {what} as plain text"),
            );
            return false;
        }
        true
    }

    /// Non-blank text without whitespace or control characters (hosts, addresses), not
    /// starting with `-`.
    pub fn token(&mut self, field: &str, value: &str, what: &str) -> bool {
        if !self.line(field, value, what) {
            return false;
        }
        if let Some(problem) = unprintable(value.trim()) {
            self.fail(
                field,
                format!("{field} must not contain {problem}"),
                format!("write {what} as a single word"),
            );
            return false;
        }
        // Regression (`hosts_and_users_starting_with_a_dash_are_refused`): no host, address
        // or user name starts with '-', and the tools that receive these values (ssh in the
        // egress gateway, curl) would read one as an option (`-oProxyCommand=...`).
        if value.trim().starts_with('-') {
            self.fail(
                field,
                format!("{field} must not start with '-'"),
                format!(
                    "write {what}; a value starting with '-' would be read as an option by the \
                     tools that receive it"
                ),
            );
            return false;
        }
        true
    }

    /// The name of an environment variable that holds a secret.
    pub fn env_name(&mut self, field: &str, value: &str) -> bool {
        if !is_env_name(value) {
            self.fail(
                field,
                format!("{field} must be an upper-case environment variable name"),
                "write the NAME of the variable that holds the secret, such as `API_KEY` \
                 (A-Z, 0-9 and _, not starting with a digit), never the secret itself",
            );
            return false;
        }
        // The docker CLI passes `--env=NAME` from its own environment, and reads the DOCKER_*
        // variables itself: setting DOCKER_CONFIG or DOCKER_CONTEXT so that the agent gets a
        // secret would also change what docker does. DOCKER_HOST is refused with its own
        // message (and allow field) by the security rules.
        if value.starts_with("DOCKER_") && value != DOCKER_HOST {
            self.fail(
                field,
                format!("{field} {value} is a variable the docker CLI reads itself"),
                "name a variable of your own for the secret, such as `AGENT_API_KEY`; the \
                 docker CLI would act on this one too",
            );
            return false;
        }
        true
    }

    /// An http(s) URL with a host.
    pub fn http_url(&mut self, field: &str, value: &str) -> bool {
        if let Err(reason) = http_url_host(value) {
            self.fail(
                field,
                format!("{field} is not an http(s) url with a host: {reason}"),
                "write a url such as `https://host.example:8443/path`",
            );
            return false;
        }
        true
    }

    /// A docker volume name.
    pub fn volume_name(&mut self, field: &str, value: &str) -> bool {
        if !is_volume_name(value) {
            self.fail(
                field,
                format!("{field} is not a docker volume name"),
                "start with a letter or digit and use only A-Z, a-z, 0-9, _, . or -, \
                 at most 255 characters",
            );
            return false;
        }
        true
    }

    /// One image reference, which docker must not read as an option.
    pub fn image_reference(&mut self, field: &str, value: &str) -> bool {
        if value.is_empty() {
            self.fail(
                field,
                format!("{field} is empty"),
                "write an image reference such as `ghcr.io/owner/image:tag`",
            );
            return false;
        }
        if let Some(problem) = unprintable(value) {
            self.fail(
                field,
                format!("{field} must not contain {problem}"),
                "write a single image reference such as `ghcr.io/owner/image:tag`",
            );
            return false;
        }
        if value.starts_with('-') {
            self.fail(
                field,
                format!("{field} must not start with '-'"),
                "an image reference starting with '-' would be read as a docker option; \
                 write the image's name",
            );
            return false;
        }
        true
    }

    /// An absolute container path must be clean: no `.`, `..` or empty components (a trailing
    /// `/` is allowed).
    ///
    /// Regression (`mount_targets_with_dot_dot_are_refused`): `/home/claude/../../etc` passed
    /// the absolute-path check, escaped the overlap, reserved-target and inside-the-home
    /// checks (which compare text), and reached docker, which cleans it to `/etc`.
    pub fn clean_container_path(&mut self, field: &str, path: &str) -> bool {
        let clean = crate::paths::normalize_path(path);
        if path.starts_with('/') && clean != path.trim_end_matches('/') {
            self.fail(
                field,
                format!(
                    "{field} must be a clean absolute path without `.`, `..` or empty components"
                ),
                format!("write the path as {clean}"),
            );
            return false;
        }
        true
    }
}
