//! The proxy's configuration: what it allows, where it listens, the published ports it relays
//! to the workload ([`Relay`]), and its bounds.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::addr::Cidr;
use crate::credential::CredentialConfig;
use crate::error::EgressError;
use crate::host::HostSpec;
use crate::policy::Policy;
use crate::upstream::{direct_specs, Upstream};
use crate::wildcard::{DEFAULT_NAMES_PER_MINUTE, MAX_NAMES_PER_MINUTE};

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
    /// Distinct names allowed only through one `*.domain` entry that may be resolved in any
    /// 60 seconds (`--wildcard-names-per-minute`; [`crate::wildcard`]), 1 to
    /// [`MAX_NAMES_PER_MINUTE`]; one more is refused with reason `wildcard-rate`.
    pub wildcard_names_per_minute: u32,
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
            wildcard_names_per_minute: DEFAULT_NAMES_PER_MINUTE,
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
        let w = u64::from(self.wildcard_names_per_minute);
        limit(
            "wildcard_names_per_minute",
            w,
            (1..=u64::from(MAX_NAMES_PER_MINUTE)).contains(&w),
            "must be 1 to 1000",
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
    /// The credentials injected into requests to their hosts, and the launch CA that
    /// terminates TLS for those hosts only ([`crate::credential`]).
    #[serde(default, skip_serializing_if = "CredentialConfig::is_empty")]
    pub credentials: CredentialConfig,
    /// The upstream proxy every connection for a destination goes through, when the profile
    /// names one (`--upstream`, [`crate::upstream`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
    /// Where the proxy keeps its bounded audit files (`--audit-dir`, [`crate::audit`]): a
    /// directory of its own; `None` writes the decision lines to stdout only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_dir: Option<String>,
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
            credentials: CredentialConfig::default(),
            upstream: None,
            audit_dir: None,
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
        // The listen addresses are refused before the allowlist, as the words are read.
        socket_address(listen)?;
        dns.map(socket_address).transpose()?;
        let allow = allow
            .iter()
            .map(|spec| HostSpec::parse(spec.as_ref()))
            .collect::<Result<_, _>>()?;
        Config::from_specs(listen, dns, allow, allow_cidrs)
    }

    /// [`Config::from_args`] with the allowlist already parsed: for a caller that holds its
    /// host specs (agentc's resolver parses a profile's hosts once, when it loads it). Its
    /// `--allow=` words are the specs as [`HostSpec`] prints them, as from the same text.
    pub fn from_specs(
        listen: &str,
        dns: Option<&str>,
        allow: Vec<HostSpec>,
        allow_cidrs: &[impl AsRef<str>],
    ) -> Result<Config, EgressError> {
        let config = Config {
            listen: socket_address(listen)?,
            dns: dns.map(socket_address).transpose()?,
            allow,
            allow_cidrs: allow_cidrs
                .iter()
                .map(|cidr| Cidr::parse(cidr.as_ref()))
                .collect::<Result<_, _>>()?,
            relays: Vec::new(),
            allow_ech: Vec::new(),
            limits: Limits::default(),
            credentials: CredentialConfig::default(),
            upstream: None,
            audit_dir: None,
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

    /// The configuration with the upstream proxy `upstream` (`HOST:PORT`), passing it every
    /// destination when `all` (the allowlist names the upstream), and the `no_proxy` entries
    /// `direct` read as [`direct_specs`] reads them (`--direct` words are specs already and
    /// read the same).
    ///
    /// ```
    /// use agentc_egress::Config;
    /// let none: [&str; 0] = [];
    /// let config = Config::from_args("0.0.0.0:3128", None, &["proxy.corp.example"], &none)
    ///     .unwrap()
    ///     .with_upstream("proxy.corp.example:3128", true, &[".corp.example"])
    ///     .unwrap();
    /// let argv = agentc_egress::proxy_command(&config);
    /// assert_eq!(argv[5..], ["--upstream=proxy.corp.example:3128", "--upstream-all",
    ///     "--direct=corp.example", "--direct=*.corp.example"]);
    /// ```
    pub fn with_upstream(
        mut self,
        upstream: &str,
        all: bool,
        direct: &[impl AsRef<str>],
    ) -> Result<Config, EgressError> {
        let mut parsed = Upstream::parse(upstream)?;
        parsed.all = all;
        for entry in direct {
            for spec in direct_specs(entry.as_ref()) {
                if !parsed.direct.contains(&spec) {
                    parsed.direct.push(spec);
                }
            }
        }
        self.upstream = Some(parsed);
        Ok(self)
    }

    /// The configuration whose upstream (`env`) and plain-HTTP upstream (`http_env`, after
    /// [`Config::with_upstream_http`]; without one, the same upstream with these other
    /// credentials for plain HTTP) send `Proxy-Authorization` with the `user:password` of
    /// those variables of the proxy's environment (`--upstream-auth-env`,
    /// `--upstream-http-auth-env`), named only; an error without an upstream.
    pub fn with_upstream_auth(
        mut self,
        env: Option<&str>,
        http_env: Option<&str>,
    ) -> Result<Config, EgressError> {
        let Some(upstream) = self.upstream.as_mut() else {
            return Err(EgressError::Upstream {
                upstream: "--upstream-auth-env".into(),
                reason: "credentials for an upstream need --upstream".into(),
            });
        };
        upstream.auth_env = env.map(str::to_string);
        match (upstream.http.as_mut(), http_env) {
            (Some(http), _) => http.auth_env = http_env.map(str::to_string),
            // Plain HTTP to the same upstream with other credentials: an upstream of its own.
            (None, Some(http_env)) => {
                upstream.http = Some(Box::new(Upstream {
                    host: upstream.host.clone(),
                    port: upstream.port,
                    tls: upstream.tls,
                    all: false,
                    direct: Vec::new(),
                    http: None,
                    auth_env: Some(http_env.to_string()),
                }))
            }
            (None, None) => {}
        }
        Ok(self)
    }

    /// The configuration whose plain-HTTP requests go to the upstream `http`
    /// (`[https://]HOST:PORT`) rather than [`Config::with_upstream`]'s, which keeps the tunnels;
    /// an error without an upstream.
    ///
    /// ```
    /// use agentc_egress::Config;
    /// let none: [&str; 0] = [];
    /// let config = Config::from_args("0.0.0.0:3128", None, &["api.example"], &none)
    ///     .unwrap()
    ///     .with_upstream("https://tunnels.corp.example:8443", false, &none)
    ///     .unwrap()
    ///     .with_upstream_http("plain.corp.example:3128")
    ///     .unwrap();
    /// let argv = agentc_egress::proxy_command(&config);
    /// assert_eq!(argv[5..], ["--upstream=https://tunnels.corp.example:8443",
    ///     "--upstream-http=plain.corp.example:3128"]);
    /// ```
    pub fn with_upstream_http(mut self, http: &str) -> Result<Config, EgressError> {
        let parsed = Upstream::parse(http)?;
        let Some(upstream) = self.upstream.as_mut() else {
            return Err(EgressError::Upstream {
                upstream: parsed.to_string(),
                reason: "an upstream for plain HTTP needs --upstream".into(),
            });
        };
        if parsed.host != upstream.host
            || parsed.port != upstream.port
            || parsed.tls != upstream.tls
        {
            upstream.http = Some(Box::new(parsed));
        }
        Ok(self)
    }

    /// The configuration with the credential settings `credentials`: each credential's hosts
    /// must be allowed by the allowlist (a key is bound only where the sandbox may go).
    pub fn with_credentials(
        mut self,
        credentials: CredentialConfig,
    ) -> Result<Config, EgressError> {
        let policy = self.policy();
        for credential in &credentials.credentials {
            for (host, port) in &credential.hosts {
                if policy.decide_name(host, *port).is_err() {
                    return Err(EgressError::Credential {
                        credential: credential.to_string(),
                        reason: format!("{host}:{port} is not allowed by any --allow entry"),
                    });
                }
            }
        }
        self.credentials = credentials;
        Ok(self)
    }

    /// The configuration whose proxy keeps its audit files in `dir` (`--audit-dir`, an
    /// absolute path; [`crate::audit`]).
    ///
    /// ```
    /// use agentc_egress::Config;
    /// let none: [&str; 0] = [];
    /// let config = Config::from_args("0.0.0.0:3128", None, &["a.example"], &none)
    ///     .unwrap()
    ///     .with_audit_dir("/var/lib/agentc/egress-audit")
    ///     .unwrap();
    /// let argv = agentc_egress::proxy_command(&config);
    /// assert_eq!(argv[5..], ["--audit-dir=/var/lib/agentc/egress-audit"]);
    /// assert!(Config::default().with_audit_dir("relative").is_err());
    /// ```
    pub fn with_audit_dir(mut self, dir: &str) -> Result<Config, EgressError> {
        if !dir.starts_with('/') || dir.contains('\0') {
            return Err(EgressError::Audit {
                path: dir.to_string(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "--audit-dir takes an absolute path",
                ),
            });
        }
        self.audit_dir = Some(dir.to_string());
        Ok(self)
    }

    /// Where the relay listening on `port` accepts connections: every address of the proxy's
    /// container (the unspecified address of the listen address's family), since the host
    /// publishes the relay through the outside network while the proxy itself listens on its
    /// isolated-network address only; on loopback when the proxy listens on loopback (a proxy
    /// run in-process, whose relays stay on loopback too).
    pub fn relay_listen(&self, port: u16) -> SocketAddr {
        let ip: IpAddr = match self.listen.ip() {
            ip if ip.is_loopback() => ip,
            IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
            IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
        };
        SocketAddr::new(ip, port)
    }

    /// The decision core for this allowlist.
    pub fn policy(&self) -> Policy {
        Policy::new(self.allow.clone(), self.allow_cidrs.clone())
            .with_allow_ech(self.allow_ech.clone())
            .with_upstream(self.upstream.clone())
    }
}

/// The proxy container's command: the full argv, starting with [`PROXY_BINARY`], that every
/// renderer (docker CLI, Engine API, Kubernetes) uses. Values are attached (`--allow=HOST`), so
/// none can be read as a flag. The ECH opt-ins (`--allow-ech=HOST`) follow the ranges, then
/// `--wildcard-names-per-minute=N` when N is not the default, then `--audit-dir=DIR` when set,
/// then the credential settings ([`CredentialConfig::args`]), then the upstream proxy ([`Upstream::args`]); the relays come
/// last
/// (`--relay=LISTEN=IP:PORT`).
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
    let wildcard_names = config.limits.wildcard_names_per_minute;
    if wildcard_names != DEFAULT_NAMES_PER_MINUTE {
        argv.push(format!("--wildcard-names-per-minute={wildcard_names}"));
    }
    if let Some(dir) = &config.audit_dir {
        argv.push(format!("--audit-dir={dir}"));
    }
    argv.extend(config.credentials.args());
    if let Some(upstream) = &config.upstream {
        argv.extend(upstream.args());
    }
    argv.extend(config.relays.iter().map(|relay| format!("--relay={relay}")));
    argv
}

