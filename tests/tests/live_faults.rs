//! Fault tests on the live daemon, for both executors: the API backend's
//! the launch `agentc run` makes through the API backend's port (`agentc_engine::launch`) and
//! the CLI backend's `docker` with `render_argv`'s argv.
//!
//! Covered: the daemon socket missing, the image missing, the name already in use, a container
//! killed by the OOM killer (exit 137 reported as such), SIGINT (Ctrl-C) or SIGTERM during
//! an attached launch (the container is removed, exit 130 or 143; under `--init` also for an
//! agent without signal handlers), and the daemon connection lost during an attached launch
//! (the container is removed, or named when the daemon stays unreachable). Every test watches
//! the containers labelled with its own profile name, and the volumes of that profile, with a
//! [`LeakGuard`]: nothing may be left behind.
//!
//! The signal tests run the launch in a child process: this test binary again, told by
//! [`CHILD_VAR`] to run [`child_launch`], which launches and exits with the launch's code.
//!
//! Needs the daemon: skips with a printed reason without one, fails instead when
//! `AGENTC_REQUIRE_DOCKER=1`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use agentc_backend_api::{connect, ExecError};
use agentc_backend_cli::render_argv;
use agentc_conformance::image::ensure_test_image;
use agentc_conformance::launch::{launch, Outcome};
use agentc_conformance::live::{
    containers_with_label, docker, inspect, require_daemon, LeakGuard, PROFILE_LABEL,
    REQUIRE_DOCKER_VAR,
};
use agentc_engine::launch::LaunchOptions;
use agentc_policy::Hinted;
use agentc_policy::{Action, ContainerSpec, LaunchKind, LaunchSpec, Network, Resources, Tmpfs};

/// Set in a child process to the JSON of the [`ContainerSpec`] that [`child_launch`] launches.
const CHILD_VAR: &str = "AGENTC_LIVE_FAULTS_CHILD_SPEC";

/// How often an OOM batch runs when the daemon itself misses the kills (it does under load).
const ATTEMPTS: usize = 3;

/// A command that allocates until the memory limit stops it.
const ALLOCATE: &str = "x=a; while true; do x=\"$x$x\"; done";

/// Runs the test unless there is no daemon or no test image (a printed skip, or a failure
/// under `AGENTC_REQUIRE_DOCKER=1`); returns the test image's tag.
fn setup(test: &str) -> Option<String> {
    if !require_daemon(test) {
        return None;
    }
    match ensure_test_image() {
        Ok(tag) => Some(tag),
        Err(reason) if std::env::var(REQUIRE_DOCKER_VAR).as_deref() == Ok("1") => {
            panic!("{test}: {REQUIRE_DOCKER_VAR}=1 but {reason}")
        }
        Err(reason) => {
            eprintln!("skipping {test}: {reason}");
            None
        }
    }
}

/// The profile name a test labels its containers with: unique per test and process.
fn profile(test: &str) -> String {
    format!("agentc-live-fault-{test}-{}", std::process::id())
}

/// A hardened, networkless, attached launch of `command` in `image`, labelled with `profile`.
fn spec(profile: &str, name: &str, image: &str, command: &[&str]) -> ContainerSpec {
    ContainerSpec {
        name: Some(name.to_string()),
        command: command.iter().map(|arg| arg.to_string()).collect(),
        user: Some("1000".to_string()),
        tmpfs: vec![Tmpfs {
            target: "/tmp".to_string(),
            exec: false,
        }],
        read_only_root: true,
        no_new_privileges: true,
        cap_drop_all: true,
        network: Network::None,
        resources: Resources {
            memory_bytes: Some(64 * 1024 * 1024),
            memory_swap_bytes: Some(64 * 1024 * 1024),
            pids_limit: Some(64),
            ..Resources::default()
        },
        labels: BTreeMap::from([(PROFILE_LABEL.to_string(), profile.to_string())]),
        auto_remove: true,
        ..ContainerSpec::empty(image)
    }
}

/// The CLI backend's argv for `container`, without the leading `docker`.
fn cli_args(container: &ContainerSpec) -> Vec<String> {
    let spec = LaunchSpec {
        kind: LaunchKind::Run,
        profile: "live-faults".to_string(),
        action: Action::Container(Box::new(container.clone())),
        origins: BTreeMap::new(),
    };
    let argv = render_argv(&spec).expect("the fault spec renders");
    assert_eq!(argv[0], "docker");
    argv[1..].to_vec()
}

