//! A Pod Security Standards checker, written from the published rules of the "baseline" and
//! "restricted" levels (kubernetes.io, Pod Security Standards, as of Kubernetes 1.33).
//!
//! It checks a pod's spec and annotations the way the Pod Security admission controller
//! would, so that every rendering can be checked here, without a cluster. Restricted includes
//! every baseline rule. Each [`Violation`] names its rule and the field path.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, ContainerPort, PodSpec, SELinuxOptions, SeccompProfile, SecurityContext,
};

/// A Pod Security Standards level agentc renders for: the profile's `kubernetes.pod_security`.
pub use agentc_policy::PodSecurityLevel;

/// The capabilities baseline allows a container to add (Docker's default set).
pub const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The sysctls baseline allows (namespaced and isolated from the node).
pub const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
];

/// The SELinux types baseline allows.
pub const SELINUX_TYPES: &[&str] = &[
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// The volume types restricted allows.
pub const RESTRICTED_VOLUME_TYPES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// Whether a container may add `capability` (canonical name, no `CAP_`) at `level`.
pub fn capability_allowed(level: PodSecurityLevel, capability: &str) -> bool {
    match level {
        PodSecurityLevel::Restricted => capability == "NET_BIND_SERVICE",
        PodSecurityLevel::Baseline => BASELINE_CAPABILITIES.contains(&capability),
    }
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The rule, as the standard names its control: `host-namespaces`, `privileged`,
    /// `capabilities`, `host-path`, `host-ports`, `apparmor`, `selinux`, `proc-mount`,
    /// `seccomp`, `sysctls`, `host-process` (baseline); `volume-types`,
    /// `privilege-escalation`, `run-as-non-root`, `run-as-user`, `seccomp-restricted`,
    /// `capabilities-restricted` (restricted).
    pub rule: &'static str,
    /// The field path, such as `spec.containers[0].securityContext.privileged`.
    pub path: String,
    /// What is wrong.
    pub detail: String,
}

struct Checker {
    violations: Vec<Violation>,
}

impl Checker {
    fn fail(&mut self, rule: &'static str, path: String, detail: impl Into<String>) {
        self.violations.push(Violation {
            rule,
            path,
            detail: detail.into(),
        });
    }
}

/// Every container of a pod (init, regular and ephemeral) as `(path, security context,
/// host ports)`.
fn containers(spec: &PodSpec) -> Vec<(String, Option<&SecurityContext>, Vec<i32>)> {
    fn host_ports(ports: &Option<Vec<ContainerPort>>) -> Vec<i32> {
        ports
            .iter()
            .flatten()
            .filter_map(|port| port.host_port)
            .collect()
    }
    let init = spec
        .init_containers
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, c)| {
            let path = format!("spec.initContainers[{index}]");
            (path, c.security_context.as_ref(), host_ports(&c.ports))
        });
    let regular = spec.containers.iter().enumerate().map(|(index, c)| {
        let path = format!("spec.containers[{index}]");
        (path, c.security_context.as_ref(), host_ports(&c.ports))
    });
    let ephemeral = spec
        .ephemeral_containers
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, c)| {
            let path = format!("spec.ephemeralContainers[{index}]");
            (path, c.security_context.as_ref(), host_ports(&c.ports))
        });
    init.chain(regular).chain(ephemeral).collect()
}

/// Checks one pod (its spec and annotations) against `level`; empty when it complies.
pub fn check(
    level: PodSecurityLevel,
    annotations: &BTreeMap<String, String>,
    spec: &PodSpec,
) -> Vec<Violation> {
    let mut checker = Checker {
        violations: Vec::new(),
    };
    baseline(&mut checker, annotations, spec);
    if level == PodSecurityLevel::Restricted {
        restricted(&mut checker, spec);
    }
    checker.violations
}

