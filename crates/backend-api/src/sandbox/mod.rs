//! [`ApiClient`]: the Engine API's [`SandboxClient`], through bollard. Its copies are in
//! the private `copy` module.

mod copy;
mod snapshot;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use agentc_backend_common::egress_state::{is_isolated_network, proxy_kind_filter};
use agentc_backend_common::resolve_vars;
use agentc_backend_common::session::target::{
    check_name, is_companion, is_running, named_network, sandbox_of,
};
use agentc_backend_common::session::{
    session_spec, CommitRequest, CopyReport, DeleteReport, ExecRequest, ExecStdin, ImageFacts,
    ImageRecord, Listed, LogsRequest, OutputSink, Sandbox, SandboxClient, SandboxEgress,
    SessionError, Stream,
};
use agentc_backend_common::{resolve_env, ExecError};
use agentc_policy::{LaunchSpec, LABEL_KIND};
use bollard::container::LogOutput;
use bollard::errors::Error as BollardError;
use bollard::exec::{CreateExecOptions, ResizeExecOptions, StartExecOptions, StartExecResults};
use bollard::models::ContainerInspectResponse;
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, InspectNetworkOptions, KillContainerOptionsBuilder,
    ListContainersOptionsBuilder, LogsOptionsBuilder, RemoveContainerOptionsBuilder,
    StopContainerOptionsBuilder,
};
use bollard::Docker;
use futures_util::{Stream as FutureStream, StreamExt};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::admin::list;
use crate::daemon::{is_not_found, status};
use crate::render::render_create;
use crate::session::{spawn_stdin_reader, terminal_size, RawMode};

/// A [`SandboxClient`] that talks to the daemon through the Engine API.
///
/// ```no_run
/// use agentc_backend_api::ApiClient;
/// use agentc_backend_common::session::{SandboxClient, SessionError};
/// use agentc_policy::Protocol;
///
/// # async fn demo() -> Result<(), SessionError> {
/// let docker = agentc_backend_api::connect(None).await?;
/// let client = ApiClient::new(docker, std::env::vars().collect());
/// let sandbox = client.find("agentc-sandbox-dev-1000-pentest").await?;
/// client
///     .upload(&sandbox, std::path::Path::new("./tools"), "/tmp")
///     .await?;
/// let endpoint = client.endpoint(&sandbox, 8080, Protocol::Tcp).await?;
/// println!("the tool server is at http://{endpoint}/");
/// let report = client.delete(&sandbox).await;
/// assert!(report.left.is_empty());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ApiClient {
    pub(crate) docker: Docker,
    /// The environment secrets are resolved from.
    pub(crate) env: BTreeMap<String, String>,
}

impl fmt::Debug for ApiClient {
    // The environment holds secret values: show names only.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("ApiClient")
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ApiClient {
    /// A client of the daemon `docker` (see [`crate::connect`]) that resolves secrets from
    /// `env`.
    pub fn new(docker: Docker, env: BTreeMap<String, String>) -> ApiClient {
        ApiClient { docker, env }
    }

    /// The daemon connection.
    pub fn docker(&self) -> &Docker {
        &self.docker
    }
}

/// A bollard error as a session error naming `step`: the daemon's refusal, or a lost
/// connection.
pub(crate) fn session_error(step: &'static str, error: BollardError) -> SessionError {
    match error {
        BollardError::DockerResponseServerError { message, .. } => {
            SessionError::Daemon { step, message }
        }
        other => SessionError::ConnectionLost {
            step,
            message: other.to_string(),
        },
    }
}

/// What an exec reads on stdin, inside this backend.
pub(crate) enum Input {
    Null,
    Bytes(Vec<u8>),
    Chunks(tokio::sync::mpsc::Receiver<Vec<u8>>),
    Terminal,
}

/// An exec's output chunks, as they arrive.
pub(crate) type ExecOutputStream =
    std::pin::Pin<Box<dyn FutureStream<Item = Result<LogOutput, BollardError>> + Send>>;

impl ApiClient {
    pub(crate) async fn inspect_named(
        &self,
        name: &str,
    ) -> Result<ContainerInspectResponse, SessionError> {
        check_name(name)?;
        match self.docker.inspect_container(name, None).await {
            Ok(inspect) => Ok(inspect),
            Err(error) if is_not_found(&error) => Err(SessionError::NoSuchContainer {
                name: name.to_string(),
            }),
            Err(error) => Err(session_error("inspect the container", error)),
        }
    }

