//! The proxy in-process, on loopback only: forwarding, tunnels, hostile requests, the bounds
//! and the DNS stub, with the decision lines read from a channel.

use std::net::SocketAddr;
use std::time::Duration;

use agentc_egress::dns;
use agentc_egress::log::{Kind, Record};
use agentc_egress::proxy::{Server, Sink};
use agentc_egress::{Config, Limits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// A loopback upstream: `http` answers one HTTP response per connection, otherwise echo.
async fn upstream(http: bool) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 65536];
                if http {
                    let mut head = Vec::new();
                    while !head.ends_with(b"\r\n\r\n") {
                        match stream.read(&mut buffer[..1]).await {
                            Ok(1) => head.push(buffer[0]),
                            _ => return,
                        }
                    }
                    let text = String::from_utf8_lossy(&head).to_string();
                    let body = format!("seen: {}", text.replace("\r\n", "|"));
                    let response = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\nKeep-Alive: x\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                } else {
                    while let Ok(n) = stream.read(&mut buffer).await {
                        if n == 0 || stream.write_all(&buffer[..n]).await.is_err() {
                            break;
                        }
                    }
                }
            });
        }
    });
    address
}

struct Proxy {
    address: SocketAddr,
    dns: SocketAddr,
    lines: UnboundedReceiver<Record>,
}

impl Proxy {
    async fn start(allow: &[String], limits: Limits) -> Proxy {
        let mut config = Config::from_args(
            "127.0.0.1:0",
            Some("127.0.0.1:0"),
            allow,
            &["127.0.0.0/8", "::1/128"],
        )
        .unwrap();
        config.limits = limits;
        let (sender, lines) = unbounded_channel();
        let server = Server::bind_with_sink(&config, Sink::Channel(sender))
            .await
            .unwrap();
        let address = server.local_addr();
        let dns = server.dns_addr().unwrap();
        tokio::spawn(server.run(std::future::pending()));
        Proxy {
            address,
            dns,
            lines,
        }
    }

    async fn next_line(&mut self) -> Record {
        tokio::time::timeout(Duration::from_secs(10), self.lines.recv())
            .await
            .expect("a decision line in time")
            .expect("the channel is open")
    }

    async fn send(&self, request: &[u8]) -> String {
        let mut stream = TcpStream::connect(self.address).await.unwrap();
        stream.write_all(request).await.unwrap();
        let mut response = Vec::new();
        let _ =
            tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response)).await;
        String::from_utf8_lossy(&response).into_owned()
    }
}

#[tokio::test]
async fn an_allowed_forward_reaches_the_upstream_without_proxy_headers() {
    let server = upstream(true).await;
    let allow = [format!("localhost:{}", server.port())];
    let mut proxy = Proxy::start(&allow, Limits::default()).await;
    let request = format!(
        "GET http://LocalHost:{}/path?q=1 HTTP/1.1\r\nHost: ignored\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nX-Kept: 2\r\n\r\n",
        server.port()
    );
    let response = proxy.send(request.as_bytes()).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response.contains("seen: GET /path?q=1 HTTP/1.1|"),
        "{response}"
    );
    let lower = response.to_ascii_lowercase();
    assert!(
        lower.contains(&format!("host: localhost:{}", server.port())),
        "{response}"
    );
    assert!(lower.contains("x-kept: 2"), "{response}");
    for gone in [
        "proxy-authorization",
        "proxy-connection",
        "x-hop",
        "keep-alive: x",
    ] {
        assert!(!lower.contains(gone), "{gone} crossed: {response}");
    }
    let line = proxy.next_line().await;
    assert_eq!(
        (line.kind, line.decision, line.reason),
        (Kind::Forward, "allow", "allowed")
    );
    assert_eq!(line.host.as_deref(), Some("localhost"));
    assert_eq!(line.address.map(|a| a.port()), Some(server.port()));
    assert!(
        line.bytes_up.unwrap() > 0 && line.bytes_down.unwrap() > 0,
        "{line:?}"
    );
}

