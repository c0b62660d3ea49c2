//! Which container engine agentc drives (Docker or Podman), and the fail-closed runtime check
//! ([`crate::runtime`]) both backends run before creating anything.
//!
//! The engine is a value, never process state: the binary reads `--engine` / `AGENTC_ENGINE`
//! and hands the [`Engine`] to the port it builds ([`crate::port::EnginePort::engine`]); the CLI
//! port runs [`Engine::program`] (`docker` or `podman`), the API port talks to that engine's
//! socket, and every error that names the engine carries it. A launch naming a
//! runtime ([`agentc_policy::ContainerSpec::runtime`]) is judged by [`crate::check_runtime`]
//! against what the engine reports ([`crate::Runtimes`]) before any container exists.

use std::collections::BTreeMap;

pub use agentc_policy::Engine;

/// How to register `runtime` with `engine`, for a refusal's hint.
pub fn register_hint(engine: Engine, runtime: &str) -> String {
    match engine {
        Engine::Docker => format!(
            "register it in /etc/docker/daemon.json (\"runtimes\": {{\"{runtime}\": {{\"path\": \"/usr/bin/{runtime}\"}}}}) and reload dockerd (`kill -HUP $(pidof dockerd)`), or remove security.runtime to use the engine's default; see docs/engines.md"
        ),
        Engine::Podman => format!(
            "install it, or name it in containers.conf ([engine.runtimes] {runtime} = [\"/usr/bin/{runtime}\"]), or remove security.runtime to use the engine's default; see docs/engines.md"
        ),
    }
}

/// Whether the engine runs on another machine (`DOCKER_HOST=tcp://…` or `ssh://…`, Podman's
/// `CONTAINER_HOST`): its published ports are that machine's, not this one's. `env` is the
/// process's environment.
pub fn is_remote(engine: Engine, env: &BTreeMap<String, String>) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    api_host(engine, env, root)
        .is_some_and(|host| !host.starts_with("unix://") && !host.starts_with('/'))
}

/// The Engine API endpoint of `engine` for a process with environment `env` (`root`: whether
/// it runs as root): Docker's `DOCKER_HOST` when set and not empty (else `None`, the local
/// socket), Podman's socket by [`podman_socket`]. What `agentc_backend_api::connect` is given.
pub fn api_host(engine: Engine, env: &BTreeMap<String, String>, root: bool) -> Option<String> {
    match engine {
        Engine::Docker => env
            .get("DOCKER_HOST")
            .filter(|host| !host.is_empty())
            .cloned()
            .or_else(|| docker_context_host(env, &|path| std::fs::read_to_string(path).ok())),
        Engine::Podman => Some(podman_socket(env, root)),
    }
}

