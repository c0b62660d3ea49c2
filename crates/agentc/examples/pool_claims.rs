//! Warm pools through the library (issue 22): time from a claim to the first output of a
//! command (`echo ok`) in it, warm (an idle member claimed: `pool::claim_member` of the
//! launch's `pool::Pool` that `pool::fill` keeps, then one exec) against cold
//! (`SandboxClient::create`, then the exec), alternated; p50 and p90.
//!
//! ```sh
//! cargo run --release -p agentc --example pool_claims -- IMAGE [ROUNDS] [api|cli]
//! ```
//!
//! IMAGE needs `sh`, `sleep`, `tail` and `echo` (the busybox test image of
//! `scripts/build-test-image.sh`). The sandboxes have no network egress companion (a custom
//! profile without `[egress]`); everything made is deleted. `AGENTC_ENGINE=podman` drives
//! Podman (its API service for `api`).

use std::collections::BTreeMap;
use std::time::Instant;

use agentc_engine::pool;
use agentc_engine::session::{session_name, ExecRequest, SandboxClient};
use agentc_engine::Engine;
use agentc_policy::Hinted;
use agentc_policy::{Instance, LaunchKind, LaunchSpec, Owner, RealPaths, ResolveInputs, Start};

fn spec(profile: &str, image: &str) -> Result<LaunchSpec, String> {
    let text = format!(
        "name = \"{profile}\"\nagent = \"custom\"\n\n[image]\nref = \"{image}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n"
    );
    let loaded = agentc_policy::load(&format!("{profile}.toml"), &text)
        .map_err(|errors| format!("{:?}", errors.errors()))?;
    let dir = std::env::temp_dir().to_string_lossy().into_owned();
    let inputs = ResolveInputs {
        owner: Some(Owner {
            name: "bench".to_string(),
            uid: 1000,
            gid: 1000,
        }),
        instance: Instance {
            start: Start::Session,
            default_name: Some(session_name(profile)),
            ..Instance::default()
        },
        ..ResolveInputs::new(LaunchKind::Run, dir.clone(), dir.clone(), dir)
    };
    agentc_policy::resolve(&loaded, &inputs, &RealPaths)
        .map_err(|error| error.with_hint().to_string())
}

fn percentile(values: &[f64], q: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[((q * (sorted.len() - 1) as f64).round() as usize).min(sorted.len() - 1)]
}

async fn bench<C: SandboxClient>(client: C, image: &str, rounds: usize) -> Result<(), String> {
    let profile = format!("pool-bench-{}", std::process::id());
    let fail = |error: agentc_engine::session::SessionError| error.with_hint().to_string();
    let (mut warm, mut cold) = (Vec::new(), Vec::new());
    let echo = ExecRequest::new(["echo", "ok"]);
    let base = spec(&profile, image)?;
    // The pool of the launch: its key (spec digest, image, runtime) and, with credential
    // bindings, the fingerprints of the keys (none here) under the caller's own secret.
    let pool = pool::Pool::of(&client, &base, &BTreeMap::new(), b"pool-bench")
        .await
        .map_err(fail)?;
    for round in 0..=rounds {
        // Untimed: one idle member.
        pool::fill(&client, &base, &pool, 1).await.map_err(fail)?;
        // Warm: claim, exec.
        let started = Instant::now();
        let claimed = pool::claim_member(&client, &pool)
            .await
            .map_err(fail)?
            .ok_or("no member claimed")?;
        let output = client
            .exec_output(&claimed.sandbox, &echo)
            .await
            .map_err(fail)?;
        let warm_ms = started.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(output.stdout, b"ok\n");
        client.delete(&claimed.sandbox).await;
        // Cold: create, exec.
        let fresh = spec(&profile, image)?;
        let started = Instant::now();
        let sandbox = client.create(&fresh).await.map_err(fail)?;
        let output = client.exec_output(&sandbox, &echo).await.map_err(fail)?;
        let cold_ms = started.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(output.stdout, b"ok\n");
        client.delete(&sandbox).await;
        if round > 0 {
            warm.push(warm_ms);
            cold.push(cold_ms);
        }
    }
    for (name, values) in [("warm", &warm), ("cold", &cold)] {
        println!(
            "{name} (library, {}): p50 {:.0} ms, p90 {:.0} ms over {}",
            client.backend(),
            percentile(values, 0.5),
            percentile(values, 0.9),
            values.len()
        );
    }
    println!(
        "cold/warm p50: {:.1}x",
        percentile(&cold, 0.5) / percentile(&warm, 0.5)
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(image) = args.next() else {
        eprintln!("usage: pool_claims IMAGE [ROUNDS] [api|cli]");
        return std::process::ExitCode::from(2);
    };
    let rounds: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(20);
    let backend = args.next().unwrap_or_else(|| "api".to_string());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let env: BTreeMap<String, String> = std::env::vars().collect();
    // The engine as the binary chooses it by default: `AGENTC_ENGINE`, else Docker; its API
    // endpoint by that engine's conventions.
    let engine = env
        .get("AGENTC_ENGINE")
        .and_then(|name| Engine::parse(name))
        .unwrap_or_default();
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let host = agentc_engine::engine::api_host(engine, &env, root);
    let result = runtime.block_on(async {
        match backend.as_str() {
            "cli" => {
                let port = agentc_backend_cli::exec::port::CliPort::new(engine);
                bench(
                    agentc_backend_cli::CliClient::over(port, env),
                    &image,
                    rounds,
                )
                .await
            }
            _ => match agentc_backend_api::connect(engine, host.as_deref()).await {
                Ok(port) => {
                    let client = agentc_backend_api::ApiClient::over(port, env);
                    bench(client, &image, rounds).await
                }
                Err(error) => Err(error.with_hint().to_string()),
            },
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
