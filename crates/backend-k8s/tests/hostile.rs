//! Any spec and any options: the renderer returns objects or refusals, never panics; every
//! rendering's pods pass Pod Security at their level; the YAML stream reads back as exactly the
//! JSON list (no string turns into a number, a boolean or null on the way).

use std::collections::{BTreeMap, BTreeSet};

use agentc_backend_k8s::pss::{self, PodSecurityLevel};
use agentc_backend_k8s::{render, EgressMode, EgressPolicy, ObjectKind, Options, PodSecurity};
use agentc_policy::{
    Action, AppArmor, Capability, ContainerSpec, Device, EnvValue, EnvVar, ExtraHost, Hinted,
    HostTarget, LaunchKind, LaunchSpec, LogConfig, Mount, MountSource, Network, Origin, Protocol,
    PublishedPort, Resources, Tmpfs,
};
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;

/// Text that is hard for YAML and for Kubernetes names: YAML keywords and numbers, unicode,
/// control characters, separators.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        prop::sample::select(vec![
            "yes", "no", "on", "off", "true", "null", "~", "1e3", "0o17", "0x1F", ".inf", "-",
            "---", "...", "#x", "a: b", "- a", "*ref", "&anchor", "!tag", "@", "`", "%", "'", "\"",
            "\\", "\n", "\t", " lead", "trail ", "é", "日本", "\u{0}", "\u{feff}",
        ])
        .prop_map(str::to_string),
        "[a-z0-9._/-]{1,80}",
        any::<String>(),
    ]
}

/// The documents of a YAML stream: each starts with a `---` line at column 0, which no
/// scalar's content can be (block scalars are indented, others quoted).
fn documents(yaml: &str) -> Result<Vec<serde_json::Value>, TestCaseError> {
    if !yaml.starts_with("---\n") {
        return Err(TestCaseError::fail(format!("no leading ---: {yaml}")));
    }
    yaml[4..]
        .split("\n---\n")
        .map(serde_yaml_ng::from_str)
        .collect::<Result<_, _>>()
        .map_err(|error| TestCaseError::fail(format!("{error}\n{yaml}")))
}

fn path() -> impl Strategy<Value = String> {
    prop_oneof![text().prop_map(|text| format!("/{text}")), text()]
}

fn capability() -> impl Strategy<Value = Capability> {
    prop::sample::select(Capability::ALL.to_vec())
}

fn origin() -> impl Strategy<Value = Origin> {
    prop_oneof![
        Just(Origin::Default),
        text().prop_map(|agent| Origin::Preset { agent }),
        text().prop_map(|field| Origin::Profile {
            field,
            line: Some(1),
            column: None
        }),
        text().prop_map(|input| Origin::Invocation { input }),
        Just(Origin::Invocation {
            input: "--workspace".into()
        }),
    ]
}

