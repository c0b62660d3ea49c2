//! The engine port a process drives, chosen and opened as the command line does it, for
//! library callers alike: the backend (`auto`: Docker's Engine API where it answers, else
//! the engine's command line; [`chosen`]), where the engine's API is ([`engine_host`], read
//! from the environment the caller passes, never the process's behind its back), the
//! connection checked to be the engine asked for ([`connect`]), and the leftovers of killed
//! launches reaped first ([`reap`]) before anything else is asked, what was removed told to the
//! caller's [`Reaped`] (nothing printed). [`on_client`] runs one step against either backend's
//! sessions client ([`Sandboxes`]), in a runtime of its own.
//!
//! ```no_run
//! use agentc_egress::image::ProxyExecutable;
//! use agentc_engine::session::{create_with_findings, Sandboxes, SessionPort};
//! use agentc_host::backend::{on_client, BackendChoice, Driver, OnClient};
//! use agentc_host::{load_profile, resolve_instance, Failure, LaunchRequest};
//! use agentc_policy::{Instance, Start};
//!
//! /// Creates the sandbox of a profile file, as `agentc run --detach` resolves it.
//! struct Create;
//!
//! impl OnClient for Create {
//!     type Output = String;
//!     async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<String, Failure> {
//!         let request = LaunchRequest::new("profiles/pentest.toml");
//!         let loaded = load_profile(&request.profile)?;
//!         let instance = Instance {
//!             start: Start::Session,
//!             default_name: Some("pentest-1".into()),
//!             ..Instance::default()
//!         };
//!         let spec = resolve_instance(&loaded, &request, instance)?;
//!         let created = create_with_findings(client, &loaded, &spec)
//!             .await
//!             .map_err(agentc_host::backend::session_failure)?;
//!         Ok(created.sandbox.name)
//!     }
//! }
//!
//! let env = agentc_host::backend::process_env();
//! // The agentc binary the egress proxy's image is made of: never the calling program.
//! let proxy = ProxyExecutable::locate(&env).expect("agentc on PATH");
//! // Secrets and the engine's address (`DOCKER_HOST`, ...) read from this process's
//! // environment (`Driver::env`; a task's own may replace it).
//! let driver = Driver::new(agentc_engine::Engine::Docker, BackendChoice::Auto, proxy);
//! let name = on_client(&driver, Create)?;
//! # Ok::<(), Failure>(())
//! ```
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;

use agentc_backend_api::port::ApiPort;
use agentc_backend_cli::exec::port::CliPort;
use agentc_egress::image::ProxyExecutable;
use agentc_engine::companion::state::Orphans;
use agentc_engine::port::EnginePort;
use agentc_engine::session::{Sandboxes, SessionError, SessionPort};
use agentc_engine::{Engine, ExecError};
use agentc_policy::Hinted;

use crate::failure::{Failure, EXIT_DOCKER};

/// Which backend to drive, as asked (`--backend`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// Docker's Engine API where it answers ([`engine_host`]), the command line otherwise and
    /// for Podman ([`auto_backend`]).
    #[default]
    Auto,
    /// The engine's command line.
    Cli,
    /// The Engine API.
    Api,
}

/// The backend a process drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The engine's command line.
    Cli,
    /// The Engine API.
    Api,
}

/// A current-thread tokio runtime with I/O and timers, for one command.
pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            Failure::new(
                EXIT_DOCKER,
                format!("cannot start the async runtime: {error}"),
            )
        })
}

/// Who hears of the leftovers of killed launches that reaching the engine removed ([`reap`]):
/// each gone workload's egress companion ([`Orphans`]), told as it is removed, before the step
/// that reached the engine goes on. agentc prints each one's [`Orphans::removed_line`] on
/// stderr; the default ([`Reaped::default`]) logs it (`log::info!`) and prints nothing.
#[derive(Clone)]
pub struct Reaped(Arc<dyn Fn(&Orphans) + Send + Sync>);

impl Reaped {
    /// Tells `tell` of each workload's companion removed.
    pub fn new(tell: impl Fn(&Orphans) + Send + Sync + 'static) -> Reaped {
        Reaped(Arc::new(tell))
    }

    /// Tells of `orphans`, removed.
    pub fn tell(&self, orphans: &Orphans) {
        (self.0)(orphans)
    }
}

impl Default for Reaped {
    /// Logs each removal, prints nothing.
    fn default() -> Reaped {
        Reaped::new(|orphans| log::info!("{}", orphans.removed_line()))
    }
}

impl std::fmt::Debug for Reaped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reaped")
    }
}

/// The whole process environment: where secrets are resolved from, at launch only.
pub fn process_env() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

