//! `[credentials]`: the keys agentc's egress proxy holds and sets for their hosts only, so that
//! the sandbox holds a placeholder instead of the key (issue 21).
//!
//! Which keys are bound ([`bindings`]): each `[credentials.NAME]` table, then, with the
//! allowlist enforced outside and `mode = "proxy"` (the default), the agent preset's own: the
//! provider's key (`provider.api_key_env`: `x-api-key` for Anthropic, `Authorization: Bearer`
//! for OpenAI, OpenRouter and any OpenAI-compatible `https` endpoint) and Langfuse's keys
//! (`Authorization: Basic` of the public and secret key). The checks refuse, by field, a table
//! where the proxy does not run (`egress.enforce = "image"`, `deny`, `unrestricted`, a
//! gateway), a host the allowlist does not allow, a table next to `mode = "env"`, and a preset
//! key the proxy could not deliver (`bound`: an endpoint in plain HTTP, by address or a
//! wildcard, a default host the proxy does not let through), never launched as a placeholder
//! that goes nowhere. A provider `endpoint` gets the key at its own port, which the proxy
//! allows; behind an upstream proxy the proxy terminates, sets the key, then opens the
//! connection through the upstream's `CONNECT`. The
//! resolution ([`Resolver::credential_config`], [`Resolver::credential_env`]) gives the proxy
//! its `--credential` words, the keys by name and the placeholders, and the CA volume; the
//! workload its placeholders ([`EnvValue::Placeholder`], made at launch: the spec holds no
//! per-launch value), the CA volume read-only and the trust variables. Also the explanation and
//! the `credentials-env` finding.

use agentc_egress::credential::{
    is_credential_name, is_header_name, parse_host, placeholder_variable, Credential,
    CredentialConfig, OnReplay,
};

use crate::check::Checker;
use crate::context::Resolver;
use crate::error::PolicyError;
use crate::explainer::Explainer;
use crate::finding::{FindingCode, Report};
use crate::keys;
use crate::profile::{CredentialMode, CredentialScheme, EgressMode, Profile, ReplayAction};
use crate::rules::egress::outside::enforced_outside;
use crate::spec::{
    ContainerSpec, CredentialSpec, EnvValue, EnvVar, Mount, MountSource, Origin, CA_BUNDLE_PATH,
    CA_CERT_PATH, CA_DIR_TARGET, UPSTREAM_CA_TARGET,
};

mod bound;

pub(crate) use bound::{bindings, Bound};
use bound::{preset_bindings, proxy_holds_keys, reachable, tables, PRESET_DEPENDS};

/// The variables that point a workload's TLS clients at the launch CA: each names the bundle
/// (Mozilla's roots, the profile's CA, the launch CA), `NODE_EXTRA_CA_CERTS` the CA alone
/// (Node adds it to its own roots).
pub const TRUST_VARIABLES: [(&str, &str); 5] = [
    ("SSL_CERT_FILE", CA_BUNDLE_PATH),
    ("REQUESTS_CA_BUNDLE", CA_BUNDLE_PATH),
    ("CURL_CA_BUNDLE", CA_BUNDLE_PATH),
    ("GIT_SSL_CAINFO", CA_BUNDLE_PATH),
    ("NODE_EXTRA_CA_CERTS", CA_CERT_PATH),
];

