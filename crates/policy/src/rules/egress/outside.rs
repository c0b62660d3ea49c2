//! `egress.enforce = "outside"`: the checks of the fields that only the egress proxy reads
//! (`enforce`, `outside_network`, `allow_cidrs`, `allow_ech`, the host specs), and the companion the
//! resolver adds to a launch: the isolated network and the proxy container
//! ([`crate::EgressSpec`]), the workload's DNS server and proxy variables, and the relays of
//! its published ports (a workload on an internal network cannot publish: the proxy publishes
//! each `network.publish` port on the host and relays it to the workload's fixed address);
//! with what `agentc explain` says of those relays.

use std::collections::BTreeMap;
use std::net::IpAddr;

use agentc_egress::HostSpec;

use crate::check::Checker;
use crate::context::Resolver;
use crate::document::LoadedProfile;
use crate::egress_hosts::EgressHost;
use crate::error::PolicyError;
use crate::keys;
use crate::overrides;
use crate::profile::{EgressEnforce, EgressMode, Profile};
use crate::spec::{
    isolated_subnet, proxy_address, workload_address, ContainerSpec, EgressSpec, EnvValue, EnvVar,
    ExposedPort, IsolatedNetwork, Mount, MountSource, Network, Origin, Protocol, PublishedPort,
    Resources, AUDIT_DIR_TARGET, KIND_EGRESS_PROXY, LABEL_EGRESS_FOR, LABEL_KIND, LABEL_PROFILE,
    PROXY_DNS_PORT, PROXY_IMAGE_PLACEHOLDER, PROXY_PORT, RELAY_PORT_BASE,
};
use crate::text::is_network_name;

use super::upstream::{credentials, upstream_address, Chained};

/// The variables pointing the workload at the proxy (a convenience: the isolated network is
/// what enforces the allowlist).
pub const PROXY_VARIABLES: [&str; 4] = ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"];
/// The variables naming what bypasses the proxy.
pub const NO_PROXY_VARIABLES: [&str; 2] = ["NO_PROXY", "no_proxy"];
/// The proxy container's memory limit (and memory plus swap: no swap).
const PROXY_MEMORY: u64 = 256 * 1024 * 1024;
/// The proxy container's CPU quota, in billionths of a CPU.
const PROXY_NANO_CPUS: u64 = 1_000_000_000;
/// The proxy container's process limit.
const PROXY_PIDS: u32 = 64;

/// Whether the profile's launches get agentc's egress proxy: an allowlist with hosts, enforced
/// outside, without an ssh gateway.
pub(crate) fn enforced_outside(profile: &Profile) -> bool {
    let egress = &profile.egress;
    egress.mode == EgressMode::Allowlist
        && egress.enforce == EgressEnforce::Outside
        && !egress.hosts.is_empty()
        && egress.gateway_host.is_none()
}

/// Whether the profile denies egress but publishes ports ("no egress, but reachable"): its
/// launches get the egress companion with an empty allowlist, whose proxy relays the ports to
/// the container on its isolated network and refuses every request out.
pub(crate) fn relays_only(profile: &Profile) -> bool {
    profile.egress.mode == EgressMode::Deny
        && profile.egress.gateway_host.is_none()
        && !profile.network.publish.is_empty()
}

/// An endpoint the profile names outside `egress.hosts` (a provider `endpoint`, Langfuse's
/// `base_url`): the proxy allows its host at its own port, since the profile says the sandbox
/// talks to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The field naming it (`provider.endpoint`).
    pub field: &'static str,
    /// The proxy's `--allow` spec as the URL gives it: `host:port`, `10.1.2.3:8000`,
    /// `[fd00::1]:443`.
    pub spec: String,
    /// That spec, parsed.
    pub parsed: HostSpec,
}

