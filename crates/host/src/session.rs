//! What the session commands do to a running sandbox, as the command line and a library caller
//! both do it: a command run in it on a signal-aware terminal ([`Exec`], [`run_exec`]), files
//! copied in or out ([`Transfer`]), where its ports are ([`Ports`]), its logs ([`Logs`]), its
//! egress proxy's decisions ([`EgressLog`]), and stopping and starting it ([`Stop`],
//! [`Start`]). Each is an [`OnClient`] step over a sessions client ([`Sandboxes`]), run through
//! either backend by [`on_client`](crate::backend::on_client); its output goes to the
//! [`OutputSink`] the caller passes, what it did comes back typed, and SIGINT or SIGTERM ends it
//! as the commands end (a command started in the container stopped, a copy's host side
//! removed). A sandbox is named as [`sandbox_named`] reads a NAME.
//!
//! ```no_run
//! use agentc_egress::image::ProxyExecutable;
//! use agentc_engine::session::{Captured, ExecRequest};
//! use agentc_host::backend::{on_client, BackendChoice, Driver};
//! use agentc_host::session::Exec;
//!
//! let env = agentc_host::backend::process_env();
//! let proxy = ProxyExecutable::locate(&env).ok_or("no agentc on PATH")?;
//! let driver = Driver::new(agentc_engine::Engine::Docker, BackendChoice::Auto, proxy);
//! let mut output = Captured::default();
//! let exec = Exec {
//!     name: "profiles/pentest.toml".to_string(),
//!     request: ExecRequest::new(["uname", "-a"]),
//!     output: &mut output,
//! };
//! let status = on_client(&driver, exec)?;
//! println!("{status}: {}", String::from_utf8_lossy(&output.stdout));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

use agentc_engine::companion::state::EgressState;
use agentc_engine::session::target::parse_port;
use agentc_engine::session::{
    parse_since, EgressHistory, Endpoint, ExecRequest, ExecStdin, LogsRequest, OutputSink, Sandbox,
    SandboxClient, SandboxEgress, Sandboxes, SessionError, SessionPort, Stream, Unseen,
    EXEC_TAG_VAR,
};
use agentc_engine::{exit_status, ExecError, Interrupt};
use agentc_policy::Hinted;
use agentc_policy::{EnvValue, EnvVar};

use crate::backend::{session_failure, OnClient, Signals};
use crate::inventory::sandbox_named;
use crate::{Failure, EXIT_FAILED};

/// A tag unique to this exec, for [`SandboxClient::stop_tagged`].
fn exec_tag() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.subsec_nanos())
        .unwrap_or_default();
    format!("{}-{nanos}", std::process::id())
}

/// An exec's environment entry as `--env` reads it: `NAME` a secret by name (read from the
/// client's environment), `NAME=VALUE` a literal.
pub fn env_entry(text: &str) -> EnvVar {
    match text.split_once('=') {
        Some((name, value)) => EnvVar {
            name: name.to_string(),
            value: EnvValue::Literal {
                value: value.to_string(),
            },
        },
        None => EnvVar {
            name: text.to_string(),
            value: EnvValue::Secret { required: true },
        },
    }
}

/// Runs `request` in `sandbox`, its output to `output`, tagged ([`EXEC_TAG_VAR`]) so that what
/// it started can be found again: on SIGINT or SIGTERM that is stopped in the container and the
/// failure is the interruption (exit 130 or 143); when the connection to the engine is lost, it
/// is stopped if the engine answers again. Returns the command's exit status.
pub async fn run_exec<C: SandboxClient>(
    client: &C,
    sandbox: &Sandbox,
    mut request: ExecRequest,
    output: &mut dyn OutputSink,
) -> Result<u8, Failure> {
    let tag = exec_tag();
    request.env.push(EnvVar {
        name: EXEC_TAG_VAR.to_string(),
        value: EnvValue::Literal { value: tag.clone() },
    });
    let mut signals = Signals::new()?;
    let interrupted = tokio::select! {
        result = client.exec(sandbox, &request, output) => {
            if let Err(error @ SessionError::Launch(ExecError::ConnectionLost { .. })) = result {
                // The command runs on in the container: stop it if the daemon answers again.
                let _ = client
                    .stop_tagged(sandbox, &tag, request.user.as_deref())
                    .await;
                return Err(session_failure(error));
            }
            return result.map(exit_status).map_err(session_failure);
        }
        signal = signals.recv() => signal,
    };
    // A command that may still run: what stops it is the failure's hint.
    let (cleanup, hint) = match client
        .stop_tagged(sandbox, &tag, request.user.as_deref())
        .await
    {
        Ok(()) => (format!("stopped the command in {}", sandbox.name), None),
        Err(error) => (
            format!(
                "the command may still run in {}: {}",
                sandbox.name,
                error.with_hint()
            ),
            Some(format!(
                "`agentc stop {}` stops the container",
                sandbox.name
            )),
        ),
    };
    let failure = session_failure(SessionError::Launch(ExecError::Interrupted {
        signal: interrupted,
        cleanup: Some(cleanup),
    }));
    Err(match hint {
        Some(hint) => failure.hinted(hint),
        None => failure,
    })
}

