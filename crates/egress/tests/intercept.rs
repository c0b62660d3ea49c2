//! The proxy's credential injection in-process, on loopback only: HTTPS servers of the test's
//! own answer as `api.test`, `api2.test` and `other.test` with certificates from a test root the
//! proxy is told to trust (`--upstream-ca`), and record what they receive. The proxy holds a
//! credential for `api.test` (`x-api-key`) and one for `api2.test` (Bearer); `other.test` is
//! allowed but bound to nothing. Clients trust the launch CA the proxy wrote to its `ca_dir`.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentc_egress::credential::{placeholder_variable, CredentialConfig, BUNDLE_FILE, CA_FILE};
use agentc_egress::log::{Event, Kind, Record};
use agentc_egress::proxy::{Lookup, Resolve, Server, Sink};
use agentc_egress::Config;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

const REAL_ANTHROPIC: &str = "sk-ant-real-0123456789";
const PLACEHOLDER_ANTHROPIC: &str = "sk-ant-PLACEHOLDERabcdefghijklmnop0123";
const REAL_OPENAI: &str = "sk-real-openai-987";
const PLACEHOLDER_OPENAI: &str = "sk-PLACEHOLDERzyxwvutsrqponmlk9876";

type Seen = Arc<Mutex<Vec<(String, String, HashMap<String, String>, Vec<u8>)>>>;

/// The test root and one leaf per name, and the root as a PEM file.
struct TestPki {
    root_pem: PathBuf,
    root: CertificateDer<'static>,
    leaves: HashMap<String, (CertificateDer<'static>, Vec<u8>)>,
}

fn pki(dir: &std::path::Path) -> TestPki {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "agentc test root");
    let key = rcgen::KeyPair::generate().unwrap();
    let root = params.self_signed(&key).unwrap();
    let issuer = rcgen::Issuer::new(params, key);
    let root_pem = dir.join("test-root.pem");
    std::fs::write(&root_pem, root.pem()).unwrap();
    let mut leaves = HashMap::new();
    for name in ["api.test", "api2.test", "other.test"] {
        let params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = params.signed_by(&key, &issuer).unwrap();
        leaves.insert(name.to_string(), (leaf.der().clone(), key.serialize_der()));
    }
    TestPki {
        root_pem,
        root: root.der().clone(),
        leaves,
    }
}

/// An HTTPS server as `name` (HTTP/1.1 and HTTP/2): `/sse` sends five events 200 ms apart,
/// a request with `Upgrade` gets `101` and then an echo, anything else `200 ok`. Records every
/// request (method, authority or Host, headers, body).
async fn upstream(pki: &TestPki, name: &str) -> (SocketAddr, Seen) {
    let (cert, key) = pki.leaves[name].clone();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], PrivateKeyDer::Pkcs8(key.into()))
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
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
                let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                let service = hyper::service::service_fn(move |request| {
                    let record = record.clone();
                    async move { Ok::<_, Infallible>(answer(request, record).await) }
                });
                let io = TokioIo::new(tls);
                if h2 {
                    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(io, service)
                        .await;
                } else {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .with_upgrades()
                        .await;
                }
            });
        }
    });
    (address, seen)
}

type TestBody = http_body_util::combinators::BoxBody<Bytes, Infallible>;

