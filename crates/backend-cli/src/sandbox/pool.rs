//! The warm pools' primitives of [`CliClient`] (issue 22): `docker rename`, `docker ps`
//! by label, `docker image inspect`, and the removal of a workload's egress companions.

use std::collections::BTreeMap;

use agentc_backend_common::session::{ImageFacts, Listed, Sandbox, SessionError};
use agentc_backend_common::ExecError;
use agentc_policy::{LABEL_EGRESS_FOR, LABEL_PROFILE};

use super::{daemon, CliClient};

/// What `docker ps` prints of each pool container: a JSON object of the four fields read.
const PS_FORMAT: &str = r#"{"ID":{{json .ID}},"Names":{{json .Names}},"State":{{json .State}},"Labels":{{json .Labels}}}"#;

/// docker could not be run at all.
fn cannot_run(message: String) -> SessionError {
    SessionError::CannotRunDocker {
        engine: agentc_backend_common::engine(),
        source: std::io::Error::other(message),
    }
}

impl CliClient {
    pub(crate) async fn rename_member(
        &self,
        from: &Sandbox,
        to: &str,
    ) -> Result<Option<Sandbox>, SessionError> {
        match self.output(&["rename", &from.name, to]).await {
            Ok(_) => Ok(Some(Sandbox {
                id: from.id.clone(),
                name: to.to_string(),
                profile: from.profile.clone(),
            })),
            Err((Some(_), message))
                if agentc_backend_common::daemon_text::is_no_such_container(&message)
                    || message.contains("same name as its current name") =>
            {
                Ok(None)
            }
            Err((None, message)) => Err(cannot_run(message)),
            Err((Some(_), message)) => Err(daemon("rename the container", message)),
        }
    }

    pub(crate) async fn list_with_label(&self, label: &str) -> Result<Vec<Listed>, SessionError> {
        let label_filter = format!("label={label}");
        let profile_filter = format!("label={LABEL_PROFILE}");
        // The fields read, by name: `{{json .}}` would print `.Size` too, which makes the
        // daemon measure every container's writable layer (over 100 ms for two members
        // here, against 10 ms without).
        let listed = self
            .output(&[
                "ps",
                "--all",
                "--no-trunc",
                "--filter",
                &label_filter,
                "--filter",
                &profile_filter,
                "--format",
                PS_FORMAT,
            ])
            .await
            .map_err(|(code, message)| match code {
                None => cannot_run(message),
                Some(_) => daemon("list containers", message),
            })?;
        let text = String::from_utf8_lossy(&listed);
        let mut found = Vec::new();
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            let row: serde_json::Value =
                serde_json::from_str(line).map_err(|error| SessionError::ConnectionLost {
                    step: "read `docker ps`",
                    message: error.to_string(),
                })?;
            let field = |key: &str| row[key].as_str().unwrap_or_default().to_string();
            // `docker ps` prints the labels as `k=v,k=v`; agentc's values hold no comma.
            let labels: BTreeMap<String, String> = field("Labels")
                .split(',')
                .filter_map(|pair| pair.split_once('='))
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect();
            found.push(Listed {
                sandbox: Sandbox {
                    id: field("ID"),
                    name: field("Names"),
                    profile: labels.get(LABEL_PROFILE).cloned().unwrap_or_default(),
                },
                state: field("State"),
                labels,
            });
        }
        Ok(found)
    }

    pub(crate) async fn facts_of_image(&self, image: &str) -> Result<ImageFacts, SessionError> {
        let inspected = self
            .output(&[
                "image",
                "inspect",
                "--format",
                "{{json .Id}} {{json .Config.Entrypoint}} {{json .Config.Cmd}}",
                image,
            ])
            .await;
        let text = match inspected {
            Ok(text) => String::from_utf8_lossy(&text).into_owned(),
            Err((Some(_), message))
                if agentc_backend_common::daemon_text::is_no_such_image(&message) =>
            {
                return Err(ExecError::ImageMissing {
                    image: image.to_string(),
                }
                .into())
            }
            Err((None, message)) => return Err(cannot_run(message)),
            Err((Some(_), message)) => return Err(daemon("inspect the image", message)),
        };
        let mut values =
            serde_json::Deserializer::from_str(text.trim()).into_iter::<serde_json::Value>();
        let mut next = || values.next().and_then(Result::ok).unwrap_or_default();
        let strings = |value: serde_json::Value| -> Vec<String> {
            value
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|item| item.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let id = next().as_str().unwrap_or_default().to_string();
        let entrypoint = strings(next());
        let cmd = strings(next());
        Ok(ImageFacts {
            id,
            entrypoint,
            cmd,
        })
    }

    /// The words `docker ARGS` prints (names, one a line).
    async fn names(&self, args: &[&str]) -> Result<Vec<String>, SessionError> {
        self.output(args)
            .await
            .map(|text| {
                String::from_utf8_lossy(&text)
                    .split_whitespace()
                    .map(str::to_string)
                    .collect()
            })
            .map_err(|(_, message)| daemon("list the egress companions", message))
    }

    pub(crate) async fn remove_companions_of(
        &self,
        workload: &str,
    ) -> Result<Vec<String>, SessionError> {
        let filter = format!("label={LABEL_EGRESS_FOR}={workload}");
        let mut removed = Vec::new();
        for proxy in self
            .names(&["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"])
            .await?
        {
            self.output(&["rm", "--force", &proxy])
                .await
                .map_err(|(_, message)| daemon("remove the egress proxy", message))?;
            removed.push(proxy);
        }
        for network in self
            .names(&[
                "network",
                "ls",
                "--filter",
                &filter,
                "--format",
                "{{.Name}}",
            ])
            .await?
        {
            match self.output(&["network", "rm", &network]).await {
                Ok(_) => removed.push(format!("network {network}")),
                Err((_, message)) if message.contains("not found") => {}
                Err((_, message)) => return Err(daemon("remove the isolated network", message)),
            }
        }
        for volume in self
            .names(&["volume", "ls", "-q", "--filter", &filter])
            .await?
        {
            if self
                .output(&["volume", "rm", "--force", &volume])
                .await
                .is_ok()
            {
                removed.push(format!("volume {volume}"));
            }
        }
        Ok(removed)
    }
}
