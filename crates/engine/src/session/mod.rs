//! Sessions: driving a running sandbox, through either backend, with one async trait.
//!
//! [`SandboxClient`] is what a harness holds: it creates a sandbox from a
//! [`LaunchSpec`] or finds one agentc created, runs commands in it,
//! copies files in and out (also into its tmpfs and past its read-only root), says where a
//! port is reachable, reads its logs, says whether its egress proxy serves it, stops, starts
//! and deletes it. It is implemented once, by [`Sandboxes`] over the
//! [engine port](crate::port); the docker CLI backend's client (`agentc_backend_cli::CliClient`,
//! running `docker` through `tokio::process`) and the Engine API backend's
//! (`agentc_backend_api::ApiClient`, through bollard) are [`Sandboxes`] over their ports, and
//! the `agentc exec`, `cp`, `port`, `logs`,
//! `egress log` (its history merged with the proxy's audit files: [`egress_log`]), `stop`,
//! `start` and `shell` commands are written against it, generic over the backend.
//!
//! What both implementations share is here and pure: which container a NAME means and the
//! refusal of any other ([`target`]), where a port is reachable ([`target::endpoint`]), how a
//! copy travels ([`copy`]) and its host side ([`tarball`]).
//!
//! ```no_run
//! use agentc_engine::session::{ExecRequest, SandboxClient};
//! use agentc_policy::Protocol;
//!
//! /// Runs `uname -a` in a fresh sandbox of `spec`, then deletes it, whatever happened.
//! async fn uname<C: SandboxClient>(
//!     client: &C,
//!     spec: &agentc_policy::LaunchSpec,
//! ) -> Result<String, agentc_engine::session::SessionError> {
//!     let sandbox = client.create(spec).await?;
//!     let result = client.exec_output(&sandbox, &ExecRequest::new(["uname", "-a"])).await;
//!     let report = client.delete(&sandbox).await;
//!     assert!(report.left.is_empty(), "{:?}", report.left);
//!     Ok(String::from_utf8_lossy(&result?.stdout).into_owned())
//! }
//! ```

pub mod copy;
pub mod egress_log;
pub mod error;
pub mod images;
pub mod port;
pub mod sandboxes;
pub mod tarball;
pub mod target;
pub mod transfer;
pub mod types;

use std::future::Future;
use std::path::Path;

use agentc_policy::Hinted;
use agentc_policy::{LaunchSpec, Protocol};
use bollard::models::ContainerInspectResponse;

pub use copy::{Direction, Transport};
pub use egress_log::{EgressHistory, Unseen};
pub use error::SessionError;
pub use images::{CommitRequest, ImageRecord};
pub use port::SessionPort;
pub use sandboxes::Sandboxes;
pub use types::{
    parse_since, Captured, Created, DeleteReport, Endpoint, ExecOutput, ExecRequest, ExecStdin,
    ImageFacts, Listed, LogsRequest, OutputSink, PathKind, ProcessStdio, Sandbox, Stream,
};

/// The variable [`SandboxClient::stop_tagged`] finds an exec's processes by: a caller that may
/// have to interrupt a command sets it (to a value of its own) in the request's environment.
pub const EXEC_TAG_VAR: &str = "AGENTC_EXEC";

/// A sandbox's egress through agentc's egress proxy ([`SandboxClient::egress`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxEgress {
    /// The sandbox's isolated network.
    pub network: String,
    /// The proxy container serving it, when one exists (it carries `io.agentc.profile`, so
    /// the session operations, such as [`SandboxClient::logs`], take it).
    pub proxy: Option<Sandbox>,
    /// Whether egress is up, down or missing.
    pub state: crate::companion::state::EgressState,
}

impl SandboxEgress {
    /// The egress of a sandbox on the isolated network `network`, from its proxy's inspect
    /// (`None`: no proxy container serves the network).
    pub fn new(network: &str, proxy: Option<&ContainerInspectResponse>) -> SandboxEgress {
        SandboxEgress {
            network: network.to_string(),
            proxy: proxy.and_then(|inspect| target::sandbox_of(inspect, "").ok()),
            state: crate::companion::state::classify(network, proxy),
        }
    }
}

/// What a copy did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyReport {
    /// Which transport carried it.
    pub transport: Transport,
    /// Where it landed (a container path for an upload, a host path for a download).
    pub destination: String,
    /// Bytes of file content copied (counted on the host side).
    pub bytes: u64,
}