/// Runs the CLI backend's docker for `container` with extra environment; (exit code, stderr).
fn run_cli(container: &ContainerSpec, env: &[(&str, &str)]) -> (i32, String) {
    let output = Command::new("docker")
        .args(cli_args(container))
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("docker runs");
    (
        exit_code(output.status),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(-1)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Launches through the API backend on the local daemon.
fn launch_api(container: &ContainerSpec) -> Result<Outcome, ExecError> {
    runtime().block_on(async {
        let host = std::env::var("DOCKER_HOST").ok();
        let docker = connect(agentc_engine::Engine::Docker, host.as_deref()).await?;
        launch(
            &docker,
            container,
            &Default::default(),
            &LaunchOptions::default(),
        )
        .await
    })
}

#[test]
fn live_a_missing_daemon_socket_is_a_clear_error_and_creates_nothing() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "missing-socket";
    let Some(image) = setup(test) else { return };
    let profile = profile(test);
    let guard = LeakGuard::new(test, &profile);
    let host = "unix:///nonexistent/agentc/docker.sock";

    let error = runtime()
        .block_on(connect(agentc_engine::Engine::Docker, Some(host)))
        .unwrap_err();
    let message = error.with_hint().to_string();
    assert!(matches!(error, ExecError::Connect { .. }), "{message}");
    assert!(
        message.starts_with("cannot connect to the docker daemon"),
        "{message}"
    );
    assert!(message.contains("DOCKER_HOST"), "{message}");
    assert_eq!(error.exit_code(), 125);

    let container = spec(&profile, &format!("{profile}-cli"), &image, &["true"]);
    let (code, stderr) = run_cli(&container, &[("DOCKER_HOST", host)]);
    assert_eq!(code, 125, "{stderr}");
    assert!(
        stderr.contains("Cannot connect to the Docker daemon")
            && stderr.contains("/nonexistent/agentc/docker.sock"),
        "{stderr}"
    );
    guard.finish();
}

#[test]
fn live_a_missing_image_is_a_clear_error_and_creates_nothing() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "missing-image";
    let Some(_) = setup(test) else { return };
    let profile = profile(test);
    let guard = LeakGuard::new(test, &profile);
    let image = "agentc-test/no-such-image:missing";
    assert_eq!(inspect(image), serde_json::Value::Null, "{image} exists");

    let container = spec(&profile, &format!("{profile}-api"), image, &["true"]);
    let error = launch_api(&container).unwrap_err();
    let message = error.with_hint().to_string();
    assert!(
        matches!(&error, ExecError::ImageMissing { image: named, .. } if named == image),
        "{message}"
    );
    assert!(message.contains("agentc build PROFILE"), "{message}");
    assert!(message.contains("never pulls"), "{message}");
    assert_eq!(inspect(&format!("{profile}-api")), serde_json::Value::Null);

    // The docker CLI tries to pull, which fails here (no registry); either way, nothing is made.
    let container = spec(&profile, &format!("{profile}-cli"), image, &["true"]);
    let (code, stderr) = run_cli(&container, &[]);
    assert_eq!(code, 125, "{stderr}");
    assert!(
        stderr.contains(&format!("Unable to find image '{image}' locally")),
        "{stderr}"
    );
    assert_eq!(inspect(&format!("{profile}-cli")), serde_json::Value::Null);
    guard.finish();
}

