//! `agentc pause`, `resume`, `snapshot` (and `snapshot ls`, `snapshot rm`), `restore` and
//! `fork`: short chains of [`agentc_engine::snapshot`] calls over either backend's
//! [`SandboxClient`]. A restore is `agentc run --detach`'s own launch
//! ([`launch::execute`]) of the snapshot's profile with the snapshot's image, between the
//! library's [`prepare`](snapshot::prepare) and [`put_back`](snapshot::put_back).

use std::path::{Path, PathBuf};

use agentc_engine::session::{Sandbox, SandboxClient};
use agentc_engine::session::{Sandboxes, SessionPort};
use agentc_engine::snapshot::{self, Freeze, SnapshotError, SnapshotRecord};
use agentc_policy::{ContainerSpec, EnvValue, Instance, LaunchSpec, Start};

use crate::cli::{
    BackendArg, KindArg, LaunchArgs, PauseArgs, PsFormat, SnapshotArgs, SnapshotCommand, TakeArgs,
};
use crate::commands::launch;
use crate::commands::session::sandbox_named;
pub(crate) use crate::commands::session::{on_client, OnClient};
use crate::context::{self, Failure, EXIT_DOCKER, EXIT_FAILED};
use crate::lifecycle::store::state_dir;

/// A snapshot error, with its exit status ([`SnapshotError::exit_code`]).
pub(crate) fn failure(error: impl Into<SnapshotError>) -> Failure {
    let error = error.into();
    Failure::new(
        u8::try_from(error.exit_code()).unwrap_or(EXIT_DOCKER),
        error.to_string(),
    )
}

/// The probe of memory snapshots on this engine and backend: their refusal (exit 65, naming
/// what would do them) where it fails.
pub(crate) struct MemorySupport;

impl OnClient for MemorySupport {
    type Output = ();
    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<(), Failure> {
        snapshot::memory::support(client).await.map_err(failure)
    }
}

/// Where a snapshot's archives are kept: `STATE/snapshots/NAME/TAG`, for the image reference
/// `agentc-snapshot/NAME:TAG`.
pub(crate) fn archive_dir(reference: &str) -> Result<PathBuf, Failure> {
    let rest = reference
        .strip_prefix(&format!("{}/", snapshot::REPOSITORY))
        .unwrap_or(reference);
    let (name, tag) = rest.rsplit_once(':').unwrap_or((rest, "latest"));
    Ok(state_dir()?.join("snapshots").join(name).join(tag))
}

struct Pause {
    args: PauseArgs,
    thaw: bool,
}

impl OnClient for Pause {
    type Output = u8;
    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        let mut sandboxes = Vec::new();
        for name in &self.args.names {
            sandboxes.push(sandbox_named(client, name, true).await?);
        }
        for sandbox in sandboxes {
            let done = if self.thaw {
                snapshot::resume(client, &sandbox).await
            } else {
                snapshot::pause(client, &sandbox).await
            }
            .map_err(failure)?;
            let (did, already) = if self.thaw {
                ("resumed", "not paused")
            } else {
                ("paused", "already paused")
            };
            match done {
                Freeze::Done => println!("{did} {}", sandbox.name),
                Freeze::Already => println!("{} {already}", sandbox.name),
            }
        }
        Ok(0)
    }
}

/// Runs `agentc pause` (`thaw`: `agentc resume`).
pub fn pause(args: PauseArgs, thaw: bool) -> Result<u8, Failure> {
    on_client(args.target.backend, Pause { args, thaw })
}

/// Runs `agentc snapshot`, `snapshot ls` and `snapshot rm`.
pub fn snapshot(args: SnapshotArgs) -> Result<u8, Failure> {
    match args.command {
        Some(SnapshotCommand::Ls(ls)) => on_client(ls.target.backend, List(ls.format)),
        Some(SnapshotCommand::Rm(rm)) => on_client(rm.target.backend, Remove(rm.names)),
        None => on_client(
            memory_backend(args.take.target.backend, args.take.memory),
            Take(args.take),
        ),
    }
}

/// The backend of a snapshot or restore: `--backend auto` with `--memory` is the command
/// line, the only one that checkpoints and restores a sandbox's memory.
pub(crate) fn memory_backend(backend: BackendArg, memory: bool) -> BackendArg {
    match backend {
        BackendArg::Auto if memory => BackendArg::Cli,
        other => other,
    }
}

/// The run launch (a custom profile's sandbox) of the profile file `profile`, with `workspace`
/// and `image` and nothing else: a snapshot's restore, `agentc serve`'s, and `verify`'s.
pub(crate) fn launch_args(
    profile: &Path,
    workspace: Option<PathBuf>,
    image: Option<String>,
) -> LaunchArgs {
    LaunchArgs {
        profile: profile.to_path_buf(),
        kind: KindArg::Run,
        workspace,
        image,
        seed_target: None,
        agent_args: Vec::new(),
        overrides: Default::default(),
        build_args: Default::default(),
    }
}

/// The container launch of a resolved spec.
pub(crate) fn container(spec: &LaunchSpec) -> Result<&ContainerSpec, Failure> {
    launch::container_of(spec)
}

struct Take(TakeArgs);

impl OnClient for Take {
    type Output = u8;
    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        let args = self.0;
        if args.memory {
            MemorySupport.run(client).await?;
        }
        let name = args.name.unwrap_or_default();
        let sandbox = sandbox_named(client, &name, false).await?;
        let taken = take(client, &sandbox, args.tag, args.allow_secrets, args.memory).await?;
        let report = taken.report;
        let bytes: u64 = report.archives.iter().map(|archive| archive.bytes).sum();
        let id = report.image_id.trim_start_matches("sha256:");
        println!(
            "snapshot {} ({}): the writable layer and {} archive(s) of {bytes} bytes{}; \
             paused {} ms",
            report.name,
            id.get(..12).unwrap_or(id),
            report.archives.len(),
            taken.memory,
            report.paused_for.as_millis()
        );
        Ok(0)
    }
}

