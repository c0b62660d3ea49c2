//! Helpers for the live tests of the second engine and runtime: Podman (its command line and
//! its Docker-compatible API socket) and gVisor (`runsc`, registered with dockerd).
//!
//! As with [`crate::live::require_daemon`], a test starts with [`require_podman`] or
//! [`require_runsc`]: they skip it with a printed reason when the engine or runtime is absent,
//! and fail it instead when `AGENTC_REQUIRE_DOCKER=1` (CI installs both with
//! `scripts/setup-engines.sh`).

use std::collections::BTreeSet;
use std::process::{Command, Stdio};

use agentc_policy::hint::with_hint;

use crate::live::{docker, PROFILE_LABEL, REQUIRE_DOCKER_VAR};

/// Podman's rootful API socket, as `scripts/setup-engines.sh` serves it.
pub const PODMAN_SOCKET: &str = "unix:///run/podman/podman.sock";

/// Runs `podman ARGS`; its trimmed stdout, or an error with the command and its stderr.
pub fn podman(args: &[&str]) -> Result<String, String> {
    let output = Command::new("podman")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run podman: {error}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    } else {
        Err(format!(
            "podman {} failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

fn decide(test: &str, what: &str, available: Result<(), String>) -> bool {
    match available {
        Ok(()) => true,
        Err(reason) if std::env::var(REQUIRE_DOCKER_VAR).as_deref() == Ok("1") => {
            panic!(
                "{}",
                with_hint(
                    format_args!("{test}: {REQUIRE_DOCKER_VAR}=1 but {what}: {reason}"),
                    Some("run scripts/setup-engines.sh as root"),
                )
            )
        }
        Err(reason) => {
            eprintln!("skipping {test}: {what}: {reason}");
            false
        }
    }
}

/// True when the `podman` command runs containers and its API socket answers; otherwise
/// skips (prints why, returns false), or panics under `AGENTC_REQUIRE_DOCKER=1`.
pub fn require_podman(test: &str) -> bool {
    let available = podman(&["info", "--format", "{{.Host.OCIRuntime.Name}}"]).and_then(|_| {
        let path = PODMAN_SOCKET.trim_start_matches("unix://");
        std::os::unix::net::UnixStream::connect(path)
            .map(|_| ())
            .map_err(|error| format!("its API socket {path} does not answer: {error}"))
    });
    decide(test, "no Podman (command and API socket)", available)
}

/// True when dockerd has a runtime named `runsc` (gVisor); otherwise skips or panics as
/// [`require_podman`] does.
pub fn require_runsc(test: &str) -> bool {
    let available = docker(&["info", "--format", "{{json .Runtimes}}"]).and_then(|text| {
        if text.contains("\"runsc\"") {
            Ok(())
        } else {
            Err(format!("dockerd's runtimes are {text}"))
        }
    });
    decide(
        test,
        "no gVisor runtime (runsc) registered with dockerd",
        available,
    )
}

/// Makes Podman's storage hold the test image `tag` (built for Docker by
/// [`crate::image::ensure_test_image`]): `docker save TAG | podman load` on first use.
pub fn ensure_podman_image(tag: &str) -> Result<(), String> {
    if podman(&["image", "exists", tag]).is_ok() {
        return Ok(());
    }
    let mut save = Command::new("docker")
        .args(["save", tag])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot run docker save: {error}"))?;
    let stdout = save.stdout.take().ok_or("docker save has no stdout")?;
    let load = Command::new("podman")
        .args(["load", "--quiet"])
        .stdin(stdout)
        .output()
        .map_err(|error| format!("cannot run podman load: {error}"))?;
    let saved = save
        .wait()
        .map_err(|error| format!("docker save: {error}"))?;
    if !saved.success() || !load.status.success() {
        return Err(format!(
            "docker save {tag} | podman load failed: {}",
            String::from_utf8_lossy(&load.stderr).trim()
        ));
    }
    Ok(())
}

/// Podman's containers labelled with `profile`, stopped ones too.
pub fn podman_containers(profile: &str) -> BTreeSet<String> {
    let filter = format!("label={PROFILE_LABEL}={profile}");
    podman(&["ps", "--all", "--filter", &filter, "--format", "{{.Names}}"])
        .map(|text| text.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Podman's volumes whose names end with `-SUFFIX`.
pub fn podman_volumes(suffix: &str) -> BTreeSet<String> {
    podman(&["volume", "ls", "--format", "{{.Name}}"])
        .map(|text| {
            text.lines()
                .filter(|name| name.ends_with(&format!("-{suffix}")))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Removes what a Podman test of `profile` left (containers labelled with it, volumes and
/// networks named `*-PROFILE`) and returns their names, for the test to fail on.
pub fn podman_leaks(profile: &str) -> Vec<String> {
    let mut left: Vec<String> = podman_containers(profile).into_iter().collect();
    for name in &left {
        let _ = podman(&["rm", "--force", "--time=0", name]);
    }
    for volume in podman_volumes(profile) {
        let _ = podman(&["volume", "rm", "--force", &volume]);
        left.push(volume);
    }
    left
}
