//! What the launching commands share: the tokio runtime (created here only, never by the
//! offline commands), the machine's environment and daemon address, the launch adjustments the
//! command line asks for, executing a container launch through either backend, printing what
//! it started, and the exit status of a launch error.

use std::collections::BTreeMap;

use agentc_backend_common::{exit_status, published_addresses, ExecError};
use agentc_policy::{Action, ContainerSpec, LaunchSpec, Network};
use bollard::models::ContainerInspectResponse;
use bollard::Docker;
use futures_util::StreamExt;

use crate::cli::BackendArg;
use crate::context::{Failure, EXIT_DOCKER, EXIT_INVALID};

/// A current-thread tokio runtime with I/O and timers, for one launching command.
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

/// The whole process environment: where secrets are resolved from, at launch only.
pub fn process_env() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

/// Where the engine's API is: for Docker `DOCKER_HOST` (`None`: the local socket); for
/// Podman `CONTAINER_HOST`, `DOCKER_HOST`, else its socket by Podman's conventions.
pub fn engine_host() -> Option<String> {
    match agentc_backend_common::engine() {
        agentc_backend_common::Engine::Docker => std::env::var("DOCKER_HOST")
            .ok()
            .filter(|host| !host.is_empty()),
        agentc_backend_common::Engine::Podman => {
            // SAFETY: geteuid has no preconditions and cannot fail.
            let root = unsafe { libc::geteuid() } == 0;
            Some(agentc_backend_common::engine::podman_socket(
                &process_env(),
                root,
            ))
        }
    }
}

/// Whether the engine runs on another machine (`DOCKER_HOST=tcp://…` or `ssh://…`): its
/// published ports are that machine's.
pub fn engine_is_remote() -> bool {
    engine_host().is_some_and(|host| !host.starts_with("unix://") && !host.starts_with('/'))
}

/// Connects to the engine's API ([`engine_host`]) and checks that the engine answering is the
/// one asked for (`--engine`).
pub async fn connect() -> Result<Docker, Failure> {
    let host = engine_host();
    let docker = agentc_backend_api::connect(host.as_deref())
        .await
        .map_err(exec_failure)?;
    let endpoint = host.unwrap_or_else(|| "the local docker socket".to_string());
    agentc_backend_api::check_engine(&docker, agentc_backend_common::engine(), &endpoint)
        .await
        .map_err(exec_failure)?;
    Ok(docker)
}

/// A launch failure, with its exit status ([`ExecError::exit_code`]).
pub fn exec_failure(error: ExecError) -> Failure {
    let code = u8::try_from(error.exit_code()).unwrap_or(EXIT_DOCKER);
    Failure::new(code, error.to_string())
}

/// The line `agentc run` prints on stderr for each finding at or above
/// [`agentc_policy::Severity::High`] before it launches: where the finding comes from and
/// what it opens, so that nothing that widens the sandbox starts silently.
pub fn finding_warnings(findings: &[agentc_policy::Finding]) -> Vec<String> {
    findings
        .iter()
        .filter(|finding| finding.severity >= agentc_policy::Severity::High)
        .map(|finding| {
            let at = match (finding.position, finding.field.starts_with(['$', '-'])) {
                (_, true) => finding.field.clone(),
                (Some((line, _)), false) => format!("profile line {line} ({})", finding.field),
                (None, false) => format!("default ({})", finding.field),
            };
            format!(
                "agentc: warning: {} {} at {at}: {}",
                finding.severity, finding.code, finding.message
            )
        })
        .collect()
}

/// Prints a line a backend hands over while it prepares a launch (an image being pulled).
pub fn notify(line: &str) {
    eprintln!("agentc: {line}");
}

/// The container launch of a spec; a build is refused.
pub fn container_of(spec: &LaunchSpec) -> Result<&ContainerSpec, Failure> {
    match &spec.action {
        Action::Container(container) => Ok(container),
        Action::Build(_) => Err(Failure::new(
            EXIT_INVALID,
            format!(
                "profile {:?}: a {} launch builds an image and starts no container\n  hint: use `agentc build`",
                spec.profile,
                spec.kind.as_str()
            ),
        )),
    }
}

/// Makes a launch detached (`agentc run --detach`): it starts in the background, gets a name
/// when it has none (`agentc-<kind>-<profile>-<pid>`, so it can be found again), is kept after
/// it exits (no `--rm`: its exit code and logs stay readable, `agentc logs`, until
/// `agentc rm`), and its `io.agentc.spec-digest` label is recomputed for the changed launch.
pub fn force_detach(spec: &mut LaunchSpec) {
    let name = format!(
        "agentc-{}-{}-{}",
        spec.kind.as_str(),
        spec.profile,
        std::process::id()
    );
    if let Action::Container(container) = &mut spec.action {
        if container.detach {
            return;
        }
        container.detach = true;
        container.auto_remove = false;
        container.name.get_or_insert(name);
    }
    let digest = agentc_policy::spec_digest(spec);
    if let Action::Container(container) = &mut spec.action {
        container
            .labels
            .insert(agentc_policy::LABEL_SPEC_DIGEST.to_string(), digest);
    }
}

