//! agentc's verify, for the `agentc verify` command and any library caller alike: runs a probe
//! in place of the agent and compares what the kernel and `docker inspect` report with the
//! [`ContainerSpec`](agentc_policy::ContainerSpec) that was asked for.
//!
//! - [`probe`]: the probe script, the launch that runs it ([`probe_spec`]: the same hardening,
//!   mounts and limits, with the agent replaced by [`PROBE_SCRIPT`]) and the whole flow for one
//!   resolved launch, written once over the [engine port](agentc_engine::port) the caller
//!   holds ([`verify_on`]: the isolation floor met first; [`verify_placed`]: a container whose
//!   runtime is chosen).
//! - [`error`](mod@error): why verify produced no checks ([`VerifyError`], one variant per
//!   cause, with its exit status).
//! - [`parse`]: the parser of the probe's output ([`parse_probe`] into an [`Observation`]).
//! - [`compare`](mod@compare): the comparison with the spec ([`compare()`]) and the table
//!   ([`render_table`]). Parser and comparison do no I/O.
//! - `gvisor`: the runtime check, and what changes under gVisor, whose kernel shows less
//!   (no `NoNewPrivs` line, no seccomp mode, no cgroup files; `NET_RAW` dropped): those checks
//!   read `docker inspect` or say what gVisor does instead, never a false mismatch.
//!
//! - [`egress`](mod@egress): for an allowlist enforced outside the workload, the egress checks
//!   a container of the proxy image runs on the probe's isolated network (`agentc egress-proxy
//!   probe`): an allowed host reached through the proxy, a denied host and an IP literal
//!   refused, a direct connection and DNS failing, the proxy variables set.
//! - [`host_path`](mod@host_path): behind the proxy, `egress.host-path`: a container with the
//!   sandbox's capabilities and sysctls tries to reach this machine at the outside network's
//!   gateway (UDP, TCP, a route with `NET_ADMIN`, ARP with `NET_RAW`, IPv6), where verify
//!   listens; nothing may arrive.
//!
//! - [`kube`](mod@kube): `--backend k8s`, the Kubernetes rendering played by `podman kube
//!   play` with the probe as its workload's command, compared with the rendered pod.
//!
//! What is not checked: published ports, extra hosts, devices, the seccomp profile, and
//! environment values (only names are observed, so a secret's value never leaves the container).
#![deny(missing_docs)]

mod check;
mod check_run;
pub mod compare;
pub mod egress;
pub mod error;
mod gvisor;
pub mod host;
pub mod host_path;
pub mod kube;
pub mod parse;
pub mod probe;
#[cfg(test)]
mod recorded;

pub use check::Check;
pub use compare::{compare, render_table, report_json};
pub use egress::EgressProbe;
pub use error::VerifyError;
pub use parse::{capability_names, parse_probe, Limit, MountEntry, Observation, TmpfsWrite};
pub use probe::{probe_spec, verify_on, verify_placed, VerifyInputs, PROBE_PIDS, PROBE_SCRIPT};
