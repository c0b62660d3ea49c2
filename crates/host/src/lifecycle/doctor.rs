//! `agentc doctor`, for the command line and library callers alike: this machine's engine
//! judged with the checks of [`agentc_lifecycle::doctor`], and with a profile what it needs,
//! looked up ([`Doctor`]): its secrets in the environment, and with a reachable engine its
//! runtime, isolation floor, images, networks, egress proxy image, deployment and lock. What
//! comes back is the [`Report`], which the caller prints (its text or JSON form).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentc_lifecycle::doctor::{
    engine_checks, profile_checks, require_for, Engine as ReportEngine, ProfileFacts, Report,
};
use agentc_lifecycle::lock::compare;
use agentc_lifecycle::plan::{Launch, Part, Role};
use agentc_lifecycle::state::State;
use agentc_policy::Hinted;
use agentc_policy::{ContainerSpec, LoadedProfile};

use crate::backend::{self, BackendChoice};
use crate::launch::Launcher;
use crate::lifecycle::engine::{connect, Engine};
use crate::lifecycle::{gather, probe, store};
use crate::{load_profile, Failure};

/// `agentc doctor`: the engine of [`Doctor::launcher`] judged, and with a profile its needs.
pub struct Doctor {
    /// A profile whose images, networks, secrets, deployment and lock are checked too.
    pub profile: Option<PathBuf>,
    /// The workspace the profile's launches mount; the current directory without.
    pub workspace: Option<PathBuf>,
    /// The caller: its engine, the environment a launch reads its secrets from (the profile's
    /// secrets are looked up there), and the floor's options and egress proxy of its
    /// executable.
    pub launcher: Launcher,
}

impl Doctor {
    /// Gathers the facts and judges them: the report, engine checks first (a failed check is
    /// in it, not an error; an error is a profile that cannot be read or an engine query that
    /// fails once the engine was reached).
    pub fn run(self) -> Result<Report, Failure> {
        let loaded = self
            .profile
            .as_ref()
            .map(|profile| load_profile(profile))
            .transpose()?;
        let (engine, env) = (self.launcher.engine, &self.launcher.env);
        let runtime = backend::runtime()?;
        let facts = runtime.block_on(async {
            let reaped = &self.launcher.reaped;
            let port = backend::connect(engine, env, reaped)
                .await
                .map_err(|failure| {
                    failure
                        .message
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .to_string()
                });
            probe::engine_facts(engine, env, port).await
        });
        drop(runtime);
        let reachable = facts.unreachable.is_none();
        let mut checks = engine_checks(&facts);
        if let (Some(loaded), Some(profile)) = (&loaded, &self.profile) {
            let (facts, parts) = self.profile_facts(loaded, profile, reachable)?;
            require_for(&parts, &mut checks);
            checks.extend(profile_checks(&facts));
        }
        Ok(Report {
            engine: match engine {
                agentc_engine::Engine::Docker => ReportEngine::Docker,
                agentc_engine::Engine::Podman => ReportEngine::Podman,
            },
            checks,
        })
    }

    /// What a profile needs, looked up: secrets in the launcher's environment
    /// ([`Launcher::env`], the one a launch reads them from; by name, values are not judged),
    /// and with a reachable engine its images, networks, deployment and lock.
    fn profile_facts(
        &self,
        loaded: &LoadedProfile,
        profile: &Path,
        reachable: bool,
    ) -> Result<(ProfileFacts, Vec<Part>), Failure> {
        let launches =
            gather::launches(loaded, profile, self.workspace.as_deref(), &BTreeMap::new())?;
        let planned =
            agentc_lifecycle::plan::plan(&loaded.profile.name, &loaded.file, &launches, None);
        let mut facts = ProfileFacts {
            file: loaded.file.clone(),
            ..ProfileFacts::default()
        };
        if let Some(runtime) = &loaded.profile.security.runtime {
            facts.runtime = Some((runtime.clone(), self.runtime_available(runtime)));
        }
        if reachable {
            facts.isolation = self.isolation_fact(&launches, &loaded.profile.name);
        }
        let mut engine = if reachable {
            Some(connect(&self.launcher, BackendChoice::Api)?)
        } else {
            None
        };
        for (part, _) in planned.distinct_parts() {
            part_facts(
                part,
                engine.as_mut(),
                loaded,
                &self.launcher.env,
                &mut facts,
            )?;
        }
        let runs_proxy = planned.distinct_parts().into_iter().any(|(part, _)| {
            matches!(
                part,
                Part::Container {
                    role: Role::EgressProxy,
                    ..
                }
            )
        });
        if runs_proxy {
            if let Some(engine) = engine.as_mut() {
                facts.egress_proxy_image = Some(self.egress_proxy_image(engine.as_mut())?);
            }
        }
        let parts: Vec<Part> = planned
            .distinct_parts()
            .into_iter()
            .map(|(part, _)| part.clone())
            .collect();
        if let Some(engine) = engine.as_mut() {
            deployment_facts(loaded, profile, &launches, engine.as_mut(), &mut facts)?;
        }
        Ok((facts, parts))
    }