/// The sha256 (hex) of a file's bytes, or `None` when it cannot be read.
pub fn file_sha256(path: &std::path::Path) -> Option<String> {
    use sha2::{Digest, Sha256};
    let bytes = std::fs::read(path).ok()?;
    Some(
        Sha256::digest(&bytes)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect(),
    )
}

/// Labels a launch with the profile file it came from and the sha256 of its text
/// (`io.agentc.profile-file`, `io.agentc.profile-sha256`), so that `agentc ps` can tell
/// whether the profile changed since; the `io.agentc.spec-digest` label is recomputed.
pub fn record_profile(spec: &mut LaunchSpec, profile: &std::path::Path) {
    let Ok(path) = std::fs::canonicalize(profile) else {
        return;
    };
    let (Some(path_text), Some(sha)) = (path.to_str(), file_sha256(&path)) else {
        return;
    };
    let labels = spec.labels_mut();
    labels.insert(
        agentc_policy::LABEL_PROFILE_FILE.to_string(),
        path_text.to_string(),
    );
    labels.insert(agentc_policy::LABEL_PROFILE_SHA256.to_string(), sha);
    let digest = agentc_policy::spec_digest(spec);
    spec.labels_mut()
        .insert(agentc_policy::LABEL_SPEC_DIGEST.to_string(), digest);
}

/// Drops the pseudo-TTY of an attached launch when stdin is not a terminal: the docker CLI
/// refuses `--tty` then ("the input device is not a TTY"), and a script piping into an agent
/// wants plain streams. Both backends get the same container; the `io.agentc.spec-digest`
/// label is recomputed. A detached launch keeps its TTY for a later `docker attach`.
pub fn adapt_to_terminal(spec: &mut LaunchSpec, stdin_is_terminal: bool) {
    let Action::Container(container) = &mut spec.action else {
        return;
    };
    if stdin_is_terminal || !container.tty || container.detach {
        return;
    }
    container.tty = false;
    let digest = agentc_policy::spec_digest(spec);
    if let Action::Container(container) = &mut spec.action {
        container
            .labels
            .insert(agentc_policy::LABEL_SPEC_DIGEST.to_string(), digest);
    }
}

/// Executes a container launch through `backend` and returns the exit status: the container's
/// exit code for an attached launch, 0 for a started detached one (whose name and reachable
/// addresses are printed). With `pull`, a missing image is pulled first, with progress on
/// stderr, before anything is created.
pub fn execute(spec: &LaunchSpec, backend: BackendArg, pull: bool) -> Result<u8, Failure> {
    let container = container_of(spec)?;
    super::host_ports::check_free(container, &spec.origins, engine_is_remote())?;
    let env = process_env();
    match backend {
        BackendArg::Cli => {
            let outcome =
                agentc_backend_cli::launch(container, &env, pull, notify).map_err(exec_failure)?;
            if let Some(inspect) = &outcome.started {
                print_started(inspect, &container.network);
            }
            if let Some(explanation) = outcome.explanation() {
                eprintln!("agentc: {explanation}");
            }
            Ok(exit_status(i64::from(outcome.exit_code)))
        }
        BackendArg::Api => {
            let runtime = runtime()?;
            runtime.block_on(async {
                let docker = connect().await?;
                // Without --pull, the launch's own inspect refuses a missing image: one
                // inspect, not two.
                if pull {
                    agentc_backend_api::ensure_image(&docker, &container.image, pull, notify)
                        .await
                        .map_err(exec_failure)?;
                }
                let options = agentc_backend_api::LaunchOptions::from_terminal(env);
                let outcome = agentc_backend_api::launch(&docker, container, &options)
                    .await
                    .map_err(exec_failure)?;
                if let Some(explanation) = outcome.explanation() {
                    eprintln!("agentc: {explanation}");
                }
                if container.detach {
                    let inspect =
                        agentc_backend_api::inspect_reachable(&docker, &outcome.container_id)
                            .await
                            .map_err(|error| {
                                Failure::new(
                                    EXIT_DOCKER,
                                    format!(
                                        "started {} but cannot inspect it: {error}",
                                        outcome.container_id
                                    ),
                                )
                            })?;
                    print_started(&inspect, &container.network);
                }
                Ok(exit_status(outcome.exit_code))
            })
        }
    }
}

