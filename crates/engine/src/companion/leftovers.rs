//! What is left of egress companions, over the [engine port](crate::port): the leftovers of
//! launches killed before they finished ([`leftovers`], what `agentc doctor` lists), their
//! removal by every command that talks to the engine ([`reap`]), and the removals `agentc rm`
//! makes after a workload ([`remove_companions`]) or a profile ([`remove_labelled`]).

use std::collections::BTreeSet;
use std::time::Duration;

use agentc_policy::{KIND_EGRESS_PROXY, LABEL_EGRESS_FOR, LABEL_KIND, LABEL_PROFILE};

use super::prepare;
use super::state::{self, CompanionKind, CompanionObject, Leftover, ProxyUse};
use super::{failed, member_of, network_use};
use crate::port::{EnginePort, Filter, ListedObject};
use crate::ExecError;

/// The leftovers of killed launches among agentc's isolated networks and egress proxies
/// ([`state::unpaired`]), those of the workload `workload` or of the profile `profile`
/// when given: what `agentc doctor` lists and `agentc rm` of a gone workload or of a profile
/// removes.
pub async fn leftovers<P: EnginePort>(
    port: &P,
    workload: Option<&str>,
    profile: Option<&str>,
) -> Result<Vec<Leftover>, ExecError> {
    let mut labels = vec![state::proxy_kind_filter(), LABEL_PROFILE.to_string()];
    if let Some(workload) = workload {
        labels.push(prepare::proxy_label_filter(workload));
    }
    if let Some(profile) = profile {
        labels.push(format!("{LABEL_PROFILE}={profile}"));
    }
    let filter = Filter::labels(labels);
    let listed = port
        .list_networks(&filter)
        .await
        .map_err(|error| failed("list the isolated networks", error))?;
    let mut networks = Vec::new();
    for network in listed {
        match network_use(port, &network.name).await {
            Ok(Some(found)) => networks.push(found),
            Ok(None) => {}
            Err(error) => return Err(failed("inspect the isolated network", error)),
        }
    }
    let listed = port
        .list_containers(&filter)
        .await
        .map_err(|error| failed("list the egress proxies", error))?;
    let proxies: Vec<ProxyUse> = listed
        .into_iter()
        .map(|container| ProxyUse {
            workload: label(&container.labels, LABEL_EGRESS_FOR),
            profile: label(&container.labels, LABEL_PROFILE),
            networks: container.networks.clone(),
            proxy: member_of(&container),
        })
        .collect();
    Ok(state::unpaired(&networks, &proxies))
}

fn label(labels: &std::collections::BTreeMap<String, String>, key: &str) -> String {
    labels.get(key).cloned().unwrap_or_default()
}

