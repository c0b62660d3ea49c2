//! Support for the workspace-level conformance tests.
pub mod architecture;
pub mod argv;
pub mod binary;
pub mod canonical;
pub mod engines;
pub mod fixtures;
pub mod image;
pub mod k8s;
pub mod launch;
pub mod live;
pub mod referee;
pub mod referee_egress;
pub mod stand_in;
pub mod strategies;
pub mod turn;
#[cfg(test)]
mod turn_tests;