#[tokio::test]
async fn a_tunnel_to_an_allowed_port_carries_bytes_both_ways_and_counts_them() {
    let server = upstream(false).await;
    let allow = [format!("localhost:{}", server.port())];
    let mut proxy = Proxy::start(&allow, Limits::default()).await;
    let mut stream = TcpStream::connect(proxy.address).await.unwrap();
    let connect = format!(
        "CONNECT localhost:{0} HTTP/1.1\r\nHost: localhost:{0}\r\n\r\n",
        server.port()
    );
    stream.write_all(connect.as_bytes()).await.unwrap();
    let mut head = [0u8; 19];
    stream.read_exact(&mut head).await.unwrap();
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&head)
    );
    let mut rest = Vec::new();
    while !rest.ends_with(b"\r\n\r\n") && !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        stream.read_exact(&mut byte).await.unwrap();
        rest.push(byte[0]);
    }
    stream.write_all(b"ping through the tunnel").await.unwrap();
    let mut echoed = [0u8; 23];
    stream.read_exact(&mut echoed).await.unwrap();
    assert_eq!(&echoed, b"ping through the tunnel");
    drop(stream);
    let line = proxy.next_line().await;
    assert_eq!((line.kind, line.decision), (Kind::Connect, "allow"));
    assert_eq!((line.bytes_up, line.bytes_down), (Some(23), Some(23)));
}

#[tokio::test]
async fn hostile_requests_get_a_4xx_and_one_line_each() {
    let mut proxy = Proxy::start(&["allowed.test".to_string()], Limits::default()).await;
    let huge = format!(
        "GET http://allowed.test/ HTTP/1.1\r\nX-Big: {}\r\n\r\n",
        "a".repeat(40_000)
    );
    let many_headers: String = (0..200).map(|i| format!("X-{i}: 1\r\n")).collect();
    let many = format!("GET http://allowed.test/ HTTP/1.1\r\n{many_headers}\r\n");
    for (request, status, reason) in [
        (huge.as_bytes(), "431", "bad-request"),
        (many.as_bytes(), "431", "bad-request"),
        (
            &b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"[..],
            "400",
            "bad-request",
        ),
        (
            b"GET http://allowed.test/ HTTP/9.9\r\n\r\n",
            "",
            "bad-request",
        ),
        (
            b"CONNECT allowed.test HTTP/1.1\r\n\r\n",
            "400",
            "bad-request",
        ),
        (
            b"CONNECT allowed.test:0 HTTP/1.1\r\n\r\n",
            "400",
            "bad-request",
        ),
        (
            b"CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n",
            "403",
            "ip-literal",
        ),
        (b"CONNECT [::1]:443 HTTP/1.1\r\n\r\n", "403", "ip-literal"),
        (b"GET http://0x7f.1/ HTTP/1.1\r\n\r\n", "403", "ip-literal"),
        (
            b"GET http://user@allowed.test/ HTTP/1.1\r\n\r\n",
            "400",
            "bad-request",
        ),
        (
            b"GET http://allowed.test:99999/ HTTP/1.1\r\n\r\n",
            "400",
            "bad-request",
        ),
        (
            b"GET ftp://allowed.test/ HTTP/1.1\r\n\r\n",
            "400",
            "bad-request",
        ),
        (b"GET / HTTP/1.1\r\n\r\n", "400", "bad-request"),
        (
            b"POST /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            "400",
            "bad-request",
        ),
        (
            b"GET http://forbidden.test/ HTTP/1.1\r\n\r\n",
            "403",
            "host-not-allowed",
        ),
        (
            b"CONNECT allowed.test:25 HTTP/1.1\r\n\r\n",
            "403",
            "port-not-allowed",
        ),
    ] {
        let response = proxy.send(request).await;
        if !status.is_empty() {
            assert!(
                response.starts_with(&format!("HTTP/1.1 {status}")),
                "{}: {response}",
                String::from_utf8_lossy(&request[..request.len().min(60)])
            );
        }
        let line = proxy.next_line().await;
        assert_eq!((line.decision, line.reason), ("deny", reason), "{line:?}");
    }
    let response = proxy.send(b"GET /healthz HTTP/1.1\r\n\r\n").await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        proxy.lines.try_recv().is_err(),
        "health checks are not decisions"
    );
}

