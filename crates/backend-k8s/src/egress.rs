//! Egress: the profile's policy, the egress proxy's command line, and the NetworkPolicies.
//!
//! - `deny` (and a launch with no network): a default-deny NetworkPolicy, ingress and egress.
//! - `allowlist` with hosts: agentc's egress proxy as a second Pod behind a Service; the
//!   workload may reach only the proxy (3128/TCP, 53/UDP and TCP) and the cluster DNS (to
//!   find the proxy's Service); the proxy may reach public addresses, the cluster DNS and the
//!   ranges it is told to allow, not other pods, private ranges or the cloud metadata address
//!   (which it also refuses itself).
//! - `allowlist` without hosts: nothing is allowed, so the default-deny policy and no proxy.
//! - `unrestricted`: public addresses and the cluster DNS only (reported as on Docker).

use std::collections::BTreeMap;

use agentc_egress::HostSpec;
use agentc_policy::{EgressHost, LoadedProfile};
use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer,
    NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The port the egress proxy listens on for HTTP CONNECT and plain HTTP.
pub const PROXY_PORT: u16 = 3128;
/// The port of the egress proxy's DNS stub.
pub const DNS_PORT: u16 = 53;
/// The uid and gid the egress proxy runs as (`nobody`).
pub const PROXY_UID: i64 = 65534;

/// An egress mode of the profile (`egress.mode`): the policy crate's own.
pub use agentc_policy::EgressMode;

/// The profile's egress policy, which the `LaunchSpec` does not carry for every launch (a
/// custom sandbox gets no `AGENT_ALLOWED_EGRESS`): the caller reads it from the profile with
/// [`EgressPolicy::from_profile`]. A launch whose spec has no network is rendered as `deny`
/// whatever this says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressPolicy {
    /// `egress.mode`.
    pub mode: EgressMode,
    /// `egress.hosts`: each entry as written and as the egress proxy reads it, parsed once
    /// when the profile was loaded ([`LoadedProfile::egress_hosts`]).
    pub hosts: Vec<EgressHost>,
    /// Whether an ssh gateway is configured (`egress.gateway_host`).
    pub gateway: bool,
    /// Address ranges the proxy may connect to although private or reserved
    /// (`egress.allow_cidrs`).
    pub allow_cidrs: Vec<String>,
    /// Distinct wildcard-allowed names the proxy resolves a minute
    /// (`egress.wildcard_names_per_minute`; the proxy's default when unset).
    pub wildcard_names_per_minute: Option<u32>,
    /// Hosts whose TLS tunnels may carry Encrypted Client Hello (`egress.allow_ech`).
    pub allow_ech: Vec<String>,
    /// The endpoints the profile names beyond `egress.hosts` (a provider endpoint, Langfuse's
    /// base URL), as `host:port` specs the proxy allows too
    /// ([`agentc_policy::endpoint_specs`]).
    pub endpoints: Vec<agentc_policy::Endpoint>,
    /// The upstream proxy the egress proxy chains through (`[proxy] http`/`https`;
    /// [`agentc_policy::upstream_proxy`]).
    pub upstream: Option<agentc_policy::Chained>,
    /// The Docker network the proxy reaches out through (`egress.outside_network`), which has
    /// no pod equivalent: the proxy Pod reaches out through the pod network, said in a note.
    pub outside_network: Option<String>,
}

impl EgressPolicy {
    /// The egress policy a loaded profile declares.
    pub fn from_profile(loaded: &LoadedProfile) -> EgressPolicy {
        let egress = &loaded.profile.egress;
        EgressPolicy {
            mode: egress.mode,
            hosts: loaded.egress_hosts().to_vec(),
            gateway: egress.gateway_host.is_some(),
            allow_cidrs: egress.allow_cidrs.clone(),
            wildcard_names_per_minute: egress.wildcard_names_per_minute,
            allow_ech: egress.allow_ech.clone(),
            endpoints: agentc_policy::endpoint_specs(loaded),
            upstream: agentc_policy::upstream_proxy(loaded),
            outside_network: egress.outside_network.clone(),
        }
    }
}

