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
//! The same rows run on Podman (`AGENTC_ENGINE=podman`: the `podman` command, and its
//! Docker-compatible socket), where Podman supports the command: each Podman row's two
//! backends must agree, and a Podman row that differs from Docker's says why in its table
//! ([`PODMAN_LAUNCH`], ...); the rows Podman cannot run are listed with the reason.
//!
//! Sandboxes behind the egress proxy have their own `--internal` outside network, so nothing
//! leaves the machine; the daemon-gone rows point `DOCKER_HOST` (Podman: `CONTAINER_HOST`) at
//! a socket path in a temporary directory that does not exist. The proxy-failure rows make the
//! launch use a proxy image of the test's own (a shell script in the busybox test image)
//! through the tag cache under `XDG_CACHE_HOME`
//! ([`agentc_egress::image::cached_proxy_tag`]).
//!
//! Everything is named `agentc-t-matrix-PID-...` and removed by the lab's guard, also when a
//! test fails. Needs the daemon (and, for the Podman rows, Podman and its API socket,
//! `scripts/setup-engines.sh`): skips with a printed reason without one, fails instead when
//! `AGENTC_REQUIRE_DOCKER=1`.

use crate::common;
use crate::common::agent_image;
// `Lab::profile` and `Lab::settled` are faults.rs's.
use crate::common::lab;

use std::time::Duration;

use agent_image::agent_image;
use common::{docker, engine_cli, require_daemon, test_image, IMAGES};
use lab::{interrupted_class, Lab, Launch};

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
/// no class names (so that a difference shows). The signs leave out the engine's name in
/// agentc's own wording (`docker`, `podman`).
fn class(stderr: &str) -> String {
    let interrupted = interrupted_class(stderr);
    if interrupted != "other" {
        return interrupted.to_string();
    }
    let Some(line) = stderr.lines().find(|line| line.starts_with("error: ")) else {
        return "none".to_string();
    };
    let lower = line.to_ascii_lowercase();
    let classes: [(&str, &[&str]); 15] = [
        (
            "killed, reaped by the next command",
            &["error: killed, reaped by the next command"],
        ),
        ("killed, not reaped", &["error: killed, not reaped"]),
        ("daemon unreachable", &["error: cannot connect to the "]),
        ("image missing", &["is not present on the "]),
        ("name in use", &["is already in use"]),
        (
            "isolated network in use",
            &["error: cannot create the isolated network"],
        ),
        ("copies failed", &["copies failed to launch"]),
        ("start refused", &["daemon refused to start the container"]),
        (
            "egress refused on podman",
            &["egress cannot be launched on podman"],
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

/// A backend's rows on the lab's engine, each run under `--name` = the profile's name, so that
/// what is left is written with the profile as `P`.
struct Matrix<'a> {
    lab: &'a Lab,
    backend: &'a str,
    rows: Vec<Row>,
}

impl Matrix<'_> {
    /// `args` with `{b}` replaced by the backend.
    fn argv(&self, args: &[&str]) -> Vec<String> {
        args.iter()
            .map(|arg| arg.replace("{b}", self.backend))
            .collect()
    }

    /// [`Matrix::row`] without an environment of its own.
    fn run(&mut self, name: &str, profile: &str, args: &[&str]) -> Outcome {
        self.row(name, profile, args, &[])
    }

    /// Runs `agentc ARGS` (`{b}` replaced by the backend) with `env`, records the row named
    /// `name` with what is then left of `profile`.
    fn row(&mut self, name: &str, profile: &str, args: &[&str], env: &[(&str, &str)]) -> Outcome {
        let args = self.argv(args);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = self.lab.agentc(&args, env);
        let code = output.status.code().unwrap_or(-1);
        let stderr = common::text(&output.stderr);
        self.record(name, profile, code, &stderr)
    }

    /// Spawns `agentc ARGS` with `env`, waits for `ready` on its stderr (or a second when
    /// empty).
    fn spawn(&self, name: &str, args: &[&str], env: &[(&str, &str)], ready: &str) -> Launch {
        let args = self.argv(args);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let tag = format!("{}-{}", self.backend, name.replace([' ', '/'], "-"));
        let mut launch = Launch::spawn(self.lab, &args, env, &tag);
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
        launch
    }

    /// Spawns `agentc ARGS`, waits for `ready` on its stderr (or a second when empty), sends
    /// `signal`, and records the row. After SIGKILL, runs `agentc ps` as the next command
    /// ([`Matrix::killed`]).
    fn signalled(
        &mut self,
        name: &str,
        profile: &str,
        args: &[&str],
        env: &[(&str, &str)],
        ready: &str,
        signal: libc::c_int,
    ) -> Outcome {
        if signal == libc::SIGKILL {
            return self.killed(name, profile, args, env, ready, &["ps"]);
        }
        let launch = self.spawn(name, args, env, ready);
        launch.signal(signal);
        let (code, stderr) = launch.end();
        self.record(name, profile, code, &stderr)
    }

    /// Spawns `agentc ARGS`, waits for `ready`, kills it (SIGKILL), then runs `agentc NEXT
    /// --backend B` (which removes what a killed launch left, at once for `profile`), and
    /// records agentc's status, `killed, reaped by the next command` when NEXT said it removed
    /// a companion, and what is left after it.
    fn killed(
        &mut self,
        name: &str,
        profile: &str,
        args: &[&str],
        env: &[(&str, &str)],
        ready: &str,
        next: &[&str],
    ) -> Outcome {
        let launch = self.spawn(name, args, env, ready);
        launch.signal(libc::SIGKILL);
        let (code, _) = launch.end();
        let mut next = next.to_vec();
        next.extend(["--backend", self.backend]);
        let after = self
            .lab
            .agentc(&next, &[("AGENTC_TEST_REAP_AT_ONCE", profile)]);
        let reaped =
            common::text(&after.stderr).contains("agentc: removed the egress companion of ");
        let stderr = if reaped {
            "error: killed, reaped by the next command"
        } else {
            "error: killed, not reaped"
        };
        self.record(name, profile, code, stderr)
    }

    fn record(&mut self, name: &str, profile: &str, code: i32, stderr: &str) -> Outcome {
        let left = self
            .lab
            .left(profile)
            .into_iter()
            .map(|item| {
                item.replace(profile, "P")
                    .replace(&self.lab.id, "LAB")
                    .replace(&format!("-{}", self.backend), "")
            })
            .collect();
        let outcome = (code, class(stderr), left);
        if std::env::var_os("AGENTC_MATRIX_STDERR").is_some() {
            eprintln!(
                "--- {} {} {name}: {outcome:?}\n{stderr}",
                self.lab.engine, self.backend
            );
        }
        self.rows.push(Row {
            name: name.to_string(),
            outcome: outcome.clone(),
        });
        outcome
    }
}

/// What a row expects: (row name, exit status, class, what is left). [`KEPT`] as what is left
/// stands for what the row's sandbox keeps while it exists.
type Want = (&'static str, i32, &'static str, &'static [&'static str]);

