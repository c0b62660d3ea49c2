//! The decision core: by host name before any resolution, then every resolved address.

use std::fmt;
use std::net::IpAddr;

use crate::addr::{self, Cidr, Range};
use crate::host::{ip_target, never_a_destination, normalize_target, HostRefusal, HostSpec};
use crate::upstream::Upstream;

/// Why a request was allowed or refused: the `reason` of a decision line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Allowed: the host and port are on the allowlist and every address passed.
    Allowed,
    /// The host is on no allowlist entry.
    HostNotAllowed,
    /// The host is on the allowlist, but not for this port.
    PortNotAllowed,
    /// The host is an IP address in some spelling.
    IpLiteral,
    /// The host is not an LDH DNS name.
    BadHost,
    /// The request is not one a proxy serves (origin-form, `https://` absolute-form, userinfo,
    /// a malformed head).
    BadRequest,
    /// The name did not resolve (or took too long).
    ResolveFailed,
    /// A resolved address is in a refused range.
    AddressRefused,
    /// No checked address accepted the connection.
    ConnectFailed,
    /// A tunnel's ClientHello names another host in its SNI.
    SniMismatch,
    /// A tunnel's ClientHello has no SNI.
    SniMissing,
    /// A tunnel to port 443 carried something other than a TLS ClientHello (or too much of
    /// it), or a plain-HTTP forward request asked for port 443.
    NotTls,
    /// A tunnel sent no complete ClientHello or request head in time.
    ClientHelloTimeout,
    /// A tunnel's ClientHello names its server ambiguously: two host names in server_name, or
    /// an extension that appears twice.
    ClientHelloAmbiguous,
    /// A tunnel's ClientHello carries Encrypted Client Hello (or the ESNI draft's extension),
    /// which hides the name it asks for, and no `--allow-ech` entry allows it for the host.
    Ech,
    /// A tunnel's first HTTP request asks (`Host`, or an absolute-form target) for another
    /// host or port than the CONNECT.
    HostMismatch,
    /// A tunnel's first bytes are neither TLS nor HTTP, and no explicit `host:port` entry
    /// allows a raw tunnel there.
    RawNotAllowed,
    /// The proxy is serving as many connections as it may.
    TooManyConnections,
    /// A DNS query to the stub: answered NXDOMAIN.
    DnsQuery,
    /// A DNS-over-TCP connection or query the stub dropped unanswered: one over its
    /// connections at once, past a connection's queries, or longer than a DNS message.
    DnsDropped,
    /// A name allowed only through a wildcard entry whose domain had its distinct names for
    /// the minute resolved already ([`crate::wildcard`]): refused before any look-up.
    WildcardRate,
    /// A placeholder of a credential was sent where that credential is not bound: in a
    /// CONNECT line, a plain-HTTP request, or a terminated request to another host
    /// ([`crate::replay`]). Nothing of the request leaves the proxy.
    CredentialReplay,
    /// A request inside a terminated tunnel names another host (`Host`, `:authority`) than
    /// the CONNECT and the SNI: `421 Misdirected Request`.
    Misdirected,
    /// A request body the proxy must search for placeholders is larger than it reads.
    BodyTooLarge,
    /// The upstream of a terminated tunnel did not prove it is the host (its certificate
    /// does not verify against Mozilla's roots and the profile's CAs).
    UpstreamCertificate,
    /// The upstream proxy ([`crate::upstream`]) refused the CONNECT (it decides what it
    /// carries).
    UpstreamRefused,
    /// A method the proxy does not send to a host with a bound credential: `TRACE`, whose
    /// answer is the request itself, key included.
    MethodRefused,
    /// A bound host's response is in a content coding the proxy cannot decode, so it could
    /// not be searched for the held keys: `502`, nothing of it reached the sandbox.
    UnscannableResponse,
    /// The proxy holds as many request-body bytes as it may at once
    /// ([`crate::proxy::PREREAD_BUDGET`]): `503`, try again.
    ProxyBusy,
    /// Not a refusal: the held values the proxy replaced in a bound host's response (a
    /// `scrub` line, [`crate::scrub`]).
    Scrubbed,
}

