//! The session commands, `exec`, `cp`, `port`, `logs`, `egress log`, `stop`, `start` and
//! `shell`: each a short chain of [`SandboxClient`] calls, written once and run through the
//! backend asked for (`--backend cli|api`), so both give the same results.
//!
//! A NAME is a container name or ID from `agentc ps`, a profile file (a path holding a `/` or
//! ending in `.toml`) or a profile's name as `agentc ps` prints it (when no container has that
//! name), the last two meaning the profile's one running container; the client refuses any
//! container agentc did not create.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use agentc_engine::companion::state::EgressState;
use agentc_engine::launch::ProxyExecutable;
use agentc_engine::session::target::parse_port;
use agentc_engine::session::{
    parse_since, ExecRequest, ExecStdin, LogsRequest, OutputSink, ProcessStdio, Sandbox,
    SandboxClient, SandboxEgress, SessionError, Stream, EXEC_TAG_VAR,
};
use agentc_engine::session::{EgressHistory, Sandboxes, SessionPort, Unseen};
use agentc_engine::{exit_status, ExecError};
use agentc_policy::{EnvValue, EnvVar};

use crate::cli::{
    BackendArg, CpArgs, EgressLogArgs, EgressLogFormat, ExecArgs, LogsArgs, PortArgs, ShellArgs,
    StartArgs, StopArgs,
};
use crate::context::{Failure, EXIT_FAILED};

pub(crate) use agentc_host::backend::{OnClient, Signals};

/// Runs `step` through `backend`'s client for this process's engine, the egress proxy an image
/// of this binary ([`agentc_host::backend::on_client`]).
pub(crate) fn on_client<S: OnClient>(backend: BackendArg, step: S) -> Result<S::Output, Failure> {
    let driver = agentc_host::backend::Driver {
        engine: crate::engine(),
        backend: backend.into(),
        proxy: ProxyExecutable::running(),
    };
    agentc_host::backend::on_client(&driver, step)
}

pub use agentc_host::backend::session_failure;

pub(crate) use agentc_host::inventory::{is_profile_path, sandbox_named};

/// A tag unique to this exec, for [`SandboxClient::stop_tagged`].
fn exec_tag() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.subsec_nanos())
        .unwrap_or_default();
    format!("{}-{nanos}", std::process::id())
}

/// `--env NAME` (a secret by name) or `--env NAME=VALUE` (a literal).
fn env_entry(text: &str) -> EnvVar {
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

/// Runs an exec on this process's stdio; on SIGINT or SIGTERM, stops what it started in the
/// container and exits 130 or 143.
pub(crate) async fn run_exec<C: SandboxClient>(
    client: &C,
    sandbox: &Sandbox,
    mut request: ExecRequest,
) -> Result<u8, Failure> {
    let tag = exec_tag();
    request.env.push(EnvVar {
        name: EXEC_TAG_VAR.to_string(),
        value: EnvValue::Literal { value: tag.clone() },
    });
    let mut signals = Signals::new()?;
    let mut output = ProcessStdio;
    let interrupted = tokio::select! {
        result = client.exec(sandbox, &request, &mut output) => {
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
    let cleanup = match client
        .stop_tagged(sandbox, &tag, request.user.as_deref())
        .await
    {
        Ok(()) => format!("stopped the command in {}", sandbox.name),
        Err(error) => format!(
            "the command may still run in {}: {error}\n  hint: `agentc stop {}` stops the container",
            sandbox.name, sandbox.name
        ),
    };
    Err(session_failure(SessionError::Launch(
        ExecError::Interrupted {
            signal: interrupted,
            cleanup: Some(cleanup),
        },
    )))
}

struct Exec(ExecArgs);

impl OnClient for Exec {
    type Output = u8;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        let args = self.0;
        let sandbox = sandbox_named(client, &args.name, false).await?;
        let mut request = ExecRequest::new(args.command);
        request.user = args.user;
        request.workdir = args.workdir;
        request.env = args.env.iter().map(|entry| env_entry(entry)).collect();
        if args.interactive {
            request.stdin = ExecStdin::Terminal;
        }
        // As `run` does: a TTY only when stdin is a terminal.
        request.tty = args.tty && std::io::stdin().is_terminal();
        run_exec(client, &sandbox, request).await
    }
}

/// Runs `agentc exec`.
pub fn exec(args: ExecArgs) -> Result<u8, Failure> {
    on_client(args.target.backend, Exec(args))
}

struct Shell(ShellArgs);

impl OnClient for Shell {
    type Output = u8;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        let args = self.0;
        let sandbox = sandbox_named(client, &args.name, false).await?;
        let mut request = ExecRequest::new([
            "sh",
            "-c",
            "if command -v bash >/dev/null 2>&1; then exec bash; fi; exec sh",
        ]);
        request.user = args.user;
        request.stdin = ExecStdin::Terminal;
        request.tty = std::io::stdin().is_terminal();
        run_exec(client, &sandbox, request).await
    }
}

/// Runs `agentc shell`.
pub fn shell(args: ShellArgs) -> Result<u8, Failure> {
    on_client(args.target.backend, Shell(args))
}

/// One side of `agentc cp`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Side {
    Host(PathBuf),
    Container { name: String, path: String },
}

