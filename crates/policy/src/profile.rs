//! The profile as written: serde structs that mirror the TOML, schema version 1.
//!
//! These types accept every profile that agent-containers accepts, plus agentc's sandbox fields
//! (`[image]`, `[resources]`, `[logging]`, `[network]`, `[security]`, `[workspace]`) and the
//! Kubernetes rendering's (`[kubernetes]`). They hold what the user wrote, parsed once into
//! typed values (an egress mode, sizes and CPU counts with an explicit `off`, ports,
//! capabilities, a Pod Security level), with defaults filled in; the rules that span fields
//! live with their table under `rules/`, and turning a profile into a launch in
//! [`crate::resolve()`]. Unknown fields are errors everywhere.

use schemars::JsonSchema;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::capability::Capability;
use crate::isolation::Isolation;
use crate::limits::Limit;
use crate::ports::PortSpec;
use crate::values;
pub use crate::values::{
    ConfigFormat, CredentialMode, CredentialScheme, EgressEnforce, EgressMode, OnConflict,
    PodSecurityLevel, ReplayAction,
};

/// The only profile schema version this crate reads.
pub const SCHEMA_VERSION: i64 = 1;

/// A complete profile: one named agent deployment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Profile schema version; must be 1.
    #[serde(default = "default_schema_version")]
    pub schema_version: i64,
    /// Profile name: `^[a-z][a-z0-9_-]{0,62}$`. Used in container, volume and image names.
    pub name: String,
    /// The agent this profile runs.
    pub agent: AgentName,
    /// Named volume for the agent's persistent home; defaults to
    /// `<agent>-home-<user>-<uid>-<name>`.
    pub home_volume: Option<String>,
    /// Build-time packages.
    #[serde(default)]
    pub packages: PackageSet,
    /// Model provider settings.
    pub provider: Option<ProviderConfig>,
    /// HTTP(S) proxy and CA trust.
    pub proxy: Option<ProxyConfig>,
    /// Egress policy and optional SSH gateway.
    #[serde(default)]
    pub egress: EgressConfig,
    /// Keys the egress proxy holds and sets for their hosts only, the workload holding a
    /// placeholder (`[credentials.NAME]`); `mode = "env"` keeps them in its environment.
    #[serde(default)]
    pub credentials: CredentialsConfig,
    /// Decant session-browser companion.
    #[serde(default)]
    pub decant: DecantConfig,
    /// Langfuse tracing.
    #[serde(default)]
    pub langfuse: LangfuseConfig,
    /// Agent-native configuration imported into the home volume.
    pub configuration_import: Option<ConfigurationImport>,
    /// Configuration files mounted into the container (mutually exclusive with
    /// `configuration_import`).
    #[serde(default)]
    pub configuration_mounts: Vec<MountConfig>,
    /// Host files and directories mounted or seeded into the container.
    #[serde(default)]
    pub mounts: Vec<MountConfig>,
    /// Image reference and, for `agent = "custom"`, its entrypoint, command and user.
    #[serde(default)]
    pub image: ImageConfig,
    /// cgroup limits; unset fields keep the agent preset's default.
    #[serde(default)]
    pub resources: ResourcesConfig,
    /// Container log rotation.
    #[serde(default)]
    pub logging: LoggingConfig,
    /// Network attachment, host gateway and published ports.
    #[serde(default)]
    pub network: NetworkConfig,
    /// Capabilities and FUSE beyond the agent preset.
    #[serde(default)]
    pub security: SecurityConfig,
    /// How the workspace directory is mounted.
    #[serde(default)]
    pub workspace: WorkspaceConfig,
    /// What the Kubernetes rendering (`--backend k8s`) must meet; the Docker launch ignores it.
    #[serde(default)]
    pub kubernetes: KubernetesConfig,
}

fn default_schema_version() -> i64 {
    SCHEMA_VERSION
}

