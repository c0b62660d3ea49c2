//! Memory snapshots (`--memory`): a sandbox's processes and memory checkpointed by CRIU
//! through the engine ([`SandboxClient::checkpoint`]) beside the files snapshot
//! ([`super::snapshot`]), and restored into new sandboxes
//! ([`SandboxClient::restore_checkpoint`]). Only where [`SandboxClient::memory_support`]'s
//! probe passes (rootful Podman, runc, CRIU >= 4.1); refused by name (exit 65) elsewhere.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::capture::refuse_secrets;
use super::{snapshot, SnapshotError, SnapshotRecord, SnapshotReport, SnapshotRequest};
use crate::session::{Sandbox, SandboxClient};

/// Label holding a memory snapshot's checkpoint archive ([`MemoryArchive`], as JSON).
pub const LABEL_MEMORY: &str = "io.agentc.snapshot-memory";
/// The checkpoint archive's file in the snapshot's directory.
pub const MEMORY_FILE: &str = "memory.tar.gz";
/// The oldest CRIU (major, minor) that checkpoints on current kernels: 3.17 fails on the
/// `[vvar_vclock]` mapping of kernels since 6.x ("Unexpected rt vDSO area bounds").
pub const MIN_CRIU: (u32, u32) = (4, 1);

/// A memory snapshot's checkpoint archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryArchive {
    /// Its file in the snapshot's directory.
    pub file: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The sha256 (hex) of its bytes.
    pub sha256: String,
}

/// What a memory snapshot took.
#[derive(Debug, Clone)]
pub struct MemoryReport {
    /// The files snapshot taken with it.
    pub files: SnapshotReport,
    /// The checkpoint archive.
    pub memory: MemoryArchive,
    /// How long the checkpoint took.
    pub checkpoint: Duration,
}

/// CRIU's (major, minor) from `criu --version`'s output (`Version: 4.1.1`).
pub fn criu_version(text: &str) -> Option<(u32, u32)> {
    let version = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("Version:"))?;
    let mut parts = version.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().map_or(Some(0), |minor| minor.parse().ok())?;
    Some((major, minor))
}

/// Whether `client` can take and restore memory snapshots: the refusal otherwise (exit 65),
/// naming what it found and what would do it.
pub async fn support<C: SandboxClient>(client: &C) -> Result<(), SnapshotError> {
    client
        .memory_support()
        .await
        .map_err(|found| SnapshotError::Unsupported {
            message: format!(
                "--memory: processes' memory cannot be captured or restored through {found}"
            ),
            hint: "memory snapshots need Podman, rootful, with runc and CRIU >= 4.1 (`agentc \
                   --engine podman ... --backend cli`: `podman container checkpoint --export` / \
                   `podman container restore --import`; Debian 12's criu 3.17 fails on current \
                   kernels, scripts/setup-criu.sh builds 4.1.1); gVisor's own `runsc \
                   checkpoint` is not driven by agentc; without --memory the files are captured"
                .to_string(),
        })
}

/// The sha256 (hex) and size of a file.
fn digest(path: &Path) -> Result<(String, u64), SnapshotError> {
    let bytes = std::fs::read(path).map_err(|error| SnapshotError::archive(path, error))?;
    Ok((format!("{:x}", Sha256::digest(&bytes)), bytes.len() as u64))
}

