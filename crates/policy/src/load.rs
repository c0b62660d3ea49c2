//! Loading a profile: TOML text in, a validated [`LoadedProfile`] out, or every independent
//! error at once.
//!
//! Two stages, like a compiler's: the shape stage ([`crate::document`]) reads the text into
//! typed values and collects syntax, unknown-key, type and value errors; the rule stage runs
//! every table's checks (under `rules/`) on what parsed, staying silent about values that did
//! not. The errors come back in file order, each with its file, line, column, field path and
//! hint.

use crate::check::Checker;
use crate::document::{self, LoadedProfile, Removals};
use crate::error::{PolicyError, PolicyErrors};
use crate::rules;

/// Parses and validates one profile. `file` is the name shown in errors.
///
/// A text larger than [`crate::MAX_PROFILE_BYTES`] is refused before parsing; nesting deeper
/// than the TOML parser's recursion limit is a clear error, not a stack overflow. Every
/// independent error is reported, in file order, up to [`crate::error::MAX_REPORTED_ERRORS`].
pub fn load(file: &str, text: &str) -> Result<LoadedProfile, PolicyErrors> {
    let parsed = document::parse(file, text).map_err(|unreadable| {
        let errors = errors(file, unreadable.errors);
        if unreadable.truncated {
            errors.truncated()
        } else {
            errors
        }
    })?;
    let mut found = parsed.errors;
    // Without a readable agent, nearly every rule would speak about a stand-in.
    if !parsed.removals.poisoned.contains("agent") {
        found.extend(rule_errors(&parsed.loaded, &parsed.removals));
    }
    match PolicyErrors::collect(found) {
        Some(errors) => Err(errors),
        None => Ok(parsed.loaded),
    }
}

/// Checks every rule of profile v1 on a loaded profile, as [`load`] does; call it again after
/// changing a loaded profile in code.
pub fn validate(loaded: &LoadedProfile) -> Result<(), PolicyErrors> {
    match PolicyErrors::collect(rule_errors(loaded, &Removals::default())) {
        Some(errors) => Err(errors),
        None => Ok(()),
    }
}

/// The rules of every table, in a fixed order.
fn rule_errors(loaded: &LoadedProfile, removals: &Removals) -> Vec<PolicyError> {
    let mut ck = Checker::new(loaded, removals);
    let profile = &loaded.profile;
    rules::identity::check(&mut ck, profile);
    rules::integrations::check(&mut ck, profile);
    rules::proxy::check(&mut ck, profile);
    rules::egress::check(&mut ck, profile);
    rules::credentials::check(&mut ck, profile);
    rules::decant::check(&mut ck, profile);
    rules::mounts::check(&mut ck, profile);
    rules::image::check(&mut ck, profile);
    rules::logging::check(&mut ck, profile);
    rules::network::check(&mut ck, profile);
    rules::security::check(&mut ck, profile);
    ck.into_errors()
}

/// The errors of a profile that could not be read; `document::parse` fails with at least one.
fn errors(file: &str, found: Vec<PolicyError>) -> PolicyErrors {
    PolicyErrors::collect(found).unwrap_or_else(|| {
        PolicyErrors::from(PolicyError::Invalid {
            location: crate::error::Location::Profile {
                file: file.to_string(),
                field: String::new(),
                position: None,
            },
            message: "the profile could not be read".to_string(),
            hint: "run `agentc validate` on it for details".to_string(),
        })
    })
}

#[cfg(test)]
pub(crate) mod tests;
