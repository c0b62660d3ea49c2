//! What each method of `agentc serve` does: a short chain of [`SandboxClient`] calls over the
//! server's one client. Files and tar streams travel through one exec each (`cat`, `tar`), as
//! `agentc cp` streams through exec: the image needs `sh`, `cat` and `tar`, and a tmpfs or a
//! path past the read-only root is reached as the container's user sees it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use agentc_backend_common::session::{
    Captured, ExecRequest, ExecStdin, LogsRequest, OutputSink, Sandbox, SandboxClient,
    SessionError, SessionPort, Stream, EXEC_TAG_VAR,
};
use agentc_backend_common::ExecError;
use agentc_policy::{EnvValue, EnvVar, Protocol};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::protocol::*;
use super::{resolve, runner, snapshots, Request, Server, Session};
use crate::cli::BackendArg;
use crate::context::{Failure, EXIT_DOCKER, EXIT_INVALID, EXIT_NO_INPUT};

/// The methods a request may name.
const METHODS: &[&str] = &[
    "initialize",
    "create",
    "attach",
    "exec",
    "read_file",
    "write_file",
    "read_tar",
    "write_tar",
    "endpoint",
    "logs",
    "running",
    "cancel",
    "stop",
    "start",
    "snapshot",
    "restore",
    "fork",
    "verify",
    "delete",
    "shutdown",
];

/// Whether `method` is one of the server's.
pub fn is_method(method: &str) -> bool {
    METHODS.contains(&method)
}

/// Runs `request`'s method.
pub async fn call<P: SessionPort>(
    server: &Server<'_, P>,
    request: Request,
) -> Result<Value, RpcError> {
    let params = request.params;
    match request.method.as_str() {
        "initialize" => reply(initialize(server, decode::<NoParams>(params)?)),
        "create" => reply(create(server, decode(params)?).await),
        "attach" => reply(attach(server, decode(params)?).await),
        "exec" => {
            let id = request.id.clone().unwrap_or(Value::Null);
            reply(exec(server, id, decode(params)?).await)
        }
        "read_file" => reply(read(server, decode(params)?, READ_FILE).await),
        "write_file" => reply(write_file(server, decode(params)?).await),
        "read_tar" => reply(read(server, decode(params)?, READ_TAR).await),
        "write_tar" => reply(write_tar(server, decode(params)?).await),
        "endpoint" => reply(endpoint(server, decode(params)?).await),
        "logs" => reply(logs(server, decode(params)?).await),
        "running" => reply(running(server, decode(params)?).await),
        "cancel" => reply(cancel(server, decode(params)?)),
        "stop" => reply(stop(server, decode(params)?).await),
        "start" => reply(start(server, decode(params)?).await),
        "snapshot" => reply(snapshots::take_snapshot(server, decode(params)?).await),
        "restore" => reply(snapshots::restore(server, decode(params)?).await),
        "fork" => reply(snapshots::fork(server, decode(params)?).await),
        "verify" => reply(resolve::verify(server, decode(params)?).await),
        "delete" => reply(delete(server, decode(params)?).await),
        other => Err(RpcError::plain(
            METHOD_NOT_FOUND,
            format!(
                "no method {other:?}; the methods are {}",
                METHODS.join(", ")
            ),
        )),
    }
}

fn decode<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params)
        .map_err(|error| RpcError::plain(INVALID_PARAMS, format!("invalid params: {error}")))
}

fn reply<T: Serialize>(result: Result<T, RpcError>) -> Result<Value, RpcError> {
    result.and_then(|value| {
        serde_json::to_value(value)
            .map_err(|error| RpcError::plain(INVALID_PARAMS, format!("cannot answer: {error}")))
    })
}

