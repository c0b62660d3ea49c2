//! The local image the live-daemon tests run, built without any registry.
//!
//! `scripts/build-test-image.sh` assembles a rootfs from Debian's `busybox-static` package (a
//! shell and the usual tools as applets, the agent users `claude`, `opencode` and `codex` with
//! uid 1000 and `hermes` with uid 10000, their homes, `/tmp`, `/run`, `/workspace`) and feeds it
//! to `docker import`. The tag is `agentc-test/busybox:<first 12 hex digits of the script's
//! sha256>`, so the image is built once per machine and rebuilt when the script changes.
//!
//! What building needs: bash, coreutils, tar, `dpkg-deb`, the Docker daemon, and the package
//! (`apt-get download busybox-static` after `apt-get update`, a cached
//! `/var/cache/apt/archives/busybox-static_*.deb`, or `AGENTC_BUSYBOX_DEB=/path/to.deb`).

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use agentc_policy::hint::with_hint;

/// The repository of the test image's tags.
pub const TEST_IMAGE_REPOSITORY: &str = "agentc-test/busybox";

/// The label the script sets on the test image, which marks tags that are safe to move.
pub const TEST_IMAGE_LABEL: &str = "agentc-test.image";

/// The tags agentc's agent presets launch by default (`<image-name>:latest`): no test makes
/// them (a machine that ran the tests keeps no `claude-code:latest` it did not have, which a
/// later `agentc doctor` would report present); [`remove_agent_image_tags`] removes those that
/// earlier versions of the tests left pointing at the test image.
pub const AGENT_IMAGE_TAGS: [&str; 4] = [
    "claude-code:latest",
    "codex:latest",
    "opencode:latest",
    "hermes:latest",
];

/// Serializes builds inside one test binary; tests run on several threads.
static BUILD: Mutex<()> = Mutex::new(());

/// The path of `scripts/build-test-image.sh`.
pub fn build_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("scripts")
        .join("build-test-image.sh")
}

/// Runs a command and returns its trimmed stdout, or an error naming the command with its
/// stderr.
fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|error| format!("cannot run {program}: {error}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Err(format!(
            "{program} {} failed ({}): {}",
            args.first().copied().unwrap_or_default(),
            output.status,
            tail.join(" | ")
        ))
    }
}

/// The image id of `reference`, or `None` when the daemon has no such image.
pub fn image_id(reference: &str) -> Option<String> {
    run(
        "docker",
        &["image", "inspect", "--format", "{{.Id}}", reference],
    )
    .ok()
}

/// The tag the current build script gives the test image.
pub fn test_image_tag() -> Result<String, String> {
    let script = build_script();
    let script = script.to_string_lossy();
    run("bash", &[&script, "--print-tag"])
        .map_err(|error| with_hint(error, Some(&format!("the script is {script}"))))
}

/// Builds the test image unless the daemon already has it; returns its tag.
///
/// Idempotent and cheap once built (one `docker image inspect`).
pub fn ensure_test_image() -> Result<String, String> {
    let _build = BUILD
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let tag = test_image_tag()?;
    if image_id(&tag).is_some() {
        return Ok(tag);
    }
    let script = build_script();
    let script = script.to_string_lossy();
    run("bash", &[&script, &tag]).map_err(|error| {
        with_hint(
            format_args!("cannot build the test image {tag}: {error}"),
            Some(
                "it needs dpkg-deb and either `apt-get download busybox-static` (after apt-get \
                 update) or AGENTC_BUSYBOX_DEB",
            ),
        )
    })?;
    if image_id(&tag).is_none() {
        return Err(format!(
            "{script} finished but the daemon has no image {tag}"
        ));
    }
    Ok(tag)
}

/// Whether `reference` carries the label the build script sets.
pub(crate) fn is_test_image(reference: &str) -> bool {
    let format = format!("{{{{index .Config.Labels \"{TEST_IMAGE_LABEL}\"}}}}");
    run(
        "docker",
        &["image", "inspect", "--format", &format, reference],
    )
    .is_ok_and(|value| value == "busybox")
}

/// Removes those of [`AGENT_IMAGE_TAGS`] that point at a test image (never a real one): what
/// earlier versions of the tests left; returns the tags removed.
pub fn remove_agent_image_tags() -> Vec<String> {
    AGENT_IMAGE_TAGS
        .iter()
        .filter(|alias| is_test_image(alias))
        .filter(|alias| run("docker", &["image", "rm", alias]).is_ok())
        .map(|alias| alias.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_is_the_repository_and_a_digest_of_the_script() {
        let tag = test_image_tag().unwrap();
        let digest = tag
            .strip_prefix(&format!("{TEST_IMAGE_REPOSITORY}:"))
            .unwrap_or_else(|| panic!("{tag}"));
        assert_eq!(digest.len(), 12, "{tag}");
        assert!(digest.chars().all(|c| c.is_ascii_hexdigit()), "{tag}");
        assert_eq!(test_image_tag().unwrap(), tag);
    }

    #[test]
    fn a_missing_program_is_an_error_naming_it() {
        let error = run("agentc-no-such-program", &[]).unwrap_err();
        assert!(
            error.starts_with("cannot run agentc-no-such-program"),
            "{error}"
        );
    }
}
