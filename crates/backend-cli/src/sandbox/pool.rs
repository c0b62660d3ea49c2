//! The warm pools' primitives of [`CliClient`] (issue 22): `docker rename`, `docker ps`
//! by label, `docker image inspect`, and the removal of a workload's egress companions.

use std::collections::BTreeMap;

use agentc_backend_common::session::{ImageFacts, Listed, Sandbox, SessionError};
use agentc_backend_common::ExecError;
use agentc_policy::{LABEL_EGRESS_FOR, LABEL_PROFILE};

use super::{daemon, CliClient};

/// What `docker ps` prints of each pool container: a JSON object of the four fields read.
/// Docker and Podman print them differently ([`parse_ps`]).
const PS_FORMAT: &str = r#"{"ID":{{json .ID}},"Names":{{json .Names}},"State":{{json .State}},"Labels":{{json .Labels}}}"#;

/// The containers `docker ps --format PS_FORMAT` printed, one JSON object a line, as Docker
/// or Podman prints them: `Labels` as `k=v,k=v` (Docker) or as a map (Podman, whose values
/// may hold commas), `Names` as a name or a list, `State` as the state (Docker: `running`,
/// `exited`) or as the status (Podman 4's template: `Up 2 seconds ago`, `Exited (137) ...`,
/// `Created`), read as the state.
fn parse_ps(text: &str) -> Result<Vec<Listed>, SessionError> {
    let mut found = Vec::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let row: serde_json::Value =
            serde_json::from_str(line).map_err(|error| SessionError::ConnectionLost {
                step: "read `docker ps`",
                message: error.to_string(),
            })?;
        let field = |key: &str| row[key].as_str().unwrap_or_default().to_string();
        let labels: BTreeMap<String, String> = match &row["Labels"] {
            serde_json::Value::Object(map) => map
                .iter()
                .map(|(key, value)| (key.clone(), value.as_str().unwrap_or_default().to_string()))
                .collect(),
            // Docker's `k=v,k=v`; agentc's values hold no comma.
            other => other
                .as_str()
                .unwrap_or_default()
                .split(',')
                .filter_map(|pair| pair.split_once('='))
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect(),
        };
        let name = match &row["Names"] {
            serde_json::Value::Array(names) => names
                .first()
                .and_then(|name| name.as_str())
                .unwrap_or_default()
                .to_string(),
            _ => field("Names"),
        };
        found.push(Listed {
            sandbox: Sandbox {
                id: field("ID"),
                name: name.trim_start_matches('/').to_string(),
                profile: labels.get(LABEL_PROFILE).cloned().unwrap_or_default(),
            },
            state: state_of(&field("State")),
            labels,
        });
    }
    Ok(found)
}

/// The state a `ps` row's `State` says: Docker's as it is; Podman 4's status (`Up 2 seconds
/// ago`, `Exited (0) 3 seconds ago`, `Created`) as the state it describes.
fn state_of(printed: &str) -> String {
    let first = printed
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match first.as_str() {
        "up" if printed.contains("(Paused)") => "paused".to_string(),
        "up" => "running".to_string(),
        _ => first,
    }
}

/// What `docker image inspect` prints of the image: its ID, entrypoint and command. `.ID`,
/// not `.Id`: Podman 4 refuses `{{json .Id}}` (`can't evaluate field Id`), Docker reads both.
const IMAGE_FORMAT: &str = "{{json .ID}} {{json .Config.Entrypoint}} {{json .Config.Cmd}}";

