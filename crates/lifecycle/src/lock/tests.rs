use agentc_policy::LaunchKind;

use super::*;
use crate::plan::tests::{launch_at, CLAUDE, DEV};
use agentc_policy::Hinted;

fn id(digit: char) -> String {
    format!("sha256:{}", digit.to_string().repeat(64))
}

fn lock_of(text: &str, env: &BTreeMap<String, String>, image: &str) -> Lock {
    lock_at(text, env, image, DEV)
}

/// The lock of a profile resolved with `[workspace, profile directory, home]`.
fn lock_at(text: &str, env: &BTreeMap<String, String>, image: &str, dirs: [&str; 3]) -> Lock {
    let launches = vec![
        launch_at(text, LaunchKind::Run, None, dirs),
        launch_at(
            text,
            LaunchKind::Seed,
            Some("/home/claude/.claude/CLAUDE.md"),
            dirs,
        ),
        launch_at(text, LaunchKind::Build, None, dirs),
    ];
    let loaded = agentc_policy::load("p.toml", text).unwrap();
    let images = images_to_pin(&launches)
        .into_iter()
        .map(|reference| {
            (
                reference,
                ImageFacts {
                    id: image.to_string(),
                    repo_digests: Vec::new(),
                },
            )
        })
        .collect();
    let files = files_to_hash(&launches)
        .into_iter()
        .map(|file| FileLock {
            path: file.locked_path,
            kind: FileKind::File,
            sha256: (!file.writable).then(|| "ab".repeat(32)),
            writable: file.writable,
            mounted_at: file.mounted_at,
        })
        .collect();
    Lock::current(LockInputs {
        agentc_version: "0.1.0",
        profile: &loaded.profile,
        launches: &launches,
        environment: env,
        images: &images,
        files,
    })
}

#[test]
fn a_lock_pins_launches_images_files_and_egress_and_reads_back() {
    let lock = lock_of(CLAUDE, &BTreeMap::new(), &id('1'));
    assert_eq!(
        lock.launches
            .iter()
            .map(|l| l.launch.as_str())
            .collect::<Vec<_>>(),
        ["run", "seed /home/claude/.claude/CLAUDE.md", "build"]
    );
    assert_eq!(lock.images.len(), 1);
    // Paths in their portable form: the workspace in the home, the files beside the profile.
    assert_eq!(lock.workspace.as_deref(), Some("~/src/app"));
    assert_eq!(lock.egress.mode, "allowlist");
    let paths: Vec<&str> = lock.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["./data/notes.txt", "./seeds/CLAUDE.md"]);
    let run = &lock.launches[0].spec;
    assert_eq!(run["container.image"], "claude-code:latest");
    assert_eq!(run["container.env.ANTHROPIC_API_KEY.value.type"], "secret");
    assert_eq!(run["container.mounts./srv/notes.txt.read_only"], "true");
    assert!(
        !run.keys().any(|key| key.contains("spec-digest")),
        "{run:?}"
    );
    let text = lock.to_toml();
    assert!(
        text.starts_with("# agentc lock of profile \"dev\""),
        "{text}"
    );
    assert_eq!(Lock::parse("dev.lock", &text).unwrap(), lock);
    assert!(compare(&lock, &lock).is_empty());
}

#[test]
fn drift_names_each_field_with_locked_and_current_values() {
    let locked = lock_of(CLAUDE, &BTreeMap::new(), &id('1'));
    let env = BTreeMap::from([("AGENTC_MEM_LIMIT".to_string(), "2g".to_string())]);
    let edited = format!(
        "{CLAUDE}[egress]\nhosts = [\"api.anthropic.com\", \"Example.com\"]\nenforce = \"image\"\n"
    );
    let mut current = lock_of(&edited, &env, &id('2'));
    current.files[0].sha256 = Some("cd".repeat(32));
    current.agentc_version = "0.2.0".into();
    let drifts = compare(&locked, &current);
    let shown: Vec<String> = drifts.iter().map(ToString::to_string).collect();
    let expect = [
        "agentc_version: locked 0.1.0, current 0.2.0",
        "environment.AGENTC_MEM_LIMIT: locked (none), current 2g",
        "egress.hosts: locked , current api.anthropic.com, example.com",
        "launch run: container.env.AGENT_ALLOWED_EGRESS.value.value: locked (none), current api.anthropic.com,Example.com",
        &format!("image claude-code:latest: id: locked {}, current {}", id('1'), id('2')),
        &format!(
            "file ./data/notes.txt: sha256: locked {}, current {}",
            "ab".repeat(32),
            "cd".repeat(32)
        ),
    ];
    for line in expect {
        assert!(
            shown.iter().any(|s| s == line),
            "missing {line:?} in\n{}",
            shown.join("\n")
        );
    }
}

