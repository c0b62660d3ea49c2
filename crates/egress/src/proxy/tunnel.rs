//! A CONNECT tunnel after its `200` ([`tunnel`]), and its first bytes, read before anything
//! is resolved or connected: what the client speaks, and whether the tunnel may open.
//!
//! - A TLS ClientHello (first byte 22), on any port: its SNI must be the CONNECT host; a hello
//!   with Encrypted Client Hello or ESNI is refused unless `--allow-ech` names the host; a
//!   hello that names its server twice is refused as ambiguous.
//! - An HTTP request (a method token and a space), on any port but 443: its one `Host` (and an
//!   absolute-form target, if it has one) must name the CONNECT host and port. Only the
//!   tunnel's first request is read: what follows it is spliced unread.
//! - Anything else: spliced only for an allowlist entry that names this port explicitly
//!   (`host:22`), never to 443; such a tunnel also opens when the client sends nothing
//!   (a protocol whose server speaks first) within [`SERVER_FIRST_GRACE`].
//!
//! A refusal is answered in the client's protocol: a fatal TLS alert record, or an HTTP
//! response with the `x-agentc-egress-deny` header; other clients are closed.

use std::sync::Arc;
use std::time::Duration;

use http::Request;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{timeout, Instant};

use super::capture::Recording;
pub(super) use super::client_io::ClientIo;
use super::{open, relay, Shared};
use crate::host::{ip_target, normalize_target};
use crate::log::Record;
use crate::policy::{Deny, Reason};
use crate::request;
use crate::sni::{self, SniError};

/// How long a tunnel that may carry raw bytes waits for the client's first byte before it
/// opens anyway (its server speaks first: SMTP, IMAP, MySQL). Short: such a tunnel is allowed
/// to carry anything, so a client that waits longer gains nothing by it.
pub(super) const SERVER_FIRST_GRACE: Duration = Duration::from_millis(500);

/// TLS alert descriptions (RFC 8446 section 6).
const ALERT_HANDSHAKE_FAILURE: u8 = 40;
const ALERT_ACCESS_DENIED: u8 = 49;
const ALERT_DECODE_ERROR: u8 = 50;
const ALERT_INTERNAL_ERROR: u8 = 80;
const ALERT_UNRECOGNIZED_NAME: u8 = 112;

/// What the client's first bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Speaks {
    /// A TLS handshake record.
    Tls,
    /// An HTTP request line.
    Http,
    /// Something else.
    Other,
    /// Nothing: the client closed, or sent nothing in time.
    Nothing,
}

impl Speaks {
    /// The `protocol` of the decision line.
    pub(super) fn protocol(self) -> Option<&'static str> {
        match self {
            Speaks::Tls => Some("tls"),
            Speaks::Http => Some("http"),
            Speaks::Other => Some("raw"),
            Speaks::Nothing => None,
        }
    }
}

/// What the first bytes said.
#[derive(Debug)]
pub(super) struct Sniffed {
    pub(super) speaks: Speaks,
    /// The ClientHello's SNI, when there was one.
    pub(super) sni: Option<String>,
    /// A note for an allowed tunnel (a raw tunnel that the server speaks first in).
    pub(super) detail: Option<String>,
    /// Whether the tunnel may open.
    pub(super) verdict: Result<(), Deny>,
}

impl Sniffed {
    fn refused(speaks: Speaks, deny: Deny) -> Sniffed {
        Sniffed {
            speaks,
            sni: None,
            detail: None,
            verdict: Err(deny),
        }
    }
}

