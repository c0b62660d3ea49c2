//! The launch specification: everything agentc will ask Docker to do, as plain data.
//!
//! A [`LaunchSpec`] is the single contract between the policy crate and the backends. It is
//! computed once by [`crate::resolve()`], is valid by construction, and holds no Docker types:
//! each field's documentation names the `docker run` flag and the Engine API field that carry
//! it, and both backends render every field (they destructure it without `..`).
//!
//! Secrets never live here: an [`EnvValue::Secret`] names a variable of the caller's
//! environment, whose value is read only at launch; an [`EnvValue::Placeholder`] stands for one
//! that the egress proxy holds, made at launch. The one value a profile itself holds, a proxy
//! URL's credentials, travels beside the spec in memory ([`ContainerSpec::held_secrets`]),
//! never in its serialization.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::capability::Capability;
use crate::isolation::Isolation;

mod egress;
mod held;

pub use egress::{
    isolated_subnet, proxy_address, relays_of, workload_address, CredentialSpec, EgressSpec,
    IsolatedNetwork, AUDIT_DIR_TARGET, CA_BUNDLE_PATH, CA_CERT_PATH, CA_DIR_TARGET, INHIBIT_IPV4,
    KIND_EGRESS_PROXY, LABEL_EGRESS_FOR, PROXY_DNS_PORT, PROXY_IMAGE_PLACEHOLDER, PROXY_PORT,
    RELAY_PORT_BASE, UPSTREAM_CA_TARGET,
};
pub use held::HeldSecrets;

/// Label naming the profile of a container or image; agentc manages (lists, removes) only
/// what carries it.
pub const LABEL_PROFILE: &str = "io.agentc.profile";
/// Label naming the launch kind (`run`, `seed`, ...).
pub const LABEL_KIND: &str = "io.agentc.kind";
/// Label holding the launch's spec digest, computed by [`crate::resolve()`] over its portable
/// form ([`crate::digest`]); read with [`LaunchSpec::digest`].
pub const LABEL_SPEC_DIGEST: &str = "io.agentc.spec-digest";
/// Label naming the profile file (absolute) a container was launched from by `agentc run`, so
/// `agentc ps` can tell whether the profile changed since.
pub const LABEL_PROFILE_FILE: &str = "io.agentc.profile-file";
/// Label holding the sha256 (hex) of that profile file's text at launch.
pub const LABEL_PROFILE_SHA256: &str = "io.agentc.profile-sha256";
/// Label naming the isolation tier a container with an isolation floor runs under (`container`,
/// `gvisor`, `microvm`): set by [`crate::resolve()`] from [`crate::Instance::floor`].
pub const LABEL_ISOLATION: &str = "io.agentc.isolation";
/// Label naming the runtime chosen for a container's isolation floor.
pub const LABEL_RUNTIME: &str = "io.agentc.runtime";
/// Label naming the volume a container has for itself alone ([`crate::Instance::own_home`]:
/// `NAME-home`), which is removed with it.
pub const LABEL_OWN_VOLUME: &str = "io.agentc.own-volume";

/// Which launch of a profile a spec describes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum LaunchKind {
    /// The agent itself, interactive, removed on exit.
    Run,
    /// The networkless, root, copy-once helper that seeds a file into the home volume.
    Seed,
    /// The image build for the profile.
    Build,
    /// The Decant session-browser companion container.
    Decant,
    /// The long-lived sandbox of an `agent = "custom"` profile (the run of a custom agent).
    Sandbox,
}

impl LaunchKind {
    /// The lower-case name used on the command line and in labels.
    pub fn as_str(self) -> &'static str {
        match self {
            LaunchKind::Run => "run",
            LaunchKind::Seed => "seed",
            LaunchKind::Build => "build",
            LaunchKind::Decant => "decant",
            LaunchKind::Sandbox => "sandbox",
        }
    }
}

/// One launch, resolved from a profile, the environment and the invocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LaunchSpec {
    /// Which launch this is.
    pub kind: LaunchKind,
    /// The profile's `name`.
    pub profile: String,
    /// What Docker is asked to do.
    pub action: Action,
    /// Where each value came from, keyed by the spec field path (`resources.memory`,
    /// `env.HTTP_PROXY`, `mounts./workspace/app`); read by `agentc explain`.
    pub origins: BTreeMap<String, Origin>,
}

