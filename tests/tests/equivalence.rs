//! Both backends say the same thing: for hand-built specs covering every [`ContainerSpec`]
//! field, the body the real docker CLI sends for the CLI backend's argv and the API backend's
//! body have the same canonical form (see `agentc_conformance::canonical`).
//!
//! Needs the docker CLI (not a daemon); skips with a printed reason without it, fails instead
//! when `AGENTC_REQUIRE_DOCKER=1`.

use std::collections::BTreeMap;
use std::net::IpAddr;

use agentc_conformance::referee::{require_docker_cli, Referee, Verdict};
use agentc_policy::{
    Action, AppArmor, Capability, ContainerSpec, Device, EnvValue, EnvVar, ExposedPort, ExtraHost,
    HostTarget, LaunchKind, LaunchSpec, LogConfig, Mount, MountSource, Network, Protocol,
    PublishedPort, Resources, Tmpfs,
};
use serde_json::json;

fn launch(container: ContainerSpec) -> LaunchSpec {
    LaunchSpec {
        kind: LaunchKind::Run,
        profile: "equivalence".into(),
        action: Action::Container(Box::new(container)),
        origins: BTreeMap::new(),
    }
}

/// The smallest launch: an image and nothing else.
fn minimal() -> ContainerSpec {
    ContainerSpec::empty("busybox:test")
}

fn literal(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: EnvValue::Literal {
            value: value.into(),
        },
    }
}

fn bind(path: &str, target: &str, read_only: bool) -> Mount {
    Mount {
        target: target.into(),
        read_only,
        source: MountSource::Bind { path: path.into() },
    }
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect("test address")
}

