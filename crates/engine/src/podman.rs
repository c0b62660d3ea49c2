//! The difference table between Docker and Podman (4.3, measured in `docs/engines.md`): each
//! row a field of the launch that Podman means differently, and what agentc does about it on
//! Podman — rewrite it so that the container gets Docker's effective result, or refuse it by
//! field name. Rows that need nothing (Podman means the same) are not listed.
//!
//! [`DIFFERENCES`] is the table as data (printed in the docs, checked by the tests);
//! [`adapt`] applies the rows that change the spec itself, for both backends, before
//! rendering; the CLI renderer ([`tmpfs_options`], `--read-only-tmpfs=false`, `--ipc=private`,
//! `--pids-limit=-1`, `ro`) and the API renderer apply the rows that change only how a field is
//! spelled; the executors apply the rest (`rm --time=0`, the runtime through the socket).

use agentc_policy::{ContainerSpec, HostTarget, LogConfig, MountSource};

use crate::engine::Engine;
use crate::error::ExecError;

/// What agentc does about a row on Podman.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Renders something else, with Docker's effective result.
    Rewrite,
    /// Refuses the launch, naming the field.
    Refuse,
}

/// One row of the difference table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Difference {
    /// The spec field (or rendered flag) concerned.
    pub field: &'static str,
    /// What Podman does with it as Docker's rendering spells it.
    pub podman: &'static str,
    /// What agentc does.
    pub action: Action,
    /// What agentc renders or says instead.
    pub instead: &'static str,
}

/// Docker's `/dev/shm` size when none is given (64 MiB); Podman's is 65536000 bytes.
pub const DOCKER_SHM_BYTES: u64 = 64 << 20;

/// The table. Order: the launch's flag order.
pub const DIFFERENCES: &[Difference] = &[
    Difference {
        field: "cap_add",
        podman: "gives --cap-add capabilities to a non-root user as ambient, effective capabilities, even with no-new-privileges (Docker keeps them in the bounding set only)",
        action: Action::Rewrite,
        instead: "no --cap-add when the launch user (--user, else the image's USER) is not root: Docker's effective result (no capability)",
    },
    Difference {
        field: "tmpfs",
        podman: "mounts --tmpfs=/tmp without options executable (rw,nosuid,nodev)",
        action: Action::Rewrite,
        instead: "explicit options: rw,noexec,nosuid,nodev (rw,exec,nosuid,nodev with exec)",
    },
    Difference {
        field: "read_only_root",
        podman: "with --read-only also mounts a writable tmpfs at /var/tmp",
        action: Action::Rewrite,
        instead: "--read-only-tmpfs=false (CLI); through the API socket, which has no such field, /var/tmp is a tmpfs rw,noexec,nosuid,nodev",
    },
    Difference {
        field: "mounts[].read_only",
        podman: "refuses `readonly` on a volume mount",
        action: Action::Rewrite,
        instead: "`ro` (Docker reads it the same)",
    },
    Difference {
        field: "mounts[].source.subpath",
        podman: "the CLI refuses volume-subpath, the API socket drops it silently",
        action: Action::Refuse,
        instead: "refused: the whole volume would be mounted",
    },
    Difference {
        field: "extra_hosts[].target",
        podman: "the CLI refuses host-gateway, the API socket writes it literally into /etc/hosts",
        action: Action::Refuse,
        instead: "refused: name the address, or use host.containers.internal, which Podman adds itself",
    },
    Difference {
        field: "ipc",
        podman: "makes the IPC namespace shareable (another container can join it)",
        action: Action::Rewrite,
        instead: "--ipc=private / IpcMode private",
    },
    Difference {
        field: "resources.shm_size_bytes",
        podman: "defaults /dev/shm to 65536000 bytes (Docker: 64 MiB)",
        action: Action::Rewrite,
        instead: "--shm-size=67108864 when the profile sets none",
    },
    Difference {
        field: "resources.pids_limit",
        podman: "limits a container to 2048 processes when no limit is given",
        action: Action::Rewrite,
        instead: "--pids-limit=-1 / PidsLimit -1 when the limit is off",
    },
    Difference {
        field: "log",
        podman: "reads json-file as k8s-file, max-size in decimal units, and drops max-file silently",
        action: Action::Rewrite,
        instead: "--log-driver=k8s-file with max-size in bytes; max-file is not rendered (Podman keeps one file, truncated in place)",
    },
    Difference {
        field: "runtime",
        podman: "the API socket ignores HostConfig.Runtime (every container runs under the service's default)",
        action: Action::Refuse,
        instead: "through the socket, refused unless it is the service's default runtime; the CLI passes --runtime",
    },
    Difference {
        field: "rlimits",
        podman: "asks for nofile 1048576, which a host without CAP_SYS_RESOURCE refuses (error setting rlimit type 7)",
        action: Action::Rewrite,
        instead: "agentc renders no --ulimit: containers.conf default_ulimits (scripts/setup-engines.sh)",
    },
    Difference {
        field: "resources",
        podman: "rootless on cgroup v1 ignores every resource limit, with only a warning",
        action: Action::Refuse,
        instead: "refused, naming the first limit, when agentc runs podman as a non-root user on a cgroup v1 host",
    },
    Difference {
        field: "egress",
        podman: "has no bridge option com.docker.network.bridge.inhibit_ipv4, which the egress proxy's isolated network needs",
        action: Action::Refuse,
        instead: "refused: run the launch on docker, or set egress.enforce = \"image\"",
    },
    Difference {
        field: "rm --force",
        podman: "stops with SIGTERM and waits 10 s before SIGKILL",
        action: Action::Rewrite,
        instead: "podman rm --force --time=0",
    },
];

