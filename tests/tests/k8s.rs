//! The Kubernetes backend against the Docker launch of the same spec: every valid fixture
//! renders (one reviewed snapshot each) or is refused by field; every rendering passes Pod
//! Security, the pinned `Sandbox` CRD's schema and the field-by-field strictness proof of
//! `agentc_conformance::k8s`; a table pins each rule, and a property test covers generated
//! profiles.

use std::collections::BTreeSet;

use agentc_backend_k8s::{
    render, EgressMode, EgressPolicy, Object, ObjectKind, Options, PodSecurity, PodSecurityLevel,
    RenderError, Rendering,
};
use agentc_conformance::fixtures::{self, FixtureLaunch};
use agentc_conformance::k8s::{
    crd_schema, fixture_options, pod_security_problems, sandbox_schema, schema_problems, strictness,
};
use agentc_conformance::strategies::{self, VirtualSources};
use agentc_policy::Hinted;
use agentc_policy::{
    Action, AppArmor, Capability, ContainerSpec, Device, EnvValue, EnvVar, ExtraHost, HostTarget,
    LaunchKind, LaunchSpec, Mount, MountSource, Network, Origin, Protocol, PublishedPort, Tmpfs,
};
use proptest::prelude::*;
use serde_json::Value;

/// Everything a rendering must pass, whatever its input: Pod Security at its level, the
/// strictness proof, and for a Sandbox the CRD schema and the same pod spec as the Pod.
fn check_rendering(spec: &LaunchSpec, rendering: &Rendering, schema: &Value) -> Vec<String> {
    let mut problems = pod_security_problems(rendering);
    problems.extend(strictness(spec, rendering));
    for object in &rendering.objects {
        if let Object::Sandbox(_) = object {
            problems.extend(schema_problems(&object.to_json(), schema));
        }
    }
    problems
}

/// The same launch as a Sandbox: the same objects but the last, whose pod template is the
/// Pod's spec with the Pod's labels and annotations.
fn check_sandbox_matches_pod(pod: &Rendering, sandbox: &Rendering) -> Result<(), String> {
    let (Some(Object::Pod(pod_object)), Some(Object::Sandbox(sandbox_object))) =
        (pod.objects.last(), sandbox.objects.last())
    else {
        return Err("the workloads are not a Pod and a Sandbox".into());
    };
    let template = &sandbox_object.spec.pod_template;
    if Some(&template.spec) != pod_object.spec.as_ref()
        || Some(&template.metadata.labels) != pod_object.metadata.labels.as_ref()
        || pod_object.metadata.annotations.clone().unwrap_or_default()
            != template.metadata.annotations
        || sandbox_object.metadata != pod_object.metadata
    {
        return Err("the Sandbox's pod template differs from the Pod".into());
    }
    let count = pod.objects.len();
    if pod.objects[..count - 1] != sandbox.objects[..count - 1] || pod.notes != sandbox.notes {
        return Err("the objects around the workload differ".into());
    }
    Ok(())
}

fn snapshot(rendering: &Result<Rendering, agentc_backend_k8s::RenderErrors>) -> String {
    match rendering {
        Ok(rendering) => format!(
            "## objects\n{}\n## explain\n{}",
            rendering.to_yaml(),
            agentc_backend_k8s::explain(rendering)
        ),
        Err(errors) => format!("## refused\n{}\n", errors.with_hint()),
    }
}

#[test]
fn every_valid_fixture_renders_or_is_refused_by_field() {
    let schema = sandbox_schema();
    let (mut rendered, mut refused) = (0, 0);
    for path in fixtures::fixture_files("valid") {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let loaded = fixtures::load_fixture(&path).expect("valid fixture");
        for FixtureLaunch { label, inputs } in fixtures::launches(&loaded) {
            let launch = FixtureLaunch {
                label: label.clone(),
                inputs,
            };
            let spec = fixtures::resolve(&loaded, &launch).unwrap_or_else(|error| {
                panic!("{name} {label} should resolve:\n{}", error.with_hint())
            });
            let pod = render(&spec, &fixture_options(&loaded, ObjectKind::Pod));
            let sandbox = render(&spec, &fixture_options(&loaded, ObjectKind::Sandbox));
            match (&pod, &sandbox) {
                (Ok(pod), Ok(sandbox)) => {
                    rendered += 1;
                    for rendering in [pod, sandbox] {
                        let problems = check_rendering(&spec, rendering, &schema);
                        assert!(problems.is_empty(), "{name} {label}: {problems:#?}");
                    }
                    check_sandbox_matches_pod(pod, sandbox)
                        .unwrap_or_else(|problem| panic!("{name} {label}: {problem}"));
                }
                (Err(pod), Err(sandbox)) => {
                    refused += 1;
                    assert_eq!(pod, sandbox, "{name} {label}: both kinds refuse alike");
                    let text = pod.with_hint().to_string();
                    for error in &pod.0 {
                        assert!(
                            !error.field().is_empty(),
                            "{name} {label}: {}",
                            error.with_hint()
                        );
                        assert!(text.contains(error.field()), "{text}");
                        assert!(
                            error.with_hint().to_string().contains("hint: "),
                            "{}",
                            error.with_hint()
                        );
                    }
                }
                _ => panic!("{name} {label}: Pod and Sandbox disagree: {pod:?} / {sandbox:?}"),
            }
            insta::assert_snapshot!(format!("{name}__{label}"), snapshot(&pod));
        }
    }
    eprintln!("k8s fixtures: {rendered} launches rendered, {refused} refused by field");
    assert!(rendered >= 25, "only {rendered} fixture launches render");
    assert!(refused >= 10, "only {refused} fixture launches are refused");
}

