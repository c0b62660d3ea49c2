//! What to do about a failure docker reports, recognized by the daemon's own wording: the
//! hints both backends attach to the daemon's messages, whichever way they reached agentc
//! (an Engine API response or the docker CLI's stderr).

/// What to do when the engine's socket exists but this user may not open it (`permission
/// denied`): not a stopped daemon, so starting one is no help.
pub const SOCKET_PERMISSION: &str = "the daemon runs, but this user may not open its socket: \
     join the group that owns it (`sudo usermod -aG docker $USER`, then log in again), run \
     agentc as a user who can, or point DOCKER_HOST (Podman: CONTAINER_HOST) at a rootless \
     daemon's socket (`unix://$XDG_RUNTIME_DIR/docker.sock`)";

/// The hint after a failed or lost connection to the daemon: [`SOCKET_PERMISSION`] when the
/// socket refused this user, `otherwise` for anything else.
pub fn connection_hint<'a>(message: &str, otherwise: &'a str) -> &'a str {
    if message.to_ascii_lowercase().contains("permission denied") {
        SOCKET_PERMISSION
    } else {
        otherwise
    }
}

/// What to do about a daemon refusal that a valid profile can still meet on a given host,
/// recognized by the daemon's own wording (moby's `daemon/create.go`, `daemon/start.go`).
pub fn daemon_hint(message: &str) -> Option<&'static str> {
    if message.contains("is already in use by container") {
        Some(
            "`agentc run --name N PROFILE` starts another sandbox of the profile beside it; \
             `agentc ps --all` lists agentc's containers and `agentc rm NAME` removes one",
        )
    } else if message.contains("Range of CPUs is from") {
        Some("lower resources.cpus (or AGENTC_CPUS) to at most the daemon host's CPU count")
    } else if message.contains("bind source path does not exist") {
        Some("a bind source must exist on the daemon's host when the container is created")
    } else if message.starts_with("network ") && message.ends_with(" not found") {
        Some("create it with `docker network create NAME`, or change network.name (or AGENTC_NETWORK)")
    } else if message.contains("error setting rlimit") {
        Some("this host forbids raising rlimits (no CAP_SYS_RESOURCE): set default_ulimits at the host's limits in containers.conf (scripts/setup-engines.sh does; docs/engines.md), then restart podman system service")
    } else if message.contains("error gathering device information") {
        Some("the daemon's host lacks the device: for /dev/fuse load the fuse module, or drop security.fuse")
    } else {
        None
    }
}

/// What to tell the user about a failed pull, from the daemon's message.
pub fn pull_hint(message: &str) -> &'static str {
    let message = message.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|needle| message.contains(needle));
    if has(&["server gave http response to https client"]) {
        "the registry speaks plain http: the docker daemon must list it in insecure-registries (127.0.0.0/8 is by default)"
    } else if has(&[
        "connection refused",
        "no such host",
        "i/o timeout",
        "network is unreachable",
        "no route to host",
        "tls handshake timeout",
        "dial tcp",
    ]) {
        "the registry is unreachable from the docker daemon: check that it is running and the host and port in the image reference"
    } else if has(&[
        "unauthorized",
        "authentication required",
        "no basic auth credentials",
        "denied",
        "docker login",
    ]) {
        "the registry wants credentials and agentc sends none (registry auth from the docker config is not supported): run `docker login` and `docker pull IMAGE` yourself, then run agentc without --pull"
    } else if has(&[
        "not found",
        "manifest unknown",
        "does not exist",
        "name unknown",
    ]) {
        "the registry has no such repository or tag: check the image reference, or push the image there first"
    } else {
        "check the image reference and the registry; `docker pull IMAGE` reports the same error"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_get_a_hint_for_their_cause() {
        let refused =
            "Get \"http://127.0.0.1:1/v2/\": dial tcp 127.0.0.1:1: connect: connection refused";
        assert!(pull_hint(refused).contains("unreachable"));
        let unknown =
            "manifest for 127.0.0.1:5000/x:2 not found: manifest unknown: manifest unknown";
        assert!(pull_hint(unknown).contains("no such repository or tag"));
        let hub = "pull access denied for nope, repository does not exist or may require 'docker login': denied: requested access to the resource is denied";
        assert!(pull_hint(hub).contains("credentials"));
        assert!(pull_hint("unauthorized: authentication required").contains("docker login"));
        let basic = "Head \"http://127.0.0.1:5000/v2/x/manifests/1\": no basic auth credentials";
        assert!(pull_hint(basic).contains("agentc sends none"));
        let plain = "http: server gave HTTP response to HTTPS client";
        assert!(pull_hint(plain).contains("insecure-registries"));
        assert!(pull_hint("something else").contains("docker pull IMAGE"));
        // Podman on a host without CAP_SYS_RESOURCE (docs/engines.md, section 1).
        let rlimit = "runc: runc create failed: unable to start container process: error during container init: error setting rlimits for ready process: error setting rlimit type 7: operation not permitted: OCI permission denied";
        assert!(daemon_hint(rlimit).is_some_and(|hint| hint.contains("default_ulimits")));
    }
}