/// Reads the tunnel's first bytes into `first` (which may already hold some) and judges them
/// for `host:port` (normalized, allowed by name).
pub(super) async fn sniff(
    client: &mut ClientIo,
    first: &mut Vec<u8>,
    shared: &Shared,
    host: &str,
    port: u16,
) -> Sniffed {
    let raw_allowed = shared.policy.raw_allowed(host, port);
    let limit = shared.limits.client_hello_timeout();
    if first.is_empty() {
        let wait = if raw_allowed {
            SERVER_FIRST_GRACE.min(limit)
        } else {
            limit
        };
        let mut chunk = [0u8; 4096];
        match timeout(wait, client.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                return Sniffed::refused(
                    Speaks::Nothing,
                    Deny::new(
                        Reason::BadRequest,
                        "the client closed the tunnel before its first bytes",
                    ),
                )
            }
            Ok(Ok(n)) => first.extend_from_slice(&chunk[..n]),
            Err(_) if raw_allowed => {
                return Sniffed {
                    speaks: Speaks::Other,
                    sni: None,
                    detail: Some(format!(
                        "raw tunnel: the client sent nothing in {} ms (its server speaks first)",
                        SERVER_FIRST_GRACE.as_millis()
                    )),
                    verdict: Ok(()),
                }
            }
            Err(_) => {
                return Sniffed::refused(
                    Speaks::Nothing,
                    Deny::new(
                        Reason::ClientHelloTimeout,
                        "no first bytes (ClientHello or request) in time",
                    ),
                )
            }
        }
    }
    let deadline = Instant::now() + limit;
    if first[0] == 22 {
        return tls(client, first, shared, host, port, deadline).await;
    }
    // A method in another case: read its first line whole before deciding (an attacker
    // chooses where its writes are cut), so that `get / HTTP/1.1` gets the Host check.
    if !looks_like_http(first) && may_be_http(first) {
        let mut chunk = [0u8; 4096];
        while !first.contains(&b'\n') && first.len() < shared.limits.max_header_bytes {
            match tokio::time::timeout_at(deadline, client.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => first.extend_from_slice(&chunk[..n]),
                _ => break,
            }
        }
        let line_end = first
            .iter()
            .position(|b| *b == b'\n')
            .unwrap_or(first.len());
        let line = first[..line_end]
            .strip_suffix(b"\r")
            .unwrap_or(&first[..line_end]);
        if is_request_line(line) {
            if port == 443 {
                return Sniffed::refused(
                    Speaks::Http,
                    Deny::new(
                        Reason::NotTls,
                        "plain HTTP in a tunnel to port 443, which carries TLS",
                    ),
                );
            }
            return http(client, first, shared, host, port, deadline).await;
        }
    }
    if looks_like_http(first) {
        if port == 443 {
            return Sniffed::refused(
                Speaks::Http,
                Deny::new(
                    Reason::NotTls,
                    "plain HTTP in a tunnel to port 443, which carries TLS",
                ),
            );
        }
        return http(client, first, shared, host, port, deadline).await;
    }
    let shown: String = super::capture::escape(&first[..first.len().min(16)]);
    if port == 443 {
        return Sniffed::refused(
            Speaks::Other,
            Deny::new(
                Reason::NotTls,
                format!(
                    "a tunnel to port 443 that does not start with a TLS ClientHello ({shown})"
                ),
            ),
        );
    }
    if raw_allowed {
        return Sniffed {
            speaks: Speaks::Other,
            sni: None,
            detail: None,
            verdict: Ok(()),
        };
    }
    Sniffed::refused(
        Speaks::Other,
        Deny::new(
            Reason::RawNotAllowed,
            format!(
                "neither TLS nor HTTP ({shown}): a raw tunnel needs an allowlist entry naming \
                 the port ({host}:{port})"
            ),
        ),
    )
}

/// Whether the bytes start as an HTTP request line: 1 to 16 upper-case letters and a space
/// (or only upper-case letters so far).
fn looks_like_http(bytes: &[u8]) -> bool {
    let token = bytes.iter().take_while(|b| b.is_ascii_uppercase()).count();
    (1..=16).contains(&token) && bytes.get(token).is_none_or(|&b| b == b' ')
}

/// Whether the bytes may start an HTTP request line whose method is not in upper case
/// (`get / HTTP/1.1`, which lenient servers take): 1 to 16 letters of any case and a space,
/// or only letters so far. Such bytes are HTTP when their first line ends in an HTTP version
/// ([`is_request_line`]); other protocols (a Redis client's `set k v`) stay raw.
fn may_be_http(bytes: &[u8]) -> bool {
    let token = bytes.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    (1..=16).contains(&token) && bytes.get(token).is_none_or(|&b| b == b' ')
}

/// Whether `line` (without its line end) is `METHOD TARGET HTTP/x.y`, the method in any case.
fn is_request_line(line: &[u8]) -> bool {
    let line = String::from_utf8_lossy(line);
    let words: Vec<&str> = line.split_ascii_whitespace().collect();
    matches!(words.as_slice(), [method, _, version]
        if method.bytes().all(|b| b.is_ascii_alphabetic())
            && version.len() >= 6
            && version[..5].eq_ignore_ascii_case("http/"))
}

