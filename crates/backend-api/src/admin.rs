//! Container admin through the Engine API, what `agentc ps` and `agentc rm` do: listing and
//! removing agentc's containers, volumes and companions, written once over the engine port
//! ([`agentc_backend_common::admin`]) and run here through [`crate::port::ApiPort`]; where a
//! container's ports are reachable; how many removals the daemon takes at once.

use crate::port::ApiPort;
use agentc_backend_common::admin;
use agentc_backend_common::{network_of, published_addresses, ExecError, PublishedAddress};

pub use agentc_backend_common::admin::{RemoveTarget, Summary};

/// Lists agentc's containers, those of one profile when `profile` is given, sorted by name
/// ([`agentc_backend_common::admin::list`] through the Engine API).
pub async fn list(port: &ApiPort, profile: Option<&str>) -> Result<Vec<Summary>, ExecError> {
    admin::list(port, profile).await
}

/// Where a container's published ports are reachable from the host
/// ([`published_addresses`] of its inspect, on the network it is attached to); none for a
/// container that cannot be inspected, such as one removed meanwhile.
pub async fn reachable(port: &ApiPort, id: &str) -> Vec<PublishedAddress> {
    match inspect_reachable(port, id).await {
        Ok(inspect) => published_addresses(&inspect, &network_of(&inspect)),
        Err(_) => Vec::new(),
    }
}

/// The inspect of the container `id`, with the host bindings of the ports its egress proxy
/// relays for it ([`agentc_backend_common::launch::reachable_inspect`] through the Engine
/// API's port): what says where its ports are reachable.
pub async fn inspect_reachable(
    port: &ApiPort,
    id: &str,
) -> Result<bollard::models::ContainerInspectResponse, ExecError> {
    agentc_backend_common::launch::reachable_inspect(port, id).await
}

pub use crate::daemon::{REMOVE_JOBS, REMOVE_JOBS_OLD_DAEMON};

/// Force-removes agentc containers with their egress companions and the leftovers of killed
/// launches, and returns the names removed ([`agentc_backend_common::admin::remove`] through
/// the Engine API, [`REMOVE_JOBS`] at a time, or [`REMOVE_JOBS_OLD_DAEMON`]).
pub async fn remove(port: &ApiPort, target: &RemoveTarget) -> Result<Vec<String>, ExecError> {
    admin::remove(port, target).await
}

/// Checks, without removing anything, that each of `names` is an agentc container or the
/// leftovers of a killed launch of that name
/// ([`agentc_backend_common::admin::check_removable`]).
pub async fn check_removable(port: &ApiPort, names: &[String]) -> Result<(), ExecError> {
    admin::check_removable(port, names).await
}

/// Creates the named volumes a launch mounts, labelled
/// ([`agentc_backend_common::volumes::ensure_volumes`], through [`crate::port::ApiPort`]).
pub async fn ensure_volumes(
    port: &ApiPort,
    spec: &agentc_policy::ContainerSpec,
) -> Result<(), ExecError> {
    agentc_backend_common::volumes::ensure_volumes(port, spec).await
}

/// agentc's volumes, as `(name, profile)`, sorted by name
/// ([`agentc_backend_common::admin::list_volumes`]).
pub async fn list_volumes(port: &ApiPort) -> Result<Vec<(String, String)>, ExecError> {
    admin::list_volumes(port).await
}

/// The agentc volumes these containers mount ([`agentc_backend_common::admin::volumes_of`]).
pub async fn volumes_of(port: &ApiPort, names: &[String]) -> Result<Vec<String>, ExecError> {
    admin::volumes_of(port, names).await
}

/// Removes agentc volumes and returns those removed
/// ([`agentc_backend_common::admin::remove_volumes`]).
pub async fn remove_volumes(
    port: &ApiPort,
    volumes: &[String],
    skip_in_use: bool,
) -> Result<Vec<String>, ExecError> {
    admin::remove_volumes(port, volumes, skip_in_use).await
}
