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

#[path = "common/agent_image.rs"]
mod agent_image;
mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use agent_image::agent_image;
use common::{describe, docker, require_daemon, test_image, text, IMAGES};

/// The pause points a launch names ([`agentc_backend_common::pause::STEPS`]).
const STEPS: [&str; 2] = ["network", "proxy"];

/// A test's outside network, home volume and profiles; all of it removed on drop.
struct Lab {
    id: String,
    out: String,
    home: String,
    dir: tempfile::TempDir,
    profiles: Vec<String>,
}

impl Lab {
    fn new(test: &str) -> Lab {
        let id = format!("agentc-t-faults-{}-{test}", std::process::id());
        let out = format!("{id}-out");
        let home = format!("{id}-home");
        docker(&["network", "create", "--internal", &out]).expect("create the outside network");
        docker(&["volume", "create", &home]).expect("create the home volume");
        Lab {
            id,
            out,
            home,
            dir: tempfile::tempdir().expect("tempdir"),
            profiles: Vec::new(),
        }
    }

    /// Writes a profile behind the egress proxy: a Claude Code run (attached) or a custom
    /// sandbox idling in the busybox test image (detached). Returns (its name, its path).
    fn profile(&mut self, name: &str, attached: bool) -> (String, String) {
        let profile = format!("{}-{name}", self.id);
        let agent = if attached {
            format!("agent = \"claude-code\"\nhome_volume = \"{}\"\n", self.home)
        } else {
            format!(
                "agent = \"custom\"\n\n[image]\nref = \"{}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n",
                test_image()
            )
        };
        let body = format!(
            "name = \"{profile}\"\n{agent}\n[egress]\nhosts = [\"allowed.test\"]\noutside_network = \"{}\"\n",
            self.out
        );
        let path = self.dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, body).expect("write the profile");
        self.profiles.push(profile.clone());
        (profile, path.to_string_lossy().into_owned())
    }

    /// Everything labelled with `profile`: containers, networks and volumes (the lab's home
    /// volume, which the profile keeps, aside).
    fn left(&self, profile: &str) -> Vec<String> {
        let filter = format!("label=io.agentc.profile={profile}");
        let list = |args: &[&str]| -> Vec<String> {
            docker(args)
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .filter(|name| !name.is_empty() && *name != self.home)
                .collect()
        };
        let mut left = list(&["ps", "-a", "--format", "{{.Names}}", "--filter", &filter]);
        left.extend(
            list(&[
                "network",
                "ls",
                "--format",
                "{{.Name}}",
                "--filter",
                &filter,
            ])
            .into_iter()
            .map(|name| format!("network {name}")),
        );
        left.extend(
            list(&["volume", "ls", "--format", "{{.Name}}", "--filter", &filter])
                .into_iter()
                .map(|name| format!("volume {name}")),
        );
        left
    }

    /// Waits up to `limit` for nothing labelled with `profile` to be left; what is left then.
    fn settled(&self, profile: &str, limit: Duration) -> Vec<String> {
        let started = Instant::now();
        loop {
            let left = self.left(profile);
            if left.is_empty() || started.elapsed() > limit {
                return left;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for profile in &self.profiles {
            let filter = format!("label=io.agentc.profile={profile}");
            let containers = docker(&["ps", "-aq", "--filter", &filter]).unwrap_or_default();
            for container in containers.split_whitespace() {
                let _ = docker(&["rm", "--force", container]);
            }
            let networks =
                docker(&["network", "ls", "-q", "--filter", &filter]).unwrap_or_default();
            for network in networks.split_whitespace() {
                let _ = docker(&["network", "rm", network]);
            }
            let volumes = docker(&["volume", "ls", "-q", "--filter", &filter]).unwrap_or_default();
            for volume in volumes.split_whitespace() {
                let _ = docker(&["volume", "rm", "--force", volume]);
            }
        }
        let _ = docker(&["network", "rm", &self.out]);
        let _ = docker(&["volume", "rm", "--force", &self.home]);
    }
}

/// `agentc ARGS` in the lab's directory, stdin closed, with `env`; its stderr written to a
/// file of the lab, so that a test can wait for a line while it runs.
struct Launch {
    child: Child,
    stderr: PathBuf,
}

impl Launch {
    fn spawn(lab: &Lab, args: &[&str], env: &[(&str, &str)], tag: &str) -> Launch {
        let stderr = lab.dir.path().join(format!("{tag}.stderr"));
        let file = std::fs::File::create(&stderr).expect("stderr file");
        let child = Command::new(env!("CARGO_BIN_EXE_agentc"))
            .args(args)
            .envs(env.iter().copied())
            .current_dir(lab.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(file)
            .spawn()
            .expect("agentc runs");
        Launch { child, stderr }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits (up to 150 s) until agentc printed `line`, or ended.
    fn wait_for(&mut self, line: &str) -> bool {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(150) {
            if self.stderr().contains(line) {
                return true;
            }
            if self.child.try_wait().ok().flatten().is_some() {
                return self.stderr().contains(line);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) on our own child's pid, which has not been reaped.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, signal);
        }
    }

    /// Waits for agentc to end: (its exit code, or 128 + the signal that ended it; stderr).
    fn end(self) -> (i32, String) {
        use std::os::unix::process::ExitStatusExt;
        let stderr = self.stderr.clone();
        let output = self.child.wait_with_output().expect("agentc ends");
        let code = output
            .status
            .code()
            .or_else(|| output.status.signal().map(|signal| 128 + signal))
            .unwrap_or(-1);
        (code, std::fs::read_to_string(stderr).unwrap_or_default())
    }
}

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

fn agentc(lab: &Lab, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentc"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(lab.dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("agentc runs")
}

/// The class of an interrupted launch's message.
fn interrupted_class(stderr: &str) -> &'static str {
    if stderr.contains("error: interrupted by SIGINT") {
        "interrupted by SIGINT"
    } else if stderr.contains("error: interrupted by SIGTERM") {
        "interrupted by SIGTERM"
    } else {
        "other"
    }
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
                    assert_eq!(exit, "4", "{backend} {row}: {logs}");
                    assert!(logs.contains("is gone; exiting"), "{backend} {row}: {logs}");
                    class.push_str(", proxy ended by itself");
                }
            }
            // The next command that talks to the engine removes the rest and says so.
            let ps = agentc(
                lab,
                &["ps"],
                &[("AGENTC_TEST_REAP_AT_ONCE", profile.as_str())],
            );
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
            let next = agentc(lab, &args, &[]);
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
            let code =
                docker(&["inspect", "--format", "{{.State.ExitCode}}", proxy]).unwrap_or_default();
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
            let next = agentc(lab, &args, &[]);
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
            let removed = agentc(lab, &["rm", "--profile", &profile], &[]);
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
    if !require_daemon("live_faults_of_an_attached_run") {
        return;
    }
    let mut lab = Lab::new("att");
    let cli = attached_rows(&mut lab, "cli");
    let api = attached_rows(&mut lab, "api");
    eprintln!("{cli:#?}");
    same_rows(&cli, &api);
}

#[test]
fn live_faults_of_a_detached_sandbox_behind_the_egress_proxy_end_alike_and_leave_nothing() {
    if !require_daemon("live_faults_of_a_detached_sandbox") {
        return;
    }
    let mut lab = Lab::new("det");
    let cli = detached_rows(&mut lab, "cli");
    let api = detached_rows(&mut lab, "api");
    eprintln!("{cli:#?}");
    same_rows(&cli, &api);
}
