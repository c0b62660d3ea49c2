//! The decoder of [`super`]: bytes with their `%XX` and JSON escapes read as the byte they
//! stand for, and the way back from a decoded hit to the bytes it was written as.

/// The longest escape, `\u00XX`, as written.
pub(super) const LONGEST_ESCAPE: usize = 6;

/// An escape the decoder reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Escape {
    Percent,
    Json,
}

/// Bytes as decoded, with where each escape was: the decoded bytes between escapes are the
/// source's, so only the escapes are recorded (most text has few or none).
pub(super) struct Decoded<'a> {
    source: &'a [u8],
    /// `None` when nothing in the source is an escape: the decoded bytes are the source.
    units: Option<Units>,
}

struct Units {
    bytes: Vec<u8>,
    /// Each escape read, in order.
    escapes: Vec<Escaped>,
}

/// One escape: its decoded byte's index, where it was written and how long, and its kind.
#[derive(Debug, Clone, Copy)]
struct Escaped {
    at: usize,
    source: usize,
    len: usize,
    kind: Escape,
}

fn hex(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|d| d as u8)
}

/// The escape at the start of `rest`: its byte and length, `Err(())` when `rest` could be the
/// beginning of one that is cut off, `Ok(None)` when it is not one.
pub(super) fn escape_at(rest: &[u8]) -> Result<Option<(u8, usize, Escape)>, ()> {
    match rest {
        [b'%', h, l, ..] => Ok(hex(*h)
            .zip(hex(*l))
            .map(|(h, l)| (h << 4 | l, 3, Escape::Percent))),
        [b'%', h] if hex(*h).is_some() => Err(()),
        [b'%'] => Err(()),
        [b'\\', b'u', tail @ ..] => {
            let digits: Vec<u8> = tail.iter().take(4).copied().collect();
            if digits.iter().any(|d| hex(*d).is_none()) {
                return Ok(None);
            }
            if digits.len() < 4 {
                return Err(());
            }
            let code = digits
                .iter()
                .fold(0u32, |code, d| code << 4 | u32::from(hex(*d).unwrap_or(0)));
            Ok(u8::try_from(code)
                .ok()
                .filter(u8::is_ascii)
                .map(|byte| (byte, LONGEST_ESCAPE, Escape::Json)))
        }
        [b'\\', next, ..] if matches!(next, b'/' | b'\\' | b'"') => {
            Ok(Some((*next, 2, Escape::Json)))
        }
        [b'\\'] => Err(()),
        _ => Ok(None),
    }
}

impl<'a> Decoded<'a> {
    /// `source` decoded: the escapes that stand for a byte of `alphabet` (others can neither
    /// be part of a hit nor break one, so they stay as written).
    pub(super) fn of(source: &'a [u8], alphabet: &[bool; 256]) -> Decoded<'a> {
        let relevant = |at: usize| match escape_at(&source[at..]) {
            Ok(Some((byte, len, kind))) if alphabet[usize::from(byte)] => Some((byte, len, kind)),
            _ => None,
        };
        // The first escape: a `%` or `\\` that is not one (`\\n`, `100%`) changes nothing.
        let first = memchr::memchr2_iter(b'%', b'\\', source).find(|at| relevant(*at).is_some());
        let Some(first) = first else {
            return Decoded {
                source,
                units: None,
            };
        };
        let mut units = Units {
            bytes: Vec::with_capacity(source.len()),
            escapes: Vec::new(),
        };
        units.bytes.extend_from_slice(&source[..first]);
        let mut at = first;
        while at < source.len() {
            match relevant(at) {
                Some((byte, len, kind)) => {
                    units.escapes.push(Escaped {
                        at: units.bytes.len(),
                        source: at,
                        len,
                        kind,
                    });
                    units.bytes.push(byte);
                    at += len;
                }
                _ => {
                    units.bytes.push(source[at]);
                    at += 1;
                }
            }
            let next = memchr::memchr2(b'%', b'\\', &source[at..]).map_or(source.len(), |n| at + n);
            units.bytes.extend_from_slice(&source[at..next]);
            at = next;
        }
        if units.escapes.is_empty() {
            return Decoded {
                source,
                units: None,
            };
        }
        Decoded {
            source,
            units: Some(units),
        }
    }

    /// The bytes as written.
    pub(super) fn source(&self) -> &[u8] {
        self.source
    }

    pub(super) fn bytes(&self) -> &[u8] {
        self.units.as_ref().map_or(self.source, |u| &u.bytes)
    }

    /// Where decoded byte `index` (or the end, at the length) starts in the source.
    fn source_of(&self, index: usize) -> usize {
        let Some(units) = &self.units else {
            return index;
        };
        let k = units.escapes.partition_point(|e| e.at < index);
        match (
            units.escapes.get(k),
            k.checked_sub(1).map(|k| units.escapes[k]),
        ) {
            (Some(escape), _) if escape.at == index => escape.source,
            (_, None) => index,
            (_, Some(before)) => before.source + before.len + (index - before.at - 1),
        }
    }

    /// The source span of decoded bytes `start..end`.
    pub(super) fn source_span(&self, start: usize, end: usize) -> (usize, usize) {
        (self.source_of(start), self.source_of(end))
    }

    /// The decoded index of the first decoded byte at or after source offset `source`.
    pub(super) fn decoded_index(&self, source: usize) -> usize {
        let Some(units) = &self.units else {
            return source;
        };
        let k = units.escapes.partition_point(|e| e.source < source);
        match k.checked_sub(1).map(|k| units.escapes[k]) {
            None => source,
            Some(before) if source < before.source + before.len => before.at + 1,
            Some(before) => before.at + 1 + (source - before.source - before.len),
        }
    }

    /// The escape of the source span, if any byte in it was one (percent first).
    pub(super) fn escaped_in(&self, start: usize, end: usize) -> Option<Escape> {
        let units = self.units.as_ref()?;
        let from = units.escapes.partition_point(|e| e.source < start);
        let to = units.escapes.partition_point(|e| e.source < end);
        let kinds = &units.escapes[from..to];
        if kinds.iter().any(|e| e.kind == Escape::Percent) {
            Some(Escape::Percent)
        } else if kinds.is_empty() {
            None
        } else {
            Some(Escape::Json)
        }
    }

    /// Where an escape cut off by the end of the source starts, if one is.
    pub(super) fn cut_escape(&self) -> Option<usize> {
        let from = self.source.len().saturating_sub(LONGEST_ESCAPE - 1);
        (from..self.source.len()).find(|at| {
            matches!(self.source[*at], b'%' | b'\\') && escape_at(&self.source[*at..]).is_err()
        })
    }
}
