//! Live: an agent-containers profile whose provider `endpoint` is a corporate gateway at its own
//! port, behind the corporate upstream proxy (`[proxy] http/https`, with credentials), on
//! networks the test creates (issue 36). The provider's key follows the provider: agentc's
//! egress proxy holds it, terminates the sandbox's TLS to the gateway, sets `x-api-key`, and
//! opens the gateway's TLS through the upstream's `CONNECT`.
//!
//! The outside is an `--internal` network of the test's own, with two containers of the test's
//! own (the testkit image: this test binary and its libraries): the gateway, HTTPS on 8443 as
//! `gw.corp.test` with a certificate from a test root (the profile's `proxy.ca_file`, which the
//! proxy trusts for upstreams), logging the `x-api-key` of each request; and the upstream, a
//! CONNECT proxy on 3128 that logs each CONNECT and its `Proxy-Authorization`, and connects
//! `gw.corp.test:8443` to the gateway's address. The sandbox is `agent = "claude-code"` with
//! the testkit as its image (`image.ref`), detached.
//!
//! Network rule: these tests connect only to containers and networks they created.
//!
//! Needs the daemon: skips with a printed reason without it, fails instead when
//! `AGENTC_REQUIRE_DOCKER=1`.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use agentc_policy::Hinted;

use common::{docker, require_daemon};

const TESTKIT_VAR: &str = "AGENTC_PROVIDER_TESTKIT";
const PROBES_VAR: &str = "AGENTC_PROVIDER_PROBES";
const CERT_VAR: &str = "AGENTC_PROVIDER_CERT";
const KEY_VAR: &str = "AGENTC_PROVIDER_KEY";
/// The upstream's map of the authority it may connect to: `AUTHORITY=IP:PORT`.
const ROUTE_VAR: &str = "AGENTC_PROVIDER_ROUTE";
/// The `Proxy-Authorization` the upstream expects.
const AUTH_VAR: &str = "AGENTC_PROVIDER_AUTH";
const TESTKIT_PATH: &str = "/testkit";
const TEST_LABEL: &str = "io.agentc.test.provider";
/// The provider's key, given to `agentc run` in its environment.
const REAL_KEY: &str = "sk-ant-test-GATEWAYKEY-0123456789abcdef";
const KEY_VARIABLE: &str = "AGENTC_TEST_PROVIDER_KEY";
const GATEWAY: &str = "gw.corp.test";
const GATEWAY_PORT: u16 = 8443;
/// The upstream's credentials, as the profile's URL writes them and as the upstream gets them.
const UPSTREAM_USERINFO: &str = "build:corp-s3cret";

// ---------------------------------------------------------------------------------------------
// The testkit: what runs inside the containers.

/// Runs the testkit when this binary was started as one (in a container); passes otherwise.
#[test]
fn testkit_entry() {
    let _turn = crate::common::turn(file!());
    let Ok(mode) = std::env::var(TESTKIT_VAR) else {
        return;
    };
    let code = match mode.as_str() {
        "gateway" => gateway(),
        "upstream" => upstream(),
        "probe" => {
            let probes = std::env::var(PROBES_VAR).unwrap_or_default();
            for (index, line) in probes.lines().enumerate() {
                println!("PROBE {index} {}", probe(line));
            }
            0
        }
        other => {
            eprintln!("unknown testkit mode {other}");
            2
        }
    };
    std::io::stdout().flush().ok();
    std::process::exit(code);
}