/// What Podman does with one field of [`ContainerSpec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meaning {
    /// What Docker does: rendered the same, no row.
    Same,
    /// Something else, as these rows of [`DIFFERENCES`] say (by their `field`).
    Rows(&'static [&'static str]),
}

/// Lists every field of [`ContainerSpec`] with its [`Meaning`] on Podman, and proves the
/// list whole: the fields are also the pattern of an exhaustive destructuring of the spec
/// (no `..`), so a field added to the spec (or renamed) does not compile until its Podman
/// meaning is written here.
macro_rules! field_meanings {
    ($($field:ident => $meaning:expr),* $(,)?) => {{
        #[allow(dead_code)]
        fn every_field_is_listed(spec: &ContainerSpec) {
            let ContainerSpec { $($field: _),* } = spec;
        }
        [$((stringify!($field), $meaning)),*]
    }};
}

/// Every field of [`ContainerSpec`] and what Podman does with it; checked whole by the
/// compiler (an exhaustive destructuring of the spec) and against [`DIFFERENCES`] by the tests.
pub fn field_meanings() -> Vec<(&'static str, Meaning)> {
    use Meaning::{Rows, Same};
    field_meanings! {
        name => Same,
        image => Same,
        entrypoint => Same,
        command => Same,
        user => Same,
        working_dir => Same,
        init => Same,
        env => Same,
        mounts => Rows(&["mounts[].read_only", "mounts[].source.subpath"]),
        tmpfs => Rows(&["tmpfs"]),
        read_only_root => Rows(&["read_only_root"]),
        no_new_privileges => Same,
        apparmor => Same,
        cap_drop_all => Same,
        cap_add => Rows(&["cap_add"]),
        network => Same,
        extra_hosts => Rows(&["extra_hosts[].target"]),
        ports => Same,
        exposed_ports => Same,
        network_aliases => Same,
        ipv4_address => Same,
        dns => Same,
        sysctls => Same,
        egress => Rows(&["egress"]),
        resources => Rows(&["resources.shm_size_bytes", "resources.pids_limit", "resources"]),
        log => Rows(&["log"]),
        devices => Same,
        labels => Same,
        runtime => Rows(&["runtime"]),
        isolation => Same,
        interactive => Same,
        tty => Same,
        auto_remove => Same,
        restart => Same,
        detach => Same,
        held_secrets => Same,
    }
    .to_vec()
}

