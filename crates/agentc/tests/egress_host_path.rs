//! Live tests of the host path behind the egress proxy (issue 18, finding 1, and IPv6): a
//! workload on its isolated network must deliver nothing to an address of the host past the
//! proxy.
//!
//! Each test creates its own `--internal` outside network (labelled
//! `io.agentc.test.ecaps=<id>`, removed on drop with everything agentc launched for its
//! profiles) and listens on UDP and TCP at that network's gateway address: an address of this
//! machine the test made. Nothing is sent anywhere else. The workload image is the busybox
//! image of `scripts/build-test-image.sh` (`ip`, `arping`, `nc`), run as root.
//!
//! Needs the daemon: skips with a printed reason without one, fails instead when
//! `AGENTC_REQUIRE_DOCKER=1`.

use std::io::ErrorKind;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6, TcpListener, UdpSocket};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The label on everything a test creates.
const TEST_LABEL: &str = "io.agentc.test.ecaps";
/// The busybox image's script.
const BUSYBOX_SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../scripts/build-test-image.sh"
);

fn docker(args: &[&str]) -> Result<String, String> {
    let output = Command::new("docker")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run docker: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    } else {
        Err(format!(
            "docker {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// True when a daemon answers; otherwise a printed skip, or a panic under
/// `AGENTC_REQUIRE_DOCKER=1`.
fn require_daemon(test: &str) -> bool {
    match docker(&["info", "--format", "{{.ServerVersion}}"]) {
        Ok(_) => true,
        Err(reason) if std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() == Ok("1") => {
            panic!("{test}: AGENTC_REQUIRE_DOCKER=1 but no Docker daemon: {reason}")
        }
        Err(reason) => {
            eprintln!("skipping {test}: no Docker daemon ({reason}); set AGENTC_REQUIRE_DOCKER=1 to fail instead");
            false
        }
    }
}

fn busybox_image() -> String {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let tag = Command::new("bash")
            .args([BUSYBOX_SCRIPT, "--print-tag"])
            .output()
            .expect("build-test-image.sh --print-tag");
        let tag = String::from_utf8_lossy(&tag.stdout).trim().to_string();
        if docker(&["image", "inspect", &tag]).is_err() {
            let built = Command::new("bash").args([BUSYBOX_SCRIPT, &tag]).status();
            assert!(built.is_ok_and(|s| s.success()), "cannot build {tag}");
        }
        tag
    })
    .clone()
}

/// `agentc ARGS`: its exit code and its output (stdout then stderr).
fn agentc(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_agentc"))
        .args(args)
        .output()
        .expect("run agentc");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

fn rand16() -> u16 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    (nanos ^ std::process::id()) as u16
}

/// The test's outside network, its listener and its profiles; removed on drop.
struct Lab {
    id: String,
    out: String,
    gateway: Ipv4Addr,
    dir: tempfile::TempDir,
    profiles: Vec<String>,
}

impl Lab {
    fn new(test: &str) -> Lab {
        let id = format!("agentc-t-ecaps-{}-{test}-{}", std::process::id(), rand16());
        let out = format!("{id}-out");
        let label = format!("--label={TEST_LABEL}={id}");
        docker(&["network", "create", "--internal", &label, &out]).expect("the outside network");
        let gateway = docker(&[
            "network",
            "inspect",
            &out,
            "--format",
            "{{(index .IPAM.Config 0).Gateway}}",
        ])
        .expect("its gateway")
        .parse()
        .expect("an IPv4 gateway");
        Lab {
            id,
            out,
            gateway,
            dir: tempfile::tempdir().expect("tempdir"),
            profiles: Vec::new(),
        }
    }

    /// A custom profile idling in the busybox image as root behind the egress proxy, reaching
    /// out through the test's network; `security` and `egress` lines are appended to their
    /// tables. Returns its path.
    fn profile(&mut self, name: &str, security: &str, egress: &str) -> String {
        let profile = format!("{}-{name}", self.id);
        let text = format!(
            "name = \"{profile}\"\nagent = \"custom\"\n\n[image]\nref = \"{}\"\n\
             command = [\"sleep\", \"600\"]\n\n[security]\n{security}\n\n\
             [egress]\nhosts = [\"allowed.test:80\"]\noutside_network = \"{}\"\n{egress}",
            busybox_image(),
            self.out
        );
        let path = self.dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, text).expect("write the profile");
        self.profiles.push(profile);
        path.to_string_lossy().into_owned()
    }

    /// What agentc left of the profile `index`: its containers and its networks.
    fn left(&self, index: usize) -> (String, String) {
        let filter = format!("label=io.agentc.profile={}", self.profiles[index]);
        let name = format!("name={}", self.profiles[index]);
        let networks = [
            docker(&["network", "ls", "-q", "--filter", &filter]).unwrap_or_default(),
            docker(&["network", "ls", "-q", "--filter", &name]).unwrap_or_default(),
        ];
        (
            docker(&["ps", "-aq", "--filter", &filter]).unwrap_or_default(),
            networks.join(" ").trim().to_string(),
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

/// A listener on UDP and TCP at one port of an address of this machine.
struct Listener {
    udp: UdpSocket,
    tcp: TcpListener,
    port: u16,
}

impl Listener {
    /// TCP on a port the system picks and UDP on the same one: another pick when UDP has it
    /// in use.
    fn bind(address: SocketAddr) -> Listener {
        for _ in 0..16 {
            let tcp = TcpListener::bind(address).expect("listen on TCP");
            let port = tcp.local_addr().unwrap().port();
            let mut address = address;
            address.set_port(port);
            let Ok(udp) = UdpSocket::bind(address) else {
                continue;
            };
            udp.set_nonblocking(true).unwrap();
            tcp.set_nonblocking(true).unwrap();
            return Listener { udp, tcp, port };
        }
        panic!("no port on {address} is free for both TCP and UDP in 16 tries")
    }

    /// What arrived so far, after `settle` (packets in flight land).
    fn received(&self, settle: Duration) -> Vec<String> {
        std::thread::sleep(settle);
        let mut seen = Vec::new();
        let mut buffer = [0u8; 256];
        loop {
            match self.udp.recv_from(&mut buffer) {
                Ok((n, from)) => seen.push(format!(
                    "UDP from {from}: {:?}",
                    String::from_utf8_lossy(&buffer[..n])
                )),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        loop {
            match self.tcp.accept() {
                Ok((_, from)) => seen.push(format!("TCP from {from}")),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        seen
    }
}

/// The started sandboxes' names, from `agentc run`'s `started NAME (ID)` lines.
fn started(output: &str) -> Vec<String> {
    output
        .lines()
        .filter_map(|line| line.strip_prefix("started "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// `KEY=VALUE` lines of a script's output, the last value of each key.
fn value<'a>(output: &'a str, key: &str) -> &'a str {
    output
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in:\n{output}"))
}

/// The attacks of the issue, from inside a sandbox, against `gateway:port`: a host route and a
/// neighbour entry (NET_ADMIN), arping (NET_RAW), then a datagram and a connection; the IPv6
/// state; an attempt to turn IPv6 back on.
fn attack(sandbox: &str, gateway: Ipv4Addr, port: u16) -> String {
    let script = format!(
        "ip route add {gateway}/32 dev eth0 2>&1; echo route=$?\n\
         ip neigh replace {gateway} lladdr 02:42:00:00:00:01 dev eth0 nud permanent 2>&1; echo neigh=$?\n\
         arping -c 1 -w 1 -I eth0 {gateway} 2>&1; echo arping=$?\n\
         (cd /tmp && timeout 3 tftp -g -r agentc-t-ecaps-udp -l /tmp/t {gateway} {port}) 2>&1; echo udp=$?\n\
         nc -w 1 {gateway} {port} </dev/null 2>&1; echo tcp=$?\n\
         echo inet6=$(cat /proc/net/if_inet6 | wc -l)\n\
         echo disabled=$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6)\n\
         (echo 0 > /proc/sys/net/ipv6/conf/all/disable_ipv6) 2>&1; echo enable=$?\n"
    );
    docker(&["exec", sandbox, "sh", "-c", &script]).unwrap_or_else(|e| panic!("{e}"))
}

/// The index of the host's bridge of a network.
fn bridge_index(network: &str) -> u32 {
    let id = docker(&["network", "inspect", network, "--format", "{{.Id}}"]).unwrap();
    let bridge = format!("br-{}", &id[..12]);
    std::fs::read_to_string(format!("/sys/class/net/{bridge}/ifindex"))
        .unwrap_or_else(|e| panic!("{bridge}: {e}"))
        .trim()
        .parse()
        .unwrap()
}

/// The proxy image (agentc's binary), which holds the host-path program.
fn proxy_image() -> String {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let (code, output) = agentc(&["egress-proxy", "image"]);
        assert_eq!(code, Some(0), "{output}");
        output.trim().lines().last().unwrap_or_default().to_string()
    })
    .clone()
}

/// IPv6 from the copy's isolated network: the host's listener on the all-nodes group
/// `ff02::1` of the copy's bridge (every IPv6 node of that link, the host among them). The
/// host-path program, as root in the proxy image on that network, sends a datagram there:
/// with IPv6 on (the control: what an engine that leaves it on gives) it arrives, so the path
/// exists and the listener sees it; with the copy's sysctls (`--sysctl` of its `HostConfig`)
/// it cannot be sent and nothing arrives.
fn ipv6_stays_in(copy: &str, lab: &Lab) {
    let isolated = format!("{copy}-egress");
    let group = SocketAddrV6::new(
        Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1),
        0,
        0,
        bridge_index(&isolated),
    );
    let v6 = UdpSocket::bind(group).expect("listen on ff02::1 of the bridge");
    v6.set_nonblocking(true).unwrap();
    let v6_port = v6.local_addr().unwrap().port();
    let sysctls: std::collections::BTreeMap<String, String> = serde_json::from_str(
        &docker(&["inspect", "--format", "{{json .HostConfig.Sysctls}}", copy]).unwrap(),
    )
    .unwrap();
    let run = |sysctls: &[String]| -> String {
        let label = format!("--label={TEST_LABEL}={}", lab.id);
        let network = format!("--network={isolated}");
        let mut args = vec![
            "run",
            "--rm",
            &label,
            &network,
            "--user=0:0",
            "--cap-drop=ALL",
            "--read-only",
            "--entrypoint=/usr/local/bin/agentc",
        ];
        args.extend(sysctls.iter().map(String::as_str));
        let image = proxy_image();
        let target = format!("--target={}:{v6_port}", lab.gateway);
        args.extend([
            image.as_str(),
            "egress-proxy",
            "host-path",
            &target,
            "--timeout-ms=300",
        ]);
        docker(&args).unwrap_or_else(|e| panic!("{e}"))
    };
    let received = || {
        std::thread::sleep(Duration::from_millis(500));
        let mut buffer = [0u8; 256];
        let mut got = Vec::new();
        while let Ok((n, from)) = v6.recv_from(&mut buffer) {
            got.push(format!(
                "{from}: {:?}",
                String::from_utf8_lossy(&buffer[..n])
            ));
        }
        got
    };
    // Docker 20.10 turns IPv6 off on a network without it; another engine or network may not.
    let control = run(&["--sysctl=net.ipv6.conf.all.disable_ipv6=0".to_string()]);
    assert!(control.contains("was sent"), "{control}");
    let got = received();
    assert!(
        got.iter()
            .any(|what| what.contains("agentc-host-path ipv6")),
        "the control's IPv6 datagram did not arrive: {got:?}\n{control}"
    );
    let flags: Vec<String> = sysctls
        .iter()
        .map(|(key, value)| format!("--sysctl={key}={value}"))
        .collect();
    let closed = run(&flags);
    assert!(closed.contains("no IPv6 address"), "{closed}");
    assert!(closed.contains("ff02::1: "), "{closed}");
    assert!(!closed.contains("was sent"), "{closed}");
    assert_eq!(
        received(),
        Vec::<String>::new(),
        "IPv6 left the sandbox's sysctls"
    );
    println!("{copy}: IPv6 control delivered, closed: {closed}");
}

/// The row of `check` in verify's table: (RESULT, the rest of the row).
fn row<'a>(output: &'a str, check: &str) -> (&'a str, &'a str) {
    output
        .lines()
        .find_map(|line| {
            let (result, rest) = line.split_once(char::is_whitespace)?;
            let rest = rest.trim_start();
            rest.strip_prefix(check)
                .filter(|after| after.starts_with(' '))
                .map(|after| (result, after.trim()))
        })
        .unwrap_or_else(|| panic!("no row {check}:\n{output}"))
}

/// Behind the proxy, through `backend`:
///
/// 1. a root workload adding NET_ADMIN and NET_RAW is refused before anything is created;
/// 2. root copies without them (`--count 2` through the api backend) deliver nothing to the host's listener (a route,
///    a neighbour entry, arping, UDP, TCP all fail), have no IPv6 address, cannot turn IPv6
///    back on, and under their sysctls no IPv6 datagram leaves their isolated bridge
///    ([`ipv6_stays_in`]);
/// 3. `agentc verify` shows `egress.host-path` passing;
/// 4. with `egress.allow_net_capabilities = true` the same workload launches, `explain` reports
///    `egress-host-path`, the route delivers a datagram to the listener (the path the refusal
///    closes, so the listener does see what arrives) and verify's row fails, naming the hatch.
fn host_path_is_closed(backend: &str) {
    let mut lab = Lab::new(backend);
    let listener = Listener::bind(SocketAddr::from((lab.gateway, 0)));
    let caps = "add_capabilities = [\"NET_ADMIN\", \"NET_RAW\"]";

    // 1. Refused before anything is created.
    let refused = lab.profile("refused", caps, "");
    let (code, output) = agentc(&["run", &refused, "--backend", backend]);
    assert_eq!(code, Some(65), "{output}");
    assert!(
        output.contains("security.add_capabilities[0]: security.add_capabilities[0] adds NET_ADMIN behind the egress proxy"),
        "{output}"
    );
    assert!(
        output.contains("adds NET_RAW behind the egress proxy"),
        "{output}"
    );
    assert!(
        output.contains("egress.allow_net_capabilities = true"),
        "{output}"
    );
    assert_eq!(lab.left(0), (String::new(), String::new()), "left behind");

    // 2. Root copies without NET_ADMIN and NET_RAW reach nothing.
    let plain = lab.profile("plain", "", "");
    // `--count` launches through the Engine API only.
    let count = if backend == "api" { 2 } else { 1 };
    let (code, output) = agentc(&[
        "run",
        &plain,
        "--backend",
        backend,
        "--count",
        &count.to_string(),
    ]);
    assert_eq!(code, Some(0), "{output}");
    let copies = started(&output);
    assert_eq!(copies.len(), count, "{output}");
    for copy in &copies {
        let sysctls =
            docker(&["inspect", "--format", "{{json .HostConfig.Sysctls}}", copy]).unwrap();
        assert!(
            sysctls.contains("\"net.ipv6.conf.all.disable_ipv6\":\"1\"")
                && sysctls.contains("\"net.ipv6.conf.default.disable_ipv6\":\"1\""),
            "{copy}: {sysctls}"
        );
        let seen = attack(copy, lab.gateway, listener.port);
        for key in ["route", "neigh", "arping", "enable"] {
            assert_ne!(value(&seen, key), "0", "{key} succeeded in {copy}:\n{seen}");
        }
        assert!(seen.contains("Operation not permitted"), "{seen}");
        assert_eq!(value(&seen, "inet6"), "0", "an IPv6 address:\n{seen}");
        assert_eq!(value(&seen, "disabled"), "1", "{seen}");
        assert_ne!(value(&seen, "tcp"), "0", "TCP connected:\n{seen}");
        ipv6_stays_in(copy, &lab);
    }
    assert_eq!(
        listener.received(Duration::from_secs(1)),
        Vec::<String>::new(),
        "the host received something"
    );

    // 3. verify's row.
    let verify_started = Instant::now();
    let (code, output) = agentc(&[
        "verify",
        &plain,
        "--backend",
        backend,
        "--egress-probe",
        "none",
    ]);
    let (result, rest) = row(&output, "egress.host-path");
    assert_eq!(result, "ok", "{output}");
    assert!(rest.contains("no NET_ADMIN: no route added"), "{output}");
    assert!(rest.contains("no IPv6 address"), "{output}");
    assert!(
        rest.contains("the host's listener received nothing"),
        "{output}"
    );
    assert_eq!(code, Some(0), "{output}");
    println!(
        "{backend}: verify with its host-path row took {:?}",
        verify_started.elapsed()
    );

    // 4. The escape hatch.
    let hatch = lab.profile("hatch", caps, "allow_net_capabilities = true\n");
    let (code, output) = agentc(&["explain", &hatch]);
    assert_eq!(code, Some(0), "{output}");
    assert!(
        output.contains("high egress-host-path at profile line"),
        "{output}"
    );
    let (code, output) = agentc(&["run", &hatch, "--backend", backend]);
    assert_eq!(code, Some(0), "{output}");
    let sandbox = &started(&output)[0];
    let seen = attack(sandbox, lab.gateway, listener.port);
    assert_eq!(value(&seen, "route"), "0", "{seen}");
    let received = listener.received(Duration::from_secs(1));
    assert!(
        received
            .iter()
            .any(|what| what.contains("agentc-t-ecaps-udp")),
        "the hatch's route delivered nothing: {received:?}\n{seen}"
    );
    let started_at = Instant::now();
    let (code, output) = agentc(&[
        "verify",
        &hatch,
        "--backend",
        backend,
        "--egress-probe",
        "none",
    ]);
    println!(
        "{backend}: verify under the hatch took {:?}",
        started_at.elapsed()
    );
    assert_eq!(code, Some(1), "{output}");
    let (result, rest) = row(&output, "egress.host-path");
    assert_eq!(result, "FAIL", "{output}");
    assert!(rest.contains("route"), "{output}");
    assert!(
        output.contains("expected under egress.allow_net_capabilities = true"),
        "{output}"
    );
}

#[test]
fn the_host_path_is_closed_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    if require_daemon("the_host_path_is_closed_through_the_cli_backend") {
        host_path_is_closed("cli");
    }
}

#[test]
fn the_host_path_is_closed_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    if require_daemon("the_host_path_is_closed_through_the_api_backend") {
        host_path_is_closed("api");
    }
}
