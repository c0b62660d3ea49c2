//! LaunchSpec -> `docker run` / `docker build` argv, shaped like docker/cli's
//! `cli/command/container/opts.go`: one helper per flag family, each naming the docker flag
//! and the Engine API field it writes.
//!
//! Every flag is one argv element in the attached form `--flag=value`, so a value starting
//! with `-` is never read as a flag. What docker's syntax cannot carry is refused before
//! anything is formatted, by the checks both backends share
//! ([`agentc_engine::check_container`], [`agentc_engine::check_build`]); the
//! helpers below then only format. The order is fixed:
//!
//! ```text
//! docker run  [--detach] [--interactive] [--tty] [--rm] [--init] [--name=] [--entrypoint=]
//!             [--user=] [--workdir=]                                         (process)
//!             [--env=]...                                                    (env)
//!             [--mount=]... [--tmpfs=]...                                    (mounts)
//!             [--read-only] [--security-opt=]... [--cap-drop=ALL] [--cap-add=]... (security)
//!             [--runtime=]                                                   (runtime)
//!             [--network=] [--network-alias=]... [--add-host=]... [--publish=]...
//!             [--expose=]...                                                 (network)
//!             [--dns=]... [--sysctl=]...                                     (egress)
//!             [--memory=] [--memory-swap=] [--shm-size=] [--cpus=] [--pids-limit=] (resources)
//!             [--log-driver=] [--log-opt=]...                                (logging)
//!             [--device=]...                                                 (devices)
//!             [--label=]...                                                  (labels, sorted)
//!             IMAGE [COMMAND]...
//! docker build --tag= --force-rm [--file=] [--build-context=]... [--build-arg=]... [--label=]... CONTEXT
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::Path;

use agentc_engine::{check_build, check_container, ArgvError};
use agentc_policy::{
    Action, AppArmor, BuildSpec, Capability, ContainerSpec, Device, EnvValue, EnvVar, ExposedPort,
    ExtraHost, HostTarget, LaunchSpec, LogConfig, Mount, MountSource, Network, PublishedPort,
    Resources, Tmpfs,
};

use crate::mount_csv;

/// Renders a spec to the argv of one `docker` invocation: `docker run ...` for a container,
/// `docker build ...` for an image build; a value docker's syntax cannot carry is refused
/// with an [`ArgvError`] naming the spec field.
///
/// The spec's `kind`, `profile` and `origins` do not reach docker (agentc's own labels are
/// already in the spec's `labels`). Secrets are rendered by name only (`--env=NAME`): the docker
/// CLI reads their values from its own environment, so the caller must launch docker with them
/// set (as the command line's port does: [`crate::exec::port::CliPort`]).
pub fn render_argv(spec: &LaunchSpec) -> Result<Vec<String>, ArgvError> {
    let LaunchSpec {
        kind: _,
        profile: _,
        action,
        origins: _,
    } = spec;
    match action {
        Action::Container(container) => container_argv(container),
        Action::Build(build) => {
            check_build(build)?;
            Ok(render_build(build))
        }
    }
}

/// The `docker run` argv of a container launch; see [`render_argv`].
pub(crate) fn container_argv(spec: &ContainerSpec) -> Result<Vec<String>, ArgvError> {
    check_container(spec)?;
    Ok(render_container(spec))
}

fn render_container(spec: &ContainerSpec) -> Vec<String> {
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
        // Rendered as the commands before this one: [`crate::egress::setup_argvs`].
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
        // Never in the argv: their variables render by name (`--env=NAME`) and the launch
        // hands docker their values in its environment.
        held_secrets: _,
    } = spec;
    let mut argv = vec!["docker".to_owned(), "run".to_owned()];
    render_process(
        &mut argv,
        &Process {
            detach: *detach,
            interactive: *interactive,
            tty: *tty,
            auto_remove: *auto_remove,
            init: *init,
            name: name.as_deref(),
            entrypoint: entrypoint.as_deref(),
            user: user.as_deref(),
            working_dir: working_dir.as_deref(),
        },
    );
    render_env(&mut argv, env);
    render_mounts(&mut argv, mounts, tmpfs);
    render_security(
        &mut argv,
        *read_only_root,
        *no_new_privileges,
        *apparmor,
        *cap_drop_all,
        cap_add,
    );
    // `--runtime=NAME`: `HostConfig.Runtime`.
    if let Some(runtime) = runtime {
        argv.push(format!("--runtime={runtime}"));
    }
    // `--restart=on-failure:N`: `HostConfig.RestartPolicy`.
    if let Some(agentc_policy::Restart::OnFailure { max_retries }) = restart {
        argv.push(format!("--restart=on-failure:{max_retries}"));
    }
    render_network(
        &mut argv,
        &Networking {
            network,
            aliases: network_aliases,
            ipv4_address: *ipv4_address,
            extra_hosts,
            ports,
            exposed: exposed_ports,
        },
    );
    render_dns_sysctls(&mut argv, dns, sysctls);
    render_resources(&mut argv, resources);
    render_logging(&mut argv, log.as_ref());
    render_devices(&mut argv, devices);
    render_labels(&mut argv, labels);
    argv.push(image.clone());
    argv.extend(command.iter().cloned());
    argv
}

