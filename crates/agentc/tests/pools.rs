//! Warm pools (issue 22), live: `agentc pool fill`, the claim of `agentc run`, `pool ls`
//! and `pool drain`, through both backends. Each lab makes its own outside network
//! (`--internal`, so nothing leaves the machine) and its own home volume; everything is named
//! `agentc-t-pools-PID-...` and removed by the lab's guard, also when a test fails.
//!
//! Needs the daemon: skips with a printed reason without one, fails instead when
//! `AGENTC_REQUIRE_DOCKER=1`.

use crate::common;
use crate::common::agent_image;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use agent_image::agent_image;
use common::{describe, docker, require_daemon, test_image, text};

/// A test's outside network, home volume and profile directory; removed on drop.
struct Lab {
    id: String,
    out: String,
    home: String,
    dir: tempfile::TempDir,
}

impl Lab {
    fn new(test: &str) -> Lab {
        let id = format!("agentc-t-pools-{}-{test}", std::process::id());
        let out = format!("{id}-out");
        let home = format!("{id}-home");
        docker(&["network", "create", "--internal", &out]).expect("create the outside network");
        docker(&["volume", "create", &home]).expect("create the home volume");
        Lab {
            id,
            out,
            home,
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// Writes the lab's profile: a Claude Code run (attached, no workspace bind) behind the
    /// egress proxy, `extra` appended. Returns its path.
    fn profile(&self, extra: &str) -> String {
        let body = format!(
            "name = \"{}\"\nagent = \"claude-code\"\nhome_volume = \"{}\"\n\n[workspace]\nmount = false\n\n[egress]\nhosts = [\"allowed.test\"]\noutside_network = \"{}\"\n{extra}",
            self.id, self.home, self.out
        );
        let path = self.dir.path().join("pool.toml");
        std::fs::write(&path, body).expect("write the profile");
        path.to_string_lossy().into_owned()
    }

    fn agentc(&self, args: &[&str]) -> Output {
        self.agentc_with(args, &[])
    }

    /// `agentc ARGS` with `env` added to its environment; every command of a lab keeps its
    /// state (the pools' credential key) in the lab's own directory.
    fn agentc_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_agentc"))
            .args(args)
            .current_dir(self.dir.path())
            .env("AGENTC_STATE_DIR", self.dir.path().join("state"))
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .expect("agentc runs")
    }

    fn spawn(&self, args: &[&str]) -> Child {
        Command::new(env!("CARGO_BIN_EXE_agentc"))
            .args(args)
            .current_dir(self.dir.path())
            .env("AGENTC_STATE_DIR", self.dir.path().join("state"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("agentc runs")
    }

    /// The names of the profile's containers (`docker ps -a`), egress proxies aside.
    fn containers(&self) -> Vec<String> {
        docker(&[
            "ps",
            "-a",
            "--filter",
            &format!("label=io.agentc.profile={}", self.id),
            "--format",
            "{{.Names}} {{.Label \"io.agentc.kind\"}}",
        ])
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.ends_with("egress-proxy"))
        .filter_map(|line| line.split_whitespace().next().map(str::to_string))
        .collect()
    }

    /// The idle members (`agentc-pool-...`).
    fn idle(&self) -> Vec<String> {
        let mut idle: Vec<String> = self
            .containers()
            .into_iter()
            .filter(|name| name.starts_with("agentc-pool-"))
            .collect();
        idle.sort();
        idle
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let filter = format!("label=io.agentc.profile={}", self.id);
        for container in docker(&["ps", "-aq", "--filter", &filter])
            .unwrap_or_default()
            .split_whitespace()
        {
            let _ = docker(&["rm", "--force", container]);
        }
        for network in docker(&["network", "ls", "-q", "--filter", &filter])
            .unwrap_or_default()
            .split_whitespace()
        {
            let _ = docker(&["network", "rm", network]);
        }
        for volume in docker(&["volume", "ls", "-q", "--filter", &filter])
            .unwrap_or_default()
            .split_whitespace()
        {
            let _ = docker(&["volume", "rm", "--force", volume]);
        }
        let _ = docker(&["network", "rm", &self.out]);
        let _ = docker(&["volume", "rm", "--force", &self.home]);
    }
}

fn fill(lab: &Lab, path: &str, backend: &str, size: &str) -> Output {
    let image = agent_image();
    let output = lab.agentc(&[
        "pool",
        "fill",
        path,
        "--size",
        size,
        "--backend",
        backend,
        "--image",
        &image,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    output
}

/// `agentc run PATH --image IMAGE -- -c SCRIPT` through `backend`, with `pool`.
fn claim_args(path: &str, backend: &str, pool: &str, script: &str) -> Vec<String> {
    [
        "run",
        path,
        "--backend",
        backend,
        "--image",
        &agent_image(),
        "--no-warnings",
        "--pool",
        pool,
        "--",
        "-c",
        script,
    ]
    .iter()
    .map(|arg| arg.to_string())
    .collect()
}

fn claim(lab: &Lab, path: &str, backend: &str, script: &str) -> Output {
    let args = claim_args(path, backend, "require", script);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    lab.agentc(&args)
}

/// The member a claim's stderr names (`warm start from pool (member NAME, ...)`).
fn member_of(output: &Output) -> String {
    let stderr = text(&output.stderr);
    let line = stderr
        .lines()
        .find(|line| line.contains("warm start from pool (member "))
        .unwrap_or_else(|| panic!("not a warm start: {}", describe(output)));
    line.split("(member ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn live_two_concurrent_claims_get_different_members_and_nothing_carries_over() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_two_concurrent_claims_get_different_members") {
        return;
    }
    for backend in ["cli", "api"] {
        let lab = Lab::new(&format!("conc-{backend}"));
        let path = lab.profile("");
        fill(&lab, &path, backend, "3");
        assert_eq!(lab.idle().len(), 3, "{:?}", lab.containers());
        // Two at once: each gets its own member.
        let script = "echo ok; sleep 1";
        let spawn = || {
            let args = claim_args(&path, backend, "require", script);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            lab.spawn(&args)
        };
        let (first, second) = (spawn(), spawn());
        let first = first.wait_with_output().expect("agentc ends");
        let second = second.wait_with_output().expect("agentc ends");
        for output in [&first, &second] {
            assert_eq!(output.status.code(), Some(0), "{}", describe(output));
            assert_eq!(text(&output.stdout).trim(), "ok", "{}", describe(output));
        }
        assert_ne!(member_of(&first), member_of(&second));
        // Claimed members are never returned: one idle member is left, nothing claimed.
        assert_eq!(lab.idle().len(), 1, "{:?}", lab.containers());
        assert_eq!(lab.containers().len(), 1, "{:?}", lab.containers());
        // Consecutive claims share no file, process or environment.
        fill(&lab, &path, backend, "2");
        let one = claim(
            &lab,
            &path,
            backend,
            "echo left > /tmp/mark; export LEFT=1; sleep 300 & hostname",
        );
        assert_eq!(one.status.code(), Some(0), "{}", describe(&one));
        let two = claim(
            &lab,
            &path,
            backend,
            "hostname; cat /tmp/mark 2>/dev/null || echo no-mark; echo env=${LEFT:-none}; ps | grep -c '[s]leep 300'; true",
        );
        assert_eq!(two.status.code(), Some(0), "{}", describe(&two));
        let lines: Vec<String> = text(&two.stdout).lines().map(str::to_string).collect();
        assert_ne!(
            lines[0],
            text(&one.stdout).trim(),
            "the hostname carried over"
        );
        assert_eq!(
            lines[1..],
            ["no-mark", "env=none", "0"],
            "{}",
            describe(&two)
        );
        assert_ne!(member_of(&one), member_of(&two));
        // Members are not each other's network peers: each has its own isolated network.
        fill(&lab, &path, backend, "2");
        let networks: Vec<String> = lab
            .idle()
            .iter()
            .map(|name| {
                docker(&[
                    "inspect",
                    "--format",
                    "{{range $k, $v := .NetworkSettings.Networks}}{{$k}}{{end}}",
                    name,
                ])
                .expect("inspect")
            })
            .collect();
        assert_eq!(networks.len(), 2);
        assert_ne!(networks[0], networks[1]);
        let drained = lab.agentc(&["pool", "drain", &path, "--backend", backend]);
        assert_eq!(drained.status.code(), Some(0), "{}", describe(&drained));
        assert!(lab.containers().is_empty(), "{:?}", lab.containers());
    }
}

#[test]
fn live_a_profile_change_drains_the_old_members() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_profile_change_drains_the_old_members") {
        return;
    }
    let lab = Lab::new("change");
    let path = lab.profile("");
    fill(&lab, &path, "cli", "2");
    let old = lab.idle();
    assert_eq!(old.len(), 2);
    let path = lab.profile("\n[resources]\nmemory = \"1g\"\n");
    let refilled = fill(&lab, &path, "api", "1");
    let stderr = text(&refilled.stderr);
    assert_eq!(
        stderr.matches("removed stale pool member").count(),
        2,
        "{}",
        describe(&refilled)
    );
    let new = lab.idle();
    assert_eq!(new.len(), 1);
    assert!(!old.contains(&new[0]));
    let listed = lab.agentc(&["pool", "ls", "--format", "json"]);
    let rows: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("json");
    let keys: std::collections::BTreeSet<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["profile"] == lab.id.as_str())
        .map(|row| row["key"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys.len(), 1, "{rows}");
    // The old members' companions went with them: one isolated network is left.
    let networks = docker(&[
        "network",
        "ls",
        "-q",
        "--filter",
        &format!("label=io.agentc.profile={}", lab.id),
    ])
    .unwrap_or_default();
    assert_eq!(networks.lines().count(), 1, "{networks}");
    // An orphan (a member that stopped) is reaped by the next fill, and replaced.
    docker(&["kill", &new[0]]).expect("kill the member");
    let refilled = fill(&lab, &path, "cli", "1");
    assert!(
        text(&refilled.stderr).contains(&format!("removed stale pool member {}", new[0])),
        "{}",
        describe(&refilled)
    );
    let now = lab.idle();
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now[0], new[0]);
}

#[test]
fn live_pool_require_with_an_empty_pool_exits_65_with_a_hint() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_pool_require_with_an_empty_pool_exits_65_with_a_hint") {
        return;
    }
    for backend in ["cli", "api"] {
        let lab = Lab::new(&format!("empty-{backend}"));
        let path = lab.profile("");
        let output = claim(&lab, &path, backend, "echo ok");
        assert_eq!(output.status.code(), Some(65), "{}", describe(&output));
        let stderr = text(&output.stderr);
        assert!(stderr.contains("agentc pool fill"), "{stderr}");
        assert!(lab.containers().is_empty(), "{:?}", lab.containers());
        // A profile no fill can pool (it binds the workspace): the hint is not the fill that
        // would refuse it (issue 40).
        let bound = lab.dir.path().join("bound.toml");
        let text_of = std::fs::read_to_string(&path).expect("the profile");
        std::fs::write(&bound, text_of.replace("mount = false", "mount = true")).unwrap();
        let bound = bound.to_string_lossy().into_owned();
        let output = claim(&lab, &bound, backend, "echo ok");
        assert_eq!(output.status.code(), Some(65), "{}", describe(&output));
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains("binds a host workspace") && stderr.contains("starts it cold"),
            "{stderr}"
        );
        assert!(!stderr.contains("pool fill"), "{stderr}");
        let image = agent_image();
        let args = ["pool", "fill", &bound, "--size", "1", "--backend", backend];
        let refused = lab.agentc(&[&args[..], &["--image", &image]].concat());
        assert_eq!(refused.status.code(), Some(65), "{}", describe(&refused));
        assert!(
            text(&refused.stderr).contains("cannot be pooled"),
            "{}",
            describe(&refused)
        );
        assert!(lab.containers().is_empty(), "{:?}", lab.containers());
    }
}

