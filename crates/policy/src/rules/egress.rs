//! `[egress]`: the mode, the allowlist, the SSH gateway and its key files; the variables that
//! hand them to the image's entrypoint; where egress is enforced, in words; and the egress
//! findings (`egress-unrestricted`, `egress-unenforced`, `egress-tld`, `egress-domain`,
//! `egress-ip-range`, `egress-ech`; `egress-host-path` in [`host_path`]).

pub(crate) mod host_path;
pub(crate) mod outside;
pub(crate) mod upstream;

pub use outside::chained as upstream_proxy;
pub use upstream::Chained;

use std::collections::BTreeSet;
use std::net::IpAddr;

use crate::check::Checker;
use crate::context::{EnvBuilder, Resolver};
use crate::document::LoadedProfile;
use crate::egress_hosts::EgressHost;
use crate::error::PolicyError;
use crate::explainer::Explainer;
use crate::finding::{FindingCode, Report};
use crate::inputs::PathKind;
use crate::keys;
use crate::presets;
use crate::profile::{AgentName, EgressMode, MountConfig, Profile};
use crate::spec::{ContainerSpec, Mount, MountSource};
use crate::text::is_ip_or_cidr;

pub(crate) use outside::enforced_outside;
pub use outside::{endpoint_specs, Endpoint, NO_PROXY_VARIABLES, PROXY_VARIABLES};

/// The egress fields one by one, and the gateway options that go together.
pub(crate) fn check(ck: &mut Checker, profile: &Profile) {
    let egress = &profile.egress;
    for (index, host) in egress.hosts.iter().enumerate() {
        let field = format!("egress.hosts[{index}]");
        if host.trim() == "*" {
            ck.fail(
                &field,
                format!("{field}: '*' is not a hostname"),
                "to disable egress filtering entirely, set mode = \"unrestricted\" and remove \
                 the '*' entry; to allow specific hosts, name each one",
            );
            continue;
        }
        ck.token(&field, host, "one host name");
    }
    if let Some(host) = &egress.gateway_host {
        ck.token(
            "egress.gateway_host",
            host,
            "the gateway's host name or address",
        );
    }
    if let Some(user) = &egress.gateway_user {
        ck.token("egress.gateway_user", user, "the gateway's ssh user");
    }
    if let Some(host) = &egress.gateway_access_hostname {
        ck.token(
            "egress.gateway_access_hostname",
            host,
            "the host name of the gateway",
        );
    }
    for (index, entry) in egress.gateway_bootstrap_allow.iter().enumerate() {
        let field = format!("egress.gateway_bootstrap_allow[{index}]");
        if ck.line(&field, entry, "an ip address or cidr") && !is_ip_or_cidr(entry.trim()) {
            ck.fail(
                &field,
                format!("{field} {:?} is not an ip address or cidr", entry.trim()),
                "write an address such as `192.0.2.10` or a network such as `10.0.0.0/8`",
            );
        }
    }
    if let Some(file) = &egress.gateway_key_file {
        ck.line(
            "egress.gateway_key_file",
            file,
            "the path of the ssh private key",
        );
    }
    if let Some(file) = &egress.gateway_known_hosts_file {
        ck.line(
            "egress.gateway_known_hosts_file",
            file,
            "the path of the known-hosts file",
        );
    }
    gateway_pairs(ck, profile);
    outside::check(ck, profile);
    upstream::check(ck, profile, enforced_outside(profile));
    host_path::check(ck, profile);
    if egress.mode == EgressMode::Unrestricted {
        if !egress.hosts.is_empty() {
            ck.fail_when(
                &["egress.mode"],
                "egress.hosts",
                "egress.hosts must be empty when egress.mode is unrestricted",
                "remove the hosts, or set mode = \"allowlist\" to allow only them",
            );
        }
        if egress.gateway_host.is_some() {
            ck.fail_when(
                &["egress.mode"],
                "egress.gateway_host",
                "egress.gateway_host cannot be used when egress.mode is unrestricted",
                "remove the gateway, or set mode = \"allowlist\" or \"deny\" to route through it",
            );
        }
    }
}

