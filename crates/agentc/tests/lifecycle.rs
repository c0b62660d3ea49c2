//! The lifecycle commands (`init`, `plan`, `doctor`, `apply`, `rollback`, `lock`, `--locked`,
//! `completions`, `man`) through the binary: the offline ones anywhere, the rest against the
//! live daemon with the busybox test image (skipped with a reason without Docker, failing under
//! `AGENTC_REQUIRE_DOCKER=1`). Every live test uses its own profile name, state directory and
//! image tags, removes exactly what it created, and never prunes. Interruptions are real: the
//! process aborts at a named point (`AGENTC_TEST_INTERRUPT`), as a crash would.

use crate::common;
use crate::common::agent_base;
use crate::common::agent_image;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use agent_image::agent_image;
use common::{describe, docker, repo_root, require_daemon, test_image, text};

/// A test's directory, state directory and what it created.
struct Lab {
    dir: tempfile::TempDir,
    profile: String,
    tags: Vec<String>,
    volumes: Vec<String>,
}

impl Lab {
    fn new(test: &str) -> Lab {
        Lab {
            dir: tempfile::tempdir().unwrap(),
            profile: format!("lc-{test}-{}", std::process::id()),
            tags: Vec::new(),
            volumes: Vec::new(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The profile file, `<profile>.toml`.
    fn file(&self) -> String {
        self.path(&format!("{}.toml", self.profile))
            .to_string_lossy()
            .into_owned()
    }

    fn write_profile(&self, body: &str) -> String {
        std::fs::write(self.file(), format!("name = \"{}\"\n{body}", self.profile)).unwrap();
        self.file()
    }

    fn state_file(&self) -> PathBuf {
        self.path(&format!("state/profiles/{}.toml", self.profile))
    }

    fn lock_path(&self) -> PathBuf {
        self.path(&format!("{}.lock", self.profile))
    }

    fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.run_in(self.dir.path(), args, env)
    }

    /// Runs agentc with the lab's state directory, in `dir`.
    fn run_in(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agentc"));
        command
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .env("USER", "lifecycle")
            .env("AGENTC_STATE_DIR", self.path("state"))
            .env_remove("AGENTC_TEST_INTERRUPT");
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().expect("agentc runs")
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[])
    }

    /// Runs agentc and asserts its exit status.
    fn expect(&self, args: &[&str], code: i32) -> Output {
        let output = self.run(args);
        assert_eq!(
            output.status.code(),
            Some(code),
            "{args:?}: {}",
            describe(&output)
        );
        output
    }

    fn containers(&self) -> Vec<String> {
        let filter = format!("label=io.agentc.profile={}", self.profile);
        docker(&["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"])
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for container in self.containers() {
            let _ = docker(&["rm", "--force", &container]);
        }
        for tag in &self.tags {
            let _ = docker(&["image", "rm", tag]);
        }
        for volume in &self.volumes {
            let _ = docker(&["volume", "rm", "--force", volume]);
        }
    }
}

fn image_id(reference: &str) -> Option<String> {
    docker(&["image", "inspect", "--format", "{{.Id}}", reference]).ok()
}

/// Whether the process was killed by SIGABRT (an `AGENTC_TEST_INTERRUPT` point).
fn aborted(output: &Output) -> bool {
    use std::os::unix::process::ExitStatusExt;
    output.status.signal() == Some(libc::SIGABRT)
}

// ---------------------------------------------------------------------------------------------
// Offline: no runtime, no daemon.

const NO_DAEMON: (&str, &str) = ("DOCKER_HOST", "unix:///nonexistent/agentc-lifecycle.sock");

#[test]
fn init_writes_a_valid_profile_once_and_never_overwrites() {
    let _turn = crate::common::turn(file!());
    let lab = Lab::new("init");
    let file = lab.path("claude-dev.toml");
    let file = file.to_str().unwrap();
    let output = lab.expect(&["init", file, "--agent", "claude-code"], 0);
    assert!(
        text(&output.stdout).contains("profile \"claude-dev\""),
        "{}",
        describe(&output)
    );
    let written = std::fs::read_to_string(file).unwrap();
    lab.expect(&["validate", file], 0);
    let again = lab.expect(&["init", file, "--agent", "codex"], 1);
    assert!(
        text(&again.stderr).contains("never overwrites"),
        "{}",
        describe(&again)
    );
    assert_eq!(std::fs::read_to_string(file).unwrap(), written, "unchanged");
    // Usage errors: a custom profile without --image, a stem that is not a name, hosts under deny.
    for args in [
        vec!["init", "box.toml", "--agent", "custom"],
        vec!["init", "My Box.toml", "--agent", "codex"],
        vec![
            "init",
            "x.toml",
            "--agent",
            "codex",
            "--egress",
            "deny",
            "--host",
            "a.example",
        ],
    ] {
        lab.expect(&args, 2);
    }
    // A value the policy refuses is refused before anything is written (exit 65).
    let output = lab.expect(&["init", "y.toml", "--agent", "custom", "--image=-bad"], 65);
    assert!(
        text(&output.stderr).contains("image.ref"),
        "{}",
        describe(&output)
    );
    assert!(!lab.path("y.toml").exists() && !lab.path("box.toml").exists());
}

#[test]
fn an_interrupted_init_leaves_no_profile_and_runs_again() {
    let _turn = crate::common::turn(file!());
    let lab = Lab::new("init-crash");
    let args = ["init", "dev.toml", "--agent", "opencode", "--name", "dev"];
    let output = lab.run_with(&args, &[("AGENTC_TEST_INTERRUPT", "write:before-link")]);
    assert!(aborted(&output), "{}", describe(&output));
    assert!(!lab.path("dev.toml").exists(), "no half-written profile");
    assert!(
        lab.path(".dev.toml.tmp").exists(),
        "the temporary is what was left"
    );
    lab.expect(&args, 0);
    assert!(!lab.path(".dev.toml.tmp").exists());
    lab.expect(&["validate", "dev.toml"], 0);
}

#[test]
fn plan_is_offline_and_lists_every_part() {
    let _turn = crate::common::turn(file!());
    let lab = Lab::new("plan");
    let output = lab.run_with(
        &[
            "plan",
            &repo_root()
                .join("fixtures/valid/claude-seeds.toml")
                .to_string_lossy(),
            "--format",
            "json",
        ],
        &[NO_DAEMON],
    );
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(plan["engine_contacted"], false);
    let launches: Vec<&str> = plan["launches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|launch| launch["launch"].as_str().unwrap())
        .collect();
    assert_eq!(launches[0], "run");
    assert!(
        launches
            .iter()
            .any(|label| label.starts_with("seed /home/claude/")),
        "{launches:?}"
    );
    let parts: Vec<&str> = plan["launches"][1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|part| part["part"].as_str().unwrap())
        .collect();
    for kind in ["container", "image", "volume", "bind", "seed"] {
        assert!(parts.contains(&kind), "{kind} in {parts:?}");
    }
    let text_plan = lab.run_with(
        &[
            "plan",
            &repo_root()
                .join("fixtures/valid/sandbox-network.toml")
                .to_string_lossy(),
        ],
        &[NO_DAEMON],
    );
    let shown = text(&text_plan.stdout);
    assert!(shown.contains("(must exist)"), "{shown}");
    assert!(
        shown.contains("offline: the engine was not contacted"),
        "{shown}"
    );
}

#[test]
fn a_corrupt_state_or_lock_is_an_error_naming_the_file_and_line() {
    let _turn = crate::common::turn(file!());
    let lab = Lab::new("corrupt");
    let file = lab.write_profile("agent = \"custom\"\n[image]\nref = \"alpine:3\"\n");
    std::fs::create_dir_all(lab.state_file().parent().unwrap()).unwrap();
    std::fs::write(
        lab.state_file(),
        format!(
            "state_version = 1\nprofile = \"{}\"\n\n[[deployment]]\nnumber = \"one\"\n",
            lab.profile
        ),
    )
    .unwrap();
    let output = lab.run_with(&["plan", &file], &[NO_DAEMON]);
    assert_eq!(output.status.code(), Some(65), "{}", describe(&output));
    let shown = text(&output.stderr);
    let expected = format!("{}:5:10: ", lab.state_file().display());
    assert!(shown.contains(&expected), "{expected} in {shown}");
    assert!(shown.contains("\n  hint: "), "{shown}");
    std::fs::write(lab.state_file(), [0xff, 0x00, 0x13]).unwrap();
    let output = lab.run_with(&["plan", &file], &[NO_DAEMON]);
    assert_eq!(output.status.code(), Some(65), "{}", describe(&output));
    assert!(
        text(&output.stderr).contains("not UTF-8"),
        "{}",
        describe(&output)
    );

    std::fs::write(lab.lock_path(), "lock_version = 1\nagentc_version = \n").unwrap();
    for args in [
        vec!["lock", "--check", &file],
        vec!["run", "--locked", &file],
    ] {
        let output = lab.run_with(&args, &[NO_DAEMON]);
        assert_eq!(
            output.status.code(),
            Some(65),
            "{args:?}: {}",
            describe(&output)
        );
        let expected = format!("{}:2:", lab.lock_path().display());
        assert!(
            text(&output.stderr).contains(&expected),
            "{args:?}: {}",
            describe(&output)
        );
    }
    std::fs::remove_file(lab.lock_path()).unwrap();
    let output = lab.run_with(&["run", "--locked", &file], &[NO_DAEMON]);
    assert_eq!(output.status.code(), Some(65), "{}", describe(&output));
    assert!(
        text(&output.stderr).contains("no lock file"),
        "{}",
        describe(&output)
    );
    let output = lab.run_with(&["run", "--locked", "--image", "x:1", &file], &[NO_DAEMON]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
}

#[test]
fn completions_and_the_man_page_come_from_the_clap_definitions() {
    let _turn = crate::common::turn(file!());
    let lab = Lab::new("completions");
    for shell in ["bash", "zsh", "fish"] {
        let output = lab.expect(&["completions", shell, "--static"], 0);
        let script = text(&output.stdout);
        for command in [
            "init", "doctor", "plan", "apply", "rollback", "lock", "verify",
        ] {
            assert!(script.contains(command), "{shell}: {command}");
        }
        assert!(script.contains("locked"), "{shell}: --locked");
        // The default script asks agentc for each word.
        let output = lab.expect(&["completions", shell], 0);
        let script = text(&output.stdout);
        assert!(
            script.contains("COMPLETE") && script.contains("agentc"),
            "{shell}: {script}"
        );
    }
    // What agentc answers: subcommands, and a NAME's profile files.
    std::fs::write(lab.path("box.toml"), "name = \"box\"\n").unwrap();
    let words = complete(&lab, &["agentc", "ex"]);
    assert!(
        words.contains(&"exec".to_string()) && words.contains(&"explain".to_string()),
        "{words:?}"
    );
    let words = complete(&lab, &["agentc", "exec", "bo"]);
    assert!(words.contains(&"box.toml".to_string()), "{words:?}");
    let output = lab.expect(&["man"], 0);
    let page = text(&output.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH agentc"),
        "{page}"
    );
    assert!(page.contains("rollback"), "{page}");
    lab.expect(&["completions", "powershell"], 2);
}

/// What agentc offers to complete the last of `words` (the shell's words, the program first),
/// asked as the bash script asks, in the lab's directory.
fn complete(lab: &Lab, words: &[&str]) -> Vec<String> {
    let index = (words.len() - 1).to_string();
    let mut args = vec!["--"];
    args.extend_from_slice(words);
    let output = lab.run_with(
        &args,
        &[
            ("COMPLETE", "bash"),
            ("_CLAP_COMPLETE_INDEX", index.as_str()),
            ("_CLAP_COMPLETE_COMP_TYPE", "9"),
            ("_CLAP_COMPLETE_SPACE", "true"),
        ],
    );
    assert!(output.status.success(), "{}", describe(&output));
    text(&output.stdout)
        .split(['\n', '\u{b}'])
        .filter(|word| !word.is_empty())
        .map(str::to_string)
        .collect()
}

/// A session command's NAME completes to the engine's agentc containers and their profiles.
#[test]
fn live_completions_name_the_containers_and_profiles() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_completions_name_the_containers_and_profiles") {
        return;
    }
    let lab = Lab::new("complete");
    let file = lab.write_profile(&format!(
        "agent = \"custom\"\n[image]\nref = \"{}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n\
         [egress]\nmode = \"deny\"\n",
        test_image()
    ));
    lab.expect(&["run", &file], 0);
    let containers = lab.containers();
    assert_eq!(containers.len(), 1, "{containers:?}");
    for command in ["exec", "logs", "rm", "stop"] {
        let words = complete(
            &lab,
            &["agentc", command, &containers[0][..containers[0].len() - 3]],
        );
        assert!(words.contains(&containers[0]), "{command}: {words:?}");
    }
    let words = complete(
        &lab,
        &["agentc", "exec", &lab.profile[..lab.profile.len() - 2]],
    );
    assert!(words.contains(&lab.profile), "{words:?}");
    // Only names that start with the word.
    let words = complete(&lab, &["agentc", "exec", "zz-no-such-"]);
    assert!(words.is_empty(), "{words:?}");
}

#[test]
fn doctor_fails_on_an_unreachable_engine_with_a_fix() {
    let _turn = crate::common::turn(file!());
    let lab = Lab::new("doctor-down");
    let output = lab.run_with(&["doctor", "--format", "json"], &[NO_DAEMON]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let engine = &report["checks"][0];
    assert_eq!(engine["id"], "engine");
    assert_eq!(engine["status"], "fail");
    assert!(
        engine["fix"].as_str().unwrap().contains("start the daemon"),
        "{report}"
    );
}

// ---------------------------------------------------------------------------------------------
// Live.

/// A custom profile that builds its image from `image/Dockerfile` (the test image plus a
/// label), tagged `agentc-test/<profile>:1`.
fn build_profile(lab: &mut Lab, version: u32) -> (String, String) {
    let base = test_image();
    let tag = format!("agentc-test/{}:1", lab.profile);
    if !lab.tags.contains(&tag) {
        lab.tags.push(tag.clone());
        lab.tags
            .push(format!("{tag}-agentc-previous-{}", lab.profile));
    }
    std::fs::create_dir_all(lab.path("image")).unwrap();
    std::fs::write(
        lab.path("image/Dockerfile"),
        format!(
            "FROM {base}\nLABEL agentc-test.lifecycle=\"{} v{version}\"\n",
            lab.profile
        ),
    )
    .unwrap();
    let file = lab.write_profile(&format!(
        "agent = \"custom\"\n[image]\nref = \"{tag}\"\nbuild_context = \"image\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n[egress]\nmode = \"deny\"\n"
    ));
    (file, tag)
}

#[test]
fn live_apply_keeps_the_previous_image_and_rollback_returns_to_it_once() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_apply_rollback") {
        return;
    }
    let mut lab = Lab::new("rollback");
    let (file, tag) = build_profile(&mut lab, 1);
    let output = lab.expect(&["apply", &file], 0);
    assert!(
        text(&output.stdout).contains("deployment 1"),
        "{}",
        describe(&output)
    );
    let first = image_id(&tag).unwrap();
    let refused = lab.expect(&["rollback", &file], 1);
    assert!(
        text(&refused.stderr).contains("no previous image"),
        "{}",
        describe(&refused)
    );

