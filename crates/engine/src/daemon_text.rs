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
    /// The network named does not exist (docker: `No such network`, `network NAME not found`;
    /// podman: `network not found`, `unable to find network`).
    NoSuchNetwork,
    /// The volume named does not exist (docker: `No such volume`; podman: `no such volume`).
    NoSuchVolume,
    /// The path named inside a container does not exist (`docker cp`: `No such
    /// container:path`, `Could not find the file`; podman: `could not be found on container`).
    NoSuchPath,
    /// The container exists but is not running (`is not running`, both engines; podman's exec
    /// on a stopped container: `can only create exec sessions on running containers`), or is
    /// paused (docker's exec: `is paused, unpause the container before exec`; the session
    /// tells the two apart by the container's state).
    NotRunning,
    /// The object is being removed already (docker: `removal of container ... is already in
    /// progress`): it is on its way out.
    RemovalInProgress,
    /// A name is taken (`already exists`, `already in use`).
    NameInUse,
    /// The object is still used by another (a network with active endpoints, a volume in use, an
    /// image with dependent child images).
    InUse,
    /// The object is used by a container (docker: an image `being used by` a container;
    /// podman: `in use by` a container).
    UsedByContainer,
    /// The engine cannot be reached (`Cannot connect to the Docker daemon`, podman's
    /// `unable to connect to Podman socket`).
    Unreachable,
    /// A network's subnet overlaps another network's (docker: `Pool overlaps with other one
    /// on this address space`): an isolated network moves to another subnet.
    SubnetTaken,
    /// The connection to the engine broke mid-operation (`error during connect`, `connection
    /// reset`, an `EOF`, or a socket it may not use: `permission denied while trying to
    /// connect`).
    ConnectionLost,
}

/// The refusal `message` (an engine's stderr, or the daemon's message in it) states, if it is
/// one of the [`Refusal`]s; checked in the order of the enum, case-insensitively.
pub fn refusal(message: &str) -> Option<Refusal> {
    const WORDINGS: &[(Refusal, &[&str])] = &[
        // Before the container's: docker words a missing path `No such container:path`.
        (
            Refusal::NoSuchPath,
            &[
                "no such container:path",
                "could not find the file",
                "could not be found on container",
            ],
        ),
        (
            Refusal::NoSuchContainer,
            &["no such container", "no such object"],
        ),
        (Refusal::NoSuchImage, &["no such image", "image not known"]),
        (
            Refusal::NoSuchNetwork,
            &[
                "no such network",
                "network not found",
                "unable to find network",
            ],
        ),
        (Refusal::NoSuchVolume, &["no such volume"]),
        (
            Refusal::NotRunning,
            &[
                "is not running",
                "can only create exec sessions on running containers",
                "is paused, unpause the container",
            ],
        ),
        (Refusal::RemovalInProgress, &["already in progress"]),
        (Refusal::NameInUse, &["already exists", "already in use"]),
        (
            Refusal::InUse,
            &["active endpoints", "volume is in use", "dependent child"],
        ),
        (Refusal::UsedByContainer, &["being used by", "in use by"]),
        (
            Refusal::Unreachable,
            &[
                "cannot connect to the docker daemon",
                "is the docker daemon running",
                "unable to connect to podman",
            ],
        ),
        (Refusal::SubnetTaken, &["overlaps"]),
        (
            Refusal::ConnectionLost,
            &[
                "error during connect",
                "permission denied while trying to connect",
                "connection reset",
            ],
        ),
    ];
    let lower = message.to_ascii_lowercase();
    let found = WORDINGS
        .iter()
        .find(|(_, words)| words.iter().any(|word| lower.contains(word)))
        .map(|(refusal, _)| *refusal);
    // Docker's `network rm`/`inspect` of a missing network: `network NAME not found`.
    found
        .or_else(|| {
            (lower.contains("network ") && lower.contains(" not found"))
                .then_some(Refusal::NoSuchNetwork)
        })
        // A stream cut short: `EOF`, `unexpected EOF` (in capitals, so no word is taken for it).
        .or_else(|| message.contains("EOF").then_some(Refusal::ConnectionLost))
}

