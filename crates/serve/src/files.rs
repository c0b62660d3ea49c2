//! `agentc serve`'s files: `read_file`, `write_file`, `read_tar` and `write_tar`, each one
//! exec of a small script (`cat`, `tar`) as the sandbox's user sees the path (a tmpfs, past the
//! read-only root), through the session's runner when it takes it; a tar is checked before it
//! is extracted. The image needs `sh`, `cat`, `mkdir`, `chmod` and `tar`.

use std::path::Path;

use agentc_engine::session::{
    ExecOutput, ExecRequest, ExecStdin, SandboxClient, SessionError, SessionPort,
};
use serde_json::Value;

use super::common::{invalid, session, session_error};
use super::exec::{exec_tag, run_on_runner};
use super::protocol::*;
use super::Server;
use agentc_host::EXIT_DOCKER;

/// An absolute container path, or the refusal of any other.
fn absolute(path: &str) -> Result<String, RpcError> {
    if !path.starts_with('/') {
        return Err(invalid(
            format!("path {path:?} is not absolute"),
            "give the container path from `/`",
        ));
    }
    agentc_engine::session::copy::container_path(path, None).map_err(session_error)
}

/// Reads the file `$1` to stdout: 44 when it is missing, 45 when it is a directory.
pub const READ_FILE: &str =
    "[ -d \"$1\" ] && exit 45; [ -e \"$1\" ] || exit 44; exec cat -- \"$1\"";
/// Writes stdin to the file `$1`, its directory made first, with mode `$2` (when empty: a
/// file that exists keeps its mode, a new one gets 644).
pub const WRITE_FILE: &str = "d=$(dirname -- \"$1\") && mkdir -p -- \"$d\" || exit 1; m=$2; [ -z \"$m\" ] && { [ -e \"$1\" ] && m=keep || m=644; }; cat > \"$1\" || exit 1; [ \"$m\" = keep ] || chmod \"$m\" \"$1\"";
/// Writes a tar of the directory `$1`'s contents to stdout: 44 when it is missing.
pub const READ_TAR: &str = "[ -d \"$1\" ] || exit 44; cd -- \"$1\" && exec tar -c -f - .";
/// Extracts the tar on stdin into the directory `$1`, made first.
pub const WRITE_TAR: &str = "mkdir -p -- \"$1\" && cd -- \"$1\" && exec tar -x -o -f -";

/// Runs one of the file scripts in the sandbox, `stdin` on its input; its stdout on success.
async fn file_script<P: SessionPort>(
    server: &Server<'_, P>,
    sandbox: &str,
    user: Option<&str>,
    script: &str,
    args: &[&str],
    stdin: Option<Vec<u8>>,
) -> Result<Vec<u8>, RpcError> {
    let session = session(server, sandbox).await?;
    let path = args.first().copied().unwrap_or_default().to_string();
    let mut command = vec![
        "sh".to_string(),
        "-c".to_string(),
        script.to_string(),
        "sh".to_string(),
    ];
    command.extend(args.iter().map(|arg| arg.to_string()));
    let mut request = ExecRequest::new(command);
    request.user = user.map(str::to_string);
    if let Some(stdin) = stdin {
        request.stdin = ExecStdin::Bytes(stdin);
    }
    let tag = exec_tag();
    let id = Value::String(format!("internal-{tag}"));
    let output = match run_on_runner(server, &id, &session, &request, &[], &tag, None).await {
        // No timeout: it has an exit code.
        Some(ran) => ran.map(|ran| ExecOutput {
            exit_code: ran.exit_code.unwrap_or(EXIT_DOCKER.into()),
            stdout: ran.stdout.0,
            stderr: ran.stderr.0,
        })?,
        None => server
            .client()
            .exec_output(&session.sandbox, &request)
            .await
            .map_err(session_error)?,
    };
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    match output.exit_code {
        0 => Ok(output.stdout),
        44 => Err(session_error(SessionError::NoSuchPath {
            name: session.sandbox.name.clone(),
            path,
        })),
        45 => Err(invalid(
            format!("{path} in {} is a directory", session.sandbox.name),
            "read a directory with read_tar",
        )),
        126 | 127 => Err(session_error(SessionError::TarMissing {
            name: session.sandbox.name.clone(),
            path,
        })),
        code => Err(session_error(SessionError::CopyFailed {
            name: session.sandbox.name.clone(),
            path,
            message: format!("exited with {code}: {stderr}"),
        })),
    }
}

/// `read_file` (`script` [`READ_FILE`]) and `read_tar` ([`READ_TAR`]): the bytes the script
/// writes for the path.
pub async fn read<P: SessionPort>(
    server: &Server<'_, P>,
    params: PathParams,
    script: &str,
) -> Result<Data, RpcError> {
    let path = absolute(&params.path)?;
    let user = params.user.as_deref();
    let bytes = file_script(server, &params.sandbox, user, script, &[&path], None).await?;
    Ok(Data {
        data: Bytes64(bytes),
    })
}

