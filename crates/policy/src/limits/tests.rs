use super::*;

#[test]
fn sizes_use_binary_multiples_and_optional_b() {
    let cases = [
        ("0", 0),
        ("1024", 1024),
        ("512b", 512),
        ("512B", 512),
        ("1k", 1024),
        ("1kb", 1024),
        ("1KiB", 1024),
        ("512m", 512 * 1024 * 1024),
        ("4g", 4 << 30),
        ("2GB", 2 << 30),
        ("1 g", 1 << 30),
        ("1t", 1 << 40),
        ("1p", 1 << 50),
        (" 6m ", 6 << 20),
    ];
    for (text, bytes) in cases {
        assert_eq!(parse_size(text), Ok(bytes), "{text}");
    }
}

#[test]
fn size_decimals_are_exact_and_truncated() {
    assert_eq!(parse_size("1.5g"), Ok(1_610_612_736));
    assert_eq!(parse_size("0.5k"), Ok(512));
    // 1.0001k = 1024.1024 bytes, truncated as docker truncates.
    assert_eq!(parse_size("1.0001k"), Ok(1024));
    assert_eq!(parse_size("1.5"), Ok(1));
}

#[test]
fn malformed_sizes_are_rejected() {
    for text in [
        "",
        "g",
        "-1g",
        "1x",
        "1gg",
        "1.g",
        ".5g",
        "1.2.3",
        "1  g",
        "1gbb",
        "1bi",
        "0x10",
        "1e3",
        "4 gigabytes",
    ] {
        assert!(parse_size(text).is_err(), "{text:?} was accepted");
    }
}

#[test]
fn sizes_beyond_int64_are_rejected() {
    assert_eq!(parse_size("8191p"), Ok(8191u64 << 50));
    assert!(parse_size("8192p").unwrap_err().contains("too large"));
    assert!(parse_size("99999999999999999999999999999999999999999").is_err());
    assert!(parse_size("1.0000000000000000001g")
        .unwrap_err()
        .contains("decimals"));
}

#[test]
fn cpus_are_exact_billionths() {
    let cases = [
        ("1.5", 1_500_000_000),
        ("2", 2_000_000_000),
        ("0.5", 500_000_000),
        (".5", 500_000_000),
        ("1.", 1_000_000_000),
        ("0.000000001", 1),
        ("1.50000000000", 1_500_000_000),
        ("0.1", 100_000_000),
        ("1024", 1_024_000_000_000),
        ("007", 7_000_000_000),
    ];
    for (text, nano) in cases {
        assert_eq!(parse_cpus(text), Ok(nano), "{text}");
    }
}

#[test]
fn bad_cpus_are_rejected_with_a_reason() {
    assert!(parse_cpus("0").unwrap_err().contains("zero"));
    assert!(parse_cpus("0.000").unwrap_err().contains("zero"));
    assert!(parse_cpus("-1").unwrap_err().contains("negative"));
    assert!(parse_cpus("0.0000000001")
        .unwrap_err()
        .contains("too precise"));
    assert!(parse_cpus("1.0000000001")
        .unwrap_err()
        .contains("too precise"));
    assert!(parse_cpus("99999999999").unwrap_err().contains("too large"));
    for text in ["", ".", "1.5.0", "one", "1e3", "3/2", "+1", "1,5"] {
        assert!(
            parse_cpus(text).unwrap_err().contains("not a cpu count"),
            "{text:?}"
        );
    }
}

#[test]
fn cpus_format_as_the_shortest_exact_decimal() {
    assert_eq!(format_cpus(1_500_000_000), "1.5");
    assert_eq!(format_cpus(2_000_000_000), "2");
    assert_eq!(format_cpus(1), "0.000000001");
    assert_eq!(format_cpus(0), "0");
    assert_eq!(format_cpus(1_230_000_000), "1.23");
}

proptest::proptest! {
    #[test]
    fn any_nano_cpu_count_round_trips(nano in 1u64..=i64::MAX as u64) {
        proptest::prop_assert_eq!(parse_cpus(&format_cpus(nano)), Ok(nano));
    }

    #[test]
    fn sizes_in_kib_are_exact(kib in 0u64..(1u64 << 40), fraction in 0u32..1000) {
        let text = format!("{kib}.{fraction:03}k");
        let expected = kib * 1024 + u64::from(fraction) * 1024 / 1000;
        proptest::prop_assert_eq!(parse_size(&text), Ok(expected));
    }

    #[test]
    fn parsers_never_panic(text in "\\PC{0,24}") {
        let _ = parse_size(&text);
        let _ = parse_cpus(&text);
    }
}

#[test]
fn cpus_round_trip_through_their_rendering() {
    for nano in [
        1u64,
        10,
        999_999_999,
        1_000_000_001,
        123_456_789_012,
        i64::MAX as u64,
    ] {
        assert_eq!(parse_cpus(&format_cpus(nano)), Ok(nano));
    }
}

#[test]
fn every_limit_takes_off_in_any_case() {
    for text in ["off", "OFF", " Off "] {
        assert_eq!(memory(text), Ok(Limit::Off));
        assert_eq!(shm_size(text), Ok(Limit::Off));
        assert_eq!(cpus(text), Ok(Limit::Off));
        assert_eq!(pids(text), Ok(Limit::Off));
        assert_eq!(log_max_size(text), Ok(Limit::Off));
    }
    assert!(log_max_file("off").is_err(), "a file count has no off");
}

