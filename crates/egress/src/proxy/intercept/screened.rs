//! Request bodies searched for placeholders as they stream, through a fixed window
//! ([`crate::scrub::Window`]): the proxy's memory does not grow with a body's size.
//!
//! A body is read first up to [`PREREAD`] bytes, searched as it arrives, before the request's
//! decision: a body that ends within it (most API calls) is decided whole, as a head is, and
//! nothing of a request with a placeholder leaves the proxy. A longer body is then sent on as
//! it streams, still searched: the bytes that may begin a placeholder are held back until
//! they cannot, so a placeholder found later never leaves either; the request is then cut off
//! (the upstream sees an incomplete body, never a whole request), the sandbox gets a `403`, and
//! a `credential-replay` line (the request's close line) says where it was found.
//!
//! The pre-reads of all requests together hold at most [`PREREAD_BUDGET`] bytes; a request
//! that would pass it is refused (`503`, `proxy-busy`) rather than grow the proxy.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::Request;
use http_body_util::BodyExt;
use hyper::body::{Body as _, Frame, Incoming, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{replay_deny, Intercept};
use crate::policy::{Deny, Reason};
use crate::proxy::{Body, BoxError};
use crate::replay::Found;
use crate::scrub::{Hit, Window};

/// How much of a request body is read before its decision.
pub const PREREAD: usize = 256 << 10;

/// The bytes the pre-reads of all requests may hold at once.
pub const PREREAD_BUDGET: usize = 64 << 20;

/// The budget's unit: one permit a KiB.
const PERMIT: usize = 1 << 10;

/// The permits of [`PREREAD_BUDGET`].
pub(super) fn budget() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(PREREAD_BUDGET / PERMIT))
}

/// A placeholder found in a body after its decision, for the close line.
pub(in crate::proxy) type Later = Arc<Mutex<Option<Found>>>;

/// A screened request.
pub(in crate::proxy) enum Screened {
    /// Its body ended within the pre-read, with no placeholder: decide it whole.
    Whole(Request<Body>),
    /// Its body goes on: send it as it streams; a placeholder found later is put in the
    /// [`Later`] and ends the body in an error.
    Streaming(Request<Body>, Later),
}

/// A request body searched as it streams.
struct ScanBody {
    inner: Incoming,
    window: Window,
    intercept: Arc<Intercept>,
    found: Later,
    /// The upstream body has ended (its trailers may wait in `trailers`).
    ended: bool,
    trailers: Option<http::HeaderMap>,
}

impl ScanBody {
    /// The placeholder found so far, as the replay line names it.
    fn found(&self) -> Option<Found> {
        let hits = self.window.hits();
        let hit = hits.first()?;
        Some(found_of(&self.intercept, hit))
    }
}

/// The [`Found`] of a placeholder hit: its credential, the variable, the form.
pub(in crate::proxy) fn found_of(intercept: &Intercept, hit: &Hit) -> Found {
    let variable = intercept
        .held
        .iter()
        .find(|held| held.credential.name == hit.credential)
        .map(|held| match (hit.part, &held.credential.user_env) {
            ("user", Some(user)) => user.clone(),
            _ => held.credential.env.clone(),
        })
        .unwrap_or_default();
    Found {
        credential: hit.credential.clone(),
        variable,
        how: hit.form,
    }
}

impl hyper::body::Body for ScanBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if this.ended {
                return Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))));
            }
            let released = match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Some(Err(error.into()))),
                Poll::Ready(None) => {
                    this.ended = true;
                    this.window.finish()
                }
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => this.window.push(&data),
                    Err(frame) => {
                        // Trailers: searched as a head's values are.
                        let trailers = frame.into_trailers().unwrap_or_default();
                        let window = &this.window;
                        let found = trailers.iter().find_map(|(_, value)| {
                            this.intercept
                                .placeholders
                                .find_in_header(value.as_bytes(), |c| !window.ignores(c))
                        });
                        if let Some(found) = found {
                            return Poll::Ready(Some(Err(stopped(&this.found, found))));
                        }
                        this.trailers = Some(trailers);
                        this.ended = true;
                        this.window.finish()
                    }
                },
            };
            if let Some(found) = this.found() {
                return Poll::Ready(Some(Err(stopped(&this.found, found))));
            }
            if !released.is_empty() {
                return Poll::Ready(Some(Ok(Frame::data(released.into()))));
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match self.inner.size_hint().exact() {
            Some(exact) if !self.ended => SizeHint::with_exact(exact + self.window.held() as u64),
            _ => SizeHint::default(),
        }
    }
}

