//! Parsing of sizes (`"4g"`), cpu counts (`"1.5"`) and their exact rendering.
//!
//! Both parsers use exact integer arithmetic. Docker parses `--memory` with go-units'
//! `RAMInBytes` (a float, then truncated) and `--cpus` with `big.Rat`; agentc computes the same
//! results without float rounding, so `"1.5g"` is exactly 1610612736 bytes and `"1.5"` CPUs is
//! exactly 1500000000 nano-CPUs.

use crate::profile::CpuCount;

/// The largest value docker carries (an `int64` in the Engine API).
const MAX_I64: u128 = i64::MAX as u128;

/// Billionths of a cpu in one cpu.
const NANO: u128 = 1_000_000_000;

/// Fraction digits accepted in a size; more cannot change a byte count that docker can carry.
const MAX_SIZE_DECIMALS: usize = 18;

/// Parses a docker-style size (`"512m"`, `"4g"`, `"1024"`, `"2GB"`, case-insensitive units
/// b, k, m, g, t, p with an optional trailing `b`, binary multiples) into bytes.
///
/// The grammar is go-units' `RAMInBytes`: a decimal number (`"1.5g"` is allowed), an optional
/// single space, an optional unit letter `k m g t p`, an optional `i` and an optional `b`
/// (`"1kib"`, `"512B"`). A fractional byte count is truncated towards zero, as docker does,
/// but computed exactly. Zero is accepted here; callers enforce their own minimum.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let digits_end = trimmed
        .find(|character: char| !(character.is_ascii_digit() || character == '.'))
        .unwrap_or(trimmed.len());
    let (number, suffix) = trimmed.split_at(digits_end);
    if number.is_empty() {
        return Err(format!(
            "{text:?} is not a size: expected a number followed by an optional unit b, k, m, g, t or p"
        ));
    }
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (number, ""),
    };
    if whole.is_empty() || (number.contains('.') && fraction.is_empty()) || fraction.contains('.') {
        return Err(format!(
            "{text:?} is not a size: malformed number {number:?}"
        ));
    }
    if fraction.len() > MAX_SIZE_DECIMALS {
        return Err(format!(
            "{text:?} is not a size: at most {MAX_SIZE_DECIMALS} decimals are accepted"
        ));
    }
    let multiplier = size_multiplier(suffix).ok_or_else(|| {
        format!("{text:?} is not a size: unknown unit {suffix:?} (use b, k, m, g, t or p)")
    })?;
    let too_large = || format!("{text:?} is too large: at most {} bytes", i64::MAX);
    let whole: u128 = whole.parse().map_err(|_| too_large())?;
    let mut bytes = whole.checked_mul(multiplier).ok_or_else(too_large)?;
    if !fraction.is_empty() {
        let numerator: u128 = fraction.parse().map_err(|_| too_large())?;
        let denominator = 10u128.pow(fraction.len() as u32);
        // numerator < 10^18 and multiplier <= 2^50, so the product fits in a u128.
        bytes = bytes
            .checked_add(numerator * multiplier / denominator)
            .ok_or_else(too_large)?;
    }
    if bytes > MAX_I64 {
        return Err(too_large());
    }
    Ok(bytes as u64)
}

/// The multiplier of a size suffix such as `""`, `"b"`, `" g"`, `"GiB"`, or `None`.
fn size_multiplier(suffix: &str) -> Option<u128> {
    let suffix = suffix
        .strip_prefix(' ')
        .unwrap_or(suffix)
        .to_ascii_lowercase();
    let mut rest = suffix.as_str();
    let mut multiplier = 1u128;
    if let Some(first) = rest.chars().next() {
        let power = match first {
            'k' => Some(1),
            'm' => Some(2),
            'g' => Some(3),
            't' => Some(4),
            'p' => Some(5),
            _ => None,
        };
        if let Some(power) = power {
            multiplier = 1024u128.pow(power);
            rest = &rest[1..];
        }
    }
    let rest = rest.strip_prefix('i').unwrap_or(rest);
    let rest = rest.strip_prefix('b').unwrap_or(rest);
    rest.is_empty().then_some(multiplier)
}

/// Parses a cpu count (`"1.5"`, `"2"`) into billionths of a cpu, exactly (no float rounding);
/// rejects zero, negatives and more than nine decimals.
///
/// Like docker's `big.Rat` parsing, trailing zeros beyond the ninth decimal are harmless
/// (`"1.50000000000"` is 1.5); a nonzero tenth decimal is "too precise".
pub fn parse_cpus(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    if trimmed.starts_with('-') {
        return Err(format!(
            "{text:?} is negative: a cpu count must be greater than 0"
        ));
    }
    let (whole, fraction) = match trimmed.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (trimmed, ""),
    };
    let is_digits = |part: &str| part.chars().all(|character| character.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !is_digits(whole) || !is_digits(fraction) {
        return Err(format!(
            "{text:?} is not a cpu count: expected a decimal number such as 2 or 1.5"
        ));
    }
    let significant = fraction.trim_end_matches('0');
    if significant.len() > 9 {
        return Err(format!(
            "{text:?} is too precise: a cpu count has at most 9 decimals"
        ));
    }
    let too_large = || format!("{text:?} is too large for a cpu count");
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| too_large())?
    };
    let fraction_nano: u128 = if significant.is_empty() {
        0
    } else {
        let padded = format!("{significant:0<9}");
        padded.parse().map_err(|_| too_large())?
    };
    let nano = whole
        .checked_mul(NANO)
        .and_then(|value| value.checked_add(fraction_nano))
        .ok_or_else(too_large)?;
    if nano == 0 {
        return Err(format!(
            "{text:?} is zero: a cpu count must be greater than 0"
        ));
    }
    if nano > MAX_I64 {
        return Err(too_large());
    }
    Ok(nano as u64)
}

/// Converts a profile's `resources.cpus` (an integer, a float or a string) into billionths of a
/// cpu with [`parse_cpus`]. A float is read through its shortest exact decimal rendering, so
/// `cpus = 1.5` is exactly 1500000000.
pub fn cpus_of(count: &CpuCount) -> Result<u64, String> {
    match count {
        CpuCount::Integer(value) => parse_cpus(&value.to_string()),
        CpuCount::Float(value) if !value.is_finite() => Err(format!(
            "{value} is not a cpu count: expected a decimal number such as 2 or 1.5"
        )),
        CpuCount::Float(value) => parse_cpus(&value.to_string()),
        CpuCount::Text(text) => parse_cpus(text),
    }
}

/// Renders billionths of a cpu as the shortest exact decimal (`1500000000` -> `"1.5"`).
pub fn format_cpus(nano_cpus: u64) -> String {
    let whole = nano_cpus / NANO as u64;
    let fraction = nano_cpus % NANO as u64;
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:09}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
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
    fn cpu_counts_of_every_toml_shape_are_exact() {
        assert_eq!(cpus_of(&CpuCount::Integer(2)), Ok(2_000_000_000));
        assert_eq!(cpus_of(&CpuCount::Float(1.5)), Ok(1_500_000_000));
        assert_eq!(cpus_of(&CpuCount::Float(0.1)), Ok(100_000_000));
        assert_eq!(cpus_of(&CpuCount::Text("0.25".into())), Ok(250_000_000));
        assert!(cpus_of(&CpuCount::Integer(-1)).is_err());
        assert!(cpus_of(&CpuCount::Float(f64::NAN)).is_err());
        assert!(cpus_of(&CpuCount::Float(f64::INFINITY)).is_err());
        assert!(cpus_of(&CpuCount::Float(1e-10)).is_err());
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
}
