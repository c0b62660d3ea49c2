//! Secret values never leave the launch path.
//!
//! For random secret names and values (provider API key, Langfuse public and secret keys, and
//! the content of a gateway key file), no byte sequence of a value appears in the spec, the
//! CLI argv, the shell line, `explain`, any renderer's output (the Kubernetes objects and their
//! explanation too), or an error raised next to the secret; only the API backend's run path
//! (`agentc_engine::resolve_env`) holds it. The same holds for the `agentc` binary's stdout and stderr of `validate`,
//! `render` and `explain` with the secrets in its process environment and `--verbose` on
//! (the step log names secrets, never their values; `crates/agentc/tests/launch.rs` checks the
//! log of a real launch through both backends).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use agentc_policy::Hinted;
use agentc_policy::{Action, LaunchKind, Owner, RealPaths, ResolveInputs};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// One draw: three variable names and four secret values.
#[derive(Debug, Clone)]
struct Secrets {
    provider_env: String,
    public_env: String,
    secret_env: String,
    provider_key: String,
    public_key: String,
    secret_key: String,
    key_file: String,
}

impl Secrets {
    fn values(&self) -> [(&'static str, &str); 4] {
        [
            ("provider key", &self.provider_key),
            ("langfuse public key", &self.public_key),
            ("langfuse secret key", &self.secret_key),
            ("gateway key file content", &self.key_file),
        ]
    }

    /// The process environment of a launch: the secrets and an unrelated variable.
    fn env(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (self.provider_env.clone(), self.provider_key.clone()),
            (self.public_env.clone(), self.public_key.clone()),
            (self.secret_env.clone(), self.secret_key.clone()),
            ("AGENTC_PIDS_LIMIT".to_string(), "256".to_string()),
        ])
    }
}

/// Environment names agentc never sets itself (the `S` prefix keeps them apart from
/// `ANTHROPIC_*`, `LANGFUSE_*`, `HTTP_PROXY` and the `AGENTC_*` overrides).
fn names() -> impl Strategy<Value = (String, String, String)> {
    ("S[A-Z0-9_]{3,16}", "S[A-Z0-9_]{3,16}", "S[A-Z0-9_]{3,16}")
        .prop_filter("names differ", |(a, b, c)| a != b && b != c && a != c)
}

/// Secret values: at least 8 characters of printable text, ASCII or any Unicode letter and
/// symbol (environment values cannot hold NUL, and leading or trailing spaces would only test
/// trimming).
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9+/=_.-]{8,48}",
        "[\\PC&&[^\\s]]{8,24}",
        "sk-[a-z]{2}-[A-Za-z0-9]{16,40}",
    ]
}

fn secrets() -> impl Strategy<Value = Secrets> {
    (names(), value(), value(), value(), value()).prop_map(
        |(
            (provider_env, public_env, secret_env),
            provider_key,
            public_key,
            secret_key,
            key_file,
        )| {
            Secrets {
                provider_env,
                public_env,
                secret_env,
                provider_key,
                public_key,
                secret_key,
                key_file,
            }
        },
    )
}

/// A profile that uses every kind of secret: a provider key, Langfuse keys and a gateway
/// key file, written into `dir` beside the key files.
fn write_profile(dir: &Path, secrets: &Secrets) -> PathBuf {
    let profile = format!(
        "name = \"dev\"\nagent = \"claude-code\"\n\
         [provider]\nkind = \"anthropic\"\nmodel = \"claude-test\"\napi_key_env = \"{}\"\n\
         [egress]\nmode = \"allowlist\"\nhosts = [\"lf.example\", \"api.anthropic.com\"]\ngateway_host = \"gw.example\"\n\
         gateway_port = 22\ngateway_key_file = \"id_gateway\"\ngateway_known_hosts_file = \"known_hosts\"\n\
         [langfuse]\nenabled = true\nbase_url = \"https://lf.example\"\npublic_key_env = \"{}\"\n\
         secret_key_env = \"{}\"\n",
        secrets.provider_env, secrets.public_env, secrets.secret_env
    );
    std::fs::write(dir.join("id_gateway"), &secrets.key_file).unwrap();
    std::fs::write(dir.join("known_hosts"), "gw.example ssh-ed25519 AAAA\n").unwrap();
    let path = dir.join("dev.toml");
    std::fs::write(&path, profile).unwrap();
    path
}

