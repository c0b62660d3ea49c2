//! Files the lifecycle writes: each is written whole or not at all (a temporary file beside
//! it, flushed to disk, then renamed over it, or linked for a file that must not be
//! overwritten), and the state of a profile is changed by one `apply` or `rollback` at a time
//! (an exclusive `flock` on a lock file beside it).
//!
//! `AGENTC_TEST_INTERRUPT=POINT` makes the process abort at POINT (`write:before-rename`,
//! `apply:after-build`, ...), as a crash or a power cut would: the tests use it to prove that
//! an interrupted command leaves every file whole and that running it again succeeds.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use crate::{Failure, EXIT_FAILED, EXIT_INVALID, EXIT_NO_INPUT};

/// Exit status when another `apply` or `rollback` of the profile holds its lock
/// (`EX_TEMPFAIL`).
pub const EXIT_BUSY: u8 = 75;

/// The largest state or lock file read (a state keeps 20 deployments; a lock is a few hundred
/// lines).
const MAX_FILE_BYTES: u64 = 4 << 20;

/// Aborts the process when `AGENTC_TEST_INTERRUPT` names `point`: the tests' crash.
pub fn interruption_point(point: &str) {
    if std::env::var("AGENTC_TEST_INTERRUPT").as_deref() == Ok(point) {
        eprintln!("agentc: interrupted at {point} (AGENTC_TEST_INTERRUPT)");
        std::process::abort();
    }
}

pub use crate::snapshots::state_dir;

/// The state file of a profile, `<state dir>/profiles/<name>.toml`.
pub fn state_file(profile: &str) -> Result<PathBuf, Failure> {
    Ok(state_dir()?
        .join("profiles")
        .join(format!("{profile}.toml")))
}

/// The lock file of a profile file: `<stem>.lock` beside it.
pub fn lock_file(profile: &Path) -> PathBuf {
    let stem = profile
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "profile".to_string());
    profile.with_file_name(format!("{stem}.lock"))
}

/// Reads a small text file; `None` when it does not exist.
pub fn read_text(path: &Path) -> Result<Option<String>, Failure> {
    let shown = path.display();
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(
                Failure::new(EXIT_NO_INPUT, format!("{shown}: cannot read: {error}"))
                    .hinted("check the file's permissions"),
            )
        }
    };
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, MAX_FILE_BYTES + 1),
        &mut bytes,
    )
    .map_err(|error| Failure::new(EXIT_NO_INPUT, format!("{shown}: cannot read: {error}")))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Failure::new(
            EXIT_INVALID,
            format!("{shown}: larger than {MAX_FILE_BYTES} bytes, not a file agentc wrote"),
        )
        .hinted("move it away; agentc writes a new one"));
    }
    String::from_utf8(bytes).map(Some).map_err(|error| {
        Failure::new(
            EXIT_INVALID,
            format!(
                "{shown}: not UTF-8 text (invalid byte at offset {}), not a file agentc wrote",
                error.utf8_error().valid_up_to()
            ),
        )
        .hinted("move it away; agentc writes a new one")
    })
}

/// The temporary file a write of `path` goes through: `.<name>.tmp` beside it (one at a time:
/// the state's writers hold its lock, and a lock file's last writer wins whole).
fn temporary(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

fn write_failure(path: &Path, error: std::io::Error) -> Failure {
    Failure::new(
        EXIT_FAILED,
        format!("{}: cannot write: {error}", path.display()),
    )
    .hinted("check that the directory exists and is writable")
}

/// Writes the temporary file of `path` and flushes it to disk.
fn write_temporary(path: &Path, text: &str) -> Result<PathBuf, Failure> {
    let temporary = temporary(path);
    // A temporary left by an interrupted write is garbage: replace it.
    let _ = std::fs::remove_file(&temporary);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temporary)
        .map_err(|error| write_failure(&temporary, error))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|error| write_failure(&temporary, error))?;
    Ok(temporary)
}

/// Flushes a directory, so that a rename or link in it survives a crash.
fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent() {
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
    }
}

/// Replaces `path` with `text` atomically: readers see the old file or the new one, never a
/// part.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), Failure> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|error| write_failure(dir, error))?;
    }
    let temporary = write_temporary(path, text)?;
    interruption_point("write:before-rename");
    std::fs::rename(&temporary, path).map_err(|error| write_failure(path, error))?;
    sync_dir(path);
    Ok(())
}

