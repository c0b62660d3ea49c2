//! The launching commands (`run`, `seed`, `build`, `ps`, `rm`, `verify`) against the live
//! Docker daemon, through the `agentc` binary.
//!
//! Live tests skip with a printed reason when `docker info` fails, and fail instead when
//! `AGENTC_REQUIRE_DOCKER=1`. Each uses its own profile name (tests run in parallel), writes its
//! profiles into a temporary directory, and ends with a [`Leaks`] check: no container labelled
//! with its profile and none of its volumes are left. They run the busybox test image of
//! `scripts/build-test-image.sh` (built here when missing) and, for agent presets, an image
//! built by `agentc build` on top of it whose `claude` is `/bin/sh`.

use crate::common;

use common::{describe, docker, repo_root, require_daemon, test_image, text, IMAGES};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// Runs agentc in `dir` with stdin closed; `env` is added to the inherited environment.
fn agentc_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentc"));
    command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env("USER", "launcher");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("agentc runs")
}

fn agentc(args: &[&str]) -> Output {
    agentc_in(&repo_root(), args, &[])
}

/// An image on top of the test image whose `claude` runs `/bin/sh "$@"` and whose `cp` accepts
/// GNU's `--no-preserve` (which the seed helper uses), built with
/// `agentc build` of a custom profile (the live test of `build`; a preset's build refuses
/// root, which these tests may run as), so `agentc run PRESET -- -c SCRIPT` runs SCRIPT.
fn agent_image() -> String {
    let base = test_image();
    let _lock = IMAGES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let context = dir.path().join("image");
        std::fs::create_dir(&context).unwrap();
        let mut dockerfile = format!("FROM {base}\nCOPY claude /bin/claude\n");
        // The seed helper runs GNU `cp --no-preserve=...`, and busybox's shell runs its own
        // `cp` applet whatever PATH says. With the host's dash as /bin/sh, a `cp` shim that
        // drops the option (busybox cp without -p preserves nothing anyway) is found on PATH.
        if let Some(loader) = host_dash_files() {
            for (from, name) in [
                ("/bin/dash", "dash"),
                ("/lib/x86_64-linux-gnu/libc.so.6", "libc.so.6"),
                (loader.as_str(), "ld.so"),
            ] {
                std::fs::copy(from, context.join(name)).unwrap();
            }
            std::fs::write(
                context.join("cp"),
                "#!/bin/sh\nfor a; do shift; case \"$a\" in --no-preserve=*) ;; *) set -- \"$@\" \"$a\";; esac; done\nexec /bin/busybox cp \"$@\"\n",
            )
            .unwrap();
            make_executable(&context.join("cp"));
            dockerfile.push_str(
                "COPY libc.so.6 /lib/x86_64-linux-gnu/libc.so.6\nCOPY ld.so /lib64/ld-linux-x86-64.so.2\n\
                 COPY dash /bin/dash\nRUN [\"/bin/busybox\", \"ln\", \"-sf\", \"dash\", \"/bin/sh\"]\n\
                 COPY cp /usr/local/bin/cp\nENV PATH=/usr/local/bin:/bin:/usr/bin\n",
            );
        }
        std::fs::write(context.join("Dockerfile.agent"), dockerfile).unwrap();
        std::fs::write(context.join("claude"), "#!/bin/sh\nexec /bin/sh \"$@\"\n").unwrap();
        let suffix = base.rsplit(':').next().unwrap_or("dev");
        let tag = format!("agentc-test/launcher-agent:{suffix}");
        let profile = dir.path().join("launcher-build.toml");
        std::fs::write(
            &profile,
            format!(
                "name = \"launcher-build\"\nagent = \"custom\"\n\n[image]\nref = \"{tag}\"\nbuild_context = \"image\"\ndockerfile = \"Dockerfile.agent\"\n"
            ),
        )
        .unwrap();
        // `docker build` keeps the file mode of the context; make the wrapper executable.
        make_executable(&context.join("claude"));
        let output = agentc_in(dir.path(), &["build", &profile.to_string_lossy()], &[]);
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        assert!(
            text(&output.stdout).contains(&format!("built {tag}")),
            "{}",
            describe(&output)
        );
        assert!(docker(&["image", "inspect", &tag]).is_ok(), "the image exists");
        tag
    })
    .clone()
}

/// The host's dash and its loader (`/lib64/ld-linux-x86-64.so.2` resolved), when this is an
/// x86-64 glibc host with dash; the seed test needs them.
fn host_dash_files() -> Option<String> {
    let loader = std::fs::canonicalize("/lib64/ld-linux-x86-64.so.2").ok()?;
    let present =
        Path::new("/bin/dash").is_file() && Path::new("/lib/x86_64-linux-gnu/libc.so.6").is_file();
    present.then(|| loader.to_string_lossy().into_owned())
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A live test's profile name, temporary directory and leak check.
struct Lab {
    profile: String,
    dir: tempfile::TempDir,
    volumes: Vec<String>,
}

impl Lab {
    fn new(profile: &str) -> Lab {
        let lab = Lab {
            profile: profile.to_string(),
            dir: tempfile::tempdir().unwrap(),
            volumes: Vec::new(),
        };
        assert!(
            lab.containers().is_empty(),
            "{profile}: containers left by an earlier run: {:?}",
            lab.containers()
        );
        lab
    }

    /// Writes the profile file (its `name` is the lab's) and returns its path.
    fn profile(&self, body: &str) -> String {
        let path = self.dir.path().join(format!("{}.toml", self.profile));
        std::fs::write(&path, format!("name = \"{}\"\n{body}", self.profile)).unwrap();
        path.to_string_lossy().into_owned()
    }

    /// A volume the test creates (through a launch); removed at the end.
    fn volume(&mut self, name: &str) -> String {
        self.volumes.push(name.to_string());
        name.to_string()
    }

    fn run(&self, args: &[&str]) -> Output {
        agentc_in(self.dir.path(), args, &[])
    }

    fn containers(&self) -> Vec<String> {
        let filter = format!("label=io.agentc.profile={}", self.profile);
        docker(&["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"])
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Asserts nothing of the profile is left, then removes its volumes (which must exist
    /// only because a launch made them) and asserts they are gone.
    fn finish(mut self) {
        let left = self.containers();
        for volume in std::mem::take(&mut self.volumes) {
            docker(&["volume", "rm", "--force", &volume]).unwrap();
            assert!(docker(&["volume", "inspect", &volume]).is_err(), "{volume}");
        }
        assert!(left.is_empty(), "{}: left behind {left:?}", self.profile);
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for container in self.containers() {
            let _ = docker(&["rm", "--force", &container]);
        }
        for volume in &self.volumes {
            let _ = docker(&["volume", "rm", "--force", volume]);
        }
    }
}

#[test]
fn every_launching_command_has_help_with_an_example() {
    let _turn = crate::common::turn(file!());
    for command in ["run", "seed", "build", "ps", "rm", "verify"] {
        let output = agentc(&[command, "--help"]);
        assert_eq!(output.status.code(), Some(0), "{command}");
        let help = text(&output.stdout);
        assert!(help.contains("  agentc "), "{command}: {help}");
    }
    let help = text(&agentc(&["--help"]).stdout);
    for status in [
        "1 `verify`",
        "125 docker",
        "130/143",
        "container's own exit code",
    ] {
        assert!(
            help.contains(status),
            "top-level help documents {status}:\n{help}"
        );
    }
}

#[test]
fn launching_usage_errors_exit_2() {
    let _turn = crate::common::turn(file!());
    for args in [
        vec!["rm"],
        vec!["rm", "x", "--all"],
        vec!["seed", "fixtures/valid/claude-seeds.toml"],
        vec![
            "seed",
            "fixtures/valid/claude-seeds.toml",
            "--all",
            "--target",
            "/home/claude/x",
        ],
        vec![
            "build",
            "fixtures/valid/sandbox-build.toml",
            "--backend",
            "api",
        ],
    ] {
        let output = agentc(&args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            describe(&output)
        );
    }
    let output = agentc(&[
        "build",
        "fixtures/valid/sandbox-build.toml",
        "--backend",
        "api",
    ]);
    assert!(
        text(&output.stderr).contains("named build contexts need BuildKit"),
        "{}",
        describe(&output)
    );
}

#[test]
fn an_unreachable_daemon_is_exit_125_with_a_hint() {
    let _turn = crate::common::turn(file!());
    let socket = "unix:///nonexistent/agentc-launcher.sock";
    for args in [
        vec!["ps"],
        vec!["rm", "anything"],
        vec![
            "run",
            "fixtures/valid/sandbox-minimal.toml",
            "--backend",
            "api",
        ],
    ] {
        let output = agentc_in(&repo_root(), &args, &[("DOCKER_HOST", socket)]);
        assert_eq!(
            output.status.code(),
            Some(125),
            "{args:?}: {}",
            describe(&output)
        );
        assert!(
            text(&output.stderr).contains("cannot connect to the docker daemon"),
            "{args:?}: {}",
            describe(&output)
        );
    }
}

#[test]
fn offline_commands_ignore_an_unreachable_daemon() {
    let _turn = crate::common::turn(file!());
    let output = agentc_in(
        &repo_root(),
        &[
            "render",
            "fixtures/valid/sandbox-minimal.toml",
            "--backend",
            "api",
            "--format",
            "json",
        ],
        &[("DOCKER_HOST", "unix:///nonexistent/agentc-launcher.sock")],
    );
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
}

#[test]
fn live_run_returns_the_exit_code_through_both_backends_and_leaves_nothing() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_run_returns_the_exit_code_through_both_backends") {
        return;
    }
    let image = agent_image();
    let mut lab = Lab::new("launcher-run-exit");
    lab.volume("launcher-run-exit-home");
    let profile =
        lab.profile("agent = \"claude-code\"\nhome_volume = \"launcher-run-exit-home\"\n");
    for backend in ["cli", "api"] {
        let output = lab.run(&[
            "run",
            &profile,
            "--backend",
            backend,
            "--image",
            &image,
            "--",
            "-c",
            "echo out-$0; echo err >&2; exit 7",
        ]);
        assert_eq!(
            output.status.code(),
            Some(7),
            "{backend}: {}",
            describe(&output)
        );
        assert!(
            text(&output.stdout).contains("out-/bin/sh"),
            "{backend}: {}",
            describe(&output)
        );
        assert!(
            text(&output.stderr).contains("err"),
            "{backend}: {}",
            describe(&output)
        );
        assert!(
            lab.containers().is_empty(),
            "{backend}: {:?}",
            lab.containers()
        );
    }
    lab.finish();
}

/// The rows of `agentc verify NAME --format json`, as `CHECK -> STATUS SEEN`, and its exit code.
fn verify_rows(lab: &Lab, name: &str, backend: &str) -> (Option<i32>, BTreeMap<String, String>) {
    let output = lab.run(&["verify", name, "--backend", backend, "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("{error}: {}", describe(&output)));
    let rows = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["check"].as_str().unwrap_or_default().to_string(),
                format!(
                    "{} {}",
                    row["status"].as_str().unwrap_or_default(),
                    row["seen"].as_str().unwrap_or_default()
                ),
            )
        })
        .collect();
    (output.status.code(), rows)
}

