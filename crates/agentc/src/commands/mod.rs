//! One module per subcommand; [`launch`] holds what the launching commands share (the
//! runtime, the daemon connection, the docker CLI, exit statuses and signal handling).

pub mod build;
pub mod egress;
pub mod launch;
pub mod offline;
pub mod ps;
pub mod rm;
pub mod run;
pub mod seed;
pub mod verify;
