//! The engine port: the engine operations agentc's orchestration uses, as one async trait
//! with two implementations, the `docker`/`podman` command line
//! (`agentc_backend_cli::exec::port::CliPort`, through `tokio::process`, on backend-cli's argv
//! renderers) and the Engine API (`agentc_backend_api::port::ApiPort`, through bollard, on
//! backend-api's bodies). Orchestration written against it ([`crate::companion`]: the egress
//! companion's set-up, health, removal and the reaping of killed launches' leftovers;
//! [`crate::image`]: a launch's image made present; [`crate::launch`]: `agentc run`,
//! attached, detached and `--count`; `agentc verify`'s probe and its check containers) exists once, and both backends behave the same because they run the same code.
//!
//! The engine (Docker or Podman) is a value of the implementation ([`EnginePort::engine`]),
//! never read from a global by the orchestration. Failures are one typed error,
//! [`EngineError`]: what kind of refusal it is, which the orchestration acts on, and the
//! engine's own wording as its detail, which the user reads.
//!
//! The companion's objects are created from the [`EgressSpec`] by each implementation's own
//! renderer (the argv the docker CLI referee judges, the bodies the docker CLI would send), so
//! an operation here names *what* is created, not how it is spelled.

use std::collections::BTreeMap;
use std::future::Future;

use agentc_policy::{ContainerSpec, EgressSpec, Hint, IsolatedNetwork};
use bollard::models::{ContainerInspectResponse, ImageInspect};

use crate::engine::Engine;

/// What kind of refusal an engine operation met; the orchestration decides on this, never on
/// the engine's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineErrorKind {
    /// The object (container, image, network, volume) does not exist.
    NotFound,
    /// The object exists already, or is in use, or is being removed (HTTP 409 or its wording).
    Conflict,
    /// The container is not running.
    NotRunning,
    /// The engine cannot be reached.
    Unavailable,
    /// The engine's command-line program (`docker`, `podman`) cannot be run: not installed,
    /// or not on `PATH`. The detail is `cannot run PROGRAM: ` and the operating system's error.
    NoProgram,
    /// The engine cannot run the spec as asked (a runtime it lacks, a field it cannot carry,
    /// a value the renderer refuses); nothing was created.
    Unsupported,
    /// Any other failure.
    Failed,
}

/// A failed engine operation: its kind, the refusal its wording states, and the engine's own
/// words. The port classifies the wording once, when it makes the error ([`EngineError::new`],
/// [`EngineError::from_text`]); nothing reads the text again to decide.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct EngineError {
    /// What kind of refusal it is.
    pub kind: EngineErrorKind,
    /// The refusal the engine's wording states, if agentc acts on it
    /// ([`crate::daemon_text::refusal`]), read once from `detail`.
    pub refusal: Option<crate::daemon_text::Refusal>,
    /// The engine's own wording (docker's stderr, the daemon's message), for the user.
    pub detail: String,
}

impl EngineError {
    /// An error of `kind` with the engine's `detail` (its refusal read from it once).
    pub fn new(kind: EngineErrorKind, detail: impl Into<String>) -> EngineError {
        let detail = detail.into();
        EngineError {
            kind,
            refusal: crate::daemon_text::refusal(&detail),
            detail,
        }
    }

    /// Whether the object was not there.
    pub fn is_not_found(&self) -> bool {
        self.kind == EngineErrorKind::NotFound
    }

    /// Reads the kind of a refusal from the engine's own wording (the command line's stderr),
    /// in either engine's phrasing ([`crate::daemon_text`]).
    pub fn from_text(detail: impl Into<String>) -> EngineError {
        use crate::daemon_text::Refusal;
        let detail = detail.into();
        let refusal = crate::daemon_text::refusal(&detail);
        let kind = match refusal {
            Some(
                Refusal::NoSuchContainer
                | Refusal::NoSuchImage
                | Refusal::NoSuchNetwork
                | Refusal::NoSuchVolume
                | Refusal::NoSuchPath,
            ) => EngineErrorKind::NotFound,
            Some(Refusal::NotRunning) => EngineErrorKind::NotRunning,
            Some(
                Refusal::RemovalInProgress
                | Refusal::NameInUse
                | Refusal::InUse
                | Refusal::UsedByContainer,
            ) => EngineErrorKind::Conflict,
            Some(Refusal::Unreachable) => EngineErrorKind::Unavailable,
            Some(Refusal::SubnetTaken | Refusal::ConnectionLost) | None => EngineErrorKind::Failed,
        };
        EngineError {
            kind,
            refusal,
            detail,
        }
    }

