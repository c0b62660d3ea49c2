//! The referee: a stand-in Docker Engine on a unix socket that the REAL `docker` CLI talks to.
//!
//! It proves what the CLI backend's argv means: [`Referee::create`] runs `docker create <args>`
//! against the stand-in and returns the create request the CLI sent (query and JSON body), which
//! the equivalence tests then compare with the API backend's body through
//! [`crate::canonical`].
//!
//! The stand-in answers only what `docker create` needs:
//! - `HEAD`/`GET /_ping` (and `/v*/_ping`): 200 with `Api-Version`, `Ostype: linux`,
//!   `Docker-Experimental: false`, so the CLI negotiates [`DEFAULT_API_VERSION`] (or the version
//!   given to [`Referee::start_with_api_version`]) and parses for a Linux daemon;
//! - `POST /v*/containers/create`: 201 `{"Id":"<64 hex>","Warnings":[]}`, so the CLI never pulls
//!   (it pulls only on a 404 "no such image");
//! - `POST /v*/networks/create`: 201 `{"Id":"<64 hex>","Warning":""}`, and
//!   `POST /v*/networks/{id}/connect`: 200, for an egress companion (see the `referee_egress` module);
//! - anything else: 404 `{"message":"not implemented by the referee"}`.
//!
//! Every request is recorded ([`Referee::requests`]), with the connection it came on and when
//! it arrived. [`Referee::start_engine`] starts it in engine mode
//! ([`crate::stand_in`]): enough of an engine for agentc's API backend to launch, list and
//! remove containers, so that tests see agentc's own requests.
//!
//! Isolation: the CLI runs with a clean environment (`PATH` and the caller's `extra_env` only),
//! `--config` pointing into the referee's temporary directory with an empty `config.json` (so
//! no context, no proxies from the CLI config, no credential helpers, no plugins), and
//! `--host unix://<referee socket>`.
//! No `*_PROXY`, `DOCKER_CONTEXT`, `DOCKER_CONTENT_TRUST` or `OTEL_*` variable reaches it.
//!
//! `docker run` versus `docker create`: both build the body with the same `parse` of
//! `cli/command/container/opts.go`; `run` adds three flags that are not stored in the body
//! ([`RUN_ONLY_FLAGS`]: `--detach`/`-d`, `--sig-proxy`, `--detach-keys`) and, when detached,
//! clears `AttachStdin`, `AttachStdout`, `AttachStderr` and `StdinOnce` before the create call
//! (`runContainer` in `run.go`). `--rm` is a create flag (`HostConfig.AutoRemove`) and is kept.
//! [`Referee::run_as_create`] strips the run-only flags with [`split_run_argv`], runs `create`,
//! and applies the detach rule with [`apply_run_semantics`], so its body is the body `docker run`
//! would send.
//!
//! [`Referee::judge`] does the whole comparison for one [`LaunchSpec`]: both backends render it,
//! the CLI's argv goes through the real docker CLI, and the [`Verdict`] lists the differences
//! between the canonical bodies (and the container name).
//!
//! ```no_run
//! # fn spec() -> agentc_policy::LaunchSpec { unimplemented!() }
//! use agentc_conformance::referee::{require_docker_cli, Referee};
//! if require_docker_cli("example") {
//!     let referee = Referee::start().expect("start the referee");
//!     let verdict = referee.judge(&spec(), &[]).expect("both backends render");
//!     assert!(verdict.is_equivalent(), "{}", verdict.explain());
//! }
//! ```

use agentc_policy::Hinted;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use agentc_policy::hint::with_hint;
use agentc_policy::{Action, LaunchSpec};
use serde_json::Value;

use crate::canonical::{canonical, diff, report, Difference};

/// The Engine API version the stand-in announces unless told otherwise: the highest one whose
/// features agentc uses (volume subpaths need 1.45) and that docker CLI 28 supports.
pub const DEFAULT_API_VERSION: &str = "1.47";

/// Flags of `docker run` that `docker create` rejects; none of them is stored in the create body.
/// `--detach` changes the body only through [`apply_run_semantics`].
pub const RUN_ONLY_FLAGS: &[&str] = &["--detach", "-d", "--sig-proxy", "--detach-keys"];

