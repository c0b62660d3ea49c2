//! Volumes: named volumes as PersistentVolumeClaims (and the claim objects), the workspace as
//! `--workspace-claim`, tmpfs as memory `emptyDir`s; host binds are refused.

use std::collections::BTreeMap;

use agentc_policy::{Mount, MountSource, Origin, Tmpfs};
use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource, PodSpec, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::context::Renderer;
use crate::error::RenderError;
use crate::names::{self, bytes_quantity};

/// The storage each named volume's claim requests (Docker volumes have no size).
pub const VOLUME_SIZE: &str = "10Gi";

impl Renderer<'_> {
    /// `--mount` and `--tmpfs`: a named volume → a PersistentVolumeClaim of the same name
    /// (`subpath` → `subPath`, `readonly` → `readOnly`); the workspace bind →
    /// `--workspace-claim`; any other bind (`hostPath`) is refused; tmpfs → a memory
    /// `emptyDir` (loses `noexec`). Returns the claims to create.
    pub(super) fn render_mounts(
        &mut self,
        pod: &mut PodSpec,
        main: &mut Container,
        mounts: &[Mount],
        tmpfs: &[Tmpfs],
    ) -> Vec<String> {
        let mut volumes = Vec::new();
        let mut volume_mounts = Vec::new();
        let mut claims = Vec::new();
        for (index, mount) in mounts.iter().enumerate() {
            let Mount {
                target,
                read_only,
                source,
            } = mount;
            let key = format!("mounts.{target}");
            let field = self.field(&key);
            let (claim, sub_path) = match source {
                MountSource::Bind { path } => {
                    let workspace = matches!(
                        self.spec.origins.get(&key),
                        Some(Origin::Invocation { input }) if input == "--workspace"
                    );
                    match (&self.options.workspace_claim, workspace) {
                        (Some(claim), true) => {
                            self.notes.approximation(
                                "workspace-claim",
                                "--workspace",
                                format!(
                                    "the workspace {path} is a host directory on Docker; here it \
                                     is the existing claim {claim}, mounted at {target}"
                                ),
                            );
                            (claim.clone(), None)
                        }
                        (None, true) => {
                            self.errors.push(RenderError::MissingOption {
                                field: "workspace.mount".to_string(),
                                message: format!(
                                    "the workspace {path} is a host directory, which a Pod \
                                     cannot mount (hostPath is forbidden by Pod Security)"
                                ),
                                hint: "pass --workspace-claim PVC naming a claim that holds \
                                       the workspace, or set [workspace] mount = false"
                                    .to_string(),
                            });
                            continue;
                        }
                        (_, false) => {
                            self.refuse(
                                field,
                                format!(
                                    "the bind of host path {path} at {target} needs hostPath, \
                                     which Pod Security forbids"
                                ),
                                "put the files in a ConfigMap, a Secret or a volume, or remove \
                                 the mount for the kubernetes backend",
                            );
                            continue;
                        }
                    }
                }
                MountSource::Volume { name, subpath } => {
                    if !names::is_dns1123_subdomain(name) {
                        self.errors.push(RenderError::InvalidName {
                            field,
                            value: name.clone(),
                            what: "PersistentVolumeClaim name (DNS-1123 subdomain)",
                            hint: "name the volume with lower-case letters, digits, dots and \
                                   inner dashes"
                                .to_string(),
                        });
                        continue;
                    }
                    if !claims.contains(name) {
                        claims.push(name.clone());
                    }
                    self.notes.approximation(
                        "named-volume",
                        self.field(&key),
                        format!(
                            "the Docker volume {name} is a PersistentVolumeClaim of the same name \
                             (ReadWriteOnce, {VOLUME_SIZE}, the default storage class), which \
                             outlives the pod as the volume outlives the container; pods \
                             sharing it must run on one node"
                        ),
                    );
                    (name.clone(), subpath.clone())
                }
            };
            let volume = format!("mount-{index}");
            volumes.push(Volume {
                name: volume.clone(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim,
                    read_only: read_only.then_some(true),
                }),
                ..Volume::default()
            });
            volume_mounts.push(VolumeMount {
                name: volume,
                mount_path: target.clone(),
                read_only: read_only.then_some(true),
                sub_path,
                ..VolumeMount::default()
            });
        }
        for (index, entry) in tmpfs.iter().enumerate() {
            let Tmpfs { target, exec } = entry;
            let volume = format!("tmpfs-{index}");
            volumes.push(memory_volume(&volume, None));
            volume_mounts.push(VolumeMount {
                name: volume,
                mount_path: target.clone(),
                ..VolumeMount::default()
            });
            let field = self.field(&format!("tmpfs.{target}"));
            if *exec {
                self.notes.approximation(
                    "tmpfs",
                    field,
                    format!(
                        "tmpfs {target} (executable) is a memory emptyDir; no_new_privs and no \
                         CAP_MKNOD stand for nosuid and nodev; its contents count toward the \
                         memory limit"
                    ),
                );
            } else {
                self.notes.weaker(
                    "tmpfs-noexec",
                    field,
                    format!(
                        "tmpfs {target} is a memory emptyDir, which cannot be mounted noexec: \
                         files written there can be executed, unlike Docker's noexec tmpfs; \
                         no_new_privs and no CAP_MKNOD stand for nosuid and nodev; its contents \
                         count toward the memory limit"
                    ),
                );
            }
        }
        pod.volumes = (!volumes.is_empty()).then_some(volumes);
        main.volume_mounts = (!volume_mounts.is_empty()).then_some(volume_mounts);
        claims
    }
}

/// The claim of a named volume: `ReadWriteOnce`, [`VOLUME_SIZE`], the default storage class.
pub(super) fn claim(metadata: ObjectMeta) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata,
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".to_string()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(VOLUME_SIZE.to_string()),
                )])),
                limits: None,
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    }
}

/// A memory `emptyDir` (a tmpfs, or `/dev/shm` with its size).
pub(super) fn memory_volume(name: &str, size: Option<u64>) -> Volume {
    Volume {
        name: name.to_string(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some("Memory".to_string()),
            size_limit: size.map(|bytes| Quantity(bytes_quantity(bytes))),
        }),
        ..Volume::default()
    }
}
