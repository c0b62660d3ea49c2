//! SIGINT and SIGTERM for the whole launch: a leaf module the launch and the session use (the
//! companion's set-up asks the launch's [`Signals`] between its steps, and pauses where a
//! test asks, in [`agentc_backend_common::companion`]).

use agentc_backend_common::{ExecError, Interrupt};
use tokio::signal::unix::{signal, Signal, SignalKind};

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