    // The lock pins image 1; a new build is drift, named with both IDs.
    lab.expect(&["lock", &file], 0);
    lab.expect(&["lock", "--check", &file], 0);
    build_profile(&mut lab, 2);
    let output = lab.expect(&["apply", &file], 0);
    assert!(
        text(&output.stdout).contains("deployment 2"),
        "{}",
        describe(&output)
    );
    let second = image_id(&tag).unwrap();
    assert_ne!(first, second);
    assert_eq!(
        image_id(&format!("{tag}-agentc-previous-{}", lab.profile)),
        Some(first.clone())
    );
    let drift = lab.expect(&["lock", "--check", &file], 65);
    let expected = format!("image {tag}: id: locked {first}, current {second}");
    assert!(
        text(&drift.stderr).contains(&expected),
        "{}",
        describe(&drift)
    );
    // The same drift for machines: the documented fields, exit 65 still.
    let json = lab.expect(&["lock", "--check", "--format", "json", &file], 65);
    let report: serde_json::Value = serde_json::from_str(&text(&json.stdout))
        .unwrap_or_else(|e| panic!("{e}: {}", describe(&json)));
    let lock = lab.lock_path();
    let named = report["lock"].as_str().unwrap_or_default();
    assert!(
        named.ends_with(&*lock.file_name().unwrap().to_string_lossy()),
        "{report}"
    );
    assert_eq!(report["images"], 1, "{report}");
    assert!(report["launches"].as_u64().unwrap() >= 1, "{report}");
    assert!(report["files"].is_u64(), "{report}");
    assert!(
        report["drift"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!({
                "field": format!("image {tag}: id"),
                "locked": first,
                "current": second,
            })),
        "{report}"
    );
    let refused = lab.expect(&["run", "--locked", &file], 65);
    assert!(
        text(&refused.stderr).contains(&expected),
        "{}",
        describe(&refused)
    );
    assert!(lab.containers().is_empty(), "nothing was created");

