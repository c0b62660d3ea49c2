//! The egress companion's spec prepared for a run, pure: the steps both backends take around its set-up
//! ([`agentc_policy::EgressSpec`]): preparing the spec (a per-run instance, the engines it
//! cannot run on), moving it to another subnet when the daemon says its subnet is taken, and
//! checking that the proxy published the ports it relays; the proxy container as both renderers
//! create it ([`proxy_as_created`]); and how a workload's relayed ports
//! are read back (its proxy's host bindings, [`merge_relayed_ports`]) for `agentc port`, `ps`
//! and the lines `run` prints. The set-up itself (network, proxy, health check) is each
//! backend's own.

use std::net::IpAddr;

use agentc_policy::{relays_of, ContainerSpec, EgressSpec, Network, LABEL_EGRESS_FOR};
use bollard::models::ContainerInspectResponse;

use crate::argv::{check_egress, ArgvError};
use crate::daemon_text::Refusal;
use crate::engine::Engine;
use crate::error::ExecError;

/// The first step of a companion's set-up, as its error names it: the one a taken subnet fails.
pub const CREATE_NETWORK: &str = "create the isolated network";

/// How many other subnets a set-up (or doctor's probe of an isolated network) tries after the
/// daemon says one overlaps another network's ([`Refusal::SubnetTaken`]).
pub const SUBNET_RETRIES: u32 = 3;

/// The egress proxy's container as `docker create` and `POST /containers/create` make it:
/// the whole companion checked first ([`check_egress`]), the image replaced by `proxy_image`
/// when given (the executor's built tag), and never detached (a create attaches nothing).
pub fn proxy_as_created(
    egress: &EgressSpec,
    proxy_image: Option<&str>,
) -> Result<ContainerSpec, ArgvError> {
    check_egress(egress)?;
    let mut proxy = egress.proxy.as_ref().clone();
    if let Some(image) = proxy_image {
        proxy.image = image.to_owned();
    }
    proxy.detach = false;
    Ok(proxy)
}

/// A suffix no other launch of this machine uses at the same time (process id and clock).
pub fn instance_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    format!("{:x}{:04x}", std::process::id(), nanos & 0xffff)
}

/// Readies `spec`'s companion for set-up on `engine`: `false` when it has none; refused on Podman; moved to
/// an instance of its own when the container has no name (each run gets its set,
/// [`ContainerSpec::egress_for`]), the container named after it (cut to one DNS label); the
/// proxy told to watch its workload when the name is a DNS label
/// ([`agentc_policy::dns_label_problem`]; a default name that is none is not watched); its
/// credentials' placeholders made ([`crate::credentials::materialize`]).
pub fn prepare(engine: Engine, spec: &mut ContainerSpec) -> Result<bool, ExecError> {
    if spec.egress.is_none() {
        return Ok(false);
    }
    if engine == Engine::Podman {
        // Not built yet: Podman's networks take other options (no inhibit_ipv4).
        return Err(ExecError::Egress {
            step: "set up the egress proxy",
            message: "egress.enforce = \"outside\" is not available with --engine podman yet"
                .to_string(),
            refusal: None,
        });
    }
    if spec.name.is_none() {
        // An instance of its own, and the workload named after it: the proxy watches it by
        // name, and the companion's `io.agentc.egress-for` label names it. The name is one DNS
        // label whatever the profile's name: its start is cut to leave room for the suffix.
        let suffix = instance_suffix();
        let network = spec.egress.as_ref().map(|e| e.network.name.clone());
        let base = network.unwrap_or_default();
        let workload = workload_name(base.strip_suffix("-egress").unwrap_or(&base), &suffix);
        spec.egress_for(&workload, &suffix);
        spec.name = Some(workload);
    }
    match agentc_policy::dns_label_problem(spec) {
        None => watch_workload(spec),
        // A name the launch was given by default (the policy refuses the names an invocation
        // chooses, `--name` and copies): the proxy does not depend on it rather than ending
        // its watch after a minute with egress down; a launch killed before it ends leaves the
        // companion to the next command's reaping.
        Some(problem) => log::warn!(
            "{problem}: the egress proxy cannot find the sandbox by name through the engine's \
             DNS, so it does not watch it (the next agentc command reaps a killed launch's \
             companion); name the sandbox with --name N of at most 63 characters to keep the \
             watch"
        ),
    }
    // The credentials' placeholders of this launch (random, new every launch), in the
    // workload's environment and the proxy's; the spec itself holds none.
    let made = crate::credentials::materialize(spec)?;
    if !made.is_empty() {
        log::debug!("placeholders made for {}", made.join(", "));
    }
    Ok(true)
}

