//! The arguments of `agentc egress-proxy probe` and `host-path` (kept apart from `cli.rs`, which is long).

use clap::Args;

/// `agentc egress-proxy probe`: the egress checks `agentc verify` runs on a sandbox's
/// isolated network ([`agentc_egress::probe`]); one JSON line per check on stdout.
#[derive(Debug, Args)]
pub struct EgressProbeArgs {
    /// The proxy on the isolated network: its address, or the name the sandbox's proxy
    /// variables give it (a Kubernetes Service's), which `egress.proxy-variables` then expects.
    #[arg(long, value_name = "IP:PORT|HOST:PORT")]
    pub proxy: String,
    /// The allowlisted host to reach through the proxy (`HOST` means port 443); without it
    /// `egress.allowed` is skipped.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub allowed: Option<String>,
    /// The proxy's address on the outside network: a direct connection to it must fail.
    #[arg(long, value_name = "IP:PORT")]
    pub outside: Option<String>,
    /// The bound of each connection, read and DNS query, in milliseconds.
    #[arg(long, default_value_t = 3000, value_name = "MS")]
    pub timeout_ms: u64,
    /// A host whose key the proxy holds: `egress.ca-trusted` makes a TLS handshake with it
    /// through the proxy (trusting `SSL_CERT_FILE` alone), and `egress.credential-replay`
    /// sends the placeholder in `AGENTC_VERIFY_PLACEHOLDER` to a host on no allowlist.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub bound: Option<String>,
    /// The proxy passes every destination no allowlist entry holds to its upstream proxy
    /// (its own `--upstream-all`): `egress.denied` then expects the CONNECT accepted for the
    /// upstream, which decides, instead of refused.
    #[arg(long)]
    pub upstream_all: bool,
    /// An address range the proxy's allowlist holds (its `--allow=CIDR`): where the proxy's
    /// own address lies in one, `egress.ip-literal` warns instead of connecting.
    #[arg(long, value_name = "CIDR")]
    pub allowed_range: Vec<String>,
}

/// `agentc egress-proxy host-path`: `agentc verify`'s host-path check
/// ([`agentc_egress::host_path`]), run with the sandbox's capabilities and sysctls; one JSON
/// line on stdout.
#[derive(Debug, Args)]
pub struct EgressHostPathArgs {
    /// The host's address to try (the outside network's gateway, where verify listens on UDP
    /// and TCP).
    #[arg(long, value_name = "IPV4:PORT")]
    pub target: String,
    /// The bound of the connection and of the wait for an ARP reply, in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pub timeout_ms: u64,
}
