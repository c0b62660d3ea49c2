//! `[network]` and `AGENTC_NETWORK`: the network a container joins (none for deny egress
//! without a gateway), the host gateway, published ports; their explanation and the
//! `network-named`, `host-gateway` and `port-public` findings.

use std::collections::BTreeSet;

use crate::check::Checker;
use crate::context::{env_origin, Resolver};
use crate::error::PolicyError;
use crate::explainer::{origin_words, Explainer};
use crate::finding::{FindingCode, Report};
use crate::keys;
use crate::overrides;
use crate::presets;
use crate::profile::{EgressMode, Profile};
use crate::rules::egress::outside;
use crate::spec::{
    ContainerSpec, ExposedPort, ExtraHost, HostTarget, LaunchKind, Network, Origin, Protocol,
    PublishedPort,
};
use crate::text::is_network_name;

/// Whether the profile's launches run with no network at all: deny egress without a gateway.
pub(crate) fn denies_network(profile: &Profile) -> bool {
    profile.egress.mode == EgressMode::Deny && profile.egress.gateway_host.is_none()
}

/// The network name, the published ports, and how they fit egress.
pub(crate) fn check(ck: &mut Checker, profile: &Profile) {
    let network = &profile.network;
    if let Some(name) = &network.name {
        let lower = name.to_ascii_lowercase();
        if lower.starts_with("container:") {
            ck.fail(
                "network.name",
                "network.name must not join another container's network",
                "name a user-defined network; sharing a container's network namespace would \
                 bypass the sandbox's egress policy",
            );
        } else if ["host", "none", "default"].contains(&lower.as_str()) {
            ck.fail(
                "network.name",
                format!("network.name {name:?} is a docker network mode, not a network"),
                "name a user-defined network (docker network create NAME); egress.mode = \
                 \"deny\" already gives no network",
            );
        } else if !is_network_name(name) {
            ck.fail(
                "network.name",
                format!("network.name {name:?} is not a docker network name"),
                "start with a letter or digit and use only A-Z, a-z, 0-9, _, . or -, at \
                 most 128 characters",
            );
        }
    }
    let mut seen = BTreeSet::new();
    let mut bound = BTreeSet::new();
    for (index, port) in network.publish.iter().enumerate() {
        let field = format!("network.publish[{index}]");
        if !seen.insert((port.number, port.protocol)) {
            ck.fail(
                &field,
                format!(
                    "{field} publishes {}/{} twice",
                    port.number,
                    port.protocol.as_str()
                ),
                "remove the duplicate entry",
            );
        } else if let Some(host_port) = port.host_port {
            if !bound.insert((port.host_address(), host_port, port.protocol)) {
                ck.fail(
                    &field,
                    format!(
                        "{field} binds host port {host_port}/{} on {} a second time",
                        port.protocol.as_str(),
                        port.host_address()
                    ),
                    "give each published port its own host port",
                );
            }
        }
        if port.binds_host() && network.name.is_some() {
            ck.fail_when(
                &["network.name"],
                &field,
                format!(
                    "{field} chooses where the host publishes {}/{}, but on a named network \
                     the sandbox's ports are exposed there, not published on the host",
                    port.number,
                    port.protocol.as_str()
                ),
                "write only the container port, or remove network.name",
            );
        }
    }
    if network.name.is_some() && denies_network(profile) {
        ck.fail_when(
            &["egress.mode", "egress.gateway_host"],
            "network.name",
            "network.name contradicts egress.mode = \"deny\" without a gateway",
            "deny without a gateway means no network at all; remove network.name, or set \
             egress.mode = \"allowlist\"",
        );
    }
}

