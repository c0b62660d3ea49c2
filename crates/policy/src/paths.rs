//! Host paths: lexical normalization, resolution against the invocation, and the
//! classification of the host paths a profile may bind only with an explicit `[security]
//! allow_*` field: `/`, the home directory, the Docker socket in any form, the container
//! engines' data and sockets, the host's system directories and the credential directories
//! ([`Danger`], [`dangers`]). Every host path a launch binds (mounts, seeds, the workspace,
//! CA and gateway files, the configuration import, a build context) is classified here, as
//! the profile loads (absolute paths) and as the launch resolves (`~`, relative paths, links).
//!
//! Paths are classified lexically (after [`normalize_path`], and with a `/proc/PID/root`
//! prefix, which leads back to `/`, taken off); symlinks are followed by the resolver
//! (through [`crate::PathProbe::canonical`]) before a path is classified, so a link with an
//! innocent name that points at the socket is recognized once it is resolved.

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
    /// A container engine's data or runtime directory ([`ENGINE_DATA`], `/run/docker*`,
    /// rootless Podman's `~/.local/share/containers`), anything in it, or a directory above
    /// one (`/var/lib`): every container's configuration and environment (the egress proxy's
    /// keys among them), their files, and the engines' own sockets.
    EngineData,
    /// The host's system directories ([`HOST_SYSTEM`]) or anything in them: the host's
    /// processes and their environment, devices, kernel settings, configuration, boot files
    /// and root's home (`/root` only when it is not the caller's home).
    HostSystem,
    /// A credential directory ([`CREDENTIAL_DIRS`]) anywhere, anything in it, or a directory
    /// above one below a home (`~/.config`, which holds `gcloud`).
    CredentialDir,
}

impl Danger {
    /// The profile field that accepts it, such as `security.allow_docker_socket`.
    pub fn allow_field(self) -> &'static str {
        match self {
            Danger::Root => "security.allow_root_bind",
            Danger::Home => "security.allow_home_bind",
            Danger::DockerSocket => "security.allow_docker_socket",
            Danger::EngineData => "security.allow_engine_data_bind",
            Danger::HostSystem => "security.allow_host_system_bind",
            Danger::CredentialDir => "security.allow_credential_dir_bind",
        }
    }

    /// Whether the profile's `[security]` table accepts it.
    pub fn allowed(self, security: &SecurityConfig) -> bool {
        match self {
            Danger::Root => security.allow_root_bind,
            Danger::Home => security.allow_home_bind,
            Danger::DockerSocket => security.allow_docker_socket,
            Danger::EngineData => security.allow_engine_data_bind,
            Danger::HostSystem => security.allow_host_system_bind,
            Danger::CredentialDir => security.allow_credential_dir_bind,
        }
    }

    /// `allow_root_bind = true`, as written in a `[security]` table.
    pub fn allow_setting(self) -> String {
        let name = self.allow_field().trim_start_matches("security.");
        format!("[security] {name} = true")
    }

    /// What a path of this kind is, after the field and path in a refusal ("is a container
    /// engine's data ...").
    pub fn what(self) -> &'static str {
        match self {
            Danger::Root => "is the host's root directory",
            Danger::Home => "is or contains the home directory",
            Danger::DockerSocket => "exposes the docker socket",
            Danger::EngineData => {
                "holds a container engine's data or sockets: it is, is in or is above \
                 /var/lib/docker, /var/lib/containers, /var/lib/containerd, /run/containerd, \
                 /run/docker* or ~/.local/share/containers"
            }
            Danger::HostSystem => {
                "is one of the host's system directories /proc, /sys, /dev, /etc, /boot and \
                 /root, or in one"
            }
            Danger::CredentialDir => {
                "is a credential directory (.ssh, .docker, .kube, .aws, .config/gcloud, \
                 .gnupg), in one, or the ~/.config that holds gcloud's"
            }
        }
    }

    /// Why a bind of it is refused, and what to do instead (a refusal's hint, before "or set
    /// ... to accept it").
    pub fn why(self) -> &'static str {
        match self {
            Danger::Root => "a bind of / hands the agent the whole host; mount only what it needs",
            Danger::Home => {
                "the home holds your keys and tokens; mount the project or the files the agent \
                 needs"
            }
            Danger::DockerSocket => {
                "the docker socket makes the agent root on the host; remove the mount"
            }
            Danger::EngineData => {
                "the engines' data holds every container's configuration and environment (the \
                 egress proxy's keys among them) and their sockets control the engine; remove \
                 the mount"
            }
            Danger::HostSystem => {
                "these hand the agent the host's processes and their environment (the keys of \
                 the shell that ran agentc), devices and configuration, read-only or not; copy \
                 the file the agent needs beside the profile and mount the copy"
            }
            Danger::CredentialDir => {
                "these hold your keys and tokens, read-only or not; give the agent a key of its \
                 own (a file made for it, or [credentials] held by the egress proxy)"
            }
        }
    }

    /// The finding of a bind it accepted: `bind-root`, `docker-socket`, ...
    pub fn finding_code(self) -> crate::FindingCode {
        use crate::FindingCode;
        match self {
            Danger::Root => FindingCode::BindRoot,
            Danger::Home => FindingCode::BindHome,
            Danger::DockerSocket => FindingCode::DockerSocket,
            Danger::EngineData => FindingCode::BindEngineData,
            Danger::HostSystem => FindingCode::BindHostSystem,
            Danger::CredentialDir => FindingCode::BindCredentialDir,
        }
    }
}

