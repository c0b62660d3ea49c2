use super::*;
use crate::inputs::DecantSource;
use crate::load::load;
use crate::*;
use std::net::{IpAddr, Ipv4Addr};

/// A virtual file system: the listed paths exist, everything else is missing.
pub(crate) struct FakePaths(pub BTreeMap<String, PathKind>);

impl PathProbe for FakePaths {
    fn kind(&self, path: &str) -> PathKind {
        self.0.get(path).copied().unwrap_or(PathKind::Missing)
    }
}

pub(crate) fn paths(entries: &[(&str, PathKind)]) -> FakePaths {
    let mut map: BTreeMap<String, PathKind> = entries
        .iter()
        .map(|(path, kind)| (path.to_string(), *kind))
        .collect();
    map.insert("/home/alice/src/app".to_string(), PathKind::Directory);
    FakePaths(map)
}

pub(crate) fn inputs(kind: LaunchKind) -> ResolveInputs {
    ResolveInputs {
        owner: Some(Owner {
            name: "alice".to_string(),
            uid: 1000,
            gid: 1000,
        }),
        ..ResolveInputs::new(
            kind,
            "/home/alice/src/app",
            "/home/alice/profiles",
            "/home/alice",
        )
    }
}

fn profile(text: &str) -> LoadedProfile {
    load("dev.toml", text).unwrap_or_else(|error| panic!("profile does not load: {error}"))
}

fn resolve_with(
    text: &str,
    inputs: &ResolveInputs,
    probe: &FakePaths,
) -> Result<LaunchSpec, PolicyError> {
    resolve(&profile(text), inputs, probe)
}

fn container(spec: &LaunchSpec) -> &ContainerSpec {
    match &spec.action {
        Action::Container(container) => container,
        Action::Build(_) => panic!("container expected"),
    }
}

fn run(text: &str) -> LaunchSpec {
    resolve_with(text, &inputs(LaunchKind::Run), &paths(&[])).unwrap()
}

fn env_of(container: &ContainerSpec) -> Vec<(String, String)> {
    container
        .env
        .iter()
        .map(|var| {
            let value = match &var.value {
                EnvValue::Literal { value } => value.clone(),
                EnvValue::Secret { required } => format!("<secret required={required}>"),
                EnvValue::Placeholder { variable, prefix } => {
                    format!("<placeholder {prefix}... of {variable}>")
                }
            };
            (var.name.clone(), value)
        })
        .collect()
}

fn names(container: &ContainerSpec) -> Vec<String> {
    container.env.iter().map(|var| var.name.clone()).collect()
}

fn caps(container: &ContainerSpec) -> Vec<&'static str> {
    container.cap_add.iter().map(|cap| cap.as_str()).collect()
}

fn profile_origin(spec: &LaunchSpec, key: &str) -> (String, Option<usize>) {
    match spec.origins.get(key) {
        Some(Origin::Profile { field, line, .. }) => (field.clone(), *line),
        other => panic!("{key}: profile origin expected, found {other:?}"),
    }
}

fn unlaunchable_field(error: PolicyError) -> (String, Option<(usize, usize)>) {
    match error {
        PolicyError::Unlaunchable {
            location: Location::Profile {
                field, position, ..
            },
            ..
        } => (field, position),
        other => panic!("unlaunchable profile error expected, found {other:?}"),
    }
}

const CLAUDE: &str = "name = \"dev\"\nagent = \"claude-code\"\n";

#[test]
fn a_claude_code_run_is_hardened_like_agent_containers() {
    let spec = run(CLAUDE);
    assert_eq!(spec.kind, LaunchKind::Run);
    let c = container(&spec);
    assert_eq!(c.image, "claude-code:latest");
    assert_eq!(c.command, ["claude"]);
    assert!(c.interactive && c.tty && c.auto_remove && !c.detach);
    assert!(c.no_new_privileges && c.read_only_root && c.cap_drop_all);
    assert_eq!(c.apparmor, None);
    assert_eq!(caps(c), ["NET_ADMIN", "NET_RAW", "SETGID", "SETUID"]);
    assert_eq!(
        c.tmpfs,
        [
            Tmpfs {
                target: "/tmp".into(),
                exec: false
            },
            Tmpfs {
                target: "/run".into(),
                exec: false
            }
        ]
    );
    assert_eq!(
        c.mounts,
        [
            Mount {
                target: "/home/claude".into(),
                read_only: false,
                source: MountSource::Volume {
                    name: "claude-code-home-alice-1000-dev".into(),
                    subpath: None
                },
            },
            Mount {
                target: "/workspace/app".into(),
                read_only: false,
                source: MountSource::Bind {
                    path: "/home/alice/src/app".into()
                },
            },
        ]
    );
    assert_eq!(c.working_dir.as_deref(), Some("/workspace/app"));
    assert_eq!(c.network, Network::Default);
    assert!(c.env.is_empty() && c.ports.is_empty() && c.extra_hosts.is_empty());
    assert_eq!(c.name, None);
    assert_eq!(c.user, None);
    assert_eq!(c.entrypoint, None);
    assert_eq!(
        spec.origins["cap_add.NET_ADMIN"],
        Origin::Preset {
            agent: "claude-code".into()
        }
    );
    assert_eq!(
        spec.origins["mounts./workspace/app"],
        Origin::Invocation {
            input: "--workspace".into()
        }
    );
    assert_eq!(
        spec.origins["image"],
        Origin::Preset {
            agent: "claude-code".into()
        }
    );
}

#[test]
fn every_container_gets_default_limits_and_log_rotation() {
    let c = container(&run(CLAUDE)).clone();
    assert_eq!(
        c.resources,
        crate::spec::Resources {
            memory_bytes: Some(4 << 30),
            memory_swap_bytes: Some(4 << 30),
            shm_size_bytes: None,
            nano_cpus: None,
            pids_limit: Some(512),
        }
    );
    let log = c.log.expect("log rotation");
    assert_eq!(log.driver, "json-file");
    assert_eq!(log.options["max-size"], "50m");
    assert_eq!(log.options["max-file"], "3");
}

#[test]
fn opencode_and_hermes_get_executable_tmpfs_and_hermes_its_extra_caps() {
    let opencode = run("name = \"dev\"\nagent = \"opencode\"\n");
    let c = container(&opencode);
    assert!(c.tmpfs.iter().all(|tmpfs| tmpfs.exec));
    assert_eq!(c.command, ["opencode"]);
    assert_eq!(
        opencode.origins["tmpfs./tmp"],
        Origin::Preset {
            agent: "opencode".into()
        }
    );
    let hermes = run("name = \"dev\"\nagent = \"hermes\"\n");
    let c = container(&hermes);
    assert!(c.tmpfs.iter().all(|tmpfs| tmpfs.exec));
    assert!(c.command.is_empty());
    assert_eq!(
        caps(c),
        [
            "CHOWN",
            "DAC_OVERRIDE",
            "NET_ADMIN",
            "NET_RAW",
            "SETGID",
            "SETUID"
        ]
    );
    assert_eq!(c.mounts[0].target, "/opt/data");
}

#[test]
fn image_comes_from_invocation_then_profile_then_preset() {
    let text = format!("{CLAUDE}[image]\nref = \"mine:1\"\n");
    let spec = run(&text);
    assert_eq!(container(&spec).image, "mine:1");
    assert_eq!(
        profile_origin(&spec, "image"),
        ("image.ref".to_string(), Some(4))
    );
    let mut invocation = inputs(LaunchKind::Run);
    invocation.image = Some("cli:2".to_string());
    invocation.agent_args = vec!["--resume".to_string()];
    let spec = resolve_with(&text, &invocation, &paths(&[])).unwrap();
    assert_eq!(container(&spec).image, "cli:2");
    assert_eq!(container(&spec).command, ["claude", "--resume"]);
    assert_eq!(
        spec.origins["image"],
        Origin::Invocation {
            input: "--image".into()
        }
    );
}

#[test]
fn read_only_root_and_workspace_follow_the_profile() {
    let text =
        format!("{CLAUDE}[security]\nread_only_root = false\n[workspace]\nread_only = true\n");
    let spec = run(&text);
    let c = container(&spec);
    assert!(!c.read_only_root);
    assert!(c.mounts[1].read_only);
    assert_eq!(
        profile_origin(&spec, "read_only_root"),
        ("security.read_only_root".to_string(), Some(4))
    );
    let text = format!("{CLAUDE}[workspace]\nmount = false\n");
    let c = container(&run(&text)).clone();
    assert_eq!(c.mounts.len(), 1);
    assert_eq!(c.working_dir, None);
}

#[test]
fn a_missing_workspace_is_unlaunchable_at_the_invocation() {
    let mut invocation = inputs(LaunchKind::Run);
    invocation.workspace = "/nowhere/else".to_string();
    let error = resolve_with(CLAUDE, &invocation, &paths(&[])).unwrap_err();
    assert!(matches!(
        error,
        PolicyError::Unlaunchable { location: Location::Invocation { ref input }, .. } if input == "--workspace"
    ));
}

#[test]
fn deny_without_a_gateway_takes_the_container_off_the_network() {
    let text = format!("{CLAUDE}[egress]\nmode = \"deny\"\n");
    let spec = run(&text);
    assert_eq!(container(&spec).network, Network::None);
    assert_eq!(profile_origin(&spec, "network").0, "egress.mode");
    assert!(container(&spec).env.is_empty());
    let mut invocation = inputs(LaunchKind::Run);
    invocation.env.insert("AGENTC_NETWORK".into(), "lab".into());
    let spec = resolve_with(&text, &invocation, &paths(&[])).unwrap();
    assert_eq!(container(&spec).network, Network::None);
    assert_eq!(
        spec.origins[crate::keys::NETWORK_SUPERSEDED],
        Origin::Environment {
            variable: "AGENTC_NETWORK".into()
        }
    );
}

#[test]
fn deny_with_published_ports_gets_a_relay_and_no_way_out() {
    let text = format!("{CLAUDE}[egress]\nmode = \"deny\"\n[network]\npublish = [8080]\n");
    let c = container(&run(&text)).clone();
    let egress = c.egress.as_ref().expect("the relay-only companion");
    // The sandbox joins the isolated network only and publishes nothing itself.
    assert_eq!(
        c.network,
        Network::Named {
            name: egress.network.name.clone()
        }
    );
    assert!(egress.network.internal);
    assert!(c.ports.is_empty(), "{:?}", c.ports);
    // The proxy allows nothing and relays the port to the sandbox's fixed address.
    let command = &egress.proxy.command;
    assert!(
        !command.iter().any(|word| word.starts_with("--allow")),
        "{command:?}"
    );
    let workload = c.ipv4_address.expect("a fixed address");
    assert!(
        command
            .iter()
            .any(|word| *word == format!("--relay=20000={workload}:8080")),
        "{command:?}"
    );
    assert_eq!(egress.proxy.ports.len(), 1);
    // Deny without ports keeps no network at all.
    let c = container(&run(&format!("{CLAUDE}[egress]\nmode = \"deny\"\n"))).clone();
    assert_eq!(c.network, Network::None);
    assert!(c.egress.is_none());
}

