//! Reading a container's inspect (`docker inspect`, or the Engine API's
//! `GET /containers/{id}/json`, which print the same document): the network it is attached to
//! and the addresses at which its published ports are reachable from the host.

use std::collections::BTreeMap;

use agentc_policy::Network;
use bollard::models::ContainerInspectResponse;

/// Reads the output of `docker inspect` (or `podman inspect`): a JSON array of containers.
/// `podman inspect` spells a few fields differently from Docker (an empty string where Docker
/// has a list, say); each field bollard's type cannot read is left out, named in the debug
/// log, rather than failing the whole document: agentc reads its name, state, labels,
/// configuration and networks, which Podman spells as Docker does.
pub fn read_inspect_list(text: &[u8]) -> Result<Vec<ContainerInspectResponse>, String> {
    let value: serde_json::Value =
        serde_json::from_slice(text).map_err(|error| error.to_string())?;
    let serde_json::Value::Array(items) = value else {
        return Err("not a JSON array of containers".to_string());
    };
    items.into_iter().map(read_inspect).collect()
}

/// One container's inspect, as [`read_inspect_list`] reads it.
pub fn read_inspect(mut value: serde_json::Value) -> Result<ContainerInspectResponse, String> {
    // Each pass removes one unreadable field; a document has far fewer than this.
    for _ in 0..64 {
        let error = match serde_path_to_error::deserialize(&value) {
            Ok(inspect) => return Ok(inspect),
            Err(error) => error,
        };
        let path = error.path().to_string();
        if !remove_path(&mut value, &path) {
            return Err(format!("{path}: {}", error.inner()));
        }
        log::debug!(
            "inspect: left out {path}, which bollard cannot read ({})",
            error.inner()
        );
    }
    Err("too many fields bollard cannot read".to_string())
}

/// Removes the field at a `serde_path_to_error` path (`HostConfig.Dns`, `Mounts[0].Mode`);
/// false when there is nothing to remove.
fn remove_path(value: &mut serde_json::Value, path: &str) -> bool {
    let mut segments: Vec<String> = Vec::new();
    for part in path.split('.') {
        match part.split_once('[') {
            Some((key, rest)) => {
                if !key.is_empty() {
                    segments.push(key.to_string());
                }
                for index in rest.split('[') {
                    segments.push(format!("[{}", index.trim_end_matches(']')));
                }
            }
            None => segments.push(part.to_string()),
        }
    }
    let Some(last) = segments.pop() else {
        return false;
    };
    let mut current = value;
    for segment in &segments {
        current = match segment.strip_prefix('[') {
            Some(index) => match index.parse::<usize>().ok().and_then(|i| current.get_mut(i)) {
                Some(next) => next,
                None => return false,
            },
            None => match current.get_mut(segment.as_str()) {
                Some(next) => next,
                None => return false,
            },
        };
    }
    match (last.strip_prefix('['), current) {
        (Some(index), serde_json::Value::Array(items)) => match index.parse::<usize>() {
            Ok(index) if index < items.len() => {
                items.remove(index);
                true
            }
            _ => false,
        },
        (None, serde_json::Value::Object(map)) => map.remove(&last).is_some(),
        _ => false,
    }
}

/// The network a container is attached to, from its inspect (`HostConfig.NetworkMode`).
pub fn network_of(inspect: &ContainerInspectResponse) -> Network {
    let mode = inspect
        .host_config
        .as_ref()
        .and_then(|host| host.network_mode.as_deref())
        .unwrap_or("default");
    match mode {
        "none" => Network::None,
        "" | "default" | "bridge" | "host" => Network::Default,
        mode if mode.starts_with("container:") => Network::Default,
        name => Network::Named {
            name: name.to_string(),
        },
    }
}

/// Where one published container port can be reached from the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedAddress {
    /// The container port and protocol, such as `8080/tcp`.
    pub container_port: String,
    /// `HOST:PORT`, IPv6 in brackets.
    pub address: String,
}

