//! What docker's command line can carry: the refusals both backends share.
//!
//! The CLI backend renders every value into one attached flag (`--flag=value`); a few values
//! that the Engine API would accept cannot survive docker's flag syntax (split at a `=` or `:`,
//! read as CSV, parsed through a float, taken for a flag). [`check_container`] and
//! [`check_build`] refuse exactly those, naming the spec field. The CLI renderer calls them
//! before it formats anything, and the API backend calls them before it builds a body, so both
//! backends accept exactly the same specs.
//!
//! The checks walk the spec in the renderer's flag order (process, env, mounts, network,
//! resources, logging, devices, labels, image and command), so the first refusal is the one
//! docker's command line would meet first.

use std::collections::BTreeMap;

use agentc_policy::MAX_SIZE_BYTES;
use agentc_policy::{
    BuildSpec, ContainerSpec, Device, EgressSpec, EnvValue, EnvVar, ExtraHost, IsolatedNetwork,
    LogConfig, Mount, MountSource, Network, Resources, Tmpfs,
};

/// A spec value the `docker` command line cannot carry unchanged.
///
/// `resolve` validates specs, so these are rare: they name values that are valid for the
/// Engine API but that the docker CLI's flag syntax would split, rewrite or refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgvError {
    /// A text value holds a NUL byte, which no process argument can hold. The value itself is
    /// not repeated (it may be an environment value).
    #[error("{field} contains a NUL byte, which no command-line argument can carry")]
    Nul {
        /// The spec field path, such as `env.HTTP_PROXY` or `mounts[0].target`.
        field: String,
    },
    /// A value docker's flag syntax would split, rewrite or refuse.
    #[error("{field} = {value:?} cannot be passed to docker: {reason}")]
    Unrepresentable {
        /// The spec field path, such as `tmpfs[1].target` or `labels`.
        field: String,
        /// The offending value (never an environment value).
        value: String,
        /// Why docker's syntax cannot carry it.
        reason: &'static str,
        /// What to change.
        hint: &'static str,
    },
}

impl agentc_policy::Hinted for ArgvError {
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        Some(std::borrow::Cow::Borrowed(match self {
            ArgvError::Nul { .. } => "remove it from the profile",
            ArgvError::Unrepresentable { hint, .. } => hint,
        }))
    }
}

impl ArgvError {
    /// The spec field path the error is about.
    pub fn field(&self) -> &str {
        match self {
            ArgvError::Nul { field } | ArgvError::Unrepresentable { field, .. } => field,
        }
    }
}

