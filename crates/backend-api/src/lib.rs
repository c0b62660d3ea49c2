//! The Engine API backend of agentc: a [`agentc_policy::LaunchSpec`] rendered to Docker Engine
//! API requests (bollard types) and executed through bollard.
//!
//! [`render`] is pure: it turns a spec into the create body the docker CLI would send for the
//! same launch. The rest talks to the daemon, one module one job: [`daemon`] connects and turns
//! bollard's errors into launch errors (one pooled connection per port, the version from
//! `/_ping`); [`port`] implements the engine port over which the launch, its copies and every
//! other orchestration are written once ([`agentc_engine`]); `session` is the attached
//! session (terminal, stdin and output, signals, resize, OOM watch); [`admin`] re-exports what `agentc ps`
//! and `agentc rm` use, written once over the port, with the daemon's removal concurrency; [`pull`] pulls a missing image when asked; [`signals`] listens for SIGINT and SIGTERM.
//! What the CLI backend shares (the refusals of values docker's argv cannot carry, secret
//! resolution, the launch error) is in [`agentc_engine`].
//!
//! ```
//! use agentc_backend_api::render_create;
//! # fn spec() -> agentc_policy::ContainerSpec { unimplemented!() }
//! # fn demo() -> Result<(), agentc_backend_api::RenderError> {
//! let request = render_create(&spec())?;
//! println!("{}", serde_json::to_string_pretty(&request.body).unwrap_or_default());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod admin;
pub mod attached;
pub mod daemon;
pub mod egress;
pub mod engine;
mod json;
pub mod port;
pub mod pull;
pub mod render;
pub mod sandbox;
mod session;
pub mod signals;

pub use admin::{RemoveTarget, Summary};
pub use agentc_engine::launch::{copy_names, LaunchManyError, DEFAULT_JOBS};
pub use agentc_engine::ExecError;
pub use json::render_json;
pub use port::{connect, ApiPort};
pub use pull::{split_reference, ImageReference};
pub use render::{render_create, CreateRequest, RenderError};
pub use sandbox::ApiClient;
