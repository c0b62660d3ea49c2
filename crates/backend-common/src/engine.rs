//! Which container engine agentc drives (Docker or Podman), chosen once per process, and the
//! fail-closed runtime check both backends run before creating anything.
//!
//! The engine is process-wide: the binary reads `--engine` / `AGENTC_ENGINE` once and calls
//! [`set_engine`] before any launch; the CLI backend then runs [`Engine::program`] (`docker`
//! or `podman`) and the API backend connects to that engine's socket. A launch naming a
//! runtime ([`agentc_policy::ContainerSpec::runtime`]) is judged by [`check_runtime`] against
//! what the engine reports ([`Runtimes`]) before any container exists.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::error::ExecError;

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

static CURRENT: AtomicU8 = AtomicU8::new(0);

/// Chooses the engine for the rest of the process (the binary does this once, first).
pub fn set_engine(engine: Engine) {
    CURRENT.store(
        match engine {
            Engine::Docker => 0,
            Engine::Podman => 1,
        },
        Ordering::SeqCst,
    );
}

/// The engine chosen by [`set_engine`]; Docker until then.
pub fn engine() -> Engine {
    match CURRENT.load(Ordering::SeqCst) {
        1 => Engine::Podman,
        _ => Engine::Docker,
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

/// What an engine says about its runtimes, as each way of asking can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runtimes {
    /// The registered runtimes by name, each with its path and arguments (Docker's
    /// `docker info` `.Runtimes`, `GET /info` `Runtimes`: accurate).
    Registered(BTreeMap<String, String>),
    /// Whether the one runtime asked about is usable (`podman --runtime NAME info`).
    Usable(Result<(), String>),
    /// Only the default runtime counts: Podman's API socket ignores `HostConfig.Runtime`
    /// (every container runs under the service's default), and its `/info` `Runtimes` lists
    /// candidates whether installed or not.
    DefaultOnly(Option<String>),
}

/// Refuses a launch whose runtime the engine does not have, naming the runtime and how to
/// register it; also a gVisor runtime registered under a name that does not say so (agentc
/// refuses gVisor where the image's firewall would have to hold egress, by the name).
pub fn check_runtime(engine: Engine, wanted: &str, runtimes: &Runtimes) -> Result<(), ExecError> {
    let missing = |found: String, hint: String| ExecError::RuntimeMissing {
        runtime: wanted.to_string(),
        engine,
        found,
        hint,
    };
    match runtimes {
        Runtimes::Registered(registered) => match registered.get(wanted) {
            Some(path) => {
                if path.contains("runsc") && !agentc_policy::is_gvisor(wanted) {
                    return Err(missing(
                        format!("{wanted} is registered as gVisor ({path})"),
                        format!("register it under a name containing runsc or gvisor, so that agentc applies gVisor's limits (the image's egress firewall does not run under it); {}", engine.register_hint(wanted)),
                    ));
                }
                Ok(())
            }
            None => {
                let names: Vec<&str> = registered.keys().map(String::as_str).collect();
                Err(missing(
                    format!("it has {}", names.join(", ")),
                    engine.register_hint(wanted),
                ))
            }
        },
        Runtimes::Usable(Ok(())) => Ok(()),
        Runtimes::Usable(Err(message)) => {
            Err(missing(message.clone(), engine.register_hint(wanted)))
        }
        Runtimes::DefaultOnly(default) if default.as_deref() == Some(wanted) => Ok(()),
        Runtimes::DefaultOnly(default) => Err(missing(
            format!(
                "its API socket ignores HostConfig.Runtime and runs every container under its default runtime ({})",
                default.as_deref().unwrap_or("unknown")
            ),
            format!("use `--backend cli` with `--engine podman` (the podman command takes --runtime), or serve the socket with that runtime as the default: `podman --runtime {wanted} system service --time=0 unix:///run/podman/podman.sock`"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered(pairs: &[(&str, &str)]) -> Runtimes {
        Runtimes::Registered(
            pairs
                .iter()
                .map(|(name, path)| (name.to_string(), path.to_string()))
                .collect(),
        )
    }

    #[test]
    fn engines_parse_and_name_their_program() {
        assert_eq!(Engine::parse(" Podman "), Some(Engine::Podman));
        assert_eq!(Engine::parse("docker"), Some(Engine::Docker));
        assert_eq!(Engine::parse("nerdctl"), None);
        assert_eq!(Engine::Podman.program(), "podman");
        assert_eq!(Engine::default(), Engine::Docker);
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

    #[test]
    fn a_missing_runtime_is_refused_naming_it_and_how_to_register_it() {
        let docker = registered(&[("runc", "runc"), ("runsc", "/usr/bin/runsc --network=host")]);
        assert!(check_runtime(Engine::Docker, "runsc", &docker).is_ok());
        let error = check_runtime(Engine::Docker, "kata", &docker)
            .unwrap_err()
            .to_string();
        assert!(error.contains("runtime kata"), "{error}");
        assert!(error.contains("it has runc, runsc"), "{error}");
        assert!(
            error.contains("\n  hint: register it in /etc/docker/daemon.json"),
            "{error}"
        );
        let renamed = registered(&[("secure", "/usr/bin/runsc")]);
        let error = check_runtime(Engine::Docker, "secure", &renamed)
            .unwrap_err()
            .to_string();
        assert!(error.contains("registered as gVisor"), "{error}");
    }

    #[test]
    fn podmans_socket_counts_only_its_default_runtime() {
        let default = Runtimes::DefaultOnly(Some("runc".into()));
        assert!(check_runtime(Engine::Podman, "runc", &default).is_ok());
        let error = check_runtime(Engine::Podman, "runsc", &default)
            .unwrap_err()
            .to_string();
        assert!(error.contains("ignores HostConfig.Runtime"), "{error}");
        let usable = Runtimes::Usable(Err("default OCI runtime \"kata\" not found".into()));
        let error = check_runtime(Engine::Podman, "kata", &usable)
            .unwrap_err()
            .to_string();
        assert!(error.contains("containers.conf"), "{error}");
    }
}
