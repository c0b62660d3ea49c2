//! `agentc apply` and `agentc rollback`, for the command line and library callers alike: the
//! deployment of a profile ([`Apply`]: its image kept, built or pulled, its seeds copied when
//! they need it) and the return to the image before it ([`Rollback`]), each recorded in the
//! profile's state file under an exclusive lock ([`store::locked_state`]), the state written
//! last and atomically, so that an interrupted command leaves the previous state whole and can
//! simply be run again.
//!
//! Both run on a [`Deployer`]: the lifecycle's engine queries ([`Engine`], connected at first
//! use, after the state's lock is held), the build of an image and the launch of a seed's
//! helper. [`HostDeployer`] is this machine's: the caller's [`Launcher`] (its engine and
//! environment) through the backend it chooses. What an apply says as it goes are
//! [`ApplyEvent`]s; what it recorded comes back as an [`ApplyReport`] (a [`RollbackReport`]
//! for a rollback), whose [`Display`](std::fmt::Display) is what the command prints last.
//!
//! ```no_run
//! use agentc_egress::image::ProxyExecutable;
//! use agentc_host::backend::BackendChoice;
//! use agentc_host::launch::Launcher;
//! use agentc_host::lifecycle::apply::{Apply, ApplyEvent, HostDeployer, Rollback};
//!
//! let env = agentc_host::backend::process_env();
//! let launcher = Launcher {
//!     engine: agentc_engine::Engine::Docker,
//!     proxy: ProxyExecutable::locate(&env).ok_or("no agentc on PATH")?,
//!     env,
//!     terminal: false,
//!     // The leftovers of killed launches reaped on the way: logged.
//!     reaped: Default::default(),
//! };
//! let mut deployer = HostDeployer::new(launcher, BackendChoice::Auto);
//! let mut log = |event: ApplyEvent<'_>| eprintln!("{event:?}");
//! let apply = Apply { profile: "box.toml".into(), pull: true, events: &mut log };
//! let applied = apply.run(&mut deployer)?;
//! println!("deployment {} is image {}", applied.number, applied.image_id);
//! let back = Rollback { profile: "box.toml".into() }.run(&mut deployer)?;
//! println!("{back}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentc_lifecycle::plan::{parts, Launch, Part};
use agentc_lifecycle::reference::{retained_tag, short_id, split};
use agentc_lifecycle::state::{seeds_to_copy, Applied, State};
use agentc_policy::{Action, Hint, LaunchKind, LaunchSpec, LoadedProfile};

use crate::backend::{self, BackendChoice};
use crate::build::{build_preset_image, BuildEvent};
use crate::launch::{Launcher, Outcome, StartedSandbox};
use crate::lifecycle::engine::{connect, Engine};
use crate::lifecycle::{files, gather, store};
use crate::{load_profile, Failure, EXIT_DOCKER, EXIT_FAILED};

