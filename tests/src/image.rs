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

/// The repository of the test image's tags.
pub const TEST_IMAGE_REPOSITORY: &str = "agentc-test/busybox";

/// The label the script sets on the test image, which marks tags that are safe to move.
pub const TEST_IMAGE_LABEL: &str = "agentc-test.image";

/// The tags agentc's agent presets launch by default (`<image-name>:latest`).
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
        .map_err(|error| format!("{error}\n  hint: the script is {script}"))
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
        format!(
            "cannot build the test image {tag}: {error}\n  hint: it needs dpkg-deb and either \
             `apt-get download busybox-static` (after apt-get update) or AGENTC_BUSYBOX_DEB"
        )
    })?;
    if image_id(&tag).is_none() {
        return Err(format!(
            "{script} finished but the daemon has no image {tag}"
        ));
    }
    Ok(tag)
}

/// Also tags the test image as each of [`AGENT_IMAGE_TAGS`], so a launch of an agent preset
/// (`claude-code:latest`, ...) runs busybox; the live tests then replace the agent's command
/// with a probe. Returns the test image's tag.
///
/// Only for tests: a tag that names an image which is not a test image (a real agent image on a
/// developer's machine) is never moved, and an error says so; the test should then skip. The
/// tags are left in place afterwards (tests run concurrently and share them); remove them with
/// [`remove_agent_image_tags`].
pub fn tag_agent_images() -> Result<String, String> {
    let tag = ensure_test_image()?;
    let _build = BUILD
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let id = image_id(&tag).ok_or_else(|| format!("the test image {tag} disappeared"))?;
    for alias in AGENT_IMAGE_TAGS {
        match image_id(alias) {
            Some(existing) if existing == id => continue,
            Some(existing) if !is_test_image(alias) => {
                return Err(format!(
                    "{alias} is a real image here ({existing}): not retagging it\n  hint: run the \
                     agent-preset live tests where {alias} does not exist"
                ));
            }
            _ => {
                run("docker", &["tag", &tag, alias])?;
            }
        }
    }
    Ok(tag)
}

/// Whether `reference` carries the label the build script sets.
fn is_test_image(reference: &str) -> bool {
    let format = format!("{{{{index .Config.Labels \"{TEST_IMAGE_LABEL}\"}}}}");
    run(
        "docker",
        &["image", "inspect", "--format", &format, reference],
    )
    .is_ok_and(|value| value == "busybox")
}

/// Removes those of [`AGENT_IMAGE_TAGS`] that point at a test image (never a real one); returns
/// the tags removed.
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
