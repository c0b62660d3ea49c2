//! An engine in memory: [`MemoryEngine`], an [`EnginePort`] and [`SessionPort`] whose images,
//! containers, networks and volumes are maps ([`World`]), so that the orchestration written
//! over the port (a launch with its egress companion, `--count`, sessions, pools, snapshots,
//! the reaping of killed launches) runs without a daemon, in microseconds.
//!
//! It keeps the engine's rules that the orchestration depends on: names are unique, a
//! container needs its image and its networks, a network or volume in use is not removed
//! ([`EngineErrorKind::Conflict`]), a removal of what is gone succeeds for containers and is
//! [`EngineErrorKind::NotFound`] for networks and volumes, exec needs a running container, a
//! named volume a container mounts is made on the way (as the engines do). It records every
//! call ([`MemoryEngine::calls`]) and fails any one on request ([`MemoryEngine::fail_call`],
//! [`MemoryEngine::fail_operation`]): a test runs a flow once to count its steps, then again
//! failing each step, and reads what is left ([`MemoryEngine::world`]).
//!
//! Built for this crate's tests and, with the `memory-port` feature, for a library caller's
//! own (as youki's `TestHelperSyscall` stands in for the kernel).

mod session;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use agentc_policy::{
    ContainerSpec, EgressSpec, IsolatedNetwork, MountSource, Network, KIND_EGRESS_PROXY, LABEL_KIND,
};
use bollard::models::{
    ContainerConfig, ContainerInspectResponse, ContainerState, ContainerStateStatusEnum,
    EndpointSettings, HostConfig, ImageConfig, ImageInspect, NetworkSettings,
};

use crate::engine::Engine;
use crate::port::{
    EngineError, EngineErrorKind, EnginePort, Exited, Filter, ImportRequest, ListedContainer,
    ListedObject,
};
use crate::runtime::{EngineRuntimes, RuntimeFacts};
use crate::signals::Interrupts;
use crate::ExecError;

/// The wording of a subnet another network holds, as Docker says it (what
/// [`crate::egress::move_if_subnet_taken`] reads).
pub const SUBNET_TAKEN: &str =
    "Error response from daemon: Pool overlaps with other one on this address space";

/// What a container is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// Created, never started.
    Created,
    /// Running.
    Running,
    /// Frozen (`docker pause`).
    Paused,
    /// Ended with this exit code.
    Exited(i64),
}

impl RunState {
    fn status(self) -> ContainerStateStatusEnum {
        match self {
            RunState::Created => ContainerStateStatusEnum::CREATED,
            RunState::Running => ContainerStateStatusEnum::RUNNING,
            RunState::Paused => ContainerStateStatusEnum::PAUSED,
            RunState::Exited(_) => ContainerStateStatusEnum::EXITED,
        }
    }
}

/// A container of a [`World`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryContainer {
    /// Its ID: 64 hexadecimal digits.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its image, as asked for.
    pub image: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// What it is doing.
    pub state: RunState,
    /// Its network mode: `bridge`, `none` or a network's name.
    pub network_mode: String,
    /// The networks it is connected to.
    pub networks: Vec<String>,
    /// The named volumes it mounts.
    pub volumes: Vec<String>,
    /// What it wrote (its logs).
    pub logs: String,
}

/// An image of a [`World`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryImage {
    /// Its ID (`sha256:` and 64 hexadecimal digits).
    pub id: String,
    /// Its labels (an import's or a commit's `LABEL` changes).
    pub labels: BTreeMap<String, String>,
}

/// Everything a [`MemoryEngine`] holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct World {
    /// Images by reference (`REPOSITORY:TAG`); a tag points at an image's record.
    pub images: BTreeMap<String, MemoryImage>,
    /// Containers by name.
    pub containers: BTreeMap<String, MemoryContainer>,
    /// Networks by name.
    pub networks: BTreeMap<String, ListedObject>,
    /// Volumes by name.
    pub volumes: BTreeMap<String, ListedObject>,
}

impl World {
    /// What exists here and not in `before`: `container NAME`, `network NAME`, `volume NAME`
    /// (images are left out: a launch keeps what it pulled or imported).
    pub fn added_since(&self, before: &World) -> Vec<String> {
        let mut added = Vec::new();
        let mut new = |kind: &str, now: Vec<&String>, then: BTreeSet<&String>| {
            for name in now {
                if !then.contains(name) {
                    added.push(format!("{kind} {name}"));
                }
            }
        };
        new(
            "container",
            self.containers.keys().collect(),
            before.containers.keys().collect(),
        );
        new(
            "network",
            self.networks.keys().collect(),
            before.networks.keys().collect(),
        );
        new(
            "volume",
            self.volumes.keys().collect(),
            before.volumes.keys().collect(),
        );
        added
    }

