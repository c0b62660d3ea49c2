//! `agentc restore` and `agentc fork`, for the command line and library callers alike: COUNT
//! new sandboxes from a snapshot, each the snapshot's profile launched as `agentc run --detach`
//! launches it ([`Launcher::launch_on`]: hardening, egress companion and fresh placeholders as
//! the profile says) with the snapshot's image, between the engine crate's
//! [`prepare`](snapshot::prepare) (archives checked, a free name, the volumes the launch will
//! create) and [`put_back`](snapshot::put_back); or, with `memory`, the snapshot's memory
//! restored as a new sandbox. All of it is one [`Restore`] step over one engine port. A
//! sandbox whose launch or put-back fails is removed with the volumes its launch created.
//!
//! `name` names them as `agentc run --name N` (and with `--count`) does: N, or a fork's N-1
//! to N-COUNT, each with its egress companion named after it. Every name asked for is checked
//! before anything is created; one in use is refused (exit 125, as run's launch is). Without a
//! name, each takes the first free `agentc-restore-PROFILE-N`.

use std::path::PathBuf;

use agentc_engine::admin::{self, RemoveTarget};
use agentc_engine::session::{SandboxClient, Sandboxes, SessionError, SessionPort};
use agentc_engine::snapshot::{self, RestorePlan, RestoreReport, SnapshotRecord};
use agentc_engine::ExecError;
use agentc_policy::Hinted;
use agentc_policy::{ContainerSpec, Instance, LaunchSpec, LoadedProfile, Start};

use crate::backend::{reap, session_failure, OnClient};
use crate::launch::{Launcher, Outcome, StartedSandbox};
use crate::snapshots::{archive_dir, snapshot_failure, snapshot_profile};
use crate::{container_of, profile_record, resolve_instance, Failure, LaunchRequest};
use crate::{EXIT_DOCKER, EXIT_FAILED};

/// What a restore says as it goes, in order, for each new sandbox.
#[derive(Debug)]
pub enum RestoreEvent<'a> {
    /// A line for the caller's log (the pull of an image, the runtime chosen, a shared home,
    /// what a put-back kept, a removal that failed).
    Note(&'a str),
    /// A restored sandbox started, and where it can be reached.
    Started(&'a StartedSandbox),
    /// The snapshot's contents are back in the sandbox `name`.
    PutBack {
        /// The sandbox.
        name: &'a str,
        /// The snapshot's name.
        snapshot: &'a str,
        /// What was put back.
        report: &'a RestoreReport,
    },
    /// The snapshot's memory was restored as the sandbox `name`, in `millis` milliseconds.
    Memory {
        /// The sandbox.
        name: &'a str,
        /// The snapshot's name.
        snapshot: &'a str,
        /// How long the restore took.
        millis: u128,
    },
}

/// `agentc restore` (`count` 1) and `agentc fork`: `count` new sandboxes from the snapshot
/// `snapshot` ([`snapshot::find`]: a name or a reference), each event said to `events` as it
/// happens. Returns the names of the sandboxes made.
pub struct Restore<'a> {
    /// The snapshot's name or image reference.
    pub snapshot: String,
    /// How many sandboxes (`agentc fork --count`; 1 for a restore).
    pub count: u16,
    /// Their name (`--name`): N for one, N-1 to N-COUNT for several.
    pub name: Option<String>,
    /// The workspace the profile's launch mounts (`--workspace`); the launch's default
    /// without.
    pub workspace: Option<PathBuf>,
    /// Mount the profile's home volume, shared with its other sandboxes (`--share-home`),
    /// instead of a home of each sandbox's own.
    pub share_home: bool,
    /// Restore the snapshot's memory (`--memory`, the command line's backend only).
    pub memory: bool,
    /// The caller: its engine, environment, proxy executable.
    pub launcher: Launcher,
    /// Where each event goes.
    pub events: &'a mut (dyn FnMut(RestoreEvent<'_>) + Send),
}

/// What a restore works with: the snapshot, its archives, its profile and how it launches.
struct Source {
    record: SnapshotRecord,
    dir: PathBuf,
    loaded: LoadedProfile,
    request: LaunchRequest,
    file: PathBuf,
}

