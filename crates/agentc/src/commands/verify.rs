//! `agentc verify`: launches the profile's run with the probe in place of the agent and
//! compares what the kernel reports with the spec (see [`agentc_verify`]).

use std::collections::BTreeMap;

use agentc_egress::image::ProxyExecutable;
use agentc_engine::session::{Sandbox, SandboxClient, SandboxEgress, Sandboxes, SessionPort};
use agentc_policy::{Instance, LaunchSpec, Start};
use agentc_verify::{self as verify, Check, EgressProbe, VerifyInputs};

use crate::cli::{BackendArg, ExplainFormat, VerifyArgs};
use crate::commands::session::{
    is_profile_path, on_client, sandbox_named, session_failure, OnClient,
};
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
        || crate::context::lifecycle_engine(backend),
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

/// Verifies one resolved container launch through `backend`, as `agentc verify` does: refused
/// first when the probe cannot observe it, then over the backend's engine port the isolation
/// floor met as `agentc run` meets it (and said on stderr) and
/// [`agentc_verify::verify_placed`], pulling first with `pull` and saying so on stderr.
pub fn verify_launch(
    spec: &LaunchSpec,
    backend: BackendArg,
    env: &BTreeMap<String, String>,
    pull: bool,
    egress_probe: &EgressProbe,
    proxy_executable: &ProxyExecutable,
) -> Result<Vec<Check>, Failure> {
    let container = verify::probe::verifiable(spec).map_err(failure)?;
    let inputs = VerifyInputs {
        pull,
        egress_probe,
        notify: launch::notify,
        ..VerifyInputs::new(env, proxy_executable)
    };
    launch::runtime()?.block_on(async {
        launch::over_port!(backend, None, |port| {
            // The floor over the probe's own port: one connection for both.
            let placed = launch::meet_floor_on(&port, container, &spec.profile).await?;
            verify::verify_placed(&port, spec, &placed.container, &inputs)
                .await
                .map_err(failure)
        })
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

/// What the engine says of a running sandbox: its inspect and its egress.
struct Running(String);

impl OnClient for Running {
    type Output = (Sandbox, serde_json::Value, Option<SandboxEgress>);

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Self::Output, Failure> {
        let sandbox = sandbox_named(client, &self.0, false).await?;
        let inspect = client
            .port()
            .inspect_json(&sandbox.id)
            .await
            .map_err(|error| launch::exec_failure(error.at("inspect the sandbox")))?;
        let egress = client.egress(&sandbox).await.map_err(session_failure)?;
        Ok((sandbox, inspect, egress))
    }
}

/// `agentc verify NAME`: the running sandbox NAME read from the host side and compared with
/// its profile as it resolves now ([`verify::host`]); nothing runs in it. Refused where the
/// host cannot see its processes: a remote engine, or gVisor's kernel.
fn verify_running(args: VerifyArgs, name: &str) -> Result<u8, Failure> {
    let refuse = |why: String| {
        Failure::new(
            context::EXIT_INVALID,
            format!(
                "cannot verify the running sandbox {name}: {why}\n  hint: `agentc verify \
                 PROFILE.toml` checks its launch in a probe of its own"
            ),
        )
    };
    if launch::engine_is_remote() {
        return Err(refuse(
            "the engine runs on another machine, whose processes this host cannot read".into(),
        ));
    }
    let (sandbox, inspect, egress) = on_client(
        args.backend
            .engine()
            .unwrap_or(crate::cli::BackendArg::Auto),
        Running(name.to_string()),
    )?;
    let text = |pointer: &str| inspect.pointer(pointer).and_then(|value| value.as_str());
    let label = |key: &str| text(&format!("/Config/Labels/{}", key.replace('/', "~1")));
    if text("/HostConfig/Runtime").is_some_and(|runtime| runtime.contains("runsc")) {
        return Err(refuse(
            "it runs under gVisor, whose kernel keeps its processes from the host's /proc".into(),
        ));
    }
    let Some(file) = label(agentc_policy::LABEL_PROFILE_FILE) else {
        return Err(refuse(format!(
            "it records no profile file (label {})",
            agentc_policy::LABEL_PROFILE_FILE
        )));
    };
    let pid = inspect
        .pointer("/State/Pid")
        .and_then(|pid| pid.as_u64())
        .and_then(|pid| u32::try_from(pid).ok())
        .filter(|pid| *pid > 0)
        .ok_or_else(|| refuse("the engine reports no process for it".into()))?;
    let own_home = label(agentc_policy::LABEL_OWN_VOLUME).is_some();
    let spec = running_spec(&args, &sandbox, file, own_home)?;
    let observed = observe(pid).map_err(refuse)?;
    let checks = verify::host::compare_running(
        launch::container_of(&spec)?,
        spec.digest(),
        label(agentc_policy::LABEL_SPEC_DIGEST),
        &observed,
        &inspect,
        egress.as_ref().map(|egress| &egress.state),
    );
    Ok(report(args.format, &spec.profile, &checks))
}

/// What the host's `/proc` and cgroup tree show of the process `pid`, or why they cannot be
/// read.
fn observe(pid: u32) -> Result<verify::parse::Observation, String> {
    verify::host::observe(
        std::path::Path::new("/proc"),
        std::path::Path::new("/sys/fs/cgroup"),
        pid,
    )
    .map_err(|error| format!("{error} (run agentc as root, or as the engine's user)"))
}

/// The spec of the running `sandbox` as its profile `file` resolves now (with `--workspace`
/// and `--image` from `args`): under its own name when it has the profile's, else asked for
/// (`--name`, a copy's); its own home volume when `own_home`.
fn running_spec(
    args: &VerifyArgs,
    sandbox: &Sandbox,
    file: &str,
    own_home: bool,
) -> Result<LaunchSpec, Failure> {
    let launch_args = launch_args(
        std::path::Path::new(file),
        args.workspace.clone(),
        args.image.clone(),
    );
    let loaded = context::load_profile(&launch_args.profile)?;
    let instance = |named: bool| Instance {
        start: Start::Detached,
        default_name: Some(sandbox.name.clone()),
        name: named.then(|| sandbox.name.clone()),
        own_home,
        stdin_is_terminal: false,
        ..Instance::default()
    };
    // Its own name when it has the profile's; asked for (`--name`, a copy's) otherwise.
    let mut spec = context::resolve_instance(&loaded, &launch_args, instance(false))?;
    if launch::container_of(&spec)?.name.as_deref() != Some(sandbox.name.as_str()) {
        spec = context::resolve_instance(&loaded, &launch_args, instance(true))?;
    }
    Ok(spec)
}
