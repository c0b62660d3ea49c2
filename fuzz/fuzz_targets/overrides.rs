//! Bytes -> `NAME=VALUE` lines -> `check_variable_name` of each name, `parse_overrides`, then a
//! minimal profile of each agent resolved and rendered with them. A name that is a single digit
//! `0`..`6` stands for the `AGENTC_*` variable at that index, so the fuzzer reaches every
//! override quickly.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const PROFILES: &[&str] = &[
    "name = \"dev\"\nagent = \"claude-code\"\n",
    "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"alpine:3\"\n[network]\npublish = [8080]\n",
    "name = \"dev\"\nagent = \"codex\"\n[egress]\nmode = \"deny\"\n",
];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut env = BTreeMap::new();
    for line in text.split('\n') {
        let (name, value) = line.split_once('=').unwrap_or((line, ""));
        let name = match name.parse::<usize>() {
            Ok(index) if index < agentc_policy::overrides::VARIABLES.len() => {
                agentc_policy::overrides::VARIABLES[index].to_string()
            }
            _ => name.to_string(),
        };
        env.insert(name, value.to_string());
    }
    // The name check the binary runs on every variable name: it must return, never panic.
    for name in env.keys() {
        let _ = agentc_policy::overrides::check_variable_name(name);
        let _ = agentc_policy::overrides::check_variable_name(&format!("AGENTC_{name}"));
    }
    if agentc_policy::parse_overrides(&env).is_err() {
        return;
    }
    for profile in PROFILES {
        let loaded = agentc_policy::load("fuzz.toml", profile).expect("built-in profile loads");
        common::resolve_and_render(&loaded, &env);
    }
});
