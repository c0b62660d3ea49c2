//! Turning a loaded profile into one [`LaunchSpec`]: presets, hardening, overrides, paths.
//!
//! This is the second stage of the policy: the profile is already valid and its values typed
//! (see [`crate::load()`]); what can still fail here is what depends on the machine and the
//! invocation (a missing file, a seed target that is not configured) and the launch-time rules
//! of agent-containers' `docker.py` (mount targets that collide with generated ones, gateway
//! inputs). Every value set in the spec records its [`Origin`]. The launches are assembled
//! here from the tables' parts (under `rules/`).
//!
//! Deliberate steps beyond agent-containers, the system agentc generalizes, each recorded so `agentc explain` can say so:
//! - `egress.mode = "deny"` without a gateway also runs the container with no network, so the
//!   kernel enforces what the image's firewall promises;
//! - every container gets conservative default limits (4 GiB memory without swap, 512
//!   processes) and json-file log rotation (50m x 3), which the profile and the `AGENTC_*`
//!   overrides change or remove (`off`);
//! - the Decant companion, unhardened as in agent-containers, gets the same limits and
//!   rotation.

use std::collections::{BTreeMap, BTreeSet};

use crate::context::{preset_origin, EnvBuilder, Resolver};
use crate::digest::{self, LocalRoots};
use crate::document::LoadedProfile;
use crate::error::{Location, PolicyError};
use crate::inputs::{PathProbe, ResolveInputs};
use crate::instance;
use crate::keys;
use crate::overrides::parse_overrides;
use crate::presets::{self, Preset};
use crate::rules;
use crate::rules::identity::sandbox_container_name;
use crate::spec::{
    Action, ContainerSpec, LaunchKind, LaunchSpec, Origin, LABEL_KIND, LABEL_PROFILE,
    LABEL_SPEC_DIGEST,
};

/// Computes the launch `inputs.kind` of a valid profile.
///
/// A `run` of an `agent = "custom"` profile resolves to [`LaunchKind::Sandbox`]. The
/// `AGENTC_*` overrides are read from `inputs.env`; host paths are checked through `paths`,
/// which follows symbolic links as docker will. The spec digest
/// (`io.agentc.spec-digest`, [`crate::digest`]) is computed here, once, before the
/// invocation's [`crate::Instance`] is applied; the spec returned is final.
pub fn resolve(
    profile: &LoadedProfile,
    inputs: &ResolveInputs,
    paths: &dyn PathProbe,
) -> Result<LaunchSpec, PolicyError> {
    let overrides = parse_overrides(&inputs.env)?;
    check_invocation(inputs)?;
    let mut resolver = Resolver {
        loaded: profile,
        profile: &profile.profile,
        inputs,
        paths,
        overrides,
        origins: BTreeMap::new(),
    };
    let agent = profile.profile.agent;
    let (kind, action) = match (inputs.kind, presets::preset(agent)) {
        (LaunchKind::Run | LaunchKind::Sandbox, None) => (LaunchKind::Sandbox, resolver.sandbox()?),
        (LaunchKind::Sandbox, Some(_)) => {
            return Err(PolicyError::Unlaunchable {
                location: profile.location("agent"),
                message: format!(
                    "a sandbox launch needs agent = \"custom\", not {:?}",
                    agent.as_str()
                ),
                hint: "use `agentc run` for agent presets".to_string(),
            })
        }
        (LaunchKind::Run, Some(preset)) => (LaunchKind::Run, resolver.run(preset)?),
        (LaunchKind::Seed, Some(preset)) => (LaunchKind::Seed, resolver.seed(preset)?),
        (LaunchKind::Seed, None) => {
            return Err(PolicyError::Unlaunchable {
                location: profile.location("agent"),
                message: "a custom agent has no home volume to seed".to_string(),
                hint: "mount the files with [[mounts]] type = \"bind\" instead".to_string(),
            })
        }
        (LaunchKind::Decant, _) => (LaunchKind::Decant, resolver.decant()?),
        (LaunchKind::Build, preset) => (LaunchKind::Build, resolver.build(preset)?),
    };
    let mut spec = LaunchSpec {
        kind,
        profile: profile.profile.name.clone(),
        action,
        origins: resolver.origins,
    };
    let labels = spec.labels_mut();
    labels.insert(LABEL_PROFILE.to_string(), profile.profile.name.clone());
    labels.insert(LABEL_KIND.to_string(), kind.as_str().to_string());
    for key in [LABEL_PROFILE, LABEL_KIND, LABEL_SPEC_DIGEST] {
        spec.origins.insert(keys::label(key), Origin::Default);
    }
    // The digest first, then the instance: every instance of the launch carries its digest.
    let digest = digest::spec_digest(&spec, &LocalRoots::of(inputs, paths));
    instance::apply(&mut spec, &inputs.instance, profile)?;
    spec.labels_mut()
        .insert(LABEL_SPEC_DIGEST.to_string(), digest);
    Ok(spec)
}

