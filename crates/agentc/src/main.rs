//! The `agentc` binary: parses the command line and hands it to the library.

use clap::{CommandFactory, Parser};

/// The mark of the agentc binary (`agentc_egress::image::proxy_mark`): the library makes an
/// egress proxy image only of an executable that holds it, so a program embedding agentc is
/// never imaged as a proxy that cannot serve. Only this binary spells it forwards.
#[used]
static PROXY_MARK: &[u8] =
    concat!("agentc-egress-proxy-mark:", env!("CARGO_PKG_VERSION"), ";").as_bytes();

fn main() -> std::process::ExitCode {
    // A shell asking for completions (`COMPLETE=bash agentc -- WORDS`) is answered and the
    // process exits; otherwise this only reads one variable.
    clap_complete::CompleteEnv::with_factory(agentc::cli::Cli::command).complete();
    agentc::execute(agentc::cli::Cli::parse())
}
