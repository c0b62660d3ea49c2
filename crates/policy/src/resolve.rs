//! Turning a loaded profile into one [`LaunchSpec`]: presets, hardening, overrides, paths.
//!
//! This is the second stage of the policy: the profile is already valid (see
//! [`mod@crate::load`]); what can still fail here is what depends on the machine and the
//! invocation (a missing file, a seed target that is not configured) and the launch-time rules
//! of agent-containers' `docker.py` (mount targets that collide with generated ones, gateway
//! inputs). Every value set in the spec records its [`Origin`].
//!
//! Deliberate steps beyond the seeds, each recorded so `agentc explain` can say so:
//! - `egress.mode = "deny"` without a gateway also runs the container with no network, so the
//!   kernel enforces what the image's firewall promises;
//! - every container gets conservative default limits (4 GiB memory without swap, 512
//!   processes) and json-file log rotation (50m x 3), which the profile and the `AGENTC_*`
//!   overrides change or remove (`off`);
//! - the Decant companion, unhardened as in agent-containers, gets the same limits and
//!   rotation.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};

use sha2::{Digest, Sha256};

use crate::capability::Capability;
use crate::error::{Location, PolicyError};
use crate::inputs::{Owner, PathKind, PathProbe, ResolveInputs};
use crate::load::LoadedProfile;
use crate::overrides::{self, parse_overrides, Limit, Overrides};
use crate::presets::{self, Preset};
use crate::profile::{AgentName, MountConfig, MountType, PortConfig, Profile};
use crate::spec::{
    Action, AppArmor, BuildSpec, ContainerSpec, Device, EnvValue, EnvVar, ExtraHost, HostTarget,
    LaunchKind, LaunchSpec, LogConfig, Mount, MountSource, Network, Origin, Protocol,
    PublishedPort, Tmpfs,
};
use crate::units::{cpus_of, parse_size};

/// Label naming the profile of a container or image.
pub const LABEL_PROFILE: &str = "io.agentc.profile";
/// Label naming the launch kind (`run`, `seed`, ...).
pub const LABEL_KIND: &str = "io.agentc.kind";
/// Label holding [`spec_digest`] of the launch.
pub const LABEL_SPEC_DIGEST: &str = "io.agentc.spec-digest";

/// Origin key recording that a network override or `[network].name` was not applied because
/// `egress.mode = "deny"` keeps the container off every network.
pub const SUPERSEDED_NETWORK_KEY: &str = "network.superseded";

/// Computes the launch `inputs.kind` of a valid profile.
///
/// A `run` of an `agent = "custom"` profile resolves to [`LaunchKind::Sandbox`]. The
/// `AGENTC_*` overrides are read from `inputs.env`; host paths are checked through `paths`
/// and never canonicalized (sources are normalized lexically).
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
    let labels = match &mut spec.action {
        Action::Container(container) => &mut container.labels,
        Action::Build(build) => &mut build.labels,
    };
    labels.insert(LABEL_PROFILE.to_string(), profile.profile.name.clone());
    labels.insert(LABEL_KIND.to_string(), kind.as_str().to_string());
    for key in [LABEL_PROFILE, LABEL_KIND, LABEL_SPEC_DIGEST] {
        spec.origins
            .insert(format!("labels.{key}"), Origin::Default);
    }
    let digest = spec_digest(&spec);
    match &mut spec.action {
        Action::Container(container) => &mut container.labels,
        Action::Build(build) => &mut build.labels,
    }
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

/// The home volume of a profile for an owner: the profile's `home_volume`, or
/// `<image-name>-home-<owner>-<name>` (agent-containers' user-scoped default). `None` for
/// custom agents, which have no home volume.
pub fn home_volume_name(profile: &Profile, owner: &Owner) -> Option<String> {
    let preset = presets::preset(profile.agent)?;
    Some(match &profile.home_volume {
        Some(volume) => volume.clone(),
        None => format!(
            "{}-home-{}-{}",
            preset.image_name,
            owner_slug(owner),
            profile.name
        ),
    })
}

