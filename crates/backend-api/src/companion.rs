//! The egress companion of a launch through the Engine API: the proxy image ensured (built
//! from the running agentc binary, `POST /images/create?fromSrc=-`), the isolated network
//! created, the proxy created, connected at its fixed address, started and health-checked
//! (its own `egress-proxy health` as an exec), and the ports it relays checked published, all
//! before the workload is created; its removal: with the launch ([`teardown`]) or by
//! `agentc rm` of the workload ([`remove_companions`], by the `io.agentc.egress-for` label);
//! and where the workload's relayed ports are reachable ([`add_relayed_ports`]).
//!
//! A step that fails removes what the earlier ones created: the workload is never created
//! without a healthy proxy (fail closed).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use agentc_backend_common::egress::{self, CREATE_NETWORK};
use agentc_backend_common::egress_state::{self, IsolatedNetworkUse, Leftover, Member, ProxyUse};
use agentc_backend_common::{pause, ExecError};
use agentc_policy::{
    ContainerSpec, EgressSpec, KIND_EGRESS_PROXY, LABEL_EGRESS_FOR, LABEL_KIND, LABEL_PROFILE,
    PROXY_IMAGE_PLACEHOLDER,
};
use bollard::exec::{CreateExecOptions, StartExecOptions};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, InspectNetworkOptions, ListContainersOptionsBuilder,
    ListNetworksOptionsBuilder, RemoveContainerOptionsBuilder,
};
use bollard::Docker;

use crate::daemon::{is_not_found, status};
use crate::egress::{render_egress, EgressRequests};

/// How long the proxy has to answer its health check after it started.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(20);

/// What [`setup`] created: the names [`teardown`] removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressSet {
    /// The isolated network.
    pub network: String,
    /// The proxy container.
    pub proxy: String,
    /// The proxy's CA volume, when it holds credentials.
    pub volume: Option<String>,
}

fn failed(step: &'static str, message: impl ToString) -> ExecError {
    ExecError::Egress {
        step,
        message: message.to_string(),
    }
}

/// The tag of the proxy image: the spec's own when it names one, else the image of the running
/// agentc binary (its tag remembered from an earlier launch, or built and imported).
async fn proxy_image(docker: &Docker, egress: &EgressSpec) -> Result<String, ExecError> {
    if egress.proxy.image != PROXY_IMAGE_PLACEHOLDER {
        return Ok(egress.proxy.image.clone());
    }
    own_proxy_image(docker).await
}

/// The tag of the running agentc binary's proxy image, imported unless the engine has it (its
/// tag remembered from an earlier launch); also the image of the isolation probe, which needs
/// nothing of the launch's image.
pub async fn own_proxy_image(docker: &Docker) -> Result<String, ExecError> {
    if let Some(tag) = agentc_egress::image::cached_proxy_tag() {
        if docker.inspect_image(&tag).await.is_ok() {
            return Ok(tag);
        }
    }
    let step = "build the egress proxy image";
    let image = agentc_egress::image::proxy_image().map_err(|error| failed(step, error))?;
    let tag = agentc_egress::image::ensure_image_api(docker, &image)
        .await
        .map_err(|error| failed(step, error))?;
    agentc_egress::image::remember_proxy_tag(&tag);
    Ok(tag)
}

/// Sets up the companion of `spec`, if it has one, moving it first to an instance of its own
/// when the container has no name (each run gets its set), and to another subnet when the
/// daemon says its subnet overlaps another network's ([`ContainerSpec::egress_instance`]).
/// The keys the proxy holds are read from `env`, by name, into its create body.
pub async fn setup_for(
    docker: &Docker,
    spec: &mut ContainerSpec,
    env: &BTreeMap<String, String>,
) -> Result<Option<EgressSet>, ExecError> {
    if let Some(egress) = &spec.egress {
        agentc_backend_common::resolve_env(&egress.proxy, env)?;
    }
    if !egress::prepare(spec)? {
        return Ok(None);
    }
    let mut attempt = 0;
    loop {
        let Some(companion) = &spec.egress else {
            return Ok(None);
        };
        match setup(docker, companion, env).await {
            Ok(set) => return Ok(Some(set)),
            Err(error) => {
                attempt += 1;
                egress::move_if_subnet_taken(spec, error, attempt)?;
            }
        }
    }
}

