//! The probe and how it is launched: the shell script that reports kernel facts, the launch
//! that runs it in place of the agent (same hardening, mounts and limits), and the whole flow
//! for one resolved launch, written once over the [engine
//! port](agentc_engine::port) (the backend picks the port): start it, wait, read its
//! output and `docker inspect`, remove it (also on error and on SIGINT or SIGTERM), compare.
//!
//! For an allowlist enforced outside, the egress checks ([`super::egress`]) run after the probe,
//! in a container of the proxy image on the probe's isolated network, removed with the probe's
//! egress companion.
//!
//! The probe container always has a name (the spec's plus `-verify`, or
//! `agentc-verify-<profile>-<pid>`), so it can be removed whatever happens.

use std::collections::BTreeMap;
use std::time::Duration;

use agentc_egress::image::ProxyExecutable;
use agentc_egress::probe::Target;
use agentc_engine::companion;
use agentc_engine::isolation::FloorError;
use agentc_engine::port::{EngineError, EngineErrorKind, EnginePort};
use agentc_engine::signals::Signals;
use agentc_engine::{ExecError, Interrupt};
use agentc_policy::Hint;
use agentc_policy::{Action, ContainerSpec, EgressSpec, LaunchSpec, Network};
use futures_util::FutureExt;

use super::check::Check;
use super::check_run::check_output;
use super::compare::compare;
use super::egress::{
    check_spec, credential_environment, egress_checks, proxy_env, EgressProbe, ProxyFacts,
    CHECK_SUFFIX,
};
use super::error::VerifyError;
use super::host_path::{HostPathRun, HOST_PATH_SUFFIX};
use super::parse::parse_probe;

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

/// What a verify is given beside the launch.
#[derive(Debug, Clone, Copy)]
pub struct VerifyInputs<'a> {
    /// Where secrets are resolved from, exactly as a launch resolves them: `agentc verify`
    /// passes the process environment; the values are handed to the engine by name (the cli
    /// backend's `docker run` gets them in its environment, never in its argv).
    pub env: &'a BTreeMap<String, String>,
    /// Pull a missing image first, as `agentc run --pull` does; without, it is refused.
    pub pull: bool,
    /// Which host `egress.allowed` reaches, or [`EgressProbe::Skip`]: then no check reaches
    /// beyond the proxy.
    pub egress_probe: &'a EgressProbe,
    /// The agentc executable the probe's egress proxy image (which the check containers run
    /// too) and the isolation floor's probe image are made of: the agentc binary passes itself
    /// ([`ProxyExecutable::running`]); a program embedding agentc names the agentc binary.
    pub proxy_executable: &'a ProxyExecutable,
    /// Told each line of progress while an image is pulled.
    pub notify: fn(&str),
}

impl<'a> VerifyInputs<'a> {
    /// Inputs with `env` and `proxy_executable`, no pull, the profile's first allowed host
    /// probed, and progress lines dropped.
    pub fn new(env: &'a BTreeMap<String, String>, proxy_executable: &'a ProxyExecutable) -> Self {
        VerifyInputs {
            env,
            pull: false,
            egress_probe: &EgressProbe::Profile,
            proxy_executable,
            notify: |_| {},
        }
    }
}

/// Verifies one resolved container launch (a run, a sandbox or a seed) over the engine `port`
/// the caller holds, either backend's: meets the isolation floor as the launch meets it
/// ([`agentc_engine::isolation::meet_floor`], with the options `inputs.env` gives), so the
/// probe runs where the sandbox would, then [`verify_placed`]. A build launch is refused.
pub async fn verify_on<P: EnginePort>(
    port: &P,
    spec: &LaunchSpec,
    inputs: &VerifyInputs<'_>,
) -> Result<Vec<Check>, VerifyError> {
    let container = verifiable(spec)?;
    let options = agentc_engine::isolation::FloorOptions::from_env(
        inputs.env,
        Some(inputs.proxy_executable.clone()),
    );
    let placed = agentc_engine::isolation::meet_floor(port, container, &spec.profile, &options)
        .await
        .map_err(|error| floor_error(error, port.engine(), &spec.profile))?
        .container;
    verify_placed(port, spec, &placed, inputs).await
}

