//! Gathers what a launch depends on from the machine: the profile file, the workspace, the
//! user, the `AGENTC_*` environment and Decant's source profiles.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::path::{Path, PathBuf};

use agentc_policy::profile::MountType;
use agentc_policy::LoadedProfile;
use agentc_policy::{
    Action, BuildInputs, DecantSource, EnvValue, Instance, LaunchKind, LaunchSpec, Owner,
    PolicyError, ProfileRecord, RealPaths, ResolveInputs,
};

use crate::bundled::Bundled;
use crate::cli::{KindArg, LaunchArgs};

impl From<crate::bundled::BundledError> for Failure {
    /// A wrong input is a usage error (exit 2), a context that cannot be written a failure
    /// (exit 1).
    fn from(error: crate::bundled::BundledError) -> Failure {
        match error {
            crate::bundled::BundledError::Input(message) => Failure::usage(message),
            crate::bundled::BundledError::Write(message) => Failure::new(EXIT_FAILED, message),
        }
    }
}

/// Exit status for an invalid profile or an unlaunchable request (`EX_DATAERR`).
pub const EXIT_INVALID: u8 = 65;
/// Exit status for a profile file that cannot be read (`EX_NOINPUT`).
pub const EXIT_NO_INPUT: u8 = 66;
/// Exit status for a usage error, as clap uses.
pub const EXIT_USAGE: u8 = 2;
/// Exit status when `verify` found a mismatch or `rm` refused a container.
pub const EXIT_FAILED: u8 = 1;
/// Exit status when docker failed before the container ran (docker's own code).
pub const EXIT_DOCKER: u8 = 125;

/// A failed command: what to print and the exit status.
#[derive(Debug)]
pub struct Failure {
    /// The exit status.
    pub code: u8,
    /// The message, without the `error: ` prefix.
    pub message: String,
}

impl Failure {
    /// An invalid profile or unlaunchable request (exit 65).
    pub fn invalid(error: PolicyError) -> Failure {
        Failure {
            code: EXIT_INVALID,
            message: error.to_string(),
        }
    }

    /// A profile with one or more errors (exit 65): each printed as its own `error:` line in
    /// file order, then, when there are several, how many.
    pub fn invalid_profile(errors: agentc_policy::PolicyErrors) -> Failure {
        let mut message = errors
            .errors()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\nerror: ");
        let total = errors.errors().len() + errors.omitted();
        if errors.omitted() > 0 {
            message.push_str(&format!(
                "\nerror: ... and {} more (only the first {} are shown)",
                errors.omitted(),
                errors.errors().len()
            ));
        }
        if total > 1 {
            message.push_str(&format!("\nerror: {total} errors in the profile"));
        }
        Failure {
            code: EXIT_INVALID,
            message,
        }
    }

    /// A launch a backend cannot express (exit 65).
    pub fn unlaunchable(error: impl Display) -> Failure {
        Failure {
            code: EXIT_INVALID,
            message: error.to_string(),
        }
    }

    /// A failure with an explicit exit status.
    pub fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// A usage error (exit 2).
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }
}

/// Reads and validates a profile file.
pub fn load_profile(path: &Path) -> Result<LoadedProfile, Failure> {
    let shown = path.display().to_string();
    let cannot_read = |error: std::io::Error| Failure {
        code: EXIT_NO_INPUT,
        message: format!("{shown}: cannot read the profile: {error}\n  hint: check the path"),
    };
    // Read one byte past the limit at most, so that `/dev/zero` or a huge file costs no more
    // memory than a profile may have; `load` then refuses the oversized text by its size.
    // A profile is a few kilobytes: one read fills it, where growing from empty takes five.
    let mut bytes = Vec::with_capacity(16 * 1024);
    let limit = agentc_policy::MAX_PROFILE_BYTES as u64 + 1;
    std::fs::File::open(path)
        .and_then(|file| {
            std::io::Read::read_to_end(&mut std::io::Read::take(file, limit), &mut bytes)
        })
        .map_err(cannot_read)?;
    if bytes.len() > agentc_policy::MAX_PROFILE_BYTES {
        return Err(Failure {
            code: EXIT_INVALID,
            message: format!(
                "{shown}: the profile is larger than the limit of {} bytes (1 MiB)\n  hint: a profile is a few kilobytes of toml; check that this is the right file",
                agentc_policy::MAX_PROFILE_BYTES
            ),
        });
    }
    let text = String::from_utf8(bytes).map_err(|error| Failure {
        code: EXIT_INVALID,
        message: format!(
            "{shown}: the profile is not UTF-8 text (invalid byte at offset {})\n  hint: save the file as UTF-8",
            error.utf8_error().valid_up_to()
        ),
    })?;
    let loaded = agentc_policy::load(&shown, &text).map_err(Failure::invalid_profile)?;
    log::debug!(
        "read {shown} ({} bytes): profile {}, agent {}",
        text.len(),
        loaded.profile.name,
        loaded.profile.agent.as_str()
    );
    Ok(loaded)
}

