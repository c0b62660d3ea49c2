//! The lifecycle's I/O, around the pure `agentc_lifecycle` crate: `agentc apply` and `agentc
//! rollback` ([`apply`]), the state directory and its files written atomically under a lock
//! ([`store`]), the hashes of the files a profile mounts ([`files`]), the engine queries a
//! deployment needs through either backend ([`engine`]), the launches of a profile and the
//! lock of the machine now ([`gather`]), `agentc doctor`'s report ([`doctor`]) and the engine's
//! facts it judges ([`probe`]).

pub mod apply;
pub mod doctor;
pub mod engine;
pub mod files;
pub mod gather;
pub mod probe;
pub mod store;
