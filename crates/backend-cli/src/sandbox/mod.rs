//! [`CliClient`]: the docker CLI's [`SandboxClient`], running `docker` through
//! `tokio::process` (`docker exec`, `docker cp`, `docker logs`, `docker start`, `docker stop`,
//! `docker rm`). Its copies are in the private `copy` module.

mod copy;
mod create;
mod memory;
mod pool;
mod snapshot;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};

use agentc_backend_common::egress_state::{is_isolated_network, proxy_kind_filter};
use agentc_backend_common::session::target::{
    check_name, is_companion, is_running, named_network, sandbox_of,
};
use agentc_backend_common::session::{
    session_spec, CommitRequest, CopyReport, DeleteReport, ExecRequest, ExecStdin, ImageFacts,
    ImageRecord, Listed, LogsRequest, OutputSink, Sandbox, SandboxClient, SandboxEgress,
    SessionError, Stream,
};
use agentc_backend_common::{resolve_env, resolve_vars, ExecError};
use agentc_policy::{EnvValue, LaunchSpec, LABEL_PROFILE};
use bollard::models::ContainerInspectResponse;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use crate::render::container_argv;

/// A [`SandboxClient`] that runs the `docker` command line.
///
/// ```no_run
/// use agentc_backend_cli::CliClient;
/// use agentc_backend_common::session::{ExecRequest, SandboxClient};
///
/// # async fn demo() -> Result<(), agentc_backend_common::session::SessionError> {
/// let client = CliClient::new(std::env::vars().collect());
/// let sandbox = client.find("agentc-sandbox-dev-1000-pentest").await?;
/// let output = client.exec_output(&sandbox, &ExecRequest::new(["id", "-u"])).await?;
/// assert_eq!(output.exit_code, 0);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CliClient {
    /// The environment secrets are read from (docker reads a bare `--env=NAME` from its own
    /// environment, which gets these on top of agentc's).
    env: BTreeMap<String, String>,
}

impl fmt::Debug for CliClient {
    // The environment holds secret values: show names only.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("CliClient")
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// docker's own message from its stderr: without `docker: `, `Error response from daemon: `,
/// `Error: `, the `See 'docker ... --help'.` line and a final period (which the CLI adds and
/// the daemon may not have written), so it reads as the Engine API backend's does.
pub(crate) fn daemon_message(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("See '") && !line.starts_with("Run '"))
        .collect();
    let mut message = lines.join(" ");
    for prefix in ["docker: ", "Error response from daemon: ", "Error: "] {
        if let Some(rest) = message.strip_prefix(prefix) {
            message = rest.to_string();
        }
    }
    message.trim_end_matches('.').to_string()
}

fn exit_code(status: ExitStatus) -> i64 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .map(i64::from)
        .or_else(|| status.signal().map(|signal| 128 + i64::from(signal)))
        .unwrap_or(1)
}