async fn tls(
    client: &mut ClientIo,
    first: &mut Vec<u8>,
    shared: &Shared,
    host: &str,
    port: u16,
    deadline: Instant,
) -> Sniffed {
    let hello = match tokio::time::timeout_at(deadline, read_client_hello(client, first)).await {
        Err(_) => Err(Deny::new(
            Reason::ClientHelloTimeout,
            "no whole ClientHello in time",
        )),
        Ok(read) => read,
    };
    let hello = match hello {
        Ok(hello) => hello,
        Err(deny) => return Sniffed::refused(Speaks::Tls, deny),
    };
    let verdict = if (hello.ech || hello.esni) && !shared.policy.ech_allowed(host, port) {
        let which = if hello.ech {
            "encrypted_client_hello (0xfe0d)"
        } else {
            "encrypted_server_name (0xffce, ESNI)"
        };
        Err(Deny::new(
            Reason::Ech,
            format!(
                "the ClientHello carries {which}, which hides the name it asks for; \
                 allow it for this host with --allow-ech (egress.allow_ech)"
            ),
        ))
    } else {
        match hello.server_name.as_deref().map(normalize_target) {
            // A client names no server in SNI when it connects to an address (RFC 6066).
            None if ip_target(host).is_some() => Ok(()),
            None => Err(Deny::new(Reason::SniMissing, "a ClientHello without SNI")),
            Some(Ok(name)) if name == host => Ok(()),
            Some(_) => Err(Deny::new(
                Reason::SniMismatch,
                format!("the ClientHello asks for another server than {host}"),
            )),
        }
    };
    Sniffed {
        speaks: Speaks::Tls,
        sni: hello.server_name,
        detail: None,
        verdict,
    }
}

/// Reads the client's first bytes until they hold a whole ClientHello.
pub(super) async fn read_client_hello<R: AsyncRead + Unpin>(
    client: &mut R,
    buffer: &mut Vec<u8>,
) -> Result<sni::ClientHello, Deny> {
    let mut chunk = [0u8; 4096];
    loop {
        match sni::parse(buffer) {
            Ok(hello) => return Ok(hello),
            Err(SniError::Invalid(why)) => return Err(Deny::new(Reason::NotTls, why)),
            Err(SniError::Ambiguous(why)) => {
                return Err(Deny::new(Reason::ClientHelloAmbiguous, why))
            }
            Err(SniError::Incomplete) => {}
        }
        let room = sni::MAX_RECORD_BYTES
            .saturating_sub(buffer.len())
            .min(chunk.len());
        if room == 0 {
            return Err(Deny::new(
                Reason::NotTls,
                "the ClientHello exceeds the bound",
            ));
        }
        let n = client
            .read(&mut chunk[..room])
            .await
            .map_err(|error| Deny::new(Reason::NotTls, error.to_string()))?;
        if n == 0 {
            return Err(Deny::new(
                Reason::NotTls,
                "the client closed before a whole ClientHello",
            ));
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
}

async fn http(
    client: &mut ClientIo,
    first: &mut Vec<u8>,
    shared: &Shared,
    host: &str,
    port: u16,
    deadline: Instant,
) -> Sniffed {
    let bound = shared.limits.max_header_bytes;
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(at) = first.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if first.len() >= bound {
            return Sniffed::refused(
                Speaks::Http,
                Deny::new(Reason::BadRequest, "the tunnel's request head is too large"),
            );
        }
        let room = (bound - first.len()).min(chunk.len());
        match tokio::time::timeout_at(deadline, client.read(&mut chunk[..room])).await {
            Ok(Ok(n)) if n > 0 => first.extend_from_slice(&chunk[..n]),
            Ok(_) => {
                return Sniffed::refused(
                    Speaks::Http,
                    Deny::new(
                        Reason::BadRequest,
                        "the client closed before its request head was whole",
                    ),
                )
            }
            Err(_) => {
                return Sniffed::refused(
                    Speaks::Http,
                    Deny::new(Reason::ClientHelloTimeout, "no whole request head in time"),
                )
            }
        }
    };
    let verdict = check_http_head(&first[..end], host, port);
    Sniffed {
        speaks: Speaks::Http,
        sni: None,
        detail: None,
        verdict,
    }
}

/// Checks a tunnel's first request head (without its final blank line): exactly one `Host`
/// naming `host:port` (port 80 when the header has none), and an absolute-form target, if
/// any, naming the same.
pub(super) fn check_http_head(head: &[u8], host: &str, port: u16) -> Result<(), Deny> {
    let mismatch = |what: String| Deny::new(Reason::HostMismatch, what);
    let text = std::str::from_utf8(head)
        .map_err(|_| Deny::new(Reason::BadRequest, "a request head that is not UTF-8"))?;
    // Lines end in LF with or without CR (as lenient servers read them); a folded line
    // (obs-fold) could continue the Host header, so it is refused.
    let mut lines = text
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line));
    let request_line = lines.next().unwrap_or_default();
    let lines: Vec<&str> = lines.collect();
    if lines.iter().any(|line| line.starts_with([' ', '\t'])) {
        return Err(Deny::new(
            Reason::BadRequest,
            "a folded header line (obs-fold) in the tunnel's request",
        ));
    }
    let target = request_line.split(' ').nth(1).unwrap_or_default();
    let names = |authority: &str, what: &str| -> Result<(), Deny> {
        let (name, named_port) = request::split_authority(authority, Some(80))?;
        let name = normalize_target(&name)
            .map_err(|why| mismatch(format!("{what} `{authority}` is not a host name: {why}")))?;
        if name != host || named_port != port {
            return Err(mismatch(format!(
                "{what} `{authority}` is not the tunnel's {host}:{port}"
            )));
        }
        Ok(())
    };
    if let Some((_, rest)) = target.split_once("://") {
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        names(&rest[..end], "the request target")?;
    }
    let hosts: Vec<&str> = lines
        .iter()
        .filter_map(|line| line.split_once(':'))
        .filter(|(name, _)| name.trim().eq_ignore_ascii_case("host"))
        .map(|(_, value)| value.trim())
        .collect();
    match hosts.as_slice() {
        [one] => names(one, "Host"),
        [] => Err(mismatch(
            "the tunnel's HTTP request has no Host header".into(),
        )),
        _ => Err(mismatch(
            "the tunnel's HTTP request has more than one Host header".into(),
        )),
    }
}

