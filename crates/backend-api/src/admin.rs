//! Container admin, what `agentc ps` and `agentc rm` do: listing agentc's containers (those
//! with the profile label) and where they are reachable, and removing them, refusing any other
//! container; and the removal steps a launch shares (forced removal, waiting for the daemon's
//! own removal).

use std::collections::{BTreeMap, HashMap};

use agentc_backend_common::egress_state::{Leftover, LeftoverKind};
use agentc_backend_common::{network_of, published_addresses, ExecError, PublishedAddress};
use agentc_policy::LABEL_PROFILE;
use bollard::models::ContainerSummary;
use bollard::query_parameters::ListContainersOptionsBuilder;
use bollard::Docker;
use futures_util::StreamExt;

use crate::daemon::{daemon_error, is_not_found, status};
pub(crate) use crate::daemon::{remove_quietly, wait_removed};

/// One agentc container, as `agentc ps` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The container's ID.
    pub id: String,
    /// Its name, without the leading `/`.
    pub name: String,
    /// Its image.
    pub image: String,
    /// The `io.agentc.profile` label.
    pub profile: String,
    /// The state, such as `running` or `exited`.
    pub state: String,
    /// The daemon's human status, such as `Up 5 minutes`.
    pub status: String,
    /// All its labels.
    pub labels: BTreeMap<String, String>,
}

/// Lists agentc's containers (running or not), those of one profile when `profile` is given,
/// sorted by name: the containers labelled `io.agentc.profile` (`io.agentc.profile=PROFILE`).
pub async fn list(docker: &Docker, profile: Option<&str>) -> Result<Vec<Summary>, ExecError> {
    let label_filter = match profile {
        Some(profile) => format!("{LABEL_PROFILE}={profile}"),
        None => LABEL_PROFILE.to_string(),
    };
    let filters = HashMap::from([("label", vec![label_filter.as_str()])]);
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    let containers = docker
        .list_containers(Some(options))
        .await
        .map_err(|error| daemon_error("list containers", error))?;
    let mut summaries: Vec<Summary> = containers.into_iter().map(summarize).collect();
    summaries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(summaries)
}

fn summarize(container: ContainerSummary) -> Summary {
    let labels: BTreeMap<String, String> =
        container.labels.unwrap_or_default().into_iter().collect();
    Summary {
        id: container.id.unwrap_or_default(),
        name: container
            .names
            .and_then(|names| names.into_iter().next())
            .map(|name| name.trim_start_matches('/').to_string())
            .unwrap_or_default(),
        image: container.image.unwrap_or_default(),
        profile: labels.get(LABEL_PROFILE).cloned().unwrap_or_default(),
        state: container
            .state
            .map(|state| state.to_string())
            .unwrap_or_default(),
        status: container.status.unwrap_or_default(),
        labels,
    }
}

/// Where a container's published ports are reachable from the host
/// ([`published_addresses`] of its inspect, on the network it is attached to); none for a
/// container that cannot be inspected, such as one removed meanwhile.
pub async fn reachable(docker: &Docker, id: &str) -> Vec<PublishedAddress> {
    match inspect_reachable(docker, id).await {
        Ok(inspect) => published_addresses(&inspect, &network_of(&inspect)),
        Err(_) => Vec::new(),
    }
}

/// The inspect of the container `id`, with the host bindings of the ports its egress proxy
/// relays for it ([`agentc_backend_common::launch::reachable_inspect`] through the Engine
/// API's port): what says where its ports are reachable.
pub async fn inspect_reachable(
    docker: &Docker,
    id: &str,
) -> Result<bollard::models::ContainerInspectResponse, ExecError> {
    let port = crate::port::ApiPort::new(docker.clone(), agentc_backend_common::engine());
    agentc_backend_common::launch::reachable_inspect(&port, id).await
}

/// Which containers `agentc rm` removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoveTarget {
    /// These names or IDs; each must be an agentc container.
    Names(Vec<String>),
    /// Every container labelled `io.agentc.profile`.
    All,
    /// Every container of one profile (labelled `io.agentc.profile=PROFILE`).
    Profile(String),
}

/// How many removals [`remove`] runs at once on a daemon of Engine API 1.42 or later: enough
/// to overlap the daemon's work, few enough to spare it a storm of simultaneous exits.
pub const REMOVE_JOBS: usize = 8;

/// How many removals run at once on an older daemon (API below 1.42, Docker 20.10 and before):
/// one, because concurrent removals of containers on one network can deadlock its network
/// controller for good (moby/moby#42545, fixed in Docker 23), which hangs every later request.
pub const REMOVE_JOBS_OLD_DAEMON: usize = 1;