/// The `host:port` of an http(s) URL (its scheme's port when it names none), as an allowlist
/// spec; `None` for a URL that does not parse or has no host.
pub(crate) fn url_spec(url: &str) -> Option<String> {
    let url = url::Url::parse(url.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let host = url.host_str()?.to_ascii_lowercase();
    let port = url.port_or_known_default()?;
    Some(format!("{host}:{port}"))
}

/// The endpoints the profile names that the allowlist `hosts` does not already allow at their
/// port, each once, in field order: what the proxy allows beyond `egress.hosts`.
pub(crate) fn named_endpoints(loaded: &LoadedProfile) -> Vec<Endpoint> {
    let profile = &loaded.profile;
    let mut urls: Vec<(&'static str, &str)> = Vec::new();
    if let Some(endpoint) = profile
        .provider
        .as_ref()
        .and_then(|p| p.endpoint.as_deref())
    {
        urls.push(("provider.endpoint", endpoint));
    }
    if profile.langfuse.enabled {
        if let Some(url) = profile.langfuse.base_url.as_deref() {
            urls.push(("langfuse.base_url", url));
        }
    }
    let policy = agentc_egress::Policy::new(EgressHost::allowed(loaded.egress_hosts()), Vec::new());
    let mut endpoints: Vec<Endpoint> = Vec::new();
    for (field, url) in urls {
        let Some(spec) = url_spec(url) else { continue };
        let Ok(parsed) = HostSpec::parse(&spec) else {
            continue;
        };
        let host = parsed.to_string();
        let (host, port) = match host.rsplit_once(':') {
            Some((host, port)) => (host.to_string(), port.parse().unwrap_or(0)),
            None => continue,
        };
        if policy.decide_name(&host, port).is_ok() || endpoints.iter().any(|e| e.spec == spec) {
            continue;
        }
        endpoints.push(Endpoint {
            field,
            spec,
            parsed,
        });
    }
    endpoints
}

/// The decision core of the profile's egress proxy as its command line builds it: the specs
/// of `egress.hosts` and of the endpoints the profile names, `egress.allow_cidrs` and the
/// upstream proxy with what it carries (`--upstream-all`, `no_proxy`); values that do not
/// parse are left out (refused by field when the profile is checked). `None` where no proxy
/// enforces the allowlist.
pub(crate) fn proxy_policy(loaded: &LoadedProfile) -> Option<agentc_egress::Policy> {
    let profile = &loaded.profile;
    if !enforced_outside(profile) {
        return None;
    }
    let hosts = proxy_allowlist(loaded);
    let cidrs: Vec<&str> = profile
        .egress
        .allow_cidrs
        .iter()
        .map(|cidr| cidr.trim())
        .filter(|cidr| agentc_egress::Cidr::parse(cidr).is_ok())
        .collect();
    let config = agentc_egress::Config::from_specs("127.0.0.1:3128", None, hosts, &cidrs).ok()?;
    let config = match chained(loaded) {
        Some(chained) => config
            .with_upstream(&chained.upstream(), chained.all, &chained.direct)
            .ok()?,
        None => config,
    };
    Some(config.policy())
}

/// The host specs the egress proxy allows (its `--allow=` words): those of `egress.hosts`
/// ([`LoadedProfile::egress_hosts`]), then the endpoints the profile names; an entry that does
/// not parse is left out (refused by field when the profile is checked).
fn proxy_allowlist(loaded: &LoadedProfile) -> Vec<HostSpec> {
    let mut hosts = EgressHost::allowed(loaded.egress_hosts());
    hosts.extend(named_endpoints(loaded).into_iter().map(|e| e.parsed));
    hosts
}

/// The `--allow` specs the egress proxy gets beyond `egress.hosts`: the endpoints the profile
/// names (a provider `endpoint`, Langfuse's `base_url`), for a renderer that builds the proxy's
/// command from the profile (Kubernetes).
pub fn endpoint_specs(loaded: &LoadedProfile) -> Vec<Endpoint> {
    named_endpoints(loaded)
}

/// The profile's upstream proxy, when it has one, its allowlist is enforced outside and its
/// URLs can be chained through (refused by field otherwise, when the profile is checked).
pub fn chained(loaded: &LoadedProfile) -> Option<Chained> {
    let profile = &loaded.profile;
    if !enforced_outside(profile) {
        return None;
    }
    let proxy = profile.proxy.as_ref()?;
    let (field, url) = match (&proxy.https, &proxy.http) {
        (Some(url), _) => ("proxy.https", url),
        (None, Some(url)) => ("proxy.http", url),
        (None, None) => return None,
    };
    let upstream = upstream_address(url).ok()?;
    let ca = match (&proxy.ca_file, &proxy.ca_dir) {
        (Some(_), _) => Some("proxy.ca_file"),
        (None, Some(_)) => Some("proxy.ca_dir"),
        (None, None) => None,
    };
    // `proxy.http` naming another upstream than `proxy.https` (or the same one with other
    // credentials): plain HTTP goes there.
    let http = match (&proxy.https, &proxy.http) {
        (Some(_), Some(http)) => upstream_address(http).ok().filter(|h| {
            (&h.address, h.tls) != (&upstream.address, upstream.tls)
                || credentials(http) != credentials(url)
        }),
        _ => None,
    };
    let all = EgressHost::allowed(loaded.egress_hosts())
        .iter()
        .any(|spec| {
            spec.matches_host(&upstream.host)
                || http.as_ref().is_some_and(|h| spec.matches_host(&h.host))
        });
    Some(Chained {
        field,
        address: upstream.address,
        tls: upstream.tls,
        ca,
        http_address: http.as_ref().map(|h| h.address.clone()),
        http_tls: http.as_ref().is_some_and(|h| h.tls),
        auth: upstream.auth,
        http_auth: http.as_ref().is_some_and(|h| h.auth),
        host: upstream.host,
        spec: upstream.spec,
        http_spec: http.map(|h| h.spec),
        all,
        direct: proxy
            .no_proxy
            .iter()
            .map(|e| e.trim().to_string())
            .collect(),
    })
}

/// The proxy-only fields, and what cannot go with an allowlist enforced outside.
pub(crate) fn check(ck: &mut Checker, profile: &Profile) {
    let egress = &profile.egress;
    for (index, cidr) in egress.allow_cidrs.iter().enumerate() {
        let field = format!("egress.allow_cidrs[{index}]");
        if let Err(agentc_egress::EgressError::Cidr { reason, .. }) =
            agentc_egress::Cidr::parse(cidr.trim())
        {
            ck.fail(
                &field,
                format!(
                    "{field} {:?} is not an address range: {reason}",
                    cidr.trim()
                ),
                "write a network such as `10.20.0.0/16` or one address such as `192.0.2.10`",
            );
        }
    }
    if let Some(name) = &egress.outside_network {
        let lower = name.to_ascii_lowercase();
        if lower.starts_with("container:") || ["host", "none", "default"].contains(&lower.as_str())
        {
            ck.fail(
                "egress.outside_network",
                format!("egress.outside_network {name:?} is a docker network mode, not a network"),
                "name a user-defined network (docker network create NAME), or remove the field \
                 for docker's default bridge",
            );
        } else if !is_network_name(name) {
            ck.fail(
                "egress.outside_network",
                format!("egress.outside_network {name:?} is not a docker network name"),
                "start with a letter or digit and use only A-Z, a-z, 0-9, _, . or -, at most 128 \
                 characters",
            );
        }
    }
    let proxy_only = egress.mode == EgressMode::Allowlist
        && egress.enforce == EgressEnforce::Outside
        && egress.gateway_host.is_none();
    if !proxy_only {
        for (field, set) in [
            ("egress.outside_network", egress.outside_network.is_some()),
            ("egress.allow_cidrs", !egress.allow_cidrs.is_empty()),
            (
                "egress.wildcard_names_per_minute",
                egress.wildcard_names_per_minute.is_some(),
            ),
            ("egress.allow_ech", !egress.allow_ech.is_empty()),
        ] {
            if set {
                ck.fail_when(
                    &["egress.mode", "egress.enforce", "egress.gateway_host"],
                    field,
                    format!(
                        "{field} is read only by agentc's egress proxy, which runs for \
                         mode = \"allowlist\" with enforce = \"outside\" and no gateway"
                    ),
                    "remove the field, or enforce the allowlist outside the workload",
                );
            }
        }
    }
    if !enforced_outside(profile) {
        return;
    }
    let loaded = ck.loaded;
    for (index, entry) in loaded.egress_hosts().iter().enumerate() {
        let field = format!("egress.hosts[{index}]");
        let host = entry.text();
        if host.is_empty() || host == "*" || host.starts_with('-') {
            continue; // refused by the generic check
        }
        if let Err(refusal) = entry.specs() {
            let reason = &refusal.reason;
            ck.fail(
                &field,
                format!("{field} {host:?} is not a host the egress proxy can allow: {reason}"),
                "write `host`, `host:port`, `*.domain`, `*.domain:port`, an address \
                 (`10.1.2.3`, `10.1.2.3:8000`, `[fd00::1]:443`) or a range (`10.1.2.0/24`); \
                 without a port an entry allows ports 443 and 80",
            );
        }
    }
    let allowed = EgressHost::allowed(loaded.egress_hosts());
    check_allow_ech(ck, &allowed, &egress.allow_ech);
    let network = &profile.network;
    let refusals = [
        (
            "network.name",
            network.name.is_some(),
            "network.name cannot be joined: with egress.enforce = \"outside\" the sandbox's only \
             network is its isolated one, whose only way out is the egress proxy",
            "remove network.name (egress.outside_network names the network the proxy uses), or \
             set egress.enforce = \"image\"",
        ),
        (
            "network.host_gateway",
            network.host_gateway,
            "network.host_gateway is not available with egress.enforce = \"outside\": the \
             isolated network has no way to the host",
            "remove host_gateway, or set egress.enforce = \"image\"",
        ),
    ];
    for (field, set, message, hint) in refusals {
        if set {
            ck.fail_when(&["egress.enforce"], field, message, hint);
        }
    }
    // The proxy relays published ports to the sandbox; it relays TCP only.
    for (index, port) in network.publish.iter().enumerate() {
        if port.protocol != Protocol::Tcp {
            let field = format!("network.publish[{index}]");
            ck.fail_when(
                &["egress.enforce"],
                &field,
                format!(
                    "{field} publishes {port}, but with egress.enforce = \"outside\" the \
                     egress proxy publishes the sandbox's ports and relays TCP only"
                ),
                "publish TCP ports only, or set egress.enforce = \"image\"",
            );
        }
    }
}

/// `egress.allow_ech`: each entry a host spec that is also an entry of `egress.hosts` (both
/// read as the proxy reads them, so `API.example.com.` is `api.example.com`).
fn check_allow_ech(ck: &mut Checker, allowed: &[HostSpec], allow_ech: &[String]) {
    for (index, entry) in allow_ech.iter().enumerate() {
        let field = format!("egress.allow_ech[{index}]");
        let entry = entry.trim();
        match HostSpec::parse(entry) {
            Err(error) => {
                let reason = match error {
                    agentc_egress::EgressError::HostSpec { reason, .. } => reason,
                    other => other.to_string(),
                };
                ck.fail(
                    &field,
                    format!("{field} {entry:?} is not a host spec: {reason}"),
                    "write an entry of egress.hosts as it is written there (`host`, \
                     `host:port`, `*.domain`)",
                );
            }
            Ok(spec) if !allowed.contains(&spec) => ck.fail(
                &field,
                format!("{field} {entry:?} is not an entry of egress.hosts"),
                "ECH can be allowed only for a host the allowlist already allows: add the same \
                 entry to egress.hosts, or remove it from egress.allow_ech",
            ),
            Ok(_) => {}
        }
    }
}

impl Resolver<'_> {
    /// The isolated network and the egress proxy of an agent or sandbox container, when its
    /// allowlist is enforced outside it: the container joins the isolated network only, with
    /// the proxy as its DNS server and its proxy variables set.
    pub fn egress_outside(&mut self, container: &mut ContainerSpec) -> Result<(), PolicyError> {
        let relays_only = relays_only(self.profile);
        if !enforced_outside(self.profile) && !relays_only {
            return Ok(());
        }
        if self.overrides.network.is_some() {
            return Err(self.unlaunchable(
                "egress.enforce",
                format!(
                    "{} cannot be joined: with egress.enforce = \"outside\" the sandbox's only \
                     network is its isolated one",
                    overrides::NETWORK
                ),
                "unset AGENTC_NETWORK, or set egress.enforce = \"image\"",
            ));
        }
        let egress = &self.profile.egress;
        // Written or not, `enforce` decides; the hosts are what makes the proxy run.
        let origin = if relays_only {
            self.field_origin("network.publish")
        } else {
            self.written("egress.enforce")
                .unwrap_or_else(|| self.field_origin("egress.hosts"))
        };
        let base = container.name.clone().unwrap_or_else(|| {
            format!("agentc-{}-{}", self.inputs.kind.as_str(), self.profile.name)
        });
        let (block, _) = isolated_subnet(&base);
        let address = proxy_address(block);
        let mut labels = BTreeMap::from([
            (LABEL_PROFILE.to_string(), self.profile.name.clone()),
            (LABEL_KIND.to_string(), KIND_EGRESS_PROXY.to_string()),
            (LABEL_EGRESS_FOR.to_string(), base.clone()),
        ]);
        let network = IsolatedNetwork::of(&base, labels.clone());
        // Each host parsed once, when the profile was loaded; one the proxy refuses is refused
        // here too (a profile built in code is not checked).
        let hint = "write host specs (`host`, `host:port`, `*.domain`, an address or a range) and \
                    CIDRs only";
        if let Some(refusal) = self
            .loaded
            .egress_hosts()
            .iter()
            .find_map(|host| host.specs().err())
        {
            return Err(self.invalid("egress.hosts", refusal.to_string(), hint));
        }
        let hosts = proxy_allowlist(self.loaded);
        let cidrs: Vec<String> = egress
            .allow_cidrs
            .iter()
            .map(|c| c.trim().to_string())
            .collect();
        // The proxy and its DNS stub listen on its isolated-network address only: nothing on
        // the outside network can use (or exhaust) them. Its relays listen on every address.
        let mut config = agentc_egress::Config::from_specs(
            &format!("{address}:{PROXY_PORT}"),
            Some(&format!("{address}:{PROXY_DNS_PORT}")),
            hosts,
            &cidrs,
        )
        .map_err(|error| self.invalid("egress.hosts", error.to_string(), hint))?;
        if let Some(names) = egress.wildcard_names_per_minute {
            config.limits.wildcard_names_per_minute = names;
        }
        let allow_ech: Vec<&str> = egress.allow_ech.iter().map(|e| e.trim()).collect();
        let config = config.with_allow_ech(&allow_ech).map_err(|error| {
            self.invalid(
                "egress.allow_ech",
                error.to_string(),
                "list in egress.allow_ech only entries of egress.hosts",
            )
        })?;
        // The published ports move to the proxy, which relays each to the workload's fixed
        // address; the workload keeps them exposed (its own ports, reached through the relay).
        let published = std::mem::take(&mut container.ports);
        let workload = workload_address(block);
        let mut relay_ports = Vec::new();
        let mut relays = Vec::new();
        for (index, port) in published.iter().enumerate() {
            let listen = u16::try_from(index)
                .ok()
                .and_then(|index| RELAY_PORT_BASE.checked_add(index))
                .filter(|_| port.protocol == Protocol::Tcp)
                .ok_or_else(|| {
                    self.unlaunchable(
                        &format!("network.publish[{index}]"),
                        format!(
                            "{}/{} cannot be relayed by the egress proxy",
                            port.container_port,
                            port.protocol.as_str()
                        ),
                        "publish fewer TCP ports, or set egress.enforce = \"image\"",
                    )
                })?;
            relays.push(format!("{listen}={workload}:{}", port.container_port));
            relay_ports.push(PublishedPort {
                container_port: listen,
                protocol: Protocol::Tcp,
                host_ip: port.host_ip,
                host_port: port.host_port,
            });
            let exposed = ExposedPort {
                container_port: port.container_port,
                protocol: port.protocol,
            };
            if !container.exposed_ports.contains(&exposed) {
                container.exposed_ports.push(exposed);
            }
        }
        let config = config.with_relays(&relays).map_err(|error| {
            self.invalid(
                "network.publish",
                error.to_string(),
                "publish container ports from 1 to 65535, each once",
            )
        })?;
        if !relays.is_empty() {
            container.ipv4_address = Some(workload);
            self.set(keys::IPV4_ADDRESS, self.field_origin("network.publish"));
        }
        // The profile's upstream proxy, which the egress proxy chains through; over TLS,
        // trusting the profile's CA too.
        let upstream = chained(self.loaded);
        let config = match &upstream {
            None => config,
            Some(chained) => config
                .with_upstream(&chained.upstream(), chained.all, &chained.direct)
                .and_then(|config| match chained.http_upstream() {
                    Some(http) => config.with_upstream_http(&http),
                    None => Ok(config),
                })
                .and_then(|config| match chained.auth_variables() {
                    (None, None) => Ok(config),
                    (auth, http_auth) => config.with_upstream_auth(auth, http_auth),
                })
                .map_err(|error| {
                    self.invalid(
                        chained.field,
                        error.to_string(),
                        "write the upstream as http://HOST:PORT or https://HOST:PORT",
                    )
                })?,
        };
        // The keys the proxy holds for their hosts only (`[credentials]`, the preset's): after
        // the upstream, which carries the hosts its `--upstream-all` passes.
        let (config, bound) = self.credential_config(config)?;
        // The proxy's own audit files, on a volume of its own that the workload never mounts.
        let mut config = config.with_audit_dir(AUDIT_DIR_TARGET).map_err(|error| {
            self.invalid("egress.hosts", error.to_string(), "report this as a bug")
        })?;
        let trust_ca = upstream
            .as_ref()
            .is_some_and(|c| c.any_tls() && c.ca.is_some());
        let ca_target = crate::spec::UPSTREAM_CA_TARGET.to_string();
        if trust_ca && !config.credentials.upstream_ca.contains(&ca_target) {
            config.credentials.upstream_ca.push(ca_target);
        }
        let mut proxy = ContainerSpec::empty(PROXY_IMAGE_PLACEHOLDER);
        proxy.name = Some(format!("{base}-egress-proxy"));
        proxy.command = agentc_egress::proxy_command(&config);
        proxy.user = Some("65534:65534".to_string());
        proxy.read_only_root = true;
        proxy.no_new_privileges = true;
        proxy.cap_drop_all = true;
        proxy.detach = true;
        // Started again by the engine if it dies (with its CA and audit, kept on its volume).
        proxy.restart = Some(crate::spec::Restart::OnFailure {
            max_retries: crate::spec::PROXY_RESTARTS,
        });
        proxy.network = match &egress.outside_network {
            Some(name) => Network::Named { name: name.clone() },
            None => Network::Default,
        };
        proxy.sysctls = [
            ("net.ipv4.ip_unprivileged_port_start", "53"),
            ("net.ipv4.ip_forward", "0"),
            ("net.ipv6.conf.all.forwarding", "0"),
            ("net.ipv6.conf.all.disable_ipv6", "1"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
        proxy.resources = Resources {
            memory_bytes: Some(PROXY_MEMORY),
            memory_swap_bytes: Some(PROXY_MEMORY),
            shm_size_bytes: None,
            nano_cpus: Some(PROXY_NANO_CPUS),
            pids_limit: Some(PROXY_PIDS),
        };
        proxy.mounts.push(Mount {
            target: AUDIT_DIR_TARGET.to_string(),
            read_only: false,
            source: MountSource::Volume {
                name: format!("{base}-egress-audit"),
                subpath: None,
            },
        });
        proxy.ports = relay_ports;
        proxy.log = container.log.clone();
        labels.insert(LABEL_KIND.to_string(), KIND_EGRESS_PROXY.to_string());
        proxy.labels = labels;

        container.network = Network::Named {
            name: network.name.clone(),
        };
        self.set(keys::NETWORK, origin.clone());
        container.network_aliases.clear();
        container.dns = vec![IpAddr::V4(address)];
        self.set(keys::DNS, origin.clone());
        // A preset image's own firewall (the second layer, kept by the host-path escape
        // hatch) must let the sandbox reach its proxy; `*` is a firewall that stands down.
        for var in container
            .env
            .iter_mut()
            .filter(|var| var.name == "AGENT_ALLOWED_EGRESS")
        {
            if let EnvValue::Literal { value } = &mut var.value {
                if value != "*" {
                    value.push_str(&format!(",{address}"));
                }
            }
        }
        super::host_path::disable_ipv6(container);
        let url = format!("http://{address}:{PROXY_PORT}");
        for name in PROXY_VARIABLES {
            self.egress_env(container, name, &url, &origin);
        }
        for name in NO_PROXY_VARIABLES {
            self.egress_env(container, name, "localhost,127.0.0.1,::1", &origin);
        }
        let credentials =
            self.credential_env(container, &mut proxy, &bound, &format!("{base}-egress-ca"))?;
        if trust_ca {
            self.mount_upstream_ca(&mut proxy)?;
        }
        if let Some(chained) = &upstream {
            upstream_credentials(self.profile, chained, &mut proxy);
        }
        container.egress = Some(Box::new(EgressSpec {
            network,
            outside: proxy.network.clone(),
            proxy: Box::new(proxy),
            proxy_address: address,
            credentials,
        }));
        self.set(keys::EGRESS, origin);
        Ok(())
    }

    fn egress_env(
        &mut self,
        container: &mut ContainerSpec,
        name: &str,
        value: &str,
        origin: &Origin,
    ) {
        container.env.retain(|var| var.name != name);
        container.held_secrets.remove(name);
        container.env.push(EnvVar {
            name: name.to_string(),
            value: EnvValue::Literal {
                value: value.to_string(),
            },
        });
        self.set(keys::env(name), origin.clone());
    }
}

/// The upstreams' credentials in the proxy's environment: secrets the profile holds, passed
/// by name ([`Chained::auth_variables`]); never on its command line.
fn upstream_credentials(profile: &Profile, chained: &Chained, proxy: &mut ContainerSpec) {
    let Some(urls) = &profile.proxy else { return };
    let tunnels = if chained.field == "proxy.https" {
        &urls.https
    } else {
        &urls.http
    };
    let (auth, http_auth) = chained.auth_variables();
    for (name, url) in [(auth, tunnels), (http_auth, &urls.http)] {
        let Some((name, value)) = name.zip(url.as_deref().and_then(credentials)) else {
            continue;
        };
        proxy.env.push(EnvVar {
            name: name.to_string(),
            value: EnvValue::Secret { required: true },
        });
        proxy.held_secrets.insert(name, value);
    }
}

/// A published port of the workload that the egress proxy relays: the workload's container
/// port, where the proxy publishes it on the host, and the address it relays to.
pub(crate) struct Relayed<'a> {
    /// The workload's port (TCP).
    pub(crate) container_port: u16,
    /// The proxy's host binding of the relay.
    pub(crate) published: &'a PublishedPort,
    /// The workload's address and port the proxy connects to.
    pub(crate) target: std::net::SocketAddr,
}

/// The workload's published ports that its egress proxy relays, in publish order.
pub(crate) fn relayed_ports(c: &ContainerSpec) -> Vec<Relayed<'_>> {
    let Some(egress) = &c.egress else {
        return Vec::new();
    };
    egress
        .relays()
        .into_iter()
        .filter_map(|relay| {
            let published = egress
                .proxy
                .ports
                .iter()
                .find(|port| port.container_port == relay.listen)?;
            Some(Relayed {
                container_port: relay.target.port(),
                published,
                target: relay.target,
            })
        })
        .collect()
}

/// What `agentc explain` says of a workload port the egress proxy relays; `None` for a port
/// it does not relay.
pub(crate) fn relay_words(c: &ContainerSpec, port: &ExposedPort) -> Option<String> {
    if port.protocol != Protocol::Tcp {
        return None;
    }
    let relayed = relayed_ports(c)
        .into_iter()
        .find(|relayed| relayed.container_port == port.container_port)?;
    let host_port = match relayed.published.host_port {
        Some(port) => format!("port {port}"),
        None => "a free port the daemon picks".to_string(),
    };
    Some(format!(
        "published on {}, {host_port}, by the egress proxy, which relays it to the sandbox at {} \
         on its isolated network (the sandbox cannot publish ports itself)",
        relayed.published.host_ip, relayed.target
    ))
}

/// The "widens the sandbox" items of the relayed ports.
pub(crate) fn relay_widens(c: &ContainerSpec, words: impl Fn(u16) -> String) -> Vec<String> {
    relayed_ports(c)
        .iter()
        .map(|relayed| {
            format!(
                "published port {}/tcp on {}, relayed by the egress proxy  [{}]",
                relayed.container_port,
                relayed.published.host_ip,
                words(relayed.container_port)
            )
        })
        .collect()
}

/// The "added by agentc" note of a launch whose published ports the egress proxy relays.
pub(crate) fn relay_note(c: &ContainerSpec, notes: &mut Vec<String>) {
    if !relayed_ports(c).is_empty() {
        notes.push(
            "published ports are relayed by the egress proxy: the sandbox, alone on its \
             internal network, cannot publish them, so the proxy publishes each on the host and \
             connects it to the sandbox's fixed address (one decision line per connection)"
                .to_string(),
        );
    }
}
