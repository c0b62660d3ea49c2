//! What agentc made on an engine, as the command line and a library caller both see it: the
//! sandbox a NAME means ([`sandbox_named`]), the listing of `agentc ps` ([`List`]) and the
//! removal of `agentc rm` ([`Removal`]), each written once over a sessions client
//! ([`Sandboxes`]) and run through either backend by [`on_client`](crate::backend::on_client).
//!
//! ```no_run
//! use agentc_egress::image::ProxyExecutable;
//! use agentc_host::backend::{on_client, BackendChoice, Driver};
//! use agentc_host::inventory::{Filters, List};
//!
//! let env = agentc_host::backend::process_env();
//! let proxy = ProxyExecutable::locate(&env).ok_or("no agentc on PATH")?;
//! let driver = Driver::new(agentc_engine::Engine::Docker, BackendChoice::Auto, proxy);
//! let filters = Filters::parse(&["status=running".to_string()])?;
//! let listing = on_client(&driver, List { filters, ..List::default() })?;
//! for row in listing.rows {
//!     println!("{} {} {:?}", row.name, row.state, row.egress);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};

use agentc_engine::admin::{self, RemoveTarget, Summary};
use agentc_engine::companion::state::EgressState;
use agentc_engine::launch::reachable_inspect;
use agentc_engine::session::{Sandbox, SandboxClient, Sandboxes, SessionError, SessionPort};
use agentc_engine::{network_of, published_addresses, ExecError};
use agentc_lifecycle::state::State;
use agentc_policy::Hinted;
use agentc_policy::{
    Network, KIND_EGRESS_PROXY, LABEL_KIND, LABEL_PROFILE_FILE, LABEL_PROFILE_SHA256,
    LABEL_SPEC_DIGEST,
};

use crate::backend::{exec_failure, session_failure, OnClient};
use crate::lifecycle::store;
use crate::{file_sha256, load_profile, Failure, EXIT_FAILED};

/// Whether NAME names a profile file rather than a container: a path holding a `/` or ending
/// in `.toml`.
pub fn is_profile_path(name: &str) -> bool {
    name.contains('/') || name.ends_with(".toml")
}

/// The sandbox NAME means: a container agentc created, a profile file's one container, or a
/// profile's name as `agentc ps` prints it (when no container has that name); running ones
/// only unless `stopped_too`. The client refuses any container agentc did not create.
pub async fn sandbox_named<C: SandboxClient>(
    client: &C,
    name: &str,
    stopped_too: bool,
) -> Result<Sandbox, Failure> {
    let found = if is_profile_path(name) {
        let loaded = load_profile(Path::new(name))?;
        client.find_profile(&loaded.profile.name, stopped_too).await
    } else {
        match client.find(name).await {
            // A profile's name, as `agentc ps` prints it, means its one container as a profile
            // file does; a container of that name comes first.
            Err(SessionError::Launch(ExecError::NoSuchContainer { .. })) => {
                match client.find_profile(name, stopped_too).await {
                    Err(SessionError::NotOneContainer { found, .. }) if found.is_empty() => {
                        return Err(Failure::new(
                            EXIT_FAILED,
                            format!("no such container or profile {name}"),
                        )
                        .hinted(
                            "`agentc ps --all` lists agentc's containers and their profiles; a \
                             profile file is named by a path with a `/` or a `.toml` ending",
                        ))
                    }
                    other => other,
                }
            }
            other => other,
        }
    };
    found.map_err(session_failure)
}

/// One container agentc launched, as `agentc ps` lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Row {
    /// The container's name.
    pub name: String,
    /// Its ID.
    pub id: String,
    /// Its `io.agentc.profile` label.
    pub profile: String,
    /// Its `io.agentc.kind` label.
    pub kind: String,
    /// The daemon's state, such as `running`.
    pub state: String,
    /// The daemon's status, such as `Up 5 minutes`.
    pub status: String,
    /// Its network: `default`, `none` or the named network.
    pub network: String,
    /// Where each container port is reachable from the host.
    pub ports: Vec<PortRow>,
    /// For a sandbox behind agentc's egress proxy, whether the proxy serves it (up, down or
    /// missing); `null` for any other container.
    pub egress: Option<EgressState>,
    /// Its `io.agentc.spec-digest` label.
    pub spec_digest: String,
    /// Whether the profile file it was launched from still has the text it had then.
    pub profile_state: ProfileState,
    /// The isolation tier and runtime chosen for its floor (`io.agentc.isolation`,
    /// `io.agentc.runtime`: `gvisor (runsc)`); absent for a launch without a floor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
}

