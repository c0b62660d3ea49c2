//! `LaunchSpec` to Kubernetes objects, one helper per flag family as in docker's `opts.go`.
//!
//! Every helper documents the docker flag it stands for and the Kubernetes field it writes.
//! Nothing is silently dropped: a value is rendered exactly, rendered stricter or weaker with
//! a [`Note`](crate::Note), or refused with a [`RenderError`] naming its field.

use std::collections::{BTreeMap, BTreeSet};

use agentc_policy::{
    Action, AppArmor, Capability, ContainerSpec, Device, EnvValue, EnvVar, ExtraHost, HostTarget,
    LaunchKind, LaunchSpec, LogConfig, Mount, MountSource, Network, Origin, Protocol,
    PublishedPort, Resources, Tmpfs,
};
use k8s_openapi::api::core::v1::{
    AppArmorProfile, Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvVarSource,
    HostAlias, PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource,
    Pod, PodDNSConfig, PodSecurityContext, PodSpec, Probe, ResourceRequirements, SeccompProfile,
    SecretKeySelector, SecurityContext, Service, ServicePort, ServiceSpec, Sysctl, TCPSocketAction,
    Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::api::networking::v1::{NetworkPolicyEgressRule, NetworkPolicyIngressRule};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::egress::{self, EgressMode, DNS_PORT, PROXY_PORT, PROXY_UID};
use crate::error::{RenderError, RenderErrors};
use crate::names::{self, bytes_quantity, cpu_quantity};
use crate::notes::Notes;
use crate::pss::{self, PodSecurityLevel};
use crate::sandbox::{
    PodTemplate, PodTemplateMetadata, Sandbox, SandboxSpec, SANDBOX_API_VERSION, SANDBOX_KIND,
};
use crate::{Object, ObjectKind, Options, Rendering};

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
/// The name of the workload's container.
pub const CONTAINER_NAME: &str = "agent";
/// The storage each named volume's claim requests (Docker volumes have no size).
pub const VOLUME_SIZE: &str = "10Gi";

/// The uid and gid the agent presets' images run their agent as: `claude`, `opencode` and
/// `codex` are built with `UID=1000`, Hermes keeps its own 10000.
pub fn preset_uid(agent: &str) -> Option<i64> {
    match agent {
        "claude-code" | "opencode" | "codex" => Some(1000),
        "hermes" => Some(10000),
        _ => None,
    }
}

/// The capabilities a Pod may add at each Pod Security level.
pub fn capability_allowed(level: PodSecurityLevel, capability: Capability) -> bool {
    pss::capability_allowed(level, capability.as_str())
}

/// Renders one launch as Kubernetes objects, or names every field that has no faithful,
/// at-least-as-strict rendering.
pub fn render(spec: &LaunchSpec, options: &Options) -> Result<Rendering, RenderErrors> {
    let mut renderer = Renderer {
        spec,
        options,
        errors: Vec::new(),
        notes: Notes::default(),
    };
    let rendering = renderer.render();
    match rendering {
        Some(rendering) if renderer.errors.is_empty() => Ok(rendering),
        _ => Err(RenderErrors(renderer.errors)),
    }
}

/// What the network helpers decide for the workload.
struct NetworkPlan {
    /// The workload's NetworkPolicy rules (no rules: deny).
    ingress: Vec<NetworkPolicyIngressRule>,
    egress: Vec<NetworkPolicyEgressRule>,
    /// Extra labels of the workload pod.
    labels: BTreeMap<String, String>,
    /// The egress proxy's objects, when the allowlist needs it.
    proxy: Vec<Object>,
    /// Proxy variables for the workload.
    env: Vec<(String, String)>,
    /// The workload's only nameserver (the egress proxy's fixed address), if any.
    dns: Option<String>,
}

struct Renderer<'a> {
    spec: &'a LaunchSpec,
    options: &'a Options,
    errors: Vec<RenderError>,
    notes: Notes,
}