/// Boolean flags of `docker run` (docker CLI 28): they never consume the next argument.
const RUN_BOOL_FLAGS: &[&str] = &[
    "--detach",
    "-d",
    "--disable-content-trust",
    "--help",
    "--init",
    "--interactive",
    "-i",
    "--no-healthcheck",
    "--oom-kill-disable",
    "--privileged",
    "--publish-all",
    "-P",
    "--quiet",
    "-q",
    "--read-only",
    "--rm",
    "--sig-proxy",
    "--tty",
    "-t",
    "--use-api-socket",
];

/// How long one `docker create` may take before the referee kills it.
const DOCKER_TIMEOUT: Duration = Duration::from_secs(60);

/// The create request the docker CLI sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The request path, such as `/v1.47/containers/create`.
    pub path: String,
    /// The decoded query (`name`, `platform`).
    pub query: BTreeMap<String, String>,
    /// The JSON body: `Config` fields at the top level plus `HostConfig` and `NetworkingConfig`.
    pub body: Value,
}

/// One request the stand-in received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The HTTP method.
    pub method: String,
    /// The path without the query.
    pub path: String,
    /// The decoded query; a repeated key keeps its last value.
    pub query: BTreeMap<String, String>,
    /// The body: `None` when empty, the JSON value when it parses, a JSON string of the
    /// (lossily decoded) text otherwise.
    pub body: Option<Value>,
    /// The status the stand-in answered with.
    pub status: u16,
    /// Which connection it came on: 1 for the first the stand-in accepted, and so on.
    pub connection: u64,
    /// When the stand-in had read it whole.
    pub arrived: Instant,
}

/// Why the referee could not produce a recording.
#[derive(Debug)]
#[non_exhaustive]
pub enum RefereeError {
    /// Setting up the stand-in (temporary directory, socket, config file) failed.
    Setup {
        /// What was being set up.
        what: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The `docker` binary could not be started.
    Spawn {
        /// The underlying error.
        source: io::Error,
    },
    /// `docker create` exited unsuccessfully or was killed after the timeout.
    Docker {
        /// The arguments after `docker create`.
        args: Vec<String>,
        /// How it exited; `None` when the referee killed it.
        status: Option<ExitStatus>,
        /// Its standard error.
        stderr: String,
        /// The requests it made, as `METHOD path` lines.
        requests: Vec<String>,
    },
    /// `docker create` succeeded but no create request with a JSON body was recorded.
    NoCreateRequest {
        /// The requests it made, as `METHOD path` lines.
        requests: Vec<String>,
    },
    /// A backend refused to render the spec.
    Render {
        /// Which backend: `cli` or `api`.
        backend: &'static str,
        /// The backend's error message.
        message: String,
    },
    /// The spec is not a container launch (builds have no create body).
    NotAContainer,
    /// A `docker run` argv could not be turned into `docker create` arguments.
    BadRunArgv {
        /// The argv.
        argv: Vec<String>,
        /// What is wrong with it.
        reason: String,
    },
}

impl fmt::Display for RefereeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefereeError::Setup { what, source } => {
                write!(f, "cannot set up the referee: {what}: {source}")
            }
            RefereeError::Spawn { source } => f.write_str(&with_hint(
                format_args!("cannot run the docker CLI: {source}"),
                Some("install the docker CLI or put it on PATH"),
            )),
            RefereeError::Docker {
                args,
                status,
                stderr,
                requests,
            } => {
                match status {
                    Some(status) => write!(f, "docker create failed ({status})")?,
                    None => write!(
                        f,
                        "docker create did not finish within {}s and was killed",
                        DOCKER_TIMEOUT.as_secs()
                    )?,
                }
                write!(f, "\n  args: {args:?}\n  stderr: {}", stderr.trim_end())?;
                write!(f, "\n  requests: {requests:?}")
            }
            RefereeError::NoCreateRequest { requests } => write!(
                f,
                "docker create sent no create request with a JSON body; requests: {requests:?}"
            ),
            RefereeError::Render { backend, message } => {
                write!(f, "the {backend} backend cannot render the spec: {message}")
            }
            RefereeError::NotAContainer => f.write_str(&with_hint(
                "the spec is a build, not a container launch",
                Some("judge container specs only"),
            )),
            RefereeError::BadRunArgv { argv, reason } => {
                write!(
                    f,
                    "cannot turn docker run argv {argv:?} into create arguments: {reason}"
                )
            }
        }
    }
}

