//! The egress companion of a launch, written once over the [engine port](crate::port): the
//! proxy image ensured (built from the agentc executable the caller names, [`ProxyExecutable`],
//! and imported unless the engine has it), the isolated network created, the proxy's CA
//! and audit volumes, the proxy created, connected at its fixed address, started and health-checked (its
//! own `egress-proxy health` as an exec), and the ports it relays checked published, all
//! before the workload is created; its removal with the launch ([`teardown`]); where a
//! workload's relayed ports are reachable ([`add_relayed_ports`]). The leftovers of killed
//! launches and the removals `agentc rm` makes are in [`leftovers`](mod@leftovers).
//!
//! A step that fails removes what the earlier ones created: the workload is never created
//! without a healthy proxy (fail closed). An isolated network that exists already is left
//! alone: the error names whose it is and how to remove it. A SIGINT or SIGTERM the caller
//! reports between the steps ([`Interrupted`]) ends the set-up the same way, with
//! [`ExecError::Interrupted`].

pub mod leftovers;
pub mod prepare;
pub mod state;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use agentc_egress::image::ProxyExecutable;
use agentc_policy::{ContainerSpec, EgressSpec, LABEL_KIND, PROXY_IMAGE_PLACEHOLDER};
use bollard::models::ContainerInspectResponse;

use self::prepare::CREATE_NETWORK;
use self::state::{IsolatedNetworkUse, Member};
use crate::port::{
    EngineError, EngineErrorKind, EnginePort, Filter, ImportRequest, ListedContainer,
};
use crate::{pause, secrets, ExecError, Interrupt};

pub use leftovers::{
    leftovers, reap, remove_companions, remove_labelled, remove_orphan_networks, remove_volume,
};

/// How long the proxy has to answer its health check after it started.
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(20);

/// The step of a failed proxy create.
pub const CREATE_PROXY: &str = "create the egress proxy";
/// The step of a failed connect of the proxy to the isolated network.
pub const CONNECT_PROXY: &str = "connect the egress proxy to the isolated network";
/// The step of a proxy that did not start or did not become healthy.
pub const START_PROXY: &str = "start the egress proxy";
/// The step of a proxy image that could not be built or imported.
pub const BUILD_PROXY_IMAGE: &str = "build the egress proxy image";

/// Asked between the set-up's steps: the SIGINT or SIGTERM the caller received since the
/// launch began, if any (`&mut || None` where nothing listens).
pub type Interrupted<'a> = &'a mut (dyn FnMut() -> Option<Interrupt> + Send);

/// What [`setup`] created: the names [`teardown`] removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressSet {
    /// The isolated network.
    pub network: String,
    /// The proxy container.
    pub proxy: String,
    /// The proxy's volumes: its audit volume, and its CA volume when it holds credentials.
    pub volumes: Vec<String>,
}

fn failed(step: &'static str, message: impl ToString) -> ExecError {
    ExecError::Egress {
        step,
        message: message.to_string(),
        refusal: None,
    }
}

/// The engine's refusal of `step`, its kind kept as the port classified it.
fn refused(step: &'static str, error: EngineError) -> ExecError {
    ExecError::Egress {
        step,
        refusal: error.refusal(),
        message: error.to_string(),
    }
}

/// The tag of the proxy image of the agentc executable `source`, imported unless the engine
/// has it (its tag remembered from an earlier launch); also the image of the isolation probe,
/// which needs nothing of the launch's image.
pub async fn own_proxy_image<P: EnginePort>(
    port: &P,
    source: &ProxyExecutable,
) -> Result<String, ExecError> {
    if let Some(tag) = agentc_egress::image::cached_proxy_tag(source) {
        if port.image_exists(&tag).await.unwrap_or(false) {
            return Ok(tag);
        }
    }
    let image = agentc_egress::image::proxy_image(source)
        .map_err(|error| failed(BUILD_PROXY_IMAGE, error))?;
    let tag = import_unless_present(port, &image).await.map_err(|error| {
        failed(
            BUILD_PROXY_IMAGE,
            format!("cannot import {}: {error}", image.tag),
        )
    })?;
    agentc_egress::image::remember_proxy_tag(source, &tag);
    Ok(tag)
}

