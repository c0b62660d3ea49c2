//! The keys of [`crate::LaunchSpec::origins`]: one spelling each, shared by the resolver that
//! records an origin and by `explain` and the findings that read it.
//!
//! A key is a spec field path (`resources.memory_bytes`) or, for collections, the path and the
//! item (`mounts./workspace/app`, `ports.8080/tcp`, `env.HTTP_PROXY`).

use crate::capability::Capability;
use crate::spec::Protocol;

/// The image (`Config.Image`).
pub const IMAGE: &str = "image";
/// The container name.
pub const NAME: &str = "name";
/// The entrypoint.
pub const ENTRYPOINT: &str = "entrypoint";
/// The command.
pub const COMMAND: &str = "command";
/// Provider settings appended to the command.
pub const COMMAND_PROVIDER: &str = "command.provider";
/// Agent arguments appended to the command.
pub const COMMAND_ARGS: &str = "command.args";
/// The user.
pub const USER: &str = "user";
/// The working directory.
pub const WORKING_DIR: &str = "working_dir";
/// docker's init as PID 1.
pub const INIT: &str = "init";
/// Interactive stdin.
pub const INTERACTIVE: &str = "interactive";
/// A TTY.
pub const TTY: &str = "tty";
/// Removal on exit.
pub const AUTO_REMOVE: &str = "auto_remove";
/// Detached start.
pub const DETACH: &str = "detach";
/// No new privileges.
pub const NO_NEW_PRIVILEGES: &str = "no_new_privileges";
/// Dropping every capability.
pub const CAP_DROP_ALL: &str = "cap_drop_all";
/// The read-only root filesystem.
pub const READ_ONLY_ROOT: &str = "read_only_root";
/// The AppArmor override.
pub const APPARMOR: &str = "apparmor";
/// The OCI runtime.
pub const RUNTIME: &str = "runtime";
/// The isolation floor.
pub const ISOLATION: &str = "isolation";
/// The network attachment.
pub const NETWORK: &str = "network";
/// A network override or `[network] name` that was not applied, because `egress.mode = "deny"`
/// keeps the container off every network.
pub const NETWORK_SUPERSEDED: &str = "network.superseded";
/// The container's DNS servers.
pub const DNS: &str = "dns";
/// The egress companion (isolated network and egress proxy).
pub const EGRESS: &str = "egress";
/// The keys the egress proxy holds (`egress.credentials`), its CA volume and the trust
/// variables.
pub const CREDENTIALS: &str = "egress.credentials";
/// The container's aliases on its named network.
pub const NETWORK_ALIASES: &str = "network_aliases";
/// The container's fixed IPv4 address on its named network.
pub const IPV4_ADDRESS: &str = "ipv4_address";
/// Whether and how the workspace is mounted.
pub const WORKSPACE: &str = "workspace";
/// The seed target of a seed launch.
pub const SEED_TARGET: &str = "seed_target";
/// The memory limit.
pub const MEMORY: &str = "resources.memory_bytes";
/// The memory plus swap limit.
pub const MEMORY_SWAP: &str = "resources.memory_swap_bytes";
/// The `/dev/shm` size.
pub const SHM_SIZE: &str = "resources.shm_size_bytes";
/// The CPU quota.
pub const CPUS: &str = "resources.nano_cpus";
/// The process limit.
pub const PIDS_LIMIT: &str = "resources.pids_limit";
/// The log driver (or its absence).
pub const LOG: &str = "log";
/// The image tag of a build.
pub const BUILD_TAG: &str = "build.tag";
/// The build context.
pub const BUILD_CONTEXT: &str = "build.context";
/// The Dockerfile.
pub const BUILD_DOCKERFILE: &str = "build.dockerfile";
/// The `allow_*` field that accepted the build context.
pub const BUILD_CONTEXT_ALLOWED_BY: &str = "build.context.allowed_by";

/// A tmpfs mount: `tmpfs.<target>`.
pub fn tmpfs(target: &str) -> String {
    format!("tmpfs.{target}")
}

/// An added capability: `cap_add.<NAME>`.
pub fn cap_add(capability: Capability) -> String {
    format!("cap_add.{capability}")
}

/// The capability of a `cap_add.<NAME>` key, if it is one.
pub fn cap_add_name(key: &str) -> Option<&str> {
    key.strip_prefix("cap_add.")
}

/// A device: `devices.<host path>`.
pub fn device(host_path: &str) -> String {
    format!("devices.{host_path}")
}

/// A mount: `mounts.<target>`.
pub fn mount(target: &str) -> String {
    format!("mounts.{target}")
}

/// A mount's access mode: `mounts.<target>.read_only`.
pub fn mount_read_only(target: &str) -> String {
    format!("mounts.{target}.read_only")
}

/// The `allow_*` field that accepted the bind at `target`: `mounts.<target>.allowed_by`.
pub fn allowed_by(target: &str) -> String {
    format!("mounts.{target}.allowed_by")
}

/// An environment entry: `env.<NAME>`.
pub fn env(name: &str) -> String {
    format!("env.{name}")
}

/// An extra `/etc/hosts` entry: `extra_hosts.<host>`.
pub fn extra_host(host: &str) -> String {
    format!("extra_hosts.{host}")
}

/// A published port: `ports.<port>/<protocol>`.
///
/// An exposed port (on a named network) has the same key: it is the same `publish` entry.
pub fn port(container_port: u16, protocol: Protocol) -> String {
    format!("ports.{container_port}/{}", protocol.as_str())
}

/// A log option: `log.<option>` (`log.max-size`).
pub fn log_option(option: &str) -> String {
    format!("log.{option}")
}

/// A label: `labels.<key>`.
pub fn label(key: &str) -> String {
    format!("labels.{key}")
}

/// A build argument: `build.build_args.<NAME>`.
pub fn build_arg(name: &str) -> String {
    format!("build.build_args.{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_spelled_once() {
        assert_eq!(port(8080, Protocol::Tcp), "ports.8080/tcp");
        assert_eq!(mount("/w"), "mounts./w");
        assert_eq!(allowed_by("/w"), "mounts./w.allowed_by");
        assert_eq!(cap_add(Capability::NetAdmin), "cap_add.NET_ADMIN");
        assert_eq!(cap_add_name("cap_add.NET_RAW"), Some("NET_RAW"));
        assert_eq!(log_option("max-size"), "log.max-size");
    }
}