/// Creates `path` with `text`, whole, and never over an existing file: the text goes to a
/// temporary file, which is then hard-linked to `path` (linking fails when `path` exists).
pub fn write_new(path: &Path, text: &str) -> Result<(), Failure> {
    let temporary = write_temporary(path, text)?;
    interruption_point("write:before-link");
    let linked = std::fs::hard_link(&temporary, path);
    let _ = std::fs::remove_file(&temporary);
    match linked {
        Ok(()) => {
            sync_dir(path);
            Ok(())
        }
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Err(Failure::new(
            EXIT_FAILED,
            format!(
                "{}: exists already; agentc init never overwrites a file",
                path.display()
            ),
        )
        .hinted("choose another path, or move the file away")),
        Err(error) => Err(write_failure(path, error)),
    }
}

/// An exclusive lock on a profile's state, held until dropped (the kernel releases it when
/// the process ends, however it ends).
#[derive(Debug)]
pub struct StateLock {
    _file: File,
}

/// The file whose `flock` guards the state file `state`: `<state>.flock`.
pub fn state_lock_file(state: &Path) -> PathBuf {
    state.with_extension("toml.flock")
}

/// Takes the exclusive lock of `state` (`<state>.flock`), or fails at once (exit 75) when
/// another `apply` or `rollback` holds it.
pub fn lock_state(state: &Path) -> Result<StateLock, Failure> {
    if let Some(dir) = state.parent() {
        std::fs::create_dir_all(dir).map_err(|error| write_failure(dir, error))?;
    }
    let path = state_lock_file(state);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|error| write_failure(&path, error))?;
    // SAFETY: flock on a file descriptor this function owns; no memory is shared.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if locked != 0 {
        let error = std::io::Error::last_os_error();
        return Err(if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Failure::new(
                EXIT_BUSY,
                format!(
                    "{}: another `agentc apply` or `agentc rollback` of this profile is running",
                    state.display()
                ),
            )
            .hinted("wait for it to finish, then run this again")
        } else {
            Failure::new(
                EXIT_BUSY,
                format!("{}: cannot lock: {error}", path.display()),
            )
        });
    }
    Ok(StateLock { _file: file })
}

/// The state of `profile` read under its lock ([`lock_state`]), or a new one when it has none:
/// its file, the lock (held until dropped) and the state (`agentc apply`, `agentc rollback`
/// and `agentc rm --state`).
pub fn locked_state(
    profile: &str,
) -> Result<(PathBuf, StateLock, agentc_lifecycle::state::State), Failure> {
    use agentc_lifecycle::state::State;
    let path = state_file(profile)?;
    let guard = lock_state(&path)?;
    let state = match read_text(&path)? {
        Some(text) => State::parse(&path.display().to_string(), &text, profile)
            .map_err(|error| Failure::from_hinted(EXIT_INVALID, &error))?,
        None => State::new(profile),
    };
    Ok((path, guard, state))
}

/// The recorded state of a profile, when there is one (read without its lock: `agentc plan`
/// and `agentc doctor`).
pub fn read_state(profile: &str) -> Result<Option<agentc_lifecycle::state::State>, Failure> {
    let path = state_file(profile)?;
    let Some(text) = read_text(&path)? else {
        return Ok(None);
    };
    agentc_lifecycle::state::State::parse(&path.display().to_string(), &text, profile)
        .map(Some)
        .map_err(|error| Failure::from_hinted(EXIT_INVALID, &error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_write_replaces_whole_and_cleans_a_stale_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/state.toml");
        write_atomic(&path, "one\n").unwrap();
        std::fs::write(temporary(&path), "half of an interrupted wri").unwrap();
        write_atomic(&path, "two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        assert!(!temporary(&path).exists());
    }

    #[test]
    fn a_new_file_is_never_written_over_an_existing_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        write_new(&path, "first").unwrap();
        let error = write_new(&path, "second").unwrap_err();
        assert_eq!(error.code, EXIT_FAILED);
        assert!(
            error.message.contains("never overwrites"),
            "{}",
            error.message
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first");
        assert!(!temporary(&path).exists());
    }

    #[test]
    fn a_second_state_lock_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("profiles/dev.toml");
        let first = lock_state(&state).unwrap();
        let second = lock_state(&state).unwrap_err();
        assert_eq!(second.code, EXIT_BUSY);
        assert!(
            second.message.contains("another `agentc apply`"),
            "{}",
            second.message
        );
        drop(first);
        lock_state(&state).unwrap();
    }

    #[test]
    fn lock_files_sit_beside_their_profile() {
        assert_eq!(
            lock_file(Path::new("/p/dev.toml")),
            PathBuf::from("/p/dev.lock")
        );
        assert_eq!(lock_file(Path::new("dev")), PathBuf::from("dev.lock"));
    }

    #[test]
    fn unreadable_files_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_text(&dir.path().join("none")).unwrap(), None);
        let binary = dir.path().join("bin");
        std::fs::write(&binary, [0xff, 0xfe, 0]).unwrap();
        let error = read_text(&binary).unwrap_err();
        assert!(error.message.contains("not UTF-8"), "{}", error.message);
    }
}
