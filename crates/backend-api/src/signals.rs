//! SIGINT and SIGTERM for the whole launch, and the test pause points between its steps: a
//! leaf module the launch, the companion and the session all use.

use agentc_backend_common::{ExecError, Interrupt};
use tokio::signal::unix::{signal, Signal, SignalKind};

/// Pauses at `step` when a test asked for it ([`agentc_backend_common::pause`]): until
/// [`agentc_backend_common::pause::PAUSE_LIMIT`] passed, or a SIGINT or SIGTERM arrived, which
/// ends the launch ([`ExecError::Interrupted`]) as it would at that step.
pub(crate) async fn pause(step: &str) -> Result<(), ExecError> {
    if !agentc_backend_common::pause::pause_requested(step) {
        return Ok(());
    }
    let mut signals = Signals::new()?;
    tokio::select! {
        _ = tokio::time::sleep(agentc_backend_common::pause::PAUSE_LIMIT) => Ok(()),
        signal = signals.recv() => Err(ExecError::Interrupted { signal, container: None }),
    }
}

/// SIGINT and SIGTERM, listened to for the whole launch.
pub(crate) struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    pub(crate) fn new() -> Result<Self, ExecError> {
        let listen = |kind| {
            signal(kind).map_err(|source| ExecError::Terminal {
                step: "listen for SIGINT and SIGTERM",
                source,
            })
        };
        Ok(Signals {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
        })
    }

    pub(crate) async fn recv(&mut self) -> Interrupt {
        tokio::select! {
            _ = self.interrupt.recv() => Interrupt::Sigint,
            _ = self.terminate.recv() => Interrupt::Sigterm,
        }
    }
}
