//! The Pod Security checker against negative fixtures: a compliant pod, then one breach of
//! each published rule at a time, which the checker must name (rule and field path) at the
//! levels that forbid it and accept at the levels that allow it.

use std::collections::BTreeMap;

use agentc_backend_k8s::k8s_openapi::api::core::v1::Pod;
use agentc_backend_k8s::pss::{check, PodSecurityLevel, Violation};
use serde_json::{json, Value};

/// A pod that meets "restricted": the shape every agentc workload has.
fn compliant() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "fixture"},
        "spec": {
            "securityContext": {
                "runAsNonRoot": true,
                "runAsUser": 1000,
                "seccompProfile": {"type": "RuntimeDefault"},
                "appArmorProfile": {"type": "RuntimeDefault"},
                "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "53"}]
            },
            "containers": [{
                "name": "agent",
                "image": "example/agent:1",
                "ports": [{"containerPort": 8080}],
                "securityContext": {
                    "allowPrivilegeEscalation": false,
                    "readOnlyRootFilesystem": true,
                    "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}
                }
            }],
            "volumes": [
                {"name": "tmp", "emptyDir": {"medium": "Memory"}},
                {"name": "home", "persistentVolumeClaim": {"claimName": "home"}},
                {"name": "config", "configMap": {"name": "config"}},
                {"name": "token", "projected": {"sources": []}}
            ]
        }
    })
}

fn violations(pod: &Value, level: PodSecurityLevel) -> Vec<Violation> {
    let pod: Pod = serde_json::from_value(pod.clone()).expect("a valid Pod");
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    check(level, &annotations, pod.spec.as_ref().expect("spec"))
}

fn rules(found: &[Violation]) -> Vec<(&'static str, String)> {
    found
        .iter()
        .map(|violation| (violation.rule, violation.path.clone()))
        .collect()
}

struct Case {
    name: &'static str,
    breach: fn(&mut Value),
    /// The (rule, path) pairs at baseline; restricted finds these plus `restricted`.
    baseline: &'static [(&'static str, &'static str)],
    restricted: &'static [(&'static str, &'static str)],
}

