//! The security contexts: the container's (read-only root, no privilege escalation, not
//! privileged, ALL capabilities dropped and those added within the Pod Security level) and the
//! pod's seccomp and AppArmor profiles; devices and AppArmor unconfined are refused.

use std::collections::BTreeSet;

use agentc_policy::{AppArmor, Capability, Device, Origin};
use k8s_openapi::api::core::v1::{
    AppArmorProfile, Capabilities, Container, PodSpec, SeccompProfile, SecurityContext,
};

use super::context::Renderer;
use crate::level::POD_SECURITY_FIELD;
use crate::pss::{self, PodSecurityLevel};

/// The capabilities a Pod may add at each Pod Security level.
fn capability_allowed(level: PodSecurityLevel, capability: Capability) -> bool {
    pss::capability_allowed(level, capability.as_str())
}

/// The security fields of a container, for [`Renderer::render_security`].
pub(super) struct Security<'a> {
    pub(super) read_only_root: bool,
    pub(super) no_new_privileges: bool,
    pub(super) apparmor: &'a Option<AppArmor>,
    pub(super) cap_drop_all: bool,
    pub(super) cap_add: &'a BTreeSet<Capability>,
    pub(super) devices: &'a [Device],
}

impl Renderer<'_> {
    /// `--read-only` → `readOnlyRootFilesystem`; `no-new-privileges` →
    /// `allowPrivilegeEscalation: false` (always); seccomp → `RuntimeDefault` (always);
    /// AppArmor → `RuntimeDefault` (unconfined is refused); `--cap-drop ALL` (always) and
    /// `--cap-add` within the Pod Security level; `--device` is refused.
    pub(super) fn render_security(
        &mut self,
        pod: &mut PodSpec,
        main: &mut Container,
        security: Security<'_>,
    ) {
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
        let level = self.options.pod_security.level;
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
                    PodSecurityLevel::Restricted
                        if capability_allowed(PodSecurityLevel::Baseline, *capability) =>
                    {
                        "remove it, or set [kubernetes] pod_security = \"baseline\" in the \
                         profile: a baseline Pod may add Docker's default capabilities (reported \
                         as weaker than restricted)"
                    }
                    PodSecurityLevel::Restricted => {
                        "remove it; a restricted Pod may add only NET_BIND_SERVICE, and a \
                         baseline Pod only Docker's default capabilities (AUDIT_WRITE, CHOWN, \
                         DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, NET_BIND_SERVICE, SETFCAP, \
                         SETGID, SETPCAP, SETUID, SYS_CHROOT)"
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
                POD_SECURITY_FIELD,
                "the launch is rendered for Pod Security level baseline, weaker than restricted: \
                 a container may add capabilities from Docker's default set (never more than the \
                 Docker launch adds); label its namespace \
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
            POD_SECURITY_FIELD,
            format!(
                "label the namespace pod-security.kubernetes.io/enforce={} so the API server \
                 refuses any pod weaker than this one",
                level.as_str()
            ),
        );
    }
}
