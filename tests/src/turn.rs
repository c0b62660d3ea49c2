//! Each live test file's turn in a `live` test binary. The files were one binary each and ran
//! one after another, and each file's tests were written to run beside one another only: a
//! command reaps every killed launch's leftovers, a pool is shared by its key, a leak guard
//! counts what its profile left. A test holds its file's turn for its whole run; tests of one
//! file still run in parallel, and another file's wait until they end.
//!
//! The `agentc` crate's `live` test binary includes this file too (`crates/agentc/tests/common`).

use std::sync::{Condvar, Mutex, PoisonError};

/// Which test file's tests are running, and how many of them.
static TURN: Mutex<(Option<&'static str>, usize)> = Mutex::new((None, 0));
/// Signalled when the running file's last test ends.
static TURN_ENDED: Condvar = Condvar::new();

/// A test's turn, held for the whole test: see [`turn`].
pub struct Turn;

/// Waits until no test of another file runs, then counts this test as running for `file`
/// (`file!()`) until the returned [`Turn`] drops.
pub fn turn(file: &'static str) -> Turn {
    let mut running = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    while running.0.is_some_and(|current| current != file) {
        running = TURN_ENDED
            .wait(running)
            .unwrap_or_else(PoisonError::into_inner);
    }
    running.0 = Some(file);
    running.1 += 1;
    Turn
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut running = TURN.lock().unwrap_or_else(PoisonError::into_inner);
        running.1 -= 1;
        if running.1 == 0 {
            running.0 = None;
            TURN_ENDED.notify_all();
        }
    }
}