/// `NAME:PATH` when a `:` comes before any `/` (as `docker cp` reads it), a host path
/// otherwise.
fn side(text: &str) -> Side {
    match text.split_once(':') {
        Some((name, path)) if !name.is_empty() && !name.contains('/') => Side::Container {
            name: name.to_string(),
            path: path.to_string(),
        },
        _ => Side::Host(PathBuf::from(text)),
    }
}

struct Copy(CpArgs);

impl OnClient for Copy {
    type Output = u8;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        let args = self.0;
        let (source, destination) = (side(&args.source), side(&args.destination));
        let mut signals = Signals::new()?;
        // `NAME:PATH -`: the copy lands in a directory of its own first, then goes to stdout
        // as a tar stream; the directory goes when the command ends, interrupted or not.
        let to_stdout = matches!(
            (&source, &destination),
            (Side::Container { .. }, Side::Host(to)) if to.as_os_str() == "-"
        );
        let staging = if to_stdout {
            Some(staging_dir()?)
        } else {
            None
        };
        let copy = copy_between(
            client,
            &source,
            &destination,
            staging.as_ref().map(|dir| dir.path()),
        );
        tokio::select! {
            copied = copy => {
                eprintln!("agentc: copied {} to {}", args.source, copied?);
                Ok(0)
            }
            signal = signals.recv() => Err(session_failure(SessionError::Launch(ExecError::Interrupted {
                signal,
                cleanup: Some("the copy was stopped and what it had written on the host removed".to_string()),
            }))),
        }
    }
}

/// A directory of its own for `agentc cp NAME:PATH -`'s copy, removed when dropped.
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

/// Copies `source` to `destination`, one a container's path and the other a host path; from a
/// container to stdout (a tar stream) through `staging`, when given. Returns where the copy
/// went.
async fn copy_between<C: SandboxClient>(
    client: &C,
    source: &Side,
    destination: &Side,
    staging: Option<&Path>,
) -> Result<String, Failure> {
    match (source, destination) {
        (Side::Container { name, path }, Side::Host(_)) if staging.is_some() => {
            let sandbox = sandbox_named(client, name, true).await?;
            let staging = staging.unwrap_or(Path::new("."));
            let report = client
                .download(&sandbox, path, staging)
                .await
                .map_err(session_failure)?;
            let landing = PathBuf::from(&report.destination);
            tokio::task::spawn_blocking(move || write_tar(&landing))
                .await
                .map_err(|error| Failure::new(EXIT_FAILED, error.to_string()))??;
            Ok("stdout (a tar stream)".to_string())
        }
        (Side::Host(from), Side::Container { name, path }) => {
            let sandbox = sandbox_named(client, name, true).await?;
            let report = client
                .upload(&sandbox, from, path)
                .await
                .map_err(session_failure)?;
            Ok(format!("{}:{}", sandbox.name, report.destination))
        }
        (Side::Container { name, path }, Side::Host(to)) => {
            let sandbox = sandbox_named(client, name, true).await?;
            let report = client
                .download(&sandbox, path, to)
                .await
                .map_err(session_failure)?;
            Ok(report.destination)
        }
        _ => Err(Failure::usage(
            "one side of `agentc cp` must be NAME:PATH and the other a host path\n  hint: agentc cp ./file NAME:/tmp, or agentc cp NAME:/tmp/file .",
        )),
    }
}

/// `agentc cp NAME:PATH -`: writes the copied tree at `landing` to stdout as one tar stream
/// whose top entry has the source's name, as `docker cp NAME:PATH -` does (modes and times
/// kept; owners written as root).
fn write_tar(landing: &Path) -> Result<(), Failure> {
    let name = landing
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| ".".to_string());
    let stdout = std::io::stdout().lock();
    agentc_engine::session::tarball::pack(landing, &name, std::io::BufWriter::new(stdout))
        .map_err(session_failure)
}

