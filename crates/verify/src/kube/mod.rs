//! `agentc verify --backend k8s`: the profile's Kubernetes rendering played by a real
//! Kubernetes-YAML executor, `podman kube play`, with verify's probe as the workload's command,
//! and the kernel's answers compared with the rendered pod.
//!
//! - [`podman`]: the executor's commands (images copied from Docker's store, the pod's
//!   network, play, wait, output, inspect, `podman kube down`), in a network namespace of the
//!   play's own where it plays an egress proxy.
//! - [`compare`](mod@compare): the rendered workload container against the probe's
//!   observation; each field Podman does not enforce is a `skip` with why.
//! - [`egress`](mod@egress): verify's egress checks as a container of the workload pod.
//! - [`reap`](mod@reap): what plays of killed verify processes left, removed before a play.
//!
//! The rendering is `agentc render --backend k8s`'s, made playable by
//! [`agentc_backend_k8s::play`] (every change a `played:` row). Where its NetworkPolicy lets
//! nothing out, the workload plays alone with `--network none`. Where an allowlist has an egress
//! proxy, the proxy Pod plays first and the workload after it, both on an internal network of
//! the play's own; played as root, that network lives in a network namespace of the play's
//! own (`ip netns add`), which has no way out at all, so nothing the play starts reaches beyond
//! it (an allowlisted host is let through by the proxy but does not answer: `egress.allowed`
//! warns), and no rule of the host's firewall stands between the two pods. Everything the play
//! made (pods, volumes, secrets, the network, the namespace) is removed on every way out, SIGINT
//! and SIGTERM included.

pub mod compare;
pub mod egress;
pub mod podman;
pub mod reap;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use std::path::PathBuf;

use agentc_backend_k8s::play::{Play, PlayedPod};
use agentc_backend_k8s::{EgressMode, Options, CONTAINER_NAME};
use agentc_egress::image::ProxyExecutable;
use agentc_engine::signals::Signals;
use agentc_policy::{Hint, LaunchSpec};

use self::egress::EgressPlay;
use self::podman::Podman;
use super::check::Check;
use super::egress::{egress_checks, EgressProbe};
use super::error::VerifyError;
use super::parse::parse_probe;
use super::probe::{verifiable, PROBE_SCRIPT};

pub use compare::compare_pod;

/// How long the played probe may run.
const PROBE_TIMEOUT: Duration = Duration::from_secs(120);

/// How long the egress proxy may take to answer its health check.
const PROXY_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// The image the rendering names for a proxy it does not play (none is made).
const UNPLAYED_PROXY_IMAGE: &str = "agentc-egress:not-played";

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

/// What the play is told beyond the rendering's options.
#[derive(Debug, Clone, Default)]
pub struct PlayInputs {
    /// Which allowlisted host `egress.allowed` reaches (`--egress-probe`).
    pub egress_probe: EgressProbe,
    /// The agentc binary the egress proxy's image is made of (imported into Docker, then
    /// copied into Podman's store) when the options name no `egress_proxy_image`.
    pub proxy_executable: ProxyExecutable,
}

/// Verifies the Kubernetes rendering of `spec` (with `options`, the rendering's own) by
/// playing it with `podman kube play`: [`prepare`], then [`KubePlay::run`].
pub async fn verify_kube(
    spec: &LaunchSpec,
    options: &Options,
    inputs: &PlayInputs,
) -> Result<Vec<Check>, VerifyError> {
    prepare(spec, options, inputs)?.run().await
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
    /// The network namespace the play runs in (`/run/netns/NAME`), when it plays an egress
    /// proxy as root; `None` plays in Podman's own (the host's, or rootless Podman's).
    pub namespace: Option<String>,
    /// The egress proxy played with the workload, and the check container beside the probe.
    pub egress: Option<EgressPlay>,
}

