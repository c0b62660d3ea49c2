//! The runtime check, and the checks gVisor answers differently.
//!
//! gVisor (runsc) runs the probe on its own kernel, which says so in its log (`Starting
//! gVisor...`) and shows less than Linux: no `NoNewPrivs` line in `/proc/self/status`, seccomp
//! mode 0 (the OCI profile is replaced by gVisor's filters of its own host calls), no cgroup
//! files, `NET_RAW` dropped from every set (runsc without `--net-raw`). Under gVisor those
//! checks read `docker inspect` (the limits are set on the sandbox from the host side) or say
//! what gVisor does instead, so verify reports no false mismatch; everything else (user, PID 1,
//! read-only root, tmpfs behaviour, mounts, network, labels) is checked as under runc.

use std::collections::BTreeSet;

use agentc_policy::{is_gvisor, runtime_words, Capability, ContainerSpec};

use super::check::{check, Check, Fact, NOT_OBSERVED};
use super::parse::{capability_names, Observation};

/// Adds the runtime check (when the launch names a runtime or the probe saw gVisor) and, under
/// gVisor, replaces the checks its kernel cannot answer.
pub(super) fn adjust(
    spec: &ContainerSpec,
    observed: &Observation,
    inspect: &serde_json::Value,
    checks: &mut Vec<Check>,
) {
    if let Some(isolation) = spec.isolation {
        checks.insert(0, tier(isolation, spec, observed, inspect));
    }
    if spec.runtime.is_none() && !observed.gvisor {
        return;
    }
    let expected = match &spec.runtime {
        Some(runtime) => format!("{runtime} ({})", runtime_words(runtime)),
        None => "the engine's default".to_string(),
    };
    let seen = if observed.gvisor {
        "gVisor (its kernel log: Starting gVisor...)"
    } else {
        "the host kernel (not gVisor)"
    };
    // Only gVisor can be told from inside; another runtime passes on the engine's word.
    let ok = match &spec.runtime {
        Some(runtime) => is_gvisor(runtime) == observed.gvisor,
        None => true,
    };
    checks.insert(0, check("runtime", expected, seen, ok));
    if !observed.gvisor {
        return;
    }
    for item in checks.iter_mut() {
        let Some(fact) = item.fact else { continue };
        match fact {
            Fact::CapabilityBounding if !item.ok => bounding(spec, observed, item),
            Fact::NoNewPrivileges if item.seen == NOT_OBSERVED => {
                item.seen = "not shown inside gVisor (set on the sandbox)".to_string();
                item.ok = true;
            }
            Fact::Seccomp => {
                item.seen = "gVisor's own filters of its host calls (the OCI profile is not applied inside)".to_string();
                item.ok = true;
            }
            Fact::MemoryLimit => limit(item, inspect, "/HostConfig/Memory"),
            Fact::MemorySwapLimit => limit(item, inspect, "/HostConfig/MemorySwap"),
            Fact::PidsLimit => limit(item, inspect, "/HostConfig/PidsLimit"),
            Fact::CpuQuota => limit(item, inspect, "/HostConfig/NanoCpus"),
            Fact::ShmSize => limit(item, inspect, "/HostConfig/ShmSize"),
            Fact::CapabilityBounding | Fact::NoNewPrivileges => {}
        }
    }
}

/// The isolation row: the tier seen from inside (gVisor says so in its kernel log; else the
/// host's kernel or a VM's, told apart by the launch's probe) at or above the floor, and
/// `HostConfig.Runtime` the runtime the launch chose.
fn tier(
    isolation: agentc_policy::Isolation,
    spec: &ContainerSpec,
    observed: &Observation,
    inspect: &serde_json::Value,
) -> Check {
    use agentc_policy::IsolationTier;
    let chosen = spec
        .labels
        .get(agentc_engine::isolation::LABEL_ISOLATION)
        .map(String::as_str)
        .unwrap_or("unchosen");
    let runtime = inspect
        .pointer("/HostConfig/Runtime")
        .and_then(|value| value.as_str())
        .unwrap_or_default();
    let seen_tier = if observed.gvisor {
        Some(IsolationTier::Gvisor)
    } else {
        IsolationTier::of_runtime(runtime).filter(|tier| *tier != IsolationTier::Gvisor)
    };
    let ok = seen_tier.is_some_and(|tier| tier >= isolation.min && tier.as_str() == chosen)
        && spec
            .runtime
            .as_deref()
            .is_none_or(|wanted| wanted == runtime);
    check(
        "isolation",
        format!(
            "{chosen} (at least {}) under {}",
            isolation.min,
            spec.runtime.as_deref().unwrap_or("?")
        ),
        format!(
            "{} under {} (HostConfig.Runtime)",
            seen_tier.map(|tier| tier.as_str()).unwrap_or("unknown"),
            if runtime.is_empty() { "?" } else { runtime }
        ),
        ok,
    )
}

/// The bounding set as rendered, minus `NET_RAW`, which runsc drops.
fn bounding(spec: &ContainerSpec, observed: &Observation, item: &mut Check) {
    let Some(seen) = observed.cap_bounding.map(capability_names) else {
        return;
    };
    let expected: BTreeSet<String> = spec
        .cap_add
        .iter()
        .filter(|cap| **cap != Capability::NetRaw)
        .map(|cap| cap.as_str().to_string())
        .collect();
    if spec.cap_drop_all && seen == expected {
        item.ok = true;
        item.seen = format!("{} (gVisor drops NET_RAW)", item.seen);
    }
}

