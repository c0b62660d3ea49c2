//! How long `agentc validate`, `render` and `explain` spend in the libraries: load and validate
//! a profile, resolve its launch, render it through both backends, explain it; step by step for
//! three profiles, and the whole pipeline (`pipeline/FIXTURE`) for every valid fixture's run.
//!
//! `cargo bench -p agentc-conformance --bench render`; `scripts/bench.sh` times the whole binary
//! with hyperfine and reports its peak memory.

use criterion::{criterion_group, criterion_main, Criterion};

use agentc_conformance::fixtures::{self, FixtureLaunch};

const PROFILES: &[&str] = &["claude-minimal", "claude-everything", "sandbox-pentest"];

fn bench(criterion: &mut Criterion) {
    for name in PROFILES {
        let path = fixtures::fixtures_dir()
            .join("valid")
            .join(format!("{name}.toml"));
        let text = std::fs::read_to_string(&path).expect("fixture");
        let file = fixtures::display_name(&path);
        let launch = FixtureLaunch {
            label: "run".to_string(),
            inputs: fixtures::inputs(agentc_policy::LaunchKind::Run),
        };
        criterion.bench_function(&format!("{name}/load"), |bencher| {
            bencher.iter(|| agentc_policy::load(&file, &text).expect("valid"))
        });
        let loaded = agentc_policy::load(&file, &text).expect("valid");
        criterion.bench_function(&format!("{name}/resolve"), |bencher| {
            bencher.iter(|| fixtures::resolve(&loaded, &launch).expect("resolves"))
        });
        let spec = fixtures::resolve(&loaded, &launch).expect("resolves");
        criterion.bench_function(&format!("{name}/render-cli"), |bencher| {
            bencher.iter(|| agentc_backend_cli::render_argv(&spec).expect("renders"))
        });
        criterion.bench_function(&format!("{name}/render-api"), |bencher| {
            bencher.iter(|| agentc_backend_api::render_json(&spec).expect("renders"))
        });
        criterion.bench_function(&format!("{name}/explain"), |bencher| {
            bencher.iter(|| agentc_policy::explain(&loaded, &spec))
        });
    }
}

/// The whole offline pipeline of `agentc explain`/`render` for each valid fixture's run
/// launch: load and validate the text, resolve, render through both backends, explain.
fn pipeline(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("pipeline");
    group
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1))
        .sample_size(30);
    for path in fixtures::fixture_files("valid") {
        let text = std::fs::read_to_string(&path).expect("fixture");
        let file = fixtures::display_name(&path);
        let Ok(loaded) = agentc_policy::load(&file, &text) else {
            continue;
        };
        let Some(launch) = fixtures::launches(&loaded).into_iter().next() else {
            continue;
        };
        if fixtures::resolve(&loaded, &launch).is_err() {
            continue;
        }
        let name = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        group.bench_function(&name, |bencher| {
            bencher.iter(|| {
                let loaded = agentc_policy::load(&file, &text).expect("valid");
                let spec = fixtures::resolve(&loaded, &launch).expect("resolves");
                let _ = agentc_backend_cli::render_argv(&spec);
                let _ = agentc_backend_api::render_json(&spec);
                agentc_policy::explain(&loaded, &spec)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench, pipeline);
criterion_main!(benches);
