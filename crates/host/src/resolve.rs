//! What a launch depends on from this machine, gathered into [`ResolveInputs`]: the
//! workspace, the user, the `AGENTC_*` environment, Decant's source profiles and a build's
//! bundled context; and the launch resolved from them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentc_policy::{
    Action, BuildInputs, ContainerSpec, DecantSource, EnvValue, Instance, LaunchKind, LaunchSpec,
    LoadedProfile, Owner, ProfileRecord, RealPaths, ResolveInputs,
};

use crate::bundled::Bundled;
use crate::failure::{Failure, EXIT_INVALID, EXIT_NO_INPUT};
use crate::request::{load_profile, LaunchRequest};

/// Resolves one launch of a loaded profile on this machine, as the profile says (the default
/// [`Instance`]: what `plan`, `render` and `lock` show).
pub fn resolve_launch(
    loaded: &LoadedProfile,
    request: &LaunchRequest,
) -> Result<LaunchSpec, Failure> {
    resolve_instance(loaded, request, Instance::default())
}

/// Resolves one launch of a loaded profile as the Kubernetes rendering needs it: the default
/// instance, with no host user, so that the names the user would be in (the home volume's claim,
/// Decant's volumes) and the spec digest are the same on every machine that renders it.
pub fn resolve_launch_unowned(
    loaded: &LoadedProfile,
    request: &LaunchRequest,
) -> Result<LaunchSpec, Failure> {
    let mut inputs = launch_inputs(loaded, request, Instance::default())?;
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
    request: &LaunchRequest,
    instance: Instance,
) -> Result<LaunchSpec, Failure> {
    resolve_inputs(loaded, &launch_inputs(loaded, request, instance)?)
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
    request: &LaunchRequest,
    instance: Instance,
) -> Result<ResolveInputs, Failure> {
    launch_inputs_in(
        loaded,
        request,
        instance,
        absolute_parent(&request.profile)?,
    )
}

/// [`launch_inputs`] of a profile whose relative paths lead from `profile_dir` (a profile
/// given as text, as `agentc serve`'s `create` takes it).
pub fn launch_inputs_in(
    loaded: &LoadedProfile,
    request: &LaunchRequest,
    instance: Instance,
    profile_dir: PathBuf,
) -> Result<ResolveInputs, Failure> {
    let bundled = match request.kind {
        LaunchKind::Build => Bundled::of(loaded, &request.build_args)?,
        _ => None,
    };
    inputs_with(loaded, request, instance, profile_dir, bundled.as_ref())
}

/// Resolves a build launch of a loaded profile (the default instance) with the bundled build
/// it takes, found once: `agentc build` writes that context and builds from the spec.
pub fn resolve_build(
    loaded: &LoadedProfile,
    request: &LaunchRequest,
) -> Result<(LaunchSpec, Option<Bundled>), Failure> {
    let bundled = Bundled::of(loaded, &request.build_args)?;
    let profile_dir = absolute_parent(&request.profile)?;
    let inputs = inputs_with(
        loaded,
        request,
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
    request: &LaunchRequest,
    instance: Instance,
    profile_dir: PathBuf,
    bundled: Option<&Bundled>,
) -> Result<ResolveInputs, Failure> {
    let workspace = workspace_dir(request.workspace.as_deref())?;
    let owner = Some(current_owner());
    // A custom agent's run becomes its sandbox in resolve; asked for by name, it is that run.
    let kind = match request.kind {
        LaunchKind::Sandbox => LaunchKind::Run,
        kind => kind,
    };
    let decant_sources = if kind == LaunchKind::Decant {
        decant_sources(loaded, &profile_dir, owner.as_ref())?
    } else {
        Vec::new()
    };
    let env = agentc_environment(&request.overrides)?;
    for (name, value) in &env {
        log::debug!("environment override {name}={value:?}");
    }
    Ok(ResolveInputs {
        kind,
        workspace: path_text(&workspace, "--workspace")?,
        profile_dir: path_text(&profile_dir, "the profile's directory")?,
        home_dir: std::env::var("HOME").unwrap_or_else(|_| "/".to_string()),
        owner,
        image: request.image.clone(),
        seed_target: request.seed_target.clone(),
        agent_args: request.agent_args.clone(),
        env,
        decant_sources,
        instance,
        build: if kind == LaunchKind::Build {
            build_inputs(&request.build_args, bundled)?
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
        Failure::usage(format!("{input} {}: {error}", path.display()))
            .hinted("pass an existing directory with --workspace")
    })?;
    if !canonical.is_dir() {
        return Err(
            Failure::usage(format!("{input} {} is not a directory", path.display()))
                .hinted("pass an existing directory with --workspace"),
        );
    }
    Ok(canonical)
}

fn absolute_parent(profile: &Path) -> Result<PathBuf, Failure> {
    let canonical = std::fs::canonicalize(profile).map_err(|error| Failure {
        code: EXIT_NO_INPUT,
        message: format!("{}: {error}", profile.display()),
        hint: None,
    })?;
    Ok(canonical
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/")))
}

fn path_text(path: &Path, what: &str) -> Result<String, Failure> {
    path.to_str().map(str::to_string).ok_or_else(|| {
        Failure::usage(format!("{what} {} is not valid UTF-8", path.display()))
            .hinted("docker cannot be given non-UTF-8 paths safely; rename it")
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
                    "{}: decant.source_profiles names {name:?}, but {} holds profile {:?}",
                    loaded.file,
                    path.display(),
                    source.profile.name
                ),
                hint: Some("name each source profile's file after its `name`".to_string()),
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

/// The container launch of a spec; a build is refused (exit 65).
pub fn container_of(spec: &LaunchSpec) -> Result<&ContainerSpec, Failure> {
    match &spec.action {
        Action::Container(container) => Ok(container),
        Action::Build(_) => Err(Failure::new(
            EXIT_INVALID,
            format!(
                "profile {:?}: a {} launch builds an image and starts no container",
                spec.profile,
                spec.kind.as_str()
            ),
        )
        .hinted("use `agentc build`")),
    }
}
