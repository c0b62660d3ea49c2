//! The agent-sandbox `Sandbox` (`agents.x-k8s.io/v1beta1`), as small serde structs holding
//! only the fields agentc emits. The tests check every rendered `Sandbox` against the pinned
//! CRD's `openAPIV3Schema` with unknown fields refused.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// The API version of [`Sandbox`].
pub const SANDBOX_API_VERSION: &str = "agents.x-k8s.io/v1beta1";
/// The kind of [`Sandbox`].
pub const SANDBOX_KIND: &str = "Sandbox";

/// An agent-sandbox `Sandbox`: one singleton Pod made by the agent-sandbox controller from
/// `spec.podTemplate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sandbox {
    /// Always [`SANDBOX_API_VERSION`].
    pub api_version: String,
    /// Always [`SANDBOX_KIND`].
    pub kind: String,
    /// Name, namespace, labels and annotations.
    pub metadata: ObjectMeta,
    /// The desired sandbox.
    pub spec: SandboxSpec,
}

/// `Sandbox.spec`: only the pod template (agentc renders named volumes as standalone
/// PersistentVolumeClaims, which outlive the sandbox as Docker volumes outlive containers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxSpec {
    /// The Pod the controller creates.
    pub pod_template: PodTemplate,
}

/// `Sandbox.spec.podTemplate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplate {
    /// Labels and annotations the controller puts on the Pod.
    pub metadata: PodTemplateMetadata,
    /// The Pod's spec.
    pub spec: PodSpec,
}

/// `Sandbox.spec.podTemplate.metadata`: the CRD allows labels and annotations only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplateMetadata {
    /// Labels of the Pod.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations of the Pod.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}
