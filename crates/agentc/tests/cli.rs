//! The `agentc` binary as a user meets it: exit statuses, messages and output shapes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A home directory outside the repository (a workspace holding the home is refused) with a
/// `src/` directory, which `fixtures/valid/finding-bind-workspace-ancestor.toml` binds as `~/src`,
/// and an empty `.ssh/`, which `fixtures/valid/finding-bind-credential-dir.toml` binds.
fn test_home() -> &'static Path {
    static HOME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let home =
            std::env::temp_dir().join(format!("agentc-cli-test-home-{}", std::process::id()));
        std::fs::create_dir_all(home.join("src")).expect("test home");
        std::fs::create_dir_all(home.join(".ssh")).expect("test home's .ssh");
        home
    })
}

/// Runs agentc from the repository root with a clean environment plus `env`.
fn agentc(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentc"));
    command
        .args(args)
        .current_dir(repo_root())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", test_home())
        .env("USER", "dev");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("agentc runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn fixture_names(folder: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo_root().join("fixtures").join(folder))
        .expect("fixtures folder")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".toml"))
        .collect();
    names.sort();
    names
}

#[test]
fn every_invalid_fixture_fails_with_its_own_message_and_exit_65() {
    let names = fixture_names("invalid");
    assert!(
        names.len() >= 40,
        "expected at least 40 invalid fixtures, found {}",
        names.len()
    );
    let mut messages = BTreeSet::new();
    for name in names {
        let path = format!("fixtures/invalid/{name}");
        let output = agentc(&["validate", &path], &[]);
        let stderr = text(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(65),
            "{path}: exit status; stderr:\n{stderr}"
        );
        assert!(output.stdout.is_empty(), "{path}: nothing on stdout");
        assert!(
            stderr.starts_with(&format!("error: {path}")),
            "{path}: names the file:\n{stderr}"
        );
        assert!(
            stderr.contains("\n  hint: "),
            "{path}: carries a hint:\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{path}: no panic:\n{stderr}");
        // The test home's path changes with every run and the checkout's with every machine:
        // show them as `$HOME` and `$REPO`.
        let repo = std::fs::canonicalize(repo_root()).expect("repository root");
        let shown = stderr
            .replace(&test_home().to_string_lossy().into_owned(), "$HOME")
            .replace(&repo.to_string_lossy().into_owned(), "$REPO");
        insta::assert_snapshot!(name.trim_end_matches(".toml").to_string(), shown);
        let first_line = stderr.lines().next().unwrap_or_default().to_string();
        let message = first_line
            .split_once(": ")
            .map(|(_, rest)| rest.to_string());
        assert!(
            messages.insert(message.clone().unwrap_or_default().replace(&path, "")),
            "{path}: its message is shared with another fixture: {first_line}"
        );
    }
}

#[test]
fn every_valid_fixture_validates() {
    for name in fixture_names("valid") {
        let path = format!("fixtures/valid/{name}");
        let output = agentc(&["validate", &path], &[]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{path}: {}",
            text(&output.stderr)
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["render"],
        vec![
            "render",
            "fixtures/valid/claude-minimal.toml",
            "--backend",
            "podman",
        ],
        vec![
            "render",
            "fixtures/valid/claude-minimal.toml",
            "--backend",
            "api",
            "--format",
            "shell",
        ],
        vec!["no-such-command"],
    ] {
        let output = agentc(&args, &[]);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&output.stderr)
        );
        assert!(!output.stderr.is_empty(), "{args:?}: says why");
    }
}

#[test]
fn a_missing_profile_file_is_reported_with_its_path() {
    let output = agentc(&["validate", "fixtures/valid/no-such-profile.toml"], &[]);
    assert_eq!(output.status.code(), Some(66));
    assert!(text(&output.stderr).contains("fixtures/valid/no-such-profile.toml"));
}

#[test]
fn every_command_has_help_with_an_example() {
    for command in ["validate", "schema", "explain", "render"] {
        let output = agentc(&[command, "--help"], &[]);
        assert_eq!(output.status.code(), Some(0), "{command}");
        let help = text(&output.stdout);
        assert!(
            help.contains("agentc "),
            "{command} --help shows an example:\n{help}"
        );
    }
}