#[test]
fn allowlist_and_unrestricted_egress_are_handed_to_the_entrypoint() {
    let image = "[egress]\nhosts = [\"api.anthropic.com\", \"github.com\"]\nenforce = \"image\"\n";
    let c = container(&run(&format!("{CLAUDE}{image}"))).clone();
    assert_eq!(
        env_of(&c),
        [(
            "AGENT_ALLOWED_EGRESS".into(),
            "api.anthropic.com,github.com".into()
        )]
    );
    assert_eq!(c.network, Network::Default);
    assert_eq!(c.egress, None);
    // Enforced outside (the default): the proxy enforces and the image's firewall stands down
    // (see rules/egress/host_path); the sandbox joins its isolated network only, with the proxy
    // as its DNS server.
    let text = format!("{CLAUDE}[egress]\nhosts = [\"api.anthropic.com\", \"github.com\"]\n");
    let c = container(&run(&text)).clone();
    let egress = c.egress.as_ref().expect("the egress companion");
    let proxy = format!("http://{}:3128", egress.proxy_address);
    let env = env_of(&c);
    assert_eq!(env[0], ("AGENT_ALLOWED_EGRESS".into(), "*".into()));
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
        assert!(
            env.contains(&(name.into(), proxy.clone())),
            "{name}: {env:?}"
        );
    }
    assert_eq!(
        c.network,
        Network::Named {
            name: egress.network.name.clone()
        }
    );
    assert_eq!(c.dns, [std::net::IpAddr::V4(egress.proxy_address)]);
    assert!(egress.network.internal);
    assert_eq!(egress.network.options[crate::INHIBIT_IPV4], "true");
    assert_eq!(egress.outside, Network::Default);
    let p = &egress.proxy;
    assert!(p.read_only_root && p.cap_drop_all && p.no_new_privileges);
    assert_eq!(p.user.as_deref(), Some("65534:65534"));
    assert_eq!(p.sysctls["net.ipv4.ip_forward"], "0");
    assert_eq!(p.labels[crate::LABEL_KIND], crate::KIND_EGRESS_PROXY);
    assert!(
        p.command.contains(&"--allow=api.anthropic.com".to_string()),
        "{:?}",
        p.command
    );
    let text = format!("{CLAUDE}[egress]\nmode = \"unrestricted\"\n");
    let c = container(&run(&text)).clone();
    assert_eq!(env_of(&c), [("AGENT_ALLOWED_EGRESS".into(), "*".into())]);
}

const GATEWAY: &str =
    "[egress]\nmode = \"deny\"\ngateway_host = \"gw.example\"\ngateway_port = 2222\n\
    gateway_user = \"agent\"\ngateway_bootstrap_allow = [\"10.0.0.1\", \"10.0.0.0/8\"]\n\
    gateway_key_file = \"keys/id\"\ngateway_known_hosts_file = \"keys/known\"\n";

#[test]
fn a_gateway_keeps_the_network_and_mounts_its_files_read_only() {
    let text = format!("{CLAUDE}{GATEWAY}");
    let probe = paths(&[
        ("/home/alice/profiles/keys/id", PathKind::File),
        ("/home/alice/profiles/keys/known", PathKind::File),
    ]);
    let spec = resolve_with(&text, &inputs(LaunchKind::Run), &probe).unwrap();
    let c = container(&spec);
    assert_eq!(c.network, Network::Default);
    assert_eq!(
        env_of(c),
        [
            ("AGENT_GATEWAY_HOST".into(), "gw.example".into()),
            ("AGENT_GATEWAY_PORT".into(), "2222".into()),
            ("AGENT_GATEWAY_USER".into(), "agent".into()),
            (
                "AGENT_GATEWAY_BOOTSTRAP_ALLOW".into(),
                "10.0.0.1,10.0.0.0/8".into()
            ),
        ]
    );
    let key = c
        .mounts
        .iter()
        .find(|m| m.target == presets::GATEWAY_KEY_TARGET)
        .unwrap();
    assert!(key.read_only);
    assert_eq!(
        key.source,
        MountSource::Bind {
            path: "/home/alice/profiles/keys/id".into()
        }
    );
    assert!(c
        .mounts
        .iter()
        .any(|m| m.target == presets::GATEWAY_KNOWN_HOSTS_TARGET && m.read_only));
    // A directory where the key should be is refused, with the field's position.
    let probe = paths(&[
        ("/home/alice/profiles/keys/id", PathKind::Directory),
        ("/home/alice/profiles/keys/known", PathKind::File),
    ]);
    let error = resolve_with(&text, &inputs(LaunchKind::Run), &probe).unwrap_err();
    assert!(
        error
            .with_hint()
            .to_string()
            .contains("gateway key is not a file"),
        "{error}"
    );
    let (field, position) = unlaunchable_field(error);
    assert_eq!(field, "egress.gateway_key_file");
    assert_eq!(position.map(|p| p.0), Some(9));
}

#[test]
fn gateway_inputs_may_be_read_only_mounts_but_not_writable_ones() {
    let base = "[egress]\nmode = \"deny\"\ngateway_host = \"gw\"\ngateway_port = 22\n";
    let mounts = "[[mounts]]\nsource = \"/keys/id\"\ntarget = \"/etc/agent/gateway-key\"\n\
        [[mounts]]\nsource = \"/keys/known\"\ntarget = \"/etc/agent/gateway-known-hosts\"\n";
    let text = format!("{CLAUDE}{base}{mounts}");
    let probe = paths(&[
        ("/keys/id", PathKind::File),
        ("/keys/known", PathKind::File),
    ]);
    let c = container(&resolve_with(&text, &inputs(LaunchKind::Run), &probe).unwrap()).clone();
    assert!(c
        .mounts
        .iter()
        .any(|m| m.target == presets::GATEWAY_KEY_TARGET && m.read_only));
    let writable = text.replacen(
        "target = \"/etc/agent/gateway-key\"\n",
        "target = \"/etc/agent/gateway-key\"\nread_only = false\n",
        1,
    );
    let error = resolve_with(&writable, &inputs(LaunchKind::Run), &probe).unwrap_err();
    assert!(
        error
            .with_hint()
            .to_string()
            .contains("gateway key mount must be read-only"),
        "{error}"
    );
    let missing = paths(&[("/keys/known", PathKind::File)]);
    let (field, _) =
        unlaunchable_field(resolve_with(&text, &inputs(LaunchKind::Run), &missing).unwrap_err());
    assert_eq!(field, "mounts[0].source");
}

#[test]
fn provider_settings_render_per_agent() {
    let provider = "[provider]\nkind = \"anthropic\"\nendpoint = \"https://llm.example/v1/\"\n\
        model = \"m-1\"\napi_key_env = \"MY_KEY\"\n";
    let c = container(&run(&format!("{CLAUDE}{provider}"))).clone();
    assert_eq!(
        env_of(&c),
        [
            ("MY_KEY".into(), "<secret required=true>".into()),
            ("ANTHROPIC_BASE_URL".into(), "https://llm.example/v1".into()),
            ("ANTHROPIC_MODEL".into(), "m-1".into()),
        ]
    );
    let c = container(&run(&format!(
        "name = \"dev\"\nagent = \"hermes\"\n{provider}"
    )))
    .clone();
    assert_eq!(names(&c), ["MY_KEY", "ANTHROPIC_BASE_URL"]);
    assert_eq!(c.command, ["--provider", "anthropic", "--model", "m-1"]);
    let codex = provider.replace("anthropic", "openai");
    let c = container(&run(&format!("name = \"dev\"\nagent = \"codex\"\n{codex}"))).clone();
    assert_eq!(names(&c), ["MY_KEY"]);
    assert_eq!(
        c.command,
        [
            "codex",
            "--model",
            "m-1",
            "--config",
            "openai_base_url=\"https://llm.example/v1\""
        ]
    );
    let custom = provider.replace("anthropic", "custom");
    let c = container(&run(&format!(
        "name = \"dev\"\nagent = \"codex\"\n{custom}"
    )))
    .clone();
    assert_eq!(
        c.command,
        [
            "codex",
            "--model",
            "m-1",
            "--config",
            "model_provider=\"agent_containers\"",
            "--config",
            "model_providers.agent_containers.name=\"custom\"",
            "--config",
            "model_providers.agent_containers.base_url=\"https://llm.example/v1\"",
            "--config",
            "model_providers.agent_containers.wire_api=\"responses\"",
        ]
    );
}

#[test]
fn opencode_gets_its_config_as_compact_ordered_json() {
    let text = "name = \"dev\"\nagent = \"opencode\"\n[provider]\nkind = \"custom\"\n\
        endpoint = \"https://llm.example/\"\nmodel = \"qwén\"\napi_key_env = \"K\"\n";
    let c = container(&run(text)).clone();
    assert_eq!(names(&c), ["K", "AGENT_OPENCODE_CONFIG_JSON"]);
    let json = match &c.env[1].value {
        EnvValue::Literal { value } => value.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        json,
        r#"{"$schema":"https://opencode.ai/config.json","model":"agent_containers/qw\u00e9n","provider":{"agent_containers":{"npm":"@ai-sdk/openai-compatible","name":"custom","options":{"baseURL":"https://llm.example","apiKey":"{env:K}"},"models":{"qw\u00e9n":{"name":"qw\u00e9n"}}}}}"#
    );
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(parsed["model"], "agent_containers/qwén");
}

