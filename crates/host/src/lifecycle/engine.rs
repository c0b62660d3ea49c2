//! The engine queries a deployment needs, through either backend: what an image reference
//! resolves to, moving a tag, whether a volume or network exists. Written once over the
//! engine port, which the cli backend answers through the engine's command line and the api
//! backend through the Engine API.

use agentc_engine::port::{EngineError, EnginePort};
use agentc_lifecycle::lock::ImageFacts;
use bollard::models::ImageInspect;

use crate::backend::{self, Backend, BackendChoice};
use crate::launch::Launcher;
use crate::{Failure, EXIT_DOCKER};

/// What the lifecycle asks of the engine.
pub trait Engine {
    /// The image `reference` names, or `None` when the engine has no such image.
    fn image(&mut self, reference: &str) -> Result<Option<ImageFacts>, Failure>;
    /// Pulls `reference`, unless the engine has it already, saying what it pulls to `notify`
    /// as it goes ([`agentc_engine::image::ensure_image`]: `image REFERENCE is not present;
    /// pulling it`, then each line of the engine's progress as `pull: LINE`).
    fn pull(
        &mut self,
        reference: &str,
        notify: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), Failure>;
    /// Points `reference` at the image `source` (an ID or a reference).
    fn tag(&mut self, source: &str, reference: &str) -> Result<(), Failure>;
    /// Whether the named volume exists.
    fn volume_exists(&mut self, name: &str) -> Result<bool, Failure>;
    /// Whether the named network exists.
    fn network_exists(&mut self, name: &str) -> Result<bool, Failure>;
    /// Whether the named network is `--internal`; `None` when there is no such network.
    fn network_internal(&mut self, name: &str) -> Result<Option<bool>, Failure>;
}

/// `launcher`'s engine (where [`Launcher::env`] puts it) through `backend`: its
/// [engine port](agentc_engine::port), the command line or the Engine API, each query written
/// once ([`PortEngine`]), after the leftovers of killed launches are reaped and told to
/// [`Launcher::reaped`].
pub fn connect(launcher: &Launcher, backend: BackendChoice) -> Result<Box<dyn Engine>, Failure> {
    let (engine, env, reaped) = (launcher.engine, &launcher.env, &launcher.reaped);
    let runtime = backend::runtime()?;
    Ok(match backend::chosen(backend, engine, env) {
        Backend::Cli => {
            let port = runtime.block_on(backend::cli_port_reaping(engine, env, None, reaped));
            Box::new(PortEngine { runtime, port })
        }
        Backend::Api => {
            let port = runtime.block_on(backend::connect(engine, env, reaped))?;
            Box::new(PortEngine { runtime, port })
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

fn engine_failure(what: String, error: EngineError) -> Failure {
    Failure::new(EXIT_DOCKER, format!("{what}: {error}"))
}

/// The lifecycle's queries over an engine port, on a runtime of their own.
pub struct PortEngine<P> {
    runtime: tokio::runtime::Runtime,
    port: P,
}

impl<P: EnginePort> Engine for PortEngine<P> {
    fn image(&mut self, reference: &str) -> Result<Option<ImageFacts>, Failure> {
        match self.runtime.block_on(self.port.image_inspect(reference)) {
            Ok(Some(inspect)) => facts(inspect, reference).map(Some),
            Ok(None) => Ok(None),
            Err(error) => Err(engine_failure(
                format!("cannot inspect image {reference}"),
                error,
            )),
        }
    }

    fn pull(
        &mut self,
        reference: &str,
        notify: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), Failure> {
        self.runtime
            .block_on(agentc_engine::image::ensure_image(
                &self.port, reference, true, notify,
            ))
            .map_err(backend::exec_failure)
    }

    fn tag(&mut self, source: &str, reference: &str) -> Result<(), Failure> {
        self.runtime
            .block_on(self.port.tag_image(source, reference))
            .map_err(|error| engine_failure(format!("cannot tag {source} as {reference}"), error))
    }

    fn volume_exists(&mut self, name: &str) -> Result<bool, Failure> {
        self.runtime
            .block_on(self.port.volume_exists(name))
            .map_err(|error| engine_failure(format!("cannot inspect volume {name}"), error))
    }

    fn network_exists(&mut self, name: &str) -> Result<bool, Failure> {
        self.network_internal(name).map(|found| found.is_some())
    }

    fn network_internal(&mut self, name: &str) -> Result<Option<bool>, Failure> {
        self.runtime
            .block_on(self.port.network(name))
            .map(|found| found.map(|network| network.internal.unwrap_or(false)))
            .map_err(|error| engine_failure(format!("cannot inspect network {name}"), error))
    }
}

#[cfg(test)]
mod tests {
    use agentc_engine::memory::MemoryEngine;

    use super::*;

    #[test]
    fn a_pull_says_what_it_pulls_to_the_caller() {
        let port = MemoryEngine::default().with_registry_image("busybox:pulled");
        let mut engine = PortEngine {
            runtime: backend::runtime().expect("a runtime"),
            port,
        };
        let mut said = Vec::new();
        engine
            .pull("busybox:pulled", &mut |line| said.push(line.to_string()))
            .expect("it pulls");
        assert_eq!(
            said,
            [
                "image busybox:pulled is not present; pulling it",
                "pull: pulled busybox:pulled",
            ]
        );
        // Present now: nothing to say.
        said.clear();
        engine
            .pull("busybox:pulled", &mut |line| said.push(line.to_string()))
            .expect("it is present");
        assert_eq!(said, Vec::<String>::new());
    }
}