/// A client of sandboxes through one backend: the docker CLI or the Engine API.
///
/// Every method talks to the daemon afresh; a [`Sandbox`] is only a handle. Methods that
/// name a container accept only agentc's own ([`SandboxClient::find`] refuses any other).
/// Dropping a returned future cancels the operation: the backend stops what it started
/// locally (a docker child process, a stream), and [`SandboxClient::stop_tagged`] stops what
/// a cancelled exec left running in the container.
pub trait SandboxClient: Send + Sync {
    /// The backend's name: `cli` or `api`.
    fn backend(&self) -> &'static str;

    /// Whether requests asked at once run side by side at no cost beyond their own
    /// ([`crate::port::EnginePort::asks_side_by_side`]).
    fn asks_side_by_side(&self) -> bool;

    /// Creates and starts a sandbox from a session's launch, exactly as resolved
    /// ([`session_spec`]: in the background, named, kept after it exits until
    /// [`SandboxClient::delete`], without stdin; resolve it with
    /// [`agentc_policy::Start::Session`] and a [`session_name`]), and returns its handle.
    /// Secrets are resolved from the client's environment; the image must be present. The
    /// isolation floor is met first; then a host port the launch chooses that is in use on
    /// this machine is refused, nothing created ([`crate::ExecError::HostPortsInUse`]),
    /// unless the client's environment names a remote engine ([`crate::engine::is_remote`]).
    fn create(
        &self,
        spec: &LaunchSpec,
    ) -> impl Future<Output = Result<Sandbox, SessionError>> + Send;

    /// Meets `container`'s isolation floor over this client's engine, as [`create`] does
    /// ([`crate::isolation::meet_floor`], the options from the client's environment): the
    /// container with the runtime chosen and its labels, and the choice; a container without a
    /// floor comes back unchanged, without asking the engine. A floor no runtime meets is
    /// [`ExecError::FloorNotMet`](crate::ExecError::FloorNotMet).
    ///
    /// [`create`]: SandboxClient::create
    fn meet_floor(
        &self,
        container: &agentc_policy::ContainerSpec,
        profile: &str,
    ) -> impl Future<Output = Result<crate::isolation::Met, SessionError>> + Send;

    /// The agentc container with this name or ID; any other container is refused
    /// ([`ExecError::NotAgentc`](crate::ExecError::NotAgentc)).
    fn find(&self, name: &str) -> impl Future<Output = Result<Sandbox, SessionError>> + Send;

    /// The one container of a profile (label `io.agentc.profile=PROFILE`): its one running
    /// container, or with `stopped_too` its one container in any state; none or several is
    /// an error listing them. Its egress proxy is not counted ([`target::is_companion`]).
    fn find_profile(
        &self,
        profile: &str,
        stopped_too: bool,
    ) -> impl Future<Output = Result<Sandbox, SessionError>> + Send;

    /// The container's inspect, as `docker inspect` prints it.
    fn inspect(
        &self,
        sandbox: &Sandbox,
    ) -> impl Future<Output = Result<ContainerInspectResponse, SessionError>> + Send;

    /// Starts a command in a running sandbox without attaching to it or waiting for its end
    /// (`docker exec --detach`): its output goes nowhere unless the command sends it somewhere
    /// (`pool::warm::start_detached` sends it to the container's logs). Through the Engine API
    /// no stream takes a connection, so the client's one connection serves what follows.
    fn exec_detached(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Runs a command in the running sandbox, its output handed to `output` as it arrives,
    /// and returns its exit code.
    fn exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        output: &mut dyn OutputSink,
    ) -> impl Future<Output = Result<i64, SessionError>> + Send;

    /// Copies a host file or directory into the sandbox: into `target` when it is a
    /// directory, as `target` otherwise. Modes are kept; the files belong to the container's
    /// user.
    fn upload(
        &self,
        sandbox: &Sandbox,
        source: &Path,
        target: &str,
    ) -> impl Future<Output = Result<CopyReport, SessionError>> + Send;

    /// Copies a file or directory of the sandbox to the host: into `target` when it is a
    /// directory, as `target` otherwise. Modes and times are kept; nothing is written outside
    /// the copied tree.
    fn download(
        &self,
        sandbox: &Sandbox,
        source: &str,
        target: &Path,
    ) -> impl Future<Output = Result<CopyReport, SessionError>> + Send;

