//! The lifecycle of agentc deployments as plain data: starter profiles ([`init`]), what a
//! profile's launches create ([`plan`]), the lock file and its drift ([`lock`]), the
//! deployment state that `apply` and `rollback` keep ([`state`]), the judgement of a
//! machine ([`doctor`]), and the build contexts of the presets' images ([`images`]).
//!
//! Like the policy crate, this crate reads nothing from the process: the binary reads the
//! profile, the files, the engine and the clock, and hands the values in; the state and lock
//! files come in as text and go out as text, which the binary writes atomically.
//!
//! ```
//! use agentc_lifecycle::lock::{compare, Lock};
//!
//! let text = r#"
//! lock_version = 1
//! agentc_version = "0.1.0"
//! profile = "box"
//! runtime = "default"
//!
//! [egress]
//! mode = "deny"
//!
//! [[image]]
//! reference = "alpine:3"
//! id = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
//! "#;
//! let locked = Lock::parse("box.lock", text)?;
//! let mut current = locked.clone();
//! current.images[0].id = format!("sha256:{}", "1".repeat(64));
//! let drift = compare(&locked, &current);
//! assert_eq!(drift.len(), 1);
//! assert_eq!(drift[0].field, "image alpine:3: id");
//! # Ok::<(), agentc_lifecycle::LifecycleError>(())
//! ```
#![deny(missing_docs)]

pub mod doctor;
pub mod images;
pub mod init;
pub mod lock;
pub mod plan;
pub mod reference;
pub mod state;
pub mod tree;

mod error;

pub use error::{parse_toml, position, LifecycleError};
