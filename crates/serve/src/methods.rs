//! What each method of `agentc serve` does: the dispatch, and the methods that are one or two
//! [`SandboxClient`] calls over the server's one client; `exec` in [`super::exec`], the files
//! in [`super::files`], the launch of `create` and `verify` in [`super::resolve`], snapshots in
//! [`super::snapshots`].

use agentc_engine::session::{Captured, LogsRequest, SandboxClient, SessionPort};
use agentc_policy::Protocol;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::common::{invalid, running_of, sandbox_ref, session, session_error};
use super::protocol::*;
use super::{exec, files, resolve, snapshots, Request, Server, Session};

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
            reply(exec::exec(server, id, decode(params)?).await)
        }
        "read_file" => reply(files::read(server, decode(params)?, files::READ_FILE).await),
        "write_file" => reply(files::write_file(server, decode(params)?).await),
        "read_tar" => reply(files::read(server, decode(params)?, files::READ_TAR).await),
        "write_tar" => reply(files::write_tar(server, decode(params)?).await),
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

fn initialize<P: SessionPort>(
    server: &Server<'_, P>,
    _: NoParams,
) -> Result<Initialized, RpcError> {
    Ok(Initialized {
        protocol: PROTOCOL_VERSION,
        agentc: env!("CARGO_PKG_VERSION").to_string(),
        backend: server.client.backend().to_string(),
        engine: server.client.port().engine().as_str().to_string(),
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
    let made = agentc_engine::session::create_with_findings(server.client(), &loaded, &spec)
        .await
        .map_err(session_error)?;
    let findings = made
        .findings
        .into_iter()
        .map(|finding| FindingOut {
            severity: finding.severity().to_string(),
            code: finding.code.to_string(),
            field: finding.field(),
            message: finding.message,
            hint: finding.hint,
        })
        .collect();
    let sandbox = made.sandbox;
    server.add_session(Session {
        sandbox: sandbox.clone(),
        keep: params.keep,
        env: params.env,
        runner: params.runner,
    });
    Ok(Created {
        sandbox: sandbox_ref(&sandbox),
        findings,
    })
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
    let running = running_of(server, &sandbox).await?.running;
    server.add_session(Session {
        sandbox: sandbox.clone(),
        keep: params.keep,
        env: params.env,
        runner: params.runner,
    });
    Ok(Attached {
        sandbox: sandbox_ref(&sandbox),
        running,
    })
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
    running_of(server, &session.sandbox).await
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
    running_of(server, &session.sandbox).await
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
    running_of(server, &session.sandbox).await
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
