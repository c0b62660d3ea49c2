//! `agentc doctor`: judges this machine (and a profile's needs) with the checks of
//! `agentc_lifecycle::doctor`; exit 0 only when nothing fails.

use agentc_egress::image::ProxyExecutable;
use agentc_lifecycle::doctor::{
    engine_checks, profile_checks, require_for, Engine, ProfileFacts, Report,
};
use agentc_lifecycle::lock::compare;
use agentc_lifecycle::plan::{Launch, Part, Role};
use agentc_lifecycle::state::State;
use std::collections::BTreeMap;

use crate::cli::{BackendArg, DoctorArgs, ExplainFormat};
use crate::commands::{launch, plan};
use crate::context::{self, Failure, EXIT_FAILED};
use crate::lifecycle::{engine, gather, probe};

/// Runs `agentc doctor`.
pub fn doctor(args: DoctorArgs) -> Result<u8, Failure> {
    let loaded = args
        .profile
        .as_ref()
        .map(|profile| context::load_profile(profile))
        .transpose()?;
    let runtime = launch::runtime()?;
    let facts = runtime.block_on(async {
        let port = launch::connect().await.map_err(|failure| {
            failure
                .message
                .lines()
                .next()
                .unwrap_or_default()
                .to_string()
        });
        probe::engine_facts(crate::engine(), port).await
    });
    drop(runtime);
    let reachable = facts.unreachable.is_none();
    let mut checks = engine_checks(&facts);
    if let (Some(loaded), Some(profile)) = (&loaded, &args.profile) {
        let (facts, parts) = profile_facts(loaded, profile, args.workspace.as_deref(), reachable)?;
        require_for(&parts, &mut checks);
        checks.extend(profile_checks(&facts));
    }
    let report = Report {
        engine: match crate::engine() {
            agentc_engine::Engine::Docker => Engine::Docker,
            agentc_engine::Engine::Podman => Engine::Podman,
        },
        checks,
    };
    let output = match args.format {
        ExplainFormat::Text => report.text(),
        ExplainFormat::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&report.json()).unwrap_or_default()
        ),
    };
    print!("{output}");
    Ok(if report.failed() { EXIT_FAILED } else { 0 })
}

/// What a profile needs, looked up: secrets in the environment (by name; values are not
/// read), and with a reachable engine its images, networks, deployment and lock.
fn profile_facts(
    loaded: &agentc_policy::LoadedProfile,
    profile: &std::path::Path,
    workspace: Option<&std::path::Path>,
    reachable: bool,
) -> Result<(ProfileFacts, Vec<Part>), Failure> {
    let launches = gather::launches(loaded, profile, workspace, &BTreeMap::new())?;
    let planned = agentc_lifecycle::plan::plan(&loaded.profile.name, &loaded.file, &launches, None);
    let mut facts = ProfileFacts {
        file: loaded.file.clone(),
        ..ProfileFacts::default()
    };
    if let Some(runtime) = &loaded.profile.security.runtime {
        facts.runtime = Some((runtime.clone(), runtime_available(runtime)));
    }
    if reachable {
        facts.isolation = isolation_fact(&launches, &loaded.profile.name);
    }
    let mut engine = if reachable {
        Some(crate::context::lifecycle_engine(BackendArg::Api)?)
    } else {
        None
    };
    for (part, _) in planned.distinct_parts() {
        part_facts(part, engine.as_mut(), loaded, &mut facts)?;
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
            facts.egress_proxy_image = Some(egress_proxy_image(engine.as_mut())?);
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
fn runtime_available(runtime: &str) -> Result<(), String> {
    agentc_backend_cli::exec::engine::runtimes(crate::engine(), runtime)
        .and_then(|found| agentc_engine::check_runtime(crate::engine(), runtime, &found))
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
fn isolation_fact(launches: &[Launch], profile: &str) -> Option<Result<String, (String, String)>> {
    launches
        .iter()
        .filter_map(|launch| match &launch.spec.action {
            agentc_policy::Action::Container(container) => Some(container),
            _ => None,
        })
        .find_map(|container| crate::commands::launch::doctor_fact(container, profile))
}

/// Records what one planned part needs: a secret's presence in the environment, and with an
/// engine an image's presence or an existing network's.
fn part_facts(
    part: &Part,
    engine: Option<&mut Box<dyn engine::Engine>>,
    loaded: &agentc_policy::LoadedProfile,
    facts: &mut ProfileFacts,
) -> Result<(), Failure> {
    match part {
        Part::Secret { name, required } => facts.secrets.push((
            name.clone(),
            *required,
            std::env::var_os(name).is_some_and(|value| !value.is_empty()),
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
    loaded: &agentc_policy::LoadedProfile,
    profile: &std::path::Path,
    launches: &[Launch],
    engine: &mut dyn engine::Engine,
    facts: &mut ProfileFacts,
) -> Result<(), Failure> {
    let state: Option<State> = plan::read_state(&loaded.profile.name)?;
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
            let path = crate::lifecycle::store::lock_file(profile);
            facts.lock = Some((path.display().to_string(), Err(failure.message)));
        }
    }
    Ok(())
}

/// The egress proxy's image tag for this binary and whether the engine has it: the tag a
/// launch remembered, else the one made by reading and hashing the binary (no import).
fn egress_proxy_image(
    engine: &mut dyn engine::Engine,
) -> Result<Result<(String, bool), String>, Failure> {
    let own = ProxyExecutable::running();
    if let Some(tag) = agentc_egress::image::cached_proxy_tag(&own) {
        if engine.image(&tag)?.is_some() {
            return Ok(Ok((tag, true)));
        }
    }
    let image = match agentc_egress::image::proxy_image(&own) {
        Ok(image) => image,
        Err(error) => return Ok(Err(error.to_string())),
    };
    let present = engine.image(&image.tag)?.is_some();
    if present {
        agentc_egress::image::remember_proxy_tag(&own, &image.tag);
    }
    Ok(Ok((image.tag, present)))
}
