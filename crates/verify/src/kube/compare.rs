//! The comparison of a played pod with what its probe observed: each field of the rendered
//! workload container (and its pod) that the kernel can show, checked as verify checks a
//! container launch; each field Podman does not enforce reported `skip` with why.
//!
//! A fact that could not be observed fails its check, as in [`crate::compare()`].

use std::collections::BTreeSet;

use agentc_backend_k8s::k8s_openapi::api::core::v1::{Container, PodSpec, Volume};
use agentc_backend_k8s::play::Play;

use crate::check::{check, fact_check, Check, Fact, NOT_OBSERVED};
use crate::compare::capability_checks;
use crate::parse::{Limit, Observation};

/// Where Kubernetes mounts a service account's token; absent when the pod mounts none.
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// A check not tried here: what the field asks, and why only a cluster shows it.
fn skip(what: impl Into<String>, expected: impl Into<String>, why: impl Into<String>) -> Check {
    Check {
        skipped: true,
        ..check(what, expected, why, true)
    }
}

/// The workload container `agent` of `pod` compared with `observed`; `network` is how the
/// play ran its network (`none`, or the internal network's name).
pub fn compare_pod(
    pod: &PodSpec,
    agent: &Container,
    observed: &Observation,
    play: &Play,
    network: &str,
) -> Vec<Check> {
    let mut checks = Vec::new();
    identity(pod, agent, observed, &mut checks);
    filesystems(pod, agent, observed, &mut checks);
    privileges(pod, agent, observed, &mut checks);
    resources(agent, observed, &mut checks);
    cluster_fields(pod, agent, observed, network, &mut checks);
    for adaptation in &play.adaptations {
        checks.push(skip(
            format!("played: {}", adaptation.field),
            "as rendered",
            &adaptation.change,
        ));
    }
    for not_played in &play.not_played {
        checks.push(skip(
            format!("not played: {}", not_played.object),
            "enforced by the cluster",
            &not_played.reason,
        ));
    }
    checks
}

/// `runAsUser`/`runAsGroup` (the container's, else the pod's) and the uid the probe ran as.
fn identity(pod: &PodSpec, agent: &Container, observed: &Observation, checks: &mut Vec<Check>) {
    let context = agent.security_context.as_ref();
    let pod_context = pod.security_context.as_ref();
    let user = context
        .and_then(|context| context.run_as_user)
        .or_else(|| pod_context.and_then(|context| context.run_as_user));
    let group = context
        .and_then(|context| context.run_as_group)
        .or_else(|| pod_context.and_then(|context| context.run_as_group));
    let seen = match (observed.uid, observed.gid) {
        (Some(uid), Some(gid)) => format!("{uid}:{gid}"),
        _ => NOT_OBSERVED.to_string(),
    };
    let expected = match (user, group) {
        (Some(user), Some(group)) => format!("{user}:{group}"),
        (Some(user), None) => format!("{user}:the image's group"),
        (None, _) => "the image's USER".to_string(),
    };
    let ok = observed.uid.is_some()
        && user.is_none_or(|user| observed.uid.map(i64::from) == Some(user))
        && group.is_none_or(|group| observed.gid.map(i64::from) == Some(group));
    checks.push(check("user", expected, seen.clone(), ok));
    let non_root = context
        .and_then(|context| context.run_as_non_root)
        .or_else(|| pod_context.and_then(|context| context.run_as_non_root));
    if non_root == Some(true) {
        // Podman does not check it, but a probe that ran as root shows that the kubelet would
        // refuse to start this pod.
        if observed.uid == Some(0) {
            checks.push(Check {
                hint: Some(
                    "the image's USER is root: set [image] user to a numeric uid other than 0, \
                     such as \"1000:1000\", or use an image whose USER is one"
                        .to_string(),
                ),
                ..check(
                    "runAsNonRoot",
                    "a uid other than 0",
                    format!("{seen}: the kubelet would refuse to start the pod"),
                    false,
                )
            });
        } else {
            checks.push(skip(
                "runAsNonRoot",
                "a uid other than 0",
                format!("needs a cluster to refuse uid 0, which Podman does not (the probe ran as {seen})"),
            ));
        }
    }
    if let Some(dir) = &agent.working_dir {
        let seen = observed.working_dir.clone();
        checks.push(check(
            "working directory",
            dir.as_str(),
            seen.clone().unwrap_or_else(|| NOT_OBSERVED.to_string()),
            seen.as_deref() == Some(dir.as_str()),
        ));
    }
}