/// What an apply says as it goes, in order.
#[derive(Debug)]
pub enum ApplyEvent<'a> {
    /// A line for the caller's log: the last apply's image gone, the image's pull and its
    /// progress, what a build or a seed's launch says (the context built from, the runtime
    /// chosen, an abnormal exit).
    Note(&'a str),
    /// A line for the caller's log with what to do about it as its hint: why a bundled build
    /// failed, a seed's launch killed for memory.
    Hinted(&'a Hint<String>),
    /// The preset's own image was built from agentc's bundled context (`built TAG`).
    Built(&'a str),
    /// A seed's helper started detached, and where it can be reached.
    Started(&'a StartedSandbox),
    /// The seed of this target is unchanged since the last apply: not copied again.
    SeedUnchanged(&'a str),
    /// The seed of this target was copied into the home volume.
    Seeded(&'a str),
}

/// Where apply and rollback run: the engine's queries, the builds and the seeds' launches.
pub trait Deployer {
    /// The lifecycle's engine queries, connected at the first call.
    fn engine(&mut self) -> Result<&mut dyn Engine, Failure>;
    /// Runs the profile's build launch `spec` in the foreground: `docker build`'s exit code.
    fn build(&mut self, spec: &LaunchSpec) -> Result<i32, Failure>;
    /// Builds `image` when it is the preset's own image of `loaded` (from agentc's bundled
    /// context): `docker build`'s exit code, or `None` when it is not the preset's.
    fn build_preset(
        &mut self,
        loaded: &LoadedProfile,
        profile: &Path,
        image: &str,
        events: &mut (dyn FnMut(ApplyEvent<'_>) + Send),
    ) -> Result<Option<i32>, Failure>;
    /// Launches the seed helper `spec` (attached, as `agentc run` launches it): its exit
    /// status.
    fn seed(
        &mut self,
        spec: &LaunchSpec,
        events: &mut (dyn FnMut(ApplyEvent<'_>) + Send),
    ) -> Result<u8, Failure>;
}

/// This machine's [`Deployer`]: the launcher's engine through `backend` (builds always through
/// the engine's command line), connected at first use.
pub struct HostDeployer {
    launcher: Launcher,
    backend: BackendChoice,
    engine: Option<Box<dyn Engine>>,
}

impl HostDeployer {
    /// The deployer of `launcher`'s engine, asked through `backend`.
    pub fn new(launcher: Launcher, backend: BackendChoice) -> HostDeployer {
        HostDeployer {
            launcher,
            backend,
            engine: None,
        }
    }
}

impl Deployer for HostDeployer {
    fn engine(&mut self) -> Result<&mut dyn Engine, Failure> {
        let engine = match self.engine.take() {
            Some(engine) => engine,
            None => connect(&self.launcher, self.backend)?,
        };
        Ok(self.engine.insert(engine).as_mut())
    }

    fn build(&mut self, spec: &LaunchSpec) -> Result<i32, Failure> {
        let argv = agentc_backend_cli::render_argv(spec)
            .map_err(|error| Failure::from_hinted(crate::failure::EXIT_INVALID, &error))?;
        agentc_backend_cli::exec::docker::run_foreground(
            self.launcher.engine,
            &self.launcher.env,
            &argv,
        )
        .map_err(backend::exec_failure)
    }

    fn build_preset(
        &mut self,
        loaded: &LoadedProfile,
        profile: &Path,
        image: &str,
        events: &mut (dyn FnMut(ApplyEvent<'_>) + Send),
    ) -> Result<Option<i32>, Failure> {
        let mut say = |event: BuildEvent<'_>| match event {
            BuildEvent::Note(line) => events(ApplyEvent::Note(line)),
            BuildEvent::Failed(failed) => events(ApplyEvent::Hinted(failed)),
            BuildEvent::Built(tag) => events(ApplyEvent::Built(tag)),
        };
        build_preset_image(
            self.launcher.engine,
            &self.launcher.env,
            loaded,
            profile,
            image,
            &mut say,
        )
    }

    fn seed(
        &mut self,
        spec: &LaunchSpec,
        events: &mut (dyn FnMut(ApplyEvent<'_>) + Send),
    ) -> Result<u8, Failure> {
        let mut notify = |line: &str| events(ApplyEvent::Note(line));
        let outcome = self
            .launcher
            .launch_resolved(spec, self.backend, false, &mut notify)?;
        match &outcome {
            Outcome::Started(started) => events(ApplyEvent::Started(started)),
            Outcome::Exited {
                explanation: Some(explanation),
                ..
            } => events(ApplyEvent::Hinted(explanation)),
            Outcome::Exited { .. } => {}
        }
        Ok(outcome.status())
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or_default()
}

/// `agentc apply`: the profile's image provided (built, checked or pulled; the current
/// deployment's image kept under the retained tag first), its seeds copied when they need it,
/// and the deployment recorded in its state, each event said to `events` as it happens.
pub struct Apply<'a> {
    /// The profile file.
    pub profile: PathBuf,
    /// Pull a profile image the engine lacks (when the profile does not build it).
    pub pull: bool,
    /// Where each event goes.
    pub events: &'a mut (dyn FnMut(ApplyEvent<'_>) + Send),
}

/// What an apply recorded; its [`Display`](std::fmt::Display) is what `agentc apply` prints
/// last: the deployment, the image a rollback returns to (or that there is none yet), and the
/// state file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyReport {
    /// The profile's name.
    pub name: String,
    /// The profile file, as asked for.
    pub profile: PathBuf,
    /// The deployment's number.
    pub number: u64,
    /// The image reference deployed.
    pub image: String,
    /// The ID it names now.
    pub image_id: String,
    /// Whether this apply built it.
    pub built: bool,
    /// The previous deployment's image ID, which a rollback returns to.
    pub previous: Option<String>,
    /// The tag that keeps it.
    pub retained_tag: Option<String>,
    /// The state file written.
    pub state_file: PathBuf,
}

impl std::fmt::Display for ApplyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "applied profile {:?}: deployment {}, {} is image {}{}",
            self.name,
            self.number,
            self.image,
            short_id(&self.image_id),
            if self.built { " (built)" } else { "" }
        )?;
        match (&self.previous, &self.retained_tag) {
            (Some(previous), Some(tag)) => writeln!(
                f,
                "previous image {} kept as {tag}: `agentc rollback {}` returns to it",
                short_id(previous),
                self.profile.display()
            )?,
            _ => writeln!(f, "no previous image to roll back to yet")?,
        }
        write!(f, "state: {}", self.state_file.display())
    }
}

/// A profile read for its deployment: the profile, its launches and the image its run runs.
struct Deploying {
    loaded: LoadedProfile,
    launches: Vec<Launch>,
    image: String,
}

impl Deploying {
    fn read(profile: &Path) -> Result<Deploying, Failure> {
        let loaded = load_profile(profile)?;
        let launches = gather::launches(&loaded, profile, None, &BTreeMap::new())?;
        let image = run_image(&launches).ok_or_else(|| {
            Failure::unlaunchable(Hint::none(format!(
                "{}: the profile has no run launch",
                loaded.file
            )))
        })?;
        Ok(Deploying {
            loaded,
            launches,
            image,
        })
    }
}

impl Apply<'_> {
    /// Applies the profile on `deployer`, under the lock of its state.
    pub fn run(self, deployer: &mut dyn Deployer) -> Result<ApplyReport, Failure> {
        let deploying = Deploying::read(&self.profile)?;
        let (state_path, _guard, state) = store::locked_state(&deploying.loaded.profile.name)?;
        self.locked(deploying, state_path, state, deployer)
    }

    /// The apply once the state is read under its lock.
    fn locked(
        self,
        deploying: Deploying,
        state_path: PathBuf,
        mut state: State,
        deployer: &mut dyn Deployer,
    ) -> Result<ApplyReport, Failure> {
        let Deploying {
            loaded,
            launches,
            image,
        } = deploying;
        let name = loaded.profile.name.clone();
        let retained = retained_tag(&image, &name);
        retain_current(&state, deployer.engine()?, retained.as_deref(), self.events)?;
        let built = provide_image(
            &loaded,
            &self.profile,
            &launches,
            &image,
            deployer,
            self.pull,
            self.events,
        )?;
        let image_id = image_id_after_build(deployer.engine()?, &image)?;
        let (sources, home_volume) = copy_seeds(&launches, &state, deployer, self.events)?;

        let deployment = state.record_apply(Applied {
            unix_seconds: now(),
            agentc_version: gather::VERSION.to_string(),
            profile_file: std::fs::canonicalize(&self.profile)
                .unwrap_or_else(|_| self.profile.clone())
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
            let engine = deployer.engine()?;
            if engine.image(previous)?.is_some() {
                engine.tag(previous, tag)?;
            }
        }
        store::interruption_point("apply:before-state");
        store::write_atomic(&state_path, &state.to_toml())?;
        Ok(ApplyReport {
            name,
            profile: self.profile,
            number,
            image,
            image_id,
            built,
            previous,
            retained_tag: retained,
            state_file: state_path,
        })
    }
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
    deployer: &mut dyn Deployer,
    pull: bool,
    events: &mut (dyn FnMut(ApplyEvent<'_>) + Send),
) -> Result<bool, Failure> {
    if let Some(build) = launches
        .iter()
        .find(|launch| matches!(launch.spec.action, Action::Build(_)))
    {
        let code = deployer.build(&build.spec)?;
        return built(image, code);
    }
    if deployer.engine()?.image(image)?.is_none() {
        if let Some(code) = deployer.build_preset(loaded, profile, image, events)? {
            return built(image, code);
        }
        if !pull {
            return Err(
                Failure::new(EXIT_DOCKER, format!("image {image} is not present"))
                    .hinted(format!("`docker pull {image}`, or `agentc apply --pull`")),
            );
        }
        deployer
            .engine()?
            .pull(image, &mut |line| events(ApplyEvent::Note(line)))?;
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

/// Keeps the current deployment's image under the retained tag before the build moves the
/// image's tag off it; says so when that image is gone.
fn retain_current(
    state: &State,
    engine: &mut dyn Engine,
    retained: Option<&str>,
    events: &mut (dyn FnMut(ApplyEvent<'_>) + Send),
) -> Result<(), Failure> {
    if let (Some(current), Some(tag)) = (state.image_to_retain().map(str::to_string), retained) {
        if engine.image(&current)?.is_some() {
            engine.tag(&current, tag)?;
        } else {
            events(ApplyEvent::Note(&format!(
                "the image of the last apply ({}) is gone; this apply cannot be rolled back to it",
                short_id(&current)
            )));
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
    deployer: &mut dyn Deployer,
    events: &mut (dyn FnMut(ApplyEvent<'_>) + Send),
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
        Some(volume) => deployer.engine()?.volume_exists(volume)?,
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
            events(ApplyEvent::SeedUnchanged(target));
            continue;
        }
        let code = deployer.seed(spec, events)?;
        if code != 0 {
            return Err(Failure::new(
                code,
                format!("seed {target}: the seed helper failed (exit {code}); its message is above; nothing was recorded"),
            ));
        }
        events(ApplyEvent::Seeded(target));
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

/// `agentc rollback`: the profile's image reference moved back to the previous deployment's
/// image (the one it replaced kept under the retained tag), recorded in its state.
pub struct Rollback {
    /// The profile file.
    pub profile: PathBuf,
}

/// What a rollback recorded; its [`Display`](std::fmt::Display) is what `agentc rollback`
/// prints: the deployment, the image kept, what is not rolled back, and a lock's refusal to
/// come.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollbackReport {
    /// The profile's name.
    pub name: String,
    /// The profile file, as asked for.
    pub profile: PathBuf,
    /// The deployment's number now.
    pub number: u64,
    /// The image reference moved.
    pub image: String,
    /// The image ID it names again.
    pub to: String,
    /// The image ID it named.
    pub from: String,
    /// The tag that keeps `from`.
    pub retained_tag: Option<String>,
    /// Whether the profile has a lock file (which records the other image).
    pub locked: bool,
}

impl std::fmt::Display for RollbackReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "rolled back profile {:?}: deployment {}, {} is image {} again",
            self.name,
            self.number,
            self.image,
            short_id(&self.to)
        )?;
        if let Some(tag) = &self.retained_tag {
            writeln!(
                f,
                "the image it replaced ({}) is kept as {tag}",
                short_id(&self.from)
            )?;
        }
        write!(
            f,
            "the home volume's contents are not rolled back; running containers keep their image"
        )?;
        if self.locked {
            write!(
                f,
                "\nthe lock records the other image: `--locked` launches refuse until `agentc lock {}` (after review)",
                self.profile.display()
            )?;
        }
        Ok(())
    }
}

impl Rollback {
    /// Rolls the profile back on `deployer`, under the lock of its state.
    pub fn run(self, deployer: &mut dyn Deployer) -> Result<RollbackReport, Failure> {
        let loaded = load_profile(&self.profile)?;
        let name = loaded.profile.name.clone();
        let (state_path, _guard, state) = store::locked_state(&name)?;
        self.locked(name, &state_path, state, deployer)
    }

    /// The rollback once the state is read under its lock.
    fn locked(
        self,
        name: String,
        state_path: &Path,
        mut state: State,
        deployer: &mut dyn Deployer,
    ) -> Result<RollbackReport, Failure> {
        let shown = state_path.display().to_string();
        let plan = state
            .rollback_plan(&shown)
            .map_err(|error| Failure::from_hinted(EXIT_FAILED, &error))?;
        if split(&plan.image).digest.is_some() {
            return Err(Failure::new(
                EXIT_FAILED,
                format!(
                    "{shown}: {} is pinned by digest and cannot be moved",
                    plan.image
                ),
            )
            .hinted("change the profile's image reference instead"));
        }
        let engine = deployer.engine()?;
        if engine.image(&plan.to)?.is_none() {
            return Err(Failure::new(
                EXIT_FAILED,
                format!(
                    "{shown}: the previous image {} is gone, so there is nothing to roll back to",
                    short_id(&plan.to),
                ),
            )
            .hinted(format!(
                "keep the tag {} (docker image prune removes untagged images)",
                plan.retained_tag
                    .as_deref()
                    .unwrap_or("REF-agentc-previous-PROFILE")
            )));
        }
        if let Some(tag) = &plan.retained_tag {
            if engine.image(&plan.from)?.is_some() {
                engine.tag(&plan.from, tag)?;
            }
        }
        engine.tag(&plan.to, &plan.image)?;
        store::interruption_point("rollback:after-tag");
        state.record_rollback(&plan, now(), gather::VERSION);
        store::write_atomic(state_path, &state.to_toml())?;
        let number = state.current().map_or(0, |current| current.number);
        let locked = store::lock_file(&self.profile).exists();
        Ok(RollbackReport {
            name,
            profile: self.profile,
            number,
            image: plan.image,
            to: plan.to,
            from: plan.from,
            retained_tag: plan.retained_tag,
            locked,
        })
    }
}

#[cfg(test)]
mod tests;
