//! The proxy's configuration: what it allows, where it listens, and its bounds.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::addr::Cidr;
use crate::error::EgressError;
use crate::host::HostSpec;
use crate::policy::Policy;

/// Where the agentc binary sits in the proxy image ([`crate::image`]).
pub const PROXY_BINARY: &str = "/usr/local/bin/agentc";

/// The proxy's default listen address.
pub const DEFAULT_LISTEN: &str = "0.0.0.0:3128";

/// The DNS stub's default listen address.
pub const DEFAULT_DNS: &str = "0.0.0.0:53";

/// The bounds that keep a hostile client from exhausting the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Client connections served at once; one more gets `503` and a deny line.
    pub max_connections: usize,
    /// The largest request head (request line and headers), in bytes; at least 8192
    /// (hyper's smallest read buffer). A larger head gets `431`.
    pub max_header_bytes: usize,
    /// Seconds a client has to send a complete request head.
    pub header_timeout_secs: u64,
    /// Seconds a tunnel or a forwarded exchange may stay without a byte either way.
    pub idle_timeout_secs: u64,
    /// Seconds for resolving and connecting to the upstream.
    pub connect_timeout_secs: u64,
    /// Seconds a CONNECT client has to send its whole TLS ClientHello.
    pub client_hello_timeout_secs: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 512,
            max_header_bytes: 16 * 1024,
            header_timeout_secs: 10,
            idle_timeout_secs: 300,
            connect_timeout_secs: 10,
            client_hello_timeout_secs: 10,
        }
    }
}

impl Limits {
    /// Checks every bound is in its range.
    pub fn check(&self) -> Result<(), EgressError> {
        let limit = |name, value: u64, ok: bool, reason| {
            if ok {
                Ok(())
            } else {
                Err(EgressError::Limit {
                    name,
                    value,
                    reason,
                })
            }
        };
        let n = self.max_connections as u64;
        limit(
            "max_connections",
            n,
            (1..=65_536).contains(&n),
            "must be 1 to 65536",
        )?;
        let h = self.max_header_bytes as u64;
        limit(
            "max_header_bytes",
            h,
            (8192..=1 << 20).contains(&h),
            "must be 8192 to 1048576",
        )?;
        for (name, value) in [
            ("header_timeout_secs", self.header_timeout_secs),
            ("idle_timeout_secs", self.idle_timeout_secs),
            ("connect_timeout_secs", self.connect_timeout_secs),
            ("client_hello_timeout_secs", self.client_hello_timeout_secs),
        ] {
            limit(
                name,
                value,
                (1..=86_400).contains(&value),
                "must be 1 to 86400 seconds",
            )?;
        }
        Ok(())
    }

    /// [`Limits::header_timeout_secs`] as a duration.
    pub fn header_timeout(&self) -> Duration {
        Duration::from_secs(self.header_timeout_secs)
    }

    /// [`Limits::idle_timeout_secs`] as a duration.
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs)
    }

    /// [`Limits::connect_timeout_secs`] as a duration.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs(self.connect_timeout_secs)
    }

    /// [`Limits::client_hello_timeout_secs`] as a duration.
    pub fn client_hello_timeout(&self) -> Duration {
        Duration::from_secs(self.client_hello_timeout_secs)
    }
}

/// Everything the proxy needs; the same values its command line carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The proxy's address (`--listen`).
    pub listen: SocketAddr,
    /// The DNS stub's address (`--dns`), UDP and TCP; `None` runs no stub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<SocketAddr>,
    /// The allowlist (`--allow`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<HostSpec>,
    /// Private or reserved ranges the proxy may connect to (`--allow-cidr`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_cidrs: Vec<Cidr>,
    /// The bounds.
    #[serde(default)]
    pub limits: Limits,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: DEFAULT_LISTEN.parse().expect("a valid default"),
            dns: Some(DEFAULT_DNS.parse().expect("a valid default")),
            allow: Vec::new(),
            allow_cidrs: Vec::new(),
            limits: Limits::default(),
        }
    }
}

fn socket_address(text: &str) -> Result<SocketAddr, EgressError> {
    text.parse().map_err(|_| EgressError::ListenAddress {
        address: text.to_string(),
    })
}

impl Config {
    /// Builds a configuration from the command line's words, with the default limits; each
    /// error names the value it refuses.
    pub fn from_args(
        listen: &str,
        dns: Option<&str>,
        allow: &[impl AsRef<str>],
        allow_cidrs: &[impl AsRef<str>],
    ) -> Result<Config, EgressError> {
        let config = Config {
            listen: socket_address(listen)?,
            dns: dns.map(socket_address).transpose()?,
            allow: allow
                .iter()
                .map(|spec| HostSpec::parse(spec.as_ref()))
                .collect::<Result<_, _>>()?,
            allow_cidrs: allow_cidrs
                .iter()
                .map(|cidr| Cidr::parse(cidr.as_ref()))
                .collect::<Result<_, _>>()?,
            limits: Limits::default(),
        };
        config.limits.check()?;
        Ok(config)
    }

