//! `[proxy] http`/`https` with an allowlist enforced outside: the upstream proxy agentc's
//! egress proxy chains through ([`agentc_egress::upstream`]). The workload's proxy variables
//! still point at agentc's proxy; its `NO_PROXY` keeps loopback only (an allowlisted
//! destination sent around the proxy would find no route off the isolated network).
//!
//! What the allowlist means then follows the image-enforced behaviour of agent-containers: an
//! allowlist that names the upstream's host passes every destination to the upstream, which
//! decides; without it, only the allowlist's destinations go to the upstream. `no_proxy`
//! entries go direct, through agentc's proxy, and are checked against `egress.hosts`.

use crate::check::Checker;
use crate::explainer::Explainer;
use crate::profile::Profile;

/// The upstream proxy of a profile whose allowlist is enforced outside, as the egress proxy
/// reads it (`--upstream`, `--upstream-all`, `--direct`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chained {
    /// The field naming it (`proxy.https`, else `proxy.http`).
    pub field: &'static str,
    /// `host:port` (`[v6]:port`), the URL's port or its scheme's.
    pub address: String,
    /// The upstream is an `https://` one: agentc's proxy speaks TLS to it, verified against
    /// Mozilla's roots and the profile's CA ([`Chained::ca`]).
    pub tls: bool,
    /// The field naming the profile's CA (`proxy.ca_file`, `proxy.ca_dir`), when it has one.
    pub ca: Option<&'static str>,
    /// `host:port` of `proxy.http` when it names another upstream than `proxy.https`: plain-HTTP
    /// requests go there (`--upstream-http`), tunnels to [`Chained::address`].
    pub http_address: Option<String>,
    /// That other upstream is an `https://` one.
    pub http_tls: bool,
    /// The upstream's URL carries credentials: the proxy sends them as
    /// `Proxy-Authorization` from [`UPSTREAM_AUTH_ENV`], a secret the profile holds.
    pub auth: bool,
    /// The same for the other upstream of [`Chained::http_address`]
    /// ([`UPSTREAM_HTTP_AUTH_ENV`]).
    pub http_auth: bool,
    /// The upstream's host as the proxy compares it.
    pub host: String,
    /// [`Chained::address`] as a host spec (its host at its port), parsed once: an address
    /// the proxy connects to, for a renderer's network policy.
    pub spec: agentc_egress::HostSpec,
    /// [`Chained::http_address`] as a host spec, the same way.
    pub http_spec: Option<agentc_egress::HostSpec>,
    /// Whether `egress.hosts` names the upstream's host: every destination goes to it.
    pub all: bool,
    /// The `no_proxy` entries, as written.
    pub direct: Vec<String>,
}

impl Chained {
    /// The upstream as the egress proxy's `--upstream` takes it: `host:port`, or
    /// `https://host:port` for a TLS upstream.
    pub fn upstream(&self) -> String {
        if self.tls {
            format!("https://{}", self.address)
        } else {
            self.address.clone()
        }
    }

    /// The `--upstream-http` value when `proxy.http` names another upstream.
    pub fn http_upstream(&self) -> Option<String> {
        let address = self.http_address.as_ref()?;
        Some(if self.http_tls {
            format!("https://{address}")
        } else {
            address.clone()
        })
    }

    /// The variables of the proxy's environment holding the upstreams' credentials, as
    /// [`agentc_egress::Config::with_upstream_auth`] takes them: this upstream's
    /// ([`UPSTREAM_AUTH_ENV`]) and the plain-HTTP one's ([`UPSTREAM_HTTP_AUTH_ENV`]), each when
    /// its URL carries credentials.
    pub fn auth_variables(&self) -> (Option<&'static str>, Option<&'static str>) {
        (
            self.auth.then_some(UPSTREAM_AUTH_ENV),
            self.http_auth.then_some(UPSTREAM_HTTP_AUTH_ENV),
        )
    }

    /// Whether agentc's proxy speaks TLS to an upstream.
    pub fn any_tls(&self) -> bool {
        self.tls || (self.http_address.is_some() && self.http_tls)
    }
}

/// The variable of the egress proxy's environment holding the upstream's `user:password`
/// (`--upstream-auth-env`), when the profile's upstream URL carries credentials: a secret the
/// profile holds ([`crate::HeldSecrets`]), passed to the proxy by name.
pub const UPSTREAM_AUTH_ENV: &str = "AGENTC_UPSTREAM_AUTH";
/// The same for `proxy.http`'s upstream when it is another than `proxy.https`'s
/// (`--upstream-http-auth-env`).
pub const UPSTREAM_HTTP_AUTH_ENV: &str = "AGENTC_UPSTREAM_HTTP_AUTH";

/// The `user:password` a proxy URL carries (percent-decoded, as curl sends it in
/// `Proxy-Authorization`), or `None` without credentials or when the URL does not parse.
pub(crate) fn credentials(url: &str) -> Option<String> {
    let url = url::Url::parse(url.trim()).ok()?;
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let decode = |text: &str| {
        percent_encoding::percent_decode_str(text)
            .decode_utf8_lossy()
            .into_owned()
    };
    Some(format!(
        "{}:{}",
        decode(url.username()),
        decode(url.password().unwrap_or_default())
    ))
}

