//! The proof that a Kubernetes rendering is at least as strict as the Docker launch of the
//! same spec, field by field, and the checks every rendered object must pass: Pod Security,
//! and the pinned agent-sandbox CRD's schema with unknown fields refused.
//!
//! [`strictness`] compares the Engine API body of `agentc-backend-api` (what Docker is asked
//! to do) with the rendered objects. A point where Kubernetes is weaker is accepted only when
//! the rendering records it as a named [`Note`](agentc_backend_k8s::Note) (`tmpfs-noexec`,
//! `shm`), and a Docker setting Kubernetes cannot hold per pod only as a named cluster duty
//! (`pids-limit`, `no-swap`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use agentc_backend_k8s::k8s_openapi::api::core::v1::{Container, PodSpec};
use agentc_backend_k8s::k8s_openapi::api::networking::v1::NetworkPolicy;
use agentc_backend_k8s::pss::{self, PodSecurityLevel};
use agentc_backend_k8s::{Object, Options, Rendering, CONTAINER_NAME};
use agentc_policy::{Hinted, LaunchSpec};
use serde_json::Value;

/// Docker's default capabilities, which a container keeps unless it drops ALL.
pub const DOCKER_DEFAULT_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "NET_RAW",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The proxy variables the egress allowlist adds to the workload.
pub const PROXY_VARIABLES: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// The pinned agent-sandbox `Sandbox` CRD (see `tests/k8s/crds/README.md`).
pub fn sandbox_crd_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("k8s/crds/agents.x-k8s.io_sandboxes.yaml")
}

/// The `openAPIV3Schema` of the `v1beta1` version of the pinned CRD in `file` (under
/// `tests/k8s/crds/`), such as `extensions.agents.x-k8s.io_sandboxwarmpools.yaml`.
pub fn crd_schema(file: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("k8s/crds")
        .join(file);
    let text = std::fs::read_to_string(path).expect("the pinned CRD is readable");
    let crd: Value = serde_yaml_ng::from_str(&text).expect("the pinned CRD is YAML");
    crd["spec"]["versions"]
        .as_array()
        .and_then(|versions| versions.iter().find(|version| version["name"] == "v1beta1"))
        .map(|version| version["schema"]["openAPIV3Schema"].clone())
        .expect("the CRD has v1beta1")
}

/// The `openAPIV3Schema` of the CRD's `v1beta1` version.
pub fn sandbox_schema() -> Value {
    let text = std::fs::read_to_string(sandbox_crd_path()).expect("the pinned CRD is readable");
    let crd: Value = serde_yaml_ng::from_str(&text).expect("the pinned CRD is YAML");
    crd["spec"]["versions"]
        .as_array()
        .and_then(|versions| versions.iter().find(|version| version["name"] == "v1beta1"))
        .map(|version| version["schema"]["openAPIV3Schema"].clone())
        .expect("the CRD has v1beta1")
}

/// Checks `value` against an OpenAPI v3 structural schema as the API server would with
/// unknown fields refused: types, enums, required fields, and no property the schema does not
/// declare (unless it allows additional properties or preserves unknown fields). Returns one
/// line per problem, with its JSON path.
pub fn schema_problems(value: &Value, schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    walk(value, schema, "$", &mut problems);
    problems
}

