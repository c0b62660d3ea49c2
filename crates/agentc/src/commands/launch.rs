//! What the launching commands share: resolving a container launch, executing it through
//! either backend, the tokio runtime (created here only, never by the offline commands), the
//! docker CLI, exit statuses and signal handling.

use std::collections::BTreeMap;
use std::process::Command as Process;
use std::sync::atomic::{AtomicI32, Ordering};

use agentc_backend_api::exec::{published_addresses, LaunchOptions};
use agentc_policy::{Action, ContainerSpec, LaunchSpec, Network};
use bollard::models::ContainerInspectResponse;
use bollard::Docker;

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

/// Connects to the daemon named by `DOCKER_HOST`, or the local socket.
pub async fn connect() -> Result<Docker, Failure> {
    let host = std::env::var("DOCKER_HOST").ok();
    agentc_backend_api::connect(host.as_deref())
        .await
        .map_err(exec_failure)
}

/// An Engine API failure, with its exit status: 130/143 for an interrupt, 1 for a container
/// `rm` refuses or cannot find, 125 otherwise.
pub fn exec_failure(error: agentc_backend_api::ExecError) -> Failure {
    use agentc_backend_api::ExecError;
    let code = match &error {
        ExecError::NotAgentc { .. } | ExecError::NoSuchContainer { .. } => 1,
        other => u8::try_from(other.exit_code()).unwrap_or(EXIT_DOCKER),
    };
    Failure::new(code, error.to_string())
}