    /// The refusal the engine's wording states, if agentc acts on it (classified when the
    /// error was made).
    pub fn refusal(&self) -> Option<crate::daemon_text::Refusal> {
        self.refusal
    }
}

/// Which containers, networks or volumes a listing returns: those carrying every label filter
/// (`KEY` or `KEY=VALUE`), and for containers, those on `network` when given. Stopped
/// containers are listed too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Label filters, all of which must match.
    pub labels: Vec<String>,
    /// Containers on this network only.
    pub network: Option<String>,
}

impl Filter {
    /// The objects carrying every one of `labels`.
    pub fn labels<I, S>(labels: I) -> Filter
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Filter {
            labels: labels.into_iter().map(Into::into).collect(),
            network: None,
        }
    }

    /// The containers on `network`.
    pub fn on_network(network: &str) -> Filter {
        Filter {
            labels: Vec::new(),
            network: Some(network.to_string()),
        }
    }
}

/// A container as a listing returns it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedContainer {
    /// Its ID.
    pub id: String,
    /// Its name, without the leading `/`.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its state as the engine says it: `created`, `running`, `paused`, `exited`, `dead`, ...
    pub state: String,
    /// When it was created, in seconds since the epoch, when the engine says.
    pub created: Option<i64>,
    /// The networks it is on.
    pub networks: Vec<String>,
    /// Its image, as it was asked for.
    pub image: String,
    /// The engine's human status, such as `Up 5 minutes` (empty where the listing has none).
    pub status: String,
}

impl ListedContainer {
    /// The container as its inspect describes it (the command line lists through `inspect`).
    pub fn from_inspect(inspect: &ContainerInspectResponse) -> ListedContainer {
        ListedContainer {
            id: inspect.id.clone().unwrap_or_default(),
            name: inspect
                .name
                .as_deref()
                .unwrap_or_default()
                .trim_start_matches('/')
                .to_string(),
            labels: inspect
                .config
                .as_ref()
                .and_then(|config| config.labels.clone())
                .unwrap_or_default()
                .into_iter()
                .collect(),
            state: inspect
                .state
                .as_ref()
                .and_then(|state| state.status)
                .map(|status| status.to_string())
                .unwrap_or_default(),
            created: inspect
                .created
                .as_deref()
                .and_then(crate::rfc3339::unix_seconds),
            networks: inspect
                .network_settings
                .as_ref()
                .and_then(|settings| settings.networks.as_ref())
                .map(|networks| networks.keys().cloned().collect())
                .unwrap_or_default(),
            image: inspect
                .config
                .as_ref()
                .and_then(|config| config.image.clone())
                .unwrap_or_default(),
            status: String::new(),
        }
    }

    /// Whether it ended (exited or dead).
    pub fn ended(&self) -> bool {
        matches!(self.state.as_str(), "exited" | "dead" | "stopped")
    }
}

/// A network or a volume as a listing returns it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedObject {
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// When it was created, in seconds since the epoch, when the engine says.
    pub created: Option<i64>,
    /// For a network, whether it is `--internal` (no way out); `None` for a volume.
    pub internal: Option<bool>,
}

/// The egress proxy's image, to import: the root filesystem as a tar, the `docker import
/// --change` lines, the tag.
#[derive(Debug, Clone, Copy)]
pub struct ImportRequest<'a> {
    /// `REPOSITORY:TAG`.
    pub tag: &'a str,
    /// The root filesystem, a tar.
    pub tar: &'a [u8],
    /// The `--change` lines (`CMD`, `LABEL`, ...).
    pub changes: &'a [String],
}

/// How an attached launch's container ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exited {
    /// The container's exit code (137 when it was killed).
    pub exit_code: i64,
    /// The container's ID.
    pub id: String,
    /// Whether the out-of-memory killer ended it, when the engine could still say so (`None`:
    /// not known, as through the command line, whose `docker run --rm` leaves nothing to ask).
    pub oom_killed: Option<bool>,
}