#[test]
fn langfuse_keys_are_secrets_and_variables_follow_the_agent() {
    let langfuse =
        "[egress]\nhosts = [\"lf.example\"]\nenforce = \"image\"\n[langfuse]\nenabled = true\n\
        base_url = \"https://lf.example/\"\nenvironment = \"dev\"\nuser_id = \"alice\"\n";
    let c = container(&run(&format!("{CLAUDE}{langfuse}"))).clone();
    assert_eq!(
        env_of(&c),
        [
            ("AGENT_ALLOWED_EGRESS".into(), "lf.example".into()),
            ("TRACE_TO_LANGFUSE".into(), "true".into()),
            (
                "LANGFUSE_PUBLIC_KEY".into(),
                "<secret required=true>".into()
            ),
            (
                "AGENT_LANGFUSE_PUBLIC_KEY_ENV".into(),
                "LANGFUSE_PUBLIC_KEY".into()
            ),
            (
                "LANGFUSE_SECRET_KEY".into(),
                "<secret required=true>".into()
            ),
            (
                "AGENT_LANGFUSE_SECRET_KEY_ENV".into(),
                "LANGFUSE_SECRET_KEY".into()
            ),
            ("LANGFUSE_BASE_URL".into(), "https://lf.example".into()),
            ("LANGFUSE_TRACING_ENVIRONMENT".into(), "dev".into()),
            ("LANGFUSE_USER_ID".into(), "alice".into()),
        ]
    );
    let c = container(&run(&format!(
        "name = \"dev\"\nagent = \"opencode\"\n{langfuse}"
    )))
    .clone();
    let names = names(&c);
    assert!(names.contains(&"LANGFUSE_BASEURL".to_string()));
    assert!(names.contains(&"LANGFUSE_ENVIRONMENT".to_string()));
    assert_eq!(names[1], "AGENT_OPENCODE_CONFIG_JSON");
    let c = container(&run(&format!(
        "name = \"dev\"\nagent = \"codex\"\n{langfuse}"
    )))
    .clone();
    assert_eq!(
        &c.command[..3],
        ["codex", "--config", "features.hooks=true"]
    );
}

#[test]
fn proxy_variables_and_ca_trust_follow_agent_containers() {
    let text = format!(
        "{CLAUDE}[proxy]\nhttp = \"http://proxy:3128/\"\nno_proxy = [\"localhost\", \".corp\"]\nca_file = \"ca.pem\"\n"
    );
    let probe = paths(&[("/home/alice/profiles/ca.pem", PathKind::File)]);
    let c = container(&resolve_with(&text, &inputs(LaunchKind::Run), &probe).unwrap()).clone();
    assert_eq!(
        env_of(&c),
        [
            ("HTTP_PROXY".into(), "http://proxy:3128".into()),
            ("http_proxy".into(), "http://proxy:3128".into()),
            ("NO_PROXY".into(), "localhost,.corp".into()),
            ("no_proxy".into(), "localhost,.corp".into()),
            ("NODE_USE_ENV_PROXY".into(), "1".into()),
            ("SSL_CERT_FILE".into(), presets::CA_BUNDLE_TARGET.into()),
            (
                "REQUESTS_CA_BUNDLE".into(),
                presets::CA_BUNDLE_TARGET.into()
            ),
            (
                "NODE_EXTRA_CA_CERTS".into(),
                presets::CA_BUNDLE_TARGET.into()
            ),
        ]
    );
    let (field, _) =
        unlaunchable_field(resolve_with(&text, &inputs(LaunchKind::Run), &paths(&[])).unwrap_err());
    assert_eq!(field, "proxy.ca_file");
}

#[test]
fn mount_sources_resolve_lexically_and_must_exist() {
    let text = format!(
        "{CLAUDE}[[configuration_mounts]]\nsource = \"~/.config/x/../claude.json\"\ntarget = \"/home/claude/.claude.json\"\n\
         [[mounts]]\ntype = \"directory\"\nsource = \"./data/\"\ntarget = \"/data\"\nread_only = false\n\
         [[mounts]]\ntype = \"seed\"\nsource = \"seed.json\"\ntarget = \"/home/claude/.seeded\"\n"
    );
    let probe = paths(&[
        ("/home/alice/.config/claude.json", PathKind::File),
        ("/home/alice/profiles/data", PathKind::Directory),
    ]);
    let spec = resolve_with(&text, &inputs(LaunchKind::Run), &probe).unwrap();
    let c = container(&spec);
    let extra: Vec<_> = c.mounts[2..].to_vec();
    assert_eq!(
        extra,
        [
            Mount {
                target: "/home/claude/.claude.json".into(),
                read_only: true,
                source: MountSource::Bind {
                    path: "/home/alice/.config/claude.json".into()
                },
            },
            Mount {
                target: "/data".into(),
                read_only: false,
                source: MountSource::Bind {
                    path: "/home/alice/profiles/data".into()
                },
            },
        ]
    );
    assert_eq!(profile_origin(&spec, "mounts./data").0, "mounts[0]");
    // A directory mount needs a directory.
    let probe = paths(&[
        ("/home/alice/.config/claude.json", PathKind::File),
        ("/home/alice/profiles/data", PathKind::File),
    ]);
    let (field, position) =
        unlaunchable_field(resolve_with(&text, &inputs(LaunchKind::Run), &probe).unwrap_err());
    assert_eq!(field, "mounts[0].source");
    assert!(position.is_some());
    let (field, _) =
        unlaunchable_field(resolve_with(&text, &inputs(LaunchKind::Run), &paths(&[])).unwrap_err());
    assert_eq!(field, "configuration_mounts[0].source");
}

#[test]
fn mounts_may_not_shadow_generated_targets() {
    for target in [
        presets::CA_BUNDLE_TARGET,
        "/home/claude",
        "/workspace/app",
        "/tmp",
    ] {
        let text = format!("{CLAUDE}[[mounts]]\nsource = \"/x\"\ntarget = \"{target}\"\n");
        let probe = paths(&[("/x", PathKind::File)]);
        let error = resolve_with(&text, &inputs(LaunchKind::Run), &probe).unwrap_err();
        assert!(
            error
                .with_hint()
                .to_string()
                .contains("conflicts with generated mount"),
            "{target}: {error}"
        );
    }
}

#[test]
fn profile_limits_override_defaults_and_the_environment_overrides_both() {
    let text = format!(
        "{CLAUDE}[resources]\nmemory = \"2g\"\nshm_size = \"256m\"\ncpus = 1.5\npids_limit = 100\n\
         [logging]\nmax_size = \"10m\"\nmax_file = 2\n"
    );
    let spec = run(&text);
    let c = container(&spec);
    assert_eq!(c.resources.memory_bytes, Some(2 << 30));
    assert_eq!(c.resources.memory_swap_bytes, Some(2 << 30));
    assert_eq!(c.resources.shm_size_bytes, Some(256 << 20));
    assert_eq!(c.resources.nano_cpus, Some(1_500_000_000));
    assert_eq!(c.resources.pids_limit, Some(100));
    assert_eq!(c.log.as_ref().unwrap().options["max-size"], "10m");
    assert_eq!(c.log.as_ref().unwrap().options["max-file"], "2");
    assert_eq!(
        profile_origin(&spec, "resources.memory_bytes"),
        ("resources.memory".to_string(), Some(4))
    );
    let mut invocation = inputs(LaunchKind::Run);
    for (name, value) in [
        ("AGENTC_MEM_LIMIT", "1g"),
        ("AGENTC_CPUS", " 2 "),
        ("AGENTC_PIDS_LIMIT", "off"),
        ("AGENTC_SHM_SIZE", ""),
        ("AGENTC_LOG_MAX_FILE", "7"),
    ] {
        invocation.env.insert(name.into(), value.into());
    }
    let spec = resolve_with(&text, &invocation, &paths(&[])).unwrap();
    let c = container(&spec);
    assert_eq!(c.resources.memory_bytes, Some(1 << 30));
    assert_eq!(c.resources.memory_swap_bytes, Some(1 << 30));
    assert_eq!(c.resources.nano_cpus, Some(2_000_000_000));
    assert_eq!(c.resources.pids_limit, None);
    assert_eq!(c.resources.shm_size_bytes, Some(256 << 20));
    assert_eq!(c.log.as_ref().unwrap().options["max-file"], "7");
    assert_eq!(
        spec.origins["resources.pids_limit"],
        Origin::Environment {
            variable: "AGENTC_PIDS_LIMIT".into()
        }
    );
    assert_eq!(
        spec.origins["resources.memory_swap_bytes"],
        Origin::Environment {
            variable: "AGENTC_MEM_LIMIT".into()
        }
    );
}

#[test]
fn memory_off_removes_memory_and_swap_and_bad_overrides_are_errors() {
    let mut invocation = inputs(LaunchKind::Run);
    invocation
        .env
        .insert("AGENTC_MEM_LIMIT".into(), "OFF".into());
    let c = container(&resolve_with(CLAUDE, &invocation, &paths(&[])).unwrap()).clone();
    assert_eq!(
        (c.resources.memory_bytes, c.resources.memory_swap_bytes),
        (None, None)
    );
    invocation
        .env
        .insert("AGENTC_MEM_LIMIT".into(), "lots".into());
    let error = resolve_with(CLAUDE, &invocation, &paths(&[])).unwrap_err();
    assert_eq!(
        error.location(),
        &Location::Environment {
            variable: "AGENTC_MEM_LIMIT".into()
        }
    );
}

#[test]
fn log_rotation_can_be_turned_off_by_profile_or_environment() {
    let text = format!("{CLAUDE}[logging]\nmax_size = \"off\"\n");
    let spec = run(&text);
    assert_eq!(container(&spec).log, None);
    assert_eq!(profile_origin(&spec, "log").0, "logging.max_size");
    let mut invocation = inputs(LaunchKind::Run);
    invocation
        .env
        .insert("AGENTC_LOG_MAX_SIZE".into(), "off".into());
    assert_eq!(
        container(&resolve_with(CLAUDE, &invocation, &paths(&[])).unwrap()).log,
        None
    );
    invocation
        .env
        .insert("AGENTC_LOG_MAX_SIZE".into(), "1g".into());
    let spec = resolve_with(&text, &invocation, &paths(&[])).unwrap();
    assert_eq!(
        container(&spec).log.as_ref().unwrap().options["max-size"],
        "1g"
    );
}

#[test]
fn published_ports_go_to_loopback_unless_a_network_is_named() {
    let text = format!("{CLAUDE}[network]\nhost_gateway = true\npublish = [8080, \"53/udp\"]\n");
    let spec = run(&text);
    let c = container(&spec);
    assert_eq!(
        c.ports,
        [
            PublishedPort {
                container_port: 8080,
                protocol: Protocol::Tcp,
                host_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                host_port: None
            },
            PublishedPort {
                container_port: 53,
                protocol: Protocol::Udp,
                host_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                host_port: None
            },
        ]
    );
    assert_eq!(
        c.extra_hosts,
        [ExtraHost {
            host: "host.docker.internal".into(),
            target: HostTarget::HostGateway
        }]
    );
    assert_eq!(
        profile_origin(&spec, "ports.53/udp").0,
        "network.publish[1]"
    );
    let mut invocation = inputs(LaunchKind::Run);
    invocation.env.insert("AGENTC_NETWORK".into(), "lab".into());
    let spec = resolve_with(&text, &invocation, &paths(&[])).unwrap();
    assert_eq!(
        container(&spec).network,
        Network::Named { name: "lab".into() }
    );
    // AGENTC_NETWORK and `[network] name` agree: the ports are exposed on the network, not
    // published on the host, and the container answers to the profile's name there.
    let exposed = [
        ExposedPort {
            container_port: 8080,
            protocol: Protocol::Tcp,
        },
        ExposedPort {
            container_port: 53,
            protocol: Protocol::Udp,
        },
    ];
    assert!(container(&spec).ports.is_empty());
    assert_eq!(container(&spec).exposed_ports, exposed);
    assert_eq!(container(&spec).network_aliases, ["dev"]);
    assert_eq!(
        spec.origins["network"],
        Origin::Environment {
            variable: "AGENTC_NETWORK".into()
        }
    );
    assert_eq!(
        profile_origin(&spec, "ports.53/udp").0,
        "network.publish[1]"
    );
    let named = text.replace("[network]\n", "[network]\nname = \"lab\"\n");
    let by_profile = run(&named);
    assert_eq!(container(&by_profile).exposed_ports, exposed);
    assert_eq!(container(&by_profile).network, container(&spec).network);
    assert_eq!(
        container(&by_profile).network_aliases,
        container(&spec).network_aliases
    );
    let spec = run(&format!("{CLAUDE}[network]\nname = \"corp\"\n"));
    assert_eq!(
        container(&spec).network,
        Network::Named {
            name: "corp".into()
        }
    );
    assert_eq!(profile_origin(&spec, "network").0, "network.name");
}

