//! Container admin, what `agentc ps` and `agentc rm` do, written once over the
//! [engine port](crate::port): listing agentc's containers (those with the profile label) and
//! its volumes, and removing them with their egress companions and the leftovers of killed
//! launches, refusing any container agentc did not launch.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use agentc_policy::LABEL_PROFILE;
use futures_util::{stream, StreamExt};

use crate::companion;
use crate::companion::state::{Leftover, LeftoverKind};
use crate::port::{EngineError, EngineErrorKind, EnginePort, Filter, ListedContainer};
use crate::ExecError;

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
    /// The engine's human status, such as `Up 5 minutes`.
    pub status: String,
    /// All its labels.
    pub labels: BTreeMap<String, String>,
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

/// A failed engine operation at `step`, as a command reports it (an engine out of reach is
/// the connect error with its hint).
fn failed<P: EnginePort>(port: &P, step: &'static str) -> impl Fn(EngineError) -> ExecError {
    let engine = port.engine();
    move |error| error.in_launch(engine, step)
}

/// Lists agentc's containers (running or not), those of one profile when `profile` is given,
/// sorted by name: the containers labelled `io.agentc.profile` (`io.agentc.profile=PROFILE`).
pub async fn list<P: EnginePort>(
    port: &P,
    profile: Option<&str>,
) -> Result<Vec<Summary>, ExecError> {
    let label = match profile {
        Some(profile) => format!("{LABEL_PROFILE}={profile}"),
        None => LABEL_PROFILE.to_string(),
    };
    let listed = port
        .list_containers(&Filter::labels([label]))
        .await
        .map_err(failed(port, "list containers"))?;
    let mut summaries: Vec<Summary> = listed
        .into_iter()
        .map(|container| Summary {
            profile: container
                .labels
                .get(LABEL_PROFILE)
                .cloned()
                .unwrap_or_default(),
            id: container.id,
            name: container.name,
            image: container.image,
            state: container.state,
            status: container.status,
            labels: container.labels,
        })
        .collect();
    summaries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(summaries)
}

/// Force-removes agentc containers, with the egress proxy and the isolated network of each
/// (labelled `io.agentc.egress-for=NAME`), [`EnginePort::removal_jobs`] at a time, and returns
/// the names removed. A named container that does not exist or lacks the `io.agentc.profile`
/// label is an error, checked for every name before anything is removed, unless a launch of
/// that name killed before it finished left an isolated network or a proxy behind
/// ([`companion::leftovers()`]): those are removed instead. `Profile` removes the leftovers of
/// the profile's launches too, and every network and CA volume labelled with it; `All` those
/// of every profile. Every removal is tried; the first that failed is the error.
pub async fn remove<P: EnginePort>(
    port: &P,
    target: &RemoveTarget,
) -> Result<Vec<String>, ExecError> {
    let mut left = Vec::new();
    let names: Vec<String> = match target {
        RemoveTarget::All | RemoveTarget::Profile(_) => {
            let profile = match target {
                RemoveTarget::Profile(profile) => Some(profile.as_str()),
                _ => None,
            };
            list(port, profile)
                .await?
                .into_iter()
                .map(|summary| summary.name)
                .collect()
        }
        RemoveTarget::Names(names) => {
            let (containers, leftovers) = named(port, names).await?;
            left.extend(leftovers);
            containers
        }
    };
    let results: Vec<Result<Vec<String>, ExecError>> = stream::iter(&names)
        .map(|name| async move {
            let labels = match port.inspect(name).await {
                Ok(inspect) => ListedContainer::from_inspect(&inspect).labels,
                Err(_) => BTreeMap::new(),
            };
            // A claimed pool member's companion is labelled for the name it had at fill.
            let member = labels
                .get(agentc_policy::pool::LABEL_POOL_MEMBER)
                .filter(|member| *member != name);
            port.remove_container(name)
                .await
                .map_err(failed(port, "remove the container"))?;
            // Its egress proxy and isolated network, if its allowlist is enforced outside it.
            let mut removed = companion::remove_companions(port, name).await?;
            if let Some(member) = member {
                removed.extend(companion::remove_companions(port, member).await?);
            }
            // The home it had for itself alone (a restored or forked sandbox's).
            if let Some(volume) = crate::volumes::remove_own_volume(port, &labels).await? {
                removed.push(format!("volume {volume}"));
            }
            Ok(removed)
        })
        .buffered(port.removal_jobs().max(1))
        .collect()
        .await;
    let mut removed = names.clone();
    for result in results {
        removed.extend(result?);
    }
    if *target == RemoveTarget::All {
        // The isolated networks of launches whose workload is already gone.
        removed.extend(companion::remove_orphan_networks(port).await?);
    }
    if let RemoveTarget::Profile(profile) = target {
        // The leftovers of the profile's launches killed before they finished.
        left.extend(companion::leftovers(port, None, Some(profile)).await?);
    }
    removed.extend(remove_leftovers(port, &left).await?);
    match target {
        // Whatever else agentc made for the profile's launches: every network labelled with
        // it, and its per-launch CA volumes (its other volumes only with `--volumes`).
        RemoveTarget::Profile(profile) => {
            removed.extend(companion::remove_labelled(port, Some(profile)).await?)
        }
        RemoveTarget::All => removed.extend(companion::remove_labelled(port, None).await?),
        RemoveTarget::Names(_) => {}
    }
    // With --all an egress proxy is listed itself and again as its workload's companion.
    let mut seen = HashSet::new();
    removed.retain(|name| seen.insert(name.clone()));
    Ok(removed)
}

