//! `[resources]`: memory (swap equal), `/dev/shm`, CPUs and processes, layered default, then
//! profile, then `AGENTC_*` override; their explanation and the `memory-unlimited` and
//! `pids-unlimited` findings.
//!
//! The values are parsed and bounded when the profile is read ([`crate::limits`]); nothing
//! here checks them again.

use crate::context::{env_origin, Resolver};
use crate::explainer::Explainer;
use crate::finding::{FindingCode, FindingSource, Report};
use crate::keys;
use crate::limits::{format_cpus, format_size, Limit};
use crate::overrides;
use crate::presets;
use crate::spec::{ContainerSpec, Origin};

/// A limit and where it came from: the environment's override wins over the profile's value,
/// which wins over the default; `off` (in either) removes the limit.
pub(crate) fn layered<T: Copy>(
    default: Option<(T, Origin)>,
    profile: Option<(Limit<T>, Origin)>,
    variable: &str,
    environment: Option<Limit<T>>,
) -> (Option<T>, Option<Origin>) {
    if let Some(limit) = environment {
        return (limit.value(), Some(env_origin(variable)));
    }
    match profile {
        Some((limit, origin)) => (limit.value(), Some(origin)),
        None => match default {
            Some((value, origin)) => (Some(value), Some(origin)),
            None => (None, None),
        },
    }
}

impl Resolver<'_> {
    /// The profile's value of a limit field with its origin, when the profile writes it.
    fn profile_limit<T: Copy>(
        &self,
        field: &str,
        value: Option<Limit<T>>,
    ) -> Option<(Limit<T>, Origin)> {
        value.map(|limit| (limit, self.field_origin(field)))
    }

    /// Memory (swap equal), shm, CPUs and processes: default, then profile, then environment.
    pub fn limits(&mut self, container: &mut ContainerSpec) {
        let resources = &self.profile.resources;
        let (memory, origin) = layered(
            Some((presets::DEFAULT_MEMORY_BYTES, Origin::Default)),
            self.profile_limit("resources.memory", resources.memory),
            overrides::MEM_LIMIT,
            self.overrides.memory_bytes,
        );
        container.resources.memory_bytes = memory;
        container.resources.memory_swap_bytes = memory;
        if let Some(origin) = origin {
            self.set(keys::MEMORY, origin.clone());
            self.set(keys::MEMORY_SWAP, origin);
        }
        let (shm, origin) = layered(
            None,
            self.profile_limit("resources.shm_size", resources.shm_size),
            overrides::SHM_SIZE,
            self.overrides.shm_size_bytes,
        );
        container.resources.shm_size_bytes = shm;
        if let Some(origin) = origin {
            self.set(keys::SHM_SIZE, origin);
        }
        let (cpus, origin) = layered(
            None,
            self.profile_limit("resources.cpus", resources.cpus),
            overrides::CPUS,
            self.overrides.nano_cpus,
        );
        container.resources.nano_cpus = cpus;
        if let Some(origin) = origin {
            self.set(keys::CPUS, origin);
        }
        let (pids, origin) = layered(
            Some((presets::DEFAULT_PIDS_LIMIT, Origin::Default)),
            self.profile_limit("resources.pids_limit", resources.pids_limit),
            overrides::PIDS_LIMIT,
            self.overrides.pids_limit,
        );
        container.resources.pids_limit = pids;
        if let Some(origin) = origin {
            self.set(keys::PIDS_LIMIT, origin);
        }
    }
}

/// The resources section.
pub(crate) fn explain(out: &mut Explainer, c: &ContainerSpec) {
    out.section("resources");
    let r = &c.resources;
    let memory = match (r.memory_bytes, r.memory_swap_bytes) {
        (Some(memory), Some(swap)) if memory == swap => {
            format!("{}, no swap", format_size(memory))
        }
        (Some(memory), _) => format_size(memory),
        (None, _) => "unlimited".to_string(),
    };
    out.item("memory", memory, keys::MEMORY);
    let shm = r
        .shm_size_bytes
        .map(format_size)
        .unwrap_or_else(|| "docker's default (64m)".to_string());
    out.item("shm size", shm, keys::SHM_SIZE);
    let cpus = r
        .nano_cpus
        .map(format_cpus)
        .unwrap_or_else(|| "unlimited".to_string());
    out.item("cpus", cpus, keys::CPUS);
    let pids = r
        .pids_limit
        .map(|pids| pids.to_string())
        .unwrap_or_else(|| "unlimited".to_string());
    out.item("processes", pids, keys::PIDS_LIMIT);
}

/// What widens the sandbox here: a removed memory or process limit.
pub(crate) fn widens(out: &Explainer, c: &ContainerSpec, items: &mut Vec<String>) {
    for (key, what, removed) in [
        (
            keys::MEMORY,
            "memory limit",
            c.resources.memory_bytes.is_none(),
        ),
        (
            keys::PIDS_LIMIT,
            "process limit",
            c.resources.pids_limit.is_none(),
        ),
    ] {
        if removed && out.origin(key).is_some() {
            items.push(format!("{what} removed  [{}]", out.words(key)));
        }
    }
}

/// What agentc adds here (explain's "added by agentc"): default memory and process limits.
pub(crate) fn added_by_agentc(out: &Explainer, notes: &mut Vec<String>) {
    if matches!(out.origin(keys::MEMORY), Some(Origin::Default)) {
        notes.push(format!(
            "default memory limit {} without swap; AGENTC_MEM_LIMIT=off removes it",
            format_size(presets::DEFAULT_MEMORY_BYTES)
        ));
    }
    if matches!(out.origin(keys::PIDS_LIMIT), Some(Origin::Default)) {
        notes.push(format!(
            "default process limit {}; AGENTC_PIDS_LIMIT=off removes it",
            presets::DEFAULT_PIDS_LIMIT
        ));
    }
}

/// `memory-unlimited` and `pids-unlimited`.
pub(crate) fn findings(report: &mut Report, c: &ContainerSpec) {
    if c.resources.memory_bytes.is_none() {
        let at = report.field_of(keys::MEMORY, "resources.memory");
        let hint = if matches!(at, FindingSource::Environment { .. }) {
            "unset AGENTC_MEM_LIMIT=off, or set resources.memory"
        } else {
            "set resources.memory to a size such as \"4g\" instead of \"off\""
        };
        report.push(
            FindingCode::MemoryUnlimited,
            at,
            "no memory limit: the agent can exhaust the host's memory".to_string(),
            hint,
        );
    }
    if c.resources.pids_limit.is_none() {
        let at = report.field_of(keys::PIDS_LIMIT, "resources.pids_limit");
        let hint = if matches!(at, FindingSource::Environment { .. }) {
            "unset AGENTC_PIDS_LIMIT=off, or set resources.pids_limit"
        } else {
            "set resources.pids_limit to a count such as 512 instead of \"off\""
        };
        report.push(
            FindingCode::PidsUnlimited,
            at,
            "no process limit: a fork bomb in the sandbox reaches the host".to_string(),
            hint,
        );
    }
}