/// The `[credentials]` table: each binding's fields, then where the proxy runs and what the
/// allowlist allows.
pub(crate) fn check(ck: &mut Checker, profile: &Profile) {
    let credentials = &profile.credentials;
    let proxy_runs = enforced_outside(profile);
    let depends = [
        "egress.mode",
        "egress.enforce",
        "egress.gateway_host",
        "egress.hosts",
    ];
    if credentials.on_replay == ReplayAction::Stop && !proxy_holds_keys(profile) {
        ck.fail_when(
            &depends,
            "credentials.on_replay",
            "credentials.on_replay is read only by agentc's egress proxy when it holds the keys",
            "remove on_replay, or enforce the allowlist outside with credentials.mode = \"proxy\"",
        );
    }
    let mut variables: Vec<(String, String)> = Vec::new();
    let mut targets: Vec<(String, String, String)> = Vec::new();
    for (name, binding) in &credentials.bindings {
        let field = format!("credentials.{name}");
        if !is_credential_name(name) {
            ck.fail(
                &field,
                format!("{field}: {name:?} is not a credential name"),
                "start with a lower-case letter and use only a-z, 0-9, - or _, at most 63 characters",
            );
        }
        if credentials.mode == CredentialMode::Env {
            ck.fail_when(
                &["credentials.mode"],
                &field,
                format!(
                    "{field} binds a key for the egress proxy, but credentials.mode is \"env\""
                ),
                "remove the table, or remove mode = \"env\" so that the proxy holds the key",
            );
            continue;
        }
        if !proxy_runs {
            let why = if profile.egress.gateway_host.is_some() {
                "egress goes through an ssh gateway".to_string()
            } else if profile.egress.mode != EgressMode::Allowlist {
                format!("egress.mode is {}", profile.egress.mode.as_str())
            } else if profile.egress.hosts.is_empty() {
                "egress.hosts is empty".to_string()
            } else {
                "egress.enforce is \"image\"".to_string()
            };
            ck.fail_when(
                &depends,
                &field,
                format!("{field} needs agentc's egress proxy to hold the key, but {why}"),
                "bind keys only with mode = \"allowlist\", the hosts in egress.hosts and \
                 enforce = \"outside\" (the default), or remove the table",
            );
            continue;
        }
        let env_field = format!("{field}.from_env");
        if ck.env_name(&env_field, &binding.from_env) {
            let variable = binding.from_env.trim().to_string();
            if let Some((_, other)) = variables.iter().find(|(v, _)| *v == variable) {
                ck.fail(
                    &env_field,
                    format!("{env_field} {variable} is bound by {other} already"),
                    "bind each variable once",
                );
            }
            variables.push((variable, field.clone()));
        }
        if let Some(user) = &binding.user_from_env {
            let user_field = format!("{field}.user_from_env");
            if ck.env_name(&user_field, user) && binding.scheme != Some(CredentialScheme::Basic) {
                ck.fail(
                    &user_field,
                    format!("{user_field} goes only with scheme = \"Basic\""),
                    "set scheme = \"Basic\", or remove user_from_env",
                );
            }
        }
        let header = binding
            .header
            .as_deref()
            .unwrap_or("authorization")
            .trim()
            .to_ascii_lowercase();
        if !is_header_name(&header) {
            ck.fail(
                &format!("{field}.header"),
                format!("{field}.header {header:?} is not a header name"),
                "write a header name of letters, digits and -, such as \"x-api-key\"",
            );
        }
        if let Some(prefix) = &binding.prefix {
            let valid = prefix.len() <= 16
                && prefix
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !valid {
                ck.fail(
                    &format!("{field}.prefix"),
                    format!("{field}.prefix {prefix:?} is not a placeholder prefix"),
                    "use at most 16 letters, digits, - or _, such as \"sk-ant-\"",
                );
            }
        }
        if binding.hosts.is_empty() {
            ck.fail(
                &format!("{field}.hosts"),
                format!("{field}.hosts is empty: the key would go nowhere"),
                "list the hosts that receive the key, such as [\"api.anthropic.com\"]",
            );
        }
        for (index, host) in binding.hosts.iter().enumerate() {
            let host_field = format!("{field}.hosts[{index}]");
            let host = host.trim().to_ascii_lowercase();
            match parse_host(&host) {
                Err(why) => ck.fail(
                    &host_field,
                    format!("{host_field} is not a host a key can be bound to: {why}"),
                    "write an exact host name, or host:port (443 without a port)",
                ),
                Ok(_) if !reachable(ck.loaded, &host) => ck.fail_when(
                    &["egress.hosts"],
                    &host_field,
                    format!("{host_field} {host:?} is not allowed by egress.hosts"),
                    "a key is bound only to a host the sandbox may reach: add it to egress.hosts, \
                     or remove it here",
                ),
                Ok(_) => {
                    if let Some((_, _, other)) = targets
                        .iter()
                        .find(|(h, hd, _)| *h == host && *hd == header)
                    {
                        ck.fail(
                            &host_field,
                            format!("{host_field} {host:?} gets the header {header} from {other} already"),
                            "bind one key per host and header",
                        );
                    }
                    targets.push((host.clone(), header.clone(), field.clone()));
                }
            }
        }
    }
    // The preset's keys: each delivered to its host by the proxy, or the profile refused.
    for refusal in preset_bindings(ck.loaded, &tables(profile))
        .into_iter()
        .filter_map(Result::err)
    {
        let mut depends = PRESET_DEPENDS.to_vec();
        depends.push(refusal.key);
        ck.fail_when(&depends, refusal.field, refusal.message, refusal.hint);
    }
}