#[test]
fn fuse_and_added_capabilities_widen_the_container() {
    let text = format!(
        "{CLAUDE}[security]\nfuse = true\nadd_capabilities = [\"sys_ptrace\", \"NET_ADMIN\"]\n"
    );
    let spec = run(&text);
    let c = container(&spec);
    assert_eq!(
        c.devices,
        [Device {
            host_path: "/dev/fuse".into(),
            container_path: "/dev/fuse".into(),
            permissions: "rwm".into()
        }]
    );
    assert_eq!(c.apparmor, Some(AppArmor::Unconfined));
    assert!(c.cap_add.contains(&Capability::SysAdmin));
    assert!(c.cap_add.contains(&Capability::SysPtrace));
    assert_eq!(
        profile_origin(&spec, "cap_add.SYS_PTRACE").0,
        "security.add_capabilities[0]"
    );
    assert_eq!(
        spec.origins["cap_add.NET_ADMIN"],
        Origin::Preset {
            agent: "claude-code".into()
        }
    );
    assert_eq!(
        profile_origin(&spec, "cap_add.SYS_ADMIN").0,
        "security.fuse"
    );
}

const CUSTOM: &str = "name = \"lab\"\nagent = \"custom\"\n[image]\nref = \"strix:1\"\n\
    command = [\"tail\", \"-f\", \"/dev/null\"]\nuser = \"pentester\"\n";

#[test]
fn a_custom_run_is_a_hardened_detached_sandbox() {
    let spec = run(CUSTOM);
    assert_eq!(spec.kind, LaunchKind::Sandbox);
    let c = container(&spec);
    assert_eq!(c.name.as_deref(), Some("agentc-sandbox-alice-1000-lab"));
    assert_eq!(c.image, "strix:1");
    assert_eq!(c.entrypoint, None);
    assert_eq!(c.command, ["tail", "-f", "/dev/null"]);
    assert_eq!(c.user.as_deref(), Some("pentester"));
    assert!(c.detach && !c.interactive && !c.tty && !c.auto_remove);
    assert!(c.no_new_privileges && c.read_only_root && c.cap_drop_all);
    assert!(c.cap_add.is_empty());
    assert!(c.mounts.is_empty() && c.working_dir.is_none());
    assert_eq!(c.tmpfs.len(), 2);
    assert_eq!(c.resources.pids_limit, Some(512));
    assert_eq!(c.log.as_ref().unwrap().options["max-size"], "50m");
    assert_eq!(c.labels[LABEL_KIND], "sandbox");
    let text = format!("{CUSTOM}[security]\nadd_capabilities = [\"NET_RAW\", \"NET_ADMIN\"]\n[workspace]\nmount = true\n");
    let c = container(&run(&text)).clone();
    assert_eq!(caps(&c), ["NET_ADMIN", "NET_RAW"]);
    assert_eq!(c.mounts[0].target, "/workspace/app");
    assert_eq!(c.working_dir.as_deref(), Some("/workspace/app"));
}

#[test]
fn seed_launches_need_a_configured_target_inside_the_home() {
    let text = format!(
        "{CLAUDE}[[mounts]]\ntype = \"seed\"\nsource = \"settings.json\"\ntarget = \"/home/claude/.claude/settings.json\"\non_conflict = \"replace\"\n"
    );
    let probe = paths(&[("/home/alice/profiles/settings.json", PathKind::File)]);
    let mut invocation = inputs(LaunchKind::Seed);
    let error = resolve_with(&text, &invocation, &probe).unwrap_err();
    match &error {
        PolicyError::Unlaunchable {
            location: Location::Invocation { input },
            hint,
            ..
        } => {
            assert_eq!(input, "--seed-target");
            assert!(
                hint.contains("/home/claude/.claude/settings.json"),
                "{hint}"
            );
        }
        other => panic!("{other:?}"),
    }
    invocation.seed_target = Some("/home/claude/other".into());
    assert!(resolve_with(&text, &invocation, &probe)
        .unwrap_err()
        .with_hint()
        .to_string()
        .contains("not configured"));
    invocation.seed_target = Some("/home/claude/.claude/settings.json".into());
    let spec = resolve_with(&text, &invocation, &probe).unwrap();
    assert_eq!(spec.kind, LaunchKind::Seed);
    let c = container(&spec);
    assert_eq!(c.network, Network::None);
    assert_eq!(c.user.as_deref(), Some("0:0"));
    assert!(c.auto_remove && !c.interactive && !c.tty);
    assert!(c.no_new_privileges && c.read_only_root && c.cap_drop_all);
    assert_eq!(caps(c), ["CHOWN", "DAC_OVERRIDE"]);
    assert_eq!(c.entrypoint.as_deref(), Some("/bin/sh"));
    assert_eq!(c.command, ["-ceu", presets::SEED_COPY_SCRIPT]);
    assert_eq!(
        c.mounts[1],
        Mount {
            target: "/tmp/agent-seed".into(),
            read_only: true,
            source: MountSource::Bind {
                path: "/home/alice/profiles/settings.json".into()
            },
        }
    );
    assert_eq!(
        env_of(c),
        [
            (
                "SEED_TARGET".into(),
                "/home/claude/.claude/settings.json".into()
            ),
            ("SEED_USER".into(), "claude".into()),
            ("SEED_HOME".into(), "/home/claude".into()),
            ("SEED_ON_CONFLICT".into(), "replace".into()),
        ]
    );
    assert_eq!(c.resources.memory_bytes, Some(4 << 30));
    // The source must exist.
    let (field, _) = unlaunchable_field(resolve_with(&text, &invocation, &paths(&[])).unwrap_err());
    assert_eq!(field, "mounts[0].source");
}

#[test]
fn seed_mounts_are_not_mounted_in_a_run() {
    let text = format!(
        "{CLAUDE}[[mounts]]\ntype = \"seed\"\nsource = \"s\"\ntarget = \"/home/claude/s\"\n"
    );
    let c = container(&run(&text)).clone();
    assert_eq!(c.mounts.len(), 2);
}

fn decant_inputs(sources: &[(&str, AgentName)]) -> ResolveInputs {
    let mut invocation = inputs(LaunchKind::Decant);
    invocation.decant_sources = sources
        .iter()
        .map(|(name, agent)| DecantSource {
            profile: name.to_string(),
            agent: *agent,
            home_volume: format!("{name}-home"),
        })
        .collect();
    invocation
}

#[test]
fn decant_reads_one_home_per_agent_on_a_published_port() {
    let text = format!("{CLAUDE}[decant]\nenabled = true\nsource_profiles = [\"dev\", \"cx\"]\n");
    let invocation = decant_inputs(&[("dev", AgentName::ClaudeCode), ("cx", AgentName::Codex)]);
    let spec = resolve_with(&text, &invocation, &paths(&[])).unwrap();
    assert_eq!(spec.kind, LaunchKind::Decant);
    let c = container(&spec);
    assert_eq!(c.name.as_deref(), Some("agentc-decant-alice-1000-dev"));
    assert_eq!(c.image, "agent-containers/decant:alice-1000-dev");
    assert_eq!(c.command[0], "serve");
    assert!(c.interactive && c.tty && c.auto_remove);
    assert_eq!(
        c.ports,
        [PublishedPort {
            container_port: 3000,
            protocol: Protocol::Tcp,
            host_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            host_port: Some(8787)
        }]
    );
    assert_eq!(
        c.mounts,
        [
            Mount {
                target: "/var/lib/decant".into(),
                read_only: false,
                source: MountSource::Volume {
                    name: "decant-data-alice-1000-dev".into(),
                    subpath: None
                }
            },
            Mount {
                target: "/sources/claude".into(),
                read_only: true,
                source: MountSource::Volume {
                    name: "dev-home".into(),
                    subpath: Some(".claude".into())
                }
            },
            Mount {
                target: "/sources/codex".into(),
                read_only: true,
                source: MountSource::Volume {
                    name: "cx-home".into(),
                    subpath: Some(".codex".into())
                }
            },
        ]
    );
    assert_eq!(c.resources.pids_limit, Some(512));
    assert!(c.log.is_some());
    let twice = decant_inputs(&[("a", AgentName::Codex), ("b", AgentName::Codex)]);
    assert!(resolve_with(&text, &twice, &paths(&[]))
        .unwrap_err()
        .with_hint()
        .to_string()
        .contains("multiple codex"));
    let none = decant_inputs(&[]);
    let (field, _) = unlaunchable_field(resolve_with(&text, &none, &paths(&[])).unwrap_err());
    assert_eq!(field, "decant.source_profiles");
    let (field, _) =
        unlaunchable_field(resolve_with(CLAUDE, &invocation, &paths(&[])).unwrap_err());
    assert_eq!(field, "decant.enabled");
}

