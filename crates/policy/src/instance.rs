//! Applying the invocation's [`Instance`] to a resolved launch: the last step of
//! [`crate::resolve()`], after the spec digest, so every instance of a launch carries its digest
//! (see [`crate::digest`]); and the names behind the egress proxy, which must be DNS labels
//! ([`dns_label_problem`]).

use crate::document::LoadedProfile;
use crate::error::{Location, PolicyError};
use crate::inputs::{Instance, Start};
use crate::keys;
use crate::spec::{
    Action, ContainerSpec, LaunchSpec, MountSource, Origin, LABEL_OWN_VOLUME, LABEL_PROFILE_FILE,
    LABEL_PROFILE_SHA256,
};

/// The longest DNS label: the longest name a container behind the egress proxy may have.
pub const MAX_DNS_LABEL: usize = 63;

/// Why a name of a launch behind the egress proxy cannot serve as one DNS label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameProblem {
    /// The name is longer than [`MAX_DNS_LABEL`].
    TooLong {
        /// The name.
        name: String,
    },
    /// The name holds a dot (so it is several labels, or has an empty one).
    Dotted {
        /// The name.
        name: String,
    },
}

impl std::fmt::Display for NameProblem {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NameProblem::TooLong { name } => write!(
                formatter,
                "the name {name:?} is {} characters, more than a DNS label's {MAX_DNS_LABEL}",
                name.len()
            ),
            NameProblem::Dotted { name } => {
                write!(
                    formatter,
                    "the name {name:?} holds a dot, which no DNS label has"
                )
            }
        }
    }
}

/// Why the name of a container behind the egress proxy cannot be one DNS label, if it cannot:
/// the proxy finds its sandbox by that name through the engine's DNS (`agentc_egress::watch`),
/// and a name longer than 63 characters or with a dot is none (the proxy would end its watch
/// after a minute, leaving the sandbox without egress). `None` without a companion, without a
/// name (then nothing is watched), or when the name is one label. The companion's own names
/// (`NAME-egress-proxy`, `NAME-egress`) are nobody's to look up: the sandbox reaches its proxy
/// by address.
pub fn dns_label_problem(container: &ContainerSpec) -> Option<NameProblem> {
    container.egress.as_ref()?;
    let name = container.name.as_deref()?;
    if name.contains('.') {
        return Some(NameProblem::Dotted {
            name: name.to_string(),
        });
    }
    (name.len() > MAX_DNS_LABEL).then(|| NameProblem::TooLong {
        name: name.to_string(),
    })
}