impl Resolver<'_> {
    /// The proxy's credential settings for the bindings of this launch (none: `config`
    /// unchanged), with the profile's CA trusted for upstreams.
    pub fn credential_config(
        &self,
        config: agentc_egress::Config,
    ) -> Result<(agentc_egress::Config, Vec<Bound>), PolicyError> {
        let bound = bindings(self.loaded);
        let credentials: Vec<Credential> = bound.iter().filter_map(Bound::credential).collect();
        if credentials.is_empty() {
            return Ok((config, bound));
        }
        let upstream_ca = self
            .profile
            .proxy
            .as_ref()
            .is_some_and(|p| p.ca_file.is_some() || p.ca_dir.is_some())
            .then(|| UPSTREAM_CA_TARGET.to_string());
        let settings = CredentialConfig {
            credentials,
            ca_dir: Some(CA_DIR_TARGET.to_string()),
            upstream_ca: upstream_ca.into_iter().collect(),
            on_replay: match self.profile.credentials.on_replay {
                ReplayAction::Block => OnReplay::Block,
                ReplayAction::Stop => OnReplay::Stop,
            },
        };
        let config = config.with_credentials(settings).map_err(|error| {
            self.invalid(
                "credentials",
                error.to_string(),
                "bind keys only to hosts in egress.hosts",
            )
        })?;
        Ok((config, bound))
    }

    /// The placeholders of `bound` in the workload's environment (in place of the keys), the
    /// keys by name and the placeholders in the proxy's, the CA volume (the proxy's to write,
    /// the workload's read-only), the profile's CA for the proxy, and the trust variables.
    pub fn credential_env(
        &mut self,
        container: &mut ContainerSpec,
        proxy: &mut ContainerSpec,
        bound: &[Bound],
        volume: &str,
    ) -> Result<Vec<CredentialSpec>, PolicyError> {
        let mut specs = Vec::new();
        for binding in bound {
            let origin = self.binding_origin(binding);
            let pairs = [
                Some((&binding.variable, &binding.prefix)),
                binding
                    .user_variable
                    .as_ref()
                    .map(|v| (v, &binding.user_prefix)),
            ];
            let held = binding.credential().is_some();
            for (variable, prefix) in pairs.into_iter().flatten() {
                let placeholder = EnvValue::Placeholder {
                    variable: variable.clone(),
                    prefix: prefix.clone(),
                };
                set_env(container, variable, placeholder.clone());
                // Langfuse's public key is its own field's.
                let origin = match (binding.preset, &binding.user_variable) {
                    (true, Some(user)) if user == variable && binding.name == "langfuse" => {
                        self.field_origin("langfuse.public_key_env")
                    }
                    _ => origin.clone(),
                };
                self.set(keys::env(variable), origin);
                if held {
                    set_env(proxy, variable, EnvValue::Secret { required: true });
                    set_env(proxy, &placeholder_variable(variable), placeholder);
                }
            }
            if held {
                specs.push(CredentialSpec {
                    name: binding.name.clone(),
                    variable: binding.variable.clone(),
                    user_variable: binding.user_variable.clone(),
                    hosts: binding.hosts.clone(),
                    header: binding.header.clone(),
                    scheme: binding.scheme,
                });
            }
        }
        let Some(first) = bound.iter().find(|binding| binding.credential().is_some()) else {
            return Ok(specs);
        };
        // The table when the profile wrote one, else the first key the preset bound.
        let origin = self
            .written("credentials")
            .unwrap_or_else(|| self.binding_origin(first));
        let ca = |read_only| Mount {
            target: CA_DIR_TARGET.to_string(),
            read_only,
            source: MountSource::Volume {
                name: volume.to_string(),
                subpath: None,
            },
        };
        proxy.mounts.push(ca(false));
        container
            .mounts
            .retain(|mount| mount.target != CA_DIR_TARGET);
        container.mounts.push(ca(true));
        self.set(keys::mount(CA_DIR_TARGET), origin.clone());
        self.mount_upstream_ca(proxy)?;
        for (name, path) in TRUST_VARIABLES {
            set_env(
                container,
                name,
                EnvValue::Literal {
                    value: path.to_string(),
                },
            );
            self.set(keys::env(name), origin.clone());
        }
        self.set(keys::CREDENTIALS, origin);
        Ok(specs)
    }

    /// The profile's proxy CA (`proxy.ca_file`, else `proxy.ca_dir`), mounted read-only in the
    /// proxy at [`UPSTREAM_CA_TARGET`] (its `--upstream-ca`), once; nothing without one.
    pub(crate) fn mount_upstream_ca(
        &mut self,
        proxy: &mut ContainerSpec,
    ) -> Result<(), PolicyError> {
        let Some(proxy_config) = &self.profile.proxy else {
            return Ok(());
        };
        if proxy.mounts.iter().any(|m| m.target == UPSTREAM_CA_TARGET) {
            return Ok(());
        }
        let file = proxy_config.ca_file.as_ref().map(|f| ("proxy.ca_file", f));
        let dir = proxy_config.ca_dir.as_ref().map(|d| ("proxy.ca_dir", d));
        if let Some((field, value)) = file.or(dir) {
            let kind = if file.is_some() {
                crate::inputs::PathKind::File
            } else {
                crate::inputs::PathKind::Directory
            };
            let path = self.require_path(field, value, kind, "proxy CA")?;
            proxy.mounts.push(Mount {
                target: UPSTREAM_CA_TARGET.to_string(),
                read_only: true,
                source: MountSource::Bind { path },
            });
        }
        Ok(())
    }

    fn binding_origin(&self, binding: &Bound) -> Origin {
        if binding.preset {
            self.field_origin(&binding.field)
        } else {
            self.origin_or(
                &binding.field,
                Origin::Profile {
                    field: binding.field.clone(),
                    line: None,
                    column: None,
                },
            )
        }
    }
}

