use super::*;
use crate::inputs::{DecantSource, PathKind, ResolveInputs};
use crate::load::load;
use crate::resolve::resolve;
use crate::resolve::tests::FakePaths;
use crate::*;
use std::collections::BTreeMap;

/// resolve's virtual machine (alice's workspace), with the files these profiles point at.
fn paths() -> FakePaths {
    crate::resolve::tests::paths(&[
        ("/home/alice/profiles/data", PathKind::Directory),
        ("/home/alice/images", PathKind::Directory),
        ("/home/alice/profiles/ca.pem", PathKind::File),
        ("/home/alice/profiles/seed.json", PathKind::File),
    ])
}

fn inputs(kind: LaunchKind, env: &[(&str, &str)]) -> ResolveInputs {
    ResolveInputs {
        seed_target: Some("/home/claude/.claude/settings.json".to_string()),
        agent_args: vec!["--resume".to_string()],
        env: env
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect::<BTreeMap<_, _>>(),
        decant_sources: vec![DecantSource {
            profile: "dev".to_string(),
            agent: AgentName::ClaudeCode,
            home_volume: "claude-code-home-alice-1000-dev".to_string(),
        }],
        ..crate::resolve::tests::inputs(kind)
    }
}

fn explained(text: &str, kind: LaunchKind, env: &[(&str, &str)]) -> String {
    let loaded = load("dev.toml", text).unwrap_or_else(|error| panic!("{error}"));
    let spec =
        resolve(&loaded, &inputs(kind, env), &paths()).unwrap_or_else(|error| panic!("{error}"));
    // The digest changes with every spec change; keep snapshots about the explanation.
    let digest = spec.digest().expect("resolve labels the digest");
    explain(&loaded, &spec).replace(digest, "<digest>")
}

const CLAUDE: &str = r#"name = "dev"
agent = "claude-code"

[provider]
kind = "anthropic"
api_key_env = "ANTHROPIC_API_KEY"

[egress]
hosts = ["api.anthropic.com"]
enforce = "image"

[proxy]
https = "http://proxy.corp:3128"
ca_file = "ca.pem"

[resources]
memory = "6g"

[security]
add_capabilities = ["SYS_PTRACE"]

[network]
publish = [8080]

[[mounts]]
type = "directory"
source = "data"
target = "/data"
read_only = false

[[mounts]]
type = "seed"
source = "seed.json"
target = "/home/claude/.claude/settings.json"
"#;

#[test]
fn origins_read_as_words() {
    assert_eq!(origin_words(&Origin::Default), "default");
    assert_eq!(
        origin_words(&Origin::Preset {
            agent: "codex".into()
        }),
        "preset codex"
    );
    assert_eq!(
        origin_words(&Origin::Profile {
            field: "resources.memory".into(),
            line: Some(12),
            column: Some(10)
        }),
        "profile line 12 (resources.memory)"
    );
    assert_eq!(
        origin_words(&Origin::Environment {
            variable: "AGENTC_MEM_LIMIT".into()
        }),
        "env AGENTC_MEM_LIMIT"
    );
    assert_eq!(
        origin_words(&Origin::Invocation {
            input: "--workspace".into()
        }),
        "invocation --workspace"
    );
}

