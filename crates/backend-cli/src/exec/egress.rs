//! The engine port through the command line for blocking callers: [`block_on`], which runs an orchestration written once over
//! it ([`agentc_engine::companion`]: the proxy image's import) on a runtime of its
//! own.

use std::future::Future;

use agentc_egress::image::ProxyExecutable;
use agentc_engine::companion;
use agentc_engine::{Engine, ExecError};

use super::port::CliPort;

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

/// The tag of the proxy image of the agentc executable `source`, imported unless the engine
/// has it ([`companion::own_proxy_image`]); also the image of the isolation probe.
pub fn own_proxy_image(engine: Engine, source: &ProxyExecutable) -> Result<String, ExecError> {
    block_on(companion::own_proxy_image(&CliPort::new(engine), source))?
}

/// Imports an image built here ([`agentc_egress::image`]) unless the engine has its tag
/// ([`companion::import_unless_present`]); returns the tag.
pub fn import_unless_present(
    engine: Engine,
    image: &agentc_egress::image::Image,
) -> Result<String, ExecError> {
    block_on(companion::import_unless_present(
        &CliPort::new(engine),
        image,
    ))?
    .map_err(|error| ExecError::Egress {
        step: companion::BUILD_PROXY_IMAGE,
        message: format!("cannot import {}: {error}", image.tag),
        refusal: None,
    })
}