async fn answer(mut request: Request<Incoming>, seen: Seen) -> Response<TestBody> {
    let authority = request
        .uri()
        .authority()
        .map(|a| a.to_string())
        .or_else(|| {
            request
                .headers()
                .get("host")
                .and_then(|h| h.to_str().ok())
                .map(str::to_string)
        })
        .unwrap_or_default();
    let headers: HashMap<String, String> = request
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let path = request.uri().path().to_string();
    let upgrade = request.headers().contains_key("upgrade");
    let on_upgrade = upgrade.then(|| hyper::upgrade::on(&mut request));
    // A body the proxy cut off is recorded as such.
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes().to_vec(),
        Err(_) => CUT_OFF.to_vec(),
    };
    seen.lock()
        .unwrap()
        .push((path.clone(), authority, headers.clone(), body));
    if path.starts_with("/reflect") || request_is_trace(&path) {
        return reflect::answer(&path, &headers, on_upgrade);
    }
    if let Some(on_upgrade) = on_upgrade {
        tokio::spawn(async move {
            if let Ok(upgraded) = on_upgrade.await {
                let mut io = TokioIo::new(upgraded);
                let mut buffer = [0u8; 1024];
                while let Ok(n) = io.read(&mut buffer).await {
                    if n == 0 || io.write_all(&buffer[..n]).await.is_err() {
                        break;
                    }
                }
            }
        });
        return Response::builder()
            .status(101)
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .body(Full::new(Bytes::new()).boxed())
            .unwrap();
    }
    if path == "/sse" {
        let events = futures_util::stream::unfold(0, |n| async move {
            if n == 5 {
                return None;
            }
            if n > 0 {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            let event = Bytes::from(format!("data: event {n}\n\n"));
            Some((Ok::<_, Infallible>(Frame::data(event)), n + 1))
        });
        return Response::builder()
            .header("content-type", "text/event-stream")
            .body(StreamBody::new(events).boxed())
            .unwrap();
    }
    if path == "/big" {
        let chunk = Bytes::from(vec![0x5au8; 64 * 1024]);
        let chunks = futures_util::stream::iter(
            (0..BIG_CHUNKS).map(move |_| Ok::<_, Infallible>(Frame::data(chunk.clone()))),
        );
        return Response::new(StreamBody::new(chunks).boxed());
    }
    Response::new(Full::new(Bytes::from_static(b"ok")).boxed())
}

/// What the test servers record of a body that ended before it was whole.
const CUT_OFF: &[u8] = b"<cut off>";

fn request_is_trace(path: &str) -> bool {
    path == "/trace"
}

/// A plain TCP server that records every byte it receives and answers nothing.
async fn plain_server() -> (SocketAddr, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let received: Arc<Mutex<Vec<u8>>> = Arc::default();
    let record = received.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let record = record.clone();
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                while let Ok(n) = stream.read(&mut buffer).await {
                    if n == 0 {
                        break;
                    }
                    record.lock().unwrap().extend_from_slice(&buffer[..n]);
                }
            });
        }
    });
    (address, received)
}

/// How many 64 KiB chunks `/big` sends.
const BIG_CHUNKS: usize = 4096;

#[derive(Debug)]
struct Names(HashMap<String, SocketAddr>);

impl Resolve for Names {
    fn lookup(&self, host: &str, _port: u16) -> Lookup {
        let found = self.0.get(host).copied();
        Box::pin(async move {
            found
                .map(|a| vec![a])
                .ok_or_else(|| std::io::Error::other("unknown"))
        })
    }
}

