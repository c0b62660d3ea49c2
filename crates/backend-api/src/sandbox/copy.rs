//! The copies of [`ApiClient`]: the archive endpoint (`PUT`/`GET /containers/{id}/archive`)
//! where it reaches, a tar streamed through exec where it does not (a tmpfs, past a
//! read-only root), as [`agentc_backend_common::session::copy`] decides for both backends.

use std::path::Path;

use agentc_backend_common::session::copy::{
    container_path, create_command, extract_command, extract_new_command, read_stat, split,
    transport, upload_placement, Direction, Transport, STAT_SCRIPT,
};
use agentc_backend_common::session::tarball::{
    host_placement, host_source, pack, unpack, ChunkReader, ChunkWriter, Partial,
};
use agentc_backend_common::session::target::is_running;
use agentc_backend_common::session::{
    Captured, CopyReport, ExecRequest, PathKind, Sandbox, SessionError,
};
use bollard::container::LogOutput;
use bollard::query_parameters::{
    ContainerArchiveInfoOptionsBuilder, DownloadFromContainerOptionsBuilder,
    UploadToContainerOptionsBuilder,
};
use futures_util::StreamExt;

use super::{session_error, ApiClient, Input};
use crate::daemon::is_not_found;

/// Go's `os.ModeDir`, as the archive endpoint's stat reports a mode.
const MODE_DIR: u32 = 1 << 31;

fn workdir(inspect: &bollard::models::ContainerInspectResponse) -> Option<String> {
    inspect
        .config
        .as_ref()
        .and_then(|config| config.working_dir.clone())
        .filter(|dir| !dir.is_empty())
}

/// What `path` is in the container, asked through `how`; for an exec, whether `tar` is
/// there is checked too.
async fn stat(
    client: &ApiClient,
    sandbox: &Sandbox,
    path: &str,
    how: Transport,
) -> Result<PathKind, SessionError> {
    match how {
        Transport::Archive => {
            let options = ContainerArchiveInfoOptionsBuilder::new().path(path).build();
            match client
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
        Transport::ExecTar => {
            let request = ExecRequest::new(["sh", "-c", STAT_SCRIPT, "sh", path]);
            let mut output = Captured::default();
            let code = client
                .run_exec(sandbox, &request, Input::Null, &mut output)
                .await?;
            let text = String::from_utf8_lossy(&output.stdout);
            match (code, read_stat(&text)) {
                (0, Some((kind, true))) => Ok(kind),
                _ => Err(SessionError::TarMissing {
                    name: sandbox.name.clone(),
                    path: path.to_string(),
                }),
            }
        }
    }
}

pub(crate) async fn upload(
    client: &ApiClient,
    sandbox: &Sandbox,
    source: &Path,
    target: &str,
) -> Result<CopyReport, SessionError> {
    let inspect = client.inspect_named(&sandbox.id).await?;
    let running = is_running(&inspect);
    let name = &sandbox.name;
    let path = container_path(target, workdir(&inspect).as_deref())?;
    let (source, source_name, source_is_dir) = host_source(source)?;
    let first = transport(&inspect, name, &path, Direction::Upload, running)?;
    let kind = stat(client, sandbox, &path, first).await?;
    let (directory, entry) =
        upload_placement(name, target, &path, kind, &source_name, source_is_dir)?;
    let landing = if directory == "/" {
        format!("/{entry}")
    } else {
        format!("{directory}/{entry}")
    };
    let how = transport(&inspect, name, &landing, Direction::Upload, running)?;
    let directory_kind = if kind == PathKind::Directory && how == first {
        kind
    } else {
        stat(client, sandbox, &directory, how).await?
    };
    if directory_kind != PathKind::Directory {
        return Err(SessionError::NoSuchPath {
            name: name.clone(),
            path: directory,
        });
    }
    let (sender, receiver) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
    let landing_entry = entry.clone();
    let packer =
        tokio::task::spawn_blocking(move || pack(&source, &entry, ChunkWriter::new(sender)));
    let counted = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let result = match how {
        Transport::Archive => {
            let count = counted.clone();
            let body = tokio_stream(receiver).map(move |chunk| {
                count.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
                bytes::Bytes::from(chunk)
            });
            let options = UploadToContainerOptionsBuilder::new()
                .path(&directory)
                .copy_uidgid("1")
                .build();
            client
                .docker
                .upload_to_container(&sandbox.id, Some(options), bollard::body_stream(body))
                .await
                .map_err(|error| copy_error(name, &landing, error))
        }
        Transport::ExecTar => {
            let (forward, forwarded) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
            let count = counted.clone();
            let relay = tokio::spawn(async move {
                let mut receiver = receiver;
                while let Some(chunk) = receiver.recv().await {
                    count.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
                    if forward.send(chunk).await.is_err() {
                        break;
                    }
                }
            });
            // A new entry lands all or nothing; into an existing one, tar merges as it goes.
            let command = if kind == PathKind::Missing {
                extract_new_command(&directory, &landing_entry)
            } else {
                extract_command(&directory)
            };
            let request = ExecRequest::new(command);
            let mut output = Captured::default();
            let code = client
                .run_exec(sandbox, &request, Input::Chunks(forwarded), &mut output)
                .await;
            relay.abort();
            match code? {
                0 => Ok(()),
                126 | 127 => Err(SessionError::TarMissing {
                    name: name.clone(),
                    path: landing.clone(),
                }),
                _ => Err(SessionError::CopyFailed {
                    name: name.clone(),
                    path: landing.clone(),
                    message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
                }),
            }
        }
    };
    let packed = packer.await.map_err(|error| SessionError::Io {
        step: "pack the source",
        source: std::io::Error::other(error.to_string()),
    })?;
    result?;
    packed?;
    Ok(CopyReport {
        transport: how,
        destination: landing,
        bytes: counted.load(std::sync::atomic::Ordering::Relaxed),
    })
}

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

fn tokio_stream(
    receiver: tokio::sync::mpsc::Receiver<Vec<u8>>,
) -> impl futures_util::Stream<Item = Vec<u8>> + Send + 'static {
    futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|chunk| (chunk, receiver))
    })
}

