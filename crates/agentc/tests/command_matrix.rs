//! The behaviour matrix of issue 20, live, through both backends: every command (run attached
//! to its exit, run detached, `run --count`, seed, verify, exec, cp both ways, port, logs,
//! stop, start, rm) × faults (none; the image missing; the name in use; a failed start; the
//! egress proxy failing its health check or dying before it; the daemon gone; SIGINT and
//! SIGTERM of the long-running `exec` and `logs --follow`). Each row records the exit status,
//! the class of agentc's message ([`class`]: its first `error:` line, sorted by meaning, not
//! docker's or the daemon's own wording) and what is left labelled with the row's profile
//! (names with the profile written `P`), and the rows of the two backends must be equal, and
//! equal to what the row expects. The table is printed. The signals of `run` at each
//! orchestration step are `faults.rs`'s rows.
//!
//! Sandboxes behind the egress proxy have their own `--internal` outside network, so nothing
//! leaves the machine; the daemon-gone rows point `DOCKER_HOST` at a socket path in a
//! temporary directory that does not exist. The proxy-failure rows make the launch use a
//! proxy image of the test's own (a shell script in the busybox test image) through the tag
//! cache under `XDG_CACHE_HOME` ([`agentc_egress::image::cached_proxy_tag`]).
//!
//! Everything is named `agentc-t-matrix-PID-...` and removed by the lab's guard, also when a
//! test fails. Needs the daemon: skips with a printed reason without one, fails instead when
//! `AGENTC_REQUIRE_DOCKER=1`.

#[path = "common/agent_image.rs"]
mod agent_image;
mod common;
#[path = "common/lab.rs"]
mod lab;

use std::time::Duration;

use agent_image::agent_image;
use common::{docker, require_daemon, test_image, IMAGES};
use lab::{interrupted_class, Lab, Launch};

const BACKENDS: [&str; 2] = ["cli", "api"];

/// A row's outcome: (exit status, class of message, what is left).
type Outcome = (i32, String, Vec<String>);

/// One row as observed through one backend.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    name: String,
    outcome: Outcome,
}

/// The class of agentc's message: its first `error:` line sorted by meaning, `none` without
/// one (a command's own exit status, a follow ended by a signal), `other: LINE` for a message
/// no class names (so that a difference shows).
fn class(stderr: &str) -> String {
    let interrupted = interrupted_class(stderr);
    if interrupted != "other" {
        return interrupted.to_string();
    }
    let Some(line) = stderr.lines().find(|line| line.starts_with("error: ")) else {
        return "none".to_string();
    };
    let lower = line.to_ascii_lowercase();
    let classes: [(&str, &[&str]); 12] = [
        ("daemon unreachable", &["error: cannot connect to the docker daemon"]),
        ("image missing", &["is not present on the docker daemon"]),
        ("name in use", &["is already in use"]),
        (
            "isolated network in use",
            &["error: cannot create the isolated network"],
        ),
        ("copies failed", &["copies failed to launch"]),
        (
            "start refused",
            &["error: docker daemon refused to start the container"],
        ),
        ("proxy failed", &["egress proxy"]),
        ("no such container", &["error: no such container"]),
        ("not running", &["is not running"]),
        ("no such path", &["does not exist in"]),
        ("seed helper failed", &["the seed helper failed"]),
        ("verify failed", &["verify"]),
    ];
    for (name, signs) in classes {
        if signs.iter().any(|sign| lower.contains(sign)) {
            return name.to_string();
        }
    }
    format!("other: {line}")
}

/// A backend's lab of profiles, each run under `--name` = the profile's name, so that what is
/// left is written with the profile as `P`.
struct Matrix<'a> {
    lab: &'a Lab,
    backend: &'a str,
    rows: Vec<Row>,
}

