//! What `egress.direct` reads of the sandbox's network: its default route, whether that route's
//! gateway answers ARP, its global IPv6 addresses, and the check judged from them and a direct
//! connection's result. Pure: the caller reads `/proc/net/route`, `/proc/net/arp` and
//! `/proc/net/if_inet6`.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};

use super::{CheckLine, CHECKS};

/// A default route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Its interface.
    pub iface: String,
    /// Its gateway.
    pub gateway: Ipv4Addr,
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} via {}", self.iface, self.gateway)
    }
}

/// The default route of `/proc/net/route`, if there is one.
pub fn default_route(route: &str) -> Option<Route> {
    route.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [iface, "00000000", gateway, _flags, _, _, _, "00000000", ..] => {
                // The kernel prints the address as the u32 it holds in network byte order, in
                // the machine's byte order (little-endian on x86 and arm64).
                let gateway = u32::from_str_radix(gateway, 16).ok()?;
                Some(Route {
                    iface: iface.to_string(),
                    gateway: Ipv4Addr::from(gateway.to_le_bytes()),
                })
            }
            _ => None,
        }
    })
}

/// Whether `/proc/net/arp` holds a complete entry (flag `0x2`) for `gateway`: something on
/// the network answers for it.
pub fn gateway_answers(arp: &str, gateway: Ipv4Addr) -> bool {
    arp.lines().skip(1).any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [address, _, flags, ..] => {
                address.parse::<Ipv4Addr>() == Ok(gateway)
                    && u32::from_str_radix(flags.trim_start_matches("0x"), 16)
                        .is_ok_and(|flags| flags & 0x2 != 0)
            }
            _ => false,
        }
    })
}

/// The global-scope addresses of `/proc/net/if_inet6` (scope `00`), as `IFACE ADDRESS`.
pub fn global_ipv6(if_inet6: &str) -> Vec<String> {
    if_inet6
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                [address, _, _, "00", _, iface] => Some(format!("{iface} {address}")),
                _ => None,
            }
        })
        .collect()
}

/// `egress.direct` from what was observed: the connection to the proxy's outside address
/// (`None` when no address was given), the default route with whether its gateway answers,
/// and the global IPv6 addresses.
pub fn direct_check(
    connected: Option<(SocketAddr, Result<(), String>)>,
    route: Option<(&Route, bool)>,
    ipv6: &[String],
) -> CheckLine {
    let mut seen = Vec::new();
    let mut pass = true;
    match connected {
        None => seen.push("no outside address to try".to_string()),
        Some((address, Ok(()))) => {
            pass = false;
            seen.push(format!("connected to {address}"));
        }
        Some((address, Err(error))) => seen.push(format!("connect {address}: {error}")),
    }
    match route {
        None => seen.push("no default route".to_string()),
        Some((route, false)) => seen.push(format!(
            "default route {route}, a gateway that does not answer"
        )),
        Some((route, true)) => {
            pass = false;
            seen.push(format!("default route {route}, a gateway that answers"));
        }
    }
    if ipv6.is_empty() {
        seen.push("no global IPv6 address".to_string());
    } else {
        pass = false;
        seen.push(format!("global IPv6 {}", ipv6.join(", ")));
    }
    CheckLine::new(
        CHECKS[4],
        pass,
        "a direct connection fails: no default route or a dead one, no global IPv6 address",
        seen.join("; "),
        "the isolated network routes past the proxy: it must be --internal, with the inhibit_ipv4 option and without IPv6 (`docker network inspect` it)",
    )
}
