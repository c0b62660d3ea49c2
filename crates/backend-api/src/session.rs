//! The attached session of a launch: the local terminal (raw mode, its size following the
//! window), stdin and the container's output, SIGINT and SIGTERM, the wait for the exit, and
//! the OOM watch that tells a kill by the out-of-memory killer from any other SIGKILL.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::time::Duration;

use agentc_engine::{Engine, ExecError, Interrupt};
use agentc_policy::ContainerSpec;
use bollard::errors::Error as BollardError;
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, EventsOptionsBuilder, ResizeContainerTTYOptionsBuilder,
    WaitContainerOptionsBuilder,
};
use bollard::Docker;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::daemon::daemon_error;
use crate::daemon::{remove_quietly, wait_removed};
use agentc_engine::signals::Interrupts;

/// How an attached container ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exited {
    /// The container's exit code.
    pub(crate) exit_code: i64,
    /// The OOM killer ended it, when the daemon could still say so.
    pub(crate) oom_killed: bool,
}

/// What stopped a launch step.
pub(crate) enum Step {
    Interrupted(Interrupt),
    Failed(ExecError),
}

impl From<ExecError> for Step {
    fn from(error: ExecError) -> Self {
        Step::Failed(error)
    }
}

/// Attaches to a created container, starts it and relays stdin, output and window resizes
/// until it exits (`terminal`: the local terminal is switched to raw mode and its size follows
/// the window), then removes it, or, under `AutoRemove`, waits until the daemon has.
pub(crate) async fn run_attached<S: Interrupts>(
    docker: &Docker,
    engine: Engine,
    waits: &crate::daemon::Waits,
    spec: &ContainerSpec,
    terminal: bool,
    id: &str,
    signals: &mut S,
) -> Result<Exited, Step> {
    let attach_options = AttachContainerOptionsBuilder::new()
        .stream(true)
        .stdin(spec.interactive)
        .stdout(true)
        .stderr(true)
        .build();
    log::debug!("attaching to {id}");
    let attached = tokio::select! {
        result = docker.attach_container(id, Some(attach_options)) => {
            result.map_err(|error| {
                // Podman runs the OCI runtime when it attaches to a created container: its 409
                // there is the start refused (a command it cannot run), as the start reports it
                // on Docker.
                let podman_start = engine == Engine::Podman && crate::daemon::status(&error) == Some(409);
                let step = if podman_start { "start the container" } else { "attach to the container" };
                daemon_error(engine, step, error)
            })?
        }
        signal = signals.recv() => return Err(Step::Interrupted(signal)),
    };
    let mut output = attached.output;
    let mut input = attached.input;

    // With --rm the daemon removes the container right after it exits, so the wait must be
    // registered before the start ("next-exit"); otherwise "not-running" after the start has
    // no race at all. The daemon answers the wait's headers once it is registered (the docker
    // CLI starts after that too); where that is not reported, a pause stands in for it.
    let early_wait = spec.auto_remove.then(|| {
        let registered = waits.registered(id);
        (spawn_wait(docker, engine, id, "next-exit"), registered)
    });
    let early_wait = match early_wait {
        Some((wait, registered)) => {
            if tokio::time::timeout(Duration::from_millis(50), registered)
                .await
                .is_err()
            {
                log::debug!("the wait for {id} was not confirmed within 50 ms; starting");
            }
            Some(wait)
        }
        None => None,
    };

    let _raw = if terminal {
        Some(RawMode::enable().map_err(|source| ExecError::Terminal {
            step: "switch the terminal to raw mode",
            source,
        })?)
    } else {
        None
    };

    // With --rm the daemon may remove the container before it can be inspected, losing
    // `State.OOMKilled` (seen on a busy daemon: exit 137 reported as a plain SIGKILL); the
    // daemon's `oom` event for it is watched from before the start instead.
    let oom_watch = spec.auto_remove.then(|| OomWatch::spawn(docker, id));

    log::debug!("starting {id}");
    tokio::select! {
        result = docker.start_container(id, None) => {
            result.map_err(|error| daemon_error(engine, "start the container", error))?;
        }
        signal = signals.recv() => return Err(Step::Interrupted(signal)),
    }
    let mut wait = match early_wait {
        Some(wait) => wait,
        None => spawn_wait(docker, engine, id, "not-running"),
    };

    let mut winch = if terminal {
        resize(docker, id).await;
        signal(SignalKind::window_change()).ok()
    } else {
        None
    };
    let mut stdin = spec.interactive.then(spawn_stdin_reader);
    let mut stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    let mut output_open = true;

    let exit_code = loop {
        tokio::select! {
            chunk = output.next(), if output_open => match chunk {
                Some(Ok(chunk)) => write_chunk(&mut stdout, &mut stderr, chunk)?,
                Some(Err(error)) => return Err(daemon_error(engine, "read the container's output", error).into()),
                None => output_open = false,
            },
            data = recv_stdin(&mut stdin), if stdin.is_some() => match data {
                Some(data) => {
                    if input.write_all(&data).await.is_err() {
                        stdin = None;
                    }
                }
                None => {
                    // Local EOF: close the container's stdin (StdinOnce ends its stdin too).
                    let _ = input.shutdown().await;
                    stdin = None;
                }
            },
            _ = recv_winch(&mut winch), if winch.is_some() => resize(docker, id).await,
            signal = signals.recv() => return Err(Step::Interrupted(signal)),
            waited = &mut wait => break waited
                .unwrap_or_else(|_| Err(ExecError::ConnectionLost {
                    engine,
                    step: "wait for the container",
                    message: "the wait task ended unexpectedly".into(),
                }))?,
        }
    };

    // Drain what the container wrote just before exiting.
    if output_open {
        let drain = async {
            while let Some(Ok(chunk)) = output.next().await {
                if write_chunk(&mut stdout, &mut stderr, chunk).is_err() {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
    }
    drop(_raw);

    log::debug!("{id} exited with code {exit_code}");
    let oom_killed = exit_code == 137 && was_oom_killed(docker, id, oom_watch).await;
    if spec.auto_remove {
        log::debug!("waiting for the daemon to remove {id} (auto-remove)");
        // Like `docker run --rm`, return only once the daemon has removed it.
        wait_removed(docker, id).await;
    } else {
        log::debug!("removing {id}");
        remove_quietly(docker, id)
            .await
            .map_err(|error| daemon_error(engine, "remove the container", error))?;
    }
    Ok(Exited {
        exit_code,
        oom_killed,
    })
}

/// Whether the OOM killer ended the container: its `State.OOMKilled`, or whether the daemon
/// announced an `oom` event for it. The event is the daemon's own account and the only one
/// left once an `AutoRemove` container is gone; it also covers a kept container whose state
/// missed the kill (seen on Docker 20.10 with cgroup v1 under load: the daemon publishes `oom`
/// but processes the task's exit first, and `State.OOMKilled` stays false).
async fn was_oom_killed(docker: &Docker, id: &str, watch: Option<OomWatch>) -> bool {
    if let Ok(inspect) = docker.inspect_container(id, None).await {
        if inspect.state.and_then(|state| state.oom_killed) == Some(true) {
            return true;
        }
    }
    // The daemon publishes `oom` around `die`, in either order; replaying its buffered events
    // (`since` the epoch) finds one already published, and the timeout allows a late one.
    let mut watch = watch.unwrap_or_else(|| OomWatch::spawn(docker, id));
    matches!(
        tokio::time::timeout(Duration::from_secs(1), &mut watch.0).await,
        Ok(Ok(true))
    )
}

/// A task that ends with true once the daemon announces an `oom` event for one container;
/// aborted when dropped, so an early return leaves no event stream open.
struct OomWatch(tokio::task::JoinHandle<bool>);

impl OomWatch {
    fn spawn(docker: &Docker, id: &str) -> Self {
        let docker = docker.clone();
        let id = id.to_string();
        OomWatch(tokio::spawn(async move {
            let filters = HashMap::from([
                ("type", vec!["container"]),
                ("container", vec![id.as_str()]),
                ("event", vec!["oom"]),
            ]);
            // `since` the epoch replays the daemon's buffered events for this id (there can be
            // none from before its creation), so an oom that happens before this subscription
            // reaches the daemon is not missed, whatever the two clocks say.
            let options = EventsOptionsBuilder::new()
                .since("1")
                .filters(&filters)
                .build();
            let mut events = docker.events(Some(options));
            matches!(events.next().await, Some(Ok(_)))
        }))
    }
}

impl Drop for OomWatch {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn spawn_wait(
    docker: &Docker,
    engine: Engine,
    id: &str,
    condition: &str,
) -> tokio::task::JoinHandle<Result<i64, ExecError>> {
    let docker = docker.clone();
    let id = id.to_string();
    let options = WaitContainerOptionsBuilder::new()
        .condition(condition)
        .build();
    tokio::spawn(async move {
        let mut stream = docker.wait_container(&id, Some(options));
        match stream.next().await {
            Some(Ok(response)) => Ok(response.status_code),
            // bollard reports a non-zero exit status as this error.
            Some(Err(BollardError::DockerContainerWaitError { code, .. })) => Ok(code),
            Some(Err(error)) => Err(daemon_error(engine, "wait for the container", error)),
            None => Err(ExecError::ConnectionLost {
                engine,
                step: "wait for the container",
                message: "the wait stream ended without a status".into(),
            }),
        }
    })
}

fn write_chunk(
    stdout: &mut std::io::Stdout,
    stderr: &mut std::io::Stderr,
    chunk: bollard::container::LogOutput,
) -> Result<(), ExecError> {
    use bollard::container::LogOutput;
    let result = match chunk {
        LogOutput::StdErr { message } => stderr.write_all(&message).and_then(|()| stderr.flush()),
        LogOutput::StdOut { message } | LogOutput::Console { message } => {
            stdout.write_all(&message).and_then(|()| stdout.flush())
        }
        LogOutput::StdIn { .. } => Ok(()),
    };
    result.map_err(|source| ExecError::Terminal {
        step: "write the container's output",
        source,
    })
}

/// Reads stdin on a plain thread: tokio's stdin would keep the runtime from shutting down
/// while a read blocks. The thread ends with the process.
pub(crate) fn spawn_stdin_reader() -> tokio::sync::mpsc::Receiver<Vec<u8>> {
    let (sender, receiver) = tokio::sync::mpsc::channel(16);
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buffer = [0u8; 4096];
        loop {
            match stdin.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if sender.blocking_send(buffer[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    receiver
}

async fn recv_stdin(stdin: &mut Option<tokio::sync::mpsc::Receiver<Vec<u8>>>) -> Option<Vec<u8>> {
    match stdin {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

async fn recv_winch(winch: &mut Option<Signal>) {
    match winch {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// Sets the container's TTY to the local terminal's size, best effort.
async fn resize(docker: &Docker, id: &str) {
    if let Some((rows, columns)) = terminal_size() {
        let options = ResizeContainerTTYOptionsBuilder::new()
            .h(i32::from(rows))
            .w(i32::from(columns))
            .build();
        let _ = docker.resize_container_tty(id, options).await;
    }
}

pub(crate) fn terminal_size() -> Option<(u16, u16)> {
    for fd in [libc::STDOUT_FILENO, libc::STDIN_FILENO, libc::STDERR_FILENO] {
        // SAFETY: TIOCGWINSZ writes one `winsize` into the pointed-to, initialised struct.
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        let status = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) };
        if status == 0 && size.ws_row > 0 && size.ws_col > 0 {
            return Some((size.ws_row, size.ws_col));
        }
    }
    None
}

/// The local terminal in raw mode, restored when dropped (also on early return or panic).
pub(crate) struct RawMode {
    original: libc::termios,
}

impl RawMode {
    pub(crate) fn enable() -> std::io::Result<Self> {
        // SAFETY: tcgetattr fills the zeroed termios; cfmakeraw and tcsetattr read it.
        unsafe {
            let mut original: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(libc::STDIN_FILENO, &mut original) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut raw = original;
            libc::cfmakeraw(&mut raw);
            if libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(RawMode { original })
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // SAFETY: restores the attributes read in `enable`.
        unsafe {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.original);
        }
    }
}
