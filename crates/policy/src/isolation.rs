//! Isolation tiers (`[security] isolation`): the closed, ordered vocabulary of how strongly a
//! sandbox is separated from the host kernel, the tier a runtime name belongs to, and the
//! pure choice of a concrete runtime from what an engine was found to have
//! ([`choose_runtime`]). The policy crate records the floor in the spec
//! ([`crate::ContainerSpec::isolation`]); the launch detects and probes the engine's runtimes
//! and calls [`choose_runtime`] with the result, before anything is created.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How strongly a sandbox is separated from the host kernel, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IsolationTier {
    /// A hardened container on the host kernel's namespaces and cgroups (runc, crun).
    Container,
    /// A user-space kernel in front of the host's (gVisor's runsc).
    Gvisor,
    /// A lightweight virtual machine with a kernel of its own (Kata Containers,
    /// Firecracker-based runtimes).
    Microvm,
}

impl IsolationTier {
    /// Every tier, weakest first.
    pub const ALL: [IsolationTier; 3] = [
        IsolationTier::Container,
        IsolationTier::Gvisor,
        IsolationTier::Microvm,
    ];

    /// The tier as written in a profile and in the `io.agentc.isolation` label (`container`,
    /// `gvisor`, `microvm`).
    pub fn as_str(self) -> &'static str {
        match self {
            IsolationTier::Container => "container",
            IsolationTier::Gvisor => "gvisor",
            IsolationTier::Microvm => "microvm",
        }
    }

    /// The tier in words, for `explain`, `doctor` and refusals.
    pub fn words(self) -> &'static str {
        match self {
            IsolationTier::Container => "a hardened container on the host kernel: runc, crun",
            IsolationTier::Gvisor => "a user-space kernel in front of the host's: gVisor runsc",
            IsolationTier::Microvm => {
                "a microVM with a kernel of its own: Kata Containers, Firecracker"
            }
        }
    }

    /// How to get a runtime of this tier, for a refusal's hint.
    pub fn install_hint(self) -> &'static str {
        match self {
            IsolationTier::Container => "install runc or crun (every engine ships one)",
            IsolationTier::Gvisor => {
                "install gVisor (https://gvisor.dev/docs/user_guide/install/: the runsc binary) \
                 and register it with the engine (`runsc install` for Docker, then reload dockerd; \
                 [engine.runtimes] runsc = [\"/usr/local/bin/runsc\"] in containers.conf for \
                 Podman); see docs/engines.md"
            }
            IsolationTier::Microvm => {
                "install Kata Containers (https://katacontainers.io: kata-runtime, or \
                 containerd-shim-kata-v2 with its Firecracker or QEMU hypervisor) on a host with \
                 /dev/kvm, and register it with the engine as kata (or kata-fc); see \
                 docs/engines.md"
            }
        }
    }

    /// The tier a runtime belongs to by its registered name (and, for Docker, its path),
    /// `None` when neither says: runsc or gvisor is [`IsolationTier::Gvisor`], kata or
    /// firecracker is [`IsolationTier::Microvm`], runc, crun, youki or containerd's runc shim
    /// is [`IsolationTier::Container`]. A probe confirms it before a launch relies on it.
    pub fn of_runtime(name: &str) -> Option<IsolationTier> {
        let lower = name.to_ascii_lowercase();
        if lower.contains("runsc") || lower.contains("gvisor") {
            Some(IsolationTier::Gvisor)
        } else if lower.contains("kata") || lower.contains("firecracker") {
            Some(IsolationTier::Microvm)
        } else if ["runc", "crun", "youki"]
            .iter()
            .any(|known| lower == *known || lower.ends_with(&format!("/{known}")))
            || lower.starts_with("io.containerd.runc")
        {
            Some(IsolationTier::Container)
        } else {
            None
        }
    }
}

impl fmt::Display for IsolationTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which runtime a launch takes among those at or above the floor.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum IsolationPrefer {
    /// The weakest tier that meets the floor (the default: the cheapest sandbox that is
    /// enough).
    #[default]
    Min,
    /// The strongest tier the engine has.
    Strongest,
}

impl IsolationPrefer {
    /// The preference as written in a profile (`min`, `strongest`).
    pub fn as_str(self) -> &'static str {
        match self {
            IsolationPrefer::Min => "min",
            IsolationPrefer::Strongest => "strongest",
        }
    }
}

