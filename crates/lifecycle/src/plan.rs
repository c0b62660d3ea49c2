//! What a profile's launches would create and use, read from their [`LaunchSpec`]s: the parts
//! `agentc plan` lists, whose images `agentc lock` pins, and whose images, networks and secrets
//! `agentc doctor PROFILE` looks for.
//!
//! [`parts`] is the one place that turns a spec into parts. A launch that grows a part (the
//! egress integration's isolated network and proxy container) adds it there, and `plan`,
//! `lock` and `doctor` show, pin and check it without further change.

use std::collections::{BTreeMap, BTreeSet};

use agentc_policy::presets::SEED_SOURCE_TARGET;
use agentc_policy::{
    Action, EnvValue, Finding, LaunchKind, LaunchSpec, LocalRoots, MountSource, Network, Origin,
    Severity,
};
use serde::Serialize;

/// How the plan writes the per-run suffix of the egress set of a launch without a container
/// name (each run creates its own isolated network and proxy).
pub const RUN_SUFFIX: &str = "<run>";

/// What a container is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A coding agent (`agentc run` of a preset).
    Agent,
    /// A custom profile's long-lived sandbox.
    Sandbox,
    /// The networkless copy-once seed helper.
    SeedHelper,
    /// The Decant session browser.
    Decant,
    /// agentc's egress proxy of an allowlist enforced outside the workload.
    EgressProxy,
}

impl Role {
    /// The role in words.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Sandbox => "sandbox",
            Role::SeedHelper => "seed helper",
            Role::Decant => "decant",
            Role::EgressProxy => "egress proxy",
        }
    }
}

/// One thing a launch creates or uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "part", rename_all = "snake_case")]
pub enum Part {
    /// A container the launch creates.
    Container {
        /// What it is for.
        role: Role,
        /// Its name; `None` lets the engine pick one.
        name: Option<String>,
        /// The image it runs.
        image: String,
        /// Removed when it exits (`--rm`).
        removed_on_exit: bool,
        /// Started in the background.
        detached: bool,
    },
    /// An image a container runs: it must be present before the launch (agentc pulls only
    /// with `--pull`).
    Image {
        /// The reference.
        reference: String,
        /// Whether the profile's own build makes it (`agentc apply` or `agentc build`).
        built_by_profile: bool,
    },
    /// An image the launch builds.
    ImageBuild {
        /// The tag it gets.
        tag: String,
        /// The build context directory.
        context: String,
        /// The Dockerfile, relative to the context (`None`: `Dockerfile`).
        dockerfile: Option<String>,
        /// Named build contexts, `NAME=DIR`.
        named_contexts: Vec<String>,
    },
    /// A network: one the launch creates, or an existing one it joins.
    Network {
        /// Its name.
        name: String,
        /// Created by the launch (and removed with it), or expected to exist.
        created: bool,
        /// Internal (`--internal`): no route out.
        internal: bool,
        /// The sandbox ports (`8080/tcp`) the egress proxy publishes through this network, its
        /// outside one: docker publishes no port through an internal network, so this one
        /// must not be `--internal` (`agentc doctor` checks it; `run` refuses otherwise).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        publishes: Vec<String>,
    },
    /// A named volume, created on first use and kept.
    Volume {
        /// Its name.
        name: String,
        /// Where it is mounted.
        target: String,
        /// Mounted read-only.
        read_only: bool,
    },
    /// A host path bound into the container.
    Bind {
        /// The host path.
        path: String,
        /// Where it is mounted.
        target: String,
        /// Mounted read-only.
        read_only: bool,
        /// The workspace (`--workspace` or the current directory), not a profile input.
        workspace: bool,
    },
    /// A seed: the helper copies `source` into `volume` at `target`, once.
    Seed {
        /// The host source.
        source: String,
        /// The target inside the home volume.
        target: String,
        /// The home volume.
        volume: String,
    },
    /// A secret passed by name from the caller's environment at launch.
    Secret {
        /// The variable's name.
        name: String,
        /// Launching fails when it is unset.
        required: bool,
    },
    /// A published port.
    Port {
        /// The container port and protocol, `8080/tcp`.
        port: String,
        /// The host address it is published on.
        host_ip: String,
        /// The host port the profile chose; `None`: a free port the daemon picks.
        #[serde(skip_serializing_if = "Option::is_none")]
        host_port: Option<u16>,
    },
}

