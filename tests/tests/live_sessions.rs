//! Sessions on the live daemon, through both backends: the same script runs against the
//! docker CLI's client ([`CliClient`]) and the Engine API's ([`ApiClient`]), on a hardened
//! sandbox (read-only root, tmpfs, no capabilities, a non-root user) and on one joined to a
//! named network the test creates, and the two transcripts must be identical: exit codes,
//! output bytes, copied files byte for byte with their modes, endpoints, logs, refusals.
//! Faults: the container removed mid-exec, the daemon connection lost mid-exec (through a
//! socket relay the test stops). Hostile names and paths are refused.
//!
//! Every container carries the test's own profile label and is removed at the end, also on
//! failure; the test connects only to the containers and the network it created. Skips with a
//! printed reason without a daemon, fails instead under `AGENTC_REQUIRE_DOCKER=1`.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentc_backend_api::ApiClient;
use agentc_backend_cli::CliClient;
use agentc_conformance::image::ensure_test_image;
use agentc_conformance::live::{
    docker, require_daemon, LeakGuard, PROFILE_LABEL, REQUIRE_DOCKER_VAR,
};
use agentc_egress::image::ProxyExecutable;
use agentc_engine::session::{
    ExecRequest, ExecStdin, LogsRequest, Sandbox, SandboxClient, SessionError, Transport,
};
use agentc_policy::Hinted;
use agentc_policy::{
    Action, ContainerSpec, EnvValue, EnvVar, LaunchKind, LaunchSpec, Mount, MountSource, Network,
    Protocol, PublishedPort, Resources, Tmpfs,
};

const SECRET: &str = "AGENTC_SESSION_TEST_SECRET";

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

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn client_env() -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = std::env::vars().collect();
    env.insert(SECRET.to_string(), "s3cret-value".to_string());
    env
}

fn cli_client(env: BTreeMap<String, String>) -> CliClient {
    CliClient::over(
        agentc_backend_cli::exec::port::CliPort::new(agentc_engine::Engine::Docker),
        env,
    )
}

async fn api_client(env: BTreeMap<String, String>) -> ApiClient {
    let host = env.get("DOCKER_HOST").cloned();
    let port = agentc_backend_api::connect(agentc_engine::Engine::Docker, host.as_deref())
        .await
        .expect("connect to the daemon");
    ApiClient::over(port, env)
}

/// Removes what the test made (containers labelled with its profile, its network), on drop.
struct Cleanup {
    profile: String,
    network: Option<String>,
    other: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let filter = format!("label={PROFILE_LABEL}={}", self.profile);
        if let Ok(names) = docker(&["ps", "-aq", "--filter", &filter]) {
            for id in names.lines() {
                let _ = docker(&["rm", "--force", id]);
            }
        }
        for name in &self.other {
            let _ = docker(&["rm", "--force", name]);
        }
        if let Some(network) = &self.network {
            let _ = docker(&["network", "rm", network]);
        }
    }
}

/// The hardened sandbox: read-only root, tmpfs /tmp, no capabilities, no new privileges,
/// uid 1000, limits, `data` bound at /data, port 8080 published on 127.0.0.1 (or, on a
/// named network, exposed there).
fn spec(profile: &str, name: &str, image: &str, data: &Path, network: Network) -> LaunchSpec {
    let named = matches!(network, Network::Named { .. });
    let container = ContainerSpec {
        name: Some(name.to_string()),
        command: [
            "sh",
            "-c",
            "echo started; echo ready >&2; exec tail -f /dev/null",
        ]
        .map(str::to_string)
        .to_vec(),
        user: Some("1000".to_string()),
        working_dir: Some("/tmp".to_string()),
        init: true,
        mounts: vec![Mount {
            target: "/data".to_string(),
            read_only: false,
            source: MountSource::Bind {
                path: data.to_string_lossy().into_owned(),
            },
        }],
        tmpfs: vec![Tmpfs {
            target: "/tmp".to_string(),
            exec: false,
        }],
        read_only_root: true,
        no_new_privileges: true,
        cap_drop_all: true,
        network,
        ports: if named {
            Vec::new()
        } else {
            vec![PublishedPort {
                container_port: 8080,
                protocol: Protocol::Tcp,
                host_ip: "127.0.0.1".parse().unwrap(),
                host_port: None,
            }]
        },
        resources: Resources {
            memory_bytes: Some(256 * 1024 * 1024),
            memory_swap_bytes: Some(256 * 1024 * 1024),
            pids_limit: Some(128),
            ..Resources::default()
        },
        labels: BTreeMap::from([(PROFILE_LABEL.to_string(), profile.to_string())]),
        detach: true,
        ..ContainerSpec::empty(image)
    };
    LaunchSpec {
        kind: LaunchKind::Sandbox,
        profile: profile.to_string(),
        action: Action::Container(Box::new(container)),
        origins: BTreeMap::new(),
    }
}