/// Every [`Danger`], in the order [`dangers`] lists them.
pub const ALL_DANGERS: &[Danger] = &[
    Danger::Root,
    Danger::Home,
    Danger::DockerSocket,
    Danger::EngineData,
    Danger::HostSystem,
    Danger::CredentialDir,
];

/// The container engines' data and runtime directories (Docker's, containerd's, Podman's
/// rootful storage), besides `/run/docker*` and `/var/run/docker*` (the Docker daemon's
/// runtime directory and files), which are recognized by their names' start.
pub const ENGINE_DATA: &[&str] = &[
    "/var/lib/docker",
    "/var/lib/containerd",
    "/var/lib/containers",
    "/run/containerd",
    "/var/run/containerd",
];

/// The host's system directories. `/root` counts unless it is the caller's home (then it is
/// [`Danger::Home`] like any home, its project directories bindable).
pub const HOST_SYSTEM: &[&str] = &["/proc", "/sys", "/dev", "/etc", "/boot", "/root"];

/// The directories of the host's store of trusted CA certificates (Debian's, Fedora's,
/// SUSE's): public certificates, no keys (`/etc/ssl/private` is not one). A CA bundle there
/// given as `proxy.ca_file` or `proxy.ca_dir` ([`CA_FIELDS`]) is not [`Danger::HostSystem`].
pub const TRUST_STORES: &[&str] = &[
    "/etc/ssl/certs",
    "/etc/ca-certificates",
    "/etc/pki/tls/certs",
    "/etc/pki/ca-trust/extracted",
    "/etc/pki/ca-trust/source/anchors",
    "/etc/pki/trust/anchors",
];

/// The profile fields that name a CA bundle: a file or directory of public certificates.
pub const CA_FIELDS: &[&str] = &["proxy.ca_file", "proxy.ca_dir"];

/// [`dangers`] of `path` as given in `field`: a CA bundle of the host's trust store
/// ([`TRUST_STORES`], as written, not through `/proc/PID/root`) in one of [`CA_FIELDS`] is not
/// [`Danger::HostSystem`]. A link is judged again where it leads (by the caller), so a
/// "certificate" that links to `/etc/shadow` is still refused.
pub fn field_dangers(field: &str, path: &str, home: Option<&str>) -> Vec<Danger> {
    let mut found = dangers(path, home);
    let spelled = normalize_path(path);
    if CA_FIELDS.contains(&field) && TRUST_STORES.iter().any(|store| contains(store, &spelled)) {
        found.retain(|danger| *danger != Danger::HostSystem);
    }
    found
}