/// The rows of [`DIFFERENCES`] about what agentc renders or runs beyond the spec's fields
/// (a flag Docker implies, the removal), not about one field.
pub const ROWS_BEYOND_FIELDS: &[&str] = &["ipc", "rlimits", "rm --force"];

/// Whether a user spec (`uid`, `uid:gid`, `name`, `name:group`) is root; empty is root (the
/// image's default).
pub fn is_root_user(user: &str) -> bool {
    let name = user.split(':').next().unwrap_or_default().trim();
    name.is_empty() || name == "0" || name == "root"
}

/// Applies the rows that change the spec on Podman (capabilities for a non-root user, the
/// `/dev/shm` default, the log driver) and refuses the rows Podman cannot carry (a volume
/// subpath, `host-gateway`), naming the field. `image_user` is the image's `USER` (read when
/// the spec sets no `--user`). The spec's labels are left as they are: the spec digest still
/// names the launch the profile asked for.
pub fn adapt(spec: &ContainerSpec, image_user: Option<&str>) -> Result<ContainerSpec, ExecError> {
    let refuse = |field: String, reason: &str, hint: &str| ExecError::EngineUnsupported {
        engine: Engine::Podman,
        field,
        reason: reason.to_string(),
        hint: hint.to_string(),
    };
    for (index, mount) in spec.mounts.iter().enumerate() {
        if let MountSource::Volume {
            subpath: Some(_), ..
        } = &mount.source
        {
            return Err(refuse(
                format!("mounts[{index}].source.subpath"),
                "Podman 4.3 refuses volume-subpath (its API socket drops it, mounting the whole volume)",
                "run this launch on docker (`--engine docker`), or mount the whole volume",
            ));
        }
    }
    for (index, host) in spec.extra_hosts.iter().enumerate() {
        if host.target == HostTarget::HostGateway {
            return Err(refuse(
                format!("extra_hosts[{index}]"),
                "Podman 4.3 does not know host-gateway (its CLI refuses it, its API socket writes it literally into /etc/hosts)",
                "remove network.host_gateway: Podman names the host host.containers.internal in every container",
            ));
        }
    }
    if spec.egress.is_some() {
        return Err(refuse(
            "egress".to_string(),
            "the egress proxy's isolated network needs Docker's bridge option com.docker.network.bridge.inhibit_ipv4, which agentc does not set up on Podman yet",
            "run this launch on docker (`--engine docker`), or set egress.enforce = \"image\"",
        ));
    }
    let mut adapted = spec.clone();
    let user = spec.user.as_deref().or(image_user).unwrap_or_default();
    if !is_root_user(user) {
        adapted.cap_add.clear();
    }
    if adapted.resources.shm_size_bytes.is_none() {
        adapted.resources.shm_size_bytes = Some(DOCKER_SHM_BYTES);
    }
    if let Some(log) = &spec.log {
        adapted.log = Some(podman_log(log)?);
    }
    Ok(adapted)
}

/// Refuses a launch with any resource limit on rootless Podman over cgroup v1, where Podman
/// ignores every limit (a warning on its stderr is all): the limits would not hold.
/// `rootless` and `cgroup_v1` are the caller's facts ([`host_is_rootless_cgroup_v1`]).
pub fn require_enforced_limits(
    spec: &ContainerSpec,
    rootless: bool,
    cgroup_v1: bool,
) -> Result<(), ExecError> {
    if !(rootless && cgroup_v1) {
        return Ok(());
    }
    let resources = &spec.resources;
    let set = [
        ("resources.memory_bytes", resources.memory_bytes.is_some()),
        (
            "resources.memory_swap_bytes",
            resources.memory_swap_bytes.is_some(),
        ),
        ("resources.nano_cpus", resources.nano_cpus.is_some()),
        ("resources.pids_limit", resources.pids_limit.is_some()),
    ];
    match set.iter().find(|(_, set)| *set) {
        Some((field, _)) => Err(ExecError::EngineUnsupported {
            engine: Engine::Podman,
            field: field.to_string(),
            reason: "rootless Podman on a cgroup v1 host ignores every resource limit (it only warns)".to_string(),
            hint: "run podman as root, boot the host with cgroup v2 (systemd.unified_cgroup_hierarchy=1), or use docker".to_string(),
        }),
        None => Ok(()),
    }
}

