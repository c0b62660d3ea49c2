//! A harness author's program with no CLI: library calls only, through both backends (the
//! Engine API's `ApiClient` and the command line's `CliClient`, one flow over `Sandboxes<P>`).
//! One line per step with its duration; on any failure, the cleanup, then exit 1:
//!
//! 1. `floor`: `SandboxClient::create` meets a profile's isolation floor (`[security] isolation =
//!    { min = "gvisor" }`: the engine's runtimes probed, a gVisor one chosen; CI registers runsc);
//! 2. `pool`: a warm pool of one member is filled (`pool::fill`) and claimed
//!    (`pool::claim_member`), and the member answers `echo ok`;
//! 3. `egress`: behind agentc's egress proxy, with a key bound to one host, the sandbox holds a
//!    placeholder, never the key (this program's own, in its clients' environment by name, never
//!    printed); created with its findings (`session::create_with_findings`), none of them
//!    medium or above;
//! 4. `verify`: `agentc_verify::verify_on` of that launch passes every check;
//! 5. `snapshot`, `fork`: `snapshot::snapshot` of it, then a fork (`snapshot::prepare`, `create`
//!    with the snapshot's image, `snapshot::put_back`) answering `echo ok`, with its parent's file;
//! 6. `cleanup`: every sandbox, pool member, snapshot image and archive made is deleted, and no
//!    container of its profiles is left.
//!
//! ```sh
//! AGENTC_PROXY_EXECUTABLE=$PWD/target/debug/agentc \
//!   cargo run -p agentc --example harness -- IMAGE [api|cli|both]
//! ```
//!
//! IMAGE: the busybox image of `scripts/build-test-image.sh` (never pulled). The egress proxy and
//! the isolation probe run an image of the agentc binary (`ProxyExecutable::locate`), agentc's
//! shared cache, which is kept. Nothing leaves the machine: the floor and pool sandboxes have no
//! network, the bound host (`api.harness.test`, a reserved name) is never fetched, and verify
//! skips `egress.allowed` (`EgressProbe::Skip`). `AGENTC_ENGINE=podman` drives Podman.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use agentc_egress::image::ProxyExecutable;
use agentc_engine::isolation::{LABEL_ISOLATION, LABEL_RUNTIME};
use agentc_engine::session::{create_with_findings, session_name, session_spec};
use agentc_engine::session::{ExecRequest, Sandbox, SandboxClient};
use agentc_engine::session::{Sandboxes, SessionPort};
use agentc_engine::{pool, snapshot, Engine};
use agentc_policy::{EnvValue, Instance, LaunchKind, LaunchSpec, LoadedProfile, RealPaths};
use agentc_policy::{Hint, Hinted, ResolveInputs, Severity, Start};
use agentc_verify::{verify_on, EgressProbe, VerifyInputs};

type Env = BTreeMap<String, String>;

/// The variable holding the bound key (`EGRESS`'s `from_env`), in the clients' environment only.
const KEY: &str = "HARNESS_API_KEY";
/// Every profile: a custom sandbox idling in `{image}`, then its own tables.
const CUSTOM: &str = "agent = \"custom\"\n\n[image]\nref = \"{image}\"\n\
                      command = [\"tail\", \"-f\", \"/dev/null\"]\n\n";
const FLOOR: &str = "[egress]\nmode = \"deny\"\n\n[security]\nisolation = { min = \"gvisor\" }\n";
const POOL: &str = "[egress]\nmode = \"deny\"\n";
const EGRESS: &str = "[egress]\nhosts = [\"api.harness.test\"]\n\n[credentials]\n\n\
                      [credentials.api]\nfrom_env = \"HARNESS_API_KEY\"\n\
                      hosts = [\"api.harness.test\"]\nheader = \"x-api-key\"\nprefix = \"hx-\"\n";
/// A file the fork must have from its parent's tmpfs.
const MARK: [&str; 3] = ["sh", "-c", "echo forked > /tmp/harness-mark"];

/// Why a step failed, from any error that says why and what to do (no `Display` of its own:
/// `?` takes all), its hint kept as the command line prints it.
struct Failed(String);

impl<E: Hinted> From<E> for Failed {
    fn from(error: E) -> Failed {
        Failed(error.with_hint().to_string())
    }
}

/// What a step gives, or why it failed.
type Step<T> = Result<T, Failed>;

/// `Ok` when `holds`, else the failure `why` says.
fn ensure(holds: bool, why: String) -> Step<()> {
    holds.then_some(()).ok_or(Failed(why))
}