/// Runs `agentc cp`.
pub fn cp(args: CpArgs) -> Result<u8, Failure> {
    on_client(args.target.backend, Copy(args))
}

struct Port(PortArgs);

impl OnClient for Port {
    type Output = u8;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        let args = self.0;
        let port = args
            .port
            .as_deref()
            .map(parse_port)
            .transpose()
            .map_err(session_failure)?;
        let sandbox = sandbox_named(client, &args.name, false).await?;
        match port {
            Some((port, protocol)) => {
                let endpoint = client
                    .endpoint(&sandbox, port, protocol)
                    .await
                    .map_err(session_failure)?;
                println!("{endpoint}");
            }
            None => {
                for endpoint in client.endpoints(&sandbox).await.map_err(session_failure)? {
                    println!(
                        "{}/{} -> {endpoint}",
                        endpoint.container_port,
                        endpoint.protocol.as_str()
                    );
                }
            }
        }
        Ok(0)
    }
}

/// Runs `agentc port`.
pub fn port(args: PortArgs) -> Result<u8, Failure> {
    on_client(args.target.backend, Port(args))
}

struct Logs(LogsArgs);

impl OnClient for Logs {
    type Output = u8;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        let args = self.0;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|since| since.as_secs() as i64)
            .unwrap_or_default();
        let since = args
            .since
            .as_deref()
            .map(|text| parse_since(text, now))
            .transpose()
            .map_err(session_failure)?;
        let sandbox = sandbox_named(client, &args.name, true).await?;
        let request = LogsRequest {
            follow: args.follow,
            tail: args.tail,
            since,
        };
        let mut signals = Signals::new()?;
        let mut output = ProcessStdio;
        tokio::select! {
            result = client.logs(&sandbox, &request, &mut output) => {
                result.map(|()| 0).map_err(session_failure)
            }
            // Ctrl-C is how `--follow` ends: quietly.
            signal = signals.recv() => Ok(u8::try_from(signal.exit_code()).unwrap_or(130)),
        }
    }
}

/// Runs `agentc logs`.
pub fn logs(args: LogsArgs) -> Result<u8, Failure> {
    on_client(args.target.backend, Logs(args))
}

struct EgressLog(EgressLogArgs);

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
                    "{} is not behind agentc's egress proxy, so it has no egress log\n  hint: \
                     only an allowlist enforced outside the sandbox (egress.enforce = \
                     \"outside\", the default with egress hosts) runs the proxy; `agentc logs \
                     {}` prints the container's own output",
                    sandbox.name, sandbox.name
                ),
            )
        })
}

impl OnClient for EgressLog {
    type Output = u8;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        let args = self.0;
        let sandbox = sandbox_named(client, &args.name, true).await?;
        let egress = egress_of(client, &sandbox).await?;
        let down = |state: &EgressState| {
            state
                .error_line(&sandbox.name)
                .map(|line| Failure::new(EXIT_FAILED, line))
        };
        // No proxy: nothing to print but why.
        let Some(proxy) = egress.proxy else {
            return Err(down(&egress.state).unwrap_or_else(|| {
                Failure::new(EXIT_FAILED, format!("{} has no egress proxy", sandbox.name))
            }));
        };
        let mut signals = Signals::new()?;
        let mut table = TableOutput::default();
        let mut stdio = ProcessStdio;
        let output: &mut dyn OutputSink = match args.format {
            EgressLogFormat::Table => &mut table,
            EgressLogFormat::Json => &mut stdio,
        };
        // The container log merged with the proxy's audit files, which no flood rotates away.
        let history = tokio::select! {
            history = client.egress_history(&proxy, args.tail) => match history {
                Ok(history) => history,
                Err(SessionError::Launch(ExecError::NoSuchContainer { .. })) => Default::default(),
                Err(error) => return Err(session_failure(error)),
            },
            signal = signals.recv() => return Ok(u8::try_from(signal.exit_code()).unwrap_or(130)),
        };
        write_history(output, &history)?;
        let follow = args.follow && egress.state.is_up();
        if let Some(code) =
            follow_proxy(client, &proxy, &history, output, follow, &mut signals).await?
        {
            return Ok(code);
        }
        // The lines are out; now whether the proxy still serves (a followed one stopped).
        let now = egress_of(client, &sandbox).await?;
        match down(&now.state) {
            Some(failure) => Err(failure),
            None => Ok(0),
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
/// `history` on, without the lines printed already, until the proxy is gone; `Some(status)`
/// when Ctrl-C (or SIGTERM) ended it, quietly.
async fn follow_proxy<P: SessionPort>(
    client: &Sandboxes<P>,
    proxy: &Sandbox,
    history: &EgressHistory,
    output: &mut dyn OutputSink,
    follow: bool,
    signals: &mut Signals,
) -> Result<Option<u8>, Failure> {
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
        // Ctrl-C is how `--follow` ends: quietly.
        signal = signals.recv() => Ok(Some(u8::try_from(signal.exit_code()).unwrap_or(130))),
    }
}

/// The proxy's log lines as table rows on stdout ([`agentc_egress::log_table`]), a row as soon
/// as its line is whole; stderr (the proxy's start line) passes through.
#[derive(Default)]
struct TableOutput {
    /// The part of a line not yet ended by a newline.
    partial: Vec<u8>,
    /// Whether the header is out.
    started: bool,
}

impl OutputSink for TableOutput {
    fn write(&mut self, stream: Stream, bytes: &[u8]) -> std::io::Result<()> {
        if stream == Stream::Stderr {
            return ProcessStdio.write(stream, bytes);
        }
        self.partial.extend_from_slice(bytes);
        let mut rows = String::new();
        if !self.started {
            self.started = true;
            rows.push_str(&agentc_egress::log_table::header());
            rows.push('\n');
        }
        while let Some(end) = self.partial.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line[..end]);
            if !line.trim().is_empty() {
                rows.push_str(&agentc_egress::log_table::row(line.trim_end_matches('\r')));
                rows.push('\n');
            }
        }
        ProcessStdio.write(Stream::Stdout, rows.as_bytes())
    }
}

