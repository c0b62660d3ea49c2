//! `agentc run --pull` against the live Docker daemon and a real local registry: Debian's
//! `docker-registry` (distribution 2.8) started on a free 127.0.0.1 port, which the daemon
//! treats as an insecure (plain http) registry by default.
//!
//! The tests skip with a printed reason when `docker info` fails or, for the registry test,
//! when `docker-registry` is not installed; `AGENTC_REQUIRE_DOCKER=1` makes them fail instead.
//! Each leaves nothing behind: no container labelled with its profile, no pushed or pulled
//! tag, no registry process, no temporary directory.

use crate::common;

use common::{describe, docker, repo_root, require_daemon, test_image, text};

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Runs agentc in `dir` with stdin closed.
fn agentc_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentc"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env("USER", "puller")
        .output()
        .expect("agentc runs")
}

fn required() -> bool {
    std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() == Ok("1")
}

/// True when what `test` needs is here; otherwise prints why it is skipped and returns
/// false, or panics when `AGENTC_REQUIRE_DOCKER=1`.
fn require(test: &str, registry: bool) -> bool {
    if !require_daemon(test) {
        return false;
    }
    if !registry || registry_installed() {
        return true;
    }
    let reason = "docker-registry is not installed (apt-get install docker-registry)";
    if required() {
        panic!("{test}: AGENTC_REQUIRE_DOCKER=1 but {reason}")
    }
    eprintln!("skipping {test}: {reason}; set AGENTC_REQUIRE_DOCKER=1 to fail instead");
    false
}

fn registry_installed() -> bool {
    Command::new("docker-registry")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// A name no other run of these tests uses.
fn unique() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or_default();
    format!("{}-{nanos}", std::process::id())
}

/// A port on 127.0.0.1 that was free a moment ago.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// True when `GET /v2/` on the port answers: 200, or 401 from a registry wanting credentials.
fn registry_answers(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    [
        "HTTP/1.1 200",
        "HTTP/1.0 200",
        "HTTP/1.1 401",
        "HTTP/1.0 401",
    ]
    .iter()
    .any(|status| answer.starts_with(status))
}

/// A `docker-registry` process with its own config and storage in a temporary directory;
/// killed, and the directory removed, when dropped.
struct Registry {
    child: Child,
    port: u16,
    dir: Option<tempfile::TempDir>,
}

impl Registry {
    fn start() -> Registry {
        Registry::start_with("")
    }

    /// A registry that wants credentials (htpasswd; the registry writes a random user).
    fn start_with_auth() -> Registry {
        Registry::start_with("auth:\n  htpasswd:\n    realm: agentc-test\n    path: HTPASSWD\n")
    }

