//! Connections through the upstream proxy ([`crate::upstream`]): the upstream's own
//! connection (its address connected to whatever range it is in, since the profile names it),
//! and a tunnel through it (`CONNECT host:port`, answered `2xx` before any byte of the client
//! is sent). Plain-HTTP requests are sent to it in absolute form by `super::forward`.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::Shared;
use crate::host::ip_target;
use crate::policy::{Deny, Reason};
use crate::upstream::Upstream;

/// Connects to the upstream proxy itself: its address, or each address its name resolves to,
/// until one answers.
pub(super) async fn connect(
    shared: &Shared,
    upstream: &Upstream,
) -> Result<(SocketAddr, TcpStream), Deny> {
    let limit = shared.limits.connect_timeout();
    let deadline = Instant::now() + limit;
    let addresses = match ip_target(&upstream.host) {
        Some(ip) => vec![SocketAddr::new(ip, upstream.port)],
        None => tokio::time::timeout_at(
            deadline,
            shared.resolver.lookup(&upstream.host, upstream.port),
        )
        .await
        .map_err(|_| {
            Deny::new(
                Reason::ResolveFailed,
                format!("the upstream proxy {upstream} did not resolve in time"),
            )
        })?
        .map_err(|error| {
            Deny::new(
                Reason::ResolveFailed,
                format!("the upstream proxy {upstream}: {error}"),
            )
        })?,
    };
    let mut last = format!("the upstream proxy {upstream}: no address");
    for address in addresses {
        match tokio::time::timeout_at(deadline, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok((address, stream));
            }
            Ok(Err(error)) => last = format!("the upstream proxy {upstream} at {address}: {error}"),
            Err(_) => {
                last = format!(
                    "the upstream proxy {upstream} at {address}: no answer in {} s",
                    limit.as_secs()
                );
                break;
            }
        }
    }
    Err(Deny::new(Reason::ConnectFailed, last))
}

/// Opens a tunnel to `host:port` (decided) through the upstream: `CONNECT host:port`, then
/// its response head, which must be `2xx`; the upstream's address and the open tunnel.
pub(super) async fn tunnel(
    shared: &Shared,
    upstream: &Upstream,
    host: &str,
    port: u16,
) -> Result<(SocketAddr, TcpStream), Deny> {
    let (address, mut stream) = connect(shared, upstream).await?;
    let authority = format!("{host}:{port}");
    let request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n");
    let limit = shared.limits.connect_timeout();
    let answered = tokio::time::timeout(limit, async {
        stream.write_all(request.as_bytes()).await?;
        read_head(&mut stream, shared.limits.max_header_bytes).await
    })
    .await;
    let head = match answered {
        Ok(Ok(head)) => head,
        Ok(Err(error)) => {
            return Err(Deny::new(
                Reason::ConnectFailed,
                format!("the upstream proxy {upstream}: {error}"),
            ))
        }
        Err(_) => {
            return Err(Deny::new(
                Reason::ConnectFailed,
                format!(
                    "the upstream proxy {upstream} did not answer the CONNECT in {} s",
                    limit.as_secs()
                ),
            ))
        }
    };
    let status_line = head.lines().next().unwrap_or_default().to_string();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok());
    match status {
        Some(200..=299) => Ok((address, stream)),
        _ => Err(Deny::new(
            Reason::UpstreamRefused,
            format!(
                "the upstream proxy {upstream} answered the CONNECT to {authority} with `{}`",
                super::capture::escape(status_line.as_bytes())
            ),
        )),
    }
}

/// Reads a response head byte by byte (nothing of the tunnel after it is consumed), at most
/// `bound` bytes.
async fn read_head(stream: &mut TcpStream, bound: usize) -> std::io::Result<String> {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= bound {
            return Err(std::io::Error::other("a response head beyond the bound"));
        }
        let mut byte = [0u8; 1];
        if stream.read(&mut byte).await? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "closed before its response head was whole",
            ));
        }
        head.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}