/// What is left: what the row's sandbox keeps while it exists (see [`Want`]).
const KEPT: &[&str] = &["(kept)"];

/// A row whose outcome on Podman differs from Docker's: (row name, exit status, class, what
/// is left, why).
type Differs = (
    &'static str,
    i32,
    &'static str,
    &'static [&'static str],
    &'static str,
);

/// A table of expected rows, with the Podman differences written over Docker's rows.
struct Expected {
    title: String,
    rows: Vec<(&'static str, Outcome)>,
    /// Rows whose outcome differs from Docker's on this engine: why (printed with the row).
    notes: Vec<(&'static str, &'static str)>,
    /// Docker rows not run on this engine: (row, why), printed under the table.
    skipped: &'static [(&'static str, &'static str)],
}

impl Expected {
    /// `table` on `engine`, [`KEPT`] replaced by `kept`; on Podman, `podman` written over it.
    fn new(title: &str, engine: &str, table: &[Want], kept: &[&str], podman: &[Differs]) -> Self {
        let outcome = |code: i32, class: &str, left: &[&str]| -> Outcome {
            let left = if left == KEPT { kept } else { left };
            (
                code,
                class.to_string(),
                left.iter().map(|item| item.to_string()).collect(),
            )
        };
        let mut rows: Vec<(&'static str, Outcome)> = table
            .iter()
            .map(|(name, code, class, left)| (*name, outcome(*code, class, left)))
            .collect();
        let mut notes = Vec::new();
        if engine == "podman" {
            for (name, code, class, left, why) in podman {
                match rows.iter_mut().find(|(row, _)| row == name) {
                    Some(row) => row.1 = outcome(*code, class, left),
                    None => rows.push((name, outcome(*code, class, left))),
                }
                notes.push((*name, *why));
            }
        }
        Expected {
            title: format!("{title} ({engine})"),
            rows,
            notes,
            skipped: &[],
        }
    }

    /// The same, with the rows not run on this engine.
    fn skipping(self, skipped: &'static [(&'static str, &'static str)]) -> Self {
        Expected { skipped, ..self }
    }

    /// Checks the rows of both backends against each other and against the expected rows
    /// (by name), printing the table; panics naming every difference.
    fn check(&self, cli: &[Row], api: &[Row]) {
        let mut table = format!(
            "{}\n{:<44} {:<40} {:<40}\n",
            self.title, "row", "cli", "api"
        );
        let mut problems = Vec::new();
        let show = |outcome: &Outcome| format!("{} {} {:?}", outcome.0, outcome.1, outcome.2);
        let find = |list: &[(&str, &'static str)], name: &str| {
            list.iter()
                .find(|(row, _)| *row == name)
                .map(|(_, why)| *why)
        };
        for (index, row) in cli.iter().enumerate() {
            let other = api.get(index);
            let note = find(&self.notes, &row.name);
            table.push_str(&format!(
                "{:<44} {:<40} {}{}\n",
                row.name,
                show(&row.outcome),
                other.map(|o| show(&o.outcome)).unwrap_or_default(),
                note.map(|note| format!("   NOT AS ON DOCKER: {note}"))
                    .unwrap_or_default(),
            ));
            let want = self
                .rows
                .iter()
                .find(|(name, _)| *name == row.name)
                .map(|(_, want)| want);
            if want.is_none() {
                problems.push(format!("no expected row {}", row.name));
            }
            match other {
                Some(other) if other.name == row.name => {
                    if want.is_some_and(|want| *want != other.outcome) {
                        problems.push(format!("api {}: expected {want:?}", row.name));
                    }
                    if other.outcome != row.outcome {
                        problems.push(format!("the backends disagree on {}", row.name));
                    }
                }
                _ => problems.push(format!("no api row {}", row.name)),
            }
            if want.is_some_and(|want| *want != row.outcome) {
                problems.push(format!("cli {}: expected {want:?}", row.name));
            }
        }
        if cli.len() != api.len() {
            problems.push(format!("{} cli rows, {} api rows", cli.len(), api.len()));
        }
        for (row, why) in self.skipped {
            table.push_str(&format!("{row:<44} not run: {why}\n"));
        }
        eprintln!("{table}");
        assert!(problems.is_empty(), "{}\n{table}", problems.join("\n"));
    }
}

/// Podman's API socket, as `scripts/setup-engines.sh` serves it (agentc finds it there too).
const PODMAN_SOCKET: &str = "/run/podman/podman.sock";

/// True when Docker (which builds the test images) and Podman (its command and its API socket)
/// answer; otherwise a printed skip, or a panic under `AGENTC_REQUIRE_DOCKER=1` (CI installs
/// Podman with `scripts/setup-engines.sh`).
fn require_podman(test: &str) -> bool {
    if !require_daemon(test) {
        return false;
    }
    let available = engine_cli("podman", &["info", "--format", "{{.Host.OCIRuntime.Name}}"])
        .and_then(|_| {
            std::os::unix::net::UnixStream::connect(PODMAN_SOCKET)
                .map(|_| ())
                .map_err(|error| format!("its API socket {PODMAN_SOCKET} does not answer: {error}"))
        });
    match available {
        Ok(()) => true,
        Err(reason) if std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() == Ok("1") => panic!(
            "{test}: AGENTC_REQUIRE_DOCKER=1 but no Podman: {reason}\n  hint: run scripts/setup-engines.sh as root"
        ),
        Err(reason) => {
            eprintln!("skipping {test}: no Podman ({reason}); scripts/setup-engines.sh installs it");
            false
        }
    }
}

/// `tag` (built by Docker) on the lab's engine: on Podman, `docker save TAG | podman load`
/// when Podman's store lacks it (no registry is reachable).
fn on_engine(lab: &Lab, tag: String) -> String {
    if lab.engine == "podman" && lab.cli(&["image", "exists", &tag]).is_err() {
        let _lock = IMAGES
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let script = format!("docker save {tag} | podman load -q");
        let output = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .expect("sh runs");
        assert!(output.status.success(), "{}", common::describe(&output));
    }
    tag
}

/// Runs `rows` through the cli backend, then the api backend, in one lab on `engine`; prints
/// how long they took.
fn both(
    engine: &'static str,
    test: &str,
    rows: impl Fn(&mut Lab, &str) -> Vec<Row>,
) -> (Vec<Row>, Vec<Row>) {
    let started = std::time::Instant::now();
    let test = if engine == "docker" {
        test.to_string()
    } else {
        format!("{engine}-{test}")
    };
    let mut lab = Lab::on(engine, "matrix", &test);
    let cli = rows(&mut lab, "cli");
    let api = rows(&mut lab, "api");
    // Printed for the CI budget, never asserted.
    eprintln!(
        "{engine} {test}: {} rows in {:.0?}",
        cli.len() + api.len(),
        started.elapsed()
    );
    (cli, api)
}

/// A live test of `$rows` (a function of the engine) on Docker, named
/// `$docker`, and one on Podman, named `$podman`; each skips with its reason (or fails under
/// `AGENTC_REQUIRE_DOCKER=1`) where its engine does not answer.
macro_rules! on_both_engines {
    ($rows:ident: $docker:ident, $podman:ident) => {
        #[test]
        fn $docker() {
            let _turn = crate::common::turn(file!());
            if require_daemon(stringify!($docker)) {
                $rows("docker");
            }
        }

        #[test]
        fn $podman() {
            let _turn = crate::common::turn(file!());
            if require_podman(stringify!($podman)) {
                $rows("podman");
            }
        }
    };
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
        on_engine(lab, test_image())
    )
}

const IDLE: &str = "[\"tail\", \"-f\", \"/dev/null\"]";

/// The rows of [`sandbox_rows`] (a plain sandbox's; behind the proxy, a second run of the
/// name fails on the isolated network instead).
const SANDBOX: &[Want] = &[
    ("run detached", 0, "none", KEPT),
    ("run detached: name in use", 125, "name in use", KEPT),
    ("exec: exit 7", 7, "none", KEPT),
    ("exec: no such program", 126, "none", KEPT),
    ("cp in", 0, "none", KEPT),
    ("cp out", 0, "none", KEPT),
    ("cp out: no such path", 1, "no such path", KEPT),
    ("port", 0, "none", KEPT),
    ("logs", 0, "none", KEPT),
    ("exec sleep: SIGINT", 130, "interrupted by SIGINT", KEPT),
    ("exec sleep: SIGTERM", 143, "interrupted by SIGTERM", KEPT),
    ("logs --follow: SIGINT", 130, "none", KEPT),
    ("logs --follow: SIGTERM", 143, "none", KEPT),
    ("stop", 0, "none", KEPT),
    ("exec: stopped", 125, "not running", KEPT),
    ("start", 0, "none", KEPT),
    ("rm", 0, "none", &[]),
    ("exec: gone", 1, "no such container", &[]),
    ("logs: gone", 1, "no such container", &[]),
    ("port: gone", 1, "no such container", &[]),
    ("stop: gone", 1, "no such container", &[]),
    ("start: gone", 1, "no such container", &[]),
    ("cp in: gone", 1, "no such container", &[]),
    ("rm: gone", 1, "no such container", &[]),
    ("run detached: image missing", 125, "image missing", &[]),
    ("run detached: failed start", 125, "start refused", &[]),
];

/// Where a plain sandbox's rows on Podman differ from Docker's.
const PODMAN_SANDBOX: &[Differs] = &[(
    "exec: no such program",
    127,
    "none",
    KEPT,
    "Podman's exec exits 127 for a program that does not exist (Docker's: 126); agentc passes the exec's status on",
)];

/// The rows of a detached sandbox's life through `backend`: run, a second run of the name,
/// exec, cp both ways, port, logs, the signals of exec and logs --follow, stop, exec while
/// stopped, start, rm, then the session commands on the name that is gone; and the launch
/// faults (image missing, failed start).
fn sandbox_rows(lab: &mut Lab, backend: &str, proxied: bool) -> Vec<Row> {
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
    let missing = format!("{profile}:/nonexistent");
    let name = profile.as_str();
    let lab = &*lab;
    let mut m = Matrix {
        lab,
        backend,
        rows: Vec::new(),
    };
    let run = [
        "run",
        &path,
        "--backend",
        "{b}",
        "--name",
        name,
        "--no-warnings",
    ];
    m.run("run detached", name, &run);
    m.run("run detached: name in use", name, &run);
    m.run(
        "exec: exit 7",
        name,
        &["exec", "--backend", "{b}", name, "sh", "-c", "exit 7"],
    );
    m.run(
        "exec: no such program",
        name,
        &["exec", "--backend", "{b}", name, "/nonexistent"],
    );
    m.run("cp in", name, &["cp", "--backend", "{b}", &file, &into]);
    m.run("cp out", name, &["cp", "--backend", "{b}", &into, &out]);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap_or_default(),
        format!("copied through {backend}\n"),
        "{} {backend} {kind}: cp in and out",
        lab.engine
    );
    m.run(
        "cp out: no such path",
        name,
        &["cp", "--backend", "{b}", &missing, &out],
    );
    m.run("port", name, &["port", "--backend", "{b}", name]);
    m.run("logs", name, &["logs", "--backend", "{b}", name]);
    let exec_sleep = [
        "exec",
        "--backend",
        "{b}",
        name,
        "sh",
        "-c",
        "echo started >&2; sleep 30",
    ];
    let follow = ["logs", "--backend", "{b}", "--follow", name];
    for (signal, signame) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let row = format!("exec sleep: {signame}");
        m.signalled(&row, name, &exec_sleep, &[], "started", signal);
    }
    for (signal, signame) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let row = format!("logs --follow: {signame}");
        m.signalled(&row, name, &follow, &[], "", signal);
    }
    m.run(
        "stop",
        name,
        &["stop", "--backend", "{b}", "--time", "1", name],
    );
    m.run(
        "exec: stopped",
        name,
        &["exec", "--backend", "{b}", name, "true"],
    );
    m.run("start", name, &["start", "--backend", "{b}", name]);
    m.run("rm", name, &["rm", "--backend", "{b}", name]);
    for command in ["exec", "logs", "port", "stop", "start"] {
        let mut args = vec![command, "--backend", "{b}", name];
        if command == "exec" {
            args.push("true");
        }
        m.run(&format!("{command}: gone"), name, &args);
    }
    m.run(
        "cp in: gone",
        name,
        &["cp", "--backend", "{b}", &file, &into],
    );
    m.run("rm: gone", name, &["rm", "--backend", "{b}", name]);
    let mut missing = run.to_vec();
    missing.extend(["--image", "agentc-test/matrix-missing:none"]);
    m.run("run detached: image missing", name, &missing);
    m.run(
        "run detached: failed start",
        &bad,
        &[
            "run",
            &bad_path,
            "--backend",
            "{b}",
            "--name",
            &bad,
            "--no-warnings",
        ],
    );
    m.rows
}

