//! Content hashes of what a profile mounts or trusts: one file, or a directory as a
//! deterministic tree hash. The walk is the caller's (it reads the disk); this module only
//! orders and hashes what it is handed.

use sha2::{Digest, Sha256};

/// One entry under a hashed directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// The path relative to the directory, `/`-separated, as raw bytes (names need not be
    /// UTF-8).
    pub path: Vec<u8>,
    /// What it is.
    pub kind: EntryKind,
}

/// What a [`TreeEntry`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file: the sha256 of its contents (hex) and whether any execute bit is set.
    File {
        /// Hex sha256 of the contents.
        sha256: String,
        /// Any execute bit set.
        executable: bool,
    },
    /// A directory.
    Directory,
    /// A symbolic link (not followed: the container sees the link) and its target.
    Symlink {
        /// The link's target, as raw bytes.
        target: Vec<u8>,
    },
    /// Anything else (a socket, a FIFO, a device): present, its contents not read.
    Other,
}

/// The hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Hex digits of a digest.
pub fn hex(digest: &[u8]) -> String {
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The tree hash of a directory's entries (hex sha256): sorted by path bytes, each entry's
/// kind, path and content hash (or link target) length-prefixed, so that no two different
/// trees hash alike and the order of the walk does not matter.
pub fn tree_sha256(entries: &[TreeEntry]) -> String {
    let mut sorted: Vec<&TreeEntry> = entries.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut hasher = Sha256::new();
    hasher.update(b"agentc-tree-v1\0");
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    for entry in sorted {
        match &entry.kind {
            EntryKind::File { sha256, executable } => {
                field(if *executable { b"x" } else { b"f" });
                field(&entry.path);
                field(sha256.as_bytes());
            }
            EntryKind::Directory => {
                field(b"d");
                field(&entry.path);
            }
            EntryKind::Symlink { target } => {
                field(b"l");
                field(&entry.path);
                field(target);
            }
            EntryKind::Other => {
                field(b"o");
                field(&entry.path);
            }
        }
    }
    hex(&hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, contents: &str) -> TreeEntry {
        TreeEntry {
            path: path.as_bytes().to_vec(),
            kind: EntryKind::File {
                sha256: sha256_hex(contents.as_bytes()),
                executable: false,
            },
        }
    }

    #[test]
    fn the_walk_order_does_not_matter_but_every_byte_does() {
        let a = vec![file("a", "1"), file("b/c", "2")];
        let reversed: Vec<TreeEntry> = a.iter().rev().cloned().collect();
        assert_eq!(tree_sha256(&a), tree_sha256(&reversed));
        assert_ne!(
            tree_sha256(&a),
            tree_sha256(&[file("a", "1"), file("b/c", "3")])
        );
        assert_ne!(
            tree_sha256(&a),
            tree_sha256(&[file("a", "1"), file("b/d", "2")])
        );
        let mut executable = a.clone();
        executable[0].kind = EntryKind::File {
            sha256: sha256_hex(b"1"),
            executable: true,
        };
        assert_ne!(tree_sha256(&a), tree_sha256(&executable));
    }

    #[test]
    fn names_cannot_run_into_each_other() {
        // Without length prefixes, "ab" + "c" and "a" + "bc" could hash alike.
        let one = [file("ab", "c")];
        let two = [file("a", "bc")];
        assert_ne!(tree_sha256(&one), tree_sha256(&two));
        let link = [TreeEntry {
            path: b"x".to_vec(),
            kind: EntryKind::Symlink {
                target: b"y".to_vec(),
            },
        }];
        let other = [TreeEntry {
            path: b"x".to_vec(),
            kind: EntryKind::Other,
        }];
        assert_ne!(tree_sha256(&link), tree_sha256(&other));
        assert_ne!(tree_sha256(&[]), tree_sha256(&other));
    }
}
