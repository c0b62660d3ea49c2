//! The memory engine's [`EnginePort`]: each operation recorded, failed when asked, and carried
//! out on the [`World`](super::World) with the engine's rules.

use agentc_policy::Hinted;
use std::collections::{BTreeMap, BTreeSet};

use agentc_policy::{ContainerSpec, EgressSpec, IsolatedNetwork};
use bollard::models::{ContainerInspectResponse, ImageConfig, ImageInspect};

use super::{
    carries, change_labels, conflict, lock, not_found, MemoryEngine, MemoryImage, RunState,
    SUBNET_TAKEN,
};
use crate::engine::Engine;
use crate::port::{
    EngineError, EngineErrorKind, EnginePort, Exited, Filter, ImportRequest, ListedContainer,
    ListedObject,
};
use crate::runtime::{EngineRuntimes, RuntimeFacts};
use crate::signals::Interrupts;
use crate::ExecError;

impl EnginePort for MemoryEngine {
    fn engine(&self) -> Engine {
        self.engine
    }

    async fn image_exists(&self, reference: &str) -> Result<bool, EngineError> {
        self.enter("image_exists", reference)?;
        Ok(lock(&self.world).images.contains_key(reference))
    }

    async fn image_inspect(&self, reference: &str) -> Result<Option<ImageInspect>, EngineError> {
        self.enter("image_inspect", reference)?;
        let world = lock(&self.world);
        let found = world
            .images
            .get(reference)
            .or_else(|| world.images.values().find(|image| image.id == reference));
        Ok(found.map(|image| ImageInspect {
            id: Some(image.id.clone()),
            config: Some(ImageConfig {
                labels: Some(image.labels.clone().into_iter().collect()),
                ..ImageConfig::default()
            }),
            ..ImageInspect::default()
        }))
    }

    async fn tag_image(&self, source: &str, reference: &str) -> Result<(), EngineError> {
        self.enter("tag_image", reference)?;
        let mut world = lock(&self.world);
        let image = world
            .images
            .get(source)
            .or_else(|| world.images.values().find(|image| image.id == source))
            .cloned()
            .ok_or_else(|| not_found("image", source))?;
        world.images.insert(reference.to_string(), image);
        Ok(())
    }

    async fn pull_image(
        &self,
        reference: &str,
        on_line: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), EngineError> {
        self.enter("pull_image", reference)?;
        if !lock(&self.behaviour).registry.contains(reference) {
            return Err(EngineError::new(
                EngineErrorKind::Failed,
                format!("Error response from daemon: pull access denied for {reference}"),
            ));
        }
        on_line(&format!("pulled {reference}"));
        let id = self.new_id();
        lock(&self.world).images.insert(
            reference.to_string(),
            MemoryImage {
                id: format!("sha256:{id}"),
                labels: BTreeMap::new(),
            },
        );
        Ok(())
    }

    async fn import_image(&self, request: ImportRequest<'_>) -> Result<(), EngineError> {
        self.enter("import_image", request.tag)?;
        let id = self.new_id();
        lock(&self.world).images.insert(
            request.tag.to_string(),
            MemoryImage {
                id: format!("sha256:{id}"),
                labels: change_labels(request.changes),
            },
        );
        Ok(())
    }

    async fn create_isolated_network(&self, network: &IsolatedNetwork) -> Result<(), EngineError> {
        self.enter("create_isolated_network", &network.name)?;
        let mut world = lock(&self.world);
        if world.networks.contains_key(&network.name) {
            return Err(conflict(format!(
                "Error response from daemon: network with name {} already exists",
                network.name
            )));
        }
        {
            let mut behaviour = lock(&self.behaviour);
            let subnet = &network.subnet;
            let made_here = behaviour
                .subnets
                .iter()
                .any(|(name, held)| held == subnet && world.networks.contains_key(name));
            if behaviour.subnets_held.contains(subnet) || made_here {
                return Err(EngineError::new(EngineErrorKind::Failed, SUBNET_TAKEN));
            }
            behaviour
                .subnets
                .insert(network.name.clone(), subnet.clone());
        }
        world.networks.insert(
            network.name.clone(),
            ListedObject {
                name: network.name.clone(),
                labels: network.labels.clone(),
                created: None,
                internal: Some(network.internal),
            },
        );
        Ok(())
    }

