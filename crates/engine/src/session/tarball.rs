//! The host side of a copy: packing a host file or tree into a tar stream, and unpacking a
//! container's tar stream onto the host without letting any entry leave the copied tree.
//! Both backends use these, whichever transport carries the stream, so a copy writes the same
//! bytes and modes through either.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use tar::{EntryType, Header, HeaderMode};

use super::error::SessionError;

/// The size of the chunks a tar stream is cut into between the host and the transport.
pub const CHUNK: usize = 256 * 1024;

/// Writes a tar of `source` (a file, or a directory and everything below it; a symbolic link
/// at the top is followed, those below are kept as links) whose top entry is `name`. Modes and
/// times are kept; owners are written as 0 (root) with no names, and the receiving side gives
/// the files to the container's user. Entries come in name order, so the stream is the same
/// for the same tree.
pub fn pack(source: &Path, name: &str, writer: impl Write) -> Result<(), SessionError> {
    let host = |reason: String| SessionError::HostPath {
        path: source.display().to_string(),
        reason,
    };
    let metadata = std::fs::metadata(source).map_err(|error| host(error.to_string()))?;
    let mut builder = tar::Builder::new(writer);
    builder.mode(HeaderMode::Complete);
    builder.follow_symlinks(false);
    append(&mut builder, source, Path::new(name), &metadata)
        .map_err(|error| host(error.to_string()))?;
    builder
        .into_inner()
        .and_then(|mut writer| writer.flush())
        .map_err(|error| host(format!("cannot write the tar stream: {error}")))
}

fn header(metadata: &std::fs::Metadata) -> Header {
    let mut header = Header::new_gnu();
    header.set_metadata_in_mode(metadata, HeaderMode::Complete);
    header.set_uid(0);
    header.set_gid(0);
    let _ = header.set_username("");
    let _ = header.set_groupname("");
    header
}

fn append<W: Write>(
    builder: &mut tar::Builder<W>,
    path: &Path,
    name: &Path,
    metadata: &std::fs::Metadata,
) -> std::io::Result<()> {
    let kind = metadata.file_type();
    if kind.is_dir() {
        let mut header = header(metadata);
        header.set_size(0);
        builder.append_data(&mut header, name, std::io::empty())?;
        let mut children: Vec<_> = std::fs::read_dir(path)?
            .map(|entry| entry.map(|entry| entry.file_name()))
            .collect::<Result<_, _>>()?;
        children.sort();
        for child in children {
            let child_path = path.join(&child);
            let child_metadata = std::fs::symlink_metadata(&child_path)?;
            append(builder, &child_path, &name.join(&child), &child_metadata)?;
        }
        Ok(())
    } else if kind.is_symlink() {
        let target = std::fs::read_link(path)?;
        let mut header = header(metadata);
        header.set_entry_type(EntryType::Symlink);
        header.set_size(0);
        builder.append_link(&mut header, name, target)
    } else if kind.is_file() {
        let mut header = header(metadata);
        let file = std::fs::File::open(path)?;
        builder.append_data(&mut header, name, file)
    } else {
        Err(std::io::Error::other(format!(
            "{} is neither a file, a directory nor a symbolic link",
            path.display()
        )))
    }
}

/// What [`unpack`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unpacked {
    /// Entries written (files, directories, links).
    pub entries: u64,
    /// Bytes of file content written.
    pub bytes: u64,
    /// Special files (devices, fifos) left out.
    pub skipped: u64,
}

