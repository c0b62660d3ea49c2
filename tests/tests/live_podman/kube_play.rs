//! Proof that the Kubernetes renderings run: every valid fixture's Pod and Sandbox rendering
//! played by `podman kube play` through `agentc verify --backend k8s` (the binary, as a user
//! runs it), the hardening read back from the kernel; a rendering changed behind verify's back
//! fails exactly its rows; nothing of the plays is left.

use std::path::Path;
use std::process::Command;

use agentc_conformance::engines::{podman, require_podman};
use agentc_conformance::fixtures::{self, fixture_files, load_fixture};
use agentc_conformance::image::ensure_test_image;
use agentc_conformance::live::docker;
use serde_json::Value;

/// The two tests run one at a time: each checks that the plays of this process left nothing.
static PLAYS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The test image with a non-root `USER`, as an agent image has: a Pod renders
/// `runAsNonRoot`, which the kubelet enforces against the image's user.
fn non_root_image() -> Result<String, String> {
    let base = ensure_test_image()?;
    let tag = format!(
        "agentc-test/busybox-nonroot:{}",
        base.rsplit(':').next().unwrap_or("latest")
    );
    if docker(&["image", "inspect", "--format", "{{.Id}}", &tag]).is_ok() {
        return Ok(tag);
    }
    let dir = tempfile::tempdir().map_err(|error| error.to_string())?;
    std::fs::write(
        dir.path().join("Dockerfile"),
        format!("FROM {base}\nUSER 1000:1000\n"),
    )
    .map_err(|error| error.to_string())?;
    docker(&["build", "-q", "-t", &tag, &dir.path().to_string_lossy()])?;
    Ok(tag)
}

/// What the plays of this process left: pods, containers, volumes, networks and secrets
/// named `agentc-verify-PID-…`, and the workspace claim's volume.
fn leftovers(claim: &str) -> Vec<String> {
    let prefix = format!("agentc-verify-{}-", std::process::id());
    let mut left = Vec::new();
    for (what, args) in [
        ("pod", vec!["pod", "ps", "--format", "{{.Name}}"]),
        ("container", vec!["ps", "-a", "--format", "{{.Names}}"]),
        ("volume", vec!["volume", "ls", "--format", "{{.Name}}"]),
        ("network", vec!["network", "ls", "--format", "{{.Name}}"]),
        ("secret", vec!["secret", "ls", "--format", "{{.Name}}"]),
    ] {
        let listed = podman(&args).unwrap_or_default();
        left.extend(
            listed
                .lines()
                .filter(|name| name.starts_with(&prefix) || *name == claim)
                .map(|name| format!("{what} {name}")),
        );
    }
    left
}

