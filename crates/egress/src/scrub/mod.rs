//! Finding held values in a byte stream, in every form a client could decode, through a
//! window that holds back only what could still become a match: what the proxy uses to replace
//! the real keys in whatever a bound host returns (its headers, its body, a WebSocket's frames)
//! and to find placeholders in request bodies that stream through it.
//!
//! A [`Needles`] is made once from the values: each value as it is, and its base64 and base64url
//! forms at each of the three alignments it can have inside longer base64 text (the characters
//! that depend on the value's bytes alone: `Basic base64(user:key)` holds one of them). Those
//! patterns are searched in the bytes *as decoded*: `%XX` escapes (URL-encoding, any case) and
//! JSON string escapes (`\u00XX`, `\/`, `\\`, `\"`) are read as the byte they stand for, so a
//! value written `sk%2Dant...` or `sk\u002dant...` is found, and each hit is mapped back to the
//! bytes it was written with.
//!
//! A [`Window`] streams: [`Window::push`] takes the next chunk and returns what can be released
//! now, the hits replaced with [`FILLER`] bytes of the same length (so a `Content-Length`, a
//! WebSocket frame's length and a chunk's size stay true); it holds back only the longest
//! suffix that is the beginning of some pattern, and an escape cut by the chunk's end (an SSE
//! event is released as it arrives unless it ends with the beginning of a key). The hold is at
//! most the longest pattern as written with escapes, so memory is fixed whatever the stream's
//! length.
//!
//! What this does not find, by design: a value the host transforms (reversed, hashed,
//! encrypted, split across two separate messages, case-changed, double-encoded `%2541`, in an
//! HTML entity or a compression the proxy does not decode). The proxy asks only for the
//! encodings it decodes (`gzip`, `deflate`) and refuses others.
//!
//! ```
//! use std::sync::Arc;
//! use agentc_egress::scrub::{Needle, Needles, Window};
//! let needles = Needles::new(vec![Needle::new("anthropic", "key", b"sk-ant-real-0123456789")]);
//! let mut window = Window::new(Arc::new(needles));
//! let mut out = window.push(b"{\"echo\":\"sk-ant-real-01");
//! out.extend(window.push(b"23456789\"}"));
//! out.extend(window.finish());
//! assert_eq!(out, b"{\"echo\":\"redactedredactedredact\"}");
//! assert_eq!(window.hits().total(), 1);
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};

use crate::credential::base64_encode;

mod decode;
pub mod websocket;

use decode::{Decoded, Escape};

/// The bytes a hit is replaced with, repeated as needed: letters only, so the result is still
/// valid in a header, a URL, a JSON string and base64 text.
pub const FILLER: &[u8] = b"redacted";

/// Values shorter than this are searched only as they are (their encoded forms would be a few
/// characters, found everywhere).
const MIN_ENCODED: usize = 8;

/// One value to find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needle {
    /// The credential it belongs to (its name, for the audit line).
    pub credential: String,
    /// Which of its values: `key`, `user`, `placeholder`.
    pub part: &'static str,
    /// The value.
    pub value: Vec<u8>,
}

impl Needle {
    /// A needle for `value`, a `part` of `credential`.
    pub fn new(credential: &str, part: &'static str, value: &[u8]) -> Needle {
        Needle {
            credential: credential.to_string(),
            part,
            value: value.to_vec(),
        }
    }
}

/// The encoding a pattern is of its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Encoding {
    Raw,
    Base64,
    Base64Url,
}

/// Where one pattern comes from.
#[derive(Debug, Clone)]
struct Pattern {
    needle: usize,
    encoding: Encoding,
    bytes: Vec<u8>,
}

/// The values of one set, as patterns searched all at once.
#[derive(Debug, Clone)]
pub struct Needles {
    needles: Vec<Needle>,
    patterns: Vec<Pattern>,
    matcher: Option<AhoCorasick>,
    /// The same patterns for a yes-or-no search with leftmost semantics, which may use the
    /// crate's vectorised searchers and prefilters (the overlapping search of `matcher` goes
    /// byte by byte): bytes in which it finds nothing hold no hit at all, and most of a stream
    /// is such bytes.
    detector: Option<AhoCorasick>,
    /// The bytes the patterns hold: an escape that stands for another byte (JSON's `\"`) can
    /// neither be nor break a hit, so it is not decoded.
    alphabet: [bool; 256],
}

