//! What the launching commands share: the tokio runtime (created here only, never by the
//! offline commands), the machine's environment and daemon address, executing a container
//! launch through either backend, printing what it started, and the exit status of a launch
//! error. The launch comes resolved and final: detaching, naming, copies and the terminal are
//! inputs of `resolve` ([`agentc_policy::Instance`]), never edits of its spec.

use std::collections::BTreeMap;

use std::io::IsTerminal;

use agentc_backend_api::port::ApiPort;
use agentc_backend_cli::exec::port::CliPort;
use agentc_engine::launch::ProxyExecutable;
use agentc_engine::port::EnginePort;
use agentc_engine::signals::Signals;
use agentc_engine::{exit_status, published_addresses, ExecError};
use agentc_policy::{ContainerSpec, LaunchSpec, Network};
use bollard::models::ContainerInspectResponse;
use futures_util::StreamExt;

use crate::cli::BackendArg;
use crate::context::{Failure, EXIT_DOCKER, EXIT_INVALID};
use agentc_engine::isolation::{self as floor, FloorError, FloorOptions, Met};

pub use agentc_host::backend::{exec_failure, process_env, runtime};
pub use agentc_host::container_of;

/// Whether the engine runs on another machine ([`agentc_host::backend::engine_is_remote`]).
pub fn engine_is_remote() -> bool {
    agentc_host::backend::engine_is_remote(crate::engine())
}

/// Connects to this process's engine ([`agentc_host::backend::connect`]).
pub async fn connect() -> Result<ApiPort, Failure> {
    agentc_host::backend::connect(crate::engine()).await
}

/// This process's engine's command line port, the leftovers of killed launches reaped first
/// ([`agentc_host::backend::cli_port_reaping`]).
pub async fn cli_port_reaping(own: Option<&str>) -> CliPort {
    agentc_host::backend::cli_port_reaping(crate::engine(), own).await
}

/// Evaluates `$body` with `$port` bound to `$backend`'s engine port for this process's engine
/// ([`agentc_host::over_port!`]): the one place a command picks its port.
macro_rules! over_port {
    ($backend:expr, $own:expr, |$port:ident| $body:expr) => {
        agentc_host::over_port!(
            agentc_host::backend::BackendChoice::from($backend),
            $crate::engine(),
            $own,
            |$port| $body
        )
    };
}
pub(crate) use over_port;

/// Refuses a launch whose chosen host ports are in use on this machine
/// ([`agentc_engine::host_ports::check_free`]), unless the engine is remote.
pub fn check_host_ports(container: &ContainerSpec, spec: &LaunchSpec) -> Result<(), Failure> {
    agentc_engine::host_ports::check_free(
        container,
        &spec.origins,
        crate::engine(),
        engine_is_remote(),
    )
    .map_err(exec_failure)
}

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

/// The floor's options in this process: the cache under its environment (bypassed with
/// `AGENTC_ISOLATION_CACHE=off`), the probe image made of this binary, this machine's kernel.
fn options() -> FloorOptions {
    let mut options = FloorOptions::from_env(&process_env(), Some(ProxyExecutable::running()));
    options.local = !engine_is_remote();
    options
}

/// Forgets the cached proof of the runtime a failed launch ran under (`io.agentc.runtime`),
/// so that the next launch probes it again.
pub fn forget_on_failure(container: &ContainerSpec) {
    if container.isolation.is_none() {
        return;
    }
    if let (Some(runtime), Some(location)) = (&container.runtime, options().cache) {
        floor::cache::forget(&location, runtime);
    }
}

/// A floor not met, as a command reports it: the refusal naming what the engine has (exit 65),
/// or the engine's failure.
pub fn floor_failure(error: FloorError, profile: &str) -> Failure {
    match error {
        FloorError::Shortfall(shortfall) => {
            Failure::unlaunchable(floor::not_met(shortfall, crate::engine(), profile).to_string())
        }
        FloorError::Engine(error) => exec_failure(error),
    }
}

/// Meets the container's isolation floor through `backend`'s own engine port, when it has one
/// ([`meet_floor_on`]); a container without a floor comes back unchanged, without asking the
/// engine.
pub fn meet_floor(
    container: &ContainerSpec,
    profile: &str,
    backend: BackendArg,
) -> Result<Met, Failure> {
    if container.isolation.is_none() {
        return Ok(Met {
            container: container.clone(),
            chosen: None,
        });
    }
    runtime()?.block_on(async {
        over_port!(backend, None, |port| meet_floor_on(
            &port, container, profile
        )
        .await)
    })
}

