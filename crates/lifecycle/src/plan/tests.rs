use std::collections::BTreeMap;

use agentc_policy::{LaunchKind, Owner, PathKind, PathProbe, ResolveInputs};

use super::*;

/// Every path exists: directories end in `/` or have no dot in their last name.
struct Everything;

impl PathProbe for Everything {
    fn kind(&self, path: &str) -> PathKind {
        let last = path.rsplit('/').next().unwrap_or_default();
        if last.contains('.') {
            PathKind::File
        } else {
            PathKind::Directory
        }
    }
}

/// The machine the tests resolve on: the workspace, the profile's directory, the home.
pub(crate) const DEV: [&str; 3] = ["/home/dev/src/app", "/home/dev/profiles", "/home/dev"];

pub(crate) fn launch(text: &str, kind: LaunchKind, seed_target: Option<&str>) -> Launch {
    launch_at(text, kind, seed_target, DEV)
}

/// A launch resolved with `[workspace, profile directory, home]`.
pub(crate) fn launch_at(
    text: &str,
    kind: LaunchKind,
    seed_target: Option<&str>,
    [workspace, profile_dir, home]: [&str; 3],
) -> Launch {
    let loaded = agentc_policy::load("p.toml", text).expect("the profile loads");
    let inputs = ResolveInputs {
        kind,
        workspace: workspace.into(),
        profile_dir: profile_dir.into(),
        home_dir: home.into(),
        owner: Some(Owner {
            name: "dev".into(),
            uid: 1000,
            gid: 1000,
        }),
        image: None,
        seed_target: seed_target.map(str::to_string),
        agent_args: Vec::new(),
        env: BTreeMap::new(),
        decant_sources: Vec::new(),
        instance: agentc_policy::Instance::default(),
        build: Default::default(),
    };
    let spec = agentc_policy::resolve(&loaded, &inputs, &Everything).expect("it resolves");
    let findings = agentc_policy::findings(&loaded, &spec);
    Launch {
        label: label(kind, seed_target),
        spec,
        findings,
        roots: agentc_policy::LocalRoots::of(&inputs, &Everything),
    }
}

pub(crate) const CLAUDE: &str = r#"
name = "dev"
agent = "claude-code"
[image]
build_context = "image"
[[mounts]]
type = "seed"
source = "seeds/CLAUDE.md"
target = "/home/claude/.claude/CLAUDE.md"
[[mounts]]
source = "data/notes.txt"
target = "/srv/notes.txt"
[provider]
kind = "anthropic"
api_key_env = "ANTHROPIC_API_KEY"
"#;

fn claude_launches() -> Vec<Launch> {
    vec![
        launch(CLAUDE, LaunchKind::Run, None),
        launch(
            CLAUDE,
            LaunchKind::Seed,
            Some("/home/claude/.claude/CLAUDE.md"),
        ),
        launch(CLAUDE, LaunchKind::Build, None),
    ]
}

#[test]
fn a_run_lists_its_container_image_volume_binds_and_secret() {
    let run = launch(CLAUDE, LaunchKind::Run, None);
    let parts = parts(&run.spec);
    assert!(matches!(
        &parts[0],
        Part::Container { role: Role::Agent, name: None, image, removed_on_exit: true, detached: false }
            if image == "claude-code:latest"
    ));
    assert!(parts.contains(&Part::Volume {
        name: "claude-code-home-dev-1000-dev".into(),
        target: "/home/claude".into(),
        read_only: false
    }));
    assert!(parts.contains(&Part::Bind {
        path: "/home/dev/src/app".into(),
        target: "/workspace/app".into(),
        read_only: false,
        workspace: true
    }));
    assert!(parts.contains(&Part::Bind {
        path: "/home/dev/profiles/data/notes.txt".into(),
        target: "/srv/notes.txt".into(),
        read_only: true,
        workspace: false
    }));
    assert!(parts.contains(&Part::Secret {
        name: "ANTHROPIC_API_KEY".into(),
        required: true
    }));
}