fn container(pod: &mut Value) -> &mut Value {
    &mut pod["spec"]["containers"][0]
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "host network, PID and IPC",
            breach: |pod| {
                pod["spec"]["hostNetwork"] = json!(true);
                pod["spec"]["hostPID"] = json!(true);
                pod["spec"]["hostIPC"] = json!(true);
            },
            baseline: &[
                ("host-namespaces", "spec.hostNetwork"),
                ("host-namespaces", "spec.hostPID"),
                ("host-namespaces", "spec.hostIPC"),
            ],
            restricted: &[],
        },
        Case {
            name: "a privileged container",
            breach: |pod| container(pod)["securityContext"]["privileged"] = json!(true),
            baseline: &[(
                "privileged",
                "spec.containers[0].securityContext.privileged",
            )],
            restricted: &[],
        },
        Case {
            name: "a capability beyond Docker's defaults",
            breach: |pod| {
                container(pod)["securityContext"]["capabilities"]["add"] = json!(["SYS_ADMIN"])
            },
            baseline: &[(
                "capabilities",
                "spec.containers[0].securityContext.capabilities.add",
            )],
            restricted: &[(
                "capabilities-restricted",
                "spec.containers[0].securityContext.capabilities.add",
            )],
        },
        Case {
            name: "a default capability other than NET_BIND_SERVICE",
            breach: |pod| {
                container(pod)["securityContext"]["capabilities"]["add"] = json!(["CHOWN"])
            },
            baseline: &[],
            restricted: &[(
                "capabilities-restricted",
                "spec.containers[0].securityContext.capabilities.add",
            )],
        },
        Case {
            name: "capabilities not dropped",
            breach: |pod| container(pod)["securityContext"]["capabilities"] = json!({}),
            baseline: &[],
            restricted: &[(
                "capabilities-restricted",
                "spec.containers[0].securityContext.capabilities.drop",
            )],
        },
        Case {
            name: "a hostPath volume",
            breach: |pod| {
                pod["spec"]["volumes"][0] = json!({"name": "tmp", "hostPath": {"path": "/"}})
            },
            baseline: &[("host-path", "spec.volumes[0].hostPath")],
            restricted: &[("volume-types", "spec.volumes[0].hostPath")],
        },
        Case {
            name: "a host port",
            breach: |pod| container(pod)["ports"][0]["hostPort"] = json!(8080),
            baseline: &[("host-ports", "spec.containers[0].ports[].hostPort")],
            restricted: &[],
        },
        Case {
            name: "AppArmor unconfined, as a field and as an annotation",
            breach: |pod| {
                pod["spec"]["securityContext"]["appArmorProfile"] = json!({"type": "Unconfined"});
                pod["metadata"]["annotations"] = json!({
                    "container.apparmor.security.beta.kubernetes.io/agent": "unconfined"
                });
            },
            baseline: &[
                ("apparmor", "spec.securityContext.appArmorProfile.type"),
                (
                    "apparmor",
                    "metadata.annotations[container.apparmor.security.beta.kubernetes.io/agent]",
                ),
            ],
            restricted: &[],
        },
        Case {
            name: "a custom SELinux type and user",
            breach: |pod| {
                container(pod)["securityContext"]["seLinuxOptions"] =
                    json!({"type": "spc_t", "user": "system_u"})
            },
            baseline: &[
                (
                    "selinux",
                    "spec.containers[0].securityContext.seLinuxOptions.type",
                ),
                (
                    "selinux",
                    "spec.containers[0].securityContext.seLinuxOptions.user",
                ),
            ],
            restricted: &[],
        },
        Case {
            name: "an unmasked /proc",
            breach: |pod| container(pod)["securityContext"]["procMount"] = json!("Unmasked"),
            baseline: &[("proc-mount", "spec.containers[0].securityContext.procMount")],
            restricted: &[],
        },
        Case {
            name: "seccomp unconfined on the pod",
            breach: |pod| {
                pod["spec"]["securityContext"]["seccompProfile"] = json!({"type": "Unconfined"})
            },
            baseline: &[("seccomp", "spec.securityContext.seccompProfile.type")],
            restricted: &[(
                "seccomp-restricted",
                "spec.securityContext.seccompProfile.type",
            )],
        },
        Case {
            name: "seccomp unconfined through the old annotation",
            breach: |pod| {
                pod["metadata"]["annotations"] =
                    json!({"seccomp.security.alpha.kubernetes.io/pod": "unconfined"})
            },
            baseline: &[(
                "seccomp",
                "metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]",
            )],
            restricted: &[],
        },
        Case {
            name: "no seccomp profile anywhere",
            breach: |pod| {
                pod["spec"]["securityContext"]
                    .as_object_mut()
                    .map(|context| context.remove("seccompProfile"));
            },
            baseline: &[],
            restricted: &[(
                "seccomp-restricted",
                "spec.containers[0].securityContext.seccompProfile",
            )],
        },
        Case {
            name: "an unsafe sysctl",
            breach: |pod| {
                pod["spec"]["securityContext"]["sysctls"] =
                    json!([{"name": "kernel.core_pattern", "value": "|/x"}])
            },
            baseline: &[("sysctls", "spec.securityContext.sysctls[0].name")],
            restricted: &[],
        },
        Case {
            name: "a Windows HostProcess container",
            breach: |pod| {
                container(pod)["securityContext"]["windowsOptions"] = json!({"hostProcess": true})
            },
            baseline: &[(
                "host-process",
                "spec.containers[0].securityContext.windowsOptions.hostProcess",
            )],
            restricted: &[],
        },
        Case {
            name: "a volume type outside the restricted list",
            breach: |pod| {
                pod["spec"]["volumes"][1] =
                    json!({"name": "home", "nfs": {"server": "nfs.example", "path": "/"}})
            },
            baseline: &[],
            restricted: &[("volume-types", "spec.volumes[1].nfs")],
        },
        Case {
            name: "privilege escalation allowed, or left unset",
            breach: |pod| {
                container(pod)["securityContext"]["allowPrivilegeEscalation"] = json!(true)
            },
            baseline: &[],
            restricted: &[(
                "privilege-escalation",
                "spec.containers[0].securityContext.allowPrivilegeEscalation",
            )],
        },
        Case {
            name: "runAsNonRoot false on the container",
            breach: |pod| container(pod)["securityContext"]["runAsNonRoot"] = json!(false),
            baseline: &[],
            restricted: &[(
                "run-as-non-root",
                "spec.containers[0].securityContext.runAsNonRoot",
            )],
        },
        Case {
            name: "runAsNonRoot unset everywhere",
            breach: |pod| {
                pod["spec"]["securityContext"]
                    .as_object_mut()
                    .map(|context| context.remove("runAsNonRoot"));
            },
            baseline: &[],
            restricted: &[(
                "run-as-non-root",
                "spec.containers[0].securityContext.runAsNonRoot",
            )],
        },
        Case {
            name: "uid 0 on the pod",
            breach: |pod| pod["spec"]["securityContext"]["runAsUser"] = json!(0),
            baseline: &[],
            restricted: &[("run-as-user", "spec.securityContext.runAsUser")],
        },
        Case {
            name: "uid 0 in a user namespace is allowed",
            breach: |pod| {
                pod["spec"]["hostUsers"] = json!(false);
                pod["spec"]["securityContext"]["runAsUser"] = json!(0);
                pod["spec"]["securityContext"]["runAsNonRoot"] = json!(false);
            },
            baseline: &[],
            restricted: &[],
        },
        Case {
            name: "an init container is checked like the others",
            breach: |pod| {
                pod["spec"]["initContainers"] = json!([{
                    "name": "init",
                    "image": "example/init:1",
                    "securityContext": {"privileged": true}
                }])
            },
            baseline: &[(
                "privileged",
                "spec.initContainers[0].securityContext.privileged",
            )],
            restricted: &[
                (
                    "privilege-escalation",
                    "spec.initContainers[0].securityContext.allowPrivilegeEscalation",
                ),
                (
                    "capabilities-restricted",
                    "spec.initContainers[0].securityContext.capabilities.drop",
                ),
            ],
        },
        Case {
            name: "an ephemeral container is checked like the others",
            breach: |pod| {
                pod["spec"]["ephemeralContainers"] = json!([{
                    "name": "debug",
                    "image": "example/debug:1",
                    "securityContext": {
                        "allowPrivilegeEscalation": false,
                        "capabilities": {"drop": ["ALL"], "add": ["SYS_PTRACE"]}
                    }
                }])
            },
            baseline: &[(
                "capabilities",
                "spec.ephemeralContainers[0].securityContext.capabilities.add",
            )],
            restricted: &[(
                "capabilities-restricted",
                "spec.ephemeralContainers[0].securityContext.capabilities.add",
            )],
        },
    ]
}