#[test]
fn live_a_name_in_use_is_a_clear_error_and_leaves_the_existing_container_alone() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "name-in-use";
    let Some(image) = setup(test) else { return };
    let profile = profile(test);
    let guard = LeakGuard::new(test, &profile);
    let name = format!("{profile}-taken");
    let label = format!("{PROFILE_LABEL}={profile}");
    let existing = docker(&[
        "create",
        "--name",
        &name,
        "--label",
        &label,
        "--network=none",
        &image,
        "sleep",
        "60",
    ])
    .expect("create the existing container");

    let container = spec(&profile, &name, &image, &["true"]);
    let error = launch_api(&container).unwrap_err();
    let message = error.with_hint().to_string();
    assert!(
        matches!(
            &error,
            ExecError::Daemon {
                step: "create the container",
                status: 409,
                ..
            }
        ),
        "{message}"
    );
    assert!(message.contains("is already in use"), "{message}");
    assert!(
        message.contains("`agentc rm NAME` removes one"),
        "{message}"
    );

    let (code, stderr) = run_cli(&container, &[]);
    assert_eq!(code, 125, "{stderr}");
    assert!(stderr.contains("is already in use"), "{stderr}");

    // The existing container is untouched: same id, still only created, and the only one.
    let after = inspect(&name);
    assert_eq!(after["Id"], serde_json::Value::String(existing.clone()));
    assert_eq!(after["State"]["Status"], "created");
    assert_eq!(containers_with_label(&label), vec![name.clone()]);
    docker(&["rm", "--force", &existing]).expect("remove the existing container");
    guard.finish();
}

/// A CPU quota above the daemon host's CPU count passes validation (the policy cannot know the
/// host) and is refused by the daemon at create: a clear error that names the profile field,
/// exit 125, and nothing created, through both backends.
#[test]
fn live_more_cpus_than_the_host_has_is_refused_with_a_hint_and_creates_nothing() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "cpus-beyond-host";
    let Some(image) = setup(test) else { return };
    let profile = profile(test);
    let guard = LeakGuard::new(test, &profile);
    let cpus = agentc_conformance::live::daemon_cpus().expect("the daemon's cpu count");
    let mut container = spec(&profile, &format!("{profile}-api"), &image, &["true"]);
    container.resources.nano_cpus = Some((cpus + 1) * 1_000_000_000);

    let error = launch_api(&container).unwrap_err();
    let message = error.with_hint().to_string();
    assert!(
        matches!(
            &error,
            ExecError::Daemon {
                step: "create the container",
                ..
            }
        ),
        "{message}"
    );
    assert!(message.contains("Range of CPUs"), "{message}");
    assert!(
        message.contains("resources.cpus (or AGENTC_CPUS)"),
        "{message}"
    );
    assert_eq!(error.exit_code(), 125);

    container.name = Some(format!("{profile}-cli"));
    let (code, stderr) = run_cli(&container, &[]);
    assert_eq!(code, 125, "{stderr}");
    assert!(stderr.contains("Range of CPUs"), "{stderr}");
    guard.finish();
}

/// The ids of the containers labelled with a profile for which the daemon announced an `oom`
/// event while this log ran: the daemon's own account of which kills were the OOM killer's.
struct OomLog {
    child: Child,
    announced: std::sync::mpsc::Receiver<String>,
}

impl OomLog {
    fn start(profile: &str) -> OomLog {
        use std::io::BufRead as _;
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_secs()
            .saturating_sub(1)
            .to_string();
        let label = format!("label={PROFILE_LABEL}={profile}");
        // `--since` replays what happened before the subscription reached the daemon.
        let mut child = Command::new("docker")
            .args(["events", "--since", &since, "--filter", "event=oom"])
            .args(["--filter", &label, "--format", "{{.ID}}"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run docker events");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (sender, announced) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line.trim().to_string()).is_err() {
                    break;
                }
            }
        });
        OomLog { child, announced }
    }

    /// Stops the log once every id in `expected` was announced (the daemon's event stream may
    /// lag the executor's own watch), or 20 s have passed; then half a second more, so that an
    /// announcement the executor missed is seen too.
    fn stop(mut self, expected: &BTreeSet<String>) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !expected.is_subset(&seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.announced.recv_timeout(left) {
                Ok(id) => {
                    seen.insert(id);
                }
                Err(_) => break,
            }
        }
        let grace = Instant::now() + Duration::from_millis(500);
        while let Ok(id) = self
            .announced
            .recv_timeout(grace.saturating_duration_since(Instant::now()))
        {
            seen.insert(id);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        seen
    }
}

