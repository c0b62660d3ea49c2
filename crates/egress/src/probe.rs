//! The egress check program (`agentc egress-proxy probe`): run by `agentc verify` in a
//! short-lived container of the proxy image on a sandbox's isolated network, with the
//! sandbox's DNS server and proxy variables, it tries what a workload there could try and
//! prints one JSON [`CheckLine`] per check on stdout:
//!
//! - `egress.proxy-variables`: `HTTP_PROXY`, `HTTPS_PROXY`, `http_proxy` and `https_proxy` are
//!   set and name the proxy;
//! - `egress.allowed`: an allowlisted host is reached through the proxy (port 443: `CONNECT`,
//!   then a minimal ClientHello with that SNI and at least one byte back from upstream; any
//!   other port: an absolute-form `GET http://HOST[:PORT]/` answered by upstream, not by the
//!   proxy); skipped without a target, since it is the only check that reaches beyond the
//!   proxy;
//! - `egress.denied`: a host on no allowlist ([`DENIED_HOST`]) is refused by the proxy;
//! - `egress.ip-literal`: a `CONNECT` to an IP literal (the proxy's own address) is refused;
//!   behind an upstream that decides every destination (`--upstream-all`), this one and
//!   `egress.denied` are passed on to the upstream instead (or refused: tighter);
//! - `egress.direct`: a direct TCP connection to the proxy's address on the outside network
//!   fails, the routing table has no default route or only one through a gateway that does not
//!   answer (Docker 20.10 gives containers on an `--internal` network a default route; with
//!   `inhibit_ipv4` its gateway address is nowhere, so its ARP entry stays incomplete), and no
//!   interface has a global IPv6 address;
//! - `egress.dns`: an A query for the target host to each resolver of `/etc/resolv.conf` yields
//!   no address, and the system resolver does not resolve it;
//! - `egress.unset-proxy`: a client that ignores the proxy variables has neither an address nor
//!   a route: the same observations, under their own name.
//!
//! It connects to nothing but the proxy, the resolvers of `/etc/resolv.conf` and the one
//! outside address it is given (which must not answer). The parsers are pure and tested here;
//! [`run`] does the I/O with std sockets and short timeouts.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::str::FromStr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::host::normalize_host;
use crate::sni;

#[cfg(feature = "runtime")]
pub mod credentials;
mod resolver;
mod route;

use resolver::query;
pub use resolver::{dns_reply, nameservers, DnsReply};
pub use route::{default_route, direct_check, gateway_answers, global_ipv6, Route};

/// The checks, in the order [`run`] prints them (then, for a proxy that holds keys,
/// `credentials::CREDENTIAL_CHECKS`).
pub const CHECKS: [&str; 7] = [
    "egress.proxy-variables",
    "egress.allowed",
    "egress.denied",
    "egress.ip-literal",
    "egress.direct",
    "egress.dns",
    "egress.unset-proxy",
];

/// The host `egress.denied` asks for: a reserved name (`.invalid`) no allowlist holds.
pub const DENIED_HOST: &str = "agentc-verify-denied.invalid";

/// The variables that must name the proxy.
pub const PROXY_VARIABLES: [&str; 4] = ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"];

/// The header the proxy puts on its refusals (`x-agentc-egress-deny: REASON`).
pub const DENY_HEADER: &str = "x-agentc-egress-deny";

/// The most the direct connection of `egress.direct` waits.
pub const DIRECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How the proxy's own error bodies start (refusals, upstream errors and timeouts).
const PROXY_BODY_PREFIX: &str = "agentc egress proxy:";

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// What was expected was seen.
    Pass,
    /// It was not.
    Fail,
    /// Not tried (`egress.allowed` without a target).
    Skip,
    /// The policy held but the check could not finish: `egress.allowed` when the proxy let the
    /// request through and the destination did not resolve or did not answer (an offline
    /// machine, CI). Fails nothing.
    Warn,
}

/// One line of the program's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckLine {
    /// The check's name, one of [`CHECKS`].
    pub check: String,
    /// Its outcome.
    pub result: Outcome,
    /// What a sound egress set-up shows.
    pub expected: String,
    /// What was seen.
    pub seen: String,
    /// What to do about a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl CheckLine {
    fn new(check: &str, pass: bool, expected: &str, seen: String, hint: &str) -> CheckLine {
        CheckLine {
            check: check.to_string(),
            result: if pass { Outcome::Pass } else { Outcome::Fail },
            expected: expected.to_string(),
            seen,
            hint: (!pass).then(|| hint.to_string()),
        }
    }

    /// The line as printed: one JSON object.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("a check line serializes")
    }

    /// A printed line read back; `None` for any other line (a log line, a truncated one).
    pub fn parse(line: &str) -> Option<CheckLine> {
        serde_json::from_str::<CheckLine>(line.trim())
            .ok()
            .filter(|parsed| parsed.check.starts_with("egress."))
    }
}

/// A host and port to reach: `HOST` (port 443) or `HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The host name (normalized: lower case, no trailing dot).
    pub host: String,
    /// The port.
    pub port: u16,
}

impl FromStr for Target {
    type Err = String;