struct Setup {
    proxy: SocketAddr,
    lines: UnboundedReceiver<Record>,
    ca: CertificateDer<'static>,
    root: CertificateDer<'static>,
    bundle: PathBuf,
    api: Seen,
    api2: Seen,
    other: Seen,
    /// What `plain.test` (a plain TCP server) received, in order.
    plain: Arc<Mutex<Vec<u8>>>,
    stopped: tokio::task::JoinHandle<Result<(), agentc_egress::EgressError>>,
    /// `api.test`'s own address (the benchmark's direct path).
    api_address: SocketAddr,
    _dir: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn setup(on_replay: Option<&str>) -> Setup {
    setup_on(on_replay, None).await
}

/// [`setup`] with the proxy bound and run on `proxy_runtime` when given (the benchmark's
/// proxy on a core of its own), on the current runtime otherwise.
async fn setup_on(on_replay: Option<&str>, proxy_runtime: Option<tokio::runtime::Handle>) -> Setup {
    let dir = std::env::temp_dir().join(format!(
        "agentc-intercept-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(dir.join("ca")).unwrap();
    let pki = pki(&dir);
    let (api_address, api) = upstream(&pki, "api.test").await;
    let (api2_address, api2) = upstream(&pki, "api2.test").await;
    let (other_address, other) = upstream(&pki, "other.test").await;
    let (plain_address, plain) = plain_server().await;
    let credentials = CredentialConfig::from_args(
        &[
            "name=anthropic,header=x-api-key,env=ANTHROPIC_API_KEY,host=api.test",
            "name=openai,header=authorization,scheme=bearer,env=OPENAI_API_KEY,host=api2.test",
        ],
        Some(dir.join("ca").to_str().unwrap()),
        &[pki.root_pem.display().to_string()],
        on_replay,
    )
    .unwrap();
    let config = Config::from_args(
        "127.0.0.1:0",
        None,
        &[
            "api.test",
            "api2.test",
            "other.test",
            "plain.test",
            "plain.test:8080",
        ],
        &["127.0.0.0/8"],
    )
    .unwrap()
    .with_credentials(credentials)
    .unwrap();
    let env = BTreeMap::from([
        ("ANTHROPIC_API_KEY".to_string(), REAL_ANTHROPIC.to_string()),
        (
            placeholder_variable("ANTHROPIC_API_KEY"),
            PLACEHOLDER_ANTHROPIC.to_string(),
        ),
        ("OPENAI_API_KEY".to_string(), REAL_OPENAI.to_string()),
        (
            placeholder_variable("OPENAI_API_KEY"),
            PLACEHOLDER_OPENAI.to_string(),
        ),
    ]);
    let (sender, lines) = unbounded_channel();
    let names = Names(HashMap::from([
        ("api.test".to_string(), api_address),
        ("api2.test".to_string(), api2_address),
        ("other.test".to_string(), other_address),
        ("plain.test".to_string(), plain_address),
    ]));
    let bind = async move {
        Server::bind_with_env(&config, Sink::Channel(sender), &env)
            .await
            .unwrap()
            .with_resolver(Arc::new(names))
    };
    let (proxy, stopped) = match proxy_runtime {
        None => {
            let server = bind.await;
            (
                server.local_addr(),
                tokio::spawn(server.run(std::future::pending())),
            )
        }
        Some(runtime) => {
            let (bound, address) = tokio::sync::oneshot::channel();
            let stopped = runtime.spawn(async move {
                let server = bind.await;
                let _ = bound.send(server.local_addr());
                server.run(std::future::pending()).await
            });
            (address.await.unwrap(), stopped)
        }
    };
    let ca = CertificateDer::from_pem_file(dir.join("ca").join(CA_FILE)).unwrap();
    Setup {
        proxy,
        lines,
        ca,
        root: pki.root.clone(),
        bundle: dir.join("ca").join(BUNDLE_FILE),
        api,
        api2,
        other,
        plain,
        stopped,
        api_address,
        _dir: TempDir(dir),
    }
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(Instant::now().elapsed().as_nanos() as u64);
    hasher.finish()
}

impl Setup {
    async fn next_line(&mut self) -> Record {
        tokio::time::timeout(Duration::from_secs(10), self.lines.recv())
            .await
            .expect("a line in time")
            .expect("open")
    }

    /// The next decision line (close lines skipped).
    async fn next_decision(&mut self) -> Record {
        loop {
            let line = self.next_line().await;
            if line.event == Event::Decision {
                return line;
            }
        }
    }

    /// A CONNECT to `authority`, the TLS handshake with `sni` trusting `trusted`, offering
    /// `alpn`; the TLS stream and the server's certificate.
    async fn tls(
        &self,
        authority: &str,
        sni: &str,
        trusted: &CertificateDer<'static>,
        alpn: &[&[u8]],
    ) -> Result<
        (
            tokio_rustls::client::TlsStream<TcpStream>,
            CertificateDer<'static>,
        ),
        String,
    > {
        let mut stream = TcpStream::connect(self.proxy).await.unwrap();
        let connect = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n");
        stream.write_all(connect.as_bytes()).await.unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
        assert!(head.starts_with(b"HTTP/1.1 200"));
        let mut roots = rustls::RootCertStore::empty();
        roots.add(trusted.clone()).unwrap();
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let name = ServerName::try_from(sni.to_string()).unwrap();
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, stream)
            .await
            .map_err(|error| error.to_string())?;
        let certificate = tls.get_ref().1.peer_certificates().unwrap()[0].clone();
        Ok((tls, certificate))
    }
}

/// Sends one HTTP/1.1 request on a TLS stream and reads the response head and body.
async fn http1(
    tls: tokio_rustls::client::TlsStream<TcpStream>,
    request: Request<Full<Bytes>>,
) -> Response<Incoming> {
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(connection.with_upgrades());
    sender.send_request(request).await.unwrap()
}

fn get(path: &str, host: &str) -> hyper::http::request::Builder {
    Request::builder().uri(path).header("host", host)
}

#[tokio::test]
async fn the_upstream_gets_the_real_key_and_the_workload_only_ever_sent_its_placeholder() {
    let mut setup = setup(None).await;
    let (tls, certificate) = setup
        .tls(
            "api.test:443",
            "api.test",
            &setup.ca.clone(),
            &[b"http/1.1"],
        )
        .await
        .unwrap();
    // The client saw the launch CA's leaf, not the upstream's.
    assert_ne!(
        certificate.as_ref(),
        setup.ca.as_ref(),
        "a leaf, not the CA itself"
    );
    let request = get("/v1/messages", "api.test")
        .header("x-api-key", PLACEHOLDER_ANTHROPIC)
        .header("authorization", format!("Bearer {PLACEHOLDER_ANTHROPIC}"))
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    let response = http1(tls, request).await;
    assert_eq!(response.status(), 200);
    let connect = setup.next_decision().await;
    assert_eq!(
        (connect.kind, connect.credential.as_deref()),
        (Kind::Connect, Some("anthropic"))
    );
    let line = setup.next_decision().await;
    assert_eq!(
        (line.kind, line.decision, line.credential.as_deref()),
        (Kind::Request, "allow", Some("anthropic"))
    );
    let seen = setup.api.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let headers = &seen[0].2;
    assert_eq!(
        headers.get("x-api-key").map(String::as_str),
        Some(REAL_ANTHROPIC)
    );
    assert!(!headers.contains_key("authorization"), "{headers:?}");
    assert!(!format!("{headers:?}").contains("PLACEHOLDER"));
    // Nothing of the key reached a log line.
    let text = format!("{connect:?}{line:?}");
    assert!(!text.contains(REAL_ANTHROPIC) && !text.contains(PLACEHOLDER_ANTHROPIC));
}

#[tokio::test]
async fn a_host_other_than_the_sni_is_misdirected_and_reaches_nothing() {
    let mut setup = setup(None).await;
    let (tls, _) = setup
        .tls(
            "api.test:443",
            "api.test",
            &setup.ca.clone(),
            &[b"http/1.1"],
        )
        .await
        .unwrap();
    let request = get("/", "other.test")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = http1(tls, request).await;
    assert_eq!(response.status(), 421);
    setup.next_decision().await;
    let line = setup.next_decision().await;
    assert_eq!((line.kind, line.reason), (Kind::Request, "misdirected"));
    // The upstream is connected only for an allowed request: none was, so none was made.
    drop(response);
    let close = loop {
        let line = setup.next_line().await;
        if line.event == Event::Close && line.kind == Kind::Connect {
            break line;
        }
    };
    assert_eq!((close.address, close.bytes_up), (None, Some(0)));
    assert!(setup.api.lock().unwrap().is_empty());
    assert!(setup.other.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_placeholder_sent_anywhere_else_is_refused_with_one_replay_line() {
    let mut setup = setup(None).await;
    let basic = agentc_egress::credential::base64_encode(
        format!("user:{PLACEHOLDER_ANTHROPIC}").as_bytes(),
    );
    let encoded: String = PLACEHOLDER_ANTHROPIC
        .bytes()
        .map(|b| format!("%{b:02x}"))
        .collect();
    let requests = [
        format!("GET http://other.test/?k={PLACEHOLDER_ANTHROPIC} HTTP/1.1\r\nHost: other.test\r\n\r\n"),
        format!("GET http://other.test/?k={encoded} HTTP/1.1\r\nHost: other.test\r\n\r\n"),
        format!("GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\nAuthorization: Basic {basic}\r\n\r\n"),
        format!(
            "POST http://other.test/ HTTP/1.1\r\nHost: other.test\r\nContent-Length: {}\r\n\r\n{{\"k\":\"{PLACEHOLDER_ANTHROPIC}\"}}",
            PLACEHOLDER_ANTHROPIC.len() + 8
        ),
        format!("CONNECT {PLACEHOLDER_ANTHROPIC}.other.test:443 HTTP/1.1\r\nHost: x\r\n\r\n"),
    ];
    for request in &requests {
        let mut stream = TcpStream::connect(setup.proxy).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = Vec::new();
        let _ =
            tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut response)).await;
        let response = String::from_utf8_lossy(&response);
        assert!(
            response.starts_with("HTTP/1.1 403"),
            "{request}: {response}"
        );
        assert!(response.contains("credential-replay"), "{response}");
        let line = setup.next_decision().await;
        assert_eq!(
            (line.kind, line.reason, line.credential.as_deref()),
            (
                Kind::CredentialReplay,
                "credential-replay",
                Some("anthropic")
            ),
            "{request}"
        );
        assert!(
            !line.to_line().contains(PLACEHOLDER_ANTHROPIC),
            "{}",
            line.to_line()
        );
    }
    // A terminated request to another bound host, carrying this placeholder in its body.
    let (tls, _) = setup
        .tls(
            "api2.test:443",
            "api2.test",
            &setup.ca.clone(),
            &[b"http/1.1"],
        )
        .await
        .unwrap();
    let request = get("/v1/chat", "api2.test")
        .method("POST")
        .body(Full::new(Bytes::from(format!(
            "{{\"leak\":\"{PLACEHOLDER_ANTHROPIC}\"}}"
        ))))
        .unwrap();
    assert_eq!(http1(tls, request).await.status(), 403);
    setup.next_decision().await;
    let line = setup.next_decision().await;
    assert_eq!(line.kind, Kind::CredentialReplay);
    assert!(
        setup.other.lock().unwrap().is_empty(),
        "other.test saw a request"
    );
    assert!(
        setup.api2.lock().unwrap().is_empty(),
        "api2.test saw a request"
    );
}

#[tokio::test]
async fn server_sent_events_arrive_as_they_are_sent() {
    let setup = setup(None).await;
    let (tls, _) = setup
        .tls(
            "api.test:443",
            "api.test",
            &setup.ca.clone(),
            &[b"http/1.1"],
        )
        .await
        .unwrap();
    let sent = Instant::now();
    let response = http1(
        tls,
        get("/sse", "api.test")
            .body(Full::new(Bytes::new()))
            .unwrap(),
    )
    .await;
    let mut body = response.into_body();
    let mut arrivals = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            let text = String::from_utf8_lossy(&data).to_string();
            for _ in text.matches("data: event").collect::<Vec<_>>() {
                arrivals.push(sent.elapsed());
            }
        }
    }
    assert_eq!(arrivals.len(), 5, "{arrivals:?}");
    // Each event came on its own, about 200 ms after the one before (not all at the end).
    for pair in arrivals.windows(2) {
        assert!(
            pair[1] - pair[0] >= Duration::from_millis(100),
            "{arrivals:?}"
        );
    }
    assert!(
        arrivals[0] < arrivals[4] - Duration::from_millis(500),
        "{arrivals:?}"
    );
}