impl Drop for TableOutput {
    /// A last line without its newline (a log cut short) is still a row.
    fn drop(&mut self) {
        let rest = String::from_utf8_lossy(&self.partial).trim().to_string();
        if !rest.is_empty() {
            let row = format!("{}\n", agentc_egress::log_table::row(&rest));
            let _ = ProcessStdio.write(Stream::Stdout, row.as_bytes());
        }
    }
}

/// Runs `agentc egress log`.
pub fn egress_log(args: EgressLogArgs) -> Result<u8, Failure> {
    on_client(args.target.backend, EgressLog(args))
}

struct Stop(StopArgs);

impl OnClient for Stop {
    type Output = u8;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        let args = self.0;
        // Every name is checked before anything is stopped, as `agentc rm` does.
        let mut sandboxes = Vec::new();
        for name in &args.names {
            sandboxes.push(sandbox_named(client, name, true).await?);
        }
        for sandbox in sandboxes {
            client
                .stop(&sandbox, args.time)
                .await
                .map_err(session_failure)?;
            println!("stopped {}", sandbox.name);
        }
        Ok(0)
    }
}

/// Runs `agentc stop`.
pub fn stop(args: StopArgs) -> Result<u8, Failure> {
    on_client(args.target.backend, Stop(args))
}

struct Start(StartArgs);

impl OnClient for Start {
    type Output = u8;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        let args = self.0;
        let mut sandboxes = Vec::new();
        for name in &args.names {
            sandboxes.push(sandbox_named(client, name, true).await?);
        }
        for sandbox in sandboxes {
            client.start(&sandbox).await.map_err(session_failure)?;
            println!("started {}", sandbox.name);
        }
        Ok(0)
    }
}

/// Runs `agentc start`.
pub fn start(args: StartArgs) -> Result<u8, Failure> {
    on_client(args.target.backend, Start(args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cp_sides_are_read_as_docker_cp_reads_them() {
        assert_eq!(
            side("box:/tmp/x"),
            Side::Container {
                name: "box".into(),
                path: "/tmp/x".into()
            }
        );
        assert_eq!(side("./a:b"), Side::Host(PathBuf::from("./a:b")));
        assert_eq!(side("/abs/file"), Side::Host(PathBuf::from("/abs/file")));
        assert_eq!(side(":x"), Side::Host(PathBuf::from(":x")));
    }

    #[test]
    fn env_entries_are_literals_or_secrets_by_name() {
        assert_eq!(
            env_entry("A=b=c").value,
            EnvValue::Literal {
                value: "b=c".into()
            }
        );
        assert_eq!(
            env_entry("TOKEN").value,
            EnvValue::Secret { required: true }
        );
        assert!(is_profile_path("./p.toml") && is_profile_path("p.toml"));
        assert!(!is_profile_path("agentc-sandbox-dev-1000-p"));
    }
}
