//! The comparison: each fact the probe observed, and each field `docker inspect` reports,
//! checked against the [`ContainerSpec`] that was asked for, and the checks as a table.
//!
//! A fact that could not be observed fails its check: verify only passes what it saw.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use agentc_policy::{AppArmor, ContainerSpec, EnvValue, Hinted, MountSource, Network};

use super::check::{check, fact_check, Check, Fact, NOT_OBSERVED};
use super::parse::{capability_names, Limit, Observation};

/// PID 1's command name when docker runs its init (`--init`).
const DOCKER_INIT: &str = "docker-init";
/// PID 1's command name when Podman runs its init (catatonit).
const PODMAN_INIT: &str = "podman-init";

/// Compares the spec with what the kernel and `docker inspect` report.
///
/// A fact that could not be observed fails its check: verify only passes what it saw.
pub fn compare(
    spec: &ContainerSpec,
    observed: &Observation,
    inspect: &serde_json::Value,
) -> Vec<Check> {
    let mut checks = Vec::new();
    compare_identity(spec, observed, &mut checks);
    compare_filesystems(spec, observed, &mut checks);
    compare_privileges(spec, observed, inspect, &mut checks);
    compare_network(spec, observed, inspect, &mut checks);
    compare_resources(spec, observed, &mut checks);
    compare_metadata(spec, observed, inspect, &mut checks);
    super::gvisor::adjust(spec, observed, inspect, &mut checks);
    checks
}

/// User, working directory and PID 1.
fn compare_identity(spec: &ContainerSpec, observed: &Observation, checks: &mut Vec<Check>) {
    // docker bind-mounts its init at /sbin/docker-init, so that is PID 1's name under --init.
    let expected = if spec.init {
        DOCKER_INIT
    } else {
        "the entrypoint, not docker-init"
    };
    let (ok, seen) = match &observed.pid1 {
        // Podman's init (catatonit) is named podman-init.
        Some(name) => (
            (name == DOCKER_INIT || name == PODMAN_INIT) == spec.init,
            name.clone(),
        ),
        None => (false, NOT_OBSERVED.to_string()),
    };
    checks.push(check("PID 1", expected, seen, ok));
    if let Some(user) = &spec.user {
        let seen = match (observed.uid, observed.gid) {
            (Some(uid), Some(gid)) => Some((uid, gid)),
            _ => None,
        };
        let (ok, text) = match seen {
            Some((uid, gid)) => {
                let name = observed.user_name.as_deref().unwrap_or("");
                let group = observed.group_name.as_deref().unwrap_or("");
                // `user:group` may name the group (`nobody:nogroup`), as it may name the user.
                let ok = match user.split_once(':') {
                    Some((u, g)) => {
                        (u == uid.to_string() || u == name) && (g == gid.to_string() || g == group)
                    }
                    None => user == &uid.to_string() || user == name,
                };
                let named = match (name, group) {
                    ("", _) => String::new(),
                    (name, "") => format!(" ({name})"),
                    (name, group) => format!(" ({name}:{group})"),
                };
                (ok, format!("{uid}:{gid}{named}"))
            }
            None => (false, NOT_OBSERVED.to_string()),
        };
        checks.push(check("user", user.as_str(), text, ok));
    }
    if let Some(dir) = &spec.working_dir {
        let seen = observed.working_dir.clone();
        let ok = seen.as_deref() == Some(dir.as_str());
        checks.push(check(
            "working directory",
            dir.as_str(),
            seen.unwrap_or_else(|| NOT_OBSERVED.to_string()),
            ok,
        ));
    }
}

