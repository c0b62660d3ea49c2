//! The proxy's I/O, on tokio and hyper: the listeners, CONNECT tunnels, forwarded requests,
//! the relays of the workload's published ports and the DNS stub. Every decision is made by [`crate::policy`], [`crate::request`] and
//! [`crate::sni`]; this module only moves bytes and writes the decision lines. The DNS stub's
//! listeners are in `dns_stub`, the zero-copy relay of tunnels on Linux in `splice`.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, HOST};
use http::{Method, Request, Response, StatusCode, Version};
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{timeout, Instant};

use crate::config::{Config, Limits, Relay};
use crate::error::EgressError;
use crate::host::normalize_host;
use crate::log::{Kind, Record};
use crate::policy::{Deny, Policy, Reason};
use crate::request::{self, Target};
use crate::sni::{self, SniError};
use crate::wildcard::WildcardLimiter;

pub use lookup::{FixedTable, Resolver};

mod dns_stub;
mod lookup;
mod relay;
#[cfg(target_os = "linux")]
mod splice;

type Body = BoxBody<Bytes, hyper::Error>;

/// Where decision lines go: stdout (the product), or a channel (tests).
#[derive(Debug, Clone)]
pub enum Sink {
    /// One line per record on stdout.
    Stdout,
    /// Each record sent on the channel.
    Channel(tokio::sync::mpsc::UnboundedSender<Record>),
}

impl Sink {
    fn emit(&self, record: Record) {
        match self {
            Sink::Stdout => record.emit(),
            Sink::Channel(sender) => {
                let _ = sender.send(record);
            }
        }
    }
}

/// What every connection handler shares.
#[derive(Debug)]
struct Shared {
    policy: Policy,
    limits: Limits,
    sink: Sink,
    /// The connection slots ([`Limits::max_connections`]), shared by the proxy's clients and
    /// the relayed connections.
    slots: Arc<Semaphore>,
    /// The bound on look-ups of names allowed only through a wildcard entry.
    wildcards: WildcardLimiter,
    /// Where names are resolved.
    resolver: Resolver,
}

impl Shared {
    fn emit(&self, record: Record) {
        self.sink.emit(record);
    }
}

/// Runs the proxy described by `config` until SIGTERM or SIGINT: starts the async runtime
/// (only here: the rest of agentc never starts one for this), binds, serves.
pub fn run(config: &Config) -> Result<(), EgressError> {
    config.limits.check()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(EgressError::Runtime)?;
    runtime.block_on(async {
        let server = Server::bind(config).await?;
        eprintln!(
            "agentc egress-proxy: proxy on {}, DNS stub on {}, {} allowlist entries, {} allowed ranges, {} relays",
            server.local_addr(),
            server
                .dns_addr()
                .map_or_else(|| "none".to_string(), |a| format!("{a} (UDP and TCP)")),
            config.allow.len(),
            config.allow_cidrs.len(),
            config.relays.len(),
        );
        server.run(shutdown_signal()).await;
        Ok(())
    })
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// The bound listeners, ready to serve.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    dns_udp: Option<UdpSocket>,
    dns_tcp: Option<TcpListener>,
    /// Each relay's listener and its one target.
    relays: Vec<(TcpListener, SocketAddr)>,
    shared: Arc<Shared>,
}

impl Server {
    /// Binds the proxy, each relay (on the proxy's listen address with the relay's port) and,
    /// when configured, the DNS stub (UDP and TCP on the same address; a port 0 DNS address
    /// gets the UDP socket's port for TCP too).
    pub async fn bind(config: &Config) -> Result<Server, EgressError> {
        Server::bind_with_sink(config, Sink::Stdout).await
    }

    /// As [`Server::bind`], with the decision lines sent to `sink`.
    pub async fn bind_with_sink(config: &Config, sink: Sink) -> Result<Server, EgressError> {
        Server::bind_with(config, sink, Resolver::System).await
    }