    fn from_str(text: &str) -> Result<Target, String> {
        let (host, port) = match text.rsplit_once(':') {
            Some((host, port)) => {
                let port = port
                    .parse::<u16>()
                    .ok()
                    .filter(|port| *port != 0)
                    .ok_or_else(|| format!("{text:?}: the port is not a number from 1 to 65535"))?;
                (host, port)
            }
            None => (text, 443),
        };
        let host = normalize_host(host).map_err(|_| {
            format!("{text:?}: not a host name (IP literals and wildcards are not probed)")
        })?;
        Ok(Target { host, port })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// What the program is told.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// The proxy on the isolated network (`IP:3128`).
    pub proxy: SocketAddr,
    /// The name the sandbox's proxy variables give the proxy (`HOST:PORT`: a Kubernetes
    /// Service's), when they name it by host rather than by [`ProbeConfig::proxy`]'s address.
    pub proxy_name: Option<String>,
    /// The allowlisted host `egress.allowed` reaches, or `None` to skip that check.
    pub allowed: Option<Target>,
    /// The proxy's address on the outside network: `egress.direct` connects to it (it must
    /// fail).
    pub outside: Option<SocketAddr>,
    /// The bound of each connection, read and query.
    pub timeout: Duration,
    /// A host whose key the proxy holds (`--bound`): the credential checks run against it
    /// ([`credentials`]); none without one.
    pub bound: Option<Target>,
    /// The proxy passes every destination no entry holds to its upstream proxy
    /// (`--upstream-all`): `egress.denied` expects the CONNECT accepted for the upstream.
    pub upstream_all: bool,
    /// The address ranges the proxy's allowlist holds (its `--allow=CIDR` entries): where the
    /// proxy's own address lies in one, `egress.ip-literal` warns instead of connecting, since
    /// the profile lets an IP literal there through.
    pub allowed_ranges: Vec<crate::addr::Cidr>,
}

/// Runs every check (see the module documentation) and returns one line per check, in the
/// order of [`CHECKS`]. `env` is the program's environment.
pub fn run(config: &ProbeConfig, env: &BTreeMap<String, String>) -> Vec<CheckLine> {
    let timeout = config.timeout;
    // The direct connection usually waits out its bound (its gateway never answers ARP): it
    // runs beside the other checks, for at most DIRECT_TIMEOUT (its target is a container of
    // this machine: a way there answers in milliseconds).
    let direct = config.outside.map(|outside| {
        let attempt = std::thread::spawn(move || {
            TcpStream::connect_timeout(&outside, timeout.min(DIRECT_TIMEOUT))
                .map(|_| ())
                .map_err(|error| error.to_string())
        });
        (outside, attempt)
    });
    let named = config
        .proxy_name
        .clone()
        .unwrap_or_else(|| config.proxy.to_string());
    let mut lines = vec![proxy_variables(env, &named)];
    lines.push(match &config.allowed {
        None => CheckLine {
            check: CHECKS[1].to_string(),
            result: Outcome::Skip,
            expected: "an allowlisted host answers through the proxy".to_string(),
            seen: "not probed (--egress-probe none)".to_string(),
            hint: None,
        },
        Some(target) => allowed(config.proxy, target, timeout),
    });
    lines.push(if config.upstream_all {
        passed_upstream(
            CHECKS[2],
            config.proxy,
            &format!("{DENIED_HOST}:443"),
            timeout,
        )
    } else {
        refused(
            CHECKS[2],
            config.proxy,
            &format!("{DENIED_HOST}:443"),
            timeout,
        )
    });
    // Behind an upstream that decides every destination, an address is passed on too (as
    // agent-containers' image firewall allowing only the proxy would let it through).
    let own_address = format!("{}:443", config.proxy.ip());
    let holding = config
        .allowed_ranges
        .iter()
        .find(|range| range.contains(config.proxy.ip()));
    lines.push(if let Some(range) = holding {
        CheckLine {
            check: CHECKS[3].to_string(),
            result: Outcome::Warn,
            expected: format!("CONNECT {own_address} refused by the proxy (4xx)"),
            seen: format!(
                "not tried: the proxy's own address lies in the allowed range {range}, so the \
                 profile lets an IP literal there through"
            ),
            hint: Some(format!(
                "egress.hosts allows {range}, which holds the sandbox's own network: list host \
                 names, or narrower ranges, to keep IP literals refused"
            )),
        }
    } else if config.upstream_all {
        passed_upstream(CHECKS[3], config.proxy, &own_address, timeout)
    } else {
        refused(CHECKS[3], config.proxy, &own_address, timeout)
    });
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let direct = direct.map(|(outside, attempt)| {
        let result = attempt
            .join()
            .unwrap_or_else(|_| Err("the attempt panicked".to_string()));
        (outside, result)
    });
    // Read after the connection attempt, which went to the default route's gateway.
    let route = default_route(&read("/proc/net/route"));
    let answers = route
        .as_ref()
        .is_some_and(|route| gateway_answers(&read("/proc/net/arp"), route.gateway));
    let ipv6 = global_ipv6(&read("/proc/net/if_inet6"));
    let direct_line = direct_check(direct, route.as_ref().map(|route| (route, answers)), &ipv6);
    let routed = direct_line.result == Outcome::Fail;
    lines.push(direct_line);
    let name = config
        .allowed
        .as_ref()
        .map_or(DENIED_HOST, |target| target.host.as_str());
    let resolvers = nameservers(&read("/etc/resolv.conf"));
    let answers: Vec<(IpAddr, Result<DnsReply, String>)> = resolvers
        .iter()
        .map(|server| (*server, query(*server, name, timeout)))
        .collect();
    let system = match (name, 443).to_socket_addrs() {
        Ok(addresses) => Ok(addresses.map(|address| address.ip()).collect::<Vec<_>>()),
        Err(error) => Err(error.to_string()),
    };
    lines.push(dns_check(name, &answers, &system));
    lines.push(unset_proxy_check(name, &system, routed));
    #[cfg(feature = "runtime")]
    if let Some(bound) = &config.bound {
        lines.extend(credentials::run(config, bound, env));
    }
    lines
}

/// `egress.proxy-variables`: every one of [`PROXY_VARIABLES`] is `http://PROXY` (a trailing
/// `/` allowed), `proxy` being the proxy's `IP:PORT` or `HOST:PORT`.
pub fn proxy_variables(env: &BTreeMap<String, String>, proxy: &str) -> CheckLine {
    let url = format!("http://{proxy}");
    let wrong: Vec<String> = PROXY_VARIABLES
        .iter()
        .filter_map(|name| match env.get(*name) {
            None => Some(format!("{name} unset")),
            Some(value) if value.trim_end_matches('/') == url => None,
            Some(value) => Some(format!("{name}={value}")),
        })
        .collect();
    let seen = if wrong.is_empty() {
        format!("all four = {url}")
    } else {
        wrong.join(", ")
    };
    CheckLine::new(
        CHECKS[0],
        wrong.is_empty(),
        &format!("{} = {url}", PROXY_VARIABLES.join(", ")),
        seen,
        "the sandbox's environment does not point its clients at its proxy; do not set these variables in the profile's env",
    )
}

/// A response read from the proxy, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A response that came from upstream, with its status.
    Upstream(u16),
    /// A refusal by the proxy: its status and reason code.
    Refused(u16, String),
    /// The proxy's own error (upstream unreachable, idle timeout): its status and first line.
    ProxyError(u16, String),
    /// Not an HTTP response.
    Garbage(String),
}

