//! `[decant]`: the Decant session-browser companion (agent-containers' `build_decant_run_argv`),
//! unhardened as there but with agentc's limits and log rotation; its checks, its launch and
//! the `port-public` finding it raises on every launch of the profile when it listens beyond
//! loopback.

use std::net::IpAddr;

use crate::check::Checker;
use crate::context::{invocation, Resolver};
use crate::error::PolicyError;
use crate::explainer::Explainer;
use crate::finding::{FindingCode, Report};
use crate::keys;
use crate::presets;
use crate::profile::{AgentName, Profile};
use crate::rules::identity::{decant_container_name, owner_part};
use crate::spec::PublishedPort;
use crate::spec::{Action, ContainerSpec, LaunchKind, Mount, MountSource, Origin, Protocol};
use crate::text::is_profile_name;

/// The Decant fields, and which agents support it.
pub(crate) fn check(ck: &mut Checker, profile: &Profile) {
    let decant = &profile.decant;
    for (index, name) in decant.source_profiles.iter().enumerate() {
        let field = format!("decant.source_profiles[{index}]");
        if ck.line(&field, name, "a profile name") && !is_profile_name(name.trim()) {
            ck.fail(
                &field,
                format!("{field} {:?} is not a valid profile name", name.trim()),
                "name a profile NAME whose file NAME.toml sits beside this one (a-z, 0-9, _ or \
                 -, starting with a letter)",
            );
        }
    }
    if decant.enabled && decant.source_profiles.is_empty() {
        ck.fail_when(
            &["decant.enabled"],
            "decant.source_profiles",
            "decant.enabled requires decant.source_profiles",
            "list the profiles whose sessions decant reads, such as source_profiles = [\"dev\"]",
        );
    }
    if let Some(image) = &decant.image {
        ck.image_reference("decant.image", image.trim());
    }
    if let Some(volume) = &decant.data_volume {
        ck.volume_name("decant.data_volume", volume.trim());
    }
    ck.token(
        "decant.bind_address",
        &decant.bind_address,
        "a host address such as 127.0.0.1",
    );
    // A custom agent is refused `[decant]` as a whole (see `identity`).
    let supported = matches!(
        profile.agent,
        AgentName::ClaudeCode | AgentName::Codex | AgentName::Custom
    );
    if decant.enabled && !supported {
        ck.fail(
            "decant.enabled",
            format!(
                "decant.enabled is supported only for claude-code and codex, not {:?}",
                profile.agent.as_str()
            ),
            "remove [decant], or run it from a claude-code or codex profile",
        );
    }
}