impl LaunchSpec {
    /// The labels of the container or the image build.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        match &self.action {
            Action::Container(container) => &container.labels,
            Action::Build(build) => &build.labels,
        }
    }

    /// The spec digest (the [`LABEL_SPEC_DIGEST`] label): the same for every instance of the
    /// launch and in every checkout ([`crate::digest`]). `None` for a spec not made by
    /// [`crate::resolve()`].
    pub fn digest(&self) -> Option<&str> {
        self.labels().get(LABEL_SPEC_DIGEST).map(String::as_str)
    }

    /// The labels of the container or the image build, to change.
    pub fn labels_mut(&mut self) -> &mut BTreeMap<String, String> {
        match &mut self.action {
            Action::Container(container) => &mut container.labels,
            Action::Build(build) => &mut build.labels,
        }
    }
}

/// What Docker is asked to do: create and start a container, or build an image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// `docker run` / `POST /containers/create` then start.
    Container(Box<ContainerSpec>),
    /// `docker build`.
    Build(BuildSpec),
}

/// Where a value of the spec came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Origin {
    /// agentc's built-in default, the same for every profile.
    Default,
    /// The preset of the profile's agent.
    Preset {
        /// The agent whose preset set the value.
        agent: String,
    },
    /// A line of the profile.
    Profile {
        /// The profile field path, such as `resources.memory`.
        field: String,
        /// 1-based line in the profile file, where known.
        line: Option<usize>,
        /// 1-based column in the profile file, where known.
        column: Option<usize>,
    },
    /// An environment override such as `AGENTC_MEM_LIMIT`.
    Environment {
        /// The variable's name.
        variable: String,
    },
    /// The invocation: a command-line option or the machine (workspace, user).
    Invocation {
        /// The option or input, such as `--workspace` or `--image`.
        input: String,
    },
}