#[test]
fn live_sigint_during_a_claim_leaves_nothing_half_claimed() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_sigint_during_a_claim_leaves_nothing_half_claimed") {
        return;
    }
    let lab = Lab::new("sigint");
    let path = lab.profile("");
    fill(&lab, &path, "cli", "2");
    let before = lab.idle();
    let args = claim_args(&path, "cli", "require", "echo ready; sleep 30");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut child = lab.spawn(&args);
    // Wait for the claimed command to run, then interrupt.
    let started = Instant::now();
    while lab.idle().len() == before.len() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: kill(2) on our own child's pid, which has not been reaped.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let started = Instant::now();
    while child.try_wait().ok().flatten().is_none() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("agentc ends");
    assert_eq!(output.status.code(), Some(130), "{}", describe(&output));
    // The claimed member is gone with its companion; the other stays idle, untouched.
    let left = lab.containers();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(before.contains(&left[0]), "{left:?}");
    let proxies = docker(&[
        "ps",
        "-a",
        "--filter",
        &format!("label=io.agentc.profile={}", lab.id),
        "--filter",
        "label=io.agentc.kind=egress-proxy",
        "-q",
    ])
    .unwrap_or_default();
    assert_eq!(proxies.lines().count(), 1, "{proxies}");
}

#[test]
fn live_a_sandbox_claim_starts_its_command_in_the_background_and_rm_removes_it_whole() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_sandbox_claim_starts_its_command_in_the_background") {
        return;
    }
    let lab = Lab::new("sandbox");
    let body = format!(
        "name = \"{}\"\nagent = \"custom\"\n\n[image]\nref = \"{}\"\ncommand = [\"sh\", \"-c\", \"echo serving; exec tail -f /dev/null\"]\n\n[egress]\nhosts = [\"allowed.test\"]\noutside_network = \"{}\"\n",
        lab.id,
        test_image(),
        lab.out
    );
    let path = lab.dir.path().join("sandbox.toml");
    std::fs::write(&path, body).expect("write the profile");
    let path = path.to_string_lossy().into_owned();
    let filled = lab.agentc(&["pool", "fill", &path, "--size", "1", "--backend", "api"]);
    assert_eq!(filled.status.code(), Some(0), "{}", describe(&filled));
    // Idle: the launch's command has not run.
    let idle = lab.idle();
    let ps = docker(&["exec", &idle[0], "ps"]).expect("ps");
    assert!(!ps.contains("tail"), "{ps}");
    let claimed = lab.agentc(&["run", &path, "--no-warnings", "--pool", "require"]);
    assert_eq!(claimed.status.code(), Some(0), "{}", describe(&claimed));
    let stdout = text(&claimed.stdout);
    let name = stdout
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    assert!(name.starts_with("agentc-claim-"), "{}", describe(&claimed));
    let logs = logs_holding(&name, "serving");
    assert!(logs.contains("serving"), "{logs}");
    let ps = docker(&["exec", &name, "ps"]).expect("ps");
    assert!(ps.contains("tail -f /dev/null"), "{ps}");
    // A session command names it by its profile (idle members are not its sandbox).
    let exec = lab.agentc(&["exec", &lab.id, "--", "echo", "hi"]);
    assert_eq!(text(&exec.stdout).trim(), "hi", "{}", describe(&exec));
    let removed = lab.agentc(&["rm", &name]);
    assert_eq!(removed.status.code(), Some(0), "{}", describe(&removed));
    let left = docker(&[
        "ps",
        "-a",
        "--filter",
        &format!("label=io.agentc.profile={}", lab.id),
        "--format",
        "{{.Names}}",
    ])
    .unwrap_or_default();
    assert!(left.is_empty(), "{left}");
    let networks = docker(&[
        "network",
        "ls",
        "-q",
        "--filter",
        &format!("label=io.agentc.profile={}", lab.id),
    ])
    .unwrap_or_default();
    assert!(networks.is_empty(), "{networks}");
}