/// Whether the docker command line can carry a container launch (`docker run`): every value
/// the CLI renderer writes, checked in its flag order.
pub fn check_container(spec: &ContainerSpec) -> Result<(), ArgvError> {
    let ContainerSpec {
        name,
        image,
        entrypoint,
        command,
        user,
        working_dir,
        init: _,
        env,
        mounts,
        tmpfs,
        read_only_root: _,
        no_new_privileges: _,
        apparmor: _,
        cap_drop_all: _,
        cap_add: _,
        network,
        extra_hosts,
        ports: _,
        exposed_ports: _,
        network_aliases,
        ipv4_address,
        dns: _,
        sysctls,
        egress,
        resources,
        log,
        devices,
        labels,
        runtime,
        isolation,
        interactive: _,
        tty: _,
        auto_remove,
        restart,
        detach: _,
        held_secrets,
    } = spec;
    if let Some(agentc_policy::Restart::OnFailure { max_retries }) = restart {
        refuse(
            *auto_remove,
            || "restart".to_owned(),
            "on_failure",
            "docker refuses a restart policy on a container it removes when it exits (`--rm`)",
            "drop auto_remove or the restart policy",
        )?;
        refuse(
            *max_retries == 0,
            || "restart.max_retries".to_owned(),
            "0",
            "docker reads a maximum of 0 retries as no maximum",
            "set max_retries to at least 1",
        )?;
    }
    // Handed to docker's environment, not its argv: a NUL cannot be carried there either
    // (the error names the variable, never the value).
    for (name, value) in held_secrets.iter() {
        no_nul(|| format!("env.{name}"), value)?;
    }
    for (key, value) in sysctls {
        let field = || format!("sysctls.{key}");
        no_nul(field, key)?;
        refuse(
            key.is_empty() || key.contains('='),
            field,
            key,
            "docker splits `--sysctl` at its first `=` and needs a name before it",
            "use a non-empty parameter name without `=`",
        )?;
        no_nul(field, value)?;
    }
    if let Some(egress) = egress {
        check_egress(egress)?;
    }
    for (value, field) in [
        (name, "name"),
        (entrypoint, "entrypoint"),
        (user, "user"),
        (working_dir, "working_dir"),
        (runtime, "runtime"),
    ] {
        if let Some(value) = value {
            no_nul(|| field.to_owned(), value)?;
        }
    }
    if let Some(isolation) = isolation {
        // The floor is met by the runtime the launch chooses (detected and probed first); a
        // rendering without one would run under the engine's default, whatever it is.
        refuse(
            runtime.is_none() && isolation.min > agentc_policy::IsolationTier::Container,
            || "isolation.min".to_owned(),
            isolation.min.as_str(),
            "the runtime meeting an isolation floor is chosen at launch from the engine's \
             runtimes; without one the engine's default would run it",
            "launch it with `agentc run` or a session's create (which detect and probe the \
             engine's runtimes), or name a runtime at the floor in security.runtime to render it",
        )?;
    }
    check_env(env)?;
    check_mounts(mounts)?;
    check_tmpfs(tmpfs)?;
    check_network(network, extra_hosts)?;
    for (index, alias) in network_aliases.iter().enumerate() {
        no_nul(|| format!("network_aliases[{index}]"), alias)?;
        refuse(
            !matches!(network, Network::Named { .. }),
            || format!("network_aliases[{index}]"),
            alias,
            "docker supports network-scoped aliases only on user-defined networks",
            "join a named network, or drop the alias",
        )?;
        refuse(
            alias.is_empty(),
            || format!("network_aliases[{index}]"),
            alias,
            "docker refuses an empty `--network-alias`",
            "name the alias",
        )?;
    }
    if let Some(address) = ipv4_address {
        refuse(
            !matches!(network, Network::Named { .. }),
            || "ipv4_address".to_owned(),
            &address.to_string(),
            "docker supports a fixed `--ip` only on user-defined networks",
            "join a named network, or drop the address",
        )?;
    }
    check_resources(resources)?;
    check_logging(log.as_ref())?;
    check_devices(devices)?;
    check_labels(labels)?;
    positional(|| "image".to_owned(), image)?;
    for (index, word) in command.iter().enumerate() {
        no_nul(|| format!("command[{index}]"), word)?;
    }
    Ok(())
}

/// Whether docker can carry the egress companion: the isolated network's name, subnet,
/// options and labels, and the proxy container (which has no companion of its own).
pub fn check_egress(egress: &EgressSpec) -> Result<(), ArgvError> {
    let EgressSpec {
        network,
        outside: _,
        proxy,
        proxy_address: _,
        // The bindings: names and hosts, carried by the proxy's command (checked there).
        credentials: _,
    } = egress;
    let IsolatedNetwork {
        name,
        subnet,
        internal: _,
        options,
        labels,
    } = network;
    positional(|| "egress.network.name".to_owned(), name)?;
    no_nul(|| "egress.network.subnet".to_owned(), subnet)?;
    for (key, value) in options {
        let field = || format!("egress.network.options.{key}");
        no_nul(field, key)?;
        refuse(
            key.is_empty() || key.contains('='),
            field,
            key,
            "docker splits `--opt` at its first `=` and needs a name before it",
            "use a non-empty option name without `=`",
        )?;
        no_nul(field, value)?;
    }
    check_labels(labels)?;
    refuse(
        proxy.egress.is_some(),
        || "egress.proxy.egress".to_owned(),
        "egress",
        "the egress proxy has no egress companion of its own",
        "leave egress.proxy.egress empty",
    )?;
    check_container(proxy)
}

