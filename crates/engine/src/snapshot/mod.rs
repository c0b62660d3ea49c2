//! Pausing, snapshotting, restoring and forking a sandbox, written once over
//! [`SandboxClient`], so both backends do it alike.
//!
//! A snapshot is an image and a directory of archives:
//!
//! - the image is the sandbox's writable layer committed while the sandbox is frozen
//!   ([`SandboxClient::commit`]), named `agentc-snapshot/PROFILE:TAG` and labelled with the
//!   snapshot's name ([`LABEL_SNAPSHOT`]), its profile, the spec digest, the parent snapshot,
//!   the time, the source sandbox, whether secrets were allowed, and the list of its archives
//!   ([`LABEL_ARCHIVES`]). Every environment value the launch added is blanked in the image's
//!   configuration (a secret's value never reaches the image's configuration);
//! - the archives are tar streams of the tmpfs mounts and the writable volumes of the sandbox,
//!   taken through exec (`tar` in the sandbox), written as files in a directory the caller
//!   owns and passes in (this module writes and removes only there), each with its sha256
//!   recorded in the image's labels and checked before a restore.
//!
//! A restore is the profile's own launch (hardened as the profile says, its own egress
//! companion and credential placeholders) with the snapshot's image in place of the profile's,
//! made by the caller, after which [`restore::put_back`] puts the archives back.
//!
//! The archives hold whatever the sandbox wrote (keys it was handed included), so they are
//! the caller's alone: every directory this module creates is `0700` and every file `0600`,
//! set as they are created (`private_dirs`, `private_file`).

pub mod capture;
pub mod memory;
pub mod restore;

use std::collections::BTreeMap;
use std::fs::{DirBuilder, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::daemon_text::Refusal;
use crate::session::{ImageRecord, Sandbox, SandboxClient, SessionError};

pub use capture::{snapshot, SnapshotReport, SnapshotRequest};
pub use memory::{restore_memory, snapshot_memory, LABEL_MEMORY};
pub use restore::{prepare, put_back, RestorePlan, RestoreReport};

/// The mode of every directory a snapshot creates: its owner's alone.
pub const PRIVATE_DIR_MODE: u32 = 0o700;
/// The mode of every file a snapshot writes: its owner's alone.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// Creates `dir` and the directories above it that are missing, each `0700` as it is made;
/// an existing `dir` is an error unless `existing_ok`. Directories that existed keep their mode.
pub(crate) fn private_dirs(dir: &Path, existing_ok: bool) -> std::io::Result<()> {
    if let Some(parent) = dir.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        DirBuilder::new()
            .recursive(true)
            .mode(PRIVATE_DIR_MODE)
            .create(parent)?;
    }
    DirBuilder::new()
        .recursive(existing_ok)
        .mode(PRIVATE_DIR_MODE)
        .create(dir)
}

/// Creates the new file `path`, `0600` as it is made (never one that exists).
pub(crate) fn private_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PRIVATE_FILE_MODE)
        .open(path)
}

/// Label holding a snapshot image's name (`PROFILE:TAG`); only images carrying it are
/// snapshots. A sandbox restored from a snapshot inherits it from its image.
pub const LABEL_SNAPSHOT: &str = "io.agentc.snapshot";
/// Label naming the snapshot the sandbox was restored from (empty: none).
pub const LABEL_PARENT: &str = "io.agentc.snapshot-parent";
/// Label holding when the snapshot was taken (RFC 3339, UTC).
pub const LABEL_TIME: &str = "io.agentc.snapshot-time";
/// Label naming the sandbox the snapshot was taken of.
pub const LABEL_SOURCE: &str = "io.agentc.snapshot-source";
/// Label holding the spec digest of the sandbox's launch.
pub const LABEL_DIGEST: &str = "io.agentc.snapshot-spec-digest";
/// Label saying whether the sandbox had secrets as environment values: `none`, or
/// `allowed:NAME,...` (`--allow-secrets`).
pub const LABEL_SECRETS: &str = "io.agentc.snapshot-secrets";
/// Label holding the archives of the snapshot ([`Archive`], as JSON).
pub const LABEL_ARCHIVES: &str = "io.agentc.snapshot-archives";
/// The repository of snapshot images: `agentc-snapshot/PROFILE:TAG`.
pub const REPOSITORY: &str = "agentc-snapshot";

/// What an archive holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArchiveKind {
    /// A tmpfs mount's contents.
    Tmpfs,
    /// A writable named volume's contents.
    Volume,
}