impl Renderer<'_> {
    /// The profile field (or option, or spec path) a spec value came from.
    fn field(&self, key: &str) -> String {
        match self.spec.origins.get(key) {
            Some(Origin::Profile { field, .. }) => field.clone(),
            Some(Origin::Environment { variable }) => variable.clone(),
            Some(Origin::Invocation { input }) => input.clone(),
            Some(Origin::Preset { .. } | Origin::Default) | None => key.to_string(),
        }
    }

    fn refuse(&mut self, field: impl Into<String>, message: impl Into<String>, hint: &str) {
        self.errors.push(RenderError::Refused {
            field: field.into(),
            message: message.into(),
            hint: hint.to_string(),
        });
    }

    /// The agent preset that set any value of the spec, if any.
    fn preset_agent(&self) -> Option<&str> {
        self.spec.origins.values().find_map(|origin| match origin {
            Origin::Preset { agent } => Some(agent.as_str()),
            _ => None,
        })
    }

    fn check_options(&mut self) {
        let options = self.options;
        let mut invalid = |field: &str, value: &str, what: &'static str, hint: &str| {
            self.errors.push(RenderError::InvalidName {
                field: field.to_string(),
                value: value.to_string(),
                what,
                hint: hint.to_string(),
            })
        };
        if let Some(namespace) = &options.namespace {
            if !names::is_dns1123_label(namespace) {
                invalid(
                    "--namespace",
                    namespace,
                    "namespace (DNS-1123 label)",
                    "use up to 63 lower-case letters, digits and inner dashes",
                );
            }
        }
        if let Some(name) = &options.name {
            if !names::is_dns1035_label(name) || name.len() > names::MAX_BASE_NAME {
                invalid(
                    "--k8s-name",
                    name,
                    "object name (DNS-1035 label of at most 56 characters)",
                    "start with a letter; use lower-case letters, digits and inner dashes",
                );
            }
        }
        if let Some(claim) = &options.workspace_claim {
            if !names::is_dns1123_subdomain(claim) {
                invalid(
                    "--workspace-claim",
                    claim,
                    "PersistentVolumeClaim name (DNS-1123 subdomain)",
                    "name an existing claim in the namespace",
                );
            }
        }
        if let Some(image) = &options.egress_proxy_image {
            if image.is_empty()
                || image.starts_with('-')
                || image.chars().any(|c| c.is_whitespace() || c.is_control())
            {
                invalid(
                    "--egress-proxy-image",
                    image,
                    "image reference",
                    "pass one image reference, such as registry.example/agentc:1.0",
                );
            }
        }
    }

    fn render(&mut self) -> Option<Rendering> {
        self.check_options();
        let container = match &self.spec.action {
            Action::Container(container) => container,
            Action::Build(_) => {
                self.refuse(
                    "image.build_context",
                    "an image build is not a Kubernetes object",
                    "build and push the image with `agentc build`, then render the run with \
                     image.ref or --image naming the pushed image",
                );
                return None;
            }
        };
        let ContainerSpec {
            // Docker's container name holds the local user (`agentc-sandbox-dev-1000-...`) to
            // be unique on one host; in a namespace the launch kind and the profile name it.
            name: _,
            image,
            entrypoint,
            command,
            user,
            working_dir,
            init,
            env,
            mounts,
            tmpfs,
            read_only_root,
            no_new_privileges,
            apparmor,
            cap_drop_all,
            cap_add,
            network,
            extra_hosts,
            ports,
            // On a named network Docker reaches these at the container's address; the k8s
            // approximation of a named network (a label whose pods reach each other) already
            // lets its peers reach every port, and a pod has no network aliases.
            exposed_ports: _,
            network_aliases: _,
            resources,
            log,
            devices,
            labels,
            interactive,
            tty,
            auto_remove,
            // `--detach` only says how docker attaches: a Pod always runs detached.
            detach: _,
        } = container.as_ref();

        let base = match &self.options.name {
            Some(name) => name.clone(),
            None => names::base_name(&format!(
                "agentc-{}-{}",
                self.spec.kind.as_str(),
                self.spec.profile
            )),
        };
        let mut pod = PodSpec {
            automount_service_account_token: Some(false),
            enable_service_links: Some(false),
            host_network: Some(false),
            host_pid: Some(false),
            host_ipc: Some(false),
            restart_policy: Some("Never".to_string()),
            ..PodSpec::default()
        };
        let mut main = Container {
            name: CONTAINER_NAME.to_string(),
            image: Some(image.clone()),
            ..Container::default()
        };
        self.render_process(
            &mut pod,
            &mut main,
            Process {
                entrypoint,
                command,
                user,
                working_dir,
                init: *init,
                interactive: *interactive,
                tty: *tty,
                auto_remove: *auto_remove,
            },
        );
        let claims = self.render_mounts(&mut pod, &mut main, mounts, tmpfs);
        self.render_security(
            &mut pod,
            &mut main,
            Security {
                read_only_root: *read_only_root,
                no_new_privileges: *no_new_privileges,
                apparmor,
                cap_drop_all: *cap_drop_all,
                cap_add,
                devices,
            },
        );
        self.render_resources(&mut pod, &mut main, resources);
        self.render_logging(log);
        let (pod_labels, mut annotations) = self.render_labels(labels, &base);
        let plan = self.render_network(
            &mut pod,
            &mut main,
            network,
            extra_hosts,
            ports,
            &base,
            &pod_labels,
        );
        self.render_env(&mut main, env, &plan.env);
        if let Some(nameserver) = &plan.dns {
            pod.dns_policy = Some("None".to_string());
            pod.dns_config = Some(PodDNSConfig {
                nameservers: Some(vec![nameserver.clone()]),
                options: None,
                searches: None,
            });
        }
        if !self.errors.is_empty() {
            return None;
        }

        let mut workload_labels = pod_labels.clone();
        workload_labels.extend(plan.labels.clone());
        for (key, value) in self.notes.annotations() {
            annotations.insert(key.to_string(), value);
        }
        pod.containers = vec![main];
        let metadata = |name: String, labels: BTreeMap<String, String>| ObjectMeta {
            name: Some(name),
            namespace: self.options.namespace.clone(),
            labels: (!labels.is_empty()).then_some(labels),
            ..ObjectMeta::default()
        };

        let mut objects = Vec::new();
        objects.push(Object::NetworkPolicy(egress::policy(
            metadata(base.clone(), managed(&pod_labels)),
            &selector_labels(&base, &pod_labels),
            plan.ingress,
            plan.egress,
        )));
        let (proxy_policies, proxy_rest): (Vec<Object>, Vec<Object>) = plan
            .proxy
            .into_iter()
            .partition(|object| matches!(object, Object::NetworkPolicy(_)));
        objects.extend(proxy_policies);
        for claim in claims {
            objects.push(Object::PersistentVolumeClaim(PersistentVolumeClaim {
                // Only the profile's label: the run and Decant share a home volume's claim.
                metadata: metadata(
                    claim,
                    managed(&BTreeMap::from_iter(
                        pod_labels
                            .get_key_value(LABEL_PROFILE)
                            .map(|(key, value)| (key.clone(), value.clone())),
                    )),
                ),
                spec: Some(PersistentVolumeClaimSpec {
                    access_modes: Some(vec!["ReadWriteOnce".to_string()]),
                    resources: Some(VolumeResourceRequirements {
                        requests: Some(BTreeMap::from([(
                            "storage".to_string(),
                            Quantity(VOLUME_SIZE.to_string()),
                        )])),
                        limits: None,
                    }),
                    ..PersistentVolumeClaimSpec::default()
                }),
                status: None,
            }));
        }
        objects.extend(proxy_rest);
        let mut object_meta = metadata(base.clone(), workload_labels.clone());
        object_meta.annotations = (!annotations.is_empty()).then(|| annotations.clone());
        objects.push(match self.options.kind {
            ObjectKind::Pod => Object::Pod(Box::new(Pod {
                metadata: object_meta,
                spec: Some(pod),
                status: None,
            })),
            ObjectKind::Sandbox => Object::Sandbox(Box::new(Sandbox {
                api_version: SANDBOX_API_VERSION.to_string(),
                kind: SANDBOX_KIND.to_string(),
                metadata: object_meta,
                spec: SandboxSpec {
                    pod_template: PodTemplate {
                        metadata: PodTemplateMetadata {
                            labels: workload_labels,
                            annotations,
                        },
                        spec: pod,
                    },
                },
            })),
        });
        let rendering = Rendering {
            kind: self.options.kind,
            name: base,
            namespace: self.options.namespace.clone(),
            pod_security: self.options.pod_security,
            objects,
            notes: std::mem::take(&mut self.notes),
        };
        // The last line of defence: no pod leaves the renderer weaker than its level.
        let empty = BTreeMap::new();
        for view in rendering.pods() {
            let annotations = view.annotations.unwrap_or(&empty);
            for violation in pss::check(rendering.pod_security, annotations, view.spec) {
                self.errors.push(RenderError::PodSecurity {
                    field: format!(
                        "{}/{}: {}",
                        view.object.kind(),
                        view.object.name(),
                        violation.path
                    ),
                    rule: violation.rule,
                    detail: violation.detail,
                });
            }
        }
        Some(rendering)
    }

    /// Entrypoint, command, user, working directory, init and the terminal:
    /// `--entrypoint` / the arguments after the image → `command` / `args`; `--user` →
    /// `runAsUser`/`runAsGroup` (numeric only) with `runAsNonRoot`; `--workdir` →
    /// `workingDir`; `--init` → `shareProcessNamespace`; `--interactive`, `--tty` → `stdin`,
    /// `stdinOnce`, `tty`; `--rm` → `restartPolicy: Never` (a Pod is not removed on exit).
    fn render_process(&mut self, pod: &mut PodSpec, main: &mut Container, process: Process<'_>) {
        let Process {
            entrypoint,
            command,
            user,
            working_dir,
            init,
            interactive,
            tty,
            auto_remove,
        } = process;
        if let Some(entrypoint) = entrypoint {
            if entrypoint.is_empty() {
                let field = self.field("entrypoint");
                self.refuse(
                    field,
                    "an empty entrypoint (docker's reset to none) has no Kubernetes spelling",
                    "name the program to run, or leave the entrypoint unset",
                );
            }
            main.command = Some(vec![entrypoint.clone()]);
        }
        if !command.is_empty() {
            main.args = Some(command.to_vec());
        }
        main.working_dir = working_dir.clone();
        main.stdin = interactive.then_some(true);
        main.stdin_once = interactive.then_some(true);
        main.tty = tty.then_some(true);
        if init {
            pod.share_process_namespace = Some(true);
            let field = self.field("init");
            self.notes.approximation(
                "init",
                field,
                "docker's --init runs tini as PID 1; here the pod shares one process namespace, \
                 so the pause container is PID 1 and reaps zombies, and the agent (not PID 1) \
                 gets default signal handling; the pod has no other container to expose"
                    .to_string(),
            );
        }
        if auto_remove {
            self.notes.approximation(
                "auto-remove",
                self.field("auto_remove"),
                "docker --rm removes the container on exit; a finished Pod stays (restartPolicy \
                 Never) until deleted with kubectl delete"
                    .to_string(),
            );
        }
        let mut context = PodSecurityContext {
            run_as_non_root: Some(true),
            ..PodSecurityContext::default()
        };
        match user {
            Some(user) => {
                let field = self.field("user");
                match parse_user(user) {
                    Ok((0, _)) => self.refuse(
                        field,
                        format!("user {user:?} is root, which Pod Security forbids"),
                        "run as a numeric non-root uid, such as \"1000:1000\"",
                    ),
                    Ok((uid, gid)) => {
                        context.run_as_user = Some(uid);
                        context.run_as_group = gid;
                        context.fs_group = gid;
                    }
                    Err(()) => self.refuse(
                        field,
                        format!(
                            "user {user:?} is not numeric: Kubernetes cannot check that a named \
                             user is not root"
                        ),
                        "set [image] user to the numeric uid (and gid), such as \"1000:1000\"",
                    ),
                }
            }
            None => match self.preset_agent().and_then(preset_uid) {
                Some(uid) if self.spec.kind == LaunchKind::Run => {
                    context.run_as_user = Some(uid);
                    context.run_as_group = Some(uid);
                    context.fs_group = Some(uid);
                    self.notes.approximation(
                        "preset-user",
                        "user",
                        format!(
                            "Docker starts the agent image's entrypoint as root, which installs \
                             its firewall and switches to the agent user; here the container \
                             starts as uid {uid}, gid {uid}, the preset image's agent user \
                             (images agentc builds get UID=1000; Hermes keeps 10000), and owns \
                             its volumes through fsGroup"
                        ),
                    );
                }
                _ => self.notes.cluster_duty(
                    "image-user",
                    if self.spec.kind == LaunchKind::Sandbox {
                        "image.user"
                    } else {
                        "user"
                    },
                    "the launch keeps the image's user: runAsNonRoot makes the kubelet refuse to \
                     start it unless the image's USER is a numeric uid other than 0"
                        .to_string(),
                ),
            },
        }
        if context.fs_group.is_some() {
            // Regroup a volume only when its root does not match, not on every start: a home
            // or a workspace can hold many files.
            context.fs_group_change_policy = Some("OnRootMismatch".to_string());
        }
        pod.security_context = Some(context);
    }

    /// `--mount` and `--tmpfs`: a named volume → a PersistentVolumeClaim of the same name
    /// (`subpath` → `subPath`, `readonly` → `readOnly`); the workspace bind →
    /// `--workspace-claim`; any other bind (`hostPath`) is refused; tmpfs → a memory
    /// `emptyDir` (loses `noexec`). Returns the claims to create.
    fn render_mounts(
        &mut self,
        pod: &mut PodSpec,
        main: &mut Container,
        mounts: &[Mount],
        tmpfs: &[Tmpfs],
    ) -> Vec<String> {
        let mut volumes = Vec::new();
        let mut volume_mounts = Vec::new();
        let mut claims = Vec::new();
        for (index, mount) in mounts.iter().enumerate() {
            let Mount {
                target,
                read_only,
                source,
            } = mount;
            let key = format!("mounts.{target}");
            let field = self.field(&key);
            let (claim, sub_path) = match source {
                MountSource::Bind { path } => {
                    let workspace = matches!(
                        self.spec.origins.get(&key),
                        Some(Origin::Invocation { input }) if input == "--workspace"
                    );
                    match (&self.options.workspace_claim, workspace) {
                        (Some(claim), true) => {
                            self.notes.approximation(
                                "workspace-claim",
                                "--workspace",
                                format!(
                                    "the workspace {path} is a host directory on Docker; here it \
                                     is the existing claim {claim}, mounted at {target}"
                                ),
                            );
                            (claim.clone(), None)
                        }
                        (None, true) => {
                            self.errors.push(RenderError::MissingOption {
                                field: "workspace.mount".to_string(),
                                message: format!(
                                    "the workspace {path} is a host directory, which a Pod \
                                     cannot mount (hostPath is forbidden by Pod Security)"
                                ),
                                hint: "pass --workspace-claim PVC naming a claim that holds \
                                       the workspace, or set [workspace] mount = false"
                                    .to_string(),
                            });
                            continue;
                        }
                        (_, false) => {
                            self.refuse(
                                field,
                                format!(
                                    "the bind of host path {path} at {target} needs hostPath, \
                                     which Pod Security forbids"
                                ),
                                "put the files in a ConfigMap, a Secret or a volume, or remove \
                                 the mount for the kubernetes backend",
                            );
                            continue;
                        }
                    }
                }
                MountSource::Volume { name, subpath } => {
                    if !names::is_dns1123_subdomain(name) {
                        self.errors.push(RenderError::InvalidName {
                            field,
                            value: name.clone(),
                            what: "PersistentVolumeClaim name (DNS-1123 subdomain)",
                            hint: "name the volume with lower-case letters, digits, dots and \
                                   inner dashes"
                                .to_string(),
                        });
                        continue;
                    }
                    if !claims.contains(name) {
                        claims.push(name.clone());
                    }
                    self.notes.approximation(
                        "named-volume",
                        self.field(&key),
                        format!(
                            "the Docker volume {name} is a PersistentVolumeClaim of the same name \
                             (ReadWriteOnce, {VOLUME_SIZE}, the default storage class), which \
                             outlives the pod as the volume outlives the container; pods \
                             sharing it must run on one node"
                        ),
                    );
                    (name.clone(), subpath.clone())
                }
            };
            let volume = format!("mount-{index}");
            volumes.push(Volume {
                name: volume.clone(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim,
                    read_only: read_only.then_some(true),
                }),
                ..Volume::default()
            });
            volume_mounts.push(VolumeMount {
                name: volume,
                mount_path: target.clone(),
                read_only: read_only.then_some(true),
                sub_path,
                ..VolumeMount::default()
            });
        }
        for (index, entry) in tmpfs.iter().enumerate() {
            let Tmpfs { target, exec } = entry;
            let volume = format!("tmpfs-{index}");
            volumes.push(memory_volume(&volume, None));
            volume_mounts.push(VolumeMount {
                name: volume,
                mount_path: target.clone(),
                ..VolumeMount::default()
            });
            let field = self.field(&format!("tmpfs.{target}"));
            if *exec {
                self.notes.approximation(
                    "tmpfs",
                    field,
                    format!(
                        "tmpfs {target} (executable) is a memory emptyDir; no_new_privs and no \
                         CAP_MKNOD stand for nosuid and nodev; its contents count toward the \
                         memory limit"
                    ),
                );
            } else {
                self.notes.weaker(
                    "tmpfs-noexec",
                    field,
                    format!(
                        "tmpfs {target} is a memory emptyDir, which cannot be mounted noexec: \
                         files written there can be executed, unlike Docker's noexec tmpfs; \
                         no_new_privs and no CAP_MKNOD stand for nosuid and nodev; its contents \
                         count toward the memory limit"
                    ),
                );
            }
        }
        pod.volumes = (!volumes.is_empty()).then_some(volumes);
        main.volume_mounts = (!volume_mounts.is_empty()).then_some(volume_mounts);
        claims
    }

    /// `--read-only` → `readOnlyRootFilesystem`; `no-new-privileges` →
    /// `allowPrivilegeEscalation: false` (always); seccomp → `RuntimeDefault` (always);
    /// AppArmor → `RuntimeDefault` (unconfined is refused); `--cap-drop ALL` (always) and
    /// `--cap-add` within the Pod Security level; `--device` is refused.
    fn render_security(&mut self, pod: &mut PodSpec, main: &mut Container, security: Security<'_>) {
        let Security {
            read_only_root,
            no_new_privileges,
            apparmor,
            cap_drop_all,
            cap_add,
            devices,
        } = security;
        if !no_new_privileges {
            self.notes.approximation(
                "no-new-privileges",
                self.field("no_new_privileges"),
                "Docker launches this container without no-new-privileges; here privilege \
                 escalation is off (stricter: setuid binaries do not gain privileges)"
                    .to_string(),
            );
        }
        if !cap_drop_all {
            self.notes.approximation(
                "cap-drop-all",
                self.field("cap_drop_all"),
                "Docker keeps its default capabilities for this container; here all are dropped \
                 (stricter)"
                    .to_string(),
            );
        }
        if let Some(AppArmor::Unconfined) = apparmor {
            let field = self.field("apparmor");
            self.refuse(
                field,
                "AppArmor unconfined is forbidden by Pod Security (baseline and restricted)",
                "remove security.fuse: FUSE needs /dev/fuse and SYS_ADMIN, which a Pod within \
                 Pod Security cannot have",
            );
        }
        for Device {
            host_path,
            container_path,
            permissions: _,
        } in devices
        {
            let field = self.field(&format!("devices.{container_path}"));
            self.refuse(
                field,
                format!(
                    "host device {host_path} has no Pod equivalent (device plugins or DRA only)"
                ),
                "remove the device for the kubernetes backend, or provide it through a device \
                 plugin the cluster runs",
            );
        }
        let level = self.options.pod_security;
        let mut added = Vec::new();
        let mut preset_dropped = Vec::new();
        for capability in cap_add {
            let key = format!("cap_add.{capability}");
            if let Some(Origin::Preset { .. }) = self.spec.origins.get(&key) {
                preset_dropped.push(capability.as_str());
                continue;
            }
            if capability_allowed(level, *capability) {
                added.push(capability.as_str().to_string());
            } else {
                let field = self.field(&key);
                let hint = match level {
                    PodSecurityLevel::Restricted => {
                        "remove it; a restricted Pod may add only NET_BIND_SERVICE (with \
                         --pod-security baseline it may add Docker's default capabilities)"
                    }
                    PodSecurityLevel::Baseline => {
                        "remove it; a baseline Pod may add only Docker's default capabilities \
                         (AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, \
                         NET_BIND_SERVICE, SETFCAP, SETGID, SETPCAP, SETUID, SYS_CHROOT)"
                    }
                };
                self.refuse(
                    field,
                    format!(
                        "capability {capability} cannot be added to a Pod at Pod Security level \
                         {}",
                        level.as_str()
                    ),
                    hint,
                );
            }
        }
        if !preset_dropped.is_empty() {
            self.notes.approximation(
                "preset-capabilities",
                "cap_add",
                format!(
                    "the preset adds {} so that the image's entrypoint can install its own \
                     firewall and switch users as root; here they are not granted (stricter): \
                     egress is enforced by NetworkPolicy, the user by runAsUser",
                    preset_dropped.join(", ")
                ),
            );
        }
        if level == PodSecurityLevel::Baseline {
            self.notes.approximation(
                "pod-security-baseline",
                "--pod-security",
                "the launch is rendered for Pod Security level baseline, not restricted: it may \
                 add capabilities from Docker's default set; label its namespace \
                 pod-security.kubernetes.io/enforce=baseline"
                    .to_string(),
            );
        }
        let context = pod.security_context.get_or_insert_with(Default::default);
        context.seccomp_profile = Some(SeccompProfile {
            type_: "RuntimeDefault".to_string(),
            localhost_profile: None,
        });
        context.app_armor_profile = Some(AppArmorProfile {
            type_: "RuntimeDefault".to_string(),
            localhost_profile: None,
        });
        main.security_context = Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            privileged: Some(false),
            read_only_root_filesystem: Some(read_only_root),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".to_string()]),
                add: (!added.is_empty()).then_some(added),
            }),
            ..SecurityContext::default()
        });
        self.notes.cluster_duty(
            "pod-security-admission",
            "--pod-security",
            format!(
                "label the namespace pod-security.kubernetes.io/enforce={} so the API server \
                 refuses any pod weaker than this one",
                level.as_str()
            ),
        );
    }

    /// `--memory`/`--memory-swap` → `limits.memory` = `requests.memory` (no swap); `--cpus`
    /// → `limits.cpu` = `requests.cpu`; `--shm-size` → a sized memory `emptyDir` at
    /// `/dev/shm`; `--pids-limit` → the kubelet's `podPidsLimit` (a cluster duty).
    fn render_resources(&mut self, pod: &mut PodSpec, main: &mut Container, resources: &Resources) {
        let Resources {
            memory_bytes,
            memory_swap_bytes,
            shm_size_bytes,
            nano_cpus,
            pids_limit,
        } = resources;
        let mut amounts = BTreeMap::new();
        if let Some(memory) = memory_bytes {
            amounts.insert("memory".to_string(), Quantity(bytes_quantity(*memory)));
            if *memory_swap_bytes != Some(*memory) {
                self.notes.approximation(
                    "swap",
                    self.field("resources.memory_swap_bytes"),
                    "Docker allows this container swap; Kubernetes gives a pod none (stricter)"
                        .to_string(),
                );
            }
            if nano_cpus.is_none() {
                self.notes.cluster_duty(
                    "no-swap",
                    self.field("resources.memory_bytes"),
                    "without a cpu limit the pod has Burstable QoS: keep the kubelet's \
                     memorySwap.swapBehavior at NoSwap (the default) so that, as on Docker, it \
                     gets no swap"
                        .to_string(),
                );
            }
        }
        if let Some(nano) = nano_cpus {
            match cpu_quantity(*nano) {
                Some((quantity, exact)) => {
                    if !exact {
                        self.notes.approximation(
                            "cpus-rounded",
                            self.field("resources.nano_cpus"),
                            format!(
                                "Kubernetes counts cpu in millicores: {quantity} (rounded down, \
                                 stricter)"
                            ),
                        );
                    }
                    amounts.insert("cpu".to_string(), Quantity(quantity));
                }
                None => {
                    let field = self.field("resources.nano_cpus");
                    self.refuse(
                        field,
                        "a cpu limit below one millicore cannot be expressed",
                        "set resources.cpus to 0.001 or more",
                    );
                }
            }
        }
        if !amounts.is_empty() {
            main.resources = Some(ResourceRequirements {
                limits: Some(amounts.clone()),
                requests: Some(amounts),
                claims: None,
            });
        }
        if let Some(shm) = shm_size_bytes {
            let volume = "dev-shm".to_string();
            pod.volumes
                .get_or_insert_with(Vec::new)
                .push(memory_volume(&volume, Some(*shm)));
            main.volume_mounts
                .get_or_insert_with(Vec::new)
                .push(VolumeMount {
                    name: volume,
                    mount_path: "/dev/shm".to_string(),
                    ..VolumeMount::default()
                });
            self.notes.weaker(
                "shm",
                self.field("resources.shm_size_bytes"),
                format!(
                    "--shm-size {} is a memory emptyDir at /dev/shm with sizeLimit {}: it counts \
                     toward the memory limit and is not noexec, unlike Docker's /dev/shm",
                    shm,
                    bytes_quantity(*shm)
                ),
            );
        }
        if let Some(pids) = pids_limit {
            self.notes.cluster_duty(
                "pids-limit",
                self.field("resources.pids_limit"),
                format!(
                    "--pids-limit {pids} has no pod field: set the kubelet's podPidsLimit to \
                     {pids} or less (check /sys/fs/cgroup/pids.max in the pod)"
                ),
            );
        }
    }

    /// `--log-driver`/`--log-opt` → the kubelet's `containerLogMaxSize` and
    /// `containerLogMaxFiles` (a cluster duty).
    fn render_logging(&mut self, log: &Option<LogConfig>) {
        if let Some(LogConfig { driver, options }) = log {
            let settings: Vec<String> = options
                .iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect();
            self.notes.cluster_duty(
                "log-rotation",
                self.field("log"),
                format!(
                    "log driver {driver} ({}) has no pod field: the kubelet rotates container \
                     logs by containerLogMaxSize and containerLogMaxFiles (10Mi x 5 by default)",
                    settings.join(", ")
                ),
            );
        }
    }

    /// `--label` → `metadata.labels` where key and value are valid label syntax, else
    /// `metadata.annotations`; plus `io.agentc.name` (the selector) and
    /// `app.kubernetes.io/managed-by`.
    fn render_labels(
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

    /// `--network`, `--add-host` and `--publish`, with the profile's egress policy: the
    /// workload's NetworkPolicy, `hostAliases`, `containerPorts`, and the egress proxy.
    #[allow(clippy::too_many_arguments)]
    fn render_network(
        &mut self,
        pod: &mut PodSpec,
        main: &mut Container,
        network: &Network,
        extra_hosts: &[ExtraHost],
        ports: &[PublishedPort],
        base: &str,
        pod_labels: &BTreeMap<String, String>,
    ) -> NetworkPlan {
        let mut plan = NetworkPlan {
            ingress: Vec::new(),
            egress: Vec::new(),
            labels: BTreeMap::new(),
            proxy: Vec::new(),
            env: Vec::new(),
            dns: None,
        };
        self.notes.cluster_duty(
            "network-policy",
            "egress.mode",
            "NetworkPolicy is enforced only by a CNI plugin that implements it (Calico, Cilium, \
             ...): without one the pod reaches everything"
                .to_string(),
        );
        let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for ExtraHost { host, target } in extra_hosts {
            match target {
                HostTarget::HostGateway => {
                    let field = self.field(&format!("extra_hosts.{host}"));
                    self.refuse(
                        field,
                        format!("{host} -> host-gateway has no pod equivalent: a pod has no host gateway"),
                        "remove network.host_gateway; reach host services through a Service",
                    );
                }
                HostTarget::Ip { address } => aliases
                    .entry(address.to_string())
                    .or_default()
                    .push(host.clone()),
            }
        }
        if !aliases.is_empty() {
            pod.host_aliases = Some(
                aliases
                    .into_iter()
                    .map(|(ip, hostnames)| HostAlias {
                        ip,
                        hostnames: Some(hostnames),
                    })
                    .collect(),
            );
        }
        let mut container_ports = Vec::new();
        for PublishedPort {
            container_port,
            protocol,
            host_ip,
            host_port,
        } in ports
        {
            let key = format!("ports.{container_port}/{}", protocol.as_str());
            let field = match self.spec.origins.get(&key) {
                Some(_) => self.field(&key),
                None => self.field("ports"),
            };
            container_ports.push(ContainerPort {
                container_port: i32::from(*container_port),
                protocol: Some(match protocol {
                    Protocol::Tcp => "TCP".to_string(),
                    Protocol::Udp => "UDP".to_string(),
                }),
                ..ContainerPort::default()
            });
            let host = match host_port {
                Some(port) => format!("{host_ip}:{port}"),
                None => format!("{host_ip} on a free port"),
            };
            let reach = match protocol {
                Protocol::Tcp => format!(
                    "reach it with kubectl port-forward {container_port}, which listens on \
                     localhost only"
                ),
                Protocol::Udp => "kubectl port-forward carries TCP only, so it is not reachable \
                                  from outside the pod (stricter)"
                    .to_string(),
            };
            self.notes.approximation(
                "published-port",
                field,
                format!(
                    "port {container_port}/{} is published on {host} by Docker; here it is a \
                     containerPort with no hostPort and ingress is denied: {reach}",
                    protocol.as_str()
                ),
            );
        }
        if !container_ports.is_empty() {
            main.ports = Some(container_ports);
        }

        let workload = selector_labels(base, pod_labels);
        match network {
            Network::None => {
                self.notes.approximation(
                    "network-none",
                    self.field("network"),
                    "--network=none: a pod always has a network interface; a NetworkPolicy \
                     denies all its ingress and egress"
                        .to_string(),
                );
                return plan;
            }
            Network::Named { name } => {
                let field = self.field("network");
                let value = names::label_value_for(name);
                let peer = BTreeMap::from([(LABEL_NETWORK.to_string(), value.clone())]);
                plan.labels = peer.clone();
                plan.ingress.push(NetworkPolicyIngressRule {
                    from: Some(vec![egress::pods(&peer)]),
                    ports: None,
                });
                plan.egress.push(NetworkPolicyEgressRule {
                    to: Some(vec![egress::pods(&peer)]),
                    ports: None,
                });
                self.notes.approximation(
                    "network-named",
                    field,
                    format!(
                        "Docker network {name}: pods labelled {LABEL_NETWORK}={value} in the \
                         namespace may reach each other on any port"
                    ),
                );
            }
            Network::Default => {}
        }
        let policy = &self.options.egress;
        if policy.gateway {
            self.refuse(
                "egress.gateway_host",
                "the ssh egress gateway is set up by the agent image's entrypoint as root, which \
                 a restricted Pod cannot do",
                "use egress.mode = \"allowlist\" with egress.hosts (the egress proxy) for the \
                 kubernetes backend",
            );
            return plan;
        }
        match policy.mode {
            EgressMode::Deny => {
                // resolve gives deny mode no network; a spec reaching here still gets no egress.
            }
            EgressMode::Unrestricted => {
                plan.egress.push(egress::public_internet_rule());
                plan.egress.push(egress::cluster_dns_rule());
                self.notes.approximation(
                    "egress-unrestricted",
                    "egress.mode",
                    format!(
                        "egress mode unrestricted, reported as on Docker; here the pod reaches \
                         public addresses and the cluster DNS only, not other pods, private \
                         ranges or the cloud metadata address ({}; {})",
                        egress::NON_PUBLIC_V4.join(", "),
                        egress::NON_PUBLIC_V6.join(", ")
                    ),
                );
            }
            EgressMode::Allowlist if policy.hosts.is_empty() => {
                self.notes.approximation(
                    "egress-allowlist-empty",
                    "egress.hosts",
                    "egress allowlist with no hosts: nothing may be reached, so no egress proxy \
                     is rendered and the NetworkPolicy denies all egress"
                        .to_string(),
                );
            }
            EgressMode::Allowlist => self.render_proxy(&mut plan, base, pod_labels, &workload),
        }
        plan
    }

    /// The egress proxy of an allowlist: its Pod, its Service, its NetworkPolicy, the
    /// workload's rules towards it and the workload's proxy variables.
    fn render_proxy(
        &mut self,
        plan: &mut NetworkPlan,
        base: &str,
        pod_labels: &BTreeMap<String, String>,
        workload: &BTreeMap<String, String>,
    ) {
        let policy = &self.options.egress;
        let mut valid = true;
        for (index, host) in policy.hosts.iter().enumerate() {
            if let Some(problem) = egress::host_spec_problem(host) {
                valid = false;
                let hint = match host.strip_prefix('.') {
                    Some(suffix) => format!("write \"*.{suffix}\" to allow its subdomains"),
                    None => "write host, host:port, *.suffix or *.suffix:port".to_string(),
                };
                self.refuse(
                    format!("egress.hosts[{index}]"),
                    format!("{host:?} is not a host the egress proxy can allow: {problem}"),
                    &hint,
                );
            }
        }
        let Some(image) = self.options.egress_proxy_image.clone() else {
            self.errors.push(RenderError::MissingOption {
                field: "egress.hosts".to_string(),
                message: "an egress allowlist is enforced by agentc's egress proxy, whose image \
                          was not given"
                    .to_string(),
                hint: "pass --egress-proxy-image REF (an image holding the agentc binary at \
                       /agentc)"
                    .to_string(),
            });
            return;
        };
        if !valid {
            return;
        }
        let proxy_name = format!("{base}-egress");
        let mut proxy_labels = BTreeMap::from([
            (LABEL_NAME.to_string(), base.to_string()),
            (LABEL_KIND.to_string(), "egress-proxy".to_string()),
            (LABEL_MANAGED_BY.to_string(), "agentc".to_string()),
        ]);
        if let Some(profile) = pod_labels.get(LABEL_PROFILE) {
            proxy_labels.insert(LABEL_PROFILE.to_string(), profile.clone());
        }
        let proxy_selector = BTreeMap::from([
            (LABEL_NAME.to_string(), base.to_string()),
            (LABEL_KIND.to_string(), "egress-proxy".to_string()),
        ]);
        let metadata = |name: &str| ObjectMeta {
            name: Some(name.to_string()),
            namespace: self.options.namespace.clone(),
            labels: Some(proxy_labels.clone()),
            ..ObjectMeta::default()
        };
        plan.proxy.push(Object::NetworkPolicy(egress::policy(
            metadata(&proxy_name),
            &proxy_selector,
            vec![NetworkPolicyIngressRule {
                from: Some(vec![egress::pods(workload)]),
                ports: Some(egress::proxy_ports()),
            }],
            vec![NetworkPolicyEgressRule {
                to: None,
                ports: None,
            }],
        )));
        let service_port = |name: &str, port: u16, protocol: &str| ServicePort {
            name: Some(name.to_string()),
            port: i32::from(port),
            protocol: Some(protocol.to_string()),
            target_port: Some(IntOrString::Int(i32::from(port))),
            ..ServicePort::default()
        };
        plan.proxy.push(Object::Service(Service {
            metadata: metadata(&proxy_name),
            spec: Some(ServiceSpec {
                cluster_ip: self.options.egress_proxy_ip.map(|ip| ip.to_string()),
                selector: Some(proxy_selector.clone()),
                ports: Some(vec![
                    service_port("proxy", PROXY_PORT, "TCP"),
                    service_port("dns", DNS_PORT, "UDP"),
                    service_port("dns-tcp", DNS_PORT, "TCP"),
                ]),
                ..ServiceSpec::default()
            }),
            status: None,
        }));
        let amounts = BTreeMap::from([
            ("cpu".to_string(), Quantity("500m".to_string())),
            ("memory".to_string(), Quantity("256Mi".to_string())),
        ]);
        let probe = Probe {
            tcp_socket: Some(TCPSocketAction {
                port: IntOrString::Int(i32::from(PROXY_PORT)),
                host: None,
            }),
            period_seconds: Some(10),
            ..Probe::default()
        };
        let container_port = |name: &str, port: u16, protocol: &str| ContainerPort {
            name: Some(name.to_string()),
            container_port: i32::from(port),
            protocol: Some(protocol.to_string()),
            ..ContainerPort::default()
        };
        plan.proxy.push(Object::Pod(Box::new(Pod {
            metadata: metadata(&proxy_name),
            spec: Some(PodSpec {
                automount_service_account_token: Some(false),
                enable_service_links: Some(false),
                host_network: Some(false),
                host_pid: Some(false),
                host_ipc: Some(false),
                restart_policy: Some("Always".to_string()),
                security_context: Some(PodSecurityContext {
                    run_as_non_root: Some(true),
                    run_as_user: Some(PROXY_UID),
                    run_as_group: Some(PROXY_UID),
                    seccomp_profile: Some(SeccompProfile {
                        type_: "RuntimeDefault".to_string(),
                        localhost_profile: None,
                    }),
                    app_armor_profile: Some(AppArmorProfile {
                        type_: "RuntimeDefault".to_string(),
                        localhost_profile: None,
                    }),
                    sysctls: Some(vec![Sysctl {
                        name: "net.ipv4.ip_unprivileged_port_start".to_string(),
                        value: DNS_PORT.to_string(),
                    }]),
                    ..PodSecurityContext::default()
                }),
                containers: vec![Container {
                    name: "egress-proxy".to_string(),
                    image: Some(image),
                    command: Some(egress::egress_proxy_argv(
                        &policy.hosts,
                        &policy.allow_cidrs,
                    )),
                    ports: Some(vec![
                        container_port("proxy", PROXY_PORT, "TCP"),
                        container_port("dns", DNS_PORT, "UDP"),
                        container_port("dns-tcp", DNS_PORT, "TCP"),
                    ]),
                    resources: Some(ResourceRequirements {
                        limits: Some(amounts.clone()),
                        requests: Some(amounts),
                        claims: None,
                    }),
                    readiness_probe: Some(probe.clone()),
                    liveness_probe: Some(probe),
                    security_context: Some(SecurityContext {
                        allow_privilege_escalation: Some(false),
                        privileged: Some(false),
                        read_only_root_filesystem: Some(true),
                        capabilities: Some(Capabilities {
                            drop: Some(vec!["ALL".to_string()]),
                            add: None,
                        }),
                        ..SecurityContext::default()
                    }),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
            status: None,
        })));
        plan.egress.push(NetworkPolicyEgressRule {
            to: Some(vec![egress::pods(&proxy_selector)]),
            ports: Some(egress::proxy_ports()),
        });
        let address = match self.options.egress_proxy_ip {
            Some(ip) => {
                plan.dns = Some(ip.to_string());
                self.notes.approximation(
                    "egress-dns",
                    "--egress-proxy-ip",
                    format!(
                        "the pod's only resolver is the egress proxy's DNS stub at {ip} \
                         (dnsPolicy None, the Service's fixed clusterIP): as with Docker's \
                         egress proxy, no name resolves except through it"
                    ),
                );
                self.notes.cluster_duty(
                    "egress-proxy-ip",
                    "--egress-proxy-ip",
                    format!(
                        "{ip} must be a free address of the cluster's Service range, else the \
                         API server refuses the proxy's Service"
                    ),
                );
                match ip {
                    std::net::IpAddr::V4(_) => ip.to_string(),
                    std::net::IpAddr::V6(_) => format!("[{ip}]"),
                }
            }
            None => {
                plan.egress.push(egress::cluster_dns_rule());
                self.notes.approximation(
                    "egress-dns",
                    "egress.hosts",
                    format!(
                        "the pod resolves names through the cluster DNS, which it needs to find \
                         the proxy's Service {proxy_name}; the cluster DNS forwards other names \
                         upstream, so DNS queries remain a narrow channel out, as through \
                         Docker's resolver (pass --egress-proxy-ip to close it)"
                    ),
                );
                proxy_name.clone()
            }
        };
        let url = format!("http://{address}:{PROXY_PORT}");
        for name in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
            plan.env.push((name.to_string(), url.clone()));
        }
        for name in ["NO_PROXY", "no_proxy"] {
            plan.env
                .push((name.to_string(), "localhost,127.0.0.1,::1".to_string()));
        }
        self.notes.approximation(
            "egress-proxy",
            "egress.hosts",
            format!(
                "the allowlist is enforced outside the workload: the pod may reach only the \
                 egress proxy {proxy_name} (Service and Pod, {PROXY_PORT}/TCP and {DNS_PORT}), \
                 which allows {}; HTTP_PROXY and HTTPS_PROXY point at it",
                policy.hosts.join(", ")
            ),
        );
        self.notes.cluster_duty(
            "egress-proxy-image",
            "--egress-proxy-image",
            "the egress proxy image must hold the agentc binary at /agentc and be pullable by \
             the cluster"
                .to_string(),
        );
    }

    /// `--env`: literal values as `value`; secrets as `valueFrom.secretKeyRef` of the Secret
    /// `agentc-<profile>` (key = the variable's name; it must exist in the namespace); then the
    /// egress proxy's variables, which the profile must not set itself.
    fn render_env(&mut self, main: &mut Container, env: &[EnvVar], proxy: &[(String, String)]) {
        let secret = secret_name(&self.spec.profile);
        let mut rendered = Vec::new();
        let mut secrets = Vec::new();
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
            rendered.push(match value {
                EnvValue::Literal { value } => k8s_openapi::api::core::v1::EnvVar {
                    name: name.clone(),
                    value: Some(value.clone()),
                    value_from: None,
                },
                EnvValue::Secret { required } => {
                    secrets.push(name.clone());
                    k8s_openapi::api::core::v1::EnvVar {
                        name: name.clone(),
                        value: None,
                        value_from: Some(EnvVarSource {
                            secret_key_ref: Some(SecretKeySelector {
                                name: secret.clone(),
                                key: name.clone(),
                                optional: (!required).then_some(true),
                            }),
                            ..EnvVarSource::default()
                        }),
                    }
                }
            });
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

/// The process fields of a container, for [`Renderer::render_process`].
struct Process<'a> {
    entrypoint: &'a Option<String>,
    command: &'a [String],
    user: &'a Option<String>,
    working_dir: &'a Option<String>,
    init: bool,
    interactive: bool,
    tty: bool,
    auto_remove: bool,
}

/// The security fields of a container, for [`Renderer::render_security`].
struct Security<'a> {
    read_only_root: bool,
    no_new_privileges: bool,
    apparmor: &'a Option<AppArmor>,
    cap_drop_all: bool,
    cap_add: &'a BTreeSet<Capability>,
    devices: &'a [Device],
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

/// `uid` or `uid:gid`, numeric.
fn parse_user(user: &str) -> Result<(i64, Option<i64>), ()> {
    let number = |text: &str| -> Result<i64, ()> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(());
        }
        text.parse::<u32>().map(i64::from).map_err(|_| ())
    };
    match user.split_once(':') {
        Some((uid, gid)) => Ok((number(uid)?, Some(number(gid)?))),
        None => Ok((number(user)?, None)),
    }
}

fn memory_volume(name: &str, size: Option<u64>) -> Volume {
    Volume {
        name: name.to_string(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some("Memory".to_string()),
            size_limit: size.map(|bytes| Quantity(bytes_quantity(bytes))),
        }),
        ..Volume::default()
    }
}

/// The labels selecting the workload's pod: its name and agentc's kind label.
fn selector_labels(base: &str, pod_labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([(LABEL_NAME.to_string(), base.to_string())]);
    if let Some(kind) = pod_labels.get(LABEL_KIND) {
        labels.insert(LABEL_KIND.to_string(), kind.clone());
    }
    labels
}

/// The labels of an auxiliary object: the profile's and agentc's own.
fn managed(pod_labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    pod_labels
        .iter()
        .filter(|(key, _)| {
            [LABEL_NAME, LABEL_PROFILE, LABEL_KIND, LABEL_MANAGED_BY].contains(&key.as_str())
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .chain([(LABEL_MANAGED_BY.to_string(), "agentc".to_string())])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users() {
        assert_eq!(parse_user("1000"), Ok((1000, None)));
        assert_eq!(parse_user("1000:100"), Ok((1000, Some(100))));
        assert_eq!(parse_user("0"), Ok((0, None)));
        for bad in ["root", "1000:staff", "", ":", "-1", "4294967296", "+1"] {
            assert_eq!(parse_user(bad), Err(()), "{bad:?}");
        }
    }

    #[test]
    fn secret_names() {
        assert_eq!(secret_name("claude_minimal"), "agentc-claude-minimal");
        assert_eq!(secret_name("x-"), "agentc-x");
    }
}