/// Sets up the egress companion; see the module documentation. The keys the proxy holds are
/// read from `env`.
pub async fn setup(
    docker: &Docker,
    egress: &EgressSpec,
    env: &BTreeMap<String, String>,
) -> Result<EgressSet, ExecError> {
    let image = proxy_image(docker, egress).await?;
    let EgressRequests {
        network,
        mut proxy,
        connect,
    } = render_egress(egress, Some(&image))?;
    proxy.body.env =
        Some(agentc_backend_common::resolve_env(&egress.proxy, env)?).filter(|env| !env.is_empty());
    let mut set = EgressSet {
        network: network.name.clone(),
        proxy: proxy.name.clone().unwrap_or_default(),
        volume: None,
    };
    // Engine API 1.41 creates a second network of the same name (its CheckDuplicate is off by
    // default, and bollard does not send it): ask first, as `docker network create` does.
    if docker
        .inspect_network(&set.network, None::<InspectNetworkOptions>)
        .await
        .is_ok()
    {
        return Err(existing_network(docker, egress).await);
    }
    if let Err(error) = docker.create_network(network).await {
        if egress_state::network_exists(&error.to_string()) {
            return Err(existing_network(docker, egress).await);
        }
        return Err(failed(CREATE_NETWORK, error));
    }
    // The CA volume after the network, before the proxy that writes it.
    if let Some(volume) = egress::ca_volume(egress) {
        set.volume = Some(volume.clone());
        let options = bollard::models::VolumeCreateRequest {
            name: Some(volume),
            labels: Some(egress.network.labels.clone().into_iter().collect()),
            ..Default::default()
        };
        if let Err(error) = docker.create_volume(options).await {
            teardown(docker, &set).await;
            return Err(failed(egress::CREATE_CA_VOLUME, error));
        }
    }
    if let Err(error) = crate::signals::pause(pause::NETWORK).await {
        teardown(docker, &set).await;
        return Err(error);
    }
    let result = async {
        let options = CreateContainerOptionsBuilder::new()
            .name(&set.proxy)
            .build();
        docker
            .create_container(Some(options), proxy.body)
            .await
            .map_err(|error| failed("create the egress proxy", error))?;
        docker
            .connect_network(&set.network, connect)
            .await
            .map_err(|error| failed("connect the egress proxy to the isolated network", error))?;
        docker
            .start_container(&set.proxy, None)
            .await
            .map_err(|error| failed("start the egress proxy", error))?;
        wait_healthy(docker, &set.proxy).await?;
        if !egress.relays().is_empty() {
            let inspect = docker
                .inspect_container(&set.proxy, None)
                .await
                .map_err(|error| failed(egress::PUBLISH_RELAYS, error))?;
            egress::check_relays_published(egress, &inspect)?;
        }
        crate::signals::pause(pause::PROXY).await
    }
    .await;
    match result {
        Ok(()) => Ok(set),
        Err(error) => {
            teardown(docker, &set).await;
            Err(error)
        }
    }
}

/// The error of a launch whose isolated network exists already, naming whose it is and how to
/// remove it ([`egress_state::existing_network`]); nothing is removed.
async fn existing_network(docker: &Docker, egress: &EgressSpec) -> ExecError {
    let name = &egress.network.name;
    let found = match network_use(docker, name).await {
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
        Some(proxy) => docker
            .inspect_container(proxy, None)
            .await
            .ok()
            .map(|inspect| member_of_inspect(&inspect)),
        None => None,
    };
    egress_state::existing_network(egress, &found, proxy.as_ref())
}