/// The plain sandbox's rows on `engine`.
fn plain_sandbox(engine: &'static str) {
    let (cli, api) = both(engine, "plain", |lab, backend| {
        sandbox_rows(lab, backend, false)
    });
    Expected::new("a plain sandbox", engine, SANDBOX, &["P"], PODMAN_SANDBOX).check(&cli, &api);
}

on_both_engines!(
    plain_sandbox:
    live_commands_on_a_plain_sandbox_behave_alike_through_both_backends,
    live_podman_commands_on_a_plain_sandbox_behave_alike_through_both_backends
);

#[test]
fn live_commands_on_a_sandbox_behind_the_egress_proxy_behave_alike_through_both_backends() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_commands_on_a_sandbox_behind_the_egress_proxy") {
        return;
    }
    let (cli, api) = both("docker", "egress", |lab, backend| {
        sandbox_rows(lab, backend, true)
    });
    let left = [
        "P",
        "P-egress-proxy",
        "network P-egress",
        "volume P-egress-audit",
    ];
    let mut expected = Expected::new(
        "a sandbox behind the egress proxy",
        "docker",
        SANDBOX,
        &left,
        &[],
    );
    expected.rows[1].1 .1 = "isolated network in use".to_string();
    expected.check(&cli, &api);
}

/// A Claude Code profile (its `claude` runs `/bin/sh "$@"` in the agent image): behind the
/// egress proxy or with egress denied, with the lab's home volume and, optionally, a seed.
fn agent_body(lab: &Lab, proxied: bool, seed: bool) -> String {
    let mut body = format!("agent = \"claude-code\"\nhome_volume = \"{}\"\n", lab.home);
    if proxied {
        body.push_str(&format!(
            "\n[egress]\nhosts = [\"allowed.test\"]\noutside_network = \"{}\"\n",
            lab.out
        ));
    } else {
        body.push_str("\n[egress]\nmode = \"deny\"\n");
    }
    if seed {
        body.push_str(
            "\n[[mounts]]\ntype = \"seed\"\nsource = \"seed.txt\"\ntarget = \"/home/claude/seed.txt\"\n",
        );
    }
    body
}