/// Root filesystem, tmpfs mounts and bind/volume mounts.
fn compare_filesystems(spec: &ContainerSpec, observed: &Observation, checks: &mut Vec<Check>) {
    let root = observed.mount_at("/");
    let root_ro = root.map(|entry| entry.has("ro"));
    let expected = if spec.read_only_root {
        "read-only"
    } else {
        "writable"
    };
    let (ok, seen) = match root_ro {
        None => (false, NOT_OBSERVED.to_string()),
        Some(ro) => {
            let write = match observed.root_write_succeeded {
                Some(true) => ", write succeeded",
                Some(false) => ", write refused",
                None => "",
            };
            let ok = if spec.read_only_root {
                // The mount option is the fact; a successful write would contradict it.
                ro && observed.root_write_succeeded != Some(true)
            } else {
                !ro
            };
            let state = if ro { "read-only" } else { "writable" };
            (ok, format!("{state}{write}"))
        }
    };
    checks.push(check("root filesystem", expected, seen, ok));

    for tmpfs in &spec.tmpfs {
        let expected = format!(
            "tmpfs, {}, {}",
            if observed.from_host { "rw" } else { "writable" },
            if tmpfs.exec { "exec" } else { "noexec" }
        );
        let what = format!("tmpfs {}", tmpfs.target);
        let Some(entry) = observed.mount_at(&tmpfs.target) else {
            checks.push(check(what, expected, "not mounted", false));
            continue;
        };
        let write = observed
            .tmpfs_writes
            .iter()
            .rev()
            .find(|write| write.target == tmpfs.target);
        let option_exec = !entry.has("noexec");
        let writable = write.map(|write| write.writable);
        let ran = write.and_then(|write| write.exec);
        let seen = format!(
            "{}, {}, {}",
            entry.fstype,
            match writable {
                Some(true) => "writable",
                Some(false) => "write refused",
                None => "write not tried",
            },
            match (option_exec, ran) {
                (true, Some(false)) => "exec option but execution refused",
                (false, Some(true)) => "noexec option but execution succeeded",
                (true, _) => "exec",
                (false, _) => "noexec",
            }
        );
        // The probe writes as the container's user: a tmpfs it cannot write (a runtime that
        // copies the image directory's mode over agentc's `mode=1777`, `/run` often root's
        // 0755) fails the row, since the agent cannot write there either.
        let must_write = !observed.from_host;
        let ok = entry.fstype == "tmpfs"
            && (writable == Some(true) || !must_write)
            && !(observed.from_host && entry.has("ro"))
            && option_exec == tmpfs.exec
            && ran.is_none_or(|ran| ran == tmpfs.exec);
        checks.push(check(what, expected, seen, ok));
    }

    for mount in &spec.mounts {
        let kind = match &mount.source {
            MountSource::Bind { .. } => "bind",
            MountSource::Volume { .. } => "volume",
        };
        let expected = if mount.read_only {
            "read-only"
        } else {
            "read-write"
        };
        let what = format!("{kind} mount {}", mount.target);
        let (ok, seen) = match observed.mount_at(&mount.target) {
            None => (false, "not mounted".to_string()),
            Some(entry) => {
                let ro = entry.has("ro");
                (
                    ro == mount.read_only,
                    if ro { "read-only" } else { "read-write" }.to_string(),
                )
            }
        };
        checks.push(check(what, expected, seen, ok));
    }
}

/// The capability names of `set`, comma-separated, or `none`.
pub(super) fn capability_list(set: &BTreeSet<String>) -> String {
    if set.is_empty() {
        "none".to_string()
    } else {
        set.iter().cloned().collect::<Vec<_>>().join(",")
    }
}

/// The capability rows: the bounding set against `declared` (exactly, under `drop_all`; else
/// as a subset of `default`, such as "daemon default", plus them), then the permitted and
/// effective sets within the bounding set. The bounding set unobserved fails its row.
pub(super) fn capability_checks(
    declared: &BTreeSet<String>,
    drop_all: bool,
    default: &str,
    observed: &Observation,
) -> Vec<Check> {
    let Some(bounding) = observed.cap_bounding.map(capability_names) else {
        return vec![fact_check(
            Fact::CapabilityBounding,
            capability_list(declared),
            NOT_OBSERVED,
            false,
        )];
    };
    let (expected, ok) = if drop_all {
        (capability_list(declared), &bounding == declared)
    } else {
        (
            format!("{default} plus {}", capability_list(declared)),
            declared.is_subset(&bounding),
        )
    };
    let mut checks = vec![fact_check(
        Fact::CapabilityBounding,
        expected,
        capability_list(&bounding),
        ok,
    )];
    for (what, mask) in [
        ("permitted capabilities", observed.cap_permitted),
        ("effective capabilities", observed.cap_effective),
    ] {
        if let Some(set) = mask.map(capability_names) {
            let ok = set.is_subset(&bounding);
            checks.push(check(
                what,
                "within the bounding set",
                capability_list(&set),
                ok,
            ));
        }
    }
    checks
}

