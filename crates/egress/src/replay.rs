//! Finding a placeholder where it does not belong: the workload's placeholders (one per bound
//! variable, [`crate::credential`]) looked for in a request line, its headers and its body, as
//! sent, percent-decoded, JSON-unescaped and inside `Basic` credentials. A request to another
//! host than the placeholder's credential is bound to is refused (`credential-replay`) before
//! anything of it leaves the proxy.
//!
//! ```
//! use agentc_egress::replay::Placeholders;
//! let placeholders = Placeholders::new(vec![(
//!     "anthropic".to_string(),
//!     "ANTHROPIC_API_KEY".to_string(),
//!     "sk-ant-0123456789abcdefghijKLMNOP".to_string(),
//! )]);
//! let found = placeholders.find(b"q=sk-ant-0123456789abcdefghij%4BLMNOP", |_| true).unwrap();
//! assert_eq!((found.credential.as_str(), found.how), ("anthropic", "percent-encoded"));
//! assert!(placeholders.find(b"nothing here", |_| true).is_none());
//! ```

use aho_corasick::AhoCorasick;

use crate::credential::base64_decode;

/// Where a placeholder was found, and in which form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The credential whose placeholder it is.
    pub credential: String,
    /// The workload's variable that holds it.
    pub variable: String,
    /// `as sent`, `percent-encoded`, `JSON-escaped` or `base64`.
    pub how: &'static str,
}

/// The placeholders of one launch, searched all at once.
#[derive(Debug, Clone)]
pub struct Placeholders {
    /// `(credential, variable, placeholder)`, in the order given.
    entries: Vec<(String, String, String)>,
    matcher: Option<AhoCorasick>,
}

impl Placeholders {
    /// The placeholders `(credential, variable, placeholder)`; empty ones are left out.
    pub fn new(entries: Vec<(String, String, String)>) -> Placeholders {
        let entries: Vec<_> = entries
            .into_iter()
            .filter(|(_, _, placeholder)| !placeholder.is_empty())
            .collect();
        let matcher = if entries.is_empty() {
            None
        } else {
            AhoCorasick::new(entries.iter().map(|(_, _, p)| p.as_bytes())).ok()
        };
        Placeholders { entries, matcher }
    }

    /// Whether there is any placeholder to look for.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The credential whose placeholder `bytes` hold, among those `counts` says count here
    /// (a credential's own placeholder to one of its hosts does not), in any of the forms.
    pub fn find(&self, bytes: &[u8], counts: impl Fn(&str) -> bool) -> Option<Found> {
        let matcher = self.matcher.as_ref()?;
        let search = |haystack: &[u8], how: &'static str| {
            matcher.find_overlapping_iter(haystack).find_map(|hit| {
                let (credential, variable, _) = &self.entries[hit.pattern().as_usize()];
                counts(credential).then(|| Found {
                    credential: credential.clone(),
                    variable: variable.clone(),
                    how,
                })
            })
        };
        if let Some(found) = search(bytes, "as sent") {
            return Some(found);
        }
        if bytes.contains(&b'%') {
            if let Some(found) = search(&percent_decoded(bytes), "percent-encoded") {
                return Some(found);
            }
        }
        if bytes.contains(&b'\\') {
            if let Some(found) = search(&json_unescaped(bytes), "JSON-escaped") {
                return Some(found);
            }
        }
        None
    }

    /// [`Placeholders::find`] in one header value, also inside `Basic` credentials (base64).
    pub fn find_in_header(&self, value: &[u8], counts: impl Fn(&str) -> bool) -> Option<Found> {
        if let Some(found) = self.find(value, &counts) {
            return Some(found);
        }
        let text = std::str::from_utf8(value).ok()?;
        let token = text
            .trim()
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
            .map_or(text.trim(), |(_, token)| token.trim());
        if token.len() < 8 {
            return None;
        }
        let decoded = base64_decode(token)?;
        self.find(&decoded, counts).map(|mut found| {
            found.how = "base64";
            found
        })
    }
}

/// `bytes` with every valid `%XX` escape decoded (and `+` read as a space); other bytes kept.
pub fn percent_decoded(bytes: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (
            bytes[i],
            bytes.get(i + 1).copied(),
            bytes.get(i + 2).copied(),
        ) {
            (b'%', Some(h), Some(l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push(hex(h).unwrap_or(0) << 4 | hex(l).unwrap_or(0));
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

/// `bytes` with JSON string escapes (`\uXXXX`, `\/`, `\"`, ...) decoded; other bytes kept.
pub fn json_unescaped(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' || i + 1 >= bytes.len() {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes[i + 1] {
            b'u' => {
                let code = bytes
                    .get(i + 2..i + 6)
                    .and_then(|hex| std::str::from_utf8(hex).ok())
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .and_then(char::from_u32);
                match code {
                    Some(c) => {
                        let mut buffer = [0u8; 4];
                        out.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
                        i += 6;
                    }
                    None => {
                        out.push(b'\\');
                        i += 1;
                    }
                }
            }
            b'n' => {
                out.push(b'\n');
                i += 2;
            }
            b't' => {
                out.push(b'\t');
                i += 2;
            }
            other => {
                out.push(other);
                i += 2;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credential::base64_encode;

    const ANT: &str = "sk-ant-AAAAbbbbCCCCdddd0123456789";
    const LF: &str = "sk-lf-ZZZZyyyyXXXXwwww9876543210";

    fn placeholders() -> Placeholders {
        Placeholders::new(vec![
            ("anthropic".into(), "ANTHROPIC_API_KEY".into(), ANT.into()),
            ("langfuse".into(), "LANGFUSE_SECRET_KEY".into(), LF.into()),
        ])
    }

    #[test]
    fn every_form_is_found_and_own_hosts_do_not_count() {
        let p = placeholders();
        let escaped: String = ANT
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        let encoded: String = ANT.bytes().map(|b| format!("%{b:02X}")).collect();
        for (text, how) in [
            (format!("{{\"key\":\"{ANT}\"}}"), "as sent"),
            (format!("GET /?k={encoded} HTTP/1.1"), "percent-encoded"),
            (format!("{{\"key\":\"{escaped}\"}}"), "JSON-escaped"),
        ] {
            let found = p.find(text.as_bytes(), |_| true).unwrap();
            assert_eq!((found.credential.as_str(), found.how), ("anthropic", how));
        }
        let basic = format!("Basic {}", base64_encode(format!("pk:{LF}").as_bytes()));
        let found = p.find_in_header(basic.as_bytes(), |_| true).unwrap();
        assert_eq!(
            (found.credential.as_str(), found.how),
            ("langfuse", "base64")
        );
        // The credential's own placeholder on its own host is not a replay.
        assert!(p
            .find(ANT.as_bytes(), |credential| credential != "anthropic")
            .is_none());
        assert!(p.find(b"sk-ant-AAAAbbbb", |_| true).is_none());
        assert!(Placeholders::new(Vec::new())
            .find(ANT.as_bytes(), |_| true)
            .is_none());
    }
}
