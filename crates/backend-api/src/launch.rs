//! Launching a container through the Engine API: [`launch`], the library's call, runs the
//! launch written once over the engine port ([`agentc_engine::launch`]) through
//! [`crate::port::ApiPort`], as [`launch_many`] runs the copies of `--count`; the port's
//! attached run is [`crate::attached`].
//!
//! What `docker run` does beyond the API call, decided here explicitly: agentc pulls only when
//! asked (`--pull`, [`agentc_engine::image::ensure_image`]; otherwise a missing
//! image is an error that says how to build it); it does not inject the CLI config's
//! proxy variables (the profile's egress policy owns the environment); secrets are read from
//! the environment map handed in, and an unset optional secret is left out rather than sent
//! as a bare name.

use std::collections::BTreeMap;
use std::fmt;
use std::io::IsTerminal;

use crate::port::ApiPort;
use agentc_engine::launch::{Exited, LaunchManyError, ProxyExecutable, Started};
use agentc_engine::signals::Signals;
use agentc_engine::ExecError;
use agentc_policy::ContainerSpec;

/// How to run a launch, beyond the spec.
#[derive(Clone, Default)]
pub struct LaunchOptions {
    /// The caller's environment, from which secrets are resolved.
    pub env: BTreeMap<String, String>,
    /// Whether stdin is a terminal: with a TTY spec, the terminal is switched to raw mode and
    /// its size follows the local window. [`LaunchOptions::from_terminal`] detects it.
    pub stdin_is_terminal: bool,
    /// The agentc executable the egress proxy's image is made of (unless the spec names an
    /// image): by default the running executable; a program embedding agentc names the agentc
    /// binary.
    pub proxy_executable: ProxyExecutable,
}

impl LaunchOptions {
    /// Options with `env`, detecting whether this process's stdin is a terminal.
    pub fn from_terminal(env: BTreeMap<String, String>) -> Self {
        LaunchOptions {
            env,
            stdin_is_terminal: std::io::stdin().is_terminal(),
            proxy_executable: ProxyExecutable::default(),
        }
    }
}

impl fmt::Debug for LaunchOptions {
    // The environment holds secret values: show names only.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("LaunchOptions")
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("stdin_is_terminal", &self.stdin_is_terminal)
            .field("proxy_executable", &self.proxy_executable)
            .finish()
    }
}

/// How a launch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The container's exit code; 0 for a detached launch.
    pub exit_code: i64,
    /// The container's ID.
    pub container_id: String,
    /// The kernel's OOM killer ended the container (exit code 137), when the daemon could still
    /// say so.
    pub oom_killed: bool,
}

impl Outcome {
    /// A one-line explanation of an abnormal exit, such as a kill by the OOM killer
    /// ([`Exited::explanation`]).
    pub fn explanation(&self) -> Option<String> {
        Exited {
            exit_code: self.exit_code,
            id: self.container_id.clone(),
            oom_killed: Some(self.oom_killed),
        }
        .explanation()
    }
}

/// Launches a container through `docker` ([`agentc_engine::launch::launch`] over the
/// Engine API's [port](crate::port::ApiPort)): resolves secrets and checks the image before
/// creating anything, creates it, then either starts it detached or attaches, starts, waits and
/// removes it. SIGINT or SIGTERM at any step kills and removes what was created.
pub async fn launch(
    port: &ApiPort,
    spec: &ContainerSpec,
    options: &LaunchOptions,
) -> Result<Outcome, ExecError> {
    use agentc_engine::launch::{self, Launched};
    let mut signals = Signals::new()?;
    let how = launch::LaunchOptions {
        pull: false,
        terminal: options.stdin_is_terminal,
        proxy_executable: options.proxy_executable.clone(),
    };
    let launched =
        launch::launch(port, spec, &options.env, &how, &mut |_| {}, &mut signals).await?;
    Ok(match launched {
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
    })
}

/// Launches every spec detached through `docker`, at most `jobs` at a time, started whole or
/// not at all ([`agentc_engine::launch::launch_copies`] over the Engine API's port,
/// each image inspected once for the fleet, one connection pool); the started sandboxes in
/// the order given.
pub async fn launch_many(
    port: &ApiPort,
    specs: &[ContainerSpec],
    options: &LaunchOptions,
    jobs: usize,
) -> Result<Vec<Started>, LaunchManyError> {
    let unlistened = |error: ExecError| LaunchManyError {
        count: specs.len(),
        failed: vec![("the fleet".to_string(), error)],
        not_started: Vec::new(),
        rolled_back: Vec::new(),
        left: Vec::new(),
    };
    let mut signals = Signals::new().map_err(unlistened)?;
    let how = agentc_engine::launch::LaunchOptions {
        proxy_executable: options.proxy_executable.clone(),
        ..Default::default()
    };
    agentc_engine::launch::launch_copies(
        port,
        specs,
        &options.env,
        &how,
        jobs,
        &mut |_| {},
        &mut signals,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller_env() -> BTreeMap<String, String> {
        BTreeMap::from([("TOKEN".to_string(), "s3cret-value".to_string())])
    }

    #[test]
    fn launch_options_debug_hides_values() {
        let options = LaunchOptions {
            env: caller_env(),
            ..LaunchOptions::default()
        };
        let debug = format!("{options:?}");
        assert!(debug.contains("TOKEN"), "{debug}");
        assert!(!debug.contains("s3cret-value"), "{debug}");
    }

    #[test]
    fn exit_137_is_explained() {
        let outcome = |exit_code, oom_killed| Outcome {
            exit_code,
            container_id: "x".into(),
            oom_killed,
        };
        assert!(outcome(137, true)
            .explanation()
            .unwrap()
            .contains("out-of-memory"));
        assert!(outcome(137, false)
            .explanation()
            .unwrap()
            .contains("SIGKILL"));
        assert_eq!(outcome(3, false).explanation(), None);
    }
}