/// A container's name, `io.agentc.kind` label and state, from its inspect.
fn member_of_inspect(inspect: &bollard::models::ContainerInspectResponse) -> Member {
    Member {
        name: inspect
            .name
            .as_deref()
            .unwrap_or_default()
            .trim_start_matches('/')
            .to_string(),
        kind: inspect
            .config
            .as_ref()
            .and_then(|config| config.labels.as_ref())
            .and_then(|labels| labels.get(LABEL_KIND))
            .cloned()
            .unwrap_or_default(),
        state: inspect
            .state
            .as_ref()
            .and_then(|state| state.status)
            .map(|status| status.to_string())
            .unwrap_or_default(),
    }
}

/// A container as listed: its name, `io.agentc.kind` label and state.
fn member_of_summary(container: bollard::models::ContainerSummary) -> Member {
    Member {
        name: container
            .names
            .and_then(|names| names.into_iter().next())
            .map(|name| name.trim_start_matches('/').to_string())
            .or(container.id)
            .unwrap_or_default(),
        kind: container
            .labels
            .and_then(|labels| labels.get(LABEL_KIND).cloned())
            .unwrap_or_default(),
        state: container
            .state
            .map(|state| state.to_string())
            .unwrap_or_default(),
    }
}

/// The network `name` with its labels and every container on it, running or not; `None`
/// when there is no such network.
async fn network_use(
    docker: &Docker,
    name: &str,
) -> Result<Option<IsolatedNetworkUse>, bollard::errors::Error> {
    let network = match docker
        .inspect_network(name, None::<InspectNetworkOptions>)
        .await
    {
        Ok(network) => network,
        Err(error) if is_not_found(&error) => return Ok(None),
        Err(error) => return Err(error),
    };
    let filter = HashMap::from([("network".to_string(), vec![name.to_string()])]);
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filter)
        .build();
    let members = docker
        .list_containers(Some(options))
        .await?
        .into_iter()
        .map(member_of_summary)
        .collect();
    Ok(Some(IsolatedNetworkUse {
        name: network.name.unwrap_or_else(|| name.to_string()),
        labels: network.labels.unwrap_or_default().into_iter().collect(),
        members,
    }))
}

/// The leftovers of killed launches among agentc's isolated networks and egress proxies
/// ([`egress_state::leftovers`]), those of the workload `workload` or of the profile `profile`
/// when given: what `agentc doctor` lists and `agentc rm` of a gone workload or of a profile
/// removes.
pub async fn leftovers(
    docker: &Docker,
    workload: Option<&str>,
    profile: Option<&str>,
) -> Result<Vec<Leftover>, ExecError> {
    let mut labels = vec![egress_state::proxy_kind_filter(), LABEL_PROFILE.to_string()];
    if let Some(workload) = workload {
        labels.push(egress::proxy_label_filter(workload));
    }
    if let Some(profile) = profile {
        labels.push(format!("{LABEL_PROFILE}={profile}"));
    }
    let filter = HashMap::from([("label".to_string(), labels)]);
    let options = ListNetworksOptionsBuilder::new().filters(&filter).build();
    let listed = docker
        .list_networks(Some(options))
        .await
        .map_err(|error| failed("list the isolated networks", error))?;
    let mut networks = Vec::new();
    for network in listed {
        let Some(name) = network.name else { continue };
        match network_use(docker, &name).await {
            Ok(Some(found)) => networks.push(found),
            Ok(None) => {}
            Err(error) => return Err(failed("inspect the isolated network", error)),
        }
    }
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filter)
        .build();
    let listed = docker
        .list_containers(Some(options))
        .await
        .map_err(|error| failed("list the egress proxies", error))?;
    let mut proxies = Vec::new();
    for container in listed {
        let labels = container.labels.clone().unwrap_or_default();
        let on: Vec<String> = container
            .network_settings
            .as_ref()
            .and_then(|settings| settings.networks.as_ref())
            .map(|networks| networks.keys().cloned().collect())
            .unwrap_or_default();
        proxies.push(ProxyUse {
            workload: labels.get(LABEL_EGRESS_FOR).cloned().unwrap_or_default(),
            profile: labels.get(LABEL_PROFILE).cloned().unwrap_or_default(),
            networks: on,
            proxy: member_of_summary(container),
        });
    }
    let found = egress_state::leftovers(&networks, &proxies);
    Ok(found)
}

