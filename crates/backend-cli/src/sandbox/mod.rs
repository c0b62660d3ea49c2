//! [`CliClient`]: the sessions' [`SandboxClient`](agentc_engine::session::SandboxClient)
//! over the docker CLI's [engine port](CliPort) ([`Sandboxes`], written once for both
//! backends), and the port's session primitives that stream: `docker exec` (its output, its
//! stdin, docker's own refusals), `docker logs`, the copies' archive operations (the private
//! `copy` module) and the memory checkpoints (`memory`).

mod copy;
mod memory;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{ExitStatus, Stdio};

use agentc_engine::daemon_text::Refusal;
use agentc_engine::port::EngineError;
use agentc_engine::session::sandboxes::engine_failure;
use agentc_engine::session::SessionPort;
use tokio::sync::mpsc::{Receiver, Sender};

use copy::{drain, feed};

use agentc_engine::session::target::{check_name, is_running};
use agentc_engine::session::{
    ExecRequest, ExecStdin, LogsRequest, OutputSink, PathKind, Sandbox, Sandboxes, SessionError,
    Stream,
};
use agentc_engine::{resolve_vars, ExecError};
use agentc_policy::EnvValue;
use bollard::models::ContainerInspectResponse;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use crate::exec::port::CliPort;

/// The sessions' client that runs the `docker` (or `podman`) command line.
///
/// ```no_run
/// use agentc_backend_cli::exec::port::CliPort;
/// use agentc_backend_cli::CliClient;
/// use agentc_engine::session::{ExecRequest, SandboxClient};
/// use agentc_engine::Engine;
///
/// # async fn demo() -> Result<(), agentc_engine::session::SessionError> {
/// // `podman` with Engine::Podman.
/// let client = CliClient::over(CliPort::new(Engine::Docker), std::env::vars().collect());
/// let sandbox = client.find("agentc-sandbox-dev-1000-pentest").await?;
/// let output = client.exec_output(&sandbox, &ExecRequest::new(["id", "-u"])).await?;
/// assert_eq!(output.exit_code, 0);
/// # Ok(()) }
/// ```
pub type CliClient = Sandboxes<CliPort>;

/// docker's own message from its stderr ([`agentc_engine::daemon_text::daemon_message`]).
pub(crate) fn daemon_message(stderr: &[u8]) -> String {
    agentc_engine::daemon_text::daemon_message(&String::from_utf8_lossy(stderr))
}

fn exit_code(status: ExitStatus) -> i64 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .map(i64::from)
        .or_else(|| status.signal().map(|signal| 128 + i64::from(signal)))
        .unwrap_or(1)
}

