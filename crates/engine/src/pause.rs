//! Test-only pause points in the launch orchestration, so that a fault test can kill agentc
//! (SIGINT, SIGTERM, SIGKILL) at one named step, deterministically, through either backend.
//!
//! The binary reads `AGENTC_TEST_PAUSE_AT=STEP` and hands STEP to [`set_pause_at`] (a library
//! reads no environment). At that step the launch prints `agentc: paused at STEP` on stderr
//! and waits up to [`PAUSE_LIMIT`], or until a SIGINT or SIGTERM arrives (which then ends the
//! launch as it would at that step). Unset, every [`pause_requested`] is `false` and nothing
//! waits.

use std::sync::OnceLock;
use std::time::Duration;

/// The step names, in launch order: the isolated network created (nothing else of the
/// companion yet), and the egress proxy healthy (the workload not created yet).
pub const STEPS: [&str; 2] = [NETWORK, PROXY];

/// After the isolated network is created, before the CA volume and the proxy.
pub const NETWORK: &str = "network";

/// After the egress proxy is healthy, before the workload is created.
pub const PROXY: &str = "proxy";

/// How long a pause lasts at most.
pub const PAUSE_LIMIT: Duration = Duration::from_secs(120);

static PAUSE_AT: OnceLock<String> = OnceLock::new();

/// Makes the launch pause at `step` (one of [`STEPS`]); set once, by the binary.
pub fn set_pause_at(step: &str) {
    let _ = PAUSE_AT.set(step.to_string());
}

/// Whether the launch pauses at `step`; when it does, says so on stderr (the line a test waits
/// for before it sends its signal).
pub fn pause_requested(step: &str) -> bool {
    let pause = PAUSE_AT.get().is_some_and(|at| at == step);
    if pause {
        eprintln!("agentc: paused at {step} (AGENTC_TEST_PAUSE_AT)");
    }
    pause
}

/// Pauses at `step` when asked, polling `interrupted` every 50 ms: the blocking form, for the
/// CLI backend. Returns whether `interrupted` ended the pause.
pub fn pause_blocking(step: &str, interrupted: impl Fn() -> bool) -> bool {
    if !pause_requested(step) {
        return false;
    }
    let started = std::time::Instant::now();
    while started.elapsed() < PAUSE_LIMIT {
        if interrupted() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}