#[tokio::test]
async fn http2_is_spoken_when_both_sides_offer_it() {
    let setup = setup(None).await;
    let (tls, _) = setup
        .tls(
            "api2.test:443",
            "api2.test",
            &setup.ca.clone(),
            &[b"h2", b"http/1.1"],
        )
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(connection);
    let request = Request::builder()
        .uri("https://api2.test/v1/models")
        .header("authorization", format!("Bearer {PLACEHOLDER_OPENAI}"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.version(), hyper::Version::HTTP_2);
    let seen = setup.api2.lock().unwrap().clone();
    assert_eq!(
        seen[0].2.get("authorization").map(String::as_str),
        Some(format!("Bearer {REAL_OPENAI}").as_str())
    );
    assert_eq!(seen[0].1, "api2.test");
}

#[tokio::test]
async fn a_websocket_upgrade_passes_after_its_101() {
    let setup = setup(None).await;
    let (tls, _) = setup
        .tls(
            "api.test:443",
            "api.test",
            &setup.ca.clone(),
            &[b"http/1.1"],
        )
        .await
        .unwrap();
    let request = get("/ws", "api.test")
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .header("sec-websocket-version", "13")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let mut response = http1(tls, request).await;
    assert_eq!(response.status(), 101);
    let upgraded = hyper::upgrade::on(&mut response).await.unwrap();
    let mut io = TokioIo::new(upgraded);
    // A masked text frame, which the server echoes as it got it; the proxy passes the
    // server's frames on unmasked (as a server's must be), payload unchanged.
    let mask = [1u8, 2, 3, 4];
    let mut frame = vec![0x81, 0x80 | 10];
    frame.extend_from_slice(&mask);
    frame.extend(
        b"ping frame"
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4]),
    );
    io.write_all(&frame).await.unwrap();
    let mut echoed = [0u8; 12];
    tokio::time::timeout(Duration::from_secs(5), io.read_exact(&mut echoed))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&echoed, b"\x81\x0aping frame");
    let seen = setup.api.lock().unwrap().clone();
    assert_eq!(
        seen[0].2.get("x-api-key").map(String::as_str),
        Some(REAL_ANTHROPIC)
    );
}

