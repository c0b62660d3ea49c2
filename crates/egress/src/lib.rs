//! agentc's egress proxy: the one way out of an allowlist sandbox.
//!
//! The workload sits alone on an `--internal` Docker network; this proxy is the only other
//! member, and the only member of a second, outside network. It serves:
//!
//! - **HTTP CONNECT** to allowlisted `host:port`s, whose first bytes it checks before it
//!   resolves or connects: a TLS ClientHello's SNI must equal the CONNECT host (no
//!   interception, no CA; Encrypted Client Hello only with `--allow-ech`), an HTTP request's
//!   `Host` must name it, other bytes pass only for an explicit `host:port` entry; a refusal is
//!   a TLS alert or an HTTP `403` written into the tunnel;
//! - **plain HTTP forwarding** of absolute-form requests (`GET http://host/path`, as curl and
//!   wget send them to a proxy), with hop-by-hop and `Proxy-*` headers stripped;
//! - a **DNS stub** on port 53 that answers every query with NXDOMAIN and logs its name, so DNS
//!   tunnelling carries nothing out;
//! - **relays** of the workload's published ports (`--relay=LISTEN=IP:PORT`): a workload on an
//!   internal network cannot publish ports, so the proxy container publishes them and copies
//!   each connection to the one fixed address it was configured with (inbound traffic, never
//!   decided by the allowlist);
//! - one **JSON decision line** per request, written before anything leaves for it, and a
//!   close line (same `id`) per allowed request and per relayed connection, on stdout ([`log`]).
//!
//! The core is pure and typed: [`config`] (the allowlist and bounds), [`host`] (host names, IP
//! literals in every spelling, the host specs), [`addr`] (the address classifier), [`policy`]
//! (the decision: by name before resolving, then every resolved address), [`request`] (what a
//! request asks of the proxy), [`sni`] (the ClientHello reader), [`dns`] (the query parser and
//! the NXDOMAIN answer), [`wildcard`] (the bound on look-ups of wildcard-allowed names) and
//! [`image`]'s tar builder. The I/O sits at the edge: [`proxy`] (tokio
//! and hyper), [`health`], [`image`]'s import into the daemon, and [`probe`] (the egress check
//! program `agentc verify` runs on a sandbox's isolated network).
//!
//! ```
//! use agentc_egress::{Config, proxy_command};
//!
//! let config = Config::from_args(
//!     "0.0.0.0:3128",
//!     Some("0.0.0.0:53"),
//!     &["api.anthropic.com", "*.githubusercontent.com", "registry.npmjs.org:443"],
//!     &["10.20.0.0/16"],
//! )
//! .unwrap();
//! let decision = config.policy().decide_name("API.Anthropic.com.", 443).unwrap();
//! assert_eq!(decision, "api.anthropic.com");
//! assert!(config.policy().decide_name("127.1", 443).is_err());
//! let argv = proxy_command(&config);
//! assert_eq!(&argv[..3], ["/usr/local/bin/agentc", "egress-proxy", "serve"]);
//! ```
//!
//! Without the default `runtime` feature the crate is only its pure core (no [`proxy`], no
//! [`image`]): what the policy crate needs to validate `egress.hosts` and `egress.allow_cidrs`
//! and to write the proxy's command line.
#![deny(missing_docs)]

pub mod addr;
pub mod audit;
#[cfg(feature = "runtime")]
pub mod ca;
pub mod ca_fetch;
pub mod config;
pub mod credential;
pub mod dns;
pub mod error;
pub mod health;
pub mod host;
#[cfg(feature = "runtime")]
pub mod host_path;
#[cfg(feature = "runtime")]
pub mod image;
pub mod log;
pub mod log_table;
pub mod policy;
pub mod probe;
#[cfg(feature = "runtime")]
pub mod proxy;
pub mod replay;
pub mod request;
pub mod scrub;
pub mod sni;
#[cfg(feature = "runtime")]
pub mod state;
pub mod upstream;
pub mod watch;
pub mod wildcard;

pub use addr::Cidr;
pub use config::{
    health_command, health_target, listen_of, proxy_command, Config, Limits, Relay, PROXY_BINARY,
};
pub use error::EgressError;
pub use host::HostSpec;
pub use policy::{Deny, Policy, Reason};
