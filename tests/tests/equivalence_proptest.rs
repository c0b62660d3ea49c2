//! Generated profiles say the same thing through both backends, with the real docker CLI as
//! referee.
//!
//! Each case is a whole profile written as TOML ([`agentc_conformance::strategies`]): every
//! agent and egress mode, mounts whose paths hold commas, quotes, `=`, colons, spaces, unicode
//! and leading dashes, environment values with `=` and quotes, commands with newlines, and
//! resources and ports at their edges. The profile goes through `agentc_policy::load` and
//! `resolve` (virtual machine inputs, every generated source exists). Then:
//! - a profile the policy rejects is counted and skipped (most must be accepted);
//! - for every launch of an accepted profile, both backends render it, or both refuse it
//!   with an error naming the field; one backend refusing alone is a failure;
//! - a launch both render must be equivalent through [`Referee::judge`].
//!
//! At least 256 cases (`PROPTEST_CASES` may raise it). Failing cases are kept in
//! `tests/proptest-regressions/equivalence_proptest.txt` and replayed first; each one also
//! becomes a fixture `fixtures/valid/regression-*.toml`.
//!
//! Needs the docker CLI (not a daemon); skips with a printed reason without it, fails instead
//! when `AGENTC_REQUIRE_DOCKER=1`.

use agentc_policy::Hinted;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Instant;

use agentc_conformance::referee::{docker_cli_version, require_docker_cli, Referee};
use agentc_conformance::strategies::{profile_case, ProfileCase, VirtualSources};
use agentc_policy::{Action, LaunchSpec};
use proptest::test_runner::{
    Config as ProptestConfig, FileFailurePersistence, TestCaseError, TestError, TestRunner,
};

/// Where failing cases are kept (in the repository, replayed before new cases).
const REGRESSIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/proptest-regressions/equivalence_proptest.txt"
);

/// The fewest cases a run generates.
const MIN_CASES: u32 = 256;

#[derive(Debug, Default)]
struct Counts {
    cases: usize,
    accepted: usize,
    rejected: BTreeMap<String, usize>,
    judged: BTreeMap<&'static str, usize>,
    refused_by_both: BTreeMap<String, usize>,
    agents: BTreeMap<&'static str, usize>,
    egress: BTreeMap<&'static str, usize>,
    /// Launches judged that run docker's init (`--init`).
    with_init: usize,
}

impl Counts {
    /// Adds another worker's counts to these.
    fn merge(&mut self, other: Counts) {
        fn add<K: Ord>(into: &mut BTreeMap<K, usize>, from: BTreeMap<K, usize>) {
            for (key, count) in from {
                *into.entry(key).or_default() += count;
            }
        }
        self.cases += other.cases;
        self.accepted += other.accepted;
        self.with_init += other.with_init;
        add(&mut self.rejected, other.rejected);
        add(&mut self.judged, other.judged);
        add(&mut self.refused_by_both, other.refused_by_both);
        add(&mut self.agents, other.agents);
        add(&mut self.egress, other.egress);
    }

    /// One line for the test's output.
    fn summary(&self) -> String {
        let rejected: usize = self.rejected.values().sum();
        let judged: usize = self.judged.values().sum();
        format!(
            "{} accepted, {rejected} rejected by the policy {:?}; {judged} launches judged \
             equivalent {:?} ({} with --init); {} launches refused by both backends {:?}; \
             agents {:?}; egress {:?}",
            self.accepted,
            self.rejected,
            self.judged,
            self.with_init,
            self.refused_by_both.values().sum::<usize>(),
            self.refused_by_both,
            self.agents,
            self.egress,
        )
    }

    /// The coverage every run must reach: most profiles valid, every agent, egress mode and
    /// launch kind seen, and at least one launch with `--init`.
    fn assert_coverage(&self) {
        assert!(
            self.accepted * 4 >= self.cases * 3,
            "most generated profiles must be valid: {} of {} accepted; rejections: {:?}",
            self.accepted,
            self.cases,
            self.rejected
        );
        assert!(self.with_init > 0, "no launch with --init was judged");
        for agent in ["claude-code", "opencode", "codex", "hermes", "custom"] {
            assert!(
                self.agents.contains_key(agent),
                "no accepted {agent} profile: {:?}",
                self.agents
            );
        }
        for egress in ["deny", "allowlist", "unrestricted", "gateway"] {
            assert!(
                self.egress.contains_key(egress),
                "no accepted {egress} profile: {:?}",
                self.egress
            );
        }
        for kind in ["run", "sandbox", "seed", "decant"] {
            assert!(
                self.judged.contains_key(kind),
                "no {kind} launch judged: {:?}",
                self.judged
            );
        }
    }
}