/// One archive of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Archive {
    /// What it holds.
    pub kind: ArchiveKind,
    /// The mount's path in the sandbox.
    pub target: String,
    /// The volume's name, for a volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<String>,
    /// Its file in the snapshot's directory.
    pub file: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The sha256 (hex) of its bytes.
    pub sha256: String,
}

/// A snapshot, read from its image's labels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotRecord {
    /// Its name, `PROFILE:TAG`.
    pub name: String,
    /// Its image's ID.
    pub image_id: String,
    /// Its image's reference.
    pub reference: String,
    /// The profile's name.
    pub profile: String,
    /// The profile file the sandbox was launched from, when known.
    pub profile_file: Option<String>,
    /// The snapshot the sandbox was restored from, if any.
    pub parent: Option<String>,
    /// When it was taken.
    pub time: String,
    /// The sandbox it was taken of.
    pub source: String,
    /// The spec digest of the sandbox's launch.
    pub spec_digest: String,
    /// `none`, or `allowed:NAME,...`.
    pub secrets: String,
    /// Its archives.
    pub archives: Vec<Archive>,
    /// The image's size in bytes.
    pub image_bytes: u64,
    /// Its checkpoint of the sandbox's processes and memory (`--memory`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<memory::MemoryArchive>,
}

impl SnapshotRecord {
    /// Reads a snapshot image's labels; `None` for an image that is not a snapshot.
    pub fn from_image(image: &ImageRecord) -> Option<SnapshotRecord> {
        let labels = &image.labels;
        let name = labels.get(LABEL_SNAPSHOT)?.clone();
        let label = |key: &str| labels.get(key).cloned().unwrap_or_default();
        // Podman names a local image `localhost/agentc-snapshot/...`; both engines take the
        // name without it.
        let reference = image
            .tags
            .iter()
            .map(|tag| tag.strip_prefix("localhost/").unwrap_or(tag))
            .find(|tag| tag.starts_with(&format!("{REPOSITORY}/")))
            .map_or_else(|| image.id.clone(), str::to_string);
        Some(SnapshotRecord {
            name,
            image_id: image.id.clone(),
            reference,
            profile: label(agentc_policy::LABEL_PROFILE),
            profile_file: labels.get(agentc_policy::LABEL_PROFILE_FILE).cloned(),
            parent: labels.get(LABEL_PARENT).filter(|p| !p.is_empty()).cloned(),
            time: label(LABEL_TIME),
            source: label(LABEL_SOURCE),
            spec_digest: label(LABEL_DIGEST),
            secrets: label(LABEL_SECRETS),
            archives: json_label(&label(LABEL_ARCHIVES)).unwrap_or_default(),
            image_bytes: image.size,
            memory: labels
                .get(memory::LABEL_MEMORY)
                .and_then(|text| json_label(text)),
        })
    }

    /// The bytes of its archives.
    pub fn archive_bytes(&self) -> u64 {
        self.archives.iter().map(|archive| archive.bytes).sum()
    }
}

/// Why a snapshot operation failed, with its exit status.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// A session operation failed.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// A refusal: the request is understood but not done (exit 1).
    #[error("{message}")]
    Refused {
        /// What is refused.
        message: String,
        /// What to do.
        hint: String,
    },
    /// A request that this engine cannot carry out (exit 65).
    #[error("{message}")]
    Unsupported {
        /// What cannot be done.
        message: String,
        /// Which engine or runtime would do it.
        hint: String,
    },
    /// A host file of the snapshot could not be written or read.
    #[error("{path}: {message}")]
    Archive {
        /// The file or directory.
        path: String,
        /// What failed.
        message: String,
        /// What to do.
        hint: &'static str,
    },
}

impl agentc_policy::Hinted for SnapshotError {
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            SnapshotError::Session(error) => error.hint(),
            SnapshotError::Refused { hint, .. } | SnapshotError::Unsupported { hint, .. } => {
                Some(std::borrow::Cow::Borrowed(hint))
            }
            SnapshotError::Archive { hint, .. } => Some(std::borrow::Cow::Borrowed(hint)),
        }
    }
}

impl SnapshotError {
    /// The process exit status: the session error's own, 1 for a refusal or an archive
    /// problem, 65 for what the engine cannot do.
    pub fn exit_code(&self) -> i32 {
        match self {
            SnapshotError::Session(error) => error.exit_code(),
            SnapshotError::Refused { .. } | SnapshotError::Archive { .. } => 1,
            SnapshotError::Unsupported { .. } => 65,
        }
    }

    pub(crate) fn refused(message: impl Into<String>, hint: impl Into<String>) -> SnapshotError {
        SnapshotError::Refused {
            message: message.into(),
            hint: hint.into(),
        }
    }

