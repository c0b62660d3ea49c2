//! Renders a [`agentc_policy::LaunchSpec`] as Kubernetes objects: a Pod or an agent-sandbox
//! `Sandbox`, with its NetworkPolicy, PersistentVolumeClaims and, for an egress allowlist,
//! agentc's egress proxy. At least as strict as the Docker launch of the same spec, or refused.
//!
//! Rendering is a pure function ([`render`]) from a spec and [`Options`] to typed
//! `k8s-openapi` objects; there is no cluster client. The output is a `v1` `List`
//! ([`Rendering::to_json`]) or a multi-document YAML stream ([`Rendering::to_yaml`]) for
//! `kubectl apply -f -`. Every pod is restricted by construction (Pod Security "restricted",
//! checked by [`pss::check`]); what Kubernetes cannot express exactly is a [`Note`]
//! (an approximation, or a duty left to the cluster), carried as annotations; what has no
//! faithful rendering is a [`RenderError`] naming its field.
//!
//! ```
//! use agentc_backend_k8s::{render, EgressMode, EgressPolicy, Object, Options};
//! use agentc_policy::{Action, ContainerSpec, LaunchKind, LaunchSpec, Network};
//!
//! let mut container = ContainerSpec::empty("registry.example/sandbox:1");
//! container.user = Some("1000:1000".into());
//! container.network = Network::None;
//! let spec = LaunchSpec {
//!     kind: LaunchKind::Sandbox,
//!     profile: "demo".into(),
//!     action: Action::Container(Box::new(container)),
//!     origins: Default::default(),
//! };
//! let options = Options {
//!     egress: EgressPolicy { mode: EgressMode::Deny, ..EgressPolicy::default() },
//!     ..Options::default()
//! };
//! let rendering = render(&spec, &options)?;
//! assert!(matches!(rendering.objects.last(), Some(Object::Pod(_))));
//! assert!(rendering.to_yaml().contains("runAsNonRoot: true"));
//! # Ok::<(), agentc_backend_k8s::RenderErrors>(())
//! ```
#![deny(missing_docs)]

mod egress;
mod error;
mod explain;
mod level;
mod names;
mod notes;
pub mod play;
mod pool;
pub mod pss;
mod render;
mod sandbox;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, PodSpec, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use serde::Serialize;

pub use egress::{egress_proxy_argv, EgressMode, EgressPolicy, PROXY_PORT, PROXY_UID};
pub use error::{RenderError, RenderErrors};
pub use explain::explain;
pub use k8s_openapi;
pub use level::{PodSecurity, POD_SECURITY_FIELD};
pub use names::{base_name, is_dns1123_label, is_label_value, MAX_BASE_NAME};
pub use notes::{
    Note, NoteKind, Notes, ANNOTATION_APPROXIMATIONS, ANNOTATION_CLUSTER_DUTIES, START_BLOCKERS,
};
pub use pool::{
    ClaimLifecycle, NameRef, SandboxClaim, SandboxClaimSpec, SandboxTemplate, SandboxTemplateSpec,
    SandboxWarmPool, SandboxWarmPoolSpec, UpdateStrategy, EXTENSIONS_API_VERSION,
};
pub use pss::PodSecurityLevel;
pub use render::{
    is_config_map_key, preset_uid, render, secret_name, CaFiles, CA_INIT_CONTAINER, CA_VOLUME,
    CONTAINER_NAME, LABEL_KIND, LABEL_MANAGED_BY, LABEL_NAME, LABEL_NETWORK, LABEL_PROFILE,
    MAX_UPSTREAM_CA_BYTES, PROXY_CONTAINER, UPSTREAM_CA_VOLUME, VOLUME_SIZE,
};
pub use sandbox::{
    PodTemplate, PodTemplateMetadata, Sandbox, SandboxSpec, SANDBOX_API_VERSION, SANDBOX_KIND,
};

/// Which object runs the workload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ObjectKind {
    /// A bare `v1` Pod.
    #[default]
    Pod,
    /// An agent-sandbox `Sandbox` (`agents.x-k8s.io/v1beta1`) whose pod template carries the
    /// same pod spec.
    Sandbox,
    /// A warm pool (issue 22): a `SandboxTemplate` carrying that pod template, a
    /// `SandboxWarmPool` of `replicas` members and a `SandboxClaim` of one
    /// (`extensions.agents.x-k8s.io/v1beta1`).
    Pool {
        /// The pool's idle members.
        replicas: u16,
    },
}

impl ObjectKind {
    /// `pod` or `sandbox`, as on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Pod => "pod",
            ObjectKind::Sandbox => "sandbox",
            ObjectKind::Pool { .. } => "pool",
        }
    }
}