fn walk(value: &Value, schema: &Value, path: &str, problems: &mut Vec<String>) {
    if schema["x-kubernetes-int-or-string"] == Value::Bool(true) {
        if !(value.is_i64() || value.is_u64() || value.is_string()) {
            problems.push(format!("{path}: not an int or string: {value}"));
        }
        return;
    }
    if let Some(options) = schema["enum"].as_array() {
        if !options.contains(value) {
            problems.push(format!("{path}: {value} is not one of {options:?}"));
        }
    }
    let kind = schema["type"].as_str().unwrap_or("");
    match (kind, value) {
        ("object", Value::Object(fields)) => {
            for required in schema["required"].as_array().into_iter().flatten() {
                if let Some(name) = required.as_str() {
                    if !fields.contains_key(name) {
                        problems.push(format!("{path}: missing required {name}"));
                    }
                }
            }
            if path == "$.metadata" && schema.get("properties").is_none() {
                // The API server checks a custom resource's metadata as ObjectMeta itself.
                for name in fields.keys() {
                    if !["name", "namespace", "labels", "annotations"].contains(&name.as_str()) {
                        problems.push(format!("{path}.{name}: not rendered by agentc"));
                    }
                }
                return;
            }
            let preserve = schema["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true);
            for (name, field) in fields {
                let child = format!("{path}.{name}");
                if let Some(property) = schema["properties"].get(name) {
                    walk(field, property, &child, problems);
                } else if let Some(additional) = schema.get("additionalProperties") {
                    if additional.is_object() {
                        walk(field, additional, &child, problems);
                    } else if additional != &Value::Bool(true) {
                        problems.push(format!("{child}: unknown field"));
                    }
                } else if !preserve {
                    problems.push(format!("{child}: unknown field"));
                }
            }
        }
        ("array", Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                walk(
                    item,
                    &schema["items"],
                    &format!("{path}[{index}]"),
                    problems,
                );
            }
        }
        ("string", Value::String(_)) | ("boolean", Value::Bool(_)) | ("", _) => {}
        ("integer", value) if value.is_i64() || value.is_u64() => {}
        ("number", value) if value.is_number() => {}
        (kind, value) => problems.push(format!("{path}: expected {kind}, found {value}")),
    }
}

/// The options the fixtures are rendered with: a claim for the workspace, a proxy image, a
/// namespace, and the profile's egress policy and Pod Security level (as the CLI reads them).
pub fn fixture_options(
    loaded: &agentc_policy::LoadedProfile,
    kind: agentc_backend_k8s::ObjectKind,
) -> Options {
    Options {
        kind,
        namespace: Some("agents".to_string()),
        name: None,
        workspace_claim: Some("workspace".to_string()),
        pod_security: agentc_backend_k8s::PodSecurity::from_profile(loaded),
        egress_proxy_image: Some("registry.example/agentc:test".to_string()),
        egress_proxy_ip: None,
        egress: agentc_backend_k8s::EgressPolicy::from_profile(loaded),
        runtime_classes: agentc_backend_k8s::RuntimeClasses::default(),
        // As `agentc render` reads it.
        upstream_ca: spec_ca_source(loaded)
            .map(|path| agentc::commands::offline::read_ca_files(&path).expect("the CA reads"))
            .unwrap_or_default(),
    }
}

/// The profile's CA file or directory (`proxy.ca_file`, `proxy.ca_dir`), relative to the
/// fixtures' directory, for the rendering's ConfigMap of the upstreams' CA.
fn spec_ca_source(loaded: &agentc_policy::LoadedProfile) -> Option<std::path::PathBuf> {
    let proxy = loaded.profile.proxy.as_ref()?;
    let path = proxy.ca_file.as_ref().or(proxy.ca_dir.as_ref())?;
    Some(crate::fixtures::fixtures_dir().join("valid").join(path))
}

/// Every Pod Security violation of every pod of a rendering at its level, and at
/// `restricted` for every pod but a baseline workload's capabilities.
pub fn pod_security_problems(rendering: &Rendering) -> Vec<String> {
    let empty = BTreeMap::new();
    let mut problems = Vec::new();
    for pod in rendering.pods() {
        let annotations = pod.annotations.unwrap_or(&empty);
        for violation in pss::check(PodSecurityLevel::Restricted, annotations, pod.spec) {
            let baseline_capability = rendering.pod_security.level == PodSecurityLevel::Baseline
                && violation.rule == "capabilities-restricted"
                && violation.path.ends_with(".add");
            if !baseline_capability {
                problems.push(format!(
                    "{}/{}: {} at {}: {}",
                    pod.object.kind(),
                    pod.object.name(),
                    violation.rule,
                    violation.path,
                    violation.detail
                ));
            }
        }
        for violation in pss::check(PodSecurityLevel::Baseline, annotations, pod.spec) {
            problems.push(format!(
                "baseline: {} at {}",
                violation.rule, violation.path
            ));
        }
    }
    problems
}

