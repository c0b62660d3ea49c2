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
                        format!("register it under a name containing runsc or gvisor, so that agentc applies gVisor's limits (the image's egress firewall does not run under it); {}", crate::engine::register_hint(engine, wanted)),
                    ));
                }
                Ok(())
            }
            None => {
                let names: Vec<&str> = registered.keys().map(String::as_str).collect();
                Err(missing(
                    format!("it has {}", names.join(", ")),
                    crate::engine::register_hint(engine, wanted),
                ))
            }
        },
        Runtimes::Usable(Ok(())) => Ok(()),
        Runtimes::Usable(Err(message)) => {
            Err(missing(message.clone(), crate::engine::register_hint(engine, wanted)))
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

/// The runtimes Podman may have, asked about in turn (its command line accepts any name and
/// says whether it finds one; `podman info` lists none).
pub const PODMAN_RUNTIME_CANDIDATES: &[&str] = &["crun", "runc", "runsc", "kata"];

/// The runtimes an engine has registered, as one of its ports reports them (Docker's `GET /info`
/// or `docker info`, Podman's `podman info`), for the isolation floor: what identifies the
/// engine and each runtime, so that a probe's result can be remembered for exactly these.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EngineRuntimes {
    /// The engine's identity: its kind, ID and version (`docker 20.10.24 PM7C:...`); a
    /// reinstalled or upgraded engine has another.
    pub engine: String,
    /// The engine's default runtime, when it says.
    pub default: Option<String>,
    /// Every runtime a launch through this port can select, by name.
    pub runtimes: BTreeMap<String, RuntimeFacts>,
}

/// One registered runtime as the engine reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RuntimeFacts {
    /// Its program with its arguments (`/usr/bin/runsc --network=host`, or `runc` as Docker
    /// resolves it on its own `PATH`).
    pub path: String,
    /// Its version as the engine reports it (Podman's `ociRuntime.version`, Docker's runtime
    /// `status` and, for runc, `RuncCommit`); empty when the engine says nothing.
    pub version: String,
}

/// The runtimes in a Docker `/info` document (the Engine API's body, or `docker info --format
/// '{{json .}}'`, which has the same keys): `ID` and `ServerVersion` for the engine,
/// `Runtimes` (`path`, `runtimeArgs`, `status`) and `DefaultRuntime`, and `RuncCommit.ID` as
/// the version of a runtime whose program is runc. Pure: both ports read the same fields.
pub fn docker_info_runtimes(info: &serde_json::Value) -> EngineRuntimes {
    let text = |value: &serde_json::Value| value.as_str().unwrap_or_default().to_string();
    let runc_commit = text(&info["RuncCommit"]["ID"]);
    let runtimes = info["Runtimes"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, entry)| {
            let mut path = text(&entry["path"]);
            for arg in entry["runtimeArgs"].as_array().into_iter().flatten() {
                path.push(' ');
                path.push_str(arg.as_str().unwrap_or_default());
            }
            let mut version = Vec::new();
            let program = path.split(' ').next().unwrap_or_default();
            if (program == "runc" || program.ends_with("/runc")) && !runc_commit.is_empty() {
                version.push(format!("runc commit {runc_commit}"));
            }
            // `status` is a map (API 1.46+); sorted for a stable identity.
            let status: BTreeMap<String, String> = entry["status"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(key, value)| (key.clone(), text(value)))
                .collect();
            version.extend(status.iter().map(|(key, value)| format!("{key}={value}")));
            (
                name.clone(),
                RuntimeFacts {
                    path,
                    version: version.join("; "),
                },
            )
        })
        .collect();
    EngineRuntimes {
        engine: format!(
            "docker {} {}",
            text(&info["ServerVersion"]),
            text(&info["ID"])
        ),
        default: info["DefaultRuntime"]
            .as_str()
            .filter(|name| !name.is_empty())
            .map(str::to_string),
        runtimes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_policy::Hinted;

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
            .with_hint()
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
            .with_hint()
            .to_string();
        assert!(error.contains("registered as gVisor"), "{error}");
    }

    #[test]
    fn dockers_info_names_the_engine_and_each_runtime_with_its_version() {
        let info = serde_json::json!({
            "ID": "PM7C:AX5G",
            "ServerVersion": "20.10.24",
            "DefaultRuntime": "runc",
            "RuncCommit": {"ID": "1.1.5", "Expected": "1.1.5"},
            "Runtimes": {
                "runc": {"path": "runc"},
                "runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=host"],
                          "status": {"b": "2", "a": "1"}}
            }
        });
        let found = docker_info_runtimes(&info);
        assert_eq!(found.engine, "docker 20.10.24 PM7C:AX5G");
        assert_eq!(found.default.as_deref(), Some("runc"));
        assert_eq!(found.runtimes["runc"].version, "runc commit 1.1.5");
        assert_eq!(
            found.runtimes["runsc"].path,
            "/usr/bin/runsc --network=host"
        );
        assert_eq!(found.runtimes["runsc"].version, "a=1; b=2");
        assert_eq!(
            docker_info_runtimes(&serde_json::json!({})).runtimes.len(),
            0
        );
    }

    #[test]
    fn podmans_socket_counts_only_its_default_runtime() {
        let default = Runtimes::DefaultOnly(Some("runc".into()));
        assert!(check_runtime(Engine::Podman, "runc", &default).is_ok());
        let error = check_runtime(Engine::Podman, "runsc", &default)
            .unwrap_err()
            .with_hint()
            .to_string();
        assert!(error.contains("ignores HostConfig.Runtime"), "{error}");
        let usable = Runtimes::Usable(Err("default OCI runtime \"kata\" not found".into()));
        let error = check_runtime(Engine::Podman, "kata", &usable)
            .unwrap_err()
            .with_hint()
            .to_string();
        assert!(error.contains("containers.conf"), "{error}");
    }
}
