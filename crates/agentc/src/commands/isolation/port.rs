//! How a launch asks its own engine about runtimes, through the backend it launches with: the
//! cli backend runs `docker info` / `podman info` and `docker run`, the api backend asks
//! `GET /info` and runs its probe containers through the Engine API. Both read the same
//! fields ([`agentc_backend_common::docker_info_runtimes`]), so both choose alike; on
//! Podman's API socket only the default runtime can be selected, and only it is offered.
//!
//! The probe container needs nothing of the launch's image: it is the running agentc
//! binary's own image (the egress proxy's, imported once and remembered) running
//! `agentc egress-proxy kernel` ([`kernel_seen`]). Only when that image cannot be made (a
//! library caller without the binary) does the probe fall back to the launch's image with
//! [`PROBE_SCRIPT`], which then needs `/bin/sh`, `cat` and `dmesg`.

use std::collections::BTreeMap;
use std::process::Command;

use agentc_backend_common::{engine, EngineRuntimes};
use bollard::Docker;

use crate::context::Failure;

/// The label every probe container carries (`io.agentc.probe=isolation`).
pub const LABEL_PROBE: &str = "io.agentc.probe";
/// The label naming the profile a probe container was run for, so that a caller can count
/// its own probes (`docker events --filter label=io.agentc.probe.profile=NAME`).
pub const LABEL_PROBE_PROFILE: &str = "io.agentc.probe.profile";

/// What the probe container runs in the launch's image when agentc's own image cannot be made:
/// the kernel it sees, then gVisor's boot log or a VM's.
pub const PROBE_SCRIPT: &str = "cat /proc/version; dmesg 2>/dev/null | head -n 5";

/// What the probe prints from inside its container (`agentc egress-proxy kernel`): the first
/// line of `/proc/version`, then the first five lines of the kernel log (`syslog(2)`, as
/// `dmesg` reads it; gVisor answers with its own boot log, a runc container without
/// `CAP_SYSLOG` with nothing).
pub fn kernel_seen() -> String {
    let mut seen = std::fs::read_to_string("/proc/version").unwrap_or_default();
    if !seen.ends_with('\n') {
        seen.push('\n');
    }
    let mut buffer = vec![0u8; 64 * 1024];
    // SAFETY: the buffer is valid for its length; SYSLOG_ACTION_READ_ALL (3) only writes
    // into it and returns how many bytes it wrote, or -1.
    let read = unsafe {
        libc::klogctl(
            3,
            buffer.as_mut_ptr().cast(),
            i32::try_from(buffer.len()).unwrap_or(i32::MAX),
        )
    };
    if let Ok(read) = usize::try_from(read) {
        let log = String::from_utf8_lossy(&buffer[..read.min(buffer.len())]).into_owned();
        for line in log.lines().take(5) {
            seen.push_str(line);
            seen.push('\n');
        }
    }
    seen
}

/// What a probe container runs: the image, its entrypoint and its arguments.
fn probe_command(own: Result<String, String>, image: &str) -> (String, String, Vec<String>) {
    match own {
        Ok(tag) => (
            tag,
            agentc_egress::config::PROXY_BINARY.to_string(),
            vec!["egress-proxy".to_string(), "kernel".to_string()],
        ),
        Err(reason) => {
            log::debug!("isolation probe in the launch's image {image}: agentc's own image cannot be made: {reason}");
            (
                image.to_string(),
                "/bin/sh".to_string(),
                vec!["-c".to_string(), PROBE_SCRIPT.to_string()],
            )
        }
    }
}

/// The engine operations the isolation floor needs.
pub trait RuntimePort {
    /// Whether the engine runs on this machine (a runtime's program can then be looked at).
    fn is_local(&self) -> bool;
    /// The runtimes a launch through this port can select, with what identifies them.
    fn runtimes(&mut self) -> Result<EngineRuntimes, Failure>;
    /// Runs one probe container of `image` under `runtime` (`--rm`, no network, labelled for
    /// `profile`): what it printed, or why it failed.
    fn probe(&mut self, runtime: &str, image: &str, profile: &str) -> Result<String, String>;
}

fn exec_failure(error: agentc_backend_common::ExecError) -> Failure {
    let code = u8::try_from(error.exit_code()).unwrap_or(crate::context::EXIT_DOCKER);
    Failure::new(code, error.to_string())
}

fn labels(profile: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_PROBE.to_string(), "isolation".to_string()),
        (LABEL_PROBE_PROFILE.to_string(), profile.to_string()),
    ])
}

/// The engine's command line.
#[derive(Debug)]
pub struct CliPort {
    /// Whether the engine runs on this machine.
    pub local: bool,
}

impl RuntimePort for CliPort {
    fn is_local(&self) -> bool {
        self.local
    }

