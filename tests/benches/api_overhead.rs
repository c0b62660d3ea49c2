//! agentc's own time before the daemon receives the create request of an API launch, measured
//! with the referee's stand-in engine (`Referee::start_engine`), which answers at once and
//! records when each request arrives: the time from spawning `agentc run --backend api
//! --detach` to the arrival of its first request and of its `POST /containers/create`, and to
//! the process's exit; and which requests came before the create, on how many connections. Floors measured the same way: spawning `/bin/true`, and `agentc --version`.
//!
//! `AGENTC_BIN=target/release/agentc cargo bench -p agentc-conformance --bench api_overhead`
//! (`scripts/bench-launch.sh` builds the release binary and runs it); `AGENTC_RUNS` sets the
//! number of launches (default 200). Prints medians and the 10th and 90th percentiles, in ms.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentc_conformance::referee::Referee;

/// The binaries to measure: `AGENTC_BIN` (several separated by `:` alternate run by run, to
/// compare builds under the same load), else the workspace's release build.
fn agentc_bins() -> Vec<PathBuf> {
    match std::env::var("AGENTC_BIN") {
        Ok(bins) if !bins.is_empty() => bins.split(':').map(PathBuf::from).collect(),
        _ => vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/agentc")],
    }
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Median, 10th and 90th percentile.
fn summary(mut samples: Vec<f64>) -> String {
    samples.sort_by(f64::total_cmp);
    let at = |fraction: f64| samples[((samples.len() - 1) as f64 * fraction).round() as usize];
    format!(
        "median {:7.3} ms   p10 {:7.3}   p90 {:7.3}   (n={})",
        at(0.5),
        at(0.1),
        at(0.9),
        samples.len()
    )
}

fn spawn_to_exit(program: &PathBuf, args: &[&str]) -> f64 {
    let start = Instant::now();
    let status = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawns");
    let elapsed = start.elapsed();
    assert!(status.success(), "{} {args:?}: {status}", program.display());
    millis(elapsed)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and then this is
    // skipped, as is a run whose filter names another bench.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|arg| arg == "--bench")
        || args
            .iter()
            .any(|arg| !arg.starts_with('-') && !"api_overhead".contains(arg.as_str()))
    {
        return;
    }
    let bins = agentc_bins();
    for agentc in &bins {
        assert!(
            agentc.is_file(),
            "{} is missing\n  hint: cargo build --release -p agentc, or set AGENTC_BIN",
            agentc.display()
        );
    }
    let runs: usize = std::env::var("AGENTC_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(200);
    let referee = Referee::start_engine("1.41").expect("start the stand-in");
    let engine = referee.engine().expect("engine mode");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let profile = dir.path().join("bench-overhead.toml");
    std::fs::write(
        &profile,
        "name = \"bench-overhead\"\nagent = \"custom\"\n\n[image]\nref = \"agentc-bench/stand-in:1\"\n",
    )
    .expect("write the profile");
    let profile = profile.to_string_lossy().into_owned();
    let host = referee.docker_host();

    let mut samples: Vec<Samples> = bins.iter().map(|_| Samples::default()).collect();
    let mut truth = Vec::new();
    for run in 0..runs + 10 {
        for (agentc, samples) in bins.iter().zip(&mut samples) {
            engine.clear();
            let seen = referee.requests().len();
            let start = Instant::now();
            let output = Command::new(agentc)
                .args(["run", &profile, "--backend", "api", "--detach"])
                .env("DOCKER_HOST", &host)
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .output()
                .expect("agentc runs");
            let ended = start.elapsed();
            assert!(
                output.status.success(),
                "agentc run: {}\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
            let requests = &referee.requests()[seen..];
            let version_ms = spawn_to_exit(agentc, &["--version"]);
            if run < 10 {
                continue; // warm-up
            }
            let create = requests
                .iter()
                .position(|request| request.path.ends_with("/containers/create"))
                .expect("a create request");
            samples.before_create = requests[..create]
                .iter()
                .map(|request| format!("{} {}", request.method, request.path))
                .collect();
            samples.connections = requests
                .iter()
                .map(|request| request.connection)
                .collect::<std::collections::BTreeSet<_>>()
                .len();
            samples
                .first
                .push(millis(requests[0].arrived.duration_since(start)));
            samples
                .create
                .push(millis(requests[create].arrived.duration_since(start)));
            samples.exit.push(millis(ended));
            samples.version.push(version_ms);
        }
        let true_ms = spawn_to_exit(&PathBuf::from("/bin/true"), &[]);
        if run >= 10 {
            truth.push(true_ms);
        }
    }
    println!("agentc run --backend api --detach against the stand-in engine, spawn -> ...:");
    for (agentc, samples) in bins.iter().zip(samples) {
        println!("{}", agentc.display());
        println!(
            "  requests before the create: {:?}; connections: {}",
            samples.before_create, samples.connections
        );
        println!("  first request arrives     {}", summary(samples.first));
        println!("  create request arrives    {}", summary(samples.create));
        println!("  exit                      {}", summary(samples.exit));
        println!("  floor: agentc --version   {}", summary(samples.version));
    }
    println!("floor: /bin/true            {}", summary(truth));
}

/// One binary's measurements.
#[derive(Default)]
struct Samples {
    first: Vec<f64>,
    create: Vec<f64>,
    exit: Vec<f64>,
    version: Vec<f64>,
    before_create: Vec<String>,
    connections: usize,
}
