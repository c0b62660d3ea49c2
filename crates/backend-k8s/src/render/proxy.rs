//! The egress proxy of an allowlist: its hardened Pod, its Service and its NetworkPolicy, the
//! workload's rules towards it, its DNS, and the workload's proxy variables.

use std::collections::BTreeMap;

use agentc_egress::PROXY_BINARY;
use k8s_openapi::api::core::v1::{
    AppArmorProfile, Capabilities, Container, ContainerPort, Pod, PodSecurityContext, PodSpec,
    Probe, ResourceRequirements, SeccompProfile, SecurityContext, Service, ServicePort,
    ServiceSpec, Sysctl, TCPSocketAction, VolumeMount,
};
use k8s_openapi::api::networking::v1::{NetworkPolicyEgressRule, NetworkPolicyIngressRule};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::context::Renderer;
use super::labels::{LABEL_KIND, LABEL_MANAGED_BY, LABEL_NAME, LABEL_PROFILE};
use super::network::NetworkPlan;
use crate::egress::{self, DNS_PORT, PROXY_PORT, PROXY_UID};
use crate::error::RenderError;
use crate::Object;

/// The egress proxy's container in its pod.
pub const PROXY_CONTAINER: &str = "egress-proxy";

/// The egress proxy Pod's volume of its audit files ([`agentc_egress::audit::AUDIT_DIR`]).
pub const AUDIT_VOLUME: &str = "egress-audit";