/// Capabilities, no-new-privileges and AppArmor.
fn compare_privileges(
    spec: &ContainerSpec,
    observed: &Observation,
    inspect: &serde_json::Value,
    checks: &mut Vec<Check>,
) {
    let declared: BTreeSet<String> = spec
        .cap_add
        .iter()
        .map(|cap| cap.as_str().to_string())
        .collect();
    // The bounding set is what docker's --cap-drop/--cap-add write; a non-root user's effective
    // set is empty even when the bounding set is not, so the effective set is checked as a
    // subset.
    checks.extend(capability_checks(
        &declared,
        spec.cap_drop_all,
        "daemon default",
        observed,
    ));
    if let Some(ambient) = observed.cap_ambient.map(capability_names) {
        let ok = ambient.is_subset(&declared) || !spec.cap_drop_all;
        checks.push(check(
            "ambient capabilities",
            "within the declared set",
            capability_list(&ambient),
            ok,
        ));
    }

    let seen = match observed.no_new_privs {
        Some(true) => "NoNewPrivs 1",
        Some(false) => "NoNewPrivs 0",
        None => NOT_OBSERVED,
    };
    if spec.no_new_privileges {
        checks.push(fact_check(
            Fact::NoNewPrivileges,
            "NoNewPrivs 1",
            seen,
            observed.no_new_privs == Some(true),
        ));
    } else {
        checks.push(fact_check(
            Fact::NoNewPrivileges,
            "not required",
            seen,
            observed.no_new_privs.is_some(),
        ));
    }

    // agentc never turns seccomp off, so the daemon's filter must be in force.
    let (ok, seen) = match observed.seccomp {
        Some(2) => (true, "filter".to_string()),
        Some(0) => (false, "disabled".to_string()),
        Some(mode) => (false, format!("mode {mode}")),
        None => (false, NOT_OBSERVED.to_string()),
    };
    checks.push(fact_check(Fact::Seccomp, "filter", seen, ok));

    if let Some(AppArmor::Unconfined) = spec.apparmor {
        let profile = inspect
            .pointer("/AppArmorProfile")
            .and_then(|value| value.as_str());
        // On a host without AppArmor the daemon applies no profile and inspect says "": the
        // container is as unconfined as asked.
        let seen = match profile {
            None => "absent from inspect",
            Some("") => "none (apparmor is not enabled on the host)",
            Some(profile) => profile,
        };
        checks.push(check(
            "apparmor profile",
            "unconfined",
            seen,
            matches!(profile, Some("unconfined" | "")),
        ));
    }
}

/// Network interfaces and the attachment docker reports.
fn compare_network(
    spec: &ContainerSpec,
    observed: &Observation,
    inspect: &serde_json::Value,
    checks: &mut Vec<Check>,
) {
    let interfaces = observed.interfaces.as_ref();
    let seen = interfaces
        .map(|set| set.iter().cloned().collect::<Vec<_>>().join(","))
        .unwrap_or_else(|| NOT_OBSERVED.to_string());
    let others = interfaces.map(|set| set.iter().any(|name| name != "lo"));
    let (expected, ok, modes): (&str, bool, Vec<String>) = match &spec.network {
        Network::None => (
            "only lo",
            interfaces.is_some_and(|set| set.iter().all(|name| name == "lo")),
            vec!["none".to_string()],
        ),
        Network::Default => (
            "lo and an interface",
            others == Some(true),
            vec!["default".to_string(), "bridge".to_string()],
        ),
        Network::Named { name } => (
            "lo and an interface",
            others == Some(true),
            vec![name.clone()],
        ),
    };
    checks.push(check("network interfaces", expected, seen, ok));
    let mut mode = inspect
        .pointer("/HostConfig/NetworkMode")
        .and_then(|value| value.as_str());
    // Podman says `bridge` for any bridge network; the network joined is in NetworkSettings.
    if !mode.is_some_and(|mode| modes.iter().any(|wanted| wanted == mode)) {
        if let Some(joined) = inspect
            .pointer("/NetworkSettings/Networks")
            .and_then(|networks| networks.as_object())
            .and_then(|networks| networks.keys().find(|key| modes.contains(key)))
        {
            mode = Some(joined.as_str());
        }
    }
    checks.push(check(
        "network mode",
        modes.join(" or "),
        mode.unwrap_or("absent from inspect"),
        mode.is_some_and(|mode| modes.iter().any(|wanted| wanted == mode)),
    ));
}

