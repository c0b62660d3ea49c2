//! `agentc doctor`: the library's doctor ([`agentc_host::lifecycle::doctor::Doctor`]: this
//! machine, and a profile's needs, judged with the checks of `agentc_lifecycle::doctor`) run
//! for this process's engine; this module prints its report. Exit 0 only when nothing fails.

use agentc_host::lifecycle::doctor::Doctor;

use crate::cli::{DoctorArgs, ExplainFormat};
use crate::commands::launch;
use crate::context::{Failure, EXIT_FAILED};

/// Runs `agentc doctor`.
pub fn doctor(args: DoctorArgs) -> Result<u8, Failure> {
    let doctor = Doctor {
        profile: args.profile,
        workspace: args.workspace,
        launcher: launch::launcher(),
    };
    let report = doctor.run()?;
    let output = match args.format {
        ExplainFormat::Text => report.text(),
        ExplainFormat::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&report.json()).unwrap_or_default()
        ),
    };
    print!("{output}");
    Ok(if report.failed() { EXIT_FAILED } else { 0 })
}