/// The credential directories, by their names in a home: SSH, Docker's registry logins,
/// Kubernetes, AWS, Google Cloud and GnuPG. A directory of one of these names is one wherever
/// it is (a copy of `~/.ssh` holds the same keys).
pub const CREDENTIAL_DIRS: &[&str] = &[
    ".ssh",
    ".docker",
    ".kube",
    ".aws",
    ".config/gcloud",
    ".gnupg",
];

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

/// What an absolute host path is that needs an `allow_*` field, if anything: the first of
/// [`dangers`].
pub fn classify_path(path: &str, home: Option<&str>) -> Option<Danger> {
    dangers(path, home).first().copied()
}

/// Everything an absolute host path is that needs an `allow_*` field, most telling first;
/// a bind needs every one of them accepted. `home` is the caller's home directory; pass `None`
/// where it is not known (loading), which leaves out [`Danger::Home`] and `/root` (which may
/// be the home). `/` is only [`Danger::Root`] (`allow_root_bind` alone accepts it). The path
/// is normalized first, and a `/proc/PID/root` prefix (`/proc/1/root`, `/proc/self/root`),
/// the host's `/` seen through a process, is taken off; the `/proc` path itself is
/// [`Danger::HostSystem`] as well.
pub fn dangers(path: &str, home: Option<&str>) -> Vec<Danger> {
    let spelled = normalize_path(path);
    let path = through_proc_root(&spelled);
    if path == "/" {
        return vec![Danger::Root];
    }
    let home = home.map(normalize_path).filter(|home| home != "/");
    let mut found = Vec::new();
    if home.as_deref().is_some_and(|home| contains(&path, home)) {
        found.push(Danger::Home);
    }
    if exposes_docker_socket(&path) {
        found.push(Danger::DockerSocket);
    }
    if holds_engine_data(&path) {
        found.push(Danger::EngineData);
    }
    if is_host_system(&path, home.as_deref()) || path != spelled {
        found.push(Danger::HostSystem);
    }
    if is_credential_dir(&path, home.as_deref()) {
        found.push(Danger::CredentialDir);
    }
    found
}

/// `path` with every leading `/proc/PID/root` (`PID` digits, `self` or `thread-self`) taken
/// off: the root directory of a process, which on the host is the host's `/`.
fn through_proc_root(path: &str) -> String {
    let mut path = path.to_string();
    loop {
        let mut parts = path.trim_start_matches('/').splitn(4, '/');
        let (Some("proc"), Some(process), Some("root")) =
            (parts.next(), parts.next(), parts.next())
        else {
            return path;
        };
        let process_ok = process == "self"
            || process == "thread-self"
            || (!process.is_empty() && process.bytes().all(|b| b.is_ascii_digit()));
        if !process_ok {
            return path;
        }
        path = format!("/{}", parts.next().unwrap_or_default());
    }
}

/// The path's components.
fn components(path: &str) -> Vec<&str> {
    path.split('/').filter(|part| !part.is_empty()).collect()
}

/// Whether `dir` is a home directory by its place: the caller's, `/root`, or a directory
/// directly under `/home`, `/Users` or `/var/home`.
fn is_home_like(dir: &str, home: Option<&str>) -> bool {
    if Some(dir) == home || dir == "/root" {
        return true;
    }
    let parts = components(dir);
    matches!(parts.as_slice(), ["home" | "Users", _] | ["var", "home", _])
}

