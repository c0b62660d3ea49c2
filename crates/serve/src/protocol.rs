//! The messages of `agentc serve --stdio` (docs/serve.md): JSON-RPC 2.0 framing, each method's
//! params and result, and the errors. The same types are read, written and published as a JSON
//! Schema (`agentc serve --schema`), so the schema cannot drift from what the server does.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use agentc_policy::Hinted;

/// The protocol's version, answered by `initialize`.
pub const PROTOCOL_VERSION: u32 = 1;

/// JSON-RPC: the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: not a request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: no such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: the params do not fit the method.
pub const INVALID_PARAMS: i64 = -32602;
/// The request was cancelled (`cancel`; LSP's code).
pub const REQUEST_CANCELLED: i64 = -32800;
/// agentc refused or failed; `data` says how ([`ErrorData`]).
pub const AGENTC_ERROR: i64 = -32000;

/// Bytes, carried as standard padded base64 text.
#[derive(Debug, Clone, Default, PartialEq, Eq, JsonSchema)]
#[schemars(with = "String")]
pub struct Bytes64(pub Vec<u8>);

impl Serialize for Bytes64 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes64 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Bytes64, D::Error> {
        let text = String::deserialize(deserializer)?;
        base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map(Bytes64)
            .map_err(|error| serde::de::Error::custom(format!("not base64: {error}")))
    }
}

/// A sandbox's handle in results.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SandboxRef {
    /// Its container name.
    pub name: String,
    /// Its full container ID.
    pub id: String,
}

/// `initialize`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Initialized {
    /// [`PROTOCOL_VERSION`].
    pub protocol: u32,
    /// agentc's version.
    pub agentc: String,
    /// The backend this server drives: `api` or `cli`.
    pub backend: String,
    /// The engine: `docker` or `podman`.
    pub engine: String,
}

/// A host directory bound into the sandbox, as a profile's own `[[mounts]]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MountParam {
    /// The host path.
    pub source: String,
    /// The absolute container path.
    pub target: String,
    /// Read-only (the default).
    #[serde(default = "yes")]
    pub read_only: bool,
}

fn yes() -> bool {
    true
}

/// `create`'s params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateParams {
    /// A profile file.
    #[serde(default)]
    pub profile: Option<PathBuf>,
    /// The profile's TOML text (instead of `profile`).
    #[serde(default)]
    pub profile_text: Option<String>,
    /// Where `profile_text`'s relative paths lead (default: the server's working directory).
    #[serde(default)]
    pub profile_dir: Option<PathBuf>,
    /// The container's name (default `agentc-session-PROFILE-PID-N`).
    #[serde(default)]
    pub name: Option<String>,
    /// Replaces the profile's image, as `agentc run --image`.
    #[serde(default)]
    pub image: Option<String>,
    /// The host workspace directory, for a profile that mounts it (default: the server's
    /// working directory).
    #[serde(default)]
    pub workspace: Option<PathBuf>,
    /// Host directories bound as more `[[mounts]]`, checked by the profile's rules.
    #[serde(default)]
    pub mounts: Vec<MountParam>,
    /// Container TCP ports published on 127.0.0.1, as more `[network] publish`.
    #[serde(default)]
    pub publish: Vec<u16>,
    /// The environment of every exec in this session, under each request's own.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Kept when the server ends (default: deleted).
    #[serde(default)]
    pub keep: bool,
    /// Run plain execs through a shell that stays in the sandbox (a few ms each instead of the
    /// engine's exec start; default true; docs/serve.md says what differs).
    #[serde(default = "yes")]
    pub runner: bool,
}

