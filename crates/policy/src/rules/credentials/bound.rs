//! The keys a launch binds ([`bindings`]): each `[credentials.NAME]` table, then the agent
//! preset's (the provider's key, Langfuse's pair) that no table takes, each bound to the host
//! that serves it: the provider's endpoint or its default host, Langfuse's base URL. A preset
//! key the egress proxy could not deliver ([`Undeliverable`]: an endpoint in plain HTTP, by
//! address or a wildcard, a host the proxy does not let through) is refused by field when the
//! profile is checked, never launched as a placeholder that goes nowhere.

use agentc_egress::credential::{parse_host, Credential, Scheme};

use crate::document::LoadedProfile;
use crate::profile::{AgentName, CredentialMode, CredentialScheme, Profile};
use crate::rules::egress::outside::{enforced_outside, proxy_policy};

/// One key a launch binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bound {
    pub(crate) name: String,
    pub(crate) variable: String,
    pub(crate) user_variable: Option<String>,
    /// The hosts as the proxy reads them (`host` or `host:port`), those the allowlist allows.
    pub(crate) hosts: Vec<String>,
    pub(crate) header: String,
    pub(crate) scheme: Option<CredentialScheme>,
    pub(crate) prefix: String,
    pub(crate) user_prefix: String,
    /// The profile field it comes from (a table, or the preset's field).
    pub(crate) field: String,
    /// The agent preset bound it (not a `[credentials.NAME]` table).
    pub(crate) preset: bool,
}

impl Bound {
    pub(crate) fn credential(&self) -> Option<Credential> {
        let hosts = self
            .hosts
            .iter()
            .filter_map(|host| parse_host(host).ok())
            .collect::<Vec<_>>();
        (!hosts.is_empty()).then(|| Credential {
            name: self.name.clone(),
            header: self.header.clone(),
            scheme: match self.scheme {
                None => Scheme::Plain,
                Some(CredentialScheme::Bearer) => Scheme::Bearer,
                Some(CredentialScheme::Basic) => Scheme::Basic,
            },
            env: self.variable.clone(),
            user_env: self.user_variable.clone(),
            hosts,
        })
    }
}

/// Whether the egress proxy of this profile's launches may hold keys.
pub(super) fn proxy_holds_keys(profile: &Profile) -> bool {
    enforced_outside(profile) && profile.credentials.mode == CredentialMode::Proxy
}

/// The host (and port, when not 443) an endpoint's key is bound to, as the proxy reads it;
/// `Err` with why the proxy could not deliver a key there (a plain `http` URL, an address, a
/// wildcard); `None` for a URL that does not parse (refused by its own check).
fn endpoint_host(url: &str) -> Option<Result<String, String>> {
    let url = url::Url::parse(url.trim()).ok()?;
    let host = url.host()?;
    if url.scheme() != "https" {
        return Some(Err(format!(
            "it is plain {}: the proxy sets a key only inside the TLS it terminates, never in \
             clear",
            url.scheme()
        )));
    }
    let name = match host {
        url::Host::Domain(name) => name.to_ascii_lowercase(),
        url::Host::Ipv4(_) | url::Host::Ipv6(_) => {
            return Some(Err(
                "its host is an IP address: the proxy terminates TLS to set a key only for a \
                 host name (its launch CA signs names, and a client sends no server name for \
                 an address)"
                    .to_string(),
            ))
        }
    };
    let host = match url.port() {
        Some(port) if port != 443 => format!("{name}:{port}"),
        _ => name,
    };
    Some(match parse_host(&host) {
        Ok(_) => Ok(host),
        Err(why) if host.contains('*') => Err(format!(
            "its host is a wildcard ({why}), not the one host that serves it"
        )),
        Err(why) => Err(format!("its host is not one a key can be bound to: {why}")),
    })
}

/// A key of the agent preset that agentc's egress proxy could not deliver: the profile is
/// refused at `field`, rather than launched with a placeholder that goes nowhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Undeliverable {
    pub(super) field: &'static str,
    /// The field naming the key (`provider.api_key_env`, `langfuse.secret_key_env`).
    pub(super) key: &'static str,
    /// The preset binding's name and variables, which a table may take.
    name: String,
    variables: Vec<String>,
    pub(super) message: String,
    pub(super) hint: String,
}