/// sha256 digest (hex) of a spec, excluding the digest label itself.
///
/// It covers the kind, the profile name and the action, not the origins: the same launch
/// reached through a different override has the same digest.
pub fn spec_digest(spec: &LaunchSpec) -> String {
    let mut action = spec.action.clone();
    match &mut action {
        Action::Container(container) => container.labels.remove(LABEL_SPEC_DIGEST),
        Action::Build(build) => build.labels.remove(LABEL_SPEC_DIGEST),
    };
    // Serializing plain data with sorted maps cannot fail and is deterministic.
    let bytes = serde_json::to_vec(&(&spec.kind, &spec.profile, &action)).unwrap_or_default();
    Sha256::digest(&bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
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

/// The container name of a custom agent's sandbox: `agentc-sandbox-<owner>-<name>`.
pub fn sandbox_container_name(profile: &Profile, owner: &Owner) -> String {
    format!("agentc-sandbox-{}-{}", owner_slug(owner), profile.name)
}

/// The container name of a profile's Decant: `agentc-decant-<owner>-<name>`.
pub fn decant_container_name(profile: &Profile, owner: &Owner) -> String {
    format!("agentc-decant-{}-{}", owner_slug(owner), profile.name)
}

/// Normalizes an absolute path lexically: `.` and empty components go, `..` removes the
/// previous one (never above `/`). Symlinks are not followed.
pub fn normalize_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Resolves a profile path against the invocation: `~` and `~/...` against the home directory,
/// relative paths against the profile's directory, then [`normalize_path`].
pub fn resolve_host_path(source: &str, inputs: &ResolveInputs) -> String {
    let joined = if source == "~" {
        inputs.home_dir.clone()
    } else if let Some(rest) = source.strip_prefix("~/") {
        format!("{}/{rest}", inputs.home_dir)
    } else if source.starts_with('/') {
        source.to_string()
    } else {
        format!("{}/{source}", inputs.profile_dir)
    };
    normalize_path(&joined)
}

struct Resolver<'a> {
    loaded: &'a LoadedProfile,
    profile: &'a Profile,
    inputs: &'a ResolveInputs,
    paths: &'a dyn PathProbe,
    overrides: Overrides,
    origins: BTreeMap<String, Origin>,
}

fn trim_url(url: &str) -> String {
    url.trim_end_matches('/').to_string()
}

fn preset_origin(preset: &Preset) -> Origin {
    Origin::Preset {
        agent: preset.agent.as_str().to_string(),
    }
}

fn invocation(input: &str) -> Origin {
    Origin::Invocation {
        input: input.to_string(),
    }
}

fn env_origin(variable: &str) -> Origin {
    Origin::Environment {
        variable: variable.to_string(),
    }
}

/// Renders bytes the way docker reads sizes, in the largest exact binary unit (`50m`).
pub fn format_size(bytes: u64) -> String {
    for (unit, factor) in [("g", 1u64 << 30), ("m", 1 << 20), ("k", 1 << 10)] {
        if bytes >= factor && bytes % factor == 0 {
            return format!("{}{unit}", bytes / factor);
        }
    }
    bytes.to_string()
}

impl Resolver<'_> {
    /// `Origin::Profile` for a field when the profile wrote it (an element's position falls
    /// back to its array's), else `fallback`.
    fn origin_or(&self, field: &str, fallback: Origin) -> Origin {
        match self.written(field) {
            Some(origin) => origin,
            None => fallback,
        }
    }

    fn written(&self, field: &str) -> Option<Origin> {
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
    fn field_origin(&self, field: &str) -> Origin {
        self.origin_or(
            field,
            Origin::Profile {
                field: field.to_string(),
                line: None,
                column: None,
            },
        )
    }

    fn set(&mut self, key: impl Into<String>, origin: Origin) {
        self.origins.insert(key.into(), origin);
    }

    fn unlaunchable(&self, field: &str, message: String, hint: &str) -> PolicyError {
        PolicyError::Unlaunchable {
            location: self.loaded.location(field),
            message,
            hint: hint.to_string(),
        }
    }

    fn invalid(&self, field: &str, message: String, hint: &str) -> PolicyError {
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
    fn host_path(&self, field: &str, value: &str) -> Result<String, PolicyError> {
        let lexical = resolve_host_path(value, self.inputs);
        let Some(real) = self.paths.canonical(&lexical) else {
            return Ok(lexical);
        };
        let relative = !value.starts_with('/') && value != "~" && !value.starts_with("~/");
        let profile_dir = normalize_path(&self.inputs.profile_dir);
        // The profile's directory itself may sit behind a link (`/tmp` -> `/private/tmp`).
        let real_profile_dir = self
            .paths
            .canonical(&profile_dir)
            .unwrap_or_else(|| profile_dir.clone());
        let inside = |dir: &str| real == dir || real.starts_with(&format!("{dir}/"));
        if relative && !inside(&real_profile_dir) {
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

    /// Refuses a host path that is `/`, the home directory (or above it) or the Docker socket,
    /// unless the profile accepts it with its `[security] allow_*` field; then returns the
    /// origin of that field, to be recorded under [`crate::findings::allowed_by_key`].
    fn refuse_dangerous(&self, field: &str, path: &str) -> Result<Option<Origin>, PolicyError> {
        let Some(danger) = crate::findings::classify_path(path, Some(&self.inputs.home_dir)) else {
            return Ok(None);
        };
        if danger.allowed(&self.profile.security) {
            return Ok(Some(self.field_origin(danger.allow_field())));
        }
        let home = normalize_path(&self.inputs.home_dir);
        let (subject, location) = if field == "--workspace" {
            (
                format!("the workspace {path}"),
                Location::Invocation {
                    input: field.to_string(),
                },
            )
        } else {
            (format!("{field} {path}"), self.loaded.location(field))
        };
        let (message, why) = match danger {
            crate::findings::Danger::Root => (
                format!("{subject} is the host's root directory"),
                "a bind of / hands the agent the whole host; mount only what it needs",
            ),
            crate::findings::Danger::Home if path == home => (
                format!("{subject} is the whole home directory"),
                "the home holds your keys and tokens; mount the project or the files the agent needs",
            ),
            crate::findings::Danger::Home => (
                format!("{subject} contains the home directory {home}"),
                "the home holds your keys and tokens; mount the project or the files the agent needs",
            ),
            crate::findings::Danger::DockerSocket => (
                format!("{subject} resolves to the docker socket or a directory holding it"),
                "the docker socket makes the agent root on the host; remove the mount",
            ),
        };
        Err(PolicyError::Invalid {
            location,
            message,
            hint: format!("{why}, or set {} to accept it", danger.allow_setting()),
        })
    }

    /// The image of an agent launch: `--image`, `image.ref`, or the preset's `<name>:latest`.
    fn agent_image(&mut self, preset: Option<&Preset>) -> Result<String, PolicyError> {
        if let Some(image) = &self.inputs.image {
            self.set("image", invocation("--image"));
            return Ok(image.clone());
        }
        if let Some(reference) = &self.profile.image.reference {
            self.set("image", self.field_origin("image.ref"));
            return Ok(reference.clone());
        }
        match preset {
            Some(preset) => {
                self.set("image", preset_origin(preset));
                Ok(format!("{}:latest", preset.image_name))
            }
            None => Err(self.invalid(
                "image.ref",
                "a custom agent needs an image reference".to_string(),
                "set [image] ref = \"IMAGE\" or pass --image",
            )),
        }
    }

    /// docker's init as PID 1 of the agent's container, when the profile asks (`image.init`).
    fn init_process(&mut self, container: &mut ContainerSpec) {
        if self.profile.image.init {
            container.init = true;
            self.set("init", self.field_origin("image.init"));
        }
    }

    /// Read-only root, no-new-privileges, every capability dropped, tmpfs `/tmp` and `/run`.
    fn harden(&mut self, container: &mut ContainerSpec, preset: Option<&Preset>) {
        container.no_new_privileges = true;
        self.set("no_new_privileges", Origin::Default);
        container.cap_drop_all = true;
        self.set("cap_drop_all", Origin::Default);
        container.read_only_root = self.profile.security.read_only_root;
        let origin = self.origin_or("security.read_only_root", Origin::Default);
        self.set("read_only_root", origin);
        let exec = preset.is_some_and(|preset| preset.tmpfs_exec);
        for target in presets::TMPFS_TARGETS {
            container.tmpfs.push(Tmpfs {
                target: target.to_string(),
                exec,
            });
            let origin = match preset {
                Some(preset) if exec => preset_origin(preset),
                _ => Origin::Default,
            };
            self.set(format!("tmpfs.{target}"), origin);
        }
    }

    /// Preset capabilities, `security.add_capabilities` and FUSE.
    fn security(
        &mut self,
        container: &mut ContainerSpec,
        preset: Option<&Preset>,
    ) -> Result<(), PolicyError> {
        if let Some(preset) = preset {
            for capability in preset.capabilities {
                container.cap_add.insert(*capability);
                self.set(format!("cap_add.{capability}"), preset_origin(preset));
            }
        }
        for (index, name) in self.profile.security.add_capabilities.iter().enumerate() {
            let field = format!("security.add_capabilities[{index}]");
            let capability: Capability = name.parse().map_err(|_| {
                self.invalid(
                    &field,
                    format!("unknown capability {name:?}"),
                    "use a Linux capability name such as SYS_PTRACE",
                )
            })?;
            if container.cap_add.insert(capability) {
                let origin = self.field_origin(&field);
                self.set(format!("cap_add.{capability}"), origin);
            }
        }
        if self.profile.security.fuse {
            let origin = self.field_origin("security.fuse");
            container.devices.push(Device {
                host_path: "/dev/fuse".to_string(),
                container_path: "/dev/fuse".to_string(),
                permissions: "rwm".to_string(),
            });
            self.set("devices./dev/fuse", origin.clone());
            if container.cap_add.insert(Capability::SysAdmin) {
                self.set("cap_add.SYS_ADMIN", origin.clone());
            }
            container.apparmor = Some(AppArmor::Unconfined);
            self.set("apparmor", origin);
        }
        Ok(())
    }

    /// The profile's value of a `[resources]` field, parsed, with its origin; `None` when the
    /// profile leaves it out. A value `parse` refuses is an error at `field` with `hint`.
    fn profile_limit<V, T>(
        &self,
        field: &str,
        value: Option<V>,
        parse: impl FnOnce(V) -> Result<T, String>,
        hint: &str,
    ) -> Result<Option<(T, Origin)>, PolicyError> {
        value
            .map(|value| {
                let parsed = parse(value).map_err(|message| self.invalid(field, message, hint))?;
                Ok((parsed, self.field_origin(field)))
            })
            .transpose()
    }

    /// Memory (swap equal), shm, CPUs and processes: default, then profile, then environment.
    fn limits(&mut self, container: &mut ContainerSpec) -> Result<(), PolicyError> {
        let resources = &self.profile.resources;
        // Memory, with swap equal to it (no swap).
        let profile_memory = self.profile_limit(
            "resources.memory",
            resources.memory.as_deref(),
            parse_size,
            "use a size such as 4g",
        )?;
        let (memory, origin) = layered(
            Some((presets::DEFAULT_MEMORY_BYTES, Origin::Default)),
            profile_memory,
            overrides::MEM_LIMIT,
            self.overrides.memory_bytes,
        );
        container.resources.memory_bytes = memory;
        container.resources.memory_swap_bytes = memory;
        if let Some(origin) = origin {
            self.set("resources.memory_bytes", origin.clone());
            self.set("resources.memory_swap_bytes", origin);
        }
        // Shared memory.
        let profile_shm = self.profile_limit(
            "resources.shm_size",
            resources.shm_size.as_deref(),
            parse_size,
            "use a size such as 256m",
        )?;
        let (shm, origin) = layered(
            None,
            profile_shm,
            overrides::SHM_SIZE,
            self.overrides.shm_size_bytes,
        );
        container.resources.shm_size_bytes = shm;
        if let Some(origin) = origin {
            self.set("resources.shm_size_bytes", origin);
        }
        // CPUs.
        let profile_cpus = self.profile_limit(
            "resources.cpus",
            resources.cpus.as_ref(),
            cpus_of,
            "use a CPU count such as 1.5",
        )?;
        let (cpus, origin) = layered(
            None,
            profile_cpus,
            overrides::CPUS,
            self.overrides.nano_cpus,
        );
        container.resources.nano_cpus = cpus;
        if let Some(origin) = origin {
            self.set("resources.nano_cpus", origin);
        }
        // Processes.
        let profile_pids = self.profile_limit(
            "resources.pids_limit",
            resources.pids_limit,
            |value| {
                u32::try_from(value)
                    .ok()
                    .filter(|count| *count > 0)
                    .ok_or_else(|| format!("{value} is not a positive process count"))
            },
            "use a positive whole number such as 512",
        )?;
        let (pids, origin) = layered(
            Some((presets::DEFAULT_PIDS_LIMIT, Origin::Default)),
            profile_pids,
            overrides::PIDS_LIMIT,
            self.overrides.pids_limit,
        );
        container.resources.pids_limit = pids;
        if let Some(origin) = origin {
            self.set("resources.pids_limit", origin);
        }
        Ok(())
    }

    /// json-file rotation: default 50m x 3, then `[logging]`, then the environment; a max size
    /// of `off` keeps the daemon's default logging.
    fn logging(&mut self, container: &mut ContainerSpec) -> Result<(), PolicyError> {
        let logging = &self.profile.logging;
        let default_size = parse_size(presets::DEFAULT_LOG_MAX_SIZE).ok();
        let mut size = (default_size, Origin::Default);
        if let Some(text) = &logging.max_size {
            let origin = self.field_origin("logging.max_size");
            if text.trim().eq_ignore_ascii_case("off") {
                size = (None, origin);
            } else {
                let bytes = parse_size(text).map_err(|message| {
                    self.invalid(
                        "logging.max_size",
                        message,
                        "use a size such as 50m, or off",
                    )
                })?;
                size = (Some(bytes), origin);
            }
        }
        if let Some(limit) = self.overrides.log_max_size_bytes {
            size = (limit_value(limit), env_origin(overrides::LOG_MAX_SIZE));
        }
        let mut files = (presets::DEFAULT_LOG_MAX_FILE, Origin::Default);
        if let Some(value) = logging.max_file {
            let count = u32::try_from(value)
                .ok()
                .filter(|count| *count > 0)
                .ok_or_else(|| {
                    self.invalid(
                        "logging.max_file",
                        format!("{value} is not a positive number of files"),
                        "use a positive whole number such as 3",
                    )
                })?;
            files = (count, self.field_origin("logging.max_file"));
        }
        if let Some(count) = self.overrides.log_max_file {
            files = (count, env_origin(overrides::LOG_MAX_FILE));
        }
        match size.0 {
            None => {
                container.log = None;
                self.set("log", size.1);
            }
            Some(bytes) => {
                let options = BTreeMap::from([
                    ("max-size".to_string(), format_size(bytes)),
                    ("max-file".to_string(), files.0.to_string()),
                ]);
                container.log = Some(LogConfig {
                    driver: presets::LOG_DRIVER.to_string(),
                    options,
                });
                self.set("log", Origin::Default);
                self.set("log.max-size", size.1);
                self.set("log.max-file", files.1);
            }
        }
        Ok(())
    }

    /// Network, host gateway and published ports of an agent or sandbox container.
    fn network(&mut self, container: &mut ContainerSpec) -> Result<(), PolicyError> {
        let egress = &self.profile.egress;
        let network = &self.profile.network;
        let deny = egress.mode.trim().eq_ignore_ascii_case("deny") && egress.gateway_host.is_none();
        if deny {
            container.network = Network::None;
            self.set("network", self.field_origin("egress.mode"));
            if self.overrides.network.is_some() {
                self.set(SUPERSEDED_NETWORK_KEY, env_origin(overrides::NETWORK));
            } else if network.name.is_some() {
                let origin = self.field_origin("network.name");
                self.set(SUPERSEDED_NETWORK_KEY, origin);
            }
            if network.host_gateway {
                return Err(self.unlaunchable(
                    "network.host_gateway",
                    "host_gateway needs a network, but egress mode deny runs the container with none"
                        .to_string(),
                    "remove host_gateway, or use egress mode allowlist with the host listed",
                ));
            }
            if !network.publish.is_empty() {
                return Err(self.unlaunchable(
                    "network.publish",
                    "published ports need a network, but egress mode deny runs the container with none"
                        .to_string(),
                    "remove [network] publish, or use egress mode allowlist",
                ));
            }
            return Ok(());
        }
        let named = if let Some(name) = &self.overrides.network {
            Some((name.clone(), env_origin(overrides::NETWORK)))
        } else {
            network
                .name
                .as_ref()
                .map(|name| (name.clone(), self.field_origin("network.name")))
        };
        match &named {
            Some((name, origin)) => {
                container.network = Network::Named { name: name.clone() };
                self.set("network", origin.clone());
            }
            None => {
                container.network = Network::Default;
                self.set("network", Origin::Default);
            }
        }
        if network.host_gateway {
            container.extra_hosts.push(ExtraHost {
                host: presets::HOST_GATEWAY_NAME.to_string(),
                target: HostTarget::HostGateway,
            });
            let origin = self.field_origin("network.host_gateway");
            self.set(
                format!("extra_hosts.{}", presets::HOST_GATEWAY_NAME),
                origin,
            );
        }
        if let Some((_, origin)) = named {
            // As the sandbox seed does: on a named network the container is reached at its
            // own address, so nothing is published on the host.
            if !network.publish.is_empty() {
                self.set("ports", origin);
            }
            return Ok(());
        }
        for (index, port) in network.publish.iter().enumerate() {
            let field = format!("network.publish[{index}]");
            let (container_port, protocol) = parse_port(port).map_err(|message| {
                self.invalid(&field, message, "write a port such as 8080 or \"53/udp\"")
            })?;
            container.ports.push(PublishedPort {
                container_port,
                protocol,
                host_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                host_port: None,
            });
            let origin = self.field_origin(&field);
            self.set(
                format!("ports.{container_port}/{}", protocol.as_str()),
                origin,
            );
        }
        Ok(())
    }

    /// The workspace bind and working directory, when mounted.
    fn workspace(
        &mut self,
        container: &mut ContainerSpec,
        default_mount: bool,
        default_origin: Origin,
    ) -> Result<Option<String>, PolicyError> {
        let mount = self.profile.workspace.mount.unwrap_or(default_mount);
        if !mount {
            if self.profile.workspace.mount.is_some() {
                let origin = self.field_origin("workspace.mount");
                self.set("workspace", origin);
            }
            return Ok(None);
        }
        let workspace_error = |message: String, hint: &str| PolicyError::Unlaunchable {
            location: Location::Invocation {
                input: "--workspace".to_string(),
            },
            message,
            hint: hint.to_string(),
        };
        if !self.inputs.workspace.starts_with('/') {
            return Err(workspace_error(
                format!(
                    "workspace {:?} is not an absolute path",
                    self.inputs.workspace
                ),
                "pass an absolute --workspace",
            ));
        }
        let path = normalize_path(&self.inputs.workspace);
        let name = path.rsplit('/').next().unwrap_or_default().to_string();
        if name.is_empty() {
            return Err(workspace_error(
                "the root directory cannot be the workspace".to_string(),
                "pass a project directory as --workspace",
            ));
        }
        let allowed_by = self.refuse_dangerous("--workspace", &path)?;
        if self.paths.kind(&path) != PathKind::Directory {
            return Err(workspace_error(
                format!("workspace is not a directory: {path}"),
                "pass an existing directory as --workspace",
            ));
        }
        let target = format!("{}/{name}", presets::WORKSPACE_ROOT);
        container.mounts.push(Mount {
            target: target.clone(),
            read_only: self.profile.workspace.read_only,
            source: MountSource::Bind { path },
        });
        self.set(format!("mounts.{target}"), invocation("--workspace"));
        if let Some(origin) = allowed_by {
            self.set(crate::findings::allowed_by_key(&target), origin);
        }
        let origin = self.origin_or("workspace.read_only", Origin::Default);
        self.set(format!("mounts.{target}.read_only"), origin);
        if self.profile.workspace.mount.is_some() {
            let origin = self.field_origin("workspace.mount");
            self.set("workspace", origin);
        } else {
            self.set("workspace", default_origin);
        }
        container.working_dir = Some(target.clone());
        self.set("working_dir", invocation("--workspace"));
        Ok(Some(target))
    }

    /// Checks a profile file input (gateway key, CA) and resolves it.
    fn require_path(
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

    /// Gateway inputs and the profile's bind and directory mounts (agent-containers'
    /// `_append_mount_args`); seeds are left to `agentc seed`.
    fn profile_mounts(
        &mut self,
        container: &mut ContainerSpec,
        mut reserved: BTreeSet<String>,
        gateway: bool,
    ) -> Result<(), PolicyError> {
        let egress = &self.profile.egress;
        let mounts = effective_mounts(self.profile);
        if gateway {
            for (target, file_field, label) in [
                (
                    presets::GATEWAY_KEY_TARGET,
                    "egress.gateway_key_file",
                    "gateway key",
                ),
                (
                    presets::GATEWAY_KNOWN_HOSTS_TARGET,
                    "egress.gateway_known_hosts_file",
                    "gateway known-hosts",
                ),
            ] {
                let file_set = match file_field {
                    "egress.gateway_key_file" => egress.gateway_key_file.is_some(),
                    _ => egress.gateway_known_hosts_file.is_some(),
                };
                let mount = mounts.iter().find(|(_, mount)| mount.target == target);
                match mount {
                    None if !file_set => {
                        return Err(self.invalid(
                            file_field,
                            format!("{label} input is required when gateway mode is enabled"),
                            &format!("set {file_field}, or mount the file at {target}"),
                        ))
                    }
                    None => {}
                    Some((field, mount)) => {
                        if !mount.read_only {
                            return Err(self.invalid(
                                &format!("{field}.read_only"),
                                format!("{label} mount must be read-only"),
                                "remove read_only = false from this mount",
                            ));
                        }
                        self.require_path(
                            &format!("{field}.source"),
                            &mount.source,
                            PathKind::File,
                            label,
                        )?;
                    }
                }
            }
        }
        for (target, file, field, label) in [
            (
                presets::GATEWAY_KEY_TARGET,
                &egress.gateway_key_file,
                "egress.gateway_key_file",
                "gateway key",
            ),
            (
                presets::GATEWAY_KNOWN_HOSTS_TARGET,
                &egress.gateway_known_hosts_file,
                "egress.gateway_known_hosts_file",
                "gateway known-hosts file",
            ),
        ] {
            if let Some(file) = file {
                let path = self.require_path(field, file, PathKind::File, label)?;
                container.mounts.push(Mount {
                    target: target.to_string(),
                    read_only: true,
                    source: MountSource::Bind { path },
                });
                let origin = self.field_origin(field);
                self.set(format!("mounts.{target}"), origin);
                reserved.insert(target.to_string());
            }
        }
        for (field, mount) in mounts {
            if mount.kind == MountType::Seed {
                continue;
            }
            let target = mount.target.trim_end_matches('/').to_string();
            if reserved.contains(&target) {
                return Err(self.invalid(
                    &format!("{field}.target"),
                    format!("mount target conflicts with generated mount: {target}"),
                    "choose another target; agentc mounts this path itself",
                ));
            }
            reserved.insert(target.clone());
            let want = if mount.kind == MountType::Directory {
                Some(PathKind::Directory)
            } else {
                None
            };
            let path = self.host_path(&format!("{field}.source"), &mount.source)?;
            let allowed_by = self.refuse_dangerous(&format!("{field}.source"), &path)?;
            let kind = self.paths.kind(&path);
            let problem = match (kind, want) {
                (PathKind::Missing, _) => Some(format!("mount source does not exist: {path}")),
                (found, Some(want)) if found != want => {
                    Some(format!("mount source is not a directory: {path}"))
                }
                _ => None,
            };
            if let Some(message) = problem {
                return Err(self.unlaunchable(
                    &format!("{field}.source"),
                    message,
                    "create it, or fix the path (relative paths are relative to the profile's directory, ~ is your home)",
                ));
            }
            container.mounts.push(Mount {
                target: target.clone(),
                read_only: mount.read_only,
                source: MountSource::Bind { path },
            });
            let origin = self.field_origin(&field);
            self.set(format!("mounts.{target}"), origin);
            if let Some(origin) = allowed_by {
                self.set(crate::findings::allowed_by_key(&target), origin);
            }
        }
        Ok(())
    }

    /// The agent container (`docker.py`'s `build_run_argv`).
    fn run(&mut self, preset: &Preset) -> Result<Action, PolicyError> {
        let profile = self.profile;
        let image = self.agent_image(Some(preset))?;
        let mut container = ContainerSpec::empty(image);
        container.interactive = true;
        container.tty = true;
        container.auto_remove = true;
        for key in ["interactive", "tty", "auto_remove"] {
            self.set(key, preset_origin(preset));
        }
        self.init_process(&mut container);
        self.harden(&mut container, Some(preset));
        self.security(&mut container, Some(preset))?;

        let home = home_volume_name(profile, &self.inputs.owner).unwrap_or_default();
        container.mounts.push(Mount {
            target: preset.home_path.to_string(),
            read_only: false,
            source: MountSource::Volume {
                name: home,
                subpath: None,
            },
        });
        let origin = self.origin_or("home_volume", preset_origin(preset));
        self.set(format!("mounts.{}", preset.home_path), origin);
        let workspace = self.workspace(&mut container, true, preset_origin(preset))?;

        let gateway = profile.egress.gateway_host.is_some();
        self.network(&mut container)?;
        let mut env = EnvBuilder::default();
        self.egress_env(&mut env, preset)?;
        self.provider_env(&mut env, preset)?;
        self.langfuse_env(&mut env, preset)?;
        self.proxy_env(&mut env, true)?;
        self.take_env(&mut container, env)?;

        let mut reserved: BTreeSet<String> = [presets::CA_BUNDLE_TARGET, preset.home_path]
            .into_iter()
            .chain(presets::TMPFS_TARGETS.iter().copied())
            .map(str::to_string)
            .collect();
        reserved.extend(workspace);
        self.profile_mounts(&mut container, reserved, gateway)?;
        if let Some(import) = &self.profile.configuration_import {
            // Imported before the run, like agent-containers' apply: the source must be a file.
            self.require_path(
                "configuration_import.source",
                &import.source,
                PathKind::File,
                "configuration import source",
            )?;
        }

        if let Some(command) = preset.command {
            container.command.push(command.to_string());
            self.set("command", preset_origin(preset));
        }
        let provider_args = self.provider_args(preset);
        if !provider_args.is_empty() {
            container.command.extend(provider_args);
            let origin = if profile.provider.is_some() {
                self.field_origin("provider")
            } else {
                self.field_origin("langfuse.enabled")
            };
            self.set("command.provider", origin);
        }
        self.agent_args(&mut container);
        self.limits(&mut container)?;
        self.logging(&mut container)?;
        Ok(Action::Container(Box::new(container)))
    }

    fn agent_args(&mut self, container: &mut ContainerSpec) {
        if !self.inputs.agent_args.is_empty() {
            container
                .command
                .extend(self.inputs.agent_args.iter().cloned());
            self.set("command.args", invocation("agent arguments"));
        }
    }

    fn take_env(
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
            self.set(format!("env.{}", var.name), origin);
            container.env.push(var);
        }
        Ok(())
    }

    /// Gateway variables or the egress allowlist, handed to the image's entrypoint.
    fn egress_env(&self, env: &mut EnvBuilder, _preset: &Preset) -> Result<(), PolicyError> {
        let egress = &self.profile.egress;
        let mode = egress.mode.trim().to_ascii_lowercase();
        if let Some(host) = &egress.gateway_host {
            env.literal("AGENT_GATEWAY_HOST", host, "egress.gateway_host");
            let port = egress
                .gateway_port
                .map(|port| port.to_string())
                .unwrap_or_default();
            env.literal("AGENT_GATEWAY_PORT", &port, "egress.gateway_port");
            if let Some(user) = &egress.gateway_user {
                env.literal("AGENT_GATEWAY_USER", user, "egress.gateway_user");
            }
            if let Some(name) = &egress.gateway_access_hostname {
                env.literal(
                    "AGENT_GATEWAY_ACCESS_HOSTNAME",
                    name,
                    "egress.gateway_access_hostname",
                );
            }
            if !egress.gateway_bootstrap_allow.is_empty() {
                env.literal(
                    "AGENT_GATEWAY_BOOTSTRAP_ALLOW",
                    &egress.gateway_bootstrap_allow.join(","),
                    "egress.gateway_bootstrap_allow",
                );
            }
        } else if mode == "unrestricted" {
            env.literal("AGENT_ALLOWED_EGRESS", "*", "egress.mode");
        } else if mode == "allowlist" && !egress.hosts.is_empty() {
            env.literal(
                "AGENT_ALLOWED_EGRESS",
                &egress.hosts.join(","),
                "egress.hosts",
            );
        }
        Ok(())
    }

    /// The provider key (a secret), endpoint and model variables, and OpenCode's config.
    fn provider_env(&self, env: &mut EnvBuilder, preset: &Preset) -> Result<(), PolicyError> {
        let profile = self.profile;
        let provider = profile.provider.as_ref();
        if let Some(name) = provider.and_then(|provider| provider.api_key_env.as_ref()) {
            env.secret(name, "provider.api_key_env");
        }
        match (preset.agent, provider) {
            (AgentName::ClaudeCode, Some(provider)) => {
                if let Some(endpoint) = &provider.endpoint {
                    env.literal(
                        "ANTHROPIC_BASE_URL",
                        &trim_url(endpoint),
                        "provider.endpoint",
                    );
                }
                if let Some(model) = &provider.model {
                    env.literal("ANTHROPIC_MODEL", model, "provider.model");
                }
            }
            (AgentName::Hermes, Some(provider)) => {
                if let Some(endpoint) = &provider.endpoint {
                    let kind = provider.kind.trim().to_ascii_lowercase();
                    let name = presets::hermes_base_url_env(&kind).ok_or_else(|| {
                        self.invalid(
                            "provider.kind",
                            format!(
                                "provider endpoint mapping is not implemented for hermes provider {kind:?}"
                            ),
                            "use provider kind anthropic, openai or custom with an endpoint",
                        )
                    })?;
                    env.literal(name, &trim_url(endpoint), "provider.endpoint");
                }
            }
            _ => {}
        }
        let wants_opencode_config = profile.langfuse.enabled
            || provider
                .is_some_and(|provider| provider.endpoint.is_some() || provider.model.is_some());
        if preset.agent == AgentName::Opencode && wants_opencode_config {
            let field = if provider.is_some() {
                "provider"
            } else {
                "langfuse.enabled"
            };
            env.literal(
                "AGENT_OPENCODE_CONFIG_JSON",
                &opencode_config(profile),
                field,
            );
        }
        Ok(())
    }

    /// Langfuse tracing variables; the keys are secrets passed through by name.
    fn langfuse_env(&self, env: &mut EnvBuilder, preset: &Preset) -> Result<(), PolicyError> {
        let config = &self.profile.langfuse;
        if !config.enabled {
            return Ok(());
        }
        let opencode = preset.agent == AgentName::Opencode;
        let base_url = config.base_url.as_deref().ok_or_else(|| {
            self.invalid(
                "langfuse.base_url",
                "langfuse is enabled without a base_url".to_string(),
                "set [langfuse] base_url",
            )
        })?;
        env.literal("TRACE_TO_LANGFUSE", "true", "langfuse.enabled");
        env.secret(&config.public_key_env, "langfuse.public_key_env");
        env.literal(
            "AGENT_LANGFUSE_PUBLIC_KEY_ENV",
            &config.public_key_env,
            "langfuse.public_key_env",
        );
        env.secret(&config.secret_key_env, "langfuse.secret_key_env");
        env.literal(
            "AGENT_LANGFUSE_SECRET_KEY_ENV",
            &config.secret_key_env,
            "langfuse.secret_key_env",
        );
        let base_name = if opencode {
            "LANGFUSE_BASEURL"
        } else {
            "LANGFUSE_BASE_URL"
        };
        env.literal(base_name, &trim_url(base_url), "langfuse.base_url");
        if let Some(environment) = &config.environment {
            let name = if opencode {
                "LANGFUSE_ENVIRONMENT"
            } else {
                "LANGFUSE_TRACING_ENVIRONMENT"
            };
            env.literal(name, environment, "langfuse.environment");
        }
        if let Some(user) = &config.user_id {
            env.literal("LANGFUSE_USER_ID", user, "langfuse.user_id");
        }
        Ok(())
    }

    /// Proxy variables and, for agent images, CA trust pointers (the CA itself is baked into
    /// the image's bundle by the build; here it must still exist).
    fn proxy_env(&self, env: &mut EnvBuilder, ca_trust: bool) -> Result<(), PolicyError> {
        let Some(proxy) = &self.profile.proxy else {
            return Ok(());
        };
        if let Some(http) = &proxy.http {
            let value = trim_url(http);
            env.literal("HTTP_PROXY", &value, "proxy.http");
            env.literal("http_proxy", &value, "proxy.http");
        }
        if let Some(https) = &proxy.https {
            let value = trim_url(https);
            env.literal("HTTPS_PROXY", &value, "proxy.https");
            env.literal("https_proxy", &value, "proxy.https");
        }
        if !proxy.no_proxy.is_empty() {
            let value = proxy.no_proxy.join(",");
            env.literal("NO_PROXY", &value, "proxy.no_proxy");
            env.literal("no_proxy", &value, "proxy.no_proxy");
        }
        if proxy.http.is_some() || proxy.https.is_some() {
            let field = if proxy.http.is_some() {
                "proxy.http"
            } else {
                "proxy.https"
            };
            env.literal("NODE_USE_ENV_PROXY", "1", field);
        }
        if !ca_trust {
            return Ok(());
        }
        if let Some(file) = &proxy.ca_file {
            self.require_path("proxy.ca_file", file, PathKind::File, "proxy CA")?;
        }
        if let Some(dir) = &proxy.ca_dir {
            self.require_path(
                "proxy.ca_dir",
                dir,
                PathKind::Directory,
                "proxy CA directory",
            )?;
        }
        let field = match (&proxy.ca_file, &proxy.ca_dir) {
            (Some(_), _) => "proxy.ca_file",
            (None, Some(_)) => "proxy.ca_dir",
            (None, None) => return Ok(()),
        };
        for name in ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"] {
            env.literal(name, presets::CA_BUNDLE_TARGET, field);
        }
        Ok(())
    }

    /// Provider settings carried as agent arguments (Codex and Hermes).
    fn provider_args(&self, preset: &Preset) -> Vec<String> {
        let profile = self.profile;
        let provider = profile.provider.as_ref();
        let mut args: Vec<String> = Vec::new();
        let mut push = |items: &[&str]| args.extend(items.iter().map(|item| item.to_string()));
        match preset.agent {
            AgentName::Codex => {
                if profile.langfuse.enabled {
                    push(&[
                        "--config",
                        "features.hooks=true",
                        "--config",
                        "plugins.\"tracing@codex-observability-plugin\".enabled=true",
                    ]);
                }
                let Some(provider) = provider else {
                    return args;
                };
                if let Some(model) = &provider.model {
                    push(&["--model", model]);
                }
                if let Some(endpoint) = &provider.endpoint {
                    let url = toml_string(&trim_url(endpoint));
                    let kind = provider.kind.trim().to_ascii_lowercase();
                    if kind == "openai" {
                        push(&["--config", &format!("openai_base_url=\"{url}\"")]);
                    } else {
                        let id = "agent_containers";
                        push(&[
                            "--config",
                            &format!("model_provider=\"{id}\""),
                            "--config",
                            &format!("model_providers.{id}.name=\"{kind}\""),
                            "--config",
                            &format!("model_providers.{id}.base_url=\"{url}\""),
                            "--config",
                            &format!("model_providers.{id}.wire_api=\"responses\""),
                        ]);
                    }
                }
            }
            AgentName::Hermes => {
                if let Some(provider) = provider {
                    let kind = provider.kind.trim().to_ascii_lowercase();
                    if !kind.is_empty() {
                        push(&["--provider", &kind]);
                    }
                    if let Some(model) = &provider.model {
                        push(&["--model", model]);
                    }
                }
            }
            _ => {}
        }
        args
    }

    /// The long-lived sandbox of a custom agent (the sandbox seed's container, hardened).
    fn sandbox(&mut self) -> Result<Action, PolicyError> {
        let profile = self.profile;
        let image = self.agent_image(None)?;
        let mut container = ContainerSpec::empty(image);
        container.name = Some(sandbox_container_name(profile, &self.inputs.owner));
        self.set("name", Origin::Default);
        container.detach = true;
        self.set("detach", Origin::Default);
        if let Some(entrypoint) = &profile.image.entrypoint {
            container.entrypoint = Some(entrypoint.clone());
            self.set("entrypoint", self.field_origin("image.entrypoint"));
        }
        if let Some(command) = &profile.image.command {
            container.command = command.clone();
            self.set("command", self.field_origin("image.command"));
        }
        self.agent_args(&mut container);
        if let Some(user) = &profile.image.user {
            container.user = Some(user.clone());
            self.set("user", self.field_origin("image.user"));
        }
        self.init_process(&mut container);
        self.harden(&mut container, None);
        self.security(&mut container, None)?;
        let workspace = self.workspace(&mut container, false, Origin::Default)?;
        self.network(&mut container)?;
        let mut env = EnvBuilder::default();
        self.proxy_env(&mut env, false)?;
        self.take_env(&mut container, env)?;
        let mut reserved: BTreeSet<String> = presets::TMPFS_TARGETS
            .iter()
            .map(|target| target.to_string())
            .collect();
        reserved.extend(workspace);
        self.profile_mounts(&mut container, reserved, false)?;
        self.limits(&mut container)?;
        self.logging(&mut container)?;
        Ok(Action::Container(Box::new(container)))
    }

    /// The copy-once seed helper (`docker.py`'s `build_seed_argv`).
    fn seed(&mut self, preset: &Preset) -> Result<Action, PolicyError> {
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
        let source = self.host_path(&format!("{field}.source"), &mount.source)?;
        let allowed_by = self.refuse_dangerous(&format!("{field}.source"), &source)?;
        if self.paths.kind(&source) == PathKind::Missing {
            return Err(self.unlaunchable(
                &format!("{field}.source"),
                format!("seed source does not exist: {source}"),
                "create it, or fix the path (relative paths are relative to the profile's directory, ~ is your home)",
            ));
        }
        let image = self.agent_image(Some(preset))?;
        let mut container = ContainerSpec::empty(image);
        container.auto_remove = true;
        self.set("auto_remove", Origin::Default);
        container.network = Network::None;
        self.set("network", Origin::Default);
        container.user = Some("0:0".to_string());
        self.set("user", Origin::Default);
        container.no_new_privileges = true;
        container.read_only_root = true;
        container.cap_drop_all = true;
        for key in ["no_new_privileges", "read_only_root", "cap_drop_all"] {
            self.set(key, Origin::Default);
        }
        for target in presets::TMPFS_TARGETS {
            container.tmpfs.push(Tmpfs {
                target: target.to_string(),
                exec: false,
            });
            self.set(format!("tmpfs.{target}"), Origin::Default);
        }
        for capability in presets::SEED_CAPABILITIES {
            container.cap_add.insert(*capability);
            self.set(format!("cap_add.{capability}"), Origin::Default);
        }
        let home = home_volume_name(profile, &self.inputs.owner).unwrap_or_default();
        container.mounts.push(Mount {
            target: preset.home_path.to_string(),
            read_only: false,
            source: MountSource::Volume {
                name: home,
                subpath: None,
            },
        });
        let origin = self.origin_or("home_volume", preset_origin(preset));
        self.set(format!("mounts.{}", preset.home_path), origin);
        container.mounts.push(Mount {
            target: presets::SEED_SOURCE_TARGET.to_string(),
            read_only: true,
            source: MountSource::Bind { path: source },
        });
        let origin = self.field_origin(&format!("{field}.source"));
        self.set(format!("mounts.{}", presets::SEED_SOURCE_TARGET), origin);
        if let Some(origin) = allowed_by {
            self.set(
                crate::findings::allowed_by_key(presets::SEED_SOURCE_TARGET),
                origin,
            );
        }
        let target_origin = self.field_origin(&format!("{field}.target"));
        let on_conflict = mount.on_conflict.trim().to_ascii_lowercase();
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
                on_conflict,
                self.origin_or(&format!("{field}.on_conflict"), Origin::Default),
            ),
        ] {
            container.env.push(EnvVar {
                name: name.to_string(),
                value: EnvValue::Literal { value },
            });
            self.set(format!("env.{name}"), origin);
        }
        container.entrypoint = Some("/bin/sh".to_string());
        self.set("entrypoint", Origin::Default);
        container.command = vec!["-ceu".to_string(), presets::SEED_COPY_SCRIPT.to_string()];
        self.set("command", Origin::Default);
        self.set("seed_target", invocation("--seed-target"));
        self.limits(&mut container)?;
        self.logging(&mut container)?;
        Ok(Action::Container(Box::new(container)))
    }

    /// The Decant companion (`docker.py`'s `build_decant_run_argv`): unhardened, as there,
    /// but with agentc's default limits and log rotation.
    fn decant(&mut self) -> Result<Action, PolicyError> {
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
        let owner = owner_slug(&self.inputs.owner);
        let image = if let Some(image) = &self.inputs.image {
            self.set("image", invocation("--image"));
            image.clone()
        } else if let Some(image) = &config.image {
            self.set("image", self.field_origin("decant.image"));
            image.clone()
        } else {
            self.set("image", Origin::Default);
            format!("agent-containers/decant:{owner}-{}", profile.name)
        };
        let mut container = ContainerSpec::empty(image);
        container.name = Some(decant_container_name(profile, &self.inputs.owner));
        self.set("name", Origin::Default);
        container.interactive = true;
        container.tty = true;
        container.auto_remove = true;
        for key in ["interactive", "tty", "auto_remove"] {
            self.set(key, Origin::Default);
        }
        let host_ip: IpAddr = config.bind_address.trim().parse().map_err(|_| {
            self.unlaunchable(
                "decant.bind_address",
                format!("{:?} is not an IP address", config.bind_address),
                "use an address such as 127.0.0.1",
            )
        })?;
        let host_port = u16::try_from(config.port)
            .ok()
            .filter(|port| *port > 0)
            .ok_or_else(|| {
                self.invalid(
                    "decant.port",
                    format!("{} is not a port", config.port),
                    "use a port from 1 to 65535",
                )
            })?;
        container.ports.push(PublishedPort {
            container_port: presets::DECANT_CONTAINER_PORT,
            protocol: Protocol::Tcp,
            host_ip,
            host_port: Some(host_port),
        });
        let origin = match self
            .written("decant.port")
            .or_else(|| self.written("decant.bind_address"))
        {
            Some(origin) => origin,
            None => Origin::Default,
        };
        self.set(
            format!("ports.{}/tcp", presets::DECANT_CONTAINER_PORT),
            origin,
        );
        self.set("network", Origin::Default);
        let data_volume = match &config.data_volume {
            Some(volume) => {
                self.set(
                    format!("mounts.{}", presets::DECANT_DATA_TARGET),
                    self.field_origin("decant.data_volume"),
                );
                volume.clone()
            }
            None => {
                self.set(
                    format!("mounts.{}", presets::DECANT_DATA_TARGET),
                    Origin::Default,
                );
                format!("decant-data-{owner}-{}", profile.name)
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
                    format!("mounts.{target}"),
                    self.field_origin("decant.source_profiles"),
                );
            }
        }
        container.command = presets::DECANT_COMMAND
            .iter()
            .map(|arg| arg.to_string())
            .collect();
        self.set("command", Origin::Default);
        self.limits(&mut container)?;
        self.logging(&mut container)?;
        Ok(Action::Container(Box::new(container)))
    }

    /// The image build: the same tag a run uses, from `image.build_context`.
    fn build(&mut self, preset: Option<&Preset>) -> Result<Action, PolicyError> {
        let profile = self.profile;
        let tag = self.agent_image(preset)?;
        self.set(
            "build.tag",
            self.origins
                .get("image")
                .cloned()
                .unwrap_or(Origin::Default),
        );
        self.origins.remove("image");
        let Some(context) = &profile.image.build_context else {
            return Err(self.unlaunchable(
                "image.build_context",
                "the profile has no build context".to_string(),
                "set [image] build_context to the directory holding the Dockerfile",
            ));
        };
        let context = resolve_host_path(context, self.inputs);
        if self.paths.kind(&context) != PathKind::Directory {
            return Err(self.unlaunchable(
                "image.build_context",
                format!("build context is not a directory: {context}"),
                "create it, or fix the path (relative paths are relative to the profile's directory)",
            ));
        }
        self.set("build.context", self.field_origin("image.build_context"));
        if profile.image.dockerfile.is_some() {
            self.set("build.dockerfile", self.field_origin("image.dockerfile"));
        }
        let mut build_args = BTreeMap::new();
        if let Some(preset) = preset.filter(|preset| preset.build_user_args) {
            let owner = &self.inputs.owner;
            if owner.uid == 0 || owner.gid == 0 {
                return Err(PolicyError::Unlaunchable {
                    location: Location::Invocation {
                        input: "user".to_string(),
                    },
                    message: format!(
                        "the {} image is built for your uid and gid, which must not be 0 (root)",
                        preset.agent.as_str()
                    ),
                    hint: "build as the non-root user who will run the agent".to_string(),
                });
            }
            build_args.insert("UID".to_string(), owner.uid.to_string());
            build_args.insert("GID".to_string(), owner.gid.to_string());
            self.set("build.build_args.UID", invocation("user"));
            self.set("build.build_args.GID", invocation("user"));
        }
        Ok(Action::Build(BuildSpec {
            tag,
            context,
            dockerfile: profile.image.dockerfile.clone(),
            named_contexts: BTreeMap::new(),
            build_args,
            labels: BTreeMap::new(),
        }))
    }
}