/// Whether podman run by this process would be rootless on a cgroup v1 host: agentc is not
/// root, and `/sys/fs/cgroup` is not the cgroup v2 hierarchy (no `cgroup.controllers`).
pub fn host_is_rootless_cgroup_v1(euid_is_root: bool) -> (bool, bool) {
    let cgroup_v1 = !std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    (!euid_is_root, cgroup_v1)
}

/// `json-file` as Podman reads it: `k8s-file`, `max-size` in bytes, no `max-file`.
fn podman_log(log: &LogConfig) -> Result<LogConfig, ExecError> {
    if log.driver != "json-file" {
        return Ok(log.clone());
    }
    let mut options = std::collections::BTreeMap::new();
    for (key, value) in &log.options {
        match key.as_str() {
            "max-size" => {
                let bytes = size_bytes(value).ok_or_else(|| ExecError::EngineUnsupported {
                    engine: Engine::Podman,
                    field: "log.options.max-size".to_string(),
                    reason: format!("{value:?} is not a size Podman reads the same"),
                    hint: "write logging.max_size as a number with k, m or g".to_string(),
                })?;
                options.insert(key.clone(), bytes.to_string());
            }
            "max-file" => {}
            _ => {
                options.insert(key.clone(), value.clone());
            }
        }
    }
    Ok(LogConfig {
        driver: "k8s-file".to_string(),
        options,
    })
}

/// A docker size (`50m`, `1k`, `1048576`, `2GB`; binary units) in bytes.
fn size_bytes(text: &str) -> Option<u64> {
    let lower = text.trim().to_ascii_lowercase();
    let lower = lower.strip_suffix('b').unwrap_or(&lower);
    let (digits, unit) = match lower.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => lower.split_at(at),
        None => (lower, ""),
    };
    let number: u64 = digits.parse().ok()?;
    let factor: u64 = match unit {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return None,
    };
    number.checked_mul(factor)
}

