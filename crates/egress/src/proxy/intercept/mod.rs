//! The tunnels the proxy terminates: those to a host with a bound credential, and only those
//! (every other CONNECT stays a spliced tunnel with its SNI check, `super::tunnel`).
//!
//! After the CONNECT's decision line (its first bytes, a ClientHello whose SNI is the CONNECT
//! host, checked as for any tunnel): the client's handshake is completed with the launch CA's
//! leaf for the host, HTTP/2 or HTTP/1.1 by its ALPN. Nothing has left the proxy yet. Each
//! request inside is then its own decision ([`exchange`]): its `Host`/`:authority` must name
//! the CONNECT host (`421` otherwise), it must carry no other credential's placeholder (`403`, a
//! `credential-replay` line), the client's own credential headers are dropped and the real ones
//! set; only after its decision line is the upstream connected (once per tunnel, at its first
//! allowed request: resolved, its addresses checked, its TLS verified against Mozilla's roots
//! and the profile's CAs, HTTP/2 or HTTP/1.1 by its own ALPN; a request is translated when the
//! two sides chose differently) and the request sent. Responses stream frame by frame (SSE);
//! a WebSocket upgrade (HTTP/1.1 on both sides) is relayed after its `101`.
//!
//! Also here: what the proxy holds for its credentials ([`Intercept`]: the real values read
//! from its environment at start, the placeholders, the launch CA, the upstream trust) and the
//! placeholder search of request heads that every CONNECT and forward request passes
//! ([`Intercept::replay_in_head`]).

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{HeaderMap, HeaderValue, Method, Uri};
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::server::{Acceptor, ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, ServerConfig};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio_rustls::LazyConfigAcceptor;

use super::client_io::ClientIo;
use super::counted::{with_idle, Counters};
use super::Shared;
use crate::ca::{read_certificates, upstream_roots, LaunchCa};
use crate::credential::{placeholder_variable, Credential, CredentialConfig, OnReplay};
use crate::error::EgressError;
use crate::log::{Kind, Record};
use crate::policy::{Deny, Reason};
use crate::replay::{Found, Placeholders};
use crate::scrub::{Needle, Needles};

mod exchange;
mod screened;
mod scrubbed;
pub(super) use screened::{found_of, screen, Screened};
pub use screened::{PREREAD, PREREAD_BUDGET};

/// The HTTP/2 streams a terminated tunnel's client may open at once, and the flow-control
/// windows of both sides (what a peer may send before the proxy reads it): with
/// [`PREREAD_BUDGET`] and the connection slots, they bound the proxy's memory.
pub(super) const H2_STREAMS: u32 = 64;
pub(super) const H2_STREAM_WINDOW: u32 = 256 << 10;
pub(super) const H2_CONNECTION_WINDOW: u32 = 1 << 20;

/// The ALPN protocols a terminated tunnel may speak.
const H2: &[u8] = b"h2";
const HTTP11: &[u8] = b"http/1.1";

mod upstream;
pub(super) use upstream::handshake_failure_reason;

/// One credential as the proxy holds it.
#[derive(Debug)]
pub(super) struct Held {
    pub(super) credential: Credential,
    /// The header's value, made once from the real value(s); marked sensitive.
    pub(super) value: HeaderValue,
}

/// What the proxy holds for its credentials.
pub(super) struct Intercept {
    pub(super) held: Vec<Held>,
    /// Every value the proxy holds (each key, each basic credential's user), searched for in
    /// what bound hosts return ([`scrubbed`]).
    pub(super) secrets: Arc<Needles>,
    pub(super) placeholders: Placeholders,
    /// The placeholders again, for request bodies searched as they stream ([`screened`]).
    pub(super) placeholder_needles: Arc<Needles>,
    pub(super) ca: LaunchCa,
    /// What the workload trusts ([`LaunchCa::bundle`]), served with the CA's certificate at
    /// [`crate::request::CA_PATH_PREFIX`] for a workload that cannot mount the proxy's volume
    /// (a Kubernetes pod).
    pub(super) bundle: String,
    /// Upstream TLS settings (Mozilla's roots and the profile's CAs): for a client that speaks
    /// HTTP/2, offering HTTP/2 and HTTP/1.1; for one that speaks HTTP/1.1, HTTP/1.1 alone (so
    /// that its upgrades can cross).
    pub(super) upstream: [Arc<ClientConfig>; 2],
    pub(super) on_replay: OnReplay,
    /// What request bodies being pre-read may hold at once ([`screened::PREREAD_BUDGET`]).
    pub(super) preread: Arc<tokio::sync::Semaphore>,
    /// Notified when a replay stops the proxy ([`OnReplay::Stop`]).
    pub(super) stop: Arc<Notify>,
}