/// Meets the container's isolation floor over `port` ([`floor::meet_floor`]: the engine's
/// runtimes detected and probed, one chosen), and says on stderr what was chosen: the runtime
/// chosen ([`Met::chosen`], which a command resolves its launch with,
/// [`agentc_policy::Instance::floor`]) and the container placed under it. A container without
/// a floor comes back unchanged, without asking the engine.
pub async fn meet_floor_on<P: EnginePort>(
    port: &P,
    container: &ContainerSpec,
    profile: &str,
) -> Result<Met, Failure> {
    let met = floor::meet_floor(port, container, profile, &options())
        .await
        .map_err(|error| floor_failure(error, profile))?;
    if let (Some(chosen), Some(isolation)) = (&met.chosen, container.isolation) {
        eprintln!(
            "agentc: isolation: {} under runtime {} (security.isolation.min = {}, prefer {})",
            chosen.tier,
            chosen.name,
            isolation.min,
            isolation.prefer.as_str()
        );
        if let Some(reason) = &chosen.above_floor {
            eprintln!(
                "agentc: isolation: {} is above the floor {}: {reason}",
                chosen.tier, isolation.min
            );
        }
    }
    Ok(met)
}

/// What `agentc doctor` says of a container's isolation floor: the runtime a launch would
/// take and its tier, or what the engine has and how to get what is missing (the same
/// detection and probes as a launch, through the command line). `None` without a floor.
pub fn doctor_fact(
    container: &ContainerSpec,
    profile: &str,
) -> Option<Result<String, (String, String)>> {
    let isolation = container.isolation?;
    let options = options();
    let choice = runtime().ok()?.block_on(async {
        let port = cli_port_reaping(None).await;
        floor::choose(&port, container, isolation, profile, &options).await
    });
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

/// Executes a container launch through `backend` and returns the exit status: the container's
/// exit code for an attached launch, 0 for a started detached one (whose name and reachable
/// addresses are printed). With `pull`, a missing image is pulled first, with progress on
/// stderr, before anything is created.
pub fn execute(spec: &LaunchSpec, backend: BackendArg, pull: bool) -> Result<u8, Failure> {
    execute_placed(spec, None, backend, pull)
}

/// [`execute`], with the launch's container as [`meet_floor`] already returned it for this
/// `backend` (`placed`: `agentc pool fill` met the floor once for all its members), so that
/// the engine is asked once per launch; `None` meets it here. The launch is written once over the
/// engine port ([`agentc_engine::launch::launch`]); `backend` chooses the port.
pub fn execute_placed(
    spec: &LaunchSpec,
    placed: Option<ContainerSpec>,
    backend: BackendArg,
    pull: bool,
) -> Result<u8, Failure> {
    let container = container_of(spec)?;
    check_host_ports(container, spec)?;
    // The isolation floor: the engine's runtimes probed and one chosen, before anything.
    let placed = match placed {
        Some(placed) => placed,
        None => meet_floor(container, &spec.profile, backend)?.container,
    };
    let own = placed.name.as_deref();
    runtime()?.block_on(async {
        over_port!(backend, own, |port| launch_placed_on(&port, &placed, pull)
            .await)
    })
}

/// The launch of `placed` (a container with its isolation floor met) over `port`, as
/// [`execute_placed`] makes it: secrets from the process environment, the egress proxy an
/// image of this binary, the terminal this process has.
pub async fn launch_placed_on<P: EnginePort>(
    port: &P,
    placed: &ContainerSpec,
    pull: bool,
) -> Result<u8, Failure> {
    let options = agentc_engine::launch::LaunchOptions {
        pull,
        terminal: std::io::stdin().is_terminal(),
        // The egress proxy is an image of this binary.
        proxy_executable: ProxyExecutable::running(),
    };
    launch_over(port, placed, &process_env(), &options).await
}

/// [`agentc_engine::launch::launch`] over `port`, SIGINT and SIGTERM listened to from
/// before its first step; prints a started sandbox's name and where it can be reached, or an
/// attached container's abnormal exit, and returns the exit status. A failure makes the
/// isolation floor's choice be probed again next time.
async fn launch_over<P: EnginePort>(
    port: &P,
    container: &ContainerSpec,
    env: &BTreeMap<String, String>,
    options: &agentc_engine::launch::LaunchOptions,
) -> Result<u8, Failure> {
    use agentc_engine::launch::{self, Launched};
    let mut signals = Signals::new().map_err(exec_failure)?;
    let launched = launch::launch(
        port,
        container,
        env,
        options,
        &mut |line| notify(line),
        &mut signals,
    )
    .await
    .inspect_err(|_| forget_on_failure(container))
    .map_err(exec_failure)?;
    match launched {
        Launched::Started(started) => {
            let inspect = launch::reachable(port, &started)
                .await
                .map_err(|error| cannot_inspect(&started.id, &error))?;
            print_started(&inspect, &container.network);
            Ok(0)
        }
        Launched::Exited(exited) => {
            if exited.exit_code == 125 {
                // The engine's own failure, which a broken runtime gives: probe it again next
                // time.
                forget_on_failure(container);
            }
            if let Some(explanation) = exited.explanation() {
                eprintln!("agentc: {explanation}");
            }
            Ok(exit_status(exited.exit_code))
        }
    }
}

/// The failure of a sandbox that started but whose inspect failed.
fn cannot_inspect(id: &str, error: &ExecError) -> Failure {
    Failure::new(
        EXIT_DOCKER,
        format!("started {id} but cannot inspect it: {error}"),
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
                 {port}, which only one of them can hold\n  hint: write only the container \
                 port in network.publish (each copy then gets a free port), or run one copy"
            ),
        ));
    }
    Ok(())
}

