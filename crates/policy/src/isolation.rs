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
    /// Why a tier above the floor was taken under `prefer = "min"` (no runtime at the floor
    /// proved itself: `runc: probe failed: ...`), for the launch to say; `None` when the tier
    /// is the floor's or the strongest was asked for.
    pub above_floor: Option<String>,
}

/// `container` under the runtime `chosen` for its isolation floor: that runtime, and the
/// [`crate::LABEL_ISOLATION`] and [`crate::LABEL_RUNTIME`] labels naming the tier and the
/// runtime. The one rule of a floor's placement: [`crate::resolve()`] applies it for
/// [`crate::Instance::floor`], and a launch of a spec resolved without one applies it to the
/// runtime it chose. Pure.
pub fn placed(container: &crate::ContainerSpec, chosen: &ChosenRuntime) -> crate::ContainerSpec {
    let mut placed = container.clone();
    placed.runtime = Some(chosen.name.clone());
    placed.labels.insert(
        crate::LABEL_ISOLATION.to_string(),
        chosen.tier.as_str().to_string(),
    );
    placed
        .labels
        .insert(crate::LABEL_RUNTIME.to_string(), chosen.name.clone());
    placed
}

/// The runtime `container` was placed under for its isolation floor ([`placed`]), with the
/// tier its label names; `None` when it was not placed.
pub fn placement(container: &crate::ContainerSpec) -> Option<(&str, &str)> {
    container.isolation?;
    let runtime = container.labels.get(crate::LABEL_RUNTIME)?;
    let tier = container.labels.get(crate::LABEL_ISOLATION)?;
    (container.runtime.as_deref() == Some(runtime.as_str())).then_some((runtime, tier))
}

