//! `agentc verify --backend k8s`: the profile's Kubernetes rendering played by a real
//! Kubernetes-YAML executor, `podman kube play`, with verify's probe as the workload's command,
//! and the kernel's answers compared with the rendered pod.
//!
//! - [`podman`]: the executor's commands (images copied from Docker's store, the pod's
//!   network, play, wait, output, inspect, `podman kube down`).
//! - [`compare`](mod@compare): the rendered workload container against the probe's
//!   observation; each field Podman does not enforce is a `skip` with why.
//!
//! The rendering is `agentc render --backend k8s`'s, made playable by
//! [`agentc_backend_k8s::play`] (every change a `played:` row). The workload plays alone:
//! with `--network none` when its NetworkPolicy denies all egress, else on an internal network
//! of its own; the egress proxy Pod of an allowlist is not played (a `not played:` row), so
//! nothing the play starts reaches beyond this machine. Everything the play made (pods,
//! volumes, the network) is removed on every way out, SIGINT and SIGTERM included.

pub mod compare;
pub mod podman;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use agentc_backend_common::signals::Signals;
use agentc_backend_k8s::play::{Adaptation, NotPlayed, Play};
use agentc_backend_k8s::{EgressMode, Options, CA_INIT_CONTAINER, CONTAINER_NAME};
use agentc_policy::LaunchSpec;

use super::check::Check;
use super::parse::parse_probe;
use super::probe::PROBE_SCRIPT;
use crate::commands::launch;
use crate::context::{Failure, EXIT_DOCKER, EXIT_FAILED, EXIT_INVALID};

pub use compare::compare_pod;

/// How long the played probe may run.
const PROBE_TIMEOUT: Duration = Duration::from_secs(120);

/// The value of every key of the Podman secrets a play makes for the Secrets its pod reads.
pub const SECRET_PLACEHOLDER: &str = "agentc-verify-placeholder";

/// Distinguishes the plays of one process (tests verify several at once).
static PLAYS: AtomicU32 = AtomicU32::new(0);

/// The probe script with a write test in each of `dirs` (the pod's `emptyDir` mounts, which
/// Podman 4.x mounts from disk, not as tmpfs), reported as the tmpfs writes are.
fn probe_script(dirs: &[String]) -> String {
    if dirs.is_empty() {
        return PROBE_SCRIPT.to_string();
    }
    let quoted: Vec<String> = dirs
        .iter()
        .map(|dir| {
            if dir
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
            {
                dir.clone()
            } else {
                format!("'{}'", dir.replace('\'', "'\\''"))
            }
        })
        .collect();
    let writes = format!(
        "for d in {}; do\n  f=\"$d/.agentc-probe.$$\"\n  if (printf '#!/bin/sh\\nexit 0\\n' >\"$f\") 2>/dev/null; then\n    chmod 0755 \"$f\"\n    if \"$f\" 2>/dev/null; then x=exec; else x=noexec; fi\n    rm -f \"$f\"\n    p TMPFS_WRITE \"$d ok $x\"\n  else\n    p TMPFS_WRITE \"$d denied\"\n  fi\ndone\np END 1\n",
        quoted.join(" ")
    );
    PROBE_SCRIPT.replace("p END 1\n", &writes)
}

/// The network the workload plays on: `none` where its NetworkPolicy lets nothing out, else
/// an internal network of its own (`NAME-net`).
fn network_for(options: &Options, name: &str) -> Option<String> {
    let none = options.egress.mode == EgressMode::Deny
        || (options.egress.mode == EgressMode::Allowlist
            && options.egress.hosts.is_empty()
            && options.egress.endpoints.is_empty());
    (!none).then(|| format!("{name}-net"))
}

/// Verifies the Kubernetes rendering of `spec` (with `options`, the rendering's own) by
/// playing it with `podman kube play`: [`prepare`], then [`KubePlay::run`].
pub fn verify_kube(spec: &LaunchSpec, options: &Options) -> Result<Vec<Check>, Failure> {
    prepare(spec, options)?.run()
}

/// A rendering ready to play: what is played, and the rendering it is compared with.
#[derive(Debug)]
pub struct KubePlay {
    /// The rendering as `agentc render --backend k8s` prints it (for a name of verify's own):
    /// the expectation.
    pub rendering: agentc_backend_k8s::Rendering,
    /// What is played; a test may change it behind verify's back to see a row fail.
    pub play: Play,
    /// The objects' base name, `agentc-verify-PID-N`.
    pub name: String,
    /// The internal network the workload plays on, or `None` for `--network none`.
    pub network: Option<String>,
}

