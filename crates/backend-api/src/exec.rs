//! Executing a launch through the Engine API: connect, launch (secrets, image check, create,
//! attach, start, wait, remove), list and remove agentc's containers, and find where a
//! container's published ports are reachable.
//!
//! What `docker run` does beyond the API call, decided here explicitly: agentc pulls only when
//! asked (`--pull`, through [`crate::pull::pull_image`] before [`launch`]; otherwise a missing
//! image is an error that says how to build it); it does not inject the CLI config's
//! proxy variables (the profile's egress policy owns the environment); secrets are read from
//! the environment map handed in, and an unset optional secret is left out rather than sent
//! as a bare name.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::{IsTerminal, Read, Write};
use std::time::Duration;

use agentc_policy::spec::{ContainerSpec, EnvValue, MountSource, Network};
use bollard::errors::Error as BollardError;
use bollard::models::{ContainerInspectResponse, ContainerSummary};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, CreateContainerOptionsBuilder, EventsOptionsBuilder,
    KillContainerOptionsBuilder, ListContainersOptionsBuilder, RemoveContainerOptionsBuilder,
    ResizeContainerTTYOptionsBuilder, WaitContainerOptionsBuilder,
};
use bollard::Docker;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::render::{render_create, RenderError};

/// The label every agentc container carries, holding its profile's name.
pub const PROFILE_LABEL: &str = "io.agentc.profile";

/// How to run a launch, beyond the spec.
#[derive(Clone, Default)]
pub struct LaunchOptions {
    /// The caller's environment, from which secrets are resolved.
    pub env: BTreeMap<String, String>,
    /// Whether stdin is a terminal: with a TTY spec, the terminal is switched to raw mode and
    /// its size follows the local window. [`LaunchOptions::from_terminal`] detects it.
    pub stdin_is_terminal: bool,
}

impl LaunchOptions {
    /// Options with `env`, detecting whether this process's stdin is a terminal.
    pub fn from_terminal(env: BTreeMap<String, String>) -> Self {
        LaunchOptions {
            env,
            stdin_is_terminal: std::io::stdin().is_terminal(),
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
    /// A one-line explanation of an abnormal exit, such as a kill by the OOM killer.
    pub fn explanation(&self) -> Option<String> {
        match (self.exit_code, self.oom_killed) {
            (137, true) => Some(
                "container was killed by the out-of-memory killer (exit code 137; hint: raise resources.memory)"
                    .to_string(),
            ),
            (137, false) => Some("container was killed (exit code 137, SIGKILL)".to_string()),
            _ => None,
        }
    }
}

/// The signal that interrupted a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// SIGINT (Ctrl-C).
    Sigint,
    /// SIGTERM.
    Sigterm,
}

impl Interrupt {
    /// The conventional shell exit code: 130 for SIGINT, 143 for SIGTERM.
    pub fn exit_code(self) -> i32 {
        match self {
            Interrupt::Sigint => 130,
            Interrupt::Sigterm => 143,
        }
    }
}

impl fmt::Display for Interrupt {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Interrupt::Sigint => "SIGINT",
            Interrupt::Sigterm => "SIGTERM",
        })
    }
}