/// The fields besides its own and its key's that a refusal of a preset key reads.
pub(super) const PRESET_DEPENDS: [&str; 6] = [
    "credentials.mode",
    "egress.mode",
    "egress.enforce",
    "egress.hosts",
    "proxy.http",
    "proxy.https",
];

/// The hint of a key whose endpoint cannot receive it from the proxy.
fn endpoint_hint(field: &str) -> String {
    format!(
        "write {field} as https://NAME[:PORT]/... with the host name its certificate carries \
         (the proxy then sets the key on requests to it), or set [credentials] mode = \"env\" \
         to keep the real keys in the sandbox's environment (reported as credentials-env)"
    )
}

/// The preset's binding of the provider's key, if it has one: `None` for a provider agentc
/// does not know without an endpoint (its key stays in the environment, reported); `Err` for
/// an endpoint the proxy cannot deliver the key to.
fn provider_binding(profile: &Profile) -> Option<Result<Bound, Undeliverable>> {
    let provider = profile.provider.as_ref()?;
    let variable = provider.api_key_env.clone()?;
    let kind = provider.kind.trim().to_ascii_lowercase();
    let endpoint = provider.endpoint.as_deref();
    let (name, header, scheme, default_host, prefix) = match kind.as_str() {
        "anthropic" => (
            "anthropic",
            "x-api-key",
            None,
            Some("api.anthropic.com"),
            "sk-ant-",
        ),
        "openai" => (
            "openai",
            "authorization",
            Some(CredentialScheme::Bearer),
            Some("api.openai.com"),
            "sk-",
        ),
        "openrouter" => (
            "openrouter",
            "authorization",
            Some(CredentialScheme::Bearer),
            Some("openrouter.ai"),
            "sk-or-",
        ),
        _ => (
            "provider",
            "authorization",
            Some(CredentialScheme::Bearer),
            None,
            "sk-",
        ),
    };
    let host = match endpoint {
        Some(endpoint) => match endpoint_host(endpoint)? {
            Ok(host) => host,
            Err(why) => {
                return Some(Err(Undeliverable {
                    field: "provider.endpoint",
                    key: "provider.api_key_env",
                    name: name.to_string(),
                    variables: vec![variable],
                    message: format!(
                        "provider.endpoint cannot receive the key of provider.api_key_env, \
                         which agentc's egress proxy holds: {why}"
                    ),
                    hint: endpoint_hint("provider.endpoint"),
                }))
            }
        },
        None => default_host?.to_string(),
    };
    Some(Ok(Bound {
        name: name.to_string(),
        variable,
        user_variable: None,
        hosts: vec![host],
        header: header.to_string(),
        scheme,
        prefix: prefix.to_string(),
        user_prefix: String::new(),
        field: "provider.api_key_env".to_string(),
        preset: true,
    }))
}

/// The preset's binding of Langfuse's keys; `Err` for a base URL the proxy cannot deliver
/// them to.
fn langfuse_binding(profile: &Profile) -> Option<Result<Bound, Undeliverable>> {
    let langfuse = &profile.langfuse;
    if !langfuse.enabled {
        return None;
    }
    let host = match endpoint_host(langfuse.base_url.as_deref()?)? {
        Ok(host) => host,
        Err(why) => {
            return Some(Err(Undeliverable {
                field: "langfuse.base_url",
                key: "langfuse.secret_key_env",
                name: "langfuse".to_string(),
                variables: vec![
                    langfuse.secret_key_env.clone(),
                    langfuse.public_key_env.clone(),
                ],
                message: format!(
                    "langfuse.base_url cannot receive Langfuse's keys, which agentc's egress \
                     proxy holds: {why}"
                ),
                hint: endpoint_hint("langfuse.base_url"),
            }))
        }
    };
    Some(Ok(Bound {
        name: "langfuse".to_string(),
        variable: langfuse.secret_key_env.clone(),
        user_variable: Some(langfuse.public_key_env.clone()),
        hosts: vec![host],
        header: "authorization".to_string(),
        scheme: Some(CredentialScheme::Basic),
        prefix: "sk-lf-".to_string(),
        user_prefix: "pk-lf-".to_string(),
        field: "langfuse.secret_key_env".to_string(),
        preset: true,
    }))
}