#[test]
fn a_claude_code_run_explained() {
    let text = explained(CLAUDE, LaunchKind::Run, &[("AGENTC_PIDS_LIMIT", "off")]);
    assert!(text.contains("ANTHROPIC_API_KEY (secret, passed through from your environment)"));
    assert!(
        text.contains("  memory: 6g, no swap  [profile line 17 (resources.memory)]"),
        "{text}"
    );
    assert!(
        text.contains("  - process limit removed  [env AGENTC_PIDS_LIMIT]"),
        "{text}"
    );
    assert!(
        text.contains(
            "  - capability SYS_PTRACE  [profile line 20 (security.add_capabilities[0])]"
        ),
        "{text}"
    );
    assert!(
        text.contains("  - writable bind mount /data  [profile line 25 (mounts[0])]"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn a_deny_run_explains_the_missing_network() {
    let text = explained(
        "name = \"dev\"\nagent = \"codex\"\n[egress]\nmode = \"deny\"\n",
        LaunchKind::Run,
        &[("AGENTC_NETWORK", "lab")],
    );
    assert!(
        text.contains("  network: none (loopback only)  [profile line 4 (egress.mode)]"),
        "{text}"
    );
    assert!(
        text.contains("not joined: the network from env AGENTC_NETWORK"),
        "{text}"
    );
    assert!(
        text.contains("egress deny also removes the network"),
        "{text}"
    );
    assert!(text.contains("widens the sandbox\n  (nothing)\n"), "{text}");
}

#[test]
fn a_custom_sandbox_explained() {
    let text = explained(
            "name = \"lab\"\nagent = \"custom\"\n[image]\nref = \"strix:1\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n\
             [network]\nname = \"strix\"\nhost_gateway = true\n[security]\nfuse = true\nread_only_root = false\n",
            LaunchKind::Run,
            &[],
        );
    assert!(
        text.contains("not enforced: a custom image has no egress firewall"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn an_allowlist_enforced_outside_explained() {
    let text = explained(
        "name = \"lab\"\nagent = \"custom\"\n[image]\nref = \"strix:1\"\n\
         [egress]\nhosts = [\"api.example.com\", \".example.org\", \"git.example.net:22\"]\n\
         outside_network = \"corp\"\nallow_cidrs = [\"10.20.0.0/16\"]\n",
        LaunchKind::Run,
        &[],
    );
    assert!(
        text.contains("enforced outside the sandbox by agentc's egress proxy"),
        "{text}"
    );
    assert!(text.contains("through network corp"), "{text}");
    assert!(
        text.contains("private or reserved ranges 10.20.0.0/16"),
        "{text}"
    );
    assert!(!text.contains("egress-unenforced"), "{text}");
    assert!(!text.contains("network-named"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn seed_decant_and_build_explained() {
    let seed = explained(CLAUDE, LaunchKind::Seed, &[]);
    assert!(seed.contains("command: -ceu <seed copy script>"), "{seed}");
    insta::assert_snapshot!("seed", seed);
    let decant = format!("{CLAUDE}\n[decant]\nenabled = true\nsource_profiles = [\"dev\"]\nbind_address = \"0.0.0.0\"\n");
    let decant = explained(&decant, LaunchKind::Decant, &[]);
    assert!(
        decant.contains("Decant listens on 0.0.0.0, beyond this machine"),
        "{decant}"
    );
    insta::assert_snapshot!("decant", decant);
    let build = format!("{CLAUDE}\n[image]\nbuild_context = \"../images\"\n");
    insta::assert_snapshot!("build", explained(&build, LaunchKind::Build, &[]));
}

use crate::inputs::{Owner, PathProbe};

struct Everything;
impl PathProbe for Everything {
    fn kind(&self, _: &str) -> PathKind {
        PathKind::Directory
    }
}

#[test]
fn control_characters_in_values_are_escaped() {
    let text = "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"img:1\"\n\
                command = [\"sh\", \"-c\", \"echo a\\nforged: line\\u001b[2J\"]\n";
    let loaded = crate::load::load("p.toml", text).unwrap();
    let inputs = ResolveInputs {
        kind: LaunchKind::Run,
        workspace: "/w/project".into(),
        profile_dir: "/p".into(),
        home_dir: "/home/dev".into(),
        owner: Some(Owner {
            name: "dev".into(),
            uid: 1000,
            gid: 1000,
        }),
        image: None,
        seed_target: None,
        agent_args: Vec::new(),
        env: Default::default(),
        decant_sources: Vec::new(),
        instance: Instance::default(),
        build: Default::default(),
    };
    let spec = crate::resolve::resolve(&loaded, &inputs, &Everything).unwrap();
    let explained = explain(&loaded, &spec);
    assert!(
        explained.contains("command: sh -c echo a\\nforged: line\\u{1b}[2J"),
        "{explained}"
    );
    assert!(!explained.lines().any(|line| line.starts_with("forged")));
    assert!(!explained.contains('\u{1b}'));
}

#[test]
fn wildcard_look_ups_are_explained_with_their_bound() {
    let base = "name = \"lab\"\nagent = \"custom\"\n[image]\nref = \"strix:1\"\n[egress]\n";
    let text = explained(
        &format!("{base}hosts = [\"api.example.com\", \"*.example.org\", \".example.net\"]\n"),
        LaunchKind::Run,
        &[],
    );
    assert!(
        text.contains(
            "egress wildcard look-ups: at most 10 distinct names a minute under each of \
             *.example.org, *.example.net,"
        ),
        "{text}"
    );
    assert!(
        text.contains("refused (wildcard-rate); exact hosts are not counted  [default]"),
        "{text}"
    );
    let text = explained(
        &format!("{base}hosts = [\"*.example.org\"]\nwildcard_names_per_minute = 3\n"),
        LaunchKind::Run,
        &[],
    );
    assert!(text.contains("at most 3 distinct names a minute"), "{text}");
    assert!(
        text.contains("(egress.wildcard_names_per_minute)]"),
        "{text}"
    );
    let exact = explained(
        &format!("{base}hosts = [\"api.example.com\"]\n"),
        LaunchKind::Run,
        &[],
    );
    assert!(!exact.contains("wildcard look-ups"), "{exact}");
}

/// The section of what agentc adds is named after nothing a profile writes: it once was
/// "beyond the seeds" (agent-containers, the systems agentc generalizes), while a seed is a
/// mount type (`type = "seed"`) and a launch kind (`--kind seed`), so it read as the seeds'
/// section.
#[test]
fn no_section_is_named_like_a_profile_word() {
    let schema = crate::profile_schema();
    let mut words: Vec<String> = schema["properties"]
        .as_object()
        .expect("the schema lists the profile's fields")
        .keys()
        .cloned()
        .collect();
    words.extend(["seed".to_string(), "seeds".to_string()]);
    let text = explained(CLAUDE, LaunchKind::Run, &[]);
    // A section title: a line at column 0 after an empty line.
    let lines: Vec<&str> = text.lines().collect();
    let titles: Vec<&str> = lines
        .windows(2)
        .filter(|pair| pair[0].is_empty() && !pair[1].starts_with(' '))
        .map(|pair| pair[1])
        .collect();
    assert!(titles.contains(&"added by agentc"), "{titles:?}");
    assert!(titles.contains(&"network"), "{titles:?}");
    for title in titles {
        // The sections named after a table of the same name are that table's values.
        if words.iter().any(|word| word == title) {
            continue;
        }
        for word in title.split_whitespace() {
            assert!(
                !words.iter().any(|w| w == word),
                "section {title:?} reads like the profile's {word}"
            );
        }
    }
}

#[test]
fn an_agent_without_a_key_is_said_to_get_none() {
    let line = "credentials: none: no [provider] or [credentials] block";
    let bare =
        "name = \"dev\"\nagent = \"claude-code\"\n\n[egress]\nhosts = [\"api.anthropic.com\"]\n";
    assert!(
        explained(bare, LaunchKind::Run, &[]).contains(line),
        "{}",
        explained(bare, LaunchKind::Run, &[])
    );
    // With a provider (its key held by the proxy), or a custom image (no agent to key): not said.
    let keyed =
        format!("{bare}\n[provider]\nkind = \"anthropic\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n");
    let text = explained(
        &keyed,
        LaunchKind::Run,
        &[("ANTHROPIC_API_KEY", "sk-ant-x")],
    );
    assert!(!text.contains(line), "{text}");
    assert!(
        text.contains("credential anthropic: the egress proxy holds"),
        "{text}"
    );
    let custom = "name = \"dev\"\nagent = \"custom\"\n[image]\nref = \"box:1\"\n";
    assert!(!explained(custom, LaunchKind::Run, &[]).contains(line));
}
