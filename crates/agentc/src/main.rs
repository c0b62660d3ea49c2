//! The `agentc` binary: parses the command line and hands it to the library.

use clap::{CommandFactory, Parser};

fn main() -> std::process::ExitCode {
    // A shell asking for completions (`COMPLETE=bash agentc -- WORDS`) is answered and the
    // process exits; otherwise this only reads one variable.
    clap_complete::CompleteEnv::with_factory(agentc::cli::Cli::command).complete();
    agentc::execute(agentc::cli::Cli::parse())
}