/// The fatal alert a refusal is after a TLS ClientHello.
fn alert_for(reason: Reason) -> u8 {
    match reason {
        Reason::SniMismatch | Reason::SniMissing => ALERT_UNRECOGNIZED_NAME,
        Reason::ClientHelloAmbiguous | Reason::NotTls => ALERT_DECODE_ERROR,
        Reason::ResolveFailed | Reason::ConnectFailed => ALERT_INTERNAL_ERROR,
        Reason::ClientHelloTimeout | Reason::BadRequest => ALERT_HANDSHAKE_FAILURE,
        _ => ALERT_ACCESS_DENIED,
    }
}

/// A fatal TLS alert record.
pub(super) fn alert(description: u8) -> [u8; 7] {
    [21, 3, 3, 0, 2, 2, description]
}

/// The bytes of an HTTP refusal written into a tunnel.
fn http_refusal(deny: &Deny) -> Vec<u8> {
    let body = format!("agentc egress proxy: {}: {}\n", deny.reason, deny.detail);
    let status = deny.reason.status();
    let phrase = http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Refused");
    format!(
        "HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain\r\nx-agentc-egress-deny: {}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        deny.reason,
        body.len()
    )
    .into_bytes()
}

/// Answers a refused tunnel in the client's protocol, then closes it: shuts the write side
/// and reads what the client still sends for a moment, so that the answer is not lost to a
/// reset.
pub(super) async fn refuse(mut client: ClientIo, speaks: Speaks, deny: &Deny) {
    let answer = match speaks {
        Speaks::Tls => alert(alert_for(deny.reason)).to_vec(),
        Speaks::Http => http_refusal(deny),
        Speaks::Other | Speaks::Nothing => Vec::new(),
    };
    let limit = Duration::from_secs(2);
    if !answer.is_empty() {
        let _ = timeout(limit, client.write_all(&answer)).await;
    }
    let _ = timeout(limit, client.shutdown()).await;
    let mut sink = [0u8; 4096];
    let deadline = Instant::now() + limit;
    let mut drained = 0usize;
    while drained < 256 * 1024 {
        match tokio::time::timeout_at(deadline, client.read(&mut sink)).await {
            Ok(Ok(n)) if n > 0 => drained += n,
            _ => break,
        }
    }
}