/// Where `engine`'s API is for a caller whose environment is `env` ([`Driver::env`],
/// [`Launcher::env`](crate::launch::Launcher::env); [`process_env`] for agentc itself): for
/// Docker `DOCKER_HOST`, else the docker command's current context (`DOCKER_CONTEXT`,
/// `DOCKER_CONFIG`, `HOME`; `None`: the local socket); for Podman `CONTAINER_HOST`,
/// `DOCKER_HOST`, else its socket by Podman's conventions.
pub fn engine_host(engine: Engine, env: &BTreeMap<String, String>) -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    agentc_engine::engine::api_host(engine, env, root)
}

/// Whether `engine`, as `env` names it ([`engine_host`]), runs on another machine
/// (`DOCKER_HOST=tcp://…` or `ssh://…`): its published ports are that machine's.
pub fn engine_is_remote(engine: Engine, env: &BTreeMap<String, String>) -> bool {
    agentc_engine::engine::is_remote(engine, env)
}

/// A launch failure, with its exit status ([`ExecError::exit_code`]).
pub fn exec_failure(error: ExecError) -> Failure {
    let code = u8::try_from(error.exit_code()).unwrap_or(EXIT_DOCKER);
    Failure::from_hinted(code, &error)
}

/// A session error, with its exit status ([`SessionError::exit_code`]).
pub fn session_failure(error: SessionError) -> Failure {
    Failure::from_hinted(
        u8::try_from(error.exit_code()).unwrap_or(EXIT_DOCKER),
        &error,
    )
}

/// A verify that produced no checks, with its exit status
/// ([`agentc_verify::VerifyError::exit_code`]): `agentc verify`'s and `agentc serve`'s.
pub fn verify_failure(error: agentc_verify::VerifyError) -> Failure {
    Failure::from_hinted(
        u8::try_from(error.exit_code()).unwrap_or(crate::failure::EXIT_FAILED),
        &error,
    )
}

/// The backend `choice` means for `engine` where `env` puts it: `auto` is Docker's Engine API
/// when it answers at [`engine_host`] ([`agentc_engine::engine::api_reachable`], a connection
/// and no request), else the command line ([`auto_backend`]); decided once a process for each
/// engine and address, and logged.
pub fn chosen(choice: BackendChoice, engine: Engine, env: &BTreeMap<String, String>) -> Backend {
    static AUTO: std::sync::Mutex<BTreeMap<EngineAt, Backend>> =
        std::sync::Mutex::new(BTreeMap::new());
    match choice {
        BackendChoice::Cli => Backend::Cli,
        BackendChoice::Api => Backend::Api,
        BackendChoice::Auto => {
            let key = engine_at(engine, env);
            let known = AUTO
                .lock()
                .ok()
                .and_then(|decided| decided.get(&key).copied());
            known.unwrap_or_else(|| {
                let (chosen, why) = auto_backend(engine, env);
                log::info!("backend: {why}");
                if let Ok(mut decided) = AUTO.lock() {
                    decided.insert(key, chosen);
                }
                chosen
            })
        }
    }
}