#[test]
fn limits_keep_their_bounds() {
    assert_eq!(memory("6m"), Ok(Limit::Value(6 << 20)));
    let low = memory("4m").unwrap_err();
    assert_eq!(low.message, "\"4m\" is below docker's minimum of 6m");
    assert!(memory("8p")
        .unwrap_err()
        .message
        .contains("docker can carry exactly"));
    assert_eq!(memory("7p"), Ok(Limit::Value(7 << 50)));
    assert_eq!(shm_size("0").unwrap_err().message, "must be greater than 0");
    assert!(shm_size("9p").is_err());
    assert_eq!(cpus("0.01"), Ok(Limit::Value(10_000_000)));
    assert_eq!(
        cpus("0.005").unwrap_err().message,
        "0.005 is below docker's minimum of 0.01"
    );
    assert_eq!(
        cpus("1024.5").unwrap_err().message,
        "1024.5 is more than 1024"
    );
    assert_eq!(pids("4194304"), Ok(Limit::Value(4_194_304)));
    assert_eq!(
        pids("0").unwrap_err().message,
        "must be between 1 and 4194304, not 0"
    );
    assert_eq!(
        pids("-3").unwrap_err().message,
        "must be between 1 and 4194304, not -3"
    );
    assert_eq!(
        pids("many").unwrap_err().message,
        "\"many\" is not a whole number"
    );
    assert_eq!(log_max_size("1k"), Ok(Limit::Value(1024)));
    assert_eq!(
        log_max_size("512b").unwrap_err().message,
        "\"512b\" is below 1k"
    );
    assert_eq!(log_max_file("100"), Ok(100));
    assert_eq!(
        log_max_file("101").unwrap_err().message,
        "must be between 1 and 100, not 101"
    );
    for error in [memory("x"), shm_size("x"), cpus("x"), log_max_size("x")] {
        assert!(error.unwrap_err().hint.contains("off"));
    }
}

#[test]
fn sizes_format_in_the_largest_exact_unit() {
    assert_eq!(format_size(50 << 20), "50m");
    assert_eq!(format_size(4 << 30), "4g");
    assert_eq!(format_size(1536), "1536");
    assert_eq!(format_size(3 << 10), "3k");
}

/// The profile field and its `AGENTC_*` variable read the same spellings: for every text,
/// both accept it with the same value, or both refuse it with the same message after the
/// field or variable's name.
#[test]
fn profile_fields_and_variables_accept_the_same_spellings() {
    use std::collections::BTreeMap;

    use crate::overrides::{self, parse_overrides};

    let texts = [
        "4g", "512m", "6m", "5m", "0", "off", "OFF", " Off ", "1.5", "0.01", "0.005", "1025",
        "1024", "-1", "lots", "8p", "7p", "64", "4194305", "1k", "512b", "100", "101", "3", "1.5g",
        " 2 ",
    ];
    let limits: [(&str, &str, &str); 5] = [
        ("resources", "memory", overrides::MEM_LIMIT),
        ("resources", "shm_size", overrides::SHM_SIZE),
        ("resources", "cpus", overrides::CPUS),
        ("resources", "pids_limit", overrides::PIDS_LIMIT),
        ("logging", "max_size", overrides::LOG_MAX_SIZE),
    ];
    let mut compared = 0;
    for (table, field, variable) in limits {
        for text in texts {
            let profile = format!(
                "name = \"dev\"\nagent = \"custom\"\n[image]\nref = \"i\"\n[{table}]\n{field} = {text:?}\n"
            );
            let from_profile = match crate::load("p.toml", &profile) {
                Ok(loaded) => {
                    let limits = (&loaded.profile.resources, &loaded.profile.logging);
                    Ok(match field {
                        "memory" => limits.0.memory.map(|l| l.value().map(u128::from)),
                        "shm_size" => limits.0.shm_size.map(|l| l.value().map(u128::from)),
                        "cpus" => limits.0.cpus.map(|l| l.value().map(u128::from)),
                        "pids_limit" => limits.0.pids_limit.map(|l| l.value().map(u128::from)),
                        _ => limits.1.max_size.map(|l| l.value().map(u128::from)),
                    })
                }
                Err(errors) => Err(errors.first().message().to_string()),
            };
            let env = BTreeMap::from([(variable.to_string(), text.to_string())]);
            let from_env = match parse_overrides(&env) {
                Ok(parsed) => Ok(match field {
                    "memory" => parsed.memory_bytes.map(|l| l.value().map(u128::from)),
                    "shm_size" => parsed.shm_size_bytes.map(|l| l.value().map(u128::from)),
                    "cpus" => parsed.nano_cpus.map(|l| l.value().map(u128::from)),
                    "pids_limit" => parsed.pids_limit.map(|l| l.value().map(u128::from)),
                    _ => parsed.log_max_size_bytes.map(|l| l.value().map(u128::from)),
                }),
                Err(error) => Err(error.message().to_string()),
            };
            let tail = |outcome: Result<Option<Option<u128>>, String>, subject: &str| {
                outcome.map_err(|message| {
                    message
                        .strip_prefix(subject)
                        .unwrap_or(&message)
                        .to_string()
                })
            };
            assert_eq!(
                tail(from_profile, &format!("{table}.{field}")),
                tail(from_env, variable),
                "{table}.{field} = {text:?} and {variable}={text:?}"
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 5 * texts.len());
}