impl Exited {
    /// A one-line explanation of an abnormal exit, with what to do when that is known: 137 is
    /// a SIGKILL, which the out-of-memory killer sends.
    pub fn explanation(&self) -> Option<Hint<String>> {
        match (self.exit_code, self.oom_killed) {
            (137, Some(true)) => Some(Hint::new(
                "container was killed by the out-of-memory killer (exit code 137)".to_string(),
                "raise resources.memory",
            )),
            (137, Some(false)) => Some(Hint::none(
                "container was killed (exit code 137, SIGKILL)".to_string(),
            )),
            (137, None) => Some(Hint::none(
                "the container was killed (exit code 137, SIGKILL; the out-of-memory killer does \
                 this when resources.memory is reached)"
                    .to_string(),
            )),
            _ => None,
        }
    }
}

/// The engine operations agentc's orchestration uses; see the module documentation.
///
/// Every operation talks to the engine afresh. Removals of what is already gone succeed
/// (the orchestration's removals are best effort and idempotent).
pub trait EnginePort: Send + Sync {
    /// The engine this port drives.
    fn engine(&self) -> Engine;

    /// Whether the engine has the image `reference`.
    fn image_exists(
        &self,
        reference: &str,
    ) -> impl Future<Output = Result<bool, EngineError>> + Send;

    /// The image `reference` names, as `docker image inspect` prints it; `None` when the
    /// engine has no such image.
    fn image_inspect(
        &self,
        reference: &str,
    ) -> impl Future<Output = Result<Option<ImageInspect>, EngineError>> + Send;

    /// Points `reference` (`REPOSITORY[:TAG]`) at the image `source` (an ID or a reference).
    fn tag_image(
        &self,
        source: &str,
        reference: &str,
    ) -> impl Future<Output = Result<(), EngineError>> + Send;

    /// Pulls the image `reference` from its registry (no credentials are sent), handing each
    /// line of progress to `on_line`.
    fn pull_image(
        &self,
        reference: &str,
        on_line: &mut (dyn FnMut(&str) + Send),
    ) -> impl Future<Output = Result<(), EngineError>> + Send;

    /// Imports an image from a root filesystem tar (`docker import`, `POST
    /// /images/create?fromSrc=-`).
    fn import_image(
        &self,
        request: ImportRequest<'_>,
    ) -> impl Future<Output = Result<(), EngineError>> + Send;

    /// Creates an isolated network (the egress companion's, or doctor's probe of one), as
    /// the spec renders it.
    fn create_isolated_network(
        &self,
        network: &IsolatedNetwork,
    ) -> impl Future<Output = Result<(), EngineError>> + Send;

    /// Creates the egress proxy container from `image`, as the spec renders it; `secrets` are
    /// the values of its variables passed by name, which never appear in an argv.
    fn create_proxy(
        &self,
        egress: &EgressSpec,
        image: &str,
        secrets: &BTreeMap<String, String>,
    ) -> impl Future<Output = Result<(), EngineError>> + Send;

    /// Connects the egress proxy to the isolated network at its fixed address.
    fn connect_proxy(
        &self,
        egress: &EgressSpec,
    ) -> impl Future<Output = Result<(), EngineError>> + Send;

    /// Refuses, before anything is created, a `spec` the engine cannot run as asked: the
    /// runtime it names is asked for and Podman's rows applied, as [`EnginePort::run_detached`]
    /// does first (the command line's `launch_argv`, the Engine API's create request), and
    /// nothing else; the refusal is the launch's own ([`crate::ExecError::exit_code`] 65 when
    /// the engine cannot run it). The image must be present (Podman reads its `USER`).
    fn check_launch(
        &self,
        spec: &ContainerSpec,
    ) -> impl Future<Output = Result<(), crate::ExecError>> + Send;

    /// Creates the container `spec` describes, detached, and starts it (`docker run
    /// --detach`: the CLI renderer's argv; the API renderer's create body, then a start), the
    /// runtime checked and Podman's rows applied first; returns its ID. The spec's secrets are
    /// read from `env` by name, and their values never appear in an argv. A container created
    /// but not started is removed. [`EngineErrorKind::Unsupported`] when the engine cannot run
    /// the spec as asked.
    fn run_detached(
        &self,
        spec: &ContainerSpec,
        env: &BTreeMap<String, String>,
    ) -> impl Future<Output = Result<String, EngineError>> + Send;

    /// [`EnginePort::run_detached`] for a launch (`agentc run --detach`): the container
    /// created and started the same way, a refusal worded as this backend's launch words it
    /// (the daemon's status and the step it refused, or the command line's refusal), and a
    /// container created but not started removed (or named as left behind).
    fn start_launch(
        &self,
        spec: &ContainerSpec,
        env: &BTreeMap<String, String>,
    ) -> impl Future<Output = Result<String, crate::ExecError>> + Send;

