//! `agentc egress`: what a sandbox's egress proxy decided, and whether it still serves.

use clap::{Args, Subcommand, ValueEnum};

use super::Sub;

use super::SessionTarget;

/// `agentc egress`: the egress of a sandbox behind agentc's egress proxy.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum EgressCommand {
    /// Print the proxy's decisions as a table, or its JSON lines; an error when egress is
    /// down.
    #[command(
        after_help = "Examples:\n  agentc egress log agentc-sandbox-dev-1000-pentest\n  agentc egress log --follow pentest.toml\n  agentc egress log pentest.toml --format json\n\nNAME is a container name or ID from `agentc ps`, a profile file or a profile's name (its one container). The table has a row per line the proxy wrote: TIME (UTC), the request's ID (shared by its decision and close lines), EVENT (decision, close or summary), KIND (connect, forward, dns, relay, request, credential-replay, scrub, connection), TARGET (host:port, a DNS query's name and type, or a relayed connection's workload address), DECISION (allow or deny), REASON and BYTES (up/down, on close lines), then a refusal's detail. The lines are the proxy's standard output merged with its own audit files (which keep the first 4 MiB of credential lines for the sandbox's life, so no flood erases them; read also from a stopped proxy), each once in time order; repeated lines of one kind, decision and reason past 20 in 10 s are counted into one `summary` row (EVENT summary: how many, from when to when, a few names). With --format json the lines are unchanged: one JSON object per decision, close and summary (fields in docs/egress-proxy.md). When the proxy is not running (exited, killed, unhealthy) or gone, an error line on stderr says egress is down (its state, exit code and when), after the lines it logged, and the exit status is 1; with --follow, also when the proxy dies while followed. A sandbox not behind agentc's egress proxy is an error (exit 1)."
    )]
    Log(Sub<EgressLogArgs>),
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
    /// Output format: `table` (a row per decision and close) or `json` (the proxy's JSON
    /// lines, unchanged).
    #[arg(long, value_enum, default_value_t = EgressLogFormat::Table)]
    pub format: EgressLogFormat,
    /// A sandbox's container name or ID from `agentc ps`, a profile file, or a profile's name.
    pub name: String,
}

/// Output formats of `agentc egress log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EgressLogFormat {
    /// An aligned table, a row per line.
    Table,
    /// The proxy's JSON lines, unchanged.
    Json,
}