/// `verify`'s params: the launch to verify, as `create` takes it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyParams {
    /// A profile file.
    #[serde(default)]
    pub profile: Option<PathBuf>,
    /// The profile's TOML text (instead of `profile`).
    #[serde(default)]
    pub profile_text: Option<String>,
    /// Where `profile_text`'s relative paths lead (default: the server's working directory).
    #[serde(default)]
    pub profile_dir: Option<PathBuf>,
    /// Replaces the profile's image.
    #[serde(default)]
    pub image: Option<String>,
    /// The host workspace directory.
    #[serde(default)]
    pub workspace: Option<PathBuf>,
    /// More `[[mounts]]`, as `create`'s.
    #[serde(default)]
    pub mounts: Vec<MountParam>,
    /// More published TCP ports, as `create`'s.
    #[serde(default)]
    pub publish: Vec<u16>,
    /// The host the `egress.allowed` check reaches (`HOST[:PORT]`), or `none` to skip it
    /// (as `agentc verify --egress-probe`).
    #[serde(default)]
    pub egress_probe: Option<String>,
}

/// One check of `verify`, as `agentc verify --format json` prints it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CheckOut {
    /// What was checked.
    pub check: String,
    /// `ok`, `warn`, `fail` or `skip`.
    pub status: String,
    /// What the spec asks for.
    pub expected: String,
    /// What the kernel or the engine reported.
    pub seen: String,
    /// What to do about a failed or warned check.
    pub hint: Option<String>,
}

/// `verify`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Verified {
    /// The profile's name.
    pub profile: String,
    /// Every check passed (`ok`, `warn` or `skip`).
    pub passed: bool,
    /// The checks.
    pub checks: Vec<CheckOut>,
}

/// One security finding of a launch, as `agentc explain` lists it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FindingOut {
    /// `info`, `low`, `medium`, `high` or `critical`.
    pub severity: String,
    /// Its stable code (`egress-unrestricted`, ...).
    pub code: String,
    /// The profile field, override or input that causes it.
    pub field: String,
    /// What it opens.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

/// `create`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Created {
    /// The sandbox.
    pub sandbox: SandboxRef,
    /// The launch's findings, every severity.
    pub findings: Vec<FindingOut>,
}

/// `attach`'s params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachParams {
    /// The sandbox to adopt.
    pub sandbox: String,
    /// Kept when the server ends (default: true; the server did not create it).
    #[serde(default = "yes")]
    pub keep: bool,
    /// The environment of every exec in this session.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Run plain execs through a runner, as `create`'s (default true).
    #[serde(default = "yes")]
    pub runner: bool,
}

/// `attach`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Attached {
    /// The sandbox.
    pub sandbox: SandboxRef,
    /// Whether it runs.
    pub running: bool,
}

/// Params naming one sandbox (`running`, `delete`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxParams {
    /// The sandbox: a container name or ID agentc created.
    pub sandbox: String,
}

/// `exec`'s params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecParams {
    /// The sandbox.
    pub sandbox: String,
    /// The program and its arguments.
    #[serde(default)]
    pub argv: Option<Vec<String>>,
    /// One shell line, run by `sh -c` (instead of `argv`).
    #[serde(default)]
    pub shell: Option<String>,
    /// The working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// More environment, over the session's.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The user (`name`, `uid` or `uid:gid`).
    #[serde(default)]
    pub user: Option<String>,
    /// Seconds before the command's processes are stopped.
    #[serde(default)]
    pub timeout: Option<f64>,
    /// What the command reads on stdin (closed when absent).
    #[serde(default)]
    pub stdin: Option<Bytes64>,
    /// Stream the output as `exec.output` notifications instead of returning it.
    #[serde(default)]
    pub stream: bool,
}

/// `exec`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Executed {
    /// The command's exit code; `null` when it timed out.
    pub exit_code: Option<i64>,
    /// Whether its timeout stopped it.
    pub timed_out: bool,
    /// Its stdout (empty when streamed).
    pub stdout: Bytes64,
    /// Its stderr (empty when streamed).
    pub stderr: Bytes64,
}

/// The `exec.output` notification: a chunk of a streamed exec's output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExecOutputNote {
    /// The exec request's id.
    pub id: Value,
    /// `stdout` or `stderr`.
    pub stream: String,
    /// The bytes.
    pub data: Bytes64,
}

/// Params naming a path of a sandbox (`read_file`, `read_tar`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathParams {
    /// The sandbox.
    pub sandbox: String,
    /// An absolute container path.
    pub path: String,
    /// The user to read or write as (default: the container's).
    #[serde(default)]
    pub user: Option<String>,
}

