//! The host side of a launch as a library caller meets it: the profile file read and refused,
//! a profile's launches, and a request resolved against this machine's files.

use std::path::{Path, PathBuf};

use agentc_policy::{Action, Hinted, Instance, LaunchKind, Start};

use crate::*;

/// The repository's `fixtures/valid/NAME.toml`.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/valid")
        .join(format!("{name}.toml"))
}

/// A request of `name`'s run with the fixtures' directory as its workspace.
fn request(name: &str) -> LaunchRequest {
    LaunchRequest {
        workspace: Some(fixture(name).parent().unwrap().to_path_buf()),
        ..LaunchRequest::new(fixture(name))
    }
}

#[test]
fn a_profile_that_cannot_be_read_names_the_file_and_exits_no_input() {
    let failure = load_profile(Path::new("/nonexistent/box.toml")).unwrap_err();
    assert_eq!(failure.code, EXIT_NO_INPUT);
    assert!(failure
        .message
        .starts_with("/nonexistent/box.toml: cannot read the profile"));
    assert_eq!(failure.hint.as_deref(), Some("check the path"));
    assert!(failure
        .with_hint()
        .to_string()
        .contains("\n  hint: check the path"));
}

#[test]
fn a_profile_that_is_not_utf8_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("box.toml");
    std::fs::write(&path, b"name = \"box\"\n\xff").unwrap();
    let failure = load_profile(&path).unwrap_err();
    assert_eq!(failure.code, EXIT_INVALID);
    assert!(failure
        .message
        .contains("not UTF-8 text (invalid byte at offset 13)"));
}

#[test]
fn a_profile_larger_than_the_limit_is_refused_by_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.toml");
    let text = format!("# {}\n", "x".repeat(agentc_policy::MAX_PROFILE_BYTES));
    std::fs::write(&path, text).unwrap();
    let failure = load_profile(&path).unwrap_err();
    assert_eq!(failure.code, EXIT_INVALID);
    assert!(failure.message.contains("larger than the limit"));
}

#[test]
fn every_launch_is_the_run_then_each_seed_in_profile_order() {
    let path = fixture("claude-seeds");
    let loaded = load_profile(&path).unwrap();
    let launches = every_launch(&loaded, &path);
    let kinds: Vec<(LaunchKind, Option<&str>)> = launches
        .iter()
        .map(|launch| (launch.kind, launch.seed_target.as_deref()))
        .collect();
    assert_eq!(
        kinds,
        [
            (LaunchKind::Run, None),
            (LaunchKind::Seed, Some("/home/claude/.claude/settings.json")),
            (LaunchKind::Seed, Some("/home/claude/.claude/CLAUDE.md")),
            (LaunchKind::Seed, Some("/home/claude/.claude/skills")),
        ]
    );
    assert!(launches.iter().all(|launch| launch.profile == path));
}

#[test]
fn a_request_resolves_with_the_workspace_and_the_profile_directory_of_this_machine() {
    let asked = request("sandbox-minimal");
    let loaded = load_profile(&asked.profile).unwrap();
    let instance = Instance {
        start: Start::Session,
        default_name: Some("agentc-session-test".into()),
        ..Instance::default()
    };
    let inputs = launch_inputs(&loaded, &asked, instance.clone()).unwrap();
    let fixtures = std::fs::canonicalize(fixture("sandbox-minimal"))
        .unwrap()
        .parent()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(inputs.workspace, fixtures);
    assert_eq!(inputs.profile_dir, fixtures);
    assert_eq!(inputs.owner, Some(current_owner()));
    let spec = resolve_instance(&loaded, &asked, instance).unwrap();
    assert_eq!(spec.kind, LaunchKind::Sandbox);
    let Action::Container(container) = &spec.action else {
        panic!("a sandbox launches a container");
    };
    assert_eq!(container.image, "busybox:1.36");
}

#[test]
fn a_sandbox_asked_for_by_name_is_the_run() {
    let asked = request("sandbox-minimal");
    let loaded = load_profile(&asked.profile).unwrap();
    let run = resolve_launch(&loaded, &asked).unwrap();
    let sandbox = LaunchRequest {
        kind: LaunchKind::Sandbox,
        ..asked
    };
    assert_eq!(resolve_launch(&loaded, &sandbox).unwrap(), run);
}

#[test]
fn a_workspace_that_is_not_a_directory_is_a_usage_error() {
    let asked = LaunchRequest {
        workspace: Some(fixture("sandbox-minimal")),
        ..request("sandbox-minimal")
    };
    let loaded = load_profile(&asked.profile).unwrap();
    let failure = resolve_launch(&loaded, &asked).unwrap_err();
    assert_eq!(failure.code, EXIT_USAGE);
    assert!(failure.message.contains("is not a directory"));
    assert!(failure
        .with_hint()
        .to_string()
        .contains("\n  hint: pass an existing directory with --workspace"));
}

#[test]
fn decant_reads_its_source_profiles_beside_the_profile() {
    let asked = LaunchRequest {
        kind: LaunchKind::Decant,
        ..request("codex-decant")
    };
    let loaded = load_profile(&asked.profile).unwrap();
    let inputs = launch_inputs(&loaded, &asked, Instance::default()).unwrap();
    let sources: Vec<&str> = inputs
        .decant_sources
        .iter()
        .map(|source| source.profile.as_str())
        .collect();
    assert_eq!(sources, ["codex-minimal"]);
}