/// Takes a memory snapshot: after the probe and the secrets rule, the sandbox's checkpoint
/// (it keeps running), then the files snapshot of [`super::snapshot`] labelled with the
/// checkpoint ([`LABEL_MEMORY`]), whose directory then holds [`MEMORY_FILE`]. A sandbox
/// behind agentc's egress proxy is refused (its restore would need the isolated network and
/// proxy of the sandbox it was taken of). On failure nothing of the snapshot is left.
pub async fn snapshot_memory<C: SandboxClient>(
    client: &C,
    sandbox: &Sandbox,
    request: &SnapshotRequest,
) -> Result<MemoryReport, SnapshotError> {
    support(client).await?;
    refuse_secrets(sandbox, request)?;
    if client.egress(sandbox).await?.is_some() {
        return Err(SnapshotError::Unsupported {
            message: format!(
                "--memory: {} is behind agentc's egress proxy, and a checkpoint restores into \
                 the networks it was taken on (its isolated network, which `agentc rm` removes)",
                sandbox.name
            ),
            hint: "snapshot it without --memory (files only), or take memory snapshots of \
                   sandboxes without [egress] (on a default or named network)"
                .into(),
        });
    }
    let parent = request.dir.parent().unwrap_or(Path::new("."));
    super::private_dirs(parent, true).map_err(|error| SnapshotError::archive(parent, error))?;
    let staged: PathBuf = parent.join(format!(".{}.{MEMORY_FILE}", request.tag));
    // The engine writes the checkpoint into a file made here `0600` (in a `0700` directory);
    // one that replaces the file instead is brought back to `0600` once it is in place.
    let _ = std::fs::remove_file(&staged);
    super::private_file(&staged).map_err(|error| SnapshotError::archive(&staged, error))?;
    let started = Instant::now();
    let taken = async {
        client.checkpoint(sandbox, &staged).await?;
        let checkpoint = started.elapsed();
        let (sha256, bytes) = digest(&staged)?;
        let memory = MemoryArchive {
            file: MEMORY_FILE.to_string(),
            bytes,
            sha256,
        };
        let mut labels = request.labels.clone();
        labels.insert(
            LABEL_MEMORY.to_string(),
            serde_json::to_string(&memory).unwrap_or_default(),
        );
        let files = snapshot(
            client,
            sandbox,
            &SnapshotRequest {
                labels,
                ..request.clone()
            },
        )
        .await?;
        let target = request.dir.join(MEMORY_FILE);
        let placed = std::fs::rename(&staged, &target).and_then(|()| {
            std::fs::set_permissions(
                &target,
                std::os::unix::fs::PermissionsExt::from_mode(super::PRIVATE_FILE_MODE),
            )
        });
        if let Err(error) = placed {
            let _ = client.remove_image(&files.image_id).await;
            let _ = std::fs::remove_dir_all(&request.dir);
            return Err(SnapshotError::archive(&target, error));
        }
        Ok(MemoryReport {
            files,
            memory,
            checkpoint,
        })
    }
    .await;
    let _ = std::fs::remove_file(&staged);
    taken
}

/// The checkpoint of a memory snapshot: refused when the snapshot holds none.
pub fn memory_of(record: &SnapshotRecord) -> Result<&MemoryArchive, SnapshotError> {
    record.memory.as_ref().ok_or_else(|| {
        SnapshotError::refused(
            format!(
                "snapshot {} holds no memory (it was taken without --memory)",
                record.name
            ),
            "restore it without --memory (its files), or take one with `agentc snapshot NAME \
             --memory`",
        )
    })
}

/// Restores a memory snapshot as the new sandbox `name`, its processes going on where they
/// were, confined as the checkpointed sandbox was: after the probe, the checkpoint's sha256 is
/// checked, then [`SandboxClient::restore_checkpoint`].
pub async fn restore_memory<C: SandboxClient>(
    client: &C,
    record: &SnapshotRecord,
    dir: &Path,
    name: &str,
) -> Result<Sandbox, SnapshotError> {
    support(client).await?;
    let memory = memory_of(record)?;
    let file = dir.join(&memory.file);
    let (sha256, _) = digest(&file)?;
    if sha256 != memory.sha256 {
        return Err(SnapshotError::archive(
            &file,
            format!(
                "its sha256 is {sha256}, not the {} the snapshot recorded",
                memory.sha256
            ),
        ));
    }
    Ok(client.restore_checkpoint(&file, name).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criu_versions_are_read_from_criu_version() {
        assert_eq!(criu_version("Version: 4.1.1\n"), Some((4, 1)));
        assert_eq!(
            criu_version("Version: 3.17.1\nGitID: v3.17\n"),
            Some((3, 17))
        );
        assert_eq!(criu_version("Version: 4\n"), Some((4, 0)));
        assert_eq!(criu_version("criu: not found"), None);
        assert!(criu_version("Version: 3.17.1").unwrap() < MIN_CRIU);
        assert!(criu_version("Version: 4.1.1").unwrap() >= MIN_CRIU);
    }
}
