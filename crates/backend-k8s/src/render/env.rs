//! The workload's environment: literal values, secrets as `secretKeyRef`s of the profile's
//! Secret (never a value), and the egress proxy's variables.

use std::collections::BTreeSet;

use agentc_policy::{EnvValue, EnvVar};
use k8s_openapi::api::core::v1::{Container, EnvVar as K8sEnvVar, EnvVarSource, SecretKeySelector};

use super::context::Renderer;
use crate::names;

impl Renderer<'_> {
    /// `--env`: literal values as `value`; secrets as `valueFrom.secretKeyRef` of the Secret
    /// `agentc-<profile>` (key = the variable's name; it must exist in the namespace); then the
    /// egress proxy's variables, which the profile must not set itself. `held`: the Secret's
    /// keys the egress proxy Pod reads (the keys it holds), named in the same cluster duty.
    pub(super) fn render_env(
        &mut self,
        main: &mut Container,
        env: &[EnvVar],
        proxy: &[(String, String)],
        held: &[String],
    ) {
        let secret = secret_name(&self.spec.profile);
        let mut rendered = Vec::new();
        let mut secrets = held.to_vec();
        let mut clashing = BTreeSet::new();
        for EnvVar { name, value } in env {
            if proxy.iter().any(|(proxy_name, _)| proxy_name == name) {
                let field = self.field(&format!("env.{name}"));
                // HTTP_PROXY and http_proxy come from one field: name it once.
                if !clashing.insert(field.clone()) {
                    continue;
                }
                self.refuse(
                    field,
                    format!(
                        "{name} is set by the profile, but the egress allowlist points it at the \
                         egress proxy"
                    ),
                    "remove [proxy] http, https and no_proxy for the kubernetes backend: the \
                     egress proxy is the workload's proxy",
                );
                continue;
            }
            if matches!(value, EnvValue::Secret { .. }) {
                secrets.push(name.clone());
            }
            rendered.push(env_var(name, value, &secret));
        }
        for (name, value) in proxy {
            rendered.push(k8s_openapi::api::core::v1::EnvVar {
                name: name.clone(),
                value: Some(value.clone()),
                value_from: None,
            });
        }
        if !secrets.is_empty() {
            self.notes.cluster_duty(
                "secret",
                format!("env.{}", secrets.join(",")),
                format!(
                    "the Secret {secret} must exist in the namespace with the key{} {}; Docker \
                     reads {} from the caller's environment",
                    if secrets.len() == 1 { "" } else { "s" },
                    secrets.join(", "),
                    if secrets.len() == 1 { "it" } else { "them" },
                ),
            );
        }
        if !rendered.is_empty() {
            main.env = Some(rendered);
        }
    }
}

/// One variable: a literal as `value`; a placeholder as the rendering's stand-in (rendered
/// once, not launched); a secret as `valueFrom.secretKeyRef` of `secret` (key = its name).
pub(super) fn env_var(name: &str, value: &EnvValue, secret: &str) -> K8sEnvVar {
    let (value, value_from) = match value {
        EnvValue::Literal { value } => (Some(value.clone()), None),
        EnvValue::Placeholder { variable, prefix } => (
            Some(agentc_policy::placeholder_template(prefix, variable)),
            None,
        ),
        EnvValue::Secret { required } => (
            None,
            Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: secret.to_string(),
                    key: name.to_string(),
                    optional: (!required).then_some(true),
                }),
                ..EnvVarSource::default()
            }),
        ),
    };
    K8sEnvVar {
        name: name.to_string(),
        value,
        value_from,
    }
}

/// The Secret holding a profile's secret variables: `agentc-<profile>`.
pub fn secret_name(profile: &str) -> String {
    let name: String = profile
        .chars()
        .map(|c| {
            if c == '_' {
                '-'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    let name = format!("agentc-{}", name.trim_end_matches('-'));
    if names::is_dns1123_subdomain(&name) {
        name
    } else {
        format!("agentc-{}", names::base_name(profile))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        assert_eq!(secret_name("claude_minimal"), "agentc-claude-minimal");
        assert_eq!(secret_name("x-"), "agentc-x");
    }
}
