//! Helpers shared by the live tests' modules (`tests/live.rs`): the daemon check, the engine's
//! command line, the busybox test image, and each test file's turn.

pub mod agent_base;
pub mod agent_image;
pub mod lab;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};

/// Each live file's turn: one file's tests run beside one another, never beside another
/// file's (the conformance crate's `turn.rs`, shared with its `live` binary).
#[path = "../../../../tests/src/turn.rs"]
mod turn_of_a_file;
pub use turn_of_a_file::turn;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn describe(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr)
    )
}

/// Runs `docker ARGS`: trimmed stdout, or the error with stderr.
pub fn docker(args: &[&str]) -> Result<String, String> {
    engine_cli("docker", args)
}

/// Runs `ENGINE ARGS` (`docker` or `podman`): trimmed stdout, or the error with stderr.
pub fn engine_cli(engine: &str, args: &[&str]) -> Result<String, String> {
    let output = Command::new(engine)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run {engine}: {error}"))?;
    if output.status.success() {
        Ok(text(&output.stdout).trim().to_string())
    } else {
        Err(format!(
            "{engine} {} failed: {}",
            args.join(" "),
            text(&output.stderr).trim()
        ))
    }
}

/// True when a daemon answers; otherwise a printed skip, or a panic under
/// `AGENTC_REQUIRE_DOCKER=1`.
pub fn require_daemon(test: &str) -> bool {
    match docker(&["info", "--format", "{{.ServerVersion}}"]) {
        Ok(_) => true,
        Err(reason) if std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() == Ok("1") => {
            panic!("{test}: AGENTC_REQUIRE_DOCKER=1 but no Docker daemon: {reason}")
        }
        Err(reason) => {
            eprintln!("skipping {test}: no Docker daemon ({reason}); set AGENTC_REQUIRE_DOCKER=1 to fail instead");
            false
        }
    }
}

/// Serializes image builds between the tests.
pub static IMAGES: Mutex<()> = Mutex::new(());

/// The busybox test image's tag, building it when the daemon lacks it.
pub fn test_image() -> String {
    let _lock = IMAGES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let script = repo_root().join("scripts/build-test-image.sh");
        let script = script.to_string_lossy().into_owned();
        let run = |args: &[&str]| {
            let output = Command::new("bash").args(args).output().expect("bash runs");
            assert!(output.status.success(), "{}", describe(&output));
            text(&output.stdout).trim().to_string()
        };
        let tag = run(&[&script, "--print-tag"]);
        if docker(&["image", "inspect", &tag]).is_err() {
            run(&[&script, &tag]);
        }
        tag
    })
    .clone()
}