/// Regression: the lock pinned absolute paths, so `lock --check` in another checkout of the
/// project (a CI clone, a worktree, another user) reported every project path as drift.
#[test]
fn a_lock_holds_in_another_checkout_and_a_moved_workspace_drifts() {
    let project = CLAUDE;
    let empty = BTreeMap::new();
    let here = ["/home/dev/src/app", "/home/dev/src/app", "/home/dev"];
    let locked = lock_at(project, &empty, &id('1'), here);
    let elsewhere = ["/builds/ci/app-2", "/builds/ci/app-2", "/home/ci"];
    let there = lock_at(project, &empty, &id('1'), elsewhere);
    assert_eq!(compare(&locked, &there), []);
    assert_eq!(locked.workspace.as_deref(), Some("."));
    assert_eq!(locked.files[0].path, "./data/notes.txt");
    let run = &locked.launches[0].spec;
    assert_eq!(
        run["container.mounts./workspace/{workspace}.source.path"],
        "."
    );
    assert_eq!(run["container.working_dir"], "/workspace/{workspace}");
    // The workspace moved outside the project: drift, named.
    let outside = ["/home/dev/src/other", "/home/dev/src/app", "/home/dev"];
    let moved = lock_at(project, &empty, &id('1'), outside);
    let shown: Vec<String> = compare(&locked, &moved)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        shown.contains(&"workspace: locked ., current ../other".to_string()),
        "{shown:?}"
    );
    assert!(
        shown.contains(
            &"launch run: container.mounts./workspace/{workspace}.source.path: locked ., current ../other"
                .to_string()
        ),
        "{shown:?}"
    );
}

#[test]
fn a_launch_added_or_removed_is_drift() {
    let locked = lock_of(CLAUDE, &BTreeMap::new(), &id('1'));
    let mut current = locked.clone();
    current.launches.pop();
    let drifts = compare(&locked, &current);
    assert_eq!(drifts.len(), 1, "{drifts:?}");
    assert_eq!(drifts[0].field, "launch build");
    assert_eq!(drifts[0].current, "(none)");
}

#[test]
fn corrupt_locks_name_the_file_and_line() {
    let text = lock_of(CLAUDE, &BTreeMap::new(), &id('1')).to_toml();
    for (bad, expected) in [
        (text.replace("runtime = ", "runtim = "), "unknown field"),
        (
            text.replace("lock_version = 1", "lock_version = 2"),
            "lock_version 2",
        ),
        (
            text.replace(&id('1'), "sha256:nothex"),
            "is not an image ID",
        ),
        (text[..text.len() * 2 / 3].to_string(), ""),
    ] {
        let error = Lock::parse("dev.lock", &bad)
            .unwrap_err()
            .with_hint()
            .to_string();
        assert!(error.starts_with("dev.lock"), "{error}");
        assert!(error.contains(expected), "{error}");
        assert!(
            error.contains("\n  hint: write it again with `agentc lock"),
            "{error}"
        );
    }
    let error = Lock::parse("dev.lock", &text.replace("runtime = ", "runtim = ")).unwrap_err();
    assert!(matches!(
        error,
        LifecycleError::Corrupt {
            line: Some(_),
            column: Some(_),
            ..
        }
    ));
}

#[test]
fn url_passwords_are_redacted_and_other_text_kept() {
    assert_eq!(
        redact_url_password("http://user:s3cret@proxy:3128/x"),
        "http://user:<redacted>@proxy:3128/x"
    );
    assert_eq!(
        redact_url_password("http://user@proxy:3128"),
        "http://user@proxy:3128"
    );
    assert_eq!(
        redact_url_password("https://a.example/p@q"),
        "https://a.example/p@q"
    );
    assert_eq!(redact_url_password("plain:text@x"), "plain:text@x");
}

proptest::proptest! {
    #[test]
    fn no_text_makes_the_lock_reader_panic(text in "\\PC{0,400}") {
        let _ = Lock::parse("x.lock", &text);
    }
}

#[test]
fn the_lock_records_the_runtime_and_a_changed_runtime_drifts() {
    let default = lock_of(CLAUDE, &BTreeMap::new(), &id('1'));
    assert_eq!(default.runtime, DEFAULT_RUNTIME);
    let text = format!("{CLAUDE}[egress]\nmode = \"deny\"\n[security]\nruntime = \"runsc\"\n");
    let gvisor = lock_of(&text, &BTreeMap::new(), &id('1'));
    assert_eq!(gvisor.runtime, "runsc");
    assert_eq!(gvisor.launches[0].spec["container.runtime"], "runsc");
    let drift = compare(&default, &gvisor);
    let fields: Vec<&str> = drift.iter().map(|d| d.field.as_str()).collect();
    assert!(fields.contains(&"runtime"), "{fields:?}");
    assert!(
        fields.contains(&"launch run: container.runtime"),
        "{fields:?}"
    );
}

/// `egress.allow_net_capabilities` (the `egress-host-path` finding) is pinned: written only
/// when on, read back, and a change of it is drift named as such (besides the spec's
/// capabilities).
#[test]
fn the_host_path_escape_hatch_is_pinned() {
    let proxy = format!("{CLAUDE}[egress]\nhosts = [\"api.anthropic.com\"]\n");
    let closed = lock_of(&proxy, &BTreeMap::new(), &id('1'));
    assert!(!closed.egress.net_capabilities);
    assert!(!closed.to_toml().contains("net_capabilities"));
    let hatch = format!("{proxy}allow_net_capabilities = true\n");
    let open = lock_of(&hatch, &BTreeMap::new(), &id('1'));
    assert!(open.egress.net_capabilities);
    let text = open.to_toml();
    assert!(text.contains("net_capabilities = true"), "{text}");
    assert_eq!(Lock::parse("agentc.lock", &text).unwrap(), open);
    let shown: Vec<String> = compare(&closed, &open)
        .iter()
        .map(ToString::to_string)
        .collect();
    for line in [
        "egress.net_capabilities: locked false, current true",
        "launch run: container.cap_add.0: locked SETGID, current NET_ADMIN",
        "launch run: container.env.AGENT_ALLOWED_EGRESS.value.value: locked *, current api.anthropic.com,",
    ] {
        assert!(
            shown.iter().any(|s| s.starts_with(line)),
            "missing {line:?} in\n{}",
            shown.join("\n")
        );
    }
}