    async fn create_proxy(
        &self,
        egress: &EgressSpec,
        image: &str,
        secrets: &BTreeMap<String, String>,
    ) -> Result<(), EngineError> {
        let name = egress.proxy.name.clone().unwrap_or_default();
        self.enter("create_proxy", &name)?;
        let _ = secrets;
        let proxy =
            crate::companion::prepare::proxy_as_created(egress, Some(image)).map_err(|error| {
                EngineError::new(EngineErrorKind::Unsupported, error.with_hint().to_string())
            })?;
        self.create(&proxy).map(|_| ())
    }

    async fn connect_proxy(&self, egress: &EgressSpec) -> Result<(), EngineError> {
        let name = egress.proxy.name.clone().unwrap_or_default();
        self.enter("connect_proxy", &name)?;
        let mut world = lock(&self.world);
        if !world.networks.contains_key(&egress.network.name) {
            return Err(not_found("network", &egress.network.name));
        }
        let proxy = world
            .container_mut(&name)
            .ok_or_else(|| not_found("container", &name))?;
        proxy.networks.push(egress.network.name.clone());
        Ok(())
    }

    async fn check_launch(&self, spec: &ContainerSpec) -> Result<(), ExecError> {
        let name = spec.name.clone().unwrap_or_default();
        self.enter("check_launch", &name)
            .map_err(|error| error.in_launch(self.engine, "check the launch"))
    }

    async fn run_detached(
        &self,
        spec: &ContainerSpec,
        env: &BTreeMap<String, String>,
    ) -> Result<String, EngineError> {
        let name = spec.name.clone().unwrap_or_default();
        self.enter("run_detached", &name)?;
        let _ = env;
        let container = self.create(spec)?;
        self.start_container(&container.id)?;
        Ok(container.id)
    }

    async fn start_launch(
        &self,
        spec: &ContainerSpec,
        env: &BTreeMap<String, String>,
    ) -> Result<String, ExecError> {
        let name = spec.name.clone().unwrap_or_default();
        let step = "create the container";
        self.enter("start_launch", &name)
            .map_err(|error| error.in_launch(self.engine, step))?;
        let _ = env;
        let container = self
            .create(spec)
            .map_err(|error| error.in_launch(self.engine, step))?;
        self.start_container(&container.id)
            .map_err(|error| error.in_launch(self.engine, "start the container"))?;
        Ok(container.id)
    }

    async fn run_attached<S: Interrupts>(
        &self,
        spec: &ContainerSpec,
        env: &BTreeMap<String, String>,
        terminal: bool,
        signals: &mut S,
    ) -> Result<Exited, ExecError> {
        let name = spec.name.clone().unwrap_or_default();
        let step = "create the container";
        self.enter("run_attached", &name)
            .map_err(|error| error.in_launch(self.engine, step))?;
        let _ = (env, terminal);
        let container = self
            .create(spec)
            .map_err(|error| error.in_launch(self.engine, step))?;
        if let Some(signal) = signals.pending() {
            self.remove(&container.id);
            return Err(ExecError::interrupted(signal, Some(&container.name)));
        }
        self.start_container(&container.id)
            .map_err(|error| error.in_launch(self.engine, "start the container"))?;
        let exit_code = lock(&self.behaviour).attached_exit;
        self.remove(&container.id);
        Ok(Exited {
            exit_code,
            id: container.id,
            oom_killed: Some(false),
        })
    }

    async fn runtimes(&self) -> Result<EngineRuntimes, ExecError> {
        self.enter("runtimes", "")
            .map_err(|error| error.in_launch(self.engine, "list the runtimes"))?;
        let runtimes = lock(&self.behaviour).runtimes.clone();
        if !runtimes.runtimes.is_empty() {
            return Ok(runtimes);
        }
        Ok(EngineRuntimes {
            engine: "memory 1".to_string(),
            default: Some("runc".to_string()),
            runtimes: BTreeMap::from([(
                "runc".to_string(),
                RuntimeFacts {
                    path: "runc".to_string(),
                    version: "1".to_string(),
                },
            )]),
        })
    }

    async fn wait(&self, container: &str) -> Result<i64, EngineError> {
        self.enter("wait", container)?;
        let world = lock(&self.world);
        match world.container(container).map(|found| found.state) {
            None => Err(not_found("container", container)),
            Some(RunState::Exited(code)) => Ok(code),
            Some(_) => Err(EngineError::new(
                EngineErrorKind::Failed,
                format!("{container} is running: a memory engine does not wait for it"),
            )),
        }
    }