impl Resolver<'_> {
    /// Network, host gateway and published ports of an agent or sandbox container.
    pub fn network(&mut self, container: &mut ContainerSpec) -> Result<(), PolicyError> {
        let network = &self.profile.network;
        if denies_network(self.profile) {
            container.network = Network::None;
            self.set(keys::NETWORK, self.field_origin("egress.mode"));
            if self.overrides.network.is_some() {
                self.set(keys::NETWORK_SUPERSEDED, env_origin(overrides::NETWORK));
            } else if network.name.is_some() {
                let origin = self.field_origin("network.name");
                self.set(keys::NETWORK_SUPERSEDED, origin);
            }
            if network.host_gateway {
                return Err(self.unlaunchable(
                    "network.host_gateway",
                    "host_gateway needs a network, but egress mode deny runs the container with none"
                        .to_string(),
                    "remove host_gateway, or use egress mode allowlist with the host listed",
                ));
            }
            if network.publish.is_empty() {
                return Ok(());
            }
            // "No egress, but reachable": the ports go to the relay-only egress companion
            // (`rules::egress::outside::relays_only`), which joins the container to an
            // isolated network with no way out.
        }
        let named = if let Some(name) = &self.overrides.network {
            Some((name.clone(), env_origin(overrides::NETWORK)))
        } else {
            network
                .name
                .as_ref()
                .map(|name| (name.clone(), self.field_origin("network.name")))
        };
        match &named {
            Some((name, origin)) => {
                container.network = Network::Named { name: name.clone() };
                self.set(keys::NETWORK, origin.clone());
                // Peers on the network reach the sandbox by its profile's name.
                container.network_aliases = vec![self.profile.name.clone()];
                self.set(keys::NETWORK_ALIASES, Origin::Default);
            }
            None => {
                container.network = Network::Default;
                self.set(keys::NETWORK, Origin::Default);
            }
        }
        if network.host_gateway {
            container.extra_hosts.push(ExtraHost {
                host: presets::HOST_GATEWAY_NAME.to_string(),
                target: HostTarget::HostGateway,
            });
            let origin = self.field_origin("network.host_gateway");
            self.set(keys::extra_host(presets::HOST_GATEWAY_NAME), origin);
        }
        if let (Some((name, _)), Some((index, port))) = (
            &named,
            network
                .publish
                .iter()
                .enumerate()
                .find(|(_, port)| port.binds_host()),
        ) {
            return Err(self.unlaunchable(
                &format!("network.publish[{index}]"),
                format!(
                    "network.publish[{index}] chooses where the host publishes {}/{}, but on \
                     the network {name} (from {}) the sandbox's ports are exposed there, not \
                     published on the host",
                    port.number,
                    port.protocol.as_str(),
                    overrides::NETWORK
                ),
                "unset AGENTC_NETWORK, or write only the container port",
            ));
        }
        if named.is_some() {
            // As the sandbox seed does: on a named network the container is reached at its
            // own address there, so its ports are exposed on that network, not published on
            // the host; `[network] name` and `AGENTC_NETWORK` alike.
            for (index, port) in network.publish.iter().enumerate() {
                container.exposed_ports.push(ExposedPort {
                    container_port: port.number,
                    protocol: port.protocol,
                });
                let origin = self.field_origin(&format!("network.publish[{index}]"));
                self.set(keys::port(port.number, port.protocol), origin);
            }
            return Ok(());
        }
        for (index, port) in network.publish.iter().enumerate() {
            container.ports.push(PublishedPort {
                container_port: port.number,
                protocol: port.protocol,
                host_ip: port.host_address(),
                host_port: port.host_port,
            });
            let origin = self.field_origin(&format!("network.publish[{index}]"));
            self.set(keys::port(port.number, port.protocol), origin);
        }
        Ok(())
    }
}

/// The network section, without the egress line (see [`crate::rules::egress`]).
pub(crate) fn explain(out: &mut Explainer, c: &ContainerSpec) {
    out.section("network");
    let network = match &c.network {
        Network::Default => "the default bridge".to_string(),
        Network::None => "none (loopback only)".to_string(),
        Network::Named { name } => format!("{name} (named)"),
    };
    out.item("network", network, keys::NETWORK);
    if let Some(origin) = out.origin(keys::NETWORK_SUPERSEDED) {
        let words = origin_words(origin);
        out.line(format!(
            "  not joined: the network from {words}, because egress mode deny allows none"
        ));
    }
    for host in &c.extra_hosts {
        let target = match &host.target {
            HostTarget::HostGateway => "the host gateway".to_string(),
            HostTarget::Ip { address } => address.to_string(),
        };
        out.item(
            &format!("host {}", host.host),
            target,
            &keys::extra_host(&host.host),
        );
    }
    for port in &c.ports {
        let host_port = match port.host_port {
            Some(port) => format!("port {port}"),
            None => "a free port the daemon picks".to_string(),
        };
        out.item(
            &format!("port {}/{}", port.container_port, port.protocol.as_str()),
            format!("published on {}, {host_port}", port.host_ip),
            &keys::port(port.container_port, port.protocol),
        );
    }
    for alias in &c.network_aliases {
        out.item(
            "alias",
            format!("{alias} (peers on the network reach it by this name)"),
            keys::NETWORK_ALIASES,
        );
    }
    for port in &c.exposed_ports {
        let words = outside::relay_words(c, port).unwrap_or_else(|| {
            "exposed on the named network, not published on the host: reached at the container's address there (`agentc port`)".to_string()
        });
        out.item(
            &format!("port {}/{}", port.container_port, port.protocol.as_str()),
            words,
            &keys::port(port.container_port, port.protocol),
        );
    }
}