/// The removals [`remove`] runs at once on this connection's daemon.
pub(crate) fn remove_jobs(docker: &Docker) -> usize {
    let version = docker.client_version();
    if (version.major_version, version.minor_version) >= (1, 42) {
        REMOVE_JOBS
    } else {
        REMOVE_JOBS_OLD_DAEMON
    }
}

/// Force-removes agentc containers, with the egress proxy and the isolated network of each
/// (labelled `io.agentc.egress-for=NAME`), [`REMOVE_JOBS`] at a time on the one connection pool
/// (one at a time on daemons older than API 1.42, see [`REMOVE_JOBS_OLD_DAEMON`]), and returns
/// the names removed. A named container that does not exist or lacks the `io.agentc.profile`
/// label is an error, checked for every name before anything is removed, unless a launch of
/// that name killed before it finished left an isolated network or a proxy behind
/// ([`crate::companion::leftovers`]): those are removed instead. `Profile` removes the
/// leftovers of the profile's launches too. Every removal is
/// tried; the first that failed is the error.
pub async fn remove(docker: &Docker, target: &RemoveTarget) -> Result<Vec<String>, ExecError> {
    let mut left = Vec::new();
    let names: Vec<String> = match target {
        RemoveTarget::All | RemoveTarget::Profile(_) => {
            let profile = match target {
                RemoveTarget::Profile(profile) => Some(profile.as_str()),
                _ => None,
            };
            list(docker, profile)
                .await?
                .into_iter()
                .map(|summary| summary.name)
                .collect()
        }
        RemoveTarget::Names(names) => {
            let (containers, leftovers) = named(docker, names).await?;
            left.extend(leftovers);
            containers
        }
    };
    let results: Vec<Result<Vec<String>, ExecError>> = futures_util::stream::iter(&names)
        .map(|name| async move {
            // A claimed pool member's companion is labelled for the name it had at fill.
            let member = match docker.inspect_container(name, None).await {
                Ok(inspect) => inspect
                    .config
                    .and_then(|config| config.labels)
                    .and_then(|labels| labels.get(agentc_policy::pool::LABEL_POOL_MEMBER).cloned())
                    .filter(|member| member != name),
                Err(_) => None,
            };
            remove_quietly(docker, name)
                .await
                .map_err(|error| daemon_error("remove the container", error))?;
            // Its egress proxy and isolated network, if its allowlist is enforced outside it.
            let mut removed = crate::companion::remove_companions(docker, name).await?;
            if let Some(member) = member {
                removed.extend(crate::companion::remove_companions(docker, &member).await?);
            }
            Ok(removed)
        })
        .buffered(remove_jobs(docker))
        .collect()
        .await;
    let mut removed = names.clone();
    for result in results {
        removed.extend(result?);
    }
    if *target == RemoveTarget::All {
        // The isolated networks of launches whose workload is already gone.
        removed.extend(crate::companion::remove_orphan_networks(docker).await?);
    }
    if let RemoveTarget::Profile(profile) = target {
        // The leftovers of the profile's launches killed before they finished.
        left.extend(crate::companion::leftovers(docker, None, Some(profile)).await?);
    }
    removed.extend(remove_leftovers(docker, &left).await?);
    match target {
        // Whatever else agentc made for the profile's launches: every network labelled with
        // it, and its per-launch CA volumes (its other volumes only with `--volumes`).
        RemoveTarget::Profile(profile) => {
            removed.extend(crate::companion::remove_labelled(docker, Some(profile)).await?)
        }
        RemoveTarget::All => removed.extend(crate::companion::remove_labelled(docker, None).await?),
        RemoveTarget::Names(_) => {}
    }
    // With --all an egress proxy is listed itself and again as its workload's companion.
    let mut seen = std::collections::HashSet::new();
    removed.retain(|name| seen.insert(name.clone()));
    Ok(removed)
}

/// Checks, without removing anything, that each of `names` is an agentc container or the
/// leftovers of a killed launch of that name, as [`remove`] does first: the error names the
/// first that is neither (`NoSuchContainer`) or not agentc's (`NotAgentc`).
pub async fn check_removable(docker: &Docker, names: &[String]) -> Result<(), ExecError> {
    named(docker, names).await.map(drop)
}

