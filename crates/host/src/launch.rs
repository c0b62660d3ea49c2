//! The launch `agentc run` makes, for the command line and library callers alike, each step
//! over the one engine port the caller opened: the launch's isolation floor met
//! ([`Launcher::meet_floor_on`]: the engine's runtimes detected and probed, one chosen), the
//! host ports it publishes checked free ([`Launcher::check_host_ports`]), the launch itself, attached or
//! detached ([`Launcher::launch_on`]), and `agentc run --count`'s copies
//! ([`Launcher::copies_on`]), SIGINT and SIGTERM listened to from the first step. What
//! started comes back as a [`StartedSandbox`] (its name and where it can be reached), what a
//! command prints; the lines a launch says as it goes (a pull, the runtime chosen) go to the
//! caller's `notify`.
//!
//! A failed launch makes the floor's cached choice of runtime be probed again next time
//! ([`Launcher::forget_on_failure`]).

use std::collections::BTreeMap;

use agentc_egress::image::ProxyExecutable;
use agentc_engine::isolation::{self as floor, FloorError, FloorOptions, Met};
use agentc_engine::launch::{self, LaunchOptions, Launched};
use agentc_engine::port::EnginePort;
use agentc_engine::signals::Signals;
use agentc_engine::{exit_status, published_addresses, Engine, ExecError};
use agentc_policy::Hinted;
use agentc_policy::{ContainerSpec, Hint, LaunchSpec, Network};
use bollard::models::ContainerInspectResponse;
use futures_util::StreamExt;

use crate::backend::{engine_is_remote, exec_failure, runtime, BackendChoice, Reaped};
use crate::{container_of, over_port, Failure, EXIT_DOCKER, EXIT_INVALID};

/// What a launch needs of its caller: the engine (for the floor's words and whether its ports
/// are this machine's), the environment secrets and the engine's address are read from, the
/// agentc executable the egress proxy's and the floor probe's images are made of, whether
/// stdin is a terminal, and who hears of the leftovers of killed launches reaped before a
/// launch.
#[derive(Clone)]
pub struct Launcher {
    /// The engine the port drives.
    pub engine: Engine,
    /// The caller's environment: the secrets a launch passes by name, the floor's cache, and
    /// where the engine is ([`crate::backend::engine_host`]: `DOCKER_HOST`, the docker
    /// context, `CONTAINER_HOST`); [`crate::backend::process_env`] for agentc itself.
    pub env: BTreeMap<String, String>,
    /// The agentc executable the egress proxy's image is made of ([`ProxyExecutable::running`]
    /// for agentc itself, [`ProxyExecutable::locate`] for a library caller).
    pub proxy: ProxyExecutable,
    /// Whether stdin is a terminal: an attached launch with a TTY then switches it to raw mode.
    pub terminal: bool,
    /// Who hears of the leftovers of killed launches a port this launcher opens removes first
    /// ([`crate::backend::reap`]): agentc prints them on stderr.
    pub reaped: Reaped,
}

impl std::fmt::Debug for Launcher {
    /// The environment holds secret values: its names only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launcher")
            .field("engine", &self.engine)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("proxy", &self.proxy)
            .field("terminal", &self.terminal)
            .field("reaped", &self.reaped)
            .finish()
    }
}

/// How a launch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A detached sandbox started (exit status 0).
    Started(StartedSandbox),
    /// An attached container exited: its exit status, and why when it did not end by itself
    /// (killed for memory, by a signal).
    Exited {
        /// The exit status a command returns ([`exit_status`]).
        status: u8,
        /// What happened, for an abnormal exit, with what to do about it as its hint.
        explanation: Option<Hint<String>>,
    },
}

impl Outcome {
    /// The exit status a command returns: 0 for a started sandbox.
    pub fn status(&self) -> u8 {
        match self {
            Outcome::Started(_) => 0,
            Outcome::Exited { status, .. } => *status,
        }
    }
}

