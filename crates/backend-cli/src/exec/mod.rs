//! Executing with the docker CLI; the renderer stays pure.
//!
//! - [`process`]: spawning a program with an argv and turning how it ended into an exit code.
//! - [`signals`]: the [`SignalShield`] that keeps SIGINT and SIGTERM from ending agentc while
//!   a foreground docker command (`build`, `apply`) runs, so docker's exit code comes back and
//!   a SIGTERM can be passed on.
//! - [`docker`]: the docker CLI in the foreground and the queries around it (inspect, its
//!   refusal lines, the `--cidfile`).
//! - [`port`]: the engine port through the command line (`CliPort`), over which every
//!   orchestration is written once (the launch, attached, detached and `--count`:
//!   [`agentc_engine::launch`]; the egress companion and the leftovers' removal:
//!   [`agentc_engine::companion`]); `attached` is its attached run (`docker run` in the
//!   foreground).
//! - [`egress`]: the companion's helpers for blocking callers (the proxy image's import).
//! - [`engine`](mod@engine): the argv for the engine in use (Docker or Podman) and the
//!   fail-closed check of the launch's runtime.
//! - [`launch`](fn@launch): a whole container launch from blocking code, the launch written once
//!   over this backend's port.

mod attached;
pub mod docker;
pub mod egress;
pub mod engine;
pub mod port;
pub mod process;
pub mod signals;

use std::collections::BTreeMap;

use agentc_engine::launch::{self as common, LaunchOptions, Launched, ProxyExecutable};
use agentc_engine::signals::Signals;
use agentc_engine::{Engine, ExecError};
use agentc_policy::ContainerSpec;
use bollard::models::ContainerInspectResponse;

pub use process::{run, spawn, wait_forwarding};
pub use signals::SignalShield;

/// How a launch through the docker CLI ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The container's exit code for an attached launch (137 when it was killed), 0 once a
    /// detached one started.
    pub exit_code: i32,
    /// A detached container that started: its inspect, to show where it can be reached.
    pub started: Option<ContainerInspectResponse>,
}

impl Outcome {
    /// A one-line explanation of an abnormal exit: 137 is a SIGKILL, which the out-of-memory
    /// killer sends (the docker CLI does not say whether it did).
    pub fn explanation(&self) -> Option<String> {
        common::Exited {
            exit_code: i64::from(self.exit_code),
            id: String::new(),
            oom_killed: None,
        }
        .explanation()
    }
}

/// Launches a container through the docker CLI from blocking code: the launch written once over
/// the engine port ([`agentc_engine::launch::launch`] through [`port::CliPort`]) on a
/// runtime of its own. Refuses an unset required secret, a value docker's argv cannot carry and
/// a missing image unless `pull` (`notify` is told when it is pulled) before anything is
/// created; a SIGINT or SIGTERM at any step ends the launch with [`ExecError::Interrupted`]
/// (exit 130 or 143) and removes what it created, TTY or not. docker reads the secrets'
/// values from its environment (from `env`, by name), never from its argv. An egress proxy's
/// image is made of the agentc executable `proxy_executable` unless the spec names one.
pub fn launch(
    engine: Engine,
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
    pull: bool,
    proxy_executable: &ProxyExecutable,
    mut notify: impl FnMut(&str) + Send,
) -> Result<Outcome, ExecError> {
    egress::block_on(async {
        let port = port::CliPort::new(engine);
        let mut signals = Signals::new()?;
        let options = LaunchOptions {
            pull,
            terminal: false,
            proxy_executable: proxy_executable.clone(),
        };
        match common::launch(&port, spec, env, &options, &mut notify, &mut signals).await? {
            Launched::Exited(exited) => Ok(Outcome {
                exit_code: i32::try_from(exited.exit_code).unwrap_or(1),
                started: None,
            }),
            Launched::Started(started) => Ok(Outcome {
                exit_code: 0,
                started: Some(common::reachable(&port, &started).await?),
            }),
        }
    })?
}