/// Warm pools (issue 22): every fixture launch that renders as a Sandbox renders as a
/// `SandboxTemplate` (the Sandbox's pod template, unchanged), a `SandboxWarmPool` of its
/// replicas and a `SandboxClaim` of it, each accepted by its pinned CRD with unknown fields
/// refused, and the rendering passes Pod Security and the strictness proof.
#[test]
fn every_valid_fixture_renders_as_a_warm_pool_its_crds_accept() {
    let schemas = [
        (
            "SandboxTemplate",
            crd_schema("extensions.agents.x-k8s.io_sandboxtemplates.yaml"),
        ),
        (
            "SandboxWarmPool",
            crd_schema("extensions.agents.x-k8s.io_sandboxwarmpools.yaml"),
        ),
        (
            "SandboxClaim",
            crd_schema("extensions.agents.x-k8s.io_sandboxclaims.yaml"),
        ),
    ];
    let mut rendered = 0;
    for path in fixtures::fixture_files("valid") {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let loaded = fixtures::load_fixture(&path).expect("valid fixture");
        for launch in fixtures::launches(&loaded) {
            let label = launch.label.clone();
            let spec = fixtures::resolve(&loaded, &launch).unwrap_or_else(|error| {
                panic!("{name} {label} should resolve:\n{}", error.with_hint())
            });
            let Ok(sandbox) = render(&spec, &fixture_options(&loaded, ObjectKind::Sandbox)) else {
                continue;
            };
            let pool = render(
                &spec,
                &fixture_options(&loaded, ObjectKind::Pool { replicas: 3 }),
            )
            .unwrap_or_else(|errors| {
                panic!(
                    "{name} {label}: the pool is refused: {}",
                    errors.with_hint()
                )
            });
            rendered += 1;
            let mut problems = pod_security_problems(&pool);
            problems.extend(strictness(&spec, &pool));
            let count = sandbox.objects.len();
            assert_eq!(
                pool.objects[..count - 1],
                sandbox.objects[..count - 1],
                "{name} {label}: the objects around the workload differ"
            );
            let (
                Some(Object::Sandbox(workload)),
                [Object::SandboxTemplate(template), Object::SandboxWarmPool(warm), Object::SandboxClaim(claim)],
            ) = (sandbox.objects.last(), &pool.objects[count - 1..])
            else {
                panic!(
                    "{name} {label}: not a template, a pool and a claim: {:?}",
                    pool.objects
                );
            };
            assert_eq!(
                template.spec.pod_template, workload.spec.pod_template,
                "{name} {label}"
            );
            assert_eq!(warm.spec.replicas, 3);
            assert_eq!(
                warm.spec.sandbox_template_ref.name,
                template.metadata.name.clone().unwrap()
            );
            assert_eq!(
                claim.spec.warm_pool_ref.name,
                warm.metadata.name.clone().unwrap()
            );
            for object in &pool.objects[count - 1..] {
                let schema = &schemas
                    .iter()
                    .find(|(kind, _)| *kind == object.kind())
                    .unwrap()
                    .1;
                problems.extend(schema_problems(&object.to_json(), schema));
            }
            assert!(problems.is_empty(), "{name} {label}: {problems:#?}");
        }
    }
    assert!(
        rendered >= 25,
        "only {rendered} fixture launches render as a pool"
    );
}

// ---------------------------------------------------------------------------------------------
// The table: one rule per row, each at least as strict as Docker or refused by field.

fn spec_of(kind: LaunchKind, container: ContainerSpec) -> LaunchSpec {
    LaunchSpec {
        kind,
        profile: "table".to_string(),
        action: Action::Container(Box::new(container)),
        origins: Default::default(),
    }
}

/// A hardened custom sandbox as `resolve` makes one.
fn hardened() -> ContainerSpec {
    let mut container = ContainerSpec::empty("registry.example/sandbox:1");
    container.user = Some("1000:1000".to_string());
    container.read_only_root = true;
    container.no_new_privileges = true;
    container.cap_drop_all = true;
    container.tmpfs = vec![
        Tmpfs {
            target: "/tmp".into(),
            exec: false,
        },
        Tmpfs {
            target: "/run".into(),
            exec: false,
        },
    ];
    container.resources.memory_bytes = Some(4 << 30);
    container.resources.memory_swap_bytes = Some(4 << 30);
    container.resources.pids_limit = Some(512);
    container
        .labels
        .insert("io.agentc.profile".into(), "table".into());
    container
        .labels
        .insert("io.agentc.kind".into(), "sandbox".into());
    container
}

fn profile_origin(field: &str) -> Origin {
    Origin::Profile {
        field: field.to_string(),
        line: None,
        column: None,
    }
}

enum Expect {
    /// Renders, and records these note codes (among others).
    Renders(&'static [&'static str]),
    /// Refused, naming exactly these fields.
    Refused(&'static [&'static str]),
}

struct Row {
    name: &'static str,
    change: fn(&mut LaunchSpec, &mut Options),
    expect: Expect,
}

fn container(spec: &mut LaunchSpec) -> &mut ContainerSpec {
    match &mut spec.action {
        Action::Container(container) => container,
        Action::Build(_) => unreachable!("the table builds containers"),
    }
}

