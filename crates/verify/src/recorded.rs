//! Recorded probe output and the matching specs and inspects, for the tests of the parser,
//! the comparison and the probe.

use agentc_policy::{
    Capability, ContainerSpec, EnvValue, EnvVar, LogConfig, Mount, MountSource, Network, Resources,
    Tmpfs,
};

use super::check::Check;

/// Recorded on Docker 20.10 (fuse-overlayfs, cgroup v1) from
/// `docker run --rm --read-only --tmpfs=/tmp --tmpfs=/run:exec --cap-drop=ALL
/// --cap-add=NET_RAW --security-opt=no-new-privileges --network=none --memory=67108864
/// --memory-swap=67108864 --pids-limit=64 --shm-size=8388608
/// --mount=type=bind,source=/tmp,target=/data,readonly --entrypoint=/bin/sh IMAGE -c PROBE`.
pub(crate) const HARDENED: &str = "PROBE=1
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
pub(crate) const NON_ROOT: &str = "PROBE=1
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
pub(crate) fn non_root_inspect() -> serde_json::Value {
    serde_json::json!({
        "AppArmorProfile": "",
        "Config": {"Labels": {"io.agentc.profile": "x", "agentc-test.image": "busybox"}},
        "HostConfig": {
            "NetworkMode": "default",
            "LogConfig": {"Type": "json-file", "Config": {"max-file": "3", "max-size": "10m"}}
        }
    })
}

pub(crate) fn hardened_inspect() -> serde_json::Value {
    serde_json::json!({
        "AppArmorProfile": "",
        "Config": {"Labels": {}},
        "HostConfig": {
            "NetworkMode": "none",
            "LogConfig": {"Type": "json-file", "Config": {"max-file": "3", "max-size": "10m"}}
        }
    })
}

pub(crate) fn hardened_spec() -> ContainerSpec {
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

pub(crate) fn non_root_spec() -> ContainerSpec {
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

pub(crate) fn failures(checks: &[Check]) -> Vec<&str> {
    checks
        .iter()
        .filter(|check| !check.ok)
        .map(|check| check.what.as_str())
        .collect()
}

pub(crate) fn find<'a>(checks: &'a [Check], what: &str) -> &'a Check {
    checks
        .iter()
        .find(|check| check.what == what)
        .unwrap_or_else(|| panic!("no check {what:?} in {checks:#?}"))
}
