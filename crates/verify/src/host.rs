//! `agentc verify NAME`: a running sandbox checked from the host side, without running anything
//! in it. Its main process's facts are read where the kernel keeps them for the host
//! ([`observe`]: `/proc/PID/status`, `mounts`, `cwd`, `net/dev`, `environ`, `cgroup` and the
//! cgroup files it names, the container's `/etc/passwd` and `/etc/group` through
//! `/proc/PID/root`) into the same [`Observation`] the probe's output becomes, and compared
//! with the spec its profile resolves to now ([`compare`](super::compare())); the spec digest
//! it was launched with is a row of its own, so a profile changed since is drift, and so is a
//! proxy that is down.
//!
//! What the host cannot see without touching the sandbox is not tried: no file is written into
//! its root or tmpfs mounts (their modes are read instead), and no egress connection is made
//! (`agentc verify PROFILE` does those in a probe launch of its own).

use std::collections::BTreeSet;
use std::path::Path;

use super::parse::{MountEntry, Observation};

/// The cgroup files the probe reads, by their path below a cgroup root (cgroup v1's
/// `CONTROLLER/FILE`, v2's `FILE`).
const CGROUP_FILES: [&str; 11] = [
    "memory/memory.limit_in_bytes",
    "memory/memory.memsw.limit_in_bytes",
    "pids/pids.max",
    "cpu/cpu.cfs_quota_us",
    "cpu/cpu.cfs_period_us",
    "cpu,cpuacct/cpu.cfs_quota_us",
    "cpu,cpuacct/cpu.cfs_period_us",
    "memory.max",
    "memory.swap.max",
    "pids.max",
    "cpu.max",
];

/// Reads the facts of the process `pid` as the probe would report them from inside, through
/// `proc` (the host's `/proc`) and `cgroup` (the host's `/sys/fs/cgroup`). An unreadable
/// `status` is an error naming the file (another user's process without root, say); the rest
/// is left unobserved when it cannot be read.
pub fn observe(proc: &Path, cgroup: &Path, pid: u32) -> Result<Observation, String> {
    let base = proc.join(pid.to_string());
    let read = |name: &str| std::fs::read_to_string(base.join(name));
    let status = read("status")
        .map_err(|error| format!("cannot read {}: {error}", base.join("status").display()))?;
    let mut observed = Observation::default();
    for line in status.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let first = value.split_whitespace().next().unwrap_or_default();
        let mask = || u64::from_str_radix(value, 16).ok();
        match key {
            "Uid" => observed.uid = first.parse().ok(),
            "Gid" => observed.gid = first.parse().ok(),
            "CapEff" => observed.cap_effective = mask(),
            "CapPrm" => observed.cap_permitted = mask(),
            "CapBnd" => observed.cap_bounding = mask(),
            "CapAmb" => observed.cap_ambient = mask(),
            "NoNewPrivs" => observed.no_new_privs = Some(value == "1"),
            "Seccomp" => observed.seccomp = value.parse().ok(),
            _ => {}
        }
    }
    observed.pid1 = read("comm").ok().map(|comm| comm.trim().to_string());
    observed.working_dir = std::fs::read_link(base.join("cwd"))
        .ok()
        .map(|dir| dir.to_string_lossy().into_owned());
    if let Ok(mounts) = read("mounts") {
        observed.mounts = mounts.lines().filter_map(mount_entry).collect();
    }
    // The write is not tried from the host: the root's mount option is the fact.
    observed.root_write_succeeded = None;
    observed.interfaces = read("net/dev").ok().map(|dev| {
        dev.lines()
            .skip(2)
            .filter_map(|line| line.split_once(':'))
            .map(|(name, _)| name.trim().to_string())
            .collect()
    });
    observed.env_names = std::fs::read(base.join("environ")).ok().map(|environ| {
        environ
            .split(|byte| *byte == 0)
            .filter_map(|entry| {
                let entry = String::from_utf8_lossy(entry);
                entry.split_once('=').map(|(name, _)| name.to_string())
            })
            .collect::<BTreeSet<String>>()
    });
    let root = base.join("root");
    if let (Some(uid), Ok(passwd)) = (
        observed.uid,
        std::fs::read_to_string(root.join("etc/passwd")),
    ) {
        observed.user_name = account(&passwd, uid);
    }
    if let (Some(gid), Ok(group)) = (
        observed.gid,
        std::fs::read_to_string(root.join("etc/group")),
    ) {
        observed.group_name = account(&group, gid);
    }
    if let Ok(groups) = read("cgroup") {
        for file in CGROUP_FILES {
            if let Some(value) = cgroup_file(cgroup, &groups, file) {
                observed.cgroup.insert(file.to_string(), value);
            }
        }
    }
    observed.from_host = true;
    Ok(observed)
}