/// `agentc verify NAME` reads a running sandbox from the host side (nothing runs in it) and
/// compares it with its profile: every row passes after the launch; a limit changed behind
/// agentc's back, a proxy stopped and a profile edited since are each a failed row (exit 1).
/// Through both backends.
#[test]
fn live_verify_name_reads_a_running_sandbox_from_the_host_and_fails_on_drift() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_verify_name_reads_a_running_sandbox_from_the_host") {
        return;
    }
    let lab = Lab::new("launcher-verify-name");
    for backend in ["cli", "api"] {
        let body = |memory: &str| {
            format!(
                "agent = \"custom\"\n[image]\nref = \"{}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n\
                 [resources]\nmemory = \"{memory}\"\n[egress]\nhosts = [\"allowed.test\"]\n",
                test_image()
            )
        };
        let profile = lab.profile(&body("512m"));
        let started = lab.run(&["run", &profile, "--backend", backend, "--no-warnings"]);
        assert_eq!(started.status.code(), Some(0), "{}", describe(&started));
        let name = text(&started.stdout)
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string();
        let (code, rows) = verify_rows(&lab, &name, backend);
        assert_eq!(code, Some(0), "{backend}: {rows:#?}");
        for row in [
            "spec digest",
            "no new privileges",
            "pids limit",
            "egress proxy",
            "root filesystem",
        ] {
            assert!(
                rows.get(row).is_some_and(|seen| seen.starts_with("ok ")),
                "{backend} {row}: {rows:#?}"
            );
        }
        // A limit changed behind agentc's back.
        docker(&["update", "--pids-limit", "100", &name]).unwrap();
        let (code, rows) = verify_rows(&lab, &name, backend);
        assert_eq!(code, Some(1), "{backend}: {rows:#?}");
        assert_eq!(rows["pids limit"], "fail 100", "{backend}: {rows:#?}");
        // Its proxy stopped by hand (its restart policy leaves it stopped).
        docker(&["stop", &format!("{name}-egress-proxy")]).unwrap();
        let (_, rows) = verify_rows(&lab, &name, backend);
        assert!(
            rows["egress proxy"].starts_with("fail down"),
            "{backend}: {rows:#?}"
        );
        // The profile edited since the launch.
        lab.profile(&body("256m"));
        let (code, rows) = verify_rows(&lab, &name, backend);
        assert_eq!(code, Some(1));
        assert!(
            rows["spec digest"].starts_with("fail "),
            "{backend}: {rows:#?}"
        );
        assert_eq!(
            rows["memory limit (bytes)"], "fail 536870912",
            "{backend}: {rows:#?}"
        );
        lab.profile(&body("512m"));
        let removed = lab.run(&["rm", &name]);
        assert_eq!(removed.status.code(), Some(0), "{}", describe(&removed));
    }
    // No such sandbox, and no profile file: the session commands' refusal.
    let missing = lab.run(&["verify", "launcher-verify-name-nothing"]);
    assert_ne!(missing.status.code(), Some(0), "{}", describe(&missing));
    lab.finish();
}

