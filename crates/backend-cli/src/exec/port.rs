//! The [engine port](agentc_engine::port) through the engine's command line
//! (`docker`, or `podman`), run through `tokio::process`: each operation one or two commands,
//! the companion's objects created with [`crate::egress`]'s argv (what the docker CLI referee
//! judges). A refusal's kind is read from the engine's stderr
//! ([`EngineError::from_text`]), which is kept as the detail. Listings take the IDs or names
//! first, then one `inspect` of them all, whose JSON carries labels exactly (a `--format`
//! table would split a label value that holds a comma).

use agentc_policy::Hinted;
use std::collections::BTreeMap;
use std::process::Stdio;

use agentc_engine::companion::state;
use agentc_engine::daemon_text::Refusal;
use agentc_engine::port::{
    EngineError, EngineErrorKind, EnginePort, Filter, ImportRequest, ListedContainer, ListedObject,
};
use agentc_engine::{Engine, ExecError};
use agentc_policy::{ContainerSpec, EgressSpec, IsolatedNetwork};
use bollard::models::{ContainerInspectResponse, ImageInspect};
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::egress::{network_create_argv, setup_argvs};

/// The engine port over the engine's command line.
#[derive(Clone)]
pub struct CliPort {
    /// The engine whose program runs: `docker` or `podman`.
    pub engine: Engine,
    /// The environment its commands get on top of agentc's ([`CliPort::in_env`]).
    pub(crate) env: Option<std::sync::Arc<BTreeMap<String, String>>>,
}

impl CliPort {
    /// The port over `engine`'s command line.
    pub fn new(engine: Engine) -> CliPort {
        CliPort { engine, env: None }
    }

