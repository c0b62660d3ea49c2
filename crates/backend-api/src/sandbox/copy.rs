//! [`ApiClient`]'s [`ArchivePort`]: the archive endpoint (`HEAD`/`PUT`/`GET
//! /containers/{id}/archive`) and an exec streaming a tar. The copy itself is
//! [`agentc_backend_common::session::transfer`], the same for both backends.

use agentc_backend_common::session::transfer::ArchivePort;
use agentc_backend_common::session::{Captured, ExecRequest, PathKind, Sandbox, SessionError};
use bollard::container::LogOutput;
use bollard::models::ContainerInspectResponse;
use bollard::query_parameters::{
    ContainerArchiveInfoOptionsBuilder, DownloadFromContainerOptionsBuilder,
    UploadToContainerOptionsBuilder,
};
use futures_util::StreamExt;
use tokio::sync::mpsc::{Receiver, Sender};

use super::{session_error, ApiClient, Input};
use crate::daemon::is_not_found;

/// Go's `os.ModeDir`, as the archive endpoint's stat reports a mode.
const MODE_DIR: u32 = 1 << 31;

fn copy_error(name: &str, path: &str, error: bollard::errors::Error) -> SessionError {
    match error {
        bollard::errors::Error::DockerResponseServerError { message, .. } => {
            SessionError::CopyFailed {
                name: name.to_string(),
                path: path.to_string(),
                message,
            }
        }
        other => session_error("copy", other),
    }
}

fn chunk_stream(
    receiver: Receiver<Vec<u8>>,
) -> impl futures_util::Stream<Item = bytes::Bytes> + Send + 'static {
    futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver
            .recv()
            .await
            .map(|chunk| (bytes::Bytes::from(chunk), receiver))
    })
}

impl ArchivePort for ApiClient {
    async fn inspect_container(
        &self,
        sandbox: &Sandbox,
    ) -> Result<ContainerInspectResponse, SessionError> {
        self.inspect_named(&sandbox.id).await
    }

    async fn archive_stat(&self, sandbox: &Sandbox, path: &str) -> Result<PathKind, SessionError> {
        let options = ContainerArchiveInfoOptionsBuilder::new().path(path).build();
        match self
            .docker
            .get_container_archive_info(&sandbox.id, Some(options))
            .await
        {
            Ok(stat) if stat.file_mode & MODE_DIR != 0 => Ok(PathKind::Directory),
            Ok(_) => Ok(PathKind::Other),
            Err(error) if is_not_found(&error) => Ok(PathKind::Missing),
            Err(error) => Err(session_error("stat a container path", error)),
        }
    }

    async fn archive_put(
        &self,
        sandbox: &Sandbox,
        directory: &str,
        landing: &str,
        chunks: Receiver<Vec<u8>>,
    ) -> Result<(), SessionError> {
        let options = UploadToContainerOptionsBuilder::new()
            .path(directory)
            .copy_uidgid("1")
            .build();
        self.docker
            .upload_to_container(
                &sandbox.id,
                Some(options),
                bollard::body_stream(chunk_stream(chunks)),
            )
            .await
            .map_err(|error| copy_error(&sandbox.name, landing, error))
    }

    async fn archive_get(
        &self,
        sandbox: &Sandbox,
        path: &str,
        sink: Sender<Vec<u8>>,
    ) -> Result<(), SessionError> {
        let options = DownloadFromContainerOptionsBuilder::new()
            .path(path)
            .build();
        let mut stream = self
            .docker
            .download_from_container(&sandbox.id, Some(options));
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(chunk) => {
                    if sink.send(chunk.to_vec()).await.is_err() {
                        break;
                    }
                }
                Err(error) => return Err(copy_error(&sandbox.name, path, error)),
            }
        }
        Ok(())
    }

    async fn exec_fed(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        chunks: Receiver<Vec<u8>>,
    ) -> Result<(i64, Captured), SessionError> {
        let mut output = Captured::default();
        let code = self
            .run_exec(sandbox, request, Input::Chunks(chunks), &mut output)
            .await?;
        Ok((code, output))
    }

    async fn exec_drained(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        sink: Sender<Vec<u8>>,
    ) -> Result<(i64, Vec<u8>), SessionError> {
        let (mut stream, _stdin, exec_id) = self.start_exec(sandbox, request, false).await?;
        let mut stderr = Vec::new();
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(LogOutput::StdOut { message }) => {
                    if sink.send(message.to_vec()).await.is_err() {
                        break;
                    }
                }
                Ok(LogOutput::StdErr { message }) => stderr.extend_from_slice(&message),
                Ok(_) => {}
                Err(error) => return Err(session_error("read the tar stream", error)),
            }
        }
        drop(sink);
        Ok((self.exec_exit(sandbox, &exec_id).await?, stderr))
    }
}