/// Whether the docker command line can carry an image build (`docker build`).
pub fn check_build(spec: &BuildSpec) -> Result<(), ArgvError> {
    let BuildSpec {
        tag,
        context,
        dockerfile,
        named_contexts,
        build_args,
        labels,
    } = spec;
    no_nul(|| "tag".to_owned(), tag)?;
    refuse(
        tag.is_empty(),
        || "tag".to_owned(),
        tag,
        "docker refuses an empty `--tag`",
        "name the image",
    )?;
    positional(|| "context".to_owned(), context)?;
    if let Some(dockerfile) = dockerfile {
        no_nul(|| "dockerfile".to_owned(), dockerfile)?;
    }
    for (family, map) in [
        ("named_contexts", named_contexts),
        ("build_args", build_args),
    ] {
        for (key, value) in map {
            let field = || family.to_owned();
            no_nul(field, key)?;
            refuse(
                key.is_empty() || key.contains('='),
                field,
                key,
                "docker splits the value at its first `=` and needs a name before it",
                "use a non-empty name without `=`",
            )?;
            no_nul(|| format!("{family}.{key}"), value)?;
        }
    }
    check_labels(labels)
}

/// `--env=NAME=value` and `--env=NAME`: docker splits each entry at its first `=` and refuses
/// an empty name, so names must be non-empty and free of `=`.
fn check_env(env: &[EnvVar]) -> Result<(), ArgvError> {
    for (index, EnvVar { name, value }) in env.iter().enumerate() {
        let field = || format!("env[{index}].name");
        no_nul(field, name)?;
        refuse(
            name.is_empty(),
            field,
            name,
            "docker refuses an environment entry with an empty name",
            "give the variable a name",
        )?;
        refuse(
            name.contains('='),
            field,
            name,
            "docker splits an environment entry at its first `=`, so a name cannot contain one",
            "rename the variable",
        )?;
        match value {
            EnvValue::Literal { value } => no_nul(|| format!("env.{name}"), value)?,
            EnvValue::Secret { required: _ } => {}
            EnvValue::Placeholder {
                variable: _,
                prefix,
            } => no_nul(|| format!("env.{name}"), prefix)?,
        }
    }
    Ok(())
}

/// `--mount=`, one record of Go's `encoding/csv`: every field must read back unchanged, a
/// target is required, and a source must not start with `.`.
fn check_mounts(mounts: &[Mount]) -> Result<(), ArgvError> {
    for (
        index,
        Mount {
            target,
            read_only: _,
            source,
        },
    ) in mounts.iter().enumerate()
    {
        let target_field = || format!("mounts[{index}].target");
        mount_value(target_field, target)?;
        refuse(
            target.is_empty(),
            target_field,
            target,
            "docker requires a mount target",
            "use an absolute path in the container",
        )?;
        match source {
            MountSource::Bind { path } => {
                let field = || format!("mounts[{index}].source.path");
                mount_value(field, path)?;
                mount_source(field, path)?;
            }
            MountSource::Volume { name, subpath } => {
                let field = || format!("mounts[{index}].source.name");
                mount_value(field, name)?;
                mount_source(field, name)?;
                if let Some(subpath) = subpath {
                    mount_value(|| format!("mounts[{index}].source.subpath"), subpath)?;
                }
            }
        }
    }
    Ok(())
}

/// `--tmpfs=TARGET[:exec]`: docker splits the value at its first `:`.
fn check_tmpfs(tmpfs: &[Tmpfs]) -> Result<(), ArgvError> {
    for (index, Tmpfs { target, exec: _ }) in tmpfs.iter().enumerate() {
        let field = || format!("tmpfs[{index}].target");
        no_nul(field, target)?;
        refuse(
            target.is_empty(),
            field,
            target,
            "docker requires a tmpfs target",
            "use an absolute path in the container",
        )?;
        refuse(
            target.contains(':'),
            field,
            target,
            "docker splits `--tmpfs` at the first `:` (target, then mount options)",
            "choose a tmpfs target without `:`",
        )?;
    }
    Ok(())
}