/// The agents agentc knows.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum AgentName {
    /// Anthropic's Claude Code.
    #[serde(rename = "claude-code")]
    ClaudeCode,
    /// OpenCode.
    #[serde(rename = "opencode")]
    Opencode,
    /// OpenAI's Codex CLI.
    #[serde(rename = "codex")]
    Codex,
    /// Nous Research's Hermes agent.
    #[serde(rename = "hermes")]
    Hermes,
    /// Any image: a long-lived sandbox described by `[image]`.
    #[serde(rename = "custom")]
    Custom,
}

impl AgentName {
    /// The name as written in a profile.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentName::ClaudeCode => "claude-code",
            AgentName::Opencode => "opencode",
            AgentName::Codex => "codex",
            AgentName::Hermes => "hermes",
            AgentName::Custom => "custom",
        }
    }
}

/// Build-time packages, one list per ecosystem.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackageSet {
    /// Debian packages.
    #[serde(default)]
    pub apt: Vec<String>,
    /// npm packages.
    #[serde(default)]
    pub npm: Vec<String>,
    /// uv tools.
    #[serde(default)]
    pub uv_tools: Vec<String>,
    /// uv libraries.
    #[serde(default)]
    pub uv_libraries: Vec<String>,
}

/// Model provider settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Provider identifier (`anthropic`, `openai`, `custom`, ...), normalized to lower case.
    pub kind: String,
    /// Provider endpoint URL (http or https).
    pub endpoint: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// Name of the environment variable that holds the API key (`^[A-Z_][A-Z0-9_]*$`).
    pub api_key_env: Option<String>,
}

/// HTTP(S) proxy, bypass list and CA trust.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProxyConfig {
    /// HTTP proxy URL.
    pub http: Option<String>,
    /// HTTPS proxy URL.
    pub https: Option<String>,
    /// Hosts that bypass the proxy.
    #[serde(default)]
    pub no_proxy: Vec<String>,
    /// CA bundle file, relative to the profile (exclusive with `ca_dir`).
    pub ca_file: Option<String>,
    /// Directory of CA certificates, relative to the profile (exclusive with `ca_file`).
    pub ca_dir: Option<String>,
}

/// Egress policy and optional SSH gateway.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EgressConfig {
    /// `deny`, `allowlist` (the default) or `unrestricted`; read in any case.
    #[serde(default)]
    pub mode: EgressMode,
    /// Allowed hosts in `allowlist` mode.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// SSH gateway host (requires `gateway_port`).
    pub gateway_host: Option<String>,
    /// SSH gateway port, 1 to 65535 (requires `gateway_host`).
    #[serde(default, deserialize_with = "values::optional_tcp_port")]
    #[schemars(schema_with = "values::tcp_port_schema")]
    pub gateway_port: Option<u16>,
    /// SSH gateway user.
    pub gateway_user: Option<String>,
    /// Host name the gateway is reached by.
    pub gateway_access_hostname: Option<String>,
    /// IP addresses or CIDRs reachable before the gateway is up.
    #[serde(default)]
    pub gateway_bootstrap_allow: Vec<String>,
    /// SSH private key file, relative to the profile (with `gateway_known_hosts_file`).
    pub gateway_key_file: Option<String>,
    /// SSH known-hosts file, relative to the profile (with `gateway_key_file`).
    pub gateway_known_hosts_file: Option<String>,
    /// Where an allowlist with hosts is enforced: `outside` (agentc's egress proxy on an
    /// isolated network, the default) or `image` (the image's own firewall).
    #[serde(default)]
    pub enforce: EgressEnforce,
    /// The Docker network the egress proxy reaches out through; the default bridge when unset.
    pub outside_network: Option<String>,
    /// Private or reserved address ranges (`10.20.0.0/16`, `fd00::/8`, a bare address) the
    /// egress proxy may connect to; none by default.
    #[serde(default)]
    pub allow_cidrs: Vec<String>,
    /// Distinct names allowed only through one `*.domain` host that the egress proxy resolves
    /// in any minute, 1 to 1000 (10 when unset); each is a DNS query to that domain's name
    /// servers, one more is refused (`wildcard-rate`). Exact hosts are not counted.
    #[serde(default, deserialize_with = "values::wildcard_names_per_minute")]
    #[schemars(schema_with = "values::wildcard_names_schema")]
    pub wildcard_names_per_minute: Option<u32>,
    /// Behind the egress proxy, let the workload hold `NET_ADMIN` or `NET_RAW` (an agent
    /// preset's, for the image's own firewall, or `security.add_capabilities`). With either, a
    /// process that may be root can reach the host's own addresses on the isolated network
    /// (a route or neighbour entry, a raw frame), without the proxy or its log. Off by default:
    /// the presets run without them (the proxy enforces; the image's firewall stands down) and
    /// a profile adding them to a workload that may be root is refused. When on, `agentc
    /// explain` reports the high `egress-host-path` finding naming this field.
    #[serde(default)]
    pub allow_net_capabilities: bool,
    /// Hosts of `egress.hosts` whose TLS tunnels may carry Encrypted Client Hello (or ESNI);
    /// each must also be an entry of `egress.hosts`. None by default: the egress proxy refuses
    /// such a ClientHello, since it hides the name the client really asks for.
    #[serde(default)]
    pub allow_ech: Vec<String>,
}