/// Whether `path` is an engine's data or runtime directory, in one, or above one.
fn holds_engine_data(path: &str) -> bool {
    if ENGINE_DATA
        .iter()
        .any(|dir| contains(dir, path) || contains(path, dir))
    {
        return true;
    }
    // Docker's runtime directory and files (`/run/docker`, `/run/docker.pid`, ...); the
    // socket itself is `DockerSocket`'s.
    for run in ["/run", "/var/run"] {
        if contains(path, run) {
            return true;
        }
        if let Some(rest) = path.strip_prefix(&format!("{run}/")) {
            let name = rest.split('/').next().unwrap_or_default();
            if name.starts_with("docker") && rest != "docker.sock" {
                return true;
            }
        }
    }
    // The rootless engines' storage (`~/.local/share/containers`, `~/.local/share/docker`),
    // in it, or above it in a home.
    let parts = components(path);
    if parts
        .windows(3)
        .any(|window| matches!(window, [".local", "share", "containers" | "docker"]))
    {
        return true;
    }
    for tail in ["/.local", "/.local/share"] {
        if let Some(dir) = path.strip_suffix(tail) {
            if is_home_like(dir, None) {
                return true;
            }
        }
    }
    false
}

/// Whether `path` is one of [`HOST_SYSTEM`] or in one (`/root` only when `home` is known and
/// is not `/root` or in it).
fn is_host_system(path: &str, home: Option<&str>) -> bool {
    HOST_SYSTEM.iter().any(|dir| {
        if *dir == "/root" && home.is_none_or(|home| contains("/root", home)) {
            return false;
        }
        contains(dir, path)
    })
}