#[tokio::test]
async fn connections_beyond_the_limit_get_503_and_a_line() {
    let limits = Limits {
        max_connections: 2,
        ..Limits::default()
    };
    let mut proxy = Proxy::start(&[], limits).await;
    let _a = TcpStream::connect(proxy.address).await.unwrap();
    let _b = TcpStream::connect(proxy.address).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let response = proxy.send(b"GET /healthz HTTP/1.1\r\n\r\n").await;
    assert!(response.starts_with("HTTP/1.1 503"), "{response}");
    let line = proxy.next_line().await;
    assert_eq!(line.reason, "too-many-connections");
}

#[tokio::test]
async fn a_slow_request_head_and_an_idle_tunnel_are_closed() {
    let server = upstream(false).await;
    let limits = Limits {
        header_timeout_secs: 1,
        idle_timeout_secs: 1,
        ..Limits::default()
    };
    let allow = [format!("localhost:{}", server.port())];
    let mut proxy = Proxy::start(&allow, limits).await;
    let started = std::time::Instant::now();
    let response = proxy
        .send(b"GET http://localhost/ HTTP/1.1\r\nX-Slow: ")
        .await;
    assert!(started.elapsed() < Duration::from_secs(5), "{response}");
    let line = proxy.next_line().await;
    assert_eq!((line.kind, line.reason), (Kind::Connection, "bad-request"));

    let mut stream = TcpStream::connect(proxy.address).await.unwrap();
    let connect = format!("CONNECT localhost:{} HTTP/1.1\r\n\r\n", server.port());
    stream.write_all(connect.as_bytes()).await.unwrap();
    let mut sink = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut sink)).await;
    assert!(read.is_ok(), "the idle tunnel stayed open");
    let line = proxy.next_line().await;
    assert_eq!(line.decision, "allow");
    assert_eq!(
        line.detail.as_deref(),
        Some("closed after the idle timeout")
    );
}

#[tokio::test]
async fn the_dns_stub_answers_nxdomain_over_udp_and_tcp_and_logs_each_name() {
    let mut proxy = Proxy::start(&[], Limits::default()).await;
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    socket
        .send_to(&dns::query(9, "c2VjcmV0.exfil.test", 16), proxy.dns)
        .await
        .unwrap();
    let mut buffer = [0u8; 512];
    let (n, _) = tokio::time::timeout(Duration::from_secs(5), socket.recv_from(&mut buffer))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(buffer[3] & 0x0f, 3);
    assert_eq!(&buffer[6..12], &[0; 6]);
    assert!(n < 100);
    let line = proxy.next_line().await;
    assert_eq!(line.kind, Kind::Dns);
    assert_eq!(line.qname.as_deref(), Some("c2VjcmV0.exfil.test."));
    assert_eq!(line.qtype.as_deref(), Some("TXT"));

    socket.send_to(b"junk", proxy.dns).await.unwrap();
    let line = proxy.next_line().await;
    assert_eq!((line.kind, line.qname), (Kind::Dns, None));

    let mut stream = TcpStream::connect(proxy.dns).await.unwrap();
    let query = dns::query(10, "over.tcp.test", 1);
    let mut framed = (query.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&query);
    stream.write_all(&framed).await.unwrap();
    let length = stream.read_u16().await.unwrap() as usize;
    let mut answer = vec![0u8; length];
    stream.read_exact(&mut answer).await.unwrap();
    assert_eq!(answer[3] & 0x0f, 3);
    let line = proxy.next_line().await;
    assert_eq!(line.qname.as_deref(), Some("over.tcp.test."));
}

#[tokio::test]
async fn the_health_check_answers_only_a_running_proxy() {
    let proxy = Proxy::start(&[], Limits::default()).await;
    let address = proxy.address;
    let checked = tokio::task::spawn_blocking(move || {
        agentc_egress::health::check(address, Duration::from_secs(3))
    })
    .await
    .unwrap();
    assert!(checked.is_ok(), "{checked:?}");
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let checked = tokio::task::spawn_blocking(move || {
        agentc_egress::health::check(closed, Duration::from_secs(1))
    })
    .await
    .unwrap();
    assert!(checked.is_err());
}