/// Every launch a profile supports: its run, one seed per seed mount, its build when it has a
/// build context, and Decant when enabled; `agentc validate` checks them all.
pub fn every_launch(loaded: &LoadedProfile, profile: &Path) -> Vec<LaunchArgs> {
    let launch = |kind: KindArg, seed_target: Option<String>| LaunchArgs {
        profile: profile.to_path_buf(),
        kind,
        workspace: None,
        image: None,
        seed_target,
        agent_args: Vec::new(),
        overrides: Default::default(),
        build_args: Default::default(),
    };
    let profile_fields = &loaded.profile;
    let mut launches = vec![launch(KindArg::Run, None)];
    launches.extend(
        seed_targets(loaded)
            .into_iter()
            .map(|target| launch(KindArg::Seed, Some(target))),
    );
    if profile_fields.image.build_context.is_some() {
        launches.push(launch(KindArg::Build, None));
    }
    if profile_fields.decant.enabled {
        launches.push(launch(KindArg::Decant, None));
    }
    launches
}

/// The targets of a profile's seed mounts (configuration mounts first, then `[[mounts]]`), in
/// profile order: what `agentc seed --all` copies.
pub fn seed_targets(loaded: &LoadedProfile) -> Vec<String> {
    let profile = &loaded.profile;
    profile
        .configuration_mounts
        .iter()
        .chain(&profile.mounts)
        .filter(|mount| mount.kind == MountType::Seed)
        .map(|mount| mount.target.clone())
        .collect()
}

/// Resolves one launch of a loaded profile on this machine, as the profile says (the default
/// [`Instance`]: what `plan`, `render` and `lock` show).
pub fn resolve_launch(loaded: &LoadedProfile, args: &LaunchArgs) -> Result<LaunchSpec, Failure> {
    resolve_instance(loaded, args, Instance::default())
}

/// Resolves one launch of a loaded profile as the Kubernetes rendering needs it: the default
/// instance, with no host user, so that the names the user would be in (the home volume's claim,
/// Decant's volumes) and the spec digest are the same on every machine that renders it.
pub fn resolve_launch_unowned(
    loaded: &LoadedProfile,
    args: &LaunchArgs,
) -> Result<LaunchSpec, Failure> {
    let mut inputs = launch_inputs(loaded, args, Instance::default())?;
    inputs.owner = None;
    if inputs.kind == LaunchKind::Decant {
        inputs.decant_sources = decant_sources(loaded, Path::new(&inputs.profile_dir), None)?;
    }
    resolve_inputs(loaded, &inputs)
}

/// Resolves one launch of a loaded profile on this machine, started as `instance` says
/// (`agentc run --detach`, a copy of `--count`, without a terminal). The spec is final.
pub fn resolve_instance(
    loaded: &LoadedProfile,
    args: &LaunchArgs,
    instance: Instance,
) -> Result<LaunchSpec, Failure> {
    resolve_inputs(loaded, &launch_inputs(loaded, args, instance)?)
}

/// Resolves a launch with inputs gathered by [`launch_inputs`] (`-v` says what it became).
pub fn resolve_inputs(
    loaded: &LoadedProfile,
    inputs: &ResolveInputs,
) -> Result<LaunchSpec, Failure> {
    let spec = agentc_policy::resolve(loaded, inputs, &RealPaths).map_err(Failure::invalid)?;
    log_resolved(&spec);
    Ok(spec)
}

/// What one launch of a loaded profile depends on from this machine.
pub fn launch_inputs(
    loaded: &LoadedProfile,
    args: &LaunchArgs,
    instance: Instance,
) -> Result<ResolveInputs, Failure> {
    launch_inputs_in(loaded, args, instance, absolute_parent(&args.profile)?)
}

/// [`launch_inputs`] of a profile whose relative paths lead from `profile_dir` (a profile
/// given as text, as `agentc serve`'s `create` takes it).
pub fn launch_inputs_in(
    loaded: &LoadedProfile,
    args: &LaunchArgs,
    instance: Instance,
    profile_dir: PathBuf,
) -> Result<ResolveInputs, Failure> {
    let bundled = match args.kind {
        KindArg::Build => Bundled::of(loaded, &args.build_args)?,
        _ => None,
    };
    inputs_with(loaded, args, instance, profile_dir, bundled.as_ref())
}