/// Classifies the first bytes of a response (its head, and as much of its body as was read):
/// a refusal carries [`DENY_HEADER`]; the proxy's other errors have a body starting
/// `agentc egress proxy:`; anything else with a status line came from upstream.
pub fn classify(bytes: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|code| code.parse::<u16>().ok());
    let Some(status) = status else {
        let shown: String = status_line.chars().take(60).collect();
        return Reply::Garbage(if shown.is_empty() {
            "no response".to_string()
        } else {
            format!("{shown:?}")
        });
    };
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case(DENY_HEADER) {
                return Reply::Refused(status, value.trim().to_string());
            }
        }
    }
    if body.starts_with(PROXY_BODY_PREFIX) {
        let first = body.lines().next().unwrap_or_default();
        return Reply::ProxyError(status, first.to_string());
    }
    Reply::Upstream(status)
}

impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Upstream(status) => write!(f, "{status} from upstream"),
            Reply::Refused(status, reason) => write!(f, "refused by the proxy: {status} {reason}"),
            Reply::ProxyError(status, text) => write!(f, "{status} from the proxy: {text}"),
            Reply::Garbage(what) => write!(f, "not an HTTP response: {what}"),
        }
    }
}

/// Connects to the proxy with the bounds of `timeout`.
fn open(proxy: SocketAddr, timeout: Duration) -> Result<TcpStream, String> {
    let stream = TcpStream::connect_timeout(&proxy, timeout)
        .map_err(|error| format!("cannot connect to the proxy {proxy}: {error}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|error| error.to_string())?;
    Ok(stream)
}

/// Sends `request` and reads a response head (and what follows it in the same reads, up to
/// 4 KiB, until `timeout` passes or the peer closes).
fn exchange(stream: &mut TcpStream, request: &str, timeout: Duration) -> Result<Vec<u8>, String> {
    stream
        .write_all(request.as_bytes())
        .map_err(|error| format!("cannot send the request: {error}"))?;
    let deadline = Instant::now() + timeout;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 1024];
    while bytes.len() < 4096 && Instant::now() < deadline {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(_) if !bytes.is_empty() => break,
            Err(error) => return Err(format!("no response: {error}")),
        }
        // A CONNECT's answer is a head only; stop at its end.
        if request.starts_with("CONNECT") && bytes.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    Ok(bytes)
}

/// `egress.allowed`: passes when upstream answered, warns when the proxy let the request
/// through but the destination did not resolve or answer, fails when the proxy refused it.
fn allowed(proxy: SocketAddr, target: &Target, timeout: Duration) -> CheckLine {
    let expected = if target.port == 443 {
        format!("CONNECT {target} and a ClientHello answered by upstream")
    } else {
        format!("GET http://{target}/ answered by upstream")
    };
    let (result, seen) = match allowed_seen(proxy, target, timeout) {
        Ok(seen) => (Outcome::Pass, seen),
        Err(Unreached::Unanswered(seen)) => (Outcome::Warn, seen),
        Err(Unreached::Refused(seen)) => (Outcome::Fail, seen),
    };
    let hint = match result {
        Outcome::Pass | Outcome::Skip => None,
        Outcome::Warn => Some(format!(
            "the proxy let the request through (the policy held), but {target} did not resolve or did not answer from the proxy's outside network: expected on a machine without internet access; choose a reachable host with --egress-probe HOST[:PORT] (none to skip)"
        )),
        Outcome::Fail => Some(format!(
            "the proxy did not let {target} through: check that it is on egress.hosts (see the proxy's decisions with `agentc egress log`), or choose another host with --egress-probe HOST[:PORT] (none to skip)"
        )),
    };
    CheckLine {
        check: CHECKS[1].to_string(),
        result,
        expected,
        seen,
        hint,
    }
}

/// Why `egress.allowed` did not reach its host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreached {
    /// The proxy refused the request (or is not the proxy): the check fails.
    Refused(String),
    /// The proxy let it through; the destination did not resolve, accept or answer.
    Unanswered(String),
}

