//! The session's runner: one shell that stays running in a sandbox (per session and user) and
//! runs the session's plain execs one after another, so that a command costs a few
//! milliseconds instead of the engine's exec start (about 50 ms on Docker 20.10, where a
//! harness's agent runs hundreds of commands).
//!
//! It is one exec of `sh -c RUNNER` through the port's [`exec_duplex`]: the server writes a
//! header line `ID LENGTH` and a script of that length (the command with its directory and
//! environment, the exec tag [`EXEC_TAG_VAR`] among them); the runner runs it with stdin from
//! `/dev/null`, its output into files of its own in the sandbox's `/tmp`, and answers `AGENTC ID
//! STATUS OUTLEN ERRLEN` followed by the output and the errors. A command stopped (its timeout,
//! `cancel`) is stopped by its tag as a plain exec is; its answer is read and dropped. A runner
//! that cannot start, dies, or answers out of step is not used again: the command it was given is
//! reported failed (it may have run), later ones go through plain execs or a new runner. A
//! command finds a free runner or starts one (up to [`MAX_RUNNERS`] a session and user); with
//! every one busy it goes through a plain exec: commands run side by side as plain execs do.
//!
//! Only an exec without streaming or a TTY, and with at most [`MAX_STDIN`] bytes of stdin,
//! takes it (what a harness's tool call and a small file's write are); it needs `sh`,
//! `mktemp`, `head`, `wc`, `cat` and `printf` in the image and a writable `/tmp`. Unlike a
//! plain exec, a program that is not found exits 127 with the shell's message (not 126), and
//! the command's output waits in `/tmp` until it ends.
//!
//! [`exec_duplex`]: agentc_engine::session::SessionPort::exec_duplex

use std::collections::BTreeMap;

use agentc_engine::session::{ExecRequest, OutputSink, Sandbox, SessionPort, Stream, EXEC_TAG_VAR};
use agentc_policy::Hinted;
use tokio::sync::{mpsc, Mutex};

/// The runner's loop: a header `ID LENGTH`, then the script; the answer's header, the output,
/// the errors. Its files live in a directory of its own, removed when it ends.
const RUNNER: &str = "d=$(mktemp -d /tmp/.agentc-runner.XXXXXX) || exit 97; trap 'rm -rf \"$d\"' EXIT; echo AGENTC ready; while IFS=' ' read -r id len; do head -c \"$len\" > \"$d/s\" || exit 98; ( sh \"$d/s\" ) </dev/null >\"$d/o\" 2>\"$d/e\"; rc=$?; printf 'AGENTC %s %s %s %s\\n' \"$id\" \"$rc\" $(wc -c <\"$d/o\") $(wc -c <\"$d/e\"); cat \"$d/o\" \"$d/e\"; done";

/// What a command run by the runner gave.
pub struct RunOutput {
    /// Its exit status.
    pub exit_code: i64,
    /// Its stdout.
    pub stdout: Vec<u8>,
    /// Its stderr.
    pub stderr: Vec<u8>,
}

/// Why the runner could not give a command's result.
pub enum RunFailure {
    /// The runner is gone or out of step before the command was sent: it did not run.
    NotSent,
    /// The runner went away after the command was sent: it may have run.
    Lost,
}

/// The runner's stdout, as it arrives, into a channel the command's reader takes it from.
struct Forward(mpsc::UnboundedSender<Vec<u8>>);

impl OutputSink for Forward {
    fn write(&mut self, stream: Stream, bytes: &[u8]) -> std::io::Result<()> {
        match stream {
            Stream::Stdout => {
                let _ = self.0.send(bytes.to_vec());
            }
            Stream::Stderr => log::debug!("runner: {}", String::from_utf8_lossy(bytes).trim()),
        }
        Ok(())
    }
}

/// The server's side of one runner: its stdin, its stdout so far, and the lock that gives it
/// to one command at a time (a busy runner is passed over: the server starts another, or
/// the command goes through a plain exec).
pub struct Runner {
    io: Mutex<Io>,
}

