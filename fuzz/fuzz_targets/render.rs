//! Bytes -> load -> resolve (every launch kind, virtual inputs, every path exists) -> both
//! renderers and `explain`. Panics on a broken invariant: a value that would become a docker
//! flag, an image or command out of place.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(loaded) = agentc_policy::load("fuzz.toml", text) {
        common::resolve_and_render(&loaded, &BTreeMap::new());
    }
});
