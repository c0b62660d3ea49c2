//! A terminated tunnel behind an upstream proxy (issue 36), in-process, on loopback only: the
//! proxy holds a key for `gw.corp.test:8443` (a provider's gateway at its own port), and every
//! connection goes through an upstream proxy of the test's own, which records each CONNECT it
//! gets (line and headers) and then connects the name it was given to the test's HTTPS
//! gateway, which records the headers of each request. The proxy resolves no name itself (its
//! resolver answers nothing): the upstream does, as a corporate proxy would.
//!
//! What holds: the sandbox's TLS is terminated with the launch CA's leaf, the key is set, and
//! the gateway's TLS is opened through the upstream's `CONNECT gw.corp.test:8443` with its
//! `Proxy-Authorization`; the gateway's certificate is verified as without an upstream (the
//! test root through `--upstream-ca`), so an untrusted gateway gets nothing.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentc_egress::credential::{placeholder_variable, CredentialConfig, CA_FILE};
use agentc_egress::log::{Event, Kind, Record};
use agentc_egress::proxy::{Lookup, Resolve, Server, Sink};
use agentc_egress::Config;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

const REAL_KEY: &str = "sk-ant-real-gateway-0123456789";
const PLACEHOLDER: &str = "sk-ant-PLACEHOLDERgatewayabcdefghij0123";
const UPSTREAM_AUTH_ENV: &str = "AGENTC_TEST_UPSTREAM_AUTH";
const UPSTREAM_USERINFO: &str = "build:s3cret";
/// The gateway as the profile names it.
const GATEWAY: &str = "gw.corp.test";
const GATEWAY_PORT: u16 = 8443;

/// What the gateway received: each request's path and headers.
type Seen = Arc<Mutex<Vec<(String, HashMap<String, String>)>>>;
/// What the upstream received: each CONNECT's head.
type Connects = Arc<Mutex<Vec<String>>>;

/// A root, and a leaf for the gateway's name signed by it.
struct Pki {
    root_pem: PathBuf,
    leaf: (CertificateDer<'static>, Vec<u8>),
}

fn pki(dir: &std::path::Path, file: &str) -> Pki {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "agentc gateway test root");
    let key = rcgen::KeyPair::generate().unwrap();
    let root = params.self_signed(&key).unwrap();
    let issuer = rcgen::Issuer::new(params, key);
    let root_pem = dir.join(file);
    std::fs::write(&root_pem, root.pem()).unwrap();
    let params = rcgen::CertificateParams::new(vec![GATEWAY.to_string()]).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = params.signed_by(&key, &issuer).unwrap();
    Pki {
        root_pem,
        leaf: (leaf.der().clone(), key.serialize_der()),
    }
}

/// The gateway: HTTPS (HTTP/1.1) as `gw.corp.test`, answering `200 ok` and recording each
/// request's path and headers.
async fn gateway(pki: &Pki) -> (SocketAddr, Seen) {
    let (cert, key) = pki.leaf.clone();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], PrivateKeyDer::Pkcs8(key.into()))
    .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let record = record.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let record = record.clone();
                    async move {
                        let headers = request
                            .headers()
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                            .collect();
                        record
                            .lock()
                            .unwrap()
                            .push((request.uri().path().to_string(), headers));
                        let _ = request.into_body().collect().await;
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (address, seen)
}

/// The upstream proxy: reads a CONNECT head, records it, connects the authority it names
/// through `names` (its own resolution), answers `200` and splices; anything else `400`.
async fn upstream(names: HashMap<String, SocketAddr>) -> (SocketAddr, Connects) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let connects: Connects = Arc::default();
    let record = connects.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let record = record.clone();
            let names = names.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                while !head.ends_with(b"\r\n\r\n") {
                    let mut byte = [0u8; 1];
                    if client.read_exact(&mut byte).await.is_err() {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                record.lock().unwrap().push(head.clone());
                let target = head
                    .strip_prefix("CONNECT ")
                    .and_then(|rest| rest.split(' ').next())
                    .and_then(|authority| names.get(authority).copied());
                let Some(target) = target else {
                    let _ = client.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
                    return;
                };
                let Ok(mut server) = TcpStream::connect(target).await else {
                    let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
                    return;
                };
                let _ = client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await;
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            });
        }
    });
    (address, connects)
}

