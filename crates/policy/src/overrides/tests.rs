use super::*;
use crate::hint::Hinted;

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
        assert!(
            error.with_hint().to_string().contains("sets nothing"),
            "{error}"
        );
        assert!(
            error
                .with_hint()
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
        error
            .with_hint()
            .to_string()
            .contains("AGENTC_NETWORK has no `off`"),
        "{error}"
    );
}

#[test]
fn overrides_keep_the_bounds_of_the_profile_fields() {
    for (variable, value, message) in [
        (MEM_LIMIT, "4m", "AGENTC_MEM_LIMIT \"4m\" is below docker's minimum of 6m"),
        (
            MEM_LIMIT,
            "8p",
            "AGENTC_MEM_LIMIT \"8p\" is 9007199254740992 bytes, more than the 9007199254740991 bytes docker can carry exactly (it parses sizes through a 64-bit float)",
        ),
        (
            SHM_SIZE,
            "9007199254740992",
            "AGENTC_SHM_SIZE \"9007199254740992\" is 9007199254740992 bytes, more than the 9007199254740991 bytes docker can carry exactly (it parses sizes through a 64-bit float)",
        ),
        (CPUS, "1025", "AGENTC_CPUS 1025 is more than 1024"),
        (CPUS, "0.009", "AGENTC_CPUS 0.009 is below docker's minimum of 0.01"),
        (PIDS_LIMIT, "4194305", "AGENTC_PIDS_LIMIT must be between 1 and 4194304, not 4194305"),
        (LOG_MAX_SIZE, "512b", "AGENTC_LOG_MAX_SIZE \"512b\" is below 1k"),
        (LOG_MAX_FILE, "101", "AGENTC_LOG_MAX_FILE must be between 1 and 100, not 101"),
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
    let text = error.with_hint().to_string();
    assert!(
        text.starts_with("environment variable AGENTC_PIDS_LIMIT: "),
        "{text}"
    );
    assert!(text.contains("hint: "), "{text}");
}
