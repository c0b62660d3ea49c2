//! The docker CLI as agentc runs it: a rendered launch in the foreground (signals passed on),
//! and the queries around a launch (`docker inspect`, `docker rm`), their output captured.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use agentc_backend_common::ExecError;
use bollard::models::ContainerInspectResponse;

use super::process;

/// The engine's program: `docker`, or `podman` with `--engine podman`.
pub fn program() -> &'static str {
    agentc_backend_common::engine().program()
}

/// `rm --force`, and on Podman `--time=0` (it would otherwise wait 10 s before SIGKILL).
fn force_remove_args(id: &str) -> Vec<&str> {
    match agentc_backend_common::engine() {
        agentc_backend_common::Engine::Docker => vec!["rm", "--force", id],
        agentc_backend_common::Engine::Podman => vec!["rm", "--force", "--time=0", id],
    }
}
use super::signals::SignalShield;
use crate::shell::shell_line;

/// Runs a rendered docker argv in the foreground (stdio inherited) and returns docker's exit
/// code. SIGINT is shielded meanwhile, so Ctrl-C reaches docker (same process group), which
/// forwards it to the container or lets the TTY carry it, and its exit code comes back.
///
/// SIGTERM is shielded too and passed on to docker: a supervisor that stops agentc alone
/// stops the container through docker (which forwards it and, with `--rm`, removes it).
pub fn run_foreground(argv: &[String]) -> Result<i32, ExecError> {
    log::debug!("running {}", shell_line(argv));
    let shield = SignalShield::new(true);
    let child = process::spawn(program(), argv)?;
    process::wait_forwarding(child, || {
        // SIGINT from a terminal already reached docker (same process group); only a SIGTERM
        // aimed at agentc needs passing on.
        shield.take().filter(|signal| *signal == libc::SIGTERM)
    })
}

/// How a launch's `docker run` ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    /// docker's exit code.
    pub exit_code: i32,
    /// docker's own refusal (`docker: Error response from daemon: MESSAGE`), without its
    /// decoration, when it printed one.
    pub refusal: Option<String>,
    /// The SIGINT or SIGTERM agentc received meanwhile: the container docker created was
    /// force-removed then, as the API backend removes it.
    pub interrupted: Option<agentc_backend_common::Interrupt>,
}

/// How long docker has to end after agentc removed its container on a signal, before it is
/// killed.
const DOCKER_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs a launch's `docker run` argv in the foreground, with docker's stderr passed through a
/// relay that holds back docker's own refusal (the `docker: Error response from daemon: ...`
/// line and the `Run 'docker run --help'` line after it) so that the caller can report it
/// with a hint; it is let through when docker did not fail before the container ran. A
/// detached run's stdout (the container ID) is not printed. `secrets` are the values of the
/// argv's `--env=NAME` entries, given to docker's environment (never its argv).
///
/// A SIGINT or SIGTERM that `shield` records meanwhile ends the launch as the API backend ends
/// it, TTY or not: the container docker created (its ID read from `cid`) is force-removed,
/// which ends an attached `docker run`; docker is killed if it has not ended
/// 10 s later. (Forwarding the signal would not do: a container's PID 1 without a
/// handler ignores SIGINT and SIGTERM.)
pub fn run_launch(
    argv: &[String],
    secrets: &BTreeMap<String, String>,
    detach: bool,
    shield: &SignalShield,
    cid: &CidFile,
) -> Result<Ran, ExecError> {
    use std::io::{BufRead, Write};
    log::debug!("running {}", shell_line(argv));
    let Some((_, args)) = argv.split_first() else {
        return Err(ExecError::EmptyArgv);
    };
    let mut child = Command::new(program())
        .args(args)
        .envs(secrets)
        .stdout(if detach {
            Stdio::null()
        } else {
            Stdio::inherit()
        })
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ExecError::Spawn {
            program: program().into(),
            source,
        })?;
    let stderr = child.stderr.take().expect("stderr is piped");
    let relay = std::thread::spawn(move || {
        let mut held: Vec<String> = Vec::new();
        let mut reader = std::io::BufReader::new(stderr);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
            let text = String::from_utf8_lossy(&line).into_owned();
            if is_refusal_line(&text, !held.is_empty()) {
                held.push(text);
            } else {
                let mut out = std::io::stderr().lock();
                let _ = out.write_all(&line);
                let _ = out.flush();
            }
            line.clear();
        }
        held
    });
    let mut interrupted: Option<(agentc_backend_common::Interrupt, std::time::Instant)> = None;
    let mut removed: Option<String> = None;
    let exit_code = loop {
        if let Some(status) = child.try_wait().map_err(|source| ExecError::Wait {
            program: program().into(),
            source,
        })? {
            break process::exit_code(status);
        }
        if interrupted.is_none() {
            if let Some(signal) = shield.take().and_then(super::signals::interrupt) {
                log::debug!("{signal} received: removing the container");
                interrupted = Some((signal, std::time::Instant::now()));
            }
        }
        if let Some((_, since)) = interrupted {
            // The container, once docker has written its ID (it may be creating it still).
            if removed.is_none() {
                if let Some(id) = cid.id() {
                    remove_quietly(&id);
                    removed = Some(id);
                }
            }
            if since.elapsed() > DOCKER_GRACE {
                let _ = child.kill();
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    if interrupted.is_some() {
        // Created after the first removal, or never removed: gone now either way, and
        // only then reported removed (the daemon's own `--rm` may still be at it).
        if let Some(id) = cid.id() {
            remove_quietly(&id);
            wait_gone(&id);
        }
    }
    let held = relay.join().unwrap_or_default();
    let refusal = held
        .first()
        .map(|line| refusal_message(line))
        .filter(|_| is_refusal_status(exit_code) && interrupted.is_none());
    if refusal.is_none() && interrupted.is_none() && !held.is_empty() {
        eprint!("{}", held.concat());
    }
    Ok(Ran {
        exit_code,
        refusal,
        interrupted: interrupted.map(|(signal, _)| signal),
    })
}

/// Whether a line of `docker run`'s stderr is the daemon's refusal, or follows one (`held`:
/// a refusal line came before): agentc words these itself, and passes the others through.
pub(crate) fn is_refusal_line(text: &str, held: bool) -> bool {
    text.starts_with("docker: Error response from daemon: ")
        || (held
            && (text.trim().is_empty()
                || text.starts_with("See 'docker run --help'")
                || text.starts_with("Run 'docker run --help'")))
}

/// The daemon's refusal in the first refusal line `docker run` printed.
pub(crate) fn refusal_message(line: &str) -> String {
    line.trim()
        .trim_start_matches("docker: Error response from daemon: ")
        .trim_end_matches('.')
        .to_string()
}

/// Whether `docker run` exiting `status` after printing the daemon's refusal failed before
/// the container ran: 125, or 126 and 127 when the daemon could not start its command (not
/// found, not executable: `failed to create shim task`), which leaves the created container
/// behind. (A command that ran and exited 126 or 127 prints no refusal of the daemon.)
pub(crate) fn is_refusal_status(status: i32) -> bool {
    matches!(status, 125..=127)
}

/// A fresh path for docker's `--cidfile` (docker refuses an existing file), in a private
/// directory removed when dropped.
#[derive(Debug)]
pub struct CidFile {
    dir: std::path::PathBuf,
}

impl CidFile {
    /// A new, empty directory for the file.
    pub fn new() -> Result<CidFile, ExecError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "agentc-run-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(|source| ExecError::Terminal {
            step: "create a directory for docker's --cidfile",
            source,
        })?;
        Ok(CidFile { dir })
    }

    /// The path docker writes the container ID to.
    pub fn path(&self) -> std::path::PathBuf {
        self.dir.join("cid")
    }

    /// The ID of the container docker created, if it created one.
    pub fn id(&self) -> Option<String> {
        std::fs::read_to_string(self.path())
            .ok()
            .map(|id| id.trim().to_string())
            .filter(|id| !id.is_empty())
    }
}