/// `agentc verify FILE --backend k8s ARGS --format json` in `workspace`.
fn verify_k8s(file: &Path, workspace: &Path, args: &[&str]) -> (i32, Option<Value>, String) {
    let output = Command::new(agentc_conformance::binary::agentc_binary())
        .arg("verify")
        .arg(file)
        .args(["--backend", "k8s", "--format", "json"])
        .args(args)
        .current_dir(workspace)
        .output()
        .expect("agentc runs");
    (
        output.status.code().unwrap_or(-1),
        serde_json::from_slice(&output.stdout).ok(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn live_every_pod_and_sandbox_rendering_plays_and_its_hardening_holds() {
    let test = "live_every_pod_and_sandbox_rendering_plays_and_its_hardening_holds";
    if !require_podman(test) {
        return;
    }
    let _one = PLAYS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let image = non_root_image().expect("the non-root test image");
    let workspace = tempfile::tempdir().expect("workspace");
    let claim = format!("agentc-verify-{}-workspace", std::process::id());
    let mut played = 0;
    let mut not_rendered = Vec::new();
    let mut failures = Vec::new();
    let mut skipped_rows = std::collections::BTreeMap::<String, usize>::new();
    for file in fixture_files("valid") {
        let name = fixtures::display_name(&file);
        for kind in ["pod", "sandbox"] {
            let (code, report, stderr) = verify_k8s(
                &file,
                workspace.path(),
                &[
                    "--image",
                    &image,
                    "--workspace-claim",
                    &claim,
                    "--k8s-kind",
                    kind,
                ],
            );
            match (code, report) {
                (0, Some(report)) => {
                    played += 1;
                    let checks = report["checks"].as_array().cloned().unwrap_or_default();
                    assert!(report["fail"] == 0, "{name} {kind}: {report:#}");
                    for check in &checks {
                        if check["status"] == "skip" {
                            let label = check["check"].as_str().unwrap_or_default();
                            let seen = check["seen"].as_str().unwrap_or_default();
                            assert!(!seen.is_empty(), "{name} {kind}: a skip says why: {check}");
                            let group = label.split(':').next().unwrap_or(label).to_string();
                            *skipped_rows.entry(group).or_default() += 1;
                        }
                    }
                    let row = |label: &str| {
                        checks
                            .iter()
                            .find(|check| check["check"] == label)
                            .map(|check| check["status"].as_str().unwrap_or_default().to_string())
                    };
                    assert_eq!(
                        row("readOnlyRootFilesystem").as_deref(),
                        Some("ok"),
                        "{name}"
                    );
                    assert_eq!(row("no new privileges").as_deref(), Some("ok"), "{name}");
                    assert_eq!(row("seccomp").as_deref(), Some("ok"), "{name}");
                    assert_eq!(
                        row("capability bounding set").as_deref(),
                        Some("ok"),
                        "{name}"
                    );
                    assert_eq!(row("pids limit").as_deref(), Some("skip"), "{name}");
                }
                (65, _) => not_rendered.push(format!(
                    "{name} {kind}: {}",
                    stderr.lines().next().unwrap_or_default()
                )),
                (1, None) if stderr.contains("pids_limit") => not_rendered.push(format!(
                    "{name} {kind}: the probe needs 2 processes: {}",
                    stderr.lines().next().unwrap_or_default()
                )),
                (code, report) => failures.push(format!(
                    "{name} {kind}: exit {code}: {stderr}{}",
                    report.map(|r| format!("{r:#}")).unwrap_or_default()
                )),
            }
        }
    }
    println!("played and verified {played} renderings; rows skipped by group: {skipped_rows:?}");
    println!("not rendered ({}):", not_rendered.len());
    for line in &not_rendered {
        println!("  {line}");
    }
    let left = leftovers(&claim);
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(played >= 100, "only {played} renderings played");
    for group in [
        "runAsNonRoot",
        "appArmorProfile",
        "pids limit",
        "played",
        "not played",
    ] {
        assert!(
            skipped_rows.contains_key(group),
            "no {group} skip in {skipped_rows:?}"
        );
    }
}

#[test]
fn live_a_rendering_changed_behind_verifys_back_fails_its_rows() {
    let test = "live_a_rendering_changed_behind_verifys_back_fails_its_rows";
    if !require_podman(test) {
        return;
    }
    let _one = PLAYS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let image = non_root_image().expect("the non-root test image");
    let file = fixtures::fixtures_dir().join("valid/sandbox-minimal.toml");
    let loaded = load_fixture(&file).expect("loads");
    let launch = &fixtures::launches(&loaded)[0];
    let mut spec = fixtures::resolve(&loaded, launch).expect("resolves");
    if let agentc_policy::Action::Container(container) = &mut spec.action {
        container.image = image.clone();
    }
    let options = agentc_backend_k8s::Options {
        egress: agentc_backend_k8s::EgressPolicy::from_profile(&loaded.profile),
        ..agentc_backend_k8s::Options::default()
    };
    let tampered =
        |change: &dyn Fn(&mut agentc_backend_k8s::k8s_openapi::api::core::v1::Container)| {
            let mut play = agentc::verify::kube::prepare(&spec, &options).expect("prepares");
            let pod = play
                .play
                .pods
                .iter_mut()
                .find(|pod| pod.role == agentc_backend_k8s::play::PlayedRole::Workload)
                .expect("a workload");
            let spec = pod.pod.spec.as_mut().expect("a spec");
            change(&mut spec.containers[0]);
            play.run().expect("plays")
        };
    let failed = |checks: &[agentc::verify::Check]| {
        checks
            .iter()
            .filter(|check| !check.ok)
            .map(|check| format!("{}: {}", check.what, check.seen))
            .collect::<Vec<_>>()
    };
    // As rendered: every row holds.
    let honest = tampered(&|_| {});
    assert!(failed(&honest).is_empty(), "{:?}", failed(&honest));
    // A capability added and the root made writable behind verify's back.
    let checks = tampered(&|container| {
        let context = container.security_context.as_mut().expect("a context");
        context.capabilities.as_mut().expect("capabilities").add = Some(vec!["CHOWN".into()]);
        context.read_only_root_filesystem = Some(false);
    });
    assert_eq!(
        failed(&checks),
        vec![
            "readOnlyRootFilesystem: writable".to_string(),
            "capability bounding set: CHOWN".to_string(),
        ],
        "{checks:#?}"
    );
    // Run as root behind its back: the kubelet would refuse it.
    let checks = tampered(&|container| {
        container
            .security_context
            .as_mut()
            .expect("a context")
            .run_as_user = Some(0);
    });
    let failed = failed(&checks);
    assert!(
        failed.iter().any(|row| row.starts_with("runAsNonRoot: 0:")),
        "{failed:?}"
    );
    assert!(leftovers("").is_empty(), "{:?}", leftovers(""));
}