impl std::fmt::Debug for CliPort {
    // The environment may hold secret values: show names only.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CliPort")
            .field("engine", &self.engine)
            .field(
                "env",
                &self
                    .env
                    .iter()
                    .flat_map(|env| env.keys())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl CliPort {
    /// The port whose commands run with `env` on top of agentc's environment: the program
    /// reads `DOCKER_HOST` (and the like) and a secret passed by name (`--env=NAME`) from it.
    pub fn in_env(self, env: &BTreeMap<String, String>) -> CliPort {
        CliPort {
            env: Some(std::sync::Arc::new(env.clone())),
            ..self
        }
    }

    /// The environment its commands get on top of agentc's.
    pub(crate) fn env(&self) -> &BTreeMap<String, String> {
        static NONE: BTreeMap<String, String> = BTreeMap::new();
        self.env.as_deref().unwrap_or(&NONE)
    }

    /// The engine's command for `args`, `env` on top of agentc's environment (docker reads a
    /// bare `--env=NAME` from its own environment), without stdin.
    pub(crate) fn session_command(&self, args: &[&str], env: &BTreeMap<String, String>) -> Command {
        log::debug!("running {} {}", self.engine.program(), args.join(" "));
        let mut command = Command::new(self.engine.program());
        command
            .args(args)
            .envs(self.env())
            .envs(env)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// Runs the engine's command `args`: stdout, or docker's message.
    pub(crate) async fn session_output(
        &self,
        args: &[&str],
    ) -> Result<Vec<u8>, (Option<i64>, String)> {
        let output = self
            .session_command(args, &BTreeMap::new())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .await
            .map_err(|error| (None, error.to_string()))?;
        if output.status.success() {
            Ok(output.stdout)
        } else {
            Err((
                Some(exit_code(output.status)),
                daemon_message(&output.stderr),
            ))
        }
    }

    /// docker could not be run at all.
    pub(crate) fn cannot_run_docker(&self, source: std::io::Error) -> SessionError {
        ExecError::CannotRunDocker {
            engine: self.engine,
            source,
        }
        .into()
    }

    pub(crate) async fn inspect_named(
        &self,
        name: &str,
    ) -> Result<ContainerInspectResponse, SessionError> {
        check_name(name)?;
        let text = match self
            .session_output(&["inspect", "--type", "container", name])
            .await
        {
            Ok(text) => text,
            Err((None, message)) => {
                return Err(self.cannot_run_docker(std::io::Error::other(message)))
            }
            Err((Some(_), message))
                if agentc_engine::daemon_text::is_no_such_container(&message) =>
            {
                return Err(ExecError::NoSuchContainer {
                    name: name.to_string(),
                }
                .into())
            }
            Err((Some(_), message)) => return Err(self.daemon("inspect the container", message)),
        };
        let mut found: Vec<ContainerInspectResponse> =
            agentc_engine::inspect::read_inspect_list(&text).map_err(|message| {
                SessionError::from(ExecError::ConnectionLost {
                    engine: self.engine,
                    step: "read `docker inspect`",
                    message,
                })
            })?;
        if found.is_empty() {
            return Err(ExecError::NoSuchContainer {
                name: name.to_string(),
            }
            .into());
        }
        Ok(found.swap_remove(0))
    }

    /// `docker exec` for `request`, spawned; the argv holds no secret value (a secret is
    /// `--env=NAME`, read by docker from its environment).
    pub(crate) fn spawn_exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        stdin: Stdio,
        interactive: bool,
        inherit_output: bool,
    ) -> Result<Child, SessionError> {
        let interactive: &[&str] = if interactive { &["--interactive"] } else { &[] };
        let args = self.exec_args(sandbox, request, env, interactive)?;
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut command = self.session_command(&refs, env);
        command.stdin(stdin);
        if inherit_output {
            command.stdout(Stdio::inherit()).stderr(Stdio::inherit());
        } else {
            command.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        command
            .spawn()
            .map_err(|source| self.cannot_run_docker(source))
    }

    /// The argv of `docker exec` for `request` with `flags` first; it holds no secret value (a
    /// secret is `--env=NAME`, read by docker from its environment).
    fn exec_args(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        flags: &[&str],
    ) -> Result<Vec<String>, SessionError> {
        request.check()?;
        resolve_vars(&request.env, env)?;
        let mut args: Vec<String> = vec!["exec".to_string()];
        args.extend(flags.iter().map(|flag| flag.to_string()));
        if request.tty {
            args.push("--tty".to_string());
        }
        if let Some(user) = &request.user {
            args.push(format!("--user={user}"));
        }
        if let Some(workdir) = &request.workdir {
            args.push(format!("--workdir={workdir}"));
        }
        for var in &request.env {
            match &var.value {
                EnvValue::Literal { value } => args.push(format!("--env={}={value}", var.name)),
                EnvValue::Secret { .. } if env.contains_key(&var.name) => {
                    args.push(format!("--env={}", var.name))
                }
                EnvValue::Secret { .. } => {}
                EnvValue::Placeholder { variable, prefix } => args.push(format!(
                    "--env={}={}",
                    var.name,
                    agentc_policy::placeholder_template(prefix, variable)
                )),
            }
        }
        args.push(sandbox.id.clone());
        args.extend(request.command.iter().cloned());
        Ok(args)
    }

    /// Waits for an exec's docker, handing its piped output to `output`; docker's own
    /// refusals (the container not running, gone) become errors, a finished command's exit
    /// code is returned.
    pub(crate) async fn finish_exec(
        &self,
        sandbox: &Sandbox,
        mut child: Child,
        output: &mut dyn OutputSink,
    ) -> Result<i64, SessionError> {
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let mut held: Option<Vec<u8>> = None;
        let mut out_buffer = vec![0u8; 64 * 1024];
        let mut err_buffer = vec![0u8; 64 * 1024];
        let mut first_err = true;
        let podman = self.engine == agentc_engine::Engine::Podman;
        while stdout.is_some() || stderr.is_some() {
            tokio::select! {
                read = read_some(&mut stdout, &mut out_buffer), if stdout.is_some() => match read {
                    Some(n) => write(output, Stream::Stdout, &out_buffer[..n])?,
                    None => stdout = None,
                },
                read = read_some(&mut stderr, &mut err_buffer), if stderr.is_some() => match read {
                    Some(n) => {
                        let chunk = &err_buffer[..n];
                        // docker's own refusal comes first and alone (Podman's is its
                        // `Error: ` line): hold it until the exit says whose it was.
                        let refusal = chunk.starts_with(b"Error response from daemon: ")
                            || (podman && chunk.starts_with(b"Error: "));
                        if first_err && refusal {
                            held = Some(chunk.to_vec());
                        } else {
                            if let Some(held) = held.take() {
                                write(output, Stream::Stderr, &held)?;
                            }
                            write(output, Stream::Stderr, chunk)?;
                        }
                        first_err = false;
                    }
                    None => stderr = None,
                },
            }
        }
        let status = child.wait().await.map_err(|source| SessionError::Io {
            step: "wait for docker exec",
            source,
        })?;
        let code = exit_code(status);
        if let Some(held) = held {
            // Podman's own failure exits 125 (255 for a container in the wrong state); a
            // command that ran and wrote `Error: ` first keeps its words and its status.
            let message = daemon_message(&held);
            let known = agentc_engine::daemon_text::is_not_running(&message)
                || agentc_engine::daemon_text::is_no_such_container(&message);
            let engines = !podman || code == 125 || (code == 255 && known);
            if code != 0 && engines {
                return Err(if agentc_engine::daemon_text::is_not_running(&message) {
                    SessionError::NotRunning {
                        name: sandbox.name.clone(),
                    }
                } else if agentc_engine::daemon_text::is_no_such_container(&message) {
                    SessionError::Gone {
                        name: sandbox.name.clone(),
                        step: "run the command",
                    }
                } else {
                    self.daemon("run the command", message)
                });
            }
            write(output, Stream::Stderr, &held)?;
        }
        if code != 0 {
            self.check_still_running(sandbox, "run the command").await?;
        }
        Ok(code)
    }

    /// [`SessionError::Gone`] when the container stopped or went away.
    pub(crate) async fn check_still_running(
        &self,
        sandbox: &Sandbox,
        step: &'static str,
    ) -> Result<(), SessionError> {
        match self.inspect_named(&sandbox.id).await {
            Ok(inspect) if is_running(&inspect) => Ok(()),
            Ok(_) | Err(SessionError::Launch(ExecError::NoSuchContainer { .. })) => {
                Err(SessionError::Gone {
                    name: sandbox.name.clone(),
                    step,
                })
            }
            // The command ran, so the daemon was there: out of reach now, the connection was
            // lost mid-operation (as the Engine API backend reports it), not never made.
            Err(SessionError::Launch(ExecError::Connect { message, .. })) => {
                Err(ExecError::ConnectionLost {
                    engine: self.engine,
                    step,
                    message,
                }
                .into())
            }
            Err(error) => Err(error),
        }
    }
}

impl CliPort {
    /// docker's refusal naming `step`, read as every session reads an engine's refusal
    /// ([`engine_failure`]: a daemon that cannot be reached at all as the launch's
    /// [`ExecError::Connect`], a lost connection as [`ExecError::ConnectionLost`]).
    pub(crate) fn daemon(&self, step: &'static str, message: String) -> SessionError {
        engine_failure(self.engine, step, EngineError::from_text(message))
    }
}

async fn read_some<R: AsyncRead + Unpin>(
    reader: &mut Option<R>,
    buffer: &mut [u8],
) -> Option<usize> {
    let reader = reader.as_mut()?;
    match reader.read(buffer).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(n),
    }
}

fn write(output: &mut dyn OutputSink, stream: Stream, bytes: &[u8]) -> Result<(), SessionError> {
    output
        .write(stream, bytes)
        .map_err(|source| SessionError::Io {
            step: "write the output",
            source,
        })
}

impl CliPort {
    /// A docker CLI failure of a container-level command (`logs`, `checkpoint`).
    pub(crate) fn container_error(
        &self,
        sandbox: &Sandbox,
        step: &'static str,
        failure: (Option<i64>, String),
    ) -> SessionError {
        match failure {
            (None, message) => self.cannot_run_docker(std::io::Error::other(message)),
            (Some(_), message) if agentc_engine::daemon_text::is_no_such_container(&message) => {
                ExecError::NoSuchContainer {
                    name: sandbox.name.clone(),
                }
                .into()
            }
            (Some(_), message) => self.daemon(step, message),
        }
    }
}

impl SessionPort for CliPort {
    fn in_env(self, env: &BTreeMap<String, String>) -> CliPort {
        CliPort::in_env(self, env)
    }

    async fn exec_detached(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
    ) -> Result<(), SessionError> {
        let args = self.exec_args(sandbox, request, env, &["--detach"])?;
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = self
            .session_command(&refs, env)
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(|source| self.cannot_run_docker(source))?;
        if output.status.success() {
            return Ok(());
        }
        let error = EngineError::from_text(daemon_message(&output.stderr));
        if error.refusal() == Some(Refusal::NotRunning) {
            return Err(SessionError::NotRunning {
                name: sandbox.name.clone(),
            });
        }
        Err(engine_failure(self.engine, "start the command", error))
    }

    async fn exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        output: &mut dyn OutputSink,
    ) -> Result<i64, SessionError> {
        let terminal = request.stdin == ExecStdin::Terminal;
        // On a terminal docker writes to it directly, and its own refusals with it: ask
        // first.
        let inherit = output.is_process_stdio() && terminal && request.tty;
        if inherit {
            self.check_still_running(sandbox, "run the command")
                .await
                .map_err(|_| SessionError::NotRunning {
                    name: sandbox.name.clone(),
                })?;
        }
        let (stdin, interactive) = match &request.stdin {
            ExecStdin::Null => (Stdio::null(), false),
            ExecStdin::Bytes(_) => (Stdio::piped(), true),
            ExecStdin::Terminal => (Stdio::inherit(), true),
        };
        let mut child = self.spawn_exec(sandbox, request, env, stdin, interactive, inherit)?;
        if let ExecStdin::Bytes(bytes) = &request.stdin {
            if let Some(mut stdin) = child.stdin.take() {
                let bytes = bytes.clone();
                tokio::spawn(async move {
                    let _ = stdin.write_all(&bytes).await;
                    let _ = stdin.shutdown().await;
                });
            }
        }
        if inherit {
            let status = child.wait().await.map_err(|source| SessionError::Io {
                step: "wait for docker exec",
                source,
            })?;
            let code = exit_code(status);
            if code != 0 {
                self.check_still_running(sandbox, "run the command").await?;
            }
            return Ok(code);
        }
        self.finish_exec(sandbox, child, output).await
    }

    async fn follow_logs(
        &self,
        sandbox: &Sandbox,
        request: &LogsRequest,
        output: &mut dyn OutputSink,
    ) -> Result<(), SessionError> {
        let mut args = vec!["logs".to_string()];
        if request.follow {
            args.push("--follow".to_string());
        }
        if let Some(tail) = request.tail {
            args.push(format!("--tail={tail}"));
        }
        if let Some(since) = request.since {
            args.push(format!("--since={since}"));
        }
        args.push(sandbox.id.clone());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = self
            .session_command(&refs, &BTreeMap::new())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| self.cannot_run_docker(source))?;
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let mut out_buffer = vec![0u8; 64 * 1024];
        let mut err_buffer = vec![0u8; 64 * 1024];
        let mut held = Vec::new();
        while stdout.is_some() || stderr.is_some() {
            tokio::select! {
                read = read_some(&mut stdout, &mut out_buffer), if stdout.is_some() => match read {
                    Some(n) => write(output, Stream::Stdout, &out_buffer[..n])?,
                    None => stdout = None,
                },
                read = read_some(&mut stderr, &mut err_buffer), if stderr.is_some() => match read {
                    Some(n) if held.is_empty() && !err_buffer[..n].starts_with(b"Error") => {
                        write(output, Stream::Stderr, &err_buffer[..n])?
                    }
                    Some(n) => held.extend_from_slice(&err_buffer[..n]),
                    None => stderr = None,
                },
            }
        }
        let status = child.wait().await.map_err(|source| SessionError::Io {
            step: "wait for docker logs",
            source,
        })?;
        if status.success() {
            write(output, Stream::Stderr, &held)?;
            Ok(())
        } else {
            Err(self.container_error(
                sandbox,
                "read the logs",
                (Some(exit_code(status)), daemon_message(&held)),
            ))
        }
    }