    async fn logs(&self, container: &str, stderr: bool) -> Result<String, EngineError> {
        self.enter("logs", container)?;
        let _ = stderr;
        let world = lock(&self.world);
        let found = world
            .container(container)
            .ok_or_else(|| not_found("container", container))?;
        Ok(found.logs.clone())
    }

    async fn start(&self, container: &str) -> Result<(), EngineError> {
        self.enter("start", container)?;
        self.start_container(container)
    }

    async fn inspect(&self, container: &str) -> Result<ContainerInspectResponse, EngineError> {
        self.enter("inspect", container)?;
        let world = lock(&self.world);
        world
            .container(container)
            .map(MemoryEngine::inspect_of)
            .ok_or_else(|| not_found("container", container))
    }

    async fn inspect_json(&self, container: &str) -> Result<serde_json::Value, EngineError> {
        let inspect = self.inspect(container).await?;
        serde_json::to_value(inspect)
            .map_err(|error| EngineError::new(EngineErrorKind::Failed, error.to_string()))
    }

    async fn network_inspect_json(&self, network: &str) -> Result<serde_json::Value, EngineError> {
        self.enter("network_inspect_json", network)?;
        let world = lock(&self.world);
        let found = world
            .networks
            .get(network)
            .ok_or_else(|| not_found("network", network))?;
        Ok(serde_json::json!({
            "Name": found.name,
            "Internal": found.internal,
            "Labels": found.labels,
        }))
    }

    async fn exec_status(&self, container: &str, argv: &[&str]) -> Result<i64, EngineError> {
        self.enter("exec_status", container)?;
        self.running(container)?;
        Ok(self.exec_result(argv).0)
    }

    async fn logs_tail(&self, container: &str, lines: u32) -> Result<String, EngineError> {
        let logs = self.logs(container, true).await?;
        let all: Vec<&str> = logs.lines().collect();
        let from = all.len().saturating_sub(lines as usize);
        Ok(all[from..].join("\n"))
    }

    async fn remove_container(&self, container: &str) -> Result<(), EngineError> {
        self.enter("remove_container", container)?;
        self.remove(container);
        Ok(())
    }

    async fn list_containers(&self, filter: &Filter) -> Result<Vec<ListedContainer>, EngineError> {
        self.enter("list_containers", filter.network.as_deref().unwrap_or(""))?;
        let world = lock(&self.world);
        Ok(world
            .containers
            .values()
            .filter(|container| {
                filter
                    .labels
                    .iter()
                    .all(|label| carries(&container.labels, label))
            })
            .filter(|container| {
                filter
                    .network
                    .as_ref()
                    .is_none_or(|network| container.networks.contains(network))
            })
            .map(MemoryEngine::listed)
            .collect())
    }

    async fn network(&self, name: &str) -> Result<Option<ListedObject>, EngineError> {
        self.enter("network", name)?;
        Ok(lock(&self.world).networks.get(name).cloned())
    }

    async fn list_networks(&self, filter: &Filter) -> Result<Vec<ListedObject>, EngineError> {
        self.enter("list_networks", "")?;
        Ok(MemoryEngine::objects(&lock(&self.world).networks, filter))
    }

    async fn remove_network(&self, name: &str) -> Result<(), EngineError> {
        self.enter("remove_network", name)?;
        let mut world = lock(&self.world);
        if !world.networks.contains_key(name) {
            return Err(not_found("network", name));
        }
        if let Some(user) = world
            .containers
            .values()
            .find(|container| container.networks.iter().any(|network| network == name))
        {
            return Err(conflict(format!(
                "Error response from daemon: error while removing network: network {name} has active endpoints ({})",
                user.name
            )));
        }
        world.networks.remove(name);
        Ok(())
    }

    async fn volume_exists(&self, name: &str) -> Result<bool, EngineError> {
        self.enter("volume_exists", name)?;
        Ok(lock(&self.world).volumes.contains_key(name))
    }

