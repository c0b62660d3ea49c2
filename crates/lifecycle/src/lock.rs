//! The lock file: what `agentc run --locked` may launch, and the drift between a lock and the
//! machine now.
//!
//! A lock pins, for one profile: each launch's spec digest (the `io.agentc.spec-digest` label)
//! with the spec's values flattened for review, the image ID (and repository digests) of each
//! image a container runs, the egress policy as resolved, the hash of every file the launches
//! mount or trust (a directory by a tree hash), the `AGENTC_*` overrides in force, the
//! workspace, the runtime, and agentc's version. Secrets appear by name only: the spec never
//! holds their values.
//!
//! Every path in a lock is in the portable form the digest covers ([`agentc_policy::digest`]):
//! the workspace and the project's files relative to the profile's directory (`.`,
//! `./certs/ca.pem`), the home's under `~`, so a lock written in one checkout holds in
//! another, while a bind that moves (a workspace outside the project) drifts.
//!
//! [`Lock::current`] builds a lock from values the caller gathered (specs, image facts, file
//! hashes); [`compare`] names every field that differs. The same function builds the lock
//! that `agentc lock` writes and the one `--locked` compares with it, so a new lock field is
//! written and checked alike.

use std::collections::{BTreeMap, BTreeSet};

use agentc_policy::{EgressMode, LocalRoots, Profile};
use serde::{Deserialize, Serialize};

use crate::error::{parse_toml, shown, LifecycleError};
use crate::plan::{parts, Launch, Part};

/// The version of the lock format this crate writes and reads.
pub const LOCK_VERSION: u32 = 1;

/// The runtime a launch runs under when the profile names none (`security.runtime`): the
/// engine's default.
pub const DEFAULT_RUNTIME: &str = "default";

/// A lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// The lock format's version ([`LOCK_VERSION`]).
    pub lock_version: u32,
    /// The agentc that wrote it.
    pub agentc_version: String,
    /// The profile's name.
    pub profile: String,
    /// The workspace the run mounts, when it mounts one, relative to the profile's directory
    /// (`.`, `..`) or the home (`~/src/app`) where it is inside them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The container runtime (`default`: the engine's default runtime).
    pub runtime: String,
    /// The `AGENTC_*` overrides in force, by name.
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// The egress policy as resolved.
    pub egress: EgressLock,
    /// Each launch, in `agentc validate` order.
    #[serde(default, rename = "launch")]
    pub launches: Vec<LaunchLock>,
    /// Each image a container runs.
    #[serde(default, rename = "image")]
    pub images: Vec<ImageLock>,
    /// Each host file or directory mounted or trusted.
    #[serde(default, rename = "file")]
    pub files: Vec<FileLock>,
}

/// The egress policy of a lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgressLock {
    /// `deny`, `allowlist` or `unrestricted`.
    pub mode: String,
    /// The allowed hosts, as resolved (trimmed, lower case, in profile order).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// The SSH gateway, `HOST:PORT`, when egress goes through one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    /// Whether the workload keeps `NET_ADMIN` and `NET_RAW` behind the egress proxy
    /// (`egress.allow_net_capabilities`: the `egress-host-path` finding); written only when it
    /// does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub net_capabilities: bool,
}

impl EgressLock {
    /// The egress policy of a profile.
    pub fn of(profile: &Profile) -> EgressLock {
        let egress = &profile.egress;
        let hosts = match egress.mode {
            EgressMode::Allowlist => egress
                .hosts
                .iter()
                .map(|host| host.trim().trim_end_matches('.').to_ascii_lowercase())
                .collect(),
            EgressMode::Deny | EgressMode::Unrestricted => Vec::new(),
        };
        EgressLock {
            mode: egress.mode.as_str().to_string(),
            hosts,
            gateway: egress.gateway_host.as_ref().map(|host| {
                format!(
                    "{host}:{}",
                    egress
                        .gateway_port
                        .map(|p| p.to_string())
                        .unwrap_or_default()
                )
            }),
            net_capabilities: egress.allow_net_capabilities,
        }
    }
}

