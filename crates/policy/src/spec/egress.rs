//! The egress companion of a launch whose allowlist is enforced outside the workload
//! (`egress.enforce = "outside"`): the isolated network the workload joins alone, and agentc's
//! egress proxy container, its only way out. Plain data like the rest of the spec; the
//! backends render it (`docker network create`, `docker create`, `docker network connect`) and
//! execute it around the workload.
//!
//! A workload on an internal network cannot publish ports: when the profile publishes some,
//! the proxy container publishes them instead (its [`ContainerSpec::ports`], container side
//! [`RELAY_PORT_BASE`] and up) and relays each to the workload's fixed address
//! ([`workload_address`], [`ContainerSpec::ipv4_address`]) with a `--relay=` argument of its
//! command ([`EgressSpec::relays`]).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ContainerSpec, EnvValue, Network};

/// The image a spec names for the proxy: the executors build `agentc-egress:<hash>` from the
/// running agentc binary and launch that tag instead (`agentc egress-proxy image`).
pub const PROXY_IMAGE_PLACEHOLDER: &str = "agentc-egress";
/// The proxy's HTTP CONNECT and forward port.
pub const PROXY_PORT: u16 = 3128;
/// The proxy's DNS stub port.
pub const PROXY_DNS_PORT: u16 = 53;
/// The proxy's port relaying the workload's first published port; the next ones follow in
/// order (`RELAY_PORT_BASE + index` of `network.publish`).
pub const RELAY_PORT_BASE: u16 = 20000;
/// The bridge option that leaves the host side of a bridge without an IPv4 address, so a
/// workload on the network cannot reach the host's own listeners (daemon 20.10 and later; a
/// plain `--internal` network still routes to the bridge address).
pub const INHIBIT_IPV4: &str = "com.docker.network.bridge.inhibit_ipv4";
/// The label value of [`crate::LABEL_KIND`] on the proxy container and the isolated network.
pub const KIND_EGRESS_PROXY: &str = "egress-proxy";
/// The label naming, on the proxy and the network, the workload container they serve.
pub const LABEL_EGRESS_FOR: &str = "io.agentc.egress-for";

/// What a launch needs besides its container when the allowlist is enforced outside it.
///
/// Order of a launch: create [`EgressSpec::network`], create [`EgressSpec::proxy`] on
/// [`EgressSpec::outside`], connect it to the isolated network at [`EgressSpec::proxy_address`],
/// start it and wait until it is healthy, then launch the workload (which already names the
/// isolated network, the proxy as its DNS server and the proxy variables); remove all of it
/// with the workload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EgressSpec {
    /// The isolated network: the workload's only network.
    pub network: IsolatedNetwork,
    /// The network the proxy reaches out through (`egress.outside_network`, or the default
    /// bridge). The proxy is created on it.
    pub outside: Network,
    /// The proxy container: created on [`EgressSpec::outside`], image
    /// [`PROXY_IMAGE_PLACEHOLDER`] until the executor substitutes the built tag.
    pub proxy: Box<ContainerSpec>,
    /// The proxy's fixed address on the isolated network (`docker network connect --ip`;
    /// `EndpointConfig.IPAMConfig.IPv4Address`): the workload's DNS server and proxy host.
    pub proxy_address: Ipv4Addr,
    /// The keys the proxy holds and sets for their hosts only (its `--credential=` words; its
    /// environment holds the keys, by name, and their placeholders; the workload's only the
    /// placeholders). The bindings, never a value. Left out of the serialized spec when empty,
    /// so that specs without it keep their digests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub credentials: Vec<CredentialSpec>,
}

/// One key the egress proxy holds ([`EgressSpec::credentials`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CredentialSpec {
    /// Its name (`[credentials.NAME]`, or the preset's: `anthropic`, `openai`, `langfuse`).
    pub name: String,
    /// The caller's variable holding the key; the workload's holds a placeholder.
    pub variable: String,
    /// The caller's variable holding the `Basic` user, if any; the workload's holds a
    /// placeholder too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_variable: Option<String>,
    /// The hosts that receive it (`host` or `host:port`).
    pub hosts: Vec<String>,
    /// The header set (lower case).
    pub header: String,
    /// `Bearer` or `Basic`; none sends the key as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<crate::profile::CredentialScheme>,
}