/// A value inside a `--mount` record: no NUL, and readable back by Go's CSV reader, which
/// turns CR LF into LF even inside a quoted field.
fn mount_value(field: impl Fn() -> String, value: &str) -> Result<(), ArgvError> {
    no_nul(&field, value)?;
    refuse(
        value.contains("\r\n"),
        field,
        value,
        "docker reads `--mount` as CSV, which turns CR LF into LF even inside quotes",
        "remove the carriage return",
    )?;
    Ok(())
}

/// A mount source: docker rewrites a source starting with `.` to an absolute path.
fn mount_source(field: impl Fn() -> String, value: &str) -> Result<(), ArgvError> {
    refuse(
        value.starts_with('.'),
        field,
        value,
        "docker resolves a mount source starting with `.` against its working directory",
        "use an absolute host path or a volume name that starts with a letter or digit",
    )?;
    Ok(())
}

/// `--network=NAME` (an empty name selects the default network, one holding `=` is read as
/// `name=...,alias=...`) and `--add-host=HOST:ADDRESS` (docker splits at the first `=` or
/// `:`, so a host holds neither).
fn check_network(network: &Network, extra_hosts: &[ExtraHost]) -> Result<(), ArgvError> {
    match network {
        Network::Default | Network::None => {}
        Network::Named { name } => {
            let field = || "network.name".to_owned();
            no_nul(field, name)?;
            refuse(
                name.is_empty(),
                field,
                name,
                "an empty `--network` selects the default network",
                "name the network or use the default mode",
            )?;
            refuse(
                name.contains('='),
                field,
                name,
                "docker reads a `--network` value holding `=` as the `name=...,alias=...` syntax",
                "use a network name without `=`",
            )?;
        }
    }
    for (index, ExtraHost { host, target: _ }) in extra_hosts.iter().enumerate() {
        let field = || format!("extra_hosts[{index}].host");
        no_nul(field, host)?;
        refuse(
            host.is_empty() || host.contains([':', '=']),
            field,
            host,
            "docker splits `--add-host` at the first `=` or `:` and requires a host name before it",
            "use a non-empty host name without `:` or `=`",
        )?;
    }
    Ok(())
}

/// `--memory=`, `--memory-swap=` and `--shm-size=` are parsed through a 64-bit float (exact
/// only up to [`MAX_SIZE_BYTES`], the policy's own bound), `--cpus=` is stored as a signed
/// 64-bit count of billionths.
fn check_resources(resources: &Resources) -> Result<(), ArgvError> {
    let Resources {
        memory_bytes,
        memory_swap_bytes,
        shm_size_bytes,
        nano_cpus,
        pids_limit: _,
    } = resources;
    for (value, field) in [
        (memory_bytes, "resources.memory_bytes"),
        (memory_swap_bytes, "resources.memory_swap_bytes"),
        (shm_size_bytes, "resources.shm_size_bytes"),
    ] {
        if let Some(bytes) = value {
            refuse(
                *bytes > MAX_SIZE_BYTES,
                || field.to_owned(),
                &bytes.to_string(),
                "docker parses sizes through a 64-bit float, which holds every integer only below 2^53",
                "use a size below 2^53 bytes (8 PiB)",
            )?;
        }
    }
    if let Some(nano) = nano_cpus {
        refuse(
            i64::try_from(*nano).is_err(),
            || "resources.nano_cpus".to_owned(),
            &nano.to_string(),
            "docker stores the CPU quota as a signed 64-bit count of billionths",
            "use a smaller CPU count",
        )?;
    }
    Ok(())
}

/// `--log-opt=KEY=VALUE`: docker splits each option at its first `=`.
fn check_logging(log: Option<&LogConfig>) -> Result<(), ArgvError> {
    let Some(LogConfig { driver, options }) = log else {
        return Ok(());
    };
    no_nul(|| "log.driver".to_owned(), driver)?;
    for (key, value) in options {
        no_nul(|| "log.options".to_owned(), key)?;
        refuse(
            key.contains('='),
            || "log.options".to_owned(),
            key,
            "docker splits `--log-opt` at its first `=`, so a key cannot contain one",
            "rename the log option",
        )?;
        no_nul(|| format!("log.options.{key}"), value)?;
    }
    Ok(())
}

