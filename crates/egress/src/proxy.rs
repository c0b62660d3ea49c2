//! The proxy's I/O, on tokio and hyper: the listeners, CONNECT tunnels, forwarded requests,
//! the relays of the workload's published ports and the DNS stub. Every decision is made by
//! [`crate::policy`], [`crate::request`] and [`crate::sni`]; this module only moves bytes and
//! writes the decision lines ([`crate::log`]).
//!
//! The order of a request: hyper parses the head; `start` decides it and writes its decision
//! line synchronously (a CONNECT allowed by name: after its first bytes are checked, in its
//! own task); only then does anything leave the proxy: one lookup ([`Resolve`], in `resolve`),
//! the address check, one connection. The tunnel's first-bytes check (TLS ClientHello, HTTP
//! `Host`, raw) and its refusals in the client's protocol are in `tunnel`, the request line of
//! an unparsable request in `capture`, the DNS stub's listeners in `dns_stub`, the zero-copy
//! relay of tunnels on Linux in `splice`.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::HeaderValue;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::time::{timeout, Instant};

use crate::audit::Audit;
use crate::config::{Config, Limits, Relay};
use crate::error::EgressError;
use crate::log::{Kind, Record};
use crate::policy::{Deny, Policy, Reason};
use crate::request::{self, Target};
use crate::wildcard::WildcardLimiter;

pub(crate) use body::BoxError;
use body::{boxed, empty, Body};
use capture::Recording;
use client_io::ClientIo;
use conn::Conn;
use counted::{with_idle, Counted, Counters};
use forward::forward_screened;
use intercept::Intercept;
use tunnel::tunnel;

mod body;
mod capture;
mod chain;
mod client_io;
mod conn;
mod counted;
mod dns_stub;
mod forward;
mod intercept;
pub use intercept::{PREREAD, PREREAD_BUDGET};
mod relay;
#[cfg(target_os = "linux")]
mod splice;
mod start;
mod tunnel;

/// What a lookup returns.
pub type Lookup = Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'static>>;

/// How the proxy looks up a decided name: the system resolver ([`SystemResolver`]), or one
/// a test controls ([`Server::with_resolver`]).
pub trait Resolve: Send + Sync + std::fmt::Debug {
    /// The addresses of `host` (a normalized, allowed name) with `port`.
    fn lookup(&self, host: &str, port: u16) -> Lookup;
}

/// The system's resolver (`getaddrinfo`, through tokio's blocking pool).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn lookup(&self, host: &str, port: u16) -> Lookup {
        let host = host.to_string();
        Box::pin(async move {
            tokio::net::lookup_host((host.as_str(), port))
                .await
                .map(|addresses| addresses.collect())
        })
    }
}

/// Where decision lines go: the audit writer (the product), or a channel (tests).
#[derive(Debug, Clone)]
pub enum Sink {
    /// The audit writer of the configuration ([`Server::bind_with_env`] opens it: the rate
    /// limit, stdout and the `--audit-dir` files).
    Stdout,
    /// An audit writer opened already ([`crate::audit::Audit`]).
    Audit(Arc<Audit>),
    /// Each record sent on the channel, unlimited.
    Channel(tokio::sync::mpsc::UnboundedSender<Record>),
}

/// The audit writer of a [`Sink::Stdout`] that was not opened for a configuration: stdout only.
fn stdout_audit() -> &'static Audit {
    static AUDIT: std::sync::OnceLock<Audit> = std::sync::OnceLock::new();
    AUDIT.get_or_init(|| {
        Audit::with(None, true, crate::audit::Limiter::default())
            .expect("an audit writer without files opens nothing")
    })
}

impl Sink {
    fn emit(&self, record: Record) {
        match self {
            Sink::Stdout => stdout_audit().emit(&record),
            Sink::Audit(audit) => audit.emit(&record),
            Sink::Channel(sender) => {
                let _ = sender.send(record);
            }
        }
    }

    /// The audit writer behind this sink, if any.
    fn audit(&self) -> Option<&Audit> {
        match self {
            Sink::Stdout => Some(stdout_audit()),
            Sink::Audit(audit) => Some(audit),
            Sink::Channel(_) => None,
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
    /// How decided names are looked up.
    resolver: Arc<dyn Resolve>,
    /// The bound on look-ups of names allowed only through a wildcard entry.
    wildcards: Arc<WildcardLimiter>,
    /// The credentials, the placeholders and the launch CA, when the proxy injects any.
    intercept: Option<Arc<Intercept>>,
    /// The TLS client of an `https://` upstream proxy: Mozilla's roots and `--upstream-ca`.
    upstream_tls: Option<Arc<rustls::ClientConfig>>,
    /// Each upstream's `Proxy-Authorization` by its variable's name (`--upstream-auth-env`).
    upstream_auth: Vec<(String, HeaderValue)>,
}

impl Shared {
    /// The `Proxy-Authorization` value for `upstream`, when it has credentials.
    fn upstream_auth(&self, upstream: &crate::upstream::Upstream) -> Option<&HeaderValue> {
        let name = upstream.auth_env.as_ref()?;
        self.upstream_auth
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, value)| value)
    }
}

