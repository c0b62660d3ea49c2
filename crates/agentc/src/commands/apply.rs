//! `agentc apply` and `agentc rollback`: the deployment of a profile, recorded in its state
//! file under an exclusive lock, the state written last and atomically, so that an
//! interrupted command leaves the previous state whole and can simply be run again.

use std::collections::BTreeMap;
use std::path::Path;

use agentc_lifecycle::plan::{parts, Launch, Part};
use agentc_lifecycle::reference::{retained_tag, short_id, split};
use agentc_lifecycle::state::{seeds_to_copy, Applied, State};
use agentc_policy::{Action, LaunchKind, LoadedProfile};

use crate::cli::{ApplyArgs, BackendArg, RollbackArgs};
use crate::commands::launch;
use crate::context::{self, Failure, EXIT_DOCKER, EXIT_FAILED};
use crate::lifecycle::engine::Engine;
use crate::lifecycle::{files, gather, store};

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or_default()
}

/// The image the run launch runs.
fn run_image(launches: &[Launch]) -> Option<String> {
    launches
        .iter()
        .find_map(|launch| match &launch.spec.action {
            Action::Container(container)
                if matches!(launch.spec.kind, LaunchKind::Run | LaunchKind::Sandbox) =>
            {
                Some(container.image.clone())
            }
            _ => None,
        })
}

/// Makes sure the profile's image is present: builds it, or checks it (pulling with `pull`);
/// an agent preset's own image, when missing, is built from agentc's bundled context (as
/// `agentc build` does). Returns whether it was built.
fn provide_image(
    loaded: &LoadedProfile,
    profile: &Path,
    launches: &[Launch],
    image: &str,
    engine: &mut dyn Engine,
    pull: bool,
) -> Result<bool, Failure> {
    if let Some(build) = launches
        .iter()
        .find(|launch| matches!(launch.spec.action, Action::Build(_)))
    {
        let argv = agentc_backend_cli::render_argv(&build.spec).map_err(Failure::unlaunchable)?;
        let code = agentc_backend_cli::exec::docker::run_foreground(crate::engine(), &argv)
            .map_err(launch::exec_failure)?;
        return built(image, code);
    }
    if engine.image(image)?.is_none() {
        if let Some(code) = super::build::build_missing_preset_image(loaded, profile, image)? {
            return built(image, code);
        }
        if !pull {
            return Err(Failure::new(
                EXIT_DOCKER,
                format!("image {image} is not present\n  hint: `docker pull {image}`, or `agentc apply --pull`"),
            ));
        }
        engine.pull(image)?;
    }
    Ok(false)
}

/// The outcome of `docker build` of `image`: built (`Ok(true)`), or its exit status with
/// nothing recorded.
fn built(image: &str, code: i32) -> Result<bool, Failure> {
    if code != 0 {
        return Err(Failure::new(
            agentc_engine::exit_status(i64::from(code)),
            format!(
                "the build of {image} failed (docker build exited {code}); nothing was recorded"
            ),
        ));
    }
    store::interruption_point("apply:after-build");
    Ok(true)
}

/// The hash of a seed's source now (a file's contents or a directory's tree).
fn source_hash(source: &str) -> Result<String, Failure> {
    let path = Path::new(source);
    if path.is_dir() {
        files::tree_hash(path)
    } else {
        files::file_sha256(path)
    }
}

/// Runs `agentc apply`.
pub fn apply(args: ApplyArgs) -> Result<u8, Failure> {
    let loaded = context::load_profile(&args.profile)?;
    let launches = gather::launches(&loaded, &args.profile, None, &BTreeMap::new())?;
    let name = loaded.profile.name.clone();
    let image = run_image(&launches).ok_or_else(|| {
        Failure::unlaunchable(format!("{}: the profile has no run launch", loaded.file))
    })?;
    let (state_path, _guard, mut state) = store::locked_state(&name)?;
    let mut engine = crate::context::lifecycle_engine(args.backend)?;
    let retained = retained_tag(&image, &name);

    retain_current(&state, engine.as_mut(), retained.as_deref())?;
    let built = provide_image(
        &loaded,
        &args.profile,
        &launches,
        &image,
        engine.as_mut(),
        args.pull,
    )?;
    let image_id = image_id_after_build(engine.as_mut(), &image)?;
    let (sources, home_volume) = copy_seeds(&launches, &state, engine.as_mut(), args.backend)?;

    let deployment = state.record_apply(Applied {
        unix_seconds: now(),
        agentc_version: gather::VERSION.to_string(),
        profile_file: std::fs::canonicalize(&args.profile)
            .unwrap_or_else(|_| args.profile.clone())
            .display()
            .to_string(),
        image: image.clone(),
        image_id: image_id.clone(),
        built,
        retained_tag: retained.clone(),
        spec_digests: spec_digests(&launches),
        seeds: sources,
        home_volume,
    });
    let number = deployment.number;
    let previous = deployment.previous_image_id.clone();
    // The retained tag keeps what a rollback returns to.
    if let (Some(previous), Some(tag)) = (&previous, &retained) {
        if engine.image(previous)?.is_some() {
            engine.tag(previous, tag)?;
        }
    }
    store::interruption_point("apply:before-state");
    store::write_atomic(&state_path, &state.to_toml())?;
    println!(
        "applied profile {name:?}: deployment {number}, {image} is image {}{}",
        short_id(&image_id),
        if built { " (built)" } else { "" }
    );
    print_rollback_hint(previous.as_deref(), retained.as_deref(), &args.profile);
    println!("state: {}", state_path.display());
    Ok(0)
}

