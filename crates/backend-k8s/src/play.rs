//! A rendering made playable by a local Kubernetes-YAML executor, `podman kube play` (Podman
//! 4.3 and later), without changing what a cluster gets: [`play`] takes the [`Rendering`]
//! `agentc render --backend k8s` prints and returns the pods to play, each as the YAML Podman
//! reads, with every change from the rendering listed by field ([`Adaptation`]).
//!
//! The changes, and only these:
//! - an annotation value longer than [`MAX_PLAYED_ANNOTATION`] characters is left out (Podman
//!   4.x refuses the whole file for one; 5.0 lifted the limit): the notes' JSON, the spec
//!   digest, a long profile file; the rendering keeps them for a cluster;
//! - the seccomp profile is also written as the annotations Podman reads
//!   (`container.seccomp.security.alpha.kubernetes.io/NAME`), since it ignores the field; a
//!   cluster gets only the field, as the API server deprecates the annotations;
//! - each `emptyDir` gets a volume name of its pod's own (`POD-VOLUME`): Podman 4.3 makes a
//!   named volume of it, which two pods of one name would share;
//! - a `Sandbox` is played as the Pod its controller makes of `spec.podTemplate` (the
//!   Sandbox's name, the template's labels, annotations and spec);
//! - a pod that lowers `net.ipv4.ip_unprivileged_port_start` (the egress proxy, for its DNS
//!   stub on 53) gets `NET_BIND_SERVICE` in its containers instead, since Podman 4.3 applies
//!   no pod sysctl;
//! - `containers[].ports` are left out: Podman publishes a containerPort on the host (and
//!   refuses one without a bridge network), where Kubernetes only documents it;
//! - with a command given (verify's probe), the workload container runs it, `restartPolicy:
//!   Never`.
//!
//! The Secrets the pods read are listed ([`Play::secrets`]): Podman reads them from its own
//! secret store, where the player puts them.
//!
//! NetworkPolicies and Services are not played (Podman skips both kinds): the executor's
//! networks stand in for them ([`NotPlayed`]); PersistentVolumeClaims become Podman volumes
//! of the claim's name ([`Play::claims`]), ConfigMaps are played with the pod that mounts
//! them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{Object, ObjectKind, Rendering, CONTAINER_NAME};

/// The longest annotation value Podman 4.x plays (`kube play` refuses a longer one, "value
/// length exceeds Kubernetes max 63"; containers/podman#21663, fixed in 5.0).
pub const MAX_PLAYED_ANNOTATION: usize = 63;

/// The annotation prefix of a container's seccomp profile, the only spelling `podman kube
/// play` reads (it ignores `securityContext.seccompProfile`).
pub const SECCOMP_CONTAINER_ANNOTATION: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// What a played pod is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlayedRole {
    /// agentc's egress proxy: played first, on the workload's network and the outside.
    EgressProxy,
    /// The workload (the Pod, or the Sandbox's pod template): played last.
    Workload,
}

/// One pod to play, with the objects it needs (ConfigMaps it mounts) before it in one file.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayedPod {
    /// Egress proxy or workload.
    pub role: PlayedRole,
    /// The pod's name (its containers are `NAME-CONTAINER` on Podman).
    pub name: String,
    /// The pod as played.
    pub pod: Pod,
    /// Objects played in the same file before the pod (its ConfigMaps), as JSON.
    pub companions: Vec<serde_json::Value>,
}

impl PlayedPod {
    /// The multi-document YAML `podman kube play` reads: the companions, then the pod.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod"});
        let mut documents = self.companions.clone();
        let mut pod_json = serde_json::to_value(&self.pod).unwrap_or_default();
        if let (Some(object), Some(header)) = (pod_json.as_object_mut(), pod.as_object()) {
            for (key, value) in header {
                object.insert(key.clone(), value.clone());
            }
        }
        documents.push(pod_json);
        for document in documents {
            out.push_str("---\n");
            out.push_str(&serde_yaml_ng::to_string(&document).unwrap_or_default());
        }
        out
    }

    /// The Podman name of the pod's container `container`.
    pub fn container(&self, container: &str) -> String {
        format!("{}-{container}", self.name)
    }

    /// The workload's container as Podman names it (`POD-agent`).
    pub fn agent_container(&self) -> String {
        self.container(CONTAINER_NAME)
    }

    /// The pod's spec (a played pod always has one).
    pub fn spec(&self) -> Option<&PodSpec> {
        self.pod.spec.as_ref()
    }
}