/// An isolation floor and the preference above it: `[security] isolation = { min = "gvisor",
/// prefer = "strongest" }`. In the spec ([`crate::ContainerSpec::isolation`]) it tells the
/// launch to choose a runtime at or above `min` from what the engine has, or to refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Isolation {
    /// The weakest tier the sandbox may run under: `"container"`, `"gvisor"` or `"microvm"`.
    pub min: IsolationTier,
    /// Which tier at or above `min` to take: `"min"` (the weakest that meets it, the
    /// default) or `"strongest"`.
    #[serde(default)]
    pub prefer: IsolationPrefer,
}

/// One runtime an engine has, as detection found it: its name, its tier as a probe proved it
/// (`None` when the probe failed), and what the probe saw or why it failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetectedRuntime {
    /// The runtime's registered name (`runc`, `runsc`, `kata-fc`).
    pub name: String,
    /// The tier the probe proved; `None` when the runtime could not run a container.
    pub tier: Option<IsolationTier>,
    /// What the probe saw (the kernel the container reported) or why it failed.
    pub evidence: String,
}

/// The runtime a launch runs under, chosen by [`choose_runtime`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenRuntime {
    /// The runtime's registered name.
    pub name: String,
    /// Its proven tier.
    pub tier: IsolationTier,
}

/// Why no runtime meets the floor: what the engine has, and how to get what is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsolationShortfall {
    /// The floor asked for.
    pub min: IsolationTier,
    /// The runtime the profile names, when it does.
    pub runtime: Option<String>,
    /// What the engine has, one phrase per runtime (`runc: container`, `runsc: probe failed:
    /// ...`).
    pub found: Vec<String>,
    /// How to get a runtime at the floor.
    pub hint: String,
}

