//! The session commands (`exec`, `cp`, `port`, `logs`, `stop`, `start`, `shell`) through the
//! `agentc` binary on the live daemon, with both backends: the same invocations give the same
//! exit codes and output bytes; Ctrl-C during an exec stops the command in the container, and
//! during a copy removes what it had written; hostile names and paths are refused. Also the
//! launch fixes around sessions: the CLI backend removes the container of a failed start and
//! hints as the API backend does.
//!
//! Each test uses its own profile name, writes its profiles into a temporary directory, and
//! removes every container labelled with its profile, also on failure. Skips with a printed
//! reason without a daemon; fails instead under `AGENTC_REQUIRE_DOCKER=1`.

use crate::common;

use common::{describe, docker, require_daemon, test_image, text};

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn agentc_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentc"));
    command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env("USER", "sessions")
        .env_remove("AGENTC_NETWORK");
    command
}

/// A test's profile name, directory, and the removal of its containers on drop.
struct Lab {
    profile: String,
    dir: tempfile::TempDir,
}

impl Lab {
    fn new(test: &str) -> Lab {
        Lab {
            profile: format!("sess-{test}-{}", std::process::id()),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes the sandbox profile and returns its file name (relative to the directory).
    fn sandbox(&self, image: &str) -> String {
        let file = format!("{}.toml", self.profile);
        std::fs::write(
            self.path().join(&file),
            format!(
                "name = \"{}\"\nagent = \"custom\"\n\n[image]\nref = \"{image}\"\nuser = \"1000:1000\"\ncommand = [\"sh\", \"-c\", \"echo started; exec tail -f /dev/null\"]\n\n[network]\npublish = [8080]\n",
                self.profile
            ),
        )
        .unwrap();
        file
    }

    fn run(&self, args: &[&str]) -> Output {
        agentc_command(self.path(), args)
            .output()
            .expect("agentc runs")
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
    }
}

/// Starts the lab's sandbox; its container name.
fn start_sandbox(lab: &Lab, image: &str) -> String {
    let profile = lab.sandbox(image);
    let output = lab.run(&["run", &profile]);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let containers = lab.containers();
    assert_eq!(containers.len(), 1, "{containers:?}");
    containers[0].clone()
}

#[test]
fn live_session_commands_give_the_same_bytes_through_both_backends() {
    let _turn = crate::common::turn(file!());
    let test = "live_session_commands_give_the_same_bytes_through_both_backends";
    if !require_daemon(test) {
        return;
    }
    let image = test_image();
    let lab = Lab::new("cmds");
    let name = start_sandbox(&lab, &image);
    let profile_file = format!("./{}.toml", lab.profile);
    std::fs::create_dir_all(lab.path().join("src/sub")).unwrap();
    std::fs::write(lab.path().join("src/sub/data"), vec![42u8; 50_000]).unwrap();
    let mut seen: Vec<Vec<String>> = Vec::new();
    for backend in ["cli", "api"] {
        let b = ["--backend", backend];
        let mut record = Vec::new();
        // A restart (`stop`, `start`) gets a new host port: the port is written as PORT.
        let mut note = |what: &str, output: &Output| {
            let stdout = text(&output.stdout);
            let stdout = match stdout.split_once("127.0.0.1:") {
                Some((before, after)) => {
                    let rest = after.trim_start_matches(|c: char| c.is_ascii_digit());
                    format!("{before}127.0.0.1:PORT{rest}")
                }
                None => stdout,
            };
            record.push(format!(
                "{what}: {:?} {:?} {:?}",
                output.status.code(),
                stdout,
                text(&output.stderr).replace(backend, "BACKEND")
            ))
        };
        let out = lab.run(
            &[
                &["exec"][..],
                &b,
                &[&name, "--", "sh", "-c", "echo out; echo err >&2; exit 3"],
            ]
            .concat(),
        );
        assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
        note("exec", &out);
        // A program that is not there: 126 and the runtime's reason, as `docker exec` gives.
        let out = lab.run(&[&["exec"][..], &b, &[&name, "no-such-program"]].concat());
        assert_eq!(out.status.code(), Some(126), "{}", describe(&out));
        assert!(
            // The daemon writes the reason into the exec's output stream (stdout without a
            // TTY), through either backend.
            format!("{}{}", text(&out.stdout), text(&out.stderr))
                .contains("executable file not found"),
            "{}",
            describe(&out)
        );
        note("exec of a missing program", &out);
        let out = lab.run(
            &[
                &["exec"][..],
                &b,
                &[
                    "--env",
                    "MODE=x y",
                    "-w",
                    "/tmp",
                    &profile_file,
                    "--",
                    "sh",
                    "-c",
                    "echo \"$MODE\" $(pwd) $(id -u)",
                ],
            ]
            .concat(),
        );
        assert_eq!(text(&out.stdout), "x y /tmp 1000\n", "{}", describe(&out));
        note("exec by profile file", &out);
        let out = lab.run(
            &[
                &["exec"][..],
                &b,
                &["--env", "AGENTC_SESSIONS_UNSET", &name, "--", "true"],
            ]
            .concat(),
        );
        note("exec with an unset secret", &out);
        let mut child = agentc_command(
            lab.path(),
            &[&["exec"][..], &b, &["-i", &name, "--", "cat"]].concat(),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"piped in\n")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        note("exec -i", &out);
        let mut child = agentc_command(lab.path(), &[&["shell"][..], &b, &[&name]].concat())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"echo from the shell $(id -u); exit 4\n")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
        note("shell", &out);
        let target = format!("{name}:/tmp/up-{backend}");
        let out = lab.run(&[&["cp"][..], &b, &["src", &target]].concat());
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        note("cp up", &out);
        let from = format!("{name}:/tmp/up-{backend}");
        let down = format!("down-{backend}");
        let out = lab.run(&[&["cp"][..], &b, &[&from, &down]].concat());
        note("cp down", &out);
        assert_eq!(
            std::fs::read(lab.path().join(&down).join("sub/data")).unwrap(),
            vec![42u8; 50_000]
        );
        // A path is a profile file (exit 66 when there is none), a leading dash is an option
        // (a usage error), anything else must be a docker name.
        for (hostile, code) in [("../etc", 66), ("-x", 2), ("bad name", 1), ("a:b", 1)] {
            let out = lab.run(&[&["exec"][..], &b, &[hostile, "--", "true"]].concat());
            note(&format!("exec {hostile}"), &out);
            assert_eq!(out.status.code(), Some(code), "{}", describe(&out));
        }
        let out = lab.run(
            &[
                &["cp"][..],
                &b,
                &[&format!("{name}:/tmp/../etc/passwd"), "x"],
            ]
            .concat(),
        );
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        note("cp through ..", &out);
        let out = lab.run(&[&["cp"][..], &b, &["src", "dst"]].concat());
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        note("cp host to host", &out);
        let out = lab.run(&[&["port"][..], &b, &[&name, "8080"]].concat());
        assert!(
            text(&out.stdout).starts_with("127.0.0.1:"),
            "{}",
            describe(&out)
        );
        note("port", &out);
        let out = lab.run(&[&["port"][..], &b, &[&name]].concat());
        note("port, every one", &out);
        let out = lab.run(&[&["logs"][..], &b, &["--tail", "1", &name]].concat());
        note("logs", &out);
        let out = lab.run(&[&["stop"][..], &b, &["--time", "1", &name]].concat());
        note("stop", &out);
        let out = lab.run(&[&["exec"][..], &b, &[&name, "--", "true"]].concat());
        assert_eq!(out.status.code(), Some(125), "{}", describe(&out));
        note("exec while stopped", &out);
        let out = lab.run(&[&["start"][..], &b, &[&profile_file]].concat());
        note("start by profile file", &out);
        seen.push(record);
    }
    assert_eq!(seen[0], seen[1], "the backends differ");
    let all = seen[0].join("\n");
    for expected in [
        "exec: Some(3) \"out\\n\" \"err\\n\"",
        "exec -i: Some(0) \"piped in\\n\"",
        "shell: Some(4) \"from the shell 1000\\n\"",
        "exec with an unset secret: Some(125) \"\" \"error: required secret AGENTC_SESSIONS_UNSET is not set",
        "exec bad name: Some(1) \"\" \"error: \\\"bad name\\\" is not a container name or ID",
        "stop: Some(0) \"stopped ",
        "start by profile file: Some(0) \"started ",
        "logs: Some(0) \"started\\n\"",
    ] {
        assert!(all.contains(expected), "{expected:?} in\n{all}");
    }
    // Another user's container is refused, as `agentc rm` refuses it.
    let foreign = format!("{}-foreign", lab.profile);
    docker(&[
        "create",
        "--name",
        &foreign,
        "--network=none",
        &image,
        "true",
    ])
    .unwrap();
    for backend in ["cli", "api"] {
        let out = lab.run(&["logs", "--backend", backend, &foreign]);
        let _ = docker(&["rm", "--force", &foreign]).is_ok();
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        assert!(
            text(&out.stderr).contains("it has no io.agentc.profile label"),
            "{}",
            describe(&out)
        );
        docker(&[
            "create",
            "--name",
            &foreign,
            "--network=none",
            &image,
            "true",
        ])
        .unwrap();
    }
    let _ = docker(&["rm", "--force", &foreign]);
}

/// The processes in the container whose command line holds `needle`.
fn processes_with(name: &str, needle: &str) -> Vec<String> {
    docker(&["exec", name, "ps", "-o", "args"])
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains(needle) && !line.contains("ps -o"))
        .map(str::to_string)
        .collect()
}

