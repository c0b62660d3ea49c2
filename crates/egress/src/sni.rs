//! The TLS ClientHello reader: the server name a client asks for, read without interception.
//!
//! A ClientHello may span several TLS records, and the records several TCP reads; [`parse`]
//! takes everything received so far and says [`SniError::Incomplete`] until the handshake
//! message is whole. It never buffers more than [`MAX_CLIENT_HELLO`] bytes of handshake. Every
//! length is checked against what is left, so garbage is an error, never a panic. A hello that
//! is TLS but could be read two ways (two host names, a repeated extension) is
//! [`SniError::Ambiguous`], apart from bytes that are not TLS at all ([`SniError::Invalid`]).

use std::fmt;

/// The largest ClientHello accepted, in bytes of handshake message (post-quantum key shares
/// make hellos of 2 KiB common; 16 KiB is the most one record can carry).
pub const MAX_CLIENT_HELLO: usize = 16 * 1024;

/// The most bytes of records the reader looks at for one hello (record headers included).
pub const MAX_RECORD_BYTES: usize = MAX_CLIENT_HELLO + 64 * 5;

const CONTENT_HANDSHAKE: u8 = 22;
const HANDSHAKE_CLIENT_HELLO: u8 = 1;
const EXT_SERVER_NAME: u16 = 0;
/// The encrypted_client_hello extension (RFC 9849).
pub const EXT_ENCRYPTED_CLIENT_HELLO: u16 = 0xfe0d;
/// The encrypted_server_name extension of the ESNI drafts.
pub const EXT_ENCRYPTED_SERVER_NAME: u16 = 0xffce;

/// What the ClientHello says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientHello {
    /// The `host_name` of the server_name extension, if any (as sent).
    pub server_name: Option<String>,
    /// Whether the hello carries an encrypted_client_hello extension (real or GREASE).
    pub ech: bool,
    /// Whether the hello carries the encrypted_server_name extension of the ESNI drafts.
    pub esni: bool,
    /// How many bytes of the input the records holding the hello took.
    pub consumed: usize,
}

/// Why no server name could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SniError {
    /// Not enough bytes yet: read more (within the bounds) and try again.
    Incomplete,
    /// Not a TLS ClientHello, malformed, or larger than the bounds.
    Invalid(&'static str),
    /// A well-framed ClientHello that names its server ambiguously: two host names in the
    /// server_name extension, or an extension that appears twice.
    Ambiguous(&'static str),
}

impl fmt::Display for SniError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SniError::Incomplete => f.write_str("incomplete ClientHello"),
            SniError::Invalid(why) | SniError::Ambiguous(why) => f.write_str(why),
        }
    }
}

/// A cursor over a byte slice whose every read is bounds-checked.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], SniError> {
        if self.bytes.len() < n {
            return Err(SniError::Invalid(
                "a length runs past its enclosing structure",
            ));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, SniError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, SniError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn vec8(&mut self) -> Result<&'a [u8], SniError> {
        let n = self.u8()? as usize;
        self.take(n)
    }
    fn vec16(&mut self) -> Result<&'a [u8], SniError> {
        let n = self.u16()? as usize;
        self.take(n)
    }
}