/// The field a policy error names (`resources.memory` in
/// `generated.toml:4:10: resources.memory: ...`), or its first words.
fn error_field(message: &str) -> String {
    let first = message.lines().next().unwrap_or_default();
    let parts: Vec<&str> = first.split(": ").collect();
    match parts.as_slice() {
        [_, field, ..] => field.to_string(),
        _ => first.chars().take(60).collect(),
    }
}

/// Renders one launch with both backends and judges it, or checks that both refuse it.
fn check_launch(
    referee: &Referee,
    case: &ProfileCase,
    label: &str,
    spec: &LaunchSpec,
    counts: &mut Counts,
) -> Result<(), TestCaseError> {
    let Action::Container(container) = &spec.action else {
        return Err(TestCaseError::fail(format!(
            "{label}: not a container launch"
        )));
    };
    let cli = agentc_backend_cli::render_argv(spec);
    let api = agentc_backend_api::render_create(container);
    match (&cli, &api) {
        (Ok(_), Ok(_)) => {}
        (Err(cli), Err(api)) => {
            // Both refuse: fine when both name the same field.
            if cli.field() != api.field() {
                return Err(TestCaseError::fail(format!(
                    "{label}: both backends refuse, naming different fields\n  cli: {}\n  api: {}\nprofile:\n{}",
                    cli.with_hint(),
                    api.with_hint(),
                    case.toml
                )));
            }
            *counts
                .refused_by_both
                .entry(cli.field().to_string())
                .or_default() += 1;
            return Ok(());
        }
        (Err(error), Ok(_)) => {
            return Err(TestCaseError::fail(format!(
                "{label}: only the cli backend refuses: {error}\nprofile:\n{}",
                case.toml
            )))
        }
        (Ok(_), Err(error)) => {
            return Err(TestCaseError::fail(format!(
                "{label}: only the api backend refuses: {}\nprofile:\n{}",
                error.with_hint(),
                case.toml
            )))
        }
    }
    let verdict = referee.judge(spec, &[]).map_err(|error| {
        TestCaseError::fail(format!(
            "{label}: the referee could not judge it: {error}\nprofile:\n{}",
            case.toml
        ))
    })?;
    if !verdict.is_equivalent() {
        return Err(TestCaseError::fail(format!(
            "{label} ({}): the backends disagree\n{}\nprofile:\n{}\nenv: {:?}\nagent args: {:?}",
            spec.kind.as_str(),
            verdict.explain(),
            case.toml,
            case.env,
            case.agent_args
        )));
    }
    *counts.judged.entry(spec.kind.as_str()).or_default() += 1;
    if matches!(&spec.action, agentc_policy::Action::Container(container) if container.init) {
        counts.with_init += 1;
    }
    Ok(())
}

fn check_case(
    referee: &Referee,
    case: &ProfileCase,
    counts: &mut Counts,
) -> Result<(), TestCaseError> {
    counts.cases += 1;
    let loaded = match agentc_policy::load("generated.toml", &case.toml) {
        Ok(loaded) => loaded,
        Err(error) => {
            *counts
                .rejected
                .entry(error_field(&error.with_hint().to_string()))
                .or_default() += 1;
            return Ok(());
        }
    };
    let mut specs = Vec::new();
    for (label, inputs) in case.launches() {
        match agentc_policy::resolve(&loaded, &inputs, &VirtualSources) {
            Ok(spec) => specs.push((label, spec)),
            Err(error) => {
                *counts
                    .rejected
                    .entry(format!(
                        "{label}: {}",
                        error_field(&error.with_hint().to_string())
                    ))
                    .or_default() += 1;
                return Ok(());
            }
        }
    }
    counts.accepted += 1;
    *counts.agents.entry(case.agent.as_str()).or_default() += 1;
    *counts.egress.entry(case.egress).or_default() += 1;
    for (label, spec) in &specs {
        check_launch(referee, case, label, spec, counts)?;
    }
    Ok(())
}

