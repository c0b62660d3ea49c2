//! Ports: the one parser of a published container port (`8080`, `"53/udp"`, `"18080:8080"`,
//! `"0.0.0.0:18080:8080"`) and of a single TCP port field (`decant.port`,
//! `egress.gateway_port`).
//!
//! A published port is written as a number, or as text `[[HOST_IP:]HOST_PORT:]PORT[/PROTOCOL]`;
//! surrounding spaces are ignored and the protocol is read in any case, as docker reads
//! `-p 53/UDP`. Without a host address the port is published on 127.0.0.1; without a host port
//! the daemon picks a free one (`"127.0.0.1::8080"` writes the address alone). An IPv6 host
//! address is written in brackets (`"[::1]:18080:8080"`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::ValueError;
use crate::spec::Protocol;

/// A container port and its protocol, as a profile publishes it, with the host address and
/// port it chooses, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortSpec {
    /// The port inside the container, 1 to 65535.
    pub number: u16,
    /// Its protocol.
    pub protocol: Protocol,
    /// The host address it is published on, when written (`None`: 127.0.0.1).
    pub host_ip: Option<IpAddr>,
    /// The host port it is published on, when written (`None`: a free port the daemon picks).
    pub host_port: Option<u16>,
}

impl PortSpec {
    /// The host address the port is published on: the one written, else 127.0.0.1.
    pub fn host_address(&self) -> IpAddr {
        self.host_ip.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
    }

    /// Whether the profile chose where on the host the port is published.
    pub fn binds_host(&self) -> bool {
        self.host_ip.is_some() || self.host_port.is_some()
    }
}

impl fmt::Display for PortSpec {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host_port = self.host_port.map(|port| port.to_string());
        match (self.host_ip, host_port) {
            (Some(IpAddr::V6(ip)), port) => {
                write!(formatter, "[{ip}]:{}:", port.unwrap_or_default())?
            }
            (Some(ip), port) => write!(formatter, "{ip}:{}:", port.unwrap_or_default())?,
            (None, Some(port)) => write!(formatter, "{port}:")?,
            (None, None) => {}
        }
        write!(formatter, "{}/{}", self.number, self.protocol.as_str())
    }
}

const PUBLISH_HINT: &str = "write a container port such as 8080 (published on 127.0.0.1, on a \
                            port the daemon picks), \"18080:8080\" for host port 18080, \
                            \"0.0.0.0:18080:8080\" for another host address, and \"/udp\" after \
                            the port for UDP (\"53/udp\")";

/// Parses a published port written as text: `"8080"`, `"8080/tcp"`, `" 53/UDP "`,
/// `"18080:8080"`, `"0.0.0.0:18080:8080/udp"`, `"[::1]::8080"`.
pub(crate) fn published_port(text: &str) -> Result<PortSpec, ValueError> {
    let fail = |reason: String| ValueError::new(format!("is not a port: {reason}"), PUBLISH_HINT);
    let text = text.trim();
    let (ports, protocol) = match text.rsplit_once('/') {
        Some((ports, protocol)) => (ports, protocol),
        None => (text, "tcp"),
    };
    let protocol = match protocol.to_ascii_lowercase().as_str() {
        "tcp" => Protocol::Tcp,
        "udp" => Protocol::Udp,
        _ => return Err(fail(format!("protocol {protocol:?} is not tcp or udp"))),
    };
    let (host_ip, rest) = match ports.strip_prefix('[') {
        Some(bracketed) => {
            let (address, rest) = bracketed.split_once("]:").ok_or_else(|| {
                fail("an IPv6 host address is written [ADDRESS]:HOST_PORT:PORT".to_string())
            })?;
            let address = address
                .parse::<Ipv6Addr>()
                .map_err(|_| fail(format!("{address:?} is not an IPv6 address")))?;
            (Some(IpAddr::V6(address)), rest)
        }
        None => match ports.matches(':').count() {
            1 if ports
                .split_once(':')
                .is_some_and(|(address, _)| address.parse::<Ipv4Addr>().is_ok()) =>
            {
                return Err(fail(
                    "a host address needs HOST_PORT:PORT after it (or ADDRESS::PORT for a port \
                     the daemon picks)"
                        .to_string(),
                ))
            }
            0 | 1 => (None, ports),
            2 => {
                let (address, rest) = ports.split_once(':').unwrap_or_default();
                let address = address.parse::<Ipv4Addr>().map_err(|_| {
                    fail(format!(
                        "{address:?} is not an IPv4 address (write an IPv6 one in brackets)"
                    ))
                })?;
                (Some(IpAddr::V4(address)), rest)
            }
            _ => {
                return Err(fail(
                    "too many `:`; write [HOST_IP:]HOST_PORT:PORT (an IPv6 address in brackets)"
                        .to_string(),
                ))
            }
        },
    };
    let (host_port, number) =
        match rest.split_once(':') {
            Some((host_port, number)) => (Some(host_port), number),
            None if host_ip.is_some() => return Err(fail(
                "a host address needs HOST_PORT:PORT after it (or ADDRESS::PORT for a port the \
                 daemon picks)"
                    .to_string(),
            )),
            None => (None, rest),
        };
    let number = port_number(number).map_err(fail)?;
    let host_port = match host_port {
        Some("") if host_ip.is_some() => None,
        Some(host_port) => {
            Some(port_number(host_port).map_err(|reason| fail(format!("host port: {reason}")))?)
        }
        None => None,
    };
    Ok(PortSpec {
        number,
        protocol,
        host_ip,
        host_port,
    })
}

