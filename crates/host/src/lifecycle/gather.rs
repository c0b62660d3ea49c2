//! A profile's launches as the lifecycle sees them, and the lock of the machine now: what
//! `agentc lock` writes and what `--locked` compares with the lock file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentc_lifecycle::lock::{compare, files_to_hash, images_to_pin, Lock, LockInputs};
use agentc_lifecycle::plan::Launch;
use agentc_policy::{Instance, LoadedProfile, LocalRoots, RealPaths};

use crate::lifecycle::engine::Engine;
use crate::lifecycle::{files, store};
use crate::{Failure, EXIT_DOCKER, EXIT_INVALID};

/// agentc's version, as locks and states record it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Every launch of a profile (run, seeds, build, Decant), resolved for `workspace`, with its
/// label and findings.
pub fn launches(
    loaded: &LoadedProfile,
    profile: &Path,
    workspace: Option<&Path>,
    overrides: &BTreeMap<String, String>,
) -> Result<Vec<Launch>, Failure> {
    let mut launches = Vec::new();
    for mut args in crate::every_launch(loaded, profile) {
        args.workspace = workspace.map(Path::to_path_buf);
        args.overrides = overrides.clone();
        let inputs = crate::launch_inputs(loaded, &args, Instance::default())?;
        let spec = crate::resolve_inputs(loaded, &inputs)?;
        let kind = args.kind;
        launches.push(Launch {
            label: agentc_lifecycle::plan::label(kind, args.seed_target.as_deref()),
            findings: agentc_policy::findings(loaded, &spec),
            spec,
            roots: LocalRoots::of(&inputs, &RealPaths),
        });
    }
    Ok(launches)
}

/// The lock of the machine now. Images the engine lacks are left out (a drift for
/// `--locked`); `agentc lock` refuses them first with [`require_images`].
pub fn current_lock(
    loaded: &LoadedProfile,
    launches: &[Launch],
    overrides: &BTreeMap<String, String>,
    engine: &mut dyn Engine,
) -> Result<(Lock, Vec<String>), Failure> {
    let mut images = BTreeMap::new();
    let mut missing = Vec::new();
    for reference in images_to_pin(launches) {
        match engine.image(&reference)? {
            Some(facts) => {
                images.insert(reference, facts);
            }
            None => missing.push(reference),
        }
    }
    let files = files_to_hash(launches)
        .into_iter()
        .map(files::lock_entry)
        .collect::<Result<Vec<_>, _>>()?;
    let environment = crate::agentc_environment(overrides)?;
    let lock = Lock::current(LockInputs {
        agentc_version: VERSION,
        profile: &loaded.profile,
        launches,
        environment: &environment,
        images: &images,
        files,
    });
    Ok((lock, missing))
}

/// Refuses to lock images the engine does not have (exit 125), naming each with the command
/// that provides it: `agentc apply` for a profile's build, `agentc build` for a preset's own
/// image (agentc's bundled context), else a pull or a build of one's own.
pub fn require_images(
    missing: &[String],
    launches: &[Launch],
    loaded: &LoadedProfile,
    profile: &Path,
) -> Result<(), Failure> {
    if missing.is_empty() {
        return Ok(());
    }
    let builds: Vec<&str> = launches
        .iter()
        .filter_map(|launch| match &launch.spec.action {
            agentc_policy::Action::Build(build) => Some(build.tag.as_str()),
            agentc_policy::Action::Container(_) => None,
        })
        .collect();
    let lines: Vec<String> = missing
        .iter()
        .map(|reference| {
            let hint = if builds.contains(&reference.as_str()) {
                "`agentc apply PROFILE` builds it".to_string()
            } else if crate::bundled::is_bundled_image(loaded, reference) {
                format!(
                    "`agentc build {}` builds it from agentc's bundled {} image",
                    profile.display(),
                    loaded.profile.agent.as_str()
                )
            } else {
                "`docker pull` it (or `agentc run --pull`), or build it".to_string()
            };
            // One error line per image, each with its own hint.
            agentc_policy::hint::with_hint(
                format_args!("image {reference} is not present, so it cannot be locked"),
                Some(&hint),
            )
        })
        .collect();
    Err(Failure::new(EXIT_DOCKER, lines.join("\nerror: ")))
}

