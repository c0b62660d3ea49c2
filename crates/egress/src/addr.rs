//! The address classifier: which resolved addresses the proxy may connect to.
//!
//! Refused unless an allowed CIDR covers them: private, loopback, link-local, carrier-grade
//! NAT, multicast, unspecified, broadcast, reserved, documentation and benchmark ranges, the
//! cloud metadata addresses (169.254.169.254, fd00:ec2::254), unique-local fc00::/7 and
//! link-local fe80::/10. IPv6 forms that carry an IPv4 address (IPv4-mapped `::ffff:0:0/96`,
//! NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged as that IPv4 address, so a mapped
//! spelling can never reach what its IPv4 form cannot. Any other IPv6 address outside global
//! unicast 2000::/3 is refused as reserved.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use crate::error::EgressError;

/// An address range: `10.20.0.0/16`, `fd00:1::/64`, or a bare address (a /32 or /128).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Cidr {
    /// The network address (host bits zero).
    pub network: IpAddr,
    /// The prefix length.
    pub prefix: u8,
}

impl Cidr {
    /// Parses `ADDRESS/PREFIX` or a bare address; refuses host bits set after the prefix.
    ///
    /// ```
    /// use agentc_egress::Cidr;
    /// let cidr = Cidr::parse("10.20.0.0/16").unwrap();
    /// assert!(cidr.contains("10.20.3.4".parse().unwrap()));
    /// assert!(Cidr::parse("10.20.0.1/16").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Cidr, EgressError> {
        let refuse = |reason: String| EgressError::Cidr {
            cidr: text.to_string(),
            reason,
        };
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let network: IpAddr = address
            .parse()
            .map_err(|_| refuse(format!("`{address}` is not an IPv4 or IPv6 address")))?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(prefix) => prefix
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max && prefix.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| refuse(format!("the prefix length must be 0 to {max}")))?,
        };
        let cidr = Cidr { network, prefix };
        if cidr.masked(network) != network {
            return Err(refuse(format!(
                "host bits are set after /{prefix}; the network is {}/{prefix}",
                cidr.masked(network)
            )));
        }
        Ok(cidr)
    }

    fn masked(&self, address: IpAddr) -> IpAddr {
        match address {
            IpAddr::V4(v4) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
            }
            IpAddr::V6(v6) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
            }
        }
    }

    /// Whether `address` is inside this range (same family only).
    pub fn contains(&self, address: IpAddr) -> bool {
        address.is_ipv4() == self.network.is_ipv4() && self.masked(address) == self.network
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

impl std::str::FromStr for Cidr {
    type Err = EgressError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Cidr::parse(text)
    }
}

impl TryFrom<String> for Cidr {
    type Error = EgressError;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        Cidr::parse(&text)
    }
}

impl From<Cidr> for String {
    fn from(cidr: Cidr) -> String {
        cidr.to_string()
    }
}

/// Why an address is refused: a range's name, used as the decision's reason detail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    /// 0.0.0.0/8, `::`.
    Unspecified,
    /// 127.0.0.0/8, `::1`.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10.
    Private,
    /// 100.64.0.0/10.
    CarrierGradeNat,
    /// 169.254.0.0/16, fe80::/10.
    LinkLocal,
    /// 169.254.169.254, fd00:ec2::254.
    Metadata,
    /// 224.0.0.0/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20.
    Documentation,
    /// 198.18.0.0/15, 2001:2::/48.
    Benchmark,
    /// Everything else that is not global unicast: 192.0.0/24, 192.88.99/24, 240/4, IPv4-
    /// compatible `::/96`, 64:ff9b:1::/48, 100::/64, 2001::/23, 5f00::/16, outside 2000::/3.
    Reserved,
}

impl Range {
    /// The range's code in decision lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Range::Unspecified => "unspecified",
            Range::Loopback => "loopback",
            Range::Private => "private",
            Range::CarrierGradeNat => "cgnat",
            Range::LinkLocal => "link-local",
            Range::Metadata => "metadata",
            Range::Multicast => "multicast",
            Range::Broadcast => "broadcast",
            Range::Documentation => "documentation",
            Range::Benchmark => "benchmark",
            Range::Reserved => "reserved",
        }
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn v4_in(address: Ipv4Addr, network: [u8; 4], prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    u32::from(address) & mask == u32::from(Ipv4Addr::from(network))
}