/// A container launch: the `docker run` argv and the create body are both renderings of this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContainerSpec {
    /// Container name. `--name`; the create query's `name`.
    pub name: Option<String>,
    /// Image reference. The argument after the options; `Config.Image`.
    pub image: String,
    /// Entrypoint override; `None` keeps the image's. `--entrypoint`; `Config.Entrypoint` (one
    /// element).
    pub entrypoint: Option<String>,
    /// Command and arguments; empty keeps the image's `CMD`. The arguments after the image;
    /// `Config.Cmd`.
    pub command: Vec<String>,
    /// User (`name`, `uid` or `uid:gid`); `None` keeps the image's. `--user`; `Config.User`.
    pub user: Option<String>,
    /// Working directory; `None` keeps the image's. `--workdir`; `Config.WorkingDir`.
    pub working_dir: Option<String>,
    /// Run docker's init as PID 1, which reaps zombies and passes signals on to the
    /// entrypoint. `--init`; `HostConfig.Init`. Left out of the serialized spec when off, so
    /// that specs without it keep their digests.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub init: bool,
    /// Environment entries, in launch order, names unique. `--env`; `Config.Env`.
    pub env: Vec<EnvVar>,
    /// Bind and volume mounts, in mount order, targets unique. `--mount`; `HostConfig.Mounts`.
    pub mounts: Vec<Mount>,
    /// tmpfs mounts. `--tmpfs`; `HostConfig.Tmpfs`.
    pub tmpfs: Vec<Tmpfs>,
    /// Read-only root filesystem. `--read-only`; `HostConfig.ReadonlyRootfs`.
    pub read_only_root: bool,
    /// Forbid privilege gain through setuid binaries and file capabilities.
    /// `--security-opt no-new-privileges`; `HostConfig.SecurityOpt`.
    pub no_new_privileges: bool,
    /// AppArmor profile override; `None` keeps the daemon's default.
    /// `--security-opt apparmor=...`; `HostConfig.SecurityOpt`.
    pub apparmor: Option<AppArmor>,
    /// Drop every capability before adding `cap_add`. `--cap-drop ALL`; `HostConfig.CapDrop`.
    pub cap_drop_all: bool,
    /// Capabilities added. `--cap-add`; `HostConfig.CapAdd`.
    pub cap_add: BTreeSet<Capability>,
    /// Network attachment. `--network`; `HostConfig.NetworkMode`.
    pub network: Network,
    /// Extra `/etc/hosts` entries. `--add-host`; `HostConfig.ExtraHosts`.
    pub extra_hosts: Vec<ExtraHost>,
    /// Published container ports. `--publish`; `HostConfig.PortBindings` and
    /// `Config.ExposedPorts`.
    pub ports: Vec<PublishedPort>,
    /// Container ports exposed, not published: on a named network the container is reached
    /// at its own address there (`agentc port`). `--expose`; `Config.ExposedPorts`. Left out
    /// of the serialized spec when empty, so that specs without it keep their digests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exposed_ports: Vec<ExposedPort>,
    /// Other names the container answers to on its named network (agentc gives it the
    /// profile's name). `--network-alias`; `NetworkingConfig.EndpointsConfig.NETWORK.Aliases`.
    /// Left out of the serialized spec when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network_aliases: Vec<String>,
    /// The container's fixed IPv4 address on its named network: set by agentc only for a
    /// workload behind the egress proxy that publishes ports, which the proxy relays to this
    /// address ([`EgressSpec`]). `--ip`;
    /// `NetworkingConfig.EndpointsConfig.NETWORK.IPAMConfig.IPv4Address`. Left out of the
    /// serialized spec when unset, so that specs without it keep their digests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4_address: Option<std::net::Ipv4Addr>,
    /// DNS servers of the container. `--dns`; `HostConfig.Dns`. Left out of the serialized
    /// spec when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns: Vec<std::net::IpAddr>,
    /// Namespaced kernel parameters. `--sysctl`; `HostConfig.Sysctls`. Left out of the
    /// serialized spec when empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctls: BTreeMap<String, String>,
    /// The isolated network and the egress proxy this container needs launched first, when its
    /// allowlist is enforced outside it. Left out of the serialized spec when absent, so that
    /// specs without it keep their digests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<Box<EgressSpec>>,
    /// cgroup limits.
    pub resources: Resources,
    /// Log driver; `None` keeps the daemon's default. `--log-driver`, `--log-opt`;
    /// `HostConfig.LogConfig`.
    pub log: Option<LogConfig>,
    /// Host devices. `--device`; `HostConfig.Devices`.
    pub devices: Vec<Device>,
    /// Labels, including agentc's own (`io.agentc.*`). `--label`; `Config.Labels`.
    pub labels: BTreeMap<String, String>,
    /// The OCI runtime (`runsc`, `kata`, ...); `None` keeps the engine's default. `--runtime`;
    /// `HostConfig.Runtime`. Left out of the serialized spec when unset, so that specs without
    /// it keep their digests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// The isolation floor (`[security] isolation`): the launch chooses a runtime at or above
    /// `min` from what the engine has (detected and probed before anything is created) and
    /// writes it to [`ContainerSpec::runtime`]; the renderers refuse a floor above
    /// `container` with no runtime chosen. Left out of the serialized spec when unset, so
    /// that specs without it keep their digests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
    /// Keep stdin open and attach it. `--interactive`; `Config.OpenStdin`, `Config.AttachStdin`,
    /// `Config.StdinOnce`.
    pub interactive: bool,
    /// Allocate a pseudo-TTY. `--tty`; `Config.Tty`.
    pub tty: bool,
    /// Remove the container when it exits. `--rm`; `HostConfig.AutoRemove`.
    pub auto_remove: bool,
    /// Whether the engine starts the container again when it exits: `None` never (the
    /// engine's default, what every workload gets). agentc sets it on the egress proxy only
    /// ([`Restart::OnFailure`], [`PROXY_RESTARTS`]). `--restart`; `HostConfig.RestartPolicy`.
    /// Left out of the serialized spec when unset, so that specs without it keep their digests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<Restart>,
    /// Start in the background without attaching. `--detach`; `Config.AttachStdout` and
    /// `Config.AttachStderr` false.
    pub detach: bool,
    /// The values of secret variables of [`ContainerSpec::env`] that the profile itself holds
    /// (a proxy URL's credentials): never serialized, so no rendering, digest or lock holds
    /// them; a backend resolves those variables from here before the caller's environment,
    /// and a spec read back from JSON takes them from the caller's environment instead.
    #[serde(skip)]
    #[schemars(skip)]
    pub held_secrets: HeldSecrets,
}

