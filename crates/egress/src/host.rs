//! Host names: normalization, IP literals in every spelling, and the allowlist's host specs.
//!
//! A host the proxy will consider is a DNS name of letters, digits and hyphens (LDH), at most
//! 253 characters in labels of 1 to 63, compared in lower case without a trailing dot. Anything
//! else is refused before any resolution, and an IP literal is refused in every spelling a
//! resolver or a URL parser might accept: dotted quads, a single integer (`2130706433`), hex
//! (`0x7f000001`, `0x7f.1`), octal (`0177.0.0.1`), short forms (`127.1`), IPv6 in brackets or
//! not, IPv4-mapped IPv6, zone ids (`fe80::1%eth0`) and percent-encoded forms of any of them.
//!
//! The one exception is an address the allowlist names itself (an address entry `10.1.2.3`,
//! `10.1.2.3:8000`, `[fd00::1]:443`, or a range entry `10.1.2.0/24`): a request target written
//! in the canonical spelling (dotted decimal, or bracketed IPv6 without a zone id, see
//! [`ip_target`]) is then judged against those entries; every other spelling stays refused.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::addr::Cidr;

use serde::{Deserialize, Serialize};

use crate::error::EgressError;

/// Why a host is refused before resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRefusal {
    /// An IP address in some spelling.
    IpLiteral,
    /// Not an LDH DNS name; the text says how.
    Malformed(&'static str),
}

impl fmt::Display for HostRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostRefusal::IpLiteral => {
                f.write_str("an IP address literal (only host names are allowed)")
            }
            HostRefusal::Malformed(why) => f.write_str(why),
        }
    }
}

/// The longest host name, in characters, without the trailing dot.
pub const MAX_HOST_LEN: usize = 253;

/// Whether a label reads as a number to an IPv4 parser such as `inet_aton`: decimal digits,
/// or `0x`/`0X` followed by hex digits (octal is a decimal-looking label with a leading 0).
fn numeric_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    if let Some(hex) = label
        .strip_prefix("0x")
        .or_else(|| label.strip_prefix("0X"))
    {
        return hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    !bytes.is_empty() && bytes.iter().all(u8::is_ascii_digit)
}

/// Percent-decodes `text`; `None` when an escape is malformed.
fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Whether `text` (no percent-encoding) is an IP literal in some spelling.
fn is_ip_literal(text: &str) -> bool {
    let trimmed = text.strip_suffix('.').unwrap_or(text);
    // IPv6 in any form: brackets, zone ids, mapped IPv4. A colon never belongs in a host name.
    if trimmed.contains(':') || trimmed.starts_with('[') {
        return true;
    }
    // IPv4 as inet_aton reads it: 1 to 4 numeric parts. A host name's last label is never
    // numeric (RFC 3696 section 2), so a numeric last label is treated as an address too.
    trimmed.rsplit('.').next().is_some_and(numeric_label)
}