/// Launches the detached copies of `agentc run --count`, each resolved as its own instance
/// (named NAME-1 to NAME-COUNT, [`agentc_policy::Instance::copy`]), through `backend`'s
/// engine port, `jobs` launches at a time
/// ([`agentc_engine::launch::launch_copies`]): either all start, or none is left
/// running and every failure is named. Prints each started copy, in order. The caller refused
/// a fixed host port first ([`refuse_fixed_host_ports`], before the floor asked the engine).
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
    // Each copy was resolved with the runtime its isolation floor was met with
    // ([`agentc_policy::Instance::floor`]); a copy resolved without it is refused, not placed.
    if let Some(unmet) = copies.iter().find(|copy| {
        copy.isolation.is_some() && agentc_policy::isolation::placement(copy).is_none()
    }) {
        return Err(Failure::new(
            EXIT_INVALID,
            format!(
                "profile {profile}: copy {} was resolved without the runtime of its isolation \
                 floor\n  hint: meet the floor first (`meet_floor`) and resolve each copy with \
                 Instance::floor",
                unmet.name.as_deref().unwrap_or_default()
            ),
        ));
    }
    let env = process_env();
    runtime()?.block_on(async {
        over_port!(backend, None, |port| copies_over(
            &port, &copies, &env, pull, jobs
        )
        .await)
    })
}

/// [`agentc_engine::launch::launch_copies`] over `port`; prints each started copy, in
/// order. An engine out of reach before any copy was created is the whole launch's error, as
/// for a single launch.
async fn copies_over<P: EnginePort>(
    port: &P,
    copies: &[ContainerSpec],
    env: &BTreeMap<String, String>,
    pull: bool,
    jobs: usize,
) -> Result<u8, Failure> {
    let Some(container) = copies.first() else {
        return Ok(0);
    };
    let mut signals = Signals::new().map_err(exec_failure)?;
    let options = agentc_engine::launch::LaunchOptions {
        pull,
        // The egress proxies are images of this binary.
        proxy_executable: ProxyExecutable::running(),
        ..Default::default()
    };
    let launched = agentc_engine::launch::launch_copies(
        port,
        copies,
        env,
        &options,
        jobs,
        &mut |line| notify(line),
        &mut signals,
    )
    .await
    .map_err(|error| {
        forget_on_failure(container);
        let message = match error.unreachable() {
            Some(unreachable) => unreachable.to_string(),
            None => error.to_string(),
        };
        let code = u8::try_from(error.exit_code()).unwrap_or(EXIT_DOCKER);
        Failure::new(code, message)
    })?;
    print_copies(port, &launched, container, jobs).await;
    Ok(0)
}