impl ContainerSpec {
    /// A container that sets nothing but its image: no hardening, no limits, the default
    /// network, the image's entrypoint, command and user. Not a baseline to launch: `resolve`
    /// starts from it and hardens it; tests and callers start from it and set what they need.
    pub fn empty(image: impl Into<String>) -> ContainerSpec {
        ContainerSpec {
            name: None,
            image: image.into(),
            entrypoint: None,
            command: Vec::new(),
            user: None,
            working_dir: None,
            init: false,
            env: Vec::new(),
            mounts: Vec::new(),
            tmpfs: Vec::new(),
            read_only_root: false,
            no_new_privileges: false,
            apparmor: None,
            cap_drop_all: false,
            cap_add: BTreeSet::new(),
            network: Network::Default,
            extra_hosts: Vec::new(),
            ports: Vec::new(),
            exposed_ports: Vec::new(),
            network_aliases: Vec::new(),
            ipv4_address: None,
            dns: Vec::new(),
            sysctls: BTreeMap::new(),
            egress: None,
            resources: Resources::default(),
            log: None,
            devices: Vec::new(),
            labels: BTreeMap::new(),
            runtime: None,
            isolation: None,
            interactive: false,
            tty: false,
            auto_remove: false,
            restart: None,
            detach: false,
            held_secrets: HeldSecrets::default(),
        }
    }
}

/// One environment entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EnvVar {
    /// The variable's name (`[A-Za-z_][A-Za-z0-9_]*`).
    pub name: String,
    /// Its value, or where it comes from.
    pub value: EnvValue,
}

/// The value of an environment entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EnvValue {
    /// A value written in the spec. Rendered as `--env NAME=value`.
    Literal {
        /// The value.
        value: String,
    },
    /// Passed through by name from the caller's environment at launch; the spec never holds
    /// the value. Rendered as `--env NAME` (the docker CLI reads the value from its own
    /// environment) and as the bare `NAME` in a rendered API body.
    Secret {
        /// Launching fails before anything is created when the variable is unset.
        required: bool,
    },
    /// A placeholder for the key in the caller's `variable`, which the egress proxy holds
    /// instead ([`EgressSpec::credentials`]): made at launch (`prefix` and random characters,
    /// [`placeholder_template`] where no launch makes one), the same in every entry naming
    /// `variable` within one launch (the workload's and the proxy's), new for every launch.
    Placeholder {
        /// The caller's variable whose key this stands for.
        variable: String,
        /// How the placeholder starts (`sk-ant-`), so that an SDK's format check passes.
        prefix: String,
    },
}

/// The stand-in of a [`EnvValue::Placeholder`] where nothing is launched (`agentc render`,
/// the Kubernetes rendering): `prefix`, `agentc-placeholder-` and the variable in lower case.
/// A launch replaces it with random characters.
pub fn placeholder_template(prefix: &str, variable: &str) -> String {
    format!(
        "{prefix}agentc-placeholder-{}",
        variable.to_ascii_lowercase().replace('_', "-")
    )
}

/// A bind or volume mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Mount {
    /// Absolute path in the container. `dst=`; `Mount.Target`.
    pub target: String,
    /// Mounted read-only. `readonly`; `Mount.ReadOnly`.
    pub read_only: bool,
    /// What is mounted.
    pub source: MountSource,
}

/// What a [`Mount`] mounts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MountSource {
    /// A host path, which must exist. `type=bind,src=`; `Mount.Type = "bind"`, `Mount.Source`.
    Bind {
        /// Absolute host path.
        path: String,
    },
    /// A named volume, created on first use. `type=volume,src=`; `Mount.Type = "volume"`.
    Volume {
        /// The volume's name.
        name: String,
        /// A path inside the volume to mount instead of its root. `volume-subpath=`;
        /// `Mount.VolumeOptions.Subpath` (Engine API 1.45 and later).
        subpath: Option<String>,
    },
}

/// A tmpfs mount, mode [`crate::presets::TMPFS_MODE`] (`mode=1777`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Tmpfs {
    /// Absolute path in the container.
    pub target: String,
    /// Allow executing files from it (docker mounts tmpfs `noexec` otherwise). `:exec`.
    pub exec: bool,
}