/// Why executing a launch failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// The spec could not be rendered.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// A required secret is not set in the caller's environment. Only its name is kept.
    #[error("required secret {variable} is not set in the environment (hint: export {variable} before launching)")]
    MissingSecret {
        /// The variable's name.
        variable: String,
    },
    /// The image is not present on the daemon, and no pull was asked for.
    #[error("image {image} is not present on the docker daemon (hint: build it with `agentc build PROFILE`, or provide it with `docker build` or `docker import`; agentc never pulls unless run with --pull, which pulls it from its registry)")]
    ImageMissing {
        /// The image reference.
        image: String,
    },
    /// Pulling the image failed (registry unreachable, no such repository or tag, credentials
    /// wanted); nothing was created.
    #[error("cannot pull image {image}: {message} (hint: {hint})")]
    PullFailed {
        /// The image reference.
        image: String,
        /// The daemon's message.
        message: String,
        /// What to do about it.
        hint: &'static str,
    },
    /// A volume subpath needs a newer daemon than the one connected.
    #[error("mount {target} uses a volume subpath, which needs docker engine api 1.45 or later, but the daemon speaks {api_version} (hint: upgrade docker or drop the subpath)")]
    SubpathUnsupported {
        /// The mount's target.
        target: String,
        /// The negotiated API version, such as `1.41`.
        api_version: String,
    },
    /// The daemon could not be reached.
    #[error("cannot connect to the docker daemon: {message} (hint: is docker running? DOCKER_HOST selects another daemon)")]
    Connect {
        /// bollard's message.
        message: String,
    },
    /// The daemon answered a request with an error.
    #[error("docker daemon refused to {step} (status {status}): {message}{}", daemon_hint(message).map(|hint| format!(" (hint: {hint})")).unwrap_or_default())]
    Daemon {
        /// What agentc was doing, such as `create the container`.
        step: &'static str,
        /// The HTTP status.
        status: u16,
        /// The daemon's message.
        message: String,
    },
    /// The connection to the daemon failed mid-launch.
    #[error("lost the connection to the docker daemon while trying to {step}: {message} (hint: check that the daemon is still running)")]
    ConnectionLost {
        /// What agentc was doing.
        step: &'static str,
        /// bollard's message.
        message: String,
    },
    /// A signal interrupted the launch; the container created so far was removed.
    #[error("interrupted by {signal}{}", container.as_ref().map(|c| format!("; removed container {c}")).unwrap_or_default())]
    Interrupted {
        /// The signal.
        signal: Interrupt,
        /// The container that was removed, if one had been created.
        container: Option<String>,
    },
    /// A launch failed or was interrupted, and the container it created could not be removed
    /// (typically because the daemon became unreachable).
    #[error("{cause}; container {container} could not be removed: {message} (hint: `agentc rm {container}` removes it once the daemon is reachable again)")]
    NotRemoved {
        /// Why the launch ended.
        cause: Box<ExecError>,
        /// The container's name, or its ID when it has none.
        container: String,
        /// Why the removal failed.
        message: String,
    },
    /// A container named for removal does not exist.
    #[error("no such container {name} (hint: `agentc ps` lists agentc's containers)")]
    NoSuchContainer {
        /// The name or ID given.
        name: String,
    },
    /// A container named for removal is not one of agentc's.
    #[error(
        "refusing to remove {name}: it has no {PROFILE_LABEL} label, so agentc did not create it"
    )]
    NotAgentc {
        /// The name or ID given.
        name: String,
    },
    /// The local terminal or stdio failed.
    #[error("terminal i/o failed while trying to {step}: {source}")]
    Terminal {
        /// What agentc was doing.
        step: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl ExecError {
    /// The process exit code this error maps to: 130/143 for interrupts, 125 (docker's own
    /// code for a failure before the container ran) otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            ExecError::Interrupted { signal, .. } => signal.exit_code(),
            ExecError::NotRemoved { cause, .. } => cause.exit_code(),
            _ => 125,
        }
    }
}

/// Connects to the daemon and negotiates the API version (down to the daemon's, such as 1.41).
/// `docker_host` is `DOCKER_HOST` as read by the caller; `None` uses the local socket.
pub async fn connect(docker_host: Option<&str>) -> Result<Docker, ExecError> {
    let docker = match docker_host.filter(|host| !host.is_empty()) {
        Some(host) => Docker::connect_with_host(host),
        None => Docker::connect_with_local_defaults(),
    }
    .map_err(|error| ExecError::Connect {
        message: error.to_string(),
    })?;
    let docker = docker
        .negotiate_version()
        .await
        .map_err(|error| ExecError::Connect {
            message: error.to_string(),
        })?;
    log::debug!(
        "connected to the daemon at {} (engine api {})",
        if docker_host.is_some_and(|host| !host.is_empty()) {
            "DOCKER_HOST"
        } else {
            "the local socket"
        },
        docker.client_version()
    );
    Ok(docker)
}

/// Resolves the spec's environment for the daemon: literals as `NAME=value`, set secrets as
/// `NAME=value` from `env`, unset optional secrets left out. A required secret that is unset
/// is an error naming the variable.
pub fn resolve_env(
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
) -> Result<Vec<String>, ExecError> {
    let mut resolved = Vec::with_capacity(spec.env.len());
    for var in &spec.env {
        match &var.value {
            EnvValue::Literal { value } => resolved.push(format!("{}={}", var.name, value)),
            EnvValue::Secret { required } => match env.get(&var.name) {
                Some(value) => resolved.push(format!("{}={}", var.name, value)),
                None if *required => {
                    return Err(ExecError::MissingSecret {
                        variable: var.name.clone(),
                    })
                }
                None => {}
            },
        }
    }
    Ok(resolved)
}

