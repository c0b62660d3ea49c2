//! Keeping SIGINT and SIGTERM from ending agentc while a docker child runs, so that docker's
//! exit code comes back and a SIGTERM sent to agentc alone can be passed on to docker.

use std::sync::atomic::{AtomicI32, Ordering};

/// The last SIGINT or SIGTERM received while a [`SignalShield`] was up (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn record_signal(signal: libc::c_int) {
    RECEIVED.store(signal, Ordering::SeqCst);
}

/// Keeps SIGINT (and, when asked, SIGTERM) from ending the process while a docker child runs,
/// and records them instead; the previous handlers come back when dropped. A handler, unlike
/// `SIG_IGN`, is reset by `exec`, so the docker child still receives and handles the signal
/// and its exit code comes back.
///
/// The record is process-wide: one shield at a time.
pub struct SignalShield {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalShield {
    /// Shields SIGINT, and SIGTERM too when `terminate`.
    pub fn new(terminate: bool) -> SignalShield {
        RECEIVED.store(0, Ordering::SeqCst);
        let mut signals = vec![libc::SIGINT];
        if terminate {
            signals.push(libc::SIGTERM);
        }
        let mut previous = Vec::new();
        for signal in signals {
            // SAFETY: sigaction is given a zero-initialised struct with a valid handler that
            // only stores into an atomic (async-signal-safe); the old action is saved to
            // restore it.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = record_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &action, &mut old) == 0 {
                    previous.push((signal, old));
                }
            }
        }
        SignalShield { previous }
    }

    /// The signal received since the last call, if any, consumed: each delivery is reported
    /// once.
    pub fn take(&self) -> Option<libc::c_int> {
        match RECEIVED.swap(0, Ordering::SeqCst) {
            0 => None,
            signal => Some(signal),
        }
    }
}

impl Drop for SignalShield {
    fn drop(&mut self) {
        for (signal, old) in &self.previous {
            // SAFETY: restores the action saved in `new`.
            unsafe {
                libc::sigaction(*signal, old, std::ptr::null_mut());
            }
        }
    }
}