impl Shared {
    fn emit(&self, record: Record) {
        self.sink.emit(record);
    }

    /// Counts a decided name allowed only through a wildcard entry, as part of its decision
    /// ([`WildcardLimiter::admit`]): `Ok` with what the decision line says of it (the entry and
    /// how many distinct names it resolved this minute), `Ok(None)` for other names, or the
    /// `wildcard-rate` refusal; nothing is looked up for a refused name.
    fn admit_wildcard(&self, host: &str, port: u16) -> Result<Option<String>, Deny> {
        Ok(self
            .wildcards
            .admit(host, port, std::time::Instant::now())?
            .detail())
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
        let upstream = match &config.upstream {
            None => String::new(),
            Some(upstream) if upstream.all => {
                format!(", every destination through the upstream proxy {upstream}")
            }
            Some(upstream) => format!(", through the upstream proxy {upstream}"),
        };
        eprintln!(
            "agentc egress-proxy: proxy on {}, DNS stub on {}, {}{upstream}",
            server.local_addr(),
            server
                .dns_addr()
                .map_or_else(|| "none".to_string(), |a| format!("{a} (UDP and TCP)")),
            start::counts(
                config.allow.len(),
                config.allow_cidrs.len(),
                config.relays.len()
            ),
        );
        server.run(start::shutdown_signal()).await
    })
}

/// The bound listeners, ready to serve.
#[derive(Debug)]
pub struct Server {
    /// The proxy's state directory ([`crate::state`]), where a replay stop is marked.
    state_dir: Option<std::path::PathBuf>,
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

    /// As [`Server::bind`], with the decision lines sent to `sink`; the credentials' values
    /// and placeholders are read from the process's environment, by name.
    pub async fn bind_with_sink(config: &Config, sink: Sink) -> Result<Server, EgressError> {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        Server::bind_with_env(config, sink, &env).await
    }

