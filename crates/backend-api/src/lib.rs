//! Renders a [`agentc_policy::LaunchSpec`] to Docker Engine API bodies (bollard types).
#![deny(missing_docs)]