/// `BASE-SUFFIX`, with `BASE` cut short (and any trailing `-`, `_` or `.` of the cut taken off)
/// so that the name is at most [`agentc_policy::MAX_DNS_LABEL`] characters.
fn workload_name(base: &str, suffix: &str) -> String {
    let room = agentc_policy::MAX_DNS_LABEL.saturating_sub(suffix.len() + 1);
    let mut cut = base.len().min(room);
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    let base = base[..cut].trim_end_matches(['-', '_', '.']);
    format!("{base}-{suffix}")
}

/// Tells the proxy its workload's name, so that it ends by itself when the launch dies before
/// creating the workload, and with an attached run's workload when that is gone
/// ([`agentc_egress::watch`]): `--workload=NAME --workload-watch=appear|life`.
fn watch_workload(spec: &mut ContainerSpec) {
    let (Some(name), Some(egress)) = (spec.name.clone(), spec.egress.as_mut()) else {
        return;
    };
    // `agentc_egress::watch::WatchMode`'s spellings.
    let mode = if spec.detach { "appear" } else { "life" };
    let command = &mut egress.proxy.command;
    command.retain(|word| !word.starts_with("--workload"));
    command.push(format!("--workload={name}"));
    command.push(format!("--workload-watch={mode}"));
}

/// The volume the companion's proxy writes its launch CA into and the workload reads it from
/// ([`agentc_policy::CA_DIR_TARGET`]), when the proxy holds credentials.
pub fn ca_volume(egress: &EgressSpec) -> Option<String> {
    egress
        .proxy
        .mounts
        .iter()
        .find_map(|mount| match &mount.source {
            agentc_policy::MountSource::Volume { name, .. }
                if mount.target == agentc_policy::CA_DIR_TARGET =>
            {
                Some(name.clone())
            }
            _ => None,
        })
}

/// The volume the companion's proxy keeps its audit files on ([`agentc_policy::AUDIT_DIR_TARGET`],
/// [`agentc_egress::audit`]), never mounted in the workload.
pub fn audit_volume(egress: &EgressSpec) -> Option<String> {
    egress
        .proxy
        .mounts
        .iter()
        .find_map(|mount| match &mount.source {
            agentc_policy::MountSource::Volume { name, .. }
                if mount.target == agentc_policy::AUDIT_DIR_TARGET =>
            {
                Some(name.clone())
            }
            _ => None,
        })
}

/// The step a companion's audit volume fails at.
pub const CREATE_AUDIT_VOLUME: &str = "create the egress proxy's audit volume";

/// The step a companion's CA volume fails at.
pub const CREATE_CA_VOLUME: &str = "create the egress proxy's CA volume";

/// After set-up attempt number `attempt` (from 1) failed with `error`: when the daemon said the
/// isolated network's subnet overlaps another network's and retries remain, moves the
/// companion to another subnet under the same names ([`ContainerSpec::egress_resubnet`]; the
/// caller sets up again); otherwise returns the error.
pub fn move_if_subnet_taken(
    spec: &mut ContainerSpec,
    error: ExecError,
    attempt: u32,
) -> Result<(), ExecError> {
    match error {
        ExecError::Egress {
            step,
            message,
            refusal: Some(Refusal::SubnetTaken),
        } if step == CREATE_NETWORK && attempt <= SUBNET_RETRIES => {
            log::debug!("the isolated network's subnet is taken ({message}); trying another");
            spec.egress_resubnet(attempt);
            Ok(())
        }
        error => Err(error),
    }
}

/// The step a proxy whose relayed ports were not published fails.
pub const PUBLISH_RELAYS: &str = "publish the sandbox's ports on the egress proxy";