impl Renderer<'_> {
    /// The egress proxy of an allowlist: its Pod, its Service, its NetworkPolicy, the
    /// workload's rules towards it and the workload's proxy variables.
    pub(super) fn render_proxy(
        &mut self,
        plan: &mut NetworkPlan,
        base: &str,
        pod_labels: &BTreeMap<String, String>,
        workload: &BTreeMap<String, String>,
    ) {
        let policy = &self.options.egress;
        let mut valid = true;
        // Each entry is one `--allow=` word here, parsed when the profile was loaded.
        for (index, host) in policy.hosts.iter().enumerate() {
            if let Err(refusal) = host.single() {
                valid = false;
                let text = host.text();
                let hint = match text.strip_prefix('.') {
                    Some(suffix) => format!("write \"*.{suffix}\" to allow its subdomains"),
                    None => "write host, host:port, *.suffix or *.suffix:port".to_string(),
                };
                self.refuse(
                    format!("egress.hosts[{index}]"),
                    format!(
                        "{text:?} is not a host the egress proxy can allow: {}",
                        refusal.reason
                    ),
                    &hint,
                );
            }
        }
        let Some(image) = self.options.egress_proxy_image.clone() else {
            self.errors.push(RenderError::MissingOption {
                field: "egress.hosts".to_string(),
                message: "an egress allowlist is enforced by agentc's egress proxy, whose image \
                          was not given"
                    .to_string(),
                hint: format!(
                    "pass --egress-proxy-image REF: the image `agentc egress-proxy image` builds \
                     (the agentc binary at {PROXY_BINARY}), pushed where the cluster pulls from"
                ),
            });
            return;
        };
        if !valid {
            return;
        }
        let held = self
            .held_credentials()
            .map(|companion| self.held_keys(companion));
        // The profile's CA for the upstreams: a ConfigMap of the rendering (no Pod mounts a
        // host file), refused here before anything else is rendered when it cannot be.
        let ca_field = self.upstream_ca_field(held.as_ref().map_or(&[], |keys| &keys.args));
        if ca_field.is_some() && self.options.upstream_ca.is_empty() {
            let field = ca_field.clone().unwrap_or_default();
            let _ = self.render_upstream_ca(&field, base, ObjectMeta::default());
            return;
        }
        let hosts = policy.allowed();
        let mut command = match egress::egress_proxy_argv(
            &hosts,
            &policy.allow_cidrs,
            &policy.allow_ech,
            policy.wildcard_names_per_minute,
            policy.upstream.as_ref(),
        ) {
            Ok(command) => command,
            Err(error) => {
                let field = match &error {
                    agentc_egress::EgressError::Cidr { .. } => "egress.allow_cidrs",
                    agentc_egress::EgressError::HostSpec { spec, .. }
                        if policy.allow_ech.contains(spec) =>
                    {
                        "egress.allow_ech"
                    }
                    _ => "egress.hosts",
                };
                self.refuse(
                    field,
                    format!("the egress proxy refuses its configuration: {error}"),
                    "write host, host:port, *.suffix or *.suffix:port in egress.hosts, and \
                     address ranges as CIDRs",
                );
                return;
            }
        };
        // What the proxy Pod connects to: the allowlist's addresses and the upstream proxy's.
        let mut reached = hosts;
        if let Some(upstream) = &policy.upstream {
            reached.push(upstream.spec.clone());
            reached.extend(upstream.http_spec.clone());
            let http_by_name = upstream.http_address.as_ref().is_some_and(|address| {
                let host = address
                    .rsplit_once(':')
                    .map_or(address.as_str(), |(h, _)| h);
                agentc_egress::host::ip_target(host).is_none()
            });
            if agentc_egress::host::ip_target(&upstream.host).is_none() || http_by_name {
                self.notes.approximation(
                    "egress-upstream",
                    upstream.field,
                    format!(
                        "the egress proxy Pod chains through the upstream proxy {}{} as on \
                         Docker, but its NetworkPolicy cannot name a host: it reaches the \
                         upstream at a public address, or in a range of egress.allow_cidrs",
                        upstream.address,
                        upstream
                            .http_address
                            .as_ref()
                            .map(|http| format!(" (plain HTTP through {http})"))
                            .unwrap_or_default()
                    ),
                );
            }
        }
        let mut proxy_env = None;
        // The proxy's audit files (`--audit-dir`): an `emptyDir` of its own Pod, on disk,
        // limited to their bound (the workload's Pod never mounts it).
        let mut proxy_volumes = Some(vec![k8s_openapi::api::core::v1::Volume {
            name: AUDIT_VOLUME.to_string(),
            empty_dir: Some(k8s_openapi::api::core::v1::EmptyDirVolumeSource {
                medium: None,
                size_limit: Some(Quantity(format!(
                    "{}Mi",
                    (agentc_egress::audit::DISK_BOUND >> 20) + 8
                ))),
            }),
            ..Default::default()
        }]);
        let mut proxy_mounts = Some(vec![VolumeMount {
            name: AUDIT_VOLUME.to_string(),
            mount_path: agentc_egress::audit::AUDIT_DIR.to_string(),
            ..VolumeMount::default()
        }]);
        if let Some(keys) = held {
            // The credential words follow the allowlist and come before the upstream's, as in
            // Docker's proxy command.
            let at = command
                .iter()
                .position(|word| word.starts_with("--upstream"))
                .unwrap_or(command.len());
            command.splice(at..at, keys.args);
            proxy_env = Some(keys.env);
            plan.held_secrets = keys.secrets;
            // The proxy writes its CA's files (`--ca-dir`) on a read-only root.
            proxy_volumes
                .get_or_insert_with(Vec::new)
                .push(super::volumes::memory_volume(
                    super::credentials::CA_VOLUME,
                    Some(4 << 20),
                ));
            proxy_mounts.get_or_insert_with(Vec::new).push(VolumeMount {
                name: super::credentials::CA_VOLUME.to_string(),
                mount_path: agentc_egress::credential::CA_DIR.to_string(),
                ..VolumeMount::default()
            });
        }
        // The upstreams' credentials (a proxy URL's `user:password`): keys of the profile's
        // Secret, by name, as the keys the proxy holds.
        if let Some(upstream) = &policy.upstream {
            let (auth, http_auth) = upstream.auth_variables();
            let secret = super::env::secret_name(&self.spec.profile);
            for name in auth.into_iter().chain(http_auth) {
                proxy_env
                    .get_or_insert_with(Vec::new)
                    .push(super::env::env_var(
                        name,
                        &agentc_policy::EnvValue::Secret { required: true },
                        &secret,
                    ));
                self.notes.cluster_duty(
                    "secret",
                    upstream.field,
                    format!(
                        "the egress proxy Pod sends the upstream proxy the credentials of \
                         {}'s URL, read from the key {name} of the Secret {secret} (its \
                         user:password, percent-decoded); the rendering never holds them",
                        if name == agentc_policy::UPSTREAM_HTTP_AUTH_ENV {
                            "proxy.http"
                        } else {
                            upstream.field
                        }
                    ),
                );
            }
        }
        let proxy_name = format!("{base}-egress");
        let upstream_ca_name = proxy_name.clone();
        let mut proxy_labels = BTreeMap::from([
            (LABEL_NAME.to_string(), base.to_string()),
            (LABEL_KIND.to_string(), "egress-proxy".to_string()),
            (LABEL_MANAGED_BY.to_string(), "agentc".to_string()),
        ]);
        if let Some(profile) = pod_labels.get(LABEL_PROFILE) {
            proxy_labels.insert(LABEL_PROFILE.to_string(), profile.clone());
        }
        let proxy_selector = BTreeMap::from([
            (LABEL_NAME.to_string(), base.to_string()),
            (LABEL_KIND.to_string(), "egress-proxy".to_string()),
        ]);
        let metadata = |name: &str| ObjectMeta {
            name: Some(name.to_string()),
            namespace: self.options.namespace.clone(),
            labels: Some(proxy_labels.clone()),
            ..ObjectMeta::default()
        };
        if let Some(field) = &ca_field {
            let Some(ca) = self.render_upstream_ca(field, &upstream_ca_name, metadata(&proxy_name))
            else {
                return;
            };
            // One `--upstream-ca` (Docker's proxy command carries it among the credential
            // words when the proxy holds keys), before the upstream's words.
            command.retain(|word| !word.starts_with("--upstream-ca="));
            let at = command
                .iter()
                .position(|word| word.starts_with("--upstream=") || word == "--upstream-all")
                .unwrap_or(command.len());
            command.insert(at, ca.arg);
            plan.proxy.push(ca.object);
            proxy_volumes.get_or_insert_with(Vec::new).push(ca.volume);
            proxy_mounts.get_or_insert_with(Vec::new).push(ca.mount);
        }
        plan.proxy.push(Object::NetworkPolicy(egress::policy(
            metadata(&proxy_name),
            &proxy_selector,
            vec![NetworkPolicyIngressRule {
                from: Some(vec![egress::pods(workload)]),
                ports: Some(egress::proxy_ports()),
            }],
            egress::proxy_upstream_rules(&policy.allow_cidrs, &reached),
        )));
        let service_port = |name: &str, port: u16, protocol: &str| ServicePort {
            name: Some(name.to_string()),
            port: i32::from(port),
            protocol: Some(protocol.to_string()),
            target_port: Some(IntOrString::Int(i32::from(port))),
            ..ServicePort::default()
        };
        plan.proxy.push(Object::Service(Service {
            metadata: metadata(&proxy_name),
            spec: Some(ServiceSpec {
                cluster_ip: self.options.egress_proxy_ip.map(|ip| ip.to_string()),
                selector: Some(proxy_selector.clone()),
                ports: Some(vec![
                    service_port("proxy", PROXY_PORT, "TCP"),
                    service_port("dns", DNS_PORT, "UDP"),
                    service_port("dns-tcp", DNS_PORT, "TCP"),
                ]),
                ..ServiceSpec::default()
            }),
            status: None,
        }));
        let amounts = BTreeMap::from([
            ("cpu".to_string(), Quantity("500m".to_string())),
            ("memory".to_string(), Quantity("256Mi".to_string())),
        ]);
        let probe = Probe {
            tcp_socket: Some(TCPSocketAction {
                port: IntOrString::Int(i32::from(PROXY_PORT)),
                host: None,
            }),
            period_seconds: Some(10),
            ..Probe::default()
        };
        let container_port = |name: &str, port: u16, protocol: &str| ContainerPort {
            name: Some(name.to_string()),
            container_port: i32::from(port),
            protocol: Some(protocol.to_string()),
            ..ContainerPort::default()
        };
        plan.proxy.push(Object::Pod(Box::new(Pod {
            metadata: metadata(&proxy_name),
            spec: Some(PodSpec {
                automount_service_account_token: Some(false),
                enable_service_links: Some(false),
                host_network: Some(false),
                host_pid: Some(false),
                host_ipc: Some(false),
                restart_policy: Some("Always".to_string()),
                security_context: Some(PodSecurityContext {
                    run_as_non_root: Some(true),
                    run_as_user: Some(PROXY_UID),
                    run_as_group: Some(PROXY_UID),
                    seccomp_profile: Some(SeccompProfile {
                        type_: "RuntimeDefault".to_string(),
                        localhost_profile: None,
                    }),
                    app_armor_profile: Some(AppArmorProfile {
                        type_: "RuntimeDefault".to_string(),
                        localhost_profile: None,
                    }),
                    sysctls: Some(vec![Sysctl {
                        name: "net.ipv4.ip_unprivileged_port_start".to_string(),
                        value: DNS_PORT.to_string(),
                    }]),
                    ..PodSecurityContext::default()
                }),
                volumes: proxy_volumes,
                containers: vec![Container {
                    name: PROXY_CONTAINER.to_string(),
                    image: Some(image.clone()),
                    command: Some(command),
                    env: proxy_env,
                    volume_mounts: proxy_mounts,
                    ports: Some(vec![
                        container_port("proxy", PROXY_PORT, "TCP"),
                        container_port("dns", DNS_PORT, "UDP"),
                        container_port("dns-tcp", DNS_PORT, "TCP"),
                    ]),
                    resources: Some(ResourceRequirements {
                        limits: Some(amounts.clone()),
                        requests: Some(amounts),
                        claims: None,
                    }),
                    readiness_probe: Some(probe.clone()),
                    liveness_probe: Some(probe),
                    security_context: Some(SecurityContext {
                        allow_privilege_escalation: Some(false),
                        privileged: Some(false),
                        read_only_root_filesystem: Some(true),
                        capabilities: Some(Capabilities {
                            drop: Some(vec!["ALL".to_string()]),
                            add: None,
                        }),
                        ..SecurityContext::default()
                    }),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
            status: None,
        })));
        plan.egress.push(NetworkPolicyEgressRule {
            to: Some(vec![egress::pods(&proxy_selector)]),
            ports: Some(egress::proxy_ports()),
        });
        let address = match self.options.egress_proxy_ip {
            Some(ip) => {
                plan.dns = Some(ip.to_string());
                self.notes.approximation(
                    "egress-dns",
                    "--egress-proxy-ip",
                    format!(
                        "the pod's only resolver is the egress proxy's DNS stub at {ip} \
                         (dnsPolicy None, the Service's fixed clusterIP): as with Docker's \
                         egress proxy, no name resolves except through it"
                    ),
                );
                self.notes.cluster_duty(
                    "egress-proxy-ip",
                    "--egress-proxy-ip",
                    format!(
                        "{ip} must be a free address of the cluster's Service range, else the \
                         API server refuses the proxy's Service"
                    ),
                );
                match ip {
                    std::net::IpAddr::V4(_) => ip.to_string(),
                    std::net::IpAddr::V6(_) => format!("[{ip}]"),
                }
            }
            None => {
                plan.egress.push(egress::cluster_dns_rule());
                self.notes.approximation(
                    "egress-dns",
                    "egress.hosts",
                    format!(
                        "the pod resolves names through the cluster DNS, which it needs to find \
                         the proxy's Service {proxy_name}; the cluster DNS forwards other names \
                         upstream, so DNS queries remain a narrow channel out, as through \
                         Docker's resolver (pass --egress-proxy-ip to close it)"
                    ),
                );
                proxy_name.clone()
            }
        };
        if let Some(network) = self.options.egress.outside_network.clone() {
            self.notes.approximation(
                "egress-outside-network",
                "egress.outside_network",
                format!(
                    "the Docker network {network} the proxy reaches out through has no pod \
                     equivalent: the proxy Pod reaches out through the pod network, to public \
                     addresses and the allowed ranges its NetworkPolicy lists"
                ),
            );
        }
        if self.held_credentials().is_some() {
            plan.ca_fetch = Some((image, format!("{address}:{PROXY_PORT}")));
        }
        let url = format!("http://{address}:{PROXY_PORT}");
        for name in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
            plan.env.push((name.to_string(), url.clone()));
        }
        for name in ["NO_PROXY", "no_proxy"] {
            plan.env
                .push((name.to_string(), "localhost,127.0.0.1,::1".to_string()));
        }
        // The entries as the profile writes them, then the endpoints' specs.
        let allows: Vec<&str> = policy
            .hosts
            .iter()
            .map(|host| host.text())
            .chain(policy.endpoints.iter().map(|e| e.spec.as_str()))
            .collect();
        self.notes.approximation(
            "egress-proxy",
            "egress.hosts",
            format!(
                "the allowlist is enforced outside the workload: the pod may reach only the \
                 egress proxy {proxy_name} (Service and Pod, {PROXY_PORT}/TCP and {DNS_PORT}), \
                 which allows {}; HTTP_PROXY and HTTPS_PROXY point at it",
                allows.join(", ")
            ),
        );
        self.notes.cluster_duty(
            "egress-proxy-image",
            "--egress-proxy-image",
            format!(
                "the egress proxy image must hold the agentc binary at {PROXY_BINARY}, as the \
                 image `agentc egress-proxy image` builds does, and be pullable by the cluster"
            ),
        );
    }
}