/// A docker configuration directory whose current context is `name`, with its endpoint `host`.
fn docker_context(dir: &Path, name: &str, host: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    let config = dir.join("docker-config");
    let digest: String = Sha256::digest(name.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let meta = config.join("contexts").join("meta").join(digest);
    std::fs::create_dir_all(&meta).unwrap();
    std::fs::write(
        config.join("config.json"),
        format!("{{\"currentContext\": \"{name}\"}}"),
    )
    .unwrap();
    std::fs::write(
        meta.join("meta.json"),
        format!("{{\"Name\": \"{name}\", \"Metadata\": {{}}, \"Endpoints\": {{\"docker\": {{\"Host\": \"{host}\", \"SkipTLSVerify\": false}}}}}}"),
    )
    .unwrap();
    config
}

/// Without `--backend`, a command drives the Engine API where it answers, found as the docker
/// command finds it (here the current context of DOCKER_CONFIG, a socket of the test's own
/// leading to the daemon), and says so with `--verbose`; where that endpoint does not answer it
/// falls back to the command line, which meets the same endpoint. `doctor` names the choice.
#[test]
fn live_the_default_backend_is_the_engine_api_of_the_docker_context() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_the_default_backend_is_the_engine_api_of_the_docker_context") {
        return;
    }
    let lab = Lab::new("launcher-context");
    let socket = lab.dir.path().join("engine.sock");
    std::os::unix::fs::symlink("/var/run/docker.sock", &socket).unwrap();
    let host = format!("unix://{}", socket.display());
    let config = docker_context(lab.dir.path(), "agentc-test", &host);
    let config = config.to_string_lossy().into_owned();
    let env = [("DOCKER_CONFIG", config.as_str()), ("DOCKER_HOST", "")];
    let profile = lab.profile(&format!(
        "agent = \"custom\"\n[image]\nref = \"{}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n[egress]\nmode = \"deny\"\n",
        test_image()
    ));
    let started = agentc_in(lab.dir.path(), &["--verbose", "run", &profile], &env);
    assert_eq!(started.status.code(), Some(0), "{}", describe(&started));
    assert!(
        text(&started.stderr).contains(&format!(
            "backend: api (the docker Engine API at {host} answers)"
        )),
        "{}",
        describe(&started)
    );
    assert_eq!(lab.containers().len(), 1);
    let doctor = agentc_in(lab.dir.path(), &["doctor"], &env);
    assert!(
        text(&doctor.stdout).contains(&format!(
            "--backend auto (the default) uses api (the docker Engine API at {host} answers)"
        )),
        "{}",
        describe(&doctor)
    );
    let removed = agentc_in(lab.dir.path(), &["rm", &profile], &env);
    assert_eq!(removed.status.code(), Some(0), "{}", describe(&removed));
    // A context whose endpoint does not answer: the command line, which says why it failed.
    let missing = format!("unix://{}", lab.dir.path().join("missing.sock").display());
    let config = docker_context(&lab.dir.path().join("other"), "agentc-gone", &missing);
    let config = config.to_string_lossy().into_owned();
    let env = [("DOCKER_CONFIG", config.as_str()), ("DOCKER_HOST", "")];
    let listed = agentc_in(lab.dir.path(), &["--verbose", "ps"], &env);
    assert!(
        text(&listed.stderr).contains(&format!(
            "backend: cli (the docker Engine API cannot be reached: {missing}:"
        )),
        "{}",
        describe(&listed)
    );
    assert_ne!(listed.status.code(), Some(0), "{}", describe(&listed));
    lab.finish();
}

/// A preset runs with an init as PID 1 (`image.init` unset): `agentc stop` ends its agent with
/// the SIGTERM (exit 143, the init passing the agent's status on) instead of the engine killing
/// a PID 1 that ignores it after the timeout (137); `image.init = false` keeps the agent PID 1,
/// and so that kill. Through both backends.
#[test]
fn live_a_preset_runs_with_an_init_so_stop_ends_its_agent_with_sigterm() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_preset_runs_with_an_init_so_stop_ends_its_agent_with_sigterm") {
        return;
    }
    let image = agent_image();
    let mut lab = Lab::new("launcher-init");
    lab.volume("launcher-init-home");
    for backend in ["cli", "api"] {
        for (image_table, exit_code) in [("", "143"), ("[image]\ninit = false\n", "137")] {
            let profile = lab.profile(&format!(
                "agent = \"claude-code\"\nhome_volume = \"launcher-init-home\"\n{image_table}"
            ));
            let name = format!("launcher-init-{backend}");
            let started = lab.run(&[
                "run",
                &profile,
                "--backend",
                backend,
                "--image",
                &image,
                "--detach",
                "--name",
                &name,
                "--no-warnings",
                "--",
                "-c",
                "sleep 600",
            ]);
            assert_eq!(started.status.code(), Some(0), "{}", describe(&started));
            let stopped = lab.run(&["stop", "--backend", backend, "--time", "2", &name]);
            assert_eq!(stopped.status.code(), Some(0), "{}", describe(&stopped));
            let state = docker(&[
                "inspect",
                "--format",
                "{{.State.Status}} {{.State.ExitCode}} {{.HostConfig.Init}}",
                &name,
            ])
            .unwrap();
            // Without an init the engines differ in saying so (`false`, or no value).
            let state = state.trim().replace("<nil>", "false");
            let init = if exit_code == "143" { "true" } else { "false" };
            assert_eq!(
                state,
                format!("exited {exit_code} {init}"),
                "{backend} {image_table:?}"
            );
            let removed = lab.run(&["rm", &name]);
            assert_eq!(removed.status.code(), Some(0), "{}", describe(&removed));
        }
    }
    lab.finish();
}

/// An attached `--rm` run whose allowlist is enforced outside it: the workload runs on its
/// isolated network with the proxy as its DNS server, its exit code comes back, and the proxy
/// and the network are gone afterwards, through both backends.
#[test]
fn live_run_behind_the_egress_proxy_leaves_nothing() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_run_behind_the_egress_proxy_leaves_nothing") {
        return;
    }
    let image = agent_image();
    let mut lab = Lab::new("launcher-egress-run");
    lab.volume("launcher-egress-run-home");
    let profile = lab.profile(
        "agent = \"claude-code\"\nhome_volume = \"launcher-egress-run-home\"\n\n\
         [egress]\nhosts = [\"allowed.test\"]\n",
    );
    let networks = || {
        let filter = "label=io.agentc.profile=launcher-egress-run";
        docker(&["network", "ls", "--filter", filter, "--format", "{{.Name}}"]).unwrap_or_default()
    };
    for backend in ["cli", "api"] {
        let output = lab.run(&[
            "run",
            &profile,
            "--backend",
            backend,
            "--image",
            &image,
            "--",
            "-c",
            "grep nameserver /etc/resolv.conf; echo proxy=$HTTPS_PROXY; exit 3",
        ]);
        assert_eq!(
            output.status.code(),
            Some(3),
            "{backend}: {}",
            describe(&output)
        );
        let out = text(&output.stdout);
        assert!(out.contains("nameserver 127.0.0.11"), "{backend}: {out}");
        assert!(out.contains("proxy=http://10.213."), "{backend}: {out}");
        assert!(
            lab.containers().is_empty(),
            "{backend}: {:?}",
            lab.containers()
        );
        assert_eq!(networks(), "", "{backend}: networks left");
    }
    lab.finish();
}