/// The rows of [`launch_rows`].
const LAUNCH: &[Want] = &[
    ("run attached: exit 3", 3, "none", &[]),
    ("run attached (egress denied): exit 0", 0, "none", &[]),
    // A preset runs under an init, which starts and then fails to run the agent's program:
    // the init's exit status (docker's tini: 127), nothing left.
    ("run attached: failed start", 127, "none", &[]),
    ("run attached: image missing", 125, "image missing", &[]),
    (
        "run detached (another profile)",
        0,
        "none",
        &["LAB-agent-plain"],
    ),
    ("run attached: name in use", 125, "name in use", &[]),
    ("rm (another profile)", 0, "none", &[]),
    ("run --count 2", 0, "none", &["P-1", "P-2"]),
    (
        "run --count 2: names in use",
        125,
        "copies failed",
        &["P-1", "P-2"],
    ),
    ("rm --profile", 0, "none", &[]),
    ("run --count 2: image missing", 125, "copies failed", &[]),
    (
        "run --count 2 behind the proxy",
        0,
        "none",
        &[
            "P-1",
            "P-1-egress-proxy",
            "P-2",
            "P-2-egress-proxy",
            "network P-1-egress",
            "network P-2-egress",
            "volume P-1-egress-audit",
            "volume P-2-egress-audit",
        ],
    ),
    ("rm --profile (behind the proxy)", 0, "none", &[]),
    ("seed: the helper fails", 1, "seed helper failed", &[]),
    ("seed: image missing", 125, "image missing", &[]),
    ("verify", 0, "none", &[]),
    ("verify behind the proxy", 0, "none", &[]),
    ("verify: image missing", 125, "image missing", &[]),
];