/// The session launch of `profile` with `tables`, named apart (a fork runs beside its parent),
/// from `image` or, when given, a snapshot's image `instead`.
fn resolve(profile: &str, tables: &str, image: &str, instead: Option<&str>) -> Step<LaunchSpec> {
    Ok(resolve_loaded(profile, tables, image, instead)?.1)
}

/// [`resolve`], with the profile it loaded (for the launch's findings).
fn resolve_loaded(
    profile: &str,
    tables: &str,
    image: &str,
    instead: Option<&str>,
) -> Step<(LoadedProfile, LaunchSpec)> {
    let custom = CUSTOM.replace("{image}", image);
    let text = format!("name = \"{profile}\"\n{custom}{tables}");
    let loaded = agentc_policy::load(&format!("{profile}.toml"), &text)?;
    let dir = std::env::temp_dir().to_string_lossy().into_owned();
    let name = session_name(profile);
    let inputs = ResolveInputs {
        owner: Some(agentc_engine::owner::current()),
        image: instead.map(str::to_string),
        instance: Instance {
            start: Start::Session,
            default_name: Some(name.clone()),
            name: Some(name),
            stdin_is_terminal: false,
            ..Instance::default()
        },
        ..ResolveInputs::new(LaunchKind::Run, dir.clone(), dir.clone(), dir)
    };
    let spec = agentc_policy::resolve(&loaded, &inputs, &RealPaths)?;
    Ok((loaded, spec))
}

