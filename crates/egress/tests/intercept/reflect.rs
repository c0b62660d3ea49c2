//! A bound host that hands back the key it received, in every form a client could decode, in
//! every place a response has (issue 36): the proxy must replace each before the sandbox sees
//! it, and say so in a `scrub` line.
//!
//! `/reflect/MODE` answers with the key (as `api.test` received it, in `x-api-key`) in its
//! reason phrase (HTTP/1.1), in headers (raw, base64, a cookie, a header's name), and in a body
//! holding it raw, base64 and base64url at each alignment, URL-encoded and JSON-escaped; MODE is
//! how the body travels: `plain` (Content-Length), `chunked` (7-byte frames, so every form is
//! cut somewhere), `gzip` and `deflate` (compressed, then 7-byte frames), `br` (a coding the
//! proxy cannot decode), `trailers` (the key in a trailer too). With `Upgrade: websocket` it
//! answers `101` and sends the key in frames: a text message in two fragments cut inside the
//! key, a ping, a binary message of its base64.
//!
//! The referee is independent of the proxy's own search: the sandbox's bytes are decoded every
//! way a client could (percent, JSON escapes, base64 and base64url of every run of their
//! alphabets at every offset, gzip) and searched for the key as it is.

use super::*;

use std::io::Write;

use agentc_egress::credential::{base64_decode, base64_encode};
use agentc_egress::replay::{json_unescaped, percent_decoded};

/// The forms of `key` the body holds, one a line.
fn forms(key: &str) -> String {
    let percent_lower: String = key.bytes().map(|b| format!("%{b:02x}")).collect();
    let percent_upper: String = key.bytes().map(|b| format!("%{b:02X}")).collect();
    let json: String = key.bytes().map(|b| format!("\\u{b:04x}")).collect();
    let url = |text: String| {
        base64_encode(text.as_bytes())
            .replace('+', "-")
            .replace('/', "_")
    };
    [
        format!("raw {key}"),
        format!("json {{\"x-api-key\":\"{json}\"}}"),
        format!("quoted {}", serde_json::to_string(key).unwrap()),
        format!("percent {percent_lower} {percent_upper}"),
        format!("query ?k={}", key.replacen('-', "%2D", 2)),
        format!("b64-0 {}", base64_encode(key.as_bytes())),
        format!("b64-1 {}", base64_encode(format!("a{key}").as_bytes())),
        format!("b64-2 {}", base64_encode(format!("ab{key}").as_bytes())),
        format!("basic {}", base64_encode(format!("user:{key}").as_bytes())),
        format!("b64url {}", url(format!("??{key}>>"))),
        format!("b64url-1 {}", url(format!("?{key}"))),
    ]
    .join("\n")
}

/// Splits `bytes` into 7-byte frames.
fn sevens(bytes: Vec<u8>) -> TestBody {
    let frames: Vec<Result<Frame<Bytes>, Infallible>> = bytes
        .chunks(7)
        .map(|chunk| Ok(Frame::data(Bytes::copy_from_slice(chunk))))
        .collect();
    StreamBody::new(futures_util::stream::iter(frames)).boxed()
}