/// A resolver that knows no name: the proxy must leave resolution to the upstream.
#[derive(Debug)]
struct NoNames;

impl Resolve for NoNames {
    fn lookup(&self, host: &str, _port: u16) -> Lookup {
        let host = host.to_string();
        Box::pin(async move { Err(std::io::Error::other(format!("{host} was looked up"))) })
    }
}

struct Setup {
    proxy: SocketAddr,
    lines: UnboundedReceiver<Record>,
    ca: CertificateDer<'static>,
    seen: Seen,
    connects: Connects,
    /// The upstream's address: the only one the proxy connects to.
    upstream: SocketAddr,
    dir: PathBuf,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The proxy, the upstream and a gateway whose certificate is signed by the root the proxy
/// trusts (`trusted`), or by another.
async fn setup(name: &str, trusted: bool) -> Setup {
    let dir = std::env::temp_dir().join(format!(
        "agentc-intercept-upstream-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("ca")).unwrap();
    let served = pki(&dir, "gateway-root.pem");
    let told = if trusted {
        served.root_pem.clone()
    } else {
        pki(&dir, "another-root.pem").root_pem
    };
    let (gateway_address, seen) = gateway(&served).await;
    let authority = format!("{GATEWAY}:{GATEWAY_PORT}");
    let (upstream_address, connects) =
        upstream(HashMap::from([(authority.clone(), gateway_address)])).await;
    let none: [&str; 0] = [];
    let credentials = CredentialConfig::from_args(
        &[&format!(
            "name=anthropic,header=x-api-key,env=ANTHROPIC_API_KEY,host={authority}"
        )],
        Some(dir.join("ca").to_str().unwrap()),
        &[told.display().to_string()],
        None,
    )
    .unwrap();
    // As the policy writes it: the endpoint allowed at its port, the upstream, then the key.
    let config = Config::from_args("127.0.0.1:0", None, &[authority.as_str()], &none)
        .unwrap()
        .with_upstream(&upstream_address.to_string(), false, &none)
        .unwrap()
        .with_upstream_auth(Some(UPSTREAM_AUTH_ENV), None)
        .unwrap()
        .with_credentials(credentials)
        .unwrap();
    let env = BTreeMap::from([
        ("ANTHROPIC_API_KEY".to_string(), REAL_KEY.to_string()),
        (
            placeholder_variable("ANTHROPIC_API_KEY"),
            PLACEHOLDER.to_string(),
        ),
        (UPSTREAM_AUTH_ENV.to_string(), UPSTREAM_USERINFO.to_string()),
    ]);
    let (sender, lines) = unbounded_channel();
    let server = Server::bind_with_env(&config, Sink::Channel(sender), &env)
        .await
        .unwrap()
        .with_resolver(Arc::new(NoNames));
    let proxy = server.local_addr();
    tokio::spawn(server.run(std::future::pending()));
    let ca = CertificateDer::from_pem_file(dir.join("ca").join(CA_FILE)).unwrap();
    Setup {
        proxy,
        lines,
        ca,
        seen,
        connects,
        upstream: upstream_address,
        dir,
    }
}

impl Setup {
    async fn next_line(&mut self) -> Record {
        tokio::time::timeout(Duration::from_secs(10), self.lines.recv())
            .await
            .expect("a line in time")
            .expect("open")
    }

    /// The next line of `event` and `kind`.
    async fn next(&mut self, event: Event, kind: Kind) -> Record {
        loop {
            let line = self.next_line().await;
            if line.event == event && line.kind == kind {
                return line;
            }
        }
    }

    /// What the sandbox does: `CONNECT gw.corp.test:8443` to the proxy, TLS trusting the
    /// launch CA alone, one request with the placeholder; the response's status and every
    /// byte the sandbox received after the CONNECT's answer.
    async fn request(&self, path: &str) -> Result<(u16, Vec<u8>), String> {
        let mut stream = TcpStream::connect(self.proxy).await.unwrap();
        let authority = format!("{GATEWAY}:{GATEWAY_PORT}");
        let connect = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n");
        stream.write_all(connect.as_bytes()).await.unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
        assert!(head.starts_with(b"HTTP/1.1 200"), "{head:?}");
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.clone()).unwrap();
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from(GATEWAY).unwrap(), stream)
            .await
            .map_err(|error| error.to_string())?;
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nx-api-key: {PLACEHOLDER}\r\n\
             content-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}"
        );
        tls.write_all(request.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut received = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut received))
            .await
            .map_err(|_| "no end of the response in time".to_string())?;
        let status = String::from_utf8_lossy(&received)
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or(0);
        Ok((status, received))
    }
}

