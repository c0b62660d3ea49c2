//! The [engine port](agentc_engine::port) through the Engine API: each operation one
//! or two bollard calls, the companion's objects built from [`crate::egress::render_egress`]'s
//! bodies (the requests the docker CLI would send for the CLI backend's argv). Refusals are
//! read from the HTTP status (404, 409) and the daemon's message is kept as the detail.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use agentc_engine::companion::state;
use agentc_engine::port::{
    EngineError, EngineErrorKind, EnginePort, Filter, ImportRequest, ListedContainer, ListedObject,
};
use agentc_engine::Engine;
use agentc_policy::Hinted;
use agentc_policy::{ContainerSpec, EgressSpec, IsolatedNetwork};
use bollard::errors::Error as BollardError;
use bollard::exec::{CreateExecOptions, StartExecOptions};
use bollard::models::ContainerConfig;
use bollard::models::{ContainerInspectResponse, ImageInspect};
use bollard::query_parameters::{
    CommitContainerOptionsBuilder, ListImagesOptionsBuilder, RemoveImageOptionsBuilder,
    RenameContainerOptionsBuilder, StopContainerOptionsBuilder,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptionsBuilder, InspectNetworkOptions,
    ListContainersOptionsBuilder, ListNetworksOptionsBuilder, ListVolumesOptionsBuilder,
    LogsOptionsBuilder, RemoveContainerOptionsBuilder, RemoveVolumeOptions,
    WaitContainerOptionsBuilder,
};
use bollard::Docker;
use futures_util::{StreamExt, TryStreamExt};

use crate::daemon::{daemon_error, status, Ping, Waits};
use crate::egress::{network_create_body, render_egress};
use crate::pull::{split_reference, PullProgress};
use agentc_engine::ExecError;

/// The engine port over one Engine API connection.
#[derive(Debug, Clone)]
pub struct ApiPort {
    /// The client.
    pub docker: Docker,
    /// The engine answering on it, which its errors name.
    pub engine: Engine,
    /// What the `/_ping` that opened the connection answered ([`connect`] over a unix socket).
    pub(crate) ping: Option<Ping>,
    /// The waits registered on the connection, confirmed by its transport.
    pub(crate) waits: Arc<Waits>,
}

/// Connects to `engine`'s API and negotiates the API version (down to the daemon's, such as
/// 1.41): the port over that connection. `docker_host` is `DOCKER_HOST` (or Podman's socket) as
/// read by the caller; `None` uses the local Docker socket. Over a unix socket one pooled
/// keep-alive client serves every request, and the port knows what the opening `/_ping`
/// answered ([`ApiPort::check_engine`] needs no second request) and when the daemon has
/// registered a launch's wait.
pub async fn connect(engine: Engine, docker_host: Option<&str>) -> Result<ApiPort, ExecError> {
    let connection = crate::daemon::open(engine, docker_host).await?;
    Ok(ApiPort {
        docker: connection.docker,
        engine: connection.engine,
        ping: connection.ping,
        waits: connection.waits,
    })
}

impl ApiPort {
    /// The port over a client made elsewhere, `docker`, an engine of kind `engine`. Prefer
    /// [`connect`]: a port made here cannot tell when the daemon registered a launch's wait
    /// (a `--rm` launch then pauses 50 ms before its start instead).
    pub fn new(docker: Docker, engine: Engine) -> ApiPort {
        ApiPort {
            docker,
            engine,
            ping: None,
            waits: Arc::default(),
        }
    }

    /// Refuses a connection whose engine is not the port's [`ApiPort::engine`] (`--engine`),
    /// `endpoint` naming it in the error: Podman answers `/_ping` with a `Libpod-Api-Version`
    /// header and `/version` with a `Podman Engine` component, Docker with neither. A Podman
    /// socket taken for Docker would ignore `HostConfig.Runtime` silently. The opening ping's
    /// answer is used when [`connect`] kept one.
    pub async fn check_engine(&self, endpoint: &str) -> Result<(), ExecError> {
        crate::engine::check_engine(&self.docker, self.ping.as_ref(), self.engine, endpoint).await
    }