    pub(crate) fn archive(path: &Path, message: impl std::fmt::Display) -> SnapshotError {
        SnapshotError::Archive {
            path: path.display().to_string(),
            message: message.to_string(),
            hint: "check that the state directory (AGENTC_STATE_DIR) is writable and its \
                   snapshots directory intact",
        }
    }
}

/// What [`pause`] and [`resume`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freeze {
    /// The sandbox was frozen or thawed.
    Done,
    /// It was already in that state; nothing was done.
    Already,
}

/// The daemon's state of a container: `running`, `paused`, `exited`, ...
pub fn state_of(inspect: &bollard::models::ContainerInspectResponse) -> String {
    inspect
        .state
        .as_ref()
        .and_then(|state| state.status)
        .map(|status| status.to_string())
        .unwrap_or_default()
}

/// Freezes a running sandbox (a paused one is left alone); a stopped one is refused.
pub async fn pause<C: SandboxClient>(
    client: &C,
    sandbox: &Sandbox,
) -> Result<Freeze, SnapshotError> {
    match state_of(&client.inspect(sandbox).await?).as_str() {
        "paused" => Ok(Freeze::Already),
        "running" => {
            client.pause(sandbox).await?;
            Ok(Freeze::Done)
        }
        _ => Err(SessionError::NotRunning {
            name: sandbox.name.clone(),
        }
        .into()),
    }
}

/// Thaws a paused sandbox (a running one is left alone); a stopped one is refused.
pub async fn resume<C: SandboxClient>(
    client: &C,
    sandbox: &Sandbox,
) -> Result<Freeze, SnapshotError> {
    match state_of(&client.inspect(sandbox).await?).as_str() {
        "running" => Ok(Freeze::Already),
        "paused" => {
            client.unpause(sandbox).await?;
            Ok(Freeze::Done)
        }
        _ => Err(SessionError::NotRunning {
            name: sandbox.name.clone(),
        }
        .into()),
    }
}

/// Every snapshot, oldest first.
pub async fn list<C: SandboxClient>(client: &C) -> Result<Vec<SnapshotRecord>, SnapshotError> {
    let images = client.images(LABEL_SNAPSHOT).await?;
    Ok(images
        .iter()
        .filter_map(SnapshotRecord::from_image)
        .collect())
}

/// The snapshot named `name`: its name (`PROFILE:TAG`), its image's reference, a prefix of
/// its image's ID (at least 12 hex digits, with or without `sha256:`), or its tag alone when
/// only one snapshot has it ([`named`]); a name several answer lists them.
pub async fn find<C: SandboxClient>(
    client: &C,
    name: &str,
) -> Result<SnapshotRecord, SnapshotError> {
    let all = list(client).await?;
    let found = named(&all, name);
    match found.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(SnapshotError::refused(
            format!("no such snapshot {name}"),
            "`agentc snapshot ls` lists the snapshots by name (PROFILE:TAG; a tag alone names \
             the one snapshot that has it)",
        )),
        many => Err(SnapshotError::refused(
            format!(
                "{name} names {} snapshots: {}",
                many.len(),
                many.iter()
                    .map(|r| r.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "name one snapshot by its name (PROFILE:TAG)",
        )),
    }
}

/// The snapshots of `all` that `name` names ([`find`]): each whose name, reference or image ID
/// prefix it is; when none is, each whose tag it is (a `--tag` given alone, `before-scan`).
pub fn named<'a>(all: &'a [SnapshotRecord], name: &str) -> Vec<&'a SnapshotRecord> {
    let bare = name.trim_start_matches("sha256:");
    let exact: Vec<&SnapshotRecord> = all
        .iter()
        .filter(|record| {
            record.name == name
                || record.reference == name
                || (bare.len() >= 12
                    && bare.chars().all(|c| c.is_ascii_hexdigit())
                    && record
                        .image_id
                        .trim_start_matches("sha256:")
                        .starts_with(bare))
        })
        .collect();
    if !exact.is_empty() || name.contains(':') || check_tag(name).is_none() {
        return exact;
    }
    all.iter()
        .filter(|record| {
            record
                .name
                .rsplit_once(':')
                .is_some_and(|(_, tag)| tag == name)
        })
        .collect()
}

