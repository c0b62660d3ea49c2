//! The values a session passes: the sandbox handle, exec requests, output sinks, log requests,
//! endpoints and the report of a deletion.

use std::fmt;
use std::io::Write;

use agentc_policy::{EnvValue, EnvVar, Protocol};

use super::error::SessionError;

/// A container agentc created (it carries the `io.agentc.profile` label), found by name or ID
/// or created by [`super::SandboxClient::create`]. A plain handle: every operation asks the
/// daemon afresh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// The full container ID.
    pub id: String,
    /// The container's name, without the leading `/`.
    pub name: String,
    /// Its `io.agentc.profile` label.
    pub profile: String,
}

/// A sandbox created from a profile ([`super::create_with_findings`]), with its launch's
/// findings: what `agentc run` warns of and `agentc explain` lists (a custom profile without
/// `[egress]` reaches any host: a `high` one).
#[derive(Debug, Clone)]
pub struct Created {
    /// The sandbox.
    pub sandbox: Sandbox,
    /// The launch's findings, every severity ([`agentc_policy::findings`]).
    pub findings: Vec<agentc_policy::Finding>,
}

/// What the executed command reads on stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecStdin {
    /// Nothing: stdin is closed.
    Null,
    /// These bytes, then end of file.
    Bytes(Vec<u8>),
    /// This process's stdin (with `tty`, the local terminal in raw mode, its size followed).
    Terminal,
}

/// A command to run in a running sandbox (`docker exec`, `POST /containers/{id}/exec`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// The program and its arguments; not empty.
    pub command: Vec<String>,
    /// The user (`name`, `uid` or `uid:gid`); `None` keeps the container's.
    pub user: Option<String>,
    /// The working directory; `None` keeps the container's.
    pub workdir: Option<String>,
    /// Environment entries: literals, or secrets passed by name from the client's environment.
    pub env: Vec<EnvVar>,
    /// What the command reads.
    pub stdin: ExecStdin,
    /// Allocate a pseudo-TTY (output then arrives as one stream, on stdout).
    pub tty: bool,
}

impl ExecRequest {
    /// A command with closed stdin, no TTY, and the container's user, directory and
    /// environment.
    pub fn new<I, S>(command: I) -> ExecRequest
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ExecRequest {
            command: command.into_iter().map(Into::into).collect(),
            user: None,
            workdir: None,
            env: Vec::new(),
            stdin: ExecStdin::Null,
            tty: false,
        }
    }

    /// Refuses what neither backend can carry: an empty command, a NUL byte anywhere, an
    /// empty user or directory, an invalid variable name, a literal value holding a NUL.
    pub fn check(&self) -> Result<(), SessionError> {
        let nul = |text: &str| text.contains('\0');
        if self.command.is_empty() {
            return Err(SessionError::invalid(
                "exec needs a command",
                "give the command after `--`, such as `agentc exec NAME -- ls /`",
            ));
        }
        if self.command.iter().any(|arg| nul(arg)) {
            return Err(SessionError::invalid(
                "a command argument contains a NUL byte",
                "remove the NUL byte: a process argument cannot carry one",
            ));
        }
        for (what, value) in [("--user", &self.user), ("--workdir", &self.workdir)] {
            if let Some(value) = value {
                if value.is_empty() || nul(value) || value.starts_with('-') {
                    return Err(SessionError::invalid(
                        format!("{what} {value:?} is empty, holds a NUL byte or starts with '-'"),
                        "give a user such as 1000 or 1000:1000, and an absolute directory",
                    ));
                }
            }
        }
        for var in &self.env {
            let valid_name =
                var.name.chars().enumerate().all(|(i, c)| {
                    c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())
                }) && !var.name.is_empty();
            let literal_nul = matches!(&var.value, EnvValue::Literal { value } if nul(value));
            if !valid_name || literal_nul {
                return Err(SessionError::invalid(
                    format!("environment entry {:?} is not NAME or NAME=VALUE", var.name),
                    "names are letters, digits and _, not starting with a digit; values hold no NUL byte",
                ));
            }
        }
        Ok(())
    }
}

/// Which of a command's streams a chunk of output belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output (all of a TTY's output).
    Stdout,
    /// Standard error.
    Stderr,
}

/// Where the output of an exec or of logs goes, chunk by chunk, as it arrives.
pub trait OutputSink: Send {
    /// Takes one chunk.
    fn write(&mut self, stream: Stream, bytes: &[u8]) -> std::io::Result<()>;

    /// Whether this sink is this process's own stdout and stderr, which a backend may hand
    /// to a child process directly (the docker CLI then writes to them itself).
    fn is_process_stdio(&self) -> bool {
        false
    }
}

/// An [`OutputSink`] that keeps everything in memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// Everything written on stdout.
    pub stdout: Vec<u8>,
    /// Everything written on stderr.
    pub stderr: Vec<u8>,
}

impl OutputSink for Captured {
    fn write(&mut self, stream: Stream, bytes: &[u8]) -> std::io::Result<()> {
        match stream {
            Stream::Stdout => self.stdout.extend_from_slice(bytes),
            Stream::Stderr => self.stderr.extend_from_slice(bytes),
        }
        Ok(())
    }
}

