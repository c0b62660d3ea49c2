//! Taking a snapshot ([`snapshot`]): the tmpfs mounts and writable volumes archived through
//! exec, then the sandbox frozen only for the commit of its writable layer.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bollard::models::ContainerInspectResponse;
use sha2::{Digest, Sha256};

use super::{
    label_changes, quoted, repository, state_of, Archive, ArchiveKind, SnapshotError,
    LABEL_ARCHIVES, LABEL_DIGEST, LABEL_PARENT, LABEL_SECRETS, LABEL_SNAPSHOT, LABEL_SOURCE,
    LABEL_TIME,
};
use crate::session::{
    CommitRequest, ExecRequest, OutputSink, Sandbox, SandboxClient, SessionError, Stream,
};

/// What to snapshot, and where its archives go.
#[derive(Debug, Clone)]
pub struct SnapshotRequest {
    /// The image tag ([`super::check_tag`]); the snapshot is named `PROFILE:TAG`.
    pub tag: String,
    /// The directory its archives are written to: it must not exist yet (its parent is
    /// created); on failure it is removed.
    pub dir: PathBuf,
    /// The variables the sandbox's launch passed as secret values (its profile's
    /// [`agentc_policy::EnvValue::Secret`] entries): a snapshot of such a sandbox is refused
    /// unless `allow_secrets`.
    pub secrets: Vec<String>,
    /// Take it even though the sandbox has secrets as environment values (recorded in
    /// [`LABEL_SECRETS`]).
    pub allow_secrets: bool,
    /// The time ([`super::now`]).
    pub time: String,
    /// More labels for the snapshot's image (a memory snapshot's [`super::LABEL_MEMORY`]).
    pub labels: BTreeMap<String, String>,
}

/// What a snapshot took.
#[derive(Debug, Clone)]
pub struct SnapshotReport {
    /// Its name, `PROFILE:TAG`.
    pub name: String,
    /// Its image's reference.
    pub reference: String,
    /// Its image's ID.
    pub image_id: String,
    /// Its archives.
    pub archives: Vec<Archive>,
    /// How long the sandbox was frozen.
    pub paused_for: Duration,
    /// How long the whole snapshot took.
    pub elapsed: Duration,
}

/// Archives the contents of the directory `$1`, its entries at the top (not `.`, whose owner
/// and times a restore could not set on a mount point); nothing at all for an empty one.
const ARCHIVE_SCRIPT: &str = "command -v tar >/dev/null 2>&1 || exit 127; cd \"$1\" || exit 3; set --; for f in * .[!.]* ..?*; do if [ -e \"$f\" ] || [ -L \"$f\" ]; then set -- \"$@\" \"$f\"; fi; done; [ $# -eq 0 ] && exit 0; exec tar -c -f - -- \"$@\"";

/// Refuses a snapshot of a sandbox whose launch passes secrets as environment values, unless
/// they are allowed.
pub(crate) fn refuse_secrets(
    sandbox: &Sandbox,
    request: &SnapshotRequest,
) -> Result<(), SnapshotError> {
    if !request.secrets.is_empty() && !request.allow_secrets {
        return Err(SnapshotError::refused(
            format!(
                "refusing to snapshot {}: its launch passes secrets as environment values ({}), \
                 which its files may hold",
                sandbox.name,
                request.secrets.join(", ")
            ),
            "give the keys through the egress proxy (an egress allowlist: only placeholders \
             inside), or pass --allow-secrets to take it anyway (recorded in the snapshot; \
             its files may hold the value, and so may the image where the engine records the \
             container's configuration in it, as Docker 20.10's container_config does)",
        ));
    }
    Ok(())
}

/// Takes a snapshot of a running (or paused) sandbox: refuses one with secrets as
/// environment values unless allowed; archives its tmpfs mounts and writable named volumes
/// into `request.dir`; freezes it, commits its writable layer as `agentc-snapshot/PROFILE:TAG`
/// with the launch's environment values blanked and the snapshot's labels, and thaws it (a
/// sandbox paused before stays paused). On failure nothing of the snapshot is left.
pub async fn snapshot<C: SandboxClient>(
    client: &C,
    sandbox: &Sandbox,
    request: &SnapshotRequest,
) -> Result<SnapshotReport, SnapshotError> {
    let started = Instant::now();
    refuse_secrets(sandbox, request)?;
    let inspect = client.inspect(sandbox).await?;
    let was_paused = match state_of(&inspect).as_str() {
        "running" => false,
        "paused" => true,
        _ => {
            return Err(SessionError::NotRunning {
                name: sandbox.name.clone(),
            }
            .into())
        }
    };
    let name = format!("{}:{}", sandbox.profile, request.tag);
    let reference = format!("{}:{}", repository(&sandbox.profile), request.tag);
    if client.image(&reference).await?.is_some() {
        return Err(SnapshotError::refused(
            format!("snapshot {name} exists already ({reference})"),
            "pick another --tag, or remove it first with `agentc snapshot rm`",
        ));
    }
    make_dir(&request.dir)?;
    if was_paused {
        // Exec needs it running: thawed for the archives, frozen again for the commit.
        if let Err(error) = client.unpause(sandbox).await {
            let _ = std::fs::remove_dir_all(&request.dir);
            return Err(error.into());
        }
    }
    let result = take(client, sandbox, &inspect, request, &name, &reference).await;
    if was_paused {
        let _ = client.pause(sandbox).await;
    }
    match result {
        Ok((image_id, archives, paused_for)) => Ok(SnapshotReport {
            name,
            reference,
            image_id,
            archives,
            paused_for,
            elapsed: started.elapsed(),
        }),
        Err(error) => {
            let _ = std::fs::remove_dir_all(&request.dir);
            Err(error)
        }
    }
}

