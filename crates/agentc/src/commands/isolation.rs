//! The isolation floor at launch (`[security] isolation`): the engine's runtimes detected
//! (`docker info` `.Runtimes`; for Podman the runtimes it may have), each proven by a probe
//! (a `--rm` container of the launch's image under it, `--network=none`, reading
//! `/proc/version` and `dmesg`), and the runtime chosen by the pure
//! [`agentc_policy::choose_runtime`] before anything of the launch is created. None at the
//! floor: exit 65 naming what the engine has and how to get what is missing.

use std::process::Command;

use agentc_backend_common::{engine, Engine, Runtimes};
use agentc_policy::{
    choose_runtime, ContainerSpec, DetectedRuntime, IsolationShortfall, IsolationTier,
};

use crate::context::Failure;

/// The label naming the tier a sandbox runs under (`container`, `gvisor`, `microvm`).
pub const LABEL_ISOLATION: &str = "io.agentc.isolation";
/// The label naming the runtime chosen for the floor.
pub const LABEL_RUNTIME: &str = "io.agentc.runtime";

/// Runtimes Podman may have, probed in turn (its command line accepts any).
const PODMAN_CANDIDATES: &[&str] = &["crun", "runc", "runsc", "kata"];

/// The tier a probe proves, from the kernel the probe container saw (`/proc/version`, then
/// `dmesg`) against the host's: gVisor says so in its boot log; a kernel other than the
/// host's is a virtual machine's; the host's own kernel is a container's. Pure.
pub fn classify_probe(host_version: &str, seen: &str) -> IsolationTier {
    let first = seen.lines().next().unwrap_or_default().trim();
    if seen.contains("gVisor") {
        IsolationTier::Gvisor
    } else if first == host_version.trim() {
        IsolationTier::Container
    } else {
        IsolationTier::Microvm
    }
}

/// Runs one probe container under `runtime`: the tier it proves, or why it failed.
fn probe(runtime: &str, image: &str, host_version: &str) -> DetectedRuntime {
    let program = engine().program();
    let output = Command::new(program)
        .args([
            "run",
            "--rm",
            "--pull=never",
            "--network=none",
            "--label=io.agentc.probe=isolation",
            &format!("--runtime={runtime}"),
            "--entrypoint=/bin/sh",
            image,
            "-c",
            "cat /proc/version; dmesg 2>/dev/null | head -n 5",
        ])
        .output();
    match output {
        Ok(output) if output.status.success() => {
            let seen = String::from_utf8_lossy(&output.stdout).into_owned();
            DetectedRuntime {
                name: runtime.to_string(),
                tier: Some(classify_probe(host_version, &seen)),
                evidence: seen.lines().next().unwrap_or_default().to_string(),
            }
        }
        Ok(output) => DetectedRuntime {
            name: runtime.to_string(),
            tier: None,
            evidence: String::from_utf8_lossy(&output.stderr)
                .trim()
                .lines()
                .last()
                .unwrap_or("the probe container failed")
                .to_string(),
        },
        Err(error) => DetectedRuntime {
            name: runtime.to_string(),
            tier: None,
            evidence: format!("cannot run {program}: {error}"),
        },
    }
}

/// The engine's runtimes and its default, as its command line reports them.
fn registered() -> Result<(Vec<String>, Option<String>), Failure> {
    match engine() {
        Engine::Docker => {
            let runtimes = agentc_backend_cli::exec::engine::runtimes("runc").map_err(|error| {
                let code = u8::try_from(error.exit_code()).unwrap_or(crate::context::EXIT_DOCKER);
                Failure::new(code, error.to_string())
            })?;
            let names = match runtimes {
                Runtimes::Registered(map) => map.into_keys().collect(),
                _ => Vec::new(),
            };
            let default = Command::new("docker")
                .args(["info", "--format", "{{.DefaultRuntime}}"])
                .output()
                .ok()
                .filter(|output| output.status.success())
                .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string());
            Ok((names, default))
        }
        Engine::Podman => Ok((
            PODMAN_CANDIDATES.iter().map(|s| s.to_string()).collect(),
            None,
        )),
    }
}