#[test]
fn render_json_shapes() {
    let workspace = repo_root().to_string_lossy().into_owned();
    let cli = agentc(
        &[
            "render",
            "fixtures/valid/claude-minimal.toml",
            "--backend",
            "cli",
            "--format",
            "json",
            "--workspace",
            &workspace,
        ],
        &[],
    );
    assert_eq!(cli.status.code(), Some(0), "{}", text(&cli.stderr));
    let argv: serde_json::Value = serde_json::from_slice(&cli.stdout).expect("JSON");
    assert_eq!(argv[0], "docker");
    assert_eq!(argv[1], "run");

    let api = agentc(
        &[
            "render",
            "fixtures/valid/claude-minimal.toml",
            "--backend",
            "api",
            "--format",
            "json",
            "--workspace",
            &workspace,
        ],
        &[],
    );
    assert_eq!(api.status.code(), Some(0), "{}", text(&api.stderr));
    let rendered: serde_json::Value = serde_json::from_slice(&api.stdout).expect("JSON");
    assert!(rendered.get("name").is_some(), "{rendered}");
    assert!(rendered["body"]["Image"].is_string(), "{rendered}");
}

#[test]
fn schema_is_json_schema() {
    let output = agentc(&["schema"], &[]);
    assert_eq!(output.status.code(), Some(0));
    let schema: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert!(schema["properties"]["egress"].is_object(), "{schema}");
}

#[test]
fn secret_values_in_the_environment_never_reach_the_output() {
    const SENTINEL: &str = "sk-agentc-test-SENTINEL-value";
    let workspace = repo_root().to_string_lossy().into_owned();
    let secrets = [
        ("ANTHROPIC_API_KEY", SENTINEL),
        ("OPENAI_API_KEY", SENTINEL),
        ("LANGFUSE_PUBLIC_KEY", SENTINEL),
        ("LANGFUSE_SECRET_KEY", SENTINEL),
    ];
    for name in fixture_names("valid") {
        let path = format!("fixtures/valid/{name}");
        for args in [
            vec![
                "render",
                &path,
                "--backend",
                "cli",
                "--format",
                "shell",
                "--workspace",
                &workspace,
            ],
            vec![
                "render",
                &path,
                "--backend",
                "cli",
                "--format",
                "json",
                "--workspace",
                &workspace,
            ],
            vec![
                "render",
                &path,
                "--backend",
                "api",
                "--format",
                "json",
                "--workspace",
                &workspace,
            ],
            vec!["explain", &path, "--workspace", &workspace],
        ] {
            let output = agentc(&args, &secrets);
            assert!(
                !text(&output.stdout).contains(SENTINEL),
                "{args:?} leaked a secret to stdout"
            );
            assert!(
                !text(&output.stderr).contains(SENTINEL),
                "{args:?} leaked a secret to stderr"
            );
        }
    }
}

/// An `AGENTC_*` variable a typo away from an override is refused, exit 65, naming the
/// variable and the override it resembles, for every command that reads overrides; its value
/// is never shown. Unrelated `AGENTC_*` names change nothing.
#[test]
fn a_misspelled_override_is_refused_naming_the_override_meant() {
    let profile = "fixtures/valid/claude-minimal.toml";
    for args in [
        vec!["validate", profile],
        vec!["explain", profile],
        vec!["render", profile, "--backend", "api", "--format", "json"],
    ] {
        let output = agentc(&args, &[("AGENTC_PID_LIMIT", "100-value-not-shown")]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(65), "{args:?}: {stderr}");
        assert!(
            stderr.contains("environment variable AGENTC_PID_LIMIT: ")
                && stderr.contains("hint: did you mean AGENTC_PIDS_LIMIT?"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("value-not-shown"), "{stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");

        let plain = agentc(&args, &[]);
        let unrelated = agentc(
            &args,
            &[
                ("AGENTC_REQUIRE_DOCKER", "1"),
                ("AGENTC_HOME", "/elsewhere"),
            ],
        );
        assert_eq!(
            unrelated.status.code(),
            Some(0),
            "{}",
            text(&unrelated.stderr)
        );
        assert_eq!(unrelated.stdout, plain.stdout, "{args:?}");
    }
}

#[test]
fn a_profile_with_several_mistakes_reports_them_all_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = dir.path().join("several.toml");
    std::fs::write(
        &profile,
        "name = \"several\"\nagent = \"claude-code\"\ncolour = \"blue\"\n\n[resources]\n\
         memory = \"lots\"\npids_limit = 0\n\n[egress]\nmode = \"block\"\ngateway_host = \"gw\"\n\
         gateway_prot = 22\n\n[network]\npublish = [8080, \"8080/TCP\"]\n",
    )
    .expect("profile written");
    let path = profile.to_string_lossy().into_owned();
    let output = agentc(&["validate", &path], &[]);
    assert_eq!(output.status.code(), Some(65));
    assert!(output.stdout.is_empty());
    let shown = text(&output.stderr).replace(&path, "several.toml");
    insta::assert_snapshot!("several-mistakes", shown);
}

