//! Image references as the lifecycle moves them: the retained tag that keeps the previous
//! image of a deployment, and the shape of an image ID.

use sha2::{Digest, Sha256};

/// What a retained tag adds, before the profile's name: profile `dev` keeps the previous image
/// of `claude-code:latest` as `claude-code:latest-agentc-previous-dev`. The profile's name
/// keeps two profiles that run one image from moving each other's retained tag.
pub const RETAINED_SUFFIX: &str = "-agentc-previous-";

/// Docker's longest tag.
const MAX_TAG: usize = 128;

/// A reference split into its repository, tag and digest (`registry:5000/team/app:1.2`,
/// `app@sha256:...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageReference {
    /// Everything before the tag or digest, registry and port included.
    pub repository: String,
    /// The tag, when written.
    pub tag: Option<String>,
    /// The digest, when written (`sha256:...`).
    pub digest: Option<String>,
}

/// Splits a reference; the tag is the part after the last `:` that follows the last `/` (so a
/// registry's port is not read as a tag).
pub fn split(reference: &str) -> ImageReference {
    let (name, digest) = match reference.split_once('@') {
        Some((name, digest)) => (name, Some(digest.to_string())),
        None => (reference, None),
    };
    let slash = name.rfind('/').map_or(0, |index| index + 1);
    match name[slash..].rfind(':') {
        Some(colon) => ImageReference {
            repository: name[..slash + colon].to_string(),
            tag: Some(name[slash + colon + 1..].to_string()),
            digest,
        },
        None => ImageReference {
            repository: name.to_string(),
            tag: None,
            digest,
        },
    }
}

/// The tag that keeps profile `profile`'s previous image of `reference`, or `None` for a
/// reference pinned by digest (it cannot move, so there is nothing to keep). A tag too long
/// for the suffix is replaced by a short hash of itself.
pub fn retained_tag(reference: &str, profile: &str) -> Option<String> {
    let parts = split(reference);
    if parts.digest.is_some() {
        return None;
    }
    let tag = parts.tag.unwrap_or_else(|| "latest".to_string());
    if tag.len() + RETAINED_SUFFIX.len() + profile.len() <= MAX_TAG {
        return Some(format!(
            "{}:{tag}{RETAINED_SUFFIX}{profile}",
            parts.repository
        ));
    }
    let hash: String = Sha256::digest(tag.as_bytes())
        .iter()
        .take(6)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    Some(format!(
        "{}:{hash}{RETAINED_SUFFIX}{profile}",
        parts.repository
    ))
}

/// Whether `id` is an image ID as the engine reports it: `sha256:` and 64 lower-case hex
/// digits.
pub fn is_image_id(id: &str) -> bool {
    id.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The first 12 hex digits of an image ID, as `docker images` shows it.
pub fn short_id(id: &str) -> &str {
    let hex = id.strip_prefix("sha256:").unwrap_or(id);
    &hex[..hex.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_is_not_a_tag_and_a_digest_is_kept_apart() {
        assert_eq!(
            split("registry.example:5000/team/app"),
            ImageReference {
                repository: "registry.example:5000/team/app".into(),
                tag: None,
                digest: None
            }
        );
        let parts = split("registry.example:5000/app:1.2@sha256:ab");
        assert_eq!(parts.repository, "registry.example:5000/app");
        assert_eq!(parts.tag.as_deref(), Some("1.2"));
        assert_eq!(parts.digest.as_deref(), Some("sha256:ab"));
    }

    #[test]
    fn retained_tags_keep_the_repository_and_fit_docker_limits() {
        assert_eq!(
            retained_tag("claude-code", "dev").as_deref(),
            Some("claude-code:latest-agentc-previous-dev")
        );
        assert_eq!(
            retained_tag("localhost:5000/box:1.4", "dev").as_deref(),
            Some("localhost:5000/box:1.4-agentc-previous-dev")
        );
        assert_eq!(retained_tag("box@sha256:00", "dev"), None);
        let long = format!("box:{}", "t".repeat(120));
        let profile = "p".repeat(63);
        let retained = retained_tag(&long, &profile).unwrap();
        let tag = split(&retained).tag.unwrap();
        assert!(tag.len() <= MAX_TAG, "{tag}");
        assert!(tag.ends_with(&format!("{RETAINED_SUFFIX}{profile}")));
    }

    #[test]
    fn image_ids_are_sha256_and_64_hex_digits() {
        let id = format!("sha256:{}", "a1".repeat(32));
        assert!(is_image_id(&id));
        assert_eq!(short_id(&id), "a1a1a1a1a1a1");
        assert!(!is_image_id("sha256:A1"));
        assert!(!is_image_id(&id.replace("sha256:", "md5:")));
    }
}