impl EgressPolicy {
    /// The host specs the egress proxy allows (its `--allow=` words): each entry of
    /// [`EgressPolicy::hosts`] as one spec ([`EgressHost::single`]; one the proxy refuses
    /// adds none, and is refused by field), then the endpoints'.
    pub fn allowed(&self) -> Vec<HostSpec> {
        self.hosts
            .iter()
            .filter_map(|host| host.single().ok())
            .chain(self.endpoints.iter().map(|endpoint| &endpoint.parsed))
            .cloned()
            .collect()
    }
}

/// The egress proxy's command line, as the egress crate writes it for every renderer
/// ([`agentc_egress::proxy_command`]): `/usr/local/bin/agentc egress-proxy serve`, listening on
/// 3128 with its DNS stub on 53, one `--allow=` per host spec (normalized) and one
/// `--allow-cidr=` per range, one `--allow-ech=` per ECH opt-in, the bound on wildcard
/// look-ups (`egress.wildcard_names_per_minute`; the proxy's default when `None`) and the
/// upstream proxy it chains through (`--upstream`, [`agentc_egress::upstream`]); or the
/// egress crate's error naming the first value it refuses.
///
/// Unlike the docker backends' proxy, which listens on its fixed isolated-network address,
/// the Pod's proxy listens on every address: a Pod's address is not known when it is rendered,
/// and its NetworkPolicy (ingress from the sandbox Pod only) is what keeps others from it.
pub fn egress_proxy_argv(
    hosts: &[HostSpec],
    allow_cidrs: &[String],
    allow_ech: &[String],
    wildcard_names_per_minute: Option<u32>,
    upstream: Option<&agentc_policy::Chained>,
) -> Result<Vec<String>, agentc_egress::EgressError> {
    let mut config = agentc_egress::Config::from_specs(
        &format!("0.0.0.0:{PROXY_PORT}"),
        Some(&format!("0.0.0.0:{DNS_PORT}")),
        hosts.to_vec(),
        allow_cidrs,
    )?
    .with_allow_ech(allow_ech)?
    .with_audit_dir(agentc_egress::audit::AUDIT_DIR)?;
    if let Some(names) = wildcard_names_per_minute {
        config.limits.wildcard_names_per_minute = names;
        config.limits.check()?;
    }
    if let Some(upstream) = upstream {
        config = config.with_upstream(&upstream.upstream(), upstream.all, &upstream.direct)?;
        if let Some(http) = upstream.http_upstream() {
            config = config.with_upstream_http(&http)?;
        }
        // The upstreams' credentials: read by the proxy from the profile's Secret, by name.
        let (auth, http_auth) = upstream.auth_variables();
        if auth.is_some() || http_auth.is_some() {
            config = config.with_upstream_auth(auth, http_auth)?;
        }
    }
    Ok(agentc_egress::proxy_command(&config))
}

/// A selector matching exactly these labels.
pub fn selector(labels: &BTreeMap<String, String>) -> LabelSelector {
    LabelSelector {
        match_labels: Some(labels.clone()),
        match_expressions: None,
    }
}

fn port(number: u16, protocol: &str) -> NetworkPolicyPort {
    NetworkPolicyPort {
        port: Some(IntOrString::Int(i32::from(number))),
        protocol: Some(protocol.to_string()),
        end_port: None,
    }
}

/// The proxy's ports as NetworkPolicy ports: 3128/TCP, 53/UDP, 53/TCP.
pub fn proxy_ports() -> Vec<NetworkPolicyPort> {
    vec![
        port(PROXY_PORT, "TCP"),
        port(DNS_PORT, "UDP"),
        port(DNS_PORT, "TCP"),
    ]
}

/// Egress to the cluster DNS (CoreDNS or kube-dns, labelled `k8s-app: kube-dns` in
/// `kube-system`), 53/UDP and TCP.
pub fn cluster_dns_rule() -> NetworkPolicyEgressRule {
    NetworkPolicyEgressRule {
        to: Some(vec![NetworkPolicyPeer {
            namespace_selector: Some(selector(&BTreeMap::from([(
                "kubernetes.io/metadata.name".to_string(),
                "kube-system".to_string(),
            )]))),
            pod_selector: Some(selector(&BTreeMap::from([(
                "k8s-app".to_string(),
                "kube-dns".to_string(),
            )]))),
            ip_block: None,
        }]),
        ports: Some(vec![port(DNS_PORT, "UDP"), port(DNS_PORT, "TCP")]),
    }
}