/// An AppArmor override.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AppArmor {
    /// No AppArmor confinement (`apparmor=unconfined`), which FUSE mounts need.
    Unconfined,
}

/// A network attachment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Network {
    /// The daemon's default bridge network.
    Default,
    /// No network at all: only the loopback interface.
    None,
    /// A named, user-defined network.
    Named {
        /// The network's name.
        name: String,
    },
}

/// One extra `/etc/hosts` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExtraHost {
    /// The host name.
    pub host: String,
    /// What it resolves to.
    pub target: HostTarget,
}

/// The address of an [`ExtraHost`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostTarget {
    /// The daemon's host gateway address (`host-gateway`).
    HostGateway,
    /// A literal IP address.
    Ip {
        /// The address.
        address: std::net::IpAddr,
    },
}

/// A published container port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PublishedPort {
    /// The port inside the container.
    pub container_port: u16,
    /// Its protocol.
    pub protocol: Protocol,
    /// The host address it is published on.
    pub host_ip: std::net::IpAddr,
    /// The host port; `None` lets the daemon pick a free one.
    pub host_port: Option<u16>,
}

/// A container port exposed without a host binding.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub struct ExposedPort {
    /// The port inside the container.
    pub container_port: u16,
    /// Its protocol.
    pub protocol: Protocol,
}

/// A transport protocol.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

impl Protocol {
    /// The lower-case name docker uses (`tcp`, `udp`).
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        }
    }
}

/// When the engine starts a container again ([`ContainerSpec::restart`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "when", rename_all = "snake_case", deny_unknown_fields)]
pub enum Restart {
    /// After it exits with a status other than 0 (killed, out of memory, crashed), at most
    /// `max_retries` times in its life; not after `docker stop`/`kill` (a stop by hand).
    /// `--restart=on-failure:N`; `{"Name": "on-failure", "MaximumRetryCount": N}`.
    OnFailure {
        /// How many times at most (at least 1).
        max_retries: u32,
    },
}

/// How many times the engine starts a dead egress proxy again ([`Restart::OnFailure`]): it
/// keeps its launch CA and its audit across restarts ([`agentc_egress::state`]), and after the
/// last one it stays down (the sandbox reaches nothing outside; `agentc ps` says so).
pub const PROXY_RESTARTS: u32 = 5;

/// cgroup limits; `None` leaves the daemon's default (unlimited).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Resources {
    /// Memory limit in bytes. `--memory`; `HostConfig.Memory`.
    pub memory_bytes: Option<u64>,
    /// Memory plus swap in bytes; equal to `memory_bytes` means no swap. `--memory-swap`;
    /// `HostConfig.MemorySwap`.
    pub memory_swap_bytes: Option<u64>,
    /// Size of `/dev/shm` in bytes. `--shm-size`; `HostConfig.ShmSize`.
    pub shm_size_bytes: Option<u64>,
    /// CPU quota in billionths of a CPU. `--cpus`; `HostConfig.NanoCpus`.
    pub nano_cpus: Option<u64>,
    /// Maximum number of processes. `--pids-limit`; `HostConfig.PidsLimit`.
    pub pids_limit: Option<u32>,
}

/// A log driver and its options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LogConfig {
    /// The driver, such as `json-file`.
    pub driver: String,
    /// Its options, such as `max-size = "50m"`.
    pub options: BTreeMap<String, String>,
}

/// A host device made available in the container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Device {
    /// Path on the host.
    pub host_path: String,
    /// Path in the container.
    pub container_path: String,
    /// cgroup permissions, a combination of `r`, `w` and `m`.
    pub permissions: String,
}

/// An image build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BuildSpec {
    /// The tag given to the image. `--tag`; query `t`.
    pub tag: String,
    /// The build context directory (absolute). The last argument.
    pub context: String,
    /// The Dockerfile, relative to the context; `None` means `Dockerfile`. `--file`; query
    /// `dockerfile`.
    pub dockerfile: Option<String>,
    /// Named build contexts (BuildKit). `--build-context NAME=DIR`.
    pub named_contexts: BTreeMap<String, String>,
    /// Build arguments. `--build-arg NAME=VALUE`; query `buildargs`.
    pub build_args: BTreeMap<String, String>,
    /// Labels set on the image. `--label`; query `labels`.
    pub labels: BTreeMap<String, String>,
}