/// The characters of base64 (`url`: base64url) of `value` that depend on its bytes alone when
/// it starts `shift` bytes into a 3-byte group.
fn base64_core(value: &[u8], shift: usize, url: bool) -> Vec<u8> {
    let mut shifted = vec![0u8; shift];
    shifted.extend_from_slice(value);
    let encoded = base64_encode(&shifted).into_bytes();
    let first = (8 * shift).div_ceil(6);
    let last = 8 * shifted.len() / 6;
    let mut core = encoded[first.min(last)..last].to_vec();
    if url {
        for byte in &mut core {
            *byte = match *byte {
                b'+' => b'-',
                b'/' => b'_',
                other => other,
            };
        }
    }
    core
}

impl Needles {
    /// The patterns of `needles`; empty values are left out.
    pub fn new(needles: Vec<Needle>) -> Needles {
        let needles: Vec<Needle> = needles
            .into_iter()
            .filter(|n| !n.value.is_empty())
            .collect();
        let mut patterns: Vec<Pattern> = Vec::new();
        let mut add = |needle: usize, encoding: Encoding, bytes: Vec<u8>| {
            if !bytes.is_empty() && !patterns.iter().any(|p| p.bytes == bytes) {
                patterns.push(Pattern {
                    needle,
                    encoding,
                    bytes,
                });
            }
        };
        for (index, needle) in needles.iter().enumerate() {
            add(index, Encoding::Raw, needle.value.clone());
            if needle.value.len() >= MIN_ENCODED {
                for shift in 0..3 {
                    add(
                        index,
                        Encoding::Base64,
                        base64_core(&needle.value, shift, false),
                    );
                    add(
                        index,
                        Encoding::Base64Url,
                        base64_core(&needle.value, shift, true),
                    );
                }
            }
        }
        let matcher = (!patterns.is_empty())
            .then(|| {
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::Standard)
                    .kind(Some(AhoCorasickKind::DFA))
                    .build(patterns.iter().map(|p| &p.bytes))
                    .ok()
            })
            .flatten();
        let detector = (!patterns.is_empty())
            .then(|| {
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostFirst)
                    .build(patterns.iter().map(|p| &p.bytes))
                    .ok()
            })
            .flatten();
        let mut alphabet = [false; 256];
        for byte in patterns.iter().flat_map(|p| p.bytes.iter()) {
            alphabet[usize::from(*byte)] = true;
        }
        Needles {
            needles,
            patterns,
            matcher,
            detector,
            alphabet,
        }
    }

    /// Whether there is nothing to find.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// The needles, as given (empty values left out).
    pub fn needles(&self) -> &[Needle] {
        &self.needles
    }

    /// The longest pattern, as decoded.
    fn longest(&self) -> usize {
        self.patterns
            .iter()
            .map(|p| p.bytes.len())
            .max()
            .unwrap_or(0)
    }

    /// `bytes` with every hit replaced (see [`Window`]), and the hits; for a whole value such
    /// as a header's.
    pub fn scrub(&self, bytes: &[u8]) -> (Vec<u8>, Hits) {
        let mut held = bytes.to_vec();
        let mut hits = Hits::default();
        let decoded = Decoded::of(bytes, &self.alphabet);
        for (hit, (start, end)) in self.hits_in(&decoded, &|_| true) {
            hits.add(hit);
            fill(&mut held[start..end]);
        }
        (held, hits)
    }

    /// The first hit in `bytes` whose credential `counts` (nothing is replaced).
    pub fn find(&self, bytes: &[u8], counts: impl Fn(&str) -> bool) -> Option<Hit> {
        let decoded = Decoded::of(bytes, &self.alphabet);
        self.hits_in(&decoded, &counts)
            .into_iter()
            .next()
            .map(|(hit, _)| hit)
    }

    /// Every hit in `decoded` whose credential counts, with the span of source bytes it covers.
    fn hits_in(
        &self,
        decoded: &Decoded,
        counts: &dyn Fn(&str) -> bool,
    ) -> Vec<(Hit, (usize, usize))> {
        let Some(matcher) = &self.matcher else {
            return Vec::new();
        };
        // Any hit, overlapping or not, is also a leftmost one: none, and there is nothing.
        if let Some(detector) = &self.detector {
            let as_written = decoded.bytes().len() != decoded.source().len()
                && detector.is_match(decoded.source());
            if !as_written && !detector.is_match(decoded.bytes()) {
                return Vec::new();
            }
        }
        let mut hits: Vec<(Hit, (usize, usize))> = Vec::new();
        let mut add = |pattern: usize, (start, end): (usize, usize), escaped| {
            let pattern = &self.patterns[pattern];
            let needle = &self.needles[pattern.needle];
            if !counts(&needle.credential) || hits.iter().any(|(_, span)| *span == (start, end)) {
                return;
            }
            let form = Form {
                encoding: pattern.encoding,
                escaped,
            };
            hits.push((
                Hit {
                    credential: needle.credential.clone(),
                    part: needle.part,
                    form: form.name(),
                },
                (start, end),
            ));
        };
        for found in matcher.find_overlapping_iter(decoded.bytes()) {
            let span = decoded.source_span(found.start(), found.end());
            add(
                found.pattern().as_usize(),
                span,
                decoded.escaped_in(span.0, span.1),
            );
        }
        // Decoding can also hide a value written as it is (`%4` before base64 text starting
        // with `c` reads as `%4c`): the bytes as written are searched too.
        if decoded.bytes().len() != decoded.source().len() {
            for found in matcher.find_overlapping_iter(decoded.source()) {
                add(
                    found.pattern().as_usize(),
                    (found.start(), found.end()),
                    None,
                );
            }
        }
        hits
    }

    /// How many bytes at the end of `decoded` could still be the start of a hit: the longest
    /// suffix that is a proper beginning of some pattern.
    fn open_suffix(&self, decoded: &[u8]) -> usize {
        let mut longest = 0;
        for pattern in &self.patterns {
            let most = (pattern.bytes.len() - 1).min(decoded.len());
            for k in (longest + 1..=most).rev() {
                if decoded[decoded.len() - k..] == pattern.bytes[..k] {
                    longest = k;
                    break;
                }
            }
        }
        longest
    }
}