/// A detached sandbox that started, and where it can be reached; its [`Display`] is what
/// `agentc run --detach` prints: `started NAME (ID)`, one `  PORT  ADDRESS` line per reachable
/// address, and on a named network the names its peers reach it by.
///
/// [`Display`]: std::fmt::Display
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedSandbox {
    /// The container's name.
    pub name: String,
    /// The first 12 characters of its ID.
    pub id: String,
    /// Where each published port is reachable.
    pub addresses: Vec<Address>,
    /// On a named network: the network and the names its peers reach it by (none listed
    /// when there are none but the daemon's).
    pub aliases: Option<(String, Vec<String>)>,
}

/// Where a published port of a started sandbox is reachable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    /// `PORT/PROTO`.
    pub port: String,
    /// `HOST:PORT`, IPv6 in brackets.
    pub address: String,
    /// Whether it is published on every address (`0.0.0.0` or `::`): reachable beyond this
    /// machine, though its loopback address alone would read as this machine only.
    pub everywhere: bool,
}

impl StartedSandbox {
    /// The sandbox `inspect` describes, on `network`: its reachable addresses
    /// ([`published_addresses`]) and its aliases there.
    pub fn from_inspect(inspect: &ContainerInspectResponse, network: &Network) -> StartedSandbox {
        let full_id = inspect.id.as_deref().unwrap_or_default();
        let everywhere: std::collections::BTreeSet<&str> = inspect
            .network_settings
            .as_ref()
            .and_then(|settings| settings.ports.as_ref())
            .into_iter()
            .flatten()
            .filter(|(_, bindings)| {
                bindings.iter().flatten().any(|binding| {
                    matches!(binding.host_ip.as_deref(), Some("0.0.0.0" | "::"))
                        && binding.host_port.as_deref().is_some_and(|p| !p.is_empty())
                })
            })
            .map(|(port, _)| port.as_str())
            .collect();
        let addresses = published_addresses(inspect, network)
            .into_iter()
            .map(|found| Address {
                everywhere: everywhere.contains(found.container_port.as_str()),
                port: found.container_port,
                address: found.address,
            })
            .collect();
        let aliases = match network {
            Network::Named { name } => {
                let aliases = inspect
                    .network_settings
                    .as_ref()
                    .and_then(|settings| settings.networks.as_ref())
                    .and_then(|networks| networks.get(name))
                    .and_then(|endpoint| endpoint.aliases.clone())
                    .unwrap_or_default()
                    .into_iter()
                    // The daemon adds the short ID as an alias; the profile's name is agentc's.
                    .filter(|alias| !full_id.starts_with(alias.as_str()))
                    .collect();
                Some((name.clone(), aliases))
            }
            Network::Default | Network::None => None,
        };
        StartedSandbox {
            name: inspect
                .name
                .as_deref()
                .unwrap_or_default()
                .trim_start_matches('/')
                .to_string(),
            id: full_id.chars().take(12).collect(),
            addresses,
            aliases,
        }
    }

    /// A started copy that need not be inspected: it publishes nothing and is on no named
    /// network, so its name and ID are all there is to say.
    fn unreachable(started: &launch::Started) -> StartedSandbox {
        StartedSandbox {
            name: started.placed.name.clone().unwrap_or_default(),
            id: started.id.chars().take(12).collect(),
            addresses: Vec::new(),
            aliases: None,
        }
    }
}

impl std::fmt::Display for StartedSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "started {} ({})", self.name, self.id)?;
        for address in &self.addresses {
            let note = if address.everywhere {
                "  (published on every address: reachable beyond this machine)"
            } else {
                ""
            };
            write!(f, "\n  {}  {}{note}", address.port, address.address)?;
        }
        if let Some((network, aliases)) = &self.aliases {
            if !aliases.is_empty() {
                write!(f, "\n  on network {network} as {}", aliases.join(", "))?;
            }
        }
        Ok(())
    }
}

impl Launcher {
    /// The floor's options for this caller: the cache under its environment (bypassed with
    /// `AGENTC_ISOLATION_CACHE=off`), the probe's image made of [`Launcher::proxy`], this
    /// machine's kernel, and whether the engine is local (where [`Launcher::env`] puts it).
    pub fn floor_options(&self) -> FloorOptions {
        let mut options = FloorOptions::from_env(&self.env, Some(self.proxy.clone()));
        options.local = !engine_is_remote(self.engine, &self.env);
        options
    }

