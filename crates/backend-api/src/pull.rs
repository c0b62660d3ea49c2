//! What a pull through the Engine API needs, only when the caller asks (`agentc run --pull`):
//! the image reference split into the Engine API's `fromImage` and `tag`, and a compact
//! progress report (one line each time a layer changes status). The pull itself is the port's
//! ([`crate::port::ApiPort`]), and the decision to pull is written once for both backends
//! ([`agentc_engine::image::ensure_image`], whose errors say what went wrong: registry
//! unreachable, repository or tag not found, credentials wanted).
//!
//! No registry credentials are sent: registry auth from the docker config (`docker login`) is
//! out of scope, so a private registry needs a `docker pull` by the user first.

use std::collections::HashMap;

use bollard::models::CreateImageInfo;

/// An image reference split as the docker CLI sends it to `POST /images/create`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageReference {
    /// The repository, with its registry host and port when it has one
    /// (`127.0.0.1:5000/team/app`), without tag or digest.
    pub from_image: String,
    /// The tag (`latest` when none is written) or, for a reference with a digest, the digest
    /// (`sha256:...`), which takes precedence over a tag as it does for `docker pull`.
    pub tag: String,
}

/// Splits an image reference into repository and tag or digest: `host:5000/repo:tag` gives
/// `host:5000/repo` and `tag`; `repo@sha256:abc` gives `repo` and `sha256:abc`; `repo` gives
/// `repo` and `latest`. The tag is only looked for after the last `/`, so a registry port is
/// never taken for one. `None` for an empty repository, tag or digest, which the daemon would
/// read as "every tag".
pub fn split_reference(image: &str) -> Option<ImageReference> {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    let last_component = name.rfind('/').map_or(0, |slash| slash + 1);
    let (repository, tag) = match name[last_component..].rfind(':') {
        Some(colon) => {
            let colon = last_component + colon;
            (&name[..colon], Some(&name[colon + 1..]))
        }
        None => (name, None),
    };
    let tag = match (digest, tag) {
        (Some(digest), _) => digest,
        (None, Some(tag)) => tag,
        (None, None) => "latest",
    };
    let well_formed = !repository.is_empty()
        && !repository.ends_with('/')
        && !tag.is_empty()
        && digest.is_none_or(|digest| digest.contains(':'));
    well_formed.then(|| ImageReference {
        from_image: repository.to_string(),
        tag: tag.to_string(),
    })
}

/// Turns the daemon's pull messages into compact progress lines: a line when a layer (or the
/// pull as a whole) reaches a new status such as `Pulling fs layer`, `Downloading` or
/// `Pull complete`, never one per byte-count tick. A finished layer shows its size.
#[derive(Debug, Default)]
pub struct PullProgress {
    statuses: HashMap<String, String>,
    sizes: HashMap<String, i64>,
}

impl PullProgress {
    /// The line to print for one message of the daemon's pull stream, if any.
    pub fn line(&mut self, info: &CreateImageInfo) -> Option<String> {
        let status = printable(info.status.as_deref()?);
        let Some(layer) = info.id.as_deref().filter(|id| !id.is_empty()) else {
            return Some(status);
        };
        let layer = printable(layer);
        if let Some(total) = info
            .progress_detail
            .as_ref()
            .and_then(|detail| detail.total)
            .filter(|total| *total > 0)
        {
            self.sizes.insert(layer.clone(), total);
        }
        if self.statuses.get(&layer) == Some(&status) {
            return None;
        }
        self.statuses.insert(layer.clone(), status.clone());
        let size = match (status.as_str(), self.sizes.get(&layer)) {
            ("Download complete" | "Pull complete", Some(size)) => {
                format!(" ({})", human_size(*size))
            }
            _ => String::new(),
        };
        Some(format!("{layer}: {status}{size}"))
    }
}

/// Control characters from the daemon become `?`, so a line cannot move the cursor.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// A byte count in the docker CLI's decimal units: `512 B`, `2.1 kB`, `3.4 MB`, `1.2 GB`.
fn human_size(bytes: i64) -> String {
    const UNITS: [&str; 4] = ["kB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for next in UNITS {
        if value < 1000.0 {
            break;
        }
        value /= 1000.0;
        unit = next;
    }
    format!("{value:.1} {unit}")
}

