//! The local Kubernetes-YAML executor: `podman kube play` and the Podman commands around it
//! (images copied from Docker's store, the pod's network, its container's exit, output and
//! inspect, and `podman kube down` with the volumes the play made), optionally inside a
//! network namespace of the play's own ([`Podman::in_namespace`]). Synchronous: each step is
//! one `podman` command.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The Podman executable, `AGENTC_PODMAN` or `podman` on `PATH`.
fn program() -> std::ffi::OsString {
    std::env::var_os("AGENTC_PODMAN").unwrap_or_else(|| "podman".into())
}

/// Where `ip netns` keeps the network namespace `name`.
pub fn namespace_path(name: &str) -> PathBuf {
    Path::new("/run/netns").join(name)
}

/// Creates the network namespace `name` (`ip netns add`, root only): its own interfaces (only
/// a loopback, down) and its own firewall, so the bridges Podman makes there reach nothing
/// outside it and no rule of the host's (Docker's `FORWARD` policy `DROP`) stands between the
/// play's pods.
pub fn create_namespace(name: &str) -> Result<(), String> {
    ip_netns("add", name)
}

/// Deletes the network namespace `name` (`ip netns del`), if it exists.
pub fn delete_namespace(name: &str) -> Result<(), String> {
    if !namespace_path(name).exists() {
        return Ok(());
    }
    ip_netns("del", name)
}

/// Runs `ip netns VERB NAME`.
fn ip_netns(verb: &str, name: &str) -> Result<(), String> {
    let output = Command::new("ip")
        .args(["netns", verb, name])
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run ip (iproute2): {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(failed(&format!("ip netns {verb} {name}"), &output))
    }
}

/// Runs Podman: in the host's network namespace, or in one of the play's own.
#[derive(Debug, Clone)]
pub struct Podman {
    namespace: Option<String>,
}

impl Podman {
    /// Podman as it is.
    pub fn host() -> Podman {
        Podman { namespace: None }
    }

    /// Podman inside the network namespace `name` (`nsenter --net=/run/netns/NAME`): the
    /// networks it makes, their bridges and rules, are that namespace's.
    pub fn in_namespace(name: &str) -> Podman {
        Podman {
            namespace: Some(name.to_string()),
        }
    }

    fn command(&self) -> Command {
        match &self.namespace {
            None => Command::new(program()),
            Some(name) => {
                let mut command = Command::new("nsenter");
                command
                    .arg(format!("--net={}", namespace_path(name).display()))
                    .arg(program());
                command
            }
        }
    }

    /// Runs `podman ARGS`, returning its stdout, or why it failed.
    pub(super) fn run(&self, args: &[&str]) -> Result<String, String> {
        let output = self
            .command()
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

    /// Creates an internal network (no way out) for the play.
    pub fn create_internal_network(&self, name: &str) -> Result<(), String> {
        self.run(&["network", "create", "--internal", name])
            .map(drop)
    }

    /// Plays `file` on `network` (`none`, or a network's name).
    pub fn play(&self, file: &Path, network: &str) -> Result<(), String> {
        let file = file.to_string_lossy();
        self.run(&["kube", "play", "--network", network, &file])
            .map(drop)
    }

    /// Waits at most `timeout` for `container` to exit; its exit code.
    pub fn wait(&self, container: &str, timeout: Duration) -> Result<i64, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let state = self.run(&[
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
                    "{container} did not finish within {} seconds",
                    timeout.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits at most `timeout` for `command` to succeed in `container` (`podman exec`, as a
    /// kubelet's exec probe); `Err` with the container's last output lines when it does not.
    pub fn wait_ready(
        &self,
        container: &str,
        command: &[&str],
        timeout: Duration,
    ) -> Result<Duration, String> {
        let started = Instant::now();
        loop {
            let mut args = vec!["exec", container];
            args.extend(command);
            if self.run(&args).is_ok() {
                return Ok(started.elapsed());
            }
            if started.elapsed() >= timeout {
                let logs = self.logs(container).unwrap_or_default();
                let tail: Vec<&str> = logs
                    .lines()
                    .filter(|line| !line.trim().is_empty())
                    .collect();
                return Err(format!(
                    "{container} was not ready within {} seconds; its output ended: {}",
                    timeout.as_secs(),
                    tail[tail.len().saturating_sub(3)..].join("; ")
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The output of `container` (stdout and stderr).
    pub fn logs(&self, container: &str) -> Result<String, String> {
        self.run(&["logs", container])
    }

    /// Removes what the play of `files` made: their `pods` (stopped within a second, then
    /// `podman kube down`, the last file first), then `secrets`, `volumes` and `network` (when
    /// given). Each failure is returned by name; the rest still goes.
    pub fn tear_down(
        &self,
        pods: &[String],
        files: &[PathBuf],
        volumes: &[String],
        secrets: &[String],
        network: Option<&str>,
    ) -> Vec<String> {
        let mut left = Vec::new();
        // A proxy still resolving a name for the checks would hold its graceful stop for
        // seconds; nothing of the play needs one. A pod never played is no failure.
        for pod in pods.iter().rev() {
            let _ = self.run(&["pod", "stop", "--time", "1", pod]);
        }
        for file in files.iter().rev() {
            if let Err(error) = self.run(&["kube", "down", &file.to_string_lossy()]) {
                left.push(error);
            }
        }
        for secret in secrets {
            if let Err(error) = self.run(&["secret", "rm", secret]) {
                left.push(error);
            }
        }
        for volume in volumes {
            if volume_exists(volume) {
                if let Err(error) = self.run(&["volume", "rm", "--force", volume]) {
                    left.push(error);
                }
            }
        }
        if let Some(network) = network {
            if let Err(error) = self.run(&["network", "rm", "--force", network]) {
                left.push(error);
            }
        }
        left
    }
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

/// Runs `podman ARGS` in the host's network namespace (images, volumes and secrets are
/// Podman's whichever namespace it runs in).
fn run(args: &[&str]) -> Result<String, String> {
    Podman::host().run(args)
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
    let load = Command::new(program())
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
    let mut child = Command::new(program())
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
