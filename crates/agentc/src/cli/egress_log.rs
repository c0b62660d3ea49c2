//! `agentc egress`: what a sandbox's egress proxy decided, and whether it still serves.

use clap::{Args, Subcommand};

use super::SessionTarget;

/// `agentc egress`: the egress of a sandbox behind agentc's egress proxy.
#[derive(Debug, Subcommand)]
pub enum EgressCommand {
    /// Print the proxy's decision lines (one JSON object a line); an error when egress is
    /// down.
    #[command(
        after_help = "Examples:\n  agentc egress log agentc-sandbox-dev-1000-pentest\n  agentc egress log --follow pentest.toml\n\nNAME is a container name or ID from `agentc ps`, or a profile file (its one running container). The lines are the proxy's standard output, unchanged: one JSON object per decision (allowed, denied, DNS). When the proxy is not running (exited, killed, unhealthy) or gone, an error line on stderr says egress is down (its state, exit code and when), after the lines it logged, and the exit status is 1; with --follow, also when the proxy dies while followed. A sandbox not behind agentc's egress proxy is an error (exit 1)."
    )]
    Log(EgressLogArgs),
}

/// `agentc egress log`.
#[derive(Debug, Args)]
pub struct EgressLogArgs {
    /// The backend.
    #[command(flatten)]
    pub target: SessionTarget,
    /// Keep printing new lines until the proxy stops (then the error line, exit 1).
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Only the last N lines.
    #[arg(long, short = 'n', value_name = "N")]
    pub tail: Option<u64>,
    /// A sandbox's container name or ID from `agentc ps`, or a profile file.
    pub name: String,
}
