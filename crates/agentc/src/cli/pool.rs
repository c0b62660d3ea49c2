//! `agentc pool` (warm pools, issue 22) and `agentc run --pool`.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::Sub;

use super::BackendArg;

/// `agentc pool`: started, idle sandboxes of a profile that `agentc run` claims.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum PoolCommand {
    /// Start idle members until the profile's pool holds N (stale and orphaned ones removed
    /// first).
    #[command(after_help = "Example:\n  agentc pool fill pentest.toml --size 4")]
    Fill(Sub<PoolFillArgs>),
    /// List the pool members (idle and claimed) of every profile.
    #[command(after_help = "Example:\n  agentc pool ls --format json")]
    Ls(Sub<PoolLsArgs>),
    /// Remove the idle members of a profile's pool (of every pool without PROFILE).
    #[command(after_help = "Example:\n  agentc pool drain pentest.toml")]
    Drain(Sub<PoolDrainArgs>),
}

/// `agentc pool fill`.
#[derive(Debug, Args)]
pub struct PoolFillArgs {
    /// The profile (TOML).
    pub profile: PathBuf,
    /// How many idle members the pool holds after the fill.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub size: u16,
    /// Which backend launches the members.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Use this image instead of the profile's.
    #[arg(long)]
    pub image: Option<String>,
    /// Pull the image from its registry when the daemon lacks it.
    #[arg(long)]
    pub pull: bool,
}

/// `agentc pool ls`.
#[derive(Debug, Args)]
pub struct PoolLsArgs {
    /// Which backend asks the daemon.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// A table, or one JSON array.
    #[arg(long, value_enum, default_value_t = PoolFormat::Table)]
    pub format: PoolFormat,
}

/// `agentc pool drain`.
#[derive(Debug, Args)]
pub struct PoolDrainArgs {
    /// The profile (TOML) or a profile's name; every pool without it.
    pub profile: Option<String>,
    /// Which backend removes the members.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
}

/// `agentc pool ls --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PoolFormat {
    /// Aligned columns.
    Table,
    /// One JSON array of `{"name", "profile", "key", "state", "status"}`.
    Json,
}

/// `agentc run --pool`: whether a run claims a warm member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum PoolMode {
    /// Claim an idle member of the launch's key when there is one, else start cold.
    #[default]
    Auto,
    /// Claim one, or fail (exit 65) with a hint.
    Require,
    /// Always start cold.
    Off,
}

impl From<PoolMode> for agentc_host::run::PoolUse {
    fn from(mode: PoolMode) -> agentc_host::run::PoolUse {
        match mode {
            PoolMode::Auto => agentc_host::run::PoolUse::Auto,
            PoolMode::Require => agentc_host::run::PoolUse::Require,
            PoolMode::Off => agentc_host::run::PoolUse::Off,
        }
    }
}
