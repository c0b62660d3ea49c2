//! Which container a NAME means and where its ports are reachable: both read a container's
//! inspect, which `docker inspect` and the Engine API print alike.

use agentc_policy::{Protocol, LABEL_PROFILE};
use bollard::models::ContainerInspectResponse;

use super::error::SessionError;
use super::types::{Endpoint, Sandbox};

/// Refuses a NAME that cannot be a container name or ID before it reaches docker: empty, a NUL
/// byte or another control character, a leading `-` (docker would read it as an option), a
/// `/` or whitespace. Docker's names are `[a-zA-Z0-9][a-zA-Z0-9_.-]*`, IDs hexadecimal.
pub fn check_name(name: &str) -> Result<(), SessionError> {
    let valid = name
        .chars()
        .enumerate()
        .all(|(i, c)| c.is_ascii_alphanumeric() || (i > 0 && matches!(c, '_' | '.' | '-')))
        && !name.is_empty()
        && name.len() <= 255;
    if valid {
        Ok(())
    } else {
        Err(SessionError::BadName {
            name: name.to_string(),
        })
    }
}

/// The sandbox an inspect describes, when agentc created it (it has the `io.agentc.profile`
/// label); [`ExecError::NotAgentc`](crate::ExecError::NotAgentc) naming `asked` otherwise.
pub fn sandbox_of(
    inspect: &ContainerInspectResponse,
    asked: &str,
) -> Result<Sandbox, SessionError> {
    let profile = inspect
        .config
        .as_ref()
        .and_then(|config| config.labels.as_ref())
        .and_then(|labels| labels.get(LABEL_PROFILE))
        .cloned()
        .ok_or_else(|| crate::error::ExecError::NotAgentc {
            name: asked.to_string(),
        })?;
    Ok(Sandbox {
        id: inspect.id.clone().unwrap_or_default(),
        name: inspect
            .name
            .as_deref()
            .unwrap_or(asked)
            .trim_start_matches('/')
            .to_string(),
        profile,
    })
}

/// Whether a container of this `io.agentc.kind` is a companion of a sandbox (its egress
/// proxy) rather than a sandbox: a profile file names its sandbox, never its proxy.
pub fn is_companion(kind: &str) -> bool {
    kind == agentc_policy::KIND_EGRESS_PROXY
}

/// Whether the container is running, from its inspect.
pub fn is_running(inspect: &ContainerInspectResponse) -> bool {
    inspect
        .state
        .as_ref()
        .and_then(|state| state.running)
        .unwrap_or(false)
}

/// The named network a container was created on (`HostConfig.NetworkMode`), if any.
pub fn named_network(inspect: &ContainerInspectResponse) -> Option<String> {
    let mode = inspect
        .host_config
        .as_ref()
        .and_then(|host| host.network_mode.as_deref())?;
    match mode {
        "" | "default" | "bridge" | "host" | "none" => None,
        mode if mode.starts_with("container:") => None,
        name => Some(name.to_string()),
    }
}

fn network_mode(inspect: &ContainerInspectResponse) -> &str {
    inspect
        .host_config
        .as_ref()
        .and_then(|host| host.network_mode.as_deref())
        .unwrap_or("default")
}

/// The container ports it publishes or exposes, sorted, as `(port, protocol)`.
pub fn container_ports(inspect: &ContainerInspectResponse) -> Vec<(u16, Protocol)> {
    let mut ports: Vec<(u16, Protocol)> = inspect
        .network_settings
        .as_ref()
        .and_then(|settings| settings.ports.as_ref())
        .into_iter()
        .flat_map(|ports| ports.keys())
        .chain(
            inspect
                .config
                .as_ref()
                .and_then(|config| config.exposed_ports.as_ref())
                .into_iter()
                .flatten(),
        )
        .filter_map(|key| parse_port_key(key))
        .collect();
    ports.sort();
    ports.dedup();
    ports
}