/// Containers of a test's own on its outside network; removed on drop (before the lab, which
/// is declared first).
struct Servers(Vec<String>);

impl Drop for Servers {
    fn drop(&mut self) {
        for server in &self.0 {
            let _ = docker(&["rm", "--force", server]);
        }
    }
}

/// A claimed member is behind its own egress proxy with the profile's allowlist, exactly: the
/// allowlisted address of one server of the test's own answers through the proxy; another
/// server on the same outside network, a name not on the list, and the allowlisted server
/// reached around the proxy do not.
#[test]
fn live_a_claim_behind_the_proxy_reaches_exactly_its_allowlist() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_claim_behind_the_proxy_reaches_exactly_its_allowlist") {
        return;
    }
    for backend in ["cli", "api"] {
        let lab = Lab::new(&format!("allow-{backend}"));
        let mut servers = Servers(Vec::new());
        let mut address = Vec::new();
        for (role, alias) in [("allowed", "kept.test"), ("other", "other.test")] {
            let name = format!("{}-{role}", lab.id);
            let page = format!("mkdir -p /tmp/w && echo pool-{role} > /tmp/w/index.html && exec httpd -f -p 80 -h /tmp/w");
            docker(&[
                "run",
                "-d",
                &format!("--name={name}"),
                &format!("--network={}", lab.out),
                &format!("--network-alias={alias}"),
                &test_image(),
                "sh",
                "-c",
                &page,
            ])
            .expect("start a server");
            servers.0.push(name.clone());
            let ip = docker(&[
                "inspect",
                "--format",
                "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                &name,
            ])
            .expect("the server's address");
            address.push(ip.trim().to_string());
        }
        let (allowed, other) = (&address[0], &address[1]);
        let body = format!(
            "name = \"{}\"\nagent = \"claude-code\"\nhome_volume = \"{}\"\n\n[workspace]\nmount = false\n\n[egress]\nhosts = [\"{allowed}\"]\noutside_network = \"{}\"\n",
            lab.id, lab.home, lab.out
        );
        let path = lab.dir.path().join("allow.toml");
        std::fs::write(&path, body).expect("write the profile");
        let path = path.to_string_lossy().into_owned();
        fill(&lab, &path, backend, "1");
        let script = format!(
            "wget -q -O- http://{allowed}/; echo allowed=$?; \
             wget -q -O- http://{other}/ 2>&1; echo other=$?; \
             wget -q -O- http://other.test/ 2>&1; echo name=$?; \
             http_proxy= HTTP_PROXY= wget -q -O- http://{allowed}/ 2>&1; echo around=$?"
        );
        let output = claim(&lab, &path, backend, &script);
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        member_of(&output);
        eprintln!("{backend}: {}", describe(&output));
        let stdout = text(&output.stdout);
        assert!(
            stdout.contains("pool-allowed\nallowed=0"),
            "{}",
            describe(&output)
        );
        assert!(!stdout.contains("pool-other"), "{}", describe(&output));
        for refused in ["other=0", "name=0", "around=0"] {
            assert!(
                !stdout.contains(refused),
                "{refused}: {}",
                describe(&output)
            );
        }
        // The proxy refused both by its decision (403), not by a failed connection.
        for refused in ["other", "name"] {
            assert!(
                stdout.contains(&format!("403 Forbidden\n{refused}=")),
                "{refused}: {}",
                describe(&output)
            );
        }
        // The allowlisted server answered once: through the proxy, never around it.
        assert!(
            stdout.matches("pool-allowed").count() == 1,
            "{}",
            describe(&output)
        );
    }
}

