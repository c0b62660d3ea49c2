//! Proof that the Kubernetes renderings run: every valid fixture's Pod and Sandbox rendering
//! played by `podman kube play` through `agentc verify --backend k8s` (the binary, as a user
//! runs it), the hardening read back from the kernel and, where an allowlist has one, the
//! egress proxy Pod played beside the workload with verify's egress checks; the allowlist
//! holds behind the played proxy, an allowlisted host answering through it; a rendering
//! changed behind verify's back fails exactly its rows; nothing of the plays is left.

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

/// A play test's start: Podman required (without it `test` is skipped, saying why), the plays
/// of this process one at a time, and the non-root test image.
fn begin(test: &str) -> Option<(std::sync::MutexGuard<'static, ()>, String)> {
    if !require_podman(test) {
        return None;
    }
    let one = PLAYS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let image = non_root_image().expect("the non-root test image");
    Some((one, image))
}

/// The Podman objects (pods, containers, volumes, networks, secrets) and network namespaces
/// whose name starts `agentc-verify-` (a play's, whichever process made it) or is one of
/// `names` (a workspace claim, a test's upstream pod).
fn play_objects(names: &[&str]) -> std::collections::BTreeSet<String> {
    let mut found = std::collections::BTreeSet::new();
    let ours = |name: &str| name.starts_with("agentc-verify-") || names.contains(&name);
    for (what, args) in [
        ("pod", vec!["pod", "ps", "--format", "{{.Name}}"]),
        ("container", vec!["ps", "-a", "--format", "{{.Names}}"]),
        ("volume", vec!["volume", "ls", "--format", "{{.Name}}"]),
        ("network", vec!["network", "ls", "--format", "{{.Name}}"]),
        ("secret", vec!["secret", "ls", "--format", "{{.Name}}"]),
    ] {
        let listed = podman(&args).unwrap_or_default();
        found.extend(
            listed
                .lines()
                .filter(|name| ours(name))
                .map(|name| format!("{what} {name}")),
        );
    }
    let namespaces = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
        .unwrap_or_default();
    found.extend(
        namespaces
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .filter(|name| ours(name))
            .map(|name| format!("network namespace {name}")),
    );
    found
}