/// Prints which image `agentc rollback` returns to (`previous`, kept as `retained`), or that
/// there is none yet.
fn print_rollback_hint(previous: Option<&str>, retained: Option<&str>, profile: &Path) {
    match (previous, retained) {
        (Some(previous), Some(tag)) => println!(
            "previous image {} kept as {tag}: `agentc rollback {}` returns to it",
            short_id(previous),
            profile.display()
        ),
        _ => println!("no previous image to roll back to yet"),
    }
}

/// Keeps the current deployment's image under the retained tag before the build moves the
/// image's tag off it; says so on stderr when that image is gone.
fn retain_current(
    state: &State,
    engine: &mut dyn Engine,
    retained: Option<&str>,
) -> Result<(), Failure> {
    if let (Some(current), Some(tag)) = (state.image_to_retain().map(str::to_string), retained) {
        if engine.image(&current)?.is_some() {
            engine.tag(&current, tag)?;
        } else {
            eprintln!(
                "agentc: the image of the last apply ({}) is gone; this apply cannot be rolled back to it",
                short_id(&current)
            );
        }
    }
    Ok(())
}

/// The ID of `image` once it is provided (built, checked or pulled).
fn image_id_after_build(engine: &mut dyn Engine, image: &str) -> Result<String, Failure> {
    Ok(engine
        .image(image)?
        .ok_or_else(|| {
            Failure::new(
                EXIT_DOCKER,
                format!("image {image} is not present after the build"),
            )
        })?
        .id)
}

/// Copies the seeds that need it: new ones, changed ones, and all of them when the home volume
/// is gone. Returns the hash of each seed's source by target, and the home volume.
fn copy_seeds(
    launches: &[Launch],
    state: &State,
    engine: &mut dyn Engine,
    backend: BackendArg,
) -> Result<(BTreeMap<String, String>, Option<String>), Failure> {
    let mut sources = BTreeMap::new();
    let mut home_volume = None;
    let mut seed_specs = BTreeMap::new();
    for launch in launches {
        for part in parts(&launch.spec) {
            if let Part::Seed {
                source,
                target,
                volume,
            } = part
            {
                sources.insert(target.clone(), source_hash(&source)?);
                home_volume = Some(volume);
                seed_specs.insert(target, &launch.spec);
            }
        }
    }
    let volume_exists = match &home_volume {
        Some(volume) => engine.volume_exists(volume)?,
        None => false,
    };
    let to_copy = seeds_to_copy(
        state.current(),
        &sources,
        home_volume.as_deref(),
        volume_exists,
    );
    for (target, spec) in &seed_specs {
        if !to_copy.contains(target) {
            println!("seed {target}: unchanged since the last apply");
            continue;
        }
        let code = launch::execute(spec, backend, false)?;
        if code != 0 {
            return Err(Failure::new(
                code,
                format!("seed {target}: the seed helper failed (exit {code}); its message is above; nothing was recorded"),
            ));
        }
        println!("seeded {target}");
        store::interruption_point("apply:after-seed");
    }
    Ok((sources, home_volume))
}

/// The digest of each launch's spec, by the launch's label.
fn spec_digests(launches: &[Launch]) -> BTreeMap<String, String> {
    launches
        .iter()
        .map(|launch| {
            (
                launch.label.clone(),
                launch.spec.digest().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Runs `agentc rollback`.
pub fn rollback(args: RollbackArgs) -> Result<u8, Failure> {
    let loaded = context::load_profile(&args.profile)?;
    let name = loaded.profile.name.clone();
    let (state_path, _guard, mut state) = store::locked_state(&name)?;
    let shown = state_path.display().to_string();
    let plan = state
        .rollback_plan(&shown)
        .map_err(|error| Failure::new(EXIT_FAILED, error.to_string()))?;
    if split(&plan.image).digest.is_some() {
        return Err(Failure::new(
            EXIT_FAILED,
            format!("{shown}: {} is pinned by digest and cannot be moved\n  hint: change the profile's image reference instead", plan.image),
        ));
    }
    let mut engine = crate::context::lifecycle_engine(args.backend)?;
    if engine.image(&plan.to)?.is_none() {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "{shown}: the previous image {} is gone, so there is nothing to roll back to\n  hint: keep the tag {} (docker image prune removes untagged images)",
                short_id(&plan.to),
                plan.retained_tag.as_deref().unwrap_or("REF-agentc-previous-PROFILE")
            ),
        ));
    }
    if let Some(tag) = &plan.retained_tag {
        if engine.image(&plan.from)?.is_some() {
            engine.tag(&plan.from, tag)?;
        }
    }
    engine.tag(&plan.to, &plan.image)?;
    store::interruption_point("rollback:after-tag");
    state.record_rollback(&plan, now(), gather::VERSION);
    store::write_atomic(&state_path, &state.to_toml())?;
    let number = state.current().map_or(0, |current| current.number);
    println!(
        "rolled back profile {name:?}: deployment {number}, {} is image {} again",
        plan.image,
        short_id(&plan.to)
    );
    if let Some(tag) = &plan.retained_tag {
        println!(
            "the image it replaced ({}) is kept as {tag}",
            short_id(&plan.from)
        );
    }
    println!("the home volume's contents are not rolled back; running containers keep their image");
    if store::lock_file(&args.profile).exists() {
        println!(
            "the lock records the other image: `--locked` launches refuse until `agentc lock {}` (after review)",
            args.profile.display()
        );
    }
    Ok(0)
}
