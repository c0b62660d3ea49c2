//! The profile's identity: `schema_version`, `name`, `agent` and `home_volume`, what
//! `agent = "custom"` requires and forbids, and the names agentc derives from them (home
//! volumes, container names).

use crate::check::Checker;
use crate::context::{preset_origin, Resolver};
use crate::inputs::Owner;
use crate::keys;
use crate::presets::{self, Preset};
use crate::profile::SCHEMA_VERSION;
use crate::profile::{AgentName, DecantConfig, LangfuseConfig, MountType, PackageSet, Profile};
use crate::spec::{ContainerSpec, Mount, MountSource};
use crate::text::is_profile_name;

/// `schema_version`, `name` and `home_volume`.
pub(crate) fn check(ck: &mut Checker, profile: &Profile) {
    if profile.schema_version != SCHEMA_VERSION {
        ck.fail(
            "schema_version",
            format!(
                "unsupported schema_version {}; this agentc reads version {SCHEMA_VERSION}",
                profile.schema_version
            ),
            format!(
                "set schema_version = {SCHEMA_VERSION}, or use the agentc that wrote this profile"
            ),
        );
    }
    if !is_profile_name(profile.name.trim()) {
        ck.fail(
            "name",
            format!("name {:?} is not a valid profile name", profile.name),
            "start with a lower-case letter and use only a-z, 0-9, _ or -, at most 63 characters",
        );
    }
    if let Some(volume) = &profile.home_volume {
        ck.volume_name("home_volume", volume.trim());
    }
    agent_scope(ck, profile);
}

/// What `agent = "custom"` requires and forbids, and the `[image]` fields only it may use.
fn agent_scope(ck: &mut Checker, profile: &Profile) {
    let image = &profile.image;
    if profile.agent != AgentName::Custom {
        let custom_only = [
            ("image.entrypoint", image.entrypoint.is_some()),
            ("image.command", image.command.is_some()),
            ("image.user", image.user.is_some()),
        ];
        for (field, _) in custom_only.iter().filter(|(_, set)| *set) {
            ck.fail(
                field,
                format!(
                    "{field} is only for agent \"custom\", not {:?}",
                    profile.agent.as_str()
                ),
                "agent images bring their own entrypoint, command and user; remove the \
                 field, or set agent = \"custom\" to run an image of your own",
            );
        }
        return;
    }
    if image.reference.is_none() {
        ck.fail(
            "image.ref",
            "agent \"custom\" requires image.ref",
            "add `[image]` with `ref = \"IMAGE:TAG\"`, the image the sandbox runs",
        );
    }
    const NO_HOME: &str = "custom sandboxes run their own image and have no agent home";
    let forbidden = [
        (
            "home_volume",
            profile.home_volume.is_some(),
            "the home volume",
        ),
        (
            "packages",
            profile.packages != PackageSet::default(),
            "build-time packages",
        ),
        ("provider", profile.provider.is_some(), "a model provider"),
        (
            "langfuse",
            profile.langfuse != LangfuseConfig::default(),
            "langfuse tracing",
        ),
        (
            "decant",
            profile.decant != DecantConfig::default(),
            "decant",
        ),
        (
            "configuration_import",
            profile.configuration_import.is_some(),
            "agent configuration imports",
        ),
        (
            "configuration_mounts",
            !profile.configuration_mounts.is_empty(),
            "agent configuration mounts",
        ),
    ];
    for (field, _, what) in forbidden.iter().filter(|(_, set, _)| *set) {
        let extra = if *field == "packages" {
            "; install packages in the custom image instead"
        } else {
            ""
        };
        ck.fail(
            field,
            format!("{field} is not supported for agent \"custom\""),
            format!("remove {field}: {NO_HOME}, so {what} would have nothing to act on{extra}"),
        );
    }
    for (index, mount) in profile.mounts.iter().enumerate() {
        if mount.kind == MountType::Seed {
            let field = format!("mounts[{index}].type");
            ck.fail(
                &field,
                format!("{field}: seed mounts are not supported for agent \"custom\""),
                format!(
                    "use type = \"bind\": seeds copy into the agent home volume, and {NO_HOME}"
                ),
            );
        }
    }
}

impl Resolver<'_> {
    /// The agent's persistent home volume, mounted writable at the preset's home path.
    pub fn home_volume(&mut self, container: &mut ContainerSpec, preset: &Preset) {
        let home = home_volume_name(self.profile, self.inputs.owner.as_ref()).unwrap_or_default();
        container.mounts.push(Mount {
            target: preset.home_path.to_string(),
            read_only: false,
            source: MountSource::Volume {
                name: home,
                subpath: None,
            },
        });
        let origin = self.origin_or("home_volume", preset_origin(preset));
        self.set(keys::mount(preset.home_path), origin);
    }
}

/// The home volume of a profile for an owner: the profile's `home_volume`, or
/// `<image-name>-home-<owner>-<name>` (agent-containers' user-scoped default), without the
/// owner part when there is no owner (`<image-name>-home-<name>`). `None` for custom agents,
/// which have no home volume.
pub fn home_volume_name(profile: &Profile, owner: Option<&Owner>) -> Option<String> {
    let preset = presets::preset(profile.agent)?;
    Some(match &profile.home_volume {
        Some(volume) => volume.clone(),
        None => format!(
            "{}-home-{}{}",
            preset.image_name,
            owner_part(owner),
            profile.name
        ),
    })
}

/// The owner's part of a default name, `<owner slug>-`, or nothing without an owner.
pub(crate) fn owner_part(owner: Option<&Owner>) -> String {
    owner.map_or_else(String::new, |owner| format!("{}-", owner_slug(owner)))
}

/// The host user as it appears in resource names: agent-containers' `_resource_owner`,
/// `<sanitized login>-<uid>` (lower case, runs of other characters replaced by `-`, trimmed of
/// `-_.`, at most 32 characters, `user` when nothing is left).
pub fn owner_slug(owner: &Owner) -> String {
    let lower = owner.name.trim().to_lowercase();
    let mut cleaned = String::new();
    let mut in_run = false;
    for c in lower.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '-') {
            cleaned.push(c);
            in_run = false;
        } else if !in_run {
            cleaned.push('-');
            in_run = true;
        }
    }
    let trim = |text: &str| {
        text.trim_matches(|c| matches!(c, '-' | '_' | '.'))
            .to_string()
    };
    let cleaned = trim(&cleaned);
    let cleaned = trim(&cleaned.chars().take(32).collect::<String>());
    let name = if cleaned.is_empty() { "user" } else { &cleaned };
    format!("{name}-{}", owner.uid)
}

/// The container name of a custom agent's sandbox: `agentc-sandbox-<owner>-<name>`
/// (`agentc-sandbox-<name>` without an owner).
pub fn sandbox_container_name(profile: &Profile, owner: Option<&Owner>) -> String {
    format!("agentc-sandbox-{}{}", owner_part(owner), profile.name)
}

/// The container name of a profile's Decant: `agentc-decant-<owner>-<name>`
/// (`agentc-decant-<name>` without an owner).
pub fn decant_container_name(profile: &Profile, owner: Option<&Owner>) -> String {
    format!("agentc-decant-{}{}", owner_part(owner), profile.name)
}