    // Rollback: the tag returns to image 1, image 2 is kept; once.
    let output = lab.expect(&["rollback", &file], 0);
    assert!(
        text(&output.stdout).contains("deployment 3"),
        "{}",
        describe(&output)
    );
    assert_eq!(image_id(&tag), Some(first.clone()));
    assert_eq!(
        image_id(&format!("{tag}-agentc-previous-{}", lab.profile)),
        Some(second)
    );
    let again = lab.expect(&["rollback", &file], 1);
    assert!(
        text(&again.stderr).contains("a second rollback without a new apply is refused"),
        "{}",
        describe(&again)
    );
    lab.expect(&["lock", "--check", &file], 0);
    let clean = lab.expect(&["lock", "--check", "--format", "json", &file], 0);
    let report: serde_json::Value = serde_json::from_str(&text(&clean.stdout)).unwrap();
    assert_eq!(report["drift"], serde_json::json!([]), "{report}");
    let state = std::fs::read_to_string(lab.state_file()).unwrap();
    assert!(state.contains("step = \"rollback\""), "{state}");

    // The locked sandbox starts, and is the profile's only container.
    lab.expect(&["run", "--locked", &file], 0);
    assert_eq!(lab.containers().len(), 1);
    let doctor = lab.run(&["doctor", &file, "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let checks = report["checks"].as_array().unwrap();
    for id in ["deployment", "lock", &format!("image {tag}")] {
        let check = checks
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {report}"));
        assert_eq!(check["status"], "ok", "{id}: {report}");
    }

    // What apply keeps goes with `rm --profile P --state`: the retained image and the state;
    // the profile's image and its lock stay.
    let retained = format!("{tag}-agentc-previous-{}", lab.profile);
    let removed = lab.expect(&["rm", "--profile", &file, "--state"], 0);
    let shown = text(&removed.stdout);
    assert!(
        shown.contains(&format!("removed image {retained}"))
            && shown.contains(&format!("removed state {}", lab.state_file().display())),
        "{}",
        describe(&removed)
    );
    assert_eq!(image_id(&retained), None);
    assert_eq!(image_id(&tag), Some(first));
    assert!(!lab.state_file().exists());
    assert!(lab.lock_path().exists());
    assert!(lab.containers().is_empty());
    let again = lab.expect(&["rm", "--profile", &file, "--state"], 0);
    assert!(
        text(&again.stderr).contains("nothing agentc made for profile"),
        "{}",
        describe(&again)
    );
    let refused = lab.expect(&["rollback", &file], 1);
    assert!(
        text(&refused.stderr).contains("has no deployment to roll back"),
        "{}",
        describe(&refused)
    );
}

#[test]
fn live_interrupted_apply_and_rollback_leave_the_state_whole_and_run_again() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_interrupted_apply_and_rollback") {
        return;
    }
    let mut lab = Lab::new("crash");
    let (file, tag) = build_profile(&mut lab, 1);
    lab.expect(&["apply", &file], 0);
    let recorded = std::fs::read_to_string(lab.state_file()).unwrap();
    build_profile(&mut lab, 2);
    for point in [
        "apply:after-build",
        "apply:before-state",
        "write:before-rename",
    ] {
        let output = lab.run_with(&["apply", &file], &[("AGENTC_TEST_INTERRUPT", point)]);
        assert!(aborted(&output), "{point}: {}", describe(&output));
        assert_eq!(
            std::fs::read_to_string(lab.state_file()).unwrap(),
            recorded,
            "{point}: the state is the last one written, whole"
        );
    }
    // The crash left the temporary file of the last write; the next write replaces it.
    let temporary = lab
        .state_file()
        .with_file_name(format!(".{}.toml.tmp", lab.profile));
    assert!(temporary.exists());
    let output = lab.expect(&["apply", &file], 0);
    assert!(
        text(&output.stdout).contains("deployment 2"),
        "{}",
        describe(&output)
    );
    assert!(!temporary.exists());
    let first = image_id(&format!("{tag}-agentc-previous-{}", lab.profile)).unwrap();