/// The parts of one launch, in a fixed order: containers, images, builds, networks, volumes,
/// binds, seeds, secrets, ports.
pub fn parts(spec: &LaunchSpec) -> Vec<Part> {
    let mut parts = Vec::new();
    match &spec.action {
        Action::Build(build) => parts.push(Part::ImageBuild {
            tag: build.tag.clone(),
            context: build.context.clone(),
            dockerfile: build.dockerfile.clone(),
            named_contexts: build
                .named_contexts
                .iter()
                .map(|(name, dir)| format!("{name}={dir}"))
                .collect(),
        }),
        Action::Container(container) => {
            // A launch without a container name gets its egress set per run, named with a
            // suffix of that run, and the container is named after it
            // (`agentc_engine::companion::prepare::prepare`): shown with RUN_SUFFIX.
            let per_run = match (&container.name, &container.egress) {
                (None, Some(egress)) => {
                    let mut per_run = container.clone();
                    per_run.egress_instance(RUN_SUFFIX);
                    let network = per_run
                        .egress
                        .as_ref()
                        .map_or(&egress.network.name, |e| &e.network.name);
                    per_run.name = Some(
                        network
                            .strip_suffix("-egress")
                            .unwrap_or(network)
                            .to_string(),
                    );
                    Some(per_run)
                }
                _ => None,
            };
            let container = per_run.as_ref().unwrap_or(container);
            let role = match spec.kind {
                LaunchKind::Run | LaunchKind::Build => Role::Agent,
                LaunchKind::Sandbox => Role::Sandbox,
                LaunchKind::Seed => Role::SeedHelper,
                LaunchKind::Decant => Role::Decant,
            };
            parts.push(Part::Container {
                role,
                name: container.name.clone(),
                image: container.image.clone(),
                removed_on_exit: container.auto_remove,
                detached: container.detach,
            });
            parts.push(Part::Image {
                reference: container.image.clone(),
                built_by_profile: false,
            });
            match container.egress.as_ref() {
                // The isolated network and the proxy are created with the launch (the proxy's
                // image too, from the agentc binary); only the outside network must exist.
                Some(egress) => {
                    parts.push(Part::Network {
                        name: egress.network.name.clone(),
                        created: true,
                        internal: egress.network.internal,
                        publishes: Vec::new(),
                    });
                    parts.push(Part::Container {
                        role: Role::EgressProxy,
                        name: egress.proxy.name.clone(),
                        image: egress.proxy.image.clone(),
                        removed_on_exit: false,
                        detached: true,
                    });
                    if let Network::Named { name } = &egress.outside {
                        parts.push(Part::Network {
                            name: name.clone(),
                            created: false,
                            internal: false,
                            publishes: egress
                                .relays()
                                .iter()
                                .map(|relay| format!("{}/tcp", relay.target.port()))
                                .collect(),
                        });
                    }
                }
                None => {
                    if let Network::Named { name } = &container.network {
                        parts.push(Part::Network {
                            name: name.clone(),
                            created: false,
                            internal: false,
                            publishes: Vec::new(),
                        });
                    }
                }
            }
            let mut home_volume = None;
            for mount in &container.mounts {
                match &mount.source {
                    MountSource::Volume { name, .. } => {
                        home_volume.get_or_insert(name.clone());
                        parts.push(Part::Volume {
                            name: name.clone(),
                            target: mount.target.clone(),
                            read_only: mount.read_only,
                        });
                    }
                    MountSource::Bind { path } => parts.push(Part::Bind {
                        path: path.clone(),
                        target: mount.target.clone(),
                        read_only: mount.read_only,
                        workspace: is_workspace(spec, &mount.target),
                    }),
                }
            }
            if spec.kind == LaunchKind::Seed {
                let source = container
                    .mounts
                    .iter()
                    .find_map(|mount| match &mount.source {
                        MountSource::Bind { path } if mount.target == SEED_SOURCE_TARGET => {
                            Some(path.clone())
                        }
                        _ => None,
                    });
                let target = container.env.iter().find_map(|var| match &var.value {
                    EnvValue::Literal { value } if var.name == "SEED_TARGET" => Some(value.clone()),
                    _ => None,
                });
                if let (Some(source), Some(target), Some(volume)) = (source, target, home_volume) {
                    parts.push(Part::Seed {
                        source,
                        target,
                        volume,
                    });
                }
            }
            for var in &container.env {
                if let EnvValue::Secret { required } = var.value {
                    parts.push(Part::Secret {
                        name: var.name.clone(),
                        required,
                    });
                }
            }
            for port in &container.ports {
                parts.push(Part::Port {
                    port: format!("{}/{}", port.container_port, port.protocol.as_str()),
                    host_ip: port.host_ip.to_string(),
                    host_port: port.host_port,
                });
            }
        }
    }
    parts
}