/// Everything the library shows for one launch: spec JSON, argv, shell line, explain, API
/// body, and the error of an invalid override set next to the secrets.
fn library_outputs(dir: &Path, secrets: &Secrets) -> Result<(Vec<String>, Vec<String>), String> {
    let path = write_profile(dir, secrets);
    let text = std::fs::read_to_string(&path).unwrap();
    let loaded = agentc_policy::load("dev.toml", &text).map_err(|e| e.with_hint().to_string())?;
    let workspace = dir.join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    let mut env = secrets.env();
    let inputs = ResolveInputs {
        env: env.clone(),
        ..run_inputs(dir)
    };
    let spec = agentc_policy::resolve(&loaded, &inputs, &RealPaths)
        .map_err(|e| e.with_hint().to_string())?;
    let argv = agentc_backend_cli::render_argv(&spec).map_err(|e| e.with_hint().to_string())?;
    let api = agentc_backend_api::render_json(&spec).map_err(|e| e.with_hint().to_string())?;
    let mut outputs = vec![
        serde_json::to_string(&spec).unwrap(),
        argv.join("\n"),
        agentc_backend_cli::shell_line(&argv),
        agentc_policy::explain(&loaded, &spec),
        serde_json::to_string(&api).unwrap(),
        format!("{spec:?}"),
    ];
    // The Kubernetes rendering: this launch is refused (the ssh gateway, its key file's bind),
    // and without the gateway it renders, its secrets as secretKeyRefs.
    let (refused, rendered) = k8s_outputs(&loaded, &spec);
    if rendered {
        return Err("the k8s rendering of the ssh gateway is not refused".to_string());
    }
    outputs.extend(refused);
    let direct: String = text
        .lines()
        .filter(|line| !line.starts_with("gateway_"))
        .map(|line| format!("{line}\n"))
        .collect();
    // Without the gateway the allowlist is enforced outside and the egress proxy holds the
    // keys: the spec, the renderings and the explanation name them; the workload gets
    // placeholders and only the proxy's environment resolves the values.
    let held = agentc_policy::load("dev.toml", &direct).map_err(|e| e.with_hint().to_string())?;
    let held_spec = agentc_policy::resolve(&held, &inputs, &RealPaths)
        .map_err(|e| e.with_hint().to_string())?;
    let held_argv =
        agentc_backend_cli::render_argv(&held_spec).map_err(|e| e.with_hint().to_string())?;
    let held_api =
        agentc_backend_api::render_json(&held_spec).map_err(|e| e.with_hint().to_string())?;
    outputs.extend([
        serde_json::to_string(&held_spec).unwrap(),
        held_argv.join("\n"),
        agentc_policy::explain(&held, &held_spec),
        serde_json::to_string(&held_api).unwrap(),
        format!("{held_spec:?}"),
    ]);
    let Action::Container(held_container) = &held_spec.action else {
        return Err("a container launch was expected".to_string());
    };
    let held_workload = agentc_engine::resolve_env(held_container, &secrets.env())
        .map_err(|e| e.with_hint().to_string())?;
    outputs.push(held_workload.join("\n"));
    let proxy_env = held_container
        .egress
        .as_ref()
        .map(|egress| agentc_engine::resolve_vars(&egress.proxy.env, &secrets.env()))
        .transpose()
        .map_err(|e| e.with_hint().to_string())?
        .ok_or("the egress proxy was expected")?;
    for (name, value) in [
        (&secrets.public_env, &secrets.public_key),
        (&secrets.secret_env, &secrets.secret_key),
    ] {
        if !proxy_env.contains(&format!("{name}={value}")) {
            return Err(format!("the proxy lacks {name}: {proxy_env:?}"));
        }
    }
    // The keys in the sandbox's environment (`mode = "env"`): the Kubernetes rendering, with
    // its secrets as secretKeyRefs.
    let direct = format!("{direct}[credentials]\nmode = \"env\"\n");
    let direct = agentc_policy::load("dev.toml", &direct).map_err(|e| e.with_hint().to_string())?;
    let direct_spec = agentc_policy::resolve(&direct, &inputs, &RealPaths)
        .map_err(|e| e.with_hint().to_string())?;
    let (objects, rendered) = k8s_outputs(&direct, &direct_spec);
    if !rendered {
        return Err(format!(
            "the k8s rendering without the gateway is refused: {objects:?}"
        ));
    }
    outputs.extend(objects);
    // An invalid override next to the secrets: the error must not carry them.
    env.insert("AGENTC_MEM_LIMIT".to_string(), "lots".to_string());
    let error = agentc_policy::resolve(
        &loaded,
        &ResolveInputs {
            env,
            ..inputs.clone()
        },
        &RealPaths,
    )
    .expect_err("an invalid override is refused");
    outputs.push(format!("{}\n{error:?}", error.with_hint()));
    // An invalid profile next to the secrets.
    let broken = text.replace("kind = \"anthropic\"", "kind = \"anthropic\"\ncolour = 1");
    let error = agentc_policy::load("dev.toml", &broken).expect_err("unknown field");
    outputs.push(format!("{}\n{error:?}", error.with_hint()));

    let Action::Container(container) = &spec.action else {
        return Err("a container launch was expected".to_string());
    };
    let resolved = agentc_engine::resolve_env(container, &secrets.env())
        .map_err(|e| e.with_hint().to_string())?;
    Ok((outputs, resolved))
}

