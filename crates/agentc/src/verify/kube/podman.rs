//! The local Kubernetes-YAML executor: `podman kube play` and the Podman commands around it
//! (images copied from Docker's store, the pod's network, its container's exit, output and
//! inspect, and `podman kube down` with the volumes the play made). Synchronous: each step is
//! one `podman` command.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The Podman executable, `AGENTC_PODMAN` or `podman` on `PATH`.
fn podman() -> Command {
    Command::new(std::env::var_os("AGENTC_PODMAN").unwrap_or_else(|| "podman".into()))
}

/// What a `podman` command said when it failed: its stderr's last lines, or its status.
fn failed(what: &str, output: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.contains("failed to connect to syslog"))
        .collect();
    let tail = lines[lines.len().saturating_sub(3)..].join("; ");
    if tail.is_empty() {
        format!("{what} failed ({})", output.status)
    } else {
        format!("{what} failed: {tail}")
    }
}

/// Runs `podman ARGS`, returning its stdout, or why it failed.
fn run(args: &[&str]) -> Result<String, String> {
    let output = podman()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run podman: {error}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(failed(&format!("podman {}", args.join(" ")), &output))
    }
}

/// Podman's version, or why there is none (not installed, not runnable).
pub fn version() -> Result<String, String> {
    run(&["version", "--format", "{{.Client.Version}}"])
        .map(|text| text.trim().to_string())
        .map_err(|error| {
            if error.starts_with("cannot run podman") {
                "podman is not installed (verify --backend k8s plays the rendering with \
                 `podman kube play`)"
                    .to_string()
            } else {
                error
            }
        })
}

/// Makes `image` present in Podman's store: there already, or copied from Docker's (`docker
/// save | podman load`, said on stderr). Nothing is pulled.
pub fn ensure_image(image: &str) -> Result<(), String> {
    if run(&["image", "exists", image]).is_ok() {
        return Ok(());
    }
    let docker_has = Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Id}}", image])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !docker_has {
        return Err(format!(
            "image {image} is in neither Podman's store nor Docker's (verify never pulls for \
             the play)"
        ));
    }
    eprintln!("agentc: copying image {image} from Docker's store into Podman's");
    let mut save = Command::new("docker")
        .args(["save", image])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| format!("cannot run docker save: {error}"))?;
    let stdout = save
        .stdout
        .take()
        .map(Stdio::from)
        .unwrap_or_else(Stdio::null);
    let load = podman()
        .args(["load", "--quiet"])
        .stdin(stdout)
        .output()
        .map_err(|error| format!("cannot run podman load: {error}"))?;
    let saved = save.wait().map_err(|error| error.to_string())?;
    if !saved.success() || !load.status.success() {
        return Err(failed(&format!("docker save {image} | podman load"), &load));
    }
    // `docker save` of a short name loads as `localhost/NAME` when Docker's name had no
    // registry: the name the rendering says must resolve to it.
    if run(&["image", "exists", image]).is_err() {
        run(&["tag", &format!("localhost/{image}"), image])?;
    }
    Ok(())
}

/// Whether a Podman volume `name` exists.
pub fn volume_exists(name: &str) -> bool {
    run(&["volume", "exists", name]).is_ok()
}

/// Creates an internal network (no way out) for the play.
pub fn create_internal_network(name: &str) -> Result<(), String> {
    run(&["network", "create", "--internal", name]).map(drop)
}

/// Plays `file` on `network` (`none`, or a network's name).
pub fn play(file: &Path, network: &str) -> Result<(), String> {
    let file = file.to_string_lossy();
    run(&["kube", "play", "--network", network, &file]).map(drop)
}

/// Waits at most `timeout` for `container` to exit; its exit code.
pub fn wait(container: &str, timeout: Duration) -> Result<i64, String> {
    let deadline = Instant::now() + timeout;
    loop {
        let state = run(&[
            "inspect",
            "--format",
            "{{.State.Status}} {{.State.ExitCode}}",
            container,
        ])?;
        let mut words = state.split_whitespace();
        if let (Some("exited" | "stopped"), Some(code)) = (words.next(), words.next()) {
            return code
                .parse()
                .map_err(|_| format!("podman reports exit code {code:?} for {container}"));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the probe in {container} did not finish within {} seconds",
                timeout.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The output of `container` (stdout and stderr).
pub fn logs(container: &str) -> Result<String, String> {
    run(&["logs", container])
}

/// Whether a Podman secret `name` exists.
pub fn secret_exists(name: &str) -> bool {
    run(&["secret", "inspect", "--format", "{{.ID}}", name]).is_ok()
}

/// Creates the Podman secret `name` that `podman kube play` reads for a Kubernetes Secret of
/// that name: a JSON object of base64 values by key, each `value`.
pub fn create_secret(name: &str, keys: &[String], value: &str) -> Result<(), String> {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(value);
    let data: serde_json::Map<String, serde_json::Value> = keys
        .iter()
        .map(|key| (key.clone(), serde_json::Value::String(encoded.clone())))
        .collect();
    let mut child = podman()
        .args(["secret", "create", name, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot run podman: {error}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write as _;
        stdin
            .write_all(serde_json::Value::Object(data).to_string().as_bytes())
            .map_err(|error| format!("podman secret create {name}: {error}"))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|error| format!("podman secret create {name}: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(failed(&format!("podman secret create {name}"), &output))
    }
}

/// Removes what a play of `file` made: its pods (`podman kube down`), then `secrets`,
/// `volumes` and `network` (when given). Each failure is returned by name; the rest still goes.
pub fn tear_down(
    file: &Path,
    volumes: &[String],
    secrets: &[String],
    network: Option<&str>,
) -> Vec<String> {
    let mut left = Vec::new();
    if let Err(error) = run(&["kube", "down", &file.to_string_lossy()]) {
        left.push(error);
    }
    for secret in secrets {
        if let Err(error) = run(&["secret", "rm", secret]) {
            left.push(error);
        }
    }
    for volume in volumes {
        if volume_exists(volume) {
            if let Err(error) = run(&["volume", "rm", "--force", volume]) {
                left.push(error);
            }
        }
    }
    if let Some(network) = network {
        if let Err(error) = run(&["network", "rm", "--force", network]) {
            left.push(error);
        }
    }
    left
}
