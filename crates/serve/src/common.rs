//! What the methods of `agentc serve` share: agentc's failures as JSON-RPC errors, the
//! session a request names, and the names of sessions' sandboxes.

use std::collections::BTreeMap;

use agentc_engine::session::{Sandbox, SandboxClient, SessionError, SessionPort};
use agentc_engine::ExecError;
use agentc_policy::Hint;

use super::protocol::*;
use super::{Server, Session};
use agentc_host::{Failure, EXIT_DOCKER, EXIT_INVALID, EXIT_NO_INPUT};

/// A session error as agentc's JSON-RPC error: the command line's exit status and message.
pub fn session_error(error: SessionError) -> RpcError {
    let kind = match &error {
        SessionError::NoSuchPath { .. }
        | SessionError::Launch(ExecError::NoSuchContainer { .. })
        | SessionError::Launch(ExecError::ImageMissing { .. }) => "not_found",
        SessionError::NotRunning { .. }
        | SessionError::Paused { .. }
        | SessionError::Gone { .. } => "not_running",
        SessionError::Invalid { .. }
        | SessionError::BadName { .. }
        | SessionError::BadContainerPath { .. } => "invalid",
        other if other.exit_code() == i32::from(EXIT_DOCKER) => "engine",
        _ => "failed",
    };
    let code = u8::try_from(error.exit_code()).unwrap_or(EXIT_DOCKER);
    RpcError::agentc(code, kind, &error)
}

/// A command line failure as agentc's JSON-RPC error.
pub fn failure(failure: Failure) -> RpcError {
    let kind = match failure.code {
        EXIT_INVALID | 2 => "invalid",
        EXIT_NO_INPUT => "not_found",
        EXIT_DOCKER => "engine",
        _ => "failed",
    };
    RpcError::agentc(failure.code, kind, &failure)
}

/// An invalid request (65), with its hint.
pub fn invalid(message: String, hint: &str) -> RpcError {
    RpcError::agentc(EXIT_INVALID, "invalid", &Hint::new(message, hint))
}

/// A name for a session's sandbox that names none: `PROFILE-sPID-N`, unique in this process,
/// one DNS label (the profile's name cut as needed), so that an egress proxy can find it.
pub fn sandbox_name(profile: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let suffix = format!(
        "-s{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let room = agentc_policy::MAX_DNS_LABEL.saturating_sub(suffix.len());
    let stem: String = profile.chars().take(room).collect();
    format!("{}{suffix}", stem.trim_end_matches(['-', '_', '.']))
}

/// The session a request names: one of this server's, else any sandbox agentc created.
pub async fn session<P: SessionPort>(
    server: &Server<'_, P>,
    name: &str,
) -> Result<Session, RpcError> {
    if let Some(session) = server.session(name) {
        return Ok(session);
    }
    let sandbox = server.client().find(name).await.map_err(session_error)?;
    Ok(Session {
        sandbox,
        keep: true,
        env: BTreeMap::new(),
        runner: false,
    })
}

/// A sandbox's handle as results carry it.
pub fn sandbox_ref(sandbox: &Sandbox) -> SandboxRef {
    SandboxRef {
        name: sandbox.name.clone(),
        id: sandbox.id.clone(),
    }
}

/// Whether `sandbox` runs, and the engine's word for its state.
pub async fn running_of<P: SessionPort>(
    server: &Server<'_, P>,
    sandbox: &Sandbox,
) -> Result<RunningOut, RpcError> {
    let inspect = server
        .client()
        .inspect(sandbox)
        .await
        .map_err(session_error)?;
    let status = agentc_engine::snapshot::state_of(&inspect);
    Ok(RunningOut {
        running: status == "running",
        status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hint_becomes_the_errors_hint_field() {
        let error = RpcError::agentc(1, "failed", &Hint::new("no such thing", "make it"));
        assert_eq!(error.message, "no such thing\n  hint: make it");
        assert_eq!(error.data.unwrap().hint.as_deref(), Some("make it"));
    }

    #[test]
    fn a_sandbox_name_is_one_dns_label() {
        let name = sandbox_name(&"p".repeat(63));
        assert!(name.len() <= 63, "{name}");
        assert!(name.starts_with("ppp"), "{name}");
        assert_ne!(sandbox_name("p"), sandbox_name("p"));
    }
}
