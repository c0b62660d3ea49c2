//! The command line of pausing, snapshots, restores and forks.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::Sub;

use super::{PsFormat, SessionTarget};

/// `agentc pause` and `agentc resume`.
#[derive(Debug, Args)]
pub struct PauseArgs {
    /// The backend.
    #[command(flatten)]
    pub target: SessionTarget,
    /// Container names or IDs from `agentc ps`, profile files, or profiles' names.
    #[arg(required = true)]
    pub names: Vec<String>,
}

/// `agentc snapshot`: take one, or `ls` / `rm`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SnapshotArgs {
    /// `ls` or `rm`; without one, a snapshot of NAME is taken.
    #[command(subcommand)]
    pub command: Option<SnapshotCommand>,
    /// Take a snapshot.
    #[command(flatten)]
    pub take: TakeArgs,
}

/// `agentc snapshot NAME`.
#[derive(Debug, Args)]
pub struct TakeArgs {
    /// The backend.
    #[command(flatten)]
    pub target: SessionTarget,
    /// The snapshot's tag: it is named PROFILE:TAG [default: the time, YYYYMMDD-HHMMSS-MMM].
    #[arg(long, value_name = "T")]
    pub tag: Option<String>,
    /// Take it although the sandbox received secrets as environment values (recorded in the
    /// snapshot's labels).
    #[arg(long)]
    pub allow_secrets: bool,
    /// Also checkpoint the processes' memory (rootful Podman, runc, CRIU >= 4.1,
    /// `--backend cli`; refused elsewhere, exit 65).
    #[arg(long)]
    pub memory: bool,
    /// A container name or ID from `agentc ps`, a profile file, or a profile's name.
    #[arg(required = true)]
    pub name: Option<String>,
}

/// `agentc snapshot ls` and `agentc snapshot rm`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum SnapshotCommand {
    /// List the snapshots.
    Ls(Sub<SnapshotLsArgs>),
    /// Remove snapshots: their image and their archives.
    Rm(Sub<SnapshotRmArgs>),
}

/// `agentc snapshot ls`.
#[derive(Debug, Args)]
pub struct SnapshotLsArgs {
    /// The backend.
    #[command(flatten)]
    pub target: SessionTarget,
    /// Output format: `table`, or `json` (an array of objects, one per snapshot).
    #[arg(long, value_enum, default_value_t = PsFormat::Table)]
    pub format: PsFormat,
}

/// `agentc snapshot rm`.
#[derive(Debug, Args)]
pub struct SnapshotRmArgs {
    /// The backend.
    #[command(flatten)]
    pub target: SessionTarget,
    /// Snapshot names (PROFILE:TAG) from `agentc snapshot ls`.
    #[arg(required = true)]
    pub names: Vec<String>,
}

/// `agentc restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The backend.
    #[command(flatten)]
    pub target: SessionTarget,
    /// The workspace directory mounted into the sandbox [default: the current directory].
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Restore the processes' memory from a `--memory` snapshot (rootful Podman, runc,
    /// CRIU >= 4.1, `--backend cli`; refused elsewhere, exit 65).
    #[arg(long)]
    pub memory: bool,
    /// Name the sandbox N, as `agentc run --name N` does (its egress companion becomes N-egress
    /// and N-egress-proxy; a fork's sandboxes are N-1 to N-COUNT, as `run --count`'s copies).
    /// A name in use is refused before anything is created (exit 125), as is one that is no DNS
    /// label behind the egress proxy (exit 65: at most 63 characters with a copy's -K, no dots).
    #[arg(long, value_name = "N")]
    pub name: Option<String>,
    /// Mount the profile's home volume, shared with its other sandboxes and kept as it is,
    /// instead of a home of the sandbox's own (`NAME-home`, filled from the snapshot and
    /// removed with the sandbox).
    #[arg(long)]
    pub share_home: bool,
    /// A snapshot name (PROFILE:TAG) from `agentc snapshot ls`.
    pub snapshot: String,
}

/// `agentc fork`.
#[derive(Debug, Args)]
pub struct ForkArgs {
    /// What to restore.
    #[command(flatten)]
    pub restore: RestoreArgs,
    /// How many sandboxes, each restored from the snapshot and diverging on its own.
    #[arg(long, short = 'n', default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub count: u16,
}