/// Why a launch behind the egress proxy is refused on Podman.
const NO_PROXY: &str = "refused before anything exists: the proxy's isolated network needs Docker's bridge option inhibit_ipv4 (podman.rs DIFFERENCES, `egress`)";

/// Where the launch rows on Podman differ from Docker's.
const PODMAN_LAUNCH: &[Differs] = &[
    (
        "run attached: failed start",
        1,
        "none",
        &[],
        "Podman's init (catatonit) exits 1 when it cannot run the agent's program (Docker's tini: 127)",
    ),
    (
        "run --count 2 behind the proxy",
        65,
        "copies failed",
        &[],
        NO_PROXY,
    ),
    (
        "verify behind the proxy",
        65,
        "egress refused on podman",
        &[],
        NO_PROXY,
    ),
];

/// The rows of `run` attached to its end, `run --count`, `seed` and `verify` through
/// `backend`, with their faults. On Podman the attached rows run with egress denied (behind
/// the proxy they are refused: [`NO_PROXY`]).
fn launch_rows(lab: &mut Lab, backend: &str) -> Vec<Row> {
    let image = on_engine(lab, agent_image());
    let base = on_engine(lab, test_image());
    let proxy = lab.engine == "docker";
    let (agent, agent_path) =
        lab.write_profile(&format!("agent-{backend}"), &agent_body(lab, proxy, false));
    let (plain, plain_path) = lab.write_profile(
        &format!("agent-plain-{backend}"),
        &agent_body(lab, false, false),
    );
    let (seeded, seeded_path) =
        lab.write_profile(&format!("seeded-{backend}"), &agent_body(lab, false, true));
    let (fleet, fleet_path) =
        lab.write_profile(&format!("fleet-{backend}"), &sandbox_body(lab, false, IDLE));
    let (proxied, proxied_path) = lab.write_profile(
        &format!("fleet-egress-{backend}"),
        &sandbox_body(lab, true, IDLE),
    );
    std::fs::write(lab.dir.path().join("seed.txt"), "seeded\n").unwrap();
    let lab = &*lab;
    let mut m = Matrix {
        lab,
        backend,
        rows: Vec::new(),
    };
    let missing = "agentc-test/matrix-missing:none";
    // `agentc run PATH --name NAME` and `tail`.
    let launch = |path: &str, name: &str, tail: &[&str]| -> Vec<String> {
        let args = [
            "run",
            path,
            "--backend",
            "{b}",
            "--name",
            name,
            "--no-warnings",
        ];
        args.iter().chain(tail).map(|arg| arg.to_string()).collect()
    };
    let attached = |path: &str, name: &str, image: &str, script: &str| -> Vec<String> {
        launch(path, name, &["--image", image, "--", "-c", script])
    };
    let count = |path: &str, name: &str, more: &[&str]| -> Vec<String> {
        launch(path, name, &[&["--count", "2"], more].concat())
    };
    let mut run = |row: &str, profile: &str, args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        m.run(row, profile, &args);
    };
    run(
        "run attached: exit 3",
        &agent,
        attached(&agent_path, &agent, &image, "exit 3"),
    );
    run(
        "run attached (egress denied): exit 0",
        &plain,
        attached(&plain_path, &plain, &image, "exit 0"),
    );
    run(
        "run attached: failed start",
        &agent,
        attached(&agent_path, &agent, &base, "exit 0"),
    );
    run(
        "run attached: image missing",
        &agent,
        attached(&agent_path, &agent, missing, "exit 0"),
    );
    // The name held by another profile's sandbox.
    let detached = [
        "run",
        &fleet_path,
        "--backend",
        "{b}",
        "--name",
        &plain,
        "--no-warnings",
    ];
    run(
        "run detached (another profile)",
        &fleet,
        detached.iter().map(|a| a.to_string()).collect(),
    );
    run(
        "run attached: name in use",
        &plain,
        attached(&plain_path, &plain, &image, "exit 0"),
    );
    run(
        "rm (another profile)",
        &fleet,
        vec!["rm".into(), "--backend".into(), "{b}".into(), plain.clone()],
    );
    run("run --count 2", &fleet, count(&fleet_path, &fleet, &[]));
    run(
        "run --count 2: names in use",
        &fleet,
        count(&fleet_path, &fleet, &[]),
    );
    run(
        "rm --profile",
        &fleet,
        vec![
            "rm".into(),
            "--backend".into(),
            "{b}".into(),
            "--profile".into(),
            fleet.clone(),
        ],
    );
    run(
        "run --count 2: image missing",
        &fleet,
        count(&fleet_path, &fleet, &["--image", missing]),
    );
    run(
        "run --count 2 behind the proxy",
        &proxied,
        count(&proxied_path, &proxied, &[]),
    );
    run(
        "rm --profile (behind the proxy)",
        &proxied,
        vec![
            "rm".into(),
            "--backend".into(),
            "{b}".into(),
            "--profile".into(),
            proxied.clone(),
        ],
    );
    let seed = |image: &str| -> Vec<String> {
        [
            "seed",
            &seeded_path,
            "--all",
            "--backend",
            "{b}",
            "--image",
            image,
        ]
        .iter()
        .map(|arg| arg.to_string())
        .collect()
    };
    // busybox's cp refuses the helper's GNU `--no-preserve` (launch.rs seeds with GNU cp).
    run("seed: the helper fails", &seeded, seed(&base));
    run("seed: image missing", &seeded, seed(missing));
    let verify = |path: &str, more: &[&str]| -> Vec<String> {
        ["verify", path, "--backend", "{b}"]
            .iter()
            .chain(more)
            .map(|arg| arg.to_string())
            .collect()
    };
    run("verify", &fleet, verify(&fleet_path, &[]));
    run(
        "verify behind the proxy",
        &proxied,
        verify(&proxied_path, &["--egress-probe", "none"]),
    );
    run(
        "verify: image missing",
        &fleet,
        verify(&fleet_path, &["--image", missing]),
    );
    m.rows
}

