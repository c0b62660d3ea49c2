//! One terminated tunnel's requests: each checked, rewritten and logged before it goes to the
//! one upstream connection of the tunnel (made at the first allowed request), its response
//! streamed back; a WebSocket upgrade (HTTP/1.1) relayed both ways after its `101`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http::header::{HeaderName, HOST, UPGRADE};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::sync::Mutex;

use super::super::counted::Counters;
use super::upstream::Upstream;
use super::{replay_deny, request_line, screen_body, serve_client, Intercept};
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
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut request));
    let request = if scan_body && !hyper::body::Body::is_end_stream(request.body()) {
        match screen_body(request, intercept, counts, &format!("{host}:{port}")).await {
            Ok(request) => request,
            Err((deny, found)) => {
                line.credential = found.map(|found| found.credential).or(line.credential);
                return refuse(line, deny);
            }
        }
    } else {
        request.map(|body| body.boxed())
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
    // The decision, before anything of the request leaves.
    shared.emit(line.clone());
    let request = Request::from_parts(parts, body);
    let upstream = match context.upstream().await {
        Ok(upstream) => upstream,
        Err(deny) => return refusal(&deny),
    };
    if upgrade && !upstream.upgrades() {
        return refusal(&Deny::new(
            Reason::BadRequest,
            "an HTTP/1.1 upgrade to an upstream that speaks HTTP/2 only",
        ));
    }
    let authority = if *port == 443 {
        host.clone()
    } else {
        format!("{host}:{port}")
    };
    let mut response = match upstream.send(request, &authority).await {
        Ok(response) => response,
        Err(error) => {
            return crate::proxy::text(
                502,
                format!("agentc egress proxy: upstream error: {error}\n"),
            )
        }
    };
    if response.status() == StatusCode::SWITCHING_PROTOCOLS {
        if let Some(client_upgrade) = client_upgrade {
            let upstream_upgrade = hyper::upgrade::on(&mut response);
            tokio::spawn(async move {
                if let (Ok(client), Ok(upstream)) = tokio::join!(client_upgrade, upstream_upgrade) {
                    let (mut client, mut upstream) = (TokioIo::new(client), TokioIo::new(upstream));
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                }
            });
        }
        return response.map(|body| body.boxed());
    }
    strip_hop_by_hop(response.headers_mut());
    response.map(|body| body.boxed())
}