#[tokio::test]
async fn a_host_without_a_credential_shows_its_own_certificate() {
    let mut setup = setup(None).await;
    // other.test is spliced: the client verifies the upstream's own chain (the test root),
    // and a client trusting only the launch CA fails.
    let (tls, _) = setup
        .tls(
            "other.test:443",
            "other.test",
            &setup.root.clone(),
            &[b"http/1.1"],
        )
        .await
        .unwrap();
    let response = http1(
        tls,
        get("/", "other.test")
            .body(Full::new(Bytes::new()))
            .unwrap(),
    )
    .await;
    assert_eq!(response.status(), 200);
    let connect = setup.next_decision().await;
    assert_eq!((connect.kind, connect.credential), (Kind::Connect, None));
    assert!(setup
        .tls(
            "other.test:443",
            "other.test",
            &setup.ca.clone(),
            &[b"http/1.1"]
        )
        .await
        .is_err());
    // The bundle the workload reads trusts both: Mozilla's roots, the upstream CA and the CA.
    let bundle: Vec<_> = CertificateDer::pem_file_iter(&setup.bundle)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(bundle.contains(&setup.ca) && bundle.contains(&setup.root));
    assert!(bundle.len() > 100);
}

/// One request to the proxy itself on a fresh connection; the whole response.
async fn ask_proxy(proxy: SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut response)).await;
    String::from_utf8(response).unwrap()
}

