//! Proof on the live daemon that `agentc verify` passes for every fixture launch that can run
//! here: the run (or sandbox) and each seed launch of every valid fixture is made runnable with
//! `live::localize` (the test image, real paths, unique volume and network names, dummy
//! secrets), then verified through the same library entry point the `agentc verify` command
//! uses, `agentc::commands::verify::verify_launch` (the floor met, then `agentc_verify::verify_placed`): the probe replaces the agent, the kernel's
//! and `docker inspect`'s answers are compared with the spec, and every check must pass.
//!
//! Every launch is verified through the API backend and through the CLI backend, the two side
//! by side. Launches that cannot run here are skipped with a printed reason (image builds,
//! volume subpaths on a daemon older than API 1.45, which is what Decant mounts, bind sources
//! outside the virtual directories, absent devices, secrets the docker CLI reads for itself).
//! Two kinds of launch are held to a different, still exact, expectation:
//! - a spec that asks for what the daemon silently changes ([`unhonoured`]: a CPU quota that
//!   truncates to none, a `/dev/shm` size that tmpfs rounds up) must fail exactly the predicted
//!   checks with the predicted values; `fixtures/valid/sandbox-limits-boundaries.toml` is one,
//!   and is the proof that verify fails on a real disagreement;
//! - a pids limit below [`PROBE_PIDS`] must be refused by verify before anything is created.
//!
//! Launches behind the egress proxy get verify's egress checks with `egress.allowed` skipped
//! (`EgressProbe::Skip`): the fixtures allow real internet hosts, and no check may reach
//! beyond the proxy verify creates. Their `egress.host-path` row (verify listens on the outside
//! network's gateway, the test's own network) must pass, except under
//! `egress.allow_net_capabilities`, where it must fail.
//!
//! Leaks: a `LeakGuard` per backend (containers labelled with its profile, its volumes) and a
//! check that no network of the run is left.
//!
//! Needs the daemon: skips with a printed reason without one, fails instead when
//! `AGENTC_REQUIRE_DOCKER=1`.

use std::collections::BTreeMap;
use std::time::Instant;

use agentc::cli::BackendArg;
use agentc::commands::verify::verify_launch;
use agentc_conformance::fixtures::{self, fixture_files, load_fixture};
use agentc_conformance::image::ensure_test_image;
use agentc_conformance::live::{
    daemon_api_version, daemon_cpus, docker, localize, require_daemon, LeakGuard, LocalMachine,
    Localized, REQUIRE_DOCKER_VAR,
};
use agentc_egress::image::ProxyExecutable;
use agentc_policy::Hinted;
use agentc_policy::{Action, LaunchSpec};
use agentc_verify::{render_table, Check, EgressProbe, PROBE_PIDS};

/// One fixture launch that can run here.
struct Runnable {
    /// `fixtures/valid/NAME.toml LABEL`.
    launch: String,
    spec: LaunchSpec,
    /// Localized for the api backend's pass.
    api: Localized,
    /// Localized for the cli backend's pass, with its own names.
    cli: Localized,
}

impl Runnable {
    fn localized(&self, backend: BackendArg) -> &Localized {
        match backend {
            BackendArg::Api | BackendArg::Auto => &self.api,
            BackendArg::Cli => &self.cli,
        }
    }
}

/// What went wrong with one launch through one backend.
struct Failed {
    launch: String,
    backend: &'static str,
    /// The rendered table, or verify's error.
    report: String,
}

/// Why a launch is skipped, grouped for the summary.
fn skip_group(reason: &str) -> &'static str {
    if reason.contains("image build") {
        "image build"
    } else if reason.contains("subpath") {
        "volume subpath (engine api 1.45)"
    } else if reason.contains("outside the virtual") {
        "bind source outside the virtual directories"
    } else if reason.contains("device") {
        "device absent here"
    } else if reason.contains("docker cli itself") {
        "secret read by the docker cli"
    } else if reason.contains("does not resolve") {
        "does not resolve"
    } else {
        "other"
    }
}

