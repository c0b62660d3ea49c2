//! Host paths: lexical normalization, resolution against the invocation, and the
//! classification of the paths a profile may bind only with an explicit `[security] allow_*`
//! field (the Docker socket in any form, `/`, the home directory).
//!
//! Paths are classified lexically (after [`normalize_path`]); symlinks are followed by the
//! resolver (through [`crate::PathProbe::canonical`]) before a path is classified, so a link
//! with an innocent name that points at the socket is recognized once it is resolved.

use crate::profile::SecurityConfig;

/// The Docker socket's usual paths, and Podman's Docker-compatible socket (the same
/// root-equivalent handle); the rootless daemons' `/run/user/UID/docker.sock` and
/// `/run/user/UID/podman/podman.sock` and Docker Desktop's `~/.docker/run/docker.sock` are
/// recognized by shape.
pub const DOCKER_SOCKETS: &[&str] = &[
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/podman/podman.sock",
    "/var/run/podman/podman.sock",
];

/// The environment variable that points a docker client at a daemon.
pub const DOCKER_HOST: &str = "DOCKER_HOST";

/// Normalizes an absolute path lexically: `.` and empty components go, `..` removes the
/// previous one (never above `/`). Symlinks are not followed.
pub fn normalize_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Resolves a profile path: `~` and `~/...` against `home_dir`, relative paths against
/// `profile_dir`, then [`normalize_path`].
pub fn resolve_host_path(source: &str, home_dir: &str, profile_dir: &str) -> String {
    let joined = if source == "~" {
        home_dir.to_string()
    } else if let Some(rest) = source.strip_prefix("~/") {
        format!("{home_dir}/{rest}")
    } else if source.starts_with('/') {
        source.to_string()
    } else {
        format!("{profile_dir}/{source}")
    };
    normalize_path(&joined)
}

/// Whether a profile path is relative to the profile's directory (not absolute, not `~`).
pub(crate) fn is_profile_relative(source: &str) -> bool {
    !source.starts_with('/') && source != "~" && !source.starts_with("~/")
}

/// `ancestor` is `path` or a directory above it (both absolute and normalized).
pub(crate) fn contains(ancestor: &str, path: &str) -> bool {
    ancestor == path || ancestor == "/" || path.starts_with(&format!("{ancestor}/"))
}

/// A host path that a profile may bind only with an explicit `[security] allow_*` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Danger {
    /// The host's root directory `/` (which also holds the socket and every home).
    Root,
    /// The home directory, or a directory above it such as `/home`.
    Home,
    /// The Docker socket, a file named `docker.sock`, or a directory holding the socket.
    DockerSocket,
}

impl Danger {
    /// The profile field that accepts it, such as `security.allow_docker_socket`.
    pub fn allow_field(self) -> &'static str {
        match self {
            Danger::Root => "security.allow_root_bind",
            Danger::Home => "security.allow_home_bind",
            Danger::DockerSocket => "security.allow_docker_socket",
        }
    }

    /// Whether the profile's `[security]` table accepts it.
    pub fn allowed(self, security: &SecurityConfig) -> bool {
        match self {
            Danger::Root => security.allow_root_bind,
            Danger::Home => security.allow_home_bind,
            Danger::DockerSocket => security.allow_docker_socket,
        }
    }

    /// `allow_root_bind = true`, as written in a `[security]` table.
    pub fn allow_setting(self) -> String {
        let name = self.allow_field().trim_start_matches("security.");
        format!("[security] {name} = true")
    }
}

/// Whether an absolute, normalized host path exposes the Docker socket: it is one of
/// [`DOCKER_SOCKETS`] or a directory above one (`/run`, `/var/run`, `/var`, `/`), a file named
/// `docker.sock` or `podman.sock` anywhere, the rootless daemons' `/run/user[/UID][/podman]`,
/// or Docker Desktop's
/// `.docker`, `.docker/run` or `.docker/desktop`.
pub fn exposes_docker_socket(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or_default();
    if name == "docker.sock"
        || name == "podman.sock"
        || DOCKER_SOCKETS.iter().any(|socket| contains(path, socket))
    {
        return true;
    }
    for runtime in ["/run/user", "/var/run/user"] {
        if let Some(rest) = path.strip_prefix(runtime) {
            let rest = rest.trim_start_matches('/');
            let uid = rest.strip_suffix("/podman").unwrap_or(rest);
            if rest.is_empty() || (!uid.contains('/') && uid.bytes().all(|b| b.is_ascii_digit())) {
                return true;
            }
        }
    }
    [".docker", ".docker/run", ".docker/desktop"]
        .iter()
        .any(|tail| path.ends_with(&format!("/{tail}")))
}

/// What an absolute host path is that needs an `allow_*` field, if anything. `home` is the
/// caller's home directory; pass `None` where it is not known (loading), which leaves only
/// [`Danger::Root`] and [`Danger::DockerSocket`]. The first match wins: `/` is only
/// [`Danger::Root`].
pub fn classify_path(path: &str, home: Option<&str>) -> Option<Danger> {
    let path = normalize_path(path);
    if path == "/" {
        return Some(Danger::Root);
    }
    if let Some(home) = home {
        let home = normalize_path(home);
        if home != "/" && contains(&path, &home) {
            return Some(Danger::Home);
        }
    }
    exposes_docker_socket(&path).then_some(Danger::DockerSocket)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_normalize_without_touching_the_disk() {
        assert_eq!(normalize_path("/a/./b/../c//d/"), "/a/c/d");
        assert_eq!(normalize_path("/../.."), "/");
        assert_eq!(resolve_host_path("~", "/home/a", "/p"), "/home/a");
        assert_eq!(resolve_host_path("~/x/../y", "/home/a", "/p"), "/home/a/y");
        assert_eq!(resolve_host_path("data", "/home/a", "/p"), "/p/data");
        assert_eq!(resolve_host_path("/abs/./f", "/home/a", "/p"), "/abs/f");
        assert!(is_profile_relative("data") && !is_profile_relative("~/x"));
    }

    #[test]
    fn dangerous_paths_are_classified_by_shape() {
        assert_eq!(classify_path("/", None), Some(Danger::Root));
        assert_eq!(classify_path("/x/..", None), Some(Danger::Root));
        assert_eq!(
            classify_path("/home", Some("/home/dev")),
            Some(Danger::Home)
        );
        assert_eq!(classify_path("/home", None), None);
        for socket in [
            "/var/run/docker.sock",
            "/run",
            "/var",
            "/srv/docker.sock",
            "/run/user/1000",
            "/home/dev/.docker/run",
            "/run/podman/podman.sock",
            "/run/podman",
            "/run/user/1000/podman",
            "/srv/podman.sock",
        ] {
            assert_eq!(
                classify_path(socket, None),
                Some(Danger::DockerSocket),
                "{socket}"
            );
        }
        assert_eq!(classify_path("/run/user/1000/app", None), None);
        assert_eq!(
            Danger::DockerSocket.allow_setting(),
            "[security] allow_docker_socket = true"
        );
    }
}
