//! `agentc verify`: runs a probe in place of the agent and compares what the kernel and
//! `docker inspect` report with the [`ContainerSpec`] that was asked for.
//!
//! This module owns the probe script, the parser of its output, the comparison and the table;
//! it does no I/O. The caller launches [`probe_spec`] of the resolved spec (the same hardening,
//! mounts and limits, with the agent replaced by [`PROBE_SCRIPT`]), waits for it to exit, reads
//! its output and `docker inspect` JSON, removes the container, then calls [`parse_probe`],
//! [`compare`] and [`render_table`].
//!
//! What is not checked: published ports, extra hosts, devices, the seccomp profile, and
//! environment values (only names are observed, so a secret's value never leaves the container).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use agentc_policy::{AppArmor, Capability, ContainerSpec, EnvValue, MountSource, Network};

/// The probe script run in place of the agent: prints kernel facts as KEY=VALUE lines.
///
/// It needs only a POSIX shell with `id`, `pwd`, `rm`, `chmod`, `ls`, `tr`, `cat` and `awk`
/// (busybox or coreutils). Its only writes are a file `/probe-file` at the root (to show the
/// root is read-only; removed at once when it is not) and a small script in each tmpfs mount
/// (to show it is writable and whether it executes; removed at once). Environment variables are
/// reported by name only.
///
/// Lines: `PROBE=1` first and `END=1` last; `UID`, `GID`, `USER`, `GROUP`, `CWD`; `PID1` (the
/// command name of PID 1, `docker-init` under `--init`); `ROOT_WRITE=ok|denied`;
/// one `MOUNT=<target> <fstype> <options>` per line of `/proc/mounts` (targets keep the kernel's
/// octal escapes); one `TMPFS_WRITE=<target> ok exec|noexec` or `<target> denied` per tmpfs;
/// `CapInh`, `CapPrm`, `CapEff`, `CapBnd`, `CapAmb` (hex), `NoNewPrivs`, `Seccomp` from
/// `/proc/self/status`; `NET=<interfaces>`; `CGROUP:<file>=<content>` for each readable cgroup
/// v1 or v2 limit file; `ENV_NAMES=<names>`.
pub const PROBE_SCRIPT: &str = r#"p() { printf '%s=%s\n' "$1" "$2"; }
p PROBE 1
p UID "$(id -u)"
p GID "$(id -g)"
p USER "$(id -un 2>/dev/null)"
p GROUP "$(id -gn 2>/dev/null)"
p CWD "$(pwd)"
p PID1 "$(cat /proc/1/comm 2>/dev/null)"
if (: >/probe-file) 2>/dev/null; then rm -f /probe-file; p ROOT_WRITE ok; else p ROOT_WRITE denied; fi
while read -r dev mnt fstype opts rest; do p MOUNT "$mnt $fstype $opts"; done </proc/mounts
while read -r dev mnt fstype opts rest; do
  [ "$fstype" = tmpfs ] || continue
  case "$mnt" in *\\*|/dev|/dev/*|/sys|/sys/*|/proc|/proc/*) continue;; esac
  f="$mnt/.agentc-probe.$$"
  if (printf '#!/bin/sh\nexit 0\n' >"$f") 2>/dev/null; then
    chmod 0755 "$f"
    if "$f" 2>/dev/null; then x=exec; else x=noexec; fi
    rm -f "$f"
    p TMPFS_WRITE "$mnt ok $x"
  else
    p TMPFS_WRITE "$mnt denied"
  fi
done </proc/mounts
while IFS=: read -r k v; do
  case "$k" in CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp) p "$k" $v;; esac
done </proc/self/status
p NET "$(ls /sys/class/net 2>/dev/null | tr '\n' ' ')"
for f in memory/memory.limit_in_bytes memory/memory.memsw.limit_in_bytes pids/pids.max \
  cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us cpu,cpuacct/cpu.cfs_quota_us \
  cpu,cpuacct/cpu.cfs_period_us memory.max memory.swap.max pids.max cpu.max; do
  if [ -r "/sys/fs/cgroup/$f" ]; then p "CGROUP:$f" "$(cat "/sys/fs/cgroup/$f")"; fi
done
p ENV_NAMES "$(awk 'BEGIN { for (k in ENVIRON) printf "%s ", k }' 2>/dev/null)"
p END 1
"#;

/// The launch that verifies `spec`: the same container with the agent replaced by the probe.
///
/// Exactly these fields change: `entrypoint` becomes `/bin/sh` and `command` becomes
/// `["-c", PROBE_SCRIPT]`; `interactive`, `tty` and `auto_remove` become false and `detach`
/// true, so the caller can wait for the exit, read the output, run `docker inspect` and then
/// remove the container itself; `name` gets the suffix `-verify` so a running agent of the same
/// profile does not collide. Everything else (user, mounts, tmpfs, capabilities, network, limits,
/// log driver, labels, environment) is kept, which is what makes the observation meaningful.
pub fn probe_spec(spec: &ContainerSpec) -> ContainerSpec {
    ContainerSpec {
        name: spec.name.as_ref().map(|name| format!("{name}-verify")),
        entrypoint: Some("/bin/sh".to_string()),
        command: vec!["-c".to_string(), PROBE_SCRIPT.to_string()],
        interactive: false,
        tty: false,
        auto_remove: false,
        detach: true,
        ..spec.clone()
    }
}

/// One line of `/proc/mounts` as the probe saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    /// The mount point, with the kernel's octal escapes (`\040`) decoded.
    pub target: String,
    /// The file system type (`tmpfs`, `ext4`, `fuse.fuse-overlayfs`).
    pub fstype: String,
    /// The mount options (`ro`, `noexec`, `size=8192k`).
    pub options: Vec<String>,
}

impl MountEntry {
    /// Whether the option `name` is present.
    pub fn has(&self, name: &str) -> bool {
        self.options.iter().any(|option| option == name)
    }

    /// The value of the option `name=value`, if present.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find_map(|option| option.strip_prefix(name)?.strip_prefix('='))
    }
}

/// The result of the probe's write attempt in one tmpfs mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmpfsWrite {
    /// The mount point.
    pub target: String,
    /// A file could be created.
    pub writable: bool,
    /// The created script ran (`Some(true)`) or was refused (`Some(false)`); `None` when no
    /// file could be written.
    pub exec: Option<bool>,
}

/// A cgroup limit as the kernel reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// No limit (`max`, or cgroup v1's page-rounded `LONG_MAX`).
    Unlimited,
    /// A limit.
    Value(u64),
}

/// Parsed probe output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observation {
    /// Numeric user id of the probe process.
    pub uid: Option<u32>,
    /// Numeric group id of the probe process.
    pub gid: Option<u32>,
    /// User name, when `/etc/passwd` names the uid.
    pub user_name: Option<String>,
    /// Group name, when `/etc/group` names the gid.
    pub group_name: Option<String>,
    /// Working directory.
    pub working_dir: Option<String>,
    /// Command name of PID 1 (`/proc/1/comm`): `docker-init` under `--init`.
    pub pid1: Option<String>,
    /// Creating `/probe-file` succeeded (`Some(true)`) or failed.
    pub root_write_succeeded: Option<bool>,
    /// `/proc/mounts`, in order.
    pub mounts: Vec<MountEntry>,
    /// Write attempts in tmpfs mounts.
    pub tmpfs_writes: Vec<TmpfsWrite>,
    /// `CapEff` bit mask.
    pub cap_effective: Option<u64>,
    /// `CapPrm` bit mask.
    pub cap_permitted: Option<u64>,
    /// `CapBnd` bit mask.
    pub cap_bounding: Option<u64>,
    /// `CapAmb` bit mask.
    pub cap_ambient: Option<u64>,
    /// `NoNewPrivs` is 1.
    pub no_new_privs: Option<bool>,
    /// `Seccomp` mode (0 none, 1 strict, 2 filter).
    pub seccomp: Option<u32>,
    /// Network interfaces in `/sys/class/net`.
    pub interfaces: Option<BTreeSet<String>>,
    /// cgroup files read, keyed by their path below `/sys/fs/cgroup`.
    pub cgroup: BTreeMap<String, String>,
    /// Names of the environment variables set.
    pub env_names: Option<BTreeSet<String>>,
}

/// Parses the probe's output; `\r\n` line ends (a TTY) and unknown lines are accepted.
pub fn parse_probe(output: &str) -> Result<Observation, String> {
    let mut observation = Observation::default();
    let (mut started, mut ended) = (false, false);
    for (index, raw) in output.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let at = || format!("probe output line {}", index + 1);
        let number = |text: &str| -> Result<u32, String> {
            text.trim()
                .parse()
                .map_err(|_| format!("{}: {key} is not a number: {text:?}", at()))
        };
        let mask = |text: &str| -> Result<u64, String> {
            u64::from_str_radix(text.trim(), 16)
                .map_err(|_| format!("{}: {key} is not a hex mask: {text:?}", at()))
        };
        match key {
            "PROBE" => started = true,
            "END" => ended = true,
            "UID" => observation.uid = Some(number(value)?),
            "GID" => observation.gid = Some(number(value)?),
            "USER" if !value.is_empty() => observation.user_name = Some(value.to_string()),
            "GROUP" if !value.is_empty() => observation.group_name = Some(value.to_string()),
            "CWD" => observation.working_dir = Some(value.to_string()),
            "PID1" if !value.is_empty() => observation.pid1 = Some(value.to_string()),
            "ROOT_WRITE" => observation.root_write_succeeded = Some(value == "ok"),
            "MOUNT" => {
                let mut fields = value.split(' ');
                let (Some(target), Some(fstype), Some(options)) =
                    (fields.next(), fields.next(), fields.next())
                else {
                    return Err(format!("{}: MOUNT needs target, type and options", at()));
                };
                observation.mounts.push(MountEntry {
                    target: decode_mount_path(target),
                    fstype: fstype.to_string(),
                    options: options.split(',').map(str::to_string).collect(),
                });
            }
            "TMPFS_WRITE" => {
                let fields: Vec<&str> = value.split(' ').collect();
                let write = match fields.as_slice() {
                    [target, "ok", exec] => TmpfsWrite {
                        target: target.to_string(),
                        writable: true,
                        exec: Some(*exec == "exec"),
                    },
                    [target, "denied"] => TmpfsWrite {
                        target: target.to_string(),
                        writable: false,
                        exec: None,
                    },
                    _ => return Err(format!("{}: malformed TMPFS_WRITE {value:?}", at())),
                };
                observation.tmpfs_writes.push(write);
            }
            "CapEff" => observation.cap_effective = Some(mask(value)?),
            "CapPrm" => observation.cap_permitted = Some(mask(value)?),
            "CapBnd" => observation.cap_bounding = Some(mask(value)?),
            "CapAmb" => observation.cap_ambient = Some(mask(value)?),
            "NoNewPrivs" => observation.no_new_privs = Some(number(value)? == 1),
            "Seccomp" => observation.seccomp = Some(number(value)?),
            "NET" => observation.interfaces = Some(words(value)),
            "ENV_NAMES" => observation.env_names = Some(words(value)),
            _ => {
                if let Some(file) = key.strip_prefix("CGROUP:") {
                    observation
                        .cgroup
                        .insert(file.to_string(), value.trim().to_string());
                }
            }
        }
    }
    if !started {
        return Err("probe output has no PROBE=1 line: the probe did not run (check the container's entrypoint and image)".to_string());
    }
    if !ended {
        return Err(
            "probe output has no END=1 line: the probe was cut short (see the container's output)"
                .to_string(),
        );
    }
    Ok(observation)
}

fn words(text: &str) -> BTreeSet<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// Decodes the octal escapes `/proc/mounts` uses for space, tab, newline and backslash.
fn decode_mount_path(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let octal = bytes.get(index + 1..index + 4).filter(|digits| {
            bytes[index] == b'\\' && digits.iter().all(|digit| (b'0'..=b'7').contains(digit))
        });
        match octal.and_then(|digits| u8::from_str_radix(std::str::from_utf8(digits).ok()?, 8).ok())
        {
            Some(byte) => {
                out.push(byte);
                index += 4;
            }
            None => {
                out.push(bytes[index]);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Observation {
    /// The mount visible at `target` (the last line of `/proc/mounts` for it).
    pub fn mount_at(&self, target: &str) -> Option<&MountEntry> {
        self.mounts
            .iter()
            .rev()
            .find(|entry| entry.target == target)
    }

    /// The content of the first of `names` that the probe read.
    fn cgroup_file(&self, names: &[&str]) -> Option<&str> {
        names
            .iter()
            .find_map(|name| self.cgroup.get(*name).map(String::as_str))
    }

    /// The memory limit (cgroup v1 `memory.limit_in_bytes` or v2 `memory.max`).
    pub fn memory_limit(&self) -> Option<Limit> {
        let value = self.cgroup_file(&["memory/memory.limit_in_bytes", "memory.max"])?;
        parse_limit(value)
    }

    /// The memory plus swap limit (v1 `memory.memsw.limit_in_bytes`; v2 `memory.max` plus
    /// `memory.swap.max`).
    pub fn memory_swap_limit(&self) -> Option<Limit> {
        if let Some(value) = self.cgroup.get("memory/memory.memsw.limit_in_bytes") {
            return parse_limit(value);
        }
        let memory = parse_limit(self.cgroup.get("memory.max")?)?;
        let swap = parse_limit(self.cgroup.get("memory.swap.max")?)?;
        Some(match (memory, swap) {
            (Limit::Value(memory), Limit::Value(swap)) => Limit::Value(memory.saturating_add(swap)),
            _ => Limit::Unlimited,
        })
    }

    /// The process limit (`pids.max`, v1 or v2).
    pub fn pids_limit(&self) -> Option<Limit> {
        let value = self.cgroup_file(&["pids/pids.max", "pids.max"])?;
        parse_limit(value)
    }

    /// The CPU quota in billionths of a CPU (v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`, v2
    /// `cpu.max`).
    pub fn nano_cpus(&self) -> Option<Limit> {
        let (quota, period) = if let Some(max) = self.cgroup_file(&["cpu.max"]) {
            let mut fields = max.split_whitespace();
            (fields.next()?.to_string(), fields.next()?.to_string())
        } else {
            let quota =
                self.cgroup_file(&["cpu/cpu.cfs_quota_us", "cpu,cpuacct/cpu.cfs_quota_us"])?;
            let period =
                self.cgroup_file(&["cpu/cpu.cfs_period_us", "cpu,cpuacct/cpu.cfs_period_us"])?;
            (quota.to_string(), period.to_string())
        };
        if quota == "max" || quota == "-1" {
            return Some(Limit::Unlimited);
        }
        let quota: u64 = quota.parse().ok()?;
        let period: u64 = period.parse().ok().filter(|period| *period > 0)?;
        Some(Limit::Value(
            (u128::from(quota) * 1_000_000_000 / u128::from(period)) as u64,
        ))
    }

    /// The size of `/dev/shm` in bytes, from its `size=` mount option.
    pub fn shm_size(&self) -> Option<u64> {
        parse_size(self.mount_at("/dev/shm")?.option("size")?)
    }
}

/// cgroup v1 reports "no memory limit" as `LONG_MAX` rounded down to a page; anything this large
/// is no limit.
const UNLIMITED_FLOOR: u64 = 1 << 62;

fn parse_limit(text: &str) -> Option<Limit> {
    match text.trim() {
        "max" | "-1" => Some(Limit::Unlimited),
        number => {
            let value: u64 = number.parse().ok()?;
            Some(if value >= UNLIMITED_FLOOR {
                Limit::Unlimited
            } else {
                Limit::Value(value)
            })
        }
    }
}

/// Parses a tmpfs `size=` value (`8192k`, `64m`, `1g`, plain bytes).
fn parse_size(text: &str) -> Option<u64> {
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, ""),
    };
    let number: u64 = digits.parse().ok()?;
    let factor: u64 = match unit.to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return None,
    };
    number.checked_mul(factor)
}

/// Kernel capability bit numbers (`include/uapi/linux/capability.h`).
const CAPABILITY_BITS: [(u32, Capability); 41] = [
    (0, Capability::Chown),
    (1, Capability::DacOverride),
    (2, Capability::DacReadSearch),
    (3, Capability::Fowner),
    (4, Capability::Fsetid),
    (5, Capability::Kill),
    (6, Capability::Setgid),
    (7, Capability::Setuid),
    (8, Capability::Setpcap),
    (9, Capability::LinuxImmutable),
    (10, Capability::NetBindService),
    (11, Capability::NetBroadcast),
    (12, Capability::NetAdmin),
    (13, Capability::NetRaw),
    (14, Capability::IpcLock),
    (15, Capability::IpcOwner),
    (16, Capability::SysModule),
    (17, Capability::SysRawio),
    (18, Capability::SysChroot),
    (19, Capability::SysPtrace),
    (20, Capability::SysPacct),
    (21, Capability::SysAdmin),
    (22, Capability::SysBoot),
    (23, Capability::SysNice),
    (24, Capability::SysResource),
    (25, Capability::SysTime),
    (26, Capability::SysTtyConfig),
    (27, Capability::Mknod),
    (28, Capability::Lease),
    (29, Capability::AuditWrite),
    (30, Capability::AuditControl),
    (31, Capability::Setfcap),
    (32, Capability::MacOverride),
    (33, Capability::MacAdmin),
    (34, Capability::Syslog),
    (35, Capability::WakeAlarm),
    (36, Capability::BlockSuspend),
    (37, Capability::AuditRead),
    (38, Capability::Perfmon),
    (39, Capability::Bpf),
    (40, Capability::CheckpointRestore),
];

/// Decodes a capability mask into names; bits agentc does not know become `bit N`.
pub fn capability_names(mask: u64) -> BTreeSet<String> {
    (0..64)
        .filter(|bit| mask & (1u64 << bit) != 0)
        .map(|bit| {
            CAPABILITY_BITS
                .iter()
                .find(|(number, _)| *number == bit)
                .map(|(_, capability)| capability.as_str().to_string())
                .unwrap_or_else(|| format!("bit {bit}"))
        })
        .collect()
}

/// One comparison of the spec with what was observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked (`root filesystem`, `mount /workspace/app`).
    pub what: String,
    /// What the spec asks for.
    pub expected: String,
    /// What the kernel or the daemon reported.
    pub seen: String,
    /// They agree.
    pub ok: bool,
}

fn check(
    what: impl Into<String>,
    expected: impl Into<String>,
    seen: impl Into<String>,
    ok: bool,
) -> Check {
    Check {
        what: what.into(),
        expected: expected.into(),
        seen: seen.into(),
        ok,
    }
}

const NOT_OBSERVED: &str = "not observed";

/// PID 1's command name when docker runs its init (`--init`).
const DOCKER_INIT: &str = "docker-init";

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
        Some(name) => ((name == DOCKER_INIT) == spec.init, name.clone()),
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
            if observed.uid == Some(0) {
                "writable"
            } else {
                "writable by root"
            },
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
        // docker copies the image directory's mode onto a tmpfs (`/run` is often root's 0755),
        // so only root's write attempt says anything about the mount itself.
        let must_write = observed.uid == Some(0);
        let ok = entry.fstype == "tmpfs"
            && (writable == Some(true) || !must_write)
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
    let list = |set: &BTreeSet<String>| {
        if set.is_empty() {
            "none".to_string()
        } else {
            set.iter().cloned().collect::<Vec<_>>().join(",")
        }
    };
    // The bounding set is what docker's --cap-drop/--cap-add write; a non-root user's effective
    // set is empty even when the bounding set is not, so the effective set is checked as a
    // subset.
    match observed.cap_bounding.map(capability_names) {
        None => checks.push(check(
            "capability bounding set",
            list(&declared),
            NOT_OBSERVED,
            false,
        )),
        Some(bounding) => {
            if spec.cap_drop_all {
                let ok = bounding == declared;
                checks.push(check(
                    "capability bounding set",
                    list(&declared),
                    list(&bounding),
                    ok,
                ));
            } else {
                let ok = declared.is_subset(&bounding);
                let expected = format!("daemon default plus {}", list(&declared));
                checks.push(check(
                    "capability bounding set",
                    expected,
                    list(&bounding),
                    ok,
                ));
            }
            for (what, mask) in [
                ("permitted capabilities", observed.cap_permitted),
                ("effective capabilities", observed.cap_effective),
            ] {
                if let Some(set) = mask.map(capability_names) {
                    let ok = set.is_subset(&bounding);
                    checks.push(check(what, "within the bounding set", list(&set), ok));
                }
            }
        }
    }
    if let Some(ambient) = observed.cap_ambient.map(capability_names) {
        let ok = ambient.is_subset(&declared) || !spec.cap_drop_all;
        checks.push(check(
            "ambient capabilities",
            "within the declared set",
            list(&ambient),
            ok,
        ));
    }

    let seen = match observed.no_new_privs {
        Some(true) => "NoNewPrivs 1",
        Some(false) => "NoNewPrivs 0",
        None => NOT_OBSERVED,
    };
    if spec.no_new_privileges {
        checks.push(check(
            "no new privileges",
            "NoNewPrivs 1",
            seen,
            observed.no_new_privs == Some(true),
        ));
    } else {
        checks.push(check(
            "no new privileges",
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
    checks.push(check("seccomp", "filter", seen, ok));

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
    let mode = inspect
        .pointer("/HostConfig/NetworkMode")
        .and_then(|value| value.as_str());
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

fn limit_check(what: &str, wanted: Option<u64>, seen: Option<Limit>) -> Check {
    let expected = wanted.map(Limit::Value).unwrap_or(Limit::Unlimited);
    check(
        what,
        limit_text(Some(expected)),
        limit_text(seen),
        seen == Some(expected),
    )
}

/// cgroup limits and the size of `/dev/shm`.
fn compare_resources(spec: &ContainerSpec, observed: &Observation, checks: &mut Vec<Check>) {
    let resources = &spec.resources;
    checks.push(limit_check(
        "memory limit (bytes)",
        resources.memory_bytes,
        observed.memory_limit(),
    ));
    if let Some(swap) = resources.memory_swap_bytes {
        checks.push(limit_check(
            "memory+swap limit (bytes)",
            Some(swap),
            observed.memory_swap_limit(),
        ));
    }
    checks.push(limit_check(
        "pids limit",
        resources.pids_limit.map(u64::from),
        observed.pids_limit(),
    ));
    checks.push(limit_check(
        "cpu quota (nano cpus)",
        resources.nano_cpus,
        observed.nano_cpus(),
    ));
    let shm = observed.shm_size();
    let seen = shm
        .map(|size| size.to_string())
        .unwrap_or_else(|| NOT_OBSERVED.to_string());
    match resources.shm_size_bytes {
        Some(size) => checks.push(check(
            "/dev/shm size (bytes)",
            size.to_string(),
            seen,
            shm == Some(size),
        )),
        None => checks.push(check(
            "/dev/shm size (bytes)",
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

/// Renders checks as an aligned table: `RESULT  CHECK  EXPECTED  SEEN`, then a summary line
/// (`verify: N checks, N failed`, worded so CI log scanners do not take it for a test count).
pub fn render_table(checks: &[Check]) -> String {
    let headers = ["RESULT", "CHECK", "EXPECTED", "SEEN"];
    let rows: Vec<[&str; 4]> = checks
        .iter()
        .map(|check| {
            [
                if check.ok { "ok" } else { "FAIL" },
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
    let failed = checks.iter().filter(|check| !check.ok).count();
    let _ = writeln!(out, "verify: {} checks, {failed} failed", checks.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_policy::{EnvVar, LogConfig, Mount, Resources, Tmpfs};

    /// Recorded on Docker 20.10 (fuse-overlayfs, cgroup v1) from
    /// `docker run --rm --read-only --tmpfs=/tmp --tmpfs=/run:exec --cap-drop=ALL
    /// --cap-add=NET_RAW --security-opt=no-new-privileges --network=none --memory=67108864
    /// --memory-swap=67108864 --pids-limit=64 --shm-size=8388608
    /// --mount=type=bind,source=/tmp,target=/data,readonly --entrypoint=/bin/sh IMAGE -c PROBE`.
    const HARDENED: &str = "PROBE=1
PID1=sh
UID=0
GID=0
USER=root
CWD=/
ROOT_WRITE=denied
MOUNT=/ fuse.fuse-overlayfs ro,noatime,user_id=0,group_id=0,default_permissions,allow_other
MOUNT=/proc proc rw,nosuid,nodev,noexec,relatime
MOUNT=/dev tmpfs rw,nosuid,size=65536k,mode=755
MOUNT=/dev/pts devpts rw,nosuid,noexec,relatime,gid=5,mode=620,ptmxmode=666
MOUNT=/sys sysfs ro,nosuid,nodev,noexec,relatime
MOUNT=/sys/fs/cgroup tmpfs rw,nosuid,nodev,noexec,relatime,mode=755
MOUNT=/sys/fs/cgroup/cpu cgroup ro,nosuid,nodev,noexec,relatime,cpu
MOUNT=/sys/fs/cgroup/cpuacct cgroup ro,nosuid,nodev,noexec,relatime,cpuacct
MOUNT=/sys/fs/cgroup/cpuset cgroup ro,nosuid,nodev,noexec,relatime,cpuset
MOUNT=/sys/fs/cgroup/memory cgroup ro,nosuid,nodev,noexec,relatime,memory
MOUNT=/sys/fs/cgroup/devices cgroup ro,nosuid,nodev,noexec,relatime,devices
MOUNT=/sys/fs/cgroup/freezer cgroup ro,nosuid,nodev,noexec,relatime,freezer
MOUNT=/sys/fs/cgroup/blkio cgroup ro,nosuid,nodev,noexec,relatime,blkio
MOUNT=/sys/fs/cgroup/pids cgroup ro,nosuid,nodev,noexec,relatime,pids
MOUNT=/sys/fs/cgroup/systemd cgroup ro,nosuid,nodev,noexec,relatime,name=systemd
MOUNT=/dev/mqueue mqueue rw,nosuid,nodev,noexec,relatime
MOUNT=/dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=8192k
MOUNT=/data ext4 ro,relatime,discard,resv_strict,resuid=65534,resgid=65534
MOUNT=/tmp tmpfs rw,nosuid,nodev,noexec,relatime
MOUNT=/run tmpfs rw,nosuid,nodev,relatime
MOUNT=/etc/resolv.conf ext4 ro,relatime,discard,resv_strict,resuid=65534,resgid=65534
MOUNT=/etc/hostname ext4 ro,relatime,discard,resv_strict,resuid=65534,resgid=65534
MOUNT=/etc/hosts ext4 ro,relatime,discard,resv_strict,resuid=65534,resgid=65534
MOUNT=/proc/bus proc ro,nosuid,nodev,noexec,relatime
MOUNT=/proc/fs proc ro,nosuid,nodev,noexec,relatime
MOUNT=/proc/irq proc ro,nosuid,nodev,noexec,relatime
MOUNT=/proc/sys proc ro,nosuid,nodev,noexec,relatime
MOUNT=/proc/acpi tmpfs ro,relatime
MOUNT=/proc/keys tmpfs rw,nosuid,size=65536k,mode=755
MOUNT=/proc/timer_list tmpfs rw,nosuid,size=65536k,mode=755
MOUNT=/sys/firmware tmpfs ro,relatime
TMPFS_WRITE=/tmp ok noexec
TMPFS_WRITE=/run ok exec
CapInh=0000000000000000
CapPrm=0000000000002000
CapEff=0000000000002000
CapBnd=0000000000002000
CapAmb=0000000000000000
NoNewPrivs=1
Seccomp=2
NET=lo 
CGROUP:memory/memory.limit_in_bytes=67108864
CGROUP:memory/memory.memsw.limit_in_bytes=67108864
CGROUP:pids/pids.max=64
CGROUP:cpu/cpu.cfs_quota_us=-1
CGROUP:cpu/cpu.cfs_period_us=100000
ENV_NAMES=PWD SHLVL HOME HOSTNAME PATH 
END=1
";

    /// Recorded from `docker run --user 1000 --workdir /home/claude --cpus 1.5 --log-driver
    /// json-file --log-opt max-size=10m --label io.agentc.profile=x --cap-drop=ALL
    /// --cap-add=NET_ADMIN --cap-add=SETUID --mount type=volume,src=V,dst=/home/claude/v
    /// --tmpfs /tmp:exec -e FOO=bar -e MULTI=<two lines, the second B=c> ...` (default network).
    const NON_ROOT: &str = "PROBE=1
PID1=sh
UID=1000
GID=1000
USER=claude
CWD=/home/claude
ROOT_WRITE=denied
MOUNT=/ fuse.fuse-overlayfs rw,nodev,noatime,user_id=0,group_id=0,default_permissions,allow_other
MOUNT=/proc proc rw,nosuid,nodev,noexec,relatime
MOUNT=/dev tmpfs rw,nosuid,size=65536k,mode=755
MOUNT=/dev/pts devpts rw,nosuid,noexec,relatime,gid=5,mode=620,ptmxmode=666
MOUNT=/sys sysfs ro,nosuid,nodev,noexec,relatime
MOUNT=/sys/fs/cgroup tmpfs rw,nosuid,nodev,noexec,relatime,mode=755
MOUNT=/sys/fs/cgroup/cpu cgroup ro,nosuid,nodev,noexec,relatime,cpu
MOUNT=/sys/fs/cgroup/cpuacct cgroup ro,nosuid,nodev,noexec,relatime,cpuacct
MOUNT=/sys/fs/cgroup/cpuset cgroup ro,nosuid,nodev,noexec,relatime,cpuset
MOUNT=/sys/fs/cgroup/memory cgroup ro,nosuid,nodev,noexec,relatime,memory
MOUNT=/sys/fs/cgroup/devices cgroup ro,nosuid,nodev,noexec,relatime,devices
MOUNT=/sys/fs/cgroup/freezer cgroup ro,nosuid,nodev,noexec,relatime,freezer
MOUNT=/sys/fs/cgroup/blkio cgroup ro,nosuid,nodev,noexec,relatime,blkio
MOUNT=/sys/fs/cgroup/pids cgroup ro,nosuid,nodev,noexec,relatime,pids
MOUNT=/sys/fs/cgroup/systemd cgroup ro,nosuid,nodev,noexec,relatime,name=systemd
MOUNT=/dev/mqueue mqueue rw,nosuid,nodev,noexec,relatime
MOUNT=/dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k
MOUNT=/tmp tmpfs rw,nosuid,nodev,relatime
MOUNT=/etc/resolv.conf ext4 rw,relatime,discard,resv_strict,resuid=65534,resgid=65534
MOUNT=/etc/hostname ext4 rw,relatime,discard,resv_strict,resuid=65534,resgid=65534
MOUNT=/etc/hosts ext4 rw,relatime,discard,resv_strict,resuid=65534,resgid=65534
MOUNT=/home/claude/v ext4 rw,relatime,discard,resv_strict,resuid=65534,resgid=65534
MOUNT=/proc/bus proc ro,nosuid,nodev,noexec,relatime
MOUNT=/proc/fs proc ro,nosuid,nodev,noexec,relatime
MOUNT=/proc/irq proc ro,nosuid,nodev,noexec,relatime
MOUNT=/proc/sys proc ro,nosuid,nodev,noexec,relatime
MOUNT=/proc/acpi tmpfs ro,relatime
MOUNT=/proc/keys tmpfs rw,nosuid,size=65536k,mode=755
MOUNT=/proc/timer_list tmpfs rw,nosuid,size=65536k,mode=755
MOUNT=/sys/firmware tmpfs ro,relatime
TMPFS_WRITE=/tmp ok exec
CapInh=0000000000000000
CapPrm=0000000000000000
CapEff=0000000000000000
CapBnd=0000000000001080
CapAmb=0000000000000000
NoNewPrivs=0
Seccomp=2
NET=eth0 lo 
CGROUP:memory/memory.limit_in_bytes=9223372036854771712
CGROUP:memory/memory.memsw.limit_in_bytes=9223372036854771712
CGROUP:pids/pids.max=max
CGROUP:cpu/cpu.cfs_quota_us=150000
CGROUP:cpu/cpu.cfs_period_us=100000
ENV_NAMES=PWD SHLVL MULTI HOME HOSTNAME FOO PATH 
END=1
";

    /// The inspect fields `compare` reads, as the daemon reported them for [`NON_ROOT`] (the
    /// daemon's `log-opts` add `max-file`).
    fn non_root_inspect() -> serde_json::Value {
        serde_json::json!({
            "AppArmorProfile": "",
            "Config": {"Labels": {"io.agentc.profile": "x", "agentc-test.image": "busybox"}},
            "HostConfig": {
                "NetworkMode": "default",
                "LogConfig": {"Type": "json-file", "Config": {"max-file": "3", "max-size": "10m"}}
            }
        })
    }

    fn hardened_inspect() -> serde_json::Value {
        serde_json::json!({
            "AppArmorProfile": "",
            "Config": {"Labels": {}},
            "HostConfig": {
                "NetworkMode": "none",
                "LogConfig": {"Type": "json-file", "Config": {"max-file": "3", "max-size": "10m"}}
            }
        })
    }

    fn hardened_spec() -> ContainerSpec {
        ContainerSpec {
            name: Some("agentc-test".to_string()),
            mounts: vec![Mount {
                target: "/data".to_string(),
                read_only: true,
                source: MountSource::Bind {
                    path: "/tmp".to_string(),
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
            cap_drop_all: true,
            cap_add: [Capability::NetRaw].into_iter().collect(),
            network: Network::None,
            resources: Resources {
                memory_bytes: Some(67_108_864),
                memory_swap_bytes: Some(67_108_864),
                shm_size_bytes: Some(8_388_608),
                nano_cpus: None,
                pids_limit: Some(64),
            },
            interactive: true,
            tty: true,
            auto_remove: true,
            ..ContainerSpec::empty("agentc-test/busybox:1")
        }
    }

    fn non_root_spec() -> ContainerSpec {
        ContainerSpec {
            user: Some("1000".to_string()),
            working_dir: Some("/home/claude".to_string()),
            env: vec![
                EnvVar {
                    name: "FOO".to_string(),
                    value: EnvValue::Literal {
                        value: "bar".to_string(),
                    },
                },
                EnvVar {
                    name: "MULTI".to_string(),
                    value: EnvValue::Secret { required: true },
                },
                EnvVar {
                    name: "OPTIONAL".to_string(),
                    value: EnvValue::Secret { required: false },
                },
            ],
            mounts: vec![Mount {
                target: "/home/claude/v".to_string(),
                read_only: false,
                source: MountSource::Volume {
                    name: "V".to_string(),
                    subpath: None,
                },
            }],
            tmpfs: vec![Tmpfs {
                target: "/tmp".to_string(),
                exec: true,
            }],
            read_only_root: false,
            no_new_privileges: false,
            cap_add: [Capability::NetAdmin, Capability::Setuid]
                .into_iter()
                .collect(),
            network: Network::Default,
            resources: Resources {
                nano_cpus: Some(1_500_000_000),
                ..Resources::default()
            },
            log: Some(LogConfig {
                driver: "json-file".to_string(),
                options: [("max-size".to_string(), "10m".to_string())]
                    .into_iter()
                    .collect(),
            }),
            labels: [("io.agentc.profile".to_string(), "x".to_string())]
                .into_iter()
                .collect(),
            ..hardened_spec()
        }
    }

    fn failures(checks: &[Check]) -> Vec<&str> {
        checks
            .iter()
            .filter(|check| !check.ok)
            .map(|check| check.what.as_str())
            .collect()
    }

    fn find<'a>(checks: &'a [Check], what: &str) -> &'a Check {
        checks
            .iter()
            .find(|check| check.what == what)
            .unwrap_or_else(|| panic!("no check {what:?} in {checks:#?}"))
    }

    #[test]
    fn recorded_hardened_output_parses_into_kernel_facts() {
        let observed = parse_probe(HARDENED).unwrap();
        assert_eq!((observed.uid, observed.gid), (Some(0), Some(0)));
        assert_eq!(observed.root_write_succeeded, Some(false));
        assert!(observed.mount_at("/").unwrap().has("ro"));
        assert!(observed.mount_at("/tmp").unwrap().has("noexec"));
        assert!(!observed.mount_at("/run").unwrap().has("noexec"));
        assert_eq!(
            capability_names(observed.cap_bounding.unwrap()),
            words("NET_RAW")
        );
        assert_eq!(observed.no_new_privs, Some(true));
        assert_eq!(observed.interfaces, Some(words("lo")));
        assert_eq!(observed.memory_limit(), Some(Limit::Value(67_108_864)));
        assert_eq!(observed.memory_swap_limit(), Some(Limit::Value(67_108_864)));
        assert_eq!(observed.pids_limit(), Some(Limit::Value(64)));
        assert_eq!(observed.nano_cpus(), Some(Limit::Unlimited));
        assert_eq!(observed.shm_size(), Some(8_388_608));
        assert_eq!(
            observed.tmpfs_writes,
            vec![
                TmpfsWrite {
                    target: "/tmp".to_string(),
                    writable: true,
                    exec: Some(false)
                },
                TmpfsWrite {
                    target: "/run".to_string(),
                    writable: true,
                    exec: Some(true)
                },
            ]
        );
    }

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
    fn tmpfs_write_and_exec_attempts_are_judged_by_who_tried() {
        let refused = HARDENED.replace("TMPFS_WRITE=/run ok exec", "TMPFS_WRITE=/run denied");
        let checks = compare(
            &hardened_spec(),
            &parse_probe(&refused).unwrap(),
            &hardened_inspect(),
        );
        assert_eq!(failures(&checks), vec!["tmpfs /run"]);
        // A non-root user cannot write where the image's directory is root's 0755.
        let non_root = refused.replace("UID=0", "UID=1000");
        let checks = compare(
            &hardened_spec(),
            &parse_probe(&non_root).unwrap(),
            &hardened_inspect(),
        );
        assert_eq!(failures(&checks), Vec::<&str>::new());
        assert_eq!(
            find(&checks, "tmpfs /run").seen,
            "tmpfs, write refused, exec"
        );
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
    fn cgroup_v2_files_give_the_same_limits() {
        // File formats of cgroup v2: memory.swap.max holds swap alone, cpu.max "QUOTA PERIOD".
        let output = "PROBE=1\nCGROUP:memory.max=67108864\nCGROUP:memory.swap.max=0\n\
                      CGROUP:pids.max=max\nCGROUP:cpu.max=150000 100000\nEND=1\n";
        let observed = parse_probe(output).unwrap();
        assert_eq!(observed.memory_limit(), Some(Limit::Value(67_108_864)));
        assert_eq!(observed.memory_swap_limit(), Some(Limit::Value(67_108_864)));
        assert_eq!(observed.pids_limit(), Some(Limit::Unlimited));
        assert_eq!(observed.nano_cpus(), Some(Limit::Value(1_500_000_000)));
        let unlimited =
            parse_probe("PROBE=1\nCGROUP:memory.max=max\nCGROUP:cpu.max=max 100000\nEND=1\n")
                .unwrap();
        assert_eq!(unlimited.memory_limit(), Some(Limit::Unlimited));
        assert_eq!(unlimited.nano_cpus(), Some(Limit::Unlimited));
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
    fn incomplete_or_malformed_output_is_an_error() {
        assert!(parse_probe("").unwrap_err().contains("no PROBE=1"));
        assert!(parse_probe("PROBE=1\nUID=0\n")
            .unwrap_err()
            .contains("no END=1"));
        let error = parse_probe("PROBE=1\nCapEff=zz\nEND=1\n").unwrap_err();
        assert_eq!(
            error,
            "probe output line 2: CapEff is not a hex mask: \"zz\""
        );
        assert!(parse_probe("PROBE=1\nMOUNT=/only-target\nEND=1\n").is_err());
        assert!(parse_probe("PROBE=1\nTMPFS_WRITE=/tmp maybe\nEND=1\n").is_err());
    }

    #[test]
    fn tty_line_ends_and_noise_are_tolerated() {
        let output = "docker: some warning\r\nPROBE=1\r\nUID=1000\r\nNoNewPrivs:\t1\r\nEND=1\r\n";
        let observed = parse_probe(output).unwrap();
        assert_eq!(observed.uid, Some(1000));
        assert_eq!(observed.no_new_privs, None);
    }

    #[test]
    fn mount_targets_are_unescaped() {
        assert_eq!(
            decode_mount_path(r"/work/my\040dir\134x"),
            r"/work/my dir\x"
        );
        assert_eq!(decode_mount_path(r"/odd\04"), r"/odd\04");
        let observed = parse_probe("PROBE=1\nMOUNT=/a\\040b ext4 ro,relatime\nEND=1\n").unwrap();
        assert!(observed.mount_at("/a b").unwrap().has("ro"));
    }

    #[test]
    fn capability_bits_cover_every_capability_once() {
        let mut seen = BTreeSet::new();
        for capability in Capability::ALL {
            let bits: Vec<u32> = CAPABILITY_BITS
                .iter()
                .filter(|(_, c)| c == capability)
                .map(|(bit, _)| *bit)
                .collect();
            assert_eq!(bits.len(), 1, "{capability}");
            assert!(seen.insert(bits[0]), "bit {} twice", bits[0]);
        }
        // Docker's default set, as the kernel prints it for root.
        assert_eq!(
            capability_names(0x00000000a80425fb),
            words("AUDIT_WRITE CHOWN DAC_OVERRIDE FOWNER FSETID KILL MKNOD NET_BIND_SERVICE NET_RAW SETFCAP SETGID SETPCAP SETUID SYS_CHROOT")
        );
        assert_eq!(
            capability_names(1 << 41),
            BTreeSet::from(["bit 41".to_string()])
        );
    }

    #[test]
    fn sizes_and_limits_parse_kernel_spellings() {
        assert_eq!(parse_size("8192k"), Some(8_388_608));
        assert_eq!(parse_size("64m"), Some(67_108_864));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("1t"), None);
        assert_eq!(parse_limit("9223372036854771712"), Some(Limit::Unlimited));
        assert_eq!(parse_limit("max"), Some(Limit::Unlimited));
        assert_eq!(parse_limit("12"), Some(Limit::Value(12)));
        assert_eq!(parse_limit("twelve"), None);
    }

    #[test]
    fn probe_spec_replaces_only_the_documented_fields() {
        let spec = hardened_spec();
        let probe = probe_spec(&spec);
        assert_eq!(probe.entrypoint.as_deref(), Some("/bin/sh"));
        assert_eq!(
            probe.command,
            vec!["-c".to_string(), PROBE_SCRIPT.to_string()]
        );
        assert_eq!(probe.name.as_deref(), Some("agentc-test-verify"));
        assert!(!probe.interactive && !probe.tty && !probe.auto_remove && probe.detach);
        let restored = ContainerSpec {
            name: spec.name.clone(),
            entrypoint: spec.entrypoint.clone(),
            command: spec.command.clone(),
            interactive: spec.interactive,
            tty: spec.tty,
            auto_remove: spec.auto_remove,
            detach: spec.detach,
            ..probe
        };
        assert_eq!(restored, spec);
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
}