/// The gateway fields that need each other.
fn gateway_pairs(ck: &mut Checker, profile: &Profile) {
    let egress = &profile.egress;
    let pair = ["egress.gateway_host", "egress.gateway_port"];
    match (&egress.gateway_host, egress.gateway_port) {
        (Some(_), None) => ck.fail_when(
            &pair,
            "egress.gateway_host",
            "egress.gateway_host requires egress.gateway_port",
            "add gateway_port, the gateway's ssh port (usually 22)",
        ),
        (None, Some(_)) => ck.fail_when(
            &pair,
            "egress.gateway_port",
            "egress.gateway_port requires egress.gateway_host",
            "add gateway_host, or remove gateway_port",
        ),
        _ => {}
    }
    if egress.gateway_host.is_none() {
        let options = [
            ("egress.gateway_user", egress.gateway_user.is_some()),
            (
                "egress.gateway_access_hostname",
                egress.gateway_access_hostname.is_some(),
            ),
            (
                "egress.gateway_bootstrap_allow",
                !egress.gateway_bootstrap_allow.is_empty(),
            ),
            ("egress.gateway_key_file", egress.gateway_key_file.is_some()),
            (
                "egress.gateway_known_hosts_file",
                egress.gateway_known_hosts_file.is_some(),
            ),
        ];
        for (field, _) in options.iter().filter(|(_, set)| *set) {
            ck.fail_when(
                &["egress.gateway_host"],
                field,
                format!("{field} requires egress.gateway_host"),
                "gateway options configure an ssh gateway; add gateway_host and gateway_port, \
                 or remove the option",
            );
        }
    }
    let files = ["egress.gateway_key_file", "egress.gateway_known_hosts_file"];
    match (&egress.gateway_key_file, &egress.gateway_known_hosts_file) {
        (Some(_), None) => ck.fail_when(
            &files,
            "egress.gateway_known_hosts_file",
            "egress.gateway_key_file requires egress.gateway_known_hosts_file",
            "add gateway_known_hosts_file so the gateway's host key is verified",
        ),
        (None, Some(_)) => ck.fail_when(
            &files,
            "egress.gateway_key_file",
            "egress.gateway_known_hosts_file requires egress.gateway_key_file",
            "add gateway_key_file, the ssh private key for the gateway",
        ),
        _ => {}
    }
}

/// Gateway variables or the egress allowlist, handed to the image's entrypoint.
pub(crate) fn env(profile: &Profile, env: &mut EnvBuilder) {
    let egress = &profile.egress;
    if let Some(host) = &egress.gateway_host {
        env.literal("AGENT_GATEWAY_HOST", host, "egress.gateway_host");
        let port = egress
            .gateway_port
            .map(|port| port.to_string())
            .unwrap_or_default();
        env.literal("AGENT_GATEWAY_PORT", &port, "egress.gateway_port");
        if let Some(user) = &egress.gateway_user {
            env.literal("AGENT_GATEWAY_USER", user, "egress.gateway_user");
        }
        if let Some(name) = &egress.gateway_access_hostname {
            env.literal(
                "AGENT_GATEWAY_ACCESS_HOSTNAME",
                name,
                "egress.gateway_access_hostname",
            );
        }
        if !egress.gateway_bootstrap_allow.is_empty() {
            env.literal(
                "AGENT_GATEWAY_BOOTSTRAP_ALLOW",
                &egress.gateway_bootstrap_allow.join(","),
                "egress.gateway_bootstrap_allow",
            );
        }
    } else if egress.mode == EgressMode::Unrestricted {
        env.literal("AGENT_ALLOWED_EGRESS", "*", "egress.mode");
    } else if host_path::stands_down(profile) {
        // Behind the proxy the image gets no NET_ADMIN for its firewall: it stands down.
        env.literal("AGENT_ALLOWED_EGRESS", "*", "egress.hosts");
    } else if egress.mode == EgressMode::Allowlist && !egress.hosts.is_empty() {
        env.literal(
            "AGENT_ALLOWED_EGRESS",
            &egress.hosts.join(","),
            "egress.hosts",
        );
    }
}

