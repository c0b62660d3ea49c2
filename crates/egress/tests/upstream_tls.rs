//! An `https://` upstream proxy, in-process on loopback: agentc's proxy speaks TLS to the
//! upstream (verified against Mozilla's roots and `--upstream-ca`), then sends its CONNECT or
//! absolute-form request inside that session; an upstream whose certificate is not trusted
//! gets nothing (502 or a TLS alert to the client, an `upstream-certificate` close line). And
//! two upstreams: tunnels through one, plain-HTTP requests through the other.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentc_egress::credential::CredentialConfig;
use agentc_egress::log::Record;
use agentc_egress::proxy::{Server, Sink};
use agentc_egress::sni;
use agentc_egress::Config;
use rustls::pki_types::PrivateKeyDer;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// A CA of the test's own (its PEM written to a file in `dir`), and a leaf for 127.0.0.1
/// signed by it: the certificate and its PKCS#8 key.
fn pki(dir: &std::path::Path) -> (PathBuf, rustls::pki_types::CertificateDer<'static>, Vec<u8>) {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "agentc upstream test root");
    let key = rcgen::KeyPair::generate().unwrap();
    let root = params.self_signed(&key).unwrap();
    let issuer = rcgen::Issuer::new(params, key);
    let root_pem = dir.join("upstream-root.pem");
    std::fs::write(&root_pem, root.pem()).unwrap();
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = params.signed_by(&key, &issuer).unwrap();
    (root_pem, leaf.der().clone(), key.serialize_der())
}

/// One connection of the test's upstream proxy: its request head is reported on `seen`; a
/// CONNECT gets 200 and then an echo, an absolute-form request the request line it saw.
async fn serve_one<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    seen: UnboundedSender<String>,
) {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let line = head.lines().next().unwrap_or_default().to_string();
    let _ = seen.send(head.clone());
    if line.starts_with("CONNECT ") {
        let _ = stream
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await;
        let mut buffer = vec![0u8; 65536];
        while let Ok(n) = stream.read(&mut buffer).await {
            if n == 0 || stream.write_all(&buffer[..n]).await.is_err() {
                break;
            }
        }
    } else {
        let body = format!("upstream saw: {line}");
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.flush().await;
    }
}

/// An upstream proxy over TLS on loopback with the leaf `cert`; reports every request head and
/// every TLS handshake that failed (`"handshake failed"`).
async fn tls_upstream(
    cert: rustls::pki_types::CertificateDer<'static>,
    key: Vec<u8>,
) -> (SocketAddr, UnboundedReceiver<String>) {
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], PrivateKeyDer::Pkcs8(key.into()))
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (seen, heads) = unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                match acceptor.accept(stream).await {
                    Ok(tls) => serve_one(tls, seen).await,
                    Err(_) => {
                        let _ = seen.send("handshake failed".into());
                    }
                }
            });
        }
    });
    (address, heads)
}

/// A plain-HTTP upstream proxy on loopback, reporting every request head.
async fn plain_upstream() -> (SocketAddr, UnboundedReceiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (seen, heads) = unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_one(stream, seen.clone()));
        }
    });
    (address, heads)
}

struct Proxy {
    address: SocketAddr,
    lines: UnboundedReceiver<Record>,
}

impl Proxy {
    /// A proxy allowing `api.test`, chained through `upstream`, trusting `upstream_ca`.
    async fn start(upstream: &str, upstream_ca: &[PathBuf]) -> Proxy {
        Proxy::start_with(upstream, None, upstream_ca).await
    }

    /// The same, with plain-HTTP requests through `http` when given.
    async fn start_with(upstream: &str, http: Option<&str>, upstream_ca: &[PathBuf]) -> Proxy {
        let none: [&str; 0] = [];
        let credentials = CredentialConfig::from_args(
            &none,
            None,
            &upstream_ca
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>(),
            None,
        )
        .unwrap();
        let config = Config::from_args("127.0.0.1:0", None, &["api.test"], &none)
            .unwrap()
            .with_credentials(credentials)
            .unwrap()
            .with_upstream(upstream, false, &none)
            .unwrap();
        let config = match http {
            Some(http) => config.with_upstream_http(http).unwrap(),
            None => config,
        };
        let (sender, lines) = unbounded_channel();
        let server = Server::bind_with_sink(&config, Sink::Channel(sender))
            .await
            .unwrap();
        let address = server.local_addr();
        tokio::spawn(server.run(std::future::pending()));
        Proxy { address, lines }
    }

