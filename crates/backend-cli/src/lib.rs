//! Renders a [`agentc_policy::LaunchSpec`] to `docker` argv and to a shell line, and runs it.
//!
//! Rendering is a pure function ([`render_argv`]); quoting for display is [`shell_line`];
//! executing with the docker CLI (spawning it, passing SIGTERM on, exit codes, the image check
//! and pull, a whole launch) lives apart in [`exec`]. Every flag is rendered in the attached
//! form `--flag=value` as one argv element, so no value can ever be read as a flag, and every
//! value that survives rendering reaches docker unchanged: values docker's syntax cannot carry
//! are refused with an [`ArgvError`] naming the spec field, by the checks the API backend
//! shares ([`agentc_engine::argv`]).
//!
//! ```
//! use agentc_backend_cli::{render_argv, shell_line};
//! use agentc_policy::{Action, BuildSpec, LaunchKind, LaunchSpec};
//!
//! let spec = LaunchSpec {
//!     kind: LaunchKind::Build,
//!     profile: "demo".into(),
//!     action: Action::Build(BuildSpec {
//!         tag: "agentc/demo:1".into(),
//!         context: "/src/ctx".into(),
//!         dockerfile: None,
//!         named_contexts: Default::default(),
//!         build_args: Default::default(),
//!         labels: Default::default(),
//!     }),
//!     origins: Default::default(),
//! };
//! let argv = render_argv(&spec)?;
//! assert_eq!(argv, ["docker", "build", "--tag=agentc/demo:1", "--force-rm", "/src/ctx"]);
//! assert_eq!(shell_line(&argv), "docker build --tag=agentc/demo:1 --force-rm /src/ctx");
//! # Ok::<(), agentc_backend_cli::ArgvError>(())
//! ```
#![deny(missing_docs)]

pub mod egress;
pub mod exec;
mod mount_csv;
mod render;
pub mod sandbox;
mod shell;

pub use agentc_engine::{ArgvError, ExecError};
pub use render::render_argv;
pub use sandbox::CliClient;
pub use shell::{shell_line, try_shell_line};
