//! `LaunchSpec` to Kubernetes objects, one helper per flag family as in docker's `opts.go`.
//!
//! Every helper documents the docker flag it stands for and the Kubernetes field it writes.
//! Nothing is silently dropped: a value is rendered exactly, rendered stricter or weaker with
//! a [`Note`](crate::Note), or refused with a [`RenderError`] naming its field.
//!
//! The orchestration lives here: [`render`] checks the options, refuses a build or a seed as a
//! whole, calls one helper per concern in a fixed order (process, volumes, security, resources,
//! logging, labels, network and the egress proxy, environment), assembles the objects in apply
//! order and checks every pod against its Pod Security level before it leaves the renderer.

mod context;
mod credentials;
mod env;
mod labels;
mod network;
mod process;
mod proxy;
mod resources;
mod security;
mod upstream_ca;
mod volumes;

use std::collections::BTreeMap;

use agentc_policy::{
    Action, ContainerSpec, EnvVar, LaunchKind, LaunchSpec, MountSource, Network, PublishedPort,
};
use k8s_openapi::api::core::v1::{Container, Pod, PodDNSConfig, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::egress;
use crate::error::{RenderError, RenderErrors};
use crate::names;
use crate::notes::Notes;
use crate::pss;
use crate::sandbox::{
    PodTemplate, PodTemplateMetadata, Sandbox, SandboxSpec, SANDBOX_API_VERSION, SANDBOX_KIND,
};
use crate::{Object, ObjectKind, Options, Rendering};

use context::Renderer;
use labels::{managed, selector_labels};
use process::Process;
use security::Security;

pub use credentials::{CA_INIT_CONTAINER, CA_VOLUME};
pub use env::secret_name;
pub use labels::{LABEL_KIND, LABEL_MANAGED_BY, LABEL_NAME, LABEL_NETWORK, LABEL_PROFILE};
pub use process::preset_uid;
pub use proxy::PROXY_CONTAINER;
pub use upstream_ca::{is_config_map_key, CaFiles, MAX_UPSTREAM_CA_BYTES, UPSTREAM_CA_VOLUME};
pub use volumes::VOLUME_SIZE;

/// The name of the workload's container.
pub const CONTAINER_NAME: &str = "agent";

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

impl Renderer<'_> {
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

    /// A seed launch as a whole: the seed helper copies a host file into the home volume as
    /// root with `CHOWN` and `DAC_OVERRIDE`, through a host bind. A Pod within Pod Security can
    /// do none of it, and none of those values is the profile's to change, so one refusal names
    /// the seed mount instead of the helper's user and capabilities.
    fn refuse_seed(&mut self, container: &ContainerSpec) {
        let field = container
            .mounts
            .iter()
            .find_map(|mount| match &mount.source {
                MountSource::Bind { .. } => Some(self.field(&format!("mounts.{}", mount.target))),
                MountSource::Volume { .. } => None,
            })
            .unwrap_or_else(|| "mounts".to_string());
        self.refuse(
            field,
            "a seed copies a host file into the home volume as root (uid 0, CHOWN, \
             DAC_OVERRIDE) through a host bind, which no Pod within Pod Security can do",
            "copy the file into the home volume's claim yourself (kubectl cp into a pod that \
             mounts it), and render only the run for the cluster",
        );
    }

    /// `runtimeClassName`: the runtime named, else the RuntimeClass of the isolation floor's
    /// tier (`prefer = "strongest"`: of the strongest mapped tier at or above it); a tier above
    /// `container` without a mapping is refused at the floor's field.
    fn runtime_class(
        &mut self,
        runtime: Option<&str>,
        isolation: Option<agentc_policy::Isolation>,
    ) -> Option<String> {
        use agentc_policy::{IsolationPrefer, IsolationTier};
        if let Some(runtime) = runtime {
            return Some(runtime.to_string());
        }
        let isolation = isolation?;
        let classes = &self.options.runtime_classes.0;
        let mapped = match isolation.prefer {
            IsolationPrefer::Min => classes.get_key_value(&isolation.min),
            IsolationPrefer::Strongest => classes.range(isolation.min..).next_back(),
        };
        match mapped {
            Some((_, class)) => Some(class.clone()),
            None if isolation.min == IsolationTier::Container => None,
            None => {
                // The spec's key `isolation`: the profile's `security.isolation`.
                let field = self.field("isolation");
                self.refuse(
                    field,
                    format!(
                        "isolation tier {} has no RuntimeClass to run the pod under",
                        isolation.min
                    ),
                    &format!(
                        "map it to a RuntimeClass the cluster defines: --runtime-class {}=NAME",
                        isolation.min
                    ),
                );
                None
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
        if self.spec.kind == LaunchKind::Seed {
            self.refuse_seed(container);
            return None;
        }
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
            // The fixed address the docker egress proxy relays published ports to: a pod's
            // ports are reached at the pod's own address.
            ipv4_address: _,
            // Docker's egress companion (isolated network, proxy container, the workload's DNS
            // and proxy variables): replaced here by the egress proxy Pod rendered from the
            // profile's policy ([`crate::egress`]).
            dns: _,
            sysctls,
            egress: docker_egress,
            resources,
            log,
            devices,
            labels,
            // The engine's runtime becomes the pod's RuntimeClass of the same name (`runsc`,
            // `kata`): the cluster must define it, or the pod is refused at admission.
            runtime,
            // A floor without a runtime named becomes its tier's RuntimeClass
            // ([`crate::RuntimeClasses`]); a tier without one is refused.
            isolation,
            interactive,
            tty,
            auto_remove,
            restart,
            // `--detach` only says how docker attaches: a Pod always runs detached.
            detach: _,
            // Their variables render as keys of the profile's Secret (`secretKeyRef`), which
            // the cluster holds: no value enters a manifest.
            held_secrets: _,
        } = container.as_ref();

        if restart.is_some() {
            // agentc sets a restart policy on its egress proxy only, whose Pod is rendered
            // from the profile's policy (`restartPolicy: Always`).
            let field = self.field("restart");
            self.refuse(
                field,
                "a Pod restarts its containers on failure without a maximum (restartPolicy                  OnFailure, with back-off); docker's on-failure:N stops after N",
                "drop restart from the container spec",
            );
            return None;
        }
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
            runtime_class_name: self.runtime_class(runtime.as_deref(), *isolation),
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
        // Docker's CA volume of a proxy that holds keys: here an `emptyDir` filled by an init
        // container ([`credentials`]), mounted after the network is rendered.
        let held = self.held_credentials().is_some();
        let mounts: Vec<_> = mounts
            .iter()
            .filter(|mount| !(held && mount.target == agentc_egress::credential::CA_DIR))
            .cloned()
            .collect();
        let claims = self.render_mounts(&mut pod, &mut main, &mounts, tmpfs);
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
        // Docker's egress companion turns IPv6 off in the workload (its isolated network is
        // a bridge); a pod's egress is its NetworkPolicy's, which allows only the proxy.
        let own_sysctl = |name: &&String| {
            docker_egress.is_none()
                || !agentc_policy::IPV6_SYSCTLS.iter().any(|(key, value)| {
                    key == name && sysctls.get(*name).map(String::as_str) == Some(*value)
                })
        };
        if let Some(name) = sysctls.keys().find(own_sysctl) {
            let field = self.field(&format!("sysctls.{name}"));
            self.refuse(
                field,
                format!("sysctl {name} is set on the container; a pod sets sysctls for all of it"),
                "remove the sysctl",
            );
        }
        // With Docker's egress companion the spec puts the workload on its isolated network
        // and points its proxy variables at it; this backend's own egress proxy replaces both.
        let env: Vec<EnvVar> = match docker_egress {
            Some(egress) => env
                .iter()
                .filter(|var| {
                    !agentc_policy::PROXY_VARIABLES.contains(&var.name.as_str())
                        && !agentc_policy::NO_PROXY_VARIABLES.contains(&var.name.as_str())
                })
                .cloned()
                .map(|mut var| {
                    // The Docker proxy's address, added for the image's firewall.
                    if let (true, agentc_policy::EnvValue::Literal { value }) =
                        (var.name == "AGENT_ALLOWED_EGRESS", &mut var.value)
                    {
                        let suffix = format!(",{}", egress.proxy_address);
                        // (`*`, the image's firewall standing down behind the proxy, stays.)
                        if let Some(hosts) = value.strip_suffix(&suffix) {
                            *value = hosts.to_string();
                        }
                    }
                    var
                })
                .collect(),
            None => env.clone(),
        };
        let env = &env;
        let network = match docker_egress {
            Some(_) => &Network::Default,
            None => network,
        };
        self.render_resources(&mut pod, &mut main, resources);
        self.render_logging(log);
        let (pod_labels, mut annotations) = self.render_labels(labels, &base);
        // Behind Docker's egress proxy the published ports moved to the proxy, which relays
        // them to the workload: here they are the workload's own ports again, as published.
        let mut ports = ports.clone();
        if let Some(companion) = docker_egress {
            for relay in companion.relays() {
                if let Some(binding) = companion
                    .proxy
                    .ports
                    .iter()
                    .find(|port| port.container_port == relay.listen)
                {
                    ports.push(PublishedPort {
                        container_port: relay.target.port(),
                        ..binding.clone()
                    });
                }
            }
        }
        let plan = self.render_network(
            &mut pod,
            &mut main,
            network,
            extra_hosts,
            &ports,
            &base,
            &pod_labels,
        );
        self.render_env(&mut main, env, &plan.env, &plan.held_secrets);
        if let Some((image, proxy)) = &plan.ca_fetch {
            self.render_ca_fetch(&mut pod, &mut main, image, proxy);
        }
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
            // Only the profile's label: the run and Decant share a home volume's claim.
            let labels = BTreeMap::from_iter(
                pod_labels
                    .get_key_value(LABEL_PROFILE)
                    .map(|(key, value)| (key.clone(), value.clone())),
            );
            objects.push(Object::PersistentVolumeClaim(volumes::claim(metadata(
                claim,
                managed(&labels),
            ))));
        }
        objects.extend(proxy_rest);
        let mut object_meta = metadata(base.clone(), workload_labels.clone());
        object_meta.annotations = (!annotations.is_empty()).then(|| annotations.clone());
        let pod_template = PodTemplate {
            metadata: PodTemplateMetadata {
                labels: workload_labels,
                annotations,
            },
            spec: pod,
        };
        match self.options.kind {
            ObjectKind::Pod => objects.push(Object::Pod(Box::new(Pod {
                metadata: object_meta,
                spec: Some(pod_template.spec),
                status: None,
            }))),
            ObjectKind::Sandbox => objects.push(Object::Sandbox(Box::new(Sandbox {
                api_version: SANDBOX_API_VERSION.to_string(),
                kind: SANDBOX_KIND.to_string(),
                metadata: object_meta,
                spec: SandboxSpec { pod_template },
            }))),
            ObjectKind::Pool { replicas } => {
                let (template, pool, claim) =
                    crate::pool::objects(&base, &object_meta, pod_template, replicas);
                objects.push(Object::SandboxTemplate(Box::new(template)));
                objects.push(Object::SandboxWarmPool(Box::new(pool)));
                objects.push(Object::SandboxClaim(Box::new(claim)));
            }
        }
        let rendering = Rendering {
            kind: self.options.kind,
            name: base,
            namespace: self.options.namespace.clone(),
            pod_security: self.options.pod_security.clone(),
            objects,
            notes: std::mem::take(&mut self.notes),
        };
        // The last line of defence: no pod leaves the renderer weaker than its level.
        let empty = BTreeMap::new();
        for view in rendering.pods() {
            let annotations = view.annotations.unwrap_or(&empty);
            for violation in pss::check(rendering.pod_security.level, annotations, view.spec) {
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
}