/// A source tree with modes, a binary file, an empty directory and a link.
fn source_tree(root: &Path) -> PathBuf {
    let tree = root.join("tree");
    std::fs::create_dir_all(tree.join("sub/empty")).unwrap();
    std::fs::write(tree.join("run.sh"), "#!/bin/sh\necho run\n").unwrap();
    std::fs::set_permissions(tree.join("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    let blob: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(tree.join("sub/blob.bin"), blob).unwrap();
    std::fs::write(tree.join("sub/private"), "only mine\n").unwrap();
    std::fs::set_permissions(
        tree.join("sub/private"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::os::unix::fs::symlink("run.sh", tree.join("link")).unwrap();
    tree
}

/// Every file under `root`: relative path, kind, mode, content (or link target).
fn snapshot(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    fn walk(root: &Path, dir: &Path, found: &mut Vec<String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let relative = path.strip_prefix(root).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.file_type().is_symlink() {
                found.push(format!(
                    "{relative} link {}",
                    std::fs::read_link(&path).unwrap().display()
                ));
            } else if meta.is_dir() {
                found.push(format!("{relative} dir {mode:o}"));
                walk(root, &path, found);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                let sum: u64 = bytes
                    .iter()
                    .enumerate()
                    .map(|(i, b)| (i as u64 + 1) * u64::from(*b))
                    .sum();
                found.push(format!("{relative} file {mode:o} {} {sum}", bytes.len()));
            }
        }
    }
    walk(root, root, &mut found);
    found
}

/// What a session did, with the container's name and host ports written as placeholders.
struct Transcript {
    name: String,
    id: String,
    lines: Vec<String>,
}

impl Transcript {
    fn push(&mut self, what: &str, value: impl std::fmt::Debug) {
        let text = format!("{what}: {value:?}")
            .replace(&self.name, "NAME")
            .replace(&self.id, "ID");
        self.lines.push(text);
    }

    fn result<T: std::fmt::Debug>(&mut self, what: &str, result: &Result<T, SessionError>) {
        match result {
            Ok(value) => self.push(what, value),
            Err(error) => {
                let text = format!("error (exit {}): {error}", error.exit_code());
                self.push(what, text)
            }
        }
    }
}

fn exec_text(output: &agentc_engine::session::ExecOutput) -> (i64, String, String) {
    (
        output.exit_code,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The whole script against one client; returns its transcript.
async fn script<C: SandboxClient>(
    client: &C,
    spec: &LaunchSpec,
    work: &Path,
    data: &Path,
    foreign: &str,
) -> Transcript {
    let sandbox = client.create(spec).await.expect("create the sandbox");
    let mut t = Transcript {
        name: sandbox.name.clone(),
        id: sandbox.id.clone(),
        lines: Vec::new(),
    };
    // Exit codes and output bytes.
    let run = |command: &[&str]| ExecRequest::new(command.iter().copied());
    let out = client
        .exec_output(
            &sandbox,
            &run(&["sh", "-c", "echo out; printf 'err\\n' >&2; exit 3"]),
        )
        .await
        .unwrap();
    assert_eq!(exec_text(&out), (3, "out\n".into(), "err\n".into()));
    t.push("exec exit 3", exec_text(&out));
    let mut input = run(&["cat"]);
    let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    input.stdin = ExecStdin::Bytes(bytes.clone());
    let echoed = client.exec_output(&sandbox, &input).await.unwrap();
    assert_eq!(echoed.stdout, bytes);
    t.push("stdin echoed", (echoed.exit_code, echoed.stdout.len()));
    let mut env = run(&[
        "sh",
        "-c",
        "echo \"$AGENTC_SESSION_TEST_SECRET $MODE $(id -u) $(pwd)\"",
    ]);
    env.env = vec![
        EnvVar {
            name: SECRET.into(),
            value: EnvValue::Secret { required: true },
        },
        EnvVar {
            name: "MODE".into(),
            value: EnvValue::Literal {
                value: "fast mode".into(),
            },
        },
    ];
    env.user = Some("1000:1000".into());
    env.workdir = Some("/data".into());
    let envd = client.exec_output(&sandbox, &env).await.unwrap();
    assert_eq!(exec_text(&envd).1, "s3cret-value fast mode 1000 /data\n");
    t.push("env, user, workdir", exec_text(&envd));
    let mut unset = run(&["true"]);
    unset.env = vec![EnvVar {
        name: "AGENTC_SESSION_UNSET".into(),
        value: EnvValue::Secret { required: true },
    }];
    t.result(
        "unset secret",
        &client
            .exec_output(&sandbox, &unset)
            .await
            .map(|o| exec_text(&o)),
    );
    t.result(
        "missing program",
        &client
            .exec_output(&sandbox, &run(&["no-such-program"]))
            .await
            .map(|o| exec_text(&o)),
    );
    t.result(
        "empty command",
        &client
            .exec_output(&sandbox, &run(&[]))
            .await
            .map(|o| exec_text(&o)),
    );

    // Copies: into the tmpfs (exec tar), into the bind mount (archive), past the read-only root.
    let tree = source_tree(work);
    let up_tmp = client.upload(&sandbox, &tree, "/tmp").await;
    assert_eq!(up_tmp.as_ref().unwrap().transport, Transport::ExecTar);
    t.result("upload into /tmp", &up_tmp);
    let up_data = client.upload(&sandbox, &tree, "/data/copy").await;
    assert_eq!(up_data.as_ref().unwrap().transport, Transport::Archive);
    t.result("upload as /data/copy", &up_data);
    let listing = client
        .exec_output(
            &sandbox,
            &run(&[
                "sh",
                "-c",
                "cd / && find tmp/tree data/copy | sort | xargs stat -c '%n %a %s %u %F'",
            ]),
        )
        .await
        .unwrap();
    t.push("listing", exec_text(&listing));
    let listed = String::from_utf8_lossy(&listing.stdout).into_owned();
    assert!(
        listed.contains("tmp/tree/run.sh 750 19 1000 regular file"),
        "{listed}\n{}",
        String::from_utf8_lossy(&listing.stderr)
    );
    for (from, label) in [("/tmp/tree", "tmp"), ("/data/copy", "data")] {
        let into = work.join(format!("down-{label}"));
        let report = client.download(&sandbox, from, &into).await;
        t.result(
            &format!("download {from}"),
            &report.map(|r| (r.transport, r.bytes)),
        );
        assert_eq!(snapshot(&into), snapshot(&tree), "{from} came back changed");
        t.push(&format!("downloaded {from}"), snapshot(&into));
    }
    // Into an existing host directory, the copy keeps its name.
    let existing = work.join("existing");
    std::fs::create_dir(&existing).unwrap();
    let report = client.download(&sandbox, "tree/run.sh", &existing).await;
    t.result("download relative to the workdir", &report.map(|r| r.bytes));
    assert_eq!(
        std::fs::read(existing.join("run.sh")).unwrap(),
        b"#!/bin/sh\necho run\n"
    );
    t.result(
        "upload into /etc",
        &client.upload(&sandbox, &tree, "/etc").await,
    );
    t.result(
        "upload into a missing directory",
        &client.upload(&sandbox, &tree, "/tmp/nope/").await,
    );
    t.result(
        "download a missing path",
        &client
            .download(&sandbox, "/tmp/nope", &work.join("x"))
            .await,
    );
    t.result(
        "download through ..",
        &client
            .download(&sandbox, "/tmp/../etc", &work.join("x"))
            .await,
    );
    t.result(
        "upload to a NUL path",
        &client.upload(&sandbox, &tree, "/tmp/a\0b").await,
    );
    let _ = std::fs::remove_dir_all(data.join("copy"));

    // Names: hostile ones and a container agentc did not create.
    for hostile in ["../etc", "a\0b", "-x", "--privileged", "a/b"] {
        t.result(&format!("find {hostile:?}"), &client.find(hostile).await);
    }
    t.result("find a foreign container", &client.find(foreign).await);
    t.result(
        "find by name",
        &client
            .find(&sandbox.name)
            .await
            .map(|found| found.id == sandbox.id),
    );
    t.result(
        "find the profile",
        &client
            .find_profile(&sandbox.profile, false)
            .await
            .map(|found| found.id == sandbox.id),
    );

    // Endpoints: httpd inside, reached from the host.
    let serve = run(&[
        "sh",
        "-c",
        "mkdir -p /tmp/www && echo served > /tmp/www/index.html && httpd -p 8080 -h /tmp/www",
    ]);
    assert_eq!(
        client
            .exec_output(&sandbox, &serve)
            .await
            .unwrap()
            .exit_code,
        0
    );
    let endpoint = client
        .endpoint(&sandbox, 8080, Protocol::Tcp)
        .await
        .expect("an endpoint");
    let body = fetch(&endpoint.to_string());
    t.push(
        "endpoint",
        (endpoint.network.is_some(), endpoint.container_port, body),
    );
    t.result(
        "endpoint of an unexposed port",
        &client.endpoint(&sandbox, 9999, Protocol::Tcp).await,
    );
    t.push("endpoints", client.endpoints(&sandbox).await.unwrap().len());

    // Logs, stop, start.
    let mut logs = agentc_engine::session::Captured::default();
    client
        .logs(&sandbox, &LogsRequest::default(), &mut logs)
        .await
        .unwrap();
    t.push(
        "logs",
        (
            String::from_utf8_lossy(&logs.stdout).into_owned(),
            String::from_utf8_lossy(&logs.stderr).into_owned(),
        ),
    );
    let mut tail = agentc_engine::session::Captured::default();
    let request = LogsRequest {
        tail: Some(0),
        ..LogsRequest::default()
    };
    client.logs(&sandbox, &request, &mut tail).await.unwrap();
    t.push("logs --tail 0", (tail.stdout.len(), tail.stderr.len()));
    t.result("stop", &client.stop(&sandbox, Some(1)).await);
    t.result(
        "exec while stopped",
        &client
            .exec_output(&sandbox, &run(&["true"]))
            .await
            .map(|o| o.exit_code),
    );
    t.result(
        "upload to tmpfs while stopped",
        &client.upload(&sandbox, &tree, "/tmp").await,
    );
    t.result(
        "find the profile while stopped",
        &client.find_profile(&sandbox.profile, false).await,
    );
    t.result("start", &client.start(&sandbox).await);
    t.result("start again", &client.start(&sandbox).await);
    t.result(
        "exec after start",
        &client
            .exec_output(&sandbox, &run(&["true"]))
            .await
            .map(|o| o.exit_code),
    );

    // Delete: removed once, then nothing left to remove.
    t.push("delete", client.delete(&sandbox).await);
    t.push("delete again", client.delete(&sandbox).await);
    t.result("find after delete", &client.find(&sandbox.id).await);
    t
}

fn fetch(address: &str) -> String {
    for _ in 0..50 {
        if let Ok(mut stream) = std::net::TcpStream::connect(address) {
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            stream.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
            let mut response = String::new();
            let _ = stream.read_to_string(&mut response);
            if let Some((_, body)) = response.split_once("\r\n\r\n") {
                return body.to_string();
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("nothing answered at {address}")
}

/// Runs the script through both backends on sandboxes of `network` and compares.
fn both_backends_agree(test: &str, named: bool) {
    let Some(image) = setup(test) else { return };
    let profile = format!("agentc-live-sess-{test}-{}", std::process::id());
    let guard = LeakGuard::new(test, &profile);
    let network_name = format!("{profile}-net");
    let foreign = format!("{profile}-foreign");
    let cleanup = Cleanup {
        profile: profile.clone(),
        network: named.then(|| network_name.clone()),
        other: vec![foreign.clone()],
    };
    if named {
        docker(&["network", "create", &network_name]).expect("create the test's network");
    }
    docker(&[
        "create",
        "--name",
        &foreign,
        "--network=none",
        &image,
        "true",
    ])
    .expect("a container without agentc's label");
    let mut transcripts = Vec::new();
    for backend in ["cli", "api"] {
        let work = tempfile::tempdir().unwrap();
        let data = work.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap();
        let network = if named {
            Network::Named {
                name: network_name.clone(),
            }
        } else {
            Network::Default
        };
        let mut spec = spec(
            &profile,
            &format!("{profile}-{backend}"),
            &image,
            &data,
            network,
        );
        if named {
            if let Action::Container(container) = &mut spec.action {
                container.exposed_ports = vec![agentc_policy::ExposedPort {
                    container_port: 8080,
                    protocol: Protocol::Tcp,
                }];
                container.network_aliases = vec![profile.clone()];
            }
        }
        let transcript = runtime().block_on(async {
            match backend {
                "cli" => {
                    script(
                        &cli_client(client_env()),
                        &spec,
                        work.path(),
                        &data,
                        &foreign,
                    )
                    .await
                }
                _ => {
                    script(
                        &api_client(client_env()).await,
                        &spec,
                        work.path(),
                        &data,
                        &foreign,
                    )
                    .await
                }
            }
        });
        transcripts.push(transcript.lines);
    }
    let (cli, api) = (&transcripts[0], &transcripts[1]);
    for (index, (a, b)) in cli.iter().zip(api).enumerate() {
        assert_eq!(a, b, "step {index} differs between the backends");
    }
    assert_eq!(cli.len(), api.len());
    let text = cli.join("\n");
    for expected in [
        "upload into /etc: \"error (exit 1): cannot write /etc in NAME: its root file system is read-only",
        "find a foreign container: \"error (exit 1): refusing",
        "find \"../etc\": \"error (exit 1): \\\"../etc\\\" is not a container name or ID",
        "download through ..: \"error (exit 1): container path \\\"/tmp/../etc\\\": it contains `..`",
        "exec while stopped: \"error (exit 125): container NAME is not running",
        "unset secret: \"error (exit 125): required secret AGENTC_SESSION_UNSET is not set",
        "missing program: (126,",
        "endpoint: (", // checked below
        "logs: (\"started\\n\", \"ready\\n\")",
        "delete: DeleteReport { removed: true, left: [] }",
        "delete again: DeleteReport { removed: false, left: [] }",
        "find after delete: \"error (exit 1): no such container",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(
        text.contains(&format!("endpoint: ({named}, 8080, \"served\\n\")")),
        "{text}"
    );
    drop(cleanup);
    guard.finish();
}

#[test]
fn live_both_backends_drive_a_hardened_sandbox_alike() {
    let _turn = agentc_conformance::turn::turn(file!());
    both_backends_agree("hardened", false);
}

#[test]
fn live_both_backends_drive_a_sandbox_on_a_named_network_alike() {
    let _turn = agentc_conformance::turn::turn(file!());
    both_backends_agree("named", true);
}

/// A relay between a unix socket of the test and the daemon's, which the test can cut.
struct Relay {
    path: PathBuf,
    streams: std::sync::Arc<std::sync::Mutex<Vec<std::os::unix::net::UnixStream>>>,
    _dir: tempfile::TempDir,
}

impl Relay {
    fn start() -> Relay {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docker.sock");
        let daemon = std::env::var("DOCKER_HOST")
            .ok()
            .and_then(|host| host.strip_prefix("unix://").map(str::to_string))
            .unwrap_or_else(|| "/var/run/docker.sock".to_string());
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let streams = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = streams.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { break };
                let Ok(upstream) = std::os::unix::net::UnixStream::connect(&daemon) else {
                    break;
                };
                let mut kept = kept.lock().unwrap();
                kept.push(client.try_clone().unwrap());
                kept.push(upstream.try_clone().unwrap());
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), upstream.try_clone().unwrap()),
                    (upstream, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Write);
                    });
                }
            }
        });
        Relay {
            path,
            streams,
            _dir: dir,
        }
    }

    fn host(&self) -> String {
        format!("unix://{}", self.path.display())
    }

    /// Cuts every connection and refuses new ones.
    fn cut(&self) {
        let _ = std::fs::remove_file(&self.path);
        for stream in self.streams.lock().unwrap().iter() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// Runs `sleep 30` in the sandbox while `fault` strikes; the exec's result.
async fn exec_under<C: SandboxClient>(
    client: &C,
    sandbox: &Sandbox,
    fault: impl std::future::Future<Output = ()>,
) -> Result<i64, SessionError> {
    let request = ExecRequest::new(["sleep", "30"]);
    let mut output = agentc_engine::session::Captured::default();
    let exec = client.exec(sandbox, &request, &mut output);
    let started = std::time::Instant::now();
    let (result, ()) = tokio::join!(exec, fault);
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the exec waited for the command"
    );
    result
}

#[test]
fn live_faults_mid_exec_are_clear_errors_through_both_backends() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "faults";
    let Some(image) = setup(test) else { return };
    let profile = format!("agentc-live-sess-{test}-{}", std::process::id());
    let guard = LeakGuard::new(test, &profile);
    let _cleanup = Cleanup {
        profile: profile.clone(),
        network: None,
        other: Vec::new(),
    };
    let work = tempfile::tempdir().unwrap();
    for backend in ["cli", "api"] {
        // The container removed while a command runs in it.
        let gone = spec(
            &profile,
            &format!("{profile}-gone-{backend}"),
            &image,
            work.path(),
            Network::None,
        );
        let name = format!("{profile}-gone-{backend}");
        let result = runtime().block_on(async {
            let remove = async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                docker(&["rm", "--force", &name]).unwrap();
            };
            match backend {
                "cli" => {
                    let client = cli_client(client_env());
                    let sandbox = client.create(&gone).await.unwrap();
                    exec_under(&client, &sandbox, remove).await
                }
                _ => {
                    let client = api_client(client_env()).await;
                    let sandbox = client.create(&gone).await.unwrap();
                    exec_under(&client, &sandbox, remove).await
                }
            }
        });
        let error = result.expect_err("the exec fails");
        assert!(
            matches!(error, SessionError::Gone { .. }),
            "{backend}: {error}"
        );
        assert_eq!(
            error.with_hint().to_string(),
            format!("container {name} went away while trying to run the command"),
            "{backend}"
        );
        assert_eq!(error.exit_code(), 125);

        // The daemon connection lost while a command runs.
        let lost = spec(
            &profile,
            &format!("{profile}-lost-{backend}"),
            &image,
            work.path(),
            Network::None,
        );
        let relay = Relay::start();
        let mut env = client_env();
        env.insert("DOCKER_HOST".to_string(), relay.host());
        let result = runtime().block_on(async {
            let cut = async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                relay.cut();
            };
            match backend {
                "cli" => {
                    let client = cli_client(env);
                    let sandbox = client.create(&lost).await.unwrap();
                    exec_under(&client, &sandbox, cut).await
                }
                _ => {
                    let client = api_client(env).await;
                    let sandbox = client.create(&lost).await.unwrap();
                    exec_under(&client, &sandbox, cut).await
                }
            }
        });
        let error = result.expect_err("the exec fails");
        assert_eq!(error.exit_code(), 125, "{backend}: {error}");
        assert!(
            error
                .with_hint()
                .to_string()
                .starts_with("lost the connection to the docker daemon"),
            "{backend}: {error}"
        );
        // Nothing is left once the daemon is reachable again.
        let report = runtime().block_on(async {
            let client = api_client(client_env()).await;
            let sandbox = client
                .find(&format!("{profile}-lost-{backend}"))
                .await
                .unwrap();
            client.delete(&sandbox).await
        });
        assert!(report.removed && report.left.is_empty(), "{report:?}");
    }
    guard.finish();
}