    /// Creates and starts the container of a session's launch, its egress companion (if any)
    /// in place; removes it again when it does not start.
    async fn create_placed(
        &self,
        spec: &LaunchSpec,
        container: &agentc_policy::ContainerSpec,
    ) -> Result<Sandbox, SessionError> {
        let mut request =
            crate::engine::create_request(&self.docker, agentc_backend_common::engine(), container)
                .await?;
        request.body.env = Some(resolve_env(container, &self.env)?).filter(|env| !env.is_empty());
        let name = container.name.clone().unwrap_or_default();
        let options = CreateContainerOptionsBuilder::new().name(&name).build();
        let created = self
            .docker
            .create_container(Some(options), request.body)
            .await
            .map_err(|error| session_error("create the container", error))?;
        let sandbox = Sandbox {
            id: created.id,
            name,
            profile: spec.profile.clone(),
        };
        if let Err(error) = self.docker.start_container(&sandbox.id, None).await {
            let report = self.delete(&sandbox).await;
            let cause = session_error("start the container", error);
            return Err(with_leftovers(cause, report));
        }
        Ok(sandbox)
    }

    /// Creates and starts an exec; its output stream, its stdin and its ID.
    pub(crate) async fn start_exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        attach_stdin: bool,
    ) -> Result<
        (
            ExecOutputStream,
            std::pin::Pin<Box<dyn AsyncWrite + Send>>,
            String,
        ),
        SessionError,
    > {
        request.check()?;
        let env = resolve_vars(&request.env, &self.env)?;
        let options = CreateExecOptions {
            attach_stdin: Some(attach_stdin),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            tty: Some(request.tty),
            env: Some(env).filter(|env| !env.is_empty()),
            cmd: Some(request.command.clone()),
            user: request.user.clone(),
            working_dir: request.workdir.clone(),
            ..Default::default()
        };
        let created = match self.docker.create_exec(&sandbox.id, options).await {
            Ok(created) => created,
            Err(error) if status(&error) == Some(409) => {
                return Err(SessionError::NotRunning {
                    name: sandbox.name.clone(),
                })
            }
            Err(error) if is_not_found(&error) => {
                return Err(SessionError::NoSuchContainer {
                    name: sandbox.name.clone(),
                })
            }
            Err(error) => return Err(session_error("create the exec", error)),
        };
        let start = StartExecOptions {
            detach: false,
            tty: request.tty,
            output_capacity: Some(256 * 1024),
        };
        match self.docker.start_exec(&created.id, Some(start)).await {
            Ok(StartExecResults::Attached { output, input }) => Ok((output, input, created.id)),
            Ok(StartExecResults::Detached) => Err(SessionError::ConnectionLost {
                step: "start the exec",
                message: "the daemon did not attach".to_string(),
            }),
            Err(error) if status(&error) == Some(409) => Err(SessionError::NotRunning {
                name: sandbox.name.clone(),
            }),
            Err(error) => Err(session_error("start the exec", error)),
        }
    }

    /// The exit code of a finished exec; [`SessionError::Gone`] when the container went away
    /// meanwhile.
    pub(crate) async fn exec_exit(
        &self,
        sandbox: &Sandbox,
        exec_id: &str,
    ) -> Result<i64, SessionError> {
        for _ in 0..50 {
            match self.docker.inspect_exec(exec_id).await {
                Ok(inspect) if inspect.running == Some(true) => {
                    tokio::time::sleep(Duration::from_millis(20)).await
                }
                Ok(inspect) => {
                    if let Some(code) = inspect.exit_code {
                        return Ok(code);
                    }
                    return Err(self.gone_or(sandbox, "run the command").await);
                }
                Err(error) if is_not_found(&error) => {
                    return Err(self.gone_or(sandbox, "run the command").await)
                }
                Err(error) => return Err(session_error("inspect the exec", error)),
            }
        }
        Err(self.gone_or(sandbox, "run the command").await)
    }

    /// [`SessionError::Gone`] when the container is gone or stopped, a lost connection
    /// otherwise.
    async fn gone_or(&self, sandbox: &Sandbox, step: &'static str) -> SessionError {
        match self.docker.inspect_container(&sandbox.id, None).await {
            Ok(inspect) if is_running(&inspect) => SessionError::ConnectionLost {
                step,
                message: "the exec ended without an exit code".to_string(),
            },
            Ok(_) | Err(BollardError::DockerResponseServerError { .. }) => SessionError::Gone {
                name: sandbox.name.clone(),
                step,
            },
            Err(error) => session_error(step, error),
        }
    }