impl Drop for CidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `docker rm --force ID`, output discarded, failures ignored.
pub fn remove_quietly(id: &str) {
    let _ = Command::new(program())
        .args(force_remove_args(id))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Waits (up to 10 s) until the container `id` is gone.
fn wait_gone(id: &str) {
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_secs(10) {
        let present = Command::new(program())
            .args(["container", "inspect", "--format", "{{.Id}}", id])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !present {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Runs `docker ARGS` capturing its output; its stdout, or [`ExecError::DockerFailed`] with its
/// stderr.
pub fn output(args: &[&str]) -> Result<String, ExecError> {
    let argv: Vec<String> = std::iter::once(program())
        .chain(args.iter().copied())
        .map(str::to_string)
        .collect();
    log::debug!("running {}", shell_line(&argv));
    let output = Command::new(program())
        .args(args)
        .output()
        .map_err(|source| ExecError::CannotRunDocker {
            engine: agentc_backend_common::engine(),
            source,
        })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    if let Some(error) = unreachable(&stderr) {
        return Err(error);
    }
    Err(ExecError::DockerFailed {
        command: args.first().copied().unwrap_or_default().to_string(),
        status: output.status,
        stderr,
    })
}

/// [`ExecError::Connect`] when docker's `stderr` says it could not reach the daemon at all
/// (`Cannot connect to the Docker daemon at ...`): the error, and hint, the API backend
/// reports for the same daemon.
pub fn unreachable(stderr: &str) -> Option<ExecError> {
    let error = agentc_backend_common::port::EngineError::from_text(stderr);
    (error.kind == agentc_backend_common::port::EngineErrorKind::Unavailable).then(|| {
        ExecError::Connect {
            engine: agentc_backend_common::engine(),
            message: error.detail,
        }
    })
}

/// `docker inspect --type container NAME`, read into the Engine API's type (the document is
/// the same).
pub fn inspect(name: &str) -> Result<ContainerInspectResponse, ExecError> {
    let text = output(&["inspect", "--type", "container", name])?;
    let mut found: Vec<ContainerInspectResponse> =
        agentc_backend_common::inspect::read_inspect_list(text.as_bytes()).map_err(|message| {
            ExecError::InspectUnreadable {
                name: name.to_string(),
                message,
            }
        })?;
    if found.is_empty() {
        return Err(ExecError::InspectEmpty {
            name: name.to_string(),
        });
    }
    Ok(found.swap_remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_daemon_is_the_api_backends_connect_error() {
        let said = "Cannot connect to the Docker daemon at unix:///tmp/x/docker.sock. Is the docker daemon running?";
        let error = unreachable(said).expect("a connect error");
        assert!(matches!(error, ExecError::Connect { .. }), "{error:?}");
        let text = error.to_string();
        assert!(
            text.starts_with("cannot connect to the docker daemon: Cannot connect"),
            "{text}"
        );
        assert!(text.contains("hint: is docker running?"), "{text}");
        assert!(unreachable("Error: No such container: box").is_none());
    }

    #[test]
    fn a_command_the_daemon_could_not_start_is_a_refusal() {
        for status in [125, 126, 127] {
            assert!(is_refusal_status(status), "{status}");
        }
        for status in [0, 1, 124, 128, 137] {
            assert!(!is_refusal_status(status), "{status}");
        }
    }
}
