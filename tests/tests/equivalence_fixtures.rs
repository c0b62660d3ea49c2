//! Every valid fixture, for every launch it supports, says the same thing through both
//! backends, with the real docker CLI as referee.
//!
//! Container launches (run or sandbox, each seed, Decant) go through [`Referee::judge`]: the
//! body the docker CLI sends for the CLI backend's argv and the API backend's body must have
//! the same canonical form. A build has no create body; for a build the CLI backend's
//! `docker build` argv and the API backend's classic build query must name the same tag,
//! Dockerfile, build arguments and labels (see [`assert_build_agrees`]).
//!
//! Needs the docker CLI (not a daemon); skips with a printed reason without it, fails instead
//! when `AGENTC_REQUIRE_DOCKER=1`.

use std::collections::BTreeMap;
use std::path::Path;

use agentc_conformance::fixtures;
use agentc_conformance::referee::{docker_cli_version, require_docker_cli, Referee, Verdict};
use agentc_policy::Hinted;
use agentc_policy::{Action, BuildSpec, EnvValue, LaunchSpec};
use serde_json::{json, Value};

/// What the CLI backend's `docker build` argv asks for, read back flag by flag.
#[derive(Debug, Default, PartialEq)]
struct BuildArgv {
    tag: Option<String>,
    force_rm: bool,
    file: Option<String>,
    build_args: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
    context: Option<String>,
}

/// Reads `docker build --tag=T [--force-rm] [--file=F] [--build-arg=K=V]... [--label=K=V]... CONTEXT`
/// the way docker's flag parser does: attached values, split at the first `=`.
fn parse_build_argv(argv: &[String]) -> Result<BuildArgv, String> {
    let rest = match argv {
        [docker, build, rest @ ..] if docker == "docker" && build == "build" => rest,
        _ => return Err(format!("not a docker build argv: {argv:?}")),
    };
    let mut parsed = BuildArgv::default();
    for (index, arg) in rest.iter().enumerate() {
        let pair = |value: &str| -> Result<(String, String), String> {
            value
                .split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| format!("{arg:?} has no `=`"))
        };
        if let Some(value) = arg.strip_prefix("--tag=") {
            parsed.tag = Some(value.to_string());
        } else if arg == "--force-rm" {
            parsed.force_rm = true;
        } else if let Some(value) = arg.strip_prefix("--file=") {
            parsed.file = Some(value.to_string());
        } else if let Some(value) = arg.strip_prefix("--build-arg=") {
            let (k, v) = pair(value)?;
            parsed.build_args.insert(k, v);
        } else if let Some(value) = arg.strip_prefix("--label=") {
            let (k, v) = pair(value)?;
            parsed.labels.insert(k, v);
        } else if arg.starts_with("--build-context=") {
            return Err("named build contexts have no classic build api equivalent".into());
        } else if index + 1 == rest.len() && !arg.starts_with('-') {
            parsed.context = Some(arg.clone());
        } else {
            return Err(format!("unexpected build argument {arg:?}"));
        }
    }
    Ok(parsed)
}

/// The build has no create body, so the referee cannot judge it. Instead the CLI argv and the
/// API backend's classic build query (`POST /build?t=&dockerfile=&buildargs=&labels=`, the
/// context sent as a tar body) must agree on every field both carry:
/// - `--tag` = `t`, `--force-rm` = `forcerm`;
/// - `--file` = the context joined with `dockerfile` (the CLI resolves `--file` against its own
///   working directory, so the CLI backend joins it; the query names it relative to the
///   context, `Dockerfile` by default, which is what the CLI sends when `--file` is absent);
/// - every `--build-arg` = `buildargs`, every `--label` = `labels`;
/// - the last argument = the context the API backend tars.
fn assert_build_agrees(name: &str, spec: &LaunchSpec, build: &BuildSpec) -> Result<(), String> {
    let argv = agentc_backend_cli::render_argv(spec).map_err(|e| format!("cli refused: {e}"))?;
    let api = agentc_backend_api::render_json(spec)
        .map_err(|e| format!("api refused: {}", e.with_hint()))?;
    let problems = build_disagreements(&argv, &api, &build.context)?;
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{name} build: the cli argv and the api build query disagree\n  {}\n  argv: {argv:?}\n  api: {api}",
            problems.join("\n  ")
        ))
    }
}

