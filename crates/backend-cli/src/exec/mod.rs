//! Executing a rendered launch with the docker CLI; the renderer stays pure.
//!
//! - [`process`]: spawning a program with an argv and turning how it ended into an exit code.
//! - [`signals`]: the [`SignalShield`] that keeps SIGINT and SIGTERM from ending agentc while
//!   docker runs, so docker's exit code comes back and a SIGTERM can be passed on.
//! - [`docker`]: the docker CLI in the foreground and the queries around a launch (inspect,
//!   forced removal).
//! - [`port`]: the engine port through the command line (`CliPort`), over which the egress
//!   companion and the leftovers' removal are written once
//!   ([`agentc_backend_common::companion`]).
//! - [`egress`]: the isolated network and the egress proxy set up before a workload whose
//!   allowlist is enforced outside it, and removed with it.
//! - [`engine`](mod@engine): the argv for the engine in use (Docker or Podman) and the
//!   fail-closed check of the launch's runtime.
//! - [`launch`](mod@launch): a whole container launch, as the API backend's launch does it,
//!   with its image made present and its volumes created through the command line's port.

pub mod docker;
pub mod egress;
pub mod engine;
pub mod launch;
pub mod port;
pub mod process;
pub mod signals;

pub use launch::{ensure_image, ensure_volumes, launch, Outcome};
pub use process::{run, spawn, wait_forwarding};
pub use signals::SignalShield;