fn parse_port_key(key: &str) -> Option<(u16, Protocol)> {
    let (number, protocol) = key.split_once('/').unwrap_or((key, "tcp"));
    let protocol = match protocol {
        "tcp" => Protocol::Tcp,
        "udp" => Protocol::Udp,
        _ => return None,
    };
    Some((number.parse().ok()?, protocol))
}

/// Where `port`/`protocol` of a container is reachable from the host, as the sandbox seed's
/// session resolves an exposed port: the first host binding of a published port (a wildcard
/// host address becomes the loopback one); otherwise, on a named network, the container's
/// address there and the container port. A port the container neither publishes nor exposes,
/// a container with no network, and one no longer attached to its named network are errors
/// that say so (naming the network).
pub fn endpoint(
    inspect: &ContainerInspectResponse,
    sandbox: &Sandbox,
    port: u16,
    protocol: Protocol,
) -> Result<Endpoint, SessionError> {
    let key = format!("{port}/{}", protocol.as_str());
    let name = &sandbox.name;
    let bindings = inspect
        .network_settings
        .as_ref()
        .and_then(|settings| settings.ports.as_ref())
        .and_then(|ports| ports.get(&key))
        .and_then(|bindings| bindings.as_ref());
    for binding in bindings.into_iter().flatten() {
        let Some(host_port) = binding
            .host_port
            .as_deref()
            .and_then(|text| text.parse::<u16>().ok())
        else {
            continue;
        };
        let host = match binding.host_ip.as_deref().unwrap_or("") {
            "" | "0.0.0.0" => "127.0.0.1".to_string(),
            "::" => "::1".to_string(),
            ip => ip.to_string(),
        };
        return Ok(Endpoint {
            host,
            port: host_port,
            container_port: port,
            protocol,
            network: None,
        });
    }
    if !container_ports(inspect).contains(&(port, protocol)) {
        return Err(SessionError::NoEndpoint {
            message: format!("{name} neither publishes nor exposes port {key}"),
            hint: "list the port in the profile's [network] publish; `agentc port NAME` lists what is reachable".to_string(),
        });
    }
    let Some(network) = named_network(inspect) else {
        let mode = network_mode(inspect);
        let hint = if mode == "none" {
            "the sandbox runs without a network (egress deny); nothing can reach it"
        } else {
            "publish it with the profile's [network] publish, or join a named network"
        };
        return Err(SessionError::NoEndpoint {
            message: format!("port {key} of {name} is not published on the host"),
            hint: hint.to_string(),
        });
    };
    let address = inspect
        .network_settings
        .as_ref()
        .and_then(|settings| settings.networks.as_ref())
        .and_then(|networks| networks.get(&network))
        .and_then(|endpoint| {
            endpoint
                .ip_address
                .clone()
                .filter(|ip| !ip.is_empty())
                .or_else(|| {
                    endpoint
                        .global_ipv6_address
                        .clone()
                        .filter(|ip| !ip.is_empty())
                })
        });
    match address {
        Some(host) => Ok(Endpoint {
            host,
            port,
            container_port: port,
            protocol,
            network: Some(network),
        }),
        None => Err(SessionError::NoEndpoint {
            message: format!("{name} has no address on its network {network}"),
            hint: format!(
                "the container is not attached to {network} (stopped, or disconnected): `agentc start {name}`, or `docker network connect {network} {name}`"
            ),
        }),
    }
}

/// Every reachable endpoint of the container's published and exposed ports, in port order;
/// ports that are not reachable are left out.
pub fn endpoints(inspect: &ContainerInspectResponse, sandbox: &Sandbox) -> Vec<Endpoint> {
    container_ports(inspect)
        .into_iter()
        .filter_map(|(port, protocol)| endpoint(inspect, sandbox, port, protocol).ok())
        .collect()
}