/// The fields on which a `docker build` argv and a rendered classic build request
/// (`{"query": {...}, "context": DIR}`) disagree, each with both values.
fn build_disagreements(argv: &[String], api: &Value, context: &str) -> Result<Vec<String>, String> {
    let cli = parse_build_argv(argv)?;
    let query = &api["query"];
    let mut problems = Vec::new();
    let mut check = |field: &str, cli_value: Value, api_value: &Value| {
        if &cli_value != api_value {
            problems.push(format!(
                "{field}:\n    cli: {cli_value}\n    api: {api_value}"
            ));
        }
    };
    check("tag", json!(cli.tag), &query["t"]);
    check("forcerm", json!(cli.force_rm), &query["forcerm"]);
    let cli_dockerfile = match &cli.file {
        Some(file) => Path::new(file)
            .strip_prefix(context)
            .map(|relative| relative.to_string_lossy().into_owned())
            .unwrap_or_else(|_| file.clone()),
        None => "Dockerfile".to_string(),
    };
    check("dockerfile", json!(cli_dockerfile), &query["dockerfile"]);
    let or_empty = |v: &Value| if v.is_null() { json!({}) } else { v.clone() };
    check(
        "buildargs",
        json!(cli.build_args),
        &or_empty(&query["buildargs"]),
    );
    check("labels", json!(cli.labels), &or_empty(&query["labels"]));
    check("context", json!(cli.context), &api["context"]);
    Ok(problems)
}

/// The variables the referee sets in the docker CLI's environment (see `Referee::create`).
const REFEREE_ENVIRONMENT: &[&str] = &["PATH"];

/// Whether every difference is a pass-through (secret) variable named like one the referee
/// sets for the docker CLI (`--env=PATH` would make the CLI copy the referee's own `PATH`):
/// the CLI sends `NAME=value`, the API body the bare `NAME`.
///
/// Sound because at launch both backends take that value from the caller's environment (the
/// CLI backend runs docker with it, the API backend substitutes it before creating), so they
/// agree; only the referee's environment differs from the caller's.
fn only_referee_environment_leaks(spec: &LaunchSpec, verdict: &Verdict) -> bool {
    let Action::Container(container) = &spec.action else {
        return false;
    };
    let leaked = |name: &str| {
        REFEREE_ENVIRONMENT.contains(&name)
            && container
                .env
                .iter()
                .any(|var| var.name == name && matches!(var.value, EnvValue::Secret { .. }))
    };
    !verdict.differences.is_empty()
        && verdict.differences.iter().all(|difference| {
            let cli = difference.cli.as_ref().and_then(Value::as_str);
            let api = difference.api.as_ref().and_then(Value::as_str);
            difference.path.starts_with("Env[")
                && matches!((cli, api), (Some(cli), Some(api))
                    if leaked(api) && cli.strip_prefix(api).is_some_and(|rest| rest.starts_with('=')))
        })
}