/// Removes a snapshot: its image, then its archives' directory `dir` (which the caller
/// owns). An image still used by a container is refused by the engine (exit 125), and the
/// archives are then kept.
pub async fn remove<C: SandboxClient>(
    client: &C,
    record: &SnapshotRecord,
    dir: &Path,
) -> Result<(), SnapshotError> {
    match client.remove_image(&record.image_id).await {
        Err(SessionError::Launch(crate::ExecError::Refused {
            refusal: Some(Refusal::InUse),
            ..
        })) => {
            return Err(SnapshotError::refused(
                format!("snapshot {}: another snapshot was taken of a sandbox restored from it", record.name),
                "remove the snapshots whose PARENT it is first (`agentc snapshot ls`), or name them together",
            ))
        }
        Err(SessionError::Launch(crate::ExecError::Refused {
            refusal: Some(Refusal::UsedByContainer),
            ..
        })) => {
            // The sandboxes created from it carry its name (an image's labels are its
            // containers' too).
            let users = client
                .list_labelled(&format!("{LABEL_SNAPSHOT}={}", record.name))
                .await
                .unwrap_or_default();
            let mut names: Vec<String> = users
                .iter()
                .map(|listed| format!("{} ({})", listed.sandbox.name, listed.state))
                .collect();
            if names.is_empty() {
                names.push("a container agentc did not make".to_string());
            }
            let first = users
                .first()
                .map_or("NAME".to_string(), |listed| listed.sandbox.name.clone());
            return Err(SnapshotError::refused(
                format!(
                    "snapshot {} is the image of {}: the engine keeps an image its containers \
                     run from",
                    record.name,
                    names.join(", ")
                ),
                format!(
                    "`agentc rm {first}` removes the sandbox (its snapshot stays until then); \
                     then `agentc snapshot rm {}`",
                    record.name
                ),
            ));
        }
        other => other?,
    }
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(SnapshotError::archive(dir, error)),
    }
}

/// `records` in an order the engine can remove them in: a snapshot after every snapshot of
/// the list whose parent it is (a child's image is built on its parent's).
pub fn children_first(mut records: Vec<SnapshotRecord>) -> Vec<SnapshotRecord> {
    let mut ordered = Vec::with_capacity(records.len());
    while !records.is_empty() {
        let leaf = records
            .iter()
            .position(|record| {
                !records
                    .iter()
                    .any(|other| other.parent.as_deref() == Some(record.name.as_str()))
            })
            .unwrap_or(0);
        ordered.push(records.remove(leaf));
    }
    ordered
}

/// A tag of a snapshot image: 1 to 128 of `[A-Za-z0-9_.-]`, not starting with `.` or `-`
/// (docker's rule); `None` when `tag` is not one.
pub fn check_tag(tag: &str) -> Option<&str> {
    let valid = !tag.is_empty()
        && tag.len() <= 128
        && !tag.starts_with(['.', '-'])
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    valid.then_some(tag)
}

/// The image repository of a profile's snapshots: `agentc-snapshot/NAME`, the profile's name in
/// lower case with anything docker refuses in a repository made `-`.
pub fn repository(profile: &str) -> String {
    let name: String = profile
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    format!(
        "{REPOSITORY}/{}",
        if name.is_empty() { "profile" } else { name }
    )
}

/// The time now, as RFC 3339 in UTC to the second, and as a default tag
/// (`YYYYMMDD-HHMMSS-NNN`, milliseconds last).
pub fn now() -> (String, String) {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = since.as_secs();
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (y, m, d) = civil(i64::try_from(days).unwrap_or_default());
    let (hh, mm, ss) = (rest / 3600, rest % 3600 / 60, rest % 60);
    (
        format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z"),
        format!(
            "{y:04}{m:02}{d:02}-{hh:02}{mm:02}{ss:02}-{:03}",
            since.subsec_millis()
        ),
    )
}

/// The civil date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// A label holding JSON: Docker reads [`quoted`]'s escapes in a commit's `LABEL` change,
/// Podman 4.3 keeps them (`{\"file\":...}`), so a value that does not parse is read again
/// with them undone.
fn json_label<T: serde::de::DeserializeOwned>(text: &str) -> Option<T> {
    serde_json::from_str(text).ok().or_else(|| {
        let mut plain = String::with_capacity(text.len());
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            match (c, chars.clone().next()) {
                ('\\', Some(next @ ('\\' | '"' | '$'))) => {
                    plain.push(next);
                    chars.next();
                }
                _ => plain.push(c),
            }
        }
        serde_json::from_str(&plain).ok()
    })
}