/// `write_file`'s and `write_tar`'s params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteParams {
    /// The sandbox.
    pub sandbox: String,
    /// An absolute container path.
    pub path: String,
    /// The file's bytes, or the tar.
    pub data: Bytes64,
    /// The file's mode (`write_file`; absent: an existing file keeps its mode, a new one gets
    /// 0o644).
    #[serde(default)]
    pub mode: Option<u32>,
    /// The user to write as (default: the container's).
    #[serde(default)]
    pub user: Option<String>,
}

/// Bytes read (`read_file`, `read_tar`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Data {
    /// The bytes.
    pub data: Bytes64,
}

/// `write_file`'s and `write_tar`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Written {
    /// Bytes written.
    pub bytes: u64,
}

/// `endpoint`'s params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointParams {
    /// The sandbox.
    pub sandbox: String,
    /// The container port.
    pub port: u16,
    /// `tcp` (the default) or `udp`.
    #[serde(default)]
    pub protocol: Option<String>,
}

/// `endpoint`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EndpointOut {
    /// The host to connect to (IPv6 without brackets).
    pub host: String,
    /// The port to connect to.
    pub port: u16,
}

/// `logs`'s params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogsParams {
    /// The sandbox.
    pub sandbox: String,
    /// Only the last N lines.
    #[serde(default)]
    pub tail: Option<u64>,
}

/// `logs`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LogsOut {
    /// What the container wrote on stdout.
    pub stdout: Bytes64,
    /// What the container wrote on stderr.
    pub stderr: Bytes64,
}

/// `running`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunningOut {
    /// Whether it runs.
    pub running: bool,
    /// The engine's state: `running`, `paused`, `exited`, ...
    pub status: String,
}

/// `cancel`'s params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelParams {
    /// The id of the `exec` request to stop.
    pub id: Value,
}

/// `cancel`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Cancelled {
    /// An exec with that id was running and is being stopped.
    pub cancelled: bool,
}

/// `stop`'s params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopParams {
    /// The sandbox.
    pub sandbox: String,
    /// Seconds between SIGTERM and SIGKILL (the engine's default, 10, when absent).
    #[serde(default)]
    pub timeout: Option<u32>,
}

/// `delete`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Deleted {
    /// The sandbox existed and is gone.
    pub removed: bool,
    /// What could not be removed, and why.
    pub left: Vec<String>,
}

/// `snapshot`'s params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotParams {
    /// The sandbox.
    pub sandbox: String,
    /// The snapshot's tag (default: the time).
    #[serde(default)]
    pub tag: Option<String>,
}

/// `snapshot`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SnapshotOut {
    /// Its name, `PROFILE:TAG`.
    pub snapshot: String,
}

/// `restore`'s params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreParams {
    /// The snapshot: `PROFILE:TAG`, or a tag only one snapshot has.
    pub snapshot: String,
    /// Kept when the server ends (default: deleted).
    #[serde(default)]
    pub keep: bool,
    /// The environment of every exec in this session.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// `restore`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Restored {
    /// The new sandbox.
    pub sandbox: SandboxRef,
}

/// `fork`'s params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkParams {
    /// The sandbox to fork.
    pub sandbox: String,
    /// How many new sandboxes (1 to 64; default 1).
    #[serde(default = "one")]
    pub count: u16,
    /// The snapshot's tag (default: the time).
    #[serde(default)]
    pub tag: Option<String>,
    /// Kept when the server ends (default: deleted).
    #[serde(default)]
    pub keep: bool,
    /// The environment of their execs (default: the parent session's).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

fn one() -> u16 {
    1
}

/// `fork`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Forked {
    /// The snapshot they were made from, `PROFILE:TAG`.
    pub snapshot: String,
    /// The new sandboxes.
    pub sandboxes: Vec<SandboxRef>,
}

/// `shutdown`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShutDown {
    /// The sandboxes deleted (those not kept).
    pub deleted: Vec<String>,
}