struct Io {
    input: mpsc::Sender<Vec<u8>>,
    output: mpsc::UnboundedReceiver<Vec<u8>>,
    buffer: Vec<u8>,
    next: u64,
    ready: bool,
    broken: bool,
}

/// A runner taken for one command ([`Runner::take`]).
pub struct Turn<'a> {
    io: tokio::sync::MutexGuard<'a, Io>,
}

impl Runner {
    /// A runner for `sandbox` as `user`: the handle, and the exec that must be polled for it
    /// to run (until its handle is dropped, which closes its stdin).
    pub fn start<'a, P: SessionPort>(
        port: &'a P,
        sandbox: Sandbox,
        user: Option<String>,
        env: BTreeMap<String, String>,
    ) -> (Runner, impl std::future::Future<Output = ()> + 'a) {
        let (input, chunks) = mpsc::channel(4);
        let (forward, output) = mpsc::unbounded_channel();
        let runner = Runner {
            io: Mutex::new(Io {
                input,
                output,
                buffer: Vec::new(),
                next: 1,
                ready: false,
                broken: false,
            }),
        };
        let exec = async move {
            let mut request = ExecRequest::new(["sh", "-c", RUNNER]);
            request.user = user;
            let mut sink = Forward(forward);
            match port
                .exec_duplex(&sandbox, &request, &env, chunks, &mut sink)
                .await
            {
                Ok(code) => log::debug!("runner in {} ended: {code}", sandbox.name),
                Err(error) => log::debug!(
                    "runner in {} failed: {error}",
                    sandbox.name,
                    error = error.with_hint()
                ),
            }
        };
        (runner, exec)
    }

    /// Whether the runner is known to be unusable (a busy one is not known to be).
    pub fn is_broken(&self) -> bool {
        self.io.try_lock().map(|io| io.broken).unwrap_or(false)
    }

    /// The runner for one command, when it is free and not broken.
    pub fn take(&self) -> Option<Turn<'_>> {
        let io = self.io.try_lock().ok()?;
        (!io.broken).then_some(Turn { io })
    }
}

impl Turn<'_> {
    /// Waits for a new runner to say it started (with its `/tmp`); `false` when it did not.
    pub async fn ready(&mut self) -> bool {
        if !self.io.ready {
            match self.io.line().await {
                Some(line) if line == "AGENTC ready" => self.io.ready = true,
                _ => self.io.broken = true,
            }
        }
        self.io.ready
    }

    /// Sends `script` (a shell script: the command with its directory and environment); its
    /// number, or [`RunFailure::NotSent`].
    pub async fn send(&mut self, script: &str) -> Result<u64, RunFailure> {
        let id = self.io.next;
        self.io.next += 1;
        let mut message = format!("{id} {}\n", script.len()).into_bytes();
        message.extend_from_slice(script.as_bytes());
        if self.io.input.send(message).await.is_err() {
            self.io.broken = true;
            return Err(RunFailure::NotSent);
        }
        Ok(id)
    }

    /// The answer to command `id`, or [`RunFailure::Lost`] (the runner is then broken). A turn
    /// given up before its answer leaves the runner out of step: the next turn finds the
    /// answer it reads not its own, and breaks it.
    pub async fn answer(&mut self, id: u64) -> Result<RunOutput, RunFailure> {
        match self.io.answer(id).await {
            Some(output) => Ok(output),
            None => {
                self.io.broken = true;
                Err(RunFailure::Lost)
            }
        }
    }
}

impl Io {
    /// More of the runner's stdout; `false` when it ended.
    async fn more(&mut self) -> bool {
        match self.output.recv().await {
            Some(bytes) => {
                self.buffer.extend_from_slice(&bytes);
                true
            }
            None => false,
        }
    }

    /// The next line of the runner's stdout, without its newline.
    async fn line(&mut self) -> Option<String> {
        loop {
            if let Some(end) = self.buffer.iter().position(|&byte| byte == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                return Some(String::from_utf8_lossy(&line[..end]).into_owned());
            }
            if !self.more().await {
                return None;
            }
        }
    }