/// `--device=HOST:CONTAINER:PERMISSIONS`: docker splits the value at every `:` and accepts
/// only permissions made of `r`, `w` and `m`.
fn check_devices(devices: &[Device]) -> Result<(), ArgvError> {
    for (index, device) in devices.iter().enumerate() {
        let Device {
            host_path,
            container_path,
            permissions,
        } = device;
        for (name, path) in [("host_path", host_path), ("container_path", container_path)] {
            let field = || format!("devices[{index}].{name}");
            no_nul(field, path)?;
            refuse(
                path.is_empty() || path.contains(':'),
                field,
                path,
                "docker splits `--device` at every `:` and needs both paths",
                "use a non-empty device path without `:`",
            )?;
        }
        let field = || format!("devices[{index}].permissions");
        no_nul(field, permissions)?;
        refuse(
            !valid_device_mode(permissions),
            field,
            permissions,
            "docker accepts only a non-empty combination of `r`, `w` and `m`",
            "use permissions such as `rwm` or `r`",
        )?;
    }
    Ok(())
}

/// docker's `validDeviceMode`: one to three of `r`, `w`, `m`, each at most once.
fn valid_device_mode(mode: &str) -> bool {
    !mode.is_empty()
        && mode.len() <= 3
        && mode
            .char_indices()
            .all(|(i, c)| matches!(c, 'r' | 'w' | 'm') && !mode[..i].contains(c))
}

/// `--label=KEY=VALUE`: docker splits at the first `=`, strips leading spaces and tabs from
/// the key, then refuses an empty key or one holding a space or tab.
fn check_labels(labels: &BTreeMap<String, String>) -> Result<(), ArgvError> {
    for (key, value) in labels {
        let field = || "labels".to_owned();
        no_nul(field, key)?;
        let trimmed = key.trim_start_matches([' ', '\t']);
        let reason = if trimmed.is_empty() {
            Some("docker refuses a label with an empty name")
        } else if key.contains('=') {
            Some("docker splits a label at its first `=`, so a key cannot contain one")
        } else if trimmed.contains([' ', '\t']) {
            Some("docker refuses a label name containing a space or a tab")
        } else {
            None
        };
        if let Some(reason) = reason {
            refuse(true, field, key, reason, "rename the label")?;
        }
        no_nul(|| format!("labels.{key}"), value)?;
    }
    Ok(())
}

/// A positional argument: non-empty and not starting with `-` (which docker would read as a
/// flag).
fn positional(field: impl Fn() -> String, value: &str) -> Result<(), ArgvError> {
    no_nul(&field, value)?;
    refuse(
        value.is_empty() || value.starts_with('-'),
        field,
        value,
        "it is a positional argument, which docker reads as a flag when it starts with `-` and cannot take empty",
        "use a value that starts with a letter, a digit or `/`",
    )?;
    Ok(())
}

fn no_nul(field: impl FnOnce() -> String, value: &str) -> Result<(), ArgvError> {
    if value.contains('\0') {
        return Err(ArgvError::Nul { field: field() });
    }
    Ok(())
}