    fn command(&self, args: &[&str]) -> Command {
        log::debug!("running {} {}", self.engine.program(), args.join(" "));
        let mut command = Command::new(self.engine.program());
        command
            .args(args)
            .envs(self.env())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    fn cannot_run(&self, error: std::io::Error) -> EngineError {
        EngineError::new(
            EngineErrorKind::NoProgram,
            format!("cannot run {}: {error}", self.engine.program()),
        )
    }

    /// Runs the program with `args` (`env` on top of the inherited environment: the values an
    /// argv passes by name); its stdout, or its refusal.
    async fn output_with(
        &self,
        args: &[&str],
        env: &BTreeMap<String, String>,
    ) -> Result<Vec<u8>, EngineError> {
        let output = self
            .command(args)
            .envs(env)
            .output()
            .await
            .map_err(|error| self.cannot_run(error))?;
        if output.status.success() {
            Ok(output.stdout)
        } else {
            Err(EngineError::from_text(
                String::from_utf8_lossy(&output.stderr).trim(),
            ))
        }
    }

    async fn output(&self, args: &[&str]) -> Result<Vec<u8>, EngineError> {
        self.output_with(args, &BTreeMap::new()).await
    }

    /// The first object of an `inspect`'s JSON array (`what` names it in the error).
    async fn inspect_first(
        &self,
        args: &[&str],
        what: &str,
    ) -> Result<serde_json::Value, EngineError> {
        let text = self.output(args).await?;
        let value: serde_json::Value =
            serde_json::from_slice(&text).map_err(|error| unreadable(error.to_string()))?;
        match value {
            serde_json::Value::Array(mut found) if !found.is_empty() => Ok(found.swap_remove(0)),
            _ => Err(EngineError::new(
                EngineErrorKind::NotFound,
                format!("No such object: {what}"),
            )),
        }
    }

    /// The words of a listing command's output, one a line.
    async fn words(&self, args: &[&str]) -> Result<Vec<String>, EngineError> {
        let text = self.output(args).await?;
        Ok(String::from_utf8_lossy(&text)
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// One `inspect` of several objects; those gone meanwhile are left out (the engine prints
    /// the others and fails for the missing ones).
    async fn inspect_all(&self, kind: &[&str], names: &[String]) -> Result<Vec<u8>, EngineError> {
        let mut args: Vec<&str> = kind.to_vec();
        args.extend(names.iter().map(String::as_str));
        let output = self
            .command(&args)
            .output()
            .await
            .map_err(|error| self.cannot_run(error))?;
        let printed = output.stdout.iter().any(|byte| !byte.is_ascii_whitespace());
        if output.status.success() || printed {
            Ok(output.stdout)
        } else {
            let error = EngineError::from_text(String::from_utf8_lossy(&output.stderr).trim());
            match error.kind {
                EngineErrorKind::NotFound => Ok(b"[]".to_vec()),
                _ => Err(error),
            }
        }
    }
}

/// `--filter=label=...` and `--filter=network=...` of a listing.
fn filter_args(filter: &Filter) -> Vec<String> {
    filter
        .labels
        .iter()
        .map(|label| format!("--filter=label={label}"))
        .chain(
            filter
                .network
                .iter()
                .map(|network| format!("--filter=network={network}")),
        )
        .collect()
}

/// A network or a volume as `network inspect` and `volume inspect` print it (Docker's
/// capitalised keys, Podman's lower-case ones).
#[derive(Debug, Deserialize)]
struct Inspected {
    #[serde(alias = "name")]
    #[serde(rename = "Name")]
    name: String,
    #[serde(alias = "labels", rename = "Labels", default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(alias = "created", alias = "CreatedAt", rename = "Created", default)]
    created: Option<String>,
    #[serde(alias = "internal", rename = "Internal", default)]
    internal: Option<bool>,
}

fn read_objects(text: &[u8]) -> Result<Vec<ListedObject>, EngineError> {
    let found: Vec<Inspected> = serde_json::from_slice(text).map_err(|error| {
        EngineError::new(
            EngineErrorKind::Failed,
            format!("cannot read the engine's inspect: {error}"),
        )
    })?;
    Ok(found
        .into_iter()
        .map(|object| ListedObject {
            name: object.name,
            labels: object.labels.unwrap_or_default(),
            created: object.created.as_deref().and_then(state::unix_seconds),
            internal: object.internal,
        })
        .collect())
}

fn unreadable(error: String) -> EngineError {
    EngineError::new(
        EngineErrorKind::Failed,
        format!("cannot read the engine's inspect: {error}"),
    )
}

/// The detached `docker run` argv of `spec`: the runtime asked for, and Podman's rows applied
/// ([`super::engine::launch_argv`], which asks `port`'s engine through blocking commands).
async fn launch_argv_of(port: &CliPort, spec: &ContainerSpec) -> Result<Vec<String>, ExecError> {
    super::engine::launch_argv_as(
        port.engine,
        port.env(),
        &ContainerSpec {
            detach: true,
            ..spec.clone()
        },
    )
    .await
}

/// What a detached launch of `spec` runs: its `docker run` argv with a `--cidfile` (which
/// names what the engine created, even when the start failed; the name may be another's), and
/// the secret values its child gets in its environment, by name.
async fn detached_run(
    port: &CliPort,
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
) -> Result<
    (
        Vec<String>,
        super::docker::CidFile,
        BTreeMap<String, String>,
    ),
    ExecError,
> {
    agentc_engine::resolve_env(spec, env)?;
    let mut argv = launch_argv_of(port, spec).await?;
    let cid = super::docker::CidFile::new()?;
    argv.insert(2, format!("--cidfile={}", cid.path().display()));
    Ok((argv, cid, agentc_engine::secrets::secret_values(spec, env)))
}

impl EnginePort for CliPort {
    fn engine(&self) -> Engine {
        self.engine
    }

    async fn image_exists(&self, reference: &str) -> Result<bool, EngineError> {
        match self
            .output(&["image", "inspect", "--format", "{{.Id}}", reference])
            .await
        {
            Ok(_) => Ok(true),
            Err(error) if error.is_not_found() => Ok(false),
            Err(error) => Err(error),
        }
    }

    async fn image_inspect(&self, reference: &str) -> Result<Option<ImageInspect>, EngineError> {
        let text = match self.output(&["image", "inspect", "--", reference]).await {
            Ok(text) => text,
            Err(error) if error.is_not_found() => return Ok(None),
            Err(error) => return Err(error),
        };
        let mut found: Vec<ImageInspect> =
            serde_json::from_slice(&text).map_err(|error| unreadable(error.to_string()))?;
        Ok(found.pop())
    }

    async fn tag_image(&self, source: &str, reference: &str) -> Result<(), EngineError> {
        self.output(&["tag", source, reference]).await.map(|_| ())
    }

    async fn pull_image(
        &self,
        reference: &str,
        on_line: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), EngineError> {
        let mut child = self
            .command(&["pull", reference])
            .spawn()
            .map_err(|error| self.cannot_run(error))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        // Both pipes at once: a full stderr pipe would stop the pull.
        let progress = async {
            let mut lines = tokio::io::BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let line = line.trim_end();
                if !line.is_empty() {
                    on_line(line);
                }
            }
        };
        let refusal = async {
            let mut text = Vec::new();
            let _ = stderr.read_to_end(&mut text).await;
            text
        };
        let ((), refusal) = tokio::join!(progress, refusal);
        let status = child.wait().await.map_err(|error| self.cannot_run(error))?;
        if status.success() {
            Ok(())
        } else {
            Err(EngineError::from_text(
                String::from_utf8_lossy(&refusal).trim(),
            ))
        }
    }

    async fn import_image(&self, request: ImportRequest<'_>) -> Result<(), EngineError> {
        let mut args: Vec<String> = vec!["import".into()];
        args.extend(
            request
                .changes
                .iter()
                .map(|change| format!("--change={change}")),
        );
        args.extend(["-".to_string(), request.tag.to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = self
            .command(&args)
            .stdin(Stdio::piped())
            .spawn()
            .map_err(|error| self.cannot_run(error))?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let tar = request.tar.to_vec();
        let writer = tokio::spawn(async move {
            let written = stdin.write_all(&tar).await;
            drop(stdin);
            written
        });
        let output = child
            .wait_with_output()
            .await
            .map_err(|error| self.cannot_run(error))?;
        let written = writer.await.unwrap_or(Ok(()));
        if !output.status.success() {
            return Err(EngineError::from_text(
                String::from_utf8_lossy(&output.stderr).trim(),
            ));
        }
        written.map_err(|error| {
            EngineError::new(
                EngineErrorKind::Failed,
                format!("cannot send the root filesystem: {error}"),
            )
        })
    }

    async fn create_isolated_network(&self, network: &IsolatedNetwork) -> Result<(), EngineError> {
        let argv = network_create_argv(network);
        let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
        self.output(&args).await.map(|_| ())
    }

    async fn create_proxy(
        &self,
        egress: &EgressSpec,
        image: &str,
        secrets: &BTreeMap<String, String>,
    ) -> Result<(), EngineError> {
        let argvs = setup_argvs(egress, Some(image)).map_err(|error| {
            EngineError::new(EngineErrorKind::Failed, error.with_hint().to_string())
        })?;
        let args: Vec<&str> = argvs[1][1..].iter().map(String::as_str).collect();
        self.output_with(&args, secrets).await.map(|_| ())
    }

    async fn connect_proxy(&self, egress: &EgressSpec) -> Result<(), EngineError> {
        let argvs = setup_argvs(egress, None).map_err(|error| {
            EngineError::new(EngineErrorKind::Failed, error.with_hint().to_string())
        })?;
        let args: Vec<&str> = argvs[2][1..].iter().map(String::as_str).collect();
        self.output(&args).await.map(|_| ())
    }

    async fn check_launch(&self, spec: &ContainerSpec) -> Result<(), ExecError> {
        launch_argv_of(self, spec).await.map(|_| ())
    }

    async fn run_detached(
        &self,
        spec: &ContainerSpec,
        env: &BTreeMap<String, String>,
    ) -> Result<String, EngineError> {
        let (argv, cid, secrets) = detached_run(self, spec, env)
            .await
            .map_err(EngineError::of_launch)?;
        let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
        match self.output_with(&args, &secrets).await {
            Ok(id) => Ok(String::from_utf8_lossy(&id).trim().to_string()),
            Err(error) => {
                if let Some(id) = cid.id() {
                    let _ = self.remove_container(&id).await;
                }
                Err(error)
            }
        }
    }

    async fn start_launch(
        &self,
        spec: &ContainerSpec,
        env: &BTreeMap<String, String>,
    ) -> Result<String, ExecError> {
        let (argv, cid, secrets) = detached_run(self, spec, env).await?;
        let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
        let output = self
            .command(&args)
            .envs(&secrets)
            .output()
            .await
            .map_err(|source| ExecError::Spawn {
                program: self.engine.program().into(),
                source,
            })?;
        let exit_code = super::process::exit_code(output.status);
        // docker's own lines pass through; the daemon's refusal is worded by agentc. Podman
        // words its refusal `Error: ...` (a detached run's stderr is the engine's alone, never
        // the workload's): the first such line is the refusal, as docker's is.
        let podman = self.engine == Engine::Podman;
        let mut held: Vec<String> = Vec::new();
        let mut passed = String::new();
        for line in String::from_utf8_lossy(&output.stderr).split_inclusive('\n') {
            if super::docker::is_refusal_line(line, !held.is_empty())
                || (podman && held.is_empty() && line.starts_with(super::docker::PODMAN_ERROR))
            {
                held.push(line.to_string());
            } else {
                passed.push_str(line);
            }
        }
        eprint!("{passed}");
        if output.status.success() {
            return Ok(String::from_utf8_lossy(&output.stdout).trim().to_string());
        }
        let refusal = held
            .first()
            .map(
                |line| match line.strip_prefix(super::docker::PODMAN_ERROR) {
                    Some(message) if podman => message.trim().to_string(),
                    _ => super::docker::refusal_message(line),
                },
            )
            .filter(|_| super::docker::is_refusal_status(exit_code));
        let created = cid.id();
        if let Some(id) = &created {
            log::debug!("docker failed before {id} ran; removing it");
            let _ = self.remove_container(id).await;
        }
        Err(
            super::docker::launch_refused(self.engine, exit_code, refusal, created.is_some())
                .unwrap_or_else(|| ExecError::DockerFailed {
                    engine: self.engine,
                    command: "run".into(),
                    status: output.status,
                    stderr: held.concat().trim().to_string(),
                }),
        )
    }

    async fn run_attached<S: agentc_engine::signals::Interrupts>(
        &self,
        spec: &ContainerSpec,
        env: &BTreeMap<String, String>,
        _terminal: bool,
        signals: &mut S,
    ) -> Result<agentc_engine::launch::Exited, ExecError> {
        // docker itself sees whether its stdin is a terminal.
        super::attached::run_attached(self, self.env(), spec, env, signals).await
    }

    async fn runtimes(&self) -> Result<agentc_engine::EngineRuntimes, ExecError> {
        let (engine, env) = (self.engine, self.env().clone());
        tokio::task::spawn_blocking(move || super::engine::registered_runtimes(engine, &env))
            .await
            .map_err(|error| ExecError::Terminal {
                step: "ask the engine for its runtimes",
                source: std::io::Error::other(error.to_string()),
            })?
    }

    async fn wait(&self, container: &str) -> Result<i64, EngineError> {
        let text = self.output(&["wait", container]).await?;
        let text = String::from_utf8_lossy(&text);
        text.trim().parse::<i64>().map_err(|_| {
            EngineError::new(
                EngineErrorKind::Failed,
                format!("the wait for {container} printed no exit code: {text:?}"),
            )
        })
    }

    async fn logs(&self, container: &str, stderr: bool) -> Result<String, EngineError> {
        let output = self
            .command(&["logs", container])
            .output()
            .await
            .map_err(|error| self.cannot_run(error))?;
        if !output.status.success() {
            return Err(EngineError::from_text(
                String::from_utf8_lossy(&output.stderr).trim(),
            ));
        }
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        if stderr {
            text.push_str(&String::from_utf8_lossy(&output.stderr));
        }
        Ok(text)
    }

    async fn start(&self, container: &str) -> Result<(), EngineError> {
        self.output(&["start", container]).await.map(|_| ())
    }

    async fn inspect(&self, container: &str) -> Result<ContainerInspectResponse, EngineError> {
        let text = self
            .output(&["inspect", "--type", "container", container])
            .await?;
        let mut found = agentc_engine::inspect::read_inspect_list(&text).map_err(unreadable)?;
        if found.is_empty() {
            return Err(EngineError::new(
                EngineErrorKind::NotFound,
                format!("No such container: {container}"),
            ));
        }
        Ok(found.swap_remove(0))
    }

    async fn inspect_json(&self, container: &str) -> Result<serde_json::Value, EngineError> {
        self.inspect_first(&["inspect", "--type", "container", container], container)
            .await
    }

    async fn network_inspect_json(&self, network: &str) -> Result<serde_json::Value, EngineError> {
        self.inspect_first(&["network", "inspect", network], network)
            .await
    }

    async fn exec_status(&self, container: &str, argv: &[&str]) -> Result<i64, EngineError> {
        let mut args = vec!["exec", container];
        args.extend_from_slice(argv);
        let output = self
            .command(&args)
            .output()
            .await
            .map_err(|error| self.cannot_run(error))?;
        if output.status.success() {
            return Ok(0);
        }
        let refusal = EngineError::from_text(String::from_utf8_lossy(&output.stderr).trim());
        match refusal.kind {
            EngineErrorKind::Failed => Ok(output.status.code().map_or(-1, i64::from)),
            _ => Err(refusal),
        }
    }

    async fn logs_tail(&self, container: &str, lines: u32) -> Result<String, EngineError> {
        let lines = lines.to_string();
        let output = self
            .command(&["logs", "--tail", &lines, container])
            .output()
            .await
            .map_err(|error| self.cannot_run(error))?;
        if !output.status.success() {
            return Err(EngineError::from_text(
                String::from_utf8_lossy(&output.stderr).trim(),
            ));
        }
        Ok(format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }

    async fn remove_container(&self, container: &str) -> Result<(), EngineError> {
        let mut args = vec!["rm", "--force"];
        if self.engine == Engine::Podman {
            // Podman would otherwise wait 10 s before its SIGKILL.
            args.push("--time=0");
        }
        args.push(container);
        match self.output(&args).await {
            Err(error) if !matches!(error.kind, EngineErrorKind::NotFound) => {
                if error.refusal() == Some(Refusal::RemovalInProgress) {
                    Ok(())
                } else {
                    Err(error)
                }
            }
            _ => Ok(()),
        }
    }

    async fn list_containers(&self, filter: &Filter) -> Result<Vec<ListedContainer>, EngineError> {
        let filters = filter_args(filter);
        let mut args = vec![
            "ps",
            "--all",
            "--no-trunc",
            "--format",
            "{{.ID}}\t{{.Status}}",
        ];
        args.extend(filters.iter().map(String::as_str));
        // The ID and the human status (`Up 5 minutes`), which only the listing says.
        let listed: BTreeMap<String, String> = self
            .words(&args)
            .await?
            .iter()
            .map(|line| match line.split_once('\t') {
                Some((id, status)) => (id.to_string(), status.trim().to_string()),
                None => (line.clone(), String::new()),
            })
            .collect();
        if listed.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = listed.keys().cloned().collect();
        let text = self
            .inspect_all(&["inspect", "--type", "container"], &ids)
            .await?;
        let found = agentc_engine::inspect::read_inspect_list(&text).map_err(unreadable)?;
        Ok(found
            .iter()
            .map(|inspect| {
                let mut container = ListedContainer::from_inspect(inspect);
                container.status = listed.get(&container.id).cloned().unwrap_or_default();
                container
            })
            .collect())
    }

    async fn network(&self, name: &str) -> Result<Option<ListedObject>, EngineError> {
        match self.output(&["network", "inspect", name]).await {
            Ok(text) => Ok(read_objects(&text)?.into_iter().next()),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(error),
        }
    }

    async fn list_networks(&self, filter: &Filter) -> Result<Vec<ListedObject>, EngineError> {
        let filters = filter_args(filter);
        let mut args = vec!["network", "ls", "--format", "{{.Name}}"];
        args.extend(filters.iter().map(String::as_str));
        let names = self.words(&args).await?;
        if names.is_empty() {
            return Ok(Vec::new());
        }
        read_objects(&self.inspect_all(&["network", "inspect"], &names).await?)
    }

    async fn remove_network(&self, name: &str) -> Result<(), EngineError> {
        self.output(&["network", "rm", name]).await.map(|_| ())
    }

    async fn volume_exists(&self, name: &str) -> Result<bool, EngineError> {
        match self
            .output(&["volume", "inspect", "--format", "{{.Name}}", name])
            .await
        {
            Ok(_) => Ok(true),
            Err(error) if error.is_not_found() => Ok(false),
            Err(error) => Err(error),
        }
    }

    async fn create_volume(
        &self,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<(), EngineError> {
        let mut args: Vec<String> = vec!["volume".into(), "create".into()];
        args.extend(
            labels
                .iter()
                .map(|(key, value)| format!("--label={key}={value}")),
        );
        args.push(name.to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.output(&args).await.map(|_| ())
    }

    async fn list_volumes(&self, filter: &Filter) -> Result<Vec<ListedObject>, EngineError> {
        let filters = filter_args(filter);
        let mut args = vec!["volume", "ls", "--quiet"];
        args.extend(filters.iter().map(String::as_str));
        let names = self.words(&args).await?;
        if names.is_empty() {
            return Ok(Vec::new());
        }
        read_objects(&self.inspect_all(&["volume", "inspect"], &names).await?)
    }

    async fn remove_volume(&self, name: &str) -> Result<(), EngineError> {
        self.output(&["volume", "rm", name]).await.map(|_| ())
    }

    // ---- Sessions: the primitives `Sandboxes` is written over; those that stream
    // (`SessionPort`) are in `crate::sandbox`.

    fn backend(&self) -> &'static str {
        "cli"
    }

    fn asks_side_by_side(&self) -> bool {
        true
    }

    async fn stop(&self, container: &str, timeout: Option<u32>) -> Result<(), EngineError> {
        let time = timeout.map(|timeout| format!("--time={timeout}"));
        let mut args = vec!["stop"];
        args.extend(time.as_deref());
        args.push(container);
        self.output(&args).await.map(|_| ())
    }

    async fn pause(&self, container: &str, thaw: bool) -> Result<(), EngineError> {
        let verb = if thaw { "unpause" } else { "pause" };
        self.output(&[verb, container]).await.map(|_| ())
    }

    async fn rename(&self, from: &str, to: &str) -> Result<bool, EngineError> {
        match self.output(&["rename", from, to]).await {
            Ok(_) => Ok(true),
            // Gone by that name, or already renamed to `to` by another claim.
            Err(error)
                if error.is_not_found()
                    || error.detail.contains("same name as its current name") =>
            {
                Ok(false)
            }
            Err(error) => Err(error),
        }
    }

    async fn commit(
        &self,
        container: &str,
        reference: &str,
        changes: &[String],
        pause: bool,
    ) -> Result<String, EngineError> {
        let mut args = vec!["commit".to_string(), format!("--pause={pause}")];
        for change in changes {
            args.push(format!("--change={change}"));
        }
        args.push(container.to_string());
        args.push(reference.to_string());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = self.output(&refs).await?;
        Ok(String::from_utf8_lossy(&output).trim().to_string())
    }

    async fn list_images(&self, label: &str) -> Result<Vec<String>, EngineError> {
        let filter = format!("--filter=label={label}");
        self.words(&["image", "ls", "--quiet", "--no-trunc", &filter])
            .await
    }

    async fn remove_image(&self, reference: &str) -> Result<(), EngineError> {
        self.output(&["image", "rm", "--force", "--", reference])
            .await
            .map(|_| ())
    }

    // ---- End of the sessions' primitives.
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_and_volumes_are_read_in_both_engines_spellings() {
        let docker = br#"[{"Name":"box-egress","Id":"1","Created":"2026-12-03T04:50:00.123456789Z","Labels":{"io.agentc.profile":"a,b"}}]"#;
        let podman = br#"[{"name":"box-egress","id":"1","created":"2026-12-03T04:50:00.5+00:00","labels":{"io.agentc.profile":"box"}}]"#;
        let volume = br#"[{"Name":"box-ca","CreatedAt":"2026-12-03T04:50:00Z","Labels":null}]"#;
        let read = |text: &[u8]| read_objects(text).unwrap();
        assert_eq!(read(docker)[0].name, "box-egress");
        assert_eq!(read(docker)[0].labels["io.agentc.profile"], "a,b");
        assert_eq!(read(docker)[0].created, Some(1_796_273_400));
        assert_eq!(read(podman)[0].labels["io.agentc.profile"], "box");
        assert_eq!(read(podman)[0].created, Some(1_796_273_400));
        assert!(read(volume)[0].labels.is_empty());
        assert_eq!(read(volume)[0].internal, None);
        let internal = br#"[{"Name":"out","Internal":true}]"#;
        assert_eq!(read(internal)[0].internal, Some(true));
        assert_eq!(read(podman)[0].internal, None);
        assert_eq!(read(volume)[0].created, Some(1_796_273_400));
    }

    #[test]
    fn listings_filter_by_every_label_and_the_network() {
        let filter = Filter {
            labels: vec![
                "io.agentc.kind=egress-proxy".into(),
                "io.agentc.profile".into(),
            ],
            network: Some("box-egress".into()),
        };
        assert_eq!(
            filter_args(&filter),
            [
                "--filter=label=io.agentc.kind=egress-proxy",
                "--filter=label=io.agentc.profile",
                "--filter=network=box-egress"
            ]
        );
    }
}
