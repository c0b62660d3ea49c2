//! The attached run of a launch through the engine's command line ([`EnginePort::run_attached`]
//! of `CliPort`): `docker run` in the foreground, stdin and stdout inherited (docker itself
//! switches a terminal to raw mode and follows its size), stderr passed through a relay that
//! holds back docker's own refusal so that agentc words it with a hint.
//!
//! `docker run` creates the container before it starts it, and leaves it behind when the start
//! fails (a missing network, say). agentc adds `--cidfile` to the argv it runs (only there:
//! `agentc render` shows the launch itself), so it knows the container it created and removes
//! it when docker fails before the container ran (exit 125, or 126 and 127 when the daemon
//! could not start its command), as the Engine API backend does.
//!
//! A SIGINT or SIGTERM ends the launch as the Engine API backend ends it, TTY or not: the
//! container docker created is force-removed, which ends `docker run`; docker is killed if it
//! has not ended 10 s later. (Forwarding the signal would not do: a container's PID 1 without a
//! handler ignores SIGINT and SIGTERM.)
//!
//! [`EnginePort::run_attached`]: agentc_engine::port::EnginePort::run_attached

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use agentc_engine::launch::Exited;
use agentc_engine::port::EnginePort;
use agentc_engine::signals::Interrupts;
use agentc_engine::{Engine, ExecError};
use agentc_policy::ContainerSpec;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use super::docker::{
    is_refusal_line, is_refusal_status, launch_refused, refusal_message, CidFile, PODMAN_ERROR,
};

/// How long docker has to end after agentc removed its container on a signal, before it is
/// killed.
const DOCKER_GRACE: Duration = Duration::from_secs(10);

/// Runs `spec` attached through `port`'s command line, the engine's program run with `engine_env`
/// on top of agentc's environment (the port's: where its caller's engine is); see the module
/// documentation.
pub(crate) async fn run_attached<P: EnginePort, S: Interrupts>(
    port: &P,
    engine_env: &BTreeMap<String, String>,
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
    signals: &mut S,
) -> Result<Exited, ExecError> {
    agentc_engine::resolve_env(spec, env)?;
    let mut argv = super::engine::launch_argv_as(port.engine(), engine_env, spec).await?;
    let cid = CidFile::new()?;
    argv.insert(2, format!("--cidfile={}", cid.path().display()));
    let secrets = agentc_engine::secrets::secret_values(spec, env);
    log::debug!("running {}", crate::shell_line(&argv));
    let program = port.engine().program();
    let mut child = tokio::process::Command::new(program)
        .args(&argv[1..])
        .envs(engine_env)
        .envs(&secrets)
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ExecError::Spawn {
            program: program.into(),
            source,
        })?;
    let stderr = child.stderr.take().expect("stderr is piped");
    let podman = port.engine() == Engine::Podman;
    let relay = tokio::spawn(relay_stderr(stderr, podman));
    let mut interrupted = None;
    let status = tokio::select! {
        status = child.wait() => status,
        signal = signals.recv() => {
            log::debug!("{signal} received: removing the container");
            interrupted = Some(signal);
            end_on_signal(port, &mut child, &cid).await
        }
    }
    .map_err(|source| ExecError::Wait {
        program: program.into(),
        source,
    })?;
    let exit_code = super::process::exit_code(status);
    let Relayed { held, last_error } = relay.await.unwrap_or_default();
    if let Some(signal) = interrupted {
        // Created after the first removal, or never removed: gone now either way, and only
        // then reported removed (the engine's own `--rm` may still be at it).
        let created = cid.id();
        if let Some(id) = &created {
            let _ = port.remove_container(id).await;
            wait_gone(port, id).await;
        }
        let removed = created.map(|id| spec.name.clone().unwrap_or(id));
        return Err(ExecError::interrupted(signal, removed.as_deref()));
    }
    let mut refusal = held
        .first()
        .map(|line| refusal_message(line))
        .filter(|_| is_refusal_status(exit_code));
    if refusal.is_none() {
        refusal = last_error
            .as_deref()
            .and_then(|line| podman_refusal(line, exit_code));
    }
    let mut unsaid = if refusal.is_none() {
        held.concat()
    } else {
        String::new()
    };
    if let Some(line) = last_error.filter(|_| refusal.is_none()) {
        unsaid.push_str(&line);
    }
    if !unsaid.is_empty() {
        let mut out = tokio::io::stderr();
        let _ = out.write_all(unsaid.as_bytes()).await;
        let _ = out.flush().await;
    }
    let created = cid.id();
    if let Some(refused) = launch_refused(port.engine(), exit_code, refusal, created.is_some()) {
        // The engine refused: the container never ran.
        if let Some(id) = &created {
            log::debug!("docker failed before {id} ran; removing it");
            let _ = port.remove_container(id).await;
        }
        return Err(refused);
    }
    Ok(Exited {
        exit_code: i64::from(exit_code),
        id: created.unwrap_or_default(),
        oom_killed: None,
    })
}

