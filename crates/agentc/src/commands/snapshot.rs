//! `agentc pause`, `resume`, `snapshot` (and `snapshot ls`, `snapshot rm`), `restore` and
//! `fork`: short chains of [`agentc_engine::snapshot`] calls over either backend's
//! [`SandboxClient`](agentc_engine::session::SandboxClient). A restore is the library's
//! ([`agentc_host::restore`]), printed by `restore.rs`.

use std::path::{Path, PathBuf};

use agentc_engine::session::{Sandboxes, SessionPort};
use agentc_engine::snapshot::{self, Freeze, SnapshotRecord};

use crate::cli::{
    BackendArg, KindArg, LaunchArgs, PauseArgs, PsFormat, SnapshotArgs, SnapshotCommand, TakeArgs,
};
use crate::commands::session::sandbox_named;
pub(crate) use crate::commands::session::{on_client, OnClient};
use crate::context::Failure;

pub(crate) use agentc_host::snapshots::{archive_dir, snapshot_failure as failure, take};

/// The probe of memory snapshots on this engine and backend: their refusal (exit 65, naming
/// what would do them) where it fails.
pub(crate) struct MemorySupport;

impl OnClient for MemorySupport {
    type Output = ();
    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<(), Failure> {
        snapshot::memory::support(client).await.map_err(failure)
    }
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
        Some(SnapshotCommand::Ls(crate::cli::Sub(ls))) => {
            on_client(ls.target.backend, List(ls.format))
        }
        Some(SnapshotCommand::Rm(crate::cli::Sub(rm))) => {
            on_client(rm.target.backend, Remove(rm.names))
        }
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
    print!("{}", crate::table::table(header, &rows));
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