/// `configuration_mounts` then `mounts` (agent-containers' `effective_mounts`), each with its
/// field path.
fn effective_mounts(profile: &Profile) -> Vec<(String, &MountConfig)> {
    let configuration = profile
        .configuration_mounts
        .iter()
        .enumerate()
        .map(|(index, mount)| (format!("configuration_mounts[{index}]"), mount));
    let mounts = profile
        .mounts
        .iter()
        .enumerate()
        .map(|(index, mount)| (format!("mounts[{index}]"), mount));
    configuration.chain(mounts).collect()
}

/// A limit and where it came from: the environment's override (`variable`) wins over the
/// profile's value, which wins over the default; `off` in the environment removes the limit.
fn layered<T>(
    default: Option<(T, Origin)>,
    profile: Option<(T, Origin)>,
    variable: &str,
    environment: Option<Limit<T>>,
) -> (Option<T>, Option<Origin>) {
    if let Some(limit) = environment {
        return (limit_value(limit), Some(env_origin(variable)));
    }
    match profile.or(default) {
        Some((value, origin)) => (Some(value), Some(origin)),
        None => (None, None),
    }
}

fn limit_value<T>(limit: Limit<T>) -> Option<T> {
    match limit {
        Limit::Off => None,
        Limit::Value(value) => Some(value),
    }
}

