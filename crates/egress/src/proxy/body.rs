//! The body type every response and forwarded request has in the proxy, and its error.

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;

/// The error of a body the proxy hands on: the upstream's, or its own (a response that does
/// not decode, a request body stopped on a placeholder). A type of its own, not a boxed
/// `dyn Error` (hyper's bounds on body errors hold for every lifetime only for such a type).
#[derive(Debug)]
pub(crate) struct BoxError(Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for BoxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for BoxError {}

impl From<hyper::Error> for BoxError {
    fn from(error: hyper::Error) -> BoxError {
        BoxError(Box::new(error))
    }
}

impl From<String> for BoxError {
    fn from(message: String) -> BoxError {
        BoxError(message.into())
    }
}

pub(super) type Body = BoxBody<Bytes, BoxError>;

/// An upstream's (or the client's) body as the proxy hands it on.
pub(super) fn boxed(body: Incoming) -> Body {
    body.map_err(BoxError::from).boxed()
}

/// A body with nothing in it.
pub(super) fn empty() -> Body {
    Full::new(Bytes::new())
        .map_err(|never| match never {})
        .boxed()
}
