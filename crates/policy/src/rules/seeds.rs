//! Seed mounts (`type = "seed"`): the networkless, root, copy-once helper that copies one
//! seed's source into the agent's home volume (agent-containers' `build_seed_argv`).

use crate::context::{invocation, preset_origin, Resolver};
use crate::error::{Location, PolicyError};
use crate::inputs::PathKind;
use crate::keys;
use crate::presets::{self, Preset};
use crate::profile::{MountConfig, MountType};
use crate::rules::mounts::effective_mounts;
use crate::spec::Tmpfs;
use crate::spec::{Action, ContainerSpec, EnvValue, EnvVar, Mount, MountSource, Network, Origin};

impl Resolver<'_> {
    /// The copy-once seed helper for the invocation's `--seed-target`.
    pub fn seed(&mut self, preset: &Preset) -> Result<Action, PolicyError> {
        let profile = self.profile;
        let seeds: Vec<(String, &MountConfig)> = effective_mounts(profile)
            .into_iter()
            .filter(|(_, mount)| mount.kind == MountType::Seed)
            .collect();
        let configured = if seeds.is_empty() {
            "this profile configures no seed mounts".to_string()
        } else {
            let targets: Vec<&str> = seeds
                .iter()
                .map(|(_, mount)| mount.target.as_str())
                .collect();
            format!("pass --seed-target with one of: {}", targets.join(", "))
        };
        let seed_error = |message: String| PolicyError::Unlaunchable {
            location: Location::Invocation {
                input: "--seed-target".to_string(),
            },
            message,
            hint: configured.clone(),
        };
        let Some(wanted) = &self.inputs.seed_target else {
            return Err(seed_error("a seed launch needs a seed target".to_string()));
        };
        let wanted_trimmed = wanted.trim_end_matches('/');
        let Some((field, mount)) = seeds
            .iter()
            .find(|(_, mount)| mount.target.trim_end_matches('/') == wanted_trimmed)
        else {
            return Err(seed_error(format!(
                "seed mount is not configured: {wanted}"
            )));
        };
        let target = mount.target.trim_end_matches('/').to_string();
        if !target.starts_with(&format!("{}/", preset.home_path)) {
            return Err(self.invalid(
                &format!("{field}.target"),
                format!("seed target must be inside the persistent home: {target}"),
                &format!("seed into a path under {}", preset.home_path),
            ));
        }
        let source_field = format!("{field}.source");
        let source = self.host_path(&source_field, &mount.source)?;
        let allowed_by = self.refuse_dangerous(&source_field, &source)?;
        if self.paths.kind(&source) == PathKind::Missing {
            return Err(self.unlaunchable(
                &source_field,
                format!("seed source does not exist: {source}"),
                "create it, or fix the path (relative paths are relative to the profile's directory, ~ is your home)",
            ));
        }
        let image = self.agent_image(Some(preset))?;
        let mut container = ContainerSpec::empty(image);
        container.auto_remove = true;
        self.set(keys::AUTO_REMOVE, Origin::Default);
        container.network = Network::None;
        self.set(keys::NETWORK, Origin::Default);
        container.user = Some("0:0".to_string());
        self.set(keys::USER, Origin::Default);
        container.no_new_privileges = true;
        container.read_only_root = true;
        container.cap_drop_all = true;
        for key in [
            keys::NO_NEW_PRIVILEGES,
            keys::READ_ONLY_ROOT,
            keys::CAP_DROP_ALL,
        ] {
            self.set(key, Origin::Default);
        }
        for target in presets::TMPFS_TARGETS {
            container.tmpfs.push(Tmpfs {
                target: target.to_string(),
                exec: false,
            });
            self.set(keys::tmpfs(target), Origin::Default);
        }
        for capability in presets::SEED_CAPABILITIES {
            container.cap_add.insert(*capability);
            self.set(keys::cap_add(*capability), Origin::Default);
        }
        self.home_volume(&mut container, preset);
        container.mounts.push(Mount {
            target: presets::SEED_SOURCE_TARGET.to_string(),
            read_only: true,
            source: MountSource::Bind { path: source },
        });
        let origin = self.field_origin(&source_field);
        self.set(keys::mount(presets::SEED_SOURCE_TARGET), origin);
        if let Some(origin) = allowed_by {
            self.set(keys::allowed_by(presets::SEED_SOURCE_TARGET), origin);
        }
        let target_origin = self.field_origin(&format!("{field}.target"));
        for (name, value, origin) in [
            ("SEED_TARGET", target.clone(), target_origin),
            (
                "SEED_USER",
                preset.seed_user.to_string(),
                preset_origin(preset),
            ),
            (
                "SEED_HOME",
                preset.home_path.to_string(),
                preset_origin(preset),
            ),
            (
                "SEED_ON_CONFLICT",
                mount.on_conflict.as_str().to_string(),
                self.origin_or(&format!("{field}.on_conflict"), Origin::Default),
            ),
        ] {
            container.env.push(EnvVar {
                name: name.to_string(),
                value: EnvValue::Literal { value },
            });
            self.set(keys::env(name), origin);
        }
        container.entrypoint = Some("/bin/sh".to_string());
        self.set(keys::ENTRYPOINT, Origin::Default);
        container.command = vec!["-ceu".to_string(), presets::SEED_COPY_SCRIPT.to_string()];
        self.set(keys::COMMAND, Origin::Default);
        self.set(keys::SEED_TARGET, invocation("--seed-target"));
        self.limits(&mut container);
        self.logging(&mut container);
        Ok(Action::Container(Box::new(container)))
    }
}