/// How to render: the inputs beyond the spec. The default is the strictest rendering: a Pod,
/// Pod Security restricted, no namespace (kubectl's current one), no workspace claim, no
/// egress proxy image, and the profile default egress (an allowlist with no hosts). The
/// profile's share ([`Options::egress`], [`Options::pod_security`]) is read from the loaded
/// profile by the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Pod or Sandbox.
    pub kind: ObjectKind,
    /// `metadata.namespace` of every object; `None` leaves it to `kubectl`.
    pub namespace: Option<String>,
    /// The base name of the objects; `None` derives it from the container name or
    /// `agentc-<kind>-<profile>`.
    pub name: Option<String>,
    /// An existing PersistentVolumeClaim that holds the workspace; without it a launch that
    /// mounts the workspace is refused.
    pub workspace_claim: Option<String>,
    /// The Pod Security level the pods must meet, and where it was set (see
    /// [`PodSecurity::from_profile`]).
    pub pod_security: PodSecurity,
    /// The image of agentc's egress proxy; required for an allowlist with hosts.
    pub egress_proxy_image: Option<String>,
    /// A free address of the cluster's Service range for the egress proxy's Service: the
    /// workload then reaches the proxy by address and resolves names only through the proxy's
    /// DNS stub (`dnsPolicy: None`), instead of finding the proxy through the cluster DNS.
    pub egress_proxy_ip: Option<std::net::IpAddr>,
    /// The profile's egress policy (see [`EgressPolicy::from_profile`]).
    pub egress: EgressPolicy,
    /// The RuntimeClass each isolation tier maps to (`--runtime-class TIER=NAME`), for a
    /// profile's `[security] isolation` floor.
    pub runtime_classes: RuntimeClasses,
    /// The certificates of the profile's CA for the egress proxy's upstreams
    /// (`proxy.ca_file`, or each file of `proxy.ca_dir`), file name to PEM text, read by the
    /// caller (the renderer reads no file): rendered as a ConfigMap the proxy Pod mounts. Empty
    /// when the proxy trusts no profile CA; a rendering that needs them refuses without.
    pub upstream_ca: CaFiles,
}

/// The RuntimeClass each isolation tier maps to (`runtimeClassName`), for a spec with an
/// isolation floor and no runtime named: by default `gvisor` maps to the RuntimeClass
/// `gvisor` (GKE Sandbox's and gVisor's documented name) and `microvm` to `kata` (Kata
/// Containers' chart); `container` maps to none, the cluster's default runtime. A floor whose
/// tier (or, with `prefer = "strongest"`, every tier at or above it) has no mapping is refused
/// by field. The cluster must define the class, or admission refuses the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeClasses(pub std::collections::BTreeMap<agentc_policy::IsolationTier, String>);

impl Default for RuntimeClasses {
    fn default() -> Self {
        use agentc_policy::IsolationTier;
        RuntimeClasses(
            [
                (IsolationTier::Gvisor, "gvisor".to_string()),
                (IsolationTier::Microvm, "kata".to_string()),
            ]
            .into_iter()
            .collect(),
        )
    }
}

impl RuntimeClasses {
    /// The defaults with `TIER=NAME` overrides applied (`--runtime-class gvisor=runsc`); an
    /// empty name removes the tier's mapping (`--runtime-class microvm=`). Errors name the
    /// bad override.
    pub fn with_overrides(overrides: &[String]) -> Result<RuntimeClasses, String> {
        let mut classes = RuntimeClasses::default();
        for written in overrides {
            let (tier, name) = written.split_once('=').ok_or_else(|| {
                format!("--runtime-class {written:?}: expected TIER=NAME, such as gvisor=gvisor")
            })?;
            let tier = agentc_policy::IsolationTier::ALL
                .into_iter()
                .find(|known| known.as_str() == tier.trim())
                .ok_or_else(|| {
                    format!(
                        "--runtime-class {written:?}: {tier:?} is not an isolation tier (use \
                         container, gvisor or microvm)"
                    )
                })?;
            let name = name.trim();
            if name.is_empty() {
                classes.0.remove(&tier);
            } else if !names::is_dns1123_subdomain(name) {
                return Err(format!(
                    "--runtime-class {written:?}: {name:?} is not a RuntimeClass name (a DNS-1123 \
                     subdomain)"
                ));
            } else {
                classes.0.insert(tier, name.to_string());
            }
        }
        Ok(classes)
    }
}

/// One rendered object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Object {
    /// A NetworkPolicy (the workload's or the egress proxy's).
    NetworkPolicy(NetworkPolicy),
    /// A claim for a named volume.
    PersistentVolumeClaim(PersistentVolumeClaim),
    /// The egress proxy's Service.
    Service(Service),
    /// The profile's CA for the egress proxy's upstreams.
    ConfigMap(ConfigMap),
    /// The workload's or the egress proxy's Pod.
    Pod(Box<Pod>),
    /// The workload as an agent-sandbox `Sandbox`.
    Sandbox(Box<Sandbox>),
    /// The workload's pod as a warm pool's template.
    SandboxTemplate(Box<SandboxTemplate>),
    /// The warm pool of that template.
    SandboxWarmPool(Box<SandboxWarmPool>),
    /// A claim of one of its members.
    SandboxClaim(Box<SandboxClaim>),
}