/// Prints each started copy, in order: its name and ID, or, when it publishes ports or joins
/// a named network, where it is (inspected `jobs` at a time).
async fn print_copies<P: EnginePort>(
    port: &P,
    launched: &[agentc_engine::launch::Started],
    container: &ContainerSpec,
    jobs: usize,
) {
    // Only published ports and named networks need the inspect that says where a copy is.
    let reachable =
        !container.ports.is_empty() || matches!(container.network, Network::Named { .. });
    if !reachable {
        for copy in launched {
            let id: String = copy.id.chars().take(12).collect();
            println!(
                "started {} ({id})",
                copy.placed.name.as_deref().unwrap_or_default()
            );
        }
        return;
    }
    let inspects: Vec<_> = futures_util::stream::iter(launched)
        .map(|copy| agentc_engine::launch::reachable(port, copy))
        .buffered(jobs.max(1))
        .collect()
        .await;
    for (copy, inspect) in launched.iter().zip(inspects) {
        match inspect {
            Ok(inspect) => print_started(&inspect, &container.network),
            Err(error) => eprintln!(
                "agentc: started {} but cannot inspect it: {error}",
                copy.placed.name.as_deref().unwrap_or_default()
            ),
        }
    }
}

/// The `  PORT  ADDRESS` lines of a started container: where each published port is
/// reachable ([`published_addresses`]); a port published on every address (`0.0.0.0` or `::`,
/// written out in network.publish) says so, since its loopback address alone would read as
/// this machine only.
fn address_lines(inspect: &ContainerInspectResponse, network: &Network) -> Vec<String> {
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
    published_addresses(inspect, network)
        .into_iter()
        .map(|address| {
            let note = if everywhere.contains(address.container_port.as_str()) {
                "  (published on every address: reachable beyond this machine)"
            } else {
                ""
            };
            format!("  {}  {}{note}", address.container_port, address.address)
        })
        .collect()
}

/// Prints a started detached container: `started NAME (ID)`, one `  PORT  ADDRESS` line
/// per reachable address, and, on a named network, the names its peers reach it by.
pub(crate) fn print_started(inspect: &ContainerInspectResponse, network: &Network) {
    let name = inspect
        .name
        .as_deref()
        .unwrap_or_default()
        .trim_start_matches('/');
    let id: String = inspect
        .id
        .as_deref()
        .unwrap_or_default()
        .chars()
        .take(12)
        .collect();
    println!("started {name} ({id})");
    for line in address_lines(inspect, network) {
        println!("{line}");
    }
    if let Network::Named { name: network } = network {
        let aliases: Vec<String> = inspect
            .network_settings
            .as_ref()
            .and_then(|settings| settings.networks.as_ref())
            .and_then(|networks| networks.get(network))
            .and_then(|endpoint| endpoint.aliases.clone())
            .unwrap_or_default()
            .into_iter()
            // The daemon adds the short ID as an alias; the profile's name is agentc's.
            .filter(|alias| {
                !inspect
                    .id
                    .as_deref()
                    .unwrap_or_default()
                    .starts_with(alias.as_str())
            })
            .collect();
        if !aliases.is_empty() {
            println!("  on network {network} as {}", aliases.join(", "));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_published_on_every_address_says_so() {
        use bollard::models::{NetworkSettings, PortBinding};
        let binding = |ip: &str, port: &str| PortBinding {
            host_ip: Some(ip.into()),
            host_port: Some(port.into()),
        };
        let inspect = ContainerInspectResponse {
            network_settings: Some(NetworkSettings {
                ports: Some(std::collections::HashMap::from([
                    (
                        "8080/tcp".to_string(),
                        Some(vec![binding("127.0.0.1", "18080")]),
                    ),
                    (
                        "8081/tcp".to_string(),
                        Some(vec![binding("0.0.0.0", "18081"), binding("::", "18081")]),
                    ),
                ])),
                ..Default::default()
            }),
            ..Default::default()
        };
        let lines = address_lines(&inspect, &Network::Default);
        assert!(
            lines.contains(&"  8080/tcp  127.0.0.1:18080".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(
                &"  8081/tcp  127.0.0.1:18081  (published on every address: reachable beyond \
                  this machine)"
                    .to_string()
            ),
            "{lines:?}"
        );
    }

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
