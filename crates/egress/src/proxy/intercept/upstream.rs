//! The upstream side of a terminated tunnel: connected at its first allowed request (resolved
//! and checked as every connection is, `super::super::open`; behind an upstream proxy that
//! carries the host, a tunnel through its `CONNECT host:port` instead, `super::super::chain`),
//! TLS verified against Mozilla's roots and the profile's CAs for the bound host's own name
//! either way, HTTP/2 or HTTP/1.1 by the upstream's ALPN; and a request put into the upstream's
//! protocol when the client chose the other.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::HOST;
use http::{HeaderValue, Request, Response, Uri, Version};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Mutex;
use tokio_rustls::TlsConnector;

use super::super::counted::{Counted, Counters};
use super::super::{open, Body, Shared};
use super::{Intercept, H2};
use crate::policy::{Deny, Reason};

/// The size of the upstream's read buffer under TLS.
const READ_BUFFER: usize = 64 << 10;

/// The upstream's TLS stream, read as far as it has data now: every record already received
/// rather than one record per read (rustls hands out one record's plaintext at a time), so
/// that a stream is forwarded in as few frames and TLS records as it arrives in. A read never
/// waits for more than what it has (an SSE event is forwarded when it arrives).
struct Gather<S> {
    inner: S,
    /// An error met after some data was read: returned at the next read.
    error: Option<io::Error>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Gather<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(error) = self.error.take() {
            return Poll::Ready(Err(error));
        }
        let start = buf.filled().len();
        loop {
            let before = buf.filled().len();
            match Pin::new(&mut self.inner).poll_read(cx, buf) {
                Poll::Ready(Ok(())) if buf.filled().len() > before && buf.remaining() > 0 => {}
                Poll::Ready(Err(error)) if buf.filled().len() > start => {
                    self.error = Some(error);
                    return Poll::Ready(Ok(()));
                }
                Poll::Pending if buf.filled().len() > start => return Poll::Ready(Ok(())),
                polled => return polled,
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Gather<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The tunnel's upstream connection.
pub(super) enum Upstream {
    Http1(Mutex<http1::SendRequest<Body>>),
    Http2(http2::SendRequest<Body>),
}

/// Resolves, connects (directly, or through the upstream proxy that carries `host`) and makes
/// the TLS handshake with `host:port`, counting its bytes in `counters`, offering HTTP/2 only
/// to a client that speaks it (`client_h2`); the address connected to (the upstream proxy's,
/// through one) and the connection.
pub(super) async fn connect(
    shared: &Shared,
    intercept: &Intercept,
    host: &str,
    port: u16,
    counters: &Arc<Counters>,
    client_h2: bool,
) -> Result<(SocketAddr, Upstream), Deny> {
    let config = &intercept.upstream[usize::from(!client_h2)];
    let (address, tcp) = open(shared, host, port).await?;
    // Read in large pieces under TLS: rustls asks for 4 KiB at a time, a system call each.
    let counted = tokio::io::BufReader::with_capacity(
        READ_BUFFER,
        Counted {
            inner: tcp,
            counters: counters.clone(),
        },
    );
    let name = ServerName::try_from(host.to_string())
        .map_err(|_| Deny::new(Reason::BadHost, "not a TLS server name"))?;
    let tls = match tokio::time::timeout(
        shared.limits.connect_timeout(),
        TlsConnector::from(config.clone()).connect(name, counted),
    )
    .await
    {
        Ok(Ok(tls)) => tls,
        Ok(Err(error)) => {
            let reason = handshake_failure_reason(&error);
            return Err(Deny::new(
                reason,
                format!("{address}: the upstream's TLS handshake failed: {error}"),
            ));
        }
        Err(_) => {
            return Err(Deny::new(
                Reason::ConnectFailed,
                format!("{address}: no TLS handshake in time"),
            ))
        }
    };
    let h2 = tls.get_ref().1.alpn_protocol() == Some(H2);
    let io = TokioIo::new(Gather {
        inner: tls,
        error: None,
    });
    let failed = |error: hyper::Error| {
        Deny::new(
            Reason::ConnectFailed,
            format!("{address}: the upstream's HTTP handshake failed: {error}"),
        )
    };
    let upstream = if h2 {
        let (sender, connection) = http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(super::H2_STREAM_WINDOW)
            .initial_connection_window_size(super::H2_CONNECTION_WINDOW)
            .handshake(io)
            .await
            .map_err(failed)?;
        tokio::spawn(connection);
        Upstream::Http2(sender)
    } else {
        let (sender, connection) = http1::handshake(io).await.map_err(failed)?;
        tokio::spawn(connection.with_upgrades());
        Upstream::Http1(Mutex::new(sender))
    };
    Ok((address, upstream))
}

impl Upstream {
    /// Sends `request` (as the client sent it, in `Version::HTTP_2` or HTTP/1.1), put into the
    /// upstream's form: HTTP/1.1 takes an origin-form target and a `Host`, HTTP/2 an absolute
    /// target (its `:authority`) and no `Host`.
    pub(super) async fn send(
        &self,
        mut request: Request<Body>,
        authority: &str,
    ) -> Result<Response<Incoming>, hyper::Error> {
        match self {
            Upstream::Http1(sender) => {
                if request.version() == Version::HTTP_2 {
                    if let Some(path) = request.uri().path_and_query().cloned() {
                        *request.uri_mut() = Uri::from(path);
                    }
                    if let Ok(host) = HeaderValue::from_str(authority) {
                        request.headers_mut().insert(HOST, host);
                    }
                }
                *request.version_mut() = Version::HTTP_11;
                let mut sender = sender.lock().await;
                // The previous response may still be finishing on the connection.
                sender.ready().await?;
                sender.send_request(request).await
            }
            Upstream::Http2(sender) => {
                if request.uri().authority().is_none() {
                    let path = request
                        .uri()
                        .path_and_query()
                        .map_or("/", |path| path.as_str())
                        .to_string();
                    if let Ok(uri) = format!("https://{authority}{path}").parse::<Uri>() {
                        *request.uri_mut() = uri;
                    }
                }
                request.headers_mut().remove(HOST);
                *request.version_mut() = Version::HTTP_2;
                let mut sender = sender.clone();
                sender.ready().await?;
                sender.send_request(request).await
            }
        }
    }

    /// Whether an HTTP/1.1 upgrade (a WebSocket) can cross: only HTTP/1.1 to HTTP/1.1.
    pub(super) fn upgrades(&self) -> bool {
        matches!(self, Upstream::Http1(_))
    }
}

/// Why a TLS handshake with an upstream failed, as a decision line says it: a certificate
/// that does not verify (`upstream-certificate`), or any other failure (`connect-failed`).
pub(crate) fn handshake_failure_reason(error: &std::io::Error) -> Reason {
    let certificate = error.get_ref().is_some_and(|inner| {
        inner
            .downcast_ref::<rustls::Error>()
            .is_some_and(|e| matches!(e, rustls::Error::InvalidCertificate(_)))
    });
    if certificate {
        Reason::UpstreamCertificate
    } else {
        Reason::ConnectFailed
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    /// A reader that answers from a script: data, an error, or "nothing yet".
    struct Script(VecDeque<Option<io::Result<&'static [u8]>>>);

    impl AsyncRead for Script {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            match self.0.pop_front() {
                None => Poll::Ready(Ok(())),
                Some(None) => Poll::Pending,
                Some(Some(Err(error))) => Poll::Ready(Err(error)),
                Some(Some(Ok(data))) => {
                    let n = data.len().min(buf.remaining());
                    buf.put_slice(&data[..n]);
                    if n < data.len() {
                        self.0.push_front(Some(Ok(&data[n..])));
                    }
                    Poll::Ready(Ok(()))
                }
            }
        }
    }

    fn read(gather: &mut Gather<Script>, size: usize) -> Poll<io::Result<Vec<u8>>> {
        let mut storage = vec![0u8; size];
        let mut buf = ReadBuf::new(&mut storage);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        Pin::new(gather)
            .poll_read(&mut cx, &mut buf)
            .map_ok(|()| buf.filled().to_vec())
    }

    fn gather(script: Vec<Option<io::Result<&'static [u8]>>>) -> Gather<Script> {
        Gather {
            inner: Script(script.into()),
            error: None,
        }
    }

    #[test]
    fn a_read_takes_what_has_arrived_and_never_waits_for_more() {
        let mut gather = gather(vec![
            Some(Ok(b"data: 1\n\n")),
            Some(Ok(b"data: 2\n\n")),
            None,
            Some(Ok(b"data: 3\n\n")),
        ]);
        let first = read(&mut gather, 64);
        assert!(matches!(&first, Poll::Ready(Ok(data)) if data == b"data: 1\n\ndata: 2\n\n"));
        let second = read(&mut gather, 64);
        assert!(matches!(&second, Poll::Ready(Ok(data)) if data == b"data: 3\n\n"));
        // Then the end of the stream, as the inner reader says it.
        assert!(matches!(read(&mut gather, 64), Poll::Ready(Ok(data)) if data.is_empty()));
    }

    #[test]
    fn nothing_yet_is_pending_and_a_full_buffer_ends_a_read() {
        let mut gather = gather(vec![None, Some(Ok(b"abcdef"))]);
        assert!(read(&mut gather, 64).is_pending());
        assert!(matches!(read(&mut gather, 4), Poll::Ready(Ok(data)) if data == b"abcd"));
        assert!(matches!(read(&mut gather, 4), Poll::Ready(Ok(data)) if data == b"ef"));
    }

    #[test]
    fn an_error_after_data_comes_at_the_next_read() {
        let mut gather = gather(vec![
            Some(Ok(b"partial")),
            Some(Err(io::Error::other("reset"))),
        ]);
        assert!(matches!(read(&mut gather, 64), Poll::Ready(Ok(data)) if data == b"partial"));
        assert!(
            matches!(read(&mut gather, 64), Poll::Ready(Err(error)) if error.to_string() == "reset")
        );
    }
}