#[test]
fn builds_use_the_run_tag_and_a_checked_context() {
    let text = format!(
        "{CLAUDE}[image]\nbuild_context = \"../images/claude\"\ndockerfile = \"Dockerfile.dev\"\n"
    );
    let probe = paths(&[("/home/alice/images/claude", PathKind::Directory)]);
    let spec = resolve_with(&text, &inputs(LaunchKind::Build), &probe).unwrap();
    assert_eq!(spec.kind, LaunchKind::Build);
    let Action::Build(build) = &spec.action else {
        panic!("build expected")
    };
    assert_eq!(build.tag, "claude-code:latest");
    assert_eq!(build.context, "/home/alice/images/claude");
    assert_eq!(build.dockerfile.as_deref(), Some("Dockerfile.dev"));
    assert_eq!(
        build.build_args,
        BTreeMap::from([("GID".into(), "1000".into()), ("UID".into(), "1000".into())])
    );
    assert_eq!(build.labels[LABEL_KIND], "build");
    assert_eq!(build.labels[LABEL_SPEC_DIGEST].len(), 64);
    let (field, _) = unlaunchable_field(
        resolve_with(&text, &inputs(LaunchKind::Build), &paths(&[])).unwrap_err(),
    );
    assert_eq!(field, "image.build_context");
    let hermes = text.replace("claude-code", "hermes");
    let spec = resolve_with(&hermes, &inputs(LaunchKind::Build), &probe).unwrap();
    let Action::Build(build) = &spec.action else {
        panic!("build expected")
    };
    assert!(build.build_args.is_empty());
    // Root builds for 1000:1000: the agent must not own root's files, nor run as root.
    let mut root = inputs(LaunchKind::Build);
    let owner = root.owner.as_mut().expect("an owner");
    owner.uid = 0;
    owner.gid = 0;
    let spec = resolve_with(&text, &root, &probe).unwrap();
    let Action::Build(build) = &spec.action else {
        panic!("build expected")
    };
    assert_eq!(
        build.build_args,
        BTreeMap::from([("GID".into(), "1000".into()), ("UID".into(), "1000".into())])
    );
    assert_eq!(
        spec.origins[&keys::build_arg("UID")],
        Origin::Invocation {
            input: "user root, so 1000".into()
        }
    );
}

#[test]
fn a_preset_without_a_build_context_builds_the_bundled_one_it_is_given() {
    // Without the bundled context's directory there is nothing to build, and the error says
    // how to get one.
    let error = resolve_with(CLAUDE, &inputs(LaunchKind::Build), &paths(&[])).unwrap_err();
    let PolicyError::Unlaunchable { hint, .. } = &error else {
        panic!("unlaunchable expected, found {error:?}")
    };
    assert!(hint.contains("agentc build"), "{hint}");
    assert_eq!(unlaunchable_field(error).0, "image.build_context");
    let mut given = inputs(LaunchKind::Build);
    given.build.bundled_context = Some("/cache/agentc/images/claude-code-0123".into());
    given.build.args = BTreeMap::from([
        ("AGENT_VERSION".into(), "2.0.14".into()),
        ("UID".into(), "4242".into()),
    ]);
    let spec = resolve_with(CLAUDE, &given, &paths(&[])).unwrap();
    let Action::Build(build) = &spec.action else {
        panic!("build expected")
    };
    assert_eq!(build.context, "/cache/agentc/images/claude-code-0123");
    assert_eq!(build.tag, "claude-code:latest");
    // The invocation's arguments over agentc's, each with its origin; the bundled Hermes
    // image is built for the user too, unlike agent-containers' own.
    assert_eq!(
        build.build_args,
        BTreeMap::from([
            ("AGENT_VERSION".into(), "2.0.14".into()),
            ("GID".into(), "1000".into()),
            ("UID".into(), "4242".into()),
        ])
    );
    assert_eq!(
        spec.origins[&keys::build_arg("UID")],
        Origin::Invocation {
            input: "--build-arg".into()
        }
    );
    assert_eq!(
        spec.origins[keys::BUILD_CONTEXT],
        Origin::Preset {
            agent: "claude-code".into()
        }
    );
    let hermes = CLAUDE.replace("claude-code", "hermes");
    let spec = resolve_with(&hermes, &given, &paths(&[])).unwrap();
    let Action::Build(build) = &spec.action else {
        panic!("build expected")
    };
    assert_eq!(build.build_args["GID"], "1000");
    // A custom profile has no bundled context to take.
    let custom = "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"busybox:1\"\n";
    let error = resolve_with(custom, &given, &paths(&[])).unwrap_err();
    assert_eq!(unlaunchable_field(error).0, "image.build_context");
}

#[test]
fn labels_name_the_profile_and_the_kind() {
    let spec = run(CLAUDE);
    let c = container(&spec);
    assert_eq!(c.labels[LABEL_PROFILE], "dev");
    assert_eq!(c.labels[LABEL_KIND], "run");
    assert_eq!(spec.digest().map(str::len), Some(64));
}

#[test]
fn owners_are_sanitized_like_agent_containers() {
    let owner = |name: &str| Owner {
        name: name.into(),
        uid: 501,
        gid: 20,
    };
    assert_eq!(owner_slug(&owner("Alice Smith")), "alice-smith-501");
    assert_eq!(owner_slug(&owner("..__")), "user-501");
    assert_eq!(owner_slug(&owner("é@x")), "x-501");
    assert_eq!(
        owner_slug(&owner(&"a".repeat(40))),
        format!("{}-501", "a".repeat(32))
    );
    let loaded = profile("name = \"dev\"\nagent = \"custom\"\n[image]\nref = \"x\"\n");
    assert_eq!(home_volume_name(&loaded.profile, Some(&owner("bob"))), None);
    // Without an owner (the Kubernetes rendering) the names hold no user.
    let codex = profile("name = \"dev\"\nagent = \"codex\"\n");
    assert_eq!(
        home_volume_name(&codex.profile, Some(&owner("bob"))).as_deref(),
        Some("codex-home-bob-501-dev")
    );
    assert_eq!(
        home_volume_name(&codex.profile, None).as_deref(),
        Some("codex-home-dev")
    );
    assert_eq!(
        crate::sandbox_container_name(&codex.profile, None),
        "agentc-sandbox-dev"
    );
    assert_eq!(
        crate::decant_container_name(&codex.profile, Some(&owner("bob"))),
        "agentc-decant-bob-501-dev"
    );
    let loaded = profile("name = \"dev\"\nagent = \"codex\"\nhome_volume = \"mine\"\n");
    assert_eq!(
        home_volume_name(&loaded.profile, Some(&owner("bob"))).as_deref(),
        Some("mine")
    );
}

#[test]
fn secret_values_never_reach_the_spec_or_its_explanation() {
    let text =
        format!("{CLAUDE}[provider]\nkind = \"anthropic\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n");
    let mut invocation = inputs(LaunchKind::Run);
    invocation
        .env
        .insert("ANTHROPIC_API_KEY".into(), "sk-very-secret".into());
    let loaded = profile(&text);
    let spec = resolve(&loaded, &invocation, &paths(&[])).unwrap();
    assert_eq!(
        container(&spec).env,
        [EnvVar {
            name: "ANTHROPIC_API_KEY".into(),
            value: EnvValue::Secret { required: true }
        }]
    );
    let json = serde_json::to_string(&spec).unwrap();
    assert!(!json.contains("sk-very-secret"));
    assert!(!crate::explain::explain(&loaded, &spec).contains("sk-very-secret"));
}

#[test]
fn an_environment_name_set_twice_is_an_error_naming_the_field() {
    let text = format!(
        "{CLAUDE}[provider]\nkind = \"anthropic\"\napi_key_env = \"LANGFUSE_PUBLIC_KEY\"\n\
         [egress]\nhosts = [\"lf.example\"]\n[langfuse]\nenabled = true\nbase_url = \"https://lf.example\"\n"
    );
    let Ok(loaded) = load("dev.toml", &text) else {
        return; // The loader may already reject the clash.
    };
    let error = resolve(&loaded, &inputs(LaunchKind::Run), &paths(&[])).unwrap_err();
    assert!(
        error
            .with_hint()
            .to_string()
            .contains("LANGFUSE_PUBLIC_KEY would be set twice"),
        "{error}"
    );
    assert!(matches!(
        error.location(),
        Location::Profile { field, .. } if field == "langfuse.public_key_env"
    ));
}

#[test]
fn hermes_endpoints_need_a_mapped_provider_kind() {
    let text = "name = \"dev\"\nagent = \"hermes\"\n[provider]\nkind = \"gemini\"\n\
        endpoint = \"https://llm.example\"\n";
    let Ok(loaded) = load("dev.toml", text) else {
        return; // The loader may already reject it.
    };
    let error = resolve(&loaded, &inputs(LaunchKind::Run), &paths(&[])).unwrap_err();
    assert!(
        error.with_hint().to_string().contains("hermes provider"),
        "{error}"
    );
}

#[test]
fn only_custom_agents_have_sandboxes_and_only_presets_have_seeds() {
    let error = resolve_with(CLAUDE, &inputs(LaunchKind::Sandbox), &paths(&[])).unwrap_err();
    assert!(matches!(error, PolicyError::Unlaunchable { .. }));
    let spec = resolve_with(CUSTOM, &inputs(LaunchKind::Sandbox), &paths(&[])).unwrap();
    assert_eq!(spec.kind, LaunchKind::Sandbox);
    let mut seed = inputs(LaunchKind::Seed);
    seed.seed_target = Some("/x".into());
    assert!(resolve_with(CUSTOM, &seed, &paths(&[])).is_err());
}

#[test]
fn invocation_images_and_agent_arguments_are_checked() {
    let loaded = profile("name = \"dev\"\nagent = \"claude-code\"\n");
    let invalid = |inputs: ResolveInputs| -> (String, String) {
        match resolve(&loaded, &inputs, &paths(&[])) {
            Err(PolicyError::Invalid {
                location: Location::Invocation { input },
                message,
                ..
            }) => (input, message),
            other => panic!("expected an invocation error, got {other:?}"),
        }
    };
    for (image, message) in [
        ("--privileged", "--image must not start with '-'"),
        ("", "--image is empty"),
        (
            "alpine\n--privileged",
            "--image must not contain whitespace or control characters",
        ),
        (
            "alpine\0",
            "--image must not contain whitespace or control characters",
        ),
    ] {
        let mut run = inputs(LaunchKind::Run);
        run.image = Some(image.to_string());
        assert_eq!(
            invalid(run),
            ("--image".to_string(), message.to_string()),
            "{image:?}"
        );
    }
    let mut run = inputs(LaunchKind::Run);
    run.agent_args = vec!["--ok".to_string(), "a\0b".to_string()];
    assert_eq!(
        invalid(run),
        (
            "agent arguments".to_string(),
            "agent argument 1 contains a nul byte".to_string()
        )
    );
}

#[test]
fn paths_normalize_without_touching_the_disk() {
    assert_eq!(normalize_path("/a/./b/../c//d/"), "/a/c/d");
    assert_eq!(normalize_path("/../.."), "/");
    let invocation = inputs(LaunchKind::Run);
    let resolve_host_path = |source: &str| {
        crate::paths::resolve_host_path(source, &invocation.home_dir, &invocation.profile_dir)
    };
    assert_eq!(resolve_host_path("~"), "/home/alice");
    assert_eq!(resolve_host_path("~/x"), "/home/alice/x");
    assert_eq!(resolve_host_path("../x"), "/home/alice/x");
    assert_eq!(resolve_host_path("/abs/./y"), "/abs/y");
}

