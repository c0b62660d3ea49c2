//! The fault matrix, live, through both backends: `agentc run` attached to its end and
//! detached, each behind the egress proxy (an allowlist), × SIGINT, SIGTERM and SIGKILL of
//! agentc at each orchestration step: the isolated network created
//! (`AGENTC_TEST_PAUSE_AT=network`), the proxy healthy before the workload
//! (`AGENTC_TEST_PAUSE_AT=proxy`), and, attached, the workload running. Every row asserts the
//! exit status, the class of message and what is left (containers, networks and volumes
//! labelled with the profile), and the rows of both backends must agree:
//! - SIGINT and SIGTERM: exit 130 and 143, `interrupted by SIGINT` / `SIGTERM`, nothing left.
//! - SIGKILL: the proxy of an attached run whose workload ended exits by itself (status 4); the
//!   next agentc command removes what is left and says so (`removed the egress companion of`);
//!   a detached sandbox's next `run` of the same name succeeds; nothing is left after it.
//!
//! Each lab makes its own outside network (`--internal`, so nothing leaves the machine);
//! nothing is sent anywhere. Everything is named `agentc-t-faults-PID-...` and removed by the
//! lab's guard, also when a test fails.
//!
//! Needs the daemon: skips with a printed reason without one, fails instead when
//! `AGENTC_REQUIRE_DOCKER=1`.

use crate::common;
use crate::common::agent_image;
use crate::common::lab;

use std::process::Command;
use std::time::{Duration, Instant};

use agent_image::agent_image;
use common::{describe, docker, require_daemon, text};
use lab::{interrupted_class, Lab, Launch};

/// The pause points a launch names ([`agentc_engine::pause::STEPS`]).
const STEPS: [&str; 2] = ["network", "proxy"];

/// Waits (up to 150 s) for the profile's workload (`io.agentc.kind=run`) to run.
fn wait_running(profile: &str) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(150) {
        let running = docker(&[
            "ps",
            "--filter",
            &format!("label=io.agentc.profile={profile}"),
            "--filter",
            "label=io.agentc.kind=run",
            "--format",
            "{{.Names}}",
        ])
        .unwrap_or_default();
        if !running.is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

/// The line agentc prints when it removed a killed launch's companion.
const REAPED: &str = "agentc: removed the egress companion of ";

/// One row's observed outcome, compared across the backends.
type Row = (String, i32, String);

/// Runs the attached rows through `backend`: SIGINT and SIGTERM at each step and while the
/// workload runs, SIGKILL at each step and while it runs.
fn attached_rows(lab: &mut Lab, backend: &str) -> Vec<Row> {
    let image = agent_image();
    let mut rows = Vec::new();
    let (profile, path) = lab.profile(&format!("att-{backend}"), true);
    let run = |script: &'static str| -> Vec<String> {
        [
            "run",
            path.as_str(),
            "--backend",
            backend,
            "--image",
            &image,
            "--no-warnings",
            "--",
            "-c",
            script,
        ]
        .iter()
        .map(|arg| arg.to_string())
        .collect()
    };
    let steps = STEPS.iter().copied().chain(["running"]);
    for step in steps {
        for (signal, name, expected) in [
            (libc::SIGINT, "SIGINT", 130),
            (libc::SIGTERM, "SIGTERM", 143),
            (libc::SIGKILL, "SIGKILL", 137),
        ] {
            let row = format!("attached {step} {name}");
            let args = run("echo ready; sleep 6");
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let env: Vec<(&str, &str)> = if step == "running" {
                Vec::new()
            } else {
                vec![("AGENTC_TEST_PAUSE_AT", step)]
            };
            let mut launch = Launch::spawn(lab, &args, &env, &row.replace(' ', "-"));
            let reached = if step == "running" {
                wait_running(&profile)
            } else {
                launch.wait_for(&format!("agentc: paused at {step}"))
            };
            assert!(
                reached,
                "{backend} {row}: never reached: {}",
                launch.stderr()
            );
            launch.signal(signal);
            let (code, stderr) = launch.end();
            assert_eq!(code, expected, "{backend} {row}: {stderr}");
            if signal != libc::SIGKILL {
                assert_eq!(
                    interrupted_class(&stderr),
                    format!("interrupted by {name}"),
                    "{backend} {row}: {stderr}"
                );
                let left = lab.settled(&profile, Duration::from_secs(15));
                assert!(left.is_empty(), "{backend} {row}: left {left:?}");
                rows.push((row, code, interrupted_class(&stderr).to_string()));
                continue;
            }
            let mut class = String::from("killed");
            if step != "network" {
                // The proxy watches its workload: gone (it ended by itself), or never there.
                if step == "running" {
                    let proxy_ended = wait_proxy_exited(&profile, Duration::from_secs(45));
                    assert!(
                        proxy_ended.is_some(),
                        "{backend} {row}: the proxy did not exit by itself: {:?}",
                        lab.left(&profile)
                    );
                    let (exit, logs) = proxy_ended.unwrap();
                    // Status 0 and never started again: its restart policy is for failures.
                    assert_eq!(exit, "0 0", "{backend} {row}: {logs}");
                    assert!(logs.contains("is gone; exiting"), "{backend} {row}: {logs}");
                    class.push_str(", proxy ended by itself");
                }
            }
            // The next command that talks to the engine removes the rest and says so.
            let ps = lab.agentc(&["ps"], &[("AGENTC_TEST_REAP_AT_ONCE", profile.as_str())]);
            assert!(ps.status.success(), "{backend} {row}: {}", describe(&ps));
            assert!(
                text(&ps.stderr).contains(REAPED),
                "{backend} {row}: {}",
                describe(&ps)
            );
            let left = lab.settled(&profile, Duration::from_secs(10));
            assert!(left.is_empty(), "{backend} {row}: left {left:?}");
            class.push_str(", reaped by the next command");
            // And the next run succeeds.
            let args = run("exit 3");
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let next = lab.agentc(&args, &[]);
            assert_eq!(
                next.status.code(),
                Some(3),
                "{backend} {row}: {}",
                describe(&next)
            );
            let left = lab.settled(&profile, Duration::from_secs(10));
            assert!(left.is_empty(), "{backend} {row}: left {left:?}");
            rows.push((row, code, class));
        }
    }
    rows
}

