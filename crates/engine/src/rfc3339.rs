//! Reading the times the engine writes (RFC 3339): a leaf module the port and the egress
//! state both read.

/// An RFC 3339 time as the engine writes it (`2026-12-02T03:44:50.123456789Z`, or with an
/// offset such as `+01:00`), in Unix seconds; `None` when it does not read so.
pub fn unix_seconds(text: &str) -> Option<i64> {
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        text.get(range)
            .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))?
            .parse()
            .ok()
    };
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let mut seconds = days * 86_400 + hour * 3_600 + minute * 60 + second;
    // The offset, after any fraction.
    let rest = text
        .get(19..)?
        .trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
    if let Some(sign @ ('+' | '-')) = rest.chars().next() {
        let hours: i64 = rest.get(1..3)?.parse().ok()?;
        let minutes: i64 = rest.get(4..6)?.parse().ok()?;
        let offset = hours * 3_600 + minutes * 60;
        seconds -= if sign == '+' { offset } else { -offset };
    }
    Some(seconds)
}
