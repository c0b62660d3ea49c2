//! What a bound host returns, with every value the proxy holds replaced before the sandbox
//! sees it ([`crate::scrub`]): the status line's reason phrase, the headers, the body (as it
//! streams, `gzip` and `deflate` decoded first; any other content coding is refused, `502`),
//! the trailers, and after a `101` the upgraded stream (a WebSocket's frames one by one, any
//! other protocol as a byte stream). A host that reflects its request (a debug endpoint, an
//! error page quoting the header, an echo server) therefore hands back `redacted...` where it
//! received the key.
//!
//! Each response with a replacement gets one `scrub` line when it ends, the close line of its
//! request (same id): where (the header's name, the body, the trailers, the upgraded stream),
//! which credential and part, in which form and how often; never a value.

use std::io::{self, Write};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use flate2::write::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};
use http::header::{HeaderName, CONTENT_ENCODING, CONTENT_LENGTH};
use http::{HeaderMap, HeaderValue, Response};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::log::{Kind, Record};
use crate::policy::{Deny, Reason};
use crate::proxy::{Body, BoxError, Shared};
use crate::scrub::{websocket::FrameScrubber, Hits, Needles, Window};

/// How much compressed input is inflated at a time, and how much decoded output a read of the
/// body collects at most: a small compressed body that inflates to gigabytes is streamed in
/// pieces of this order, never held.
const INFLATE_STEP: usize = 16 << 10;
const MAX_FRAME: usize = 64 << 10;

/// The content codings a bound host may answer in, as the request's `Accept-Encoding` says.
pub(super) const ACCEPTED_ENCODINGS: &str = "gzip, deflate";

/// Where a response's replacements are counted, and its one `scrub` line, written when the
/// last part of the response (head, body, upgraded stream) is done with it.
pub(super) struct Report {
    shared: Arc<Shared>,
    line: Record,
    what: String,
    places: Mutex<Vec<(String, Hits)>>,
}

impl Report {
    /// The report of the response to the request whose decision line is `request`: its
    /// `scrub` line will be that request's close line (same id).
    pub(super) fn new(shared: Arc<Shared>, request: &Record) -> Arc<Report> {
        let mut line = request.close(Reason::Scrubbed);
        line.kind = Kind::Scrub;
        line.decision = "allow";
        let what = request
            .detail
            .clone()
            .unwrap_or_else(|| "a request".to_string());
        Arc::new(Report {
            shared,
            line,
            what,
            places: Mutex::new(Vec::new()),
        })
    }

    /// Counts the replacements made in `place`.
    pub(super) fn add(&self, place: impl Into<String>, hits: Hits) {
        if hits.is_empty() {
            return;
        }
        let place = place.into();
        if let Ok(mut places) = self.places.lock() {
            match places.iter_mut().find(|(p, _)| *p == place) {
                Some((_, counted)) => counted.merge(&hits),
                None => places.push((place, hits)),
            }
        }
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        let places = match self.places.get_mut() {
            Ok(places) if !places.is_empty() => std::mem::take(places),
            _ => return,
        };
        let mut all = Hits::default();
        for (_, hits) in &places {
            all.merge(hits);
        }
        let mut line = self.line.clone();
        line.time = crate::log::rfc3339(std::time::SystemTime::now());
        line.credential = Some(all.credentials().join(","));
        let places: Vec<String> = places
            .iter()
            .map(|(place, hits)| format!("{place} ({})", hits.summary()))
            .collect();
        line.detail = Some(format!(
            "in the response to the {}: {}: replaced before the sandbox saw it",
            self.what,
            places.join("; ")
        ));
        self.shared.emit(line);
    }
}

/// Scrubs a response's head in place: its reason phrase and every header's name and value.
pub(super) fn head(response: &mut Response<Incoming>, needles: &Needles, report: &Report) {
    if let Some(phrase) = response
        .extensions_mut()
        .remove::<hyper::ext::ReasonPhrase>()
    {
        let (scrubbed, hits) = needles.scrub(phrase.as_bytes());
        report.add("the status line", hits);
        if let Ok(phrase) = hyper::ext::ReasonPhrase::try_from(scrubbed) {
            response.extensions_mut().insert(phrase);
        }
    }
    headers(response.headers_mut(), needles, report, "header");
}

/// Scrubs every name and value of `headers` (`which`: `header` or `trailer`, for the line).
fn headers(headers: &mut HeaderMap, needles: &Needles, report: &Report, which: &str) {
    let mut changed = false;
    let mut scrubbed = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers.iter() {
        let (new_name, mut hits) = needles.scrub(name.as_str().as_bytes());
        let (new_value, value_hits) = needles.scrub(value.as_bytes());
        hits.merge(&value_hits);
        if hits.is_empty() {
            scrubbed.append(name.clone(), value.clone());
            continue;
        }
        changed = true;
        let name = HeaderName::from_bytes(&new_name);
        let value = HeaderValue::from_bytes(&new_value);
        let shown = name
            .as_ref()
            .map_or_else(|_| "(unnamed)".to_string(), |n| n.to_string());
        report.add(format!("the {which} {shown}"), hits);
        // A header that cannot be written back scrubbed is dropped.
        if let (Ok(name), Ok(value)) = (name, value) {
            scrubbed.append(name, value);
        }
    }
    if changed {
        *headers = scrubbed;
    }
}