#[tokio::test]
async fn the_proxy_serves_the_files_it_wrote_for_a_pod_that_cannot_mount_them() {
    let setup = setup(None).await;
    for (file, written) in [
        (CA_FILE, setup.bundle.with_file_name(CA_FILE)),
        (BUNDLE_FILE, setup.bundle.clone()),
    ] {
        let response = ask_proxy(
            setup.proxy,
            &format!(
                "GET /agentc/egress-ca/{file} HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n"
            ),
        )
        .await;
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        let body = response.split_once("\r\n\r\n").unwrap().1;
        assert_eq!(body, std::fs::read_to_string(written).unwrap());
    }
    let response = ask_proxy(
        setup.proxy,
        "GET /agentc/egress-ca/key.pem HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 400"), "{response}");
}

#[tokio::test]
async fn a_proxy_without_credentials_serves_no_ca() {
    let config = Config::from_args("127.0.0.1:0", None, &["api.test"], &[] as &[&str]).unwrap();
    let (sender, mut lines) = unbounded_channel();
    let server = Server::bind_with_env(&config, Sink::Channel(sender), &BTreeMap::new())
        .await
        .unwrap();
    let proxy = server.local_addr();
    let task = tokio::spawn(server.run(std::future::pending()));
    let response = ask_proxy(
        proxy,
        "GET /agentc/egress-ca/ca.pem HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 400"), "{response}");
    let line = lines.recv().await.unwrap();
    assert!(line.detail.unwrap().contains("holds no credentials"));
    task.abort();
}

