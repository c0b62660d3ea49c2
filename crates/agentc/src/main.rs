//! The `agentc` binary: parses the command line and hands it to the library.

use clap::Parser;

fn main() -> std::process::ExitCode {
    agentc::execute(agentc::cli::Cli::parse())
}