/// A container port and where it is reachable.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PortRow {
    /// `PORT/PROTO`.
    pub port: String,
    /// `HOST:PORT`, IPv6 in brackets.
    pub address: String,
}

/// Whether a container's profile changed since it was launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileState {
    /// The file has the text it had at launch.
    Current,
    /// The file was edited since: the container no longer matches it.
    Changed,
    /// The file is gone.
    Missing,
    /// The container does not say which file (launched by another command or an older
    /// agentc).
    Unknown,
}

impl ProfileState {
    /// The word `agentc ps` prints (`-` for [`ProfileState::Unknown`]).
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileState::Current => "current",
            ProfileState::Changed => "changed",
            ProfileState::Missing => "missing",
            ProfileState::Unknown => "-",
        }
    }

    /// Compares the profile file a container names with the digest it recorded.
    fn of(summary: &Summary) -> ProfileState {
        let (Some(file), Some(recorded)) = (
            summary.labels.get(LABEL_PROFILE_FILE),
            summary.labels.get(LABEL_PROFILE_SHA256),
        ) else {
            return ProfileState::Unknown;
        };
        match file_sha256(Path::new(file)) {
            None => ProfileState::Missing,
            Some(now) if &now == recorded => ProfileState::Current,
            Some(_) => ProfileState::Changed,
        }
    }
}

/// The states a container can be in, as the daemon names them (`status=` values).
pub const STATES: [&str; 7] = [
    "created",
    "running",
    "paused",
    "restarting",
    "removing",
    "exited",
    "dead",
];

/// `ps --filter KEY=VALUE`, read: the accepted values of each key (empty: any).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    /// `profile=P`: the `io.agentc.profile` label.
    pub profile: Vec<String>,
    /// `kind=K`: the `io.agentc.kind` label.
    pub kind: Vec<String>,
    /// `status=S`: the daemon's state.
    pub status: Vec<String>,
}

impl Filters {
    /// Reads each `KEY=VALUE`; an unknown key, a missing `=` or an unknown state is an error
    /// naming it (a typo would otherwise list nothing).
    pub fn parse(filters: &[String]) -> Result<Filters, String> {
        let mut parsed = Filters::default();
        for filter in filters {
            let Some((key, value)) = filter.split_once('=') else {
                return Err(format!(
                    "--filter {filter:?} is not KEY=VALUE: write profile=P, kind=K or status=S"
                ));
            };
            let value = value.to_string();
            match key {
                "profile" => parsed.profile.push(value),
                "kind" => parsed.kind.push(value),
                "status" if STATES.contains(&value.as_str()) => parsed.status.push(value),
                "status" => {
                    return Err(format!(
                        "--filter status={value}: no container is in state {value:?}; the \
                         states are {}",
                        STATES.join(", ")
                    ))
                }
                _ => {
                    return Err(format!(
                        "--filter {filter:?}: unknown key {key:?}; the keys are profile, kind and \
                         status"
                    ))
                }
            }
        }
        Ok(parsed)
    }

    /// Whether a container is listed: running (or paused) ones only, unless `all` or a status
    /// filter asks for others; then every key's values (any of them) must match.
    pub fn matches(&self, summary: &Summary, all: bool) -> bool {
        let any = |values: &[String], value: &str| {
            values.is_empty() || values.iter().any(|wanted| wanted == value)
        };
        let kind = summary.labels.get(LABEL_KIND).map_or("", String::as_str);
        (all || !self.status.is_empty() || summary.state == "running" || summary.state == "paused")
            && any(&self.status, &summary.state)
            && any(&self.profile, &summary.profile)
            && any(&self.kind, kind)
    }
}

/// The listing of `agentc ps`: the containers agentc launched that `filters` match (running
/// or paused ones only unless `all`), and with `volumes` agentc's volumes.
#[derive(Debug, Clone, Default)]
pub struct List {
    /// The filters (`--filter`).
    pub filters: Filters,
    /// Stopped containers too (`--all`).
    pub all: bool,
    /// Only each container's name, ID, profile and state, without asking the engine where its
    /// ports are or how its egress proxy is (`-q`).
    pub ids_only: bool,
    /// agentc's volumes too (`--volumes`).
    pub volumes: bool,
}