#[test]
fn a_seed_names_its_source_target_and_volume_and_a_build_its_context() {
    let seed = launch(
        CLAUDE,
        LaunchKind::Seed,
        Some("/home/claude/.claude/CLAUDE.md"),
    );
    assert!(parts(&seed.spec).contains(&Part::Seed {
        source: "/home/dev/profiles/seeds/CLAUDE.md".into(),
        target: "/home/claude/.claude/CLAUDE.md".into(),
        volume: "claude-code-home-dev-1000-dev".into()
    }));
    let build = launch(CLAUDE, LaunchKind::Build, None);
    assert!(matches!(
        &parts(&build.spec)[..],
        [Part::ImageBuild { tag, context, .. }] if tag == "claude-code:latest" && context == "/home/dev/profiles/image"
    ));
}

#[test]
fn the_plan_marks_images_the_profile_builds_and_counts_shared_parts_once() {
    let plan = plan("dev", "p.toml", &claude_launches(), None);
    let image = plan.launches[0]
        .parts
        .iter()
        .find(|part| matches!(part, Part::Image { .. }))
        .unwrap();
    assert!(matches!(
        image,
        Part::Image {
            built_by_profile: true,
            ..
        }
    ));
    let text = plan.text();
    assert!(
        text.contains("offline: the engine was not contacted"),
        "{text}"
    );
    assert!(
        text.contains("creates 2 containers, 1 image build, 1 seed, 1 volume (on first use)"),
        "{text}"
    );
    assert!(text.contains("deployment: not applied yet"), "{text}");
    assert!(text.contains("findings   "), "{text}");
}

#[test]
fn the_plan_says_which_launches_changed_since_the_last_apply() {
    let launches = claude_launches();
    let mut recorded: BTreeMap<String, String> = launches
        .iter()
        .map(|l| (l.label.clone(), l.spec.digest().unwrap().to_string()))
        .collect();
    let same = plan("dev", "p.toml", &launches, Some(&recorded));
    assert_eq!(same.since_apply, Some(vec![]));
    recorded.insert("run".into(), "0".repeat(64));
    recorded.insert("decant".into(), "0".repeat(64));
    let changed = plan("dev", "p.toml", &launches, Some(&recorded));
    assert_eq!(
        changed.since_apply,
        Some(vec!["run".to_string(), "decant (removed)".to_string()])
    );
}

#[test]
fn a_named_network_is_used_not_created() {
    let text = "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"alpine:3\"\n[network]\nname = \"lab\"\n";
    let sandbox = launch(text, LaunchKind::Run, None);
    let parts = parts(&sandbox.spec);
    assert!(parts.contains(&Part::Network {
        name: "lab".into(),
        created: false,
        internal: false,
        publishes: Vec::new(),
    }));
    assert!(matches!(
        &parts[0],
        Part::Container {
            role: Role::Sandbox,
            detached: true,
            ..
        }
    ));
}

/// The egress set of an agent run (no container name) is created per run, named as the run
/// names it (`NAME-<run>-egress`); a named sandbox's set keeps its name. One of a kind is
/// counted in the singular, more in the plural.
#[test]
fn the_plan_names_the_egress_set_each_run_creates_and_counts_in_plurals() {
    let agent = "name = \"dev\"\nagent = \"claude-code\"\n[egress]\nmode = \"allowlist\"\nhosts = [\"api.anthropic.com\"]\n";
    let run = launch(agent, LaunchKind::Run, None);
    let parts = parts(&run.spec);
    assert!(parts.contains(&Part::Network {
        name: "agentc-run-dev-<run>-egress".into(),
        created: true,
        internal: true,
        publishes: Vec::new(),
    }));
    assert!(parts.iter().any(|part| matches!(
        part,
        Part::Container { role: Role::EgressProxy, name: Some(name), .. }
            if name == "agentc-run-dev-<run>-egress-proxy"
    )));
    // The agent itself is named after its set, as the run names it.
    assert!(parts.iter().any(|part| matches!(
        part,
        Part::Container { role: Role::Agent, name: Some(name), .. }
            if name == "agentc-run-dev-<run>"
    )));
    let text = plan("dev", "p.toml", &[run], None).text();
    assert!(
        text.contains("\n<run>: a suffix unique to each run"),
        "{text}"
    );
    assert!(
        text.contains(
            "creates 2 containers, 1 network, 1 volume (on first use); uses 1 host path, 1 image"
        ),
        "{text}"
    );
    let sandbox = "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"alpine:3\"\n[egress]\nmode = \"allowlist\"\nhosts = [\"pypi.org\"]\n";
    let sandbox = launch(sandbox, LaunchKind::Run, None);
    let names: Vec<String> = parts_names(&sandbox.spec);
    assert!(
        names.iter().all(|name| !name.contains("<run>")),
        "{names:?}"
    );
    let text = plan("box", "p.toml", &[sandbox], None).text();
    assert!(!text.contains("<run>"), "{text}");
}

