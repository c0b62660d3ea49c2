//! What an agentc launch depends on from the machine it runs on, read once for the command
//! line and library callers alike: the profile file ([`load_profile`]), the workspace, the
//! user, the `AGENTC_*` environment and Decant's source profiles ([`launch_inputs`]), the
//! presets' bundled build contexts in agentc's cache ([`bundled`]) and the builds from them
//! ([`build`]), and the launch resolved from them ([`resolve_instance`]). A launch is asked
//! for by a [`LaunchRequest`], what `agentc run`'s arguments say. And the engine port this
//! machine's engine is driven through, chosen and opened as the command line does it
//! ([`backend`]); snapshots of sandboxes launched from profile files ([`snapshots`]); the
//! pools' credential key ([`pool_secret`]); the lifecycle's I/O around the pure
//! `agentc_lifecycle` crate, `agentc apply` and `agentc rollback` among it ([`lifecycle`]);
//! what agentc made on an engine, listed and removed as `agentc ps` and `agentc rm` do
//! ([`inventory`]); what the session commands do to a running sandbox (exec, copy, ports,
//! logs, egress log, stop and start: [`session`]).
//!
//! The policy crate reads nothing from the process; this crate is where the file system, the
//! environment and the user are read. It asks the engine only through [`backend`]'s ports.
//!
//! ```no_run
//! use agentc_host::{load_profile, resolve_instance, LaunchRequest};
//! use agentc_policy::{Instance, Start};
//!
//! let request = LaunchRequest::new("fixtures/sandbox-minimal.toml");
//! let loaded = load_profile(&request.profile)?;
//! let instance = Instance { start: Start::Session, ..Instance::default() };
//! let spec = resolve_instance(&loaded, &request, instance)?;
//! println!("{}", spec.profile);
//! # Ok::<(), agentc_host::Failure>(())
//! ```
#![deny(missing_docs)]

pub mod backend;
pub mod build;
pub mod bundled;
mod failure;
pub mod inventory;
pub mod launch;
pub mod lifecycle;
pub mod pool;
pub mod pool_secret;
mod request;
mod resolve;
pub mod restore;
pub mod run;
pub mod session;
pub mod snapshots;
pub mod verify;

pub use failure::{Failure, EXIT_DOCKER, EXIT_FAILED, EXIT_INVALID, EXIT_NO_INPUT, EXIT_USAGE};
pub use request::{every_launch, load_profile, seed_targets, LaunchRequest};
pub use resolve::{
    agentc_environment, container_of, current_owner, file_sha256, launch_inputs, launch_inputs_in,
    locked_path, profile_record, resolve_build, resolve_inputs, resolve_instance, resolve_launch,
    resolve_launch_unowned,
};

#[cfg(test)]
mod memory_fixtures;
#[cfg(test)]
mod tests;