impl Object {
    /// The object's kind, such as `Pod`.
    pub fn kind(&self) -> &'static str {
        match self {
            Object::NetworkPolicy(_) => "NetworkPolicy",
            Object::PersistentVolumeClaim(_) => "PersistentVolumeClaim",
            Object::Service(_) => "Service",
            Object::ConfigMap(_) => "ConfigMap",
            Object::Pod(_) => "Pod",
            Object::Sandbox(_) => SANDBOX_KIND,
            Object::SandboxTemplate(_) => "SandboxTemplate",
            Object::SandboxWarmPool(_) => "SandboxWarmPool",
            Object::SandboxClaim(_) => "SandboxClaim",
        }
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        let metadata = match self {
            Object::NetworkPolicy(object) => &object.metadata,
            Object::PersistentVolumeClaim(object) => &object.metadata,
            Object::Service(object) => &object.metadata,
            Object::ConfigMap(object) => &object.metadata,
            Object::Pod(object) => &object.metadata,
            Object::Sandbox(object) => &object.metadata,
            Object::SandboxTemplate(object) => &object.metadata,
            Object::SandboxWarmPool(object) => &object.metadata,
            Object::SandboxClaim(object) => &object.metadata,
        };
        metadata.name.as_deref().unwrap_or_default()
    }

    /// The object as JSON, `apiVersion` and `kind` included.
    pub fn to_json(&self) -> serde_json::Value {
        // k8s-openapi objects and the Sandbox structs are plain data; serializing them to a
        // Value cannot fail.
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// A pod spec of a rendering with the annotations its pod carries: a Pod's, or a Sandbox's
/// pod template unwrapped.
#[derive(Debug, Clone, Copy)]
pub struct PodView<'a> {
    /// `Pod/NAME` or `Sandbox/NAME`.
    pub object: &'a Object,
    /// The annotations of the pod (the Sandbox's pod template's).
    pub annotations: Option<&'a BTreeMap<String, String>>,
    /// The pod spec.
    pub spec: &'a PodSpec,
}

/// The objects of one launch, in apply order (policies first, so no pod runs unguarded; the
/// workload last), with what differs from Docker.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendering {
    /// Pod or Sandbox.
    pub kind: ObjectKind,
    /// The base name of the objects.
    pub name: String,
    /// The namespace, if one was given.
    pub namespace: Option<String>,
    /// The Pod Security level the pods meet, and where it was set.
    pub pod_security: PodSecurity,
    /// The objects, in apply order.
    pub objects: Vec<Object>,
    /// Approximations and cluster duties.
    pub notes: Notes,
}

impl Rendering {
    /// A `v1` `List` of the objects.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "List",
            "items": self.objects.iter().map(Object::to_json).collect::<Vec<_>>(),
        })
    }

    /// A multi-document YAML stream of the objects, one `---` document each.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        for object in &self.objects {
            out.push_str("---\n");
            // Plain data always serializes to YAML.
            out.push_str(&serde_yaml_ng::to_string(&object.to_json()).unwrap_or_default());
        }
        out
    }

    /// Every pod spec: the egress proxy's and the workload's (unwrapped from a Sandbox).
    pub fn pods(&self) -> Vec<PodView<'_>> {
        self.objects
            .iter()
            .filter_map(|object| match object {
                Object::Pod(pod) => pod.spec.as_ref().map(|spec| PodView {
                    object,
                    annotations: pod.metadata.annotations.as_ref(),
                    spec,
                }),
                Object::Sandbox(sandbox) => Some(PodView {
                    object,
                    annotations: Some(&sandbox.spec.pod_template.metadata.annotations),
                    spec: &sandbox.spec.pod_template.spec,
                }),
                Object::SandboxTemplate(template) => Some(PodView {
                    object,
                    annotations: Some(&template.spec.pod_template.metadata.annotations),
                    spec: &template.spec.pod_template.spec,
                }),
                _ => None,
            })
            .collect()
    }

    /// The workload's pod spec (the last object; a pool's template).
    pub fn workload(&self) -> Option<&PodSpec> {
        if let ObjectKind::Pool { .. } = self.kind {
            return self.objects.iter().find_map(|object| match object {
                Object::SandboxTemplate(template) => Some(&template.spec.pod_template.spec),
                _ => None,
            });
        }
        match self.objects.last()? {
            Object::Pod(pod) => pod.spec.as_ref(),
            Object::Sandbox(sandbox) => Some(&sandbox.spec.pod_template.spec),
            _ => None,
        }
    }
}