impl Resolver<'_> {
    /// The gateway's key and known-hosts inputs: given as files (mounted read-only at their
    /// generated targets, which are then reserved) or as read-only profile mounts at those
    /// targets. With `gateway` (an agent's run with a gateway), each input is required.
    pub fn gateway_inputs(
        &mut self,
        container: &mut ContainerSpec,
        mounts: &[(String, &MountConfig)],
        reserved: &mut BTreeSet<String>,
        gateway: bool,
    ) -> Result<(), PolicyError> {
        let egress = &self.profile.egress;
        let inputs = [
            (
                presets::GATEWAY_KEY_TARGET,
                &egress.gateway_key_file,
                "egress.gateway_key_file",
                "gateway key",
                "gateway key",
            ),
            (
                presets::GATEWAY_KNOWN_HOSTS_TARGET,
                &egress.gateway_known_hosts_file,
                "egress.gateway_known_hosts_file",
                "gateway known-hosts",
                "gateway known-hosts file",
            ),
        ];
        if gateway {
            for (target, file, file_field, label, _) in inputs {
                match mounts.iter().find(|(_, mount)| mount.target == target) {
                    None if file.is_none() => {
                        return Err(self.invalid(
                            file_field,
                            format!("{label} input is required when gateway mode is enabled"),
                            &format!("set {file_field}, or mount the file at {target}"),
                        ))
                    }
                    None => {}
                    Some((field, mount)) => {
                        if !mount.read_only {
                            return Err(self.invalid(
                                &format!("{field}.read_only"),
                                format!("{label} mount must be read-only"),
                                "remove read_only = false from this mount",
                            ));
                        }
                        self.require_path(
                            &format!("{field}.source"),
                            &mount.source,
                            PathKind::File,
                            label,
                        )?;
                    }
                }
            }
        }
        for (target, file, field, _, label) in inputs {
            if let Some(file) = file {
                let path = self.require_path(field, file, PathKind::File, label)?;
                container.mounts.push(Mount {
                    target: target.to_string(),
                    read_only: true,
                    source: MountSource::Bind { path },
                });
                let origin = self.field_origin(field);
                self.set(keys::mount(target), origin);
                reserved.insert(target.to_string());
            }
        }
        Ok(())
    }
}

/// The egress line of the network section: the policy and where it is enforced.
pub(crate) fn explain(out: &mut Explainer) {
    let words = egress_words(out);
    out.line(format!("  egress: {words}"));
    if let Some(words) = wildcard_words(out) {
        out.line(format!("  egress wildcard look-ups: {words}"));
    }
    if let Some(words) = address_words(out) {
        out.line(format!("  egress addresses: {words}"));
    }
    upstream::explain(out, outside::chained(out.profile));
    let endpoints = if enforced_outside(&out.profile.profile) {
        outside::named_endpoints(out.profile)
    } else {
        Vec::new()
    };
    for endpoint in endpoints {
        out.line(format!(
            "  egress endpoint: {} is allowed too, at its own port, because the profile names it  [{}]",
            endpoint.spec,
            out.at(endpoint.field)
        ));
    }
}

/// The address and range entries of an allowlist the proxy enforces (`10.1.2.3`,
/// `10.1.2.0/24:8000`), as the proxy reads them.
pub(crate) fn address_entries(loaded: &LoadedProfile) -> Vec<String> {
    if !enforced_outside(&loaded.profile) {
        return Vec::new();
    }
    EgressHost::allowed(loaded.egress_hosts())
        .iter()
        .filter(|spec| spec.is_addresses())
        .map(|spec| spec.to_string())
        .collect()
}

/// What the proxy does with requests written to an address the allowlist names.
fn address_words(out: &Explainer) -> Option<String> {
    let entries = address_entries(out.profile);
    if entries.is_empty() {
        return None;
    }
    Some(format!(
        "a request whose target is written as an address ({}; 443 and 80 where no port is \
         named) is let through to exactly that address, even in a private range: the profile \
         names it; no name is resolved for it, every other address literal is refused, and a \
         name that resolves into such a range still needs egress.allow_cidrs  [{}]",
        entries.join(", "),
        out.at("egress.hosts")
    ))
}

/// The bound on look-ups of wildcard-allowed names, when the proxy enforces an allowlist with
/// a `*.domain` (or `.domain`) host.
fn wildcard_words(out: &Explainer) -> Option<String> {
    let profile = &out.profile.profile;
    if !enforced_outside(profile) {
        return None;
    }
    let wildcards: Vec<String> = out
        .profile
        .egress_hosts()
        .iter()
        .flat_map(EgressHost::written)
        .filter(|spec| spec.starts_with("*."))
        .collect();
    if wildcards.is_empty() {
        return None;
    }
    let names = profile
        .egress
        .wildcard_names_per_minute
        .unwrap_or(agentc_egress::wildcard::DEFAULT_NAMES_PER_MINUTE);
    let origin = out.at("egress.wildcard_names_per_minute");
    Some(format!(
        "at most {names} distinct names a minute under each of {}, each resolved through the \
         host's resolver (a DNS query to that domain's name servers) and logged; one more is \
         refused (wildcard-rate); exact hosts are not counted  [{origin}]",
        wildcards.join(", ")
    ))
}