/// One change of the played objects from the rendering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adaptation {
    /// Where: `Pod/NAME metadata.annotations.KEY`, `Pod/NAME spec.volumes[1].name`.
    pub field: String,
    /// What changed and why.
    pub change: String,
}

/// An object of the rendering that is not played, and what stands in for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotPlayed {
    /// `KIND/NAME`.
    pub object: String,
    /// Why, and what the local run does instead.
    pub reason: String,
}

/// A rendering as `podman kube play` plays it.
#[derive(Debug, Clone, PartialEq)]
pub struct Play {
    /// The pods, the egress proxy's first and the workload's last.
    pub pods: Vec<PlayedPod>,
    /// The PersistentVolumeClaims the pods mount: Podman volumes of these names.
    pub claims: Vec<String>,
    /// The volumes Podman makes of the pods' `emptyDir`s (renamed apart).
    pub empty_dirs: Vec<String>,
    /// The ConfigMaps played with the pods that mount them: Podman 4.3 makes a volume of each
    /// ConfigMap's name, which `podman kube down` leaves.
    pub config_maps: Vec<String>,
    /// The Secrets the pods read, with the keys they read: Podman looks each up in its own
    /// secret store, as a JSON object of base64 values by key.
    pub secrets: BTreeMap<String, Vec<String>>,
    /// What differs from the rendering.
    pub adaptations: Vec<Adaptation>,
    /// What is not played.
    pub not_played: Vec<NotPlayed>,
}

impl Play {
    /// The workload's pod.
    pub fn workload(&self) -> Option<&PlayedPod> {
        self.pods
            .iter()
            .find(|pod| pod.role == PlayedRole::Workload)
    }

    /// The egress proxy's pod, for an allowlist with hosts.
    pub fn egress_proxy(&self) -> Option<&PlayedPod> {
        self.pods
            .iter()
            .find(|pod| pod.role == PlayedRole::EgressProxy)
    }
}