/// Starts the container as `instance` asks: in the background (kept after it exits; a
/// session's without stdin), named, as a copy, without a TTY when stdin is no terminal; and
/// labels it with its profile file. A build takes only the profile record; a start in the
/// background or a copy of it is refused, as is a container in the background with no name.
pub(crate) fn apply(
    spec: &mut LaunchSpec,
    instance: &Instance,
    loaded: &LoadedProfile,
) -> Result<(), PolicyError> {
    let refuse = |input: &str, message: String, hint: &str| PolicyError::Unlaunchable {
        location: Location::Invocation {
            input: input.to_string(),
        },
        message,
        hint: hint.to_string(),
    };
    let invocation = |input: &str| Origin::Invocation {
        input: input.to_string(),
    };
    if let Some(record) = &instance.profile_record {
        let labels = spec.labels_mut();
        labels.insert(LABEL_PROFILE_FILE.to_string(), record.file.clone());
        labels.insert(LABEL_PROFILE_SHA256.to_string(), record.sha256.clone());
        for key in [LABEL_PROFILE_FILE, LABEL_PROFILE_SHA256] {
            spec.origins
                .insert(keys::label(key), invocation("the profile file"));
        }
    }
    let profile = spec.profile.clone();
    let kind = spec.kind;
    let origins = &mut spec.origins;
    let Action::Container(container) = &mut spec.action else {
        if instance.start != Start::AsLaunched || instance.copy.is_some() {
            return Err(refuse(
                "--detach",
                format!(
                    "profile {profile:?}: a {} launch builds an image and starts no container",
                    kind.as_str()
                ),
                "start a run or sandbox launch in the background",
            ));
        }
        return Ok(());
    };
    let started_by = match instance.start {
        Start::AsLaunched => None,
        Start::Detached => Some("--detach"),
        Start::Session => Some("a session"),
    };
    if let Some(input) = started_by {
        if !container.detach {
            container.detach = true;
            container.auto_remove = false;
            for key in [keys::DETACH, keys::AUTO_REMOVE] {
                origins.insert(key.to_string(), invocation(input));
            }
        }
        if instance.start == Start::Session && container.interactive {
            container.interactive = false;
            origins.insert(keys::INTERACTIVE.to_string(), invocation(input));
        }
    }
    if let Some(name) = &instance.name {
        if !is_container_name(name) {
            return Err(refuse(
                "--name",
                format!("{name:?} is not a container name"),
                "use letters, digits, `_`, `.` and `-`, starting with a letter or digit, at most 128 characters",
            ));
        }
        // The companion follows the name, so that two named sandboxes of one profile each
        // have their own network and proxy, and `agentc rm N` removes N's set.
        if container.name.as_deref() != Some(name.as_str()) {
            container.egress_named(name);
        }
        container.name = Some(name.clone());
        origins.insert(keys::NAME.to_string(), invocation("--name"));
    }
    if container.name.is_none() {
        if let Some(name) = &instance.default_name {
            container.name = Some(name.clone());
            origins.insert(
                keys::NAME.to_string(),
                invocation(started_by.unwrap_or("the instance name")),
            );
        } else if container.detach {
            return Err(refuse(
                "--detach",
                format!("profile {profile:?}: a container started in the background needs a name"),
                "give the instance a default_name (agentc run --detach names it agentc-run-PROFILE-PID)",
            ));
        }
    }
    if let Some(copy) = instance.copy {
        let base = match (&container.name, container.detach) {
            (Some(base), true) => base.clone(),
            _ => {
                return Err(refuse(
                    "--count",
                    format!("profile {profile:?}: copy {copy} of an attached launch"),
                    "copies start in the background: start them detached",
                ))
            }
        };
        let name = format!("{base}-{copy}");
        // A copy behind the egress proxy gets an isolated network and a proxy of its own,
        // named after it (`NAME-egress`, `NAME-egress-proxy`) and labelled for it, so that
        // `agentc rm NAME` removes its set and no two copies share one.
        container.egress_for(&name, &copy.to_string());
        container.name = Some(name);
        origins.insert(keys::NAME.to_string(), invocation("--count"));
    }
    // The names this instance chooses (`--name`, a copy's `-N`), refused before any copy
    // starts. A default name is not refused (a resolve that only reads the launch, such as
    // explain, a lock or a pool's key, launches no name): a launch whose default name is no
    // DNS label is not watched by its proxy (`agentc_engine::companion::prepare::prepare`).
    if instance.name.is_some() || instance.copy.is_some() {
        if let Some(problem) = dns_label_problem(container) {
            return Err(name_refusal(&problem, instance, &profile, loaded));
        }
    }
    if instance.own_home {
        own_home(container, origins, loaded)?;
    }
    if let Some(chosen) = &instance.floor {
        place(container, origins, chosen, &profile)?;
    }
    if !instance.stdin_is_terminal && container.tty && !container.detach {
        container.tty = false;
        origins.insert(keys::TTY.to_string(), invocation("stdin (not a terminal)"));
    }
    Ok(())
}

/// Puts the container under the runtime `chosen` for its isolation floor
/// ([`crate::isolation::placed`]); refused for a container without a floor, or whose
/// `security.runtime` names another runtime.
fn place(
    container: &mut ContainerSpec,
    origins: &mut std::collections::BTreeMap<String, Origin>,
    chosen: &crate::ChosenRuntime,
    profile: &str,
) -> Result<(), PolicyError> {
    let refuse = |message: String, hint: &str| PolicyError::Unlaunchable {
        location: Location::Invocation {
            input: "the isolation floor's runtime".to_string(),
        },
        message: format!("profile {profile:?}: {message}"),
        hint: hint.to_string(),
    };
    if container.isolation.is_none() {
        return Err(refuse(
            format!(
                "a runtime ({}) was chosen for an isolation floor the launch does not have",
                chosen.name
            ),
            "resolve it without Instance::floor, or give the profile [security] isolation",
        ));
    }
    if let Some(named) = container
        .runtime
        .as_deref()
        .filter(|named| *named != chosen.name)
    {
        return Err(refuse(
            format!(
                "security.runtime names {named:?}, but the isolation floor's runtime chosen is {:?}",
                chosen.name
            ),
            "choose the floor's runtime for this launch (it keeps security.runtime)",
        ));
    }
    let named = container.runtime.is_some();
    *container = crate::isolation::placed(container, chosen);
    let invocation = Origin::Invocation {
        input: "the isolation floor".to_string(),
    };
    if !named {
        origins.insert(keys::RUNTIME.to_string(), invocation.clone());
    }
    for label in [crate::LABEL_ISOLATION, crate::LABEL_RUNTIME] {
        origins.insert(keys::label(label), invocation.clone());
    }
    Ok(())
}