impl std::fmt::Debug for Intercept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never a value: only the names.
        let names: Vec<&str> = self
            .held
            .iter()
            .map(|h| h.credential.name.as_str())
            .collect();
        f.debug_struct("Intercept")
            .field("credentials", &names)
            .finish_non_exhaustive()
    }
}

impl Intercept {
    /// The text of a file served under [`crate::request::CA_PATH_PREFIX`].
    pub(super) fn ca_file(&self, file: crate::request::CaFile) -> &str {
        match file {
            crate::request::CaFile::Certificate => self.ca.certificate_pem(),
            crate::request::CaFile::Bundle => &self.bundle,
        }
    }

    /// Reads the credentials' values and placeholders from `env` (the proxy's environment,
    /// by name only), makes the launch CA and writes what the workload trusts into the
    /// configuration's `ca_dir`. `None` without credentials.
    pub(super) fn start(
        config: &CredentialConfig,
        env: &BTreeMap<String, String>,
        state_dir: Option<&std::path::Path>,
    ) -> Result<Option<Intercept>, EgressError> {
        if config.is_empty() {
            return Ok(None);
        }
        let get = |credential: &Credential, variable: &str| {
            env.get(variable)
                .filter(|value| !value.is_empty())
                .cloned()
                .ok_or_else(|| EgressError::CredentialUnset {
                    credential: credential.name.clone(),
                    variable: variable.to_string(),
                })
        };
        let mut held = Vec::new();
        let mut secrets = Vec::new();
        let mut placeholders = Vec::new();
        let mut hosts = Vec::new();
        for credential in &config.credentials {
            let value = get(credential, &credential.env)?;
            let user = match &credential.user_env {
                Some(variable) => Some(get(credential, variable)?),
                None => None,
            };
            secrets.push(Needle::new(&credential.name, "key", value.as_bytes()));
            if let Some(user) = &user {
                secrets.push(Needle::new(&credential.name, "user", user.as_bytes()));
            }
            for variable in credential.variables() {
                let placeholder = get(credential, &placeholder_variable(variable))?;
                placeholders.push((credential.name.clone(), variable.to_string(), placeholder));
            }
            let mut value = HeaderValue::from_str(
                &credential.header_value(&value, user.as_deref()),
            )
            .map_err(|_| EgressError::Credential {
                credential: credential.name.clone(),
                reason: format!(
                    "the value of {} cannot be sent in a header (a control character)",
                    credential.env
                ),
            })?;
            value.set_sensitive(true);
            for (host, _) in &credential.hosts {
                if !hosts.contains(host) {
                    hosts.push(host.clone());
                }
            }
            held.push(Held {
                credential: credential.clone(),
                value,
            });
        }
        let upstream_cas = read_certificates(&config.upstream_ca)?;
        let ca = crate::state::launch_ca(state_dir, &hosts)?;
        let bundle = ca.bundle(&upstream_cas);
        if let Some(dir) = &config.ca_dir {
            ca.write(std::path::Path::new(dir), &bundle)?;
        }
        let roots = Arc::new(upstream_roots(&upstream_cas));
        let client = |alpn: &[&[u8]]| -> Result<Arc<ClientConfig>, EgressError> {
            let mut config = ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map_err(|error| EgressError::Ca(error.to_string()))?
            .with_root_certificates(roots.clone())
            .with_no_client_auth();
            config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
            Ok(Arc::new(config))
        };
        let placeholder_needles = placeholders
            .iter()
            .map(|(credential, _, placeholder)| {
                Needle::new(credential, "placeholder", placeholder.as_bytes())
            })
            .collect();
        Ok(Some(Intercept {
            held,
            secrets: Arc::new(Needles::new(secrets)),
            placeholders: Placeholders::new(placeholders),
            placeholder_needles: Arc::new(Needles::new(placeholder_needles)),
            ca,
            bundle,
            upstream: [client(&[H2, HTTP11])?, client(&[HTTP11])?],
            on_replay: config.on_replay,
            preread: screened::budget(),
            stop: Arc::new(Notify::new()),
        }))
    }

    /// The credentials bound to `host:port`.
    pub(super) fn bound(&self, host: &str, port: u16) -> Vec<&Held> {
        self.held
            .iter()
            .filter(|held| held.credential.binds(host, port))
            .collect()
    }