/// Chooses the runtime a launch runs under: the profile's `runtime` when it names one (its
/// proven tier must meet the floor), else among the detected runtimes whose probe proved a
/// tier at or above `isolation.min`, the weakest (`prefer = "min"`) or the strongest
/// (`prefer = "strongest"`); ties go to the engine's default, then to the first by name.
/// Pure: detection and probing happen before, at launch.
pub fn choose_runtime(
    isolation: Isolation,
    named: Option<&str>,
    default: Option<&str>,
    detected: &[DetectedRuntime],
) -> Result<ChosenRuntime, IsolationShortfall> {
    let found = detected
        .iter()
        .map(|runtime| match runtime.tier {
            Some(tier) => format!("{}: {tier}", runtime.name),
            None => format!("{}: probe failed: {}", runtime.name, runtime.evidence),
        })
        .collect::<Vec<_>>();
    let shortfall = |hint: String| IsolationShortfall {
        min: isolation.min,
        runtime: named.map(str::to_string),
        found: found.clone(),
        hint,
    };
    if let Some(named) = named {
        return match detected.iter().find(|runtime| runtime.name == named) {
            Some(DetectedRuntime {
                tier: Some(tier), ..
            }) if *tier >= isolation.min => Ok(ChosenRuntime {
                name: named.to_string(),
                tier: *tier,
            }),
            _ => Err(shortfall(format!(
                "name a runtime at or above {} in security.runtime, or remove it to let agentc \
                 choose; {}",
                isolation.min,
                isolation.min.install_hint()
            ))),
        };
    }
    let mut eligible: Vec<(&DetectedRuntime, IsolationTier)> = detected
        .iter()
        .filter_map(|runtime| Some((runtime, runtime.tier?)))
        .filter(|(_, tier)| *tier >= isolation.min)
        .collect();
    // Weakest first (or strongest first), then the engine's default, then by name.
    eligible.sort_by(|(a, at), (b, bt)| {
        let order = match isolation.prefer {
            IsolationPrefer::Min => at.cmp(bt),
            IsolationPrefer::Strongest => bt.cmp(at),
        };
        let is_default = |r: &DetectedRuntime| Some(r.name.as_str()) != default;
        order
            .then(is_default(a).cmp(&is_default(b)))
            .then(a.name.cmp(&b.name))
    });
    match eligible.first() {
        Some((runtime, tier)) => Ok(ChosenRuntime {
            name: runtime.name.clone(),
            tier: *tier,
        }),
        None => Err(shortfall(isolation.min.install_hint().to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detected(pairs: &[(&str, Option<IsolationTier>)]) -> Vec<DetectedRuntime> {
        pairs
            .iter()
            .map(|(name, tier)| DetectedRuntime {
                name: name.to_string(),
                tier: *tier,
                evidence: if tier.is_some() {
                    "Linux version".into()
                } else {
                    "exec format error".into()
                },
            })
            .collect()
    }

    const HERE: &[(&str, Option<IsolationTier>)] = &[
        ("runc", Some(IsolationTier::Container)),
        ("runsc", Some(IsolationTier::Gvisor)),
    ];

    fn floor(min: IsolationTier, prefer: IsolationPrefer) -> Isolation {
        Isolation { min, prefer }
    }

    #[test]
    fn runtime_names_map_to_tiers() {
        use IsolationTier::*;
        for (name, tier) in [
            ("runc", Some(Container)),
            ("crun", Some(Container)),
            ("io.containerd.runc.v2", Some(Container)),
            ("runsc", Some(Gvisor)),
            ("runsc-debug", Some(Gvisor)),
            ("gvisor", Some(Gvisor)),
            ("kata", Some(Microvm)),
            ("kata-fc", Some(Microvm)),
            ("io.containerd.kata.v2", Some(Microvm)),
            ("firecracker", Some(Microvm)),
            ("secure", None),
            ("runcx", None),
        ] {
            assert_eq!(IsolationTier::of_runtime(name), tier, "{name}");
        }
        assert!(Container < Gvisor && Gvisor < Microvm);
    }

    #[test]
    fn the_weakest_tier_at_the_floor_is_chosen_by_default() {
        let here = detected(HERE);
        let chosen = choose_runtime(
            floor(IsolationTier::Container, IsolationPrefer::Min),
            None,
            Some("runc"),
            &here,
        )
        .unwrap();
        assert_eq!(chosen.name, "runc");
        let chosen = choose_runtime(
            floor(IsolationTier::Gvisor, IsolationPrefer::Min),
            None,
            Some("runc"),
            &here,
        )
        .unwrap();
        assert_eq!(
            (chosen.name.as_str(), chosen.tier),
            ("runsc", IsolationTier::Gvisor)
        );
    }

    #[test]
    fn prefer_strongest_takes_runsc_over_runc() {
        let chosen = choose_runtime(
            floor(IsolationTier::Container, IsolationPrefer::Strongest),
            None,
            Some("runc"),
            &detected(HERE),
        )
        .unwrap();
        assert_eq!(chosen.name, "runsc");
    }

    #[test]
    fn ties_go_to_the_engines_default_then_by_name() {
        let two = detected(&[
            ("crun", Some(IsolationTier::Container)),
            ("runc", Some(IsolationTier::Container)),
        ]);
        let min = floor(IsolationTier::Container, IsolationPrefer::Min);
        assert_eq!(
            choose_runtime(min, None, Some("runc"), &two).unwrap().name,
            "runc"
        );
        assert_eq!(choose_runtime(min, None, None, &two).unwrap().name, "crun");
    }

    #[test]
    fn a_floor_above_what_the_engine_has_is_refused_with_what_it_has() {
        let shortfall = choose_runtime(
            floor(IsolationTier::Microvm, IsolationPrefer::Strongest),
            None,
            Some("runc"),
            &detected(HERE),
        )
        .unwrap_err();
        assert_eq!(shortfall.min, IsolationTier::Microvm);
        assert_eq!(shortfall.found, ["runc: container", "runsc: gvisor"]);
        assert!(
            shortfall.hint.contains("Kata Containers"),
            "{}",
            shortfall.hint
        );
    }

    #[test]
    fn a_runtime_whose_probe_failed_is_never_chosen() {
        // runsc registered but pointing at a broken binary: fail closed, never runc.
        let broken = detected(&[("runc", Some(IsolationTier::Container)), ("runsc", None)]);
        let shortfall = choose_runtime(
            floor(IsolationTier::Gvisor, IsolationPrefer::Min),
            None,
            Some("runc"),
            &broken,
        )
        .unwrap_err();
        assert_eq!(
            shortfall.found,
            ["runc: container", "runsc: probe failed: exec format error"]
        );
        let named = choose_runtime(
            floor(IsolationTier::Gvisor, IsolationPrefer::Min),
            Some("runsc"),
            Some("runc"),
            &broken,
        );
        assert!(named.is_err());
    }

    #[test]
    fn a_named_runtime_must_prove_the_floor() {
        let here = detected(HERE);
        let gvisor = floor(IsolationTier::Gvisor, IsolationPrefer::Strongest);
        assert_eq!(
            choose_runtime(gvisor, Some("runsc"), None, &here)
                .unwrap()
                .name,
            "runsc"
        );
        let shortfall = choose_runtime(gvisor, Some("runc"), None, &here).unwrap_err();
        assert_eq!(shortfall.runtime.as_deref(), Some("runc"));
        assert!(
            shortfall.hint.contains("security.runtime"),
            "{}",
            shortfall.hint
        );
    }
}