impl std::error::Error for RefereeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RefereeError::Setup { source, .. } | RefereeError::Spawn { source } => Some(source),
            _ => None,
        }
    }
}

/// State shared by the accept loop, the connection threads and the [`Referee`].
struct Shared {
    requests: Mutex<Vec<RecordedRequest>>,
    stop: AtomicBool,
    api_version: String,
    next_id: AtomicU64,
    /// The engine mode's state; `None` for the plain referee.
    engine: Option<crate::stand_in::Engine>,
}

/// A running stand-in Docker Engine and the throw-away CLI configuration that points at it.
///
/// Dropping it stops the server and removes its temporary directory.
pub struct Referee {
    dir: tempfile::TempDir,
    socket: PathBuf,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
    /// Serializes [`Referee::create`] so that the requests recorded during one call are its own.
    serial: Mutex<()>,
}

impl fmt::Debug for Referee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Referee")
            .field("socket", &self.socket)
            .field("api_version", &self.shared.api_version)
            .finish()
    }
}

impl Referee {
    /// Starts a stand-in announcing [`DEFAULT_API_VERSION`].
    pub fn start() -> io::Result<Referee> {
        Referee::start_with_api_version(DEFAULT_API_VERSION)
    }

    /// Starts a stand-in announcing `api_version` (such as `1.41`) in its `_ping` answers.
    pub fn start_with_api_version(api_version: &str) -> io::Result<Referee> {
        Referee::start_mode(api_version, None)
    }

    /// Starts a stand-in in engine mode ([`crate::stand_in`]), announcing `api_version`.
    pub fn start_engine(api_version: &str) -> io::Result<Referee> {
        Referee::start_mode(api_version, Some(crate::stand_in::Engine::default()))
    }

    /// The engine mode's state, to set faults and read what it holds; `None` for the plain
    /// referee.
    pub fn engine(&self) -> Option<&crate::stand_in::Engine> {
        self.shared.engine.as_ref()
    }

    fn start_mode(
        api_version: &str,
        engine: Option<crate::stand_in::Engine>,
    ) -> io::Result<Referee> {
        let dir = tempfile::Builder::new()
            .prefix("agentc-referee-")
            .tempdir()?;
        let config_dir = dir.path().join("docker-config");
        std::fs::create_dir(&config_dir)?;
        std::fs::write(config_dir.join("config.json"), b"{}\n")?;
        std::fs::create_dir(dir.path().join("home"))?;
        let socket = dir.path().join("docker.sock");
        let listener = UnixListener::bind(&socket)?;
        let shared = Arc::new(Shared {
            requests: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            api_version: api_version.to_string(),
            next_id: AtomicU64::new(1),
            engine,
        });
        let accept_shared = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("referee-accept".into())
            .spawn(move || accept_loop(listener, accept_shared))?;
        Ok(Referee {
            dir,
            socket,
            shared,
            accept: Some(accept),
            serial: Mutex::new(()),
        })
    }

