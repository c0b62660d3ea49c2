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
//!
//! A variable that is blank after trimming is unset. An override wins over the profile, which
//! wins over agentc's defaults. A value that does not parse is an error naming the variable:
//! an override is never silently dropped.

use std::collections::BTreeMap;

use crate::error::{Location, PolicyError};
use crate::units::{parse_cpus, parse_size};
use crate::validate::{
    MAX_LOG_FILES, MAX_NANO_CPUS, MAX_PIDS_LIMIT, MAX_SIZE_BYTES, MIN_LOG_SIZE_BYTES,
    MIN_MEMORY_BYTES, MIN_NANO_CPUS,
};

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

/// Every variable this module reads, in the order of the table above.
pub const VARIABLES: &[&str] = &[
    NETWORK,
    MEM_LIMIT,
    SHM_SIZE,
    CPUS,
    PIDS_LIMIT,
    LOG_MAX_SIZE,
    LOG_MAX_FILE,
];

/// A limit override: a value, or `off` to remove the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit<T> {
    /// `off`: no limit (the daemon's default).
    Off,
    /// This limit.
    Value(T),
}

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
}

/// Parses the `AGENTC_*` overrides out of an environment map.
pub fn parse_overrides(env: &BTreeMap<String, String>) -> Result<Overrides, PolicyError> {
    let value = |name: &str| {
        env.get(name)
            .map(|value| value.trim())
            .filter(|value| !value.is_empty())
    };
    let mut overrides = Overrides::default();
    if let Some(text) = value(NETWORK) {
        overrides.network = Some(parse_network(text)?);
    }
    if let Some(text) = value(MEM_LIMIT) {
        overrides.memory_bytes = Some(limit(MEM_LIMIT, text, memory_size, SIZE_HINT)?);
    }
    if let Some(text) = value(SHM_SIZE) {
        overrides.shm_size_bytes = Some(limit(SHM_SIZE, text, bounded_size, SIZE_HINT)?);
    }
    if let Some(text) = value(CPUS) {
        overrides.nano_cpus = Some(limit(CPUS, text, cpu_count, CPUS_HINT)?);
    }
    if let Some(text) = value(PIDS_LIMIT) {
        overrides.pids_limit = Some(limit(PIDS_LIMIT, text, pids_count, COUNT_HINT)?);
    }
    if let Some(text) = value(LOG_MAX_SIZE) {
        overrides.log_max_size_bytes = Some(limit(LOG_MAX_SIZE, text, log_size, LOG_SIZE_HINT)?);
    }
    if let Some(text) = value(LOG_MAX_FILE) {
        let count =
            log_files(text).map_err(|message| invalid(LOG_MAX_FILE, message, COUNT_HINT))?;
        overrides.log_max_file = Some(count);
    }
    Ok(overrides)
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
    match crate::load::closest(suffix, &known) {
        Some(close) => Err(invalid(
            name,
            format!("{name} is not a variable agentc reads, so it sets nothing"),
            &format!("did you mean AGENTC_{close}? rename the variable, or unset it"),
        )),
        None => Ok(()),
    }
}

const SIZE_HINT: &str = "use a size such as 512m or 4g, or off to remove the limit";
const LOG_SIZE_HINT: &str =
    "use a size such as 50m, or off to keep the daemon's default (unbounded) logging";
const CPUS_HINT: &str = "use a CPU count such as 1.5 or 2, or off to remove the limit";
const COUNT_HINT: &str = "use a positive whole number, or leave the variable empty";

fn invalid(variable: &str, message: String, hint: &str) -> PolicyError {
    PolicyError::Invalid {
        location: Location::Environment {
            variable: variable.to_string(),
        },
        message,
        hint: hint.to_string(),
    }
}

fn limit<T>(
    variable: &str,
    text: &str,
    parse: impl Fn(&str) -> Result<T, String>,
    hint: &str,
) -> Result<Limit<T>, PolicyError> {
    if text.eq_ignore_ascii_case("off") {
        return Ok(Limit::Off);
    }
    parse(text)
        .map(Limit::Value)
        .map_err(|message| invalid(variable, message, hint))
}

fn positive_size(text: &str) -> Result<u64, String> {
    match parse_size(text)? {
        0 => Err(format!("size {text:?} is zero")),
        bytes => Ok(bytes),
    }
}

/// The bounds the profile's fields have (see [`crate::validate`]) hold for the overrides too,
/// so that the environment cannot produce a launch the profile could not.
fn bounded_size(text: &str) -> Result<u64, String> {
    let bytes = positive_size(text)?;
    if bytes > MAX_SIZE_BYTES {
        return Err(format!(
            "size {text:?} is larger than {MAX_SIZE_BYTES} bytes, the largest docker parses exactly"
        ));
    }
    Ok(bytes)
}