/// Whether the mount at `target` is the workspace: its origin is the invocation's
/// `--workspace` (or the current directory), not a profile line.
pub fn is_workspace(spec: &LaunchSpec, target: &str) -> bool {
    matches!(
        spec.origins.get(&format!("mounts.{target}")),
        Some(Origin::Invocation { input }) if input == "--workspace"
    )
}

/// One launch of a profile: its label (`run`, `seed /home/claude/x`, `build`, `decant`), the
/// resolved spec, its findings, and the directories its host paths are portable against.
#[derive(Debug, Clone)]
pub struct Launch {
    /// How the launch is named in plans, locks and state: the kind, and for a seed its target.
    pub label: String,
    /// The resolved spec.
    pub spec: LaunchSpec,
    /// Its security findings.
    pub findings: Vec<Finding>,
    /// The profile directory, home and workspace it was resolved with
    /// ([`agentc_policy::LocalRoots::of`]): a lock writes its paths relative to them, so that
    /// it holds in another checkout.
    pub roots: LocalRoots,
}

/// The label of a launch: its kind, and a seed's target.
pub fn label(kind: LaunchKind, seed_target: Option<&str>) -> String {
    match (kind, seed_target) {
        (LaunchKind::Seed, Some(target)) => format!("seed {target}"),
        _ => kind.as_str().to_string(),
    }
}

/// The plan of a profile: each launch with its parts and findings.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The profile's name.
    pub profile: String,
    /// The profile file.
    pub file: String,
    /// Whether the engine was contacted: never.
    pub engine_contacted: bool,
    /// The launches, in `agentc validate` order (run, seeds, build, Decant).
    pub launches: Vec<LaunchPlan>,
    /// Launches whose spec differs from the last `agentc apply`, when one is recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since_apply: Option<Vec<String>>,
}

/// One launch in a [`Plan`].
#[derive(Debug, Clone, Serialize)]
pub struct LaunchPlan {
    /// Its label.
    pub launch: String,
    /// Its spec digest (the `io.agentc.spec-digest` label).
    pub spec_digest: String,
    /// What it creates and uses.
    pub parts: Vec<Part>,
    /// Its findings, counted.
    pub findings: FindingsSummary,
    /// Its isolation floor and how the runtime is chosen ([`isolation_words`]), when the
    /// launch has a floor or names a runtime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
}