    let recorded = std::fs::read_to_string(lab.state_file()).unwrap();
    let output = lab.run_with(
        &["rollback", &file],
        &[("AGENTC_TEST_INTERRUPT", "rollback:after-tag")],
    );
    assert!(aborted(&output), "{}", describe(&output));
    assert_eq!(std::fs::read_to_string(lab.state_file()).unwrap(), recorded);
    let output = lab.expect(&["rollback", &file], 0);
    assert!(
        text(&output.stdout).contains("deployment 3"),
        "{}",
        describe(&output)
    );
    assert_eq!(image_id(&tag), Some(first));

    // One apply at a time: a held lock refuses another (exit 75), and leaves the state alone.
    let lock = std::fs::File::open(lab.state_file().with_extension("toml.flock")).unwrap();
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(
        unsafe { libc::flock(std::os::unix::io::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) },
        0
    );
    let busy = lab.expect(&["apply", &file], 75);
    assert!(
        text(&busy.stderr).contains("another `agentc apply`"),
        "{}",
        describe(&busy)
    );
    drop(lock);
    lab.expect(&["apply", &file], 0);
}

#[test]
fn live_lock_pins_mounted_files_and_refuses_their_drift() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_lock_pins_mounted_files") {
        return;
    }
    let lab = Lab::new("files");
    let image = test_image();
    std::fs::create_dir_all(lab.path("ca/sub")).unwrap();
    std::fs::create_dir_all(lab.path("scratch")).unwrap();
    std::fs::write(lab.path("notes.txt"), "reviewed\n").unwrap();
    std::fs::write(lab.path("ca/sub/root.pem"), "CA\n").unwrap();
    let file = lab.write_profile(&format!(
        "agent = \"custom\"\n[image]\nref = \"{image}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n\
         [[mounts]]\nsource = \"notes.txt\"\ntarget = \"/srv/notes.txt\"\n\
         [[mounts]]\ntype = \"directory\"\nsource = \"ca\"\ntarget = \"/srv/ca\"\n\
         [[mounts]]\ntype = \"directory\"\nsource = \"scratch\"\ntarget = \"/srv/scratch\"\nread_only = false\n"
    ));
    lab.expect(&["lock", &file], 0);
    let lock = std::fs::read_to_string(lab.lock_path()).unwrap();
    // A lock interrupted before its rename leaves the previous lock whole.
    std::fs::write(lab.path("notes.txt"), "changed before a crash\n").unwrap();
    let output = lab.run_with(
        &["lock", &file],
        &[("AGENTC_TEST_INTERRUPT", "write:before-rename")],
    );
    assert!(aborted(&output), "{}", describe(&output));
    assert_eq!(std::fs::read_to_string(lab.lock_path()).unwrap(), lock);
    std::fs::write(lab.path("notes.txt"), "reviewed\n").unwrap();
    assert!(lock.contains("kind = \"directory\""), "{lock}");
    assert!(!lock.contains("SECRET"), "{lock}");
    // A writable mount is the agent's to change: no drift.
    std::fs::write(lab.path("scratch/out.txt"), "agent output").unwrap();
    lab.expect(&["lock", "--check", &file], 0);
    // A trusted file or a file deep in a mounted directory: drift, refused before anything is created.
    std::fs::write(lab.path("ca/sub/root.pem"), "another CA\n").unwrap();
    for args in [
        vec!["lock", "--check", &file],
        vec!["verify", "--locked", &file],
        vec!["run", "--locked", &file],
    ] {
        let output = lab.expect(&args, 65);
        // The lock names the project's files by their path beside the profile.
        let expected = "file ./ca: sha256: locked ";
        assert!(
            text(&output.stderr).contains(expected),
            "{args:?}: {}",
            describe(&output)
        );
    }
    assert!(lab.containers().is_empty());
    std::fs::write(lab.path("ca/sub/root.pem"), "CA\n").unwrap();
    std::fs::write(lab.path("notes.txt"), "edited\n").unwrap();
    let output = lab.expect(&["run", "--locked", "--backend", "api", &file], 65);
    assert!(
        text(&output.stderr).contains("file ./notes.txt: sha256"),
        "{}",
        describe(&output)
    );
    std::fs::write(lab.path("notes.txt"), "reviewed\n").unwrap();
    lab.expect(&["verify", "--locked", &file], 0);
    assert!(lab.containers().is_empty(), "verify removed its probe");
}