/// The exec of `agentc exec` and `agentc shell`: `request` run in the running sandbox `name`
/// ([`run_exec`]); its output is the command's exit status.
pub struct Exec<'a> {
    /// The sandbox, as [`sandbox_named`] reads it (a running one).
    pub name: String,
    /// The command and how it runs.
    pub request: ExecRequest,
    /// Where its output goes ([`agentc_engine::session::ProcessStdio`]: this process's).
    pub output: &'a mut dyn OutputSink,
}

impl OnClient for Exec<'_> {
    type Output = u8;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        let sandbox = sandbox_named(client, &self.name, false).await?;
        run_exec(client, &sandbox, self.request, self.output).await
    }
}

/// The request of `agentc shell`: bash where the image has it, else sh, on this process's stdin
/// as a terminal, as `user` when given (no TTY: set [`ExecRequest::tty`] when stdin is one).
pub fn shell_request(user: Option<String>) -> ExecRequest {
    let mut request = ExecRequest::new([
        "sh",
        "-c",
        "if command -v bash >/dev/null 2>&1; then exec bash; fi; exec sh",
    ]);
    request.user = user;
    request.stdin = ExecStdin::Terminal;
    request
}

/// One side of a copy ([`Transfer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Side {
    /// A path on the host.
    Host(PathBuf),
    /// A path in the sandbox `name` ([`sandbox_named`]: running or stopped).
    Container {
        /// The sandbox.
        name: String,
        /// The path in it.
        path: String,
    },
}

impl Side {
    /// `NAME:PATH` when a `:` comes before any `/` (as `docker cp` reads it), a host path
    /// otherwise.
    pub fn parse(text: &str) -> Side {
        match text.split_once(':') {
            Some((name, path)) if !name.is_empty() && !name.contains('/') => Side::Container {
                name: name.to_string(),
                path: path.to_string(),
            },
            _ => Side::Host(PathBuf::from(text)),
        }
    }
}

/// The copy of `agentc cp`: a host path into a sandbox, or a sandbox's path to the host, raced
/// against SIGINT and SIGTERM (what it had written on the host then removed). Two host paths, or
/// two sandbox paths, are a usage error.
pub struct Transfer {
    /// What is copied.
    pub source: Side,
    /// Where it goes.
    pub destination: Side,
    /// Where a copy from a sandbox to the host path `-` goes instead, as `docker cp NAME:PATH
    /// -` writes it: one tar stream whose top entry has the source's name (modes and times
    /// kept, owners written as root). It lands in a directory of its own first, removed when
    /// the step ends. Without one, `-` is a host path like any other.
    pub stream: Option<Box<dyn Write + Send>>,
}

/// Where [`Transfer`] copied to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Copied {
    /// A path: `NAME:PATH` in a sandbox, or on the host.
    To(String),
    /// The tar stream ([`Transfer::stream`]).
    Streamed,
}

impl OnClient for Transfer {
    type Output = Copied;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Copied, Failure> {
        let Transfer {
            source,
            destination,
            stream,
        } = self;
        let mut signals = Signals::new()?;
        // The stream: the copy lands in a directory of its own first; the directory goes when
        // the step ends, interrupted or not.
        let stream = stream.filter(|_| {
            matches!(
                (&source, &destination),
                (Side::Container { .. }, Side::Host(to)) if to.as_os_str() == "-"
            )
        });
        let staging = match stream {
            Some(stream) => Some((staging_dir()?, stream)),
            None => None,
        };
        let copy = copy_between(client, &source, &destination, staging);
        tokio::select! {
            copied = copy => copied,
            signal = signals.recv() => Err(session_failure(SessionError::Launch(ExecError::Interrupted {
                signal,
                cleanup: Some("the copy was stopped and what it had written on the host removed".to_string()),
            }))),
        }
    }
}