    async fn create_volume(
        &self,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<(), EngineError> {
        self.enter("create_volume", name)?;
        lock(&self.world)
            .volumes
            .entry(name.to_string())
            .or_insert_with(|| ListedObject {
                name: name.to_string(),
                labels: labels.clone(),
                created: None,
                internal: None,
            });
        Ok(())
    }

    async fn list_volumes(&self, filter: &Filter) -> Result<Vec<ListedObject>, EngineError> {
        self.enter("list_volumes", "")?;
        Ok(MemoryEngine::objects(&lock(&self.world).volumes, filter))
    }

    async fn remove_volume(&self, name: &str) -> Result<(), EngineError> {
        self.enter("remove_volume", name)?;
        let mut world = lock(&self.world);
        if !world.volumes.contains_key(name) {
            return Err(not_found("volume", name));
        }
        if let Some(user) = world
            .containers
            .values()
            .find(|container| container.volumes.iter().any(|volume| volume == name))
        {
            return Err(conflict(format!(
                "Error response from daemon: remove {name}: volume is in use - [{}]",
                user.id
            )));
        }
        world.volumes.remove(name);
        Ok(())
    }

    fn backend(&self) -> &'static str {
        "memory"
    }

    async fn stop(&self, container: &str, timeout: Option<u32>) -> Result<(), EngineError> {
        self.enter("stop", container)?;
        let _ = timeout;
        let mut world = lock(&self.world);
        let found = world
            .container_mut(container)
            .ok_or_else(|| not_found("container", container))?;
        if matches!(found.state, RunState::Running | RunState::Paused) {
            found.state = RunState::Exited(143);
        }
        Ok(())
    }

    async fn pause(&self, container: &str, thaw: bool) -> Result<(), EngineError> {
        self.enter("pause", container)?;
        let mut world = lock(&self.world);
        let found = world
            .container_mut(container)
            .ok_or_else(|| not_found("container", container))?;
        found.state = match (found.state, thaw) {
            (RunState::Running, false) => RunState::Paused,
            (RunState::Paused, true) => RunState::Running,
            (state, _) => {
                return Err(conflict(format!(
                    "Error response from daemon: Container {} is {}",
                    found.id,
                    state.status()
                )))
            }
        };
        Ok(())
    }

    async fn rename(&self, from: &str, to: &str) -> Result<bool, EngineError> {
        self.enter("rename", from)?;
        let mut world = lock(&self.world);
        if from == to || !world.containers.contains_key(from) {
            return Ok(false);
        }
        if world.containers.contains_key(to) {
            return Err(conflict(format!(
                "Error response from daemon: Conflict. The container name \"/{to}\" is already in use"
            )));
        }
        if let Some(mut container) = world.containers.remove(from) {
            container.name = to.to_string();
            world.containers.insert(to.to_string(), container);
        }
        Ok(true)
    }

    async fn commit(
        &self,
        container: &str,
        reference: &str,
        changes: &[String],
        pause: bool,
    ) -> Result<String, EngineError> {
        self.enter("commit", container)?;
        let _ = pause;
        if lock(&self.world).container(container).is_none() {
            return Err(not_found("container", container));
        }
        let id = format!("sha256:{}", self.new_id());
        lock(&self.world).images.insert(
            reference.to_string(),
            MemoryImage {
                id: id.clone(),
                labels: change_labels(changes),
            },
        );
        Ok(id)
    }

    async fn list_images(&self, label: &str) -> Result<Vec<String>, EngineError> {
        self.enter("list_images", label)?;
        let world = lock(&self.world);
        let ids: BTreeSet<String> = world
            .images
            .values()
            .filter(|image| carries(&image.labels, label))
            .map(|image| image.id.clone())
            .collect();
        Ok(ids.into_iter().collect())
    }

    async fn remove_image(&self, reference: &str) -> Result<(), EngineError> {
        self.enter("remove_image", reference)?;
        let mut world = lock(&self.world);
        let id = world
            .images
            .get(reference)
            .map(|image| image.id.clone())
            .unwrap_or_else(|| reference.to_string());
        let references: Vec<String> = world
            .images
            .iter()
            .filter(|(name, image)| *name == reference || image.id == id)
            .map(|(name, _)| name.clone())
            .collect();
        if references.is_empty() {
            return Err(not_found("image", reference));
        }
        if let Some(user) = world.containers.values().find(|container| {
            references.contains(&container.image) && container.state == RunState::Running
        }) {
            return Err(conflict(format!(
                "Error response from daemon: conflict: unable to delete {reference} (cannot be forced) - image is being used by running container {}",
                user.id
            )));
        }
        for name in references {
            world.images.remove(&name);
        }
        Ok(())
    }
}