/// SIGTERM to `agentc run` while the workload runs behind its egress proxy: agentc ends the
/// workload and removes it, the proxy and the network, through both backends.
#[test]
fn live_sigterm_during_a_run_behind_the_egress_proxy_leaves_nothing() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_sigterm_during_a_run_behind_the_egress_proxy") {
        return;
    }
    let image = agent_image();
    let mut lab = Lab::new("launcher-egress-term");
    lab.volume("launcher-egress-term-home");
    let profile = lab.profile(
        "agent = \"claude-code\"\nhome_volume = \"launcher-egress-term-home\"\n\n\
         [egress]\nhosts = [\"allowed.test\"]\n",
    );
    let networks = || {
        let filter = "label=io.agentc.profile=launcher-egress-term";
        docker(&["network", "ls", "--filter", filter, "--format", "{{.Name}}"]).unwrap_or_default()
    };
    for backend in ["cli", "api"] {
        let child = Command::new(env!("CARGO_BIN_EXE_agentc"))
            .args([
                "run",
                &profile,
                "--backend",
                backend,
                "--image",
                &image,
                "--",
            ])
            .args(["-c", "echo started; sleep 60"])
            .current_dir(lab.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("agentc runs");
        // Wait for the workload itself (kind run), which starts only after the proxy is healthy.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
        loop {
            let running = docker(&[
                "ps",
                "--filter",
                "label=io.agentc.profile=launcher-egress-term",
                "--filter",
                "label=io.agentc.kind=run",
                "--format",
                "{{.Names}}",
            ])
            .unwrap_or_default();
            if !running.is_empty() {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{backend}: no workload"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        assert!(!networks().is_empty(), "{backend}: no isolated network");
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let output = child.wait_with_output().expect("agentc ends");
        assert_eq!(
            output.status.code(),
            Some(143),
            "{backend}: {}",
            describe(&output)
        );
        assert!(
            lab.containers().is_empty(),
            "{backend}: {:?}",
            lab.containers()
        );
        assert_eq!(networks(), "", "{backend}: networks left");
    }
    lab.finish();
}

/// `--verbose` logs every step of a real launch through both backends (the resolved launch,
/// the docker command or the Engine API calls) and names the secrets it passes, while no
/// byte of a secret's value reaches agentc's stdout or stderr. The container proves it got
/// the value without printing it.
#[test]
fn live_verbose_run_logs_each_step_and_names_secrets_without_their_values() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_verbose_run_logs_each_step_and_names_secrets_without_their_values") {
        return;
    }
    let image = agent_image();
    let mut lab = Lab::new("launcher-verbose");
    lab.volume("launcher-verbose-home");
    let profile = lab.profile(
        "agent = \"claude-code\"\nhome_volume = \"launcher-verbose-home\"\n\n[provider]\nkind = \"anthropic\"\napi_key_env = \"AGENTC_TEST_PROVIDER_KEY\"\n",
    );
    let secret = "sk-verbose-8d1f3c0a-sentinel";
    // The container reports the value's length: proof that it arrived, without the value.
    let check = "echo key-length=${#AGENTC_TEST_PROVIDER_KEY}";
    for (backend, steps) in [
        (
            "cli",
            &["resolved the run launch", "running docker run "][..],
        ),
        (
            "api",
            &[
                "resolved the run launch",
                "connected to the daemon",
                "secrets passed from this environment, by name: AGENTC_TEST_PROVIDER_KEY",
                "created container",
                "attaching to",
                "starting",
                "exited with code 0",
            ][..],
        ),
    ] {
        let output = agentc_in(
            lab.dir.path(),
            &[
                "--verbose",
                "run",
                &profile,
                "--backend",
                backend,
                "--image",
                &image,
                "--",
                "-c",
                check,
            ],
            &[("AGENTC_TEST_PROVIDER_KEY", secret)],
        );
        let described = describe(&output);
        assert_eq!(output.status.code(), Some(0), "{backend}: {described}");
        let stderr = text(&output.stderr);
        for step in steps {
            assert!(
                stderr.contains(&format!("agentc: {step}")) || stderr.contains(step),
                "{backend}: no {step:?} in the log: {described}"
            );
        }
        assert!(
            stderr.contains("secrets by name: AGENTC_TEST_PROVIDER_KEY"),
            "{backend}: {described}"
        );
        // The value reached the container, and no byte sequence of it reached agentc's output.
        assert!(
            text(&output.stdout).contains(&format!("key-length={}", secret.len())),
            "{backend}: {described}"
        );
        assert!(
            !described.contains(secret),
            "{backend}: the value leaked: {described}"
        );
        assert!(
            lab.containers().is_empty(),
            "{backend}: {:?}",
            lab.containers()
        );
    }
    lab.finish();
}

#[test]
fn live_a_missing_image_is_refused_without_pulling() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_missing_image_is_refused_without_pulling") {
        return;
    }
    let mut lab = Lab::new("launcher-no-image");
    let profile =
        lab.profile("agent = \"claude-code\"\nhome_volume = \"launcher-no-image-home\"\n");
    for backend in ["cli", "api"] {
        let output = lab.run(&[
            "run",
            &profile,
            "--backend",
            backend,
            "--image",
            "agentc-test/launcher-no-such-image:1",
        ]);
        assert_eq!(
            output.status.code(),
            Some(125),
            "{backend}: {}",
            describe(&output)
        );
        assert!(
            text(&output.stderr).contains("agentc never pulls"),
            "{}",
            describe(&output)
        );
    }
    // Nothing was created, not even the home volume.
    assert!(docker(&["volume", "inspect", "launcher-no-image-home"]).is_err());
    lab.volume("launcher-no-image-home");
    lab.finish();
}

#[test]
fn live_a_detached_sandbox_shows_in_ps_with_its_address_and_rm_removes_it() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_detached_sandbox_shows_in_ps") {
        return;
    }
    let image = test_image();
    for backend in ["cli", "api"] {
        let lab = Lab::new(&format!("launcher-detached-{backend}"));
        let profile = lab.profile(&format!(
            "agent = \"custom\"\n\n[image]\nref = \"{image}\"\ncommand = [\"sleep\", \"300\"]\n\n[network]\npublish = [8080]\n"
        ));
        let output = lab.run(&["run", &profile, "--backend", backend]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{backend}: {}",
            describe(&output)
        );
        let stdout = text(&output.stdout);
        let name = format!(
            "agentc-sandbox-launcher-{}-launcher-detached-{backend}",
            current_uid()
        );
        assert!(
            stdout.contains(&format!("started {name} (")),
            "{backend}: {stdout}"
        );
        let address = stdout
            .lines()
            .find_map(|line| line.trim().strip_prefix("8080/tcp  "))
            .unwrap_or_else(|| panic!("{backend}: no address line in {stdout}"))
            .to_string();
        assert!(address.starts_with("127.0.0.1:"), "{address}");
        let published = docker(&["port", &name, "8080/tcp"]).unwrap();
        assert!(
            published.lines().any(|line| line == address),
            "{published} vs {address}"
        );

        let ps = agentc(&["ps"]);
        assert_eq!(ps.status.code(), Some(0), "{}", describe(&ps));
        let row = text(&ps.stdout)
            .lines()
            .find(|line| line.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{backend}: {name} missing from ps:\n{}", text(&ps.stdout)))
            .to_string();
        let columns: Vec<&str> = row
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(columns[1], lab.profile, "{row}");
        assert_eq!(columns[2], "sandbox", "{row}");
        assert!(columns[3].starts_with("Up"), "{row}");
        assert_eq!(columns[4], "-", "no isolation floor: {row}");
        assert_eq!(columns[5], "-", "no egress proxy: {row}");
        assert_eq!(columns[6], "default", "{row}");
        assert_eq!(columns[7], format!("8080/tcp -> {address}"), "{row}");
        assert_eq!(columns[8].len(), 12, "the spec digest: {row}");
        assert_eq!(columns[9], "current", "the profile file: {row}");

        let rm = agentc(&["rm", &name]);
        assert_eq!(rm.status.code(), Some(0), "{}", describe(&rm));
        assert_eq!(text(&rm.stdout), format!("removed {name}\n"));
        let ps = agentc(&["ps", "--all"]);
        assert!(!text(&ps.stdout).contains(&name), "{}", describe(&ps));
        lab.finish();
    }
}

/// The spec digest a command printed: `plan`'s 12-digit prefix line, `render`'s label,
/// `lock`'s `spec_digest`, `-v`'s resolved line.
fn digest_after<'a>(text: &'a str, marker: &str) -> &'a str {
    let start = text
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in {text}"))
        + marker.len();
    let rest = &text[start..];
    let end = rest
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(rest.len());
    &rest[..end]
}