fn memory_size(text: &str) -> Result<u64, String> {
    let bytes = bounded_size(text)?;
    if bytes < MIN_MEMORY_BYTES {
        return Err(format!("size {text:?} is below docker's minimum of 6m"));
    }
    Ok(bytes)
}

fn log_size(text: &str) -> Result<u64, String> {
    let bytes = bounded_size(text)?;
    if bytes < MIN_LOG_SIZE_BYTES {
        return Err(format!("size {text:?} is below 1k"));
    }
    Ok(bytes)
}

fn cpu_count(text: &str) -> Result<u64, String> {
    let nano_cpus = parse_cpus(text)?;
    if nano_cpus > MAX_NANO_CPUS {
        return Err(format!("{text:?} is more than 1024 cpus"));
    }
    if nano_cpus < MIN_NANO_CPUS {
        return Err(format!("{text:?} is below docker's minimum of 0.01 cpus"));
    }
    Ok(nano_cpus)
}

fn pids_count(text: &str) -> Result<u32, String> {
    let count = positive_count(text)?;
    if i64::from(count) > MAX_PIDS_LIMIT {
        return Err(format!("{text:?} is more than {MAX_PIDS_LIMIT} processes"));
    }
    Ok(count)
}

fn log_files(text: &str) -> Result<u32, String> {
    let count = positive_count(text)?;
    if i64::from(count) > MAX_LOG_FILES {
        return Err(format!("{text:?} is more than {MAX_LOG_FILES} files"));
    }
    Ok(count)
}