/// Runs `command` in `sandbox`: its stdout, once it exited 0.
async fn run<C: SandboxClient>(client: &C, sandbox: &Sandbox, command: &[&str]) -> Step<String> {
    let request = ExecRequest::new(command.iter().copied());
    let output = client.exec_output(sandbox, &request).await?;
    let (name, code) = (&sandbox.name, output.exit_code);
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure(
        code == 0,
        format!("{command:?} in {name} exited {code}: {stderr}"),
    )?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `echo ok` in `sandbox` answers `ok`.
async fn echo_ok<C: SandboxClient>(client: &C, sandbox: &Sandbox) -> Step<()> {
    let said = run(client, sandbox, &["echo", "ok"]).await?;
    ensure(said == "ok\n", format!("`echo ok` said {said:?}"))
}

/// What the program made, for the cleanup, and the step it is at.
struct Made {
    backend: &'static str,
    step: &'static str,
    started: Instant,
    profiles: Vec<String>,
    sandboxes: Vec<Sandbox>,
    snapshots: Vec<(String, PathBuf)>,
}

impl Made {
    /// Starts `step`, timed from now.
    fn begin(&mut self, step: &'static str) {
        (self.step, self.started) = (step, Instant::now());
    }

    /// This run's profile for the step, whose containers the cleanup looks for.
    fn profile(&mut self) -> String {
        let (step, backend, pid) = (self.step, self.backend, std::process::id());
        let profile = format!("harness-{step}-{backend}-{pid}");
        self.profiles.push(profile.clone());
        profile
    }

    /// The step's line: the backend, the step, how long it took, what it did.
    fn done(&self, what: String) {
        let ms = self.started.elapsed().as_millis();
        println!("[{}] {:<8} {ms:>6} ms  {what}", self.backend, self.step);
    }
}

async fn steps<P: SessionPort>(
    client: &Sandboxes<P>,
    image: &str,
    env: &Env,
    proxy: &ProxyExecutable,
    made: &mut Made,
) -> Step<()> {
    // 1. An isolation floor, met by the session's create (runtimes probed, one chosen).
    made.begin("floor");
    let spec = resolve(&made.profile(), FLOOR, image, None)?;
    let sandbox = client.create(&spec).await?;
    made.sandboxes.push(sandbox.clone());
    let config = client.inspect(&sandbox).await?.config;
    let labels = config.and_then(|config| config.labels).unwrap_or_default();
    let label = |key: &str| labels.get(key).cloned().unwrap_or_default();
    let (tier, runtime, name) = (label(LABEL_ISOLATION), label(LABEL_RUNTIME), &sandbox.name);
    ensure(!tier.is_empty(), format!("{name} has no isolation label"))?;
    echo_ok(client, &sandbox).await?;
    made.done(format!("{name} under {runtime}: {tier} (min gvisor)"));

    // 2. A warm pool of one member, filled and claimed.
    made.begin("pool");
    let spec = resolve(&made.profile(), POOL, image, None)?;
    // The caller's own key for the fingerprints of a pool's credentials (none here).
    let secret = pool::random_suffix()?;
    let warm = pool::Pool::of(client, &spec, env, secret.as_bytes()).await?;
    pool::fill(client, &spec, &warm, 1).await?;
    let filled = made.started.elapsed().as_millis();
    let claimed = pool::claim_member(client, &warm).await?;
    let claimed = claimed.ok_or(Hint::none("no idle member"))?.sandbox;
    made.sandboxes.push(claimed.clone());
    echo_ok(client, &claimed).await?;
    made.done(format!("filled 1 in {filled} ms, claimed {}", claimed.name));

    // 3. Behind the egress proxy, with a key bound to one host.
    made.begin("egress");
    let profile = made.profile();
    let (loaded, spec) = resolve_loaded(&profile, EGRESS, image, None)?;
    let created = create_with_findings(client, &loaded, &spec).await?;
    let sandbox = created.sandbox;
    made.sandboxes.push(sandbox.clone());
    // The launch's findings, as `agentc run` would warn of them: this profile widens nothing.
    let widening: Vec<agentc_policy::FindingCode> = created
        .findings
        .iter()
        .filter(|finding| finding.severity() >= Severity::Medium)
        .map(|finding| finding.code)
        .collect();
    ensure(widening.is_empty(), format!("findings: {widening:?}"))?;
    let egress = client
        .egress(&sandbox)
        .await?
        .ok_or(Hint::none("no egress proxy"))?;
    let state = egress.state.cell();
    ensure(egress.state.is_up(), format!("its proxy is {state}"))?;
    // Compared here, printed nowhere: the sandbox holds a placeholder, never the key.
    let held = run(client, &sandbox, &["sh", "-c", "echo \"$HARNESS_API_KEY\""]).await?;
    let placeholder = held.starts_with("hx-") && !held.contains(env[KEY].as_str());
    ensure(placeholder, format!("{KEY} is no placeholder"))?;
    let name = &sandbox.name;
    let findings = created.findings.len();
    made.done(format!(
        "{name}: proxy {state}, {KEY} a placeholder, {findings} finding(s), none medium or above"
    ));

    // 4. Its launch verified: a probe of it over the same engine port, compared with the spec.
    made.begin("verify");
    let inputs = VerifyInputs {
        egress_probe: &EgressProbe::Skip,
        ..VerifyInputs::new(env, proxy)
    };
    let checks = verify_on(client.port(), &spec, &inputs)
        .await
        .map_err(|error| Failed(error.with_hint().to_string()))?;
    let failed: Vec<String> = checks
        .iter()
        .filter(|check| !check.ok)
        .map(|c| format!("{}: expected {}, saw {}", c.what, c.expected, c.seen))
        .collect();
    let failed = failed.join("\n  ");
    ensure(failed.is_empty(), format!("failed checks:\n  {failed}"))?;
    let count = |status: &str| checks.iter().filter(|c| c.status() == status).count();
    let (ok, warn, skip) = (count("ok"), count("warn"), count("skip"));
    made.done(format!("{ok} ok, {warn} warn, {skip} skip"));

    // 5. A snapshot of it (a file written in its tmpfs first), then a fork of the snapshot.
    made.begin("snapshot");
    run(client, &sandbox, &MARK).await?;
    // Secrets as environment values would be refused: none here, the key is the proxy's.
    let container = session_spec(&spec)?;
    let secrets = container
        .env
        .iter()
        .filter(|var| matches!(var.value, EnvValue::Secret { .. }));
    let (time, tag) = snapshot::now();
    let dir = std::env::temp_dir().join(format!("agentc-{profile}"));
    let request = snapshot::SnapshotRequest {
        tag,
        dir: dir.clone(),
        secrets: secrets.map(|var| var.name.clone()).collect(),
        allow_secrets: false,
        time,
        labels: BTreeMap::new(),
    };
    let report = snapshot::snapshot(client, &sandbox, &request).await?;
    made.snapshots.push((report.name.clone(), dir.clone()));
    let paused = report.paused_for.as_millis();
    made.done(format!("{} (paused {paused} ms)", report.name));

    made.begin("fork");
    let record = snapshot::find(client, &report.name).await?;
    let spec = resolve(&profile, EGRESS, image, Some(report.reference.as_str()))?;
    let container = session_spec(&spec)?;
    let plan = snapshot::prepare(client, &record, &dir, &container).await?;
    let fork = client.create(&spec).await?;
    made.sandboxes.push(fork.clone());
    snapshot::put_back(client, &fork, &record, &dir, &container, &plan).await?;
    echo_ok(client, &fork).await?;
    let mark = run(client, &fork, &["cat", "/tmp/harness-mark"]).await?;
    ensure(mark == "forked\n", "its parent's file is gone".to_string())?;
    made.done(format!("{}: echo ok, its parent's file there", fork.name));
    Ok(())
}

/// Deletes what `made` lists (the fork before the snapshot it runs from) and the idle pool
/// members of its profiles, then looks for any container of its profiles; returns what is left.
async fn clean<P: SessionPort>(client: &Sandboxes<P>, made: &Made) -> Vec<String> {
    let mut left = Vec::new();
    for sandbox in made.sandboxes.iter().rev() {
        left.extend(client.delete(sandbox).await.left);
    }
    for (name, dir) in &made.snapshots {
        let removed = match snapshot::find(client, name).await {
            Ok(record) => snapshot::remove(client, &record, dir).await,
            Err(error) => Err(error),
        };
        if let Err(error) = removed {
            left.push(format!("snapshot {name}: {error}"));
        }
    }
    for profile in &made.profiles {
        match pool::drain(client, Some(profile.as_str()), None).await {
            Ok((_, failed)) => left.extend(failed),
            Err(error) => left.push(format!("the pool of {profile}: {error}")),
        }
        let label = format!("{}={profile}", agentc_policy::LABEL_PROFILE);
        match client.list_labelled(&label).await {
            Ok(found) => left.extend(found.into_iter().map(|found| found.sandbox.name)),
            Err(error) => left.push(format!("the containers of {profile}: {error}")),
        }
    }
    left
}

/// Every step through one client, then the cleanup, whatever happened.
async fn harness<P: SessionPort>(
    client: &Sandboxes<P>,
    image: &str,
    env: &Env,
    proxy: &ProxyExecutable,
) -> Result<(), String> {
    let mut made = Made {
        backend: client.backend(),
        step: "",
        started: Instant::now(),
        profiles: Vec::new(),
        sandboxes: Vec::new(),
        snapshots: Vec::new(),
    };
    let failed = steps(client, image, env, proxy, &mut made).await.err();
    let failed = failed.map(|Failed(why)| format!("{}: {why}", made.step));
    made.begin("cleanup");
    let left = clean(client, &made).await;
    let (sandboxes, snapshots) = (made.sandboxes.len(), made.snapshots.len());
    if left.is_empty() {
        let what = format!("deleted {sandboxes} sandboxes, {snapshots} snapshots");
        made.done(what);
    }
    let left = (!left.is_empty()).then(|| format!("cleanup left: {}", left.join("; ")));
    match (failed, left) {
        (None, None) => Ok(()),
        (Some(why), None) | (None, Some(why)) => Err(why),
        (Some(why), Some(left)) => Err(format!("{why}\n  {left}")),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let backends: &[&str] = match args.get(1).map_or("both", String::as_str) {
        "api" => &["api"],
        "cli" => &["cli"],
        "both" => &["api", "cli"],
        _ => &[],
    };
    let (Some(image), false) = (args.first(), backends.is_empty() || args.len() > 2) else {
        eprintln!("usage: harness IMAGE [api|cli|both]");
        return ExitCode::from(2);
    };
    let mut env: Env = std::env::vars().collect();
    let named = env.get("AGENTC_ENGINE").map_or("", String::as_str);
    let engine = Engine::parse(named).unwrap_or_default();
    // The agentc binary the proxy's image is made of: AGENTC_PROXY_EXECUTABLE, else on PATH.
    let Some(proxy) = ProxyExecutable::locate(&env) else {
        let variable = ProxyExecutable::VARIABLE;
        eprintln!("error: no agentc for the egress proxy\n  hint: set {variable}=/path/to/agentc");
        return ExitCode::FAILURE;
    };
    // The key: this program's own, in its clients' environment only, never printed.
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let nanos = since.unwrap_or_default().as_nanos();
    let key = format!("harness-{}-{nanos}", std::process::id());
    env.insert(KEY.to_string(), key);
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let host = agentc_engine::engine::api_host(engine, &env, root);
    let mut runtime = tokio::runtime::Builder::new_current_thread();
    let runtime = runtime.enable_all().build().expect("a tokio runtime");
    for backend in backends {
        let result = runtime.block_on(async {
            if *backend == "cli" {
                let port = agentc_backend_cli::exec::port::CliPort::new(engine);
                let client = agentc_backend_cli::CliClient::over(port, env.clone());
                let client = client.with_proxy_executable(proxy.clone());
                return harness(&client, image, &env, &proxy).await;
            }
            let port = agentc_backend_api::connect(engine, host.as_deref()).await;
            let port = port.map_err(|error| format!("the Engine API: {error}"))?;
            let client = agentc_backend_api::ApiClient::over(port, env.clone());
            let client = client.with_proxy_executable(proxy.clone());
            harness(&client, image, &env, &proxy).await
        });
        if let Err(why) = result {
            eprintln!("error: [{backend}] {why}");
            return ExitCode::FAILURE;
        }
    }
    println!("every step passed through {}", backends.join(" and "));
    ExitCode::SUCCESS
}
