//! [`Sandboxes`]: the sessions' [`SandboxClient`] written once, over the
//! [engine port](crate::port). A sandbox is created by the detached launch
//! ([`crate::launch::launch_detached`], without signals: the spec's refusals, the image, the
//! runtime, the volumes, the egress companion, the start, and the removal of what was created
//! when a step fails); found, listed, inspected, stopped, started, renamed, frozen, committed
//! and deleted (the container, then its egress companions) through the port's typed
//! operations; its commands, logs and copies through the port's streaming operations. The two
//! backends' clients (`agentc_backend_cli::CliClient`, `agentc_backend_api::ApiClient`) are
//! this type over their ports.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use agentc_policy::Hinted;
use agentc_policy::{LaunchSpec, LABEL_EGRESS_FOR, LABEL_KIND, LABEL_PROFILE};
use bollard::models::ContainerInspectResponse;

use super::port::SessionPort;
use super::target::{check_name, is_companion, named_network, sandbox_of};
use super::{
    remove_companions_after, session_spec, CommitRequest, CopyReport, DeleteReport, ExecRequest,
    ImageFacts, ImageRecord, Listed, LogsRequest, OutputSink, Sandbox, SandboxClient,
    SandboxEgress, SessionError,
};
use crate::companion::state::{is_isolated_network, proxy_kind_filter};
use crate::daemon_text::{daemon_message, Refusal};
use crate::launch::{LaunchOptions, ProxyExecutable};
use crate::port::{EngineError, EngineErrorKind, EnginePort, Filter, ListedContainer};
use crate::{Engine, ExecError};

/// The sessions' client over the engine port `P`: what [`SandboxClient`] does, once for both
/// backends.
#[derive(Clone)]
pub struct Sandboxes<P> {
    port: P,
    /// The environment secrets are read from, by name.
    env: BTreeMap<String, String>,
    /// The agentc executable a created sandbox's egress proxy image is made of; `None`:
    /// located when a sandbox needs one ([`ProxyExecutable::locate`]).
    proxy_executable: Option<ProxyExecutable>,
}

impl<P: EnginePort> fmt::Debug for Sandboxes<P> {
    // The environment holds secret values: show names only.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Sandboxes")
            .field("backend", &self.port.backend())
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("proxy_executable", &self.proxy_executable)
            .finish()
    }
}

/// A failed engine operation of a session naming `step`, as the session reports it: the
/// program not there as [`ExecError::CannotRunDocker`] and a daemon that cannot be reached at
/// all as [`ExecError::Connect`] (both as a launch says them), a connection lost mid-operation
/// as [`ExecError::ConnectionLost`], any other refusal as [`ExecError::Refused`].
pub fn engine_failure(engine: Engine, step: &'static str, error: EngineError) -> SessionError {
    let message = daemon_message(&error.detail);
    SessionError::Launch(match error.kind {
        EngineErrorKind::NoProgram => error.in_launch(engine, step),
        EngineErrorKind::Unavailable if error.refusal() == Some(Refusal::Unreachable) => {
            ExecError::Connect { engine, message }
        }
        EngineErrorKind::Unavailable => ExecError::ConnectionLost {
            engine,
            step,
            message,
        },
        _ if error.refusal() == Some(Refusal::ConnectionLost) => ExecError::ConnectionLost {
            engine,
            step,
            message,
        },
        _ => ExecError::Refused {
            engine,
            step,
            message,
            refusal: error.refusal(),
        },
    })
}

impl<P: SessionPort> Sandboxes<P> {
    /// A client over `port` that reads secrets from `env` (and whose engine commands run with
    /// it, [`SessionPort::in_env`]). The egress proxies of the sandboxes it creates are images
    /// of the agentc binary, found when one is needed ([`ProxyExecutable::locate`]:
    /// `AGENTC_PROXY_EXECUTABLE` in `env`, else `agentc` on its `PATH`) or named
    /// ([`Sandboxes::with_proxy_executable`]); never of the calling program itself.
    pub fn over(port: P, env: BTreeMap<String, String>) -> Sandboxes<P> {
        Sandboxes {
            port: port.in_env(&env),
            env,
            proxy_executable: None,
        }
    }

