//! The snapshot operations of [`CliClient`]: `docker pause`, `docker unpause`,
//! `docker commit`, `docker image inspect`/`ls`/`rm` and `docker volume inspect`.

use agentc_backend_common::session::{CommitRequest, ImageRecord, Sandbox, SessionError};

use super::{container_error, daemon, CliClient};

/// docker's word for an image or volume that is not there.
fn is_missing(message: &str) -> bool {
    [
        "No such image",
        "No such object",
        "image not known",
        "no such volume",
        "No such volume",
    ]
    .iter()
    .any(|sign| message.contains(sign))
}

fn cannot_run(message: String) -> SessionError {
    SessionError::CannotRunDocker {
        engine: agentc_backend_common::engine(),
        source: std::io::Error::other(message),
    }
}

impl CliClient {
    pub(super) async fn freeze(&self, sandbox: &Sandbox, thaw: bool) -> Result<(), SessionError> {
        let (verb, step) = if thaw {
            ("unpause", "unpause the container")
        } else {
            ("pause", "pause the container")
        };
        self.output(&[verb, &sandbox.id])
            .await
            .map(|_| ())
            .map_err(|failure| container_error(sandbox, step, failure))
    }

    pub(super) async fn commit_layer(
        &self,
        sandbox: &Sandbox,
        request: &CommitRequest,
    ) -> Result<String, SessionError> {
        let pause = format!("--pause={}", request.pause);
        let mut args = vec!["commit".to_string(), pause];
        for change in &request.changes {
            args.push(format!("--change={change}"));
        }
        args.push(sandbox.id.clone());
        args.push(request.reference.clone());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = self
            .output(&refs)
            .await
            .map_err(|failure| container_error(sandbox, "commit the container", failure))?;
        Ok(String::from_utf8_lossy(&output).trim().to_string())
    }

    pub(super) async fn image_record(
        &self,
        reference: &str,
    ) -> Result<Option<ImageRecord>, SessionError> {
        match self.output(&["image", "inspect", "--", reference]).await {
            Ok(text) => {
                let values: Vec<serde_json::Value> =
                    serde_json::from_slice(&text).map_err(|error| {
                        SessionError::ConnectionLost {
                            step: "read `docker image inspect`",
                            message: error.to_string(),
                        }
                    })?;
                Ok(values.first().and_then(ImageRecord::from_inspect))
            }
            Err((Some(_), message)) if is_missing(&message) => Ok(None),
            Err((None, message)) => Err(cannot_run(message)),
            Err((Some(_), message)) => Err(daemon("inspect the image", message)),
        }
    }

    pub(super) async fn labelled_images(
        &self,
        label: &str,
    ) -> Result<Vec<ImageRecord>, SessionError> {
        let filter = format!("--filter=label={label}");
        let ids = match self
            .output(&["image", "ls", "--quiet", "--no-trunc", &filter])
            .await
        {
            Ok(text) => String::from_utf8_lossy(&text).into_owned(),
            Err((None, message)) => return Err(cannot_run(message)),
            Err((Some(_), message)) => return Err(daemon("list images", message)),
        };
        let mut seen = std::collections::BTreeSet::new();
        let mut records = Vec::new();
        for id in ids.lines().map(str::trim).filter(|id| !id.is_empty()) {
            if !seen.insert(id.to_string()) {
                continue;
            }
            // An image removed meanwhile is not listed.
            if let Some(record) = self.image_record(id).await? {
                records.push(record);
            }
        }
        records.sort_by(|a, b| a.created.cmp(&b.created));
        Ok(records)
    }

    pub(super) async fn drop_image(&self, reference: &str) -> Result<(), SessionError> {
        match self
            .output(&["image", "rm", "--force", "--", reference])
            .await
        {
            Ok(_) => Ok(()),
            Err((None, message)) => Err(cannot_run(message)),
            Err((Some(_), message)) => Err(daemon("remove the image", message)),
        }
    }

    pub(super) async fn has_volume(&self, name: &str) -> Result<bool, SessionError> {
        match self.output(&["volume", "inspect", "--", name]).await {
            Ok(_) => Ok(true),
            Err((Some(_), message)) if is_missing(&message) => Ok(false),
            Err((None, message)) => Err(cannot_run(message)),
            Err((Some(_), message)) => Err(daemon("inspect the volume", message)),
        }
    }
}
