//! `agentc plan`: what a profile's launches would create and use, offline (no runtime, no
//! daemon): the parts of each launch, its findings, and what changed since the last apply.

use agentc_lifecycle::state::State;
use std::collections::BTreeMap;

use crate::cli::{ExplainFormat, PlanArgs};
use crate::context::{self, Failure};
use crate::lifecycle::{gather, store};

/// Runs `agentc plan`.
pub fn plan(args: PlanArgs) -> Result<u8, Failure> {
    let loaded = context::load_profile(&args.profile)?;
    let launches = gather::launches(
        &loaded,
        &args.profile,
        args.workspace.as_deref(),
        &BTreeMap::new(),
    )?;
    let state = store::read_state(&loaded.profile.name)?;
    let recorded = state
        .as_ref()
        .and_then(State::current)
        .map(|deployment| &deployment.spec_digests);
    let plan =
        agentc_lifecycle::plan::plan(&loaded.profile.name, &loaded.file, &launches, recorded);
    let output = match args.format {
        ExplainFormat::Text => plan.text(),
        ExplainFormat::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&plan).unwrap_or_default()
        ),
    };
    print!("{output}");
    Ok(0)
}