/// The OOM killer ends launches that allocate past their limit: exit 137, reported as OOM
/// exactly when the daemon says it was the OOM killer.
///
/// With `auto_remove` the daemon removes the container right after it exits, racing the
/// executor's look at `State.OOMKilled`; twelve launches at once make that race likely (it
/// lost in most runs before the executor watched the `oom` event). Under such load the
/// daemon itself occasionally misses an OOM kill (cgroup v1 notification; `docker inspect`
/// then says `OOMKilled: false` too), so each outcome is checked against the daemon's `oom`
/// events, and most launches must have been OOM kills (a batch in which the daemon missed them
/// runs again, up to [`ATTEMPTS`] times).
fn oom(test: &str, auto_remove: bool, launches: usize) {
    let Some(image) = setup(test) else { return };
    let profile = profile(test);
    let guard = LeakGuard::new(test, &profile);
    let mut container = spec(
        &profile,
        &format!("{profile}-api"),
        &image,
        &["sh", "-c", ALLOCATE],
    );
    container.auto_remove = auto_remove;
    container.resources.memory_bytes = Some(8 * 1024 * 1024);
    container.resources.memory_swap_bytes = Some(8 * 1024 * 1024);

    // Every attempt must be consistent with the daemon's own account; only a batch in which
    // the daemon itself missed the OOM kills is run again (at most three times).
    for attempt in 1..=ATTEMPTS {
        let log = OomLog::start(&profile);
        let outcomes: Vec<Outcome> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..launches)
                .map(|index| {
                    let mut container = container.clone();
                    container.name = Some(format!("{profile}-api-{attempt}-{index}"));
                    scope.spawn(move || launch_api(&container))
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .expect("launch thread")
                        .expect("the launch runs")
                })
                .collect()
        });
        let claimed: BTreeSet<String> = outcomes
            .iter()
            .filter(|outcome| outcome.oom_killed)
            .map(|outcome| outcome.container_id.clone())
            .collect();
        let announced = log.stop(&claimed);
        for outcome in &outcomes {
            assert_eq!(outcome.exit_code, 137, "{outcome:?}");
            assert_eq!(
                outcome.oom_killed,
                announced.contains(&outcome.container_id),
                "{outcome:?}; the daemon announced oom for {announced:?}"
            );
            let explanation = outcome.explanation().unwrap_or_default();
            if outcome.oom_killed {
                assert!(explanation.contains("out-of-memory"), "{explanation}");
                assert!(explanation.contains("resources.memory"), "{explanation}");
            } else {
                assert!(explanation.contains("SIGKILL"), "{explanation}");
            }
        }
        let reported = outcomes.iter().filter(|outcome| outcome.oom_killed).count();
        if reported * 2 >= launches {
            break;
        }
        assert!(
            attempt < ATTEMPTS,
            "only {reported} of {launches} launches were reported as oom kills, in each of \
             {ATTEMPTS} attempts: {outcomes:?}"
        );
        eprintln!(
            "{test}: the daemon announced {reported} of {launches} oom kills (attempt {attempt}); \
             running the batch again"
        );
    }

    for attempt in 1..=ATTEMPTS {
        let name = format!("{profile}-cli-{attempt}");
        container.name = Some(name.clone());
        let (code, stderr) = run_cli(&container, &[]);
        assert_eq!(code, 137, "{stderr}");
        if auto_remove {
            break;
        }
        let oom_killed = inspect(&name)["State"]["OOMKilled"] == true;
        docker(&["rm", "--force", &name]).expect("remove");
        if oom_killed {
            break;
        }
        assert!(
            attempt < ATTEMPTS,
            "the daemon reported none of {ATTEMPTS} cli launches as oom-killed"
        );
        eprintln!("{test}: the daemon missed the cli launch's oom kill (attempt {attempt})");
    }
    guard.finish();
}

#[test]
fn live_an_oom_kill_is_reported_as_such() {
    let _turn = agentc_conformance::turn::turn(file!());
    oom("oom-kept", false, 1);
}

#[test]
fn live_an_oom_kill_of_an_auto_removed_container_is_reported_as_such() {
    let _turn = agentc_conformance::turn::turn(file!());
    oom("oom-rm", true, 12);
}