/// Regression: a lock pinned the absolute workspace and file paths, so `lock --check` from a
/// checkout elsewhere (a CI clone, a worktree) reported every project path as drift. Now the
/// lock writes them relative to the profile's directory: a copy of the project under another
/// name in another directory holds the lock, and launches `--locked`; a changed security
/// setting, a changed trusted file or a workspace outside the project still drifts.
#[test]
fn live_a_lock_holds_in_another_checkout_and_a_changed_security_setting_drifts() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_lock_holds_in_another_checkout") {
        return;
    }
    let lab = Lab::new("checkout");
    let image = test_image();
    std::fs::create_dir_all(lab.path("ca")).unwrap();
    std::fs::write(lab.path("ca/root.pem"), "CA\n").unwrap();
    std::fs::write(lab.path("notes.txt"), "reviewed\n").unwrap();
    let body = format!(
        "agent = \"custom\"\n[image]\nref = \"{image}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n\
         [workspace]\nmount = true\n\
         [[mounts]]\nsource = \"notes.txt\"\ntarget = \"/srv/notes.txt\"\n\
         [[mounts]]\ntype = \"directory\"\nsource = \"./ca\"\ntarget = \"/srv/ca\"\n"
    );
    let file = lab.write_profile(&body);
    lab.expect(&["lock", &file], 0);
    let lock = std::fs::read_to_string(lab.lock_path()).unwrap();
    assert!(lock.contains("workspace = \".\""), "{lock}");
    assert!(lock.contains("path = \"./ca\""), "{lock}");
    let own_dir = lab.dir.path().to_string_lossy().into_owned();
    assert!(!lock.contains(&own_dir), "no path of this checkout: {lock}");

    // The project, lock included, copied under another name into another directory.
    let elsewhere = tempfile::tempdir().unwrap();
    let checkout = elsewhere.path().join("another-checkout");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(lab.dir.path())
        .arg(&checkout)
        .output()
        .unwrap();
    assert!(copied.status.success(), "{}", describe(&copied));
    let profile = checkout.join(format!("{}.toml", lab.profile));
    let profile = profile.to_string_lossy().into_owned();
    let check = lab.run_in(&checkout, &["lock", "--check", &profile], &[]);
    assert_eq!(check.status.code(), Some(0), "{}", describe(&check));
    assert!(
        text(&check.stdout).contains("no drift"),
        "{}",
        describe(&check)
    );
    let run = lab.run_in(
        &checkout,
        &["run", "--locked", "--backend", "api", &profile],
        &[],
    );
    assert_eq!(run.status.code(), Some(0), "{}", describe(&run));
    let sandbox = format!("agentc-sandbox-lifecycle-{}-{}", current_uid(), lab.profile);
    let mounted = docker(&[
        "inspect",
        "--format",
        "{{range .Mounts}}{{.Source}} {{end}}",
        &sandbox,
    ])
    .unwrap();
    let real = std::fs::canonicalize(&checkout).unwrap();
    assert!(
        mounted.contains(&format!("{}/ca", real.display())),
        "the copy's own files are mounted: {mounted}"
    );
    docker(&["rm", "--force", &sandbox]).unwrap();

    // A workspace outside the project drifts.
    let outside = lab.run_in(
        &checkout,
        &["lock", "--check", "--workspace", &own_dir, &profile],
        &[],
    );
    assert_eq!(outside.status.code(), Some(65), "{}", describe(&outside));
    assert!(
        text(&outside.stderr).contains("drift: workspace: locked ., current "),
        "{}",
        describe(&outside)
    );
    // A changed trusted file drifts.
    std::fs::write(checkout.join("ca/root.pem"), "another CA\n").unwrap();
    let file_drift = lab.run_in(&checkout, &["lock", "--check", &profile], &[]);
    assert_eq!(
        file_drift.status.code(),
        Some(65),
        "{}",
        describe(&file_drift)
    );
    assert!(
        text(&file_drift.stderr).contains("drift: file ./ca: sha256: locked "),
        "{}",
        describe(&file_drift)
    );
    std::fs::write(checkout.join("ca/root.pem"), "CA\n").unwrap();
    // A changed security setting drifts, named.
    std::fs::write(
        &profile,
        format!(
            "name = \"{}\"\n{body}[security]\nadd_capabilities = [\"NET_RAW\"]\n",
            lab.profile
        ),
    )
    .unwrap();
    let security = lab.run_in(&checkout, &["lock", "--check", &profile], &[]);
    assert_eq!(security.status.code(), Some(65), "{}", describe(&security));
    assert!(
        text(&security.stderr)
            .contains("drift: launch run: container.cap_add.0: locked (none), current NET_RAW"),
        "{}",
        describe(&security)
    );
    assert!(lab.containers().is_empty(), "{:?}", lab.containers());
}

fn current_uid() -> String {
    let output = Command::new("id").arg("-u").output().unwrap();
    text(&output.stdout).trim().to_string()
}