/// The reflecting host's answer (see the module documentation).
pub(super) fn answer(
    path: &str,
    headers: &HashMap<String, String>,
    on_upgrade: Option<hyper::upgrade::OnUpgrade>,
) -> Response<TestBody> {
    let key = headers.get("x-api-key").cloned().unwrap_or_default();
    if let Some(on_upgrade) = on_upgrade {
        let frames = websocket_frames(&key);
        tokio::spawn(async move {
            if let Ok(upgraded) = on_upgrade.await {
                let mut io = TokioIo::new(upgraded);
                let _ = io.write_all(&frames).await;
                let _ = io.shutdown().await;
            }
        });
        return Response::builder()
            .status(101)
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .header("x-echo", key.as_str())
            .body(Full::new(Bytes::new()).boxed())
            .unwrap();
    }
    let body = forms(&key).into_bytes();
    let mode = path.rsplit('/').next().unwrap_or_default();
    let mut response = Response::builder()
        .status(400)
        .header("x-echo", key.as_str())
        .header("x-echo-b64", base64_encode(key.as_bytes()))
        .header("set-cookie", format!("session={key}; Path=/"))
        .header(format!("x-{key}").as_str(), "a header named after the key")
        .header(
            "www-authenticate",
            format!("Bearer error=\"invalid_token\" token=\"{key}\""),
        );
    if let Ok(phrase) = hyper::ext::ReasonPhrase::try_from(format!("Bad key {key}").into_bytes()) {
        response = response.extension(phrase);
    }
    match mode {
        "chunked" => response.body(sevens(body)).unwrap(),
        "gzip" => {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(&body).unwrap();
            response
                .header("content-encoding", "gzip")
                .body(sevens(encoder.finish().unwrap()))
                .unwrap()
        }
        "deflate" => {
            let mut encoder =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(&body).unwrap();
            response
                .header("content-encoding", "deflate")
                .body(sevens(encoder.finish().unwrap()))
                .unwrap()
        }
        "br" => response
            .header("content-encoding", "br")
            .body(Full::new(Bytes::from(body)).boxed())
            .unwrap(),
        "trailers" => {
            let mut trailers = hyper::HeaderMap::new();
            trailers.insert("x-trailer-echo", key.parse().unwrap());
            let frames: Vec<Result<Frame<Bytes>, Infallible>> = vec![
                Ok(Frame::data(Bytes::from(body))),
                Ok(Frame::trailers(trailers)),
            ];
            response
                .header("trailer", "x-trailer-echo")
                .body(StreamBody::new(futures_util::stream::iter(frames)).boxed())
                .unwrap()
        }
        _ => response.body(Full::new(Bytes::from(body)).boxed()).unwrap(),
    }
}

/// A server's unmasked frame.
fn ws_frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() < 126);
    let mut frame = vec![if fin { 0x80 } else { 0 } | opcode, payload.len() as u8];
    frame.extend_from_slice(payload);
    frame
}

/// The key in a text message cut inside it, in a ping, and base64 in a binary message.
fn websocket_frames(key: &str) -> Vec<u8> {
    let text = format!("your key is {key}, thanks");
    let (first, second) = text.as_bytes().split_at(20);
    [
        ws_frame(false, 1, first),
        ws_frame(true, 0, second),
        ws_frame(true, 9, key.as_bytes()),
        ws_frame(
            true,
            2,
            base64_encode(format!("k={key}").as_bytes()).as_bytes(),
        ),
        ws_frame(true, 8, &[3, 232]),
    ]
    .concat()
}

/// Every way a client could decode `bytes`, searched for `key`: `Some(how)` when found.
fn leaked(bytes: &[u8], key: &str) -> Option<String> {
    let key = key.as_bytes();
    let has = |haystack: &[u8]| haystack.windows(key.len()).any(|w| w == key);
    let mut decodings: Vec<(String, Vec<u8>)> = vec![
        ("as is".into(), bytes.to_vec()),
        ("percent-decoded".into(), percent_decoded(bytes)),
        ("JSON-unescaped".into(), json_unescaped(bytes)),
    ];
    if let Ok(text) = std::str::from_utf8(bytes) {
        let alphabet = |c: char| c.is_ascii_alphanumeric() || "+/-_=".contains(c);
        for run in text
            .split(|c: char| !alphabet(c))
            .filter(|run| run.len() >= 8)
        {
            for offset in 0..4 {
                if let Some(decoded) = base64_decode(&run[offset.min(run.len())..]) {
                    decodings.push((format!("base64 of `{run}` from {offset}"), decoded));
                }
            }
        }
    }
    decodings
        .into_iter()
        .find(|(_, decoded)| has(decoded))
        .map(|(how, _)| how)
}

/// Everything of a response the sandbox gets: its status line's phrase, its headers (names and
/// values), its body and trailers.
async fn received(response: Response<Incoming>) -> (u16, Vec<u8>) {
    let status = response.status().as_u16();
    let mut seen = Vec::new();
    if let Some(phrase) = response.extensions().get::<hyper::ext::ReasonPhrase>() {
        seen.extend_from_slice(phrase.as_bytes());
        seen.push(b'\n');
    }
    for (name, value) in response.headers() {
        seen.extend_from_slice(format!("{name}: ").as_bytes());
        seen.extend_from_slice(value.as_bytes());
        seen.push(b'\n');
    }
    let mut body = response.into_body();
    while let Some(frame) = body.frame().await {
        let frame = frame.unwrap();
        match frame.into_data() {
            Ok(data) => seen.extend_from_slice(&data),
            Err(frame) => {
                for (name, value) in frame.into_trailers().unwrap().iter() {
                    seen.extend_from_slice(format!("\n{name}: ").as_bytes());
                    seen.extend_from_slice(value.as_bytes());
                }
            }
        }
    }
    (status, seen)
}