impl Resolver<'_> {
    /// The Decant companion: one home per agent read through a volume subpath, published on
    /// `decant.bind_address:decant.port`.
    pub fn decant(&mut self) -> Result<Action, PolicyError> {
        let profile = self.profile;
        let config = &profile.decant;
        if !config.enabled {
            return Err(self.unlaunchable(
                "decant.enabled",
                "decant is not enabled for this profile".to_string(),
                "set [decant] enabled = true",
            ));
        }
        let mut claude = None;
        let mut codex = None;
        for source in &self.inputs.decant_sources {
            let slot = match source.agent {
                AgentName::ClaudeCode => &mut claude,
                AgentName::Codex => &mut codex,
                other => {
                    return Err(self.unlaunchable(
                        "decant.source_profiles",
                        format!(
                            "decant source profile must use claude-code or codex: {} uses {}",
                            source.profile,
                            other.as_str()
                        ),
                        "list only claude-code and codex profiles in source_profiles",
                    ))
                }
            };
            if slot.is_some() {
                return Err(self.unlaunchable(
                    "decant.source_profiles",
                    format!(
                        "decant has multiple {} source profiles",
                        source.agent.as_str()
                    ),
                    "keep one source profile per agent",
                ));
            }
            *slot = Some(source);
        }
        if claude.is_none() && codex.is_none() {
            return Err(self.unlaunchable(
                "decant.source_profiles",
                "decant requires at least one claude-code or codex source profile".to_string(),
                "list a claude-code or codex profile in [decant] source_profiles",
            ));
        }
        let owner = owner_part(self.inputs.owner.as_ref());
        let image = if let Some(image) = &self.inputs.image {
            self.set(keys::IMAGE, invocation("--image"));
            image.clone()
        } else if let Some(image) = &config.image {
            self.set(keys::IMAGE, self.field_origin("decant.image"));
            image.clone()
        } else {
            self.set(keys::IMAGE, Origin::Default);
            format!("agent-containers/decant:{owner}{}", profile.name)
        };
        let mut container = ContainerSpec::empty(image);
        container.name = Some(decant_container_name(profile, self.inputs.owner.as_ref()));
        self.set(keys::NAME, Origin::Default);
        container.interactive = true;
        container.tty = true;
        container.auto_remove = true;
        for key in [keys::INTERACTIVE, keys::TTY, keys::AUTO_REMOVE] {
            self.set(key, Origin::Default);
        }
        let host_ip: IpAddr = config.bind_address.parse().map_err(|_| {
            self.unlaunchable(
                "decant.bind_address",
                format!("{:?} is not an IP address", config.bind_address),
                "use an address such as 127.0.0.1",
            )
        })?;
        container.ports.push(PublishedPort {
            container_port: presets::DECANT_CONTAINER_PORT,
            protocol: Protocol::Tcp,
            host_ip,
            host_port: Some(config.port),
        });
        let origin = self
            .written("decant.port")
            .or_else(|| self.written("decant.bind_address"))
            .unwrap_or(Origin::Default);
        self.set(
            keys::port(presets::DECANT_CONTAINER_PORT, Protocol::Tcp),
            origin,
        );
        self.set(keys::NETWORK, Origin::Default);
        let data_key = keys::mount(presets::DECANT_DATA_TARGET);
        let data_volume = match &config.data_volume {
            Some(volume) => {
                self.set(data_key, self.field_origin("decant.data_volume"));
                volume.clone()
            }
            None => {
                self.set(data_key, Origin::Default);
                format!("decant-data-{owner}{}", profile.name)
            }
        };
        container.mounts.push(Mount {
            target: presets::DECANT_DATA_TARGET.to_string(),
            read_only: false,
            source: MountSource::Volume {
                name: data_volume,
                subpath: None,
            },
        });
        for (source, target, subpath) in [
            (claude, "/sources/claude", ".claude"),
            (codex, "/sources/codex", ".codex"),
        ] {
            if let Some(source) = source {
                container.mounts.push(Mount {
                    target: target.to_string(),
                    read_only: true,
                    source: MountSource::Volume {
                        name: source.home_volume.clone(),
                        subpath: Some(subpath.to_string()),
                    },
                });
                self.set(
                    keys::mount(target),
                    self.field_origin("decant.source_profiles"),
                );
            }
        }
        container.command = presets::DECANT_COMMAND
            .iter()
            .map(|arg| arg.to_string())
            .collect();
        self.set(keys::COMMAND, Origin::Default);
        self.limits(&mut container);
        self.logging(&mut container);
        Ok(Action::Container(Box::new(container)))
    }
}

/// What widens the sandbox here: Decant listening beyond this machine.
pub(crate) fn widens(out: &Explainer, c: &ContainerSpec, items: &mut Vec<String>) {
    if out.spec.kind != LaunchKind::Decant {
        return;
    }
    for port in &c.ports {
        if !port.host_ip.is_loopback() {
            items.push(format!(
                "Decant listens on {}, beyond this machine  [{}]",
                port.host_ip,
                out.at("decant.bind_address")
            ));
        }
    }
}

/// What agentc adds here (explain's "added by agentc"): Decant gets the limits and log rotation.
pub(crate) fn added_by_agentc(out: &Explainer, notes: &mut Vec<String>) {
    if out.spec.kind == LaunchKind::Decant {
        notes.push(
            "Decant is not hardened (as in agent-containers) but gets the limits and log rotation"
                .to_string(),
        );
    }
}

/// Decant off loopback, reported on the profile's other launches too, so that a CI check of
/// the default launch sees it.
pub(crate) fn findings_elsewhere(report: &mut Report) {
    let decant = &report.loaded.profile.decant;
    if report.spec.kind == LaunchKind::Decant || !decant.enabled {
        return;
    }
    let Ok(address) = decant.bind_address.parse::<IpAddr>() else {
        return;
    };
    if address.is_loopback() {
        return;
    }
    let port = decant.port;
    let position = report.position("decant.bind_address");
    report.push(
        FindingCode::PortPublic,
        ("decant.bind_address".to_string(), position),
        format!(
            "decant (`--kind decant`) publishes port {port} on {address}, reachable beyond this \
             machine"
        ),
        "set decant.bind_address = \"127.0.0.1\"",
    );
}