/// The root filesystem and each volume mount.
fn filesystems(pod: &PodSpec, agent: &Container, observed: &Observation, checks: &mut Vec<Check>) {
    let read_only = agent
        .security_context
        .as_ref()
        .and_then(|context| context.read_only_root_filesystem)
        == Some(true);
    let root = observed.mount_at("/").map(|entry| entry.has("ro"));
    let (ok, seen) = match root {
        None => (false, NOT_OBSERVED.to_string()),
        Some(ro) => (
            ro == read_only && (!read_only || observed.root_write_succeeded != Some(true)),
            if ro { "read-only" } else { "writable" }.to_string(),
        ),
    };
    checks.push(check(
        "readOnlyRootFilesystem",
        if read_only { "read-only" } else { "writable" },
        seen,
        ok,
    ));
    let volumes = pod.volumes.as_deref().unwrap_or_default();
    for mount in agent.volume_mounts.iter().flatten() {
        let volume = volumes.iter().find(|volume| volume.name == mount.name);
        let kind = volume.map_or("volume", volume_kind);
        let target = &mount.mount_path;
        let what = format!("{kind} {target}");
        let Some(entry) = observed.mount_at(target) else {
            checks.push(check(what, "mounted", "not mounted", false));
            continue;
        };
        let ro = entry.has("ro");
        let wanted = mount.read_only == Some(true);
        if !wanted
            && volume
                .and_then(|volume| volume.empty_dir.as_ref())
                .is_some()
        {
            let write = observed
                .tmpfs_writes
                .iter()
                .rev()
                .find(|write| &write.target == target);
            let writable = write.map(|write| write.writable);
            checks.push(check(
                what.clone(),
                "writable by the pod's user",
                match writable {
                    Some(true) => format!("{}, writable", entry.fstype),
                    Some(false) => format!("{}, write refused", entry.fstype),
                    None => format!("{}, write not tried", entry.fstype),
                },
                writable == Some(true) && !ro,
            ));
            let memory = volume
                .and_then(|volume| volume.empty_dir.as_ref())
                .and_then(|dir| dir.medium.as_deref())
                == Some("Memory");
            if memory {
                if entry.fstype == "tmpfs" {
                    checks.push(check(format!("{what} medium"), "tmpfs", "tmpfs", true));
                } else {
                    checks.push(skip(
                        format!("{what} medium"),
                        "tmpfs (medium: Memory)",
                        format!(
                            "needs a cluster: Podman 4.x makes a volume on disk of it ({}; a \
                             tmpfs from Podman 5), and applies no sizeLimit",
                            entry.fstype
                        ),
                    ));
                }
            }
            continue;
        }
        checks.push(check(
            what,
            if wanted { "read-only" } else { "read-write" },
            if ro { "read-only" } else { "read-write" },
            ro == wanted,
        ));
    }
}

/// What a pod volume is, as the table names it.
fn volume_kind(volume: &Volume) -> &'static str {
    if volume.empty_dir.is_some() {
        "emptyDir"
    } else if volume.persistent_volume_claim.is_some() {
        "persistentVolumeClaim"
    } else if volume.config_map.is_some() {
        "configMap"
    } else if volume.secret.is_some() {
        "secret"
    } else if volume.host_path.is_some() {
        "hostPath"
    } else {
        "volume"
    }
}

/// A capability of the rendering as the kernel's table spells it: without `CAP_`.
fn bare(name: &str) -> String {
    name.trim_start_matches("CAP_").to_string()
}