fn table() -> Vec<Row> {
    vec![
        Row {
            name: "the hardened sandbox",
            change: |_, _| {},
            expect: Expect::Renders(&["tmpfs-noexec", "pids-limit", "no-swap", "network-policy"]),
        },
        Row {
            name: "NET_BIND_SERVICE from the profile is restricted",
            change: |spec, _| {
                container(spec).cap_add.insert(Capability::NetBindService);
            },
            expect: Expect::Renders(&[]),
        },
        Row {
            name: "SYS_ADMIN from the profile is refused by field",
            change: |spec, _| {
                container(spec).cap_add.insert(Capability::SysAdmin);
                spec.origins.insert(
                    "cap_add.SYS_ADMIN".into(),
                    profile_origin("security.add_capabilities[0]"),
                );
            },
            expect: Expect::Refused(&["security.add_capabilities[0]"]),
        },
        Row {
            name: "CHOWN is refused at restricted",
            change: |spec, _| {
                container(spec).cap_add.insert(Capability::Chown);
            },
            expect: Expect::Refused(&["cap_add.CHOWN"]),
        },
        Row {
            name: "CHOWN renders at baseline, reported",
            change: |spec, options| {
                container(spec).cap_add.insert(Capability::Chown);
                options.pod_security = PodSecurity::at(PodSecurityLevel::Baseline);
            },
            expect: Expect::Renders(&["pod-security-baseline"]),
        },
        Row {
            name: "NET_ADMIN is refused even at baseline",
            change: |spec, options| {
                container(spec).cap_add.insert(Capability::NetAdmin);
                options.pod_security = PodSecurity::at(PodSecurityLevel::Baseline);
            },
            expect: Expect::Refused(&["cap_add.NET_ADMIN"]),
        },
        Row {
            name: "a preset's capabilities are not granted",
            change: |spec, _| {
                container(spec).cap_add.insert(Capability::NetAdmin);
                spec.origins.insert(
                    "cap_add.NET_ADMIN".into(),
                    Origin::Preset {
                        agent: "claude-code".into(),
                    },
                );
            },
            expect: Expect::Renders(&["preset-capabilities"]),
        },
        Row {
            name: "a seed launch is refused once, by its seed mount, not by the helper's root",
            change: |spec, _| {
                spec.kind = LaunchKind::Seed;
                let seed = container(spec);
                seed.user = Some("0:0".into());
                seed.cap_add.insert(Capability::Chown);
                seed.cap_add.insert(Capability::DacOverride);
                seed.mounts.push(Mount {
                    target: "/tmp/agent-seed".into(),
                    read_only: true,
                    source: MountSource::Bind {
                        path: "/profiles/files/seed.txt".into(),
                    },
                });
                spec.origins.insert(
                    "mounts./tmp/agent-seed".into(),
                    profile_origin("mounts[0].source"),
                );
            },
            expect: Expect::Refused(&["mounts[0].source"]),
        },
        Row {
            name: "a named user is refused",
            change: |spec, _| {
                container(spec).user = Some("agent".into());
                spec.origins
                    .insert("user".into(), profile_origin("image.user"));
            },
            expect: Expect::Refused(&["image.user"]),
        },
        Row {
            name: "uid 0 is refused",
            change: |spec, _| container(spec).user = Some("0:0".into()),
            expect: Expect::Refused(&["user"]),
        },
        Row {
            name: "no user keeps the image's, checked non-root by the kubelet",
            change: |spec, _| container(spec).user = None,
            expect: Expect::Renders(&["image-user"]),
        },
        Row {
            name: "a host bind is refused",
            change: |spec, _| {
                container(spec).mounts.push(Mount {
                    target: "/data".into(),
                    read_only: true,
                    source: MountSource::Bind {
                        path: "/srv/data".into(),
                    },
                });
                spec.origins
                    .insert("mounts./data".into(), profile_origin("mounts[0]"));
            },
            expect: Expect::Refused(&["mounts[0]"]),
        },
        Row {
            name: "the workspace without a claim is refused",
            change: |spec, _| {
                container(spec).mounts.push(Mount {
                    target: "/workspace/app".into(),
                    read_only: false,
                    source: MountSource::Bind {
                        path: "/home/dev/app".into(),
                    },
                });
                spec.origins.insert(
                    "mounts./workspace/app".into(),
                    Origin::Invocation {
                        input: "--workspace".into(),
                    },
                );
            },
            expect: Expect::Refused(&["workspace.mount"]),
        },
        Row {
            name: "the workspace with a claim renders, read-only kept",
            change: |spec, options| {
                container(spec).mounts.push(Mount {
                    target: "/workspace/app".into(),
                    read_only: true,
                    source: MountSource::Bind {
                        path: "/home/dev/app".into(),
                    },
                });
                spec.origins.insert(
                    "mounts./workspace/app".into(),
                    Origin::Invocation {
                        input: "--workspace".into(),
                    },
                );
                options.workspace_claim = Some("app-src".into());
            },
            expect: Expect::Renders(&["workspace-claim"]),
        },
        Row {
            name: "a named volume is a claim, its subpath kept",
            change: |spec, _| {
                container(spec).mounts.push(Mount {
                    target: "/home/agent".into(),
                    read_only: false,
                    source: MountSource::Volume {
                        name: "agent-home".into(),
                        subpath: Some("sub".into()),
                    },
                });
            },
            expect: Expect::Renders(&["named-volume"]),
        },
        Row {
            name: "a volume name that is no claim name is refused",
            change: |spec, _| {
                container(spec).mounts.push(Mount {
                    target: "/home/agent".into(),
                    read_only: false,
                    source: MountSource::Volume {
                        name: "Agent_Home".into(),
                        subpath: None,
                    },
                });
            },
            expect: Expect::Refused(&["mounts./home/agent"]),
        },
        Row {
            name: "a device is refused",
            change: |spec, _| {
                container(spec).devices.push(Device {
                    host_path: "/dev/fuse".into(),
                    container_path: "/dev/fuse".into(),
                    permissions: "rwm".into(),
                });
                spec.origins
                    .insert("devices./dev/fuse".into(), profile_origin("security.fuse"));
            },
            expect: Expect::Refused(&["security.fuse"]),
        },
        Row {
            name: "AppArmor unconfined is refused",
            change: |spec, _| container(spec).apparmor = Some(AppArmor::Unconfined),
            expect: Expect::Refused(&["apparmor"]),
        },
        Row {
            name: "the host gateway is refused",
            change: |spec, _| {
                container(spec).extra_hosts.push(ExtraHost {
                    host: "host.docker.internal".into(),
                    target: HostTarget::HostGateway,
                });
                spec.origins.insert(
                    "extra_hosts.host.docker.internal".into(),
                    profile_origin("network.host_gateway"),
                );
            },
            expect: Expect::Refused(&["network.host_gateway"]),
        },
        Row {
            name: "a literal extra host is a host alias",
            change: |spec, _| {
                container(spec).extra_hosts.push(ExtraHost {
                    host: "db.internal".into(),
                    target: HostTarget::Ip {
                        address: "192.0.2.10".parse().unwrap(),
                    },
                });
            },
            expect: Expect::Renders(&[]),
        },
        Row {
            name: "a writable root stays writable (as on Docker)",
            change: |spec, _| container(spec).read_only_root = false,
            expect: Expect::Renders(&[]),
        },
        Row {
            name: "Docker without no-new-privileges or cap-drop is rendered stricter",
            change: |spec, _| {
                container(spec).no_new_privileges = false;
                container(spec).cap_drop_all = false;
            },
            expect: Expect::Renders(&["no-new-privileges", "cap-drop-all"]),
        },
        Row {
            name: "swap beyond memory becomes none",
            change: |spec, _| container(spec).resources.memory_swap_bytes = Some(8 << 30),
            expect: Expect::Renders(&["swap"]),
        },
        Row {
            name: "cpus are rounded down to millicores",
            change: |spec, _| container(spec).resources.nano_cpus = Some(1_000_500_000),
            expect: Expect::Renders(&["cpus-rounded"]),
        },
        Row {
            name: "a cpu limit below a millicore is refused",
            change: |spec, _| container(spec).resources.nano_cpus = Some(999_999),
            expect: Expect::Refused(&["resources.nano_cpus"]),
        },
        Row {
            name: "a sized /dev/shm is a memory emptyDir",
            change: |spec, _| container(spec).resources.shm_size_bytes = Some(256 << 20),
            expect: Expect::Renders(&["shm"]),
        },
        Row {
            name: "no pids limit: no duty",
            change: |spec, _| container(spec).resources.pids_limit = None,
            expect: Expect::Renders(&[]),
        },
        Row {
            name: "an executable tmpfs loses nothing",
            change: |spec, _| {
                container(spec).tmpfs = vec![Tmpfs {
                    target: "/tmp".into(),
                    exec: true,
                }]
            },
            expect: Expect::Renders(&["tmpfs"]),
        },
        Row {
            name: "init is a shared process namespace",
            change: |spec, _| container(spec).init = true,
            expect: Expect::Renders(&["init"]),
        },
        Row {
            name: "an empty entrypoint is refused",
            change: |spec, _| container(spec).entrypoint = Some(String::new()),
            expect: Expect::Refused(&["entrypoint"]),
        },
        Row {
            name: "published ports are containerPorts reached by port-forward",
            change: |spec, _| {
                for (port, protocol) in [(8080, Protocol::Tcp), (53, Protocol::Udp)] {
                    container(spec).ports.push(PublishedPort {
                        container_port: port,
                        protocol,
                        host_ip: "0.0.0.0".parse().unwrap(),
                        host_port: Some(port),
                    });
                }
            },
            expect: Expect::Renders(&["published-port"]),
        },
        Row {
            name: "a secret is a secretKeyRef",
            change: |spec, _| {
                container(spec).env.push(EnvVar {
                    name: "API_KEY".into(),
                    value: EnvValue::Secret { required: true },
                })
            },
            expect: Expect::Renders(&["secret"]),
        },
        Row {
            name: "network none is a default-deny policy",
            change: |spec, _| container(spec).network = Network::None,
            expect: Expect::Renders(&["network-none"]),
        },
        Row {
            name: "a named network is a labelled peer group",
            change: |spec, _| container(spec).network = Network::Named { name: "lab".into() },
            expect: Expect::Renders(&["network-named"]),
        },
        Row {
            name: "unrestricted egress is public addresses only",
            change: |_, options| options.egress.mode = EgressMode::Unrestricted,
            expect: Expect::Renders(&["egress-unrestricted"]),
        },
        Row {
            name: "an allowlist needs the proxy image",
            change: |_, options| {
                options.egress.hosts = vec!["api.example.com".into()];
                options.egress_proxy_image = None;
            },
            expect: Expect::Refused(&["egress.hosts"]),
        },
        Row {
            name: "an allowlist runs the egress proxy",
            change: |_, options| {
                options.egress.hosts = vec!["api.example.com".into(), "*.example.org:8443".into()]
            },
            expect: Expect::Renders(&["egress-proxy", "egress-dns"]),
        },
        Row {
            name: "an allowlist with a fixed proxy address resolves only through the proxy",
            change: |_, options| {
                options.egress.hosts = vec!["api.example.com".into()];
                options.egress_proxy_ip = Some("10.96.0.53".parse().unwrap());
            },
            expect: Expect::Renders(&["egress-proxy", "egress-dns", "egress-proxy-ip"]),
        },
        Row {
            name: "an address in the allowlist reaches the proxy's argv and its NetworkPolicy",
            change: |_, options| {
                options.egress.hosts = vec!["api.example.com".into(), "10.0.0.1".into()]
            },
            expect: Expect::Renders(&["egress-proxy"]),
        },
        Row {
            name: "an address in another spelling is refused by index",
            change: |_, options| {
                options.egress.hosts = vec!["api.example.com".into(), "0x0a000001".into()]
            },
            expect: Expect::Refused(&["egress.hosts[1]"]),
        },
        Row {
            name: "the profile's own proxy clashes with the egress proxy",
            change: |spec, options| {
                options.egress.hosts = vec!["api.example.com".into()];
                container(spec).env.push(EnvVar {
                    name: "HTTPS_PROXY".into(),
                    value: EnvValue::Literal {
                        value: "http://corp:3128".into(),
                    },
                });
                spec.origins
                    .insert("env.HTTPS_PROXY".into(), profile_origin("proxy.https"));
            },
            expect: Expect::Refused(&["proxy.https"]),
        },
        Row {
            name: "an ssh gateway is refused",
            change: |_, options| options.egress.gateway = true,
            expect: Expect::Refused(&["egress.gateway_host"]),
        },
        Row {
            name: "a build is not a Kubernetes object",
            change: |spec, _| {
                spec.action = Action::Build(agentc_policy::BuildSpec {
                    tag: "x:1".into(),
                    context: "/ctx".into(),
                    dockerfile: None,
                    named_contexts: Default::default(),
                    build_args: Default::default(),
                    labels: Default::default(),
                })
            },
            expect: Expect::Refused(&["image.build_context"]),
        },
        Row {
            name: "invalid options are refused by option",
            change: |_, options| {
                options.namespace = Some("Agents".into());
                options.workspace_claim = Some("a_b".into());
                options.name = Some("9lives".into());
                options.egress_proxy_image = Some("-x".into());
            },
            expect: Expect::Refused(&[
                "--namespace",
                "--k8s-name",
                "--workspace-claim",
                "--egress-proxy-image",
            ]),
        },
    ]
}

