//! The agent image of the live tests that run a preset's command through `agentc run PRESET --
//! -c SCRIPT` (`faults.rs`, `pools.rs`, `command_matrix.rs`, `lifecycle.rs`).

use std::sync::OnceLock;

use super::{docker, test_image, IMAGES};

/// An image on top of the test image whose `claude` runs `/bin/sh "$@"`, so that
/// `agentc run PRESET -- -c SCRIPT` runs SCRIPT (built once, `docker build`).
pub fn agent_image() -> String {
    let base = test_image();
    let _lock = IMAGES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let suffix = base.rsplit(':').next().unwrap_or("dev");
        let tag = format!("agentc-test/faults-agent:{suffix}");
        if docker(&["image", "inspect", &tag]).is_ok() {
            return tag;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("Dockerfile"),
            format!("FROM {base}\nCOPY claude /bin/claude\n"),
        )
        .unwrap();
        let claude = dir.path().join("claude");
        std::fs::write(&claude, "#!/bin/sh\nexec /bin/sh \"$@\"\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
        let context = dir.path().to_string_lossy().into_owned();
        docker(&["build", "-q", "-t", &tag, &context]).expect("build the agent image");
        tag
    })
    .clone()
}