fn v6_in(address: Ipv6Addr, network: u128, prefix: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
    u128::from(address) & mask == network
}

/// The refused range an IPv4 address is in, if any.
pub fn v4_range(address: Ipv4Addr) -> Option<Range> {
    const TABLE: &[([u8; 4], u32, Range)] = &[
        ([255, 255, 255, 255], 32, Range::Broadcast),
        ([169, 254, 169, 254], 32, Range::Metadata),
        ([0, 0, 0, 0], 8, Range::Unspecified),
        ([10, 0, 0, 0], 8, Range::Private),
        ([100, 64, 0, 0], 10, Range::CarrierGradeNat),
        ([127, 0, 0, 0], 8, Range::Loopback),
        ([169, 254, 0, 0], 16, Range::LinkLocal),
        ([172, 16, 0, 0], 12, Range::Private),
        ([192, 0, 0, 0], 24, Range::Reserved),
        ([192, 0, 2, 0], 24, Range::Documentation),
        ([192, 88, 99, 0], 24, Range::Reserved),
        ([192, 168, 0, 0], 16, Range::Private),
        ([198, 18, 0, 0], 15, Range::Benchmark),
        ([198, 51, 100, 0], 24, Range::Documentation),
        ([203, 0, 113, 0], 24, Range::Documentation),
        ([224, 0, 0, 0], 4, Range::Multicast),
        ([240, 0, 0, 0], 4, Range::Reserved),
    ];
    TABLE
        .iter()
        .find(|(network, prefix, _)| v4_in(address, *network, *prefix))
        .map(|(_, _, range)| *range)
}

/// The IPv4 address an IPv6 address carries: IPv4-mapped (`::ffff:a.b.c.d`), NAT64
/// (`64:ff9b::a.b.c.d`) or 6to4 (`2002:AABB:CCDD::/48`).
pub fn embedded_v4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(address);
    if v6_in(address, 0xffff_0000_0000, 96) || v6_in(address, 0x0064_ff9b << 96, 96) {
        return Some(Ipv4Addr::from(bits as u32));
    }
    if v6_in(address, 0x2002 << 112, 16) {
        return Some(Ipv4Addr::from((bits >> 80) as u32));
    }
    None
}

/// The refused range an IPv6 address is in, if any (not unwrapping embedded IPv4).
fn v6_range(address: Ipv6Addr) -> Option<Range> {
    let bits = u128::from(address);
    const TABLE: &[(u128, u32, Range)] = &[
        (0, 128, Range::Unspecified),
        (1, 128, Range::Loopback),
        (
            0xfd00_0ec2_0000_0000_0000_0000_0000_0254,
            128,
            Range::Metadata,
        ),
        (0, 96, Range::Reserved),
        (0x0064_ff9b_0001 << 80, 48, Range::Reserved),
        (0x0100 << 112, 64, Range::Reserved),
        (0x2001_0002 << 96, 48, Range::Benchmark),
        (0x2001_0db8 << 96, 32, Range::Documentation),
        (0x2001 << 112, 23, Range::Reserved),
        (0x3fff << 112, 20, Range::Documentation),
        (0x5f00 << 112, 16, Range::Reserved),
        (0xfc00 << 112, 7, Range::Private),
        (0xfe80 << 112, 10, Range::LinkLocal),
        (0xfec0 << 112, 10, Range::Private),
        (0xff00 << 112, 8, Range::Multicast),
    ];
    if let Some((_, _, range)) = TABLE
        .iter()
        .find(|(network, prefix, _)| v6_in(address, *network, *prefix))
    {
        return Some(*range);
    }
    // Only global unicast 2000::/3 is reachable on the internet.
    (bits >> 125 != 1).then_some(Range::Reserved)
}