/// A session error as agentc's JSON-RPC error: the command line's exit status and message.
pub fn session_error(error: SessionError) -> RpcError {
    let kind = match &error {
        SessionError::NoSuchPath { .. }
        | SessionError::Launch(ExecError::NoSuchContainer { .. })
        | SessionError::Launch(ExecError::ImageMissing { .. }) => "not_found",
        SessionError::NotRunning { .. }
        | SessionError::Paused { .. }
        | SessionError::Gone { .. } => "not_running",
        SessionError::Invalid { .. }
        | SessionError::BadName { .. }
        | SessionError::BadContainerPath { .. } => "invalid",
        other if other.exit_code() == i32::from(EXIT_DOCKER) => "engine",
        _ => "failed",
    };
    let code = u8::try_from(error.exit_code()).unwrap_or(EXIT_DOCKER);
    RpcError::agentc(code, kind, &error.to_string())
}

/// A command line failure as agentc's JSON-RPC error.
pub fn failure(failure: Failure) -> RpcError {
    let kind = match failure.code {
        EXIT_INVALID | 2 => "invalid",
        EXIT_NO_INPUT => "not_found",
        EXIT_DOCKER => "engine",
        _ => "failed",
    };
    RpcError::agentc(failure.code, kind, &failure.message)
}

fn invalid(message: String, hint: &str) -> RpcError {
    RpcError::agentc(
        EXIT_INVALID,
        "invalid",
        &format!("{message}\n  hint: {hint}"),
    )
}

fn initialize<P: SessionPort>(
    server: &Server<'_, P>,
    _: NoParams,
) -> Result<Initialized, RpcError> {
    Ok(Initialized {
        protocol: PROTOCOL_VERSION,
        agentc: env!("CARGO_PKG_VERSION").to_string(),
        backend: match server.backend {
            BackendArg::Api => "api",
            BackendArg::Cli => "cli",
        }
        .to_string(),
        engine: crate::engine().as_str().to_string(),
    })
}

/// `create`: the profile (with the request's mounts and ports) resolved as a session's launch,
/// its findings, and the sandbox created (egress companion and credentials as it says).
async fn create<P: SessionPort>(
    server: &Server<'_, P>,
    params: CreateParams,
) -> Result<Created, RpcError> {
    let (loaded, spec) = resolve::session_launch(&resolve::LaunchRequest {
        profile: params.profile.as_deref(),
        profile_text: params.profile_text.as_deref(),
        profile_dir: params.profile_dir.as_deref(),
        name: params.name.as_deref(),
        image: params.image.as_deref(),
        workspace: params.workspace.as_deref(),
        mounts: &params.mounts,
        publish: &params.publish,
    })?;
    let findings = agentc_policy::findings(&loaded, &spec)
        .into_iter()
        .map(|finding| FindingOut {
            severity: finding.severity.to_string(),
            code: finding.code.to_string(),
            field: finding.field,
            message: finding.message,
            hint: finding.hint,
        })
        .collect();
    let sandbox = server.client().create(&spec).await.map_err(session_error)?;
    server.add_session(Session {
        sandbox: sandbox.clone(),
        keep: params.keep,
        env: params.env,
        runner: params.runner,
    });
    Ok(Created {
        sandbox: handle(&sandbox),
        findings,
    })
}