fn parse_port(port: &PortConfig) -> Result<(u16, Protocol), String> {
    let (number, protocol) = match port {
        PortConfig::Number(number) => (number.to_string(), Protocol::Tcp),
        PortConfig::Text(text) => {
            let text = text.trim();
            match text.split_once('/') {
                None => (text.to_string(), Protocol::Tcp),
                Some((number, protocol)) => {
                    let protocol = match protocol.to_ascii_lowercase().as_str() {
                        "tcp" => Protocol::Tcp,
                        "udp" => Protocol::Udp,
                        other => return Err(format!("unknown protocol {other:?}")),
                    };
                    (number.to_string(), protocol)
                }
            }
        }
    };
    match number.parse::<u16>() {
        Ok(0) | Err(_) => Err(format!("{number:?} is not a port from 1 to 65535")),
        Ok(port) => Ok((port, protocol)),
    }
}

/// Environment entries in order, with the profile field each came from; remembers the first
/// name set twice.
#[derive(Default)]
struct EnvBuilder {
    vars: Vec<(EnvVar, String)>,
    duplicate: Option<(String, String)>,
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

    fn literal(&mut self, name: &str, value: &str, field: &str) {
        self.push(
            name,
            EnvValue::Literal {
                value: value.to_string(),
            },
            field,
        );
    }