/// Sets `name` in the container's environment, in place of an entry of that name.
fn set_env(container: &mut ContainerSpec, name: &str, value: EnvValue) {
    match container.env.iter_mut().find(|var| var.name == name) {
        Some(var) => var.value = value,
        None => container.env.push(EnvVar {
            name: name.to_string(),
            value,
        }),
    }
}

/// The credentials section: each key, its variable, its hosts and header, and that the
/// sandbox holds a placeholder.
pub(crate) fn explain(out: &mut Explainer, c: &ContainerSpec) {
    let profile = &out.profile.profile;
    if profile.credentials.mode == CredentialMode::Env {
        out.line(format!(
            "  credentials: in the sandbox's environment (credentials.mode = \"env\"): a \
             prompt-injected agent can send its keys to any host it reaches  [{}]",
            out.at("credentials.mode")
        ));
        return;
    }
    let bound = bindings(out.profile);
    if bound.is_empty() {
        if profile.agent != crate::profile::AgentName::Custom
            && profile.provider.is_none()
            && profile.credentials.bindings.is_empty()
        {
            out.line(
                "  credentials: none: no [provider] or [credentials] block, so agentc gives the \
                 agent no API key (one that needs a key asks for a login inside the sandbox); a \
                 [provider] block names the key, which the egress proxy then holds  [default]",
            );
        }
        return;
    }
    let held: Vec<&CredentialSpec> = c
        .egress
        .as_ref()
        .map(|egress| egress.credentials.iter().collect())
        .unwrap_or_default();
    let policy = crate::rules::egress::outside::proxy_policy(out.profile);
    for binding in &bound {
        let variables = match &binding.user_variable {
            Some(user) => format!("{} and {user}", binding.variable),
            None => binding.variable.clone(),
        };
        let header = match binding.scheme {
            Some(scheme) => format!("{}: {} ...", binding.header, scheme.as_str()),
            None => binding.header.clone(),
        };
        let from = out.from(&keys::env(&binding.variable));
        let words = if held.iter().any(|spec| spec.name == binding.name) {
            let hosts: Vec<String> = binding
                .hosts
                .iter()
                .map(|host| match through_upstream(policy.as_ref(), host) {
                    Some(upstream) => format!(
                        "{host} (terminated by the proxy, then sent through the upstream proxy \
                         {upstream}'s CONNECT)"
                    ),
                    None => host.clone(),
                })
                .collect();
            format!(
                "the egress proxy holds {variables} (read from your environment at launch) and \
                 sets {header} on requests to {} only; the sandbox holds a placeholder made at \
                 launch",
                hosts.join(", ")
            )
        } else {
            format!(
                "the sandbox holds a placeholder for {variables}; the key goes nowhere (its host \
                 is not in egress.hosts)"
            )
        };
        out.line(format!("  credential {}: {words}{from}", binding.name));
    }
    if !held.is_empty() {
        let action = match profile.credentials.on_replay {
            ReplayAction::Block => "refused and logged (credential-replay)",
            ReplayAction::Stop => "refused and logged (credential-replay), and the proxy stops",
        };
        out.line(format!(
            "  credential replay: a placeholder sent anywhere else (another host, any plain-HTTP \
             request or CONNECT line) is {action}; the sandbox trusts the proxy's launch CA \
             through {} (read-only) and {}  [{}]",
            CA_DIR_TARGET,
            TRUST_VARIABLES.map(|(name, _)| name).join(", "),
            out.at("credentials.on_replay")
        ));
    }
}

