//! The command-line surface: clap definitions only, one struct per subcommand.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Turns a declarative sandbox profile into a hardened container launch for AI agents.
#[derive(Debug, Parser)]
#[command(
    name = "agentc",
    version,
    after_help = "Examples:\n  agentc validate fixtures/valid/claude-minimal.toml\n  agentc render fixtures/valid/claude-minimal.toml --backend cli --format shell\n  agentc explain fixtures/valid/sandbox-pentest.toml\n\nExit status: 0 success, 2 usage error, 65 invalid profile or unlaunchable request, 66 unreadable profile file."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check that a profile is valid and can be launched here.
    #[command(after_help = "Example:\n  agentc validate fixtures/valid/claude-minimal.toml")]
    Validate(ProfileArgs),
    /// Print the JSON Schema of profiles, for editors.
    #[command(after_help = "Example:\n  agentc schema > agentc-profile.schema.json")]
    Schema,
    /// Explain a launch: every value with where it came from, and what widens the sandbox.
    #[command(
        after_help = "Example:\n  agentc explain fixtures/valid/sandbox-pentest.toml --kind run"
    )]
    Explain(LaunchArgs),
    /// Render a launch as docker argv, a shell line, or an Engine API body, without running it.
    #[command(
        after_help = "Examples:\n  agentc render fixtures/valid/claude-minimal.toml --backend cli --format shell\n  agentc render fixtures/valid/claude-minimal.toml --backend api --format json --workspace ~/src/app\n  agentc render fixtures/valid/claude-seeds.toml --kind seed --seed-target /home/claude/.claude/settings.json"
    )]
    Render(RenderArgs),
}

/// A profile file.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// The profile (TOML).
    pub profile: PathBuf,
}

/// A launch of a profile.
#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// The profile (TOML).
    pub profile: PathBuf,
    /// Which launch.
    #[arg(long, value_enum, default_value_t = KindArg::Run)]
    pub kind: KindArg,
    /// The workspace directory mounted into the agent [default: the current directory].
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Use this image instead of the profile's.
    #[arg(long)]
    pub image: Option<String>,
    /// For `--kind seed`: the target of the seed mount to copy.
    #[arg(long)]
    pub seed_target: Option<String>,
    /// Arguments passed to the agent, after `--`.
    #[arg(last = true)]
    pub agent_args: Vec<String>,
}

/// `agentc render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The launch.
    #[command(flatten)]
    pub launch: LaunchArgs,
    /// Which backend renders it.
    #[arg(long, value_enum, default_value_t = BackendArg::Cli)]
    pub backend: BackendArg,
    /// Output format: `shell` (cli backend only) or `json`.
    #[arg(long, value_enum, default_value_t = FormatArg::Shell)]
    pub format: FormatArg,
}

/// The launch kinds a user can ask for (`sandbox` is what `run` becomes for custom agents).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// The agent (or, for `agent = "custom"`, the long-lived sandbox).
    Run,
    /// The copy-once seed helper.
    Seed,
    /// The image build.
    Build,
    /// The Decant companion.
    Decant,
}

/// The backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// The `docker` command line.
    Cli,
    /// The Docker Engine API.
    Api,
}

/// Output formats of `agentc render`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// One shell-quoted command line.
    Shell,
    /// JSON: an argv array (cli) or `{"name": ..., "body": ...}` (api).
    Json,
}