fn egress_words(out: &Explainer) -> String {
    let profile = &out.profile.profile;
    let egress = &profile.egress;
    let field = match out.profile.position("egress.mode") {
        Some((line, _)) => format!("profile line {line} (egress.mode)"),
        None => "default".to_string(),
    };
    if enforced_outside(profile) {
        let outside = match &egress.outside_network {
            Some(name) => format!("network {name}"),
            None => "the default bridge".to_string(),
        };
        let enforce = match out.profile.position("egress.enforce") {
            Some((line, _)) => format!("; profile line {line} (egress.enforce)"),
            None => String::new(),
        };
        let image = if profile.agent == AgentName::Custom {
            ""
        } else if host_path::stands_down(profile) {
            "; the image's firewall stands down (AGENT_ALLOWED_EGRESS=*)"
        } else {
            "; the image's firewall is a second layer"
        };
        return format!(
            "allowlist {}, enforced outside the sandbox by agentc's egress proxy: the sandbox \
             joins only an isolated network whose one way out is the proxy, which reaches out \
             through {outside}{image}  [{field}{enforce}]",
            egress.hosts.join(", ")
        );
    }
    if outside::relays_only(profile) {
        return format!(
            "deny, enforced outside the sandbox by agentc's egress proxy: the sandbox joins only \
             an isolated network with no way out, and the proxy, with an empty allowlist, \
             refuses every request and relays only the published ports  [{field}]"
        );
    }
    if profile.agent == AgentName::Custom {
        return match egress.mode {
            EgressMode::Deny => format!("deny, enforced by having no network  [{field}]"),
            mode => format!(
                "{}, not enforced: a custom image has no egress firewall  [{field}]",
                mode.as_str()
            ),
        };
    }
    if let Some(host) = &egress.gateway_host {
        return format!(
            "through the SSH gateway {host}, enforced by the image's firewall  [{field}]"
        );
    }
    match egress.mode {
        EgressMode::Deny => format!("deny, enforced by having no network  [{field}]"),
        EgressMode::Unrestricted => format!("unrestricted  [{field}]"),
        EgressMode::Allowlist if egress.hosts.is_empty() => {
            format!("allowlist with no hosts, enforced by the image's firewall  [{field}]")
        }
        EgressMode::Allowlist => format!(
            "allowlist {}, enforced by the image's firewall  [{field}]",
            egress.hosts.join(", ")
        ),
    }
}

/// What widens the sandbox here: unrestricted egress.
pub(crate) fn widens(out: &Explainer, items: &mut Vec<String>) {
    let egress = &out.profile.profile.egress;
    if egress.mode == EgressMode::Unrestricted {
        items.push(format!("unrestricted egress  [{}]", out.at("egress.mode")));
    }
    if enforced_outside(&out.profile.profile) && !egress.allow_cidrs.is_empty() {
        items.push(format!(
            "the egress proxy may connect to the private or reserved ranges {}  [{}]",
            egress.allow_cidrs.join(", "),
            out.at("egress.allow_cidrs")
        ));
    }
    upstream::widens(out, outside::chained(out.profile), items);
    let addresses = address_entries(out.profile);
    if !addresses.is_empty() {
        items.push(format!(
            "the egress proxy connects to the addresses the allowlist names, private or not: {}  [{}]",
            addresses.join(", "),
            out.at("egress.hosts")
        ));
    }
    if enforced_outside(&out.profile.profile) && !egress.allow_ech.is_empty() {
        items.push(format!(
            "the egress proxy lets TLS with Encrypted Client Hello through to {}: the name \
             such a client really asks for is hidden from the SNI check  [{}]",
            egress.allow_ech.join(", "),
            out.at("egress.allow_ech")
        ));
    }
}

/// How much of the network an allowlist entry opens, when it is more than one host:
/// `(code, what)`.
///
/// - an IP network in CIDR form wider than one address (`10.0.0.0/8`; not `/32` or `/128`):
///   `egress-ip-range`;
/// - after removing a leading `*.` or `.`, a single label (`com`, `.io`, `*.dev`):
///   `egress-tld`; `localhost` alone is not reported;
/// - a leading `.` or `*.` before two or more labels, or a `*` anywhere: `egress-domain`.
pub fn host_scope(entry: &str) -> Option<(FindingCode, String)> {
    let host = scope_text(entry);
    scope(&host, agentc_egress::HostSpec::parse(&host).ok().as_ref())
}