/// Imports an image built here ([`agentc_egress::image::proxy_image`],
/// [`agentc_egress::image::self_image`]) unless the engine has its tag already; returns the
/// tag.
pub async fn import_unless_present<P: EnginePort>(
    port: &P,
    image: &agentc_egress::image::Image,
) -> Result<String, EngineError> {
    if !port.image_exists(&image.tag).await? {
        let request = ImportRequest {
            tag: &image.tag,
            tar: &image.tar,
            changes: &image.changes,
        };
        port.import_image(request).await?;
    }
    Ok(image.tag.clone())
}

/// Whether the proxy image of `egress` is made of the agentc executable at launch: its spec
/// names no image of its own.
pub fn makes_proxy_image(egress: &EgressSpec) -> bool {
    egress.proxy.image == PROXY_IMAGE_PLACEHOLDER
}

/// The tag of the proxy image: the spec's own when it names one, else the image of the agentc
/// executable `source` ([`own_proxy_image`]).
async fn proxy_image<P: EnginePort>(
    port: &P,
    egress: &EgressSpec,
    source: &ProxyExecutable,
) -> Result<String, ExecError> {
    if !makes_proxy_image(egress) {
        return Ok(egress.proxy.image.clone());
    }
    own_proxy_image(port, source).await
}

/// Sets up the companion of `spec`, if it has one, moving it first to an instance of its own
/// when the container has no name (each run gets its set), and to another subnet when the
/// engine says its subnet overlaps another network's ([`ContainerSpec::egress_instance`]).
/// The keys the proxy holds are read from `env`, by name; the proxy image is made of `source`
/// unless the spec names one.
pub async fn setup_for<P: EnginePort>(
    port: &P,
    spec: &mut ContainerSpec,
    env: &BTreeMap<String, String>,
    source: &ProxyExecutable,
    interrupted: Interrupted<'_>,
) -> Result<Option<EgressSet>, ExecError> {
    if let Some(egress) = &spec.egress {
        secrets::resolve_env(&egress.proxy, env)?;
    }
    if !prepare::prepare(port.engine(), spec)? {
        return Ok(None);
    }
    let mut attempt = 0;
    loop {
        let Some(companion) = &spec.egress else {
            return Ok(None);
        };
        match setup(port, companion, env, source, &mut *interrupted).await {
            Ok(set) => return Ok(Some(set)),
            Err(error) => {
                attempt += 1;
                prepare::move_if_subnet_taken(spec, error, attempt)?;
            }
        }
    }
}