/// Renders `spec` for the play and makes it playable; refused before anything is created: no
/// Podman (exit 125), a rendering refused (65, by field), a warm pool (play its Sandbox), a
/// pids limit that leaves the probe no room (1), no proxy image to play (125).
pub fn prepare(
    spec: &LaunchSpec,
    options: &Options,
    inputs: &PlayInputs,
) -> Result<KubePlay, VerifyError> {
    podman::version().map_err(|why| {
        VerifyError::Engine(Hint::new(
            format!("cannot play the Kubernetes rendering: {why}"),
            "install Podman 4.3 or later (scripts/setup-engines.sh does), or verify a \
             container launch with --backend cli or api",
        ))
    })?;
    // What plays of killed verify processes left, before this one adds its own.
    reap::reap();
    verifiable(spec)?;
    let name = format!(
        "agentc-verify-{}-{}",
        std::process::id(),
        PLAYS.fetch_add(1, Ordering::Relaxed)
    );
    let mut options = options.clone();
    options.name = Some(name.clone());
    options.namespace = None;
    let given_proxy_image = options.egress_proxy_image.is_some();
    if !given_proxy_image {
        options.egress_proxy_image = Some(UNPLAYED_PROXY_IMAGE.to_string());
    }
    let (mut rendering, mut play) = render_for_play(spec, &options)?;
    if play.egress_proxy().is_some() && !given_proxy_image {
        // The proxy plays: its image is agentc's own, as a container launch's is.
        let tag = agentc_backend_cli::exec::egress::own_proxy_image(
            agentc_engine::Engine::Docker,
            &inputs.proxy_executable,
        )
        .map_err(|error| {
            VerifyError::Engine(Hint::new(
                format!("cannot make the egress proxy's image to play: {error}"),
                "pass --egress-proxy-image REF naming an image in Podman's or Docker's store \
                 (`agentc egress-proxy image` makes one in Docker's)",
            ))
        })?;
        options.egress_proxy_image = Some(tag);
        (rendering, play) = render_for_play(spec, &options)?;
    }
    let egress = egress::add_check(&mut play, &inputs.egress_probe);
    let network = network_for(&options, &name);
    // Root plays an egress proxy in a network namespace of its own; rootless Podman already
    // plays in one of its own.
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let namespace = (egress.is_some() && root).then(|| name.clone());
    for not_played in play
        .not_played
        .iter_mut()
        .filter(|object| object.object.starts_with("NetworkPolicy/"))
    {
        not_played.reason =
            network_reason(network.is_some(), egress.is_some(), namespace.is_some());
    }
    Ok(KubePlay {
        network,
        namespace,
        egress,
        rendering,
        play,
        name,
    })
}

/// The rendering of `spec` with `options`, and the play of it with verify's probe.
fn render_for_play(
    spec: &LaunchSpec,
    options: &Options,
) -> Result<(agentc_backend_k8s::Rendering, Play), VerifyError> {
    let rendering = agentc_backend_k8s::render(spec, options).map_err(|errors| {
        VerifyError::Unverifiable(Hint::carrying(
            format!("profile {:?}: {errors}", spec.profile),
            &errors,
        ))
    })?;
    let command = vec![
        "/bin/sh".to_string(),
        "-c".to_string(),
        probe_script(&empty_dir_mounts(&rendering)),
    ];
    let play = agentc_backend_k8s::play::play(&rendering, Some(command)).map_err(|why| {
        VerifyError::Unverifiable(Hint::none(format!("cannot play the rendering: {why}")))
    })?;
    Ok((rendering, play))
}

/// The egress checks that ask the pod's resolvers for the allowlisted host.
const DNS_CHECKS: [&str; 2] = ["egress.dns", "egress.unset-proxy"];

/// Why the play cannot show what the pod's resolvers answer on a cluster: the
/// rendered pod resolves through the cluster DNS (which forwards other names upstream: the
/// rendering's `egress-dns` note) or through the proxy's Service address, neither of which
/// the play has; Podman's resolver knows only the play's own pods.
fn dns_skip(pod: &agentc_backend_k8s::k8s_openapi::api::core::v1::PodSpec) -> String {
    let resolver = match pod.dns_policy.as_deref() {
        Some("None") => format!(
            "the proxy's DNS stub at {}",
            pod.dns_config
                .as_ref()
                .and_then(|config| config.nameservers.as_ref())
                .map(|servers| servers.join(", "))
                .unwrap_or_default()
        ),
        _ => "the cluster DNS, which forwards names it does not hold upstream (the \
              rendering's egress-dns note)"
            .to_string(),
    };
    format!(
        "needs a cluster: the pod resolves through {resolver}; in the play Podman's resolver \
         knows only the play's own pods"
    )
}

