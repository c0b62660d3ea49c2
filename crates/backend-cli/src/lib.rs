//! Renders a [`agentc_policy::LaunchSpec`] to `docker` argv and to a shell line.
#![deny(missing_docs)]
