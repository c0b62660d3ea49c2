//! The isolation floor through the binary's backends: the library's
//! [`agentc_backend_common::isolation`] (detection, probes, the cached proofs, the choice)
//! over the engine port `--backend` picks, with this process's cache and kernel; and what a
//! launch and `agentc doctor` say of the choice. `agentc egress-proxy kernel` is the probe's
//! own side ([`kernel_seen`]).

use agentc_backend_common::isolation::{self as floor, FloorError, FloorOptions};
use agentc_egress::image::ProxyExecutable;
use agentc_policy::{ContainerSpec, IsolationShortfall};

pub use agentc_backend_common::isolation::{LABEL_ISOLATION, LABEL_RUNTIME};

use crate::cli::BackendArg;
use crate::commands::launch;
use crate::context::Failure;

/// The floor's options in this process: the cache under its environment (bypassed with
/// `AGENTC_ISOLATION_CACHE=off`), the probe image made of this binary, this machine's kernel.
fn options() -> FloorOptions {
    let mut options = FloorOptions::from_env(&launch::process_env(), ProxyExecutable::running());
    options.local = !launch::engine_is_remote();
    options
}

/// Forgets the cached proof of the runtime a failed launch ran under (`io.agentc.runtime`),
/// so that the next launch probes it again.
pub fn forget_on_failure(container: &ContainerSpec) {
    if container.isolation.is_none() {
        return;
    }
    if let (Some(runtime), Some(location)) = (&container.runtime, options().cache) {
        floor::cache::forget(&location, runtime);
    }
}

/// The refusal of a floor the engine cannot meet (exit 65), naming what it has.
fn refusal(shortfall: &IsolationShortfall, profile: &str) -> Failure {
    let named = match &shortfall.runtime {
        Some(runtime) => format!(" with security.runtime {runtime:?}"),
        None => String::new(),
    };
    Failure::unlaunchable(format!(
        "profile {profile:?}: no runtime of the {} engine meets security.isolation.min = {:?}{named} ({}); nothing was created\n  found: {}\n  hint: {}",
        crate::engine(),
        shortfall.min.as_str(),
        shortfall.min.words(),
        floor::found(shortfall),
        shortfall.hint
    ))
}

/// Meets the container's isolation floor through `backend`'s own engine port, when it has one
/// ([`floor::meet_floor`]), and says on stderr what was chosen; a container without a floor is
/// returned unchanged, without asking the engine.
pub fn meet_floor(
    container: &ContainerSpec,
    profile: &str,
    backend: BackendArg,
) -> Result<ContainerSpec, Failure> {
    let Some(isolation) = container.isolation else {
        return Ok(container.clone());
    };
    let options = options();
    let met = launch::runtime()?.block_on(async {
        launch::over_port!(backend, None, |port| {
            floor::meet_floor(&port, container, profile, &options)
                .await
                .map_err(|error| match error {
                    FloorError::Shortfall(shortfall) => refusal(&shortfall, profile),
                    FloorError::Engine(error) => launch::exec_failure(error),
                })
        })
    })?;
    if let Some(chosen) = &met.chosen {
        eprintln!(
            "agentc: isolation: {} under runtime {} (security.isolation.min = {}, prefer {})",
            chosen.tier,
            chosen.name,
            isolation.min,
            isolation.prefer.as_str()
        );
        if let Some(reason) = &chosen.above_floor {
            eprintln!(
                "agentc: isolation: {} is above the floor {}: {reason}",
                chosen.tier, isolation.min
            );
        }
    }
    Ok(met.container)
}

/// What `agentc doctor` says of a container's isolation floor: the runtime a launch would
/// take and its tier, or what the engine has and how to get what is missing (the same
/// detection and probes as a launch, through the command line). `None` without a floor.
pub fn doctor_fact(
    container: &ContainerSpec,
    profile: &str,
) -> Option<Result<String, (String, String)>> {
    let isolation = container.isolation?;
    let options = options();
    let choice = launch::runtime().ok()?.block_on(async {
        let port = launch::cli_port_reaping(None).await;
        floor::choose(&port, container, isolation, profile, &options).await
    });
    Some(match choice {
        Ok(Ok(chosen)) => Ok(format!(
            "{} under runtime {} (min {}, prefer {}){}",
            chosen.tier,
            chosen.name,
            isolation.min,
            isolation.prefer.as_str(),
            chosen
                .above_floor
                .map(|reason| format!("; above the floor: {reason}"))
                .unwrap_or_default()
        )),
        Ok(Err(shortfall)) => Err((
            format!(
                "no runtime meets min {} ({}); found: {}",
                shortfall.min.as_str(),
                shortfall.min.words(),
                floor::found(&shortfall)
            ),
            shortfall.hint.clone(),
        )),
        Err(error) => Err((
            format!(
                "the engine's runtimes cannot be read: {}",
                error.to_string().lines().next().unwrap_or_default()
            ),
            "`agentc doctor` without a profile checks the engine".to_string(),
        )),
    })
}

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
