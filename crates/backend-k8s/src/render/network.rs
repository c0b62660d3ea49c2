//! The workload's network: its NetworkPolicy rules by network and egress mode, host aliases,
//! published ports as `containerPort`s, and the refusals of the host gateway and the ssh
//! egress gateway. An allowlist's egress proxy is [`super::proxy`]'s.

use std::collections::BTreeMap;

use agentc_policy::{ExtraHost, HostTarget, Network, Protocol, PublishedPort};
use k8s_openapi::api::core::v1::{Container, ContainerPort, HostAlias, PodSpec};
use k8s_openapi::api::networking::v1::{NetworkPolicyEgressRule, NetworkPolicyIngressRule};

use super::context::Renderer;
use super::labels::{selector_labels, LABEL_NETWORK};
use crate::egress::{self, EgressMode};
use crate::names;
use crate::Object;

/// What the network helpers decide for the workload.
pub(super) struct NetworkPlan {
    /// The workload's NetworkPolicy rules (no rules: deny).
    pub(super) ingress: Vec<NetworkPolicyIngressRule>,
    pub(super) egress: Vec<NetworkPolicyEgressRule>,
    /// Extra labels of the workload pod.
    pub(super) labels: BTreeMap<String, String>,
    /// The egress proxy's objects, when the allowlist needs it.
    pub(super) proxy: Vec<Object>,
    /// Proxy variables for the workload.
    pub(super) env: Vec<(String, String)>,
    /// The workload's only nameserver (the egress proxy's fixed address), if any.
    pub(super) dns: Option<String>,
    /// The Secret's keys the egress proxy Pod reads (the keys it holds for the workload).
    pub(super) held_secrets: Vec<String>,
    /// When the proxy holds keys: its image and `host:port`, for the init container that
    /// fetches its launch CA ([`Renderer::render_ca_fetch`]).
    pub(super) ca_fetch: Option<(String, String)>,
}