    /// The next `count` bytes of the runner's stdout.
    async fn bytes(&mut self, count: usize) -> Option<Vec<u8>> {
        while self.buffer.len() < count {
            if !self.more().await {
                return None;
            }
        }
        Some(self.buffer.drain(..count).collect())
    }

    /// The answer to command `id`: `None` when the runner ended or answered out of step.
    async fn answer(&mut self, id: u64) -> Option<RunOutput> {
        let line = self.line().await?;
        let fields: Vec<&str> = line.split_ascii_whitespace().collect();
        let [marker, answered, status, out, err] = fields.as_slice() else {
            return None;
        };
        if *marker != "AGENTC" || answered.parse::<u64>().ok()? != id {
            return None;
        }
        let exit_code = status.parse::<i64>().ok()?;
        let (out, err) = (out.parse::<usize>().ok()?, err.parse::<usize>().ok()?);
        let stdout = self.bytes(out).await?;
        let stderr = self.bytes(err).await?;
        Some(RunOutput {
            exit_code,
            stdout,
            stderr,
        })
    }
}

/// A shell word: `text` in single quotes, its own quotes escaped.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The most runners a session keeps for one user: as many commands run side by side through
/// them; more at once go through plain execs.
pub const MAX_RUNNERS: usize = 4;

/// The most stdin a command run by the runner takes (written into its script); a command
/// with more goes through a plain exec.
pub const MAX_STDIN: usize = 48 * 1024;

/// `bytes` as a `printf` format in single quotes that writes them back: printable ASCII as it
/// is, `%` doubled, anything else (the quote, the backslash, control and non-ASCII bytes) as
/// an octal escape.
fn printf_format(bytes: &[u8]) -> String {
    let mut format = String::with_capacity(bytes.len() + 2);
    format.push('\'');
    for &byte in bytes {
        match byte {
            b'%' => format.push_str("%%"),
            b'\'' | b'\\' => format.push_str(&format!("\\{byte:03o}")),
            0x20..=0x7e => format.push(char::from(byte)),
            _ => format.push_str(&format!("\\{byte:03o}")),
        }
    }
    format.push('\'');
    format
}

/// The script that runs `command` in `cwd` with `env` (and the exec tag) as a plain exec would:
/// the program replaces the script's shell, so its exit status is the script's; with `stdin`
/// (at most [`MAX_STDIN`] bytes), it reads them from a `printf` through a pipe.
pub fn script(
    command: &[String],
    cwd: Option<&str>,
    env: &[(String, String)],
    tag: &str,
    stdin: Option<&[u8]>,
) -> String {
    let mut script = String::new();
    if let Some(cwd) = cwd {
        script.push_str(&format!("cd {} || exit 126\n", quote(cwd)));
    }
    for (name, value) in env {
        script.push_str(&format!("export {name}={}\n", quote(value)));
    }
    script.push_str(&format!("export {EXEC_TAG_VAR}={}\n", quote(tag)));
    let words: Vec<String> = command.iter().map(|word| quote(word)).collect();
    match stdin {
        Some(bytes) => script.push_str(&format!(
            "printf {} | {}\n",
            printf_format(bytes),
            words.join(" ")
        )),
        None => script.push_str(&format!("exec {}\n", words.join(" "))),
    }
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_becomes_a_printf_of_its_bytes() {
        assert_eq!(
            printf_format(b"a%b'c\\d\n\x00\xff"),
            "'a%%b\\047c\\134d\\012\\000\\377'"
        );
        let script = script(&["cat".into()], None, &[], "t", Some(b"x"));
        assert!(script.ends_with("printf 'x' | 'cat'\n"), "{script}");
    }

    #[test]
    fn a_script_quotes_every_word_and_value() {
        let script = script(
            &["sh".into(), "-c".into(), "echo 'it''s' $HOME".into()],
            Some("/tmp/a dir"),
            &[("MODE".into(), "a'b c".into())],
            "t-1",
            None,
        );
        assert_eq!(
            script,
            "cd '/tmp/a dir' || exit 126\nexport MODE='a'\\''b c'\nexport AGENTC_EXEC='t-1'\nexec 'sh' '-c' 'echo '\\''it'\\'''\\''s'\\'' $HOME'\n"
        );
    }
}