/// Unpacks a container's tar stream into the host directory `directory`: every entry must lie
/// under the top entry `top`, which is written as `rename`. Refused, before anything of it is
/// written ([`SessionError::HostileArchive`]): an absolute path, a `..` part, an entry outside
/// `top`, a link whose source leaves the tree, and any entry whose parent directory resolves
/// (through a symbolic link an earlier entry made) outside it. Modes and times are kept;
/// special files are skipped.
pub fn unpack(
    reader: impl Read,
    directory: &Path,
    top: &str,
    rename: &str,
    container: &str,
) -> Result<Unpacked, SessionError> {
    let hostile = |reason: String| SessionError::HostileArchive {
        name: container.to_string(),
        reason,
    };
    let io = |step: &'static str| move |source| SessionError::Io { step, source };
    let root = std::fs::canonicalize(directory).map_err(|error| SessionError::HostPath {
        path: directory.display().to_string(),
        reason: error.to_string(),
    })?;
    let tree = root.join(rename);
    let mut archive = tar::Archive::new(reader);
    archive.set_preserve_permissions(false);
    archive.set_preserve_mtime(true);
    archive.set_unpack_xattrs(false);
    archive.set_overwrite(true);
    let mut unpacked = Unpacked::default();
    let entries = archive.entries().map_err(io("read the tar stream"))?;
    for entry in entries {
        let mut entry = entry.map_err(io("read the tar stream"))?;
        let raw = entry
            .path()
            .map_err(io("read the tar stream"))?
            .into_owned();
        let relative = relocate(&raw, top, rename)
            .ok_or_else(|| hostile(format!("entry {} is not under {top}", raw.display())))?;
        let target = root.join(&relative);
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir() || kind.is_symlink() || kind.is_hard_link()) {
            unpacked.skipped += 1;
            continue;
        }
        if let Some(parent) = target.parent() {
            if parent != root {
                std::fs::create_dir_all(parent).map_err(io("create a directory on the host"))?;
            }
            let resolved =
                std::fs::canonicalize(parent).map_err(io("create a directory on the host"))?;
            if resolved != root && !resolved.starts_with(&tree) {
                return Err(hostile(format!(
                    "entry {} would be written through a link to {}",
                    raw.display(),
                    resolved.display()
                )));
            }
        }
        if kind.is_hard_link() {
            let link = entry
                .link_name()
                .map_err(io("read the tar stream"))?
                .ok_or_else(|| hostile(format!("hard link {} has no source", raw.display())))?
                .into_owned();
            let source = relocate(&link, top, rename)
                .map(|relative| root.join(relative))
                .ok_or_else(|| hostile(format!("hard link {} leaves the tree", raw.display())))?;
            let resolved = std::fs::canonicalize(&source).map_err(|_| {
                hostile(format!(
                    "hard link {} has no source in the tree",
                    raw.display()
                ))
            })?;
            if !resolved.starts_with(&tree) {
                return Err(hostile(format!(
                    "hard link {} leaves the tree",
                    raw.display()
                )));
            }
            let _ = std::fs::remove_file(&target);
            std::fs::hard_link(&resolved, &target).map_err(io("write a file on the host"))?;
        } else {
            if kind.is_dir() && target.is_dir() && !target.is_symlink() {
                // An existing directory is merged into, as `cp -r` does.
            }
            entry
                .unpack(&target)
                .map_err(io("write a file on the host"))?;
            if kind.is_file() {
                unpacked.bytes += entry.header().size().unwrap_or(0);
            }
        }
        unpacked.entries += 1;
    }
    Ok(unpacked)
}

/// `path` with its first component `top` replaced by `rename`, when it is a plain relative
/// path under `top`.
fn relocate(path: &Path, top: &str, rename: &str) -> Option<PathBuf> {
    let mut components = path.components();
    match components.next()? {
        Component::Normal(first) if first == top => {}
        _ => return None,
    }
    let mut relocated = PathBuf::from(rename);
    for component in components {
        match component {
            Component::Normal(part) => relocated.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(relocated)
}

/// The source of an upload: its path, the name it is copied under, whether it is a
/// directory.
pub fn host_source(source: &Path) -> Result<(PathBuf, String, bool), SessionError> {
    let host = |reason: String| SessionError::HostPath {
        path: source.display().to_string(),
        reason,
    };
    let metadata = std::fs::metadata(source).map_err(|error| host(error.to_string()))?;
    let canonical = std::fs::canonicalize(source).map_err(|error| host(error.to_string()))?;
    let name = canonical
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| host("has no name to copy under (the root, or not UTF-8)".to_string()))?
        .to_string();
    Ok((canonical, name, metadata.is_dir()))
}

/// Where a download lands on the host: the directory it is unpacked in and the name its top
/// entry gets.
pub fn host_placement(target: &Path, top: &str) -> Result<(PathBuf, String), SessionError> {
    if target.is_dir() {
        return Ok((target.to_path_buf(), top.to_string()));
    }
    let name = target
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| SessionError::HostPath {
            path: target.display().to_string(),
            reason: "names no file (or is not UTF-8)".to_string(),
        })?
        .to_string();
    let parent = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Err(SessionError::HostPath {
            path: target.display().to_string(),
            reason: format!("its directory {} does not exist", parent.display()),
        });
    }
    Ok((parent, name))
}

