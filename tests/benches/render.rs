//! How long `agentc validate`, `render` and `explain` spend in the libraries: load and validate
//! a profile, resolve its launch, render it through both backends, explain it.
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

criterion_group!(benches, bench);
criterion_main!(benches);