/// Regression: `plan`, `render`, `lock` and `-v` printed one spec digest and the running
/// container's label and `ps` another, because `run` rewrote the resolved spec (detach, name,
/// terminal, profile record) and recomputed the digest by hand. Now the spec `resolve` returns
/// is launched as it is: a detached sandbox that mounts its workspace, a preset `run
/// --detach`, and each copy of `--count` carry the digest `plan` and `lock` show, through
/// both backends.
#[test]
fn live_one_digest_in_plan_render_lock_verbose_the_label_and_ps() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_one_digest_in_plan_render_lock_verbose_the_label_and_ps") {
        return;
    }
    let image = test_image();
    let agent = agent_image();
    for backend in ["cli", "api"] {
        let mut lab = Lab::new(&format!("launcher-digest-{backend}"));
        let sandbox = lab.profile(&format!(
            "agent = \"custom\"\n\n[image]\nref = \"{image}\"\ncommand = [\"sleep\", \"300\"]\n\n\
             [workspace]\nmount = true\n"
        ));
        let preset_dir = lab.dir.path().join("preset");
        std::fs::create_dir(&preset_dir).unwrap();
        let preset = preset_dir.join(format!("{}.toml", lab.profile));
        let home = lab.volume(&format!("launcher-digest-{backend}-home"));
        std::fs::write(
            &preset,
            format!(
                "name = \"{}\"\nagent = \"claude-code\"\nhome_volume = \"{home}\"\n\
                 [image]\nref = \"{agent}\"\n[egress]\nmode = \"deny\"\n",
                lab.profile
            ),
        )
        .unwrap();
        let preset = preset.to_string_lossy().into_owned();
        let ok = |output: Output| -> String {
            assert_eq!(
                output.status.code(),
                Some(0),
                "{backend}: {}",
                describe(&output)
            );
            text(&output.stdout) + &text(&output.stderr)
        };
        for (profile, run) in [
            (
                &sandbox,
                vec!["run", sandbox.as_str(), "--backend", backend],
            ),
            (
                &preset,
                vec!["run", preset.as_str(), "--backend", backend, "--detach"],
            ),
        ] {
            let plan = ok(lab.run(&["plan", profile]));
            let render = ok(lab.run(&["render", profile]));
            ok(lab.run(&["lock", profile]));
            let lock_file = Path::new(profile.as_str()).with_extension("lock");
            let lock = std::fs::read_to_string(&lock_file).unwrap();
            let digest = digest_after(&lock, "spec_digest = \"").to_string();
            assert_eq!(digest.len(), 64, "{lock}");
            assert!(
                digest.starts_with(digest_after(&plan, "(spec digest ")),
                "{plan}"
            );
            assert_eq!(digest_after(&render, "io.agentc.spec-digest="), digest);

            let mut verbose = vec!["--verbose"];
            verbose.extend(&run);
            let started = ok(lab.run(&verbose));
            assert_eq!(digest_after(&started, "spec digest "), digest, "{started}");
            let name = started
                .lines()
                .find_map(|line| line.strip_prefix("started "))
                .and_then(|rest| rest.split(' ').next())
                .unwrap_or_else(|| panic!("{backend}: no started line in {started}"))
                .to_string();
            let label = docker(&[
                "inspect",
                "--format",
                "{{index .Config.Labels \"io.agentc.spec-digest\"}}",
                &name,
            ])
            .unwrap();
            assert_eq!(label, digest, "{backend}: the label of {name}");
            let ps = ok(agentc(&["ps", "--format", "json"]));
            let rows: serde_json::Value = serde_json::from_str(&ps).unwrap();
            let row = rows
                .as_array()
                .unwrap()
                .iter()
                .find(|row| row["name"] == name.as_str())
                .unwrap_or_else(|| panic!("{backend}: {name} missing from {ps}"));
            assert_eq!(row["spec_digest"], digest.as_str(), "{backend}: {row}");
            let table = ok(agentc(&["ps"]));
            assert!(
                table
                    .lines()
                    .any(|line| line.starts_with(&format!("{name} "))
                        && line.contains(&digest[..12])),
                "{backend}: {table}"
            );
            ok(agentc(&["rm", &name]));
        }
        if backend == "api" {
            let copies = ok(lab.run(&["run", &sandbox, "--backend", "api", "--count", "2"]));
            let lock = std::fs::read_to_string(Path::new(&sandbox).with_extension("lock")).unwrap();
            let digest = digest_after(&lock, "spec_digest = \"");
            let names = lab.containers();
            assert_eq!(names.len(), 2, "{copies}");
            for name in &names {
                let label = docker(&[
                    "inspect",
                    "--format",
                    "{{index .Config.Labels \"io.agentc.spec-digest\"}}",
                    name,
                ])
                .unwrap();
                assert_eq!(label, digest, "copy {name}");
            }
            ok(agentc(&["rm", "--all", "--profile", &lab.profile]));
        }
        lab.finish();
    }
}

#[test]
fn rm_profile_names_no_container_besides() {
    let _turn = crate::common::turn(file!());
    // `--profile` needs no `--all` (issue 20), but names no container besides.
    let output = agentc(&["rm", "--profile", "x", "some-sandbox"]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "--profile with names: {}",
        describe(&output)
    );
}

/// `run --count` starts numbered copies through either backend (the default, cli, too: it
/// was refused with "add --backend api"); a fleet whose names are taken starts nothing and
/// leaves the running copies alone; `rm --all --profile` removes only the profile's own.
fn run_count_fleet(backend: &str) {
    let image = test_image();
    let lab = Lab::new(&format!("launcher-fleet-{backend}"));
    let other = Lab::new(&format!("launcher-other-{backend}"));
    let body = format!(
        "agent = \"custom\"\n\n[image]\nref = \"{image}\"\ncommand = [\"sleep\", \"300\"]\n"
    );
    let profile = lab.profile(&body);
    let mut args = vec!["run", &profile, "--count", "3", "--jobs", "2"];
    if backend == "api" {
        args.extend(["--backend", "api"]);
    }
    let output = lab.run(&args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{backend}: {}",
        describe(&output)
    );
    let base = format!(
        "agentc-sandbox-launcher-{}-launcher-fleet-{backend}",
        current_uid()
    );
    let names: Vec<String> = (1..=3).map(|index| format!("{base}-{index}")).collect();
    let stdout = text(&output.stdout);
    for name in &names {
        assert!(
            stdout.contains(&format!("started {name} (")),
            "{backend}: {stdout}"
        );
        assert_eq!(
            docker(&["inspect", "--format", "{{.State.Running}}", name]).unwrap(),
            "true",
            "{backend}: {name}"
        );
    }
    let mut containers = lab.containers();
    containers.sort();
    assert_eq!(containers, names, "{backend}");

    // The same fleet again: every name is taken, so no copy starts, the three running ones
    // are left alone, and the error names the copies that failed.
    let again = lab.run(&["run", &profile, "--backend", backend, "--count", "3"]);
    assert_eq!(
        again.status.code(),
        Some(125),
        "{backend}: {}",
        describe(&again)
    );
    let stderr = text(&again.stderr);
    assert!(
        stderr.contains("copies failed to launch"),
        "{backend}: {stderr}"
    );
    assert!(
        stderr.contains(&format!("{base}-1: ")),
        "{backend}: {stderr}"
    );
    assert!(stderr.contains("is already in use"), "{backend}: {stderr}");
    assert_eq!(lab.containers().len(), 3, "{backend}: {stderr}");

    // A fleet that fails after its first copy started: that copy is removed again.
    let _ = docker(&["rm", "--force", &names[1]]);
    let rollback = lab.run(&["rm", &names[0]]);
    assert_eq!(
        rollback.status.code(),
        Some(0),
        "{backend}: {}",
        describe(&rollback)
    );
    let partial = lab.run(&[
        "run",
        &profile,
        "--backend",
        backend,
        "--count",
        "3",
        "--jobs",
        "1",
    ]);
    assert_eq!(
        partial.status.code(),
        Some(125),
        "{backend}: {}",
        describe(&partial)
    );
    let stderr = text(&partial.stderr);
    assert!(
        stderr.contains(&format!("{base}-3: ")),
        "{backend}: {stderr}"
    );
    assert_eq!(
        lab.containers(),
        vec![names[2].clone()],
        "{backend}: {stderr}"
    );

    // Another profile's sandbox survives `rm --all --profile`.
    let other_profile = other.profile(&body);
    let output = other.run(&["run", &other_profile, "--backend", backend]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{backend}: {}",
        describe(&output)
    );
    let fleet = format!("launcher-fleet-{backend}");
    let rm = agentc(&["rm", "--all", "--profile", &fleet]);
    assert_eq!(rm.status.code(), Some(0), "{backend}: {}", describe(&rm));
    assert_eq!(
        text(&rm.stdout),
        format!("removed {}\n", names[2]),
        "{backend}"
    );
    assert!(lab.containers().is_empty(), "{backend}");
    assert_eq!(other.containers().len(), 1, "{backend}");
    let rm = agentc(&[
        "rm",
        "--all",
        "--profile",
        &format!("launcher-other-{backend}"),
    ]);
    assert_eq!(rm.status.code(), Some(0), "{backend}: {}", describe(&rm));
    lab.finish();
    other.finish();
}