/// The isolation of a container launch in words: its floor and preference, and the runtime
/// it names or that the launch chooses (always proven by a probe before anything is created);
/// `None` for a launch with neither (the engine's default runtime, no floor).
pub fn isolation_words(spec: &LaunchSpec) -> Option<String> {
    let Action::Container(container) = &spec.action else {
        return None;
    };
    let runtime = container.runtime.as_deref();
    match (container.isolation, runtime) {
        (None, None) => None,
        (None, Some(runtime)) => Some(format!(
            "runtime {runtime} ({}), no floor",
            agentc_policy::runtime_words(runtime)
        )),
        (Some(floor), runtime) => {
            let chosen = match runtime {
                Some(runtime) => format!(
                    "runtime {runtime} ({}), proven by a probe at launch (below the floor, \
                     nothing is created)",
                    agentc_policy::runtime_words(runtime)
                ),
                None => "the runtime is chosen from the engine's and proven by a probe at \
                         launch (none at the floor: nothing is created)"
                    .to_string(),
            };
            Some(format!(
                "at least {}, prefer {}: {chosen}",
                floor.min.as_str(),
                floor.prefer.as_str()
            ))
        }
    }
}

/// Findings counted by severity, with their codes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FindingsSummary {
    /// How many.
    pub total: usize,
    /// How many at each severity that occurs, highest first.
    pub by_severity: Vec<(String, usize)>,
    /// Their codes, in report order, each once.
    pub codes: Vec<String>,
}

impl FindingsSummary {
    /// Counts `findings`.
    pub fn of(findings: &[Finding]) -> FindingsSummary {
        let mut codes = Vec::new();
        for finding in findings {
            if !codes.iter().any(|code: &String| finding.code == *code) {
                codes.push(finding.code.to_string());
            }
        }
        let by_severity = Severity::ALL
            .iter()
            .rev()
            .filter_map(|severity| {
                let count = findings
                    .iter()
                    .filter(|f| f.severity() == *severity)
                    .count();
                (count > 0).then(|| (severity.to_string(), count))
            })
            .collect();
        FindingsSummary {
            total: findings.len(),
            by_severity,
            codes,
        }
    }

    /// `2 (1 high, 1 low): egress-unenforced, workspace-writable`, or `none`.
    pub fn words(&self) -> String {
        if self.total == 0 {
            return "none".to_string();
        }
        let counts: Vec<String> = self
            .by_severity
            .iter()
            .map(|(severity, count)| format!("{count} {severity}"))
            .collect();
        format!(
            "{} ({}): {}",
            self.total,
            counts.join(", "),
            self.codes.join(", ")
        )
    }
}

/// The plan of a profile's launches; `recorded` holds the spec digests of the last apply, by
/// launch label, when one is recorded.
pub fn plan(
    profile: &str,
    file: &str,
    launches: &[Launch],
    recorded: Option<&BTreeMap<String, String>>,
) -> Plan {
    let built: BTreeSet<String> = launches
        .iter()
        .filter_map(|launch| match &launch.spec.action {
            Action::Build(build) => Some(build.tag.clone()),
            Action::Container(_) => None,
        })
        .collect();
    let launches: Vec<LaunchPlan> = launches
        .iter()
        .map(|launch| LaunchPlan {
            launch: launch.label.clone(),
            spec_digest: launch.spec.digest().unwrap_or_default().to_string(),
            parts: parts(&launch.spec)
                .into_iter()
                .map(|part| match part {
                    Part::Image { reference, .. } => Part::Image {
                        built_by_profile: built.contains(&reference),
                        reference,
                    },
                    other => other,
                })
                .collect(),
            findings: FindingsSummary::of(&launch.findings),
            isolation: isolation_words(&launch.spec),
        })
        .collect();
    let since_apply = recorded.map(|recorded| {
        let mut changed: Vec<String> = launches
            .iter()
            .filter(|launch| recorded.get(&launch.launch) != Some(&launch.spec_digest))
            .map(|launch| launch.launch.clone())
            .collect();
        changed.extend(
            recorded
                .keys()
                .filter(|label| !launches.iter().any(|launch| &launch.launch == *label))
                .map(|label| format!("{label} (removed)")),
        );
        changed
    });
    Plan {
        profile: profile.to_string(),
        file: file.to_string(),
        engine_contacted: false,
        launches,
        since_apply,
    }
}