pub(crate) async fn download(
    client: &ApiClient,
    sandbox: &Sandbox,
    source: &str,
    target: &Path,
) -> Result<CopyReport, SessionError> {
    let inspect = client.inspect_named(&sandbox.id).await?;
    let running = is_running(&inspect);
    let name = &sandbox.name;
    let path = container_path(source, workdir(&inspect).as_deref())?;
    let (_, top) = split(&path);
    let how = transport(&inspect, name, &path, Direction::Download, running)?;
    if stat(client, sandbox, &path, how).await? == PathKind::Missing {
        return Err(SessionError::NoSuchPath {
            name: name.clone(),
            path,
        });
    }
    let (directory, rename) = host_placement(target, &top)?;
    let landing = directory.join(&rename);
    let mut partial = Partial {
        path: (!landing.exists() && !landing.is_symlink()).then(|| landing.clone()),
    };
    let (sender, receiver) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
    let (unpack_dir, unpack_top, unpack_name, container) =
        (directory.clone(), top.clone(), rename.clone(), name.clone());
    let unpacker = tokio::task::spawn_blocking(move || {
        unpack(
            ChunkReader::new(receiver),
            &unpack_dir,
            &unpack_top,
            &unpack_name,
            &container,
        )
    });
    let streamed = match how {
        Transport::Archive => {
            let options = DownloadFromContainerOptionsBuilder::new()
                .path(&path)
                .build();
            let mut stream = client
                .docker
                .download_from_container(&sandbox.id, Some(options));
            let mut result = Ok(());
            while let Some(chunk) = stream.next().await {
                match chunk {
                    Ok(chunk) => {
                        if sender.send(chunk.to_vec()).await.is_err() {
                            break;
                        }
                    }
                    Err(error) => {
                        result = Err(copy_error(name, &path, error));
                        break;
                    }
                }
            }
            result
        }
        Transport::ExecTar => {
            let request = ExecRequest::new(create_command(&path));
            let (mut stream, _stdin, exec_id) = client.start_exec(sandbox, &request, false).await?;
            let mut stderr = Vec::new();
            let mut result = Ok(());
            while let Some(chunk) = stream.next().await {
                match chunk {
                    Ok(LogOutput::StdOut { message }) => {
                        if sender.send(message.to_vec()).await.is_err() {
                            break;
                        }
                    }
                    Ok(LogOutput::StdErr { message }) => stderr.extend_from_slice(&message),
                    Ok(_) => {}
                    Err(error) => {
                        result = Err(session_error("read the tar stream", error));
                        break;
                    }
                }
            }
            if result.is_ok() {
                match client.exec_exit(sandbox, &exec_id).await? {
                    0 => {}
                    code => {
                        result = Err(SessionError::CopyFailed {
                            name: name.clone(),
                            path: path.clone(),
                            message: format!(
                                "tar exited with {code}: {}",
                                String::from_utf8_lossy(&stderr).trim()
                            ),
                        })
                    }
                }
            }
            result
        }
    };
    drop(sender);
    let unpacked = unpacker.await.map_err(|error| SessionError::Io {
        step: "unpack the copy",
        source: std::io::Error::other(error.to_string()),
    })?;
    streamed?;
    let unpacked = unpacked?;
    partial.path = None;
    Ok(CopyReport {
        transport: how,
        destination: landing.display().to_string(),
        bytes: unpacked.bytes,
    })
}
