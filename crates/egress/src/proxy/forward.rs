//! A forwarded plain-HTTP request after its decision line ([`forward`]): sent to its host in
//! origin form, or to the upstream proxy in absolute form ([`super::chain`]), its response
//! streamed back, its close line written when the exchange ends.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use http::header::{HeaderValue, HOST};
use http::{Request, Response, Version};
use hyper_util::rt::TokioIo;

use super::counted::{with_idle, Counted, Counters};
use super::{boxed, chain, intercept, open, refusal, text, Body, Intercept, Shared};
use crate::log::Kind;
use crate::log::Record;
use crate::policy::{Deny, Reason};
use crate::request;
use hyper::body::Incoming;

/// An allowed forward request after its decision line: resolves, connects, sends the request
/// upstream and returns the response; the close line (same id) says how it ended.
pub(super) async fn forward(
    request: Request<Body>,
    line: Record,
    path: &str,
    shared: Arc<Shared>,
) -> Response<Body> {
    let host = line.host.clone().unwrap_or_default();
    let port = line.port.unwrap_or(80);
    let refused = |deny: &Deny| {
        let mut close = line.close(deny.reason);
        close.detail = Some(deny.detail.clone());
        shared.emit(close);
        refusal(deny)
    };
    // Through an upstream proxy, the request goes to it in absolute form.
    let via = shared.policy.upstream_for(&host).cloned();
    let opened = match &via {
        Some(via) => chain::connect(&shared, via.for_http()).await,
        None => open(&shared, &host, port).await,
    };
    let (address, upstream) = match opened {
        Ok(opened) => opened,
        Err(deny) => return refused(&deny),
    };
    let (mut parts, body) = request.into_parts();
    let authority = if port == 80 {
        host.clone()
    } else {
        format!("{host}:{port}")
    };
    let target = match &via {
        Some(_) => format!("http://{authority}{path}"),
        None => path.to_string(),
    };
    let (Ok(uri), Ok(host_value)) = (target.parse(), HeaderValue::from_str(&authority)) else {
        return refused(&Deny::new(
            Reason::BadRequest,
            "a path that is not a valid URI",
        ));
    };
    request::strip_hop_by_hop(&mut parts.headers);
    parts.uri = uri;
    parts.version = Version::HTTP_11;
    parts.headers.insert(HOST, host_value);
    if let Some(auth) = via
        .as_ref()
        .and_then(|via| shared.upstream_auth(via.for_http()))
    {
        parts
            .headers
            .insert(http::header::PROXY_AUTHORIZATION, auth.clone());
    }
    let counters = Arc::new(Counters::new());
    let io = TokioIo::new(Counted {
        inner: upstream,
        counters: counters.clone(),
    });
    let (mut sender, connection) = match hyper::client::conn::http1::handshake(io).await {
        Ok(pair) => pair,
        Err(error) => {
            return refused(&Deny::new(Reason::ConnectFailed, error.to_string()));
        }
    };
    let mut close = line.close(Reason::Allowed);
    close.address = Some(address);
    let idle = shared.limits.idle_timeout();
    let watched = counters.clone();
    let sink = shared.sink.clone();
    tokio::spawn(async move {
        if with_idle(connection, &watched, idle).await.is_none() {
            close.detail = Some("closed after the idle timeout".into());
        }
        close.bytes_up = Some(watched.up.load(Ordering::Relaxed));
        close.bytes_down = Some(watched.down.load(Ordering::Relaxed));
        sink.emit(close);
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
            response.map(super::boxed)
        }
        Some(Err(error)) => text(
            502,
            format!("agentc egress proxy: upstream error: {error}\n"),
        ),
        None => text(504, "agentc egress proxy: upstream idle timeout\n".into()),
    }
}

/// A forward request after its decision is made or pending: its body searched for
/// placeholders (`intercept`, when the proxy holds credentials and the request has a body;
/// its decision line waits for the pre-read), then sent ([`forward`]); a placeholder found
/// after the pre-read answers `403` and writes the `credential-replay` close line.
pub(super) async fn forward_screened(
    request: Request<Incoming>,
    mut line: Record,
    path: String,
    shared: Arc<Shared>,
    screen: Option<Arc<Intercept>>,
) -> Response<Body> {
    let (request, found_later) = match screen {
        None => (request.map(boxed), None),
        Some(intercept) => {
            match intercept::screen(request, &intercept, Vec::new(), "the proxy").await {
                Ok(intercept::Screened::Whole(request)) => {
                    shared.emit(line.clone());
                    (request, None)
                }
                Ok(intercept::Screened::Streaming(request, later)) => {
                    shared.emit(line.clone());
                    (request, Some((intercept, later)))
                }
                Err((deny, Some(found))) => {
                    let refused =
                        intercept::replay_refusal(&shared, &intercept, line, &found, &deny);
                    return refused;
                }
                Err((deny, None)) => {
                    line.set_reason(deny.reason);
                    line.detail = Some(deny.detail.clone());
                    shared.emit(line);
                    return refusal(&deny);
                }
            }
        }
    };
    let close = line.clone();
    let response = forward(request, line, &path, shared.clone()).await;
    // A placeholder found in the body after its first bytes were sent on.
    let found = found_later.and_then(|(intercept, later)| {
        let found = later.lock().ok().and_then(|mut found| found.take())?;
        Some((intercept, found))
    });
    match found {
        None => response,
        Some((intercept, found)) => {
            let deny =
                intercept::replay_deny(&found, "the body of a plain-HTTP request", "the proxy");
            let mut close = close.close(Reason::CredentialReplay);
            close.kind = Kind::CredentialReplay;
            close.credential = Some(found.credential.clone());
            close.detail = Some(deny.detail.clone());
            shared.emit(close);
            intercept.replayed();
            refusal(&deny)
        }
    }
}
