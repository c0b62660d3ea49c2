//! Live tests of what agentc says about the egress companions it launched: `agentc ps` shows
//! whether a sandbox's egress proxy is up, down or missing, `agentc egress log` prints the
//! proxy's decision lines and says when egress is down, and a launch whose isolated network a
//! killed launch left behind names it and its removal, which `agentc doctor` lists too.
//!
//! Each test makes its own outside network (`--internal`, so nothing leaves the machine) and
//! launches sandboxes of the busybox test image behind the proxy into it, through both
//! backends. The only request a sandbox makes is to a forbidden name, which the proxy refuses
//! without looking it up. Everything is named `agentc-t-estate-PID-...` and removed by a guard,
//! also when a test fails.
//!
//! Needs the daemon: skips with a printed reason without one, fails instead when
//! `AGENTC_REQUIRE_DOCKER=1`.

use crate::common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{describe, docker, require_daemon, test_image, text};

/// A test's outside network and the profiles it launched; all of it removed on drop.
struct Lab {
    id: String,
    out: String,
    dir: tempfile::TempDir,
    profiles: Vec<String>,
}

impl Lab {
    fn new(test: &str) -> Lab {
        let id = format!("agentc-t-estate-{}-{test}", std::process::id());
        let out = format!("{id}-out");
        docker(&["network", "create", "--internal", &out]).expect("create the outside network");
        Lab {
            id,
            out,
            dir: tempfile::tempdir().expect("tempdir"),
            profiles: Vec::new(),
        }
    }

    /// Writes a sandbox profile idling in the busybox image; behind the egress proxy (through
    /// the outside network) unless `egress` says otherwise. Returns its path.
    fn profile(&mut self, name: &str, egress: &str) -> String {
        let profile = format!("{}-{name}", self.id);
        let egress = if egress.is_empty() {
            format!(
                "hosts = [\"allowed.test\"]\noutside_network = \"{}\"\n",
                self.out
            )
        } else {
            egress.to_string()
        };
        let body = format!(
            "name = \"{profile}\"\nagent = \"custom\"\n\n[image]\nref = \"{}\"\n\
             command = [\"tail\", \"-f\", \"/dev/null\"]\n\n[egress]\n{egress}",
            test_image()
        );
        let path = self.dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, body).expect("write the profile");
        self.profiles.push(profile);
        path.to_string_lossy().into_owned()
    }

    /// What agentc left of a profile: its containers and its networks.
    fn left(&self, profile: &str) -> (String, String) {
        let filter = format!("label=io.agentc.profile={profile}");
        (
            docker(&["ps", "-a", "--format", "{{.Names}}", "--filter", &filter])
                .unwrap_or_default(),
            docker(&[
                "network",
                "ls",
                "--format",
                "{{.Name}}",
                "--filter",
                &filter,
            ])
            .unwrap_or_default(),
        )
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
        }
        let _ = docker(&["network", "rm", &self.out]);
    }
}

fn agentc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentc"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("agentc runs")
}

