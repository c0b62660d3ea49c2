use std::collections::BTreeMap;

use agentc_policy::{AgentName, LaunchKind, Owner, PathKind, PathProbe, ResolveInputs};

use super::*;
use agentc_policy::Hinted;

struct NoFiles;

impl PathProbe for NoFiles {
    fn kind(&self, _: &str) -> PathKind {
        PathKind::Directory
    }
}

const AGENTS: [AgentName; 5] = [
    AgentName::ClaudeCode,
    AgentName::Codex,
    AgentName::Opencode,
    AgentName::Hermes,
    AgentName::Custom,
];

/// Every combination of the options: each template either loads and resolves as written, or
/// is refused with an error naming the option.
#[test]
fn every_flag_combination_validates_as_written_or_is_refused_by_option() {
    let mut written = 0;
    for agent in AGENTS {
        for image in [None, Some("registry.example:5000/team/box:1.4")] {
            for egress in [
                None,
                Some(EgressChoice::Deny),
                Some(EgressChoice::Allowlist),
            ] {
                for hosts in [
                    vec![],
                    vec!["pypi.org".to_string(), "*.example.com".to_string()],
                ] {
                    let options = InitOptions {
                        agent,
                        name: "starter".into(),
                        image: image.map(str::to_string),
                        egress,
                        hosts: hosts.clone(),
                    };
                    let text = match template(&options) {
                        Ok(text) => text,
                        Err(LifecycleError::Init { option, .. }) => {
                            let custom_without_image =
                                agent == AgentName::Custom && image.is_none();
                            let deny_with_hosts =
                                egress == Some(EgressChoice::Deny) && !hosts.is_empty();
                            assert!(
                                (option == "--image" && custom_without_image)
                                    || (option == "--host" && deny_with_hosts),
                                "{options:?} refused by {option}"
                            );
                            continue;
                        }
                        Err(other) => panic!("{other}"),
                    };
                    let loaded = agentc_policy::load("starter.toml", &text)
                        .unwrap_or_else(|errors| panic!("{options:?}:\n{errors}\n{text}"));
                    assert_eq!(loaded.profile.agent, agent);
                    if let Some(image) = image {
                        assert_eq!(loaded.profile.image.reference.as_deref(), Some(image));
                    }
                    if !hosts.is_empty() {
                        assert_eq!(loaded.profile.egress.hosts, hosts);
                    }
                    let inputs = ResolveInputs {
                        kind: LaunchKind::Run,
                        workspace: "/home/dev/src/app".into(),
                        profile_dir: "/home/dev".into(),
                        home_dir: "/home/dev".into(),
                        owner: Some(Owner {
                            name: "dev".into(),
                            uid: 1000,
                            gid: 1000,
                        }),
                        image: None,
                        seed_target: None,
                        agent_args: Vec::new(),
                        env: BTreeMap::new(),
                        decant_sources: Vec::new(),
                        instance: agentc_policy::Instance::default(),
                        build: Default::default(),
                    };
                    let spec = agentc_policy::resolve(&loaded, &inputs, &NoFiles)
                        .unwrap_or_else(|error| panic!("{options:?}: {error}"));
                    says_where_egress_is_enforced(&options, &text, &loaded, &spec);
                    says_who_holds_the_key(&options, &text, &inputs);
                    written += 1;
                }
            }
        }
    }
    // 60 combinations; 15 refused: custom without --image (6), --host under deny (10), both (1).
    assert_eq!(written, 45);
}

/// The template's `[provider]` block, uncommented as its words say (with the host they ask to
/// add), validates, and the key goes where they say: held by the egress proxy, or passed into
/// the sandbox's environment.
fn says_who_holds_the_key(options: &InitOptions, text: &str, inputs: &ResolveInputs) {
    if !text.contains("# [provider]") {
        return;
    }
    let mut uncommented = text
        .replace("# [provider]\n# kind = ", "[provider]\nkind = ")
        .replace("\n# api_key_env = ", "\napi_key_env = ");
    if let Some(host) = text
        .split("# \"")
        .nth(1)
        .and_then(|rest| rest.split_once("\" to the hosts above"))
        .map(|(host, _)| host.to_string())
    {
        uncommented = uncommented.replacen("hosts = [", &format!("hosts = [\"{host}\", "), 1);
    }
    let loaded = agentc_policy::load("starter.toml", &uncommented)
        .unwrap_or_else(|errors| panic!("{options:?}:\n{errors}\n{uncommented}"));
    let spec = agentc_policy::resolve(&loaded, inputs, &NoFiles)
        .unwrap_or_else(|error| panic!("{options:?}: {error}\n{uncommented}"));
    let agentc_policy::Action::Container(container) = &spec.action else {
        panic!("{options:?}: a run launches a container");
    };
    let held = container
        .egress
        .as_ref()
        .is_some_and(|egress| !egress.credentials.is_empty());
    let says_held = text.contains("hands it to the egress proxy");
    assert_eq!(held, says_held, "{options:?}\n{uncommented}");
    let in_sandbox = container.env.iter().any(|var| {
        var.name.ends_with("_API_KEY")
            && matches!(var.value, agentc_policy::EnvValue::Secret { .. })
    });
    assert_eq!(in_sandbox, !says_held, "{options:?}\n{uncommented}");
}

