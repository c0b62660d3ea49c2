//! `agentc render --backend k8s` and `agentc explain --backend k8s` as a user meets them:
//! output shapes, refusals by field (exit 65), usage errors (exit 2).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A workspace directory outside the repository and the home.
fn workspace() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agentc-k8s-cli-{}/project", std::process::id()));
    std::fs::create_dir_all(&dir).expect("workspace");
    dir
}

fn agentc(args: &[&str]) -> Output {
    let home = workspace().join("../home");
    std::fs::create_dir_all(&home).expect("home");
    Command::new(env!("CARGO_BIN_EXE_agentc"))
        .args(args)
        .current_dir(repo_root())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("USER", "dev")
        .output()
        .expect("agentc runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn render(profile: &str, extra: &[&str]) -> Output {
    let workspace = workspace();
    let mut args = vec![
        "render",
        profile,
        "--backend",
        "k8s",
        "--workspace",
        workspace.to_str().expect("UTF-8 path"),
    ];
    args.extend_from_slice(extra);
    agentc(&args)
}

#[test]
fn json_is_a_v1_list_with_the_workload_last() {
    let output = render(
        "fixtures/valid/claude-minimal.toml",
        &[
            "--format",
            "json",
            "--workspace-claim",
            "src",
            "--namespace",
            "agents",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let list: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().expect("items");
    let kinds: Vec<&str> = items
        .iter()
        .filter_map(|item| item["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["NetworkPolicy", "PersistentVolumeClaim", "Pod"]);
    let pod = &items[2];
    assert_eq!(pod["metadata"]["name"], "agentc-run-claude-minimal");
    assert_eq!(pod["metadata"]["namespace"], "agents");
    assert_eq!(pod["spec"]["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["spec"]["volumes"][1]["persistentVolumeClaim"]["claimName"],
        "src"
    );
}

#[test]
fn yaml_is_one_document_per_object_and_sandbox_wraps_the_pod() {
    let output = render(
        "fixtures/valid/sandbox-minimal.toml",
        &[
            "--format",
            "yaml",
            "--k8s-kind",
            "sandbox",
            "--k8s-name",
            "box-01",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let yaml = text(&output.stdout);
    assert_eq!(yaml.matches("---\n").count(), 2, "{yaml}");
    assert!(
        yaml.contains("apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\n"),
        "{yaml}"
    );
    assert!(yaml.contains("  name: box-01\n"), "{yaml}");
    assert!(yaml.contains("  podTemplate:\n"), "{yaml}");
}

/// Warm pools (issue 22): `--k8s-kind pool` ends with a template, a pool of `--pool-size`
/// replicas and a claim of it.
#[test]
fn a_pool_is_a_template_a_warm_pool_and_a_claim() {
    let output = render(
        "fixtures/valid/sandbox-minimal.toml",
        &[
            "--format",
            "json",
            "--k8s-kind",
            "pool",
            "--pool-size",
            "4",
            "--k8s-name",
            "box",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let list: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let items = list["items"].as_array().expect("items");
    let kinds: Vec<&str> = items
        .iter()
        .map(|item| item["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds[kinds.len() - 3..],
        ["SandboxTemplate", "SandboxWarmPool", "SandboxClaim"],
        "{kinds:?}"
    );
    let [template, pool, claim] = &items[items.len() - 3..] else {
        unreachable!()
    };
    assert_eq!(template["metadata"]["name"], "box");
    assert_eq!(pool["spec"]["replicas"], 4);
    assert_eq!(pool["spec"]["sandboxTemplateRef"]["name"], "box");
    assert_eq!(claim["spec"]["warmPoolRef"]["name"], "box-pool");
    assert!(template["spec"]["podTemplate"]["spec"]["containers"].is_array());
}

#[test]
fn refusals_name_every_field_and_exit_65() {
    let output = render("fixtures/valid/sandbox-pentest.toml", &["--format", "yaml"]);
    assert_eq!(output.status.code(), Some(65));
    assert!(output.stdout.is_empty());
    let stderr = text(&output.stderr);
    for field in [
        "mounts[0]",
        "mounts[1]",
        "security.add_capabilities[0]",
        "network.host_gateway",
    ] {
        assert!(
            stderr.contains(&format!("  - {field}: ")),
            "{field}: {stderr}"
        );
    }
    assert!(
        stderr.starts_with("error: fixtures/valid/sandbox-pentest.toml: "),
        "{stderr}"
    );
    assert!(stderr.contains("hint: "), "{stderr}");

    let output = render("fixtures/valid/claude-minimal.toml", &["--format", "json"]);
    assert_eq!(output.status.code(), Some(65));
    assert!(
        text(&output.stderr).contains("workspace.mount: ")
            && text(&output.stderr).contains("--workspace-claim"),
        "{}",
        text(&output.stderr)
    );

    let output = render(
        "fixtures/valid/claude-langfuse.toml",
        &["--format", "json", "--workspace-claim", "src"],
    );
    assert_eq!(output.status.code(), Some(65));
    assert!(
        text(&output.stderr).contains("--egress-proxy-image"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn a_profile_opting_into_baseline_lets_a_default_capability_through_and_explain_says_so() {
    let restricted = "name = \"chown\"\nagent = \"custom\"\n[image]\nref = \"example/box:1\"\n\
                      user = \"1000\"\n[egress]\nmode = \"deny\"\n[security]\n\
                      add_capabilities = [\"CHOWN\"]\n";
    let profile = workspace().join("../chown.toml");
    std::fs::write(&profile, restricted).expect("profile");
    let profile = profile.to_str().expect("UTF-8 path");
    let output = render(profile, &["--format", "json"]);
    assert_eq!(output.status.code(), Some(65), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("security.add_capabilities[0]"), "{stderr}");
    assert!(
        stderr.contains("[kubernetes] pod_security = \"baseline\""),
        "{stderr}"
    );

    // The level is the profile's: line 11 opts into baseline.
    std::fs::write(
        profile,
        format!("{restricted}[kubernetes]\npod_security = \"Baseline\"\n"),
    )
    .expect("profile");
    let output = render(profile, &["--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let workload = &json["items"][1]["spec"]["containers"][0];
    assert_eq!(
        workload["securityContext"]["capabilities"]["add"],
        serde_json::json!(["CHOWN"])
    );
    let output = agentc(&["explain", profile, "--backend", "k8s"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let explain = text(&output.stdout);
    assert!(
        explain.contains(
            "pod security: baseline (every pod checked), weaker than restricted: a container may \
             add Docker's default capabilities  [profile line 11 (kubernetes.pod_security)]"
        ),
        "{explain}"
    );
    assert!(
        explain.contains("pod-security-baseline [kubernetes.pod_security]"),
        "{explain}"
    );
    let output = agentc(&["explain", profile, "--backend", "k8s", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(json["pod_security"], "baseline");
    assert_eq!(
        json["pod_security_origin"],
        serde_json::json!({"source": "profile", "field": "kubernetes.pod_security", "line": 11, "column": 16})
    );
}

#[test]
fn the_pod_security_level_is_no_invocation_option() {
    let output = render(
        "fixtures/valid/sandbox-minimal.toml",
        &["--format", "json", "--pod-security", "baseline"],
    );
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("--pod-security"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn explain_lists_approximations_and_cluster_duties() {
    let workspace = workspace();
    let workspace = workspace.to_str().expect("UTF-8 path");
    let output = agentc(&[
        "explain",
        "fixtures/valid/sandbox-minimal.toml",
        "--backend",
        "k8s",
        "--workspace",
        workspace,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let explain = text(&output.stdout);
    for expected in [
        "kubernetes: pod agentc-sandbox-sandbox-minimal",
        "pod security: restricted (every pod checked)  [default]",
        "approximations\n",
        "tmpfs-noexec (weaker than docker)",
        "left to the cluster\n",
        "pids-limit [",
        "log-rotation [",
    ] {
        assert!(explain.contains(expected), "{expected}: {explain}");
    }
    let output = agentc(&[
        "explain",
        "fixtures/valid/sandbox-minimal.toml",
        "--backend",
        "k8s",
        "--format",
        "json",
        "--workspace",
        workspace,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(json["pod_security"], "restricted");
    assert_eq!(json["pod_security_origin"]["source"], "default");
    assert!(json["notes"].as_array().is_some_and(|notes| notes
        .iter()
        .any(|note| note["code"] == "pids-limit" && note["kind"] == "cluster-duty")));
}

#[test]
fn k8s_options_and_formats_are_usage_errors_elsewhere() {
    for args in [
        &[
            "render",
            "fixtures/valid/sandbox-minimal.toml",
            "--namespace",
            "x",
        ][..],
        &[
            "render",
            "fixtures/valid/sandbox-minimal.toml",
            "--backend",
            "api",
            "--format",
            "yaml",
        ],
        &[
            "render",
            "fixtures/valid/sandbox-minimal.toml",
            "--backend",
            "k8s",
            "--format",
            "shell",
        ],
        &[
            "render",
            "fixtures/valid/sandbox-minimal.toml",
            "--backend",
            "k8s",
            "--k8s-kind",
            "job",
        ],
        &[
            "explain",
            "fixtures/valid/sandbox-minimal.toml",
            "--k8s-kind",
            "sandbox",
        ],
        &[
            "explain",
            "fixtures/valid/sandbox-minimal.toml",
            "--backend",
            "k8s",
            "--deny",
            "high",
        ],
    ] {
        let output = agentc(args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&output.stderr)
        );
    }
    let output = render(
        "fixtures/valid/sandbox-minimal.toml",
        &["--format", "yaml", "--namespace", "Not_A_Namespace"],
    );
    assert_eq!(output.status.code(), Some(65));
    assert!(text(&output.stderr).contains("--namespace: \"Not_A_Namespace\""));
}

/// A Pod the kubelet may refuse to start (a custom image's own user under runAsNonRoot) is
/// rendered with a warning on stderr naming the field and the fix; a numeric user or a preset's
/// known user renders without one.
#[test]
fn a_pod_that_may_not_start_is_rendered_with_a_warning() {
    let root = render("fixtures/valid/sandbox-minimal.toml", &["--format", "yaml"]);
    assert_eq!(root.status.code(), Some(0), "{}", text(&root.stderr));
    let stderr = text(&root.stderr);
    assert!(
        stderr.starts_with(
            "agentc: warning: image.user: the launch keeps the image's user: runAsNonRoot makes \
             the kubelet refuse to start it"
        ) && stderr.contains("hint: set [image] user to a numeric uid other than 0"),
        "{stderr}"
    );
    let dir = workspace().join("../profiles");
    std::fs::create_dir_all(&dir).expect("profiles");
    let numeric = dir.join("numeric.toml");
    std::fs::write(
        &numeric,
        "name = \"numeric\"\nagent = \"custom\"\n[image]\nref = \"busybox:1.36\"\nuser = \"1000:1000\"\n",
    )
    .expect("profile");
    for (profile, extra) in [
        (numeric.to_str().expect("UTF-8 path"), vec![]),
        (
            "fixtures/valid/claude-minimal.toml",
            vec!["--workspace-claim", "src"],
        ),
    ] {
        let mut args = vec!["--format", "yaml"];
        args.extend(extra);
        let quiet = render(profile, &args);
        assert_eq!(
            quiet.status.code(),
            Some(0),
            "{profile}: {}",
            text(&quiet.stderr)
        );
        assert!(
            !text(&quiet.stderr).contains("warning"),
            "{profile}: {}",
            text(&quiet.stderr)
        );
    }
}

/// The same profile renders the same objects whoever renders it: no object name, claim or
/// annotation holds the local user or uid (the home volume's claim is `<agent>-home-<name>`,
/// not Docker's `<agent>-home-<user>-<uid>-<name>`), so the output can be committed (GitOps).
#[test]
fn the_objects_hold_no_local_user_and_are_the_same_for_every_user() {
    let workspace = workspace();
    let as_user = |user: &str, args: &[&str]| {
        let home = workspace.join("../home");
        let output = Command::new(env!("CARGO_BIN_EXE_agentc"))
            .args(args)
            .current_dir(repo_root())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("USER", user)
            .output()
            .expect("agentc runs");
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        text(&output.stdout)
    };
    let ws = workspace.to_str().expect("UTF-8 path");
    for args in [
        &[
            "render",
            "fixtures/valid/claude-minimal.toml",
            "--backend",
            "k8s",
            "--format",
            "yaml",
            "--workspace",
            ws,
            "--workspace-claim",
            "src",
        ][..],
        &[
            "explain",
            "fixtures/valid/claude-minimal.toml",
            "--backend",
            "k8s",
            "--workspace",
            ws,
            "--workspace-claim",
            "src",
        ][..],
        &[
            "render",
            "fixtures/valid/codex-decant.toml",
            "--kind",
            "decant",
            "--backend",
            "k8s",
            "--format",
            "yaml",
        ][..],
    ] {
        let alice = as_user("alice-k8s", args);
        let bob = as_user("bob-k8s", args);
        assert_eq!(alice, bob, "{args:?}");
        assert!(!alice.contains("alice-k8s"), "{args:?}: {alice}");
    }
    let yaml = as_user(
        "alice-k8s",
        &[
            "render",
            "fixtures/valid/claude-minimal.toml",
            "--backend",
            "k8s",
            "--format",
            "yaml",
            "--workspace",
            ws,
            "--workspace-claim",
            "src",
        ],
    );
    assert!(
        yaml.contains("claimName: claude-code-home-claude-minimal\n"),
        "{yaml}"
    );
    // The Docker launch keeps its user-scoped home volume.
    let docker = as_user(
        "alice-k8s",
        &[
            "render",
            "fixtures/valid/claude-minimal.toml",
            "--backend",
            "cli",
            "--format",
            "shell",
            "--workspace",
            ws,
        ],
    );
    assert!(docker.contains("claude-code-home-alice-k8s-"), "{docker}");
}
