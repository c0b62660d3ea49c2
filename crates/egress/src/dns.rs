//! The DNS stub's pure part: read a query defensively, answer it with nothing.
//!
//! Every query gets NXDOMAIN (RCODE 3) with its question echoed and no records: the name does
//! not exist, so a resolver stops at once with "name not known". REFUSED (RCODE 5) would say
//! the server is the wrong one to ask; stub resolvers then try the next server or retry, and
//! report a temporary failure that tools retry again; NXDOMAIN fails fast and is cached. Either
//! way nothing is forwarded, so a name carries nothing out.

use std::fmt::Write as _;

/// The largest DNS message the stub reads (UDP or one TCP message).
pub const MAX_MESSAGE: usize = 4096;

/// A query's question, as the decision line records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The name in presentation form (`a.example.`), bytes outside letters, digits, `-` and
    /// `_` written as `\DDD`.
    pub name: String,
    /// The query type's mnemonic (`A`, `AAAA`, `TXT`, ...) or `TYPE<n>`.
    pub qtype: String,
    /// Where the question ends in the message.
    end: usize,
}

/// Why a message is not answered as a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DnsError {
    /// Too short for a header: dropped without an answer.
    TooShort,
    /// A response, not a query: dropped (answering could loop between two servers).
    NotAQuery,
    /// A query that cannot be read: answered FORMERR when the header is there.
    Malformed(&'static str),
}

const HEADER: usize = 12;
const RCODE_FORMERR: u8 = 1;
const RCODE_NXDOMAIN: u8 = 3;
const RCODE_NOTIMP: u8 = 4;

/// Reads the first question of a query.
///
/// ```
/// use agentc_egress::dns::{parse_query, query};
/// let q = parse_query(&query(7, "leak.example", 16)).unwrap();
/// assert_eq!((q.name.as_str(), q.qtype.as_str()), ("leak.example.", "TXT"));
/// ```
pub fn parse_query(message: &[u8]) -> Result<Question, DnsError> {
    if message.len() < HEADER {
        return Err(DnsError::TooShort);
    }
    if message[2] & 0x80 != 0 {
        return Err(DnsError::NotAQuery);
    }
    let qdcount = u16::from_be_bytes([message[4], message[5]]);
    if qdcount != 1 {
        return Err(DnsError::Malformed("not exactly one question"));
    }
    let mut at = HEADER;
    let mut name = String::new();
    let mut total = 0usize;
    loop {
        let length = *message
            .get(at)
            .ok_or(DnsError::Malformed("the name runs past the message"))?
            as usize;
        at += 1;
        if length == 0 {
            break;
        }
        if length & 0xc0 != 0 {
            // Compression pointers have no place in a question of a query.
            return Err(DnsError::Malformed("a compressed or extended label"));
        }
        total += length + 1;
        if total > 255 {
            return Err(DnsError::Malformed("a name longer than 255 bytes"));
        }
        let label = message
            .get(at..at + length)
            .ok_or(DnsError::Malformed("a label runs past the message"))?;
        for &byte in label {
            if byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' {
                name.push(byte as char);
            } else {
                let _ = write!(name, "\\{byte:03}");
            }
        }
        name.push('.');
        at += length;
    }
    if name.is_empty() {
        name.push('.');
    }
    let fixed = message.get(at..at + 4).ok_or(DnsError::Malformed(
        "the question's type and class are missing",
    ))?;
    let qtype = u16::from_be_bytes([fixed[0], fixed[1]]);
    Ok(Question {
        name,
        qtype: type_name(qtype),
        end: at + 4,
    })
}

fn type_name(qtype: u16) -> String {
    match qtype {
        1 => "A".into(),
        2 => "NS".into(),
        5 => "CNAME".into(),
        6 => "SOA".into(),
        12 => "PTR".into(),
        15 => "MX".into(),
        16 => "TXT".into(),
        28 => "AAAA".into(),
        33 => "SRV".into(),
        64 => "SVCB".into(),
        65 => "HTTPS".into(),
        255 => "ANY".into(),
        other => format!("TYPE{other}"),
    }
}