    /// The client whose created sandboxes get egress proxies made of the agentc executable
    /// `proxy_executable` (the agentc binary passes itself, [`ProxyExecutable::running`]);
    /// one that is not the agentc binary of this version is refused at the launch that needs
    /// it ([`agentc_egress::image::is_agentc_binary`]).
    pub fn with_proxy_executable(self, proxy_executable: ProxyExecutable) -> Sandboxes<P> {
        Sandboxes {
            proxy_executable: Some(proxy_executable),
            ..self
        }
    }

    /// The executable the egress proxy of `container` is made of: the one named, else the one
    /// found ([`ProxyExecutable::locate`]); a container without a proxy to make needs none.
    fn proxy_executable_for(
        &self,
        container: &agentc_policy::ContainerSpec,
    ) -> Result<ProxyExecutable, SessionError> {
        if let Some(named) = &self.proxy_executable {
            return Ok(named.clone());
        }
        let needs_one = container
            .egress
            .as_deref()
            .is_some_and(crate::companion::makes_proxy_image);
        if !needs_one {
            return Ok(ProxyExecutable::running());
        }
        ProxyExecutable::locate(&self.env).ok_or_else(|| {
            SessionError::invalid(
                format!(
                    "the egress proxy of {} is made of the agentc binary, and none was found: \
                     {} is not set and no agentc is on PATH",
                    container.name.as_deref().unwrap_or("the sandbox"),
                    ProxyExecutable::VARIABLE
                ),
                "install agentc (`cargo install --path crates/agentc`), set \
                 AGENTC_PROXY_EXECUTABLE=/path/to/agentc in the client's environment, or name \
                 it with Sandboxes::with_proxy_executable",
            )
        })
    }

    /// The agentc executable an isolation probe's image is made of: the one named, else the
    /// one found ([`ProxyExecutable::locate`]); never the calling program, which is no agentc.
    /// `None`: the probe runs in the launch's own image.
    fn probe_executable(&self) -> Option<ProxyExecutable> {
        match &self.proxy_executable {
            Some(named) => Some(named.clone()),
            None => ProxyExecutable::locate(&self.env),
        }
    }

    /// The engine port it drives.
    pub fn port(&self) -> &P {
        &self.port
    }

    /// The environment this client reads secrets from and runs the engine's commands with
    /// ([`Sandboxes::over`]).
    pub fn env(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    /// The container's own inspect (without what [`SandboxClient::inspect`] adds from its
    /// egress proxy); [`ExecError::NoSuchContainer`] when it is gone.
    pub(crate) async fn inspect_container(
        &self,
        sandbox: &Sandbox,
    ) -> Result<ContainerInspectResponse, SessionError> {
        self.inspect_named(&sandbox.id).await
    }

    /// `error`, met while trying to `step`, as the session's error.
    fn failed(&self, step: &'static str, error: EngineError) -> SessionError {
        engine_failure(self.port.engine(), step, error)
    }

    /// `error` of an operation on `sandbox`: [`ExecError::NoSuchContainer`] when it is
    /// gone.
    fn on_container(
        &self,
        sandbox: &Sandbox,
        step: &'static str,
        error: EngineError,
    ) -> SessionError {
        if error.is_not_found() {
            ExecError::NoSuchContainer {
                name: sandbox.name.clone(),
            }
            .into()
        } else {
            self.failed(step, error)
        }
    }

    /// `outcome`, with a refusal of a container that is not running told apart as
    /// [`SessionError::Paused`] when the container is paused (the engines word both alike, or
    /// answer 409 to both).
    async fn paused_or<T>(
        &self,
        sandbox: &Sandbox,
        outcome: Result<T, SessionError>,
    ) -> Result<T, SessionError> {
        match outcome {
            Err(SessionError::NotRunning { name }) => {
                let paused = self.port.inspect(&sandbox.id).await.is_ok_and(|inspect| {
                    inspect
                        .state
                        .is_some_and(|state| state.paused == Some(true))
                });
                Err(if paused {
                    SessionError::Paused { name }
                } else {
                    SessionError::NotRunning { name }
                })
            }
            other => other,
        }
    }

    /// The inspect of the container `name` (a name or an ID), the name checked first.
    async fn inspect_named(&self, name: &str) -> Result<ContainerInspectResponse, SessionError> {
        check_name(name)?;
        self.port
            .inspect(name)
            .await
            .map_err(|error| match error.kind {
                EngineErrorKind::NotFound => ExecError::NoSuchContainer {
                    name: name.to_string(),
                }
                .into(),
                _ => self.failed("inspect the container", error),
            })
    }
}

impl<P: SessionPort> SandboxClient for Sandboxes<P> {
    fn backend(&self) -> &'static str {
        self.port.backend()
    }

