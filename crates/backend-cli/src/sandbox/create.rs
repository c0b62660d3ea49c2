//! The creation and removal of a session's container by [`CliClient`]: `docker run
//! --detach` with the egress companion already in place, and `docker rm --force`.

use agentc_backend_common::session::{DeleteReport, Sandbox, SandboxClient, SessionError};
use agentc_policy::LaunchSpec;

use super::{daemon, tempfile_dir, CliClient};

impl CliClient {
    /// Creates and starts the container of a session's launch, its egress companion (if any)
    /// in place; removes it again when it does not start.
    pub(super) async fn create_placed(
        &self,
        spec: &LaunchSpec,
        container: &agentc_policy::ContainerSpec,
    ) -> Result<Sandbox, SessionError> {
        let mut argv =
            crate::exec::engine::launch_argv(agentc_backend_common::engine(), container)?;
        let name = container.name.clone().unwrap_or_default();
        let cid_dir = tempfile_dir()?;
        let cid_file = cid_dir.join("cid");
        argv.insert(2, format!("--cidfile={}", cid_file.display()));
        let refs: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
        let secrets = agentc_backend_common::secrets::secret_values(container, &self.env);
        let result = self.output_with(&refs, &secrets).await;
        let created = std::fs::read_to_string(&cid_file).ok();
        let _ = std::fs::remove_dir_all(&cid_dir);
        match result {
            Ok(_) => Ok(Sandbox {
                id: created.unwrap_or(name.clone()).trim().to_string(),
                name,
                profile: spec.profile.clone(),
            }),
            Err((None, message)) => Err(SessionError::CannotRunDocker {
                engine: agentc_backend_common::engine(),
                source: std::io::Error::other(message),
            }),
            Err((Some(_), message)) => {
                let Some(id) = created.filter(|id| !id.trim().is_empty()) else {
                    return Err(daemon("create the container", message));
                };
                let sandbox = Sandbox {
                    id: id.trim().to_string(),
                    name,
                    profile: spec.profile.clone(),
                };
                let report = self.delete(&sandbox).await;
                let cause = daemon("start the container", message);
                if report.left.is_empty() {
                    Err(cause)
                } else {
                    Err(SessionError::ConnectionLost {
                        step: "remove the container of a failed create",
                        message: format!("{cause}; left: {}", report.left.join("; ")),
                    })
                }
            }
        }
    }
}

impl CliClient {
    /// Kills and removes the sandbox's container, best effort ([`SandboxClient::delete`]
    /// removes its egress companions after it).
    pub(super) async fn delete_container(&self, sandbox: &Sandbox) -> DeleteReport {
        // `docker rm --force` is silent about a container that is already gone: ask first.
        if let Err(SessionError::NoSuchContainer { .. }) = self.inspect_named(&sandbox.id).await {
            return DeleteReport::default();
        }
        let _ = self.output(&["kill", &sandbox.id]).await;
        match self.output(&["rm", "--force", &sandbox.id]).await {
            Ok(_) => DeleteReport {
                removed: true,
                left: Vec::new(),
            },
            Err((Some(_), message))
                if agentc_backend_common::daemon_text::is_no_such_container(&message) =>
            {
                DeleteReport::default()
            }
            Err((Some(_), message))
                if agentc_backend_common::daemon_text::refusal(&message)
                    == Some(agentc_backend_common::daemon_text::Refusal::RemovalInProgress) =>
            {
                DeleteReport {
                    removed: true,
                    left: Vec::new(),
                }
            }
            Err((_, message)) => DeleteReport {
                removed: false,
                left: vec![format!("container {}: {message}", sandbox.name)],
            },
        }
    }
}