/// Decides whether the proxy may connect to `address`: `Ok` when it is global, or when an
/// allowed CIDR covers it (or the IPv4 address it carries); otherwise the refused range.
///
/// ```
/// use agentc_egress::addr::{check, Range};
/// use agentc_egress::Cidr;
/// assert_eq!(check("169.254.169.254".parse().unwrap(), &[]), Err(Range::Metadata));
/// assert_eq!(check("::ffff:10.1.2.3".parse().unwrap(), &[]), Err(Range::Private));
/// let allow = [Cidr::parse("10.0.0.0/8").unwrap()];
/// assert_eq!(check("::ffff:10.1.2.3".parse().unwrap(), &allow), Ok(()));
/// assert_eq!(check("93.184.215.14".parse().unwrap(), &[]), Ok(()));
/// ```
pub fn check(address: IpAddr, allow: &[Cidr]) -> Result<(), Range> {
    if allow.iter().any(|cidr| cidr.contains(address)) {
        return Ok(());
    }
    match address {
        IpAddr::V4(v4) => v4_range(v4).map_or(Ok(()), Err),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => check(IpAddr::V4(v4), allow),
            None => v6_range(v6).map_or(Ok(()), Err),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn every_refused_range_is_named() {
        for (address, range) in [
            ("0.0.0.0", Range::Unspecified),
            ("0.1.2.3", Range::Unspecified),
            ("10.0.0.1", Range::Private),
            ("172.16.0.1", Range::Private),
            ("172.31.255.255", Range::Private),
            ("192.168.1.1", Range::Private),
            ("100.64.0.1", Range::CarrierGradeNat),
            ("100.127.255.255", Range::CarrierGradeNat),
            ("127.0.0.1", Range::Loopback),
            ("127.255.0.9", Range::Loopback),
            ("169.254.169.254", Range::Metadata),
            ("169.254.1.1", Range::LinkLocal),
            ("192.0.0.8", Range::Reserved),
            ("192.0.2.1", Range::Documentation),
            ("198.51.100.7", Range::Documentation),
            ("203.0.113.9", Range::Documentation),
            ("198.18.0.1", Range::Benchmark),
            ("198.19.255.1", Range::Benchmark),
            ("224.0.0.1", Range::Multicast),
            ("239.255.255.250", Range::Multicast),
            ("240.0.0.1", Range::Reserved),
            ("255.255.255.255", Range::Broadcast),
            ("::", Range::Unspecified),
            ("::1", Range::Loopback),
            ("::127.0.0.1", Range::Reserved),
            ("fd00:ec2::254", Range::Metadata),
            ("fc00::1", Range::Private),
            ("fdff::1", Range::Private),
            ("fe80::1", Range::LinkLocal),
            ("febf::1", Range::LinkLocal),
            ("fec0::1", Range::Private),
            ("ff02::1", Range::Multicast),
            ("2001:db8::1", Range::Documentation),
            ("2001:2::1", Range::Benchmark),
            ("2001::1", Range::Reserved),
            ("64:ff9b:1::1", Range::Reserved),
            ("100::1", Range::Reserved),
            ("3fff::1", Range::Documentation),
            ("4000::1", Range::Reserved),
            ("::ffff:127.0.0.1", Range::Loopback),
            ("::ffff:169.254.169.254", Range::Metadata),
            ("64:ff9b::a00:1", Range::Private),
            ("64:ff9b::169.254.169.254", Range::Metadata),
            ("2002:7f00:1::", Range::Loopback),
            ("2002:a9fe:a9fe::1", Range::Metadata),
            ("2002:c0a8:101::", Range::Private),
        ] {
            assert_eq!(check(ip(address), &[]), Err(range), "{address}");
        }
    }

    #[test]
    fn global_addresses_pass() {
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.215.14",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "2a00:1450::1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(check(ip(address), &[]), Ok(()), "{address}");
        }
    }

    #[test]
    fn an_allowed_cidr_opens_its_range_and_its_mapped_forms() {
        let allow = [
            Cidr::parse("10.251.3.0/24").unwrap(),
            Cidr::parse("fd00:1::/64").unwrap(),
        ];
        assert_eq!(check(ip("10.251.3.7"), &allow), Ok(()));
        assert_eq!(check(ip("::ffff:10.251.3.7"), &allow), Ok(()));
        assert_eq!(check(ip("64:ff9b::10.251.3.7"), &allow), Ok(()));
        assert_eq!(check(ip("10.251.4.7"), &allow), Err(Range::Private));
        assert_eq!(check(ip("fd00:1::5"), &allow), Ok(()));
        assert_eq!(check(ip("fd00:2::5"), &allow), Err(Range::Private));
    }

    #[test]
    fn cidrs_parse_strictly() {
        assert_eq!(Cidr::parse("10.0.0.0/8").unwrap().to_string(), "10.0.0.0/8");
        assert_eq!(Cidr::parse("10.1.2.3").unwrap().to_string(), "10.1.2.3/32");
        assert_eq!(Cidr::parse("::/0").unwrap().to_string(), "::/0");
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("1.2.3.4")));
        assert!(!Cidr::parse("0.0.0.0/0").unwrap().contains(ip("::1")));
        for (text, why) in [
            ("10.0.0.1/8", "host bits"),
            ("10.0.0.0/33", "prefix"),
            ("10.0.0.0/+8", "prefix"),
            ("10.0.0.0/", "prefix"),
            ("example.com/8", "not an IPv4"),
            ("fd00::/129", "prefix"),
        ] {
            let error = Cidr::parse(text).unwrap_err().to_string();
            assert!(
                error.contains(text) && error.contains(why),
                "{text}: {error}"
            );
        }
    }

    /// (network, prefix) of every refused IPv4 range, for the property below.
    const REFUSED_V4: &[([u8; 4], u32)] = &[
        ([0, 0, 0, 0], 8),
        ([10, 0, 0, 0], 8),
        ([100, 64, 0, 0], 10),
        ([127, 0, 0, 0], 8),
        ([169, 254, 0, 0], 16),
        ([172, 16, 0, 0], 12),
        ([192, 0, 0, 0], 24),
        ([192, 0, 2, 0], 24),
        ([192, 168, 0, 0], 16),
        ([198, 18, 0, 0], 15),
        ([198, 51, 100, 0], 24),
        ([203, 0, 113, 0], 24),
        ([224, 0, 0, 0], 4),
        ([240, 0, 0, 0], 4),
    ];

    fn in_range(range: usize, host: u32) -> Ipv4Addr {
        let (network, prefix) = REFUSED_V4[range];
        let hostmask = u32::MAX.checked_shr(prefix).unwrap_or(0);
        Ipv4Addr::from(u32::from(Ipv4Addr::from(network)) | (host & hostmask))
    }

    proptest! {
        #[test]
        fn any_address_in_a_refused_range_is_refused_unless_allowed(
            range in 0..REFUSED_V4.len(), host in any::<u32>(), allow_prefix in 0u8..=32,
        ) {
            let v4 = in_range(range, host);
            prop_assert!(check(IpAddr::V4(v4), &[]).is_err(), "{}", v4);
            let allow = Cidr { network: IpAddr::V4(v4), prefix: 32 };
            let allow = Cidr { network: allow.masked(IpAddr::V4(v4)), prefix: 32 };
            prop_assert_eq!(check(IpAddr::V4(v4), &[allow]), Ok(()));
            let wider = Cidr { network: IpAddr::V4(v4), prefix: allow_prefix };
            let wider = Cidr { network: wider.masked(IpAddr::V4(v4)), prefix: allow_prefix };
            prop_assert_eq!(check(IpAddr::V4(v4), &[wider]), Ok(()));
            prop_assert_eq!(check(IpAddr::V6(v4.to_ipv6_mapped()), &[wider]), Ok(()));
        }

        #[test]
        fn mapped_nat64_and_6to4_forms_agree_with_their_ipv4(bits in any::<u32>(), tail in any::<u64>(), allowed in any::<bool>()) {
            let v4 = Ipv4Addr::from(bits);
            let allow: Vec<Cidr> = if allowed {
                vec![Cidr { network: IpAddr::V4(Ipv4Addr::from(bits & 0xffff_0000)), prefix: 16 }]
            } else {
                vec![]
            };
            let expected = check(IpAddr::V4(v4), &allow);
            let mapped = v4.to_ipv6_mapped();
            let nat64 = Ipv6Addr::from((0x0064_ff9b_u128 << 96) | u128::from(bits));
            let sixtofour = Ipv6Addr::from((0x2002_u128 << 112) | (u128::from(bits) << 80) | u128::from(tail));
            prop_assert_eq!(check(IpAddr::V6(mapped), &allow), expected);
            prop_assert_eq!(check(IpAddr::V6(nat64), &allow), expected);
            prop_assert_eq!(check(IpAddr::V6(sixtofour), &allow), expected);
        }

        #[test]
        fn any_ula_or_link_local_v6_is_refused(bits in any::<u128>()) {
            let ula = Ipv6Addr::from((0xfc00_u128 << 112) | (bits >> 7));
            let link = Ipv6Addr::from((0xfe80_u128 << 112) | (bits >> 10));
            prop_assert!(check(IpAddr::V6(ula), &[]).is_err());
            prop_assert!(check(IpAddr::V6(link), &[]).is_err());
        }
    }
}
