//! The helpers of the Engine API port's archive operations (the archive endpoint, `HEAD`/`PUT`/
//! `GET /containers/{id}/archive`, and an exec streaming a tar;
//! [`SessionPort`](agentc_engine::session::SessionPort) in the parent module). The copy
//! itself is [`agentc_engine::session::transfer`], the same for both backends.

use agentc_engine::session::SessionError;
use tokio::sync::mpsc::Receiver;

use super::session_error;

/// Go's `os.ModeDir`, as the archive endpoint's stat reports a mode.
pub(super) const MODE_DIR: u32 = 1 << 31;

pub(super) fn copy_error(
    engine: agentc_engine::Engine,
    name: &str,
    path: &str,
    error: bollard::errors::Error,
) -> SessionError {
    match error {
        bollard::errors::Error::DockerResponseServerError { message, .. } => {
            SessionError::CopyFailed {
                name: name.to_string(),
                path: path.to_string(),
                message,
            }
        }
        other => session_error(engine, "copy", other),
    }
}

pub(super) fn chunk_stream(
    receiver: Receiver<Vec<u8>>,
) -> impl futures_util::Stream<Item = bytes::Bytes> + Send + 'static {
    futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver
            .recv()
            .await
            .map(|chunk| (bytes::Bytes::from(chunk), receiver))
    })
}
