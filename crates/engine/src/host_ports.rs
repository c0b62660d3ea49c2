//! The host ports a launch chooses (`network.publish = ["18080:8080"]`): each is checked free on
//! this machine before anything is created, so that a port in use is an error naming the port
//! and, where this machine says, the process holding it, instead of a daemon failure after the
//! network and the egress proxy exist. Reads `/proc` (Linux); elsewhere the holder is unknown.
//! `agentc run` and a library caller's [`crate::session::SandboxClient::create`] check alike.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};

use agentc_policy::{ContainerSpec, Hint, Hinted, Origin, Protocol, PublishedPort};

use crate::{Engine, ExecError};

/// A host binding the launch asks for, with the profile field that chose it.
struct Chosen {
    address: IpAddr,
    port: u16,
    protocol: Protocol,
    field: String,
}

/// The bindings with a host port: the container's own, and those its egress proxy publishes
/// for it (the workload's published ports, relayed).
fn chosen(container: &ContainerSpec, origins: &BTreeMap<String, Origin>) -> Vec<Chosen> {
    let field_of = |container_port: u16, protocol: Protocol| {
        let key = format!("ports.{container_port}/{}", protocol.as_str());
        match origins.get(&key) {
            Some(Origin::Profile { field, .. }) => field.clone(),
            _ => format!("the published port {container_port}/{}", protocol.as_str()),
        }
    };
    let own = container
        .ports
        .iter()
        .map(|port| (port, port.container_port));
    let relayed = container.egress.iter().flat_map(|egress| {
        let relays = egress.relays();
        egress.proxy.ports.iter().filter_map(move |port| {
            let relay = relays
                .iter()
                .find(|relay| relay.listen == port.container_port)?;
            Some((port, relay.target.port()))
        })
    });
    own.chain(relayed)
        .filter_map(|(port, workload_port): (&PublishedPort, u16)| {
            Some(Chosen {
                address: port.host_ip,
                port: port.host_port?,
                protocol: port.protocol,
                field: field_of(workload_port, port.protocol),
            })
        })
        .collect()
}

/// Refuses the launch when a host port it chooses is in use on this machine
/// ([`ExecError::HostPortsInUse`], every port at once, each with the process holding it where
/// this machine says). Skipped when the engine is not on this machine (`remote`,
/// [`crate::engine::is_remote`]): its ports are another host's.
pub fn check_free(
    container: &ContainerSpec,
    origins: &BTreeMap<String, Origin>,
    engine: Engine,
    remote: bool,
) -> Result<(), ExecError> {
    if remote {
        return Ok(());
    }
    let mut errors = Vec::new();
    for chosen in chosen(container, origins) {
        let address = SocketAddr::new(chosen.address, chosen.port);
        let bound = match chosen.protocol {
            Protocol::Tcp => TcpListener::bind(address).map(drop),
            Protocol::Udp => UdpSocket::bind(address).map(drop),
        };
        // Only "in use" is a verdict: an address this machine lacks (no IPv6) is the daemon's
        // to judge.
        if matches!(&bound, Err(error) if error.kind() == ErrorKind::AddrInUse) {
            let holder = holder(chosen.port, chosen.protocol)
                .map(|(pid, name)| {
                    let container = if name == "docker-proxy" || name == "rootlessport" {
                        format!(
                            ": a container publishes it (`{} ps --filter publish={}` names it)",
                            engine.program(),
                            chosen.port
                        )
                    } else {
                        String::new()
                    };
                    format!(" by {name} (pid {pid}){container}")
                })
                .unwrap_or_default();
            // The first error says that nothing was created, on its own line before its hint.
            let created = if errors.is_empty() {
                "; nothing was created"
            } else {
                ""
            };
            errors.push(Hint::new(
                format!(
                    "{}: host port {}/{} on {} is in use{holder}{created}",
                    chosen.field,
                    chosen.port,
                    chosen.protocol.as_str(),
                    chosen.address,
                ),
                format!(
                    "stop what holds it, or choose another host port in {}",
                    chosen.field
                ),
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ExecError::HostPortsInUse { ports: errors })
    }
}

/// The message of [`ExecError::HostPortsInUse`]: each port's error, joined as `error:` lines,
/// every one but the last followed by its hint (the last one's is the error's own hint).
pub(crate) fn in_use(ports: &[Hint<String>]) -> String {
    let Some((last, earlier)) = ports.split_last() else {
        return String::new();
    };
    earlier
        .iter()
        .map(|port| format!("{}\nerror: ", port.with_hint()))
        .chain(std::iter::once(last.to_string()))
        .collect()
}

/// The process listening on `port` (TCP) or bound to it (UDP), from `/proc/net` and the
/// processes' descriptors; `None` when this machine does not say (another user's process).
fn holder(port: u16, protocol: Protocol) -> Option<(u32, String)> {
    let tables: &[&str] = match protocol {
        Protocol::Tcp => &["/proc/net/tcp", "/proc/net/tcp6"],
        Protocol::Udp => &["/proc/net/udp", "/proc/net/udp6"],
    };
    let inodes: Vec<String> = tables
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|text| socket_inodes(&text, port, protocol))
        .collect();
    if inodes.is_empty() {
        return None;
    }
    let wanted: Vec<String> = inodes
        .iter()
        .map(|inode| format!("socket:[{inode}]"))
        .collect();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(descriptors) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for descriptor in descriptors.flatten() {
            let Ok(target) = std::fs::read_link(descriptor.path()) else {
                continue;
            };
            if wanted
                .iter()
                .any(|socket| target.as_os_str() == socket.as_str())
            {
                let name = std::fs::read_to_string(entry.path().join("comm"))
                    .map(|name| name.trim().to_string())
                    .unwrap_or_else(|_| "a process".to_string());
                return Some((pid, name));
            }
        }
    }
    None
}