/// Renders `spec` for the play and makes it playable; refused before anything is created: no
/// Podman (exit 125), a rendering refused (65, by field), a warm pool (play its Sandbox), a
/// pids limit that leaves the probe no room (1).
pub fn prepare(spec: &LaunchSpec, options: &Options) -> Result<KubePlay, Failure> {
    podman::version().map_err(|why| {
        Failure::new(
            EXIT_DOCKER,
            format!(
                "cannot play the Kubernetes rendering: {why}\n  hint: install Podman 4.3 or \
                 later (scripts/setup-engines.sh does), or verify a container launch with \
                 --backend cli or api"
            ),
        )
    })?;
    let container = launch::container_of(spec)?;
    if container
        .resources
        .pids_limit
        .is_some_and(|limit| limit < super::PROBE_PIDS)
    {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "profile {:?}: resources.pids_limit leaves the probe no process to run its \
                 commands (it needs {})",
                spec.profile,
                super::PROBE_PIDS
            ),
        ));
    }
    let name = format!(
        "agentc-verify-{}-{}",
        std::process::id(),
        PLAYS.fetch_add(1, Ordering::Relaxed)
    );
    let mut options = options.clone();
    options.name = Some(name.clone());
    options.namespace = None;
    // The proxy Pod is not played: its image is named, never pulled or run.
    if options.egress_proxy_image.is_none() {
        options.egress_proxy_image = Some("agentc-egress:not-played".to_string());
    }
    let rendering = agentc_backend_k8s::render(spec, &options)
        .map_err(|errors| Failure::unlaunchable(format!("profile {:?}: {errors}", spec.profile)))?;
    let command = vec![
        "/bin/sh".to_string(),
        "-c".to_string(),
        probe_script(&empty_dir_mounts(&rendering)),
    ];
    let mut play = agentc_backend_k8s::play::play(&rendering, Some(command))
        .map_err(|why| Failure::new(EXIT_INVALID, format!("cannot play the rendering: {why}")))?;
    unplay_egress_proxy(&mut play);
    Ok(KubePlay {
        network: network_for(&options, &name),
        rendering,
        play,
        name,
    })
}

/// Where the workload container mounts an `emptyDir`.
fn empty_dir_mounts(rendering: &agentc_backend_k8s::Rendering) -> Vec<String> {
    let Some(pod) = rendering.workload() else {
        return Vec::new();
    };
    let volumes = pod.volumes.as_deref().unwrap_or_default();
    pod.containers
        .iter()
        .filter(|container| container.name == CONTAINER_NAME)
        .flat_map(|agent| agent.volume_mounts.iter().flatten())
        .filter(|mount| {
            mount.read_only != Some(true)
                && volumes
                    .iter()
                    .any(|volume| volume.name == mount.name && volume.empty_dir.is_some())
        })
        .map(|mount| mount.mount_path.clone())
        .collect()
}

/// What the probe reported: its exit code and output.
type Probed = (i64, String);

impl KubePlay {
    /// Plays the workload with the probe, waits for it (at most two minutes), reads
    /// its output, removes everything the play made (also on error and on SIGINT or SIGTERM:
    /// 130, 143), and compares the rendered workload container with what the probe saw.
    pub fn run(self) -> Result<Vec<Check>, Failure> {
        let workload = self
            .play
            .workload()
            .ok_or_else(|| Failure::new(EXIT_INVALID, "the rendering has no workload pod"))?
            .clone();
        for image in workload
            .spec()
            .into_iter()
            .flat_map(|spec| {
                spec.init_containers
                    .iter()
                    .flatten()
                    .chain(&spec.containers)
            })
            .filter_map(|container| container.image.clone())
        {
            podman::ensure_image(&image).map_err(|why| {
                Failure::new(
                    EXIT_DOCKER,
                    format!(
                        "cannot play the rendering: {why}\n  hint: build or pull it with \
                         docker, or pass --image"
                    ),
                )
            })?;
        }
        let dir = tempfile::tempdir().map_err(|error| {
            Failure::new(EXIT_FAILED, format!("cannot make a directory: {error}"))
        })?;
        let file = dir.path().join(format!("{}.yaml", self.name));
        std::fs::write(&file, workload.to_yaml()).map_err(|error| {
            Failure::new(
                EXIT_FAILED,
                format!("cannot write {}: {error}", file.display()),
            )
        })?;
        // Volumes the play makes: the emptyDirs, and each claim that does not exist yet.
        let mut volumes = self.play.empty_dirs.clone();
        volumes.extend(
            self.play
                .claims
                .iter()
                .filter(|claim| !podman::volume_exists(claim))
                .cloned(),
        );
        // The Secrets the pod reads, each a Podman secret of a placeholder per key: the probe
        // observes names only, and no value of the caller's is read. One that exists is used
        // as it is, and kept.
        let mut secrets = Vec::new();
        let mut made = Ok(());
        for (secret, keys) in &self.play.secrets {
            if podman::secret_exists(secret) {
                continue;
            }
            made = podman::create_secret(secret, keys, SECRET_PLACEHOLDER);
            if made.is_err() {
                break;
            }
            secrets.push(secret.clone());
        }
        let agent = workload.agent_container();
        let observed = match made {
            Ok(()) => self.observe(&file, &agent),
            Err(why) => Err(Failure::new(EXIT_DOCKER, why)),
        };
        let left = podman::tear_down(&file, &volumes, &secrets, self.network.as_deref());
        for what in &left {
            log::warn!("could not remove what the play made: {what}");
        }
        let (exit, logs) = observed?;
        let observation = parse_probe(&logs).map_err(|error| {
            Failure::new(
                EXIT_FAILED,
                format!(
                    "the probe in {agent} did not report (exit {exit}): {error}\n  hint: the \
                     image needs /bin/sh and busybox or coreutils"
                ),
            )
        })?;
        // The expectation is the rendering's pod, not the played one.
        let pod = self
            .rendering
            .workload()
            .ok_or_else(|| Failure::new(EXIT_INVALID, "the rendering has no workload pod"))?;
        let container = pod
            .containers
            .iter()
            .find(|container| container.name == CONTAINER_NAME)
            .ok_or_else(|| Failure::new(EXIT_INVALID, "the workload pod has no agent container"))?;
        Ok(compare_pod(
            pod,
            container,
            &observation,
            &self.play,
            self.network.as_deref().unwrap_or("none"),
        ))
    }

