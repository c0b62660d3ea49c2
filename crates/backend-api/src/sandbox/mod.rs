//! [`ApiClient`]: the sessions' [`SandboxClient`](agentc_engine::session::SandboxClient)
//! over the Engine API's [engine port](ApiPort) ([`Sandboxes`], written once for both
//! backends), and the port's session primitives that stream: an exec (its output, its stdin,
//! the terminal), the logs, and the copies' archive operations (the private `copy` module).

mod copy;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use agentc_engine::session::SessionPort;
use bollard::query_parameters::{
    ContainerArchiveInfoOptionsBuilder, DownloadFromContainerOptionsBuilder,
    UploadToContainerOptionsBuilder,
};
use tokio::sync::mpsc::{Receiver, Sender};

use copy::{chunk_stream, copy_error, MODE_DIR};

use agentc_engine::session::target::is_running;
use agentc_engine::session::{
    ExecRequest, ExecStdin, LogsRequest, OutputSink, PathKind, Sandbox, Sandboxes, SessionError,
    Stream,
};
use agentc_engine::{resolve_vars, Engine, ExecError};
use bollard::container::LogOutput;
use bollard::errors::Error as BollardError;
use bollard::exec::{CreateExecOptions, ResizeExecOptions, StartExecOptions, StartExecResults};
use bollard::query_parameters::LogsOptionsBuilder;
use futures_util::{Stream as FutureStream, StreamExt};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::daemon::{is_not_found, status};
use crate::port::ApiPort;
use crate::session::{spawn_stdin_reader, terminal_size, RawMode};

/// The sessions' client that talks to the daemon through the Engine API.
///
/// ```no_run
/// use agentc_backend_api::ApiClient;
/// use agentc_engine::session::{SandboxClient, SessionError};
/// use agentc_engine::Engine;
/// use agentc_policy::Protocol;
///
/// # async fn demo() -> Result<(), SessionError> {
/// // The local Docker socket; Engine::Podman with Podman's socket for Podman.
/// let port = agentc_backend_api::connect(Engine::Docker, None).await?;
/// let client = ApiClient::over(port, std::env::vars().collect());
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
pub type ApiClient = Sandboxes<ApiPort>;