/// What widens the sandbox here: the host gateway, published ports, a named network (agent
/// launches), and Decant off loopback.
pub(crate) fn widens(out: &Explainer, c: &ContainerSpec, items: &mut Vec<String>) {
    if matches!(out.spec.kind, LaunchKind::Run | LaunchKind::Sandbox) {
        for host in &c.extra_hosts {
            items.push(format!(
                "{} reaches the host  [{}]",
                host.host,
                out.words(&keys::extra_host(&host.host))
            ));
        }
        for port in &c.ports {
            let key = keys::port(port.container_port, port.protocol);
            items.push(format!(
                "published port {}/{} on {}  [{}]",
                port.container_port,
                port.protocol.as_str(),
                port.host_ip,
                out.words(&key)
            ));
        }
        items.extend(outside::relay_widens(c, |port| {
            out.words(&keys::port(port, Protocol::Tcp))
        }));
        // The isolated network of an egress proxy is the sandbox's own, shared with nothing.
        if let (Network::Named { name }, None) = (&c.network, &c.egress) {
            items.push(format!(
                "joins the named network {name}  [{}]",
                out.words(keys::NETWORK)
            ));
        }
    }
}

/// What agentc adds here (explain's "added by agentc"): deny egress removes the network; the
/// egress proxy relays published ports.
pub(crate) fn added_by_agentc(out: &Explainer, c: &ContainerSpec, notes: &mut Vec<String>) {
    outside::relay_note(c, notes);
    if matches!(out.spec.kind, LaunchKind::Run | LaunchKind::Sandbox) && c.network == Network::None
    {
        notes.push(
            "egress deny also removes the network, so the kernel enforces what the image's firewall promises"
                .to_string(),
        );
    }
}

/// The sandbox's ports its egress proxy publishes for it (an allowlist enforced outside, or
/// deny with published ports): each with the proxy's host binding and the sandbox's own port,
/// as the profile wrote it, so that a port published beyond this machine is reported as it is
/// without the proxy.
fn relayed_ports(c: &ContainerSpec) -> Vec<crate::spec::PublishedPort> {
    let Some(egress) = &c.egress else {
        return Vec::new();
    };
    let relays = egress.relays();
    egress
        .proxy
        .ports
        .iter()
        .map(|port| {
            let mut port = port.clone();
            if let Some(relay) = relays.iter().find(|r| r.listen == port.container_port) {
                port.container_port = relay.target.port();
            }
            port
        })
        .collect()
}

/// `network-named`, `host-gateway` and `port-public`.
pub(crate) fn findings(report: &mut Report, c: &ContainerSpec) {
    if let (Network::Named { name }, None) = (&c.network, &c.egress) {
        let at = report.field_of(keys::NETWORK, "network.name");
        report.push(
            FindingCode::NetworkNamed,
            at,
            format!("the container joins the named network {name}, shared with other containers"),
            "use a network that only this sandbox and what it must reach are on",
        );
    }
    for host in &c.extra_hosts {
        if host.target == HostTarget::HostGateway {
            let at = report.field_of(&keys::extra_host(&host.host), "network.host_gateway");
            report.push(
                FindingCode::HostGateway,
                at,
                format!("{} reaches the host's services", host.host),
                "remove network.host_gateway unless the sandbox must reach a host service",
            );
        }
    }
    let decant = report.spec.kind == LaunchKind::Decant;
    for port in c.ports.iter().cloned().chain(relayed_ports(c)) {
        if port.host_ip.is_loopback() {
            continue;
        }
        let at = if decant {
            let field = "decant.bind_address".to_string();
            let position = report.position(&field);
            (field, position).into()
        } else {
            report.field_of(
                &keys::port(port.container_port, port.protocol),
                "network.publish",
            )
        };
        report.push(
            FindingCode::PortPublic,
            at,
            format!(
                "port {}/{} is published on {}, reachable beyond this machine",
                port.container_port,
                port.protocol.as_str(),
                port.host_ip
            ),
            if decant {
                "set decant.bind_address = \"127.0.0.1\""
            } else {
                "publish on 127.0.0.1 only"
            },
        );
    }
}
