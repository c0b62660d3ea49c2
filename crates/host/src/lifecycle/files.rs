//! Hashes of the host paths a profile mounts or trusts, for its lock: a file by its contents,
//! a directory by the tree hash of everything under it (links not followed, special files
//! named but not read), a writable mount not at all (the agent changes it by design).

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use agentc_lifecycle::lock::{FileKind, FileLock, FileUse};
use agentc_lifecycle::tree::{hex, tree_sha256, EntryKind, TreeEntry};
use sha2::{Digest, Sha256};

use crate::{Failure, EXIT_INVALID};

fn unreadable(path: &Path, error: std::io::Error) -> Failure {
    Failure::new(
        EXIT_INVALID,
        format!("{}: cannot read it to hash it: {error}", path.display()),
    )
    .hinted("the lock pins what the profile mounts; make it readable, or remove the mount")
}

/// The hex sha256 of a file's contents, read in blocks.
pub fn file_sha256(path: &Path) -> Result<String, Failure> {
    let mut file = std::fs::File::open(path).map_err(|error| unreadable(path, error))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = file
            .read(&mut buffer)
            .map_err(|error| unreadable(path, error))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex(&hasher.finalize()))
}

/// The tree hash of a directory.
pub fn tree_hash(root: &Path) -> Result<String, Failure> {
    let mut entries = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|error| unreadable(&dir, error))? {
            let entry = entry.map_err(|error| unreadable(&dir, error))?;
            let path = entry.path();
            let metadata =
                std::fs::symlink_metadata(&path).map_err(|error| unreadable(&path, error))?;
            let relative = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .as_os_str()
                .as_bytes()
                .to_vec();
            let kind = if metadata.file_type().is_symlink() {
                let target = std::fs::read_link(&path).map_err(|error| unreadable(&path, error))?;
                EntryKind::Symlink {
                    target: target.as_os_str().as_bytes().to_vec(),
                }
            } else if metadata.is_dir() {
                pending.push(path.clone());
                EntryKind::Directory
            } else if metadata.is_file() {
                EntryKind::File {
                    sha256: file_sha256(&path)?,
                    executable: metadata.permissions().mode() & 0o111 != 0,
                }
            } else {
                EntryKind::Other
            };
            entries.push(TreeEntry {
                path: relative,
                kind,
            });
        }
    }
    Ok(tree_sha256(&entries))
}

/// The lock entry of a path a launch mounts: hashed at its path on this machine, written
/// under its portable path.
pub fn lock_entry(file: FileUse) -> Result<FileLock, Failure> {
    let path = Path::new(&file.path);
    let (kind, sha256) = match std::fs::metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => (FileKind::Missing, None),
        Err(error) => return Err(unreadable(path, error)),
        Ok(metadata) if metadata.is_dir() => (
            FileKind::Directory,
            (!file.writable).then(|| tree_hash(path)).transpose()?,
        ),
        Ok(metadata) if metadata.is_file() => (
            FileKind::File,
            (!file.writable).then(|| file_sha256(path)).transpose()?,
        ),
        Ok(_) => (FileKind::Other, None),
    };
    Ok(FileLock {
        path: file.locked_path,
        kind,
        sha256,
        writable: file.writable,
        mounted_at: file.mounted_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(root: &Path) -> String {
        tree_hash(root).unwrap()
    }

    #[test]
    fn a_tree_hash_changes_with_contents_names_modes_and_links_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ca");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.pem"), "A").unwrap();
        std::fs::write(root.join("sub/b.pem"), "B").unwrap();
        let first = tree(&root);
        assert_eq!(first, tree(&root), "deterministic");
        std::fs::write(root.join("sub/b.pem"), "C").unwrap();
        let changed = tree(&root);
        assert_ne!(first, changed);
        std::fs::set_permissions(root.join("a.pem"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let executable = tree(&root);
        assert_ne!(changed, executable);
        std::os::unix::fs::symlink("a.pem", root.join("link")).unwrap();
        assert_ne!(executable, tree(&root));
    }

    #[test]
    fn writable_mounts_are_not_hashed_and_missing_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("notes.txt");
        std::fs::write(&file, "x").unwrap();
        let entry = |path: &Path, writable: bool| {
            lock_entry(FileUse {
                path: path.to_string_lossy().into_owned(),
                locked_path: "./notes.txt".into(),
                writable,
                mounted_at: vec!["run:/srv/notes".into()],
            })
            .unwrap()
        };
        let read_only = entry(&file, false);
        assert_eq!(read_only.kind, FileKind::File);
        assert_eq!(
            read_only.sha256.as_deref(),
            Some(agentc_lifecycle::tree::sha256_hex(b"x").as_str())
        );
        assert_eq!(entry(&file, true).sha256, None);
        assert_eq!(
            entry(&dir.path().join("gone"), false).kind,
            FileKind::Missing
        );
    }
}
