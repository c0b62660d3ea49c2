//! The facts `agentc doctor` judges, gathered from the engine (through the Engine API), the
//! `docker` command and the host.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;

use agentc_backend_api::ApiPort;
use agentc_engine::companion::prepare::SUBNET_RETRIES;
use agentc_engine::daemon_text::Refusal;
use agentc_engine::port::EnginePort;
use agentc_engine::Engine;
use agentc_lifecycle::doctor::EngineFacts;
use agentc_policy::Hinted;
use agentc_policy::IsolatedNetwork;

/// Where the engine is for a caller whose environment is `env`: its socket by `--engine`
/// (`DOCKER_HOST`, or for Podman `CONTAINER_HOST` and its conventions), or Docker's local
/// socket.
fn endpoint(engine: Engine, env: &BTreeMap<String, String>) -> String {
    crate::backend::engine_host(engine, env)
        .unwrap_or_else(|| "unix:///var/run/docker.sock".to_string())
}

/// Whether Podman's rlimits fit this host: this process may raise a hard rlimit
/// (`CAP_SYS_RESOURCE`, bit 24 of its bounding set), or `containers.conf` sets
/// `default_ulimits`. Otherwise Podman's default rlimits fail (docs/engines.md).
fn rlimits_raisable() -> Option<bool> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let mask = status
        .lines()
        .find_map(|line| line.strip_prefix("CapBnd:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())?;
    Some(mask & (1 << 24) != 0 || podman_ulimits_configured())
}

/// Whether a `containers.conf` (or a drop-in) sets `default_ulimits`, which Podman then asks
/// for instead of its own defaults.
fn podman_ulimits_configured() -> bool {
    let mut files = vec![std::path::PathBuf::from("/etc/containers/containers.conf")];
    if let Ok(entries) = std::fs::read_dir("/etc/containers/containers.conf.d") {
        files.extend(entries.filter_map(|entry| entry.ok().map(|entry| entry.path())));
    }
    files.iter().any(|file| {
        std::fs::read_to_string(file).is_ok_and(|text| {
            text.lines()
                .any(|line| line.trim_start().starts_with("default_ulimits"))
        })
    })
}

/// Gathers the engine's facts, where `env` puts the engine; an unreachable engine is a fact
/// too.
pub async fn engine_facts(
    engine: Engine,
    env: &BTreeMap<String, String>,
    port: Result<ApiPort, String>,
) -> EngineFacts {
    let mut facts = EngineFacts {
        engine: Some(engine),
        rlimits_raisable: rlimits_raisable(),
        endpoint: endpoint(engine, env),
        cli: Some(docker_cli(env)),
        backend: Some(crate::backend::auto_backend(engine, env).1),
        max_user_namespaces: std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
            .ok()
            .and_then(|text| text.trim().parse().ok()),
        ..EngineFacts::default()
    };
    let port = match port {
        Ok(port) => port,
        Err(error) => {
            facts.unreachable = Some(error);
            return facts;
        }
    };
    let docker = &port.docker;
    match docker.version().await {
        Ok(version) => {
            facts.version = version.version;
            facts.api_version = version.api_version;
        }
        Err(error) => {
            facts.unreachable = Some(error.to_string());
            return facts;
        }
    }
    if let Ok(info) = docker.info().await {
        info_facts(info, engine, &mut facts);
    }
    facts.isolated_network = Some(isolated_network(&port).await);
    facts.egress_leftovers = Some(
        agentc_engine::companion::leftovers(&port, None, None)
            .await
            .map(|found| {
                found
                    .into_iter()
                    .map(|left| (left.describe(), left.remove))
                    .collect()
            })
            .map_err(|error| error.with_hint().to_string()),
    );
    facts
}

/// Records what the engine's info says: its runtimes (the default first, and on Docker
/// gVisor's `runsc` with its arguments), cgroup version, security options and free disk.
fn info_facts(info: bollard::models::SystemInfo, engine: Engine, facts: &mut EngineFacts) {
    facts.default_runtime = info.default_runtime.clone();
    let registered = info.runtimes.unwrap_or_default();
    if engine == Engine::Docker {
        facts.gvisor = registered.get("runsc").map(|runsc| {
            let mut text = runsc.path.clone().unwrap_or_default();
            for arg in runsc.runtime_args.clone().unwrap_or_default() {
                text.push(' ');
                text.push_str(&arg);
            }
            text
        });
    }
    let mut runtimes: Vec<String> = registered.into_keys().collect();
    runtimes.sort();
    if let Some(default) = &info.default_runtime {
        runtimes.retain(|name| name != default);
        runtimes.insert(0, default.clone());
    }
    facts.runtimes = runtimes;
    facts.cgroup_version = info
        .cgroup_version
        .map(|version| version.to_string().trim_start_matches('v').to_string());
    facts.security_options = info.security_options.unwrap_or_default();
    facts.disk = Some(free_disk(&facts.endpoint, info.docker_root_dir.as_deref()));
}

/// The `docker` command's client version, or why it cannot run, run with the caller's `env`.
fn docker_cli(env: &BTreeMap<String, String>) -> Result<String, String> {
    agentc_backend_cli::exec::docker::output(
        agentc_engine::Engine::Docker,
        env,
        &["version", "--format", "{{.Client.Version}}"],
    )
    .map(|text| text.trim().to_string())
    .or_else(|error| {
        // `docker version` exits 1 when the daemon is down but still prints the client.
        match &error {
            agentc_engine::ExecError::DockerFailed { .. } => {
                agentc_backend_cli::exec::docker::output(
                    agentc_engine::Engine::Docker,
                    env,
                    &["--version"],
                )
                .map(|text| text.trim().to_string())
                .map_err(|error| error.with_hint().to_string())
            }
            _ => Err(error.with_hint().to_string()),
        }
    })
}

/// Creates and removes a uniquely named isolated network over the engine port, as a launch
/// behind the egress proxy creates its own ([`IsolatedNetwork::of`]: internal, IPv4 inhibited,
/// a /28 of its own), labelled as agentc's doctor probe. A subnet another network holds
/// moves the probe to another subnet, through another throwaway name (a launch keeps its
/// names and moves its block: `ContainerSpec::egress_resubnet`).
async fn isolated_network<P: EnginePort>(port: &P) -> Result<(), String> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or_default();
    let labels = BTreeMap::from([(
        "io.agentc.doctor".to_string(),
        "isolated-network-probe".to_string(),
    )]);
    let mut attempt = 0;
    loop {
        let base = format!("agentc-doctor-{}-{nanos}-{attempt}", std::process::id());
        let network = IsolatedNetwork::of(&base, labels.clone());
        match port.create_isolated_network(&network).await {
            Ok(()) => {
                return port.remove_network(&network.name).await.map_err(|error| {
                    format!("created {} but cannot remove it: {error}", network.name)
                })
            }
            Err(error)
                if error.refusal() == Some(Refusal::SubnetTaken) && attempt < SUBNET_RETRIES =>
            {
                attempt += 1
            }
            Err(error) => return Err(error.to_string()),
        }
    }
}

/// Free bytes under the engine's data directory, when the engine (at `endpoint`) is local.
fn free_disk(endpoint: &str, root: Option<&str>) -> Result<(String, u64), String> {
    if !endpoint.starts_with("unix://") {
        return Err(format!("the engine at {endpoint} is not on this host"));
    }
    let root = root.unwrap_or("/var/lib/docker");
    // The data directory may be unreadable to this user; its file system is what counts, so
    // the nearest existing ancestor does.
    let mut path = std::path::PathBuf::from(root);
    loop {
        let text = CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: statvfs writes into `stat`, which outlives the call; `text` is a valid C string.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(text.as_ptr(), &mut stat) } == 0 {
            let free = (stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64);
            return Ok((root.to_string(), free));
        }
        if !path.pop() {
            return Err(format!("cannot read the file system of {root}"));
        }
    }
}