/// The inodes of the sockets in one `/proc/net/{tcp,udp}[6]` table bound to `port`: listening
/// ones for TCP (state `0A`), any for UDP.
fn socket_inodes(table: &str, port: u16, protocol: Protocol) -> Vec<String> {
    let port = format!("{port:04X}");
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local = fields.get(1)?;
            let state = fields.get(3)?;
            let inode = fields.get(9)?;
            let (_, local_port) = local.rsplit_once(':')?;
            let listening = protocol == Protocol::Udp || *state == "0A";
            (local_port == port && listening && *inode != "0").then(|| inode.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_policy::Hinted;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:46A0 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 424242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:46A0 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 434343 1 0000000000000000 20 4 30 10 -1
   2: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 100 0 0 10 0
";

    #[test]
    fn only_the_listening_socket_of_the_port_is_its_holder() {
        // 0x46A0 is 18080; the established connection on it and a socket without an inode
        // are not holders.
        assert_eq!(socket_inodes(TCP, 18080, Protocol::Tcp), ["424242"]);
        assert!(socket_inodes(TCP, 8080, Protocol::Tcp).is_empty());
        assert!(socket_inodes(TCP, 18081, Protocol::Tcp).is_empty());
        // For UDP every bound socket holds the port.
        assert_eq!(
            socket_inodes(TCP, 18080, Protocol::Udp),
            ["424242", "434343"]
        );
    }

    #[test]
    fn a_port_in_use_is_named_with_its_holder_and_a_free_one_passes() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().expect("bound").port();
        let mut container = ContainerSpec::empty("busybox:1.36");
        container.ports.push(PublishedPort {
            container_port: 8080,
            protocol: Protocol::Tcp,
            host_ip: "127.0.0.1".parse().expect("address"),
            host_port: Some(port),
        });
        let mut origins = BTreeMap::new();
        origins.insert(
            "ports.8080/tcp".to_string(),
            Origin::Profile {
                field: "network.publish[0]".to_string(),
                line: Some(9),
                column: Some(12),
            },
        );
        let error = check_free(&container, &origins, Engine::Docker, false).expect_err("in use");
        assert_eq!(error.exit_code(), 125);
        let failure = error.with_hint().to_string();
        let holder = format!("by {} (pid {})", test_process_name(), std::process::id());
        assert!(
            failure.starts_with(&format!(
                "network.publish[0]: host port {port}/tcp on 127.0.0.1 is in use {holder}"
            )),
            "{}",
            failure
        );
        // One error with its hint last, as every error is written.
        assert!(
            failure.contains("; nothing was created\n  hint: stop what holds it")
                && failure
                    .lines()
                    .last()
                    .unwrap_or_default()
                    .starts_with("  hint: "),
            "{}",
            failure
        );
        // A remote engine's ports are not this machine's.
        assert!(check_free(&container, &origins, Engine::Docker, true).is_ok());
        drop(listener);
        assert!(check_free(&container, &origins, Engine::Docker, false).is_ok());
    }

    fn test_process_name() -> String {
        std::fs::read_to_string("/proc/self/comm")
            .map(|name| name.trim().to_string())
            .unwrap_or_default()
    }
}