/// Records `found` and makes the error that cuts the body off.
fn stopped(later: &Later, found: Found) -> BoxError {
    let message = format!(
        "the placeholder of {} in the request body: the request was cut off",
        found.credential
    );
    if let Ok(mut slot) = later.lock() {
        slot.get_or_insert(found);
    }
    message.into()
}

/// The pre-read's first bytes, then the rest of the body as it streams.
struct Prefixed {
    first: Option<Bytes>,
    rest: ScanBody,
    /// The pre-read's share of the budget, given back when the body is done.
    _permit: Option<OwnedSemaphorePermit>,
}

impl hyper::body::Body for Prefixed {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        Pin::new(&mut self.rest).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && self.rest.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let first = self.first.as_ref().map_or(0, |b| b.len() as u64);
        match self.rest.size_hint().exact() {
            Some(exact) => SizeHint::with_exact(exact + first),
            None => SizeHint::default(),
        }
    }
}

/// Reads `request`'s body up to [`PREREAD`], searching it for the placeholders of every
/// credential but the `ignored` ones (those bound to the destination): see the module
/// documentation. `Err` with the refusal, and the placeholder when that is the refusal.
pub(in crate::proxy) async fn screen(
    request: Request<Incoming>,
    intercept: &Arc<Intercept>,
    ignored: Vec<String>,
    destination: &str,
) -> Result<Screened, (Deny, Option<Found>)> {
    let (parts, inner) = request.into_parts();
    let found: Later = Arc::default();
    let mut body = ScanBody {
        inner,
        window: Window::ignoring(intercept.placeholder_needles.clone(), ignored),
        intercept: intercept.clone(),
        found: found.clone(),
        ended: false,
        trailers: None,
    };
    let mut first = BytesMut::new();
    let mut permits: Option<OwnedSemaphorePermit> = None;
    let mut trailers = None;
    while first.len() < PREREAD {
        let Some(frame) = body.frame().await else {
            break;
        };
        let frame = match frame {
            Ok(frame) => frame,
            Err(error) => {
                return Err(match found.lock().ok().and_then(|mut f| f.take()) {
                    Some(found) => {
                        let deny = replay_deny(&found, "the request body", destination);
                        (deny, Some(found))
                    }
                    None => (
                        Deny::new(
                            Reason::BadRequest,
                            format!("the request body could not be read: {error}"),
                        ),
                        None,
                    ),
                })
            }
        };
        match frame.into_data() {
            Ok(data) => {
                let want = data.len().div_ceil(PERMIT) as u32;
                let more = intercept.preread.clone().try_acquire_many_owned(want);
                match (more, &mut permits) {
                    (Ok(more), Some(held)) => held.merge(more),
                    (Ok(more), None) => permits = Some(more),
                    (Err(_), _) => {
                        return Err((
                            Deny::new(
                                Reason::ProxyBusy,
                                format!(
                                    "the proxy is reading {} MiB of request bodies already, as \
                                     much as it holds at once: try again",
                                    PREREAD_BUDGET >> 20
                                ),
                            ),
                            None,
                        ))
                    }
                }
                first.extend_from_slice(&data);
            }
            Err(frame) => {
                trailers = frame.into_trailers().ok();
                break;
            }
        }
    }
    let first = first.freeze();
    if body.is_end_stream() || trailers.is_some() {
        let whole = http_body_util::Full::new(first).map_err(|never| match never {});
        let body: Body = match trailers {
            None => whole.boxed(),
            Some(trailers) => whole
                .with_trailers(async move { Some(Ok(trailers)) })
                .boxed(),
        };
        return Ok(Screened::Whole(Request::from_parts(parts, body)));
    }
    let body = Prefixed {
        first: (!first.is_empty()).then_some(first),
        rest: body,
        _permit: permits,
    };
    Ok(Screened::Streaming(
        Request::from_parts(parts, body.boxed()),
        found,
    ))
}
