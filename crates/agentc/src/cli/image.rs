//! `agentc image`: agentc's bundled build contexts of the presets' images.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::Sub;

use super::AgentArg;

/// `agentc image`: the images of the agent presets, which `agentc build` builds.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum ImageCommand {
    /// Write the bundled build context of an agent's image to DIR (to read, change, or build
    /// with other tools).
    #[command(
        after_help = "Examples:\n  agentc image context claude-code ./claude-image\n  docker build -t claude-code:latest --build-arg UID=$(id -u) --build-arg GID=$(id -g) ./claude-image\n\nThe context is a Dockerfile, its install step and entrypoint, and a packages/ directory for local package files (--build-arg AGENT_PACKAGE=packages/FILE). Its build arguments are listed at the top of the Dockerfile. DIR must be empty or missing unless --force."
    )]
    Context(Sub<ImageContextArgs>),
}

/// `agentc image context`.
#[derive(Debug, Args)]
pub struct ImageContextArgs {
    /// The agent whose image the context builds (not `custom`, which has no preset).
    #[arg(value_enum)]
    pub agent: AgentArg,
    /// The directory to write the context to (created when missing).
    pub dir: PathBuf,
    /// Write into a directory that is not empty, replacing the context's files there.
    #[arg(long)]
    pub force: bool,
}
