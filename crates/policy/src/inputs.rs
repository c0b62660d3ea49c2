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
    /// The host user, whose login and uid the default names hold (`<agent>-home-dev-1000-NAME`,
    /// `agentc-sandbox-dev-1000-NAME`) so that the users of one host do not share them; `None`
    /// for a rendering that must be the same on every machine (the Kubernetes objects): the
    /// names then hold no user (`<agent>-home-NAME`), and an image built for the user's uid
    /// cannot be resolved.
    pub owner: Option<Owner>,
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
    /// How this invocation starts the container and where its profile came from; outside the
    /// spec digest. [`Instance::default`] is the launch as the profile says, at a terminal
    /// (what `plan`, `render` and `lock` show).
    pub instance: Instance,
    /// What an image build takes besides the profile; read only by a build launch.
    pub build: BuildInputs,
}

/// The inputs of an image build ([`crate::LaunchKind::Build`]) that come from the invocation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildInputs {
    /// The directory holding agentc's bundled build context of the profile's agent, written
    /// there by the caller (`agentc build` writes `agentc_lifecycle::images::build_context`
    /// into its cache): a preset's profile without an `image.build_context` of its own builds
    /// from it. `None`: such a profile has nothing to build.
    pub bundled_context: Option<String>,
    /// `--build-arg NAME=VALUE`: build arguments, over the `UID` and `GID` agentc passes.
    pub args: BTreeMap<String, String>,
}

impl ResolveInputs {
    /// The inputs of a `kind` launch with `workspace`, a profile in `profile_dir` and the
    /// caller's `home_dir` (all absolute), and nothing else: no owner (names without a user),
    /// no image override, seed target, agent arguments, environment or decant sources, the
    /// default [`Instance`]. Set the rest by field:
    ///
    /// ```
    /// use agentc_policy::{Instance, LaunchKind, ResolveInputs, Start};
    /// let inputs = ResolveInputs {
    ///     instance: Instance { start: Start::Session, ..Instance::default() },
    ///     ..ResolveInputs::new(LaunchKind::Run, "/srv/task", "/srv/profiles", "/home/ci")
    /// };
    /// assert_eq!(inputs.profile_dir, "/srv/profiles");
    /// assert!(inputs.owner.is_none() && inputs.agent_args.is_empty());
    /// ```
    pub fn new(
        kind: LaunchKind,
        workspace: impl Into<String>,
        profile_dir: impl Into<String>,
        home_dir: impl Into<String>,
    ) -> ResolveInputs {
        ResolveInputs {
            kind,
            workspace: workspace.into(),
            profile_dir: profile_dir.into(),
            home_dir: home_dir.into(),
            owner: None,
            image: None,
            seed_target: None,
            agent_args: Vec::new(),
            env: BTreeMap::new(),
            decant_sources: Vec::new(),
            instance: Instance::default(),
            build: BuildInputs::default(),
        }
    }
}

/// One instance of a launch: how this invocation starts its container (attached or in the
/// background, under which name, at a terminal or not) and the profile file it came from.
///
/// [`crate::resolve()`] applies it last, after it has computed the spec digest, so every
/// instance of one launch carries the same `io.agentc.spec-digest`: `agentc run` and
/// `agentc run --detach`, each of `--count`'s copies, a session's sandbox, a script without a
/// terminal, and `agentc plan`, `render` and `lock`, which resolve the default instance. The
/// spec `resolve` returns is final: nothing edits it before it is launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// Attached as the launch says, or in the background.
    pub start: Start,
    /// The name of a container started in the background whose launch names none (a run's;
    /// a custom sandbox keeps `agentc-sandbox-OWNER-PROFILE`). `agentc run --detach` passes
    /// `agentc-run-PROFILE-PID`, a session `agentc-session-PROFILE-PID-N`. A launch started in
    /// the background with no name at all is refused.
    pub default_name: Option<String>,
    /// The name asked for (`agentc run --name N`): replaces the launch's own name, so that a
    /// second sandbox of one profile can run beside the first; an egress companion follows it
    /// (`N-egress`, `N-egress-proxy`). A docker container name: `[A-Za-z0-9][A-Za-z0-9_.-]*`,
    /// at most 128 characters.
    pub name: Option<String>,
    /// The copy number `N` of `agentc run --count`: the container is named `NAME-N` after the
    /// name it would have, and an egress companion becomes its own (`NAME-N-egress`, ...,
    /// [`crate::ContainerSpec::egress_for`]), so that no two copies share one. Only for a start
    /// in the background.
    pub copy: Option<u16>,
    /// Whether stdin is a terminal. When it is not, an attached launch gets no pseudo-TTY: the
    /// docker CLI refuses `--tty` then ("the input device is not a TTY") and a script piping
    /// into an agent wants plain streams. A launch in the background keeps its TTY for a later
    /// `docker attach`.
    pub stdin_is_terminal: bool,
    /// The profile file the launch came from, recorded in labels for `agentc ps`.
    pub profile_record: Option<ProfileRecord>,
    /// A home volume of its own (an agent preset's): `NAME-home` after the container's name,
    /// labelled [`crate::LABEL_OWN_VOLUME`] on the container, instead of the profile's shared
    /// one, so that a restored or forked sandbox diverges on its own. Needs a name.
    pub own_home: bool,
    /// The runtime the engine was found to meet the launch's isolation floor with
    /// (`[security] isolation`, chosen by [`crate::choose_runtime`] from the probes of the
    /// engine's runtimes): the container runs under it, labelled [`crate::LABEL_ISOLATION`]
    /// and [`crate::LABEL_RUNTIME`] ([`crate::isolation::placed`]). `None`: the floor is not
    /// met yet, and a launch of the spec meets it first. Refused for a launch without a floor,
    /// and for one whose `security.runtime` names another runtime.
    pub floor: Option<crate::ChosenRuntime>,
}

impl Default for Instance {
    /// The launch as the profile says: attached as its kind is, its own name, at a terminal,
    /// no profile record, an isolation floor not yet met.
    fn default() -> Instance {
        Instance {
            start: Start::AsLaunched,
            default_name: None,
            name: None,
            copy: None,
            stdin_is_terminal: true,
            profile_record: None,
            own_home: false,
            floor: None,
        }
    }
}

/// How a container is started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Start {
    /// As the launch's kind says: a run attached and removed when it exits, a custom sandbox
    /// in the background.
    #[default]
    AsLaunched,
    /// In the background and kept after it exits (no `--rm`: its exit code and logs stay
    /// readable until `agentc rm`), stdin kept open, when the launch has it, for a later
    /// `docker attach`: `agentc run --detach` and `--count`.
    Detached,
    /// In the background, kept after it exits, without stdin: a session's sandbox
    /// (`SandboxClient::create`), driven through exec.
    Session,
}

/// The profile file a launch came from: `io.agentc.profile-file` and
/// `io.agentc.profile-sha256`, so that `agentc ps` can tell whether the profile changed since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileRecord {
    /// The profile file's absolute path.
    pub file: String,
    /// The sha256 (hex) of its text at launch.
    pub sha256: String,
}