#[test]
fn the_engine_comes_from_the_flag_or_agentc_engine_and_a_bad_one_is_a_usage_error() {
    let profile = "fixtures/valid/sandbox-entrypoint.toml";
    let args = ["render", profile, "--backend", "cli", "--format", "shell"];
    let docker = agentc(&args, &[]);
    assert!(
        text(&docker.stdout).starts_with("docker run "),
        "{docker:?}"
    );
    let flag = agentc(&[&args[..], &["--engine", "podman"]].concat(), &[]);
    let variable = agentc(&args, &[("AGENTC_ENGINE", "podman")]);
    assert_eq!(flag.stdout, variable.stdout);
    let podman = text(&flag.stdout);
    assert!(podman.starts_with("podman run "), "{podman}");
    // The difference table's spellings.
    for spelling in [
        "--tmpfs=/tmp:rw,noexec,nosuid,nodev",
        "--read-only-tmpfs=false",
        "--ipc=private",
    ] {
        assert!(podman.contains(spelling), "{spelling} in {podman}");
    }
    // The flag wins over the variable.
    let docker_again = agentc(
        &[&args[..], &["--engine", "docker"]].concat(),
        &[("AGENTC_ENGINE", "podman")],
    );
    assert_eq!(docker_again.stdout, docker.stdout);
    let bad = agentc(&args, &[("AGENTC_ENGINE", "nerdctl")]);
    assert_eq!(bad.status.code(), Some(2));
    let stderr = text(&bad.stderr);
    assert!(
        stderr.contains("AGENTC_ENGINE=\"nerdctl\" is not an engine\n  hint: "),
        "{stderr}"
    );
    // What Podman cannot carry is refused by field, offline.
    let refused = agentc(
        &[
            "render",
            "fixtures/valid/finding-host-gateway.toml",
            "--engine",
            "podman",
        ],
        &[],
    );
    assert_eq!(refused.status.code(), Some(65));
    assert!(text(&refused.stderr).contains("extra_hosts[0] cannot be launched on podman"));
}