    /// The unix socket the stand-in listens on.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The `DOCKER_HOST` value pointing at the stand-in.
    pub fn docker_host(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Runs the real `docker create <args>` against the stand-in and returns the create request
    /// it sent.
    ///
    /// `args` are the CLI backend's argv minus the leading `docker run` and minus the run-only
    /// flags ([`RUN_ONLY_FLAGS`]; see [`split_run_argv`]). The CLI runs with a clean
    /// environment, `PATH` plus `extra_env` (for `--env NAME` pass-through, whose value the CLI
    /// reads from its own environment), and `--host` / `--config` options pointing at the
    /// stand-in and a throw-away configuration.
    pub fn create(
        &self,
        args: &[String],
        extra_env: &[(String, String)],
    ) -> Result<Recorded, RefereeError> {
        let mut command = vec!["create".to_string()];
        command.extend(args.iter().cloned());
        self.send(&command, extra_env, is_create_path)
    }

    /// Runs the real `docker <args>` (any command: `network create`, `network connect`, ...)
    /// against the stand-in and returns the last `POST` it sent to a path `recorded` accepts
    /// (the version prefix removed).
    pub fn send(
        &self,
        args: &[String],
        extra_env: &[(String, String)],
        recorded: fn(&str) -> bool,
    ) -> Result<Recorded, RefereeError> {
        let _serial = lock(&self.serial);
        let first = lock(&self.shared.requests).len();
        let mut command = Command::new(docker_cli());
        // The stand-in's address and the throw-away config go in as options, not as
        // DOCKER_HOST / DOCKER_CONFIG / HOME, so that a pass-through `--env=DOCKER_HOST` (or
        // HOME) in the argv sees the caller's environment, as it would at launch.
        command
            .arg("--host")
            .arg(self.docker_host())
            .arg("--config")
            .arg(self.dir.path().join("docker-config"))
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(extra_env.iter().map(|(k, v)| (k, v)))
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let (status, _stdout, stderr) = run_with_timeout(command, DOCKER_TIMEOUT)?;
        let requests: Vec<RecordedRequest> = lock(&self.shared.requests)[first..].to_vec();
        let summary = || {
            requests
                .iter()
                .map(|r| format!("{} {} -> {}", r.method, r.path, r.status))
                .collect::<Vec<_>>()
        };
        match status {
            Some(status) if status.success() => {}
            status => {
                return Err(RefereeError::Docker {
                    args: args.to_vec(),
                    status,
                    stderr,
                    requests: summary(),
                })
            }
        }
        requests
            .iter()
            .rev()
            .find(|r| r.method == "POST" && recorded(&r.path))
            .and_then(|r| {
                r.body.clone().map(|body| Recorded {
                    path: r.path.clone(),
                    query: r.query.clone(),
                    body,
                })
            })
            .ok_or_else(|| RefereeError::NoCreateRequest {
                requests: summary(),
            })
    }

    /// Runs a whole `docker run ...` argv (as the CLI backend renders it) through
    /// `docker create` and returns the body `docker run` would have sent: run-only flags are
    /// stripped ([`split_run_argv`]) and the detach rule is applied ([`apply_run_semantics`]).
    pub fn run_as_create(
        &self,
        argv: &[String],
        extra_env: &[(String, String)],
    ) -> Result<Recorded, RefereeError> {
        let split = split_run_argv(argv)?;
        let mut recorded = self.create(&split.create_args, extra_env)?;
        apply_run_semantics(&mut recorded.body, split.detach);
        Ok(recorded)
    }
}

/// What the two backends said about one container launch, and where they disagree.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The CLI backend's argv (`docker run ...`).
    pub argv: Vec<String>,
    /// What the real docker CLI sent for it (run semantics applied).
    pub cli: Recorded,
    /// The API backend's `name` query parameter.
    pub api_name: Option<String>,
    /// The API backend's body, as JSON.
    pub api_body: Value,
    /// The differences between the canonical bodies, plus `query.name` when the names differ.
    /// Empty means both backends ask the daemon for the same container.
    pub differences: Vec<Difference>,
}

impl Verdict {
    /// Whether both backends say the same thing.
    pub fn is_equivalent(&self) -> bool {
        self.differences.is_empty()
    }

    /// A failure message: the argv, each difference, and both canonical bodies.
    pub fn explain(&self) -> String {
        let pretty = |v: &Value| serde_json::to_string_pretty(&canonical(v)).unwrap_or_default();
        format!(
            "argv: {:?}\ndifferences:\n{}canonical cli body: {}\ncanonical api body: {}",
            self.argv,
            report(&self.differences),
            pretty(&self.cli.body),
            pretty(&self.api_body)
        )
    }
}

impl Referee {
    /// Renders `spec` with both backends, runs the CLI backend's argv through the real docker
    /// CLI ([`Referee::run_as_create`], with `extra_env` for pass-through variables) and
    /// compares what it sent with the API backend's request.
    ///
    /// Pass-through (secret) variables left out of `extra_env` reach the daemon as a bare
    /// `NAME` from both backends; the API backend substitutes values only at launch. Give
    /// `extra_env` dummy values only: the CLI's recorded body, and so [`Verdict::explain`],
    /// carries them.
    pub fn judge(
        &self,
        spec: &LaunchSpec,
        extra_env: &[(String, String)],
    ) -> Result<Verdict, RefereeError> {
        let Action::Container(container) = &spec.action else {
            return Err(RefereeError::NotAContainer);
        };
        let argv = agentc_backend_cli::render_argv(spec).map_err(|e| RefereeError::Render {
            backend: "cli",
            message: e.with_hint().to_string(),
        })?;
        let request =
            agentc_backend_api::render_create(container).map_err(|e| RefereeError::Render {
                backend: "api",
                message: e.with_hint().to_string(),
            })?;
        let api_body = serde_json::to_value(&request.body).map_err(|e| RefereeError::Render {
            backend: "api",
            message: e.to_string(),
        })?;
        let cli = self.run_as_create(&argv, extra_env)?;
        let mut differences = Vec::new();
        let cli_name = cli.query.get("name").filter(|n| !n.is_empty()).cloned();
        let api_name = request.name.filter(|n| !n.is_empty());
        if cli_name != api_name {
            differences.push(Difference {
                path: "query.name".to_string(),
                cli: cli_name.map(Value::String),
                api: api_name.clone().map(Value::String),
            });
        }
        differences.extend(diff(&cli.body, &api_body));
        Ok(Verdict {
            argv,
            cli,
            api_name,
            api_body,
            differences,
        })
    }
}