#[test]
fn live_run_count_starts_numbered_copies_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    if require_daemon("live_run_count_starts_numbered_copies_cli") {
        run_count_fleet("cli");
    }
}

#[test]
fn live_run_count_starts_numbered_copies_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    if require_daemon("live_run_count_starts_numbered_copies_api") {
        run_count_fleet("api");
    }
}

/// `run --count` with an isolation floor: the floor is met once for the fleet (one line on
/// stderr) and every copy runs under the chosen runtime, through both backends (the api
/// backend refused the copies: "isolation.min cannot be launched").
#[test]
fn live_run_count_meets_the_isolation_floor_once_through_both_backends() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_run_count_meets_the_isolation_floor_once") {
        return;
    }
    if !docker(&["info", "--format", "{{json .Runtimes}}"])
        .is_ok_and(|runtimes| runtimes.contains("\"runsc\""))
    {
        eprintln!("skipping live_run_count_meets_the_isolation_floor_once: no runsc runtime");
        return;
    }
    let image = test_image();
    for backend in ["cli", "api"] {
        let lab = Lab::new(&format!("launcher-floor-{backend}"));
        let profile = lab.profile(&format!(
            "agent = \"custom\"\n\n[image]\nref = \"{image}\"\ncommand = [\"sleep\", \"300\"]\n\n[security.isolation]\nmin = \"gvisor\"\n"
        ));
        let output = lab.run(&["run", &profile, "--backend", backend, "--count", "2"]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{backend}: {}",
            describe(&output)
        );
        let stderr = text(&output.stderr);
        assert_eq!(
            stderr
                .matches("agentc: isolation: gvisor under runtime runsc")
                .count(),
            1,
            "{backend}: {stderr}"
        );
        let names = lab.containers();
        assert_eq!(names.len(), 2, "{backend}: {}", describe(&output));
        for name in &names {
            let runtime = docker(&["inspect", "--format", "{{.HostConfig.Runtime}}", name]);
            assert_eq!(runtime.unwrap(), "runsc", "{backend}: {name}");
        }
        let rm = agentc(&["rm", "--all", "--profile", &lab.profile]);
        assert_eq!(rm.status.code(), Some(0), "{backend}: {}", describe(&rm));
        lab.finish();
    }
}

fn current_uid() -> String {
    let output = Command::new("id").arg("-u").output().unwrap();
    text(&output.stdout).trim().to_string()
}

