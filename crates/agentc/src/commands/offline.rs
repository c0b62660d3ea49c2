//! The commands that neither launch nor connect: `validate`, `schema`, `explain`, `render`.

use std::io::Write;

use crate::cli::{BackendArg, Command, ExplainArgs, ExplainFormat, FormatArg};
use crate::context::{self, Failure};

/// `agentc explain`: prints the explanation (or its JSON report), then, with `--deny LEVEL`,
/// exits 1 when any finding is at or above LEVEL.
pub fn explain(args: ExplainArgs) -> Result<u8, Failure> {
    let loaded = context::load_profile(&args.launch.profile)?;
    let spec = context::resolve_launch(&loaded, &args.launch)?;
    let output = match args.format {
        ExplainFormat::Text => agentc_policy::explain::explain(&loaded, &spec),
        ExplainFormat::Json => format!(
            "{}\n",
            to_pretty_json(&agentc_policy::findings::explain_json(&loaded, &spec))
        ),
    };
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`agentc explain ... | head`) is not an error worth reporting.
    let _ = stdout.write_all(output.as_bytes());
    let _ = stdout.flush();
    let Some(level) = args.deny else {
        return Ok(0);
    };
    let findings = agentc_policy::findings::findings(&loaded, &spec);
    let denied = findings
        .iter()
        .filter(|finding| finding.severity >= level)
        .count();
    if denied == 0 {
        return Ok(0);
    }
    let highest = agentc_policy::findings::highest(&findings).unwrap_or(level);
    Err(Failure::new(
        context::EXIT_FAILED,
        format!(
            "{}: {denied} finding{} at or above {level} (highest: {highest})\n  hint: change the profile, or allow the finding in your CI with a higher --deny level",
            loaded.file,
            if denied == 1 { "" } else { "s" },
        ),
    ))
}

/// Runs one offline subcommand and returns what it prints on success. The launching
/// subcommands are refused (they print as they go and have their own entry points).
pub fn dispatch(command: Command) -> Result<String, Failure> {
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
        Command::Render(args) => {
            let loaded = context::load_profile(&args.launch.profile)?;
            let spec = context::resolve_launch(&loaded, &args.launch)?;
            render(&spec, args.backend, args.format)
        }
        Command::Explain(_)
        | Command::EgressProxy(_)
        | Command::Run(_)
        | Command::Seed(_)
        | Command::Build(_)
        | Command::Ps(_)
        | Command::Rm(_)
        | Command::Verify(_) => Err(Failure::usage(
            "this command has its own entry point and is not dispatched here",
        )),
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