/// The facts `docker image inspect --format IMAGE_FORMAT` printed. Podman prints the ID
/// without its `sha256:` (Docker, and either engine's API, with it): added, so that the pool
/// key of one image is the same through both backends.
fn parse_image_facts(text: &str) -> ImageFacts {
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
    let id = if id.len() == 64 && id.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        format!("sha256:{id}")
    } else {
        id
    };
    let entrypoint = strings(next());
    let cmd = strings(next());
    ImageFacts {
        id,
        entrypoint,
        cmd,
    }
}

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
        parse_ps(&String::from_utf8_lossy(&listed))
    }

    pub(crate) async fn facts_of_image(&self, image: &str) -> Result<ImageFacts, SessionError> {
        let inspected = self
            .output(&["image", "inspect", "--format", IMAGE_FORMAT, image])
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
        Ok(parse_image_facts(&text))
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
                Err((_, message))
                    if agentc_backend_common::daemon_text::refusal(&message)
                        == Some(agentc_backend_common::daemon_text::Refusal::NoSuchNetwork) => {}
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `podman ps --all --no-trunc --filter label=io.agentc.pool --filter
    /// label=io.agentc.profile --format PS_FORMAT`, Podman 4.3.1 on this project's machine: a
    /// created, a stopped and a running (claimed) member.
    const PODMAN: &str = r#"{"ID":"85db93bd28e3ca4efe3ee0113ff949070f3b62c2530e8dc110a7012794837367","Names":"agentc-pool-h22-ab12cd34","State":"Created","Labels":{"io.agentc.odd":"a,b=c","io.agentc.pool":"abc123","io.agentc.pool-member":"agentc-pool-h22-ab12cd34","io.agentc.pool-state":"idle","io.agentc.profile":"h22"}}
{"ID":"ed0c3ff6ab4d6ef5a45c5fa4c7a5953d661311f9588a63b1ef8557313bc57b47","Names":"agentc-pool-h22-ef56ab78","State":"Exited (137) 11 seconds ago","Labels":{"io.agentc.pool":"abc123","io.agentc.pool-member":"agentc-pool-h22-ef56ab78","io.agentc.pool-state":"idle","io.agentc.profile":"h22"}}
{"ID":"be8d8f63624b7b24d124eaac757d2222d512b1fc09924e1e38ab51d82b62e045","Names":"agentc-claim-h22-0a1b2c3d","State":"Up 1 second ago","Labels":{"io.agentc.pool":"abc123","io.agentc.pool-credential.api":"5d41402abc4b2a76b9719d911017c592","io.agentc.pool-member":"agentc-pool-h22-0a1b2c3d","io.agentc.pool-state":"idle","io.agentc.profile":"h22"}}
"#;

    /// The same command through Docker 20.10 on this machine: a running member.
    const DOCKER: &str = r#"{"ID":"1c4cf517bac50ff51720d59445d0ff15d7e3274be9735305cb96c970df8acc61","Names":"agentc-pool-h22-9f8e7d6c","State":"running","Labels":"agentc-test.image=busybox,io.agentc.pool-member=agentc-pool-h22-9f8e7d6c,io.agentc.pool-state=idle,io.agentc.pool=abc123,io.agentc.profile=h22"}
"#;

    #[test]
    fn podmans_rows_are_read_as_dockers_are() {
        let podman = parse_ps(PODMAN).unwrap();
        let rows: Vec<(&str, &str, &str)> = podman
            .iter()
            .map(|row| {
                (
                    row.sandbox.name.as_str(),
                    row.state.as_str(),
                    row.labels["io.agentc.pool-member"].as_str(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "agentc-pool-h22-ab12cd34",
                    "created",
                    "agentc-pool-h22-ab12cd34"
                ),
                (
                    "agentc-pool-h22-ef56ab78",
                    "exited",
                    "agentc-pool-h22-ef56ab78"
                ),
                (
                    "agentc-claim-h22-0a1b2c3d",
                    "running",
                    "agentc-pool-h22-0a1b2c3d"
                ),
            ]
        );
        for row in &podman {
            assert_eq!(row.sandbox.profile, "h22");
            assert_eq!(row.labels["io.agentc.pool"], "abc123");
            assert_eq!(row.sandbox.id.len(), 64);
        }
        assert_eq!(podman[0].labels["io.agentc.odd"], "a,b=c");
        assert_eq!(
            podman[2].labels["io.agentc.pool-credential.api"],
            "5d41402abc4b2a76b9719d911017c592"
        );
        let docker = parse_ps(DOCKER).unwrap();
        assert_eq!(docker.len(), 1);
        assert_eq!(docker[0].sandbox.name, "agentc-pool-h22-9f8e7d6c");
        assert_eq!(docker[0].sandbox.profile, "h22");
        assert_eq!(docker[0].state, "running");
        assert_eq!(docker[0].labels["io.agentc.pool"], "abc123");
        assert_eq!(docker[0].labels.len(), 5);
        // Podman's list of names, and a paused status.
        let listed = parse_ps(
            r#"{"ID":"x","Names":["agentc-pool-p-1"],"State":"Up 3 seconds ago (Paused)","Labels":{}}"#,
        )
        .unwrap();
        assert_eq!(listed[0].sandbox.name, "agentc-pool-p-1");
        assert_eq!(listed[0].state, "paused");
        assert!(parse_ps("not json").is_err());
    }

    #[test]
    fn podmans_image_inspect_is_read_as_dockers_is() {
        // `podman image inspect --format IMAGE_FORMAT` (Podman 4.3.1), then `docker ...`
        // (Docker 20.10), of one image on this machine.
        let podman = parse_image_facts(
            "\"99ab431b624cbe19861e0c020523c38ab0ae091e05a3fd4255aab21d4a7a8955\" null [\"/bin/sh\"]\n",
        );
        let docker = parse_image_facts(
            "\"sha256:99ab431b624cbe19861e0c020523c38ab0ae091e05a3fd4255aab21d4a7a8955\" null [\"/bin/sh\"]\n",
        );
        assert_eq!(podman, docker);
        assert_eq!(
            docker.id,
            "sha256:99ab431b624cbe19861e0c020523c38ab0ae091e05a3fd4255aab21d4a7a8955"
        );
        assert!(docker.entrypoint.is_empty());
        assert_eq!(docker.cmd, ["/bin/sh"]);
    }
}