/// `--dns=ADDRESS` (`HostConfig.Dns`) in spec order, then `--sysctl=NAME=VALUE`
/// (`HostConfig.Sysctls`) sorted by name.
fn render_dns_sysctls(argv: &mut Vec<String>, dns: &[IpAddr], sysctls: &BTreeMap<String, String>) {
    for address in dns {
        argv.push(format!("--dns={address}"));
    }
    for (key, value) in sysctls {
        argv.push(format!("--sysctl={key}={value}"));
    }
}

/// The process-level flags of a container, borrowed from the [`ContainerSpec`].
struct Process<'a> {
    detach: bool,
    interactive: bool,
    tty: bool,
    auto_remove: bool,
    init: bool,
    name: Option<&'a str>,
    entrypoint: Option<&'a str>,
    user: Option<&'a str>,
    working_dir: Option<&'a str>,
}

/// `--detach` (`Config.AttachStdout`/`AttachStderr` false), `--interactive`
/// (`Config.OpenStdin`, `AttachStdin`, `StdinOnce`), `--tty` (`Config.Tty`), `--rm`
/// (`HostConfig.AutoRemove`), `--init` (`HostConfig.Init`), `--name=` (the create query's
/// `name`), `--entrypoint=` (`Config.Entrypoint`, one element; an empty value clears the
/// image's), `--user=` (`Config.User`) and `--workdir=` (`Config.WorkingDir`). Values are
/// passed verbatim.
fn render_process(argv: &mut Vec<String>, process: &Process<'_>) {
    let Process {
        detach,
        interactive,
        tty,
        auto_remove,
        init,
        name,
        entrypoint,
        user,
        working_dir,
    } = *process;
    for (on, flag) in [
        (detach, "--detach"),
        (interactive, "--interactive"),
        (tty, "--tty"),
        (auto_remove, "--rm"),
        (init, "--init"),
    ] {
        if on {
            argv.push(flag.to_owned());
        }
    }
    for (value, flag) in [
        (name, "--name"),
        (entrypoint, "--entrypoint"),
        (user, "--user"),
        (working_dir, "--workdir"),
    ] {
        if let Some(value) = value {
            argv.push(format!("{flag}={value}"));
        }
    }
}

/// `--env=NAME=value` for a literal and `--env=NAME` for a secret (`Config.Env`), in spec
/// order. For a bare name the docker CLI copies `NAME=value` from its own environment, so a
/// secret's value never appears in argv; when the variable is unset docker sends the bare
/// name. A placeholder is made at launch (before rendering); a rendering alone shows its
/// stand-in, never the caller's value of the variable.
fn render_env(argv: &mut Vec<String>, env: &[EnvVar]) {
    for EnvVar { name, value } in env {
        match value {
            EnvValue::Literal { value } => argv.push(format!("--env={name}={value}")),
            EnvValue::Secret { required: _ } => argv.push(format!("--env={name}")),
            EnvValue::Placeholder { variable, prefix } => argv.push(format!(
                "--env={name}={}",
                agentc_policy::placeholder_template(prefix, variable)
            )),
        }
    }
}

/// `--mount=` per bind or volume mount (`HostConfig.Mounts`), in docker's CSV syntax with the
/// fields `type=bind|volume`, `source=`, `target=`, `readonly` and `volume-subpath=`
/// (`Mount.VolumeOptions.Subpath`); then `--tmpfs=TARGET` or `--tmpfs=TARGET:exec` per tmpfs
/// mount (`HostConfig.Tmpfs`).
fn render_mounts(argv: &mut Vec<String>, mounts: &[Mount], tmpfs: &[Tmpfs]) {
    for Mount {
        target,
        read_only,
        source,
    } in mounts
    {
        let mut fields = Vec::with_capacity(5);
        match source {
            MountSource::Bind { path } => {
                fields.push(mount_csv::field("type", "bind"));
                fields.push(mount_csv::field("source", path));
            }
            MountSource::Volume { name, subpath: _ } => {
                fields.push(mount_csv::field("type", "volume"));
                fields.push(mount_csv::field("source", name));
            }
        }
        fields.push(mount_csv::field("target", target));
        if *read_only {
            fields.push("readonly".to_owned());
        }
        if let MountSource::Volume {
            name: _,
            subpath: Some(subpath),
        } = source
        {
            fields.push(mount_csv::field("volume-subpath", subpath));
        }
        argv.push(format!("--mount={}", fields.join(",")));
    }
    argv.extend(tmpfs.iter().map(tmpfs_flag));
}

/// `--tmpfs=PATH:[exec,]mode=1777` ([`agentc_policy::presets::TMPFS_MODE`]).
pub fn tmpfs_flag(tmpfs: &Tmpfs) -> String {
    let mode = agentc_policy::presets::TMPFS_MODE;
    let Tmpfs { target, exec } = tmpfs;
    if *exec {
        format!("--tmpfs={target}:exec,mode={mode}")
    } else {
        format!("--tmpfs={target}:mode={mode}")
    }
}