    /// A placeholder in a request's line or headers, counted where `counts` says.
    pub(super) fn replay_in_head(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        counts: impl Fn(&str) -> bool,
    ) -> Option<(Found, String)> {
        let line = format!("{method} {uri}");
        if let Some(found) = self.placeholders.find(line.as_bytes(), &counts) {
            return Some((found, "the request line".into()));
        }
        headers.iter().find_map(|(name, value)| {
            self.placeholders
                .find_in_header(value.as_bytes(), &counts)
                .map(|found| (found, format!("the header {name}")))
        })
    }

    /// After a replay was refused: stops the proxy when so configured.
    pub(super) fn replayed(&self) {
        if self.on_replay == OnReplay::Stop {
            self.stop.notify_one();
        }
    }
}

/// The refusal of a replay: the detail names the credential, where the placeholder was seen
/// and in which form (never the placeholder).
pub(super) fn replay_deny(found: &Found, place: &str, destination: &str) -> Deny {
    Deny::new(
        Reason::CredentialReplay,
        format!(
            "the placeholder of {} ({}) in {place} ({}), sent to {destination}, where that \
             credential is not bound: nothing was sent",
            found.credential, found.variable, found.how
        ),
    )
}

/// The leaf of a terminated tunnel, whatever the client asks.
#[derive(Debug)]
struct Leaf(Arc<CertifiedKey>);

impl ResolvesServerCert for Leaf {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// The client's first bytes (read by the tunnel's check), then the client.
struct Prefixed {
    first: Vec<u8>,
    at: usize,
    client: ClientIo,
}

impl AsyncRead for Prefixed {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.at < this.first.len() {
            let n = (this.first.len() - this.at).min(buf.remaining());
            buf.put_slice(&this.first[this.at..this.at + n]);
            this.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.client).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().client).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().client).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.client.is_write_vectored()
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().client).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().client).poll_shutdown(cx)
    }
}

/// A terminated tunnel after its decision line `line` was written: see the module
/// documentation. The close line (same id) says how it ended.
pub(super) async fn serve(
    client: ClientIo,
    first: Vec<u8>,
    line: Record,
    shared: Arc<Shared>,
    intercept: Arc<Intercept>,
) {
    let host = line.host.clone().unwrap_or_default();
    let port = line.port.unwrap_or(443);
    let refused = |deny: Deny| {
        let mut close = line.close(deny.reason);
        close.detail = Some(deny.detail);
        shared.emit(close);
    };
    let start = match LazyConfigAcceptor::new(
        Acceptor::default(),
        Prefixed {
            first,
            at: 0,
            client,
        },
    )
    .await
    {
        Ok(start) => start,
        Err(error) => {
            return refused(Deny::new(
                Reason::NotTls,
                format!("the client's TLS handshake failed: {error}"),
            ))
        }
    };
    let leaf = match intercept.ca.leaf(&host) {
        Ok(leaf) => leaf,
        Err(error) => return refused(Deny::new(Reason::ConnectFailed, error.to_string())),
    };
    let mut server = match ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    {
        Ok(builder) => builder
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Leaf(leaf))),
        Err(error) => return refused(Deny::new(Reason::ConnectFailed, error.to_string())),
    };
    server.alpn_protocols = vec![H2.to_vec(), HTTP11.to_vec()];
    let client_tls = match start.into_stream(Arc::new(server)).await {
        Ok(stream) => stream,
        Err(error) => {
            return refused(Deny::new(
                Reason::NotTls,
                format!(
                    "the client's TLS handshake failed (does it trust the launch CA?): {error}"
                ),
            ))
        }
    };
    let h2 = client_tls.get_ref().1.alpn_protocol() == Some(H2);
    let counters = Arc::new(Counters::new());
    let context = Arc::new(exchange::Context {
        shared: shared.clone(),
        intercept,
        host,
        port,
        client: line.client,
        counters: counters.clone(),
        h2,
        upstream: tokio::sync::Mutex::new(None),
        address: std::sync::Mutex::new(None),
    });
    // The idle timeout counts the client's bytes too: a tunnel whose upstream is not open yet
    // (no request so far) is idle when its client is.
    counters.touch();
    let served = with_idle(
        exchange::run(context.clone(), TokioIo::new(client_tls), h2),
        &counters,
        shared.limits.idle_timeout(),
    )
    .await;
    let mut close = line.close(Reason::Allowed);
    close.address = context.address.lock().ok().and_then(|address| *address);
    if served.is_none() {
        close.detail = Some("closed after the idle timeout".into());
    } else if let Some(Err(error)) = served {
        close.detail = Some(error);
    }
    close.bytes_up = Some(counters.up.load(Ordering::Relaxed));
    close.bytes_down = Some(counters.down.load(Ordering::Relaxed));
    shared.emit(close);
}

