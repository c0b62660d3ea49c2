//! The egress companion of a launch through the engine's command line: the orchestration
//! written once in [`agentc_backend_common::companion`], run over this backend's
//! [engine port](super::port) ([`CliPort`]), from the blocking launch path on a runtime of its
//! own ([`block_on`]). The set is removed again by an [`EgressSet`] guard when the launch does
//! not keep it.

use std::collections::BTreeMap;
use std::future::Future;

use agentc_backend_common::companion;
use agentc_backend_common::ExecError;
use agentc_policy::ContainerSpec;

use super::port::CliPort;
use super::signals::pending;

/// The port over the engine this process drives.
pub fn port() -> CliPort {
    CliPort::new(agentc_backend_common::engine())
}

/// Runs `future` to its end on a current-thread runtime of its own: on this thread, or, when
/// this thread already runs a runtime (a library caller's), on a thread of its own.
pub fn block_on<F>(future: F) -> Result<F::Output, ExecError>
where
    F: Future + Send,
    F::Output: Send,
{
    let run = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map(|runtime| runtime.block_on(future))
            .map_err(|source| ExecError::Terminal {
                step: "start the async runtime",
                source,
            })
    };
    if tokio::runtime::Handle::try_current().is_err() {
        return run();
    }
    std::thread::scope(|scope| {
        scope.spawn(run).join().unwrap_or_else(|_| {
            Err(ExecError::Terminal {
                step: "run the engine's commands",
                source: std::io::Error::other("the thread running them panicked"),
            })
        })
    })
}

/// The isolated network and the proxy container of one launch, removed on drop unless
/// [`EgressSet::keep`] was called (a detached sandbox keeps them until `agentc rm`).
#[derive(Debug)]
pub struct EgressSet {
    set: companion::EgressSet,
    keep: bool,
}

impl EgressSet {
    /// Leaves the network and the proxy in place (the sandbox runs on).
    pub fn keep(mut self) {
        self.keep = true;
    }

    /// Removes the proxy, then the network, then the CA volume; failures are logged (`agentc
    /// rm` finds the rest by label).
    pub fn remove(&mut self) {
        if self.keep {
            return;
        }
        self.keep = true;
        if let Err(error) = block_on(companion::teardown(&port(), &self.set)) {
            log::warn!("could not remove the egress companion: {error}");
        }
    }
}

impl Drop for EgressSet {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The tag of the running agentc binary's proxy image, imported unless the engine has it
/// ([`companion::own_proxy_image`]); also the image of the isolation probe.
pub fn own_proxy_image() -> Result<String, ExecError> {
    block_on(companion::own_proxy_image(&port()))?
}

/// Imports an image of the running executable unless the engine has its tag
/// ([`companion::import_unless_present`]); returns the tag.
pub fn import_unless_present(image: &agentc_egress::image::Image) -> Result<String, ExecError> {
    block_on(companion::import_unless_present(&port(), image))?.map_err(|error| ExecError::Egress {
        step: companion::BUILD_PROXY_IMAGE,
        message: format!("cannot import {}: {error}", image.tag),
    })
}

/// Sets up the companion of `spec`, if it has one ([`companion::setup_for`]); a SIGINT or
/// SIGTERM a [`super::SignalShield`] records meanwhile ends it, leaving nothing. The keys the
/// proxy holds are read from `env`, by name.
pub fn setup_for(
    spec: &mut ContainerSpec,
    env: &BTreeMap<String, String>,
) -> Result<Option<EgressSet>, ExecError> {
    let set = block_on(companion::setup_for(&port(), spec, env, &mut pending))??;
    Ok(set.map(|set| EgressSet { set, keep: false }))
}