/// The addresses at which a container's ports are reachable: each host binding (a wildcard
/// host IP becomes the loopback address), then, on a named network, the container's IP on
/// that network with the container port for each port without a host binding (as the Strix
/// seed's `_resolve_exposed_port` does). A port relayed by an egress proxy has the proxy's
/// bindings ([`crate::companion::prepare::merge_relayed_ports`]), never the isolated network's address,
/// which the host cannot reach.
pub fn published_addresses(
    inspect: &ContainerInspectResponse,
    network: &Network,
) -> Vec<PublishedAddress> {
    let settings = inspect.network_settings.as_ref();
    let ports: BTreeMap<String, Vec<bollard::models::PortBinding>> = settings
        .and_then(|settings| settings.ports.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|(port, bindings)| (port, bindings.unwrap_or_default()))
        .collect();
    let mut addresses = Vec::new();
    for (port, bindings) in &ports {
        for binding in bindings {
            let Some(host_port) = binding.host_port.as_deref().filter(|p| !p.is_empty()) else {
                continue;
            };
            let host = match binding.host_ip.as_deref().unwrap_or("") {
                "" | "0.0.0.0" => "127.0.0.1".to_string(),
                "::" => "[::1]".to_string(),
                ip if ip.contains(':') => format!("[{ip}]"),
                ip => ip.to_string(),
            };
            let address = format!("{host}:{host_port}");
            let entry = PublishedAddress {
                container_port: port.clone(),
                address,
            };
            if !addresses.contains(&entry) {
                addresses.push(entry);
            }
        }
    }
    if let Network::Named { name } = network {
        let endpoint = settings
            .and_then(|settings| settings.networks.as_ref())
            .and_then(|networks| networks.get(name));
        let ip = endpoint.and_then(|endpoint| {
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
        if let Some(ip) = ip {
            let host = if ip.contains(':') {
                format!("[{ip}]")
            } else {
                ip
            };
            let unbound = ports.iter().filter(|(_, bindings)| {
                !bindings
                    .iter()
                    .any(|b| b.host_port.as_deref().is_some_and(|p| !p.is_empty()))
            });
            for (port, _) in unbound {
                let number = port.split('/').next().unwrap_or(port);
                addresses.push(PublishedAddress {
                    container_port: port.clone(),
                    address: format!("{host}:{number}"),
                });
            }
        }
    }
    addresses
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use bollard::models::{EndpointSettings, NetworkSettings, PortBinding};

    use super::*;

    #[test]
    fn podmans_inspect_is_read_leaving_out_what_bollard_cannot_read() {
        // Podman spells a few fields as Go's empty string where Docker has a list.
        let text = br#"[{"Id": "abc", "Name": "box", "HostConfig": {"NetworkMode": "none",
            "Dns": ""}, "Mounts": [{"Type": "bind", "Propagation": 7}],
            "Config": {"Labels": {"io.agentc.profile": "p"}}}]"#;
        let found = read_inspect_list(text).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name.as_deref(), Some("box"));
        let host = found[0].host_config.as_ref().unwrap();
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        assert!(host.dns.is_none());
        assert_eq!(found[0].mounts.as_ref().unwrap().len(), 1);
        assert!(read_inspect_list(b"{}").is_err());
    }

    #[test]
    fn network_mode_names_the_network() {
        let inspect = |mode: &str| ContainerInspectResponse {
            host_config: Some(bollard::models::HostConfig {
                network_mode: Some(mode.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(network_of(&inspect("none")), Network::None);
        assert_eq!(network_of(&inspect("default")), Network::Default);
        assert_eq!(network_of(&inspect("bridge")), Network::Default);
        assert_eq!(
            network_of(&inspect("scan-net")),
            Network::Named {
                name: "scan-net".into()
            }
        );
    }

    /// Host bindings as `(host_ip, host_port)`; `None` for an exposed, unpublished port.
    type Bindings<'a> = Option<Vec<(&'a str, &'a str)>>;

    fn inspect(
        ports: Vec<(&str, Bindings)>,
        network: Option<(&str, &str)>,
    ) -> ContainerInspectResponse {
        let ports = ports
            .into_iter()
            .map(|(port, bindings)| {
                let bindings = bindings.map(|bindings| {
                    bindings
                        .into_iter()
                        .map(|(ip, host_port)| PortBinding {
                            host_ip: Some(ip.into()),
                            host_port: Some(host_port.into()),
                        })
                        .collect()
                });
                (port.to_string(), bindings)
            })
            .collect();
        let networks = network.map(|(name, ip)| {
            HashMap::from([(
                name.to_string(),
                EndpointSettings {
                    ip_address: Some(ip.into()),
                    ..Default::default()
                },
            )])
        });
        ContainerInspectResponse {
            network_settings: Some(NetworkSettings {
                ports: Some(ports),
                networks,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn addresses(found: Vec<PublishedAddress>) -> Vec<(String, String)> {
        found
            .into_iter()
            .map(|found| (found.container_port, found.address))
            .collect()
    }

    #[test]
    fn host_bindings_become_loopback_addresses() {
        let inspect = inspect(
            vec![
                (
                    "8080/tcp",
                    Some(vec![("127.0.0.1", "49153"), ("0.0.0.0", "49154")]),
                ),
                ("7000/tcp", Some(vec![("::1", "7000"), ("::", "7001")])),
                ("9000/tcp", None),
            ],
            None,
        );
        assert_eq!(
            addresses(published_addresses(&inspect, &Network::Default)),
            vec![
                ("7000/tcp".into(), "[::1]:7000".into()),
                ("7000/tcp".into(), "[::1]:7001".into()),
                ("8080/tcp".into(), "127.0.0.1:49153".into()),
                ("8080/tcp".into(), "127.0.0.1:49154".into()),
            ]
        );
    }

    #[test]
    fn a_named_network_adds_the_container_ip() {
        let inspect = inspect(vec![("9000/tcp", None)], Some(("sandbox", "172.20.0.5")));
        let network = Network::Named {
            name: "sandbox".into(),
        };
        assert_eq!(
            addresses(published_addresses(&inspect, &network)),
            vec![("9000/tcp".into(), "172.20.0.5:9000".into())]
        );
        let other = Network::Named {
            name: "other".into(),
        };
        assert!(published_addresses(&inspect, &other).is_empty());
    }
}
