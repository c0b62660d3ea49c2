//! The user's own key for the warm pools' credential fingerprints
//! ([`agentc_policy::pool::credential_fingerprints`]): 32 random bytes in
//! `<state dir>/pool-credential.key` ([`crate::snapshots::state_dir`]), readable by its
//! owner only (mode 0600, in a directory made 0700), made on first use. A fingerprint is an
//! HMAC under it: equal for the same key of the same user, and telling nothing of a value to
//! whoever cannot read this file (another user of the daemon, who reads the labels).
//!
//! Losing the file loses nothing but the pools' members: none fits a claim any more, and the
//! next fill or claim drains them. A library caller that fills or claims with this key
//! ([`load_or_create`], for [`agentc_engine::pool::Pool::of`]) shares the pools of `agentc pool
//! fill` and `agentc run`: their members carry the same fingerprints.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::failure::{Failure, EXIT_FAILED};

/// The file's name in the state directory.
pub const FILE: &str = "pool-credential.key";
/// Its length in bytes.
const LENGTH: usize = 32;

/// The key in the state directory, made there when missing.
pub fn load_or_create() -> Result<Vec<u8>, Failure> {
    load_or_create_in(&crate::snapshots::state_dir()?)
}

/// The key in `dir` ([`FILE`]), made there when missing: written whole to a file of its own
/// (mode 0600), then linked to its name, so that of two processes making it at once both
/// read the one linked first.
pub fn load_or_create_in(dir: &Path) -> Result<Vec<u8>, Failure> {
    let path = dir.join(FILE);
    if let Some(key) = read(&path)? {
        return Ok(key);
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|error| failure(dir, "cannot create the directory", &error))?;
    let mut key = [0u8; LENGTH];
    getrandom::fill(&mut key).map_err(|error| {
        Failure::new(
            EXIT_FAILED,
            format!("cannot make the pools' credential key: {error}"),
        )
    })?;
    let temporary = dir.join(format!(".{FILE}.{}", std::process::id()));
    let _ = std::fs::remove_file(&temporary);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .and_then(|mut file| {
            file.write_all(&key)?;
            file.sync_all()
        });
    let linked = written.and_then(|()| match std::fs::hard_link(&temporary, &path) {
        Err(error) if error.kind() != std::io::ErrorKind::AlreadyExists => Err(error),
        _ => Ok(()),
    });
    let _ = std::fs::remove_file(&temporary);
    linked.map_err(|error| failure(&path, "cannot write", &error))?;
    read(&path)?.ok_or_else(|| {
        Failure::new(
            EXIT_FAILED,
            format!("{}: written, then gone", path.display()),
        )
    })
}

/// The key in `path`; `None` when there is no file. A file others may read, or that is not
/// a key, is refused.
fn read(path: &Path) -> Result<Option<Vec<u8>>, Failure> {
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(failure(path, "cannot read", &error)),
    };
    let mode = file
        .metadata()
        .map_err(|error| failure(path, "cannot read", &error))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "{}: the pools' credential key is readable by others (mode {:o})",
                path.display(),
                mode & 0o777,
            ),
        )
        .hinted(format!(
            "`chmod 600 {}`, or remove it (the pools' members are then drained by the next fill \
             or claim)",
            path.display()
        )));
    }
    let mut key = Vec::new();
    Read::by_ref(&mut file)
        .take(LENGTH as u64 + 1)
        .read_to_end(&mut key)
        .map_err(|error| failure(path, "cannot read", &error))?;
    if key.len() != LENGTH {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "{}: not a pools' credential key ({} bytes, not {LENGTH})",
                path.display(),
                key.len()
            ),
        )
        .hinted(
            "remove it: a new one is made (the pools' members are then drained by the next fill \
             or claim)",
        ));
    }
    Ok(Some(key))
}

fn failure(path: &Path, what: &str, error: &std::io::Error) -> Failure {
    Failure::new(
        EXIT_FAILED,
        format!("{}: {what}: {error}", PathBuf::from(path).display()),
    )
    .hinted("set AGENTC_STATE_DIR to a directory agentc may write")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_made_once_for_its_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let key = load_or_create_in(&state).unwrap();
        assert_eq!(key.len(), LENGTH);
        let path = state.join(FILE);
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&state), 0o700);
        assert_eq!(load_or_create_in(&state).unwrap(), key);
        // Nothing else is left beside it.
        assert_eq!(std::fs::read_dir(&state).unwrap().count(), 1);
        // Another directory, another key.
        assert_ne!(load_or_create_in(&dir.path().join("other")).unwrap(), key);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = load_or_create_in(&state).unwrap_err();
        assert!(
            refused.message.contains("readable by others"),
            "{}",
            refused.message
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, b"short").unwrap();
        let refused = load_or_create_in(&state).unwrap_err();
        assert!(
            refused.message.contains("not a pools' credential key"),
            "{}",
            refused.message
        );
    }
}
