//! A forwarded plain-HTTP request after its decision line ([`forward`]): sent to its host in
//! origin form, or to the upstream proxy in absolute form ([`super::chain`]), its response
//! streamed back, its close line written when the exchange ends.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use http::header::{HeaderValue, HOST};
use http::{Request, Response, Version};
use hyper_util::rt::TokioIo;

use super::counted::{with_idle, Counted, Counters};
use super::{chain, open, refusal, text, Body, Shared};
use crate::log::Record;
use crate::policy::{Deny, Reason};
use crate::request;

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
