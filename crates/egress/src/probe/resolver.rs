//! The DNS side of the probe: the resolvers of `/etc/resolv.conf`, one A query and the
//! header of its reply.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use crate::dns;

/// The resolvers of `/etc/resolv.conf`, at most three.
pub fn nameservers(resolv_conf: &str) -> Vec<IpAddr> {
    resolv_conf
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("nameserver"))
                .then(|| words.next()?.parse().ok())
                .flatten()
        })
        .take(3)
        .collect()
}

/// A DNS reply: its response code and how many answer records it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DnsReply {
    /// RCODE (3: NXDOMAIN).
    pub rcode: u8,
    /// ANCOUNT.
    pub answers: u16,
}

/// Reads the header of a reply to the query with `id`; `None` when it is not one.
pub fn dns_reply(id: u16, message: &[u8]) -> Option<DnsReply> {
    if message.len() < 12 || message[..2] != id.to_be_bytes() || message[2] & 0x80 == 0 {
        return None;
    }
    Some(DnsReply {
        rcode: message[3] & 0x0f,
        answers: u16::from_be_bytes([message[6], message[7]]),
    })
}

/// Sends an A query for `name` to `server:53` and reads its reply; `Err` with what happened
/// when none came.
pub(super) fn query(server: IpAddr, name: &str, timeout: Duration) -> Result<DnsReply, String> {
    let bind: SocketAddr = match server {
        IpAddr::V4(_) => "0.0.0.0:0".parse().expect("an address"),
        IpAddr::V6(_) => "[::]:0".parse().expect("an address"),
    };
    let socket = UdpSocket::bind(bind).map_err(|error| error.to_string())?;
    socket
        .set_read_timeout(Some(timeout))
        .map_err(|error| error.to_string())?;
    let id = (std::process::id() as u16) ^ 0x5a5a;
    socket
        .send_to(&dns::query(id, name, 1), (server, 53))
        .map_err(|error| format!("cannot send: {error}"))?;
    let mut buffer = [0u8; 1500];
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        match socket.recv_from(&mut buffer) {
            Ok((n, _)) => {
                if let Some(reply) = dns_reply(id, &buffer[..n]) {
                    return Ok(reply);
                }
            }
            Err(error) => return Err(format!("no answer: {error}")),
        }
    }
    Err("no answer".to_string())
}