/// Whether `host:port` (as a binding writes it) is a destination the profile's egress proxy
/// lets through: `egress.hosts`, an endpoint the profile names at its own port, or anything an
/// upstream proxy that `egress.hosts` names is passed.
pub(super) fn reachable(loaded: &LoadedProfile, host: &str) -> bool {
    let Ok((name, port)) = parse_host(host) else {
        return false;
    };
    proxy_policy(loaded).is_some_and(|policy| policy.decide_name(&name, port).is_ok())
}

/// Whether a table of `tables` takes a preset binding of `name` and `variables`: the same
/// name, or a variable in common.
fn taken(tables: &[Bound], name: &str, variables: &[&String]) -> bool {
    tables.iter().any(|b| {
        b.name == name
            || [Some(&b.variable), b.user_variable.as_ref()]
                .into_iter()
                .flatten()
                .any(|v| variables.contains(&v))
    })
}

/// The agent preset's keys that no table takes, when the proxy may hold keys: each bound to
/// its host, or why the proxy could not deliver it (an endpoint it cannot set a key for, a
/// host it does not let through).
pub(super) fn preset_bindings(
    loaded: &LoadedProfile,
    tables: &[Bound],
) -> Vec<Result<Bound, Undeliverable>> {
    let profile = &loaded.profile;
    if !proxy_holds_keys(profile) || profile.agent == AgentName::Custom {
        return Vec::new();
    }
    [provider_binding(profile), langfuse_binding(profile)]
        .into_iter()
        .flatten()
        .filter(|preset| match preset {
            Ok(p) => {
                let variables: Vec<&String> = [Some(&p.variable), p.user_variable.as_ref()]
                    .into_iter()
                    .flatten()
                    .collect();
                !taken(tables, &p.name, &variables)
            }
            Err(u) => !taken(tables, &u.name, &u.variables.iter().collect::<Vec<_>>()),
        })
        .map(|preset| {
            let preset = preset?;
            let Some(host) = preset.hosts.iter().find(|host| !reachable(loaded, host)) else {
                return Ok(preset);
            };
            let (field, key, hint) = if preset.name == "langfuse" {
                (
                    "langfuse.base_url",
                    "langfuse.secret_key_env",
                    format!("add \"{host}\" to egress.hosts"),
                )
            } else {
                (
                    "provider.api_key_env",
                    "provider.api_key_env",
                    format!(
                        "add \"{host}\" to egress.hosts, set provider.endpoint to the host \
                         that serves the provider, or remove api_key_env"
                    ),
                )
            };
            Err(Undeliverable {
                field,
                key,
                name: preset.name.clone(),
                variables: [Some(preset.variable.clone()), preset.user_variable.clone()]
                    .into_iter()
                    .flatten()
                    .collect(),
                message: format!(
                    "{key} names the key of {host}, which agentc's egress proxy does not let \
                     through (egress.hosts does not allow it): the key would go nowhere"
                ),
                hint,
            })
        })
        .collect()
}

/// The keys a launch of `profile` binds: its tables, then the preset's for variables (and
/// names) no table takes; none unless the proxy may hold keys. A preset key the proxy could
/// not deliver is refused when the profile is checked ([`check`]), never bound.
pub(crate) fn bindings(loaded: &LoadedProfile) -> Vec<Bound> {
    let profile = &loaded.profile;
    if !proxy_holds_keys(profile) {
        return Vec::new();
    }
    let mut bound = tables(profile);
    let presets: Vec<Bound> = preset_bindings(loaded, &bound)
        .into_iter()
        .flatten()
        .collect();
    bound.extend(presets);
    bound
}

/// The `[credentials.NAME]` tables, as bindings.
pub(super) fn tables(profile: &Profile) -> Vec<Bound> {
    profile
        .credentials
        .bindings
        .iter()
        .map(|(name, binding)| Bound {
            name: name.clone(),
            variable: binding.from_env.trim().to_string(),
            user_variable: binding.user_from_env.as_ref().map(|v| v.trim().to_string()),
            hosts: binding
                .hosts
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .collect(),
            header: binding
                .header
                .as_deref()
                .unwrap_or("authorization")
                .trim()
                .to_ascii_lowercase(),
            scheme: binding.scheme,
            prefix: binding.prefix.clone().unwrap_or_default(),
            user_prefix: String::new(),
            field: format!("credentials.{name}"),
            preset: false,
        })
        .collect()
}