/// How a hit was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Form {
    encoding: Encoding,
    escaped: Option<Escape>,
}

impl Form {
    /// The form's name in an audit line.
    fn name(self) -> &'static str {
        match (self.encoding, self.escaped) {
            (Encoding::Raw, None) => "raw",
            (Encoding::Raw, Some(Escape::Percent)) => "URL-encoded",
            (Encoding::Raw, Some(Escape::Json)) => "JSON-escaped",
            (Encoding::Base64, None) => "base64",
            (Encoding::Base64, Some(Escape::Percent)) => "base64, URL-encoded",
            (Encoding::Base64, Some(Escape::Json)) => "base64, JSON-escaped",
            (Encoding::Base64Url, None) => "base64url",
            (Encoding::Base64Url, Some(Escape::Percent)) => "base64url, URL-encoded",
            (Encoding::Base64Url, Some(Escape::Json)) => "base64url, JSON-escaped",
        }
    }
}

/// One value found.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Hit {
    /// The credential whose value it is.
    pub credential: String,
    /// Which of its values (`key`, `user`, `placeholder`).
    pub part: &'static str,
    /// The form it was written in: `raw`, `URL-encoded`, `JSON-escaped`, `base64`,
    /// `base64url`, or an encoding and an escape (`base64, URL-encoded`).
    pub form: &'static str,
}

/// The hits of a stream, counted by credential, part and form.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hits(BTreeMap<Hit, u64>);

impl Hits {
    /// Counts one hit.
    pub fn add(&mut self, hit: Hit) {
        *self.0.entry(hit).or_default() += 1;
    }

    /// Adds every hit of `other`.
    pub fn merge(&mut self, other: &Hits) {
        for (hit, count) in &other.0 {
            *self.0.entry(hit.clone()).or_default() += count;
        }
    }

    /// The first hit, in order (credential, part, form).
    pub fn first(&self) -> Option<&Hit> {
        self.0.keys().next()
    }

    /// How many hits in all.
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The credentials found, in order, once each.
    pub fn credentials(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.0.keys().map(|hit| hit.credential.as_str()).collect();
        names.dedup();
        names
    }

    /// `anthropic key: raw 2, base64 1` for each credential and part: never a value.
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut current: Option<(&str, &str)> = None;
        for (hit, count) in &self.0 {
            let this = (hit.credential.as_str(), hit.part);
            if current != Some(this) {
                parts.push(format!(
                    "{} {}: {} {count}",
                    hit.credential, hit.part, hit.form
                ));
                current = Some(this);
            } else if let Some(last) = parts.last_mut() {
                last.push_str(&format!(", {} {count}", hit.form));
            }
        }
        parts.join("; ")
    }
}