fn limit_text(limit: Option<Limit>) -> String {
    match limit {
        None => NOT_OBSERVED.to_string(),
        Some(Limit::Unlimited) => "unlimited".to_string(),
        Some(Limit::Value(value)) => value.to_string(),
    }
}

fn limit_check(fact: Fact, wanted: Option<u64>, seen: Option<Limit>) -> Check {
    let expected = wanted.map(Limit::Value).unwrap_or(Limit::Unlimited);
    fact_check(
        fact,
        limit_text(Some(expected)),
        limit_text(seen),
        seen == Some(expected),
    )
}

/// cgroup limits and the size of `/dev/shm`.
fn compare_resources(spec: &ContainerSpec, observed: &Observation, checks: &mut Vec<Check>) {
    let resources = &spec.resources;
    checks.push(limit_check(
        Fact::MemoryLimit,
        resources.memory_bytes,
        observed.memory_limit(),
    ));
    if let Some(swap) = resources.memory_swap_bytes {
        checks.push(limit_check(
            Fact::MemorySwapLimit,
            Some(swap),
            observed.memory_swap_limit(),
        ));
    }
    checks.push(limit_check(
        Fact::PidsLimit,
        resources.pids_limit.map(u64::from),
        observed.pids_limit(),
    ));
    checks.push(limit_check(
        Fact::CpuQuota,
        resources.nano_cpus,
        observed.nano_cpus(),
    ));
    let shm = observed.shm_size();
    let seen = shm
        .map(|size| size.to_string())
        .unwrap_or_else(|| NOT_OBSERVED.to_string());
    match resources.shm_size_bytes {
        Some(size) => checks.push(fact_check(
            Fact::ShmSize,
            size.to_string(),
            seen,
            shm == Some(size),
        )),
        None => checks.push(fact_check(
            Fact::ShmSize,
            "daemon default",
            seen,
            shm.is_some(),
        )),
    }
}

