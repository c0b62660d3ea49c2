//! Executing with the docker CLI; the renderer stays pure.
//!
//! - [`process`]: spawning a program with an argv and turning how it ended into an exit code.
//! - [`signals`]: the [`SignalShield`] that keeps SIGINT and SIGTERM from ending agentc while
//!   a foreground docker command (`build`, `apply`) runs, so docker's exit code comes back and
//!   a SIGTERM can be passed on.
//! - [`docker`]: the docker CLI in the foreground and the queries around it (inspect, its
//!   refusal lines, the `--cidfile`).
//! - [`port`]: the engine port through the command line (`CliPort`), over which every
//!   orchestration is written once (the launch, attached, detached and `--count`:
//!   [`agentc_engine::launch`]; the egress companion and the leftovers' removal:
//!   [`agentc_engine::companion`]); `attached` is its attached run (`docker run` in the
//!   foreground).
//! - [`egress`]: the companion's helpers for blocking callers (the proxy image's import).
//! - [`engine`](mod@engine): the argv for the engine in use (Docker or Podman) and the
//!   fail-closed check of the launch's runtime.

mod attached;
pub mod docker;
pub mod egress;
pub mod engine;
pub mod port;
pub mod process;
pub mod signals;

pub use process::{run, spawn, wait_forwarding};
pub use signals::SignalShield;