impl Plan {
    /// Every distinct part of every launch, with the launches that have it, in first-seen
    /// order: a home volume that the run and the seeds share is one part.
    pub fn distinct_parts(&self) -> Vec<(&Part, Vec<&str>)> {
        let mut distinct: Vec<(&Part, Vec<&str>)> = Vec::new();
        for launch in &self.launches {
            for part in &launch.parts {
                match distinct.iter_mut().find(|(seen, _)| same(seen, part)) {
                    Some((_, users)) => users.push(&launch.launch),
                    None => distinct.push((part, vec![&launch.launch])),
                }
            }
        }
        distinct
    }

    /// The plan as text: each launch with its parts and findings, then the totals.
    pub fn text(&self) -> String {
        let mut out = format!(
            "plan for profile {:?} ({}); offline: the engine was not contacted\n",
            self.profile, self.file
        );
        for launch in &self.launches {
            out.push_str(&format!(
                "\n{}  (spec digest {})\n",
                launch.launch,
                &launch.spec_digest[..12]
            ));
            for part in &launch.parts {
                let (what, words) = describe(part);
                out.push_str(&format!("  {what:<10} {words}\n"));
            }
            if let Some(isolation) = &launch.isolation {
                out.push_str(&format!("  {:<10} {isolation}\n", "isolation"));
            }
            out.push_str(&format!(
                "  {:<10} {}\n",
                "findings",
                launch.findings.words()
            ));
        }
        if self.launches.iter().any(|launch| {
            launch.parts.iter().any(|part| match part {
                Part::Network { name, .. } => name.contains(RUN_SUFFIX),
                _ => false,
            })
        }) {
            out.push_str(&format!(
                "\n{RUN_SUFFIX}: a suffix unique to each run (its process id and clock), so that \
                 concurrent runs of the profile get a set each\n"
            ));
        }
        out.push_str(&format!("\n{}\n", self.totals()));
        match &self.since_apply {
            None => out.push_str("deployment: not applied yet (agentc apply records it)\n"),
            Some(changed) if changed.is_empty() => {
                out.push_str("deployment: every launch is as the last apply recorded it\n")
            }
            Some(changed) => out.push_str(&format!(
                "deployment: changed since the last apply: {}\n",
                changed.join(", ")
            )),
        }
        out
    }

    /// `creates 2 containers, 1 image build, ...; uses ...`.
    pub fn totals(&self) -> String {
        let mut creates: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        let mut uses: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for (part, _) in self.distinct_parts() {
            // Each noun with its plural.
            let (map, noun) = match part {
                Part::Container { .. } => (&mut creates, ("container", "containers")),
                Part::ImageBuild { .. } => (&mut creates, ("image build", "image builds")),
                Part::Seed { .. } => (&mut creates, ("seed", "seeds")),
                Part::Volume { .. } => (
                    &mut creates,
                    ("volume (on first use)", "volumes (on first use)"),
                ),
                Part::Network { created: true, .. } => (&mut creates, ("network", "networks")),
                Part::Network { created: false, .. } => {
                    (&mut uses, ("existing network", "existing networks"))
                }
                Part::Image { .. } => (&mut uses, ("image", "images")),
                Part::Bind { .. } => (&mut uses, ("host path", "host paths")),
                Part::Secret { .. } => (&mut uses, ("secret", "secrets")),
                Part::Port { .. } => (&mut uses, ("published port", "published ports")),
            };
            *map.entry(noun).or_default() += 1;
        }
        let words = |map: &BTreeMap<(&str, &str), usize>| {
            let items: Vec<String> = map
                .iter()
                .map(|((one, many), count)| {
                    format!("{count} {}", if *count == 1 { one } else { many })
                })
                .collect();
            if items.is_empty() {
                "nothing".to_string()
            } else {
                items.join(", ")
            }
        };
        format!("creates {}; uses {}", words(&creates), words(&uses))
    }
}

