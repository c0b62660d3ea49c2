//! Connections through the upstream proxy ([`crate::upstream`]): the upstream's own
//! connection (its address connected to whatever range it is in, since the profile names it),
//! and a tunnel through it (`CONNECT host:port`, answered `2xx` before any byte of the client
//! is sent). Plain-HTTP requests are sent to it in absolute form by `super::forward`.
//!
//! An `https://` upstream is spoken to over TLS, verified against Mozilla's roots and the
//! profile's CAs (`--upstream-ca`) for the upstream's own name; a certificate that does not
//! verify fails the connection (`upstream-certificate`), nothing is sent.

use std::net::SocketAddr;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

use super::conn::Conn;
use super::Shared;
use crate::ca::{read_certificates, upstream_roots};
use crate::config::Config;
use crate::error::EgressError;
use crate::host::ip_target;
use crate::policy::{Deny, Reason};
use crate::upstream::Upstream;

/// The TLS client for an `https://` upstream (none for a plain one, or without an upstream):
/// Mozilla's roots and the certificates of `--upstream-ca`, HTTP/1.1 only.
pub(super) fn tls_client(config: &Config) -> Result<Option<Arc<ClientConfig>>, EgressError> {
    let tls = |u: &Upstream| u.tls || u.http.as_ref().is_some_and(|h| h.tls);
    if !config.upstream.as_ref().is_some_and(tls) {
        return Ok(None);
    }
    let extra = read_certificates(&config.credentials.upstream_ca)?;
    let mut client =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|error| EgressError::Ca(error.to_string()))?
            .with_root_certificates(Arc::new(upstream_roots(&extra)))
            .with_no_client_auth();
    client.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(Arc::new(client)))
}

/// Connects to the upstream proxy ([`connect_tcp`]), then makes the TLS handshake with it
/// when it is an `https://` one.
pub(super) async fn connect(
    shared: &Shared,
    upstream: &Upstream,
) -> Result<(SocketAddr, Conn), Deny> {
    let (address, stream) = connect_tcp(shared, upstream).await?;
    let Some(config) = shared.upstream_tls.clone().filter(|_| upstream.tls) else {
        return Ok((address, Conn::Tcp(stream)));
    };
    let name = match ip_target(&upstream.host) {
        Some(ip) => ServerName::IpAddress(ip.into()),
        None => ServerName::try_from(upstream.host.clone()).map_err(|_| {
            Deny::new(
                Reason::BadHost,
                format!("the upstream proxy {upstream}: not a TLS server name"),
            )
        })?,
    };
    let limit = shared.limits.connect_timeout();
    match tokio::time::timeout(limit, TlsConnector::from(config).connect(name, stream)).await {
        Ok(Ok(tls)) => Ok((address, Conn::Tls(Box::new(tls)))),
        Ok(Err(error)) => {
            let reason = super::intercept::handshake_failure_reason(&error);
            Err(Deny::new(
                reason,
                format!(
                    "the upstream proxy {upstream} at {address}: its TLS handshake failed: {error}"
                ),
            ))
        }
        Err(_) => Err(Deny::new(
            Reason::ConnectFailed,
            format!("the upstream proxy {upstream} at {address}: no TLS handshake in time"),
        )),
    }
}

/// Connects to the upstream proxy itself: its address, or each address its name resolves to,
/// until one answers.
async fn connect_tcp(
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
) -> Result<(SocketAddr, Conn), Deny> {
    let (address, mut stream) = connect(shared, upstream).await?;
    let authority = format!("{host}:{port}");
    let auth = shared
        .upstream_auth(upstream)
        .and_then(|value| value.to_str().ok())
        .map(|value| format!("Proxy-Authorization: {value}\r\n"))
        .unwrap_or_default();
    let request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n{auth}\r\n");
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
async fn read_head(stream: &mut (impl AsyncRead + Unpin), bound: usize) -> std::io::Result<String> {
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
