//! The rules of a profile, one module per profile table or concern. Each holds, for its
//! fields, the checks that the types alone cannot express, the resolution into the
//! [`crate::LaunchSpec`], the explanation and the security findings, so that a new field
//! touches its table's module, the profile struct, the IR and the renderers.
//!
//! The drivers ([`crate::load()`], [`crate::resolve()`], [`crate::explain()`],
//! [`crate::findings()`]) call into these modules in a fixed order; the modules depend only on
//! the leaves (the profile, the spec, the vocabulary modules and the stage contexts) and never
//! on a driver.

pub(crate) mod credentials;
pub(crate) mod decant;
pub(crate) mod egress;
pub(crate) mod identity;
pub(crate) mod image;
pub(crate) mod integrations;
pub(crate) mod logging;
pub(crate) mod mounts;
pub(crate) mod network;
pub(crate) mod proxy;
pub(crate) mod resources;
pub(crate) mod security;
pub(crate) mod seeds;
