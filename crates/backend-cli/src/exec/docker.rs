//! The docker CLI as agentc runs it from blocking code: a rendered `build` or `apply` in the
//! foreground (signals passed on), the queries around it (`docker info`, `docker inspect`),
//! their output captured, and what a launch's `docker run` leaves to read (its refusal lines,
//! the `--cidfile`).

use std::collections::BTreeMap;
use std::process::Command;

use agentc_engine::{Engine, ExecError};

use super::process;
use super::signals::SignalShield;
use crate::shell::shell_line;

/// Runs a rendered docker argv in the foreground (stdio inherited) and returns docker's exit
/// code. SIGINT is shielded meanwhile, so Ctrl-C reaches docker (same process group), which
/// forwards it to the container or lets the TTY carry it, and its exit code comes back.
///
/// SIGTERM is shielded too and passed on to docker: a supervisor that stops agentc alone
/// stops the container through docker (which forwards it and, with `--rm`, removes it).
///
/// Docker runs with `env` on top of agentc's environment (where the caller's engine is).
pub fn run_foreground(
    engine: Engine,
    env: &BTreeMap<String, String>,
    argv: &[String],
) -> Result<i32, ExecError> {
    log::debug!("running {}", shell_line(argv));
    let shield = SignalShield::new(true);
    let child = process::spawn(engine.program(), env, argv)?;
    process::wait_forwarding(child, || {
        // SIGINT from a terminal already reached docker (same process group); only a SIGTERM
        // aimed at agentc needs passing on.
        shield.take().filter(|signal| *signal == libc::SIGTERM)
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

/// How the `podman` command starts the line of its own refusal on stderr.
pub(crate) const PODMAN_ERROR: &str = "Error: ";

/// A `docker run` that failed before its container ran, as the launch's error: the engine's
/// `message`, the step it refused named by whether it had `created` the container (it then
/// refused the start). Without a refusal agentc could read, Podman's own failure (exit 125,
/// its `Error:` line passed through) still reads as one.
pub(crate) fn launch_refused(
    engine: Engine,
    exit_code: i32,
    refusal: Option<String>,
    created: bool,
) -> Option<ExecError> {
    let message = refusal.or_else(|| {
        (engine == Engine::Podman && exit_code == 125)
            .then(|| "podman failed before the container ran (its error is above)".to_string())
    })?;
    Some(ExecError::Refused {
        engine,
        step: if created {
            "start the container"
        } else {
            "create the container"
        },
        refusal: agentc_engine::daemon_text::refusal(&message),
        message,
    })
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

/// Runs `ENGINE ARGS` (`docker` or `podman`) with `env` on top of agentc's environment (where
/// the caller's engine is: `DOCKER_HOST`, `CONTAINER_HOST`, the docker context), capturing its
/// output; its stdout, or [`ExecError::DockerFailed`] with its stderr.
pub fn output(
    engine: Engine,
    env: &BTreeMap<String, String>,
    args: &[&str],
) -> Result<String, ExecError> {
    let argv: Vec<String> = std::iter::once(engine.program())
        .chain(args.iter().copied())
        .map(str::to_string)
        .collect();
    log::debug!("running {}", shell_line(&argv));
    let output = Command::new(engine.program())
        .args(args)
        .envs(env)
        .output()
        .map_err(|source| ExecError::CannotRunDocker { engine, source })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    if let Some(error) = unreachable(engine, &stderr) {
        return Err(error);
    }
    Err(ExecError::DockerFailed {
        engine,
        command: args.first().copied().unwrap_or_default().to_string(),
        status: output.status,
        stderr,
    })
}

/// [`ExecError::Connect`] when `engine`'s command line said on `stderr` that it could not
/// reach the daemon at all (`Cannot connect to the Docker daemon at ...`): the error, and
/// hint, the API backend reports for the same daemon.
pub fn unreachable(engine: Engine, stderr: &str) -> Option<ExecError> {
    let error = agentc_engine::port::EngineError::from_text(stderr);
    (error.kind == agentc_engine::port::EngineErrorKind::Unavailable).then(|| ExecError::Connect {
        engine,
        message: error.detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_policy::Hinted;

    #[test]
    fn an_unreachable_daemon_is_the_api_backends_connect_error() {
        let said = "Cannot connect to the Docker daemon at unix:///tmp/x/docker.sock. Is the docker daemon running?";
        let error = unreachable(Engine::Docker, said).expect("a connect error");
        assert!(matches!(error, ExecError::Connect { .. }), "{error:?}");
        let text = error.with_hint().to_string();
        assert!(
            text.starts_with("cannot connect to the docker daemon: Cannot connect"),
            "{text}"
        );
        assert!(text.contains("hint: is docker running?"), "{text}");
        assert!(unreachable(Engine::Docker, "Error: No such container: box").is_none());
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