    /// Runs an exec to its end: `input` fed to its stdin, its output handed to `output`.
    pub(crate) async fn run_exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        input: Input,
        output: &mut dyn OutputSink,
    ) -> Result<i64, SessionError> {
        let attach_stdin = !matches!(input, Input::Null);
        let (mut stream, mut stdin, exec_id) =
            self.start_exec(sandbox, request, attach_stdin).await?;
        let terminal = matches!(input, Input::Terminal)
            && request.tty
            && std::io::IsTerminal::is_terminal(&std::io::stdin());
        let _raw = if terminal {
            self.resize_exec(&exec_id).await;
            Some(RawMode::enable().map_err(|source| SessionError::Io {
                step: "switch the terminal to raw mode",
                source,
            })?)
        } else {
            None
        };
        let mut winch = if terminal {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change()).ok()
        } else {
            None
        };
        let mut chunks = match input {
            Input::Null => None,
            Input::Bytes(bytes) => {
                let (sender, receiver) = tokio::sync::mpsc::channel(1);
                let _ = sender.send(bytes).await;
                Some(receiver)
            }
            Input::Chunks(receiver) => Some(receiver),
            Input::Terminal => Some(spawn_stdin_reader()),
        };
        let mut output_open = true;
        while output_open {
            tokio::select! {
                chunk = stream.next() => match chunk {
                    Some(Ok(chunk)) => write_chunk(output, chunk)?,
                    Some(Err(error)) => {
                        return Err(match self.gone_or(sandbox, "run the command").await {
                            SessionError::ConnectionLost { .. } => session_error("read the command's output", error),
                            other => other,
                        })
                    }
                    None => output_open = false,
                },
                data = recv(&mut chunks), if chunks.is_some() => match data {
                    Some(data) => {
                        if stdin.write_all(&data).await.is_err() {
                            chunks = None;
                        }
                    }
                    None => {
                        let _ = stdin.shutdown().await;
                        chunks = None;
                    }
                },
                _ = recv_winch(&mut winch), if winch.is_some() => self.resize_exec(&exec_id).await,
            }
        }
        drop(_raw);
        let code = self.exec_exit(sandbox, &exec_id).await?;
        if code != 0 {
            // A command ended by its container's end (removed, stopped, killed) did not exit.
            match self.docker.inspect_container(&sandbox.id, None).await {
                Ok(inspect) if is_running(&inspect) => {}
                Ok(_) | Err(BollardError::DockerResponseServerError { .. }) => {
                    return Err(SessionError::Gone {
                        name: sandbox.name.clone(),
                        step: "run the command",
                    })
                }
                Err(error) => return Err(session_error("run the command", error)),
            }
        }
        Ok(code)
    }

    /// Sets the exec's TTY to the local terminal's size. Right after the start the daemon may
    /// not have the exec's TTY yet and refuses: it is asked again, as the docker CLI does,
    /// for up to about half a second.
    async fn resize_exec(&self, exec_id: &str) {
        let Some((rows, columns)) = terminal_size() else {
            return;
        };
        for attempt in 1..=10u64 {
            let options = ResizeExecOptions {
                height: rows,
                width: columns,
            };
            if self.docker.resize_exec(exec_id, options).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10 * attempt)).await;
        }
    }
}