/// Normalizes a host (no port): lower case, one trailing dot removed; refuses IP literals in
/// every spelling and anything that is not an LDH DNS name.
///
/// ```
/// use agentc_egress::host::{normalize_host, HostRefusal};
/// assert_eq!(normalize_host("Example.COM.").unwrap(), "example.com");
/// assert_eq!(normalize_host("0x7f000001"), Err(HostRefusal::IpLiteral));
/// assert_eq!(normalize_host("[::ffff:127.0.0.1]"), Err(HostRefusal::IpLiteral));
/// ```
pub fn normalize_host(raw: &str) -> Result<String, HostRefusal> {
    if raw.contains('%') {
        // A zone id (`fe80::1%eth0`) or percent-encoding (`%31%32%37.0.0.1`): never a name.
        let decoded = percent_decode(raw)
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .unwrap_or_default();
        if raw.contains(':') || is_ip_literal(&decoded) {
            return Err(HostRefusal::IpLiteral);
        }
        return Err(HostRefusal::Malformed("percent-encoding in a host name"));
    }
    if is_ip_literal(raw) {
        return Err(HostRefusal::IpLiteral);
    }
    let host = raw.strip_suffix('.').unwrap_or(raw);
    if host.is_empty() {
        return Err(HostRefusal::Malformed("an empty host name"));
    }
    if host.len() > MAX_HOST_LEN {
        return Err(HostRefusal::Malformed(
            "a host name longer than 253 characters",
        ));
    }
    if !host.is_ascii() {
        return Err(HostRefusal::Malformed(
            "non-ASCII characters in a host name (use its punycode xn-- form)",
        ));
    }
    for label in host.split('.') {
        if label.is_empty() {
            return Err(HostRefusal::Malformed("an empty label in a host name"));
        }
        if label.len() > 63 {
            return Err(HostRefusal::Malformed("a label longer than 63 characters"));
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(HostRefusal::Malformed(
                "a character other than letters, digits, '-' and '.' in a host name",
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(HostRefusal::Malformed(
                "a label starting or ending with '-'",
            ));
        }
    }
    Ok(host.to_ascii_lowercase())
}

/// A request target's host as an address, when it is written in the one spelling the proxy
/// reads as an address: dotted-decimal IPv4 (`10.1.2.3`, no leading zeros) or bracketed IPv6
/// without a zone id (`[fd00::1]`); an IPv4-mapped IPv6 address is its IPv4 address. `None`
/// for every other text (names, and the other spellings of addresses, which stay refused).
///
/// ```
/// use agentc_egress::host::ip_target;
/// assert_eq!(ip_target("10.1.2.3").unwrap().to_string(), "10.1.2.3");
/// assert_eq!(ip_target("[::ffff:10.1.2.3]").unwrap().to_string(), "10.1.2.3");
/// assert_eq!(ip_target("[fd00::1]").unwrap().to_string(), "fd00::1");
/// for other in ["0x0a010203", "10.1", "010.1.2.3", "fd00::1", "[fe80::1%25eth0]", "a.test"] {
///     assert!(ip_target(other).is_none(), "{other}");
/// }
/// ```
pub fn ip_target(host: &str) -> Option<IpAddr> {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner
            .parse::<Ipv6Addr>()
            .ok()
            .map(|v6| IpAddr::V6(v6).to_canonical());
    }
    host.parse::<Ipv4Addr>().ok().map(IpAddr::V4)
}

/// How a target address is written in decision lines and compared: dotted decimal, or
/// bracketed IPv6.
pub fn address_text(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// Why an address can never be a destination, whatever the allowlist says: the proxy's own
/// loopback, the unspecified address (which connects to the proxy itself), multicast and the
/// IPv4 broadcast address.
pub fn never_a_destination(ip: IpAddr) -> Option<&'static str> {
    match ip.to_canonical() {
        ip if ip.is_loopback() => Some("a loopback address (the proxy's own)"),
        ip if ip.is_unspecified() => Some("the unspecified address (the proxy's own)"),
        ip if ip.is_multicast() => Some("a multicast address"),
        IpAddr::V4(v4) if v4.is_broadcast() => Some("the broadcast address"),
        _ => None,
    }
}

/// Normalizes a request target's host: a name as [`normalize_host`] does, or an address in
/// the spelling [`ip_target`] reads, written as [`address_text`] writes it. Every other
/// spelling of an address is [`HostRefusal::IpLiteral`].
///
/// ```
/// use agentc_egress::host::{normalize_target, HostRefusal};
/// assert_eq!(normalize_target("Example.COM.").unwrap(), "example.com");
/// assert_eq!(normalize_target("10.1.2.3").unwrap(), "10.1.2.3");
/// assert_eq!(normalize_target("[FD00::1]").unwrap(), "[fd00::1]");
/// assert_eq!(normalize_target("0x7f000001"), Err(HostRefusal::IpLiteral));
/// ```
pub fn normalize_target(raw: &str) -> Result<String, HostRefusal> {
    match normalize_host(raw) {
        Err(HostRefusal::IpLiteral) => ip_target(raw)
            .map(address_text)
            .ok_or(HostRefusal::IpLiteral),
        other => other,
    }
}

/// What a host spec matches: one name, the subdomains of one, or addresses.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostPattern {
    /// Exactly this name (`api.example.com`).
    Exact(String),
    /// Any name ending in `.` and this name, not the name itself (`*.example.com`).
    Subdomains(String),
    /// A request whose target is an address in this range, written as an address (one
    /// address is a /32 or /128): `10.1.2.3`, `10.1.2.0/24`, `[fd00::1]`. Names that
    /// resolve into the range are not matched (those are `--allow-cidr`'s).
    Addresses(Cidr),
}

/// One allowlist entry: `host`, `host:port`, `*.name`, `*.name:port`, or an address or range
/// the profile names: `10.1.2.3`, `10.1.2.3:8000`, `10.1.2.0/24`, `10.1.2.0/24:8000`,
/// `[fd00::1]`, `[fd00::1]:443`, `fd00::/64`.
///
/// Without a port the entry allows ports 443 and 80; with one, only that port. The spelling is
/// the profile's `egress.hosts` and the proxy's `--allow`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct HostSpec {
    /// The names matched.
    pub pattern: HostPattern,
    /// The only port allowed, or `None` for 443 and 80.
    pub port: Option<u16>,
}

