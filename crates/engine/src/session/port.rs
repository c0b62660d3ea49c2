//! [`SessionPort`]: the engine port's session primitives that stream, over which
//! [`Sandboxes`](super::Sandboxes) and the copy ([`super::transfer`]) are written.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;

use tokio::sync::mpsc::{Receiver, Sender};

use super::{Captured, ExecRequest, LogsRequest, OutputSink, PathKind, Sandbox, SessionError};
use crate::port::EnginePort;

/// The session primitives that stream (an exec's input and output, the logs, the copies' tar
/// streams) and the memory checkpoints: each backend reads the engine's answers to them its
/// own way (docker's stderr interleaved with the command's, the Engine API's exec inspect), so
/// they return the session's error ([`SessionError`]) directly.
/// [`Sandboxes`](super::Sandboxes) and the copy ([`super::transfer`]) are written over
/// them.
pub trait SessionPort: EnginePort {
    /// The port a client whose environment is `env` drives: the command line's commands run
    /// with it (the program reads `DOCKER_HOST` and a secret passed by name from it); the
    /// Engine API's connection is made already, and its port is kept as it is.
    fn in_env(self, env: &BTreeMap<String, String>) -> Self
    where
        Self: Sized,
    {
        let _ = env;
        self
    }

    /// Runs a command in the running sandbox ([`SandboxClient::exec`](super::SandboxClient::exec)): its
    /// secrets read from `env` by name, its output handed to `output` as it arrives; returns
    /// its exit code. The container not running is [`SessionError::NotRunning`],
    /// its end meanwhile [`SessionError::Gone`].
    fn exec(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        output: &mut dyn OutputSink,
    ) -> impl Future<Output = Result<i64, SessionError>> + Send;

    /// Starts `request` in the running sandbox (its secrets read from `env` by name) without
    /// attaching to it or waiting for its end ([`SandboxClient::exec_detached`](super::SandboxClient::exec_detached)):
    /// `docker exec --detach`. An exec the engine does not start (the container not running,
    /// the program missing) is the error.
    fn exec_detached(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Writes the container's logs to `output` ([`SandboxClient::logs`](super::SandboxClient::logs)).
    fn follow_logs(
        &self,
        sandbox: &Sandbox,
        request: &LogsRequest,
        output: &mut dyn OutputSink,
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// What `path` is in the container through the archive endpoint
    /// ([`PathKind::Missing`] when there is nothing).
    fn archive_stat(
        &self,
        sandbox: &Sandbox,
        path: &str,
    ) -> impl Future<Output = Result<PathKind, SessionError>> + Send;

    /// Extracts the tar stream `chunks` into the container's `directory` through the archive
    /// endpoint, the files owned by the container's user. The daemon's refusal is
    /// [`SessionError::CopyFailed`] for `landing`.
    fn archive_put(
        &self,
        sandbox: &Sandbox,
        directory: &str,
        landing: &str,
        chunks: Receiver<Vec<u8>>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Sends the tar stream of the container's `path` to `sink`, chunk by chunk, through the
    /// archive endpoint. The daemon's refusal is
    /// [`SessionError::CopyFailed`] for `path`.
    fn archive_get(
        &self,
        sandbox: &Sandbox,
        path: &str,
        sink: Sender<Vec<u8>>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Runs `request` (its secrets read from `env`) with `stdin` fed from `chunks` (closed at
    /// their end) and returns its exit code and captured output; the container stopping
    /// meanwhile is [`SessionError::Gone`]: [`SessionPort::exec_duplex`] into a capture.
    fn exec_fed(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        chunks: Receiver<Vec<u8>>,
    ) -> impl Future<Output = Result<(i64, Captured), SessionError>> + Send {
        async move {
            let mut output = Captured::default();
            let code = self
                .exec_duplex(sandbox, request, env, chunks, &mut output)
                .await?;
            Ok((code, output))
        }
    }

    /// Runs `request` (its secrets read from `env`) with `stdin` fed from `chunks` as they come
    /// (closed when their sender is dropped) and its output handed to `output` as it arrives:
    /// a conversation with a process that stays, such as `agentc serve`'s runner; returns its
    /// exit code.
    fn exec_duplex(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        chunks: Receiver<Vec<u8>>,
        output: &mut dyn OutputSink,
    ) -> impl Future<Output = Result<i64, SessionError>> + Send;

    /// Runs `request` (its secrets read from `env`) without stdin, its stdout sent to `sink`
    /// chunk by chunk, and returns its exit code and stderr.
    fn exec_drained(
        &self,
        sandbox: &Sandbox,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        sink: Sender<Vec<u8>>,
    ) -> impl Future<Output = Result<(i64, Vec<u8>), SessionError>> + Send;

    /// [`SandboxClient::memory_support`](super::SandboxClient::memory_support).
    fn memory_support(&self) -> impl Future<Output = Result<(), String>> + Send;

    /// [`SandboxClient::checkpoint`](super::SandboxClient::checkpoint).
    fn checkpoint(
        &self,
        sandbox: &Sandbox,
        file: &Path,
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Restores the checkpoint archive `file` as a new running container named `name`
    /// ([`SandboxClient::restore_checkpoint`](super::SandboxClient::restore_checkpoint)).
    fn restore_checkpoint(
        &self,
        file: &Path,
        name: &str,
    ) -> impl Future<Output = Result<(), SessionError>> + Send;
}