/// The HTTP server of a terminated tunnel's client side.
pub(super) async fn serve_client<I, S, B>(
    io: I,
    h2: bool,
    service: S,
    shared: &Shared,
) -> Result<(), String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if h2 {
        // Bounded: what a client that never reads (or floods streams) can make the proxy hold.
        http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .max_concurrent_streams(H2_STREAMS)
            .initial_stream_window_size(H2_STREAM_WINDOW)
            .initial_connection_window_size(H2_CONNECTION_WINDOW)
            .max_send_buf_size(H2_STREAM_WINDOW as usize)
            .serve_connection(io, service)
            .await
            .map_err(|error| error.to_string())
    } else {
        http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(shared.limits.header_timeout())
            .max_buf_size(shared.limits.max_header_bytes)
            .serve_connection(io, service)
            .with_upgrades()
            .await
            .map_err(|error| error.to_string())
    }
}

/// The answer to `GET /agentc/egress-ca/...` (`asked`: its request line): the file, or, from a
/// proxy that holds no credentials, a refusal and its line.
pub(super) fn ca_response(
    shared: &Shared,
    file: crate::request::CaFile,
    kind: crate::log::Kind,
    client: SocketAddr,
    asked: &str,
) -> hyper::Response<super::Body> {
    if let Some(intercept) = &shared.intercept {
        return super::text(200, intercept.ca_file(file).to_string());
    }
    let deny = Deny::new(
        Reason::BadRequest,
        "no launch CA to serve: this proxy holds no credentials",
    );
    let mut line = crate::log::Record::new(kind, client, deny.reason);
    line.detail = Some(format!("{asked}: {}", deny.detail));
    shared.emit(line);
    super::refusal(&deny)
}

/// The address a terminated request came from, for its line.
pub(super) fn request_line(client: SocketAddr, host: &str, port: u16, reason: Reason) -> Record {
    super::record(crate::log::Kind::Request, client, host, port, reason)
}

/// Refuses a CONNECT or forward request whose line or headers carry any placeholder (no
/// credential is ever sent that way), with its one decision line: `None` when there is none
/// (or the proxy holds no credentials).
pub(super) fn screen_head(
    shared: &Shared,
    request: &http::Request<hyper::body::Incoming>,
    kind: Kind,
    client: SocketAddr,
) -> Option<http::Response<super::Body>> {
    let intercept = shared.intercept.as_ref()?;
    let (found, place) =
        intercept.replay_in_head(request.method(), request.uri(), request.headers(), |_| true)?;
    let what = if kind == Kind::Connect {
        "a CONNECT request"
    } else {
        "a plain-HTTP request"
    };
    let deny = replay_deny(&found, &format!("{place} of {what}"), "the proxy");
    Some(replay_refusal(
        shared,
        intercept,
        Record::new(Kind::CredentialReplay, client, Reason::CredentialReplay),
        &found,
        &deny,
    ))
}

/// Writes a replay's one line (`line` as far as it is known, made a `credential-replay`
/// line) and answers it; stops the proxy when so configured.
pub(super) fn replay_refusal(
    shared: &Shared,
    intercept: &Intercept,
    mut line: Record,
    found: &Found,
    deny: &Deny,
) -> http::Response<super::Body> {
    line.kind = Kind::CredentialReplay;
    line.set_reason(Reason::CredentialReplay);
    line.credential = Some(found.credential.clone());
    line.detail = Some(deny.detail.clone());
    shared.emit(line);
    intercept.replayed();
    super::refusal(deny)
}

/// A placeholder in the first request head of a plain-HTTP tunnel (its raw bytes).
pub(super) fn replay_in_raw_head(intercept: &Intercept, head: &[u8]) -> Option<Deny> {
    let found = intercept.placeholders.find(head, |_| true).or_else(|| {
        head.split(|b| *b == b'\n')
            .filter_map(|line| {
                line.iter()
                    .position(|b| *b == b':')
                    .map(|at| &line[at + 1..])
            })
            .find_map(|value| intercept.placeholders.find_in_header(value, |_| true))
    })?;
    Some(replay_deny(
        &found,
        "the first request of a plain-HTTP tunnel",
        "the proxy",
    ))
}
