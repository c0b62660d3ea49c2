//! Parsing of sizes (`"4g"`), CPU counts (`"1.5"`) and their exact rendering.

/// Parses a docker-style size (`"512m"`, `"4g"`, `"1024"`, `"2GB"`, case-insensitive units
/// b, k, m, g, t, p with an optional trailing `b`, binary multiples) into bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let _ = text;
    todo!("owned by the load/validate helper")
}

/// Parses a CPU count (`"1.5"`, `"2"`) into billionths of a CPU, exactly (no float rounding);
/// rejects zero, negatives and more than nine decimals.
pub fn parse_cpus(text: &str) -> Result<u64, String> {
    let _ = text;
    todo!("owned by the load/validate helper")
}

/// Renders billionths of a CPU as the shortest exact decimal (`1500000000` -> `"1.5"`).
pub fn format_cpus(nano_cpus: u64) -> String {
    let _ = nano_cpus;
    todo!("owned by the load/validate helper")
}