    fn container(&self, key: &str) -> Option<&MemoryContainer> {
        self.containers
            .get(key)
            .or_else(|| self.containers.values().find(|found| found.id == key))
    }

    fn container_mut(&mut self, key: &str) -> Option<&mut MemoryContainer> {
        let name = self.container(key)?.name.clone();
        self.containers.get_mut(&name)
    }
}

/// One call the orchestration made: the operation's name (the [`EnginePort`] or
/// [`SessionPort`](crate::session::port::SessionPort) method) and what it named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The method, such as `create_isolated_network`.
    pub operation: &'static str,
    /// The object it named (a container, network, volume or image), or empty.
    pub target: String,
}

/// Which calls fail.
#[derive(Debug, Clone)]
enum Fault {
    /// The call with this index (counted from 0 over every call).
    Call(usize, EngineError),
    /// Every call of this operation.
    Operation(&'static str, EngineError),
}

/// How the engine's programs behave, beyond the state.
#[derive(Debug, Clone, Default)]
struct Behaviour {
    /// Images a pull finds.
    registry: BTreeSet<String>,
    /// The exit code of an attached launch's container.
    attached_exit: i64,
    /// A started egress proxy exits at once with this code (its logs say why).
    proxy_exits: Option<i64>,
    /// How many isolated networks are refused with [`SUBNET_TAKEN`] before one is made.
    subnets_taken: u32,
    /// What an exec prints and exits with, by its command line joined with spaces.
    execs: BTreeMap<String, (i64, String)>,
}

/// An engine in memory; see the module documentation.
#[derive(Debug)]
pub struct MemoryEngine {
    engine: Engine,
    world: Mutex<World>,
    calls: Mutex<Vec<Call>>,
    faults: Mutex<Vec<Fault>>,
    behaviour: Mutex<Behaviour>,
    next_id: Mutex<u64>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn not_found(what: &str, name: &str) -> EngineError {
    EngineError::new(
        EngineErrorKind::NotFound,
        format!("Error: No such {what}: {name}"),
    )
}

fn conflict(detail: String) -> EngineError {
    EngineError::new(EngineErrorKind::Conflict, detail)
}

/// Whether `labels` carry `filter` (`KEY` or `KEY=VALUE`).
fn carries(labels: &BTreeMap<String, String>, filter: &str) -> bool {
    match filter.split_once('=') {
        Some((key, value)) => labels.get(key).is_some_and(|found| found == value),
        None => labels.contains_key(filter),
    }
}

/// The labels an import's or a commit's `LABEL KEY=VALUE` changes set.
fn change_labels(changes: &[String]) -> BTreeMap<String, String> {
    changes
        .iter()
        .filter_map(|change| change.strip_prefix("LABEL "))
        .filter_map(|label| label.split_once('='))
        .map(|(key, value)| (key.trim().to_string(), value.trim_matches('"').to_string()))
        .collect()
}

impl Default for MemoryEngine {
    fn default() -> Self {
        MemoryEngine::new(Engine::Docker)
    }
}

impl MemoryEngine {
    /// An empty engine that says it is `engine`.
    pub fn new(engine: Engine) -> MemoryEngine {
        MemoryEngine {
            engine,
            world: Mutex::new(World::default()),
            calls: Mutex::new(Vec::new()),
            faults: Mutex::new(Vec::new()),
            behaviour: Mutex::new(Behaviour::default()),
            next_id: Mutex::new(0),
        }
    }

    /// The engine with the image `reference` present.
    pub fn with_image(self, reference: &str) -> MemoryEngine {
        let id = self.new_id();
        lock(&self.world).images.insert(
            reference.to_string(),
            MemoryImage {
                id: format!("sha256:{id}"),
                labels: BTreeMap::new(),
            },
        );
        self
    }

    /// The engine whose pulls find `reference`.
    pub fn with_registry_image(self, reference: &str) -> MemoryEngine {
        lock(&self.behaviour).registry.insert(reference.to_string());
        self
    }