/// A relay proxy on loopback whose one relay goes to `target`; its relay address.
async fn relay_proxy(
    target: SocketAddr,
    limits: Limits,
) -> (SocketAddr, UnboundedReceiver<Record>) {
    let none: [&str; 0] = [];
    let mut config = Config::from_args("127.0.0.1:0", None, &none, &none).unwrap();
    // Port 0 (any free port) is for tests only: the command line refuses it.
    config.relays = vec![agentc_egress::Relay { listen: 0, target }];
    config.limits = limits;
    let (sender, lines) = unbounded_channel();
    let server = Server::bind_with_sink(&config, Sink::Channel(sender))
        .await
        .unwrap();
    let relays = server.relay_addrs();
    assert_eq!(relays.len(), 1);
    assert_eq!(relays[0].1, target);
    tokio::spawn(server.run(std::future::pending()));
    (relays[0].0, lines)
}

async fn next(lines: &mut UnboundedReceiver<Record>) -> Record {
    tokio::time::timeout(Duration::from_secs(10), lines.recv())
        .await
        .expect("a line in time")
        .expect("the channel is open")
}

#[tokio::test]
async fn a_relay_carries_bytes_to_its_one_target_and_logs_one_line_per_connection() {
    let server = upstream(false).await;
    let (relay, mut lines) = relay_proxy(server, Limits::default()).await;
    for round in 0..2u8 {
        let mut stream = TcpStream::connect(relay).await.unwrap();
        let message = vec![b'a' + round; 100_000];
        stream.write_all(&message).await.unwrap();
        let mut back = vec![0u8; message.len()];
        stream.read_exact(&mut back).await.unwrap();
        assert_eq!(back, message);
        stream.shutdown().await.unwrap();
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
        let line = next(&mut lines).await;
        assert_eq!(
            (line.kind, line.decision, line.reason),
            (Kind::Relay, "allow", "allowed")
        );
        assert_eq!(line.address, Some(server));
        assert_eq!(line.client, stream.local_addr().unwrap());
        assert_eq!(
            (line.bytes_up, line.bytes_down),
            (Some(100_000), Some(100_000))
        );
        let json: serde_json::Value = serde_json::from_str(&line.to_line()).unwrap();
        assert_eq!(json["kind"], "relay");
    }
}

#[tokio::test]
async fn a_refused_workload_closes_the_client_logs_a_line_and_the_relay_serves_on() {
    // A port nothing listens on: bind, read the port, close.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = closed.local_addr().unwrap();
    drop(closed);
    let (relay, mut lines) = relay_proxy(target, Limits::default()).await;
    for _ in 0..3 {
        let mut stream = TcpStream::connect(relay).await.unwrap();
        let mut rest = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut rest))
            .await
            .expect("the relay closes the client");
        assert!(read.is_err() || rest.is_empty(), "{read:?} {rest:?}");
        let line = next(&mut lines).await;
        assert_eq!(
            (line.kind, line.decision, line.reason),
            (Kind::Relay, "deny", "connect-failed")
        );
        assert_eq!(line.address, Some(target));
        assert!(line.detail.unwrap().contains(&target.to_string()));
    }
}

#[tokio::test]
async fn relayed_connections_are_bounded_and_closed_when_idle() {
    let server = upstream(false).await;
    let limits = Limits {
        max_connections: 1,
        idle_timeout_secs: 1,
        ..Limits::default()
    };
    let (relay, mut lines) = relay_proxy(server, limits).await;
    let mut first = TcpStream::connect(relay).await.unwrap();
    first.write_all(b"ping").await.unwrap();
    let mut back = [0u8; 4];
    first.read_exact(&mut back).await.unwrap();
    // The one slot is taken: the second is closed with a line.
    let mut second = TcpStream::connect(relay).await.unwrap();
    let busy = next(&mut lines).await;
    assert_eq!(
        (busy.kind, busy.reason),
        (Kind::Relay, "too-many-connections")
    );
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), second.read_to_end(&mut rest)).await;
    assert!(rest.is_empty());
    // The first goes quiet: closed after the idle timeout, with its line.
    let idle = next(&mut lines).await;
    assert_eq!((idle.kind, idle.reason), (Kind::Relay, "allowed"));
    assert_eq!(
        idle.detail.as_deref(),
        Some("closed after the idle timeout")
    );
    assert_eq!((idle.bytes_up, idle.bytes_down), (Some(4), Some(4)));
}