/// Whether two parts are the same thing (a volume or image shared by launches).
fn same(a: &Part, b: &Part) -> bool {
    match (a, b) {
        (Part::Volume { name: x, .. }, Part::Volume { name: y, .. }) => x == y,
        (Part::Image { reference: x, .. }, Part::Image { reference: y, .. }) => x == y,
        (Part::Network { name: x, .. }, Part::Network { name: y, .. }) => x == y,
        (Part::Secret { name: x, .. }, Part::Secret { name: y, .. }) => x == y,
        (
            Part::Bind {
                path: x, target: t, ..
            },
            Part::Bind {
                path: y, target: u, ..
            },
        ) => x == y && t == u,
        _ => a == b,
    }
}

/// A part's kind and its line of words.
fn describe(part: &Part) -> (&'static str, String) {
    match part {
        Part::Container {
            role,
            name,
            image,
            removed_on_exit,
            detached,
        } => {
            let name = name
                .clone()
                .unwrap_or_else(|| "(named by the engine)".to_string());
            let mut notes = vec![role.as_str().to_string(), format!("image {image}")];
            if *removed_on_exit {
                notes.push("removed on exit".to_string());
            }
            if *detached {
                notes.push("detached".to_string());
            }
            ("container", format!("{name}: {}", notes.join(", ")))
        }
        Part::Image {
            reference,
            built_by_profile,
        } => (
            "image",
            if *built_by_profile {
                format!("{reference} (built by this profile: agentc apply)")
            } else {
                format!("{reference} (must be present: docker pull, or --pull)")
            },
        ),
        Part::ImageBuild {
            tag,
            context,
            dockerfile,
            named_contexts,
        } => {
            let mut words = format!("{tag} from {context}");
            if let Some(dockerfile) = dockerfile {
                words.push_str(&format!(", file {dockerfile}"));
            }
            if !named_contexts.is_empty() {
                words.push_str(&format!(", contexts {}", named_contexts.join(" ")));
            }
            ("build", words)
        }
        Part::Network {
            name,
            created,
            internal,
            publishes,
        } => (
            "network",
            format!(
                "{name} ({}{}{})",
                if *created { "created" } else { "must exist" },
                if *internal { ", internal" } else { "" },
                if publishes.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", not --internal: the egress proxy publishes {} through it; \
                         agentc doctor checks it",
                        publishes.join(", ")
                    )
                }
            ),
        ),
        Part::Volume {
            name,
            target,
            read_only,
        } => (
            "volume",
            format!(
                "{name} at {target}{}",
                if *read_only { ", read-only" } else { "" }
            ),
        ),
        Part::Bind {
            path,
            target,
            read_only,
            workspace,
        } => (
            "bind",
            format!(
                "{path} at {target}, {}{}",
                if *read_only { "read-only" } else { "writable" },
                if *workspace { ", the workspace" } else { "" }
            ),
        ),
        Part::Seed {
            source,
            target,
            volume,
        } => ("seed", format!("{source} into {volume} at {target} (once)")),
        Part::Secret { name, required } => (
            "secret",
            format!(
                "{name} from the environment at launch ({})",
                if *required { "required" } else { "optional" }
            ),
        ),
        Part::Port {
            port,
            host_ip,
            host_port,
        } => (
            "port",
            match host_port {
                Some(host_port) => format!("{port} on {host_ip}, host port {host_port}"),
                None => format!("{port} on {host_ip}, random host port"),
            },
        ),
    }
}

#[cfg(test)]
pub(crate) mod tests;
