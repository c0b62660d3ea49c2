//! `agentc egress-proxy` through the binary, on loopback: the agreed command line (the
//! Kubernetes renderer writes `--allow HOSTSPEC...` with separate values), exit statuses, and
//! that the subcommand stays out of `--help`.

use std::io::Read;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn agentc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_agentc"))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn serve_takes_the_agreed_flags_answers_health_and_stops_on_sigterm() {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = agentc()
        .args([
            "egress-proxy",
            "serve",
            "--listen",
            &listen,
            "--dns",
            "127.0.0.1:0",
            "--allow",
            "api.example.com",
            "*.example.org",
            "--allow",
            "registry.example.net:443",
            "--allow-cidr",
            "10.20.0.0/16",
            "fd00:1::/64",
            "--allow-cidr=10.30.0.0/16",
            "--allow-ech=API.example.com",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let health = agentc()
            .args(["egress-proxy", "health", "--proxy", &listen])
            .output()
            .unwrap();
        if health.status.success() {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "the proxy exited");
        assert!(Instant::now() < deadline, "never healthy: {health:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: kill(2) with the pid of our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        stderr.contains("3 allowlist entries, 3 allowed ranges"),
        "{stderr}"
    );
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert_eq!(stdout, "", "health checks are not decision lines");
}

#[test]
fn bad_values_exit_2_naming_them_and_an_unhealthy_proxy_exits_1() {
    for (args, needle) in [
        // An address in another spelling than dotted decimal (dotted decimal is an entry).
        (vec!["--allow", "0x0a000001"], "`0x0a000001`"),
        (vec!["--allow", "*.*.example.com"], "`*.*.example.com`"),
        (vec!["--allow-cidr", "10.0.0.1/8"], "host bits"),
        (
            vec!["--allow", "a.example.com", "--allow-ech", "b.example.com"],
            "`b.example.com`: an --allow-ech entry must also be an --allow entry",
        ),
        (vec!["--listen", "localhost:3128"], "`localhost:3128`"),
        (
            vec![
                "--allow",
                "a.example.com",
                "--credential",
                "name=a,header=x-api-key,env=K",
            ],
            "at least one host= is required",
        ),
        (
            vec![
                "--allow",
                "a.example.com",
                "--credential",
                "name=a,header=x-api-key,env=K,host=a.example.com",
            ],
            "credentials need --ca-dir",
        ),
        (
            vec![
                "--allow",
                "a.example.com",
                "--ca-dir",
                "/tmp",
                "--credential",
                "name=a,header=x-api-key,env=K,host=b.example.com",
            ],
            "b.example.com:443 is not allowed by any --allow entry",
        ),
        (vec!["--on-replay", "later"], "expected block or stop"),
    ] {
        let output = agentc()
            .args(["egress-proxy", "serve"])
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    // A credential whose variable is unset: the proxy does not start (exit 1), naming it
    // and nothing else.
    let ca_dir = std::env::temp_dir();
    let output = agentc()
        .args([
            "egress-proxy",
            "serve",
            "--listen",
            &format!("127.0.0.1:{}", free_port()),
        ])
        .args([
            "--allow",
            "a.example.com",
            "--ca-dir",
            ca_dir.to_str().unwrap(),
        ])
        .args([
            "--credential",
            "name=a,header=x-api-key,env=AGENTC_TEST_UNSET_KEY,host=a.example.com",
        ])
        .env_remove("AGENTC_TEST_UNSET_KEY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("needs the variable AGENTC_TEST_UNSET_KEY"),
        "{stderr}"
    );
    let closed = format!("127.0.0.1:{}", free_port());
    let output = agentc()
        .args(["egress-proxy", "health", "--proxy", &closed])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not healthy"));
}

#[test]
fn the_subcommand_is_hidden_and_the_image_tag_needs_no_daemon() {
    let help = agentc().arg("--help").output().unwrap();
    // `agentc egress` (the proxy's log) is listed; the proxy's own `egress-proxy` is not.
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    assert!(!help.contains("egress-proxy"), "{help}");
    assert!(help.contains("egress"), "{help}");
    let tag = agentc()
        .args(["egress-proxy", "image", "--print-tag"])
        .env("DOCKER_HOST", "unix:///nonexistent")
        .output()
        .unwrap();
    assert!(tag.status.success());
    let tag = String::from_utf8_lossy(&tag.stdout);
    let hex = tag.trim().strip_prefix("agentc-egress:").unwrap();
    assert_eq!(hex.len(), 12);
}

#[test]
fn fetch_ca_writes_what_a_proxy_with_credentials_wrote_and_gives_up_after_its_wait() {
    let base = std::env::temp_dir().join(format!("agentc-fetch-ca-{}", std::process::id()));
    let (written, fetched) = (base.join("proxy"), base.join("pod"));
    std::fs::create_dir_all(&written).unwrap();
    std::fs::create_dir_all(&fetched).unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    // The pod's init container may start first: fetch-ca keeps asking until the proxy is up.
    let fetch = agentc()
        .args(["egress-proxy", "fetch-ca", "--proxy", &listen, "--dir"])
        .arg(&fetched)
        .args(["--wait-seconds", "60"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let mut proxy = agentc()
        .args(["egress-proxy", "serve", "--listen", &listen])
        .args(["--allow=api.example.com"])
        .arg("--credential=name=anthropic,header=x-api-key,env=ANTHROPIC_API_KEY,host=api.example.com")
        .arg(format!("--ca-dir={}", written.display()))
        .env("ANTHROPIC_API_KEY", "sk-ant-real-value-of-the-test")
        .env("AGENTC_PLACEHOLDER_ANTHROPIC_API_KEY", "sk-ant-placeholder")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let output = fetch.wait_with_output().unwrap();
    // SAFETY: kill(2) with the pid of our own child.
    unsafe { libc::kill(proxy.id() as libc::pid_t, libc::SIGTERM) };
    proxy.wait().unwrap();
    assert!(output.status.success(), "{output:?}");
    for file in ["ca.pem", "bundle.pem"] {
        let got = std::fs::read_to_string(fetched.join(file)).unwrap();
        assert_eq!(got, std::fs::read_to_string(written.join(file)).unwrap());
        assert!(!got.contains("sk-ant-real-value-of-the-test"));
    }
    // Nobody listens any more: it gives up after its wait, exit 1, naming the proxy.
    let output = agentc()
        .args(["egress-proxy", "fetch-ca", "--proxy", &listen, "--dir"])
        .arg(&fetched)
        .args(["--wait-seconds", "1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "cannot fetch the launch CA from the egress proxy at {listen}"
        )),
        "{stderr}"
    );
    std::fs::remove_dir_all(&base).unwrap();
}
