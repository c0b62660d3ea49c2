//! SIGINT and SIGTERM for the whole launch: a leaf module the launch and the session use (the
//! companion's set-up asks the launch's [`Signals`] between its steps, and pauses where a
//! test asks, in [`agentc_backend_common::companion`]).

use agentc_backend_common::{ExecError, Interrupt};
use tokio::signal::unix::{signal, Signal, SignalKind};

/// SIGINT and SIGTERM, listened to for the whole launch (or a whole `agentc verify`).
pub struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    /// Listens from now on: a signal received before [`Signals::recv`] is asked is not lost.
    pub fn new() -> Result<Self, ExecError> {
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

    /// The next SIGINT or SIGTERM (one received since [`Signals::new`] at once).
    pub async fn recv(&mut self) -> Interrupt {
        tokio::select! {
            _ = self.interrupt.recv() => Interrupt::Sigint,
            _ = self.terminate.recv() => Interrupt::Sigterm,
        }
    }
}

impl agentc_backend_common::detached::Interrupts for Signals {
    fn pending(&mut self) -> Option<Interrupt> {
        use futures_util::FutureExt;
        self.recv().now_or_never()
    }

    async fn recv(&mut self) -> Interrupt {
        Signals::recv(self).await
    }
}