impl Renderer<'_> {
    /// `--network`, `--add-host` and `--publish`, with the profile's egress policy: the
    /// workload's NetworkPolicy, `hostAliases`, `containerPorts`, and the egress proxy.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn render_network(
        &mut self,
        pod: &mut PodSpec,
        main: &mut Container,
        network: &Network,
        extra_hosts: &[ExtraHost],
        ports: &[PublishedPort],
        base: &str,
        pod_labels: &BTreeMap<String, String>,
    ) -> NetworkPlan {
        let mut plan = NetworkPlan {
            ingress: Vec::new(),
            egress: Vec::new(),
            labels: BTreeMap::new(),
            proxy: Vec::new(),
            env: Vec::new(),
            dns: None,
            held_secrets: Vec::new(),
            ca_fetch: None,
        };
        self.notes.cluster_duty(
            "network-policy",
            "egress.mode",
            "NetworkPolicy is enforced only by a CNI plugin that implements it (Calico, Cilium, \
             ...): without one the pod reaches everything"
                .to_string(),
        );
        let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for ExtraHost { host, target } in extra_hosts {
            match target {
                HostTarget::HostGateway => {
                    let field = self.field(&format!("extra_hosts.{host}"));
                    self.refuse(
                        field,
                        format!("{host} -> host-gateway has no pod equivalent: a pod has no host gateway"),
                        "remove network.host_gateway; reach host services through a Service",
                    );
                }
                HostTarget::Ip { address } => aliases
                    .entry(address.to_string())
                    .or_default()
                    .push(host.clone()),
            }
        }
        if !aliases.is_empty() {
            pod.host_aliases = Some(
                aliases
                    .into_iter()
                    .map(|(ip, hostnames)| HostAlias {
                        ip,
                        hostnames: Some(hostnames),
                    })
                    .collect(),
            );
        }
        let mut container_ports = Vec::new();
        for PublishedPort {
            container_port,
            protocol,
            host_ip,
            host_port,
        } in ports
        {
            let key = format!("ports.{container_port}/{}", protocol.as_str());
            let field = match self.spec.origins.get(&key) {
                Some(_) => self.field(&key),
                None => self.field("ports"),
            };
            container_ports.push(ContainerPort {
                container_port: i32::from(*container_port),
                protocol: Some(match protocol {
                    Protocol::Tcp => "TCP".to_string(),
                    Protocol::Udp => "UDP".to_string(),
                }),
                ..ContainerPort::default()
            });
            let host = match host_port {
                Some(port) => format!("{host_ip}:{port}"),
                None => format!("{host_ip} on a free port"),
            };
            let reach = match protocol {
                Protocol::Tcp => format!(
                    "reach it with kubectl port-forward {container_port}, which listens on \
                     localhost only"
                ),
                Protocol::Udp => "kubectl port-forward carries TCP only, so it is not reachable \
                                  from outside the pod (stricter)"
                    .to_string(),
            };
            self.notes.approximation(
                "published-port",
                field,
                format!(
                    "port {container_port}/{} is published on {host} by Docker; here it is a \
                     containerPort with no hostPort and ingress is denied: {reach}",
                    protocol.as_str()
                ),
            );
        }
        if !container_ports.is_empty() {
            main.ports = Some(container_ports);
        }

        let workload = selector_labels(base, pod_labels);
        match network {
            Network::None => {
                self.notes.approximation(
                    "network-none",
                    self.field("network"),
                    "--network=none: a pod always has a network interface; a NetworkPolicy \
                     denies all its ingress and egress"
                        .to_string(),
                );
                return plan;
            }
            Network::Named { name } => {
                let field = self.field("network");
                let value = names::label_value_for(name);
                let peer = BTreeMap::from([(LABEL_NETWORK.to_string(), value.clone())]);
                plan.labels = peer.clone();
                plan.ingress.push(NetworkPolicyIngressRule {
                    from: Some(vec![egress::pods(&peer)]),
                    ports: None,
                });
                plan.egress.push(NetworkPolicyEgressRule {
                    to: Some(vec![egress::pods(&peer)]),
                    ports: None,
                });
                self.notes.approximation(
                    "network-named",
                    field,
                    format!(
                        "Docker network {name}: pods labelled {LABEL_NETWORK}={value} in the \
                         namespace may reach each other on any port"
                    ),
                );
            }
            Network::Default => {}
        }
        let policy = &self.options.egress;
        if policy.gateway {
            self.refuse(
                "egress.gateway_host",
                "the ssh egress gateway is set up by the agent image's entrypoint as root, which \
                 a restricted Pod cannot do",
                "use egress.mode = \"allowlist\" with egress.hosts (the egress proxy) for the \
                 kubernetes backend",
            );
            return plan;
        }
        match policy.mode {
            EgressMode::Deny => {
                // resolve gives deny mode no network; a spec reaching here still gets no egress.
            }
            EgressMode::Unrestricted => {
                plan.egress.push(egress::public_internet_rule());
                plan.egress.push(egress::cluster_dns_rule());
                self.notes.approximation(
                    "egress-unrestricted",
                    "egress.mode",
                    format!(
                        "egress mode unrestricted, reported as on Docker; here the pod reaches \
                         public addresses and the cluster DNS only, not other pods, private \
                         ranges or the cloud metadata address ({}; {})",
                        egress::NON_PUBLIC_V4.join(", "),
                        egress::NON_PUBLIC_V6.join(", ")
                    ),
                );
            }
            EgressMode::Allowlist if policy.hosts.is_empty() => {
                self.notes.approximation(
                    "egress-allowlist-empty",
                    "egress.hosts",
                    "egress allowlist with no hosts: nothing may be reached, so no egress proxy \
                     is rendered and the NetworkPolicy denies all egress"
                        .to_string(),
                );
            }
            EgressMode::Allowlist => self.render_proxy(&mut plan, base, pod_labels, &workload),
        }
        plan
    }
}