/// The pods of `rendering` as `podman kube play` plays them; `command` (such as verify's
/// probe, `["/bin/sh", "-c", SCRIPT]`) replaces the workload container's command and
/// arguments. A warm pool's objects are refused (its template is the Sandbox's pod: play that).
pub fn play(rendering: &Rendering, command: Option<Vec<String>>) -> Result<Play, String> {
    if let ObjectKind::Pool { .. } = rendering.kind {
        return Err(
            "a warm pool's members are made by the agent-sandbox controller: play the \
                    Sandbox rendering (--k8s-kind sandbox), whose pod template is the pool's"
                .to_string(),
        );
    }
    let mut play = Play {
        pods: Vec::new(),
        claims: Vec::new(),
        empty_dirs: Vec::new(),
        config_maps: Vec::new(),
        secrets: BTreeMap::new(),
        adaptations: Vec::new(),
        not_played: Vec::new(),
    };
    let mut config_maps = BTreeMap::new();
    let mut workload = None;
    for object in &rendering.objects {
        let reference = format!("{}/{}", object.kind(), object.name());
        match object {
            Object::NetworkPolicy(_) => play.not_played.push(NotPlayed {
                object: reference,
                reason: "Podman does not enforce NetworkPolicy: the pods run on networks of \
                         their own instead (none, or an internal one whose only way out is \
                         the egress proxy)"
                    .to_string(),
            }),
            Object::Service(_) => play.not_played.push(NotPlayed {
                object: reference,
                reason: "Podman plays no Service: the proxy Pod has the Service's name, \
                         which Podman's resolver answers with the pod's address on the \
                         network they share"
                    .to_string(),
            }),
            Object::PersistentVolumeClaim(claim) => {
                play.claims.extend(claim.metadata.name.clone());
            }
            Object::ConfigMap(map) => {
                config_maps.insert(object.name().to_string(), map.clone());
            }
            Object::Pod(pod) => {
                let role = if object_is_workload(rendering, object) {
                    PlayedRole::Workload
                } else {
                    PlayedRole::EgressProxy
                };
                let pod = (**pod).clone();
                if role == PlayedRole::Workload {
                    workload = Some(pod);
                } else {
                    let proxy = played(&mut play, role, pod, &config_maps);
                    play.pods.push(proxy);
                }
            }
            Object::Sandbox(sandbox) => {
                let template = &sandbox.spec.pod_template;
                let pod = Pod {
                    metadata: ObjectMeta {
                        name: sandbox.metadata.name.clone(),
                        namespace: sandbox.metadata.namespace.clone(),
                        labels: Some(template.metadata.labels.clone()),
                        annotations: Some(template.metadata.annotations.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(template.spec.clone()),
                    status: None,
                };
                play.adaptations.push(Adaptation {
                    field: reference,
                    change: "played as the Pod the agent-sandbox controller makes of \
                             spec.podTemplate"
                        .to_string(),
                });
                workload = Some(pod);
            }
            Object::SandboxTemplate(_) | Object::SandboxWarmPool(_) | Object::SandboxClaim(_) => {}
        }
    }
    let Some(mut pod) = workload else {
        return Err("the rendering has no workload pod".to_string());
    };
    if let (Some(command), Some(spec)) = (command, pod.spec.as_mut()) {
        let name = pod.metadata.name.clone().unwrap_or_default();
        if let Some(container) = spec
            .containers
            .iter_mut()
            .find(|container| container.name == CONTAINER_NAME)
        {
            container.command = Some(command);
            container.args = None;
            play.adaptations.push(Adaptation {
                field: format!("Pod/{name} spec.containers[{CONTAINER_NAME}].command"),
                change: "verify's probe runs in place of the agent".to_string(),
            });
        }
        if spec.restart_policy.as_deref() != Some("Never") {
            spec.restart_policy = Some("Never".to_string());
            play.adaptations.push(Adaptation {
                field: format!("Pod/{name} spec.restartPolicy"),
                change: "Never: the probe runs once".to_string(),
            });
        }
    }
    let workload = played(&mut play, PlayedRole::Workload, pod, &config_maps);
    play.pods.push(workload);
    Ok(play)
}

/// The sysctl that lets a pod's non-root processes bind ports from its value up.
pub const UNPRIVILEGED_PORT_START: &str = "net.ipv4.ip_unprivileged_port_start";

/// Podman 4.3 applies no pod sysctl, so `net.ipv4.ip_unprivileged_port_start` (the egress
/// proxy's, for its DNS stub on 53) does not hold: each container of a pod that lowers it below
/// 1024 gets `NET_BIND_SERVICE` instead, which lets it bind what the sysctl would.
fn unprivileged_ports(play: &mut Play, name: &str, spec: &mut PodSpec) {
    let lowered = spec
        .security_context
        .as_ref()
        .and_then(|context| context.sysctls.as_ref())
        .into_iter()
        .flatten()
        .any(|sysctl| {
            sysctl.name == UNPRIVILEGED_PORT_START
                && sysctl.value.parse::<u32>().is_ok_and(|start| start < 1024)
        });
    if !lowered {
        return;
    }
    for container in spec.containers.iter_mut() {
        let capabilities = container
            .security_context
            .get_or_insert_with(Default::default)
            .capabilities
            .get_or_insert_with(Default::default);
        let add = capabilities.add.get_or_insert_with(Vec::new);
        if add
            .iter()
            .any(|capability| capability == "NET_BIND_SERVICE")
        {
            continue;
        }
        add.push("NET_BIND_SERVICE".to_string());
        play.adaptations.push(Adaptation {
            field: format!(
                "Pod/{name} spec.containers[{}].securityContext.capabilities.add",
                container.name
            ),
            change: format!(
                "NET_BIND_SERVICE: Podman 4.3 applies no pod sysctl, and the capability lets the \
                 container bind the ports {UNPRIVILEGED_PORT_START} opens to it"
            ),
        });
    }
}

/// Whether `object` is the rendering's workload pod (the last object), not its egress proxy.
fn object_is_workload(rendering: &Rendering, object: &Object) -> bool {
    rendering
        .objects
        .last()
        .is_some_and(|last| std::ptr::eq(last, object))
}

/// `pod` made playable: long annotations left out, the seccomp annotations written, its
/// `emptyDir`s renamed apart; the ConfigMaps it mounts played with it.
fn played(
    play: &mut Play,
    role: PlayedRole,
    mut pod: Pod,
    config_maps: &BTreeMap<String, k8s_openapi::api::core::v1::ConfigMap>,
) -> PlayedPod {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let mut annotations = pod.metadata.annotations.take().unwrap_or_default();
    annotations.retain(|key, value| {
        let keep = value.chars().count() <= MAX_PLAYED_ANNOTATION;
        if !keep {
            play.adaptations.push(Adaptation {
                field: format!("Pod/{name} metadata.annotations.{key}"),
                change: format!(
                    "left out: its value has {} characters and Podman 4.x refuses any over \
                     {MAX_PLAYED_ANNOTATION} (a cluster gets it from `agentc render`)",
                    value.chars().count()
                ),
            });
        }
        keep
    });
    let mut companions = Vec::new();
    if let Some(spec) = pod.spec.as_mut() {
        let pod_seccomp = spec
            .security_context
            .as_ref()
            .and_then(|context| context.seccomp_profile.as_ref());
        for container in spec
            .init_containers
            .iter()
            .flatten()
            .chain(&spec.containers)
        {
            for reference in container
                .env
                .iter()
                .flatten()
                .filter_map(|var| var.value_from.as_ref()?.secret_key_ref.as_ref())
            {
                let keys = play.secrets.entry(reference.name.clone()).or_default();
                if !keys.contains(&reference.key) {
                    keys.push(reference.key.clone());
                }
            }
            let profile = container
                .security_context
                .as_ref()
                .and_then(|context| context.seccomp_profile.as_ref())
                .or(pod_seccomp);
            let value = match profile {
                Some(profile) if profile.type_ == "RuntimeDefault" => "runtime/default".to_string(),
                Some(profile) if profile.type_ == "Localhost" => format!(
                    "localhost/{}",
                    profile.localhost_profile.clone().unwrap_or_default()
                ),
                Some(profile) if profile.type_ == "Unconfined" => "unconfined".to_string(),
                _ => continue,
            };
            let key = format!("{SECCOMP_CONTAINER_ANNOTATION}{}", container.name);
            play.adaptations.push(Adaptation {
                field: format!("Pod/{name} metadata.annotations.{key}"),
                change: format!(
                    "{value}: the seccomp profile as Podman reads it (it ignores the field)"
                ),
            });
            annotations.insert(key, value);
        }
        for container in spec
            .init_containers
            .iter_mut()
            .flatten()
            .chain(spec.containers.iter_mut())
        {
            if container.ports.take().is_some() {
                play.adaptations.push(Adaptation {
                    field: format!("Pod/{name} spec.containers[{}].ports", container.name),
                    change: "left out: Podman 4.x publishes a containerPort on the host (and \
                             refuses it without a bridge network), where Kubernetes only \
                             documents it"
                        .to_string(),
                });
            }
        }
        unprivileged_ports(play, &name, spec);
        for (index, volume) in spec.volumes.iter_mut().flatten().enumerate() {
            if let Some(map) = volume
                .config_map
                .as_ref()
                .and_then(|source| config_maps.get(&source.name))
            {
                let mut json = serde_json::to_value(map).unwrap_or_default();
                if let Some(object) = json.as_object_mut() {
                    object.insert("apiVersion".into(), "v1".into());
                    object.insert("kind".into(), "ConfigMap".into());
                }
                companions.push(json);
                if let Some(map_name) = volume.config_map.as_ref().map(|source| &source.name) {
                    if !play.config_maps.contains(map_name) {
                        play.config_maps.push(map_name.clone());
                    }
                }
            }
            if let Some(secret) = &volume.secret {
                let keys = play
                    .secrets
                    .entry(secret.secret_name.clone().unwrap_or_default())
                    .or_default();
                keys.extend(secret.items.iter().flatten().map(|item| item.key.clone()));
            }
            if let Some(claim) = &volume.persistent_volume_claim {
                if !play.claims.contains(&claim.claim_name) {
                    play.claims.push(claim.claim_name.clone());
                }
            }
            if volume.empty_dir.is_none() {
                continue;
            }
            let renamed = format!("{name}-{}", volume.name);
            for container in spec
                .init_containers
                .iter_mut()
                .flatten()
                .chain(spec.containers.iter_mut())
            {
                for mount in container.volume_mounts.iter_mut().flatten() {
                    if mount.name == volume.name {
                        mount.name = renamed.clone();
                    }
                }
            }
            play.adaptations.push(Adaptation {
                field: format!("Pod/{name} spec.volumes[{index}].name"),
                change: format!(
                    "{renamed}: Podman 4.3 makes a named volume of an emptyDir, shared by \
                     every pod with one of its name"
                ),
            });
            play.empty_dirs.push(renamed.clone());
            volume.name = renamed;
        }
    }
    pod.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    PlayedPod {
        role,
        name,
        pod,
        companions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{render, EgressMode, EgressPolicy, Options};
    use agentc_policy::{Action, ContainerSpec, LaunchKind, LaunchSpec, Network, Tmpfs};

    fn rendering(kind: ObjectKind) -> Rendering {
        let mut container = ContainerSpec::empty("registry.example/sandbox:1");
        container.user = Some("1000:1000".into());
        container.network = Network::None;
        container.tmpfs = vec![Tmpfs {
            target: "/tmp".into(),
            exec: false,
        }];
        container
            .labels
            .insert("io.agentc.spec-digest".into(), "d".repeat(64));
        let spec = LaunchSpec {
            kind: LaunchKind::Sandbox,
            profile: "demo".into(),
            action: Action::Container(Box::new(container)),
            origins: Default::default(),
        };
        let options = Options {
            kind,
            egress: EgressPolicy {
                mode: EgressMode::Deny,
                ..EgressPolicy::default()
            },
            ..Options::default()
        };
        render(&spec, &options).expect("renders")
    }

    fn probe() -> Option<Vec<String>> {
        Some(vec!["/bin/sh".into(), "-c".into(), "echo probe".into()])
    }

    #[test]
    fn a_pod_plays_with_long_annotations_left_out_and_every_change_listed() {
        let rendering = rendering(ObjectKind::Pod);
        let play = play(&rendering, probe()).expect("plays");
        let pod = play.workload().expect("a workload");
        let annotations = pod.pod.metadata.annotations.clone().unwrap_or_default();
        assert!(
            annotations
                .values()
                .all(|value| value.len() <= MAX_PLAYED_ANNOTATION),
            "{annotations:?}"
        );
        assert_eq!(
            annotations
                .get("container.seccomp.security.alpha.kubernetes.io/agent")
                .map(String::as_str),
            Some("runtime/default")
        );
        let fields: Vec<&str> = play.adaptations.iter().map(|a| a.field.as_str()).collect();
        let name = &pod.name;
        for field in [
            format!("Pod/{name} metadata.annotations.io.agentc.spec-digest"),
            format!("Pod/{name} metadata.annotations.io.agentc.approximations"),
            format!("Pod/{name} spec.containers[agent].command"),
        ] {
            assert!(fields.contains(&field.as_str()), "{field} in {fields:?}");
        }
        let spec = pod.spec().expect("spec");
        let agent = &spec.containers[0];
        assert_eq!(agent.command, probe());
        assert_eq!(agent.args, None);
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        // The tmpfs emptyDir has a name of the pod's own, its mount follows.
        let volume = &spec.volumes.as_ref().expect("volumes")[0];
        assert_eq!(volume.name, format!("{name}-tmpfs-0"));
        assert_eq!(play.empty_dirs, vec![volume.name.clone()]);
        let mount = &agent.volume_mounts.as_ref().expect("mounts")[0];
        assert_eq!(mount.name, volume.name);
        assert_eq!(play.not_played.len(), 1, "the NetworkPolicy");
        // Everything else is the rendering's: the security context untouched.
        let Some(Object::Pod(rendered)) = rendering.objects.last() else {
            panic!("a pod")
        };
        let rendered_spec = rendered.spec.as_ref().expect("spec");
        assert_eq!(
            agent.security_context,
            rendered_spec.containers[0].security_context
        );
        assert_eq!(spec.security_context, rendered_spec.security_context);
        assert_eq!(agent.resources, rendered_spec.containers[0].resources);
        let yaml = pod.to_yaml();
        assert!(yaml.starts_with("---\napiVersion: v1\n"), "{yaml}");
        assert!(yaml.contains("kind: Pod"), "{yaml}");
    }

    #[test]
    fn a_sandbox_plays_as_the_pod_of_its_template() {
        let rendering = rendering(ObjectKind::Sandbox);
        let play = play(&rendering, probe()).expect("plays");
        let pod = play.workload().expect("a workload");
        let Some(Object::Sandbox(sandbox)) = rendering.objects.last() else {
            panic!("a sandbox")
        };
        assert_eq!(pod.pod.metadata.name, sandbox.metadata.name);
        assert_eq!(
            pod.pod.metadata.labels.as_ref(),
            Some(&sandbox.spec.pod_template.metadata.labels)
        );
        assert!(play
            .adaptations
            .iter()
            .any(|a| a.field.starts_with("Sandbox/") && a.change.contains("podTemplate")));
    }

    #[test]
    fn a_pool_is_refused_with_the_sandbox_to_play_instead() {
        let error = play(&rendering(ObjectKind::Pool { replicas: 1 }), None).unwrap_err();
        assert!(error.contains("--k8s-kind sandbox"), "{error}");
    }

    #[test]
    fn the_egress_proxy_binds_its_dns_stub_by_capability_since_podman_applies_no_sysctl() {
        let mut container = ContainerSpec::empty("registry.example/sandbox:1");
        container.user = Some("1000:1000".into());
        container.network = Network::Default;
        let spec = LaunchSpec {
            kind: LaunchKind::Sandbox,
            profile: "demo".into(),
            action: Action::Container(Box::new(container)),
            origins: Default::default(),
        };
        let options = Options {
            egress: EgressPolicy {
                mode: EgressMode::Allowlist,
                hosts: vec!["api.example.com".into()],
                ..EgressPolicy::default()
            },
            egress_proxy_image: Some("registry.example/agentc:1".into()),
            ..Options::default()
        };
        let rendering = render(&spec, &options).expect("renders");
        let play = play(&rendering, probe()).expect("plays");
        let proxy = play.egress_proxy().expect("the proxy is played");
        let added = |pod: &PlayedPod| -> Vec<String> {
            pod.spec()
                .into_iter()
                .flat_map(|spec| &spec.containers)
                .filter_map(|c| {
                    c.security_context
                        .as_ref()?
                        .capabilities
                        .as_ref()?
                        .add
                        .clone()
                })
                .flatten()
                .collect()
        };
        assert_eq!(added(proxy), vec!["NET_BIND_SERVICE".to_string()]);
        assert!(added(play.workload().expect("workload")).is_empty());
        let field = format!(
            "Pod/{} spec.containers[egress-proxy].securityContext.capabilities.add",
            proxy.name
        );
        assert!(
            play.adaptations
                .iter()
                .any(|a| a.field == field && a.change.contains(UNPRIVILEGED_PORT_START)),
            "{:?}",
            play.adaptations
        );
        // The sysctl stays as rendered, for an executor that applies it.
        let sysctls = proxy
            .spec()
            .and_then(|spec| spec.security_context.as_ref()?.sysctls.clone())
            .unwrap_or_default();
        assert!(sysctls.iter().any(|s| s.name == UNPRIVILEGED_PORT_START));
    }
}
