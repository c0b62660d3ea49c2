//! The `agentc` command line: reads the disk and the environment, then calls the libraries.
//!
//! This is the only place that touches `std::env`, the file system or the terminal; the
//! policy crate and the renderers receive everything as values.

mod cli;
mod context;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use cli::{BackendArg, Cli, Command, FormatArg};
use context::Failure;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(output) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`agentc render ... | head`) is not an error worth reporting.
            let _ = stdout.write_all(output.as_bytes());
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// Runs one subcommand and returns what it prints on success.
fn dispatch(command: Command) -> Result<String, Failure> {
    match command {
        Command::Validate(args) => {
            let loaded = context::load_profile(&args.profile)?;
            let launches = context::every_launch(&loaded, &args.profile);
            for launch in &launches {
                context::resolve_launch(&loaded, launch)?;
            }
            Ok(format!(
                "{}: valid profile {:?} (agent {}; {} launch{} checked)\n",
                loaded.file,
                loaded.profile.name,
                loaded.profile.agent.as_str(),
                launches.len(),
                if launches.len() == 1 { "" } else { "es" },
            ))
        }
        Command::Schema => {
            let schema = agentc_policy::schema::profile_schema();
            Ok(format!("{}\n", to_pretty_json(&schema)))
        }
        Command::Explain(args) => {
            let loaded = context::load_profile(&args.profile)?;
            let spec = context::resolve_launch(&loaded, &args)?;
            Ok(agentc_policy::explain::explain(&loaded, &spec))
        }
        Command::Render(args) => {
            let loaded = context::load_profile(&args.launch.profile)?;
            let spec = context::resolve_launch(&loaded, &args.launch)?;
            render(&spec, args.backend, args.format)
        }
    }
}

/// Renders a spec through one backend in one format.
fn render(
    spec: &agentc_policy::LaunchSpec,
    backend: BackendArg,
    format: FormatArg,
) -> Result<String, Failure> {
    match (backend, format) {
        (BackendArg::Cli, format) => {
            let argv = agentc_backend_cli::render_argv(spec).map_err(Failure::unlaunchable)?;
            Ok(match format {
                FormatArg::Shell => format!("{}\n", agentc_backend_cli::shell_line(&argv)),
                FormatArg::Json => format!("{}\n", to_pretty_json(&argv)),
            })
        }
        (BackendArg::Api, FormatArg::Json) => {
            let rendered = agentc_backend_api::render_json(spec).map_err(Failure::unlaunchable)?;
            Ok(format!("{}\n", to_pretty_json(&rendered)))
        }
        (BackendArg::Api, FormatArg::Shell) => Err(Failure::usage(
            "the api backend renders JSON only; use --format json, or --backend cli for a shell line",
        )),
    }
}

fn to_pretty_json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    // Serializing plain data (strings, maps, numbers) cannot fail.
    serde_json::to_string_pretty(value).unwrap_or_default()
}