/// Gives a named container of an agent preset a home volume of its own, `NAME-home`, in place of
/// the profile's (a custom sandbox has none: nothing changes), and the label that names it.
fn own_home(
    container: &mut ContainerSpec,
    origins: &mut std::collections::BTreeMap<String, Origin>,
    loaded: &LoadedProfile,
) -> Result<(), PolicyError> {
    let Some(preset) = crate::presets::preset(loaded.profile.agent) else {
        return Ok(());
    };
    let Some(name) = container.name.clone() else {
        return Err(PolicyError::Unlaunchable {
            location: Location::Invocation {
                input: "own home".to_string(),
            },
            message: "a home volume of its own is named after its container, which has no name"
                .to_string(),
            hint: "name the instance".to_string(),
        });
    };
    let volume = format!("{name}-home");
    for mount in &mut container.mounts {
        if mount.target != preset.home_path {
            continue;
        }
        if let MountSource::Volume { name, .. } = &mut mount.source {
            *name = volume.clone();
            container
                .labels
                .insert(LABEL_OWN_VOLUME.to_string(), volume.clone());
            let origin = Origin::Invocation {
                input: "a home of its own".to_string(),
            };
            origins.insert(keys::mount(preset.home_path), origin.clone());
            origins.insert(keys::label(LABEL_OWN_VOLUME), origin);
        }
    }
    Ok(())
}

/// The refusal of a launch whose names behind the egress proxy are no DNS labels, at the input
/// that chose them: `--name`, else the profile's `name` (which the default names, and their
/// `--count` copies, hold), with the longest name that input may be.
fn name_refusal(
    problem: &NameProblem,
    instance: &Instance,
    profile: &str,
    loaded: &LoadedProfile,
) -> PolicyError {
    let (location, input, given) = match &instance.name {
        Some(name) => (
            Location::Invocation {
                input: "--name".to_string(),
            },
            format!("{name:?}"),
            name.clone(),
        ),
        None => (
            loaded.location("name"),
            format!("the profile's name {profile:?}"),
            profile.to_string(),
        ),
    };
    let why = "the egress proxy finds its sandbox by name through the engine's DNS, where a \
               name must be one label";
    match problem {
        NameProblem::Dotted { name } => PolicyError::Invalid {
            location,
            message: format!("{input} makes the name {name:?}, which holds a dot: {why}"),
            hint: "use letters, digits, `_` and `-` only".to_string(),
        },
        NameProblem::TooLong { name } => {
            let added = name.len().saturating_sub(given.len());
            let most = MAX_DNS_LABEL.saturating_sub(added);
            let hint = if instance.name.is_some() {
                format!(
                    "use a --name of at most {most} characters{}",
                    if added > 0 {
                        format!(" (agentc adds {added} to it for this copy)")
                    } else {
                        String::new()
                    }
                )
            } else {
                format!(
                    "shorten the profile's name to at most {most} characters (agentc adds {added} \
                     to it for this launch), or pass a shorter --name"
                )
            };
            PolicyError::Invalid {
                location,
                message: format!(
                    "{input} makes the name {name:?}, {} characters: {why} of at most \
                     {MAX_DNS_LABEL} characters",
                    name.len()
                ),
                hint,
            }
        }
    }
}

/// Whether `name` is a name the engine accepts for a container: `[A-Za-z0-9][A-Za-z0-9_.-]*`,
/// at most 128 characters.
fn is_container_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 128
        && chars
            .next()
            .is_some_and(|first| first.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}