/// A limit gVisor does not show inside, read from the engine's inspect instead (it is set on
/// the sandbox's cgroup); 0 or -1 there is no limit.
fn limit(item: &mut Check, inspect: &serde_json::Value, pointer: &str) {
    if item.seen != NOT_OBSERVED {
        return;
    }
    let value = inspect.pointer(pointer).and_then(|value| value.as_i64());
    let text = match value {
        None | Some(0) | Some(-1) => "unlimited".to_string(),
        Some(value) => value.to_string(),
    };
    item.ok = match item.expected.as_str() {
        "daemon default" => true,
        expected => expected == text,
    };
    item.seen = format!("{text} (inspect; not visible inside gVisor)");
}

#[cfg(test)]
mod tests {
    use agentc_policy::{Network, Resources};

    use super::super::compare::compare;
    use super::super::parse::parse_probe;
    use super::*;

    /// What the probe printed under runsc (docker, `--network=none`, uid 0), trimmed.
    const UNDER_GVISOR: &str = "PROBE=1\nUID=0\nGID=0\nPID1=sh\nROOT_WRITE=denied\n\
        MOUNT=/ 9p ro\nMOUNT=/tmp tmpfs rw,noexec\nTMPFS_WRITE=/tmp ok noexec\n\
        MOUNT=/dev/shm tmpfs rw,noexec,size=65536k\n\
        CapInh=0000000000000000\nCapPrm=0000000000001000\nCapEff=0000000000001000\n\
        CapBnd=0000000000001000\nSeccomp=0\nNET=lo \nENV_NAMES=PATH HOME \nKERNEL=gvisor\nEND=1\n";

    fn spec(runtime: Option<&str>) -> ContainerSpec {
        let mut spec = ContainerSpec::empty("img:1");
        spec.runtime = runtime.map(str::to_string);
        spec.read_only_root = true;
        spec.no_new_privileges = true;
        spec.cap_drop_all = true;
        spec.cap_add = [Capability::NetAdmin, Capability::NetRaw]
            .into_iter()
            .collect();
        spec.network = Network::None;
        spec.resources = Resources {
            memory_bytes: Some(1 << 30),
            memory_swap_bytes: Some(1 << 30),
            shm_size_bytes: None,
            nano_cpus: None,
            pids_limit: Some(512),
        };
        spec
    }

    fn inspect() -> serde_json::Value {
        serde_json::json!({"HostConfig": {
            "Memory": 1 << 30, "MemorySwap": 1 << 30, "PidsLimit": 512, "NanoCpus": 0,
            "ShmSize": 67108864, "NetworkMode": "none", "LogConfig": {"Type": "json-file"}
        }})
    }

    #[test]
    fn under_gvisor_what_its_kernel_hides_is_read_from_inspect_or_explained() {
        let observed = parse_probe(UNDER_GVISOR).unwrap();
        assert!(observed.gvisor);
        let checks = compare(&spec(Some("runsc")), &observed, &inspect());
        let failed: Vec<&Check> = checks.iter().filter(|check| !check.ok).collect();
        assert!(failed.is_empty(), "{failed:#?}");
        assert_eq!(checks[0].what, "runtime");
        let pids = checks.iter().find(|c| c.what == "pids limit").unwrap();
        assert_eq!(pids.seen, "512 (inspect; not visible inside gVisor)");
    }

    #[test]
    fn a_runtime_that_did_not_apply_is_a_mismatch() {
        // Asked for gVisor, ran on the host kernel (Podman's socket ignores the runtime).
        let host = UNDER_GVISOR.replace("KERNEL=gvisor", "KERNEL=host");
        let observed = parse_probe(&host).unwrap();
        let checks = compare(&spec(Some("runsc")), &observed, &inspect());
        assert!(!checks[0].ok, "{:?}", checks[0]);
        // Limits are not excused on the host kernel.
        assert!(checks.iter().any(|c| c.what == "pids limit" && !c.ok));
        // gVisor where none was asked for is reported, not failed.
        let observed = parse_probe(UNDER_GVISOR).unwrap();
        let checks = compare(&spec(None), &observed, &inspect());
        assert!(checks[0].ok && checks[0].seen.starts_with("gVisor"));
    }

    #[test]
    fn the_isolation_row_checks_the_tier_seen_and_the_runtime_inspect_shows() {
        use agentc_policy::{Isolation, IsolationPrefer, IsolationTier};
        let floored = |runtime: &str, label: &str| {
            let mut spec = spec(Some(runtime));
            spec.isolation = Some(Isolation {
                min: IsolationTier::Gvisor,
                prefer: IsolationPrefer::Min,
            });
            spec.labels
                .insert("io.agentc.isolation".into(), label.into());
            spec
        };
        let with_runtime = |runtime: &str| {
            let mut inspect = inspect();
            inspect["HostConfig"]["Runtime"] = runtime.into();
            inspect
        };
        let row = |spec: &ContainerSpec, probe: &str, inspect: &serde_json::Value| {
            let observed = parse_probe(probe).unwrap();
            compare(spec, &observed, inspect)
                .into_iter()
                .find(|check| check.what == "isolation")
                .expect("an isolation row")
        };
        let good = row(
            &floored("runsc", "gvisor"),
            UNDER_GVISOR,
            &with_runtime("runsc"),
        );
        assert!(good.ok, "{good:?}");
        // The floor's runtime did not apply: the host kernel answered.
        let host = UNDER_GVISOR.replace("KERNEL=gvisor", "KERNEL=host");
        let bad = row(&floored("runsc", "gvisor"), &host, &with_runtime("runc"));
        assert!(!bad.ok, "{bad:?}");
        assert_eq!(bad.seen, "container under runc (HostConfig.Runtime)");
    }
}
