//! Labels: the launch's labels as Kubernetes labels or annotations, agentc's own labels, and
//! the selectors and labels of the objects around the workload.

use std::collections::BTreeMap;

use super::context::Renderer;
use crate::error::RenderError;
use crate::names;

/// Label selecting a launch's pods: the launch's base name.
pub const LABEL_NAME: &str = "io.agentc.name";
/// Label of a pod on a Docker-style named network (`network.name`).
pub const LABEL_NETWORK: &str = "io.agentc.network";
/// agentc's kind label (also set by `resolve`); the egress proxy's is `egress-proxy`.
pub const LABEL_KIND: &str = "io.agentc.kind";
/// The profile label (also set by `resolve`).
pub const LABEL_PROFILE: &str = "io.agentc.profile";
/// The standard label naming the tool that manages the objects.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";

impl Renderer<'_> {
    /// `--label` → `metadata.labels` where key and value are valid label syntax, else
    /// `metadata.annotations`; plus `io.agentc.name` (the selector) and
    /// `app.kubernetes.io/managed-by`.
    pub(super) fn render_labels(
        &mut self,
        labels: &BTreeMap<String, String>,
        base: &str,
    ) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
        let mut conforming = BTreeMap::new();
        let mut annotations = BTreeMap::new();
        for (key, value) in labels {
            let field = self.field(&format!("labels.{key}"));
            if !names::is_qualified_name(key) {
                self.errors.push(RenderError::InvalidName {
                    field,
                    value: key.clone(),
                    what: "label or annotation key",
                    hint: "use a key such as example.com/name".to_string(),
                });
            } else if names::is_label_value(value) {
                conforming.insert(key.clone(), value.clone());
            } else {
                annotations.insert(key.clone(), value.clone());
                self.notes.approximation(
                    "label-annotation",
                    field,
                    format!(
                        "label {key} has a value Kubernetes labels cannot hold (more than 63 \
                         characters or other characters): it is an annotation"
                    ),
                );
            }
        }
        conforming.insert(LABEL_NAME.to_string(), base.to_string());
        conforming.insert(LABEL_MANAGED_BY.to_string(), "agentc".to_string());
        (conforming, annotations)
    }
}

/// The labels selecting the workload's pod: its name and agentc's kind label.
pub(super) fn selector_labels(
    base: &str,
    pod_labels: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([(LABEL_NAME.to_string(), base.to_string())]);
    if let Some(kind) = pod_labels.get(LABEL_KIND) {
        labels.insert(LABEL_KIND.to_string(), kind.clone());
    }
    labels
}

/// The labels of an auxiliary object: the profile's and agentc's own.
pub(super) fn managed(pod_labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    pod_labels
        .iter()
        .filter(|(key, _)| {
            [LABEL_NAME, LABEL_PROFILE, LABEL_KIND, LABEL_MANAGED_BY].contains(&key.as_str())
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .chain([(LABEL_MANAGED_BY.to_string(), "agentc".to_string())])
        .collect()
}