/// Whether a refusal reason of the proxy is about the destination (it did not resolve or
/// accept the connection) rather than about the policy.
fn destination_reason(reason: &str) -> bool {
    matches!(reason, "resolve-failed" | "connect-failed")
}

/// What `egress.allowed` makes of the proxy's answer to its `GET` (a port other than 443) or
/// its `CONNECT`: `Ok` when the request was let through (for a `CONNECT`, its `200`).
pub fn allowed_reply(reply: Reply, connect: bool) -> Result<String, Unreached> {
    let seen = reply.to_string();
    match reply {
        Reply::Upstream(200) if connect => Ok(seen),
        // A CONNECT answered by anything else than the proxy's 200 is not the proxy.
        Reply::Upstream(_) if connect => Err(Unreached::Refused(seen)),
        Reply::Upstream(_) => Ok(seen),
        Reply::Refused(_, reason) if destination_reason(&reason) => {
            Err(Unreached::Unanswered(seen))
        }
        Reply::Refused(..) | Reply::Garbage(_) => Err(Unreached::Refused(seen)),
        // The proxy's own errors after it let the request through: upstream reset or silent.
        Reply::ProxyError(..) => Err(Unreached::Unanswered(seen)),
    }
}

/// The TLS alert the proxy writes into a tunnel it closes because the destination did not
/// resolve or accept (`internal_error`), and the one for a refusal by policy (`access_denied`).
const ALERT_INTERNAL_ERROR: u8 = 80;
const ALERT_ACCESS_DENIED: u8 = 49;

/// What `egress.allowed` makes of what came back through an open tunnel after its
/// ClientHello (`bytes`, up to the peer's close or the read bound; `error` when the read
/// failed before a byte): upstream's answer passes; the proxy's `internal_error` alert, a
/// close or silence means the destination did not answer; its `access_denied` alert is a
/// refusal.
pub fn tunnel_reply(bytes: &[u8], error: Option<&str>) -> Result<String, Unreached> {
    let alert = |description: u8| bytes == [21, 3, 3, 0, 2, 2, description];
    if alert(ALERT_ACCESS_DENIED) {
        Err(Unreached::Refused(
            "the proxy refused the tunnel after the ClientHello (TLS alert access_denied)"
                .to_string(),
        ))
    } else if alert(ALERT_INTERNAL_ERROR) {
        Err(Unreached::Unanswered(
            "tunnel open; the proxy could not resolve or connect to the host (TLS alert internal_error)"
                .to_string(),
        ))
    } else if !bytes.is_empty() {
        Ok("tunnel open, upstream answered the ClientHello".to_string())
    } else {
        Err(Unreached::Unanswered(match error {
            Some(error) => format!("tunnel open; no byte from upstream: {error}"),
            None => "tunnel open; it closed without a byte from upstream".to_string(),
        }))
    }
}

fn allowed_seen(
    proxy: SocketAddr,
    target: &Target,
    timeout: Duration,
) -> Result<String, Unreached> {
    let refused = Unreached::Refused;
    let mut stream = open(proxy, timeout).map_err(refused)?;
    let host = &target.host;
    if target.port != 443 {
        let authority = if target.port == 80 {
            host.clone()
        } else {
            target.to_string()
        };
        let request = format!(
            "GET http://{authority}/ HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: agentc-verify\r\nConnection: close\r\n\r\n"
        );
        // The proxy refuses by policy at once; silence means it let the request through and
        // is still resolving or connecting (an offline resolver takes longer than the bound).
        let bytes = exchange(&mut stream, &request, timeout).map_err(|error| {
            if error.starts_with("no response") {
                Unreached::Unanswered(format!(
                    "no answer within {timeout:?}: the proxy let the request through and was still resolving or connecting ({error})"
                ))
            } else {
                Unreached::Refused(error)
            }
        })?;
        return allowed_reply(classify(&bytes), false);
    }
    let request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n");
    let bytes = exchange(&mut stream, &request, timeout).map_err(refused)?;
    // The proxy answers a CONNECT before it resolves anything: any answer but its 200 is a
    // refusal.
    allowed_reply(classify(&bytes), true).map_err(|unreached| match unreached {
        Unreached::Refused(seen) | Unreached::Unanswered(seen) => {
            Unreached::Refused(format!("CONNECT {target}: {seen}"))
        }
    })?;
    stream
        .write_all(&sni::client_hello(Some(host)))
        .map_err(|error| {
            Unreached::Unanswered(format!("the tunnel closed before the ClientHello: {error}"))
        })?;
    // Enough to tell an alert record (7 bytes) from more.
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 16];
    let mut error = None;
    while bytes.len() < 8 {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(failed) => {
                if bytes.is_empty() {
                    error = Some(failed.to_string());
                }
                break;
            }
        }
    }
    tunnel_reply(&bytes, error.as_deref())
}