    /// The play itself, raced against SIGINT and SIGTERM; the caller tears it down.
    fn observe(&self, file: &std::path::Path, agent: &str) -> Result<Probed, Failure> {
        let runtime = launch::runtime()?;
        let (file, network, agent) = (file.to_path_buf(), self.network.clone(), agent.to_string());
        let name = self.name.clone();
        runtime.block_on(async move {
            let mut signals = Signals::new().map_err(launch::exec_failure)?;
            let work = tokio::task::spawn_blocking(move || -> Result<Probed, String> {
                if let Some(network) = &network {
                    podman::create_internal_network(network)?;
                }
                podman::play(&file, network.as_deref().unwrap_or("none"))
                    .map_err(|why| format!("podman kube play refused the rendering: {why}"))?;
                let exit = podman::wait(&agent, PROBE_TIMEOUT)?;
                Ok((exit, podman::logs(&agent)?))
            });
            tokio::select! {
                result = work => result
                    .map_err(|error| error.to_string())
                    .and_then(|result| result)
                    .map_err(|why| Failure::new(EXIT_DOCKER, why)),
                signal = signals.recv() => Err(Failure::new(
                    u8::try_from(signal.exit_code()).unwrap_or(EXIT_FAILED),
                    format!("interrupted by {signal}; removed the pod {name}"),
                )),
            }
        })
    }
}

/// The egress proxy is not played: its pod leaves the play (a `not played:` row) and so
/// does the workload's init container that fetches the proxy's CA.
fn unplay_egress_proxy(play: &mut Play) {
    let Some(proxy) = play.egress_proxy().map(|pod| pod.name.clone()) else {
        return;
    };
    play.pods.retain(|pod| pod.name != proxy);
    play.not_played.push(NotPlayed {
        object: format!("Pod/{proxy}"),
        reason: "the egress proxy is not played: the workload plays on an internal network \
                 of its own, with no way out at all (stricter than its allowlist)"
            .to_string(),
    });
    let Some(workload) = play
        .pods
        .iter_mut()
        .find(|pod| pod.role == agentc_backend_k8s::play::PlayedRole::Workload)
    else {
        return;
    };
    let name = workload.name.clone();
    if let Some(spec) = workload.pod.spec.as_mut() {
        if let Some(init) = spec.init_containers.as_mut() {
            let before = init.len();
            init.retain(|container| container.name != CA_INIT_CONTAINER);
            if init.len() != before {
                play.adaptations.push(Adaptation {
                    field: format!("Pod/{name} spec.initContainers[{CA_INIT_CONTAINER}]"),
                    change: "left out with the egress proxy it fetches the CA from".to_string(),
                });
            }
            if init.is_empty() {
                spec.init_containers = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_script_tries_a_write_in_each_empty_dir_before_its_end() {
        let script = probe_script(&["/tmp".to_string(), "/home/a b".to_string()]);
        assert!(script.contains("for d in /tmp '/home/a b'; do"), "{script}");
        assert!(script.ends_with("done\np END 1\n"), "{script}");
        assert_eq!(script.matches("p END 1").count(), 1);
        assert_eq!(probe_script(&[]), PROBE_SCRIPT);
    }
}
