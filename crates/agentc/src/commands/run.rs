//! `agentc run`: resolve the run launch (custom agents become the detached sandbox) and
//! execute it, or `--count` detached copies of it.

use std::io::IsTerminal;

use agentc_policy::{Action, ChosenRuntime, Hinted, Instance, LaunchSpec, LoadedProfile, Start};

use agentc_egress::image::ProxyExecutable;
use agentc_engine::session::{ProcessStdio, Sandboxes};
use agentc_host::backend::OnClient;
use agentc_host::run::{RunEvent, RunOne};

use crate::cli::{BackendArg, KindArg, LaunchArgs, RunArgs};
use crate::commands::launch;
use crate::context::{self, Failure, EXIT_DOCKER};
use crate::lifecycle::gather;

/// Runs `agentc run`; returns the container's exit code (0 for a started detached launch).
pub fn run(mut args: RunArgs) -> Result<u8, Failure> {
    let launch_args = run_launch_args(&mut args);
    let loaded = context::load_profile(&launch_args.profile)?;
    gather::refuse_unlocked(
        args.locked,
        &loaded,
        &launch_args.profile,
        gather::Workspace::Given(launch_args.workspace.as_deref()),
        launch_args.image.as_deref(),
        &launch_args.overrides,
        || crate::commands::launch::lifecycle_engine(args.backend),
    )?;
    // How this invocation starts the container is an input of resolve: the spec it returns
    // is the one launched, its digest the one `plan` and `lock` show.
    let detach = args.detach || args.count > 1;
    let stdin_is_terminal = std::io::stdin().is_terminal();
    let profile_record = context::profile_record(&launch_args.profile);
    let instance = |copy: Option<u16>, floor: Option<ChosenRuntime>| Instance {
        start: if detach {
            Start::Detached
        } else {
            Start::AsLaunched
        },
        default_name: detach
            .then(|| format!("agentc-run-{}-{}", loaded.profile.name, std::process::id())),
        name: args.name.clone(),
        copy,
        stdin_is_terminal,
        profile_record: profile_record.clone(),
        own_home: false,
        floor,
    };
    let spec = context::resolve_instance(&loaded, &launch_args, instance(None, None))?;
    if !args.no_warnings {
        for line in launch::finding_warnings(&agentc_policy::findings(&loaded, &spec)) {
            eprintln!("{line}");
        }
    }
    if args.count > 1 {
        // The isolation floor, met once for the fleet through the backend's own engine port;
        // each copy resolved with its runtime (the copies differ only in their names and
        // egress companions).
        let container = launch::container_of(&spec)?;
        launch::refuse_fixed_host_ports(args.count, container)?;
        let floor = launch::meet_floor(container, &spec.profile, args.backend)?.chosen;
        let copies = (1..=args.count)
            .map(|copy| {
                let instance = instance(Some(copy), floor.clone());
                context::resolve_instance(&loaded, &launch_args, instance)
            })
            .collect::<Result<Vec<_>, Failure>>()?;
        return launch::execute_copies(&copies, args.backend, args.pull, usize::from(args.jobs));
    }
    launch_one(&args, &launch_args, &loaded, &spec, instance(None, None)).map_err(|failure| {
        missing_preset_image(failure, &launch_args, &loaded, &spec, args.backend)
    })
}

/// The run launch's arguments, taken from `agentc run`'s (its profile, workspace, image and
/// agent arguments moved out of `args`); `--isolation-min` an override of resolve, with the
/// environment's (in place of its AGENTC_ISOLATION_MIN).
fn run_launch_args(args: &mut RunArgs) -> LaunchArgs {
    let overrides = args
        .isolation_min
        .iter()
        .map(|tier| {
            (
                agentc_policy::overrides::ISOLATION_MIN.to_string(),
                tier.clone(),
            )
        })
        .collect();
    LaunchArgs {
        profile: std::mem::take(&mut args.profile),
        kind: KindArg::Run,
        workspace: args.workspace.take(),
        image: args.image.take(),
        seed_target: None,
        agent_args: std::mem::take(&mut args.agent_args),
        overrides,
        build_args: Default::default(),
    }
}

/// The one launch of `agentc run`, over one engine port (one connection through the Engine
/// API), the leftovers of a killed launch of its name reaped first: the library's
/// ([`RunOne`]: the isolation floor met and the launch resolved with its runtime, then a warm
/// claim where a pool of the spec's key has a member, else a cold launch), printed.
fn launch_one(
    args: &RunArgs,
    launch_args: &LaunchArgs,
    loaded: &LoadedProfile,
    spec: &LaunchSpec,
    instance: Instance,
) -> Result<u8, Failure> {
    let container = launch::container_of(spec)?;
    let own = container.name.as_deref();
    let request = launch_args.request();
    let mut print = |event: RunEvent<'_>| match event {
        RunEvent::Note(line) => launch::notify(line),
        RunEvent::Exited(exited) => launch::notify(&exited.with_hint().to_string()),
        RunEvent::Started(started) => println!("{started}"),
    };
    let run = RunOne {
        loaded,
        request: &request,
        instance,
        spec,
        pool: args.pool.into(),
        pull: args.pull,
        launcher: launch::launcher(),
        output: &mut ProcessStdio,
        events: &mut print,
    };
    launch::runtime()?.block_on(async {
        launch::over_port!(args.backend, own, |port| {
            let client = Sandboxes::over(port, launch::process_env())
                .with_proxy_executable(ProxyExecutable::running());
            run.run(&client).await
        })
    })
}

/// A launch that failed because the preset's own image is missing (`claude-code:latest`, not
/// an image the profile or `--image` names) says which command builds it: `agentc build
/// PROFILE`, from agentc's bundled context. Any other failure is returned as it is.
fn missing_preset_image(
    failure: Failure,
    launch_args: &LaunchArgs,
    loaded: &LoadedProfile,
    spec: &LaunchSpec,
    backend: BackendArg,
) -> Failure {
    let Action::Container(container) = &spec.action else {
        return failure;
    };
    let bundled =
        launch_args.image.is_none() && crate::bundled::is_bundled_image(loaded, &container.image);
    if failure.code != EXIT_DOCKER || !bundled {
        return failure;
    }
    let missing = crate::commands::launch::lifecycle_engine(backend)
        .and_then(|mut engine| engine.image(&container.image))
        .is_ok_and(|facts| facts.is_none());
    if !missing {
        return failure;
    }
    Failure::new(
        EXIT_DOCKER,
        format!("image {} is not present", container.image),
    )
    .hinted(format!(
        "`agentc build {}` builds it from agentc's bundled {} image (`agentc image context {} DIR` writes it out)",
        launch_args.profile.display(),
        loaded.profile.agent.as_str(),
        loaded.profile.agent.as_str(),
    ))
}