/// What the Kubernetes backend shows for a launch: the objects as YAML and JSON and both
/// explanations, or the refusal; and whether it rendered.
fn k8s_outputs(
    loaded: &agentc_policy::LoadedProfile,
    spec: &agentc_policy::LaunchSpec,
) -> (Vec<String>, bool) {
    let options = agentc_backend_k8s::Options {
        workspace_claim: Some("work".to_string()),
        egress_proxy_image: Some("registry.example/agentc:1".to_string()),
        pod_security: agentc_backend_k8s::PodSecurity::from_profile(loaded),
        egress: agentc_backend_k8s::EgressPolicy::from_profile(loaded),
        ..agentc_backend_k8s::Options::default()
    };
    match agentc_backend_k8s::render(spec, &options) {
        Ok(rendering) => (
            vec![
                rendering.to_yaml(),
                rendering.to_json().to_string(),
                agentc_backend_k8s::explain(&rendering),
                rendering.explain_json().to_string(),
                format!("{rendering:?}"),
            ],
            true,
        ),
        Err(errors) => (vec![format!("{}\n{errors:?}", errors.with_hint())], false),
    }
}

fn leaks<'a>(outputs: &'a [String], value: &str) -> Option<&'a String> {
    outputs.iter().find(|output| output.contains(value))
}

#[test]
fn secret_values_reach_only_the_api_run_path() {
    let mut runner = TestRunner::new(Config {
        cases: 64,
        ..Config::default()
    });
    runner
        .run(&secrets(), |secrets| {
            let dir = tempfile::tempdir().unwrap();
            let (outputs, resolved) = library_outputs(dir.path(), &secrets)
                .map_err(|e| TestCaseError::fail(format!("launch failed: {e}")))?;
            for (what, value) in secrets.values() {
                if let Some(output) = leaks(&outputs, value) {
                    return Err(TestCaseError::fail(format!(
                        "the {what} {value:?} leaked into:\n{output}"
                    )));
                }
            }
            for (name, value) in [
                (&secrets.provider_env, &secrets.provider_key),
                (&secrets.public_env, &secrets.public_key),
                (&secrets.secret_env, &secrets.secret_key),
            ] {
                prop_assert!(
                    resolved.contains(&format!("{name}={value}")),
                    "resolve_env lacks {name}: {resolved:?}"
                );
            }
            // The key file is mounted, never read: not even the run path holds its content.
            prop_assert!(!resolved
                .iter()
                .any(|entry| entry.contains(&secrets.key_file)));
            Ok(())
        })
        .unwrap();
}