/// One request to `api.test` through the proxy, over HTTP/2 when `h2`.
async fn ask(setup: &Setup, h2: bool, request: Request<Full<Bytes>>) -> Response<Incoming> {
    let alpn: &[&[u8]] = if h2 { &[b"h2"] } else { &[b"http/1.1"] };
    let (tls, _) = setup
        .tls("api.test:443", "api.test", &setup.ca.clone(), alpn)
        .await
        .unwrap();
    if !h2 {
        return http1(tls, request).await;
    }
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(connection);
    sender.send_request(request).await.unwrap()
}

fn reflect_request(h2: bool, method: &str, path: &str) -> Request<Full<Bytes>> {
    let builder = if h2 {
        Request::builder().uri(format!("https://api.test{path}"))
    } else {
        get(path, "api.test")
    };
    builder
        .method(method)
        .header("x-api-key", PLACEHOLDER_ANTHROPIC)
        .header("accept-encoding", "br, zstd, gzip")
        .body(Full::new(Bytes::new()))
        .unwrap()
}

/// The lines of the exchange until its `scrub` line: that line.
async fn scrub_line(setup: &mut Setup) -> Record {
    loop {
        let line = setup.next_line().await;
        assert!(
            !line.to_line().contains(REAL_ANTHROPIC),
            "a line holds the key: {}",
            line.to_line()
        );
        if line.kind == Kind::Scrub {
            return line;
        }
    }
}

#[tokio::test]
async fn no_form_of_the_key_comes_back_in_any_mode_over_either_protocol() {
    for h2 in [false, true] {
        for mode in ["plain", "chunked", "gzip", "deflate", "trailers"] {
            for method in ["GET", "OPTIONS", "POST"] {
                let mut setup = setup(None).await;
                let request = reflect_request(h2, method, &format!("/reflect/{mode}"));
                let (status, seen) = received(ask(&setup, h2, request).await).await;
                let what = format!("{method} {mode} over {}", if h2 { "h2" } else { "h1" });
                assert_eq!(status, 400, "{what}: {}", String::from_utf8_lossy(&seen));
                if let Some(how) = leaked(&seen, REAL_ANTHROPIC) {
                    panic!(
                        "{what}: the key came back ({how}):\n{}",
                        String::from_utf8_lossy(&seen)
                    );
                }
                // The host did get the real key, and a coding the proxy decodes only.
                let upstream = setup.api.lock().unwrap().clone();
                let headers = &upstream.last().unwrap().2;
                assert_eq!(
                    headers.get("x-api-key").map(String::as_str),
                    Some(REAL_ANTHROPIC)
                );
                assert_eq!(
                    headers.get("accept-encoding").map(String::as_str),
                    Some("gzip, deflate")
                );
                // The body's lines are all there, scrubbed where the key was.
                let text = String::from_utf8_lossy(&seen);
                for label in ["raw ", "json ", "percent ", "b64-2 ", "basic ", "b64url-1 "] {
                    assert!(text.contains(label), "{what}: {label} missing:\n{text}");
                }
                assert!(text.contains("redacted"), "{what}:\n{text}");
                let line = scrub_line(&mut setup).await;
                assert_eq!(
                    (line.credential.as_deref(), line.reason),
                    (Some("anthropic"), "scrubbed"),
                    "{what}"
                );
                let detail = line.detail.unwrap_or_default();
                for place in [
                    "the header x-echo ",
                    "the header set-cookie",
                    "the body (anthropic key: ",
                ] {
                    assert!(detail.contains(place), "{what}: {place} not in {detail}");
                }
                for form in ["raw", "base64", "URL-encoded", "JSON-escaped"] {
                    assert!(detail.contains(form), "{what}: {form} not in {detail}");
                }
                if mode == "trailers" && h2 {
                    assert!(
                        detail.contains("the trailer x-trailer-echo"),
                        "{what}: {detail}"
                    );
                }
                if !h2 {
                    assert!(detail.contains("the status line"), "{what}: {detail}");
                }
            }
        }
    }
}