fn baseline(checker: &mut Checker, annotations: &BTreeMap<String, String>, spec: &PodSpec) {
    let pod_context = spec.security_context.as_ref();
    // Host namespaces.
    for (field, value) in [
        ("hostNetwork", spec.host_network),
        ("hostPID", spec.host_pid),
        ("hostIPC", spec.host_ipc),
    ] {
        if value == Some(true) {
            checker.fail(
                "host-namespaces",
                format!("spec.{field}"),
                "host namespaces are forbidden",
            );
        }
    }
    // HostProcess (Windows).
    if pod_context
        .and_then(|context| context.windows_options.as_ref())
        .and_then(|options| options.host_process)
        == Some(true)
    {
        checker.fail(
            "host-process",
            "spec.securityContext.windowsOptions.hostProcess".to_string(),
            "HostProcess pods are forbidden",
        );
    }
    // HostPath volumes.
    for (index, volume) in spec.volumes.iter().flatten().enumerate() {
        if volume.host_path.is_some() {
            checker.fail(
                "host-path",
                format!("spec.volumes[{index}].hostPath"),
                "hostPath volumes are forbidden",
            );
        }
    }
    // Pod-level AppArmor, SELinux, seccomp and sysctls.
    if let Some(context) = pod_context {
        if let Some(profile) = &context.app_armor_profile {
            apparmor(
                checker,
                "spec.securityContext.appArmorProfile.type",
                &profile.type_,
            );
        }
        if let Some(options) = &context.se_linux_options {
            selinux(checker, "spec.securityContext.seLinuxOptions", options);
        }
        if let Some(profile) = &context.seccomp_profile {
            seccomp_baseline(checker, "spec.securityContext.seccompProfile.type", profile);
        }
        for (index, sysctl) in context.sysctls.iter().flatten().enumerate() {
            if !SAFE_SYSCTLS.contains(&sysctl.name.as_str()) {
                checker.fail(
                    "sysctls",
                    format!("spec.securityContext.sysctls[{index}].name"),
                    format!("sysctl {} is not in the safe set", sysctl.name),
                );
            }
        }
    }
    // AppArmor and seccomp through the older annotations.
    for (key, value) in annotations {
        if key.starts_with("container.apparmor.security.beta.kubernetes.io/")
            && !(value.is_empty() || value == "runtime/default" || value.starts_with("localhost/"))
        {
            checker.fail(
                "apparmor",
                format!("metadata.annotations[{key}]"),
                format!("AppArmor profile {value:?} is forbidden"),
            );
        }
        if (key == "seccomp.security.alpha.kubernetes.io/pod"
            || key.starts_with("container.seccomp.security.alpha.kubernetes.io/"))
            && value == "unconfined"
        {
            checker.fail(
                "seccomp",
                format!("metadata.annotations[{key}]"),
                "seccomp unconfined is forbidden",
            );
        }
    }
    for (path, context, host_ports) in containers(spec) {
        for port in host_ports {
            if port != 0 {
                checker.fail(
                    "host-ports",
                    format!("{path}.ports[].hostPort"),
                    format!("hostPort {port} is forbidden"),
                );
            }
        }
        let Some(context) = context else { continue };
        if context.privileged == Some(true) {
            checker.fail(
                "privileged",
                format!("{path}.securityContext.privileged"),
                "privileged containers are forbidden",
            );
        }
        if let Some(Capabilities { add: Some(add), .. }) = &context.capabilities {
            for capability in add {
                if !BASELINE_CAPABILITIES.contains(&capability.as_str()) {
                    checker.fail(
                        "capabilities",
                        format!("{path}.securityContext.capabilities.add"),
                        format!("capability {capability} is beyond the baseline set"),
                    );
                }
            }
        }
        if let Some(profile) = &context.app_armor_profile {
            apparmor(
                checker,
                &format!("{path}.securityContext.appArmorProfile.type"),
                &profile.type_,
            );
        }
        if let Some(options) = &context.se_linux_options {
            selinux(
                checker,
                &format!("{path}.securityContext.seLinuxOptions"),
                options,
            );
        }
        if let Some(profile) = &context.seccomp_profile {
            seccomp_baseline(
                checker,
                &format!("{path}.securityContext.seccompProfile.type"),
                profile,
            );
        }
        if let Some(mount) = &context.proc_mount {
            if mount != "Default" {
                checker.fail(
                    "proc-mount",
                    format!("{path}.securityContext.procMount"),
                    format!("procMount {mount} is forbidden"),
                );
            }
        }
        if context
            .windows_options
            .as_ref()
            .and_then(|options| options.host_process)
            == Some(true)
        {
            checker.fail(
                "host-process",
                format!("{path}.securityContext.windowsOptions.hostProcess"),
                "HostProcess containers are forbidden",
            );
        }
    }
}

fn apparmor(checker: &mut Checker, path: &str, kind: &str) {
    if kind != "RuntimeDefault" && kind != "Localhost" {
        checker.fail(
            "apparmor",
            path.to_string(),
            format!("AppArmor profile type {kind} is forbidden"),
        );
    }
}

fn selinux(checker: &mut Checker, path: &str, options: &SELinuxOptions) {
    if let Some(kind) = options.type_.as_deref() {
        if !kind.is_empty() && !SELINUX_TYPES.contains(&kind) {
            checker.fail(
                "selinux",
                format!("{path}.type"),
                format!("SELinux type {kind} is forbidden"),
            );
        }
    }
    for (field, value) in [("user", &options.user), ("role", &options.role)] {
        if value.as_deref().is_some_and(|value| !value.is_empty()) {
            checker.fail(
                "selinux",
                format!("{path}.{field}"),
                format!("a custom SELinux {field} is forbidden"),
            );
        }
    }
}