fn interrupt_after(mut child: std::process::Child, wait: Duration) -> Output {
    std::thread::sleep(wait);
    // SAFETY: kill has no memory-safety preconditions; the pid is our unreaped child's.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    use std::io::Read as _;
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_end(&mut stdout);
    }
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_end(&mut stderr);
    }
    Output {
        status,
        stdout,
        stderr,
    }
}

#[test]
fn live_ctrl_c_during_exec_or_cp_leaves_nothing_behind() {
    let _turn = crate::common::turn(file!());
    let test = "live_ctrl_c_during_exec_or_cp_leaves_nothing_behind";
    if !require_daemon(test) {
        return;
    }
    let image = test_image();
    let lab = Lab::new("sigint");
    let name = start_sandbox(&lab, &image);
    docker(&[
        "exec",
        &name,
        "sh",
        "-c",
        "dd if=/dev/urandom of=/tmp/big bs=1M count=300 2>/dev/null",
    ])
    .unwrap();
    for backend in ["cli", "api"] {
        let marker = if backend == "cli" {
            "sleep 301"
        } else {
            "sleep 302"
        };
        let child = agentc_command(
            lab.path(),
            &[
                "exec",
                "--backend",
                backend,
                &name,
                "--",
                "sh",
                "-c",
                &format!("{marker}; echo done"),
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        assert!(
            !processes_with(&name, marker).is_empty(),
            "{backend}: the command runs"
        );
        let out = interrupt_after(child, Duration::from_millis(10));
        assert_eq!(
            out.status.code(),
            Some(130),
            "{backend}: {}",
            describe(&out)
        );
        assert!(
            text(&out.stderr).contains(&format!(
                "error: interrupted by SIGINT; stopped the command in {name}"
            )),
            "{backend}: {}",
            describe(&out)
        );
        assert!(
            processes_with(&name, marker).is_empty(),
            "{backend}: {:?}",
            processes_with(&name, marker)
        );

        let into = format!("big-{backend}");
        let child = agentc_command(
            lab.path(),
            &[
                "cp",
                "--backend",
                backend,
                &format!("{name}:/tmp/big"),
                &into,
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let out = interrupt_after(child, Duration::from_millis(200));
        assert_eq!(
            out.status.code(),
            Some(130),
            "{backend}: the copy finished before Ctrl-C: {}",
            describe(&out)
        );
        assert!(
            text(&out.stderr).contains("interrupted by SIGINT"),
            "{}",
            describe(&out)
        );
        std::thread::sleep(Duration::from_millis(300));

        // Into the tmpfs: what the interrupted tar had unpacked is not left there.
        let upload = lab.path().join("upload.bin");
        std::fs::File::create(&upload)
            .unwrap()
            .set_len(400 * 1024 * 1024)
            .unwrap();
        let target = format!("{name}:/tmp/up-{backend}");
        let child = agentc_command(
            lab.path(),
            &["cp", "--backend", backend, "upload.bin", &target],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        // Ctrl-C once the unpacking tar runs in the sandbox (not after a fixed time: on a
        // loaded machine agentc may not have reached the copy, or even its signal handling).
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while processes_with(&name, "tar -x").is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = interrupt_after(child, Duration::ZERO);
        assert_eq!(
            out.status.code(),
            Some(130),
            "{backend}: the upload finished before Ctrl-C: {}",
            describe(&out)
        );
        std::fs::remove_file(&upload).unwrap();
        let mut left = String::new();
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(250));
            left = docker(&["exec", &name, "ls", "-A", "/tmp"]).unwrap_or_default();
            if !left.contains("up-") && !left.contains(".agentc-cp") {
                break;
            }
        }
        assert!(
            !left.contains("up-") && !left.contains(".agentc-cp"),
            "{backend}: left in /tmp: {left}"
        );
        assert!(
            !lab.path().join(&into).exists(),
            "{backend}: a partial copy is left"
        );
    }
}

#[test]
fn live_a_failed_start_leaves_no_container_and_both_backends_hint_alike() {
    let _turn = crate::common::turn(file!());
    let test = "live_a_failed_start_leaves_no_container_and_both_backends_hint_alike";
    if !require_daemon(test) {
        return;
    }
    let image = test_image();
    let lab = Lab::new("failstart");
    let profile = lab.sandbox(&image);
    let network = format!("{}-missing-net", lab.profile);
    let mut hints = Vec::new();
    for backend in ["cli", "api"] {
        // The sandbox's allowlist without hosts is a high finding: its warning is not the
        // subject here.
        let out = agentc_command(
            lab.path(),
            &["run", "--backend", backend, "--no-warnings", &profile],
        )
        .env("AGENTC_NETWORK", &network)
        .output()
        .unwrap();
        assert_eq!(
            out.status.code(),
            Some(125),
            "{backend}: {}",
            describe(&out)
        );
        assert!(
            lab.containers().is_empty(),
            "{backend}: left {:?}",
            lab.containers()
        );
        assert_eq!(text(&out.stdout), "", "{backend}: {}", describe(&out));
        let stderr = text(&out.stderr);
        assert!(
            stderr.starts_with("error: docker daemon refused to start the container"),
            "{backend}: {stderr}"
        );
        assert!(
            stderr.contains(&format!("network {network} not found")),
            "{backend}: {stderr}"
        );
        hints.push(
            stderr
                .lines()
                .find(|line| line.starts_with("  hint: "))
                .map(str::to_string),
        );
    }
    assert_eq!(hints[0], hints[1]);
    assert!(hints[0]
        .as_deref()
        .unwrap_or_default()
        .contains("docker network create"));
}

/// The custom sandbox `agentc init` writes stops on `agentc stop`'s SIGTERM at once, through
/// both backends: its keep-alive runs under docker's init, which passes the signal on (as PID 1
/// `tail` would ignore it and be killed after the 10 s grace: exit 137).
#[test]
fn live_an_init_written_sandbox_stops_on_sigterm() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_an_init_written_sandbox_stops_on_sigterm") {
        return;
    }
    let image = test_image();
    for backend in ["cli", "api"] {
        let lab = Lab::new(&format!("init-{backend}"));
        let file = format!("{}.toml", lab.profile);
        let init = lab.run(&["init", &file, "--agent", "custom", "--image", &image]);
        assert_eq!(init.status.code(), Some(0), "{}", describe(&init));
        let run = lab.run(&["run", &file, "--backend", backend]);
        assert_eq!(run.status.code(), Some(0), "{backend}: {}", describe(&run));
        let containers = lab.containers();
        assert_eq!(containers.len(), 1, "{backend}: {containers:?}");
        let name = &containers[0];
        let pid1 = docker(&["exec", name, "cat", "/proc/1/comm"]).unwrap_or_default();
        assert_eq!(pid1.trim(), "docker-init", "{backend}");
        let stop = lab.run(&["stop", "--backend", backend, name]);
        assert_eq!(
            stop.status.code(),
            Some(0),
            "{backend}: {}",
            describe(&stop)
        );
        let state = docker(&[
            "inspect",
            "--format",
            "{{.State.Status}} {{.State.ExitCode}}",
            name,
        ])
        .unwrap_or_default();
        // 143: SIGTERM ended it; 137 would be the kill after the grace period.
        assert_eq!(state.trim(), "exited 143", "{backend}");
    }
}

/// A host port the profile chooses (`"PORT:8080"`) is bound on 127.0.0.1 through both
/// backends; a second sandbox asking for the same port is refused before anything of it is
/// created, naming the port and the process holding it.
#[test]
fn live_a_chosen_host_port_is_bound_and_a_taken_one_refused_before_anything_exists() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_chosen_host_port_is_bound_and_a_taken_one_refused") {
        return;
    }
    let image = test_image();
    for backend in ["cli", "api"] {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        let first = Lab::new(&format!("hostport-{backend}"));
        let second = Lab::new(&format!("hostport2-{backend}"));
        let write = |lab: &Lab| {
            let file = format!("{}.toml", lab.profile);
            std::fs::write(
                lab.path().join(&file),
                format!(
                    "name = \"{}\"\nagent = \"custom\"\n\n[image]\nref = \"{image}\"\n\
                     command = [\"sh\", \"-c\", \"while true; do nc -l -p 8080 -e echo hello; done\"]\n\n\
                     [egress]\nmode = \"unrestricted\"\n\n[network]\npublish = [\"{port}:8080\"]\n",
                    lab.profile
                ),
            )
            .expect("profile");
            file
        };
        let file = write(&first);
        let run = first.run(&["run", &file, "--backend", backend, "--no-warnings"]);
        assert_eq!(run.status.code(), Some(0), "{backend}: {}", describe(&run));
        assert!(
            text(&run.stdout).contains(&format!("127.0.0.1:{port}")),
            "{backend}: {}",
            describe(&run)
        );
        // The sandbox answers on the chosen port (its own container, through docker's proxy).
        let mut answer = String::new();
        for _ in 0..50 {
            if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                use std::io::Read;
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let _ = stream.read_to_string(&mut answer);
                if answer.contains("hello") {
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(answer.trim(), "hello", "{backend}");
        let taken = write(&second);
        let refused = second.run(&["run", &taken, "--backend", backend, "--no-warnings"]);
        assert_eq!(
            refused.status.code(),
            Some(125),
            "{backend}: {}",
            describe(&refused)
        );
        let stderr = text(&refused.stderr);
        assert!(
            stderr.contains(&format!(
                "error: network.publish[0]: host port {port}/tcp on 127.0.0.1 is in use by \
                 docker-proxy (pid "
            )) && stderr.contains("nothing was created"),
            "{backend}: {stderr}"
        );
        assert!(
            second.containers().is_empty(),
            "{backend}: {:?}",
            second.containers()
        );
    }
}

/// A NAME is read the same way by every session command and by `rm`: a container, a profile
/// file, or the profile's name `agentc ps` prints; `exec NAME CMD ARGS` needs no `--`.
#[test]
fn live_names_are_read_alike_and_exec_needs_no_double_dash() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_names_are_read_alike_and_exec_needs_no_double_dash") {
        return;
    }
    let image = test_image();
    for backend in ["cli", "api"] {
        let lab = Lab::new(&format!("names-{backend}"));
        let container = start_sandbox(&lab, &image);
        let file = format!("{}.toml", lab.profile);
        for name in [container.as_str(), file.as_str(), lab.profile.as_str()] {
            let exec = lab.run(&["exec", "--backend", backend, name, "ls", "-d", "/tmp"]);
            assert_eq!(
                exec.status.code(),
                Some(0),
                "{backend} {name}: {}",
                describe(&exec)
            );
            assert_eq!(text(&exec.stdout), "/tmp\n", "{backend} {name}");
            let dashed = lab.run(&["exec", "--backend", backend, name, "--", "echo", "-n", "x"]);
            assert_eq!(
                text(&dashed.stdout),
                "x",
                "{backend} {name}: {}",
                describe(&dashed)
            );
        }
        // Every other session command reads the profile's name and file alike, running or
        // stopped (start), through both backends.
        for name in [lab.profile.as_str(), file.as_str()] {
            let expect = |args: &[&str], stdout: &str| {
                let mut full = vec![args[0], "--backend", backend];
                full.extend(&args[1..]);
                let out = lab.run(&full);
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{backend} {args:?}: {}",
                    describe(&out)
                );
                assert!(
                    text(&out.stdout).contains(stdout),
                    "{backend} {args:?}: {}",
                    describe(&out)
                );
            };
            expect(&["pause", name], &format!("paused {container}"));
            expect(&["resume", name], &format!("resumed {container}"));
            if name == lab.profile {
                // Stopped by the profile's name, started again by its file (the keep-alive
                // ignores SIGTERM as PID 1: killed after a second).
                expect(&["stop", name, "-t", "1"], &format!("stopped {container}"));
                expect(&["start", &file], &format!("started {container}"));
            }
            expect(&["logs", name], "");
            expect(&["port", name], "");
            let into = format!("{name}:/tmp/named");
            expect(&["cp", &file, &into], "");
            let back = format!("{name}:/tmp/named");
            expect(&["cp", &back, "-"], "named");
        }
        let missing = lab.run(&["exec", "--backend", backend, "agentc-no-such-thing", "true"]);
        assert_eq!(missing.status.code(), Some(1), "{backend}");
        assert!(
            text(&missing.stderr)
                .starts_with("error: no such container or profile agentc-no-such-thing"),
            "{backend}: {}",
            describe(&missing)
        );
        // rm reads a profile file and a profile's name as exec does.
        let by = if backend == "cli" {
            file.as_str()
        } else {
            lab.profile.as_str()
        };
        let rm = lab.run(&["rm", by]);
        assert_eq!(rm.status.code(), Some(0), "{backend}: {}", describe(&rm));
        assert_eq!(
            text(&rm.stdout),
            format!("removed {container}\n"),
            "{backend}"
        );
        assert!(lab.containers().is_empty(), "{backend}");
    }
}