#[tokio::test]
async fn a_coding_the_proxy_cannot_decode_and_trace_are_refused() {
    for h2 in [false, true] {
        let mut setup = setup(None).await;
        let (status, seen) =
            received(ask(&setup, h2, reflect_request(h2, "GET", "/reflect/br")).await).await;
        assert_eq!(status, 502, "{}", String::from_utf8_lossy(&seen));
        assert!(leaked(&seen, REAL_ANTHROPIC).is_none());
        let refused = loop {
            let line = setup.next_line().await;
            if line.reason == "unscannable-response" {
                break line;
            }
        };
        assert!(refused.detail.unwrap().contains("`br`"));
        let (status, seen) =
            received(ask(&setup, h2, reflect_request(h2, "TRACE", "/trace")).await).await;
        assert_eq!(status, 405, "{}", String::from_utf8_lossy(&seen));
        let refused = loop {
            let line = setup.next_line().await;
            if line.reason == "method-refused" {
                break line;
            }
        };
        assert_eq!(refused.kind, Kind::Request);
        // TRACE never reached the host.
        assert!(setup
            .api
            .lock()
            .unwrap()
            .iter()
            .all(|seen| seen.0 != "/trace"));
    }
}

#[tokio::test]
async fn a_websocket_gets_no_key_in_its_101_or_its_frames() {
    let mut setup = setup(None).await;
    let request = get("/reflect/ws", "api.test")
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-extensions", "permessage-deflate")
        .header("x-api-key", PLACEHOLDER_ANTHROPIC)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let mut response = ask(&setup, false, request).await;
    assert_eq!(response.status(), 101);
    let head: Vec<u8> = response
        .headers()
        .iter()
        .flat_map(|(n, v)| [n.as_str().as_bytes(), b": ", v.as_bytes(), b"\n"].concat())
        .collect();
    assert!(
        leaked(&head, REAL_ANTHROPIC).is_none(),
        "{}",
        String::from_utf8_lossy(&head)
    );
    let upgraded = hyper::upgrade::on(&mut response).await.unwrap();
    let mut io = TokioIo::new(upgraded);
    let mut frames = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), io.read_to_end(&mut frames)).await;
    // Parse the frames back: every message whole, none carrying the key in any form.
    let (mut at, mut messages, mut current, mut kind) = (0, Vec::new(), Vec::new(), 0);
    while at + 2 <= frames.len() {
        let (fin, opcode, len) = (
            frames[at] & 0x80 != 0,
            frames[at] & 0x0f,
            frames[at + 1] as usize,
        );
        assert!(
            len < 126 && frames[at + 1] & 0x80 == 0,
            "unmasked, short frames"
        );
        if opcode != 0 {
            kind = opcode;
        }
        current.extend_from_slice(&frames[at + 2..at + 2 + len]);
        at += 2 + len;
        if fin {
            messages.push((kind, std::mem::take(&mut current)));
        }
    }
    assert_eq!(at, frames.len(), "whole frames only");
    let opcodes: Vec<u8> = messages.iter().map(|(opcode, _)| *opcode).collect();
    assert_eq!(opcodes, [1, 9, 2, 8], "{messages:?}");
    let text = String::from_utf8(messages[0].1.clone()).unwrap();
    assert!(
        text.starts_with("your key is ") && text.ends_with(", thanks"),
        "{text}"
    );
    for (_, payload) in &messages {
        assert!(
            leaked(payload, REAL_ANTHROPIC).is_none(),
            "{}",
            String::from_utf8_lossy(payload)
        );
    }
    let upstream = setup.api.lock().unwrap().clone();
    let headers = &upstream.last().unwrap().2;
    assert!(
        !headers.contains_key("sec-websocket-extensions"),
        "{headers:?}"
    );
    drop(io);
    let line = scrub_line(&mut setup).await;
    let detail = line.detail.unwrap();
    assert!(
        detail.contains("the header x-echo") && detail.contains("the upgraded stream"),
        "{detail}"
    );
}