/// `[credentials]`: where the agent's keys live, and the keys the egress proxy sets for their
/// hosts only. With the allowlist enforced outside, the agent presets bind their provider's key
/// and Langfuse's keys this way by default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CredentialsConfig {
    /// `proxy` (the default) or `env`, read in any case.
    pub mode: CredentialMode,
    /// `block` (the default) or `stop`: what the egress proxy does after it refused a
    /// placeholder sent where its key is not bound.
    pub on_replay: ReplayAction,
    /// The keys by name (`[credentials.NAME]`).
    pub bindings: BTreeMap<String, CredentialBinding>,
}

/// One key the egress proxy holds: read on the host at launch from `from_env`, set as
/// `header` on requests to `hosts` only; the workload's `from_env` holds a placeholder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CredentialBinding {
    /// The variable holding the key on the host (`^[A-Z_][A-Z0-9_]*$`), passed by name.
    pub from_env: String,
    /// With `scheme = "Basic"`: the variable holding the user (Langfuse's public key); the
    /// workload's holds a placeholder too.
    pub user_from_env: Option<String>,
    /// The hosts that receive it (`host` or `host:port`, exact names, each allowed by
    /// `egress.hosts`); port 443 without one.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// The header set, lower case (`authorization` by default, `x-api-key`, ...).
    pub header: Option<String>,
    /// `Bearer` or `Basic` (with `header = "authorization"`); without it the key is sent as
    /// it is.
    pub scheme: Option<CredentialScheme>,
    /// The start of the placeholder (`sk-ant-`), so that an SDK's format check passes; letters,
    /// digits, `-` and `_`, at most 16.
    pub prefix: Option<String>,
}

/// Decant session-browser companion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecantConfig {
    /// Opt in to Decant (Claude Code and Codex only).
    #[serde(default)]
    pub enabled: bool,
    /// Profiles whose home volumes Decant reads; each is `NAME.toml` beside this profile.
    #[serde(default)]
    pub source_profiles: Vec<String>,
    /// Decant image reference.
    pub image: Option<String>,
    /// Named volume for Decant's database.
    pub data_volume: Option<String>,
    /// Host address Decant is published on.
    #[serde(default = "default_decant_bind_address")]
    pub bind_address: String,
    /// Host port Decant is published on, 1 to 65535.
    #[serde(default = "default_decant_port", deserialize_with = "values::tcp_port")]
    #[schemars(schema_with = "values::tcp_port_schema")]
    pub port: u16,
}

fn default_decant_bind_address() -> String {
    "127.0.0.1".to_string()
}

fn default_decant_port() -> u16 {
    8787
}