/// One port number written as text: 1 to 65535, digits only.
fn port_number(number: &str) -> Result<u16, String> {
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{number:?} is not a port number"));
    }
    match number.parse::<u16>() {
        Ok(0) | Err(_) => Err(out_of_range(number)),
        Ok(number) => Ok(number),
    }
}

/// Parses a published port written as a TOML integer (always TCP).
pub(crate) fn published_port_number(number: i64) -> Result<PortSpec, ValueError> {
    match u16::try_from(number) {
        Ok(0) | Err(_) => Err(ValueError::new(
            format!("is not a port: {}", out_of_range(&number.to_string())),
            PUBLISH_HINT,
        )),
        Ok(number) => Ok(PortSpec {
            number,
            protocol: Protocol::Tcp,
            host_ip: None,
            host_port: None,
        }),
    }
}

fn out_of_range(number: &str) -> String {
    format!("port {number} is out of range; ports are 1 to 65535")
}

/// A TCP port field such as `decant.port`: 1 to 65535.
pub(crate) fn tcp_port(number: i128) -> Result<u16, ValueError> {
    u16::try_from(number)
        .ok()
        .filter(|port| *port > 0)
        .ok_or_else(|| {
            ValueError::new(
                format!("must be between 1 and 65535, not {number}"),
                "use a tcp port number from 1 to 65535",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(number: u16) -> PortSpec {
        PortSpec {
            number,
            protocol: Protocol::Tcp,
            host_ip: None,
            host_port: None,
        }
    }

    #[test]
    fn published_ports_parse_leniently_and_exactly() {
        assert_eq!(published_port("8080"), Ok(tcp(8080)));
        assert_eq!(published_port(" 8080 "), Ok(tcp(8080)));
        assert_eq!(published_port("8080/TCP"), Ok(tcp(8080)));
        assert_eq!(
            published_port("53/udp"),
            Ok(PortSpec {
                number: 53,
                protocol: Protocol::Udp,
                host_ip: None,
                host_port: None,
            })
        );
        assert_eq!(published_port_number(65535), Ok(tcp(65535)));
        assert_eq!(tcp(53).to_string(), "53/tcp");
        let bound = |ip: Option<&str>, host_port: Option<u16>, number: u16, protocol| PortSpec {
            number,
            protocol,
            host_ip: ip.map(|ip| ip.parse().unwrap()),
            host_port,
        };
        for (text, port, shown) in [
            (
                "18080:8080",
                bound(None, Some(18080), 8080, Protocol::Tcp),
                "18080:8080/tcp",
            ),
            (
                " 0.0.0.0:18080:8080/UDP ",
                bound(Some("0.0.0.0"), Some(18080), 8080, Protocol::Udp),
                "0.0.0.0:18080:8080/udp",
            ),
            (
                "127.0.0.1::8080",
                bound(Some("127.0.0.1"), None, 8080, Protocol::Tcp),
                "127.0.0.1::8080/tcp",
            ),
            (
                "[::1]:18080:8080",
                bound(Some("::1"), Some(18080), 8080, Protocol::Tcp),
                "[::1]:18080:8080/tcp",
            ),
            (
                "[::]::53/udp",
                bound(Some("::"), None, 53, Protocol::Udp),
                "[::]::53/udp",
            ),
        ] {
            assert_eq!(published_port(text), Ok(port), "{text}");
            assert_eq!(port.to_string(), shown);
            // What is shown reads back as the same port.
            assert_eq!(published_port(shown), Ok(port), "{shown}");
        }
        assert_eq!(
            bound(None, Some(18080), 8080, Protocol::Tcp).host_address(),
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        );
    }

    #[test]
    fn bad_ports_say_why() {
        let reason = |text: &str| published_port(text).unwrap_err().message;
        assert_eq!(
            reason("53/sctp"),
            "is not a port: protocol \"sctp\" is not tcp or udp"
        );
        assert_eq!(
            reason("localhost:80:80"),
            "is not a port: \"localhost\" is not an IPv4 address (write an IPv6 one in brackets)"
        );
        assert_eq!(
            reason("127.0.0.1:80"),
            "is not a port: a host address needs HOST_PORT:PORT after it (or ADDRESS::PORT for a \
             port the daemon picks)"
        );
        assert_eq!(
            reason("0:8080"),
            "is not a port: host port: port 0 is out of range; ports are 1 to 65535"
        );
        assert_eq!(
            reason(":8080"),
            "is not a port: host port: \"\" is not a port number"
        );
        assert_eq!(
            reason("::1:80:80"),
            "is not a port: too many `:`; write [HOST_IP:]HOST_PORT:PORT (an IPv6 address in \
             brackets)"
        );
        assert_eq!(
            reason("[::1:80:80"),
            "is not a port: an IPv6 host address is written [ADDRESS]:HOST_PORT:PORT"
        );
        assert_eq!(
            reason("[x]:80:80"),
            "is not a port: \"x\" is not an IPv6 address"
        );
        assert_eq!(
            reason("http"),
            "is not a port: \"http\" is not a port number"
        );
        assert_eq!(reason("+80"), "is not a port: \"+80\" is not a port number");
        assert_eq!(
            reason("65536"),
            "is not a port: port 65536 is out of range; ports are 1 to 65535"
        );
        assert_eq!(
            published_port_number(0).unwrap_err().message,
            "is not a port: port 0 is out of range; ports are 1 to 65535"
        );
        assert_eq!(
            tcp_port(65536).unwrap_err().message,
            "must be between 1 and 65535, not 65536"
        );
        assert_eq!(tcp_port(22), Ok(22));
    }
}
