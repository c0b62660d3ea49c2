//! The helpers of the docker CLI port's archive operations (`docker cp` with a tar on stdin
//! or stdout for the archive endpoint, `docker exec -i CONTAINER tar` for a tar through exec;
//! [`SessionPort`](agentc_engine::session::SessionPort) in the parent module): a tar
//! stream carried between a docker child and the copy's channel. The copy itself is
//! [`agentc_engine::session::transfer`], the same for both backends.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::{Receiver, Sender};

/// Reads `from` to its end, each chunk sent to `sink`; stops early when the sink is gone.
pub(super) async fn forward(mut from: impl AsyncRead + Unpin, sink: &Sender<Vec<u8>>) {
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if sink.send(buffer[..n].to_vec()).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// Waits for a docker child whose stdout is a tar stream: its stdout sent to `sink` chunk by
/// chunk, its stderr kept; returns its exit status and stderr.
pub(super) async fn drain(
    mut child: tokio::process::Child,
    sink: Sender<Vec<u8>>,
) -> std::io::Result<(std::process::ExitStatus, Vec<u8>)> {
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let errors = tokio::spawn(async move {
        let mut all = Vec::new();
        let _ = stderr.read_to_end(&mut all).await;
        all
    });
    forward(stdout, &sink).await;
    drop(sink);
    let status = child.wait().await?;
    Ok((status, errors.await.unwrap_or_default()))
}

/// Writes `chunks` to `to`, then closes it.
pub(super) async fn feed(
    mut chunks: Receiver<Vec<u8>>,
    mut to: impl tokio::io::AsyncWrite + Unpin,
) {
    while let Some(chunk) = chunks.recv().await {
        if to.write_all(&chunk).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
