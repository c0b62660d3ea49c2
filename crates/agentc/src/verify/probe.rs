//! The probe and how it is launched: the shell script that reports kernel facts, the launch
//! that runs it in place of the agent (same hardening, mounts and limits), and the whole flow
//! for one resolved launch through either backend: start it, wait, read its output and
//! `docker inspect`, remove it (also on error and on SIGINT or SIGTERM), compare.
//!
//! For an allowlist enforced outside, the egress checks ([`super::egress`]) run after the probe,
//! in a container of the proxy image on the probe's isolated network, removed with the probe's
//! egress companion.
//!
//! The probe container always has a name (the spec's plus `-verify`, or
//! `agentc-verify-<profile>-<pid>`), so it can be removed whatever happens.

use std::collections::BTreeMap;
use std::time::Duration;

use agentc_backend_cli::exec::docker::{self, RemoveOnDrop};
use agentc_backend_cli::exec::SignalShield;
use agentc_egress::probe::Target;
use agentc_policy::{Action, ContainerSpec, EgressSpec, LaunchSpec, Network};
use bollard::query_parameters::{
    LogsOptionsBuilder, RemoveContainerOptionsBuilder, WaitContainerOptionsBuilder,
};
use futures_util::StreamExt;
use tokio::signal::unix::{signal, SignalKind};

use super::check::Check;
use super::check_run::{check_output_api, check_output_cli};
use super::compare::compare;
use super::egress::{
    check_spec, credential_environment, egress_checks, proxy_env, EgressProbe, ProxyFacts,
    CHECK_SUFFIX,
};
use super::host_path::HostPathRun;
use super::parse::parse_probe;
use crate::cli::BackendArg;
use crate::commands::launch;
use crate::context::{Failure, EXIT_DOCKER, EXIT_FAILED};

/// How long the probe may run before verify gives up.
const PROBE_TIMEOUT: Duration = Duration::from_secs(120);

/// The processes the probe needs at once: its shell and one command (`id`, `cat`, a tmpfs
/// script). Measured: the probe reports in full under `--pids-limit 2`; under 1 the shell's
/// first fork fails and it stops after `PROBE=1`.
pub const PROBE_PIDS: u32 = 2;