/// Reassembles the handshake bytes from the records in `input`: `Ok((handshake, consumed))`
/// once the first handshake message is whole.
fn reassemble(input: &[u8]) -> Result<(Vec<u8>, usize), SniError> {
    let mut handshake = Vec::new();
    let mut offset = 0;
    loop {
        if handshake.len() >= 4 {
            let length = u32::from_be_bytes([0, handshake[1], handshake[2], handshake[3]]) as usize;
            if handshake[0] != HANDSHAKE_CLIENT_HELLO {
                return Err(SniError::Invalid(
                    "the first handshake message is not a ClientHello",
                ));
            }
            if length > MAX_CLIENT_HELLO {
                return Err(SniError::Invalid("the ClientHello is larger than 16 KiB"));
            }
            if handshake.len() >= 4 + length {
                handshake.truncate(4 + length);
                return Ok((handshake, offset));
            }
        }
        let Some(header) = input.get(offset..offset + 5) else {
            // A record header that is not all there yet; garbage shows itself in the first byte.
            if let Some(&first) = input.get(offset) {
                if first != CONTENT_HANDSHAKE {
                    return Err(SniError::Invalid("not a TLS handshake record"));
                }
            }
            return Err(SniError::Incomplete);
        };
        if header[0] != CONTENT_HANDSHAKE {
            return Err(SniError::Invalid("not a TLS handshake record"));
        }
        if header[1] != 3 || header[2] > 4 {
            return Err(SniError::Invalid("not a TLS record version (3.0 to 3.4)"));
        }
        let length = u16::from_be_bytes([header[3], header[4]]) as usize;
        if length == 0 {
            return Err(SniError::Invalid("an empty handshake record"));
        }
        if length > 16 * 1024 {
            return Err(SniError::Invalid("a TLS record longer than 16 KiB"));
        }
        if offset + 5 + length > MAX_RECORD_BYTES {
            return Err(SniError::Invalid(
                "the ClientHello's records exceed the bound",
            ));
        }
        let Some(fragment) = input.get(offset + 5..offset + 5 + length) else {
            return Err(SniError::Incomplete);
        };
        handshake.extend_from_slice(fragment);
        offset += 5 + length;
    }
}

/// Reads the ClientHello at the start of `input` (what a client sent after the tunnel opened).
///
/// ```
/// use agentc_egress::sni::{client_hello, parse, SniError};
/// let hello = client_hello(Some("example.com"));
/// assert_eq!(parse(&hello).unwrap().server_name.as_deref(), Some("example.com"));
/// assert_eq!(parse(&hello[..10]), Err(SniError::Incomplete));
/// assert!(matches!(parse(b"GET / HTTP/1.1\r\n"), Err(SniError::Invalid(_))));
/// ```
pub fn parse(input: &[u8]) -> Result<ClientHello, SniError> {
    let (handshake, consumed) = reassemble(input)?;
    let mut r = Reader {
        bytes: &handshake[4..],
    };
    let version = r.u16()?;
    if version >> 8 != 3 {
        return Err(SniError::Invalid("not a TLS ClientHello version"));
    }
    r.take(32)?; // random
    let session_id = r.vec8()?;
    if session_id.len() > 32 {
        return Err(SniError::Invalid("a session id longer than 32 bytes"));
    }
    let suites = r.vec16()?;
    if suites.is_empty() || suites.len() % 2 != 0 {
        return Err(SniError::Invalid("a malformed cipher suite list"));
    }
    if r.vec8()?.is_empty() {
        return Err(SniError::Invalid("no compression methods"));
    }
    if r.bytes.is_empty() {
        // No extensions at all: no SNI.
        return Ok(ClientHello {
            server_name: None,
            ech: false,
            esni: false,
            consumed,
        });
    }
    let mut extensions = Reader { bytes: r.vec16()? };
    if !r.bytes.is_empty() {
        return Err(SniError::Invalid("bytes after the extensions"));
    }
    let mut seen = Vec::new();
    let mut server_name = None;
    let mut ech = false;
    let mut esni = false;
    // Framing first: a repeated extension is reported only for a hello that is whole.
    let mut server_name_data = None;
    let mut repeated = false;
    while !extensions.bytes.is_empty() {
        let kind = extensions.u16()?;
        let data = extensions.vec16()?;
        if seen.contains(&kind) {
            repeated = true;
        }
        seen.push(kind);
        match kind {
            EXT_SERVER_NAME => server_name_data = Some(data),
            EXT_ENCRYPTED_CLIENT_HELLO => ech = true,
            EXT_ENCRYPTED_SERVER_NAME => esni = true,
            _ => {}
        }
    }
    if repeated {
        return Err(SniError::Ambiguous(
            "an extension appears twice in the ClientHello",
        ));
    }
    if let Some(data) = server_name_data {
        server_name = Some(read_server_name(data)?);
    }
    Ok(ClientHello {
        server_name,
        ech,
        esni,
        consumed,
    })
}