#[test]
fn live_rm_refuses_a_container_agentc_did_not_launch() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_rm_refuses_a_container_agentc_did_not_launch") {
        return;
    }
    let image = test_image();
    let name = "launcher-foreign";
    let _ = docker(&["rm", "--force", name]);
    docker(&["create", "--name", name, "--network=none", &image, "true"]).unwrap();
    let output = agentc(&["rm", name]);
    let still_there = docker(&["inspect", "--type", "container", name]).is_ok();
    let _ = docker(&["rm", "--force", name]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    assert!(
        text(&output.stderr)
            .contains("refusing launcher-foreign: it has no io.agentc.profile label"),
        "{}",
        describe(&output)
    );
    assert!(still_there, "the foreign container was not touched");
    let output = agentc(&["rm", "launcher-no-such-container"]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    assert!(
        text(&output.stderr).contains("no such container"),
        "{}",
        describe(&output)
    );
}

/// `cat` of files in a volume, through a plain busybox container.
fn volume_shell(volume: &str, script: &str) -> String {
    let image = test_image();
    let mount = format!("type=volume,source={volume},target=/h");
    docker(&[
        "run",
        "--rm",
        "--network=none",
        "--mount",
        &mount,
        &image,
        "sh",
        "-c",
        script,
    ])
    .unwrap()
}

#[test]
fn live_seed_copies_once_keeps_equal_targets_and_handles_conflicts() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_seed_copies_once") {
        return;
    }
    if host_dash_files().is_none() {
        eprintln!("skipping live_seed_copies_once: the seed helper needs GNU cp, which this test provides with the host's /bin/dash (x86-64 glibc), absent here");
        return;
    }
    let image = agent_image();
    let mut lab = Lab::new("launcher-seed");
    let volume = lab.volume("launcher-seed-home");
    std::fs::write(lab.dir.path().join("keep.txt"), "keep v1\n").unwrap();
    std::fs::write(lab.dir.path().join("replace.txt"), "replace v1\n").unwrap();
    // The targets sit directly in the home: a missing parent directory is created, chowned
    // and then chmod-ed by the helper, which its capabilities (no FOWNER) refuse.
    let profile = lab.profile(&format!(
        "agent = \"claude-code\"\nhome_volume = \"{volume}\"\n\n\
         [[mounts]]\ntype = \"seed\"\nsource = \"keep.txt\"\ntarget = \"/home/claude/keep.txt\"\n\n\
         [[mounts]]\ntype = \"seed\"\nsource = \"replace.txt\"\ntarget = \"/home/claude/replace.txt\"\non_conflict = \"replace\"\n"
    ));

    // First seed: both files are copied, owned by the agent user.
    let output = lab.run(&["seed", &profile, "--all", "--image", &image]);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(
        text(&output.stdout),
        "seeded /home/claude/keep.txt\nseeded /home/claude/replace.txt\n"
    );
    assert_eq!(
        volume_shell(
            &volume,
            "cat /h/keep.txt /h/replace.txt; stat -c %u /h/keep.txt"
        ),
        "keep v1\nreplace v1\n1000"
    );

    // An equal target is not written: its (back-dated) modification time survives.
    volume_shell(&volume, "touch -d '2001-02-03 04:05:06' /h/keep.txt");
    for backend in ["cli", "api"] {
        let output = lab.run(&[
            "seed",
            &profile,
            "--target",
            "/home/claude/keep.txt",
            "--image",
            &image,
            "--backend",
            backend,
        ]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{backend}: {}",
            describe(&output)
        );
        assert_eq!(
            volume_shell(&volume, "date -r /h/keep.txt +%Y"),
            "2001",
            "{backend}: the equal target was rewritten"
        );
    }

    // A different target with on_conflict = keep fails, with the helper's message, unchanged.
    std::fs::write(lab.dir.path().join("keep.txt"), "keep v2\n").unwrap();
    for backend in ["cli", "api"] {
        let output = lab.run(&[
            "seed",
            &profile,
            "--target",
            "/home/claude/keep.txt",
            "--image",
            &image,
            "--backend",
            backend,
        ]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{backend}: {}",
            describe(&output)
        );
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains("seed target already differs: /home/claude/keep.txt"),
            "{backend}: {stderr}"
        );
        assert!(
            stderr.contains("error: seed /home/claude/keep.txt"),
            "{stderr}"
        );
        assert_eq!(volume_shell(&volume, "cat /h/keep.txt"), "keep v1");
    }
    // --all stops at the first failure.
    let output = lab.run(&["seed", &profile, "--all", "--image", &image]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    assert!(
        !text(&output.stdout).contains("replace.txt"),
        "{}",
        describe(&output)
    );

    // on_conflict = replace: the new content, the old one kept as a backup.
    std::fs::write(lab.dir.path().join("replace.txt"), "replace v2\n").unwrap();
    let output = lab.run(&[
        "seed",
        &profile,
        "--target",
        "/home/claude/replace.txt",
        "--image",
        &image,
        "--backend",
        "api",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(
        volume_shell(
            &volume,
            "cat /h/replace.txt /h/replace.txt.agent-containers.bak"
        ),
        "replace v2\nreplace v1"
    );
    lab.finish();
}

#[test]
fn live_verify_passes_for_a_custom_sandbox_and_a_claude_preset() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_verify_passes") {
        return;
    }
    let image = test_image();
    let lab = Lab::new("launcher-verify-custom");
    let profile = lab.profile(&format!(
        "agent = \"custom\"\n\n[image]\nref = \"{image}\"\ncommand = [\"sleep\", \"300\"]\n\n[resources]\nmemory = \"256m\"\npids_limit = 64\n"
    ));
    for backend in ["api", "cli"] {
        let output = lab.run(&["verify", &profile, "--backend", backend]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{backend}: {}",
            describe(&output)
        );
        let stdout = text(&output.stdout);
        assert!(stdout.ends_with(" checks, 0 failed\n"), "{stdout}");
        assert!(
            stdout.contains("ok      memory limit (bytes)       268435456"),
            "{stdout}"
        );
        assert!(!stdout.contains("FAIL"), "{stdout}");
        // The same checks for machines, in the documented field names.
        let output = lab.run(&["verify", &profile, "--backend", backend, "--format", "json"]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{backend}: {}",
            describe(&output)
        );
        let report: serde_json::Value = serde_json::from_str(&text(&output.stdout))
            .unwrap_or_else(|e| panic!("{backend}: {e}: {}", describe(&output)));
        let checks = report["checks"].as_array().expect("checks");
        assert_eq!(report["fail"], 0, "{report}");
        assert_eq!(
            report["ok"].as_u64().unwrap()
                + report["warn"].as_u64().unwrap()
                + report["skip"].as_u64().unwrap(),
            checks.len() as u64,
            "{report}"
        );
        let memory = checks
            .iter()
            .find(|check| check["check"] == "memory limit (bytes)")
            .unwrap_or_else(|| panic!("{report}"));
        assert_eq!(memory["status"], "ok", "{memory}");
        assert_eq!(memory["expected"], "268435456", "{memory}");
        assert_eq!(memory["seen"], "268435456", "{memory}");
        assert!(memory["hint"].is_null(), "{memory}");
    }
    lab.finish();

    let mut lab = Lab::new("launcher-verify-claude");
    lab.volume("launcher-verify-claude-home");
    let workspace = tempfile::tempdir().unwrap();
    let profile =
        lab.profile("agent = \"claude-code\"\nhome_volume = \"launcher-verify-claude-home\"\n");
    let output = lab.run(&[
        "verify",
        &profile,
        "--image",
        &image,
        "--workspace",
        &workspace.path().to_string_lossy(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("mount /workspace/"), "{stdout}");
    assert!(stdout.contains("mount /home/claude"), "{stdout}");
    lab.finish();
}

/// verify's comparison of a real container started with different flags than the spec: the
/// rendered probe launch minus `--read-only` and with a larger `--pids-limit`.
#[test]
fn live_verify_fails_when_the_container_disagrees_with_the_spec() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_verify_fails_when_the_container_disagrees") {
        return;
    }
    let image = test_image();
    let lab = Lab::new("launcher-verify-mismatch");
    let profile = lab.profile(&format!(
        "agent = \"custom\"\n\n[image]\nref = \"{image}\"\n\n[resources]\npids_limit = 64\n"
    ));
    let launch = agentc::cli::LaunchArgs {
        profile: PathBuf::from(&profile),
        kind: agentc::cli::KindArg::Run,
        workspace: Some(lab.dir.path().to_path_buf()),
        image: None,
        seed_target: None,
        agent_args: Vec::new(),
        overrides: Default::default(),
        build_args: Default::default(),
    };
    let loaded = agentc::context::load_profile(&launch.profile).unwrap();
    let spec = agentc::context::resolve_launch(&loaded, &launch).unwrap();
    let agentc_policy::Action::Container(container) = &spec.action else {
        panic!("a container launch");
    };
    let probe = agentc_verify::probe_spec(container);
    let name = probe.name.clone().unwrap();
    let probe_launch = agentc_policy::LaunchSpec {
        action: agentc_policy::Action::Container(Box::new(probe)),
        ..spec.clone()
    };
    let argv = agentc_backend_cli::render_argv(&probe_launch).unwrap();
    let args: Vec<&str> = argv
        .iter()
        .skip(1)
        .map(String::as_str)
        .filter(|arg| *arg != "--read-only")
        .map(|arg| {
            if arg == "--pids-limit=64" {
                "--pids-limit=128"
            } else {
                arg
            }
        })
        .collect();
    assert!(argv.iter().any(|arg| arg == "--read-only"), "{argv:?}");
    docker(&args).unwrap();
    let waited = docker(&["wait", &name]);
    let logs = docker(&["logs", &name]);
    let inspect = docker(&["inspect", &name]);
    let _ = docker(&["rm", "--force", &name]);
    assert_eq!(waited.unwrap(), "0");
    let inspect: serde_json::Value = serde_json::from_str(&inspect.unwrap()).unwrap();
    let observed = agentc_verify::parse_probe(&logs.unwrap()).unwrap();
    let checks = agentc_verify::compare(container, &observed, &inspect[0]);
    let table = agentc_verify::render_table(&checks);
    let failed: Vec<&str> = checks
        .iter()
        .filter(|check| !check.ok)
        .map(|check| check.what.as_str())
        .collect();
    assert_eq!(failed, ["root filesystem", "pids limit"], "{table}");
    assert!(table.contains("FAIL    root filesystem"), "{table}");
    assert!(table.ends_with(" checks, 2 failed\n"), "{table}");
    lab.finish();
}

/// A SIGTERM sent to agentc alone (as a supervisor sends it) ends the container the same way
/// through either backend: agentc removes it and exits 143 saying so (the container's own
/// trap does not decide the exit status). Nothing is left behind.
#[test]
fn live_sigterm_to_agentc_stops_the_container_through_both_backends() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_sigterm_to_agentc_stops_the_container_through_both_backends") {
        return;
    }
    let image = agent_image();
    let mut lab = Lab::new("launcher-sigterm");
    lab.volume("launcher-sigterm-home");
    let profile = lab.profile("agent = \"claude-code\"\nhome_volume = \"launcher-sigterm-home\"\n");
    for (backend, expected) in [("cli", 143), ("api", 143)] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentc"))
            .args([
                "run",
                &profile,
                "--backend",
                backend,
                "--image",
                &image,
                "--",
                "-c",
                "trap 'echo got-term; exit 42' TERM; echo ready; sleep 60 & wait",
            ])
            .current_dir(lab.dir.path())
            .env("USER", "launcher")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("agentc starts");
        // Wait until the container's shell has set its trap and said so, then signal agentc
        // only (not its process group).
        let stdout = child.stdout.take().expect("stdout is piped");
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            use std::io::BufRead as _;
            let mut seen = Vec::new();
            for line in std::io::BufReader::new(stdout).split(b'\n') {
                let Ok(line) = line else { break };
                if line == b"ready" {
                    let _ = ready_tx.send(());
                }
                seen.extend_from_slice(&line);
                seen.push(b'\n');
            }
            seen
        });
        let ready = ready_rx.recv_timeout(std::time::Duration::from_secs(60));
        // SAFETY: kill has no memory-safety preconditions; the pid is our unreaped child's.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let mut output = child.wait_with_output().expect("agentc ends");
        output.stdout = reader.join().expect("the stdout reader ends");
        assert!(
            ready.is_ok(),
            "{backend}: the container never said ready: {}",
            describe(&output)
        );
        assert_eq!(
            output.status.code(),
            Some(expected),
            "{backend}: {}",
            describe(&output)
        );
        assert!(
            text(&output.stderr).contains("interrupted by SIGTERM; removed container"),
            "{backend}: {}",
            describe(&output)
        );
        let started = std::time::Instant::now();
        while !lab.containers().is_empty() && started.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert!(
            lab.containers().is_empty(),
            "{backend}: left {:?}",
            lab.containers()
        );
    }
    lab.finish();
}