/// The engine's own message from the command line's stderr: without `docker: `, `Error
/// response from daemon: `, `Error: `, the `See 'docker ... --help'.` line and a final period
/// (which the CLI adds and the daemon may not have written), so it reads as the Engine API's
/// does. The Engine API's messages pass unchanged.
pub fn daemon_message(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("See '") && !line.starts_with("Run '"))
        .collect();
    let mut message = lines.join(" ");
    for prefix in ["docker: ", "Error response from daemon: ", "Error: "] {
        if let Some(rest) = message.strip_prefix(prefix) {
            message = rest.to_string();
        }
    }
    message.trim_end_matches('.').to_string()
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
            (
                "Error: can only create exec sessions on running containers: container state improper",
                Some(Refusal::NotRunning),
            ),
            (
                "Error response from daemon: Container abc is paused, unpause the container before exec",
                Some(Refusal::NotRunning),
            ),
            ("Error response from daemon: conflict", None),
            (
                "error during connect: Get \"http://%2Fvar%2Frun%2Fdocker.sock/v1.41/containers/json\": EOF",
                Some(Refusal::ConnectionLost),
            ),
            ("read unix @->/var/run/docker.sock: read: connection reset by peer", Some(Refusal::ConnectionLost)),
            ("unexpected EOF", Some(Refusal::ConnectionLost)),
            ("the profile thereof", None),
            (
                "Error response from daemon: conflict: unable to delete 0123abcd (must be forced) - image is being used by stopped container 4567ef",
                Some(Refusal::UsedByContainer),
            ),
            (
                "Error: image used by 4567ef: image is in use by a container: consider listing external containers and force-removing image",
                Some(Refusal::UsedByContainer),
            ),
            (
                "Error response from daemon: conflict: unable to delete 0123abcd (cannot be forced) - image has dependent child images",
                Some(Refusal::InUse),
            ),
            (
                "Error response from daemon: network agentc-x-egress not found",
                Some(Refusal::NoSuchNetwork),
            ),
            (
                "Error: unable to find network with name or ID x: network not found",
                Some(Refusal::NoSuchNetwork),
            ),
            (
                "Error response from daemon: get x: no such volume",
                Some(Refusal::NoSuchVolume),
            ),
            (
                "Error: Could not find the file /nope in container box",
                Some(Refusal::NoSuchPath),
            ),
            (
                "Error: No such container:path: box:/nope",
                Some(Refusal::NoSuchPath),
            ),
            (
                "Error response from daemon: removal of container box is already in progress",
                Some(Refusal::RemovalInProgress),
            ),
            (
                "Error response from daemon: network with name x already exists",
                Some(Refusal::NameInUse),
            ),
            (
                "Error response from daemon: Conflict. The container name \"/box\" is already in use",
                Some(Refusal::NameInUse),
            ),
            (
                "Error response from daemon: error while removing network: network x id y has active endpoints",
                Some(Refusal::InUse),
            ),
            (
                "Error response from daemon: conflict: unable to delete abc (cannot be forced) - image has dependent child images",
                Some(Refusal::InUse),
            ),
            (
                "Cannot connect to the Docker daemon at unix:///x.sock. Is the docker daemon running?",
                Some(Refusal::Unreachable),
            ),
            (
                "Error response from daemon: Pool overlaps with other one on this address space",
                Some(Refusal::SubnetTaken),
            ),
        ] {
            assert_eq!(refusal(message), expected, "{message}");
        }
        assert!(is_no_such_container("No such container: x"));
        assert!(is_no_such_image("image not known") && !is_no_such_image("is not running"));
        assert!(is_not_running("Container x is not running"));
    }
}
