//! The session commands, `exec`, `cp`, `port`, `logs`, `egress log`, `stop`, `start` and
//! `shell`: each reads its arguments, runs one step of [`agentc_host::session`] through the
//! backend asked for (`--backend cli|api`), so both give the same results, and prints what it
//! gives back.
//!
//! A NAME is a container name or ID from `agentc ps`, a profile file (a path holding a `/` or
//! ending in `.toml`) or a profile's name as `agentc ps` prints it (when no container has that
//! name), the last two meaning the profile's one running container; the client refuses any
//! container agentc did not create.

use std::io::IsTerminal;

use agentc_engine::launch::ProxyExecutable;
use agentc_engine::session::{ExecRequest, ExecStdin, OutputSink, ProcessStdio, Sandbox, Stream};
use agentc_host::session::{
    env_entry, shell_request, Copied, EgressLog, Exec, Logs, Ports, Side, Start, Stop, Transfer,
};

use crate::cli::{
    BackendArg, CpArgs, EgressLogArgs, EgressLogFormat, ExecArgs, LogsArgs, PortArgs, ShellArgs,
    StartArgs, StopArgs,
};
use crate::context::Failure;

pub(crate) use agentc_host::backend::OnClient;

/// Runs `step` through `backend`'s client for this process's engine, the egress proxy an image
/// of this binary ([`agentc_host::backend::on_client`]).
pub(crate) fn on_client<S: OnClient>(backend: BackendArg, step: S) -> Result<S::Output, Failure> {
    let driver = agentc_host::backend::Driver {
        // The leftovers of killed launches reaped first are said on stderr.
        reaped: crate::commands::launch::reaped(),
        ..agentc_host::backend::Driver::new(
            crate::engine(),
            backend.into(),
            ProxyExecutable::running(),
        )
    };
    agentc_host::backend::on_client(&driver, step)
}

pub use agentc_host::backend::session_failure;

pub(crate) use agentc_host::inventory::{is_profile_path, sandbox_named};

/// The exit status of a step a signal ended quietly (`--follow`): 130 or 143.
fn quiet_end(signal: Option<agentc_engine::Interrupt>) -> u8 {
    signal.map_or(0, |signal| u8::try_from(signal.exit_code()).unwrap_or(130))
}

/// Runs `agentc exec`.
pub fn exec(args: ExecArgs) -> Result<u8, Failure> {
    let mut request = ExecRequest::new(args.command);
    request.user = args.user;
    request.workdir = args.workdir;
    request.env = args.env.iter().map(|entry| env_entry(entry)).collect();
    if args.interactive {
        request.stdin = ExecStdin::Terminal;
    }
    // As `run` does: a TTY only when stdin is a terminal.
    request.tty = args.tty && std::io::stdin().is_terminal();
    let exec = Exec {
        name: args.name,
        request,
        output: &mut ProcessStdio,
    };
    on_client(args.target.backend, exec)
}

/// Runs `agentc shell`.
pub fn shell(args: ShellArgs) -> Result<u8, Failure> {
    let mut request = shell_request(args.user);
    request.tty = std::io::stdin().is_terminal();
    let exec = Exec {
        name: args.name,
        request,
        output: &mut ProcessStdio,
    };
    on_client(args.target.backend, exec)
}

/// Runs `agentc cp`: `NAME:PATH -` writes a tar stream to stdout.
pub fn cp(args: CpArgs) -> Result<u8, Failure> {
    let transfer = Transfer {
        source: Side::parse(&args.source),
        destination: Side::parse(&args.destination),
        stream: Some(Box::new(std::io::stdout())),
    };
    let copied = match on_client(args.target.backend, transfer)? {
        Copied::To(destination) => destination,
        Copied::Streamed => "stdout (a tar stream)".to_string(),
    };
    eprintln!("agentc: copied {} to {copied}", args.source);
    Ok(0)
}

/// Runs `agentc port`.
pub fn port(args: PortArgs) -> Result<u8, Failure> {
    let one = args.port.is_some();
    let ports = Ports {
        name: args.name,
        port: args.port,
    };
    for endpoint in on_client(args.target.backend, ports)? {
        if one {
            println!("{endpoint}");
        } else {
            println!(
                "{}/{} -> {endpoint}",
                endpoint.container_port,
                endpoint.protocol.as_str()
            );
        }
    }
    Ok(0)
}

/// Runs `agentc logs`.
pub fn logs(args: LogsArgs) -> Result<u8, Failure> {
    let logs = Logs {
        name: args.name,
        follow: args.follow,
        tail: args.tail,
        since: args.since,
        output: &mut ProcessStdio,
    };
    on_client(args.target.backend, logs).map(quiet_end)
}

/// Runs `agentc egress log`: the proxy's JSON lines as they are, or as a table.
pub fn egress_log(args: EgressLogArgs) -> Result<u8, Failure> {
    let mut table = TableOutput::default();
    let mut stdio = ProcessStdio;
    let output: &mut dyn OutputSink = match args.format {
        EgressLogFormat::Table => &mut table,
        EgressLogFormat::Json => &mut stdio,
    };
    let log = EgressLog {
        name: args.name,
        follow: args.follow,
        tail: args.tail,
        output,
    };
    let ended = on_client(args.target.backend, log);
    // A last row without its newline is out before the error is.
    drop(table);
    ended.map(quiet_end)
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

/// Runs `agentc stop`.
pub fn stop(args: StopArgs) -> Result<u8, Failure> {
    let stop = Stop {
        names: args.names,
        time: args.time,
        stopped: |sandbox: &Sandbox| println!("stopped {}", sandbox.name),
    };
    on_client(args.target.backend, stop).map(|()| 0)
}

/// Runs `agentc start`.
pub fn start(args: StartArgs) -> Result<u8, Failure> {
    let start = Start {
        names: args.names,
        started: |sandbox: &Sandbox| println!("started {}", sandbox.name),
    };
    on_client(args.target.backend, start).map(|()| 0)
}