/// `agentc verify` itself exits 1 with a FAIL row when the container disagrees with the spec,
/// through both backends. The disagreement is the kernel's own, not staged: the profile asks for
/// a 6 KiB `/dev/shm`, which docker passes on as `size=6144` and tmpfs rounds up to two whole
/// pages (8192). Every other check passes, and the probe container is removed.
#[test]
fn live_verify_binary_exits_1_when_the_kernel_rounds_a_limit() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_verify_binary_exits_1_when_the_kernel_rounds_a_limit") {
        return;
    }
    let image = test_image();
    let lab = Lab::new("launcher-verify-rounded");
    let profile = lab.profile(&format!(
        "agent = \"custom\"\n\n[image]\nref = \"{image}\"\n\n[resources]\nshm_size = \"6k\"\n"
    ));
    for backend in ["api", "cli"] {
        let output = lab.run(&["verify", &profile, "--backend", backend]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{backend}: {}",
            describe(&output)
        );
        let stdout = text(&output.stdout);
        let failed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
        assert_eq!(failed.len(), 1, "{backend}: {stdout}");
        let row: Vec<&str> = failed[0].split("  ").filter(|c| !c.is_empty()).collect();
        assert_eq!(
            row.iter().map(|cell| cell.trim()).collect::<Vec<_>>(),
            ["FAIL", "/dev/shm size (bytes)", "6144", "8192"],
            "{backend}: {stdout}"
        );
        assert!(
            stdout.ends_with(" checks, 1 failed\n"),
            "{backend}: {stdout}"
        );
        assert!(lab.containers().is_empty(), "{backend}: probe left behind");
    }
    lab.finish();
}

/// A pseudo-terminal for a child: the test holds the master side, the child gets the slave
/// as stdin, stdout, stderr and controlling terminal (so resizing the window sends it SIGWINCH).
struct Pty {
    master: std::fs::File,
    slave: std::fs::File,
}

impl Pty {
    fn open(rows: u16, columns: u16) -> std::io::Result<Pty> {
        use std::os::fd::FromRawFd;
        let (mut master, mut slave) = (-1, -1);
        // SAFETY: openpty writes two new descriptors into `master` and `slave`; the name,
        // termios and window arguments may be null.
        let status = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        if status != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both descriptors are new and owned by nothing else.
        let pty = unsafe {
            Pty {
                master: std::fs::File::from_raw_fd(master),
                slave: std::fs::File::from_raw_fd(slave),
            }
        };
        pty.resize(rows, columns)?;
        Ok(pty)
    }

    /// Sets the window size, as a terminal emulator does when its window changes.
    fn resize(&self, rows: u16, columns: u16) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let size = libc::winsize {
            ws_row: rows,
            ws_col: columns,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCSWINSZ reads one `winsize` from the pointer.
        if unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &size) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// The slave side's local modes (ICANON, ECHO, ...).
    fn local_modes(&self) -> libc::tcflag_t {
        use std::os::fd::AsRawFd;
        // SAFETY: tcgetattr fills the zeroed termios.
        let mut termios: libc::termios = unsafe { std::mem::zeroed() };
        assert_eq!(
            unsafe { libc::tcgetattr(self.slave.as_raw_fd(), &mut termios) },
            0
        );
        termios.c_lflag
    }

    /// Spawns `command` on the slave side, in a new session whose controlling terminal it is.
    fn spawn(&self, command: &mut Command) -> std::process::Child {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let slave = self.slave.as_raw_fd();
        command
            .stdin(self.slave.try_clone().unwrap())
            .stdout(self.slave.try_clone().unwrap())
            .stderr(self.slave.try_clone().unwrap());
        // SAFETY: setsid and ioctl are async-signal-safe, as pre_exec requires.
        unsafe {
            command.pre_exec(move || {
                if libc::setsid() < 0 || libc::ioctl(slave, libc::TIOCSCTTY, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        command.spawn().expect("spawn on the pty")
    }

    /// Collects what the child writes, in the background.
    fn reader(&self) -> std::sync::Arc<std::sync::Mutex<Vec<u8>>> {
        use std::io::Read;
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        let mut master = self.master.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // EIO once every slave descriptor is closed ends the loop.
            while let Ok(read) = master.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buffer[..read]);
            }
        });
        seen
    }
}

/// An interactive run on a real terminal, through both backends: the container gets a TTY of
/// the terminal's size, keystrokes reach it, a window resize reaches it (SIGWINCH, then the
/// resize call), its exit code comes back, and the local terminal leaves raw mode again.
#[test]
fn live_an_interactive_run_on_a_terminal_follows_its_size_and_restores_it() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_an_interactive_run_on_a_terminal_follows_its_size_and_restores_it") {
        return;
    }
    let image = agent_image();
    let mut lab = Lab::new("launcher-tty");
    lab.volume("launcher-tty-home");
    let profile = lab.profile("agent = \"claude-code\"\nhome_volume = \"launcher-tty-home\"\n");
    // Print the size after each line read; stop at end of input with code 4.
    let script = "while read line; do echo \"line=$line size=$(stty size)\"; done; exit 4";
    for backend in ["api", "cli"] {
        let pty = Pty::open(33, 101).expect("a pseudo-terminal");
        let canonical = pty.local_modes() & libc::ICANON;
        assert_ne!(canonical, 0, "a new terminal starts in canonical mode");
        let seen = pty.reader();
        let mut child = pty.spawn(
            Command::new(env!("CARGO_BIN_EXE_agentc"))
                .args([
                    "run",
                    &profile,
                    "--backend",
                    backend,
                    "--image",
                    &image,
                    "--",
                    "-c",
                    script,
                ])
                .current_dir(lab.dir.path())
                .env("USER", "launcher"),
        );
        let mut master = pty.master.try_clone().unwrap();
        let mut send = |text: &str| {
            use std::io::Write;
            master.write_all(text.as_bytes()).unwrap();
        };
        let shown = || String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
        // Sends `line` until the container answers with `answer` (a resize reaches it
        // asynchronously, and input may arrive before the first resize): 50 tries, 200 ms apart.
        let mut until = |line: &str, answer: &str| {
            for _ in 0..50 {
                send(line);
                std::thread::sleep(std::time::Duration::from_millis(200));
                if shown().contains(answer) {
                    return true;
                }
            }
            false
        };
        assert!(
            until("first\r", "line=first size=33 101"),
            "{backend}: the container never saw the terminal's size: {}",
            shown()
        );
        pty.resize(40, 120).unwrap();
        assert!(
            until("again\r", "line=again size=40 120"),
            "{backend}: the resize never reached the container: {}",
            shown()
        );
        send("\x04");
        let status = child.wait().expect("agentc ends");
        assert_eq!(status.code(), Some(4), "{backend}: {}", shown());
        assert_eq!(
            pty.local_modes() & libc::ICANON,
            canonical,
            "{backend}: the terminal was left in raw mode"
        );
        assert!(
            lab.containers().is_empty(),
            "{backend}: {:?}",
            lab.containers()
        );
    }
    lab.finish();
}