/// `egress.denied` and `egress.ip-literal`: a CONNECT to `authority` refused by the proxy.
fn refused(check: &str, proxy: SocketAddr, authority: &str, timeout: Duration) -> CheckLine {
    let request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n");
    let reply = open(proxy, timeout)
        .and_then(|mut stream| exchange(&mut stream, &request, timeout))
        .map(|bytes| classify(&bytes));
    let pass = matches!(&reply, Ok(Reply::Refused(status, _)) if (400..500).contains(status));
    let seen = match reply {
        Ok(reply) => format!("CONNECT {authority}: {reply}"),
        Err(error) => error,
    };
    CheckLine::new(
        check,
        pass,
        &format!("CONNECT {authority} refused by the proxy (4xx)"),
        seen,
        "the proxy let a request through that its allowlist does not hold, or is not the proxy: look at its decision lines (`agentc logs` of the proxy)",
    )
}

/// `egress.denied` and `egress.ip-literal` behind a proxy that passes every other destination to its upstream
/// (`--upstream-all`): the CONNECT is passed on for the upstream, which decides (accepted, or
/// the upstream's own answer); a refusal by agentc's proxy is as good (it holds tighter).
fn passed_upstream(
    check: &str,
    proxy: SocketAddr,
    authority: &str,
    timeout: Duration,
) -> CheckLine {
    let request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n");
    let reply = open(proxy, timeout)
        .and_then(|mut stream| exchange(&mut stream, &request, timeout))
        .map(|bytes| classify(&bytes));
    passed_upstream_line(check, authority, reply)
}

/// The line of [`passed_upstream`] from the proxy's reply.
fn passed_upstream_line(check: &str, authority: &str, reply: Result<Reply, String>) -> CheckLine {
    // Any answer not the proxy's own (accepted, or the upstream's refusal) was passed on.
    let pass = matches!(
        &reply,
        Ok(Reply::Upstream(_)) | Ok(Reply::Refused(400..=499, _))
    );
    let seen = match reply {
        Ok(Reply::Upstream(status)) => {
            format!("CONNECT {authority}: {status}, passed on for the upstream proxy")
        }
        Ok(reply) => format!("CONNECT {authority}: {reply}"),
        Err(error) => error,
    };
    CheckLine::new(
        check,
        pass,
        &format!(
            "CONNECT {authority} passed to the upstream proxy, which decides (egress.hosts names only the upstream)"
        ),
        seen,
        "the proxy neither passed the request to its upstream nor refused it: look at its decision lines (`agentc egress log`)",
    )
}

/// `egress.dns` from what was observed: each resolver's reply to an A query for `name`, and
/// the system resolver's result.
pub fn dns_check(
    name: &str,
    answers: &[(IpAddr, Result<DnsReply, String>)],
    system: &Result<Vec<IpAddr>, String>,
) -> CheckLine {
    let mut seen = Vec::new();
    let mut pass = true;
    if answers.is_empty() {
        seen.push("no resolver in /etc/resolv.conf".to_string());
    }
    for (server, answer) in answers {
        match answer {
            Ok(reply) if reply.answers == 0 => {
                let code = if reply.rcode == 3 {
                    "NXDOMAIN".to_string()
                } else {
                    format!("rcode {}", reply.rcode)
                };
                seen.push(format!("{server}: {code}, no address"));
            }
            Ok(reply) => {
                pass = false;
                seen.push(format!("{server}: {} answer records", reply.answers));
            }
            Err(error) => seen.push(format!("{server}: {error}")),
        }
    }
    match system {
        Err(error) => seen.push(format!("system resolver: {error}")),
        Ok(addresses) if addresses.is_empty() => seen.push("system resolver: none".to_string()),
        Ok(addresses) => {
            pass = false;
            let list: Vec<String> = addresses.iter().map(IpAddr::to_string).collect();
            seen.push(format!("system resolver: {}", list.join(" ")));
        }
    }
    CheckLine::new(
        CHECKS[5],
        pass,
        &format!("no address for {name} from any resolver (the proxy's stub answers NXDOMAIN)"),
        seen.join("; "),
        "names resolve inside the sandbox: its DNS server must be its proxy (the stub), not a resolver that forwards",
    )
}