/// The endpoint of the docker command's current context, as `docker` finds it when
/// `DOCKER_HOST` is not set: the context `DOCKER_CONTEXT` names, else `currentContext` in
/// `config.json` of `DOCKER_CONFIG` (default `$HOME/.docker`); the `default` context, or none,
/// is the local socket (`None`). A context's endpoint is `Endpoints.docker.Host` in
/// `contexts/meta/SHA256(NAME)/meta.json`. `read` reads a file (`None`: missing or unreadable).
pub fn docker_context_host(
    env: &BTreeMap<String, String>,
    read: &dyn Fn(&std::path::Path) -> Option<String>,
) -> Option<String> {
    use sha2::{Digest, Sha256};
    let config = match env.get("DOCKER_CONFIG").filter(|dir| !dir.is_empty()) {
        Some(dir) => std::path::PathBuf::from(dir),
        None => {
            std::path::Path::new(env.get("HOME").filter(|home| !home.is_empty())?).join(".docker")
        }
    };
    let json = |path: std::path::PathBuf| -> Option<serde_json::Value> {
        serde_json::from_str(&read(&path)?).ok()
    };
    let name = match env.get("DOCKER_CONTEXT").filter(|name| !name.is_empty()) {
        Some(name) => name.clone(),
        None => json(config.join("config.json"))?
            .get("currentContext")?
            .as_str()?
            .to_string(),
    };
    if name.is_empty() || name == "default" {
        return None;
    }
    let digest: String = Sha256::digest(name.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let meta = json(
        config
            .join("contexts")
            .join("meta")
            .join(digest)
            .join("meta.json"),
    )?;
    meta.pointer("/Endpoints/docker/Host")?
        .as_str()
        .filter(|host| !host.is_empty())
        .map(str::to_string)
}

/// Whether agentc's Engine API client can reach the engine at `host` (`None`: Docker's local
/// socket), asked without an HTTP request: a unix socket that accepts a connection, a
/// `tcp://` address that accepts one within a second. `Ok` names the endpoint, `Err` says why
/// not; an `ssh://` endpoint is never reachable here (the docker command reaches it).
pub fn api_reachable(host: Option<&str>) -> Result<String, String> {
    let host = host.unwrap_or("unix:///var/run/docker.sock");
    if let Some(path) = host
        .strip_prefix("unix://")
        .or_else(|| host.strip_prefix('/').map(|_| host))
    {
        return std::os::unix::net::UnixStream::connect(path)
            .map(|_| host.to_string())
            .map_err(|error| format!("{host}: {error}"));
    }
    if let Some(address) = host.strip_prefix("tcp://") {
        use std::net::ToSocketAddrs;
        let address = address.trim_end_matches('/');
        let addresses = address
            .to_socket_addrs()
            .map_err(|error| format!("{host}: {error}"))?;
        let mut last = format!("{host}: no address");
        for socket in addresses {
            match std::net::TcpStream::connect_timeout(&socket, std::time::Duration::from_secs(1)) {
                Ok(_) => return Ok(host.to_string()),
                Err(error) => last = format!("{host}: {error}"),
            }
        }
        return Err(last);
    }
    Err(format!(
        "{host}: agentc's Engine API client does not speak this scheme (the docker command does)"
    ))
}

/// Where Podman's API socket is, by Podman's conventions: `CONTAINER_HOST`, else
/// `DOCKER_HOST`, else `unix:///run/podman/podman.sock` for root and
/// `unix://$XDG_RUNTIME_DIR/podman/podman.sock` for anyone else. `env` is the process
/// environment; `root` whether agentc runs as root.
pub fn podman_socket(env: &BTreeMap<String, String>, root: bool) -> String {
    for name in ["CONTAINER_HOST", "DOCKER_HOST"] {
        if let Some(host) = env.get(name).filter(|host| !host.trim().is_empty()) {
            return host.clone();
        }
    }
    match env.get("XDG_RUNTIME_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) if !root => format!("unix://{dir}/podman/podman.sock"),
        _ => "unix:///run/podman/podman.sock".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_parse_and_name_their_program() {
        assert_eq!(Engine::parse(" Podman "), Some(Engine::Podman));
        assert_eq!(Engine::parse("docker"), Some(Engine::Docker));
        assert_eq!(Engine::parse("nerdctl"), None);
        assert_eq!(Engine::Podman.program(), "podman");
        assert_eq!(Engine::default(), Engine::Docker);
    }

    #[test]
    fn the_api_host_is_docker_host_for_docker_and_podmans_socket_for_podman() {
        let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(api_host(Engine::Docker, &env(&[]), true), None);
        assert_eq!(
            api_host(Engine::Docker, &env(&[("DOCKER_HOST", "")]), true),
            None
        );
        assert_eq!(
            api_host(
                Engine::Docker,
                &env(&[("DOCKER_HOST", "tcp://h:2375")]),
                true
            )
            .as_deref(),
            Some("tcp://h:2375")
        );
        assert_eq!(
            api_host(Engine::Podman, &env(&[]), true).as_deref(),
            Some("unix:///run/podman/podman.sock")
        );
    }

    #[test]
    fn the_docker_context_is_read_as_the_docker_command_reads_it() {
        let mut files = BTreeMap::from([(
            "/home/u/.docker/config.json".to_string(),
            r#"{"auths": {}, "currentContext": "remote"}"#.to_string(),
        )]);
        let digest = |name: &str| -> String {
            use sha2::{Digest, Sha256};
            Sha256::digest(name.as_bytes())
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect()
        };
        for (name, host) in [
            ("remote", "tcp://10.0.0.5:2375"),
            ("colima", "unix:///c.sock"),
        ] {
            files.insert(
                format!("/home/u/.docker/contexts/meta/{}/meta.json", digest(name)),
                format!(r#"{{"Name": "{name}", "Endpoints": {{"docker": {{"Host": "{host}"}}}}}}"#),
            );
        }
        let read = |path: &std::path::Path| files.get(&path.display().to_string()).cloned();
        let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let home = ("HOME", "/home/u");
        assert_eq!(
            docker_context_host(&env(&[home]), &read).as_deref(),
            Some("tcp://10.0.0.5:2375")
        );
        assert_eq!(
            docker_context_host(&env(&[home, ("DOCKER_CONTEXT", "colima")]), &read).as_deref(),
            Some("unix:///c.sock")
        );
        assert_eq!(
            docker_context_host(&env(&[home, ("DOCKER_CONTEXT", "default")]), &read),
            None
        );
        assert_eq!(
            docker_context_host(&env(&[("HOME", "/nowhere")]), &read),
            None
        );
        assert_eq!(
            docker_context_host(
                &env(&[
                    ("DOCKER_CONFIG", "/home/u/.docker"),
                    ("DOCKER_CONTEXT", "colima")
                ]),
                &read
            )
            .as_deref(),
            Some("unix:///c.sock")
        );
        // An unknown context: the docker command refuses it; here it names no endpoint.
        assert_eq!(
            docker_context_host(&env(&[home, ("DOCKER_CONTEXT", "gone")]), &read),
            None
        );
    }

    #[test]
    fn only_what_answers_is_reachable() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("engine.sock");
        let missing = format!("unix://{}", socket.display());
        assert!(api_reachable(Some(&missing)).is_err());
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        assert_eq!(api_reachable(Some(&missing)), Ok(missing.clone()));
        let error = api_reachable(Some("ssh://user@host")).unwrap_err();
        assert!(error.contains("does not speak this scheme"), "{error}");
    }

    #[test]
    fn the_podman_socket_follows_podmans_conventions() {
        let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(
            podman_socket(&env(&[]), true),
            "unix:///run/podman/podman.sock"
        );
        assert_eq!(
            podman_socket(&env(&[("XDG_RUNTIME_DIR", "/run/user/1000")]), false),
            "unix:///run/user/1000/podman/podman.sock"
        );
        assert_eq!(
            podman_socket(
                &env(&[
                    ("CONTAINER_HOST", "unix:///tmp/p.sock"),
                    ("DOCKER_HOST", "unix:///tmp/d.sock")
                ]),
                true
            ),
            "unix:///tmp/p.sock"
        );
        assert_eq!(
            podman_socket(&env(&[("DOCKER_HOST", "unix:///tmp/d.sock")]), true),
            "unix:///tmp/d.sock"
        );
    }
}
