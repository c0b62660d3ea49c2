//! Byte counters of a tunnel or a forwarded exchange, and the idle timeout they drive.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// Bytes each way and the time of the last one.
#[derive(Debug)]
pub(super) struct Counters {
    pub(super) up: AtomicU64,
    pub(super) down: AtomicU64,
    start: Instant,
    last_ms: AtomicU64,
}

impl Counters {
    pub(super) fn new() -> Counters {
        Counters {
            up: AtomicU64::new(0),
            down: AtomicU64::new(0),
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }
    pub(super) fn touch(&self) {
        let ms = self.start.elapsed().as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }
    fn last(&self) -> Instant {
        self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

/// Runs `future` until it ends or `idle` passes without a byte counted; `None` on idle.
pub(super) async fn with_idle<F: Future>(
    future: F,
    counters: &Counters,
    idle: Duration,
) -> Option<F::Output> {
    tokio::pin!(future);
    loop {
        let deadline = counters.last() + idle;
        tokio::select! {
            output = &mut future => return Some(output),
            _ = tokio::time::sleep_until(deadline) => {
                if counters.last() + idle <= Instant::now() {
                    return None;
                }
            }
        }
    }
}

/// The upstream connection, counting bytes: up is written to it, down is read from it.
pub(super) struct Counted<S> {
    pub(super) inner: S,
    pub(super) counters: Arc<Counters>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            self.counters.down.fetch_add(n as u64, Ordering::Relaxed);
            self.counters.touch();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            if n > 0 {
                self.counters.up.fetch_add(n as u64, Ordering::Relaxed);
                self.counters.touch();
            }
        }
        polled
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = polled {
            if n > 0 {
                self.counters.up.fetch_add(n as u64, Ordering::Relaxed);
                self.counters.touch();
            }
        }
        polled
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
