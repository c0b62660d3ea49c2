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

/// The label agentc puts on every container it launches, valued with the profile's name: the
/// policy's own constant, under the name the live tests use.
pub use agentc_policy::LABEL_PROFILE as PROFILE_LABEL;

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
    use crate::image::{ensure_test_image, remove_agent_image_tags, AGENT_IMAGE_TAGS};

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
    fn live_no_preset_tag_points_at_a_test_image() {
        if !require_daemon("live_no_preset_tag_points_at_a_test_image") {
            return;
        }
        let tag = ensure_test_image().unwrap();
        let removed = remove_agent_image_tags();
        if !removed.is_empty() {
            eprintln!("removed preset tags earlier test runs left on {tag}: {removed:?}");
        }
        for alias in AGENT_IMAGE_TAGS {
            assert!(
                !crate::image::is_test_image(alias),
                "{alias} is a test image"
            );
        }
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

#[cfg(test)]
mod verify_probe {

    use super::{docker, inspect, require_daemon};
    use crate::image::ensure_test_image;
    use agentc_policy::{Capability, ContainerSpec, MountSource, Network, Resources, Tmpfs};
    use agentc_verify as verify;

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
            // docker's init as PID 1: the probe must see it.
            init: true,
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
            exposed_ports: Vec::new(),
            network_aliases: Vec::new(),
            ipv4_address: None,
            dns: Vec::new(),
            sysctls: Default::default(),
            egress: None,
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
            runtime: None,
            isolation: None,
            interactive: false,
            tty: false,
            auto_remove: false,
            restart: None,
            detach: true,
            held_secrets: Default::default(),
        };
        let guard = super::LeakGuard::new("verify probe", "agentc-live-verify");
        let probe = verify::probe_spec(&spec);
        let bind = format!("type=bind,source={source_path},target=/data,readonly");
        let name = probe.name.clone().unwrap();
        // The flags the CLI backend renders for this spec, written out by hand.
        let mut args = vec![
            "run",
            "--detach",
            "--init",
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

/// A fixture launch made runnable on this machine by [`localize`].
#[derive(Debug, Clone)]
pub struct Localized {
    /// The container spec, with local image, paths, unique names and labels.
    pub container: agentc_policy::ContainerSpec,
    /// The named volumes it mounts (the daemon creates them on create; remove them after).
    pub volumes: Vec<String>,
    /// The user-defined networks it joins (create them before, remove them after).
    pub networks: Vec<String>,
    /// A dummy value for each secret the spec passes through, so no launch lacks one.
    pub secrets: Vec<(String, String)>,
    /// What was changed beyond paths and names to fit this machine, for the test to print.
    pub adjustments: Vec<String>,
}

/// The real places a virtual fixture launch is mapped to by [`localize`].
#[derive(Debug, Clone)]
pub struct LocalMachine {
    /// The image every launch runs instead of its own (the test image).
    pub image: String,
    /// The real directory standing for the virtual workspace (`/home/dev/src/project`).
    pub workspace: std::path::PathBuf,
    /// The real directory standing for the virtual home (`/home/dev`).
    pub home: std::path::PathBuf,
    /// The daemon's Engine API version as (major, minor), such as (1, 41).
    pub api_version: (u32, u32),
    /// The number of CPUs the daemon's host has (`docker info`'s `NCPU`).
    pub host_cpus: u64,
}

/// The daemon's Engine API version, such as (1, 41).
pub fn daemon_api_version() -> Result<(u32, u32), String> {
    let text = docker(&["version", "--format", "{{.Server.APIVersion}}"])?;
    let (major, minor) = text
        .split_once('.')
        .ok_or_else(|| format!("unexpected api version {text:?}"))?;
    let parse = |part: &str| {
        part.parse::<u32>()
            .map_err(|error| format!("unexpected api version {text:?}: {error}"))
    };
    Ok((parse(major)?, parse(minor)?))
}

/// The number of CPUs the daemon's host has.
pub fn daemon_cpus() -> Result<u64, String> {
    let text = docker(&["info", "--format", "{{.NCPU}}"])?;
    text.parse()
        .map_err(|error| format!("unexpected cpu count {text:?}: {error}"))
}

/// Makes a fixture's container launch runnable here, or says why it cannot run here.
///
/// The image becomes `machine.image`; bind sources under the virtual `/profiles/` become the
/// real `fixtures/` paths, and those under the virtual workspace and home become paths under
/// `machine.workspace` and `machine.home` (missing ones are created as directories). Volume and
/// network names get the suffix `-{unique}` and the `io.agentc.profile` label becomes `unique`,
/// so concurrent tests never share them and a [`LeakGuard`] for profile `unique` sees every
/// volume. A CPU quota above the host's CPU count, which the daemon refuses, is lowered to it
/// (noted in `adjustments`). Refused (the error is the reason): an image build, a volume subpath on a daemon
/// older than API 1.45, a host device that does not exist here, and a bind source outside the
/// virtual directories.
pub fn localize(
    spec: &agentc_policy::LaunchSpec,
    machine: &LocalMachine,
    unique: &str,
) -> Result<Localized, String> {
    use agentc_policy::{Action, EnvValue, MountSource, Network};
    use std::path::Path;

    let Action::Container(container) = &spec.action else {
        return Err("an image build: no container to create".to_string());
    };
    let mut container = (**container).clone();
    container.image = machine.image.clone();
    // The egress proxy's own binds (the profile's CA, which it trusts for upstreams).
    if let Some(egress) = container.egress.as_mut() {
        for mount in &mut egress.proxy.mounts {
            if let MountSource::Bind { path } = &mut mount.source {
                *path = local_path(path, machine)?.to_string_lossy().into_owned();
            }
        }
    }
    let mut volumes = Vec::new();
    let mut networks = Vec::new();
    for mount in &mut container.mounts {
        match &mut mount.source {
            MountSource::Bind { path } => {
                let local = local_path(path, machine)?;
                if !local.exists() {
                    if path.starts_with(crate::fixtures::VIRTUAL_HOME) {
                        std::fs::create_dir_all(&local).map_err(|error| {
                            format!("cannot create {}: {error}", local.display())
                        })?;
                    } else {
                        return Err(format!(
                            "bind source {path} ({}) does not exist here",
                            local.display()
                        ));
                    }
                }
                *path = local.to_string_lossy().into_owned();
            }
            MountSource::Volume { name, subpath } => {
                if subpath.is_some() && machine.api_version < (1, 45) {
                    return Err(format!(
                        "mount {} uses a volume subpath, which needs engine api 1.45; the daemon \
                         speaks {}.{}",
                        mount.target, machine.api_version.0, machine.api_version.1
                    ));
                }
                *name = format!("{name}-{unique}");
                volumes.push(name.clone());
            }
        }
    }
    if let Some(device) = container
        .devices
        .iter()
        .find(|device| !Path::new(&device.host_path).exists())
    {
        return Err(format!(
            "device {} does not exist on this machine",
            device.host_path
        ));
    }
    if container.egress.is_some() {
        // Behind an egress proxy: the isolated network and the proxy are the launch's own,
        // made unique like the rest (the executor creates them).
        container.egress_instance(unique);
    } else if let Network::Named { name } = &mut container.network {
        *name = format!("{name}-{unique}");
        networks.push(name.clone());
    }
    // The network an egress proxy reaches out through: the test's own (nothing is sent through
    // it: verify probes no egress), also in place of Docker's default bridge, since verify's
    // host-path row listens on the outside network's gateway, which must be an address of a
    // network the test made. The proxy's spec names it too.
    if let Some(egress) = container.egress.as_mut() {
        // One per launch (its isolated network's name is unique already): launches of one
        // run may be set up side by side.
        let name = match &egress.outside {
            Network::Named { name } => format!("{name}-{unique}"),
            _ => format!("{}-outside", egress.network.name),
        };
        networks.push(name.clone());
        egress.outside = Network::Named { name };
        egress.proxy.network = egress.outside.clone();
    }
    container
        .labels
        .insert(PROFILE_LABEL.to_string(), unique.to_string());
    let mut adjustments = Vec::new();
    let host_nanos = machine.host_cpus.saturating_mul(1_000_000_000);
    if let Some(nanos) = container
        .resources
        .nano_cpus
        .filter(|nanos| *nanos > host_nanos)
    {
        adjustments.push(format!(
            "cpus {} lowered to the host's {} (the daemon refuses more)",
            agentc_policy::format_cpus(nanos),
            machine.host_cpus
        ));
        container.resources.nano_cpus = Some(host_nanos);
    }
    let mut secrets = Vec::new();
    // The workload's secrets, and the keys its egress proxy holds (`[credentials]`).
    let proxy_env = container
        .egress
        .iter()
        .flat_map(|egress| egress.proxy.env.iter());
    for var in container.env.iter().chain(proxy_env) {
        if !matches!(var.value, EnvValue::Secret { .. }) {
            continue;
        }
        // The docker CLI reads the secrets it passes through from its own environment, and
        // reads DOCKER_* variables for itself too: a dummy DOCKER_HOST would redirect it.
        let value = match var.name.as_str() {
            "DOCKER_HOST" => {
                adjustments.push(
                    "secret DOCKER_HOST given the daemon's real address (the docker cli reads \
                     it too)"
                        .to_string(),
                );
                std::env::var("DOCKER_HOST")
                    .ok()
                    .filter(|host| !host.is_empty())
                    .unwrap_or_else(|| "unix:///var/run/docker.sock".to_string())
            }
            name if name.starts_with("DOCKER_") => {
                return Err(format!(
                    "secret {name} is also read by the docker cli itself; no dummy value is safe"
                ))
            }
            name => format!("dummy-{}", name.to_lowercase()),
        };
        secrets.push((var.name.clone(), value));
    }
    Ok(Localized {
        container,
        volumes,
        networks,
        secrets,
        adjustments,
    })
}

/// The real path of a virtual bind source.
fn local_path(path: &str, machine: &LocalMachine) -> Result<std::path::PathBuf, String> {
    use crate::fixtures::{fixtures_dir, VIRTUAL_HOME, VIRTUAL_WORKSPACE};
    let under = |root: &str| {
        path.strip_prefix(root)
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
            .map(|rest| rest.trim_start_matches('/').to_string())
    };
    let join = |root: &std::path::Path, rest: String| {
        if rest.is_empty() {
            root.to_path_buf()
        } else {
            root.join(rest)
        }
    };
    if let Some(rest) = path.strip_prefix("/profiles/") {
        let real = fixtures_dir().join(rest);
        // Docker wants a clean absolute path (`fixtures_dir()` holds a `..`).
        return Ok(std::fs::canonicalize(&real).unwrap_or(real));
    }
    if let Some(rest) = under(VIRTUAL_WORKSPACE) {
        return Ok(join(&machine.workspace, rest));
    }
    if let Some(rest) = under(VIRTUAL_HOME) {
        return Ok(join(&machine.home, rest));
    }
    Err(format!(
        "bind source {path} is outside the virtual profile, workspace and home directories"
    ))
}

#[cfg(test)]
mod localize_tests {
    use super::{localize, LocalMachine, PROFILE_LABEL};
    use crate::fixtures::{self, fixture_files, load_fixture};
    use agentc_policy::{Action, ContainerSpec, LaunchKind, LaunchSpec, MountSource, Network};

    /// A machine whose workspace and home live in a temporary directory, removed with it.
    fn machine(api_version: (u32, u32)) -> (LocalMachine, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let machine = LocalMachine {
            image: "agentc-test/busybox:local".to_string(),
            workspace: dir.path().join("workspace"),
            home: dir.path().join("home"),
            api_version,
            host_cpus: 2,
        };
        std::fs::create_dir(&machine.workspace).unwrap();
        (machine, dir)
    }

    fn container(spec: &LaunchSpec) -> &ContainerSpec {
        match &spec.action {
            Action::Container(container) => container,
            Action::Build(_) => panic!("not a container"),
        }
    }

    /// Every container launch of every fixture that resolves with the virtual inputs.
    fn specs() -> Vec<LaunchSpec> {
        fixture_files("valid")
            .iter()
            .flat_map(|file| {
                let loaded = load_fixture(file).unwrap();
                fixtures::launches(&loaded)
                    .into_iter()
                    .filter_map(move |launch| fixtures::resolve(&loaded, &launch).ok())
                    .collect::<Vec<_>>()
            })
            .filter(|spec| matches!(spec.action, Action::Container(_)))
            .collect()
    }

    #[test]
    fn virtual_paths_become_real_and_names_become_unique() {
        let (machine, _dir) = machine((1, 47));
        let specs = specs();
        assert!(specs.len() > 20);
        let mut binds = 0;
        let mut outside = 0;
        for spec in &specs {
            let local = match localize(spec, &machine, "u1") {
                Ok(local) => local,
                // Binds of the host's `/` or `/home` (the finding fixtures) stay virtual.
                Err(reason) if reason.contains("outside the virtual") => {
                    outside += 1;
                    continue;
                }
                Err(reason) => panic!("{}: {reason}", spec.profile),
            };
            let original = container(spec);
            assert_eq!(local.container.image, machine.image);
            assert_eq!(local.container.labels[PROFILE_LABEL], "u1");
            for (before, after) in original.mounts.iter().zip(&local.container.mounts) {
                assert_eq!(before.target, after.target);
                match (&before.source, &after.source) {
                    (MountSource::Bind { path: virt }, MountSource::Bind { path: real }) => {
                        binds += 1;
                        assert!(std::path::Path::new(real).exists(), "{virt} -> {real}");
                        if virt.starts_with("/profiles/") {
                            assert!(!real.contains(".."), "{real}");
                            assert!(real.contains("fixtures"), "{real}");
                        } else {
                            assert!(
                                real.starts_with(&*machine.home.to_string_lossy())
                                    || real.starts_with(&*machine.workspace.to_string_lossy()),
                                "{virt} -> {real}"
                            );
                        }
                    }
                    (
                        MountSource::Volume { name: before, .. },
                        MountSource::Volume { name: after, .. },
                    ) => {
                        assert_eq!(after, &format!("{before}-u1"));
                        assert!(local.volumes.contains(after));
                    }
                    other => panic!("mount kind changed: {other:?}"),
                }
            }
            match (&local.container.network, &local.container.egress) {
                // Behind an egress proxy: the isolated network is the executor's, made unique;
                // the test creates only a named outside network.
                (Network::Named { name }, Some(egress)) => {
                    assert!(name.ends_with("-u1-egress"), "{name}");
                    assert_eq!(&egress.network.name, name);
                    let outside: Vec<String> = match &egress.outside {
                        Network::Named { name } => vec![name.clone()],
                        _ => Vec::new(),
                    };
                    assert_eq!(local.networks, outside);
                }
                (Network::Named { name }, None) => {
                    assert!(name.ends_with("-u1"), "{name}");
                    assert_eq!(local.networks, vec![name.clone()]);
                }
                _ => {}
            }
            assert!(local
                .secrets
                .iter()
                .all(|(name, value)| name == "DOCKER_HOST" || value.starts_with("dummy-")));
        }
        assert!(binds > 10, "{binds}");
        // The finding fixtures that bind `/`, `/home` and the host's own directories
        // (`finding-bind-*`, issue 36) stay virtual; nothing else does.
        assert!(
            outside <= 6,
            "{outside} launches bind paths outside the virtual directories"
        );
    }

    #[test]
    fn what_cannot_run_here_is_refused_with_a_reason() {
        let (old, _dir) = machine((1, 41));
        let subpath = specs()
            .into_iter()
            .find(|spec| {
                container(spec).mounts.iter().any(|mount| {
                    matches!(
                        mount.source,
                        MountSource::Volume {
                            subpath: Some(_),
                            ..
                        }
                    )
                })
            })
            .expect("a fixture with a volume subpath");
        let reason = localize(&subpath, &old, "u2").unwrap_err();
        assert!(reason.contains("needs engine api 1.45"), "{reason}");
        assert!(localize(&subpath, &machine((1, 45)).0, "u2").is_ok());

        let mut spec = specs().remove(0);
        let Action::Container(container) = &mut spec.action else {
            unreachable!()
        };
        container.devices.push(agentc_policy::Device {
            host_path: "/dev/agentc-no-such-device".to_string(),
            container_path: "/dev/x".to_string(),
            permissions: "rwm".to_string(),
        });
        container.resources.nano_cpus = Some(8_000_000_000);
        let reason = localize(&spec, &old, "u2").unwrap_err();
        assert!(reason.contains("/dev/agentc-no-such-device"), "{reason}");
        let Action::Container(container) = &mut spec.action else {
            unreachable!()
        };
        container.devices.clear();
        let local = localize(&spec, &old, "u2").unwrap();
        assert_eq!(local.container.resources.nano_cpus, Some(2_000_000_000));
        assert!(
            local.adjustments[0].contains("lowered"),
            "{:?}",
            local.adjustments
        );

        spec.kind = LaunchKind::Build;
        spec.action = Action::Build(agentc_policy::BuildSpec {
            tag: "t".to_string(),
            context: "/profiles/valid".to_string(),
            dockerfile: None,
            named_contexts: Default::default(),
            build_args: Default::default(),
            labels: Default::default(),
        });
        assert!(localize(&spec, &old, "u2")
            .unwrap_err()
            .contains("image build"));
    }
}
