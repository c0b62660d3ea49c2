//! `agentc verify`, for the command line and library callers alike: a profile's launch
//! verified in a probe of its own over the launch's engine port, its isolation floor met first
//! as `agentc run` meets it ([`Launcher::verify_on`]), or a running sandbox read from the host
//! side and compared with its profile as it resolves now ([`VerifyRunning`]). Both return the
//! typed checks ([`Check`]); the table and the JSON are the verify crate's.

use std::path::{Path, PathBuf};

use agentc_engine::port::EnginePort;
use agentc_engine::session::{Sandbox, SandboxClient, Sandboxes, SessionPort};
use agentc_policy::{Instance, LaunchSpec, Start};
use agentc_verify::{self as verify, Check, EgressProbe, VerifyInputs};

use crate::backend::{engine_is_remote, exec_failure, session_failure, verify_failure, OnClient};
use crate::inventory::sandbox_named;
use crate::launch::Launcher;
use crate::{container_of, load_profile, resolve_instance, Failure, LaunchRequest, EXIT_INVALID};

impl Launcher {
    /// Verifies the resolved launch `spec` over `port`, as `agentc verify PROFILE` does:
    /// refused first when the probe cannot observe it, then the isolation floor met as
    /// `agentc run` meets it (said to `notify`) and [`verify::verify_placed`] in the floor's
    /// runtime, pulling a missing image first with `pull`.
    pub async fn verify_on<P: EnginePort>(
        &self,
        port: &P,
        spec: &LaunchSpec,
        pull: bool,
        egress_probe: &EgressProbe,
        notify: fn(&str),
    ) -> Result<Vec<Check>, Failure> {
        let container = verify::probe::verifiable(spec).map_err(verify_failure)?;
        let inputs = VerifyInputs {
            pull,
            egress_probe,
            notify,
            ..VerifyInputs::new(&self.env, &self.proxy)
        };
        let placed = self
            .meet_floor_on(port, container, &spec.profile, &mut |line| notify(line))
            .await?;
        verify::verify_placed(port, spec, &placed.container, &inputs)
            .await
            .map_err(verify_failure)
    }
}

/// `agentc verify NAME`: the running sandbox NAME ([`sandbox_named`]) read from the host side
/// (its processes' `/proc` and cgroup files, [`verify::host`]) and compared with its profile as
/// it resolves now; nothing runs in it. Refused (exit 65) where the host cannot see its
/// processes: a remote engine, or gVisor's kernel; and for a sandbox that records no profile
/// file. Returns the profile's name and the checks.
#[derive(Debug, Clone)]
pub struct VerifyRunning {
    /// The sandbox: a container's name or ID, a profile file or a profile's name.
    pub name: String,
    /// The workspace its profile resolves with (`--workspace`).
    pub workspace: Option<PathBuf>,
    /// The image its profile resolves with (`--image`).
    pub image: Option<String>,
    /// Whether the engine runs on another machine ([`engine_is_remote`]): where the
    /// environment the step runs with puts it.
    pub remote: bool,
}

impl VerifyRunning {
    /// The verify of the running sandbox `name` on `engine` where `env` puts it (the
    /// [`Driver::env`](crate::backend::Driver::env) it runs through), resolved with the
    /// profile's own workspace and image.
    pub fn new(
        name: impl Into<String>,
        engine: agentc_engine::Engine,
        env: &std::collections::BTreeMap<String, String>,
    ) -> VerifyRunning {
        VerifyRunning {
            name: name.into(),
            workspace: None,
            image: None,
            remote: engine_is_remote(engine, env),
        }
    }

    /// Refuses, before the engine is asked, a sandbox on an engine on another machine, whose
    /// processes this host cannot read.
    pub fn check_local(&self) -> Result<(), Failure> {
        if self.remote {
            return Err(self.refuse(
                "the engine runs on another machine, whose processes this host cannot read",
            ));
        }
        Ok(())
    }

    /// The refusal of a sandbox the host cannot verify, and why.
    fn refuse(&self, why: &str) -> Failure {
        Failure::new(
            EXIT_INVALID,
            format!("cannot verify the running sandbox {}: {why}", self.name),
        )
        .hinted("`agentc verify PROFILE.toml` checks its launch in a probe of its own")
    }

    /// The spec of the running `sandbox` as its profile `file` resolves now: under its own
    /// name when it has the profile's, else asked for (`--name`, a copy's); its own home
    /// volume when `own_home`.
    fn running_spec(
        &self,
        sandbox: &Sandbox,
        file: &str,
        own_home: bool,
    ) -> Result<LaunchSpec, Failure> {
        let request = LaunchRequest {
            workspace: self.workspace.clone(),
            image: self.image.clone(),
            ..LaunchRequest::new(file)
        };
        let loaded = load_profile(&request.profile)?;
        let instance = |named: bool| Instance {
            start: Start::Detached,
            default_name: Some(sandbox.name.clone()),
            name: named.then(|| sandbox.name.clone()),
            own_home,
            stdin_is_terminal: false,
            ..Instance::default()
        };
        let mut spec = resolve_instance(&loaded, &request, instance(false))?;
        if container_of(&spec)?.name.as_deref() != Some(sandbox.name.as_str()) {
            spec = resolve_instance(&loaded, &request, instance(true))?;
        }
        Ok(spec)
    }
}

impl OnClient for VerifyRunning {
    type Output = (String, Vec<Check>);

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Self::Output, Failure> {
        self.check_local()?;
        let sandbox = sandbox_named(client, &self.name, false).await?;
        let inspect = client
            .port()
            .inspect_json(&sandbox.id)
            .await
            .map_err(|error| exec_failure(error.at("inspect the sandbox")))?;
        let egress = client.egress(&sandbox).await.map_err(session_failure)?;
        let text = |pointer: &str| inspect.pointer(pointer).and_then(|value| value.as_str());
        let label = |key: &str| text(&format!("/Config/Labels/{}", key.replace('/', "~1")));
        if text("/HostConfig/Runtime").is_some_and(|runtime| runtime.contains("runsc")) {
            return Err(self.refuse(
                "it runs under gVisor, whose kernel keeps its processes from the host's /proc",
            ));
        }
        let Some(file) = label(agentc_policy::LABEL_PROFILE_FILE) else {
            return Err(self.refuse(&format!(
                "it records no profile file (label {})",
                agentc_policy::LABEL_PROFILE_FILE
            )));
        };
        let pid = inspect
            .pointer("/State/Pid")
            .and_then(|pid| pid.as_u64())
            .and_then(|pid| u32::try_from(pid).ok())
            .filter(|pid| *pid > 0)
            .ok_or_else(|| self.refuse("the engine reports no process for it"))?;
        let own_home = label(agentc_policy::LABEL_OWN_VOLUME).is_some();
        let spec = self.running_spec(&sandbox, file, own_home)?;
        let observed = observe(pid).map_err(|why| self.refuse(&why))?;
        let checks = verify::host::compare_running(
            container_of(&spec)?,
            spec.digest(),
            label(agentc_policy::LABEL_SPEC_DIGEST),
            &observed,
            &inspect,
            egress.as_ref().map(|egress| &egress.state),
        );
        Ok((spec.profile, checks))
    }
}

/// What the host's `/proc` and cgroup tree show of the process `pid`, or why they cannot be
/// read.
fn observe(pid: u32) -> Result<verify::parse::Observation, String> {
    verify::host::observe(Path::new("/proc"), Path::new("/sys/fs/cgroup"), pid)
        .map_err(|error| format!("{error} (run agentc as root, or as the engine's user)"))
}