impl CliClient {
    /// A client that resolves secrets from `env`.
    pub fn new(env: BTreeMap<String, String>) -> CliClient {
        CliClient { env }
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
        log::debug!("running docker {}", args.join(" "));
        let mut command = Command::new(crate::exec::docker::program());
        command
            .args(args)
            .envs(&self.env)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// Runs `docker ARGS`: stdout, or docker's message.
    pub(crate) async fn output(&self, args: &[&str]) -> Result<Vec<u8>, (Option<i64>, String)> {
        self.output_with(args, &BTreeMap::new()).await
    }

    /// [`CliClient::output`] with `secrets` on top of the client's environment: the values a
    /// spec's `--env=NAME` entries take ([`agentc_backend_common::secrets::secret_values`]).
    pub(crate) async fn output_with(
        &self,
        args: &[&str],
        secrets: &BTreeMap<String, String>,
    ) -> Result<Vec<u8>, (Option<i64>, String)> {
        let output = self
            .command(args)
            .envs(secrets)
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

    pub(crate) async fn inspect_named(
        &self,
        name: &str,
    ) -> Result<ContainerInspectResponse, SessionError> {
        check_name(name)?;
        let text = match self.output(&["inspect", "--type", "container", name]).await {
            Ok(text) => text,
            Err((None, message)) => {
                return Err(SessionError::CannotRunDocker {
                    engine: agentc_backend_common::engine(),
                    source: std::io::Error::other(message),
                })
            }
            Err((Some(_), message))
                if agentc_backend_common::daemon_text::is_no_such_container(&message) =>
            {
                return Err(SessionError::NoSuchContainer {
                    name: name.to_string(),
                })
            }
            Err((Some(_), message)) => return Err(daemon("inspect the container", message)),
        };
        let mut found: Vec<ContainerInspectResponse> =
            agentc_backend_common::inspect::read_inspect_list(&text).map_err(|message| {
                SessionError::ConnectionLost {
                    step: "read `docker inspect`",
                    message,
                }
            })?;
        if found.is_empty() {
            return Err(SessionError::NoSuchContainer {
                name: name.to_string(),
            });
        }
        Ok(found.swap_remove(0))
    }

    /// `docker exec` for `request`, spawned; the argv holds no secret value (a secret is
    /// `--env=NAME`, read by docker from its environment).
    pub(crate) fn spawn_exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        stdin: Stdio,
        interactive: bool,
        inherit_output: bool,
    ) -> Result<Child, SessionError> {
        request.check()?;
        resolve_vars(&request.env, &self.env)?;
        let mut args: Vec<String> = vec!["exec".to_string()];
        if interactive {
            args.push("--interactive".to_string());
        }
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
                EnvValue::Secret { .. } if self.env.contains_key(&var.name) => {
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
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut command = self.command(&refs);
        command.stdin(stdin);
        if inherit_output {
            command.stdout(Stdio::inherit()).stderr(Stdio::inherit());
        } else {
            command.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        command
            .spawn()
            .map_err(|source| SessionError::CannotRunDocker {
                engine: agentc_backend_common::engine(),
                source,
            })
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
        while stdout.is_some() || stderr.is_some() {
            tokio::select! {
                read = read_some(&mut stdout, &mut out_buffer), if stdout.is_some() => match read {
                    Some(n) => write(output, Stream::Stdout, &out_buffer[..n])?,
                    None => stdout = None,
                },
                read = read_some(&mut stderr, &mut err_buffer), if stderr.is_some() => match read {
                    Some(n) => {
                        let chunk = &err_buffer[..n];
                        // docker's own refusal comes first and alone: hold it until the exit
                        // says whose it was.
                        if first_err && chunk.starts_with(b"Error response from daemon: ") {
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
            if code != 0 {
                let message = daemon_message(&held);
                return Err(
                    if agentc_backend_common::daemon_text::is_not_running(&message) {
                        SessionError::NotRunning {
                            name: sandbox.name.clone(),
                        }
                    } else if agentc_backend_common::daemon_text::is_no_such_container(&message) {
                        SessionError::Gone {
                            name: sandbox.name.clone(),
                            step: "run the command",
                        }
                    } else {
                        daemon("run the command", message)
                    },
                );
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
            Ok(_) | Err(SessionError::NoSuchContainer { .. }) => Err(SessionError::Gone {
                name: sandbox.name.clone(),
                step,
            }),
            // The command ran, so the daemon was there: out of reach now, the connection was
            // lost mid-operation (as the Engine API backend reports it), not never made.
            Err(SessionError::Launch(ExecError::Connect { message, .. })) => {
                Err(SessionError::ConnectionLost { step, message })
            }
            Err(error) => Err(error),
        }
    }
}

/// docker's refusal naming `step`; a daemon that cannot be reached at all (`Cannot connect
/// to the Docker daemon`) as the launch's [`ExecError::Connect`], which the Engine API
/// backend reports before its first request; a lost or failed connection to the daemon
/// (`error during connect`, a reset) as [`SessionError::ConnectionLost`], as the Engine API
/// backend reports it.
pub(crate) fn daemon(step: &'static str, message: String) -> SessionError {
    if let Some(error) = crate::exec::docker::unreachable(&message) {
        return SessionError::Launch(error);
    }
    let lost = [
        "error during connect",
        "permission denied while trying to connect",
        "connection reset",
        "EOF",
    ];
    if lost.iter().any(|sign| message.contains(sign)) {
        SessionError::ConnectionLost { step, message }
    } else {
        SessionError::Daemon { step, message }
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

/// A docker CLI failure of a container-level command (`start`, `stop`, `logs`).
fn container_error(
    sandbox: &Sandbox,
    step: &'static str,
    failure: (Option<i64>, String),
) -> SessionError {
    match failure {
        (None, message) => SessionError::CannotRunDocker {
            engine: agentc_backend_common::engine(),
            source: std::io::Error::other(message),
        },
        (Some(_), message)
            if agentc_backend_common::daemon_text::is_no_such_container(&message) =>
        {
            SessionError::NoSuchContainer {
                name: sandbox.name.clone(),
            }
        }
        (Some(_), message) => daemon(step, message),
    }
}

impl SandboxClient for CliClient {
    fn backend(&self) -> &'static str {
        "cli"
    }

    async fn create(&self, spec: &LaunchSpec) -> Result<Sandbox, SessionError> {
        let container = session_spec(spec)?;
        resolve_env(&container, &self.env)?;
        container_argv(&container).map_err(ExecError::from)?;
        match self
            .output(&["image", "inspect", "--format", "{{.Id}}", &container.image])
            .await
        {
            Ok(_) => {}
            Err((Some(_), message))
                if agentc_backend_common::daemon_text::is_no_such_image(&message) =>
            {
                return Err(ExecError::ImageMissing {
                    image: container.image.clone(),
                }
                .into())
            }
            Err((None, message)) => {
                return Err(SessionError::CannotRunDocker {
                    engine: agentc_backend_common::engine(),
                    source: std::io::Error::other(message),
                })
            }
            Err((Some(_), message)) => return Err(daemon("inspect the image", message)),
        }
        // Refused before anything is created.
        crate::exec::engine::launch_argv(agentc_backend_common::engine(), &container)?;
        let port = crate::exec::egress::port();
        agentc_backend_common::volumes::ensure_volumes(&port, &container).await?;
        // Behind the egress proxy: its isolated network and the healthy proxy first, as a
        // launch makes them (the set may move to another subnet: the argv follows it);
        // removed again when the sandbox cannot be created.
        let mut placed = container.clone();
        let companion =
            agentc_backend_common::companion::setup_for(&port, &mut placed, &self.env, &mut || {
                None
            })
            .await?;
        let result = self.create_placed(spec, &placed).await;
        if let (Err(_), Some(set)) = (&result, &companion) {
            agentc_backend_common::companion::teardown(&port, set).await;
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
        let filter = format!("label={LABEL_PROFILE}={profile}");
        let mut args = vec![
            "ps",
            "--filter",
            &filter,
            "--format",
            "{{.ID}} {{.Names}} {{.Label \"io.agentc.kind\"}}",
        ];
        if stopped_too {
            args.push("--all");
        } else {
            args.extend(["--filter", "status=running"]);
        }
        let listed = self
            .output(&args)
            .await
            .map_err(|(_, message)| daemon("list containers", message))?;
        let text = String::from_utf8_lossy(&listed);
        let mut found: Vec<(&str, &str)> = text
            .lines()
            .filter_map(|line| {
                let mut words = line.split(' ');
                let (id, name) = (words.next()?, words.next()?);
                // A sandbox's egress proxy carries its profile too; it is not the sandbox.
                // Nor is an idle pool member (`agentc pool fill`) the profile's sandbox.
                let skipped = is_companion(words.next().unwrap_or_default())
                    || agentc_policy::pool::is_idle_name(name);
                (!skipped).then_some((id, name))
            })
            .collect();
        found.sort_by_key(|(_, name)| *name);
        match found.as_slice() {
            [(id, _)] => self.find(id).await,
            _ => Err(SessionError::NotOneContainer {
                profile: profile.to_string(),
                stopped_too,
                found: found.iter().map(|(_, name)| name.to_string()).collect(),
            }),
        }
    }

    async fn inspect(&self, sandbox: &Sandbox) -> Result<ContainerInspectResponse, SessionError> {
        let mut inspect = self.inspect_named(&sandbox.id).await?;
        // Behind the egress proxy, the ports it relays are reachable at its host bindings.
        if agentc_backend_common::egress::fixed_address(&inspect).is_some() {
            let label = format!(
                "label={}",
                agentc_backend_common::egress::proxy_label_filter(&sandbox.name)
            );
            if let Ok(ids) = self.output(&["ps", "-aq", "--filter", &label]).await {
                let ids = String::from_utf8_lossy(&ids).into_owned();
                if let Some(id) = ids.split_whitespace().next() {
                    let proxy = self.inspect_named(id).await?;
                    agentc_backend_common::egress::add_relayed_ports(&mut inspect, &proxy);
                }
            }
        }
        Ok(inspect)
    }

    async fn exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
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
        let mut child = self.spawn_exec(sandbox, request, stdin, interactive, inherit)?;
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

    async fn upload(
        &self,
        sandbox: &Sandbox,
        source: &Path,
        target: &str,
    ) -> Result<CopyReport, SessionError> {
        agentc_backend_common::session::transfer::upload(self, sandbox, source, target).await
    }

    async fn download(
        &self,
        sandbox: &Sandbox,
        source: &str,
        target: &Path,
    ) -> Result<CopyReport, SessionError> {
        agentc_backend_common::session::transfer::download(self, sandbox, source, target).await
    }

    async fn logs(
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
            .command(&refs)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| SessionError::CannotRunDocker {
                engine: agentc_backend_common::engine(),
                source,
            })?;
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
            Err(container_error(
                sandbox,
                "read the logs",
                (Some(exit_code(status)), daemon_message(&held)),
            ))
        }
    }

    async fn start(&self, sandbox: &Sandbox) -> Result<(), SessionError> {
        self.output(&["start", &sandbox.id])
            .await
            .map(|_| ())
            .map_err(|failure| container_error(sandbox, "start the container", failure))
    }

    async fn stop(&self, sandbox: &Sandbox, timeout: Option<u32>) -> Result<(), SessionError> {
        let time = timeout.map(|timeout| format!("--time={timeout}"));
        let mut args = vec!["stop"];
        args.extend(time.as_deref());
        args.push(&sandbox.id);
        self.output(&args)
            .await
            .map(|_| ())
            .map_err(|failure| container_error(sandbox, "stop the container", failure))
    }

    async fn delete(&self, sandbox: &Sandbox) -> DeleteReport {
        let report = self.delete_container(sandbox).await;
        agentc_backend_common::session::remove_companions_after(self, sandbox, report).await
    }

    // ---- Warm pools (issue 22), in the `pool` module ----

    async fn rename(&self, from: &Sandbox, to: &str) -> Result<Option<Sandbox>, SessionError> {
        self.rename_member(from, to).await
    }

    async fn list_labelled(&self, label: &str) -> Result<Vec<Listed>, SessionError> {
        self.list_with_label(label).await
    }

    async fn image_facts(&self, image: &str) -> Result<ImageFacts, SessionError> {
        self.facts_of_image(image).await
    }

    async fn remove_companions(&self, workload: &str) -> Result<Vec<String>, SessionError> {
        self.remove_companions_of(workload).await
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
        self.memory_probe().await
    }
    async fn checkpoint(&self, sandbox: &Sandbox, file: &Path) -> Result<(), SessionError> {
        self.checkpoint_to(sandbox, file).await
    }
    async fn restore_checkpoint(&self, file: &Path, name: &str) -> Result<Sandbox, SessionError> {
        self.restore_from(file, name).await
    }
    // ---- End of the snapshot operations.

    async fn egress(&self, sandbox: &Sandbox) -> Result<Option<SandboxEgress>, SessionError> {
        let inspect = self.inspect_named(&sandbox.id).await?;
        let Some(network) = named_network(&inspect) else {
            return Ok(None);
        };
        let labels = match self
            .output(&[
                "network",
                "inspect",
                "--format",
                "{{json .Labels}}",
                &network,
            ])
            .await
        {
            Ok(text) => serde_json::from_slice::<Option<BTreeMap<String, String>>>(&text)
                .map_err(|error| SessionError::ConnectionLost {
                    step: "read `docker network inspect`",
                    message: error.to_string(),
                })?
                .unwrap_or_default(),
            // Its network is gone: no proxy can serve it, nor can it tell whether one did.
            Err((Some(_), message))
                if agentc_backend_common::daemon_text::refusal(&message)
                    == Some(agentc_backend_common::daemon_text::Refusal::NoSuchNetwork) =>
            {
                return Ok(None)
            }
            Err((None, message)) => {
                return Err(SessionError::CannotRunDocker {
                    engine: agentc_backend_common::engine(),
                    source: std::io::Error::other(message),
                })
            }
            Err((Some(_), message)) => return Err(daemon("inspect the network", message)),
        };
        if !is_isolated_network(&labels) {
            return Ok(None);
        }
        let kind = format!("label={}", proxy_kind_filter());
        let on = format!("network={network}");
        let ids = self
            .output(&["ps", "-aq", "--filter", &kind, "--filter", &on])
            .await
            .map_err(|(_, message)| daemon("list the egress proxies", message))?;
        let ids = String::from_utf8_lossy(&ids).into_owned();
        let proxy = match ids.split_whitespace().next() {
            Some(id) => match self.inspect_named(id).await {
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

/// A fresh private directory for docker's `--cidfile` (docker refuses an existing file).
fn tempfile_dir() -> Result<std::path::PathBuf, SessionError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "agentc-cid-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).map_err(|source| SessionError::Io {
        step: "create a directory for docker's --cidfile",
        source,
    })?;
    Ok(dir)
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