/// Every field set, with hard values: odd paths, odd env values, edge resources, IPv6.
fn everything() -> ContainerSpec {
    ContainerSpec {
        name: Some("agentc-equivalence_1.x".into()),
        image: "registry.example:5000/team/agent:1.2@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef".into(),
        entrypoint: Some("/usr/bin/env -S bash".into()),
        command: vec![
            "--flag".into(),
            "-".into(),
            "a b".into(),
            "x=y,z:w".into(),
            "'\"$HOME`".into(),
            "héllo 🚀".into(),
            String::new(),
        ],
        user: Some("1000:1000".into()),
        working_dir: Some("/workspace/my app/ü".into()),
        init: true,
        env: vec![
            literal("PLAIN", "1"),
            literal("WITH_EQUALS", "a=b=c"),
            literal("MULTILINE", "line one\nline two\n"),
            literal("EMPTY", ""),
            literal("QUOTES", "'\"`$(x)"),
            literal("UNICODE", "ünïcødé ✓"),
            literal("LEADING_DASH", "--not-a-flag"),
            EnvVar {
                name: "AGENTC_EQ_SECRET_UNSET".into(),
                value: EnvValue::Secret { required: false },
            },
        ],
        mounts: vec![
            bind("/workspace/my app", "/workspace/my app", false),
            bind("/tmp/a,b", "/mnt/comma,target", true),
            bind("/tmp/quote\"d", "/mnt/quote\"d", true),
            bind("/tmp/eq=ual", "/mnt/eq=ual", false),
            bind("/tmp/co:lon", "/mnt/co:lon", true),
            bind("/tmp/-dash", "/mnt/-dash", false),
            bind("/tmp/ünï cødé", "/mnt/ünï cødé", true),
            Mount {
                target: "/home/agent".into(),
                read_only: false,
                source: MountSource::Volume {
                    name: "agentc-home_equivalence".into(),
                    subpath: None,
                },
            },
            Mount {
                target: "/home/agent/.config/sub".into(),
                read_only: true,
                source: MountSource::Volume {
                    name: "agentc-shared".into(),
                    subpath: Some("profiles/equivalence".into()),
                },
            },
        ],
        tmpfs: vec![
            Tmpfs {
                target: "/tmp".into(),
                exec: false,
            },
            Tmpfs {
                target: "/run/exec".into(),
                exec: true,
            },
        ],
        read_only_root: true,
        no_new_privileges: true,
        apparmor: Some(AppArmor::Unconfined),
        cap_drop_all: true,
        cap_add: [Capability::NetAdmin, Capability::Chown, Capability::SysPtrace]
            .into_iter()
            .collect(),
        network: Network::Named {
            name: "agentc-egress".into(),
        },
        extra_hosts: vec![
            ExtraHost {
                host: "host.docker.internal".into(),
                target: HostTarget::HostGateway,
            },
            ExtraHost {
                host: "v4.example".into(),
                target: HostTarget::Ip {
                    address: ip("10.1.2.3"),
                },
            },
            ExtraHost {
                host: "v6.example".into(),
                target: HostTarget::Ip {
                    address: ip("2001:db8::1"),
                },
            },
        ],
        ports: vec![
            PublishedPort {
                container_port: 8080,
                protocol: Protocol::Tcp,
                host_ip: ip("127.0.0.1"),
                host_port: Some(18080),
            },
            PublishedPort {
                container_port: 8080,
                protocol: Protocol::Tcp,
                host_ip: ip("::1"),
                host_port: Some(18080),
            },
            PublishedPort {
                container_port: 53,
                protocol: Protocol::Udp,
                host_ip: ip("0.0.0.0"),
                host_port: None,
            },
            PublishedPort {
                container_port: 65535,
                protocol: Protocol::Tcp,
                host_ip: ip("::"),
                host_port: Some(1),
            },
        ],
        exposed_ports: vec![
            ExposedPort {
                container_port: 9090,
                protocol: Protocol::Tcp,
            },
            ExposedPort {
                container_port: 8080,
                protocol: Protocol::Tcp,
            },
            ExposedPort {
                container_port: 5353,
                protocol: Protocol::Udp,
            },
        ],
        network_aliases: vec!["everything".into(), "agentc.alias-2".into()],
        ipv4_address: Some("10.213.0.3".parse().unwrap()),
        dns: vec!["10.213.0.2".parse().unwrap(), "fd00::53".parse().unwrap()],
        sysctls: [("net.ipv4.ip_forward", "0"), ("net.ipv4.ip_unprivileged_port_start", "53")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        egress: None,
        resources: Resources {
            memory_bytes: Some(8 * 1024 * 1024 * 1024),
            memory_swap_bytes: Some(8 * 1024 * 1024 * 1024),
            shm_size_bytes: Some(1),
            nano_cpus: Some(1),
            pids_limit: Some(u32::MAX),
        },
        log: Some(LogConfig {
            driver: "json-file".into(),
            options: [
                ("max-size".to_string(), "50m".to_string()),
                ("max-file".to_string(), "3".to_string()),
                ("labels".to_string(), "a,b".to_string()),
            ]
            .into_iter()
            .collect(),
        }),
        devices: vec![
            Device {
                host_path: "/dev/fuse".into(),
                container_path: "/dev/fuse".into(),
                permissions: "rwm".into(),
            },
            Device {
                host_path: "/dev/null".into(),
                container_path: "/dev/my null".into(),
                permissions: "r".into(),
            },
        ],
        labels: [
            ("io.agentc.profile", "equivalence"),
            ("io.agentc.kind", "run"),
            ("with.equals", "a=b"),
            ("with.comma", "a,b"),
            ("empty", ""),
            ("unicode.ü", "✓ ok"),
            ("multi.line", "one\ntwo"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        runtime: Some("io.containerd.runsc.v1".into()),
        isolation: None,
        interactive: true,
        tty: true,
        auto_remove: true,
        restart: None,
        detach: false,
        held_secrets: Default::default(),
    }
}

/// Judges `spec` and fails with the differences and both canonical bodies.
fn assert_equivalent(referee: &Referee, spec: ContainerSpec) -> Verdict {
    let verdict = referee
        .judge(&launch(spec), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(verdict.is_equivalent(), "{}", verdict.explain());
    verdict
}

#[test]
fn minimal_spec_is_equivalent() {
    if !require_docker_cli("minimal_spec_is_equivalent") {
        return;
    }
    let referee = Referee::start().expect("start the referee");
    let verdict = assert_equivalent(&referee, minimal());
    assert_eq!(verdict.cli.body["Image"], json!("busybox:test"));
}

#[test]
fn every_field_is_equivalent() {
    if !require_docker_cli("every_field_is_equivalent") {
        return;
    }
    let referee = Referee::start().expect("start the referee");
    let verdict = assert_equivalent(&referee, everything());
    // The judge really saw the hard values.
    let body = &verdict.cli.body;
    assert_eq!(verdict.cli.query["name"], "agentc-equivalence_1.x");
    assert_eq!(body["HostConfig"]["Init"], json!(true));
    assert!(body["Env"]
        .as_array()
        .is_some_and(|env| env.contains(&json!("MULTILINE=line one\nline two\n"))));
    assert_eq!(
        body["HostConfig"]["Mounts"][1]["Source"],
        json!("/tmp/a,b"),
        "{}",
        verdict.explain()
    );
}

#[test]
fn detached_non_interactive_launch_is_equivalent() {
    if !require_docker_cli("detached_non_interactive_launch_is_equivalent") {
        return;
    }
    let referee = Referee::start().expect("start the referee");
    let spec = ContainerSpec {
        detach: true,
        interactive: false,
        tty: false,
        auto_remove: false,
        // The egress proxy's restart policy (docker refuses one with `--rm`).
        restart: Some(agentc_policy::Restart::OnFailure { max_retries: 5 }),
        network: Network::None,
        // docker refuses aliases and a fixed address off a named network (as both backends do).
        network_aliases: Vec::new(),
        ipv4_address: None,
        command: vec!["sleep".into(), "infinity".into()],
        ..everything()
    };
    let verdict = assert_equivalent(&referee, spec);
    assert_eq!(verdict.cli.body["AttachStdout"], json!(false));
    assert_eq!(
        verdict.cli.body["HostConfig"]["RestartPolicy"],
        json!({"Name": "on-failure", "MaximumRetryCount": 5})
    );
}

/// A fixed address without aliases (a workload behind the egress proxy that publishes ports):
/// the one endpoint carries only `IPAMConfig.IPv4Address`.
#[test]
fn a_fixed_address_without_aliases_is_equivalent() {
    if !require_docker_cli("a_fixed_address_without_aliases_is_equivalent") {
        return;
    }
    let referee = Referee::start().expect("start the referee");
    let spec = ContainerSpec {
        network: Network::Named {
            name: "box-egress".into(),
        },
        network_aliases: Vec::new(),
        ipv4_address: Some("10.213.7.19".parse().unwrap()),
        ..everything()
    };
    let verdict = assert_equivalent(&referee, spec);
    assert_eq!(
        verdict.cli.body["NetworkingConfig"]["EndpointsConfig"]["box-egress"]["IPAMConfig"]
            ["IPv4Address"],
        json!("10.213.7.19")
    );
}

#[test]
fn detached_interactive_launch_is_equivalent() {
    if !require_docker_cli("detached_interactive_launch_is_equivalent") {
        return;
    }
    let referee = Referee::start().expect("start the referee");
    let spec = ContainerSpec {
        detach: true,
        interactive: true,
        ..minimal()
    };
    let verdict = assert_equivalent(&referee, spec);
    assert_eq!(verdict.cli.body["OpenStdin"], json!(true));
    assert_eq!(verdict.cli.body["StdinOnce"], json!(false));
}

#[test]
fn empty_entrypoint_and_resource_edges_are_equivalent() {
    if !require_docker_cli("empty_entrypoint_and_resource_edges_are_equivalent") {
        return;
    }
    let referee = Referee::start().expect("start the referee");
    let spec = ContainerSpec {
        entrypoint: Some(String::new()),
        resources: Resources {
            memory_bytes: Some(6 * 1024 * 1024),
            // docker parses sizes through a float64: the largest exact size.
            memory_swap_bytes: Some((1 << 53) - 1),
            shm_size_bytes: Some(64 * 1024 * 1024),
            nano_cpus: Some(2_500_000_000),
            pids_limit: Some(1),
        },
        ..minimal()
    };
    assert_equivalent(&referee, spec);
}

#[test]
fn a_real_difference_is_caught() {
    if !require_docker_cli("a_real_difference_is_caught") {
        return;
    }
    let referee = Referee::start().expect("start the referee");
    // The same spec judged twice is equivalent; a CLI recording of one spec against the API
    // body of another is not, and the differing field is named.
    let verdict = referee
        .judge(&launch(minimal()), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let other = agentc_backend_api::render_create(&ContainerSpec {
        read_only_root: true,
        ..minimal()
    })
    .expect("render");
    let other = serde_json::to_value(&other.body).expect("json");
    let differences = agentc_conformance::canonical::diff(&verdict.cli.body, &other);
    let paths: Vec<&str> = differences.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, ["HostConfig.ReadonlyRootfs"]);
}