/// Launches a container: resolves secrets and checks the image before creating anything,
/// creates it, then either starts it detached or attaches, starts, waits and removes it.
/// SIGINT or SIGTERM at any step kills and removes what was created.
pub async fn launch(
    docker: &Docker,
    spec: &ContainerSpec,
    options: &LaunchOptions,
) -> Result<Outcome, ExecError> {
    let mut request = render_create(spec)?;
    request.body.env = Some(resolve_env(spec, &options.env)?).filter(|env| !env.is_empty());
    let passed: Vec<&str> = spec
        .env
        .iter()
        .filter(|var| {
            matches!(var.value, EnvValue::Secret { .. }) && options.env.contains_key(&var.name)
        })
        .map(|var| var.name.as_str())
        .collect();
    if !passed.is_empty() {
        log::debug!(
            "secrets passed from this environment, by name: {}",
            passed.join(", ")
        );
    }
    check_subpaths(docker, spec)?;
    let mut signals = Signals::new()?;

    tokio::select! {
        result = docker.inspect_image(&spec.image) => match result {
            Ok(_) => log::debug!("image {} is present", spec.image),
            Err(error) if is_not_found(&error) => {
                return Err(ExecError::ImageMissing { image: spec.image.clone() })
            }
            Err(error) => return Err(daemon_error("inspect the image", error)),
        },
        signal = signals.recv() => return Err(ExecError::Interrupted { signal, container: None }),
    }

    let mut create = CreateContainerOptionsBuilder::new();
    if let Some(name) = &request.name {
        create = create.name(name);
    }
    let created = tokio::select! {
        result = docker.create_container(Some(create.build()), request.body) => {
            result.map_err(|error| daemon_error("create the container", error))?
        }
        signal = signals.recv() => {
            // The daemon may have created it anyway; only a name can find it again.
            let Some(name) = &request.name else {
                return Err(ExecError::Interrupted { signal, container: None });
            };
            let removed = cleanup(docker, name).await;
            let cause = ExecError::Interrupted {
                signal,
                container: (removed == Ok(Cleanup::Removed)).then(|| name.clone()),
            };
            return Err(left_behind(cause, name, removed));
        }
    };
    let id = created.id;
    log::debug!(
        "created container {} ({id})",
        request.name.as_deref().unwrap_or("without a name")
    );

    let result = if spec.detach {
        run_detached(docker, &id, &mut signals).await
    } else {
        run_attached(docker, spec, options, &id, &mut signals).await
    };
    // What `agentc rm` can name the container by, should it have to.
    let handle = request.name.as_deref().unwrap_or(&id);
    match result {
        Ok(outcome) => Ok(outcome),
        Err(Step::Interrupted(signal)) => {
            let removed = cleanup(docker, &id).await;
            let cause = ExecError::Interrupted {
                signal,
                container: removed.is_ok().then(|| handle.to_string()),
            };
            Err(left_behind(cause, handle, removed))
        }
        Err(Step::Failed(error)) => {
            // Leave nothing behind a failed launch, or say what is left.
            let removed = cleanup(docker, &id).await;
            Err(left_behind(error, handle, removed))
        }
    }
}

/// What stopped a launch step.
enum Step {
    Interrupted(Interrupt),
    Failed(ExecError),
}

impl From<ExecError> for Step {
    fn from(error: ExecError) -> Self {
        Step::Failed(error)
    }
}

async fn run_detached(docker: &Docker, id: &str, signals: &mut Signals) -> Result<Outcome, Step> {
    log::debug!("starting {id} detached");
    tokio::select! {
        result = docker.start_container(id, None) => {
            result.map_err(|error| daemon_error("start the container", error))?;
        }
        signal = signals.recv() => return Err(Step::Interrupted(signal)),
    }
    Ok(Outcome {
        exit_code: 0,
        container_id: id.to_string(),
        oom_killed: false,
    })
}

