//! What the snapshot operations of [`super::SandboxClient`] pass: a commit's request and an
//! image as both backends read it (`docker image inspect` and the Engine API print alike).

use std::collections::BTreeMap;

use serde_json::Value;

/// A commit of a sandbox's writable layer to an image (`docker commit`, `POST /commit`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitRequest {
    /// The image's reference, `REPOSITORY:TAG`.
    pub reference: String,
    /// Dockerfile instructions applied to the image's configuration (`--change`, the
    /// `changes` query): agentc writes `ENV` and `LABEL` lines only.
    pub changes: Vec<String>,
    /// Whether the engine pauses the container for the commit itself (false when the caller
    /// has paused it already).
    pub pause: bool,
}

/// An image, as `docker image inspect` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImageRecord {
    /// The image ID (`sha256:...`).
    pub id: String,
    /// Its references (`REPOSITORY:TAG`).
    pub tags: Vec<String>,
    /// When it was created (RFC 3339, as the engine prints it).
    pub created: String,
    /// Its size in bytes, all layers.
    pub size: u64,
    /// Its configuration's labels.
    pub labels: BTreeMap<String, String>,
    /// Its configuration's environment (`NAME=VALUE` entries).
    pub env: Vec<String>,
}

impl ImageRecord {
    /// Reads one image's inspect (an element of `docker image inspect`'s array, or the Engine
    /// API's `ImageInspect` as JSON); `None` without an `Id`.
    pub fn from_inspect(value: &Value) -> Option<ImageRecord> {
        let id = value.get("Id")?.as_str()?.to_string();
        let strings = |value: Option<&Value>| -> Vec<String> {
            value
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|item| item.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let config = value.get("Config");
        let labels = config
            .and_then(|config| config.get("Labels"))
            .and_then(Value::as_object)
            .map(|labels| {
                labels
                    .iter()
                    .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        Some(ImageRecord {
            id,
            tags: strings(value.get("RepoTags")),
            created: value
                .get("Created")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            size: value
                .get("Size")
                .and_then(Value::as_u64)
                .unwrap_or_default(),
            labels,
            env: strings(config.and_then(|config| config.get("Env"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inspect_is_read_as_docker_prints_it() {
        let value = serde_json::json!({
            "Id": "sha256:abc",
            "RepoTags": ["agentc-snapshot/box:t1"],
            "Created": "2026-12-02T06:00:00.1Z",
            "Size": 1234,
            "Config": {"Env": ["PATH=/bin"], "Labels": {"io.agentc.snapshot": "box:t1"}},
        });
        let record = ImageRecord::from_inspect(&value).unwrap();
        assert_eq!(record.id, "sha256:abc");
        assert_eq!(record.tags, ["agentc-snapshot/box:t1"]);
        assert_eq!(record.size, 1234);
        assert_eq!(record.env, ["PATH=/bin"]);
        assert_eq!(record.labels["io.agentc.snapshot"], "box:t1");
        assert!(ImageRecord::from_inspect(&serde_json::json!({"Config": null})).is_none());
        let bare = ImageRecord::from_inspect(&serde_json::json!({"Id": "x", "Config": null}));
        assert_eq!(bare.unwrap().labels, BTreeMap::new());
    }
}
