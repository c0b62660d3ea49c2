//! `agentc restore` and `agentc fork`: for each new sandbox, the library's
//! [`prepare`](snapshot::prepare) (archives checked, a free name, the volumes the launch will
//! create), then `agentc run --detach`'s own launch ([`launch::execute`]) of the snapshot's
//! profile with the snapshot's image (hardening, egress companion and fresh placeholders as the
//! profile says), then [`put_back`](snapshot::put_back). A failed put-back removes the new
//! sandbox and the volumes its launch created.
//!
//! `--name N` names them as `agentc run --name N` (and with `--count`) does: N, or a fork's
//! N-1 to N-COUNT, each with its egress companion named after it. Every name asked for is
//! checked before anything is created; one in use is refused (exit 125, as run's launch is).

use std::path::Path;

use agentc_backend_api::RemoveTarget;
use agentc_engine::session::{SandboxClient, SessionError};
use agentc_engine::session::{Sandboxes, SessionPort};
use agentc_engine::snapshot::{self, RestorePlan, SnapshotRecord};
use agentc_engine::ExecError;
use agentc_policy::{Instance, LaunchSpec, LoadedProfile, Start};

use super::snapshot::{
    archive_dir, container, failure, launch_args, on_client, MemorySupport, OnClient,
};
use crate::cli::{BackendArg, LaunchArgs, RestoreArgs};
use crate::commands::launch;
use crate::commands::session::session_failure;
use crate::context::{self, Failure, EXIT_DOCKER, EXIT_FAILED};

/// The snapshot `name`.
struct Find(String);

impl OnClient for Find {
    type Output = SnapshotRecord;
    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<SnapshotRecord, Failure> {
        snapshot::find(client, &self.0).await.map_err(failure)
    }
}

/// The refusal of the names asked for (`--name`) that a container already has.
fn in_use(names: &[String]) -> Failure {
    Failure::new(
        EXIT_DOCKER,
        format!(
            "the container name{} {} {} already in use\n  hint: `agentc ps --all` lists \
             agentc's containers and `agentc rm NAME` removes one; or restore under another \
             --name",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
        ),
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

/// The names asked for (`--name`), each refused when a container has it: all of them checked
/// before the first sandbox is created, all the taken ones named at once.
struct Free(Vec<String>);

impl OnClient for Free {
    type Output = ();
    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<(), Failure> {
        let mut in_use_now = Vec::new();
        for name in self.0 {
            if taken(client, &name).await? {
                in_use_now.push(name);
            }
        }
        if in_use_now.is_empty() {
            Ok(())
        } else {
            Err(in_use(&in_use_now))
        }
    }
}

/// The next restored sandbox: its launch under the copy number `next` (the first free one
/// from it, or exactly it when the name was `asked` for), and what [`snapshot::prepare`]
/// found.
struct Prepare<'a> {
    record: &'a SnapshotRecord,
    dir: &'a Path,
    loaded: &'a LoadedProfile,
    args: &'a LaunchArgs,
    instance: &'a dyn Fn(u16) -> Instance,
    next: &'a mut u16,
    asked: bool,
}

impl OnClient for Prepare<'_> {
    type Output = (LaunchSpec, RestorePlan);
    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Self::Output, Failure> {
        let spec = loop {
            let copy = *self.next;
            *self.next = copy.checked_add(1).ok_or_else(|| {
                Failure::new(EXIT_FAILED, "no free name for the restored sandbox")
            })?;
            let spec = context::resolve_instance(self.loaded, self.args, (self.instance)(copy))?;
            let name = container(&spec)?.name.clone().unwrap_or_default();
            if self.asked {
                // Checked before the first restore; taken since, it is refused all the same.
                if taken(client, &name).await? {
                    return Err(in_use(&[name]));
                }
                break spec;
            }
            match client.find(&name).await {
                Err(SessionError::Launch(ExecError::NoSuchContainer { .. })) => break spec,
                Err(SessionError::BadName { .. }) => {
                    return Err(session_failure(SessionError::BadName { name }))
                }
                _ => continue,
            }
        };
        let plan = snapshot::prepare(client, self.record, self.dir, container(&spec)?)
            .await
            .map_err(failure)?;
        Ok((spec, plan))
    }
}

/// The snapshot's contents put back into the restored sandbox `name`.
struct PutBack<'a> {
    record: &'a SnapshotRecord,
    dir: &'a Path,
    spec: &'a LaunchSpec,
    plan: &'a RestorePlan,
}

impl OnClient for PutBack<'_> {
    type Output = snapshot::RestoreReport;
    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Self::Output, Failure> {
        let container = container(self.spec)?;
        let name = container.name.clone().unwrap_or_default();
        let sandbox = client.find(&name).await.map_err(session_failure)?;
        snapshot::put_back(
            client,
            &sandbox,
            self.record,
            self.dir,
            container,
            self.plan,
        )
        .await
        .map_err(failure)
    }
}

/// A memory snapshot restored as the sandbox `name`: the milliseconds it took.
struct MemoryRestore<'a> {
    record: &'a SnapshotRecord,
    dir: &'a Path,
    name: &'a str,
}

impl OnClient for MemoryRestore<'_> {
    type Output = u128;
    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u128, Failure> {
        let started = std::time::Instant::now();
        snapshot::restore_memory(client, self.record, self.dir, self.name)
            .await
            .map_err(failure)?;
        Ok(started.elapsed().as_millis())
    }
}