/// An entry as [`host_scope`] compares it: trimmed, without trailing dots, in lower case.
fn scope_text(entry: &str) -> String {
    entry.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// [`host_scope`] of the entry `host` ([`scope_text`]), which the egress proxy reads as
/// `spec` when it is one host spec.
fn scope(host: &str, spec: Option<&agentc_egress::HostSpec>) -> Option<(FindingCode, String)> {
    // An address or a range as the egress proxy reads it (`[fd00::5]:443`, `10.0.0.0/8:8000`).
    if let Some(agentc_egress::HostSpec {
        pattern: agentc_egress::host::HostPattern::Addresses(range),
        ..
    }) = spec
    {
        let single = range.prefix == if range.network.is_ipv4() { 32 } else { 128 };
        return (!single).then(|| (FindingCode::EgressIpRange, format!("the network {range}")));
    }
    if let Some((address, prefix)) = host.split_once('/') {
        let address: IpAddr = address.parse().ok()?;
        let prefix: u8 = prefix.parse().ok()?;
        let single = match address {
            IpAddr::V4(_) => prefix >= 32,
            IpAddr::V6(_) => prefix >= 128,
        };
        return (!single).then(|| (FindingCode::EgressIpRange, format!("the network {host}")));
    }
    if host.parse::<IpAddr>().is_ok() {
        return None;
    }
    let (wild, rest) = match host.strip_prefix("*.").or_else(|| host.strip_prefix('.')) {
        Some(rest) => (true, rest),
        None => (false, host),
    };
    let labels = rest.split('.').filter(|label| !label.is_empty()).count();
    if labels <= 1 && rest != "localhost" {
        return Some((FindingCode::EgressTld, format!("every host under {rest}")));
    }
    if wild || rest.contains('*') {
        return Some((
            FindingCode::EgressDomain,
            format!("every host under {}", rest.trim_start_matches("*.")),
        ));
    }
    None
}

/// The egress findings of an agent launch.
pub(crate) fn findings(report: &mut Report) {
    let profile = &report.loaded.profile;
    let egress = &profile.egress;
    let mode = egress.mode;
    let at = ("egress.mode".to_string(), report.position("egress.mode"));
    if mode == EgressMode::Unrestricted {
        report.push(
            FindingCode::EgressUnrestricted,
            at,
            "egress is unrestricted: the agent can reach any host and send it anything it can read"
                .to_string(),
            "set egress.mode = \"allowlist\" with the hosts the agent needs, or \"deny\"",
        );
        return;
    }
    if profile.agent == AgentName::Custom && !enforced_outside(profile) {
        if mode != EgressMode::Deny {
            report.push(
                FindingCode::EgressUnenforced,
                at,
                format!(
                    "egress mode {} is not enforced: a custom image has no egress firewall, \
                     so the sandbox reaches any host",
                    mode.as_str()
                ),
                "list the hosts in egress.hosts with egress.enforce = \"outside\" (agentc's egress \
                 proxy), or set egress.mode = \"deny\" to run without a network",
            );
        }
        return;
    }
    let hosts = report.loaded.egress_hosts().to_vec();
    let bootstrap = egress.gateway_bootstrap_allow.clone();
    let gateway = egress.gateway_host.is_some();
    if mode != EgressMode::Allowlist && !gateway {
        return;
    }
    if enforced_outside(profile) {
        for (index, entry) in egress.allow_ech.iter().enumerate() {
            let field = format!("egress.allow_ech[{index}]");
            let position = report.position(&field);
            // High: behind a shared front (a CDN), a hidden inner name reaches every site the
            // front serves, an attacker's included, and no log line names it.
            report.push(
                FindingCode::EgressEch,
                (field, position),
                format!(
                    "ECH is allowed for {:?}: the name inside the encrypted ClientHello is \
                     hidden from the egress proxy, so through a shared front (a CDN) the \
                     sandbox can reach any site that front serves",
                    entry.trim()
                ),
                "remove the entry unless the client cannot work without ECH; inside the \
                 sandbox no DNS answers, so a client without an ECH configuration only sends \
                 GREASE ECH, which its TLS library can turn off",
            );
        }
    }
    if mode == EgressMode::Allowlist {
        for (index, host) in hosts.iter().enumerate() {
            // The entry as the proxy reads it, parsed when the profile was loaded.
            let spec = match host.specs() {
                Ok([spec]) => Some(spec),
                _ => None,
            };
            if let Some((code, what)) = scope(&scope_text(host.text()), spec) {
                let field = format!("egress.hosts[{index}]");
                let position = report.position(&field);
                report.push(
                    code,
                    (field, position),
                    format!("allowlist entry {:?} opens {what}", host.text()),
                    "name each host the agent needs instead of a domain or a network",
                );
            }
        }
    }
    if gateway {
        for (index, entry) in bootstrap.iter().enumerate() {
            if let Some((FindingCode::EgressIpRange, what)) = host_scope(entry) {
                let field = format!("egress.gateway_bootstrap_allow[{index}]");
                let position = report.position(&field);
                report.push(
                    FindingCode::EgressIpRange,
                    (field, position),
                    format!(
                        "gateway bootstrap entry {:?} opens {what} before the gateway is up",
                        entry.trim()
                    ),
                    "allow only the gateway's own address",
                );
            }
        }
    }
}
