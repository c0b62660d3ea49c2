//! The engine's refusals that agentc acts on, as the `docker` and `podman` command lines word
//! them on stderr: matched here, once, and handed on as a [`Refusal`]. The Engine API backend
//! reads status codes instead and needs none of this.

/// A refusal of the engine that changes what agentc does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The container named does not exist (docker: `No such container`, `No such object` from
    /// `inspect --type container`; podman: `no such container`).
    NoSuchContainer,
    /// The image named is not present (docker: `No such image`; podman: `image not known`).
    NoSuchImage,
    /// The container exists but is not running (`is not running`, both engines).
    NotRunning,
}

/// The refusal `message` (an engine's stderr, or the daemon's message in it) states, if it is
/// one of the [`Refusal`]s; checked in the order of the enum.
pub fn refusal(message: &str) -> Option<Refusal> {
    const WORDINGS: &[(Refusal, &[&str])] = &[
        (
            Refusal::NoSuchContainer,
            &["No such container", "no such container", "No such object"],
        ),
        (Refusal::NoSuchImage, &["No such image", "image not known"]),
        (Refusal::NotRunning, &["is not running"]),
    ];
    WORDINGS
        .iter()
        .find(|(_, words)| words.iter().any(|word| message.contains(word)))
        .map(|(refusal, _)| *refusal)
}

/// Whether `message` says the container does not exist.
pub fn is_no_such_container(message: &str) -> bool {
    refusal(message) == Some(Refusal::NoSuchContainer)
}

/// Whether `message` says the image is not present.
pub fn is_no_such_image(message: &str) -> bool {
    refusal(message) == Some(Refusal::NoSuchImage)
}

/// Whether `message` says the container is not running.
pub fn is_not_running(message: &str) -> bool {
    refusal(message) == Some(Refusal::NotRunning)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_engines_wordings_are_read_alike() {
        for (message, expected) in [
            (
                "Error response from daemon: No such container: abc",
                Some(Refusal::NoSuchContainer),
            ),
            (
                "Error: no such container abc",
                Some(Refusal::NoSuchContainer),
            ),
            ("Error: No such object: abc", Some(Refusal::NoSuchContainer)),
            (
                "Error response from daemon: No such image: busybox:1",
                Some(Refusal::NoSuchImage),
            ),
            (
                "Error: busybox:1: image not known",
                Some(Refusal::NoSuchImage),
            ),
            (
                "Error response from daemon: Container abc is not running",
                Some(Refusal::NotRunning),
            ),
            ("Error response from daemon: conflict", None),
        ] {
            assert_eq!(refusal(message), expected, "{message}");
        }
        assert!(is_no_such_container("No such container: x"));
        assert!(is_no_such_image("image not known") && !is_no_such_image("is not running"));
        assert!(is_not_running("Container x is not running"));
    }
}