    fn start_with(extra: &str) -> Registry {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n{}",
                dir.path().join("data").display(),
                extra.replace("HTPASSWD", &dir.path().join("htpasswd").to_string_lossy()),
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("docker-registry starts");
        let registry = Registry {
            child,
            port,
            dir: Some(dir),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !registry.answers() {
            assert!(
                Instant::now() < deadline,
                "the registry on port {port} did not answer GET /v2/: {}",
                registry.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        registry
    }

    /// True when the process runs and `GET /v2/` answers.
    fn answers(&self) -> bool {
        registry_answers(self.port)
    }

    fn log(&self) -> String {
        self.dir
            .as_ref()
            .and_then(|dir| std::fs::read_to_string(dir.path().join("registry.log")).ok())
            .unwrap_or_default()
    }

    /// Stops the registry, removes its directory, and checks both are gone.
    fn stop(mut self) {
        let pid = self.child.id();
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "registry {pid}"
        );
        let dir = self.dir.take().unwrap();
        let path = dir.path().to_path_buf();
        dir.close().unwrap();
        assert!(!path.exists(), "{}", path.display());
        assert!(!registry_answers(self.port));
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The containers labelled with `profile`.
fn containers(profile: &str) -> Vec<String> {
    let filter = format!("label=io.agentc.profile={profile}");
    docker(&["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"])
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Removes the profile's containers and an image tag, even when a test fails half-way.
struct Cleanup {
    profiles: Vec<String>,
    images: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for profile in &self.profiles {
            for container in containers(profile) {
                let _ = docker(&["rm", "--force", &container]);
            }
        }
        for image in &self.images {
            let _ = docker(&["rmi", "--force", image]);
        }
    }
}

/// Writes a custom profile whose sandbox runs `sh -c 'exit 5'` from `image`.
fn write_profile(dir: &Path, name: &str, image: &str) -> String {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "name = \"{name}\"\nagent = \"custom\"\n\n[image]\nref = \"{image}\"\ncommand = [\"sh\", \"-c\", \"exit 5\"]\n"
        ),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn live_run_pull_pulls_a_missing_image_from_a_local_registry_through_both_backends() {
    let _turn = crate::common::turn(file!());
    if !require("live_run_pull_pulls_a_missing_image", true) {
        return;
    }
    let base = test_image();
    let registry = Registry::start();
    let image = format!(
        "127.0.0.1:{}/agentc-pull-test/{}:1",
        registry.port,
        unique()
    );
    let work = tempfile::tempdir().unwrap();
    let mut cleanup = Cleanup {
        profiles: Vec::new(),
        images: vec![image.clone()],
    };

    // An image of its own (a unique layer on top of the test image), so the pull downloads
    // a layer rather than only re-tagging one the daemon still has.
    let context = work.path().join("context");
    std::fs::create_dir(&context).unwrap();
    std::fs::write(context.join("marker"), unique()).unwrap();
    std::fs::write(
        context.join("Dockerfile"),
        format!("FROM {base}\nCOPY marker /pull-test-marker\n"),
    )
    .unwrap();
    docker(&[
        "build",
        "--quiet",
        "--tag",
        &image,
        &context.to_string_lossy(),
    ])
    .unwrap();
    docker(&["push", &image]).unwrap();
    docker(&["rmi", &image]).unwrap();

    for backend in ["api", "cli"] {
        assert!(
            docker(&["image", "inspect", &image]).is_err(),
            "{backend}: the image is missing before the run"
        );
        let profile_name = format!("pull-{backend}-{}", std::process::id());
        cleanup.profiles.push(profile_name.clone());
        let profile = write_profile(work.path(), &profile_name, &image);

        let output = agentc_in(
            work.path(),
            &["run", &profile, "--pull", "--backend", backend],
        );
        assert_eq!(
            output.status.code(),
            Some(0),
            "{backend}: {}",
            describe(&output)
        );
        let stderr = text(&output.stderr);
        for expected in [
            "is not present; pulling it",
            "Pulling from agentc-pull-test/",
            "Downloaded newer image for",
        ] {
            assert!(
                stderr.contains(expected),
                "{backend}: progress names {expected:?}: {}",
                describe(&output)
            );
        }
        if backend == "api" {
            // One compact line per layer status: the new layer was downloaded, and no
            // status repeats for a layer.
            assert!(stderr.contains(": Pull complete"), "{stderr}");
            let lines: Vec<&str> = stderr
                .lines()
                .filter(|line| line.starts_with("agentc: pull: "))
                .collect();
            let mut unique_lines = lines.clone();
            unique_lines.sort_unstable();
            unique_lines.dedup();
            assert_eq!(lines.len(), unique_lines.len(), "{stderr}");
        }
        // The progress is on stderr; stdout is the launch's own.
        assert!(
            !text(&output.stdout).contains("Pulling"),
            "{}",
            describe(&output)
        );
        assert!(
            docker(&["image", "inspect", &image]).is_ok(),
            "{backend}: pulled"
        );

        // The sandbox ran from the pulled image and exited 5.
        let started = containers(&profile_name);
        assert_eq!(started.len(), 1, "{backend}: {started:?}");
        let name = &started[0];
        assert!(
            text(&output.stdout).contains(&format!("started {name} (")),
            "{}",
            describe(&output)
        );
        assert_eq!(docker(&["wait", name]).unwrap(), "5", "{backend}");
        assert_eq!(
            docker(&["inspect", "--format", "{{.Config.Image}}", name]).unwrap(),
            image
        );
        docker(&["rm", name]).unwrap();
        assert!(containers(&profile_name).is_empty());

        // The next backend must pull again.
        docker(&["rmi", &image]).unwrap();
    }

    // `verify --pull` pulls the missing image too, then its probe passes every check; without
    // `--pull` it is refused before anything is created.
    for backend in ["api", "cli"] {
        let profile_name = format!("pull-verify-{backend}-{}", std::process::id());
        cleanup.profiles.push(profile_name.clone());
        let profile = write_profile(work.path(), &profile_name, &image);
        let refused = agentc_in(work.path(), &["verify", &profile, "--backend", backend]);
        assert_eq!(refused.status.code(), Some(125), "{}", describe(&refused));
        assert!(
            text(&refused.stderr).contains("--pull"),
            "{}",
            describe(&refused)
        );
        let output = agentc_in(
            work.path(),
            &["verify", &profile, "--pull", "--backend", backend],
        );
        assert_eq!(
            output.status.code(),
            Some(0),
            "{backend}: {}",
            describe(&output)
        );
        assert!(
            text(&output.stderr).contains("is not present; pulling it"),
            "{backend}: {}",
            describe(&output)
        );
        assert!(
            text(&output.stdout).contains(" checks, 0 failed"),
            "{backend}: {}",
            describe(&output)
        );
        assert!(
            containers(&profile_name).is_empty(),
            "{backend}: probe removed"
        );
        docker(&["rmi", &image]).unwrap();
    }

    assert!(docker(&["image", "inspect", &image]).is_err());
    drop(cleanup);
    registry.stop();
    let path = work.path().to_path_buf();
    work.close().unwrap();
    assert!(!path.exists());
}

#[test]
fn live_pull_from_a_stopped_registry_exits_125_and_creates_nothing() {
    let _turn = crate::common::turn(file!());
    if !require("live_pull_from_a_stopped_registry", false) {
        return;
    }
    // Nothing listens on this port.
    let port = free_port();
    let image = format!("127.0.0.1:{port}/agentc-pull-test/{}:1", unique());
    let work = tempfile::tempdir().unwrap();
    for backend in ["api", "cli"] {
        let profile_name = format!("pull-stopped-{backend}-{}", std::process::id());
        let _cleanup = Cleanup {
            profiles: vec![profile_name.clone()],
            images: Vec::new(),
        };
        let profile = write_profile(work.path(), &profile_name, &image);
        let output = agentc_in(
            work.path(),
            &["run", &profile, "--pull", "--backend", backend],
        );
        assert_eq!(
            output.status.code(),
            Some(125),
            "{backend}: {}",
            describe(&output)
        );
        let stderr = text(&output.stderr);
        for expected in [
            format!("cannot pull image {image}"),
            "connection refused".to_string(),
            "the registry is unreachable".to_string(),
        ] {
            assert!(
                stderr.contains(&expected),
                "{backend}: {expected:?}: {}",
                describe(&output)
            );
        }
        assert!(
            containers(&profile_name).is_empty(),
            "{backend}: nothing is created"
        );
        assert!(docker(&["image", "inspect", &image]).is_err());
    }
}

#[test]
fn live_pull_from_a_registry_that_wants_credentials_exits_125_with_the_login_hint() {
    let _turn = crate::common::turn(file!());
    if !require("live_pull_from_a_registry_that_wants_credentials", true) {
        return;
    }
    let registry = Registry::start_with_auth();
    let image = format!(
        "127.0.0.1:{}/agentc-pull-test/{}:1",
        registry.port,
        unique()
    );
    let work = tempfile::tempdir().unwrap();
    for backend in ["api", "cli"] {
        let profile_name = format!("pull-auth-{backend}-{}", std::process::id());
        let _cleanup = Cleanup {
            profiles: vec![profile_name.clone()],
            images: Vec::new(),
        };
        let profile = write_profile(work.path(), &profile_name, &image);
        let output = agentc_in(
            work.path(),
            &["run", &profile, "--pull", "--backend", backend],
        );
        assert_eq!(
            output.status.code(),
            Some(125),
            "{backend}: {}",
            describe(&output)
        );
        let stderr = text(&output.stderr);
        for expected in [
            format!("cannot pull image {image}"),
            "credentials".to_string(),
            "docker login".to_string(),
        ] {
            assert!(
                stderr.contains(&expected),
                "{backend}: {expected:?}: {}",
                describe(&output)
            );
        }
        assert!(containers(&profile_name).is_empty(), "{backend}");
    }
    registry.stop();
}

#[test]
fn live_without_pull_a_missing_image_is_refused_naming_pull() {
    let _turn = crate::common::turn(file!());
    if !require("live_without_pull_a_missing_image", false) {
        return;
    }
    let image = format!("agentc-test/pull-missing-{}:1", unique());
    let work = tempfile::tempdir().unwrap();
    for backend in ["api", "cli"] {
        let profile_name = format!("pull-missing-{backend}-{}", std::process::id());
        let _cleanup = Cleanup {
            profiles: vec![profile_name.clone()],
            images: Vec::new(),
        };
        let profile = write_profile(work.path(), &profile_name, &image);
        let output = agentc_in(work.path(), &["run", &profile, "--backend", backend]);
        assert_eq!(
            output.status.code(),
            Some(125),
            "{backend}: {}",
            describe(&output)
        );
        let stderr = text(&output.stderr);
        for expected in [
            format!("image {image} is not present"),
            "agentc build PROFILE".to_string(),
            "--pull".to_string(),
        ] {
            assert!(
                stderr.contains(&expected),
                "{backend}: {expected:?}: {}",
                describe(&output)
            );
        }
        assert!(!stderr.contains("pulling it"), "{stderr}");
        assert!(containers(&profile_name).is_empty(), "{backend}");
    }
}

#[test]
fn run_and_seed_help_document_pull() {
    let _turn = crate::common::turn(file!());
    for command in ["run", "seed"] {
        let output = agentc_in(&repo_root(), &[command, "--help"]);
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        let help = text(&output.stdout);
        assert!(help.contains("--pull"), "{command}: {help}");
    }
    let help = text(&agentc_in(&repo_root(), &["run", "--help"]).stdout);
    assert!(
        help.contains("agentc run ") && help.contains(" --pull "),
        "{help}"
    );
}
