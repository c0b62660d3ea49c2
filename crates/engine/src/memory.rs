//! An engine in memory: [`MemoryEngine`], an [`EnginePort`](crate::port::EnginePort) and
//! [`SessionPort`](crate::session::port::SessionPort) whose images,
//! containers, networks and volumes are maps ([`World`]), so that the orchestration written
//! over the port (a launch with its egress companion, `--count`, sessions, pools, snapshots,
//! the reaping of killed launches) runs without a daemon.
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

mod port;
mod session;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use agentc_policy::{ContainerSpec, MountSource, Network, KIND_EGRESS_PROXY, LABEL_KIND};
use bollard::models::{
    ContainerConfig, ContainerInspectResponse, ContainerState, ContainerStateStatusEnum,
    EndpointSettings, HostConfig, NetworkSettings,
};

use crate::engine::Engine;
use crate::port::{EngineError, EngineErrorKind, Filter, ListedContainer, ListedObject};

/// The wording of a subnet another network holds, as Docker says it (what
/// [`crate::companion::prepare::move_if_subnet_taken`] reads).
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
    /// The runtime it runs under, when it names one.
    pub runtime: Option<String>,
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

/// One call the orchestration made: the operation's name (the [`EnginePort`](crate::port::EnginePort) or
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
    /// The subnets other networks hold: an isolated network in one of them is refused with
    /// [`SUBNET_TAKEN`], as Docker refuses an overlapping pool.
    subnets_held: BTreeSet<String>,
    /// The subnet each isolated network made here was given, by network name; it holds the
    /// subnet while a network of that name exists in the world.
    subnets: BTreeMap<String, String>,
    /// What an exec prints and exits with, by its command line joined with spaces.
    execs: BTreeMap<String, (i64, String)>,
    /// The runtimes the engine has ([`EnginePort::runtimes`](crate::port::EnginePort::runtimes)).
    runtimes: crate::EngineRuntimes,
    /// What an isolation probe under each runtime prints (`Ok`), or why it fails (`Err`);
    /// a runtime not listed prints this machine's kernel.
    probes: BTreeMap<String, Result<String, String>>,
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

    /// The engine where networks not made here hold `subnets`: an isolated network in one of
    /// them, or in the subnet of a network made here, is refused ([`SUBNET_TAKEN`]).
    pub fn with_subnets_held<'a>(self, subnets: impl IntoIterator<Item = &'a str>) -> MemoryEngine {
        lock(&self.behaviour)
            .subnets_held
            .extend(subnets.into_iter().map(str::to_string));
        self
    }

    /// The subnet of the isolated network `name` made here, while it exists.
    pub fn subnet_of(&self, name: &str) -> Option<String> {
        if !lock(&self.world).networks.contains_key(name) {
            return None;
        }
        lock(&self.behaviour).subnets.get(name).cloned()
    }

    /// The engine whose exec of `command` (joined with spaces) prints `stdout` and exits `code`
    /// (any other exec prints nothing and exits 0).
    pub fn with_exec(self, command: &str, code: i64, stdout: &str) -> MemoryEngine {
        self.set_exec(command, code, stdout);
        self
    }

    /// Scripts the exec of `command` as [`MemoryEngine::with_exec`] does, between the calls
    /// of a test.
    pub fn set_exec(&self, command: &str, code: i64, stdout: &str) {
        lock(&self.behaviour)
            .execs
            .insert(command.to_string(), (code, stdout.to_string()));
    }

    /// Sets the runtimes the engine reports (also between the calls of a test).
    pub fn set_runtimes(&self, runtimes: crate::EngineRuntimes) {
        lock(&self.behaviour).runtimes = runtimes;
    }

    /// Makes an isolation probe under `runtime` print `seen` (`Ok`) or fail with the reason.
    pub fn with_probe(self, runtime: &str, seen: Result<&str, &str>) -> MemoryEngine {
        lock(&self.behaviour).probes.insert(
            runtime.to_string(),
            seen.map(str::to_string).map_err(str::to_string),
        );
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
            runtime: spec.runtime.clone(),
        };
        world.containers.insert(name, container.clone());
        Ok(container)
    }

    /// Starts the container `key`: a dying proxy exits at once, an isolation probe prints
    /// what the engine was told it sees and exits.
    fn start_container(&self, key: &str) -> Result<(), EngineError> {
        let (proxy_exits, probes) = {
            let behaviour = lock(&self.behaviour);
            (behaviour.proxy_exits, behaviour.probes.clone())
        };
        let mut world = lock(&self.world);
        let container = world
            .container_mut(key)
            .ok_or_else(|| not_found("container", key))?;
        if container
            .labels
            .contains_key(crate::isolation::probe::LABEL_PROBE)
        {
            let runtime = container.runtime.clone().unwrap_or_default();
            let seen = probes.get(&runtime).cloned().unwrap_or_else(|| {
                Ok(std::fs::read_to_string("/proc/version").unwrap_or_default())
            });
            (container.state, container.logs) = match seen {
                Ok(seen) => (RunState::Exited(0), seen),
                Err(reason) => (RunState::Exited(127), reason),
            };
            return Ok(());
        }
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

/// Runs `future` to its end on a runtime of its own with a clock (the flows' tests).
#[cfg(test)]
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
        .block_on(future)
}

#[cfg(test)]
mod flows;
#[cfg(test)]
mod warm_flows;