/// A content coding the proxy decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    Gzip,
    Deflate,
}

/// The codings of a response, in the order they were applied; `Err` with one the proxy
/// cannot decode.
fn codings(headers: &HeaderMap) -> Result<Vec<Coding>, String> {
    let mut codings = Vec::new();
    for value in headers.get_all(CONTENT_ENCODING) {
        let text = value.to_str().map_err(|_| "(not text)".to_string())?;
        for token in text.split(',').map(|t| t.trim().to_ascii_lowercase()) {
            match token.as_str() {
                "" | "identity" => {}
                "gzip" | "x-gzip" => codings.push(Coding::Gzip),
                "deflate" => codings.push(Coding::Deflate),
                _ => return Err(token),
            }
        }
    }
    Ok(codings)
}

/// One decoder: gzip (any number of members), or deflate (zlib-wrapped as HTTP says, or raw
/// as some servers send it: told by its first two bytes).
enum Inflate {
    Gzip(MultiGzDecoder<Vec<u8>>),
    Zlib(ZlibDecoder<Vec<u8>>),
    Raw(DeflateDecoder<Vec<u8>>),
    /// Deflate whose first byte has not arrived.
    Deflate(Vec<u8>),
}

impl Inflate {
    fn new(coding: Coding) -> Inflate {
        match coding {
            Coding::Gzip => Inflate::Gzip(MultiGzDecoder::new(Vec::new())),
            Coding::Deflate => Inflate::Deflate(Vec::new()),
        }
    }

    fn write(&mut self, input: &[u8]) -> io::Result<Vec<u8>> {
        if let Inflate::Deflate(start) = self {
            start.extend_from_slice(input);
            if start.len() < 2 {
                return Ok(Vec::new());
            }
            let zlib =
                start[0] & 0x0f == 8 && (u16::from(start[0]) << 8 | u16::from(start[1])) % 31 == 0;
            let start = std::mem::take(start);
            *self = if zlib {
                Inflate::Zlib(ZlibDecoder::new(Vec::new()))
            } else {
                Inflate::Raw(DeflateDecoder::new(Vec::new()))
            };
            return self.write(&start);
        }
        match self {
            Inflate::Gzip(d) => d.write_all(input).map(|()| std::mem::take(d.get_mut())),
            Inflate::Zlib(d) => d.write_all(input).map(|()| std::mem::take(d.get_mut())),
            Inflate::Raw(d) => d.write_all(input).map(|()| std::mem::take(d.get_mut())),
            Inflate::Deflate(_) => Ok(Vec::new()),
        }
    }

    fn finish(&mut self) -> io::Result<Vec<u8>> {
        match self {
            Inflate::Gzip(d) => d.try_finish().map(|()| std::mem::take(d.get_mut())),
            Inflate::Zlib(d) => d.try_finish().map(|()| std::mem::take(d.get_mut())),
            Inflate::Raw(d) => d.try_finish().map(|()| std::mem::take(d.get_mut())),
            Inflate::Deflate(start) if start.is_empty() => Ok(Vec::new()),
            Inflate::Deflate(_) => Err(io::Error::other("a deflate body of one byte")),
        }
    }
}

/// A response body as the sandbox gets it: decoded, scrubbed, its trailers scrubbed.
pub(super) struct ScrubBody {
    inner: Incoming,
    /// The decoders, in the order they are applied to the body (the last coding first).
    inflate: Vec<Inflate>,
    /// Compressed bytes received and not inflated yet.
    input: Bytes,
    window: Window,
    needles: Arc<Needles>,
    trailers: Option<HeaderMap>,
    /// The upstream's body has ended (its data; trailers may wait in `trailers`).
    ended: bool,
    /// Everything was handed out.
    done: bool,
    report: Arc<Report>,
}

impl ScrubBody {
    /// Runs `bytes` through the decoders.
    fn inflate(&mut self, bytes: &[u8], finish: bool) -> io::Result<Vec<u8>> {
        let mut data = bytes.to_vec();
        for decoder in &mut self.inflate {
            let mut out = decoder.write(&data)?;
            if finish {
                out.extend(decoder.finish()?);
            }
            data = out;
        }
        Ok(data)
    }
}

