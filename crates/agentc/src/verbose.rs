//! `--verbose`: agentc's own step log on stderr (`agentc: ...`), and nothing else's.
//!
//! Only records whose target is one of agentc's crates are printed. The libraries below them
//! (bollard, hyper) log requests at debug level, and a create request carries the values of
//! the secrets it passes; agentc's own records name secrets, never their values.

use log::{LevelFilter, Log, Metadata, Record};

/// The logger `--verbose` installs.
struct StepLog;

impl Log for StepLog {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        is_agentc_target(metadata.target())
    }

    fn log(&self, record: &Record<'_>) {
        if self.enabled(record.metadata()) {
            eprintln!("agentc: {}", record.args());
        }
    }

    fn flush(&self) {}
}

static STEP_LOG: StepLog = StepLog;

/// Whether a log target belongs to agentc's crates (`agentc`, `agentc_policy`,
/// `agentc_backend_cli`, `agentc_backend_api` and their modules).
fn is_agentc_target(target: &str) -> bool {
    let krate = target.split("::").next().unwrap_or_default();
    krate == "agentc" || krate.starts_with("agentc_")
}

/// Turns the step log on for the rest of the process. A second call changes nothing.
pub fn enable() {
    if log::set_logger(&STEP_LOG).is_ok() {
        log::set_max_level(LevelFilter::Debug);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_agentc_targets_are_printed() {
        for target in [
            "agentc",
            "agentc::commands::launch",
            "agentc_engine::launch",
            "agentc_policy",
        ] {
            assert!(is_agentc_target(target), "{target}");
        }
        for target in ["bollard::docker", "hyper_util::client", "agentcx", ""] {
            assert!(!is_agentc_target(target), "{target}");
        }
    }
}
