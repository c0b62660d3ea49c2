//! The engine queries a deployment needs, through either backend: what an image reference
//! resolves to, moving a tag, whether a volume or network exists. The cli backend asks the
//! `docker` command, the api backend the Engine API; both read the same inspect documents.

use agentc_lifecycle::lock::ImageFacts;
use bollard::models::ImageInspect;
use bollard::Docker;

use crate::cli::BackendArg;
use crate::commands::launch;
use crate::context::{Failure, EXIT_DOCKER};

/// What the lifecycle asks of the engine.
pub trait Engine {
    /// The image `reference` names, or `None` when the engine has no such image.
    fn image(&mut self, reference: &str) -> Result<Option<ImageFacts>, Failure>;
    /// Points `reference` at the image `source` (an ID or a reference).
    fn tag(&mut self, source: &str, reference: &str) -> Result<(), Failure>;
    /// Whether the named volume exists.
    fn volume_exists(&mut self, name: &str) -> Result<bool, Failure>;
    /// Whether the named network exists.
    fn network_exists(&mut self, name: &str) -> Result<bool, Failure>;
    /// Whether the named network is `--internal`; `None` when there is no such network.
    fn network_internal(&mut self, name: &str) -> Result<Option<bool>, Failure>;
}

/// The engine through `backend`.
pub fn connect(backend: BackendArg) -> Result<Box<dyn Engine>, Failure> {
    Ok(match backend {
        BackendArg::Cli => Box::new(CliEngine),
        BackendArg::Api => {
            let runtime = launch::runtime()?;
            let docker = runtime.block_on(launch::connect())?;
            Box::new(ApiEngine { runtime, docker })
        }
    })
}

fn facts(inspect: ImageInspect, reference: &str) -> Result<ImageFacts, Failure> {
    let id = inspect.id.ok_or_else(|| {
        Failure::new(
            EXIT_DOCKER,
            format!("the engine reported image {reference} without an ID"),
        )
    })?;
    let mut repo_digests = inspect.repo_digests.unwrap_or_default();
    repo_digests.sort();
    Ok(ImageFacts { id, repo_digests })
}

fn docker_failure(what: String, error: impl std::fmt::Display) -> Failure {
    Failure::new(EXIT_DOCKER, format!("{what}: {error}"))
}

/// The `docker` command.
#[derive(Debug)]
pub struct CliEngine;

impl CliEngine {
    fn exists(kind: &str, name: &str) -> Result<bool, Failure> {
        use agentc_backend_common::ExecError;
        match agentc_backend_cli::exec::docker::output(&[kind, "inspect", name]) {
            Ok(_) => Ok(true),
            Err(ExecError::DockerFailed { stderr, .. })
                if stderr.to_ascii_lowercase().contains("no such") =>
            {
                Ok(false)
            }
            Err(error) => Err(launch::exec_failure(error)),
        }
    }
}

impl Engine for CliEngine {
    fn image(&mut self, reference: &str) -> Result<Option<ImageFacts>, Failure> {
        use agentc_backend_common::ExecError;
        let text = match agentc_backend_cli::exec::docker::output(&[
            "image", "inspect", "--", reference,
        ]) {
            Ok(text) => text,
            Err(ExecError::DockerFailed { stderr, .. })
                if agentc_backend_common::daemon_text::is_no_such_image(&stderr) =>
            {
                return Ok(None)
            }
            Err(error) => return Err(launch::exec_failure(error)),
        };
        let mut found: Vec<ImageInspect> = serde_json::from_str(&text).map_err(|error| {
            docker_failure(
                format!("cannot read `docker image inspect {reference}`"),
                error,
            )
        })?;
        match found.pop() {
            Some(inspect) => facts(inspect, reference).map(Some),
            None => Ok(None),
        }
    }

    fn tag(&mut self, source: &str, reference: &str) -> Result<(), Failure> {
        agentc_backend_cli::exec::docker::output(&["tag", source, reference])
            .map(drop)
            .map_err(launch::exec_failure)
    }

    fn volume_exists(&mut self, name: &str) -> Result<bool, Failure> {
        Self::exists("volume", name)
    }

    fn network_exists(&mut self, name: &str) -> Result<bool, Failure> {
        Self::exists("network", name)
    }

    fn network_internal(&mut self, name: &str) -> Result<Option<bool>, Failure> {
        use agentc_backend_common::ExecError;
        match agentc_backend_cli::exec::docker::output(&[
            "network",
            "inspect",
            "--format",
            "{{.Internal}}",
            name,
        ]) {
            Ok(text) => Ok(Some(text.trim() == "true")),
            Err(ExecError::DockerFailed { stderr, .. })
                if stderr.to_ascii_lowercase().contains("no such") =>
            {
                Ok(None)
            }
            Err(error) => Err(launch::exec_failure(error)),
        }
    }
}

/// The Engine API, through bollard.
#[derive(Debug)]
pub struct ApiEngine {
    runtime: tokio::runtime::Runtime,
    docker: Docker,
}

fn not_found(error: &bollard::errors::Error) -> bool {
    matches!(
        error,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

impl Engine for ApiEngine {
    fn image(&mut self, reference: &str) -> Result<Option<ImageFacts>, Failure> {
        match self.runtime.block_on(self.docker.inspect_image(reference)) {
            Ok(inspect) => facts(inspect, reference).map(Some),
            Err(error) if not_found(&error) => Ok(None),
            Err(error) => Err(docker_failure(
                format!("cannot inspect image {reference}"),
                error,
            )),
        }
    }

    fn tag(&mut self, source: &str, reference: &str) -> Result<(), Failure> {
        let parts = agentc_lifecycle::reference::split(reference);
        let options = bollard::query_parameters::TagImageOptions {
            repo: Some(parts.repository),
            tag: parts.tag,
        };
        self.runtime
            .block_on(self.docker.tag_image(source, Some(options)))
            .map_err(|error| docker_failure(format!("cannot tag {source} as {reference}"), error))
    }

    fn volume_exists(&mut self, name: &str) -> Result<bool, Failure> {
        match self.runtime.block_on(self.docker.inspect_volume(name)) {
            Ok(_) => Ok(true),
            Err(error) if not_found(&error) => Ok(false),
            Err(error) => Err(docker_failure(
                format!("cannot inspect volume {name}"),
                error,
            )),
        }
    }

    fn network_exists(&mut self, name: &str) -> Result<bool, Failure> {
        match self
            .runtime
            .block_on(self.docker.inspect_network(name, None))
        {
            Ok(_) => Ok(true),
            Err(error) if not_found(&error) => Ok(false),
            Err(error) => Err(docker_failure(
                format!("cannot inspect network {name}"),
                error,
            )),
        }
    }

    fn network_internal(&mut self, name: &str) -> Result<Option<bool>, Failure> {
        match self
            .runtime
            .block_on(self.docker.inspect_network(name, None))
        {
            Ok(network) => Ok(Some(network.internal.unwrap_or(false))),
            Err(error) if not_found(&error) => Ok(None),
            Err(error) => Err(docker_failure(
                format!("cannot inspect network {name}"),
                error,
            )),
        }
    }
}
