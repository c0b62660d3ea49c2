//! A harness driving a sandbox through agentc's session library, with either backend:
//! resolve a custom profile, create its sandbox, start busybox `httpd` inside it, reach the
//! server through `endpoint`, and delete the sandbox, whatever happened in between.
//!
//! ```sh
//! cargo run -p agentc --example sandbox_http -- IMAGE [cli|api]
//! ```
//!
//! IMAGE needs busybox's `sh`, `httpd` and `tail` (the test image of
//! `scripts/build-test-image.sh` has them); it is never pulled. `AGENTC_ENGINE=podman` drives
//! Podman (its API service for `api`).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;

use agentc_engine::session::{session_name, ExecRequest, SandboxClient, SessionError};
use agentc_engine::Engine;
use agentc_policy::Hinted;
use agentc_policy::{Instance, LaunchKind, Owner, Protocol, RealPaths, ResolveInputs, Start};

/// The sandbox: hardened as every custom profile is (read-only root, tmpfs /tmp, no
/// capabilities, limits), with port 8080 published on 127.0.0.1.
fn profile(image: &str) -> String {
    format!(
        "name = \"session-example\"\nagent = \"custom\"\n\n[image]\nref = \"{image}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n\n[network]\npublish = [8080]\n"
    )
}

fn spec(image: &str) -> Result<agentc_policy::LaunchSpec, String> {
    let loaded = agentc_policy::load("session-example.toml", &profile(image))
        .map_err(|errors| format!("{:?}", errors.errors()))?;
    let dir = std::env::temp_dir().to_string_lossy().into_owned();
    let inputs = ResolveInputs {
        owner: Some(Owner {
            name: "example".to_string(),
            uid: 1000,
            gid: 1000,
        }),
        // A session's sandbox: in the background, named, kept until deleted, no stdin.
        instance: Instance {
            start: Start::Session,
            default_name: Some(session_name("session-example")),
            ..Instance::default()
        },
        ..ResolveInputs::new(LaunchKind::Run, dir.clone(), dir.clone(), dir)
    };
    agentc_policy::resolve(&loaded, &inputs, &RealPaths)
        .map_err(|error| error.with_hint().to_string())
}

/// Starts the server in the sandbox and fetches its page through the endpoint.
async fn serve_and_fetch<C: SandboxClient>(
    client: &C,
    sandbox: &agentc_engine::session::Sandbox,
) -> Result<String, SessionError> {
    let start = ExecRequest::new([
        "sh",
        "-c",
        "mkdir -p /tmp/www && echo 'hello from the sandbox' > /tmp/www/index.html && httpd -p 8080 -h /tmp/www",
    ]);
    let started = client.exec_output(sandbox, &start).await?;
    if started.exit_code != 0 {
        return Err(SessionError::invalid(
            format!(
                "httpd did not start: {}",
                String::from_utf8_lossy(&started.stderr)
            ),
            "the image needs busybox httpd",
        ));
    }
    let endpoint = client.endpoint(sandbox, 8080, Protocol::Tcp).await?;
    println!("httpd is reachable at {endpoint}");
    let io = |source| SessionError::Io {
        step: "fetch the page",
        source,
    };
    let mut stream = TcpStream::connect(endpoint.to_string()).map_err(io)?;
    stream
        .write_all(b"GET / HTTP/1.0\r\nHost: sandbox\r\n\r\n")
        .map_err(io)?;
    let mut response = String::new();
    stream.read_to_string(&mut response).map_err(io)?;
    Ok(response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or(response))
}

async fn session<C: SandboxClient>(client: C, image: &str) -> Result<(), String> {
    let spec = spec(image)?;
    let sandbox = client
        .create(&spec)
        .await
        .map_err(|error| error.with_hint().to_string())?;
    println!(
        "created {} through the {} backend",
        sandbox.name,
        client.backend()
    );
    let result = serve_and_fetch(&client, &sandbox).await;
    // Delete whatever happened: best effort, and it says what is left.
    let report = client.delete(&sandbox).await;
    println!(
        "deleted {}: removed {}, left {:?}",
        sandbox.name, report.removed, report.left
    );
    let body = result.map_err(|error| error.with_hint().to_string())?;
    print!("page: {body}");
    Ok(())
}

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(image) = args.next() else {
        eprintln!("usage: sandbox_http IMAGE [cli|api]");
        return std::process::ExitCode::from(2);
    };
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
                session(agentc_backend_cli::CliClient::over(port, env), &image).await
            }
            "api" => {
                let port = agentc_backend_api::connect(engine, host.as_deref())
                    .await
                    .map_err(|error| error.with_hint().to_string())?;
                session(agentc_backend_api::ApiClient::over(port, env), &image).await
            }
            other => Err(format!("unknown backend {other:?}: cli or api")),
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}