#[tokio::test]
async fn every_proxy_start_makes_a_new_ca_and_stop_ends_the_proxy_on_a_replay() {
    let first = setup(None).await;
    let mut second = setup(Some("stop")).await;
    assert_ne!(first.ca, second.ca);
    let request = format!(
        "GET http://other.test/?k={PLACEHOLDER_OPENAI} HTTP/1.1\r\nHost: other.test\r\n\r\n"
    );
    let mut stream = TcpStream::connect(second.proxy).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut response)).await;
    assert!(response.starts_with(b"HTTP/1.1 403"));
    assert_eq!(second.next_decision().await.kind, Kind::CredentialReplay);
    let stopped = tokio::time::timeout(Duration::from_secs(5), &mut second.stopped)
        .await
        .expect("the proxy stopped")
        .unwrap();
    assert!(matches!(
        stopped,
        Err(agentc_egress::EgressError::Replayed(_))
    ));
    assert!(TcpStream::connect(second.proxy).await.is_err());
}

#[tokio::test]
async fn long_bodies_stream_and_a_late_placeholder_is_never_sent() {
    let mut setup = setup(None).await;
    let post = |body: Vec<u8>| {
        get("/v1/chat", "api2.test")
            .method("POST")
            .body(Full::new(Bytes::from(body)))
            .unwrap()
    };
    // 40 MiB, past the old 32 MiB whole-body bound: it streams through and arrives whole.
    let clean = vec![b'a'; 40 << 20];
    let (tls, _) = setup
        .tls(
            "api2.test:443",
            "api2.test",
            &setup.ca.clone(),
            &[b"http/1.1"],
        )
        .await
        .unwrap();
    assert_eq!(http1(tls, post(clean.clone())).await.status(), 200);
    assert_eq!(
        setup.api2.lock().unwrap().last().unwrap().3.len(),
        clean.len()
    );
    // A placeholder after the pre-read, cut by the client's writes anywhere: never sent.
    let mut late = vec![b'b'; agentc_egress::proxy::PREREAD * 3];
    late.extend_from_slice(PLACEHOLDER_ANTHROPIC.as_bytes());
    late.extend(vec![b'c'; 1 << 20]);
    let (tls, _) = setup
        .tls(
            "api2.test:443",
            "api2.test",
            &setup.ca.clone(),
            &[b"http/1.1"],
        )
        .await
        .unwrap();
    let response = http1(tls, post(late)).await;
    assert_eq!(response.status(), 403);
    let replay = loop {
        let line = setup.next_line().await;
        if line.kind == Kind::CredentialReplay {
            break line;
        }
    };
    assert_eq!(
        (replay.event, replay.credential.as_deref()),
        (Event::Close, Some("anthropic"))
    );
    assert!(replay.detail.unwrap().contains("the request body"));
    // The host got no whole second request: it saw it cut off, or not at all.
    let seen = setup.api2.lock().unwrap().clone();
    let lengths: Vec<usize> = seen.iter().map(|s| s.3.len()).collect();
    assert!(
        seen.len() == 1 || (seen.len() == 2 && seen[1].3 == CUT_OFF),
        "{lengths:?}"
    );
}

