//! `agentc init`: writes a commented starter profile that validates as written, never over an
//! existing file. Offline: no runtime, no daemon.

use agentc_lifecycle::init::{name_from_stem, template, EgressChoice, InitOptions};
use agentc_lifecycle::LifecycleError;

use crate::cli::{EgressArg, InitArgs};
use crate::context::{Failure, EXIT_FAILED, EXIT_INVALID, EXIT_USAGE};
use crate::lifecycle::store;

/// Runs `agentc init`.
pub fn init(args: InitArgs) -> Result<u8, Failure> {
    let path = &args.profile;
    if path.exists() {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "{}: exists already; agentc init never overwrites a file",
                path.display()
            ),
        )
        .hinted("choose another path, or move the file away"));
    }
    let stem = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match args.name.clone().or_else(|| name_from_stem(&stem)) {
        Some(name) => name,
        None => return Err(Failure::usage(format!(
            "the file name {stem:?} is not a profile name"
        ))
        .hinted(
            "pass --name NAME (a lower-case letter, then lower-case letters, digits, `-` or `_`)",
        )),
    };
    let options = InitOptions {
        agent: args.agent.name(),
        name,
        image: args.image.clone(),
        egress: args.egress.map(|egress| match egress {
            EgressArg::Deny => EgressChoice::Deny,
            EgressArg::Allowlist => EgressChoice::Allowlist,
        }),
        hosts: args.hosts.clone(),
    };
    let text = template(&options).map_err(|error| match error {
        LifecycleError::Init { .. } => Failure::from_hinted(EXIT_USAGE, &error),
        other => Failure::from_hinted(EXIT_INVALID, &other),
    })?;
    // The template is checked as the policy reads it before anything is written: a value
    // from the command line that the policy refuses (an image reference, a host) stops here.
    let shown = path.display().to_string();
    let loaded = agentc_policy::load(&shown, &text).map_err(Failure::invalid_profile)?;
    store::write_new(path, &text)?;
    // A preset's image comes from agentc's bundled context: the build is the first step.
    let build = if agentc_lifecycle::images::agent_image(loaded.profile.agent).is_some() {
        format!(
            "agentc build {shown} (the {} image); ",
            loaded.profile.agent.as_str()
        )
    } else {
        String::new()
    };
    println!(
        "wrote {shown}: profile {:?} (agent {})\nnext: {build}agentc doctor {shown}; agentc plan {shown}; agentc apply {shown}",
        loaded.profile.name,
        loaded.profile.agent.as_str()
    );
    Ok(0)
}