    /// As [`Server::bind_with_sink`], with names resolved by `resolver`.
    pub async fn bind_with(
        config: &Config,
        sink: Sink,
        resolver: Resolver,
    ) -> Result<Server, EgressError> {
        config.limits.check()?;
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| EgressError::Bind {
                    address: config.listen,
                    what: "proxy",
                    source,
                })?;
        let (dns_udp, dns_tcp) = match config.dns {
            None => (None, None),
            Some(address) => {
                let udp = UdpSocket::bind(address)
                    .await
                    .map_err(|source| EgressError::Bind {
                        address,
                        what: "dns/udp",
                        source,
                    })?;
                let tcp_address = udp.local_addr().unwrap_or(address);
                let tcp =
                    TcpListener::bind(tcp_address)
                        .await
                        .map_err(|source| EgressError::Bind {
                            address: tcp_address,
                            what: "dns/tcp",
                            source,
                        })?;
                (Some(udp), Some(tcp))
            }
        };
        let mut relays = Vec::new();
        for Relay { listen, target } in &config.relays {
            let address = config.relay_listen(*listen);
            let relay = TcpListener::bind(address)
                .await
                .map_err(|source| EgressError::Bind {
                    address,
                    what: "relay",
                    source,
                })?;
            relays.push((relay, *target));
        }
        Ok(Server {
            listener,
            dns_udp,
            dns_tcp,
            relays,
            shared: Arc::new(Shared {
                policy: config.policy(),
                limits: config.limits,
                sink,
                slots: Arc::new(Semaphore::new(config.limits.max_connections)),
                wildcards: WildcardLimiter::new(
                    &config.allow,
                    config.limits.wildcard_names_per_minute,
                ),
                resolver,
            }),
        })
    }

    /// Each relay's bound address and its target, in the configuration's order.
    pub fn relay_addrs(&self) -> Vec<(SocketAddr, SocketAddr)> {
        self.relays
            .iter()
            .filter_map(|(listener, target)| Some((listener.local_addr().ok()?, *target)))
            .collect()
    }

    /// The proxy's bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The DNS stub's bound address.
    pub fn dns_addr(&self) -> Option<SocketAddr> {
        self.dns_udp.as_ref().and_then(|udp| udp.local_addr().ok())
    }

    /// Serves until `shutdown` resolves; connections in flight end with the runtime.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let mut tasks = tokio::task::JoinSet::new();
        if let Some(udp) = self.dns_udp {
            tasks.spawn(dns_stub::serve_dns_udp(udp, self.shared.clone()));
        }
        if let Some(tcp) = self.dns_tcp {
            tasks.spawn(dns_stub::serve_dns_tcp(tcp, self.shared.clone()));
        }
        for (listener, target) in self.relays {
            tasks.spawn(relay::serve_relay(listener, target, self.shared.clone()));
        }
        tasks.spawn(serve_proxy(self.listener, self.shared));
        shutdown.await;
        tasks.abort_all();
    }
}

async fn serve_proxy(listener: TcpListener, shared: Arc<Shared>) {
    let slots = shared.slots.clone();
    loop {
        let (stream, client) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: wait, do not spin.
                eprintln!("agentc egress-proxy: accept failed: {error}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        match slots.clone().try_acquire_owned() {
            Ok(permit) => {
                tokio::spawn(serve_client(stream, client, shared.clone(), permit));
            }
            Err(_) => {
                tokio::spawn(refuse_busy(stream, client, shared.clone()));
            }
        }
    }
}

async fn refuse_busy(mut stream: TcpStream, client: SocketAddr, shared: Arc<Shared>) {
    let mut record = Record::new(Kind::Connection, client, Reason::TooManyConnections);
    record.detail = Some("the proxy is serving as many connections as it may".into());
    shared.emit(record);
    let response =
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let _ = timeout(Duration::from_secs(2), stream.write_all(response)).await;
}

