//! The health check: `GET /healthz` on the proxy's own port, with std only (no runtime).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::error::EgressError;
use crate::request::HEALTH_PATH;

/// The default address `agentc egress-proxy health` checks.
pub const DEFAULT_HEALTH_TARGET: &str = "127.0.0.1:3128";

/// Asks the proxy at `proxy` for `GET /healthz`; `Ok` when it answers 200 within `timeout`.
pub fn check(proxy: SocketAddr, timeout: Duration) -> Result<(), EgressError> {
    let fail = |reason: String| EgressError::Unhealthy {
        address: proxy.to_string(),
        reason,
    };
    let mut stream = TcpStream::connect_timeout(&proxy, timeout)
        .map_err(|error| fail(format!("cannot connect: {error}")))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|error| fail(error.to_string()))?;
    let request =
        format!("GET {HEALTH_PATH} HTTP/1.1\r\nHost: {proxy}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|error| fail(format!("cannot send the request: {error}")))?;
    let mut head = [0u8; 64];
    let mut read = 0;
    while read < 12 {
        match stream.read(&mut head[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(error) => return Err(fail(format!("no answer: {error}"))),
        }
    }
    let status = String::from_utf8_lossy(&head[..read]);
    if status.starts_with("HTTP/1.1 200") {
        Ok(())
    } else {
        Err(fail(format!(
            "answered `{}`",
            status.lines().next().unwrap_or_default()
        )))
    }
}