/// What [`List`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The containers, in the engine's order.
    pub rows: Vec<Row>,
    /// agentc's volumes and the profile each is labelled with (empty unless asked for).
    pub volumes: Vec<(String, String)>,
}

impl OnClient for List {
    type Output = Listing;

    /// Asks the engine through the client's port ([`agentc_engine::admin`], written once for
    /// both backends); a container removed meanwhile is left out.
    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Listing, Failure> {
        let port = client.port();
        let summaries = admin::list(port, None).await.map_err(exec_failure)?;
        let mut rows = Vec::new();
        for summary in summaries {
            if !self.filters.matches(&summary, self.all) {
                continue;
            }
            if self.ids_only {
                rows.push(row(summary, String::new(), Vec::new(), None));
                continue;
            }
            let Ok(inspect) = reachable_inspect(port, &summary.id).await else {
                // Removed meanwhile.
                continue;
            };
            let network = network_of(&inspect);
            let ports = published_addresses(&inspect, &network)
                .into_iter()
                .map(|found| PortRow {
                    port: found.container_port,
                    address: found.address,
                })
                .collect();
            // Only a sandbox on a named network can be behind the proxy.
            let egress = match network {
                Network::Named { .. } => egress_of(client, &summary).await,
                Network::Default | Network::None => None,
            };
            rows.push(row(summary, network_name(&network), ports, egress));
        }
        let volumes = if self.volumes {
            admin::list_volumes(port).await.map_err(exec_failure)?
        } else {
            Vec::new()
        };
        Ok(Listing { rows, volumes })
    }
}

/// A network as `agentc ps` names it.
fn network_name(network: &Network) -> String {
    match network {
        Network::Default => "default".to_string(),
        Network::None => "none".to_string(),
        Network::Named { name } => name.clone(),
    }
}

/// The state of a container's egress proxy, for a sandbox behind one (through the same
/// [`SandboxClient::egress`] as `agentc egress log`); a proxy itself, a container removed
/// meanwhile, or one the daemon cannot tell about, has none.
async fn egress_of<C: SandboxClient>(client: &C, summary: &Summary) -> Option<EgressState> {
    if summary.labels.get(LABEL_KIND).map(String::as_str) == Some(KIND_EGRESS_PROXY) {
        return None;
    }
    let sandbox = Sandbox {
        id: summary.id.clone(),
        name: summary.name.clone(),
        profile: summary.profile.clone(),
    };
    match client.egress(&sandbox).await {
        Ok(egress) => egress.map(|egress| egress.state),
        Err(error) => {
            log::debug!(
                "cannot tell the egress of {}: {error}",
                summary.name,
                error = error.with_hint()
            );
            None
        }
    }
}

/// The row of a container.
fn row(summary: Summary, network: String, ports: Vec<PortRow>, egress: Option<EgressState>) -> Row {
    let label = |name: &str| summary.labels.get(name).cloned();
    let isolation = label(agentc_engine::isolation::LABEL_ISOLATION).map(|tier| {
        match label(agentc_engine::isolation::LABEL_RUNTIME) {
            Some(runtime) => format!("{tier} ({runtime})"),
            None => tier,
        }
    });
    Row {
        kind: label(LABEL_KIND).unwrap_or_default(),
        spec_digest: label(LABEL_SPEC_DIGEST).unwrap_or_default(),
        profile_state: ProfileState::of(&summary),
        isolation,
        id: summary.id,
        name: summary.name,
        profile: summary.profile,
        state: summary.state,
        status: summary.status,
        network,
        ports,
        egress,
    }
}

/// The removal of `agentc rm`: containers agentc launched, and only those, every one checked
/// before any is removed ([`admin::remove`]); with `volumes`, agentc's volumes they mount.
#[derive(Debug, Clone)]
pub struct Removal {
    /// What to remove. A NAME of [`RemoveTarget::Names`] is read as the session commands read
    /// it ([`sandbox_named`]): a profile file, or a profile's name that no container has (and
    /// that leaves nothing of a killed launch to remove), is its one container, running or not.
    pub target: RemoveTarget,
    /// The agentc volumes the containers mount too; with [`RemoveTarget::All`] every agentc
    /// volume no container uses, with [`RemoveTarget::Profile`] the profile's.
    pub volumes: bool,
    /// Image tags to remove when present (`--state`: the previous images `agentc apply` kept,
    /// [`KeptState::retained`]).
    pub images: Vec<String>,
}