    fn runtimes(&mut self) -> Result<EngineRuntimes, Failure> {
        agentc_backend_cli::exec::engine::registered_runtimes(agentc_backend_common::engine())
            .map_err(exec_failure)
    }

    fn probe(&mut self, runtime: &str, image: &str, profile: &str) -> Result<String, String> {
        let program = engine().program();
        // Imported through this engine's own command line (the engine port); where that
        // fails, the launch's image serves instead.
        let own =
            agentc_backend_cli::exec::egress::own_proxy_image().map_err(|error| error.to_string());
        let (image, entrypoint, args) = probe_command(own, image);
        let mut command = Command::new(program);
        command.args(["run", "--rm", "--pull=never", "--network=none"]);
        for (key, value) in labels(profile) {
            command.arg(format!("--label={key}={value}"));
        }
        let output = command
            .arg(format!("--runtime={runtime}"))
            .arg(format!("--entrypoint={entrypoint}"))
            .arg(image)
            .args(args)
            .output()
            .map_err(|error| format!("cannot run {program}: {error}"))?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&output.stderr)
                .trim()
                .lines()
                .last()
                .unwrap_or("the probe container failed")
                .to_string())
        }
    }
}

/// The Engine API, on a connection of the caller's.
#[derive(Debug)]
pub struct ApiPort {
    /// The async runtime its calls run on.
    pub runtime: tokio::runtime::Runtime,
    /// The connection (checked to be the engine asked for).
    pub docker: Docker,
    /// Whether the engine runs on this machine.
    pub local: bool,
}

impl RuntimePort for ApiPort {
    fn is_local(&self) -> bool {
        self.local
    }

    fn runtimes(&mut self) -> Result<EngineRuntimes, Failure> {
        self.runtime
            .block_on(agentc_backend_api::engine::registered_runtimes(
                &self.docker,
                agentc_backend_common::engine(),
            ))
            .map_err(exec_failure)
    }

    fn probe(&mut self, runtime: &str, image: &str, profile: &str) -> Result<String, String> {
        let docker = self.docker.clone();
        self.runtime
            .block_on(api_probe(&docker, runtime, image, profile))
    }
}

/// One probe container through the Engine API: created, started, waited for, its stdout read,
/// and removed whatever happened.
async fn api_probe(
    docker: &Docker,
    runtime: &str,
    image: &str,
    profile: &str,
) -> Result<String, String> {
    use bollard::models::{ContainerCreateBody, HostConfig};
    let own = agentc_backend_api::companion::own_proxy_image(docker)
        .await
        .map_err(|error| error.to_string());
    let (image, entrypoint, args) = probe_command(own, image);
    let body = ContainerCreateBody {
        image: Some(image),
        entrypoint: Some(vec![entrypoint]),
        cmd: Some(args),
        labels: Some(labels(profile).into_iter().collect()),
        host_config: Some(HostConfig {
            network_mode: Some("none".to_string()),
            // Podman's socket ignores it (only its default is offered there).
            runtime: Some(runtime.to_string()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let created = docker
        .create_container(
            None::<bollard::query_parameters::CreateContainerOptions>,
            body,
        )
        .await
        .map_err(|error| format!("cannot create the probe container: {error}"))?;
    let ran = run_probe(docker, &created.id).await;
    let options = bollard::query_parameters::RemoveContainerOptionsBuilder::new()
        .force(true)
        .build();
    if let Err(error) = docker.remove_container(&created.id, Some(options)).await {
        log::debug!("removing probe container {}: {error}", created.id);
    }
    ran
}

async fn run_probe(docker: &Docker, id: &str) -> Result<String, String> {
    use futures_util::StreamExt;
    docker
        .start_container(id, None)
        .await
        .map_err(|error| error.to_string())?;
    let mut waited =
        docker.wait_container(id, None::<bollard::query_parameters::WaitContainerOptions>);
    let code = match waited.next().await {
        Some(Ok(response)) => response.status_code,
        Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
        Some(Err(error)) => return Err(error.to_string()),
        None => return Err("the wait stream ended without a status".to_string()),
    };
    let options = bollard::query_parameters::LogsOptionsBuilder::new()
        .stdout(true)
        .stderr(true)
        .build();
    let mut stream = docker.logs(id, Some(options));
    let (mut stdout, mut stderr) = (String::new(), String::new());
    while let Some(chunk) = stream.next().await {
        match chunk.map_err(|error| error.to_string())? {
            bollard::container::LogOutput::StdOut { message } => {
                stdout.push_str(&String::from_utf8_lossy(&message))
            }
            bollard::container::LogOutput::StdErr { message } => {
                stderr.push_str(&String::from_utf8_lossy(&message))
            }
            _ => {}
        }
    }
    if code == 0 {
        Ok(stdout)
    } else {
        Err(stderr
            .trim()
            .lines()
            .last()
            .map(str::to_string)
            .unwrap_or_else(|| format!("the probe container exited {code}")))
    }
}
