//! The facts `agentc doctor` judges, gathered from the engine (through the Engine API), the
//! `docker` command and the host.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;

use agentc_lifecycle::doctor::{Engine as EngineName, EngineFacts};
use bollard::models::NetworkCreateRequest;
use bollard::Docker;

/// Where the engine is: `DOCKER_HOST`, or the local socket.
fn endpoint() -> String {
    std::env::var("DOCKER_HOST")
        .ok()
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| "unix:///var/run/docker.sock".to_string())
}

/// Gathers the engine's facts; an unreachable engine is a fact too.
pub async fn engine_facts(docker: Result<Docker, String>) -> EngineFacts {
    let mut facts = EngineFacts {
        engine: Some(EngineName::Docker),
        endpoint: endpoint(),
        cli: Some(docker_cli()),
        max_user_namespaces: std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
            .ok()
            .and_then(|text| text.trim().parse().ok()),
        ..EngineFacts::default()
    };
    let docker = match docker {
        Ok(docker) => docker,
        Err(error) => {
            facts.unreachable = Some(error);
            return facts;
        }
    };
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
        facts.default_runtime = info.default_runtime.clone();
        let mut runtimes: Vec<String> = info.runtimes.unwrap_or_default().into_keys().collect();
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
        facts.disk = Some(free_disk(info.docker_root_dir.as_deref()));
    }
    facts.isolated_network = Some(isolated_network(&docker).await);
    facts
}

/// The `docker` command's client version, or why it cannot run.
fn docker_cli() -> Result<String, String> {
    agentc_backend_cli::exec::docker::output(&["version", "--format", "{{.Client.Version}}"])
        .map(|text| text.trim().to_string())
        .or_else(|error| {
            // `docker version` exits 1 when the daemon is down but still prints the client.
            match &error {
                agentc_backend_common::ExecError::DockerFailed { .. } => {
                    agentc_backend_cli::exec::docker::output(&["--version"])
                        .map(|text| text.trim().to_string())
                        .map_err(|error| error.to_string())
                }
                _ => Err(error.to_string()),
            }
        })
}

/// Creates and removes a uniquely named internal network with IPv4 inhibited, labelled as
/// agentc's doctor probe: what the egress integration's isolated network needs.
async fn isolated_network(docker: &Docker) -> Result<(), String> {
    let name = format!(
        "agentc-doctor-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.subsec_nanos())
            .unwrap_or_default()
    );
    let request = NetworkCreateRequest {
        name: name.clone(),
        driver: Some("bridge".to_string()),
        internal: Some(true),
        options: Some(HashMap::from([(
            "com.docker.network.bridge.inhibit_ipv4".to_string(),
            "true".to_string(),
        )])),
        labels: Some(HashMap::from([(
            "io.agentc.doctor".to_string(),
            "isolated-network-probe".to_string(),
        )])),
        ..NetworkCreateRequest::default()
    };
    let created = docker
        .create_network(request)
        .await
        .map_err(|error| error.to_string())?;
    let id = created.id;
    docker
        .remove_network(&id)
        .await
        .map_err(|error| format!("created {name} but cannot remove it: {error}"))
}

/// Free bytes under the engine's data directory, when the engine is local.
fn free_disk(root: Option<&str>) -> Result<(String, u64), String> {
    let endpoint = endpoint();
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