/// The ports a host spec without a port allows.
pub const DEFAULT_PORTS: [u16; 2] = [443, 80];

impl HostSpec {
    /// Parses a spec; the error names the spec and what is wrong with it.
    ///
    /// ```
    /// use agentc_egress::HostSpec;
    /// let spec = HostSpec::parse("*.GitHubUserContent.com.").unwrap();
    /// assert_eq!(spec.to_string(), "*.githubusercontent.com");
    /// assert!(spec.matches("raw.githubusercontent.com", 443));
    /// assert!(!spec.matches("githubusercontent.com", 443));
    /// assert!(!spec.matches("raw.githubusercontent.com", 22));
    /// assert!(HostSpec::parse("10.0.0.1:8000").unwrap().matches("10.0.0.1", 8000));
    /// assert!(HostSpec::parse("10.0.0.0/24").unwrap().matches("10.0.0.9", 443));
    /// assert!(HostSpec::parse("127.0.0.1:443").is_err());
    /// assert!(HostSpec::parse("0x0a000001").is_err());
    /// ```
    pub fn parse(spec: &str) -> Result<HostSpec, EgressError> {
        let refuse = |reason: String| EgressError::HostSpec {
            spec: spec.to_string(),
            reason,
        };
        if spec.is_empty() {
            return Err(refuse("it is empty".into()));
        }
        if let Some(rest) = spec.strip_prefix('[') {
            let (inner, after) = rest
                .split_once(']')
                .ok_or_else(|| refuse("an unclosed '['".into()))?;
            let port = match after {
                "" => None,
                _ => Some(parse_port(after.strip_prefix(':').unwrap_or(after)).map_err(refuse)?),
            };
            return addresses(inner, port, true).map_err(refuse);
        }
        if spec.matches(':').count() > 1 {
            // A bare IPv6 address or range: no port (write `[fd00::1]:443` for one).
            return addresses(spec, None, true).map_err(refuse);
        }
        let (host, port) = match spec.rsplit_once(':') {
            Some((host, port)) => (host, Some(parse_port(port).map_err(refuse)?)),
            None => (spec, None),
        };
        if host.contains('/') || host.parse::<Ipv4Addr>().is_ok() {
            return addresses(host, port, false).map_err(refuse);
        }
        let (wildcard, name) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host),
        };
        if name.contains('*') {
            return Err(refuse(
                "'*' is allowed only as the whole first label (`*.example.com`)".into(),
            ));
        }
        let name = normalize_host(name).map_err(|why| match why {
            HostRefusal::IpLiteral => refuse(
                "an IP address in a spelling other than dotted decimal (write `10.1.2.3`, \
                 `[fd00::1]` or a range `10.1.2.0/24`), or a wildcard of one"
                    .into(),
            ),
            HostRefusal::Malformed(why) => refuse(why.to_string()),
        })?;
        let pattern = if wildcard {
            HostPattern::Subdomains(name)
        } else {
            HostPattern::Exact(name)
        };
        Ok(HostSpec { pattern, port })
    }

    /// Whether a normalized host (see [`normalize_host`]) on `port` is allowed by this entry.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        self.matches_host(host) && self.allows_port(port)
    }

    /// Whether the entry names this host (a normalized name, or an address as
    /// [`normalize_target`] writes it), whatever the port.
    pub fn matches_host(&self, host: &str) -> bool {
        match &self.pattern {
            HostPattern::Exact(name) => host == name,
            HostPattern::Subdomains(name) => host
                .strip_suffix(name.as_str())
                .is_some_and(|prefix| prefix.len() > 1 && prefix.ends_with('.')),
            HostPattern::Addresses(range) => ip_target(host).is_some_and(|ip| range.contains(ip)),
        }
    }

    /// Whether the entry names addresses rather than names.
    pub fn is_addresses(&self) -> bool {
        matches!(self.pattern, HostPattern::Addresses(_))
    }

    /// Whether the entry allows this port.
    pub fn allows_port(&self, port: u16) -> bool {
        match self.port {
            Some(only) => port == only,
            None => DEFAULT_PORTS.contains(&port),
        }
    }
}

