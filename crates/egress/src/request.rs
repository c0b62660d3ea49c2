//! What a request asks of the proxy: a tunnel, a forwarded request, or its health.
//!
//! Only the request line matters here (hyper has parsed the head); the host is judged later by
//! [`crate::policy::Policy::decide_name`]. Also the header hygiene of forwarding: hop-by-hop and
//! `Proxy-*` headers never cross the proxy.

use http::header::{HeaderMap, HeaderName, CONNECTION};

use crate::policy::{Deny, Reason};

/// The path of the proxy's own health endpoint (origin-form `GET /healthz`).
pub const HEALTH_PATH: &str = "/healthz";

/// Where the proxy serves, to its clients, the launch CA's certificate
/// (`GET /agentc/egress-ca/ca.pem`) and the bundle the workload trusts
/// (`GET /agentc/egress-ca/bundle.pem`) when it holds credentials: how a workload that cannot
/// mount the proxy's volume (a Kubernetes pod) gets them. Both are public certificates.
pub const CA_PATH_PREFIX: &str = "/agentc/egress-ca/";

/// A file the proxy serves under [`CA_PATH_PREFIX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaFile {
    /// The launch CA's certificate ([`crate::credential::CA_FILE`]).
    Certificate,
    /// The bundle ([`crate::credential::BUNDLE_FILE`]).
    Bundle,
}

/// What a request line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `CONNECT host:port`: a tunnel.
    Connect {
        /// The host as written (not yet judged).
        host: String,
        /// The port.
        port: u16,
    },
    /// `METHOD http://host[:port]/path`: a forwarded plain-HTTP request.
    Forward {
        /// The host as written (not yet judged).
        host: String,
        /// The port (80 when absent).
        port: u16,
        /// The origin-form target sent upstream (`/path?query`).
        path: String,
    },
    /// `GET /healthz`: the proxy's own health.
    Health,
    /// `GET /agentc/egress-ca/ca.pem` or `.../bundle.pem`: what the workload trusts.
    Ca(CaFile),
}

fn bad(detail: impl Into<String>) -> Deny {
    Deny::new(Reason::BadRequest, detail)
}

/// Splits an authority (`host`, `host:port`, `[v6]:port`) into the host as written and the
/// port, `default` when absent.
pub fn split_authority(authority: &str, default: Option<u16>) -> Result<(String, u16), Deny> {
    if authority.contains('@') {
        return Err(bad("credentials (userinfo) in the request target"));
    }
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (inner, after) = rest
            .split_once(']')
            .ok_or_else(|| bad("an unclosed '[' in the request target"))?;
        let port = match after {
            "" => None,
            _ => Some(
                after
                    .strip_prefix(':')
                    .ok_or_else(|| bad("text after ']' in the request target"))?,
            ),
        };
        (format!("[{inner}]"), port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host.to_string(), Some(port)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(bad("no host in the request target"));
    }
    let port = match port {
        Some(port) => {
            if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(format!("the port `{port}` is not a number")));
            }
            match port.parse::<u16>() {
                Ok(0) | Err(_) => return Err(bad(format!("the port `{port}` is out of range"))),
                Ok(port) => port,
            }
        }
        None => default.ok_or_else(|| bad("CONNECT needs host:port"))?,
    };
    Ok((host, port))
}