impl Drop for Referee {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the stop flag.
        let _ = UnixStream::connect(&self.socket);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// A `docker run` argv split into `docker create` arguments and what the run-only flags said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunArgv {
    /// The arguments for `docker create`: options (minus [`RUN_ONLY_FLAGS`]), image, command.
    pub create_args: Vec<String>,
    /// Whether `--detach` was given (and not as `--detach=false`).
    pub detach: bool,
    /// The run-only arguments removed, in order (a separate `--detach-keys` value included).
    pub stripped: Vec<String>,
}

/// Splits a `docker run` argv (`docker run [OPTIONS] IMAGE [COMMAND] [ARG...]`, the leading
/// `docker` optional, `docker container run` accepted) into `docker create` arguments.
///
/// Options end at the image (docker parses `run` with interspersed flags off) or at `--`;
/// combined short booleans such as `-dit` are split. Global options before `run` (`--host`,
/// `--context`) are refused: they would bypass the stand-in.
pub fn split_run_argv(argv: &[String]) -> Result<RunArgv, RefereeError> {
    let bad = |reason: &str| RefereeError::BadRunArgv {
        argv: argv.to_vec(),
        reason: reason.to_string(),
    };
    let mut rest = argv;
    if let Some(first) = rest.first() {
        if Path::new(first).file_name().and_then(|n| n.to_str()) == Some("docker") {
            rest = &rest[1..];
        }
    }
    if rest.first().map(String::as_str) == Some("container") {
        rest = &rest[1..];
    }
    match rest.first().map(String::as_str) {
        Some("run") => rest = &rest[1..],
        Some(other) if other.starts_with('-') => {
            return Err(bad("global docker options before `run` are not supported"))
        }
        _ => return Err(bad("expected `docker run`")),
    }
    let mut out = RunArgv {
        create_args: Vec::new(),
        detach: false,
        stripped: Vec::new(),
    };
    let mut i = 0;
    while i < rest.len() {
        let arg = &rest[i];
        if arg == "--" || !arg.starts_with('-') || arg == "-" {
            out.create_args.extend(rest[i..].iter().cloned());
            return Ok(out);
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (format!("--{name}"), Some(value)),
                None => (arg.clone(), None),
            };
            let takes_value = !RUN_BOOL_FLAGS.contains(&name.as_str()) && value.is_none();
            let mut consumed = vec![arg.clone()];
            if takes_value {
                let next = rest
                    .get(i + 1)
                    .ok_or_else(|| bad(&format!("{name} needs a value")))?;
                consumed.push(next.clone());
            }
            i += consumed.len();
            if RUN_ONLY_FLAGS.contains(&name.as_str()) {
                if name == "--detach" {
                    out.detach = parse_go_bool(value.unwrap_or("true"))
                        .ok_or_else(|| bad("--detach takes a boolean"))?;
                }
                out.stripped.extend(consumed);
            } else {
                out.create_args.extend(consumed);
            }
            continue;
        }
        // Short options: a run of booleans, possibly ending in one that takes a value.
        let shorts: Vec<char> = arg[1..].chars().collect();
        let mut kept = String::new();
        let mut j = 0;
        let mut consumed_next = false;
        while j < shorts.len() {
            let c = shorts[j];
            let flag = format!("-{c}");
            if RUN_BOOL_FLAGS.contains(&flag.as_str()) {
                if c == 'd' {
                    out.detach = true;
                    out.stripped.push(flag);
                } else {
                    kept.push(c);
                }
                j += 1;
                continue;
            }
            // A short flag with a value: the rest of this argument or the next one.
            kept.extend(&shorts[j..]);
            if j + 1 == shorts.len() {
                consumed_next = true;
            }
            break;
        }
        if !kept.is_empty() {
            out.create_args.push(format!("-{kept}"));
        }
        i += 1;
        if consumed_next {
            let next = rest
                .get(i)
                .ok_or_else(|| bad(&format!("{arg} needs a value")))?;
            out.create_args.push(next.clone());
            i += 1;
        }
    }
    Err(bad("no image argument"))
}