/// Resolves a build launch of a loaded profile (the default instance) with the bundled build
/// it takes, found once: `agentc build` writes that context and builds from the spec.
pub fn resolve_build(
    loaded: &LoadedProfile,
    args: &LaunchArgs,
) -> Result<(LaunchSpec, Option<Bundled>), Failure> {
    let bundled = Bundled::of(loaded, &args.build_args)?;
    let profile_dir = absolute_parent(&args.profile)?;
    let inputs = inputs_with(
        loaded,
        args,
        Instance::default(),
        profile_dir,
        bundled.as_ref(),
    )?;
    Ok((resolve_inputs(loaded, &inputs)?, bundled))
}

/// [`launch_inputs_in`] with the bundled build of a build launch (`None`: none, or not a
/// build).
fn inputs_with(
    loaded: &LoadedProfile,
    args: &LaunchArgs,
    instance: Instance,
    profile_dir: PathBuf,
    bundled: Option<&Bundled>,
) -> Result<ResolveInputs, Failure> {
    let workspace = workspace_dir(args.workspace.as_deref())?;
    let owner = Some(current_owner());
    let kind = match args.kind {
        KindArg::Run => LaunchKind::Run,
        KindArg::Seed => LaunchKind::Seed,
        KindArg::Build => LaunchKind::Build,
        KindArg::Decant => LaunchKind::Decant,
    };
    let decant_sources = if kind == LaunchKind::Decant {
        decant_sources(loaded, &profile_dir, owner.as_ref())?
    } else {
        Vec::new()
    };
    let env = agentc_environment(&args.overrides)?;
    for (name, value) in &env {
        log::debug!("environment override {name}={value:?}");
    }
    Ok(ResolveInputs {
        kind,
        workspace: path_text(&workspace, "--workspace")?,
        profile_dir: path_text(&profile_dir, "the profile's directory")?,
        home_dir: std::env::var("HOME").unwrap_or_else(|_| "/".to_string()),
        owner,
        image: args.image.clone(),
        seed_target: args.seed_target.clone(),
        agent_args: args.agent_args.clone(),
        env,
        decant_sources,
        instance,
        build: if kind == LaunchKind::Build {
            build_inputs(&args.build_args, bundled)?
        } else {
            BuildInputs::default()
        },
    })
}

/// A build's inputs: `build_args`, and with a `bundled` build the directory of agentc's cache
/// its context is written to ([`Bundled`]), an `AGENT_PACKAGE` naming a file on this machine
/// rewritten to name its copy in the context's `packages/`.
fn build_inputs(
    build_args: &BTreeMap<String, String>,
    bundled: Option<&Bundled>,
) -> Result<BuildInputs, Failure> {
    let mut args = build_args.clone();
    let Some(bundled) = bundled else {
        return Ok(BuildInputs {
            bundled_context: None,
            args,
        });
    };
    if let Some(name) = bundled.package_argument() {
        args.insert(crate::bundled::PACKAGE_ARG.to_string(), name);
    }
    Ok(BuildInputs {
        bundled_context: Some(path_text(&bundled.dir, "agentc's cache directory")?),
        args,
    })
}

/// A host path as a lock writes it (relative to the profile's directory, `~/...`, or absolute:
/// [`agentc_policy::LocalRoots::portable_path`]), on this machine; `None` when the profile's
/// directory cannot be found.
pub fn locked_path(profile: &Path, portable: &str) -> Option<PathBuf> {
    let profile_dir = absolute_parent(profile).ok()?;
    let home = std::env::var("HOME").unwrap_or_else(|_| "/".to_string());
    let path = agentc_policy::resolve_host_path(portable, &home, profile_dir.to_str()?);
    Some(PathBuf::from(path))
}

/// The profile file a launch comes from, for its `io.agentc.profile-file` and
/// `io.agentc.profile-sha256` labels; `None` when it cannot be read again.
pub fn profile_record(profile: &Path) -> Option<ProfileRecord> {
    let path = std::fs::canonicalize(profile).ok()?;
    Some(ProfileRecord {
        sha256: file_sha256(&path)?,
        file: path.to_str()?.to_string(),
    })
}

/// The sha256 (hex) of a file's bytes, or `None` when it cannot be read.
pub fn file_sha256(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(agentc_lifecycle::tree::sha256_hex(&bytes))
}