/// The containers `names` name and the leftovers of those that are gone, each checked.
async fn named(
    docker: &Docker,
    names: &[String],
) -> Result<(Vec<String>, Vec<Leftover>), ExecError> {
    let mut containers = Vec::new();
    let mut left = Vec::new();
    for name in names {
        let inspect = match docker.inspect_container(name, None).await {
            Ok(inspect) => inspect,
            Err(error) if is_not_found(&error) => {
                // What a launch of `name` killed before it finished left: removed too.
                let found = crate::companion::leftovers(docker, Some(name), None).await?;
                if found.iter().any(removable) {
                    left.extend(found);
                    continue;
                }
                return Err(ExecError::NoSuchContainer { name: name.clone() });
            }
            Err(error) => return Err(daemon_error("inspect the container", error)),
        };
        let labelled = inspect
            .config
            .and_then(|config| config.labels)
            .is_some_and(|labels| labels.contains_key(LABEL_PROFILE));
        if !labelled {
            return Err(ExecError::NotAgentc { name: name.clone() });
        }
        containers.push(name.clone());
    }
    Ok((containers, left))
}

/// Whether `agentc rm` removes a leftover itself: an isolated network or an egress proxy
/// without its workload; a workload without its proxy is removed by its own name only.
fn removable(leftover: &Leftover) -> bool {
    leftover.kind != LeftoverKind::Workload
}

/// Removes the networks and proxies among `leftovers` (proxies first: a network with a
/// container on it cannot be removed) and returns their names (`network NAME` for a network).
async fn remove_leftovers(
    docker: &Docker,
    leftovers: &[Leftover],
) -> Result<Vec<String>, ExecError> {
    let mut removed = Vec::new();
    for proxy in leftovers.iter().filter(|l| l.kind == LeftoverKind::Proxy) {
        remove_quietly(docker, &proxy.name)
            .await
            .map_err(|error| daemon_error("remove the egress proxy", error))?;
        removed.push(proxy.name.clone());
    }
    for network in leftovers.iter().filter(|l| l.kind == LeftoverKind::Network) {
        match docker.remove_network(&network.name).await {
            Ok(()) => removed.push(format!("network {}", network.name)),
            Err(error) if is_not_found(&error) => {}
            Err(error) => return Err(daemon_error("remove the isolated network", error)),
        }
    }
    Ok(removed)
}

/// Creates the named volumes a launch mounts, labelled
/// ([`agentc_backend_common::volumes::ensure_volumes`], through [`crate::port::ApiPort`]).
pub async fn ensure_volumes(
    docker: &Docker,
    spec: &agentc_policy::ContainerSpec,
) -> Result<(), ExecError> {
    let port = crate::port::ApiPort::new(docker.clone(), agentc_backend_common::engine());
    agentc_backend_common::volumes::ensure_volumes(&port, spec).await
}

/// agentc's volumes (labelled `io.agentc.profile`), as `(name, profile)`, sorted by name.
pub async fn list_volumes(docker: &Docker) -> Result<Vec<(String, String)>, ExecError> {
    let filters = HashMap::from([("label", vec![LABEL_PROFILE])]);
    let options = bollard::query_parameters::ListVolumesOptionsBuilder::new()
        .filters(&filters)
        .build();
    let listed = docker
        .list_volumes(Some(options))
        .await
        .map_err(|error| daemon_error("list volumes", error))?;
    let mut volumes: Vec<(String, String)> = listed
        .volumes
        .unwrap_or_default()
        .into_iter()
        .map(|volume| {
            let profile = volume
                .labels
                .get(LABEL_PROFILE)
                .cloned()
                .unwrap_or_default();
            (volume.name, profile)
        })
        .collect();
    volumes.sort();
    Ok(volumes)
}

/// The agentc volumes (labelled `io.agentc.profile`) that these containers mount; read before
/// the containers are removed.
pub async fn volumes_of(docker: &Docker, names: &[String]) -> Result<Vec<String>, ExecError> {
    let ours: std::collections::BTreeSet<String> = list_volumes(docker)
        .await?
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let mut found = Vec::new();
    for name in names {
        let Ok(inspect) = docker.inspect_container(name, None).await else {
            continue;
        };
        for mount in inspect.mounts.unwrap_or_default() {
            if let Some(volume) = mount.name.filter(|volume| ours.contains(volume)) {
                if !found.contains(&volume) {
                    found.push(volume);
                }
            }
        }
    }
    Ok(found)
}

/// Removes agentc volumes and returns those removed; a volume still in use by a container is
/// skipped with `skip_in_use`, an error naming it otherwise.
pub async fn remove_volumes(
    docker: &Docker,
    volumes: &[String],
    skip_in_use: bool,
) -> Result<Vec<String>, ExecError> {
    let mut removed = Vec::new();
    for volume in volumes {
        match docker
            .remove_volume(
                volume,
                None::<bollard::query_parameters::RemoveVolumeOptions>,
            )
            .await
        {
            Ok(()) => removed.push(volume.clone()),
            Err(error) if is_not_found(&error) => {}
            Err(error) if skip_in_use && status(&error) == Some(409) => {}
            Err(error) => return Err(daemon_error("remove a volume", error)),
        }
    }
    Ok(removed)
}