/// The variable the credential tests' profile binds.
const KEY_VARIABLE: &str = "AGENTC_POOL_TEST_KEY";

/// A key a credential test hands agentc: unique to the run, so that finding it anywhere means
/// it leaked.
fn test_key(which: &str) -> String {
    format!("sk-pool-{which}-{}-0123456789abcdef", std::process::id())
}

/// The labels of every container of the lab's profile (members and their egress proxies).
fn all_labels(lab: &Lab) -> String {
    let filter = format!("label=io.agentc.profile={}", lab.id);
    docker(&["ps", "-aq", "--filter", &filter])
        .unwrap_or_default()
        .split_whitespace()
        .map(|id| docker(&["inspect", "--format", "{{json .Config.Labels}}", id]).expect("inspect"))
        .collect()
}

/// A member's fingerprint of the binding `api`.
fn fingerprint(member: &str) -> String {
    docker(&[
        "inspect",
        "--format",
        "{{index .Config.Labels \"io.agentc.pool-credential.api\"}}",
        member,
    ])
    .expect("inspect")
    .trim()
    .to_string()
}

/// A member's egress proxy holds the key of the environment it was filled from, not the
/// claimer's: a claim takes only a member whose keyed fingerprint of each credential binding's
/// value is the one of its own environment. Another key (another user's, a rotated one) is a
/// cold start said on stderr (`--pool require`: exit 65 with a hint) and the stale members are
/// drained, by the claim and by the next fill; no value nor plain hash of one is in a label or
/// in agentc's output. Both backends.
#[test]
fn live_a_claim_takes_only_a_member_whose_proxy_holds_the_claimers_key() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_claim_takes_only_a_member_whose_proxy_holds_the_claimers_key") {
        return;
    }
    use sha2::Digest;
    let (one, two) = (test_key("one"), test_key("two"));
    let leaks = |text: &str| {
        [&one, &two].iter().any(|key| {
            let plain: String = sha2::Sha256::digest(key.as_bytes())
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect();
            text.contains(key.as_str()) || text.contains(&plain)
        })
    };
    for backend in ["cli", "api"] {
        let lab = Lab::new(&format!("cred-{backend}"));
        let body = format!(
            "name = \"{}\"\nagent = \"custom\"\n\n[image]\nref = \"{}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n\n[egress]\nhosts = [\"api.test\"]\noutside_network = \"{}\"\n\n[credentials.api]\nfrom_env = \"{KEY_VARIABLE}\"\nhosts = [\"api.test\"]\nheader = \"x-api-key\"\n",
            lab.id,
            test_image(),
            lab.out
        );
        let path = lab.dir.path().join("credentials.toml");
        std::fs::write(&path, body).expect("write the profile");
        let path = path.to_string_lossy().into_owned();
        let fill = |size: &str, key: &str| {
            let output = lab.agentc_with(
                &["pool", "fill", &path, "--size", size, "--backend", backend],
                &[(KEY_VARIABLE, key)],
            );
            assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
            assert!(!leaks(&describe(&output)), "{}", describe(&output));
            output
        };
        let claim = |pool: &str, key: &str| {
            let output = lab.agentc_with(
                &[
                    "run",
                    &path,
                    "--backend",
                    backend,
                    "--no-warnings",
                    "--pool",
                    pool,
                ],
                &[(KEY_VARIABLE, key)],
            );
            assert!(!leaks(&describe(&output)), "{}", describe(&output));
            output
        };
        // Filled with the first key: each member carries a keyed fingerprint, not the key.
        fill("2", &one);
        let members = lab.idle();
        assert_eq!(members.len(), 2, "{:?}", lab.containers());
        let filled = fingerprint(&members[0]);
        assert_eq!(filled.len(), 64, "{filled}");
        assert_eq!(fingerprint(&members[1]), filled);
        assert!(!leaks(&all_labels(&lab)), "{}", all_labels(&lab));
        // Another key: no warm start, said, and the members drained.
        let refused = claim("require", &two);
        assert_eq!(refused.status.code(), Some(65), "{}", describe(&refused));
        let stderr = text(&refused.stderr);
        assert!(
            stderr.contains("the credential api changed since the pool was filled"),
            "{stderr}"
        );
        assert!(stderr.contains("hint: `agentc pool fill"), "{stderr}");
        assert!(lab.containers().is_empty(), "{:?}", lab.containers());
        // The same key: warm.
        fill("1", &one);
        let warm = claim("require", &one);
        assert_eq!(warm.status.code(), Some(0), "{}", describe(&warm));
        assert!(
            text(&warm.stderr).contains("warm start from pool"),
            "{}",
            describe(&warm)
        );
        lab.agentc(&["rm", text(&warm.stdout).split_whitespace().nth(1).unwrap()]);
        // A fill with another key replaces the members of the first.
        fill("1", &one);
        let stale = lab.idle();
        let refilled = fill("1", &two);
        assert!(
            text(&refilled.stderr).contains(&format!("removed stale pool member {}", stale[0])),
            "{}",
            describe(&refilled)
        );
        let fresh = lab.idle();
        assert_eq!(fresh.len(), 1, "{fresh:?}");
        assert_ne!(fresh[0], stale[0]);
        assert_ne!(fingerprint(&fresh[0]), filled);
        // With auto, a claim with the first key starts cold, says why, drains the member.
        let cold = claim("auto", &one);
        assert_eq!(cold.status.code(), Some(0), "{}", describe(&cold));
        assert!(
            text(&cold.stderr)
                .contains("cold start: the credential api changed since the pool was filled"),
            "{}",
            describe(&cold)
        );
        assert!(lab.idle().is_empty(), "{:?}", lab.containers());
        assert!(!leaks(&all_labels(&lab)), "{}", all_labels(&lab));
    }
}