/// An allowed CONNECT after its `200`: takes the client's socket, reads and checks its first
/// bytes ([`sniff`]), writes the decision line, and only then resolves and connects;
/// a refusal is answered in the client's protocol (a TLS alert, an HTTP `403`) before closing.
pub(super) async fn tunnel(
    request: Request<Incoming>,
    mut line: Record,
    shared: Arc<Shared>,
    permit: Arc<OwnedSemaphorePermit>,
) {
    let _permit = permit;
    let host = line.host.clone().unwrap_or_default();
    let port = line.port.unwrap_or_default();
    let (mut client, mut first) = match hyper::upgrade::on(request).await {
        // The client's own socket, and whatever it sent after the CONNECT head, so that the
        // tunnel can be spliced in the kernel.
        Ok(upgraded) => match upgraded.downcast::<TokioIo<Recording<TcpStream>>>() {
            Ok(parts) => (
                ClientIo::Tcp(parts.io.into_inner().into_inner()),
                parts.read_buf.to_vec(),
            ),
            Err(upgraded) => (ClientIo::Upgraded(TokioIo::new(upgraded)), Vec::new()),
        },
        Err(error) => {
            line.set_reason(Reason::BadRequest);
            line.detail = Some(format!("the tunnel did not open: {error}"));
            shared.emit(line);
            return;
        }
    };
    let sniffed = sniff(&mut client, &mut first, &shared, &host, port).await;
    line.sni = sniffed.sni.clone();
    line.protocol = sniffed.speaks.protocol();
    line.detail = sniffed.detail.clone();
    // A plain-HTTP tunnel's first request is read: it may carry no placeholder.
    let replayed = match (&shared.intercept, sniffed.speaks) {
        (Some(intercept), Speaks::Http) => super::intercept::replay_in_raw_head(intercept, &first),
        _ => None,
    };
    // The tunnel's decision: its first bytes, then (a wildcard name) the look-up bound.
    let verdict = sniffed
        .verdict
        .and_then(|()| replayed.map_or(Ok(()), Err))
        .and_then(|()| shared.admit_wildcard(&host, port));
    match verdict {
        Err(deny) => {
            if deny.reason == Reason::CredentialReplay {
                line.kind = crate::log::Kind::CredentialReplay;
                if let Some(intercept) = &shared.intercept {
                    intercept.replayed();
                }
            }
            line.set_reason(deny.reason);
            line.detail = Some(deny.detail.clone());
            shared.emit(line);
            refuse(client, sniffed.speaks, &deny).await;
            return;
        }
        Ok(Some(wildcard)) => {
            line.detail = Some(match line.detail.take() {
                Some(detail) => format!("{detail}; {wildcard}"),
                None => wildcard,
            })
        }
        Ok(None) => {}
    }
    // A host with a bound credential: the proxy terminates the tunnel.
    let intercept = shared.intercept.clone().filter(|intercept| {
        sniffed.speaks == Speaks::Tls && !intercept.bound(&host, port).is_empty()
    });
    if let Some(intercept) = intercept {
        let names: Vec<String> = intercept
            .bound(&host, port)
            .iter()
            .map(|held| held.credential.name.clone())
            .collect();
        let terminated = format!(
            "terminated: the proxy sets {} on its requests",
            names.join(", ")
        );
        line.detail = Some(match line.detail.take() {
            Some(detail) => format!("{detail}; {terminated}"),
            None => terminated,
        });
        line.credential = Some(names.join(","));
        shared.emit(line.clone());
        super::intercept::serve(client, first, line, shared.clone(), intercept).await;
        return;
    }
    shared.emit(line.clone());
    let (address, upstream) = match open(&shared, &host, port).await {
        Ok(opened) => opened,
        Err(deny) => {
            let mut close = line.close(deny.reason);
            close.detail = Some(deny.detail.clone());
            shared.emit(close);
            refuse(client, sniffed.speaks, &deny).await;
            return;
        }
    };
    let mut close = line.close(Reason::Allowed);
    close.address = Some(address);
    // A plain-HTTP tunnel is searched for placeholders in every write, not only its first
    // head: it may carry further requests and bodies.
    match (&shared.intercept, sniffed.speaks) {
        (Some(intercept), Speaks::Http) if !intercept.placeholder_needles.is_empty() => {
            let intercept = intercept.clone();
            relay_scanned(client, first, upstream, close, &shared, &intercept).await
        }
        _ => relay(client, first, upstream, close, &shared).await,
    }
}