/// Sets up the egress companion; see the module documentation. The keys the proxy holds are
/// read from `env`, by name; the proxy image is made of `source` unless the spec names one.
pub async fn setup<P: EnginePort>(
    port: &P,
    egress: &EgressSpec,
    env: &BTreeMap<String, String>,
    source: &ProxyExecutable,
    interrupted: Interrupted<'_>,
) -> Result<EgressSet, ExecError> {
    secrets::resolve_env(&egress.proxy, env)?;
    let image = proxy_image(port, egress, source).await?;
    // What both renderers refuse, before anything is created.
    crate::argv::check_container(&prepare::proxy_as_created(egress, Some(&image))?)?;
    let mut set = EgressSet {
        network: egress.network.name.clone(),
        proxy: egress.proxy.name.clone().unwrap_or_default(),
        volumes: Vec::new(),
    };
    if let Some(signal) = interrupted() {
        return Err(stopped(signal));
    }
    // Nothing of this launch exists yet: a network of that name is another's (both ports
    // refuse a second network of one name as a conflict).
    if let Err(error) = port.create_isolated_network(&egress.network).await {
        if error.kind == EngineErrorKind::Conflict
            && error.refusal() == Some(crate::daemon_text::Refusal::NameInUse)
        {
            return Err(existing_network(port, egress).await);
        }
        return Err(refused(CREATE_NETWORK, error));
    }
    let result = async {
        // The CA volume after the network, before the proxy that writes it.
        if let Some(volume) = prepare::ca_volume(egress) {
            set.volumes.push(volume.clone());
            port.create_volume(&volume, &egress.network.labels)
                .await
                .map_err(|error| failed(prepare::CREATE_CA_VOLUME, error))?;
        }
        // The audit volume, labelled as the CA volume (removed with the companion).
        if let Some(volume) = prepare::audit_volume(egress) {
            set.volumes.push(volume.clone());
            port.create_volume(&volume, &egress.network.labels)
                .await
                .map_err(|error| failed(prepare::CREATE_AUDIT_VOLUME, error))?;
        }
        pause_at(pause::NETWORK, &mut *interrupted).await?;
        let secrets = secrets::secret_values(&egress.proxy, env);
        port.create_proxy(egress, &image, &secrets)
            .await
            .map_err(|error| failed(CREATE_PROXY, error))?;
        between_steps(&mut *interrupted)?;
        port.connect_proxy(egress)
            .await
            .map_err(|error| failed(CONNECT_PROXY, error))?;
        port.start(&set.proxy)
            .await
            .map_err(|error| failed(START_PROXY, error))?;
        wait_healthy(port, &set.proxy, &mut *interrupted).await?;
        if !egress.relays().is_empty() {
            let inspect = port
                .inspect(&set.proxy)
                .await
                .map_err(|error| failed(prepare::PUBLISH_RELAYS, error))?;
            prepare::check_relays_published(port.engine(), egress, &inspect)?;
        }
        pause_at(pause::PROXY, &mut *interrupted).await
    }
    .await;
    match result {
        Ok(()) => Ok(set),
        Err(error) => {
            teardown(port, &set).await;
            Err(error)
        }
    }
}

/// The error of a step a SIGINT or SIGTERM cut short: the launch reports the signal.
fn stopped(signal: Interrupt) -> ExecError {
    ExecError::Interrupted {
        signal,
        cleanup: None,
    }
}

/// A signal received since the launch began ends the set-up before its next step.
fn between_steps(interrupted: Interrupted<'_>) -> Result<(), ExecError> {
    match interrupted() {
        Some(signal) => Err(stopped(signal)),
        None => Ok(()),
    }
}