/// Refuses `value` (at `field`) when `refused`, with why docker cannot carry it and what to
/// change.
fn refuse(
    refused: bool,
    field: impl FnOnce() -> String,
    value: &str,
    reason: &'static str,
    hint: &'static str,
) -> Result<(), ArgvError> {
    if refused {
        return Err(ArgvError::Unrepresentable {
            field: field(),
            value: value.to_owned(),
            reason,
            hint,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container() -> ContainerSpec {
        ContainerSpec::empty("agentc/claude:1")
    }

    #[test]
    fn an_isolation_floor_without_a_chosen_runtime_is_refused() {
        use agentc_policy::{Isolation, IsolationPrefer, IsolationTier};
        let mut spec = container();
        spec.isolation = Some(Isolation {
            min: IsolationTier::Gvisor,
            prefer: IsolationPrefer::Min,
        });
        assert_eq!(refused(&spec), "isolation.min");
        spec.runtime = Some("runsc".into());
        assert!(check_container(&spec).is_ok());
        spec.runtime = None;
        spec.isolation = Some(Isolation {
            min: IsolationTier::Container,
            prefer: IsolationPrefer::Strongest,
        });
        assert!(check_container(&spec).is_ok());
    }

    fn refused(spec: &ContainerSpec) -> String {
        check_container(spec)
            .expect_err("must be refused")
            .field()
            .to_owned()
    }

    /// Whether docker's `units.RAMInBytes` (a float64 parse, then a conversion to int64) returns
    /// exactly `bytes`. Every size up to [`MAX_SIZE_BYTES`] is; above it only some are (and
    /// anything from 2^63 overflows the int64), but agentc refuses them all, in both backends.
    fn exact_docker_size(bytes: u64) -> bool {
        bytes < (1 << 63) && (bytes as f64) as u64 == bytes
    }

    #[test]
    fn exact_docker_size_matches_float64_then_int64() {
        // Every size up to the shared limit is exact.
        assert!(exact_docker_size(MAX_SIZE_BYTES));
        assert!(exact_docker_size(0));
        assert!(exact_docker_size(1 << 53));
        assert!(!exact_docker_size((1 << 53) + 1));
        assert!(exact_docker_size(1 << 60));
        assert!(exact_docker_size((1 << 63) - 1024));
        assert!(!exact_docker_size(i64::MAX as u64));
        assert!(!exact_docker_size(1 << 63));
    }

    #[test]
    fn sizes_above_the_shared_bound_are_refused() {
        let mut spec = container();
        spec.resources.memory_bytes = Some(MAX_SIZE_BYTES);
        assert_eq!(check_container(&spec), Ok(()));
        spec.resources.memory_bytes = Some(MAX_SIZE_BYTES + 1);
        assert_eq!(refused(&spec), "resources.memory_bytes");
    }

    #[test]
    fn crlf_is_refused_inside_a_mount_and_a_lone_cr_or_lf_is_carried() {
        let mut spec = container();
        spec.mounts = vec![Mount {
            target: "/a\rb\n".into(),
            read_only: false,
            source: MountSource::Volume {
                name: "v".into(),
                subpath: Some("/a\r\nb".into()),
            },
        }];
        assert_eq!(refused(&spec), "mounts[0].source.subpath");
    }

    #[test]
    fn device_modes_are_docker_s() {
        for mode in ["r", "w", "m", "rw", "rwm", "mwr"] {
            assert!(valid_device_mode(mode), "{mode}");
        }
        for mode in ["", "rr", "rwmr", "x", "rwx"] {
            assert!(!valid_device_mode(mode), "{mode}");
        }
    }

    #[test]
    fn the_first_refusal_is_the_first_in_flag_order() {
        let mut spec = container();
        spec.image = "-x".into();
        spec.labels.insert("a=b".into(), "v".into());
        spec.user = Some("a\0".into());
        assert_eq!(refused(&spec), "user");
        spec.user = None;
        assert_eq!(refused(&spec), "labels");
        spec.labels.clear();
        assert_eq!(refused(&spec), "image");
    }

    #[test]
    fn build_values_docker_cannot_carry_are_refused() {
        let build = |tag: &str, arg: &str| BuildSpec {
            tag: tag.into(),
            context: "/ctx".into(),
            dockerfile: None,
            named_contexts: BTreeMap::new(),
            build_args: BTreeMap::from([(arg.to_owned(), "1".to_owned())]),
            labels: BTreeMap::new(),
        };
        assert_eq!(check_build(&build("t", "A")), Ok(()));
        assert_eq!(check_build(&build("", "A")).unwrap_err().field(), "tag");
        assert_eq!(
            check_build(&build("t", "A=B")).unwrap_err().field(),
            "build_args"
        );
    }
}