/// The tmpfs options agentc spells out on Podman: Docker's defaults
/// (`rw,noexec,nosuid,nodev`), or with `exec`, and agentc's mode
/// ([`agentc_policy::presets::TMPFS_MODE`]).
pub fn tmpfs_options(exec: bool) -> String {
    let exec = if exec { "exec" } else { "noexec" };
    format!(
        "rw,{exec},nosuid,nodev,mode={}",
        agentc_policy::presets::TMPFS_MODE
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use agentc_policy::{Capability, ExtraHost, Mount};

    use super::*;
    use agentc_policy::Hinted;

    fn claude_like() -> ContainerSpec {
        let mut spec = ContainerSpec::empty("claude-code:latest");
        spec.no_new_privileges = true;
        spec.cap_drop_all = true;
        spec.cap_add = [Capability::NetAdmin, Capability::Setuid]
            .into_iter()
            .collect();
        spec.log = Some(LogConfig {
            driver: "json-file".into(),
            options: BTreeMap::from([
                ("max-size".into(), "50m".into()),
                ("max-file".into(), "3".into()),
            ]),
        });
        spec
    }

    #[test]
    fn every_row_names_a_field_and_what_agentc_does() {
        assert!(DIFFERENCES.len() >= 10);
        for row in DIFFERENCES {
            assert!(!row.field.is_empty() && !row.podman.is_empty() && !row.instead.is_empty());
        }
        let refused: Vec<&str> = DIFFERENCES
            .iter()
            .filter(|row| row.action == Action::Refuse)
            .map(|row| row.field)
            .collect();
        assert_eq!(
            refused,
            [
                "mounts[].source.subpath",
                "extra_hosts[].target",
                "runtime",
                "resources",
                "egress"
            ]
        );
    }

    #[test]
    fn every_row_belongs_to_a_field_and_every_field_row_exists() {
        let rows: Vec<&str> = DIFFERENCES.iter().map(|row| row.field).collect();
        let mut claimed: Vec<&str> = ROWS_BEYOND_FIELDS.to_vec();
        for (field, meaning) in field_meanings() {
            if let Meaning::Rows(named) = meaning {
                for row in named {
                    assert!(rows.contains(row), "{field} names no row {row:?}");
                    assert!(
                        row.split(['.', '[']).next() == Some(field),
                        "row {row:?} is not about {field}"
                    );
                    claimed.push(row);
                }
            }
        }
        for row in &rows {
            assert!(
                claimed.contains(row),
                "row {row:?} belongs to no field of ContainerSpec"
            );
        }
        assert_eq!(claimed.len(), rows.len(), "a row is claimed twice");
    }

    #[test]
    fn a_non_root_launch_gets_no_added_capability_on_podman() {
        // The image's USER decides when the spec sets none.
        let adapted = adapt(&claude_like(), Some("claude")).unwrap();
        assert!(adapted.cap_add.is_empty());
        let mut spec = claude_like();
        spec.user = Some("1000:1000".into());
        assert!(adapt(&spec, None).unwrap().cap_add.is_empty());
        // Root keeps them: the capabilities mean the same there.
        assert_eq!(adapt(&claude_like(), Some("")).unwrap().cap_add.len(), 2);
        spec.user = Some("0".into());
        assert_eq!(adapt(&spec, Some("claude")).unwrap().cap_add.len(), 2);
        assert!(is_root_user("root:root") && !is_root_user("10000"));
    }

    #[test]
    fn shm_and_logs_get_dockers_meaning() {
        let adapted = adapt(&claude_like(), Some("0")).unwrap();
        assert_eq!(adapted.resources.shm_size_bytes, Some(DOCKER_SHM_BYTES));
        let log = adapted.log.unwrap();
        assert_eq!(log.driver, "k8s-file");
        assert_eq!(
            log.options,
            BTreeMap::from([("max-size".to_string(), "52428800".to_string())])
        );
        assert_eq!(size_bytes("2GB"), Some(2 << 30));
        assert_eq!(size_bytes("1k"), Some(1024));
        assert_eq!(size_bytes("12"), Some(12));
        assert_eq!(size_bytes("5x"), None);
        let mut spec = claude_like();
        spec.resources.shm_size_bytes = Some(1);
        assert_eq!(
            adapt(&spec, None).unwrap().resources.shm_size_bytes,
            Some(1)
        );
    }

    #[test]
    fn limits_rootless_podman_would_ignore_are_refused() {
        let mut spec = claude_like();
        assert!(require_enforced_limits(&spec, true, true).is_ok());
        spec.resources.pids_limit = Some(512);
        let error = require_enforced_limits(&spec, true, true)
            .unwrap_err()
            .with_hint()
            .to_string();
        assert!(
            error.starts_with("resources.pids_limit cannot be launched on podman"),
            "{error}"
        );
        assert!(require_enforced_limits(&spec, false, true).is_ok());
        assert!(require_enforced_limits(&spec, true, false).is_ok());
    }

    #[test]
    fn subpaths_and_host_gateway_are_refused_by_field() {
        let mut spec = claude_like();
        spec.mounts.push(Mount {
            target: "/sources/codex".into(),
            read_only: true,
            source: MountSource::Volume {
                name: "codex-home".into(),
                subpath: Some(".codex".into()),
            },
        });
        let error = adapt(&spec, None).unwrap_err().with_hint().to_string();
        assert!(
            error.starts_with("mounts[0].source.subpath cannot be launched on podman"),
            "{error}"
        );
        let mut spec = claude_like();
        spec.extra_hosts.push(ExtraHost {
            host: "host.docker.internal".into(),
            target: HostTarget::HostGateway,
        });
        let error = adapt(&spec, None).unwrap_err().with_hint().to_string();
        assert!(error.starts_with("extra_hosts[0] cannot"), "{error}");
        assert!(error.contains("\n  hint: "), "{error}");
    }
}