/// Removes what a failed or cancelled download wrote, when the path did not exist before.
pub struct Partial {
    /// The path to remove; `None` once the copy succeeded.
    pub path: Option<PathBuf>,
}

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            if path.is_dir() && !path.is_symlink() {
                let _ = std::fs::remove_dir_all(&path);
            } else {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

/// A [`Write`] that cuts what is written into chunks sent over a tokio channel, for a blocking
/// packer feeding an async transport. Dropping it ends the stream.
#[derive(Debug)]
pub struct ChunkWriter {
    sender: tokio::sync::mpsc::Sender<Vec<u8>>,
    buffer: Vec<u8>,
}

impl ChunkWriter {
    /// A writer sending to `sender`.
    pub fn new(sender: tokio::sync::mpsc::Sender<Vec<u8>>) -> ChunkWriter {
        ChunkWriter {
            sender,
            buffer: Vec::with_capacity(CHUNK),
        }
    }

    fn send(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK));
        self.sender.blocking_send(chunk).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the transport stopped reading",
            )
        })
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= CHUNK {
            self.send()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

impl Drop for ChunkWriter {
    fn drop(&mut self) {
        let _ = self.send();
    }
}

/// A [`Read`] over chunks received from a tokio channel, for a blocking unpacker fed by an
/// async transport. The stream ends when every sender is dropped.
#[derive(Debug)]
pub struct ChunkReader {
    receiver: tokio::sync::mpsc::Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    offset: usize,
}

impl ChunkReader {
    /// A reader receiving from `receiver`.
    pub fn new(receiver: tokio::sync::mpsc::Receiver<Vec<u8>>) -> ChunkReader {
        ChunkReader {
            receiver,
            chunk: Vec::new(),
            offset: 0,
        }
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        while self.offset == self.chunk.len() {
            match self.receiver.blocking_recv() {
                Some(chunk) => {
                    self.chunk = chunk;
                    self.offset = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buffer.len().min(self.chunk.len() - self.offset);
        buffer[..n].copy_from_slice(&self.chunk[self.offset..self.offset + n]);
        self.offset += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use agentc_policy::Hinted;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("sub")).unwrap();
        std::fs::write(src.join("a.sh"), b"#!/bin/sh\necho a\n").unwrap();
        std::fs::set_permissions(src.join("a.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
        std::fs::write(src.join("sub/b"), vec![7u8; 70_000]).unwrap();
        std::os::unix::fs::symlink("a.sh", src.join("link")).unwrap();
        dir
    }

    #[test]
    fn a_tree_round_trips_with_its_modes_and_links() {
        let dir = tree();
        let mut stream = Vec::new();
        pack(&dir.path().join("src"), "src", &mut stream).unwrap();
        let out = tempfile::tempdir().unwrap();
        let unpacked = unpack(&stream[..], out.path(), "src", "copy", "box").unwrap();
        assert_eq!(unpacked.entries, 5);
        assert_eq!(unpacked.bytes, 70_000 + 17);
        let copy = out.path().join("copy");
        assert_eq!(
            std::fs::read(copy.join("sub/b")).unwrap(),
            vec![7u8; 70_000]
        );
        let mode = std::fs::metadata(copy.join("a.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o750);
        assert_eq!(
            std::fs::read_link(copy.join("link")).unwrap(),
            Path::new("a.sh")
        );
        let mut again = Vec::new();
        pack(&dir.path().join("src"), "src", &mut again).unwrap();
        assert_eq!(stream, again, "the same tree packs to the same stream");
    }

    fn hostile_stream(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        build(&mut builder);
        builder.into_inner().unwrap()
    }

    fn file(builder: &mut tar::Builder<Vec<u8>>, raw_path: &[u8], data: &[u8]) {
        let mut header = Header::new_old();
        header.as_old_mut().name[..raw_path.len()].copy_from_slice(raw_path);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(EntryType::Regular);
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }

    #[test]
    fn entries_leaving_the_tree_are_refused_and_nothing_escapes() {
        let out = tempfile::tempdir().unwrap();
        let dest = out.path().join("dest");
        std::fs::create_dir(&dest).unwrap();
        for raw in [&b"top/../escaped"[..], b"/abs", b"other/x", b"../x"] {
            let stream = hostile_stream(|builder| file(builder, raw, b"x"));
            let error = unpack(&stream[..], &dest, "top", "top", "box").unwrap_err();
            assert!(
                matches!(error, SessionError::HostileArchive { .. }),
                "{error}"
            );
        }
        // A link to the outside, then a file written through it.
        let stream = hostile_stream(|builder| {
            let mut header = Header::new_gnu();
            header.set_entry_type(EntryType::Symlink);
            header.set_size(0);
            header.set_mode(0o777);
            builder
                .append_link(&mut header, "top/link", out.path())
                .unwrap();
            file(builder, b"top/link/escaped", b"x");
        });
        let error = unpack(&stream[..], &dest, "top", "top", "box").unwrap_err();
        assert!(
            error.with_hint().to_string().contains("through a link"),
            "{error}"
        );
        assert!(!out.path().join("escaped").exists());
    }

    #[test]
    fn chunks_flow_between_a_writer_and_a_reader() {
        let (sender, receiver) = tokio::sync::mpsc::channel(4);
        let writer = std::thread::spawn(move || {
            let mut writer = ChunkWriter::new(sender);
            for _ in 0..10 {
                writer.write_all(&[1u8; 100_000]).unwrap();
            }
        });
        let mut all = Vec::new();
        ChunkReader::new(receiver).read_to_end(&mut all).unwrap();
        writer.join().unwrap();
        assert_eq!(all.len(), 1_000_000);
    }
}