/// What stands in for the NetworkPolicies in the play.
fn network_reason(network: bool, proxy: bool, namespace: bool) -> String {
    let stands_in = match (network, proxy, namespace) {
        (false, _, _) => "the workload plays with --network none: no interface but loopback",
        (true, true, true) => {
            "the workload and the egress proxy play on an internal network in a network \
             namespace of the play's own, which has no way out at all: the proxy is the \
             workload's only peer, and an allowlisted host does not answer"
        }
        (true, true, false) => {
            "the workload and the egress proxy play on an internal network of the play's \
             own: the proxy is the workload's only peer"
        }
        (true, false, _) => "the workload plays on an internal network of its own, alone",
    };
    format!("Podman does not enforce NetworkPolicy: {stands_in}")
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

/// What the play reported: the probe's exit code and output, and the egress checks' output.
struct Observed {
    exit: i64,
    logs: String,
    egress: Option<String>,
}

impl KubePlay {
    /// Plays the egress proxy (when there is one) and waits until it answers its health check,
    /// then the workload with the probe; waits for the probe (at most two minutes), reads its
    /// output, removes everything the play made (also on error and on SIGINT or SIGTERM: 130,
    /// 143), and compares the rendered workload container with what the probe saw, followed by
    /// the egress checks.
    pub async fn run(self) -> Result<Vec<Check>, VerifyError> {
        let no_workload =
            || VerifyError::Unverifiable(Hint::none("the rendering has no workload pod".into()));
        let workload = self.play.workload().ok_or_else(no_workload)?.clone();
        for image in self
            .play
            .pods
            .iter()
            .filter_map(PlayedPod::spec)
            .flat_map(|spec| {
                spec.init_containers
                    .iter()
                    .flatten()
                    .chain(&spec.containers)
            })
            .filter_map(|container| container.image.clone())
        {
            podman::ensure_image(&image).map_err(|why| {
                VerifyError::Engine(Hint::new(
                    format!("cannot play the rendering: {why}"),
                    "build or pull it with docker, or pass --image",
                ))
            })?;
        }
        let dir = tempfile::tempdir().map_err(|error| {
            VerifyError::Probe(Hint::none(format!("cannot make a directory: {error}")))
        })?;
        let mut files = Vec::new();
        for pod in &self.play.pods {
            let file = dir.path().join(format!("{}.yaml", pod.name));
            std::fs::write(&file, pod.to_yaml()).map_err(|error| {
                VerifyError::Probe(Hint::none(format!(
                    "cannot write {}: {error}",
                    file.display()
                )))
            })?;
            files.push(file);
        }
        // Volumes the play makes: the emptyDirs, the ConfigMaps', and each claim that does
        // not exist yet.
        let mut volumes = self.play.empty_dirs.clone();
        volumes.extend(self.play.config_maps.iter().cloned());
        volumes.extend(
            self.play
                .claims
                .iter()
                .filter(|claim| !podman::volume_exists(claim))
                .cloned(),
        );
        // The Secrets the pods read, each a Podman secret of a placeholder per key: the probe
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
        let executor = match &self.namespace {
            Some(namespace) => Podman::in_namespace(namespace),
            None => Podman::host(),
        };
        let agent = workload.agent_container();
        let observed = match made {
            Ok(()) => self.observe(&executor, &files, &agent).await,
            Err(why) => Err(VerifyError::Engine(Hint::none(why))),
        };
        if let Err(VerifyError::Interrupted { .. }) = &observed {
            // The play's blocking work still runs its command: ended before the tear-down.
            reap::end_commands_of(&self.name);
        }
        let pods: Vec<String> = self.play.pods.iter().map(|pod| pod.name.clone()).collect();
        let mut left =
            executor.tear_down(&pods, &files, &volumes, &secrets, self.network.as_deref());
        if let Some(namespace) = &self.namespace {
            left.extend(podman::delete_namespace(namespace).err());
        }
        for what in &left {
            log::warn!("could not remove what the play made: {what}");
        }
        let observed = observed?;
        let observation = parse_probe(&observed.logs).map_err(|error| {
            VerifyError::Probe(Hint::new(
                format!(
                    "the probe in {agent} did not report (exit {}): {error}",
                    observed.exit
                ),
                "the image needs /bin/sh and busybox or coreutils",
            ))
        })?;
        // The expectation is the rendering's pod, not the played one.
        let pod = self.rendering.workload().ok_or_else(no_workload)?;
        let container = pod
            .containers
            .iter()
            .find(|container| container.name == CONTAINER_NAME)
            .ok_or_else(|| {
                VerifyError::Unverifiable(Hint::none(
                    "the workload pod has no agent container".into(),
                ))
            })?;
        let mut checks = compare_pod(
            pod,
            container,
            &observation,
            &self.play,
            self.network.as_deref().unwrap_or("none"),
        );
        if let (Some(egress), Some(output)) = (&self.egress, &observed.egress) {
            let resolver = dns_skip(pod);
            checks.extend(
                egress_checks(
                    Ok(output),
                    egress.allowed_skip.as_deref(),
                    egress.credentials,
                )
                .into_iter()
                .map(|check| {
                    if !DNS_CHECKS.contains(&check.what.as_str()) {
                        return check;
                    }
                    Check {
                        seen: resolver.clone(),
                        ok: true,
                        skipped: true,
                        warned: false,
                        hint: None,
                        ..check
                    }
                }),
            );
        }
        Ok(checks)
    }

    /// The play itself (the namespace, the network, each pod in turn), raced against SIGINT
    /// and SIGTERM; the caller tears it down.
    async fn observe(
        &self,
        executor: &Podman,
        files: &[PathBuf],
        agent: &str,
    ) -> Result<Observed, VerifyError> {
        let (executor, files, agent) = (executor.clone(), files.to_vec(), agent.to_string());
        let (network, namespace) = (self.network.clone(), self.namespace.clone());
        let egress = self.egress.clone();
        let name = self.name.clone();
        {
            let mut signals = Signals::new()?;
            let work = tokio::task::spawn_blocking(move || -> Result<Observed, String> {
                if let Some(namespace) = &namespace {
                    podman::create_namespace(namespace).map_err(|why| {
                        format!(
                            "cannot make the play's network namespace: {why} (the egress \
                             proxy plays in one of its own: run as root with iproute2)"
                        )
                    })?;
                }
                if let Some(network) = &network {
                    executor.create_internal_network(network)?;
                }
                let on = network.as_deref().unwrap_or("none");
                // The proxy's pod first: the workload's init container fetches its CA.
                for file in &files {
                    executor
                        .play(file, on)
                        .map_err(|why| format!("podman kube play refused the rendering: {why}"))?;
                    if let Some(egress) = egress.as_ref().filter(|egress| {
                        file.file_stem().and_then(|stem| stem.to_str())
                            == Some(egress.proxy_pod.as_str())
                    }) {
                        executor
                            .wait_ready(
                                &egress.proxy_container,
                                &[agentc_egress::PROXY_BINARY, "egress-proxy", "health"],
                                PROXY_READY_TIMEOUT,
                            )
                            .map_err(|why| format!("the egress proxy did not start: {why}"))?;
                    }
                }
                let exit = executor.wait(&agent, PROBE_TIMEOUT)?;
                let logs = executor.logs(&agent)?;
                let egress = match &egress {
                    Some(egress) => {
                        executor.wait(&egress.check_container, PROBE_TIMEOUT)?;
                        Some(executor.logs(&egress.check_container)?)
                    }
                    None => None,
                };
                Ok(Observed { exit, logs, egress })
            });
            tokio::select! {
                result = work => result
                    .map_err(|error| error.to_string())
                    .and_then(|result| result)
                    .map_err(|why| VerifyError::Engine(Hint::none(why))),
                signal = signals.recv() => Err(VerifyError::Interrupted {
                    signal,
                    removed: format!("the pod {name}"),
                }),
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