    /// Refuses a launch whose chosen host ports are in use on this machine
    /// ([`agentc_engine::host_ports::check_free`]), unless the engine is remote (where
    /// [`Launcher::env`] puts it, [`engine_is_remote`]).
    pub fn check_host_ports(
        &self,
        container: &ContainerSpec,
        spec: &LaunchSpec,
    ) -> Result<(), Failure> {
        agentc_engine::host_ports::check_free(
            container,
            &spec.origins,
            self.engine,
            engine_is_remote(self.engine, &self.env),
        )
        .map_err(exec_failure)
    }

    /// Forgets the cached proof of the runtime a failed launch ran under (`io.agentc.runtime`),
    /// so that the next launch probes it again.
    pub fn forget_on_failure(&self, container: &ContainerSpec) {
        if container.isolation.is_none() {
            return;
        }
        if let (Some(runtime), Some(location)) = (&container.runtime, self.floor_options().cache) {
            floor::cache::forget(&location, runtime);
        }
    }

    /// A floor not met, as a command reports it: the refusal naming what the engine has (exit
    /// 65), or the engine's failure.
    pub fn floor_failure(&self, error: FloorError, profile: &str) -> Failure {
        match error {
            FloorError::Shortfall(shortfall) => Failure::from_hinted(
                crate::failure::EXIT_INVALID,
                &floor::not_met(shortfall, self.engine, profile),
            ),
            FloorError::Engine(error) => exec_failure(error),
        }
    }