/// Applies what `docker run` does to the body beyond `docker create` (`runContainer` in
/// docker/cli `run.go`): a detached run clears `AttachStdin`, `AttachStdout`, `AttachStderr`
/// and `StdinOnce`. An attached run sends the body unchanged.
pub fn apply_run_semantics(body: &mut Value, detach: bool) {
    if !detach {
        return;
    }
    if let Some(object) = body.as_object_mut() {
        for key in ["AttachStdin", "AttachStdout", "AttachStderr", "StdinOnce"] {
            object.insert(key.to_string(), Value::Bool(false));
        }
    }
}

/// The docker CLI the referee runs: `$AGENTC_DOCKER_CLI` when set (a path, useful when
/// several CLIs are installed, e.g. Debian's 20.10 in `/usr/bin` and 28.x in `/usr/local/bin`),
/// otherwise `docker` looked up on `PATH`.
pub fn docker_cli() -> PathBuf {
    std::env::var_os("AGENTC_DOCKER_CLI")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("docker"), PathBuf::from)
}

/// The docker CLI's version (`28.2.2`), or `None` when `docker --version` cannot run.
pub fn docker_cli_version() -> Option<String> {
    let output = Command::new(docker_cli())
        .arg("--version")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    // "Docker version 28.2.2, build e6534b4"
    let text = String::from_utf8_lossy(&output.stdout);
    let version = text
        .trim()
        .strip_prefix("Docker version ")?
        .split(',')
        .next()?
        .trim()
        .to_string();
    Some(version)
}

/// Whether a test that needs the docker CLI must run.
///
/// Prints the skip reason and returns `false` when the `docker` binary is absent; panics (the
/// test fails) instead when `AGENTC_REQUIRE_DOCKER=1`. Prints the CLI version when it runs.
pub fn require_docker_cli(test_name: &str) -> bool {
    match docker_cli_version() {
        Some(version) => {
            eprintln!(
                "{test_name}: using docker CLI {version} ({})",
                docker_cli().display()
            );
            true
        }
        None => {
            let required = std::env::var("AGENTC_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
            let reason =
                "the docker CLI is not on PATH or $AGENTC_DOCKER_CLI (`docker --version` failed)";
            if required {
                panic!("{test_name}: {reason}, and AGENTC_REQUIRE_DOCKER=1");
            }
            eprintln!(
                "skipping {test_name}: {reason}; set AGENTC_REQUIRE_DOCKER=1 to fail instead"
            );
            false
        }
    }
}

fn is_create_path(path: &str) -> bool {
    let path = strip_version(path);
    path == "/containers/create"
}

/// `POST /networks/{id}/connect`, version prefix or not.
pub fn is_network_connect_path(path: &str) -> bool {
    strip_version(path)
        .strip_prefix("/networks/")
        .is_some_and(|rest| rest.ends_with("/connect"))
}

/// `POST /networks/create`, version prefix or not.
pub fn is_network_create_path(path: &str) -> bool {
    strip_version(path) == "/networks/create"
}

fn is_ping_path(path: &str) -> bool {
    strip_version(path) == "/_ping"
}

/// Removes a leading `/v1.47` from a path.
fn strip_version(path: &str) -> &str {
    if let Some(rest) = path.strip_prefix("/v") {
        if let Some(slash) = rest.find('/') {
            let version = &rest[..slash];
            if !version.is_empty() && version.chars().all(|c| c.is_ascii_digit() || c == '.') {
                return &rest[slash..];
            }
        }
    }
    path
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `command`, collecting stdout and stderr, killing it after `timeout`.
fn run_with_timeout(
    mut command: Command,
    timeout: Duration,
) -> Result<(Option<ExitStatus>, String, String), RefereeError> {
    let mut child = command
        .spawn()
        .map_err(|source| RefereeError::Spawn { source })?;
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut buf);
        }
        buf
    });
    let err_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_end(&mut buf);
        }
        buf
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            // A docker CLI run takes ~20 ms: poll finely, so the wait adds little to it.
            Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            Err(source) => return Err(RefereeError::Spawn { source }),
        }
    };
    let stdout = String::from_utf8_lossy(&out_thread.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_thread.join().unwrap_or_default()).into_owned();
    Ok((status, stdout, stderr))
}