/// `ps -q` prints the containers' short IDs, `ps --filter` keeps those whose profile, kind and
/// status match (a status filter lists stopped ones without `--all`), and a bad filter is a
/// usage error before the daemon is asked.
#[test]
fn live_ps_quiet_and_filters() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_ps_quiet_and_filters") {
        return;
    }
    let image = test_image();
    let lab = Lab::new("ps");
    let container = start_sandbox(&lab, &image);
    let id = docker(&["inspect", "--format", "{{.Id}}", &container]).unwrap();
    let short = &id.trim()[..12];
    let by_profile = format!("profile={}", lab.profile);
    let listed = |args: &[&str]| {
        let out = lab.run(&[&["ps", "-q"][..], args].concat());
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", describe(&out));
        text(&out.stdout)
    };
    assert!(listed(&[]).lines().any(|line| line == short), "{short}");
    assert_eq!(listed(&["--filter", &by_profile]), format!("{short}\n"));
    let both = ["--filter", &by_profile, "--filter", "kind=sandbox"];
    assert_eq!(listed(&both), format!("{short}\n"));
    // Different keys must all match; one key's values are alternatives.
    assert_eq!(
        listed(&["--filter", &by_profile, "--filter", "kind=run"]),
        ""
    );
    let either = [
        "--filter",
        &by_profile,
        "--filter",
        "kind=run",
        "--filter",
        "kind=sandbox",
    ];
    assert_eq!(listed(&either), format!("{short}\n"));
    let exited = ["--filter", &by_profile, "--filter", "status=exited"];
    assert_eq!(listed(&exited), "");
    let stop = lab.run(&["stop", "--time", "1", &container]);
    assert_eq!(stop.status.code(), Some(0), "{}", describe(&stop));
    assert_eq!(listed(&["--filter", &by_profile]), "");
    assert_eq!(listed(&exited), format!("{short}\n"));
    // The table keeps its columns under a filter.
    let table = lab.run(&["ps", "--filter", &by_profile, "--filter", "status=exited"]);
    let table = text(&table.stdout);
    assert!(table.starts_with("NAME "), "{table}");
    assert!(
        table.lines().nth(1).unwrap_or("").starts_with(&container),
        "{table}"
    );
    let bad = lab.run(&["ps", "--filter", "name=x"]);
    assert_eq!(bad.status.code(), Some(2), "{}", describe(&bad));
    assert!(
        text(&bad.stderr).contains("unknown key \"name\""),
        "{}",
        describe(&bad)
    );
}