#[test]
fn live_doctor_probes_the_isolated_network_and_removes_it() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_doctor") {
        return;
    }
    let lab = Lab::new("doctor");
    let output = lab.run(&["doctor", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("{error}: {}", describe(&output)));
    let failed = report["fail"].as_u64().unwrap();
    assert_eq!(
        output.status.code(),
        Some(if failed > 0 { 1 } else { 0 }),
        "{report}"
    );
    let ids: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|check| check["id"].as_str().unwrap())
        .collect();
    for id in [
        "engine",
        "api-version",
        "cgroup",
        "seccomp",
        "apparmor",
        "user-namespaces",
        "isolated-network",
        "disk",
    ] {
        assert!(ids.contains(&id), "{id} in {ids:?}");
    }
    // Another test's doctor may hold its own probe network for a moment; a leaked one stays.
    let mut left = String::new();
    for _ in 0..40 {
        left = docker(&["network", "ls", "-q", "--filter", "label=io.agentc.doctor"]).unwrap();
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    assert!(left.is_empty(), "the probe network is removed: {left}");
    // A profile's missing network and unset secret fail, each with a fix.
    let file = lab.write_profile(&format!(
        "agent = \"custom\"\n[image]\nref = \"{}\"\n[network]\nname = \"{}-none\"\n",
        test_image(),
        lab.profile
    ));
    let output = lab.expect(&["doctor", &file], 1);
    let shown = text(&output.stdout);
    assert!(
        shown.contains(&format!("fail  network {}-none", lab.profile)),
        "{shown}"
    );
    // The fixes name the real network and the profile as it was given.
    assert!(
        shown.contains(&format!(
            "fix: `docker network create {}-none`",
            lab.profile
        )),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("fix: `agentc apply {file}` builds, seeds")),
        "{shown}"
    );
    assert!(!shown.contains("PROFILE"), "{shown}");
    assert!(!shown.contains("egress-proxy-image"), "{shown}");
    // A launch behind agentc's egress proxy: the proxy's image, made from this binary, is
    // judged (present, or imported by the first launch).
    let file = lab.write_profile(&format!(
        "agent = \"custom\"\n[image]\nref = \"{}\"\n[egress]\nmode = \"allowlist\"\nhosts = [\"allowed.test\"]\n",
        test_image(),
    ));
    let output = lab.run(&["doctor", &file]);
    let shown = text(&output.stdout);
    let line = shown
        .lines()
        .find(|line| line.contains("egress-proxy-image"))
        .unwrap_or_else(|| panic!("no egress-proxy-image check: {shown}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words[..2], ["ok", "egress-proxy-image"], "{line}");
    assert!(words[2].starts_with("agentc-egress:"), "{line}");
}

/// An agent image on top of the test image whose `cp` accepts GNU's `--no-preserve`, which
/// the seed helper uses (see `launch.rs`); `None` where the host has no dash to provide it.
fn seed_image(lab: &mut Lab) -> Option<String> {
    let loader = std::fs::canonicalize("/lib64/ld-linux-x86-64.so.2").ok()?;
    if !Path::new("/bin/dash").is_file() || !Path::new("/lib/x86_64-linux-gnu/libc.so.6").is_file()
    {
        return None;
    }
    let context = lab.path("agent-image");
    std::fs::create_dir_all(&context).unwrap();
    for (from, name) in [
        (Path::new("/bin/dash"), "dash"),
        (Path::new("/lib/x86_64-linux-gnu/libc.so.6"), "libc.so.6"),
        (loader.as_path(), "ld.so"),
    ] {
        std::fs::copy(from, context.join(name)).unwrap();
    }
    std::fs::write(
        context.join("cp"),
        "#!/bin/sh\nfor a; do shift; case \"$a\" in --no-preserve=*) ;; *) set -- \"$@\" \"$a\";; esac; done\nexec /bin/busybox cp \"$@\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(context.join("cp"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        context.join("Dockerfile"),
        format!(
            "FROM {}\nCOPY libc.so.6 /lib/x86_64-linux-gnu/libc.so.6\nCOPY ld.so /lib64/ld-linux-x86-64.so.2\n\
             COPY dash /bin/dash\nRUN [\"/bin/busybox\", \"ln\", \"-sf\", \"dash\", \"/bin/sh\"]\n\
             COPY cp /usr/local/bin/cp\nENV PATH=/usr/local/bin:/bin:/usr/bin\n",
            test_image()
        ),
    )
    .unwrap();
    let tag = format!("agentc-test/{}-agent:1", lab.profile);
    lab.tags.push(tag.clone());
    lab.tags
        .push(format!("{tag}-agentc-previous-{}", lab.profile));
    docker(&["build", "-q", "-t", &tag, &context.to_string_lossy()]).unwrap();
    Some(tag)
}

#[test]
fn live_apply_seeds_what_needs_seeding() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_apply_seeds") {
        return;
    }
    let mut lab = Lab::new("seeds");
    let Some(image) = seed_image(&mut lab) else {
        eprintln!("skipping live_apply_seeds: the seed helper needs GNU cp, which this test provides with the host's /bin/dash (x86-64 glibc), absent here");
        return;
    };
    let volume = format!("{}-home", lab.profile);
    lab.volumes.push(volume.clone());
    std::fs::write(lab.path("AGENTS.md"), "v1\n").unwrap();
    let file = lab.write_profile(&format!(
        "agent = \"claude-code\"\nhome_volume = \"{volume}\"\n[image]\nref = \"{image}\"\n\
         [[mounts]]\ntype = \"seed\"\nsource = \"AGENTS.md\"\ntarget = \"/home/claude/AGENTS.md\"\non_conflict = \"replace\"\n"
    ));
    let seeded = "seeded /home/claude/AGENTS.md";
    let output = lab.expect(&["apply", &file], 0);
    assert!(
        text(&output.stdout).contains(seeded),
        "{}",
        describe(&output)
    );
    let output = lab.expect(&["apply", &file, "--backend", "api"], 0);
    assert!(
        text(&output.stdout).contains("unchanged since the last apply"),
        "{}",
        describe(&output)
    );
    std::fs::write(lab.path("AGENTS.md"), "v2\n").unwrap();
    // Interrupted after the seed but before the state: the next apply seeds again (the helper
    // leaves an equal target alone) and records it.
    let output = lab.run_with(
        &["apply", &file],
        &[("AGENTC_TEST_INTERRUPT", "apply:after-seed")],
    );
    assert!(aborted(&output), "{}", describe(&output));
    let output = lab.expect(&["apply", &file], 0);
    assert!(
        text(&output.stdout).contains(seeded),
        "changed source: {}",
        describe(&output)
    );
    let output = lab.expect(&["apply", &file], 0);
    assert!(
        text(&output.stdout).contains("unchanged since the last apply"),
        "{}",
        describe(&output)
    );
    docker(&["volume", "rm", &volume]).unwrap();
    let output = lab.expect(&["apply", &file], 0);
    assert!(
        text(&output.stdout).contains(seeded),
        "volume gone: {}",
        describe(&output)
    );
    let copied = docker(&[
        "run",
        "--rm",
        "--network=none",
        "--mount",
        &format!("type=volume,src={volume},dst=/h"),
        &image,
        "cat",
        "/h/AGENTS.md",
    ])
    .unwrap();
    assert_eq!(copied, "v2");
    assert!(lab.containers().is_empty());
}

#[test]
fn live_walkthrough_runs_as_the_readme_shows() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_walkthrough") {
        return;
    }
    let script = repo_root().join("scripts/walkthrough.sh");
    let output = Command::new("bash")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_agentc"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(
        text(&output.stdout).ends_with("walkthrough: ok\n"),
        "{}",
        describe(&output)
    );
    // The README's walkthrough is the script's: each of its commands is one the script runs.
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let section = readme
        .split("## Walkthrough")
        .nth(1)
        .expect("the README has a Walkthrough section");
    let script_text = std::fs::read_to_string(&script).unwrap();
    let mut commands = 0;
    for line in section.lines().take_while(|line| !line.starts_with("## ")) {
        let Some(command) = line.strip_prefix("agentc ") else {
            continue;
        };
        let verb = command.split_whitespace().next().unwrap();
        assert!(
            script_text.contains(&format!("\"$agentc\" {verb}")),
            "the README runs `agentc {command}`, the script does not"
        );
        commands += 1;
    }
    assert!(
        commands >= 6,
        "{commands} commands in the README's walkthrough"
    );
}