/// `agentc run` names each high or critical finding on stderr before it launches (here the
/// launch then fails: the daemon address leads nowhere), and `--no-warnings` hides them.
#[test]
fn a_name_behind_the_egress_proxy_that_is_no_dns_label_is_refused_before_anything_starts() {
    let nowhere = [("DOCKER_HOST", "unix:///nonexistent/agentc-run-name.sock")];
    let profile = "fixtures/valid/egress-outside-custom.toml";
    let long = "n".repeat(64);
    let copies = "n".repeat(61);
    for args in [
        vec!["run", profile, "--name", &long],
        vec!["run", profile, "--name", "box.two"],
        // 61 characters fit one launch, not the tenth copy's NAME-10.
        vec!["run", profile, "--name", &copies, "--count", "10"],
    ] {
        let output = agentc(&args, &nowhere);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(65), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: --name: "), "{args:?}: {stderr}");
        assert!(stderr.contains("the engine's DNS"), "{args:?}: {stderr}");
        assert!(stderr.contains("\n  hint: "), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    let output = agentc(&["run", profile, "--name", &long], &nowhere);
    assert!(
        text(&output.stderr).contains("use a --name of at most 63 characters"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn run_warns_of_each_high_finding_before_it_launches() {
    let dir = std::env::temp_dir().join(format!("agentc-run-warn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let write = |name: &str, egress: &str| {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(
                "name = \"warn\"\nagent = \"custom\"\n[image]\nref = \"agentc-test-absent:1\"\n\
                 command = [\"sleep\", \"1\"]\n[egress]\n{egress}\n"
            ),
        )
        .expect("profile");
        path.display().to_string()
    };
    // An allowlist without hosts is enforced by nothing: egress-unenforced, high.
    let unenforced = write("unenforced.toml", "mode = \"allowlist\"\nhosts = []");
    let denied = write("denied.toml", "mode = \"deny\"");
    let nowhere = [("DOCKER_HOST", "unix:///nonexistent/agentc-run-warn.sock")];
    let warnings = |output: &Output| -> Vec<String> {
        text(&output.stderr)
            .lines()
            .filter(|line| line.starts_with("agentc: warning:"))
            .map(str::to_string)
            .collect()
    };
    for backend in ["cli", "api"] {
        let run = agentc(
            &[
                "run",
                &unenforced,
                "--backend",
                backend,
                "--workspace",
                "/tmp",
            ],
            &nowhere,
        );
        assert_ne!(
            run.status.code(),
            Some(0),
            "{backend}: the daemon is absent"
        );
        let stderr = text(&run.stderr);
        assert_eq!(
            warnings(&run),
            [
                "agentc: warning: high egress-unenforced at profile line 7 (egress.mode): egress \
              mode allowlist is not enforced: a custom image has no egress firewall, so the \
              sandbox reaches any host"
            ],
            "{backend}: {stderr}"
        );
        assert!(
            stderr.starts_with("agentc: warning:"),
            "{backend}: the warning comes before anything else: {stderr}"
        );
        let quiet = agentc(
            &[
                "run",
                &unenforced,
                "--backend",
                backend,
                "--workspace",
                "/tmp",
                "--no-warnings",
            ],
            &nowhere,
        );
        assert!(warnings(&quiet).is_empty(), "{}", text(&quiet.stderr));
        assert_eq!(quiet.status.code(), run.status.code());
        let clean = agentc(
            &["run", &denied, "--backend", backend, "--workspace", "/tmp"],
            &nowhere,
        );
        assert!(warnings(&clean).is_empty(), "{}", text(&clean.stderr));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Messages name the engine in use: its command line when it is missing, its API when it does
/// not answer (with Podman's own way to start it).
#[test]
fn messages_name_the_engine_in_use() {
    let nowhere = std::env::temp_dir().join(format!("agentc-no-engine-{}", std::process::id()));
    std::fs::create_dir_all(&nowhere).expect("an empty PATH directory");
    let path = nowhere.display().to_string();
    let profile = "fixtures/valid/sandbox-minimal.toml";
    for engine in ["docker", "podman"] {
        let run = agentc(
            &[
                "--engine",
                engine,
                "run",
                profile,
                "--backend",
                "cli",
                "--no-warnings",
            ],
            &[("PATH", &path)],
        );
        assert_eq!(run.status.code(), Some(125), "{engine}");
        let stderr = text(&run.stderr);
        assert!(
            stderr.contains(&format!("error: cannot run {engine}: "))
                && stderr.contains(&format!(
                    "hint: install the {engine} CLI, or use --backend api"
                )),
            "{engine}: {stderr}"
        );
        let socket = format!("unix://{}/absent.sock", nowhere.display());
        let ps = agentc(
            &["--engine", engine, "ps"],
            &[("DOCKER_HOST", &socket), ("CONTAINER_HOST", &socket)],
        );
        assert_eq!(ps.status.code(), Some(125), "{engine}");
        let stderr = text(&ps.stderr);
        assert!(
            stderr.contains(&format!("error: cannot connect to the {engine} daemon: ")),
            "{engine}: {stderr}"
        );
        assert_eq!(
            stderr.contains("podman system service"),
            engine == "podman",
            "{engine}: {stderr}"
        );
    }
    // An engine that answers but lacks the image: the refusal and its hint name that engine's
    // daemon and commands (a stand-in program answers every query with its "no such image").
    let fake = nowhere.join("fake");
    std::fs::create_dir_all(&fake).expect("a PATH directory for the stand-in engines");
    for engine in ["docker", "podman"] {
        let program = fake.join(engine);
        std::fs::write(
            &program,
            "#!/bin/sh\necho \"Error: No such image: busybox:1.36\" >&2\nexit 1\n",
        )
        .expect("a stand-in engine");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755))
            .expect("an executable stand-in");
    }
    let path = format!("{}:/usr/bin:/bin", fake.display());
    for (engine, other) in [("docker", "podman"), ("podman", "docker")] {
        let run = agentc(
            &[
                "--engine",
                engine,
                "run",
                profile,
                "--backend",
                "cli",
                "--no-warnings",
            ],
            &[("PATH", &path)],
        );
        assert_eq!(
            run.status.code(),
            Some(125),
            "{engine}: {}",
            text(&run.stderr)
        );
        let stderr = text(&run.stderr);
        assert!(
            stderr.contains(&format!("is not present on the {engine} daemon"))
                && stderr.contains(&format!("`{engine} build` or `{engine} import`"))
                && !stderr.contains(other),
            "{engine}: {stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&nowhere);
}

#[test]
fn image_context_writes_a_presets_context_once_and_refuses_custom() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("hermes-image");
    let target_text = target.to_string_lossy().into_owned();
    let written = agentc(&["image", "context", "hermes", &target_text], &[]);
    assert!(written.status.success(), "{written:?}");
    let stdout = text(&written.stdout);
    for file in [
        "Dockerfile",
        "agentc-install.sh",
        "agentc-entrypoint.sh",
        "packages/README.md",
    ] {
        assert!(target.join(file).is_file(), "{file}");
        assert!(stdout.contains(&format!("wrote {}", target.join(file).display())));
    }
    assert!(
        stdout.contains("next: docker build -t hermes:latest"),
        "{stdout}"
    );
    let dockerfile = std::fs::read_to_string(target.join("Dockerfile")).unwrap();
    assert!(dockerfile.contains("WORKDIR /opt/data\n"), "{dockerfile}");
    // Never over files of its own or the user's unless asked.
    let again = agentc(&["image", "context", "hermes", &target_text], &[]);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert!(text(&again.stderr).contains("is not empty"));
    std::fs::write(target.join("Dockerfile"), "edited").unwrap();
    let forced = agentc(
        &["image", "context", "hermes", &target_text, "--force"],
        &[],
    );
    assert!(forced.status.success(), "{forced:?}");
    assert_eq!(
        std::fs::read_to_string(target.join("Dockerfile")).unwrap(),
        dockerfile
    );
    let custom = agentc(
        &[
            "image",
            "context",
            "custom",
            &dir.path().join("c").to_string_lossy(),
        ],
        &[],
    );
    assert_eq!(custom.status.code(), Some(65), "{custom:?}");
    assert!(text(&custom.stderr).contains("no bundled image"));
    assert!(!dir.path().join("c").exists());
}

#[test]
fn a_build_arg_that_is_not_name_equals_value_is_a_usage_error() {
    for bad in ["NOEQUALS", "=x", "1X=y", "A-B=c"] {
        let output = agentc(
            &[
                "build",
                "fixtures/valid/claude-minimal.toml",
                "--build-arg",
                bad,
            ],
            &[],
        );
        assert_eq!(output.status.code(), Some(2), "{bad}: {output:?}");
        assert!(
            text(&output.stderr).contains("--build-arg"),
            "{bad}: {output:?}"
        );
    }
}

#[test]
fn verify_refuses_options_that_do_not_fit_its_backend_before_anything_runs() {
    // The Kubernetes rendering's options belong to --backend k8s.
    let output = agentc(
        &[
            "verify",
            "fixtures/valid/sandbox-minimal.toml",
            "--backend",
            "cli",
            "--k8s-kind",
            "sandbox",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("--k8s-kind is an option of the Kubernetes rendering"),
        "{}",
        text(&output.stderr)
    );
    // A container launch's options do not apply to the play.
    for option in ["--pull", "--locked"] {
        let output = agentc(
            &[
                "verify",
                "fixtures/valid/sandbox-minimal.toml",
                "--backend",
                "k8s",
                option,
            ],
            &[],
        );
        assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
        assert!(
            text(&output.stderr).contains(&format!(
                "{option} is an option of a container launch's verify"
            )),
            "{}",
            text(&output.stderr)
        );
    }
}

#[test]
fn verify_through_k8s_without_podman_fails_closed_with_the_fix() {
    let output = agentc(
        &[
            "verify",
            "fixtures/valid/sandbox-minimal.toml",
            "--backend",
            "k8s",
        ],
        &[("AGENTC_PODMAN", "/nonexistent/podman")],
    );
    assert_eq!(output.status.code(), Some(125), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("cannot play the Kubernetes rendering: podman is not installed")
            && stderr.contains("hint: install Podman 4.3 or later"),
        "{stderr}"
    );
}

#[test]
fn run_count_refuses_a_fixed_host_port_before_it_asks_the_engine_for_the_floor() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("fleet.toml");
    std::fs::write(
        &profile,
        "name = \"fleet\"\nagent = \"custom\"\n\n[image]\nref = \"busybox:1.36\"\n\n\
         [network]\npublish = [\"18080:8080\"]\n\n[security]\nisolation = { min = \"gvisor\" }\n",
    )
    .unwrap();
    // No engine answers there: meeting the floor would fail with exit 125.
    let output = agentc(
        &[
            "run",
            profile.to_str().unwrap(),
            "--count",
            "2",
            "--backend",
            "api",
            "--workspace",
            dir.path().to_str().unwrap(),
        ],
        &[("DOCKER_HOST", "unix:///nonexistent/docker.sock")],
    );
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(65), "{stderr}");
    assert!(
        stderr.contains("--count 2 starts 2 copies, but the profile publishes on host port 18080"),
        "{stderr}"
    );
    assert!(!stderr.contains("isolation"), "{stderr}");
}
