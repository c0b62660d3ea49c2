//! The `AGENTC_*` environment overrides: parsed once, before resolving, from the map of the
//! caller's environment.
//!
//! | variable              | value                                   | `off`                        |
//! |-----------------------|-----------------------------------------|------------------------------|
//! | `AGENTC_NETWORK`      | a network name to join                  | -                            |
//! | `AGENTC_MEM_LIMIT`    | a size (`4g`); swap is set equal        | no memory limit              |
//! | `AGENTC_SHM_SIZE`     | a size (`256m`)                         | the daemon's default         |
//! | `AGENTC_CPUS`         | a CPU count (`1.5`)                     | no CPU limit                 |
//! | `AGENTC_PIDS_LIMIT`   | a positive process count                | no process limit             |
//! | `AGENTC_LOG_MAX_SIZE` | a size (`50m`) at which the log rotates | the daemon's default logging |
//! | `AGENTC_LOG_MAX_FILE` | a positive number of rotated files      | -                            |
//! | `AGENTC_ISOLATION_MIN`| an isolation tier (`container`, `gvisor`, `microvm`): the floor, the profile's `prefer` kept | - |
//!
//! `AGENTC_ISOLATION_MIN` (`agentc run --isolation-min`) is how an invocation lowers the
//! profile's isolation floor: never silently, a lower floor than the profile's is a high
//! finding (`isolation-lowered`) and drifts from a lock.
//!
//! A variable that is blank after trimming is unset. An override wins over the profile, which
//! wins over agentc's defaults. A value that does not parse is an error naming the variable:
//! an override is never silently dropped. Each limit is read by the same parser as its
//! profile field, so the two accept the same spellings within the same
//! bounds.

use std::collections::BTreeMap;

use crate::error::{Location, PolicyError, ValueError};
use crate::limits;
pub use crate::limits::Limit;

/// `AGENTC_NETWORK`.
pub const NETWORK: &str = "AGENTC_NETWORK";
/// `AGENTC_MEM_LIMIT`.
pub const MEM_LIMIT: &str = "AGENTC_MEM_LIMIT";
/// `AGENTC_SHM_SIZE`.
pub const SHM_SIZE: &str = "AGENTC_SHM_SIZE";
/// `AGENTC_CPUS`.
pub const CPUS: &str = "AGENTC_CPUS";
/// `AGENTC_PIDS_LIMIT`.
pub const PIDS_LIMIT: &str = "AGENTC_PIDS_LIMIT";
/// `AGENTC_LOG_MAX_SIZE`.
pub const LOG_MAX_SIZE: &str = "AGENTC_LOG_MAX_SIZE";
/// `AGENTC_LOG_MAX_FILE`.
pub const LOG_MAX_FILE: &str = "AGENTC_LOG_MAX_FILE";
/// `AGENTC_ISOLATION_MIN`.
pub const ISOLATION_MIN: &str = "AGENTC_ISOLATION_MIN";

/// Every variable this module reads, in the order of the table above.
pub const VARIABLES: &[&str] = &[
    NETWORK,
    MEM_LIMIT,
    SHM_SIZE,
    CPUS,
    PIDS_LIMIT,
    LOG_MAX_SIZE,
    LOG_MAX_FILE,
    ISOLATION_MIN,
];

/// The parsed `AGENTC_*` overrides; `None` means the variable is unset or blank.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `AGENTC_NETWORK`: the named network to join.
    pub network: Option<String>,
    /// `AGENTC_MEM_LIMIT`: memory (and memory plus swap) in bytes.
    pub memory_bytes: Option<Limit<u64>>,
    /// `AGENTC_SHM_SIZE`: `/dev/shm` size in bytes.
    pub shm_size_bytes: Option<Limit<u64>>,
    /// `AGENTC_CPUS`: billionths of a CPU.
    pub nano_cpus: Option<Limit<u64>>,
    /// `AGENTC_PIDS_LIMIT`: maximum number of processes.
    pub pids_limit: Option<Limit<u32>>,
    /// `AGENTC_LOG_MAX_SIZE`: the json-file rotation size in bytes; `Off` keeps the daemon's
    /// default logging.
    pub log_max_size_bytes: Option<Limit<u64>>,
    /// `AGENTC_LOG_MAX_FILE`: the number of rotated files kept.
    pub log_max_file: Option<u32>,
    /// `AGENTC_ISOLATION_MIN`: the isolation floor in place of the profile's.
    pub isolation_min: Option<crate::isolation::IsolationTier>,
}