/// A copy of a detached launch under another name, with an egress companion of its own
/// (when it has one) and its `io.agentc.spec-digest` label recomputed.
pub fn renamed(spec: &LaunchSpec, name: &str) -> LaunchSpec {
    let mut copy = spec.clone();
    if let Action::Container(container) = &mut copy.action {
        // A copy behind the egress proxy gets an isolated network and a proxy of its own,
        // named after it (`NAME-egress`, `NAME-egress-proxy`) and labelled for it, so that
        // `agentc rm NAME` removes its set and no two copies share one.
        let suffix = container
            .name
            .as_deref()
            .and_then(|base| name.strip_prefix(base)?.strip_prefix('-'))
            .unwrap_or(name)
            .to_string();
        container.egress_for(name, &suffix);
        container.name = Some(name.to_string());
    }
    let digest = agentc_policy::spec_digest(&copy);
    if let Action::Container(container) = &mut copy.action {
        container
            .labels
            .insert(agentc_policy::LABEL_SPEC_DIGEST.to_string(), digest);
    }
    copy
}

/// Launches `count` detached copies of a detached `spec` (`agentc run --count`), named
/// NAME-1 to NAME-COUNT, through the Engine API: one connection pool, `jobs` launches at a
/// time ([`agentc_backend_api::launch_many`]); either all start, or none is left running and
/// every failure is named. Prints each started copy, in order.
pub fn execute_copies(
    spec: &LaunchSpec,
    backend: BackendArg,
    pull: bool,
    count: usize,
    jobs: usize,
) -> Result<u8, Failure> {
    if !matches!(backend, BackendArg::Api) {
        return Err(Failure::usage(
            "--count launches its copies through the Engine API only\n  hint: add --backend api",
        ));
    }
    let container = container_of(spec)?;
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
    let base = container
        .name
        .clone()
        .unwrap_or_else(|| spec.profile.clone());
    let copies: Vec<ContainerSpec> = agentc_backend_api::copy_names(&base, count)
        .iter()
        .map(|name| renamed(spec, name))
        .filter_map(|copy| match copy.action {
            Action::Container(container) => Some(*container),
            Action::Build(_) => None,
        })
        .collect();
    let options = agentc_backend_api::LaunchOptions {
        env: process_env(),
        stdin_is_terminal: false,
    };
    let runtime = runtime()?;
    runtime.block_on(async {
        let docker = connect().await?;
        if pull {
            agentc_backend_api::ensure_image(&docker, &container.image, pull, notify)
                .await
                .map_err(exec_failure)?;
        }
        let launched = agentc_backend_api::launch_many(&docker, &copies, &options, jobs)
            .await
            .map_err(|error| {
                let code = u8::try_from(error.exit_code()).unwrap_or(EXIT_DOCKER);
                Failure::new(code, error.to_string())
            })?;
        // Only published ports and named networks need the inspect that says where a copy is.
        let reachable =
            !container.ports.is_empty() || matches!(container.network, Network::Named { .. });
        if !reachable {
            for copy in &launched {
                let id: String = copy.outcome.container_id.chars().take(12).collect();
                println!("started {} ({id})", copy.name);
            }
            return Ok(0);
        }
        let inspects: Vec<_> = futures_util::stream::iter(&launched)
            .map(|copy| agentc_backend_api::inspect_reachable(&docker, &copy.outcome.container_id))
            .buffered(jobs.max(1))
            .collect()
            .await;
        for (copy, inspect) in launched.iter().zip(inspects) {
            match inspect {
                Ok(inspect) => print_started(&inspect, &container.network),
                Err(error) => eprintln!(
                    "agentc: started {} but cannot inspect it: {error}",
                    copy.name
                ),
            }
        }
        Ok(0)
    })
}

/// Prints a started detached container: `started NAME (ID)`, one `  PORT  ADDRESS` line
/// per reachable address, and, on a named network, the names its peers reach it by.
fn print_started(inspect: &ContainerInspectResponse, network: &Network) {
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
    for address in published_addresses(inspect, network) {
        println!("  {}  {}", address.container_port, address.address);
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
    fn a_forced_detach_keeps_the_container_until_rm() {
        let mut container = ContainerSpec::empty("img");
        container.auto_remove = true;
        container.interactive = true;
        let mut spec = LaunchSpec {
            kind: agentc_policy::LaunchKind::Run,
            profile: "p".into(),
            action: Action::Container(Box::new(container)),
            origins: Default::default(),
        };
        force_detach(&mut spec);
        let container = container_of(&spec).unwrap();
        assert!(container.detach && !container.auto_remove);
        assert!(container
            .name
            .as_deref()
            .unwrap()
            .starts_with("agentc-run-p-"));
        assert_eq!(
            container.labels[agentc_policy::LABEL_SPEC_DIGEST],
            agentc_policy::spec_digest(&spec)
        );
    }

    #[test]
    fn refusals_of_rm_exit_1_and_daemon_failures_125() {
        let refused = exec_failure(ExecError::NotAgentc { name: "db".into() });
        assert_eq!(refused.code, 1);
        assert!(
            refused.message.contains("refusing to remove db"),
            "{}",
            refused.message
        );
        let missing = exec_failure(ExecError::ImageMissing {
            image: "x:1".into(),
        });
        assert_eq!(missing.code, 125);
    }
}
