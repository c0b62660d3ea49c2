//! The proxy's configuration: what it allows, where it listens, the published ports it relays
//! to the workload ([`Relay`]), and its bounds.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
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
    /// The relays of the workload's published ports (`--relay`): inbound, to a fixed
    /// address, never decided by the allowlist.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relays: Vec<Relay>,
    /// The hosts whose tunnels may carry Encrypted Client Hello (`--allow-ech`), matched as
    /// the allowlist is; none by default (a ClientHello with ECH or ESNI is refused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_ech: Vec<HostSpec>,
    /// The bounds.
    #[serde(default)]
    pub limits: Limits,
}

/// One published port of the workload, relayed by the proxy: it accepts TCP on its own port
/// [`Relay::listen`] (published on the host by the proxy container) and connects each client
/// to exactly [`Relay::target`], the workload's fixed address on the isolated network and the
/// container port. Written `LISTEN=IP:PORT` on the command line (`--relay=20000=10.213.0.3:8080`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Relay {
    /// The proxy's port that accepts the relayed connections (1 to 65535).
    pub listen: u16,
    /// Where every connection goes: an IPv4 or IPv6 address (not unspecified) and a port.
    pub target: SocketAddr,
}

impl Relay {
    /// Reads `LISTEN=IP:PORT`; the error names the text and what is wrong with it.
    ///
    /// ```
    /// use agentc_egress::config::Relay;
    /// let relay = Relay::parse("20000=10.213.0.3:8080").unwrap();
    /// assert_eq!((relay.listen, relay.target.to_string().as_str()), (20000, "10.213.0.3:8080"));
    /// assert!(Relay::parse("20000=somewhere:8080").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Relay, EgressError> {
        let fail = |reason: &str| EgressError::Relay {
            relay: text.to_string(),
            reason: reason.to_string(),
        };
        let (listen, target) = text
            .split_once('=')
            .ok_or_else(|| fail("expected LISTEN_PORT=IP:PORT, such as 20000=10.213.0.3:8080"))?;
        let listen: u16 = listen
            .trim()
            .parse()
            .map_err(|_| fail("the listen port is not a number from 1 to 65535"))?;
        if listen == 0 {
            return Err(fail("the listen port is not a number from 1 to 65535"));
        }
        let target: SocketAddr = target
            .trim()
            .parse()
            .map_err(|_| fail("the target is not IP:PORT (an address, not a name)"))?;
        if target.ip().is_unspecified() || target.port() == 0 {
            return Err(fail(
                "the target must be one address and a port other than 0",
            ));
        }
        Ok(Relay { listen, target })
    }
}

impl fmt::Display for Relay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.listen, self.target)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: DEFAULT_LISTEN.parse().expect("a valid default"),
            dns: Some(DEFAULT_DNS.parse().expect("a valid default")),
            allow: Vec::new(),
            allow_cidrs: Vec::new(),
            relays: Vec::new(),
            allow_ech: Vec::new(),
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
            relays: Vec::new(),
            allow_ech: Vec::new(),
            limits: Limits::default(),
        };
        config.limits.check()?;
        Ok(config)
    }

    /// The configuration with the relays `relays` (`--relay` words, `LISTEN=IP:PORT`) added:
    /// each is parsed ([`Relay::parse`]) and no two, nor a relay and the proxy or the DNS
    /// stub, may listen on the same port.
    pub fn with_relays(mut self, relays: &[impl AsRef<str>]) -> Result<Config, EgressError> {
        for text in relays {
            let relay = Relay::parse(text.as_ref())?;
            let taken = self.relays.iter().any(|r| r.listen == relay.listen)
                || self.listen.port() == relay.listen
                || self.dns.is_some_and(|dns| dns.port() == relay.listen);
            if taken {
                return Err(EgressError::Relay {
                    relay: text.as_ref().to_string(),
                    reason: format!(
                        "port {} is already the proxy's, the DNS stub's or another relay's",
                        relay.listen
                    ),
                });
            }
            self.relays.push(relay);
        }
        Ok(self)
    }

    /// The configuration with the `--allow-ech` host specs `specs` added; each is parsed as
    /// an allowlist entry ([`HostSpec::parse`]) and must be matched by one, since ECH is
    /// allowed only where the name is.
    ///
    /// ```
    /// use agentc_egress::Config;
    /// let none: [&str; 0] = [];
    /// let config = Config::from_args("0.0.0.0:3128", None, &["a.example"], &none).unwrap();
    /// assert!(config.clone().with_allow_ech(&["a.example"]).is_ok());
    /// assert!(config.with_allow_ech(&["b.example"]).is_err());
    /// ```
    pub fn with_allow_ech(mut self, specs: &[impl AsRef<str>]) -> Result<Config, EgressError> {
        for text in specs {
            let spec = HostSpec::parse(text.as_ref())?;
            if !self.allow.contains(&spec) {
                return Err(EgressError::HostSpec {
                    spec: text.as_ref().to_string(),
                    reason: "an --allow-ech entry must also be an --allow entry, as written"
                        .to_string(),
                });
            }
            if !self.allow_ech.contains(&spec) {
                self.allow_ech.push(spec);
            }
        }
        Ok(self)
    }

    /// Where the relay listening on `port` accepts connections: the proxy's own listen address
    /// with that port (all addresses in the container).
    pub fn relay_listen(&self, port: u16) -> SocketAddr {
        let ip: IpAddr = self.listen.ip();
        SocketAddr::new(ip, port)
    }

    /// The decision core for this allowlist.
    pub fn policy(&self) -> Policy {
        Policy::new(self.allow.clone(), self.allow_cidrs.clone())
            .with_allow_ech(self.allow_ech.clone())
    }
}

