//! What one launch of a profile file asks for ([`LaunchRequest`]), what a profile's launches
//! are ([`every_launch`]), and the reading of the profile file itself ([`load_profile`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentc_policy::profile::MountType;
use agentc_policy::{LaunchKind, LoadedProfile};

use crate::failure::{Failure, EXIT_INVALID, EXIT_NO_INPUT};

/// One launch of a profile file, as `agentc run PROFILE --kind KIND --workspace DIR --image
/// IMAGE -- ARGS` asks for it: everything a launch depends on that the profile does not say.
/// The rest comes from this machine when it is resolved ([`crate::launch_inputs`]).
///
/// ```
/// use agentc_host::LaunchRequest;
/// let request = LaunchRequest {
///     agent_args: vec!["--help".into()],
///     ..LaunchRequest::new("profiles/box.toml")
/// };
/// assert_eq!(request.kind, agentc_policy::LaunchKind::Run);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchRequest {
    /// The profile file (TOML).
    pub profile: PathBuf,
    /// Which launch: [`LaunchKind::Run`] (a custom agent's becomes its sandbox), `Seed`,
    /// `Build` or `Decant`. `Sandbox` is asked for as `Run`.
    pub kind: LaunchKind,
    /// The workspace directory mounted into the agent; `None`: the current directory.
    pub workspace: Option<PathBuf>,
    /// An image to use instead of the profile's.
    pub image: Option<String>,
    /// For a seed launch: the target of the seed mount to copy.
    pub seed_target: Option<String>,
    /// Arguments passed to the agent.
    pub agent_args: Vec<String>,
    /// `AGENTC_*` overrides this request gives (`run --isolation-min`), in place of the
    /// environment's: inputs of resolve like the rest, never set in the process's environment.
    pub overrides: BTreeMap<String, String>,
    /// Build arguments of a build launch (`agentc build --build-arg NAME=VALUE`).
    pub build_args: BTreeMap<String, String>,
}

impl LaunchRequest {
    /// The run of `profile` as the profile says: the current directory as the workspace, no
    /// image, arguments or overrides of its own.
    pub fn new(profile: impl Into<PathBuf>) -> LaunchRequest {
        LaunchRequest {
            profile: profile.into(),
            kind: LaunchKind::Run,
            workspace: None,
            image: None,
            seed_target: None,
            agent_args: Vec::new(),
            overrides: BTreeMap::new(),
            build_args: BTreeMap::new(),
        }
    }
}

/// Reads and validates a profile file.
pub fn load_profile(path: &Path) -> Result<LoadedProfile, Failure> {
    let shown = path.display().to_string();
    let cannot_read = |error: std::io::Error| {
        Failure::new(
            EXIT_NO_INPUT,
            format!("{shown}: cannot read the profile: {error}"),
        )
        .hinted("check the path")
    };
    // Read one byte past the limit at most, so that `/dev/zero` or a huge file costs no more
    // memory than a profile may have; `load` then refuses the oversized text by its size.
    // A profile is a few kilobytes: one read fills it, where growing from empty takes five.
    let mut bytes = Vec::with_capacity(16 * 1024);
    let limit = agentc_policy::MAX_PROFILE_BYTES as u64 + 1;
    std::fs::File::open(path)
        .and_then(|file| {
            std::io::Read::read_to_end(&mut std::io::Read::take(file, limit), &mut bytes)
        })
        .map_err(cannot_read)?;
    if bytes.len() > agentc_policy::MAX_PROFILE_BYTES {
        return Err(Failure::new(
            EXIT_INVALID,
            format!(
                "{shown}: the profile is larger than the limit of {} bytes (1 MiB)",
                agentc_policy::MAX_PROFILE_BYTES
            ),
        )
        .hinted("a profile is a few kilobytes of toml; check that this is the right file"));
    }
    let text = String::from_utf8(bytes).map_err(|error| {
        Failure::new(
            EXIT_INVALID,
            format!(
                "{shown}: the profile is not UTF-8 text (invalid byte at offset {})",
                error.utf8_error().valid_up_to()
            ),
        )
        .hinted("save the file as UTF-8")
    })?;
    let loaded = agentc_policy::load(&shown, &text).map_err(Failure::invalid_profile)?;
    log::debug!(
        "read {shown} ({} bytes): profile {}, agent {}",
        text.len(),
        loaded.profile.name,
        loaded.profile.agent.as_str()
    );
    Ok(loaded)
}

/// Every launch a profile supports: its run, one seed per seed mount, its build when it has a
/// build context, and Decant when enabled; `agentc validate` checks them all.
pub fn every_launch(loaded: &LoadedProfile, profile: &Path) -> Vec<LaunchRequest> {
    let launch = |kind: LaunchKind, seed_target: Option<String>| LaunchRequest {
        kind,
        seed_target,
        ..LaunchRequest::new(profile)
    };
    let profile_fields = &loaded.profile;
    let mut launches = vec![launch(LaunchKind::Run, None)];
    launches.extend(
        seed_targets(loaded)
            .into_iter()
            .map(|target| launch(LaunchKind::Seed, Some(target))),
    );
    if profile_fields.image.build_context.is_some() {
        launches.push(launch(LaunchKind::Build, None));
    }
    if profile_fields.decant.enabled {
        launches.push(launch(LaunchKind::Decant, None));
    }
    launches
}

/// The targets of a profile's seed mounts (configuration mounts first, then `[[mounts]]`), in
/// profile order: what `agentc seed --all` copies.
pub fn seed_targets(loaded: &LoadedProfile) -> Vec<String> {
    let profile = &loaded.profile;
    profile
        .configuration_mounts
        .iter()
        .chain(&profile.mounts)
        .filter(|mount| mount.kind == MountType::Seed)
        .map(|mount| mount.target.clone())
        .collect()
}