    /// The create request of a detached launch of `spec` and the options naming it: the
    /// runtime asked for and Podman's rows applied before anything is created, the environment
    /// resolved from `env`, the mounts' subpaths checked.
    async fn detached_create(
        &self,
        spec: &ContainerSpec,
        env: &BTreeMap<String, String>,
    ) -> Result<
        (
            crate::render::CreateRequest,
            bollard::query_parameters::CreateContainerOptions,
        ),
        ExecError,
    > {
        let spec = &ContainerSpec {
            detach: true,
            ..spec.clone()
        };
        let mut request = crate::engine::create_request(&self.docker, self.engine, spec).await?;
        request.body.env =
            Some(agentc_engine::resolve_env(spec, env)?).filter(|env| !env.is_empty());
        crate::engine::check_subpaths(&self.docker, spec)?;
        let mut options = CreateContainerOptionsBuilder::new();
        if let Some(name) = &request.name {
            options = options.name(name);
        }
        Ok((request, options.build()))
    }
}

/// A bollard error as the port's error: the kind from the HTTP status (or the daemon's words
/// for a stopped container), the daemon's message as the detail.
pub fn engine_error(error: BollardError) -> EngineError {
    match error {
        BollardError::DockerResponseServerError {
            status_code,
            message,
        } => {
            let kind = if agentc_engine::daemon_text::is_not_running(&message) {
                EngineErrorKind::NotRunning
            } else {
                match status_code {
                    404 => EngineErrorKind::NotFound,
                    409 => EngineErrorKind::Conflict,
                    // Docker answers a network with endpoints 403.
                    403 if message.contains("active endpoints") => EngineErrorKind::Conflict,
                    _ => EngineErrorKind::Failed,
                }
            };
            EngineError::new(kind, message)
        }
        other => EngineError::new(EngineErrorKind::Unavailable, other.to_string()),
    }
}

fn filters(filter: &Filter) -> HashMap<String, Vec<String>> {
    let mut map = HashMap::new();
    if !filter.labels.is_empty() {
        map.insert("label".to_string(), filter.labels.clone());
    }
    if let Some(network) = &filter.network {
        map.insert("network".to_string(), vec![network.clone()]);
    }
    map
}

/// `REPOSITORY[:TAG]` split at the tag's colon (not a registry port's, which a `/` follows).
fn split_tag(reference: &str) -> (&str, Option<&str>) {
    match reference.rsplit_once(':') {
        Some((repository, tag)) if !tag.contains('/') => (repository, Some(tag)),
        _ => (reference, None),
    }
}

fn sorted(labels: Option<HashMap<String, String>>) -> BTreeMap<String, String> {
    labels.unwrap_or_default().into_iter().collect()
}

impl EnginePort for ApiPort {
    fn engine(&self) -> Engine {
        self.engine
    }

    async fn image_exists(&self, reference: &str) -> Result<bool, EngineError> {
        match self.docker.inspect_image(reference).await {
            Ok(_) => Ok(true),
            Err(error) if status(&error) == Some(404) => Ok(false),
            Err(error) => Err(engine_error(error)),
        }
    }

    async fn image_inspect(&self, reference: &str) -> Result<Option<ImageInspect>, EngineError> {
        match self.docker.inspect_image(reference).await {
            Ok(inspect) => Ok(Some(inspect)),
            Err(error) if status(&error) == Some(404) => Ok(None),
            Err(error) => Err(engine_error(error)),
        }
    }

    async fn tag_image(&self, source: &str, reference: &str) -> Result<(), EngineError> {
        let (repository, tag) = split_tag(reference);
        let options = bollard::query_parameters::TagImageOptions {
            repo: Some(repository.to_string()),
            tag: tag.map(str::to_string),
        };
        self.docker
            .tag_image(source, Some(options))
            .await
            .map_err(engine_error)
    }