async fn recv(chunks: &mut Option<tokio::sync::mpsc::Receiver<Vec<u8>>>) -> Option<Vec<u8>> {
    match chunks {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

async fn recv_winch(winch: &mut Option<tokio::signal::unix::Signal>) {
    match winch {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}

fn write_chunk(output: &mut dyn OutputSink, chunk: LogOutput) -> Result<(), SessionError> {
    let result = match chunk {
        LogOutput::StdErr { message } => output.write(Stream::Stderr, &message),
        LogOutput::StdOut { message } | LogOutput::Console { message } => {
            output.write(Stream::Stdout, &message)
        }
        LogOutput::StdIn { .. } => Ok(()),
    };
    result.map_err(|source| SessionError::Io {
        step: "write the output",
        source,
    })
}

impl SandboxClient for ApiClient {
    fn backend(&self) -> &'static str {
        "api"
    }

    async fn create(&self, spec: &LaunchSpec) -> Result<Sandbox, SessionError> {
        let container = session_spec(spec)?;
        render_create(&container).map_err(ExecError::from)?;
        resolve_env(&container, &self.env)?;
        match self.docker.inspect_image(&container.image).await {
            Ok(_) => {}
            Err(error) if is_not_found(&error) => {
                return Err(ExecError::ImageMissing {
                    image: container.image.clone(),
                }
                .into())
            }
            Err(error) => return Err(session_error("inspect the image", error)),
        }
        // The runtime is asked for, and Podman's rows applied, before anything is created.
        crate::engine::create_request(&self.docker, agentc_backend_common::engine(), &container)
            .await?;
        crate::admin::ensure_volumes(&self.docker, &container).await?;
        // Behind the egress proxy: its isolated network and the healthy proxy first, as a
        // launch makes them (the set may move to another subnet: the request follows it);
        // removed again when the sandbox cannot be created or started.
        let mut placed = container.clone();
        let companion =
            crate::companion::setup_for(&self.docker, &mut placed, &self.env, &mut || None).await?;
        let result = self.create_placed(spec, &placed).await;
        if let (Err(_), Some(set)) = (&result, &companion) {
            crate::companion::teardown(&self.docker, set).await;
        }
        result
    }

    async fn find(&self, name: &str) -> Result<Sandbox, SessionError> {
        let inspect = self.inspect_named(name).await?;
        sandbox_of(&inspect, name)
    }

    async fn find_profile(
        &self,
        profile: &str,
        stopped_too: bool,
    ) -> Result<Sandbox, SessionError> {
        let running: Vec<_> = list(&self.docker, Some(profile))
            .await?
            .into_iter()
            .filter(|summary| stopped_too || summary.state == "running")
            // A sandbox's egress proxy carries its profile too; it is not the sandbox.
            .filter(|summary| {
                !is_companion(summary.labels.get(LABEL_KIND).map_or("", String::as_str))
            })
            // Nor is an idle pool member (`agentc pool fill`) the profile's sandbox.
            .filter(|summary| !agentc_policy::pool::is_idle_name(&summary.name))
            .collect();
        match running.as_slice() {
            [one] => self.find(&one.id).await,
            _ => Err(SessionError::NotOneContainer {
                profile: profile.to_string(),
                stopped_too,
                found: running.into_iter().map(|summary| summary.name).collect(),
            }),
        }
    }

    async fn inspect(&self, sandbox: &Sandbox) -> Result<ContainerInspectResponse, SessionError> {
        let mut inspect = self.inspect_named(&sandbox.id).await?;
        crate::companion::add_relayed_ports(&self.docker, &sandbox.name, &mut inspect).await;
        Ok(inspect)
    }

    async fn exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        output: &mut dyn OutputSink,
    ) -> Result<i64, SessionError> {
        let input = match &request.stdin {
            ExecStdin::Null => Input::Null,
            ExecStdin::Bytes(bytes) => Input::Bytes(bytes.clone()),
            ExecStdin::Terminal => Input::Terminal,
        };
        self.run_exec(sandbox, request, input, output).await
    }

    async fn upload(
        &self,
        sandbox: &Sandbox,
        source: &std::path::Path,
        target: &str,
    ) -> Result<CopyReport, SessionError> {
        agentc_backend_common::session::transfer::upload(self, sandbox, source, target).await
    }

    async fn download(
        &self,
        sandbox: &Sandbox,
        source: &str,
        target: &std::path::Path,
    ) -> Result<CopyReport, SessionError> {
        agentc_backend_common::session::transfer::download(self, sandbox, source, target).await
    }

    async fn logs(
        &self,
        sandbox: &Sandbox,
        request: &LogsRequest,
        output: &mut dyn OutputSink,
    ) -> Result<(), SessionError> {
        let tail = request
            .tail
            .map(|tail| tail.to_string())
            .unwrap_or_else(|| "all".to_string());
        let mut options = LogsOptionsBuilder::new()
            .follow(request.follow)
            .stdout(true)
            .stderr(true)
            .tail(&tail);
        if let Some(since) = request.since {
            options = options.since(i32::try_from(since).unwrap_or(i32::MAX));
        }
        let mut stream = self.docker.logs(&sandbox.id, Some(options.build()));
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(chunk) => write_chunk(output, chunk)?,
                Err(error) if is_not_found(&error) => {
                    return Err(SessionError::NoSuchContainer {
                        name: sandbox.name.clone(),
                    })
                }
                Err(error) => return Err(session_error("read the logs", error)),
            }
        }
        Ok(())
    }

    async fn start(&self, sandbox: &Sandbox) -> Result<(), SessionError> {
        match self.docker.start_container(&sandbox.id, None).await {
            Ok(()) => Ok(()),
            Err(error) if status(&error) == Some(304) => Ok(()),
            Err(error) if is_not_found(&error) => Err(SessionError::NoSuchContainer {
                name: sandbox.name.clone(),
            }),
            Err(error) => Err(session_error("start the container", error)),
        }
    }

    async fn stop(&self, sandbox: &Sandbox, timeout: Option<u32>) -> Result<(), SessionError> {
        let mut options = StopContainerOptionsBuilder::new();
        if let Some(timeout) = timeout {
            options = options.t(i32::try_from(timeout).unwrap_or(i32::MAX));
        }
        match self
            .docker
            .stop_container(&sandbox.id, Some(options.build()))
            .await
        {
            Ok(()) => Ok(()),
            Err(error) if status(&error) == Some(304) => Ok(()),
            Err(error) if is_not_found(&error) => Err(SessionError::NoSuchContainer {
                name: sandbox.name.clone(),
            }),
            Err(error) => Err(session_error("stop the container", error)),
        }
    }

    async fn delete(&self, sandbox: &Sandbox) -> DeleteReport {
        let report = self.delete_container(sandbox).await;
        agentc_backend_common::session::remove_companions_after(self, sandbox, report).await
    }

    // ---- Warm pools (issue 22) ----

    async fn rename(&self, from: &Sandbox, to: &str) -> Result<Option<Sandbox>, SessionError> {
        let options = bollard::query_parameters::RenameContainerOptionsBuilder::new()
            .name(to)
            .build();
        match self.docker.rename_container(&from.name, options).await {
            Ok(()) => Ok(Some(Sandbox {
                id: from.id.clone(),
                name: to.to_string(),
                profile: from.profile.clone(),
            })),
            // Gone by that name, or already renamed to `to` by another claim.
            Err(error)
                if is_not_found(&error)
                    || error.to_string().contains("same name as its current name") =>
            {
                Ok(None)
            }
            Err(error) => Err(session_error("rename the container", error)),
        }
    }

    async fn list_labelled(&self, label: &str) -> Result<Vec<Listed>, SessionError> {
        use agentc_backend_common::port::{EngineErrorKind, EnginePort, Filter};
        let step = "list containers";
        let port = crate::port::ApiPort::new(self.docker.clone(), agentc_backend_common::engine());
        let filter = Filter::labels([label, agentc_policy::LABEL_PROFILE]);
        let listed = port
            .list_containers(&filter)
            .await
            .map_err(|error| match error.kind {
                EngineErrorKind::Unavailable => SessionError::ConnectionLost {
                    step,
                    message: error.detail,
                },
                _ => SessionError::Daemon {
                    step,
                    message: error.detail,
                },
            })?;
        Ok(listed
            .into_iter()
            .map(|container| Listed {
                sandbox: Sandbox {
                    id: container.id,
                    name: container.name,
                    profile: container
                        .labels
                        .get(agentc_policy::LABEL_PROFILE)
                        .cloned()
                        .unwrap_or_default(),
                },
                state: container.state,
                labels: container.labels,
            })
            .collect())
    }

    async fn image_facts(&self, image: &str) -> Result<ImageFacts, SessionError> {
        match self.docker.inspect_image(image).await {
            Ok(inspect) => {
                let config = inspect.config.unwrap_or_default();
                Ok(ImageFacts {
                    id: inspect.id.unwrap_or_default(),
                    entrypoint: config.entrypoint.unwrap_or_default(),
                    cmd: config.cmd.unwrap_or_default(),
                })
            }
            Err(error) if is_not_found(&error) => Err(ExecError::ImageMissing {
                image: image.to_string(),
            }
            .into()),
            Err(error) => Err(session_error("inspect the image", error)),
        }
    }

    async fn remove_companions(&self, workload: &str) -> Result<Vec<String>, SessionError> {
        Ok(crate::companion::remove_companions(&self.docker, workload).await?)
    }

    // ---- end of warm pools ----
    // ---- Snapshots (issue 23): in `snapshot.rs`.
    async fn pause(&self, sandbox: &Sandbox) -> Result<(), SessionError> {
        self.freeze(sandbox, false).await
    }
    async fn unpause(&self, sandbox: &Sandbox) -> Result<(), SessionError> {
        self.freeze(sandbox, true).await
    }
    async fn commit(
        &self,
        sandbox: &Sandbox,
        request: &CommitRequest,
    ) -> Result<String, SessionError> {
        self.commit_layer(sandbox, request).await
    }
    async fn image(&self, reference: &str) -> Result<Option<ImageRecord>, SessionError> {
        self.image_record(reference).await
    }
    async fn images(&self, label: &str) -> Result<Vec<ImageRecord>, SessionError> {
        self.labelled_images(label).await
    }
    async fn remove_image(&self, reference: &str) -> Result<(), SessionError> {
        self.drop_image(reference).await
    }
    async fn volume_exists(&self, name: &str) -> Result<bool, SessionError> {
        self.has_volume(name).await
    }
    async fn memory_support(&self) -> Result<(), String> {
        Err(snapshot::NO_MEMORY.into())
    }
    async fn checkpoint(&self, _: &Sandbox, _: &std::path::Path) -> Result<(), SessionError> {
        Err(snapshot::no_memory())
    }
    async fn restore_checkpoint(
        &self,
        _: &std::path::Path,
        _: &str,
    ) -> Result<Sandbox, SessionError> {
        Err(snapshot::no_memory())
    }
    // ---- End of the snapshot operations.

    async fn egress(&self, sandbox: &Sandbox) -> Result<Option<SandboxEgress>, SessionError> {
        let inspect = self.inspect_named(&sandbox.id).await?;
        let Some(network) = named_network(&inspect) else {
            return Ok(None);
        };
        let labels = match self
            .docker
            .inspect_network(&network, None::<InspectNetworkOptions>)
            .await
        {
            Ok(found) => found.labels.unwrap_or_default(),
            // Its network is gone: no proxy can serve it, nor can it tell whether one did.
            Err(error) if is_not_found(&error) => return Ok(None),
            Err(error) => return Err(session_error("inspect the network", error)),
        };
        if !is_isolated_network(&labels) {
            return Ok(None);
        }
        let filters = HashMap::from([
            ("label".to_string(), vec![proxy_kind_filter()]),
            ("network".to_string(), vec![network.clone()]),
        ]);
        let options = ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        let listed = self
            .docker
            .list_containers(Some(options))
            .await
            .map_err(|error| session_error("list the egress proxies", error))?;
        let proxy = match listed.into_iter().find_map(|proxy| proxy.id) {
            Some(id) => match self.inspect_named(&id).await {
                Ok(proxy) => Some(proxy),
                // Removed meanwhile.
                Err(SessionError::NoSuchContainer { .. }) => None,
                Err(error) => return Err(error),
            },
            None => None,
        };
        Ok(Some(SandboxEgress::new(&network, proxy.as_ref())))
    }
}

