//! What an engine says about its OCI runtimes, and the fail-closed check both backends run
//! before creating anything: a launch naming a runtime the engine lacks is refused.

use std::collections::BTreeMap;

use crate::engine::Engine;
use crate::error::ExecError;

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