/// Replaces `bytes` with [`FILLER`], from its start.
fn fill(bytes: &mut [u8]) {
    for (at, byte) in bytes.iter_mut().enumerate() {
        *byte = FILLER[at % FILLER.len()];
    }
}

/// A hit and the span of source bytes it covers.
type Spanned = (Hit, (usize, usize));

/// A stream searched and scrubbed as it passes: see the module documentation.
#[derive(Debug, Clone)]
pub struct Window {
    needles: Arc<Needles>,
    /// The credentials whose hits do not count here (a placeholder's own host).
    ignored: Vec<String>,
    /// The bytes held back: the start of what may still be a hit.
    held: Vec<u8>,
    /// How many source bytes at the start of `held` were replaced already.
    replaced_to: usize,
    hits: Hits,
    longest: usize,
}

impl Window {
    /// An empty window over `needles`.
    pub fn new(needles: Arc<Needles>) -> Window {
        Window::ignoring(needles, Vec::new())
    }

    /// An empty window over `needles` in which the hits of the `ignored` credentials do not
    /// count (and are not replaced).
    pub fn ignoring(needles: Arc<Needles>, ignored: Vec<String>) -> Window {
        let longest = needles.longest();
        Window {
            needles,
            ignored,
            held: Vec::new(),
            replaced_to: 0,
            hits: Hits::default(),
            longest,
        }
    }

    /// Whether the hits of `credential` do not count in this window.
    pub fn ignores(&self, credential: &str) -> bool {
        self.ignored.iter().any(|name| name == credential)
    }

