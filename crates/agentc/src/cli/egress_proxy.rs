//! The arguments of `agentc egress-proxy`, the proxy's own commands (hidden; kept apart from
//! `cli.rs`, which is long).

use clap::{Args, Subcommand};

use super::Sub;

use super::{EgressHostPathArgs, EgressProbeArgs};

/// `agentc egress-proxy`: the proxy's own commands.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum EgressProxyCommand {
    /// Serve the allowlist proxy and the DNS stub until SIGTERM; one JSON line per decision
    /// on stdout.
    Serve(Sub<Box<EgressServeArgs>>),
    /// Exit 0 when the local proxy answers its health check (the container's health command).
    Health(Sub<EgressHealthArgs>),
    /// Build the proxy image from this binary, import it unless the daemon has it, print its
    /// tag.
    Image(Sub<EgressImageArgs>),
    /// Run `agentc verify`'s egress checks from a sandbox's isolated network.
    Probe(Sub<EgressProbeArgs>),
    /// Run `agentc verify`'s host-path check from a sandbox's isolated network: try to reach
    /// an address of the host past the proxy.
    HostPath(Sub<EgressHostPathArgs>),
    /// Fetch the launch CA and the bundle the workload trusts from a proxy that holds
    /// credentials, into a directory (a Kubernetes sandbox pod's init container).
    FetchCa(Sub<EgressFetchCaArgs>),
    /// Print the kernel this container sees (`/proc/version`, then the first lines of the
    /// kernel log): the isolation probe, run under each runtime in the proxy image.
    Kernel,
}

/// `agentc egress-proxy fetch-ca`.
#[derive(Debug, Args)]
pub struct EgressFetchCaArgs {
    /// The proxy (`host:port`, a name resolved here).
    #[arg(long, value_name = "HOST:PORT")]
    pub proxy: String,
    /// Where to write `ca.pem` and `bundle.pem` (it must exist).
    #[arg(long, default_value = agentc_egress::credential::CA_DIR, value_name = "DIR")]
    pub dir: std::path::PathBuf,
    /// How long to keep asking while the proxy is not up yet.
    #[arg(long, default_value_t = 120, value_name = "SECONDS")]
    pub wait_seconds: u64,
}