/// A directory of its own for a copy to a tar stream, removed when dropped.
fn staging_dir() -> Result<tempfile::TempDir, Failure> {
    tempfile::Builder::new()
        .prefix("agentc-cp-")
        .tempdir()
        .map_err(|error| {
            Failure::new(
                EXIT_FAILED,
                format!("cannot make a directory for the copy: {error}"),
            )
        })
}

/// Copies `source` to `destination`, one a sandbox's path and the other a host path; from a
/// sandbox to a tar stream through the staging directory, when given.
async fn copy_between<C: SandboxClient>(
    client: &C,
    source: &Side,
    destination: &Side,
    staging: Option<(tempfile::TempDir, Box<dyn Write + Send>)>,
) -> Result<Copied, Failure> {
    match (source, destination, staging) {
        (Side::Container { name, path }, Side::Host(_), Some((staging, stream))) => {
            let sandbox = sandbox_named(client, name, true).await?;
            let report = client
                .download(&sandbox, path, staging.path())
                .await
                .map_err(session_failure)?;
            let landing = PathBuf::from(&report.destination);
            tokio::task::spawn_blocking(move || write_tar(&landing, stream))
                .await
                .map_err(|error| Failure::new(EXIT_FAILED, error.to_string()))??;
            Ok(Copied::Streamed)
        }
        (Side::Host(from), Side::Container { name, path }, _) => {
            let sandbox = sandbox_named(client, name, true).await?;
            let report = client
                .upload(&sandbox, from, path)
                .await
                .map_err(session_failure)?;
            Ok(Copied::To(format!(
                "{}:{}",
                sandbox.name, report.destination
            )))
        }
        (Side::Container { name, path }, Side::Host(to), _) => {
            let sandbox = sandbox_named(client, name, true).await?;
            let report = client
                .download(&sandbox, path, to)
                .await
                .map_err(session_failure)?;
            Ok(Copied::To(report.destination))
        }
        _ => Err(Failure::usage(
            "one side of `agentc cp` must be NAME:PATH and the other a host path",
        )
        .hinted("agentc cp ./file NAME:/tmp, or agentc cp NAME:/tmp/file .")),
    }
}

/// Writes the copied tree at `landing` to `stream` as one tar stream whose top entry has the
/// source's name.
fn write_tar(landing: &Path, stream: Box<dyn Write + Send>) -> Result<(), Failure> {
    let name = landing
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| ".".to_string());
    agentc_engine::session::tarball::pack(landing, &name, std::io::BufWriter::new(stream))
        .map_err(session_failure)
}

/// Where the ports of `agentc port` are reachable: the one asked for, or every published one.
pub struct Ports {
    /// The sandbox, as [`sandbox_named`] reads it (a running one).
    pub name: String,
    /// `PORT` or `PORT/PROTO`; `None` for every port.
    pub port: Option<String>,
}

impl OnClient for Ports {
    /// The endpoint of the port asked for, else each published port's.
    type Output = Vec<Endpoint>;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Vec<Endpoint>, Failure> {
        let port = self
            .port
            .as_deref()
            .map(parse_port)
            .transpose()
            .map_err(session_failure)?;
        let sandbox = sandbox_named(client, &self.name, false).await?;
        match port {
            Some((port, protocol)) => client
                .endpoint(&sandbox, port, protocol)
                .await
                .map(|endpoint| vec![endpoint])
                .map_err(session_failure),
            None => client.endpoints(&sandbox).await.map_err(session_failure),
        }
    }
}

/// The logs of `agentc logs`: the sandbox's output, written to `output`; with `follow` until it
/// stops or a signal ends the step (quietly: the output is `Some(signal)`).
pub struct Logs<'a> {
    /// The sandbox, as [`sandbox_named`] reads it (running or stopped).
    pub name: String,
    /// Until the sandbox stops.
    pub follow: bool,
    /// The last lines only.
    pub tail: Option<u64>,
    /// From a Unix time or a duration ago (`10m`) on ([`parse_since`]).
    pub since: Option<String>,
    /// Where the lines go.
    pub output: &'a mut dyn OutputSink,
}