/// A label's value as a Dockerfile instruction takes it: in double quotes, `\`, `"` and `$`
/// escaped, a line break as `\n` is not possible, so labels hold none.
pub(crate) fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if matches!(c, '\\' | '"' | '$') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The labels of a record as `LABEL` instructions.
pub(crate) fn label_changes(labels: &BTreeMap<String, String>) -> Vec<String> {
    labels
        .iter()
        .map(|(key, value)| format!("LABEL {key}={}", quoted(value)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archives_are_written_0600_in_directories_made_0700() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let root = std::env::temp_dir().join(format!("agentc-private-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = root.join("snapshots").join("box").join("t1");
        private_dirs(&dir, false).unwrap();
        for made in [
            root.join("snapshots"),
            root.join("snapshots/box"),
            dir.clone(),
        ] {
            assert_eq!(mode(&made), 0o700, "{}", made.display());
        }
        assert_eq!(
            mode(&root),
            0o755,
            "a directory that existed keeps its mode"
        );
        assert!(
            private_dirs(&dir, false).is_err(),
            "a snapshot's directory is new"
        );
        private_dirs(&dir, true).unwrap();
        let file = dir.join("0.tar");
        std::io::Write::write_all(&mut private_file(&file).unwrap(), b"tar").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert!(
            private_file(&file).is_err(),
            "an archive is never written over"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn tags_repositories_and_times_are_docker_s() {
        assert_eq!(
            check_tag("before-refactor_1.2"),
            Some("before-refactor_1.2")
        );
        for bad in ["", "-x", ".x", "a/b", "a:b", &"x".repeat(129)] {
            assert_eq!(check_tag(bad), None, "{bad}");
        }
        assert_eq!(repository("Pen Test"), "agentc-snapshot/pen-test");
        assert_eq!(repository("--"), "agentc-snapshot/profile");
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(20_423), (2025, 12, 1));
        let (time, tag) = now();
        assert!(time.ends_with('Z') && time.len() == 20, "{time}");
        assert!(check_tag(&tag).is_some(), "{tag}");
    }

    #[test]
    fn a_record_is_read_from_its_labels_and_quoting_escapes() {
        let archives = vec![Archive {
            kind: ArchiveKind::Tmpfs,
            target: "/tmp".into(),
            volume: None,
            file: "0.tar".into(),
            bytes: 10,
            sha256: "ab".into(),
        }];
        let mut labels = BTreeMap::from([
            (LABEL_SNAPSHOT.to_string(), "box:t1".to_string()),
            (agentc_policy::LABEL_PROFILE.to_string(), "box".to_string()),
            (LABEL_PARENT.to_string(), String::new()),
        ]);
        labels.insert(
            LABEL_ARCHIVES.into(),
            serde_json::to_string(&archives).unwrap(),
        );
        let image = ImageRecord {
            id: "sha256:0123456789abcdef".into(),
            tags: vec!["localhost/agentc-snapshot/box:t1".into()],
            labels,
            ..ImageRecord::default()
        };
        let record = SnapshotRecord::from_image(&image).unwrap();
        assert_eq!(record.name, "box:t1");
        assert_eq!(record.reference, "agentc-snapshot/box:t1");
        assert_eq!(record.parent, None);
        assert_eq!(record.archives, archives);
        assert_eq!(record.archive_bytes(), 10);
        assert_eq!(quoted(r#"a"b\c$d"#), r#""a\"b\\c\$d""#);
        let kept: Option<Vec<String>> = json_label(r#"[\"a\\\"b\"]"#);
        assert_eq!(kept, Some(vec!["a\"b".to_string()]));
        assert!(SnapshotRecord::from_image(&ImageRecord::default()).is_none());
        let child = SnapshotRecord {
            name: "box:child".into(),
            parent: Some("box:t1".into()),
            ..record.clone()
        };
        let ordered = children_first(vec![record.clone(), child.clone()]);
        assert_eq!(ordered[0].name, "box:child");

        // Named by name, reference, ID prefix, or a tag alone when one snapshot has it.
        let other = SnapshotRecord {
            name: "web:child".into(),
            reference: "agentc-snapshot/web:child".into(),
            image_id: "sha256:feedfacefeedfacefeed".into(),
            ..record.clone()
        };
        let record = SnapshotRecord {
            image_id: "sha256:0123456789abcdef0123".into(),
            ..record
        };
        let child = SnapshotRecord {
            image_id: "sha256:abcdefabcdefabcdef".into(),
            ..child
        };
        let all = [record, child, other];
        let names = |name: &str| -> Vec<String> {
            named(&all, name).iter().map(|r| r.name.clone()).collect()
        };
        assert_eq!(names("box:t1"), ["box:t1"]);
        assert_eq!(names("agentc-snapshot/web:child"), ["web:child"]);
        assert_eq!(names("sha256:0123456789ab"), ["box:t1"]);
        assert_eq!(names("t1"), ["box:t1"]);
        assert_eq!(names("child"), ["box:child", "web:child"]);
        assert!(names("nope").is_empty());
        assert!(names("box:nope").is_empty());
        assert!(names("-bad").is_empty());
    }
}
