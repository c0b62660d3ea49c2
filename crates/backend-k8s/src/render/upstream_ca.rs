//! The profile's CA for the egress proxy's upstreams (`proxy.ca_file` or `proxy.ca_dir`) on
//! Kubernetes: no Pod can mount a host file, so its certificates travel in the rendering, as a
//! ConfigMap (certificates are public; the caller reads them into [`crate::Options::upstream_ca`])
//! that the proxy Pod mounts read-only where Docker's proxy mounts the file
//! ([`agentc_policy::UPSTREAM_CA_TARGET`]) and reads with `--upstream-ca`.

use std::collections::BTreeMap;

use agentc_policy::{Origin, UPSTREAM_CA_TARGET};
use k8s_openapi::api::core::v1::{ConfigMap, ConfigMapVolumeSource, Volume, VolumeMount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::context::Renderer;
use crate::Object;

/// The proxy Pod's volume holding the profile's CA.
pub const UPSTREAM_CA_VOLUME: &str = "upstream-ca";
/// The most certificate text one ConfigMap carries here (the API server's limit is 1 MiB for
/// the whole object).
pub const MAX_UPSTREAM_CA_BYTES: usize = 512 << 10;

/// What the proxy Pod adds for the profile's CA.
pub(super) struct UpstreamCa {
    /// The ConfigMap of the certificates.
    pub(super) object: Object,
    /// Its volume in the proxy Pod.
    pub(super) volume: Volume,
    /// Its read-only mount at [`UPSTREAM_CA_TARGET`].
    pub(super) mount: VolumeMount,
    /// The proxy's argument reading it.
    pub(super) arg: String,
}

impl Renderer<'_> {
    /// The field naming the profile's CA when the egress proxy trusts it for its upstreams: an
    /// `https://` upstream verified against it, or the upstreams of the hosts it holds keys for
    /// (`--upstream-ca` in Docker's proxy command).
    pub(super) fn upstream_ca_field(&self, held_args: &[String]) -> Option<String> {
        let tls_upstream = self
            .options
            .egress
            .upstream
            .as_ref()
            .filter(|upstream| upstream.any_tls())
            .and_then(|upstream| upstream.ca);
        if let Some(field) = tls_upstream {
            return Some(field.to_string());
        }
        if !held_args
            .iter()
            .any(|word| word.starts_with("--upstream-ca="))
        {
            return None;
        }
        let named = self.spec.origins.values().find_map(|origin| match origin {
            Origin::Profile { field, .. }
                if field == "proxy.ca_file" || field == "proxy.ca_dir" =>
            {
                Some(field.clone())
            }
            _ => None,
        });
        Some(named.unwrap_or_else(|| "proxy.ca_file".to_string()))
    }

    /// The ConfigMap `<proxy>-upstream-ca` of the certificates, its volume and mount, or a
    /// refusal at `field` when none were given or they cannot be carried.
    pub(super) fn render_upstream_ca(
        &mut self,
        field: &str,
        proxy_name: &str,
        metadata: ObjectMeta,
    ) -> Option<UpstreamCa> {
        let files = &self.options.upstream_ca;
        let size: usize = files.iter().map(|(name, pem)| name.len() + pem.len()).sum();
        let problem = if files.is_empty() {
            Some("its certificates were not given to the rendering".to_string())
        } else if size > MAX_UPSTREAM_CA_BYTES {
            Some(format!(
                "its certificates are {size} bytes, more than the {MAX_UPSTREAM_CA_BYTES} a \
                 ConfigMap of the rendering carries"
            ))
        } else {
            files
                .keys()
                .find(|name| !is_config_map_key(name))
                .map(|name| format!("the file name {name:?} is not a ConfigMap key"))
        };
        if let Some(problem) = problem {
            self.refuse(
                field.to_string(),
                format!(
                    "the egress proxy Pod trusts the profile's CA for its upstreams, carried in a \
                     ConfigMap of the rendering: {problem}"
                ),
                "keep the CA's certificates (PEM) in a file or directory of files named with \
                 letters, digits, '.', '-' and '_' (agentc render reads them; a library caller \
                 sets Options::upstream_ca)",
            );
            return None;
        }
        let name = format!("{proxy_name}-upstream-ca");
        self.notes.approximation(
            "egress-upstream-ca",
            field,
            format!(
                "the profile's CA ({field}) is the ConfigMap {name} of this rendering, mounted \
                 read-only into the egress proxy Pod at {UPSTREAM_CA_TARGET}, where Docker \
                 mounts the host file: a changed file needs a new rendering"
            ),
        );
        Some(UpstreamCa {
            object: Object::ConfigMap(ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..metadata
                },
                data: Some(files.clone()),
                immutable: Some(true),
                ..ConfigMap::default()
            }),
            volume: Volume {
                name: UPSTREAM_CA_VOLUME.to_string(),
                config_map: Some(ConfigMapVolumeSource {
                    name: name.clone(),
                    ..ConfigMapVolumeSource::default()
                }),
                ..Volume::default()
            },
            mount: VolumeMount {
                name: UPSTREAM_CA_VOLUME.to_string(),
                mount_path: UPSTREAM_CA_TARGET.to_string(),
                read_only: Some(true),
                ..VolumeMount::default()
            },
            arg: format!("--upstream-ca={UPSTREAM_CA_TARGET}"),
        })
    }
}

/// Whether `name` is a ConfigMap data key: 1 to 253 of `[-._a-zA-Z0-9]`, not `.` or `..`.
pub fn is_config_map_key(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

/// The ConfigMap data of certificates read from files: `name → PEM`, in name order.
pub type CaFiles = BTreeMap<String, String>;