impl OnClient for Logs<'_> {
    /// The signal that ended the logs, if one did.
    type Output = Option<Interrupt>;

    async fn run<P: SessionPort>(
        self,
        client: &Sandboxes<P>,
    ) -> Result<Option<Interrupt>, Failure> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|since| since.as_secs() as i64)
            .unwrap_or_default();
        let since = self
            .since
            .as_deref()
            .map(|text| parse_since(text, now))
            .transpose()
            .map_err(session_failure)?;
        let sandbox = sandbox_named(client, &self.name, true).await?;
        let request = LogsRequest {
            follow: self.follow,
            tail: self.tail,
            since,
        };
        let mut signals = Signals::new()?;
        tokio::select! {
            result = client.logs(&sandbox, &request, self.output) => {
                result.map(|()| None).map_err(session_failure)
            }
            // A signal is how `follow` ends: quietly.
            signal = signals.recv() => Ok(Some(signal)),
        }
    }
}

/// The sandbox's egress through its proxy, or why it has none to read.
async fn egress_of<C: SandboxClient>(
    client: &C,
    sandbox: &Sandbox,
) -> Result<SandboxEgress, Failure> {
    client
        .egress(sandbox)
        .await
        .map_err(session_failure)?
        .ok_or_else(|| {
            Failure::new(
                EXIT_FAILED,
                format!(
                    "{} is not behind agentc's egress proxy, so it has no egress log",
                    sandbox.name
                ),
            )
            .hinted(format!(
                "only an allowlist enforced outside the sandbox (egress.enforce = \"outside\", \
                 the default with egress hosts) runs the proxy; `agentc logs {}` prints the \
                 container's own output",
                sandbox.name
            ))
        })
}

/// The log of `agentc egress log`: the decisions of a sandbox's egress proxy (its container log
/// merged with its audit files, [`Sandboxes::egress_history`]) as JSON lines on `output`'s
/// stdout, the proxy's own stderr on its stderr; with `follow` on until the proxy is gone or a
/// signal ends the step (quietly: the output is `Some(signal)`). A sandbox not behind the proxy
/// is refused; a proxy down is a failure once its lines are out.
pub struct EgressLog<'a> {
    /// The sandbox, as [`sandbox_named`] reads it (running or stopped).
    pub name: String,
    /// Follow the proxy's log while it serves.
    pub follow: bool,
    /// The last lines only.
    pub tail: Option<u64>,
    /// Where the lines go.
    pub output: &'a mut dyn OutputSink,
}

impl OnClient for EgressLog<'_> {
    /// The signal that ended the log, if one did.
    type Output = Option<Interrupt>;

    async fn run<P: SessionPort>(
        self,
        client: &Sandboxes<P>,
    ) -> Result<Option<Interrupt>, Failure> {
        let output = self.output;
        let sandbox = sandbox_named(client, &self.name, true).await?;
        let egress = egress_of(client, &sandbox).await?;
        let down = |state: &EgressState| {
            state
                .error_line(&sandbox.name)
                .map(|line| Failure::from_hinted(EXIT_FAILED, &line))
        };
        // No proxy: nothing to print but why.
        let Some(proxy) = egress.proxy else {
            return Err(down(&egress.state).unwrap_or_else(|| {
                Failure::new(EXIT_FAILED, format!("{} has no egress proxy", sandbox.name))
            }));
        };
        let mut signals = Signals::new()?;
        // The container log merged with the proxy's audit files, which no flood rotates away.
        let history = tokio::select! {
            history = client.egress_history(&proxy, self.tail) => match history {
                Ok(history) => history,
                Err(SessionError::Launch(ExecError::NoSuchContainer { .. })) => Default::default(),
                Err(error) => return Err(session_failure(error)),
            },
            signal = signals.recv() => return Ok(Some(signal)),
        };
        write_history(output, &history)?;
        let follow = self.follow && egress.state.is_up();
        if let Some(signal) =
            follow_proxy(client, &proxy, &history, output, follow, &mut signals).await?
        {
            return Ok(Some(signal));
        }
        // The lines are out; now whether the proxy still serves (a followed one stopped).
        let now = egress_of(client, &sandbox).await?;
        match down(&now.state) {
            Some(failure) => Err(failure),
            None => Ok(None),
        }
    }
}