async fn serve_client(
    stream: TcpStream,
    client: SocketAddr,
    shared: Arc<Shared>,
    permit: OwnedSemaphorePermit,
) {
    let _ = stream.set_nodelay(true);
    // The slot is held by the connection and, after an upgrade, by its tunnel.
    let permit = Arc::new(permit);
    let limits = shared.limits;
    let sink = shared.sink.clone();
    let served_any = Arc::new(AtomicBool::new(false));
    let served = served_any.clone();
    let service = service_fn(move |request| {
        let shared = shared.clone();
        let permit = permit.clone();
        served.store(true, Ordering::Relaxed);
        async move { Ok::<_, Infallible>(handle(request, client, shared, permit).await) }
    });
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout())
        .max_buf_size(limits.max_header_bytes)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
    if let Err(error) = served {
        // A keep-alive connection that goes quiet after a request is no refusal; a first
        // request head that never completes (slowloris) is.
        let first_head_timed_out = error.is_timeout() && !served_any.load(Ordering::Relaxed);
        if error.is_parse() || error.is_parse_too_large() || first_head_timed_out {
            let mut record = Record::new(Kind::Connection, client, Reason::BadRequest);
            record.detail = Some(error.to_string());
            sink.emit(record);
        }
    }
}

/// A decision line about `host:port`.
fn record(kind: Kind, client: SocketAddr, host: &str, port: u16, reason: Reason) -> Record {
    let mut record = Record::new(kind, client, reason);
    record.host = Some(host.to_string());
    record.port = Some(port);
    record
}

fn text(status: u16, body: String) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN);
    response
}

/// The response to a refusal, with the reason in a header for scripts.
fn refusal(deny: &Deny) -> Response<Body> {
    let mut response = text(
        deny.reason.status(),
        format!("agentc egress proxy: {}: {}\n", deny.reason, deny.detail),
    );
    if let Ok(value) = HeaderValue::from_str(deny.reason.as_str()) {
        response.headers_mut().insert("x-agentc-egress-deny", value);
    }
    // A refused client gets no second try on the same connection.
    response
        .headers_mut()
        .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    response
}

async fn handle(
    request: Request<Incoming>,
    client: SocketAddr,
    shared: Arc<Shared>,
    permit: Arc<OwnedSemaphorePermit>,
) -> Response<Body> {
    let kind = if request.method() == Method::CONNECT {
        Kind::Connect
    } else {
        Kind::Forward
    };
    let target = request.uri().to_string();
    match request::classify(request.method().as_str(), &target) {
        Err(deny) => {
            let mut line = Record::new(kind, client, deny.reason);
            line.detail = Some(format!("{} {target}: {}", request.method(), deny.detail));
            shared.emit(line);
            refusal(&deny)
        }
        Ok(Target::Health) => text(200, "ok\n".into()),
        Ok(Target::Connect { host, port }) => {
            connect(request, client, &host, port, shared, permit).await
        }
        Ok(Target::Forward { host, port, path }) => {
            forward(request, client, &host, port, &path, shared).await
        }
    }
}

/// Decides by name, resolves once, checks every address and connects to one that was
/// checked: the only way the proxy opens a connection.
async fn open(
    shared: &Shared,
    client: SocketAddr,
    host: &str,
    port: u16,
) -> Result<(String, SocketAddr, TcpStream), Deny> {
    let host = shared.policy.decide_name(host, port)?;
    // A name allowed only through a wildcard: counted, refused over the limit, logged.
    let admitted = shared
        .wildcards
        .admit(&host, port, std::time::Instant::now())?;
    if let Some(line) = admitted.record(client, &host, port) {
        shared.emit(line);
    }
    let limit = shared.limits.connect_timeout();
    let deadline = Instant::now() + limit;
    let resolved = timeout(limit, shared.resolver.lookup(&host, port))
        .await
        .map_err(|_| {
            Deny::new(
                Reason::ResolveFailed,
                format!("{host} did not resolve in time"),
            )
        })?
        .map_err(|error| Deny::new(Reason::ResolveFailed, format!("{host}: {error}")))?;
    let mut addresses: Vec<SocketAddr> = Vec::new();
    for address in resolved {
        if !addresses.contains(&address) {
            addresses.push(address);
        }
    }
    let ips: Vec<IpAddr> = addresses.iter().map(SocketAddr::ip).collect();
    shared.policy.check_addresses(&ips)?;
    let mut last = String::from("no address");
    for address in addresses {
        match tokio::time::timeout_at(deadline, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok((host, address, stream));
            }
            Ok(Err(error)) => last = format!("{address}: {error}"),
            Err(_) => {
                last = format!("{address}: no answer in {} s", limit.as_secs());
                break;
            }
        }
    }
    Err(Deny::new(Reason::ConnectFailed, last))
}