/// The upstream proxy that a bound host's connections go through, if any.
fn through_upstream(policy: Option<&agentc_egress::Policy>, host: &str) -> Option<String> {
    let (name, _) = parse_host(host).ok()?;
    policy?.upstream_for(&name).map(ToString::to_string)
}

/// `credentials-env`: the real keys in the sandbox's environment, by `mode = "env"`, or a
/// provider key the preset cannot bind (a provider it does not know, without an endpoint).
pub(crate) fn findings(report: &mut Report, c: &ContainerSpec) {
    let profile = &report.loaded.profile;
    let secrets: Vec<String> = c
        .env
        .iter()
        .filter(|var| matches!(var.value, EnvValue::Secret { .. }))
        .map(|var| var.name.clone())
        .collect();
    if secrets.is_empty() || !enforced_outside(profile) {
        return;
    }
    let (field, message, hint) = if profile.credentials.mode == CredentialMode::Env {
        (
            "credentials.mode",
            format!(
                "the sandbox holds the real {}: credentials.mode = \"env\" keeps the keys in its \
                 environment, where a prompt-injected agent can read them and send them to any \
                 host it reaches",
                secrets.join(", ")
            ),
            "remove mode = \"env\": the egress proxy then holds the keys and the sandbox a \
             placeholder",
        )
    } else {
        (
            "provider.api_key_env",
            format!(
                "the sandbox holds the real {}: agentc cannot tell which host receives it (a \
                 provider it does not know, without an endpoint)",
                secrets.join(", ")
            ),
            "bind it with a [credentials.NAME] table (from_env, hosts, header) so that the \
             egress proxy holds it",
        )
    };
    let position = report.position(field);
    report.push(
        FindingCode::CredentialsEnv,
        (field.to_string(), position),
        message,
        hint,
    );
}