#[test]
fn live_verify_passes_for_every_runnable_fixture_through_both_backends() {
    let _turn = agentc_conformance::turn::turn(file!());
    let test = "live_verify_passes_for_every_runnable_fixture_through_both_backends";
    if !require_daemon(test) {
        return;
    }
    let image = match ensure_test_image() {
        Ok(tag) => tag,
        Err(reason) => return skip_or_fail(test, &reason),
    };
    let workspace = tempfile::tempdir().expect("temporary workspace");
    let home = tempfile::tempdir().expect("temporary home");
    let machine = LocalMachine {
        image,
        workspace: workspace.path().to_path_buf(),
        home: home.path().to_path_buf(),
        api_version: daemon_api_version().expect("the daemon reports its api version"),
        host_cpus: daemon_cpus().expect("the daemon reports its cpu count"),
    };

    // One profile label and name suffix per backend (they run side by side), each watched by a
    // guard; each launch removes its volumes and networks itself (verify removes its
    // container), and the guards check at the end.
    let unique = |backend: &str| format!("lvfy{}{backend}", std::process::id());
    let guards = [
        LeakGuard::new(test, &unique("api")),
        LeakGuard::new(test, &unique("cli")),
    ];
    let mut runnable = Vec::new();
    let mut skips: Vec<(String, String)> = Vec::new();
    let mut adjustments = Vec::new();
    for file in fixture_files("valid") {
        let loaded = load_fixture(&file).expect("valid fixture loads");
        for launch in fixtures::launches(&loaded) {
            let name = format!("{} {}", fixtures::display_name(&file), launch.label);
            let spec = match fixtures::resolve(&loaded, &launch) {
                Ok(spec) => spec,
                Err(error) => {
                    skips.push((
                        name,
                        format!(
                            "does not resolve with the virtual inputs: {}",
                            error.with_hint()
                        ),
                    ));
                    continue;
                }
            };
            let index = runnable.len();
            let local = |backend: &str| {
                localize(&spec, &machine, &unique(backend)).map(|mut localized| {
                    // A unique container name: the probe is `NAME-verify`, and several
                    // fixtures name their sandbox alike.
                    localized.container.name = Some(format!("{}-{index}", unique(backend)));
                    localized
                })
            };
            match (local("api"), local("cli")) {
                (Ok(api), Ok(cli)) => {
                    adjustments.extend(
                        api.adjustments
                            .iter()
                            .map(|adjustment| format!("{name}: {adjustment}")),
                    );
                    runnable.push(Runnable {
                        launch: name,
                        spec,
                        api,
                        cli,
                    });
                }
                (Err(reason), _) | (_, Err(reason)) => skips.push((name, reason)),
            }
        }
    }

    let mut by_launch = BTreeMap::<&str, usize>::new();
    for case in &runnable {
        let label = case.launch.rsplit(' ').next().unwrap_or_default();
        *by_launch
            .entry(if label.starts_with("seed-") {
                "seed"
            } else {
                label
            })
            .or_default() += 1;
    }
    println!("runnable launches by kind: {by_launch:?}");

    // The two backends run side by side (two probes at a time); each keeps fixture order.
    let started = Instant::now();
    let runs: Vec<BackendRun> = std::thread::scope(|scope| {
        let threads: Vec<_> = [(BackendArg::Api, "api"), (BackendArg::Cli, "cli")]
            .into_iter()
            .map(|(backend, label)| {
                let runnable = &runnable;
                scope.spawn(move || run_backend(runnable, backend, label))
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| thread.join().expect("backend thread"))
            .collect()
    });
    let mut failures = Vec::new();
    let mut caught = 0;
    let mut egress_verified = Vec::new();
    for run in runs {
        println!(
            "{}: {} launches verified ({} with egress checks), {} not observable, {} disagreements of the daemon caught ({} checks, {:.1}s)",
            run.label, run.verified, run.egress, run.unobservable.len(), run.caught.len(), run.checks, run.seconds
        );
        egress_verified.push((run.label, run.egress));
        for (launch, why) in &run.unobservable {
            println!("  not observable: {launch}: {why}");
        }
        for (launch, table) in &run.caught {
            println!("  caught as predicted: {launch}:\n{table}");
        }
        caught += run.caught.len();
        failures.extend(run.failures);
    }
    println!(
        "{} runnable launches, both backends in {:.1}s",
        runnable.len(),
        started.elapsed().as_secs_f64()
    );
    println!("adjusted to fit this machine:");
    for adjustment in &adjustments {
        println!("  {adjustment}");
    }
    let mut groups = BTreeMap::<&str, usize>::new();
    for (_, reason) in &skips {
        *groups.entry(skip_group(reason)).or_default() += 1;
    }
    println!("skipped {} launches: {groups:?}", skips.len());
    for (launch, reason) in &skips {
        println!("  {launch}: {reason}");
    }
    for failure in &failures {
        println!(
            "FAILED {} through the {} backend:\n{}",
            failure.launch, failure.backend, failure.report
        );
    }
    for backend in ["api", "cli"] {
        let left = networks_of(&unique(backend));
        for network in &left {
            let _ = docker(&["network", "rm", network]);
        }
        assert!(left.is_empty(), "{backend}: networks left behind: {left:?}");
    }
    for guard in guards {
        guard.finish();
    }
    assert!(
        failures.is_empty(),
        "verify failed for {} launches (tables printed above): {:?}",
        failures.len(),
        failures
            .iter()
            .map(|failure| format!("{} ({})", failure.launch, failure.backend))
            .collect::<Vec<_>>()
    );
    assert!(
        runnable.len() >= 20,
        "only {} launches could run here",
        runnable.len()
    );
    assert_eq!(
        groups.get("other"),
        None,
        "unexpected skip reasons: {skips:?}"
    );
    // The fixture at the limits' boundaries asks for what the daemon cannot honour: verify
    // catching it through both backends is the proof that it fails on a real disagreement.
    assert_eq!(caught, 2, "sandbox-limits-boundaries through both backends");
    for (backend, egress) in egress_verified {
        assert!(
            egress > 0,
            "{backend}: no launch behind the egress proxy was verified"
        );
    }
}

/// What one backend's pass over the runnable launches found.
struct BackendRun {
    label: &'static str,
    /// Launches whose every check passed.
    verified: usize,
    /// Launches whose spec asks for what the daemon silently changes, with verify's table: the
    /// failed checks are exactly the predicted ones.
    caught: Vec<(String, String)>,
    /// Launches verify refuses to observe, with its reason.
    unobservable: Vec<(String, String)>,
    failures: Vec<Failed>,
    checks: usize,
    /// Launches behind the egress proxy whose egress checks ran.
    egress: usize,
    seconds: f64,
}

/// Verifies every runnable launch through one backend, in order.
fn run_backend(runnable: &[Runnable], backend: BackendArg, label: &'static str) -> BackendRun {
    let started = Instant::now();
    let mut run = BackendRun {
        label,
        verified: 0,
        caught: Vec::new(),
        unobservable: Vec::new(),
        failures: Vec::new(),
        checks: 0,
        egress: 0,
        seconds: 0.0,
    };
    for case in runnable {
        let fail = |report: String| Failed {
            launch: case.launch.clone(),
            backend: label,
            report,
        };
        let container = &case.localized(backend).container;
        let pids_limit = container.resources.pids_limit;
        let result = verify_one(case, backend);
        if pids_limit.is_some_and(|limit| limit < PROBE_PIDS) {
            // verify must refuse before it creates anything, and say why.
            match result {
                Err(error) if error.contains("leaves the probe no process") => {
                    run.unobservable.push((case.launch.clone(), error))
                }
                Err(error) => run
                    .failures
                    .push(fail(format!("unexpected error: {error}\n"))),
                Ok(checks) => run.failures.push(fail(format!(
                    "verify ran a probe under pids_limit {pids_limit:?}:\n{}",
                    render_table(&checks)
                ))),
            }
            continue;
        }
        let checks = match result {
            Ok(checks) => checks,
            Err(error) => {
                run.failures.push(fail(format!("error: {error}\n")));
                continue;
            }
        };
        run.checks += checks.len();
        if container.egress.is_some() {
            // Behind the egress proxy: every egress check ran, and `egress.allowed`, the one
            // that would reach beyond the proxy (to a real host here), was skipped.
            let egress: Vec<(&str, bool)> = checks
                .iter()
                .filter(|check| check.what.starts_with("egress."))
                .map(|check| (check.what.as_str(), check.skipped))
                .collect();
            // Behind a proxy that holds keys, its credential checks too (neither reaches
            // beyond the proxy).
            let held = container
                .egress
                .as_ref()
                .is_some_and(|egress| !egress.credentials.is_empty());
            let credential_checks: &[&str] = if held {
                &agentc_egress::probe::credentials::CREDENTIAL_CHECKS
            } else {
                &[]
            };
            let expected: Vec<(&str, bool)> = agentc_egress::probe::CHECKS
                .iter()
                .chain(credential_checks)
                .map(|name| (*name, *name == "egress.allowed"))
                .chain([(agentc_egress::host_path::CHECK, false)])
                .collect();
            if egress != expected {
                run.failures.push(fail(format!(
                    "{}the egress checks were not as expected: {egress:?}\n",
                    render_table(&checks)
                )));
                continue;
            }
            run.egress += 1;
        }
        let predicted = unhonoured(container);
        // Under egress.allow_net_capabilities the host path is open: its row must fail.
        let hatch = container.egress.is_some()
            && agentc_policy::NET_CAPABILITIES
                .iter()
                .any(|capability| container.cap_add.contains(capability));
        let host_path = agentc_egress::host_path::CHECK;
        if hatch
            && checks
                .iter()
                .any(|check| check.what == host_path && check.ok)
        {
            run.failures.push(fail(format!(
                "{}{host_path} passed, but the sandbox holds NET_ADMIN or NET_RAW\n",
                render_table(&checks)
            )));
            continue;
        }
        let failed: Vec<(String, String)> = checks
            .iter()
            .filter(|check| !check.ok)
            .filter(|check| !(hatch && check.what == host_path))
            .map(|check| (check.what.clone(), check.seen.clone()))
            .collect();
        if failed == predicted {
            if predicted.is_empty() {
                run.verified += 1;
            } else {
                run.caught
                    .push((case.launch.clone(), render_table(&checks)));
            }
        } else {
            run.failures.push(fail(format!(
                "{}predicted failures (what the daemon cannot honour): {predicted:?}\n",
                render_table(&checks)
            )));
        }
    }
    run.seconds = started.elapsed().as_secs_f64();
    run
}

/// The checks verify must fail, as (check, seen), because the spec asks for what the daemon and
/// kernel silently change; empty for a spec they honour.
///
/// - `--cpus` below 0.00001: the daemon writes the quota `NanoCPUs * 100000us / 1e9`, which
///   truncates to 0, and a zero quota means no limit (the spec's limit silently vanishes).
/// - a `/dev/shm` size that is not a whole number of 4 KiB pages: tmpfs rounds it up.
fn unhonoured(container: &agentc_policy::ContainerSpec) -> Vec<(String, String)> {
    let mut checks = Vec::new();
    let resources = &container.resources;
    if resources.nano_cpus.is_some_and(|nanos| nanos < 10_000) {
        checks.push(("cpu quota (nano cpus)".to_string(), "unlimited".to_string()));
    }
    if let Some(size) = resources.shm_size_bytes.filter(|size| size % PAGE != 0) {
        checks.push((
            "/dev/shm size (bytes)".to_string(),
            size.div_ceil(PAGE).saturating_mul(PAGE).to_string(),
        ));
    }
    checks
}

/// The page size tmpfs rounds to (x86_64, arm64 with 4 KiB pages).
const PAGE: u64 = 4096;

/// Verifies one launch through `backend`, with the networks it joins created for it and the
/// volumes the daemon made for it removed afterwards.
fn verify_one(case: &Runnable, backend: BackendArg) -> Result<Vec<Check>, String> {
    let localized = case.localized(backend);
    let mut created = Vec::new();
    let mut result = Ok(Vec::new());
    for network in &localized.networks {
        match docker(&["network", "create", network]) {
            Ok(_) => created.push(network.as_str()),
            Err(error) => {
                result = Err(error);
                break;
            }
        }
    }
    if result.is_ok() {
        let spec = LaunchSpec {
            action: Action::Container(Box::new(localized.container.clone())),
            ..case.spec.clone()
        };
        let env: BTreeMap<String, String> = localized.secrets.iter().cloned().collect();
        // `none`: the fixtures allow real internet hosts; no check may reach beyond the proxy.
        // The egress proxy of allowlists enforced outside is an image of the agentc binary,
        // not of this test executable.
        let proxy = ProxyExecutable::new(agentc_conformance::binary::agentc_binary());
        result = verify_launch(&spec, backend, &env, false, &EgressProbe::Skip, &proxy)
            .map_err(|failure| failure.message);
    }
    // Clean up whatever happened; the first error wins.
    let mut cleanup = Vec::new();
    for network in created {
        cleanup.push(docker(&["network", "rm", network]));
    }
    if !localized.volumes.is_empty() {
        let mut args = vec!["volume", "rm", "--force"];
        args.extend(localized.volumes.iter().map(String::as_str));
        cleanup.push(docker(&args));
    }
    let checks = result?;
    cleanup.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok(checks)
}

/// Networks whose name ends with `-{unique}` (what [`localize`] names them).
fn networks_of(unique: &str) -> Vec<String> {
    let suffix = format!("-{unique}");
    docker(&["network", "ls", "--format", "{{.Name}}"])
        .unwrap_or_default()
        .lines()
        .filter(|name| name.ends_with(&suffix))
        .map(str::to_string)
        .collect()
}

fn skip_or_fail(test: &str, reason: &str) {
    if std::env::var(REQUIRE_DOCKER_VAR).as_deref() == Ok("1") {
        panic!("{test}: {REQUIRE_DOCKER_VAR}=1 but {reason}");
    }
    eprintln!("skipping {test}: {reason}");
}

#[test]
fn unhonoured_limits_are_predicted_from_the_spec() {
    let _turn = agentc_conformance::turn::turn(file!());
    let file = fixtures::fixtures_dir().join("valid/sandbox-limits-boundaries.toml");
    let loaded = load_fixture(&file).unwrap();
    let launch = &fixtures::launches(&loaded)[0];
    let spec = fixtures::resolve(&loaded, launch).unwrap();
    let Action::Container(mut container) = spec.action else {
        panic!("a container launch");
    };
    assert_eq!(
        unhonoured(&container),
        vec![("/dev/shm size (bytes)".to_string(), "4096".to_string())]
    );
    container.resources.nano_cpus = Some(10_000);
    container.resources.shm_size_bytes = Some(8192);
    assert_eq!(unhonoured(&container), Vec::new());
    container.resources.shm_size_bytes = Some(4097);
    assert_eq!(unhonoured(&container)[0].1, "8192");
}

#[test]
fn skip_reasons_fall_into_named_groups() {
    let _turn = agentc_conformance::turn::turn(file!());
    assert_eq!(
        skip_group("an image build: no container to create"),
        "image build"
    );
    assert_eq!(
        skip_group("mount /x uses a volume subpath, which needs engine api 1.45"),
        "volume subpath (engine api 1.45)"
    );
    assert_eq!(skip_group("something new"), "other");
}
