//! One module per subcommand, each a short chain of library calls; [`launch`] holds what the
//! launching commands share (the runtime, the environment and daemon address read from the
//! machine, a launch through either backend and what it prints, the exit status of a launch
//! error); [`session`] the commands that drive a running sandbox, each a step of
//! [`agentc_host::session`] run through either backend's
//! [`SandboxClient`](agentc_engine::session::SandboxClient).

pub mod apply;
pub mod build;
pub mod completions;
pub mod doctor;
pub mod egress;
pub mod image;
pub mod init;
pub mod launch;
pub mod lock;
pub mod offline;
pub mod plan;
pub mod pool;
pub mod ps;
pub mod restore;
pub mod rm;
pub mod run;
pub mod seed;
pub mod serve;
pub mod session;
pub mod snapshot;
pub mod verify;