    fn asks_side_by_side(&self) -> bool {
        self.port.asks_side_by_side()
    }

    async fn create(&self, spec: &LaunchSpec) -> Result<Sandbox, SessionError> {
        let container = session_spec(spec)?;
        let mut quiet = |_: &str| {};
        let options = LaunchOptions {
            proxy_executable: self.proxy_executable_for(&container)?,
            ..LaunchOptions::default()
        };
        // The isolation floor, met over this client's port as `agentc run` meets it.
        let container = self.meet_floor(&container, &spec.profile).await?.container;
        // A host port the launch chooses, in use on this machine: refused before anything is
        // created, as `agentc run` refuses it.
        let engine = self.port.engine();
        let remote = crate::engine::is_remote(engine, &self.env);
        crate::host_ports::check_free(&container, &spec.origins, engine, remote)
            .map_err(SessionError::Launch)?;
        let started = crate::launch::launch_detached(
            &self.port,
            &container,
            &self.env,
            &options,
            &mut quiet,
            &mut crate::signals::NoInterrupts,
        )
        .await?;
        Ok(Sandbox {
            id: started.id,
            name: started.placed.name.unwrap_or_default(),
            profile: spec.profile.clone(),
        })
    }

    async fn meet_floor(
        &self,
        container: &agentc_policy::ContainerSpec,
        profile: &str,
    ) -> Result<crate::isolation::Met, SessionError> {
        if container.isolation.is_none() {
            return Ok(crate::isolation::Met {
                container: container.clone(),
                chosen: None,
            });
        }
        let floor = crate::isolation::FloorOptions::from_env(&self.env, self.probe_executable());
        crate::isolation::meet_floor(&self.port, container, profile, &floor)
            .await
            .map_err(|error| match error {
                crate::isolation::FloorError::Engine(error) => SessionError::Launch(error),
                crate::isolation::FloorError::Shortfall(shortfall) => SessionError::Launch(
                    crate::isolation::not_met(shortfall, self.port.engine(), profile),
                ),
            })
    }

    async fn find(&self, name: &str) -> Result<Sandbox, SessionError> {
        let inspect = self.inspect_named(name).await?;
        sandbox_of(&inspect, name)
    }

    async fn find_profile(
        &self,
        profile: &str,
        stopped_too: bool,
    ) -> Result<Sandbox, SessionError> {
        let filter = Filter::labels([format!("{LABEL_PROFILE}={profile}")]);
        let listed = self
            .port
            .list_containers(&filter)
            .await
            .map_err(|error| self.failed("list containers", error))?;
        let mut found: Vec<_> = listed
            .into_iter()
            .filter(|container| stopped_too || container.state == "running")
            // A sandbox's egress proxy carries its profile too; it is not the sandbox.
            .filter(|container| {
                !is_companion(container.labels.get(LABEL_KIND).map_or("", String::as_str))
            })
            // Nor is an idle pool member (`agentc pool fill`) the profile's sandbox.
            .filter(|container| !agentc_policy::pool::is_idle_name(&container.name))
            .collect();
        found.sort_by(|a, b| a.name.cmp(&b.name));
        match found.as_slice() {
            [one] => self.find(&one.id).await,
            _ => Err(SessionError::NotOneContainer {
                profile: profile.to_string(),
                stopped_too,
                found: found.into_iter().map(|container| container.name).collect(),
            }),
        }
    }

