//! The engine core of agentc: the engine port and every orchestration written once over it.
//!
//! agentc launches a [`agentc_policy::LaunchSpec`] two ways: as `docker` argv
//! (`agentc-backend-cli`) and through the Engine API (`agentc-backend-api`). Each of them
//! renders and implements the engine port; everything a launch, a session, a pool, a snapshot
//! or the isolation floor does with the engine is written once here, over that port, so that
//! both backends behave the same and an in-memory engine (`memory`, for tests) runs it without a
//! daemon:
//!
//! - [`argv`]: the refusals of values docker's command line cannot carry
//!   ([`check_container`], [`check_build`], and [`check_egress`] for an egress companion). The CLI renderer runs them before formatting; the
//!   API backend runs them before building a body, so a profile one backend accepts, the other
//!   accepts too.
//! - [`port`]: the engine port, one async trait of the engine operations agentc uses, which
//!   the docker/podman command line and the Engine API implement; [`companion`]: the egress
//!   companion, all of it: its spec prepared for a run ([`companion::prepare`]), its set-up,
//!   health and removal over the port, its state as the engine holds it
//!   ([`companion::state`]: up, down or missing) and the reaping of killed launches'
//!   leftovers ([`companion::leftovers`](mod@companion::leftovers)); [`image`]: a launch's image made present (pulled
//!   when asked), written once over it; [`launch`](mod@launch): the launch itself (attached,
//!   detached and the copies of `--count`), written once over it; [`signals`]: the SIGINT and
//!   SIGTERM a launch listens for.
//! - [`admin`]: what `agentc ps` and `agentc rm` do (listing and removing agentc's containers,
//!   volumes and companions), written once over the port.
//! - [`engine`](mod@engine): which engine (Docker or Podman) the process drives.
//! - [`runtime`]: the fail-closed check of a launch's runtime against what the engine has
//!   ([`check_runtime`]).
//! - [`podman`]: the difference table between Docker and Podman: each row a field that
//!   Podman means differently, rewritten or refused by name ([`podman::adapt`]).
//! - [`secrets`]: secret resolution from an environment map ([`resolve_env`]).
//! - [`error`]: the launch error ([`ExecError`]) with its hints and exit statuses, and the
//!   mapping of a container's exit code to a process exit status ([`exit_status`]).
//! - [`hints`]: what to do about the daemon's own messages (a refused create, a failed pull).
//! - [`inspect`]: reading a container's inspect, which `docker inspect` and the Engine API print
//!   alike ([`published_addresses`], [`network_of`]).
//!
//! - [`session`]: the [`SandboxClient`](session::SandboxClient) trait both backends implement
//!   to drive a running sandbox (exec, copies, endpoints, logs, stop, start, delete), and what
//!   its implementations share: NAME checks, endpoint resolution, the copy's transport and its
//!   host-side tar streams.
//!
//! - [`snapshot`]: pausing, snapshotting, restoring and forking a sandbox, written once over
//!   [`SandboxClient`](session::SandboxClient).
//!
//! Nothing here spawns a process or calls a daemon itself (the orchestration of [`companion`]
//! and [`image`] do so only through the port their caller hands in); only [`session::tarball`] reads and writes
//! host files, for a copy, and [`snapshot`] a snapshot's archives, in the directory its caller
//! passes.
//!
//! ```
//! use agentc_engine::{check_container, ArgvError};
//! use agentc_policy::ContainerSpec;
//!
//! let mut spec = ContainerSpec::empty("agentc/demo:1");
//! assert_eq!(check_container(&spec), Ok(()));
//! spec.image = "--privileged".into();
//! let refused = check_container(&spec).unwrap_err();
//! assert!(matches!(&refused, ArgvError::Unrepresentable { field, .. } if field == "image"));
//! ```
#![deny(missing_docs)]

pub mod admin;
pub mod argv;
pub mod companion;
pub mod credentials;
pub mod daemon_text;
pub mod engine;
pub mod error;
pub mod hints;
pub mod host_ports;
pub mod image;
pub mod inspect;
pub mod isolation;
pub mod launch;
#[cfg(any(test, feature = "memory-port"))]
pub mod memory;
pub mod owner;
pub mod pause;
pub mod podman;
pub mod pool;
pub mod port;
pub mod rfc3339;
pub mod runtime;
pub mod secrets;
pub mod session;
pub mod signals;
pub mod snapshot;
pub mod volumes;

pub use argv::{check_build, check_container, check_egress, ArgvError};
pub use engine::Engine;
pub use error::{exit_status, ExecError, Interrupt};
pub use inspect::{network_of, published_addresses, PublishedAddress};
pub use runtime::{
    check_runtime, docker_info_runtimes, EngineRuntimes, RuntimeFacts, Runtimes,
    PODMAN_RUNTIME_CANDIDATES,
};
pub use secrets::{resolve_env, resolve_vars};
