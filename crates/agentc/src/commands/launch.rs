//! What the launching commands share: the tokio runtime (created here only, never by the
//! offline commands), the machine's environment and daemon address, executing a container
//! launch through either backend, printing what it started, and the exit status of a launch
//! error. The launch comes resolved and final: detaching, naming, copies and the terminal are
//! inputs of `resolve` ([`agentc_policy::Instance`]), never edits of its spec.

use std::io::IsTerminal;

use agentc_backend_api::port::ApiPort;
use agentc_backend_cli::exec::port::CliPort;
use agentc_engine::isolation::Met;
use agentc_engine::launch::ProxyExecutable;
use agentc_host::launch::{Launcher, Outcome};
use agentc_policy::{ContainerSpec, Hinted, LaunchSpec};

use crate::cli::BackendArg;
use crate::context::Failure;

pub use agentc_host::backend::{exec_failure, process_env, runtime, Reaped};
pub use agentc_host::container_of;
pub use agentc_host::launch::refuse_fixed_host_ports;

/// Connects to this process's engine, where this process's environment puts it
/// ([`agentc_host::backend::connect`]).
pub async fn connect() -> Result<ApiPort, Failure> {
    agentc_host::backend::connect(crate::engine(), &process_env(), &reaped()).await
}

/// This process's engine's command line port, the leftovers of killed launches reaped first
/// ([`agentc_host::backend::cli_port_reaping`]).
pub async fn cli_port_reaping(own: Option<&str>) -> CliPort {
    agentc_host::backend::cli_port_reaping(crate::engine(), &process_env(), own, &reaped()).await
}

/// What this process says of the leftovers of killed launches that reaching the engine
/// removed: `agentc: removed the egress companion of W, ...` on stderr, as it happens.
pub fn reaped() -> Reaped {
    Reaped::new(|orphans| notify(&orphans.removed_line()))
}

/// Evaluates `$body` with `$port` bound to `$backend`'s engine port for this process's engine,
/// where this process's environment puts it, the leftovers it reaped said on stderr
/// ([`agentc_host::over_port!`], [`reaped`]): the one place a command picks its port.
macro_rules! over_port {
    ($backend:expr, $own:expr, |$port:ident| $body:expr) => {
        agentc_host::over_port!(
            agentc_host::backend::BackendChoice::from($backend),
            $crate::engine(),
            &$crate::commands::launch::process_env(),
            &$crate::commands::launch::reaped(),
            $own,
            |$port| $body
        )
    };
}
pub(crate) use over_port;

/// The line `agentc run` prints on stderr for each finding at or above
/// [`agentc_policy::Severity::High`] before it launches: where the finding comes from and
/// what it opens, so that nothing that widens the sandbox starts silently.
pub fn finding_warnings(findings: &[agentc_policy::Finding]) -> Vec<String> {
    findings
        .iter()
        .filter(|finding| finding.severity() >= agentc_policy::Severity::High)
        .map(|finding| format!("agentc: warning: {finding}"))
        .collect()
}

/// Prints a line a backend hands over while it prepares a launch (an image being pulled).
pub fn notify(line: &str) {
    eprintln!("agentc: {line}");
}

/// The launcher of this process ([`agentc_host::launch`]): its engine and environment, the
/// egress proxy and the floor's probe images of this binary, the terminal it has.
pub fn launcher() -> Launcher {
    Launcher {
        engine: crate::engine(),
        env: process_env(),
        proxy: ProxyExecutable::running(),
        terminal: std::io::stdin().is_terminal(),
        reaped: reaped(),
    }
}

/// Meets the container's isolation floor through `backend`'s own engine port, when it has one
/// ([`Launcher::meet_floor`]), saying on stderr what was chosen; a container without a floor
/// comes back unchanged, without asking the engine.
pub fn meet_floor(
    container: &ContainerSpec,
    profile: &str,
    backend: BackendArg,
) -> Result<Met, Failure> {
    launcher().meet_floor(container, profile, backend.into(), &mut |line| notify(line))
}

/// Executes a container launch through `backend` ([`Launcher::launch_resolved`]: host ports,
/// the isolation floor, the launch) and returns the exit status: the container's exit code for
/// an attached launch, 0 for a started detached one (whose name and reachable addresses are
/// printed; an attached container's abnormal exit is said on stderr). With `pull`, a missing
/// image is pulled first, with progress on stderr, before anything is created.
pub fn execute(spec: &LaunchSpec, backend: BackendArg, pull: bool) -> Result<u8, Failure> {
    let outcome =
        launcher().launch_resolved(spec, backend.into(), pull, &mut |line| notify(line))?;
    match &outcome {
        Outcome::Started(started) => println!("{started}"),
        Outcome::Exited {
            explanation: Some(explanation),
            ..
        } => eprintln!("agentc: {}", explanation.with_hint()),
        Outcome::Exited { .. } => {}
    }
    Ok(outcome.status())
}

/// Launches the detached copies of `agentc run --count`, each resolved as its own instance
/// (named NAME-1 to NAME-COUNT, [`agentc_policy::Instance::copy`]), through `backend`'s
/// engine port, `jobs` launches at a time ([`Launcher::copies_on`]): either all start, or
/// none is left running and every failure is named. Prints each started copy, in order. The
/// caller refused a fixed host port first ([`refuse_fixed_host_ports`], before the floor asked
/// the engine).
pub fn execute_copies(
    copies: &[LaunchSpec],
    backend: BackendArg,
    pull: bool,
    jobs: usize,
) -> Result<u8, Failure> {
    let profile = copies
        .first()
        .map(|spec| spec.profile.clone())
        .unwrap_or_default();
    let copies = copies
        .iter()
        .map(|copy| container_of(copy).cloned())
        .collect::<Result<Vec<ContainerSpec>, Failure>>()?;
    if copies.is_empty() {
        return Ok(0);
    }
    agentc_host::launch::refuse_unplaced_copies(&copies, &profile)?;
    let launcher = launcher();
    let started = runtime()?.block_on(async {
        over_port!(backend, None, |port| launcher
            .copies_on(&port, &copies, pull, jobs, &mut |line| notify(line))
            .await)
    })?;
    for copy in started {
        match copy {
            Ok(started) => println!("{started}"),
            Err(line) => eprintln!("agentc: {line}"),
        }
    }
    Ok(0)
}

/// The lifecycle's engine queries through `backend` for this process's engine, where this
/// process's environment puts it ([`agentc_host::lifecycle::engine::connect`] with
/// [`launcher`]).
pub fn lifecycle_engine(
    backend: BackendArg,
) -> Result<Box<dyn agentc_host::lifecycle::engine::Engine>, Failure> {
    agentc_host::lifecycle::engine::connect(&launcher(), backend.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_engine::ExecError;

    #[test]
    fn refusals_of_rm_exit_1_and_daemon_failures_125() {
        let refused = exec_failure(ExecError::NotAgentc { name: "db".into() });
        assert_eq!(refused.code, 1);
        assert!(
            refused.message.contains("refusing db"),
            "{}",
            refused.message
        );
        let missing = exec_failure(ExecError::ImageMissing {
            engine: agentc_engine::Engine::Docker,
            image: "x:1".into(),
        });
        assert_eq!(missing.code, 125);
    }
}