/// One `--verbose` line saying what a launch resolved to; secrets by name only.
fn log_resolved(spec: &LaunchSpec) {
    if !log::log_enabled!(log::Level::Debug) {
        return;
    }
    let digest = spec.digest().unwrap_or_default();
    match &spec.action {
        Action::Container(container) => {
            let secrets: Vec<&str> = container
                .env
                .iter()
                .filter(|var| matches!(var.value, EnvValue::Secret { .. }))
                .map(|var| var.name.as_str())
                .collect();
            log::debug!(
                "resolved the {} launch: image {}, {} environment entries (secrets by name: {}), {} mounts, spec digest {digest}",
                spec.kind.as_str(),
                container.image,
                container.env.len(),
                if secrets.is_empty() { "none".to_string() } else { secrets.join(", ") },
                container.mounts.len(),
            );
        }
        Action::Build(build) => log::debug!(
            "resolved the build: tag {}, context {}, spec digest {digest}",
            build.tag,
            build.context
        ),
    }
}

/// The override variables the policy reads (`AGENTC_MEM_LIMIT`, ...) only: the policy never
/// sees the rest of the environment, so no secret can reach it, not even one whose name
/// starts with `AGENTC_`. An `AGENTC_*` name a typo away from an override is refused first
/// (by name; its value is never read). `given` (the invocation's own, such as `run
/// --isolation-min`) replaces the environment's value of a variable.
pub fn agentc_environment(
    given: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, Failure> {
    for (name, _) in std::env::vars_os() {
        agentc_policy::overrides::check_variable_name(&name.to_string_lossy())
            .map_err(Failure::invalid)?;
    }
    Ok(agentc_policy::overrides::VARIABLES
        .iter()
        .filter_map(|name| {
            // A value that is not UTF-8 reaches the policy with replacement characters, which
            // no override accepts: an error naming the variable, not a silently dropped value.
            let value = std::env::var_os(name)?.to_string_lossy().into_owned();
            Some((name.to_string(), value))
        })
        .chain(given.clone())
        .collect())
}

/// The user running agentc ([`agentc_engine::owner::current`]).
pub fn current_owner() -> Owner {
    agentc_engine::owner::current()
}

fn workspace_dir(requested: Option<&Path>) -> Result<PathBuf, Failure> {
    let (path, input) = match requested {
        Some(path) => (path.to_path_buf(), "--workspace"),
        None => (
            std::env::current_dir().map_err(|error| {
                Failure::usage(format!("cannot read the current directory: {error}"))
            })?,
            "the current directory",
        ),
    };
    let canonical = std::fs::canonicalize(&path).map_err(|error| {
        Failure::usage(format!(
            "{input} {}: {error}\n  hint: pass an existing directory with --workspace",
            path.display()
        ))
    })?;
    if !canonical.is_dir() {
        return Err(Failure::usage(format!(
            "{input} {} is not a directory\n  hint: pass an existing directory with --workspace",
            path.display()
        )));
    }
    Ok(canonical)
}

fn absolute_parent(profile: &Path) -> Result<PathBuf, Failure> {
    let canonical = std::fs::canonicalize(profile).map_err(|error| Failure {
        code: EXIT_NO_INPUT,
        message: format!("{}: {error}", profile.display()),
    })?;
    Ok(canonical
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/")))
}

fn path_text(path: &Path, what: &str) -> Result<String, Failure> {
    path.to_str().map(str::to_string).ok_or_else(|| {
        Failure::usage(format!(
            "{what} {} is not valid UTF-8\n  hint: docker cannot be given non-UTF-8 paths safely; rename it",
            path.display()
        ))
    })
}

/// Loads Decant's source profiles, `NAME.toml` beside the profile.
fn decant_sources(
    loaded: &LoadedProfile,
    profile_dir: &Path,
    owner: Option<&Owner>,
) -> Result<Vec<DecantSource>, Failure> {
    let mut sources = Vec::new();
    for name in &loaded.profile.decant.source_profiles {
        let path = profile_dir.join(format!("{name}.toml"));
        let source = load_profile(&path)?;
        if source.profile.name != *name {
            return Err(Failure {
                code: EXIT_INVALID,
                message: format!(
                    "{}: decant.source_profiles names {name:?}, but {} holds profile {:?}\n  hint: name each source profile's file after its `name`",
                    loaded.file,
                    path.display(),
                    source.profile.name
                ),
            });
        }
        if let Some(home_volume) = agentc_policy::home_volume_name(&source.profile, owner) {
            sources.push(DecantSource {
                profile: name.clone(),
                agent: source.profile.agent,
                home_volume,
            });
        }
    }
    Ok(sources)
}
