//! The decision log ([`crate::log`]) as a table for people: `agentc egress log` prints one row
//! per line the proxy wrote, as the lines arrive (so `--follow` stays live).
//!
//! ```text
//! TIME          ID     EVENT     KIND      TARGET                DECISION  REASON        BYTES
//! 04:03:11.101  41     decision  connect   allowed.test:443      allow     allowed       -
//! 04:03:11.123  41     close     connect   allowed.test:443      allow     allowed       517/2048
//! 04:03:12.004  42     decision  dns       leak.exfil.test. A    deny      dns-query     -
//! ```
//!
//! TARGET is what the request asked for: `host:port`, a DNS query's name and type, or for a
//! relayed connection the workload's address. BYTES is `up/down` (sent to the server, received
//! from it) on close lines. A refusal's `detail` and a credential's name follow the row; a
//! `summary` row says how many lines of its kind, decision and reason the rate limit left out,
//! from when to when, and a few of their names ([`crate::audit`]). A line
//! that is not one of the proxy's JSON objects is printed unchanged, so nothing is hidden.

use serde_json::Value;

/// The table's header row.
pub fn header() -> String {
    columns([
        "TIME", "ID", "EVENT", "KIND", "TARGET", "DECISION", "REASON", "BYTES",
    ])
}

/// One log line as a table row (without a newline); any other line as it is.
pub fn row(line: &str) -> String {
    let Ok(Value::Object(record)) = serde_json::from_str::<Value>(line) else {
        return line.to_string();
    };
    let text = |key: &str| match record.get(key) {
        Some(Value::String(value)) => Some(value.clone()),
        Some(Value::Number(value)) => Some(value.to_string()),
        _ => None,
    };
    let time = text("time")
        .map(|time| clock(&time))
        .unwrap_or_else(|| "-".to_string());
    let target = match (text("host"), text("port"), text("qname"), text("address")) {
        (Some(host), Some(port), _, _) => format!("{host}:{port}"),
        (Some(host), None, _, _) => host,
        (None, _, Some(qname), _) => match text("qtype") {
            Some(qtype) => format!("{qname} {qtype}"),
            None => qname,
        },
        (None, _, None, Some(address)) => address,
        _ => "-".to_string(),
    };
    let bytes = match (text("bytes_up"), text("bytes_down")) {
        (Some(up), Some(down)) => format!("{up}/{down}"),
        (Some(up), None) => format!("{up}/-"),
        (None, Some(down)) => format!("-/{down}"),
        _ => "-".to_string(),
    };
    let or_dash = |key: &str| text(key).unwrap_or_else(|| "-".to_string());
    let mut row = columns([
        &time,
        &or_dash("id"),
        &or_dash("event"),
        &or_dash("kind"),
        &target,
        &or_dash("decision"),
        &or_dash("reason"),
        &bytes,
    ]);
    if let Some(credential) = text("credential") {
        row.push_str(&format!("  credential={credential}"));
    }
    if let Some(detail) = text("detail") {
        row.push_str(&format!("  ({detail})"));
    }
    // A summary of the rate limit ([`crate::log::Summary`]): how many, when, and a few names.
    if let Some(count) = text("count") {
        row.push_str(&format!(
            "  ({count} more from {} to {}",
            text("first_time").map_or_else(|| "-".to_string(), |t| clock(&t)),
            text("last_time").map_or_else(|| "-".to_string(), |t| clock(&t)),
        ));
        if let Some(Value::Array(samples)) = record.get("samples") {
            let samples: Vec<&str> = samples.iter().filter_map(Value::as_str).collect();
            if !samples.is_empty() {
                row.push_str(&format!(", such as {}", samples.join(" ")));
            }
        }
        row.push(')');
    }
    row
}

/// `HH:MM:SS.mmm` of an RFC 3339 time (`2026-11-30T04:03:11.101Z`); anything else unchanged.
fn clock(time: &str) -> String {
    match time.split_once('T') {
        Some((_, rest)) => rest.trim_end_matches('Z').to_string(),
        None => time.to_string(),
    }
}

