//! An upstream proxy that agentc's proxy forwards through (`--upstream=HOST:PORT`, or
//! `--upstream=https://HOST:PORT` spoken to over TLS): the profile's `[proxy] http`/`https`
//! when the allowlist is enforced outside.
//!
//! The workload still talks only to agentc's proxy; what leaves it for an allowed destination
//! goes to the upstream: a tunnel as `CONNECT host:port` through the upstream, a plain-HTTP
//! request in absolute form. What is allowed follows the image-enforced behaviour of
//! agent-containers, where a profile allowing only the proxy host reaches whatever that proxy
//! permits:
//!
//! - with `--upstream-all` (the allowlist names the upstream's host), every destination that no
//!   `--direct` entry names is passed to the upstream, which decides;
//! - without it, only the allowlist's destinations are, after the usual decision;
//! - a destination a `--direct` entry names (the profile's `no_proxy`) goes direct, through
//!   agentc's proxy, and is checked against the allowlist as without an upstream.
//!
//! The upstream's own address is connected to whatever range it is in (the profile names it);
//! no name is resolved for a destination the upstream is given (the upstream resolves it).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::EgressError;
use crate::host::{normalize_target, HostSpec};

/// The upstream proxy and what goes through it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Upstream {
    /// The upstream's host: a normalized name, or an address (`10.1.2.3`, `[fd00::1]`).
    pub host: String,
    /// The upstream's port.
    pub port: u16,
    /// The upstream is spoken to over TLS (`https://HOST:PORT`), verified against Mozilla's
    /// roots and the `--upstream-ca` certificates for [`Upstream::host`].
    #[serde(default)]
    pub tls: bool,
    /// Every destination no [`Upstream::direct`] entry names goes to the upstream, allowlisted
    /// or not (`--upstream-all`): the upstream decides.
    #[serde(default)]
    pub all: bool,
    /// Destinations that go direct, not through the upstream (`--direct=SPEC`, the profile's
    /// `no_proxy`), matched on the host whatever the port; still checked by the allowlist.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub direct: Vec<HostSpec>,
    /// Another upstream for plain-HTTP (absolute-form) requests (`--upstream-http=`, the
    /// profile's `proxy.http` naming another proxy than `proxy.https`): its host, port and
    /// scheme; [`Upstream::all`] and [`Upstream::direct`] are this upstream's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<Box<Upstream>>,
    /// The variable of the proxy's environment holding this upstream's `user:password`
    /// (`--upstream-auth-env=NAME`; for [`Upstream::http`], `--upstream-http-auth-env=`): sent
    /// as `Proxy-Authorization: Basic ...` on each CONNECT and absolute-form request to it.
    /// The value is a secret, passed by name: never on the command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_env: Option<String>,
}

impl Upstream {
    /// Reads `HOST:PORT` (`[v6]:PORT` for IPv6), `http://HOST:PORT` the same, or
    /// `https://HOST:PORT` for an upstream spoken to over TLS; the error names the text.
    ///
    /// ```
    /// use agentc_egress::upstream::Upstream;
    /// let upstream = Upstream::parse("Proxy.Corp.Example:3128").unwrap();
    /// assert_eq!(upstream.to_string(), "proxy.corp.example:3128");
    /// assert!(Upstream::parse("proxy.corp.example").is_err());
    /// let error = Upstream::parse("user:hunter2@proxy:3128").unwrap_err().to_string();
    /// assert!(!error.contains("hunter2"), "{error}");
    /// assert_eq!(Upstream::parse("[FD00::1]:3128").unwrap().to_string(), "[fd00::1]:3128");
    /// let tls = Upstream::parse("https://Secure-Proxy.corp.example:8443").unwrap();
    /// assert!(tls.tls);
    /// assert_eq!(tls.to_string(), "https://secure-proxy.corp.example:8443");
    /// ```
    pub fn parse(text: &str) -> Result<Upstream, EgressError> {
        let fail = |reason: String| EgressError::Upstream {
            upstream: text.to_string(),
            reason,
        };
        if text.contains('@') {
            // Never echoed: the text holds credentials.
            return Err(EgressError::Upstream {
                upstream: "(not shown)".into(),
                reason: "credentials (userinfo) in the upstream's address".into(),
            });
        }
        let (tls, rest) = match text.split_once("://") {
            None => (false, text),
            Some(("http", rest)) => (false, rest),
            Some(("https", rest)) => (true, rest),
            Some((scheme, _)) => {
                return Err(fail(format!("the scheme `{scheme}` is not http or https")))
            }
        };
        let (host, port) = rest
            .rsplit_once(':')
            .filter(|(host, _)| !host.is_empty() && (!host.contains(':') || host.ends_with(']')))
            .ok_or_else(|| fail("expected HOST:PORT, such as proxy.corp.example:3128".into()))?;
        let port = Some(port)
            .filter(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|port| port.parse::<u16>().ok())
            .filter(|port| *port != 0)
            .ok_or_else(|| fail(format!("the port `{port}` is not a number from 1 to 65535")))?;
        let host =
            normalize_target(host).map_err(|why| fail(format!("the host is not usable: {why}")))?;
        Ok(Upstream {
            host,
            port,
            tls,
            all: false,
            direct: Vec::new(),
            http: None,
            auth_env: None,
        })
    }