#[test]
fn published_ports_behind_the_egress_proxy_are_relayed_by_it_and_follow_an_instance_move() {
    let text = "name = \"relay\"\nagent = \"custom\"\n[image]\nref = \"busybox:1.36\"\n\
                [egress]\nhosts = [\"api.example.com\"]\n[network]\npublish = [8080, \"9000/tcp\"]\n";
    let spec = resolve_with(text, &inputs(LaunchKind::Sandbox), &paths(&[])).unwrap();
    let mut c = container(&spec).clone();
    let egress = c.egress.clone().expect("an egress companion");
    let (block, _) = isolated_subnet(&egress.network.name.replace("-egress", ""));
    let workload = workload_address(block);
    // The workload publishes nothing itself, keeps its ports exposed, and has a fixed address.
    assert!(c.ports.is_empty());
    assert_eq!(
        c.exposed_ports,
        [8080, 9000].map(|port| ExposedPort {
            container_port: port,
            protocol: Protocol::Tcp
        })
    );
    assert_eq!(c.ipv4_address, Some(workload));
    assert_eq!(egress.proxy_address, proxy_address(block));
    // The proxy publishes the relays on the loopback address, daemon-picked host ports.
    let published: Vec<(u16, IpAddr, Option<u16>)> = egress
        .proxy
        .ports
        .iter()
        .map(|p| (p.container_port, p.host_ip, p.host_port))
        .collect();
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    assert_eq!(
        published,
        [
            (RELAY_PORT_BASE, loopback, None),
            (RELAY_PORT_BASE + 1, loopback, None)
        ]
    );
    let relays: Vec<String> = egress.relays().iter().map(|r| r.to_string()).collect();
    assert_eq!(
        relays,
        [
            format!("{RELAY_PORT_BASE}={workload}:8080"),
            format!("{}={workload}:9000", RELAY_PORT_BASE + 1)
        ]
    );
    assert_eq!(
        egress.proxy.command.last().map(String::as_str),
        Some(format!("--relay={}={workload}:9000", RELAY_PORT_BASE + 1).as_str())
    );
    // Another instance: the address and the relays move to the new block with the rest.
    c.egress_instance("n1");
    let moved = c.egress.as_ref().unwrap();
    let (new_block, _) = isolated_subnet(&moved.network.name.replace("-egress", ""));
    assert_ne!(new_block, block);
    assert_eq!(c.ipv4_address, Some(workload_address(new_block)));
    assert!(moved
        .relays()
        .iter()
        .all(|r| r.target.ip() == IpAddr::V4(workload_address(new_block))));
    assert_eq!(moved.relays().len(), 2);
    assert_eq!(moved.proxy.ports, egress.proxy.ports);
}

#[test]
fn an_outside_launch_without_publish_has_no_fixed_address_nor_relays() {
    let text = "name = \"norelay\"\nagent = \"custom\"\n[image]\nref = \"busybox:1.36\"\n\
                [egress]\nhosts = [\"api.example.com\"]\n";
    let spec = resolve_with(text, &inputs(LaunchKind::Sandbox), &paths(&[])).unwrap();
    let c = container(&spec);
    assert_eq!(c.ipv4_address, None);
    let egress = c.egress.as_ref().unwrap();
    assert!(egress.relays().is_empty() && egress.proxy.ports.is_empty());
}

#[test]
fn a_companion_for_another_workload_is_labelled_for_it_and_moved_to_its_instance() {
    let text = "name = \"copy\"\nagent = \"custom\"\n[image]\nref = \"busybox:1.36\"\n\
                [egress]\nhosts = [\"api.example.com\"]\n";
    let spec = resolve_with(text, &inputs(LaunchKind::Sandbox), &paths(&[])).unwrap();
    let mut c = container(&spec).clone();
    let before = c.egress.clone().unwrap();
    c.egress_for("copy-3", "3");
    let after = c.egress.as_ref().unwrap();
    for labels in [&after.network.labels, &after.proxy.labels] {
        assert_eq!(
            labels.get(LABEL_EGRESS_FOR).map(String::as_str),
            Some("copy-3")
        );
    }
    let base = before.network.name.strip_suffix("-egress").unwrap();
    assert_eq!(after.network.name, format!("{base}-3-egress"));
    assert_eq!(after.proxy.name, Some(format!("{base}-3-egress-proxy")));
    assert_ne!(after.network.subnet, before.network.subnet);
    // Without a companion nothing changes.
    let mut plain = ContainerSpec::empty("busybox:1.36");
    plain.egress_for("copy-3", "3");
    assert_eq!(plain, ContainerSpec::empty("busybox:1.36"));
}

#[test]
fn the_proxy_listens_on_its_isolated_address_which_moves_with_its_instance() {
    let text = "name = \"listen\"\nagent = \"custom\"\n[image]\nref = \"busybox:1.36\"\n\
                [egress]\nhosts = [\"api.example.com\", \"*.example.org\"]\n\
                wildcard_names_per_minute = 30\n[network]\npublish = [8080]\n";
    let spec = resolve_with(text, &inputs(LaunchKind::Sandbox), &paths(&[])).unwrap();
    let mut c = container(&spec).clone();
    let egress = c.egress.clone().expect("an egress companion");
    let address = egress.proxy_address;
    let words = |command: &[String], prefix: &str| -> Vec<String> {
        command
            .iter()
            .filter(|word| word.starts_with(prefix))
            .cloned()
            .collect()
    };
    assert_eq!(
        words(&egress.proxy.command, "--listen="),
        [format!("--listen={address}:3128")]
    );
    assert_eq!(
        words(&egress.proxy.command, "--dns="),
        [format!("--dns={address}:53")]
    );
    assert_eq!(
        words(&egress.proxy.command, "--wildcard-names-per-minute"),
        ["--wildcard-names-per-minute=30"]
    );
    assert_eq!(
        agentc_egress::listen_of(&egress.proxy.command),
        Some(std::net::SocketAddr::new(address.into(), 3128))
    );
    c.egress_instance("n1");
    let moved = c.egress.as_ref().unwrap();
    let new = moved.proxy_address;
    assert_ne!(new, address);
    assert_eq!(
        words(&moved.proxy.command, "--listen="),
        [format!("--listen={new}:3128")]
    );
    assert_eq!(
        words(&moved.proxy.command, "--dns="),
        [format!("--dns={new}:53")]
    );
    assert_eq!(c.dns, [IpAddr::V4(new)]);
    assert_eq!(moved.relays().len(), 1);
    // The proxy's audit volume moves with it, and the workload never mounts it.
    let audit = |egress: &crate::spec::EgressSpec| {
        egress
            .proxy
            .mounts
            .iter()
            .filter(|m| m.target == crate::spec::AUDIT_DIR_TARGET && !m.read_only)
            .map(|m| match &m.source {
                crate::spec::MountSource::Volume { name, .. } => name.clone(),
                other => panic!("{other:?}"),
            })
            .collect::<Vec<_>>()
    };
    let network = &moved.network.name;
    assert_eq!(audit(moved), [format!("{network}-audit")]);
    assert!(network.ends_with("-n1-egress"), "{network}");
    assert_eq!(
        words(&moved.proxy.command, "--audit-dir="),
        [format!("--audit-dir={}", crate::spec::AUDIT_DIR_TARGET)]
    );
    assert!(
        !c.mounts.iter().any(|m| m.target == crate::spec::AUDIT_DIR_TARGET
            || matches!(&m.source, crate::spec::MountSource::Volume { name, .. } if name.ends_with("-egress-audit"))),
        "{:?}",
        c.mounts
    );
}