/// Capabilities, `allowPrivilegeEscalation` and the seccomp profile.
fn privileges(pod: &PodSpec, agent: &Container, observed: &Observation, checks: &mut Vec<Check>) {
    let context = agent.security_context.as_ref();
    let capabilities = context.and_then(|context| context.capabilities.as_ref());
    let drops_all = capabilities
        .and_then(|caps| caps.drop.as_ref())
        .is_some_and(|drop| drop.iter().any(|cap| cap == "ALL"));
    let added: BTreeSet<String> = capabilities
        .and_then(|caps| caps.add.as_ref())
        .into_iter()
        .flatten()
        .map(|cap| bare(cap))
        .collect();
    checks.extend(capability_checks(
        &added,
        drops_all,
        "the runtime's default",
        observed,
    ));
    let escalation = context.and_then(|context| context.allow_privilege_escalation);
    let seen = match observed.no_new_privs {
        Some(true) => "NoNewPrivs 1",
        Some(false) => "NoNewPrivs 0",
        None => NOT_OBSERVED,
    };
    checks.push(fact_check(
        Fact::NoNewPrivileges,
        if escalation == Some(false) {
            "NoNewPrivs 1 (allowPrivilegeEscalation: false)"
        } else {
            "not required"
        },
        seen,
        if escalation == Some(false) {
            observed.no_new_privs == Some(true)
        } else {
            observed.no_new_privs.is_some()
        },
    ));
    let profile = context
        .and_then(|context| context.seccomp_profile.as_ref())
        .or_else(|| {
            pod.security_context
                .as_ref()
                .and_then(|context| context.seccomp_profile.as_ref())
        })
        .map(|profile| profile.type_.as_str());
    let (expected, wants_filter) = match profile {
        Some("Unconfined") => ("disabled (Unconfined)", false),
        Some(kind) => (
            if kind == "Localhost" {
                "filter (Localhost)"
            } else {
                "filter (RuntimeDefault)"
            },
            true,
        ),
        None => ("filter (the runtime's default)", true),
    };
    let (ok, seen) = match observed.seccomp {
        Some(2) => (wants_filter, "filter".to_string()),
        Some(0) => (!wants_filter, "disabled".to_string()),
        Some(mode) => (false, format!("mode {mode}")),
        None => (false, NOT_OBSERVED.to_string()),
    };
    checks.push(fact_check(Fact::Seccomp, expected, seen, ok));
    let apparmor = context
        .and_then(|context| context.app_armor_profile.as_ref())
        .or_else(|| {
            pod.security_context
                .as_ref()
                .and_then(|context| context.app_armor_profile.as_ref())
        });
    if let Some(profile) = apparmor {
        checks.push(skip(
            "appArmorProfile",
            profile.type_.as_str(),
            "needs a cluster: Podman reads no AppArmor field (the host's default applies)",
        ));
    }
}

/// A Kubernetes quantity in bytes (`4Gi`, `512Mi`, `1G`, `1000`); `None` for what agentc
/// never renders.
fn bytes(quantity: &str) -> Option<u64> {
    let split = quantity
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(quantity.len());
    let (number, suffix) = quantity.split_at(split);
    let number: u64 = number.parse().ok()?;
    let unit: u64 = match suffix {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        _ => return None,
    };
    number.checked_mul(unit)
}

/// A Kubernetes CPU quantity in billionths of a CPU (`500m`, `2`, `1.5`).
fn nano_cpus(quantity: &str) -> Option<u64> {
    if let Some(milli) = quantity.strip_suffix('m') {
        return milli.parse::<u64>().ok()?.checked_mul(1_000_000);
    }
    let value: f64 = quantity.parse().ok()?;
    (value >= 0.0).then(|| (value * 1e9).round() as u64)
}

fn limit_text(limit: Option<Limit>) -> String {
    match limit {
        None => NOT_OBSERVED.to_string(),
        Some(Limit::Unlimited) => "unlimited".to_string(),
        Some(Limit::Value(value)) => value.to_string(),
    }
}