/// The template's words on egress agree with what `agentc explain` says of the launch: the
/// egress proxy where the spec has one, not enforced where the findings say so, no network for
/// deny; and a custom sandbox's keep-alive runs under docker's init, so that it stops at once.
fn says_where_egress_is_enforced(
    options: &InitOptions,
    text: &str,
    loaded: &agentc_policy::LoadedProfile,
    spec: &agentc_policy::LaunchSpec,
) {
    let agentc_policy::Action::Container(container) = &spec.action else {
        panic!("{options:?}: a run launches a container");
    };
    let unenforced = agentc_policy::findings(loaded, spec)
        .iter()
        .any(|finding| finding.code == "egress-unenforced");
    let proxy = text.contains("agentc's egress proxy enforces it outside the container");
    let says_unenforced = text.contains("(egress-unenforced)");
    let deny = text.contains("the container has no network at all");
    assert_eq!(proxy, container.egress.is_some(), "{options:?}\n{text}");
    assert_eq!(says_unenforced, unenforced, "{options:?}\n{text}");
    assert_eq!(
        deny,
        loaded.profile.egress.mode == agentc_policy::EgressMode::Deny,
        "{options:?}\n{text}"
    );
    let image_firewall = text.contains("only the\n# image's own firewall");
    assert_eq!(
        image_firewall,
        container.egress.is_none()
            && !unenforced
            && loaded.profile.egress.mode == agentc_policy::EgressMode::Allowlist,
        "{options:?}\n{text}"
    );
    // An init as PID 1 for every template: the presets' default, the custom template's own.
    assert!(container.init, "{options:?}\n{text}");
}

#[test]
fn defaults_are_an_allowlist_for_presets_and_deny_for_custom() {
    let claude = template(&InitOptions {
        agent: AgentName::ClaudeCode,
        name: "dev".into(),
        image: None,
        egress: None,
        hosts: vec![],
    })
    .unwrap();
    assert!(
        claude.contains("mode = \"allowlist\"\nhosts = [\"api.anthropic.com\"]"),
        "{claude}"
    );
    assert!(
        claude.contains("# ref = \"claude-code:latest\""),
        "{claude}"
    );
    let custom = template(&InitOptions {
        agent: AgentName::Custom,
        name: "box".into(),
        image: Some("alpine:3".into()),
        egress: None,
        hosts: vec![],
    })
    .unwrap();
    assert!(custom.contains("mode = \"deny\""), "{custom}");
    assert!(
        custom.contains("command = [\"tail\", \"-f\", \"/dev/null\"]"),
        "{custom}"
    );
}

#[test]
fn hostile_option_values_stay_inside_their_toml_string() {
    let options = |image: &str, host: &str| InitOptions {
        agent: AgentName::Custom,
        name: "box".into(),
        image: Some(image.into()),
        egress: Some(EgressChoice::Allowlist),
        hosts: vec![host.into()],
    };
    let error = template(&options("alpine:3\nprivileged = true", "a.example"))
        .unwrap_err()
        .with_hint()
        .to_string();
    assert!(error.starts_with("--image: "), "{error}");
    let error = template(&options("alpine:3", "a.example\r\n[security]")).unwrap_err();
    assert!(
        error.with_hint().to_string().starts_with("--host: "),
        "{error}"
    );
    // Quotes and brackets stay inside their strings: no key or table is added, and the policy
    // refuses the strange values by their field.
    let text = template(&options(
        "alpine:3\" privileged = true #",
        "a.example\"] [security] allow_docker_socket = true #",
    ))
    .unwrap();
    let errors = agentc_policy::load("box.toml", &text)
        .unwrap_err()
        .with_hint()
        .to_string();
    assert!(!errors.contains("unknown field"), "{errors}");
    assert!(errors.contains("image.ref"), "{errors}");
}

#[test]
fn names_come_from_file_stems_when_they_are_names() {
    assert_eq!(name_from_stem("claude-dev").as_deref(), Some("claude-dev"));
    assert_eq!(name_from_stem("My Profile"), None);
    assert_eq!(name_from_stem("1abc"), None);
    assert!(is_profile_name(&"a".repeat(63)));
    assert!(!is_profile_name(&"a".repeat(64)));
    let error = template(&InitOptions {
        agent: AgentName::Codex,
        name: "Bad Name".into(),
        image: None,
        egress: None,
        hosts: vec![],
    })
    .unwrap_err()
    .with_hint()
    .to_string();
    assert!(
        error.starts_with("--name: \"Bad Name\" is not a profile name\n  hint: "),
        "{error}"
    );
}