impl Default for DecantConfig {
    fn default() -> Self {
        DecantConfig {
            enabled: false,
            source_profiles: Vec::new(),
            image: None,
            data_volume: None,
            bind_address: default_decant_bind_address(),
            port: default_decant_port(),
        }
    }
}

/// Langfuse tracing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LangfuseConfig {
    /// Opt in to Langfuse (Claude Code, Codex and OpenCode only).
    #[serde(default)]
    pub enabled: bool,
    /// Langfuse endpoint URL; required when enabled.
    pub base_url: Option<String>,
    /// Variable holding the public key.
    #[serde(default = "default_langfuse_public_key_env")]
    pub public_key_env: String,
    /// Variable holding the secret key.
    #[serde(default = "default_langfuse_secret_key_env")]
    pub secret_key_env: String,
    /// Tracing environment name.
    pub environment: Option<String>,
    /// User id attached to traces.
    pub user_id: Option<String>,
}

fn default_langfuse_public_key_env() -> String {
    "LANGFUSE_PUBLIC_KEY".to_string()
}

fn default_langfuse_secret_key_env() -> String {
    "LANGFUSE_SECRET_KEY".to_string()
}

impl Default for LangfuseConfig {
    fn default() -> Self {
        LangfuseConfig {
            enabled: false,
            base_url: None,
            public_key_env: default_langfuse_public_key_env(),
            secret_key_env: default_langfuse_secret_key_env(),
            environment: None,
            user_id: None,
        }
    }
}

/// How a mount provides host content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MountType {
    /// Bind a host file or directory.
    #[default]
    Bind,
    /// Bind a host directory.
    Directory,
    /// Copy once into the home volume with the seed helper.
    Seed,
}

/// A mount or seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MountConfig {
    /// How the content is provided.
    #[serde(default, rename = "type")]
    pub kind: MountType,
    /// Host path; relative paths are relative to the profile's directory, `~` is the home.
    pub source: String,
    /// Absolute container path other than `/`.
    pub target: String,
    /// Mount read-only (the default).
    #[serde(default = "default_true")]
    pub read_only: bool,
    /// Seed only: `keep` (the default) or `replace` an existing, different target.
    #[serde(default)]
    pub on_conflict: OnConflict,
}

fn default_true() -> bool {
    true
}

/// Agent-native configuration imported into the home volume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigurationImport {
    /// The file to import.
    pub source: String,
    /// `json`, `jsonc`, `toml` or `yaml` (`yml`, a leading `.` and any case are read too);
    /// inferred from the file when absent.
    pub format: Option<ConfigFormat>,
    /// Where to import it.
    pub target: Option<String>,
    /// `keep` (the default) or `replace`.
    #[serde(default)]
    pub on_conflict: OnConflict,
}

/// Image settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageConfig {
    /// Image reference; required for `agent = "custom"`, defaults to `<agent>:latest` otherwise.
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// Entrypoint program; absent keeps the image's (custom only).
    pub entrypoint: Option<String>,
    /// Command and arguments, such as `["tail", "-f", "/dev/null"]` (custom only).
    pub command: Option<Vec<String>>,
    /// User to run as (custom only).
    pub user: Option<String>,
    /// Run docker's init (tini) as PID 1 of the agent's container, before the entrypoint: it
    /// reaps orphaned processes, which would otherwise linger as zombies and count against
    /// `resources.pids_limit`, and passes signals on, so that `agentc stop` ends the agent at
    /// once instead of killing it after the engine's timeout. On by default for the agent
    /// presets, off for a custom sandbox (its image's entrypoint may be an init already);
    /// `false` turns it off.
    #[serde(default)]
    pub init: Option<bool>,
    /// Build context directory, relative to the profile, for `agentc build`.
    pub build_context: Option<String>,
    /// Dockerfile, relative to the build context.
    pub dockerfile: Option<String>,
}