#[test]
fn each_rule_renders_at_least_as_strict_or_is_refused_by_field() {
    let schema = sandbox_schema();
    for row in table() {
        for kind in [ObjectKind::Pod, ObjectKind::Sandbox] {
            let mut spec = spec_of(LaunchKind::Sandbox, hardened());
            let mut options = Options {
                kind,
                egress: EgressPolicy {
                    mode: EgressMode::Allowlist,
                    ..EgressPolicy::default()
                },
                egress_proxy_image: Some("registry.example/agentc:1".into()),
                ..Options::default()
            };
            (row.change)(&mut spec, &mut options);
            let result = render(&spec, &options);
            match (&row.expect, result) {
                (Expect::Renders(codes), Ok(rendering)) => {
                    let problems = check_rendering(&spec, &rendering, &schema);
                    assert!(problems.is_empty(), "{}: {problems:#?}", row.name);
                    for code in *codes {
                        assert!(
                            rendering.notes.has(code),
                            "{}: note {code} missing from {:#?}",
                            row.name,
                            rendering.notes
                        );
                    }
                }
                (Expect::Refused(fields), Err(errors)) => {
                    assert_eq!(
                        errors.fields(),
                        *fields,
                        "{}: {}",
                        row.name,
                        errors.with_hint()
                    );
                }
                (_, result) => panic!("{}: unexpected {result:#?}", row.name),
            }
        }
    }
}