/// No params (`initialize`, `shutdown`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// What agentc says of a failed request (an error's `data`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ErrorData {
    /// The exit status the command line would have: 65 invalid input, 66 a file not found, 1
    /// a refusal, 125 the engine failed.
    pub exit_code: u8,
    /// `invalid`, `not_found`, `not_running`, `engine`, `cancelled` or `failed`.
    pub kind: String,
    /// The fix, when agentc knows one.
    pub hint: Option<String>,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RpcError {
    /// [`PARSE_ERROR`], [`INVALID_REQUEST`], [`METHOD_NOT_FOUND`], [`INVALID_PARAMS`],
    /// [`REQUEST_CANCELLED`] or [`AGENTC_ERROR`].
    pub code: i64,
    /// What went wrong (agentc's message, its hint on the last line).
    pub message: String,
    /// agentc's classification, for [`AGENTC_ERROR`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<ErrorData>,
}

impl RpcError {
    /// A JSON-RPC error without data.
    pub fn plain(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// agentc's failure: its message with the hint on its last line, as the command line
    /// prints it ([`Hinted::with_hint`]), the hint as `data.hint`, its exit status and kind.
    pub fn agentc(exit_code: u8, kind: &str, error: &(impl Hinted + ?Sized)) -> RpcError {
        let message = error.with_hint().to_string();
        let hint = match error.hint() {
            Some(hint) => Some(hint.trim().to_string()),
            // A message that still writes its hint into its text (not yet a field of its
            // error's type): read back from the text, as before.
            None => agentc_policy::hint::hint_in_text(&message).map(str::to_string),
        };
        RpcError {
            code: AGENTC_ERROR,
            message,
            data: Some(ErrorData {
                exit_code,
                kind: kind.to_string(),
                hint,
            }),
        }
    }
}

/// The methods with their params' and results' types: what `--schema` publishes.
pub fn schema() -> Value {
    use schemars::schema_for;
    let method = |params: schemars::Schema, result: schemars::Schema| serde_json::json!({ "params": params, "result": result });
    serde_json::json!({
        "protocol": PROTOCOL_VERSION,
        "framing": "JSON-RPC 2.0, one message per line on stdin and stdout; bytes as base64",
        "methods": {
            "initialize": method(schema_for!(NoParams), schema_for!(Initialized)),
            "create": method(schema_for!(CreateParams), schema_for!(Created)),
            "attach": method(schema_for!(AttachParams), schema_for!(Attached)),
            "exec": method(schema_for!(ExecParams), schema_for!(Executed)),
            "read_file": method(schema_for!(PathParams), schema_for!(Data)),
            "write_file": method(schema_for!(WriteParams), schema_for!(Written)),
            "read_tar": method(schema_for!(PathParams), schema_for!(Data)),
            "write_tar": method(schema_for!(WriteParams), schema_for!(Written)),
            "endpoint": method(schema_for!(EndpointParams), schema_for!(EndpointOut)),
            "logs": method(schema_for!(LogsParams), schema_for!(LogsOut)),
            "running": method(schema_for!(SandboxParams), schema_for!(RunningOut)),
            "cancel": method(schema_for!(CancelParams), schema_for!(Cancelled)),
            "stop": method(schema_for!(StopParams), schema_for!(RunningOut)),
            "start": method(schema_for!(SandboxParams), schema_for!(RunningOut)),
            "snapshot": method(schema_for!(SnapshotParams), schema_for!(SnapshotOut)),
            "restore": method(schema_for!(RestoreParams), schema_for!(Restored)),
            "fork": method(schema_for!(ForkParams), schema_for!(Forked)),
            "verify": method(schema_for!(VerifyParams), schema_for!(Verified)),
            "delete": method(schema_for!(SandboxParams), schema_for!(Deleted)),
            "shutdown": method(schema_for!(NoParams), schema_for!(ShutDown)),
        },
        "notifications": { "exec.output": schema_for!(ExecOutputNote) },
        "error": schema_for!(RpcError),
    })
}