/// Checks, without removing anything, that each of `names` is an agentc container or the
/// leftovers of a killed launch of that name, as [`remove`] does first: the error names the
/// first that is neither (`NoSuchContainer`) or not agentc's (`NotAgentc`).
pub async fn check_removable<P: EnginePort>(port: &P, names: &[String]) -> Result<(), ExecError> {
    named(port, names).await.map(drop)
}

/// The containers `names` name and the leftovers of those that are gone, each checked.
async fn named<P: EnginePort>(
    port: &P,
    names: &[String],
) -> Result<(Vec<String>, Vec<Leftover>), ExecError> {
    let mut containers = Vec::new();
    let mut left = Vec::new();
    for name in names {
        let inspect = match port.inspect(name).await {
            Ok(inspect) => inspect,
            Err(error) if error.is_not_found() => {
                // What a launch of `name` killed before it finished left: removed too.
                let found = companion::leftovers(port, Some(name), None).await?;
                if found.iter().any(removable) {
                    left.extend(found);
                    continue;
                }
                return Err(ExecError::NoSuchContainer { name: name.clone() });
            }
            Err(error) => return Err(failed(port, "inspect the container")(error)),
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
async fn remove_leftovers<P: EnginePort>(
    port: &P,
    leftovers: &[Leftover],
) -> Result<Vec<String>, ExecError> {
    let mut removed = Vec::new();
    for proxy in leftovers.iter().filter(|l| l.kind == LeftoverKind::Proxy) {
        port.remove_container(&proxy.name)
            .await
            .map_err(failed(port, "remove the egress proxy"))?;
        removed.push(proxy.name.clone());
    }
    for network in leftovers.iter().filter(|l| l.kind == LeftoverKind::Network) {
        match port.remove_network(&network.name).await {
            Ok(()) => removed.push(format!("network {}", network.name)),
            Err(error) if error.is_not_found() => {}
            Err(error) => return Err(failed(port, "remove the isolated network")(error)),
        }
    }
    Ok(removed)
}

/// agentc's volumes (labelled `io.agentc.profile`), as `(name, profile)`, sorted by name.
pub async fn list_volumes<P: EnginePort>(port: &P) -> Result<Vec<(String, String)>, ExecError> {
    let listed = port
        .list_volumes(&Filter::labels([LABEL_PROFILE]))
        .await
        .map_err(failed(port, "list volumes"))?;
    let mut volumes: Vec<(String, String)> = listed
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
pub async fn volumes_of<P: EnginePort>(
    port: &P,
    names: &[String],
) -> Result<Vec<String>, ExecError> {
    let ours: BTreeSet<String> = list_volumes(port)
        .await?
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let mut found = Vec::new();
    for name in names {
        let Ok(inspect) = port.inspect(name).await else {
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
pub async fn remove_volumes<P: EnginePort>(
    port: &P,
    volumes: &[String],
    skip_in_use: bool,
) -> Result<Vec<String>, ExecError> {
    let mut removed = Vec::new();
    for volume in volumes {
        match port.remove_volume(volume).await {
            Ok(()) => removed.push(volume.clone()),
            Err(error) if error.is_not_found() => {}
            Err(error) if skip_in_use && error.kind == EngineErrorKind::Conflict => {}
            Err(error) => return Err(failed(port, "remove a volume")(error)),
        }
    }
    Ok(removed)
}