#[test]
fn every_valid_fixture_launch_is_equivalent_through_the_referee() {
    let test = "every_valid_fixture_launch_is_equivalent_through_the_referee";
    if !require_docker_cli(test) {
        return;
    }
    let version = docker_cli_version().unwrap_or_default();
    let referee = Referee::start().expect("start the referee");
    let mut judged = 0usize;
    let mut builds = 0usize;
    let mut egress = 0usize;
    let mut failures = Vec::new();
    let mut by_kind: BTreeMap<&'static str, usize> = BTreeMap::new();
    let files = fixtures::fixture_files("valid");
    for path in &files {
        let name = fixtures::display_name(path);
        let loaded = match fixtures::load_fixture(path) {
            Ok(loaded) => loaded,
            Err(error) => {
                failures.push(format!("{name} should be valid:\n{}", error.with_hint()));
                continue;
            }
        };
        for launch in fixtures::launches(&loaded) {
            let spec = match fixtures::resolve(&loaded, &launch) {
                Ok(spec) => spec,
                Err(error) => {
                    failures.push(format!(
                        "{name} {} should resolve:\n{}",
                        launch.label,
                        error.with_hint()
                    ));
                    continue;
                }
            };
            match &spec.action {
                Action::Build(build) => {
                    if let Err(problem) = assert_build_agrees(&name, &spec, build) {
                        failures.push(problem);
                    }
                    builds += 1;
                }
                Action::Container(container) => {
                    // The egress companion too: network create, proxy create, connect.
                    match referee.judge_egress(&spec) {
                        Ok(differences) if differences.is_empty() => {
                            if container.egress.is_some() {
                                egress += 1;
                            }
                        }
                        Ok(differences) => failures.push(format!(
                            "{name} {}: the egress companions disagree\n{}",
                            launch.label,
                            agentc_conformance::canonical::report(&differences)
                        )),
                        Err(error) => {
                            failures.push(format!("{name} {} egress: {error}", launch.label))
                        }
                    }
                    match referee.judge(&spec, &[]) {
                        Ok(verdict) if verdict.is_equivalent() => {
                            judged += 1;
                            *by_kind.entry(spec.kind.as_str()).or_default() += 1;
                        }
                        Ok(verdict) if only_referee_environment_leaks(&spec, &verdict) => {
                            eprintln!(
                            "{name} {}: equivalent except for pass-through variables the referee \
                             itself sets for the docker CLI: {:?}",
                            launch.label,
                            verdict.differences.iter().map(|d| &d.path).collect::<Vec<_>>()
                        );
                            judged += 1;
                            *by_kind.entry(spec.kind.as_str()).or_default() += 1;
                        }
                        Ok(verdict) => failures.push(format!(
                            "{name} {} ({}): the backends disagree\n{}",
                            launch.label,
                            spec.kind.as_str(),
                            verdict.explain()
                        )),
                        Err(error) => failures.push(format!(
                            "{name} {} ({}): {error}",
                            launch.label,
                            spec.kind.as_str()
                        )),
                    }
                }
            }
        }
    }
    eprintln!(
        "{test}: docker CLI {version}: {judged} container launches judged equivalent {by_kind:?}, \
         {builds} builds agree, {egress} egress companions agree, {} fixtures",
        files.len()
    );
    assert!(
        failures.is_empty(),
        "{} of the fixture launches are not equivalent:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    // Every kind of container launch was judged at least once.
    for kind in ["run", "sandbox", "seed", "decant"] {
        assert!(
            by_kind.get(kind).is_some_and(|count| *count > 0),
            "no {kind} launch among the fixtures: {by_kind:?}"
        );
    }
    assert!(builds > 0, "no build among the fixtures");
    assert!(egress > 0, "no egress companion among the fixtures");
    assert!(judged >= 50, "only {judged} launches judged");
}

#[test]
fn a_build_disagreement_is_reported() {
    // The build comparison is not vacuous: each changed field is caught and named.
    let path = fixtures::fixtures_dir().join("valid/sandbox-build.toml");
    let loaded = fixtures::load_fixture(&path).expect("valid fixture");
    let launch = fixtures::launches(&loaded)
        .into_iter()
        .find(|launch| launch.label == "build")
        .expect("sandbox-build has a build");
    let spec = fixtures::resolve(&loaded, &launch).expect("resolves");
    let Action::Build(build) = &spec.action else {
        panic!("a build spec");
    };
    assert_build_agrees("sandbox-build", &spec, build).expect("agrees");
    let argv = agentc_backend_cli::render_argv(&spec).expect("renders");
    let api = agentc_backend_api::render_json(&spec).expect("renders");
    let (options, context) = argv.split_at(argv.len() - 1);
    let with = |extra: &str| -> Vec<String> {
        let mut changed = options.to_vec();
        changed.push(extra.to_string());
        changed.extend(context.iter().cloned());
        changed
    };
    let fields = |argv: Vec<String>| -> Vec<String> {
        build_disagreements(&argv, &api, &build.context)
            .expect("parses")
            .iter()
            .map(|p| p.split(':').next().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(fields(argv.clone()), Vec::<String>::new());
    assert_eq!(fields(with("--label=extra=1")), ["labels"]);
    assert_eq!(fields(with("--build-arg=A=b")), ["buildargs"]);
    assert_eq!(fields(with("--tag=other:1")), ["tag"]);
    assert_eq!(fields(with("--file=/elsewhere/Dockerfile")), ["dockerfile"]);
    assert!(parse_build_argv(&["docker".into(), "run".into()]).is_err());
    assert!(parse_build_argv(&[
        "docker".into(),
        "build".into(),
        "--build-context=x=/y".into(),
        "/ctx".into()
    ])
    .is_err());
}