    /// Writes the container's logs to `output`; with `follow`, until it stops.
    fn logs(
        &self,
        sandbox: &Sandbox,
        request: &LogsRequest,
        output: &mut dyn OutputSink,
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Starts a stopped sandbox (a running one is left alone).
    fn start(&self, sandbox: &Sandbox) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Stops a running sandbox: SIGTERM, then SIGKILL after `timeout` seconds (the daemon's
    /// default, 10, when `None`).
    fn stop(
        &self,
        sandbox: &Sandbox,
        timeout: Option<u32>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Kills and removes the sandbox and its egress companions (the proxy, isolated network
    /// and CA and audit volumes made for it), best effort: never fails and never panics; the
    /// report says whether it was removed and what is left.
    fn delete(&self, sandbox: &Sandbox) -> impl Future<Output = DeleteReport> + Send;

    /// The sandbox's egress through agentc's egress proxy: `None` when it is not behind one
    /// (its network is not an isolated network agentc made); otherwise its isolated network,
    /// the proxy serving it (the container labelled `io.agentc.kind=egress-proxy` on that
    /// network, running or not) and the state of egress it makes
    /// ([`crate::companion::state::classify`]: up, down or missing).
    fn egress(
        &self,
        sandbox: &Sandbox,
    ) -> impl Future<Output = Result<Option<SandboxEgress>, SessionError>> + Send;

    // ---- Snapshots (issue 23): freezing a sandbox, committing it, the images and volumes of
    // its snapshots. The orchestration over these is `crate::snapshot`.

    /// Freezes every process of the running sandbox (the cgroup freezer, `docker pause`); its
    /// network and its egress proxy stay.
    fn pause(&self, sandbox: &Sandbox) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Thaws a paused sandbox (`docker unpause`).
    fn unpause(&self, sandbox: &Sandbox) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Commits the sandbox's writable layer (not its volumes or tmpfs mounts) to an image
    /// (`docker commit`), and returns the image's ID.
    fn commit(
        &self,
        sandbox: &Sandbox,
        request: &CommitRequest,
    ) -> impl Future<Output = Result<String, SessionError>> + Send;

    /// The image with this reference or ID; `None` when there is none.
    fn image(
        &self,
        reference: &str,
    ) -> impl Future<Output = Result<Option<ImageRecord>, SessionError>> + Send;

    /// The images carrying the label `label` (any value), oldest first.
    fn images(
        &self,
        label: &str,
    ) -> impl Future<Output = Result<Vec<ImageRecord>, SessionError>> + Send;

    /// Removes an image by reference or ID (its other references too).
    fn remove_image(
        &self,
        reference: &str,
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Whether a volume of this name exists.
    fn volume_exists(&self, name: &str) -> impl Future<Output = Result<bool, SessionError>> + Send;

    /// Whether this backend and engine can checkpoint a sandbox's processes and memory and
    /// restore them into a new sandbox (a real probe: rootful Podman with runc and a CRIU whose
    /// `criu check` passes): `Ok(())`, or why not, naming the engine, runtime or CRIU version
    /// that would do it.
    fn memory_support(&self) -> impl Future<Output = Result<(), String>> + Send;

    /// Checkpoints the running sandbox's processes and memory, with its writable layer, tmpfs
    /// mounts and volumes, into the archive `file` (`podman container checkpoint
    /// --leave-running --export`); the sandbox keeps running.
    fn checkpoint(
        &self,
        sandbox: &Sandbox,
        file: &Path,
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Restores the checkpoint archive `file` as a new running sandbox named `name` (`podman
    /// container restore --import --name`): its processes go on where they were, confined as
    /// the checkpointed sandbox was (the archive holds its configuration).
    fn restore_checkpoint(
        &self,
        file: &Path,
        name: &str,
    ) -> impl Future<Output = Result<Sandbox, SessionError>> + Send;

    // ---- End of the snapshot operations.

    /// Runs a command and returns its exit code and captured output.
    fn exec_output(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
    ) -> impl Future<Output = Result<ExecOutput, SessionError>> + Send {
        async move {
            let mut captured = Captured::default();
            let exit_code = self.exec(sandbox, request, &mut captured).await?;
            Ok(ExecOutput {
                exit_code,
                stdout: captured.stdout,
                stderr: captured.stderr,
            })
        }
    }

    /// Where `port`/`protocol` of the sandbox is reachable from the host
    /// ([`target::endpoint`]).
    fn endpoint(
        &self,
        sandbox: &Sandbox,
        port: u16,
        protocol: Protocol,
    ) -> impl Future<Output = Result<Endpoint, SessionError>> + Send {
        async move {
            let inspect = self.inspect(sandbox).await?;
            target::endpoint(&inspect, sandbox, port, protocol)
        }
    }

    /// Every reachable endpoint of the sandbox's published and exposed ports.
    fn endpoints(
        &self,
        sandbox: &Sandbox,
    ) -> impl Future<Output = Result<Vec<Endpoint>, SessionError>> + Send {
        async move {
            let inspect = self.inspect(sandbox).await?;
            Ok(target::endpoints(&inspect, sandbox))
        }
    }

    // ---- Warm pools (issue 22): the primitives `crate::pool` is written over. ----

    /// Renames the container named `from.name` to `to`, by name (not ID), so that of two
    /// renames of one name only the first succeeds: `Ok(None)` when no container has that name
    /// any more (another claim took it); an error when `to` is taken.
    fn rename(
        &self,
        from: &Sandbox,
        to: &str,
    ) -> impl Future<Output = Result<Option<Sandbox>, SessionError>> + Send;

    /// agentc's containers in any state that carry `label` (`KEY`, or `KEY=VALUE`).
    fn list_labelled(
        &self,
        label: &str,
    ) -> impl Future<Output = Result<Vec<Listed>, SessionError>> + Send;

    /// The ID, entrypoint and command of a local image ([`crate::ExecError::ImageMissing`]
    /// when it is not there).
    fn image_facts(
        &self,
        image: &str,
    ) -> impl Future<Output = Result<ImageFacts, SessionError>> + Send;

    /// Removes the egress companions of the workload that was named `workload` (the proxy,
    /// isolated network and CA and audit volumes labelled `io.agentc.egress-for=WORKLOAD`; the
    /// workload must be gone) and returns what it removed.
    fn remove_companions(
        &self,
        workload: &str,
    ) -> impl Future<Output = Result<Vec<String>, SessionError>> + Send;

    // ---- end of the warm pools' primitives ----

    /// Stops the processes of an exec whose environment holds `EXEC_TAG_VAR=tag` (and their
    /// children, which inherit it): SIGTERM, then SIGKILL a second later. Run as `user`, the
    /// user the exec ran as. Needs `sh` in the image.
    fn stop_tagged(
        &self,
        sandbox: &Sandbox,
        tag: &str,
        user: Option<&str>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send {
        let mut request = ExecRequest::new([
            "sh".to_string(),
            "-c".to_string(),
            STOP_TAGGED_SCRIPT.to_string(),
            "sh".to_string(),
            format!("{EXEC_TAG_VAR}={tag}"),
        ]);
        request.user = user.map(str::to_string);
        async move {
            let output = self.exec_output(sandbox, &request).await?;
            if output.exit_code == 0 {
                Ok(())
            } else {
                Err(SessionError::CopyFailed {
                    name: sandbox.name.clone(),
                    path: "/proc".to_string(),
                    message: format!(
                        "could not stop the interrupted command: {}",
                        String::from_utf8_lossy(&output.stderr).trim()
                    ),
                })
            }
        }
    }
}

/// Signals every process whose environment holds `$1` (`AGENTC_EXEC=TAG`), TERM then KILL.
const STOP_TAGGED_SCRIPT: &str = "tagged() { for p in /proc/[0-9]*; do [ \"${p#/proc/}\" = \"$$\" ] && continue; tr '\\000' '\\n' < \"$p/environ\" 2>/dev/null | grep -qxF \"$1\" && echo \"${p#/proc/}\"; done; }; pids=$(tagged \"$1\"); [ -z \"$pids\" ] && exit 0; kill -TERM $pids 2>/dev/null; for i in 1 2 3 4 5 6 7 8 9 10; do pids=$(tagged \"$1\"); [ -z \"$pids\" ] && exit 0; sleep 0.1; done; kill -KILL $pids 2>/dev/null; exit 0";

/// A name for a sandbox of a launch that names none: `agentc-session-PROFILE-PID-N`, unique
/// in this process. A caller resolves the session's spec with it
/// (`Instance { start: Start::Session, default_name: Some(session_name(PROFILE)), .. }`).
pub fn session_name(profile: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "agentc-session-{profile}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Creates a sandbox of `spec`, resolved from `loaded` ([`SandboxClient::create`]), with the
/// launch's findings, so a library caller sees what `agentc run` would warn of.
pub async fn create_with_findings<C: SandboxClient>(
    client: &C,
    loaded: &agentc_policy::LoadedProfile,
    spec: &LaunchSpec,
) -> Result<Created, SessionError> {
    let findings = agentc_policy::findings(loaded, spec);
    let sandbox = client.create(spec).await?;
    Ok(Created { sandbox, findings })
}

/// `report`, the removal of `sandbox`'s container, completed with the removal of its egress
/// companions ([`SandboxClient::remove_companions`]) once the container is gone: those of
/// `launched_as`, the name it was launched with (a claimed pool member has been renamed
/// since). What cannot be removed is added to what is left. For [`SandboxClient::delete`].
pub async fn remove_companions_after<C: SandboxClient>(
    client: &C,
    sandbox: &Sandbox,
    launched_as: &str,
    mut report: DeleteReport,
) -> DeleteReport {
    if report.left.is_empty() {
        if let Err(error) = client.remove_companions(launched_as).await {
            let name = if launched_as == sandbox.name {
                sandbox.name.clone()
            } else {
                format!("{} (launched as {launched_as})", sandbox.name)
            };
            report.left.push(format!(
                "the egress companion of {name}: {}",
                error.with_hint()
            ));
        }
    }
    report
}

/// The container launch a session creates from `spec`, exactly as resolved: a session's
/// spec starts in the background, named, kept after it exits and without stdin
/// ([`agentc_policy::Start::Session`]), so its `io.agentc.spec-digest` label is the one
/// `resolve` computed. Any other spec, and a build, is refused: nothing edits a spec after
/// `resolve`.
pub fn session_spec(spec: &LaunchSpec) -> Result<agentc_policy::ContainerSpec, SessionError> {
    const HINT: &str = "resolve the launch with `instance: Instance { start: Start::Session, \
                        default_name: Some(session_name(PROFILE)), ..Instance::default() }`";
    let agentc_policy::Action::Container(container) = &spec.action else {
        return Err(SessionError::invalid(
            format!(
                "profile {}: a build launch starts no container",
                spec.profile
            ),
            "create a session from a run or sandbox launch",
        ));
    };
    let problem = if !container.detach {
        Some("starts attached")
    } else if container.auto_remove {
        Some("is removed when it exits")
    } else if container.interactive {
        Some("keeps stdin open")
    } else if container.name.is_none() {
        Some("has no name")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(SessionError::invalid(
            format!(
                "profile {}: the {} launch {problem}, so it is not a session's",
                spec.profile,
                spec.kind.as_str()
            ),
            HINT,
        )),
        None => Ok((**container).clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_policy::Hinted;
    use agentc_policy::{Action, ContainerSpec, LaunchKind};

    fn spec(container: ContainerSpec) -> LaunchSpec {
        LaunchSpec {
            kind: LaunchKind::Run,
            profile: "p".into(),
            action: Action::Container(Box::new(container)),
            origins: Default::default(),
        }
    }

    /// Regression: `session_spec` made any launch detached and named and recomputed its
    /// digest by hand, so a session's sandbox carried a digest `resolve` never printed. It now
    /// takes a session's spec as resolved, and refuses any other.
    #[test]
    fn a_session_takes_its_spec_as_resolved_and_refuses_any_other() {
        let mut session = ContainerSpec::empty("img:1");
        session.detach = true;
        session.name = Some("agentc-session-p-1-1".into());
        session
            .labels
            .insert(agentc_policy::LABEL_SPEC_DIGEST.into(), "d".repeat(64));
        assert_eq!(session_spec(&spec(session.clone())).unwrap(), session);
        let cases = [
            (
                "starts attached",
                ContainerSpec {
                    detach: false,
                    ..session.clone()
                },
            ),
            (
                "is removed when it exits",
                ContainerSpec {
                    auto_remove: true,
                    ..session.clone()
                },
            ),
            (
                "keeps stdin open",
                ContainerSpec {
                    interactive: true,
                    ..session.clone()
                },
            ),
            (
                "has no name",
                ContainerSpec {
                    name: None,
                    ..session.clone()
                },
            ),
        ];
        for (problem, container) in cases {
            let error = session_spec(&spec(container))
                .unwrap_err()
                .with_hint()
                .to_string();
            assert!(error.contains(problem), "{problem}: {error}");
            assert!(error.contains("Start::Session"), "{error}");
        }
    }
}