/// `limits.memory` and `limits.cpu` against the cgroup files; the pids limit left to the
/// cluster.
fn resources(agent: &Container, observed: &Observation, checks: &mut Vec<Check>) {
    let limits = agent
        .resources
        .as_ref()
        .and_then(|resources| resources.limits.as_ref());
    let limit = |name: &str| {
        limits
            .and_then(|limits| limits.get(name))
            .map(|q| q.0.clone())
    };
    for (fact, quantity, parse, seen) in [
        (
            Fact::MemoryLimit,
            limit("memory"),
            bytes as fn(&str) -> Option<u64>,
            observed.memory_limit(),
        ),
        (
            Fact::CpuQuota,
            limit("cpu"),
            nano_cpus,
            observed.nano_cpus(),
        ),
    ] {
        let wanted = match &quantity {
            Some(text) => match parse(text) {
                Some(value) => Limit::Value(value),
                None => {
                    checks.push(fact_check(
                        fact,
                        text.as_str(),
                        "not a quantity verify reads",
                        false,
                    ));
                    continue;
                }
            },
            None => Limit::Unlimited,
        };
        let expected = match &quantity {
            Some(text) => format!("{} ({text})", limit_text(Some(wanted))),
            None => "unlimited".to_string(),
        };
        checks.push(fact_check(
            fact,
            expected,
            limit_text(seen),
            seen == Some(wanted),
        ));
    }
    checks.push(Check {
        skipped: true,
        ..fact_check(
            Fact::PidsLimit,
            "the kubelet's podPidsLimit",
            format!(
                "needs a cluster: the pod has no pids field, Podman 4.x sets none (seen {})",
                limit_text(observed.pids_limit())
            ),
            true,
        )
    });
}

/// What only a cluster enforces, and what the play shows of it anyway.
fn cluster_fields(
    pod: &PodSpec,
    agent: &Container,
    observed: &Observation,
    network: &str,
    checks: &mut Vec<Check>,
) {
    if pod.automount_service_account_token == Some(false) {
        let mounted = observed.mount_at(SERVICE_ACCOUNT_DIR).is_some();
        checks.push(check(
            "automountServiceAccountToken",
            "no token mounted",
            if mounted {
                "a token is mounted"
            } else {
                "no token mounted (Podman mounts none)"
            },
            !mounted,
        ));
    }
    if let Some(class) = &pod.runtime_class_name {
        checks.push(skip(
            "runtimeClassName",
            class.as_str(),
            "needs a cluster: Podman plays the pod with its default runtime",
        ));
    }
    let names: Vec<&str> = agent
        .env
        .iter()
        .flatten()
        .map(|var| var.name.as_str())
        .collect();
    if !names.is_empty() {
        let seen = observed.env_names.as_ref();
        let missing: Vec<&str> = names
            .iter()
            .copied()
            .filter(|name| !seen.is_some_and(|seen| seen.contains(*name)))
            .collect();
        checks.push(check(
            "environment names",
            format!("{} set", names.len()),
            match (seen, missing.is_empty()) {
                (None, _) => NOT_OBSERVED.to_string(),
                (Some(_), true) => "all set".to_string(),
                (Some(_), false) => format!("missing {}", missing.join(",")),
            },
            seen.is_some() && missing.is_empty(),
        ));
    }
    let interfaces = observed.interfaces.as_ref();
    let only_lo = interfaces.is_some_and(|set| set.iter().all(|name| name == "lo"));
    let (expected, ok) = if network == "none" {
        ("only lo (played with --network none)", only_lo)
    } else {
        (
            "lo and the internal network's interface",
            interfaces.is_some_and(|set| !set.is_empty() && !only_lo),
        )
    };
    checks.push(check(
        "network interfaces",
        expected,
        interfaces
            .map(|set| set.iter().cloned().collect::<Vec<_>>().join(","))
            .unwrap_or_else(|| NOT_OBSERVED.to_string()),
        ok,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_the_kubelet_reads_them() {
        assert_eq!(bytes("4Gi"), Some(4 << 30));
        assert_eq!(bytes("512Mi"), Some(512 << 20));
        assert_eq!(bytes("1G"), Some(1_000_000_000));
        assert_eq!(bytes("1000"), Some(1000));
        assert_eq!(bytes("1.5Gi"), None);
        assert_eq!(nano_cpus("500m"), Some(500_000_000));
        assert_eq!(nano_cpus("2"), Some(2_000_000_000));
        assert_eq!(nano_cpus("1.5"), Some(1_500_000_000));
    }
}