impl fmt::Display for HostSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            HostPattern::Exact(name) => f.write_str(name)?,
            HostPattern::Subdomains(name) => write!(f, "*.{name}")?,
            HostPattern::Addresses(range) => {
                let one = range.prefix == if range.network.is_ipv4() { 32 } else { 128 };
                match (range.network, one) {
                    (IpAddr::V4(v4), true) => write!(f, "{v4}")?,
                    (IpAddr::V4(_), false) => write!(f, "{range}")?,
                    (IpAddr::V6(v6), true) => write!(f, "[{v6}]")?,
                    (IpAddr::V6(_), false) => write!(f, "[{range}]")?,
                }
            }
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

/// Reads a spec's port: 1 to 65535 in decimal digits.
fn parse_port(port: &str) -> Result<u16, String> {
    let valid = !port.is_empty()
        && port.len() <= 5
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u16>().is_ok_and(|p| p != 0);
    if !valid {
        return Err(format!("the port `{port}` is not a number from 1 to 65535"));
    }
    Ok(port.parse::<u16>().unwrap_or_default())
}

/// An address entry: `text` is an address or a range (`ADDRESS/PREFIX`) of the family that
/// `v6` says; never one that holds only addresses that are never a destination.
fn addresses(text: &str, port: Option<u16>, v6: bool) -> Result<HostSpec, String> {
    let range = Cidr::parse(text).map_err(|error| match error {
        EgressError::Cidr { reason, .. } => format!("not an address or a range: {reason}"),
        other => other.to_string(),
    })?;
    if range.network.is_ipv6() != v6 {
        return Err(if v6 {
            "an IPv4 address in brackets (write it without them)".into()
        } else {
            "an IPv6 address without brackets before a port (write `[fd00::1]:443`)".into()
        });
    }
    if let IpAddr::V6(v6) = range.network {
        if v6.to_ipv4_mapped().is_some() {
            return Err("an IPv4-mapped IPv6 address (write the IPv4 address)".into());
        }
    }
    let max = if range.network.is_ipv4() { 32 } else { 128 };
    if range.prefix == max {
        if let Some(why) = never_a_destination(range.network) {
            return Err(format!("{why} is never a destination of the egress proxy"));
        }
    }
    Ok(HostSpec {
        pattern: HostPattern::Addresses(range),
        port,
    })
}

impl std::str::FromStr for HostSpec {
    type Err = EgressError;
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        HostSpec::parse(spec)
    }
}

impl TryFrom<String> for HostSpec {
    type Error = EgressError;
    fn try_from(spec: String) -> Result<Self, Self::Error> {
        HostSpec::parse(&spec)
    }
}

impl From<HostSpec> for String {
    fn from(spec: HostSpec) -> String {
        spec.to_string()
    }
}