/// cgroup limits; each also takes `"off"` for none, as its `AGENTC_*` variable does.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourcesConfig {
    /// Memory limit in bytes, written as a size such as `"4g"` or `"512m"` (at least `"6m"`);
    /// swap is set equal (no swap). `"off"`: no memory limit.
    #[serde(
        default,
        deserialize_with = "values::memory",
        serialize_with = "values::serialize_size"
    )]
    #[schemars(schema_with = "values::size_limit_schema")]
    pub memory: Option<Limit<u64>>,
    /// `/dev/shm` size in bytes, written as a size such as `"256m"`. `"off"`: docker's
    /// default (64m).
    #[serde(
        default,
        deserialize_with = "values::shm_size",
        serialize_with = "values::serialize_size"
    )]
    #[schemars(schema_with = "values::size_limit_schema")]
    pub shm_size: Option<Limit<u64>>,
    /// CPU quota in billionths of a CPU, written as a number or a string such as `1.5` or
    /// `"2"` (0.01 to 1024). `"off"`: no CPU limit.
    #[serde(
        default,
        deserialize_with = "values::cpus",
        serialize_with = "values::serialize_cpus"
    )]
    #[schemars(schema_with = "values::cpus_schema")]
    pub cpus: Option<Limit<u64>>,
    /// Maximum number of processes (1 to 4194304). `"off"`: no process limit.
    #[serde(
        default,
        deserialize_with = "values::pids",
        serialize_with = "values::serialize_count"
    )]
    #[schemars(schema_with = "values::pids_schema")]
    pub pids_limit: Option<Limit<u32>>,
}

/// Container log rotation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoggingConfig {
    /// Size at which the json-file log rotates (`"50m"` by default, at least `"1k"`); `"off"`
    /// keeps the daemon's default driver, unbounded.
    #[serde(
        default,
        deserialize_with = "values::log_max_size",
        serialize_with = "values::serialize_size"
    )]
    #[schemars(schema_with = "values::size_limit_schema")]
    pub max_size: Option<Limit<u64>>,
    /// Number of rotated files kept (3 by default, 1 to 100).
    #[serde(default, deserialize_with = "values::log_max_file")]
    #[schemars(schema_with = "values::log_files_schema")]
    pub max_file: Option<u32>,
}

/// Network settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// Join this named network; ports are then not published.
    pub name: Option<String>,
    /// Map `host.docker.internal` to the host gateway.
    #[serde(default)]
    pub host_gateway: bool,
    /// Container ports published on 127.0.0.1 with a random host port: `8080` or `"53/udp"`.
    #[serde(default)]
    pub publish: Vec<PortSpec>,
}

