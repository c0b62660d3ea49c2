//! `agentc serve`'s `exec`: the command captured or streamed, through a free runner of the
//! session ([`super::runner`]) or a plain exec, stopped by its timeout, its `cancel` or the
//! server's stop (its processes by their exec tag).

use std::collections::BTreeMap;
use std::time::Duration;

use agentc_engine::session::{
    Captured, ExecRequest, ExecStdin, OutputSink, SandboxClient, SessionPort, Stream, EXEC_TAG_VAR,
};
use agentc_policy::{EnvValue, EnvVar, Hint};
use serde_json::Value;

use super::common::{invalid, session, session_error};
use super::protocol::*;
use super::{runner, Server, Session};
use agentc_host::EXIT_DOCKER;

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
        // A closed writer: the server is ending; the exec is stopped by it.
        let _ = self.out.send(super::message_line(&message));
        Ok(())
    }
}

/// A tag unique to one exec of this server, for [`SandboxClient::stop_tagged`].
pub fn exec_tag() -> String {
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
pub async fn exec<P: SessionPort>(
    server: &Server<'_, P>,
    id: Value,
    mut params: ExecParams,
) -> Result<Executed, RpcError> {
    let command = exec_command(&params)?;
    let timeout = exec_timeout(params.timeout)?;
    let session = session(server, &params.sandbox).await?;
    let tag = exec_tag();
    let env = exec_env(&session, &params.env);
    let request = exec_request(command, &mut params, &env, &tag)?;
    if !params.stream {
        let ran = run_on_runner(server, &id, &session, &request, &env, &tag, timeout).await;
        match ran {
            Some(result) => return result,
            // No runner could take it: a plain exec does.
            None => log::debug!("serve: exec {id} through a plain exec"),
        }
    }
    plain_exec(server, id, &session, &request, &tag, timeout, params.stream).await
}

/// The command an exec runs: its `argv`, or its `shell` line run by `sh -c`; refused unless it
/// has exactly one of them.
fn exec_command(params: &ExecParams) -> Result<Vec<String>, RpcError> {
    match (&params.argv, &params.shell) {
        (Some(argv), None) if !argv.is_empty() => Ok(argv.clone()),
        (None, Some(line)) => Ok(vec!["sh".to_string(), "-c".to_string(), line.clone()]),
        _ => Err(invalid(
            "exec needs exactly one of argv (not empty) and shell".to_string(),
            "give the program and its arguments as argv, or one shell line as shell",
        )),
    }
}

/// An exec's timeout from its seconds; refused unless they are a positive number.
fn exec_timeout(seconds: Option<f64>) -> Result<Option<Duration>, RpcError> {
    match seconds {
        Some(seconds) if !(seconds.is_finite() && seconds > 0.0) => Err(invalid(
            format!("exec timeout {seconds} is not a positive number of seconds"),
            "give the seconds the command may run, or no timeout",
        )),
        Some(seconds) => Ok(Some(Duration::from_secs_f64(seconds.min(1e9)))),
        None => Ok(None),
    }
}

/// The exec request of `command`: the user, working directory and stdin `params` give (its
/// stdin taken from them), the environment `env` and the exec tag `tag`; checked.
fn exec_request(
    command: Vec<String>,
    params: &mut ExecParams,
    env: &[(String, String)],
    tag: &str,
) -> Result<ExecRequest, RpcError> {
    let mut request = ExecRequest::new(command);
    request.user = params.user.clone();
    request.workdir = params.cwd.clone();
    request.env = env
        .iter()
        .map(|(name, value)| EnvVar {
            name: name.clone(),
            value: EnvValue::Literal {
                value: value.clone(),
            },
        })
        .collect();
    request.env.push(EnvVar {
        name: EXEC_TAG_VAR.to_string(),
        value: EnvValue::Literal {
            value: tag.to_string(),
        },
    });
    if let Some(stdin) = params.stdin.take() {
        request.stdin = ExecStdin::Bytes(stdin.0);
    }
    request.check().map_err(session_error)?;
    Ok(request)
}

/// Runs `request` as a plain exec, its output captured or (with `stream`) sent as it arrives;
/// on its timeout, its `cancel` or the server's stop, its processes (tagged `tag`) stopped.
async fn plain_exec<P: SessionPort>(
    server: &Server<'_, P>,
    id: Value,
    session: &Session,
    request: &ExecRequest,
    tag: &str,
    timeout: Option<Duration>,
    stream: bool,
) -> Result<Executed, RpcError> {
    let mut cancelled = server.cancellable(&id);
    let mut streamed = Notifying {
        out: server.sender(),
        id,
    };
    let mut captured = Captured::default();
    let sink: &mut dyn OutputSink = if stream { &mut streamed } else { &mut captured };
    let ended = {
        let run = server.client().exec(&session.sandbox, request, sink);
        let mut stopping = server.stopping();
        tokio::select! {
            code = run => Ended::Exited(code.map_err(session_error)?),
            () = deadline(timeout) => Ended::TimedOut,
            _ = stopping.wait_for(|stop| *stop) => Ended::Stopped,
            _ = cancelled.wait_for(|cancel| *cancel) => Ended::Cancelled,
        }
    };
    let exit_code = match ended {
        Ended::Exited(code) => Some(code),
        why => {
            let _ = server
                .client()
                .stop_tagged(&session.sandbox, tag, request.user.as_deref())
                .await;
            if !matches!(why, Ended::TimedOut) {
                return ended_before(why);
            }
            // A timed-out command answers with what it wrote before it was stopped.
            None
        }
    };
    Ok(Executed {
        exit_code,
        timed_out: exit_code.is_none(),
        stdout: Bytes64(captured.stdout),
        stderr: Bytes64(captured.stderr),
    })
}

/// The environment of an exec: the session's, then the request's over it.
fn exec_env(session: &Session, extra: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut merged = session.env.clone();
    merged.extend(
        extra
            .iter()
            .map(|(name, value)| (name.clone(), value.clone())),
    );
    merged.into_iter().collect()
}

/// A future that ends after `timeout`, or never.
async fn deadline(timeout: Option<Duration>) {
    match timeout {
        Some(timeout) => tokio::time::sleep(timeout).await,
        None => std::future::pending().await,
    }
}

/// Runs `request` (its environment `env` and exec tag `tag` written into the runner's script)
/// on a free runner of the session ([`runner`]), stopped by its timeout, its `cancel` or the
/// server's stop as a plain exec is; `None` when no runner takes it: the session has runners
/// off, its stdin is over [`runner::MAX_STDIN`], or every runner is busy (the command did not
/// run: a plain exec does).
pub async fn run_on_runner<P: SessionPort>(
    server: &Server<'_, P>,
    id: &Value,
    session: &Session,
    request: &ExecRequest,
    env: &[(String, String)],
    tag: &str,
    timeout: Option<Duration>,
) -> Option<Result<Executed, RpcError>> {
    let script = runner_script(session, request, env, tag)?;
    let user = request.user.as_deref();
    let runner = server.runner(&session.sandbox, user)?;
    let mut turn = runner.take()?;
    let mut cancelled = server.cancellable(id);
    let mut stopping = server.stopping();
    let deadline = deadline(timeout);
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
        Ok(true) => turn.send(&script).await,
        Ok(false) => Err(runner::RunFailure::NotSent),
        Err(why) => {
            server.done(id);
            return Some(ended_before(why));
        }
    };
    let Ok(number) = sent else {
        server.done(id);
        return None;
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
    runner_answered(ended, &session.sandbox.name)
}

/// The script a runner runs for `request` (its environment `env` and exec tag `tag` written
/// into it); `None` when the session has runners off or the request's stdin is over
/// [`runner::MAX_STDIN`].
fn runner_script(
    session: &Session,
    request: &ExecRequest,
    env: &[(String, String)],
    tag: &str,
) -> Option<String> {
    let stdin = match &request.stdin {
        ExecStdin::Bytes(bytes) if bytes.len() <= runner::MAX_STDIN => Some(bytes.as_slice()),
        ExecStdin::Null => None,
        _ => return None,
    };
    if !session.runner {
        return None;
    }
    Some(runner::script(
        &request.command,
        request.workdir.as_deref(),
        env,
        tag,
        stdin,
    ))
}

/// What an exec on a runner of the sandbox `sandbox` answers, from how it ended; `None` when
/// the command was not sent (a plain exec runs it).
fn runner_answered(
    ended: Result<Result<runner::RunOutput, runner::RunFailure>, Ended>,
    sandbox: &str,
) -> Option<Result<Executed, RpcError>> {
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
            &Hint::new(
                format!("the runner in {sandbox} ended while the command ran (it may have run)"),
                "the sandbox may have stopped; `running` says, and the next exec starts a new \
                 runner",
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
        &Hint::none("the server stopped before the command ended; its processes were stopped"),
    )
}
