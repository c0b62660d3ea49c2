//! The resolve stage's state: the profile, the invocation, the machine and the overrides a
//! launch is resolved from, the origins recorded so far, and the helpers every table's
//! resolution shares (origins, host paths, dangerous binds, environment entries).

use std::collections::BTreeMap;

use crate::document::LoadedProfile;
use crate::error::{Location, PolicyError};
use crate::inputs::{PathKind, PathProbe, ResolveInputs};
use crate::keys;
use crate::overrides::Overrides;
use crate::paths::{field_dangers, is_profile_relative, normalize_path, resolve_host_path, Danger};
use crate::presets::Preset;
use crate::profile::Profile;
use crate::spec::{ContainerSpec, EnvValue, EnvVar, Origin};

/// Everything one launch is resolved from, and the origins recorded for it.
pub(crate) struct Resolver<'a> {
    /// The profile with its positions.
    pub loaded: &'a LoadedProfile,
    /// The profile's values.
    pub profile: &'a Profile,
    /// The invocation and the machine.
    pub inputs: &'a ResolveInputs,
    /// What host paths are.
    pub paths: &'a dyn PathProbe,
    /// The `AGENTC_*` overrides.
    pub overrides: Overrides,
    /// Where each value of the spec came from.
    pub origins: BTreeMap<String, Origin>,
}

/// The origin of a preset's value.
pub(crate) fn preset_origin(preset: &Preset) -> Origin {
    Origin::Preset {
        agent: preset.agent.as_str().to_string(),
    }
}

/// The origin of an invocation input such as `--workspace`.
pub(crate) fn invocation(input: &str) -> Origin {
    Origin::Invocation {
        input: input.to_string(),
    }
}

/// The origin of an environment override.
pub(crate) fn env_origin(variable: &str) -> Origin {
    Origin::Environment {
        variable: variable.to_string(),
    }
}