/// Private, shared, loopback and link-local IPv4 ranges (cloud metadata at 169.254.169.254
/// included), kept out of `unrestricted` egress.
pub const NON_PUBLIC_V4: &[&str] = &[
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.168.0.0/16",
];
/// Unique-local, link-local and loopback IPv6 ranges.
pub const NON_PUBLIC_V6: &[&str] = &["::1/128", "fc00::/7", "fe80::/10"];

/// Egress to public addresses only: every IPv4 and IPv6 address outside the non-public ranges.
pub fn public_internet_rule() -> NetworkPolicyEgressRule {
    let block = |cidr: &str, except: &[&str]| NetworkPolicyPeer {
        ip_block: Some(IPBlock {
            cidr: cidr.to_string(),
            except: Some(except.iter().map(|range| range.to_string()).collect()),
        }),
        namespace_selector: None,
        pod_selector: None,
    };
    NetworkPolicyEgressRule {
        to: Some(vec![
            block("0.0.0.0/0", NON_PUBLIC_V4),
            block("::/0", NON_PUBLIC_V6),
        ]),
        ports: None,
    }
}

/// The egress proxy's own egress: public addresses ([`public_internet_rule`]), the cluster
/// DNS to resolve the hosts it allows, each range of `allow_cidrs` (`--allow-cidr`), so a
/// proxy tricked into connecting elsewhere (a name resolving to a private address) is stopped
/// by the cluster too, and each address or range of the host specs `reached` (`10.1.2.3`,
/// `10.1.2.0/24:8000`: the proxy connects to those whatever their range; the proxy checks
/// the port).
pub fn proxy_upstream_rules(
    allow_cidrs: &[String],
    reached: &[HostSpec],
) -> Vec<NetworkPolicyEgressRule> {
    let mut rules = vec![public_internet_rule(), cluster_dns_rule()];
    let mut allow_cidrs: Vec<String> = allow_cidrs.to_vec();
    for spec in reached {
        if let HostSpec {
            pattern: agentc_egress::host::HostPattern::Addresses(range),
            ..
        } = spec
        {
            let range = range.to_string();
            if !allow_cidrs.contains(&range) {
                allow_cidrs.push(range);
            }
        }
    }
    if !allow_cidrs.is_empty() {
        rules.push(NetworkPolicyEgressRule {
            to: Some(
                allow_cidrs
                    .iter()
                    .map(|cidr| NetworkPolicyPeer {
                        ip_block: Some(IPBlock {
                            cidr: cidr.clone(),
                            except: None,
                        }),
                        namespace_selector: None,
                        pod_selector: None,
                    })
                    .collect(),
            ),
            ports: None,
        });
    }
    rules
}

/// A NetworkPolicy over the pods with `pod_labels`, for both directions: with no rules it
/// denies all ingress and egress.
pub fn policy(
    metadata: ObjectMeta,
    pod_labels: &BTreeMap<String, String>,
    ingress: Vec<NetworkPolicyIngressRule>,
    egress: Vec<NetworkPolicyEgressRule>,
) -> NetworkPolicy {
    NetworkPolicy {
        metadata,
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(selector(pod_labels)),
            policy_types: Some(vec!["Ingress".to_string(), "Egress".to_string()]),
            ingress: (!ingress.is_empty()).then_some(ingress),
            egress: (!egress.is_empty()).then_some(egress),
        }),
    }
}