/// An engine and where it is ([`engine_host`]): what a process decides and reaps once for.
type EngineAt = (&'static str, Option<String>);

/// `engine` where `env` puts it.
fn engine_at(engine: Engine, env: &BTreeMap<String, String>) -> EngineAt {
    (engine.program(), engine_host(engine, env))
}

/// What `auto` chooses for `engine` where `env` puts it ([`engine_host`]), and why, in words
/// (`agentc doctor` shows them). Podman is driven through its command line: its API socket
/// ignores `HostConfig.Runtime` (an isolation floor could not be met through it) and exports
/// no memory checkpoints.
pub fn auto_backend(engine: Engine, env: &BTreeMap<String, String>) -> (Backend, String) {
    if engine == Engine::Podman {
        return (
            Backend::Cli,
            "cli (Podman's API socket selects no runtime and exports no checkpoints: the podman command runs each step; --backend api uses the socket)".to_string(),
        );
    }
    match agentc_engine::engine::api_reachable(engine_host(engine, env).as_deref()) {
        Ok(endpoint) => (
            Backend::Api,
            format!("api (the {engine} Engine API at {endpoint} answers)"),
        ),
        Err(why) => (
            Backend::Cli,
            format!("cli (the {engine} Engine API cannot be reached: {why}; the {engine} command runs each step)"),
        ),
    }
}

/// Connects to `engine`'s API where `env` puts it ([`engine_host`]) and checks that the engine
/// answering is the one asked for: the engine port over that connection, after the leftovers
/// of killed launches are reaped and told to `reaped` ([`connect_reaping`]).
pub async fn connect(
    engine: Engine,
    env: &BTreeMap<String, String>,
    reaped: &Reaped,
) -> Result<ApiPort, Failure> {
    connect_reaping(engine, env, None, reaped).await
}

/// [`connect`], then the egress companions of launches killed before they finished removed
/// and told to `reaped` ([`reap`]), those of `own` (the workload the caller launches next) at
/// once.
pub async fn connect_reaping(
    engine: Engine,
    env: &BTreeMap<String, String>,
    own: Option<&str>,
    reaped: &Reaped,
) -> Result<ApiPort, Failure> {
    let port = connect_only(engine, env).await?;
    reap(&port, env, own, reaped).await;
    Ok(port)
}

/// The command line's engine port, its commands run with `env` on top of this process's
/// environment (so that the program reaches the engine `env` names: [`CliPort::in_env`]),
/// after the leftovers of killed launches are reaped and told to `reaped` ([`reap`]) as
/// [`connect_reaping`] reaps them: through the Engine API when it answers (one request a
/// listing), else, Podman without its service, through the command line itself.
pub async fn cli_port_reaping(
    engine: Engine,
    env: &BTreeMap<String, String>,
    own: Option<&str>,
    reaped: &Reaped,
) -> CliPort {
    let port = CliPort::new(engine).in_env(env);
    if reaped_already(engine, env, own) {
        return port;
    }
    match connect_only(engine, env).await {
        Ok(api) => reap_now(&api, own, reaped).await,
        Err(failure) => {
            log::debug!(
                "looking for the leftovers of killed launches through the command line: {}",
                failure.with_hint()
            );
            reap_now(&port, own, reaped).await
        }
    }
    port
}

/// Evaluates `$body` with `$port` bound to the engine port `$choice` means for `$engine` where
/// the environment `$env` (a `&BTreeMap<String, String>`) puts it, in an async block whose
/// error is a [`Failure`]: the command line's ([`cli_port_reaping`]) or the Engine API's over a
/// checked connection ([`connect_reaping`]), the leftovers of killed launches reaped first
/// either way, `$own`'s at once, and told to `$reaped` (a [`&Reaped`](Reaped)). The one place
/// a port is picked, so both backends do the same before they run.
#[macro_export]
macro_rules! over_port {
    ($choice:expr, $engine:expr, $env:expr, $reaped:expr, $own:expr, |$port:ident| $body:expr) => {
        match $crate::backend::chosen($choice, $engine, $env) {
            $crate::backend::Backend::Cli => {
                let $port = $crate::backend::cli_port_reaping($engine, $env, $own, $reaped).await;
                $body
            }
            $crate::backend::Backend::Api => {
                let $port = $crate::backend::connect_reaping($engine, $env, $own, $reaped).await?;
                $body
            }
        }
    };
}

/// Whether this process looked for the leftovers of killed launches on `engine` where `env`
/// puts it ([`engine_host`]) already: a command that asks the engine several times reaps once,
/// unless it names the workload it launches next (`own`), whose killed launch's leftovers go
/// at once. A caller driving two engines has each reaped.
fn reaped_already(engine: Engine, env: &BTreeMap<String, String>, own: Option<&str>) -> bool {
    static REAPED: std::sync::Mutex<BTreeSet<EngineAt>> = std::sync::Mutex::new(BTreeSet::new());
    let first = REAPED
        .lock()
        .map_or(true, |mut reaped| reaped.insert(engine_at(engine, env)));
    !first && own.is_none()
}

/// Removes the egress companions whose workload is gone and tells `reaped` of each, once a
/// process for each engine `port` and `env` name (unless it names `own`, the workload launched
/// next); prints nothing. A failure is logged only (the caller goes on).
pub async fn reap<P: EnginePort>(
    port: &P,
    env: &BTreeMap<String, String>,
    own: Option<&str>,
    reaped: &Reaped,
) {
    if !reaped_already(port.engine(), env, own) {
        reap_now(port, own, reaped).await;
    }
}

/// [`reap`] whether or not this process reaped already.
async fn reap_now<P: EnginePort>(port: &P, own: Option<&str>, reaped: &Reaped) {
    // Test-only: a fault test has its own profile's killed launches judged at once.
    let at_once = std::env::var("AGENTC_TEST_REAP_AT_ONCE").ok();
    match agentc_engine::companion::reap(port, own, at_once.as_deref()).await {
        Ok(found) => {
            for orphans in &found {
                reaped.tell(orphans);
            }
        }
        Err(error) => log::warn!(
            "could not look for the leftovers of killed launches: {error}",
            error = error.with_hint()
        ),
    }
}

/// Connects to the engine where `env` puts it ([`engine_host`]) and checks it is the one
/// chosen, nothing more.
async fn connect_only(engine: Engine, env: &BTreeMap<String, String>) -> Result<ApiPort, Failure> {
    let host = engine_host(engine, env);
    let port = agentc_backend_api::connect(engine, host.as_deref())
        .await
        .map_err(exec_failure)?;
    let endpoint = host.unwrap_or_else(|| "the local docker socket".to_string());
    port.check_engine(&endpoint).await.map_err(exec_failure)?;
    Ok(port)
}

/// One step run against either backend's sessions client ([`Sandboxes`] over the command
/// line's or the Engine API's port): written once, run through the backend asked for
/// ([`on_client`]).
pub trait OnClient {
    /// What the step gives back.
    type Output;
    /// The step over `client`.
    fn run<P: SessionPort>(
        self,
        client: &Sandboxes<P>,
    ) -> impl Future<Output = Result<Self::Output, Failure>>;
}

/// How [`on_client`] reaches the engine: which engine, through which backend, the agentc
/// executable the egress proxy's image is made of, the environment the sandboxes' secrets
/// and the engine's address are read from, and who hears of the leftovers of killed launches
/// reaped on the way.
#[derive(Clone)]
pub struct Driver {
    /// The engine.
    pub engine: Engine,
    /// The backend asked for.
    pub backend: BackendChoice,
    /// The agentc executable of the egress proxy's image ([`ProxyExecutable::locate`] for a
    /// library caller, [`ProxyExecutable::running`] for agentc itself).
    pub proxy: ProxyExecutable,
    /// The environment a launch reads its secrets from, by name, when it starts (the keys its
    /// egress proxy holds, `env` passed by name), and where the engine is ([`engine_host`]:
    /// `DOCKER_HOST`, the docker context, `CONTAINER_HOST`), which the engine's command line
    /// gets too ([`CliPort::in_env`]): [`process_env`] for agentc itself. A harness running
    /// tasks with keys of their own passes each task's on top of the process's, or without
    /// its engine variables to reach the local engine.
    pub env: BTreeMap<String, String>,
    /// Who hears of the leftovers of killed launches removed before the step runs ([`reap`]):
    /// agentc prints them on stderr; [`Driver::new`] logs them.
    pub reaped: Reaped,
}

impl std::fmt::Debug for Driver {
    /// The environment holds secret values: its names only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("engine", &self.engine)
            .field("backend", &self.backend)
            .field("proxy", &self.proxy)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("reaped", &self.reaped)
            .finish()
    }
}

