//! The `agentc` command line: parses the arguments, reads the disk, the environment and the
//! terminal, calls the libraries and prints.
//!
//! What a launch depends on from the machine (the profile file, the workspace, the user, the
//! `AGENTC_*` environment) is read by `agentc_host`, for this binary and library callers alike;
//! the policy crate and the renderers receive everything as values, and executing a launch (the
//! docker CLI, the Engine API) is the backends' (`agentc_backend_cli::exec`,
//! `agentc_backend_api`), with what they share in `agentc_engine`. The
//! offline commands (`validate`, `schema`, `explain`, `render`, `init`, `plan`,
//! `completions`, `man`) never start a runtime or connect to a daemon; the launching and
//! lifecycle commands (`run`, `seed`, `build`, `ps`, `rm`, `verify`, `apply`, `rollback`,
//! `lock`, `doctor`) create a tokio runtime only when they talk to the Engine API, and the
//! session commands (`exec`, `cp`, `port`, `logs`, `egress log`, `stop`, `start`, `shell`)
//! for either backend; the hidden `egress-proxy serve` (run inside the egress proxy's
//! container) starts its own.
#![deny(missing_docs)]

pub mod cli;
pub mod commands;
pub mod context;
mod table;
pub mod verbose;

pub use agentc_host::{bundled, lifecycle};

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};

use agentc_policy::Hinted;
use cli::{Cli, Command};

/// Runs one parsed command line: prints its output or `error: MESSAGE`, and returns the exit
/// status (see `agentc --help`).
pub fn execute(cli: Cli) -> ExitCode {
    if cli.verbose {
        verbose::enable();
    }
    // Test-only: pause the launch at a named step (see `agentc_engine::pause`).
    if let Ok(step) = std::env::var("AGENTC_TEST_PAUSE_AT") {
        agentc_engine::pause::set_pause_at(&step);
    }
    match choose_engine(cli.engine) {
        Ok(engine) => set_engine(engine),
        Err(failure) => {
            eprintln!("error: {}", failure.with_hint());
            return ExitCode::from(failure.code);
        }
    }
    match dispatch(cli.command) {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            eprintln!("error: {}", failure.with_hint());
            ExitCode::from(failure.code)
        }
    }
}

/// Runs one command: its exit status, or the failure [`execute`] reports.
fn dispatch(command: Command) -> Result<u8, context::Failure> {
    match command {
        Command::Run(crate::cli::Sub(args)) => commands::run::run(args),
        Command::Seed(crate::cli::Sub(args)) => commands::seed::seed(args),
        Command::Build(crate::cli::Sub(args)) => commands::build::build(args),
        Command::Image(command) => commands::image::image(command),
        Command::Ps(crate::cli::Sub(args)) => commands::ps::ps(args),
        Command::Rm(crate::cli::Sub(args)) => commands::rm::rm(args),
        Command::Verify(crate::cli::Sub(args)) => commands::verify::verify(args),
        Command::Exec(crate::cli::Sub(args)) => commands::session::exec(args),
        Command::Cp(crate::cli::Sub(args)) => commands::session::cp(args),
        Command::Port(crate::cli::Sub(args)) => commands::session::port(args),
        Command::Logs(crate::cli::Sub(args)) => commands::session::logs(args),
        Command::Egress(cli::EgressCommand::Log(crate::cli::Sub(args))) => {
            commands::session::egress_log(args)
        }
        Command::Pool(command) => commands::pool::pool(command),
        Command::Stop(crate::cli::Sub(args)) => commands::session::stop(args),
        Command::Start(crate::cli::Sub(args)) => commands::session::start(args),
        Command::Shell(crate::cli::Sub(args)) => commands::session::shell(args),
        Command::Pause(crate::cli::Sub(args)) => commands::snapshot::pause(args, false),
        Command::Resume(crate::cli::Sub(args)) => commands::snapshot::pause(args, true),
        Command::Snapshot(crate::cli::Sub(args)) => commands::snapshot::snapshot(args),
        Command::Restore(crate::cli::Sub(args)) => commands::restore::restore(args, 1),
        Command::Fork(crate::cli::Sub(args)) => {
            commands::restore::restore(args.restore, args.count)
        }
        Command::Explain(crate::cli::Sub(args)) => commands::offline::explain(args),
        Command::EgressProxy(command) => commands::egress::egress_proxy(command),
        Command::Init(crate::cli::Sub(args)) => commands::init::init(args),
        Command::Doctor(crate::cli::Sub(args)) => commands::doctor::doctor(args),
        Command::Plan(crate::cli::Sub(args)) => commands::plan::plan(args),
        Command::Apply(crate::cli::Sub(args)) => commands::apply::apply(args),
        Command::Rollback(crate::cli::Sub(args)) => commands::apply::rollback(args),
        Command::Lock(crate::cli::Sub(args)) => commands::lock::lock(args),
        Command::Completions(crate::cli::Sub(args)) => commands::completions::completions(args),
        Command::Man => commands::completions::man(),
        Command::Serve(crate::cli::Sub(args)) => commands::serve::serve(args),
        offline => commands::offline::dispatch(offline).map(|output| {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`agentc render ... | head`) is not an error worth reporting.
            let _ = stdout.write_all(output.as_bytes());
            0
        }),
    }
}

/// The engine the commands of this process drive: `0` Docker, `1` Podman. Only the binary keeps
/// it, as [`execute`] read it from the command line and the environment ([`choose_engine`]);
/// every library it calls takes the engine as a value (the ports,
/// [`agentc_backend_api::connect`], the errors that name it).
static ENGINE: AtomicU8 = AtomicU8::new(0);

/// Chooses the engine the commands of this process drive, as [`execute`] does from `--engine`
/// or `AGENTC_ENGINE`; for a program that calls the commands in-process (the tests).
pub fn set_engine(engine: agentc_engine::Engine) {
    let code = match engine {
        agentc_engine::Engine::Docker => 0,
        agentc_engine::Engine::Podman => 1,
    };
    ENGINE.store(code, Ordering::SeqCst);
}

/// The engine the commands of this process drive ([`set_engine`]; Docker until then).
pub fn engine() -> agentc_engine::Engine {
    match ENGINE.load(Ordering::SeqCst) {
        1 => agentc_engine::Engine::Podman,
        _ => agentc_engine::Engine::Docker,
    }
}

/// The engine: `--engine`, else `AGENTC_ENGINE` (read here only), else docker.
pub(crate) fn choose_engine(
    flag: Option<agentc_engine::Engine>,
) -> Result<agentc_engine::Engine, context::Failure> {
    use agentc_engine::Engine;
    if let Some(engine) = flag {
        return Ok(engine);
    }
    match std::env::var("AGENTC_ENGINE") {
        Ok(text) if !text.trim().is_empty() => Engine::parse(&text).ok_or_else(|| {
            context::Failure::usage(format!("AGENTC_ENGINE={text:?} is not an engine"))
                .hinted("set it to docker or podman, or unset it")
        }),
        _ => Ok(Engine::Docker),
    }
}