    /// Runs an attached launch of `spec` to its end (`docker run` in the foreground): the
    /// container created, attached to this process's stdin (when the spec is interactive),
    /// stdout and stderr (`terminal`: the local terminal in raw mode, its size following the
    /// window), started, waited for and removed. The spec's secrets are read from `env` by
    /// name. A SIGINT or SIGTERM from `signals` meanwhile kills and removes the container, TTY
    /// or not, and ends the run with [`crate::ExecError::Interrupted`]; a refused create or
    /// start removes what was created and is worded as this backend's launch words it.
    fn run_attached<S: crate::signals::Interrupts>(
        &self,
        spec: &ContainerSpec,
        env: &BTreeMap<String, String>,
        terminal: bool,
        signals: &mut S,
    ) -> impl Future<Output = Result<Exited, crate::ExecError>> + Send;

    /// The runtimes a launch through this port can select, with what identifies them, for
    /// the isolation floor (read alike by [`crate::docker_info_runtimes`]): on Docker every
    /// registered runtime; on Podman's command line each candidate it finds; on Podman's API
    /// socket only its default (it ignores `HostConfig.Runtime`).
    fn runtimes(
        &self,
    ) -> impl Future<Output = Result<crate::EngineRuntimes, crate::ExecError>> + Send;

    /// How many removals to run at once on this engine: a daemon older than Engine API 1.42
    /// takes one at a time (concurrent removals of containers on one network can deadlock its
    /// network controller, moby/moby#42545).
    fn removal_jobs(&self) -> usize {
        8
    }

    /// Waits until the container is no longer running and returns its exit code (the caller
    /// bounds the wait).
    fn wait(&self, container: &str) -> impl Future<Output = Result<i64, EngineError>> + Send;

    /// The container's whole logs: what it wrote on stdout, and with `stderr` what it wrote
    /// there too.
    fn logs(
        &self,
        container: &str,
        stderr: bool,
    ) -> impl Future<Output = Result<String, EngineError>> + Send;

    /// Starts a created or stopped container.
    fn start(&self, container: &str) -> impl Future<Output = Result<(), EngineError>> + Send;

    /// The container's inspect, as `docker inspect` prints it.
    fn inspect(
        &self,
        container: &str,
    ) -> impl Future<Output = Result<ContainerInspectResponse, EngineError>> + Send;

    /// The container's inspect as a JSON document: the one the command line prints, or the
    /// Engine API's as bollard reads it (where [`EnginePort::inspect`]'s type leaves out what
    /// Podman's command line spells its own way).
    fn inspect_json(
        &self,
        container: &str,
    ) -> impl Future<Output = Result<serde_json::Value, EngineError>> + Send;

    /// The network's inspect as a JSON document (`docker network inspect`, `GET
    /// /networks/{name}`): its IPAM, which [`EnginePort::network`] does not read.
    fn network_inspect_json(
        &self,
        network: &str,
    ) -> impl Future<Output = Result<serde_json::Value, EngineError>> + Send;

    /// Runs `argv` in the running container, its output discarded, and returns its exit code.
    fn exec_status(
        &self,
        container: &str,
        argv: &[&str],
    ) -> impl Future<Output = Result<i64, EngineError>> + Send;

    /// The last `lines` lines of the container's logs, both streams.
    fn logs_tail(
        &self,
        container: &str,
        lines: u32,
    ) -> impl Future<Output = Result<String, EngineError>> + Send;

    /// Kills and removes the container; one already gone, or being removed, is not an error.
    fn remove_container(
        &self,
        container: &str,
    ) -> impl Future<Output = Result<(), EngineError>> + Send;

    /// The containers `filter` selects, stopped ones included.
    fn list_containers(
        &self,
        filter: &Filter,
    ) -> impl Future<Output = Result<Vec<ListedContainer>, EngineError>> + Send;