/// A peer: the pods with these labels in the policy's namespace.
pub fn pods(labels: &BTreeMap<String, String>) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        pod_selector: Some(selector(labels)),
        namespace_selector: None,
        ip_block: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host specs of profile entries, each as one `--allow=` word, parsed as a loaded
    /// profile holds them.
    fn specs(hosts: &[&str]) -> Vec<HostSpec> {
        EgressPolicy {
            hosts: EgressHost::all(hosts),
            ..EgressPolicy::default()
        }
        .allowed()
    }

    #[test]
    fn the_proxy_argv_is_the_egress_crates_with_each_host_normalized() {
        let argv = egress_proxy_argv(
            &specs(&["API.Anthropic.com", "*.github.com:443"]),
            &["10.20.0.0/16".into()],
            &["*.github.com:443".into()],
            None,
            None,
        )
        .expect("valid");
        assert_eq!(
            argv,
            [
                "/usr/local/bin/agentc",
                "egress-proxy",
                "serve",
                "--listen=0.0.0.0:3128",
                "--dns=0.0.0.0:53",
                "--allow=api.anthropic.com",
                "--allow=*.github.com:443",
                "--allow-cidr=10.20.0.0/16",
                "--allow-ech=*.github.com:443",
                "--audit-dir=/var/lib/agentc/egress-audit"
            ]
        );
        assert_eq!(argv[0], agentc_egress::PROXY_BINARY);
        let refused = egress_proxy_argv(&[], &["0x0a000001".into()], &[], None, None)
            .expect_err("an IP literal is no range");
        assert!(refused.to_string().contains("0x0a000001"), "{refused}");
        let argv = egress_proxy_argv(&specs(&["10.0.0.1:8000"]), &[], &[], None, None).unwrap();
        assert!(
            argv.contains(&"--allow=10.0.0.1:8000".to_string()),
            "{argv:?}"
        );
    }

    #[test]
    fn the_proxy_reaches_public_addresses_the_cluster_dns_and_its_allowed_ranges_only() {
        let rules = proxy_upstream_rules(&[], &specs(&["api.example.com"]));
        assert_eq!(rules, [public_internet_rule(), cluster_dns_rule()]);
        // An address or a range the allowlist names is reachable by the proxy Pod, once.
        let rules = proxy_upstream_rules(
            &["10.1.2.3/32".into()],
            &specs(&["10.1.2.3", "192.168.0.0/24:8000", "a.example"]),
        );
        let named = serde_json::to_value(&rules[2]).expect("JSON");
        assert_eq!(
            named,
            serde_json::json!({"to": [
                {"ipBlock": {"cidr": "10.1.2.3/32"}},
                {"ipBlock": {"cidr": "192.168.0.0/24"}}
            ]})
        );
        let public = serde_json::to_value(&rules[0]).expect("JSON");
        let except = &public["to"][0]["ipBlock"]["except"];
        assert!(
            except
                .as_array()
                .is_some_and(|ranges| ranges.contains(&"169.254.0.0/16".into())
                    && ranges.contains(&"10.0.0.0/8".into())),
            "{except}"
        );
        let rules = proxy_upstream_rules(&["10.20.0.0/16".into()], &[]);
        assert_eq!(rules.len(), 3);
        let allowed = serde_json::to_value(&rules[2]).expect("JSON");
        assert_eq!(
            allowed,
            serde_json::json!({"to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}]})
        );
        assert!(
            rules.iter().all(|rule| rule.to.is_some()),
            "no rule allows everything"
        );
    }

    #[test]
    fn the_hosts_the_proxy_refuses_are_those_a_loaded_profile_holds_refused() {
        for good in [
            "10.0.0.0/8",
            "10.1.2.3",
            "10.1.2.3:8000",
            "[fd00::1]:443",
            "api.anthropic.com",
            "localhost",
            "registry.npmjs.org:443",
            "*.githubusercontent.com",
            "*.example.com:8443",
            "Example.COM",
        ] {
            assert!(EgressHost::new(good).single().is_ok(), "{good}");
        }
        for bad in [
            "",
            "*",
            "*.",
            "a..b",
            "-a.com",
            "a.com:0",
            "a.com:65536",
            "a.com:+1",
            "a.com:",
            "0x0a000001",
            "10.0.0.1/8",
            "[::1]:443",
            "::1",
            "a_b.com",
            "a.*.com",
            "http://a.com",
            ".a.com",
        ] {
            assert!(EgressHost::new(bad).single().is_err(), "{bad:?} is refused");
        }
    }

    #[test]
    fn from_profile_reads_mode_hosts_and_gateway() {
        let loaded = agentc_policy::load(
            "p.toml",
            "name = \"p\"\nagent = \"claude-code\"\n[egress]\nmode = \" Unrestricted \"\n",
        )
        .expect("valid");
        let policy = EgressPolicy::from_profile(&loaded);
        assert_eq!(policy.mode, EgressMode::Unrestricted);
        assert!(!policy.gateway);
        let loaded = agentc_policy::load(
            "p.toml",
            "name = \"p\"\nagent = \"claude-code\"\n[egress]\nhosts = [\"a.example\"]\n",
        )
        .expect("valid");
        let policy = EgressPolicy::from_profile(&loaded);
        assert_eq!(policy.mode, EgressMode::Allowlist);
        assert_eq!(policy.hosts, [EgressHost::new("a.example")]);
        assert_eq!(policy.hosts, loaded.egress_hosts());
    }
}