    /// The engine whose attached launches' containers exit with `code`.
    pub fn with_attached_exit(self, code: i64) -> MemoryEngine {
        lock(&self.behaviour).attached_exit = code;
        self
    }

    /// The engine whose egress proxies exit with `code` as soon as they start.
    pub fn with_dying_proxy(self, code: i64) -> MemoryEngine {
        lock(&self.behaviour).proxy_exits = Some(code);
        self
    }

    /// The engine that refuses the first `count` isolated networks' subnets ([`SUBNET_TAKEN`]).
    pub fn with_subnets_taken(self, count: u32) -> MemoryEngine {
        lock(&self.behaviour).subnets_taken = count;
        self
    }

    /// The engine whose exec of `command` (joined with spaces) prints `stdout` and exits `code`
    /// (any other exec prints nothing and exits 0).
    pub fn with_exec(self, command: &str, code: i64, stdout: &str) -> MemoryEngine {
        lock(&self.behaviour)
            .execs
            .insert(command.to_string(), (code, stdout.to_string()));
        self
    }

    /// Makes the call with `index` (counted from 0 over every call, see [`MemoryEngine::calls`])
    /// fail with `error`.
    pub fn fail_call(&self, index: usize, error: EngineError) {
        lock(&self.faults).push(Fault::Call(index, error));
    }

    /// Makes every call of `operation` fail with `error`.
    pub fn fail_operation(&self, operation: &'static str, error: EngineError) {
        lock(&self.faults).push(Fault::Operation(operation, error));
    }

    /// Every call made so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        lock(&self.calls).clone()
    }

    /// What the engine holds now.
    pub fn world(&self) -> World {
        lock(&self.world).clone()
    }

    /// Ends the running container `name` with `code` (as its process exiting would).
    pub fn exit(&self, name: &str, code: i64) {
        if let Some(container) = lock(&self.world).container_mut(name) {
            container.state = RunState::Exited(code);
        }
    }

    /// Removes the container, network or volume `name` behind the orchestration's back.
    pub fn remove_behind(&self, name: &str) {
        let mut world = lock(&self.world);
        world.containers.remove(name);
        world.networks.remove(name);
        world.volumes.remove(name);
    }

    fn new_id(&self) -> String {
        let mut next = lock(&self.next_id);
        *next += 1;
        format!("{:064x}", *next)
    }

    /// Records a call and fails it when asked to.
    fn enter(&self, operation: &'static str, target: &str) -> Result<(), EngineError> {
        let index = {
            let mut calls = lock(&self.calls);
            calls.push(Call {
                operation,
                target: target.to_string(),
            });
            calls.len() - 1
        };
        for fault in lock(&self.faults).iter() {
            match fault {
                Fault::Call(at, error) if *at == index => return Err(error.clone()),
                Fault::Operation(name, error) if *name == operation => return Err(error.clone()),
                _ => {}
            }
        }
        Ok(())
    }

    /// Creates the container `spec` describes (not started): its name free, its image and
    /// networks present, its named volumes made when missing.
    fn create(&self, spec: &ContainerSpec) -> Result<MemoryContainer, EngineError> {
        let mut world = lock(&self.world);
        let id = self.new_id();
        let name = spec
            .name
            .clone()
            .unwrap_or_else(|| format!("memory_{}", &id[56..]));
        if world.containers.contains_key(&name) {
            return Err(conflict(format!(
                "Error response from daemon: Conflict. The container name \"/{name}\" is already in use"
            )));
        }
        if !world.images.contains_key(&spec.image) {
            return Err(not_found("image", &spec.image));
        }
        let network_mode = match &spec.network {
            Network::Default => "bridge".to_string(),
            Network::None => "none".to_string(),
            Network::Named { name } => name.clone(),
        };
        let mut networks = Vec::new();
        if let Network::Named { name } = &spec.network {
            if !world.networks.contains_key(name) {
                return Err(not_found("network", name));
            }
            networks.push(name.clone());
        }
        let mut volumes = Vec::new();
        for mount in &spec.mounts {
            if let MountSource::Volume { name, .. } = &mount.source {
                world
                    .volumes
                    .entry(name.clone())
                    .or_insert_with(|| ListedObject {
                        name: name.clone(),
                        ..ListedObject::default()
                    });
                volumes.push(name.clone());
            }
        }
        let container = MemoryContainer {
            id,
            name: name.clone(),
            image: spec.image.clone(),
            labels: spec.labels.clone(),
            state: RunState::Created,
            network_mode,
            networks,
            volumes,
            logs: String::new(),
        };
        world.containers.insert(name, container.clone());
        Ok(container)
    }