    async fn pull_image(
        &self,
        reference: &str,
        on_line: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), EngineError> {
        let failed = |message: String| EngineError::new(EngineErrorKind::Failed, message);
        let split = split_reference(reference).ok_or_else(|| {
            failed(
                "not a repository with a tag or digest: write the image as \
                 [HOST[:PORT]/]REPOSITORY[:TAG][@sha256:DIGEST]"
                    .to_string(),
            )
        })?;
        let options = CreateImageOptionsBuilder::new()
            .from_image(&split.from_image)
            .tag(&split.tag)
            .build();
        let mut stream = self.docker.create_image(Some(options), None, None);
        let mut progress = PullProgress::default();
        while let Some(item) = stream.next().await {
            match item {
                Ok(info) => {
                    if let Some(line) = progress.line(&info) {
                        on_line(&line);
                    }
                }
                Err(BollardError::DockerResponseServerError { message, .. }) => {
                    return Err(failed(message))
                }
                Err(BollardError::DockerStreamError { error }) => return Err(failed(error)),
                Err(other) => return Err(engine_error(other)),
            }
        }
        Ok(())
    }

    async fn import_image(&self, request: ImportRequest<'_>) -> Result<(), EngineError> {
        let (repository, tag) = request
            .tag
            .rsplit_once(':')
            .unwrap_or((request.tag, "latest"));
        let options = bollard::query_parameters::CreateImageOptions {
            from_src: Some("-".to_string()),
            repo: Some(repository.to_string()),
            tag: Some(tag.to_string()),
            changes: request.changes.to_vec(),
            ..Default::default()
        };
        let body = bollard::body_full(bytes::Bytes::from(request.tar.to_vec()));
        self.docker
            .create_image(Some(options), Some(body), None)
            .try_collect::<Vec<_>>()
            .await
            .map_err(engine_error)?;
        // The import's stream can end well without an image (a refused change): ask.
        match self.image_exists(request.tag).await? {
            true => Ok(()),
            false => Err(EngineError::new(
                EngineErrorKind::Failed,
                format!("the engine holds no {} after the import", request.tag),
            )),
        }
    }

    async fn create_isolated_network(&self, network: &IsolatedNetwork) -> Result<(), EngineError> {
        // Engine API 1.41 creates a second network of the same name (its CheckDuplicate is off
        // by default, and bollard does not send it): ask first, as `docker network create`
        // does, and refuse in its words.
        let name = &network.name;
        if self.network(name).await?.is_some() {
            return Err(EngineError::new(
                EngineErrorKind::Conflict,
                format!("network with name {name} already exists"),
            ));
        }
        self.docker
            .create_network(network_create_body(network))
            .await
            .map(|_| ())
            .map_err(engine_error)
    }

    async fn create_proxy(
        &self,
        egress: &EgressSpec,
        image: &str,
        secrets: &BTreeMap<String, String>,
    ) -> Result<(), EngineError> {
        let failed = |message: String| EngineError::new(EngineErrorKind::Failed, message);
        let mut proxy = render_egress(egress, Some(image))
            .map_err(|error| failed(error.with_hint().to_string()))?
            .proxy;
        proxy.body.env = Some(
            agentc_engine::resolve_env(&egress.proxy, secrets)
                .map_err(|error| failed(error.with_hint().to_string()))?,
        )
        .filter(|env| !env.is_empty());
        let name = proxy.name.clone().unwrap_or_default();
        let options = CreateContainerOptionsBuilder::new().name(&name).build();
        self.docker
            .create_container(Some(options), proxy.body)
            .await
            .map(|_| ())
            .map_err(engine_error)
    }

    async fn connect_proxy(&self, egress: &EgressSpec) -> Result<(), EngineError> {
        let connect = render_egress(egress, None)
            .map_err(|error| {
                EngineError::new(EngineErrorKind::Failed, error.with_hint().to_string())
            })?
            .connect;
        self.docker
            .connect_network(&egress.network.name, connect)
            .await
            .map_err(engine_error)
    }

    async fn check_launch(&self, spec: &ContainerSpec) -> Result<(), agentc_engine::ExecError> {
        let spec = &ContainerSpec {
            detach: true,
            ..spec.clone()
        };
        crate::engine::create_request(&self.docker, self.engine, spec).await?;
        crate::engine::check_subpaths(&self.docker, spec)
    }

    async fn run_detached(
        &self,
        spec: &ContainerSpec,
        env: &BTreeMap<String, String>,
    ) -> Result<String, EngineError> {
        let (request, options) = self
            .detached_create(spec, env)
            .await
            .map_err(EngineError::of_launch)?;
        let id = self
            .docker
            .create_container(Some(options), request.body)
            .await
            .map_err(engine_error)?
            .id;
        if let Err(error) = self.docker.start_container(&id, None).await {
            let _ = self.remove_container(&id).await;
            return Err(engine_error(error));
        }
        Ok(id)
    }

