//! The detached launch (`agentc run --detach`), written once over the
//! [engine port](crate::port): the spec's refusals before anything is created, the image made
//! present, the named volumes, the egress companion, then the container created and started
//! detached; a SIGINT or SIGTERM between the steps, or during the start, ends the launch
//! (130, 143) and removes what it created, as does a refused start. The companion is kept with
//! a started sandbox (`agentc rm` removes them together).

use std::collections::BTreeMap;
use std::future::Future;

use agentc_policy::ContainerSpec;

use crate::companion::{self, EgressSet};
use crate::port::EnginePort;
use crate::{ExecError, Interrupt};

/// Where a launch's SIGINT and SIGTERM come from, listened to from before its first step (a
/// signal between steps is then never lost).
pub trait Interrupts: Send {
    /// The signal received since the launch began and not yet taken, without waiting.
    fn pending(&mut self) -> Option<Interrupt>;

    /// The next signal (one already received at once).
    fn recv(&mut self) -> impl Future<Output = Interrupt> + Send;
}

/// A detached sandbox that started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// The container's ID.
    pub id: String,
    /// The spec it was started from: the caller's, moved to its companion's instance when it
    /// has one (its name, network and DNS).
    pub placed: ContainerSpec,
    /// The egress companion kept with it.
    pub companion: Option<EgressSet>,
}

/// Launches `spec` detached through `port`; see the module documentation. `notify` is told
/// when the image is pulled (with `pull`; without, a missing image is refused). The engine's
/// refusals are worded as the backend words them ([`EnginePort::check_launch`],
/// [`EnginePort::start_launch`]).
pub async fn launch_detached<P: EnginePort, S: Interrupts>(
    port: &P,
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
    pull: bool,
    notify: &mut (dyn FnMut(&str) + Send),
    signals: &mut S,
) -> Result<Started, ExecError> {
    let spec = &ContainerSpec {
        detach: true,
        ..spec.clone()
    };
    crate::resolve_env(spec, env)?;
    let passed = crate::secrets::passed_secrets(spec, env);
    if !passed.is_empty() {
        log::debug!(
            "secrets passed from this environment, by name: {}",
            passed.join(", ")
        );
    }
    crate::argv::check_container(spec)?;
    crate::image::ensure_image(port, &spec.image, pull, notify).await?;
    between_steps(signals)?;
    // The runtime asked for and Podman's rows applied before anything is created.
    port.check_launch(spec).await?;
    crate::volumes::ensure_volumes(port, spec).await?;
    between_steps(signals)?;
    let mut placed = spec.clone();
    let set = {
        let mut pending = || signals.pending();
        companion::setup_for(port, &mut placed, env, &mut pending).await?
    };
    let name = placed.name.clone();
    let started = tokio::select! {
        started = port.start_launch(&placed, env) => started,
        signal = signals.recv() => {
            // The engine may have created it: only its name finds it again.
            let interrupted = |container| ExecError::Interrupted { signal, container };
            match &name {
                Some(name) => match port.remove_container(name).await {
                    Ok(()) => Err(interrupted(Some(name.clone()))),
                    Err(error) => Err(ExecError::NotRemoved {
                        cause: Box::new(interrupted(None)),
                        container: name.clone(),
                        message: error.to_string(),
                    }),
                },
                None => Err(interrupted(None)),
            }
        }
    };
    match started {
        Ok(id) => Ok(Started {
            id,
            placed,
            companion: set,
        }),
        Err(error) => {
            if let Some(set) = &set {
                companion::teardown(port, set).await;
            }
            Err(error)
        }
    }
}

/// The signal received between two steps, as the launch's error (nothing of the step before
/// is left: what it created is removed on the way out).
fn between_steps<S: Interrupts>(signals: &mut S) -> Result<(), ExecError> {
    match signals.pending() {
        Some(signal) => Err(ExecError::Interrupted {
            signal,
            container: None,
        }),
        None => Ok(()),
    }
}
