//! Backend-agnostic policy for agentc: profiles in, one [`LaunchSpec`] out.
//!
//! A profile is TOML text handed in as a string; the environment is a map handed in; the
//! machine (user, workspace, profile directory, which host paths exist) is an input too. This
//! crate reads nothing from the process, so every result is reproducible in a test.
#![deny(missing_docs)]

pub mod capability;
pub mod error;
pub mod explain;
pub mod findings;
pub mod inputs;
pub mod load;
pub mod overrides;
pub mod presets;
pub mod profile;
pub mod resolve;
pub mod schema;
pub mod spec;
pub mod units;
pub mod validate;

pub use capability::Capability;
pub use error::{Location, PolicyError};
pub use explain::explain;
pub use findings::{deny, findings, report_json, Finding, Severity};
pub use inputs::{DecantSource, Owner, PathKind, PathProbe, RealPaths, ResolveInputs};
pub use load::{load, LoadedProfile};
pub use overrides::parse_overrides;
pub use profile::{AgentName, Profile};
pub use resolve::{home_volume_name, resolve, spec_digest};
pub use spec::*;