/// The launch rows on `engine`.
fn launches(engine: &'static str) {
    let (cli, api) = both(engine, "launch", launch_rows);
    let title = "run attached, run --count, seed, verify";
    Expected::new(title, engine, LAUNCH, &[], PODMAN_LAUNCH).check(&cli, &api);
}

on_both_engines!(
    launches:
    live_runs_seeds_and_verifies_behave_alike_through_both_backends,
    live_podman_runs_seeds_and_verifies_behave_alike_through_both_backends
);

/// Every command through `backend` with `DOCKER_HOST` (Podman: `CONTAINER_HOST`, which the
/// `podman` command follows too) naming a socket that does not exist.
fn daemon_gone_rows(lab: &mut Lab, backend: &str) -> Vec<Row> {
    let (plain, plain_path) =
        lab.write_profile(&format!("gone-{backend}"), &sandbox_body(lab, false, IDLE));
    let (proxied, proxied_path) = lab.write_profile(
        &format!("gone-egress-{backend}"),
        &sandbox_body(lab, true, IDLE),
    );
    let (agent, agent_path) = lab.write_profile(
        &format!("gone-agent-{backend}"),
        &agent_body(lab, true, true),
    );
    std::fs::write(lab.dir.path().join("seed.txt"), "seeded\n").unwrap();
    let socket = lab.dir.path().join("no-daemon/docker.sock");
    let host = format!("unix://{}", socket.display());
    let variable = if lab.engine == "podman" {
        "CONTAINER_HOST"
    } else {
        "DOCKER_HOST"
    };
    let env = [(variable, host.as_str())];
    let file = lab.dir.path().join("seed.txt");
    let file = file.to_string_lossy().into_owned();
    let into = format!("{plain}:/tmp/in.txt");
    let lab = &*lab;
    let mut m = Matrix {
        lab,
        backend,
        rows: Vec::new(),
    };
    let b = "{b}";
    let p = plain.as_str();
    let rows: [(&str, &str, &[&str]); 16] = [
        (
            "run detached",
            p,
            &["run", &plain_path, "--backend", b, "--name", p],
        ),
        (
            "run detached behind the proxy",
            &proxied,
            &[
                "run",
                &proxied_path,
                "--backend",
                b,
                "--name",
                &proxied,
                "--no-warnings",
            ],
        ),
        (
            "run attached",
            &agent,
            &[
                "run",
                &agent_path,
                "--backend",
                b,
                "--no-warnings",
                "--",
                "-c",
                "exit 0",
            ],
        ),
        (
            "run --count 2",
            p,
            &[
                "run",
                &plain_path,
                "--backend",
                b,
                "--name",
                p,
                "--count",
                "2",
            ],
        ),
        (
            "seed",
            &agent,
            &["seed", &agent_path, "--all", "--backend", b],
        ),
        ("verify", p, &["verify", &plain_path, "--backend", b]),
        ("exec", p, &["exec", "--backend", b, p, "true"]),
        ("cp in", p, &["cp", "--backend", b, &file, &into]),
        ("cp out", p, &["cp", "--backend", b, &into, "out.txt"]),
        ("port", p, &["port", "--backend", b, p]),
        ("logs", p, &["logs", "--backend", b, p]),
        ("logs --follow", p, &["logs", "--backend", b, "--follow", p]),
        ("stop", p, &["stop", "--backend", b, p]),
        ("start", p, &["start", "--backend", b, p]),
        ("rm", p, &["rm", "--backend", b, p]),
        ("rm --profile", p, &["rm", "--backend", b, "--profile", p]),
    ];
    for (row, profile, args) in rows {
        m.row(row, profile, args, &env);
    }
    m.rows
}

