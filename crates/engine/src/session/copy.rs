//! How a copy into or out of a sandbox is made, decided the same way for both backends: the
//! container path, which transport reaches it, and where the tree lands.
//!
//! Two transports carry a tar stream. The daemon's archive endpoint (`docker cp`,
//! `PUT`/`GET /containers/{id}/archive`) sees the container's image layers, volumes and binds,
//! but not its tmpfs mounts (it would read or write the directory hidden beneath them), and it
//! refuses any write outside a mount when the root file system is read-only. There, the tar
//! streams through `exec` instead (`tar -x` / `tar -c` in the container, as `kubectl cp`
//! does), which needs the container running with `sh` and `tar` in its image. Both backends
//! pick the transport with [`transport`] from the same inspect, so they write the same files.

use bollard::models::ContainerInspectResponse;

use super::error::SessionError;
use super::types::PathKind;

/// Which transport carries a copy's tar stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// The daemon's archive endpoint.
    Archive,
    /// `tar` run through `exec` in the container.
    ExecTar,
}

/// The direction of a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the host into the container.
    Upload,
    /// From the container to the host.
    Download,
}

/// An absolute, normalized container path: a relative path is taken from the container's
/// working directory (`/` when it has none); `.` parts and repeated or trailing slashes go.
/// Refused: a NUL byte, any `..` part, and the root itself (a copy names what it copies).
pub fn container_path(raw: &str, workdir: Option<&str>) -> Result<String, SessionError> {
    let refuse = |reason| SessionError::BadContainerPath {
        path: raw.to_string(),
        reason,
    };
    if raw.contains('\0') {
        return Err(refuse("it contains a NUL byte"));
    }
    if raw.is_empty() {
        return Err(refuse("it is empty"));
    }
    let base = if raw.starts_with('/') {
        String::new()
    } else {
        workdir.unwrap_or("/").to_string()
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in base.split('/').chain(raw.split('/')) {
        match part {
            "" | "." => {}
            ".." => return Err(refuse("it contains `..`")),
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err(refuse("it is the root directory"));
    }
    Ok(format!("/{}", parts.join("/")))
}

/// The parent directory and the last component of a normalized container path.
pub fn split(path: &str) -> (String, String) {
    match path.rsplit_once('/') {
        Some(("", name)) => ("/".to_string(), name.to_string()),
        Some((parent, name)) => (parent.to_string(), name.to_string()),
        None => ("/".to_string(), path.to_string()),
    }
}

fn within(path: &str, mount: &str) -> bool {
    let mount = mount.trim_end_matches('/');
    mount.is_empty() || path == mount || path.starts_with(&format!("{mount}/"))
}

/// Which transport reaches `path` (normalized) in this container: [`Transport::ExecTar`] when
/// the deepest mount holding it is a tmpfs, [`Transport::Archive`] otherwise. An upload to a
/// read-only mount, or outside every mount of a read-only root, is refused
/// ([`SessionError::ReadOnly`]); so is an `ExecTar` copy of a stopped container.
pub fn transport(
    inspect: &ContainerInspectResponse,
    name: &str,
    path: &str,
    direction: Direction,
    running: bool,
) -> Result<Transport, SessionError> {
    // (mount target, is tmpfs, writable)
    let mut mounts: Vec<(String, bool, bool)> = Vec::new();
    for mount in inspect.mounts.iter().flatten() {
        let Some(target) = mount.destination.clone() else {
            continue;
        };
        let tmpfs = mount.typ.as_deref() == Some("tmpfs");
        mounts.push((target, tmpfs, mount.rw.unwrap_or(true)));
    }
    let host = inspect.host_config.as_ref();
    for (target, options) in host
        .and_then(|host| host.tmpfs.as_ref())
        .into_iter()
        .flatten()
    {
        let read_only = options.split(',').any(|option| option == "ro");
        mounts.push((target.clone(), true, !read_only));
    }
    let read_only_root = host.and_then(|host| host.readonly_rootfs).unwrap_or(false);
    let deepest = mounts
        .iter()
        .filter(|(target, _, _)| within(path, target))
        .max_by_key(|(target, _, _)| target.trim_end_matches('/').len());
    let read_only = |reason: String| SessionError::ReadOnly {
        name: name.to_string(),
        path: path.to_string(),
        reason,
    };
    let chosen = match deepest {
        Some((target, tmpfs, writable)) => {
            if direction == Direction::Upload && !writable {
                return Err(read_only(format!("{target} is mounted read-only")));
            }
            if *tmpfs {
                Transport::ExecTar
            } else {
                Transport::Archive
            }
        }
        None if direction == Direction::Upload && read_only_root => {
            return Err(read_only("its root file system is read-only".to_string()))
        }
        None => Transport::Archive,
    };
    if chosen == Transport::ExecTar && !running {
        return Err(SessionError::NotRunning {
            name: name.to_string(),
        });
    }
    Ok(chosen)
}

/// Where an upload lands: the directory the tar is extracted in and the name its top entry
/// gets. Into an existing directory `DST` the source keeps its name (`DST/NAME`); otherwise
/// the copy is named `DST` (its parent must exist). A source directory cannot replace a file,
/// and a `DST/` that is not a directory is an error.
pub fn upload_placement(
    name: &str,
    raw_target: &str,
    target: &str,
    kind: PathKind,
    source_name: &str,
    source_is_dir: bool,
) -> Result<(String, String), SessionError> {
    match kind {
        PathKind::Directory => Ok((target.to_string(), source_name.to_string())),
        PathKind::Other if source_is_dir => Err(SessionError::CopyFailed {
            name: name.to_string(),
            path: target.to_string(),
            message: "cannot replace a file with a directory".to_string(),
        }),
        _ if raw_target.ends_with('/') => Err(SessionError::NoSuchPath {
            name: name.to_string(),
            path: target.to_string(),
        }),
        _ => {
            let (parent, last) = split(target);
            Ok((parent, last))
        }
    }
}

/// The script that says what a path is, run through exec (`sh -c SCRIPT sh PATH`): prints
/// `dir`, `other` or `missing`, and `notar` first when the image has no `tar`.
pub const STAT_SCRIPT: &str = "command -v tar >/dev/null 2>&1 || echo notar; if [ -d \"$1\" ]; then echo dir; elif [ -e \"$1\" ] || [ -L \"$1\" ]; then echo other; else echo missing; fi";

/// Reads [`STAT_SCRIPT`]'s output: the path's kind, and whether `tar` is there.
pub fn read_stat(output: &str) -> Option<(PathKind, bool)> {
    let mut tar = true;
    let mut kind = None;
    for line in output.lines() {
        match line.trim() {
            "notar" => tar = false,
            "dir" => kind = Some(PathKind::Directory),
            "other" => kind = Some(PathKind::Other),
            "missing" => kind = Some(PathKind::Missing),
            _ => {}
        }
    }
    Some((kind?, tar))
}

/// The exec command that extracts a tar from stdin into `directory`, owned by the exec user.
pub fn extract_command(directory: &str) -> Vec<String> {
    ["tar", "-x", "-o", "-f", "-", "-C", directory]
        .map(str::to_string)
        .to_vec()
}

/// The exec command that extracts a tar from stdin as the new entry `entry` of `directory`,
/// all or nothing: it is unpacked in a fresh directory beside it and moved into place only
/// once complete, so a copy that is interrupted (Ctrl-C, a lost connection: tar reads a short
/// stream) leaves nothing in the container.
pub fn extract_new_command(directory: &str, entry: &str) -> Vec<String> {
    [
        "sh",
        "-c",
        "set -e; staging=$(mktemp -d \"$1/.agentc-cp.XXXXXX\"); trap 'rm -rf \"$staging\"' EXIT; tar -x -o -f - -C \"$staging\"; mv \"$staging/$2\" \"$1/$2\"",
        "sh",
        directory,
        entry,
    ]
    .map(str::to_string)
    .to_vec()
}

/// The exec command that writes a tar of `path` to stdout, its top entry named after the last
/// component, as the archive endpoint names it.
pub fn create_command(path: &str) -> Vec<String> {
    let (parent, last) = split(path);
    ["tar", "-c", "-f", "-", "-C", &parent, &last]
        .map(str::to_string)
        .to_vec()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use bollard::models::{HostConfig, MountPoint};

    use super::*;
    use agentc_policy::Hinted;

    #[test]
    fn container_paths_are_absolute_and_free_of_dot_dot() {
        assert_eq!(container_path("/tmp//a/./b/", None).unwrap(), "/tmp/a/b");
        assert_eq!(container_path("out", Some("/work")).unwrap(), "/work/out");
        assert_eq!(container_path("out", None).unwrap(), "/out");
        for bad in ["/tmp/../etc", "../x", "/a\0b", "", "/", "/."] {
            assert!(container_path(bad, Some("/w")).is_err(), "{bad:?}");
        }
        assert_eq!(split("/tmp/x"), ("/tmp".into(), "x".into()));
        assert_eq!(split("/x"), ("/".into(), "x".into()));
    }

    fn hardened() -> ContainerInspectResponse {
        ContainerInspectResponse {
            host_config: Some(HostConfig {
                readonly_rootfs: Some(true),
                tmpfs: Some(HashMap::from([
                    ("/tmp".to_string(), "rw,noexec".to_string()),
                    ("/ro".to_string(), "ro".to_string()),
                ])),
                ..Default::default()
            }),
            mounts: Some(vec![
                MountPoint {
                    typ: Some("volume".into()),
                    destination: Some("/home/claude".into()),
                    rw: Some(true),
                    ..Default::default()
                },
                MountPoint {
                    typ: Some("bind".into()),
                    destination: Some("/data".into()),
                    rw: Some(false),
                    ..Default::default()
                },
                MountPoint {
                    typ: Some("tmpfs".into()),
                    destination: Some("/home/claude/cache".into()),
                    rw: Some(true),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }
    }

    #[test]
    fn tmpfs_goes_through_exec_and_the_read_only_root_refuses_writes() {
        let inspect = hardened();
        let plan = |path: &str, direction| transport(&inspect, "box", path, direction, true);
        use Direction::*;
        assert_eq!(plan("/tmp/x", Upload).unwrap(), Transport::ExecTar);
        assert_eq!(plan("/tmp", Download).unwrap(), Transport::ExecTar);
        assert_eq!(plan("/home/claude/a", Upload).unwrap(), Transport::Archive);
        assert_eq!(
            plan("/home/claude/cache/a", Upload).unwrap(),
            Transport::ExecTar
        );
        assert_eq!(plan("/etc/passwd", Download).unwrap(), Transport::Archive);
        let error = plan("/etc/x", Upload).unwrap_err();
        assert!(
            error
                .with_hint()
                .to_string()
                .contains("root file system is read-only"),
            "{error}"
        );
        let error = plan("/data/x", Upload).unwrap_err();
        assert!(
            error
                .with_hint()
                .to_string()
                .contains("/data is mounted read-only"),
            "{error}"
        );
        assert!(plan("/ro/x", Upload).is_err());
        assert!(
            plan("/tmpfoo", Upload).is_err(),
            "/tmpfoo is not under /tmp"
        );
        let stopped = transport(&inspect, "box", "/tmp/x", Upload, false).unwrap_err();
        assert!(matches!(stopped, SessionError::NotRunning { .. }));
    }

    #[test]
    fn uploads_land_inside_directories_or_under_the_given_name() {
        let place = |raw: &str, kind, dir| {
            let target = container_path(raw, None).unwrap();
            upload_placement("box", raw, &target, kind, "src", dir)
        };
        assert_eq!(
            place("/tmp", PathKind::Directory, true).unwrap(),
            ("/tmp".into(), "src".into())
        );
        assert_eq!(
            place("/tmp/new", PathKind::Missing, true).unwrap(),
            ("/tmp".into(), "new".into())
        );
        assert_eq!(
            place("/tmp/f", PathKind::Other, false).unwrap(),
            ("/tmp".into(), "f".into())
        );
        assert!(place("/tmp/f", PathKind::Other, true).is_err());
        assert!(place("/tmp/new/", PathKind::Missing, false).is_err());
    }

    #[test]
    fn the_stat_script_output_is_read() {
        assert_eq!(read_stat("dir\n"), Some((PathKind::Directory, true)));
        assert_eq!(
            read_stat("notar\nmissing\n"),
            Some((PathKind::Missing, false))
        );
        assert_eq!(read_stat("sh: not found"), None);
        assert_eq!(
            create_command("/tmp/d"),
            ["tar", "-c", "-f", "-", "-C", "/tmp", "d"]
        );
    }
}