/// Where the proxy writes, and the workload reads (read-only), the launch CA's certificate and
/// the bundle it trusts: a volume of the companion's own (`<name>-egress-ca`).
pub const CA_DIR_TARGET: &str = agentc_egress::credential::CA_DIR;
/// Where the proxy keeps its bounded audit files (`--audit-dir`,
/// [`agentc_egress::audit`]): a volume of the companion's own (`<name>-egress-audit`), never
/// mounted in the workload.
pub const AUDIT_DIR_TARGET: &str = agentc_egress::audit::AUDIT_DIR;
/// The launch CA's certificate: what `NODE_EXTRA_CA_CERTS` names.
pub const CA_CERT_PATH: &str = "/etc/agentc/egress-ca/ca.pem";
/// Mozilla's roots, the profile's CA and the launch CA: what `SSL_CERT_FILE`,
/// `REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE` and `GIT_SSL_CAINFO` name.
pub const CA_BUNDLE_PATH: &str = "/etc/agentc/egress-ca/bundle.pem";
/// Where the proxy reads the profile's `proxy.ca_file` or `proxy.ca_dir` (read-only), which it
/// trusts for upstreams besides Mozilla's roots.
pub const UPSTREAM_CA_TARGET: &str = "/etc/agentc/upstream-ca";

/// A network created for one launch. `docker network create --internal --subnet= --opt=
/// --label=`; `POST /networks/create` `{Name, Internal, IPAM.Config[].Subnet, Options, Labels}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IsolatedNetwork {
    /// The network's name.
    pub name: String,
    /// Its IPv4 subnet (`10.213.N.M/28`); no IPv6.
    pub subnet: String,
    /// No route out (`--internal`; `Internal`).
    pub internal: bool,
    /// Driver options (`--opt`; `Options`), [`INHIBIT_IPV4`] among them.
    pub options: BTreeMap<String, String>,
    /// Labels (`--label`; `Labels`), agentc's own included.
    pub labels: BTreeMap<String, String>,
}

impl IsolatedNetwork {
    /// The isolated network of the workload `base`: `BASE-egress`, `--internal`, IPv4
    /// inhibited on the host side ([`INHIBIT_IPV4`]), in the /28 block [`isolated_subnet`]
    /// picks for `base`, labelled `labels`. What `resolve` gives a launch behind the egress
    /// proxy, and what `agentc doctor` creates to check the engine can.
    pub fn of(base: &str, labels: BTreeMap<String, String>) -> IsolatedNetwork {
        IsolatedNetwork {
            name: format!("{base}-egress"),
            subnet: isolated_subnet(base).1,
            internal: true,
            options: BTreeMap::from([(INHIBIT_IPV4.to_string(), "true".to_string())]),
            labels,
        }
    }
}

/// The first address of the /28 block of `10.213.0.0/16` that the isolated network of the
/// container `name` uses (a stable hash of the name picks the block), and the block's
/// subnet text. The gateway takes `.1` of the block (never assigned on the host side); the
/// proxy takes `.2`.
pub fn isolated_subnet(name: &str) -> (Ipv4Addr, String) {
    // FNV-1a: stable across builds and platforms, unlike `DefaultHasher`.
    let mut hash: u32 = 0x811c_9dc5;
    for byte in name.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    let block = hash % 4096;
    let base = u32::from(Ipv4Addr::new(10, 213, 0, 0)) + block * 16;
    let network = Ipv4Addr::from(base);
    (network, format!("{network}/28"))
}

/// The proxy's address in the block starting at `network` (its `.2`).
pub fn proxy_address(network: Ipv4Addr) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(network) + 2)
}

