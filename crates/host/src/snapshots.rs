//! Snapshots of sandboxes launched from profile files on this machine, for the command line
//! and `agentc serve` alike: where a snapshot's archives are kept ([`archive_dir`], under
//! agentc's state directory, [`state_dir`]), a snapshot taken with the launch's secrets as its
//! profile file resolves them now ([`take`]), and the profile a snapshot records, read again
//! for a restore ([`snapshot_profile`]). The snapshot itself is the engine crate's
//! ([`agentc_engine::snapshot`]), written once over the engine port.

use std::path::{Path, PathBuf};

use agentc_engine::session::{Sandbox, SandboxClient, Sandboxes, SessionPort};
use agentc_engine::snapshot::{self, SnapshotError, SnapshotRecord};
use agentc_policy::{EnvValue, Instance, LoadedProfile, Start};

use crate::backend::session_failure;
use crate::failure::{Failure, EXIT_DOCKER, EXIT_FAILED};
use crate::request::{load_profile, LaunchRequest};
use crate::resolve::{container_of, resolve_instance};

/// Where agentc keeps its state (deployments, pools' keys, snapshots' archives):
/// `$AGENTC_STATE_DIR`, else `$XDG_STATE_HOME/agentc`, else `~/.local/state/agentc`.
pub fn state_dir() -> Result<PathBuf, Failure> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(dir) = non_empty("AGENTC_STATE_DIR") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = non_empty("XDG_STATE_HOME") {
        return Ok(PathBuf::from(dir).join("agentc"));
    }
    match non_empty("HOME") {
        Some(home) => Ok(PathBuf::from(home).join(".local/state/agentc")),
        None => Err(Failure::usage(
            "no state directory: HOME, XDG_STATE_HOME and AGENTC_STATE_DIR are unset",
        )
        .hinted("set AGENTC_STATE_DIR to a directory agentc may write")),
    }
}

/// A snapshot error, with its exit status ([`SnapshotError::exit_code`]).
pub fn snapshot_failure(error: impl Into<SnapshotError>) -> Failure {
    let error = error.into();
    Failure::from_hinted(
        u8::try_from(error.exit_code()).unwrap_or(EXIT_DOCKER),
        &error,
    )
}

/// Where a snapshot's archives are kept: `STATE/snapshots/NAME/TAG`, for the image reference
/// `agentc-snapshot/NAME:TAG`.
pub fn archive_dir(reference: &str) -> Result<PathBuf, Failure> {
    let rest = reference
        .strip_prefix(&format!("{}/", snapshot::REPOSITORY))
        .unwrap_or(reference);
    let (name, tag) = rest.rsplit_once(':').unwrap_or((rest, "latest"));
    Ok(state_dir()?.join("snapshots").join(name).join(tag))
}

/// What [`take`] made: the snapshot, and with a memory checkpoint, a phrase saying so.
#[derive(Debug)]
pub struct Taken {
    /// The snapshot of the files.
    pub report: snapshot::SnapshotReport,
    /// ` and a memory checkpoint of N bytes (M ms)`, or empty.
    pub memory: String,
}

/// Snapshots `sandbox` (`agentc snapshot`, `agentc serve`'s `snapshot`): refused for a sandbox
/// that records no profile file; the launch's secrets as its profile resolves them now (by
/// name); the tag given or the time; with `memory`, a checkpoint too.
pub async fn take<P: SessionPort>(
    client: &Sandboxes<P>,
    sandbox: &Sandbox,
    tag: Option<String>,
    allow_secrets: bool,
    memory: bool,
) -> Result<Taken, Failure> {
    let secrets = launch_secrets(client, sandbox).await?;
    let (time, default_tag) = snapshot::now();
    let tag = tag.unwrap_or(default_tag);
    if snapshot::check_tag(&tag).is_none() {
        return Err(Failure::usage(format!("--tag {tag:?} is not an image tag"))
            .hinted("1 to 128 letters, digits, `_`, `.` and `-`, not starting with `.` or `-`"));
    }
    let reference = format!("{}:{tag}", snapshot::repository(&sandbox.profile));
    let request = snapshot::SnapshotRequest {
        tag,
        dir: archive_dir(&reference)?,
        secrets,
        allow_secrets,
        time,
        labels: Default::default(),
    };
    if memory {
        let taken = snapshot::snapshot_memory(client, sandbox, &request)
            .await
            .map_err(snapshot_failure)?;
        let memory = format!(
            " and a memory checkpoint of {} bytes ({} ms)",
            taken.memory.bytes,
            taken.checkpoint.as_millis()
        );
        return Ok(Taken {
            report: taken.files,
            memory,
        });
    }
    let report = snapshot::snapshot(client, sandbox, &request)
        .await
        .map_err(snapshot_failure)?;
    Ok(Taken {
        report,
        memory: String::new(),
    })
}

/// The names of the secrets of `sandbox`'s launch, as the profile file it records resolves
/// them now (names only); refused for a sandbox that records no profile file.
async fn launch_secrets<P: SessionPort>(
    client: &Sandboxes<P>,
    sandbox: &Sandbox,
) -> Result<Vec<String>, Failure> {
    let inspect = client.inspect(sandbox).await.map_err(session_failure)?;
    let labels = inspect
        .config
        .as_ref()
        .and_then(|config| config.labels.clone())
        .unwrap_or_default();
    let Some(profile_file) = labels.get(agentc_policy::LABEL_PROFILE_FILE) else {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "refusing to snapshot {}: it records no profile file, which a restore \
                 launches from",
                sandbox.name
            ),
        )
        .hinted("snapshot a sandbox started by `agentc run` (or created from a profile file)"));
    };
    // The launch's secrets, as its profile resolves them now (by name only).
    let loaded = load_profile(Path::new(profile_file))?;
    let spec = resolve_instance(
        &loaded,
        &LaunchRequest::new(profile_file),
        Instance {
            start: Start::Detached,
            default_name: Some(sandbox.name.clone()),
            ..Instance::default()
        },
    )?;
    Ok(container_of(&spec)?
        .env
        .iter()
        .filter(|var| matches!(var.value, EnvValue::Secret { .. }))
        .map(|var| var.name.clone())
        .collect())
}

/// The profile file a snapshot records and the profile it holds now: refused when it records
/// none, or when the file now names another profile.
pub fn snapshot_profile(record: &SnapshotRecord) -> Result<(PathBuf, LoadedProfile), Failure> {
    let Some(file) = record.profile_file.clone() else {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "snapshot {} records no profile file to launch from",
                record.name
            ),
        )
        .hinted(
            "snapshots of sandboxes launched from a profile file (`agentc run`, `agentc \
             serve`'s create with a profile path) record theirs",
        ));
    };
    let file = PathBuf::from(file);
    let loaded = load_profile(&file)?;
    if loaded.profile.name != record.profile {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "snapshot {} is of profile {}, but {} now names profile {}",
                record.name,
                record.profile,
                file.display(),
                loaded.profile.name,
            ),
        )
        .hinted(format!(
            "restore it from a profile file named {}",
            record.profile
        )));
    }
    Ok((file, loaded))
}