/// `egress.unset-proxy`: a client that ignores the proxy variables gets no address for `name`
/// from the system resolver and has no route (`routed`: `egress.direct` failed).
pub fn unset_proxy_check(
    name: &str,
    system: &Result<Vec<IpAddr>, String>,
    routed: bool,
) -> CheckLine {
    let resolved = matches!(system, Ok(addresses) if !addresses.is_empty());
    let seen = format!(
        "{}; {}",
        if resolved {
            format!("{name} resolves")
        } else {
            format!("{name} does not resolve")
        },
        if routed {
            "a route past the proxy (see egress.direct)"
        } else {
            "no route past the proxy"
        }
    );
    CheckLine::new(
        CHECKS[6],
        !resolved && !routed,
        "without the proxy variables: no address and no route",
        seen,
        "a client that ignores HTTP(S)_PROXY could reach out past the proxy: see egress.dns and egress.direct",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dns;

    #[test]
    fn allowed_tells_a_destination_that_did_not_answer_from_a_refusal() {
        let refused = |text: &[u8]| allowed_reply(classify(text), false);
        // Offline: the proxy let the GET through and could not resolve the host.
        let offline = b"HTTP/1.1 502 Bad Gateway\r\nx-agentc-egress-deny: resolve-failed\r\n\r\nagentc egress proxy: resolve-failed: example.com: no address\n";
        assert!(matches!(refused(offline), Err(Unreached::Unanswered(_))));
        let unaccepted = b"HTTP/1.1 502 Bad Gateway\r\nx-agentc-egress-deny: connect-failed\r\n\r\nagentc egress proxy: connect-failed: x\n";
        assert!(matches!(refused(unaccepted), Err(Unreached::Unanswered(_))));
        let silent =
            b"HTTP/1.1 504 Gateway Timeout\r\n\r\nagentc egress proxy: upstream idle timeout\n";
        assert!(matches!(refused(silent), Err(Unreached::Unanswered(_))));
        // The policy refused it.
        let denied = b"HTTP/1.1 403 Forbidden\r\nx-agentc-egress-deny: host-not-allowed\r\n\r\nagentc egress proxy: host-not-allowed: x\n";
        assert!(matches!(refused(denied), Err(Unreached::Refused(_))));
        assert!(matches!(
            refused(b"SSH-2.0\r\n"),
            Err(Unreached::Refused(_))
        ));
        assert_eq!(
            refused(b"HTTP/1.1 404 Not Found\r\n\r\n"),
            Ok("404 from upstream".to_string())
        );
        // A CONNECT: only the proxy's 200 lets it through, anything else is a refusal.
        assert!(allowed_reply(classify(b"HTTP/1.1 200 OK\r\n\r\n"), true).is_ok());
        assert!(matches!(
            allowed_reply(classify(denied), true),
            Err(Unreached::Refused(_))
        ));
        assert!(matches!(
            allowed_reply(classify(b"HTTP/1.1 404 Not Found\r\n\r\n"), true),
            Err(Unreached::Refused(_))
        ));
    }

    #[test]
    fn a_tunnel_the_proxy_closes_for_the_destination_warns_and_one_it_refuses_fails() {
        // The proxy's alerts: internal_error for resolve/connect failures, access_denied for
        // a refusal (proxy/tunnel.rs `alert_for`).
        assert!(matches!(
            tunnel_reply(&[21, 3, 3, 0, 2, 2, 80], None),
            Err(Unreached::Unanswered(_))
        ));
        assert!(matches!(
            tunnel_reply(&[21, 3, 3, 0, 2, 2, 49], None),
            Err(Unreached::Refused(_))
        ));
        assert!(matches!(
            tunnel_reply(&[], None),
            Err(Unreached::Unanswered(_))
        ));
        let timed_out = tunnel_reply(&[], Some("timed out"));
        assert_eq!(
            timed_out,
            Err(Unreached::Unanswered(
                "tunnel open; no byte from upstream: timed out".to_string()
            ))
        );
        // A ServerHello's first bytes: upstream answered.
        assert!(tunnel_reply(&[22, 3, 3, 0, 90, 2, 0, 0], None).is_ok());
    }

    #[test]
    fn behind_an_upstream_for_everything_the_denied_host_is_passed_on() {
        let line = |bytes: &[u8]| {
            passed_upstream_line("egress.denied", "x.invalid:443", Ok(classify(bytes)))
        };
        let accepted = line(b"HTTP/1.1 200 Connection established\r\n\r\n");
        assert_eq!(accepted.result, Outcome::Pass, "{accepted:?}");
        assert!(
            accepted.seen.contains("passed on for the upstream"),
            "{accepted:?}"
        );
        assert!(accepted.expected.contains("upstream proxy, which decides"));
        let upstream_refused = line(b"HTTP/1.1 403 Forbidden\r\n\r\ncorporate policy\n");
        assert_eq!(upstream_refused.result, Outcome::Pass);
        let proxy_refused = line(b"HTTP/1.1 403 Forbidden\r\nx-agentc-egress-deny: host-not-allowed\r\n\r\nagentc egress proxy: host-not-allowed: x\n");
        assert_eq!(proxy_refused.result, Outcome::Pass);
        let broken =
            line(b"HTTP/1.1 502 Bad Gateway\r\n\r\nagentc egress proxy: connect-failed: x\n");
        assert_eq!(broken.result, Outcome::Fail, "{broken:?}");
        let unreachable =
            passed_upstream_line("egress.denied", "x.invalid:443", Err("refused".into()));
        assert_eq!(unreachable.result, Outcome::Fail);
    }

    #[test]
    fn a_warn_line_reads_back() {
        let line = CheckLine {
            check: "egress.allowed".into(),
            result: Outcome::Warn,
            expected: "e".into(),
            seen: "s".into(),
            hint: Some("h".into()),
        };
        assert!(line.to_line().contains(r#""result":"warn""#));
        assert_eq!(CheckLine::parse(&line.to_line()), Some(line));
    }

    #[test]
    fn check_lines_round_trip_and_other_lines_are_ignored() {
        let line = CheckLine::new(CHECKS[2], false, "x", "y".into(), "do z");
        let text = line.to_line();
        assert!(!text.contains('\n'));
        assert_eq!(CheckLine::parse(&text), Some(line));
        let skipped = r#"{"check":"egress.allowed","result":"skip","expected":"e","seen":"s"}"#;
        let parsed = CheckLine::parse(skipped).unwrap();
        assert_eq!((parsed.result, parsed.hint), (Outcome::Skip, None));
        for other in [
            "",
            "agentc egress-proxy: proxy on 0.0.0.0:3128",
            r#"{"check":"root","result":"pass","expected":"","seen":""}"#,
            r#"{"check":"egress.dns","result":"maybe","expected":"","seen":""}"#,
            r#"{"check":"egress.dns","result":"pass""#,
        ] {
            assert_eq!(CheckLine::parse(other), None, "{other}");
        }
    }

    #[test]
    fn targets_default_to_443_and_refuse_what_is_no_host() {
        let target: Target = "Allowed.Test.".parse().unwrap();
        assert_eq!(target.to_string(), "allowed.test:443");
        assert_eq!("allowed.test:80".parse::<Target>().unwrap().port, 80);
        for bad in [
            "10.0.0.1",
            "*.example.com",
            "host:0",
            "host:http",
            "",
            "[::1]:443",
        ] {
            assert!(bad.parse::<Target>().is_err(), "{bad}");
        }
    }

    #[test]
    fn proxy_variables_must_all_name_the_proxy() {
        let proxy = "10.213.0.2:3128";
        let mut env: BTreeMap<String, String> = PROXY_VARIABLES
            .iter()
            .map(|name| (name.to_string(), "http://10.213.0.2:3128".to_string()))
            .collect();
        assert_eq!(proxy_variables(&env, proxy).result, Outcome::Pass);
        env.insert("https_proxy".into(), "http://10.213.0.2:3128/".into());
        assert_eq!(proxy_variables(&env, proxy).result, Outcome::Pass);
        env.insert("HTTP_PROXY".into(), "http://evil:3128".into());
        env.remove("http_proxy");
        let line = proxy_variables(&env, proxy);
        assert_eq!(line.result, Outcome::Fail);
        assert_eq!(line.seen, "HTTP_PROXY=http://evil:3128, http_proxy unset");
        assert!(line.hint.is_some());
        // A proxy named by its Service (a Kubernetes pod's variables).
        let named: BTreeMap<String, String> = PROXY_VARIABLES
            .iter()
            .map(|name| (name.to_string(), "http://run-egress:3128".to_string()))
            .collect();
        assert_eq!(
            proxy_variables(&named, "run-egress:3128").result,
            Outcome::Pass
        );
        assert_eq!(proxy_variables(&named, proxy).result, Outcome::Fail);
    }

    #[test]
    fn responses_are_told_apart_by_who_answered() {
        let refused = b"HTTP/1.1 403 Forbidden\r\nx-agentc-egress-deny: host-not-allowed\r\ncontent-length: 10\r\n\r\nagentc egress proxy: host-not-allowed: x\n";
        assert_eq!(
            classify(refused),
            Reply::Refused(403, "host-not-allowed".into())
        );
        let upstream_error =
            b"HTTP/1.1 502 Bad Gateway\r\n\r\nagentc egress proxy: upstream error: reset\n";
        assert_eq!(
            classify(upstream_error),
            Reply::ProxyError(502, "agentc egress proxy: upstream error: reset".into())
        );
        assert_eq!(
            classify(b"HTTP/1.1 502 Bad Gateway\r\nServer: nginx\r\n\r\n<html>"),
            Reply::Upstream(502)
        );
        assert_eq!(classify(b"HTTP/1.1 200 OK\r\n\r\n"), Reply::Upstream(200));
        assert_eq!(
            classify(b"HTTP/1.0 404 Not Found\r\n"),
            Reply::Upstream(404)
        );
        assert_eq!(classify(b""), Reply::Garbage("no response".into()));
        assert!(matches!(classify(b"SSH-2.0-x\r\n"), Reply::Garbage(_)));
    }

    #[test]
    fn default_routes_and_global_ipv6_addresses_are_read_from_proc() {
        let header =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n";
        let local = "eth0\t0000D50A\t00000000\t0001\t0\t0\t0\tF0FFFFFF\t0\t0\t0\n";
        assert_eq!(default_route(&format!("{header}{local}")), None);
        let default = "eth0\t00000000\t41B3D50A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n";
        let route = default_route(&format!("{header}{local}{default}")).unwrap();
        assert_eq!(route.to_string(), "eth0 via 10.213.179.65");
        assert_eq!(default_route(""), None);
        let arp =
            "IP address       HW type     Flags       HW address            Mask     Device\n\
                   10.213.179.65    0x1         0x0         00:00:00:00:00:00     *        eth0\n\
                   10.213.179.66    0x1         0x2         02:42:0a:d5:b3:42     *        eth0\n";
        assert!(!gateway_answers(arp, route.gateway), "incomplete");
        assert!(gateway_answers(arp, "10.213.179.66".parse().unwrap()));
        assert!(!gateway_answers("", route.gateway), "absent");
        let inet6 = "00000000000000000000000000000001 01 80 10 80       lo\n\
                     fe800000000000000042acfffe110002 2c 40 20 80     eth0\n";
        assert!(global_ipv6(inet6).is_empty());
        let global = "fd000000000000000000000000000002 2c 40 00 00     eth0\n";
        assert_eq!(
            global_ipv6(&format!("{inet6}{global}")),
            vec!["eth0 fd000000000000000000000000000002".to_string()]
        );
    }

    #[test]
    fn the_direct_check_fails_on_any_way_out() {
        let outside: SocketAddr = "172.18.0.3:3128".parse().unwrap();
        let unreachable = Some((outside, Err("Network is unreachable".to_string())));
        let line = direct_check(unreachable.clone(), None, &[]);
        assert_eq!(line.result, Outcome::Pass, "{line:?}");
        assert_eq!(
            line.seen,
            "connect 172.18.0.3:3128: Network is unreachable; no default route; no global IPv6 address"
        );
        assert_eq!(
            direct_check(Some((outside, Ok(()))), None, &[]).result,
            Outcome::Fail
        );
        let route = Route {
            iface: "eth0".into(),
            gateway: "10.0.0.1".parse().unwrap(),
        };
        let dead = direct_check(unreachable.clone(), Some((&route, false)), &[]);
        assert_eq!(dead.result, Outcome::Pass);
        assert!(dead
            .seen
            .contains("default route eth0 via 10.0.0.1, a gateway that does not answer"));
        assert_eq!(
            direct_check(unreachable.clone(), Some((&route, true)), &[]).result,
            Outcome::Fail
        );
        assert_eq!(
            direct_check(unreachable, None, &["eth0 fd00::2".to_string()]).result,
            Outcome::Fail
        );
        assert_eq!(direct_check(None, None, &[]).result, Outcome::Pass);
    }

    #[test]
    fn resolvers_and_dns_replies_are_read() {
        let conf = "search x\nnameserver 127.0.0.11\noptions ndots:0\nnameserver 10.213.0.2\n";
        assert_eq!(
            nameservers(conf),
            vec![
                "127.0.0.11".parse::<IpAddr>().unwrap(),
                "10.213.0.2".parse().unwrap()
            ]
        );
        let query = dns::query(0x1234, "allowed.test", 1);
        let nxdomain = dns::answer(&query).unwrap();
        assert_eq!(
            dns_reply(0x1234, &nxdomain),
            Some(DnsReply {
                rcode: 3,
                answers: 0
            })
        );
        assert_eq!(dns_reply(0x4321, &nxdomain), None, "another query's reply");
        assert_eq!(dns_reply(0x1234, &query), None, "a query is no reply");
    }

    #[test]
    fn the_dns_and_unset_proxy_checks_fail_on_any_address() {
        let stub: IpAddr = "10.213.0.2".parse().unwrap();
        let nx = DnsReply {
            rcode: 3,
            answers: 0,
        };
        let failed: Result<Vec<IpAddr>, String> = Err("failed to lookup address".into());
        let line = dns_check("allowed.test", &[(stub, Ok(nx))], &failed);
        assert_eq!(line.result, Outcome::Pass);
        assert_eq!(
            line.seen,
            "10.213.0.2: NXDOMAIN, no address; system resolver: failed to lookup address"
        );
        let answered = DnsReply {
            rcode: 0,
            answers: 1,
        };
        assert_eq!(
            dns_check("a", &[(stub, Ok(answered))], &failed).result,
            Outcome::Fail
        );
        let resolved = Ok(vec!["172.18.0.5".parse().unwrap()]);
        assert_eq!(
            dns_check("a", &[(stub, Ok(nx))], &resolved).result,
            Outcome::Fail
        );
        assert_eq!(unset_proxy_check("a", &failed, false).result, Outcome::Pass);
        assert_eq!(
            unset_proxy_check("a", &resolved, false).result,
            Outcome::Fail
        );
        assert_eq!(unset_proxy_check("a", &failed, true).result, Outcome::Fail);
    }
}