#[test]
fn a_taken_subnet_moves_the_companion_to_another_block_under_the_same_names() {
    let text = "name = \"resub\"\nagent = \"custom\"\n[image]\nref = \"busybox:1.36\"\n\
                [egress]\nhosts = [\"api.example.com\"]\n[network]\npublish = [8080]\n";
    let spec = resolve_with(text, &inputs(LaunchKind::Sandbox), &paths(&[])).unwrap();
    let before = container(&spec).clone();
    let mut moved = before.clone();
    moved.egress_resubnet(1);
    let (old, new) = (
        before.egress.as_ref().unwrap(),
        moved.egress.as_ref().unwrap(),
    );
    // The names a user, `agentc ps` and the documentation use stay.
    assert_eq!(new.network.name, old.network.name);
    assert_eq!(new.proxy.name, old.proxy.name);
    assert_eq!(moved.network, before.network);
    let volumes = |c: &ContainerSpec| -> Vec<String> {
        c.mounts
            .iter()
            .chain(c.egress.as_ref().unwrap().proxy.mounts.iter())
            .filter_map(|m| match &m.source {
                crate::spec::MountSource::Volume { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(volumes(&moved), volumes(&before));
    // The block is the one of `NAME#1`, and every address follows it.
    let base = old.network.name.strip_suffix("-egress").unwrap();
    let (block, subnet) = crate::spec::isolated_subnet(&format!("{base}#1"));
    assert_eq!(new.network.subnet, subnet);
    assert_ne!(new.network.subnet, old.network.subnet);
    let address = crate::spec::proxy_address(block);
    assert_eq!(new.proxy_address, address);
    assert_eq!(moved.dns, [IpAddr::V4(address)]);
    assert_eq!(
        moved.ipv4_address,
        Some(crate::spec::workload_address(block))
    );
    let text = format!("{:?} {:?}", new.proxy.command, moved.env);
    assert!(!text.contains(&old.proxy_address.to_string()), "{text}");
    assert!(text.contains(&format!("--listen={address}:3128")), "{text}");
    assert!(text.contains(&format!("http://{address}:3128")), "{text}");
    assert_eq!(
        new.relays()[0].target.ip(),
        IpAddr::V4(crate::spec::workload_address(block))
    );
}

/// The egress proxy's argv of a resolved launch.
fn proxy_argv(spec: &LaunchSpec) -> Vec<String> {
    container(spec)
        .egress
        .as_ref()
        .unwrap()
        .proxy
        .command
        .clone()
}

#[test]
fn a_local_model_server_by_address_is_allowed_with_its_endpoint_port() {
    // Issue 19: an agent-containers profile naming its model server by address.
    let text = "name = \"local\"\nagent = \"codex\"\n[provider]\nkind = \"openai\"\n\
                endpoint = \"http://10.1.2.3:8000/v1\"\n[egress]\n\
                hosts = [\"10.1.2.3\", \"api.openai.com\"]\n";
    let argv = proxy_argv(&run(text));
    assert_eq!(
        argv.iter()
            .filter(|a| a.starts_with("--allow="))
            .collect::<Vec<_>>(),
        [
            "--allow=10.1.2.3",
            "--allow=api.openai.com",
            "--allow=10.1.2.3:8000"
        ]
    );
    // An endpoint the allowlist already allows at its port adds nothing.
    let text = text.replace("http://10.1.2.3:8000/v1", "https://api.openai.com/v1");
    let argv = proxy_argv(&run(&text));
    assert_eq!(argv.iter().filter(|a| a.starts_with("--allow=")).count(), 2);
}

#[test]
fn the_proxys_allow_words_are_the_hosts_parsed_when_the_profile_was_loaded() {
    let text = "name = \"hosts\"\nagent = \"claude-code\"\n[egress]\n\
                hosts = [\" API.Example.com. \", \".Example.org\", \"10.1.2.0/24:8000\", \
                \"[fd00::1]:443\"]\n";
    let loaded = profile(text);
    let parsed: Vec<String> = EgressHost::allowed(loaded.egress_hosts())
        .iter()
        .map(|spec| format!("--allow={spec}"))
        .collect();
    let words: Vec<String> = proxy_argv(&run(text))
        .into_iter()
        .filter(|word| word.starts_with("--allow="))
        .collect();
    assert_eq!(words, parsed);
    assert_eq!(
        words,
        [
            "--allow=api.example.com",
            "--allow=example.org",
            "--allow=*.example.org",
            "--allow=10.1.2.0/24:8000",
            "--allow=[fd00::1]:443"
        ]
    );
    // What the image's firewall and agentc explain read is the text as written.
    let hosts: Vec<&str> = loaded.egress_hosts().iter().map(EgressHost::text).collect();
    assert_eq!(hosts, loaded.profile.egress.hosts);
}

#[test]
fn a_host_the_proxy_refuses_in_a_profile_built_in_code_is_refused_not_dropped() {
    let text = "name = \"hosts\"\nagent = \"claude-code\"\n[egress]\n\
                hosts = [\"api.example.com\"]\n";
    let mut value = profile(text).profile;
    value.egress.hosts.push("0x0a000001".to_string());
    // Not validated: the entry reaches the resolver, parsed (and refused) once.
    let loaded = LoadedProfile::from_profile("dev.toml", value);
    assert!(loaded.egress_hosts()[1].specs().is_err());
    let error = resolve(&loaded, &inputs(LaunchKind::Run), &paths(&[]))
        .expect_err("a host the proxy refuses");
    let text = error.with_hint().to_string();
    assert!(text.contains("egress.hosts"), "{text}");
    assert!(text.contains("invalid host spec `0x0a000001`"), "{text}");
}

#[test]
fn an_upstream_proxy_is_chained_through_and_the_sandbox_still_uses_agentcs_proxy() {
    let corporate = "name = \"corp\"\nagent = \"claude-code\"\n[proxy]\n\
                     http = \"http://proxy.corp.example:3128\"\n\
                     https = \"http://proxy.corp.example:3128\"\n\
                     no_proxy = [\"localhost\", \".corp.example\", \"10.0.0.0/8\"]\n\
                     [egress]\nhosts = [\"proxy.corp.example\"]\n";
    let spec = run(corporate);
    let argv = proxy_argv(&spec);
    let tail: Vec<&str> = argv
        .iter()
        .map(String::as_str)
        .skip_while(|a| !a.starts_with("--upstream"))
        .collect();
    assert_eq!(
        tail,
        [
            "--upstream=proxy.corp.example:3128",
            "--upstream-all",
            "--direct=localhost",
            "--direct=*.localhost",
            "--direct=corp.example",
            "--direct=*.corp.example",
            "--direct=10.0.0.0/8",
        ]
    );
    let env = env_of(container(&spec));
    let value = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let proxy = spec_proxy_url(&spec);
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
        assert_eq!(value(name).as_deref(), Some(proxy.as_str()), "{name}");
    }
    assert_eq!(
        value("NO_PROXY").as_deref(),
        Some("localhost,127.0.0.1,::1")
    );
    // An allowlist without the upstream's host: only its hosts go to the upstream.
    let named = corporate.replace(
        "hosts = [\"proxy.corp.example\"]",
        "hosts = [\"api.anthropic.com\"]",
    );
    let argv = proxy_argv(&run(&named));
    assert!(argv.contains(&"--upstream=proxy.corp.example:3128".to_string()));
    assert!(!argv.contains(&"--upstream-all".to_string()), "{argv:?}");
}

#[test]
fn an_https_upstream_is_spoken_to_over_tls_trusting_the_profiles_ca() {
    let text = "name = \"corp\"\nagent = \"opencode\"\n[proxy]\n\
                https = \"https://secure-proxy.corp.example:8443\"\nca_dir = \"ca-dir\"\n\
                [egress]\nhosts = [\"secure-proxy.corp.example\"]\n";
    let probe = paths(&[("/home/alice/profiles/ca-dir", PathKind::Directory)]);
    let spec = resolve_with(text, &inputs(LaunchKind::Run), &probe).unwrap();
    let argv = proxy_argv(&spec);
    assert!(
        argv.contains(&"--upstream=https://secure-proxy.corp.example:8443".to_string()),
        "{argv:?}"
    );
    assert!(argv.contains(&"--upstream-all".to_string()), "{argv:?}");
    let ca = format!("--upstream-ca={}", crate::spec::UPSTREAM_CA_TARGET);
    assert_eq!(argv.iter().filter(|a| **a == ca).count(), 1, "{argv:?}");
    let egress = container(&spec).egress.as_ref().unwrap();
    let mount = egress
        .proxy
        .mounts
        .iter()
        .find(|m| m.target == crate::spec::UPSTREAM_CA_TARGET)
        .expect("the profile's CA mounted in the proxy");
    assert!(mount.read_only);
    assert!(
        matches!(&mount.source, crate::spec::MountSource::Bind { path } if path.ends_with("ca-dir")),
        "{mount:?}"
    );
    // Without a CA, Mozilla's roots only: no --upstream-ca, no mount.
    let public = text.replace("ca_dir = \"ca-dir\"\n", "");
    let spec = run(&public);
    let argv = proxy_argv(&spec);
    assert!(
        !argv.iter().any(|a| a.starts_with("--upstream-ca=")),
        "{argv:?}"
    );
    let egress = container(&spec).egress.as_ref().unwrap();
    // Only the proxy's own audit volume.
    let targets: Vec<&str> = egress
        .proxy
        .mounts
        .iter()
        .map(|m| m.target.as_str())
        .collect();
    assert_eq!(
        targets,
        [crate::spec::AUDIT_DIR_TARGET],
        "{:?}",
        egress.proxy.mounts
    );
}

#[test]
fn two_upstreams_carry_tunnels_and_plain_http_apart() {
    let text = "name = \"corp\"\nagent = \"claude-code\"\n[proxy]\n\
                http = \"http://plain.corp.example:3128\"\n\
                https = \"http://tunnels.corp.example:3129\"\n\
                [egress]\nhosts = [\"plain.corp.example\"]\n";
    let argv = proxy_argv(&run(text));
    let tail: Vec<&str> = argv
        .iter()
        .map(String::as_str)
        .skip_while(|a| !a.starts_with("--upstream"))
        .collect();
    assert_eq!(
        tail,
        [
            "--upstream=tunnels.corp.example:3129",
            "--upstream-http=plain.corp.example:3128",
            "--upstream-all",
        ]
    );
    // One upstream for both: no --upstream-http.
    let same = text.replace(
        "http://tunnels.corp.example:3129",
        "http://plain.corp.example:3128",
    );
    let argv = proxy_argv(&run(&same));
    assert!(
        !argv.iter().any(|a| a.starts_with("--upstream-http")),
        "{argv:?}"
    );
}

fn spec_proxy_url(spec: &LaunchSpec) -> String {
    let egress = container(spec).egress.as_ref().unwrap();
    format!(
        "http://{}:{}",
        egress.proxy_address,
        crate::spec::PROXY_PORT
    )
}

/// Everything a spec shows of itself: its JSON, its `Debug`, its explanation and argv.
fn shown(loaded: &LoadedProfile, spec: &LaunchSpec) -> String {
    let mut shown = serde_json::to_string(spec).unwrap();
    shown.push_str(&format!("{spec:?}"));
    shown.push_str(&crate::explain(loaded, spec));
    shown
}

#[test]
fn upstream_credentials_go_to_the_proxy_by_name_and_never_into_the_spec() {
    // Issue 19: `http://user:password@proxy:3128`, percent-encoded as curl reads it.
    let text = "name = \"corp\"\nagent = \"claude-code\"\n[proxy]\n\
                http = \"http://al%40ice:hun%3Ater2@proxy.corp.example:3128\"\n\
                https = \"http://al%40ice:hun%3Ater2@proxy.corp.example:3128\"\n\
                [egress]\nhosts = [\"proxy.corp.example\"]\n";
    let loaded = profile(text);
    let spec = run(text);
    let argv = proxy_argv(&spec);
    let tail: Vec<&str> = argv
        .iter()
        .map(String::as_str)
        .skip_while(|a| !a.starts_with("--upstream"))
        .collect();
    assert_eq!(
        tail,
        [
            "--upstream=proxy.corp.example:3128",
            "--upstream-auth-env=AGENTC_UPSTREAM_AUTH",
            "--upstream-all",
        ]
    );
    let egress = container(&spec).egress.as_ref().unwrap();
    let auth = egress
        .proxy
        .env
        .iter()
        .find(|var| var.name == crate::UPSTREAM_AUTH_ENV)
        .expect("the proxy's credentials variable");
    assert_eq!(auth.value, EnvValue::Secret { required: true });
    assert_eq!(
        egress.proxy.held_secrets.get(crate::UPSTREAM_AUTH_ENV),
        Some("al@ice:hun:ter2")
    );
    // The workload talks to agentc's proxy: it holds no credential.
    let workload = container(&spec);
    assert!(
        workload.held_secrets.is_empty(),
        "{:?}",
        workload.held_secrets
    );
    assert!(
        !workload
            .env
            .iter()
            .any(|var| matches!(var.value, EnvValue::Secret { .. })),
        "{:?}",
        workload.env
    );
    let shown = shown(&loaded, &spec);
    for value in ["hunter2", "hun%3Ater2", "hun:ter2"] {
        assert!(!shown.contains(value), "{value} in {shown}");
    }
    assert!(shown.contains("AGENTC_UPSTREAM_AUTH"), "{shown}");
    // The digest holds no credential either: a rotated password is the same launch.
    let rotated = run(&text.replace("hun%3Ater2", "rotated-pw"));
    assert_eq!(spec.digest(), rotated.digest());
}

#[test]
fn each_upstream_gets_its_own_credentials_variable() {
    let text = "name = \"corp\"\nagent = \"claude-code\"\n[proxy]\n\
                http = \"http://plain-user:plain-pw@plain.corp.example:3128\"\n\
                https = \"http://tunnel-user:tunnel-pw@tunnels.corp.example:3129\"\n\
                [egress]\nhosts = [\"plain.corp.example\"]\n";
    let spec = run(text);
    let argv = proxy_argv(&spec);
    for arg in [
        "--upstream=tunnels.corp.example:3129",
        "--upstream-auth-env=AGENTC_UPSTREAM_AUTH",
        "--upstream-http=plain.corp.example:3128",
        "--upstream-http-auth-env=AGENTC_UPSTREAM_HTTP_AUTH",
    ] {
        assert!(argv.contains(&arg.to_string()), "{arg}: {argv:?}");
    }
    let held = &container(&spec).egress.as_ref().unwrap().proxy.held_secrets;
    assert_eq!(
        held.get(crate::UPSTREAM_AUTH_ENV),
        Some("tunnel-user:tunnel-pw")
    );
    assert_eq!(
        held.get(crate::UPSTREAM_HTTP_AUTH_ENV),
        Some("plain-user:plain-pw")
    );
    // One proxy with other credentials for plain HTTP is two upstreams too, never one of
    // the two users silently dropped.
    let same_host = text.replace("tunnels.corp.example:3129", "plain.corp.example:3128");
    let argv = proxy_argv(&run(&same_host));
    assert!(
        argv.contains(&"--upstream-http-auth-env=AGENTC_UPSTREAM_HTTP_AUTH".to_string()),
        "{argv:?}"
    );
    // The same URL twice: one upstream, one variable.
    let same = text.replace(
        "http://tunnel-user:tunnel-pw@tunnels.corp.example:3129",
        "http://plain-user:plain-pw@plain.corp.example:3128",
    );
    let argv = proxy_argv(&run(&same));
    assert!(
        !argv.iter().any(|a| a.starts_with("--upstream-http")),
        "{argv:?}"
    );
    assert!(argv.contains(&"--upstream-auth-env=AGENTC_UPSTREAM_AUTH".to_string()));
}

#[test]
fn with_the_image_firewall_the_proxy_url_with_credentials_is_a_secret_the_profile_holds() {
    let text = "name = \"corp\"\nagent = \"claude-code\"\n[proxy]\n\
                http = \"http://user:hunter2@proxy.corp.example:3128\"\n\
                https = \"http://proxy.corp.example:3129/\"\n\
                [egress]\nhosts = [\"proxy.corp.example\"]\nenforce = \"image\"\n";
    let loaded = profile(text);
    let spec = run(text);
    let workload = container(&spec);
    let env = env_of(workload);
    for name in ["HTTP_PROXY", "http_proxy"] {
        assert!(
            env.contains(&(name.to_string(), "<secret required=true>".to_string())),
            "{name}: {env:?}"
        );
        assert_eq!(
            workload.held_secrets.get(name),
            Some("http://user:hunter2@proxy.corp.example:3128")
        );
    }
    // A URL without credentials stays a literal.
    assert!(
        env.contains(&(
            "HTTPS_PROXY".to_string(),
            "http://proxy.corp.example:3129".to_string()
        )),
        "{env:?}"
    );
    let shown = shown(&loaded, &spec);
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("with its credentials"), "{shown}");
}

#[test]
fn an_upstream_url_agentcs_proxy_cannot_chain_through_is_refused_without_its_credentials() {
    for (proxy, field) in [
        (
            "http = \"ftp://user:hunter2@proxy.corp.example:21\"",
            "proxy.http",
        ),
        (
            "https = \"socks5://user:hunter2@secure-proxy.corp.example:1080\"",
            "proxy.https",
        ),
    ] {
        let text = format!(
            "name = \"corp\"\nagent = \"claude-code\"\n[proxy]\n{proxy}\n\
             [egress]\nhosts = [\"api.anthropic.com\"]\n"
        );
        let errors = load("dev.toml", &text).unwrap_err();
        let shown = format!("{}\n{errors:?}", errors.with_hint());
        assert!(shown.contains(field), "{proxy}: {shown}");
        assert!(
            !shown.contains("hunter2"),
            "a credential in an error: {shown}"
        );
    }
}

/// The `--credential=` words of a launch's proxy.
fn credential_words(spec: &LaunchSpec) -> Vec<String> {
    proxy_argv(spec)
        .into_iter()
        .filter(|a| a.starts_with("--credential="))
        .collect()
}

#[test]
fn a_provider_endpoint_on_a_gateway_behind_an_upstream_gets_the_key_at_its_port() {
    // Issue 36: an agent-containers profile with its provider on a corporate gateway at its
    // own port and an upstream proxy; the allowlist names neither the gateway nor its port.
    let text = "name = \"corp\"\nagent = \"claude-code\"\n[provider]\nkind = \"anthropic\"\n\
                endpoint = \"https://GW.corp.test:8443/v1\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n\
                [proxy]\nhttps = \"http://proxy.corp.test:3128\"\n\
                [egress]\nhosts = [\"github.com\"]\n";
    let loaded = profile(text);
    let spec = resolve_with(text, &inputs(LaunchKind::Run), &paths(&[])).unwrap();
    assert_eq!(
        credential_words(&spec),
        [
            "--credential=name=anthropic,header=x-api-key,env=ANTHROPIC_API_KEY,\
          host=gw.corp.test:8443"
        ]
    );
    let argv = proxy_argv(&spec);
    assert!(
        argv.contains(&"--allow=gw.corp.test:8443".to_string()),
        "{argv:?}"
    );
    assert!(
        argv.contains(&"--upstream=proxy.corp.test:3128".to_string()),
        "{argv:?}"
    );
    // The sandbox holds a placeholder; the proxy the key, by name.
    let c = container(&spec);
    let key = c
        .env
        .iter()
        .find(|v| v.name == "ANTHROPIC_API_KEY")
        .unwrap();
    assert!(matches!(key.value, EnvValue::Placeholder { .. }), "{key:?}");
    let explained = crate::explain(&loaded, &spec);
    assert!(
        explained.contains(
            "sets x-api-key on requests to gw.corp.test:8443 (terminated by the proxy, then \
             sent through the upstream proxy proxy.corp.test:3128's CONNECT) only"
        ),
        "{explained}"
    );
    assert!(!explained.contains("goes nowhere"), "{explained}");
}

#[test]
fn behind_an_upstream_that_gets_every_destination_the_default_provider_host_gets_the_key() {
    // The corporate-proxy profile (the allowlist names only the upstream, which then decides):
    // api.anthropic.com is not in egress.hosts, yet the proxy passes it to the upstream.
    let text = "name = \"corp\"\nagent = \"claude-code\"\n[provider]\nkind = \"anthropic\"\n\
                api_key_env = \"ANTHROPIC_API_KEY\"\n[proxy]\n\
                http = \"http://proxy.corp.test:3128\"\nhttps = \"http://proxy.corp.test:3128\"\n\
                [egress]\nhosts = [\"proxy.corp.test\"]\n";
    let spec = run(text);
    assert_eq!(
        credential_words(&spec),
        [
            "--credential=name=anthropic,header=x-api-key,env=ANTHROPIC_API_KEY,\
          host=api.anthropic.com"
        ]
    );
    // A no_proxy entry for it goes direct, where egress.hosts decides: refused at validation.
    let direct = text.replace("[egress]", "no_proxy = [\"api.anthropic.com\"]\n[egress]");
    let error = load("p.toml", &direct).unwrap_err().with_hint().to_string();
    assert!(
        error.contains("provider.api_key_env names the key of api.anthropic.com"),
        "{error}"
    );
}

/// A custom sandbox with an isolation floor of gVisor, and `extra` in its `[security]`.
fn floored(extra: &str) -> String {
    format!(
        "name = \"floored\"\nagent = \"custom\"\n\n[image]\nref = \"busybox:1.36\"\n\n\
         [security]\nisolation = {{ min = \"gvisor\" }}\n{extra}"
    )
}

/// The instance whose floor the engine met with `runtime` at `tier`.
fn met_with(runtime: &str, tier: IsolationTier) -> ResolveInputs {
    let mut inputs = inputs(LaunchKind::Run);
    inputs.instance.floor = Some(ChosenRuntime {
        name: runtime.to_string(),
        tier,
        above_floor: None,
    });
    inputs
}

#[test]
fn a_floor_met_by_the_instance_places_the_container_and_keeps_the_digest() {
    let unmet = run(&floored(""));
    assert_eq!(container(&unmet).runtime, None);
    assert_eq!(isolation::placement(container(&unmet)), None);
    let met = resolve_with(
        &floored(""),
        &met_with("runsc", IsolationTier::Gvisor),
        &paths(&[]),
    )
    .unwrap();
    let placed = container(&met);
    assert_eq!(placed.runtime.as_deref(), Some("runsc"));
    assert_eq!(placed.labels[LABEL_ISOLATION], "gvisor");
    assert_eq!(placed.labels[LABEL_RUNTIME], "runsc");
    assert_eq!(isolation::placement(placed), Some(("runsc", "gvisor")));
    // The same launch: one digest whichever runtime met its floor.
    assert_eq!(met.digest(), unmet.digest());
    assert_eq!(
        met.origins[keys::RUNTIME],
        Origin::Invocation {
            input: "the isolation floor".into()
        }
    );
    assert!(met.origins.contains_key(&keys::label(LABEL_ISOLATION)));
}

#[test]
fn a_floor_runtime_for_a_launch_without_a_floor_or_against_its_named_runtime_is_refused() {
    let plain = "name = \"plain\"\nagent = \"custom\"\n\n[image]\nref = \"busybox:1.36\"\n";
    let error = resolve_with(
        plain,
        &met_with("runsc", IsolationTier::Gvisor),
        &paths(&[]),
    )
    .unwrap_err();
    assert!(matches!(error, PolicyError::Unlaunchable { .. }));
    assert!(error
        .with_hint()
        .to_string()
        .contains("a runtime (runsc) was chosen for an isolation floor the launch does not have"));
    let named = floored("runtime = \"kata\"\n");
    let error = resolve_with(
        &named,
        &met_with("runsc", IsolationTier::Gvisor),
        &paths(&[]),
    )
    .unwrap_err();
    assert!(error.with_hint().to_string().contains(
        "security.runtime names \"kata\", but the isolation floor's runtime chosen is \"runsc\""
    ));
    // The runtime it names, chosen: placed, the runtime's origin still the profile's line.
    let met = resolve_with(
        &named,
        &met_with("kata", IsolationTier::Microvm),
        &paths(&[]),
    )
    .unwrap();
    assert_eq!(container(&met).labels[LABEL_ISOLATION], "microvm");
    assert!(matches!(met.origins[keys::RUNTIME], Origin::Profile { .. }));
}