    async fn next_line(&mut self) -> Record {
        tokio::time::timeout(Duration::from_secs(10), self.lines.recv())
            .await
            .expect("a decision line in time")
            .expect("open")
    }

    async fn send(&self, request: &[u8]) -> String {
        let mut stream = TcpStream::connect(self.address).await.unwrap();
        stream.write_all(request).await.unwrap();
        let mut response = Vec::new();
        let _ =
            tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response)).await;
        String::from_utf8_lossy(&response).into_owned()
    }

    /// A CONNECT that the proxy answered with 200 (it opens the upstream after the hello).
    async fn tunnel(&self, authority: &str) -> TcpStream {
        let mut stream = TcpStream::connect(self.address).await.unwrap();
        let connect = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n");
        stream.write_all(connect.as_bytes()).await.unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "{head:?}");
            head.push(byte[0]);
        }
        assert!(head.starts_with(b"HTTP/1.1 200"), "{head:?}");
        stream
    }
}

async fn seen(heads: &mut UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(10), heads.recv())
        .await
        .expect("the upstream saw something in time")
        .expect("open")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("agentc-upstream-tls-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn a_trusted_https_upstream_carries_tunnels_and_plain_requests_inside_tls() {
    let dir = temp_dir("trusted");
    let (root_pem, cert, key) = pki(&dir);
    let (upstream, mut heads) = tls_upstream(cert, key).await;
    let mut proxy = Proxy::start(&format!("https://{upstream}"), &[root_pem]).await;

    // A tunnel: CONNECT inside the TLS session to the upstream, its bytes both ways.
    let mut stream = proxy.tunnel("api.test:443").await;
    let hello = sni::client_hello(Some("api.test"));
    stream.write_all(&hello).await.unwrap();
    let mut echoed = vec![0u8; hello.len()];
    stream.read_exact(&mut echoed).await.unwrap();
    assert_eq!(echoed, hello);
    assert!(
        seen(&mut heads)
            .await
            .starts_with("CONNECT api.test:443 HTTP/1.1\r\n"),
        "the upstream read the CONNECT over TLS"
    );
    drop(stream);
    assert_eq!(proxy.next_line().await.decision, "allow");
    let close = proxy.next_line().await;
    assert_eq!(close.address, Some(upstream), "{close:?}");
    assert_eq!(close.reason, "allowed", "{close:?}");

    // A plain-HTTP request, in absolute form inside TLS.
    let response = proxy
        .send(b"GET http://api.test/v1/x HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")
        .await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response.contains("upstream saw: GET http://api.test/v1/x HTTP/1.1"),
        "{response}"
    );
    assert!(seen(&mut heads)
        .await
        .starts_with("GET http://api.test/v1/x HTTP/1.1\r\n"));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn an_https_upstream_whose_certificate_is_not_trusted_gets_nothing() {
    let dir = temp_dir("untrusted");
    let (_root_pem, cert, key) = pki(&dir);
    let (upstream, mut heads) = tls_upstream(cert, key).await;
    // The test's root is not given: Mozilla's roots alone do not verify the upstream.
    let mut proxy = Proxy::start(&format!("https://{upstream}"), &[]).await;

    let response = proxy
        .send(b"GET http://api.test/v1/x HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")
        .await;
    assert!(response.starts_with("HTTP/1.1 502"), "{response}");
    assert!(response.contains("upstream-certificate"), "{response}");
    assert_eq!(proxy.next_line().await.decision, "allow");
    let close = proxy.next_line().await;
    assert_eq!(close.reason, "upstream-certificate", "{close:?}");
    let detail = close.detail.unwrap_or_default();
    assert!(detail.contains("TLS handshake failed"), "{detail}");
    assert_eq!(seen(&mut heads).await, "handshake failed");

    // A tunnel: the client gets an alert after its hello, the upstream no CONNECT.
    let mut stream = proxy.tunnel("api.test:443").await;
    stream
        .write_all(&sni::client_hello(Some("api.test")))
        .await
        .unwrap();
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut rest)).await;
    assert_eq!(rest.first(), Some(&21), "a TLS alert: {rest:?}");
    proxy.next_line().await;
    assert_eq!(proxy.next_line().await.reason, "upstream-certificate");
    assert_eq!(seen(&mut heads).await, "handshake failed");
    assert!(heads.try_recv().is_err(), "the upstream read no request");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn tunnels_go_through_one_upstream_and_plain_http_through_the_other() {
    let dir = temp_dir("two");
    let (root_pem, cert, key) = pki(&dir);
    let (tunnels, mut tunnel_heads) = tls_upstream(cert, key).await;
    let (plain, mut plain_heads) = plain_upstream().await;
    let mut proxy = Proxy::start_with(
        &format!("https://{tunnels}"),
        Some(&plain.to_string()),
        &[root_pem],
    )
    .await;

    let mut stream = proxy.tunnel("api.test:443").await;
    let hello = sni::client_hello(Some("api.test"));
    stream.write_all(&hello).await.unwrap();
    let mut echoed = vec![0u8; hello.len()];
    stream.read_exact(&mut echoed).await.unwrap();
    assert_eq!(echoed, hello);
    assert!(seen(&mut tunnel_heads)
        .await
        .starts_with("CONNECT api.test:443 HTTP/1.1\r\n"));
    drop(stream);
    proxy.next_line().await;
    assert_eq!(proxy.next_line().await.address, Some(tunnels));

    let response = proxy
        .send(b"GET http://api.test/p HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")
        .await;
    assert!(
        response.contains("upstream saw: GET http://api.test/p HTTP/1.1"),
        "{response}"
    );
    assert!(seen(&mut plain_heads)
        .await
        .starts_with("GET http://api.test/p HTTP/1.1\r\n"));
    proxy.next_line().await;
    assert_eq!(proxy.next_line().await.address, Some(plain));
    assert!(
        tunnel_heads.try_recv().is_err(),
        "the tunnels' upstream saw no plain HTTP"
    );
    assert!(
        plain_heads.try_recv().is_err(),
        "the plain upstream saw no CONNECT"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn an_upstream_with_credentials_gets_proxy_authorization_named_by_variable_only() {
    let (plain, mut heads) = plain_upstream().await;
    let none: [&str; 0] = [];
    let config = Config::from_args("127.0.0.1:0", None, &["api.test"], &none)
        .unwrap()
        .with_upstream(&plain.to_string(), false, &none)
        .unwrap()
        .with_upstream_auth(Some("AGENTC_TEST_UPSTREAM_AUTH"), None)
        .unwrap();
    let argv = agentc_egress::proxy_command(&config).join(" ");
    assert!(
        argv.contains("--upstream-auth-env=AGENTC_TEST_UPSTREAM_AUTH"),
        "{argv}"
    );
    assert!(!argv.contains("hunter2"), "{argv}");
    // Unset: the proxy does not start (fail closed), and the error names the variable only.
    let error = Server::bind_with_env(&config, Sink::Stdout, &Default::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("AGENTC_TEST_UPSTREAM_AUTH"), "{error}");
    let env = [(
        "AGENTC_TEST_UPSTREAM_AUTH".to_string(),
        "alice:hunter2".to_string(),
    )]
    .into();
    let (sender, lines) = unbounded_channel();
    let server = Server::bind_with_env(&config, Sink::Channel(sender), &env)
        .await
        .unwrap();
    let address = server.local_addr();
    tokio::spawn(server.run(std::future::pending()));
    let mut proxy = Proxy { address, lines };
    // base64("alice:hunter2")
    let expected = "Proxy-Authorization: Basic YWxpY2U6aHVudGVyMg==\r\n";

    let mut stream = proxy.tunnel("api.test:443").await;
    stream
        .write_all(&sni::client_hello(Some("api.test")))
        .await
        .unwrap();
    let head = seen(&mut heads).await;
    assert!(
        head.starts_with("CONNECT api.test:443 HTTP/1.1\r\n"),
        "{head}"
    );
    assert!(head.contains(expected), "{head}");
    drop(stream);
    proxy.next_line().await;
    let close = proxy.next_line().await;
    assert!(!format!("{close:?}").contains("hunter2"), "{close:?}");

    // The client's own Proxy-Authorization is not passed on; the upstream's is sent.
    let response = proxy
        .send(
            b"GET http://api.test/p HTTP/1.1\r\nHost: api.test\r\n\
              Proxy-Authorization: Basic Y2xpZW50OnNlY3JldA==\r\nConnection: close\r\n\r\n",
        )
        .await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let head = seen(&mut heads).await;
    assert!(
        head.starts_with("GET http://api.test/p HTTP/1.1\r\n"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains(&expected.to_ascii_lowercase()),
        "{head}"
    );
    assert!(!head.contains("Y2xpZW50OnNlY3JldA=="), "{head}");
}
