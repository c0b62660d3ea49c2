//! The host path behind the egress proxy: what keeps a workload on its isolated network from
//! reaching the host's own addresses without the proxy.
//!
//! The isolated network is a bridge with no IPv4 address of the host's, but the host answers
//! ARP on it for its other addresses and accepts packets to them (the weak host model). A
//! process holding `NET_ADMIN` (a host route or a neighbour entry on `eth0`) or `NET_RAW` (an
//! ARP request, a raw frame) can therefore deliver packets to the host, past the proxy and its
//! log. So, behind the proxy ([`enforced_outside`]):
//!
//! - a workload that could hold either capability is refused before anything is created
//!   ([`check`]): the capability is in `security.add_capabilities` and the process may be root
//!   (`image.user` unset, the image's default; a user name, which may map to uid 0; uid 0).
//!   Only a numeric non-zero uid with no-new-privileges (always on) cannot regain it;
//! - the agent presets get neither ([`drops_preset_capability`]): their `NET_ADMIN` and
//!   `NET_RAW` exist for the image's own firewall, which stands down
//!   (`AGENT_ALLOWED_EGRESS=*`, [`stands_down`]) since the isolated network and the proxy
//!   enforce;
//! - `egress.allow_net_capabilities = true` keeps the old behaviour (the preset capabilities
//!   and the image's second-layer firewall, or the profile's own) as the high
//!   `egress-host-path` finding ([`findings`]), shown by `agentc explain` ([`widens`]);
//! - IPv6 is disabled in the workload ([`IPV6_SYSCTLS`]): no address, not even link-local.
//!   `/proc/sys` is read-only in the container, so this holds even against `NET_ADMIN`.

use crate::capability::Capability;
use crate::check::Checker;
use crate::explainer::Explainer;
use crate::finding::{FindingCode, Report};
use crate::keys;
use crate::profile::{AgentName, Profile};
use crate::spec::ContainerSpec;

use super::enforced_outside;

/// The profile field that accepts the host path.
pub const ALLOW_FIELD: &str = "egress.allow_net_capabilities";

/// The capabilities that open the host path.
pub const NET_CAPABILITIES: [Capability; 2] = [Capability::NetAdmin, Capability::NetRaw];

/// The sysctls of a workload behind the egress proxy: IPv6 off on every interface, those there
/// (`all`) and those to come (`default`).
pub const IPV6_SYSCTLS: [(&str, &str); 2] = [
    ("net.ipv6.conf.all.disable_ipv6", "1"),
    ("net.ipv6.conf.default.disable_ipv6", "1"),
];

/// What a capability lets a root process do on the isolated network.
fn opens(capability: Capability) -> &'static str {
    match capability {
        Capability::NetAdmin => {
            "add a route or a neighbour entry that sends packets straight to the host's own \
             addresses (which the host answers ARP for on the isolated bridge)"
        }
        _ => "send raw frames (ARP, IP, IPv6) to the host's own addresses on the isolated bridge",
    }
}

/// Why the workload's process may be root, or `None` when it cannot be: a numeric non-zero
/// uid (no-new-privileges is always on, so it cannot regain a capability).
pub(crate) fn may_be_root(profile: &Profile) -> Option<String> {
    let Some(user) = &profile.image.user else {
        return Some(if profile.agent == AgentName::Custom {
            "image.user is unset: the image's default user, which may be root".to_string()
        } else {
            "the preset image's entrypoint starts as root".to_string()
        });
    };
    let uid = user.trim().split(':').next().unwrap_or_default().trim();
    match uid.parse::<u32>() {
        Ok(0) => Some(format!("image.user {user:?} is root")),
        Ok(_) => None,
        Err(_) => Some(format!(
            "image.user {user:?} is a name, which may map to uid 0"
        )),
    }
}

/// Whether the launch keeps `NET_ADMIN` and `NET_RAW` behind the proxy (the escape hatch).
pub(crate) fn accepted(profile: &Profile) -> bool {
    profile.egress.allow_net_capabilities
}

/// Whether a preset capability is left out: `NET_ADMIN` or `NET_RAW` behind the proxy, without
/// the escape hatch.
pub(crate) fn drops_preset_capability(profile: &Profile, capability: Capability) -> bool {
    NET_CAPABILITIES.contains(&capability) && enforced_outside(profile) && !accepted(profile)
}

/// Whether the image's own firewall is told to stand down (`AGENT_ALLOWED_EGRESS=*`): behind
/// the proxy, without the escape hatch (the image has no `NET_ADMIN` to install it).
pub(crate) fn stands_down(profile: &Profile) -> bool {
    enforced_outside(profile) && !accepted(profile)
}