#[test]
fn generated_profiles_are_equivalent_through_the_referee() {
    let test = "generated_profiles_are_equivalent_through_the_referee";
    if !require_docker_cli(test) {
        return;
    }
    let version = docker_cli_version().unwrap_or_default();
    let referee = Referee::start().expect("start the referee");
    let defaults = ProptestConfig::default();
    let config = ProptestConfig {
        cases: defaults.cases.max(MIN_CASES),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(REGRESSIONS))),
        // Shrinking re-runs docker for every step; keep it bounded.
        max_shrink_iters: 256,
        ..defaults
    };
    let cases = config.cases;
    let started = Instant::now();
    let counts = RefCell::new(Counts::default());
    let mut runner = TestRunner::new(config);
    let result = runner.run(&profile_case(), |case| {
        check_case(&referee, &case, &mut counts.borrow_mut())
    });
    let counts = counts.into_inner();
    eprintln!(
        "{test}: docker CLI {version}: {} cases generated ({cases} configured) in {:.1}s: {}",
        counts.cases,
        started.elapsed().as_secs_f64(),
        counts.summary(),
    );
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, case)) => panic!(
            "a generated profile is not equivalent (kept in {REGRESSIONS}):\n{reason}\n\nminimal case: {case:#?}"
        ),
        Err(TestError::Abort(reason)) => panic!("proptest aborted: {reason}"),
    }
    counts.assert_coverage();
}

/// The fewest profiles [`profiles_at_scale_are_equivalent_through_the_referee`] judges
/// (`AGENTC_REFEREE_PROFILES` may raise it).
const MIN_PROFILES_AT_SCALE: usize = 10_000;

/// The seed of a run at scale: `AGENTC_REFEREE_SEED` (to replay one), else fresh.
fn scale_seed() -> u64 {
    std::env::var("AGENTC_REFEREE_SEED")
        .ok()
        .and_then(|seed| seed.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|elapsed| elapsed.as_nanos() as u64)
                .unwrap_or(0)
        })
}

/// `count` profiles generated from `seed`, the same ones for the same seed.
fn generate_cases(seed: u64, count: usize) -> Vec<ProfileCase> {
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::{RngAlgorithm, TestRng};
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(ProptestConfig::default(), rng);
    let strategy = profile_case();
    (0..count)
        .map(|_| {
            strategy
                .new_tree(&mut runner)
                .expect("the profile strategy always generates")
                .current()
        })
        .collect()
}

/// Ten thousand generated profiles per run, judged by worker threads that each drive the real
/// docker CLI against a referee of their own: the same judgement as
/// [`generated_profiles_are_equivalent_through_the_referee`], at a scale its serial, shrinking
/// runner cannot afford. A failure prints the seed (`AGENTC_REFEREE_SEED` replays the run) and
/// the profile, to be kept as a fixture.
#[test]
fn profiles_at_scale_are_equivalent_through_the_referee() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let test = "profiles_at_scale_are_equivalent_through_the_referee";
    if !require_docker_cli(test) {
        return;
    }
    let count = std::env::var("AGENTC_REFEREE_PROFILES")
        .ok()
        .and_then(|count| count.trim().parse().ok())
        .unwrap_or(MIN_PROFILES_AT_SCALE);
    let workers = std::env::var("AGENTC_REFEREE_WORKERS")
        .ok()
        .and_then(|workers| workers.trim().parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8)));
    let seed = scale_seed();
    let started = Instant::now();
    let cases = generate_cases(seed, count);
    let generated = started.elapsed();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let outcomes: Vec<(Counts, Vec<String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let referee = Referee::start().expect("start a referee");
                    let mut counts = Counts::default();
                    let mut failures = Vec::new();
                    while !failed.load(Ordering::Relaxed) {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(case) = cases.get(index) else { break };
                        if let Err(error) = check_case(&referee, case, &mut counts) {
                            failed.store(true, Ordering::Relaxed);
                            failures.push(format!("profile {index}: {error}"));
                        }
                    }
                    (counts, failures)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a referee worker panicked"))
            .collect()
    });
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for (worker_counts, worker_failures) in outcomes {
        counts.merge(worker_counts);
        failures.extend(worker_failures);
    }
    let elapsed = started.elapsed().as_secs_f64();
    eprintln!(
        "{test}: docker CLI {}: seed {seed}: {} profiles ({count} generated in {:.1}s) judged by \
         {workers} workers in {elapsed:.1}s ({:.1} ms a profile): {}",
        docker_cli_version().unwrap_or_default(),
        counts.cases,
        generated.as_secs_f64(),
        elapsed * 1000.0 / counts.cases.max(1) as f64,
        counts.summary(),
    );
    assert!(
        failures.is_empty(),
        "generated profiles are not equivalent (replay with AGENTC_REFEREE_SEED={seed} \
         AGENTC_REFEREE_PROFILES={count}; keep the profile as fixtures/valid/regression-*.toml):\n{}",
        failures.join("\n\n")
    );
    assert_eq!(counts.cases, count, "every generated profile is judged");
    counts.assert_coverage();
}