    async fn start_launch(
        &self,
        spec: &ContainerSpec,
        env: &BTreeMap<String, String>,
    ) -> Result<String, agentc_engine::ExecError> {
        let (request, options) = self.detached_create(spec, env).await?;
        let id = self
            .docker
            .create_container(Some(options), request.body)
            .await
            .map_err(|error| daemon_error(self.engine, "create the container", error))?
            .id;
        if let Err(error) = self.docker.start_container(&id, None).await {
            let cause = daemon_error(self.engine, "start the container", error);
            // Leave nothing behind a failed launch, or say what is left.
            return Err(match self.remove_container(&id).await {
                Ok(()) => cause,
                Err(removal) => agentc_engine::ExecError::NotRemoved {
                    cause: Box::new(cause),
                    container: request.name.unwrap_or(id),
                    message: removal.to_string(),
                },
            });
        }
        Ok(id)
    }

    async fn run_attached<S: agentc_engine::signals::Interrupts>(
        &self,
        spec: &ContainerSpec,
        env: &BTreeMap<String, String>,
        terminal: bool,
        signals: &mut S,
    ) -> Result<agentc_engine::launch::Exited, agentc_engine::ExecError> {
        crate::attached::attached(
            &self.docker,
            self.engine,
            &self.waits,
            spec,
            env,
            terminal,
            signals,
        )
        .await
    }

    async fn runtimes(&self) -> Result<agentc_engine::EngineRuntimes, agentc_engine::ExecError> {
        crate::engine::registered_runtimes(&self.docker, self.engine).await
    }

    fn removal_jobs(&self) -> usize {
        crate::daemon::remove_jobs(&self.docker)
    }

    async fn wait(&self, container: &str) -> Result<i64, EngineError> {
        let options = WaitContainerOptionsBuilder::new()
            .condition("not-running")
            .build();
        match self
            .docker
            .wait_container(container, Some(options))
            .next()
            .await
        {
            Some(Ok(response)) => Ok(response.status_code),
            Some(Err(BollardError::DockerContainerWaitError { code, .. })) => Ok(code),
            Some(Err(error)) => Err(engine_error(error)),
            None => Err(EngineError::new(
                EngineErrorKind::Failed,
                format!("the wait for {container} ended without a status"),
            )),
        }
    }

