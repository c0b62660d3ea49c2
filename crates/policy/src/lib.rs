//! Backend-agnostic policy for agentc: profiles in, one [`LaunchSpec`] out.
//!
//! A profile is TOML text handed in as a string; the environment is a map handed in; the
//! machine (user, workspace, profile directory, which host paths exist) is an input too. This
//! crate reads nothing from the process, so every result is reproducible in a test.
//!
//! The pipeline: [`load`] reads the text into a typed, validated [`LoadedProfile`] (or every
//! independent error at once, as [`PolicyErrors`]); [`resolve`] turns it, with the
//! invocation's [`ResolveInputs`] (how this invocation starts the container among them: an
//! [`Instance`]), into one final [`LaunchSpec`], labelled with its spec digest ([`digest`]);
//! [`explain`] and [`findings`] describe that spec. The backends (`agentc-backend-cli`, `agentc-backend-api`) render the
//! spec; they never see the profile.
//!
//! ```
//! use std::collections::BTreeMap;
//! use agentc_policy::{
//!     load, resolve, Instance, LaunchKind, Owner, PathKind, PathProbe, ResolveInputs,
//! };
//!
//! // A long-lived custom sandbox that publishes one port.
//! let text = r#"
//! name = "box"
//! agent = "custom"
//! [image]
//! ref = "alpine:3"
//! command = ["tail", "-f", "/dev/null"]
//! [network]
//! publish = [8080]
//! "#;
//! let profile = load("box.toml", text)?;
//!
//! // The machine, as values: this sandbox mounts nothing, so no host path is needed.
//! struct NoFiles;
//! impl PathProbe for NoFiles {
//!     fn kind(&self, _: &str) -> PathKind {
//!         PathKind::Missing
//!     }
//! }
//! let inputs = ResolveInputs {
//!     kind: LaunchKind::Run,
//!     workspace: "/home/dev/src/app".into(),
//!     profile_dir: "/home/dev/profiles".into(),
//!     home_dir: "/home/dev".into(),
//!     owner: Some(Owner { name: "dev".into(), uid: 1000, gid: 1000 }),
//!     image: None,
//!     seed_target: None,
//!     agent_args: Vec::new(),
//!     env: BTreeMap::from([("AGENTC_MEM_LIMIT".into(), "2g".into())]),
//!     decant_sources: Vec::new(),
//!     instance: Instance::default(),
//!     build: Default::default(),
//! };
//! let spec = resolve(&profile, &inputs, &NoFiles)?;
//! assert_eq!(spec.kind, LaunchKind::Sandbox);
//!
//! // One digest, computed by resolve, the same in every checkout (`io.agentc.spec-digest`).
//! let digest = spec.digest().expect("resolve labels every launch");
//! assert_eq!(digest.len(), 64);
//!
//! // The same spec as `docker` argv and as an Engine API create body.
//! let argv = agentc_backend_cli::render_argv(&spec)?;
//! assert!(argv.contains(&"--read-only".to_string()));
//! assert!(argv.contains(&"--memory=2147483648".to_string()));
//! let body = agentc_backend_api::render_json(&spec)?;
//! assert_eq!(body["body"]["HostConfig"]["ReadonlyRootfs"], true);
//! assert_eq!(body["body"]["HostConfig"]["Memory"], 2u64 << 30);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod digest;
pub mod hint;
pub mod overrides;
pub mod pool;
pub mod presets;
pub mod profile;
pub mod spec;

mod capability;
mod check;
mod context;
mod document;
mod egress_hosts;
mod engine;
mod error;
mod explain;
mod explainer;
mod finding;
mod findings;
mod inputs;
mod instance;
pub mod isolation;
mod keys;
mod limits;
mod load;
mod paths;
mod ports;
mod resolve;
mod rules;
mod schema;
mod text;
mod values;

pub use capability::{Capability, UnknownCapability};
pub use digest::{portable_action, LocalRoots};
pub use document::{LoadedProfile, MAX_PROFILE_BYTES};
pub use egress_hosts::{EgressHost, HostRefusal};
pub use engine::Engine;
pub use error::{Location, PolicyError, PolicyErrors, MAX_REPORTED_ERRORS};
pub use explain::explain;
pub use explainer::origin_words;
pub use finding::{
    deny, highest, report_json, report_text, Finding, FindingCode, FindingSource, Severity,
};
pub use findings::{explain_json, findings};
pub use hint::{Hint, Hinted, WithHint};
pub use inputs::{
    BuildInputs, DecantSource, Instance, Owner, PathKind, PathProbe, ProfileRecord, RealPaths,
    ResolveInputs, Start,
};
pub use instance::{dns_label_problem, NameProblem, MAX_DNS_LABEL};
pub use isolation::{
    choose_runtime, image_firewall_holds_egress, ChosenRuntime, DetectedRuntime, Isolation,
    IsolationPrefer, IsolationShortfall, IsolationTier,
};
pub use limits::{
    format_cpus, format_size, parse_cpus, parse_size, Limit, MAX_LOG_FILES, MAX_NANO_CPUS,
    MAX_PIDS_LIMIT, MAX_SIZE_BYTES, MIN_LOG_SIZE_BYTES, MIN_MEMORY_BYTES, MIN_NANO_CPUS,
};
pub use load::{load, validate};
pub use overrides::parse_overrides;
pub use paths::{
    classify_path, dangers, field_dangers, normalize_path, resolve_host_path, Danger, ALL_DANGERS,
    CA_FIELDS, CREDENTIAL_DIRS, DOCKER_HOST, DOCKER_SOCKETS, ENGINE_DATA, HOST_SYSTEM,
    TRUST_STORES,
};
pub use ports::PortSpec;
pub use profile::{AgentName, EgressEnforce, EgressMode, PodSecurityLevel, Profile};
pub use resolve::resolve;
pub use rules::egress::host_path::{IPV6_SYSCTLS, NET_CAPABILITIES};
pub use rules::egress::upstream::{UPSTREAM_AUTH_ENV, UPSTREAM_HTTP_AUTH_ENV};
pub use rules::egress::{
    endpoint_specs, host_scope, upstream_proxy, Chained, Endpoint, NO_PROXY_VARIABLES,
    PROXY_VARIABLES,
};
pub use rules::identity::{
    decant_container_name, home_volume_name, owner_slug, sandbox_container_name,
};
pub use rules::security::{is_gvisor, runtime_words, DANGEROUS_CAPABILITIES};
pub use schema::{profile_schema, PROFILE_SCHEMA_ID};
pub use spec::*;
pub use text::http_url_host;