/// Waits for the profile's egress proxy to have exited by itself: its exit code and logs.
fn wait_proxy_exited(profile: &str, limit: Duration) -> Option<(String, String)> {
    let started = Instant::now();
    while started.elapsed() < limit {
        let exited = docker(&[
            "ps",
            "-a",
            "--filter",
            &format!("label=io.agentc.profile={profile}"),
            "--filter",
            "label=io.agentc.kind=egress-proxy",
            "--filter",
            "status=exited",
            "--format",
            "{{.Names}}",
        ])
        .unwrap_or_default();
        if let Some(proxy) = exited.lines().next() {
            let code = docker(&[
                "inspect",
                "--format",
                "{{.State.ExitCode}} {{.RestartCount}}",
                proxy,
            ])
            .unwrap_or_default();
            let logs = Command::new("docker")
                .args(["logs", proxy])
                .output()
                .map(|output| text(&output.stderr) + &text(&output.stdout))
                .unwrap_or_default();
            return Some((code, logs));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    None
}

/// Runs the detached rows through `backend`: SIGINT, SIGTERM and SIGKILL at each step; after a
/// SIGKILL the next `run` of the same name succeeds, and `rm --profile` removes the sandbox.
fn detached_rows(lab: &mut Lab, backend: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let (profile, path) = lab.profile(&format!("det-{backend}"), false);
    let args = ["run", path.as_str(), "--backend", backend, "--no-warnings"];
    for step in STEPS {
        for (signal, name, expected) in [
            (libc::SIGINT, "SIGINT", 130),
            (libc::SIGTERM, "SIGTERM", 143),
            (libc::SIGKILL, "SIGKILL", 137),
        ] {
            let row = format!("detached {step} {name}");
            let mut launch = Launch::spawn(
                lab,
                &args,
                &[("AGENTC_TEST_PAUSE_AT", step)],
                &row.replace(' ', "-"),
            );
            assert!(
                launch.wait_for(&format!("agentc: paused at {step}")),
                "{backend} {row}: never reached: {}",
                launch.stderr()
            );
            launch.signal(signal);
            let (code, stderr) = launch.end();
            assert_eq!(code, expected, "{backend} {row}: {stderr}");
            if signal != libc::SIGKILL {
                assert_eq!(
                    interrupted_class(&stderr),
                    format!("interrupted by {name}"),
                    "{backend} {row}: {stderr}"
                );
                let left = lab.settled(&profile, Duration::from_secs(15));
                assert!(left.is_empty(), "{backend} {row}: left {left:?}");
                rows.push((row, code, interrupted_class(&stderr).to_string()));
                continue;
            }
            assert!(
                !lab.left(&profile).is_empty(),
                "{backend} {row}: nothing left to reap"
            );
            // The next run of the same name removes the leftovers, says so, and succeeds.
            let next = lab.agentc(&args, &[]);
            assert!(
                next.status.success(),
                "{backend} {row}: {}",
                describe(&next)
            );
            assert!(
                text(&next.stderr).contains(REAPED),
                "{backend} {row}: {}",
                describe(&next)
            );
            // `rm --profile` (no --all) removes everything labelled with the profile.
            let removed = lab.agentc(&["rm", "--profile", &profile], &[]);
            assert!(
                removed.status.success(),
                "{backend} {row}: {}",
                describe(&removed)
            );
            let said = text(&removed.stdout);
            assert!(
                said.contains("removed network ") && said.contains("-egress-proxy\n"),
                "{backend} {row}: {said}"
            );
            let left = lab.settled(&profile, Duration::from_secs(10));
            assert!(left.is_empty(), "{backend} {row}: left {left:?}");
            rows.push((row, code, "killed, reaped by the next run".to_string()));
        }
    }
    rows
}

/// Strips the backend from the rows, for comparing them.
fn same_rows(cli: &[Row], api: &[Row]) {
    assert_eq!(cli, api, "the backends disagree");
}

#[test]
fn live_faults_of_an_attached_run_behind_the_egress_proxy_end_alike_and_leave_nothing() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_faults_of_an_attached_run") {
        return;
    }
    let mut lab = Lab::new("faults", "att");
    let cli = attached_rows(&mut lab, "cli");
    let api = attached_rows(&mut lab, "api");
    eprintln!("{cli:#?}");
    same_rows(&cli, &api);
}

#[test]
fn live_faults_of_a_detached_sandbox_behind_the_egress_proxy_end_alike_and_leave_nothing() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_faults_of_a_detached_sandbox") {
        return;
    }
    let mut lab = Lab::new("faults", "det");
    let cli = detached_rows(&mut lab, "cli");
    let api = detached_rows(&mut lab, "api");
    eprintln!("{cli:#?}");
    same_rows(&cli, &api);
}