impl hyper::body::Body for ScrubBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))));
            }
            if !this.input.is_empty() {
                let mut out = Vec::new();
                while !this.input.is_empty() && out.len() < MAX_FRAME {
                    let step = this.input.split_to(this.input.len().min(INFLATE_STEP));
                    match this.inflate(&step, false) {
                        Ok(decoded) => out.extend(this.window.push(&decoded)),
                        Err(error) => return Poll::Ready(Some(Err(undecodable(error)))),
                    }
                }
                if !out.is_empty() {
                    return Poll::Ready(Some(Ok(Frame::data(out.into()))));
                }
                continue;
            }
            if this.ended {
                this.done = true;
                let mut out = match this.inflate(&[], true) {
                    Ok(decoded) => this.window.push(&decoded),
                    Err(error) => return Poll::Ready(Some(Err(undecodable(error)))),
                };
                out.extend(this.window.finish());
                this.report.add("the body", this.window.take_hits());
                if !out.is_empty() {
                    return Poll::Ready(Some(Ok(Frame::data(out.into()))));
                }
                continue;
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => this.ended = true,
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Some(Err(error.into()))),
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) if this.inflate.is_empty() => {
                        // Most frames hold no hit: handed on as they came, less the end the
                        // window keeps.
                        let out = match this.window.pass(&data) {
                            Some(release) => data.slice(..release),
                            None => this.window.push(&data).into(),
                        };
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(out))));
                        }
                    }
                    Ok(data) => this.input = data,
                    Err(frame) => {
                        if let Ok(mut trailers) = frame.into_trailers() {
                            headers(&mut trailers, &this.needles, &this.report, "trailer");
                            this.trailers = Some(trailers);
                        }
                        this.ended = true;
                    }
                },
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        // Replacements keep the length: without decoding, what remains is what the upstream
        // still sends and what is held.
        let inner = self.inner.size_hint();
        match inner.exact() {
            Some(exact) if self.inflate.is_empty() => {
                SizeHint::with_exact(exact + self.window.held() as u64)
            }
            _ => SizeHint::default(),
        }
    }
}

impl Drop for ScrubBody {
    fn drop(&mut self) {
        self.report.add("the body", self.window.take_hits());
    }
}

fn undecodable(error: io::Error) -> BoxError {
    format!("a response body that does not decode as its Content-Encoding says: {error}").into()
}

/// The response as the sandbox gets it, its head scrubbed already ([`head`]): its body
/// scrubbed as it streams, decoded first when it is `gzip` or `deflate`; a refusal when its
/// content coding is one the proxy cannot decode.
pub(super) fn body(
    response: Response<Incoming>,
    needles: &Arc<Needles>,
    report: Arc<Report>,
) -> Result<Response<Body>, Deny> {
    let (mut parts, inner) = response.into_parts();
    let codings = codings(&parts.headers).map_err(|coding| {
        Deny::new(
            Reason::UnscannableResponse,
            format!(
                "the response is in the content coding `{coding}`, which the proxy cannot \
                 decode to keep the held keys out of it (it asks for {ACCEPTED_ENCODINGS})"
            ),
        )
    })?;
    if !codings.is_empty() {
        parts.headers.remove(CONTENT_ENCODING);
        parts.headers.remove(CONTENT_LENGTH);
    }
    let body = ScrubBody {
        inner,
        inflate: codings.into_iter().rev().map(Inflate::new).collect(),
        input: Bytes::new(),
        window: Window::new(needles.clone()),
        needles: needles.clone(),
        trailers: None,
        ended: false,
        done: false,
        report,
    };
    Ok(Response::from_parts(
        parts,
        http_body_util::BodyExt::boxed(body),
    ))
}

/// Relays an upgraded connection after its `101`: the client's bytes as they are, the
/// upstream's scrubbed (a WebSocket frame by frame, with its extensions refused: the request
/// asked for none; any other protocol as a byte stream).
pub(super) async fn relay_upgraded(
    client: hyper::upgrade::Upgraded,
    upstream: hyper::upgrade::Upgraded,
    websocket: bool,
    needles: Arc<Needles>,
    report: Arc<Report>,
) {
    let (mut client_read, mut client_write) = tokio::io::split(TokioIo::new(client));
    let (mut upstream_read, mut upstream_write) = tokio::io::split(TokioIo::new(upstream));
    let up = async {
        let _ = tokio::io::copy(&mut client_read, &mut upstream_write).await;
        let _ = upstream_write.shutdown().await;
    };
    let down = async {
        let mut frames = websocket.then(|| FrameScrubber::new(needles.clone()));
        let mut window = Window::new(needles.clone());
        let mut buffer = vec![0u8; 64 << 10];
        loop {
            let n = match upstream_read.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let out = match &mut frames {
                Some(frames) => match frames.push(&buffer[..n]) {
                    Ok(out) => out,
                    Err(_) => break,
                },
                None => window.push(&buffer[..n]),
            };
            if client_write.write_all(&out).await.is_err() {
                break;
            }
        }
        if frames.is_none() {
            let _ = client_write.write_all(&window.finish()).await;
        }
        let _ = client_write.shutdown().await;
        let hits = match &mut frames {
            Some(frames) => frames.take_hits(),
            None => window.take_hits(),
        };
        report.add("the upgraded stream", hits);
    };
    tokio::join!(up, down);
}