/// The invocation values that reach docker verbatim: `--image` must be one image reference
/// (it is the first positional argument of `docker run`), and agent arguments must be
/// representable as process arguments.
///
/// Regression (`invocation_images_and_agent_arguments_are_checked`): `--image` was used
/// unchecked, so `--image=--privileged` or an image holding a newline reached the renderers,
/// and a NUL byte in an agent argument failed only in the CLI renderer.
fn check_invocation(inputs: &ResolveInputs) -> Result<(), PolicyError> {
    let refuse = |input: &str, message: String, hint: &str| PolicyError::Invalid {
        location: Location::Invocation {
            input: input.to_string(),
        },
        message,
        hint: hint.to_string(),
    };
    if let Some(image) = &inputs.image {
        let problem = if image.is_empty() {
            Some("is empty")
        } else if image.chars().any(|c| c.is_whitespace() || c.is_control()) {
            Some("must not contain whitespace or control characters")
        } else if image.starts_with('-') {
            Some("must not start with '-'")
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(refuse(
                "--image",
                format!("--image {problem}"),
                "pass one image reference such as `ghcr.io/owner/image:tag`; a value starting \
                 with '-' would be read by docker as an option",
            ));
        }
    }
    if let Some(index) = inputs.agent_args.iter().position(|arg| arg.contains('\0')) {
        return Err(refuse(
            "agent arguments",
            format!("agent argument {index} contains a nul byte"),
            "remove the nul byte: a process argument cannot carry one",
        ));
    }
    Ok(())
}

impl Resolver<'_> {
    /// The agent container (`docker.py`'s `build_run_argv`).
    fn run(&mut self, preset: &Preset) -> Result<Action, PolicyError> {
        let profile = self.profile;
        let image = self.agent_image(Some(preset))?;
        let mut container = ContainerSpec::empty(image);
        container.interactive = true;
        container.tty = true;
        container.auto_remove = true;
        for key in [keys::INTERACTIVE, keys::TTY, keys::AUTO_REMOVE] {
            self.set(key, preset_origin(preset));
        }
        self.init_process(&mut container, Some(preset));
        self.harden(&mut container, Some(preset));
        self.security(&mut container, Some(preset));

        self.home_volume(&mut container, preset);
        let workspace = self.workspace(&mut container, true, preset_origin(preset))?;

        self.network(&mut container)?;
        let mut env = EnvBuilder::default();
        rules::egress::env(profile, &mut env);
        self.provider_env(&mut env, preset)?;
        self.langfuse_env(&mut env, preset);
        self.proxy_env(&mut env, true)?;
        self.take_env(&mut container, env)?;

        let mut reserved: BTreeSet<String> = [
            presets::CA_BUNDLE_TARGET,
            preset.home_path,
            crate::spec::CA_DIR_TARGET,
        ]
        .into_iter()
        .chain(presets::TMPFS_TARGETS.iter().copied())
        .map(str::to_string)
        .collect();
        reserved.extend(workspace);
        let gateway = profile.egress.gateway_host.is_some();
        self.profile_mounts(&mut container, reserved, gateway)?;
        self.import_source()?;

        if let Some(command) = preset.command {
            container.command.push(command.to_string());
            self.set(keys::COMMAND, preset_origin(preset));
        }
        let provider_args = self.provider_args(preset);
        if !provider_args.is_empty() {
            container.command.extend(provider_args);
            let origin = if profile.provider.is_some() {
                self.field_origin("provider")
            } else {
                self.field_origin("langfuse.enabled")
            };
            self.set(keys::COMMAND_PROVIDER, origin);
        }
        self.agent_args(&mut container);
        self.limits(&mut container);
        self.logging(&mut container);
        self.egress_outside(&mut container)?;
        Ok(Action::Container(Box::new(container)))
    }

    /// The long-lived sandbox of a custom agent (the sandbox seed's container, hardened).
    fn sandbox(&mut self) -> Result<Action, PolicyError> {
        let image = self.agent_image(None)?;
        let mut container = ContainerSpec::empty(image);
        container.name = Some(sandbox_container_name(
            self.profile,
            self.inputs.owner.as_ref(),
        ));
        self.set(keys::NAME, Origin::Default);
        container.detach = true;
        self.set(keys::DETACH, Origin::Default);
        self.custom_process(&mut container);
        self.init_process(&mut container, None);
        self.harden(&mut container, None);
        self.security(&mut container, None);
        let workspace = self.workspace(&mut container, false, Origin::Default)?;
        self.network(&mut container)?;
        let mut env = EnvBuilder::default();
        self.proxy_env(&mut env, false)?;
        self.take_env(&mut container, env)?;
        let mut reserved: BTreeSet<String> = presets::TMPFS_TARGETS
            .iter()
            .copied()
            .chain([crate::spec::CA_DIR_TARGET])
            .map(str::to_string)
            .collect();
        reserved.extend(workspace);
        self.profile_mounts(&mut container, reserved, false)?;
        self.limits(&mut container);
        self.logging(&mut container);
        self.egress_outside(&mut container)?;
        Ok(Action::Container(Box::new(container)))
    }
}

#[cfg(test)]
pub(crate) mod tests;
