//! The agent-sandbox warm-pool objects (`extensions.agents.x-k8s.io/v1beta1`, issue 22):
//! `SandboxTemplate`, `SandboxWarmPool` and `SandboxClaim`, as small serde structs holding
//! only the fields agentc emits. The tests check every rendered object against the pinned
//! CRD's `openAPIV3Schema` with unknown fields refused.
//!
//! The template carries the pod a `Sandbox` would ([`crate::PodTemplate`]); agentc's own
//! NetworkPolicies guard it (`networkPolicyManagement: Unmanaged`), and a claim's
//! environment and volume claims are refused (`Disallowed`, the CRD's default), since either
//! would force a cold start. The pool replaces its members when the template changes
//! (`updateStrategy: Recreate`: no member of an old template is claimed), and a claimed
//! sandbox is deleted when its claim ends (`shutdownPolicy: Delete`: never returned).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::sandbox::PodTemplate;

/// The API version of the three objects.
pub const EXTENSIONS_API_VERSION: &str = "extensions.agents.x-k8s.io/v1beta1";

/// A reference by name (`sandboxTemplateRef`, `warmPoolRef`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameRef {
    /// The object's name, in the same namespace.
    pub name: String,
}

/// `SandboxTemplate`: the pod every member of a pool is made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxTemplate {
    /// Always [`EXTENSIONS_API_VERSION`].
    pub api_version: String,
    /// Always `SandboxTemplate`.
    pub kind: String,
    /// Name, namespace and labels.
    pub metadata: ObjectMeta,
    /// The template.
    pub spec: SandboxTemplateSpec,
}

/// `SandboxTemplate.spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxTemplateSpec {
    /// The member's pod.
    pub pod_template: PodTemplate,
    /// `Unmanaged`: agentc renders the NetworkPolicies itself.
    pub network_policy_management: String,
    /// `Disallowed`: a claim's environment would not reach a started member.
    pub env_vars_injection_policy: String,
}

/// `SandboxWarmPool`: `replicas` started members of a template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxWarmPool {
    /// Always [`EXTENSIONS_API_VERSION`].
    pub api_version: String,
    /// Always `SandboxWarmPool`.
    pub kind: String,
    /// Name, namespace and labels.
    pub metadata: ObjectMeta,
    /// The pool.
    pub spec: SandboxWarmPoolSpec,
}

/// `SandboxWarmPool.spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxWarmPoolSpec {
    /// How many idle members the pool keeps.
    pub replicas: i32,
    /// The template.
    pub sandbox_template_ref: NameRef,
    /// `Recreate`: members of an old template are replaced at once.
    pub update_strategy: UpdateStrategy,
}

/// `SandboxWarmPool.spec.updateStrategy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateStrategy {
    /// `Recreate` or `OnReplenish`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// `SandboxClaim`: one claim of a pool's member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxClaim {
    /// Always [`EXTENSIONS_API_VERSION`].
    pub api_version: String,
    /// Always `SandboxClaim`.
    pub kind: String,
    /// Name, namespace and labels.
    pub metadata: ObjectMeta,
    /// The claim.
    pub spec: SandboxClaimSpec,
}

/// `SandboxClaim.spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxClaimSpec {
    /// The pool to claim from.
    pub warm_pool_ref: NameRef,
    /// `shutdownPolicy: Delete`: the claimed sandbox goes with the claim.
    pub lifecycle: ClaimLifecycle,
}

/// `SandboxClaim.spec.lifecycle`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimLifecycle {
    /// `Delete`, `DeleteForeground` or `Retain`.
    pub shutdown_policy: String,
}

/// The three objects of a pool named `base` of `replicas` members, each with `metadata`'s
/// namespace and labels: the template `base`, the pool `base-pool`, a claim `base-claim`.
pub fn objects(
    base: &str,
    metadata: &ObjectMeta,
    pod_template: PodTemplate,
    replicas: u16,
) -> (SandboxTemplate, SandboxWarmPool, SandboxClaim) {
    let named = |name: String| ObjectMeta {
        name: Some(name),
        ..metadata.clone()
    };
    let pool = format!("{base}-pool");
    (
        SandboxTemplate {
            api_version: EXTENSIONS_API_VERSION.to_string(),
            kind: "SandboxTemplate".to_string(),
            metadata: named(base.to_string()),
            spec: SandboxTemplateSpec {
                pod_template,
                network_policy_management: "Unmanaged".to_string(),
                env_vars_injection_policy: "Disallowed".to_string(),
            },
        },
        SandboxWarmPool {
            api_version: EXTENSIONS_API_VERSION.to_string(),
            kind: "SandboxWarmPool".to_string(),
            metadata: ObjectMeta {
                annotations: None,
                ..named(pool.clone())
            },
            spec: SandboxWarmPoolSpec {
                replicas: i32::from(replicas),
                sandbox_template_ref: NameRef {
                    name: base.to_string(),
                },
                update_strategy: UpdateStrategy {
                    kind: "Recreate".to_string(),
                },
            },
        },
        SandboxClaim {
            api_version: EXTENSIONS_API_VERSION.to_string(),
            kind: "SandboxClaim".to_string(),
            metadata: ObjectMeta {
                annotations: None,
                ..named(format!("{base}-claim"))
            },
            spec: SandboxClaimSpec {
                warm_pool_ref: NameRef { name: pool },
                lifecycle: ClaimLifecycle {
                    shutdown_policy: "Delete".to_string(),
                },
            },
        },
    )
}