/// Idles in the sandbox (the image's entrypoint; the preset's `claude` is one more filter).
#[test]
fn testkit_idle() {
    let _turn = crate::common::turn(file!());
    if std::env::current_exe().is_ok_and(|exe| exe == std::path::Path::new(TESTKIT_PATH)) {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The gateway: HTTPS on 8443 with the certificate in the environment; one
/// `SEEN host path key` line per request, answered `200 ok`.
fn gateway() -> i32 {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let cert = std::env::var(CERT_VAR).unwrap_or_default();
    let key = std::env::var(KEY_VAR).unwrap_or_default();
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()],
            PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
        )
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind(("0.0.0.0", GATEWAY_PORT)).expect("bind 8443");
    println!("READY");
    std::io::stdout().flush().ok();
    for stream in listener.incoming().flatten() {
        let config = config.clone();
        std::thread::spawn(move || {
            let Ok(connection) = rustls::ServerConnection::new(config) else {
                return;
            };
            let mut tls = rustls::StreamOwned::new(connection, stream);
            let head = read_head(&mut BufReader::new(&mut tls));
            let header = |name: &str| {
                head.iter()
                    .filter_map(|line| line.split_once(':'))
                    .find(|(key, _)| key.eq_ignore_ascii_case(name))
                    .map(|(_, value)| value.trim().to_string())
                    .unwrap_or_else(|| "-".to_string())
            };
            let path = head
                .first()
                .and_then(|line| line.split(' ').nth(1))
                .unwrap_or("-")
                .to_string();
            println!("SEEN {} {path} {}", header("host"), header("x-api-key"));
            std::io::stdout().flush().ok();
            let _ = tls
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
            let _ = tls.flush();
        });
    }
    0
}

/// A request or response head's lines (without the blank line).
fn read_head(reader: &mut impl BufRead) -> Vec<String> {
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            return head;
        }
        head.push(line.trim_end().to_string());
    }
}

/// The upstream: a CONNECT proxy on 3128 that logs `CONNECT authority auth=ok|wrong|missing`
/// and connects the one authority of its route; `407` without the expected credentials.
fn upstream() -> i32 {
    let route = std::env::var(ROUTE_VAR).unwrap_or_default();
    let (authority, target) = route.split_once('=').unwrap_or_default();
    let (authority, target) = (authority.to_string(), target.to_string());
    let expected = std::env::var(AUTH_VAR).unwrap_or_default();
    let listener = TcpListener::bind("0.0.0.0:3128").expect("bind 3128");
    println!("READY");
    std::io::stdout().flush().ok();
    for stream in listener.incoming().flatten() {
        let (authority, target, expected) = (authority.clone(), target.clone(), expected.clone());
        std::thread::spawn(move || {
            let mut client = stream;
            let head = read_head(&mut BufReader::new(&mut client));
            let asked = head
                .first()
                .and_then(|line| line.strip_prefix("CONNECT "))
                .and_then(|rest| rest.split(' ').next())
                .unwrap_or("-")
                .to_string();
            let auth = head
                .iter()
                .filter_map(|line| line.split_once(':'))
                .find(|(key, _)| key.eq_ignore_ascii_case("proxy-authorization"))
                .map(|(_, value)| value.trim().to_string());
            let verdict = match &auth {
                None => "missing",
                Some(value) if *value == expected => "ok",
                Some(_) => "wrong",
            };
            // Everything it got, for the test to search for keys.
            println!("CONNECT {asked} auth={verdict} head={}", head.join("|"));
            std::io::stdout().flush().ok();
            if verdict != "ok" {
                let _ = client.write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n");
                return;
            }
            let Some(server) = (asked == authority)
                .then(|| TcpStream::connect(&target).ok())
                .flatten()
            else {
                let _ = client.write_all(b"HTTP/1.1 403 Forbidden\r\n\r\n");
                return;
            };
            let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
            let (mut up_read, mut up_write) = (server.try_clone().unwrap(), server);
            let (mut down_read, mut down_write) = (client.try_clone().unwrap(), client);
            let forward = std::thread::spawn(move || {
                let _ = std::io::copy(&mut down_read, &mut up_write);
                let _ = up_write.shutdown(std::net::Shutdown::Write);
            });
            let _ = std::io::copy(&mut up_read, &mut down_write);
            let _ = down_write.shutdown(std::net::Shutdown::Write);
            let _ = forward.join();
        });
    }
    0
}