/// The probe script run in place of the agent: prints kernel facts as KEY=VALUE lines.
///
/// It needs only a POSIX shell with `id`, `pwd`, `rm`, `chmod`, `ls`, `tr`, `cat` and `awk`
/// (busybox or coreutils). Its only writes are a file `/probe-file` at the root (to show the
/// root is read-only; removed at once when it is not) and a small script in each tmpfs mount
/// (to show it is writable and whether it executes; removed at once). Environment variables are
/// reported by name only.
///
/// Lines: `PROBE=1` first and `END=1` last; `UID`, `GID`, `USER`, `GROUP`, `CWD`; `PID1` (the
/// command name of PID 1, `docker-init` under `--init`); `ROOT_WRITE=ok|denied`;
/// one `MOUNT=<target> <fstype> <options>` per line of `/proc/mounts` (targets keep the kernel's
/// octal escapes); one `TMPFS_WRITE=<target> ok exec|noexec` or `<target> denied` per tmpfs;
/// `CapInh`, `CapPrm`, `CapEff`, `CapBnd`, `CapAmb` (hex), `NoNewPrivs`, `Seccomp` from
/// `/proc/self/status`; `NET=<interfaces>`; `CGROUP:<file>=<content>` for each readable cgroup
/// v1 or v2 limit file; `ENV_NAMES=<names>`; `KERNEL=gvisor` when the kernel log starts with
/// gVisor's `Starting gVisor...` (readable without privileges there; refused under runc), else
/// `KERNEL=host`.
pub const PROBE_SCRIPT: &str = r#"p() { printf '%s=%s\n' "$1" "$2"; }
p PROBE 1
p UID "$(id -u)"
p GID "$(id -g)"
p USER "$(id -un 2>/dev/null)"
p GROUP "$(id -gn 2>/dev/null)"
p CWD "$(pwd)"
p PID1 "$(cat /proc/1/comm 2>/dev/null)"
if (: >/probe-file) 2>/dev/null; then rm -f /probe-file; p ROOT_WRITE ok; else p ROOT_WRITE denied; fi
while read -r dev mnt fstype opts rest; do p MOUNT "$mnt $fstype $opts"; done </proc/mounts
while read -r dev mnt fstype opts rest; do
  [ "$fstype" = tmpfs ] || continue
  case "$mnt" in *\\*|/dev|/dev/*|/sys|/sys/*|/proc|/proc/*) continue;; esac
  f="$mnt/.agentc-probe.$$"
  if (printf '#!/bin/sh\nexit 0\n' >"$f") 2>/dev/null; then
    chmod 0755 "$f"
    if "$f" 2>/dev/null; then x=exec; else x=noexec; fi
    rm -f "$f"
    p TMPFS_WRITE "$mnt ok $x"
  else
    p TMPFS_WRITE "$mnt denied"
  fi
done </proc/mounts
while IFS=: read -r k v; do
  case "$k" in CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp) p "$k" $v;; esac
done </proc/self/status
p NET "$(ls /sys/class/net 2>/dev/null | tr '\n' ' ')"
for f in memory/memory.limit_in_bytes memory/memory.memsw.limit_in_bytes pids/pids.max \
  cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us cpu,cpuacct/cpu.cfs_quota_us \
  cpu,cpuacct/cpu.cfs_period_us memory.max memory.swap.max pids.max cpu.max; do
  if [ -r "/sys/fs/cgroup/$f" ]; then p "CGROUP:$f" "$(cat "/sys/fs/cgroup/$f")"; fi
done
p ENV_NAMES "$(awk 'BEGIN { for (k in ENVIRON) printf "%s ", k }' 2>/dev/null)"
k="$(dmesg 2>/dev/null)"
case "$k" in *"Starting gVisor"*) p KERNEL gvisor;; *) p KERNEL host;; esac
p END 1
"#;

/// The launch that verifies `spec`: the same container with the agent replaced by the probe.
///
/// Exactly these fields change: `entrypoint` becomes `/bin/sh` and `command` becomes
/// `["-c", PROBE_SCRIPT]`; `interactive`, `tty` and `auto_remove` become false and `detach`
/// true, so the caller can wait for the exit, read the output, run `docker inspect` and then
/// remove the container itself; `name` gets the suffix `-verify` so a running agent of the same
/// profile does not collide. Everything else (user, mounts, tmpfs, capabilities, network, limits,
/// log driver, labels, environment) is kept, which is what makes the observation meaningful.
pub fn probe_spec(spec: &ContainerSpec) -> ContainerSpec {
    ContainerSpec {
        name: spec.name.as_ref().map(|name| format!("{name}-verify")),
        entrypoint: Some("/bin/sh".to_string()),
        command: vec!["-c".to_string(), PROBE_SCRIPT.to_string()],
        interactive: false,
        tty: false,
        auto_remove: false,
        detach: true,
        ..spec.clone()
    }
}

/// What the probe left: its output, its exit code and `docker inspect`.
#[derive(Debug)]
struct Probed {
    logs: String,
    exit_code: i64,
    inspect: serde_json::Value,
    /// The network the probe joined (its egress companion's may have moved).
    network: Network,
    /// Its DNS servers.
    dns: Vec<std::net::IpAddr>,
    /// Behind an egress proxy: the egress check container's output, or why it did not run.
    egress: Option<Result<String, String>>,
    /// Behind an egress proxy: the host-path row ([`super::host_path`]).
    host_path: Option<Check>,
}

/// Verifies one resolved container launch (a run, a sandbox or a seed) through `backend`:
/// starts [`probe_spec`] of it, waits for the probe, reads its output and `docker inspect`,
/// removes the container, and returns [`compare`]'s checks.
///
/// `env` is where secrets are resolved from, exactly as a launch resolves them: `agentc
/// verify` passes the process environment; the cli backend gives it to `docker run` on top of
/// the inherited one. The probe container is named after the spec (`NAME-verify`) or
/// `agentc-verify-<profile>-<pid>`; it is removed on success, on error and on SIGINT or
/// SIGTERM (a failure with exit 130 or 143). A build launch is refused. With `pull`, a
/// missing image is pulled first, as `agentc run --pull` does; without, it is refused.
///
/// When the allowlist is enforced outside, the egress checks follow the probe's (see
/// [`super::egress`]); `egress_probe` names the host `egress.allowed` reaches, or skips it
/// ([`EgressProbe::Skip`]: then no check reaches beyond the proxy).
pub fn verify_launch(
    spec: &LaunchSpec,
    backend: BackendArg,
    env: &BTreeMap<String, String>,
    pull: bool,
    egress_probe: &EgressProbe,
) -> Result<Vec<Check>, Failure> {
    let container = launch::container_of(spec)?;
    require_probe_room(&spec.profile, container.resources.pids_limit)?;
    // The isolation floor is met as the launch meets it: the probe runs where the sandbox would.
    let placed = launch::meet_floor(container, &spec.profile, backend)?;
    let mut probe = probe_spec(&placed);
    let name = probe
        .name
        .get_or_insert_with(|| format!("agentc-verify-{}-{}", spec.profile, std::process::id()))
        .clone();
    // An egress companion of the probe's own: named apart from a running sandbox's, and
    // labelled for the probe, so that it is removed with the probe and nothing else is.
    probe.egress_for(&name, "verify");
    let target = probe
        .egress
        .as_ref()
        .map(|egress| egress_probe.target(&egress.proxy.command));
    let allowed = target.as_ref().and_then(|target| target.as_ref().ok());
    let probed = match backend {
        BackendArg::Cli => probe_cli(spec, &probe, &name, env, pull, allowed)?,
        BackendArg::Api => probe_api(&probe, &name, env, pull, allowed)?,
    };
    // The network the probe joined is the one to compare (its companion's, not the agent's).
    let container = &ContainerSpec {
        network: probed.network.clone(),
        dns: probed.dns.clone(),
        ..placed.clone()
    };
    let observed = parse_probe(&probed.logs).map_err(|error| {
        Failure::new(
            EXIT_FAILED,
            format!(
                "the probe in {name} did not report (exit {}): {error}\n  hint: the image needs /bin/sh and busybox or coreutils; its output was:\n{}",
                probed.exit_code,
                tail(&probed.logs)
            ),
        )
    })?;
    let mut checks = compare(
        &expected(container, &probed.inspect)?,
        &observed,
        &probed.inspect,
    );
    if let Some(output) = &probed.egress {
        let skipped = match &target {
            Some(Err(why)) => Some(*why),
            _ => None,
        };
        let credentials = container
            .egress
            .as_ref()
            .is_some_and(|egress| !egress.credentials.is_empty());
        checks.extend(egress_checks(
            output.as_deref().map_err(String::as_str),
            skipped,
            credentials,
        ));
    }
    checks.extend(credential_environment(container, &probed.inspect, env));
    checks.extend(probed.host_path);
    Ok(checks)
}

/// The egress companion's proxy container on the isolated `network` (the names
/// [`ContainerSpec::egress_instance`] gives: `NAME-egress` and `NAME-egress-proxy`).
fn proxy_on(network: &str) -> String {
    format!("{network}-proxy")
}

/// What the engine was asked for: the spec itself on Docker; on Podman the spec with the
/// difference table's rewrites ([`agentc_backend_common::podman::adapt`]), the image's
/// `USER` read from the container's inspect.
fn expected(
    container: &ContainerSpec,
    inspect: &serde_json::Value,
) -> Result<ContainerSpec, Failure> {
    match agentc_backend_common::engine() {
        agentc_backend_common::Engine::Docker => Ok(container.clone()),
        agentc_backend_common::Engine::Podman => {
            let user = inspect
                .pointer("/Config/User")
                .and_then(|user| user.as_str())
                .unwrap_or_default();
            agentc_backend_common::podman::adapt(container, Some(user))
                .map_err(launch::exec_failure)
        }
    }
}

/// Refuses, before anything is created, a launch whose pids limit leaves the probe no room to
/// fork: it would stop after its first line and say nothing about the container.
fn require_probe_room(profile: &str, pids_limit: Option<u32>) -> Result<(), Failure> {
    match pids_limit {
        Some(limit) if limit < PROBE_PIDS => Err(Failure::new(
            EXIT_FAILED,
            format!(
                "profile {:?}: resources.pids_limit = {limit} leaves the probe no process to run its commands (it needs {PROBE_PIDS})\n  hint: verify cannot observe this launch; verify a copy of the profile with pids_limit = {PROBE_PIDS} to check everything else",
                profile
            ),
        )),
        _ => Ok(()),
    }
}

fn tail(logs: &str) -> String {
    let lines: Vec<&str> = logs.lines().collect();
    lines[lines.len().saturating_sub(10)..]
        .iter()
        .map(|line| format!("    {line}\n"))
        .collect()
}

fn interrupted(signal: libc::c_int, name: &str) -> Failure {
    let (code, signal_name) = if signal == libc::SIGTERM {
        (143, "SIGTERM")
    } else {
        (130, "SIGINT")
    };
    Failure::new(
        code,
        format!("interrupted by {signal_name}; removed container {name}"),
    )
}

/// The probe through the docker CLI: `docker run --detach ...` exactly as rendered, then
/// `docker wait`, `docker logs` and `docker inspect`.
fn probe_cli(
    spec: &LaunchSpec,
    probe: &ContainerSpec,
    name: &str,
    env: &BTreeMap<String, String>,
    pull: bool,
    allowed: Option<&Target>,
) -> Result<Probed, Failure> {
    agentc_backend_common::resolve_env(probe, env).map_err(launch::exec_failure)?;
    let probe_launch = LaunchSpec {
        action: Action::Container(Box::new(probe.clone())),
        ..spec.clone()
    };
    agentc_backend_cli::render_argv(&probe_launch).map_err(Failure::unlaunchable)?;
    docker::ensure_image(&probe.image, pull, launch::notify).map_err(launch::exec_failure)?;
    // The runtime is asked for, and Podman's rows applied, before anything is created.
    let mut argv =
        agentc_backend_cli::exec::engine::launch_argv(probe).map_err(launch::exec_failure)?;
    // The egress companion first (removed after the probe, on every way out).
    let mut placed = probe.clone();
    let _companion = agentc_backend_cli::exec::egress::setup_for(&mut placed, env)
        .map_err(launch::exec_failure)?;
    if placed != *probe {
        argv =
            agentc_backend_cli::exec::engine::launch_argv(&placed).map_err(launch::exec_failure)?;
    }
    let shield = SignalShield::new(true);
    let _remove = RemoveOnDrop { name };
    let check = |shield: &SignalShield| match shield.received() {
        Some(signal) => Err(interrupted(signal, name)),
        None => Ok(()),
    };
    let args: Vec<&str> = argv.iter().skip(1).map(String::as_str).collect();
    let started = docker::output_with_env(&args, env);
    check(&shield)?;
    started.map_err(launch::exec_failure)?;
    let waited = docker::output(&["wait", name]);
    check(&shield)?;
    let exit_code = waited
        .map_err(launch::exec_failure)?
        .trim()
        .parse::<i64>()
        .unwrap_or(-1);
    let logs = docker::output(&["logs", name]);
    check(&shield)?;
    let logs = logs.map_err(|error| cannot_read_logs(name, &error.to_string()))?;
    let inspect_text =
        docker::output(&["inspect", "--type", "container", name]).map_err(launch::exec_failure)?;
    let inspect = serde_json::from_str::<serde_json::Value>(&inspect_text)
        .ok()
        .and_then(|value| value.as_array().and_then(|array| array.first().cloned()))
        .ok_or_else(|| Failure::new(EXIT_DOCKER, format!("cannot read `docker inspect {name}`")))?;
    check(&shield)?;
    let egress = match (&placed.egress, &placed.network) {
        (Some(egress), Network::Named { name: network }) => {
            let check_name = format!("{name}{CHECK_SUFFIX}");
            // Removed before the companion (whose network it is on), on every way out.
            let _remove_check = RemoveOnDrop { name: &check_name };
            // The host-path row first: it reads the proxy's address from its inspect, and the
            // egress checks' replay stops a proxy with `on_replay = "stop"`.
            let host_path = HostPathRun {
                egress,
                workload: &placed,
                probe: name,
                network,
            }
            .cli(&shield);
            check(&shield)?;
            let checked = EgressRun {
                egress,
                probe: name,
                network,
                dns: &placed.dns,
                probe_inspect: &inspect,
                allowed,
                env,
            }
            .cli(&check_name, &shield);
            check(&shield)?;
            Some((checked, host_path))
        }
        _ => None,
    };
    let (egress, host_path) = egress.unzip();
    Ok(Probed {
        logs,
        exit_code,
        inspect,
        network: placed.network.clone(),
        dns: placed.dns.clone(),
        egress,
        host_path,
    })
}

/// What the egress check container is made of.
struct EgressRun<'a> {
    /// The probe's egress companion (the proxy's spec is the check container's template).
    egress: &'a EgressSpec,
    /// The probe container's name.
    probe: &'a str,
    /// The isolated network the probe joined.
    network: &'a str,
    /// The probe's DNS servers.
    dns: &'a [std::net::IpAddr],
    /// The probe's inspect (its proxy variables are copied).
    probe_inspect: &'a serde_json::Value,
    /// What `egress.allowed` reaches.
    allowed: Option<&'a Target>,
    /// The caller's environment: a value the probe holds that equals it is never copied.
    env: &'a BTreeMap<String, String>,
}

impl EgressRun<'_> {
    /// The check container's spec, from the proxy's inspect.
    fn spec(&self, proxy_inspect: &serde_json::Value) -> Result<ContainerSpec, String> {
        let facts = ProxyFacts::from_inspect(proxy_inspect, self.network)?;
        Ok(check_spec(
            self.egress,
            self.probe,
            self.network,
            self.dns,
            proxy_env(self.probe_inspect, self.egress, self.env),
            &facts,
            self.allowed,
        ))
    }

    /// Runs the check container through the docker CLI (`docker run --detach`, `wait`,
    /// `logs`); the caller removes it. Stops early when a signal arrived.
    fn cli(&self, check_name: &str, shield: &SignalShield) -> Result<String, String> {
        let text = docker::output(&["inspect", "--type", "container", &proxy_on(self.network)])
            .map_err(|error| error.to_string())?;
        let proxy_inspect = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|value| value.as_array().and_then(|array| array.first().cloned()))
            .ok_or("cannot read the proxy's `docker inspect`")?;
        let spec = self.spec(&proxy_inspect)?;
        check_output_cli(&spec, check_name, shield)
    }

    /// Runs the check container through the Engine API (`launch`, wait, logs); the probe's
    /// companion removal (by the `io.agentc.egress-for` label) removes it.
    async fn api(&self, docker: &bollard::Docker) -> Result<String, String> {
        let proxy = proxy_on(self.network);
        let proxy_inspect = docker
            .inspect_container(&proxy, None)
            .await
            .map_err(|error| format!("cannot inspect {proxy}: {error}"))?;
        let proxy_inspect =
            serde_json::to_value(&proxy_inspect).map_err(|error| error.to_string())?;
        let spec = self.spec(&proxy_inspect)?;
        check_output_api(docker, &spec).await
    }
}

fn cannot_read_logs(name: &str, message: &str) -> Failure {
    Failure::new(
        EXIT_FAILED,
        format!(
            "cannot read the probe's output from {name}: {message}\n  hint: verify reads `docker logs`; a log driver that keeps no logs cannot be verified"
        ),
    )
}

/// The probe through the Engine API: `launch` creates and starts it (detached), then wait,
/// logs and inspect through bollard; SIGINT and SIGTERM remove it.
fn probe_api(
    probe: &ContainerSpec,
    name: &str,
    env: &BTreeMap<String, String>,
    pull: bool,
    allowed: Option<&Target>,
) -> Result<Probed, Failure> {
    let runtime = launch::runtime()?;
    let env = env.clone();
    // `launch` removes what it created when it fails; after it returns, this removes the probe.
    runtime.block_on(async {
        let docker = launch::connect().await?;
        agentc_backend_api::ensure_image(&docker, &probe.image, pull, launch::notify)
            .await
            .map_err(launch::exec_failure)?;
        // Listen before anything is created: a signal between steps is then never lost.
        let listen = |kind| {
            signal(kind).map_err(|error| {
                Failure::new(EXIT_DOCKER, format!("cannot listen for signals: {error}"))
            })
        };
        let mut sigint = listen(SignalKind::interrupt())?;
        let mut sigterm = listen(SignalKind::terminate())?;
        let options = agentc_backend_api::LaunchOptions {
            env: env.clone(),
            stdin_is_terminal: false,
        };
        let outcome = agentc_backend_api::launch(&docker, probe, &options)
            .await
            .map_err(launch::exec_failure)?;
        let id = outcome.container_id;
        let observe = async {
            let wait = async {
                let options = WaitContainerOptionsBuilder::new()
                    .condition("not-running")
                    .build();
                match docker.wait_container(&id, Some(options)).next().await {
                    Some(Ok(response)) => Ok(response.status_code),
                    Some(Err(bollard::errors::Error::DockerContainerWaitError {
                        code, ..
                    })) => Ok(code),
                    Some(Err(error)) => Err(Failure::new(
                        EXIT_DOCKER,
                        format!("cannot wait for {name}: {error}"),
                    )),
                    None => Err(Failure::new(
                        EXIT_DOCKER,
                        format!("the wait for {name} ended without a status"),
                    )),
                }
            };
            let exit_code = tokio::time::timeout(PROBE_TIMEOUT, wait)
                .await
                .map_err(|_| {
                    Failure::new(
                        EXIT_FAILED,
                        format!(
                            "the probe in {name} did not finish within {} seconds",
                            PROBE_TIMEOUT.as_secs()
                        ),
                    )
                })??;
            let options = LogsOptionsBuilder::new().stdout(true).stderr(true).build();
            let mut stream = docker.logs(&id, Some(options));
            let mut logs = String::new();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|error| cannot_read_logs(name, &error.to_string()))?;
                logs.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
            }
            let inspect = docker.inspect_container(&id, None).await.map_err(|error| {
                Failure::new(EXIT_DOCKER, format!("cannot inspect {name}: {error}"))
            })?;
            let inspect = serde_json::to_value(&inspect).map_err(|error| {
                Failure::new(
                    EXIT_DOCKER,
                    format!("cannot read the inspect of {name}: {error}"),
                )
            })?;
            let network = match inspect.pointer("/HostConfig/NetworkMode") {
                Some(serde_json::Value::String(mode)) if probe.egress.is_some() => {
                    Network::Named { name: mode.clone() }
                }
                _ => probe.network.clone(),
            };
            let dns = match inspect.pointer("/HostConfig/Dns") {
                Some(serde_json::Value::Array(servers)) if probe.egress.is_some() => servers
                    .iter()
                    .filter_map(|server| server.as_str()?.parse().ok())
                    .collect(),
                _ => probe.dns.clone(),
            };
            let egress = match (&probe.egress, &network) {
                (Some(egress), Network::Named { name: network }) => {
                    // The host-path row first, as through the CLI (the replay check may
                    // stop the proxy).
                    let host_path = HostPathRun {
                        egress,
                        workload: probe,
                        probe: name,
                        network,
                    }
                    .api(&docker)
                    .await;
                    let checked = EgressRun {
                        egress,
                        probe: name,
                        network,
                        dns: &dns,
                        probe_inspect: &inspect,
                        allowed,
                        env: &env,
                    }
                    .api(&docker)
                    .await;
                    Some((checked, host_path))
                }
                _ => None,
            };
            let (egress, host_path) = egress.unzip();
            Ok::<_, Failure>(Probed {
                logs,
                exit_code,
                inspect,
                network,
                dns,
                egress,
                host_path,
            })
        };
        let result = tokio::select! {
            result = observe => result,
            _ = sigint.recv() => Err(interrupted(libc::SIGINT, name)),
            _ = sigterm.recv() => Err(interrupted(libc::SIGTERM, name)),
        };
        let remove = RemoveContainerOptionsBuilder::new().force(true).build();
        let _ = docker.remove_container(&id, Some(remove)).await;
        // The probe's egress companion and its egress check container, labelled for it alone.
        if probe.egress.is_some() {
            if let Err(error) =
                agentc_backend_api::companion::remove_companions(&docker, name).await
            {
                log::warn!("the probe's egress companion was not removed: {error}");
            }
        }
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::recorded::hardened_spec;

    /// Regression: `agentc verify fixtures/valid/sandbox-cpus-max.toml` (pids_limit = 1)
    /// reported "the probe was cut short" after the shell's first fork failed.
    #[test]
    fn probe_spec_replaces_only_the_documented_fields() {
        let spec = hardened_spec();
        let probe = probe_spec(&spec);
        assert_eq!(probe.entrypoint.as_deref(), Some("/bin/sh"));
        assert_eq!(
            probe.command,
            vec!["-c".to_string(), PROBE_SCRIPT.to_string()]
        );
        assert_eq!(probe.name.as_deref(), Some("agentc-test-verify"));
        assert!(!probe.interactive && !probe.tty && !probe.auto_remove && probe.detach);
        let restored = ContainerSpec {
            name: spec.name.clone(),
            entrypoint: spec.entrypoint.clone(),
            command: spec.command.clone(),
            interactive: spec.interactive,
            tty: spec.tty,
            auto_remove: spec.auto_remove,
            detach: spec.detach,
            ..probe
        };
        assert_eq!(restored, spec);
    }

    #[test]
    fn a_pids_limit_below_the_probes_needs_is_refused_before_launch() {
        let failure = require_probe_room("tiny", Some(1)).unwrap_err();
        assert_eq!(failure.code, EXIT_FAILED);
        assert!(
            failure
                .message
                .starts_with("profile \"tiny\": resources.pids_limit = 1 leaves the probe"),
            "{}",
            failure.message
        );
        for pids in [None, Some(PROBE_PIDS), Some(512)] {
            assert!(require_probe_room("tiny", pids).is_ok(), "{pids:?}");
        }
    }
}