/// After the proxy of `egress` started: every port it relays must have a host binding in its
/// inspect `proxy`. Docker publishes no port of a container whose networks are all internal,
/// so an `egress.outside_network` that is `--internal` would drop the ports silently: that is
/// [`ExecError::PortNotPublished`], naming the port and the network (fail closed; the caller
/// removes the companion).
pub fn check_relays_published(
    engine: crate::Engine,
    egress: &EgressSpec,
    proxy: &ContainerInspectResponse,
) -> Result<(), ExecError> {
    let bound = proxy
        .network_settings
        .as_ref()
        .and_then(|settings| settings.ports.as_ref());
    for relay in egress.relays() {
        let key = format!("{}/tcp", relay.listen);
        let published = bound
            .and_then(|ports| ports.get(&key))
            .and_then(|bindings| bindings.as_ref())
            .is_some_and(|bindings| {
                bindings
                    .iter()
                    .any(|b| b.host_port.as_deref().is_some_and(|p| !p.is_empty()))
            });
        if !published {
            return Err(ExecError::PortNotPublished {
                engine,
                port: relay.target.port(),
                outside: match &egress.outside {
                    Network::Named { name } => format!("the network {name}"),
                    Network::Default => "the default bridge".to_string(),
                    Network::None => "no network".to_string(),
                },
            });
        }
    }
    Ok(())
}

/// The workload's fixed IPv4 address on one of its networks (`--ip`): only a workload whose
/// published ports an egress proxy relays has one, so only such a workload needs its proxy
/// looked up ([`proxy_label_filter`], [`merge_relayed_ports`]).
pub fn fixed_address(workload: &ContainerInspectResponse) -> Option<IpAddr> {
    workload
        .network_settings
        .as_ref()?
        .networks
        .as_ref()?
        .values()
        .find_map(|endpoint| {
            endpoint
                .ipam_config
                .as_ref()?
                .ipv4_address
                .as_deref()?
                .parse()
                .ok()
        })
}

/// The label filter (`label=VALUE` without `label=`) naming the egress proxy of the container
/// `name`.
pub fn proxy_label_filter(name: &str) -> String {
    format!("{LABEL_EGRESS_FOR}={name}")
}

