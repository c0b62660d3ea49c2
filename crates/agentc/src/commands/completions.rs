//! `agentc completions` and `agentc man`: generated from the clap definitions, offline.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ShellArg};
use crate::context::{Failure, EXIT_FAILED};

/// Prints the completion script of a shell.
pub fn completions(args: CompletionsArgs) -> Result<u8, Failure> {
    let shell = match args.shell {
        ShellArg::Bash => clap_complete::Shell::Bash,
        ShellArg::Zsh => clap_complete::Shell::Zsh,
        ShellArg::Fish => clap_complete::Shell::Fish,
    };
    let mut buffer = Vec::new();
    if args.static_script {
        clap_complete::generate(shell, &mut Cli::command(), "agentc", &mut buffer);
        return print_bytes(&buffer);
    }
    // The registration `COMPLETE=SHELL agentc` prints: the shell asks agentc for each word.
    let completer: &dyn clap_complete::env::EnvCompleter = match args.shell {
        ShellArg::Bash => &clap_complete::env::Bash,
        ShellArg::Zsh => &clap_complete::env::Zsh,
        ShellArg::Fish => &clap_complete::env::Fish,
    };
    completer
        .write_registration("COMPLETE", "agentc", "agentc", "agentc", &mut buffer)
        .map_err(|error| {
            Failure::new(
                EXIT_FAILED,
                format!("cannot write the completion script: {error}"),
            )
        })?;
    print_bytes(&buffer)
}

/// Prints the man page (roff).
pub fn man() -> Result<u8, Failure> {
    let mut buffer = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut buffer)
        .map_err(|error| {
            Failure::new(EXIT_FAILED, format!("cannot render the man page: {error}"))
        })?;
    print_bytes(&buffer)
}

fn print_bytes(bytes: &[u8]) -> Result<u8, Failure> {
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`agentc man | head`) is not an error worth reporting.
    let _ = stdout.write_all(bytes);
    let _ = stdout.flush();
    Ok(0)
}
