//! Bytes -> `agentc_policy::load`: no panic, no hang, no unbounded memory.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The binary refuses non-UTF-8 before loading; the lossy text still exercises the parser.
    let text = String::from_utf8_lossy(data);
    let _ = agentc_policy::load("fuzz.toml", &text);
});