/// A container's exit code as a process exit status (docker's are 0..=255).
pub fn exit_status(code: i64) -> u8 {
    u8::try_from(code.rem_euclid(256)).unwrap_or(1)
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
/// when it has none (`agentc-<kind>-<profile>-<pid>`, so it can be found again), and its
/// `io.agentc.spec-digest` label is recomputed for the changed launch.
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
        container.name.get_or_insert(name);
    }
    let digest = agentc_policy::spec_digest(spec);
    if let Action::Container(container) = &mut spec.action {
        container
            .labels
            .insert(agentc_policy::LABEL_SPEC_DIGEST.to_string(), digest);
    }
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
    let env = process_env();
    match backend {
        BackendArg::Cli => {
            // The docker CLI would silently drop an unset `--env NAME`: refuse it first, as
            // the api backend does. Only names leave this check.
            agentc_backend_api::exec::resolve_env(container, &env).map_err(exec_failure)?;
            drop(env);
            let argv = agentc_backend_cli::render_argv(spec).map_err(Failure::unlaunchable)?;
            ensure_image_cli(&container.image, pull)?;
            let code = run_docker_foreground(&argv)?;
            if container.detach && code == 0 {
                if let Some(name) = &container.name {
                    let inspect = inspect_cli(name)?;
                    print_started(&inspect, &container.network);
                }
            } else if code == 137 {
                eprintln!(
                    "agentc: the container was killed (exit code 137, SIGKILL; the out-of-memory killer does this when resources.memory is reached)"
                );
            }
            Ok(exit_status(i64::from(code)))
        }
        BackendArg::Api => {
            let runtime = runtime()?;
            runtime.block_on(async {
                let docker = connect().await?;
                ensure_image_api(&docker, &container.image, pull).await?;
                let options = LaunchOptions::from_terminal(env);
                let outcome = agentc_backend_api::launch(&docker, container, &options)
                    .await
                    .map_err(exec_failure)?;
                if let Some(explanation) = outcome.explanation() {
                    eprintln!("agentc: {explanation}");
                }
                if container.detach {
                    let inspect = docker
                        .inspect_container(&outcome.container_id, None)
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

/// Prints a started detached container: `started NAME (ID)` and one `  PORT  ADDRESS` line
/// per reachable address.
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
}

/// The network a container is attached to, from its inspect (`HostConfig.NetworkMode`).
pub fn network_of(inspect: &ContainerInspectResponse) -> Network {
    let mode = inspect
        .host_config
        .as_ref()
        .and_then(|host| host.network_mode.as_deref())
        .unwrap_or("default");
    match mode {
        "none" => Network::None,
        "" | "default" | "bridge" | "host" => Network::Default,
        mode if mode.starts_with("container:") => Network::Default,
        name => Network::Named {
            name: name.to_string(),
        },
    }
}

/// Runs `docker ARGS` capturing its output; its stdout, or a failure with its stderr.
pub fn docker_output(args: &[&str]) -> Result<String, Failure> {
    docker_output_with_env(args, &BTreeMap::new())
}

/// [`docker_output`] with `env` on top of the inherited environment (the secrets an argv
/// passes through by name are read from it).
pub fn docker_output_with_env(
    args: &[&str],
    env: &BTreeMap<String, String>,
) -> Result<String, Failure> {
    let argv: Vec<String> = std::iter::once("docker")
        .chain(args.iter().copied())
        .map(str::to_string)
        .collect();
    log::debug!("running {}", agentc_backend_cli::shell_line(&argv));
    let output = Process::new("docker")
        .args(args)
        .envs(env)
        .output()
        .map_err(cannot_run_docker)?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(Failure::new(
            EXIT_DOCKER,
            format!(
                "docker {} failed ({}): {}",
                args.first().copied().unwrap_or_default(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        ))
    }
}

/// Makes sure the daemon has `image` through the Engine API: with `pull`, a missing image is
/// pulled with one progress line per layer status on stderr; without, it is an error that says
/// how to build it and mentions `--pull`.
pub async fn ensure_image_api(docker: &Docker, image: &str, pull: bool) -> Result<(), Failure> {
    use agentc_backend_api::pull;
    if pull::image_present(docker, image)
        .await
        .map_err(exec_failure)?
    {
        return Ok(());
    }
    if !pull {
        return Err(exec_failure(agentc_backend_api::ExecError::ImageMissing {
            image: image.to_string(),
        }));
    }
    eprintln!("agentc: image {image} is not present; pulling it");
    pull::pull_image(docker, image, |line| eprintln!("agentc: pull: {line}"))
        .await
        .map_err(exec_failure)
}

/// The `docker` binary could not be started.
fn cannot_run_docker(error: std::io::Error) -> Failure {
    Failure::new(
        EXIT_DOCKER,
        format!("cannot run docker: {error}\n  hint: install the docker CLI, or use --backend api"),
    )
}

/// Makes sure the daemon has `image` through the docker CLI: with `pull`, a missing image is
/// pulled by `docker pull IMAGE` in the foreground (its progress goes to stderr, keeping stdout
/// for the container); without, it is refused, as the api backend refuses it: `docker run`
/// would pull it, and agentc pulls only when asked (`--pull`).
pub fn ensure_image_cli(image: &str, pull: bool) -> Result<(), Failure> {
    if image_present_cli(image)? {
        return Ok(());
    }
    let missing = || {
        exec_failure(agentc_backend_api::ExecError::ImageMissing {
            image: image.to_string(),
        })
    };
    if !pull {
        return Err(missing());
    }
    eprintln!("agentc: image {image} is not present; pulling it with `docker pull`");
    let output = Process::new("docker")
        .args(["pull", image])
        .stdin(std::process::Stdio::null())
        .stdout(std::io::stderr())
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(cannot_run_docker)?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let message = stderr
            .trim()
            .trim_start_matches("Error response from daemon: ")
            .to_string();
        return Err(exec_failure(agentc_backend_api::ExecError::PullFailed {
            image: image.to_string(),
            hint: agentc_backend_api::pull::pull_hint(&message),
            message,
        }));
    }
    if image_present_cli(image)? {
        Ok(())
    } else {
        Err(missing())
    }
}

/// Whether the daemon has `image`, asked through `docker image inspect`.
fn image_present_cli(image: &str) -> Result<bool, Failure> {
    match docker_output(&["image", "inspect", "--format", "{{.Id}}", image]) {
        Ok(_) => Ok(true),
        Err(failure) if failure.message.contains("No such image") => Ok(false),
        Err(failure) => Err(failure),
    }
}

/// `docker inspect --type container NAME`, read into the Engine API's type.
pub fn inspect_cli(name: &str) -> Result<ContainerInspectResponse, Failure> {
    let text = docker_output(&["inspect", "--type", "container", name])?;
    let mut found: Vec<ContainerInspectResponse> =
        serde_json::from_str(&text).map_err(|error| {
            Failure::new(
                EXIT_DOCKER,
                format!("cannot read `docker inspect {name}`: {error}"),
            )
        })?;
    if found.is_empty() {
        return Err(Failure::new(
            EXIT_DOCKER,
            format!("docker inspect found no container {name}"),
        ));
    }
    Ok(found.swap_remove(0))
}

/// The last SIGINT or SIGTERM received while a [`SignalShield`] was up (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn record_signal(signal: libc::c_int) {
    RECEIVED.store(signal, Ordering::SeqCst);
}

/// Keeps SIGINT (and, when asked, SIGTERM) from ending agentc while a docker child runs, and
/// records them instead; the previous handlers come back when dropped. A handler, unlike
/// `SIG_IGN`, is reset by `exec`, so the docker child still receives and handles the signal
/// and its exit code comes back to agentc.
pub struct SignalShield {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalShield {
    /// Shields SIGINT, and SIGTERM too when `terminate`.
    pub fn new(terminate: bool) -> SignalShield {
        RECEIVED.store(0, Ordering::SeqCst);
        let mut signals = vec![libc::SIGINT];
        if terminate {
            signals.push(libc::SIGTERM);
        }
        let mut previous = Vec::new();
        for signal in signals {
            // SAFETY: sigaction is given a zero-initialised struct with a valid handler that
            // only stores into an atomic (async-signal-safe); the old action is saved to
            // restore it.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = record_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &action, &mut old) == 0 {
                    previous.push((signal, old));
                }
            }
        }
        SignalShield { previous }
    }

    /// The signal received since the shield went up, if any.
    pub fn received(&self) -> Option<libc::c_int> {
        match RECEIVED.load(Ordering::SeqCst) {
            0 => None,
            signal => Some(signal),
        }
    }
}

impl Drop for SignalShield {
    fn drop(&mut self) {
        for (signal, old) in &self.previous {
            // SAFETY: restores the action saved in `new`.
            unsafe {
                libc::sigaction(*signal, old, std::ptr::null_mut());
            }
        }
    }
}

/// Runs a rendered docker argv in the foreground (stdio inherited) and returns docker's exit
/// code. SIGINT is shielded meanwhile, so Ctrl-C reaches docker (same process group), which
/// forwards it to the container or lets the TTY carry it, and its exit code comes back.
///
/// SIGTERM is shielded too and passed on to docker: a supervisor that stops agentc alone
/// stops the container through docker (which forwards it and, with `--rm`, removes it).
pub fn run_docker_foreground(argv: &[String]) -> Result<i32, Failure> {
    log::debug!("running {}", agentc_backend_cli::shell_line(argv));
    let _shield = SignalShield::new(true);
    let child = agentc_backend_cli::exec::spawn("docker", argv)
        .map_err(|error| Failure::new(EXIT_DOCKER, error.to_string()))?;
    agentc_backend_cli::exec::wait_forwarding(child, || {
        // SIGINT from a terminal already reached docker (same process group); only a SIGTERM
        // aimed at agentc needs passing on.
        match RECEIVED.swap(0, Ordering::SeqCst) {
            libc::SIGTERM => Some(libc::SIGTERM),
            _ => None,
        }
    })
    .map_err(|error| Failure::new(EXIT_DOCKER, error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_wrap_like_a_shell() {
        assert_eq!(exit_status(0), 0);
        assert_eq!(exit_status(7), 7);
        assert_eq!(exit_status(137), 137);
        assert_eq!(exit_status(-1), 255);
        assert_eq!(exit_status(256), 0);
    }

    #[test]
    fn refusals_of_rm_exit_1_and_daemon_failures_125() {
        use agentc_backend_api::ExecError;
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

    #[test]
    fn network_mode_names_the_network() {
        let inspect = |mode: &str| ContainerInspectResponse {
            host_config: Some(bollard::models::HostConfig {
                network_mode: Some(mode.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(network_of(&inspect("none")), Network::None);
        assert_eq!(network_of(&inspect("default")), Network::Default);
        assert_eq!(network_of(&inspect("bridge")), Network::Default);
        assert_eq!(
            network_of(&inspect("scan-net")),
            Network::Named {
                name: "scan-net".into()
            }
        );
    }
}
