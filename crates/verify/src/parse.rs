//! The observation parser: the probe's `KEY=VALUE` output read into kernel facts
//! ([`Observation`]), with the kernel's own spellings decoded (octal escapes in mount paths,
//! cgroup v1 and v2 limit files, tmpfs sizes, capability masks).

use std::collections::{BTreeMap, BTreeSet};

use agentc_policy::Capability;

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
    /// The probe ran under gVisor's kernel (`KERNEL=gvisor`).
    pub gvisor: bool,
    /// Read from the host side of a running sandbox (`agentc verify NAME`), where no write
    /// is tried: a mount's options are the facts.
    pub from_host: bool,
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
            "KERNEL" => observation.gvisor = value.trim() == "gvisor",
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

/// The whitespace-separated words of `text`, as a set.
pub(crate) fn words(text: &str) -> BTreeSet<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// Decodes the octal escapes `/proc/mounts` uses for space, tab, newline and backslash.
pub(crate) fn decode_mount_path(text: &str) -> String {
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

/// Decodes a capability mask into names; bits agentc does not know become `bit N`.
pub fn capability_names(mask: u64) -> BTreeSet<String> {
    (0..64u8)
        .filter(|bit| mask & (1u64 << bit) != 0)
        .map(|bit| {
            Capability::ALL
                .iter()
                .find(|capability| capability.bit() == bit)
                .map(|capability| capability.as_str().to_string())
                .unwrap_or_else(|| format!("bit {bit}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorded::HARDENED;

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
    fn capability_masks_decode_to_names() {
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
}