/// One launch of a lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchLock {
    /// Its label: `run`, `seed TARGET`, `build` or `decant`.
    pub launch: String,
    /// Its spec digest (`io.agentc.spec-digest`).
    pub spec_digest: String,
    /// The spec's values by path, in the portable form the digest covers, for review and to
    /// name what drifted; URL passwords are redacted (the digest covers them).
    #[serde(default)]
    pub spec: BTreeMap<String, String>,
}

/// One image of a lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageLock {
    /// The reference the launches name.
    pub reference: String,
    /// The image ID it resolved to (`sha256:...`).
    pub id: String,
    /// The repository digests the engine knows for it (none for a local build).
    #[serde(default)]
    pub repo_digests: Vec<String>,
}

/// What the engine reports about an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageFacts {
    /// The image ID.
    pub id: String,
    /// Its repository digests, sorted.
    pub repo_digests: Vec<String>,
}

/// What a locked path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory (hashed as a tree).
    Directory,
    /// Something else (a socket): present, contents not hashed.
    Other,
    /// Nothing is there.
    Missing,
}

impl FileKind {
    fn as_str(self) -> &'static str {
        match self {
            FileKind::File => "file",
            FileKind::Directory => "directory",
            FileKind::Other => "other",
            FileKind::Missing => "missing",
        }
    }
}

/// One host path of a lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileLock {
    /// The host path in its portable form ([`LocalRoots::portable_path`]: `./ca.pem` beside the
    /// profile, `~/.gitconfig`, `/etc/ssl/certs`).
    pub path: String,
    /// What it is.
    pub kind: FileKind,
    /// The hex sha256 of a file's contents or a directory's tree; absent for a writable mount
    /// (the agent changes it by design) and for what is neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Mounted writable by some launch.
    #[serde(default)]
    pub writable: bool,
    /// Where the launches mount it, `LAUNCH:TARGET`.
    #[serde(default)]
    pub mounted_at: Vec<String>,
}

/// A host path the launches mount, to be hashed by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileUse {
    /// The absolute host path, to hash.
    pub path: String,
    /// The path as the lock writes it ([`FileLock::path`]).
    pub locked_path: String,
    /// Mounted writable by some launch: its contents are not pinned.
    pub writable: bool,
    /// Where, `LAUNCH:TARGET`.
    pub mounted_at: Vec<String>,
}

/// Every host path the launches bind, except the workspace: profile binds, configuration
/// mounts, CA files and directories, gateway keys, seed sources. Sorted by path.
pub fn files_to_hash(launches: &[Launch]) -> Vec<FileUse> {
    let mut files: BTreeMap<String, FileUse> = BTreeMap::new();
    for launch in launches {
        for part in parts(&launch.spec) {
            if let Part::Bind {
                path,
                target,
                read_only,
                workspace: false,
            } = part
            {
                let entry = files.entry(path.clone()).or_insert_with(|| FileUse {
                    locked_path: launch.roots.portable_path(&path),
                    path,
                    writable: false,
                    mounted_at: Vec::new(),
                });
                entry.writable |= !read_only;
                entry.mounted_at.push(format!("{}:{target}", launch.label));
            }
        }
    }
    files.into_values().collect()
}

/// Every image a container of the launches runs, sorted.
pub fn images_to_pin(launches: &[Launch]) -> Vec<String> {
    let images: BTreeSet<String> = launches
        .iter()
        .flat_map(|launch| parts(&launch.spec))
        .filter_map(|part| match part {
            Part::Image { reference, .. } => Some(reference),
            _ => None,
        })
        .collect();
    images.into_iter().collect()
}

/// The workspace the launches mount, when one does, in its portable form
/// ([`Lock::workspace`]).
pub fn workspace_of(launches: &[Launch]) -> Option<String> {
    launches.iter().find_map(|launch| {
        parts(&launch.spec).into_iter().find_map(|part| match part {
            Part::Bind {
                path,
                workspace: true,
                ..
            } => Some(launch.roots.portable_path(&path)),
            _ => None,
        })
    })
}

