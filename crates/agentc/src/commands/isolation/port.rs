//! How a launch asks its own engine about runtimes, through the backend it launches with: one
//! implementation ([`OverPort`]) over the backend's engine port, the command line (`docker
//! info` / `podman info`, `docker run`) or the Engine API (`GET /info`, its probe containers).
//! Both read the same fields ([`agentc_backend_common::docker_info_runtimes`]), so both choose
//! alike; on Podman's API socket only the default runtime can be selected, and only it is
//! offered.
//!
//! The probe container needs nothing of the launch's image: it is the running agentc
//! binary's own image (the egress proxy's, imported once and remembered) running
//! `agentc egress-proxy kernel` ([`kernel_seen`]). Only when that image cannot be made (a
//! library caller without the binary) does the probe fall back to the launch's image with
//! [`PROBE_SCRIPT`], which then needs `/bin/sh`, `cat` and `dmesg`.

use std::collections::BTreeMap;

use agentc_backend_common::launch::ProxyExecutable;
use agentc_backend_common::port::EnginePort;
use agentc_backend_common::EngineRuntimes;
use agentc_policy::{ContainerSpec, Network};

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

/// The isolation floor's questions asked through an [engine port](EnginePort) (the command
/// line's or the Engine API's), written once: the port's runtimes, and a probe container run
/// detached, waited for, read and removed.
pub struct OverPort<P: EnginePort> {
    /// The async runtime its calls run on.
    pub runtime: tokio::runtime::Runtime,
    /// The engine port.
    pub port: P,
    /// Whether the engine runs on this machine.
    pub local: bool,
}

impl<P: EnginePort> RuntimePort for OverPort<P> {
    fn is_local(&self) -> bool {
        self.local
    }

    fn runtimes(&mut self) -> Result<EngineRuntimes, Failure> {
        self.runtime
            .block_on(self.port.runtimes())
            .map_err(exec_failure)
    }

    fn probe(&mut self, runtime: &str, image: &str, profile: &str) -> Result<String, String> {
        self.runtime
            .block_on(probe_over(&self.port, runtime, image, profile))
    }
}

/// One probe container through `port`: agentc's own image (imported through the same port)
/// or the launch's, no network, labelled for `profile`, under `runtime`; created and started,
/// waited for, its stdout read, and removed whatever happened.
async fn probe_over<P: EnginePort>(
    port: &P,
    runtime: &str,
    image: &str,
    profile: &str,
) -> Result<String, String> {
    let own = agentc_backend_common::companion::own_proxy_image(port, &ProxyExecutable::running())
        .await
        .map_err(|error| error.to_string());
    let (image, entrypoint, args) = probe_command(own, image);
    let mut spec = ContainerSpec::empty(image);
    spec.entrypoint = Some(entrypoint);
    spec.command = args;
    spec.network = Network::None;
    spec.labels = labels(profile);
    spec.runtime = Some(runtime.to_string());
    let id = port
        .run_detached(&spec, &BTreeMap::new())
        .await
        .map_err(|error| last_line(&error.detail, "the probe container did not start"))?;
    let ran = async {
        let code = port.wait(&id).await.map_err(|error| error.to_string())?;
        if code == 0 {
            port.logs(&id, false)
                .await
                .map_err(|error| error.to_string())
        } else {
            let said = port.logs(&id, true).await.unwrap_or_default();
            Err(last_line(
                &said,
                &format!("the probe container exited {code}"),
            ))
        }
    }
    .await;
    if let Err(error) = port.remove_container(&id).await {
        log::debug!("removing probe container {id}: {error}");
    }
    ran
}

/// The last line of `text`, or `otherwise` when it has none.
fn last_line(text: &str, otherwise: &str) -> String {
    text.trim()
        .lines()
        .last()
        .map(str::to_string)
        .unwrap_or_else(|| otherwise.to_string())
}
