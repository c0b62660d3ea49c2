//! Keys held by the egress proxy (`[credentials]`, issue 21) on Kubernetes: the proxy Pod gets
//! each key from the profile's Secret (`secretKeyRef`), its placeholder and the proxy's
//! credential words, and generates its launch CA at start; the sandbox Pod holds only the
//! placeholders, and gets the CA's certificate and bundle through an init container that asks
//! the proxy for them (`agentc egress-proxy fetch-ca`: the two pods share no volume) into a
//! memory `emptyDir` the workload mounts read-only where Docker mounts the CA volume.
//!
//! The placeholders are the rendering's stand-ins (the same objects on every machine); they
//! are not secrets: the key never enters the sandbox pod.

use agentc_egress::credential::{CredentialConfig, CA_DIR};
use agentc_egress::PROXY_BINARY;
use agentc_policy::{Action, EgressSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EnvVar, PodSpec, ResourceRequirements, SecurityContext, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::context::Renderer;
use super::env::{env_var, secret_name};
use super::volumes::memory_volume;
use crate::egress::PROXY_UID;

/// The `emptyDir` holding the launch CA's files (in the proxy Pod, which writes them; in the
/// sandbox Pod, which the init container fills).
pub const CA_VOLUME: &str = "egress-ca";
/// The sandbox Pod's init container that fetches the launch CA from the proxy.
pub const CA_INIT_CONTAINER: &str = "egress-ca";

/// What the proxy container adds for the keys it holds.
pub(super) struct HeldKeys {
    /// Its credential words ([`CredentialConfig::args`]), after the allowlist.
    pub(super) args: Vec<String>,
    /// Its environment: each key from the Secret, each placeholder.
    pub(super) env: Vec<EnvVar>,
    /// The Secret's keys the proxy reads.
    pub(super) secrets: Vec<String>,
}

impl<'a> Renderer<'a> {
    /// Docker's egress companion of this launch when its proxy holds keys.
    pub(super) fn held_credentials(&self) -> Option<&'a EgressSpec> {
        match &self.spec.action {
            Action::Container(container) => container
                .egress
                .as_deref()
                .filter(|egress| !egress.credentials.is_empty()),
            Action::Build(_) => None,
        }
    }

    /// The proxy container's credential words and environment, from Docker's proxy spec (one
    /// source for both). Its `--upstream-ca` (the profile's CA) reads the ConfigMap of
    /// [`super::upstream_ca`].
    pub(super) fn held_keys(&mut self, egress: &EgressSpec) -> HeldKeys {
        let args: Vec<String> = egress
            .proxy
            .command
            .iter()
            .filter(|word| CredentialConfig::is_arg(word))
            .cloned()
            .collect();
        let secret = secret_name(&self.spec.profile);
        let mut secrets = Vec::new();
        let env = egress
            .proxy
            .env
            .iter()
            .map(|var| {
                if matches!(var.value, agentc_policy::EnvValue::Secret { .. }) {
                    secrets.push(var.name.clone());
                }
                env_var(&var.name, &var.value, &secret)
            })
            .collect();
        for credential in &egress.credentials {
            self.notes.approximation(
                "credential",
                self.field(&format!("env.{}", credential.variable)),
                format!(
                    "the egress proxy Pod holds {} (from the Secret {secret}) and sets {} on \
                     requests to {} only; the sandbox pod holds a placeholder fixed by this \
                     rendering (not a secret), and trusts the proxy's launch CA, fetched from \
                     the proxy by its init container {CA_INIT_CONTAINER}",
                    credential.variable,
                    credential.header,
                    credential.hosts.join(", ")
                ),
            );
        }
        HeldKeys { args, env, secrets }
    }

    /// The sandbox Pod's side: the init container that asks the proxy at `proxy`
    /// (`host:port`) for the CA's files, and their `emptyDir`, read-only in the workload at
    /// [`CA_DIR`].
    pub(super) fn render_ca_fetch(
        &mut self,
        pod: &mut PodSpec,
        main: &mut Container,
        image: &str,
        proxy: &str,
    ) {
        let mount = |read_only: bool| VolumeMount {
            name: CA_VOLUME.to_string(),
            mount_path: CA_DIR.to_string(),
            read_only: read_only.then_some(true),
            ..VolumeMount::default()
        };
        pod.volumes
            .get_or_insert_with(Vec::new)
            .push(memory_volume(CA_VOLUME, Some(4 << 20)));
        main.volume_mounts
            .get_or_insert_with(Vec::new)
            .push(mount(true));
        let amounts = std::collections::BTreeMap::from([
            ("cpu".to_string(), Quantity("100m".to_string())),
            ("memory".to_string(), Quantity("64Mi".to_string())),
        ]);
        pod.init_containers
            .get_or_insert_with(Vec::new)
            .push(Container {
                name: CA_INIT_CONTAINER.to_string(),
                image: Some(image.to_string()),
                command: Some(vec![
                    PROXY_BINARY.to_string(),
                    "egress-proxy".to_string(),
                    "fetch-ca".to_string(),
                    format!("--proxy={proxy}"),
                    format!("--dir={CA_DIR}"),
                ]),
                volume_mounts: Some(vec![mount(false)]),
                resources: Some(ResourceRequirements {
                    limits: Some(amounts.clone()),
                    requests: Some(amounts),
                    claims: None,
                }),
                security_context: Some(SecurityContext {
                    allow_privilege_escalation: Some(false),
                    privileged: Some(false),
                    read_only_root_filesystem: Some(true),
                    run_as_non_root: Some(true),
                    run_as_user: Some(PROXY_UID),
                    run_as_group: Some(PROXY_UID),
                    capabilities: Some(Capabilities {
                        drop: Some(vec!["ALL".to_string()]),
                        add: None,
                    }),
                    ..SecurityContext::default()
                }),
                ..Container::default()
            });
    }
}