/// Everything a lock is made of, gathered by the caller.
#[derive(Debug, Clone)]
pub struct LockInputs<'a> {
    /// The running agentc's version.
    pub agentc_version: &'a str,
    /// The profile.
    pub profile: &'a Profile,
    /// Its launches, resolved.
    pub launches: &'a [Launch],
    /// The `AGENTC_*` overrides in force.
    pub environment: &'a BTreeMap<String, String>,
    /// Each image of [`images_to_pin`], as the engine reports it.
    pub images: &'a BTreeMap<String, ImageFacts>,
    /// Each path of [`files_to_hash`], hashed.
    pub files: Vec<FileLock>,
}

impl Lock {
    /// The lock of the machine as it is: what `agentc lock` writes and `--locked` compares.
    pub fn current(inputs: LockInputs<'_>) -> Lock {
        Lock {
            lock_version: LOCK_VERSION,
            agentc_version: inputs.agentc_version.to_string(),
            profile: inputs.profile.name.clone(),
            workspace: workspace_of(inputs.launches),
            runtime: inputs
                .profile
                .security
                .runtime
                .clone()
                .unwrap_or_else(|| DEFAULT_RUNTIME.to_string()),
            environment: inputs
                .environment
                .iter()
                .filter(|(_, value)| !value.trim().is_empty())
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect(),
            egress: EgressLock::of(inputs.profile),
            launches: inputs
                .launches
                .iter()
                .map(|launch| LaunchLock {
                    launch: launch.label.clone(),
                    spec_digest: launch.spec.digest().unwrap_or_default().to_string(),
                    spec: flatten_spec(&launch.spec, &launch.roots),
                })
                .collect(),
            images: inputs
                .images
                .iter()
                .map(|(reference, facts)| ImageLock {
                    reference: reference.clone(),
                    id: facts.id.clone(),
                    repo_digests: facts.repo_digests.clone(),
                })
                .collect(),
            files: inputs.files,
        }
    }

    /// The lock as a commented TOML document.
    pub fn to_toml(&self) -> String {
        // Plain data with string keys always serializes.
        let body = toml::to_string(self).unwrap_or_default();
        format!(
            "# agentc lock of profile {:?}: what `agentc run --locked`, `seed --locked` and\n\
             # `verify --locked` may launch. Written by `agentc lock`; review it, commit it, and\n\
             # write it again with `agentc lock` after a reviewed change. `agentc lock --check`\n\
             # lists any drift. Secrets appear by name only.\n\n{body}",
            self.profile
        )
    }

    /// Reads a lock file; a corrupt, truncated or hand-edited one is an error naming the file
    /// and line.
    pub fn parse(file: &str, text: &str) -> Result<Lock, LifecycleError> {
        let hint = "write it again with `agentc lock PROFILE` (after reviewing the profile)";
        let lock: Lock = parse_toml(file, text, hint)?;
        if lock.lock_version != LOCK_VERSION {
            return Err(LifecycleError::corrupt_at(
                file,
                text,
                "lock_version",
                format!(
                    "lock_version {} is not the version this agentc reads ({LOCK_VERSION})",
                    lock.lock_version
                ),
                hint,
            ));
        }
        for image in &lock.images {
            if !crate::reference::is_image_id(&image.id) {
                return Err(LifecycleError::corrupt_at(
                    file,
                    text,
                    &image.id,
                    format!(
                        "image {:?}: id {:?} is not an image ID",
                        image.reference, image.id
                    ),
                    hint,
                ));
            }
        }
        Ok(lock)
    }
}

/// A spec's values by path (`container.resources.memory_bytes`), lists of named things keyed
/// by their name (`container.env.HTTP_PROXY.value`, `container.mounts./srv/notes.source.path`),
/// in the portable form the digest covers ([`agentc_policy::portable_action`]: host paths
/// relative to `roots`, no spec-digest label); URL passwords are redacted.
pub fn flatten_spec(
    spec: &agentc_policy::LaunchSpec,
    roots: &LocalRoots,
) -> BTreeMap<String, String> {
    let action = agentc_policy::portable_action(spec, roots);
    let value = serde_json::to_value(&action).unwrap_or_default();
    let mut out = BTreeMap::new();
    flatten("", &value, &mut out);
    out
}