/// The rows of [`daemon_gone_rows`]: each exits 125, says the daemon cannot be reached and
/// leaves nothing.
const GONE: &[&str] = &[
    "run detached",
    "run detached behind the proxy",
    "run attached",
    "run --count 2",
    "seed",
    "verify",
    "exec",
    "cp in",
    "cp out",
    "port",
    "logs",
    "logs --follow",
    "stop",
    "start",
    "rm",
    "rm --profile",
];

/// Where the daemon-gone rows on Podman differ from Docker's.
const PODMAN_GONE: &[Differs] = &[];

/// The daemon-gone rows on `engine`.
fn daemon_gone(engine: &'static str) {
    let (cli, api) = both(engine, "gone", daemon_gone_rows);
    let gone: Vec<Want> = GONE
        .iter()
        .map(|row| (*row, 125, "daemon unreachable", &[][..]))
        .collect();
    Expected::new("the daemon gone", engine, &gone, &[], PODMAN_GONE).check(&cli, &api);
}

on_both_engines!(
    daemon_gone:
    live_every_command_without_a_daemon_exits_125_alike_and_leaves_nothing,
    live_podman_every_command_without_its_socket_exits_125_alike_and_leaves_nothing
);

/// An egress proxy image of the test's own that agentc launches in place of its binary's: the
/// busybox test image with a script at the proxy's path, made the running agentc binary's
/// through the tag cache under its own `XDG_CACHE_HOME` (what agentc reads first,
/// [`agentc_egress::image::cached_proxy_tag`]). Removed on drop.
struct FailingProxy {
    tag: String,
    cache: tempfile::TempDir,
}

impl FailingProxy {
    /// `serve` runs `serve` (shell), `health` exits 1 saying so.
    fn new(variant: u64, serve: &str) -> FailingProxy {
        let base = test_image();
        let tag = format!(
            "agentc-egress:{:012x}",
            (0xdead_u64 << 32) | (variant << 24) | u64::from(std::process::id() & 0xff_ffff)
        );
        {
            let _lock = IMAGES
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(
                dir.path().join("Dockerfile"),
                format!("FROM {base}\nCOPY proxy {}\n", agentc_egress::PROXY_BINARY),
            )
            .unwrap();
            let proxy = dir.path().join("proxy");
            std::fs::write(
                &proxy,
                format!(
                    "#!/bin/sh\nif [ \"$2\" = health ]; then echo 'matrix proxy: not healthy' >&2; exit 1; fi\n{serve}\n"
                ),
            )
            .unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&proxy, std::fs::Permissions::from_mode(0o755)).unwrap();
            let context = dir.path().to_string_lossy().into_owned();
            docker(&["build", "-q", "-t", &tag, &context]).expect("build the failing proxy image");
        }
        let cache = tempfile::tempdir().unwrap();
        let identity =
            agentc_egress::image::file_identity(std::path::Path::new(env!("CARGO_BIN_EXE_agentc")))
                .expect("the agentc binary's identity");
        let dir = cache.path().join("agentc");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("egress-image-{identity}")),
            format!("{tag}\n"),
        )
        .unwrap();
        FailingProxy { tag, cache }
    }

    /// The environment that makes agentc launch this proxy image.
    fn env(&self) -> String {
        self.cache.path().to_string_lossy().into_owned()
    }
}

impl Drop for FailingProxy {
    fn drop(&mut self) {
        let _ = docker(&["image", "rm", "--force", &self.tag]);
    }
}

/// The launches behind a proxy that fails its health check (running, never healthy, for the
/// whole health timeout) or stops before it: run detached, run attached, run --count.
fn failing_proxy_rows(
    lab: &mut Lab,
    backend: &str,
    unhealthy: &FailingProxy,
    dying: &FailingProxy,
) -> Vec<Row> {
    let image = agent_image();
    let (sandbox, sandbox_path) =
        lab.write_profile(&format!("proxy-{backend}"), &sandbox_body(lab, true, IDLE));
    let (agent, agent_path) = lab.write_profile(
        &format!("proxy-agent-{backend}"),
        &agent_body(lab, true, false),
    );
    let lab = &*lab;
    let mut m = Matrix {
        lab,
        backend,
        rows: Vec::new(),
    };
    let detached = [
        "run",
        &sandbox_path,
        "--backend",
        "{b}",
        "--name",
        &sandbox,
        "--no-warnings",
    ];
    let attached = [
        "run",
        &agent_path,
        "--backend",
        "{b}",
        "--name",
        &agent,
        "--no-warnings",
        "--image",
        &image,
        "--",
        "-c",
        "exit 0",
    ];
    let count = [
        "run",
        &sandbox_path,
        "--backend",
        "{b}",
        "--name",
        &sandbox,
        "--no-warnings",
        "--count",
        "2",
    ];
    let unhealthy = unhealthy.env();
    let dying = dying.env();
    m.row(
        "run detached: proxy never healthy",
        &sandbox,
        &detached,
        &[("XDG_CACHE_HOME", &unhealthy)],
    );
    m.row(
        "run detached: proxy stops",
        &sandbox,
        &detached,
        &[("XDG_CACHE_HOME", &dying)],
    );
    m.row(
        "run attached: proxy stops",
        &agent,
        &attached,
        &[("XDG_CACHE_HOME", &dying)],
    );
    m.row(
        "run --count 2: proxy stops",
        &sandbox,
        &count,
        &[("XDG_CACHE_HOME", &dying)],
    );
    m.rows
}