/// Gives `workload`'s inspect the host bindings its egress proxy holds for it: each relay of
/// the proxy's command (`--relay=LISTEN=IP:PORT`) that targets the workload's fixed address
/// makes the proxy's bindings of `LISTEN/tcp` those of the workload's `PORT/tcp`, so where a
/// port is reachable ([`crate::published_addresses`], the session endpoints) reads as if the
/// workload published it.
pub fn merge_relayed_ports(
    workload: &mut ContainerInspectResponse,
    proxy: &ContainerInspectResponse,
) {
    let Some(address) = fixed_address(workload) else {
        return;
    };
    let command = proxy
        .config
        .as_ref()
        .and_then(|config| config.cmd.clone())
        .unwrap_or_default();
    let proxy_ports = proxy
        .network_settings
        .as_ref()
        .and_then(|settings| settings.ports.clone())
        .unwrap_or_default();
    let settings = workload
        .network_settings
        .get_or_insert_with(Default::default);
    let ports = settings.ports.get_or_insert_with(Default::default);
    for relay in relays_of(&command) {
        if relay.target.ip() != address {
            continue;
        }
        let Some(Some(bindings)) = proxy_ports.get(&format!("{}/tcp", relay.listen)) else {
            continue;
        };
        ports.insert(
            format!("{}/tcp", relay.target.port()),
            Some(bindings.clone()),
        );
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use bollard::models::{
        ContainerConfig, EndpointIpamConfig, EndpointSettings, NetworkSettings, PortBinding,
    };

    use super::*;
    use agentc_policy::Hinted;

    fn binding(port: &str) -> Option<Vec<PortBinding>> {
        Some(vec![PortBinding {
            host_ip: Some("127.0.0.1".into()),
            host_port: Some(port.into()),
        }])
    }

    fn workload() -> ContainerInspectResponse {
        ContainerInspectResponse {
            network_settings: Some(NetworkSettings {
                ports: Some(HashMap::from([("8080/tcp".to_string(), None)])),
                networks: Some(HashMap::from([(
                    "box-egress".to_string(),
                    EndpointSettings {
                        ip_address: Some("10.213.0.19".into()),
                        ipam_config: Some(EndpointIpamConfig {
                            ipv4_address: Some("10.213.0.19".into()),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                )])),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn proxy(ports: HashMap<String, Option<Vec<PortBinding>>>) -> ContainerInspectResponse {
        ContainerInspectResponse {
            config: Some(ContainerConfig {
                cmd: Some(vec![
                    "/usr/local/bin/agentc".into(),
                    "egress-proxy".into(),
                    "serve".into(),
                    "--relay=20000=10.213.0.19:8080".into(),
                    "--relay=20001=10.213.0.99:9000".into(),
                ]),
                ..Default::default()
            }),
            network_settings: Some(NetworkSettings {
                ports: Some(ports),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn relayed_ports_read_as_the_workloads_own_host_bindings() {
        let mut inspect = workload();
        assert_eq!(
            fixed_address(&inspect),
            Some("10.213.0.19".parse().unwrap())
        );
        let proxy = proxy(HashMap::from([
            ("20000/tcp".to_string(), binding("49200")),
            ("20001/tcp".to_string(), binding("49201")),
        ]));
        merge_relayed_ports(&mut inspect, &proxy);
        let network = Network::Named {
            name: "box-egress".into(),
        };
        let found: Vec<(String, String)> = crate::published_addresses(&inspect, &network)
            .into_iter()
            .map(|found| (found.container_port, found.address))
            .collect();
        // Only the relay to this workload's address; not the isolated network's address.
        assert_eq!(found, [("8080/tcp".into(), "127.0.0.1:49200".into())]);
        // `agentc port NAME 8080` reads the same binding.
        let sandbox = crate::session::Sandbox {
            id: "abc".into(),
            name: "box".into(),
            profile: "box".into(),
        };
        let endpoint = crate::session::target::endpoint(
            &inspect,
            &sandbox,
            8080,
            agentc_policy::Protocol::Tcp,
        )
        .unwrap();
        assert_eq!(
            (endpoint.host.as_str(), endpoint.port, endpoint.network),
            ("127.0.0.1", 49200, None)
        );
        // A container without a fixed address is left alone.
        let mut plain = ContainerInspectResponse::default();
        merge_relayed_ports(&mut plain, &proxy);
        assert_eq!(plain, ContainerInspectResponse::default());
    }

    #[test]
    fn a_relay_the_daemon_did_not_publish_is_an_error_naming_the_outside_network() {
        let text = "name = \"relay\"\nagent = \"custom\"\n[image]\nref = \"busybox:1.36\"\n\
                    [egress]\nhosts = [\"a.example\"]\noutside_network = \"corp\"\n\
                    [network]\npublish = [8080]\n";
        let loaded = agentc_policy::load("relay.toml", text).unwrap();
        let inputs = agentc_policy::ResolveInputs {
            kind: agentc_policy::LaunchKind::Sandbox,
            workspace: "/w".into(),
            profile_dir: "/p".into(),
            home_dir: "/h".into(),
            owner: Some(agentc_policy::Owner {
                name: "dev".into(),
                uid: 1000,
                gid: 1000,
            }),
            image: None,
            seed_target: None,
            agent_args: Vec::new(),
            env: Default::default(),
            decant_sources: Vec::new(),
            instance: agentc_policy::Instance::default(),
            build: Default::default(),
        };
        let spec = agentc_policy::resolve(&loaded, &inputs, &NoPaths).unwrap();
        let agentc_policy::Action::Container(container) = spec.action else {
            panic!("a container");
        };
        let egress = container.egress.expect("a companion");
        let listen = format!("{}/tcp", agentc_policy::RELAY_PORT_BASE);
        let published = proxy(HashMap::from([(listen.clone(), binding("49200"))]));
        check_relays_published(crate::Engine::Docker, &egress, &published).unwrap();
        for unpublished in [HashMap::new(), HashMap::from([(listen, None)])] {
            let error = check_relays_published(crate::Engine::Docker, &egress, &proxy(unpublished))
                .unwrap_err();
            let text = error.with_hint().to_string();
            assert!(
                text.contains("port 8080") && text.contains("corp"),
                "{text}"
            );
        }
    }

    /// A custom sandbox behind the egress proxy resolved from `name`, with `instance`.
    fn sandbox(name: &str, instance: agentc_policy::Instance) -> ContainerSpec {
        let text = format!(
            "name = {name:?}\nagent = \"custom\"\n[image]\nref = \"busybox:1.36\"\n\
             [egress]\nhosts = [\"a.example\"]\n"
        );
        let loaded = agentc_policy::load("box.toml", &text).unwrap();
        let inputs = agentc_policy::ResolveInputs {
            kind: agentc_policy::LaunchKind::Sandbox,
            workspace: "/w".into(),
            profile_dir: "/p".into(),
            home_dir: "/h".into(),
            owner: Some(agentc_policy::Owner {
                name: "dev".into(),
                uid: 1000,
                gid: 1000,
            }),
            image: None,
            seed_target: None,
            agent_args: Vec::new(),
            env: Default::default(),
            decant_sources: Vec::new(),
            instance,
            build: Default::default(),
        };
        let spec = agentc_policy::resolve(&loaded, &inputs, &NoPaths).unwrap();
        let agentc_policy::Action::Container(container) = spec.action else {
            panic!("a container");
        };
        *container
    }

    #[test]
    fn a_workload_the_proxy_cannot_find_by_name_is_not_watched_and_a_derived_one_fits() {
        // The profile's own name for the sandbox (`agentc-sandbox-dev-1000-NAME`): one of 63 is
        // watched; one of 64, or with a dot, is not (the proxy would end its watch after a
        // minute), and the launch goes on.
        let fits = sandbox(&"p".repeat(63 - 24), agentc_policy::Instance::default());
        assert_eq!(fits.name.as_ref().map(String::len), Some(63));
        let mut spec = fits.clone();
        assert!(prepare(Engine::Docker, &mut spec).unwrap());
        assert!(spec
            .egress
            .as_ref()
            .unwrap()
            .proxy
            .command
            .iter()
            .any(|word| *word
                == format!(
                    "--workload={}",
                    "agentc-sandbox-dev-1000-".to_string() + &"p".repeat(39)
                )));
        let mut long = sandbox(&"p".repeat(63 - 23), agentc_policy::Instance::default());
        assert!(prepare(Engine::Docker, &mut long).unwrap());
        let watched = |spec: &ContainerSpec| {
            spec.egress
                .as_ref()
                .unwrap()
                .proxy
                .command
                .iter()
                .any(|word| word.starts_with("--workload"))
        };
        assert!(!watched(&long), "a default name of 64 is not watched");
        let mut dotted = fits.clone();
        dotted.name = Some("box.two".into());
        assert!(prepare(Engine::Docker, &mut dotted).unwrap());
        assert!(!watched(&dotted), "nor one with a dot");
        // A launch without a name gets one that fits, whatever the profile's name.
        let mut unnamed = fits.clone();
        unnamed.name = None;
        assert!(prepare(Engine::Docker, &mut unnamed).unwrap());
        let name = unnamed.name.clone().unwrap();
        assert!(name.len() <= 63, "{name}");
        assert!(!name.contains('.') && !name.contains("--"), "{name}");
        assert_eq!(
            unnamed.egress.as_ref().unwrap().proxy.labels[LABEL_EGRESS_FOR],
            name
        );
        assert_eq!(workload_name("short", "abc"), "short-abc");
        assert_eq!(workload_name(&"x".repeat(70), "abc").len(), 63);
        assert_eq!(
            workload_name(&format!("{}-tail", "x".repeat(58)), "abc"),
            format!("{}-abc", "x".repeat(58))
        );
    }

    struct NoPaths;

    impl agentc_policy::PathProbe for NoPaths {
        fn kind(&self, _: &str) -> agentc_policy::PathKind {
            agentc_policy::PathKind::Missing
        }
    }
}