impl Resolver<'_> {
    /// `Origin::Profile` for a field when the profile wrote it (an element's position falls
    /// back to its array's), else `fallback`.
    pub fn origin_or(&self, field: &str, fallback: Origin) -> Origin {
        match self.written(field) {
            Some(origin) => origin,
            None => fallback,
        }
    }

    /// `Origin::Profile` for a field the profile wrote.
    pub fn written(&self, field: &str) -> Option<Origin> {
        let position = self.loaded.position(field).or_else(|| {
            field
                .rfind('[')
                .filter(|_| field.ends_with(']'))
                .and_then(|index| self.loaded.position(&field[..index]))
        })?;
        Some(Origin::Profile {
            field: field.to_string(),
            line: Some(position.0),
            column: Some(position.1),
        })
    }

    /// The origin of a field that is set (it may have come from a default the loader filled
    /// in, when the profile did not write it).
    pub fn field_origin(&self, field: &str) -> Origin {
        self.origin_or(
            field,
            Origin::Profile {
                field: field.to_string(),
                line: None,
                column: None,
            },
        )
    }

    /// Records where the value at `key` came from.
    pub fn set(&mut self, key: impl Into<String>, origin: Origin) {
        self.origins.insert(key.into(), origin);
    }

    /// A launch this machine or invocation cannot make, at a profile field.
    pub fn unlaunchable(&self, field: &str, message: String, hint: &str) -> PolicyError {
        PolicyError::Unlaunchable {
            location: self.loaded.location(field),
            message,
            hint: hint.to_string(),
        }
    }

    /// An invalid value found while resolving, at a profile field.
    pub fn invalid(&self, field: &str, message: String, hint: &str) -> PolicyError {
        PolicyError::Invalid {
            location: self.loaded.location(field),
            message,
            hint: hint.to_string(),
        }
    }

    /// Resolves a profile's host path (`~`, relative to the profile's directory, lexically
    /// normalized), then follows symbolic links as docker will: a profile-relative source that
    /// leads outside the profile's directory is refused, since the profile would read as
    /// mounting one of its own files while docker mounts something else; any other link is
    /// replaced by its real target, which the dangerous-path checks then see.
    pub fn host_path(&self, field: &str, value: &str) -> Result<String, PolicyError> {
        let lexical = resolve_host_path(value, &self.inputs.home_dir, &self.inputs.profile_dir);
        let Some(real) = self.paths.canonical(&lexical) else {
            return Ok(lexical);
        };
        let profile_dir = normalize_path(&self.inputs.profile_dir);
        // The profile's directory itself may sit behind a link (`/tmp` -> `/private/tmp`).
        let real_profile_dir = self
            .paths
            .canonical(&profile_dir)
            .unwrap_or_else(|| profile_dir.clone());
        let inside = |dir: &str| real == dir || real.starts_with(&format!("{dir}/"));
        if is_profile_relative(value) && !inside(&real_profile_dir) {
            return Err(self.invalid(
                field,
                format!(
                    "{field} {lexical} is a symbolic link to {real}, outside the profile's directory"
                ),
                "write the real path in the profile (an absolute path), or replace the link with the file",
            ));
        }
        Ok(real)
    }

    /// Refuses a host path that hands over the host ([`crate::paths::dangers`]: `/`, the home
    /// directory or above it, the Docker socket, an engine's data, the host's system
    /// directories, a credential directory), as written and where its links lead, unless the
    /// profile accepts every danger with its `[security] allow_*` field; then returns the origin
    /// of the first such field, to be recorded under [`keys::allowed_by`].
    pub fn refuse_dangerous(&self, field: &str, path: &str) -> Result<Option<Origin>, PolicyError> {
        let home = normalize_path(&self.inputs.home_dir);
        let mut found = field_dangers(field, path, Some(&home));
        let real = self.paths.canonical(path);
        if let Some(real) = &real {
            for danger in field_dangers(field, real, Some(&home)) {
                if !found.contains(&danger) {
                    found.push(danger);
                }
            }
        }
        let Some(&first) = found.first() else {
            return Ok(None);
        };
        let Some(danger) = found
            .iter()
            .copied()
            .find(|danger| !danger.allowed(&self.profile.security))
        else {
            return Ok(Some(self.field_origin(first.allow_field())));
        };
        let shown = match &real {
            Some(real) if real != path => format!("{path} (a link to {real})"),
            _ => path.to_string(),
        };
        let (subject, location) = if field == "--workspace" {
            (
                format!("the workspace {shown}"),
                Location::Invocation {
                    input: field.to_string(),
                },
            )
        } else {
            (format!("{field} {shown}"), self.loaded.location(field))
        };
        let message = match danger {
            Danger::Root => format!("{subject} is the host's root directory"),
            Danger::Home if path == home => format!("{subject} is the whole home directory"),
            Danger::Home => format!("{subject} contains the home directory {home}"),
            Danger::DockerSocket => {
                format!("{subject} resolves to the docker socket or a directory holding it")
            }
            other => format!("{subject} {}", other.what()),
        };
        Err(PolicyError::Invalid {
            location,
            message,
            hint: format!(
                "{}, or set {} to accept it",
                danger.why(),
                danger.allow_setting()
            ),
        })
    }

    /// Checks a profile file input (gateway key, CA, import source) and resolves it.
    pub fn require_path(
        &self,
        field: &str,
        value: &str,
        want: PathKind,
        label: &str,
    ) -> Result<String, PolicyError> {
        let path = self.host_path(field, value)?;
        self.refuse_dangerous(field, &path)?;
        let kind = self.paths.kind(&path);
        if kind != want {
            let what = if want == PathKind::Directory {
                "directory"
            } else {
                "file"
            };
            let message = match kind {
                PathKind::Missing => format!("{label} does not exist: {path}"),
                _ => format!("{label} is not a {what}: {path}"),
            };
            return Err(self.unlaunchable(
                field,
                message,
                "create it, or fix the path (relative paths are relative to the profile's directory)",
            ));
        }
        Ok(path)
    }

    /// Adds the gathered environment entries to the container, recording each one's origin;
    /// a name set twice is an error at the field that set it the second time.
    pub fn take_env(
        &mut self,
        container: &mut ContainerSpec,
        env: EnvBuilder,
    ) -> Result<(), PolicyError> {
        if let Some((name, field)) = env.duplicate {
            return Err(self.invalid(
                &field,
                format!("environment variable {name} would be set twice"),
                "use distinct variable names for keys and settings",
            ));
        }
        for (var, field) in env.vars {
            let origin = self.field_origin(&field);
            self.set(keys::env(&var.name), origin);
            container.env.push(var);
        }
        for (name, value) in env.held {
            container.held_secrets.insert(&name, value);
        }
        Ok(())
    }
}

/// Environment entries in order, with the profile field each came from; remembers the first
/// name set twice.
#[derive(Default)]
pub(crate) struct EnvBuilder {
    vars: Vec<(EnvVar, String)>,
    duplicate: Option<(String, String)>,
    /// The values of the secrets the profile holds ([`EnvBuilder::held`]).
    held: Vec<(String, String)>,
}

impl EnvBuilder {
    fn push(&mut self, name: &str, value: EnvValue, field: &str) {
        if self.vars.iter().any(|(var, _)| var.name == name) {
            if self.duplicate.is_none() {
                self.duplicate = Some((name.to_string(), field.to_string()));
            }
            return;
        }
        self.vars.push((
            EnvVar {
                name: name.to_string(),
                value,
            },
            field.to_string(),
        ));
    }

    /// A value written in the spec, set by the profile field `field`.
    pub fn literal(&mut self, name: &str, value: &str, field: &str) {
        self.push(
            name,
            EnvValue::Literal {
                value: value.to_string(),
            },
            field,
        );
    }

    /// A required secret passed through by name, named by the profile field `field`.
    pub fn secret(&mut self, name: &str, field: &str) {
        self.push(name, EnvValue::Secret { required: true }, field);
    }

    /// A secret whose value the profile field `field` holds (a proxy URL with credentials):
    /// passed by name like [`EnvBuilder::secret`], its value kept beside the spec
    /// ([`crate::ContainerSpec::held_secrets`]), never in it.
    pub fn held(&mut self, name: &str, value: String, field: &str) {
        self.secret(name, field);
        self.held.push((name.to_string(), value));
    }
}
