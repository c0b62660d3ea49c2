//! The pure rendering: a [`ContainerSpec`] to the Engine API create request (a launch as JSON,
//! with its egress companion, is `json.rs`).
//!
//! The body mirrors what the docker CLI 28.2.2 sends for the argv the CLI backend renders for
//! the same spec (`cli/command/container/opts.go`, `parse`). The CLI serialises Go structs, so it
//! also sends every zero value (`"Hostname": ""`, `"Privileged": false`, `"Binds": null`); this
//! body leaves zero values out, which the daemon reads identically. The rule, checked against
//! the real CLI and by the tests below: the rendered body equals the CLI's body with zero-valued
//! struct fields (`null`, `false`, `0`, `""`, `[]`, `{}`) removed recursively, where entries of
//! maps (`Labels`, `Tmpfs`, `ExposedPorts`, `EndpointsConfig`) are kept whatever their value.
//! Two CLI fields are not renderings of the spec: `Env` order (the CLI rebuilds `Env` through a
//! map when it applies proxy settings, so its order varies between runs; agentc keeps spec order)
//! and `HostConfig.ConsoleSize` (the caller's terminal size).
//!
//! Non-zero values the CLI always sends, and so does this body: `HostConfig.MemorySwappiness =
//! -1`, `HostConfig.RestartPolicy.Name = "no"`, `HostConfig.NetworkMode` (`"default"` without
//! `--network`, plus a `"default"` endpoint in `NetworkingConfig`), and `AttachStdout` /
//! `AttachStderr` unless detached.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};

use agentc_engine::{check_build, check_container, ArgvError, ExecError};
use agentc_policy::spec::{
    AppArmor, BuildSpec, ContainerSpec, Device, EnvValue, EnvVar, ExposedPort, ExtraHost,
    HostTarget, LogConfig, Mount, MountSource, Network, PublishedPort, Resources, Tmpfs,
};
use agentc_policy::Hinted;
use bollard::models::{
    ContainerCreateBody, DeviceMapping, EndpointIpamConfig, EndpointSettings, HostConfig,
    HostConfigLogConfig, Mount as ApiMount, MountType, MountVolumeOptions, NetworkingConfig,
    PortBinding, PortMap, RestartPolicy, RestartPolicyNameEnum,
};
use serde_json::json;

/// A rendered `POST /containers/create` request.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateRequest {
    /// The `name` query parameter; `None` lets the daemon pick a name.
    pub name: Option<String>,
    /// The JSON body.
    pub body: ContainerCreateBody,
}

/// Why a spec cannot be rendered for the Engine API: the message; what to do about it is
/// [`Hinted::hint`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// A value does not fit the signed 64-bit integer the Engine API field holds.
    #[error("{field} = {value} does not fit the engine api's signed 64-bit field")]
    OutOfRange {
        /// The spec field path, such as `resources.memory_bytes`.
        field: &'static str,
        /// The offending value.
        value: u64,
    },
    /// The build uses named build contexts, which only BuildKit knows.
    #[error(
        "build.named_contexts ({}) cannot be sent to the classic build api, which has no named contexts",
        names.join(", ")
    )]
    NamedBuildContexts {
        /// The contexts' names.
        names: Vec<String>,
    },
    /// The rendered body could not be turned into JSON.
    #[error("cannot serialise the create body to json: {message}")]
    Json {
        /// serde_json's message.
        message: String,
    },
    /// A text value holds a NUL byte, which the docker CLI cannot pass and no process can
    /// receive. The value itself is not repeated (it may be an environment value).
    #[error("{field} contains a nul byte, which docker cannot carry")]
    Nul {
        /// The spec field path, such as `env.HTTP_PROXY` or `mounts[0].target`.
        field: String,
    },
    /// A value the docker CLI's flag syntax would split, rewrite or refuse. The Engine API
    /// could carry it, but the CLI backend refuses it (same field, same reason), and both
    /// backends accept exactly the same specs.
    #[error("{field} = {value:?} cannot be launched: {reason}")]
    Unrepresentable {
        /// The spec field path, such as `tmpfs[1].target` or `labels`.
        field: String,
        /// The offending value (never an environment value).
        value: String,
        /// Why docker's command line cannot carry it.
        reason: &'static str,
        /// What to change.
        hint: &'static str,
    },
}

/// The shared refusal of a value docker's command line cannot carry: the API backend refuses
/// the same value, naming the same field, so that both backends accept the same specs.
impl From<ArgvError> for RenderError {
    fn from(error: ArgvError) -> RenderError {
        match error {
            ArgvError::Nul { field } => RenderError::Nul { field },
            ArgvError::Unrepresentable {
                field,
                value,
                reason,
                hint,
            } => RenderError::Unrepresentable {
                field,
                value,
                reason,
                hint,
            },
            other => RenderError::Unrepresentable {
                field: other.field().to_string(),
                value: String::new(),
                reason: "the docker command line cannot carry it",
                hint: "change the value",
            },
        }
    }
}

/// A refusal met at launch: the launch error keeps it whole.
impl From<RenderError> for ExecError {
    fn from(error: RenderError) -> ExecError {
        ExecError::render(error)
    }
}

impl Hinted for RenderError {
    fn hint(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(match self {
            RenderError::OutOfRange { .. } => "lower the limit",
            RenderError::NamedBuildContexts { .. } => {
                "use the cli backend, which runs `docker build --build-context`"
            }
            RenderError::Json { .. } => return None,
            RenderError::Nul { .. } => "remove it from the profile",
            RenderError::Unrepresentable { hint, .. } => hint,
        }))
    }
}