/// `agentc run PROFILE --backend BACKEND` of a detached sandbox: its name.
fn launch(profile: &str, backend: &str) -> String {
    let output = agentc(&["run", profile, "--backend", backend]);
    assert!(output.status.success(), "{}", describe(&output));
    text(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("started "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no sandbox started: {}", describe(&output)))
        .to_string()
}

/// The EGRESS cell of `name`'s row in `agentc ps`, and its `egress` object in
/// `agentc ps --format json`.
fn ps_egress(name: &str) -> (String, serde_json::Value) {
    let table = agentc(&["ps"]);
    assert!(table.status.success(), "{}", describe(&table));
    let table = text(&table.stdout);
    let header = table.lines().next().unwrap_or_default().to_string();
    let start = header.find("EGRESS").expect("an EGRESS column");
    let end = header.find("NETWORK").expect("a NETWORK column");
    let row = table
        .lines()
        .find(|line| line.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("{name} not in `agentc ps`:\n{table}"));
    let cell = row.get(start..end).unwrap_or_default().trim().to_string();
    let json = agentc(&["ps", "--format", "json"]);
    let rows: serde_json::Value = serde_json::from_slice(&json.stdout).expect("ps json");
    let egress = rows
        .as_array()
        .expect("an array")
        .iter()
        .find(|row| row["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in `agentc ps --format json`"))["egress"]
        .clone();
    (cell, egress)
}

/// The decision lines among `stdout` (JSON objects), as values.
fn decisions(stdout: &[u8]) -> Vec<serde_json::Value> {
    text(stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn egress_state_is_shown_and_a_dead_proxy_is_an_error(backend: &str) {
    let mut lab = Lab::new(&format!("state-{backend}"));
    let profile = lab.profile("a", "");
    let sandbox = launch(&profile, backend);
    let proxy = format!("{sandbox}-egress-proxy");

    // A second launch of the running sandbox names it, not a leftover.
    let again = agentc(&["run", &profile, "--backend", backend]);
    assert_eq!(again.status.code(), Some(125), "{}", describe(&again));
    assert!(
        text(&again.stderr).contains(&format!(
            "it belongs to the container {sandbox} (running), which still exists\n  hint: \
             `agentc rm {sandbox}` removes it"
        )),
        "{}",
        describe(&again)
    );

    // Up: in the table and in JSON.
    let (cell, json) = ps_egress(&sandbox);
    assert_eq!(cell, "up");
    assert_eq!(json["state"], "up", "{json}");
    assert_eq!(json["proxy"], proxy.as_str(), "{json}");
    // The proxy's own row has no egress of its own.
    let (cell, json) = ps_egress(&proxy);
    assert_eq!((cell.as_str(), json), ("-", serde_json::Value::Null));

    // A request from the sandbox: the proxy refuses it by name, and logs its decision.
    let refused = docker(&[
        "exec",
        &sandbox,
        "wget",
        "-q",
        "-O-",
        "http://forbidden.test/",
    ])
    .unwrap_err();
    assert!(refused.contains("403"), "{refused}");
    // The default is a table: the header, then a row per line, the refusal among them.
    let table = agentc(&["egress", "log", &sandbox, "--backend", backend]);
    assert_eq!(table.status.code(), Some(0), "{}", describe(&table));
    let rows = text(&table.stdout);
    assert!(
        rows.starts_with("TIME ") && rows.lines().next().unwrap().ends_with(" BYTES"),
        "{rows}"
    );
    assert!(
        rows.lines().any(|row| row.contains(" forbidden.test:80 ")
            && row.contains(" deny ")
            && row.contains(" decision ")),
        "{rows}"
    );
    assert!(!rows.contains("{\""), "no raw JSON in the table: {rows}");
    for name in [sandbox.as_str(), profile.as_str()] {
        let log = agentc(&[
            "egress",
            "log",
            name,
            "--backend",
            backend,
            "--format",
            "json",
        ]);
        assert_eq!(log.status.code(), Some(0), "{}", describe(&log));
        let lines = decisions(&log.stdout);
        assert!(
            lines
                .iter()
                .any(|line| line["host"] == "forbidden.test" && line["decision"] == "deny"),
            "{}",
            describe(&log)
        );
        // Every line of the proxy's stdout, unchanged.
        assert_eq!(
            text(&log.stdout).trim(),
            docker(&["logs", &proxy])
                .unwrap()
                .lines()
                .filter(|line| line.starts_with('{'))
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert!(!text(&log.stderr).contains("error:"), "{}", describe(&log));
    }

    // Followed while the proxy is killed: the lines, then the error line, exit 1.
    let follow = Command::new(env!("CARGO_BIN_EXE_agentc"))
        .args([
            "egress",
            "log",
            "--follow",
            &sandbox,
            "--backend",
            backend,
            "--format",
            "json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agentc egress log --follow");
    std::thread::sleep(Duration::from_secs(2));
    docker(&["kill", &proxy]).expect("kill the proxy");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut follow = follow;
    while follow.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = follow.kill();
            panic!("`agentc egress log --follow` did not end when the proxy died");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let followed = follow.wait_with_output().expect("its output");
    assert_eq!(followed.status.code(), Some(1), "{}", describe(&followed));
    let down = format!(
        "error: egress of {sandbox} is down: its egress proxy {proxy} exited with code 137 at "
    );
    assert!(
        text(&followed.stderr).contains(&down),
        "{}",
        describe(&followed)
    );
    assert!(
        decisions(&followed.stdout)
            .iter()
            .any(|line| line["host"] == "forbidden.test"),
        "{}",
        describe(&followed)
    );

    // Down: in the table, in JSON, and as the error of `egress log`.
    let (cell, json) = ps_egress(&sandbox);
    assert_eq!(cell, "down (exited 137)");
    assert_eq!(json["state"], "down", "{json}");
    assert_eq!(json["reason"], "exited", "{json}");
    assert_eq!(json["exit_code"], 137, "{json}");
    assert!(
        json["since"]
            .as_str()
            .is_some_and(|since| since.starts_with("20")),
        "{json}"
    );
    let log = agentc(&["egress", "log", &sandbox, "--backend", backend]);
    assert_eq!(log.status.code(), Some(1), "{}", describe(&log));
    assert!(text(&log.stderr).contains(&down), "{}", describe(&log));
    assert!(
        text(&log.stderr).contains("hint: `agentc start"),
        "{}",
        describe(&log)
    );

    // Missing: the proxy removed by hand.
    docker(&["rm", &proxy]).expect("remove the proxy");
    let (cell, json) = ps_egress(&sandbox);
    assert_eq!(cell, "missing");
    assert_eq!(json["network"], format!("{sandbox}-egress"), "{json}");
    let log = agentc(&["egress", "log", &sandbox, "--backend", backend]);
    assert_eq!(log.status.code(), Some(1), "{}", describe(&log));
    assert!(
        text(&log.stderr).contains(&format!("error: egress of {sandbox} is missing")),
        "{}",
        describe(&log)
    );

    // A sandbox without the proxy: no egress state, and no egress log.
    let plain = lab.profile("plain", "mode = \"deny\"\n");
    let plain_box = launch(&plain, backend);
    let (cell, json) = ps_egress(&plain_box);
    assert_eq!((cell.as_str(), json), ("-", serde_json::Value::Null));
    let log = agentc(&["egress", "log", &plain_box, "--backend", backend]);
    assert_eq!(log.status.code(), Some(1), "{}", describe(&log));
    assert!(
        text(&log.stderr).contains("is not behind agentc's egress proxy"),
        "{}",
        describe(&log)
    );

    // `agentc rm` leaves nothing of either.
    for name in [&sandbox, &plain_box] {
        let removed = agentc(&["rm", name]);
        assert!(removed.status.success(), "{}", describe(&removed));
    }
    for profile in &lab.profiles {
        assert_eq!(
            lab.left(profile),
            (String::new(), String::new()),
            "{profile}"
        );
    }
}

#[test]
fn egress_state_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    if require_daemon("egress_state_through_the_cli_backend") {
        egress_state_is_shown_and_a_dead_proxy_is_an_error("cli");
    }
}

#[test]
fn egress_state_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    if require_daemon("egress_state_through_the_api_backend") {
        egress_state_is_shown_and_a_dead_proxy_is_an_error("api");
    }
}

/// A launch killed after it created its isolated network leaves the network (and, killed
/// later, its proxy): `agentc doctor` lists them, and the next launch of that name through
/// either backend removes them, says so on stderr and succeeds; nothing is left.
#[test]
fn a_leftover_isolated_network_is_named_listed_and_removed() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("a_leftover_isolated_network_is_named_listed_and_removed") {
        return;
    }
    let mut lab = Lab::new("leftover");
    for backend in ["cli", "api"] {
        let profile = lab.profile(&format!("left-{backend}"), "");
        // The first steps of the launch as rendered: its network, names and labels included.
        let rendered = agentc(&["render", &profile, "--format", "shell"]);
        assert!(rendered.status.success(), "{}", describe(&rendered));
        let steps: Vec<String> = text(&rendered.stdout).lines().map(str::to_string).collect();
        let create = steps[0].clone();
        assert!(create.starts_with("docker network create "), "{create}");
        let network = create.rsplit(' ').next().unwrap().to_string();
        let sandbox = network
            .strip_suffix("-egress")
            .expect("NAME-egress")
            .to_string();
        let proxy = format!("{sandbox}-egress-proxy");
        let mut killed = vec![create];
        if backend == "api" {
            // Killed later: the proxy was created and connected too (the test image stands in
            // for the proxy's, which the launch would have imported).
            assert!(steps[1].starts_with("docker create "), "{}", steps[1]);
            assert!(
                steps[2].starts_with("docker network connect "),
                "{}",
                steps[2]
            );
            killed.push(steps[1].replacen(" agentc-egress ", &format!(" {} ", test_image()), 1));
            killed.push(steps[2].clone());
        }
        for step in &killed {
            let made = Command::new("sh").args(["-c", step]).output().unwrap();
            assert!(made.status.success(), "{step}: {}", describe(&made));
        }

        let doctor = agentc(&["doctor"]);
        let report = text(&doctor.stdout);
        let line = report
            .lines()
            .find(|line| line.contains("egress-leftovers"))
            .unwrap_or_else(|| panic!("no egress-leftovers check: {report}"));
        assert!(line.starts_with("warn"), "{line}");
        assert!(
            line.contains(&format!(
                "isolated network {network}: no container of {sandbox} uses it"
            )),
            "{line}"
        );
        if backend == "api" {
            assert!(
                line.contains(&format!(
                    "egress proxy {proxy}: no container of {sandbox} is behind it"
                )),
                "{line}"
            );
        }

        // The next launch of that name removes them, says so, and succeeds.
        let output = agentc(&["run", &profile, "--backend", backend]);
        assert!(output.status.success(), "{}", describe(&output));
        let removed = if backend == "api" {
            format!("proxy {proxy}, network {network}")
        } else {
            format!("network {network}")
        };
        assert!(
            text(&output.stderr).contains(&format!(
                "agentc: removed the egress companion of {sandbox}, which is gone (its launch \
                 was killed): {removed}"
            )),
            "{}",
            describe(&output)
        );
        let doctor = text(&agentc(&["doctor"]).stdout);
        let line = doctor
            .lines()
            .find(|line| line.contains("egress-leftovers"))
            .unwrap_or_default();
        assert!(
            !line.contains(&format!("isolated network {network}:")),
            "{doctor}"
        );
        assert_eq!(ps_egress(&sandbox).0, "up");
        let removed = agentc(&["rm", &sandbox]);
        assert!(removed.status.success(), "{}", describe(&removed));
        assert_eq!(
            lab.left(lab.profiles.last().unwrap()),
            (String::new(), String::new())
        );
    }
}

/// `agentc run --name N`: a second sandbox of one profile beside the first, each with its own
/// companion; `agentc rm N` removes N's set and leaves the first running. Another network
/// holds the /28 block of N's name, so the daemon refuses N's isolated network there: the
/// companion moves to another block and keeps its names (`N-egress`, `N-egress-proxy`).
fn a_named_second_sandbox_runs_beside_the_first(backend: &str) {
    let mut lab = Lab::new(&format!("named-{backend}"));
    let profile_file = lab.profile("named", "");
    let profile = lab.profiles.last().unwrap().clone();
    let first = launch(&profile_file, backend);
    let second_name = format!("{}-second", lab.id);
    let held = agentc_policy::spec::isolated_subnet(&second_name).1;
    let holder = Holder(format!("{}-holder", lab.id));
    docker(&[
        "network",
        "create",
        "--internal",
        "--subnet",
        &held,
        &holder.0,
    ])
    .expect("hold the block of the second sandbox's name");
    let output = agentc(&[
        "run",
        &profile_file,
        "--backend",
        backend,
        "--name",
        &second_name,
    ]);
    assert!(output.status.success(), "{}", describe(&output));
    assert!(
        text(&output.stdout).contains(&format!("started {second_name} ")),
        "{}",
        describe(&output)
    );
    for name in [&first, &second_name] {
        let (cell, _) = ps_egress(name);
        assert_eq!(cell, "up", "{name}");
    }
    let (_, networks) = lab.left(&profile);
    let mut networks: Vec<&str> = networks.lines().collect();
    networks.sort();
    assert_eq!(
        networks,
        [format!("{first}-egress"), format!("{second_name}-egress")],
        "each sandbox has its own isolated network"
    );
    let subnet = docker(&[
        "network",
        "inspect",
        "--format",
        "{{range .IPAM.Config}}{{.Subnet}}{{end}}",
        &format!("{second_name}-egress"),
    ])
    .expect("inspect the second sandbox's network");
    assert!(
        subnet.trim() != held && subnet.trim().starts_with("10.213."),
        "{subnet} (the held block is {held})"
    );
    // A bad name is refused before anything is created.
    let bad = agentc(&["run", &profile_file, "--backend", backend, "--name=a/b"]);
    assert_eq!(bad.status.code(), Some(65), "{}", describe(&bad));
    assert!(
        text(&bad.stderr).contains("is not a container name"),
        "{}",
        describe(&bad)
    );
    let removed = agentc(&["rm", &second_name]);
    assert!(removed.status.success(), "{}", describe(&removed));
    let (containers, networks) = lab.left(&profile);
    let mut containers: Vec<&str> = containers.lines().collect();
    containers.sort();
    assert_eq!(
        containers,
        [first.clone(), format!("{first}-egress-proxy")],
        "only the first sandbox's set is left"
    );
    assert_eq!(networks.trim(), format!("{first}-egress"));
}

/// A network a test made to hold a subnet, removed on drop.
struct Holder(String);

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = docker(&["network", "rm", &self.0]);
    }
}

#[test]
fn a_named_second_sandbox_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    if require_daemon("a_named_second_sandbox_through_the_cli_backend") {
        a_named_second_sandbox_runs_beside_the_first("cli");
    }
}

