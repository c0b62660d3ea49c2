//! SIGINT and SIGTERM for the whole launch: [`Signals`], the process's own, written once in
//! [`agentc_engine::signals`] and used by the launch, the session and verify.

pub use agentc_engine::signals::{Interrupts, Signals};
