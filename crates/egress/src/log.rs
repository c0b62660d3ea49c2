//! The decision log: JSON lines on stdout, one or two per request.
//!
//! ```json
//! {"time":"2026-11-30T04:03:11.101Z","id":41,"event":"decision","kind":"connect","client":"10.0.9.2:41234","host":"allowed.test","port":443,"decision":"allow","reason":"allowed","sni":"allowed.test","protocol":"tls"}
//! {"time":"2026-11-30T04:03:11.123Z","id":41,"event":"close","kind":"connect","client":"10.0.9.2:41234","host":"allowed.test","port":443,"address":"10.251.3.2:443","decision":"allow","reason":"allowed","sni":"allowed.test","protocol":"tls","bytes_up":517,"bytes_down":2048}
//! {"time":"2026-11-30T04:03:12.004Z","id":42,"event":"decision","kind":"dns","client":"10.0.9.2:53122","qname":"leak.exfil.test.","qtype":"A","decision":"deny","reason":"dns-query"}
//! {"time":"2026-11-30T04:03:12.500Z","id":43,"event":"close","kind":"relay","client":"172.17.0.1:50122","address":"10.213.0.3:8080","decision":"allow","reason":"allowed","bytes_up":78,"bytes_down":512}
//! ```
//!
//! Every request the proxy reads gets exactly one `event: "decision"` line, written before any
//! lookup or connection the request causes, whatever the client does afterwards: a refusal by
//! name or form, or an allowed name (for a CONNECT, after the tunnel's first bytes were read
//! and checked). What follows an allowed decision is one `event: "close"` line with the same
//! `id`: the address connected to and the bytes each way, or the refusal that came after the
//! decision (`resolve-failed`, `address-refused`, `connect-failed`), whose `decision` is then
//! `deny`. A request hyper cannot parse is a `connection` line with `request_line`, the request
//! line as far as it was read (truncated, control bytes escaped). A relayed connection (a
//! published port of the workload) is one `close` line when it closes, `address` being the
//! workload's address it was relayed to and `bytes_up` what the client sent it; one the
//! workload refused is a `deny` line with reason `connect-failed`. DNS queries to the stub and
//! refusals for too many connections are one `decision` line each. A name allowed only
//! through a `*.domain` entry says on its decision line how many distinct names that entry
//! resolved this minute ([`crate::wildcard`]); one more is a `wildcard-rate` refusal.
//!
//! A tunnel to a host with a bound credential is terminated by the proxy: its CONNECT keeps its
//! decision and close lines, and every request inside it is a `request` line of its own
//! (written before the request goes upstream; `credential` names the credential set). A
//! request that carries a placeholder where its credential is not bound is refused, and its
//! one decision line is the audit line: `"kind":"credential-replay"`, reason
//! `credential-replay`, `credential` the placeholder's, and `detail` where it was seen.
//! A response of a bound host in which the proxy replaced a held value is a `scrub` line.
//! Every line goes through the audit writer ([`crate::audit`]): repeated lines of one kind,
//! decision and reason past a budget per window are counted into `summary` lines ([`Summary`]),
//! and the lines are also kept in the proxy's own bounded files (`--audit-dir`).
//! Nothing else goes to stdout.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::policy::Reason;

/// What kind of request a line is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// An HTTP CONNECT tunnel.
    Connect,
    /// A forwarded plain-HTTP request.
    Forward,
    /// A DNS query to the stub.
    Dns,
    /// A connection refused before any request was read (too many), or a request hyper could
    /// not parse.
    Connection,
    /// A connection to a published port of the workload, relayed to it.
    Relay,
    /// A request inside a tunnel the proxy terminates (a host with a bound credential).
    Request,
    /// A request refused because it carries a credential's placeholder where that credential
    /// is not bound: the audit line of [`crate::replay`] (its request's one decision line).
    #[serde(rename = "credential-replay")]
    CredentialReplay,
    /// A response from a bound host in which the proxy replaced a held value.
    #[serde(rename = "scrub")]
    Scrub,
}

/// Which line of a request a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Event {
    /// The request's one decision, written before anything leaves the proxy for it.
    Decision,
    /// What became of an allowed request: closed (with the bytes), or refused after the
    /// decision (its address, its connection).
    Close,
    /// How many lines of one kind, decision and reason the rate limit of [`crate::audit`]
    /// left out in one window ([`Summary`]).
    Summary,
}

/// The next request id of this process (1 and up).
pub fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// One decision line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    /// RFC 3339 UTC, milliseconds.
    pub time: String,
    /// The request's id, shared by its decision and close lines (unique in this process).
    pub id: u64,
    /// Which line of the request this is.
    pub event: Event,
    /// What kind of request.
    pub kind: Kind,
    /// The client's address.
    pub client: SocketAddr,
    /// The host asked for, as normalized, or as written when it was refused for its form.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The port asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The checked address connected to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<SocketAddr>,
    /// `allow` or `deny`.
    pub decision: &'static str,
    /// The reason code ([`Reason::as_str`]).
    pub reason: &'static str,
    /// What exactly, for refusals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The SNI a tunnel's ClientHello sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sni: Option<String>,
    /// What a tunnel carries, from its first bytes: `tls`, `http` or `raw`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<&'static str>,
    /// The request line of a request hyper could not parse, as far as it was read (at most
    /// 200 characters, control and non-ASCII bytes escaped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_line: Option<String>,
    /// Bytes sent to the server, at close.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_up: Option<u64>,
    /// Bytes received from the server, at close.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_down: Option<u64>,
    /// A DNS query's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qname: Option<String>,
    /// A DNS query's type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qtype: Option<String>,
    /// The credential injected (a terminated request) or whose placeholder was refused (a
    /// replay): its name, never a value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

