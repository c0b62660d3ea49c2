//! Launches for the live tests, made as `agentc run` makes them: the launch written once over
//! the engine port ([`agentc_engine::launch`]) through either backend's port, with SIGINT and
//! SIGTERM listened to. No backend has an entry point of its own for it: a test proves the
//! path the binary takes.

use std::collections::BTreeMap;

use agentc_engine::launch::{self, Exited, LaunchManyError, LaunchOptions, Launched, Started};
use agentc_engine::port::EnginePort;
use agentc_engine::signals::Signals;
use agentc_engine::{Engine, ExecError};
use agentc_policy::{ContainerSpec, Hinted};

/// How a test's launch ended: the attached container's exit, or 0 for a started one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The container's exit code; 0 for a detached launch.
    pub exit_code: i64,
    /// The container's ID.
    pub container_id: String,
    /// The kernel's OOM killer ended the container, when the engine could still say so.
    pub oom_killed: bool,
}

impl Outcome {
    /// The explanation `agentc run` prints of an abnormal exit ([`Exited::explanation`]), with
    /// its hint.
    pub fn explanation(&self) -> Option<String> {
        Exited {
            exit_code: self.exit_code,
            id: self.container_id.clone(),
            oom_killed: Some(self.oom_killed),
        }
        .explanation()
        .map(|explanation| explanation.with_hint().to_string())
    }
}

impl From<Launched> for Outcome {
    fn from(launched: Launched) -> Outcome {
        match launched {
            Launched::Started(started) => Outcome {
                exit_code: 0,
                container_id: started.id.clone(),
                oom_killed: false,
            },
            Launched::Exited(exited) => Outcome {
                exit_code: exited.exit_code,
                container_id: exited.id,
                oom_killed: exited.oom_killed == Some(true),
            },
        }
    }
}

/// Launches `spec` through `port` with the caller's environment `env` (secrets by name),
/// never pulling, stdin not a terminal: [`agentc_engine::launch::launch`], as `agentc run`.
pub async fn launch<P: EnginePort>(
    port: &P,
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
    options: &LaunchOptions,
) -> Result<Outcome, ExecError> {
    let mut signals = Signals::new()?;
    launch::launch(port, spec, env, options, &mut |_| {}, &mut signals)
        .await
        .map(Outcome::from)
}

/// Launches every spec detached through `port`, at most `jobs` at a time, started whole or
/// not at all: [`agentc_engine::launch::launch_copies`], as `agentc run --count`.
pub async fn launch_many<P: EnginePort>(
    port: &P,
    specs: &[ContainerSpec],
    env: &BTreeMap<String, String>,
    options: &LaunchOptions,
    jobs: usize,
) -> Result<Vec<Started>, LaunchManyError> {
    let mut signals = Signals::new().map_err(|error| LaunchManyError {
        count: specs.len(),
        failed: vec![("the fleet".to_string(), error)],
        not_started: Vec::new(),
        rolled_back: Vec::new(),
        left: Vec::new(),
    })?;
    launch::launch_copies(port, specs, env, options, jobs, &mut |_| {}, &mut signals).await
}

/// [`launch()`] through the command line's port (`docker` or `podman`), on a runtime of its own.
pub fn launch_cli(
    engine: Engine,
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
    options: &LaunchOptions,
) -> Result<Outcome, ExecError> {
    let port = agentc_backend_cli::exec::port::CliPort::new(engine);
    agentc_backend_cli::exec::egress::block_on(launch(&port, spec, env, options))?
}
