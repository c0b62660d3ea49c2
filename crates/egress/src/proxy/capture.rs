//! The start of the request head a client is sending, kept so that a request hyper cannot
//! parse (or that never completes) is logged with its request line as far as it was read.
//!
//! [`Recording`] wraps the client's socket while hyper serves it; it keeps the bytes read
//! since the last end of a head (`\r\n\r\n`), at most [`KEEP`] of them, and the last whole
//! head (a head can be whole and still not parse). After a tunnel opens
//! the socket is taken back out ([`Recording::into_inner`]), so tunnels pay nothing for it.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The most bytes of a head kept.
const KEEP: usize = 512;

/// The longest request line logged, in characters after escaping.
const MAX_LINE: usize = 200;

/// What has been read of the current head.
#[derive(Debug, Default)]
struct Capture {
    head: Vec<u8>,
    /// The start of the last whole head.
    previous: Vec<u8>,
    /// The last three bytes read, to see a `\r\n\r\n` split across reads.
    recent: Vec<u8>,
}

impl Capture {
    fn feed(&mut self, bytes: &[u8]) {
        let mut joined = std::mem::take(&mut self.recent);
        let carried = joined.len();
        joined.extend_from_slice(bytes);
        match joined.windows(4).rposition(|w| w == b"\r\n\r\n") {
            Some(at) => {
                let mut done = std::mem::take(&mut self.head);
                done.extend_from_slice(&joined[carried.min(at + 4)..at + 4]);
                let whole = &done[..done.len().saturating_sub(4)];
                let start = whole
                    .windows(4)
                    .rposition(|w| w == b"\r\n\r\n")
                    .map_or(0, |p| p + 4);
                let whole = &whole[start..];
                self.previous = whole[..whole.len().min(KEEP)].to_vec();
                let rest = &joined[at + 4..];
                self.head.extend_from_slice(&rest[..rest.len().min(KEEP)]);
            }
            None => {
                let room = KEEP.saturating_sub(self.head.len());
                let new = &joined[carried..];
                self.head.extend_from_slice(&new[..new.len().min(room)]);
            }
        }
        let keep_from = joined.len().saturating_sub(3);
        self.recent = joined[keep_from..].to_vec();
    }
}

/// The handle that reads the capture after hyper is done with the socket.
#[derive(Debug, Clone)]
pub(super) struct CaptureHandle(Arc<Mutex<Capture>>);

impl CaptureHandle {
    /// The first line of the head being read, escaped and truncated; `None` when nothing of a
    /// new head was read.
    pub(super) fn request_line(&self) -> Option<String> {
        let capture = self.0.lock().ok()?;
        first_line(&capture.head)
    }

    /// The request line of the head hyper refused: the one being read, or else the last
    /// whole one.
    pub(super) fn refused_line(&self) -> Option<String> {
        let capture = self.0.lock().ok()?;
        first_line(&capture.head).or_else(|| first_line(&capture.previous))
    }
}

fn first_line(head: &[u8]) -> Option<String> {
    let line = head
        .split(|&b| b == b'\r' || b == b'\n')
        .next()
        .unwrap_or_default();
    (!line.is_empty()).then(|| escape(line))
}

impl CaptureHandle {}

/// Printable ASCII as is (`\` doubled), every other byte `\xNN`; at most [`MAX_LINE`]
/// characters, `...` when cut.
pub(super) fn escape(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &b in bytes {
        let piece = match b {
            b'\\' => "\\\\".to_string(),
            0x20..=0x7e => (b as char).to_string(),
            _ => format!("\\x{b:02x}"),
        };
        if out.len() + piece.len() > MAX_LINE {
            out.push_str("...");
            break;
        }
        out.push_str(&piece);
    }
    out
}

/// The client's socket, keeping what [`Capture`] needs of each read.
#[derive(Debug)]
pub(super) struct Recording<S> {
    inner: S,
    capture: Arc<Mutex<Capture>>,
}

impl<S> Recording<S> {
    /// Wraps `inner`; the handle reads the capture later.
    pub(super) fn new(inner: S) -> (Recording<S>, CaptureHandle) {
        let capture = Arc::new(Mutex::new(Capture::default()));
        (
            Recording {
                inner,
                capture: capture.clone(),
            },
            CaptureHandle(capture),
        )
    }

    /// The socket itself.
    pub(super) fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Recording<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let new = &buf.filled()[before..];
        if !new.is_empty() {
            if let Ok(mut capture) = self.capture.lock() {
                capture.feed(new);
            }
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Recording<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_after(reads: &[&[u8]]) -> Option<String> {
        let capture = Arc::new(Mutex::new(Capture::default()));
        for read in reads {
            capture.lock().unwrap().feed(read);
        }
        CaptureHandle(capture).request_line()
    }

    #[test]
    fn the_line_of_the_head_being_read_is_kept_escaped_and_cut() {
        assert_eq!(
            line_after(&[b"GET http://a b/ HT", b"TP/1.1\r\nHost: x\r\n"]).as_deref(),
            Some("GET http://a b/ HTTP/1.1")
        );
        // A head that ended starts the next; the end may be split across reads.
        assert_eq!(
            line_after(&[b"GET /a HTTP/1.1\r\n\r", b"\nBAD\x01 /\\ x\r\n"]).as_deref(),
            Some("BAD\\x01 /\\\\ x")
        );
        assert_eq!(line_after(&[b"GET / HTTP/1.1\r\n\r\n"]), None);
        let capture = Arc::new(Mutex::new(Capture::default()));
        for read in [
            &b"GET /a HTTP/1.1\r\n\r\nGET http://a{b/ HTTP/1.1\r\nX: 1\r"[..],
            b"\n\r\n",
        ] {
            capture.lock().unwrap().feed(read);
        }
        let handle = CaptureHandle(capture);
        assert_eq!(handle.request_line(), None);
        assert_eq!(
            handle.refused_line().as_deref(),
            Some("GET http://a{b/ HTTP/1.1")
        );
        let long = line_after(&[&[b'a'; 1000]]).unwrap();
        assert!(
            long.len() <= MAX_LINE + 3 && long.ends_with("..."),
            "{long}"
        );
        let binary = line_after(&[&[0x16, 0x03, 0x01, 0x02, 0x00]]).unwrap();
        assert_eq!(binary, "\\x16\\x03\\x01\\x02\\x00");
    }
}
