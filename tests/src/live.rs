//! Helpers for tests against a real Docker daemon.
//!
//! A live test starts with [`require_daemon`], which skips it (returns false) when no daemon
//! answers, unless `AGENTC_REQUIRE_DOCKER=1`, where a missing daemon fails the test instead (CI
//! sets it so a broken daemon cannot turn the live tests into silent skips). A [`LeakGuard`]
//! then asserts that the test left no agentc container and no volume of its profile behind.
//!
//! Tests run concurrently: each live test uses its own profile name, and the guard watches only
//! that profile's containers (label `io.agentc.profile=<profile>`) and volumes (names ending in
//! `-<profile>`, or labelled with it).

use std::collections::BTreeSet;
use std::process::Command;

/// The label agentc puts on every container it launches, valued with the profile's name.
pub const PROFILE_LABEL: &str = "io.agentc.profile";

/// The variable that turns a missing daemon from a skip into a failure.
pub const REQUIRE_DOCKER_VAR: &str = "AGENTC_REQUIRE_DOCKER";

/// Runs `docker ARGS`; its trimmed stdout, or an error with the command and its stderr.
pub fn docker(args: &[&str]) -> Result<String, String> {
    let output = Command::new("docker")
        .args(args)
        .output()
        .map_err(|error| format!("cannot run docker: {error}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    } else {
        Err(format!(
            "docker {} failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Whether a daemon answers `docker info`; the error says why not.
pub fn daemon_available() -> Result<(), String> {
    docker(&["info", "--format", "{{.ServerVersion}}"]).map(|_| ())
}

/// Returns true when a Docker daemon answers. Otherwise prints why `test` is skipped and returns
/// false, or panics when `AGENTC_REQUIRE_DOCKER=1`.
pub fn require_daemon(test: &str) -> bool {
    decide(
        test,
        daemon_available(),
        std::env::var(REQUIRE_DOCKER_VAR).ok().as_deref(),
    )
}

/// [`require_daemon`]'s decision, with the daemon probe and the variable passed in.
fn decide(test: &str, available: Result<(), String>, required: Option<&str>) -> bool {
    match available {
        Ok(()) => true,
        Err(reason) if required == Some("1") => {
            panic!("{test}: {REQUIRE_DOCKER_VAR}=1 but no Docker daemon: {reason}")
        }
        Err(reason) => {
            eprintln!("skipping {test}: no Docker daemon ({reason}); set {REQUIRE_DOCKER_VAR}=1 to fail instead");
            false
        }
    }
}

fn lines(text: String) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

/// Names of all containers, running or not, with the `io.agentc.profile` label.
pub fn agentc_containers() -> Vec<String> {
    containers_with_label(PROFILE_LABEL)
}

/// Names of all containers, running or not, matching a `label` filter (`KEY` or `KEY=VALUE`).
pub fn containers_with_label(label: &str) -> Vec<String> {
    let filter = format!("label={label}");
    docker(&["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"])
        .map(lines)
        .unwrap_or_default()
}

/// Names of all volumes.
pub fn volumes() -> Vec<String> {
    docker(&["volume", "ls", "--format", "{{.Name}}"])
        .map(lines)
        .unwrap_or_default()
}

/// `docker inspect ID` (a container, image or volume) as JSON: the first object of the array,
/// or `Value::Null` when nothing has that id.
pub fn inspect(id: &str) -> serde_json::Value {
    docker(&["inspect", id])
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|value| value.as_array().and_then(|array| array.first().cloned()))
        .unwrap_or(serde_json::Value::Null)
}

/// Asserts, when dropped or [`finish`](LeakGuard::finish)ed, that a test left no container
/// labelled with its profile and no volume of its profile behind, except volumes it declared
/// with [`allow_volume`](LeakGuard::allow_volume). Whatever it finds is removed either way,
/// so one failing test does not fail the next.
#[derive(Debug)]
pub struct LeakGuard {
    test: String,
    profile: String,
    containers_before: BTreeSet<String>,
    volumes_before: BTreeSet<String>,
    allowed_volumes: BTreeSet<String>,
    finished: bool,
}

impl LeakGuard {
    /// Starts watching the containers and volumes of `profile` for `test`.
    pub fn new(test: &str, profile: &str) -> Self {
        let mut guard = LeakGuard {
            test: test.to_string(),
            profile: profile.to_string(),
            containers_before: BTreeSet::new(),
            volumes_before: BTreeSet::new(),
            allowed_volumes: BTreeSet::new(),
            finished: false,
        };
        guard.containers_before = guard.containers();
        guard.volumes_before = guard.volumes();
        guard
    }

    /// Declares a volume the test means to create (a home volume); it is removed at the end and
    /// not reported.
    pub fn allow_volume(&mut self, name: &str) {
        self.allowed_volumes.insert(name.to_string());
    }

    fn containers(&self) -> BTreeSet<String> {
        containers_with_label(&format!("{PROFILE_LABEL}={}", self.profile))
            .into_iter()
            .collect()
    }

    fn volumes(&self) -> BTreeSet<String> {
        let suffix = format!("-{}", self.profile);
        let filter = format!("label={PROFILE_LABEL}={}", self.profile);
        let labelled = docker(&["volume", "ls", "--filter", &filter, "--format", "{{.Name}}"])
            .map(lines)
            .unwrap_or_default();
        volumes()
            .into_iter()
            .filter(|name| name.ends_with(&suffix) || name == &self.profile)
            .chain(labelled)
            .collect()
    }

    /// What the test left behind: (containers, volumes) that were not there before, volumes
    /// declared with `allow_volume` excluded.
    pub fn leaks(&self) -> (Vec<String>, Vec<String>) {
        let containers = self
            .containers()
            .difference(&self.containers_before)
            .cloned()
            .collect();
        let volumes = self
            .volumes()
            .difference(&self.volumes_before)
            .filter(|name| !self.allowed_volumes.contains(*name))
            .cloned()
            .collect();
        (containers, volumes)
    }

    /// Checks for leaks now and removes what was left; panics naming the leaks.
    pub fn finish(mut self) {
        self.finished = true;
        self.check_and_clean();
    }

    fn check_and_clean(&self) {
        let (containers, volumes) = self.leaks();
        for container in &containers {
            let _ = docker(&["rm", "--force", "--volumes", container]);
        }
        let mut to_remove: BTreeSet<&String> = volumes.iter().collect();
        to_remove.extend(&self.allowed_volumes);
        for volume in to_remove {
            let _ = docker(&["volume", "rm", "--force", volume]);
        }
        assert!(
            containers.is_empty() && volumes.is_empty(),
            "{}: left behind containers {containers:?} and volumes {volumes:?} (removed now)",
            self.test
        );
    }
}

impl Drop for LeakGuard {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        if std::thread::panicking() {
            // The test already failed: clean up without a second panic.
            let (containers, volumes) = self.leaks();
            for container in &containers {
                let _ = docker(&["rm", "--force", "--volumes", container]);
            }
            for volume in volumes.iter().chain(&self.allowed_volumes) {
                let _ = docker(&["volume", "rm", "--force", volume]);
            }
            return;
        }
        self.check_and_clean();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::{ensure_test_image, tag_agent_images, AGENT_IMAGE_TAGS};

    #[test]
    fn a_missing_daemon_skips_unless_required() {
        assert!(decide("t", Ok(()), Some("1")));
        assert!(!decide("t", Err("no socket".to_string()), None));
        assert!(!decide("t", Err("no socket".to_string()), Some("0")));
        let panic =
            std::panic::catch_unwind(|| decide("t", Err("no socket".to_string()), Some("1")))
                .unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(
            message.contains("AGENTC_REQUIRE_DOCKER=1 but no Docker daemon: no socket"),
            "{message}"
        );
    }

    #[test]
    fn inspect_of_nothing_is_null() {
        assert_eq!(
            inspect("agentc-live-no-such-container"),
            serde_json::Value::Null
        );
    }

    #[test]
    fn live_test_image_runs_as_the_agent_users() {
        if !require_daemon("live_test_image_runs_as_the_agent_users") {
            return;
        }
        let tag = ensure_test_image().unwrap();
        let output = docker(&[
            "run",
            "--rm",
            "--network=none",
            "--user",
            "hermes",
            "--entrypoint",
            "/bin/sh",
            &tag,
            "-c",
            "id -u; cd && pwd; ls -ld /tmp | cut -c1-10",
        ])
        .unwrap();
        assert_eq!(output, "10000\n/opt/data\ndrwxrwxrwt");
        let output = docker(&[
            "run",
            "--rm",
            "--network=none",
            "--user",
            "claude",
            &tag,
            "id",
        ])
        .unwrap();
        assert_eq!(
            output,
            "uid=1000(claude) gid=1000(claude) groups=1000(claude)"
        );
    }

    #[test]
    fn live_agent_tags_point_at_the_test_image() {
        if !require_daemon("live_agent_tags_point_at_the_test_image") {
            return;
        }
        let tag = match tag_agent_images() {
            Ok(tag) => tag,
            Err(reason) => return eprintln!("skipping: {reason}"),
        };
        let id = crate::image::image_id(&tag).unwrap();
        for alias in AGENT_IMAGE_TAGS {
            assert_eq!(
                crate::image::image_id(alias).as_deref(),
                Some(id.as_str()),
                "{alias}"
            );
        }
        assert_eq!(
            tag_agent_images().unwrap(),
            tag,
            "tagging again changes nothing"
        );
    }

    #[test]
    fn live_leak_guard_reports_and_removes_what_a_test_left() {
        if !require_daemon("live_leak_guard_reports_and_removes_what_a_test_left") {
            return;
        }
        let tag = ensure_test_image().unwrap();
        let profile = "agentc-live-leak-guard";
        let guard = LeakGuard::new("leak", profile);
        let label = format!("{PROFILE_LABEL}={profile}");
        let volume = format!("claude-code-home-test-{profile}");
        docker(&["volume", "create", &volume]).unwrap();
        docker(&["create", "--label", &label, "--network=none", &tag, "true"]).unwrap();
        assert_eq!(containers_with_label(&label).len(), 1);
        let (leaked_containers, leaked_volumes) = guard.leaks();
        assert_eq!(leaked_containers.len(), 1);
        assert_eq!(leaked_volumes, vec![volume.clone()]);
        let panic =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| guard.finish())).unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(
            message.starts_with("leak: left behind containers"),
            "{message}"
        );
        assert!(containers_with_label(&label).is_empty());
        assert!(!volumes().contains(&volume));
    }

    #[test]
    fn live_allowed_volumes_are_removed_without_a_report() {
        if !require_daemon("live_allowed_volumes_are_removed_without_a_report") {
            return;
        }
        let profile = "agentc-live-allowed";
        let mut guard = LeakGuard::new("allowed", profile);
        let volume = format!("codex-home-test-{profile}");
        guard.allow_volume(&volume);
        docker(&["volume", "create", &volume]).unwrap();
        guard.finish();
        assert!(!volumes().contains(&volume));
    }
}

/// `agentc verify`'s module, compiled here from its source file because the agentc crate has no
/// library target, so its probe can be run against a real hardened container.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../../crates/agentc/src/verify.rs"]
mod verify;

#[cfg(test)]
mod verify_probe {

    use super::{docker, inspect, require_daemon, verify};
    use crate::image::ensure_test_image;
    use agentc_policy::{Capability, ContainerSpec, MountSource, Network, Resources, Tmpfs};

    #[test]
    fn live_probe_of_a_hardened_container_matches_its_spec() {
        if !require_daemon("live_probe_of_a_hardened_container_matches_its_spec") {
            return;
        }
        let tag = ensure_test_image().unwrap();
        let source = tempfile::tempdir().unwrap();
        let source_path = source.path().to_string_lossy().to_string();
        let spec = ContainerSpec {
            name: Some("agentc-live-verify-probe".to_string()),
            image: tag.clone(),
            entrypoint: None,
            command: Vec::new(),
            user: Some("1000".to_string()),
            working_dir: Some("/home/claude".to_string()),
            env: Vec::new(),
            mounts: vec![agentc_policy::Mount {
                target: "/data".to_string(),
                read_only: true,
                source: MountSource::Bind {
                    path: source_path.clone(),
                },
            }],
            tmpfs: vec![
                Tmpfs {
                    target: "/tmp".to_string(),
                    exec: false,
                },
                Tmpfs {
                    target: "/run".to_string(),
                    exec: true,
                },
            ],
            read_only_root: true,
            no_new_privileges: true,
            apparmor: None,
            cap_drop_all: true,
            cap_add: [Capability::NetRaw, Capability::Setuid]
                .into_iter()
                .collect(),
            network: Network::None,
            extra_hosts: Vec::new(),
            ports: Vec::new(),
            resources: Resources {
                memory_bytes: Some(67_108_864),
                memory_swap_bytes: Some(67_108_864),
                shm_size_bytes: Some(8_388_608),
                nano_cpus: Some(500_000_000),
                pids_limit: Some(64),
            },
            log: None,
            devices: Vec::new(),
            labels: [(
                "io.agentc.profile".to_string(),
                "agentc-live-verify".to_string(),
            )]
            .into_iter()
            .collect(),
            interactive: false,
            tty: false,
            auto_remove: false,
            detach: true,
        };
        let guard = super::LeakGuard::new("verify probe", "agentc-live-verify");
        let probe = verify::probe_spec(&spec);
        let bind = format!("type=bind,source={source_path},target=/data,readonly");
        let name = probe.name.clone().unwrap();
        // The flags the CLI backend renders for this spec, written out by hand.
        let mut args = vec![
            "run",
            "--detach",
            "--name",
            &name,
            "--user",
            "1000",
            "--workdir",
            "/home/claude",
            "--read-only",
            "--tmpfs",
            "/tmp",
            "--tmpfs",
            "/run:exec",
            "--cap-drop",
            "ALL",
            "--cap-add",
            "NET_RAW",
            "--cap-add",
            "SETUID",
            "--security-opt",
            "no-new-privileges",
            "--network",
            "none",
            "--memory",
            "67108864",
            "--memory-swap",
            "67108864",
            "--pids-limit",
            "64",
            "--shm-size",
            "8388608",
            "--cpus",
            "0.5",
            "--mount",
            &bind,
            "--label",
            "io.agentc.profile=agentc-live-verify",
            "--entrypoint",
            "/bin/sh",
            &tag,
        ];
        args.extend(probe.command.iter().map(String::as_str));
        docker(&args).unwrap();
        let waited = docker(&["wait", &name]);
        let logs = docker(&["logs", &name]);
        let inspected = inspect(&name);
        let _ = docker(&["rm", "--force", &name]);
        assert_eq!(waited.unwrap(), "0");
        let observed = verify::parse_probe(&logs.unwrap()).unwrap();
        let checks = verify::compare(&spec, &observed, &inspected);
        let table = verify::render_table(&checks);
        assert!(checks.iter().all(|check| check.ok), "{table}");
        assert!(checks.len() >= 14, "{table}");
        guard.finish();
    }
}