/// The one `host_name` of a server_name extension (RFC 6066 section 3).
fn read_server_name(data: &[u8]) -> Result<String, SniError> {
    let mut outer = Reader { bytes: data };
    let mut list = Reader {
        bytes: outer.vec16()?,
    };
    if !outer.bytes.is_empty() {
        return Err(SniError::Invalid("bytes after the server name list"));
    }
    let mut host = None;
    while !list.bytes.is_empty() {
        let kind = list.u8()?;
        let name = list.vec16()?;
        if kind == 0 {
            if host.is_some() {
                return Err(SniError::Ambiguous(
                    "two host names in the server_name extension",
                ));
            }
            if name.is_empty() || !name.is_ascii() {
                return Err(SniError::Invalid(
                    "a server name that is empty or not ASCII",
                ));
            }
            host = Some(String::from_utf8_lossy(name).into_owned());
        }
    }
    host.ok_or(SniError::Invalid(
        "a server_name extension without a host name",
    ))
}

/// Builds a minimal but well-formed TLS 1.3-style ClientHello in one record, for tests, the
/// testkit and the benchmarks: `server_name` as its SNI when given.
pub fn client_hello(server_name: Option<&str>) -> Vec<u8> {
    client_hello_with(server_name, false)
}

/// As [`client_hello`], with an encrypted_client_hello extension when `ech` is set.
pub fn client_hello_with(server_name: Option<&str>, ech: bool) -> Vec<u8> {
    let extra: &[(u16, &[u8])] = if ech {
        &[(EXT_ENCRYPTED_CLIENT_HELLO, &[0; 40])]
    } else {
        &[]
    };
    client_hello_extensions(server_name, extra)
}

/// As [`client_hello`], with the extensions `extra` (type, data) after server_name and
/// supported_versions, in order: an ESNI hello, a repeated extension.
pub fn client_hello_extensions(server_name: Option<&str>, extra: &[(u16, &[u8])]) -> Vec<u8> {
    let mut extensions = Vec::new();
    if let Some(name) = server_name {
        let name = name.as_bytes();
        let mut list = vec![0u8];
        list.extend_from_slice(&(name.len() as u16).to_be_bytes());
        list.extend_from_slice(name);
        let mut data = (list.len() as u16).to_be_bytes().to_vec();
        data.extend_from_slice(&list);
        push_extension(&mut extensions, EXT_SERVER_NAME, &data);
    }
    // supported_versions: TLS 1.3
    push_extension(&mut extensions, 43, &[2, 3, 4]);
    for (kind, data) in extra {
        push_extension(&mut extensions, *kind, data);
    }
    let mut body = vec![3, 3];
    body.extend_from_slice(&[7; 32]);
    body.push(32);
    body.extend_from_slice(&[9; 32]);
    body.extend_from_slice(&[0, 2, 0x13, 0x01]);
    body.extend_from_slice(&[1, 0]);
    body.extend_from_slice(&(extensions.len() as u16).to_be_bytes());
    body.extend_from_slice(&extensions);
    let mut handshake = vec![HANDSHAKE_CLIENT_HELLO];
    handshake.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    handshake.extend_from_slice(&body);
    records(&handshake, usize::MAX)
}

/// Splits handshake bytes into handshake records of at most `fragment` bytes each.
pub fn records(handshake: &[u8], fragment: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in handshake.chunks(fragment.clamp(1, 16 * 1024)) {
        out.extend_from_slice(&[CONTENT_HANDSHAKE, 3, 1]);
        out.extend_from_slice(&(chunk.len() as u16).to_be_bytes());
        out.extend_from_slice(chunk);
    }
    out
}