fn agentc(dir: &Path, args: &[&str], env: &BTreeMap<String, String>) -> Output {
    let mut command = Command::new(agentc_conformance::binary::agentc_binary());
    // The workspace defaults to the current directory: `dir/work`, apart from the home.
    let (work, home) = (dir.join("work"), dir.join("home"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    command
        .args(args)
        .current_dir(work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("USER", "dev")
        .envs(env);
    command.output().expect("agentc runs")
}

#[test]
fn the_binary_never_prints_a_secret_value() {
    let mut runner = TestRunner::new(Config {
        cases: 6,
        ..Config::default()
    });
    runner
        .run(&secrets(), |secrets| {
            let dir = tempfile::tempdir().unwrap();
            let profile = write_profile(dir.path(), &secrets);
            let profile = profile.to_string_lossy().into_owned();
            let workspace = dir.path().join("work");
            std::fs::create_dir_all(&workspace).unwrap();
            let workspace = workspace.to_string_lossy().into_owned();
            let launch = |extra: &[&str]| -> Vec<String> {
                let mut args = extra.iter().map(|a| a.to_string()).collect::<Vec<_>>();
                args.extend([profile.clone(), "--workspace".into(), workspace.clone()]);
                args
            };
            let mut runs: Vec<(Vec<String>, BTreeMap<String, String>, i32)> = vec![
                (vec!["validate".into(), profile.clone()], secrets.env(), 0),
                (launch(&["explain"]), secrets.env(), 0),
                (
                    launch(&["render", "--backend", "cli", "--format", "shell"]),
                    secrets.env(),
                    0,
                ),
                (
                    launch(&["render", "--backend", "cli", "--format", "json"]),
                    secrets.env(),
                    0,
                ),
                (
                    launch(&["render", "--backend", "api", "--format", "json"]),
                    secrets.env(),
                    0,
                ),
            ];
            // The Kubernetes rendering refuses the gateway, by field, without a value.
            for command in ["render", "explain"] {
                runs.push((
                    launch(&[
                        command,
                        "--backend",
                        "k8s",
                        "--workspace-claim",
                        "work",
                        "--egress-proxy-image",
                        "registry.example/agentc:1",
                    ]),
                    secrets.env(),
                    65,
                ));
            }
            let mut bad = secrets.env();
            bad.insert("AGENTC_CPUS".into(), "many".into());
            runs.push((launch(&["render"]), bad.clone(), 65));
            runs.push((launch(&["explain"]), bad, 65));
            for (args, env, code) in runs {
                // With the step log on: it names secrets, never their values.
                let args: Vec<&str> = std::iter::once("--verbose")
                    .chain(args.iter().map(String::as_str))
                    .collect();
                let output = agentc(dir.path(), &args, &env);
                let stderr = String::from_utf8_lossy(&output.stderr);
                prop_assert_eq!(output.status.code(), Some(code), "{:?}: {}", args, stderr);
                prop_assert!(
                    stderr.contains("agentc: read "),
                    "{:?}: no log: {}",
                    args,
                    stderr
                );
                if code == 0 {
                    let resolved = stderr
                        .lines()
                        .find(|line| line.starts_with("agentc: resolved the run launch"));
                    prop_assert!(
                        resolved.is_some_and(|line| [
                            &secrets.provider_env,
                            &secrets.public_env,
                            &secrets.secret_env
                        ]
                        .iter()
                        .all(|name| line.contains(name.as_str()))),
                        "{:?}: the log does not name the secrets: {}",
                        args,
                        stderr
                    );
                }
                for (what, value) in secrets.values() {
                    for (stream, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)]
                    {
                        prop_assert!(
                            !bytes
                                .windows(value.len())
                                .any(|window| window == value.as_bytes()),
                            "{:?} printed the {} on {}",
                            args,
                            what,
                            stream
                        );
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}

/// Hostile files through the binary: a 10 MB profile and a profile that is not UTF-8 are
/// refused with exit 65 and a message, before any parsing.
#[test]
fn the_binary_refuses_huge_and_non_utf8_profiles_with_exit_65() {
    let dir = tempfile::tempdir().unwrap();
    let env = BTreeMap::new();
    let huge = dir.path().join("huge.toml");
    let mut text = "name = \"dev\"\nagent = \"codex\"\n#".to_string();
    text.push_str(&"x".repeat(10 * 1024 * 1024));
    std::fs::write(&huge, text).unwrap();
    let output = agentc(dir.path(), &["validate", &huge.to_string_lossy()], &env);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(65), "{stderr}");
    assert!(
        stderr.contains("larger than the limit of 1048576 bytes (1 MiB)"),
        "{stderr}"
    );

    let latin1 = dir.path().join("latin1.toml");
    std::fs::write(&latin1, b"name = \"d\xe9v\"\nagent = \"codex\"\n").unwrap();
    let output = agentc(dir.path(), &["validate", &latin1.to_string_lossy()], &env);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(65), "{stderr}");
    assert!(
        stderr.contains("the profile is not UTF-8 text (invalid byte at offset 9)"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// Credentials in a proxy URL (`http://user:password@proxy:3128`): a secret the profile itself
// holds (issue 19). Only the launch's environment holds them: the egress proxy's (enforced
// outside), or the workload's proxy variables (the image's firewall).

/// A user and password for a proxy URL: the user a run of letters after `uz` (so that it is
/// no word agentc writes), the password any printable ASCII that a URL must percent-encode
/// or not.
fn proxy_credentials() -> impl Strategy<Value = (String, String)> {
    ("uz[a-z0-9]{6,12}", "[!-~]{8,20}")
}

/// `text` percent-encoded but for letters and digits, as a URL's userinfo may carry it.
fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() {
                (byte as char).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}

/// The profile of a corporate proxy with credentials, enforced outside or by the image.
fn proxy_profile(user: &str, password: &str, enforce: &str) -> String {
    let url = format!(
        "http://{user}:{}@proxy.corp.example:3128",
        percent_encoded(password)
    );
    format!(
        "name = \"corp\"\nagent = \"claude-code\"\n[workspace]\nmount = false\n\
         [proxy]\nhttp = \"{url}\"\nhttps = \"{url}\"\n\
         [egress]\nhosts = [\"proxy.corp.example\"]\nenforce = \"{enforce}\"\n"
    )
}

/// A run launch of a profile in `dir`, its workspace `dir/work`, its home `dir/home`.
fn run_inputs(dir: &Path) -> ResolveInputs {
    ResolveInputs {
        kind: LaunchKind::Run,
        workspace: dir.join("work").to_string_lossy().into_owned(),
        profile_dir: dir.to_string_lossy().into_owned(),
        home_dir: dir.join("home").to_string_lossy().into_owned(),
        owner: Some(Owner {
            name: "dev".to_string(),
            uid: 1000,
            gid: 1000,
        }),
        image: None,
        seed_target: None,
        agent_args: Vec::new(),
        env: BTreeMap::new(),
        decant_sources: Vec::new(),
        instance: agentc_policy::Instance::default(),
        build: Default::default(),
    }
}

/// Every way the library shows a launch of `text`, and the errors of the same profile
/// broken next to the credentials.
fn proxy_outputs(
    dir: &Path,
    text: &str,
) -> Result<(Vec<String>, agentc_policy::LaunchSpec), String> {
    let loaded = agentc_policy::load("corp.toml", text).map_err(|e| e.with_hint().to_string())?;
    let spec = agentc_policy::resolve(&loaded, &run_inputs(dir), &RealPaths)
        .map_err(|e| e.with_hint().to_string())?;
    let argv = agentc_backend_cli::render_argv(&spec).map_err(|e| e.with_hint().to_string())?;
    let api = agentc_backend_api::render_json(&spec).map_err(|e| e.with_hint().to_string())?;
    let mut outputs = vec![
        serde_json::to_string(&spec).unwrap(),
        format!("{spec:?}"),
        argv.join("\n"),
        agentc_backend_cli::shell_line(&argv),
        agentc_policy::explain(&loaded, &spec),
        serde_json::to_string(&api).unwrap(),
        agentc_policy::explain_json(&loaded, &spec).to_string(),
    ];
    let Action::Container(container) = &spec.action else {
        return Err("a container launch was expected".to_string());
    };
    if let Some(egress) = &container.egress {
        let argvs = agentc_backend_cli::egress::setup_argvs(egress, None)
            .map_err(|e| e.with_hint().to_string())?;
        outputs.extend(argvs.iter().map(|argv| argv.join("\n")));
    }
    outputs.extend(k8s_outputs(&loaded, &spec).0);
    // Broken next to the credentials: a port out of range, an unknown field.
    for broken in [
        text.replace(":3128\"", ":99999\""),
        text.replace("[workspace]\n", "[workspace]\ncolour = 1\n"),
    ] {
        let error = agentc_policy::load("corp.toml", &broken).expect_err("refused");
        outputs.push(format!("{}\n{error:?}", error.with_hint()));
    }
    Ok((outputs, spec))
}

#[test]
fn proxy_url_credentials_reach_only_the_launch_environment() {
    let mut runner = TestRunner::new(Config {
        cases: 48,
        ..Config::default()
    });
    runner
        .run(&proxy_credentials(), |(user, password)| {
            let dir = tempfile::tempdir().unwrap();
            let encoded = percent_encoded(&password);
            let forms = [
                ("password", password.as_str()),
                ("encoded password", encoded.as_str()),
                ("user", user.as_str()),
            ];
            for enforce in ["outside", "image"] {
                let text = proxy_profile(&user, &password, enforce);
                let (outputs, spec) = proxy_outputs(dir.path(), &text)
                    .map_err(|e| TestCaseError::fail(format!("{enforce}: {e}")))?;
                for (what, value) in forms {
                    if let Some(output) = leaks(&outputs, value) {
                        return Err(TestCaseError::fail(format!(
                            "{enforce}: the {what} {value:?} leaked into:\n{output}"
                        )));
                    }
                }
                let Action::Container(container) = &spec.action else {
                    unreachable!("a container launch");
                };
                // A spec read back from its JSON holds no value: the credentials are only
                // beside the spec, in memory.
                let json = serde_json::to_string(&spec).unwrap();
                let back: agentc_policy::LaunchSpec = serde_json::from_str(&json).unwrap();
                let Action::Container(back) = &back.action else {
                    unreachable!("a container launch");
                };
                prop_assert!(back.held_secrets.is_empty());
                let empty = BTreeMap::new();
                if enforce == "outside" {
                    // The proxy's environment holds `user:password`, decoded; the
                    // workload's holds nothing of it.
                    let egress = container.egress.as_ref().expect("the egress proxy");
                    let proxy = agentc_engine::resolve_env(&egress.proxy, &empty)
                        .map_err(|e| TestCaseError::fail(e.with_hint().to_string()))?;
                    let auth = format!("{}={user}:{password}", agentc_policy::UPSTREAM_AUTH_ENV);
                    prop_assert!(proxy.contains(&auth), "{proxy:?}");
                    let values = agentc_engine::secrets::secret_values(&egress.proxy, &empty);
                    prop_assert_eq!(
                        values.get(agentc_policy::UPSTREAM_AUTH_ENV),
                        Some(&format!("{user}:{password}"))
                    );
                    let workload = agentc_engine::resolve_env(container, &empty)
                        .map_err(|e| TestCaseError::fail(e.with_hint().to_string()))?;
                    prop_assert!(
                        !workload
                            .iter()
                            .any(|entry| entry.contains(&encoded) || entry.contains(&user)),
                        "{workload:?}"
                    );
                } else {
                    let workload = agentc_engine::resolve_env(container, &empty)
                        .map_err(|e| TestCaseError::fail(e.with_hint().to_string()))?;
                    let url = format!("http://{user}:{encoded}@proxy.corp.example:3128");
                    for name in ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"] {
                        prop_assert!(
                            workload.contains(&format!("{name}={url}")),
                            "{name}: {workload:?}"
                        );
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_binary_never_prints_a_proxy_urls_credentials() {
    let mut runner = TestRunner::new(Config {
        cases: 4,
        ..Config::default()
    });
    runner
        .run(&proxy_credentials(), |(user, password)| {
            let dir = tempfile::tempdir().unwrap();
            let encoded = percent_encoded(&password);
            for enforce in ["outside", "image"] {
                let path = dir.path().join("corp.toml");
                std::fs::write(&path, proxy_profile(&user, &password, enforce)).unwrap();
                let profile = path.to_string_lossy().into_owned();
                let k8s = [
                    "--backend",
                    "k8s",
                    "--egress-proxy-image",
                    "registry.example/agentc:1",
                ];
                let mut runs: Vec<Vec<&str>> = vec![
                    vec!["validate", &profile],
                    vec!["explain", &profile],
                    vec!["render", &profile],
                    vec!["render", "--format", "json", &profile],
                    vec!["render", "--backend", "api", "--format", "json", &profile],
                    vec!["plan", &profile],
                    vec!["lock", &profile],
                ];
                let k8s_render: Vec<&str> = ["render", "--format", "yaml"]
                    .into_iter()
                    .chain(k8s)
                    .chain([profile.as_str()])
                    .collect();
                let k8s_explain: Vec<&str> = ["explain"]
                    .into_iter()
                    .chain(k8s)
                    .chain([profile.as_str()])
                    .collect();
                runs.push(k8s_render);
                runs.push(k8s_explain);
                for args in runs {
                    let args: Vec<&str> = std::iter::once("--verbose").chain(args).collect();
                    let output = agentc(dir.path(), &args, &BTreeMap::new());
                    // The lock it wrote, if any, too.
                    let lock = std::fs::read(dir.path().join("corp.lock")).unwrap_or_default();
                    for value in [&password, &encoded, &user] {
                        for bytes in [&output.stdout, &output.stderr, &lock] {
                            prop_assert!(
                                !bytes
                                    .windows(value.len())
                                    .any(|window| window == value.as_bytes()),
                                "{enforce}: {:?} printed {:?}:\n{}\n{}",
                                args,
                                value,
                                String::from_utf8_lossy(&output.stdout),
                                String::from_utf8_lossy(&output.stderr)
                            );
                        }
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}