fn quantity_bytes(text: &str) -> Option<u64> {
    for (suffix, factor) in [
        ("Ti", 1u64 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ] {
        if let Some(number) = text.strip_suffix(suffix) {
            return number.parse::<u64>().ok()?.checked_mul(factor);
        }
    }
    text.parse().ok()
}

fn quantity_nano_cpus(text: &str) -> Option<u64> {
    match text.strip_suffix('m') {
        Some(millis) => millis.parse::<u64>().ok()?.checked_mul(1_000_000),
        None => text.parse::<u64>().ok()?.checked_mul(1_000_000_000),
    }
}

fn workload_container(spec: &PodSpec) -> Option<&Container> {
    spec.containers
        .iter()
        .find(|container| container.name == CONTAINER_NAME)
}

fn workload_policy(rendering: &Rendering) -> Option<&NetworkPolicy> {
    rendering.objects.iter().find_map(|object| match object {
        Object::NetworkPolicy(policy)
            if policy.metadata.name.as_deref() == Some(&rendering.name) =>
        {
            Some(policy)
        }
        _ => None,
    })
}

/// Every point where `rendering` is weaker than the Docker launch of `spec` (its Engine API
/// body) without a note saying so; empty when the rendering is at least as strict.
pub fn strictness(spec: &LaunchSpec, rendering: &Rendering) -> Vec<String> {
    let mut problems = Vec::new();
    let mut fail = |text: String| problems.push(text);
    let body = match agentc_backend_api::render_json(spec) {
        Ok(rendered) => rendered["body"].clone(),
        Err(error) => {
            return vec![format!(
                "the api backend refuses the spec: {}",
                error.with_hint()
            )]
        }
    };
    let host = &body["HostConfig"];
    let Some(pod) = rendering.workload() else {
        return vec!["no workload pod".to_string()];
    };
    let Some(main) = workload_container(pod) else {
        return vec!["no agent container".to_string()];
    };
    let context = main.security_context.clone().unwrap_or_default();
    let pod_context = pod.security_context.clone().unwrap_or_default();
    let notes = &rendering.notes;

    // Capabilities: the set Kubernetes adds is within Docker's effective set, after ALL.
    let docker_caps: BTreeSet<String> = {
        let added = host["CapAdd"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|cap| cap.trim_start_matches("CAP_").to_string());
        let drops_all = host["CapDrop"]
            .as_array()
            .is_some_and(|drop| drop.iter().any(|cap| cap == "ALL"));
        if drops_all {
            added.collect()
        } else {
            added
                .chain(
                    DOCKER_DEFAULT_CAPABILITIES
                        .iter()
                        .map(|cap| cap.to_string()),
                )
                .collect()
        }
    };
    let capabilities = context.capabilities.clone().unwrap_or_default();
    if !capabilities
        .drop
        .as_ref()
        .is_some_and(|drop| drop.iter().any(|cap| cap == "ALL"))
    {
        fail("capabilities: ALL is not dropped".into());
    }
    for cap in capabilities.add.iter().flatten() {
        if !docker_caps.contains(cap) {
            fail(format!(
                "capabilities: {cap} is added, Docker does not have it"
            ));
        }
    }
    if context.privileged == Some(true) {
        fail("privileged".into());
    }
    // no-new-privileges, read-only root, seccomp, AppArmor.
    let security_opt: Vec<&str> = host["SecurityOpt"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if security_opt.contains(&"no-new-privileges")
        && context.allow_privilege_escalation != Some(false)
    {
        fail("no-new-privileges: privilege escalation is allowed".into());
    }
    if host["ReadonlyRootfs"] == Value::Bool(true)
        && context.read_only_root_filesystem != Some(true)
    {
        fail("read-only root: the root filesystem is writable".into());
    }
    let seccomp = context
        .seccomp_profile
        .as_ref()
        .or(pod_context.seccomp_profile.as_ref())
        .map(|profile| profile.type_.as_str());
    if !matches!(seccomp, Some("RuntimeDefault" | "Localhost")) {
        fail(format!("seccomp: {seccomp:?} instead of RuntimeDefault"));
    }
    let apparmor = context
        .app_armor_profile
        .as_ref()
        .or(pod_context.app_armor_profile.as_ref())
        .map(|profile| profile.type_.as_str());
    if !matches!(apparmor, Some("RuntimeDefault" | "Localhost")) {
        fail(format!("apparmor: {apparmor:?} instead of RuntimeDefault"));
    }
    // User: never root; a numeric Docker user is kept.
    if pod_context.run_as_non_root != Some(true) && context.run_as_non_root != Some(true) {
        fail("user: runAsNonRoot is not set".into());
    }
    let run_as = context.run_as_user.or(pod_context.run_as_user);
    if run_as == Some(0) {
        fail("user: runs as uid 0".into());
    }
    if let Some(user) = body["User"].as_str() {
        let uid = user
            .split(':')
            .next()
            .and_then(|uid| uid.parse::<i64>().ok());
        if uid.is_some() && uid != run_as {
            fail(format!(
                "user: Docker runs as {user}, Kubernetes as {run_as:?}"
            ));
        }
    }
    // Host namespaces, service account, host ports and aliases.
    for (name, value) in [
        ("hostNetwork", pod.host_network),
        ("hostPID", pod.host_pid),
        ("hostIPC", pod.host_ipc),
    ] {
        if value == Some(true) {
            fail(format!("{name} is on"));
        }
    }
    if pod.automount_service_account_token != Some(false) {
        fail("a service account token is mounted".into());
    }
    let exposed: BTreeSet<String> = body["ExposedPorts"]
        .as_object()
        .map(|ports| ports.keys().cloned().collect())
        .unwrap_or_default();
    for port in main.ports.iter().flatten() {
        if port.host_port.is_some() {
            fail(format!("port {}: a hostPort is set", port.container_port));
        }
        let protocol = port
            .protocol
            .as_deref()
            .unwrap_or("TCP")
            .to_ascii_lowercase();
        let key = format!("{}/{protocol}", port.container_port);
        if !exposed.contains(&key) {
            fail(format!("port {key} is not published by Docker"));
        }
    }
    let extra_hosts: BTreeSet<String> = host["ExtraHosts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    if extra_hosts
        .iter()
        .any(|entry| entry.ends_with(":host-gateway"))
    {
        fail("extra hosts: the host gateway was rendered".into());
    }
    for alias in pod.host_aliases.iter().flatten() {
        for name in alias.hostnames.iter().flatten() {
            if !extra_hosts.contains(&format!("{name}:{}", alias.ip)) {
                fail(format!("host alias {name} -> {} is not Docker's", alias.ip));
            }
        }
    }
    if host["Devices"]
        .as_array()
        .is_some_and(|devices| !devices.is_empty())
    {
        fail("devices: Docker has devices, the rendering was not refused".into());
    }

    // Resources.
    let resources = main.resources.clone().unwrap_or_default();
    let limit = |name: &str| {
        resources
            .limits
            .as_ref()
            .and_then(|limits| limits.get(name))
            .map(|quantity| quantity.0.clone())
    };
    let request = |name: &str| {
        resources
            .requests
            .as_ref()
            .and_then(|requests| requests.get(name))
            .map(|quantity| quantity.0.clone())
    };
    if let Some(memory) = host["Memory"].as_u64().filter(|memory| *memory > 0) {
        match limit("memory").as_deref().and_then(quantity_bytes) {
            Some(k8s) if k8s <= memory => {}
            other => fail(format!("memory: Docker {memory}, Kubernetes {other:?}")),
        }
        if request("memory") != limit("memory") {
            fail("memory: the request differs from the limit".into());
        }
        let guaranteed = limit("cpu").is_some() && request("cpu") == limit("cpu");
        if !guaranteed && !notes.has("no-swap") {
            fail("swap: a Burstable pod without the no-swap cluster duty".into());
        }
    }
    if let Some(nano) = host["NanoCpus"].as_u64().filter(|nano| *nano > 0) {
        match limit("cpu").as_deref().and_then(quantity_nano_cpus) {
            Some(k8s) if k8s <= nano => {}
            other => fail(format!("cpu: Docker {nano}, Kubernetes {other:?}")),
        }
        if request("cpu") != limit("cpu") {
            fail("cpu: the request differs from the limit".into());
        }
    }
    if let Some(pids) = host["PidsLimit"].as_i64().filter(|pids| *pids > 0) {
        let recorded = notes.0.iter().any(|note| {
            note.code == "pids-limit" && note.detail.contains(&format!("--pids-limit {pids} "))
        });
        if !recorded {
            fail(format!(
                "pids: Docker limits {pids}, no pids-limit cluster duty"
            ));
        }
    }

    // Volumes: memory emptyDirs only where Docker has tmpfs (or /dev/shm), claims only where
    // Docker mounts, read-only where Docker is, no hostPath.
    let tmpfs: BTreeMap<String, String> = host["Tmpfs"]
        .as_object()
        .map(|tmpfs| {
            tmpfs
                .iter()
                .map(|(target, options)| {
                    (target.clone(), options.as_str().unwrap_or("").to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let docker_mounts: BTreeMap<String, (String, bool)> = host["Mounts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|mount| {
            (
                mount["Target"].as_str().unwrap_or("").to_string(),
                (
                    mount["Type"].as_str().unwrap_or("").to_string(),
                    mount["ReadOnly"] == Value::Bool(true),
                ),
            )
        })
        .collect();
    let volumes: BTreeMap<String, &agentc_backend_k8s::k8s_openapi::api::core::v1::Volume> = pod
        .volumes
        .iter()
        .flatten()
        .map(|volume| (volume.name.clone(), volume))
        .collect();
    for volume in volumes.values() {
        if volume.host_path.is_some() {
            fail(format!("volume {}: hostPath", volume.name));
        }
    }
    for mount in main.volume_mounts.iter().flatten() {
        let target = &mount.mount_path;
        let Some(volume) = volumes.get(&mount.name) else {
            fail(format!("mount {target}: no volume {}", mount.name));
            continue;
        };
        if let Some(empty_dir) = &volume.empty_dir {
            if mount.name == agentc_backend_k8s::CA_VOLUME {
                // Docker's CA volume of a proxy holding keys: an emptyDir the init container
                // fills from the proxy, read-only in the workload.
                let fetched = pod.init_containers.iter().flatten().any(|init| {
                    init.name == agentc_backend_k8s::CA_INIT_CONTAINER
                        && init.volume_mounts.iter().flatten().any(|m| {
                            m.name == agentc_backend_k8s::CA_VOLUME && &m.mount_path == target
                        })
                });
                match docker_mounts.get(target) {
                    Some((kind, true)) if kind == "volume" && fetched => {}
                    other => fail(format!(
                        "CA {target}: Docker mounts {other:?}, fetched {fetched}"
                    )),
                }
                if mount.read_only != Some(true) {
                    fail(format!("CA {target}: writable in the workload"));
                }
                continue;
            }
            if target == "/dev/shm" {
                let size = empty_dir
                    .size_limit
                    .as_ref()
                    .and_then(|quantity| quantity_bytes(&quantity.0));
                match (host["ShmSize"].as_u64(), size) {
                    (Some(docker), Some(k8s)) if k8s <= docker && notes.has("shm") => {}
                    other => fail(format!("/dev/shm: Docker and Kubernetes sizes {other:?}")),
                }
            } else {
                match tmpfs.get(target) {
                    None => fail(format!("tmpfs {target}: Docker has no tmpfs there")),
                    Some(options) if !options.contains("exec") => {
                        let recorded = notes.0.iter().any(|note| {
                            note.code == "tmpfs-noexec" && note.detail.contains(target.as_str())
                        });
                        if !recorded {
                            fail(format!("tmpfs {target}: noexec lost without a note"));
                        }
                    }
                    Some(_) => {}
                }
            }
            continue;
        }
        match docker_mounts.get(target) {
            None => fail(format!("mount {target}: Docker mounts nothing there")),
            Some((kind, read_only)) => {
                if *read_only && mount.read_only != Some(true) {
                    fail(format!(
                        "mount {target}: read-only on Docker, writable here"
                    ));
                }
                if kind == "bind" && volume.persistent_volume_claim.is_none() {
                    fail(format!("mount {target}: a bind that is not a claim"));
                }
                if volume.persistent_volume_claim.is_none() {
                    fail(format!("mount {target}: not a claim"));
                }
            }
        }
    }
    for target in docker_mounts.keys() {
        let mounted = main
            .volume_mounts
            .iter()
            .flatten()
            .any(|mount| &mount.mount_path == target);
        if !mounted {
            fail(format!(
                "mount {target}: Docker mounts it, the rendering does not"
            ));
        }
    }
    if tmpfs.keys().any(|target| {
        !main
            .volume_mounts
            .iter()
            .flatten()
            .any(|mount| &mount.mount_path == target)
    }) {
        fail("tmpfs: a Docker tmpfs is missing".into());
    }

    // Environment: the same values; secrets by name from a Secret, never a value.
    let docker_env: Vec<&str> = body["Env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let k8s_env = main.env.clone().unwrap_or_default();
    for entry in &docker_env {
        match entry.split_once('=') {
            Some((name, value)) => {
                let same = k8s_env
                    .iter()
                    .any(|var| var.name == name && var.value.as_deref() == Some(value));
                // Docker's proxy variables point at its egress proxy; the Pod's at its own.
                // And Docker's image firewall allows that proxy's address besides the hosts.
                let docker_proxy = body["HostConfig"]["Dns"][0].as_str();
                let firewall = name == "AGENT_ALLOWED_EGRESS"
                    && docker_proxy.is_some_and(|proxy| {
                        k8s_env.iter().any(|var| {
                            var.name == name
                                && var.value.as_ref().map(|hosts| format!("{hosts},{proxy}"))
                                    == Some(value.to_string())
                        })
                    });
                let egress_proxy = firewall
                    || (docker_proxy.is_some()
                        && (PROXY_VARIABLES.contains(&name)
                            || agentc_policy::NO_PROXY_VARIABLES.contains(&name)));
                if !same && !egress_proxy {
                    fail(format!("env {name}: not the Docker value"));
                }
            }
            None => {
                let by_name = k8s_env.iter().any(|var| {
                    var.name == *entry
                        && var.value.is_none()
                        && var
                            .value_from
                            .as_ref()
                            .and_then(|from| from.secret_key_ref.as_ref())
                            .is_some_and(|secret| secret.key == *entry)
                });
                if !by_name {
                    fail(format!("env {entry}: the secret is not a secretKeyRef"));
                }
            }
        }
    }
    for var in &k8s_env {
        let docker_has = docker_env
            .iter()
            .any(|entry| entry.split('=').next() == Some(var.name.as_str()));
        if !docker_has && !PROXY_VARIABLES.contains(&var.name.as_str()) {
            fail(format!("env {}: not set by Docker", var.name));
        }
    }

    // Network: none is a default-deny policy; otherwise ingress is denied (but for a named
    // network's peers) and every egress rule names its destinations.
    match workload_policy(rendering).and_then(|policy| policy.spec.as_ref()) {
        None => fail("network: no NetworkPolicy for the workload".into()),
        Some(policy) => {
            let types = policy.policy_types.clone().unwrap_or_default();
            if !(types.contains(&"Ingress".to_string()) && types.contains(&"Egress".to_string())) {
                fail(format!("network: policy types {types:?}"));
            }
            let selects = policy
                .pod_selector
                .as_ref()
                .and_then(|selector| selector.match_labels.as_ref())
                .is_some_and(|labels| {
                    // The workload: the last object, or a warm pool's template.
                    let workload = rendering.objects.iter().rev().find(|object| {
                        matches!(
                            object,
                            Object::Pod(_) | Object::Sandbox(_) | Object::SandboxTemplate(_)
                        )
                    });
                    let pod_labels = match workload {
                        Some(Object::Pod(pod)) => pod.metadata.labels.clone(),
                        Some(Object::Sandbox(sandbox)) => {
                            Some(sandbox.spec.pod_template.metadata.labels.clone())
                        }
                        Some(Object::SandboxTemplate(template)) => {
                            Some(template.spec.pod_template.metadata.labels.clone())
                        }
                        _ => None,
                    }
                    .unwrap_or_default();
                    !labels.is_empty()
                        && labels
                            .iter()
                            .all(|(key, value)| pod_labels.get(key) == Some(value))
                });
            if !selects {
                fail("network: the policy does not select the workload".into());
            }
            let ingress = policy.ingress.clone().unwrap_or_default();
            let egress = policy.egress.clone().unwrap_or_default();
            if host["NetworkMode"] == "none" && !(ingress.is_empty() && egress.is_empty()) {
                fail("network: Docker has none, the policy allows traffic".into());
            }
            for rule in &ingress {
                let peers_only = rule.from.as_ref().is_some_and(|from| {
                    !from.is_empty() && from.iter().all(|peer| peer.pod_selector.is_some())
                });
                if !peers_only || host["NetworkMode"] == "default" {
                    fail("network: ingress is allowed beyond named-network peers".into());
                }
            }
            for rule in &egress {
                if rule.to.as_ref().is_none_or(|to| to.is_empty()) {
                    fail("network: an egress rule allows every destination".into());
                }
            }
        }
    }
    problems
}
