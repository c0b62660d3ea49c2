//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong in the egress crate; each variant carries the offending input.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    /// A host spec (`host`, `host:port`, `*.name`, `*.name:port`) that cannot be used.
    #[error("invalid host spec `{spec}`: {reason}")]
    HostSpec {
        /// The spec as written.
        spec: String,
        /// Why it is refused.
        reason: String,
    },
    /// An allowed CIDR that cannot be used.
    #[error("invalid CIDR `{cidr}`: {reason}")]
    Cidr {
        /// The CIDR as written.
        cidr: String,
        /// Why it is refused.
        reason: String,
    },
    /// An upstream proxy (`--upstream=HOST:PORT`, `--direct=SPEC`) that cannot be used.
    #[error("invalid upstream proxy `{upstream}`: {reason}")]
    Upstream {
        /// The text as written (no credentials: the upstream takes none on the command line).
        upstream: String,
        /// Why it is refused.
        reason: String,
    },
    /// A listen address that is not `IP:PORT`.
    #[error("invalid listen address `{address}`: expected IP:PORT, such as 0.0.0.0:3128")]
    ListenAddress {
        /// The address as written.
        address: String,
    },
    /// A relay (`--relay=LISTEN=IP:PORT`) that cannot be used.
    #[error("invalid relay `{relay}`: {reason}")]
    Relay {
        /// The relay as written.
        relay: String,
        /// Why it is refused.
        reason: String,
    },
    /// A credential (`--credential=`, `--on-replay`) that cannot be used; never a value.
    #[error("invalid credential `{credential}`: {reason}")]
    Credential {
        /// The word as written (names only: no value is ever written there).
        credential: String,
        /// Why it is refused.
        reason: String,
    },
    /// A variable a credential names is not set in the proxy's environment.
    #[error("the credential {credential} needs the variable {variable}, which is not set")]
    CredentialUnset {
        /// The credential's name.
        credential: String,
        /// The variable's name.
        variable: String,
    },
    /// The launch CA could not be made or written.
    #[error("cannot set up the launch CA: {0}")]
    Ca(String),
    /// The proxy stopped after it refused a credential replay (`--on-replay=stop`).
    #[error("stopped after a credential replay (--on-replay=stop): {0}")]
    Replayed(String),
    /// A bound outside its range.
    #[error("invalid limit {name} = {value}: {reason}")]
    Limit {
        /// The limit's name.
        name: &'static str,
        /// The value given.
        value: u64,
        /// The range it must be in.
        reason: &'static str,
    },
    /// A socket could not be bound.
    #[error("cannot listen on {address} ({what}): {source}")]
    Bind {
        /// The address.
        address: std::net::SocketAddr,
        /// Which listener (`proxy`, `dns/udp`, `dns/tcp`).
        what: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The health check failed.
    #[error("the proxy at {address} is not healthy: {reason}")]
    Unhealthy {
        /// The proxy's address.
        address: String,
        /// What went wrong.
        reason: String,
    },
    /// The launch CA could not be fetched from the proxy (`egress-proxy fetch-ca`).
    #[error("cannot fetch the launch CA from the egress proxy at {proxy}: {reason}")]
    CaFetch {
        /// The proxy's `host:port`.
        proxy: String,
        /// What went wrong.
        reason: String,
    },
    /// A file the image is built from could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The executable is not an ELF file this builder understands.
    #[error("cannot build the proxy image from {path}: {reason}")]
    Executable {
        /// The executable.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The image could not be imported into the daemon.
    #[error("cannot import the proxy image {tag}: {reason}")]
    Import {
        /// The tag being imported.
        tag: String,
        /// What the daemon or the docker CLI said.
        reason: String,
    },
    /// The audit directory (`--audit-dir`) or a file in it could not be opened.
    #[error("cannot open the audit files in {path}: {source}")]
    Audit {
        /// The directory.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}
