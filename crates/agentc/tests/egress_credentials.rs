//! Live tests of keys held by the egress proxy (issue 21), on networks each test creates.
//!
//! The outside is an `--internal` network of the test's own; a server container there answers
//! HTTPS as `api.test` and `other.test` with a certificate from a test root (written to the
//! profile's `proxy.ca_file`, which the proxy trusts for upstreams), and logs every request it
//! receives with the `x-api-key` it carried. The sandbox (`agent = "custom"`, the testkit
//! image: this test binary and Debian's curl with its libraries) binds `AGENTC_TEST_API_KEY` to
//! `api.test` as `x-api-key`; `other.test` is allowed and bound to nothing.
//!
//! Two TLS stacks in the sandbox trust the launch CA through the variables alone: the testkit's
//! rustls client (`SSL_CERT_FILE`) and curl (OpenSSL, `CURL_CA_BUNDLE`).
//!
//! Network rule: these tests connect only to containers and networks they created.
//!
//! Needs the daemon (and `/usr/bin/curl` on the host, which `.ci/run` installs): skips with a
//! printed reason without them, fails instead when `AGENTC_REQUIRE_DOCKER=1`.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use agentc_policy::Hinted;

use common::{docker, require_daemon};

const TESTKIT_VAR: &str = "AGENTC_CRED_TESTKIT";
const PROBES_VAR: &str = "AGENTC_CRED_PROBES";
const CERT_VAR: &str = "AGENTC_CRED_CERT";
const KEY_VAR: &str = "AGENTC_CRED_KEY";
const TESTKIT_PATH: &str = "/testkit";
const TEST_LABEL: &str = "io.agentc.test.credentials";
/// The key of the tests, given to `agentc run` in its environment.
const REAL_KEY: &str = "sk-ant-test-REALKEY-0123456789abcdef";
const KEY_VARIABLE: &str = "AGENTC_TEST_API_KEY";

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
        "server" => server(),
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

/// Idles in the sandbox (its command).
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

/// HTTPS on 443 with the certificate in the environment; one `SEEN host path key` line per
/// request, answered `200 ok`.
fn server() -> i32 {
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
    let listener = TcpListener::bind("0.0.0.0:443").expect("bind 443");
    println!("READY");
    std::io::stdout().flush().ok();
    for stream in listener.incoming().flatten() {
        let config = config.clone();
        std::thread::spawn(move || {
            let Ok(connection) = rustls::ServerConnection::new(config) else {
                return;
            };
            let mut tls = rustls::StreamOwned::new(connection, stream);
            let mut reader = BufReader::new(&mut tls);
            let mut head = Vec::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                if line == "\r\n" {
                    break;
                }
                head.push(line.trim_end().to_string());
            }
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
            if path.starts_with("/upload") {
                let length: u64 = header("content-length").parse().unwrap_or(0);
                let read = std::io::copy(&mut (&mut reader).take(length), &mut std::io::sink())
                    .unwrap_or(0);
                println!("UPLOADED {read}");
                std::io::stdout().flush().ok();
                let body = format!("ok {read}");
                let _ = write!(
                    tls,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.flush();
                return;
            }
            if path.starts_with("/reflect") {
                let upgrade = header("upgrade") != "-";
                let _ = tls.write_all(&reflection(&path, &header("x-api-key"), upgrade));
                let _ = tls.flush();
                return;
            }
            let _ = tls
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
            let _ = tls.flush();
        });
    }
    0
}

/// What the reflecting host answers to `/reflect/MODE` (issue 36): the key it received in its
/// status line, headers (raw, base64, a cookie) and a body holding it raw, URL-encoded,
/// JSON-escaped, base64 at two alignments and base64url; MODE `plain` (Content-Length),
/// `chunked` (5-byte chunks) or `gzip`; with `Upgrade` a `101` and WebSocket frames (a text
/// message cut inside the key, a ping with it, a close).
fn reflection(path: &str, key: &str, upgrade: bool) -> Vec<u8> {
    use agentc_egress::credential::base64_encode;
    let head = format!(
        "x-echo: {key}\r\nx-echo-b64: {}\r\nset-cookie: s={key}\r\n",
        base64_encode(key.as_bytes())
    );
    if upgrade {
        let text = format!("your key is {key}!");
        let (first, second) = text.as_bytes().split_at(16);
        let frame = |fin: bool, opcode: u8, payload: &[u8]| {
            [
                &[u8::from(fin) << 7 | opcode, payload.len() as u8][..],
                payload,
            ]
            .concat()
        };
        let frames = [
            frame(false, 1, first),
            frame(true, 0, second),
            frame(true, 9, key.as_bytes()),
            frame(true, 8, &[3, 232]),
        ]
        .concat();
        let head = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n{head}\r\n"
        );
        return [head.into_bytes(), frames].concat();
    }
    let percent: String = key.bytes().map(|b| format!("%{b:02X}")).collect();
    let json: String = key.bytes().map(|b| format!("\\u{b:04x}")).collect();
    let body = format!(
        "raw {key}\npercent {percent}\njson {{\"k\":\"{json}\"}}\nb64 {}\nbasic {}\nb64url {}\n",
        base64_encode(format!("a{key}").as_bytes()),
        base64_encode(format!("user:{key}").as_bytes()),
        base64_encode(format!("??{key}").as_bytes())
            .replace('+', "-")
            .replace('/', "_"),
    );
    let status = format!("HTTP/1.1 400 Bad key {key}\r\n{head}Connection: close\r\n");
    match path.rsplit('/').next().unwrap_or_default() {
        "chunked" => {
            let mut out = format!("{status}Transfer-Encoding: chunked\r\n\r\n").into_bytes();
            for chunk in body.as_bytes().chunks(5) {
                out.extend(format!("{:x}\r\n", chunk.len()).into_bytes());
                out.extend_from_slice(chunk);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"0\r\n\r\n");
            out
        }
        "gzip" => {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(body.as_bytes()).unwrap();
            let gzip = encoder.finish().unwrap();
            let head = format!(
                "{status}Content-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
                gzip.len()
            );
            [head.into_bytes(), gzip].concat()
        }
        _ => format!("{status}Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes(),
    }
}

/// `{VAR}` in a probe replaced by the variable's value in this environment.
fn expand(text: &str) -> String {
    let mut out = text.to_string();
    for (name, value) in std::env::vars() {
        out = out.replace(&format!("{{{name}}}"), &value);
    }
    out
}

fn proxy_of(variable: &str) -> String {
    std::env::var(variable)
        .unwrap_or_default()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string()
}