/// The proxy container's health check command (`docker run --health-cmd`, a Kubernetes
/// `exec` probe): exits 0 when the proxy answers `GET /healthz` on its own address
/// ([`health_target`]). Without `--proxy`, `agentc egress-proxy health` finds the same address
/// in the running proxy's own command line (the image's `HEALTHCHECK` and both executors' `docker
/// exec` use that form: neither knows the address).
pub fn health_command(config: &Config) -> Vec<String> {
    let target = health_target(config.listen);
    vec![
        PROXY_BINARY.into(),
        "egress-proxy".into(),
        "health".into(),
        format!("--proxy={target}"),
    ]
}

/// Where a health check reaches the proxy listening on `listen`: that address, or loopback
/// when it listens on every address.
pub fn health_target(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V6(ip) if ip.is_unspecified() => Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}

/// The listen address in a proxy's command line (`serve` with `--listen=IP:PORT` or `--listen
/// IP:PORT`), or the default when it names none; `None` when `argv` is not a proxy's `serve`.
/// What `agentc egress-proxy health` reads from `/proc/1/cmdline` (the proxy is its
/// container's first process).
pub fn listen_of(argv: &[String]) -> Option<SocketAddr> {
    let serve = argv.iter().position(|word| word == "serve")?;
    if serve == 0 || argv[serve - 1] != "egress-proxy" {
        return None;
    }
    let mut words = argv[serve + 1..].iter();
    while let Some(word) = words.next() {
        let value = match word.strip_prefix("--listen") {
            Some(rest) if rest.starts_with('=') => rest[1..].to_string(),
            Some("") => words.next()?.clone(),
            _ => continue,
        };
        return value.parse().ok();
    }
    DEFAULT_LISTEN.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_health_check_finds_the_address_the_proxy_listens_on() {
        let words = |text: &str| text.split(' ').map(String::from).collect::<Vec<_>>();
        let listen = |text: &str| listen_of(&words(text)).map(|a| health_target(a).to_string());
        for (argv, target) in [
            (
                "/usr/local/bin/agentc egress-proxy serve --listen=10.213.4.2:3128 --allow=a.test",
                Some("10.213.4.2:3128"),
            ),
            (
                "agentc egress-proxy serve --dns=10.0.0.2:53 --listen 10.0.0.2:3129",
                Some("10.0.0.2:3129"),
            ),
            (
                "agentc egress-proxy serve --allow=a.test",
                Some("127.0.0.1:3128"),
            ),
            (
                "agentc egress-proxy serve --listen=[::]:3128",
                Some("[::1]:3128"),
            ),
            ("agentc egress-proxy serve --listen=nonsense", None),
            ("agentc egress-proxy health", None),
            ("sh -c serve", None),
        ] {
            assert_eq!(listen(argv).as_deref(), target, "{argv}");
        }
        let config = Config::from_args(
            "10.213.4.2:3128",
            Some("10.213.4.2:53"),
            &["a.test"],
            &[""; 0],
        )
        .unwrap()
        .with_relays(&["20000=10.213.4.3:8080"])
        .unwrap();
        assert_eq!(listen_of(&proxy_command(&config)), Some(config.listen));
        assert_eq!(health_command(&config)[3], "--proxy=10.213.4.2:3128");
        // The relays listen on every address (the host publishes them through the outside
        // network), unless the proxy listens on loopback.
        assert_eq!(config.relay_listen(20000).to_string(), "0.0.0.0:20000");
        let local = Config::from_args("127.0.0.1:0", None, &["a.test"], &[""; 0]).unwrap();
        assert_eq!(local.relay_listen(7).to_string(), "127.0.0.1:7");
    }

    #[test]
    fn a_wildcard_limit_other_than_the_default_is_on_the_command_line_and_checked() {
        let mut config = Config::from_args("10.0.0.2:3128", None, &["*.a.test"], &[""; 0]).unwrap();
        assert!(!proxy_command(&config)
            .iter()
            .any(|word| word.starts_with("--wildcard-names-per-minute")));
        config.limits.wildcard_names_per_minute = 3;
        config = config.with_relays(&["20000=10.0.0.3:80"]).unwrap();
        assert_eq!(
            proxy_command(&config)[4..],
            [
                "--allow=*.a.test",
                "--wildcard-names-per-minute=3",
                "--relay=20000=10.0.0.3:80"
            ]
        );
        for bad in [0, 1001] {
            config.limits.wildcard_names_per_minute = bad;
            let error = config.limits.check().unwrap_err().to_string();
            assert!(error.contains("wildcard_names_per_minute"), "{error}");
        }
    }

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
            ("0.0.0.0:3128", None, "127.1", "10.0.0.0/8", "`127.1`"),
            ("0.0.0.0:3128", None, "a.com", "10.0.0.1/8", "`10.0.0.1/8`"),
        ] {
            let error = Config::from_args(listen, dns, &[allow], &[cidr]).unwrap_err();
            assert!(error.to_string().contains(needle), "{error}");
        }
        let config = Config::from_args("127.0.0.1:1", None, &none, &none).unwrap();
        assert_eq!(config.dns, None);
    }

    #[test]
    fn parsed_specs_give_the_words_their_text_gives() {
        let words = [
            "API.Example.com.",
            "*.b.example:8443",
            "10.1.2.0/24",
            "[fd00::1]:443",
        ];
        let cidrs = ["10.20.0.0/16"];
        let parsed: Vec<HostSpec> = words.iter().map(|w| HostSpec::parse(w).unwrap()).collect();
        let from_specs =
            Config::from_specs("0.0.0.0:3128", Some("0.0.0.0:53"), parsed, &cidrs).unwrap();
        let from_args = Config::from_args("0.0.0.0:3128", Some("0.0.0.0:53"), &words, &cidrs);
        assert_eq!(
            proxy_command(&from_specs),
            proxy_command(&from_args.unwrap())
        );
        assert_eq!(
            proxy_command(&from_specs)[5..9],
            [
                "--allow=api.example.com",
                "--allow=*.b.example:8443",
                "--allow=10.1.2.0/24",
                "--allow=[fd00::1]:443"
            ]
        );
        // The listen address is refused before a bad word, as the words are read.
        let refused = Config::from_args("nowhere", None, &["0x0a000001"], &cidrs).unwrap_err();
        assert!(
            matches!(refused, EgressError::ListenAddress { .. }),
            "{refused}"
        );
        assert!(Config::from_specs("127.0.0.1:1", None, Vec::new(), &["10.0.0.1/8"]).is_err());
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
            ("127.1", "dotted decimal"),
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