/// [`relay`] for a plain-HTTP tunnel of a proxy that holds credentials: the client's bytes go
/// through a window searched for every placeholder ([`crate::scrub::Window`]), the upstream's
/// are copied as they are; a placeholder ends the tunnel before it is sent, and the close line
/// is then the `credential-replay` line.
async fn relay_scanned(
    client: ClientIo,
    first: Vec<u8>,
    upstream: super::Conn,
    mut line: Record,
    shared: &Shared,
    intercept: &super::Intercept,
) {
    use std::sync::atomic::Ordering;
    let counters = Arc::new(super::Counters::new());
    let upstream = super::Counted {
        inner: upstream,
        counters: counters.clone(),
    };
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut upstream_read, mut upstream_write) = tokio::io::split(upstream);
    let mut window = crate::scrub::Window::new(intercept.placeholder_needles.clone());
    let up = async {
        let mut chunk = vec![0u8; 64 << 10];
        let mut out = window.push(&first);
        loop {
            if let Some(hit) = window.hits().first() {
                return Some(hit.clone());
            }
            if upstream_write.write_all(&out).await.is_err() {
                return None;
            }
            let n = match client_read.read(&mut chunk).await {
                Ok(0) | Err(_) => {
                    let rest = window.finish();
                    if window.hits().is_empty() {
                        let _ = upstream_write.write_all(&rest).await;
                        let _ = upstream_write.shutdown().await;
                        return None;
                    }
                    continue;
                }
                Ok(n) => n,
            };
            out = window.push(&chunk[..n]);
        }
    };
    let down = async {
        let _ = tokio::io::copy(&mut upstream_read, &mut client_write).await;
        let _ = client_write.shutdown().await;
    };
    let relayed = async {
        tokio::pin!(up, down);
        let mut up_done = false;
        loop {
            tokio::select! {
                found = &mut up, if !up_done => {
                    if found.is_some() {
                        return found;
                    }
                    up_done = true;
                }
                () = &mut down => return None,
            }
        }
    };
    let outcome = super::with_idle(relayed, &counters, shared.limits.idle_timeout()).await;
    line.bytes_up = Some(counters.up.load(Ordering::Relaxed));
    line.bytes_down = Some(counters.down.load(Ordering::Relaxed));
    match outcome {
        None => line.detail = Some("closed after the idle timeout".into()),
        Some(Some(hit)) => {
            let found = super::intercept::found_of(intercept, &hit);
            let deny = super::intercept::replay_deny(
                &found,
                "a later write of a plain-HTTP tunnel",
                "the proxy",
            );
            line.kind = crate::log::Kind::CredentialReplay;
            line.set_reason(Reason::CredentialReplay);
            line.credential = Some(found.credential.clone());
            line.detail = Some(deny.detail);
            intercept.replayed();
        }
        Some(None) => {}
    }
    shared.emit(line);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `bytes` in `piece`-byte writes with pauses, so the reader sees many reads.
    async fn hello_in_pieces(bytes: Vec<u8>, piece: usize) -> Result<sni::ClientHello, Deny> {
        let (mut client, mut proxy_side) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            for chunk in bytes.chunks(piece) {
                if client.write_all(chunk).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        let mut buffer = Vec::new();
        let read = read_client_hello(&mut proxy_side, &mut buffer).await;
        writer.abort();
        read
    }

    #[tokio::test]
    async fn a_client_hello_over_many_reads_and_records_is_read_whole() {
        let hello = sni::client_hello(Some("allowed.test"));
        let fragmented = sni::records(&hello[5..], 17);
        for piece in [1, 3, 100] {
            let read = hello_in_pieces(fragmented.clone(), piece).await.unwrap();
            assert_eq!(read.server_name.as_deref(), Some("allowed.test"));
        }
    }

    #[tokio::test]
    async fn garbage_a_closed_client_and_an_endless_hello_are_not_tls() {
        let garbage = hello_in_pieces(b"GET / HTTP/1.1\r\n\r\n".to_vec(), 4).await;
        assert_eq!(garbage.unwrap_err().reason, Reason::NotTls);
        let hello = sni::client_hello(Some("allowed.test"));
        let cut = hello_in_pieces(hello[..30].to_vec(), 7).await;
        assert_eq!(cut.unwrap_err().reason, Reason::NotTls);
        // Records that never complete a hello: 1-byte records up to the bound.
        let endless = sni::records(&[1, 0, 0x40, 0].repeat(10_000), 1);
        let endless = hello_in_pieces(endless, 4096).await;
        assert_eq!(endless.unwrap_err().reason, Reason::NotTls);
    }

    #[test]
    fn a_method_in_another_case_is_http_only_with_an_http_version() {
        for maybe in [&b"get / HTTP/1.1"[..], b"Get", b"pOsT x", b"SET k v"] {
            assert!(may_be_http(maybe), "{maybe:?}");
        }
        for no in [&b"SSH-2.0-x"[..], b" get", b"\x16\x03", b"get1 x"] {
            assert!(!may_be_http(no), "{no:?}");
        }
        for yes in [
            &b"get / HTTP/1.1"[..],
            b"gEt http://a.test/ http/1.0",
            b"post /x HTTP/2",
        ] {
            assert!(is_request_line(yes), "{yes:?}");
        }
        for no in [&b"set k v"[..], b"get /", b"get / HTTX/1.1", b"ping"] {
            assert!(!is_request_line(no), "{no:?}");
        }
    }

    #[test]
    fn http_request_lines_are_told_from_other_bytes() {
        for yes in [&b"GET / HTTP/1.1"[..], b"OPTIONS", b"G", b"PROPFIND x"] {
            assert!(looks_like_http(yes), "{yes:?}");
        }
        for no in [
            &b"SSH-2.0-x"[..],
            b"get / HTTP/1.1",
            b" GET",
            b"\x16\x03\x01",
            b"",
        ] {
            assert!(!looks_like_http(no), "{no:?}");
        }
    }

    #[test]
    fn the_first_requests_host_must_be_the_tunnels() {
        let ok = |head: &str| check_http_head(head.as_bytes(), "a.test", 80);
        ok("GET / HTTP/1.1\r\nHost: a.test").unwrap();
        ok("GET / HTTP/1.1\r\nhost:  A.Test.:80 ").unwrap();
        ok("GET http://a.test/x HTTP/1.1\r\nHost: a.test").unwrap();
        for (head, reason) in [
            ("GET / HTTP/1.1\r\nHost: b.test", Reason::HostMismatch),
            ("GET / HTTP/1.1\r\nHost: a.test:8080", Reason::HostMismatch),
            ("GET / HTTP/1.1\r\nHost: 10.0.0.1", Reason::HostMismatch),
            ("GET / HTTP/1.1", Reason::HostMismatch),
            (
                "GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test",
                Reason::HostMismatch,
            ),
            (
                "GET http://b.test/ HTTP/1.1\r\nHost: a.test",
                Reason::HostMismatch,
            ),
            ("GET / HTTP/1.1\r\nHost: u@a.test", Reason::BadRequest),
            (
                "GET / HTTP/1.1\r\nHost: a.test\r\nX: 1\nHost: b.test",
                Reason::HostMismatch,
            ),
            (
                "GET / HTTP/1.1\r\nHost: a.test\r\n b.test",
                Reason::BadRequest,
            ),
        ] {
            assert_eq!(ok(head).unwrap_err().reason, reason, "{head}");
        }
        check_http_head(b"GET / HTTP/1.1\r\nHost: a.test:8080", "a.test", 8080).unwrap();
        assert!(check_http_head(b"GET / HTTP/1.1\r\nHost: a.test", "a.test", 8080).is_err());
    }

    #[test]
    fn refusals_map_to_the_alerts_clients_understand() {
        assert_eq!(alert_for(Reason::SniMismatch), 112);
        assert_eq!(alert_for(Reason::SniMissing), 112);
        assert_eq!(alert_for(Reason::Ech), 49);
        assert_eq!(alert_for(Reason::AddressRefused), 49);
        assert_eq!(alert_for(Reason::ConnectFailed), 80);
        assert_eq!(alert(112), [21, 3, 3, 0, 2, 2, 112]);
        let refusal =
            String::from_utf8(http_refusal(&Deny::new(Reason::HostMismatch, "x"))).unwrap();
        assert!(
            refusal.starts_with("HTTP/1.1 403 Forbidden\r\n"),
            "{refusal}"
        );
        assert!(refusal.contains("x-agentc-egress-deny: host-mismatch\r\n"));
    }
}