/// A bollard error as a session error naming `step`: `engine`'s refusal in its own words, or a
/// lost connection.
pub(crate) fn session_error(
    engine: Engine,
    step: &'static str,
    error: BollardError,
) -> SessionError {
    SessionError::Launch(match error {
        BollardError::DockerResponseServerError { message, .. } => ExecError::Refused {
            engine,
            step,
            refusal: agentc_engine::daemon_text::refusal(&message),
            message,
        },
        other => ExecError::ConnectionLost {
            engine,
            step,
            message: other.to_string(),
        },
    })
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

impl ApiPort {
    /// Creates and starts an exec; its output stream, its stdin and its ID.
    pub(crate) async fn start_exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        attach_stdin: bool,
    ) -> Result<
        (
            ExecOutputStream,
            std::pin::Pin<Box<dyn AsyncWrite + Send>>,
            String,
        ),
        SessionError,
    > {
        let id = self
            .create_exec(sandbox, request, env, attach_stdin, true)
            .await?;
        let start = StartExecOptions {
            detach: false,
            tty: request.tty,
            output_capacity: Some(256 * 1024),
        };
        match self.docker.start_exec(&id, Some(start)).await {
            Ok(StartExecResults::Attached { output, input }) => Ok((output, input, id)),
            Ok(StartExecResults::Detached) => Err(ExecError::ConnectionLost {
                engine: self.engine,
                step: "start the exec",
                message: "the daemon did not attach".to_string(),
            }
            .into()),
            Err(error) => Err(self.start_refused(sandbox, "start the exec", error)),
        }
    }

    /// An exec's start the engine refused: the container not running (409), else the refusal.
    fn start_refused(
        &self,
        sandbox: &Sandbox,
        step: &'static str,
        error: BollardError,
    ) -> SessionError {
        if status(&error) == Some(409) {
            return SessionError::NotRunning {
                name: sandbox.name.clone(),
            };
        }
        session_error(self.engine, step, error)
    }

    /// Creates the exec of `request` (stdin attached with `attach_stdin`, its output with
    /// `attach_output`); returns its ID.
    async fn create_exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        attach_stdin: bool,
        attach_output: bool,
    ) -> Result<String, SessionError> {
        request.check()?;
        let env = resolve_vars(&request.env, env)?;
        let options = CreateExecOptions {
            attach_stdin: Some(attach_stdin),
            attach_stdout: Some(attach_output),
            attach_stderr: Some(attach_output),
            tty: Some(request.tty),
            env: Some(env).filter(|env| !env.is_empty()),
            cmd: Some(request.command.clone()),
            user: request.user.clone(),
            working_dir: request.workdir.clone(),
            ..Default::default()
        };
        match self.docker.create_exec(&sandbox.id, options).await {
            Ok(created) => Ok(created.id),
            // Podman answers 500 `container state improper`, in its own words.
            Err(error)
                if status(&error) == Some(409)
                    || agentc_engine::daemon_text::is_not_running(&error.to_string()) =>
            {
                Err(SessionError::NotRunning {
                    name: sandbox.name.clone(),
                })
            }
            Err(error) if is_not_found(&error) => Err(ExecError::NoSuchContainer {
                name: sandbox.name.clone(),
            }
            .into()),
            Err(error) => Err(session_error(self.engine, "create the exec", error)),
        }
    }

    /// The exit code of a finished exec; [`SessionError::Gone`] when the container went away
    /// meanwhile.
    pub(crate) async fn exec_exit(
        &self,
        sandbox: &Sandbox,
        exec_id: &str,
    ) -> Result<i64, SessionError> {
        // The output stream often closes a moment before the daemon records the exit: ask
        // again soon, then less often (2, 4, 8, 16, then 20 ms; about a second in all).
        let mut pause = Duration::from_millis(2);
        for _ in 0..55 {
            match self.docker.inspect_exec(exec_id).await {
                Ok(inspect) if inspect.running == Some(true) => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(20));
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
                Err(error) => return Err(session_error(self.engine, "inspect the exec", error)),
            }
        }
        Err(self.gone_or(sandbox, "run the command").await)
    }

    /// [`SessionError::Gone`] when the container is gone or stopped, a lost connection
    /// otherwise.
    async fn gone_or(&self, sandbox: &Sandbox, step: &'static str) -> SessionError {
        match self.docker.inspect_container(&sandbox.id, None).await {
            Ok(inspect) if is_running(&inspect) => ExecError::ConnectionLost {
                engine: self.engine,
                step,
                message: "the exec ended without an exit code".to_string(),
            }
            .into(),
            Ok(_) | Err(BollardError::DockerResponseServerError { .. }) => SessionError::Gone {
                name: sandbox.name.clone(),
                step,
            },
            Err(error) => session_error(self.engine, step, error),
        }
    }

    /// Runs an exec to its end: `input` fed to its stdin, its output handed to `output`.
    pub(crate) async fn run_exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        input: Input,
        output: &mut dyn OutputSink,
    ) -> Result<i64, SessionError> {
        let attach_stdin = !matches!(input, Input::Null);
        let (mut stream, mut stdin, exec_id) =
            self.start_exec(sandbox, request, env, attach_stdin).await?;
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
                            SessionError::Launch(ExecError::ConnectionLost { .. }) => session_error(self.engine, "read the command's output", error),
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
                Err(error) => return Err(session_error(self.engine, "run the command", error)),
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

/// Why the Engine API backend takes no memory checkpoints.
pub(crate) const NO_MEMORY: &str = "the Engine API backend (Docker's checkpoint is experimental \
    and restores only into the same container; Podman's Docker-compatible API has no \
    checkpoint export or import: `--backend cli --engine podman` does it)";

/// The refusal of a memory checkpoint through the Engine API.
pub(crate) fn no_memory() -> SessionError {
    SessionError::Invalid {
        message: format!("memory checkpoints are not available through {NO_MEMORY}"),
        hint: "snapshot without --memory, or use `--backend cli --engine podman` with CRIU",
    }
}

impl SessionPort for ApiPort {
    async fn exec_detached(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
    ) -> Result<(), SessionError> {
        let id = self
            .create_exec(sandbox, request, env, false, false)
            .await?;
        let start = StartExecOptions {
            detach: true,
            tty: request.tty,
            output_capacity: None,
        };
        match self.docker.start_exec(&id, Some(start)).await {
            Ok(_) => Ok(()),
            Err(error) => Err(self.start_refused(sandbox, "start the command", error)),
        }
    }

    async fn exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        output: &mut dyn OutputSink,
    ) -> Result<i64, SessionError> {
        let input = match &request.stdin {
            ExecStdin::Null => Input::Null,
            ExecStdin::Bytes(bytes) => Input::Bytes(bytes.clone()),
            ExecStdin::Terminal => Input::Terminal,
        };
        self.run_exec(sandbox, request, env, input, output).await
    }

    async fn follow_logs(
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
                    return Err(ExecError::NoSuchContainer {
                        name: sandbox.name.clone(),
                    }
                    .into())
                }
                Err(error) => return Err(session_error(self.engine, "read the logs", error)),
            }
        }
        Ok(())
    }

    async fn archive_stat(&self, sandbox: &Sandbox, path: &str) -> Result<PathKind, SessionError> {
        let options = ContainerArchiveInfoOptionsBuilder::new().path(path).build();
        match self
            .docker
            .get_container_archive_info(&sandbox.id, Some(options))
            .await
        {
            Ok(stat) if stat.file_mode & MODE_DIR != 0 => Ok(PathKind::Directory),
            Ok(_) => Ok(PathKind::Other),
            Err(error) if is_not_found(&error) => Ok(PathKind::Missing),
            Err(error) => Err(session_error(self.engine, "stat a container path", error)),
        }
    }

    async fn archive_put(
        &self,
        sandbox: &Sandbox,
        directory: &str,
        landing: &str,
        chunks: Receiver<Vec<u8>>,
    ) -> Result<(), SessionError> {
        let options = UploadToContainerOptionsBuilder::new()
            .path(directory)
            .copy_uidgid("1")
            .build();
        self.docker
            .upload_to_container(
                &sandbox.id,
                Some(options),
                bollard::body_stream(chunk_stream(chunks)),
            )
            .await
            .map_err(|error| copy_error(self.engine, &sandbox.name, landing, error))
    }

    async fn archive_get(
        &self,
        sandbox: &Sandbox,
        path: &str,
        sink: Sender<Vec<u8>>,
    ) -> Result<(), SessionError> {
        let options = DownloadFromContainerOptionsBuilder::new()
            .path(path)
            .build();
        let mut stream = self
            .docker
            .download_from_container(&sandbox.id, Some(options));
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(chunk) => {
                    if sink.send(chunk.to_vec()).await.is_err() {
                        break;
                    }
                }
                Err(error) => return Err(copy_error(self.engine, &sandbox.name, path, error)),
            }
        }
        Ok(())
    }

    async fn exec_duplex(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        chunks: Receiver<Vec<u8>>,
        output: &mut dyn OutputSink,
    ) -> Result<i64, SessionError> {
        self.run_exec(sandbox, request, env, Input::Chunks(chunks), output)
            .await
    }

    async fn exec_drained(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        sink: Sender<Vec<u8>>,
    ) -> Result<(i64, Vec<u8>), SessionError> {
        let (mut stream, _stdin, exec_id) = self.start_exec(sandbox, request, env, false).await?;
        let mut stderr = Vec::new();
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(LogOutput::StdOut { message }) => {
                    if sink.send(message.to_vec()).await.is_err() {
                        break;
                    }
                }
                Ok(LogOutput::StdErr { message }) => stderr.extend_from_slice(&message),
                Ok(_) => {}
                Err(error) => return Err(session_error(self.engine, "read the tar stream", error)),
            }
        }
        drop(sink);
        Ok((self.exec_exit(sandbox, &exec_id).await?, stderr))
    }

    async fn memory_support(&self) -> Result<(), String> {
        Err(NO_MEMORY.into())
    }

    async fn checkpoint(&self, _: &Sandbox, _: &Path) -> Result<(), SessionError> {
        Err(no_memory())
    }

    async fn restore_checkpoint(&self, _: &Path, _: &str) -> Result<(), SessionError> {
        Err(no_memory())
    }
}
