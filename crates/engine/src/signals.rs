//! SIGINT and SIGTERM for a whole launch: [`Interrupts`], what the orchestration asks between
//! its steps and races against the engine's, and [`Signals`], the process's own through tokio.
//! A leaf module: the [port](crate::port) and the [launch](crate::launch) both use it.

use std::future::Future;

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::{ExecError, Interrupt};

/// Where a launch's SIGINT and SIGTERM come from, listened to from before its first step (a
/// signal between steps is then never lost).
pub trait Interrupts: Send {
    /// The signal received since the launch began and not yet taken, without waiting.
    fn pending(&mut self) -> Option<Interrupt>;

    /// The next signal (one already received at once).
    fn recv(&mut self) -> impl Future<Output = Interrupt> + Send;

    /// Another listener to the same signals, from now on, for a step that runs alongside
    /// others (each copy of `agentc run --count`).
    fn another(&self) -> Result<Self, ExecError>
    where
        Self: Sized;
}

/// SIGINT and SIGTERM of this process, listened to for the whole launch (or a whole `agentc
/// verify`). A handler, unlike `SIG_IGN`, is reset by `exec`: an engine's command line started
/// meanwhile still receives a terminal's Ctrl-C itself.
pub struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    /// Listens from now on: a signal received before [`Signals::recv`] is asked is not lost.
    /// Needs a tokio runtime with I/O enabled.
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

impl Interrupts for Signals {
    fn pending(&mut self) -> Option<Interrupt> {
        use futures_util::FutureExt;
        self.recv().now_or_never()
    }

    async fn recv(&mut self) -> Interrupt {
        Signals::recv(self).await
    }

    fn another(&self) -> Result<Self, ExecError> {
        Signals::new()
    }
}

/// No signals: a library caller's launch that nothing interrupts (a session's `create`).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoInterrupts;

impl Interrupts for NoInterrupts {
    fn pending(&mut self) -> Option<Interrupt> {
        None
    }

    async fn recv(&mut self) -> Interrupt {
        std::future::pending().await
    }

    fn another(&self) -> Result<Self, ExecError> {
        Ok(NoInterrupts)
    }
}