impl Reason {
    /// The reason's code in decision lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Allowed => "allowed",
            Reason::HostNotAllowed => "host-not-allowed",
            Reason::PortNotAllowed => "port-not-allowed",
            Reason::IpLiteral => "ip-literal",
            Reason::BadHost => "bad-host",
            Reason::BadRequest => "bad-request",
            Reason::ResolveFailed => "resolve-failed",
            Reason::AddressRefused => "address-refused",
            Reason::ConnectFailed => "connect-failed",
            Reason::SniMismatch => "sni-mismatch",
            Reason::SniMissing => "sni-missing",
            Reason::NotTls => "not-tls",
            Reason::ClientHelloTimeout => "client-hello-timeout",
            Reason::ClientHelloAmbiguous => "client-hello-ambiguous",
            Reason::Ech => "ech",
            Reason::HostMismatch => "host-mismatch",
            Reason::RawNotAllowed => "raw-not-allowed",
            Reason::TooManyConnections => "too-many-connections",
            Reason::DnsQuery => "dns-query",
            Reason::DnsDropped => "dns-dropped",
            Reason::WildcardRate => "wildcard-rate",
            Reason::CredentialReplay => "credential-replay",
            Reason::Misdirected => "misdirected",
            Reason::BodyTooLarge => "body-too-large",
            Reason::UpstreamCertificate => "upstream-certificate",
            Reason::UpstreamRefused => "upstream-refused",
            Reason::MethodRefused => "method-refused",
            Reason::UnscannableResponse => "unscannable-response",
            Reason::ProxyBusy => "proxy-busy",
            Reason::Scrubbed => "scrubbed",
        }
    }

    /// The HTTP status a client gets for this refusal (before any tunnel is open).
    pub fn status(self) -> u16 {
        match self {
            Reason::Allowed => 200,
            Reason::BadHost | Reason::BadRequest => 400,
            Reason::ResolveFailed
            | Reason::ConnectFailed
            | Reason::UpstreamCertificate
            | Reason::UnscannableResponse => 502,
            Reason::MethodRefused => 405,
            Reason::Misdirected => 421,
            Reason::BodyTooLarge => 413,
            Reason::ClientHelloTimeout => 408,
            Reason::TooManyConnections | Reason::ProxyBusy => 503,
            Reason::WildcardRate => 429,
            _ => 403,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal: its reason code and a detail for the log and the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deny {
    /// The reason code.
    pub reason: Reason,
    /// What exactly (the range of a refused address, the SNI seen, ...).
    pub detail: String,
}

impl Deny {
    /// A refusal with a detail.
    pub fn new(reason: Reason, detail: impl Into<String>) -> Deny {
        Deny {
            reason,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Deny {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.reason, self.detail)
    }
}

/// The allowlist and the allowed ranges, ready to decide.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    allow: Vec<HostSpec>,
    allow_cidrs: Vec<Cidr>,
    allow_ech: Vec<HostSpec>,
    upstream: Option<Upstream>,
}

impl Policy {
    /// A policy from its allowlist entries and allowed ranges.
    pub fn new(allow: Vec<HostSpec>, allow_cidrs: Vec<Cidr>) -> Policy {
        Policy {
            allow,
            allow_cidrs,
            allow_ech: Vec::new(),
            upstream: None,
        }
    }

    /// The policy with the upstream proxy its connections go through ([`crate::upstream`]).
    pub fn with_upstream(mut self, upstream: Option<Upstream>) -> Policy {
        self.upstream = upstream;
        self
    }

    /// The upstream proxy a connection to the decided `host` goes through, if any: `None`
    /// without one, and for a destination a `--direct` entry names.
    pub fn upstream_for(&self, host: &str) -> Option<&Upstream> {
        self.upstream
            .as_ref()
            .filter(|upstream| upstream.carries(host))
    }

    /// The policy with the hosts whose tunnels may carry Encrypted Client Hello
    /// (`--allow-ech`, matched as the allowlist is).
    pub fn with_allow_ech(mut self, allow_ech: Vec<HostSpec>) -> Policy {
        self.allow_ech = allow_ech;
        self
    }

    /// Whether a ClientHello with ECH (or ESNI) may open a tunnel to `host:port` (normalized).
    pub fn ech_allowed(&self, host: &str, port: u16) -> bool {
        self.allow_ech.iter().any(|spec| spec.matches(host, port))
    }

    /// Whether a tunnel to `host:port` (normalized, allowed) may carry bytes that are neither
    /// TLS nor HTTP: only through an entry that names this port explicitly (`host:22`), and
    /// never to port 443, which carries TLS.
    pub fn raw_allowed(&self, host: &str, port: u16) -> bool {
        port != 443
            && self
                .allow
                .iter()
                .any(|spec| spec.port == Some(port) && spec.matches(host, port))
    }

    /// Decides by name, before anything is resolved: `Ok` with the normalized host when an
    /// entry allows it on `port`. A target written as an address ([`ip_target`]) is allowed
    /// only by an address entry that holds it, and never when it is one of the proxy's own
    /// addresses ([`never_a_destination`]) that no allowed range names; other spellings of
    /// addresses are refused.
    pub fn decide_name(&self, host: &str, port: u16) -> Result<String, Deny> {
        let host = normalize_target(host).map_err(|refusal| match refusal {
            HostRefusal::IpLiteral => Deny::new(
                Reason::IpLiteral,
                "an IP address spelled other than a.b.c.d or [v6] is never allowed",
            ),
            HostRefusal::Malformed(why) => Deny::new(Reason::BadHost, why),
        })?;
        // With `--upstream-all`, the upstream decides what it carries (the profile allows its
        // host, as agent-containers reads such an allowlist); no address entry is needed.
        let passed = self
            .upstream_for(&host)
            .is_some_and(|upstream| upstream.all);
        if let Some(ip) = ip_target(&host) {
            // The proxy's own addresses, unless an --allow-cidr names them (a proxy run on
            // loopback, in tests).
            let own = never_a_destination(ip)
                .filter(|_| !self.allow_cidrs.iter().any(|cidr| cidr.contains(ip)));
            if let Some(why) = own {
                return Err(Deny::new(
                    Reason::IpLiteral,
                    format!("{host} is {why}, never a destination"),
                ));
            }
            if !passed && !self.allow.iter().any(|spec| spec.matches_host(&host)) {
                return Err(Deny::new(
                    Reason::IpLiteral,
                    format!(
                        "{host} is on no address entry of the allowlist (an IP address is \
                         allowed only where the allowlist names it or its range)"
                    ),
                ));
            }
        }
        if passed || self.allow.iter().any(|spec| spec.matches(&host, port)) {
            return Ok(host);
        }
        if self.allow.iter().any(|spec| spec.matches_host(&host)) {
            return Err(Deny::new(
                Reason::PortNotAllowed,
                format!("{host} is allowed, but not on port {port}"),
            ));
        }
        Err(Deny::new(
            Reason::HostNotAllowed,
            format!("{host} is not on the allowlist"),
        ))
    }

    /// Checks every resolved address; one refused address refuses the request (a name that
    /// points at the metadata service next to a public address is not to be trusted).
    pub fn check_addresses(&self, addresses: &[IpAddr]) -> Result<(), Deny> {
        if addresses.is_empty() {
            return Err(Deny::new(Reason::ResolveFailed, "no address"));
        }
        for address in addresses {
            if let Err(range) = addr::check(*address, &self.allow_cidrs) {
                return Err(Deny::new(
                    Reason::AddressRefused,
                    format!("{address} is {}", range_words(range)),
                ));
            }
        }
        Ok(())
    }
}

fn range_words(range: Range) -> String {
    format!("in a {range} range and no --allow-cidr covers it")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy::new(
            vec![
                HostSpec::parse("allowed.test").unwrap(),
                HostSpec::parse("*.wild.test").unwrap(),
                HostSpec::parse("ssh.test:22").unwrap(),
                HostSpec::parse("10.8.0.0/24").unwrap(),
                HostSpec::parse("10.9.0.2:8000").unwrap(),
            ],
            vec![Cidr::parse("10.251.0.0/24").unwrap()],
        )
    }

    #[test]
    fn names_are_decided_before_resolution() {
        let p = policy();
        assert_eq!(p.decide_name("Allowed.Test.", 443).unwrap(), "allowed.test");
        assert_eq!(p.decide_name("a.wild.test", 80).unwrap(), "a.wild.test");
        assert_eq!(p.decide_name("ssh.test", 22).unwrap(), "ssh.test");
        assert_eq!(p.decide_name("10.8.0.1", 443).unwrap(), "10.8.0.1");
        assert_eq!(p.decide_name("10.8.0.200", 80).unwrap(), "10.8.0.200");
        assert_eq!(p.decide_name("10.9.0.2", 8000).unwrap(), "10.9.0.2");
        assert_eq!(p.decide_name("[::ffff:10.8.0.1]", 443).unwrap(), "10.8.0.1");
        let loopback = Policy::new(vec![HostSpec::parse("0.0.0.0/0").unwrap()], vec![]);
        assert_eq!(loopback.decide_name("8.8.8.8", 443).unwrap(), "8.8.8.8");
        for own in ["127.0.0.1", "0.0.0.0", "[::ffff:127.0.0.1]", "224.0.0.1"] {
            let deny = loopback.decide_name(own, 443).unwrap_err();
            assert_eq!(deny.reason, Reason::IpLiteral, "{own}: {deny}");
        }
        for (host, port, reason) in [
            ("forbidden.test", 443, Reason::HostNotAllowed),
            ("wild.test", 443, Reason::HostNotAllowed),
            ("allowed.test", 22, Reason::PortNotAllowed),
            ("ssh.test", 443, Reason::PortNotAllowed),
            ("10.251.0.2", 443, Reason::IpLiteral),
            ("[::1]", 443, Reason::IpLiteral),
            ("10.9.0.1", 443, Reason::IpLiteral),
            ("10.9.0.1", 8000, Reason::IpLiteral),
            ("10.9.1.5", 443, Reason::IpLiteral),
            ("10.8.0.1", 22, Reason::PortNotAllowed),
            ("0x0a080001", 443, Reason::IpLiteral),
            ("010.8.0.1", 443, Reason::IpLiteral),
            ("a_b.test", 443, Reason::BadHost),
        ] {
            let deny = p.decide_name(host, port).unwrap_err();
            assert_eq!(deny.reason, reason, "{host}:{port}: {deny}");
        }
    }

    #[test]
    fn raw_tunnels_need_an_explicit_port_and_ech_an_entry_of_its_own() {
        let p = policy().with_allow_ech(vec![HostSpec::parse("ech.test").unwrap()]);
        assert!(p.raw_allowed("ssh.test", 22));
        assert!(!p.raw_allowed("allowed.test", 80));
        assert!(!p.raw_allowed("a.wild.test", 80));
        let p443 = Policy::new(vec![HostSpec::parse("tls.test:443").unwrap()], vec![]);
        assert!(!p443.raw_allowed("tls.test", 443));
        assert!(p.ech_allowed("ech.test", 443));
        assert!(!p.ech_allowed("ech.test", 22));
        assert!(!p.ech_allowed("allowed.test", 443));
    }

    #[test]
    fn every_resolved_address_is_checked() {
        let p = policy();
        let ip = |t: &str| t.parse::<IpAddr>().unwrap();
        assert!(p.check_addresses(&[ip("10.251.0.2")]).is_ok());
        assert!(p
            .check_addresses(&[ip("8.8.8.8"), ip("2606:4700::1")])
            .is_ok());
        let deny = p
            .check_addresses(&[ip("8.8.8.8"), ip("169.254.169.254")])
            .unwrap_err();
        assert_eq!(deny.reason, Reason::AddressRefused);
        assert!(deny.detail.contains("metadata"), "{deny}");
        assert_eq!(
            p.check_addresses(&[]).unwrap_err().reason,
            Reason::ResolveFailed
        );
    }
}