fn parts_names(spec: &agentc_policy::LaunchSpec) -> Vec<String> {
    parts(spec)
        .into_iter()
        .filter_map(|part| match part {
            Part::Network { name, .. } => Some(name),
            Part::Container { name, .. } => name,
            _ => None,
        })
        .collect()
}

/// The outside network the egress proxy publishes a sandbox's ports through is marked as one
/// that must not be internal (run refuses it otherwise; plan is offline and cannot look).
#[test]
fn the_plan_says_an_outside_network_with_published_ports_must_not_be_internal() {
    let text = "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"alpine:3\"\n[egress]\nmode = \"allowlist\"\nhosts = [\"api.example.com\"]\noutside_network = \"corp\"\n[network]\npublish = [8080]\n";
    let sandbox = launch(text, LaunchKind::Run, None);
    let found = parts(&sandbox.spec);
    assert!(found.contains(&Part::Network {
        name: "corp".into(),
        created: false,
        internal: false,
        publishes: vec!["8080/tcp".into()],
    }));
    let text = plan("box", "box.toml", &[sandbox], None).text();
    assert!(
        text.contains(
            "corp (must exist, not --internal: the egress proxy publishes 8080/tcp through it"
        ),
        "{text}"
    );
    // Without published ports the outside network may be anything.
    let quiet = "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"alpine:3\"\n[egress]\nmode = \"allowlist\"\nhosts = [\"api.example.com\"]\noutside_network = \"corp\"\n";
    let sandbox = launch(quiet, LaunchKind::Run, None);
    assert!(parts(&sandbox.spec).iter().any(|part| matches!(
        part,
        Part::Network { name, publishes, .. } if name == "corp" && publishes.is_empty()
    )));
}

/// The plan shows a launch's isolation floor and how its runtime is chosen; a launch with
/// neither floor nor runtime shows no isolation line.
#[test]
fn the_plan_shows_the_isolation_floor_and_how_the_runtime_is_chosen() {
    let profile = |security: &str| {
        format!(
            "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"alpine:3\"\n[egress]\nmode = \"deny\"\n[security]\n{security}\n"
        )
    };
    let text_of = |security: &str| {
        let launch = launch(&profile(security), LaunchKind::Run, None);
        plan("box", "box.toml", &[launch], None).text()
    };
    let chosen = text_of("isolation = { min = \"gvisor\", prefer = \"strongest\" }");
    assert!(
        chosen.contains(
            "  isolation  at least gvisor, prefer strongest: the runtime is chosen from the engine's"
        ),
        "{chosen}"
    );
    let named = text_of("runtime = \"runsc\"\nisolation = { min = \"gvisor\" }");
    assert!(
        named.contains("  isolation  at least gvisor, prefer min: runtime runsc (gVisor"),
        "{named}"
    );
    assert!(
        named.contains("below the floor, nothing is created"),
        "{named}"
    );
    let plain = text_of("");
    assert!(!plain.contains("isolation"), "{plain}");
}
