//! Shared by the fuzz targets: virtual machine inputs, a probe that says every path exists, and
//! the structural argv check (a value can never become a docker flag), which is the hostile
//! corpus's own, included from the conformance crate.

use std::collections::BTreeMap;

#[path = "../../tests/src/argv.rs"]
mod argv;

use agentc_policy::LoadedProfile;
use agentc_policy::profile::MountType;
use agentc_policy::{DecantSource, LaunchKind, Owner, PathKind, PathProbe, ResolveInputs};

/// Every path exists: a directory when its last component has no `.`, a file otherwise, so
/// both `type = "directory"` mounts and key files can resolve.
pub struct Everything;

impl PathProbe for Everything {
    fn kind(&self, path: &str) -> PathKind {
        let last = path.rsplit('/').next().unwrap_or_default();
        if last.contains('.') {
            PathKind::File
        } else {
            PathKind::Directory
        }
    }
}

/// The virtual inputs of one launch kind.
pub fn inputs(kind: LaunchKind, env: BTreeMap<String, String>) -> ResolveInputs {
    ResolveInputs {
        kind,
        workspace: "/home/dev/src/project".to_string(),
        profile_dir: "/profiles".to_string(),
        home_dir: "/home/dev".to_string(),
        owner: Owner {
            name: "dev".to_string(),
            uid: 1000,
            gid: 1000,
        },
        image: None,
        seed_target: None,
        agent_args: vec!["--privileged".to_string(), "-v".to_string()],
        env,
        decant_sources: Vec::new(),
        instance: agentc_policy::Instance::default(),
    }
}

/// Every launch a loaded profile supports, with virtual inputs.
pub fn launches(loaded: &LoadedProfile, env: &BTreeMap<String, String>) -> Vec<ResolveInputs> {
    let profile = &loaded.profile;
    let mut all = vec![inputs(LaunchKind::Run, env.clone())];
    for mount in profile.configuration_mounts.iter().chain(&profile.mounts) {
        if mount.kind == MountType::Seed {
            let mut seed = inputs(LaunchKind::Seed, env.clone());
            seed.seed_target = Some(mount.target.clone());
            all.push(seed);
        }
    }
    all.push(inputs(LaunchKind::Build, env.clone()));
    let mut decant = inputs(LaunchKind::Decant, env.clone());
    decant.decant_sources = profile
        .decant
        .source_profiles
        .iter()
        .map(|name| DecantSource {
            profile: name.clone(),
            agent: agentc_policy::AgentName::ClaudeCode,
            home_volume: format!("claude-home-{name}"),
        })
        .collect();
    all.push(decant);
    all
}

/// Resolves and renders every launch through both backends; panics only on a broken invariant.
pub fn resolve_and_render(loaded: &LoadedProfile, env: &BTreeMap<String, String>) {
    for inputs in launches(loaded, env) {
        let Ok(spec) = agentc_policy::resolve(loaded, &inputs, &Everything) else {
            continue;
        };
        let _ = agentc_policy::explain(loaded, &spec);
        if let Ok(argv) = agentc_backend_cli::render_argv(&spec) {
            argv::check_structure(&spec, &argv);
            let _ = agentc_backend_cli::shell_line(&argv);
        }
        let _ = agentc_backend_api::render_json(&spec);
    }
}