#[test]
fn a_named_second_sandbox_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    if require_daemon("a_named_second_sandbox_through_the_api_backend") {
        a_named_second_sandbox_runs_beside_the_first("api");
    }
}

/// "No egress, but reachable": a deny sandbox that publishes a port is reached on 127.0.0.1
/// through the proxy's relay, and every request out is refused, through either backend.
fn deny_with_a_published_port_is_reachable_and_reaches_nothing(backend: &str) {
    let mut lab = Lab::new(&format!("denypub-{backend}"));
    let profile = lab.profile(
        "denypub",
        "mode = \"deny\"\n\n[network]\npublish = [8080]\n",
    );
    let sandbox = launch(&profile, backend);
    docker(&[
        "exec",
        &sandbox,
        "sh",
        "-c",
        "echo reached > /tmp/index.html",
    ])
    .unwrap();
    docker(&[
        "exec", "-d", &sandbox, "httpd", "-f", "-p", "8080", "-h", "/tmp",
    ])
    .unwrap();
    let port = agentc(&["port", &sandbox, "8080", "--backend", backend]);
    assert!(port.status.success(), "{}", describe(&port));
    let address = text(&port.stdout).trim().to_string();
    assert!(address.starts_with("127.0.0.1:"), "{address}");
    // The published port answers (a few tries while httpd starts).
    let mut answer = String::new();
    for _ in 0..20 {
        if let Ok(mut stream) = std::net::TcpStream::connect(&address) {
            use std::io::{Read, Write};
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = stream.write_all(b"GET /index.html HTTP/1.0\r\n\r\n");
            let _ = stream.read_to_string(&mut answer);
            if answer.contains("reached") {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(answer.contains("reached"), "{answer}");
    // Nothing out: the proxy refuses, with a line naming the request.
    let refused = docker(&[
        "exec",
        &sandbox,
        "wget",
        "-q",
        "-O-",
        "http://forbidden.test/",
    ])
    .unwrap_err();
    assert!(refused.contains("403"), "{refused}");
    let log = agentc(&[
        "egress",
        "log",
        &sandbox,
        "--backend",
        backend,
        "--format",
        "json",
    ]);
    let lines = decisions(&log.stdout);
    assert!(
        lines.iter().any(|line| line["kind"] == "relay"),
        "{}",
        describe(&log)
    );
    assert!(
        lines
            .iter()
            .any(|line| line["host"] == "forbidden.test" && line["decision"] == "deny"),
        "{}",
        describe(&log)
    );
    let removed = agentc(&["rm", &sandbox]);
    assert!(removed.status.success(), "{}", describe(&removed));
    let profile_name = lab.profiles.last().unwrap().clone();
    assert_eq!(lab.left(&profile_name), (String::new(), String::new()));
}

#[test]
fn deny_with_a_published_port_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    if require_daemon("deny_with_a_published_port_through_the_cli_backend") {
        deny_with_a_published_port_is_reachable_and_reaches_nothing("cli");
    }
}

#[test]
fn deny_with_a_published_port_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    if require_daemon("deny_with_a_published_port_through_the_api_backend") {
        deny_with_a_published_port_is_reachable_and_reaches_nothing("api");
    }
}

/// Every command that talks to the engine first removes what a killed launch left, through
/// either backend, and says so: a listing (`ps`, `pool ls`, `snapshot ls`), a session command
/// that then fails (`exec` of no such sandbox), a lock (the lifecycle's image query) and a
/// fleet (`run --count`). Each meets the isolated network a launch killed after its first
/// step left behind (made here by that step as rendered). The fleet is then removed by
/// `rm --profile FILE`, and a second `rm --profile` says nothing is left.
#[test]
fn every_command_that_talks_to_the_engine_reaps_first_through_either_backend() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("every_command_that_talks_to_the_engine_reaps_first_through_either_backend")
    {
        return;
    }
    let mut lab = Lab::new("reapall");
    for backend in ["cli", "api"] {
        let path = lab.profile(&format!("reap-{backend}"), "");
        let profile = lab.profiles.last().unwrap().clone();
        let rendered = agentc(&["render", &path, "--format", "shell"]);
        assert!(rendered.status.success(), "{}", describe(&rendered));
        let create = text(&rendered.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        assert!(create.starts_with("docker network create "), "{create}");
        let network = create.rsplit(' ').next().unwrap().to_string();
        let sandbox = network.strip_suffix("-egress").expect("NAME-egress");
        let commands: [Vec<&str>; 6] = [
            vec!["ps"],
            vec!["pool", "ls"],
            vec!["snapshot", "ls"],
            vec!["exec", "agentc-t-no-such-sandbox", "true"],
            vec!["lock", &path],
            vec!["run", &path, "--count", "2"],
        ];
        for command in commands {
            let made = Command::new("sh").args(["-c", &create]).output().unwrap();
            assert!(made.status.success(), "{create}: {}", describe(&made));
            let mut args = command.clone();
            args.extend(["--backend", backend]);
            let output = Command::new(env!("CARGO_BIN_EXE_agentc"))
                .args(&args)
                .env("AGENTC_TEST_REAP_AT_ONCE", &profile)
                .stdin(Stdio::null())
                .output()
                .expect("agentc runs");
            let said = format!(
                "agentc: removed the egress companion of {sandbox}, which is gone (its launch \
                 was killed): network {network}"
            );
            assert!(
                text(&output.stderr).contains(&said),
                "agentc {args:?} did not reap first: {}",
                describe(&output)
            );
            let networks = docker(&["network", "ls", "--format", "{{.Name}}"]).unwrap();
            assert!(
                !networks.lines().any(|name| name == network),
                "agentc {args:?} left {network}"
            );
            if command[0] == "run" {
                assert!(output.status.success(), "{}", describe(&output));
                // `--profile` takes the profile's file as well as its name.
                let removed = agentc(&["rm", "--profile", &path, "--backend", backend]);
                assert!(removed.status.success(), "{}", describe(&removed));
                assert!(
                    text(&removed.stdout)
                        .lines()
                        .any(|line| line.starts_with("removed ")
                            && line.ends_with(&format!("{profile}-1"))),
                    "{}",
                    describe(&removed)
                );
                let again = agentc(&["rm", "--profile", &profile, "--backend", backend]);
                assert!(again.status.success(), "{}", describe(&again));
                assert!(
                    text(&again.stderr).contains(&format!(
                        "agentc: nothing agentc made for profile {profile} is left to remove"
                    )),
                    "{}",
                    describe(&again)
                );
            }
        }
        assert_eq!(lab.left(&profile), (String::new(), String::new()));
    }
}