fn accept_loop(listener: UnixListener, shared: Arc<Shared>) {
    let mut connections = 0;
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        connections += 1;
        let connection = connections;
        let shared = Arc::clone(&shared);
        // Connection threads end when the client closes the connection or goes idle.
        let _ = std::thread::Builder::new()
            .name("referee-conn".into())
            .spawn(move || {
                let _ = serve_connection(stream, &shared, connection);
            });
    }
}

/// One parsed HTTP/1.1 request.
struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn serve_connection(stream: UnixStream, shared: &Shared, connection: u64) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    while let Some(request) = read_request(&mut reader)? {
        let arrived = Instant::now();
        let close = request
            .header("Connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        respond(&mut writer, &request, shared, (connection, arrived))?;
        if close || shared.stop.load(Ordering::SeqCst) {
            break;
        }
    }
    Ok(())
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_string())
}

fn read_line(reader: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    if reader.read_until(b'\n', &mut line)? == 0 {
        return Ok(None);
    }
    while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        line.pop();
    }
    String::from_utf8(line)
        .map(Some)
        .map_err(|_| invalid("request line or header is not utf-8"))
}

fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Request>> {
    let line = loop {
        match read_line(reader)? {
            None => return Ok(None),
            Some(line) if line.is_empty() => continue,
            Some(line) => break line,
        }
    };
    let mut parts = line.split(' ');
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts
        .next()
        .ok_or_else(|| invalid("request line has no target"))?
        .to_string();
    let mut headers = Vec::new();
    loop {
        let line = read_line(reader)?.ok_or_else(|| invalid("connection closed in headers"))?;
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut request = Request {
        method,
        target,
        headers,
        body: Vec::new(),
    };
    let chunked = request
        .header("Transfer-Encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        loop {
            let size_line = read_line(reader)?.ok_or_else(|| invalid("eof in chunk size"))?;
            let size_hex = size_line.split(';').next().unwrap_or_default().trim();
            let size =
                usize::from_str_radix(size_hex, 16).map_err(|_| invalid("bad chunk size"))?;
            if size == 0 {
                // Trailers, then the empty line.
                while let Some(line) = read_line(reader)? {
                    if line.is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = request.body.len();
            request.body.resize(start + size, 0);
            reader.read_exact(&mut request.body[start..])?;
            read_line(reader)?;
        }
    } else if let Some(length) = request.header("Content-Length") {
        let length: usize = length.parse().map_err(|_| invalid("bad content-length"))?;
        request.body.resize(length, 0);
        reader.read_exact(&mut request.body)?;
    }
    Ok(Some(request))
}

fn respond(
    writer: &mut impl Write,
    request: &Request,
    shared: &Shared,
    (connection, arrived): (u64, Instant),
) -> io::Result<()> {
    let (path, query) = match request.target.split_once('?') {
        Some((path, query)) => (path.to_string(), decode_query(query)),
        None => (request.target.clone(), BTreeMap::new()),
    };
    let new_id = || {
        let id = shared.next_id.fetch_add(1, Ordering::SeqCst);
        format!("{:064x}", 0x0a9e_47c0_u64 << 32 | id)
    };
    let (status, reason, body) = match (request.method.as_str(), path.as_str()) {
        ("HEAD" | "GET", p) if is_ping_path(p) => (200, "OK", "OK".to_string()),
        ("POST", p) if strip_version(p) == "/networks/create" => {
            let id = shared.next_id.fetch_add(1, Ordering::SeqCst);
            let id = format!("{:064x}", 0x0e7_u64 << 32 | id);
            (
                201,
                "Created",
                format!("{{\"Id\":\"{id}\",\"Warning\":\"\"}}"),
            )
        }
        ("POST", p) if is_network_connect_path(p) => (200, "OK", String::new()),
        ("GET", p) if shared.engine.is_some() && strip_version(p) == "/version" => (
            200,
            "OK",
            format!(
                "{{\"Version\":\"stand-in\",\"ApiVersion\":\"{}\",\"MinAPIVersion\":\"1.24\",\"Os\":\"linux\"}}",
                shared.api_version
            ),
        ),
        (method, p) if shared.engine.is_some() => {
            let engine = shared.engine.as_ref().expect("engine mode");
            let path = percent_decode(strip_version(p));
            engine.answer(method, &path, &query, &request.body, new_id)
        }
        ("POST", p) if is_create_path(p) => {
            let id = new_id();
            (
                201,
                "Created",
                format!("{{\"Id\":\"{id}\",\"Warnings\":[]}}"),
            )
        }
        _ => (
            404,
            "Not Found",
            "{\"message\":\"not implemented by the referee\"}".to_string(),
        ),
    };
    let recorded_body =
        if request.body.is_empty() {
            None
        } else {
            Some(serde_json::from_slice(&request.body).unwrap_or_else(|_| {
                Value::String(String::from_utf8_lossy(&request.body).into_owned())
            }))
        };
    let ping = is_ping_path(&path);
    lock(&shared.requests).push(RecordedRequest {
        method: request.method.clone(),
        path,
        query,
        body: recorded_body,
        status,
        connection,
        arrived,
    });
    let content_type = if ping {
        "text/plain; charset=utf-8"
    } else {
        "application/json"
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nApi-Version: {}\r\nOstype: linux\r\nDocker-Experimental: false\r\nServer: agentc-referee\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n",
        shared.api_version,
        body.len()
    );
    if request.method == "GET" && status == 200 {
        head.push_str("Cache-Control: no-cache, no-store, must-revalidate\r\nPragma: no-cache\r\n");
    }
    head.push_str("\r\n");
    writer.write_all(head.as_bytes())?;
    if request.method != "HEAD" && status != 204 {
        writer.write_all(body.as_bytes())?;
    }
    writer.flush()
}

/// Decodes `application/x-www-form-urlencoded` text (Go's `url.Values.Encode`).
fn decode_query(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(hi), Some(lo)) => {
                        out.push((hi * 16 + lo) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn split_strips_run_only_flags_and_keeps_rm() {
        let split = split_run_argv(&strings(&[
            "docker",
            "run",
            "--detach",
            "--rm",
            "--sig-proxy=false",
            "--detach-keys",
            "ctrl-x",
            "--name",
            "n",
            "-dit",
            "img",
            "--detach",
        ]))
        .unwrap();
        assert!(split.detach);
        assert_eq!(
            split.create_args,
            strings(&["--rm", "--name", "n", "-it", "img", "--detach"])
        );
        assert_eq!(
            split.stripped,
            strings(&[
                "--detach",
                "--sig-proxy=false",
                "--detach-keys",
                "ctrl-x",
                "-d"
            ])
        );
    }

    #[test]
    fn split_handles_short_value_flags_and_false_detach() {
        let split = split_run_argv(&strings(&[
            "run",
            "-e",
            "A=1",
            "-eB=2",
            "--detach=false",
            "-u",
            "0",
            "img",
        ]))
        .unwrap();
        assert!(!split.detach);
        assert_eq!(
            split.create_args,
            strings(&["-e", "A=1", "-eB=2", "-u", "0", "img"])
        );
    }

    #[test]
    fn split_refuses_global_options_and_missing_image() {
        assert!(split_run_argv(&strings(&["docker", "--host", "x", "run", "img"])).is_err());
        assert!(split_run_argv(&strings(&["docker", "run", "--rm"])).is_err());
        assert!(split_run_argv(&strings(&["docker", "run", "--name"])).is_err());
    }

    #[test]
    fn query_is_decoded() {
        let q = decode_query("name=a%2Fb+c&platform=&x=%zz");
        assert_eq!(q["name"], "a/b c");
        assert_eq!(q["platform"], "");
        assert_eq!(q["x"], "%zz");
    }

    #[test]
    fn version_prefix_is_stripped() {
        assert_eq!(
            strip_version("/v1.47/containers/create"),
            "/containers/create"
        );
        assert_eq!(strip_version("/_ping"), "/_ping");
        assert_eq!(strip_version("/volumes/x"), "/volumes/x");
    }
}