async fn connect(
    request: Request<Incoming>,
    client: SocketAddr,
    host: &str,
    port: u16,
    shared: Arc<Shared>,
    permit: Arc<OwnedSemaphorePermit>,
) -> Response<Body> {
    let (host, address, upstream) = match open(&shared, client, host, port).await {
        Ok(opened) => opened,
        Err(deny) => {
            let mut line = record(Kind::Connect, client, host, port, deny.reason);
            line.detail = Some(deny.detail.clone());
            shared.emit(line);
            return refusal(&deny);
        }
    };
    tokio::spawn(async move {
        let _permit = permit;
        let mut line = record(Kind::Connect, client, &host, port, Reason::Allowed);
        line.address = Some(address);
        match hyper::upgrade::on(request).await {
            // The client's own socket, and whatever it sent after the CONNECT head, so that the
            // tunnel can be spliced in the kernel.
            Ok(upgraded) => match upgraded.downcast::<TokioIo<TcpStream>>() {
                Ok(parts) => {
                    let client = ClientIo::Tcp(parts.io.into_inner());
                    tunnel(client, parts.read_buf.to_vec(), upstream, line, &shared).await
                }
                Err(upgraded) => {
                    let client = ClientIo::Upgraded(TokioIo::new(upgraded));
                    tunnel(client, Vec::new(), upstream, line, &shared).await
                }
            },
            Err(error) => {
                line = record(Kind::Connect, client, &host, port, Reason::BadRequest);
                line.detail = Some(format!("the tunnel did not open: {error}"));
                shared.emit(line);
            }
        }
    });
    text(200, String::new())
}