/// The README's "First run", run as written: each of its commands in order, with what its words
/// ask the reader to change (the preset's image named in `[image] ref`: here the test's agent
/// image) and what keeps a test on this machine (the profile named after the lab, an outside
/// network of the test's own for the egress proxy, verify's egress probe off, the workspace a
/// directory of the test's).
#[test]
fn live_the_readmes_first_run_runs_as_written() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_the_readmes_first_run_runs_as_written") {
        return;
    }
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let section = readme
        .split("\n## First run")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the README has a First run section");
    let commands: Vec<String> = section
        .lines()
        .filter_map(|line| line.strip_prefix("agentc "))
        .map(|command| {
            command
                .split("  #")
                .next()
                .unwrap_or_default()
                .trim()
                .to_string()
        })
        .collect();
    let verbs: Vec<&str> = commands
        .iter()
        .filter_map(|command| command.split_whitespace().next())
        .collect();
    assert_eq!(
        verbs,
        ["init", "build", "doctor", "explain", "run", "verify"],
        "{section}"
    );
    // The build needs a base with Node.js and the agent's package: the local base and a stub
    // of the agent, as a machine without the registries builds it; tagged as the test's own.
    let Some(base) = agent_base::base_image("live_the_readmes_first_run_runs_as_written") else {
        return;
    };
    let lab = Lab::new("firstrun");
    let outside = format!("{}-out", lab.profile);
    docker(&["network", "create", "--internal", &outside]).unwrap();
    let workspace = lab.path("app");
    std::fs::create_dir_all(&workspace).unwrap();
    let file = format!("{}.toml", lab.profile);
    let built = format!("agentc-test/firstrun-claude-code:{}", std::process::id());
    for command in &commands {
        let mut args: Vec<String> = command
            .split_whitespace()
            .map(|arg| match arg {
                "box.toml" => file.clone(),
                "~/src/app" => workspace.display().to_string(),
                other => other.to_string(),
            })
            .collect();
        if args[0] == "verify" {
            args.extend(["--egress-probe".to_string(), "none".to_string()]);
        }
        if args[0] == "build" {
            let package = agent_base::stub_package("claude-code", &lab.path(""), &base);
            args.extend([
                "--image".to_string(),
                built.clone(),
                "--build-arg".to_string(),
                format!("BASE_IMAGE={base}"),
                "--build-arg".to_string(),
                format!("AGENT_PACKAGE={}", lab.path(&package).display()),
            ]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = lab.expect(&args, 0);
        if args[0] == "init" {
            let written = std::fs::read_to_string(lab.path(&file)).unwrap();
            let edited = written
                .replacen(
                    "# ref = \"claude-code:latest\"",
                    &format!("ref = \"{}\"", agent_image()),
                    1,
                )
                .replacen(
                    "[egress]\n",
                    &format!("[egress]\noutside_network = \"{outside}\"\n"),
                    1,
                );
            assert_ne!(
                edited, written,
                "the template names the image and egress to edit"
            );
            std::fs::write(lab.path(&file), edited).unwrap();
        }
        if args[0] == "verify" {
            assert!(
                text(&output.stdout).contains(", 0 failed"),
                "{}",
                describe(&output)
            );
        }
    }
    assert!(lab.containers().is_empty(), "{:?}", lab.containers());
    let _ = lab.run(&["rm", "--profile", &lab.profile, "--volumes"]);
    let _ = docker(&["network", "rm", &outside]);
    let built_user = docker(&["image", "inspect", "--format", "{{.Config.User}}", &built]);
    let _ = docker(&["image", "rm", "--force", &built]);
    // The build made the bundled image: the agent user's, with no firewall of its own.
    assert!(built_user.is_ok_and(|user| !user.starts_with('0') && user.contains(':')));
}

/// A user who may not open the daemon's socket is told so, with the fix for that (not "is
/// docker running?"), by `doctor` and by a session command through either backend. Runs
/// agentc as uid 65534 with no groups, so it needs root; skips otherwise.
#[test]
fn live_a_socket_refusing_the_user_gets_its_own_hint() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_socket_refusing_the_user_gets_its_own_hint") {
        return;
    }
    if current_uid() != "0" {
        eprintln!("skipped: running agentc as another user needs root");
        return;
    }
    let socket = std::fs::metadata("/var/run/docker.sock");
    if !socket
        .is_ok_and(|meta| std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o006 == 0)
    {
        eprintln!(
            "skipped: the daemon's socket is not at /var/run/docker.sock, or anyone may open it"
        );
        return;
    }
    let as_nobody = |args: &[&str]| {
        use std::os::unix::process::CommandExt;
        Command::new(env!("CARGO_BIN_EXE_agentc"))
            .args(args)
            .env("HOME", "/tmp")
            .env_remove("DOCKER_HOST")
            .current_dir("/tmp")
            .uid(65534)
            .gid(65534)
            .stdin(Stdio::null())
            .output()
            .expect("agentc runs")
    };
    for backend in ["cli", "api"] {
        let output = as_nobody(&["exec", "--backend", backend, "agentc-no-such", "true"]);
        assert_eq!(output.status.code(), Some(125), "{}", describe(&output));
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains("this user may not open its socket")
                && stderr.contains("usermod -aG docker"),
            "{backend}: {}",
            describe(&output)
        );
        assert!(
            !stderr.contains("is docker running"),
            "{}",
            describe(&output)
        );
    }
    let output = as_nobody(&["doctor"]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let shown = text(&output.stdout);
    assert!(
        shown.contains("fail  engine") && shown.contains("refuses this user"),
        "{shown}"
    );
    assert!(shown.contains("usermod -aG docker"), "{shown}");
}

/// `--isolation-min` (AGENTC_ISOLATION_MIN) lowers a profile's isolation floor only when asked,
/// never silently: the launch says so (the high finding isolation-lowered), runs at the lower
/// floor, and a lock of the profile drifts under it.
#[test]
fn live_isolation_min_lowers_the_floor_only_when_asked_and_says_so() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_isolation_min_lowers_the_floor_only_when_asked_and_says_so") {
        return;
    }
    let lab = Lab::new("isomin");
    let file = lab.write_profile(&format!(
        "agent = \"custom\"\n[image]\nref = \"{}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n\
         [egress]\nmode = \"deny\"\n[security]\nisolation = {{ min = \"gvisor\" }}\n",
        test_image()
    ));
    let output = lab.expect(&["run", &file, "--isolation-min", "container"], 0);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("high isolation-lowered")
            && stderr.contains("lowers the isolation floor from gvisor to container"),
        "{}",
        describe(&output)
    );
    assert!(
        stderr.contains("isolation: container under runtime runc"),
        "{}",
        describe(&output)
    );
    let containers = lab.containers();
    assert_eq!(containers.len(), 1, "{containers:?}");
    let labels = docker(&[
        "inspect",
        "--format",
        "{{index .Config.Labels \"io.agentc.isolation\"}} {{.HostConfig.Runtime}}",
        &containers[0],
    ])
    .unwrap();
    assert_eq!(labels.trim(), "container runc");
    let ps = text(&lab.expect(&["ps"], 0).stdout);
    assert!(
        ps.lines()
            .next()
            .unwrap_or_default()
            .contains(" ISOLATION "),
        "{ps}"
    );
    assert!(
        ps.lines()
            .any(|row| row.starts_with(&containers[0]) && row.contains(" container (runc) ")),
        "{ps}"
    );
    lab.expect(&["rm", &containers[0]], 0);
    // A lock of the profile holds its floor: the lowered one drifts.
    lab.expect(&["lock", &file], 0);
    lab.expect(&["lock", "--check", &file], 0);
    let drifted = lab.run_with(
        &["lock", "--check", &file],
        &[("AGENTC_ISOLATION_MIN", "container")],
    );
    assert_eq!(drifted.status.code(), Some(65), "{}", describe(&drifted));
    assert!(
        text(&drifted.stderr).contains("isolation") || text(&drifted.stdout).contains("isolation"),
        "{}",
        describe(&drifted)
    );
    // doctor says what the launch will do: the floor met by a proven runtime, or refused.
    let has_runsc = docker(&["info", "--format", "{{json .Runtimes}}"])
        .is_ok_and(|runtimes| runtimes.contains("\"runsc\""));
    let doctor = text(&lab.run(&["doctor", &file]).stdout);
    if has_runsc {
        assert!(
            doctor.contains("ok    isolation") && doctor.contains("gvisor under runtime runsc"),
            "{doctor}"
        );
    } else {
        assert!(doctor.contains("fail  isolation"), "{doctor}");
    }
    let microvm = lab.write_profile(&format!(
        "agent = \"custom\"\n[image]\nref = \"{}\"\n[egress]\nmode = \"deny\"\n\
         [security]\nisolation = {{ min = \"microvm\" }}\n",
        test_image()
    ));
    let doctor = lab.expect(&["doctor", &microvm], 1);
    let shown = text(&doctor.stdout);
    assert!(
        shown.contains("fail  isolation") && shown.contains("no runtime meets min microvm"),
        "{shown}"
    );
    assert!(shown.contains("install Kata Containers"), "{shown}");
    // A tier that does not exist names the variable, and nothing starts.
    let bad = lab.run_with(&["run", &file], &[("AGENTC_ISOLATION_MIN", "vm")]);
    assert_eq!(bad.status.code(), Some(65), "{}", describe(&bad));
    assert!(
        text(&bad.stderr).contains("AGENTC_ISOLATION_MIN")
            && text(&bad.stderr).contains("\"vm\" is not an isolation tier"),
        "{}",
        describe(&bad)
    );
    assert!(lab.containers().is_empty());
}

