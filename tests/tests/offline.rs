//! The conformance tests that need no engine, one module per file: the docker CLI referee's
//! judgement of both renderers (fixtures, generated profiles, the rules), hostile input,
//! secrets, the Kubernetes renderings, the stand-in engine's fan-out, and the architecture's
//! rules. They run in parallel with one another.

mod architecture;
mod equivalence;
mod equivalence_fixtures;
mod equivalence_proptest;
mod fanout;
mod fixtures;
mod hostile;
mod k8s;
mod referee_rules;
mod secrets;