/// Reads `PORT[/PROTO]` as `agentc port` takes it.
pub fn parse_port(text: &str) -> Result<(u16, Protocol), SessionError> {
    parse_port_key(text)
        .filter(|(port, _)| *port > 0)
        .ok_or_else(|| {
            SessionError::invalid(
                format!("{text:?} is not PORT or PORT/PROTO"),
                "give a port such as 8080, 8080/tcp or 53/udp",
            )
        })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use bollard::models::{
        ContainerConfig, EndpointSettings, HostConfig, NetworkSettings, PortBinding,
    };

    use super::*;
    use agentc_policy::Hinted;

    fn sandbox() -> Sandbox {
        Sandbox {
            id: "0123".into(),
            name: "box".into(),
            profile: "p".into(),
        }
    }

    fn inspect(mode: &str, ports: Vec<(&str, Option<(&str, &str)>)>) -> ContainerInspectResponse {
        ContainerInspectResponse {
            host_config: Some(HostConfig {
                network_mode: Some(mode.into()),
                ..Default::default()
            }),
            network_settings: Some(NetworkSettings {
                ports: Some(
                    ports
                        .into_iter()
                        .map(|(key, binding)| {
                            (
                                key.to_string(),
                                binding.map(|(ip, port)| {
                                    vec![PortBinding {
                                        host_ip: Some(ip.into()),
                                        host_port: Some(port.into()),
                                    }]
                                }),
                            )
                        })
                        .collect(),
                ),
                networks: Some(HashMap::from([(
                    "scan".to_string(),
                    EndpointSettings {
                        ip_address: Some(String::new()),
                        global_ipv6_address: Some("fd00::7".into()),
                        ..Default::default()
                    },
                )])),
                ..Default::default()
            }),
            config: Some(ContainerConfig::default()),
            ..Default::default()
        }
    }

    #[test]
    fn names_that_are_not_docker_names_are_refused() {
        for good in ["agentc-sandbox-dev-1000-x", "0123abcd", "a.b_c"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "-x",
            "--privileged",
            "a/b",
            "../x",
            "a\0b",
            "a b",
            "x\n",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn published_ports_are_reached_on_the_loopback_address() {
        let inspect = inspect("default", vec![("8080/tcp", Some(("0.0.0.0", "49153")))]);
        let found = endpoint(&inspect, &sandbox(), 8080, Protocol::Tcp).unwrap();
        assert_eq!(found.to_string(), "127.0.0.1:49153");
        let error = endpoint(&inspect, &sandbox(), 9090, Protocol::Tcp).unwrap_err();
        assert!(error
            .with_hint()
            .to_string()
            .contains("neither publishes nor exposes port 9090/tcp"));
    }

    #[test]
    fn a_named_network_gives_the_container_address_in_brackets_for_ipv6() {
        let inspect = inspect("scan", vec![("8080/tcp", None)]);
        let found = endpoint(&inspect, &sandbox(), 8080, Protocol::Tcp).unwrap();
        assert_eq!(found.to_string(), "[fd00::7]:8080");
        assert_eq!(found.network.as_deref(), Some("scan"));
        let other = self::inspect("other", vec![("8080/tcp", None)]);
        let error = endpoint(&other, &sandbox(), 8080, Protocol::Tcp).unwrap_err();
        assert!(
            error
                .with_hint()
                .to_string()
                .contains("no address on its network other"),
            "{error}"
        );
        let none = self::inspect("none", vec![("8080/tcp", None)]);
        let error = endpoint(&none, &sandbox(), 8080, Protocol::Tcp).unwrap_err();
        assert!(
            error.with_hint().to_string().contains("without a network"),
            "{error}"
        );
    }

    #[test]
    fn ports_parse_with_an_optional_protocol() {
        assert_eq!(parse_port("8080").unwrap(), (8080, Protocol::Tcp));
        assert_eq!(parse_port("53/udp").unwrap(), (53, Protocol::Udp));
        assert!(parse_port("0").is_err());
        assert!(parse_port("80/sctp").is_err());
        assert!(parse_port("x").is_err());
    }
}