impl Restore<'_> {
    /// The launch of copy number `copy` (`NAME-COPY` without a name asked for).
    fn instance(&self, source: &Source, copy: u16) -> Instance {
        let asked = self.name.is_some();
        Instance {
            start: Start::Detached,
            default_name: Some(format!("agentc-restore-{}", source.record.profile)),
            name: self.name.clone(),
            copy: (!asked || self.count > 1).then_some(copy),
            stdin_is_terminal: false,
            profile_record: profile_record(&source.file),
            own_home: !self.share_home,
            floor: None,
        }
    }

    /// The launch of copy `copy`, and its container's name.
    fn resolve(&self, source: &Source, copy: u16) -> Result<(LaunchSpec, String), Failure> {
        let spec = resolve_instance(&source.loaded, &source.request, self.instance(source, copy))?;
        let name = container_of(&spec)?.name.clone().unwrap_or_default();
        Ok((spec, name))
    }

    /// The snapshot and what its restore launches; with `memory`, refused unless the engine
    /// can restore memory and the snapshot holds it.
    async fn source<P: SessionPort>(&self, client: &Sandboxes<P>) -> Result<Source, Failure> {
        if self.memory {
            snapshot::memory::support(client)
                .await
                .map_err(snapshot_failure)?;
        }
        let record = snapshot::find(client, &self.snapshot)
            .await
            .map_err(snapshot_failure)?;
        if self.memory {
            snapshot::memory::memory_of(&record).map_err(snapshot_failure)?;
        }
        let (file, loaded) = snapshot_profile(&record)?;
        let dir = archive_dir(&record.reference)?;
        let request = LaunchRequest {
            workspace: self.workspace.clone(),
            image: Some(record.reference.clone()),
            ..LaunchRequest::new(&file)
        };
        Ok(Source {
            record,
            dir,
            loaded,
            request,
            file,
        })
    }

    /// The next sandbox's launch under the copy number `next` (the first free one from it, or
    /// exactly it when the name was asked for), and what [`snapshot::prepare`] found.
    async fn prepare<P: SessionPort>(
        &self,
        client: &Sandboxes<P>,
        source: &Source,
        next: &mut u16,
    ) -> Result<(LaunchSpec, String, RestorePlan), Failure> {
        let (spec, name) = loop {
            let copy = *next;
            *next = copy.checked_add(1).ok_or_else(|| {
                Failure::new(EXIT_FAILED, "no free name for the restored sandbox")
            })?;
            let (spec, name) = self.resolve(source, copy)?;
            if self.name.is_some() {
                // Checked before the first restore; taken since, it is refused all the same.
                if taken(client, &name).await? {
                    return Err(in_use(&[name]));
                }
                break (spec, name);
            }
            match client.find(&name).await {
                Err(SessionError::Launch(ExecError::NoSuchContainer { .. })) => break (spec, name),
                Err(SessionError::BadName { .. }) => {
                    return Err(session_failure(SessionError::BadName { name }))
                }
                _ => continue,
            }
        };
        let plan = snapshot::prepare(client, &source.record, &source.dir, container_of(&spec)?)
            .await
            .map_err(snapshot_failure)?;
        Ok((spec, name, plan))
    }

    /// Launches the restored sandbox `name` as `agentc run --detach` does (its floor met over
    /// this port) and puts the snapshot's contents back into it; on either failing, removes it
    /// with the volumes its launch created.
    async fn launch_and_put_back<P: SessionPort>(
        &mut self,
        client: &Sandboxes<P>,
        source: &Source,
        spec: &LaunchSpec,
        name: &str,
        plan: &RestorePlan,
    ) -> Result<(), Failure> {
        let container = container_of(spec)?;
        self.launcher.check_host_ports(container, spec)?;
        let port = client.port();
        // The leftovers of a killed launch under this name go first, as `agentc run`'s do.
        reap(port, &self.launcher.env, Some(name), &self.launcher.reaped).await;
        // A launch that fails leaves nothing of itself.
        let outcome = self.launch(port, container, &spec.profile).await?;
        let Outcome::Started(started) = &outcome else {
            self.discard(client, name, plan).await;
            return Err(Failure::new(
                outcome.status(),
                format!("the restored sandbox {name} did not start"),
            ));
        };
        (self.events)(RestoreEvent::Started(started));
        let put = async {
            let sandbox = client.find(name).await.map_err(session_failure)?;
            snapshot::put_back(
                client,
                &sandbox,
                &source.record,
                &source.dir,
                container,
                plan,
            )
            .await
            .map_err(snapshot_failure)
        };
        match put.await {
            Ok(report) => {
                (self.events)(RestoreEvent::PutBack {
                    name,
                    snapshot: &source.record.name,
                    report: &report,
                });
                for kept in &report.kept {
                    (self.events)(RestoreEvent::Note(kept));
                }
                Ok(())
            }
            Err(failure) => {
                self.discard(client, name, plan).await;
                Err(failure)
            }
        }
    }

    /// The floor met over `port` and the container launched under it.
    async fn launch<P: agentc_engine::port::EnginePort>(
        &mut self,
        port: &P,
        container: &ContainerSpec,
        profile: &str,
    ) -> Result<Outcome, Failure> {
        let events = &mut *self.events;
        let mut notify = |line: &str| events(RestoreEvent::Note(line));
        let met = self
            .launcher
            .meet_floor_on(port, container, profile, &mut notify)
            .await?;
        self.launcher
            .launch_on(port, &met.container, false, &mut notify)
            .await
    }

    /// Removes a restored sandbox whose contents could not be put back, with the volumes its
    /// launch created; says what could not be removed.
    async fn discard<P: SessionPort>(
        &mut self,
        client: &Sandboxes<P>,
        name: &str,
        plan: &RestorePlan,
    ) {
        let port = client.port();
        let target = RemoveTarget::Names(vec![name.to_string()]);
        if let Err(error) = admin::remove(port, &target).await {
            (self.events)(RestoreEvent::Note(&format!(
                "could not remove {name}: {error}",
                error = error.with_hint()
            )));
        }
        let volumes: Vec<String> = plan.fresh_volumes.iter().cloned().collect();
        if let Err(error) = admin::remove_volumes(port, &volumes, true).await {
            (self.events)(RestoreEvent::Note(&format!(
                "could not remove the volumes of {name}: {error}",
                error = error.with_hint()
            )));
        }
    }

    /// Says that the restored sandbox `name` mounts the profile's home volume, shared with its
    /// other sandboxes (`share_home`), when it does.
    fn warn_shared_home(
        &mut self,
        loaded: &LoadedProfile,
        spec: &LaunchSpec,
        name: &str,
    ) -> Result<(), Failure> {
        if let Some(volume) = shared_home(loaded, container_of(spec)?) {
            (self.events)(RestoreEvent::Note(&format!(
                "{name} mounts the profile's home volume {volume}, shared with its other \
                 sandboxes (--share-home)"
            )));
        }
        Ok(())
    }
}

