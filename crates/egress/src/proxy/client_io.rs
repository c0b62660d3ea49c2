//! The client side of a tunnel ([`ClientIo`]): the client's own socket, so that a tunnel can
//! be spliced in the kernel, or hyper's upgraded connection.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The client side of a tunnel: its socket (the usual case), or hyper's upgraded connection.
pub(super) enum ClientIo {
    Tcp(TcpStream),
    Upgraded(TokioIo<hyper::upgrade::Upgraded>),
}

impl AsyncRead for ClientIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientIo::Tcp(stream) => Pin::new(stream).poll_read(cx, buf),
            ClientIo::Upgraded(io) => Pin::new(io).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ClientIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ClientIo::Tcp(stream) => Pin::new(stream).poll_write(cx, buf),
            ClientIo::Upgraded(io) => Pin::new(io).poll_write(cx, buf),
        }
    }
    // Vectored, so that a terminated tunnel's TLS records leave in one write, not one each.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ClientIo::Tcp(stream) => Pin::new(stream).poll_write_vectored(cx, bufs),
            ClientIo::Upgraded(io) => Pin::new(io).poll_write_vectored(cx, bufs),
        }
    }
    fn is_write_vectored(&self) -> bool {
        match self {
            ClientIo::Tcp(stream) => stream.is_write_vectored(),
            ClientIo::Upgraded(io) => io.is_write_vectored(),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientIo::Tcp(stream) => Pin::new(stream).poll_flush(cx),
            ClientIo::Upgraded(io) => Pin::new(io).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientIo::Tcp(stream) => Pin::new(stream).poll_shutdown(cx),
            ClientIo::Upgraded(io) => Pin::new(io).poll_shutdown(cx),
        }
    }
}