/// Log driver, labels and environment names, which only `docker inspect` and the environment
/// tell.
fn compare_metadata(
    spec: &ContainerSpec,
    observed: &Observation,
    inspect: &serde_json::Value,
    checks: &mut Vec<Check>,
) {
    let driver = inspect
        .pointer("/HostConfig/LogConfig/Type")
        .and_then(|value| value.as_str());
    let options: BTreeMap<String, String> = inspect
        .pointer("/HostConfig/LogConfig/Config")
        .and_then(|value| value.as_object())
        .map(|object| {
            object
                .iter()
                .map(|(key, value)| (key.clone(), value.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    let render = |driver: &str, options: &BTreeMap<String, String>| {
        let mut text = driver.to_string();
        for (key, value) in options {
            let _ = write!(text, " {key}={value}");
        }
        text
    };
    let seen = driver
        .map(|driver| render(driver, &options))
        .unwrap_or_else(|| "absent from inspect".to_string());
    match &spec.log {
        // Podman's k8s-file (what agentc renders there for json-file): one file truncated in
        // place at max-size; neither its inspect nor its API socket's reports the options.
        Some(log) if log.driver == "k8s-file" => checks.push(check(
            "log driver",
            render(&log.driver, &log.options),
            seen,
            matches!(driver, Some("k8s-file" | "json-file")),
        )),
        Some(log) => {
            // The daemon merges its own default options (daemon.json `log-opts`) into a
            // container's when the driver is its default one, so extra options are allowed.
            let ok = driver == Some(log.driver.as_str())
                && log
                    .options
                    .iter()
                    .all(|(key, value)| options.get(key) == Some(value));
            checks.push(check(
                "log driver",
                render(&log.driver, &log.options),
                seen,
                ok,
            ));
        }
        None => checks.push(check(
            "log driver",
            "daemon default",
            seen,
            driver.is_some(),
        )),
    }

    if !spec.labels.is_empty() {
        let labels = inspect
            .pointer("/Config/Labels")
            .and_then(|value| value.as_object());
        let missing: Vec<&str> = spec
            .labels
            .iter()
            .filter(|(key, value)| {
                labels
                    .and_then(|labels| labels.get(*key))
                    .and_then(|seen| seen.as_str())
                    != Some(value.as_str())
            })
            .map(|(key, _)| key.as_str())
            .collect();
        let seen = if missing.is_empty() {
            "all present".to_string()
        } else {
            format!("missing or different: {}", missing.join(","))
        };
        checks.push(check(
            "labels",
            format!("{} labels", spec.labels.len()),
            seen,
            missing.is_empty(),
        ));
    }

    // Names only: a value, secret or not, never leaves the container.
    let required: Vec<&str> = spec
        .env
        .iter()
        .filter(|var| !matches!(var.value, EnvValue::Secret { required: false }))
        .map(|var| var.name.as_str())
        .collect();
    if !required.is_empty() {
        let (ok, seen) = match &observed.env_names {
            None => (false, NOT_OBSERVED.to_string()),
            Some(names) => {
                let missing: Vec<&str> = required
                    .iter()
                    .copied()
                    .filter(|name| !names.contains(*name))
                    .collect();
                if missing.is_empty() {
                    (true, "all set".to_string())
                } else {
                    (false, format!("unset: {}", missing.join(",")))
                }
            }
        };
        checks.push(check(
            "environment names",
            format!("{} set", required.len()),
            seen,
            ok,
        ));
    }
}

/// The checks as JSON, in stable field names (docs/commands.md, "verify"): `{"profile", "checks":
/// [{"check", "status", "expected", "seen", "hint"}], "ok", "warn", "fail", "skip"}`, `status`
/// being `ok`, `warn`, `fail` or `skip` and `hint` `null` unless a failed or warned check has
/// one; the counts add up to the number of checks.
pub fn report_json(profile: &str, checks: &[Check]) -> serde_json::Value {
    let count = |wanted: &str| {
        checks
            .iter()
            .filter(|check| check.status() == wanted)
            .count()
    };
    serde_json::json!({
        "profile": profile,
        "checks": checks
            .iter()
            .map(|check| serde_json::json!({
                "check": check.what,
                "status": check.status(),
                "expected": check.expected,
                "seen": check.seen,
                "hint": check.shown_hint(),
            }))
            .collect::<Vec<_>>(),
        "ok": count("ok"),
        "warn": count("warn"),
        "fail": count("fail"),
        "skip": count("skip"),
    })
}

/// Renders checks as an aligned table: `RESULT  CHECK  EXPECTED  SEEN` (RESULT `ok`, `warn`,
/// `FAIL` or `skip`), then each failed or warned check's hint (`CHECK: SEEN` and
/// `  hint: HINT`), then a summary line (`verify: N checks, N failed`, with `, N warned` and
/// `, N skipped` when any was; worded so CI log scanners do not take it for a test count).
pub fn render_table(checks: &[Check]) -> String {
    let headers = ["RESULT", "CHECK", "EXPECTED", "SEEN"];
    let rows: Vec<[&str; 4]> = checks
        .iter()
        .map(|check| {
            [
                match check.status() {
                    "fail" => "FAIL",
                    status => status,
                },
                check.what.as_str(),
                check.expected.as_str(),
                check.seen.as_str(),
            ]
        })
        .collect();
    let mut widths = headers.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(headers).chain(rows) {
        let mut line = String::new();
        for (index, (cell, width)) in row.iter().zip(widths).enumerate() {
            if index + 1 == row.len() {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<width$}  ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    for check in checks.iter().filter(|check| !check.ok || check.warned) {
        if let Some(hint) = &check.hint {
            let hinted = agentc_policy::Hint::new(format!("{}: {}", check.what, check.seen), hint);
            let _ = writeln!(out, "{}", hinted.with_hint());
        }
    }
    let failed = checks.iter().filter(|check| !check.ok).count();
    let _ = write!(out, "verify: {} checks, {failed} failed", checks.len());
    let warned = checks.iter().filter(|check| check.warned).count();
    if warned > 0 {
        let _ = write!(out, ", {warned} warned");
    }
    let skipped = checks.iter().filter(|check| check.skipped).count();
    if skipped > 0 {
        let _ = write!(out, ", {skipped} skipped");
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use agentc_policy::{Capability, EnvVar, LogConfig};

    use super::*;
    use crate::parse::{parse_probe, words};
    use crate::recorded::{
        failures, find, hardened_inspect, hardened_spec, non_root_inspect, non_root_spec, HARDENED,
        NON_ROOT,
    };

    #[test]
    fn hardened_spec_matches_its_recorded_launch() {
        let checks = compare(
            &hardened_spec(),
            &parse_probe(HARDENED).unwrap(),
            &hardened_inspect(),
        );
        assert_eq!(
            failures(&checks),
            Vec::<&str>::new(),
            "{}",
            render_table(&checks)
        );
        for what in [
            "root filesystem",
            "tmpfs /tmp",
            "tmpfs /run",
            "bind mount /data",
            "capability bounding set",
            "no new privileges",
            "network interfaces",
            "memory limit (bytes)",
            "memory+swap limit (bytes)",
            "pids limit",
            "/dev/shm size (bytes)",
            "log driver",
        ] {
            find(&checks, what);
        }
    }

    #[test]
    fn each_hardening_difference_fails_its_own_check() {
        let mut spec = hardened_spec();
        spec.cap_add = [Capability::NetAdmin].into_iter().collect();
        spec.tmpfs[0].exec = true;
        spec.mounts[0].read_only = false;
        spec.resources.memory_bytes = Some(1 << 30);
        spec.resources.pids_limit = None;
        spec.resources.shm_size_bytes = Some(1 << 26);
        spec.network = Network::Default;
        let checks = compare(&spec, &parse_probe(HARDENED).unwrap(), &hardened_inspect());
        assert_eq!(
            failures(&checks),
            vec![
                "tmpfs /tmp",
                "bind mount /data",
                "capability bounding set",
                "network interfaces",
                "network mode",
                "memory limit (bytes)",
                "pids limit",
                "/dev/shm size (bytes)",
            ]
        );
        assert_eq!(find(&checks, "capability bounding set").seen, "NET_RAW");
        assert_eq!(find(&checks, "pids limit").seen, "64");
        assert_eq!(find(&checks, "pids limit").expected, "unlimited");
    }

    #[test]
    fn a_writable_root_fails_a_read_only_spec() {
        let output = HARDENED
            .replace(
                "MOUNT=/ fuse.fuse-overlayfs ro,",
                "MOUNT=/ fuse.fuse-overlayfs rw,",
            )
            .replace("ROOT_WRITE=denied", "ROOT_WRITE=ok");
        let checks = compare(
            &hardened_spec(),
            &parse_probe(&output).unwrap(),
            &hardened_inspect(),
        );
        let root = find(&checks, "root filesystem");
        assert!(!root.ok);
        assert_eq!(root.seen, "writable, write succeeded");
    }

    #[test]
    fn a_tmpfs_the_containers_user_cannot_write_fails_whoever_tried() {
        let refused = HARDENED.replace("TMPFS_WRITE=/run ok exec", "TMPFS_WRITE=/run denied");
        let checks = compare(
            &hardened_spec(),
            &parse_probe(&refused).unwrap(),
            &hardened_inspect(),
        );
        assert_eq!(failures(&checks), vec!["tmpfs /run"]);
        // A non-root agent cannot write where the runtime kept the image directory's 0755
        // over agentc's mode=1777: the agent could not either, so the row fails.
        let non_root = refused.replace("UID=0", "UID=1000");
        let checks = compare(
            &hardened_spec(),
            &parse_probe(&non_root).unwrap(),
            &hardened_inspect(),
        );
        assert_eq!(failures(&checks), vec!["tmpfs /run"]);
        let run = find(&checks, "tmpfs /run");
        assert_eq!(run.expected, "tmpfs, writable, exec");
        assert_eq!(run.seen, "tmpfs, write refused, exec");
        let written = non_root.replace("TMPFS_WRITE=/run denied", "TMPFS_WRITE=/run ok exec");
        let checks = compare(
            &hardened_spec(),
            &parse_probe(&written).unwrap(),
            &hardened_inspect(),
        );
        assert_eq!(failures(&checks), Vec::<&str>::new());
        // A script that runs from a mount marked noexec contradicts the option.
        let ran = HARDENED.replace("TMPFS_WRITE=/tmp ok noexec", "TMPFS_WRITE=/tmp ok exec");
        let checks = compare(
            &hardened_spec(),
            &parse_probe(&ran).unwrap(),
            &hardened_inspect(),
        );
        let tmp = find(&checks, "tmpfs /tmp");
        assert!(!tmp.ok);
        assert_eq!(
            tmp.seen,
            "tmpfs, writable, noexec option but execution succeeded"
        );
    }

    #[test]
    fn recorded_non_root_launch_matches_its_spec() {
        let observed = parse_probe(NON_ROOT).unwrap();
        assert_eq!(observed.user_name.as_deref(), Some("claude"));
        assert_eq!(observed.cap_effective, Some(0));
        assert_eq!(observed.memory_limit(), Some(Limit::Unlimited));
        assert_eq!(observed.nano_cpus(), Some(Limit::Value(1_500_000_000)));
        // The second line of MULTI's value looks like `B=c` but is not a variable.
        assert_eq!(
            observed.env_names,
            Some(words("PWD SHLVL MULTI HOME HOSTNAME FOO PATH"))
        );
        let checks = compare(&non_root_spec(), &observed, &non_root_inspect());
        assert_eq!(
            failures(&checks),
            Vec::<&str>::new(),
            "{}",
            render_table(&checks)
        );
        assert_eq!(find(&checks, "user").seen, "1000:1000 (claude)");
        assert_eq!(find(&checks, "effective capabilities").seen, "none");
        assert_eq!(
            find(&checks, "log driver").seen,
            "json-file max-file=3 max-size=10m"
        );
    }

    #[test]
    fn metadata_differences_fail_and_name_what_differs() {
        let mut spec = non_root_spec();
        spec.user = Some("hermes".to_string());
        spec.working_dir = Some("/opt/data".to_string());
        spec.env.push(EnvVar {
            name: "API_KEY".to_string(),
            value: EnvValue::Secret { required: true },
        });
        spec.labels
            .insert("io.agentc.kind".to_string(), "run".to_string());
        spec.log = Some(LogConfig {
            driver: "local".to_string(),
            options: BTreeMap::new(),
        });
        spec.apparmor = Some(AppArmor::Unconfined);
        let mut inspect = non_root_inspect();
        inspect["AppArmorProfile"] = "docker-default".into();
        let checks = compare(&spec, &parse_probe(NON_ROOT).unwrap(), &inspect);
        assert_eq!(
            failures(&checks),
            vec![
                "user",
                "working directory",
                "apparmor profile",
                "log driver",
                "labels",
                "environment names"
            ]
        );
        assert_eq!(find(&checks, "environment names").seen, "unset: API_KEY");
        assert_eq!(
            find(&checks, "labels").seen,
            "missing or different: io.agentc.kind"
        );
    }

    /// Regression: `agentc verify fixtures/valid/sandbox-fuse.toml` failed on a host without
    /// AppArmor, where inspect's `AppArmorProfile` is "" because no profile applies at all.
    #[test]
    fn no_apparmor_on_the_host_is_unconfined() {
        let mut spec = non_root_spec();
        spec.apparmor = Some(AppArmor::Unconfined);
        let observed = parse_probe(NON_ROOT).unwrap();
        let checks = compare(&spec, &observed, &non_root_inspect());
        let apparmor = find(&checks, "apparmor profile");
        assert!(apparmor.ok, "{}", render_table(&checks));
        assert_eq!(apparmor.seen, "none (apparmor is not enabled on the host)");
        let mut inspect = non_root_inspect();
        inspect["AppArmorProfile"] = "unconfined".into();
        assert!(find(&compare(&spec, &observed, &inspect), "apparmor profile").ok);
        inspect.as_object_mut().unwrap().remove("AppArmorProfile");
        let checks = compare(&spec, &observed, &inspect);
        assert!(!find(&checks, "apparmor profile").ok);
        assert_eq!(
            find(&checks, "apparmor profile").seen,
            "absent from inspect"
        );
    }

    /// Regression: `user = "nobody:nogroup"` (fixtures/valid/sandbox-user-name.toml) failed
    /// because only a numeric group matched; the probe now reports the group's name too.
    #[test]
    fn a_named_group_matches_the_group_the_probe_names() {
        let output = NON_ROOT
            .replace("UID=1000\nGID=1000", "UID=65534\nGID=65534")
            .replace("USER=claude", "USER=nobody\nGROUP=nogroup");
        let observed = parse_probe(&output).unwrap();
        assert_eq!(observed.group_name.as_deref(), Some("nogroup"));
        let mut spec = non_root_spec();
        for (user, ok) in [
            ("nobody:nogroup", true),
            ("65534:nogroup", true),
            ("nobody:65534", true),
            ("nobody", true),
            ("nobody:users", false),
            ("claude:nogroup", false),
        ] {
            spec.user = Some(user.to_string());
            let checks = compare(&spec, &observed, &non_root_inspect());
            let check = find(&checks, "user");
            assert_eq!(check.ok, ok, "{user}");
            assert_eq!(check.seen, "65534:65534 (nobody:nogroup)");
        }
        // Without a GROUP line (an image whose /etc/group lacks the gid) only the number matches.
        let unnamed = output.replace("GROUP=nogroup\n", "");
        spec.user = Some("nobody:nogroup".to_string());
        let checks = compare(&spec, &parse_probe(&unnamed).unwrap(), &non_root_inspect());
        assert!(!find(&checks, "user").ok);
        assert_eq!(find(&checks, "user").seen, "65534:65534 (nobody)");
    }

    #[test]
    fn unobserved_facts_fail_rather_than_pass() {
        let checks = compare(
            &hardened_spec(),
            &parse_probe("PROBE=1\nEND=1\n").unwrap(),
            &serde_json::json!({}),
        );
        assert!(
            checks.iter().all(|check| !check.ok),
            "{}",
            render_table(&checks)
        );
        assert_eq!(find(&checks, "memory limit (bytes)").seen, "not observed");
    }

    #[test]
    fn table_is_aligned_and_ends_with_a_summary() {
        let checks = vec![
            check("root filesystem", "read-only", "read-only", true),
            check("pids", "64", "max", false),
        ];
        assert_eq!(
            render_table(&checks),
            "RESULT  CHECK            EXPECTED   SEEN\n\
             ok      root filesystem  read-only  read-only\n\
             FAIL    pids             64         max\n\
             verify: 2 checks, 1 failed\n"
        );
    }

    /// A warned check fails nothing but shows as `warn`, with its hint under the table, and
    /// is counted in the summary.
    #[test]
    fn a_warned_check_is_shown_with_its_hint_and_fails_nothing() {
        let mut warned = check("egress.allowed", "reached", "did not resolve", true);
        warned.warned = true;
        warned.hint = Some("offline machine".into());
        let table = render_table(&[check("pids", "64", "64", true), warned]);
        assert!(table.contains("\nwarn    egress.allowed"), "{table}");
        assert!(
            table.contains("egress.allowed: did not resolve\n  hint: offline machine\n"),
            "{table}"
        );
        assert!(
            table.ends_with("verify: 2 checks, 0 failed, 1 warned\n"),
            "{table}"
        );
    }

    /// `verify --format json`: the documented field names, one status of four per check,
    /// a failed check's hint, and counts that add up.
    #[test]
    fn the_json_report_has_stable_fields_and_counts() {
        let mut failed = check("pids", "64", "max", false);
        failed.hint = Some("set resources.pids_limit".into());
        let mut passed = check("root filesystem", "read-only", "read-only", true);
        passed.hint = Some("never shown for a pass".into());
        let mut skipped = check("egress.allowed", "reached", "not tried", true);
        skipped.skipped = true;
        let mut warned = check("egress.allowed", "reached", "did not resolve", true);
        warned.warned = true;
        warned.hint = Some("offline".into());
        let report = report_json("box", &[passed, failed, skipped, warned]);
        assert_eq!(
            report,
            serde_json::json!({
                "profile": "box",
                "checks": [
                    {"check": "root filesystem", "status": "ok", "expected": "read-only",
                     "seen": "read-only", "hint": null},
                    {"check": "pids", "status": "fail", "expected": "64", "seen": "max",
                     "hint": "set resources.pids_limit"},
                    {"check": "egress.allowed", "status": "skip", "expected": "reached",
                     "seen": "not tried", "hint": null},
                    {"check": "egress.allowed", "status": "warn", "expected": "reached",
                     "seen": "did not resolve", "hint": "offline"},
                ],
                "ok": 1,
                "warn": 1,
                "fail": 1,
                "skip": 1,
            })
        );
    }
}
