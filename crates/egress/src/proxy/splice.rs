//! Zero-copy relaying on Linux: each direction moves bytes socket -> pipe -> socket with
//! splice(2), so tunnel payloads never enter the proxy's memory.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::Interest;
use tokio::net::TcpStream;

use super::Counters;

/// The most bytes one splice call moves (and the pipe's size).
const CHUNK: usize = 1 << 20;

struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
}

fn pipe() -> io::Result<Pipe> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both are new descriptors that nothing else owns.
    let pipe = unsafe {
        Pipe {
            read: OwnedFd::from_raw_fd(fds[0]),
            write: OwnedFd::from_raw_fd(fds[1]),
        }
    };
    // A larger pipe means fewer calls; the default (64 KiB) works too, so failure is fine.
    // SAFETY: F_SETPIPE_SZ on a pipe descriptor we own.
    unsafe {
        libc::fcntl(
            pipe.write.as_raw_fd(),
            libc::F_SETPIPE_SZ,
            CHUNK as libc::c_int,
        )
    };
    Ok(pipe)
}

fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    // SAFETY: both descriptors are open for the duration of the call (owned by the caller's
    // streams and pipe); null offsets mean "the current position" for sockets and pipes.
    let moved = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
        )
    };
    if moved < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(moved as usize)
    }
}

/// Moves bytes from `from` to `to` until `from` ends, then ends `to`'s sending side.
async fn one_way(
    from: &TcpStream,
    to: &TcpStream,
    counted: &AtomicU64,
    counters: &Counters,
) -> io::Result<()> {
    let pipe = pipe()?;
    loop {
        // The pipe is empty here, so EAGAIN can only mean the socket has nothing yet.
        let moved = loop {
            from.readable().await?;
            match from.try_io(Interest::READABLE, || {
                splice(from.as_raw_fd(), pipe.write.as_raw_fd(), CHUNK)
            }) {
                Ok(moved) => break moved,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
                Err(error) => return Err(error),
            }
        };
        if moved == 0 {
            break;
        }
        // The pipe holds data here, so EAGAIN can only mean the socket is full.
        let mut left = moved;
        while left > 0 {
            to.writable().await?;
            match to.try_io(Interest::WRITABLE, || {
                splice(pipe.read.as_raw_fd(), to.as_raw_fd(), left)
            }) {
                Ok(written) => {
                    left -= written;
                    counted.fetch_add(written as u64, Ordering::Relaxed);
                    counters.touch();
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
                Err(error) => return Err(error),
            }
        }
    }
    // SAFETY: shutdown(2) of the sending side of a socket the caller owns.
    unsafe { libc::shutdown(to.as_raw_fd(), libc::SHUT_WR) };
    Ok(())
}

/// Relays both directions until both have ended, or either fails.
pub(super) async fn both_ways(
    client: &TcpStream,
    upstream: &TcpStream,
    counters: &Counters,
) -> io::Result<()> {
    tokio::try_join!(
        one_way(client, upstream, &counters.up, counters),
        one_way(upstream, client, &counters.down, counters),
    )
    .map(|_| ())
}