/// The workload's fixed address in the block starting at `network` (its `.3`), given only to
/// a workload whose published ports the proxy relays.
pub fn workload_address(network: Ipv4Addr) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(network) + 3)
}

impl EgressSpec {
    /// The relays of the workload's published ports, read from the proxy's command (its
    /// `--relay=LISTEN=IP:PORT` words, the one place they are written); words that do not
    /// parse are left out (the resolver writes none).
    pub fn relays(&self) -> Vec<agentc_egress::Relay> {
        relays_of(&self.proxy.command)
    }
}

/// The relays of an egress proxy's command line (`--relay=LISTEN=IP:PORT` words), as
/// [`EgressSpec::relays`] reads them; also what sessions read from a running proxy's command.
pub fn relays_of(command: &[String]) -> Vec<agentc_egress::Relay> {
    command
        .iter()
        .filter_map(|word| word.strip_prefix("--relay="))
        .filter_map(|text| agentc_egress::Relay::parse(text).ok())
        .collect()
}

impl ContainerSpec {
    /// Gives the container an egress companion of its own for the workload `workload` (a
    /// renamed copy, a verify probe): the companion's `io.agentc.egress-for` label names
    /// `workload`, so that removing it removes this set and no other, and the set moves to the
    /// instance `suffix` ([`ContainerSpec::egress_instance`]). Nothing changes without a
    /// companion.
    pub fn egress_for(&mut self, workload: &str, suffix: &str) {
        if let Some(egress) = self.egress.as_mut() {
            for labels in [&mut egress.network.labels, &mut egress.proxy.labels] {
                labels.insert(LABEL_EGRESS_FOR.to_string(), workload.to_string());
            }
        }
        self.egress_instance(suffix);
    }

    /// Moves the egress companion to another instance: the isolated network and the proxy are
    /// renamed with `-SUFFIX`, and the subnet, the proxy's address (and so its `--listen` and
    /// `--dns` addresses), the container's DNS server, its proxy variables, its fixed address
    /// (when it has one) and the proxy's relays to it follow the new name's block. The
    /// `io.agentc.egress-for` label keeps naming the workload. Executors use it for a launch
    /// without a container name (each run gets its own set); a taken subnet keeps the names
    /// ([`ContainerSpec::egress_resubnet`]). Nothing changes without a companion.
    pub fn egress_instance(&mut self, suffix: &str) {
        let Some(egress) = self.egress.as_ref() else {
            return;
        };
        let name = format!(
            "{}-{suffix}",
            egress
                .network
                .name
                .strip_suffix("-egress")
                .unwrap_or(&egress.network.name)
        );
        self.egress_move(&name);
    }

    /// Gives the container, renamed `workload` (`agentc run --name`), the companion named
    /// after it: `WORKLOAD-egress`, `WORKLOAD-egress-proxy`, labelled for it, its subnet and
    /// addresses following the new name ([`ContainerSpec::egress_instance`]). Nothing changes
    /// without a companion.
    pub fn egress_named(&mut self, workload: &str) {
        if let Some(egress) = self.egress.as_mut() {
            for labels in [&mut egress.network.labels, &mut egress.proxy.labels] {
                labels.insert(LABEL_EGRESS_FOR.to_string(), workload.to_string());
            }
        }
        self.egress_move(workload);
    }

    /// Moves the companion to another /28 block when the engine says its subnet is taken
    /// (attempt number `attempt`, from 1), keeping every name: the block [`isolated_subnet`]
    /// picks for `NAME#ATTEMPT`, with the addresses that follow it (as
    /// [`ContainerSpec::egress_instance`] moves them). So `NAME-egress` and
    /// `NAME-egress-proxy` stay what the documentation, `agentc ps` and a user's scripts name,
    /// whichever block the engine had free. Nothing changes without a companion.
    pub fn egress_resubnet(&mut self, attempt: u32) {
        let Some(egress) = self.egress.as_ref() else {
            return;
        };
        let base = egress
            .network
            .name
            .strip_suffix("-egress")
            .unwrap_or(&egress.network.name);
        let key = format!("{base}#{attempt}");
        self.egress_readdress(&key);
    }