/// The child side of the signal tests: launches the spec in [`CHILD_VAR`] through the API
/// backend and exits with the launch's exit code. Ignored: only the signal tests run it.
#[test]
#[ignore = "the child process of the signal tests, which run it with --ignored"]
fn child_launch() {
    let _turn = agentc_conformance::turn::turn(file!());
    let json = std::env::var(CHILD_VAR)
        .unwrap_or_else(|_| panic!("child_launch is run by the signal tests, with {CHILD_VAR}"));
    let container: ContainerSpec = serde_json::from_str(&json).expect("child spec");
    let code = match launch_api(&container) {
        Ok(outcome) => i32::try_from(outcome.exit_code).unwrap_or(1),
        Err(error) => {
            eprintln!("error: {error}");
            error.exit_code()
        }
    };
    std::process::exit(code);
}

/// Waits until a container labelled `label` runs; false after `timeout`.
fn wait_running(label: &str, timeout: Duration) -> bool {
    let filter = format!("label={label}");
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let running = docker(&[
            "ps",
            "--filter",
            &filter,
            "--filter",
            "status=running",
            "--format",
            "{{.ID}}",
        ])
        .unwrap_or_default();
        if !running.is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Waits for a child up to `timeout`, killing it after; its exit code.
fn wait_child(child: &mut Child, timeout: Duration) -> Option<i32> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            return Some(exit_code(status));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

fn send(signal: &str, pid: u32) {
    let status = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid}");
}

/// A signal during an attached API launch removes the container; the exit code is 128 + signo.
/// With `auto_remove` the kill makes the daemon remove the container itself, so the executor's
/// own removal answers 409 and the executor must wait for the daemon's (before it did, `docker
/// ps -a` still listed the container, "Removal In Progress", in about one run in four after
/// the launch said it was removed); without, the removal is the executor's alone.
fn api_signal(test: &str, signal: &str, expected: i32, auto_remove: bool) {
    let Some(image) = setup(test) else { return };
    let profile = profile(test);
    let guard = LeakGuard::new(test, &profile);
    let label = format!("{PROFILE_LABEL}={profile}");
    let mut container = spec(
        &profile,
        &format!("{profile}-api"),
        &image,
        &["sleep", "60"],
    );
    container.auto_remove = auto_remove;
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "live_faults::child_launch",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_VAR, serde_json::to_string(&container).expect("json"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child launch");
    if !wait_running(&label, Duration::from_secs(20)) {
        let _ = child.kill();
        panic!("{test}: the container never ran");
    }
    let started = Instant::now();
    send(signal, child.id());
    let code = wait_child(&mut child, Duration::from_secs(20));
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        use std::io::Read;
        let _ = pipe.read_to_string(&mut stderr);
    }
    assert_eq!(code, Some(expected), "{stderr}");
    assert!(
        stderr.contains(&format!("interrupted by SIG{signal}; removed container")),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{test}: the launch took {:?} to stop",
        started.elapsed()
    );
    assert!(
        containers_with_label(&label).is_empty(),
        "{test}: left behind"
    );
    guard.finish();
}

#[test]
fn live_sigint_during_an_api_attach_removes_the_auto_removed_container() {
    let _turn = agentc_conformance::turn::turn(file!());
    api_signal("api-sigint", "INT", 130, true);
}

#[test]
fn live_sigterm_during_an_api_attach_removes_the_kept_container() {
    let _turn = agentc_conformance::turn::turn(file!());
    api_signal("api-sigterm", "TERM", 143, false);
}

/// A stand-in for the daemon's socket that forwards every connection to the real one, and can
/// cut the connections open so far (a lost connection, as a restarting daemon or a dropped
/// SSH tunnel gives) or vanish altogether (a daemon that stays unreachable).
struct SocketProxy {
    dir: tempfile::TempDir,
    open: std::sync::Arc<std::sync::Mutex<ProxyStreams>>,
}

/// The connections a [`SocketProxy`] forwards, and whether it has vanished. One lock holds
/// both, so a connection accepted just before the socket is removed is either cut with the
/// others or refused: none slips through to the daemon after [`SocketProxy::vanish`].
#[derive(Default)]
struct ProxyStreams {
    streams: Vec<std::os::unix::net::UnixStream>,
    vanished: bool,
}