/// A CONNECT to `plain.test:PORT` with its `200` read.
async fn plain_tunnel(setup: &Setup, port: u16) -> TcpStream {
    let mut stream = TcpStream::connect(setup.proxy).await.unwrap();
    let connect = format!("CONNECT plain.test:{port} HTTP/1.1\r\nHost: plain.test:{port}\r\n\r\n");
    stream.write_all(connect.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        stream.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200"));
    stream
}

#[tokio::test]
async fn a_plain_http_tunnel_is_searched_in_every_write() {
    let mut setup = setup(None).await;
    let mut tunnel = plain_tunnel(&setup, 80).await;
    tunnel
        .write_all(b"GET / HTTP/1.1\r\nHost: plain.test\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A second request, its placeholder cut between two writes.
    let (head, tail) = PLACEHOLDER_ANTHROPIC.split_at(9);
    tunnel
        .write_all(
            format!("POST /x HTTP/1.1\r\nHost: plain.test\r\n\r\n{{\"k\":\"{head}").as_bytes(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _ = tunnel.write_all(format!("{tail}\"}}").as_bytes()).await;
    let replay = loop {
        let line = setup.next_line().await;
        if line.kind == Kind::CredentialReplay {
            break line;
        }
    };
    assert_eq!(
        (replay.event, replay.credential.as_deref()),
        (Event::Close, Some("anthropic"))
    );
    assert!(replay
        .detail
        .unwrap()
        .contains("a later write of a plain-HTTP tunnel"));
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tunnel.read_to_end(&mut rest)).await;
    let received = String::from_utf8_lossy(&setup.plain.lock().unwrap()).to_string();
    assert!(received.starts_with("GET / HTTP/1.1"), "{received}");
    assert!(
        !received.contains(head) && !received.contains(tail),
        "{received}"
    );
}

#[tokio::test]
async fn a_method_in_lower_case_gets_the_host_check_even_cut_after_its_first_word() {
    let mut setup = setup(None).await;
    // plain.test:8080 allows raw bytes: `get` cut from its line is still read as HTTP.
    let mut tunnel = plain_tunnel(&setup, 8080).await;
    tunnel.write_all(b"get ").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    tunnel
        .write_all(b"/ HTTP/1.1\r\nHost: elsewhere.test\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tunnel.read_to_end(&mut answer)).await;
    assert!(
        answer.starts_with(b"HTTP/1.1 403"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    let line = setup.next_decision().await;
    assert_eq!(
        (line.reason, line.protocol),
        ("host-mismatch", Some("http"))
    );
    // A raw protocol's lower-case word stays raw.
    let mut tunnel = plain_tunnel(&setup, 8080).await;
    tunnel.write_all(b"set k v\r\n").await.unwrap();
    let line = setup.next_decision().await;
    assert_eq!((line.reason, line.protocol), ("allowed", Some("raw")));
    drop(tunnel);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !String::from_utf8_lossy(&setup.plain.lock().unwrap()).contains("set k v") {
        assert!(Instant::now() < deadline, "the raw bytes did not arrive");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!String::from_utf8_lossy(&setup.plain.lock().unwrap()).contains("elsewhere"));
}

/// A bound host that reflects the key back in every form (issue 36).
#[path = "intercept/reflect.rs"]
mod reflect;

/// The benchmark (BENCHMARKS.md, issue 21).
#[path = "intercept/bench.rs"]
mod bench;
