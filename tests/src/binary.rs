//! The `agentc` binary of this workspace, for tests that run it (or make the egress proxy's
//! image of it) from a test executable.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The `agentc` binary of this workspace, built once (`cargo build -p agentc`) into the
/// target directory these tests run from, so it is never stale.
pub fn agentc_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable");
        // <target>/debug/deps/TEST-HASH
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target profile directory");
        let target_dir = profile_dir.parent().expect("target directory");
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "agentc", "--bin", "agentc"])
            .arg("--manifest-path")
            .arg(&manifest)
            .arg("--target-dir")
            .arg(target_dir)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "cargo build -p agentc failed");
        let binary = profile_dir.join("agentc");
        assert!(binary.exists(), "{} was not built", binary.display());
        binary
    })
}