fn seccomp_baseline(checker: &mut Checker, path: &str, profile: &SeccompProfile) {
    if profile.type_ == "Unconfined" {
        checker.fail(
            "seccomp",
            path.to_string(),
            "seccomp profile Unconfined is forbidden",
        );
    }
}

fn restricted(checker: &mut Checker, spec: &PodSpec) {
    // Volume types.
    for (index, volume) in spec.volumes.iter().flatten().enumerate() {
        let value = serde_json::to_value(volume).unwrap_or_default();
        let kinds: Vec<String> = value
            .as_object()
            .map(|fields| {
                fields
                    .keys()
                    .filter(|key| *key != "name")
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        for kind in kinds {
            if !RESTRICTED_VOLUME_TYPES.contains(&kind.as_str()) {
                checker.fail(
                    "volume-types",
                    format!("spec.volumes[{index}].{kind}"),
                    format!("volume type {kind} is not allowed"),
                );
            }
        }
    }
    let pod_context = spec.security_context.as_ref();
    let user_namespace = spec.host_users == Some(false);
    let pod_non_root = pod_context.and_then(|context| context.run_as_non_root);
    let pod_seccomp = pod_context
        .and_then(|context| context.seccomp_profile.as_ref())
        .map(|profile| profile.type_.as_str());
    if pod_non_root == Some(false) && !user_namespace {
        checker.fail(
            "run-as-non-root",
            "spec.securityContext.runAsNonRoot".to_string(),
            "runAsNonRoot must not be false",
        );
    }
    if pod_context.and_then(|context| context.run_as_user) == Some(0) && !user_namespace {
        checker.fail(
            "run-as-user",
            "spec.securityContext.runAsUser".to_string(),
            "runAsUser 0 is forbidden",
        );
    }
    if let Some(kind) = pod_seccomp {
        seccomp_restricted(checker, "spec.securityContext.seccompProfile.type", kind);
    }
    for (path, context, _) in containers(spec) {
        if context.and_then(|context| context.allow_privilege_escalation) != Some(false) {
            checker.fail(
                "privilege-escalation",
                format!("{path}.securityContext.allowPrivilegeEscalation"),
                "allowPrivilegeEscalation must be false",
            );
        }
        let non_root = context.and_then(|context| context.run_as_non_root);
        if !user_namespace {
            match (non_root, pod_non_root) {
                (Some(false), _) => checker.fail(
                    "run-as-non-root",
                    format!("{path}.securityContext.runAsNonRoot"),
                    "runAsNonRoot must not be false",
                ),
                (Some(true), _) | (None, Some(true)) => {}
                (None, _) => checker.fail(
                    "run-as-non-root",
                    format!("{path}.securityContext.runAsNonRoot"),
                    "runAsNonRoot must be true, on the pod or the container",
                ),
            }
            if context.and_then(|context| context.run_as_user) == Some(0) {
                checker.fail(
                    "run-as-user",
                    format!("{path}.securityContext.runAsUser"),
                    "runAsUser 0 is forbidden",
                );
            }
        }
        match context
            .and_then(|context| context.seccomp_profile.as_ref())
            .map(|profile| profile.type_.as_str())
        {
            Some(kind) => seccomp_restricted(
                checker,
                &format!("{path}.securityContext.seccompProfile.type"),
                kind,
            ),
            None if pod_seccomp.is_none() => checker.fail(
                "seccomp-restricted",
                format!("{path}.securityContext.seccompProfile"),
                "a seccomp profile (RuntimeDefault or Localhost) must be set, on the pod or the \
                 container",
            ),
            None => {}
        }
        let capabilities = context.and_then(|context| context.capabilities.as_ref());
        let drops_all = capabilities
            .and_then(|capabilities| capabilities.drop.as_ref())
            .is_some_and(|drop| drop.iter().any(|capability| capability == "ALL"));
        if !drops_all {
            checker.fail(
                "capabilities-restricted",
                format!("{path}.securityContext.capabilities.drop"),
                "containers must drop ALL capabilities",
            );
        }
        for capability in capabilities
            .and_then(|capabilities| capabilities.add.as_ref())
            .into_iter()
            .flatten()
        {
            if capability != "NET_BIND_SERVICE" {
                checker.fail(
                    "capabilities-restricted",
                    format!("{path}.securityContext.capabilities.add"),
                    format!("capability {capability} may not be added (only NET_BIND_SERVICE)"),
                );
            }
        }
    }
}

fn seccomp_restricted(checker: &mut Checker, path: &str, kind: &str) {
    if kind != "RuntimeDefault" && kind != "Localhost" {
        checker.fail(
            "seccomp-restricted",
            path.to_string(),
            format!("seccomp profile type {kind} is not allowed (RuntimeDefault or Localhost)"),
        );
    }
}
