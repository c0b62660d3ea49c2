//! The DNS stub: every query, over UDP or TCP, gets NXDOMAIN ([`crate::dns::answer`]) after its
//! decision line. What it drops over TCP is a `dns-dropped` line: a connection over
//! [`MAX_DNS_TCP`] at once, a connection that sends more than [`MAX_DNS_TCP_QUERIES`] queries
//! (one line for the connection), a message longer than a DNS message. Like every line, these
//! go through the audit writer's rate limit ([`crate::audit`]).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::Semaphore;
use tokio::time::timeout;

use super::Shared;
use crate::dns;
use crate::error::EgressError;
use crate::log::{Kind, Record};
use crate::policy::Reason;

/// Connections the DNS stub serves over TCP at once.
const MAX_DNS_TCP: usize = 64;

/// Queries one DNS TCP connection may send.
const MAX_DNS_TCP_QUERIES: usize = 16;

/// How many ports a stub asked to listen on port 0 tries before it gives up: the system picks
/// a free UDP port, which TCP may have taken.
const PORT_CHOICES: usize = 16;

/// The stub's sockets on `address`: UDP and TCP on one port. On port 0 (a test's), the port
/// the system gives UDP, or, when TCP has that port in use, another.
pub(super) async fn bind(address: SocketAddr) -> Result<(UdpSocket, TcpListener), EgressError> {
    let mut tries = 0;
    loop {
        let udp = UdpSocket::bind(address)
            .await
            .map_err(|source| EgressError::Bind {
                address,
                what: "dns/udp",
                source,
            })?;
        let tcp_address = udp.local_addr().unwrap_or(address);
        match TcpListener::bind(tcp_address).await {
            Ok(tcp) => return Ok((udp, tcp)),
            Err(source)
                if address.port() == 0
                    && source.kind() == io::ErrorKind::AddrInUse
                    && tries < PORT_CHOICES =>
            {
                tries += 1;
            }
            Err(source) => {
                return Err(EgressError::Bind {
                    address: tcp_address,
                    what: "dns/tcp",
                    source,
                })
            }
        }
    }
}

/// The stub's answer to one message, after its decision line.
fn dns_reply(message: &[u8], client: SocketAddr, shared: &Shared) -> Option<Vec<u8>> {
    let mut line = Record::new(Kind::Dns, client, Reason::DnsQuery);
    match dns::parse_query(message) {
        Ok(question) => {
            line.qname = Some(question.name);
            line.qtype = Some(question.qtype);
        }
        Err(error) => line.detail = Some(format!("{error:?}")),
    }
    shared.emit(line);
    dns::answer(message)
}

pub(super) async fn serve_dns_udp(socket: UdpSocket, shared: Arc<Shared>) {
    let mut buffer = vec![0u8; dns::MAX_MESSAGE];
    loop {
        let Ok((n, client)) = socket.recv_from(&mut buffer).await else {
            continue;
        };
        if let Some(reply) = dns_reply(&buffer[..n], client, &shared) {
            let _ = socket.send_to(&reply, client).await;
        }
    }
}

pub(super) async fn serve_dns_tcp(listener: TcpListener, shared: Arc<Shared>) {
    let slots = Arc::new(Semaphore::new(MAX_DNS_TCP));
    loop {
        let Ok((stream, client)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            // Dropped (closes the connection), and said.
            dropped(
                client,
                &shared,
                format!("the DNS stub is serving {MAX_DNS_TCP} TCP connections, its most"),
            );
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let session = dns_tcp_session(stream, client, &shared);
            let _ = timeout(Duration::from_secs(30), session).await;
        });
    }
}

async fn dns_tcp_session(
    mut stream: TcpStream,
    client: SocketAddr,
    shared: &Shared,
) -> io::Result<()> {
    for _ in 0..MAX_DNS_TCP_QUERIES {
        let length = match timeout(Duration::from_secs(10), stream.read_u16()).await {
            Ok(Ok(length)) => length as usize,
            _ => return Ok(()),
        };
        if length > dns::MAX_MESSAGE {
            dropped(
                client,
                shared,
                format!("a message of {length} bytes (at most {})", dns::MAX_MESSAGE),
            );
            return Ok(());
        }
        let mut message = vec![0u8; length];
        timeout(Duration::from_secs(10), stream.read_exact(&mut message))
            .await
            .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
        let Some(reply) = dns_reply(&message, client, shared) else {
            return Ok(());
        };
        let mut framed = (reply.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&reply);
        stream.write_all(&framed).await?;
    }
    // One more query on this connection is dropped unanswered: said once.
    if let Ok(Ok(_)) = timeout(Duration::from_millis(500), stream.read_u8()).await {
        dropped(
            client,
            shared,
            format!("queries past the {MAX_DNS_TCP_QUERIES}th on one TCP connection"),
        );
    }
    Ok(())
}

/// The line of a connection or query the stub drops.
fn dropped(client: SocketAddr, shared: &Shared, detail: String) {
    let mut line = Record::new(Kind::Dns, client, Reason::DnsDropped);
    line.detail = Some(detail);
    shared.emit(line);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(future)
    }

    #[test]
    fn the_stub_listens_on_one_port_for_udp_and_tcp() {
        block_on(async {
            let any: SocketAddr = "127.0.0.1:0".parse().expect("an address");
            for _ in 0..32 {
                let (udp, tcp) = bind(any).await.expect("a free port");
                let port = udp.local_addr().expect("bound").port();
                assert_ne!(port, 0);
                assert_eq!(tcp.local_addr().expect("bound").port(), port);
            }
        });
    }

    #[test]
    fn a_named_port_tcp_holds_is_refused_not_moved() {
        block_on(async {
            // A port whose TCP side is taken (and UDP free): the stub does not move elsewhere.
            let (held, address) = loop {
                let held = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
                let address = held.local_addr().expect("bound");
                if std::net::UdpSocket::bind(address).is_ok() {
                    break (held, address);
                }
            };
            let error = bind(address).await.expect_err("TCP is taken");
            assert!(
                matches!(error, EgressError::Bind { what: "dns/tcp", address: at, .. } if at == address),
                "{error:?}"
            );
            drop(held);
        });
    }
}
