//! The memory engine's session primitives: execs answered from what the engine was told
//! ([`MemoryEngine::with_exec`]), logs from the container's; it keeps no files and no memory
//! checkpoints, and says so.

use std::collections::BTreeMap;
use std::path::Path;

use tokio::sync::mpsc::{Receiver, Sender};

use super::{MemoryEngine, RunState};
use crate::port::{EngineError, EngineErrorKind};
use crate::session::port::SessionPort;
use crate::session::sandboxes::engine_failure;
use crate::session::{
    ExecRequest, LogsRequest, OutputSink, PathKind, Sandbox, SessionError, Stream,
};
use crate::ExecError;

const NO_FILES: &str = "test file copies against a daemon: the memory engine keeps no files";

impl MemoryEngine {
    /// The exec of `request` in `sandbox`: recorded, failed when asked, refused unless the
    /// container runs; its scripted output handed to `output`.
    fn session_exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        output: &mut dyn OutputSink,
    ) -> Result<i64, SessionError> {
        self.enter("exec", &sandbox.name)
            .map_err(|error| engine_failure(self.engine, "run a command", error))?;
        let state = {
            let world = super::lock(&self.world);
            world.container(&sandbox.id).map(|found| found.state)
        };
        match state {
            None => Err(ExecError::NoSuchContainer {
                name: sandbox.name.clone(),
            }
            .into()),
            Some(RunState::Paused) => Err(SessionError::Paused {
                name: sandbox.name.clone(),
            }),
            Some(RunState::Running) => {
                let command: Vec<&str> = request.command.iter().map(String::as_str).collect();
                let (code, stdout) = self.exec_result(&command);
                output
                    .write(Stream::Stdout, stdout.as_bytes())
                    .map_err(|source| SessionError::Io {
                        step: "write the output",
                        source,
                    })?;
                Ok(code)
            }
            Some(_) => Err(SessionError::NotRunning {
                name: sandbox.name.clone(),
            }),
        }
    }
}

impl SessionPort for MemoryEngine {
    async fn exec_detached(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        _env: &BTreeMap<String, String>,
    ) -> Result<(), SessionError> {
        self.session_exec(sandbox, request, &mut crate::session::Captured::default())
            .map(|_| ())
    }

    async fn exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        output: &mut dyn OutputSink,
    ) -> Result<i64, SessionError> {
        let _ = env;
        self.session_exec(sandbox, request, output)
    }

    async fn follow_logs(
        &self,
        sandbox: &Sandbox,
        request: &LogsRequest,
        output: &mut dyn OutputSink,
    ) -> Result<(), SessionError> {
        let _ = request;
        let logs = crate::port::EnginePort::logs(self, &sandbox.id, true)
            .await
            .map_err(|error| engine_failure(self.engine, "read the logs", error))?;
        output
            .write(Stream::Stdout, logs.as_bytes())
            .map_err(|source| SessionError::Io {
                step: "write the logs",
                source,
            })
    }

    async fn archive_stat(&self, sandbox: &Sandbox, path: &str) -> Result<PathKind, SessionError> {
        let _ = (sandbox, path);
        Err(SessionError::invalid(
            "the memory engine keeps no files",
            NO_FILES,
        ))
    }

    async fn archive_put(
        &self,
        sandbox: &Sandbox,
        directory: &str,
        landing: &str,
        chunks: Receiver<Vec<u8>>,
    ) -> Result<(), SessionError> {
        let _ = (sandbox, directory, landing, chunks);
        Err(SessionError::invalid(
            "the memory engine keeps no files",
            NO_FILES,
        ))
    }

    async fn archive_get(
        &self,
        sandbox: &Sandbox,
        path: &str,
        sink: Sender<Vec<u8>>,
    ) -> Result<(), SessionError> {
        let _ = (sandbox, path, sink);
        Err(SessionError::invalid(
            "the memory engine keeps no files",
            NO_FILES,
        ))
    }

    async fn exec_duplex(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        mut chunks: Receiver<Vec<u8>>,
        output: &mut dyn OutputSink,
    ) -> Result<i64, SessionError> {
        let _ = env;
        chunks.close();
        self.session_exec(sandbox, request, output)
    }

    async fn exec_drained(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        sink: Sender<Vec<u8>>,
    ) -> Result<(i64, Vec<u8>), SessionError> {
        let _ = env;
        let mut captured = crate::session::Captured::default();
        let code = self.session_exec(sandbox, request, &mut captured)?;
        if !captured.stdout.is_empty() && sink.send(captured.stdout).await.is_err() {
            return Err(SessionError::Gone {
                name: sandbox.name.clone(),
                step: "send the output",
            });
        }
        Ok((code, captured.stderr))
    }

    async fn memory_support(&self) -> Result<(), String> {
        Err("the memory engine takes no memory checkpoints".to_string())
    }

    async fn checkpoint(&self, sandbox: &Sandbox, file: &Path) -> Result<(), SessionError> {
        let _ = file;
        Err(engine_failure(
            self.engine,
            "checkpoint the container",
            EngineError::new(
                EngineErrorKind::Unsupported,
                format!("{}: the memory engine takes no checkpoints", sandbox.name),
            ),
        ))
    }

    async fn restore_checkpoint(&self, file: &Path, name: &str) -> Result<(), SessionError> {
        let _ = file;
        Err(engine_failure(
            self.engine,
            "restore the checkpoint",
            EngineError::new(
                EngineErrorKind::Unsupported,
                format!("{name}: the memory engine takes no checkpoints"),
            ),
        ))
    }
}