/// An [`OutputSink`] writing to this process's stdout and stderr, flushed chunk by chunk.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessStdio;

impl OutputSink for ProcessStdio {
    fn write(&mut self, stream: Stream, bytes: &[u8]) -> std::io::Result<()> {
        match stream {
            Stream::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(bytes)?;
                out.flush()
            }
            Stream::Stderr => {
                let mut err = std::io::stderr().lock();
                err.write_all(bytes)?;
                err.flush()
            }
        }
    }

    fn is_process_stdio(&self) -> bool {
        true
    }
}

/// A finished command's captured output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// The command's exit code (126: could not be run, 127: not found, 128 + N: signal N).
    pub exit_code: i64,
    /// Its stdout.
    pub stdout: Vec<u8>,
    /// Its stderr.
    pub stderr: Vec<u8>,
}

/// Which logs to read (`docker logs`, `GET /containers/{id}/logs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogsRequest {
    /// Keep streaming new output until the container stops (or the caller stops waiting).
    pub follow: bool,
    /// Only the last N lines.
    pub tail: Option<u64>,
    /// Only output since this Unix time in seconds (see [`parse_since`]).
    pub since: Option<i64>,
}

/// Reads `--since`: a Unix time in seconds, or a duration before `now` (`30s`, `10m`, `2h`,
/// `1d`). Both backends receive the Unix time, so they select the same lines.
pub fn parse_since(text: &str, now: i64) -> Result<i64, SessionError> {
    let bad = || {
        SessionError::invalid(
            format!("--since {text:?} is neither a Unix time nor a duration"),
            "give seconds since the epoch, or a duration such as 30s, 10m, 2h or 1d",
        )
    };
    let text = text.trim();
    if let Ok(seconds) = text.parse::<i64>() {
        return if seconds >= 0 {
            Ok(seconds)
        } else {
            Err(bad())
        };
    }
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: i64 = number.parse().map_err(|_| bad())?;
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    number
        .checked_mul(scale)
        .and_then(|ago| now.checked_sub(ago))
        .filter(|since| *since >= 0)
        .ok_or_else(bad)
}

/// Where a container port is reachable from the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The host: `127.0.0.1` for a published port, the container's address on its named
    /// network otherwise (IPv6 without brackets).
    pub host: String,
    /// The port to connect to.
    pub port: u16,
    /// The container port it leads to.
    pub container_port: u16,
    /// Its protocol.
    pub protocol: Protocol,
    /// The named network whose address this is; `None` for a port published on the host.
    pub network: Option<String>,
}

impl fmt::Display for Endpoint {
    /// `HOST:PORT`, an IPv6 host in brackets.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(formatter, "[{}]:{}", self.host, self.port)
        } else {
            write!(formatter, "{}:{}", self.host, self.port)
        }
    }
}

/// What a best-effort deletion did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteReport {
    /// The container existed and is gone now.
    pub removed: bool,
    /// What could not be removed, and why; empty when nothing is left.
    pub left: Vec<String>,
}

/// What a path in the container is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// A directory.
    Directory,
    /// Anything else that exists (a file, a link).
    Other,
    /// Nothing.
    Missing,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_unix_times_and_durations() {
        assert_eq!(parse_since("1700000000", 5).unwrap(), 1_700_000_000);
        assert_eq!(parse_since("10m", 1000).unwrap(), 400);
        assert_eq!(parse_since("2h", 10_000).unwrap(), 2800);
        assert!(parse_since("10x", 1000).is_err());
        assert!(parse_since("-5", 1000).is_err());
        assert!(parse_since("1d", 10).is_err());
    }

    #[test]
    fn requests_that_no_backend_can_carry_are_refused() {
        assert!(ExecRequest::new(["true"]).check().is_ok());
        assert!(ExecRequest::new(Vec::<String>::new()).check().is_err());
        assert!(ExecRequest::new(["a\0b"]).check().is_err());
        let mut request = ExecRequest::new(["true"]);
        request.user = Some("--privileged".into());
        assert!(request.check().is_err());
        let mut request = ExecRequest::new(["true"]);
        request.env.push(EnvVar {
            name: "A=B".into(),
            value: EnvValue::Secret { required: true },
        });
        assert_eq!(request.check().unwrap_err().exit_code(), 2);
    }

    #[test]
    fn endpoints_print_ipv6_in_brackets() {
        let endpoint = Endpoint {
            host: "fd00::5".into(),
            port: 8080,
            container_port: 8080,
            protocol: Protocol::Tcp,
            network: Some("net".into()),
        };
        assert_eq!(endpoint.to_string(), "[fd00::5]:8080");
    }
}

/// A container [`super::SandboxClient::list_labelled`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its handle.
    pub sandbox: Sandbox,
    /// The daemon's state: `running`, `exited`, `created`, ...
    pub state: String,
    /// Its labels.
    pub labels: std::collections::BTreeMap<String, String>,
}

/// What a claim needs of an image: its ID (part of the pool key) and the entrypoint and
/// command it runs when a launch keeps them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImageFacts {
    /// The image ID (`sha256:...`).
    pub id: String,
    /// `Config.Entrypoint`.
    pub entrypoint: Vec<String>,
    /// `Config.Cmd`.
    pub cmd: Vec<String>,
}