#[test]
fn a_compliant_pod_passes_both_levels() {
    for level in [PodSecurityLevel::Baseline, PodSecurityLevel::Restricted] {
        assert_eq!(violations(&compliant(), level), []);
    }
}

#[test]
fn each_breach_is_named_at_the_levels_that_forbid_it() {
    for case in cases() {
        let mut pod = compliant();
        (case.breach)(&mut pod);
        let owned = |pairs: &[(&'static str, &'static str)]| -> Vec<(&'static str, String)> {
            pairs
                .iter()
                .map(|(rule, path)| (*rule, path.to_string()))
                .collect()
        };
        let baseline = rules(&violations(&pod, PodSecurityLevel::Baseline));
        assert_eq!(baseline, owned(case.baseline), "{} at baseline", case.name);
        let restricted = rules(&violations(&pod, PodSecurityLevel::Restricted));
        let mut expected = owned(case.baseline);
        expected.extend(owned(case.restricted));
        assert_eq!(restricted, expected, "{} at restricted", case.name);
    }
}

#[test]
fn every_rule_has_a_negative_fixture() {
    let mut seen = BTreeMap::new();
    for case in cases() {
        for (rule, _) in case.baseline.iter().chain(case.restricted) {
            *seen.entry(*rule).or_insert(0) += 1;
        }
    }
    for rule in [
        "host-namespaces",
        "privileged",
        "capabilities",
        "host-path",
        "host-ports",
        "apparmor",
        "selinux",
        "proc-mount",
        "seccomp",
        "sysctls",
        "host-process",
        "volume-types",
        "privilege-escalation",
        "run-as-non-root",
        "run-as-user",
        "seccomp-restricted",
        "capabilities-restricted",
    ] {
        assert!(seen.contains_key(rule), "no fixture breaks {rule}");
    }
}
