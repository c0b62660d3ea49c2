//! The lifecycle commands' arguments: `init`, `doctor`, `plan`, `apply`, `rollback`, `lock`,
//! and `completions`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{BackendArg, ExplainFormat};

/// `agentc init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The profile file to write (it must not exist).
    pub profile: PathBuf,
    /// The agent.
    #[arg(long, value_enum)]
    pub agent: AgentArg,
    /// The profile's name [default: the file's stem].
    #[arg(long)]
    pub name: Option<String>,
    /// The image reference (required for `custom`).
    #[arg(long)]
    pub image: Option<String>,
    /// The egress mode [default: allowlist for presets; deny for custom unless --host is given].
    #[arg(long, value_enum)]
    pub egress: Option<EgressArg>,
    /// A host to allow (repeatable) [default: the agent's provider hosts].
    #[arg(long = "host", value_name = "HOST")]
    pub hosts: Vec<String>,
}

/// The agents `agentc init` writes profiles for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentArg {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// OpenCode.
    Opencode,
    /// Nous Research's Hermes agent.
    Hermes,
    /// Any image, as a long-lived sandbox.
    Custom,
}

impl AgentArg {
    /// The profile's `agent` this argument names.
    pub fn name(self) -> agentc_policy::AgentName {
        use agentc_policy::AgentName;
        match self {
            AgentArg::ClaudeCode => AgentName::ClaudeCode,
            AgentArg::Codex => AgentName::Codex,
            AgentArg::Opencode => AgentName::Opencode,
            AgentArg::Hermes => AgentName::Hermes,
            AgentArg::Custom => AgentName::Custom,
        }
    }
}

/// The egress modes of a starter profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EgressArg {
    /// No network at all.
    Deny,
    /// Only the listed hosts.
    Allowlist,
}

/// `agentc doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// A profile whose images, networks, secrets, deployment and lock are checked too.
    pub profile: Option<PathBuf>,
    /// The workspace the profile's launches mount [default: the current directory].
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ExplainFormat::Text)]
    pub format: ExplainFormat,
}

/// The values of `--engine`: `docker` or `podman`, read as the one engine value of every
/// crate ([`agentc_policy::Engine`]).
pub fn engine_value() -> impl clap::builder::TypedValueParser<Value = agentc_policy::Engine> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(
        agentc_policy::Engine::ALL.map(|engine| engine.as_str()),
    )
    .map(|name| agentc_policy::Engine::parse(&name).unwrap_or_default())
}

/// `agentc plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The profile (TOML).
    pub profile: PathBuf,
    /// The workspace the launches mount [default: the current directory].
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ExplainFormat::Text)]
    pub format: ExplainFormat,
}

/// `agentc apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The profile (TOML).
    pub profile: PathBuf,
    /// Which backend asks the engine and runs the seed helpers (builds always use the docker
    /// CLI).
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Pull a profile image the daemon lacks (when the profile does not build it).
    #[arg(long)]
    pub pull: bool,
}

/// `agentc rollback`.
#[derive(Debug, Args)]
pub struct RollbackArgs {
    /// The profile (TOML).
    pub profile: PathBuf,
    /// Which backend moves the tags.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
}

/// `agentc lock`.
#[derive(Debug, Args)]
pub struct LockArgs {
    /// The profile (TOML); the lock is PROFILE's stem with `.lock`, beside it.
    pub profile: PathBuf,
    /// Compare the lock with this machine and list any drift instead of writing it (exit 65
    /// on drift).
    #[arg(long)]
    pub check: bool,
    /// The workspace the launches mount [default: the current directory].
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Which backend asks the engine for image IDs.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// With --check: `text`, or `json` (`{"lock", "drift": [{"field", "locked", "current"}],
    /// "launches", "images", "files"}`; exit 65 on drift either way).
    #[arg(long, value_enum, default_value_t = ExplainFormat::Text, requires = "check")]
    pub format: ExplainFormat,
}

/// `agentc completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: ShellArg,
    /// A self-contained script (subcommands and flags), which never calls agentc; without
    /// it, the script asks agentc, which also completes container and profile names.
    #[arg(long = "static")]
    pub static_script: bool,
}

/// The shells completions are written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShellArg {
    /// Bash.
    Bash,
    /// Zsh.
    Zsh,
    /// Fish.
    Fish,
}