/// `{VAR}` in a probe replaced by the variable's value in this environment.
fn expand(text: &str) -> String {
    let mut out = text.to_string();
    for (name, value) in std::env::vars() {
        out = out.replace(&format!("{{{name}}}"), &value);
    }
    out
}

/// One probe: `https PATH` (CONNECT gw.corp.test:8443 through `HTTPS_PROXY`, rustls trusting
/// `SSL_CERT_FILE` alone, the workload's placeholder as `x-api-key`: `STATUS ISSUER KEY`, KEY
/// whether the real key came back), `environ REAL` (whether `/proc/1/environ` holds it).
fn probe(line: &str) -> String {
    let line = expand(line);
    let words: Vec<&str> = line.split(' ').collect();
    let result = match words.as_slice() {
        ["https", path, real] => https(path, real),
        ["environ", real] => {
            let environ = std::fs::read("/proc/1/environ").unwrap_or_default();
            Ok(format!(
                "real={}",
                String::from_utf8_lossy(&environ).contains(real)
            ))
        }
        _ => Err(format!("unknown probe {line}")),
    };
    result.unwrap_or_else(|error| format!("ERROR {error}"))
}

fn https(path: &str, real: &str) -> Result<String, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    let bundle = std::env::var("SSL_CERT_FILE").map_err(|_| "no SSL_CERT_FILE")?;
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_file_iter(&bundle).map_err(|e| e.to_string())? {
        let _ = roots.add(certificate.map_err(|e| e.to_string())?);
    }
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let proxy = std::env::var("HTTPS_PROXY").unwrap_or_default();
    let proxy = proxy.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = TcpStream::connect(proxy).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(Duration::from_secs(20))).ok();
    let authority = format!("{GATEWAY}:{GATEWAY_PORT}");
    write!(
        stream,
        "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).map_err(|e| e.to_string())?;
        head.push(byte[0]);
    }
    let name = ServerName::try_from(GATEWAY).map_err(|e| e.to_string())?;
    let connection =
        rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    let mut tls = rustls::StreamOwned::new(connection, stream);
    let key = std::env::var(KEY_VARIABLE).unwrap_or_default();
    write!(
        tls,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nx-api-key: {key}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    let _ = tls.read_to_end(&mut response);
    let issuer = tls
        .conn
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|leaf| issuer_cn(leaf.as_ref()))
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&response);
    let status = text.split(' ').nth(1).unwrap_or("-").to_string();
    Ok(format!("{status} {issuer} key={}", text.contains(real)))
}

/// The issuer's common name in a DER certificate, found as the printable string after the
/// first commonName OID (2.5.4.3) of the issuer field (enough for the tests' certificates).
fn issuer_cn(der: &[u8]) -> String {
    let oid = [0x06, 0x03, 0x55, 0x04, 0x03];
    der.windows(oid.len())
        .position(|window| window == oid)
        .and_then(|at| {
            let rest = &der[at + oid.len()..];
            let len = usize::from(*rest.get(1)?);
            rest.get(2..2 + len)
        })
        .map(|name| String::from_utf8_lossy(name).replace(' ', "_"))
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The host side.

/// The testkit image (this test binary and its libraries), entered through `testkit_idle`, or
/// why not.
fn testkit_image() -> Result<&'static str, String> {
    static IMAGE: OnceLock<Result<String, String>> = OnceLock::new();
    IMAGE
        .get_or_init(|| {
            use agentc_egress::image;
            let inputs = image::self_inputs(TESTKIT_PATH).map_err(|e| e.to_string())?;
            let tar = image::rootfs_tar(&inputs);
            let mut changes = image::import_changes("provider-testkit", &["idle"], None);
            // The preset's command (`claude`) comes after the entrypoint: one more filter.
            changes.push(format!(
                "ENTRYPOINT [\"{TESTKIT_PATH}\", \"egress_provider::testkit_idle\", \"--exact\", \"--nocapture\"]"
            ));
            let built = image::Image {
                tag: image::image_tag("agentc-provider-testkit", &tar, &changes),
                tar,
                changes,
            };
            agentc_backend_cli::exec::egress::import_unless_present(
                agentc_engine::Engine::Docker,
                &built,
            )
            .map_err(|e| e.with_hint().to_string())
        })
        .as_ref()
        .map(String::as_str)
        .map_err(Clone::clone)
}