impl SocketProxy {
    fn start() -> SocketProxy {
        use std::os::unix::net::{UnixListener, UnixStream};
        let upstream = match std::env::var("DOCKER_HOST") {
            Ok(host) if !host.is_empty() => host
                .strip_prefix("unix://")
                .unwrap_or_else(|| panic!("the proxy forwards to a unix socket, not {host}"))
                .to_string(),
            _ => "/var/run/docker.sock".to_string(),
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let listener = UnixListener::bind(dir.path().join("docker.sock")).expect("bind the proxy");
        let open = std::sync::Arc::new(std::sync::Mutex::new(ProxyStreams::default()));
        let registry = open.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { break };
                let mut registry = registry.lock().expect("proxy registry");
                if registry.vanished {
                    let _ = client.shutdown(std::net::Shutdown::Both);
                    break;
                }
                let Ok(daemon) = UnixStream::connect(&upstream) else {
                    break;
                };
                let pipe = |mut from: UnixStream, mut to: UnixStream| {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Write);
                    });
                };
                for stream in [&client, &daemon] {
                    registry
                        .streams
                        .push(stream.try_clone().expect("clone a stream"));
                }
                drop(registry);
                pipe(
                    client.try_clone().expect("clone"),
                    daemon.try_clone().expect("clone"),
                );
                pipe(daemon, client);
            }
        });
        SocketProxy { dir, open }
    }

    /// `DOCKER_HOST` for a client of this proxy.
    fn host(&self) -> String {
        format!("unix://{}", self.dir.path().join("docker.sock").display())
    }

    /// Cuts every connection made so far; new ones are still forwarded.
    fn cut(&self) {
        Self::cut_all(&mut self.open.lock().expect("proxy registry"));
    }

    fn cut_all(registry: &mut ProxyStreams) {
        for stream in registry.streams.drain(..) {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Cuts every connection and removes the socket: from now on the daemon is unreachable,
    /// a connection accepted in the meantime included.
    fn vanish(&self) {
        std::fs::remove_file(self.dir.path().join("docker.sock")).expect("remove the socket");
        let mut registry = self.open.lock().expect("proxy registry");
        registry.vanished = true;
        Self::cut_all(&mut registry);
    }
}

/// Starts an attached API launch of `sleep 60` through a [`SocketProxy`], waits until the
/// container runs, lets `fault` break the connection, and returns the launch's error (the
/// launch must end within 30 s).
fn launch_through_a_failing_proxy(
    test: &str,
    fault: fn(&SocketProxy),
) -> Option<(String, String, LeakGuard, ExecError)> {
    let image = setup(test)?;
    let profile = profile(test);
    let guard = LeakGuard::new(test, &profile);
    let label = format!("{PROFILE_LABEL}={profile}");
    let name = format!("{profile}-api");
    let container = spec(&profile, &name, &image, &["sleep", "60"]);
    let proxy = SocketProxy::start();
    let host = proxy.host();
    let (sender, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let result = runtime().block_on(async {
            let docker = connect(agentc_engine::Engine::Docker, Some(&host)).await?;
            launch(
                &docker,
                &container,
                &Default::default(),
                &LaunchOptions::default(),
            )
            .await
        });
        let _ = sender.send(result);
    });
    assert!(
        wait_running(&label, Duration::from_secs(20)),
        "{test}: the container never ran"
    );
    fault(&proxy);
    let result = outcome
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("{test}: the launch did not end after the fault"));
    let error = match result {
        Ok(outcome) => panic!("{test}: the launch succeeded: {outcome:?}"),
        Err(error) => error,
    };
    Some((label, name, guard, error))
}

/// A connection lost while attached (the attach stream and the wait cut, the daemon itself
/// still there) ends the launch with a clear error, exit 125, and the container is removed.
#[test]
fn live_a_lost_daemon_connection_during_an_api_attach_removes_the_container() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "api-lost-connection";
    let Some((label, _name, guard, error)) = launch_through_a_failing_proxy(test, SocketProxy::cut)
    else {
        return;
    };
    let message = error.with_hint().to_string();
    eprintln!("{test}: {message}");
    assert!(
        matches!(error, ExecError::ConnectionLost { .. }),
        "{message}"
    );
    assert!(
        message.contains("lost the connection to the docker daemon"),
        "{message}"
    );
    assert_eq!(error.exit_code(), 125);
    assert!(
        containers_with_label(&label).is_empty(),
        "{test}: left behind"
    );
    guard.finish();
}

