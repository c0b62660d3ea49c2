//! Ports: the one parser of a published container port (`8080`, `"53/udp"`) and of a single
//! TCP port field (`decant.port`, `egress.gateway_port`).
//!
//! A published port is written as a number, or as text `PORT` or `PORT/PROTOCOL`; surrounding
//! spaces are ignored and the protocol is read in any case, as docker reads `-p 53/UDP`.

use std::fmt;

use crate::error::ValueError;
use crate::spec::Protocol;

/// A container port and its protocol, as a profile publishes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortSpec {
    /// The port inside the container, 1 to 65535.
    pub number: u16,
    /// Its protocol.
    pub protocol: Protocol,
}

impl fmt::Display for PortSpec {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}/{}", self.number, self.protocol.as_str())
    }
}

const PUBLISH_HINT: &str = "write a container port from 1 to 65535 such as 8080, or \"PORT/tcp\" \
                            or \"PORT/udp\" such as \"53/udp\"";

/// Parses a published port written as text: `"8080"`, `"8080/tcp"`, `" 53/UDP "`.
pub(crate) fn published_port(text: &str) -> Result<PortSpec, ValueError> {
    let fail = |reason: String| ValueError::new(format!("is not a port: {reason}"), PUBLISH_HINT);
    let text = text.trim();
    let (number, protocol) = match text.split_once('/') {
        Some((number, protocol)) => (number, protocol),
        None => (text, "tcp"),
    };
    let protocol = match protocol.to_ascii_lowercase().as_str() {
        "tcp" => Protocol::Tcp,
        "udp" => Protocol::Udp,
        _ => return Err(fail(format!("protocol {protocol:?} is not tcp or udp"))),
    };
    if number.contains(':') {
        return Err(fail(
            "a host address or host port cannot be chosen here; write only the container port"
                .to_string(),
        ));
    }
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(fail(format!("{number:?} is not a port number")));
    }
    match number.parse::<u16>() {
        Ok(0) | Err(_) => Err(fail(out_of_range(number))),
        Ok(number) => Ok(PortSpec { number, protocol }),
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
                protocol: Protocol::Udp
            })
        );
        assert_eq!(published_port_number(65535), Ok(tcp(65535)));
        assert_eq!(tcp(53).to_string(), "53/tcp");
    }

    #[test]
    fn bad_ports_say_why() {
        let reason = |text: &str| published_port(text).unwrap_err().message;
        assert_eq!(
            reason("53/sctp"),
            "is not a port: protocol \"sctp\" is not tcp or udp"
        );
        assert!(reason("127.0.0.1:80:80").contains("host address or host port"));
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