/// Parses the `AGENTC_*` overrides out of an environment map.
pub fn parse_overrides(env: &BTreeMap<String, String>) -> Result<Overrides, PolicyError> {
    let value = |name: &str| {
        env.get(name)
            .map(|value| value.trim())
            .filter(|value| !value.is_empty())
    };
    fn read<T>(
        variable: &str,
        text: Option<&str>,
        parse: fn(&str) -> Result<T, ValueError>,
    ) -> Result<Option<T>, PolicyError> {
        text.map(|text| {
            parse(text).map_err(|error| {
                error.at(
                    Location::Environment {
                        variable: variable.to_string(),
                    },
                    variable,
                )
            })
        })
        .transpose()
    }
    Ok(Overrides {
        network: value(NETWORK).map(parse_network).transpose()?,
        memory_bytes: read(MEM_LIMIT, value(MEM_LIMIT), limits::memory)?,
        shm_size_bytes: read(SHM_SIZE, value(SHM_SIZE), limits::shm_size)?,
        nano_cpus: read(CPUS, value(CPUS), limits::cpus)?,
        pids_limit: read(PIDS_LIMIT, value(PIDS_LIMIT), limits::pids)?,
        log_max_size_bytes: read(LOG_MAX_SIZE, value(LOG_MAX_SIZE), limits::log_max_size)?,
        log_max_file: read(LOG_MAX_FILE, value(LOG_MAX_FILE), limits::log_max_file)?,
        isolation_min: value(ISOLATION_MIN).map(parse_tier).transpose()?,
    })
}

/// Refuses an `AGENTC_*` name that is not an override but lies a typo away from one
/// (`AGENTC_MEM_LIMT`, `AGENTC_CPU`): the limit it was meant to set would silently not apply.
/// Other `AGENTC_*` names pass (agentc's test switch `AGENTC_REQUIRE_DOCKER`, a user's own
/// variables), as does every name without the prefix. Only the name is read, never a value.
pub fn check_variable_name(name: &str) -> Result<(), PolicyError> {
    let Some(suffix) = name.strip_prefix("AGENTC_") else {
        return Ok(());
    };
    if VARIABLES.contains(&name) {
        return Ok(());
    }
    let known: Vec<String> = VARIABLES
        .iter()
        .map(|variable| variable.trim_start_matches("AGENTC_").to_string())
        .collect();
    match crate::text::closest(suffix, &known) {
        Some(close) => Err(invalid(
            name,
            format!("{name} is not a variable agentc reads, so it sets nothing"),
            &format!("did you mean AGENTC_{close}? rename the variable, or unset it"),
        )),
        None => Ok(()),
    }
}

fn invalid(variable: &str, message: String, hint: &str) -> PolicyError {
    PolicyError::Invalid {
        location: Location::Environment {
            variable: variable.to_string(),
        },
        message,
        hint: hint.to_string(),
    }
}

/// Reads an isolation tier, as `security.isolation.min` spells it.
fn parse_tier(text: &str) -> Result<crate::isolation::IsolationTier, PolicyError> {
    crate::isolation::IsolationTier::ALL
        .into_iter()
        .find(|tier| tier.as_str().eq_ignore_ascii_case(text))
        .ok_or_else(|| {
            invalid(
                ISOLATION_MIN,
                format!("{text:?} is not an isolation tier"),
                "write container, gvisor or microvm (weakest first)",
            )
        })
}

/// Accepts a Docker network name; `host` and `container:...` would share a namespace with
/// something outside the sandbox and are refused.
fn parse_network(text: &str) -> Result<String, PolicyError> {
    let hint = "name a user-defined network, such as one made with `docker network create`";
    if text == "host" {
        return Err(invalid(
            NETWORK,
            "the host network would give the container the host's network stack".to_string(),
            hint,
        ));
    }
    // Regression (`network_off_is_not_a_network_name`): `off` removes the other overrides'
    // limits, but here it was taken as a network named "off".
    if text.eq_ignore_ascii_case("off") {
        return Err(invalid(
            NETWORK,
            "AGENTC_NETWORK has no `off`: it names a network to join".to_string(),
            "unset AGENTC_NETWORK to keep the profile's network",
        ));
    }
    let mut chars = text.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if !first_ok || !rest_ok {
        return Err(invalid(
            NETWORK,
            format!("{text:?} is not a network name (letters, digits, _ . -, starting with a letter or digit)"),
            hint,
        ));
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests;
