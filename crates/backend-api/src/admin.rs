//! Container admin through the Engine API: `agentc ps` and `agentc rm` are written once over the
//! engine port ([`agentc_backend_common::admin`], run through [`crate::port::ApiPort`] as through
//! the command line's port); what is this backend's own is how many removals the daemon takes at
//! once.

pub use agentc_backend_common::admin::{RemoveTarget, Summary};

pub use crate::daemon::{REMOVE_JOBS, REMOVE_JOBS_OLD_DAEMON};
