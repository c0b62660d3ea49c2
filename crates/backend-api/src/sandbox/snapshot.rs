//! The snapshot operations of [`ApiClient`]: `POST /containers/{id}/pause` and `unpause`,
//! `POST /commit`, `GET /images/json` and `/images/{name}/json`, `DELETE /images/{name}` and
//! `GET /volumes/{name}`.

use std::collections::HashMap;

use agentc_backend_common::session::{CommitRequest, ImageRecord, Sandbox, SessionError};
use bollard::models::ContainerConfig;
use bollard::query_parameters::{
    CommitContainerOptionsBuilder, ListImagesOptionsBuilder, RemoveImageOptionsBuilder,
};

use super::{session_error, ApiClient};
use crate::daemon::is_not_found;

impl ApiClient {
    pub(super) async fn freeze(&self, sandbox: &Sandbox, thaw: bool) -> Result<(), SessionError> {
        let result = if thaw {
            self.docker.unpause_container(&sandbox.id).await
        } else {
            self.docker.pause_container(&sandbox.id).await
        };
        match result {
            Ok(()) => Ok(()),
            Err(error) if is_not_found(&error) => Err(SessionError::NoSuchContainer {
                name: sandbox.name.clone(),
            }),
            Err(error) => Err(session_error(
                if thaw {
                    "unpause the container"
                } else {
                    "pause the container"
                },
                error,
            )),
        }
    }

    pub(super) async fn commit_layer(
        &self,
        sandbox: &Sandbox,
        request: &CommitRequest,
    ) -> Result<String, SessionError> {
        let (repo, tag) = match request.reference.rsplit_once(':') {
            Some((repo, tag)) if !tag.contains('/') => (repo, tag),
            _ => (request.reference.as_str(), "latest"),
        };
        // The changes as the docker CLI sends them: one instruction a line.
        let changes = request.changes.join("\n");
        let mut options = CommitContainerOptionsBuilder::new()
            .container(&sandbox.id)
            .repo(repo)
            .tag(tag)
            .pause(request.pause);
        if !changes.is_empty() {
            options = options.changes(&changes);
        }
        match self
            .docker
            .commit_container(options.build(), ContainerConfig::default())
            .await
        {
            Ok(response) => Ok(response.id),
            Err(error) if is_not_found(&error) => Err(SessionError::NoSuchContainer {
                name: sandbox.name.clone(),
            }),
            Err(error) => Err(session_error("commit the container", error)),
        }
    }

    pub(super) async fn image_record(
        &self,
        reference: &str,
    ) -> Result<Option<ImageRecord>, SessionError> {
        match self.docker.inspect_image(reference).await {
            Ok(inspect) => {
                let value = serde_json::to_value(&inspect).map_err(|error| {
                    SessionError::ConnectionLost {
                        step: "read the image's inspect",
                        message: error.to_string(),
                    }
                })?;
                Ok(ImageRecord::from_inspect(&value))
            }
            Err(error) if is_not_found(&error) => Ok(None),
            Err(error) => Err(session_error("inspect the image", error)),
        }
    }

    pub(super) async fn labelled_images(
        &self,
        label: &str,
    ) -> Result<Vec<ImageRecord>, SessionError> {
        let filters = HashMap::from([("label", vec![label])]);
        let options = ListImagesOptionsBuilder::new().filters(&filters).build();
        let listed = self
            .docker
            .list_images(Some(options))
            .await
            .map_err(|error| session_error("list images", error))?;
        let mut records = Vec::new();
        for summary in listed {
            if let Some(record) = self.image_record(&summary.id).await? {
                records.push(record);
            }
        }
        records.sort_by(|a, b| a.created.cmp(&b.created));
        Ok(records)
    }

    pub(super) async fn drop_image(&self, reference: &str) -> Result<(), SessionError> {
        let options = RemoveImageOptionsBuilder::new().force(true).build();
        self.docker
            .remove_image(reference, Some(options), None)
            .await
            .map(|_| ())
            .map_err(|error| session_error("remove the image", error))
    }

    pub(super) async fn has_volume(&self, name: &str) -> Result<bool, SessionError> {
        match self.docker.inspect_volume(name).await {
            Ok(_) => Ok(true),
            Err(error) if is_not_found(&error) => Ok(false),
            Err(error) => Err(session_error("inspect the volume", error)),
        }
    }
}

/// Why the Engine API backend takes no memory checkpoints.
pub(super) const NO_MEMORY: &str = "the Engine API backend (Docker's checkpoint is experimental \
    and restores only into the same container; Podman's Docker-compatible API has no \
    checkpoint export or import: `--backend cli --engine podman` does it)";

/// The refusal of a memory checkpoint through the Engine API.
pub(super) fn no_memory() -> SessionError {
    SessionError::Invalid {
        message: format!("memory checkpoints are not available through {NO_MEMORY}"),
        hint: "snapshot without --memory, or use `--backend cli --engine podman` with CRIU",
    }
}