impl Driver {
    /// The driver of `engine` through `backend`, the proxy an image of `proxy`, secrets and the
    /// engine's address read from this process's environment ([`process_env`]), the leftovers
    /// of killed launches logged ([`Reaped::default`]).
    pub fn new(engine: Engine, backend: BackendChoice, proxy: ProxyExecutable) -> Driver {
        Driver {
            engine,
            backend,
            proxy,
            env: process_env(),
            reaped: Reaped::default(),
        }
    }
}

/// Runs `step` through `driver`'s backend and engine (where [`Driver::env`] puts it), in a
/// runtime of its own, after the leftovers of killed launches are reaped and told to
/// [`Driver::reaped`] ([`over_port!`]); the client's environment is the driver's
/// ([`Driver::env`]).
pub fn on_client<S: OnClient>(driver: &Driver, step: S) -> Result<S::Output, Failure> {
    let env = driver.env.clone();
    let proxy = driver.proxy.clone();
    runtime()?.block_on(async move {
        let reaped = &driver.reaped;
        over_port!(
            driver.backend,
            driver.engine,
            &driver.env,
            reaped,
            None,
            |port| {
                step.run(&Sandboxes::over(port, env).with_proxy_executable(proxy))
                    .await
            }
        )
    })
}

/// SIGINT and SIGTERM, listened to while a command runs.
pub struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    /// Listens for SIGINT and SIGTERM (inside a tokio runtime).
    pub fn new() -> Result<Signals, Failure> {
        use tokio::signal::unix::{signal, SignalKind};
        let listen = |kind| {
            signal(kind).map_err(|error| {
                Failure::new(EXIT_DOCKER, format!("cannot listen for signals: {error}"))
            })
        };
        Ok(Signals {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
        })
    }

    /// The next signal received.
    pub async fn recv(&mut self) -> agentc_engine::Interrupt {
        tokio::select! {
            _ = self.interrupt.recv() => agentc_engine::Interrupt::Sigint,
            _ = self.terminate.recv() => agentc_engine::Interrupt::Sigterm,
        }
    }
}

#[cfg(test)]
mod tests;