/// After a signal: the container removed once docker has written its ID (it may be creating
/// it still), which ends `docker run`; docker killed when it has not ended [`DOCKER_GRACE`]
/// later. Returns how docker ended.
async fn end_on_signal<P: EnginePort>(
    port: &P,
    child: &mut tokio::process::Child,
    cid: &CidFile,
) -> std::io::Result<std::process::ExitStatus> {
    let since = Instant::now();
    let mut removed = false;
    loop {
        if !removed {
            if let Some(id) = cid.id() {
                let _ = port.remove_container(&id).await;
                removed = true;
            }
        }
        if since.elapsed() > DOCKER_GRACE {
            let _ = child.start_kill();
        }
        tokio::select! {
            status = child.wait() => return status,
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
}

/// What [`relay_stderr`] held back.
#[derive(Debug, Default)]
struct Relayed {
    /// docker's refusal: the `docker: Error response from daemon: ...` line and the lines
    /// after it.
    held: Vec<String>,
    /// On Podman, the last line when it is an `Error: ...` line (Podman's own refusal, or the
    /// workload's last words: [`podman_refusal`] tells them apart).
    last_error: Option<String>,
}

/// Passes the engine's stderr through, line by line, holding back docker's refusal, and on
/// Podman (`podman`) an `Error: ...` line until the next line shows it was not the last.
async fn relay_stderr(stderr: tokio::process::ChildStderr, podman: bool) -> Relayed {
    let mut relayed = Relayed::default();
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut out = tokio::io::stderr();
    let mut line = Vec::new();
    while reader.read_until(b'\n', &mut line).await.unwrap_or(0) > 0 {
        let text = String::from_utf8_lossy(&line).into_owned();
        if let Some(earlier) = relayed.last_error.take() {
            let _ = out.write_all(earlier.as_bytes()).await;
        }
        if is_refusal_line(&text, !relayed.held.is_empty()) {
            relayed.held.push(text);
        } else if podman && text.starts_with(PODMAN_ERROR) {
            relayed.last_error = Some(text);
        } else {
            let _ = out.write_all(&line).await;
        }
        let _ = out.flush().await;
        line.clear();
    }
    relayed
}

/// Podman's own refusal in its last stderr line (`Error: MESSAGE`), for a `podman run` that
/// exited `exit_code`: any such line with 125 (Podman failed before the container ran); with
/// 126 or 127 only the OCI runtime's (`OCI runtime attempted to invoke a command that was not
/// found`, `OCI permission denied`), since a workload may end with an `Error:` line and 127 of
/// its own.
fn podman_refusal(line: &str, exit_code: i32) -> Option<String> {
    let message = line.trim().strip_prefix(PODMAN_ERROR)?;
    match exit_code {
        125 => Some(message.to_string()),
        126 | 127 if message.contains("OCI ") => Some(message.to_string()),
        _ => None,
    }
}

/// Waits (up to 10 s) until the container `id` is gone.
async fn wait_gone<P: EnginePort>(port: &P, id: &str) {
    let since = Instant::now();
    while since.elapsed() < Duration::from_secs(10) {
        if port.inspect(id).await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn podmans_refusals_are_told_from_a_workloads_last_words() {
        let not_found = "Error: runc: runc create failed: unable to start container process: exec: \"nosuch\": executable file not found in $PATH: OCI runtime attempted to invoke a command that was not found\n";
        assert!(podman_refusal(not_found, 127)
            .unwrap()
            .starts_with("runc: runc create failed"));
        let in_use = "Error: creating container storage: the container name \"box\" is already in use by 1a2b. You have to remove that container to be able to reuse that name: that name is already in use\n";
        assert!(podman_refusal(in_use, 125)
            .unwrap()
            .contains("is already in use"));
        // A workload's own last words and exit status are its own.
        assert_eq!(podman_refusal("Error: no such file\n", 127), None);
        assert_eq!(podman_refusal("Error: bad input\n", 1), None);
        assert_eq!(podman_refusal("warning: x\n", 125), None);
    }
}