    async fn inspect(&self, sandbox: &Sandbox) -> Result<ContainerInspectResponse, SessionError> {
        let mut inspect = self.inspect_named(&sandbox.id).await?;
        // Behind the egress proxy, the ports it relays are reachable at its host bindings.
        crate::companion::add_relayed_ports(&self.port, &sandbox.name, &mut inspect).await;
        Ok(inspect)
    }

    async fn exec_detached(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
    ) -> Result<(), SessionError> {
        let started = self.port.exec_detached(sandbox, request, &self.env).await;
        self.paused_or(sandbox, started).await
    }

    async fn exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        output: &mut dyn OutputSink,
    ) -> Result<i64, SessionError> {
        let ran = self.port.exec(sandbox, request, &self.env, output).await;
        self.paused_or(sandbox, ran).await
    }

    async fn upload(
        &self,
        sandbox: &Sandbox,
        source: &Path,
        target: &str,
    ) -> Result<CopyReport, SessionError> {
        let copied = super::transfer::upload(self, sandbox, source, target).await;
        self.paused_or(sandbox, copied).await
    }

    async fn download(
        &self,
        sandbox: &Sandbox,
        source: &str,
        target: &Path,
    ) -> Result<CopyReport, SessionError> {
        let copied = super::transfer::download(self, sandbox, source, target).await;
        self.paused_or(sandbox, copied).await
    }

    async fn logs(
        &self,
        sandbox: &Sandbox,
        request: &LogsRequest,
        output: &mut dyn OutputSink,
    ) -> Result<(), SessionError> {
        self.port.follow_logs(sandbox, request, output).await
    }

    async fn start(&self, sandbox: &Sandbox) -> Result<(), SessionError> {
        self.port
            .start(&sandbox.id)
            .await
            .map_err(|error| self.on_container(sandbox, "start the container", error))
    }

    async fn stop(&self, sandbox: &Sandbox, timeout: Option<u32>) -> Result<(), SessionError> {
        self.port
            .stop(&sandbox.id, timeout)
            .await
            .map_err(|error| self.on_container(sandbox, "stop the container", error))
    }

    async fn delete(&self, sandbox: &Sandbox) -> DeleteReport {
        // A forced removal is silent about a container that is already gone: ask first.
        let inspect = match self.port.inspect(&sandbox.id).await {
            Err(error) if error.is_not_found() => return DeleteReport::default(),
            inspect => inspect.ok(),
        };
        // The companion is labelled for the name the sandbox was launched with, which its
        // isolated network carries: a claimed pool member has been renamed since.
        let launched_as = match inspect.as_ref().and_then(named_network) {
            Some(network) => match self.port.network(&network).await {
                Ok(Some(found)) if is_isolated_network(&found.labels) => {
                    found.labels.get(LABEL_EGRESS_FOR).cloned()
                }
                _ => None,
            },
            None => None,
        }
        .unwrap_or_else(|| sandbox.name.clone());
        let report = match self.port.remove_container(&sandbox.id).await {
            Ok(()) => DeleteReport {
                removed: true,
                left: Vec::new(),
            },
            Err(error) => DeleteReport {
                removed: false,
                left: vec![format!(
                    "container {}: {}",
                    sandbox.name,
                    daemon_message(&error.detail)
                )],
            },
        };
        let mut report = remove_companions_after(self, sandbox, &launched_as, report).await;
        // The home it had for itself alone (a restored or forked sandbox's).
        if report.removed {
            let labels = inspect
                .map(|inspect| ListedContainer::from_inspect(&inspect).labels)
                .unwrap_or_default();
            if let Err(error) = crate::volumes::remove_own_volume(&self.port, &labels).await {
                report.left.push(format!(
                    "the own volume of {}: {}",
                    sandbox.name,
                    error.with_hint()
                ));
            }
        }
        report
    }

    async fn egress(&self, sandbox: &Sandbox) -> Result<Option<SandboxEgress>, SessionError> {
        let inspect = self.inspect_named(&sandbox.id).await?;
        let Some(network) = named_network(&inspect) else {
            return Ok(None);
        };
        let labels = match self.port.network(&network).await {
            Ok(Some(found)) => found.labels,
            // Its network is gone: no proxy can serve it, nor can it tell whether one did.
            Ok(None) => return Ok(None),
            Err(error) if error.is_not_found() => return Ok(None),
            Err(error) => return Err(self.failed("inspect the network", error)),
        };
        if !is_isolated_network(&labels) {
            return Ok(None);
        }
        let filter = Filter {
            labels: vec![proxy_kind_filter()],
            network: Some(network.clone()),
        };
        let listed = self
            .port
            .list_containers(&filter)
            .await
            .map_err(|error| self.failed("list the egress proxies", error))?;
        let proxy = match listed.into_iter().next() {
            Some(proxy) => match self.inspect_named(&proxy.id).await {
                Ok(proxy) => Some(proxy),
                // Removed meanwhile.
                Err(SessionError::Launch(ExecError::NoSuchContainer { .. })) => None,
                Err(error) => return Err(error),
            },
            None => None,
        };
        Ok(Some(SandboxEgress::new(&network, proxy.as_ref())))
    }

    // ---- Snapshots (issue 23).

    async fn pause(&self, sandbox: &Sandbox) -> Result<(), SessionError> {
        self.port
            .pause(&sandbox.id, false)
            .await
            .map_err(|error| self.on_container(sandbox, "pause the container", error))
    }

    async fn unpause(&self, sandbox: &Sandbox) -> Result<(), SessionError> {
        self.port
            .pause(&sandbox.id, true)
            .await
            .map_err(|error| self.on_container(sandbox, "unpause the container", error))
    }

    async fn commit(
        &self,
        sandbox: &Sandbox,
        request: &CommitRequest,
    ) -> Result<String, SessionError> {
        self.port
            .commit(
                &sandbox.id,
                &request.reference,
                &request.changes,
                request.pause,
            )
            .await
            .map_err(|error| self.on_container(sandbox, "commit the container", error))
    }

    async fn image(&self, reference: &str) -> Result<Option<ImageRecord>, SessionError> {
        let Some(inspect) = self
            .port
            .image_inspect(reference)
            .await
            .map_err(|error| self.failed("inspect the image", error))?
        else {
            return Ok(None);
        };
        let value = serde_json::to_value(&inspect).map_err(|error| ExecError::ConnectionLost {
            engine: self.port.engine(),
            step: "read the image's inspect",
            message: error.to_string(),
        })?;
        Ok(ImageRecord::from_inspect(&value))
    }

    async fn images(&self, label: &str) -> Result<Vec<ImageRecord>, SessionError> {
        let ids = self
            .port
            .list_images(label)
            .await
            .map_err(|error| self.failed("list images", error))?;
        let mut seen = std::collections::BTreeSet::new();
        let mut records = Vec::new();
        for id in ids {
            if !seen.insert(id.clone()) {
                continue;
            }
            // An image removed meanwhile is not listed.
            if let Some(record) = self.image(&id).await? {
                records.push(record);
            }
        }
        records.sort_by(|a, b| a.created.cmp(&b.created));
        Ok(records)
    }

    async fn remove_image(&self, reference: &str) -> Result<(), SessionError> {
        self.port
            .remove_image(reference)
            .await
            .map_err(|error| self.failed("remove the image", error))
    }

    async fn volume_exists(&self, name: &str) -> Result<bool, SessionError> {
        self.port
            .volume_exists(name)
            .await
            .map_err(|error| self.failed("inspect the volume", error))
    }

    async fn memory_support(&self) -> Result<(), String> {
        self.port.memory_support().await
    }

    async fn checkpoint(&self, sandbox: &Sandbox, file: &Path) -> Result<(), SessionError> {
        self.port.checkpoint(sandbox, file).await
    }

    async fn restore_checkpoint(&self, file: &Path, name: &str) -> Result<Sandbox, SessionError> {
        self.port.restore_checkpoint(file, name).await?;
        self.find(name).await
    }

    // ---- Warm pools (issue 22).

    async fn rename(&self, from: &Sandbox, to: &str) -> Result<Option<Sandbox>, SessionError> {
        let renamed = self
            .port
            .rename(&from.name, to)
            .await
            .map_err(|error| self.failed("rename the container", error))?;
        Ok(renamed.then(|| Sandbox {
            id: from.id.clone(),
            name: to.to_string(),
            profile: from.profile.clone(),
        }))
    }

    async fn list_labelled(&self, label: &str) -> Result<Vec<Listed>, SessionError> {
        let filter = Filter::labels([label, LABEL_PROFILE]);
        let listed = self
            .port
            .list_containers(&filter)
            .await
            .map_err(|error| self.failed("list containers", error))?;
        Ok(listed
            .into_iter()
            .map(|container| Listed {
                sandbox: Sandbox {
                    id: container.id,
                    name: container.name,
                    profile: container
                        .labels
                        .get(LABEL_PROFILE)
                        .cloned()
                        .unwrap_or_default(),
                },
                state: container.state,
                labels: container.labels,
            })
            .collect())
    }

    async fn image_facts(&self, image: &str) -> Result<ImageFacts, SessionError> {
        let inspect = self
            .port
            .image_inspect(image)
            .await
            .map_err(|error| self.failed("inspect the image", error))?
            .ok_or_else(|| ExecError::ImageMissing {
                engine: self.port.engine(),
                image: image.to_string(),
            })?;
        let config = inspect.config.unwrap_or_default();
        let id = inspect.id.unwrap_or_default();
        // Podman's command line prints the ID without its `sha256:` (Docker, and either
        // engine's API, with it): added, so that the pool key of one image is the same
        // through both backends.
        let id = if id.len() == 64 && id.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            format!("sha256:{id}")
        } else {
            id
        };
        Ok(ImageFacts {
            id,
            entrypoint: config.entrypoint.unwrap_or_default(),
            cmd: config.cmd.unwrap_or_default(),
        })
    }

    async fn remove_companions(&self, workload: &str) -> Result<Vec<String>, SessionError> {
        Ok(crate::companion::remove_companions(&self.port, workload).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryEngine;

    #[test]
    fn a_session_failure_keeps_the_refusal_the_port_classified() {
        let failure = |text: &str| {
            engine_failure(
                Engine::Docker,
                "run a command",
                EngineError::from_text(text),
            )
        };
        let lost = failure("error during connect: Get \"http://docker/v1.41/_ping\": EOF");
        assert!(
            matches!(&lost, SessionError::Launch(ExecError::ConnectionLost { step, .. }) if *step == "run a command"),
            "{lost}"
        );
        let used = failure("Error response from daemon: conflict: unable to delete abc (must be forced) - image is being used by stopped container def");
        assert!(
            matches!(
                &used,
                SessionError::Launch(ExecError::Refused {
                    refusal: Some(Refusal::UsedByContainer),
                    ..
                })
            ),
            "{used}"
        );
    }

    /// A library caller that names no agentc executable gets the isolation probe made of the
    /// agentc it has (its variable, its `PATH`), as its proxies are; before, the probe was
    /// made of the calling program, which no agentc image can be made of (it lacks agentc's
    /// mark), so it always fell back to the launch's own image (which needs `sh`, `cat` and
    /// `dmesg`).
    #[test]
    fn the_floors_probe_is_made_of_agentc_never_of_the_calling_program() {
        let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect()
        };
        let client = |env: BTreeMap<String, String>| Sandboxes::over(MemoryEngine::default(), env);
        assert_eq!(
            client(env(&[("PATH", "/nonexistent")])).probe_executable(),
            None
        );
        let variable = env(&[(ProxyExecutable::VARIABLE, "/opt/agentc")]);
        let found = client(variable).probe_executable().expect("the variable's");
        assert_eq!(found.path(), Path::new("/opt/agentc"));
        let named = client(env(&[])).with_proxy_executable(ProxyExecutable::new("/usr/bin/agentc"));
        let named = named.probe_executable().expect("the one named");
        assert_eq!(named.path(), Path::new("/usr/bin/agentc"));
    }
}