/// One probe: `https HOST PATH` (CONNECT through `HTTPS_PROXY`, rustls trusting
/// `SSL_CERT_FILE` alone: `STATUS ISSUER`), `get URL` (a plain-HTTP request through
/// `HTTP_PROXY`: the status), `environ` (whether `/proc/1/environ` holds the real key and the
/// workload's variable), `cat PATH`.
fn probe(line: &str) -> String {
    let line = expand(line);
    let words: Vec<&str> = line.split(' ').collect();
    let result = match words.as_slice() {
        ["https", host, path] => https(host, path),
        ["raw", host, path, extra @ ..] => raw(host, path, extra.contains(&"ws")),
        ["uploads", count, mib] => uploads(count, mib),
        ["connections", count] => connections(count),
        ["get", url] => get(url),
        ["environ", real] => {
            let environ = std::fs::read("/proc/1/environ").unwrap_or_default();
            let text = String::from_utf8_lossy(&environ);
            Ok(format!(
                "real={} variable={}",
                text.contains(real),
                text.contains(&format!("{KEY_VARIABLE}="))
            ))
        }
        ["dns-flood", count] => dns_flood(count.parse().unwrap_or(0)),
        ["refused", count] => refused(count.parse().unwrap_or(0)),
        ["cat", path] => std::fs::read_to_string(path)
            .map(|text| text.replace('\n', "|"))
            .map_err(|e| e.to_string()),
        _ => Err(format!("unknown probe {line}")),
    };
    result.unwrap_or_else(|error| format!("ERROR {error}"))
}

fn https(host: &str, path: &str) -> Result<String, String> {
    let (response, issuer) = exchange(host, path, "")?;
    let status = String::from_utf8_lossy(&response)
        .split(' ')
        .nth(1)
        .unwrap_or("-")
        .to_string();
    Ok(format!("{status} {issuer}"))
}

/// `raw HOST PATH [ws]`: the whole response as the sandbox received it (a WebSocket upgrade
/// with `ws`), base64 on one line.
fn raw(host: &str, path: &str, websocket: bool) -> Result<String, String> {
    let extra = if websocket {
        "Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Extensions: permessage-deflate\r\n"
    } else {
        "Accept-Encoding: gzip\r\n"
    };
    let (response, _) = exchange(host, path, extra)?;
    Ok(agentc_egress::credential::base64_encode(&response))
}

/// `uploads N MIB`: N concurrent POSTs of MIB MiB each to `api.test/upload` through the
/// terminated tunnel: how many got `200 ok` with the whole body counted.
fn uploads(count: &str, mib: &str) -> Result<String, String> {
    let (count, mib): (usize, usize) = (
        count.parse().map_err(|_| "a count")?,
        mib.parse().map_err(|_| "MiB")?,
    );
    let size = mib << 20;
    let threads: Vec<_> = (0..count)
        .map(|_| {
            std::thread::spawn(move || {
                let extra = format!("Content-Length: {size}\r\n");
                let zeros = vec![b'z'; 64 << 10];
                exchange_with_body("api.test", "/upload", &extra, &mut |tls| {
                    for _ in 0..size / zeros.len() {
                        tls.write_all(&zeros)?;
                    }
                    Ok(())
                })
                .map(|(response, _)| {
                    String::from_utf8_lossy(&response).ends_with(&format!("ok {size}"))
                })
                .unwrap_or(false)
            })
        })
        .collect();
    let done = threads
        .into_iter()
        .map(|thread| thread.join().unwrap_or(false))
        .filter(|ok| *ok)
        .count();
    Ok(format!("{done}/{count}"))
}

/// `connections N`: N connections to the proxy at once, each a CONNECT to `api.test:443`: how
/// many were answered `200`, and how many refused.
fn connections(count: &str) -> Result<String, String> {
    let count: usize = count.parse().map_err(|_| "a count")?;
    let proxy = proxy_of("HTTPS_PROXY");
    let mut streams = Vec::new();
    for _ in 0..count {
        if let Ok(mut stream) = TcpStream::connect(&proxy) {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
            let _ =
                stream.write_all(b"CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n");
            streams.push(stream);
        }
    }
    let (mut allowed, mut refused) = (0, 0);
    for stream in &mut streams {
        let mut head = [0u8; 12];
        match stream.read_exact(&mut head) {
            Ok(()) if head.starts_with(b"HTTP/1.1 200") => allowed += 1,
            _ => refused += 1,
        }
    }
    Ok(format!(
        "{allowed} allowed {refused} refused of {}",
        streams.len()
    ))
}

/// One request through `HTTPS_PROXY` (its extra header lines `extra`): the response's bytes and
/// the issuer of the certificate the sandbox saw.
fn exchange(host: &str, path: &str, extra: &str) -> Result<(Vec<u8>, String), String> {
    exchange_with_body(host, path, extra, &mut |_| Ok(()))
}