/// Gives the inspect of the workload `name` the host bindings its egress proxy holds for it
/// ([`egress::add_relayed_ports`]); nothing changes for a workload without a fixed address
/// (no relayed ports) or whose proxy is gone.
pub async fn add_relayed_ports(
    docker: &Docker,
    name: &str,
    workload: &mut bollard::models::ContainerInspectResponse,
) {
    if egress::fixed_address(workload).is_none() {
        return;
    }
    let filter = HashMap::from([("label".to_string(), vec![egress::proxy_label_filter(name)])]);
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filter)
        .build();
    let Ok(proxies) = docker.list_containers(Some(options)).await else {
        return;
    };
    let Some(id) = proxies.into_iter().find_map(|proxy| proxy.id) else {
        return;
    };
    if let Ok(proxy) = docker.inspect_container(&id, None).await {
        egress::add_relayed_ports(workload, &proxy);
    }
}

/// Runs the proxy's own health check inside it until it passes, or the proxy stopped, or
/// [`HEALTH_TIMEOUT`] passed.
async fn wait_healthy(docker: &Docker, proxy: &str) -> Result<(), ExecError> {
    let step = "start the egress proxy";
    let started = Instant::now();
    loop {
        let options = CreateExecOptions {
            cmd: Some(vec![
                agentc_egress::PROXY_BINARY.to_string(),
                "egress-proxy".to_string(),
                "health".to_string(),
            ]),
            ..Default::default()
        };
        let exit = match docker.create_exec(proxy, options).await {
            Ok(created) => {
                let start = StartExecOptions {
                    detach: true,
                    ..Default::default()
                };
                match docker.start_exec(&created.id, Some(start)).await {
                    Ok(_) => exec_exit(docker, &created.id).await,
                    Err(error) => Err(error.to_string()),
                }
            }
            Err(error) => Err(error.to_string()),
        };
        match exit {
            Ok(0) => return Ok(()),
            _ if started.elapsed() > HEALTH_TIMEOUT => {
                return Err(failed(
                    step,
                    format!("not healthy after {HEALTH_TIMEOUT:?}"),
                ))
            }
            Err(message) if message.contains("is not running") => {
                return Err(failed(step, "the proxy stopped before it was healthy"))
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

async fn exec_exit(docker: &Docker, id: &str) -> Result<i64, String> {
    for _ in 0..100 {
        match docker.inspect_exec(id).await {
            Ok(inspect) if inspect.running == Some(true) => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Ok(inspect) => return inspect.exit_code.ok_or_else(|| "no exit code".to_string()),
            Err(error) => return Err(error.to_string()),
        }
    }
    Err("the health check did not end".to_string())
}

/// Force-removes a container; one already gone (404) or being removed (409) is not an error.
async fn remove_quietly(docker: &Docker, id: &str) -> Result<(), bollard::errors::Error> {
    let options = RemoveContainerOptionsBuilder::new().force(true).build();
    match docker.remove_container(id, Some(options)).await {
        Err(error) if !is_not_found(&error) && status(&error) != Some(409) => Err(error),
        _ => Ok(()),
    }
}

/// Removes the proxy, then the network; best effort (`agentc rm` finds the rest by label).
pub async fn teardown(docker: &Docker, set: &EgressSet) {
    log::debug!(
        "removing the egress proxy {} and the network {}",
        set.proxy,
        set.network
    );
    if let Err(error) = remove_quietly(docker, &set.proxy).await {
        log::warn!("could not remove the egress proxy {}: {error}", set.proxy);
    }
    match docker.remove_network(&set.network).await {
        Ok(()) => {}
        Err(error) if is_not_found(&error) => {}
        Err(error) => log::warn!("could not remove the network {}: {error}", set.network),
    }
    if let Some(volume) = &set.volume {
        remove_volume(docker, volume).await;
    }
}

/// Removes a CA volume; an attached workload the daemon is still removing may hold it for a
/// moment, so it is tried a few times.
async fn remove_volume(docker: &Docker, volume: &str) {
    for attempt in 0..10 {
        match docker
            .remove_volume(
                volume,
                None::<bollard::query_parameters::RemoveVolumeOptions>,
            )
            .await
        {
            Ok(()) => return,
            Err(error) if is_not_found(&error) => return,
            Err(error) if attempt == 9 => {
                log::warn!("could not remove the volume {volume}: {error}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Removes the egress companions of the workload `name` (the proxies and the networks
/// labelled `io.agentc.egress-for=NAME`) and returns the names removed; the workload must be
/// gone already, or its network is still in use.
pub async fn remove_companions(docker: &Docker, name: &str) -> Result<Vec<String>, ExecError> {
    let filter = HashMap::from([(
        "label".to_string(),
        vec![format!("{LABEL_EGRESS_FOR}={name}")],
    )]);
    let mut removed = Vec::new();
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filter)
        .build();
    let proxies = docker
        .list_containers(Some(options))
        .await
        .map_err(|error| failed("list the egress proxies", error))?;
    for proxy in proxies {
        let proxy_name = proxy
            .names
            .and_then(|names| names.into_iter().next())
            .map(|name| name.trim_start_matches('/').to_string())
            .or(proxy.id)
            .unwrap_or_default();
        remove_quietly(docker, &proxy_name)
            .await
            .map_err(|error| failed("remove the egress proxy", error))?;
        removed.push(proxy_name);
    }
    let options = ListNetworksOptionsBuilder::new().filters(&filter).build();
    let networks = docker
        .list_networks(Some(options))
        .await
        .map_err(|error| failed("list the isolated networks", error))?;
    for network in networks {
        let network_name = network.name.unwrap_or_default();
        match docker.remove_network(&network_name).await {
            Ok(()) => removed.push(format!("network {network_name}")),
            Err(error) if is_not_found(&error) => {}
            Err(error) => return Err(failed("remove the isolated network", error)),
        }
    }
    // The CA volumes of proxies that held credentials.
    let options = bollard::query_parameters::ListVolumesOptionsBuilder::new()
        .filters(&filter)
        .build();
    remove_ca_volumes(docker, options, &mut removed).await?;
    Ok(removed)
}

/// Removes every isolated network agentc made for an egress proxy (labelled
/// `io.agentc.kind=egress-proxy` and `io.agentc.profile`) that no container uses any more;
/// returns their names (`network NAME`).
pub async fn remove_orphan_networks(docker: &Docker) -> Result<Vec<String>, ExecError> {
    let filter = HashMap::from([(
        "label".to_string(),
        vec![
            format!("{LABEL_KIND}={KIND_EGRESS_PROXY}"),
            LABEL_PROFILE.to_string(),
        ],
    )]);
    let options = ListNetworksOptionsBuilder::new().filters(&filter).build();
    let networks = docker
        .list_networks(Some(options))
        .await
        .map_err(|error| failed("list the isolated networks", error))?;
    let mut removed = Vec::new();
    for network in networks {
        let name = network.name.unwrap_or_default();
        // In use (a sandbox still runs on it) or already gone: left alone.
        if docker.remove_network(&name).await.is_ok() {
            removed.push(format!("network {name}"));
        }
    }
    Ok(removed)
}

/// Removes the egress companions (proxies, isolated networks, CA volumes) whose workload is
/// gone ([`egress_state::orphans`]: past the grace, or with their proxy ended, or of `own`,
/// the workload the caller launches next, or of the profile `at_once`, a fault test's; and no
/// set whose network a container other than a proxy is on) and returns what it removed, per
/// workload:
/// what every agentc command that talks to the engine does first, so that a launch killed at
/// any step leaves nothing for long and the next launch of its name is not refused.
pub async fn reap(
    docker: &Docker,
    own: Option<&str>,
    at_once: Option<&str>,
) -> Result<Vec<egress_state::Orphans>, ExecError> {
    use egress_state::{CompanionKind, CompanionObject};
    let filter = HashMap::from([(
        "label".to_string(),
        vec![egress_state::proxy_kind_filter(), LABEL_PROFILE.to_string()],
    )]);
    let label = |labels: Option<&HashMap<String, String>>, key: &str| {
        labels
            .and_then(|labels| labels.get(key).cloned())
            .unwrap_or_default()
    };
    let mut objects = Vec::new();
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filter)
        .build();
    for proxy in docker
        .list_containers(Some(options))
        .await
        .map_err(|error| failed("list the egress proxies", error))?
    {
        let ended = matches!(
            proxy.state,
            Some(
                bollard::models::ContainerSummaryStateEnum::EXITED
                    | bollard::models::ContainerSummaryStateEnum::DEAD
            )
        );
        objects.push(CompanionObject {
            kind: CompanionKind::Proxy,
            workload: label(proxy.labels.as_ref(), LABEL_EGRESS_FOR),
            profile: label(proxy.labels.as_ref(), LABEL_PROFILE),
            created: proxy.created,
            ended,
            name: member_of_summary(proxy).name,
        });
    }
    let options = ListNetworksOptionsBuilder::new().filters(&filter).build();
    for network in docker
        .list_networks(Some(options))
        .await
        .map_err(|error| failed("list the isolated networks", error))?
    {
        objects.push(CompanionObject {
            kind: CompanionKind::Network,
            workload: label(network.labels.as_ref(), LABEL_EGRESS_FOR),
            profile: label(network.labels.as_ref(), LABEL_PROFILE),
            created: network
                .created
                .as_deref()
                .and_then(egress_state::unix_seconds),
            ended: false,
            name: network.name.unwrap_or_default(),
        });
    }
    let options = bollard::query_parameters::ListVolumesOptionsBuilder::new()
        .filters(&filter)
        .build();
    let volumes = docker
        .list_volumes(Some(options))
        .await
        .map_err(|error| failed("list the egress proxies' CA volumes", error))?;
    for volume in volumes.volumes.unwrap_or_default() {
        objects.push(CompanionObject {
            kind: CompanionKind::Volume,
            workload: label(Some(&volume.labels), LABEL_EGRESS_FOR),
            profile: label(Some(&volume.labels), LABEL_PROFILE),
            created: volume
                .created_at
                .as_deref()
                .and_then(egress_state::unix_seconds),
            ended: false,
            name: volume.name,
        });
    }
    let mut existing = std::collections::BTreeSet::new();
    let workloads: std::collections::BTreeSet<&str> =
        objects.iter().map(|o| o.workload.as_str()).collect();
    for workload in workloads {
        match docker.inspect_container(workload, None).await {
            Err(error) if is_not_found(&error) => {}
            // There, or the daemon cannot say: left alone either way.
            _ => {
                existing.insert(workload.to_string());
            }
        }
    }
    // A set whose isolated network has a container on it besides proxies serves a workload,
    // whatever its label says (a launch by an older agentc named its workload otherwise).
    for network in objects.iter().filter(|o| o.kind == CompanionKind::Network) {
        if existing.contains(&network.workload) {
            continue;
        }
        match network_use(docker, &network.name).await {
            Ok(Some(found)) if found.members.iter().all(|m| m.kind == KIND_EGRESS_PROXY) => {}
            Ok(None) => {}
            _ => {
                existing.insert(network.workload.clone());
            }
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() as i64);
    let mut found = egress_state::orphans(&objects, &existing, own, at_once, now);
    // Best effort, object by object: what could not be removed is logged and left out of
    // what is reported removed.
    for orphans in &mut found {
        let mut removed = Vec::new();
        for (kind, name) in std::mem::take(&mut orphans.objects) {
            let result = match kind {
                CompanionKind::Proxy => remove_quietly(docker, &name).await,
                CompanionKind::Network => match docker.remove_network(&name).await {
                    Err(error) if !is_not_found(&error) => Err(error),
                    _ => Ok(()),
                },
                CompanionKind::Volume => {
                    remove_volume(docker, &name).await;
                    Ok(())
                }
            };
            match result {
                Ok(()) => removed.push((kind, name)),
                Err(error) => log::warn!("could not remove {name}: {error}"),
            }
        }
        orphans.objects = removed;
    }
    found.retain(|orphans| !orphans.objects.is_empty());
    Ok(found)
}

/// Removes the networks agentc made (labelled `io.agentc.profile`, `=PROFILE` when given) and
/// the egress proxies' CA volumes (labelled `io.agentc.kind=egress-proxy` too), what `agentc rm
/// --profile` and `--all` remove after the containers; returns `network NAME` and `volume NAME`
/// for each. A network some container still uses is left, and named in the error.
pub async fn remove_labelled(
    docker: &Docker,
    profile: Option<&str>,
) -> Result<Vec<String>, ExecError> {
    let profile_label = match profile {
        Some(profile) => format!("{LABEL_PROFILE}={profile}"),
        None => LABEL_PROFILE.to_string(),
    };
    let mut removed = Vec::new();
    let networks_filter = HashMap::from([("label".to_string(), vec![profile_label.clone()])]);
    let options = ListNetworksOptionsBuilder::new()
        .filters(&networks_filter)
        .build();
    let networks = docker
        .list_networks(Some(options))
        .await
        .map_err(|error| failed("list the isolated networks", error))?;
    for network in networks {
        let name = network.name.unwrap_or_default();
        match docker.remove_network(&name).await {
            Ok(()) => removed.push(format!("network {name}")),
            Err(error) if is_not_found(&error) => {}
            // In use by a container agentc did not make (all of the profile's are gone).
            Err(error) if profile.is_some() => {
                return Err(failed("remove the network", format!("{name}: {error}")))
            }
            Err(_) => {}
        }
    }
    let volumes_filter = HashMap::from([(
        "label".to_string(),
        vec![profile_label, egress_state::proxy_kind_filter()],
    )]);
    let options = bollard::query_parameters::ListVolumesOptionsBuilder::new()
        .filters(&volumes_filter)
        .build();
    remove_ca_volumes(docker, options, &mut removed).await?;
    Ok(removed)
}

/// Removes the egress proxies' CA volumes `options` lists, naming each in `removed`.
async fn remove_ca_volumes(
    docker: &Docker,
    options: bollard::query_parameters::ListVolumesOptions,
    removed: &mut Vec<String>,
) -> Result<(), ExecError> {
    let volumes = docker
        .list_volumes(Some(options))
        .await
        .map_err(|error| failed("list the egress proxies' CA volumes", error))?;
    for volume in volumes.volumes.unwrap_or_default() {
        match docker
            .remove_volume(
                &volume.name,
                None::<bollard::query_parameters::RemoveVolumeOptions>,
            )
            .await
        {
            Ok(()) => removed.push(format!("volume {}", volume.name)),
            Err(error) if is_not_found(&error) => {}
            Err(error) => return Err(failed("remove the egress proxy's CA volume", error)),
        }
    }
    Ok(())
}
