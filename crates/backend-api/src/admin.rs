//! Container admin through the Engine API: `agentc ps` and `agentc rm` are written once over the
//! engine port ([`agentc_engine::admin`], run through [`crate::port::ApiPort`] as through
//! the command line's port); what is this backend's own is how many removals the daemon takes at
//! once.

pub use agentc_engine::admin::{RemoveTarget, Summary};

pub use crate::daemon::{REMOVE_JOBS, REMOVE_JOBS_OLD_DAEMON};