    /// Moves the companion to the set named `name` (`NAME-egress`, `NAME-egress-proxy`,
    /// `NAME-egress-ca`, `NAME-egress-audit`) and the subnet of that name.
    fn egress_move(&mut self, name: &str) {
        let Some(egress) = self.egress.as_mut() else {
            return;
        };
        let name = name.to_string();
        let renamed = [
            (
                format!("{}-ca", egress.network.name),
                format!("{name}-egress-ca"),
            ),
            (
                format!("{}-audit", egress.network.name),
                format!("{name}-egress-audit"),
            ),
        ];
        for mount in egress.proxy.mounts.iter_mut().chain(self.mounts.iter_mut()) {
            if let super::MountSource::Volume { name, .. } = &mut mount.source {
                if let Some((_, new)) = renamed.iter().find(|(old, _)| old == name) {
                    *name = new.clone();
                }
            }
        }
        egress.network.name = format!("{name}-egress");
        egress.proxy.name = Some(format!("{name}-egress-proxy"));
        self.egress_readdress(&name);
    }

    /// Moves the companion to the /28 block [`isolated_subnet`] picks for `key`: the proxy's
    /// address (and so its `--listen` and `--dns` addresses), the container's DNS server, its
    /// proxy variables, its fixed address (when it has one), the proxy's relays to it, and the
    /// container's network, which is the companion's isolated network.
    fn egress_readdress(&mut self, key: &str) {
        let Some(egress) = self.egress.as_mut() else {
            return;
        };
        let (block, subnet) = isolated_subnet(key);
        let old = egress.proxy_address;
        let address = proxy_address(block);
        egress.network.subnet = subnet;
        egress.proxy_address = address;
        // The proxy listens (and its DNS stub answers) on its isolated-network address.
        for word in &mut egress.proxy.command {
            for flag in ["--listen=", "--dns="] {
                let Some(listen) = word
                    .strip_prefix(flag)
                    .and_then(|text| text.parse::<std::net::SocketAddr>().ok())
                else {
                    continue;
                };
                if listen.ip() == std::net::IpAddr::V4(old) {
                    *word = format!(
                        "{flag}{}",
                        std::net::SocketAddr::new(address.into(), listen.port())
                    );
                }
            }
        }
        if let Some(old_workload) = self.ipv4_address {
            let workload = workload_address(block);
            self.ipv4_address = Some(workload);
            for word in &mut egress.proxy.command {
                let Some(mut relay) = word
                    .strip_prefix("--relay=")
                    .and_then(|text| agentc_egress::Relay::parse(text).ok())
                else {
                    continue;
                };
                if relay.target.ip() == std::net::IpAddr::V4(old_workload) {
                    relay.target.set_ip(workload.into());
                    *word = format!("--relay={relay}");
                }
            }
        }
        self.network = Network::Named {
            name: egress.network.name.clone(),
        };
        self.dns = vec![std::net::IpAddr::V4(address)];
        let old_url = format!("http://{old}:{PROXY_PORT}");
        let old_entry = format!(",{old}");
        for var in &mut self.env {
            if let EnvValue::Literal { value } = &mut var.value {
                if *value == old_url {
                    *value = format!("http://{address}:{PROXY_PORT}");
                } else if var.name == "AGENT_ALLOWED_EGRESS" {
                    if let Some(hosts) = value.strip_suffix(&old_entry) {
                        *value = format!("{hosts},{address}");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnets_are_stable_aligned_blocks_of_the_range() {
        let (network, subnet) = isolated_subnet("agentc-demo");
        assert_eq!(isolated_subnet("agentc-demo").1, subnet);
        assert_eq!(u32::from(network) % 16, 0);
        assert!(subnet.starts_with("10.213.") && subnet.ends_with("/28"));
        assert_eq!(u32::from(proxy_address(network)), u32::from(network) + 2);
        assert_eq!(u32::from(workload_address(network)), u32::from(network) + 3);
    }
}