/// Finding 6 of issue 18: a name allowed only through `*.wild.test` is resolved at most
/// 10 distinct times a minute. Names resolve from a fixed table (no DNS query leaves the
/// test), which records every name asked: the 11th distinct name is refused with
/// `wildcard-rate`, logged, and never looked up; a repeat and an exact host still pass.
#[tokio::test]
async fn the_eleventh_distinct_wildcard_name_in_a_minute_is_refused_before_any_look_up() {
    use agentc_egress::proxy::{FixedTable, Resolver};
    use std::sync::Arc;

    let server = upstream(true).await;
    let port = server.port();
    let names: Vec<String> = (0..12).map(|i| format!("n{i}.wild.test")).collect();
    let table = Arc::new(FixedTable::new(
        names
            .iter()
            .cloned()
            .chain(["exact.wild.test".to_string()])
            .map(|name| (name, vec!["127.0.0.1".parse().unwrap()])),
    ));
    let allow = [
        format!("*.wild.test:{port}"),
        format!("exact.wild.test:{port}"),
    ];
    let config = Config::from_args("127.0.0.1:0", None, &allow, &["127.0.0.0/8"]).unwrap();
    let (sender, mut lines) = unbounded_channel();
    let server_ = Server::bind_with(
        &config,
        Sink::Channel(sender),
        Resolver::Fixed(table.clone()),
    )
    .await
    .unwrap();
    let proxy = Proxy {
        address: server_.local_addr(),
        dns: "127.0.0.1:9".parse().unwrap(),
        lines: unbounded_channel().1,
    };
    tokio::spawn(server_.run(std::future::pending()));
    let get =
        |name: &str| format!("GET http://{name}:{port}/ HTTP/1.1\r\nConnection: close\r\n\r\n");
    // The lines of one request, up to and including its forward line.
    async fn request_lines(lines: &mut UnboundedReceiver<Record>) -> Vec<Record> {
        let mut got = Vec::new();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), lines.recv())
                .await
                .expect("a line in time")
                .expect("open");
            let last = line.kind == Kind::Forward;
            got.push(line);
            if last {
                return got;
            }
        }
    }
    for (i, name) in names[..10].iter().enumerate() {
        let response = proxy.send(get(name).as_bytes()).await;
        assert!(response.starts_with("HTTP/1.1 200"), "{name}: {response}");
        let got = request_lines(&mut lines).await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(
            (got[0].kind, got[0].decision, got[0].reason),
            (Kind::Resolve, "allow", "wildcard")
        );
        assert_eq!(got[0].host.as_deref(), Some(name.as_str()));
        let detail = got[0].detail.clone().unwrap_or_default();
        assert!(
            detail.contains(&format!("{} of 10", i + 1)) && detail.contains("*.wild.test"),
            "{detail}"
        );
        assert_eq!((got[1].decision, got[1].reason), ("allow", "allowed"));
    }
    assert_eq!(table.asked(), names[..10].to_vec());

    // The 11th: refused, one deny line and no resolve line, nothing looked up.
    let response = proxy.send(get(&names[10]).as_bytes()).await;
    assert!(response.starts_with("HTTP/1.1 429"), "{response}");
    assert!(response.contains("wildcard-rate"), "{response}");
    let got = request_lines(&mut lines).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].decision, got[0].reason), ("deny", "wildcard-rate"));
    assert_eq!(got[0].host.as_deref(), Some(names[10].as_str()));
    assert!(!table.asked().contains(&names[10]), "{:?}", table.asked());
    assert_eq!(table.asked().len(), 10);

    // A repeat is not counted again (resolved, logged); an exact host is not counted at all.
    let response = proxy.send(get(&names[3]).as_bytes()).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let got = request_lines(&mut lines).await;
    assert_eq!((got.len(), got[0].kind), (2, Kind::Resolve), "{got:?}");
    assert!(
        got[0]
            .detail
            .as_deref()
            .unwrap_or_default()
            .contains("repeat"),
        "{got:?}"
    );
    let response = proxy.send(get("exact.wild.test").as_bytes()).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let got = request_lines(&mut lines).await;
    assert_eq!(got.len(), 1, "no resolve line for an exact host: {got:?}");
    assert_eq!(got[0].reason, "allowed");
    assert_eq!(table.asked().len(), 12);
}