fn flatten(prefix: &str, value: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    let join = |key: &str| {
        if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}.{key}")
        }
    };
    match value {
        serde_json::Value::Object(map) => {
            if map.is_empty() {
                out.insert(prefix.to_string(), "{}".to_string());
            }
            for (key, item) in map {
                flatten(&join(key), item, out);
            }
        }
        serde_json::Value::Array(items) => {
            if items.is_empty() {
                out.insert(prefix.to_string(), "[]".to_string());
            }
            for (index, item) in items.iter().enumerate() {
                let key = identity(item).unwrap_or_else(|| index.to_string());
                let item_prefix = join(&key);
                match item {
                    serde_json::Value::Object(map) => {
                        for (field, inner) in map {
                            if identity_field(field, map) {
                                continue;
                            }
                            flatten(&format!("{item_prefix}.{field}"), inner, out);
                        }
                        if map.keys().all(|field| identity_field(field, map)) {
                            out.insert(item_prefix, "{}".to_string());
                        }
                    }
                    other => flatten(&item_prefix, other, out),
                }
            }
        }
        serde_json::Value::String(text) => {
            out.insert(prefix.to_string(), redact_url_password(text));
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// The fields that name an item of a list, in order of preference.
const IDENTITY_FIELDS: [&str; 4] = ["name", "target", "host", "container_path"];

fn identity(item: &serde_json::Value) -> Option<String> {
    let map = item.as_object()?;
    if let (Some(port), Some(protocol)) = (map.get("container_port"), map.get("protocol")) {
        return Some(format!(
            "{}/{}",
            port,
            protocol.as_str().unwrap_or_default()
        ));
    }
    IDENTITY_FIELDS
        .iter()
        .find_map(|field| map.get(*field)?.as_str().map(str::to_string))
}

fn identity_field(field: &str, map: &serde_json::Map<String, serde_json::Value>) -> bool {
    let chosen = IDENTITY_FIELDS
        .iter()
        .find(|name| map.get(**name).is_some_and(serde_json::Value::is_string));
    chosen == Some(&field)
}

/// `https://user:secret@host/` becomes `https://user:<redacted>@host/`; other text is kept.
pub fn redact_url_password(text: &str) -> String {
    let Some(scheme_end) = text.find("://") else {
        return text.to_string();
    };
    let rest = &text[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return text.to_string();
    };
    let userinfo = &authority[..at];
    let Some(colon) = userinfo.find(':') else {
        return text.to_string();
    };
    format!(
        "{}{}:<redacted>{}",
        &text[..scheme_end + 3],
        &userinfo[..colon],
        &text[scheme_end + 3 + at..]
    )
}

/// One field that differs between a lock and the machine now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Drift {
    /// The field, such as `launch run: container.resources.memory_bytes` or
    /// `image claude-code:latest: id`.
    pub field: String,
    /// Its locked value (`(none)` when absent).
    pub locked: String,
    /// Its value now (`(none)` when absent).
    pub current: String,
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: locked {}, current {}",
            self.field, self.locked, self.current
        )
    }
}

