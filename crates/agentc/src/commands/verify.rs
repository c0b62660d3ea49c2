//! `agentc verify`: launches the profile's run with the probe in place of the agent and
//! compares what the kernel reports with the spec (see [`crate::verify`]).

use crate::cli::{ExplainFormat, KindArg, LaunchArgs, VerifyArgs};
use crate::commands::launch;
use crate::context::{self, Failure, EXIT_FAILED, EXIT_USAGE};
use crate::lifecycle::gather;
use crate::verify;

/// Runs `agentc verify`: prints the table (or its JSON); 0 when every check passed, 1
/// otherwise.
pub fn verify(args: VerifyArgs) -> Result<u8, Failure> {
    let egress_probe = match args.egress_probe.as_deref() {
        None => verify::EgressProbe::Profile,
        Some(text) => text
            .parse()
            .map_err(|error| Failure::new(EXIT_USAGE, format!("--egress-probe {error}")))?,
    };
    let launch_args = LaunchArgs {
        profile: args.profile,
        kind: KindArg::Run,
        workspace: args.workspace,
        image: args.image,
        seed_target: None,
        agent_args: Vec::new(),
        overrides: Default::default(),
    };
    let loaded = context::load_profile(&launch_args.profile)?;
    gather::refuse_unlocked(
        args.locked,
        &loaded,
        &launch_args.profile,
        gather::Workspace::Given(launch_args.workspace.as_deref()),
        launch_args.image.as_deref(),
        &launch_args.overrides,
        args.backend,
    )?;
    let spec = context::resolve_launch(&loaded, &launch_args)?;
    let checks = verify::verify_launch(
        &spec,
        args.backend,
        &launch::process_env(),
        args.pull,
        &egress_probe,
        // The probe's egress proxy is an image of this binary.
        &agentc_egress::image::ProxyExecutable::running(),
    )?;
    match args.format {
        ExplainFormat::Text => print!("{}", verify::render_table(&checks)),
        ExplainFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&verify::report_json(&spec.profile, &checks))
                .unwrap_or_default()
        ),
    }
    Ok(if checks.iter().all(|check| check.ok) {
        0
    } else {
        EXIT_FAILED
    })
}