fn positive_count(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(0) => Err(format!("{text:?} is zero")),
        Ok(count) => Ok(count),
        Err(_) => Err(format!("{text:?} is not a positive whole number")),
    }
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
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn variable_of(error: PolicyError) -> String {
        match error.location() {
            Location::Environment { variable } => variable.clone(),
            other => panic!("unexpected location {other:?}"),
        }
    }

    #[test]
    fn a_misspelled_override_is_refused_and_other_names_pass() {
        for (name, meant) in [
            ("AGENTC_MEM_LIMT", MEM_LIMIT),
            ("AGENTC_CPU", CPUS),
            ("AGENTC_PID_LIMIT", PIDS_LIMIT),
            ("AGENTC_SHMSIZE", SHM_SIZE),
            ("AGENTC_LOG_MAXFILE", LOG_MAX_FILE),
            ("AGENTC_NETWROK", NETWORK),
            ("agentc_mem_limit", MEM_LIMIT),
        ] {
            if !name.starts_with("AGENTC_") {
                // The prefix is case-sensitive, like every environment variable name.
                assert!(check_variable_name(name).is_ok(), "{name}");
                continue;
            }
            let error = check_variable_name(name).unwrap_err();
            assert_eq!(variable_of(error.clone()), name);
            assert!(error.to_string().contains("sets nothing"), "{error}");
            assert!(
                error
                    .to_string()
                    .contains(&format!("hint: did you mean {meant}?")),
                "{error}"
            );
        }
        for name in VARIABLES.iter().copied().chain([
            "AGENTC_REQUIRE_DOCKER",
            "AGENTC_TEST_PROVIDER_KEY",
            "AGENTC_HOME",
            "PATH",
            "MEM_LIMIT",
        ]) {
            assert!(check_variable_name(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn network_off_is_not_a_network_name() {
        let error = parse_overrides(&env(&[(NETWORK, "OFF")])).unwrap_err();
        assert_eq!(variable_of(error.clone()), NETWORK);
        assert!(
            error.to_string().contains("AGENTC_NETWORK has no `off`"),
            "{error}"
        );
    }

    #[test]
    fn overrides_keep_the_bounds_of_the_profile_fields() {
        for (variable, value, message) in [
            (MEM_LIMIT, "4m", "size \"4m\" is below docker's minimum of 6m"),
            (
                MEM_LIMIT,
                "8p",
                "size \"8p\" is larger than 9007199254740991 bytes, the largest docker parses exactly",
            ),
            (
                SHM_SIZE,
                "9007199254740992",
                "size \"9007199254740992\" is larger than 9007199254740991 bytes, the largest docker parses exactly",
            ),
            (CPUS, "1025", "\"1025\" is more than 1024 cpus"),
            (CPUS, "0.009", "\"0.009\" is below docker's minimum of 0.01 cpus"),
            (PIDS_LIMIT, "4194305", "\"4194305\" is more than 4194304 processes"),
            (LOG_MAX_SIZE, "512b", "size \"512b\" is below 1k"),
            (LOG_MAX_FILE, "101", "\"101\" is more than 100 files"),
        ] {
            match parse_overrides(&env(&[(variable, value)])) {
                Err(PolicyError::Invalid {
                    location: Location::Environment { variable: named },
                    message: actual,
                    ..
                }) => {
                    assert_eq!(named, variable);
                    assert_eq!(actual, message, "{variable}={value}");
                }
                other => panic!("{variable}={value}: {other:?}"),
            }
        }
        let parsed = parse_overrides(&env(&[(MEM_LIMIT, "6m"), (CPUS, "1024")])).unwrap();
        assert_eq!(parsed.memory_bytes, Some(Limit::Value(6 * 1024 * 1024)));
        assert_eq!(parsed.nano_cpus, Some(Limit::Value(1024 * 1_000_000_000)));
    }

    #[test]
    fn blank_and_absent_variables_are_unset() {
        let parsed = parse_overrides(&env(&[
            (NETWORK, "  "),
            (MEM_LIMIT, ""),
            (PIDS_LIMIT, "\t"),
            ("UNRELATED", "x"),
        ]))
        .unwrap();
        assert_eq!(parsed, Overrides::default());
    }

    #[test]
    fn counts_and_network_parse_and_are_trimmed() {
        let parsed = parse_overrides(&env(&[
            (NETWORK, " lab-net "),
            (PIDS_LIMIT, "64"),
            (LOG_MAX_FILE, " 5"),
        ]))
        .unwrap();
        assert_eq!(parsed.network.as_deref(), Some("lab-net"));
        assert_eq!(parsed.pids_limit, Some(Limit::Value(64)));
        assert_eq!(parsed.log_max_file, Some(5));
    }

    #[test]
    fn off_removes_a_limit_in_any_case() {
        let parsed = parse_overrides(&env(&[
            (MEM_LIMIT, "off"),
            (PIDS_LIMIT, "OFF"),
            (LOG_MAX_SIZE, "Off"),
            (CPUS, "off"),
            (SHM_SIZE, "off"),
        ]))
        .unwrap();
        assert_eq!(parsed.memory_bytes, Some(Limit::Off));
        assert_eq!(parsed.pids_limit, Some(Limit::Off));
        assert_eq!(parsed.log_max_size_bytes, Some(Limit::Off));
        assert_eq!(parsed.nano_cpus, Some(Limit::Off));
        assert_eq!(parsed.shm_size_bytes, Some(Limit::Off));
    }

    #[test]
    fn sizes_and_cpus_parse_exactly() {
        let parsed = parse_overrides(&env(&[
            (MEM_LIMIT, "4g"),
            (SHM_SIZE, "256m"),
            (CPUS, "1.5"),
            (LOG_MAX_SIZE, "10m"),
        ]))
        .unwrap();
        assert_eq!(parsed.memory_bytes, Some(Limit::Value(4 << 30)));
        assert_eq!(parsed.shm_size_bytes, Some(Limit::Value(256 << 20)));
        assert_eq!(parsed.nano_cpus, Some(Limit::Value(1_500_000_000)));
        assert_eq!(parsed.log_max_size_bytes, Some(Limit::Value(10 << 20)));
    }

    #[test]
    fn invalid_sizes_and_cpus_name_their_variable() {
        for (name, value) in [
            (MEM_LIMIT, "lots"),
            (MEM_LIMIT, "0"),
            (SHM_SIZE, "12q"),
            (CPUS, "0"),
            (CPUS, "-1"),
            (LOG_MAX_SIZE, "0"),
        ] {
            let error = parse_overrides(&env(&[(name, value)])).unwrap_err();
            assert_eq!(variable_of(error), name, "{name}={value}");
        }
    }

    #[test]
    fn invalid_counts_name_their_variable() {
        for (name, value) in [
            (PIDS_LIMIT, "many"),
            (PIDS_LIMIT, "0"),
            (PIDS_LIMIT, "-3"),
            (LOG_MAX_FILE, "0"),
            (LOG_MAX_FILE, "off"),
        ] {
            let error = parse_overrides(&env(&[(name, value)])).unwrap_err();
            assert!(matches!(error, PolicyError::Invalid { .. }));
            assert_eq!(variable_of(error), name, "{name}={value}");
        }
    }

    #[test]
    fn host_and_malformed_networks_are_refused() {
        for value in ["host", "container:abc", "-net", "a b"] {
            let error = parse_overrides(&env(&[(NETWORK, value)])).unwrap_err();
            assert_eq!(variable_of(error), NETWORK, "{value}");
        }
    }

    #[test]
    fn error_display_carries_a_hint() {
        let error = parse_overrides(&env(&[(PIDS_LIMIT, "lots")])).unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with("environment variable AGENTC_PIDS_LIMIT: "),
            "{text}"
        );
        assert!(text.contains("hint: "), "{text}");
    }
}