    fn secret(&mut self, name: &str, field: &str) {
        self.push(name, EnvValue::Secret { required: true }, field);
    }
}

/// Escapes a value embedded in a Codex TOML string override.
fn toml_string(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
}

/// A JSON value with ordered keys, rendered like Python's compact `json.dumps`.
enum Json {
    Str(String),
    Bool(bool),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn render(&self, out: &mut String) {
        match self {
            Json::Str(text) => json_string(text, out),
            Json::Bool(value) => out.push_str(if *value { "true" } else { "false" }),
            Json::Arr(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    item.render(out);
                }
                out.push(']');
            }
            Json::Obj(entries) => {
                out.push('{');
                for (index, (key, value)) in entries.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    json_string(key, out);
                    out.push(':');
                    value.render(out);
                }
                out.push('}');
            }
        }
    }
}

/// Python's `json.dumps` string escaping with `ensure_ascii`.
fn json_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The secret-free, per-run OpenCode configuration (`docker.py`'s `_opencode_config`).
fn opencode_config(profile: &Profile) -> String {
    let mut document = vec![(
        "$schema".to_string(),
        Json::Str("https://opencode.ai/config.json".to_string()),
    )];
    if let Some(provider) = &profile.provider {
        let mut options = Vec::new();
        if let Some(endpoint) = &provider.endpoint {
            options.push(("baseURL".to_string(), Json::Str(trim_url(endpoint))));
        }
        if let Some(name) = &provider.api_key_env {
            options.push(("apiKey".to_string(), Json::Str(format!("{{env:{name}}}"))));
        }
        let mut models = Vec::new();
        if let Some(model) = &provider.model {
            models.push((
                model.clone(),
                Json::Obj(vec![("name".to_string(), Json::Str(model.clone()))]),
            ));
            document.push((
                "model".to_string(),
                Json::Str(format!("agent_containers/{model}")),
            ));
        }
        let provider_config = Json::Obj(vec![
            (
                "npm".to_string(),
                Json::Str("@ai-sdk/openai-compatible".to_string()),
            ),
            (
                "name".to_string(),
                Json::Str(provider.kind.trim().to_ascii_lowercase()),
            ),
            ("options".to_string(), Json::Obj(options)),
            ("models".to_string(), Json::Obj(models)),
        ]);
        document.push((
            "provider".to_string(),
            Json::Obj(vec![("agent_containers".to_string(), provider_config)]),
        ));
    }
    if profile.langfuse.enabled {
        document.push((
            "experimental".to_string(),
            Json::Obj(vec![("openTelemetry".to_string(), Json::Bool(true))]),
        ));
        document.push((
            "plugin".to_string(),
            Json::Arr(vec![Json::Str(
                "@langfuse/opencode-observability-plugin@latest".to_string(),
            )]),
        ));
    }
    let mut out = String::new();
    Json::Obj(document).render(&mut out);
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::inputs::DecantSource;
    use crate::load::load;

    /// A virtual file system: the listed paths exist, everything else is missing.
    pub(crate) struct FakePaths(pub BTreeMap<String, PathKind>);

    impl PathProbe for FakePaths {
        fn kind(&self, path: &str) -> PathKind {
            self.0.get(path).copied().unwrap_or(PathKind::Missing)
        }
    }

    pub(crate) fn paths(entries: &[(&str, PathKind)]) -> FakePaths {
        let mut map: BTreeMap<String, PathKind> = entries
            .iter()
            .map(|(path, kind)| (path.to_string(), *kind))
            .collect();
        map.insert("/home/alice/src/app".to_string(), PathKind::Directory);
        FakePaths(map)
    }

    pub(crate) fn inputs(kind: LaunchKind) -> ResolveInputs {
        ResolveInputs {
            kind,
            workspace: "/home/alice/src/app".to_string(),
            profile_dir: "/home/alice/profiles".to_string(),
            home_dir: "/home/alice".to_string(),
            owner: Owner {
                name: "alice".to_string(),
                uid: 1000,
                gid: 1000,
            },
            image: None,
            seed_target: None,
            agent_args: Vec::new(),
            env: BTreeMap::new(),
            decant_sources: Vec::new(),
        }
    }

    fn profile(text: &str) -> LoadedProfile {
        load("dev.toml", text).unwrap_or_else(|error| panic!("profile does not load: {error}"))
    }

    fn resolve_with(
        text: &str,
        inputs: &ResolveInputs,
        probe: &FakePaths,
    ) -> Result<LaunchSpec, PolicyError> {
        resolve(&profile(text), inputs, probe)
    }

    fn container(spec: &LaunchSpec) -> &ContainerSpec {
        match &spec.action {
            Action::Container(container) => container,
            Action::Build(_) => panic!("container expected"),
        }
    }

    fn run(text: &str) -> LaunchSpec {
        resolve_with(text, &inputs(LaunchKind::Run), &paths(&[])).unwrap()
    }

    fn env_of(container: &ContainerSpec) -> Vec<(String, String)> {
        container
            .env
            .iter()
            .map(|var| {
                let value = match &var.value {
                    EnvValue::Literal { value } => value.clone(),
                    EnvValue::Secret { required } => format!("<secret required={required}>"),
                };
                (var.name.clone(), value)
            })
            .collect()
    }

    fn names(container: &ContainerSpec) -> Vec<String> {
        container.env.iter().map(|var| var.name.clone()).collect()
    }

    fn caps(container: &ContainerSpec) -> Vec<&'static str> {
        container.cap_add.iter().map(|cap| cap.as_str()).collect()
    }

    fn profile_origin(spec: &LaunchSpec, key: &str) -> (String, Option<usize>) {
        match spec.origins.get(key) {
            Some(Origin::Profile { field, line, .. }) => (field.clone(), *line),
            other => panic!("{key}: profile origin expected, found {other:?}"),
        }
    }

    fn unlaunchable_field(error: PolicyError) -> (String, Option<(usize, usize)>) {
        match error {
            PolicyError::Unlaunchable {
                location:
                    Location::Profile {
                        field, position, ..
                    },
                ..
            } => (field, position),
            other => panic!("unlaunchable profile error expected, found {other:?}"),
        }
    }

    const CLAUDE: &str = "name = \"dev\"\nagent = \"claude-code\"\n";

    #[test]
    fn a_claude_code_run_is_hardened_like_agent_containers() {
        let spec = run(CLAUDE);
        assert_eq!(spec.kind, LaunchKind::Run);
        let c = container(&spec);
        assert_eq!(c.image, "claude-code:latest");
        assert_eq!(c.command, ["claude"]);
        assert!(c.interactive && c.tty && c.auto_remove && !c.detach);
        assert!(c.no_new_privileges && c.read_only_root && c.cap_drop_all);
        assert_eq!(c.apparmor, None);
        assert_eq!(caps(c), ["NET_ADMIN", "NET_RAW", "SETGID", "SETUID"]);
        assert_eq!(
            c.tmpfs,
            [
                Tmpfs {
                    target: "/tmp".into(),
                    exec: false
                },
                Tmpfs {
                    target: "/run".into(),
                    exec: false
                }
            ]
        );
        assert_eq!(
            c.mounts,
            [
                Mount {
                    target: "/home/claude".into(),
                    read_only: false,
                    source: MountSource::Volume {
                        name: "claude-code-home-alice-1000-dev".into(),
                        subpath: None
                    },
                },
                Mount {
                    target: "/workspace/app".into(),
                    read_only: false,
                    source: MountSource::Bind {
                        path: "/home/alice/src/app".into()
                    },
                },
            ]
        );
        assert_eq!(c.working_dir.as_deref(), Some("/workspace/app"));
        assert_eq!(c.network, Network::Default);
        assert!(c.env.is_empty() && c.ports.is_empty() && c.extra_hosts.is_empty());
        assert_eq!(c.name, None);
        assert_eq!(c.user, None);
        assert_eq!(c.entrypoint, None);
        assert_eq!(
            spec.origins["cap_add.NET_ADMIN"],
            Origin::Preset {
                agent: "claude-code".into()
            }
        );
        assert_eq!(
            spec.origins["mounts./workspace/app"],
            Origin::Invocation {
                input: "--workspace".into()
            }
        );
        assert_eq!(
            spec.origins["image"],
            Origin::Preset {
                agent: "claude-code".into()
            }
        );
    }

    #[test]
    fn every_container_gets_default_limits_and_log_rotation() {
        let c = container(&run(CLAUDE)).clone();
        assert_eq!(
            c.resources,
            crate::spec::Resources {
                memory_bytes: Some(4 << 30),
                memory_swap_bytes: Some(4 << 30),
                shm_size_bytes: None,
                nano_cpus: None,
                pids_limit: Some(512),
            }
        );
        let log = c.log.expect("log rotation");
        assert_eq!(log.driver, "json-file");
        assert_eq!(log.options["max-size"], "50m");
        assert_eq!(log.options["max-file"], "3");
    }

    #[test]
    fn opencode_and_hermes_get_executable_tmpfs_and_hermes_its_extra_caps() {
        let opencode = run("name = \"dev\"\nagent = \"opencode\"\n");
        let c = container(&opencode);
        assert!(c.tmpfs.iter().all(|tmpfs| tmpfs.exec));
        assert_eq!(c.command, ["opencode"]);
        assert_eq!(
            opencode.origins["tmpfs./tmp"],
            Origin::Preset {
                agent: "opencode".into()
            }
        );
        let hermes = run("name = \"dev\"\nagent = \"hermes\"\n");
        let c = container(&hermes);
        assert!(c.tmpfs.iter().all(|tmpfs| tmpfs.exec));
        assert!(c.command.is_empty());
        assert_eq!(
            caps(c),
            [
                "CHOWN",
                "DAC_OVERRIDE",
                "NET_ADMIN",
                "NET_RAW",
                "SETGID",
                "SETUID"
            ]
        );
        assert_eq!(c.mounts[0].target, "/opt/data");
    }

    #[test]
    fn image_comes_from_invocation_then_profile_then_preset() {
        let text = format!("{CLAUDE}[image]\nref = \"mine:1\"\n");
        let spec = run(&text);
        assert_eq!(container(&spec).image, "mine:1");
        assert_eq!(
            profile_origin(&spec, "image"),
            ("image.ref".to_string(), Some(4))
        );
        let mut invocation = inputs(LaunchKind::Run);
        invocation.image = Some("cli:2".to_string());
        invocation.agent_args = vec!["--resume".to_string()];
        let spec = resolve_with(&text, &invocation, &paths(&[])).unwrap();
        assert_eq!(container(&spec).image, "cli:2");
        assert_eq!(container(&spec).command, ["claude", "--resume"]);
        assert_eq!(
            spec.origins["image"],
            Origin::Invocation {
                input: "--image".into()
            }
        );
    }

    #[test]
    fn read_only_root_and_workspace_follow_the_profile() {
        let text =
            format!("{CLAUDE}[security]\nread_only_root = false\n[workspace]\nread_only = true\n");
        let spec = run(&text);
        let c = container(&spec);
        assert!(!c.read_only_root);
        assert!(c.mounts[1].read_only);
        assert_eq!(
            profile_origin(&spec, "read_only_root"),
            ("security.read_only_root".to_string(), Some(4))
        );
        let text = format!("{CLAUDE}[workspace]\nmount = false\n");
        let c = container(&run(&text)).clone();
        assert_eq!(c.mounts.len(), 1);
        assert_eq!(c.working_dir, None);
    }

    #[test]
    fn a_missing_workspace_is_unlaunchable_at_the_invocation() {
        let mut invocation = inputs(LaunchKind::Run);
        invocation.workspace = "/nowhere/else".to_string();
        let error = resolve_with(CLAUDE, &invocation, &paths(&[])).unwrap_err();
        assert!(matches!(
            error,
            PolicyError::Unlaunchable { location: Location::Invocation { ref input }, .. } if input == "--workspace"
        ));
    }

    #[test]
    fn deny_without_a_gateway_takes_the_container_off_the_network() {
        let text = format!("{CLAUDE}[egress]\nmode = \"deny\"\n");
        let spec = run(&text);
        assert_eq!(container(&spec).network, Network::None);
        assert_eq!(profile_origin(&spec, "network").0, "egress.mode");
        assert!(container(&spec).env.is_empty());
        let mut invocation = inputs(LaunchKind::Run);
        invocation.env.insert("AGENTC_NETWORK".into(), "lab".into());
        let spec = resolve_with(&text, &invocation, &paths(&[])).unwrap();
        assert_eq!(container(&spec).network, Network::None);
        assert_eq!(
            spec.origins[SUPERSEDED_NETWORK_KEY],
            Origin::Environment {
                variable: "AGENTC_NETWORK".into()
            }
        );
    }

    #[test]
    fn deny_refuses_ports_it_cannot_publish() {
        let text = format!("{CLAUDE}[egress]\nmode = \"deny\"\n[network]\npublish = [8080]\n");
        let (field, _) = unlaunchable_field(
            resolve_with(&text, &inputs(LaunchKind::Run), &paths(&[])).unwrap_err(),
        );
        assert_eq!(field, "network.publish");
    }

    #[test]
    fn allowlist_and_unrestricted_egress_are_handed_to_the_entrypoint() {
        let text = format!("{CLAUDE}[egress]\nhosts = [\"api.anthropic.com\", \"github.com\"]\n");
        let c = container(&run(&text)).clone();
        assert_eq!(
            env_of(&c),
            [(
                "AGENT_ALLOWED_EGRESS".into(),
                "api.anthropic.com,github.com".into()
            )]
        );
        assert_eq!(c.network, Network::Default);
        let text = format!("{CLAUDE}[egress]\nmode = \"unrestricted\"\n");
        let c = container(&run(&text)).clone();
        assert_eq!(env_of(&c), [("AGENT_ALLOWED_EGRESS".into(), "*".into())]);
    }

    const GATEWAY: &str =
        "[egress]\nmode = \"deny\"\ngateway_host = \"gw.example\"\ngateway_port = 2222\n\
        gateway_user = \"agent\"\ngateway_bootstrap_allow = [\"10.0.0.1\", \"10.0.0.0/8\"]\n\
        gateway_key_file = \"keys/id\"\ngateway_known_hosts_file = \"keys/known\"\n";

    #[test]
    fn a_gateway_keeps_the_network_and_mounts_its_files_read_only() {
        let text = format!("{CLAUDE}{GATEWAY}");
        let probe = paths(&[
            ("/home/alice/profiles/keys/id", PathKind::File),
            ("/home/alice/profiles/keys/known", PathKind::File),
        ]);
        let spec = resolve_with(&text, &inputs(LaunchKind::Run), &probe).unwrap();
        let c = container(&spec);
        assert_eq!(c.network, Network::Default);
        assert_eq!(
            env_of(c),
            [
                ("AGENT_GATEWAY_HOST".into(), "gw.example".into()),
                ("AGENT_GATEWAY_PORT".into(), "2222".into()),
                ("AGENT_GATEWAY_USER".into(), "agent".into()),
                (
                    "AGENT_GATEWAY_BOOTSTRAP_ALLOW".into(),
                    "10.0.0.1,10.0.0.0/8".into()
                ),
            ]
        );
        let key = c
            .mounts
            .iter()
            .find(|m| m.target == presets::GATEWAY_KEY_TARGET)
            .unwrap();
        assert!(key.read_only);
        assert_eq!(
            key.source,
            MountSource::Bind {
                path: "/home/alice/profiles/keys/id".into()
            }
        );
        assert!(c
            .mounts
            .iter()
            .any(|m| m.target == presets::GATEWAY_KNOWN_HOSTS_TARGET && m.read_only));
        // A directory where the key should be is refused, with the field's position.
        let probe = paths(&[
            ("/home/alice/profiles/keys/id", PathKind::Directory),
            ("/home/alice/profiles/keys/known", PathKind::File),
        ]);
        let error = resolve_with(&text, &inputs(LaunchKind::Run), &probe).unwrap_err();
        assert!(
            error.to_string().contains("gateway key is not a file"),
            "{error}"
        );
        let (field, position) = unlaunchable_field(error);
        assert_eq!(field, "egress.gateway_key_file");
        assert_eq!(position.map(|p| p.0), Some(9));
    }

    #[test]
    fn gateway_inputs_may_be_read_only_mounts_but_not_writable_ones() {
        let base = "[egress]\nmode = \"deny\"\ngateway_host = \"gw\"\ngateway_port = 22\n";
        let mounts = "[[mounts]]\nsource = \"/keys/id\"\ntarget = \"/etc/agent/gateway-key\"\n\
            [[mounts]]\nsource = \"/keys/known\"\ntarget = \"/etc/agent/gateway-known-hosts\"\n";
        let text = format!("{CLAUDE}{base}{mounts}");
        let probe = paths(&[
            ("/keys/id", PathKind::File),
            ("/keys/known", PathKind::File),
        ]);
        let c = container(&resolve_with(&text, &inputs(LaunchKind::Run), &probe).unwrap()).clone();
        assert!(c
            .mounts
            .iter()
            .any(|m| m.target == presets::GATEWAY_KEY_TARGET && m.read_only));
        let writable = text.replacen(
            "target = \"/etc/agent/gateway-key\"\n",
            "target = \"/etc/agent/gateway-key\"\nread_only = false\n",
            1,
        );
        let error = resolve_with(&writable, &inputs(LaunchKind::Run), &probe).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("gateway key mount must be read-only"),
            "{error}"
        );
        let missing = paths(&[("/keys/known", PathKind::File)]);
        let (field, _) = unlaunchable_field(
            resolve_with(&text, &inputs(LaunchKind::Run), &missing).unwrap_err(),
        );
        assert_eq!(field, "mounts[0].source");
    }

    #[test]
    fn provider_settings_render_per_agent() {
        let provider = "[provider]\nkind = \"anthropic\"\nendpoint = \"https://llm.example/v1/\"\n\
            model = \"m-1\"\napi_key_env = \"MY_KEY\"\n";
        let c = container(&run(&format!("{CLAUDE}{provider}"))).clone();
        assert_eq!(
            env_of(&c),
            [
                ("MY_KEY".into(), "<secret required=true>".into()),
                ("ANTHROPIC_BASE_URL".into(), "https://llm.example/v1".into()),
                ("ANTHROPIC_MODEL".into(), "m-1".into()),
            ]
        );
        let c = container(&run(&format!(
            "name = \"dev\"\nagent = \"hermes\"\n{provider}"
        )))
        .clone();
        assert_eq!(names(&c), ["MY_KEY", "ANTHROPIC_BASE_URL"]);
        assert_eq!(c.command, ["--provider", "anthropic", "--model", "m-1"]);
        let codex = provider.replace("anthropic", "openai");
        let c = container(&run(&format!("name = \"dev\"\nagent = \"codex\"\n{codex}"))).clone();
        assert_eq!(names(&c), ["MY_KEY"]);
        assert_eq!(
            c.command,
            [
                "codex",
                "--model",
                "m-1",
                "--config",
                "openai_base_url=\"https://llm.example/v1\""
            ]
        );
        let custom = provider.replace("anthropic", "custom");
        let c = container(&run(&format!(
            "name = \"dev\"\nagent = \"codex\"\n{custom}"
        )))
        .clone();
        assert_eq!(
            c.command,
            [
                "codex",
                "--model",
                "m-1",
                "--config",
                "model_provider=\"agent_containers\"",
                "--config",
                "model_providers.agent_containers.name=\"custom\"",
                "--config",
                "model_providers.agent_containers.base_url=\"https://llm.example/v1\"",
                "--config",
                "model_providers.agent_containers.wire_api=\"responses\"",
            ]
        );
    }

    #[test]
    fn opencode_gets_its_config_as_compact_ordered_json() {
        let text = "name = \"dev\"\nagent = \"opencode\"\n[provider]\nkind = \"custom\"\n\
            endpoint = \"https://llm.example/\"\nmodel = \"qwén\"\napi_key_env = \"K\"\n";
        let c = container(&run(text)).clone();
        assert_eq!(names(&c), ["K", "AGENT_OPENCODE_CONFIG_JSON"]);
        let json = match &c.env[1].value {
            EnvValue::Literal { value } => value.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            json,
            r#"{"$schema":"https://opencode.ai/config.json","model":"agent_containers/qw\u00e9n","provider":{"agent_containers":{"npm":"@ai-sdk/openai-compatible","name":"custom","options":{"baseURL":"https://llm.example","apiKey":"{env:K}"},"models":{"qw\u00e9n":{"name":"qw\u00e9n"}}}}}"#
        );
        let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed["model"], "agent_containers/qwén");
    }

    #[test]
    fn langfuse_keys_are_secrets_and_variables_follow_the_agent() {
        let langfuse = "[egress]\nhosts = [\"lf.example\"]\n[langfuse]\nenabled = true\n\
            base_url = \"https://lf.example/\"\nenvironment = \"dev\"\nuser_id = \"alice\"\n";
        let c = container(&run(&format!("{CLAUDE}{langfuse}"))).clone();
        assert_eq!(
            env_of(&c),
            [
                ("AGENT_ALLOWED_EGRESS".into(), "lf.example".into()),
                ("TRACE_TO_LANGFUSE".into(), "true".into()),
                (
                    "LANGFUSE_PUBLIC_KEY".into(),
                    "<secret required=true>".into()
                ),
                (
                    "AGENT_LANGFUSE_PUBLIC_KEY_ENV".into(),
                    "LANGFUSE_PUBLIC_KEY".into()
                ),
                (
                    "LANGFUSE_SECRET_KEY".into(),
                    "<secret required=true>".into()
                ),
                (
                    "AGENT_LANGFUSE_SECRET_KEY_ENV".into(),
                    "LANGFUSE_SECRET_KEY".into()
                ),
                ("LANGFUSE_BASE_URL".into(), "https://lf.example".into()),
                ("LANGFUSE_TRACING_ENVIRONMENT".into(), "dev".into()),
                ("LANGFUSE_USER_ID".into(), "alice".into()),
            ]
        );
        let c = container(&run(&format!(
            "name = \"dev\"\nagent = \"opencode\"\n{langfuse}"
        )))
        .clone();
        let names = names(&c);
        assert!(names.contains(&"LANGFUSE_BASEURL".to_string()));
        assert!(names.contains(&"LANGFUSE_ENVIRONMENT".to_string()));
        assert_eq!(names[1], "AGENT_OPENCODE_CONFIG_JSON");
        let c = container(&run(&format!(
            "name = \"dev\"\nagent = \"codex\"\n{langfuse}"
        )))
        .clone();
        assert_eq!(
            &c.command[..3],
            ["codex", "--config", "features.hooks=true"]
        );
    }

    #[test]
    fn proxy_variables_and_ca_trust_follow_agent_containers() {
        let text = format!(
            "{CLAUDE}[proxy]\nhttp = \"http://proxy:3128/\"\nno_proxy = [\"localhost\", \".corp\"]\nca_file = \"ca.pem\"\n"
        );
        let probe = paths(&[("/home/alice/profiles/ca.pem", PathKind::File)]);
        let c = container(&resolve_with(&text, &inputs(LaunchKind::Run), &probe).unwrap()).clone();
        assert_eq!(
            env_of(&c),
            [
                ("HTTP_PROXY".into(), "http://proxy:3128".into()),
                ("http_proxy".into(), "http://proxy:3128".into()),
                ("NO_PROXY".into(), "localhost,.corp".into()),
                ("no_proxy".into(), "localhost,.corp".into()),
                ("NODE_USE_ENV_PROXY".into(), "1".into()),
                ("SSL_CERT_FILE".into(), presets::CA_BUNDLE_TARGET.into()),
                (
                    "REQUESTS_CA_BUNDLE".into(),
                    presets::CA_BUNDLE_TARGET.into()
                ),
                (
                    "NODE_EXTRA_CA_CERTS".into(),
                    presets::CA_BUNDLE_TARGET.into()
                ),
            ]
        );
        let (field, _) = unlaunchable_field(
            resolve_with(&text, &inputs(LaunchKind::Run), &paths(&[])).unwrap_err(),
        );
        assert_eq!(field, "proxy.ca_file");
    }

    #[test]
    fn mount_sources_resolve_lexically_and_must_exist() {
        let text = format!(
            "{CLAUDE}[[configuration_mounts]]\nsource = \"~/.config/x/../claude.json\"\ntarget = \"/home/claude/.claude.json\"\n\
             [[mounts]]\ntype = \"directory\"\nsource = \"./data/\"\ntarget = \"/data\"\nread_only = false\n\
             [[mounts]]\ntype = \"seed\"\nsource = \"seed.json\"\ntarget = \"/home/claude/.seeded\"\n"
        );
        let probe = paths(&[
            ("/home/alice/.config/claude.json", PathKind::File),
            ("/home/alice/profiles/data", PathKind::Directory),
        ]);
        let spec = resolve_with(&text, &inputs(LaunchKind::Run), &probe).unwrap();
        let c = container(&spec);
        let extra: Vec<_> = c.mounts[2..].to_vec();
        assert_eq!(
            extra,
            [
                Mount {
                    target: "/home/claude/.claude.json".into(),
                    read_only: true,
                    source: MountSource::Bind {
                        path: "/home/alice/.config/claude.json".into()
                    },
                },
                Mount {
                    target: "/data".into(),
                    read_only: false,
                    source: MountSource::Bind {
                        path: "/home/alice/profiles/data".into()
                    },
                },
            ]
        );
        assert_eq!(profile_origin(&spec, "mounts./data").0, "mounts[0]");
        // A directory mount needs a directory.
        let probe = paths(&[
            ("/home/alice/.config/claude.json", PathKind::File),
            ("/home/alice/profiles/data", PathKind::File),
        ]);
        let (field, position) =
            unlaunchable_field(resolve_with(&text, &inputs(LaunchKind::Run), &probe).unwrap_err());
        assert_eq!(field, "mounts[0].source");
        assert!(position.is_some());
        let (field, _) = unlaunchable_field(
            resolve_with(&text, &inputs(LaunchKind::Run), &paths(&[])).unwrap_err(),
        );
        assert_eq!(field, "configuration_mounts[0].source");
    }

    #[test]
    fn mounts_may_not_shadow_generated_targets() {
        for target in [
            presets::CA_BUNDLE_TARGET,
            "/home/claude",
            "/workspace/app",
            "/tmp",
        ] {
            let text = format!("{CLAUDE}[[mounts]]\nsource = \"/x\"\ntarget = \"{target}\"\n");
            let probe = paths(&[("/x", PathKind::File)]);
            let error = resolve_with(&text, &inputs(LaunchKind::Run), &probe).unwrap_err();
            assert!(
                error.to_string().contains("conflicts with generated mount"),
                "{target}: {error}"
            );
        }
    }

    #[test]
    fn profile_limits_override_defaults_and_the_environment_overrides_both() {
        let text = format!(
            "{CLAUDE}[resources]\nmemory = \"2g\"\nshm_size = \"256m\"\ncpus = 1.5\npids_limit = 100\n\
             [logging]\nmax_size = \"10m\"\nmax_file = 2\n"
        );
        let spec = run(&text);
        let c = container(&spec);
        assert_eq!(c.resources.memory_bytes, Some(2 << 30));
        assert_eq!(c.resources.memory_swap_bytes, Some(2 << 30));
        assert_eq!(c.resources.shm_size_bytes, Some(256 << 20));
        assert_eq!(c.resources.nano_cpus, Some(1_500_000_000));
        assert_eq!(c.resources.pids_limit, Some(100));
        assert_eq!(c.log.as_ref().unwrap().options["max-size"], "10m");
        assert_eq!(c.log.as_ref().unwrap().options["max-file"], "2");
        assert_eq!(
            profile_origin(&spec, "resources.memory_bytes"),
            ("resources.memory".to_string(), Some(4))
        );
        let mut invocation = inputs(LaunchKind::Run);
        for (name, value) in [
            ("AGENTC_MEM_LIMIT", "1g"),
            ("AGENTC_CPUS", " 2 "),
            ("AGENTC_PIDS_LIMIT", "off"),
            ("AGENTC_SHM_SIZE", ""),
            ("AGENTC_LOG_MAX_FILE", "7"),
        ] {
            invocation.env.insert(name.into(), value.into());
        }
        let spec = resolve_with(&text, &invocation, &paths(&[])).unwrap();
        let c = container(&spec);
        assert_eq!(c.resources.memory_bytes, Some(1 << 30));
        assert_eq!(c.resources.memory_swap_bytes, Some(1 << 30));
        assert_eq!(c.resources.nano_cpus, Some(2_000_000_000));
        assert_eq!(c.resources.pids_limit, None);
        assert_eq!(c.resources.shm_size_bytes, Some(256 << 20));
        assert_eq!(c.log.as_ref().unwrap().options["max-file"], "7");
        assert_eq!(
            spec.origins["resources.pids_limit"],
            Origin::Environment {
                variable: "AGENTC_PIDS_LIMIT".into()
            }
        );
        assert_eq!(
            spec.origins["resources.memory_swap_bytes"],
            Origin::Environment {
                variable: "AGENTC_MEM_LIMIT".into()
            }
        );
    }

    #[test]
    fn memory_off_removes_memory_and_swap_and_bad_overrides_are_errors() {
        let mut invocation = inputs(LaunchKind::Run);
        invocation
            .env
            .insert("AGENTC_MEM_LIMIT".into(), "OFF".into());
        let c = container(&resolve_with(CLAUDE, &invocation, &paths(&[])).unwrap()).clone();
        assert_eq!(
            (c.resources.memory_bytes, c.resources.memory_swap_bytes),
            (None, None)
        );
        invocation
            .env
            .insert("AGENTC_MEM_LIMIT".into(), "lots".into());
        let error = resolve_with(CLAUDE, &invocation, &paths(&[])).unwrap_err();
        assert_eq!(
            error.location(),
            &Location::Environment {
                variable: "AGENTC_MEM_LIMIT".into()
            }
        );
    }

    #[test]
    fn log_rotation_can_be_turned_off_by_profile_or_environment() {
        let text = format!("{CLAUDE}[logging]\nmax_size = \"off\"\n");
        let spec = run(&text);
        assert_eq!(container(&spec).log, None);
        assert_eq!(profile_origin(&spec, "log").0, "logging.max_size");
        let mut invocation = inputs(LaunchKind::Run);
        invocation
            .env
            .insert("AGENTC_LOG_MAX_SIZE".into(), "off".into());
        assert_eq!(
            container(&resolve_with(CLAUDE, &invocation, &paths(&[])).unwrap()).log,
            None
        );
        invocation
            .env
            .insert("AGENTC_LOG_MAX_SIZE".into(), "1g".into());
        let spec = resolve_with(&text, &invocation, &paths(&[])).unwrap();
        assert_eq!(
            container(&spec).log.as_ref().unwrap().options["max-size"],
            "1g"
        );
    }

    #[test]
    fn published_ports_go_to_loopback_unless_a_network_is_named() {
        let text =
            format!("{CLAUDE}[network]\nhost_gateway = true\npublish = [8080, \"53/udp\"]\n");
        let spec = run(&text);
        let c = container(&spec);
        assert_eq!(
            c.ports,
            [
                PublishedPort {
                    container_port: 8080,
                    protocol: Protocol::Tcp,
                    host_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                    host_port: None
                },
                PublishedPort {
                    container_port: 53,
                    protocol: Protocol::Udp,
                    host_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                    host_port: None
                },
            ]
        );
        assert_eq!(
            c.extra_hosts,
            [ExtraHost {
                host: "host.docker.internal".into(),
                target: HostTarget::HostGateway
            }]
        );
        assert_eq!(
            profile_origin(&spec, "ports.53/udp").0,
            "network.publish[1]"
        );
        let mut invocation = inputs(LaunchKind::Run);
        invocation.env.insert("AGENTC_NETWORK".into(), "lab".into());
        let spec = resolve_with(&text, &invocation, &paths(&[])).unwrap();
        assert_eq!(
            container(&spec).network,
            Network::Named { name: "lab".into() }
        );
        assert!(container(&spec).ports.is_empty());
        assert_eq!(
            spec.origins["ports"],
            Origin::Environment {
                variable: "AGENTC_NETWORK".into()
            }
        );
        let spec = run(&format!("{CLAUDE}[network]\nname = \"corp\"\n"));
        assert_eq!(
            container(&spec).network,
            Network::Named {
                name: "corp".into()
            }
        );
        assert_eq!(profile_origin(&spec, "network").0, "network.name");
    }

    #[test]
    fn fuse_and_added_capabilities_widen_the_container() {
        let text = format!(
            "{CLAUDE}[security]\nfuse = true\nadd_capabilities = [\"sys_ptrace\", \"NET_ADMIN\"]\n"
        );
        let spec = run(&text);
        let c = container(&spec);
        assert_eq!(
            c.devices,
            [Device {
                host_path: "/dev/fuse".into(),
                container_path: "/dev/fuse".into(),
                permissions: "rwm".into()
            }]
        );
        assert_eq!(c.apparmor, Some(AppArmor::Unconfined));
        assert!(c.cap_add.contains(&Capability::SysAdmin));
        assert!(c.cap_add.contains(&Capability::SysPtrace));
        assert_eq!(
            profile_origin(&spec, "cap_add.SYS_PTRACE").0,
            "security.add_capabilities[0]"
        );
        assert_eq!(
            spec.origins["cap_add.NET_ADMIN"],
            Origin::Preset {
                agent: "claude-code".into()
            }
        );
        assert_eq!(
            profile_origin(&spec, "cap_add.SYS_ADMIN").0,
            "security.fuse"
        );
    }

    const CUSTOM: &str = "name = \"lab\"\nagent = \"custom\"\n[image]\nref = \"strix:1\"\n\
        command = [\"tail\", \"-f\", \"/dev/null\"]\nuser = \"pentester\"\n";

    #[test]
    fn a_custom_run_is_a_hardened_detached_sandbox() {
        let spec = run(CUSTOM);
        assert_eq!(spec.kind, LaunchKind::Sandbox);
        let c = container(&spec);
        assert_eq!(c.name.as_deref(), Some("agentc-sandbox-alice-1000-lab"));
        assert_eq!(c.image, "strix:1");
        assert_eq!(c.entrypoint, None);
        assert_eq!(c.command, ["tail", "-f", "/dev/null"]);
        assert_eq!(c.user.as_deref(), Some("pentester"));
        assert!(c.detach && !c.interactive && !c.tty && !c.auto_remove);
        assert!(c.no_new_privileges && c.read_only_root && c.cap_drop_all);
        assert!(c.cap_add.is_empty());
        assert!(c.mounts.is_empty() && c.working_dir.is_none());
        assert_eq!(c.tmpfs.len(), 2);
        assert_eq!(c.resources.pids_limit, Some(512));
        assert_eq!(c.log.as_ref().unwrap().options["max-size"], "50m");
        assert_eq!(c.labels[LABEL_KIND], "sandbox");
        let text = format!("{CUSTOM}[security]\nadd_capabilities = [\"NET_RAW\", \"NET_ADMIN\"]\n[workspace]\nmount = true\n");
        let c = container(&run(&text)).clone();
        assert_eq!(caps(&c), ["NET_ADMIN", "NET_RAW"]);
        assert_eq!(c.mounts[0].target, "/workspace/app");
        assert_eq!(c.working_dir.as_deref(), Some("/workspace/app"));
    }

    #[test]
    fn seed_launches_need_a_configured_target_inside_the_home() {
        let text = format!(
            "{CLAUDE}[[mounts]]\ntype = \"seed\"\nsource = \"settings.json\"\ntarget = \"/home/claude/.claude/settings.json\"\non_conflict = \"replace\"\n"
        );
        let probe = paths(&[("/home/alice/profiles/settings.json", PathKind::File)]);
        let mut invocation = inputs(LaunchKind::Seed);
        let error = resolve_with(&text, &invocation, &probe).unwrap_err();
        match &error {
            PolicyError::Unlaunchable {
                location: Location::Invocation { input },
                hint,
                ..
            } => {
                assert_eq!(input, "--seed-target");
                assert!(
                    hint.contains("/home/claude/.claude/settings.json"),
                    "{hint}"
                );
            }
            other => panic!("{other:?}"),
        }
        invocation.seed_target = Some("/home/claude/other".into());
        assert!(resolve_with(&text, &invocation, &probe)
            .unwrap_err()
            .to_string()
            .contains("not configured"));
        invocation.seed_target = Some("/home/claude/.claude/settings.json".into());
        let spec = resolve_with(&text, &invocation, &probe).unwrap();
        assert_eq!(spec.kind, LaunchKind::Seed);
        let c = container(&spec);
        assert_eq!(c.network, Network::None);
        assert_eq!(c.user.as_deref(), Some("0:0"));
        assert!(c.auto_remove && !c.interactive && !c.tty);
        assert!(c.no_new_privileges && c.read_only_root && c.cap_drop_all);
        assert_eq!(caps(c), ["CHOWN", "DAC_OVERRIDE"]);
        assert_eq!(c.entrypoint.as_deref(), Some("/bin/sh"));
        assert_eq!(c.command, ["-ceu", presets::SEED_COPY_SCRIPT]);
        assert_eq!(
            c.mounts[1],
            Mount {
                target: "/tmp/agent-seed".into(),
                read_only: true,
                source: MountSource::Bind {
                    path: "/home/alice/profiles/settings.json".into()
                },
            }
        );
        assert_eq!(
            env_of(c),
            [
                (
                    "SEED_TARGET".into(),
                    "/home/claude/.claude/settings.json".into()
                ),
                ("SEED_USER".into(), "claude".into()),
                ("SEED_HOME".into(), "/home/claude".into()),
                ("SEED_ON_CONFLICT".into(), "replace".into()),
            ]
        );
        assert_eq!(c.resources.memory_bytes, Some(4 << 30));
        // The source must exist.
        let (field, _) =
            unlaunchable_field(resolve_with(&text, &invocation, &paths(&[])).unwrap_err());
        assert_eq!(field, "mounts[0].source");
    }

    #[test]
    fn seed_mounts_are_not_mounted_in_a_run() {
        let text = format!(
            "{CLAUDE}[[mounts]]\ntype = \"seed\"\nsource = \"s\"\ntarget = \"/home/claude/s\"\n"
        );
        let c = container(&run(&text)).clone();
        assert_eq!(c.mounts.len(), 2);
    }

    fn decant_inputs(sources: &[(&str, AgentName)]) -> ResolveInputs {
        let mut invocation = inputs(LaunchKind::Decant);
        invocation.decant_sources = sources
            .iter()
            .map(|(name, agent)| DecantSource {
                profile: name.to_string(),
                agent: *agent,
                home_volume: format!("{name}-home"),
            })
            .collect();
        invocation
    }

    #[test]
    fn decant_reads_one_home_per_agent_on_a_published_port() {
        let text =
            format!("{CLAUDE}[decant]\nenabled = true\nsource_profiles = [\"dev\", \"cx\"]\n");
        let invocation = decant_inputs(&[("dev", AgentName::ClaudeCode), ("cx", AgentName::Codex)]);
        let spec = resolve_with(&text, &invocation, &paths(&[])).unwrap();
        assert_eq!(spec.kind, LaunchKind::Decant);
        let c = container(&spec);
        assert_eq!(c.name.as_deref(), Some("agentc-decant-alice-1000-dev"));
        assert_eq!(c.image, "agent-containers/decant:alice-1000-dev");
        assert_eq!(c.command[0], "serve");
        assert!(c.interactive && c.tty && c.auto_remove);
        assert_eq!(
            c.ports,
            [PublishedPort {
                container_port: 3000,
                protocol: Protocol::Tcp,
                host_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                host_port: Some(8787)
            }]
        );
        assert_eq!(
            c.mounts,
            [
                Mount {
                    target: "/var/lib/decant".into(),
                    read_only: false,
                    source: MountSource::Volume {
                        name: "decant-data-alice-1000-dev".into(),
                        subpath: None
                    }
                },
                Mount {
                    target: "/sources/claude".into(),
                    read_only: true,
                    source: MountSource::Volume {
                        name: "dev-home".into(),
                        subpath: Some(".claude".into())
                    }
                },
                Mount {
                    target: "/sources/codex".into(),
                    read_only: true,
                    source: MountSource::Volume {
                        name: "cx-home".into(),
                        subpath: Some(".codex".into())
                    }
                },
            ]
        );
        assert_eq!(c.resources.pids_limit, Some(512));
        assert!(c.log.is_some());
        let twice = decant_inputs(&[("a", AgentName::Codex), ("b", AgentName::Codex)]);
        assert!(resolve_with(&text, &twice, &paths(&[]))
            .unwrap_err()
            .to_string()
            .contains("multiple codex"));
        let none = decant_inputs(&[]);
        let (field, _) = unlaunchable_field(resolve_with(&text, &none, &paths(&[])).unwrap_err());
        assert_eq!(field, "decant.source_profiles");
        let (field, _) =
            unlaunchable_field(resolve_with(CLAUDE, &invocation, &paths(&[])).unwrap_err());
        assert_eq!(field, "decant.enabled");
    }

    #[test]
    fn builds_use_the_run_tag_and_a_checked_context() {
        let text = format!("{CLAUDE}[image]\nbuild_context = \"../images/claude\"\ndockerfile = \"Dockerfile.dev\"\n");
        let probe = paths(&[("/home/alice/images/claude", PathKind::Directory)]);
        let spec = resolve_with(&text, &inputs(LaunchKind::Build), &probe).unwrap();
        assert_eq!(spec.kind, LaunchKind::Build);
        let Action::Build(build) = &spec.action else {
            panic!("build expected")
        };
        assert_eq!(build.tag, "claude-code:latest");
        assert_eq!(build.context, "/home/alice/images/claude");
        assert_eq!(build.dockerfile.as_deref(), Some("Dockerfile.dev"));
        assert_eq!(
            build.build_args,
            BTreeMap::from([("GID".into(), "1000".into()), ("UID".into(), "1000".into())])
        );
        assert_eq!(build.labels[LABEL_KIND], "build");
        assert_eq!(build.labels[LABEL_SPEC_DIGEST], spec_digest(&spec));
        let (field, _) = unlaunchable_field(
            resolve_with(&text, &inputs(LaunchKind::Build), &paths(&[])).unwrap_err(),
        );
        assert_eq!(field, "image.build_context");
        let hermes = text.replace("claude-code", "hermes");
        let spec = resolve_with(&hermes, &inputs(LaunchKind::Build), &probe).unwrap();
        let Action::Build(build) = &spec.action else {
            panic!("build expected")
        };
        assert!(build.build_args.is_empty());
        let mut root = inputs(LaunchKind::Build);
        root.owner.uid = 0;
        assert!(resolve_with(&text, &root, &probe).is_err());
    }

    #[test]
    fn labels_carry_a_digest_of_everything_but_itself() {
        let spec = run(CLAUDE);
        let c = container(&spec);
        assert_eq!(c.labels[LABEL_PROFILE], "dev");
        assert_eq!(c.labels[LABEL_KIND], "run");
        let digest = &c.labels[LABEL_SPEC_DIGEST];
        assert_eq!(digest.len(), 64);
        assert_eq!(digest, &spec_digest(&spec));
        let mut changed = spec.clone();
        if let Action::Container(container) = &mut changed.action {
            container.resources.pids_limit = Some(1);
        }
        assert_ne!(spec_digest(&changed), *digest);
        let mut relabelled = spec.clone();
        if let Action::Container(container) = &mut relabelled.action {
            container
                .labels
                .insert(LABEL_SPEC_DIGEST.into(), "x".into());
        }
        assert_eq!(spec_digest(&relabelled), *digest);
    }

    #[test]
    fn owners_are_sanitized_like_agent_containers() {
        let owner = |name: &str| Owner {
            name: name.into(),
            uid: 501,
            gid: 20,
        };
        assert_eq!(owner_slug(&owner("Alice Smith")), "alice-smith-501");
        assert_eq!(owner_slug(&owner("..__")), "user-501");
        assert_eq!(owner_slug(&owner("é@x")), "x-501");
        assert_eq!(
            owner_slug(&owner(&"a".repeat(40))),
            format!("{}-501", "a".repeat(32))
        );
        let loaded = profile("name = \"dev\"\nagent = \"custom\"\n[image]\nref = \"x\"\n");
        assert_eq!(home_volume_name(&loaded.profile, &owner("bob")), None);
        let loaded = profile("name = \"dev\"\nagent = \"codex\"\nhome_volume = \"mine\"\n");
        assert_eq!(
            home_volume_name(&loaded.profile, &owner("bob")).as_deref(),
            Some("mine")
        );
    }

    #[test]
    fn secret_values_never_reach_the_spec_or_its_explanation() {
        let text = format!(
            "{CLAUDE}[provider]\nkind = \"anthropic\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n"
        );
        let mut invocation = inputs(LaunchKind::Run);
        invocation
            .env
            .insert("ANTHROPIC_API_KEY".into(), "sk-very-secret".into());
        let loaded = profile(&text);
        let spec = resolve(&loaded, &invocation, &paths(&[])).unwrap();
        assert_eq!(
            container(&spec).env,
            [EnvVar {
                name: "ANTHROPIC_API_KEY".into(),
                value: EnvValue::Secret { required: true }
            }]
        );
        let json = serde_json::to_string(&spec).unwrap();
        assert!(!json.contains("sk-very-secret"));
        assert!(!crate::explain::explain(&loaded, &spec).contains("sk-very-secret"));
    }

    #[test]
    fn an_environment_name_set_twice_is_an_error_naming_the_field() {
        let text = format!(
            "{CLAUDE}[provider]\nkind = \"anthropic\"\napi_key_env = \"LANGFUSE_PUBLIC_KEY\"\n\
             [egress]\nhosts = [\"lf.example\"]\n[langfuse]\nenabled = true\nbase_url = \"https://lf.example\"\n"
        );
        let Ok(loaded) = load("dev.toml", &text) else {
            return; // The loader may already reject the clash.
        };
        let error = resolve(&loaded, &inputs(LaunchKind::Run), &paths(&[])).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("LANGFUSE_PUBLIC_KEY would be set twice"),
            "{error}"
        );
        assert!(matches!(
            error.location(),
            Location::Profile { field, .. } if field == "langfuse.public_key_env"
        ));
    }

    #[test]
    fn hermes_endpoints_need_a_mapped_provider_kind() {
        let text = "name = \"dev\"\nagent = \"hermes\"\n[provider]\nkind = \"gemini\"\n\
            endpoint = \"https://llm.example\"\n";
        let Ok(loaded) = load("dev.toml", text) else {
            return; // The loader may already reject it.
        };
        let error = resolve(&loaded, &inputs(LaunchKind::Run), &paths(&[])).unwrap_err();
        assert!(error.to_string().contains("hermes provider"), "{error}");
    }

    #[test]
    fn only_custom_agents_have_sandboxes_and_only_presets_have_seeds() {
        let error = resolve_with(CLAUDE, &inputs(LaunchKind::Sandbox), &paths(&[])).unwrap_err();
        assert!(matches!(error, PolicyError::Unlaunchable { .. }));
        let spec = resolve_with(CUSTOM, &inputs(LaunchKind::Sandbox), &paths(&[])).unwrap();
        assert_eq!(spec.kind, LaunchKind::Sandbox);
        let mut seed = inputs(LaunchKind::Seed);
        seed.seed_target = Some("/x".into());
        assert!(resolve_with(CUSTOM, &seed, &paths(&[])).is_err());
    }

    #[test]
    fn invocation_images_and_agent_arguments_are_checked() {
        let loaded = profile("name = \"dev\"\nagent = \"claude-code\"\n");
        let invalid = |inputs: ResolveInputs| -> (String, String) {
            match resolve(&loaded, &inputs, &paths(&[])) {
                Err(PolicyError::Invalid {
                    location: Location::Invocation { input },
                    message,
                    ..
                }) => (input, message),
                other => panic!("expected an invocation error, got {other:?}"),
            }
        };
        for (image, message) in [
            ("--privileged", "--image must not start with '-'"),
            ("", "--image is empty"),
            (
                "alpine\n--privileged",
                "--image must not contain whitespace or control characters",
            ),
            (
                "alpine\0",
                "--image must not contain whitespace or control characters",
            ),
        ] {
            let mut run = inputs(LaunchKind::Run);
            run.image = Some(image.to_string());
            assert_eq!(
                invalid(run),
                ("--image".to_string(), message.to_string()),
                "{image:?}"
            );
        }
        let mut run = inputs(LaunchKind::Run);
        run.agent_args = vec!["--ok".to_string(), "a\0b".to_string()];
        assert_eq!(
            invalid(run),
            (
                "agent arguments".to_string(),
                "agent argument 1 contains a nul byte".to_string()
            )
        );
    }

    #[test]
    fn paths_normalize_without_touching_the_disk() {
        assert_eq!(normalize_path("/a/./b/../c//d/"), "/a/c/d");
        assert_eq!(normalize_path("/../.."), "/");
        let invocation = inputs(LaunchKind::Run);
        assert_eq!(resolve_host_path("~", &invocation), "/home/alice");
        assert_eq!(resolve_host_path("~/x", &invocation), "/home/alice/x");
        assert_eq!(resolve_host_path("../x", &invocation), "/home/alice/x");
        assert_eq!(resolve_host_path("/abs/./y", &invocation), "/abs/y");
    }
}