async fn run_attached(
    docker: &Docker,
    spec: &ContainerSpec,
    options: &LaunchOptions,
    id: &str,
    signals: &mut Signals,
) -> Result<Outcome, Step> {
    let attach_options = AttachContainerOptionsBuilder::new()
        .stream(true)
        .stdin(spec.interactive)
        .stdout(true)
        .stderr(true)
        .build();
    log::debug!("attaching to {id}");
    let attached = tokio::select! {
        result = docker.attach_container(id, Some(attach_options)) => {
            result.map_err(|error| daemon_error("attach to the container", error))?
        }
        signal = signals.recv() => return Err(Step::Interrupted(signal)),
    };
    let mut output = attached.output;
    let mut input = attached.input;

    // With --rm the daemon removes the container right after it exits, so the wait must be
    // registered before the start ("next-exit"); otherwise "not-running" after the start has
    // no race at all.
    let early_wait = spec
        .auto_remove
        .then(|| spawn_wait(docker, id, "next-exit"));
    if early_wait.is_some() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let terminal = spec.tty && options.stdin_is_terminal;
    let _raw = if terminal {
        Some(RawMode::enable().map_err(|source| ExecError::Terminal {
            step: "switch the terminal to raw mode",
            source,
        })?)
    } else {
        None
    };

    // With --rm the daemon may remove the container before it can be inspected, losing
    // `State.OOMKilled` (seen on a busy daemon: exit 137 reported as a plain SIGKILL); the
    // daemon's `oom` event for it is watched from before the start instead.
    let oom_watch = spec.auto_remove.then(|| OomWatch::spawn(docker, id));

    log::debug!("starting {id}");
    tokio::select! {
        result = docker.start_container(id, None) => {
            result.map_err(|error| daemon_error("start the container", error))?;
        }
        signal = signals.recv() => return Err(Step::Interrupted(signal)),
    }
    let mut wait = match early_wait {
        Some(wait) => wait,
        None => spawn_wait(docker, id, "not-running"),
    };

    let mut winch = if terminal {
        resize(docker, id).await;
        signal(SignalKind::window_change()).ok()
    } else {
        None
    };
    let mut stdin = spec.interactive.then(spawn_stdin_reader);
    let mut stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    let mut output_open = true;

    let exit_code = loop {
        tokio::select! {
            chunk = output.next(), if output_open => match chunk {
                Some(Ok(chunk)) => write_chunk(&mut stdout, &mut stderr, chunk)?,
                Some(Err(error)) => return Err(daemon_error("read the container's output", error).into()),
                None => output_open = false,
            },
            data = recv_stdin(&mut stdin), if stdin.is_some() => match data {
                Some(data) => {
                    if input.write_all(&data).await.is_err() {
                        stdin = None;
                    }
                }
                None => {
                    // Local EOF: close the container's stdin (StdinOnce ends its stdin too).
                    let _ = input.shutdown().await;
                    stdin = None;
                }
            },
            _ = recv_winch(&mut winch), if winch.is_some() => resize(docker, id).await,
            signal = signals.recv() => return Err(Step::Interrupted(signal)),
            waited = &mut wait => break waited
                .unwrap_or_else(|_| Err(ExecError::ConnectionLost {
                    step: "wait for the container",
                    message: "the wait task ended unexpectedly".into(),
                }))?,
        }
    };

    // Drain what the container wrote just before exiting.
    if output_open {
        let drain = async {
            while let Some(Ok(chunk)) = output.next().await {
                if write_chunk(&mut stdout, &mut stderr, chunk).is_err() {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
    }
    drop(_raw);

    log::debug!("{id} exited with code {exit_code}");
    let oom_killed = exit_code == 137 && was_oom_killed(docker, id, oom_watch).await;
    if spec.auto_remove {
        log::debug!("waiting for the daemon to remove {id} (auto-remove)");
        // Like `docker run --rm`, return only once the daemon has removed it.
        wait_removed(docker, id).await;
    } else {
        log::debug!("removing {id}");
        remove_quietly(docker, id)
            .await
            .map_err(|error| daemon_error("remove the container", error))?;
    }
    Ok(Outcome {
        exit_code,
        container_id: id.to_string(),
        oom_killed,
    })
}

/// Whether the OOM killer ended the container: its `State.OOMKilled`, or, when it is already
/// gone (`AutoRemove`), whether the daemon announced an `oom` event for it.
async fn was_oom_killed(docker: &Docker, id: &str, watch: Option<OomWatch>) -> bool {
    match docker.inspect_container(id, None).await {
        Ok(inspect) => inspect.state.and_then(|state| state.oom_killed) == Some(true),
        Err(_) => match watch {
            // The daemon publishes `oom` before `die`; allow the event stream a moment.
            Some(mut watch) => matches!(
                tokio::time::timeout(Duration::from_secs(1), &mut watch.0).await,
                Ok(Ok(true))
            ),
            None => false,
        },
    }
}

/// A task that ends with true once the daemon announces an `oom` event for one container;
/// aborted when dropped, so an early return leaves no event stream open.
struct OomWatch(tokio::task::JoinHandle<bool>);

impl OomWatch {
    fn spawn(docker: &Docker, id: &str) -> Self {
        let docker = docker.clone();
        let id = id.to_string();
        OomWatch(tokio::spawn(async move {
            let filters = HashMap::from([
                ("type", vec!["container"]),
                ("container", vec![id.as_str()]),
                ("event", vec!["oom"]),
            ]);
            // `since` the epoch replays the daemon's buffered events for this id (there can be
            // none from before its creation), so an oom that happens before this subscription
            // reaches the daemon is not missed, whatever the two clocks say.
            let options = EventsOptionsBuilder::new()
                .since("1")
                .filters(&filters)
                .build();
            let mut events = docker.events(Some(options));
            matches!(events.next().await, Some(Ok(_)))
        }))
    }
}

impl Drop for OomWatch {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Refuses a volume subpath on a daemon older than API 1.45, which would silently ignore
/// `VolumeOptions.Subpath` and mount the whole volume.
fn check_subpaths(docker: &Docker, spec: &ContainerSpec) -> Result<(), ExecError> {
    let version = docker.client_version();
    if (version.major_version, version.minor_version) >= (1, 45) {
        return Ok(());
    }
    for mount in &spec.mounts {
        if let MountSource::Volume {
            subpath: Some(_), ..
        } = &mount.source
        {
            return Err(ExecError::SubpathUnsupported {
                target: mount.target.clone(),
                api_version: format!("{}.{}", version.major_version, version.minor_version),
            });
        }
    }
    Ok(())
}

fn spawn_wait(
    docker: &Docker,
    id: &str,
    condition: &str,
) -> tokio::task::JoinHandle<Result<i64, ExecError>> {
    let docker = docker.clone();
    let id = id.to_string();
    let options = WaitContainerOptionsBuilder::new()
        .condition(condition)
        .build();
    tokio::spawn(async move {
        let mut stream = docker.wait_container(&id, Some(options));
        match stream.next().await {
            Some(Ok(response)) => Ok(response.status_code),
            // bollard reports a non-zero exit status as this error.
            Some(Err(BollardError::DockerContainerWaitError { code, .. })) => Ok(code),
            Some(Err(error)) => Err(daemon_error("wait for the container", error)),
            None => Err(ExecError::ConnectionLost {
                step: "wait for the container",
                message: "the wait stream ended without a status".into(),
            }),
        }
    })
}

fn write_chunk(
    stdout: &mut std::io::Stdout,
    stderr: &mut std::io::Stderr,
    chunk: bollard::container::LogOutput,
) -> Result<(), ExecError> {
    use bollard::container::LogOutput;
    let result = match chunk {
        LogOutput::StdErr { message } => stderr.write_all(&message).and_then(|()| stderr.flush()),
        LogOutput::StdOut { message } | LogOutput::Console { message } => {
            stdout.write_all(&message).and_then(|()| stdout.flush())
        }
        LogOutput::StdIn { .. } => Ok(()),
    };
    result.map_err(|source| ExecError::Terminal {
        step: "write the container's output",
        source,
    })
}

/// Reads stdin on a plain thread: tokio's stdin would keep the runtime from shutting down
/// while a read blocks. The thread ends with the process.
fn spawn_stdin_reader() -> tokio::sync::mpsc::Receiver<Vec<u8>> {
    let (sender, receiver) = tokio::sync::mpsc::channel(16);
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buffer = [0u8; 4096];
        loop {
            match stdin.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if sender.blocking_send(buffer[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    receiver
}

async fn recv_stdin(stdin: &mut Option<tokio::sync::mpsc::Receiver<Vec<u8>>>) -> Option<Vec<u8>> {
    match stdin {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

async fn recv_winch(winch: &mut Option<Signal>) {
    match winch {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// Sets the container's TTY to the local terminal's size, best effort.
async fn resize(docker: &Docker, id: &str) {
    if let Some((rows, columns)) = terminal_size() {
        let options = ResizeContainerTTYOptionsBuilder::new()
            .h(i32::from(rows))
            .w(i32::from(columns))
            .build();
        let _ = docker.resize_container_tty(id, options).await;
    }
}

fn terminal_size() -> Option<(u16, u16)> {
    for fd in [libc::STDOUT_FILENO, libc::STDIN_FILENO, libc::STDERR_FILENO] {
        // SAFETY: TIOCGWINSZ writes one `winsize` into the pointed-to, initialised struct.
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        let status = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) };
        if status == 0 && size.ws_row > 0 && size.ws_col > 0 {
            return Some((size.ws_row, size.ws_col));
        }
    }
    None
}

/// The local terminal in raw mode, restored when dropped (also on early return or panic).
struct RawMode {
    original: libc::termios,
}

impl RawMode {
    fn enable() -> std::io::Result<Self> {
        // SAFETY: tcgetattr fills the zeroed termios; cfmakeraw and tcsetattr read it.
        unsafe {
            let mut original: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(libc::STDIN_FILENO, &mut original) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut raw = original;
            libc::cfmakeraw(&mut raw);
            if libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(RawMode { original })
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // SAFETY: restores the attributes read in `enable`.
        unsafe {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.original);
        }
    }
}

/// SIGINT and SIGTERM, listened to for the whole launch.
struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    fn new() -> Result<Self, ExecError> {
        let listen = |kind| {
            signal(kind).map_err(|source| ExecError::Terminal {
                step: "listen for SIGINT and SIGTERM",
                source,
            })
        };
        Ok(Signals {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
        })
    }

    async fn recv(&mut self) -> Interrupt {
        tokio::select! {
            _ = self.interrupt.recv() => Interrupt::Sigint,
            _ = self.terminate.recv() => Interrupt::Sigterm,
        }
    }
}

/// Kills then removes a container, best effort, ignoring "not found" and "not running".
/// Kills and force-removes the container of a launch that did not finish. `Ok` when it is
/// gone (also when it never existed); the daemon's or the connection's message when it could
/// not be removed, for example because the daemon is unreachable.
async fn cleanup(docker: &Docker, id: &str) -> Result<Cleanup, String> {
    log::debug!("killing and removing {id}: the launch did not finish");
    let kill = KillContainerOptionsBuilder::new().signal("KILL").build();
    let _ = docker.kill_container(id, Some(kill)).await;
    let options = RemoveContainerOptionsBuilder::new().force(true).build();
    match docker.remove_container(id, Some(options)).await {
        Ok(()) => Ok(Cleanup::Removed),
        Err(error) if is_not_found(&error) => Ok(Cleanup::Absent),
        Err(error) if status(&error) == Some(409) => {
            // The daemon's AutoRemove is already removing it (the kill ended it): return only
            // once it is gone, or it is still listed after agentc said it was removed.
            wait_removed(docker, id).await;
            Ok(Cleanup::Removed)
        }
        Err(error) => Err(error.to_string()),
    }
}

/// What [`cleanup`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cleanup {
    /// The container existed and is gone now.
    Removed,
    /// There was no such container (never created, or already removed).
    Absent,
}

/// `cause` as it is when the cleanup removed the container; wrapped in
/// [`ExecError::NotRemoved`], naming the container, when it did not.
fn left_behind(cause: ExecError, container: &str, removed: Result<Cleanup, String>) -> ExecError {
    match removed {
        Ok(_) => cause,
        Err(message) => ExecError::NotRemoved {
            cause: Box::new(cause),
            container: container.to_string(),
            message,
        },
    }
}

/// Waits (up to 10 s) until the daemon has removed a container; a container already gone
/// answers 404, which ends the wait as well.
async fn wait_removed(docker: &Docker, id: &str) {
    let removed = WaitContainerOptionsBuilder::new()
        .condition("removed")
        .build();
    let mut removal = docker.wait_container(id, Some(removed));
    let _ = tokio::time::timeout(Duration::from_secs(10), removal.next()).await;
}

/// Force-removes a container; a container already gone (404) or already being removed by
/// `AutoRemove` (409) is not an error.
async fn remove_quietly(docker: &Docker, id: &str) -> Result<(), BollardError> {
    let options = RemoveContainerOptionsBuilder::new().force(true).build();
    match docker.remove_container(id, Some(options)).await {
        Ok(()) => Ok(()),
        Err(error) if is_not_found(&error) || status(&error) == Some(409) => Ok(()),
        Err(error) => Err(error),
    }
}

pub(crate) fn status(error: &BollardError) -> Option<u16> {
    match error {
        BollardError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

pub(crate) fn is_not_found(error: &BollardError) -> bool {
    status(error) == Some(404)
}

/// What to do about a daemon refusal that a valid profile can still meet on a given host,
/// recognized by the daemon's own wording (moby's `daemon/create.go`, `daemon/start.go`).
pub fn daemon_hint(message: &str) -> Option<&'static str> {
    if message.contains("is already in use by container") {
        Some("`agentc ps --all` lists agentc's containers and `agentc rm NAME` removes one")
    } else if message.contains("Range of CPUs is from") {
        Some("lower resources.cpus (or AGENTC_CPUS) to at most the daemon host's CPU count")
    } else if message.contains("bind source path does not exist") {
        Some("a bind source must exist on the daemon's host when the container is created")
    } else if message.starts_with("network ") && message.ends_with(" not found") {
        Some("create it with `docker network create NAME`, or change network.name (or AGENTC_NETWORK)")
    } else if message.contains("error gathering device information") {
        Some("the daemon's host lacks the device: for /dev/fuse load the fuse module, or drop security.fuse")
    } else {
        None
    }
}

pub(crate) fn daemon_error(step: &'static str, error: BollardError) -> ExecError {
    match error {
        BollardError::DockerResponseServerError {
            status_code,
            message,
        } => ExecError::Daemon {
            step,
            status: status_code,
            message,
        },
        other => ExecError::ConnectionLost {
            step,
            message: other.to_string(),
        },
    }
}

/// One agentc container, as `agentc ps` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The container's ID.
    pub id: String,
    /// Its name, without the leading `/`.
    pub name: String,
    /// Its image.
    pub image: String,
    /// The `io.agentc.profile` label.
    pub profile: String,
    /// The state, such as `running` or `exited`.
    pub state: String,
    /// The daemon's human status, such as `Up 5 minutes`.
    pub status: String,
    /// All its labels.
    pub labels: BTreeMap<String, String>,
}

/// Lists agentc's containers (running or not) matching a label filter such as
/// `io.agentc.profile` (all of agentc's) or `io.agentc.profile=demo`, sorted by name.
pub async fn list(docker: &Docker, label_filter: &str) -> Result<Vec<Summary>, ExecError> {
    let filters = HashMap::from([("label", vec![label_filter])]);
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    let containers = docker
        .list_containers(Some(options))
        .await
        .map_err(|error| daemon_error("list containers", error))?;
    let mut summaries: Vec<Summary> = containers.into_iter().map(summarize).collect();
    summaries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(summaries)
}

fn summarize(container: ContainerSummary) -> Summary {
    let labels: BTreeMap<String, String> =
        container.labels.unwrap_or_default().into_iter().collect();
    Summary {
        id: container.id.unwrap_or_default(),
        name: container
            .names
            .and_then(|names| names.into_iter().next())
            .map(|name| name.trim_start_matches('/').to_string())
            .unwrap_or_default(),
        image: container.image.unwrap_or_default(),
        profile: labels.get(PROFILE_LABEL).cloned().unwrap_or_default(),
        state: container
            .state
            .map(|state| state.to_string())
            .unwrap_or_default(),
        status: container.status.unwrap_or_default(),
        labels,
    }
}

/// Which containers `agentc rm` removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoveTarget {
    /// These names or IDs; each must be an agentc container.
    Names(Vec<String>),
    /// Every container labelled `io.agentc.profile`.
    All,
}

/// Force-removes agentc containers and returns the names removed. A named container that
/// does not exist or lacks the `io.agentc.profile` label is an error, checked for every name
/// before anything is removed.
pub async fn remove(docker: &Docker, target: &RemoveTarget) -> Result<Vec<String>, ExecError> {
    let names: Vec<String> = match target {
        RemoveTarget::All => list(docker, PROFILE_LABEL)
            .await?
            .into_iter()
            .map(|summary| summary.name)
            .collect(),
        RemoveTarget::Names(names) => {
            for name in names {
                let inspect = match docker.inspect_container(name, None).await {
                    Ok(inspect) => inspect,
                    Err(error) if is_not_found(&error) => {
                        return Err(ExecError::NoSuchContainer { name: name.clone() })
                    }
                    Err(error) => return Err(daemon_error("inspect the container", error)),
                };
                let labelled = inspect
                    .config
                    .and_then(|config| config.labels)
                    .is_some_and(|labels| labels.contains_key(PROFILE_LABEL));
                if !labelled {
                    return Err(ExecError::NotAgentc { name: name.clone() });
                }
            }
            names.clone()
        }
    };
    for name in &names {
        remove_quietly(docker, name)
            .await
            .map_err(|error| daemon_error("remove the container", error))?;
    }
    Ok(names)
}

/// Where one published container port can be reached from the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedAddress {
    /// The container port and protocol, such as `8080/tcp`.
    pub container_port: String,
    /// `HOST:PORT`, IPv6 in brackets.
    pub address: String,
}

/// The addresses at which a container's ports are reachable: each host binding (a wildcard
/// host IP becomes the loopback address), then, on a named network, the container's IP on
/// that network with the container port (as the Strix seed's `_resolve_exposed_port` does).
pub fn published_addresses(
    inspect: &ContainerInspectResponse,
    network: &Network,
) -> Vec<PublishedAddress> {
    let settings = inspect.network_settings.as_ref();
    let ports: BTreeMap<String, Vec<bollard::models::PortBinding>> = settings
        .and_then(|settings| settings.ports.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|(port, bindings)| (port, bindings.unwrap_or_default()))
        .collect();
    let mut addresses = Vec::new();
    for (port, bindings) in &ports {
        for binding in bindings {
            let Some(host_port) = binding.host_port.as_deref().filter(|p| !p.is_empty()) else {
                continue;
            };
            let host = match binding.host_ip.as_deref().unwrap_or("") {
                "" | "0.0.0.0" => "127.0.0.1".to_string(),
                "::" => "[::1]".to_string(),
                ip if ip.contains(':') => format!("[{ip}]"),
                ip => ip.to_string(),
            };
            let address = format!("{host}:{host_port}");
            let entry = PublishedAddress {
                container_port: port.clone(),
                address,
            };
            if !addresses.contains(&entry) {
                addresses.push(entry);
            }
        }
    }
    if let Network::Named { name } = network {
        let endpoint = settings
            .and_then(|settings| settings.networks.as_ref())
            .and_then(|networks| networks.get(name));
        let ip = endpoint.and_then(|endpoint| {
            endpoint
                .ip_address
                .clone()
                .filter(|ip| !ip.is_empty())
                .or_else(|| {
                    endpoint
                        .global_ipv6_address
                        .clone()
                        .filter(|ip| !ip.is_empty())
                })
        });
        if let Some(ip) = ip {
            let host = if ip.contains(':') {
                format!("[{ip}]")
            } else {
                ip
            };
            for port in ports.keys() {
                let number = port.split('/').next().unwrap_or(port);
                addresses.push(PublishedAddress {
                    container_port: port.clone(),
                    address: format!("{host}:{number}"),
                });
            }
        }
    }
    addresses
}

#[cfg(test)]
mod tests {
    use agentc_policy::spec::EnvVar;
    use bollard::models::{EndpointSettings, NetworkSettings, PortBinding};

    use super::*;

    fn spec(env: Vec<EnvVar>) -> ContainerSpec {
        ContainerSpec {
            env,
            ..ContainerSpec::empty("img")
        }
    }

    fn var(name: &str, value: EnvValue) -> EnvVar {
        EnvVar {
            name: name.into(),
            value,
        }
    }

    /// The daemon's messages, as moby words them (the first three seen on engine 20.10).
    #[test]
    fn daemon_refusals_a_valid_profile_can_meet_get_a_hint() {
        let hinted = [
            (
                "Conflict. The container name \"/x\" is already in use by container \"0123\". You have to remove (or rename) that container to be able to reuse that name.",
                "agentc rm NAME",
            ),
            (
                "Range of CPUs is from 0.01 to 2.00, as there are only 2 CPUs available",
                "resources.cpus (or AGENTC_CPUS)",
            ),
            (
                "invalid mount config for type \"bind\": bind source path does not exist: /gone",
                "must exist on the daemon's host",
            ),
            ("network agentc-net not found", "docker network create"),
            (
                "error gathering device information while adding custom device \"/dev/fuse\": no such file or directory",
                "drop security.fuse",
            ),
        ];
        for (message, expected) in hinted {
            let error = ExecError::Daemon {
                step: "create the container",
                status: 400,
                message: message.to_string(),
            };
            let text = error.to_string();
            assert!(text.ends_with(')') && text.contains(expected), "{text}");
            assert!(text.contains(message), "{text}");
        }
        let plain = ExecError::Daemon {
            step: "start the container",
            status: 500,
            message: "something else".to_string(),
        };
        assert_eq!(
            plain.to_string(),
            "docker daemon refused to start the container (status 500): something else"
        );
    }

    fn caller_env() -> BTreeMap<String, String> {
        BTreeMap::from([("TOKEN".to_string(), "s3cret-value".to_string())])
    }

    #[test]
    fn secrets_resolve_from_the_caller_env_and_unset_optional_ones_are_dropped() {
        let spec = spec(vec![
            var("A", EnvValue::Literal { value: "1".into() }),
            var("TOKEN", EnvValue::Secret { required: true }),
            var("OPTIONAL", EnvValue::Secret { required: false }),
        ]);
        assert_eq!(
            resolve_env(&spec, &caller_env()).unwrap(),
            vec!["A=1".to_string(), "TOKEN=s3cret-value".to_string()]
        );
    }

    #[test]
    fn a_missing_required_secret_is_named_without_any_value() {
        let spec = spec(vec![
            var("TOKEN", EnvValue::Secret { required: true }),
            var("API_KEY", EnvValue::Secret { required: true }),
        ]);
        let error = resolve_env(&spec, &caller_env()).unwrap_err();
        let message = error.to_string();
        assert!(matches!(&error, ExecError::MissingSecret { variable } if variable == "API_KEY"));
        assert!(message.contains("API_KEY"), "{message}");
        assert!(!message.contains("s3cret-value"), "{message}");
    }

    #[test]
    fn launch_options_debug_hides_values() {
        let options = LaunchOptions {
            env: caller_env(),
            stdin_is_terminal: false,
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

    #[test]
    fn interrupts_map_to_shell_exit_codes() {
        let error = ExecError::Interrupted {
            signal: Interrupt::Sigterm,
            container: Some("abc".into()),
        };
        assert_eq!(error.exit_code(), 143);
        assert_eq!(
            error.to_string(),
            "interrupted by SIGTERM; removed container abc"
        );
        assert_eq!(Interrupt::Sigint.exit_code(), 130);
        let missing = ExecError::ImageMissing {
            image: "claude-code:latest".into(),
        };
        assert_eq!(missing.exit_code(), 125);
        assert!(missing.to_string().contains("agentc build PROFILE"));
    }

    /// Host bindings as `(host_ip, host_port)`; `None` for an exposed, unpublished port.
    type Bindings<'a> = Option<Vec<(&'a str, &'a str)>>;

    fn inspect(
        ports: Vec<(&str, Bindings)>,
        network: Option<(&str, &str)>,
    ) -> ContainerInspectResponse {
        let ports = ports
            .into_iter()
            .map(|(port, bindings)| {
                let bindings = bindings.map(|bindings| {
                    bindings
                        .into_iter()
                        .map(|(ip, host_port)| PortBinding {
                            host_ip: Some(ip.into()),
                            host_port: Some(host_port.into()),
                        })
                        .collect()
                });
                (port.to_string(), bindings)
            })
            .collect();
        let networks = network.map(|(name, ip)| {
            HashMap::from([(
                name.to_string(),
                EndpointSettings {
                    ip_address: Some(ip.into()),
                    ..Default::default()
                },
            )])
        });
        ContainerInspectResponse {
            network_settings: Some(NetworkSettings {
                ports: Some(ports),
                networks,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn addresses(found: Vec<PublishedAddress>) -> Vec<(String, String)> {
        found
            .into_iter()
            .map(|found| (found.container_port, found.address))
            .collect()
    }

    #[test]
    fn host_bindings_become_loopback_addresses() {
        let inspect = inspect(
            vec![
                (
                    "8080/tcp",
                    Some(vec![("127.0.0.1", "49153"), ("0.0.0.0", "49154")]),
                ),
                ("7000/tcp", Some(vec![("::1", "7000"), ("::", "7001")])),
                ("9000/tcp", None),
            ],
            None,
        );
        assert_eq!(
            addresses(published_addresses(&inspect, &Network::Default)),
            vec![
                ("7000/tcp".into(), "[::1]:7000".into()),
                ("7000/tcp".into(), "[::1]:7001".into()),
                ("8080/tcp".into(), "127.0.0.1:49153".into()),
                ("8080/tcp".into(), "127.0.0.1:49154".into()),
            ]
        );
    }

    #[test]
    fn a_named_network_adds_the_container_ip() {
        let inspect = inspect(vec![("9000/tcp", None)], Some(("sandbox", "172.20.0.5")));
        let network = Network::Named {
            name: "sandbox".into(),
        };
        assert_eq!(
            addresses(published_addresses(&inspect, &network)),
            vec![("9000/tcp".into(), "172.20.0.5:9000".into())]
        );
        let other = Network::Named {
            name: "other".into(),
        };
        assert!(published_addresses(&inspect, &other).is_empty());
    }
}