/// Reads a request line's method and target.
///
/// ```
/// use agentc_egress::request::{classify, Target};
/// assert_eq!(
///     classify("GET", "http://Example.com/a?b").unwrap(),
///     Target::Forward { host: "Example.com".into(), port: 80, path: "/a?b".into() }
/// );
/// assert_eq!(
///     classify("CONNECT", "example.com:443").unwrap(),
///     Target::Connect { host: "example.com".into(), port: 443 }
/// );
/// assert_eq!(classify("GET", "/healthz").unwrap(), Target::Health);
/// assert_eq!(
///     classify("GET", "/agentc/egress-ca/bundle.pem").unwrap(),
///     Target::Ca(agentc_egress::request::CaFile::Bundle)
/// );
/// assert!(classify("GET", "/").is_err());
/// ```
pub fn classify(method: &str, target: &str) -> Result<Target, Deny> {
    if method == "CONNECT" {
        if target.contains('/') {
            return Err(bad("CONNECT takes host:port, not a URL"));
        }
        let (host, port) = split_authority(target, None)?;
        return Ok(Target::Connect { host, port });
    }
    if target.starts_with('/') || target == "*" {
        if method == "GET" && target == HEALTH_PATH {
            return Ok(Target::Health);
        }
        if method == "GET" {
            match target.strip_prefix(CA_PATH_PREFIX) {
                Some(crate::credential::CA_FILE) => return Ok(Target::Ca(CaFile::Certificate)),
                Some(crate::credential::BUNDLE_FILE) => return Ok(Target::Ca(CaFile::Bundle)),
                _ => {}
            }
        }
        return Err(bad(
            "an origin-form request to the proxy itself (send absolute-form http://host/path)",
        ));
    }
    let Some((scheme, rest)) = target.split_once("://") else {
        return Err(bad("a request target that is not http://host/path"));
    };
    if scheme.eq_ignore_ascii_case("https") {
        return Err(bad("https:// through a forward request; use CONNECT"));
    }
    if !scheme.eq_ignore_ascii_case("http") {
        return Err(bad(format!("the scheme `{scheme}` is not http")));
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (host, port) = split_authority(authority, Some(80))?;
    let tail = tail.split('#').next().unwrap_or_default();
    let path = match tail.chars().next() {
        None => "/".to_string(),
        Some('?') => format!("/{tail}"),
        Some(_) => tail.to_string(),
    };
    Ok(Target::Forward { host, port, path })
}

/// The hop-by-hop headers of RFC 9110 section 7.6.1, plus the proxy ones.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Removes hop-by-hop headers, every header the `Connection` header names, and every
/// `Proxy-*` header; what is left may cross the proxy.
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    let proxy: Vec<HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().starts_with("proxy-"))
        .cloned()
        .collect();
    for name in proxy {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn absolute_form_requests_are_forwarded_with_an_origin_form_path() {
        for (target, host, port, path) in [
            ("http://a.test", "a.test", 80, "/"),
            ("http://a.test/", "a.test", 80, "/"),
            ("HTTP://A.test:8080/x/y?z=1", "A.test", 8080, "/x/y?z=1"),
            ("http://a.test?q", "a.test", 80, "/?q"),
            ("http://a.test/p#frag", "a.test", 80, "/p"),
            ("http://[::1]:80/", "[::1]", 80, "/"),
            ("http://2130706433/", "2130706433", 80, "/"),
        ] {
            assert_eq!(
                classify("GET", target).unwrap(),
                Target::Forward {
                    host: host.into(),
                    port,
                    path: path.into()
                },
                "{target}"
            );
        }
    }

    #[test]
    fn connect_needs_host_and_port() {
        assert_eq!(
            classify("CONNECT", "[::ffff:127.0.0.1]:443").unwrap(),
            Target::Connect {
                host: "[::ffff:127.0.0.1]".into(),
                port: 443
            }
        );
        for target in [
            "a.test",
            "a.test:",
            "a.test:0",
            "a.test:65536",
            "a.test:-1",
            "http://a.test:443",
            ":443",
            "[::1:443",
            "[::1]x:443",
            "user@a.test:443",
        ] {
            let deny = classify("CONNECT", target).unwrap_err();
            assert_eq!(deny.reason, Reason::BadRequest, "{target}");
        }
    }

    #[test]
    fn requests_to_the_proxy_itself_are_bad_except_health() {
        assert_eq!(classify("GET", "/healthz").unwrap(), Target::Health);
        for (method, target) in [
            ("GET", "/"),
            ("POST", "/healthz"),
            ("GET", "/healthz?x"),
            ("OPTIONS", "*"),
            ("GET", "https://a.test/"),
            ("GET", "ftp://a.test/"),
            ("GET", "a.test"),
            ("GET", "http://user:pw@a.test/"),
            ("GET", "http:///path"),
        ] {
            let deny = classify(method, target).unwrap_err();
            assert_eq!(deny.reason, Reason::BadRequest, "{method} {target}");
        }
    }

    #[test]
    fn hop_by_hop_and_proxy_headers_are_stripped() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("connection", "keep-alive, x-secret-hop"),
            ("keep-alive", "timeout=5"),
            ("x-secret-hop", "1"),
            ("proxy-authorization", "Basic abc"),
            ("proxy-connection", "keep-alive"),
            ("proxy-anything", "1"),
            ("te", "trailers"),
            ("upgrade", "websocket"),
            ("transfer-encoding", "chunked"),
            ("accept", "*/*"),
            ("user-agent", "curl"),
        ] {
            headers.append(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        strip_hop_by_hop(&mut headers);
        let mut left: Vec<&str> = headers.keys().map(|n| n.as_str()).collect();
        left.sort();
        assert_eq!(left, ["accept", "user-agent"]);
    }
}
