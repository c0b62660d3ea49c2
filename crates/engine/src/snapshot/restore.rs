//! Restoring a snapshot: [`prepare`] before the caller launches the profile with the
//! snapshot's image (the archives checked, the volumes the launch will create noted), then
//! [`put_back`] once the sandbox runs (the archives extracted through exec).

use std::collections::BTreeSet;
use std::path::Path;

use agentc_policy::{ContainerSpec, MountSource};
use sha2::{Digest, Sha256};

use super::capture::hex;
use super::{ArchiveKind, SnapshotError, SnapshotRecord};
use crate::session::{ExecRequest, ExecStdin, Sandbox, SandboxClient, SessionError};

/// What [`prepare`] found before the launch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestorePlan {
    /// The volumes of the launch that do not exist yet: the launch creates them and they get
    /// the snapshot's contents. A volume that exists is the profile's, shared with its other
    /// sandboxes, and is kept as it is.
    pub fresh_volumes: BTreeSet<String>,
}

/// What [`put_back`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoreReport {
    /// The mount paths whose contents were put back.
    pub restored: Vec<String>,
    /// What was left as it was, and why (one line each).
    pub kept: Vec<String>,
    /// Bytes of archives extracted.
    pub bytes: u64,
}

/// The volume `spec` mounts at `target`, if it mounts one there.
fn volume_at<'a>(spec: &'a ContainerSpec, target: &str) -> Option<&'a str> {
    spec.mounts.iter().find_map(|mount| match &mount.source {
        MountSource::Volume { name, .. } if mount.target == target && !mount.read_only => {
            Some(name.as_str())
        }
        _ => None,
    })
}

/// Checks every archive of `record` in `dir` (present, its sha256 the recorded one) and
/// notes which volumes of `spec` (the launch about to be made) do not exist yet.
pub async fn prepare<C: SandboxClient>(
    client: &C,
    record: &SnapshotRecord,
    dir: &Path,
    spec: &ContainerSpec,
) -> Result<RestorePlan, SnapshotError> {
    let mut plan = RestorePlan::default();
    for archive in &record.archives {
        let path = dir.join(&archive.file);
        let bytes = std::fs::read(&path).map_err(|error| SnapshotError::archive(&path, error))?;
        let sha256 = hex(&Sha256::digest(&bytes));
        if sha256 != archive.sha256 {
            return Err(SnapshotError::archive(
                &path,
                format!(
                    "its sha256 is {sha256}, the snapshot recorded {}: it was changed",
                    archive.sha256
                ),
            ));
        }
        if archive.kind == ArchiveKind::Volume {
            if let Some(volume) = volume_at(spec, &archive.target) {
                if !client.volume_exists(volume).await? {
                    plan.fresh_volumes.insert(volume.to_string());
                }
            }
        }
    }
    Ok(plan)
}

/// Puts the contents of a tmpfs (`$2` = keep) or a new volume (`$2` = clear: what the image
/// copied into it is removed first) back from the tar on stdin (none when `$3` is 0).
const PUT_BACK_SCRIPT: &str = "cd \"$1\" || exit 3; if [ \"$2\" = clear ]; then rm -rf -- * .[!.]* ..?*; fi; [ \"$3\" = 0 ] && exit 0; command -v tar >/dev/null 2>&1 || exit 127; exec tar -x -o -f -";

/// Puts the snapshot's archives back into the running sandbox that was launched from it,
/// through exec: each tmpfs the launch mounts, and each volume the launch created
/// ([`RestorePlan::fresh_volumes`]); any other is left as it is and said in the report.
pub async fn put_back<C: SandboxClient>(
    client: &C,
    sandbox: &Sandbox,
    record: &SnapshotRecord,
    dir: &Path,
    spec: &ContainerSpec,
    plan: &RestorePlan,
) -> Result<RestoreReport, SnapshotError> {
    let mut report = RestoreReport::default();
    for archive in &record.archives {
        let mode = match archive.kind {
            ArchiveKind::Tmpfs if spec.tmpfs.iter().any(|t| t.target == archive.target) => "keep",
            ArchiveKind::Tmpfs => {
                report.kept.push(format!(
                    "{}: the profile no longer mounts a tmpfs there; not restored",
                    archive.target
                ));
                continue;
            }
            ArchiveKind::Volume => match volume_at(spec, &archive.target) {
                Some(volume) if plan.fresh_volumes.contains(volume) => "clear",
                Some(volume) => {
                    report.kept.push(format!(
                        "{}: volume {volume} existed already (the profile's sandboxes share it); \
                         kept as it is",
                        archive.target
                    ));
                    continue;
                }
                None => {
                    report.kept.push(format!(
                        "{}: the profile no longer mounts a writable volume there; not restored",
                        archive.target
                    ));
                    continue;
                }
            },
        };
        let path = dir.join(&archive.file);
        let bytes = std::fs::read(&path).map_err(|error| SnapshotError::archive(&path, error))?;
        let size = bytes.len().to_string();
        let mut request = ExecRequest::new([
            "sh",
            "-c",
            PUT_BACK_SCRIPT,
            "sh",
            &archive.target,
            mode,
            &size,
        ]);
        request.stdin = ExecStdin::Bytes(bytes);
        let output = client.exec_output(sandbox, &request).await?;
        match output.exit_code {
            0 => {
                report.restored.push(archive.target.clone());
                report.bytes += archive.bytes;
            }
            126 | 127 => {
                return Err(SessionError::TarMissing {
                    name: sandbox.name.clone(),
                    path: archive.target.clone(),
                }
                .into())
            }
            code => {
                return Err(SessionError::CopyFailed {
                    name: sandbox.name.clone(),
                    path: archive.target.clone(),
                    message: format!(
                        "putting the snapshot's contents back exited {code}: {}",
                        String::from_utf8_lossy(&output.stderr).trim()
                    ),
                }
                .into())
            }
        }
    }
    Ok(report)
}