/// Whether the container's egress policy is held only by the image's own firewall (the
/// agent presets' entrypoint iptables, which needs `NET_ADMIN`): it has `NET_ADMIN`, no
/// agentc egress proxy, a network, and an allowlist handed to the image
/// (`AGENT_ALLOWED_EGRESS` other than `*`). That firewall does not run under gVisor, so such a
/// launch must not be placed under it ([`choose_runtime`]'s `gvisor_allowed`). Pure.
pub fn image_firewall_holds_egress(container: &crate::ContainerSpec) -> bool {
    let everything = container.env.iter().any(|var| {
        var.name == "AGENT_ALLOWED_EGRESS"
            && matches!(&var.value, crate::EnvValue::Literal { value } if value == "*")
    });
    container.cap_add.contains(&crate::Capability::NetAdmin)
        && container.egress.is_none()
        && container.network != crate::Network::None
        && !everything
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
/// With `gvisor_allowed` false (the image's firewall holds egress,
/// [`image_firewall_holds_egress`]) no gVisor runtime is chosen. Nothing that could not be
/// proven is ever chosen: an engine without runc (or whose default is gVisor) still gets a
/// runtime at or above the floor, with [`ChosenRuntime::above_floor`] saying why it is
/// stronger. Pure: detection and probing happen before, at launch.
pub fn choose_runtime(
    isolation: Isolation,
    named: Option<&str>,
    default: Option<&str>,
    detected: &[DetectedRuntime],
    gvisor_allowed: bool,
) -> Result<ChosenRuntime, IsolationShortfall> {
    let barred = |tier: IsolationTier| !gvisor_allowed && tier == IsolationTier::Gvisor;
    const BARRED: &str = "not chosen: the image's egress firewall does not run under gVisor";
    let found = detected
        .iter()
        .map(|runtime| match runtime.tier {
            Some(tier) if barred(tier) => format!("{}: {tier} ({BARRED})", runtime.name),
            Some(tier) => format!("{}: {tier}", runtime.name),
            None => format!("{}: probe failed: {}", runtime.name, runtime.evidence),
        })
        .collect::<Vec<_>>();
    let firewall_hint = "the image's egress firewall holds this profile's egress and does not \
                         run under gVisor: install runc or crun, or a microVM runtime, or set \
                         egress.mode = \"deny\" (no network, which gVisor holds)";
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
            }) if *tier >= isolation.min && !barred(*tier) => Ok(ChosenRuntime {
                name: named.to_string(),
                tier: *tier,
                above_floor: None,
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
        .filter(|(_, tier)| *tier >= isolation.min && !barred(*tier))
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
    // What could have been at the floor and was not: a failed probe of a runtime whose name
    // may be of the floor's tier, or a runtime at the floor barred for the firewall.
    let missed_floor = |runtime: &DetectedRuntime| match runtime.tier {
        None => IsolationTier::of_runtime(&runtime.name).is_none_or(|tier| tier == isolation.min),
        Some(tier) => tier == isolation.min && barred(tier),
    };
    match eligible.first() {
        Some((runtime, tier)) => Ok(ChosenRuntime {
            name: runtime.name.clone(),
            tier: *tier,
            above_floor: (*tier > isolation.min && isolation.prefer == IsolationPrefer::Min).then(
                || {
                    let weaker: Vec<&str> = detected
                        .iter()
                        .zip(&found)
                        .filter(|(other, _)| missed_floor(other))
                        .map(|(_, said)| said.as_str())
                        .collect();
                    if weaker.is_empty() {
                        format!("the engine has no {} runtime", isolation.min)
                    } else {
                        format!(
                            "no {} runtime proved itself: {}",
                            isolation.min,
                            weaker.join("; ")
                        )
                    }
                },
            ),
        }),
        None if detected.iter().any(|runtime| {
            runtime
                .tier
                .is_some_and(|tier| tier >= isolation.min && barred(tier))
        }) =>
        {
            Err(shortfall(firewall_hint.to_string()))
        }
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
            true,
        )
        .unwrap();
        assert_eq!(chosen.name, "runc");
        let chosen = choose_runtime(
            floor(IsolationTier::Gvisor, IsolationPrefer::Min),
            None,
            Some("runc"),
            &here,
            true,
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
            true,
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
            choose_runtime(min, None, Some("runc"), &two, true)
                .unwrap()
                .name,
            "runc"
        );
        assert_eq!(
            choose_runtime(min, None, None, &two, true).unwrap().name,
            "crun"
        );
    }

    #[test]
    fn a_floor_above_what_the_engine_has_is_refused_with_what_it_has() {
        let shortfall = choose_runtime(
            floor(IsolationTier::Microvm, IsolationPrefer::Strongest),
            None,
            Some("runc"),
            &detected(HERE),
            true,
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
            true,
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
            true,
        );
        assert!(named.is_err());
    }

    #[test]
    fn a_named_runtime_must_prove_the_floor() {
        let here = detected(HERE);
        let gvisor = floor(IsolationTier::Gvisor, IsolationPrefer::Strongest);
        assert_eq!(
            choose_runtime(gvisor, Some("runsc"), None, &here, true)
                .unwrap()
                .name,
            "runsc"
        );
        let shortfall = choose_runtime(gvisor, Some("runc"), None, &here, true).unwrap_err();
        assert_eq!(shortfall.runtime.as_deref(), Some("runc"));
        assert!(
            shortfall.hint.contains("security.runtime"),
            "{}",
            shortfall.hint
        );
    }

    #[test]
    fn a_container_floor_on_an_engine_with_only_gvisor_takes_gvisor_and_says_why() {
        let min = floor(IsolationTier::Container, IsolationPrefer::Min);
        // runc absent from the engine: gVisor is above the floor, and the reason says so.
        let only = detected(&[("runsc", Some(IsolationTier::Gvisor))]);
        let chosen = choose_runtime(min, None, Some("runsc"), &only, true).unwrap();
        assert_eq!(
            (chosen.name.as_str(), chosen.tier),
            ("runsc", IsolationTier::Gvisor)
        );
        assert_eq!(
            chosen.above_floor.as_deref(),
            Some("the engine has no container runtime")
        );
        // runc registered but its binary gone: never chosen, named in the reason.
        let broken = detected(&[("runc", None), ("runsc", Some(IsolationTier::Gvisor))]);
        let chosen = choose_runtime(min, None, Some("runsc"), &broken, true).unwrap();
        assert_eq!(chosen.name, "runsc");
        assert_eq!(
            chosen.above_floor.as_deref(),
            Some("no container runtime proved itself: runc: probe failed: exec format error")
        );
        // gVisor as the engine's default does not displace a working runc under "min".
        let both = detected(HERE);
        let chosen = choose_runtime(min, None, Some("runsc"), &both, true).unwrap();
        assert_eq!((chosen.name.as_str(), chosen.above_floor), ("runc", None));
        // "strongest" above the floor is what was asked: nothing to explain.
        let strongest = floor(IsolationTier::Container, IsolationPrefer::Strongest);
        let chosen = choose_runtime(strongest, None, Some("runc"), &both, true).unwrap();
        assert_eq!((chosen.name.as_str(), chosen.above_floor), ("runsc", None));
        // A microVM is the only runtime: it is chosen, never something missing.
        let vm = detected(&[("kata", Some(IsolationTier::Microvm)), ("crun", None)]);
        let chosen = choose_runtime(min, None, None, &vm, true).unwrap();
        assert_eq!(chosen.name, "kata");
        assert!(
            chosen
                .above_floor
                .as_deref()
                .unwrap()
                .contains("crun: probe failed"),
            "{chosen:?}"
        );
        // Nothing proven at all: refused, with what the engine has.
        let none = detected(&[("runc", None)]);
        let shortfall = choose_runtime(min, None, None, &none, true).unwrap_err();
        assert_eq!(shortfall.found, ["runc: probe failed: exec format error"]);
    }

    #[test]
    fn gvisor_is_never_chosen_where_the_images_firewall_holds_egress() {
        let min = floor(IsolationTier::Container, IsolationPrefer::Min);
        let only = detected(&[("runc", None), ("runsc", Some(IsolationTier::Gvisor))]);
        let shortfall = choose_runtime(min, None, Some("runsc"), &only, false).unwrap_err();
        assert!(
            shortfall.found[1].contains("does not run under gVisor"),
            "{:?}",
            shortfall.found
        );
        assert!(
            shortfall.hint.contains("egress firewall"),
            "{}",
            shortfall.hint
        );
        // With runc (or a microVM) there, that one is chosen instead of gVisor.
        let strongest = floor(IsolationTier::Container, IsolationPrefer::Strongest);
        let chosen = choose_runtime(strongest, None, None, &detected(HERE), false).unwrap();
        assert_eq!(chosen.name, "runc");
        let with_vm = detected(&[
            ("kata", Some(IsolationTier::Microvm)),
            ("runsc", Some(IsolationTier::Gvisor)),
        ]);
        let chosen = choose_runtime(min, None, None, &with_vm, false).unwrap();
        assert_eq!(chosen.name, "kata");
        assert_eq!(
            chosen.above_floor.as_deref(),
            Some("the engine has no container runtime")
        );
        // A named gVisor runtime is refused too.
        assert!(choose_runtime(min, Some("runsc"), None, &only, false).is_err());
    }

    #[test]
    fn the_images_firewall_is_recognised_from_the_spec() {
        use crate::{Capability, ContainerSpec, EnvValue, EnvVar, Network};
        let mut spec = ContainerSpec::empty("img:1");
        assert!(!image_firewall_holds_egress(&spec));
        spec.cap_add.insert(Capability::NetAdmin);
        spec.env.push(EnvVar {
            name: "AGENT_ALLOWED_EGRESS".into(),
            value: EnvValue::Literal {
                value: "api.example".into(),
            },
        });
        assert!(image_firewall_holds_egress(&spec));
        let mut everything = spec.clone();
        everything.env[0].value = EnvValue::Literal { value: "*".into() };
        assert!(!image_firewall_holds_egress(&everything));
        let mut offline = spec.clone();
        offline.network = Network::None;
        assert!(!image_firewall_holds_egress(&offline));
    }
}