#[test]
fn the_egress_proxy_is_restricted_and_reached_only_by_its_workload() {
    let mut options = Options {
        egress_proxy_image: Some("registry.example/agentc:1".into()),
        ..Options::default()
    };
    options.egress.hosts = vec!["api.example.com".into()];
    let rendering = render(&spec_of(LaunchKind::Sandbox, hardened()), &options).expect("renders");
    let kinds: Vec<(&str, &str)> = rendering
        .objects
        .iter()
        .map(|object| (object.kind(), object.name()))
        .collect();
    let name = "agentc-sandbox-table";
    let proxy = "agentc-sandbox-table-egress";
    assert_eq!(
        kinds,
        [
            ("NetworkPolicy", name),
            ("NetworkPolicy", proxy),
            ("Service", proxy),
            ("Pod", proxy),
            ("Pod", name),
        ]
    );
    let json = rendering.to_json();
    assert_eq!(json["apiVersion"], "v1");
    assert_eq!(json["kind"], "List");
    let items = json["items"].as_array().expect("items");
    let proxy_pod = &items[3]["spec"];
    assert_eq!(
        proxy_pod["containers"][0]["command"],
        serde_json::json!([
            "/usr/local/bin/agentc",
            "egress-proxy",
            "serve",
            "--listen=0.0.0.0:3128",
            "--dns=0.0.0.0:53",
            "--allow=api.example.com",
            "--audit-dir=/var/lib/agentc/egress-audit"
        ])
    );
    assert_eq!(proxy_pod["securityContext"]["runAsUser"], 65534);
    assert_eq!(
        proxy_pod["securityContext"]["sysctls"][0]["name"],
        "net.ipv4.ip_unprivileged_port_start"
    );
    // The workload may reach the proxy's pods and the cluster DNS, nothing else.
    let workload_egress = &items[0]["spec"]["egress"];
    assert_eq!(
        workload_egress[0]["to"][0]["podSelector"]["matchLabels"]["io.agentc.kind"],
        "egress-proxy"
    );
    assert_eq!(
        workload_egress[1]["to"][0]["podSelector"]["matchLabels"]["k8s-app"],
        "kube-dns"
    );
    assert_eq!(workload_egress.as_array().map(Vec::len), Some(2));
    // The proxy reaches public addresses and the cluster DNS, not the cluster's own ranges.
    let proxy_egress = &items[1]["spec"]["egress"];
    assert_eq!(
        proxy_egress.as_array().map(Vec::len),
        Some(2),
        "{proxy_egress}"
    );
    assert_eq!(proxy_egress[0]["to"][0]["ipBlock"]["cidr"], "0.0.0.0/0");
    assert!(
        proxy_egress[0]["to"][0]["ipBlock"]["except"]
            .as_array()
            .is_some_and(|ranges| ranges.contains(&"169.254.0.0/16".into())),
        "{proxy_egress}"
    );
    assert_eq!(
        proxy_egress[1]["to"][0]["podSelector"]["matchLabels"]["k8s-app"],
        "kube-dns"
    );
    // Only the workload may reach the proxy.
    assert_eq!(
        items[1]["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["io.agentc.name"],
        name
    );
    let env = &items[4]["spec"]["containers"][0]["env"];
    assert!(
        env.as_array()
            .is_some_and(|env| env.iter().any(|var| var["name"] == "HTTPS_PROXY"
                && var["value"] == format!("http://{proxy}:3128"))),
        "{env}"
    );
    // YAML: one document per object, in the same order.
    let yaml = rendering.to_yaml();
    assert_eq!(yaml.matches("---\n").count(), 5, "{yaml}");
    let documents: Vec<Value> = yaml
        .split("---\n")
        .filter(|doc| !doc.is_empty())
        .map(|doc| serde_yaml_ng::from_str(doc).expect("YAML document"))
        .collect();
    assert_eq!(&documents, items);
}

#[test]
fn a_fixed_proxy_address_is_the_only_resolver_and_the_cluster_dns_is_not_reachable() {
    let mut options = Options {
        egress_proxy_image: Some("registry.example/agentc:1".into()),
        egress_proxy_ip: Some("fd00::53".parse().unwrap()),
        ..Options::default()
    };
    options.egress.hosts = vec!["api.example.com".into()];
    let rendering = render(&spec_of(LaunchKind::Sandbox, hardened()), &options).expect("renders");
    let items = rendering.to_json()["items"].clone();
    assert_eq!(items[2]["kind"], "Service");
    assert_eq!(items[2]["spec"]["clusterIP"], "fd00::53");
    let pod = &items[4]["spec"];
    assert_eq!(pod["dnsPolicy"], "None");
    assert_eq!(
        pod["dnsConfig"],
        serde_json::json!({"nameservers": ["fd00::53"]})
    );
    let env = pod["containers"][0]["env"].as_array().expect("env");
    assert!(env
        .iter()
        .any(|var| var["name"] == "HTTP_PROXY" && var["value"] == "http://[fd00::53]:3128"));
    let egress = items[0]["spec"]["egress"].as_array().expect("egress rules");
    assert_eq!(egress.len(), 1, "only the proxy: {egress:?}");
    assert_eq!(
        egress[0]["to"][0]["podSelector"]["matchLabels"]["io.agentc.kind"],
        "egress-proxy"
    );
}

#[test]
fn notes_are_annotations_of_the_workload_and_its_pod_template() {
    let mut options = Options {
        kind: ObjectKind::Sandbox,
        ..Options::default()
    };
    options.egress.mode = EgressMode::Deny;
    let rendering = render(&spec_of(LaunchKind::Sandbox, hardened()), &options).expect("renders");
    let Some(Object::Sandbox(sandbox)) = rendering.objects.last() else {
        panic!("a Sandbox");
    };
    let annotations = &sandbox.spec.pod_template.metadata.annotations;
    let approximations: Vec<Value> =
        serde_json::from_str(&annotations[agentc_backend_k8s::ANNOTATION_APPROXIMATIONS])
            .expect("JSON");
    let duties: Vec<Value> =
        serde_json::from_str(&annotations[agentc_backend_k8s::ANNOTATION_CLUSTER_DUTIES])
            .expect("JSON");
    assert_eq!(approximations.len() + duties.len(), rendering.notes.0.len());
    assert!(duties.iter().any(|note| note["code"] == "pids-limit"));
    assert!(approximations
        .iter()
        .any(|note| note["code"] == "tmpfs-noexec" && note["weaker"] == true));
    assert_eq!(
        sandbox.metadata.annotations.as_ref(),
        Some(annotations),
        "the Sandbox object carries them too"
    );
}

// ---------------------------------------------------------------------------------------------
// The property: generated profiles, every launch, random renderer options.

/// The fields a generated profile may be refused for, each a rule of the renderer.
const REFUSABLE: &[&str] = &[
    "mounts",
    "configuration_mounts",
    "proxy.ca_file",
    "proxy.ca_dir",
    "proxy.http",
    "proxy.https",
    "proxy.no_proxy",
    "security.add_capabilities",
    "security.fuse",
    "network.host_gateway",
    "network.name",
    "AGENTC_NETWORK",
    "egress.gateway",
    "egress.hosts",
    "workspace.mount",
    "image.user",
    "image.build_context",
    "user",
    "cap_add.",
    "mounts.",
    "--seed-target",
    "decant.source_profiles",
    "resources.nano_cpus",
    "resources.cpus",
    "AGENTC_CPUS",
];

/// The spec and options without what the renderer refuses: host binds other than the
/// workspace, devices, AppArmor unconfined, capabilities beyond the level, the host gateway,
/// named users, the profile's proxy variables under an allowlist, an ssh gateway, host specs
/// the proxy cannot take, and volume names that are no claim names. What remains must render.
fn without_refused(spec: &LaunchSpec, options: &Options) -> (LaunchSpec, Options) {
    let mut spec = spec.clone();
    let mut options = options.clone();
    options.workspace_claim = Some("workspace".into());
    options.egress_proxy_image = Some("registry.example/agentc:1".into());
    options.egress.gateway = false;
    options.egress.hosts.retain(|host| host.single().is_ok());
    let origins = spec.origins.clone();
    let level = options.pod_security.level;
    let allowlist =
        options.egress.mode == EgressMode::Allowlist && !options.egress.hosts.is_empty();
    if let Action::Container(container) = &mut spec.action {
        // Keys held by the egress proxy are refused by the fields that bound them: without
        // them, no credential and no CA volume.
        if let Some(egress) = container.egress.as_mut() {
            egress.credentials.clear();
        }
        container
            .mounts
            .retain(|mount| mount.target != agentc_policy::CA_DIR_TARGET);
        container.mounts.retain(|mount| match &mount.source {
            MountSource::Bind { .. } => matches!(
                origins.get(&format!("mounts.{}", mount.target)),
                Some(Origin::Invocation { input }) if input == "--workspace"
            ),
            MountSource::Volume { .. } => true,
        });
        for mount in &mut container.mounts {
            if let MountSource::Volume { name, .. } = &mut mount.source {
                if !agentc_backend_k8s::is_dns1123_label(name) {
                    *name = agentc_backend_k8s::base_name(name);
                }
            }
        }
        container.devices.clear();
        container.apparmor = None;
        container.cap_add.retain(|capability| {
            matches!(
                origins.get(&format!("cap_add.{capability}")),
                Some(Origin::Preset { .. })
            ) || agentc_backend_k8s::pss::capability_allowed(level, capability.as_str())
        });
        container
            .extra_hosts
            .retain(|host| !matches!(host.target, HostTarget::HostGateway));
        let numeric = container.user.as_deref().is_some_and(|user| {
            user.split(':')
                .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
                && user
                    .split(':')
                    .next()
                    .and_then(|uid| uid.parse::<u32>().ok())
                    > Some(0)
        });
        if container.user.is_some() && !numeric {
            container.user = Some("1000:1000".into());
        }
        if allowlist {
            container.env.retain(|var| {
                !agentc_conformance::k8s::PROXY_VARIABLES.contains(&var.name.as_str())
            });
        }
    }
    (spec, options)
}

fn options_strategy() -> impl Strategy<Value = (ObjectKind, PodSecurityLevel, bool, bool)> {
    (
        prop_oneof![Just(ObjectKind::Pod), Just(ObjectKind::Sandbox)],
        prop_oneof![
            3 => Just(PodSecurityLevel::Restricted),
            1 => Just(PodSecurityLevel::Baseline)
        ],
        any::<bool>(),
        prop::bool::weighted(0.8),
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn generated_profiles_render_at_least_as_strict_or_are_refused_by_field(
        case in strategies::profile_case(),
        (kind, level, claim, proxy) in options_strategy(),
    ) {
        let Ok(loaded) = agentc_policy::load("generated.toml", &case.toml) else {
            return Ok(());
        };
        let schema = sandbox_schema();
        for (label, inputs) in case.launches() {
            let Ok(spec) = agentc_policy::resolve(&loaded, &inputs, &VirtualSources) else {
                continue;
            };
            let options = Options {
                kind,
                namespace: Some("agents".into()),
                name: None,
                workspace_claim: claim.then(|| "workspace".to_string()),
                pod_security: PodSecurity::at(level),
                egress_proxy_image: proxy.then(|| "registry.example/agentc:1".to_string()),
                egress_proxy_ip: None,
                egress: EgressPolicy::from_profile(&loaded),
                runtime_classes: Default::default(),
                // What `agentc render` reads of a profile's CA (the sources are virtual).
                upstream_ca: [("ca.pem".to_string(), "-----BEGIN CERTIFICATE-----\n".to_string())]
                    .into(),
            };
            match render(&spec, &options) {
                Ok(rendering) => {
                    prop_assert_ne!(spec.kind, LaunchKind::Seed, "{}: a seed renders", label);
                    let problems = check_rendering(&spec, &rendering, &schema);
                    prop_assert!(problems.is_empty(), "{label}: {problems:#?}\n{}", case.toml);
                }
                Err(errors) => {
                    // A build and a seed are refused whole; anything else renders without
                    // the fields refused.
                    let whole = matches!(spec.action, Action::Build(_)) || spec.kind == LaunchKind::Seed;
                    if !whole {
                        let (spec, options) = without_refused(&spec, &options);
                        match render(&spec, &options) {
                            Ok(rendering) => {
                                let problems = check_rendering(&spec, &rendering, &schema);
                                prop_assert!(problems.is_empty(), "{label} without the refused: {problems:#?}\n{}", case.toml);
                            }
                            Err(errors) => prop_assert!(false, "{label} without the refused still refuses: {}\n{}", errors.with_hint(), case.toml),
                        }
                    }
                    let fields: BTreeSet<&str> = errors.fields().into_iter().collect();
                    for field in fields {
                        prop_assert!(
                            REFUSABLE.iter().any(|prefix| field.starts_with(prefix)),
                            "{label}: unexpected refusal of {field}: {}\n{}",
                            errors.with_hint(),
                            case.toml
                        );
                    }
                    for error in &errors.0 {
                        prop_assert!(
                            !matches!(error, RenderError::InvalidName { field, .. } if field.starts_with("--")),
                            "valid options are accepted: {}",
                            error.with_hint()
                        );
                    }
                }
            }
        }
    }
}

/// A key the egress proxy holds: the proxy Pod reads it from the Secret and gets its
/// placeholder; the sandbox Pod holds only the placeholder (no `secretKeyRef` for it), and its
/// init container fetches the launch CA from the proxy's Service into the read-only mount.
#[test]
fn a_held_key_is_the_proxy_pods_and_the_sandbox_pod_fetches_the_launch_ca() {
    let path = fixtures::fixture_files("valid")
        .into_iter()
        .find(|path| {
            path.file_stem()
                .is_some_and(|stem| stem == "claude-provider")
        })
        .expect("the claude-provider fixture");
    let loaded = fixtures::load_fixture(&path).expect("valid fixture");
    let launch = fixtures::launches(&loaded).remove(0);
    let spec = fixtures::resolve(&loaded, &launch).expect("resolves");
    let rendering = render(&spec, &fixture_options(&loaded, ObjectKind::Pod)).expect("renders");
    let pods: Vec<_> = rendering
        .objects
        .iter()
        .filter_map(|object| match object {
            Object::Pod(pod) => Some(pod.spec.clone().unwrap()),
            _ => None,
        })
        .collect();
    let [proxy, sandbox] = &pods[..] else {
        panic!("a proxy Pod and a sandbox Pod: {pods:#?}")
    };
    let env = |container: &agentc_backend_k8s::k8s_openapi::api::core::v1::Container| {
        container.env.clone().unwrap_or_default()
    };
    let proxy_env = env(&proxy.containers[0]);
    let key = proxy_env
        .iter()
        .find(|var| var.name == "ANTHROPIC_API_KEY")
        .expect("the proxy holds the key");
    let from = key
        .value_from
        .as_ref()
        .and_then(|from| from.secret_key_ref.as_ref());
    assert_eq!(
        from.map(|r| r.name.as_str()),
        Some("agentc-claude-provider")
    );
    assert!(key.value.is_none());
    let placeholder = proxy_env
        .iter()
        .find(|var| var.name == "AGENTC_PLACEHOLDER_ANTHROPIC_API_KEY")
        .and_then(|var| var.value.clone())
        .expect("the proxy knows the placeholder");
    let command = proxy.containers[0].command.clone().unwrap();
    assert!(command
        .iter()
        .any(|word| word.starts_with("--credential=name=anthropic,")));
    assert!(command.contains(&"--ca-dir=/etc/agentc/egress-ca".to_string()));

    let workload_env = env(&sandbox.containers[0]);
    assert!(
        workload_env.iter().all(|var| var.value_from.is_none()),
        "{workload_env:#?}"
    );
    let held = workload_env
        .iter()
        .find(|var| var.name == "ANTHROPIC_API_KEY")
        .unwrap();
    assert_eq!(held.value.as_deref(), Some(placeholder.as_str()));
    let init = sandbox.init_containers.clone().unwrap_or_default();
    let [fetch] = &init[..] else {
        panic!("one init container: {init:#?}")
    };
    assert_eq!(fetch.name, agentc_backend_k8s::CA_INIT_CONTAINER);
    let fetch_command = fetch.command.clone().unwrap();
    assert_eq!(
        &fetch_command[1..],
        [
            "egress-proxy",
            "fetch-ca",
            "--proxy=agentc-run-claude-provider-egress:3128",
            "--dir=/etc/agentc/egress-ca"
        ]
    );
    let mount = sandbox.containers[0]
        .volume_mounts
        .iter()
        .flatten()
        .find(|mount| mount.mount_path == "/etc/agentc/egress-ca")
        .expect("the CA mount");
    assert_eq!(mount.read_only, Some(true));
    assert_eq!(mount.name, agentc_backend_k8s::CA_VOLUME);
}

/// An isolation floor without a runtime named becomes its tier's RuntimeClass
/// (`--runtime-class TIER=NAME`, defaults gvisor=gvisor and microvm=kata); a tier without a
/// mapping is refused at the profile's field.
#[test]
fn an_isolation_floor_maps_to_its_runtime_class_or_is_refused_by_field() {
    let toml = |isolation: &str| {
        format!(
            "name = \"floor\"\nagent = \"custom\"\n[image]\nref = \"busybox:1.36\"\n\
             [egress]\nmode = \"deny\"\n[security]\nisolation = {isolation}\n"
        )
    };
    let class = |isolation: &str, overrides: &[&str]| {
        let text = toml(isolation);
        let loaded = agentc_policy::load("floor.toml", &text).expect("the profile loads");
        let launch = fixtures::launches(&loaded).remove(0);
        let spec = fixtures::resolve(&loaded, &launch).expect("resolves");
        let mut options = fixture_options(&loaded, ObjectKind::Pod);
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        options.runtime_classes =
            agentc_backend_k8s::RuntimeClasses::with_overrides(&overrides).expect("overrides");
        render(&spec, &options).map(|rendering| {
            rendering.objects.iter().find_map(|object| match object {
                Object::Pod(pod) => pod.spec.clone().unwrap().runtime_class_name,
                _ => None,
            })
        })
    };
    let gvisor = "{ min = \"gvisor\" }";
    assert_eq!(class(gvisor, &[]).unwrap().as_deref(), Some("gvisor"));
    assert_eq!(
        class(gvisor, &["gvisor=runsc"]).unwrap().as_deref(),
        Some("runsc")
    );
    let strongest = "{ min = \"container\", prefer = \"strongest\" }";
    assert_eq!(class(strongest, &[]).unwrap().as_deref(), Some("kata"));
    assert_eq!(
        class(strongest, &["microvm="]).unwrap().as_deref(),
        Some("gvisor")
    );
    assert_eq!(class("{ min = \"container\" }", &[]).unwrap(), None);
    let errors = class("{ min = \"microvm\" }", &["microvm="])
        .expect_err("no RuntimeClass for microvm")
        .with_hint()
        .to_string();
    assert!(errors.contains("security.isolation"), "{errors}");
    assert!(errors.contains("--runtime-class microvm=NAME"), "{errors}");
    assert!(agentc_backend_k8s::RuntimeClasses::with_overrides(&["kata=kata".into()]).is_err());
    assert!(agentc_backend_k8s::RuntimeClasses::with_overrides(&["gvisor".into()]).is_err());
}

/// The profile's CA for the egress proxy's upstreams (an `https://` upstream with `ca_dir`, and
/// the hosts the proxy holds keys for with `ca_file`): a ConfigMap of the rendering, mounted
/// read-only into the proxy Pod and read by one `--upstream-ca`; refused by field without its
/// certificates or with a file name a ConfigMap cannot hold (issue 19).
#[test]
fn the_upstreams_ca_is_a_config_map_of_the_rendering_mounted_into_the_proxy_pod() {
    for (fixture, field) in [
        ("opencode-proxy-ca-dir", "proxy.ca_dir"),
        ("claude-credentials", "proxy.ca_file"),
    ] {
        let path = fixtures::fixtures_dir().join(format!("valid/{fixture}.toml"));
        let loaded = fixtures::load_fixture(&path).expect("loads");
        let launch = fixtures::launches(&loaded).remove(0);
        let spec = fixtures::resolve(&loaded, &launch).expect("resolves");
        let options = fixture_options(&loaded, ObjectKind::Pod);
        assert!(!options.upstream_ca.is_empty(), "{fixture}: no CA read");
        let rendering =
            render(&spec, &options).unwrap_or_else(|e| panic!("{fixture}: {}", e.with_hint()));
        let json = rendering.to_json();
        let items = json["items"].as_array().unwrap();
        let map = items
            .iter()
            .find(|item| item["kind"] == "ConfigMap")
            .unwrap_or_else(|| panic!("{fixture}: no ConfigMap"));
        let name = map["metadata"]["name"].as_str().unwrap();
        assert!(name.ends_with("-egress-upstream-ca"), "{name}");
        for (file, pem) in &options.upstream_ca {
            assert_eq!(
                map["data"][file].as_str(),
                Some(pem.as_str()),
                "{fixture}: {file}"
            );
        }
        assert_eq!(map["immutable"], true);
        let proxy = items
            .iter()
            .find(|item| {
                item["kind"] == "Pod"
                    && item["metadata"]["labels"]["io.agentc.kind"] == "egress-proxy"
            })
            .expect("the proxy Pod");
        let container = &proxy["spec"]["containers"][0];
        let command: Vec<&str> = container["command"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let ca_arg = format!("--upstream-ca={}", agentc_policy::UPSTREAM_CA_TARGET);
        assert_eq!(
            command.iter().filter(|word| **word == ca_arg).count(),
            1,
            "{fixture}: {command:?}"
        );
        let mount = container["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["mountPath"] == agentc_policy::UPSTREAM_CA_TARGET)
            .expect("the CA's mount");
        assert_eq!(mount["readOnly"], true);
        let volume = proxy["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == mount["name"])
            .expect("the CA's volume");
        assert_eq!(volume["configMap"]["name"], name);
        // Nothing else mounts it: the workload's pod trusts what the proxy hands it.
        let workload_mounts = items
            .iter()
            .filter(|item| {
                item["kind"] == "Pod" && item["metadata"]["name"] != proxy["metadata"]["name"]
            })
            .flat_map(|pod| {
                pod["spec"]["volumes"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|v| v["configMap"]["name"] == name)
            .count();
        assert_eq!(workload_mounts, 0, "{fixture}");
        // Without the certificates, or with a name a ConfigMap cannot hold: refused by field.
        for upstream_ca in [
            agentc_backend_k8s::CaFiles::new(),
            [("bad name.pem".to_string(), "x".to_string())].into(),
        ] {
            let errors = render(
                &spec,
                &Options {
                    upstream_ca,
                    ..options.clone()
                },
            )
            .expect_err("refused");
            let fields: Vec<&str> = errors.0.iter().map(RenderError::field).collect();
            assert_eq!(fields, [field], "{fixture}: {}", errors.with_hint());
        }
    }
}
