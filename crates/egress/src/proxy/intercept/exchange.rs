//! One terminated tunnel's requests: each checked, rewritten and logged before it goes to the
//! one upstream connection of the tunnel (made at the first allowed request), its response
//! streamed back; a WebSocket upgrade (HTTP/1.1) relayed both ways after its `101`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http::header::{HeaderName, ACCEPT_ENCODING, HOST, SEC_WEBSOCKET_EXTENSIONS, UPGRADE};
use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use tokio::sync::Mutex;

use super::super::counted::Counters;
use super::screened::{self, Screened};
use super::upstream::Upstream;
use super::{replay_deny, request_line, scrubbed, serve_client, Intercept};
use crate::host::normalize_target;
use crate::policy::{Deny, Reason};
use crate::proxy::{refusal, Body, Shared};
use crate::request::{split_authority, strip_hop_by_hop};

/// The headers a client's own credentials travel in: dropped from every terminated request
/// before the bound credentials are set.
const CREDENTIAL_HEADERS: [&str; 4] = [
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
];

/// What every request of one terminated tunnel shares.
pub(super) struct Context {
    pub(super) shared: Arc<Shared>,
    pub(super) intercept: Arc<Intercept>,
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) client: SocketAddr,
    /// The upstream's bytes (for the close line and the idle timeout).
    pub(super) counters: Arc<Counters>,
    /// Whether the client speaks HTTP/2.
    pub(super) h2: bool,
    /// The upstream connection, once the first request was allowed.
    pub(super) upstream: Mutex<Option<Arc<Upstream>>>,
    /// The address it connected to, for the close line.
    pub(super) address: std::sync::Mutex<Option<SocketAddr>>,
}

/// Serves the client side `client` of a terminated tunnel (HTTP/2 when `h2`) until it ends;
/// `Err` with what ended it abnormally.
pub(super) async fn run<C>(context: Arc<Context>, client: C, h2: bool) -> Result<(), String>
where
    C: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let shared = context.shared.clone();
    let service = service_fn(move |request| {
        let context = context.clone();
        async move { Ok::<_, Infallible>(exchange(request, &context).await) }
    });
    serve_client(client, h2, service, &shared).await
}

impl Context {
    /// The tunnel's upstream connection, connected now if this is its first allowed request.
    async fn upstream(&self) -> Result<Arc<Upstream>, Deny> {
        let mut upstream = self.upstream.lock().await;
        if let Some(open) = upstream.as_ref() {
            return Ok(open.clone());
        }
        let (address, opened) = super::upstream::connect(
            &self.shared,
            &self.intercept,
            &self.host,
            self.port,
            &self.counters,
            self.h2,
        )
        .await?;
        if let Ok(mut recorded) = self.address.lock() {
            *recorded = Some(address);
        }
        let opened = Arc::new(opened);
        *upstream = Some(opened.clone());
        Ok(opened)
    }
}

/// The authority a request names: `:authority` (HTTP/2, or an absolute-form target) and its
/// `Host`; each that is present must be the tunnel's host and port.
fn check_authority(request: &Request<Incoming>, host: &str, port: u16) -> Result<(), Deny> {
    let misdirected = |what: String| Deny::new(Reason::Misdirected, what);
    let mut named = Vec::new();
    if let Some(authority) = request.uri().authority() {
        named.push(("the request's authority", authority.as_str().to_string()));
    }
    for value in request.headers().get_all(HOST) {
        let text = value
            .to_str()
            .map_err(|_| misdirected("a Host header that is not text".into()))?;
        named.push(("Host", text.to_string()));
    }
    if named.is_empty() {
        return Err(misdirected("a request that names no host".into()));
    }
    for (what, authority) in named {
        let (name, named_port) = split_authority(&authority, Some(443))
            .map_err(|deny| misdirected(format!("{what} `{authority}`: {}", deny.detail)))?;
        let same = normalize_target(&name).is_ok_and(|name| name == host) && named_port == port;
        if !same {
            return Err(misdirected(format!(
                "{what} `{authority}` is not the tunnel's {host}:{port} (its CONNECT and SNI)"
            )));
        }
    }
    Ok(())
}