/// The container launch of a spec the probe can observe, refused before anything is created:
/// a build, or a pids limit that leaves the probe no room to fork.
pub fn verifiable(spec: &LaunchSpec) -> Result<&ContainerSpec, VerifyError> {
    let container = match &spec.action {
        Action::Container(container) => container,
        Action::Build(_) => {
            return Err(VerifyError::Unverifiable(Hint::new(
                format!(
                    "profile {:?}: a {} launch builds an image and starts no container",
                    spec.profile,
                    spec.kind.as_str()
                ),
                "use `agentc build`",
            )))
        }
    };
    require_probe_room(&spec.profile, container.resources.pids_limit)?;
    Ok(container)
}

/// A floor not met: the refusal naming what the engine has (exit 65), or the engine's failure.
pub fn floor_error(error: FloorError, engine: agentc_engine::Engine, profile: &str) -> VerifyError {
    match error {
        FloorError::Shortfall(shortfall) => VerifyError::Unverifiable(Hint::of(
            &agentc_engine::isolation::not_met(shortfall, engine, profile),
        )),
        FloorError::Engine(error) => VerifyError::Launch(error),
    }
}

/// Verifies `placed`, the container of `spec` with its runtime chosen (the floor met by the
/// caller), over `port`: starts [`probe_spec`] of it, waits for the probe, reads its output and
/// `docker inspect`, removes the container, and returns [`compare`]'s checks, followed, for an
/// allowlist enforced outside, by the egress checks (see [`super::egress`]).
///
/// The probe container is named after the spec (`NAME-verify`) or
/// `agentc-verify-<profile>-<pid>`; it is removed on success, on error and on SIGINT or
/// SIGTERM ([`VerifyError::Interrupted`]).
pub async fn verify_placed<P: EnginePort>(
    port: &P,
    spec: &LaunchSpec,
    placed: &ContainerSpec,
    inputs: &VerifyInputs<'_>,
) -> Result<Vec<Check>, VerifyError> {
    require_probe_room(&spec.profile, placed.resources.pids_limit)?;
    let mut probe = probe_spec(placed);
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
        .map(|egress| inputs.egress_probe.target(&egress.proxy.command));
    let allowed = target.as_ref().and_then(|target| target.as_ref().ok());
    let probed = self::probe(port, &probe, &name, inputs, allowed).await?;
    // The network the probe joined is the one to compare (its companion's, not the agent's).
    let container = &ContainerSpec {
        network: probed.network.clone(),
        dns: probed.dns.clone(),
        ..placed.clone()
    };
    let observed = parse_probe(&probed.logs).map_err(|error| {
        VerifyError::Probe(Hint::new(
            format!(
                "the probe in {name} did not report (exit {}): {error}",
                probed.exit_code
            ),
            format!(
                "the image needs /bin/sh and busybox or coreutils; its output was:\n{}",
                tail(&probed.logs)
            ),
        ))
    })?;
    let mut checks = compare(
        &expected(port.engine(), container, &probed.inspect)?,
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
    checks.extend(credential_environment(
        container,
        &probed.inspect,
        inputs.env,
    ));
    checks.extend(probed.host_path);
    Ok(checks)
}

/// The egress companion's proxy container on the isolated `network` (the names
/// [`ContainerSpec::egress_instance`] gives: `NAME-egress` and `NAME-egress-proxy`).
fn proxy_on(network: &str) -> String {
    format!("{network}-proxy")
}

/// What the engine was asked for: the spec itself on Docker; on Podman the spec with the
/// difference table's rewrites ([`agentc_engine::podman::adapt`]), the image's
/// `USER` read from the container's inspect.
fn expected(
    engine: agentc_engine::Engine,
    container: &ContainerSpec,
    inspect: &serde_json::Value,
) -> Result<ContainerSpec, VerifyError> {
    match engine {
        agentc_engine::Engine::Docker => Ok(container.clone()),
        agentc_engine::Engine::Podman => {
            let user = inspect
                .pointer("/Config/User")
                .and_then(|user| user.as_str())
                .unwrap_or_default();
            Ok(agentc_engine::podman::adapt(container, Some(user))?)
        }
    }
}

/// Refuses, before anything is created, a launch whose pids limit leaves the probe no room to
/// fork: it would stop after its first line and say nothing about the container.
fn require_probe_room(profile: &str, pids_limit: Option<u32>) -> Result<(), VerifyError> {
    match pids_limit {
        Some(limit) if limit < PROBE_PIDS => Err(VerifyError::Probe(Hint::new(
            format!(
                "profile {profile:?}: resources.pids_limit = {limit} leaves the probe no process \
                 to run its commands (it needs {PROBE_PIDS})"
            ),
            format!(
                "verify cannot observe this launch; verify a copy of the profile with \
                 pids_limit = {PROBE_PIDS} to check everything else"
            ),
        ))),
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

fn interrupted(signal: Interrupt, name: &str) -> VerifyError {
    VerifyError::Interrupted {
        signal,
        removed: format!("container {name}"),
    }
}

/// A probe the engine did not start: what it cannot run as asked exits 65, as a launch does.
fn not_started(name: &str, error: EngineError) -> VerifyError {
    match error.kind {
        EngineErrorKind::Unsupported => VerifyError::Unverifiable(Hint::none(error.detail)),
        _ => VerifyError::Engine(Hint::none(format!(
            "cannot start the probe {name}: {error}"
        ))),
    }
}

/// The probe through the engine `port`, either backend's: the image made present, the spec
/// checked ([`EnginePort::check_launch`]: refused before anything is created), the egress
/// companion set up (its proxy image made of `proxy_executable`), the probe started
/// detached, waited for (at most [`PROBE_TIMEOUT`]), its output and inspect read, and behind a
/// proxy the host-path row and the egress checks run; then the probe, its check containers and
/// its companion removed, on every way out. SIGINT and SIGTERM end it (130, 143) after that
/// removal.
async fn probe<P: EnginePort>(
    port: &P,
    probe: &ContainerSpec,
    name: &str,
    inputs: &VerifyInputs<'_>,
    allowed: Option<&Target>,
) -> Result<Probed, VerifyError> {
    let env = inputs.env;
    agentc_engine::resolve_env(probe, env)?;
    agentc_engine::argv::check_container(probe)
        .map_err(|error| VerifyError::Unverifiable(Hint::of(&error)))?;
    let mut notify = inputs.notify;
    agentc_engine::image::ensure_image(port, &probe.image, inputs.pull, &mut notify).await?;
    // An image without the firewall the launch leaves egress to is refused as the launch is.
    agentc_engine::image::refuse_missing_firewall(port, probe).await?;
    // What the engine cannot run as asked (a runtime it lacks, a Podman row that refuses) is
    // refused before anything is created: no volume, no companion.
    port.check_launch(probe)
        .await
        .map_err(|error| not_started(name, EngineError::of_launch(error)))?;
    // Listen before anything is created: a signal between steps is then never lost.
    let mut signals = Signals::new()?;
    agentc_engine::volumes::ensure_volumes(port, probe).await?;
    // The egress companion first; it may move to an instance of its own, which the probe
    // follows. A failed or interrupted set-up removes what it created.
    let mut placed = probe.clone();
    let companion = {
        let mut pending = || signals.recv().now_or_never();
        companion::setup_for(
            port,
            &mut placed,
            env,
            inputs.proxy_executable,
            &mut pending,
        )
        .await
    };
    let companion = match companion {
        Ok(set) => set,
        Err(ExecError::Interrupted { signal, .. }) => return Err(interrupted(signal, name)),
        Err(error) => return Err(VerifyError::Launch(error)),
    };
    let check_name = format!("{name}{CHECK_SUFFIX}");
    let host_path_name = format!("{name}{HOST_PATH_SUFFIX}");
    let placed = &placed;
    let observe = async {
        port.run_detached(placed, env)
            .await
            .map_err(|error| not_started(name, error))?;
        let exit_code = tokio::time::timeout(PROBE_TIMEOUT, port.wait(name))
            .await
            .map_err(|_| {
                VerifyError::Probe(Hint::none(format!(
                    "the probe in {name} did not finish within {} seconds",
                    PROBE_TIMEOUT.as_secs()
                )))
            })?
            .map_err(|error| {
                VerifyError::Engine(Hint::none(format!("cannot wait for {name}: {error}")))
            })?;
        let logs = port
            .logs(name, true)
            .await
            .map_err(|error| cannot_read_logs(name, &error.to_string()))?;
        let inspect = port.inspect_json(name).await.map_err(|error| {
            VerifyError::Engine(Hint::none(format!("cannot inspect {name}: {error}")))
        })?;
        let egress = match (&placed.egress, &placed.network) {
            (Some(egress), Network::Named { name: network }) => {
                // The host-path row first: it reads the proxy's address from its inspect, and
                // the egress checks' replay stops a proxy with `on_replay = "stop"`.
                let host_path = HostPathRun {
                    egress,
                    workload: placed,
                    probe: name,
                    network,
                }
                .run(port)
                .await;
                let checked = EgressRun {
                    egress,
                    probe: name,
                    network,
                    dns: &placed.dns,
                    probe_inspect: &inspect,
                    allowed,
                    env,
                }
                .run(port)
                .await;
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
    };
    let result = tokio::select! {
        result = observe => result,
        signal = signals.recv() => Err(interrupted(signal, name)),
    };
    // The probe and its check containers, then the companion whose network they were on.
    for container in [name, &check_name, &host_path_name] {
        if let Err(error) = port.remove_container(container).await {
            log::warn!("could not remove {container}: {error}");
        }
    }
    if let Some(set) = &companion {
        companion::teardown(port, set).await;
    }
    result
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
    /// Runs the check container, its spec made from the proxy's inspect, to its end and
    /// returns its output ([`check_output`]); the caller removes it.
    async fn run<P: EnginePort>(&self, port: &P) -> Result<String, String> {
        let proxy = proxy_on(self.network);
        let proxy_inspect = port
            .inspect_json(&proxy)
            .await
            .map_err(|error| format!("cannot inspect {proxy}: {error}"))?;
        let facts = ProxyFacts::from_inspect(&proxy_inspect, self.network)?;
        let spec = check_spec(
            self.egress,
            self.probe,
            self.network,
            self.dns,
            proxy_env(self.probe_inspect, self.egress, self.env),
            &facts,
            self.allowed,
        );
        check_output(port, &spec).await
    }
}

fn cannot_read_logs(name: &str, message: &str) -> VerifyError {
    VerifyError::Probe(Hint::new(
        format!("cannot read the probe's output from {name}: {message}"),
        "verify reads `docker logs`; a log driver that keeps no logs cannot be verified",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorded::hardened_spec;
    use agentc_policy::Hinted;

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
        assert_eq!(failure.exit_code(), 1);
        let message = failure.with_hint().to_string();
        assert!(
            message.starts_with("profile \"tiny\": resources.pids_limit = 1 leaves the probe"),
            "{message}"
        );
        for pids in [None, Some(PROBE_PIDS), Some(512)] {
            assert!(require_probe_room("tiny", pids).is_ok(), "{pids:?}");
        }
    }
}
