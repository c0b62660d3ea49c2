//! The memory checkpoint operations of the docker CLI port: the probe (the engine's `info`, `criu
//! --version`, `criu check`), `podman container checkpoint --export` and `podman container
//! restore --import`.

use std::path::Path;
use std::process::Stdio;

use agentc_engine::session::{Sandbox, SessionError};
use agentc_engine::snapshot::memory::{criu_version, MIN_CRIU};
use agentc_engine::Engine;
use tokio::process::Command;

use crate::exec::port::CliPort;

/// Runs `criu ARGS`: its exit status and its output (stdout and stderr).
async fn criu(args: &[&str]) -> Result<(bool, String), String> {
    let output = Command::new("criu")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|error| format!("cannot run criu: {error}"))?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok((output.status.success(), text))
}

/// Whether this process (and so the rootful engine it runs) lacks `CAP_SYS_RESOURCE`, which
/// CRIU needs to read and set a non-root process's `RLIMIT_NOFILE`.
fn lacks_sys_resource() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << 24) == 0)
}

/// A CRIU failure's message, with the likely cause where this process lacks
/// `CAP_SYS_RESOURCE`.
fn explained(failure: (Option<i64>, String)) -> (Option<i64>, String) {
    match failure {
        (Some(code), message) if message.contains("criu failed") && lacks_sys_resource() => (
            Some(code),
            format!(
                "{message} (likely cause: the engine runs without CAP_SYS_RESOURCE, which CRIU \
                 needs for a sandbox running as a non-root uid; root-uid sandboxes work, see \
                 docs/snapshots.md)"
            ),
        ),
        other => other,
    }
}

impl CliPort {
    pub(crate) async fn memory_probe(&self) -> Result<(), String> {
        if self.engine != Engine::Podman {
            return Err(
                "Docker (its checkpoint is experimental and restores only into the \
                        same container)"
                    .into(),
            );
        }
        let format = "{{.Host.Security.Rootless}} {{.Host.OCIRuntime.Name}}";
        let info = self
            .session_output(&["info", "--format", format])
            .await
            .map_err(|(_, message)| format!("Podman (`podman info` failed: {message})"))?;
        let info = String::from_utf8_lossy(&info);
        let mut words = info.split_whitespace();
        let (rootless, runtime) = (words.next(), words.next().unwrap_or("?"));
        if rootless != Some("false") {
            return Err("rootless Podman (CRIU checkpoints need rootful Podman)".into());
        }
        if runtime != "runc" {
            return Err(format!(
                "Podman with the {runtime} runtime (CRIU checkpoints need runc)"
            ));
        }
        let (_, version) = criu(&["--version"]).await.map_err(|error| {
            format!("Podman without CRIU ({error}; scripts/setup-criu.sh builds CRIU 4.1.1)")
        })?;
        match criu_version(&version) {
            Some(found) if found >= MIN_CRIU => {}
            found => {
                return Err(format!(
                    "Podman with CRIU {} (CRIU >= {}.{} is needed; scripts/setup-criu.sh \
                     builds 4.1.1)",
                    found.map_or("of unknown version".to_string(), |(a, b)| format!(
                        "{a}.{b}"
                    )),
                    MIN_CRIU.0,
                    MIN_CRIU.1
                ))
            }
        }
        match criu(&["check"]).await {
            Ok((true, _)) => Ok(()),
            Ok((false, text)) | Err(text) => Err(format!(
                "Podman with a CRIU whose `criu check` fails here ({})",
                text.lines()
                    .rev()
                    .find(|line| !line.trim().is_empty())
                    .unwrap_or("")
                    .trim()
            )),
        }
    }

    pub(crate) async fn checkpoint_to(
        &self,
        sandbox: &Sandbox,
        file: &Path,
    ) -> Result<(), SessionError> {
        let file = file.to_string_lossy();
        let args = [
            "container",
            "checkpoint",
            "--leave-running",
            "--compress=gzip",
        ];
        let mut args = args.to_vec();
        args.extend(["--export", &file, &sandbox.id]);
        self.session_output(&args)
            .await
            .map(|_| ())
            .map_err(|failure| {
                self.container_error(sandbox, "checkpoint the container", explained(failure))
            })
    }

    pub(crate) async fn restore_from(&self, file: &Path, name: &str) -> Result<(), SessionError> {
        let file = file.to_string_lossy();
        let args = ["container", "restore", "--import", &file, "--name", name];
        match self.session_output(&args).await.map_err(explained) {
            Ok(_) => Ok(()),
            Err((None, message)) => Err(self.cannot_run_docker(std::io::Error::other(message))),
            Err((Some(_), message)) => Err(self.daemon("restore the checkpoint", message)),
        }
    }
}
