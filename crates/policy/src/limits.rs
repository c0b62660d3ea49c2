//! Limits: sizes (`"4g"`), CPU counts (`"1.5"`) and counts, their bounds, and the one parser
//! of each limit, which the profile's fields and the `AGENTC_*` overrides share, so that both
//! accept the same spellings (including `off`) within the same bounds.
//!
//! Both number parsers use exact integer arithmetic. Docker parses `--memory` with go-units'
//! `RAMInBytes` (a float, then truncated) and `--cpus` with `big.Rat`; agentc computes the same
//! results without float rounding, so `"1.5g"` is exactly 1610612736 bytes and `"1.5"` CPUs is
//! exactly 1500000000 nano-CPUs.
//!
//! | limit | profile field | variable | `off` |
//! |---|---|---|---|
//! | [`memory`] | `resources.memory` | `AGENTC_MEM_LIMIT` | no memory limit (and no swap limit) |
//! | [`shm_size`] | `resources.shm_size` | `AGENTC_SHM_SIZE` | docker's default `/dev/shm` (64m) |
//! | [`cpus`] | `resources.cpus` | `AGENTC_CPUS` | no CPU limit |
//! | [`pids`] | `resources.pids_limit` | `AGENTC_PIDS_LIMIT` | no process limit |
//! | [`log_max_size`] | `logging.max_size` | `AGENTC_LOG_MAX_SIZE` | no rotation (docker's default logging) |
//! | [`log_max_file`] | `logging.max_file` | `AGENTC_LOG_MAX_FILE` | - |
//! | [`wildcard_names_per_minute`] | `egress.wildcard_names_per_minute` | - | - |

use crate::error::ValueError;

/// Docker's minimum memory limit (6 MiB).
pub const MIN_MEMORY_BYTES: u64 = 6 * 1024 * 1024;
/// The smallest log rotation size agentc accepts (1 KiB).
pub const MIN_LOG_SIZE_BYTES: u64 = 1024;
/// The largest CPU count agentc accepts, in billionths of a CPU.
pub const MAX_NANO_CPUS: u64 = 1024 * 1_000_000_000;
/// The smallest CPU quota docker honours, 0.01 CPU: below it the kernel's CFS quota either
/// truncates to no limit at all or is refused when the container starts.
pub const MIN_NANO_CPUS: u64 = 10_000_000;
/// The largest process limit agentc accepts (the kernel's `pid_max` limit).
pub const MAX_PIDS_LIMIT: u32 = 4_194_304;
/// The most rotated log files agentc keeps.
pub const MAX_LOG_FILES: u32 = 100;
/// The largest size in bytes (memory, shm, log rotation, and so the memory swap limit) agentc
/// accepts: 2^53 - 1, just under 8 PiB.
///
/// The docker CLI parses `--memory`, `--memory-swap` and `--shm-size` through a 64-bit float
/// (go-units `RAMInBytes`), which holds every integer only up to 2^53; above it most sizes
/// would silently change. Both backends refuse larger sizes, so the policy refuses them
/// first, naming the profile field or the variable.
pub const MAX_SIZE_BYTES: u64 = (1 << 53) - 1;

/// The largest value docker carries (an `int64` in the Engine API).
const MAX_I64: u128 = i64::MAX as u128;

/// Billionths of a cpu in one cpu.
const NANO: u128 = 1_000_000_000;

/// Fraction digits accepted in a size; more cannot change a byte count that docker can carry.
const MAX_SIZE_DECIMALS: usize = 18;

/// A limit as written: a bound, or `off` for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit<T> {
    /// `off`: no limit (the daemon's default).
    Off,
    /// This bound.
    Value(T),
}

impl<T> Limit<T> {
    /// The bound, or `None` for `off`.
    pub fn value(self) -> Option<T> {
        match self {
            Limit::Off => None,
            Limit::Value(value) => Some(value),
        }
    }
}

/// Whether a limit's text is `off`, in any case, with surrounding spaces.
pub(crate) fn is_off(text: &str) -> bool {
    text.trim().eq_ignore_ascii_case("off")
}

const MEMORY_HINT: &str = "write a size such as \"4g\" or \"512m\", or \"off\" for no limit";
const SHM_HINT: &str = "write a size such as \"256m\", or \"off\" for docker's default";
const CPUS_HINT: &str =
    "write a positive number of cpus with at most 9 decimals, such as 2 or \"1.5\", or \"off\" for no limit";
const PIDS_HINT: &str = "write a process limit such as 512, or \"off\" for no limit";
const LOG_SIZE_HINT: &str =
    "write a size such as \"50m\", or \"off\" to keep the daemon's log driver";
const LOG_FILES_HINT: &str = "keep a few rotated files, such as 3";
const SIZE_RANGE_HINT: &str = "write a size below 8p (2^53 bytes), such as \"7p\" or \"64g\"";

/// The memory limit (swap is set equal): a size of at least 6m, or `off`.
pub(crate) fn memory(text: &str) -> Result<Limit<u64>, ValueError> {
    if is_off(text) {
        return Ok(Limit::Off);
    }
    let bytes = parse_size(text).map_err(|reason| ValueError::new(reason, MEMORY_HINT))?;
    if bytes < MIN_MEMORY_BYTES {
        return Err(ValueError::new(
            format!("{:?} is below docker's minimum of 6m", text.trim()),
            "give the container at least \"6m\"; agents need far more, such as \"4g\"",
        ));
    }
    exact_size(text, bytes).map(Limit::Value)
}