    /// Whether the engine has the profile's `runtime`, or the first line of why not. Asked
    /// through the engine's command line: Podman's socket cannot tell.
    fn runtime_available(&self, runtime: &str) -> Result<(), String> {
        let engine = self.launcher.engine;
        agentc_backend_cli::exec::engine::runtimes(engine, &self.launcher.env, runtime)
            .and_then(|found| agentc_engine::check_runtime(engine, runtime, &found))
            .map_err(|error| {
                error
                    .to_string()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
    }

    /// The isolation floor of the first launch that has one: the same detection and probes as
    /// `agentc run`, so doctor says what the launch will do.
    fn isolation_fact(
        &self,
        launches: &[Launch],
        profile: &str,
    ) -> Option<Result<String, (String, String)>> {
        launches
            .iter()
            .filter_map(|launch| match &launch.spec.action {
                agentc_policy::Action::Container(container) => Some(container),
                _ => None,
            })
            .find_map(|container| self.floor_fact(container, profile))
    }

    /// What doctor says of a container's isolation floor ([`Launcher::floor_fact`]: the same
    /// detection and probes as a launch), asked through the command line. `None` without a
    /// floor.
    fn floor_fact(
        &self,
        container: &ContainerSpec,
        profile: &str,
    ) -> Option<Result<String, (String, String)>> {
        container.isolation?;
        let engine = self.launcher.engine;
        backend::runtime().ok()?.block_on(async {
            let launcher = &self.launcher;
            let port =
                backend::cli_port_reaping(engine, &launcher.env, None, &launcher.reaped).await;
            self.launcher.floor_fact(&port, container, profile).await
        })
    }

    /// The egress proxy's image tag for the launcher's executable and whether the engine has
    /// it: the tag a launch remembered, else the one made by reading and hashing the executable
    /// (no import).
    fn egress_proxy_image(
        &self,
        engine: &mut dyn Engine,
    ) -> Result<Result<(String, bool), String>, Failure> {
        let own = &self.launcher.proxy;
        if let Some(tag) = agentc_egress::image::cached_proxy_tag(own) {
            if engine.image(&tag)?.is_some() {
                return Ok(Ok((tag, true)));
            }
        }
        let image = match agentc_egress::image::proxy_image(own) {
            Ok(image) => image,
            Err(error) => return Ok(Err(error.to_string())),
        };
        let present = engine.image(&image.tag)?.is_some();
        if present {
            agentc_egress::image::remember_proxy_tag(own, &image.tag);
        }
        Ok(Ok((image.tag, present)))
    }
}

/// Records what one planned part needs: a secret's presence in `env` (set and not empty),
/// and with an engine an image's presence or an existing network's.
fn part_facts(
    part: &Part,
    engine: Option<&mut Box<dyn Engine>>,
    loaded: &LoadedProfile,
    env: &BTreeMap<String, String>,
    facts: &mut ProfileFacts,
) -> Result<(), Failure> {
    match part {
        Part::Secret { name, required } => facts.secrets.push((
            name.clone(),
            *required,
            env.get(name).is_some_and(|value| !value.is_empty()),
        )),
        Part::Image {
            reference,
            built_by_profile,
        } => {
            if let Some(engine) = engine {
                let present = engine.image(reference)?.is_some();
                // A preset's own image is built from agentc's bundled context.
                let built =
                    *built_by_profile || crate::bundled::is_bundled_image(loaded, reference);
                facts.images.push((reference.clone(), present, built));
            }
        }
        Part::Network {
            name,
            created: false,
            publishes,
            ..
        } => {
            if let Some(engine) = engine {
                let internal = engine.network_internal(name)?;
                facts.networks.push((name.clone(), internal.is_some()));
                if internal == Some(true) && !publishes.is_empty() {
                    facts
                        .internal_outside
                        .push((name.clone(), publishes.clone()));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Records the profile's deployment (its image then and now) and its lock compared with what
/// the launches would pin now.
fn deployment_facts(
    loaded: &LoadedProfile,
    profile: &Path,
    launches: &[Launch],
    engine: &mut dyn Engine,
    facts: &mut ProfileFacts,
) -> Result<(), Failure> {
    let state: Option<State> = store::read_state(&loaded.profile.name)?;
    if let Some(current) = state.as_ref().and_then(State::current) {
        let now = engine.image(&current.image)?.map(|facts| facts.id);
        facts.deployment = Some((current.image.clone(), current.image_id.clone(), now));
    }
    match gather::read_lock(profile) {
        Ok(None) => {}
        Ok(Some((path, locked))) => {
            let (current, _) = gather::current_lock(loaded, launches, &BTreeMap::new(), engine)?;
            facts.lock = Some((path.display().to_string(), Ok(compare(&locked, &current))));
        }
        Err(failure) => {
            let path = store::lock_file(profile);
            facts.lock = Some((
                path.display().to_string(),
                Err(failure.with_hint().to_string()),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_lifecycle::lock::ImageFacts;

    /// An engine with one image and one network, `--internal` as `internal` says.
    struct Fake {
        internal: bool,
    }

    impl Engine for Fake {
        fn image(&mut self, reference: &str) -> Result<Option<ImageFacts>, Failure> {
            Ok((reference == "busybox:1.36").then(|| ImageFacts {
                id: "sha256:1".to_string(),
                repo_digests: Vec::new(),
            }))
        }
        fn pull(&mut self, _: &str, _: &mut (dyn FnMut(&str) + Send)) -> Result<(), Failure> {
            unreachable!("doctor pulls nothing")
        }
        fn tag(&mut self, _: &str, _: &str) -> Result<(), Failure> {
            unreachable!("doctor moves no tag")
        }
        fn volume_exists(&mut self, _: &str) -> Result<bool, Failure> {
            Ok(false)
        }
        fn network_exists(&mut self, name: &str) -> Result<bool, Failure> {
            Ok(name == "outside")
        }
        fn network_internal(&mut self, name: &str) -> Result<Option<bool>, Failure> {
            Ok((name == "outside").then_some(self.internal))
        }
    }

    fn loaded() -> LoadedProfile {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/valid/sandbox-minimal.toml");
        load_profile(&path).unwrap()
    }

    fn image(reference: &str) -> Part {
        Part::Image {
            reference: reference.to_string(),
            built_by_profile: false,
        }
    }

    fn outside(publishes: &[&str]) -> Part {
        Part::Network {
            name: "outside".to_string(),
            created: false,
            internal: false,
            publishes: publishes.iter().map(|port| port.to_string()).collect(),
        }
    }

    #[test]
    fn parts_are_looked_up_on_the_engine_only_when_it_is_reached() {
        let loaded = loaded();
        let env = BTreeMap::new();
        let mut facts = ProfileFacts::default();
        for part in [image("busybox:1.36"), image("absent:1"), outside(&[])] {
            part_facts(&part, None, &loaded, &env, &mut facts).unwrap();
        }
        assert!(facts.images.is_empty() && facts.networks.is_empty());

        let mut engine: Box<dyn Engine> = Box::new(Fake { internal: false });
        for part in [image("busybox:1.36"), image("absent:1"), outside(&[])] {
            part_facts(&part, Some(&mut engine), &loaded, &env, &mut facts).unwrap();
        }
        assert_eq!(
            facts.images,
            [
                ("busybox:1.36".to_string(), true, false),
                ("absent:1".to_string(), false, false),
            ]
        );
        assert_eq!(facts.networks, [("outside".to_string(), true)]);
        assert!(facts.internal_outside.is_empty());
    }

    #[test]
    fn an_internal_network_the_proxy_publishes_through_is_recorded() {
        let loaded = loaded();
        let mut facts = ProfileFacts::default();
        let mut engine: Box<dyn Engine> = Box::new(Fake { internal: true });
        part_facts(
            &outside(&["8080/tcp"]),
            Some(&mut engine),
            &loaded,
            &BTreeMap::new(),
            &mut facts,
        )
        .unwrap();
        assert_eq!(
            facts.internal_outside,
            [("outside".to_string(), vec!["8080/tcp".to_string()])]
        );
        let mut quiet = ProfileFacts::default();
        part_facts(
            &outside(&[]),
            Some(&mut engine),
            &loaded,
            &BTreeMap::new(),
            &mut quiet,
        )
        .unwrap();
        assert!(quiet.internal_outside.is_empty());
    }

    #[test]
    fn secrets_are_looked_up_in_the_environment_passed_never_the_process() {
        let loaded = loaded();
        let secret = |name: &str, required| Part::Secret {
            name: name.to_string(),
            required,
        };
        // The process sets PATH; the environment passed does not, so it is not set here.
        assert!(std::env::var_os("PATH").is_some());
        let env = BTreeMap::from([
            ("AGENTC_DOCTOR_KEY".to_string(), "sk-1".to_string()),
            ("AGENTC_DOCTOR_EMPTY".to_string(), String::new()),
        ]);
        let mut facts = ProfileFacts::default();
        for part in [
            secret("AGENTC_DOCTOR_KEY", true),
            secret("AGENTC_DOCTOR_EMPTY", true),
            secret("PATH", false),
        ] {
            part_facts(&part, None, &loaded, &env, &mut facts).unwrap();
        }
        assert_eq!(
            facts.secrets,
            [
                ("AGENTC_DOCTOR_KEY".to_string(), true, true),
                ("AGENTC_DOCTOR_EMPTY".to_string(), true, false),
                ("PATH".to_string(), false, false),
            ]
        );
    }
}
