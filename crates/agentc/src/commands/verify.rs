//! `agentc verify`: launches the profile's run with the probe in place of the agent and
//! compares what the kernel reports with the spec (see [`agentc_verify`]).

use std::collections::BTreeMap;

use agentc_egress::image::ProxyExecutable;
use agentc_host::launch::Launcher;
use agentc_host::verify::VerifyRunning;
use agentc_policy::LaunchSpec;
use agentc_verify::{self as verify, Check, EgressProbe};

use crate::cli::{BackendArg, ExplainFormat, VerifyArgs};
use crate::commands::session::{is_profile_path, on_client};
use crate::commands::snapshot::launch_args;
use crate::commands::{launch, offline};
use crate::context::{self, Failure, EXIT_FAILED, EXIT_USAGE};
use crate::lifecycle::gather;

/// Runs `agentc verify`: prints the table (or its JSON); 0 when every check passed, 1
/// otherwise. A NAME that is no profile file is a running sandbox, read from the host side
/// ([`verify::host`]).
pub fn verify(args: VerifyArgs) -> Result<u8, Failure> {
    let target = args.profile.to_string_lossy().into_owned();
    if !is_profile_path(&target) && !args.profile.is_file() {
        return verify_running(args, &target);
    }
    let egress_probe = match args.egress_probe.as_deref() {
        None => EgressProbe::Profile,
        Some(text) => text
            .parse()
            .map_err(|error| Failure::new(EXIT_USAGE, format!("--egress-probe {error}")))?,
    };
    let Some(backend) = args.backend.engine() else {
        return verify_k8s(args, egress_probe);
    };
    offline::refuse_k8s_options(&args.k8s)?;
    let launch_args = launch_args(&args.profile, args.workspace, args.image);
    let loaded = context::load_profile(&launch_args.profile)?;
    gather::refuse_unlocked(
        args.locked,
        &loaded,
        &launch_args.profile,
        gather::Workspace::Given(launch_args.workspace.as_deref()),
        launch_args.image.as_deref(),
        &launch_args.overrides,
        || crate::commands::launch::lifecycle_engine(backend),
    )?;
    let spec = context::resolve_launch(&loaded, &launch_args)?;
    let checks = verify_launch(
        &spec,
        backend,
        &launch::process_env(),
        args.pull,
        &egress_probe,
        // The probe's egress proxy is an image of this binary.
        &ProxyExecutable::running(),
    )?;
    Ok(report(args.format, &spec.profile, &checks))
}

/// Verifies one resolved container launch through `backend`, as `agentc verify` does
/// ([`agentc_host::launch::Launcher::verify_on`], over one engine port), secrets read from
/// `env` and the probe's egress proxy an image of `proxy_executable`; says on stderr what the
/// floor chose and what is pulled.
pub fn verify_launch(
    spec: &LaunchSpec,
    backend: BackendArg,
    env: &BTreeMap<String, String>,
    pull: bool,
    egress_probe: &EgressProbe,
    proxy_executable: &ProxyExecutable,
) -> Result<Vec<Check>, Failure> {
    verify::probe::verifiable(spec).map_err(failure)?;
    let launcher = Launcher {
        env: env.clone(),
        proxy: proxy_executable.clone(),
        ..launch::launcher()
    };
    launch::runtime()?.block_on(async {
        launch::over_port!(backend, None, |port| launcher
            .verify_on(&port, spec, pull, egress_probe, launch::notify)
            .await)
    })
}

pub use agentc_host::backend::verify_failure as failure;

/// `agentc verify PROFILE --backend k8s`: the profile's Kubernetes rendering (as `agentc
/// render --backend k8s` renders it, with the same options) played by `podman kube play` with
/// the probe as its workload ([`verify::kube`]).
fn verify_k8s(args: VerifyArgs, egress_probe: EgressProbe) -> Result<u8, Failure> {
    for (given, option) in [(args.pull, "--pull"), (args.locked, "--locked")] {
        if given {
            return Err(Failure::usage(format!(
                "{option} is an option of a container launch's verify: the k8s play copies \
                 images from Docker's store and checks no lock"
            )));
        }
    }
    let launch_args = launch_args(&args.profile, args.workspace, args.image);
    let loaded = context::load_profile(&launch_args.profile)?;
    let spec = context::resolve_launch_unowned(&loaded, &launch_args)?;
    let options = offline::k8s_options(&loaded, &spec, &args.k8s)?;
    let inputs = verify::kube::PlayInputs {
        egress_probe,
        // The played egress proxy is an image of this binary, as a container launch's is.
        proxy_executable: ProxyExecutable::running(),
    };
    let play = verify::kube::verify_kube(&spec, &options, &inputs);
    let checks = launch::runtime()?.block_on(play).map_err(failure)?;
    Ok(report(args.format, &spec.profile, &checks))
}

/// Prints the checks as `format` says; the exit status: 0 when every check passed, 1 otherwise.
fn report(format: ExplainFormat, profile: &str, checks: &[Check]) -> u8 {
    match format {
        ExplainFormat::Text => print!("{}", verify::render_table(checks)),
        ExplainFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&verify::report_json(profile, checks)).unwrap_or_default()
        ),
    }
    if checks.iter().all(|check| check.ok) {
        0
    } else {
        EXIT_FAILED
    }
}

/// `agentc verify NAME`: the running sandbox read from the host side and compared with its
/// profile as it resolves now ([`VerifyRunning`]).
fn verify_running(args: VerifyArgs, name: &str) -> Result<u8, Failure> {
    let running = VerifyRunning {
        workspace: args.workspace,
        image: args.image,
        ..VerifyRunning::new(name, crate::engine(), &launch::process_env())
    };
    running.check_local()?;
    let backend = args.backend.engine().unwrap_or(BackendArg::Auto);
    let (profile, checks) = on_client(backend, running)?;
    Ok(report(args.format, &profile, &checks))
}