/// A server of the test's own on its outside network: busybox httpd answering `page`.
fn start_server(image: &str, name: &str, network: &str, profile: &str, page: &str) -> String {
    let script = format!(
        "mkdir -p /tmp/w && echo {page} > /tmp/w/index.html && exec httpd -f -p 80 -h /tmp/w"
    );
    docker(&[
        "run",
        "-d",
        &format!("--name={name}"),
        &format!("--label={PROFILE_LABEL}-server={profile}"),
        &format!("--network={network}"),
        image,
        "sh",
        "-c",
        &script,
    ])
    .expect("start a server");
    docker(&[
        "inspect",
        "--format",
        "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
        name,
    ])
    .expect("the server's address")
    .trim()
    .to_string()
}

/// A library user's sandbox behind the egress proxy ([`SandboxClient::create`] of a launch
/// whose allowlist is enforced outside), through both clients: the companion is made first,
/// the allowlisted server of the test's own answers through the proxy and another one on the
/// same outside network is refused; `delete` removes the sandbox with its proxy, isolated
/// network and whatever else was made for it.
#[test]
fn live_a_library_sandbox_behind_the_egress_proxy_holds_its_allowlist_and_deletes_whole() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "live_a_library_sandbox_behind_the_egress_proxy";
    let Some(image) = setup(test) else { return };
    // The egress proxy is an image of the agentc binary, not of this test executable.
    let proxy = ProxyExecutable::new(agentc_conformance::binary::agentc_binary());
    for backend in ["cli", "api"] {
        let profile = format!("agentc-live-sess-egress-{backend}-{}", std::process::id());
        let guard = LeakGuard::new(test, &profile);
        let out = format!("{profile}-out");
        let (allowed_name, other_name) = (format!("{profile}-allowed"), format!("{profile}-other"));
        let cleanup = Cleanup {
            profile: profile.clone(),
            network: Some(out.clone()),
            other: vec![allowed_name.clone(), other_name.clone()],
        };
        docker(&["network", "create", "--internal", &out]).expect("the outside network");
        let allowed = start_server(&image, &allowed_name, &out, &profile, "page-allowed");
        let other = start_server(&image, &other_name, &out, &profile, "page-other");
        let text = format!(
            "name = \"{profile}\"\nagent = \"custom\"\n\n[image]\nref = \"{image}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n\n[egress]\nhosts = [\"{allowed}\"]\noutside_network = \"{out}\"\n"
        );
        let loaded = agentc_policy::load("egress.toml", &text).expect("the profile loads");
        let dir = tempfile::tempdir().expect("tempdir");
        let dir_text = dir.path().to_string_lossy().into_owned();
        let inputs = agentc_policy::ResolveInputs {
            instance: agentc_policy::Instance {
                start: agentc_policy::Start::Session,
                default_name: Some(agentc_engine::session::session_name(&profile)),
                ..agentc_policy::Instance::default()
            },
            ..agentc_policy::ResolveInputs::new(
                LaunchKind::Run,
                dir_text.clone(),
                dir_text.clone(),
                dir_text,
            )
        };
        let spec = agentc_policy::resolve(&loaded, &inputs, &agentc_policy::RealPaths)
            .expect("the launch resolves");
        let transcript = runtime().block_on(async {
            match backend {
                "cli" => {
                    let client = cli_client(client_env()).with_proxy_executable(proxy.clone());
                    egress_script(&client, &spec, &allowed, &other).await
                }
                _ => {
                    let client = api_client(client_env())
                        .await
                        .with_proxy_executable(proxy.clone());
                    egress_script(&client, &spec, &allowed, &other).await
                }
            }
        });
        let (state, fetched, refused, report) = transcript;
        assert_eq!(state, "up", "{backend}");
        assert_eq!(fetched, (0, "page-allowed".to_string()), "{backend}");
        assert_ne!(refused.0, 0, "{backend}: {refused:?}");
        assert!(refused.1.contains("403"), "{backend}: {refused:?}");
        assert!(!refused.1.contains("page-other"), "{backend}: {refused:?}");
        assert!(
            report.removed && report.left.is_empty(),
            "{backend}: {report:?}"
        );
        // Nothing made for the sandbox is left: no proxy, no isolated network.
        let made_for = format!("label=io.agentc.egress-for={}", spec_name(&spec));
        assert_eq!(
            docker(&["ps", "-aq", "--filter", &made_for])
                .unwrap()
                .trim(),
            ""
        );
        assert_eq!(
            docker(&["network", "ls", "-q", "--filter", &made_for])
                .unwrap()
                .trim(),
            ""
        );
        drop(cleanup);
        guard.finish();
    }
}