/// A spec with one hostile value, for [`refusals_are_symmetric`].
fn hostile(change: impl FnOnce(&mut agentc_policy::ContainerSpec)) -> LaunchSpec {
    let mut container = agentc_policy::ContainerSpec::empty("busybox");
    change(&mut container);
    LaunchSpec {
        kind: agentc_policy::LaunchKind::Run,
        profile: "hostile".into(),
        action: Action::Container(Box::new(container)),
        origins: Default::default(),
    }
}

/// Every value one backend could carry and the other not is refused by both, naming the same
/// field; values both carry render in both. Needs no docker.
#[test]
fn refusals_are_symmetric() {
    use agentc_policy::MAX_SIZE_BYTES;
    use agentc_policy::{
        Device, EnvValue, EnvVar, ExtraHost, HostTarget, LogConfig, Mount, MountSource, Network,
        Tmpfs,
    };
    let env = |name: &str, value: &str| EnvVar {
        name: name.into(),
        value: EnvValue::Literal {
            value: value.into(),
        },
    };
    let bind = |path: &str, target: &str| Mount {
        target: target.into(),
        read_only: false,
        source: MountSource::Bind { path: path.into() },
    };
    let cases: Vec<(&str, LaunchSpec, Option<&str>)> = vec![
        (
            "memory at the limit",
            hostile(|c| c.resources.memory_bytes = Some(MAX_SIZE_BYTES)),
            None,
        ),
        (
            "memory 2^53",
            hostile(|c| c.resources.memory_bytes = Some(1 << 53)),
            Some("resources.memory_bytes"),
        ),
        (
            "swap i64::MAX",
            hostile(|c| c.resources.memory_swap_bytes = Some(i64::MAX as u64)),
            Some("resources.memory_swap_bytes"),
        ),
        (
            "shm u64::MAX",
            hostile(|c| c.resources.shm_size_bytes = Some(u64::MAX)),
            Some("resources.shm_size_bytes"),
        ),
        (
            "cpus i64::MAX",
            hostile(|c| c.resources.nano_cpus = Some(i64::MAX as u64)),
            None,
        ),
        (
            "cpus u64::MAX",
            hostile(|c| c.resources.nano_cpus = Some(u64::MAX)),
            Some("resources.nano_cpus"),
        ),
        (
            "pids u32::MAX",
            hostile(|c| c.resources.pids_limit = Some(u32::MAX)),
            None,
        ),
        (
            "env name with =",
            hostile(|c| c.env = vec![env("A=B", "1")]),
            Some("env[0].name"),
        ),
        (
            "empty env name",
            hostile(|c| c.env = vec![env("", "1")]),
            Some("env[0].name"),
        ),
        (
            "env value with newline and =",
            hostile(|c| c.env = vec![env("A", "x=y\nz")]),
            None,
        ),
        (
            "env value with nul",
            hostile(|c| c.env = vec![env("A", "x\0")]),
            Some("env.A"),
        ),
        (
            "label key with =",
            hostile(|c| {
                c.labels.insert("a=b".into(), "v".into());
            }),
            Some("labels"),
        ),
        (
            "label key with space",
            hostile(|c| {
                c.labels.insert("a b".into(), "v".into());
            }),
            Some("labels"),
        ),
        (
            "label value with = and newline",
            hostile(|c| {
                c.labels.insert("a".into(), "x=y\nz".into());
            }),
            None,
        ),
        (
            "tmpfs with colon",
            hostile(|c| {
                c.tmpfs = vec![Tmpfs {
                    target: "/a:b".into(),
                    exec: true,
                }]
            }),
            Some("tmpfs[0].target"),
        ),
        (
            "device with colon",
            hostile(|c| {
                c.devices = vec![Device {
                    host_path: "/dev/a:b".into(),
                    container_path: "/dev/a".into(),
                    permissions: "r".into(),
                }]
            }),
            Some("devices[0].host_path"),
        ),
        (
            "device mode",
            hostile(|c| {
                c.devices = vec![Device {
                    host_path: "/dev/a".into(),
                    container_path: "/dev/a".into(),
                    permissions: "x".into(),
                }]
            }),
            Some("devices[0].permissions"),
        ),
        (
            "network with =",
            hostile(|c| c.network = Network::Named { name: "a=b".into() }),
            Some("network.name"),
        ),
        (
            "empty network",
            hostile(|c| {
                c.network = Network::Named {
                    name: String::new(),
                }
            }),
            Some("network.name"),
        ),
        (
            "extra host with colon",
            hostile(|c| {
                c.extra_hosts = vec![ExtraHost {
                    host: "a:b".into(),
                    target: HostTarget::HostGateway,
                }]
            }),
            Some("extra_hosts[0].host"),
        ),
        (
            "leading-dash image",
            hostile(|c| c.image = "-it".into()),
            Some("image"),
        ),
        (
            "empty image",
            hostile(|c| c.image = String::new()),
            Some("image"),
        ),
        (
            "leading-dash command",
            hostile(|c| c.command = vec!["--rm".into(), "-".into()]),
            None,
        ),
        (
            "mount target with CR LF",
            hostile(|c| c.mounts = vec![bind("/a", "/b\r\nc")]),
            Some("mounts[0].target"),
        ),
        (
            "mount source with CR LF",
            hostile(|c| c.mounts = vec![bind("/a\r\nb", "/b")]),
            Some("mounts[0].source.path"),
        ),
        (
            "mount with lone CR and LF",
            hostile(|c| c.mounts = vec![bind("/a\rb\nc", "/b\rc")]),
            None,
        ),
        (
            "relative mount source",
            hostile(|c| c.mounts = vec![bind("./a", "/b")]),
            Some("mounts[0].source.path"),
        ),
        (
            "odd mount paths",
            hostile(|c| c.mounts = vec![bind("/srv/-x,y=z:\"q\" ü", "/mnt/-x,y=z:\"q\" ü")]),
            None,
        ),
        (
            "log option key with =",
            hostile(|c| {
                c.log = Some(LogConfig {
                    driver: "json-file".into(),
                    options: [("a=b".to_string(), "1".to_string())].into(),
                })
            }),
            Some("log.options"),
        ),
        (
            "nul in user",
            hostile(|c| c.user = Some("a\0".into())),
            Some("user"),
        ),
    ];
    for (what, spec, refused) in cases {
        let Action::Container(container) = &spec.action else {
            unreachable!()
        };
        let cli = agentc_backend_cli::render_argv(&spec)
            .map_err(|e| (e.field().to_string(), e.with_hint().to_string()));
        let api = agentc_backend_api::render_create(container)
            .map_err(|e| (e.field().to_string(), e.with_hint().to_string()));
        match refused {
            None => {
                assert!(cli.is_ok(), "{what}: the cli backend refuses: {cli:?}");
                assert!(
                    api.is_ok(),
                    "{what}: the api backend refuses: {:?}",
                    api.err()
                );
            }
            Some(field) => {
                let (cli_field, cli_message) = cli.expect_err(what);
                let (api_field, api_message) = api
                    .err()
                    .unwrap_or_else(|| panic!("{what}: the api backend accepts it"));
                assert_eq!(cli_field, field, "{what}: {cli_message}");
                assert_eq!(api_field, field, "{what}: {api_message}");
                for message in [&cli_message, &api_message] {
                    assert!(message.contains("hint"), "{what}: {message}");
                    assert!(!message.contains('\0'), "{what}: {message}");
                }
            }
        }
    }
}