/// Removes a volume; a workload the engine is still removing may hold it for a moment, so it
/// is tried a few times. One already gone is not an error; a failure is logged.
pub async fn remove_volume<P: EnginePort>(port: &P, volume: &str) {
    for attempt in 0..10 {
        match port.remove_volume(volume).await {
            Ok(()) => return,
            Err(error) if error.is_not_found() => return,
            Err(error) if attempt == 9 => {
                log::warn!("could not remove the volume {volume}: {error}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Removes the egress companions of the workload `name` (the proxies, networks, and CA and
/// audit volumes labelled `io.agentc.egress-for=NAME`) and returns what it removed (`PROXY`, `network
/// NAME`, `volume NAME`); the workload must be gone already, or its network is still in use.
pub async fn remove_companions<P: EnginePort>(
    port: &P,
    name: &str,
) -> Result<Vec<String>, ExecError> {
    let filter = Filter::labels([format!("{LABEL_EGRESS_FOR}={name}")]);
    let mut removed = Vec::new();
    let proxies = port
        .list_containers(&filter)
        .await
        .map_err(|error| failed("list the egress proxies", error))?;
    for proxy in proxies {
        let proxy_name = if proxy.name.is_empty() {
            proxy.id
        } else {
            proxy.name
        };
        port.remove_container(&proxy_name)
            .await
            .map_err(|error| failed("remove the egress proxy", error))?;
        removed.push(proxy_name);
    }
    let networks = port
        .list_networks(&filter)
        .await
        .map_err(|error| failed("list the isolated networks", error))?;
    for network in networks {
        match port.remove_network(&network.name).await {
            Ok(()) => removed.push(format!("network {}", network.name)),
            Err(error) if error.is_not_found() => {}
            Err(error) => return Err(failed("remove the isolated network", error)),
        }
    }
    // The proxies' volumes: their audit volumes, and the CA volumes of those that held credentials.
    remove_ca_volumes(port, &filter, &mut removed).await?;
    Ok(removed)
}

/// Removes every isolated network agentc made for an egress proxy (labelled
/// `io.agentc.kind=egress-proxy` and `io.agentc.profile`) that no container uses any more;
/// returns their names (`network NAME`).
pub async fn remove_orphan_networks<P: EnginePort>(port: &P) -> Result<Vec<String>, ExecError> {
    let filter = Filter::labels([
        format!("{LABEL_KIND}={KIND_EGRESS_PROXY}"),
        LABEL_PROFILE.to_string(),
    ]);
    let networks = port
        .list_networks(&filter)
        .await
        .map_err(|error| failed("list the isolated networks", error))?;
    let mut removed = Vec::new();
    for network in networks {
        // In use (a sandbox still runs on it) or already gone: left alone.
        if port.remove_network(&network.name).await.is_ok() {
            removed.push(format!("network {}", network.name));
        }
    }
    Ok(removed)
}

/// Removes the egress companions (proxies, isolated networks, CA and audit volumes) whose
/// workload is gone ([`state::orphans`]: past the grace, or with their proxy ended, or of `own`,
/// the workload the caller launches next, or of the profile `at_once`, a fault test's; and no
/// set whose network a container other than a proxy is on) and returns what it removed, per
/// workload: what every agentc command that talks to the engine does first, so that a launch
/// killed at any step leaves nothing for long and the next launch of its name is not refused.
pub async fn reap<P: EnginePort>(
    port: &P,
    own: Option<&str>,
    at_once: Option<&str>,
) -> Result<Vec<state::Orphans>, ExecError> {
    let filter = Filter::labels([state::proxy_kind_filter(), LABEL_PROFILE.to_string()]);
    let mut objects = Vec::new();
    for proxy in port
        .list_containers(&filter)
        .await
        .map_err(|error| failed("list the egress proxies", error))?
    {
        objects.push(CompanionObject {
            kind: CompanionKind::Proxy,
            workload: label(&proxy.labels, LABEL_EGRESS_FOR),
            profile: label(&proxy.labels, LABEL_PROFILE),
            created: proxy.created,
            ended: proxy.ended(),
            name: proxy.name,
        });
    }
    let object = |kind, listed: ListedObject| CompanionObject {
        kind,
        workload: label(&listed.labels, LABEL_EGRESS_FOR),
        profile: label(&listed.labels, LABEL_PROFILE),
        created: listed.created,
        ended: false,
        name: listed.name,
    };
    let networks = port
        .list_networks(&filter)
        .await
        .map_err(|error| failed("list the isolated networks", error))?;
    let volumes = port
        .list_volumes(&filter)
        .await
        .map_err(|error| failed("list the egress proxies' CA volumes", error))?;
    for (kind, listed) in [
        (CompanionKind::Network, networks),
        (CompanionKind::Volume, volumes),
    ] {
        objects.extend(listed.into_iter().map(|found| object(kind, found)));
    }
    let mut existing = BTreeSet::new();
    let workloads: BTreeSet<&str> = objects.iter().map(|o| o.workload.as_str()).collect();
    for workload in workloads {
        match port.inspect(workload).await {
            Err(error) if error.is_not_found() => {}
            // There, or the engine cannot say: left alone either way.
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
        match network_use(port, &network.name).await {
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
    let mut found = state::orphans(&objects, &existing, own, at_once, now);
    // Best effort, object by object: what could not be removed is logged and left out of
    // what is reported removed.
    for orphans in &mut found {
        let mut removed = Vec::new();
        for (kind, name) in std::mem::take(&mut orphans.objects) {
            let result = match kind {
                CompanionKind::Proxy => port.remove_container(&name).await,
                CompanionKind::Network => match port.remove_network(&name).await {
                    Err(error) if !error.is_not_found() => Err(error),
                    _ => Ok(()),
                },
                CompanionKind::Volume => {
                    remove_volume(port, &name).await;
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
/// the egress proxies' CA and audit volumes (labelled `io.agentc.kind=egress-proxy` too), what
/// `agentc rm --profile` and `--all` remove after the containers; returns `network NAME` and `volume NAME`
/// for each. A network some container still uses is left, and named in the error.
pub async fn remove_labelled<P: EnginePort>(
    port: &P,
    profile: Option<&str>,
) -> Result<Vec<String>, ExecError> {
    let profile_label = match profile {
        Some(profile) => format!("{LABEL_PROFILE}={profile}"),
        None => LABEL_PROFILE.to_string(),
    };
    let mut removed = Vec::new();
    let networks = port
        .list_networks(&Filter::labels([profile_label.clone()]))
        .await
        .map_err(|error| failed("list the isolated networks", error))?;
    for network in networks {
        match port.remove_network(&network.name).await {
            Ok(()) => removed.push(format!("network {}", network.name)),
            Err(error) if error.is_not_found() => {}
            // In use by a container agentc did not make (all of the profile's are gone).
            Err(error) if profile.is_some() => {
                return Err(failed(
                    "remove the network",
                    format!("{}: {error}", network.name),
                ))
            }
            Err(_) => {}
        }
    }
    let volumes = Filter::labels([profile_label, state::proxy_kind_filter()]);
    remove_ca_volumes(port, &volumes, &mut removed).await?;
    Ok(removed)
}

/// Removes the egress proxies' CA and audit volumes `filter` selects, naming each in `removed`.
async fn remove_ca_volumes<P: EnginePort>(
    port: &P,
    filter: &Filter,
    removed: &mut Vec<String>,
) -> Result<(), ExecError> {
    let volumes = port
        .list_volumes(filter)
        .await
        .map_err(|error| failed("list the egress proxies' CA volumes", error))?;
    for volume in volumes {
        match port.remove_volume(&volume.name).await {
            Ok(()) => removed.push(format!("volume {}", volume.name)),
            Err(error) if error.is_not_found() => {}
            Err(error) => return Err(failed("remove the egress proxy's CA volume", error)),
        }
    }
    Ok(())
}