    /// Takes the next chunk; returns the bytes that can be released now, scrubbed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if let Some(release) = self.pass(chunk) {
            return chunk[..release].to_vec();
        }
        self.held.extend_from_slice(chunk);
        self.release(false)
    }

    /// The common case between chunks of a stream, without a copy: when nothing is held and
    /// `chunk` holds no hit, keeps the end of it that may still begin one and returns how many
    /// of its first bytes can be released as they are; `None` otherwise (then the chunk is
    /// [pushed](Window::push)).
    pub fn pass(&mut self, chunk: &[u8]) -> Option<usize> {
        if self.needles.is_empty() {
            return Some(chunk.len());
        }
        if !self.held.is_empty() {
            return None;
        }
        let (spans, release) = self.plan(chunk, false);
        if !spans.is_empty() {
            return None;
        }
        self.held.extend_from_slice(&chunk[release..]);
        self.replaced_to = 0;
        Some(release)
    }

    /// The end of the stream: the bytes still held, scrubbed.
    pub fn finish(&mut self) -> Vec<u8> {
        self.release(true)
    }

    /// The hits so far.
    pub fn hits(&self) -> &Hits {
        &self.hits
    }

    /// Takes the hits counted so far, leaving none.
    pub fn take_hits(&mut self) -> Hits {
        std::mem::take(&mut self.hits)
    }

    /// How many bytes are held back now.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    fn release(&mut self, end: bool) -> Vec<u8> {
        let (spans, release) = self.plan(&self.held, end);
        let mut replaced_to = self.replaced_to;
        for (hit, (start, end)) in spans {
            self.hits.add(hit);
            fill(&mut self.held[start..end]);
            replaced_to = replaced_to.max(end);
        }
        let out: Vec<u8> = self.held.drain(..release).collect();
        self.replaced_to = replaced_to.saturating_sub(release);
        out
    }

    /// What `bytes` (the bytes held, as they would be) holds: each hit not replaced already,
    /// with its span, and how many bytes can be released (all at the `end`).
    fn plan(&self, bytes: &[u8], end: bool) -> (Vec<Spanned>, usize) {
        let decoded = Decoded::of(bytes, &self.needles.alphabet);
        let ignored = &self.ignored;
        let counts = |credential: &str| !ignored.iter().any(|name| name == credential);
        let spans: Vec<Spanned> = self
            .needles
            .hits_in(&decoded, &counts)
            .into_iter()
            // A hit within bytes already replaced was counted when they were.
            .filter(|(_, (_, end))| *end > self.replaced_to)
            .collect();
        let release = if end {
            bytes.len()
        } else {
            // An escape cut off at the end is held whole; before it (or the end), the
            // longest suffix that may begin a pattern.
            let cut = decoded.cut_escape().unwrap_or(bytes.len());
            let before = decoded.decoded_index(cut);
            let open = self
                .needles
                .open_suffix(&decoded.bytes()[..before])
                .min(self.longest);
            // The bytes as written may begin a value too (see `hits_in`).
            let raw = self.needles.open_suffix(bytes).min(self.longest);
            decoded
                .source_span(before - open, before)
                .0
                .min(bytes.len() - raw)
        };
        (spans, release)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"sk-ant-real-0123456789abcdef";
    const USER: &[u8] = b"pk-lf-user-42424242";

    fn needles() -> Arc<Needles> {
        Arc::new(Needles::new(vec![
            Needle::new("anthropic", "key", KEY),
            Needle::new("langfuse", "user", USER),
        ]))
    }

    /// Every split of `input` into two chunks, and one byte at a time, gives the same output
    /// and the same count as the whole.
    fn streamed(needles: &Arc<Needles>, input: &[u8]) -> (Vec<u8>, u64) {
        let (whole, hits) = needles.scrub(input);
        let splits = (0..=input.len()).map(|at| vec![&input[..at], &input[at..]]);
        let bytewise = std::iter::once(input.chunks(1).collect::<Vec<_>>());
        for chunks in splits.chain(bytewise) {
            let mut window = Window::new(needles.clone());
            let mut out = Vec::new();
            for chunk in &chunks {
                out.extend(window.push(chunk));
                assert!(window.held() <= 6 * needles.longest());
            }
            out.extend(window.finish());
            assert_eq!(out, whole, "chunks {chunks:?}");
            assert_eq!(window.hits().total(), hits.total(), "chunks {chunks:?}");
        }
        (whole, hits.total())
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn every_form_is_replaced_at_every_split() {
        let key = std::str::from_utf8(KEY).unwrap();
        let percent: String = key.bytes().map(|b| format!("%{b:02x}")).collect();
        let json: String = key.bytes().map(|b| format!("\\u{:04X}", b)).collect();
        let basic = base64_encode(format!("user:{key}").as_bytes());
        let url = base64_encode(format!("xy{key}").as_bytes())
            .replace('+', "-")
            .replace('/', "_");
        let mixed_escapes = key.replacen('-', "%2D", 1).replacen('-', "\\u002d", 1);
        for (input, form) in [
            (format!("echo: {key}\n"), "raw"),
            (format!("GET /?k={percent} HTTP/1.1"), "URL-encoded"),
            (format!("{{\"k\":\"{json}\"}}"), "JSON-escaped"),
            (format!("Authorization: Basic {basic}"), "base64"),
            // This key's base64url has no `-` or `_`: it is its base64 as well.
            (format!("token={url}"), "base64"),
            (format!("q={mixed_escapes}&"), "URL-encoded"),
        ] {
            let (out, count) = streamed(&needles(), input.as_bytes());
            assert_eq!(count, 1, "{input}");
            assert_eq!(out.len(), input.len(), "length kept: {input}");
            for leaked in [
                KEY.to_vec(),
                percent.as_bytes().to_vec(),
                json.as_bytes().to_vec(),
            ] {
                assert!(
                    !contains(&out, &leaked),
                    "{input} -> {}",
                    String::from_utf8_lossy(&out)
                );
            }
            assert!(
                needles().find(&out, |_| true).is_none(),
                "{form}: {}",
                String::from_utf8_lossy(&out)
            );
            let (_, hits) = needles().scrub(input.as_bytes());
            assert!(hits.summary().contains(form), "{form}: {}", hits.summary());
        }
    }

    #[test]
    fn base64_of_the_key_is_gone_at_every_alignment() {
        for prefix in ["", "a", "ab", "abc:", "user:"] {
            let text = format!("{prefix}{}", std::str::from_utf8(KEY).unwrap());
            let encoded = base64_encode(text.as_bytes());
            let (out, count) = streamed(&needles(), encoded.as_bytes());
            assert!(count >= 1, "{prefix}");
            let decoded =
                crate::credential::base64_decode(std::str::from_utf8(&out).unwrap()).unwrap();
            assert!(!contains(&decoded, KEY), "{prefix}");
            assert!(
                !contains(&decoded, &KEY[1..KEY.len() - 1]),
                "{prefix}: a core of the key survived"
            );
        }
    }

    #[test]
    fn the_user_part_and_repeats_are_counted_and_nothing_else_changes() {
        let user = std::str::from_utf8(USER).unwrap();
        let key = std::str::from_utf8(KEY).unwrap();
        let input = format!("{user} and {key}{key} but not sk-ant-real-0123 or 100% \\ \\u");
        let (out, count) = streamed(&needles(), input.as_bytes());
        assert_eq!(count, 3);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.ends_with(" but not sk-ant-real-0123 or 100% \\ \\u"),
            "{text}"
        );
        let (_, hits) = needles().scrub(input.as_bytes());
        assert_eq!(hits.summary(), "anthropic key: raw 2; langfuse user: raw 1");
        assert_eq!(hits.credentials(), ["anthropic", "langfuse"]);
    }

    #[test]
    fn only_the_beginning_of_a_key_is_held_back() {
        let mut window = Window::new(needles());
        assert_eq!(window.push(b"data: event 1\n\n"), b"data: event 1\n\n");
        assert_eq!(window.push(b"data: sk-ant"), b"data: ");
        assert_eq!(window.held(), 6);
        assert_eq!(window.push(b"-x"), b"sk-ant-x");
        assert_eq!(window.push(b"100%2"), b"100");
        assert_eq!(window.push(b"0 done"), b"%20 done");
        assert!(window.finish().is_empty());
        assert!(
            Window::new(Arc::new(Needles::new(Vec::new())))
                .push(b"x")
                .len()
                == 1
        );
    }

    /// A form of `KEY` a client could decode, by number.
    fn form(which: u8, prefix: &str) -> String {
        let key = std::str::from_utf8(KEY).unwrap();
        match which % 6 {
            0 => key.to_string(),
            1 => key.bytes().map(|b| format!("%{b:02X}")).collect(),
            2 => key.bytes().map(|b| format!("\\u{b:04x}")).collect(),
            3 => base64_encode(format!("{prefix}{key}").as_bytes()),
            4 => base64_encode(format!("{prefix}{key}").as_bytes())
                .replace('+', "-")
                .replace('/', "_"),
            _ => key.replacen('-', "%2d", 1).replacen('-', "\\u002D", 1),
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// Any text with the key in any form anywhere, cut into any chunks: the output has the
        /// input's length, is what the whole input gives, and decodes to no key (the decoders
        /// of `crate::replay` and base64 of every run, independent of the window's own).
        #[test]
        fn no_form_survives_any_text_and_any_cuts(
            noise in "[ -~]{0,60}",
            tail in "[ -~]{0,60}",
            which in 0u8..6,
            prefix in "[a-z:]{0,3}",
            cuts in proptest::collection::vec(1usize..40, 0..8),
        ) {
            let input = format!("{noise}{}{tail}", form(which, &prefix));
            let needles = needles();
            let (whole, _) = needles.scrub(input.as_bytes());
            let mut window = Window::new(needles.clone());
            let (mut out, mut at) = (Vec::new(), 0);
            for cut in cuts {
                let end = (at + cut).min(input.len());
                out.extend(window.push(&input.as_bytes()[at..end]));
                at = end;
            }
            out.extend(window.push(&input.as_bytes()[at..]));
            out.extend(window.finish());
            proptest::prop_assert_eq!(&out, &whole);
            proptest::prop_assert_eq!(out.len(), input.len());
            let text = String::from_utf8_lossy(&out).to_string();
            let mut decodings = vec![
                out.clone(),
                crate::replay::percent_decoded(&out),
                crate::replay::json_unescaped(&out),
            ];
            let alphabet = |c: char| c.is_ascii_alphanumeric() || "+/-_=".contains(c);
            for run in text.split(|c: char| !alphabet(c)).filter(|r| r.len() >= 8) {
                for offset in 0..4.min(run.len()) {
                    decodings.extend(crate::credential::base64_decode(&run[offset..]));
                }
            }
            for decoded in decodings {
                proptest::prop_assert!(!contains(&decoded, KEY), "{} -> {}", input, text);
            }
        }
    }

    #[test]
    fn short_values_are_searched_only_as_they_are() {
        let needles = Needles::new(vec![Needle::new("a", "user", b"admin")]);
        assert_eq!(needles.patterns.len(), 1);
        assert_eq!(needles.scrub(b"an admin").0, b"an redac");
    }
}