/// `agentc pool fill` meets the isolation floor once, for the key and every member: one
/// `isolation:` line for a fill of two. Both backends.
#[test]
fn live_a_fill_meets_the_isolation_floor_once() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_fill_meets_the_isolation_floor_once") {
        return;
    }
    for backend in ["cli", "api"] {
        let lab = Lab::new(&format!("floor-{backend}"));
        let body = format!(
            "name = \"{}\"\nagent = \"custom\"\n\n[image]\nref = \"{}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n\n[egress]\nmode = \"deny\"\n\n[security]\nisolation = {{ min = \"container\" }}\n",
            lab.id,
            test_image()
        );
        let path = lab.dir.path().join("floor.toml");
        std::fs::write(&path, body).expect("write the profile");
        let path = path.to_string_lossy().into_owned();
        let filled = lab.agentc(&["pool", "fill", &path, "--size", "2", "--backend", backend]);
        assert_eq!(filled.status.code(), Some(0), "{}", describe(&filled));
        assert_eq!(lab.idle().len(), 2, "{:?}", lab.containers());
        assert_eq!(
            text(&filled.stderr).matches("agentc: isolation: ").count(),
            1,
            "{}",
            describe(&filled)
        );
        // Every member runs under the runtime chosen once.
        let runtimes: Vec<String> = lab
            .idle()
            .iter()
            .map(|name| docker(&["inspect", "--format", "{{.HostConfig.Runtime}}", name]).unwrap())
            .collect();
        assert_eq!(runtimes[0], runtimes[1]);
    }
}

