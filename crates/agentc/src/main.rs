//! The `agentc` command line.
fn main() {}