#[test]
fn live_launches_behind_a_failing_egress_proxy_fail_alike_and_leave_nothing() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_launches_behind_a_failing_egress_proxy") {
        return;
    }
    let unhealthy = FailingProxy::new(1, "exec sleep 300");
    let dying = FailingProxy::new(2, "echo 'matrix proxy: cannot serve' >&2; exit 3");
    let (cli, api) = both("docker", "proxy", |lab, backend| {
        failing_proxy_rows(lab, backend, &unhealthy, &dying)
    });
    let expected: &[Want] = &[
        (
            "run detached: proxy never healthy",
            125,
            "proxy failed",
            &[],
        ),
        ("run detached: proxy stops", 125, "proxy failed", &[]),
        ("run attached: proxy stops", 125, "proxy failed", &[]),
        ("run --count 2: proxy stops", 125, "copies failed", &[]),
    ];
    Expected::new("a failing egress proxy", "docker", expected, &[], &[]).check(&cli, &api);
}

/// SIGINT and SIGTERM of the launches not in `faults.rs`: an attached run with egress denied
/// while its workload runs, `run --count` and `verify` behind the egress proxy at the step
/// where the proxy is healthy and nothing else exists yet (`AGENTC_TEST_PAUSE_AT=proxy`; not
/// on Podman, which has no egress proxy: [`PODMAN_NO_PROXY`]).
fn signal_rows(lab: &mut Lab, backend: &str) -> Vec<Row> {
    let image = on_engine(lab, agent_image());
    let (plain, plain_path) = lab.write_profile(
        &format!("signal-agent-{backend}"),
        &agent_body(lab, false, false),
    );
    let (fleet, fleet_path) = lab.write_profile(
        &format!("signal-fleet-{backend}"),
        &sandbox_body(lab, true, IDLE),
    );
    let lab = &*lab;
    let mut m = Matrix {
        lab,
        backend,
        rows: Vec::new(),
    };
    let attached = [
        "run",
        &plain_path,
        "--backend",
        "{b}",
        "--name",
        &plain,
        "--no-warnings",
        "--image",
        &image,
        "--",
        "-c",
        "echo ready >&2; sleep 30",
    ];
    let count = [
        "run",
        &fleet_path,
        "--backend",
        "{b}",
        "--name",
        &fleet,
        "--no-warnings",
        "--count",
        "2",
    ];
    let verify = [
        "verify",
        &fleet_path,
        "--backend",
        "{b}",
        "--egress-probe",
        "none",
    ];
    let pause = [("AGENTC_TEST_PAUSE_AT", "proxy")];
    let paused = "agentc: paused at proxy";
    let signals = [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")];
    for (signal, name) in signals {
        let row = format!("run attached (egress denied): {name} while it runs");
        m.signalled(&row, &plain, &attached, &[], "ready", signal);
    }
    if lab.engine == "podman" {
        return m.rows;
    }
    for (signal, name) in signals {
        let row = format!("run --count 2: {name} at the proxy step");
        m.signalled(&row, &fleet, &count, &pause, paused, signal);
    }
    for (signal, name) in signals {
        let row = format!("verify behind the proxy: {name} at the proxy step");
        m.signalled(&row, &fleet, &verify, &pause, paused, signal);
    }
    let row = "run --count 2: SIGKILL at the proxy step";
    m.signalled(row, &fleet, &count, &pause, paused, libc::SIGKILL);
    // The next command is a pool's listing here: every command that talks to the engine
    // reaps, not only `ps`.
    let row = "verify behind the proxy: SIGKILL at the proxy step";
    m.killed(row, &fleet, &verify, &pause, paused, &["pool", "ls"]);
    m.rows
}

/// The rows of [`signal_rows`].
const SIGNALS: &[Want] = &[
    (
        "run attached (egress denied): SIGINT while it runs",
        130,
        "interrupted by SIGINT",
        &[],
    ),
    (
        "run attached (egress denied): SIGTERM while it runs",
        143,
        "interrupted by SIGTERM",
        &[],
    ),
    (
        "run --count 2: SIGINT at the proxy step",
        130,
        "copies failed",
        &[],
    ),
    (
        "run --count 2: SIGTERM at the proxy step",
        143,
        "copies failed",
        &[],
    ),
    (
        "verify behind the proxy: SIGINT at the proxy step",
        130,
        "interrupted by SIGINT",
        &[],
    ),
    (
        "verify behind the proxy: SIGTERM at the proxy step",
        143,
        "interrupted by SIGTERM",
        &[],
    ),
    (
        "run --count 2: SIGKILL at the proxy step",
        137,
        "killed, reaped by the next command",
        &[],
    ),
    (
        "verify behind the proxy: SIGKILL at the proxy step",
        137,
        "killed, reaped by the next command",
        &[],
    ),
];

/// The rows not run on Podman: a launch behind the egress proxy is refused there before
/// anything exists ([`NO_PROXY`]), so it has no proxy step to signal, nor a proxy to fail.
const PODMAN_NO_PROXY: &[(&str, &str)] = &[
    (
        "run --count 2: SIG{INT,TERM,KILL} at the proxy step",
        "on Podman: no egress proxy",
    ),
    (
        "verify behind the proxy: SIG{INT,TERM,KILL} ...",
        "on Podman: no egress proxy",
    ),
    (
        "a failing egress proxy (4 rows)",
        "on Podman: no egress proxy",
    ),
];

/// The signal rows on `engine`.
fn signals(engine: &'static str) {
    let (cli, api) = both(engine, "signals", signal_rows);
    let skipped = if engine == "podman" {
        PODMAN_NO_PROXY
    } else {
        &[]
    };
    Expected::new("signals", engine, SIGNALS, &[], &[])
        .skipping(skipped)
        .check(&cli, &api);
}

on_both_engines!(
    signals:
    live_signals_of_attached_runs_copies_and_verify_end_alike,
    live_podman_signals_of_attached_runs_end_alike
);
