//! The inputs of [`crate::resolve()`] that come from the machine and the invocation.

use std::collections::BTreeMap;

use crate::profile::AgentName;
use crate::spec::LaunchKind;

/// The host user that owns the launch; part of default volume and image names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// Login name (sanitized into `[a-z0-9_.-]` when used in names).
    pub name: String,
    /// Numeric user id.
    pub uid: u32,
    /// Numeric group id.
    pub gid: u32,
}

/// Another profile whose home volume a Decant launch reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecantSource {
    /// The source profile's name.
    pub profile: String,
    /// Its agent.
    pub agent: AgentName,
    /// Its home volume's name.
    pub home_volume: String,
}

/// What a path on the host is, as far as a launch cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// Nothing is there.
    Missing,
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// Something else (a socket, a device, ...).
    Other,
}

/// Answers what host paths are; the binary asks the disk, tests may map a virtual tree.
pub trait PathProbe {
    /// What `path` (absolute, lexically normalized) is.
    fn kind(&self, path: &str) -> PathKind;

    /// Where `path` really leads once symbolic links are followed, when that is known and
    /// differs from `path`; `None` when it does not exist, cannot be resolved, or the probe
    /// does not follow links. Docker follows links when it binds a path, so a spec must name
    /// the real path.
    fn canonical(&self, path: &str) -> Option<String> {
        let _ = path;
        None
    }
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealPaths;

impl PathProbe for RealPaths {
    fn kind(&self, path: &str) -> PathKind {
        match std::fs::metadata(path) {
            Ok(metadata) if metadata.is_file() => PathKind::File,
            Ok(metadata) if metadata.is_dir() => PathKind::Directory,
            Ok(_) => PathKind::Other,
            Err(_) => PathKind::Missing,
        }
    }

    fn canonical(&self, path: &str) -> Option<String> {
        let real = std::fs::canonicalize(path).ok()?;
        let real = real.to_str()?;
        (real != path).then(|| real.to_string())
    }
}

/// Everything besides the profile that a launch depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveInputs {
    /// Which launch to resolve.
    pub kind: LaunchKind,
    /// The workspace directory, absolute (`--workspace`, default the current directory).
    pub workspace: String,
    /// The directory holding the profile file, absolute; relative sources resolve against it.
    pub profile_dir: String,
    /// The caller's home directory, for `~` in mount sources.
    pub home_dir: String,
    /// The host user.
    pub owner: Owner,
    /// `--image`: replaces the profile's image reference.
    pub image: Option<String>,
    /// `--seed-target`: which seed mount a seed launch copies.
    pub seed_target: Option<String>,
    /// Arguments appended to the agent's command.
    pub agent_args: Vec<String>,
    /// The environment, for `AGENTC_*` overrides. Secret values are never read from it here.
    pub env: BTreeMap<String, String>,
    /// Decant's source profiles, loaded by the caller from `NAME.toml` beside the profile.
    pub decant_sources: Vec<DecantSource>,
}