/// Writes the proxy's history: its stderr, then its decision lines.
fn write_history(output: &mut dyn OutputSink, history: &EgressHistory) -> Result<(), Failure> {
    let mut text = String::new();
    for line in &history.lines {
        text.push_str(line);
        text.push('\n');
    }
    let written = output
        .write(Stream::Stderr, &history.stderr)
        .and_then(|()| output.write(Stream::Stdout, text.as_bytes()));
    if let Err(error) = written {
        return Err(Failure::new(
            EXIT_FAILED,
            format!("cannot write the log: {error}"),
        ));
    }
    Ok(())
}

/// With `follow`, follows the proxy's container log from the second of the last line of
/// `history` on, without the lines written already, until the proxy is gone; `Some(signal)`
/// when SIGINT or SIGTERM ended it, quietly.
async fn follow_proxy<P: SessionPort>(
    client: &Sandboxes<P>,
    proxy: &Sandbox,
    history: &EgressHistory,
    output: &mut dyn OutputSink,
    follow: bool,
    signals: &mut Signals,
) -> Result<Option<Interrupt>, Failure> {
    let since = history.since();
    let request = LogsRequest {
        follow,
        tail: if since.is_some() { None } else { Some(0) },
        since,
    };
    let mut unseen = Unseen::new(&history.lines, output);
    tokio::select! {
        result = async {
            if follow {
                client.logs(proxy, &request, &mut unseen).await
            } else {
                Ok(())
            }
        } => {
            match result {
                Ok(()) | Err(SessionError::Launch(ExecError::NoSuchContainer { .. })) => Ok(None),
                Err(error) => Err(session_failure(error)),
            }
        }
        // A signal is how `follow` ends: quietly.
        signal = signals.recv() => Ok(Some(signal)),
    }
}

/// The stop of `agentc stop`: every NAME resolved first (as [`sandbox_named`] reads it, running
/// or stopped), then each sandbox stopped in turn, `stopped` told of each as it is; the first
/// failure ends the step.
pub struct Stop<F> {
    /// The sandboxes.
    pub names: Vec<String>,
    /// Seconds to wait for each to stop before it is killed (the engine's default without).
    pub time: Option<u32>,
    /// Told of each sandbox once it stopped.
    pub stopped: F,
}

impl<F: FnMut(&Sandbox)> OnClient for Stop<F> {
    type Output = ();

    async fn run<P: SessionPort>(mut self, client: &Sandboxes<P>) -> Result<(), Failure> {
        for sandbox in sandboxes_named(client, &self.names).await? {
            client
                .stop(&sandbox, self.time)
                .await
                .map_err(session_failure)?;
            (self.stopped)(&sandbox);
        }
        Ok(())
    }
}

/// The start of `agentc start`: every NAME resolved first (as [`sandbox_named`] reads it,
/// running or stopped), then each sandbox started in turn (a running one left alone),
/// `started` told of each as it is; the first failure ends the step.
pub struct Start<F> {
    /// The sandboxes.
    pub names: Vec<String>,
    /// Told of each sandbox once it started.
    pub started: F,
}

impl<F: FnMut(&Sandbox)> OnClient for Start<F> {
    type Output = ();

    async fn run<P: SessionPort>(mut self, client: &Sandboxes<P>) -> Result<(), Failure> {
        for sandbox in sandboxes_named(client, &self.names).await? {
            client.start(&sandbox).await.map_err(session_failure)?;
            (self.started)(&sandbox);
        }
        Ok(())
    }
}

/// The sandboxes `names` mean, running or stopped, every one found before any is acted on (as
/// `agentc rm` checks them).
async fn sandboxes_named<C: SandboxClient>(
    client: &C,
    names: &[String],
) -> Result<Vec<Sandbox>, Failure> {
    let mut sandboxes = Vec::new();
    for name in names {
        sandboxes.push(sandbox_named(client, name, true).await?);
    }
    Ok(sandboxes)
}

#[cfg(test)]
mod tests;