/// [`exchange`], writing the request's body with `body` after its head (a POST when `extra`
/// has a Content-Length).
fn exchange_with_body(
    host: &str,
    path: &str,
    extra: &str,
    body: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(Vec<u8>, String), String> {
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
    let mut stream = TcpStream::connect(proxy_of("HTTPS_PROXY")).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
    write!(
        stream,
        "CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).map_err(|e| e.to_string())?;
        head.push(byte[0]);
    }
    let name = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
    let connection =
        rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    let mut tls = rustls::StreamOwned::new(connection, stream);
    // The workload's placeholder, to the bound host only (a spliced tunnel is not read).
    let key = match host {
        "api.test" => std::env::var(KEY_VARIABLE).unwrap_or_default(),
        _ => "-".to_string(),
    };
    let connection = if extra.contains("Upgrade") {
        "Upgrade"
    } else {
        "close"
    };
    let method = if extra.contains("Content-Length") {
        "POST"
    } else {
        "GET"
    };
    write!(
        tls,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nx-api-key: {key}\r\n{extra}Connection: {connection}\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    body(&mut tls).map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    let _ = tls.read_to_end(&mut response);
    let issuer = tls
        .conn
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|leaf| issuer_cn(leaf.as_ref()))
        .unwrap_or_default();
    Ok((response, issuer))
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

fn get(url: &str) -> Result<String, String> {
    let mut stream = TcpStream::connect(proxy_of("HTTP_PROXY")).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let host = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default();
    write!(
        stream,
        "GET {url} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    Ok(String::from_utf8_lossy(&response)
        .split(' ')
        .nth(1)
        .unwrap_or("-")
        .to_string())
}

/// The sandbox's DNS server (its proxy's stub), from `/etc/resolv.conf`.
fn nameserver() -> Result<String, String> {
    let conf = std::fs::read_to_string("/etc/resolv.conf").map_err(|e| e.to_string())?;
    conf.lines()
        .find_map(|line| line.strip_prefix("nameserver "))
        .map(|ip| format!("{}:53", ip.trim()))
        .ok_or_else(|| format!("no nameserver in {conf}"))
}

/// A query for `name`, type A, with the id `id`.
fn dns_query(id: u16, name: &str) -> Vec<u8> {
    let mut query = id.to_be_bytes().to_vec();
    query.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.') {
        query.push(label.len() as u8);
        query.extend_from_slice(label.as_bytes());
    }
    query.extend_from_slice(&[0, 0, 1, 0, 1]);
    query
}

/// Sends DNS queries over UDP to the sandbox's DNS server from four sockets, each keeping up
/// to 48 unanswered (a reader thread counts the answers; more overflow the stub's socket),
/// until `count` were answered: `answered=N sent=N seconds=S rate=R`.
fn dns_flood(count: u64) -> Result<String, String> {
    use std::net::UdpSocket;
    use std::sync::atomic::{AtomicU64, Ordering};
    const IN_FLIGHT: u64 = 48;
    let server = nameserver()?;
    let answered = Arc::new(AtomicU64::new(0));
    let sent = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut threads = Vec::new();
    for thread in 0..4u16 {
        let socket = UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
        socket.connect(&server).map_err(|e| e.to_string())?;
        socket
            .set_read_timeout(Some(Duration::from_millis(200)))
            .map_err(|e| e.to_string())?;
        let reader = socket.try_clone().map_err(|e| e.to_string())?;
        let mine = Arc::new(AtomicU64::new(0));
        let (theirs, total) = (mine.clone(), answered.clone());
        threads.push(std::thread::spawn(move || {
            let mut buffer = [0u8; 512];
            while total.load(Ordering::Relaxed) < count
                && started.elapsed() < Duration::from_secs(600)
            {
                if reader.recv(&mut buffer).is_ok() {
                    theirs.fetch_add(1, Ordering::Relaxed);
                    total.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
        let (answered, sent) = (answered.clone(), sent.clone());
        threads.push(std::thread::spawn(move || {
            let mut i: u64 = 0;
            let mut lost: u64 = 0;
            let mut stalled = Instant::now();
            let mut seen = 0;
            while answered.load(Ordering::Relaxed) < count
                && started.elapsed() < Duration::from_secs(600)
            {
                let done = mine.load(Ordering::Relaxed);
                if done != seen {
                    seen = done;
                    stalled = Instant::now();
                }
                if i.saturating_sub(done + lost) >= IN_FLIGHT {
                    // What was not answered in 50 ms is lost (a full socket buffer).
                    if stalled.elapsed() > Duration::from_millis(50) {
                        lost = i - done;
                        stalled = Instant::now();
                    }
                    std::thread::yield_now();
                    continue;
                }
                i += 1;
                let name = format!("f{thread}-{i}.flood.test");
                let _ = socket.send(&dns_query(i as u16, &name));
                sent.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for thread in threads {
        thread.join().map_err(|_| "a flood thread panicked")?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let answered = answered.load(Ordering::Relaxed);
    Ok(format!(
        "answered={answered} sent={} seconds={seconds:.1} rate={:.0}",
        sent.load(Ordering::Relaxed),
        answered as f64 / seconds
    ))
}

/// `count` plain-HTTP requests for a host the allowlist does not name, through
/// `HTTP_PROXY`, from eight threads: `refused=N seconds=S` (`refused` counting the `403`s).
fn refused(count: u64) -> Result<String, String> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let proxy = proxy_of("HTTP_PROXY");
    let next = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (proxy, next, refused) = (proxy.clone(), next.clone(), refused.clone());
            std::thread::spawn(move || {
                while next.fetch_add(1, Ordering::Relaxed) < count {
                    let Ok(mut stream) = TcpStream::connect(&proxy) else {
                        continue;
                    };
                    stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
                    let _ = stream.write_all(
                        b"GET http://refused.test/ HTTP/1.1\r\nHost: refused.test\r\n\
                          Connection: close\r\n\r\n",
                    );
                    let mut response = Vec::new();
                    let _ = stream.read_to_end(&mut response);
                    if response.starts_with(b"HTTP/1.1 403") {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().map_err(|_| "a request thread panicked")?;
    }
    Ok(format!(
        "refused={} seconds={:.1}",
        refused.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    ))
}

// ---------------------------------------------------------------------------------------------
// The host side.

/// The testkit image (this test binary, `/usr/bin/curl` and their libraries), or why not.
fn testkit_image() -> Result<&'static str, String> {
    static IMAGE: OnceLock<Result<String, String>> = OnceLock::new();
    IMAGE
        .get_or_init(|| {
            use agentc_egress::image;
            let mut inputs = image::self_inputs(TESTKIT_PATH).map_err(|e| e.to_string())?;
            let curl = "/usr/bin/curl";
            let bytes = std::fs::read(curl).map_err(|e| format!("{curl}: {e}"))?;
            inputs.libraries.insert(curl.to_string(), bytes);
            let ldd = Command::new("ldd")
                .arg(curl)
                .output()
                .map_err(|e| e.to_string())?;
            for line in String::from_utf8_lossy(&ldd.stdout).lines() {
                let path = line
                    .split("=>")
                    .nth(1)
                    .unwrap_or(line)
                    .split_whitespace()
                    .next()
                    .unwrap_or_default();
                if path.starts_with('/') && !inputs.libraries.contains_key(path) {
                    let real = std::fs::canonicalize(path).map_err(|e| format!("{path}: {e}"))?;
                    let bytes = std::fs::read(&real).map_err(|e| format!("{path}: {e}"))?;
                    inputs.libraries.insert(path.to_string(), bytes);
                }
            }
            let tar = image::rootfs_tar(&inputs);
            let changes = image::import_changes("credentials-testkit", &[TESTKIT_PATH], None);
            let built = image::Image {
                tag: image::image_tag("agentc-credentials-testkit", &tar, &changes),
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

/// The outside network, its server, a profile directory, and the test root; removed on drop.
struct Outside {
    id: String,
    out: String,
    subnet: String,
    server: String,
    dir: tempfile::TempDir,
    profiles: Vec<String>,
}

impl Outside {
    fn new(test: &str) -> Result<Outside, String> {
        let testkit = testkit_image()?;
        let id = format!("agentc-cred-{}-{test}-{}", std::process::id(), rand16());
        let label = format!("--label={TEST_LABEL}={id}");
        let out = format!("{id}-out");
        docker(&["network", "create", "--internal", &label, &out])?;
        let subnet = docker(&[
            "network",
            "inspect",
            &out,
            "--format",
            "{{(index .IPAM.Config 0).Subnet}}",
        ])?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        // The test root, and one leaf for both names.
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "agentc credentials test root");
        let root_key = rcgen::KeyPair::generate().unwrap();
        let root = params.self_signed(&root_key).unwrap();
        let issuer = rcgen::Issuer::new(params, root_key);
        let leaf_params =
            rcgen::CertificateParams::new(vec!["api.test".to_string(), "other.test".to_string()])
                .unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
        std::fs::write(dir.path().join("test-root.pem"), root.pem()).map_err(|e| e.to_string())?;
        let server = format!("{id}-server");
        let outside = Outside {
            id,
            out: out.clone(),
            subnet,
            server: server.clone(),
            dir,
            profiles: Vec::new(),
        };
        docker(&[
            "run",
            "--detach",
            &format!("--name={server}"),
            &label,
            &format!("--network={out}"),
            "--network-alias=api.test",
            "--network-alias=other.test",
            "--env",
            &format!("{TESTKIT_VAR}=server"),
            "--env",
            &format!("{CERT_VAR}={}", leaf.pem()),
            "--env",
            &format!("{KEY_VAR}={}", leaf_key.serialize_pem()),
            testkit,
            TESTKIT_PATH,
            "egress_credentials::testkit_entry",
            "--exact",
            "--nocapture",
        ])?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while !docker(&["logs", &server])
            .unwrap_or_default()
            .contains("READY")
        {
            if Instant::now() > deadline {
                return Err(format!(
                    "the server did not start: {:?}",
                    docker(&["logs", &server])
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(outside)
    }

    /// The sandbox's profile: `api.test` gets the key, `other.test` is allowed and unbound.
    fn profile(&mut self, name: &str) -> String {
        self.profile_with(name, "")
    }

    /// As [`Outside::profile`], with `credentials` (lines of the `[credentials]` table).
    fn profile_with(&mut self, name: &str, credentials: &str) -> String {
        let testkit = testkit_image().expect("the testkit image");
        let profile = format!("{}-{name}", self.id);
        let text = format!(
            "name = \"{profile}\"\nagent = \"custom\"\n\n[image]\nref = \"{testkit}\"\n\
             command = [\"{TESTKIT_PATH}\", \"egress_credentials::testkit_idle\", \"--exact\", \"--nocapture\"]\n\n\
             [proxy]\nca_file = \"test-root.pem\"\n\n\
             [egress]\nhosts = [\"api.test\", \"other.test\"]\noutside_network = \"{}\"\n\
             allow_cidrs = [\"{}\"]\n\n\
             [credentials]\n{credentials}\n\
             [credentials.api]\nfrom_env = \"{KEY_VARIABLE}\"\nhosts = [\"api.test\"]\n\
             header = \"x-api-key\"\nprefix = \"sk-ant-\"\n",
            self.out, self.subnet
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
            "egress_credentials::testkit_entry",
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

    fn seen(&self) -> String {
        docker(&["logs", &self.server]).unwrap_or_default()
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
            for volume in docker(&["volume", "ls", "-q", "--filter", &filter])
                .unwrap_or_default()
                .split_whitespace()
            {
                let _ = docker(&["volume", "rm", "--force", volume]);
            }
        }
        let _ = docker(&["rm", "--force", &self.server]);
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

fn inspect(name: &str, format: &str) -> String {
    docker(&["inspect", "--format", format, name]).unwrap_or_default()
}

fn keys_stay_outside_the_sandbox(backend: &str) {
    let test = format!("keys_stay_outside_the_sandbox_through_the_{backend}_backend");
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
    let profile = outside.profile("a");
    let (ok, output) = outside.agentc(&["run", &profile, "--backend", backend]);
    assert!(ok, "{output}");
    assert!(!output.contains(REAL_KEY), "{output}");
    let sandbox = started_name(&output);
    let proxy = format!("{sandbox}-egress-proxy");

    // The sandbox's own environment (docker inspect and /proc/1/environ) holds a placeholder.
    let env = inspect(&sandbox, "{{range .Config.Env}}{{println .}}{{end}}");
    let placeholder = env
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{KEY_VARIABLE}=")))
        .unwrap_or_else(|| panic!("no {KEY_VARIABLE} in {env}"))
        .to_string();
    assert!(
        placeholder.starts_with("sk-ant-") && placeholder.len() == 7 + 48,
        "{placeholder}"
    );
    assert!(!env.contains(REAL_KEY), "{env}");
    for variable in [
        "SSL_CERT_FILE",
        "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "REQUESTS_CA_BUNDLE",
        "GIT_SSL_CAINFO",
    ] {
        assert!(
            env.contains(&format!("{variable}=/etc/agentc/egress-ca/")),
            "{variable}: {env}"
        );
    }
    let results = outside.probes(
        &sandbox,
        &[
            &format!("environ {REAL_KEY}"),
            "https api.test /bound",
            "https other.test /spliced",
            &format!("get http://other.test/replay?k={{{KEY_VARIABLE}}}"),
        ],
    );
    assert_eq!(results[0], "real=false variable=true");
    // rustls, trusting SSL_CERT_FILE alone: the bound host through the launch CA's leaf...
    assert_eq!(
        results[1], "200 agentc_egress_proxy_launch_CA",
        "{results:?}"
    );
    // ...and the unbound one with its own certificate (no interception).
    assert_eq!(
        results[2], "200 agentc_credentials_test_root",
        "{results:?}"
    );
    // The placeholder sent to the unbound host is refused.
    assert_eq!(results[3], "403", "{results:?}");

    // curl (OpenSSL), trusting CURL_CA_BUNDLE through HTTPS_PROXY alone.
    let curl = docker(&[
        "exec",
        &sandbox,
        "/usr/bin/curl",
        "--silent",
        "--show-error",
        "--max-time",
        "20",
        "--header",
        &format!("x-api-key: {placeholder}"),
        "--write-out",
        "%{http_code}",
        "https://api.test/curl",
    ]);
    assert_eq!(curl.as_deref(), Ok("ok200"), "{curl:?}");

    // The upstream received the real key for both bound requests, and other.test saw no replay.
    let seen = outside.seen();
    assert!(
        seen.contains(&format!("SEEN api.test /bound {REAL_KEY}")),
        "{seen}"
    );
    assert!(
        seen.contains(&format!("SEEN api.test /curl {REAL_KEY}")),
        "{seen}"
    );
    assert!(seen.contains("SEEN other.test /spliced -"), "{seen}");
    assert!(!seen.contains("/replay"), "{seen}");
    assert!(!seen.contains(&placeholder), "{seen}");
    assert_eq!(seen.matches(REAL_KEY).count(), 2, "{seen}");
    // One audit line, and no value in the proxy's log.
    let log = docker(&["logs", &proxy]).unwrap_or_default();
    let replays: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"kind\":\"credential-replay\""))
        .collect();
    assert_eq!(replays.len(), 1, "{log}");
    assert!(
        !log.contains(REAL_KEY) && !log.contains(&placeholder),
        "{log}"
    );
    let ca = outside
        .probes(&sandbox, &["cat /etc/agentc/egress-ca/ca.pem"])
        .remove(0);
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");

    // The proxy killed: no egress, not even to the bound host.
    docker(&["kill", &proxy]).expect("kill the proxy");
    let dead = outside.probes(&sandbox, &["https api.test /after-kill"]);
    assert!(dead[0].starts_with("ERROR"), "{dead:?}");

    // A new launch: a new CA and a new placeholder.
    let (ok, output) = outside.agentc(&["rm", &sandbox]);
    assert!(ok, "{output}");
    let (ok, output) = outside.agentc(&["run", &profile, "--backend", backend]);
    assert!(ok, "{output}");
    let again = started_name(&output);
    let env = inspect(&again, "{{range .Config.Env}}{{println .}}{{end}}");
    assert!(!env.contains(&placeholder), "the same placeholder twice");
    let second_ca = outside
        .probes(&again, &["cat /etc/agentc/egress-ca/ca.pem"])
        .remove(0);
    assert!(second_ca.starts_with("-----BEGIN CERTIFICATE-----"));
    assert_ne!(second_ca, ca, "the same CA twice");
    let (ok, output) = outside.agentc(&["rm", &again]);
    assert!(ok, "{output}");
    // Nothing left: no volume of the profile.
    let filter = format!("label=io.agentc.profile={}", outside.profiles[0]);
    assert_eq!(
        docker(&["volume", "ls", "-q", "--filter", &filter]).unwrap_or_default(),
        ""
    );
}

#[test]
fn keys_stay_outside_the_sandbox_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    keys_stay_outside_the_sandbox("cli");
}

#[test]
fn keys_stay_outside_the_sandbox_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    keys_stay_outside_the_sandbox("api");
}

/// Every way a client could decode `bytes` (as they are, percent-decoded, JSON-unescaped, and
/// base64 or base64url of each run of their alphabet at each offset) searched for `key`: how
/// it was found, if it was. Independent of the proxy's own search (issue 36).
fn leaked(bytes: &[u8], key: &str) -> Option<String> {
    use agentc_egress::credential::base64_decode;
    use agentc_egress::replay::{json_unescaped, percent_decoded};
    let has = |haystack: &[u8]| haystack.windows(key.len()).any(|w| w == key.as_bytes());
    let mut decodings = vec![
        ("as is".to_string(), bytes.to_vec()),
        ("percent-decoded".to_string(), percent_decoded(bytes)),
        ("JSON-unescaped".to_string(), json_unescaped(bytes)),
    ];
    let text = String::from_utf8_lossy(bytes);
    let alphabet = |c: char| c.is_ascii_alphanumeric() || "+/-_=".contains(c);
    for run in text
        .split(|c: char| !alphabet(c))
        .filter(|run| run.len() >= 8)
    {
        for offset in 0..4.min(run.len()) {
            if let Some(decoded) = base64_decode(&run[offset..]) {
                decodings.push((format!("base64 of `{run}` from {offset}"), decoded));
            }
        }
    }
    decodings
        .into_iter()
        .find(|(_, decoded)| has(decoded))
        .map(|(how, _)| how)
}

/// A response as its client reads it: the head, then the body de-chunked, or a WebSocket's
/// messages' payloads joined (the frames' headers left out), one a line.
fn as_read(bytes: &[u8]) -> Vec<u8> {
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return bytes.to_vec();
    };
    let (head, mut rest) = (&bytes[..end + 4], &bytes[end + 4..]);
    let lower = String::from_utf8_lossy(head).to_ascii_lowercase();
    let mut body = Vec::new();
    if lower.starts_with("http/1.1 101") {
        while rest.len() >= 2 {
            let (fin, len) = (rest[0] & 0x80 != 0, usize::from(rest[1] & 0x7f));
            let payload = &rest[2..(2 + len).min(rest.len())];
            body.extend_from_slice(payload);
            if fin {
                body.push(b'\n');
            }
            rest = &rest[(2 + len).min(rest.len())..];
        }
    } else if lower.contains("transfer-encoding: chunked") {
        while let Some(line) = rest.windows(2).position(|w| w == b"\r\n") {
            let size = std::str::from_utf8(&rest[..line])
                .ok()
                .and_then(|size| usize::from_str_radix(size.trim(), 16).ok())
                .unwrap_or(0);
            if size == 0 {
                break;
            }
            let start = line + 2;
            body.extend_from_slice(&rest[start..(start + size).min(rest.len())]);
            rest = &rest[(start + size + 2).min(rest.len())..];
        }
    } else {
        body.extend_from_slice(rest);
    }
    [head, &body].concat()
}

fn reflected_keys_never_reach_the_sandbox(backend: &str) {
    let test = format!("reflected_keys_never_reach_the_sandbox_through_the_{backend}_backend");
    if !require_daemon(&test) {
        return;
    }
    let mut outside = match Outside::new(&format!("reflect-{backend}")) {
        Ok(outside) => outside,
        Err(reason) if std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() == Ok("1") => {
            panic!("{test}: {reason}")
        }
        Err(reason) => return eprintln!("skipping {test}: {reason}"),
    };
    let profile = outside.profile("r");
    let (ok, output) = outside.agentc(&["run", &profile, "--backend", backend]);
    assert!(ok, "{output}");
    let sandbox = started_name(&output);
    let proxy = format!("{sandbox}-egress-proxy");
    let modes = ["plain", "chunked", "gzip"];
    let mut probes: Vec<String> = modes
        .iter()
        .map(|mode| format!("raw api.test /reflect/{mode}"))
        .collect();
    probes.push("raw api.test /reflect/ws ws".into());
    let probes: Vec<&str> = probes.iter().map(String::as_str).collect();
    let results = outside.probes(&sandbox, &probes);
    for (probe, result) in probes.iter().zip(&results) {
        let bytes = agentc_egress::credential::base64_decode(result)
            .map(|bytes| as_read(&bytes))
            .unwrap_or_else(|| panic!("{probe}: {result}"));
        let text = String::from_utf8_lossy(&bytes);
        if let Some(how) = leaked(&bytes, REAL_KEY) {
            panic!("{probe}: the key came back ({how}): {text}");
        }
        assert!(text.contains("redacted"), "{probe}: {text}");
        if probe.ends_with(" ws") {
            assert!(text.starts_with("HTTP/1.1 101"), "{probe}: {text}");
            assert!(text.contains("your key is "), "{probe}: {text}");
        } else {
            assert!(text.starts_with("HTTP/1.1 400"), "{probe}: {text}");
            for label in ["raw ", "percent ", "json ", "b64 ", "basic ", "b64url "] {
                assert!(text.contains(label), "{probe}: {label} missing: {text}");
            }
        }
    }
    // curl over HTTP/2 to the proxy (which speaks HTTP/1.1 to this host), and TRACE.
    let placeholder = inspect(&sandbox, "{{range .Config.Env}}{{println .}}{{end}}")
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{KEY_VARIABLE}=")))
        .unwrap_or_default()
        .to_string();
    let curl = |extra: &[&str], path: &str| {
        let key = format!("x-api-key: {placeholder}");
        let url = format!("https://api.test{path}");
        let mut args = vec![
            "exec",
            &sandbox,
            "/usr/bin/curl",
            "--silent",
            "--show-error",
            "--max-time",
            "20",
            "--dump-header",
            "-",
            "--header",
            &key,
            "--write-out",
            "\n%{http_version} %{http_code}",
        ];
        args.extend_from_slice(extra);
        args.push(&url);
        docker(&args).unwrap_or_else(|e| e)
    };
    let h2 = curl(&["--http2", "--compressed"], "/reflect/gzip");
    assert!(h2.ends_with("2 400"), "{h2}");
    assert!(leaked(h2.as_bytes(), REAL_KEY).is_none(), "{h2}");
    let trace = curl(&["--request", "TRACE"], "/reflect/trace");
    assert!(trace.ends_with(" 405"), "{trace}");
    assert!(leaked(trace.as_bytes(), REAL_KEY).is_none(), "{trace}");
    // The host did receive the real key each time, and never the TRACE.
    let seen = outside.seen();
    for mode in ["plain", "chunked", "gzip", "ws"] {
        assert!(
            seen.contains(&format!("SEEN api.test /reflect/{mode} {REAL_KEY}")),
            "{mode}: {seen}"
        );
    }
    assert!(!seen.contains("/reflect/trace"), "{seen}");
    // A scrub line for each response, naming the credential; no value in the log.
    let log = docker(&["logs", &proxy]).unwrap_or_default();
    let scrubs: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"kind\":\"scrub\""))
        .collect();
    assert_eq!(scrubs.len(), 5, "{log}");
    assert!(
        scrubs.iter().all(|l| l.contains("\"credential\":\"api\"")),
        "{log}"
    );
    assert!(log.contains("\"reason\":\"method-refused\""), "{log}");
    assert!(
        !log.contains(REAL_KEY) && !log.contains(&placeholder),
        "{log}"
    );
    let (ok, output) = outside.agentc(&["rm", &sandbox]);
    assert!(ok, "{output}");
}

#[test]
fn reflected_keys_never_reach_the_sandbox_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    reflected_keys_never_reach_the_sandbox("cli");
}

#[test]
fn reflected_keys_never_reach_the_sandbox_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    reflected_keys_never_reach_the_sandbox("api");
}

/// The peak memory of a container's cgroup, when the host shows it (cgroup v1 or v2).
fn memory_peak(container: &str) -> Option<u64> {
    let id = inspect(container, "{{.Id}}");
    [
        format!("/sys/fs/cgroup/memory/docker/{id}/memory.max_usage_in_bytes"),
        format!("/sys/fs/cgroup/system.slice/docker-{id}.scope/memory.peak"),
    ]
    .iter()
    .find_map(|path| std::fs::read_to_string(path).ok())
    .and_then(|text| text.trim().parse().ok())
}

/// How many requests the proxy's log accounts for whose line matches `filter`: one per line,
/// and a summary line's `count` (repeated events counted rather than written).
fn accounted(log: &str, filter: &dyn Fn(&serde_json::Value) -> bool) -> u64 {
    log.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|line| filter(line))
        .map(|line| match line["event"].as_str() {
            Some("summary") => line["count"].as_u64().unwrap_or(0),
            _ => 1,
        })
        .sum()
}

fn a_flood_neither_kills_nor_grows_the_proxy(backend: &str) {
    let test = format!("a_flood_neither_kills_nor_grows_the_proxy_through_the_{backend}_backend");
    if !require_daemon(&test) {
        return;
    }
    let mut outside = match Outside::new(&format!("flood-{backend}")) {
        Ok(outside) => outside,
        Err(reason) if std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() == Ok("1") => {
            panic!("{test}: {reason}")
        }
        Err(reason) => return eprintln!("skipping {test}: {reason}"),
    };
    let profile = outside.profile("f");
    let (ok, output) = outside.agentc(&["run", &profile, "--backend", backend]);
    assert!(ok, "{output}");
    let sandbox = started_name(&output);
    let proxy = format!("{sandbox}-egress-proxy");
    // 16 concurrent 64 MiB uploads to the bound host (bodies the proxy searches for
    // placeholders), then 1,000 connections at once (past its 512 slots).
    let started = Instant::now();
    let results = outside.probes(&sandbox, &["uploads 16 64", "connections 1000"]);
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(results[0], "16/16", "{results:?}");
    assert!(results[1].ends_with("of 1000"), "{results:?}");
    let state = inspect(
        &proxy,
        "{{.State.Running}} {{.State.OOMKilled}} {{.RestartCount}}",
    );
    assert_eq!(state, "true false 0", "the proxy after the flood: {state}");
    let seen = outside.seen();
    assert_eq!(
        seen.matches(&format!("UPLOADED {}", 64u64 << 20)).count(),
        16,
        "{seen}"
    );
    // Every request has its line: the uploads' decisions, and each connection's CONNECT
    // decision or refusal, in full or counted in a summary line (written when the rate
    // limit's window ends, 10 s at most after the flood).
    // A summary counts the lines of one event (`of`), a line is its own.
    let decision = |line: &serde_json::Value| {
        line["event"] == "decision" || (line["event"] == "summary" && line["of"] == "decision")
    };
    let upload_lines = |line: &serde_json::Value| {
        line["kind"] == "request"
            && decision(line)
            && (line["detail"] == "POST request" || line["event"] == "summary")
    };
    let connect_lines = |line: &serde_json::Value| {
        (line["kind"] == "connect" || line["reason"] == "too-many-connections") && decision(line)
    };
    let deadline = Instant::now() + Duration::from_secs(40);
    let (uploads, connects) = loop {
        let log = docker(&["logs", &proxy]).unwrap_or_default();
        let counted = (
            accounted(&log, &upload_lines),
            accounted(&log, &connect_lines),
        );
        // The uploads' own 16 CONNECTs, and the 1,000.
        if counted.0 >= 16 && counted.1 >= 1016 || Instant::now() > deadline {
            break counted;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(uploads, 16, "upload lines: {}", results[1]);
    assert!(
        connects >= 1016,
        "{connects} connections accounted for: {}",
        results[1]
    );
    let peak = memory_peak(&proxy);
    eprintln!(
        "{test}: 16 x 64 MiB uploads and 1,000 connections in {seconds:.1} s: {}; proxy peak \
         memory {}",
        results[1],
        peak.map_or_else(
            || "not shown by this host".to_string(),
            |b| format!("{} MiB", b >> 20)
        )
    );
    if let Some(peak) = peak {
        assert!(peak < 256 << 20, "peak {peak}");
    }
    let (ok, output) = outside.agentc(&["rm", &sandbox]);
    assert!(ok, "{output}");
}

#[test]
fn a_flood_neither_kills_nor_grows_the_proxy_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    a_flood_neither_kills_nor_grows_the_proxy("cli");
}

#[test]
fn a_flood_neither_kills_nor_grows_the_proxy_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    a_flood_neither_kills_nor_grows_the_proxy("api");
}

/// The value of `key=` in a probe's result (`answered=300000 sent=...`).
fn figure(result: &str, key: &str) -> f64 {
    result
        .split(' ')
        .find_map(|word| word.strip_prefix(&format!("{key}=")))
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {result}"))
}

/// The count of the lines of `kind` and `reason` in `log` (JSON lines): those written in full
/// and those the summaries counted.
fn counted(log: &str, kind: &str, reason: &str) -> (u64, u64) {
    let mut full = 0;
    let mut summarized = 0;
    for value in log
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|value| value["kind"] == kind && value["reason"] == reason)
    {
        match value["event"].as_str() {
            Some("summary") => summarized += value["count"].as_u64().unwrap_or(0),
            _ => full += 1,
        }
    }
    (full, summarized)
}

fn the_audit_survives_a_flood(backend: &str) {
    let test = format!("the_audit_survives_a_flood_through_the_{backend}_backend");
    if !require_daemon(&test) {
        return;
    }
    let mut outside = match Outside::new(&format!("fl{backend}")) {
        Ok(outside) => outside,
        Err(reason) if std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() == Ok("1") => {
            panic!("{test}: {reason}")
        }
        Err(reason) => return eprintln!("skipping {test}: {reason}"),
    };
    let profile = outside.profile("f");
    let (ok, output) = outside.agentc(&["run", &profile, "--backend", backend]);
    assert!(ok, "{output}");
    let sandbox = started_name(&output);
    let proxy = format!("{sandbox}-egress-proxy");
    // The proxy keeps its audit on a volume of its own; the workload mounts no such volume.
    let proxy_mounts = inspect(
        &proxy,
        "{{range .Mounts}}{{.Name}}={{.Destination}} {{end}}",
    );
    assert!(
        proxy_mounts.contains(&format!(
            "{sandbox}-egress-audit=/var/lib/agentc/egress-audit"
        )),
        "{proxy_mounts}"
    );
    let workload_mounts = inspect(
        &sandbox,
        "{{range .Mounts}}{{.Name}}={{.Destination}} {{end}}",
    );
    assert!(
        !workload_mounts.contains("egress-audit"),
        "{workload_mounts}"
    );

    // A replay first, then the floods.
    let results = outside.probes(
        &sandbox,
        &[&format!(
            "get http://other.test/replay?k={{{KEY_VARIABLE}}}"
        )],
    );
    assert_eq!(results[0], "403", "{results:?}");
    // 300,000 queries: written a line each without the limiter (about 200 bytes a line), they
    // would be twice the audit's disk bound; the limiter makes their count irrelevant to what
    // is kept. (The same proof with 1.5 million, the size of the attack that rotated the old
    // log away, is measured in docs/egress-proxy.md; it takes six minutes a backend.)
    let floods = outside.probes(&sandbox, &["dns-flood 300000", "refused 20000"]);
    eprintln!("{test}: dns {}; http {}", floods[0], floods[1]);
    let answered = figure(&floods[0], "answered") as u64;
    assert!(answered >= 300_000, "{floods:?}");
    assert_eq!(figure(&floods[1], "refused") as u64, 20_000, "{floods:?}");

    // The replay line is in `agentc egress log`, and every query and refusal is counted: the
    // last window's summaries are written when it ends (10 s), so asked until they are there.
    let log_of = || {
        outside.agentc(&[
            "egress",
            "log",
            &sandbox,
            "--backend",
            backend,
            "--format",
            "json",
        ])
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let (ok, log) = loop {
        let (ok, log) = log_of();
        let (full, summarized) = counted(&log, "forward", "host-not-allowed");
        if !ok || full + summarized >= 20_000 || Instant::now() > deadline {
            break (ok, log);
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    assert!(ok, "{}", &log[log.len().saturating_sub(2000)..]);
    let replays = log
        .lines()
        .filter(|line| line.contains("\"kind\":\"credential-replay\""))
        .count();
    assert_eq!(replays, 1, "{}", &log[log.len().saturating_sub(2000)..]);
    let (full, summarized) = counted(&log, "dns", "dns-query");
    eprintln!("{test}: the proxy counted {full} DNS lines in full and {summarized} in summaries");
    assert!(
        full + summarized >= answered,
        "{full} + {summarized} < {answered}"
    );
    assert!(full < 20_000, "the DNS lines were not limited: {full}");
    let (full, summarized) = counted(&log, "forward", "host-not-allowed");
    assert!(full + summarized >= 20_000, "{full} + {summarized}");
    assert!(log.contains("\"event\":\"summary\""));

    // The audit directory within its bound (the archive of it: the files and tar headers).
    let archive = Command::new("docker")
        .args(["cp", &format!("{proxy}:/var/lib/agentc/egress-audit"), "-"])
        .output()
        .expect("docker cp");
    assert!(archive.status.success(), "{archive:?}");
    let bytes = archive.stdout.len() as u64;
    eprintln!("{test}: the audit directory's archive is {bytes} bytes");
    assert!(
        bytes <= agentc_egress::audit::DISK_BOUND + 64 * 1024,
        "{bytes} bytes"
    );
    // The replay line is in the first priority file, which no flood rotates.
    let text = String::from_utf8_lossy(&archive.stdout);
    assert!(text.contains("\"kind\":\"credential-replay\""));

    // A stopped proxy: egress is down (exit 1), and the log still has the replay line.
    docker(&["stop", &proxy]).expect("stop the proxy");
    let (ok, log) = outside.agentc(&[
        "egress",
        "log",
        &sandbox,
        "--backend",
        backend,
        "--format",
        "json",
    ]);
    assert!(!ok, "{}", &log[log.len().saturating_sub(2000)..]);
    assert_eq!(
        log.lines()
            .filter(|line| line.contains("\"kind\":\"credential-replay\""))
            .count(),
        1,
        "{}",
        &log[log.len().saturating_sub(2000)..]
    );

    // Removed with the sandbox: no volume of the profile is left.
    let (ok, output) = outside.agentc(&["rm", &sandbox]);
    assert!(ok, "{output}");
    let filter = format!("label=io.agentc.profile={}", outside.profiles[0]);
    assert_eq!(
        docker(&["volume", "ls", "-q", "--filter", &filter]).unwrap_or_default(),
        ""
    );
}

#[test]
fn the_audit_survives_a_flood_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    the_audit_survives_a_flood("cli");
}

#[test]
fn the_audit_survives_a_flood_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    the_audit_survives_a_flood("api");
}

/// A container's log, stdout and stderr (`docker logs` writes the container's stderr to its own).
fn both_streams(container: &str) -> String {
    let output = Command::new("docker")
        .args(["logs", container])
        .output()
        .expect("run docker logs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The sandbox's egress cell in `agentc ps --all --format json`.
fn egress_cell(outside: &Outside, sandbox: &str) -> serde_json::Value {
    let (ok, output) = outside.agentc(&["ps", "--all", "--format", "json"]);
    assert!(ok, "{output}");
    let rows: serde_json::Value = serde_json::from_str(&output).expect("ps json");
    rows.as_array()
        .and_then(|rows| rows.iter().find(|row| row["name"] == sandbox))
        .map(|row| row["egress"].clone())
        .unwrap_or_else(|| panic!("no {sandbox} in {output}"))
}

/// Waits until `done` holds for the proxy's `{{.State.Status}} {{.RestartCount}}`.
fn wait_for_proxy(proxy: &str, what: &str, done: impl Fn(&str, u64) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let seen = inspect(proxy, "{{.State.Status}} {{.RestartCount}}");
        let (status, count) = seen.split_once(' ').unwrap_or_default();
        if done(status, count.parse().unwrap_or_default()) {
            return seen;
        }
        assert!(Instant::now() < deadline, "{proxy}: never {what} ({seen})");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A proxy that dies (its process killed from the host, as the kernel's OOM killer would) is
/// started again by the engine with the launch CA the sandbox trusts, `ps` counts the restart,
/// and the bound host gets the key again; a proxy stopped by hand (`docker kill`) stays down.
fn a_dead_proxy_comes_back_with_its_ca(backend: &str) {
    let test = format!("a_dead_proxy_comes_back_with_its_ca_through_the_{backend}_backend");
    if !require_daemon(&test) {
        return;
    }
    let mut outside = match Outside::new(&format!("restart-{backend}")) {
        Ok(outside) => outside,
        Err(reason) if std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() == Ok("1") => {
            panic!("{test}: {reason}")
        }
        Err(reason) => return eprintln!("skipping {test}: {reason}"),
    };
    let profile = outside.profile("restart");
    let (ok, output) = outside.agentc(&["run", &profile, "--backend", backend]);
    assert!(ok, "{output}");
    let sandbox = started_name(&output);
    let proxy = format!("{sandbox}-egress-proxy");
    assert_eq!(
        inspect(
            &proxy,
            "{{.HostConfig.RestartPolicy.Name}}:{{.HostConfig.RestartPolicy.MaximumRetryCount}}"
        ),
        "on-failure:5"
    );
    let before = outside.probes(
        &sandbox,
        &["cat /etc/agentc/egress-ca/ca.pem", "https api.test /before"],
    );
    assert_eq!(before[1], "200 agentc_egress_proxy_launch_CA", "{before:?}");
    assert_eq!(
        egress_cell(&outside, &sandbox),
        serde_json::json!({"state": "up", "proxy": proxy})
    );

    // Killed from outside the engine: the engine starts it again.
    let pid = inspect(&proxy, "{{.State.Pid}}");
    let killed = Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .expect("run kill");
    assert!(killed.success(), "kill -KILL {pid} (the test runs as root)");
    wait_for_proxy(&proxy, "restarted", |status, count| {
        status == "running" && count == 1
    });
    // Its health check passes again before the sandbox asks.
    let deadline = Instant::now() + Duration::from_secs(30);
    while inspect(&proxy, "{{.State.Health.Status}}") != "healthy" {
        assert!(Instant::now() < deadline, "{proxy} never healthy again");
        std::thread::sleep(Duration::from_millis(200));
    }
    let after = outside.probes(
        &sandbox,
        &[
            "cat /etc/agentc/egress-ca/ca.pem",
            "https api.test /after-restart",
        ],
    );
    assert_eq!(after[0], before[0], "the restarted proxy has another CA");
    assert_eq!(after[1], "200 agentc_egress_proxy_launch_CA", "{after:?}");
    let seen = outside.seen();
    assert!(
        seen.contains(&format!("SEEN api.test /after-restart {REAL_KEY}")),
        "{seen}"
    );
    assert_eq!(
        egress_cell(&outside, &sandbox),
        serde_json::json!({"state": "up", "proxy": proxy, "restarts": 1})
    );
    let (ok, table) = outside.agentc(&["ps"]);
    assert!(ok && table.contains("up (restarted 1x)"), "{table}");
    // The proxy's log (its stderr) says it went on with its CA.
    let log = both_streams(&proxy);
    assert!(
        log.contains("goes on with the launch CA of its earlier start"),
        "{log}"
    );
    assert!(!log.contains(REAL_KEY), "{log}");

    // Stopped by hand: not started again.
    docker(&["kill", &proxy]).expect("kill the proxy");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        inspect(&proxy, "{{.State.Status}} {{.RestartCount}}"),
        "exited 1"
    );
    let (ok, output) = outside.agentc(&["rm", &sandbox]);
    assert!(ok, "{output}");
}

#[test]
fn a_dead_proxy_comes_back_with_its_ca_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    a_dead_proxy_comes_back_with_its_ca("cli");
}

#[test]
fn a_dead_proxy_comes_back_with_its_ca_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    a_dead_proxy_comes_back_with_its_ca("api");
}

/// `on_replay = "stop"`: the proxy stops on a replay and stays down, however often the engine
/// (its restart policy) or a user starts it again; `ps` says why.
fn a_replay_stop_stays_down(backend: &str) {
    let test = format!("a_replay_stop_stays_down_through_the_{backend}_backend");
    if !require_daemon(&test) {
        return;
    }
    let mut outside = match Outside::new(&format!("replay-stop-{backend}")) {
        Ok(outside) => outside,
        Err(reason) if std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() == Ok("1") => {
            panic!("{test}: {reason}")
        }
        Err(reason) => return eprintln!("skipping {test}: {reason}"),
    };
    let profile = outside.profile_with("stop", "on_replay = \"stop\"");
    let (ok, output) = outside.agentc(&["run", &profile, "--backend", backend]);
    assert!(ok, "{output}");
    let sandbox = started_name(&output);
    let proxy = format!("{sandbox}-egress-proxy");
    let replay = outside.probes(
        &sandbox,
        &[&format!(
            "get http://other.test/replay?k={{{KEY_VARIABLE}}}"
        )],
    );
    assert_eq!(replay[0], "403", "{replay:?}");
    // Each restart the policy allows refuses to serve: then it stays exited.
    wait_for_proxy(&proxy, "spent its restarts", |status, count| {
        status == "exited" && count == 5
    });
    assert_eq!(inspect(&proxy, "{{.State.ExitCode}}"), "3");
    let dead = outside.probes(&sandbox, &["https api.test /after-replay"]);
    assert!(dead[0].starts_with("ERROR"), "{dead:?}");
    assert_eq!(
        egress_cell(&outside, &sandbox)["state"],
        "down",
        "{sandbox}"
    );
    let (ok, table) = outside.agentc(&["ps", "--all"]);
    assert!(
        ok && table.contains("down (stopped on a replay)"),
        "{table}"
    );

    // Started again by hand: it refuses at once, with the same status.
    docker(&["start", &proxy]).expect("start the proxy");
    wait_for_proxy(&proxy, "exited again", |status, _| status == "exited");
    assert_eq!(inspect(&proxy, "{{.State.ExitCode}}"), "3");
    let log = both_streams(&proxy);
    assert!(log.contains("stays down, started again or not"), "{log}");
    assert!(!outside.seen().contains("/after-replay"));
    let (ok, output) = outside.agentc(&["rm", &sandbox]);
    assert!(ok, "{output}");
}

#[test]
fn a_replay_stop_stays_down_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    a_replay_stop_stays_down("cli");
}

#[test]
fn a_replay_stop_stays_down_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    a_replay_stop_stays_down("api");
}