fn container() -> impl Strategy<Value = ContainerSpec> {
    let process = (
        text(),
        option::of(text()),
        vec(text(), 0..4),
        option::of(prop_oneof![
            text(),
            "[0-9]{1,10}(:[0-9]{1,10})?".prop_map(String::from)
        ]),
        option::of(path()),
        any::<[bool; 5]>(),
    );
    let files = (
        vec(
            (
                path(),
                any::<bool>(),
                any::<bool>(),
                text(),
                option::of(text()),
            ),
            0..4,
        ),
        vec((path(), any::<bool>()), 0..3),
        vec((path(), path()), 0..2),
        any::<[bool; 3]>(),
        option::of(Just(AppArmor::Unconfined)),
        prop::collection::btree_set(capability(), 0..4),
    );
    let network = (
        prop_oneof![
            Just(Network::Default),
            Just(Network::None),
            text().prop_map(|name| Network::Named { name })
        ],
        vec((text(), option::of(any::<std::net::IpAddr>())), 0..3),
        vec(
            (
                any::<u16>(),
                any::<bool>(),
                any::<std::net::IpAddr>(),
                option::of(any::<u16>()),
            ),
            0..3,
        ),
    );
    let rest = (
        [
            option::of(any::<u64>()),
            option::of(any::<u64>()),
            option::of(any::<u64>()),
            option::of(any::<u64>()),
        ],
        option::of(any::<u32>()),
        option::of((text(), btree_map(text(), text(), 0..3))),
        btree_map(text(), text(), 0..4),
        vec((text(), option::of(text())), 0..4),
    );
    (process, files, network, rest).prop_map(
        |(
            (image, entrypoint, command, user, working_dir, flags),
            (mounts, tmpfs, devices, security, apparmor, cap_add),
            (network, extra_hosts, ports),
            ([memory, swap, shm, cpus], pids, log, labels, env),
        )| {
            let mut container = ContainerSpec::empty(image);
            container.entrypoint = entrypoint;
            container.command = command;
            container.user = user;
            container.working_dir = working_dir;
            let [init, interactive, tty, auto_remove, detach] = flags;
            container.init = init;
            container.interactive = interactive;
            container.tty = tty;
            container.auto_remove = auto_remove;
            container.detach = detach;
            container.mounts = mounts
                .into_iter()
                .map(|(target, read_only, bind, name, subpath)| Mount {
                    target,
                    read_only,
                    source: if bind {
                        MountSource::Bind { path: name }
                    } else {
                        MountSource::Volume { name, subpath }
                    },
                })
                .collect();
            container.tmpfs = tmpfs
                .into_iter()
                .map(|(target, exec)| Tmpfs { target, exec })
                .collect();
            container.devices = devices
                .into_iter()
                .map(|(host_path, container_path)| Device {
                    host_path,
                    container_path,
                    permissions: "rwm".into(),
                })
                .collect();
            let [read_only_root, no_new_privileges, cap_drop_all] = security;
            container.read_only_root = read_only_root;
            container.no_new_privileges = no_new_privileges;
            container.cap_drop_all = cap_drop_all;
            container.apparmor = apparmor;
            container.cap_add = cap_add;
            container.network = network;
            container.extra_hosts = extra_hosts
                .into_iter()
                .map(|(host, address)| ExtraHost {
                    host,
                    target: match address {
                        Some(address) => HostTarget::Ip { address },
                        None => HostTarget::HostGateway,
                    },
                })
                .collect();
            container.ports = ports
                .into_iter()
                .map(|(container_port, udp, host_ip, host_port)| PublishedPort {
                    container_port,
                    protocol: if udp { Protocol::Udp } else { Protocol::Tcp },
                    host_ip,
                    host_port,
                })
                .collect();
            container.resources = Resources {
                memory_bytes: memory,
                memory_swap_bytes: swap,
                shm_size_bytes: shm,
                nano_cpus: cpus,
                pids_limit: pids,
            };
            container.log = log.map(|(driver, options)| LogConfig { driver, options });
            container.labels = labels;
            container.env = env
                .into_iter()
                .map(|(name, value)| EnvVar {
                    name,
                    value: match value {
                        Some(value) => EnvValue::Literal { value },
                        None => EnvValue::Secret { required: true },
                    },
                })
                .collect();
            container
        },
    )
}

fn spec() -> impl Strategy<Value = LaunchSpec> {
    (
        prop::sample::select(vec![
            LaunchKind::Run,
            LaunchKind::Seed,
            LaunchKind::Decant,
            LaunchKind::Sandbox,
        ]),
        text(),
        container(),
        btree_map(text(), origin(), 0..6),
    )
        .prop_map(|(kind, profile, container, mut origins)| {
            // Point some origins at the spec's own keys, as resolve does.
            let keys: Vec<String> = container
                .mounts
                .iter()
                .map(|mount| format!("mounts.{}", mount.target))
                .chain(container.cap_add.iter().map(|cap| format!("cap_add.{cap}")))
                .collect();
            let values: Vec<Origin> = origins.values().cloned().collect();
            for (key, origin) in keys.into_iter().zip(values) {
                origins.insert(key, origin);
            }
            LaunchSpec {
                kind,
                profile,
                action: Action::Container(Box::new(container)),
                origins: origins.into_iter().collect::<BTreeMap<_, _>>(),
            }
        })
}

