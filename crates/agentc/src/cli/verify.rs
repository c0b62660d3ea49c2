//! `agentc verify`'s arguments: a profile's launch in a probe through an engine, or its
//! Kubernetes rendering played by `podman kube play`; or a running sandbox.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{BackendArg, ExplainFormat, K8sArgs};

/// `agentc verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The profile (TOML): its launch, verified in a probe launch of its own; or the NAME of a
    /// running sandbox (`agentc ps`), read from the host side (its process's capabilities,
    /// seccomp, no-new-privileges, cgroup limits, mounts, networks; its proxy) and compared
    /// with its profile as it resolves now, without running anything in it.
    pub profile: PathBuf,
    /// Which backend creates and starts the probe; `k8s` plays the profile's Kubernetes
    /// rendering with `podman kube play` instead (the options of `agentc render --backend
    /// k8s` apply; an allowlist's egress proxy Pod plays beside the workload, as root in a
    /// network namespace of the play's own).
    #[arg(long, value_enum, default_value_t = VerifyBackendArg::Auto)]
    pub backend: VerifyBackendArg,
    /// The workspace directory mounted into the agent [default: the current directory].
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Use this image instead of the profile's.
    #[arg(long)]
    pub image: Option<String>,
    /// The Kubernetes rendering's options (with `--backend k8s`).
    #[command(flatten)]
    pub k8s: K8sArgs,
    /// Pull the image from its registry when the daemon lacks it, before creating anything
    /// (progress on stderr; no registry credentials are sent).
    #[arg(long)]
    pub pull: bool,
    /// Refuse to launch unless the profile's lock file (PROFILE.lock) matches this machine
    /// exactly; any drift exits 65 before anything is created.
    #[arg(long)]
    pub locked: bool,
    /// Egress enforced outside: the allowlisted host `egress.allowed` reaches through the
    /// proxy (HOST means port 443) [default: the profile's first exact host]; `none` skips
    /// that check, the only one that reaches beyond the proxy.
    #[arg(long, value_name = "HOST[:PORT]|none")]
    pub egress_probe: Option<String>,
    /// Output format: `text` (the table), or `json` (`{"profile", "checks": [{"check",
    /// "status": "ok"|"warn"|"fail"|"skip", "expected", "seen", "hint"}], "ok", "warn", "fail",
    /// "skip"}`).
    #[arg(long, value_enum, default_value_t = ExplainFormat::Text)]
    pub format: ExplainFormat,
}

/// The backends `agentc verify` verifies through: an engine's container launch, or the
/// Kubernetes rendering played locally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VerifyBackendArg {
    /// As for `agentc run`: the Engine API where it answers, else the command line.
    Auto,
    /// The `docker` command line.
    Cli,
    /// The Docker Engine API.
    Api,
    /// The profile's Kubernetes Pod (or Sandbox) rendering, played by `podman kube play`.
    K8s,
}

impl VerifyBackendArg {
    /// The engine backend, or `None` for `k8s`.
    pub fn engine(self) -> Option<BackendArg> {
        match self {
            VerifyBackendArg::Auto => Some(BackendArg::Auto),
            VerifyBackendArg::Cli => Some(BackendArg::Cli),
            VerifyBackendArg::Api => Some(BackendArg::Api),
            VerifyBackendArg::K8s => None,
        }
    }
}