/// What the plays since `before` ([`play_objects`]) left.
fn leftovers(before: &std::collections::BTreeSet<String>, names: &[&str]) -> Vec<String> {
    play_objects(names).difference(before).cloned().collect()
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
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "live_every_pod_and_sandbox_rendering_plays_and_its_hardening_holds";
    let Some((_one, image)) = begin(test) else {
        return;
    };
    let workspace = tempfile::tempdir().expect("workspace");
    let claim = format!("agentc-verify-{}-workspace", std::process::id());
    let before = play_objects(&[]);
    let mut played = 0;
    let mut not_rendered = Vec::new();
    let mut failures = Vec::new();
    let mut skipped_rows = std::collections::BTreeMap::<String, usize>::new();
    let mut proxied = Vec::new();
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
                    // Where the allowlist has an egress proxy, it played and every egress
                    // check held (egress.allowed warns: the play has no way out).
                    if row("egress.proxy-variables").is_some() {
                        proxied.push(format!("{name} {kind}"));
                        for check in agentc_egress::probe::CHECKS {
                            let status = row(check).unwrap_or_default();
                            let expected = match check {
                                // The play's resolver is not the cluster's.
                                "egress.dns" | "egress.unset-proxy" => status == "skip",
                                // Warned (nothing answers from the play), or skipped
                                // for an allowlist of wildcards only.
                                "egress.allowed" => status != "fail",
                                // An allowlisted range holding the play's own network.
                                "egress.ip-literal" => {
                                    status == "ok"
                                        || (status == "warn"
                                            && checks.iter().any(|c| {
                                                c["check"] == check
                                                    && c["seen"]
                                                        .as_str()
                                                        .unwrap_or_default()
                                                        .contains("allowed range")
                                            }))
                                }
                                _ => status == "ok",
                            };
                            assert!(expected, "{name} {kind}: {check} {status}: {report:#}");
                        }
                    }
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
    println!(
        "with the egress proxy played ({}): {}",
        proxied.len(),
        proxied.join(", ")
    );
    println!("not rendered ({}):", not_rendered.len());
    for line in &not_rendered {
        println!("  {line}");
    }
    let left = leftovers(&before, &[&claim]);
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(played >= 100, "only {played} renderings played");
    assert!(
        proxied.len() >= 20,
        "only {} renderings played an egress proxy",
        proxied.len()
    );
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
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "live_a_rendering_changed_behind_verifys_back_fails_its_rows";
    let Some((_one, image)) = begin(test) else {
        return;
    };
    let before = play_objects(&[]);
    let file = fixtures::fixtures_dir().join("valid/sandbox-minimal.toml");
    let loaded = load_fixture(&file).expect("loads");
    let launch = &fixtures::launches(&loaded)[0];
    let mut spec = fixtures::resolve(&loaded, launch).expect("resolves");
    if let agentc_policy::Action::Container(container) = &mut spec.action {
        container.image = image.clone();
    }
    let options = agentc_backend_k8s::Options {
        egress: agentc_backend_k8s::EgressPolicy::from_profile(&loaded),
        ..agentc_backend_k8s::Options::default()
    };
    let tampered =
        |change: &dyn Fn(&mut agentc_backend_k8s::k8s_openapi::api::core::v1::Container)| {
            let mut play = agentc_verify::kube::prepare(&spec, &options, &Default::default())
                .expect("prepares");
            let pod = play
                .play
                .pods
                .iter_mut()
                .find(|pod| pod.role == agentc_backend_k8s::play::PlayedRole::Workload)
                .expect("a workload");
            let spec = pod.pod.spec.as_mut().expect("a spec");
            change(&mut spec.containers[0]);
            super::tokio().block_on(play.run()).expect("plays")
        };
    let failed = |checks: &[agentc_verify::Check]| {
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
    let left = leftovers(&before, &[]);
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// An upstream for the played proxy, in the play's own network namespace: busybox's httpd on
/// 8080 in a pod of `name` (Podman's resolver answers that name on the play's network), played
/// after the proxy and before the workload.
fn upstream_pod(name: &str, image: &str) -> agentc_backend_k8s::play::PlayedPod {
    let pod: agentc_backend_k8s::k8s_openapi::api::core::v1::Pod =
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{
                    "name": "httpd",
                    "image": image,
                    "command": ["/bin/sh", "-c",
                        "mkdir -p /tmp/www && echo hello-from-upstream > /tmp/www/index.html \
                         && exec httpd -f -p 8080 -h /tmp/www"],
                }],
            },
        }))
        .expect("a pod");
    agentc_backend_k8s::play::PlayedPod {
        role: agentc_backend_k8s::play::PlayedRole::EgressProxy,
        name: name.to_string(),
        pod,
        companions: Vec::new(),
    }
}