/// The isolation probes are remembered per engine and runtime version (issue 24): a second
/// launch with a floor creates no probe container (counted by `docker events` on the probes'
/// `io.agentc.probe.profile` label, this test's own profile), a changed runtime version in the
/// cache's record probes again, a corrupt cache file costs only the probes, and
/// `AGENTC_ISOLATION_CACHE=off` probes every time. Both backends.
#[test]
fn live_isolation_probes_are_cached_per_engine_and_runtime_version() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_isolation_probes_are_cached_per_engine_and_runtime_version") {
        return;
    }
    let lab = Lab::new("isocache");
    let file = lab.write_profile(&format!(
        "agent = \"custom\"\n[image]\nref = \"{}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n\
         [egress]\nmode = \"deny\"\n[security]\nisolation = {{ min = \"container\" }}\n",
        test_image()
    ));
    let cache_home = lab.path("cache");
    let cache_home = cache_home.to_string_lossy().into_owned();
    let cache_file = lab.path("cache/agentc/isolation-probes.json");
    let now = || {
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        format!("{}.{:09}", at.as_secs(), at.subsec_nanos())
    };
    // The probe containers one launch created.
    let probes_of = |backend: &str, extra: &[(&str, &str)]| -> usize {
        let since = now();
        let mut env = vec![("XDG_CACHE_HOME", cache_home.as_str())];
        env.extend_from_slice(extra);
        let output = lab.run_with(&["run", "--backend", backend, &file], &env);
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        for container in lab.containers() {
            lab.expect(&["rm", &container], 0);
        }
        let until = now();
        let label = format!("label=io.agentc.probe.profile={}", lab.profile);
        docker(&[
            "events",
            "--since",
            &since,
            "--until",
            &until,
            "--filter",
            "type=container",
            "--filter",
            "event=create",
            "--filter",
            &label,
            "--format",
            "{{.ID}}",
        ])
        .unwrap()
        .lines()
        .count()
    };
    for backend in ["cli", "api"] {
        let _ = std::fs::remove_file(&cache_file);
        let first = probes_of(backend, &[]);
        assert!(first >= 1, "{backend}: the first launch probes");
        assert!(cache_file.exists(), "{backend}: the proofs are remembered");
        assert_eq!(
            probes_of(backend, &[]),
            0,
            "{backend}: the second launch probes nothing"
        );
        // A runtime whose version changed since is probed again.
        let mut record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&cache_file).unwrap()).unwrap();
        for entry in record["entries"].as_array_mut().unwrap() {
            entry["version"] = "an older version".into();
        }
        std::fs::write(&cache_file, serde_json::to_vec(&record).unwrap()).unwrap();
        assert_eq!(
            probes_of(backend, &[]),
            first,
            "{backend}: a changed version probes again"
        );
        // A corrupt file is ignored and replaced.
        std::fs::write(&cache_file, b"{\"format\": 1, \"entries\": [garbage").unwrap();
        assert_eq!(
            probes_of(backend, &[]),
            first,
            "{backend}: a corrupt cache probes"
        );
        assert_eq!(probes_of(backend, &[]), 0, "{backend}: and is rewritten");
        let bypassed = probes_of(backend, &[("AGENTC_ISOLATION_CACHE", "off")]);
        // (Without the cache the pool lookup's floor probes too, so at least as many.)
        assert!(
            bypassed >= first,
            "{backend}: AGENTC_ISOLATION_CACHE=off probes: {bypassed}"
        );
    }
}

/// The isolation probe needs nothing of the launch's image (issue 24): it runs agentc's own
/// image (`agentc egress-proxy kernel`), so a floor is met for a launch whose image the engine
/// does not even have; the launch then fails on the missing image (125), not as below the
/// floor (65). Both backends, and `doctor`.
#[test]
fn live_the_isolation_probe_needs_nothing_of_the_launch_image() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_the_isolation_probe_needs_nothing_of_the_launch_image") {
        return;
    }
    let lab = Lab::new("isoimage");
    let file = lab.write_profile(
        "agent = \"custom\"\n[image]\nref = \"agentc-no-such-image:isolation-probe\"\n\
         command = [\"tail\", \"-f\", \"/dev/null\"]\n\
         [egress]\nmode = \"deny\"\n[security]\nisolation = { min = \"container\" }\n",
    );
    let off = [("AGENTC_ISOLATION_CACHE", "off")];
    for backend in ["cli", "api"] {
        let output = lab.run_with(&["run", "--backend", backend, &file], &off);
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains("isolation: container under runtime runc"),
            "{backend}: {}",
            describe(&output)
        );
        assert_eq!(
            output.status.code(),
            Some(125),
            "{backend}: {}",
            describe(&output)
        );
        assert!(
            stderr.contains("agentc-no-such-image"),
            "{}",
            describe(&output)
        );
    }
    let doctor = text(&lab.run_with(&["doctor", &file], &off).stdout);
    assert!(
        doctor.contains("ok    isolation") && doctor.contains("container under runtime runc"),
        "{doctor}"
    );
    assert!(lab.containers().is_empty());
}
