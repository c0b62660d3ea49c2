//! A copy into or out of a sandbox, written once for both backends over [`SessionPort`]: the
//! engine operations that move a tar stream (the archive endpoint, or `tar` through exec).
//! What the copy decides (the container path, the transport, where the tree lands) is in
//! [`super::copy`] and [`super::tarball`]; this module runs those decisions in order, packs or
//! unpacks on a blocking thread and counts the bytes.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc::{channel, Receiver};

use super::copy::{
    container_path, create_command, extract_command, extract_new_command, read_stat, split,
    transport, upload_placement, Direction, Transport, STAT_SCRIPT,
};
use super::error::SessionError;
use super::port::SessionPort;
use super::tarball::{
    host_placement, host_source, pack, unpack, ChunkReader, ChunkWriter, Partial,
};
use super::target::is_running;
use super::types::{ExecRequest, PathKind, Sandbox};
use super::CopyReport;
use super::SandboxClient;
use super::Sandboxes;
use crate::error::ExecError;

/// How many tar chunks wait between the packer or unpacker and the engine.
const CHUNKS_IN_FLIGHT: usize = 8;

fn workdir(inspect: &bollard::models::ContainerInspectResponse) -> Option<String> {
    inspect
        .config
        .as_ref()
        .and_then(|config| config.working_dir.clone())
        .filter(|dir| !dir.is_empty())
}

/// What `path` is in the container, asked through `how`; through exec, whether `tar` is there
/// is checked too.
async fn stat<P: SessionPort>(
    client: &Sandboxes<P>,
    sandbox: &Sandbox,
    path: &str,
    how: Transport,
) -> Result<PathKind, SessionError> {
    match how {
        Transport::Archive => client.port().archive_stat(sandbox, path).await,
        Transport::ExecTar => {
            let request = ExecRequest::new(["sh", "-c", STAT_SCRIPT, "sh", path]);
            let output = client.exec_output(sandbox, &request).await?;
            let text = String::from_utf8_lossy(&output.stdout);
            match (output.exit_code, read_stat(&text)) {
                (0, Some((kind, true))) => Ok(kind),
                _ => Err(SessionError::TarMissing {
                    name: sandbox.name.clone(),
                    path: path.to_string(),
                }),
            }
        }
    }
}

/// [`SessionError::Gone`] when the sandbox stopped or went away, else `Ok`.
async fn check_still_running<P: SessionPort>(
    client: &Sandboxes<P>,
    sandbox: &Sandbox,
    step: &'static str,
) -> Result<(), SessionError> {
    match client.inspect_container(sandbox).await {
        Ok(inspect) if is_running(&inspect) => Ok(()),
        Ok(_) | Err(SessionError::Launch(ExecError::NoSuchContainer { .. })) => {
            Err(SessionError::Gone {
                name: sandbox.name.clone(),
                step,
            })
        }
        Err(error) => Err(error),
    }
}

/// `chunks` relayed unchanged, their bytes added to `counted`.
fn counting(mut chunks: Receiver<Vec<u8>>, counted: Arc<AtomicU64>) -> Receiver<Vec<u8>> {
    let (forward, forwarded) = channel(CHUNKS_IN_FLIGHT);
    tokio::spawn(async move {
        while let Some(chunk) = chunks.recv().await {
            counted.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            if forward.send(chunk).await.is_err() {
                break;
            }
        }
    });
    forwarded
}

/// Copies the host's `source` into the sandbox: into `target` when it is a directory, as
/// `target` otherwise ([`SandboxClient::upload`]).
pub async fn upload<P: SessionPort>(
    client: &Sandboxes<P>,
    sandbox: &Sandbox,
    source: &Path,
    target: &str,
) -> Result<CopyReport, SessionError> {
    let inspect = client.inspect_container(sandbox).await?;
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
    let (sender, receiver) = channel::<Vec<u8>>(CHUNKS_IN_FLIGHT);
    let landing_entry = entry.clone();
    let packer =
        tokio::task::spawn_blocking(move || pack(&source, &entry, ChunkWriter::new(sender)));
    let counted = Arc::new(AtomicU64::new(0));
    let chunks = counting(receiver, counted.clone());
    let result = match how {
        Transport::Archive => {
            client
                .port()
                .archive_put(sandbox, &directory, &landing, chunks)
                .await
        }
        Transport::ExecTar => {
            // A new entry lands all or nothing; into an existing one, tar merges as it goes.
            let command = if kind == PathKind::Missing {
                extract_new_command(&directory, &landing_entry)
            } else {
                extract_command(&directory)
            };
            match client
                .port()
                .exec_fed(sandbox, &ExecRequest::new(command), client.env(), chunks)
                .await
            {
                Ok((0, _)) => Ok(()),
                Ok((126 | 127, _)) => Err(SessionError::TarMissing {
                    name: name.clone(),
                    path: landing.clone(),
                }),
                Ok((_, output)) => Err(SessionError::CopyFailed {
                    name: name.clone(),
                    path: landing.clone(),
                    message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
                }),
                Err(error) => Err(error),
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
        bytes: counted.load(Ordering::Relaxed),
    })
}

/// Copies the sandbox's `source` to the host: into `target` when it is a directory, as
/// `target` otherwise; a partly written new tree is removed on failure
/// ([`SandboxClient::download`]).
pub async fn download<P: SessionPort>(
    client: &Sandboxes<P>,
    sandbox: &Sandbox,
    source: &str,
    target: &Path,
) -> Result<CopyReport, SessionError> {
    let inspect = client.inspect_container(sandbox).await?;
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
    let (sender, receiver) = channel::<Vec<u8>>(CHUNKS_IN_FLIGHT);
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
        Transport::Archive => client.port().archive_get(sandbox, &path, sender).await,
        Transport::ExecTar => {
            let request = ExecRequest::new(create_command(&path));
            match client
                .port()
                .exec_drained(sandbox, &request, client.env(), sender)
                .await
            {
                Ok((0, _)) => Ok(()),
                Ok((code, stderr)) => match check_still_running(client, sandbox, "copy").await {
                    Ok(()) => Err(SessionError::CopyFailed {
                        name: name.clone(),
                        path: path.clone(),
                        message: format!(
                            "tar exited with {code}: {}",
                            String::from_utf8_lossy(&stderr).trim()
                        ),
                    }),
                    Err(error) => Err(error),
                },
                Err(error) => Err(error),
            }
        }
    };
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