    /// The network `name` (`None`: no such network).
    fn network(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<ListedObject>, EngineError>> + Send;

    /// The networks carrying every label of `filter`.
    fn list_networks(
        &self,
        filter: &Filter,
    ) -> impl Future<Output = Result<Vec<ListedObject>, EngineError>> + Send;

    /// Removes the network; [`EngineErrorKind::NotFound`] when there is none,
    /// [`EngineErrorKind::Conflict`] when a container still uses it.
    fn remove_network(&self, name: &str) -> impl Future<Output = Result<(), EngineError>> + Send;

    /// Whether the volume `name` exists.
    fn volume_exists(&self, name: &str) -> impl Future<Output = Result<bool, EngineError>> + Send;

    /// Creates a volume with `labels`.
    fn create_volume(
        &self,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> impl Future<Output = Result<(), EngineError>> + Send;

    /// The volumes carrying every label of `filter`.
    fn list_volumes(
        &self,
        filter: &Filter,
    ) -> impl Future<Output = Result<Vec<ListedObject>, EngineError>> + Send;

    /// Removes the volume; [`EngineErrorKind::NotFound`] when there is none,
    /// [`EngineErrorKind::Conflict`] while a container holds it.
    fn remove_volume(&self, name: &str) -> impl Future<Output = Result<(), EngineError>> + Send;

    // ---- Sessions: the primitives the sessions' client (`session::Sandboxes`) is written
    // over (those that stream are `session::port::SessionPort`'s).

    /// The backend's name: `cli` or `api` (what a session client says it drives).
    fn backend(&self) -> &'static str;

    /// Whether requests asked at once run side by side at no cost beyond their own (the
    /// command line: a `docker` process each). `false` where each would take a connection of
    /// its own (the Engine API: one connection serves one request at a time), so an
    /// orchestration that wants one connection asks them one after the other.
    fn asks_side_by_side(&self) -> bool {
        false
    }

    /// Stops the running container: SIGTERM, then SIGKILL after `timeout` seconds (the
    /// engine's default when `None`); a stopped one is left alone.
    fn stop(
        &self,
        container: &str,
        timeout: Option<u32>,
    ) -> impl Future<Output = Result<(), EngineError>> + Send;

    /// Freezes every process of the running container (`docker pause`), or with `thaw` thaws
    /// them (`docker unpause`).
    fn pause(
        &self,
        container: &str,
        thaw: bool,
    ) -> impl Future<Output = Result<(), EngineError>> + Send;

    /// Renames the container named `from` to `to`, by name; `Ok(false)` when no container
    /// has the name `from` (or it is `to` already).
    fn rename(
        &self,
        from: &str,
        to: &str,
    ) -> impl Future<Output = Result<bool, EngineError>> + Send;

    /// Commits the container's writable layer to the image `reference` (`docker commit`),
    /// with the Dockerfile instructions `changes`, the container paused meanwhile with
    /// `pause`; returns the image's ID.
    fn commit(
        &self,
        container: &str,
        reference: &str,
        changes: &[String],
        pause: bool,
    ) -> impl Future<Output = Result<String, EngineError>> + Send;

    /// The IDs of the images carrying `label` (`KEY` or `KEY=VALUE`), each once.
    fn list_images(
        &self,
        label: &str,
    ) -> impl Future<Output = Result<Vec<String>, EngineError>> + Send;

    /// Removes an image by reference or ID, forced (its other references too).
    fn remove_image(&self, reference: &str)
        -> impl Future<Output = Result<(), EngineError>> + Send;

    // ---- End of the sessions' primitives.
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_read_in_both_engines_wordings() {
        let kind = |text: &str| EngineError::from_text(text).kind;
        assert_eq!(
            kind("Error: No such container: agentc-x"),
            EngineErrorKind::NotFound
        );
        assert_eq!(
            kind("Error: no container with name or ID \"x\" found: no such container"),
            EngineErrorKind::NotFound
        );
        assert_eq!(
            kind("Error: No such network: agentc-egress-x"),
            EngineErrorKind::NotFound
        );
        assert_eq!(
            kind("Error response from daemon: network with name agentc-egress-x already exists"),
            EngineErrorKind::Conflict
        );
        assert_eq!(
            kind("Error response from daemon: error while removing network: network agentc-egress-x id 1 has active endpoints"),
            EngineErrorKind::Conflict
        );
        assert_eq!(
            kind("Error response from daemon: Container abc is not running"),
            EngineErrorKind::NotRunning
        );
        assert_eq!(
            kind("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"),
            EngineErrorKind::Unavailable
        );
        assert_eq!(
            kind("Error response from daemon: Pool overlaps with other one on this address space"),
            EngineErrorKind::Failed
        );
        assert_eq!(kind("something else"), EngineErrorKind::Failed);
        assert_eq!(
            EngineError::from_text("Error: No such volume: v").to_string(),
            "Error: No such volume: v"
        );
    }
}