impl OnClient for Restore<'_> {
    type Output = Vec<String>;

    async fn run<P: SessionPort>(mut self, client: &Sandboxes<P>) -> Result<Vec<String>, Failure> {
        let source = self.source(client).await?;
        if self.name.is_some() {
            let mut in_use_now = Vec::new();
            for copy in 1..=self.count {
                let (_, name) = self.resolve(&source, copy)?;
                if taken(client, &name).await? {
                    in_use_now.push(name);
                }
            }
            if !in_use_now.is_empty() {
                return Err(in_use(&in_use_now));
            }
        }
        let mut made = Vec::new();
        let mut next = 1;
        for _ in 0..self.count {
            let (spec, name, plan) = self.prepare(client, &source, &mut next).await?;
            if self.share_home {
                self.warn_shared_home(&source.loaded, &spec, &name)?;
            }
            if self.memory {
                let started = std::time::Instant::now();
                snapshot::restore_memory(client, &source.record, &source.dir, &name)
                    .await
                    .map_err(snapshot_failure)?;
                let millis = started.elapsed().as_millis();
                (self.events)(RestoreEvent::Memory {
                    name: &name,
                    snapshot: &source.record.name,
                    millis,
                });
            } else {
                self.launch_and_put_back(client, &source, &spec, &name, &plan)
                    .await?;
            }
            made.push(name);
        }
        Ok(made)
    }
}

/// The refusal of the names asked for that a container already has.
fn in_use(names: &[String]) -> Failure {
    Failure::new(
        EXIT_DOCKER,
        format!(
            "the container name{} {} {} already in use",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
        ),
    )
    .hinted(
        "`agentc ps --all` lists agentc's containers and `agentc rm NAME` removes one; or \
         restore under another --name",
    )
}

/// Whether a container has the name `name` (one agentc did not create counts too).
async fn taken<C: SandboxClient>(client: &C, name: &str) -> Result<bool, Failure> {
    match client.find(name).await {
        Ok(_) | Err(SessionError::Launch(ExecError::NotAgentc { .. })) => Ok(true),
        Err(SessionError::Launch(ExecError::NoSuchContainer { .. })) => Ok(false),
        Err(error) => Err(session_failure(error)),
    }
}

/// The volume an agent preset's `container` mounts as its home (`None` for a custom sandbox).
fn shared_home<'a>(loaded: &LoadedProfile, container: &'a ContainerSpec) -> Option<&'a str> {
    let preset = agentc_policy::presets::preset(loaded.profile.agent)?;
    container
        .mounts
        .iter()
        .find_map(|mount| match &mount.source {
            agentc_policy::MountSource::Volume { name, .. } if mount.target == preset.home_path => {
                Some(name.as_str())
            }
            _ => None,
        })
}