fn rand16() -> u16 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    (nanos ^ std::process::id()) as u16
}

/// The outside network, the gateway and the upstream, a profile directory, the workspace;
/// removed on drop.
struct Outside {
    id: String,
    out: String,
    gateway: String,
    upstream: String,
    upstream_ip: String,
    dir: tempfile::TempDir,
    profiles: Vec<String>,
}

/// Starts a testkit container in `mode` on `network`, waiting for its `READY`.
fn start(name: &str, label: &str, network: &str, env: &[String]) -> Result<(), String> {
    let testkit = testkit_image()?;
    let mut args = vec![
        "run".to_string(),
        "--detach".to_string(),
        format!("--name={name}"),
        label.to_string(),
        format!("--network={network}"),
        format!("--entrypoint={TESTKIT_PATH}"),
    ];
    for var in env {
        args.extend(["--env".to_string(), var.clone()]);
    }
    args.extend(
        [
            testkit,
            "egress_provider::testkit_entry",
            "--exact",
            "--nocapture",
        ]
        .iter()
        .map(|a| a.to_string()),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    docker(&args)?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !docker(&["logs", name])
        .unwrap_or_default()
        .contains("READY")
    {
        if Instant::now() > deadline {
            return Err(format!(
                "{name} did not start: {:?}",
                docker(&["logs", name])
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

fn ip(container: &str, network: &str) -> String {
    docker(&[
        "inspect",
        "--format",
        &format!("{{{{(index .NetworkSettings.Networks \"{network}\").IPAddress}}}}"),
        container,
    ])
    .unwrap_or_default()
}

impl Outside {
    fn new(test: &str) -> Result<Outside, String> {
        testkit_image()?;
        let id = format!("agentc-prov-{}-{test}-{}", std::process::id(), rand16());
        let label = format!("--label={TEST_LABEL}={id}");
        let out = format!("{id}-out");
        docker(&["network", "create", "--internal", &label, &out])?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        std::fs::create_dir_all(dir.path().join("work")).map_err(|e| e.to_string())?;
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "agentc gateway test root");
        let root_key = rcgen::KeyPair::generate().unwrap();
        let root = params.self_signed(&root_key).unwrap();
        let issuer = rcgen::Issuer::new(params, root_key);
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec![GATEWAY.to_string()])
            .unwrap()
            .signed_by(&leaf_key, &issuer)
            .unwrap();
        std::fs::write(dir.path().join("test-root.pem"), root.pem()).map_err(|e| e.to_string())?;
        let mut outside = Outside {
            gateway: format!("{id}-gateway"),
            upstream: format!("{id}-upstream"),
            upstream_ip: String::new(),
            id,
            out: out.clone(),
            dir,
            profiles: Vec::new(),
        };
        start(
            &outside.gateway,
            &label,
            &out,
            &[
                format!("{TESTKIT_VAR}=gateway"),
                format!("{CERT_VAR}={}", leaf.pem()),
                format!("{KEY_VAR}={}", leaf_key.serialize_pem()),
            ],
        )?;
        let gateway_ip = ip(&outside.gateway, &out);
        let auth = format!(
            "Basic {}",
            agentc_egress::credential::base64_encode(UPSTREAM_USERINFO.as_bytes())
        );
        start(
            &outside.upstream,
            &label,
            &out,
            &[
                format!("{TESTKIT_VAR}=upstream"),
                format!("{ROUTE_VAR}={GATEWAY}:{GATEWAY_PORT}={gateway_ip}:{GATEWAY_PORT}"),
                format!("{AUTH_VAR}={auth}"),
            ],
        )?;
        outside.upstream_ip = ip(&outside.upstream, &out);
        Ok(outside)
    }

    /// The agent-containers profile: Claude Code, its provider on the gateway at 8443, the
    /// corporate proxy (with credentials) the allowlist names, the test root as its CA.
    fn profile(&mut self, name: &str) -> String {
        let testkit = testkit_image().expect("the testkit image");
        let profile = format!("{}-{name}", self.id);
        let proxy = format!("http://{UPSTREAM_USERINFO}@{}:3128", self.upstream_ip);
        let text = format!(
            "name = \"{profile}\"\nagent = \"claude-code\"\n\n[image]\nref = \"{testkit}\"\n\n\
             [provider]\nkind = \"anthropic\"\nendpoint = \"https://{GATEWAY}:{GATEWAY_PORT}/anthropic\"\n\
             api_key_env = \"{KEY_VARIABLE}\"\n\n\
             [proxy]\nhttp = \"{proxy}\"\nhttps = \"{proxy}\"\nca_file = \"test-root.pem\"\n\n\
             [egress]\nhosts = [\"{}\"]\noutside_network = \"{}\"\n",
            self.upstream_ip, self.out
        );
        let path = self.dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, text).expect("write the profile");
        self.profiles.push(profile);
        path.to_string_lossy().into_owned()
    }

    /// `agentc ARGS` with the key in its environment: success and the output.
    fn agentc(&self, args: &[&str]) -> (bool, String) {
        let output = Command::new(env!("CARGO_BIN_EXE_agentc"))
            .args(args)
            .current_dir(self.dir.path().join("work"))
            .env(KEY_VARIABLE, REAL_KEY)
            .output()
            .expect("run agentc");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), text)
    }

    fn probes(&self, sandbox: &str, probes: &[&str]) -> Vec<String> {
        let output = docker(&[
            "exec",
            "--env",
            &format!("{TESTKIT_VAR}=probe"),
            "--env",
            &format!("{PROBES_VAR}={}", probes.join("\n")),
            sandbox,
            TESTKIT_PATH,
            "egress_provider::testkit_entry",
            "--exact",
            "--nocapture",
        ])
        .expect("run the probes");
        let results: Vec<String> = output
            .lines()
            .filter_map(|line| line.strip_prefix("PROBE "))
            .map(|line| {
                line.split_once(' ')
                    .map(|(_, r)| r.to_string())
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(results.len(), probes.len(), "{output}");
        results
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        for profile in &self.profiles {
            let filter = format!("label=io.agentc.profile={profile}");
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
            // The proxy's CA volume (labelled) and the preset's home volume (named after the
            // profile).
            let volumes = docker(&["volume", "ls", "-q"]).unwrap_or_default();
            for volume in volumes.split_whitespace() {
                if volume.contains(profile.as_str()) {
                    let _ = docker(&["volume", "rm", "--force", volume]);
                }
            }
        }
        let _ = docker(&["rm", "--force", &self.gateway, &self.upstream]);
        let _ = docker(&["network", "rm", &self.out]);
    }
}

fn started_name(output: &str) -> String {
    output
        .lines()
        .find_map(|line| line.strip_prefix("started "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no `started NAME` in {output}"))
        .to_string()
}

fn provider_key_reaches_the_gateway_through_the_upstream(backend: &str) {
    let test = format!("a_provider_key_reaches_its_gateway_through_the_upstream_{backend}");
    if !require_daemon(&test) {
        return;
    }
    let mut outside = match Outside::new(backend) {
        Ok(outside) => outside,
        Err(reason) if std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() == Ok("1") => {
            panic!("{test}: {reason}")
        }
        Err(reason) => return eprintln!("skipping {test}: {reason}"),
    };
    let profile = outside.profile("gw");
    // What explain says: where the key goes.
    let (ok, explained) = outside.agentc(&["explain", &profile]);
    assert!(ok, "{explained}");
    assert!(
        explained.contains(&format!(
            "sets x-api-key on requests to {GATEWAY}:{GATEWAY_PORT} (terminated by the proxy, \
             then sent through the upstream proxy {}:3128's CONNECT) only",
            outside.upstream_ip
        )),
        "{explained}"
    );
    let (ok, output) = outside.agentc(&["run", &profile, "--backend", backend, "--detach"]);
    assert!(ok, "{output}");
    assert!(!output.contains(REAL_KEY), "{output}");
    let sandbox = started_name(&output);
    // The proxy, by its labels (a detached run's name has a suffix the proxy's lacks).
    let proxy = docker(&[
        "ps",
        "--filter",
        "label=io.agentc.kind=egress-proxy",
        "--filter",
        &format!("label=io.agentc.profile={}", outside.profiles[0]),
        "--format",
        "{{.Names}}",
    ])
    .expect("the egress proxy");
    assert!(proxy.ends_with("-egress-proxy"), "{proxy}");

    // The sandbox holds a placeholder, never the key.
    let env = docker(&[
        "inspect",
        "--format",
        "{{range .Config.Env}}{{println .}}{{end}}",
        &sandbox,
    ])
    .unwrap_or_default();
    let placeholder = env
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{KEY_VARIABLE}=")))
        .unwrap_or_else(|| panic!("no {KEY_VARIABLE} in {env}"))
        .to_string();
    assert!(placeholder.starts_with("sk-ant-"), "{placeholder}");
    assert!(!env.contains(REAL_KEY), "{env}");
    assert!(
        env.contains(&format!(
            "ANTHROPIC_BASE_URL=https://{GATEWAY}:{GATEWAY_PORT}/anthropic"
        )),
        "{env}"
    );

    let results = outside.probes(
        &sandbox,
        &[
            &format!("environ {REAL_KEY}"),
            &format!("https /v1/messages {REAL_KEY}"),
        ],
    );
    assert_eq!(results[0], "real=false", "{results:?}");
    let proxy_log = || docker(&["logs", &proxy]).unwrap_or_else(|error| error);
    // The sandbox's TLS ends at the proxy (the launch CA's leaf), and the answer holds no key.
    assert_eq!(
        results[1],
        "200 agentc_egress_proxy_launch_CA key=false",
        "{}",
        proxy_log()
    );

    // The gateway received the real key, through the upstream's CONNECT with its credentials.
    let seen = docker(&["logs", &outside.gateway]).unwrap_or_default();
    assert!(
        seen.contains(&format!(
            "SEEN {GATEWAY}:{GATEWAY_PORT} /v1/messages {REAL_KEY}"
        )),
        "{seen}\n{}",
        proxy_log()
    );
    assert!(!seen.contains(&placeholder), "{seen}");
    let connects = docker(&["logs", &outside.upstream]).unwrap_or_default();
    assert!(
        connects.contains(&format!("CONNECT {GATEWAY}:{GATEWAY_PORT} auth=ok")),
        "{connects}"
    );
    assert!(!connects.contains("auth=wrong"), "{connects}");
    assert!(
        !connects.contains(REAL_KEY) && !connects.contains(&placeholder),
        "{connects}"
    );
    // The proxy's lines name the credential, never a value.
    let log = proxy_log();
    assert!(
        log.contains("\"credential\":\"anthropic\""),
        "no line names the credential: {log}"
    );
    assert!(
        !log.contains(REAL_KEY) && !log.contains(&placeholder) && !log.contains("corp-s3cret"),
        "{log}"
    );
    let (ok, output) = outside.agentc(&["rm", &sandbox]);
    assert!(ok, "{output}");
}

#[test]
fn a_provider_key_reaches_its_gateway_through_the_upstream_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    provider_key_reaches_the_gateway_through_the_upstream("cli");
}

#[test]
fn a_provider_key_reaches_its_gateway_through_the_upstream_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    provider_key_reaches_the_gateway_through_the_upstream("api");
}