/// A daemon that stays unreachable after the connection is lost cannot remove the container:
/// the error says so, names the container and how to remove it later.
#[test]
fn live_an_unreachable_daemon_after_a_lost_connection_names_the_container_left_behind() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "api-daemon-gone";
    let Some((label, name, guard, error)) =
        launch_through_a_failing_proxy(test, SocketProxy::vanish)
    else {
        return;
    };
    let message = error.with_hint().to_string();
    eprintln!("{test}: {message}");
    let ExecError::NotRemoved {
        cause, container, ..
    } = &error
    else {
        panic!("{test}: expected NotRemoved, got {message}");
    };
    assert!(
        matches!(**cause, ExecError::ConnectionLost { .. }),
        "{message}"
    );
    assert_eq!(container, &name);
    assert!(
        message.contains(&format!("`agentc rm {name}`")),
        "{message}"
    );
    assert_eq!(error.exit_code(), 125);
    // It really is still there; the guard removes it, so this test expects exactly it.
    assert_eq!(containers_with_label(&label), vec![name.clone()]);
    if let Err(error) = docker(&["rm", "--force", &name]) {
        // A removal already under way (the daemon's own, after a stop) ends by itself.
        assert!(
            error.contains("already in progress"),
            "remove the container left behind: {error}"
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while !containers_with_label(&label).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    guard.finish();
}

/// A signal to the CLI backend's `docker run --rm`: the docker CLI forwards it to the
/// container (`--sig-proxy` is on by default), whose process exits on it, and `--rm` removes
/// the container. The agent must handle the signal itself: the container's PID 1 ignores
/// signals it installs no handler for, so a bare `sleep` would keep running.
fn cli_signal(test: &str, signal: &str, expected: i32, init: bool) {
    let Some(image) = setup(test) else { return };
    let profile = profile(test);
    let guard = LeakGuard::new(test, &profile);
    let label = format!("{PROFILE_LABEL}={profile}");
    let script = "trap 'exit 130' INT; trap 'exit 143' TERM; echo ready; sleep 60 & wait";
    let command: &[&str] = if init {
        // No handler of its own: docker's init passes the signal on, and sleep dies of it.
        &["sleep", "60"]
    } else {
        &["sh", "-c", script]
    };
    let mut container = spec(&profile, &format!("{profile}-cli"), &image, command);
    container.init = init;
    let mut child = Command::new("docker")
        .args(cli_args(&container))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn docker");
    let stdout = child.stdout.take().expect("stdout is piped");
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line == "ready" {
                let _ = ready_tx.send(());
            }
        }
    });
    // The shell's traps are set once it says ready; before, as PID 1 it would ignore the signal.
    let ready = if init {
        wait_running(&label, Duration::from_secs(20))
    } else {
        ready_rx.recv_timeout(Duration::from_secs(20)).is_ok()
    };
    if !ready {
        let _ = child.kill();
        panic!("{test}: the container never became ready");
    }
    let started = Instant::now();
    send(signal, child.id());
    let code = wait_child(&mut child, Duration::from_secs(20));
    assert_eq!(code, Some(expected));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{test}: the container took {:?} to stop",
        started.elapsed()
    );
    assert!(
        containers_with_label(&label).is_empty(),
        "{test}: left behind"
    );
    guard.finish();
}

#[test]
fn live_sigint_to_the_cli_backend_reaches_the_container_and_removes_it() {
    let _turn = agentc_conformance::turn::turn(file!());
    cli_signal("cli-sigint", "INT", 130, false);
}

#[test]
fn live_sigterm_to_the_cli_backend_reaches_the_container_and_removes_it() {
    let _turn = agentc_conformance::turn::turn(file!());
    cli_signal("cli-sigterm", "TERM", 143, false);
}

/// With `image.init`, docker's init is PID 1 and passes a SIGTERM on to an agent that installs
/// no handler (here a bare `sleep`, which without init would ignore it as PID 1 and keep the
/// container running): the container stops at once with 143 and `--rm` removes it.
#[test]
fn live_sigterm_stops_an_agent_without_handlers_under_init() {
    let _turn = agentc_conformance::turn::turn(file!());
    cli_signal("cli-sigterm-init", "TERM", 143, true);
}