/// An upstream proxy URL as agentc's egress proxy reads it.
pub(crate) struct UpstreamAddress {
    /// `host:port` (`[v6]:port`), the URL's port or its scheme's.
    pub(crate) address: String,
    /// The host as the proxy compares it.
    pub(crate) host: String,
    /// `host:port` as a host spec.
    pub(crate) spec: agentc_egress::HostSpec,
    /// Spoken to over TLS (`https://`).
    pub(crate) tls: bool,
    /// The URL carries credentials (never their value here: [`credentials`]).
    pub(crate) auth: bool,
}

/// Why an upstream proxy URL cannot be chained through, or how the proxy reaches it. The
/// reason never repeats the URL, which may carry credentials.
pub(crate) fn upstream_address(url: &str) -> Result<UpstreamAddress, String> {
    let auth = credentials(url).is_some();
    let url = url::Url::parse(url.trim()).map_err(|error| error.to_string())?;
    let tls = match url.scheme() {
        "http" => false,
        "https" => true,
        other => {
            return Err(format!(
                "its scheme is {other}: agentc's egress proxy speaks HTTP or HTTPS to its \
                 upstream"
            ))
        }
    };
    let host = url.host_str().ok_or("it has no host")?.to_ascii_lowercase();
    let port = url.port_or_known_default().ok_or("it has no port")?;
    let spec = agentc_egress::HostSpec::parse(&host).map_err(|error| match error {
        agentc_egress::EgressError::HostSpec { reason, .. } => reason,
        other => other.to_string(),
    })?;
    let host = match &spec.pattern {
        agentc_egress::host::HostPattern::Exact(name) => name.clone(),
        _ => spec.to_string(),
    };
    Ok(UpstreamAddress {
        address: format!("{host}:{port}"),
        host,
        spec: agentc_egress::HostSpec {
            port: Some(port),
            ..spec
        },
        tls,
        auth,
    })
}

/// The upstream URLs of an allowlist enforced outside: each one agentc's proxy can chain
/// through (`http://` or `https://`; credentials are passed to it by name).
pub(crate) fn check(ck: &mut Checker, profile: &Profile, enforced_outside: bool) {
    if !enforced_outside {
        return;
    }
    let Some(proxy) = &profile.proxy else { return };
    for (field, url) in [("proxy.http", &proxy.http), ("proxy.https", &proxy.https)] {
        let Some(url) = url else { continue };
        if let Err(reason) = upstream_address(url) {
            ck.fail_when(
                &["egress.enforce"],
                field,
                format!(
                    "{field} cannot be chained through by agentc's egress proxy \
                     (egress.enforce = \"outside\"): {reason}"
                ),
                "write the upstream as http://HOST:PORT or https://HOST:PORT, or set \
                 egress.enforce = \"image\"",
            );
        }
    }
}

/// What `agentc explain` says of the upstream proxy `chained` (the profile's, if any).
pub(crate) fn explain(out: &mut Explainer, chained: Option<Chained>) {
    let Some(chained) = chained else {
        return;
    };
    let passes = if chained.all {
        "egress.hosts names the upstream's host, so every destination is passed to it and the \
         upstream decides (as the image's firewall allowing only the proxy would)"
            .to_string()
    } else {
        "only the destinations egress.hosts allows are passed to it, after agentc's proxy \
         checked them"
            .to_string()
    };
    let direct = if chained.direct.is_empty() {
        String::new()
    } else {
        format!(
            "; no_proxy entries ({}) go direct, through agentc's proxy, and are checked \
             against egress.hosts",
            chained.direct.join(", ")
        )
    };
    let http = match chained.http_upstream() {
        None => String::new(),
        Some(http) => format!(
            "; plain-HTTP requests go to proxy.http's upstream {http} instead{}",
            if chained.http_tls {
                " (over TLS, verified the same way)"
            } else {
                ""
            }
        ),
    };
    let (auth, http_auth) = chained.auth_variables();
    let variables: Vec<&str> = auth.into_iter().chain(http_auth).collect();
    let credentials = if variables.is_empty() {
        String::new()
    } else {
        format!(
            "; the credentials in the upstream's URL are sent to it as Proxy-Authorization, \
             passed to agentc's proxy by name ({}), never on its command line, and never \
             given to the sandbox",
            variables.join(", ")
        )
    };
    let tls = match (chained.tls, chained.ca) {
        (false, _) => String::new(),
        (true, Some(ca)) => {
            format!(" over TLS, its certificate verified against Mozilla's roots and {ca}")
        }
        (true, None) => " over TLS, its certificate verified against Mozilla's roots".into(),
    };
    out.line(format!(
        "  egress upstream proxy: agentc's proxy forwards through {}{tls} (CONNECT host:port \
         for tunnels, absolute-form for plain HTTP){http}, whatever range its address is in; \
         {passes}{direct}{credentials}; the sandbox's proxy variables point at agentc's proxy, \
         its NO_PROXY keeps loopback only  [{}]",
        chained.upstream(),
        out.at(chained.field)
    ));
}

/// The "widens the sandbox" item of an upstream every destination is passed to.
pub(crate) fn widens(out: &Explainer, chained: Option<Chained>, items: &mut Vec<String>) {
    if let Some(chained) = chained.filter(|c| c.all) {
        items.push(format!(
            "every destination outside no_proxy is passed to the upstream proxy {}{}, which \
             decides what the sandbox reaches  [{}]",
            chained.upstream(),
            chained
                .http_upstream()
                .map(|http| format!(" (plain HTTP to {http})"))
                .unwrap_or_default(),
            out.at(chained.field)
        ));
    }
}