/// A name for a session's sandbox that names none: `PROFILE-sPID-N`, unique in this process,
/// one DNS label (the profile's name cut as needed), so that an egress proxy can find it.
pub(crate) fn sandbox_name(profile: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let suffix = format!(
        "-s{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let room = agentc_policy::MAX_DNS_LABEL.saturating_sub(suffix.len());
    let stem: String = profile.chars().take(room).collect();
    format!("{}{suffix}", stem.trim_end_matches(['-', '_', '.']))
}

fn handle(sandbox: &Sandbox) -> SandboxRef {
    SandboxRef {
        name: sandbox.name.clone(),
        id: sandbox.id.clone(),
    }
}

/// `attach`: a sandbox agentc created, adopted as a session of this server.
async fn attach<P: SessionPort>(
    server: &Server<'_, P>,
    params: AttachParams,
) -> Result<Attached, RpcError> {
    let sandbox = server
        .client()
        .find(&params.sandbox)
        .await
        .map_err(session_error)?;
    let inspect = server
        .client()
        .inspect(&sandbox)
        .await
        .map_err(session_error)?;
    server.add_session(Session {
        sandbox: sandbox.clone(),
        keep: params.keep,
        env: params.env,
        runner: params.runner,
    });
    Ok(Attached {
        sandbox: handle(&sandbox),
        running: agentc_backend_common::snapshot::state_of(&inspect) == "running",
    })
}

/// The session a request names: one of this server's, else any sandbox agentc created.
pub(crate) async fn session<P: SessionPort>(
    server: &Server<'_, P>,
    name: &str,
) -> Result<Session, RpcError> {
    if let Some(session) = server.session(name) {
        return Ok(session);
    }
    let sandbox = server.client().find(name).await.map_err(session_error)?;
    Ok(Session {
        sandbox,
        keep: true,
        env: BTreeMap::new(),
        runner: false,
    })
}

/// An exec's output sent as `exec.output` notifications of request `id`, as it arrives.
struct Notifying {
    out: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    id: Value,
}

impl OutputSink for Notifying {
    fn write(&mut self, stream: Stream, bytes: &[u8]) -> std::io::Result<()> {
        let note = ExecOutputNote {
            id: self.id.clone(),
            stream: match stream {
                Stream::Stdout => "stdout",
                Stream::Stderr => "stderr",
            }
            .to_string(),
            data: Bytes64(bytes.to_vec()),
        };
        let message =
            serde_json::json!({ "jsonrpc": "2.0", "method": "exec.output", "params": note });
        let mut line = serde_json::to_vec(&message).map_err(std::io::Error::other)?;
        line.push(b'\n');
        // A closed writer: the server is ending; the exec is stopped by it.
        let _ = self.out.send(line);
        Ok(())
    }
}

/// The environment of an exec: the session's, then the request's over it.
fn exec_env(session: &Session, extra: &BTreeMap<String, String>) -> Vec<EnvVar> {
    let mut merged = session.env.clone();
    merged.extend(
        extra
            .iter()
            .map(|(name, value)| (name.clone(), value.clone())),
    );
    merged
        .into_iter()
        .map(|(name, value)| EnvVar {
            name,
            value: EnvValue::Literal { value },
        })
        .collect()
}

/// A tag unique to one exec of this server, for [`SandboxClient::stop_tagged`].
fn exec_tag() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "serve-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// How an exec ended.
enum Ended {
    Exited(i64),
    TimedOut,
    Stopped,
    Cancelled,
}

/// `exec`: the command, its output returned or streamed; on its timeout or the server's stop,
/// its processes stopped.
async fn exec<P: SessionPort>(
    server: &Server<'_, P>,
    id: Value,
    params: ExecParams,
) -> Result<Executed, RpcError> {
    let command = match (&params.argv, &params.shell) {
        (Some(argv), None) if !argv.is_empty() => argv.clone(),
        (None, Some(line)) => vec!["sh".to_string(), "-c".to_string(), line.clone()],
        _ => {
            return Err(invalid(
                "exec needs exactly one of argv (not empty) and shell".to_string(),
                "give the program and its arguments as argv, or one shell line as shell",
            ))
        }
    };
    let timeout = match params.timeout {
        Some(seconds) if !(seconds.is_finite() && seconds > 0.0) => {
            return Err(invalid(
                format!("exec timeout {seconds} is not a positive number of seconds"),
                "give the seconds the command may run, or no timeout",
            ))
        }
        Some(seconds) => Some(Duration::from_secs_f64(seconds.min(1e9))),
        None => None,
    };
    let session = session(server, &params.sandbox).await?;
    let tag = exec_tag();
    let mut request = ExecRequest::new(command);
    request.user = params.user.clone();
    request.workdir = params.cwd.clone();
    request.env = exec_env(&session, &params.env);
    request.env.push(EnvVar {
        name: EXEC_TAG_VAR.to_string(),
        value: EnvValue::Literal { value: tag.clone() },
    });
    if let Some(stdin) = params.stdin {
        request.stdin = ExecStdin::Bytes(stdin.0);
    }
    request.check().map_err(session_error)?;
    let stdin = match &request.stdin {
        ExecStdin::Bytes(bytes) if bytes.len() <= runner::MAX_STDIN => Some(Some(bytes.as_slice())),
        ExecStdin::Null => Some(None),
        _ => None,
    };
    if let (Some(stdin), false, true) = (stdin, params.stream, session.runner) {
        let env: Vec<(String, String)> = exec_env_pairs(&session, &params.env);
        let script = runner::script(
            &request.command,
            request.workdir.as_deref(),
            &env,
            &tag,
            stdin,
        );
        let ran = run_on_runner(
            server,
            &id,
            &session,
            params.user.as_deref(),
            &tag,
            &script,
            timeout,
        )
        .await;
        match ran {
            Some(result) => return result,
            // The runner could not take it: a plain exec does.
            None => log::debug!("serve: exec {id} through a plain exec"),
        }
    }
    let notifying_id = id.clone();
    let mut streamed = Notifying {
        out: server.sender(),
        id,
    };
    let mut captured = Captured::default();
    let sink: &mut dyn OutputSink = if params.stream {
        &mut streamed
    } else {
        &mut captured
    };
    let mut cancelled = server.cancellable(&notifying_id);
    let ended = {
        let run = server.client().exec(&session.sandbox, &request, sink);
        let mut stopping = server.stopping();
        let deadline = async {
            match timeout {
                Some(timeout) => tokio::time::sleep(timeout).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            code = run => Ended::Exited(code.map_err(session_error)?),
            () = deadline => Ended::TimedOut,
            _ = stopping.wait_for(|stop| *stop) => Ended::Stopped,
            _ = cancelled.wait_for(|cancel| *cancel) => Ended::Cancelled,
        }
    };
    server.done(&notifying_id);
    let exit_code = match ended {
        Ended::Exited(code) => Some(code),
        Ended::TimedOut | Ended::Stopped | Ended::Cancelled => {
            let _ = server
                .client()
                .stop_tagged(&session.sandbox, &tag, params.user.as_deref())
                .await;
            None
        }
    };
    if matches!(ended, Ended::Cancelled) {
        return Err(cancelled_error());
    }
    if matches!(ended, Ended::Stopped) {
        return Err(stopped_error());
    }
    Ok(Executed {
        exit_code,
        timed_out: matches!(ended, Ended::TimedOut),
        stdout: Bytes64(captured.stdout),
        stderr: Bytes64(captured.stderr),
    })
}

/// The environment of an exec as name and value pairs: the session's, then the request's.
fn exec_env_pairs(session: &Session, extra: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut merged = session.env.clone();
    merged.extend(
        extra
            .iter()
            .map(|(name, value)| (name.clone(), value.clone())),
    );
    merged.into_iter().collect()
}

/// Runs an exec's `script` on a free runner of the session ([`runner`]), stopped by its
/// timeout, its `cancel` or the server's stop as a plain exec is; `None` when no runner could
/// take it (the command did not run: a plain exec does).
async fn run_on_runner<P: SessionPort>(
    server: &Server<'_, P>,
    id: &Value,
    session: &Session,
    user: Option<&str>,
    tag: &str,
    script: &str,
    timeout: Option<Duration>,
) -> Option<Result<Executed, RpcError>> {
    let runner = server.runner(&session.sandbox, user)?;
    let mut turn = runner.take()?;
    let mut cancelled = server.cancellable(id);
    let mut stopping = server.stopping();
    let deadline = tokio::time::sleep(timeout.unwrap_or(Duration::from_secs(u32::MAX.into())));
    tokio::pin!(deadline);
    // A new runner says it started first; the command is sent only once it has, and not at
    // all when the exec ends meanwhile.
    let ready = tokio::select! {
        ready = turn.ready() => Ok(ready),
        () = &mut deadline => Err(Ended::TimedOut),
        _ = stopping.wait_for(|stop| *stop) => Err(Ended::Stopped),
        _ = cancelled.wait_for(|cancel| *cancel) => Err(Ended::Cancelled),
    };
    let sent = match ready {
        Ok(true) => turn.send(script).await,
        Ok(false) => Err(runner::RunFailure::NotSent),
        Err(why) => {
            server.done(id);
            return Some(ended_before(why));
        }
    };
    let number = match sent {
        Ok(number) => number,
        Err(_) => {
            server.done(id);
            return None;
        }
    };
    let ended = {
        let answer = turn.answer(number);
        tokio::pin!(answer);
        let ended = tokio::select! {
            result = &mut answer => Ok(result),
            () = &mut deadline => Err(Ended::TimedOut),
            _ = stopping.wait_for(|stop| *stop) => Err(Ended::Stopped),
            _ = cancelled.wait_for(|cancel| *cancel) => Err(Ended::Cancelled),
        };
        if ended.is_err() {
            let _ = server
                .client()
                .stop_tagged(&session.sandbox, tag, user)
                .await;
            // The runner answers for the stopped command too: read, so the next is in step.
            let _ = tokio::time::timeout(Duration::from_secs(5), &mut answer).await;
        }
        ended
    };
    server.done(id);
    Some(match ended {
        Err(why) => ended_before(why),
        Ok(Ok(output)) => Ok(Executed {
            exit_code: Some(output.exit_code),
            timed_out: false,
            stdout: Bytes64(output.stdout),
            stderr: Bytes64(output.stderr),
        }),
        Ok(Err(runner::RunFailure::NotSent)) => return None,
        Ok(Err(runner::RunFailure::Lost)) => Err(RpcError::agentc(
            EXIT_DOCKER,
            "failed",
            &format!(
                "the runner in {} ended while the command ran (it may have run)\n  hint: \
                 the sandbox may have stopped; `running` says, and the next exec starts a new \
                 runner",
                session.sandbox.name
            ),
        )),
    })
}

/// What an exec stopped by its timeout, its `cancel` or the server's stop answers.
fn ended_before(why: Ended) -> Result<Executed, RpcError> {
    match why {
        Ended::TimedOut => Ok(Executed {
            exit_code: None,
            timed_out: true,
            stdout: Bytes64::default(),
            stderr: Bytes64::default(),
        }),
        Ended::Cancelled => Err(cancelled_error()),
        _ => Err(stopped_error()),
    }
}

fn cancelled_error() -> RpcError {
    RpcError {
        code: REQUEST_CANCELLED,
        message: "the request was cancelled; the command's processes were stopped".to_string(),
        data: Some(ErrorData {
            exit_code: 130,
            kind: "cancelled".to_string(),
            hint: None,
        }),
    }
}

fn stopped_error() -> RpcError {
    RpcError::agentc(
        143,
        "failed",
        "the server stopped before the command ended; its processes were stopped",
    )
}

/// An absolute container path, or the refusal of any other.
fn absolute(path: &str) -> Result<String, RpcError> {
    if !path.starts_with('/') {
        return Err(invalid(
            format!("path {path:?} is not absolute"),
            "give the container path from `/`",
        ));
    }
    agentc_backend_common::session::copy::container_path(path, None).map_err(session_error)
}

/// Reads the file `$1` to stdout: 44 when it is missing, 45 when it is a directory.
const READ_FILE: &str = "[ -d \"$1\" ] && exit 45; [ -e \"$1\" ] || exit 44; exec cat -- \"$1\"";
/// Writes stdin to the file `$1`, its directory made first, with mode `$2` (when empty: a
/// file that exists keeps its mode, a new one gets 644).
const WRITE_FILE: &str = "d=$(dirname -- \"$1\") && mkdir -p -- \"$d\" || exit 1; m=$2; [ -z \"$m\" ] && { [ -e \"$1\" ] && m=keep || m=644; }; cat > \"$1\" || exit 1; [ \"$m\" = keep ] || chmod \"$m\" \"$1\"";
/// Writes a tar of the directory `$1`'s contents to stdout: 44 when it is missing.
const READ_TAR: &str = "[ -d \"$1\" ] || exit 44; cd -- \"$1\" && exec tar -c -f - .";
/// Extracts the tar on stdin into the directory `$1`, made first.
const WRITE_TAR: &str = "mkdir -p -- \"$1\" && cd -- \"$1\" && exec tar -x -o -f -";

/// Runs one of the file scripts in the sandbox, `stdin` on its input; its stdout on success.
async fn file_script<P: SessionPort>(
    server: &Server<'_, P>,
    sandbox: &str,
    user: Option<&str>,
    script: &str,
    args: &[&str],
    stdin: Option<Vec<u8>>,
) -> Result<Vec<u8>, RpcError> {
    let session = session(server, sandbox).await?;
    let path = args.first().copied().unwrap_or_default().to_string();
    let mut command = vec![
        "sh".to_string(),
        "-c".to_string(),
        script.to_string(),
        "sh".to_string(),
    ];
    command.extend(args.iter().map(|arg| arg.to_string()));
    let output = match stdin.as_deref() {
        // Through the session's runner, when it has one that takes it.
        small if session.runner && small.is_none_or(|bytes| bytes.len() <= runner::MAX_STDIN) => {
            let tag = exec_tag();
            let script = runner::script(&command, None, &[], &tag, small);
            let id = Value::String(format!("internal-{tag}"));
            match run_on_runner(server, &id, &session, user, &tag, &script, None).await {
                Some(ran) => {
                    let ran = ran?;
                    Some(agentc_backend_common::session::ExecOutput {
                        exit_code: ran.exit_code.unwrap_or(EXIT_DOCKER.into()),
                        stdout: ran.stdout.0,
                        stderr: ran.stderr.0,
                    })
                }
                None => None,
            }
        }
        _ => None,
    };
    let output = match output {
        Some(output) => output,
        None => {
            let mut request = ExecRequest::new(command);
            request.user = user.map(str::to_string);
            if let Some(stdin) = stdin {
                request.stdin = ExecStdin::Bytes(stdin);
            }
            server
                .client()
                .exec_output(&session.sandbox, &request)
                .await
                .map_err(session_error)?
        }
    };
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    match output.exit_code {
        0 => Ok(output.stdout),
        44 => Err(session_error(SessionError::NoSuchPath {
            name: session.sandbox.name.clone(),
            path,
        })),
        45 => Err(invalid(
            format!("{path} in {} is a directory", session.sandbox.name),
            "read a directory with read_tar",
        )),
        126 | 127 => Err(session_error(SessionError::TarMissing {
            name: session.sandbox.name.clone(),
            path,
        })),
        code => Err(session_error(SessionError::CopyFailed {
            name: session.sandbox.name.clone(),
            path,
            message: format!("exited with {code}: {stderr}"),
        })),
    }
}

/// `read_file` (`script` [`READ_FILE`]) and `read_tar` ([`READ_TAR`]): the bytes the script
/// writes for the path.
async fn read<P: SessionPort>(
    server: &Server<'_, P>,
    params: PathParams,
    script: &str,
) -> Result<Data, RpcError> {
    let path = absolute(&params.path)?;
    let user = params.user.as_deref();
    let bytes = file_script(server, &params.sandbox, user, script, &[&path], None).await?;
    Ok(Data {
        data: Bytes64(bytes),
    })
}

async fn write_file<P: SessionPort>(
    server: &Server<'_, P>,
    params: WriteParams,
) -> Result<Written, RpcError> {
    let path = absolute(&params.path)?;
    if let Some(mode) = params.mode.filter(|mode| *mode > 0o7777) {
        return Err(invalid(
            format!("mode {mode:o} is not a file mode"),
            "give permission bits, such as 0o644 (420)",
        ));
    }
    let bytes = params.data.0.len() as u64;
    let mode = params
        .mode
        .map(|mode| format!("{mode:o}"))
        .unwrap_or_default();
    file_script(
        server,
        &params.sandbox,
        params.user.as_deref(),
        WRITE_FILE,
        &[&path, &mode],
        Some(params.data.0),
    )
    .await?;
    Ok(Written { bytes })
}

async fn write_tar<P: SessionPort>(
    server: &Server<'_, P>,
    params: WriteParams,
) -> Result<Written, RpcError> {
    let path = absolute(&params.path)?;
    check_tar(&params.data.0)?;
    let bytes = params.data.0.len() as u64;
    file_script(
        server,
        &params.sandbox,
        params.user.as_deref(),
        WRITE_TAR,
        &[&path],
        Some(params.data.0),
    )
    .await?;
    Ok(Written { bytes })
}

/// Refuses a tar whose entries would land outside the directory it is extracted into: an
/// absolute path, a `..` part, or a link leading out.
fn check_tar(bytes: &[u8]) -> Result<(), RpcError> {
    let refuse = |why: String| {
        invalid(
            format!("the tar is refused: {why}"),
            "give a tar whose paths are relative, without `..`, and whose links stay inside",
        )
    };
    let mut archive = tar::Archive::new(bytes);
    let entries = archive
        .entries()
        .map_err(|error| refuse(format!("it cannot be read: {error}")))?;
    for entry in entries {
        let entry = entry.map_err(|error| refuse(format!("it cannot be read: {error}")))?;
        let path = entry
            .path()
            .map_err(|error| refuse(format!("an entry's path cannot be read: {error}")))?
            .into_owned();
        if escapes(&path) {
            return Err(refuse(format!("{} leads outside", path.display())));
        }
        if let Ok(Some(link)) = entry.link_name() {
            let base = path.parent().unwrap_or(Path::new(""));
            let kind = entry.header().entry_type();
            let resolved = if kind.is_hard_link() {
                link.to_path_buf()
            } else {
                base.join(&link)
            };
            if link.is_absolute() || escapes(&resolved) {
                return Err(refuse(format!(
                    "{} links to {} outside",
                    path.display(),
                    link.display()
                )));
            }
        }
    }
    Ok(())
}

/// Whether a relative path climbs above its start (or is absolute).
fn escapes(path: &Path) -> bool {
    let mut depth: i64 = 0;
    for part in path.components() {
        match part {
            std::path::Component::Normal(_) => depth += 1,
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            std::path::Component::RootDir | std::path::Component::Prefix(_) => return true,
        }
    }
    false
}

async fn endpoint<P: SessionPort>(
    server: &Server<'_, P>,
    params: EndpointParams,
) -> Result<EndpointOut, RpcError> {
    let protocol = match params.protocol.as_deref() {
        None | Some("tcp") => Protocol::Tcp,
        Some("udp") => Protocol::Udp,
        Some(other) => {
            return Err(invalid(
                format!("protocol {other:?} is neither tcp nor udp"),
                "give tcp or udp",
            ))
        }
    };
    let session = session(server, &params.sandbox).await?;
    let endpoint = server
        .client()
        .endpoint(&session.sandbox, params.port, protocol)
        .await
        .map_err(session_error)?;
    Ok(EndpointOut {
        host: endpoint.host,
        port: endpoint.port,
    })
}

async fn logs<P: SessionPort>(
    server: &Server<'_, P>,
    params: LogsParams,
) -> Result<LogsOut, RpcError> {
    let session = session(server, &params.sandbox).await?;
    let mut captured = Captured::default();
    let request = LogsRequest {
        follow: false,
        tail: params.tail,
        since: None,
    };
    server
        .client()
        .logs(&session.sandbox, &request, &mut captured)
        .await
        .map_err(session_error)?;
    Ok(LogsOut {
        stdout: Bytes64(captured.stdout),
        stderr: Bytes64(captured.stderr),
    })
}

async fn running<P: SessionPort>(
    server: &Server<'_, P>,
    params: SandboxParams,
) -> Result<RunningOut, RpcError> {
    let session = session(server, &params.sandbox).await?;
    let inspect = server
        .client()
        .inspect(&session.sandbox)
        .await
        .map_err(session_error)?;
    let status = agentc_backend_common::snapshot::state_of(&inspect);
    Ok(RunningOut {
        running: status == "running",
        status,
    })
}

/// `cancel`: stops the exec request `id` (its processes too); it answers with
/// [`REQUEST_CANCELLED`].
fn cancel<P: SessionPort>(
    server: &Server<'_, P>,
    params: CancelParams,
) -> Result<Cancelled, RpcError> {
    Ok(Cancelled {
        cancelled: server.cancel(&params.id),
    })
}

/// `stop`: the sandbox stopped (SIGTERM, then SIGKILL after `timeout` seconds), kept.
async fn stop<P: SessionPort>(
    server: &Server<'_, P>,
    params: StopParams,
) -> Result<RunningOut, RpcError> {
    let session = session(server, &params.sandbox).await?;
    server
        .client()
        .stop(&session.sandbox, params.timeout)
        .await
        .map_err(session_error)?;
    running(
        server,
        SandboxParams {
            sandbox: params.sandbox,
        },
    )
    .await
}

/// `start`: a stopped sandbox started again.
async fn start<P: SessionPort>(
    server: &Server<'_, P>,
    params: SandboxParams,
) -> Result<RunningOut, RpcError> {
    let session = session(server, &params.sandbox).await?;
    server
        .client()
        .start(&session.sandbox)
        .await
        .map_err(session_error)?;
    running(server, params).await
}

/// `delete`: the sandbox and what its launch made.
async fn delete<P: SessionPort>(
    server: &Server<'_, P>,
    params: SandboxParams,
) -> Result<Deleted, RpcError> {
    let session = session(server, &params.sandbox).await?;
    let report = server.client().delete(&session.sandbox).await;
    server.remove_session(&session.sandbox.name);
    Ok(Deleted {
        removed: report.removed,
        left: report.left,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tar of these entries, written as given (the tar crate refuses `..` in paths).
    fn tar_of(entries: &[(&str, Option<&str>)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, link) in entries {
            let mut header = tar::Header::new_old();
            header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_size(0);
            header.set_mode(0o644);
            match link {
                Some(target) => {
                    header.set_entry_type(tar::EntryType::Symlink);
                    header.as_old_mut().linkname[..target.len()].copy_from_slice(target.as_bytes());
                }
                None => header.set_entry_type(tar::EntryType::Regular),
            }
            header.set_cksum();
            builder.append(&header, std::io::empty()).unwrap();
        }
        builder.into_inner().unwrap()
    }

    #[test]
    fn a_tar_that_stays_inside_is_accepted() {
        let tar = tar_of(&[
            ("a/b.txt", None),
            ("a/link", Some("b.txt")),
            ("c/up", Some("../a/b.txt")),
        ]);
        assert!(check_tar(&tar).is_ok());
    }

    #[test]
    fn a_tar_leading_outside_is_refused() {
        for tar in [
            tar_of(&[("a/../../etc/passwd", None)]),
            tar_of(&[("link", Some("/etc"))]),
            tar_of(&[("a/link", Some("../../etc"))]),
        ] {
            let error = check_tar(&tar).unwrap_err();
            assert_eq!(error.code, AGENTC_ERROR);
            assert!(
                error.message.starts_with("the tar is refused: "),
                "{}",
                error.message
            );
            assert_eq!(error.data.unwrap().exit_code, 65);
        }
    }

    #[test]
    fn a_hint_becomes_the_errors_hint_field() {
        let error = RpcError::agentc(1, "failed", "no such thing\n  hint: make it");
        assert_eq!(error.data.unwrap().hint.as_deref(), Some("make it"));
    }

    #[test]
    fn only_absolute_paths_are_taken() {
        assert!(absolute("relative/x").is_err());
        assert!(absolute("/a/../b").is_err());
        assert_eq!(absolute("/a//b/").unwrap(), "/a/b");
    }
}