/// `agentc egress-proxy serve`.
#[derive(Debug, Args)]
pub struct EgressServeArgs {
    /// The proxy's address.
    #[arg(long, default_value = "0.0.0.0:3128", value_name = "IP:PORT")]
    pub listen: String,
    /// The DNS stub's address (UDP and TCP).
    #[arg(long, value_name = "IP:PORT")]
    pub dns: Option<String>,
    /// Allowed hosts: `host` (ports 443 and 80), `host:port`, `*.name`, `*.name:port`.
    #[arg(long, value_name = "HOSTSPEC", num_args = 1.., action = clap::ArgAction::Append)]
    pub allow: Vec<String>,
    /// Private or reserved ranges the proxy may connect to.
    #[arg(long = "allow-cidr", value_name = "CIDR", num_args = 1.., action = clap::ArgAction::Append)]
    pub allow_cidr: Vec<String>,
    /// Hosts whose tunnels may carry Encrypted Client Hello (or ESNI), matched as `--allow`
    /// is; each must also be an `--allow` entry. Without it such a ClientHello is refused
    /// (reason `ech`).
    #[arg(long = "allow-ech", value_name = "HOSTSPEC", num_args = 1.., action = clap::ArgAction::Append)]
    pub allow_ech: Vec<String>,
    /// A published port of the workload to relay: accept TCP on the proxy's LISTEN_PORT and
    /// connect each client to IP:PORT (the workload's fixed address and container port).
    #[arg(long, value_name = "LISTEN_PORT=IP:PORT", action = clap::ArgAction::Append)]
    pub relay: Vec<String>,
    /// Distinct names allowed only through one `*.domain` entry that may be resolved in any
    /// minute (1 to 1000); one more is refused (`wildcard-rate`) before any look-up.
    #[arg(long, value_name = "N", default_value_t = agentc_egress::wildcard::DEFAULT_NAMES_PER_MINUTE)]
    pub wildcard_names_per_minute: u32,
    /// A credential the proxy sets on requests to its hosts, whose tunnels it terminates:
    /// `name=N,header=H[,scheme=bearer|basic],env=VAR[,user-env=VAR],host=HOST[:PORT]...`. The
    /// value is read from the proxy's variable VAR, the workload's placeholder from
    /// `AGENTC_PLACEHOLDER_VAR`; a placeholder sent anywhere else is refused.
    #[arg(long, value_name = "SETTINGS", action = clap::ArgAction::Append)]
    pub credential: Vec<String>,
    /// Where the proxy writes its launch CA's certificate (`ca.pem`) and the bundle the
    /// workload trusts (`bundle.pem`); required with `--credential`.
    #[arg(long, value_name = "DIR")]
    pub ca_dir: Option<String>,
    /// Where the proxy keeps its bounded audit files besides stdout (`priority.jsonl`, the
    /// first 4 MiB of credential and scrub lines; rings of the newest: 24 MiB at most in all).
    #[arg(long, value_name = "DIR")]
    pub audit_dir: Option<String>,
    /// A PEM file or directory of CA certificates trusted for the upstreams of terminated
    /// tunnels and for an `https://` upstream proxy, besides Mozilla's roots.
    #[arg(long, value_name = "PATH", action = clap::ArgAction::Append)]
    pub upstream_ca: Vec<String>,
    /// `block` (the default) or `stop`: after refusing a replayed placeholder, exit
    /// (status 3), so that the sandbox has no way out.
    #[arg(long, value_name = "ACTION")]
    pub on_replay: Option<String>,
    /// The workload's container name: the proxy exits (status 4) when it does not appear on
    /// the engine's DNS within 60 s, or, with `--workload-watch life`, once it is gone, so
    /// that a launch killed at any step leaves no proxy running.
    #[arg(long, value_name = "NAME")]
    pub workload: Option<String>,
    /// `appear` (a detached sandbox: only a workload that never appeared ends the proxy) or
    /// `life` (an attached run: its end ends the proxy too).
    #[arg(
        long,
        value_name = "MODE",
        default_value = "appear",
        requires = "workload"
    )]
    pub workload_watch: String,
    /// An upstream proxy every connection goes through: a tunnel as `CONNECT host:port`, a
    /// plain-HTTP request in absolute form; its own address is connected to in any range.
    /// `https://HOST:PORT` speaks TLS to it (verified against Mozilla's roots and
    /// `--upstream-ca`).
    #[arg(long, value_name = "HOST:PORT")]
    pub upstream: Option<String>,
    /// The variable of this process's environment holding the upstream's `user:password`,
    /// sent as `Proxy-Authorization` (the value never on the command line).
    #[arg(long, value_name = "NAME", requires = "upstream")]
    pub upstream_auth_env: Option<String>,
    /// The same for `--upstream-http`'s upstream.
    #[arg(long, value_name = "NAME", requires = "upstream_http")]
    pub upstream_http_auth_env: Option<String>,
    /// Another upstream proxy for plain-HTTP (absolute-form) requests; `--upstream` keeps the
    /// tunnels (the profile's `proxy.http` and `proxy.https` naming two proxies).
    #[arg(long, value_name = "HOST:PORT", requires = "upstream")]
    pub upstream_http: Option<String>,
    /// Pass every destination that no `--direct` entry names to the upstream, which decides
    /// (the allowlist names the upstream's host); requires `--upstream`.
    #[arg(long, requires = "upstream")]
    pub upstream_all: bool,
    /// A destination that goes direct rather than through the upstream (a `no_proxy` entry:
    /// a name and its subdomains, an address or a range), still checked by `--allow`.
    #[arg(long, value_name = "HOSTSPEC", action = clap::ArgAction::Append, requires = "upstream")]
    pub direct: Vec<String>,
}

/// `agentc egress-proxy health`.
#[derive(Debug, Args)]
pub struct EgressHealthArgs {
    /// The proxy to check; without it, the address the proxy of this container listens on
    /// (read from its command line, `/proc/1/cmdline`), else 127.0.0.1:3128.
    #[arg(long, value_name = "IP:PORT")]
    pub proxy: Option<String>,
}

/// `agentc egress-proxy image`.
#[derive(Debug, Args)]
pub struct EgressImageArgs {
    /// Print the tag without contacting the daemon.
    #[arg(long)]
    pub print_tag: bool,
}