/// What is left of a lab's profile: its containers, isolated networks and companion volumes
/// (the home volume, the lab's own, aside).
fn leftovers(lab: &Lab) -> Vec<String> {
    let filter = format!("label=io.agentc.profile={}", lab.id);
    let mut left = Vec::new();
    for (what, args) in [
        ("container", vec!["ps", "-a", "--format", "{{.Names}}"]),
        ("network", vec!["network", "ls", "--format", "{{.Name}}"]),
        ("volume", vec!["volume", "ls", "--format", "{{.Name}}"]),
    ] {
        let mut args = args.clone();
        args.extend(["--filter", &filter]);
        for name in docker(&args).unwrap_or_default().split_whitespace() {
            if name != lab.home {
                left.push(format!("{what} {name}"));
            }
        }
    }
    left
}

/// The library's `SandboxClient::delete` of a claimed pool member (renamed by the claim)
/// removes what its launch made, its egress proxy, isolated network and their volumes
/// included, through both backends (issue 37: they were left running, the report empty).
#[test]
fn live_the_librarys_delete_of_a_claimed_member_removes_its_companion() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_the_librarys_delete_of_a_claimed_member_removes_its_companion") {
        return;
    }
    use agentc_engine::session::SandboxClient;
    for backend in ["cli", "api"] {
        let lab = Lab::new(&format!("delete-{backend}"));
        let body = format!(
            "name = \"{}\"\nagent = \"custom\"\n\n[image]\nref = \"{}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n\n[egress]\nhosts = [\"allowed.test\"]\noutside_network = \"{}\"\n",
            lab.id,
            test_image(),
            lab.out
        );
        let path = lab.dir.path().join("box.toml");
        std::fs::write(&path, body).expect("write the profile");
        let path = path.to_string_lossy().into_owned();
        let filled = lab.agentc(&["pool", "fill", &path, "--size", "1", "--backend", backend]);
        assert_eq!(filled.status.code(), Some(0), "{}", describe(&filled));
        let claimed = lab.agentc(&["run", &path, "--no-warnings", "--pool", "require"]);
        assert_eq!(claimed.status.code(), Some(0), "{}", describe(&claimed));
        let name = text(&claimed.stdout)
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string();
        assert!(name.starts_with("agentc-claim-"), "{}", describe(&claimed));
        assert!(
            leftovers(&lab).iter().any(|l| l.ends_with("-egress-proxy")),
            "{backend}: {:?}",
            leftovers(&lab)
        );

        let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let engine = agentc_engine::Engine::Docker;
        let report = runtime.block_on(async {
            match backend {
                "cli" => {
                    let port = agentc_backend_cli::exec::port::CliPort::new(engine);
                    let client = agentc_backend_cli::CliClient::over(port, env);
                    let sandbox = client.find(&name).await.expect("find the claimed member");
                    client.delete(&sandbox).await
                }
                _ => {
                    let host = std::env::var("DOCKER_HOST").ok();
                    let port = agentc_backend_api::connect(engine, host.as_deref())
                        .await
                        .expect("connect");
                    let client = agentc_backend_api::ApiClient::over(port, env);
                    let sandbox = client.find(&name).await.expect("find the claimed member");
                    client.delete(&sandbox).await
                }
            }
        });
        assert!(report.removed, "{backend}: {report:?}");
        assert!(report.left.is_empty(), "{backend}: {report:?}");
        assert_eq!(leftovers(&lab), Vec::<String>::new(), "{backend}");
    }
}