fn push_extension(out: &mut Vec<u8>, kind: u16, data: &[u8]) {
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&(data.len() as u16).to_be_bytes());
    out.extend_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The handshake bytes of a hello built in one record.
    fn handshake_of(hello: &[u8]) -> Vec<u8> {
        hello[5..].to_vec()
    }

    #[test]
    fn a_hello_in_one_record_gives_its_sni() {
        let hello = client_hello(Some("Allowed.Test"));
        let parsed = parse(&hello).unwrap();
        assert_eq!(parsed.server_name.as_deref(), Some("Allowed.Test"));
        assert!(!parsed.ech);
        assert_eq!(parsed.consumed, hello.len());
    }

    #[test]
    fn a_hello_fragmented_over_many_records_is_reassembled() {
        let handshake = handshake_of(&client_hello(Some("allowed.test")));
        for fragment in [1, 2, 3, 7, 50, 100] {
            let split = records(&handshake, fragment);
            let parsed = parse(&split).unwrap();
            assert_eq!(
                parsed.server_name.as_deref(),
                Some("allowed.test"),
                "{fragment}"
            );
            assert_eq!(parsed.consumed, split.len());
        }
    }

    #[test]
    fn every_prefix_is_incomplete_and_bytes_after_are_left() {
        let hello = records(&handshake_of(&client_hello(Some("a.test"))), 10);
        for end in 0..hello.len() {
            assert_eq!(parse(&hello[..end]), Err(SniError::Incomplete), "{end}");
        }
        let mut more = hello.clone();
        more.extend_from_slice(b"application data");
        assert_eq!(parse(&more).unwrap().consumed, hello.len());
    }

    #[test]
    fn no_sni_and_ech_are_reported() {
        assert_eq!(parse(&client_hello(None)).unwrap().server_name, None);
        let ech = parse(&client_hello_with(None, true)).unwrap();
        assert!(ech.ech && !ech.esni && ech.server_name.is_none());
        let esni = parse(&client_hello_extensions(
            Some("a.test"),
            &[(EXT_ENCRYPTED_SERVER_NAME, &[1, 2, 3])],
        ))
        .unwrap();
        assert!(esni.esni && !esni.ech);
    }

    #[test]
    fn two_names_and_a_repeated_extension_are_ambiguous_not_invalid() {
        let twice = client_hello_extensions(Some("a.test"), &[(43, &[2, 3, 4])]);
        assert!(matches!(parse(&twice), Err(SniError::Ambiguous(_))));
        let mut list = Vec::new();
        for name in [&b"a.test"[..], b"b.test"] {
            list.push(0u8);
            list.extend_from_slice(&(name.len() as u16).to_be_bytes());
            list.extend_from_slice(name);
        }
        let mut data = (list.len() as u16).to_be_bytes().to_vec();
        data.extend_from_slice(&list);
        let two = client_hello_extensions(None, &[(EXT_SERVER_NAME, &data)]);
        assert_eq!(
            parse(&two),
            Err(SniError::Ambiguous(
                "two host names in the server_name extension"
            ))
        );
    }

    #[test]
    fn garbage_is_invalid_not_incomplete() {
        for garbage in [
            &b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"[..],
            b"SSH-2.0-OpenSSH_9.2\r\n",
            &[0x80, 0x2e, 0x01, 0x03, 0x01],
            &[22, 3, 1, 0, 0],
            &[22, 9, 1, 0, 4, 1, 0, 0, 0],
            &[23, 3, 3, 0, 1, 0],
            &[22, 3, 1, 0, 4, 2, 0, 0, 0],
            &[22, 3, 1, 0, 4, 1, 0xff, 0xff, 0xff],
        ] {
            assert!(
                matches!(parse(garbage), Err(SniError::Invalid(_))),
                "{garbage:?}"
            );
        }
    }

    #[test]
    fn lengths_that_run_past_their_structure_are_invalid() {
        let hello = client_hello(Some("a.test"));
        // Grow the server name's own length by one: it now runs past the extension.
        let at = hello.windows(6).position(|w| w == b"a.test").unwrap();
        let mut broken = hello.clone();
        broken[at - 1] += 1;
        assert!(matches!(parse(&broken), Err(SniError::Invalid(_))));
        // Two host names.
        let mut data = vec![0, 12];
        for _ in 0..2 {
            data.extend_from_slice(&[0, 0, 3]);
            data.extend_from_slice(b"a.b");
        }
        assert!(read_server_name(&data).is_err());
    }

    proptest! {
        #[test]
        fn any_fragmentation_of_any_name_reads_back(name in "[a-z0-9.-]{1,200}", fragment in 1usize..300) {
            let split = records(&handshake_of(&client_hello(Some(&name))), fragment);
            prop_assert_eq!(parse(&split).unwrap().server_name, Some(name));
        }

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn a_corrupted_hello_never_panics(name in "[a-z]{1,20}", at in any::<usize>(), byte in any::<u8>()) {
            let mut hello = client_hello(Some(&name));
            let i = at % hello.len();
            hello[i] = byte;
            let _ = parse(&hello);
        }
    }
}