/// What the engine was found to have, for a shortfall's message.
fn found(shortfall: &IsolationShortfall) -> String {
    if shortfall.found.is_empty() {
        "no runtimes".to_string()
    } else {
        shortfall.found.join("; ")
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
        engine(),
        shortfall.min.as_str(),
        shortfall.min.words(),
        found(shortfall),
        shortfall.hint
    ))
}

/// Meets the container's isolation floor, when it has one: detects and probes the engine's
/// runtimes, chooses one, and returns the container with that runtime and the
/// `io.agentc.isolation` and `io.agentc.runtime` labels; a container without a floor is
/// returned unchanged. Nothing of the launch is created before (the probe containers are
/// removed as they exit).
pub fn meet_floor(container: &ContainerSpec, profile: &str) -> Result<ContainerSpec, Failure> {
    let Some(isolation) = container.isolation else {
        return Ok(container.clone());
    };
    let chosen = choose(container, isolation)?.map_err(|shortfall| refusal(&shortfall, profile))?;
    let mut placed = container.clone();
    placed.runtime = Some(chosen.name.clone());
    placed.labels.insert(
        LABEL_ISOLATION.to_string(),
        chosen.tier.as_str().to_string(),
    );
    placed
        .labels
        .insert(LABEL_RUNTIME.to_string(), chosen.name.clone());
    eprintln!(
        "agentc: isolation: {} under runtime {} (security.isolation.min = {}, prefer {})",
        chosen.tier,
        chosen.name,
        isolation.min,
        isolation.prefer.as_str()
    );
    Ok(placed)
}

/// What `agentc doctor` says of a container's isolation floor: the runtime a launch would
/// take and its tier, or what the engine has and how to get what is missing (the same
/// detection and probes as a launch). `None` without a floor.
pub fn doctor_fact(container: &ContainerSpec) -> Option<Result<String, (String, String)>> {
    let isolation = container.isolation?;
    Some(match choose(container, isolation) {
        Ok(Ok(chosen)) => Ok(format!(
            "{} under runtime {} (min {}, prefer {})",
            chosen.tier,
            chosen.name,
            isolation.min,
            isolation.prefer.as_str()
        )),
        Ok(Err(shortfall)) => Err((
            format!(
                "no runtime meets min {} ({}); found: {}",
                shortfall.min.as_str(),
                shortfall.min.words(),
                found(&shortfall)
            ),
            shortfall.hint.clone(),
        )),
        Err(failure) => Err((
            format!(
                "the engine's runtimes cannot be read: {}",
                failure.message.lines().next().unwrap_or_default()
            ),
            "`agentc doctor` without a profile checks the engine".to_string(),
        )),
    })
}

/// Detects and probes the engine's runtimes and chooses one for the floor: the outer error
/// when the engine cannot be asked, the inner one when nothing meets the floor.
fn choose(
    container: &ContainerSpec,
    isolation: agentc_policy::Isolation,
) -> Result<Result<agentc_policy::ChosenRuntime, IsolationShortfall>, Failure> {
    let host_version = std::fs::read_to_string("/proc/version").unwrap_or_default();
    let (names, default) = registered()?;
    let names: Vec<String> = match &container.runtime {
        Some(named) => names.into_iter().filter(|name| name == named).collect(),
        None => names,
    };
    let detected: Vec<DetectedRuntime> = names
        .iter()
        .map(|name| probe(name, &container.image, &host_version))
        .collect();
    for runtime in &detected {
        log::debug!(
            "isolation probe {}: {:?} ({})",
            runtime.name,
            runtime.tier,
            runtime.evidence
        );
    }
    Ok(choose_runtime(
        isolation,
        container.runtime.as_deref(),
        default.as_deref(),
        &detected,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) #1 SMP\n";

    #[test]
    fn a_probe_proves_the_tier_from_the_kernel_it_saw() {
        assert_eq!(classify_probe(HOST, HOST), IsolationTier::Container);
        let gvisor = "Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016\n\
                      [   0.000000] Starting gVisor...\n";
        assert_eq!(classify_probe(HOST, gvisor), IsolationTier::Gvisor);
        let vm = "Linux version 6.1.62 (kata@build) #1 SMP\n";
        assert_eq!(classify_probe(HOST, vm), IsolationTier::Microvm);
    }
}