/// The checks of a running sandbox: `spec` (its profile resolved now) against what the host
/// reads of it (`observed`, its `inspect`), the spec digest it was launched with (`launched`,
/// its label) against the one `spec` has, and its egress proxy's state (`egress`: `None`
/// without an isolated network) when the spec puts it behind one.
pub fn compare_running(
    spec: &agentc_policy::ContainerSpec,
    digest: Option<&str>,
    launched: Option<&str>,
    observed: &Observation,
    inspect: &serde_json::Value,
    egress: Option<&agentc_engine::companion::state::EgressState>,
) -> Vec<super::Check> {
    let mut checks = vec![{
        let seen = launched.unwrap_or("no io.agentc.spec-digest label");
        let mut row = super::check::check(
            "spec digest",
            format!("{} (the profile now)", digest.unwrap_or("none")),
            format!("{seen} (at launch)"),
            digest.is_some() && digest == launched,
        );
        row.hint = Some(
            "the profile, or what it resolves with (--workspace, --image, the AGENTC_* \
             environment), changed since the launch: the rows below compare the sandbox with \
             the profile as it resolves now"
                .to_string(),
        );
        row
    }];
    checks.extend(super::compare(spec, observed, inspect));
    if spec.egress.is_some() {
        let (seen, ok) = match egress {
            Some(state) => (state.cell(), state.is_up()),
            None => ("no isolated network".to_string(), false),
        };
        let mut row = super::check::check("egress proxy", "up", seen, ok);
        row.hint =
            Some("`agentc egress log NAME` says why; `agentc ps` shows its state".to_string());
        checks.push(row);
    }
    checks
}

/// A line of `/proc/PID/mounts` (`DEVICE TARGET TYPE OPTIONS ...`), its target decoded.
fn mount_entry(line: &str) -> Option<MountEntry> {
    let mut fields = line.split(' ');
    let (_, target, fstype, options) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    Some(MountEntry {
        target: super::parse::decode_mount_path(target),
        fstype: fstype.to_string(),
        options: options.split(',').map(str::to_string).collect(),
    })
}

/// The name `/etc/passwd` or `/etc/group` (`NAME:x:ID:...`) gives the id `id`.
fn account(table: &str, id: u32) -> Option<String> {
    table.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        (fields.nth(1)?.parse::<u32>().ok()? == id).then(|| name.to_string())
    })
}

