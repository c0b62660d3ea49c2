//! [`CliClient`]'s [`ArchivePort`]: `docker cp` with a tar on stdin or stdout for the archive
//! endpoint, `docker exec -i CONTAINER tar` for a tar through exec. The copy itself is
//! [`agentc_backend_common::session::transfer`], the same for both backends.

use std::process::Stdio;

use agentc_backend_common::daemon_text::Refusal;
use agentc_backend_common::session::transfer::ArchivePort;
use agentc_backend_common::session::{Captured, ExecRequest, PathKind, Sandbox, SessionError};
use bollard::models::ContainerInspectResponse;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::{Receiver, Sender};

use super::{daemon_message, CliClient};

fn spawn_failed(source: std::io::Error) -> SessionError {
    SessionError::CannotRunDocker {
        engine: agentc_backend_common::engine(),
        source,
    }
}

/// Reads `from` to its end, each chunk sent to `sink`; stops early when the sink is gone.
async fn forward(mut from: impl AsyncRead + Unpin, sink: &Sender<Vec<u8>>) {
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
async fn drain(
    mut child: tokio::process::Child,
    sink: Sender<Vec<u8>>,
) -> Result<(std::process::ExitStatus, Vec<u8>), SessionError> {
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let errors = tokio::spawn(async move {
        let mut all = Vec::new();
        let _ = stderr.read_to_end(&mut all).await;
        all
    });
    forward(stdout, &sink).await;
    drop(sink);
    let status = child.wait().await.map_err(spawn_failed)?;
    Ok((status, errors.await.unwrap_or_default()))
}

/// Writes `chunks` to `to`, then closes it.
async fn feed(mut chunks: Receiver<Vec<u8>>, mut to: impl tokio::io::AsyncWrite + Unpin) {
    while let Some(chunk) = chunks.recv().await {
        if to.write_all(&chunk).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

impl ArchivePort for CliClient {
    async fn inspect_container(
        &self,
        sandbox: &Sandbox,
    ) -> Result<ContainerInspectResponse, SessionError> {
        self.inspect_named(&sandbox.id).await
    }

    async fn archive_stat(&self, sandbox: &Sandbox, path: &str) -> Result<PathKind, SessionError> {
        let source = format!("{}:{path}", sandbox.id);
        let mut child = self
            .command(&["cp", &source, "-"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_failed)?;
        let mut header = [0u8; 512];
        let mut stdout = child.stdout.take().expect("piped");
        let read = stdout.read_exact(&mut header).await;
        drop(stdout);
        if read.is_ok() {
            let _ = child.kill().await;
            // The tar header's type flag: '5' is a directory.
            return Ok(if header[156] == b'5' {
                PathKind::Directory
            } else {
                PathKind::Other
            });
        }
        let output = child.wait_with_output().await.map_err(spawn_failed)?;
        let message = daemon_message(&output.stderr);
        if agentc_backend_common::daemon_text::refusal(&message) == Some(Refusal::NoSuchPath) {
            Ok(PathKind::Missing)
        } else {
            Err(super::daemon("stat a container path", message))
        }
    }

    async fn archive_put(
        &self,
        sandbox: &Sandbox,
        directory: &str,
        landing: &str,
        chunks: Receiver<Vec<u8>>,
    ) -> Result<(), SessionError> {
        let destination = format!("{}:{directory}", sandbox.id);
        let mut child = self
            .command(&["cp", "--archive", "-", &destination])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_failed)?;
        let feeder = tokio::spawn(feed(chunks, child.stdin.take().expect("piped")));
        let output = child.wait_with_output().await.map_err(spawn_failed)?;
        let _ = feeder.await;
        if output.status.success() {
            Ok(())
        } else {
            Err(SessionError::CopyFailed {
                name: sandbox.name.clone(),
                path: landing.to_string(),
                message: daemon_message(&output.stderr),
            })
        }
    }

    async fn archive_get(
        &self,
        sandbox: &Sandbox,
        path: &str,
        sink: Sender<Vec<u8>>,
    ) -> Result<(), SessionError> {
        let from = format!("{}:{path}", sandbox.id);
        let child = self
            .command(&["cp", &from, "-"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_failed)?;
        let (status, stderr) = drain(child, sink).await?;
        if status.success() {
            Ok(())
        } else {
            Err(SessionError::CopyFailed {
                name: sandbox.name.clone(),
                path: path.to_string(),
                message: daemon_message(&stderr),
            })
        }
    }

    async fn exec_fed(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        chunks: Receiver<Vec<u8>>,
    ) -> Result<(i64, Captured), SessionError> {
        let mut child = self.spawn_exec(sandbox, request, Stdio::piped(), true, false)?;
        let feeder = tokio::spawn(feed(chunks, child.stdin.take().expect("piped")));
        let mut output = Captured::default();
        let code = self.finish_exec(sandbox, child, &mut output).await;
        let _ = feeder.await;
        Ok((code?, output))
    }

    async fn exec_drained(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        sink: Sender<Vec<u8>>,
    ) -> Result<(i64, Vec<u8>), SessionError> {
        let child = self.spawn_exec(sandbox, request, Stdio::null(), false, false)?;
        let (status, stderr) = drain(child, sink).await?;
        Ok((super::exit_code(status), stderr))
    }
}
