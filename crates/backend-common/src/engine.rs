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

/// A container engine agentc can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Engine {
    /// The Docker Engine (`docker`, `/var/run/docker.sock`).
    #[default]
    Docker,
    /// Podman (`podman`, and its Docker-compatible API socket from `podman system service`).
    Podman,
}

impl Engine {
    /// `docker` or `podman`: its name, and the program the CLI backend runs.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Docker => "docker",
            Engine::Podman => "podman",
        }
    }

    /// The program the CLI backend runs.
    pub fn program(self) -> &'static str {
        self.as_str()
    }

    /// Reads `docker` or `podman` (any case, surrounding blanks ignored).
    pub fn parse(text: &str) -> Option<Engine> {
        match text.trim().to_ascii_lowercase().as_str() {
            "docker" => Some(Engine::Docker),
            "podman" => Some(Engine::Podman),
            _ => None,
        }
    }

    /// How to register a runtime with this engine, for a refusal's hint.
    pub fn register_hint(self, runtime: &str) -> String {
        match self {
            Engine::Docker => format!(
                "register it in /etc/docker/daemon.json (\"runtimes\": {{\"{runtime}\": {{\"path\": \"/usr/bin/{runtime}\"}}}}) and reload dockerd (`kill -HUP $(pidof dockerd)`), or remove security.runtime to use the engine's default; see docs/engines.md"
            ),
            Engine::Podman => format!(
                "install it, or name it in containers.conf ([engine.runtimes] {runtime} = [\"/usr/bin/{runtime}\"]), or remove security.runtime to use the engine's default; see docs/engines.md"
            ),
        }
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The Engine API endpoint of `engine` for a process with environment `env` (`root`: whether
/// it runs as root): Docker's `DOCKER_HOST` when set and not empty (else `None`, the local
/// socket), Podman's socket by [`podman_socket`]. What `agentc_backend_api::connect` is given.
pub fn api_host(engine: Engine, env: &BTreeMap<String, String>, root: bool) -> Option<String> {
    match engine {
        Engine::Docker => env
            .get("DOCKER_HOST")
            .filter(|host| !host.is_empty())
            .cloned(),
        Engine::Podman => Some(podman_socket(env, root)),
    }
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