    /// The upstream plain-HTTP requests go to: [`Upstream::http`], else this one.
    pub fn for_http(&self) -> &Upstream {
        self.http.as_deref().unwrap_or(self)
    }

    /// Each `(variable, header)` of the upstreams' credentials (`Basic base64(user:password)`),
    /// read from `env`; an error naming the variable (never its value) when one is unset or
    /// cannot be sent in a header.
    pub fn authorizations(
        &self,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<Vec<(String, http::HeaderValue)>, EgressError> {
        let mut headers = Vec::new();
        let names = [
            self.auth_env.as_ref(),
            self.http.as_ref().and_then(|h| h.auth_env.as_ref()),
        ];
        for name in names.into_iter().flatten() {
            let fail = |reason: &str| EgressError::Upstream {
                upstream: self.to_string(),
                reason: format!("its credentials variable {name} {reason}"),
            };
            let value = env.get(name).ok_or_else(|| fail("is not set"))?;
            let basic = format!(
                "Basic {}",
                crate::credential::base64_encode(value.as_bytes())
            );
            let mut header = http::HeaderValue::from_str(&basic)
                .map_err(|_| fail("cannot be sent in a header"))?;
            header.set_sensitive(true);
            headers.push((name.clone(), header));
        }
        Ok(headers)
    }

    /// Whether a destination (a normalized host) goes to the upstream.
    pub fn carries(&self, host: &str) -> bool {
        !self.direct.iter().any(|spec| spec.matches_host(host))
    }

    /// The upstream's arguments of the proxy's command line: `--upstream=HOST:PORT`,
    /// `--upstream-http=HOST:PORT` when plain HTTP goes elsewhere, `--upstream-all` when set,
    /// then each `--direct=SPEC`.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec![format!("--upstream={self}")];
        if let Some(env) = &self.auth_env {
            args.push(format!("--upstream-auth-env={env}"));
        }
        if let Some(http) = &self.http {
            args.push(format!("--upstream-http={http}"));
            if let Some(env) = &http.auth_env {
                args.push(format!("--upstream-http-auth-env={env}"));
            }
        }
        if self.all {
            args.push("--upstream-all".into());
        }
        args.extend(self.direct.iter().map(|spec| format!("--direct={spec}")));
        args
    }
}

impl fmt::Display for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.tls {
            f.write_str("https://")?;
        }
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// The `--direct` specs of one `no_proxy` entry, as curl reads it: a name is itself and its
/// subdomains (`corp.example`, `.corp.example`), an address or a range is itself; `*` and
/// entries that name nothing the proxy could reach (loopback, malformed) give none.
///
/// ```
/// use agentc_egress::upstream::direct_specs;
/// let specs: Vec<String> = direct_specs(".corp.example").iter().map(|s| s.to_string()).collect();
/// assert_eq!(specs, ["corp.example", "*.corp.example"]);
/// assert_eq!(direct_specs("10.0.0.0/8")[0].to_string(), "10.0.0.0/8");
/// assert!(direct_specs("127.0.0.1").is_empty());
/// ```
pub fn direct_specs(entry: &str) -> Vec<HostSpec> {
    let entry = entry.trim();
    let name = entry.strip_prefix("*.").or_else(|| entry.strip_prefix('.'));
    let name = name.unwrap_or(entry);
    if name.is_empty() || name == "*" {
        return Vec::new();
    }
    match HostSpec::parse(name) {
        Ok(spec) if spec.is_addresses() => vec![spec],
        Ok(spec) if spec.port.is_none() => {
            let wildcard = HostSpec::parse(&format!("*.{spec}"));
            std::iter::once(spec).chain(wildcard.ok()).collect()
        }
        _ => Vec::new(),
    }
}