#[tokio::test]
async fn behind_an_upstream_the_gateway_gets_the_real_key_through_its_connect() {
    let mut setup = setup("bound", true).await;
    let (status, received) = setup.request("/v1/messages").await.unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&received));
    // The gateway received the real key (and no placeholder)...
    let seen = setup.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let (path, headers) = &seen[0];
    assert_eq!(path, "/v1/messages");
    assert_eq!(headers.get("x-api-key").map(String::as_str), Some(REAL_KEY));
    assert!(!format!("{headers:?}").contains(PLACEHOLDER), "{headers:?}");
    // ...through the upstream's one CONNECT, which carried the upstream's credentials and
    // nothing of the key (the request went inside the TLS the proxy opened through it).
    let connects = setup.connects.lock().unwrap().clone();
    assert_eq!(connects.len(), 1, "{connects:?}");
    let authorization = format!(
        "Proxy-Authorization: Basic {}\r\n",
        agentc_egress::credential::base64_encode(UPSTREAM_USERINFO.as_bytes())
    );
    assert!(
        connects[0].starts_with(&format!("CONNECT {GATEWAY}:{GATEWAY_PORT} HTTP/1.1\r\n")),
        "{connects:?}"
    );
    assert!(connects[0].contains(&authorization), "{connects:?}");
    assert!(
        !connects[0].contains(REAL_KEY) && !connects[0].contains(PLACEHOLDER),
        "{connects:?}"
    );
    // The sandbox never sees the key.
    let text = String::from_utf8_lossy(&received);
    assert!(!text.contains(REAL_KEY), "{text}");
    // The lines: the CONNECT and the request carry the credential's name, never a value; the
    // close names the upstream's address, since that is what the proxy connected to.
    let connect = setup.next(Event::Decision, Kind::Connect).await;
    assert_eq!(
        (connect.decision, connect.credential.as_deref()),
        ("allow", Some("anthropic"))
    );
    let request = setup.next(Event::Decision, Kind::Request).await;
    assert_eq!(
        (request.decision, request.credential.as_deref()),
        ("allow", Some("anthropic"))
    );
    let close = setup.next(Event::Close, Kind::Connect).await;
    assert_eq!(close.address, Some(setup.upstream), "{close:?}");
    for line in [&connect, &request, &close] {
        let text = format!("{line:?}");
        assert!(
            !text.contains(REAL_KEY) && !text.contains(PLACEHOLDER) && !text.contains("s3cret"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn behind_an_upstream_a_gateway_whose_certificate_does_not_verify_gets_nothing() {
    let mut setup = setup("untrusted", false).await;
    let (status, received) = setup.request("/v1/messages").await.unwrap();
    // The sandbox's TLS was terminated, then the request refused: the proxy says why, and
    // nothing of the key comes back.
    let text = String::from_utf8_lossy(&received).to_ascii_lowercase();
    assert_eq!(status, 502, "{text}");
    assert!(
        text.contains("x-agentc-egress-deny: upstream-certificate"),
        "{text}"
    );
    assert!(!text.contains(&REAL_KEY.to_ascii_lowercase()), "{text}");
    // The upstream was asked for the tunnel, but the gateway's certificate did not verify
    // against the roots the proxy trusts: nothing was sent inside it.
    assert_eq!(setup.connects.lock().unwrap().len(), 1);
    assert!(setup.seen.lock().unwrap().is_empty());
    let close = setup.next(Event::Close, Kind::Connect).await;
    assert!(!format!("{close:?}").contains(REAL_KEY), "{close:?}");
}
