//! The copies of [`CliClient`]: `docker cp` with a tar on stdin or stdout where the archive
//! endpoint reaches, `docker exec -i CONTAINER tar` where it does not (a tmpfs, past a
//! read-only root), as [`agentc_backend_common::session::copy`] decides for both backends.

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use agentc_backend_common::session::copy::{
    container_path, create_command, extract_command, extract_new_command, read_stat, split,
    transport, upload_placement, Direction, Transport, STAT_SCRIPT,
};
use agentc_backend_common::session::tarball::{
    host_placement, host_source, pack, unpack, ChunkReader, ChunkWriter, Partial,
};
use agentc_backend_common::session::target::is_running;
use agentc_backend_common::session::{
    Captured, CopyReport, ExecRequest, PathKind, Sandbox, SandboxClient, SessionError,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{daemon_message, CliClient};

fn workdir(inspect: &bollard::models::ContainerInspectResponse) -> Option<String> {
    inspect
        .config
        .as_ref()
        .and_then(|config| config.working_dir.clone())
        .filter(|dir| !dir.is_empty())
}

fn spawn_failed(source: std::io::Error) -> SessionError {
    SessionError::CannotRunDocker {
        engine: agentc_backend_common::engine(),
        source,
    }
}

/// What `path` is in the container, asked through `how`; for an exec, whether `tar` is
/// there is checked too.
async fn stat(
    client: &CliClient,
    sandbox: &Sandbox,
    path: &str,
    how: Transport,
) -> Result<PathKind, SessionError> {
    match how {
        Transport::Archive => {
            let source = format!("{}:{path}", sandbox.id);
            let mut child = client
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
                return Ok(if header[156] == b'5' {
                    PathKind::Directory
                } else {
                    PathKind::Other
                });
            }
            let output = child.wait_with_output().await.map_err(spawn_failed)?;
            let message = daemon_message(&output.stderr);
            if message.contains("Could not find the file") || message.contains("No such") {
                Ok(PathKind::Missing)
            } else {
                Err(super::daemon("stat a container path", message))
            }
        }
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

pub(crate) async fn upload(
    client: &CliClient,
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
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
    let landing_entry = entry.clone();
    let packer =
        tokio::task::spawn_blocking(move || pack(&source, &entry, ChunkWriter::new(sender)));
    let mut child = match how {
        Transport::Archive => {
            let destination = format!("{}:{directory}", sandbox.id);
            client
                .command(&["cp", "--archive", "-", &destination])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(spawn_failed)?
        }
        Transport::ExecTar => {
            // A new entry lands all or nothing; into an existing one, tar merges as it goes.
            let command = if kind == PathKind::Missing {
                extract_new_command(&directory, &landing_entry)
            } else {
                extract_command(&directory)
            };
            let request = ExecRequest::new(command);
            client.spawn_exec(sandbox, &request, Stdio::piped(), true, false)?
        }
    };
    let counted = Arc::new(AtomicU64::new(0));
    let mut stdin = child.stdin.take().expect("piped");
    let count = counted.clone();
    let feeder = tokio::spawn(async move {
        while let Some(chunk) = receiver.recv().await {
            count.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            if stdin.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = stdin.shutdown().await;
    });
    let result = match how {
        Transport::Archive => {
            let output = child.wait_with_output().await.map_err(spawn_failed)?;
            if output.status.success() {
                Ok(())
            } else {
                Err(SessionError::CopyFailed {
                    name: name.clone(),
                    path: landing.clone(),
                    message: daemon_message(&output.stderr),
                })
            }
        }
        Transport::ExecTar => {
            let mut output = Captured::default();
            match client.finish_exec(sandbox, child, &mut output).await? {
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
    let _ = feeder.await;
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

pub(crate) async fn download(
    client: &CliClient,
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
    let mut child = match how {
        Transport::Archive => {
            let from = format!("{}:{path}", sandbox.id);
            client
                .command(&["cp", &from, "-"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(spawn_failed)?
        }
        Transport::ExecTar => {
            let request = ExecRequest::new(create_command(&path));
            client.spawn_exec(sandbox, &request, Stdio::null(), false, false)?
        }
    };
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let errors = tokio::spawn(async move {
        let mut all = Vec::new();
        let _ = stderr.read_to_end(&mut all).await;
        all
    });
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        match stdout.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if sender.send(buffer[..n].to_vec()).await.is_err() {
                    break;
                }
            }
        }
    }
    drop(sender);
    let status = child.wait().await.map_err(spawn_failed)?;
    let stderr = errors.await.unwrap_or_default();
    let unpacked = unpacker.await.map_err(|error| SessionError::Io {
        step: "unpack the copy",
        source: std::io::Error::other(error.to_string()),
    })?;
    if !status.success() {
        if how == Transport::ExecTar {
            client.check_still_running(sandbox, "copy").await?;
        }
        return Err(SessionError::CopyFailed {
            name: name.clone(),
            path,
            message: match how {
                Transport::Archive => daemon_message(&stderr),
                Transport::ExecTar => format!(
                    "tar exited with {}: {}",
                    status.code().unwrap_or(1),
                    String::from_utf8_lossy(&stderr).trim()
                ),
            },
        });
    }
    let unpacked = unpacked?;
    partial.path = None;
    Ok(CopyReport {
        transport: how,
        destination: landing.display().to_string(),
        bytes: unpacked.bytes,
    })
}