/// The stub's answer to `message`: NXDOMAIN with the question echoed for a query, FORMERR or
/// NOTIMP with the header only for one it cannot read or does not serve, `None` for what it
/// must not answer (too short, or a response).
pub fn answer(message: &[u8]) -> Option<Vec<u8>> {
    let opcode = message.get(2).map(|flags| (flags >> 3) & 0x0f);
    let parsed = parse_query(message);
    let (rcode, question_end) = match (&parsed, opcode) {
        (Err(DnsError::TooShort | DnsError::NotAQuery), _) => return None,
        (Ok(question), Some(0)) => (RCODE_NXDOMAIN, Some(question.end)),
        (Ok(_), _) => (RCODE_NOTIMP, None),
        (Err(DnsError::Malformed(_)), _) => (RCODE_FORMERR, None),
    };
    let mut out = Vec::with_capacity(question_end.unwrap_or(HEADER));
    out.extend_from_slice(&message[..2]); // id
                                          // QR=1, the query's opcode and RD, AA=0, TC=0; RA=1 so clients do not look elsewhere.
    out.push(0x80 | (message[2] & 0x79));
    out.push(0x80 | rcode);
    let qd: u16 = question_end.map_or(0, |_| 1);
    out.extend_from_slice(&qd.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // no answers, authority or additional records
    if let Some(end) = question_end {
        out.extend_from_slice(&message[HEADER..end]);
    }
    Some(out)
}

/// Builds a query for `name` (for tests, the testkit and the fuzz corpus).
pub fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut out = id.to_be_bytes().to_vec();
    out.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name
        .trim_end_matches('.')
        .split('.')
        .filter(|l| !l.is_empty())
    {
        out.push(label.len().min(63) as u8);
        out.extend_from_slice(&label.as_bytes()[..label.len().min(63)]);
    }
    out.push(0);
    out.extend_from_slice(&qtype.to_be_bytes());
    out.extend_from_slice(&[0, 1]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_query_gets_nxdomain_with_its_question_and_nothing_else() {
        let q = query(0xbeef, "secret-data.exfil.test", 1);
        let a = answer(&q).unwrap();
        assert_eq!(&a[..2], &[0xbe, 0xef]);
        assert_eq!(a[2] & 0x80, 0x80, "QR");
        assert_eq!(a[2] & 0x01, 0x01, "RD copied");
        assert_eq!(a[3] & 0x0f, RCODE_NXDOMAIN);
        assert_eq!(&a[4..12], &[0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&a[12..], &q[12..]);
    }

    #[test]
    fn edns_records_are_dropped_from_the_answer() {
        let mut q = query(1, "a.test", 28);
        q[11] = 1; // ARCOUNT 1
        q.extend_from_slice(&[0, 0, 41, 16, 0, 0, 0, 0, 0, 0, 0]);
        let a = answer(&q).unwrap();
        assert_eq!(&a[10..12], &[0, 0]);
        assert_eq!(a.len(), query(1, "a.test", 28).len());
    }

    #[test]
    fn names_are_logged_in_presentation_form_with_odd_bytes_escaped() {
        let mut q = query(1, "x.test", 16);
        q[13] = b'.';
        let parsed = parse_query(&q).unwrap();
        assert_eq!(parsed.name, "\\046.test.");
        assert_eq!(parsed.qtype, "TXT");
        assert_eq!(parse_query(&query(1, "", 2)).unwrap().name, ".");
        assert_eq!(parse_query(&query(1, "a", 999)).unwrap().qtype, "TYPE999");
    }

    #[test]
    fn what_cannot_be_read_gets_formerr_or_nothing() {
        assert_eq!(answer(&[1, 2, 3]), None);
        let mut response = query(1, "a.test", 1);
        response[2] |= 0x80;
        assert_eq!(answer(&response), None);
        let mut pointer = query(1, "a.test", 1);
        pointer[12] = 0xc0;
        let a = answer(&pointer).unwrap();
        assert_eq!(a[3] & 0x0f, RCODE_FORMERR);
        assert_eq!(a.len(), HEADER);
        let truncated = &query(1, "abc.test", 1)[..15];
        assert_eq!(answer(truncated).unwrap()[3] & 0x0f, RCODE_FORMERR);
        let mut two = query(1, "a.test", 1);
        two[5] = 2;
        assert_eq!(answer(&two).unwrap()[3] & 0x0f, RCODE_FORMERR);
        let mut update = query(1, "a.test", 1);
        update[2] = 5 << 3;
        assert_eq!(answer(&update).unwrap()[3] & 0x0f, RCODE_NOTIMP);
        let long: String = vec!["a".repeat(63); 5].join(".");
        assert_eq!(
            answer(&query(1, &long, 1)).unwrap()[3] & 0x0f,
            RCODE_FORMERR
        );
    }

    proptest! {
        #[test]
        fn random_messages_never_panic_and_answers_carry_no_records(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Some(a) = answer(&bytes) {
                prop_assert_eq!(&a[6..12], &[0u8, 0, 0, 0, 0, 0][..]);
                prop_assert!(a.len() <= bytes.len().max(HEADER));
            }
        }
    }
}