/// What [`Removal`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Removed {
    /// The containers' names.
    pub containers: Vec<String>,
    /// The volumes.
    pub volumes: Vec<String>,
    /// The image tags.
    pub images: Vec<String>,
}

impl OnClient for Removal {
    type Output = Removed;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Removed, Failure> {
        let Removal {
            target,
            volumes,
            images,
        } = self;
        let port = client.port();
        let target = match target {
            RemoveTarget::Names(names) => RemoveTarget::Names(resolve_names(client, names).await?),
            other => other,
        };
        let volumes = match (&target, volumes) {
            (_, false) => Vec::new(),
            (RemoveTarget::All | RemoveTarget::Profile(_), true) => admin::list_volumes(port)
                .await
                .map_err(exec_failure)?
                .into_iter()
                .filter(|(_, profile)| match &target {
                    RemoveTarget::Profile(wanted) => profile == wanted,
                    _ => true,
                })
                .map(|(name, _)| name)
                .collect(),
            (RemoveTarget::Names(names), true) => {
                admin::volumes_of(port, names).await.map_err(exec_failure)?
            }
        };
        let containers = admin::remove(port, &target).await.map_err(exec_failure)?;
        let skip_in_use = matches!(target, RemoveTarget::All | RemoveTarget::Profile(_));
        let volumes = admin::remove_volumes(port, &volumes, skip_in_use)
            .await
            .map_err(exec_failure)?;
        let mut removed_images = Vec::new();
        for image in images {
            let present = port
                .image_exists(&image)
                .await
                .map_err(|error| exec_failure(error.at("inspect a retained image")))?;
            if present {
                port.remove_image(&image)
                    .await
                    .map_err(|error| exec_failure(error.at("remove a retained image")))?;
                removed_images.push(image);
            }
        }
        Ok(Removed {
            containers,
            volumes,
            images: removed_images,
        })
    }
}

/// The containers NAMEs mean, as the session commands read them ([`sandbox_named`]): a
/// profile file, or a profile's name that no container has (and that leaves nothing of a
/// killed launch to remove), is its one container, running or not; any other name is left to
/// [`admin::remove`].
async fn resolve_names<P: SessionPort>(
    client: &Sandboxes<P>,
    names: Vec<String>,
) -> Result<Vec<String>, Failure> {
    let mut resolved = Vec::new();
    for name in names {
        if is_profile_path(&name) {
            resolved.push(sandbox_named(client, &name, true).await?.name);
            continue;
        }
        // Validate the name alone: only when it is no container, nor the leftovers of one,
        // may it be a profile's name.
        match admin::check_removable(client.port(), std::slice::from_ref(&name)).await {
            Err(ExecError::NoSuchContainer { .. }) => {
                resolved.push(sandbox_named(client, &name, true).await?.name);
            }
            _ => resolved.push(name),
        }
    }
    Ok(resolved)
}

/// A profile's deployment state as `agentc apply` keeps it, read and held under its lock
/// ([`store::locked_state`]) until it is removed or dropped: what `agentc rm --profile P
/// --state` removes after the profile's objects.
pub struct KeptState {
    path: PathBuf,
    _guard: store::StateLock,
    state: State,
}

impl KeptState {
    /// The state of `profile`, locked: no `agentc apply` or rollback runs meanwhile.
    pub fn read(profile: &str) -> Result<KeptState, Failure> {
        let (path, guard, state) = store::locked_state(profile)?;
        Ok(KeptState {
            path,
            _guard: guard,
            state,
        })
    }

    /// The tags of the previous images its deployments kept for a rollback, each once.
    pub fn retained(&self) -> Vec<String> {
        let mut tags: Vec<String> = self
            .state
            .deployments
            .iter()
            .filter_map(|deployment| deployment.retained_tag.clone())
            .collect();
        tags.sort();
        tags.dedup();
        tags
    }

    /// Removes the state file (and its lock file); its path when there was one.
    pub fn remove(self) -> Result<Option<PathBuf>, Failure> {
        let lock = store::state_lock_file(&self.path);
        let removed = match std::fs::remove_file(&self.path) {
            Ok(()) => Some(self.path.clone()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => {
                return Err(Failure::new(
                    EXIT_FAILED,
                    format!("cannot remove {}: {error}", self.path.display()),
                ))
            }
        };
        drop(self);
        let _ = std::fs::remove_file(lock);
        Ok(removed)
    }
}

#[cfg(test)]
pub(crate) mod tests;