/// `write_file`: the bytes as the file, its directory made, its mode as asked or kept.
pub async fn write_file<P: SessionPort>(
    server: &Server<'_, P>,
    params: WriteParams,
) -> Result<Written, RpcError> {
    let path = absolute(&params.path)?;
    if let Some(mode) = params.mode.filter(|mode| *mode > 0o7777) {
        return Err(invalid(
            format!("mode {mode:o} is not a file mode"),
            "give permission bits, such as 0o644 (420)",
        ));
    }
    let bytes = params.data.0.len() as u64;
    let mode = params
        .mode
        .map(|mode| format!("{mode:o}"))
        .unwrap_or_default();
    file_script(
        server,
        &params.sandbox,
        params.user.as_deref(),
        WRITE_FILE,
        &[&path, &mode],
        Some(params.data.0),
    )
    .await?;
    Ok(Written { bytes })
}

/// `write_tar`: the tar checked, then extracted into the directory (made when missing).
pub async fn write_tar<P: SessionPort>(
    server: &Server<'_, P>,
    params: WriteParams,
) -> Result<Written, RpcError> {
    let path = absolute(&params.path)?;
    check_tar(&params.data.0)?;
    let bytes = params.data.0.len() as u64;
    file_script(
        server,
        &params.sandbox,
        params.user.as_deref(),
        WRITE_TAR,
        &[&path],
        Some(params.data.0),
    )
    .await?;
    Ok(Written { bytes })
}

/// Refuses a tar whose entries would land outside the directory it is extracted into: an
/// absolute path, a `..` part, or a link leading out.
fn check_tar(bytes: &[u8]) -> Result<(), RpcError> {
    let refuse = |why: String| {
        invalid(
            format!("the tar is refused: {why}"),
            "give a tar whose paths are relative, without `..`, and whose links stay inside",
        )
    };
    let mut archive = tar::Archive::new(bytes);
    let entries = archive
        .entries()
        .map_err(|error| refuse(format!("it cannot be read: {error}")))?;
    for entry in entries {
        let entry = entry.map_err(|error| refuse(format!("it cannot be read: {error}")))?;
        let path = entry
            .path()
            .map_err(|error| refuse(format!("an entry's path cannot be read: {error}")))?
            .into_owned();
        if escapes(&path) {
            return Err(refuse(format!("{} leads outside", path.display())));
        }
        if let Ok(Some(link)) = entry.link_name() {
            let base = path.parent().unwrap_or(Path::new(""));
            let kind = entry.header().entry_type();
            let resolved = if kind.is_hard_link() {
                link.to_path_buf()
            } else {
                base.join(&link)
            };
            if link.is_absolute() || escapes(&resolved) {
                return Err(refuse(format!(
                    "{} links to {} outside",
                    path.display(),
                    link.display()
                )));
            }
        }
    }
    Ok(())
}

/// Whether a relative path climbs above its start (or is absolute).
fn escapes(path: &Path) -> bool {
    let mut depth: i64 = 0;
    for part in path.components() {
        match part {
            std::path::Component::Normal(_) => depth += 1,
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            std::path::Component::RootDir | std::path::Component::Prefix(_) => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tar of these entries, written as given (the tar crate refuses `..` in paths).
    fn tar_of(entries: &[(&str, Option<&str>)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, link) in entries {
            let mut header = tar::Header::new_old();
            header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_size(0);
            header.set_mode(0o644);
            match link {
                Some(target) => {
                    header.set_entry_type(tar::EntryType::Symlink);
                    header.as_old_mut().linkname[..target.len()].copy_from_slice(target.as_bytes());
                }
                None => header.set_entry_type(tar::EntryType::Regular),
            }
            header.set_cksum();
            builder.append(&header, std::io::empty()).unwrap();
        }
        builder.into_inner().unwrap()
    }

    #[test]
    fn a_tar_that_stays_inside_is_accepted() {
        let tar = tar_of(&[
            ("a/b.txt", None),
            ("a/link", Some("b.txt")),
            ("c/up", Some("../a/b.txt")),
        ]);
        assert!(check_tar(&tar).is_ok());
    }

    #[test]
    fn a_tar_leading_outside_is_refused() {
        for tar in [
            tar_of(&[("a/../../etc/passwd", None)]),
            tar_of(&[("link", Some("/etc"))]),
            tar_of(&[("a/link", Some("../../etc"))]),
        ] {
            let error = check_tar(&tar).unwrap_err();
            assert_eq!(error.code, AGENTC_ERROR);
            assert!(
                error.message.starts_with("the tar is refused: "),
                "{}",
                error.message
            );
            assert_eq!(error.data.unwrap().exit_code, 65);
        }
    }

    #[test]
    fn only_absolute_paths_are_taken() {
        assert!(absolute("relative/x").is_err());
        assert!(absolute("/a/../b").is_err());
        assert_eq!(absolute("/a//b/").unwrap(), "/a/b");
    }
}