    async fn logs(&self, container: &str, stderr: bool) -> Result<String, EngineError> {
        let options = LogsOptionsBuilder::new()
            .stdout(true)
            .stderr(stderr)
            .build();
        let mut stream = self.docker.logs(container, Some(options));
        let mut text = String::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(engine_error)?;
            text.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
        }
        Ok(text)
    }

    async fn start(&self, container: &str) -> Result<(), EngineError> {
        match self.docker.start_container(container, None).await {
            // 304: running already.
            Err(error) if status(&error) == Some(304) => Ok(()),
            result => result.map_err(engine_error),
        }
    }

    async fn inspect(&self, container: &str) -> Result<ContainerInspectResponse, EngineError> {
        self.docker
            .inspect_container(container, None)
            .await
            .map_err(engine_error)
    }

    async fn inspect_json(&self, container: &str) -> Result<serde_json::Value, EngineError> {
        let inspect = self.inspect(container).await?;
        serde_json::to_value(&inspect)
            .map_err(|error| EngineError::new(EngineErrorKind::Failed, error.to_string()))
    }

    async fn network_inspect_json(&self, network: &str) -> Result<serde_json::Value, EngineError> {
        let inspect = self
            .docker
            .inspect_network(network, None::<InspectNetworkOptions>)
            .await
            .map_err(engine_error)?;
        serde_json::to_value(&inspect)
            .map_err(|error| EngineError::new(EngineErrorKind::Failed, error.to_string()))
    }

    async fn exec_status(&self, container: &str, argv: &[&str]) -> Result<i64, EngineError> {
        let options = CreateExecOptions {
            cmd: Some(argv.iter().map(|word| word.to_string()).collect()),
            ..Default::default()
        };
        let created = self
            .docker
            .create_exec(container, options)
            .await
            .map_err(engine_error)?;
        let start = StartExecOptions {
            detach: true,
            ..Default::default()
        };
        self.docker
            .start_exec(&created.id, Some(start))
            .await
            .map_err(engine_error)?;
        for _ in 0..500 {
            let inspect = self
                .docker
                .inspect_exec(&created.id)
                .await
                .map_err(engine_error)?;
            if inspect.running == Some(true) {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            return inspect
                .exit_code
                .ok_or_else(|| EngineError::new(EngineErrorKind::Failed, "no exit code"));
        }
        Err(EngineError::new(
            EngineErrorKind::Failed,
            "the command did not end",
        ))
    }

    async fn logs_tail(&self, container: &str, lines: u32) -> Result<String, EngineError> {
        let options = LogsOptionsBuilder::new()
            .stdout(true)
            .stderr(true)
            .tail(&lines.to_string())
            .build();
        let mut stream = self.docker.logs(container, Some(options));
        let mut text = String::new();
        while let Some(chunk) = stream.next().await {
            text.push_str(&chunk.map_err(engine_error)?.to_string());
        }
        Ok(text)
    }

    async fn remove_container(&self, container: &str) -> Result<(), EngineError> {
        let options = RemoveContainerOptionsBuilder::new().force(true).build();
        match self.docker.remove_container(container, Some(options)).await {
            Err(error) if !matches!(status(&error), Some(404 | 409)) => Err(engine_error(error)),
            _ => Ok(()),
        }
    }

    async fn list_containers(&self, filter: &Filter) -> Result<Vec<ListedContainer>, EngineError> {
        let filters = filters(filter);
        let options = ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        let listed = self
            .docker
            .list_containers(Some(options))
            .await
            .map_err(engine_error)?;
        Ok(listed
            .into_iter()
            .map(|container| ListedContainer {
                name: container
                    .names
                    .as_ref()
                    .and_then(|names| names.first())
                    .map(|name| name.trim_start_matches('/').to_string())
                    .or_else(|| container.id.clone())
                    .unwrap_or_default(),
                id: container.id.unwrap_or_default(),
                networks: container
                    .network_settings
                    .as_ref()
                    .and_then(|settings| settings.networks.as_ref())
                    .map(|networks| networks.keys().cloned().collect())
                    .unwrap_or_default(),
                labels: sorted(container.labels),
                state: container
                    .state
                    .map(|state| state.to_string())
                    .unwrap_or_default(),
                created: container.created,
                image: container.image.unwrap_or_default(),
                status: container.status.unwrap_or_default(),
            })
            .collect())
    }

    async fn network(&self, name: &str) -> Result<Option<ListedObject>, EngineError> {
        match self
            .docker
            .inspect_network(name, None::<InspectNetworkOptions>)
            .await
        {
            Ok(network) => Ok(Some(ListedObject {
                internal: Some(network.internal.unwrap_or(false)),
                name: network.name.unwrap_or_else(|| name.to_string()),
                labels: sorted(network.labels),
                created: network.created.as_deref().and_then(state::unix_seconds),
            })),
            Err(error) if status(&error) == Some(404) => Ok(None),
            Err(error) => Err(engine_error(error)),
        }
    }

    async fn list_networks(&self, filter: &Filter) -> Result<Vec<ListedObject>, EngineError> {
        let filters = filters(filter);
        let options = ListNetworksOptionsBuilder::new().filters(&filters).build();
        let listed = self
            .docker
            .list_networks(Some(options))
            .await
            .map_err(engine_error)?;
        Ok(listed
            .into_iter()
            .filter_map(|network| {
                Some(ListedObject {
                    internal: Some(network.internal.unwrap_or(false)),
                    name: network.name?,
                    labels: sorted(network.labels),
                    created: network.created.as_deref().and_then(state::unix_seconds),
                })
            })
            .collect())
    }

    async fn remove_network(&self, name: &str) -> Result<(), EngineError> {
        self.docker.remove_network(name).await.map_err(engine_error)
    }

    async fn volume_exists(&self, name: &str) -> Result<bool, EngineError> {
        match self.docker.inspect_volume(name).await {
            Ok(_) => Ok(true),
            Err(error) if status(&error) == Some(404) => Ok(false),
            Err(error) => Err(engine_error(error)),
        }
    }

    async fn create_volume(
        &self,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<(), EngineError> {
        let options = bollard::models::VolumeCreateRequest {
            name: Some(name.to_string()),
            labels: Some(labels.clone().into_iter().collect()),
            ..Default::default()
        };
        self.docker
            .create_volume(options)
            .await
            .map(|_| ())
            .map_err(engine_error)
    }

    async fn list_volumes(&self, filter: &Filter) -> Result<Vec<ListedObject>, EngineError> {
        let filters = filters(filter);
        let options = ListVolumesOptionsBuilder::new().filters(&filters).build();
        let listed = self
            .docker
            .list_volumes(Some(options))
            .await
            .map_err(engine_error)?;
        Ok(listed
            .volumes
            .unwrap_or_default()
            .into_iter()
            .map(|volume| ListedObject {
                internal: None,
                created: volume.created_at.as_deref().and_then(state::unix_seconds),
                labels: volume.labels.into_iter().collect(),
                name: volume.name,
            })
            .collect())
    }

    async fn remove_volume(&self, name: &str) -> Result<(), EngineError> {
        self.docker
            .remove_volume(name, None::<RemoveVolumeOptions>)
            .await
            .map_err(engine_error)
    }

    // ---- Sessions: the primitives `Sandboxes` is written over; those that stream
    // (`SessionPort`) are in `crate::sandbox`.

    fn backend(&self) -> &'static str {
        "api"
    }

    async fn stop(&self, container: &str, timeout: Option<u32>) -> Result<(), EngineError> {
        let mut options = StopContainerOptionsBuilder::new();
        if let Some(timeout) = timeout {
            options = options.t(i32::try_from(timeout).unwrap_or(i32::MAX));
        }
        match self
            .docker
            .stop_container(container, Some(options.build()))
            .await
        {
            // 304: stopped already.
            Err(error) if status(&error) == Some(304) => Ok(()),
            result => result.map_err(engine_error),
        }
    }

    async fn pause(&self, container: &str, thaw: bool) -> Result<(), EngineError> {
        let result = if thaw {
            self.docker.unpause_container(container).await
        } else {
            self.docker.pause_container(container).await
        };
        result.map_err(engine_error)
    }

    async fn rename(&self, from: &str, to: &str) -> Result<bool, EngineError> {
        let options = RenameContainerOptionsBuilder::new().name(to).build();
        match self.docker.rename_container(from, options).await {
            Ok(()) => Ok(true),
            // Gone by that name, or already renamed to `to` by another claim.
            Err(error)
                if status(&error) == Some(404)
                    || error.to_string().contains("same name as its current name") =>
            {
                Ok(false)
            }
            Err(error) => Err(engine_error(error)),
        }
    }

    async fn commit(
        &self,
        container: &str,
        reference: &str,
        changes: &[String],
        pause: bool,
    ) -> Result<String, EngineError> {
        let (repo, tag) = match split_tag(reference) {
            (repo, Some(tag)) => (repo, tag),
            (repo, None) => (repo, "latest"),
        };
        // The changes as the docker CLI sends them: one instruction a line.
        let changes = changes.join("\n");
        let mut options = CommitContainerOptionsBuilder::new()
            .container(container)
            .repo(repo)
            .tag(tag)
            .pause(pause);
        if !changes.is_empty() {
            options = options.changes(&changes);
        }
        self.docker
            .commit_container(options.build(), ContainerConfig::default())
            .await
            .map(|response| response.id)
            .map_err(engine_error)
    }

    async fn list_images(&self, label: &str) -> Result<Vec<String>, EngineError> {
        let filters = HashMap::from([("label", vec![label])]);
        let options = ListImagesOptionsBuilder::new().filters(&filters).build();
        let listed = self
            .docker
            .list_images(Some(options))
            .await
            .map_err(engine_error)?;
        Ok(listed.into_iter().map(|summary| summary.id).collect())
    }

    async fn remove_image(&self, reference: &str) -> Result<(), EngineError> {
        let options = RemoveImageOptionsBuilder::new().force(true).build();
        self.docker
            .remove_image(reference, Some(options), None)
            .await
            .map(|_| ())
            .map_err(engine_error)
    }

    // ---- End of the sessions' primitives.
}
