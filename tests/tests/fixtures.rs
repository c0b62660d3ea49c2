//! Every valid fixture, for every launch it supports, rendered through both backends and
//! explained; one reviewed snapshot each. Secret values never appear in any of it.

use agentc_conformance::fixtures::{self, FixtureLaunch};
use agentc_policy::Hinted;
use agentc_policy::{Action, EnvValue, LaunchSpec};

/// The four renderings of one launch, as one reviewable document.
fn render_all(loaded: &agentc_policy::LoadedProfile, spec: &LaunchSpec) -> String {
    let argv = agentc_backend_cli::render_argv(spec);
    let argv_section = match &argv {
        Ok(argv) => serde_json::to_string_pretty(argv).expect("argv is JSON"),
        Err(error) => format!("refused: {}", error.with_hint()),
    };
    let shell_section = match &argv {
        Ok(argv) => agentc_backend_cli::shell_line(argv),
        Err(_) => "refused".to_string(),
    };
    let api_section = match agentc_backend_api::render_json(spec) {
        Ok(value) => serde_json::to_string_pretty(&value).expect("body is JSON"),
        Err(error) => format!("refused: {}", error.with_hint()),
    };
    let explain = agentc_policy::explain(loaded, spec);
    format!(
        "## argv\n{argv_section}\n\n## shell\n{shell_section}\n\n## api\n{api_section}\n\n## explain\n{explain}"
    )
}

#[test]
fn every_valid_fixture_renders_through_both_backends() {
    let files = fixtures::fixture_files("valid");
    assert!(
        files.len() >= 30,
        "expected at least 30 valid fixtures, found {}",
        files.len()
    );
    let mut launches_seen = 0;
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let loaded = fixtures::load_fixture(&path).unwrap_or_else(|error| {
            panic!("{} should be valid:\n{}", path.display(), error.with_hint())
        });
        assert_eq!(
            loaded.profile.name, name,
            "fixture file names match profile names"
        );
        for FixtureLaunch { label, inputs } in fixtures::launches(&loaded) {
            let launch = FixtureLaunch {
                label: label.clone(),
                inputs,
            };
            let spec = fixtures::resolve(&loaded, &launch).unwrap_or_else(|error| {
                panic!("{name} {label} should resolve:\n{}", error.with_hint())
            });
            let argv = agentc_backend_cli::render_argv(&spec)
                .unwrap_or_else(|error| panic!("{name} {label}: cli backend refused: {error}"));
            assert_eq!(argv[0], "docker");
            let build = matches!(spec.action, Action::Build(_));
            if !build {
                agentc_backend_api::render_json(&spec).unwrap_or_else(|error| {
                    panic!("{name} {label}: api backend refused: {}", error.with_hint())
                });
            }
            insta::assert_snapshot!(format!("{name}__{label}"), render_all(&loaded, &spec));
            launches_seen += 1;
        }
    }
    assert!(launches_seen >= 30);
}

#[test]
fn secrets_are_passed_by_name_only() {
    for path in fixtures::fixture_files("valid") {
        let loaded = fixtures::load_fixture(&path).expect("valid fixture");
        for launch in fixtures::launches(&loaded) {
            let spec = fixtures::resolve(&loaded, &launch).expect("resolves");
            let Action::Container(container) = &spec.action else {
                continue;
            };
            for entry in &container.env {
                if let EnvValue::Secret { .. } = entry.value {
                    let argv = agentc_backend_cli::render_argv(&spec).expect("renders");
                    assert!(
                        argv.contains(&format!("--env={}", entry.name)),
                        "{}: secret {} is passed by name",
                        path.display(),
                        entry.name
                    );
                    let body = agentc_backend_api::render_json(&spec).expect("renders");
                    let env = &body["body"]["Env"];
                    assert!(
                        env.as_array()
                            .is_some_and(|env| env.iter().any(|e| e == &entry.name)),
                        "{}: secret {} is the bare name in the body: {env}",
                        path.display(),
                        entry.name
                    );
                }
            }
        }
    }
}