/// Whether `path` is a credential directory, in one, or `~/.config` (above `gcloud`) of a home.
/// Docker Desktop's `.docker/run` and `.docker/desktop` hold its socket and machine, not
/// logins: they are `DockerSocket`'s.
fn is_credential_dir(path: &str, home: Option<&str>) -> bool {
    let parts = components(path);
    let in_one = CREDENTIAL_DIRS.iter().any(|dir| {
        let name = components(dir);
        parts
            .windows(name.len())
            .enumerate()
            .any(|(index, window)| {
                let next = parts.get(index + name.len()).copied();
                window == name.as_slice()
                    && !(*dir == ".docker" && matches!(next, Some("run" | "desktop")))
            })
    });
    if in_one {
        return true;
    }
    path.strip_suffix("/.config")
        .is_some_and(|dir| is_home_like(dir, home))
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
            dangers("/home/dev/.docker", None),
            [Danger::DockerSocket, Danger::CredentialDir],
            "Docker Desktop's socket and the registry logins"
        );
        assert_eq!(
            Danger::DockerSocket.allow_setting(),
            "[security] allow_docker_socket = true"
        );
    }

    #[test]
    fn the_engines_data_is_refused_in_it_above_it_and_through_proc_root() {
        for path in [
            "/var/lib/docker",
            "/var/lib/docker/containers",
            "/var/lib/docker/containers/abc/config.v2.json",
            "/var/lib/docker/../docker/containers",
            "//var//lib/./docker",
            "/proc/1/root/var/lib/docker",
            "/proc/self/root/var/lib/docker/volumes",
            "/proc/thread-self/root/proc/1/root/var/lib/containers",
            "/var/lib",
            "/var/lib/containers/storage",
            "/var/lib/containerd",
            "/run/containerd/containerd.sock",
            "/var/run/containerd",
            "/run/docker",
            "/var/run/docker/netns",
            "/run/docker.pid",
            "/home/dev/.local/share/containers/storage",
            "/home/dev/.local/share",
            "/home/dev/.local",
            "/root/.local/share/docker",
        ] {
            assert_eq!(
                classify_path(path, Some("/home/dev")),
                Some(Danger::EngineData),
                "{path}"
            );
        }
        assert_eq!(
            dangers("/proc/1/root/var/lib/docker", None),
            [Danger::EngineData, Danger::HostSystem],
            "the /proc spelling is the host's /proc as well"
        );
        assert_eq!(
            dangers("/var", None),
            [Danger::DockerSocket, Danger::EngineData]
        );
        assert_eq!(
            dangers("/run", None),
            [Danger::DockerSocket, Danger::EngineData]
        );
        assert_eq!(
            dangers("/run/docker.sock", None),
            [Danger::DockerSocket],
            "the socket alone needs only allow_docker_socket"
        );
        assert_eq!(dangers("/proc/1/root", None), [Danger::Root]);
        assert_eq!(
            dangers("/proc/self/root/home/dev", Some("/home/dev"))[0],
            Danger::Home
        );
        assert_eq!(
            Danger::EngineData.allow_setting(),
            "[security] allow_engine_data_bind = true"
        );
    }

    #[test]
    fn the_host_system_directories_and_credential_dirs_are_refused() {
        for path in [
            "/proc",
            "/proc/1/environ",
            "/proc/1/cwd",
            "/sys",
            "/sys/fs/cgroup",
            "/dev",
            "/dev/sda",
            "/etc",
            "//etc",
            "/etc/shadow",
            "/boot",
            "/root",
            "/root/project",
        ] {
            assert_eq!(
                classify_path(path, Some("/home/dev")),
                Some(Danger::HostSystem),
                "{path}"
            );
        }
        for path in [
            "/home/dev/.ssh",
            "/home/dev/.ssh/id_ed25519",
            "/home/dev/.kube",
            "/home/dev/.kube/config",
            "/home/dev/.aws/credentials",
            "/home/dev/.config/gcloud",
            "/home/dev/.config/gcloud/application_default_credentials.json",
            "/home/dev/.config",
            "/home/dev/.gnupg",
            "/home/dev/.docker/config.json",
            "/root/.ssh",
            "/srv/backup/.ssh",
            "/home/dev/src/project/../../.ssh/../.kube",
        ] {
            assert_eq!(
                classify_path(path, None),
                Some(Danger::CredentialDir),
                "{path}"
            );
        }
        assert_eq!(
            classify_path("/root/.ssh/id_ed25519", Some("/home/dev")),
            Some(Danger::HostSystem),
            "root's keys, which need both fields"
        );
        assert_eq!(
            dangers("/root/.ssh/id_ed25519", Some("/home/dev")),
            [Danger::HostSystem, Danger::CredentialDir]
        );
        // The caller's own `/root` is a home like any other: its projects stay bindable, and
        // `/root` is not judged before the home is known.
        assert_eq!(classify_path("/root/project", Some("/root")), None);
        assert_eq!(classify_path("/root/project", None), None);
        assert_eq!(classify_path("/root", Some("/root")), Some(Danger::Home));
        assert_eq!(
            classify_path("/root/.ssh", Some("/root")),
            Some(Danger::CredentialDir)
        );
        assert_eq!(
            Danger::CredentialDir.allow_field(),
            "security.allow_credential_dir_bind"
        );
        assert_eq!(
            Danger::HostSystem.allow_field(),
            "security.allow_host_system_bind"
        );
    }

    #[test]
    fn ordinary_paths_stay_accepted() {
        for path in [
            "/var/lib/myapp",
            "/var/lib/dockerfiles",
            "/var/library",
            "/etc-backup",
            "/devices",
            "/system",
            "/procedures",
            "/tmp/x",
            "/srv/data",
            "/run/user/1000/app",
            "/home/dev/src/project",
            "/home/dev/src",
            "/home/dev/.config/tool",
            "/home/dev/.local/bin",
            "/home/dev/.sshd-notes",
            "/home/dev/src/project/.config",
            "/usr/share/ca-certificates",
            "/proc-notes",
        ] {
            assert_eq!(dangers(path, Some("/home/dev")), [], "{path}");
        }
        assert_eq!(
            dangers("/proc/x/root/tmp", None),
            [Danger::HostSystem],
            "not a process's root (a name is no PID), but in /proc all the same"
        );
    }
}
