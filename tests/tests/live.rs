//! The conformance tests against a real engine, one module per file: live equivalence of both
//! backends, faults, gVisor, Podman (and `podman kube play`), a published port, sessions and
//! verify. Each skips with a printed reason without its engine, and fails instead under
//! `AGENTC_REQUIRE_DOCKER=1`. One file's tests run in parallel with one another, never with
//! another file's (`agentc_conformance::turn`).

mod live_equivalence;
mod live_faults;
mod live_gvisor;
mod live_podman;
mod live_port;
mod live_sessions;
mod live_verify;