/// The value of the cgroup file `file` (the probe's key) of the process whose
/// `/proc/PID/cgroup` is `groups`, read below the host's cgroup root `root`: cgroup v1's
/// `CONTROLLER/FILE` in that controller's hierarchy, v2's `FILE` in the unified one.
fn cgroup_file(root: &Path, groups: &str, file: &str) -> Option<String> {
    let (hierarchy, name, path) = match file.split_once('/') {
        Some((controllers, name)) => {
            let wanted: BTreeSet<&str> = controllers.split(',').collect();
            let path = groups.lines().find_map(|line| {
                let mut fields = line.splitn(3, ':');
                let (_, listed, path) = (fields.next()?, fields.next()?, fields.next()?);
                let listed: BTreeSet<&str> = listed.split(',').collect();
                (listed == wanted).then_some(path)
            })?;
            (controllers, name, path)
        }
        None => {
            let path = groups.lines().find_map(|line| line.strip_prefix("0::"))?;
            ("", file, path)
        }
    };
    let directory = root.join(hierarchy).join(path.trim_start_matches('/'));
    std::fs::read_to_string(directory.join(name))
        .ok()
        .map(|value| value.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's `/proc` and `/sys/fs/cgroup` for one process, as files.
    fn host(cgroup_v2: bool) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let process = dir.path().join("proc/4242");
        let write = |path: &Path, text: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            &process.join("status"),
            "Name:\tdocker-init\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n\
             CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n\
             CapBnd:\t00000000000000c0\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n",
        );
        write(&process.join("comm"), "docker-init\n");
        write(
            &process.join("mounts"),
            "overlay / overlay ro,relatime 0 0\ntmpfs /tmp tmpfs rw,nosuid,nodev,noexec 0 0\n\
             /dev/sda1 /workspace/my\\040app ext4 rw,relatime 0 0\n",
        );
        write(
            &process.join("net/dev"),
            "Inter-|   Receive\n face |bytes\n    lo: 0 0\n  eth0: 1 2\n",
        );
        write(&process.join("environ"), "PATH=/bin\0HOME=/home/claude\0");
        write(
            &process.join("root/etc/passwd"),
            "root:x:0:0::/root:/bin/sh\nclaude:x:1000:1000::/home/claude:/bin/sh\n",
        );
        write(
            &process.join("root/etc/group"),
            "root:x:0:\nclaude:x:1000:\n",
        );
        std::os::unix::fs::symlink("/workspace/my app", process.join("cwd")).unwrap();
        let cgroup = dir.path().join("cgroup");
        if cgroup_v2 {
            write(
                &process.join("cgroup"),
                "0::/system.slice/docker-abc.scope\n",
            );
            let scope = cgroup.join("system.slice/docker-abc.scope");
            write(&scope.join("memory.max"), "4294967296\n");
            write(&scope.join("pids.max"), "512\n");
        } else {
            write(
                &process.join("cgroup"),
                "8:pids:/docker/abc\n4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n",
            );
            write(
                &cgroup.join("memory/docker/abc/memory.limit_in_bytes"),
                "4294967296\n",
            );
            write(&cgroup.join("pids/docker/abc/pids.max"), "512\n");
            write(
                &cgroup.join("cpu,cpuacct/docker/abc/cpu.cfs_quota_us"),
                "-1\n",
            );
        }
        dir
    }

    #[test]
    fn a_process_is_read_from_the_host_as_the_probe_reads_it_inside() {
        for v2 in [false, true] {
            let dir = host(v2);
            let observed =
                observe(&dir.path().join("proc"), &dir.path().join("cgroup"), 4242).unwrap();
            assert_eq!((observed.uid, observed.gid), (Some(1000), Some(1000)));
            assert_eq!(observed.user_name.as_deref(), Some("claude"));
            assert_eq!(observed.group_name.as_deref(), Some("claude"));
            assert_eq!(observed.pid1.as_deref(), Some("docker-init"));
            assert_eq!(observed.working_dir.as_deref(), Some("/workspace/my app"));
            assert_eq!(observed.cap_bounding, Some(0xc0));
            assert_eq!(observed.cap_effective, Some(0));
            assert_eq!(observed.no_new_privs, Some(true));
            assert_eq!(observed.seccomp, Some(2));
            assert!(observed.mount_at("/").is_some_and(|root| root.has("ro")));
            assert!(observed.mount_at("/workspace/my app").is_some());
            assert_eq!(
                observed.interfaces,
                Some(["eth0".to_string(), "lo".to_string()].into())
            );
            assert_eq!(
                observed.env_names,
                Some(["HOME".to_string(), "PATH".to_string()].into())
            );
            let memory = if v2 {
                "memory.max"
            } else {
                "memory/memory.limit_in_bytes"
            };
            let pids = if v2 { "pids.max" } else { "pids/pids.max" };
            assert_eq!(
                observed.cgroup.get(memory).map(String::as_str),
                Some("4294967296")
            );
            assert_eq!(observed.cgroup.get(pids).map(String::as_str), Some("512"));
            assert_eq!(observed.root_write_succeeded, None);
            assert!(observed.tmpfs_writes.is_empty() && observed.from_host);
        }
    }

    #[test]
    fn an_unreadable_process_names_its_status_file() {
        let dir = tempfile::tempdir().unwrap();
        let error = observe(dir.path(), dir.path(), 7).unwrap_err();
        assert!(
            error.starts_with("cannot read ") && error.contains("7/status"),
            "{error}"
        );
    }
}