    /// Starts the container `key`: a dying proxy exits at once.
    fn start_container(&self, key: &str) -> Result<(), EngineError> {
        let proxy_exits = lock(&self.behaviour).proxy_exits;
        let mut world = lock(&self.world);
        let container = world
            .container_mut(key)
            .ok_or_else(|| not_found("container", key))?;
        let is_proxy =
            container.labels.get(LABEL_KIND).map(String::as_str) == Some(KIND_EGRESS_PROXY);
        container.state = match (is_proxy, proxy_exits) {
            (true, Some(code)) => {
                container.logs = "egress-proxy: cannot listen: address in use\n".to_string();
                RunState::Exited(code)
            }
            _ => RunState::Running,
        };
        Ok(())
    }

    fn remove(&self, key: &str) {
        let mut world = lock(&self.world);
        if let Some(name) = world.container(key).map(|found| found.name.clone()) {
            world.containers.remove(&name);
        }
    }

    fn inspect_of(container: &MemoryContainer) -> ContainerInspectResponse {
        let exit_code = match container.state {
            RunState::Exited(code) => code,
            _ => 0,
        };
        ContainerInspectResponse {
            id: Some(container.id.clone()),
            name: Some(format!("/{}", container.name)),
            image: Some(container.image.clone()),
            state: Some(ContainerState {
                status: Some(container.state.status()),
                running: Some(container.state == RunState::Running),
                paused: Some(container.state == RunState::Paused),
                exit_code: Some(exit_code),
                oom_killed: Some(false),
                ..ContainerState::default()
            }),
            config: Some(ContainerConfig {
                image: Some(container.image.clone()),
                labels: Some(container.labels.clone().into_iter().collect()),
                ..ContainerConfig::default()
            }),
            host_config: Some(HostConfig {
                network_mode: Some(container.network_mode.clone()),
                ..HostConfig::default()
            }),
            network_settings: Some(NetworkSettings {
                networks: Some(
                    container
                        .networks
                        .iter()
                        .map(|name| (name.clone(), EndpointSettings::default()))
                        .collect(),
                ),
                ..NetworkSettings::default()
            }),
            restart_count: Some(0),
            ..ContainerInspectResponse::default()
        }
    }

    fn listed(container: &MemoryContainer) -> ListedContainer {
        ListedContainer {
            id: container.id.clone(),
            name: container.name.clone(),
            labels: container.labels.clone(),
            state: container.state.status().to_string(),
            created: None,
            networks: container.networks.clone(),
            image: container.image.clone(),
            status: String::new(),
        }
    }

    fn objects(objects: &BTreeMap<String, ListedObject>, filter: &Filter) -> Vec<ListedObject> {
        objects
            .values()
            .filter(|object| {
                filter
                    .labels
                    .iter()
                    .all(|label| carries(&object.labels, label))
            })
            .cloned()
            .collect()
    }

    fn running(&self, key: &str) -> Result<MemoryContainer, EngineError> {
        let world = lock(&self.world);
        let container = world
            .container(key)
            .ok_or_else(|| not_found("container", key))?;
        if container.state != RunState::Running {
            return Err(EngineError::new(
                EngineErrorKind::NotRunning,
                format!(
                    "Error response from daemon: Container {} is not running",
                    container.id
                ),
            ));
        }
        Ok(container.clone())
    }

    /// What an exec of `command` prints and exits with.
    fn exec_result(&self, command: &[&str]) -> (i64, String) {
        lock(&self.behaviour)
            .execs
            .get(&command.join(" "))
            .cloned()
            .unwrap_or((0, String::new()))
    }
}

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
        {
            let mut behaviour = lock(&self.behaviour);
            if behaviour.subnets_taken > 0 {
                behaviour.subnets_taken -= 1;
                return Err(EngineError::new(EngineErrorKind::Failed, SUBNET_TAKEN));
            }
        }
        let mut world = lock(&self.world);
        if world.networks.contains_key(&network.name) {
            return Err(conflict(format!(
                "Error response from daemon: network with name {} already exists",
                network.name
            )));
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
        let proxy = crate::egress::proxy_as_created(egress, Some(image))
            .map_err(|error| EngineError::new(EngineErrorKind::Unsupported, error.to_string()))?;
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

#[cfg(test)]
mod flows;