/// Whether `text` parses as an IPv6 address once brackets and a zone id are removed; used by
/// tests and the request parser to name the refusal precisely.
pub fn parses_as_ipv6(text: &str) -> bool {
    let inner = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    let inner = inner.split('%').next().unwrap_or(inner);
    inner.parse::<Ipv6Addr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_are_lowercased_and_lose_one_trailing_dot() {
        assert_eq!(
            normalize_host("API.Example.Com.").unwrap(),
            "api.example.com"
        );
        assert_eq!(normalize_host("a-b.c0").unwrap(), "a-b.c0");
        assert_eq!(
            normalize_host("xn--bcher-kva.example").unwrap(),
            "xn--bcher-kva.example"
        );
        assert!(normalize_host("example.com..").is_err());
    }

    #[test]
    fn ip_literals_are_refused_in_every_spelling() {
        for literal in [
            "127.0.0.1",
            "127.0.0.1.",
            "127.1",
            "127.0.1",
            "2130706433",
            "0x7f000001",
            "0X7F000001",
            "0x7f.1",
            "0x7f.0x0.0x0.0x1",
            "0177.0.0.1",
            "017700000001",
            "0",
            "0x",
            "169.254.169.254",
            "10.0.0.1",
            "999.999.999.999",
            "1.2.3.4.5",
            "example.123",
            "[::1]",
            "::1",
            "[::ffff:127.0.0.1]",
            "::ffff:7f00:1",
            "[::ffff:7f00:1]",
            "[fe80::1%25eth0]",
            "fe80::1%eth0",
            "[64:ff9b::7f00:1]",
            "%31%32%37.0.0.1",
            "%30x7f000001",
            "127.0.0.%31",
        ] {
            assert_eq!(
                normalize_host(literal),
                Err(HostRefusal::IpLiteral),
                "{literal}"
            );
        }
    }

    #[test]
    fn malformed_names_are_refused_with_a_reason() {
        for (host, why) in [
            ("", "empty"),
            (".", "empty"),
            ("a..b", "empty label"),
            ("-a.com", "starting or ending"),
            ("a-.com", "starting or ending"),
            ("a_b.com", "character other than"),
            ("a b.com", "character other than"),
            ("a@b.com", "character other than"),
            ("bücher.de", "non-ASCII"),
            ("ex%61mple.com", "percent"),
            ("*.example.com", "character other than"),
        ] {
            match normalize_host(host) {
                Err(HostRefusal::Malformed(reason)) => {
                    assert!(reason.contains(why), "{host}: {reason}")
                }
                other => panic!("{host}: {other:?}"),
            }
        }
        let long_label = format!("{}.com", "a".repeat(64));
        assert!(normalize_host(&long_label).is_err());
        let long_name = vec!["a".repeat(60); 5].join(".");
        assert!(long_name.len() > 253);
        assert!(normalize_host(&long_name).is_err());
    }

    #[test]
    fn host_specs_parse_and_print_in_canonical_form() {
        for (spec, printed, port) in [
            ("api.anthropic.com", "api.anthropic.com", None),
            ("API.anthropic.com.", "api.anthropic.com", None),
            (
                "registry.npmjs.org:443",
                "registry.npmjs.org:443",
                Some(443),
            ),
            ("*.githubusercontent.com", "*.githubusercontent.com", None),
            ("*.Example.com:8443", "*.example.com:8443", Some(8443)),
        ] {
            let parsed = HostSpec::parse(spec).unwrap();
            assert_eq!(parsed.to_string(), printed);
            assert_eq!(parsed.port, port);
            assert_eq!(HostSpec::parse(printed).unwrap(), parsed);
        }
    }

    #[test]
    fn malformed_host_specs_are_refused_naming_the_spec() {
        for (spec, why) in [
            ("", "empty"),
            ("example.com:", "port"),
            ("example.com:0", "port"),
            ("example.com:65536", "port"),
            ("example.com:+443", "port"),
            ("example.com:44a", "port"),
            ("*", "'*'"),
            ("*.", "empty"),
            ("**.example.com", "'*'"),
            ("a.*.example.com", "'*'"),
            ("*example.com", "'*'"),
            ("127.0.0.1", "never a destination"),
            ("127.0.0.1:443", "never a destination"),
            ("0.0.0.0", "never a destination"),
            ("[::1]:443", "never a destination"),
            ("::1", "never a destination"),
            ("[10.0.0.1]", "brackets"),
            ("[fd00::1]x", "port"),
            ("[fd00::1", "unclosed"),
            ("10.0.0.1/24", "host bits"),
            ("[::ffff:10.0.0.1]", "IPv4-mapped"),
            ("127.1", "dotted decimal"),
            ("0x0a000001:80", "dotted decimal"),
            ("*.10.0.0.1", "dotted decimal"),
            ("exa mple.com", "character"),
        ] {
            let error = HostSpec::parse(spec).unwrap_err().to_string();
            assert!(
                error.contains(&format!("`{spec}`")) && error.contains(why),
                "{spec}: {error}"
            );
        }
    }

    #[test]
    fn a_bare_host_allows_443_and_80_and_a_port_only_itself() {
        let bare = HostSpec::parse("example.com").unwrap();
        assert!(bare.matches("example.com", 443));
        assert!(bare.matches("example.com", 80));
        assert!(!bare.matches("example.com", 22));
        assert!(!bare.matches("www.example.com", 443));
        let port = HostSpec::parse("example.com:22").unwrap();
        assert!(port.matches("example.com", 22));
        assert!(!port.matches("example.com", 443));
    }

    #[test]
    fn address_entries_match_targets_written_as_addresses_only() {
        for (spec, printed) in [
            ("10.1.2.3", "10.1.2.3"),
            ("10.1.2.3:8000", "10.1.2.3:8000"),
            ("10.1.2.0/24", "10.1.2.0/24"),
            ("10.1.2.0/24:8000", "10.1.2.0/24:8000"),
            ("FD00::1", "[fd00::1]"),
            ("[fd00::1]:443", "[fd00::1]:443"),
            ("fd00::/64", "[fd00::/64]"),
            ("[fd00::/64]:22", "[fd00::/64]:22"),
        ] {
            let parsed = HostSpec::parse(spec).unwrap();
            assert_eq!(parsed.to_string(), printed, "{spec}");
            assert_eq!(HostSpec::parse(printed).unwrap(), parsed, "{printed}");
            assert!(parsed.is_addresses());
        }
        let one = HostSpec::parse("10.1.2.3").unwrap();
        assert!(one.matches("10.1.2.3", 443) && one.matches("10.1.2.3", 80));
        assert!(!one.matches("10.1.2.3", 8000));
        assert!(!one.matches("10.1.2.4", 443));
        // Only the canonical spelling of a target is an address; the others stay refused.
        assert!(!one.matches("0x0a010203", 443));
        assert!(!one.matches("010.1.2.3", 443));
        assert!(one.matches("[::ffff:10.1.2.3]", 443));
        let port = HostSpec::parse("10.1.2.3:8000").unwrap();
        assert!(port.matches("10.1.2.3", 8000) && !port.matches("10.1.2.3", 443));
        let range = HostSpec::parse("10.1.2.0/24").unwrap();
        assert!(range.matches("10.1.2.200", 80) && !range.matches("10.1.3.1", 80));
        let v6 = HostSpec::parse("[fd00::1]:443").unwrap();
        assert!(v6.matches("[fd00::1]", 443) && !v6.matches("fd00::1", 443));
        assert_eq!(normalize_target("[FD00:0::1]").unwrap(), "[fd00::1]");
        assert_eq!(normalize_target("010.1.2.3"), Err(HostRefusal::IpLiteral));
        assert_eq!(
            normalize_target("[fe80::1%25eth0]"),
            Err(HostRefusal::IpLiteral)
        );
    }

    #[test]
    fn a_wildcard_matches_subdomains_only() {
        let spec = HostSpec::parse("*.example.com").unwrap();
        assert!(spec.matches("a.example.com", 443));
        assert!(spec.matches("a.b.example.com", 80));
        assert!(!spec.matches("example.com", 443));
        assert!(!spec.matches("badexample.com", 443));
        assert!(!spec.matches("a.example.com.evil", 443));
        assert!(!spec.matches(".example.com", 443));
    }

    #[test]
    fn host_specs_round_trip_through_serde() {
        let spec: HostSpec = serde_json::from_str("\"*.Example.com:8443\"").unwrap();
        assert_eq!(
            serde_json::to_string(&spec).unwrap(),
            "\"*.example.com:8443\""
        );
        let error = serde_json::from_str::<HostSpec>("\"1.2.3\"").unwrap_err();
        assert!(error.to_string().contains("dotted decimal"), "{error}");
    }

    proptest! {
        #[test]
        fn every_dotted_or_integer_ipv4_spelling_is_a_literal(
            a in any::<u8>(), b in any::<u8>(), c in any::<u8>(), d in any::<u8>(),
            form in 0usize..5,
        ) {
            let n = u32::from_be_bytes([a, b, c, d]);
            let text = match form {
                0 => format!("{a}.{b}.{c}.{d}"),
                1 => format!("{n}"),
                2 => format!("0x{n:x}"),
                3 => format!("0{a:o}.0{b:o}.0{c:o}.0{d:o}"),
                _ => format!("{a}.{}", u32::from_be_bytes([0, b, c, d])),
            };
            prop_assert_eq!(normalize_host(&text), Err(HostRefusal::IpLiteral));
        }

        #[test]
        fn every_ipv6_spelling_is_a_literal(segments in proptest::array::uniform8(any::<u16>()), bracket in any::<bool>()) {
            let addr = Ipv6Addr::from(segments);
            let text = if bracket { format!("[{addr}]") } else { addr.to_string() };
            prop_assert_eq!(normalize_host(&text), Err(HostRefusal::IpLiteral));
        }

        #[test]
        fn normalized_names_are_stable_and_match_their_exact_spec(name in "[a-zA-Z]([a-zA-Z0-9-]{0,9}[a-zA-Z0-9])?(\\.[a-zA-Z][a-zA-Z0-9]{0,10}){0,3}") {
            let normalized = normalize_host(&name).unwrap();
            prop_assert_eq!(normalize_host(&normalized).unwrap(), normalized.clone());
            let spec = HostSpec::parse(&name).unwrap();
            prop_assert!(spec.matches(&normalized, 443));
            let wildcard = HostSpec::parse(&format!("*.{name}")).unwrap();
            prop_assert!(!wildcard.matches(&normalized, 443));
            let sub = format!("x.{normalized}");
            prop_assert!(wildcard.matches(&sub, 80));
        }
    }
}