impl RenderError {
    /// The spec field path the error is about (`agentc_engine::ArgvError::field` names
    /// the same path for the same value).
    pub fn field(&self) -> &str {
        match self {
            RenderError::OutOfRange { field, .. } => field,
            RenderError::NamedBuildContexts { .. } => "named_contexts",
            RenderError::Json { .. } => "body",
            RenderError::Nul { field } | RenderError::Unrepresentable { field, .. } => field,
        }
    }
}

/// Renders the create request for a container launch.
///
/// Secrets render as the bare `NAME` in `Env`, the way the CLI sends an `--env NAME` it
/// cannot resolve; [`agentc_engine::launch::launch`] substitutes the values just before creating.
pub fn render_create(spec: &ContainerSpec) -> Result<CreateRequest, RenderError> {
    let ContainerSpec {
        name,
        image,
        entrypoint,
        command,
        user,
        working_dir,
        init,
        env,
        mounts,
        tmpfs,
        read_only_root,
        no_new_privileges,
        apparmor,
        cap_drop_all,
        cap_add,
        network,
        extra_hosts,
        ports,
        exposed_ports,
        network_aliases,
        ipv4_address,
        dns,
        sysctls,
        // Rendered as the requests before this one: [`crate::egress::render_egress`].
        egress: _,
        resources,
        log,
        devices,
        labels,
        runtime,
        // Met by the runtime the launch chose; refused without one ([`check_container`]).
        isolation: _,
        interactive,
        tty,
        auto_remove,
        restart,
        detach,
        // Their variables render as the bare `NAME`, like every secret; the launch resolves
        // them from here before the caller's environment (`launch`).
        held_secrets: _,
    } = spec;
    check_container(spec)?;

    let (exposed_ports, port_bindings) = render_ports(ports, exposed_ports);
    let (network_mode, networking_config) = render_network(network, network_aliases, *ipv4_address);
    let mut host_config = HostConfig {
        mounts: non_empty(mounts.iter().map(render_mount).collect()),
        tmpfs: non_empty_map(render_tmpfs(tmpfs)),
        readonly_rootfs: flag(*read_only_root),
        security_opt: non_empty(render_security(*no_new_privileges, *apparmor)),
        cap_drop: cap_drop_all.then(|| vec!["ALL".to_string()]),
        cap_add: non_empty(render_capabilities(cap_add)),
        network_mode: Some(network_mode),
        extra_hosts: non_empty(extra_hosts.iter().map(render_extra_host).collect()),
        port_bindings,
        log_config: log.as_ref().map(render_logging),
        devices: non_empty(devices.iter().map(render_device).collect()),
        auto_remove: flag(*auto_remove),
        runtime: runtime.clone(),
        // The CLI sends `Init` only when `--init` is given.
        init: init.then_some(true),
        // The CLI always sends these two (`--memory-swappiness` and `--restart` defaults).
        memory_swappiness: Some(-1),
        restart_policy: Some(match restart {
            None => RestartPolicy {
                name: Some(RestartPolicyNameEnum::NO),
                maximum_retry_count: None,
            },
            // `--restart=on-failure:N`.
            Some(agentc_policy::Restart::OnFailure { max_retries }) => RestartPolicy {
                name: Some(RestartPolicyNameEnum::ON_FAILURE),
                maximum_retry_count: Some(i64::from(*max_retries)),
            },
        }),
        ..Default::default()
    };
    render_resources(resources, &mut host_config)?;
    if !dns.is_empty() {
        // `--dns=` → `HostConfig.Dns`.
        host_config.dns = Some(dns.iter().map(ToString::to_string).collect());
    }
    if !sysctls.is_empty() {
        // `--sysctl=` → `HostConfig.Sysctls`.
        host_config.sysctls = Some(sysctls.clone().into_iter().collect());
    }

    // `docker run` without `--detach` attaches stdout and stderr, and stdin with
    // `--interactive`; `--detach` clears all three and `StdinOnce` (run.go).
    let attached = !*detach;
    let body = ContainerCreateBody {
        image: Some(image.clone()),
        entrypoint: entrypoint
            .as_ref()
            .map(|entrypoint| vec![entrypoint.clone()]),
        cmd: non_empty(command.clone()),
        user: user.clone().filter(|user| !user.is_empty()),
        working_dir: working_dir.clone().filter(|dir| !dir.is_empty()),
        env: non_empty(env.iter().map(render_env).collect()),
        exposed_ports,
        labels: non_empty_map(labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        attach_stdin: flag(*interactive && attached),
        attach_stdout: flag(attached),
        attach_stderr: flag(attached),
        open_stdin: flag(*interactive),
        stdin_once: flag(*interactive && attached),
        tty: flag(*tty),
        host_config: Some(host_config),
        networking_config,
        ..Default::default()
    };
    Ok(CreateRequest {
        name: name.clone(),
        body,
    })
}

/// `docker build` → the classic build query: `--tag` → `t`, `--force-rm` → `forcerm`,
/// `--file` → `dockerfile`, `--build-arg` → `buildargs`, `--label` → `labels`; the context directory is sent as a tar
/// body. `--build-context` has no classic equivalent and is refused.
pub(crate) fn render_build(build: &BuildSpec) -> Result<serde_json::Value, RenderError> {
    let BuildSpec {
        tag,
        context,
        dockerfile,
        named_contexts,
        build_args,
        labels,
    } = build;
    check_build(build)?;
    if !named_contexts.is_empty() {
        return Err(RenderError::NamedBuildContexts {
            names: named_contexts.keys().cloned().collect(),
        });
    }
    let mut query = serde_json::Map::new();
    query.insert("t".into(), json!(tag));
    query.insert("forcerm".into(), json!(true));
    query.insert(
        "dockerfile".into(),
        json!(dockerfile.as_deref().unwrap_or("Dockerfile")),
    );
    if !build_args.is_empty() {
        query.insert("buildargs".into(), json!(build_args));
    }
    if !labels.is_empty() {
        query.insert("labels".into(), json!(labels));
    }
    Ok(json!({ "query": query, "context": context }))
}

/// `--env NAME=value` → `Config.Env` `NAME=value`; `--env NAME` (a secret) → `NAME`.
fn render_env(var: &EnvVar) -> String {
    match &var.value {
        EnvValue::Literal { value } => format!("{}={}", var.name, value),
        EnvValue::Secret { .. } => var.name.clone(),
        // A launch makes its placeholders first; a rendering shows the stand-in.
        EnvValue::Placeholder { variable, prefix } => format!(
            "{}={}",
            var.name,
            agentc_policy::placeholder_template(prefix, variable)
        ),
    }
}

/// `--mount type=bind|volume,...` → `HostConfig.Mounts`. The CLI adds an empty
/// `VolumeOptions.DriverConfig` next to a subpath; being zero, it is left out.
fn render_mount(mount: &Mount) -> ApiMount {
    let Mount {
        target,
        read_only,
        source,
    } = mount;
    let (typ, source, volume_options) = match source {
        MountSource::Bind { path } => (MountType::BIND, path.clone(), None),
        MountSource::Volume { name, subpath } => (
            MountType::VOLUME,
            name.clone(),
            subpath.as_ref().map(|subpath| MountVolumeOptions {
                subpath: Some(subpath.clone()),
                ..Default::default()
            }),
        ),
    };
    ApiMount {
        target: Some(target.clone()),
        source: Some(source),
        typ: Some(typ),
        read_only: flag(*read_only),
        volume_options,
        ..Default::default()
    }
}

/// `--tmpfs PATH:[exec,]mode=1777` → `HostConfig.Tmpfs` `{PATH: "[exec,]mode=1777"}`.
fn render_tmpfs(tmpfs: &[Tmpfs]) -> HashMap<String, String> {
    let mode = agentc_policy::presets::TMPFS_MODE;
    tmpfs
        .iter()
        .map(|Tmpfs { target, exec }| {
            let options = if *exec {
                format!("exec,mode={mode}")
            } else {
                format!("mode={mode}")
            };
            (target.clone(), options)
        })
        .collect()
}

/// `--security-opt no-new-privileges`, `--security-opt apparmor=unconfined` →
/// `HostConfig.SecurityOpt`, verbatim and in that order (the CLI passes them through).
fn render_security(no_new_privileges: bool, apparmor: Option<AppArmor>) -> Vec<String> {
    let mut options = Vec::new();
    if no_new_privileges {
        options.push("no-new-privileges".to_string());
    }
    match apparmor {
        Some(AppArmor::Unconfined) => options.push("apparmor=unconfined".to_string()),
        None => {}
    }
    options
}

/// `--cap-add NAME` → `HostConfig.CapAdd`: the CLI normalises to the `CAP_` spelling and
/// sorts the strings (`opts.EffectiveCapAddCapDrop`); byte order differs from the enum's
/// (`CAP_SYSLOG` sorts before `CAP_SYS_ADMIN`).
fn render_capabilities(capabilities: &BTreeSet<agentc_policy::Capability>) -> Vec<String> {
    let mut names: Vec<String> = capabilities
        .iter()
        .map(|capability| format!("CAP_{}", capability.as_str()))
        .collect();
    names.sort();
    names
}

/// `--network` → `HostConfig.NetworkMode`. Without `--network` (agentc's `Default`) the CLI
/// sends `"default"` and a `"default"` endpoint; with one network and no endpoint options it
/// sends no endpoint, unless `--network-alias` gives it aliases (`Aliases`) or `--ip` a fixed
/// address (`IPAMConfig.IPv4Address`).
fn render_network(
    network: &Network,
    aliases: &[String],
    ipv4_address: Option<std::net::Ipv4Addr>,
) -> (String, Option<NetworkingConfig>) {
    match network {
        Network::Default => (
            "default".to_string(),
            Some(NetworkingConfig {
                endpoints_config: Some(HashMap::from([(
                    "default".to_string(),
                    EndpointSettings::default(),
                )])),
            }),
        ),
        Network::None => ("none".to_string(), None),
        Network::Named { name } if aliases.is_empty() && ipv4_address.is_none() => {
            (name.clone(), None)
        }
        Network::Named { name } => (
            name.clone(),
            Some(NetworkingConfig {
                endpoints_config: Some(HashMap::from([(
                    name.clone(),
                    EndpointSettings {
                        aliases: (!aliases.is_empty()).then(|| aliases.to_vec()),
                        ipam_config: ipv4_address.map(|address| EndpointIpamConfig {
                            ipv4_address: Some(address.to_string()),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                )])),
            }),
        ),
    }
}

/// `--add-host HOST:TARGET` → `HostConfig.ExtraHosts` `HOST:TARGET`, IPv6 unbracketed (the
/// CLI normalises `h:[::1]` to `h:::1`).
fn render_extra_host(host: &ExtraHost) -> String {
    let target = match &host.target {
        HostTarget::HostGateway => "host-gateway".to_string(),
        HostTarget::Ip { address } => address.to_string(),
    };
    format!("{}:{}", host.host, target)
}

/// `--publish IP:[HOSTPORT]:PORT/PROTO` → `Config.ExposedPorts` (`PORT/PROTO`, once) and
/// `HostConfig.PortBindings` (`{PORT/PROTO: [{HostIp, HostPort}]}`, in order). The CLI
/// always sends `PortBindings`, `{}` when empty; an unset host port is `""`, a zero value.
/// `--expose PORT/PROTO` adds to `Config.ExposedPorts` only.
fn render_ports(
    ports: &[PublishedPort],
    exposed_only: &[ExposedPort],
) -> (Option<Vec<String>>, Option<PortMap>) {
    let mut exposed: Vec<String> = Vec::new();
    let mut bindings: PortMap = HashMap::new();
    for PublishedPort {
        container_port,
        protocol,
        host_ip,
        host_port,
    } in ports
    {
        let key = format!("{}/{}", container_port, protocol.as_str());
        if !exposed.contains(&key) {
            exposed.push(key.clone());
        }
        bindings
            .entry(key)
            .or_insert_with(|| Some(Vec::new()))
            .get_or_insert_with(Vec::new)
            .push(PortBinding {
                host_ip: Some(host_ip.to_string()),
                host_port: host_port.map(|port| port.to_string()),
            });
    }
    for ExposedPort {
        container_port,
        protocol,
    } in exposed_only
    {
        let key = format!("{}/{}", container_port, protocol.as_str());
        if !exposed.contains(&key) {
            exposed.push(key);
        }
    }
    (non_empty(exposed), non_empty_map(bindings))
}

/// `--memory`, `--memory-swap`, `--shm-size`, `--cpus`, `--pids-limit` → `HostConfig.Memory`,
/// `MemorySwap`, `ShmSize`, `NanoCpus`, `PidsLimit`.
fn render_resources(resources: &Resources, host: &mut HostConfig) -> Result<(), RenderError> {
    let Resources {
        memory_bytes,
        memory_swap_bytes,
        shm_size_bytes,
        nano_cpus,
        pids_limit,
    } = resources;
    // Sizes above MAX_SIZE_BYTES were refused by `agentc_engine::check_container`.
    host.memory = signed("resources.memory_bytes", *memory_bytes)?;
    host.memory_swap = signed("resources.memory_swap_bytes", *memory_swap_bytes)?;
    host.shm_size = signed("resources.shm_size_bytes", *shm_size_bytes)?;
    host.nano_cpus = signed("resources.nano_cpus", *nano_cpus)?;
    host.pids_limit = pids_limit.filter(|limit| *limit != 0).map(i64::from);
    Ok(())
}

/// `--log-driver`, `--log-opt K=V` → `HostConfig.LogConfig` `{Type, Config}`.
fn render_logging(log: &LogConfig) -> HostConfigLogConfig {
    let LogConfig { driver, options } = log;
    HostConfigLogConfig {
        typ: Some(driver.clone()).filter(|driver| !driver.is_empty()),
        config: non_empty_map(
            options
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
    }
}

/// `--device HOST:CONTAINER:PERMS` → `HostConfig.Devices`.
fn render_device(device: &Device) -> DeviceMapping {
    let Device {
        host_path,
        container_path,
        permissions,
    } = device;
    DeviceMapping {
        path_on_host: Some(host_path.clone()),
        path_in_container: Some(container_path.clone()),
        cgroup_permissions: Some(permissions.clone()),
    }
}

fn signed(field: &'static str, value: Option<u64>) -> Result<Option<i64>, RenderError> {
    match value {
        None | Some(0) => Ok(None),
        Some(value) => i64::try_from(value)
            .map(Some)
            .map_err(|_| RenderError::OutOfRange { field, value }),
    }
}

fn flag(value: bool) -> Option<bool> {
    value.then_some(true)
}

fn non_empty<T>(items: Vec<T>) -> Option<Vec<T>> {
    (!items.is_empty()).then_some(items)
}

fn non_empty_map<K, V>(map: HashMap<K, V>) -> Option<HashMap<K, V>> {
    (!map.is_empty()).then_some(map)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::json::render_json;
    use agentc_policy::spec::{Action, LaunchSpec};
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    use agentc_policy::spec::Protocol;
    use agentc_policy::Capability;

    use super::*;

    /// The smallest launch: `docker create IMAGE`.
    fn bare(image: &str) -> ContainerSpec {
        ContainerSpec::empty(image)
    }

    fn literal(name: &str, value: &str) -> EnvVar {
        EnvVar {
            name: name.to_string(),
            value: EnvValue::Literal {
                value: value.to_string(),
            },
        }
    }

    fn port(
        container_port: u16,
        protocol: Protocol,
        host_ip: IpAddr,
        host_port: Option<u16>,
    ) -> PublishedPort {
        PublishedPort {
            container_port,
            protocol,
            host_ip,
            host_port,
        }
    }

    /// Every flag family at once. Its argv, as the CLI backend renders it:
    /// `docker create --interactive --tty --rm --init --name=agentc-demo --entrypoint=/bin/entry
    /// --user=1000:1000 --workdir=/workspace/app --env=A=1 --env=EMPTY= --env=TOKEN
    /// --mount=type=bind,source=/home/u/app,target=/workspace/app
    /// --mount=type=bind,source=/etc/gitconfig,target=/etc/gitconfig,readonly
    /// --mount=type=volume,source=agentc-home,target=/home/agent
    /// --mount=type=volume,source=agentc-home,target=/cache,readonly,volume-subpath=cache
    /// --tmpfs=/tmp:exec --tmpfs=/run --read-only --security-opt=no-new-privileges
    /// --security-opt=apparmor=unconfined --cap-drop=ALL --cap-add=NET_ADMIN --cap-add=SYSLOG
    /// --cap-add=SYS_ADMIN --network=agentc-net --add-host=host.docker.internal:host-gateway
    /// --add-host=db:10.0.0.2 --add-host=v6:[::1] --publish=127.0.0.1::8080/tcp
    /// --publish=127.0.0.1:9000:9000/udp --publish=[::1]:7000:7000/tcp
    /// --publish=127.0.0.1:8081:8080/tcp --memory=2147483648 --memory-swap=2147483648
    /// --shm-size=268435456 --cpus=1.5 --pids-limit=512 --log-driver=json-file
    /// --log-opt=max-size=50m --log-opt=max-file=3 --device=/dev/fuse:/dev/fuse:rwm
    /// --label=io.agentc.profile=demo --label=empty= agentc/demo:1 claude --yes`
    fn full() -> ContainerSpec {
        let localhost = IpAddr::V4(Ipv4Addr::LOCALHOST);
        ContainerSpec {
            name: Some("agentc-demo".into()),
            image: "agentc/demo:1".into(),
            entrypoint: Some("/bin/entry".into()),
            command: vec!["claude".into(), "--yes".into()],
            user: Some("1000:1000".into()),
            working_dir: Some("/workspace/app".into()),
            init: true,
            env: vec![
                literal("A", "1"),
                literal("EMPTY", ""),
                EnvVar {
                    name: "TOKEN".into(),
                    value: EnvValue::Secret { required: true },
                },
            ],
            mounts: vec![
                Mount {
                    target: "/workspace/app".into(),
                    read_only: false,
                    source: MountSource::Bind {
                        path: "/home/u/app".into(),
                    },
                },
                Mount {
                    target: "/etc/gitconfig".into(),
                    read_only: true,
                    source: MountSource::Bind {
                        path: "/etc/gitconfig".into(),
                    },
                },
                Mount {
                    target: "/home/agent".into(),
                    read_only: false,
                    source: MountSource::Volume {
                        name: "agentc-home".into(),
                        subpath: None,
                    },
                },
                Mount {
                    target: "/cache".into(),
                    read_only: true,
                    source: MountSource::Volume {
                        name: "agentc-home".into(),
                        subpath: Some("cache".into()),
                    },
                },
            ],
            tmpfs: vec![
                Tmpfs {
                    target: "/tmp".into(),
                    exec: true,
                },
                Tmpfs {
                    target: "/run".into(),
                    exec: false,
                },
            ],
            read_only_root: true,
            no_new_privileges: true,
            apparmor: Some(AppArmor::Unconfined),
            cap_drop_all: true,
            cap_add: BTreeSet::from([
                Capability::NetAdmin,
                Capability::Syslog,
                Capability::SysAdmin,
            ]),
            network: Network::Named {
                name: "agentc-net".into(),
            },
            extra_hosts: vec![
                ExtraHost {
                    host: "host.docker.internal".into(),
                    target: HostTarget::HostGateway,
                },
                ExtraHost {
                    host: "db".into(),
                    target: HostTarget::Ip {
                        address: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
                    },
                },
                ExtraHost {
                    host: "v6".into(),
                    target: HostTarget::Ip {
                        address: IpAddr::V6(Ipv6Addr::LOCALHOST),
                    },
                },
            ],
            ports: vec![
                port(8080, Protocol::Tcp, localhost, None),
                port(9000, Protocol::Udp, localhost, Some(9000)),
                port(
                    7000,
                    Protocol::Tcp,
                    IpAddr::V6(Ipv6Addr::LOCALHOST),
                    Some(7000),
                ),
                port(8080, Protocol::Tcp, localhost, Some(8081)),
            ],
            exposed_ports: Vec::new(),
            network_aliases: Vec::new(),
            ipv4_address: None,
            dns: Vec::new(),
            sysctls: Default::default(),
            egress: None,
            resources: Resources {
                memory_bytes: Some(2 << 30),
                memory_swap_bytes: Some(2 << 30),
                shm_size_bytes: Some(256 << 20),
                nano_cpus: Some(1_500_000_000),
                pids_limit: Some(512),
            },
            log: Some(LogConfig {
                driver: "json-file".into(),
                options: BTreeMap::from([
                    ("max-size".into(), "50m".into()),
                    ("max-file".into(), "3".into()),
                ]),
            }),
            devices: vec![Device {
                host_path: "/dev/fuse".into(),
                container_path: "/dev/fuse".into(),
                permissions: "rwm".into(),
            }],
            labels: BTreeMap::from([
                ("io.agentc.profile".into(), "demo".into()),
                ("empty".into(), String::new()),
            ]),
            runtime: None,
            isolation: None,
            interactive: true,
            tty: true,
            auto_remove: true,
            restart: None,
            detach: false,
            held_secrets: Default::default(),
        }
    }

    fn body(spec: &ContainerSpec) -> serde_json::Value {
        let request = render_create(spec).expect("renders");
        serde_json::to_value(request.body).expect("serialises")
    }

    fn container(spec: ContainerSpec) -> LaunchSpec {
        LaunchSpec {
            kind: agentc_policy::LaunchKind::Run,
            profile: "demo".into(),
            action: Action::Container(Box::new(spec)),
            origins: BTreeMap::new(),
        }
    }

    /// Finds a zero value (`null`, `false`, `0`, `""`, `[]`, `{}`) in a struct field; map
    /// entries (lower-case or path keys) may hold anything.
    fn zero_field(value: &serde_json::Value, path: &str) -> Option<String> {
        use serde_json::Value;
        match value {
            Value::Object(map) => map.iter().find_map(|(key, item)| {
                let field = key.chars().next().is_some_and(|c| c.is_ascii_uppercase());
                let zero = match item {
                    Value::Null => true,
                    Value::Bool(b) => !b,
                    Value::Number(n) => n.as_f64() == Some(0.0),
                    Value::String(s) => s.is_empty(),
                    Value::Array(a) => a.is_empty(),
                    Value::Object(o) => o.is_empty(),
                };
                if field && zero {
                    Some(format!("{path}.{key}"))
                } else {
                    zero_field(item, &format!("{path}.{key}"))
                }
            }),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, item)| zero_field(item, &format!("{path}[{i}]"))),
            _ => None,
        }
    }

    /// Checked against `docker create` 28.2.2 with the argv on [`full`] (zero values and
    /// `ConsoleSize` stripped; `Env` in spec order, the CLI shuffles it).
    #[test]
    fn every_flag_family_matches_the_cli_body() {
        let expected = json!(
        {
            "AttachStderr": true,
            "AttachStdin": true,
            "AttachStdout": true,
            "Cmd": [
                "claude",
                "--yes"
            ],
            "Entrypoint": [
                "/bin/entry"
            ],
            "Env": [
                "A=1",
                "EMPTY=",
                "TOKEN"
            ],
            "ExposedPorts": {
                "7000/tcp": {},
                "8080/tcp": {},
                "9000/udp": {}
            },
            "HostConfig": {
                "AutoRemove": true,
                "Init": true,
                "CapAdd": [
                    "CAP_NET_ADMIN",
                    "CAP_SYSLOG",
                    "CAP_SYS_ADMIN"
                ],
                "CapDrop": [
                    "ALL"
                ],
                "Devices": [
                    {
                        "CgroupPermissions": "rwm",
                        "PathInContainer": "/dev/fuse",
                        "PathOnHost": "/dev/fuse"
                    }
                ],
                "ExtraHosts": [
                    "host.docker.internal:host-gateway",
                    "db:10.0.0.2",
                    "v6:::1"
                ],
                "LogConfig": {
                    "Config": {
                        "max-file": "3",
                        "max-size": "50m"
                    },
                    "Type": "json-file"
                },
                "Memory": 2147483648_i64,
                "MemorySwap": 2147483648_i64,
                "MemorySwappiness": -1,
                "Mounts": [
                    {
                        "Source": "/home/u/app",
                        "Target": "/workspace/app",
                        "Type": "bind"
                    },
                    {
                        "ReadOnly": true,
                        "Source": "/etc/gitconfig",
                        "Target": "/etc/gitconfig",
                        "Type": "bind"
                    },
                    {
                        "Source": "agentc-home",
                        "Target": "/home/agent",
                        "Type": "volume"
                    },
                    {
                        "ReadOnly": true,
                        "Source": "agentc-home",
                        "Target": "/cache",
                        "Type": "volume",
                        "VolumeOptions": {
                            "Subpath": "cache"
                        }
                    }
                ],
                "NanoCpus": 1500000000,
                "NetworkMode": "agentc-net",
                "PidsLimit": 512,
                "PortBindings": {
                    "7000/tcp": [
                        {
                            "HostIp": "::1",
                            "HostPort": "7000"
                        }
                    ],
                    "8080/tcp": [
                        {
                            "HostIp": "127.0.0.1"
                        },
                        {
                            "HostIp": "127.0.0.1",
                            "HostPort": "8081"
                        }
                    ],
                    "9000/udp": [
                        {
                            "HostIp": "127.0.0.1",
                            "HostPort": "9000"
                        }
                    ]
                },
                "ReadonlyRootfs": true,
                "RestartPolicy": {
                    "Name": "no"
                },
                "SecurityOpt": [
                    "no-new-privileges",
                    "apparmor=unconfined"
                ],
                "ShmSize": 268435456,
                "Tmpfs": {
                    "/run": "mode=1777",
                    "/tmp": "exec,mode=1777"
                }
            },
            "Image": "agentc/demo:1",
            "Labels": {
                "empty": "",
                "io.agentc.profile": "demo"
            },
            "OpenStdin": true,
            "StdinOnce": true,
            "Tty": true,
            "User": "1000:1000",
            "WorkingDir": "/workspace/app"
        }        );
        assert_eq!(body(&full()), expected);
        assert_eq!(
            render_create(&full()).unwrap().name.as_deref(),
            Some("agentc-demo")
        );
    }

    /// `docker create img`: the CLI's non-zero defaults and the `default` endpoint.
    #[test]
    fn bare_launch_carries_the_cli_defaults() {
        let expected = json!({
            "AttachStderr": true,
            "AttachStdout": true,
            "HostConfig": {
                "MemorySwappiness": -1,
                "NetworkMode": "default",
                "RestartPolicy": { "Name": "no" }
            },
            "Image": "img",
            "NetworkingConfig": { "EndpointsConfig": { "default": {} } }
        });
        assert_eq!(body(&bare("img")), expected);
        assert_eq!(render_create(&bare("img")).unwrap().name, None);
    }

    /// `--network=none` sends no endpoint (a single network without endpoint options).
    #[test]
    fn network_none_has_no_endpoint() {
        let spec = ContainerSpec {
            network: Network::None,
            ..bare("img")
        };
        let body = body(&spec);
        assert_eq!(body["HostConfig"]["NetworkMode"], "none");
        assert!(body.get("NetworkingConfig").is_none(), "{body}");
    }

    /// `-i` without `-t`: stdin attached, kept open, closed once (`StdinOnce`).
    #[test]
    fn interactive_attaches_stdin() {
        let spec = ContainerSpec {
            interactive: true,
            ..bare("img")
        };
        let body = body(&spec);
        for field in [
            "AttachStdin",
            "AttachStdout",
            "AttachStderr",
            "OpenStdin",
            "StdinOnce",
        ] {
            assert_eq!(body[field], true, "{field}");
        }
        assert!(body.get("Tty").is_none());
    }

    /// `docker run -d -i -t --rm`: run.go clears the Attach fields and `StdinOnce`, keeps
    /// `OpenStdin` and `Tty`.
    #[test]
    fn detach_clears_attach_fields() {
        let spec = ContainerSpec {
            interactive: true,
            tty: true,
            detach: true,
            auto_remove: true,
            ..bare("img")
        };
        let body = body(&spec);
        for field in ["AttachStdin", "AttachStdout", "AttachStderr", "StdinOnce"] {
            assert!(body.get(field).is_none(), "{field} in {body}");
        }
        assert_eq!(body["OpenStdin"], true);
        assert_eq!(body["Tty"], true);
        assert_eq!(body["HostConfig"]["AutoRemove"], true);
    }

    /// The CLI sorts `CAP_` names by bytes, so `SYSLOG` precedes `SYS_ADMIN` although the
    /// enum orders them the other way.
    #[test]
    fn capabilities_are_prefixed_and_byte_sorted() {
        let spec = ContainerSpec {
            cap_add: BTreeSet::from([
                Capability::SysAdmin,
                Capability::Syslog,
                Capability::AuditRead,
            ]),
            ..bare("img")
        };
        let body = body(&spec);
        assert_eq!(
            body["HostConfig"]["CapAdd"],
            json!(["CAP_AUDIT_READ", "CAP_SYSLOG", "CAP_SYS_ADMIN"])
        );
        assert!(body["HostConfig"].get("CapDrop").is_none());
    }

    #[test]
    fn secrets_render_as_the_bare_name() {
        let spec = ContainerSpec {
            env: vec![
                EnvVar {
                    name: "API_KEY".into(),
                    value: EnvValue::Secret { required: false },
                },
                literal("B", "x=y"),
            ],
            ..bare("img")
        };
        assert_eq!(body(&spec)["Env"], json!(["API_KEY", "B=x=y"]));
    }

    #[test]
    fn the_body_holds_no_zero_valued_field() {
        for spec in [full(), bare("img")] {
            let body = body(&spec);
            assert_eq!(zero_field(&body, "body"), None);
        }
    }

    /// The field an error names, or `-` when the spec renders.
    fn refused_field(spec: &ContainerSpec) -> String {
        match render_create(spec) {
            Ok(_) => "-".to_string(),
            Err(error) => error.field().to_string(),
        }
    }

    #[test]
    fn sizes_beyond_the_shared_limit_are_refused_with_the_field() {
        use agentc_policy::MAX_SIZE_BYTES;
        let with = |resources: Resources| ContainerSpec {
            resources,
            ..bare("img")
        };
        let at_limit = with(Resources {
            memory_bytes: Some(MAX_SIZE_BYTES),
            memory_swap_bytes: Some(MAX_SIZE_BYTES),
            shm_size_bytes: Some(MAX_SIZE_BYTES),
            nano_cpus: Some(i64::MAX as u64),
            pids_limit: Some(u32::MAX),
        });
        assert_eq!(refused_field(&at_limit), "-");
        for (resources, field) in [
            (
                Resources {
                    memory_bytes: Some(1 << 53),
                    ..Resources::default()
                },
                "resources.memory_bytes",
            ),
            (
                Resources {
                    memory_swap_bytes: Some(i64::MAX as u64),
                    ..Resources::default()
                },
                "resources.memory_swap_bytes",
            ),
            (
                Resources {
                    shm_size_bytes: Some(u64::MAX),
                    ..Resources::default()
                },
                "resources.shm_size_bytes",
            ),
            (
                Resources {
                    nano_cpus: Some(u64::MAX),
                    ..Resources::default()
                },
                "resources.nano_cpus",
            ),
        ] {
            let error = render_create(&with(resources)).unwrap_err();
            assert_eq!(error.field(), field);
            assert!(
                error
                    .with_hint()
                    .to_string()
                    .starts_with(&format!("{field} = \"")),
                "{}",
                error.with_hint()
            );
        }
        let error = render_create(&with(Resources {
            shm_size_bytes: Some(1 << 53),
            ..Resources::default()
        }))
        .unwrap_err();
        assert!(
            error.with_hint().to_string().contains("below 2^53 bytes"),
            "{}",
            error.with_hint()
        );
    }

    #[test]
    fn values_the_docker_cli_cannot_carry_are_refused_too() {
        let mut spec = bare("img");
        spec.env = vec![literal("A=B", "1")];
        assert_eq!(refused_field(&spec), "env[0].name");
        spec.env = vec![literal("", "1")];
        assert_eq!(refused_field(&spec), "env[0].name");
        spec.env = vec![literal("OK", "a=b\nc")];
        assert_eq!(refused_field(&spec), "-");

        let mut spec = bare("img");
        spec.tmpfs = vec![Tmpfs {
            target: "/run/a:b".into(),
            exec: false,
        }];
        assert_eq!(refused_field(&spec), "tmpfs[0].target");

        let mut spec = bare("img");
        spec.network = Network::Named {
            name: "net=x".into(),
        };
        assert_eq!(refused_field(&spec), "network.name");

        let mut spec = bare("img");
        spec.extra_hosts = vec![ExtraHost {
            host: "a:b".into(),
            target: HostTarget::HostGateway,
        }];
        assert_eq!(refused_field(&spec), "extra_hosts[0].host");

        let mut spec = bare("img");
        spec.mounts = vec![Mount {
            target: "/x\r\ny".into(),
            read_only: false,
            source: MountSource::Bind { path: "/a".into() },
        }];
        assert_eq!(refused_field(&spec), "mounts[0].target");
        spec.mounts[0].target = "/x,\"y=z:w\" ü".into();
        assert_eq!(refused_field(&spec), "-");
        spec.mounts[0].source = MountSource::Bind {
            path: "./rel".into(),
        };
        assert_eq!(refused_field(&spec), "mounts[0].source.path");

        let mut spec = bare("img");
        spec.devices = vec![Device {
            host_path: "/dev/a:b".into(),
            container_path: "/dev/a".into(),
            permissions: "rwm".into(),
        }];
        assert_eq!(refused_field(&spec), "devices[0].host_path");
        spec.devices[0].host_path = "/dev/a".into();
        spec.devices[0].permissions = "rwx".into();
        assert_eq!(refused_field(&spec), "devices[0].permissions");

        let mut spec = bare("img");
        spec.log = Some(LogConfig {
            driver: "json-file".into(),
            options: BTreeMap::from([("a=b".into(), "1".into())]),
        });
        assert_eq!(refused_field(&spec), "log.options");

        for key in ["a=b", " ", "a b"] {
            let mut spec = bare("img");
            spec.labels = BTreeMap::from([(key.to_string(), "v".to_string())]);
            assert_eq!(refused_field(&spec), "labels", "{key:?}");
        }
        assert_eq!(refused_field(&bare("-img")), "image");
        assert_eq!(refused_field(&bare("")), "image");
    }

    #[test]
    fn a_nul_byte_is_refused_without_echoing_the_value() {
        let mut spec = bare("img");
        spec.env = vec![literal("TOKEN", "sec\0ret")];
        let error = render_create(&spec).unwrap_err();
        assert_eq!(error.field(), "env.TOKEN");
        assert!(
            !error.with_hint().to_string().contains("sec"),
            "{}",
            error.with_hint()
        );
    }

    #[test]
    fn render_json_wraps_name_and_body() {
        let value = render_json(&container(full())).unwrap();
        assert_eq!(value["name"], "agentc-demo");
        assert_eq!(value["body"], body(&full()));
        let value = render_json(&container(bare("img"))).unwrap();
        assert_eq!(value["name"], serde_json::Value::Null);
    }

    fn build(named_contexts: BTreeMap<String, String>) -> LaunchSpec {
        LaunchSpec {
            kind: agentc_policy::LaunchKind::Build,
            profile: "demo".into(),
            action: Action::Build(BuildSpec {
                tag: "agentc/demo:1".into(),
                context: "/home/u/profiles/demo".into(),
                dockerfile: Some("images/Dockerfile".into()),
                named_contexts,
                build_args: BTreeMap::from([("BASE".into(), "debian".into())]),
                labels: BTreeMap::from([("io.agentc.profile".into(), "demo".into())]),
            }),
            origins: BTreeMap::new(),
        }
    }

    #[test]
    fn build_renders_the_classic_query() {
        assert_eq!(
            render_json(&build(BTreeMap::new())).unwrap(),
            json!({
                "query": {
                    "t": "agentc/demo:1",
                    "forcerm": true,
                    "dockerfile": "images/Dockerfile",
                    "buildargs": { "BASE": "debian" },
                    "labels": { "io.agentc.profile": "demo" }
                },
                "context": "/home/u/profiles/demo"
            })
        );
    }

    #[test]
    fn build_refuses_named_contexts() {
        let spec = build(BTreeMap::from([("tools".into(), "/opt/tools".into())]));
        let error = render_json(&spec).unwrap_err();
        assert_eq!(
            error,
            RenderError::NamedBuildContexts {
                names: vec!["tools".into()]
            }
        );
        assert!(
            error.with_hint().to_string().contains("no named contexts"),
            "{}",
            error.with_hint()
        );
    }

    #[test]
    fn build_values_the_docker_cli_cannot_carry_are_refused_too() {
        let mut spec = build(BTreeMap::new());
        let Action::Build(b) = &mut spec.action else {
            unreachable!()
        };
        b.build_args.insert("A=B".into(), "1".into());
        assert_eq!(render_json(&spec).unwrap_err().field(), "build_args");
        let mut spec = build(BTreeMap::new());
        let Action::Build(b) = &mut spec.action else {
            unreachable!()
        };
        b.tag = String::new();
        assert_eq!(render_json(&spec).unwrap_err().field(), "tag");
    }
}
