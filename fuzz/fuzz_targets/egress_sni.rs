//! The egress proxy's ClientHello reader and DNS stub, on arbitrary bytes.
//!
//! Invariants: no panic; a hello read from a prefix reads the same from exactly the bytes it
//! consumed; a server name is non-empty ASCII; the stub's answer never carries a record and
//! is never longer than the query (no amplification).
#![no_main]

use agentc_egress::{dns, sni};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match sni::parse(data) {
        Ok(hello) => {
            assert!(hello.consumed <= data.len() && hello.consumed <= sni::MAX_RECORD_BYTES);
            assert_eq!(sni::parse(&data[..hello.consumed]), Ok(hello.clone()));
            if let Some(name) = &hello.server_name {
                assert!(!name.is_empty() && name.is_ascii());
            }
        }
        Err(sni::SniError::Incomplete) => assert!(data.len() < sni::MAX_RECORD_BYTES),
        Err(sni::SniError::Invalid(_) | sni::SniError::Ambiguous(_)) => {}
    }
    if let Some(answer) = dns::answer(data) {
        assert!(answer.len() >= 12 && answer.len() <= data.len().max(12));
        assert_eq!(&answer[6..12], &[0u8; 6]);
        assert_eq!(&answer[..2], &data[..2]);
    }
});