/// Waits up to 20 s for `container`'s logs to hold `wanted`; returns them.
fn logs_holding(container: &str, wanted: &str) -> String {
    let started = Instant::now();
    let mut logs = String::new();
    while !logs.contains(wanted) && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
        logs = docker(&["logs", container]).unwrap_or_default();
    }
    logs
}

/// A warm claim runs the invocation's arguments as the cold launch does: appended to the
/// custom sandbox's command (its `"$@"` here), nothing dropped, through either backend.
fn a_claim_runs_the_arguments_a_cold_launch_runs(backend: &str) {
    let lab = Lab::new(&format!("args-{backend}"));
    let body = format!(
        "name = \"{}\"\nagent = \"custom\"\n\n[image]\nref = \"{}\"\ncommand = [\"sh\", \"-c\", \"echo \\\"args: $# $*\\\"; exec tail -f /dev/null\", \"sh\"]\n\n[egress]\nhosts = [\"allowed.test\"]\noutside_network = \"{}\"\n",
        lab.id,
        test_image(),
        lab.out
    );
    let path = lab.dir.path().join("sandbox.toml");
    std::fs::write(&path, body).expect("write the profile");
    let path = path.to_string_lossy().into_owned();
    let run = |pool: &str| {
        let output = lab.agentc(&[
            "run",
            &path,
            "--backend",
            backend,
            "--no-warnings",
            "--pool",
            pool,
            "--",
            "one",
            "two words",
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        let name = text(&output.stdout)
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string();
        (output, name)
    };
    let (cold, name) = run("off");
    assert!(
        !text(&cold.stderr).contains("warm start"),
        "{}",
        describe(&cold)
    );
    let logs = logs_holding(&name, "args: ");
    assert_eq!(logs.trim(), "args: 2 one two words", "cold: {logs}");
    lab.agentc(&["rm", &name]);
    let filled = lab.agentc(&["pool", "fill", &path, "--size", "1", "--backend", backend]);
    assert_eq!(filled.status.code(), Some(0), "{}", describe(&filled));
    let (warm, name) = run("require");
    assert!(
        text(&warm.stderr).contains("warm start from pool"),
        "{}",
        describe(&warm)
    );
    assert!(name.starts_with("agentc-claim-"), "{}", describe(&warm));
    let logs = logs_holding(&name, "args: ");
    assert_eq!(logs.trim(), "args: 2 one two words", "warm: {logs}");
    let removed = lab.agentc(&["rm", &name]);
    assert_eq!(removed.status.code(), Some(0), "{}", describe(&removed));
    assert_eq!(lab.containers(), Vec::<String>::new());
}

#[test]
fn live_a_claim_runs_the_arguments_a_cold_launch_runs_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_claim_runs_the_arguments_a_cold_launch_runs_through_the_cli_backend")
    {
        return;
    }
    a_claim_runs_the_arguments_a_cold_launch_runs("cli");
}

#[test]
fn live_a_claim_runs_the_arguments_a_cold_launch_runs_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_claim_runs_the_arguments_a_cold_launch_runs_through_the_api_backend")
    {
        return;
    }
    a_claim_runs_the_arguments_a_cold_launch_runs("api");
}
