//! The egress proxy's request reading: a request head as hyper's parser (httparse) reads it,
//! then `classify` and the name decision; also the raw first line split at its spaces.
//!
//! Invariants: no panic; a host the policy allows is a lower-case LDH name without a trailing
//! dot that no IP parser accepts, and that the allowlist's own matcher accepts.
#![no_main]

use std::net::{IpAddr, Ipv6Addr};
use std::sync::OnceLock;

use agentc_egress::host::normalize_host;
use agentc_egress::request::{classify, strip_hop_by_hop, Target};
use agentc_egress::{HostSpec, Policy};
use libfuzzer_sys::fuzz_target;

fn policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        let specs = ["a.test", "*.b.test", "c.test:8080", "x", "0a.test"]
            .iter()
            .map(|s| HostSpec::parse(s).unwrap())
            .collect();
        Policy::new(specs, vec![])
    })
}

fn check(method: &str, target: &str) {
    let (host, port) = match classify(method, target) {
        Ok(Target::Connect { host, port }) | Ok(Target::Forward { host, port, .. }) => (host, port),
        Ok(Target::Health) | Err(_) => return,
    };
    assert!(port != 0);
    if let Ok(name) = policy().decide_name(&host, port) {
        assert!(name.parse::<IpAddr>().is_err(), "{name}");
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        assert!(bare.parse::<IpAddr>().is_err() && bare.parse::<Ipv6Addr>().is_err(), "{host}");
        assert!(!name.ends_with('.') && name == name.to_ascii_lowercase(), "{name}");
        assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'));
        assert_eq!(normalize_host(&name).as_deref(), Ok(name.as_str()));
        let last = name.rsplit('.').next().unwrap();
        assert!(!last.bytes().all(|b| b.is_ascii_digit()), "{name}");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    if let Ok(httparse::Status::Complete(_)) = request.parse(data) {
        check(
            request.method.unwrap_or_default(),
            request.path.unwrap_or_default(),
        );
        let mut map = http::HeaderMap::new();
        for header in request.headers.iter() {
            if let (Ok(name), Ok(value)) = (
                http::HeaderName::from_bytes(header.name.as_bytes()),
                http::HeaderValue::from_bytes(header.value),
            ) {
                map.append(name, value);
            }
        }
        strip_hop_by_hop(&mut map);
        assert!(map.keys().all(|k| !k.as_str().starts_with("proxy-") && k != "connection"));
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let line = text.lines().next().unwrap_or_default();
        let mut words = line.splitn(3, ' ');
        if let (Some(method), Some(target)) = (words.next(), words.next()) {
            check(method, target);
        }
    }
});