/// The refusal: behind the proxy, `NET_ADMIN` or `NET_RAW` for a workload that may be root,
/// without the escape hatch.
pub(crate) fn check(ck: &mut Checker, profile: &Profile) {
    if accepted(profile) && !enforced_outside(profile) {
        ck.fail_when(
            &[
                "egress.mode",
                "egress.enforce",
                "egress.hosts",
                "egress.gateway_host",
            ],
            ALLOW_FIELD,
            format!(
                "{ALLOW_FIELD} is read only behind agentc's egress proxy, which runs for \
                 mode = \"allowlist\" with hosts, enforce = \"outside\" and no gateway"
            ),
            "remove the field: without the proxy the capabilities are the preset's and the \
             profile's as written",
        );
    }
    if !enforced_outside(profile) || accepted(profile) {
        return;
    }
    let Some(root) = may_be_root(profile) else {
        return;
    };
    for (index, capability) in profile.security.add_capabilities.iter().enumerate() {
        if !NET_CAPABILITIES.contains(capability) {
            continue;
        }
        let field = format!("security.add_capabilities[{index}]");
        ck.fail_when(
            &["egress.enforce", "egress.hosts", "image.user", ALLOW_FIELD],
            &field,
            format!(
                "{field} adds {capability} behind the egress proxy, and {root}: with it the \
                 sandbox can {}, past the proxy and its log",
                opens(*capability)
            ),
            format!(
                "remove {capability} (the egress proxy enforces the allowlist; no firewall in \
                 the image is needed), run as a numeric non-root user (image.user = \
                 \"1000:1000\"), or set {ALLOW_FIELD} = true to accept the host path (a high \
                 finding)"
            ),
        );
    }
}

/// The capabilities that open the host path in a launch behind the proxy.
fn held(c: &ContainerSpec) -> Vec<Capability> {
    if c.egress.is_none() {
        return Vec::new();
    }
    NET_CAPABILITIES
        .into_iter()
        .filter(|capability| c.cap_add.contains(capability))
        .collect()
}

fn names(capabilities: &[Capability]) -> String {
    capabilities
        .iter()
        .map(|capability| capability.as_str())
        .collect::<Vec<_>>()
        .join(" and ")
}

/// `egress-host-path`: the escape hatch in use.
pub(crate) fn findings(report: &mut Report, c: &ContainerSpec) {
    let capabilities = held(c);
    if capabilities.is_empty() {
        return;
    }
    let position = report.position(ALLOW_FIELD);
    report.push(
        FindingCode::EgressHostPath,
        (ALLOW_FIELD.to_string(), position),
        format!(
            "the sandbox holds {} behind the egress proxy ({ALLOW_FIELD} = true): a root \
             process in it can reach the host's own addresses on its isolated network (a route, \
             a neighbour entry, a raw frame), without the proxy or its log",
            names(&capabilities)
        ),
        "remove egress.allow_net_capabilities: the presets then run without NET_ADMIN and \
         NET_RAW and their image's firewall stands down, since the proxy enforces",
    );
}

/// The "widens the sandbox" item of the escape hatch.
pub(crate) fn widens(out: &Explainer, c: &ContainerSpec, items: &mut Vec<String>) {
    let capabilities = held(c);
    if !capabilities.is_empty() {
        items.push(format!(
            "{} behind the egress proxy: the host's own addresses on the isolated network, \
             without the proxy or its log  [{}]",
            names(&capabilities),
            out.at(ALLOW_FIELD)
        ));
    }
}

/// The explanation's line on IPv6 and the host path, under the egress line.
pub(crate) fn explain(out: &mut Explainer, c: &ContainerSpec) {
    if c.egress.is_none() {
        return;
    }
    let sysctls: Vec<String> = IPV6_SYSCTLS
        .iter()
        .filter(|(key, value)| c.sysctls.get(*key).map(String::as_str) == Some(*value))
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    if !sysctls.is_empty() {
        out.line(format!(
            "  ipv6: off in the sandbox ({}): no address, not even link-local  [{}]",
            sysctls.join(", "),
            out.words(keys::EGRESS)
        ));
    }
    let capabilities = held(c);
    let words = if capabilities.is_empty() {
        "no NET_ADMIN or NET_RAW: no route, neighbour entry or raw frame to the host's own \
         addresses on the isolated network"
            .to_string()
    } else {
        format!(
            "{} held: a root process can reach the host's own addresses on the isolated \
             network, without the proxy",
            names(&capabilities)
        )
    };
    out.line(format!("  host path: {words}  [{}]", out.at(ALLOW_FIELD)));
}

/// Disables IPv6 in a workload behind the proxy.
pub(crate) fn disable_ipv6(container: &mut ContainerSpec) {
    for (key, value) in IPV6_SYSCTLS {
        container.sysctls.insert(key.to_string(), value.to_string());
    }
}

#[cfg(test)]
mod tests;