/// Pauses at `step` when a test asked for it ([`pause`]): until [`pause::PAUSE_LIMIT`] passed
/// or a SIGINT or SIGTERM arrived, which ends the launch as it would at that step; without a
/// pause, a signal received meanwhile ends it too.
async fn pause_at(step: &str, interrupted: Interrupted<'_>) -> Result<(), ExecError> {
    if pause::pause_requested(step) {
        let started = Instant::now();
        while started.elapsed() < pause::PAUSE_LIMIT {
            if let Some(signal) = interrupted() {
                return Err(stopped(signal));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    between_steps(interrupted)
}

/// Removes the proxy, then the network, then its volumes; best effort (`agentc rm` and the
/// reaper find the rest by label).
pub async fn teardown<P: EnginePort>(port: &P, set: &EgressSet) {
    log::debug!(
        "removing the egress proxy {} and the network {}",
        set.proxy,
        set.network
    );
    if let Err(error) = port.remove_container(&set.proxy).await {
        log::warn!("could not remove the egress proxy {}: {error}", set.proxy);
    }
    match port.remove_network(&set.network).await {
        Ok(()) => {}
        Err(error) if error.is_not_found() => {}
        Err(error) => log::warn!("could not remove the network {}: {error}", set.network),
    }
    for volume in &set.volumes {
        remove_volume(port, volume).await;
    }
}

/// The error of a launch whose isolated network exists already, naming whose it is and how to
/// remove it ([`state::existing_network`]); nothing is removed.
async fn existing_network<P: EnginePort>(port: &P, egress: &EgressSpec) -> ExecError {
    let name = &egress.network.name;
    let found = match network_use(port, name).await {
        Ok(Some(found)) => found,
        Ok(None) => {
            return failed(
                CREATE_NETWORK,
                format!("the network {name} exists already, and was removed meanwhile"),
            )
        }
        Err(error) => {
            return failed(
                CREATE_NETWORK,
                format!("the network {name} exists already, and cannot be inspected: {error}"),
            )
        }
    };
    let proxy = match egress.proxy.name.as_deref() {
        Some(proxy) => port
            .inspect(proxy)
            .await
            .ok()
            .map(|inspect| member_of_inspect(&inspect)),
        None => None,
    };
    state::existing_network(egress, &found, proxy.as_ref())
}

/// A container's name, `io.agentc.kind` label and state, from its inspect.
fn member_of_inspect(inspect: &ContainerInspectResponse) -> Member {
    member_of(&ListedContainer::from_inspect(inspect))
}

/// A listed container's name, `io.agentc.kind` label and state.
fn member_of(container: &ListedContainer) -> Member {
    Member {
        name: container.name.clone(),
        kind: container
            .labels
            .get(LABEL_KIND)
            .cloned()
            .unwrap_or_default(),
        state: container.state.clone(),
    }
}

/// The network `name` with its labels and every container on it, running or not; `None`
/// when there is no such network.
pub async fn network_use<P: EnginePort>(
    port: &P,
    name: &str,
) -> Result<Option<IsolatedNetworkUse>, EngineError> {
    let Some(network) = port.network(name).await? else {
        return Ok(None);
    };
    let members = port
        .list_containers(&Filter::on_network(name))
        .await?
        .into_iter()
        .map(|container| Member {
            kind: container
                .labels
                .get(LABEL_KIND)
                .cloned()
                .unwrap_or_default(),
            name: container.name,
            state: container.state,
        })
        .collect();
    Ok(Some(IsolatedNetworkUse {
        name: network.name,
        labels: network.labels,
        members,
    }))
}

/// Runs the proxy's own health check inside it until it passes, or the proxy stopped (its
/// last log lines are the error), or [`HEALTH_TIMEOUT`] passed, or a signal arrived.
async fn wait_healthy<P: EnginePort>(
    port: &P,
    proxy: &str,
    interrupted: Interrupted<'_>,
) -> Result<(), ExecError> {
    let started = Instant::now();
    let health = [agentc_egress::PROXY_BINARY, "egress-proxy", "health"];
    loop {
        let error = match port.exec_status(proxy, &health).await {
            Ok(0) => return Ok(()),
            Ok(code) => format!("the health check exited {code}"),
            Err(error) if error.kind == EngineErrorKind::NotRunning => {
                let logs = port.logs_tail(proxy, 5).await.unwrap_or_default();
                return Err(failed(
                    START_PROXY,
                    format!("the proxy stopped before it was healthy: {}", logs.trim()),
                ));
            }
            Err(error) => error.to_string(),
        };
        between_steps(&mut *interrupted)?;
        if started.elapsed() > HEALTH_TIMEOUT {
            return Err(failed(
                START_PROXY,
                format!("not healthy after {HEALTH_TIMEOUT:?}: {error}"),
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Gives the inspect of the workload `name` the host bindings its egress proxy holds for it
/// ([`prepare::merge_relayed_ports`]); nothing changes for a workload without a fixed address
/// (no relayed ports) or whose proxy is gone.
pub async fn add_relayed_ports<P: EnginePort>(
    port: &P,
    name: &str,
    workload: &mut ContainerInspectResponse,
) {
    if prepare::fixed_address(workload).is_none() {
        return;
    }
    let filter = Filter::labels([prepare::proxy_label_filter(name)]);
    let Ok(proxies) = port.list_containers(&filter).await else {
        return;
    };
    let Some(proxy) = proxies.into_iter().next() else {
        return;
    };
    if let Ok(proxy) = port.inspect(&proxy.id).await {
        prepare::merge_relayed_ports(workload, &proxy);
    }
}