/// `agentc cp NAME:PATH -` writes a tar stream to stdout whose top entry is the source's name,
/// with its files and modes, as `docker cp NAME:PATH -` does; no file named `-` appears, and
/// both backends write the same entries.
#[test]
fn live_cp_to_dash_writes_a_tar_stream_to_stdout() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_cp_to_dash_writes_a_tar_stream_to_stdout") {
        return;
    }
    let image = test_image();
    let lab = Lab::new("cptar");
    let container = start_sandbox(&lab, &image);
    let made = docker(&[
        "exec",
        &container,
        "sh",
        "-c",
        "mkdir -p /tmp/out/sub && printf hello > /tmp/out/a.txt && printf x > /tmp/out/sub/b \
         && chmod 0750 /tmp/out/sub/b",
    ]);
    assert!(made.is_ok(), "{made:?}");
    let mut listings = Vec::new();
    for backend in ["cli", "api"] {
        let from = format!("{container}:/tmp/out");
        let out = lab.run(&["cp", "--backend", backend, &from, "-"]);
        assert_eq!(out.status.code(), Some(0), "{backend}: {}", describe(&out));
        assert!(
            !lab.path().join("-").exists(),
            "{backend} wrote a file named -"
        );
        let mut archive = tar::Archive::new(&out.stdout[..]);
        let mut entries = Vec::new();
        for entry in archive.entries().expect("a tar stream") {
            let mut entry = entry.expect("a whole entry");
            let path = entry.path().unwrap().display().to_string();
            let mode = entry.header().mode().unwrap() & 0o7777;
            let mut body = String::new();
            std::io::Read::read_to_string(&mut entry, &mut body).unwrap();
            entries.push(format!("{path} {mode:o} {body}"));
        }
        entries.sort();
        assert!(
            entries.iter().any(|e| e == "out/a.txt 644 hello"),
            "{backend}: {entries:?}"
        );
        assert!(
            entries.iter().any(|e| e == "out/sub/b 750 x"),
            "{backend}: {entries:?}"
        );
        assert!(
            entries.iter().all(|e| e.starts_with("out")),
            "{backend}: {entries:?}"
        );
        listings.push(entries);
    }
    assert_eq!(
        listings[0], listings[1],
        "both backends write the same entries"
    );
}