    /// As [`Server::bind_with_sink`], with the credentials' values and placeholders read from
    /// `env` (tests); the launch CA is made and written before anything is bound.
    pub async fn bind_with_env(
        config: &Config,
        sink: Sink,
        env: &BTreeMap<String, String>,
    ) -> Result<Server, EgressError> {
        config.limits.check()?;
        let sink = match sink {
            Sink::Stdout => {
                let audit = Arc::new(Audit::open(
                    config.audit_dir.as_deref().map(std::path::Path::new),
                )?);
                crate::audit::register(&audit);
                Sink::Audit(audit)
            }
            other => other,
        };
        let state_dir = config.audit_dir.as_deref().map(std::path::Path::new);
        // A proxy that stopped on a replay stays stopped, whoever starts it again.
        if let Some(stopped) = crate::state::replay_stop(state_dir) {
            return Err(stopped);
        }
        let intercept = Intercept::start(&config.credentials, env, state_dir)?.map(Arc::new);
        let upstream_tls = chain::tls_client(config)?;
        let upstream_auth = match &config.upstream {
            Some(upstream) => upstream.authorizations(env)?,
            None => Vec::new(),
        };
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
                let (udp, tcp) = dns_stub::bind(address).await?;
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
            state_dir: config.audit_dir.as_ref().map(std::path::PathBuf::from),
            listener,
            dns_udp,
            dns_tcp,
            relays,
            shared: Arc::new(Shared {
                policy: config.policy(),
                limits: config.limits,
                sink,
                slots: Arc::new(Semaphore::new(config.limits.max_connections)),
                resolver: Arc::new(SystemResolver),
                wildcards: Arc::new(WildcardLimiter::new(
                    &config.allow,
                    config.limits.wildcard_names_per_minute,
                )),
                intercept,
                upstream_tls,
                upstream_auth,
            }),
        })
    }

    /// The server with its names looked up by `resolver` instead of the system's (tests: a
    /// lookup that is slow, or that reports when it begins).
    pub fn with_resolver(mut self, resolver: Arc<dyn Resolve>) -> Server {
        match Arc::get_mut(&mut self.shared) {
            Some(shared) => shared.resolver = resolver,
            // Not served yet, so never shared; rebuilt all the same rather than ignored.
            None => {
                self.shared = Arc::new(Shared {
                    policy: self.shared.policy.clone(),
                    limits: self.shared.limits,
                    sink: self.shared.sink.clone(),
                    slots: self.shared.slots.clone(),
                    resolver,
                    wildcards: self.shared.wildcards.clone(),
                    intercept: self.shared.intercept.clone(),
                    upstream_tls: self.shared.upstream_tls.clone(),
                    upstream_auth: self.shared.upstream_auth.clone(),
                })
            }
        }
        self
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

    /// Serves until `shutdown` resolves (`Ok`), or until a credential replay stops the proxy
    /// (`--on-replay=stop`: [`EgressError::Replayed`], after a moment for the refusal to reach
    /// its client); connections in flight end with the runtime.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), EgressError> {
        let stop = self.shared.intercept.as_ref().map(|i| i.stop.clone());
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
        // The rate limit's summaries are written when their window ends.
        if self.shared.sink.audit().is_some() {
            let shared = self.shared.clone();
            tasks.spawn(async move {
                let mut ticks = tokio::time::interval(Duration::from_secs(1));
                loop {
                    ticks.tick().await;
                    if let Some(audit) = shared.sink.audit() {
                        audit.tick();
                    }
                }
            });
        }
        let sink = self.shared.sink.clone();
        tasks.spawn(serve_proxy(self.listener, self.shared));
        let replayed = async {
            match stop {
                Some(stop) => stop.notified().await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            _ = shutdown => Ok(()),
            _ = replayed => {
                // Marked first: a proxy started again on the directory does not serve.
                crate::state::note_replay_stop(self.state_dir.as_deref());
                tokio::time::sleep(Duration::from_millis(200)).await;
                Err(EgressError::Replayed(
                    "a placeholder was sent where its credential is not bound (see the \
                     credential-replay line)"
                        .into(),
                ))
            }
        };
        tasks.abort_all();
        // What the rate limit counted and has not written yet.
        if let Some(audit) = sink.audit() {
            audit.finish();
        }
        outcome
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
    let (stream, capture) = Recording::new(stream);
    let service = service_fn(move |request| {
        served.store(true, Ordering::Relaxed);
        // Called as soon as hyper has parsed the head: the decision line is written here,
        // before this returns, and whatever the request causes runs in a task of its own, so
        // a client that half-closes or leaves cannot take the line (or the rest) with it.
        let pending = start(request, client, &shared, &permit);
        async move { Ok::<_, Infallible>(pending.response().await) }
    });
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout())
        .max_buf_size(limits.max_header_bytes)
        // A client that sends its request and half-closes (`printf ... | nc`) gets its answer.
        .half_close(true)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
    if let Err(error) = served {
        // A keep-alive connection that goes quiet after a request is no refusal; a request
        // head that never completes (slowloris), or that the client abandons, is.
        let partial = capture.request_line();
        let unfinished = partial.is_some() && (error.is_timeout() || error.is_incomplete_message());
        let first_head_timed_out = error.is_timeout() && !served_any.load(Ordering::Relaxed);
        let refused = error.is_parse() || error.is_parse_too_large();
        if refused || first_head_timed_out || unfinished {
            let mut record = Record::new(Kind::Connection, client, Reason::BadRequest);
            record.detail = Some(error.to_string());
            record.request_line = if refused {
                capture.refused_line()
            } else {
                partial
            };
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

/// What the service answers: now, or when the request's own task has an answer.
enum Pending {
    Ready(Response<Body>),
    Later(oneshot::Receiver<Response<Body>>),
}

impl Pending {
    async fn response(self) -> Response<Body> {
        match self {
            Pending::Ready(response) => response,
            Pending::Later(answer) => answer.await.unwrap_or_else(|_| {
                text(
                    502,
                    "agentc egress proxy: the request ended without an answer\n".into(),
                )
            }),
        }
    }
}

/// Decides a parsed request and writes its decision line, synchronously; starts what an
/// allowed request needs in a spawned task (which hyper cannot cancel).
///
/// A refusal by form or name is the decision. An allowed forward request is decided here too
/// (`allow`), then resolved and sent by [`forward`]. An allowed CONNECT is answered `200` and
/// decided by [`tunnel`] once it has checked the client's first bytes.
fn start(
    request: Request<Incoming>,
    client: SocketAddr,
    shared: &Arc<Shared>,
    permit: &Arc<OwnedSemaphorePermit>,
) -> Pending {
    let kind = if request.method() == Method::CONNECT {
        Kind::Connect
    } else {
        Kind::Forward
    };
    if let Some(refused) = intercept::screen_head(shared, &request, kind, client) {
        return Pending::Ready(refused);
    }
    let target = request.uri().to_string();
    let (host, port, path) = match request::classify(request.method().as_str(), &target) {
        Err(deny) => {
            let mut line = Record::new(kind, client, deny.reason);
            line.detail = Some(format!("{} {target}: {}", request.method(), deny.detail));
            shared.emit(line);
            return Pending::Ready(refusal(&deny));
        }
        Ok(Target::Health) => return Pending::Ready(text(200, "ok\n".into())),
        Ok(Target::Ca(file)) => {
            let asked = format!("{} {target}", request.method());
            return Pending::Ready(intercept::ca_response(shared, file, kind, client, &asked));
        }
        Ok(Target::Connect { host, port }) => (host, port, None),
        Ok(Target::Forward { host, port, path }) => (host, port, Some(path)),
    };
    let mut line = record(kind, client, &host, port, Reason::Allowed);
    let decided = shared.policy.decide_name(&host, port).and_then(|name| {
        if path.is_some() && port == 443 {
            Err(Deny::new(
                Reason::NotTls,
                "plain http:// to port 443, which carries TLS: use https:// (a CONNECT tunnel)",
            ))
        } else {
            Ok(name)
        }
    });
    let decided = decided.and_then(|name| {
        // A forward request's decision is made here: a wildcard name is counted now.
        if path.is_some() {
            line.detail = shared.admit_wildcard(&name, port)?;
        }
        Ok(name)
    });
    let name = match decided {
        Ok(name) => name,
        Err(deny) => {
            line.set_reason(deny.reason);
            line.detail = Some(deny.detail.clone());
            shared.emit(line);
            return Pending::Ready(refusal(&deny));
        }
    };
    line.host = Some(name);
    match path {
        None => {
            tokio::spawn(tunnel(request, line, shared.clone(), permit.clone()));
            Pending::Ready(text(200, String::new()))
        }
        Some(path) => {
            // A body is searched for placeholders before the decision: nothing leaves first.
            let screen = shared
                .intercept
                .clone()
                .filter(|_| !hyper::body::Body::is_end_stream(request.body()));
            if screen.is_none() {
                shared.emit(line.clone());
            }
            let (answer, later) = oneshot::channel();
            let shared = shared.clone();
            // The slot stays taken until the request is done, even if the client has left.
            let permit = permit.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let _ = answer.send(forward_screened(request, line, path, shared, screen).await);
            });
            Pending::Later(later)
        }
    }
}

/// Looks up a name the allowlist allows on `port`: the one place the proxy resolves, reached
/// only after the request's decision line was written ("name decided, about to resolve").
/// Every address is checked against the ranges before any is connected to.
async fn resolve(
    shared: &Shared,
    host: &str,
    port: u16,
    deadline: Instant,
) -> Result<Vec<SocketAddr>, Deny> {
    // An address the allowlist names (an address or range entry decided it): nothing to look
    // up, and the ranges do not apply (the profile named it).
    if let Some(ip) = crate::host::ip_target(host) {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let resolved = tokio::time::timeout_at(deadline, shared.resolver.lookup(host, port))
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
    Ok(addresses)
}

/// Resolves a decided name once ([`resolve`]) and connects to one of its checked addresses:
/// the only way the proxy opens a connection for a request. With an upstream proxy that
/// carries `host`, a tunnel through it instead ([`chain::tunnel`]): the upstream resolves.
async fn open(shared: &Shared, host: &str, port: u16) -> Result<(SocketAddr, Conn), Deny> {
    if let Some(upstream) = shared.policy.upstream_for(host) {
        return chain::tunnel(shared, upstream, host, port).await;
    }
    let limit = shared.limits.connect_timeout();
    let deadline = Instant::now() + limit;
    let addresses = resolve(shared, host, port, deadline).await?;
    let mut last = String::from("no address");
    for address in addresses {
        match tokio::time::timeout_at(deadline, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok((address, Conn::Tcp(stream)));
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

/// Sends `first` to `upstream`, then copies both ways (spliced in the kernel on Linux) until
/// both ends closed, either failed or [`Limits::idle_timeout`] passed without a byte; emits
/// `line` (the close line) with the bytes each way.
async fn relay(
    client: ClientIo,
    first: Vec<u8>,
    mut upstream: Conn,
    mut line: Record,
    shared: &Shared,
) {
    let counters = Arc::new(Counters::new());
    let relayed = async {
        upstream.write_all(&first).await?;
        counters.up.fetch_add(first.len() as u64, Ordering::Relaxed);
        counters.touch();
        match (client, upstream) {
            #[cfg(target_os = "linux")]
            (ClientIo::Tcp(client), Conn::Tcp(upstream)) => {
                splice::both_ways(&client, &upstream, &counters).await
            }
            (mut client, upstream) => copy_both_ways(&mut client, upstream, &counters).await,
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
    upstream: Conn,
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

#[cfg(test)]
mod tests {
    use super::start::counts;

    #[test]
    fn the_start_line_counts_in_plurals() {
        assert_eq!(
            counts(1, 0, 1),
            "1 allowlist entry, 0 allowed ranges, 1 relay"
        );
        assert_eq!(
            counts(3, 3, 2),
            "3 allowlist entries, 3 allowed ranges, 2 relays"
        );
    }
}