fn options() -> impl Strategy<Value = Options> {
    (
        any::<bool>(),
        option::of(text()),
        option::of(text()),
        option::of(text()),
        any::<bool>(),
        option::of(text()),
        option::of(any::<std::net::IpAddr>()),
        (
            prop::sample::select(vec![
                EgressMode::Deny,
                EgressMode::Allowlist,
                EgressMode::Unrestricted,
            ]),
            vec(text(), 0..4),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(sandbox, namespace, name, claim, baseline, image, ip, (mode, hosts, gateway))| {
                Options {
                    kind: if sandbox {
                        ObjectKind::Sandbox
                    } else {
                        ObjectKind::Pod
                    },
                    namespace,
                    name,
                    workspace_claim: claim,
                    pod_security: PodSecurity::at(if baseline {
                        PodSecurityLevel::Baseline
                    } else {
                        PodSecurityLevel::Restricted
                    }),
                    egress_proxy_image: image,
                    egress_proxy_ip: ip,
                    runtime_classes: Default::default(),
                    upstream_ca: Default::default(),
                    egress: EgressPolicy {
                        mode,
                        // A hostile string as the Docker network's name, in the note.
                        outside_network: hosts.first().cloned(),
                        hosts: agentc_policy::EgressHost::all(&hosts),
                        gateway,
                        allow_cidrs: Vec::new(),
                        wildcard_names_per_minute: None,
                        allow_ech: Vec::new(),
                        endpoints: Vec::new(),
                        upstream: None,
                    },
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_spec_renders_or_is_refused_without_panicking(spec in spec(), options in options()) {
        match render(&spec, &options) {
            Ok(rendering) => {
                let empty = BTreeMap::new();
                for pod in rendering.pods() {
                    let violations = pss::check(
                        rendering.pod_security.level,
                        pod.annotations.unwrap_or(&empty),
                        pod.spec,
                    );
                    prop_assert!(violations.is_empty(), "{violations:#?}");
                }
                let json = rendering.to_json();
                let items = json["items"].as_array().cloned().unwrap_or_default();
                let yaml = rendering.to_yaml();
                let documents = documents(&yaml)?;
                prop_assert_eq!(documents, items);
                let _ = agentc_backend_k8s::explain(&rendering);
            }
            Err(errors) => {
                prop_assert!(!errors.0.is_empty());
                let fields: BTreeSet<&str> = errors.fields().into_iter().collect();
                prop_assert!(!fields.is_empty());
                let _ = errors.with_hint().to_string();
            }
        }
    }
}

/// A launch every part of which renders, with hostile text wherever text reaches the objects
/// verbatim: image, entrypoint, arguments, working directory, environment, labels, mount
/// targets, tmpfs targets, volume subpaths, profile name.
fn renderable() -> impl Strategy<Value = (LaunchSpec, Options)> {
    (
        (
            text(),
            text().prop_filter("an entrypoint", |text| !text.is_empty()),
        ),
        (vec(text(), 0..4), option::of(path())),
        vec((text(), text()), 0..4),
        btree_map(text(), text(), 0..4),
        vec((path(), any::<bool>(), option::of(text())), 0..3),
        vec((path(), any::<bool>()), 0..3),
        (text(), any::<bool>()),
    )
        .prop_map(
            |(
                (image, entrypoint),
                (command, working_dir),
                env,
                labels,
                volumes,
                tmpfs,
                (profile, sandbox),
            )| {
                let mut container = ContainerSpec::empty(image);
                container.user = Some("1000:1000".into());
                container.entrypoint = Some(entrypoint);
                container.command = command;
                container.working_dir = working_dir;
                container.env = env
                    .into_iter()
                    .map(|(name, value)| EnvVar {
                        name,
                        value: EnvValue::Literal { value },
                    })
                    .collect();
                container.labels = labels
                    .into_iter()
                    .map(|(key, value)| (format!("example.com/k{}", key.len()), value))
                    .collect();
                container.mounts = volumes
                    .into_iter()
                    .enumerate()
                    .map(|(index, (target, read_only, subpath))| Mount {
                        target,
                        read_only,
                        source: MountSource::Volume {
                            name: format!("volume-{index}"),
                            subpath,
                        },
                    })
                    .collect();
                container.tmpfs = tmpfs
                    .into_iter()
                    .map(|(target, exec)| Tmpfs { target, exec })
                    .collect();
                let spec = LaunchSpec {
                    kind: LaunchKind::Sandbox,
                    profile,
                    action: Action::Container(Box::new(container)),
                    origins: BTreeMap::new(),
                };
                let options = Options {
                    kind: if sandbox {
                        ObjectKind::Sandbox
                    } else {
                        ObjectKind::Pod
                    },
                    egress_proxy_image: Some("registry.example/agentc:1".into()),
                    egress: EgressPolicy {
                        mode: EgressMode::Allowlist,
                        hosts: vec!["api.example.com".into(), "*.example.org:8443".into()],
                        ..EgressPolicy::default()
                    },
                    ..Options::default()
                };
                (spec, options)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn hostile_text_survives_both_formats((spec, options) in renderable()) {
        let rendering = render(&spec, &options)
            .map_err(|errors| TestCaseError::fail(errors.with_hint().to_string()))?;
        let json = rendering.to_json();
        let items = json["items"].as_array().cloned().unwrap_or_default();
        let yaml = rendering.to_yaml();
        let documents = documents(&yaml)?;
        prop_assert_eq!(documents, items);
    }
}