impl Record {
    /// A decision record of a new request (a fresh id) stamped now, with only the required
    /// fields set.
    pub fn new(kind: Kind, client: SocketAddr, reason: Reason) -> Record {
        Record {
            time: rfc3339(SystemTime::now()),
            id: next_id(),
            event: Event::Decision,
            kind,
            client,
            host: None,
            port: None,
            address: None,
            decision: if reason == Reason::Allowed {
                "allow"
            } else {
                "deny"
            },
            reason: reason.as_str(),
            detail: None,
            sni: None,
            protocol: None,
            request_line: None,
            bytes_up: None,
            bytes_down: None,
            qname: None,
            qtype: None,
            credential: None,
        }
    }

    /// The close line of the same request, stamped now: same id and fields, `reason` (and
    /// `decision`) as given, no detail yet.
    pub fn close(&self, reason: Reason) -> Record {
        let mut close = self.clone();
        close.time = rfc3339(SystemTime::now());
        close.event = Event::Close;
        close.set_reason(reason);
        close.detail = None;
        close
    }

    /// Sets `reason` and the `decision` it implies.
    pub fn set_reason(&mut self, reason: Reason) {
        self.reason = reason.as_str();
        self.decision = if reason == Reason::Allowed {
            "allow"
        } else {
            "deny"
        };
    }

    /// The JSON line, without the newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }

    /// Writes the line to stdout in one write (lines from concurrent tasks never interleave).
    pub fn emit(&self) {
        let mut line = self.to_line();
        line.push('\n');
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(line.as_bytes());
        let _ = stdout.flush();
    }
}

/// A summary line of [`crate::audit`]: the lines of one kind, decision and reason that its
/// rate limit left out in one window, counted, with a few of their hosts or query names.
///
/// ```json
/// {"time":"2026-11-30T04:03:22.000Z","id":9001,"event":"summary","kind":"dns","decision":"deny","reason":"dns-query","count":48213,"first_time":"2026-11-30T04:03:12.004Z","last_time":"2026-11-30T04:03:21.998Z","samples":["a1.exfil.test.","a2.exfil.test."]}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// When the summary was written (RFC 3339 UTC, milliseconds).
    pub time: String,
    /// An id of its own (this process's ids, as a request's).
    pub id: u64,
    /// Always [`Event::Summary`].
    pub event: Event,
    /// The event of the lines left out (`decision` or `close`).
    pub of: Event,
    /// The kind of the lines left out.
    pub kind: Kind,
    /// Their decision, `allow` or `deny`.
    pub decision: &'static str,
    /// Their reason code.
    pub reason: &'static str,
    /// How many were left out.
    pub count: u64,
    /// The time of the first line left out.
    pub first_time: String,
    /// The time of the last.
    pub last_time: String,
    /// A few of their hosts or query names (at most [`crate::audit::MAX_SAMPLES`], each at
    /// most [`crate::audit::SAMPLE_CHARS`] characters), distinct, in the order seen.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<String>,
}

impl Summary {
    /// The JSON line, without the newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }
}

/// Formats a time as RFC 3339 in UTC with milliseconds (`2026-11-30T04:03:11.123Z`).
pub fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_900_991_123);
        assert_eq!(rfc3339(t), "2026-11-28T21:23:11.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn a_line_has_only_the_fields_set() {
        let mut record = Record::new(
            Kind::Connect,
            "10.0.0.2:5000".parse().unwrap(),
            Reason::HostNotAllowed,
        );
        record.host = Some("forbidden.test".into());
        record.port = Some(443);
        let value: serde_json::Value = serde_json::from_str(&record.to_line()).unwrap();
        let mut keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["client", "decision", "event", "host", "id", "kind", "port", "reason", "time"]
        );
        assert_eq!(value["decision"], "deny");
        assert_eq!(value["reason"], "host-not-allowed");
        assert_eq!(value["event"], "decision");
    }

    #[test]
    fn a_close_line_shares_the_id_and_new_requests_get_new_ones() {
        let client = "10.0.0.2:5000".parse().unwrap();
        let decision = Record::new(Kind::Forward, client, Reason::Allowed);
        let close = decision.close(Reason::AddressRefused);
        assert_eq!((close.id, close.event), (decision.id, Event::Close));
        assert_eq!((close.decision, close.reason), ("deny", "address-refused"));
        let other = Record::new(Kind::Forward, client, Reason::Allowed);
        assert!(other.id > decision.id);
    }
}