/// Every field that differs between `locked` and `current`, in lock order.
pub fn compare(locked: &Lock, current: &Lock) -> Vec<Drift> {
    let mut drifts = Vec::new();
    let mut differ = |field: String, a: Option<&str>, b: Option<&str>| -> bool {
        let differs = a != b;
        if differs {
            drifts.push(Drift {
                field,
                locked: shown(a),
                current: shown(b),
            });
        }
        differs
    };
    differ(
        "agentc_version".into(),
        Some(&locked.agentc_version),
        Some(&current.agentc_version),
    );
    differ(
        "profile".into(),
        Some(&locked.profile),
        Some(&current.profile),
    );
    differ(
        "workspace".into(),
        locked.workspace.as_deref(),
        current.workspace.as_deref(),
    );
    differ(
        "runtime".into(),
        Some(&locked.runtime),
        Some(&current.runtime),
    );
    for name in keys(&locked.environment, &current.environment) {
        differ(
            format!("environment.{name}"),
            locked.environment.get(name).map(String::as_str),
            current.environment.get(name).map(String::as_str),
        );
    }
    differ(
        "egress.mode".into(),
        Some(&locked.egress.mode),
        Some(&current.egress.mode),
    );
    differ(
        "egress.hosts".into(),
        Some(&locked.egress.hosts.join(", ")),
        Some(&current.egress.hosts.join(", ")),
    );
    differ(
        "egress.gateway".into(),
        locked.egress.gateway.as_deref(),
        current.egress.gateway.as_deref(),
    );
    let hatch = |egress: &EgressLock| egress.net_capabilities.to_string();
    differ(
        "egress.net_capabilities".into(),
        Some(&hatch(&locked.egress)),
        Some(&hatch(&current.egress)),
    );
    let launch_labels = ordered(
        locked.launches.iter().map(|l| &l.launch),
        current.launches.iter().map(|l| &l.launch),
    );
    for label in launch_labels {
        let a = locked.launches.iter().find(|l| &l.launch == label);
        let b = current.launches.iter().find(|l| &l.launch == label);
        match (a, b) {
            (Some(a), Some(b)) if a.spec_digest != b.spec_digest => {
                let mut named = false;
                for path in keys(&a.spec, &b.spec) {
                    named |= differ(
                        format!("launch {label}: {path}"),
                        a.spec.get(path).map(String::as_str),
                        b.spec.get(path).map(String::as_str),
                    );
                }
                if !named {
                    differ(
                        format!("launch {label}: spec_digest"),
                        Some(&a.spec_digest),
                        Some(&b.spec_digest),
                    );
                }
            }
            (Some(_), Some(_)) => {}
            (a, b) => {
                differ(
                    format!("launch {label}"),
                    a.map(|l| l.spec_digest.as_str()),
                    b.map(|l| l.spec_digest.as_str()),
                );
            }
        }
    }
    let image_refs = ordered(
        locked.images.iter().map(|i| &i.reference),
        current.images.iter().map(|i| &i.reference),
    );
    for reference in image_refs {
        let a = locked.images.iter().find(|i| &i.reference == reference);
        let b = current.images.iter().find(|i| &i.reference == reference);
        differ(
            format!("image {reference}: id"),
            a.map(|i| i.id.as_str()),
            b.map(|i| i.id.as_str()),
        );
        if let (Some(a), Some(b)) = (a, b) {
            differ(
                format!("image {reference}: repo_digests"),
                Some(&a.repo_digests.join(", ")),
                Some(&b.repo_digests.join(", ")),
            );
        }
    }
    let paths = ordered(
        locked.files.iter().map(|f| &f.path),
        current.files.iter().map(|f| &f.path),
    );
    for path in paths {
        let a = locked.files.iter().find(|f| &f.path == path);
        let b = current.files.iter().find(|f| &f.path == path);
        match (a, b) {
            (Some(a), Some(b)) => {
                differ(
                    format!("file {path}: kind"),
                    Some(a.kind.as_str()),
                    Some(b.kind.as_str()),
                );
                differ(
                    format!("file {path}: sha256"),
                    a.sha256.as_deref(),
                    b.sha256.as_deref(),
                );
                differ(
                    format!("file {path}: writable"),
                    Some(if a.writable { "true" } else { "false" }),
                    Some(if b.writable { "true" } else { "false" }),
                );
            }
            (a, b) => {
                differ(
                    format!("file {path}"),
                    a.map(|f| f.kind.as_str()),
                    b.map(|f| f.kind.as_str()),
                );
            }
        }
    }
    drifts
}

/// The union of two maps' keys, sorted.
fn keys<'a>(
    a: &'a BTreeMap<String, String>,
    b: &'a BTreeMap<String, String>,
) -> BTreeSet<&'a String> {
    a.keys().chain(b.keys()).collect()
}

/// The items of `a` in order, then those only in `b`.
fn ordered<'a>(
    a: impl Iterator<Item = &'a String>,
    b: impl Iterator<Item = &'a String>,
) -> Vec<&'a String> {
    let mut out: Vec<&String> = Vec::new();
    for item in a.chain(b) {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

#[cfg(test)]
mod tests;