/// What [`take`] made: the snapshot, and with a memory checkpoint, a phrase saying so.
pub(crate) struct Taken {
    /// The snapshot of the files.
    pub(crate) report: snapshot::SnapshotReport,
    /// ` and a memory checkpoint of N bytes (M ms)`, or empty.
    pub(crate) memory: String,
}

/// Snapshots `sandbox` (`agentc snapshot`, `agentc serve`'s `snapshot`): refused for a sandbox
/// that records no profile file; the launch's secrets as its profile resolves them now (by
/// name); the tag given or the time; with `memory`, a checkpoint too.
pub(crate) async fn take<P: SessionPort>(
    client: &Sandboxes<P>,
    sandbox: &Sandbox,
    tag: Option<String>,
    allow_secrets: bool,
    memory: bool,
) -> Result<Taken, Failure> {
    let secrets = launch_secrets(client, sandbox).await?;
    let (time, default_tag) = snapshot::now();
    let tag = tag.unwrap_or(default_tag);
    if snapshot::check_tag(&tag).is_none() {
        return Err(Failure::usage(format!(
            "--tag {tag:?} is not an image tag\n  hint: 1 to 128 letters, digits, `_`, `.` \
             and `-`, not starting with `.` or `-`"
        )));
    }
    let reference = format!("{}:{tag}", snapshot::repository(&sandbox.profile));
    let request = snapshot::SnapshotRequest {
        tag,
        dir: archive_dir(&reference)?,
        secrets,
        allow_secrets,
        time,
        labels: Default::default(),
    };
    if memory {
        let taken = snapshot::snapshot_memory(client, sandbox, &request)
            .await
            .map_err(failure)?;
        let memory = format!(
            " and a memory checkpoint of {} bytes ({} ms)",
            taken.memory.bytes,
            taken.checkpoint.as_millis()
        );
        return Ok(Taken {
            report: taken.files,
            memory,
        });
    }
    let report = snapshot::snapshot(client, sandbox, &request)
        .await
        .map_err(failure)?;
    Ok(Taken {
        report,
        memory: String::new(),
    })
}

/// The names of the secrets of `sandbox`'s launch, as the profile file it records resolves
/// them now (names only); refused for a sandbox that records no profile file.
async fn launch_secrets<P: SessionPort>(
    client: &Sandboxes<P>,
    sandbox: &Sandbox,
) -> Result<Vec<String>, Failure> {
    let inspect = client
        .inspect(sandbox)
        .await
        .map_err(crate::commands::session::session_failure)?;
    let labels = inspect
        .config
        .as_ref()
        .and_then(|config| config.labels.clone())
        .unwrap_or_default();
    let Some(profile_file) = labels.get(agentc_policy::LABEL_PROFILE_FILE) else {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "refusing to snapshot {}: it records no profile file, which a restore \
                 launches from\n  hint: snapshot a sandbox started by `agentc run` (or created \
                 from a profile file)",
                sandbox.name
            ),
        ));
    };
    // The launch's secrets, as its profile resolves them now (by name only).
    let loaded = context::load_profile(Path::new(profile_file))?;
    let spec = context::resolve_instance(
        &loaded,
        &launch_args(Path::new(profile_file), None, None),
        Instance {
            start: Start::Detached,
            default_name: Some(sandbox.name.clone()),
            ..Instance::default()
        },
    )?;
    Ok(container(&spec)?
        .env
        .iter()
        .filter(|var| matches!(var.value, EnvValue::Secret { .. }))
        .map(|var| var.name.clone())
        .collect())
}

struct List(PsFormat);

impl OnClient for List {
    type Output = u8;
    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        let records = snapshot::list(client).await.map_err(failure)?;
        match self.0 {
            PsFormat::Json => {
                let text = serde_json::to_string_pretty(&records).unwrap_or_default();
                println!("{text}");
            }
            PsFormat::Table => print_table(&records),
        }
        Ok(0)
    }
}

/// `agentc snapshot ls`'s table.
fn print_table(records: &[SnapshotRecord]) {
    let header = [
        "NAME", "SOURCE", "PARENT", "CREATED", "IMAGE", "ARCHIVES", "SECRETS",
    ];
    let rows: Vec<[String; 7]> = records
        .iter()
        .map(|record| {
            let id = record.image_id.trim_start_matches("sha256:");
            [
                record.name.clone(),
                record.source.clone(),
                record.parent.clone().unwrap_or_else(|| "-".to_string()),
                record.time.clone(),
                format!("{} ({} B)", id.get(..12).unwrap_or(id), record.image_bytes),
                format!("{} ({} B)", record.archives.len(), record.archive_bytes()),
                record.secrets.clone(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let line = |cells: &[&str]| {
        let text: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:width$}"))
            .collect();
        println!("{}", text.join("  ").trim_end());
    };
    line(&header);
    for row in &rows {
        line(&row.each_ref().map(String::as_str));
    }
}

struct Remove(Vec<String>);

impl OnClient for Remove {
    type Output = u8;
    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        // Every name is found before anything is removed.
        let mut records = Vec::new();
        for name in &self.0 {
            records.push(snapshot::find(client, name).await.map_err(failure)?);
        }
        records.dedup_by(|a, b| a.image_id == b.image_id);
        for record in snapshot::children_first(records) {
            let dir = archive_dir(&record.reference)?;
            snapshot::remove(client, &record, &dir)
                .await
                .map_err(failure)?;
            println!("removed snapshot {}", record.name);
        }
        Ok(0)
    }
}