/// Reads the client's first bytes until they hold a whole ClientHello.
async fn read_client_hello<R: AsyncRead + Unpin>(
    client: &mut R,
    buffer: &mut Vec<u8>,
) -> Result<sni::ClientHello, Deny> {
    let mut chunk = [0u8; 4096];
    loop {
        match sni::parse(buffer) {
            Ok(hello) => return Ok(hello),
            Err(SniError::Invalid(why)) => return Err(Deny::new(Reason::NotTls, why)),
            Err(SniError::Incomplete) => {}
        }
        let room = sni::MAX_RECORD_BYTES
            .saturating_sub(buffer.len())
            .min(chunk.len());
        if room == 0 {
            return Err(Deny::new(
                Reason::NotTls,
                "the ClientHello exceeds the bound",
            ));
        }
        let n = client
            .read(&mut chunk[..room])
            .await
            .map_err(|error| Deny::new(Reason::NotTls, error.to_string()))?;
        if n == 0 {
            return Err(Deny::new(
                Reason::NotTls,
                "the client closed before a whole ClientHello",
            ));
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
}

/// The client side of a tunnel: its socket (the usual case), or hyper's upgraded connection.
enum ClientIo {
    Tcp(TcpStream),
    Upgraded(TokioIo<hyper::upgrade::Upgraded>),
}

async fn tunnel(
    mut client: ClientIo,
    initial: Vec<u8>,
    upstream: TcpStream,
    mut line: Record,
    shared: &Shared,
) {
    let host = line.host.clone().unwrap_or_default();
    let mut first = initial;
    if line.port == Some(443) {
        let limit = shared.limits.client_hello_timeout();
        let read = match &mut client {
            ClientIo::Tcp(stream) => timeout(limit, read_client_hello(stream, &mut first)).await,
            ClientIo::Upgraded(io) => timeout(limit, read_client_hello(io, &mut first)).await,
        };
        let checked = match read {
            Err(_) => Err(Deny::new(
                Reason::ClientHelloTimeout,
                "no whole ClientHello in time",
            )),
            Ok(Err(deny)) => Err(deny),
            Ok(Ok(hello)) => {
                line.sni = hello.server_name.clone();
                match hello.server_name.as_deref().map(normalize_host) {
                    None => Err(Deny::new(Reason::SniMissing, "a ClientHello without SNI")),
                    Some(Ok(name)) if name == host => Ok(()),
                    Some(_) => Err(Deny::new(
                        Reason::SniMismatch,
                        format!("the ClientHello asks for another server than {host}"),
                    )),
                }
            }
        };
        if let Err(deny) = checked {
            line.address = None;
            line.decision = "deny";
            line.reason = deny.reason.as_str();
            line.detail = Some(deny.detail);
            shared.emit(line);
            return;
        }
    }
    relay(client, first, upstream, line, shared).await;
}

/// Sends `first` to `upstream`, then copies both ways (spliced in the kernel on Linux) until
/// both ends closed, either failed or [`Limits::idle_timeout`] passed without a byte; emits
/// `line` with the bytes each way.
async fn relay(
    client: ClientIo,
    first: Vec<u8>,
    mut upstream: TcpStream,
    mut line: Record,
    shared: &Shared,
) {
    let counters = Arc::new(Counters::new());
    let relayed = async {
        upstream.write_all(&first).await?;
        counters.up.fetch_add(first.len() as u64, Ordering::Relaxed);
        counters.touch();
        match client {
            #[cfg(target_os = "linux")]
            ClientIo::Tcp(client) => splice::both_ways(&client, &upstream, &counters).await,
            #[cfg(not(target_os = "linux"))]
            ClientIo::Tcp(mut client) => copy_both_ways(&mut client, upstream, &counters).await,
            ClientIo::Upgraded(mut client) => {
                copy_both_ways(&mut client, upstream, &counters).await
            }
        }
    };
    let outcome = with_idle(relayed, &counters, shared.limits.idle_timeout()).await;
    if outcome.is_none() {
        line.detail = Some("closed after the idle timeout".into());
    }
    line.bytes_up = Some(counters.up.load(Ordering::Relaxed));
    line.bytes_down = Some(counters.down.load(Ordering::Relaxed));
    shared.emit(line);
}

/// Copies both ways through user space (where splicing is not available).
async fn copy_both_ways<C: AsyncRead + AsyncWrite + Unpin>(
    client: &mut C,
    upstream: TcpStream,
    counters: &Arc<Counters>,
) -> io::Result<()> {
    let mut upstream = Counted {
        inner: upstream,
        counters: counters.clone(),
    };
    tokio::io::copy_bidirectional_with_sizes(client, &mut upstream, 64 * 1024, 64 * 1024)
        .await
        .map(|_| ())
}

async fn forward(
    request: Request<Incoming>,
    client: SocketAddr,
    host: &str,
    port: u16,
    path: &str,
    shared: Arc<Shared>,
) -> Response<Body> {
    let deny_line = |deny: &Deny| {
        let mut line = record(Kind::Forward, client, host, port, deny.reason);
        line.detail = Some(deny.detail.clone());
        shared.emit(line);
    };
    let (host, address, upstream) = match open(&shared, client, host, port).await {
        Ok(opened) => opened,
        Err(deny) => {
            deny_line(&deny);
            return refusal(&deny);
        }
    };
    let (mut parts, body) = request.into_parts();
    let authority = if port == 80 {
        host.clone()
    } else {
        format!("{host}:{port}")
    };
    let (Ok(uri), Ok(host_value)) = (path.parse(), HeaderValue::from_str(&authority)) else {
        let deny = Deny::new(Reason::BadRequest, "a path that is not a valid URI");
        deny_line(&deny);
        return refusal(&deny);
    };
    request::strip_hop_by_hop(&mut parts.headers);
    parts.uri = uri;
    parts.version = Version::HTTP_11;
    parts.headers.insert(HOST, host_value);
    let counters = Arc::new(Counters::new());
    let io = TokioIo::new(Counted {
        inner: upstream,
        counters: counters.clone(),
    });
    let mut line = record(Kind::Forward, client, &host, port, Reason::Allowed);
    line.address = Some(address);
    let (mut sender, connection) = match hyper::client::conn::http1::handshake(io).await {
        Ok(pair) => pair,
        Err(error) => {
            let deny = Deny::new(Reason::ConnectFailed, error.to_string());
            deny_line(&deny);
            return refusal(&deny);
        }
    };
    let idle = shared.limits.idle_timeout();
    let watched = counters.clone();
    let sink = shared.sink.clone();
    tokio::spawn(async move {
        if with_idle(connection, &watched, idle).await.is_none() {
            line.detail = Some("closed after the idle timeout".into());
        }
        line.bytes_up = Some(watched.up.load(Ordering::Relaxed));
        line.bytes_down = Some(watched.down.load(Ordering::Relaxed));
        sink.emit(line);
    });
    let sent = with_idle(
        sender.send_request(Request::from_parts(parts, body)),
        &counters,
        idle,
    )
    .await;
    drop(sender);
    match sent {
        Some(Ok(mut response)) => {
            request::strip_hop_by_hop(response.headers_mut());
            response.map(|body| body.boxed())
        }
        Some(Err(error)) => text(
            502,
            format!("agentc egress proxy: upstream error: {error}\n"),
        ),
        None => text(504, "agentc egress proxy: upstream idle timeout\n".into()),
    }
}

/// Bytes each way and the time of the last one.
#[derive(Debug)]
struct Counters {
    up: AtomicU64,
    down: AtomicU64,
    start: Instant,
    last_ms: AtomicU64,
}

impl Counters {
    fn new() -> Counters {
        Counters {
            up: AtomicU64::new(0),
            down: AtomicU64::new(0),
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }
    fn touch(&self) {
        let ms = self.start.elapsed().as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }
    fn last(&self) -> Instant {
        self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

/// Runs `future` until it ends or `idle` passes without a byte counted; `None` on idle.
async fn with_idle<F: Future>(future: F, counters: &Counters, idle: Duration) -> Option<F::Output> {
    tokio::pin!(future);
    loop {
        let deadline = counters.last() + idle;
        tokio::select! {
            output = &mut future => return Some(output),
            _ = tokio::time::sleep_until(deadline) => {
                if counters.last() + idle <= Instant::now() {
                    return None;
                }
            }
        }
    }
}

/// The upstream connection, counting bytes: up is written to it, down is read from it.
struct Counted<S> {
    inner: S,
    counters: Arc<Counters>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            self.counters.down.fetch_add(n as u64, Ordering::Relaxed);
            self.counters.touch();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            if n > 0 {
                self.counters.up.fetch_add(n as u64, Ordering::Relaxed);
                self.counters.touch();
            }
        }
        polled
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `bytes` in `piece`-byte writes with pauses, so the reader sees many reads.
    async fn hello_in_pieces(bytes: Vec<u8>, piece: usize) -> Result<sni::ClientHello, Deny> {
        let (mut client, mut proxy_side) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            for chunk in bytes.chunks(piece) {
                if client.write_all(chunk).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        let mut buffer = Vec::new();
        let read = read_client_hello(&mut proxy_side, &mut buffer).await;
        writer.abort();
        read
    }

    #[tokio::test]
    async fn a_client_hello_over_many_reads_and_records_is_read_whole() {
        let hello = sni::client_hello(Some("allowed.test"));
        let fragmented = sni::records(&hello[5..], 17);
        for piece in [1, 3, 100] {
            let read = hello_in_pieces(fragmented.clone(), piece).await.unwrap();
            assert_eq!(read.server_name.as_deref(), Some("allowed.test"));
        }
    }

    #[tokio::test]
    async fn garbage_a_closed_client_and_an_endless_hello_are_not_tls() {
        let garbage = hello_in_pieces(b"GET / HTTP/1.1\r\n\r\n".to_vec(), 4).await;
        assert_eq!(garbage.unwrap_err().reason, Reason::NotTls);
        let hello = sni::client_hello(Some("allowed.test"));
        let cut = hello_in_pieces(hello[..30].to_vec(), 7).await;
        assert_eq!(cut.unwrap_err().reason, Reason::NotTls);
        // Records that never complete a hello: 1-byte records up to the bound.
        let endless = sni::records(&[1, 0, 0x40, 0].repeat(10_000), 1);
        let endless = hello_in_pieces(endless, 4096).await;
        assert_eq!(endless.unwrap_err().reason, Reason::NotTls);
    }
}