/// Removes a restored sandbox whose contents could not be put back, with the volumes its
/// launch created; says what is left.
fn discard(name: &str, plan: &RestorePlan, backend: BackendArg) {
    let Ok(runtime) = launch::runtime() else {
        return;
    };
    let reached: Result<(), Failure> = runtime.block_on(async {
        launch::over_port!(backend, None, |port| {
            let target = RemoveTarget::Names(vec![name.to_string()]);
            if let Err(error) = agentc_engine::admin::remove(&port, &target).await {
                eprintln!("agentc: could not remove {name}: {error}");
            }
            let volumes: Vec<String> = plan.fresh_volumes.iter().cloned().collect();
            if let Err(error) = agentc_engine::admin::remove_volumes(&port, &volumes, true).await {
                eprintln!("agentc: could not remove the volumes of {name}: {error}");
            }
            Ok(())
        })
    });
    if reached.is_err() {
        eprintln!("agentc: could not remove {name}\n  hint: `agentc rm {name}` removes it");
    }
}

/// The volume an agent preset's `container` mounts as its home (`None` for a custom sandbox).
fn shared_home<'a>(
    loaded: &LoadedProfile,
    container: &'a agentc_policy::ContainerSpec,
) -> Option<&'a str> {
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

pub(crate) use agentc_host::snapshots::snapshot_profile;

/// Runs `agentc restore` and `agentc fork`.
pub fn restore(args: RestoreArgs, count: u16) -> Result<u8, Failure> {
    let backend = super::snapshot::memory_backend(args.target.backend, args.memory);
    let record = find_snapshot(backend, &args)?;
    let (file, loaded) = snapshot_profile(&record)?;
    let dir = archive_dir(&record.reference)?;
    let args_of = launch_args(
        &file,
        args.workspace.clone(),
        Some(record.reference.clone()),
    );
    let profile_record = context::profile_record(&file);
    let default_name = format!("agentc-restore-{}", record.profile);
    // Without --name, a copy's name (`NAME-N`); with it, N alone or, for several, N-1 to
    // N-COUNT, as `agentc run --name N [--count K]` names them.
    let asked = args.name.is_some();
    let instance = |copy: u16| Instance {
        start: Start::Detached,
        default_name: Some(default_name.clone()),
        name: args.name.clone(),
        copy: (!asked || count > 1).then_some(copy),
        stdin_is_terminal: false,
        profile_record: profile_record.clone(),
        own_home: !args.share_home,
        floor: None,
    };
    if asked {
        let names = (1..=count)
            .map(|copy| {
                let spec = context::resolve_instance(&loaded, &args_of, instance(copy))?;
                Ok(container(&spec)?.name.clone().unwrap_or_default())
            })
            .collect::<Result<Vec<_>, Failure>>()?;
        on_client(backend, Free(names))?;
    }
    let mut next = 1;
    for _ in 0..count {
        let (spec, plan) = on_client(
            backend,
            Prepare {
                record: &record,
                dir: &dir,
                loaded: &loaded,
                args: &args_of,
                instance: &instance,
                next: &mut next,
                asked,
            },
        )?;
        let name = container(&spec)?.name.clone().unwrap_or_default();
        if args.share_home {
            warn_shared_home(&loaded, &spec, &name)?;
        }
        if args.memory {
            restore_memory(backend, &record, &dir, &name)?;
        } else {
            start_and_put_back(backend, &record, &dir, &spec, &plan, &name)?;
        }
    }
    Ok(0)
}

/// The snapshot `--snapshot` names; with `--memory`, refused unless the engine can restore
/// memory and the snapshot holds it.
fn find_snapshot(backend: BackendArg, args: &RestoreArgs) -> Result<SnapshotRecord, Failure> {
    if args.memory {
        on_client(backend, MemorySupport)?;
    }
    let record = on_client(backend, Find(args.snapshot.clone()))?;
    if args.memory {
        snapshot::memory::memory_of(&record).map_err(failure)?;
    }
    Ok(record)
}

/// Says on stderr that the restored sandbox `name` mounts the profile's home volume, shared
/// with its other sandboxes (`--share-home`), when it does.
fn warn_shared_home(loaded: &LoadedProfile, spec: &LaunchSpec, name: &str) -> Result<(), Failure> {
    if let Some(volume) = shared_home(loaded, container(spec)?) {
        eprintln!(
            "agentc: {name} mounts the profile's home volume {volume}, shared with its \
             other sandboxes (--share-home)"
        );
    }
    Ok(())
}

/// Restores a memory snapshot as the sandbox `name` and says how long it took.
fn restore_memory(
    backend: BackendArg,
    record: &SnapshotRecord,
    dir: &Path,
    name: &str,
) -> Result<(), Failure> {
    let restore = MemoryRestore { record, dir, name };
    let took = on_client(backend, restore)?;
    println!(
        "restored {name} from {} with its memory in {} ms",
        record.name, took
    );
    Ok(())
}

/// Launches the restored sandbox `name` and puts the snapshot's contents back into it; on
/// either failing, removes it with the volumes its launch created.
fn start_and_put_back(
    backend: BackendArg,
    record: &SnapshotRecord,
    dir: &Path,
    spec: &LaunchSpec,
    plan: &RestorePlan,
    name: &str,
) -> Result<(), Failure> {
    let code = launch::execute(spec, backend, false)?;
    if code != 0 {
        discard(name, plan, backend);
        return Err(Failure::new(
            code,
            format!("the restored sandbox {name} did not start"),
        ));
    }
    let put = PutBack {
        record,
        dir,
        spec,
        plan,
    };
    match on_client(backend, put) {
        Ok(report) => {
            println!(
                "restored {name} from {}: {} path(s), {} bytes",
                record.name,
                report.restored.len(),
                report.bytes
            );
            for kept in report.kept {
                eprintln!("agentc: {kept}");
            }
            Ok(())
        }
        Err(failure) => {
            discard(name, plan, backend);
            Err(failure)
        }
    }
}