/// The size of `/dev/shm`: a size above 0, or `off` for docker's default.
pub(crate) fn shm_size(text: &str) -> Result<Limit<u64>, ValueError> {
    if is_off(text) {
        return Ok(Limit::Off);
    }
    let bytes = parse_size(text).map_err(|reason| ValueError::new(reason, SHM_HINT))?;
    if bytes == 0 {
        return Err(ValueError::new(
            "must be greater than 0",
            "write a size such as \"256m\", or remove it to keep the default",
        ));
    }
    exact_size(text, bytes).map(Limit::Value)
}

/// The CPU quota in billionths of a CPU: 0.01 to 1024 CPUs, or `off`.
pub(crate) fn cpus(text: &str) -> Result<Limit<u64>, ValueError> {
    if is_off(text) {
        return Ok(Limit::Off);
    }
    let nano = parse_cpus(text).map_err(|reason| ValueError::new(reason, CPUS_HINT))?;
    if nano > MAX_NANO_CPUS {
        return Err(ValueError::new(
            format!("{} is more than 1024", format_cpus(nano)),
            "write at most 1024 cpus",
        ));
    }
    if nano < MIN_NANO_CPUS {
        return Err(ValueError::new(
            format!("{} is below docker's minimum of 0.01", format_cpus(nano)),
            "write at least 0.01 cpus; a smaller quota would silently become no limit",
        ));
    }
    Ok(Limit::Value(nano))
}

/// The process limit: 1 to [`MAX_PIDS_LIMIT`], or `off`.
pub(crate) fn pids(text: &str) -> Result<Limit<u32>, ValueError> {
    if is_off(text) {
        return Ok(Limit::Off);
    }
    bounded_count(text, MAX_PIDS_LIMIT, PIDS_HINT).map(Limit::Value)
}

/// The size at which the json-file log rotates: at least 1k, or `off` for no rotation.
pub(crate) fn log_max_size(text: &str) -> Result<Limit<u64>, ValueError> {
    if is_off(text) {
        return Ok(Limit::Off);
    }
    let bytes = parse_size(text).map_err(|reason| ValueError::new(reason, LOG_SIZE_HINT))?;
    if bytes < MIN_LOG_SIZE_BYTES {
        return Err(ValueError::new(
            format!("{:?} is below 1k", text.trim()),
            "write a size of at least \"1k\", such as \"50m\"",
        ));
    }
    exact_size(text, bytes).map(Limit::Value)
}

/// The number of rotated log files kept: 1 to [`MAX_LOG_FILES`] (no `off`: with rotation on
/// there is always a number of files).
pub(crate) fn log_max_file(text: &str) -> Result<u32, ValueError> {
    bounded_count(text, MAX_LOG_FILES, LOG_FILES_HINT)
}

/// The distinct names allowed only through one `*.domain` entry that the egress proxy
/// resolves in any minute: 1 to [`agentc_egress::wildcard::MAX_NAMES_PER_MINUTE`] (no `off`:
/// every such name is a DNS query to the domain's name servers, which the bound keeps small).
pub(crate) fn wildcard_names_per_minute(text: &str) -> Result<u32, ValueError> {
    bounded_count(
        text,
        agentc_egress::wildcard::MAX_NAMES_PER_MINUTE,
        "write a whole number of names per minute from 1 to 1000, such as 10 (the default); \
         list names the sandbox needs often as exact hosts, which are not counted",
    )
}

/// A whole number from 1 to `max`.
fn bounded_count(text: &str, max: u32, hint: &str) -> Result<u32, ValueError> {
    let trimmed = text.trim();
    let Ok(count) = trimmed.parse::<i64>() else {
        return Err(ValueError::new(
            format!("{trimmed:?} is not a whole number"),
            hint,
        ));
    };
    match u32::try_from(count) {
        Ok(count) if (1..=max).contains(&count) => Ok(count),
        _ => Err(ValueError::new(
            format!("must be between 1 and {max}, not {count}"),
            hint,
        )),
    }
}

/// A size the docker CLI carries exactly: at most [`MAX_SIZE_BYTES`].
fn exact_size(text: &str, bytes: u64) -> Result<u64, ValueError> {
    if bytes > MAX_SIZE_BYTES {
        return Err(ValueError::new(
            format!(
                "{:?} is {bytes} bytes, more than the {MAX_SIZE_BYTES} bytes docker can carry \
                 exactly (it parses sizes through a 64-bit float)",
                text.trim()
            ),
            SIZE_RANGE_HINT,
        ));
    }
    Ok(bytes)
}

/// Parses a docker-style size (`"512m"`, `"4g"`, `"1024"`, `"2GB"`, case-insensitive units
/// b, k, m, g, t, p with an optional trailing `b`, binary multiples) into bytes.
///
/// The grammar is go-units' `RAMInBytes`: a decimal number (`"1.5g"` is allowed), an optional
/// single space, an optional unit letter `k m g t p`, an optional `i` and an optional `b`
/// (`"1kib"`, `"512B"`). A fractional byte count is truncated towards zero, as docker does,
/// but computed exactly. Zero is accepted here; each limit enforces its own minimum.
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

/// Renders bytes the way docker reads sizes, in the largest exact binary unit (`50m`).
pub fn format_size(bytes: u64) -> String {
    for (unit, factor) in [("g", 1u64 << 30), ("m", 1 << 20), ("k", 1 << 10)] {
        if bytes >= factor && bytes % factor == 0 {
            return format!("{}{unit}", bytes / factor);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests;
