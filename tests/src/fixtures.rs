//! The bundled fixtures, resolved the same way on every machine.
//!
//! Fixtures are resolved with virtual machine inputs: the profile directory is
//! `/profiles/valid`, the workspace `/home/dev/src/project`, the user `dev` (1000:1000) and its
//! home `/home/dev`. [`FixturePaths`] answers path questions under `/profiles/` from the real
//! `fixtures/` directory, so existence checks are real while snapshots stay machine-independent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentc_policy::profile::MountType;
use agentc_policy::LoadedProfile;
use agentc_policy::{
    DecantSource, LaunchKind, LaunchSpec, Owner, PathKind, PathProbe, PolicyError, PolicyErrors,
    RealPaths, ResolveInputs,
};

/// The virtual directory the valid fixtures live in.
pub const VIRTUAL_PROFILE_DIR: &str = "/profiles/valid";
/// The virtual workspace.
pub const VIRTUAL_WORKSPACE: &str = "/home/dev/src/project";
/// The virtual home directory.
pub const VIRTUAL_HOME: &str = "/home/dev";
/// Host directories the `finding-bind-*` fixtures bind with their `allow_*` field (the
/// credential directory `~/.ssh`, the host's `/etc`, `/var/lib` above the engines' data):
/// directories on every machine.
pub const VIRTUAL_HOST_DIRS: &[&str] = &["/home/dev/.ssh", "/etc", "/var/lib"];

/// The repository's `fixtures/` directory.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

/// The `.toml` files of `fixtures/<folder>`, sorted.
pub fn fixture_files(folder: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures_dir().join(folder))
        .unwrap_or_else(|error| panic!("fixtures/{folder}: {error}"))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    files
}

/// Answers for `/profiles/...` from the real `fixtures/...`, `Directory` for the virtual
/// workspace, the virtual home and their ancestors (`/`, `/home`) and [`VIRTUAL_HOST_DIRS`],
/// and `Missing` for anything else.
#[derive(Debug, Clone, Copy, Default)]
pub struct FixturePaths;

impl PathProbe for FixturePaths {
    fn kind(&self, path: &str) -> PathKind {
        // The virtual workspace, the virtual home and their ancestors are directories.
        if [VIRTUAL_WORKSPACE, VIRTUAL_HOME]
            .iter()
            .any(|dir| *dir == path || dir.starts_with(&format!("{}/", path.trim_end_matches('/'))))
        {
            return PathKind::Directory;
        }
        if VIRTUAL_HOST_DIRS.contains(&path) {
            return PathKind::Directory;
        }
        match path.strip_prefix("/profiles/") {
            Some(rest) => RealPaths.kind(&fixtures_dir().join(rest).to_string_lossy()),
            None => PathKind::Missing,
        }
    }
}

/// The virtual owner.
pub fn owner() -> Owner {
    Owner {
        name: "dev".to_string(),
        uid: 1000,
        gid: 1000,
    }
}

/// Loads a fixture, naming it `fixtures/<folder>/<file>` in errors.
pub fn load_fixture(path: &Path) -> Result<LoadedProfile, PolicyErrors> {
    let text = std::fs::read_to_string(path).expect("fixture is UTF-8");
    agentc_policy::load(&display_name(path), &text)
}

/// `fixtures/<folder>/<file>`.
pub fn display_name(path: &Path) -> String {
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("fixtures/{folder}/{file}")
}

/// One launch a fixture supports, with a stable label for snapshot names.
#[derive(Debug, Clone)]
pub struct FixtureLaunch {
    /// `run`, `seed-0`, `build`, `decant`.
    pub label: String,
    /// The inputs it is resolved with.
    pub inputs: ResolveInputs,
}

/// The virtual inputs of one kind.
pub fn inputs(kind: LaunchKind) -> ResolveInputs {
    ResolveInputs {
        kind,
        workspace: VIRTUAL_WORKSPACE.to_string(),
        profile_dir: VIRTUAL_PROFILE_DIR.to_string(),
        home_dir: VIRTUAL_HOME.to_string(),
        owner: Some(owner()),
        image: None,
        seed_target: None,
        agent_args: Vec::new(),
        env: BTreeMap::new(),
        decant_sources: Vec::new(),
        instance: agentc_policy::Instance::default(),
        build: Default::default(),
    }
}

/// The environment a fixture declares in `# env: NAME=VALUE` comment lines (for fixtures that
/// exercise `AGENTC_*` overrides).
pub fn fixture_env(loaded: &LoadedProfile) -> BTreeMap<String, String> {
    let relative = loaded
        .file
        .strip_prefix("fixtures/")
        .unwrap_or(&loaded.file);
    let text = std::fs::read_to_string(fixtures_dir().join(relative)).unwrap_or_default();
    text.lines()
        .filter_map(|line| line.strip_prefix("# env:"))
        .filter_map(|assignment| assignment.trim().split_once('='))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

/// Every launch a valid fixture supports: the run (or sandbox), one seed per seed mount,
/// the build when it has a build context, and Decant when enabled; each with the
/// environment the fixture declares.
pub fn launches(loaded: &LoadedProfile) -> Vec<FixtureLaunch> {
    let mut launches = kind_launches(loaded);
    let env = fixture_env(loaded);
    for launch in &mut launches {
        launch.inputs.env = env.clone();
    }
    launches
}

fn kind_launches(loaded: &LoadedProfile) -> Vec<FixtureLaunch> {
    let profile = &loaded.profile;
    let mut launches = vec![FixtureLaunch {
        label: "run".to_string(),
        inputs: inputs(LaunchKind::Run),
    }];
    let seeds = profile
        .configuration_mounts
        .iter()
        .chain(&profile.mounts)
        .filter(|mount| mount.kind == MountType::Seed);
    for (index, mount) in seeds.enumerate() {
        let mut seed = inputs(LaunchKind::Seed);
        seed.seed_target = Some(mount.target.clone());
        launches.push(FixtureLaunch {
            label: format!("seed-{index}"),
            inputs: seed,
        });
    }
    if profile.image.build_context.is_some() {
        launches.push(FixtureLaunch {
            label: "build".to_string(),
            inputs: inputs(LaunchKind::Build),
        });
    }
    if profile.decant.enabled {
        let mut decant = inputs(LaunchKind::Decant);
        decant.decant_sources = decant_sources(loaded);
        launches.push(FixtureLaunch {
            label: "decant".to_string(),
            inputs: decant,
        });
    }
    launches
}

/// Decant's sources: `NAME.toml` beside the fixture.
pub fn decant_sources(loaded: &LoadedProfile) -> Vec<DecantSource> {
    loaded
        .profile
        .decant
        .source_profiles
        .iter()
        .filter_map(|name| {
            let path = fixtures_dir().join("valid").join(format!("{name}.toml"));
            let source = load_fixture(&path).expect("decant source fixture is valid");
            let home_volume = agentc_policy::home_volume_name(&source.profile, Some(&owner()))?;
            Some(DecantSource {
                profile: name.clone(),
                agent: source.profile.agent,
                home_volume,
            })
        })
        .collect()
}

/// Resolves one fixture launch.
pub fn resolve(loaded: &LoadedProfile, launch: &FixtureLaunch) -> Result<LaunchSpec, PolicyError> {
    agentc_policy::resolve(loaded, &launch.inputs, &FixturePaths)
}