/// Security settings beyond the agent preset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecurityConfig {
    /// Capabilities added beyond the preset (`NET_ADMIN`; lower case and a `CAP_` prefix are
    /// read too).
    #[serde(default, deserialize_with = "values::capabilities")]
    pub add_capabilities: Vec<Capability>,
    /// Allow FUSE: the `/dev/fuse` device, `SYS_ADMIN` and AppArmor unconfined.
    #[serde(default)]
    pub fuse: bool,
    /// Keep the root filesystem read-only (the default).
    #[serde(default = "default_true")]
    pub read_only_root: bool,
    /// Accept the Docker socket in any form: a bind of `/var/run/docker.sock`, `/run/docker.sock`,
    /// a file named `docker.sock`, a directory holding one (`/var/run`, `/run`, `/var`), or
    /// `DOCKER_HOST` passed into the container. Off by default: such profiles are refused, as
    /// the socket gives the agent root on the host. When on, `agentc explain` reports the
    /// `docker-socket` finding naming this field.
    #[serde(default)]
    pub allow_docker_socket: bool,
    /// Accept a bind of the host's root directory `/`. Off by default: such profiles are
    /// refused. When on, `agentc explain` reports the `bind-root` finding naming this field.
    #[serde(default)]
    pub allow_root_bind: bool,
    /// Accept a bind of the whole home directory (`~`, the caller's home, or a directory above
    /// it such as `/home`), read-only or writable. Off by default: such launches are refused,
    /// as the home holds the caller's keys and tokens. When on, `agentc explain` reports the
    /// `bind-home` finding naming this field.
    #[serde(default)]
    pub allow_home_bind: bool,
    /// Accept a bind of a container engine's data or sockets: `/var/lib/docker`,
    /// `/var/lib/containers`, `/var/lib/containerd`, `/run/containerd`, `/run/docker*` (and
    /// their `/var/run` spellings), rootless `~/.local/share/containers`, anything in them or a
    /// directory above one (`/var/lib`), read-only or writable. Off by default: such profiles
    /// are refused, as the engines' data holds every container's configuration and
    /// environment (the egress proxy's keys among them). When on, `agentc explain` reports the
    /// critical `bind-engine-data` finding naming this field.
    #[serde(default)]
    pub allow_engine_data_bind: bool,
    /// Accept a bind of the host's system directories `/proc`, `/sys`, `/dev`, `/etc`, `/boot`
    /// and `/root` (unless it is your home), or of anything in them, read-only or writable. Off
    /// by default: such profiles are refused, as they hand over the host's processes (and the
    /// environment of the shell that ran agentc), devices and configuration. When on, `agentc
    /// explain` reports the critical `bind-host-system` finding naming this field.
    #[serde(default)]
    pub allow_host_system_bind: bool,
    /// Accept a bind of a credential directory (`.ssh`, `.docker`, `.kube`, `.aws`,
    /// `.config/gcloud`, `.gnupg`, wherever it is), of anything in it, or of `~/.config`, read-only
    /// or writable. Off by default: such profiles are refused, as they hold your keys and
    /// tokens. When on, `agentc explain` reports the critical `bind-credential-dir` finding
    /// naming this field.
    #[serde(default)]
    pub allow_credential_dir_bind: bool,
    /// The OCI runtime the agent's container runs under: `"runc"`, `"runsc"` (gVisor),
    /// `"kata"`, or the name of any runtime registered with the engine. Unset: the engine's
    /// default. agentc asks the engine before creating anything and refuses a runtime it does
    /// not have. `--runtime`; `HostConfig.Runtime`.
    #[serde(default)]
    pub runtime: Option<String>,
    /// The weakest isolation the sandbox may run under, and which tier to take above it:
    /// `isolation = { min = "gvisor", prefer = "strongest" }`. Tiers, weakest first:
    /// `"container"` (runc, crun), `"gvisor"` (runsc), `"microvm"` (Kata, Firecracker).
    /// agentc detects and probes the engine's runtimes before creating anything, launches
    /// under one at or above `min` (`prefer = "min"`, the default: the weakest that meets it;
    /// `"strongest"`: the strongest it has), and refuses (exit 65) when none meets it.
    /// A `runtime` named too must be at or above `min`.
    #[serde(default)]
    pub isolation: Option<Isolation>,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        SecurityConfig {
            add_capabilities: Vec::new(),
            fuse: false,
            read_only_root: true,
            allow_docker_socket: false,
            allow_root_bind: false,
            allow_home_bind: false,
            allow_engine_data_bind: false,
            allow_host_system_bind: false,
            allow_credential_dir_bind: false,
            runtime: None,
            isolation: None,
        }
    }
}

/// How the workspace directory is mounted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceConfig {
    /// Mount the workspace at `/workspace/<directory name>` (the default for agent presets;
    /// custom sandboxes default to no workspace mount).
    pub mount: Option<bool>,
    /// Mount it read-only (writable by default).
    #[serde(default)]
    pub read_only: bool,
}

/// The Kubernetes rendering's settings (`[kubernetes]`). The Docker launch does not read them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KubernetesConfig {
    /// The Pod Security level every rendered pod meets: `"restricted"` (the default) or
    /// `"baseline"`, which lets the profile add Docker's default capabilities (`CHOWN`,
    /// `SETUID`, ...) and which `agentc explain --backend k8s` reports as weaker. Read in any
    /// case.
    #[serde(default)]
    pub pod_security: PodSecurityLevel,
}