/// `cause`, naming what a failed create could not remove.
pub(crate) fn with_leftovers(cause: SessionError, report: DeleteReport) -> SessionError {
    if report.left.is_empty() {
        cause
    } else {
        SessionError::ConnectionLost {
            step: "remove the container of a failed create",
            message: format!("{cause}; left: {}", report.left.join("; ")),
        }
    }
}

impl ApiClient {
    /// Kills and removes the sandbox's container, best effort ([`SandboxClient::delete`]
    /// removes its egress companions after it).
    async fn delete_container(&self, sandbox: &Sandbox) -> DeleteReport {
        let kill = KillContainerOptionsBuilder::new().signal("KILL").build();
        let _ = self.docker.kill_container(&sandbox.id, Some(kill)).await;
        let options = RemoveContainerOptionsBuilder::new().force(true).build();
        match self
            .docker
            .remove_container(&sandbox.id, Some(options))
            .await
        {
            Ok(()) => DeleteReport {
                removed: true,
                left: Vec::new(),
            },
            Err(error) if is_not_found(&error) => DeleteReport::default(),
            Err(error) if status(&error) == Some(409) => {
                crate::admin::wait_removed(&self.docker, &sandbox.id).await;
                DeleteReport {
                    removed: true,
                    left: Vec::new(),
                }
            }
            Err(error) => DeleteReport {
                removed: false,
                left: vec![format!("container {}: {error}", sandbox.name)],
            },
        }
    }
}
