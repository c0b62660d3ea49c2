//! The `agentc` binary's offline behaviour, one module per file: what a user meets at the
//! command line (`cli`), the Kubernetes rendering through it (`k8s_cli`) and the egress proxy's
//! own subcommand on loopback (`egress_cli`). No engine is asked.

mod cli;
mod egress_cli;
mod k8s_cli;
