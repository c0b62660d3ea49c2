//! Renders a [`agentc_policy::LaunchSpec`] to `docker` argv and to a shell line, and runs it.
//!
//! Rendering is a pure function ([`render_argv`]); quoting for display is [`shell_line`];
//! spawning the docker CLI lives apart in [`exec`]. Every flag is rendered in the attached
//! form `--flag=value` as one argv element, so no value can ever be read as a flag, and every
//! value that survives rendering reaches docker unchanged: values docker's syntax cannot carry
//! are refused with a [`RenderError`] naming the spec field.
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
//! assert_eq!(argv, ["docker", "build", "--tag=agentc/demo:1", "/src/ctx"]);
//! assert_eq!(shell_line(&argv), "docker build --tag=agentc/demo:1 /src/ctx");
//! # Ok::<(), agentc_backend_cli::RenderError>(())
//! ```
#![deny(missing_docs)]

mod error;
pub mod exec;
mod mount_csv;
mod render;
mod shell;

pub use error::RenderError;
pub use exec::ExecError;
pub use render::{check_build, check_container, render_argv};
pub use shell::{shell_line, try_shell_line};