/// The proxy container's command: the full argv, starting with [`PROXY_BINARY`], that every
/// renderer (docker CLI, Engine API, Kubernetes) uses. Values are attached (`--allow=HOST`), so
/// none can be read as a flag. The ECH opt-ins (`--allow-ech=HOST`) follow the ranges; the
/// relays come last (`--relay=LISTEN=IP:PORT`).
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
    argv.extend(
        config
            .allow_ech
            .iter()
            .map(|spec| format!("--allow-ech={spec}")),
    );
    argv.extend(config.relays.iter().map(|relay| format!("--relay={relay}")));
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
    fn relays_parse_and_each_bad_one_is_refused_by_its_text() {
        let config = Config::from_args("0.0.0.0:3128", Some("0.0.0.0:53"), &["a.com"], &[""; 0])
            .unwrap()
            .with_relays(&["20000=10.213.0.3:8080", " 20001 = [fd00::3]:22 "])
            .unwrap();
        assert_eq!(
            config.relays,
            [
                Relay {
                    listen: 20000,
                    target: "10.213.0.3:8080".parse().unwrap()
                },
                Relay {
                    listen: 20001,
                    target: "[fd00::3]:22".parse().unwrap()
                },
            ]
        );
        assert_eq!(
            proxy_command(&config)[5..],
            [
                "--allow=a.com",
                "--relay=20000=10.213.0.3:8080",
                "--relay=20001=[fd00::3]:22"
            ]
        );
        let json = serde_json::to_string(&config).unwrap();
        assert_eq!(serde_json::from_str::<Config>(&json).unwrap(), config);
        for (bad, needle) in [
            ("20000", "expected LISTEN_PORT=IP:PORT"),
            ("x=10.0.0.3:80", "listen port"),
            ("0=10.0.0.3:80", "listen port"),
            ("70000=10.0.0.3:80", "listen port"),
            ("20000=box:80", "not IP:PORT"),
            ("20000=10.0.0.3", "not IP:PORT"),
            ("20000=0.0.0.0:80", "one address"),
            ("20000=10.0.0.3:0", "one address"),
            ("3128=10.0.0.3:80", "already"),
            ("53=10.0.0.3:80", "already"),
        ] {
            let error = config.clone().with_relays(&[bad]).unwrap_err().to_string();
            assert!(
                error.contains(bad) && error.contains(needle),
                "{bad}: {error}"
            );
        }
        let twice = config.with_relays(&["20000=10.0.0.4:80"]).unwrap_err();
        assert!(twice.to_string().contains("already"), "{twice}");
    }

    #[test]
    fn allow_ech_entries_must_be_allowlist_entries_and_reach_the_argv() {
        let none: [&str; 0] = [];
        let config = Config::from_args("0.0.0.0:3128", None, &["a.example", "*.b.example"], &none)
            .unwrap()
            .with_allow_ech(&["A.Example.", "*.b.example", "a.example"])
            .unwrap();
        assert_eq!(
            proxy_command(&config)[6..],
            ["--allow-ech=a.example", "--allow-ech=*.b.example"]
        );
        let json = serde_json::to_string(&config).unwrap();
        assert_eq!(serde_json::from_str::<Config>(&json).unwrap(), config);
        for (bad, needle) in [
            ("c.example", "must also be an --allow entry"),
            ("x.b.example", "must also be an --allow entry"),
            ("a.example:443", "must also be an --allow entry"),
            ("10.0.0.1", "IP addresses"),
        ] {
            let error = config
                .clone()
                .with_allow_ech(&[bad])
                .unwrap_err()
                .to_string();
            assert!(error.contains(bad) && error.contains(needle), "{error}");
        }
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
