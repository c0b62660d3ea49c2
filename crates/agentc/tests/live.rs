//! The `agentc` binary against a real engine, one module per file: launches, sessions, pools,
//! snapshots, the lifecycle, egress through agentc's proxy, the bundled agent images and the
//! behaviour matrices under faults.
//!
//! Each test needs the daemon: it skips with a printed reason without one, and fails instead
//! when `AGENTC_REQUIRE_DOCKER=1`. The tests of one file run in parallel with one another, never
//! with another file's ([`common::turn`]).

mod common;
mod serve;

mod agent_images;
mod command_matrix;
mod egress_credentials;
mod egress_host_path;
mod egress_live;
mod egress_provider;
mod egress_state;
mod faults;
mod launch;
mod lifecycle;
mod pools;
mod pull;
mod sessions;
mod snapshots;