/// The archives, then the frozen commit.
async fn take<C: SandboxClient>(
    client: &C,
    sandbox: &Sandbox,
    inspect: &ContainerInspectResponse,
    request: &SnapshotRequest,
    name: &str,
    reference: &str,
) -> Result<(String, Vec<Archive>, Duration), SnapshotError> {
    let mut archives = Vec::new();
    for (index, (kind, target, volume)) in writable_mounts(inspect).into_iter().enumerate() {
        let file = format!("{index}.tar");
        let path = request.dir.join(&file);
        let (bytes, sha256) = archive(client, sandbox, &target, &path).await?;
        archives.push(Archive {
            kind,
            target,
            volume,
            file,
            bytes,
            sha256,
        });
    }
    let image_env = match inspect.image.as_deref() {
        Some(image) => client
            .image(image)
            .await?
            .map(|i| i.env)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let container_env = inspect
        .config
        .as_ref()
        .and_then(|config| config.env.clone())
        .unwrap_or_default();
    let mut changes = blanked_env(&container_env, &image_env);
    let labels = |key: &str| {
        inspect
            .config
            .as_ref()
            .and_then(|config| config.labels.as_ref())
            .and_then(|labels| labels.get(key))
            .cloned()
            .unwrap_or_default()
    };
    let secrets = if request.secrets.is_empty() {
        "none".to_string()
    } else {
        format!("allowed:{}", request.secrets.join(","))
    };
    let manifest = serde_json::to_string(&archives).unwrap_or_default();
    changes.extend(label_changes(&BTreeMap::from([
        (LABEL_SNAPSHOT.to_string(), name.to_string()),
        (LABEL_PARENT.to_string(), labels(LABEL_SNAPSHOT)),
        (LABEL_TIME.to_string(), request.time.clone()),
        (LABEL_SOURCE.to_string(), sandbox.name.clone()),
        (
            LABEL_DIGEST.to_string(),
            labels(agentc_policy::LABEL_SPEC_DIGEST),
        ),
        (LABEL_SECRETS.to_string(), secrets),
        (LABEL_ARCHIVES.to_string(), manifest),
    ])));
    changes.extend(label_changes(&request.labels));
    let commit = CommitRequest {
        reference: reference.to_string(),
        changes,
        pause: false,
    };
    let frozen = Instant::now();
    client.pause(sandbox).await?;
    let committed = client.commit(sandbox, &commit).await;
    let thawed = client.unpause(sandbox).await;
    let paused_for = frozen.elapsed();
    let image_id = match (committed, thawed) {
        (Ok(id), Ok(())) => id,
        (Ok(_), Err(error)) => {
            let _ = client.remove_image(reference).await;
            return Err(error.into());
        }
        (Err(error), _) => return Err(error.into()),
    };
    Ok((image_id, archives, paused_for))
}

/// The mounts a snapshot archives, in mount order: every tmpfs, and every writable named
/// volume but the egress CA's (a restore gets a fresh one). Host binds are the host's.
pub fn writable_mounts(
    inspect: &ContainerInspectResponse,
) -> Vec<(ArchiveKind, String, Option<String>)> {
    let mut mounts = Vec::new();
    if let Some(tmpfs) = inspect
        .host_config
        .as_ref()
        .and_then(|host| host.tmpfs.as_ref())
    {
        let mut targets: Vec<&String> = tmpfs.keys().collect();
        targets.sort();
        for target in targets {
            mounts.push((ArchiveKind::Tmpfs, target.clone(), None));
        }
    }
    for mount in inspect.mounts.iter().flatten() {
        let (Some(target), Some(name)) = (&mount.destination, &mount.name) else {
            continue;
        };
        let writable = mount.rw.unwrap_or(true);
        if mount.typ.as_deref() == Some("volume")
            && writable
            && target != agentc_policy::CA_DIR_TARGET
        {
            mounts.push((ArchiveKind::Volume, target.clone(), Some(name.clone())));
        }
    }
    mounts
}

/// The `ENV` instructions that put back the image's own value (or an empty one) of every
/// variable the launch set: no value the launch passed stays in the snapshot's image.
pub fn blanked_env(container_env: &[String], image_env: &[String]) -> Vec<String> {
    let image: BTreeMap<&str, &str> = image_env
        .iter()
        .filter_map(|entry| entry.split_once('='))
        .collect();
    container_env
        .iter()
        .filter(|entry| !image_env.contains(entry))
        .filter_map(|entry| entry.split_once('=').map(|(name, _)| name))
        .map(|name| {
            format!(
                "ENV {name}={}",
                quoted(image.get(name).copied().unwrap_or_default())
            )
        })
        .collect()
}

/// Creates the snapshot's directory, which must be new, `0700` (and the directories above it
/// that are missing).
fn make_dir(dir: &Path) -> Result<(), SnapshotError> {
    super::private_dirs(dir, false).map_err(|error| SnapshotError::archive(dir, error))
}

/// An exec's stdout into a file, hashed and counted; its stderr kept.
struct FileSink {
    file: std::io::BufWriter<std::fs::File>,
    hasher: Sha256,
    bytes: u64,
    stderr: Vec<u8>,
}

impl OutputSink for FileSink {
    fn write(&mut self, stream: Stream, bytes: &[u8]) -> std::io::Result<()> {
        match stream {
            Stream::Stdout => {
                self.file.write_all(bytes)?;
                self.hasher.update(bytes);
                self.bytes += bytes.len() as u64;
            }
            Stream::Stderr => self.stderr.extend_from_slice(bytes),
        }
        Ok(())
    }
}

/// Archives the directory `target` of the sandbox into the file `path`: its size and sha256.
async fn archive<C: SandboxClient>(
    client: &C,
    sandbox: &Sandbox,
    target: &str,
    path: &Path,
) -> Result<(u64, String), SnapshotError> {
    let file = super::private_file(path).map_err(|error| SnapshotError::archive(path, error))?;
    let mut sink = FileSink {
        file: std::io::BufWriter::new(file),
        hasher: Sha256::new(),
        bytes: 0,
        stderr: Vec::new(),
    };
    let request = ExecRequest::new(["sh", "-c", ARCHIVE_SCRIPT, "sh", target]);
    let code = client.exec(sandbox, &request, &mut sink).await?;
    sink.file
        .flush()
        .map_err(|error| SnapshotError::archive(path, error))?;
    match code {
        0 => Ok((sink.bytes, hex(&sink.hasher.finalize()))),
        126 | 127 => Err(SessionError::TarMissing {
            name: sandbox.name.clone(),
            path: target.to_string(),
        }
        .into()),
        _ => Err(SessionError::CopyFailed {
            name: sandbox.name.clone(),
            path: target.to_string(),
            message: format!(
                "archiving it for the snapshot exited {code}: {}",
                String::from_utf8_lossy(&sink.stderr).trim()
            ),
        }
        .into()),
    }
}

/// Lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tmpfs_mounts_and_writable_volumes_are_archived_not_binds_nor_the_ca() {
        use bollard::models::{HostConfig, MountPoint};
        let mount = |typ: &str, name: Option<&str>, target: &str, rw: bool| MountPoint {
            typ: Some(typ.into()),
            name: name.map(str::to_string),
            destination: Some(target.into()),
            rw: Some(rw),
            ..MountPoint::default()
        };
        let inspect = ContainerInspectResponse {
            host_config: Some(HostConfig {
                tmpfs: Some(
                    [
                        ("/tmp".to_string(), String::new()),
                        ("/run".to_string(), String::new()),
                    ]
                    .into(),
                ),
                ..HostConfig::default()
            }),
            mounts: Some(vec![
                mount("bind", None, "/workspace", true),
                mount("volume", Some("box-home"), "/home/claude", true),
                mount("volume", Some("box-ro"), "/opt/ro", false),
                mount(
                    "volume",
                    Some("box-egress-ca"),
                    agentc_policy::CA_DIR_TARGET,
                    true,
                ),
            ]),
            ..ContainerInspectResponse::default()
        };
        let found: Vec<String> = writable_mounts(&inspect)
            .into_iter()
            .map(|(kind, target, volume)| format!("{kind:?} {target} {volume:?}"))
            .collect();
        assert_eq!(
            found,
            [
                "Tmpfs /run None",
                "Tmpfs /tmp None",
                "Volume /home/claude Some(\"box-home\")"
            ]
        );
    }

    /// Regression guard: a value the launch set (a secret's, a placeholder's) must not stay
    /// in the image's configuration; the image's own values come back as they were.
    #[test]
    fn every_launched_value_is_blanked_and_the_image_s_own_kept() {
        let image = ["PATH=/usr/bin:/bin".to_string(), "LANG=C".to_string()];
        let container = [
            "PATH=/usr/bin:/bin".to_string(),
            "LANG=C.UTF-8".to_string(),
            "API_KEY=sk-real-value".to_string(),
            "QUOTE=a\"$b".to_string(),
        ];
        let changes = blanked_env(&container, &image);
        assert_eq!(
            changes,
            ["ENV LANG=\"C\"", "ENV API_KEY=\"\"", "ENV QUOTE=\"\""]
        );
        assert!(!changes.join(" ").contains("sk-real-value"));
    }
}