impl Matrix<'_> {
    /// Runs `agentc ARGS` (`{b}` replaced by the backend) with `env`, records the row named
    /// `name` with what is then left of `profile`.
    fn row(&mut self, name: &str, profile: &str, args: &[&str], env: &[(&str, &str)]) -> Outcome {
        let args: Vec<String> = args.iter().map(|arg| arg.replace("{b}", self.backend)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = self.lab.agentc(&args, env);
        let code = output.status.code().unwrap_or(-1);
        let stderr = common::text(&output.stderr);
        self.record(name, profile, code, &stderr)
    }

    /// Spawns `agentc ARGS`, waits for `ready` on its stderr (or a second when empty), sends
    /// `signal`, and records the row.
    fn signalled(
        &mut self,
        name: &str,
        profile: &str,
        args: &[&str],
        ready: &str,
        signal: libc::c_int,
    ) -> Outcome {
        let args: Vec<String> = args.iter().map(|arg| arg.replace("{b}", self.backend)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let tag = format!("{}-{}", self.backend, name.replace([' ', '/'], "-"));
        let mut launch = Launch::spawn(self.lab, &args, &[], &tag);
        if ready.is_empty() {
            std::thread::sleep(Duration::from_secs(1));
        } else {
            assert!(
                launch.wait_for(ready),
                "{} {name}: never ready: {}",
                self.backend,
                launch.stderr()
            );
        }
        launch.signal(signal);
        let (code, stderr) = launch.end();
        self.record(name, profile, code, &stderr)
    }

    fn record(&mut self, name: &str, profile: &str, code: i32, stderr: &str) -> Outcome {
        let left = self
            .lab
            .left(profile)
            .into_iter()
            .map(|item| item.replace(profile, "P"))
            .collect();
        let outcome = (code, class(stderr), left);
        if std::env::var_os("AGENTC_MATRIX_STDERR").is_some() {
            eprintln!("--- {} {name}: {outcome:?}\n{stderr}", self.backend);
        }
        self.rows.push(Row {
            name: name.to_string(),
            outcome: outcome.clone(),
        });
        outcome
    }
}

/// What a row expects: (exit status, class, what is left).
fn expect(code: i32, class: &str, left: &[&str]) -> Outcome {
    (
        code,
        class.to_string(),
        left.iter().map(|item| item.to_string()).collect(),
    )
}

/// Checks the rows of both backends against each other and against `expected` (by row
/// name), printing the table; panics naming every difference.
fn check(title: &str, cli: &[Row], api: &[Row], expected: &[(&str, Outcome)]) {
    let mut table = format!("{title}\n{:<44} {:<40} {:<40}\n", "row", "cli", "api");
    let mut problems = Vec::new();
    for (index, row) in cli.iter().enumerate() {
        let other = api.get(index);
        let show = |outcome: &Outcome| format!("{} {} {:?}", outcome.0, outcome.1, outcome.2);
        table.push_str(&format!(
            "{:<44} {:<40} {}\n",
            row.name,
            show(&row.outcome),
            other.map(|o| show(&o.outcome)).unwrap_or_default()
        ));
        match other {
            Some(other) if other.name == row.name && other.outcome == row.outcome => {}
            _ => problems.push(format!("the backends disagree on {}", row.name)),
        }
        if let Some((_, want)) = expected.iter().find(|(name, _)| *name == row.name) {
            if *want != row.outcome {
                problems.push(format!("{}: expected {want:?}", row.name));
            }
        }
    }
    if cli.len() != api.len() {
        problems.push(format!("{} cli rows, {} api rows", cli.len(), api.len()));
    }
    eprintln!("{table}");
    assert!(problems.is_empty(), "{}\n{table}", problems.join("\n"));
}

/// The profile of a custom sandbox idling in the busybox test image, behind the egress proxy
/// (on the lab's outside network) or with egress denied.
fn sandbox_body(lab: &Lab, proxied: bool, command: &str) -> String {
    let egress = if proxied {
        format!(
            "[egress]\nhosts = [\"allowed.test\"]\noutside_network = \"{}\"\n",
            lab.out
        )
    } else {
        "[egress]\nmode = \"deny\"\n".to_string()
    };
    format!(
        "agent = \"custom\"\n\n[image]\nref = \"{}\"\ncommand = {command}\n\n{egress}",
        test_image()
    )
}

const IDLE: &str = "[\"tail\", \"-f\", \"/dev/null\"]";

/// The rows of a detached sandbox's life through `backend`: run, a second run of the name,
/// exec, cp both ways, port, logs, the signals of exec and logs --follow, stop, exec while
/// stopped, start, rm, then the session commands on the name that is gone; and the launch
/// faults (image missing, failed start). `left` is what a running sandbox leaves.
fn sandbox_rows(lab: &mut Lab, backend: &str, proxied: bool, left: &[&str]) -> (Vec<Row>, Vec<(&'static str, Outcome)>) {
    let kind = if proxied { "egress" } else { "plain" };
    let (profile, path) = lab.write_profile(
        &format!("{kind}-{backend}"),
        &sandbox_body(lab, proxied, IDLE),
    );
    let (bad, bad_path) = lab.write_profile(
        &format!("{kind}-bad-{backend}"),
        &sandbox_body(lab, proxied, "[\"/nonexistent\"]"),
    );
    let file = lab.dir.path().join(format!("in-{backend}.txt"));
    std::fs::write(&file, format!("copied through {backend}\n")).unwrap();
    let file = file.to_string_lossy().into_owned();
    let out = lab.dir.path().join(format!("out-{backend}.txt"));
    let out = out.to_string_lossy().into_owned();
    let into = format!("{profile}:/tmp/in.txt");
    let name = profile.as_str();
    let lab = &*lab;
    let mut m = Matrix {
        lab,
        backend,
        rows: Vec::new(),
    };
    let run = ["run", &path, "--backend", "{b}", "--name", name, "--no-warnings"];
    m.row("run detached", name, &run, &[]);
    m.row("run detached: name in use", name, &run, &[]);
    m.row("exec: exit 7", name, &["exec", "--backend", "{b}", name, "sh", "-c", "exit 7"], &[]);
    m.row("exec: no such program", name, &["exec", "--backend", "{b}", name, "/nonexistent"], &[]);
    m.row("cp in", name, &["cp", "--backend", "{b}", &file, &into], &[]);
    m.row("cp out", name, &["cp", "--backend", "{b}", &into, &out], &[]);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap_or_default(),
        format!("copied through {backend}\n"),
        "{backend} {kind}: cp in and out"
    );
    m.row("cp out: no such path", name, &["cp", "--backend", "{b}", &format!("{name}:/nonexistent"), &out], &[]);
    m.row("port", name, &["port", "--backend", "{b}", name], &[]);
    m.row("logs", name, &["logs", "--backend", "{b}", name], &[]);
    let exec_sleep = ["exec", "--backend", "{b}", name, "sh", "-c", "echo started >&2; sleep 30"];
    m.signalled("exec sleep: SIGINT", name, &exec_sleep, "started", libc::SIGINT);
    m.signalled("exec sleep: SIGTERM", name, &exec_sleep, "started", libc::SIGTERM);
    let follow = ["logs", "--backend", "{b}", "--follow", name];
    m.signalled("logs --follow: SIGINT", name, &follow, "", libc::SIGINT);
    m.signalled("logs --follow: SIGTERM", name, &follow, "", libc::SIGTERM);
    m.row("stop", name, &["stop", "--backend", "{b}", "--time", "1", name], &[]);
    m.row("exec: stopped", name, &["exec", "--backend", "{b}", name, "true"], &[]);
    m.row("start", name, &["start", "--backend", "{b}", name], &[]);
    m.row("rm", name, &["rm", name], &[]);
    for command in ["exec", "logs", "port", "stop", "start"] {
        let mut args = vec![command, "--backend", "{b}", name];
        if command == "exec" {
            args.push("true");
        }
        m.row(&format!("{command}: gone"), name, &args, &[]);
    }
    m.row("cp in: gone", name, &["cp", "--backend", "{b}", &file, &into], &[]);
    m.row("rm: gone", name, &["rm", name], &[]);
    m.row(
        "run detached: image missing",
        name,
        &["run", &path, "--backend", "{b}", "--name", name, "--no-warnings", "--image", "agentc-test/matrix-missing:none"],
        &[],
    );
    m.row(
        "run detached: failed start",
        &bad,
        &["run", &bad_path, "--backend", "{b}", "--name", &bad, "--no-warnings"],
        &[],
    );
    let rows = m.rows;
    let expected = vec![
        ("run detached", expect(0, "none", left)),
        ("run detached: name in use", expect(125, if proxied { "isolated network in use" } else { "name in use" }, left)),
        ("exec: exit 7", expect(7, "none", left)),
        ("exec: no such program", expect(126, "none", left)),
        ("cp in", expect(0, "none", left)),
        ("cp out", expect(0, "none", left)),
        ("cp out: no such path", expect(1, "no such path", left)),
        ("port", expect(0, "none", left)),
        ("logs", expect(0, "none", left)),
        ("exec sleep: SIGINT", expect(130, "interrupted by SIGINT", left)),
        ("exec sleep: SIGTERM", expect(143, "interrupted by SIGTERM", left)),
        ("logs --follow: SIGINT", expect(130, "none", left)),
        ("logs --follow: SIGTERM", expect(143, "none", left)),
        ("stop", expect(0, "none", left)),
        ("exec: stopped", expect(125, "not running", left)),
        ("start", expect(0, "none", left)),
        ("rm", expect(0, "none", &[])),
        ("exec: gone", expect(1, "no such container", &[])),
        ("logs: gone", expect(1, "no such container", &[])),
        ("port: gone", expect(1, "no such container", &[])),
        ("stop: gone", expect(1, "no such container", &[])),
        ("start: gone", expect(1, "no such container", &[])),
        ("cp in: gone", expect(1, "no such container", &[])),
        ("rm: gone", expect(1, "no such container", &[])),
        ("run detached: image missing", expect(125, "image missing", &[])),
        ("run detached: failed start", expect(125, "start refused", &[])),
    ];
    (rows, expected)
}

#[test]
fn live_commands_on_a_plain_sandbox_behave_alike_through_both_backends() {
    if !require_daemon("live_commands_on_a_plain_sandbox") {
        return;
    }
    let mut lab = Lab::new("matrix", "plain");
    let (cli, expected) = sandbox_rows(&mut lab, "cli", false, &["P"]);
    let (api, _) = sandbox_rows(&mut lab, "api", false, &["P"]);
    check("a plain sandbox", &cli, &api, &expected);
}

#[test]
fn live_commands_on_a_sandbox_behind_the_egress_proxy_behave_alike_through_both_backends() {
    if !require_daemon("live_commands_on_a_sandbox_behind_the_egress_proxy") {
        return;
    }
    let mut lab = Lab::new("matrix", "egress");
    let left = ["P", "P-egress-proxy", "network P-egress"];
    let (cli, expected) = sandbox_rows(&mut lab, "cli", true, &left);
    let (api, _) = sandbox_rows(&mut lab, "api", true, &left);
    check("a sandbox behind the egress proxy", &cli, &api, &expected);
}