/// One request: decided, logged, rewritten and sent; see the module documentation.
async fn exchange(mut request: Request<Incoming>, context: &Context) -> Response<Body> {
    let Context {
        shared,
        intercept,
        host,
        port,
        client,
        ..
    } = context;
    let bound = intercept.bound(host, *port);
    let names: Vec<String> = bound.iter().map(|h| h.credential.name.clone()).collect();
    let mut line = request_line(*client, host, *port, Reason::Allowed);
    line.credential = Some(names.join(","));
    line.detail = Some(format!("{} request", request.method()));
    let refuse = |mut line: crate::log::Record, deny: Deny| {
        if deny.reason == Reason::CredentialReplay {
            line.kind = crate::log::Kind::CredentialReplay;
        }
        line.set_reason(deny.reason);
        line.detail = Some(deny.detail.clone());
        shared.emit(line);
        if deny.reason == Reason::CredentialReplay {
            intercept.replayed();
        }
        refusal(&deny)
    };
    if let Err(deny) = check_authority(&request, host, *port) {
        return refuse(line, deny);
    }
    // TRACE's answer is the request itself, the key the proxy set included.
    if request.method() == Method::TRACE {
        let deny = Deny::new(
            Reason::MethodRefused,
            format!(
                "TRACE to {host}:{port}, which gets a credential: its answer would be the \
                 request, key included"
            ),
        );
        return refuse(line, deny);
    }
    // A placeholder counts here unless its credential is bound to this host.
    let counts = |credential: &str| !names.iter().any(|name| name == credential);
    if let Some((found, place)) =
        intercept.replay_in_head(request.method(), request.uri(), request.headers(), counts)
    {
        line.credential = Some(found.credential.clone());
        return refuse(line, replay_deny(&found, &place, &format!("{host}:{port}")));
    }
    let scan_body = intercept
        .held
        .iter()
        .any(|held| counts(&held.credential.name));
    let upgrade = request.headers().contains_key(UPGRADE);
    let websocket = request
        .headers()
        .get(UPGRADE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.eq_ignore_ascii_case("websocket"));
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut request));
    let destination = format!("{host}:{port}");
    let (request, later) = if scan_body && !hyper::body::Body::is_end_stream(request.body()) {
        match screened::screen(request, intercept, names.clone(), &destination).await {
            Ok(Screened::Whole(request)) => (request, None),
            Ok(Screened::Streaming(request, later)) => (request, Some(later)),
            Err((deny, found)) => {
                line.credential = found.map(|found| found.credential).or(line.credential);
                return refuse(line, deny);
            }
        }
    } else {
        (request.map(crate::proxy::boxed), None)
    };
    let (mut parts, body) = request.into_parts();
    if !upgrade {
        strip_hop_by_hop(&mut parts.headers);
    } else {
        // The upgrade's own headers cross; any other hop-by-hop or Proxy-* header does not.
        let keep: Vec<(HeaderName, http::HeaderValue)> = ["connection", "upgrade"]
            .iter()
            .filter_map(|name| {
                parts
                    .headers
                    .get(*name)
                    .map(|v| (HeaderName::from_static(name), v.clone()))
            })
            .collect();
        strip_hop_by_hop(&mut parts.headers);
        for (name, value) in keep {
            parts.headers.insert(name, value);
        }
    }
    for name in CREDENTIAL_HEADERS {
        parts.headers.remove(name);
    }
    for held in &bound {
        parts.headers.remove(held.credential.header.as_str());
    }
    for held in &bound {
        if let Ok(name) = HeaderName::from_bytes(held.credential.header.as_bytes()) {
            parts.headers.append(name, held.value.clone());
        }
    }
    // The answer must come in a form the proxy can search: only the codings it decodes, and
    // a WebSocket without extensions (permessage-deflate would hide the frames' bytes).
    parts.headers.insert(
        ACCEPT_ENCODING,
        http::HeaderValue::from_static(scrubbed::ACCEPTED_ENCODINGS),
    );
    parts.headers.remove(SEC_WEBSOCKET_EXTENSIONS);
    // The decision, before anything of the request leaves.
    shared.emit(line.clone());
    let request = Request::from_parts(parts, body);
    // What became of an allowed request that never reached its host: its close line.
    let failed = |deny: Deny| {
        let mut close = line.close(deny.reason);
        close.detail = Some(deny.detail.clone());
        shared.emit(close);
        refusal(&deny)
    };
    let upstream = match context.upstream().await {
        Ok(upstream) => upstream,
        Err(deny) => return failed(deny),
    };
    if upgrade && !upstream.upgrades() {
        return failed(Deny::new(
            Reason::BadRequest,
            "an HTTP/1.1 upgrade to an upstream that speaks HTTP/2 only",
        ));
    }
    let authority = if *port == 443 {
        host.clone()
    } else {
        format!("{host}:{port}")
    };
    let sent = upstream.send(request, &authority).await;
    // A placeholder found in the body as it streamed: the request was cut off.
    if let Some(found) = later.and_then(|later| later.lock().ok().and_then(|mut f| f.take())) {
        let deny = replay_deny(&found, "the request body", &destination);
        let mut close = line.close(Reason::CredentialReplay);
        close.kind = crate::log::Kind::CredentialReplay;
        close.credential = Some(found.credential.clone());
        close.detail = Some(format!(
            "{} (found after the body's first {} KiB had been sent on)",
            deny.detail,
            screened::PREREAD >> 10
        ));
        shared.emit(close);
        intercept.replayed();
        return refusal(&deny);
    }
    let mut response = match sent {
        Ok(response) => response,
        Err(error) => {
            let mut close = line.close(Reason::ConnectFailed);
            close.detail = Some(format!("the upstream's answer failed: {error}"));
            shared.emit(close);
            return crate::proxy::text(
                502,
                format!("agentc egress proxy: upstream error: {error}\n"),
            );
        }
    };
    let report = scrubbed::Report::new(shared.clone(), &line);
    scrubbed::head(&mut response, &intercept.secrets, &report);
    if response.status() == StatusCode::SWITCHING_PROTOCOLS {
        if let Some(client_upgrade) = client_upgrade {
            let upstream_upgrade = hyper::upgrade::on(&mut response);
            let secrets = intercept.secrets.clone();
            tokio::spawn(async move {
                if let (Ok(client), Ok(upstream)) = tokio::join!(client_upgrade, upstream_upgrade) {
                    scrubbed::relay_upgraded(client, upstream, websocket, secrets, report).await;
                }
            });
        }
        return response.map(|_| crate::proxy::empty());
    }
    strip_hop_by_hop(response.headers_mut());
    match scrubbed::body(response, &intercept.secrets, report) {
        Ok(response) => response,
        Err(deny) => {
            let mut close = line.close(deny.reason);
            close.detail = Some(deny.detail.clone());
            shared.emit(close);
            refusal(&deny)
        }
    }
}