/// The lock file of a profile, read; `Ok(None)` when there is none.
pub fn read_lock(profile: &Path) -> Result<Option<(PathBuf, Lock)>, Failure> {
    let path = store::lock_file(profile);
    let Some(text) = store::read_text(&path)? else {
        return Ok(None);
    };
    let lock = Lock::parse(&path.display().to_string(), &text)
        .map_err(|error| Failure::from_hinted(EXIT_INVALID, &error))?;
    Ok(Some((path, lock)))
}

/// Which workspace a `--locked` check resolves the launches with.
#[derive(Debug, Clone, Copy)]
pub enum Workspace<'a> {
    /// The one given (`--workspace`, else the current directory): it is part of the launch.
    Given(Option<&'a Path>),
    /// The lock's own: the command launches nothing that mounts it (`seed`).
    Locked,
}

/// `--locked`: compares the profile's lock file with the machine now and refuses any drift
/// (exit 65), naming each field with its locked and current values, before anything is
/// created.
pub fn check_locked(
    loaded: &LoadedProfile,
    profile: &Path,
    workspace: Workspace<'_>,
    overrides: &BTreeMap<String, String>,
    engine: &mut dyn Engine,
) -> Result<(), Failure> {
    let Some((path, locked)) = read_lock(profile)? else {
        return Err(Failure::new(
            EXIT_INVALID,
            format!(
                "{}: no lock file, so nothing can be launched --locked",
                store::lock_file(profile).display(),
            ),
        )
        .hinted(format!(
            "review the profile, then `agentc lock {}` writes it",
            profile.display()
        )));
    };
    let workspace = match workspace {
        Workspace::Given(given) => given.map(Path::to_path_buf),
        Workspace::Locked => locked
            .workspace
            .as_deref()
            .and_then(|workspace| crate::locked_path(profile, workspace))
            .filter(|dir| dir.is_dir()),
    };
    let launches = launches(loaded, profile, workspace.as_deref(), overrides)?;
    let (current, _) = current_lock(loaded, &launches, overrides, engine)?;
    let drifts = compare(&locked, &current);
    if drifts.is_empty() {
        log::debug!("{}: no drift", path.display());
        return Ok(());
    }
    Err(drift_failure(&path, &drifts))
}

/// Drift as a failure (exit 65): one `error:` line per field.
pub fn drift_failure(path: &Path, drifts: &[agentc_lifecycle::lock::Drift]) -> Failure {
    let mut lines: Vec<String> = drifts
        .iter()
        .map(|drift| format!("{}: drift: {drift}", path.display()))
        .collect();
    lines.push(format!(
        "{}: {} field{} differ from the lock; nothing was launched",
        path.display(),
        drifts.len(),
        if drifts.len() == 1 { "" } else { "s" }
    ));
    Failure::new(EXIT_INVALID, lines.join("\nerror: "))
        .hinted("review the change, then `agentc lock PROFILE` writes the lock again")
}

/// What `run`, `seed` and `verify` do with `--locked`: nothing without it; with it, refuse
/// `--image` (the lock names the image) and any drift, through the launch's backend.
pub fn refuse_unlocked(
    locked: bool,
    loaded: &LoadedProfile,
    profile: &Path,
    workspace: Workspace<'_>,
    image: Option<&str>,
    overrides: &BTreeMap<String, String>,
    connect: impl FnOnce() -> Result<Box<dyn Engine>, Failure>,
) -> Result<(), Failure> {
    if !locked {
        return Ok(());
    }
    if image.is_some() {
        return Err(Failure::usage(
            "--image cannot be combined with --locked: the lock names the image each launch runs",
        )
        .hinted("change the profile's [image] ref, review it, and `agentc lock` it"));
    }
    let mut engine = connect()?;
    check_locked(loaded, profile, workspace, overrides, engine.as_mut())
}