    /// Meets the container's isolation floor over `port` ([`floor::meet_floor`]) and says to
    /// `notify` what was chosen: the runtime ([`Met::chosen`], which the caller resolves its
    /// launch with, [`agentc_policy::Instance::floor`]) and the container placed under it. A
    /// container without a floor comes back unchanged, without asking the engine.
    pub async fn meet_floor_on<P: EnginePort>(
        &self,
        port: &P,
        container: &ContainerSpec,
        profile: &str,
        notify: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Met, Failure> {
        let met = floor::meet_floor(port, container, profile, &self.floor_options())
            .await
            .map_err(|error| self.floor_failure(error, profile))?;
        if let (Some(chosen), Some(isolation)) = (&met.chosen, container.isolation) {
            notify(&format!(
                "isolation: {} under runtime {} (security.isolation.min = {}, prefer {})",
                chosen.tier,
                chosen.name,
                isolation.min,
                isolation.prefer.as_str()
            ));
            if let Some(reason) = &chosen.above_floor {
                notify(&format!(
                    "isolation: {} is above the floor {}: {reason}",
                    chosen.tier, isolation.min
                ));
            }
        }
        Ok(met)
    }

    /// What `agentc doctor` says of a container's isolation floor, asked over `port` with the
    /// same detection and probes as a launch: the runtime a launch would take and its tier, or
    /// what the engine has and how to get what is missing (the words and a hint). `None`
    /// without a floor.
    pub async fn floor_fact<P: EnginePort>(
        &self,
        port: &P,
        container: &ContainerSpec,
        profile: &str,
    ) -> Option<Result<String, (String, String)>> {
        let isolation = container.isolation?;
        let options = self.floor_options();
        let choice = floor::choose(port, container, isolation, profile, &options).await;
        Some(match choice {
            Ok(Ok(chosen)) => Ok(format!(
                "{} under runtime {} (min {}, prefer {}){}",
                chosen.tier,
                chosen.name,
                isolation.min,
                isolation.prefer.as_str(),
                chosen
                    .above_floor
                    .map(|reason| format!("; above the floor: {reason}"))
                    .unwrap_or_default()
            )),
            Ok(Err(shortfall)) => Err((
                format!(
                    "no runtime meets min {} ({}); found: {}",
                    shortfall.min.as_str(),
                    shortfall.min.words(),
                    floor::found(&shortfall)
                ),
                shortfall.hint.clone(),
            )),
            Err(error) => Err((
                format!(
                    "the engine's runtimes cannot be read: {}",
                    error.to_string().lines().next().unwrap_or_default()
                ),
                "`agentc doctor` without a profile checks the engine".to_string(),
            )),
        })
    }

    /// Meets the container's isolation floor through `backend`'s own engine port for the
    /// launcher's engine (where [`Launcher::env`] puts it), in a runtime of its own ([`Launcher::meet_floor_on`]); a container
    /// without a floor comes back unchanged, without asking the engine.
    pub fn meet_floor(
        &self,
        container: &ContainerSpec,
        profile: &str,
        backend: BackendChoice,
        notify: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Met, Failure> {
        if container.isolation.is_none() {
            return Ok(Met {
                container: container.clone(),
                chosen: None,
            });
        }
        let engine = self.engine;
        runtime()?.block_on(async {
            over_port!(backend, engine, &self.env, &self.reaped, None, |port| self
                .meet_floor_on(&port, container, profile, notify)
                .await)
        })
    }

    /// Launches the resolved `spec` through `backend`, as `agentc run --detach`'s launch and a
    /// seed's helper are made, in a runtime of its own: its host ports checked free
    /// ([`Launcher::check_host_ports`]), its isolation floor met ([`Launcher::meet_floor`]), then the
    /// launch ([`Launcher::launch_on`]) over a port that reaped the leftovers of a killed
    /// launch of its name first.
    pub fn launch_resolved(
        &self,
        spec: &LaunchSpec,
        backend: BackendChoice,
        pull: bool,
        notify: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Outcome, Failure> {
        let container = container_of(spec)?;
        self.check_host_ports(container, spec)?;
        // The isolation floor: the engine's runtimes probed and one chosen, before anything.
        let placed = self
            .meet_floor(container, &spec.profile, backend, notify)?
            .container;
        let (engine, own) = (self.engine, placed.name.as_deref());
        runtime()?.block_on(async {
            over_port!(backend, engine, &self.env, &self.reaped, own, |port| self
                .launch_on(&port, &placed, pull, notify)
                .await)
        })
    }

    /// The launch options of this caller, pulling a missing image when `pull`.
    fn options(&self, pull: bool) -> LaunchOptions {
        LaunchOptions {
            pull,
            terminal: self.terminal,
            proxy_executable: self.proxy.clone(),
        }
    }

    /// Launches `placed` (a container with its isolation floor met) over `port`
    /// ([`launch::launch`]), SIGINT and SIGTERM listened to from before its first step; with
    /// `pull`, a missing image is pulled first (progress to `notify`). A started sandbox is
    /// inspected for where it can be reached. A failure, or the engine's own exit status 125
    /// (which a broken runtime gives), makes the floor's choice be probed again next time.
    pub async fn launch_on<P: EnginePort>(
        &self,
        port: &P,
        placed: &ContainerSpec,
        pull: bool,
        notify: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Outcome, Failure> {
        let mut signals = Signals::new().map_err(exec_failure)?;
        let launched = launch::launch(
            port,
            placed,
            &self.env,
            &self.options(pull),
            notify,
            &mut signals,
        )
        .await
        .inspect_err(|_| self.forget_on_failure(placed))
        .map_err(exec_failure)?;
        match launched {
            Launched::Started(started) => {
                let inspect = launch::reachable(port, &started)
                    .await
                    .map_err(|error| cannot_inspect(&started.id, &error))?;
                Ok(Outcome::Started(StartedSandbox::from_inspect(
                    &inspect,
                    &placed.network,
                )))
            }
            Launched::Exited(exited) => {
                if exited.exit_code == 125 {
                    self.forget_on_failure(placed);
                }
                Ok(Outcome::Exited {
                    status: exit_status(exited.exit_code),
                    explanation: exited.explanation(),
                })
            }
        }
    }

    /// Launches the detached copies of `agentc run --count` over `port`, `jobs` at a time
    /// ([`launch::launch_copies`]): either all start, or none is left running and every
    /// failure is named. Each copy comes back in order, inspected (`jobs` at a time) when it
    /// publishes ports or joins a named network; a copy that started but cannot be inspected
    /// comes back as the line that says so. Each copy must have been resolved with the runtime
    /// its floor was met with ([`refuse_unplaced_copies`]); an engine out of reach before any
    /// copy was created is the whole launch's error, as for a single launch.
    pub async fn copies_on<P: EnginePort>(
        &self,
        port: &P,
        copies: &[ContainerSpec],
        pull: bool,
        jobs: usize,
        notify: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Vec<Result<StartedSandbox, String>>, Failure> {
        let Some(container) = copies.first() else {
            return Ok(Vec::new());
        };
        let mut signals = Signals::new().map_err(exec_failure)?;
        let options = LaunchOptions {
            terminal: false,
            ..self.options(pull)
        };
        let launched = launch::launch_copies(
            port,
            copies,
            &self.env,
            &options,
            jobs,
            notify,
            &mut signals,
        )
        .await
        .map_err(|error| {
            self.forget_on_failure(container);
            let code = u8::try_from(error.exit_code()).unwrap_or(EXIT_DOCKER);
            match error.unreachable() {
                Some(unreachable) => Failure::from_hinted(code, unreachable),
                None => Failure::from_hinted(code, &error),
            }
        })?;
        // Only published ports and named networks need the inspect that says where a copy is.
        let reachable =
            !container.ports.is_empty() || matches!(container.network, Network::Named { .. });
        if !reachable {
            return Ok(launched
                .iter()
                .map(StartedSandbox::unreachable)
                .map(Ok)
                .collect());
        }
        let inspects: Vec<_> = futures_util::stream::iter(&launched)
            .map(|copy| launch::reachable(port, copy))
            .buffered(jobs.max(1))
            .collect()
            .await;
        Ok(launched
            .iter()
            .zip(inspects)
            .map(|(copy, inspect)| match inspect {
                Ok(inspect) => Ok(StartedSandbox::from_inspect(&inspect, &container.network)),
                Err(error) => Err(format!(
                    "started {} but cannot inspect it: {error}",
                    copy.placed.name.as_deref().unwrap_or_default(),
                    error = error.with_hint()
                )),
            })
            .collect())
    }
}

/// The failure of a sandbox that started but whose inspect failed.
fn cannot_inspect(id: &str, error: &ExecError) -> Failure {
    Failure::new(
        EXIT_DOCKER,
        format!(
            "started {id} but cannot inspect it: {error}",
            error = error.with_hint()
        ),
    )
}

/// `--count`'s refusal of a launch that publishes on a fixed host port, which only one of its
/// `count` copies could hold: asked before the engine is.
pub fn refuse_fixed_host_ports(count: u16, container: &ContainerSpec) -> Result<(), Failure> {
    let fixed = container
        .ports
        .iter()
        .chain(
            container
                .egress
                .iter()
                .flat_map(|egress| &egress.proxy.ports),
        )
        .find_map(|port| port.host_port);
    if let Some(port) = fixed {
        return Err(Failure::new(
            EXIT_INVALID,
            format!(
                "--count {count} starts {count} copies, but the profile publishes on host port \
                 {port}, which only one of them can hold"
            ),
        )
        .hinted(
            "write only the container port in network.publish (each copy then gets a free \
             port), or run one copy",
        ));
    }
    Ok(())
}

/// Refuses copies of which one was resolved without the runtime of its isolation floor
/// ([`agentc_policy::Instance::floor`]): a copy is placed as resolved, never placed here.
pub fn refuse_unplaced_copies(copies: &[ContainerSpec], profile: &str) -> Result<(), Failure> {
    let unmet = copies.iter().find(|copy| {
        copy.isolation.is_some() && agentc_policy::isolation::placement(copy).is_none()
    });
    match unmet {
        Some(unmet) => Err(Failure::new(
            EXIT_INVALID,
            format!(
                "profile {profile}: copy {} was resolved without the runtime of its isolation \
                 floor",
                unmet.name.as_deref().unwrap_or_default()
            ),
        )
        .hinted("meet the floor first (`meet_floor`) and resolve each copy with Instance::floor")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
