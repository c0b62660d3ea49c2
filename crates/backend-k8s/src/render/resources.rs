//! Resources and logging: memory and cpu as equal requests and limits, `/dev/shm` as a sized
//! memory `emptyDir`, and the process limit and log rotation as the cluster's duties.

use std::collections::BTreeMap;

use agentc_policy::{LogConfig, Resources};
use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements, VolumeMount};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::context::Renderer;
use super::volumes::memory_volume;
use crate::names::{bytes_quantity, cpu_quantity};

impl Renderer<'_> {
    /// `--memory`/`--memory-swap` → `limits.memory` = `requests.memory` (no swap); `--cpus`
    /// → `limits.cpu` = `requests.cpu`; `--shm-size` → a sized memory `emptyDir` at
    /// `/dev/shm`; `--pids-limit` → the kubelet's `podPidsLimit` (a cluster duty).
    pub(super) fn render_resources(
        &mut self,
        pod: &mut PodSpec,
        main: &mut Container,
        resources: &Resources,
    ) {
        let Resources {
            memory_bytes,
            memory_swap_bytes,
            shm_size_bytes,
            nano_cpus,
            pids_limit,
        } = resources;
        let mut amounts = BTreeMap::new();
        if let Some(memory) = memory_bytes {
            amounts.insert("memory".to_string(), Quantity(bytes_quantity(*memory)));
            if *memory_swap_bytes != Some(*memory) {
                self.notes.approximation(
                    "swap",
                    self.field("resources.memory_swap_bytes"),
                    "Docker allows this container swap; Kubernetes gives a pod none (stricter)"
                        .to_string(),
                );
            }
            if nano_cpus.is_none() {
                self.notes.cluster_duty(
                    "no-swap",
                    self.field("resources.memory_bytes"),
                    "without a cpu limit the pod has Burstable QoS: keep the kubelet's \
                     memorySwap.swapBehavior at NoSwap (the default) so that, as on Docker, it \
                     gets no swap"
                        .to_string(),
                );
            }
        }
        if let Some(nano) = nano_cpus {
            match cpu_quantity(*nano) {
                Some((quantity, exact)) => {
                    if !exact {
                        self.notes.approximation(
                            "cpus-rounded",
                            self.field("resources.nano_cpus"),
                            format!(
                                "Kubernetes counts cpu in millicores: {quantity} (rounded down, \
                                 stricter)"
                            ),
                        );
                    }
                    amounts.insert("cpu".to_string(), Quantity(quantity));
                }
                None => {
                    let field = self.field("resources.nano_cpus");
                    self.refuse(
                        field,
                        "a cpu limit below one millicore cannot be expressed",
                        "set resources.cpus to 0.001 or more",
                    );
                }
            }
        }
        if !amounts.is_empty() {
            main.resources = Some(ResourceRequirements {
                limits: Some(amounts.clone()),
                requests: Some(amounts),
                claims: None,
            });
        }
        if let Some(shm) = shm_size_bytes {
            let volume = "dev-shm".to_string();
            pod.volumes
                .get_or_insert_with(Vec::new)
                .push(memory_volume(&volume, Some(*shm)));
            main.volume_mounts
                .get_or_insert_with(Vec::new)
                .push(VolumeMount {
                    name: volume,
                    mount_path: "/dev/shm".to_string(),
                    ..VolumeMount::default()
                });
            self.notes.weaker(
                "shm",
                self.field("resources.shm_size_bytes"),
                format!(
                    "--shm-size {} is a memory emptyDir at /dev/shm with sizeLimit {}: it counts \
                     toward the memory limit and is not noexec, unlike Docker's /dev/shm",
                    shm,
                    bytes_quantity(*shm)
                ),
            );
        }
        if let Some(pids) = pids_limit {
            self.notes.cluster_duty(
                "pids-limit",
                self.field("resources.pids_limit"),
                format!(
                    "--pids-limit {pids} has no pod field: set the kubelet's podPidsLimit to \
                     {pids} or less (check /sys/fs/cgroup/pids.max in the pod)"
                ),
            );
        }
    }

    /// `--log-driver`/`--log-opt` → the kubelet's `containerLogMaxSize` and
    /// `containerLogMaxFiles` (a cluster duty).
    pub(super) fn render_logging(&mut self, log: &Option<LogConfig>) {
        if let Some(LogConfig { driver, options }) = log {
            let settings: Vec<String> = options
                .iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect();
            self.notes.cluster_duty(
                "log-rotation",
                self.field("log"),
                format!(
                    "log driver {driver} ({}) has no pod field: the kubelet rotates container \
                     logs by containerLogMaxSize and containerLogMaxFiles (10Mi x 5 by default)",
                    settings.join(", ")
                ),
            );
        }
    }
}