/// The cells padded to the table's column widths (the last one unpadded).
fn columns<const N: usize>(cells: [&str; N]) -> String {
    const WIDTHS: [usize; 7] = [12, 6, 9, 17, 28, 9, 18];
    let mut line = String::new();
    for (index, cell) in cells.iter().enumerate() {
        match WIDTHS.get(index) {
            Some(width) => line.push_str(&format!("{cell:<width$} ")),
            None => line.push_str(cell),
        }
    }
    line.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_row_says_how_many_when_and_a_few_names() {
        let line = r#"{"time":"2026-12-04T04:00:10.000Z","id":90,"event":"summary","kind":"dns","decision":"deny","reason":"dns-query","count":48213,"first_time":"2026-12-04T04:00:00.100Z","last_time":"2026-12-04T04:00:09.900Z","samples":["a.exfil.test.","b.exfil.test."]}"#;
        let row = row(line);
        assert!(row.contains(" summary "), "{row}");
        assert!(
            row.ends_with(
                "(48213 more from 04:00:00.100 to 04:00:09.900, such as a.exfil.test. b.exfil.test.)"
            ),
            "{row}"
        );
    }

    #[test]
    fn each_kind_of_line_is_one_row_with_its_target_and_bytes() {
        let connect = r#"{"time":"2026-11-30T04:03:11.123Z","id":41,"event":"close","kind":"connect","client":"10.0.9.2:41234","host":"allowed.test","port":443,"address":"10.251.3.2:443","decision":"allow","reason":"allowed","sni":"allowed.test","protocol":"tls","bytes_up":517,"bytes_down":2048}"#;
        assert_eq!(
            row(connect),
            "04:03:11.123 41     close     connect           allowed.test:443             allow     allowed            517/2048"
        );
        let dns = r#"{"time":"2026-11-30T04:03:12.004Z","id":42,"event":"decision","kind":"dns","client":"10.0.9.2:53122","qname":"leak.exfil.test.","qtype":"A","decision":"deny","reason":"dns-query"}"#;
        let dns = row(dns);
        assert!(dns.contains(" leak.exfil.test. A "), "{dns}");
        assert!(dns.contains(" deny      dns-query "), "{dns}");
        assert!(dns.ends_with(" -"), "{dns}");
        let relay = r#"{"time":"2026-11-30T04:03:12.500Z","id":43,"event":"close","kind":"relay","client":"172.17.0.1:50122","address":"10.213.0.3:8080","decision":"allow","reason":"allowed","bytes_up":78,"bytes_down":512}"#;
        assert!(row(relay).contains(" 10.213.0.3:8080 "), "{}", row(relay));
        let replay = r#"{"time":"2026-11-30T04:03:13.000Z","id":44,"event":"decision","kind":"credential-replay","client":"10.0.9.2:1","host":"other.test","port":443,"decision":"deny","reason":"credential-replay","credential":"anthropic","detail":"header x-note"}"#;
        let replay = row(replay);
        assert!(
            replay.ends_with("-  credential=anthropic  (header x-note)"),
            "{replay}"
        );
    }

    #[test]
    fn the_header_lines_up_with_the_rows_and_other_lines_pass_unchanged() {
        let header = header();
        let line = r#"{"time":"2026-11-30T04:03:11.101Z","id":1,"event":"decision","kind":"connect","client":"10.0.9.2:1","host":"a.test","port":443,"decision":"allow","reason":"allowed"}"#;
        let row = row(line);
        for column in [
            "ID", "EVENT", "KIND", "TARGET", "DECISION", "REASON", "BYTES",
        ] {
            let at = header.find(column).unwrap();
            let bytes = row.as_bytes();
            assert!(
                bytes[at - 1] == b' ' && bytes[at] != b' ',
                "{column} starts a cell:\n{header}\n{row}"
            );
        }
        assert_eq!(super::row("not json at all"), "not json at all");
        assert_eq!(super::row("[1,2]"), "[1,2]");
    }
}
