//! The Engine API backend of agentc: a [`agentc_policy::LaunchSpec`] rendered to Docker Engine
//! API requests (bollard types) and executed through bollard.
//!
//! [`render`] is pure: it turns a spec into the create body the docker CLI would send for the
//! same launch. [`exec`] talks to the daemon: it resolves secrets, checks the image, creates,
//! attaches, starts, waits and removes, and cleans up on Ctrl-C. [`pull`] pulls a missing image
//! when asked.
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

pub mod exec;
pub mod pull;
pub mod render;

pub use exec::{
    connect, launch, list, published_addresses, remove, ExecError, LaunchOptions, Outcome,
};
pub use pull::{image_present, pull_image, split_reference, ImageReference};
pub use render::{render_create, render_json, CreateRequest, RenderError};