/// The container name of a session's launch.
fn spec_name(spec: &LaunchSpec) -> String {
    match &spec.action {
        Action::Container(container) => container.name.clone().unwrap_or_default(),
        Action::Build(_) => String::new(),
    }
}

/// Creates the sandbox, reads its egress state, fetches from the allowlisted and the other
/// server, and deletes it: (state, (exit, body) allowed, (exit, output) other, delete report).
async fn egress_script<C: SandboxClient>(
    client: &C,
    spec: &LaunchSpec,
    allowed: &str,
    other: &str,
) -> (
    String,
    (i64, String),
    (i64, String),
    agentc_engine::session::DeleteReport,
) {
    let sandbox = client.create(spec).await.expect("create behind the proxy");
    let state = match client.egress(&sandbox).await {
        Ok(Some(egress)) => egress.state.cell(),
        other => format!("{other:?}"),
    };
    let fetch = |address: &str| {
        ExecRequest::new(["sh", "-c", &format!("wget -q -O- http://{address}/ 2>&1")])
    };
    let output = |result: Result<agentc_engine::session::ExecOutput, SessionError>| {
        let output = result.expect("exec");
        (
            output.exit_code,
            String::from_utf8_lossy(&output.stdout).trim().to_string(),
        )
    };
    let fetched = output(client.exec_output(&sandbox, &fetch(allowed)).await);
    let refused = output(client.exec_output(&sandbox, &fetch(other)).await);
    let report = client.delete(&sandbox).await;
    (state, fetched, refused, report)
}