    /// The decision core for this allowlist.
    pub fn policy(&self) -> Policy {
        Policy::new(self.allow.clone(), self.allow_cidrs.clone())
    }
}

/// The proxy container's command: the full argv, starting with [`PROXY_BINARY`], that every
/// renderer (docker CLI, Engine API, Kubernetes) uses. Values are attached (`--allow=HOST`), so
/// none can be read as a flag.
///
/// ```
/// use agentc_egress::{proxy_command, Config};
/// let config = Config::from_args("0.0.0.0:3128", Some("0.0.0.0:53"), &["example.com"], &["10.0.0.0/8"]).unwrap();
/// assert_eq!(
///     proxy_command(&config),
///     [
///         "/usr/local/bin/agentc", "egress-proxy", "serve", "--listen=0.0.0.0:3128",
///         "--dns=0.0.0.0:53", "--allow=example.com", "--allow-cidr=10.0.0.0/8",
///     ]
/// );
/// ```
pub fn proxy_command(config: &Config) -> Vec<String> {
    let mut argv: Vec<String> = vec![PROXY_BINARY.into(), "egress-proxy".into(), "serve".into()];
    argv.push(format!("--listen={}", config.listen));
    if let Some(dns) = config.dns {
        argv.push(format!("--dns={dns}"));
    }
    argv.extend(config.allow.iter().map(|spec| format!("--allow={spec}")));
    argv.extend(
        config
            .allow_cidrs
            .iter()
            .map(|cidr| format!("--allow-cidr={cidr}")),
    );
    argv
}

/// The proxy container's health check command (`docker run --health-cmd`, a Kubernetes
/// `exec` probe): exits 0 when the proxy answers `GET /healthz` on its own port.
pub fn health_command(config: &Config) -> Vec<String> {
    let target = SocketAddr::new(
        if config.listen.ip().is_unspecified() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            config.listen.ip()
        },
        config.listen.port(),
    );
    vec![
        PROXY_BINARY.into(),
        "egress-proxy".into(),
        "health".into(),
        format!("--proxy={target}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_limits_are_valid_and_bad_ones_are_named() {
        Limits::default().check().unwrap();
        let bad = Limits {
            max_header_bytes: 100,
            ..Limits::default()
        };
        assert!(bad
            .check()
            .unwrap_err()
            .to_string()
            .contains("max_header_bytes"));
        let bad = Limits {
            idle_timeout_secs: 0,
            ..Limits::default()
        };
        assert!(bad
            .check()
            .unwrap_err()
            .to_string()
            .contains("idle_timeout_secs"));
    }

    #[test]
    fn from_args_refuses_each_bad_word_by_name() {
        let none: [&str; 0] = [];
        for (listen, dns, allow, cidr, needle) in [
            ("nope", None, "a.com", "10.0.0.0/8", "nope"),
            ("0.0.0.0:3128", Some("53"), "a.com", "10.0.0.0/8", "`53`"),
            ("0.0.0.0:3128", None, "1.2.3.4", "10.0.0.0/8", "`1.2.3.4`"),
            ("0.0.0.0:3128", None, "a.com", "10.0.0.1/8", "`10.0.0.1/8`"),
        ] {
            let error = Config::from_args(listen, dns, &[allow], &[cidr]).unwrap_err();
            assert!(error.to_string().contains(needle), "{error}");
        }
        let config = Config::from_args("127.0.0.1:1", None, &none, &none).unwrap();
        assert_eq!(config.dns, None);
    }

    #[test]
    fn the_command_reads_back_to_the_same_config_through_serde() {
        let config = Config::from_args(
            "0.0.0.0:3128",
            Some("0.0.0.0:53"),
            &["a.example", "*.b.example:8443"],
            &["10.251.0.0/24", "fd00:1::/64"],
        )
        .unwrap();
        let argv = proxy_command(&config);
        assert_eq!(
            argv[3..],
            [
                "--listen=0.0.0.0:3128",
                "--dns=0.0.0.0:53",
                "--allow=a.example",
                "--allow=*.b.example:8443",
                "--allow-cidr=10.251.0.0/24",
                "--allow-cidr=fd00:1::/64",
            ]
        );
        let json = serde_json::to_string(&config).unwrap();
        assert_eq!(serde_json::from_str::<Config>(&json).unwrap(), config);
        assert_eq!(
            health_command(&config)[3..],
            ["--proxy=127.0.0.1:3128".to_string()]
        );
    }
}