/// `--read-only` (`HostConfig.ReadonlyRootfs`), `--security-opt=no-new-privileges` and
/// `--security-opt=apparmor=unconfined` (`HostConfig.SecurityOpt`), `--cap-drop=ALL`
/// (`HostConfig.CapDrop`) and `--cap-add=NAME` per capability in sorted order
/// (`HostConfig.CapAdd`; docker adds the `CAP_` prefix itself).
fn render_security(
    argv: &mut Vec<String>,
    read_only_root: bool,
    no_new_privileges: bool,
    apparmor: Option<AppArmor>,
    cap_drop_all: bool,
    cap_add: &BTreeSet<Capability>,
) {
    if read_only_root {
        argv.push("--read-only".to_owned());
    }
    if no_new_privileges {
        argv.push("--security-opt=no-new-privileges".to_owned());
    }
    match apparmor {
        Some(AppArmor::Unconfined) => argv.push("--security-opt=apparmor=unconfined".to_owned()),
        None => {}
    }
    if cap_drop_all {
        argv.push("--cap-drop=ALL".to_owned());
    }
    for capability in cap_add {
        argv.push(format!("--cap-add={}", capability.as_str()));
    }
}

/// `--network=none|NAME` (`HostConfig.NetworkMode`; omitted for the default bridge),
/// `--add-host=HOST:ADDRESS` (`HostConfig.ExtraHosts`) and `--publish=` (`HostConfig.PortBindings`
/// and `Config.ExposedPorts`).
///
/// `--add-host` is always `HOST:ADDRESS`, IPv6 addresses unbracketed (`h:::1`): docker 25 and
/// later split at the first `=` if there is one, else at the first `:`, and older CLIs always
/// at the first `:`; a host holds neither, so every version reads the same pair.
/// `--publish` is `IP:HOSTPORT:PORT/PROTO`, or `IP::PORT/PROTO` to let the daemon pick the host
/// port, with an IPv6 address in brackets.
/// `--expose=PORT/PROTO` (`Config.ExposedPorts`) and `--network-alias=NAME`
/// (`NetworkingConfig.EndpointsConfig.NETWORK.Aliases`) follow, and `--ip=ADDRESS`
/// (`NetworkingConfig.EndpointsConfig.NETWORK.IPAMConfig.IPv4Address`) after the aliases.
fn render_network(argv: &mut Vec<String>, networking: &Networking<'_>) {
    let Networking {
        network,
        aliases,
        ipv4_address,
        extra_hosts,
        ports,
        exposed,
    } = networking;
    match network {
        Network::Default => {}
        Network::None => argv.push("--network=none".to_owned()),
        Network::Named { name } => argv.push(format!("--network={name}")),
    }
    for alias in *aliases {
        argv.push(format!("--network-alias={alias}"));
    }
    if let Some(address) = ipv4_address {
        argv.push(format!("--ip={address}"));
    }
    for ExtraHost { host, target } in *extra_hosts {
        let address = match target {
            HostTarget::HostGateway => "host-gateway".to_owned(),
            HostTarget::Ip { address } => address.to_string(),
        };
        argv.push(format!("--add-host={host}:{address}"));
    }
    for PublishedPort {
        container_port,
        protocol,
        host_ip,
        host_port,
    } in *ports
    {
        let ip = match host_ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        };
        let host_port = host_port.map(|port| port.to_string()).unwrap_or_default();
        argv.push(format!(
            "--publish={ip}:{host_port}:{container_port}/{}",
            protocol.as_str()
        ));
    }
    for ExposedPort {
        container_port,
        protocol,
    } in *exposed
    {
        argv.push(format!("--expose={container_port}/{}", protocol.as_str()));
    }
}

/// The network family of a container launch.
struct Networking<'a> {
    network: &'a Network,
    aliases: &'a [String],
    ipv4_address: Option<std::net::Ipv4Addr>,
    extra_hosts: &'a [ExtraHost],
    ports: &'a [PublishedPort],
    exposed: &'a [ExposedPort],
}

/// `--memory=BYTES` (`HostConfig.Memory`), `--memory-swap=BYTES` (`HostConfig.MemorySwap`),
/// `--shm-size=BYTES` (`HostConfig.ShmSize`), `--cpus=DECIMAL` (`HostConfig.NanoCpus`) and
/// `--pids-limit=N` (`HostConfig.PidsLimit`), in plain numbers so docker's unit parsing
/// cannot round them (sizes docker would round were refused by the shared checks).
fn render_resources(argv: &mut Vec<String>, resources: &Resources) {
    let Resources {
        memory_bytes,
        memory_swap_bytes,
        shm_size_bytes,
        nano_cpus,
        pids_limit,
    } = resources;
    for (value, flag) in [
        (memory_bytes, "--memory"),
        (memory_swap_bytes, "--memory-swap"),
        (shm_size_bytes, "--shm-size"),
    ] {
        if let Some(bytes) = value {
            argv.push(format!("{flag}={bytes}"));
        }
    }
    if let Some(nano) = nano_cpus {
        // The shortest exact decimal, which docker parses exactly (a `big.Rat`).
        argv.push(format!("--cpus={}", agentc_policy::format_cpus(*nano)));
    }
    if let Some(pids) = pids_limit {
        argv.push(format!("--pids-limit={pids}"));
    }
}