    async fn archive_stat(&self, sandbox: &Sandbox, path: &str) -> Result<PathKind, SessionError> {
        let source = format!("{}:{path}", sandbox.id);
        let mut child = self
            .session_command(&["cp", &source, "-"], &BTreeMap::new())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| self.cannot_run_docker(source))?;
        let mut header = [0u8; 512];
        let mut stdout = child.stdout.take().expect("piped");
        let read = stdout.read_exact(&mut header).await;
        drop(stdout);
        if read.is_ok() {
            let _ = child.kill().await;
            // The tar header's type flag: '5' is a directory.
            return Ok(if header[156] == b'5' {
                PathKind::Directory
            } else {
                PathKind::Other
            });
        }
        let output = child
            .wait_with_output()
            .await
            .map_err(|source| self.cannot_run_docker(source))?;
        let message = daemon_message(&output.stderr);
        if agentc_engine::daemon_text::refusal(&message) == Some(Refusal::NoSuchPath) {
            Ok(PathKind::Missing)
        } else {
            Err(self.daemon("stat a container path", message))
        }
    }

    async fn archive_put(
        &self,
        sandbox: &Sandbox,
        directory: &str,
        landing: &str,
        chunks: Receiver<Vec<u8>>,
    ) -> Result<(), SessionError> {
        let destination = format!("{}:{directory}", sandbox.id);
        let mut child = self
            .session_command(&["cp", "--archive", "-", &destination], &BTreeMap::new())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| self.cannot_run_docker(source))?;
        let feeder = tokio::spawn(feed(chunks, child.stdin.take().expect("piped")));
        let output = child
            .wait_with_output()
            .await
            .map_err(|source| self.cannot_run_docker(source))?;
        let _ = feeder.await;
        if output.status.success() {
            Ok(())
        } else {
            Err(SessionError::CopyFailed {
                name: sandbox.name.clone(),
                path: landing.to_string(),
                message: daemon_message(&output.stderr),
            })
        }
    }

    async fn archive_get(
        &self,
        sandbox: &Sandbox,
        path: &str,
        sink: Sender<Vec<u8>>,
    ) -> Result<(), SessionError> {
        let from = format!("{}:{path}", sandbox.id);
        let child = self
            .session_command(&["cp", &from, "-"], &BTreeMap::new())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| self.cannot_run_docker(source))?;
        let (status, stderr) = drain(child, sink)
            .await
            .map_err(|source| self.cannot_run_docker(source))?;
        if status.success() {
            Ok(())
        } else {
            Err(SessionError::CopyFailed {
                name: sandbox.name.clone(),
                path: path.to_string(),
                message: daemon_message(&stderr),
            })
        }
    }

    async fn exec_duplex(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        chunks: Receiver<Vec<u8>>,
        output: &mut dyn OutputSink,
    ) -> Result<i64, SessionError> {
        let mut child = self.spawn_exec(sandbox, request, env, Stdio::piped(), true, false)?;
        let feeder = tokio::spawn(feed(chunks, child.stdin.take().expect("piped")));
        let code = self.finish_exec(sandbox, child, output).await;
        feeder.abort();
        let _ = feeder.await;
        code
    }

    async fn exec_drained(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        sink: Sender<Vec<u8>>,
    ) -> Result<(i64, Vec<u8>), SessionError> {
        let child = self.spawn_exec(sandbox, request, env, Stdio::null(), false, false)?;
        let (status, stderr) = drain(child, sink)
            .await
            .map_err(|source| self.cannot_run_docker(source))?;
        Ok((exit_code(status), stderr))
    }

    async fn memory_support(&self) -> Result<(), String> {
        self.memory_probe().await
    }

    async fn checkpoint(&self, sandbox: &Sandbox, file: &Path) -> Result<(), SessionError> {
        self.checkpoint_to(sandbox, file).await
    }

    async fn restore_checkpoint(&self, file: &Path, name: &str) -> Result<(), SessionError> {
        self.restore_from(file, name).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_messages_read_as_the_daemon_wrote_them() {
        assert_eq!(
            daemon_message(b"docker: Error response from daemon: network x not found.\nSee 'docker run --help'.\n"),
            "network x not found"
        );
        assert_eq!(
            daemon_message(b"Error response from daemon: Container abc is not running\n"),
            "Container abc is not running"
        );
        assert_eq!(
            daemon_message(b"Error: No such container: x\n"),
            "No such container: x"
        );
    }
}