#[test]
fn live_the_allowlist_holds_behind_the_played_egress_proxy() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "live_the_allowlist_holds_behind_the_played_egress_proxy";
    let Some((_one, image)) = begin(test) else {
        return;
    };
    let base = ensure_test_image().expect("the test image");
    let upstream = format!("agentc-upstream-{}", std::process::id());
    let before = play_objects(&[]);
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("allowlist.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"k8s-allowlist\"\nagent = \"custom\"\n\n[image]\nref = \"{image}\"\n\
             command = [\"sleep\", \"1\"]\n\n[egress]\nhosts = [\"{upstream}:8080\"]\n\
             allow_cidrs = [\"10.89.0.0/16\"]\n"
        ),
    )
    .expect("write the profile");
    let loaded = load_fixture(&file).expect("loads");
    let launch = &fixtures::launches(&loaded)[0];
    let spec = fixtures::resolve(&loaded, launch).expect("resolves");
    let options = agentc_backend_k8s::Options {
        egress: agentc_backend_k8s::EgressPolicy::from_profile(&loaded),
        ..agentc_backend_k8s::Options::default()
    };
    let inputs = |probe: &str| agentc_verify::kube::PlayInputs {
        egress_probe: probe.parse().expect("a probe"),
        proxy_executable: agentc_egress::image::ProxyExecutable::new(
            agentc_conformance::binary::agentc_binary(),
        ),
    };
    let played = |probe: &str,
                  change: &dyn Fn(&mut agentc_verify::kube::KubePlay)|
     -> Vec<agentc_verify::Check> {
        let mut play =
            agentc_verify::kube::prepare(&spec, &options, &inputs(probe)).expect("prepares");
        assert!(play.egress.is_some(), "the proxy plays");
        play.play.pods.insert(1, upstream_pod(&upstream, &base));
        change(&mut play);
        super::tokio().block_on(play.run()).expect("plays")
    };
    let row = |checks: &[agentc_verify::Check], what: &str| {
        checks
            .iter()
            .find(|check| check.what == what)
            .map(|check| (check.ok, check.warned, check.seen.clone()))
            .unwrap_or_else(|| panic!("no row {what}: {checks:#?}"))
    };
    let failed = |checks: &[agentc_verify::Check]| {
        checks
            .iter()
            .filter(|check| !check.ok)
            .map(|check| check.what.clone())
            .collect::<Vec<_>>()
    };

    // The allowlisted host answers through the proxy; every other way out is closed. The
    // resolver rows need a cluster's DNS (here the upstream's name resolves on the play's
    // network, as a cluster DNS resolves public names: the rendering's egress-dns note).
    let checks = played(&format!("{upstream}:8080"), &|_| {});
    assert!(failed(&checks).is_empty(), "{checks:#?}");
    for check in agentc_egress::probe::CHECKS {
        let skipped = checks.iter().any(|c| c.what == check && c.skipped);
        let (ok, warned, seen) = row(&checks, check);
        assert!(ok && !warned, "{check}: {seen}");
        assert_eq!(
            skipped,
            check == "egress.dns" || check == "egress.unset-proxy",
            "{check}: {seen}"
        );
        if skipped {
            assert!(seen.starts_with("needs a cluster: "), "{seen}");
        }
    }
    let (_, _, seen) = row(&checks, "egress.allowed");
    assert!(seen.contains("200 from upstream"), "{seen}");
    let (_, _, seen) = row(&checks, "egress.proxy-variables");
    assert!(
        seen.contains("-egress:3128"),
        "named by the Service: {seen}"
    );

    // A host on no allowlist, asked for as the allowed one: refused by the proxy, and only
    // that row fails.
    let checks = played("forbidden.test:80", &|_| {});
    assert_eq!(failed(&checks), vec!["egress.allowed".to_string()]);
    let (_, _, seen) = row(&checks, "egress.allowed");
    assert!(seen.contains("403 host-not-allowed"), "{seen}");

    // The proxy's allowlist widened behind verify's back: egress.denied fails, alone.
    let checks = played(&format!("{upstream}:8080"), &|play| {
        let proxy = play
            .play
            .pods
            .iter_mut()
            .find(|pod| pod.name.ends_with("-egress"))
            .expect("the proxy pod");
        let serve = &mut proxy.pod.spec.as_mut().expect("a spec").containers[0];
        serve
            .command
            .as_mut()
            .expect("a command")
            .push(format!("--allow={}", agentc_egress::probe::DENIED_HOST));
    });
    assert_eq!(failed(&checks), vec!["egress.denied".to_string()]);

    let left = leftovers(&before, &[&upstream]);
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The objects of `play_objects` a process `pid` named (`agentc-verify-PID-…`).
fn named_by(pid: u32) -> Vec<String> {
    let prefix = format!("agentc-verify-{pid}-");
    play_objects(&[])
        .into_iter()
        .filter(|object| object.contains(&prefix))
        .collect()
}

#[test]
fn live_what_a_killed_play_left_is_removed_by_the_next() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "live_what_a_killed_play_left_is_removed_by_the_next";
    let Some((_one, image)) = begin(test) else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("killed.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"k8s-killed\"\nagent = \"custom\"\n\n[image]\nref = \"{image}\"\n\
             command = [\"sleep\", \"1\"]\n\n[egress]\nhosts = [\"allowed.test:80\"]\n"
        ),
    )
    .expect("write the profile");
    // SIGKILL once its proxy pod exists: the play is in its namespace, on its network.
    let mut child = Command::new(agentc_conformance::binary::agentc_binary())
        .arg("verify")
        .arg(&file)
        .args(["--backend", "k8s"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("agentc verify");
    let pid = child.id();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !named_by(pid)
        .iter()
        .any(|object| object.starts_with("pod "))
    {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "verify ended before its pod was seen"
        );
        assert!(std::time::Instant::now() < deadline, "no pod within 120 s");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let left = named_by(pid);
    assert!(
        left.iter()
            .any(|object| object.starts_with("network namespace ")),
        "the killed play left its namespace: {left:?}"
    );
    // The next play, of any profile, removes it all before its own.
    let minimal = fixtures::fixtures_dir().join("valid/sandbox-minimal.toml");
    let (code, report, stderr) = verify_k8s(&minimal, dir.path(), &["--image", &image]);
    assert_eq!(code, 0, "{stderr}{report:?}");
    let left = named_by(pid);
    assert!(left.is_empty(), "still left of the killed play: {left:?}");
}