/// `--log-driver=` and `--log-opt=KEY=VALUE` per option in key order (`HostConfig.LogConfig`).
fn render_logging(argv: &mut Vec<String>, log: Option<&LogConfig>) {
    let Some(LogConfig { driver, options }) = log else {
        return;
    };
    argv.push(format!("--log-driver={driver}"));
    for (key, value) in options {
        argv.push(format!("--log-opt={key}={value}"));
    }
}

/// `--device=HOST:CONTAINER:PERMISSIONS` (`HostConfig.Devices`).
fn render_devices(argv: &mut Vec<String>, devices: &[Device]) {
    for Device {
        host_path,
        container_path,
        permissions,
    } in devices
    {
        argv.push(format!(
            "--device={host_path}:{container_path}:{permissions}"
        ));
    }
}

/// `--label=KEY=VALUE` per label in key order (`Config.Labels` for a container, the `labels`
/// query for a build).
fn render_labels(argv: &mut Vec<String>, labels: &BTreeMap<String, String>) {
    for (key, value) in labels {
        argv.push(format!("--label={key}={value}"));
    }
}

/// `docker build --tag=T --force-rm [--file=F] [--build-context=NAME=DIR]... [--build-arg=K=V]...
/// [--label=K=V]... CONTEXT`.
///
/// The docker CLI resolves a relative `--file` against its own working directory, not the
/// context, so the Dockerfile (relative to the context in the spec) is joined to the context.
fn render_build(spec: &BuildSpec) -> Vec<String> {
    let BuildSpec {
        tag,
        context,
        dockerfile,
        named_contexts,
        build_args,
        labels,
    } = spec;
    let mut argv = vec![
        "docker".to_owned(),
        "build".to_owned(),
        format!("--tag={tag}"),
        // The legacy builder keeps a failed step's container without it: nothing is left.
        "--force-rm".to_owned(),
    ];
    if let Some(dockerfile) = dockerfile {
        // Both are UTF-8, so the joined path is too.
        let joined = Path::new(context).join(dockerfile);
        argv.push(format!("--file={}", joined.to_string_lossy()));
    }
    for (flag, map) in [
        ("--build-context", named_contexts),
        ("--build-arg", build_args),
    ] {
        for (key, value) in map {
            argv.push(format!("{flag}={key}={value}"));
        }
    }
    render_labels(&mut argv, labels);
    argv.push(context.clone());
    argv
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use agentc_policy::MAX_SIZE_BYTES;
    use agentc_policy::{LaunchKind, Protocol};
    use proptest::prelude::*;

    use super::*;
    use crate::mount_csv::go_csv;
    use agentc_policy::Hinted;

    fn container() -> ContainerSpec {
        ContainerSpec::empty("agentc/claude:1")
    }

    fn launch(container: ContainerSpec) -> LaunchSpec {
        LaunchSpec {
            kind: LaunchKind::Run,
            profile: "demo".into(),
            action: Action::Container(Box::new(container)),
            origins: BTreeMap::new(),
        }
    }

    fn render(container: ContainerSpec) -> Result<Vec<String>, ArgvError> {
        render_argv(&launch(container))
    }

    /// The flags between `docker run` and the image.
    fn flags(container: ContainerSpec) -> Vec<String> {
        let argv = render(container).expect("renders");
        let image = argv.iter().rposition(|a| !a.starts_with("--")).unwrap();
        argv[2..image].to_vec()
    }

    fn build() -> BuildSpec {
        BuildSpec {
            tag: "agentc/demo:1".into(),
            context: "/ctx".into(),
            dockerfile: None,
            named_contexts: BTreeMap::new(),
            build_args: BTreeMap::new(),
            labels: BTreeMap::new(),
        }
    }

    fn render_build_spec(build: BuildSpec) -> Result<Vec<String>, ArgvError> {
        render_argv(&LaunchSpec {
            kind: LaunchKind::Build,
            profile: "demo".into(),
            action: Action::Build(build),
            origins: BTreeMap::new(),
        })
    }

    fn field_of(result: Result<Vec<String>, ArgvError>) -> String {
        result.expect_err("must be refused").field().to_owned()
    }

    #[test]
    fn minimal_container_is_docker_run_image() {
        assert_eq!(
            render(container()).unwrap(),
            ["docker", "run", "agentc/claude:1"]
        );
    }

    #[test]
    fn process_flags_are_attached_and_ordered() {
        let mut spec = container();
        spec.detach = true;
        spec.interactive = true;
        spec.tty = true;
        spec.auto_remove = true;
        spec.name = Some("-n".into());
        spec.entrypoint = Some("--help".into());
        spec.user = Some("1000:1000".into());
        spec.working_dir = Some("/work space".into());
        assert_eq!(
            flags(spec),
            [
                "--detach",
                "--interactive",
                "--tty",
                "--rm",
                "--name=-n",
                "--entrypoint=--help",
                "--user=1000:1000",
                "--workdir=/work space",
            ]
        );
    }

    #[test]
    fn empty_entrypoint_is_kept_to_clear_the_image_one() {
        let mut spec = container();
        spec.entrypoint = Some(String::new());
        assert_eq!(flags(spec), ["--entrypoint="]);
    }

    #[test]
    fn env_literals_carry_values_and_secrets_only_names() {
        let mut spec = container();
        spec.env = vec![
            EnvVar {
                name: "PROXY".into(),
                value: EnvValue::Literal {
                    value: "-a=b,c\nd".into(),
                },
            },
            EnvVar {
                name: "TOKEN".into(),
                value: EnvValue::Secret { required: true },
            },
        ];
        assert_eq!(flags(spec), ["--env=PROXY=-a=b,c\nd", "--env=TOKEN"]);
    }

    #[test]
    fn env_names_docker_cannot_split_are_refused() {
        for (name, _why) in [("", "empty"), ("A=B", "equals")] {
            let mut spec = container();
            spec.env = vec![EnvVar {
                name: name.into(),
                value: EnvValue::Literal { value: "v".into() },
            }];
            assert_eq!(field_of(render(spec)), "env[0].name");
        }
    }

    #[test]
    fn env_value_with_nul_is_refused_without_echoing_it() {
        let mut spec = container();
        spec.env = vec![EnvVar {
            name: "KEY".into(),
            value: EnvValue::Literal {
                value: "sec\0ret".into(),
            },
        }];
        let error = render(spec).unwrap_err();
        assert_eq!(
            error,
            ArgvError::Nul {
                field: "env.KEY".into()
            }
        );
        assert!(!error.with_hint().to_string().contains("sec"));
    }

    #[test]
    fn mounts_use_csv_fields_in_order() {
        let mut spec = container();
        spec.mounts = vec![
            Mount {
                target: "/workspace/app".into(),
                read_only: false,
                source: MountSource::Bind {
                    path: "/home/me/app".into(),
                },
            },
            Mount {
                target: "/sources/claude".into(),
                read_only: true,
                source: MountSource::Volume {
                    name: "claude-home".into(),
                    subpath: Some(".claude".into()),
                },
            },
        ];
        assert_eq!(
            flags(spec),
            [
                "--mount=type=bind,source=/home/me/app,target=/workspace/app",
                "--mount=type=volume,source=claude-home,target=/sources/claude,readonly,volume-subpath=.claude",
            ]
        );
    }

    #[test]
    fn mount_fields_with_commas_and_quotes_are_csv_quoted() {
        let mut spec = container();
        spec.mounts = vec![Mount {
            target: "/w/a\"b".into(),
            read_only: true,
            source: MountSource::Bind {
                path: "/h/x,readonly=false".into(),
            },
        }];
        assert_eq!(
            flags(spec),
            ["--mount=type=bind,\"source=/h/x,readonly=false\",\"target=/w/a\"\"b\",readonly"]
        );
    }

    #[test]
    fn mount_values_docker_would_change_are_refused() {
        let bind = |path: &str, target: &str| {
            let mut spec = container();
            spec.mounts = vec![Mount {
                target: target.into(),
                read_only: false,
                source: MountSource::Bind { path: path.into() },
            }];
            render(spec)
        };
        assert_eq!(field_of(bind("./rel", "/t")), "mounts[0].source.path");
        assert_eq!(field_of(bind("/a\r\nb", "/t")), "mounts[0].source.path");
        assert_eq!(field_of(bind("/a", "")), "mounts[0].target");
        assert_eq!(field_of(bind("/a", "/t\0")), "mounts[0].target");
        let mut spec = container();
        spec.mounts = vec![Mount {
            target: "/t".into(),
            read_only: false,
            source: MountSource::Volume {
                name: ".hidden".into(),
                subpath: None,
            },
        }];
        assert_eq!(field_of(render(spec)), "mounts[0].source.name");
    }

    #[test]
    fn tmpfs_renders_exec_and_refuses_colons() {
        let mut spec = container();
        spec.tmpfs = vec![
            Tmpfs {
                target: "/tmp".into(),
                exec: false,
            },
            Tmpfs {
                target: "/run,x".into(),
                exec: true,
            },
        ];
        assert_eq!(
            flags(spec.clone()),
            ["--tmpfs=/tmp:mode=1777", "--tmpfs=/run,x:exec,mode=1777"]
        );
        spec.tmpfs[1].target = "/a:b".into();
        assert_eq!(field_of(render(spec)), "tmpfs[1].target");
    }

    #[test]
    fn security_flags_in_order_with_sorted_capabilities() {
        let mut spec = container();
        spec.read_only_root = true;
        spec.no_new_privileges = true;
        spec.apparmor = Some(AppArmor::Unconfined);
        spec.cap_drop_all = true;
        spec.cap_add = [Capability::Setuid, Capability::NetAdmin, Capability::Chown]
            .into_iter()
            .collect();
        assert_eq!(
            flags(spec),
            [
                "--read-only",
                "--security-opt=no-new-privileges",
                "--security-opt=apparmor=unconfined",
                "--cap-drop=ALL",
                "--cap-add=CHOWN",
                "--cap-add=NET_ADMIN",
                "--cap-add=SETUID",
            ]
        );
    }

    #[test]
    fn network_modes() {
        assert!(flags(container()).is_empty());
        let mut spec = container();
        spec.network = Network::None;
        assert_eq!(flags(spec.clone()), ["--network=none"]);
        spec.network = Network::Named {
            name: "agentc-egress".into(),
        };
        assert_eq!(flags(spec.clone()), ["--network=agentc-egress"]);
        spec.network = Network::Named {
            name: "name=x".into(),
        };
        assert_eq!(field_of(render(spec.clone())), "network.name");
        spec.network = Network::Named {
            name: String::new(),
        };
        assert_eq!(field_of(render(spec)), "network.name");
    }

    #[test]
    fn extra_hosts_split_at_the_first_colon() {
        let mut spec = container();
        spec.extra_hosts = vec![
            ExtraHost {
                host: "host.docker.internal".into(),
                target: HostTarget::HostGateway,
            },
            ExtraHost {
                host: "proxy".into(),
                target: HostTarget::Ip {
                    address: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
                },
            },
            ExtraHost {
                host: "proxy6".into(),
                target: HostTarget::Ip {
                    address: IpAddr::V6(Ipv6Addr::LOCALHOST),
                },
            },
        ];
        assert_eq!(
            flags(spec.clone()),
            [
                "--add-host=host.docker.internal:host-gateway",
                "--add-host=proxy:10.0.0.1",
                "--add-host=proxy6:::1",
            ]
        );
        for bad in ["", "a:b", "a=b"] {
            spec.extra_hosts[2].host = bad.into();
            assert_eq!(field_of(render(spec.clone())), "extra_hosts[2].host");
        }
    }

    #[test]
    fn published_ports_bracket_ipv6() {
        let mut spec = container();
        spec.ports = vec![
            PublishedPort {
                container_port: 3000,
                protocol: Protocol::Tcp,
                host_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                host_port: Some(8080),
            },
            PublishedPort {
                container_port: 53,
                protocol: Protocol::Udp,
                host_ip: IpAddr::V6(Ipv6Addr::LOCALHOST),
                host_port: None,
            },
        ];
        assert_eq!(
            flags(spec),
            [
                "--publish=127.0.0.1:8080:3000/tcp",
                "--publish=[::1]::53/udp"
            ]
        );
    }

    #[test]
    fn resources_are_plain_exact_numbers() {
        let mut spec = container();
        spec.resources = Resources {
            memory_bytes: Some(4 << 30),
            memory_swap_bytes: Some(4 << 30),
            shm_size_bytes: Some((1 << 53) - 1),
            nano_cpus: Some(1_500_000_000),
            pids_limit: Some(512),
        };
        assert_eq!(
            flags(spec.clone()),
            [
                "--memory=4294967296",
                "--memory-swap=4294967296",
                "--shm-size=9007199254740991",
                "--cpus=1.5",
                "--pids-limit=512",
            ]
        );
        spec.resources.nano_cpus = Some(1);
        assert!(flags(spec.clone()).contains(&"--cpus=0.000000001".to_owned()));
        spec.resources.nano_cpus = Some(2_000_000_000);
        assert!(flags(spec).contains(&"--cpus=2".to_owned()));
    }

    #[test]
    fn resources_docker_would_round_are_refused() {
        let mut spec = container();
        spec.resources.memory_bytes = Some((1 << 53) + 1);
        assert_eq!(field_of(render(spec.clone())), "resources.memory_bytes");
        // 2^53 is exact in a float64, but beyond the limit both backends share.
        spec.resources.memory_bytes = Some(1 << 53);
        assert_eq!(field_of(render(spec.clone())), "resources.memory_bytes");
        spec.resources.memory_bytes = Some(MAX_SIZE_BYTES);
        assert!(render(spec.clone()).is_ok());
        spec.resources.shm_size_bytes = Some(1 << 60);
        assert_eq!(field_of(render(spec.clone())), "resources.shm_size_bytes");
        spec.resources.shm_size_bytes = None;
        spec.resources.memory_bytes = Some(u64::MAX);
        assert_eq!(field_of(render(spec.clone())), "resources.memory_bytes");
        spec.resources.memory_bytes = None;
        spec.resources.nano_cpus = Some(u64::MAX);
        assert_eq!(field_of(render(spec)), "resources.nano_cpus");
    }

    #[test]
    fn logging_renders_driver_then_sorted_options() {
        let mut spec = container();
        spec.log = Some(LogConfig {
            driver: "json-file".into(),
            options: [("max-size", "50m"), ("max-file", "3")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        });
        assert_eq!(
            flags(spec.clone()),
            [
                "--log-driver=json-file",
                "--log-opt=max-file=3",
                "--log-opt=max-size=50m"
            ]
        );
        spec.log
            .as_mut()
            .unwrap()
            .options
            .insert("a=b".into(), "c".into());
        assert_eq!(field_of(render(spec)), "log.options");
    }

    #[test]
    fn devices_render_and_refuse_colons_and_bad_modes() {
        let mut spec = container();
        spec.devices = vec![Device {
            host_path: "/dev/fuse".into(),
            container_path: "/dev/fuse".into(),
            permissions: "rwm".into(),
        }];
        assert_eq!(flags(spec.clone()), ["--device=/dev/fuse:/dev/fuse:rwm"]);
        spec.devices[0].host_path = "/dev/a:b".into();
        assert_eq!(field_of(render(spec.clone())), "devices[0].host_path");
        spec.devices[0].host_path = "/dev/fuse".into();
        for mode in ["", "rr", "x", "rwmr"] {
            spec.devices[0].permissions = mode.into();
            assert_eq!(field_of(render(spec.clone())), "devices[0].permissions");
        }
    }

    #[test]
    fn labels_are_sorted_and_checked_like_docker() {
        let mut spec = container();
        spec.labels = [
            ("io.agentc.profile", "demo"),
            ("a", "x=y, z"),
            (" lead", "v"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(
            flags(spec.clone()),
            [
                "--label= lead=v",
                "--label=a=x=y, z",
                "--label=io.agentc.profile=demo"
            ]
        );
        for bad in ["", " ", "a=b", "a b", "a\tb", "ab "] {
            let mut spec = container();
            spec.labels.insert(bad.into(), "v".into());
            assert_eq!(field_of(render(spec)), "labels", "label key {bad:?}");
        }
    }

    #[test]
    fn image_and_command_come_last_command_verbatim() {
        let mut spec = container();
        spec.tty = true;
        spec.command = vec!["--dangerously".into(), "-c".into(), "a b\n".into()];
        assert_eq!(
            render(spec).unwrap(),
            [
                "docker",
                "run",
                "--tty",
                "agentc/claude:1",
                "--dangerously",
                "-c",
                "a b\n"
            ]
        );
    }

    #[test]
    fn images_docker_would_read_as_flags_are_refused() {
        for bad in ["", "-x", "--rm"] {
            let mut spec = container();
            spec.image = bad.into();
            assert_eq!(field_of(render(spec)), "image");
        }
    }

    #[test]
    fn nul_anywhere_is_refused_naming_the_field() {
        let mut spec = container();
        spec.command = vec!["ok".into(), "a\0b".into()];
        assert_eq!(field_of(render(spec)), "command[1]");
        let mut spec = container();
        spec.user = Some("\0".into());
        assert_eq!(field_of(render(spec)), "user");
        let mut spec = container();
        spec.labels.insert("k".into(), "\0".into());
        assert_eq!(field_of(render(spec)), "labels.k");
    }

    #[test]
    fn full_container_keeps_the_documented_family_order() {
        let mut spec = container();
        spec.interactive = true;
        spec.name = Some("n".into());
        spec.env = vec![EnvVar {
            name: "A".into(),
            value: EnvValue::Secret { required: false },
        }];
        spec.mounts = vec![Mount {
            target: "/t".into(),
            read_only: false,
            source: MountSource::Volume {
                name: "v".into(),
                subpath: None,
            },
        }];
        spec.tmpfs = vec![Tmpfs {
            target: "/tmp".into(),
            exec: false,
        }];
        spec.read_only_root = true;
        spec.network = Network::None;
        spec.resources.pids_limit = Some(1);
        spec.log = Some(LogConfig {
            driver: "none".into(),
            options: BTreeMap::new(),
        });
        spec.devices = vec![Device {
            host_path: "/dev/a".into(),
            container_path: "/dev/a".into(),
            permissions: "r".into(),
        }];
        spec.labels.insert("k".into(), "v".into());
        spec.command = vec!["sh".into()];
        assert_eq!(
            render(spec).unwrap(),
            [
                "docker",
                "run",
                "--interactive",
                "--name=n",
                "--env=A",
                "--mount=type=volume,source=v,target=/t",
                "--tmpfs=/tmp:mode=1777",
                "--read-only",
                "--network=none",
                "--pids-limit=1",
                "--log-driver=none",
                "--device=/dev/a:/dev/a:r",
                "--label=k=v",
                "agentc/claude:1",
                "sh",
            ]
        );
    }

    #[test]
    fn build_minimal_and_full() {
        assert_eq!(
            render_build_spec(build()).unwrap(),
            [
                "docker",
                "build",
                "--tag=agentc/demo:1",
                "--force-rm",
                "/ctx"
            ]
        );
        let mut spec = build();
        spec.dockerfile = Some("images/Dockerfile.claude".into());
        spec.named_contexts
            .insert("shared".into(), "/ctx shared".into());
        spec.build_args.insert("UID".into(), "1000".into());
        spec.build_args.insert("GID".into(), "-1=x".into());
        spec.labels
            .insert("io.agentc.profile".into(), "demo".into());
        assert_eq!(
            render_build_spec(spec).unwrap(),
            [
                "docker",
                "build",
                "--tag=agentc/demo:1",
                "--force-rm",
                "--file=/ctx/images/Dockerfile.claude",
                "--build-context=shared=/ctx shared",
                "--build-arg=GID=-1=x",
                "--build-arg=UID=1000",
                "--label=io.agentc.profile=demo",
                "/ctx",
            ]
        );
    }

    #[test]
    fn build_values_docker_cannot_carry_are_refused() {
        let mut spec = build();
        spec.context = "-ctx".into();
        assert_eq!(field_of(render_build_spec(spec)), "context");
        let mut spec = build();
        spec.tag = String::new();
        assert_eq!(field_of(render_build_spec(spec)), "tag");
        let mut spec = build();
        spec.build_args.insert("A=B".into(), "v".into());
        assert_eq!(field_of(render_build_spec(spec)), "build_args");
        let mut spec = build();
        spec.named_contexts.insert(String::new(), "/d".into());
        assert_eq!(field_of(render_build_spec(spec)), "named_contexts");
        let mut spec = build();
        spec.dockerfile = Some("D\0".into());
        assert_eq!(field_of(render_build_spec(spec)), "dockerfile");
    }

    /// docker's reading of a `--mount` value: the first CSV record, each field cut at its
    /// first `=`, `readonly` bare.
    fn docker_mount_fields(argument: &str) -> Result<Vec<(String, Option<String>)>, String> {
        let value = argument.strip_prefix("--mount=").ok_or("not a --mount")?;
        Ok(go_csv::read_record(value)?
            .into_iter()
            .map(|field| match field.split_once('=') {
                Some((k, v)) => (k.to_owned(), Some(v.to_owned())),
                None => (field, None),
            })
            .collect())
    }

    fn tricky_text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just(','),
                Just('"'),
                Just('='),
                Just(':'),
                Just(' '),
                Just('\t'),
                Just('\n'),
                Just('\r'),
                Just('-'),
                Just('.'),
                Just('/'),
                Just('é'),
                Just('漢'),
                Just('🦀'),
                proptest::char::range('a', 'e'),
            ],
            0..12,
        )
        .prop_map(|chars| chars.into_iter().collect())
    }

    proptest! {
        #[test]
        fn mount_values_parse_back_to_the_same_fields(
            path in tricky_text(),
            target in tricky_text(),
            subpath in proptest::option::of(tricky_text()),
            volume in any::<bool>(),
            read_only in any::<bool>(),
        ) {
            let source = if volume {
                MountSource::Volume { name: path.clone(), subpath: subpath.clone() }
            } else {
                MountSource::Bind { path: path.clone() }
            };
            let mut spec = container();
            spec.mounts = vec![Mount { target: target.clone(), read_only, source }];
            match render(spec) {
                Err(error) => {
                    let subpath_bad = volume && subpath.as_deref().is_some_and(|s| s.contains("\r\n"));
                    let justified = path.starts_with('.')
                        || path.contains("\r\n")
                        || target.is_empty()
                        || target.contains("\r\n")
                        || subpath_bad;
                    prop_assert!(justified, "unjustified refusal: {error}");
                }
                Ok(argv) => {
                    prop_assert_eq!(argv.len(), 4);
                    let fields = docker_mount_fields(&argv[2]).map_err(TestCaseError::fail)?;
                    let mut expected = vec![
                        ("type".to_owned(), Some(if volume { "volume" } else { "bind" }.to_owned())),
                        ("source".to_owned(), Some(path.clone())),
                        ("target".to_owned(), Some(target.clone())),
                    ];
                    if read_only {
                        expected.push(("readonly".to_owned(), None));
                    }
                    if volume {
                        if let Some(subpath) = subpath {
                            expected.push(("volume-subpath".to_owned(), Some(subpath)));
                        }
                    }
                    prop_assert_eq!(fields, expected);
                }
            }
        }

        #[test]
        fn every_value_stays_inside_its_attached_flag(
            value in tricky_text(),
            name in "[A-Z_][A-Z0-9_]{0,8}",
        ) {
            let mut spec = container();
            spec.name = Some(value.clone());
            spec.user = Some(value.clone());
            spec.env = vec![EnvVar { name: name.clone(), value: EnvValue::Literal { value: value.clone() } }];
            spec.labels.insert(name.clone(), value.clone());
            spec.log = Some(LogConfig {
                driver: value.clone(),
                options: [(name.clone(), value.clone())].into_iter().collect(),
            });
            spec.command = vec![value.clone()];
            let argv = render(spec).unwrap();
            let expected = vec![
                "docker".to_owned(),
                "run".to_owned(),
                format!("--name={value}"),
                format!("--user={value}"),
                format!("--env={name}={value}"),
                format!("--log-driver={value}"),
                format!("--log-opt={name}={value}"),
                format!("--label={name}={value}"),
                "agentc/claude:1".to_owned(),
                value.clone(),
            ];
            prop_assert_eq!(argv, expected);
        }
    }
}