#[cfg(test)]
mod tests {
    use bollard::models::ProgressDetail;

    use super::*;

    fn split(image: &str) -> Option<(String, String)> {
        split_reference(image).map(|reference| (reference.from_image, reference.tag))
    }

    fn pair(from_image: &str, tag: &str) -> Option<(String, String)> {
        Some((from_image.to_string(), tag.to_string()))
    }

    #[test]
    fn a_registry_port_is_not_a_tag() {
        assert_eq!(
            split("127.0.0.1:5000/agentc-pull-test/x:1"),
            pair("127.0.0.1:5000/agentc-pull-test/x", "1")
        );
        assert_eq!(split("host:5000/repo"), pair("host:5000/repo", "latest"));
        assert_eq!(split("[::1]:5000/repo:v2"), pair("[::1]:5000/repo", "v2"));
    }

    #[test]
    fn plain_names_default_to_latest() {
        assert_eq!(split("busybox"), pair("busybox", "latest"));
        assert_eq!(split("busybox:1.36"), pair("busybox", "1.36"));
        assert_eq!(split("library/busybox"), pair("library/busybox", "latest"));
        // Without a slash, the colon separates a tag, as docker reads `host:5000`.
        assert_eq!(split("host:5000"), pair("host", "5000"));
    }

    #[test]
    fn a_digest_wins_over_a_tag() {
        let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        assert_eq!(
            split(&format!("host:5000/repo@{digest}")),
            pair("host:5000/repo", digest)
        );
        assert_eq!(
            split(&format!("host:5000/repo:1@{digest}")),
            pair("host:5000/repo", digest)
        );
        assert_eq!(split(&format!("repo@{digest}")), pair("repo", digest));
    }

    #[test]
    fn empty_parts_are_refused_rather_than_pulling_every_tag() {
        for image in [
            "",
            "repo:",
            ":tag",
            "host:5000/",
            "repo@",
            "repo@sha256",
            "@sha256:abc",
        ] {
            assert_eq!(split(image), None, "{image:?}");
        }
    }

    fn info(id: Option<&str>, status: &str, total: Option<i64>) -> CreateImageInfo {
        CreateImageInfo {
            id: id.map(str::to_string),
            status: Some(status.to_string()),
            progress_detail: total.map(|total| ProgressDetail {
                current: Some(1),
                total: Some(total),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn progress_prints_one_line_per_layer_status_change() {
        let mut progress = PullProgress::default();
        let stream = [
            info(Some("1"), "Pulling from agentc-pull-test/x", None),
            info(Some("abc"), "Pulling fs layer", None),
            info(Some("abc"), "Downloading", Some(2_100_000)),
            info(Some("abc"), "Downloading", Some(2_100_000)),
            info(Some("abc"), "Downloading", Some(2_100_000)),
            info(Some("abc"), "Download complete", None),
            info(Some("abc"), "Extracting", Some(2_100_000)),
            info(Some("abc"), "Extracting", Some(2_100_000)),
            info(Some("abc"), "Pull complete", None),
            info(None, "Digest: sha256:feed", None),
            info(None, "Status: Downloaded newer image for x:1", None),
        ];
        let lines: Vec<String> = stream
            .iter()
            .filter_map(|info| progress.line(info))
            .collect();
        assert_eq!(
            lines,
            vec![
                "1: Pulling from agentc-pull-test/x",
                "abc: Pulling fs layer",
                "abc: Downloading",
                "abc: Download complete (2.1 MB)",
                "abc: Extracting",
                "abc: Pull complete (2.1 MB)",
                "Digest: sha256:feed",
                "Status: Downloaded newer image for x:1",
            ]
        );
    }

    #[test]
    fn progress_without_status_prints_nothing_and_control_characters_are_replaced() {
        let mut progress = PullProgress::default();
        assert_eq!(progress.line(&CreateImageInfo::default()), None);
        assert_eq!(
            progress.line(&info(Some("a\u{1b}[2J"), "Waiting\r", None)),
            Some("a?[2J: Waiting?".to_string())
        );
    }

    #[test]
    fn sizes_use_decimal_units() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(2_100), "2.1 kB");
        assert_eq!(human_size(3_400_000), "3.4 MB");
        assert_eq!(human_size(1_200_000_000), "1.2 GB");
    }
}
