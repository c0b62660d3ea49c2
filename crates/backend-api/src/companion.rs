//! The egress companion of a launch through the Engine API: the orchestration written once in
//! [`agentc_backend_common::companion`], run over this backend's [engine port](crate::port)
//! ([`ApiPort`]). These functions keep the backend's signatures (a [`Docker`] connection) for
//! its callers; none holds logic of its own.

use std::collections::BTreeMap;

use agentc_backend_common::companion::{self as common, Interrupted};
use agentc_backend_common::egress_state::{Leftover, Orphans};
use agentc_backend_common::ExecError;
use agentc_policy::ContainerSpec;
use bollard::Docker;

use crate::port::ApiPort;

pub use agentc_backend_common::companion::EgressSet;

/// The port over `docker`, for the engine this process drives.
fn port(docker: &Docker) -> ApiPort {
    ApiPort::new(docker.clone(), agentc_backend_common::engine())
}

/// The tag of the running agentc binary's proxy image, imported unless the engine has it
/// ([`common::own_proxy_image`]).
pub async fn own_proxy_image(docker: &Docker) -> Result<String, ExecError> {
    common::own_proxy_image(&port(docker)).await
}

/// Sets up the companion of `spec`, if it has one ([`common::setup_for`]); a signal
/// `interrupted` reports between the steps ends it, leaving nothing.
pub async fn setup_for(
    docker: &Docker,
    spec: &mut ContainerSpec,
    env: &BTreeMap<String, String>,
    interrupted: Interrupted<'_>,
) -> Result<Option<EgressSet>, ExecError> {
    common::setup_for(&port(docker), spec, env, interrupted).await
}

/// Removes the proxy, then the network, then the CA volume ([`common::teardown`]).
pub async fn teardown(docker: &Docker, set: &EgressSet) {
    common::teardown(&port(docker), set).await
}

/// The leftovers of killed launches ([`common::leftovers`](fn@common::leftovers)).
pub async fn leftovers(
    docker: &Docker,
    workload: Option<&str>,
    profile: Option<&str>,
) -> Result<Vec<Leftover>, ExecError> {
    common::leftovers(&port(docker), workload, profile).await
}

/// Gives the workload's inspect the host bindings its egress proxy holds for it
/// ([`common::add_relayed_ports`]).
pub async fn add_relayed_ports(
    docker: &Docker,
    name: &str,
    workload: &mut bollard::models::ContainerInspectResponse,
) {
    common::add_relayed_ports(&port(docker), name, workload).await
}

/// Removes the egress companions of the workload `name` ([`common::remove_companions`]).
pub async fn remove_companions(docker: &Docker, name: &str) -> Result<Vec<String>, ExecError> {
    common::remove_companions(&port(docker), name).await
}

/// Removes the isolated networks no container uses any more
/// ([`common::remove_orphan_networks`]).
pub async fn remove_orphan_networks(docker: &Docker) -> Result<Vec<String>, ExecError> {
    common::remove_orphan_networks(&port(docker)).await
}

/// Removes the companions whose workload is gone ([`common::reap`]).
pub async fn reap(
    docker: &Docker,
    own: Option<&str>,
    at_once: Option<&str>,
) -> Result<Vec<Orphans>, ExecError> {
    common::reap(&port(docker), own, at_once).await
}

/// Removes the networks and CA volumes labelled with a profile ([`common::remove_labelled`]).
pub async fn remove_labelled(
    docker: &Docker,
    profile: Option<&str>,
) -> Result<Vec<String>, ExecError> {
    common::remove_labelled(&port(docker), profile).await
}
