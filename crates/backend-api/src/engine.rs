//! The engine behind the socket: that it is the one asked for (`--engine`), the runtimes it
//! has (the fail-closed check before anything is created), and the create body on Podman's
//! Docker-compatible socket (the rows of [`agentc_engine::podman`] applied).

use std::collections::{BTreeMap, HashMap};

use agentc_engine::podman::{self, tmpfs_options};
use agentc_engine::{
    check_runtime, docker_info_runtimes, Engine, EngineRuntimes, ExecError, Runtimes,
};
use agentc_policy::{ContainerSpec, MountSource};
use bollard::Docker;

use crate::daemon::{daemon_error, is_not_found};
use crate::render::{render_create, CreateRequest};

/// The component `/version` names on Podman's socket.
const PODMAN_COMPONENT: &str = "Podman Engine";

/// Which engine answers `GET /_ping` on a local socket, from its headers: Podman adds
/// `Libpod-Api-Version`. `None` when the socket cannot be asked (then `/version` decides).
/// About 0.3 ms, where Podman's `/version` takes half a second.
fn ping_engine(endpoint: &str) -> Option<(Engine, String)> {
    use std::io::{Read, Write};
    let path = endpoint.strip_prefix("unix://")?;
    let mut stream = std::os::unix::net::UnixStream::connect(path).ok()?;
    let timeout = Some(std::time::Duration::from_secs(5));
    stream.set_read_timeout(timeout).ok()?;
    stream.set_write_timeout(timeout).ok()?;
    stream
        .write_all(b"GET /_ping HTTP/1.1\r\nHost: engine\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut head = Vec::new();
    let mut buffer = [0u8; 4096];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") && head.len() < 65536 {
        let read = stream.read(&mut buffer).ok()?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    let head = String::from_utf8_lossy(&head);
    if !head.starts_with("HTTP/1.") {
        return None;
    }
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_string())
        })
    };
    Some(match header("Libpod-Api-Version") {
        Some(version) => (Engine::Podman, version),
        None => (
            Engine::Docker,
            header("Server").unwrap_or_else(|| "(version unknown)".into()),
        ),
    })
}

/// Refuses a socket whose engine is not `wanted`: Podman answers `/_ping` with a
/// `Libpod-Api-Version` header and `/version` with a `Podman Engine` component, Docker with
/// neither. A Podman socket taken for Docker would ignore `HostConfig.Runtime` silently.
pub(crate) async fn check_engine(
    docker: &Docker,
    ping: Option<&crate::daemon::Ping>,
    wanted: Engine,
    endpoint: &str,
) -> Result<(), ExecError> {
    let local = if endpoint.starts_with("unix://") {
        endpoint.to_string()
    } else if endpoint.contains("://") {
        String::new()
    } else {
        // Docker's local socket (no DOCKER_HOST).
        "unix:///var/run/docker.sock".to_string()
    };
    // The ping `connect` sent on its pooled connection, else one of our own.
    let pinged = ping.map(|ping| match &ping.libpod_api_version {
        Some(version) => (Engine::Podman, version.clone()),
        None => (
            Engine::Docker,
            ping.server
                .clone()
                .unwrap_or_else(|| "(version unknown)".into()),
        ),
    });
    let (found, version) = match pinged.or_else(|| ping_engine(&local)) {
        Some(answer) => answer,
        None => {
            let version = docker
                .version()
                .await
                .map_err(|error| daemon_error(wanted, "read the engine's version", error))?;
            let podman = version
                .components
                .unwrap_or_default()
                .iter()
                .any(|component| component.name == PODMAN_COMPONENT);
            let found = if podman {
                Engine::Podman
            } else {
                Engine::Docker
            };
            (
                found,
                version
                    .version
                    .unwrap_or_else(|| "(version unknown)".into()),
            )
        }
    };
    if found == wanted {
        return Ok(());
    }
    Err(ExecError::EngineMismatch {
        wanted,
        found: format!("{found} {version}"),
        endpoint: endpoint.to_string(),
        hint: format!(
            "use --engine {found} (or AGENTC_ENGINE={found}), or point {} at the {wanted} socket",
            match wanted {
                Engine::Docker => "DOCKER_HOST",
                Engine::Podman => "CONTAINER_HOST",
            }
        ),
    })
}

/// What the engine reports about its runtimes through `GET /info`: on Docker every registered
/// runtime with its path and arguments; on Podman only the default counts (the socket ignores
/// `HostConfig.Runtime`, and its `Runtimes` lists candidates whether installed or not).
pub async fn runtimes(docker: &Docker, engine: Engine) -> Result<Runtimes, ExecError> {
    let info = docker
        .info()
        .await
        .map_err(|error| daemon_error(engine, "read the engine's runtimes", error))?;
    Ok(match engine {
        Engine::Podman => Runtimes::DefaultOnly(info.default_runtime),
        Engine::Docker => Runtimes::Registered(
            info.runtimes
                .unwrap_or_default()
                .into_iter()
                .map(|(name, runtime)| {
                    let mut path = runtime.path.unwrap_or_default();
                    for arg in runtime.runtime_args.unwrap_or_default() {
                        path.push(' ');
                        path.push_str(&arg);
                    }
                    (name, path)
                })
                .collect::<BTreeMap<_, _>>(),
        ),
    })
}

/// The runtimes a launch through the Engine API can select, for the isolation floor, from
/// `GET /info` (read by [`docker_info_runtimes`], as the command line's `docker info`): on
/// Docker every registered runtime; on Podman's socket only its default (it ignores
/// `HostConfig.Runtime`, and its `Runtimes` lists candidates whether installed or not).
pub async fn registered_runtimes(
    docker: &Docker,
    engine: Engine,
) -> Result<EngineRuntimes, ExecError> {
    let info = docker
        .info()
        .await
        .map_err(|error| daemon_error(engine, "read the engine's runtimes", error))?;
    let document = serde_json::to_value(&info).map_err(|error| ExecError::InspectUnreadable {
        engine,
        name: "GET /info".to_string(),
        message: error.to_string(),
    })?;
    let mut found = docker_info_runtimes(&document);
    if engine == Engine::Podman {
        found.engine = found.engine.replacen("docker", "podman-socket", 1);
        let default = found.default.clone().unwrap_or_default();
        found.runtimes.retain(|name, _| *name == default);
    }
    Ok(found)
}

/// Refuses a launch whose runtime `engine` does not have; nothing is created before.
pub async fn require_runtime(
    docker: &Docker,
    engine: Engine,
    spec: &ContainerSpec,
) -> Result<(), ExecError> {
    let Some(wanted) = &spec.runtime else {
        return Ok(());
    };
    check_runtime(engine, wanted, &runtimes(docker, engine).await?)
}

/// The create request for `spec` on `engine` (answering on `docker`): the runtime checked
/// first; on Podman the spec adapted ([`podman::adapt`], reading the image's `USER`) and the
/// body given Podman's spellings ([`podman_body`]).
pub async fn create_request(
    docker: &Docker,
    engine: Engine,
    spec: &ContainerSpec,
) -> Result<CreateRequest, ExecError> {
    render_create(spec)?;
    require_runtime(docker, engine, spec).await?;
    match engine {
        Engine::Docker => Ok(render_create(spec)?),
        Engine::Podman => {
            // SAFETY: geteuid has no preconditions and cannot fail.
            let root = unsafe { libc::geteuid() } == 0;
            if let (true, true) = podman::host_is_rootless_cgroup_v1(root) {
                // Not root on cgroup v1: whether the socket is a rootless service, it says.
                let info = docker.info().await.map_err(|error| {
                    daemon_error(engine, "read the engine's security options", error)
                })?;
                let rootless = info
                    .security_options
                    .unwrap_or_default()
                    .iter()
                    .any(|option| option.contains("name=rootless"));
                podman::require_enforced_limits(spec, rootless, true)?;
            }
            let user = match &spec.user {
                Some(_) => None,
                None => match docker.inspect_image(&spec.image).await {
                    Ok(image) => Some(
                        image
                            .config
                            .and_then(|config| config.user)
                            .unwrap_or_default(),
                    ),
                    Err(error) if is_not_found(&error) => {
                        return Err(ExecError::ImageMissing {
                            engine,
                            image: spec.image.clone(),
                        })
                    }
                    Err(error) => return Err(daemon_error(engine, "inspect the image", error)),
                },
            };
            let adapted = podman::adapt(spec, user.as_deref())?;
            let mut request = render_create(&adapted)?;
            podman_body(&adapted, &mut request);
            Ok(request)
        }
    }
}

/// Podman's spellings in a create body: explicit tmpfs options, `/var/tmp` (which Podman's
/// socket mounts with a read-only root, and which it cannot be told not to) as a `noexec`
/// tmpfs, a private IPC namespace, and `PidsLimit: -1` when the limit is off.
pub fn podman_body(spec: &ContainerSpec, request: &mut CreateRequest) {
    let Some(host) = request.body.host_config.as_mut() else {
        return;
    };
    let mut tmpfs: HashMap<String, String> = spec
        .tmpfs
        .iter()
        .map(|tmpfs| (tmpfs.target.clone(), tmpfs_options(tmpfs.exec)))
        .collect();
    if spec.read_only_root && !tmpfs.contains_key("/var/tmp") {
        tmpfs.insert("/var/tmp".to_string(), tmpfs_options(false));
    }
    host.tmpfs = (!tmpfs.is_empty()).then_some(tmpfs);
    host.ipc_mode = Some("private".to_string());
    if spec.resources.pids_limit.is_none() {
        host.pids_limit = Some(-1);
    }
}

/// Refuses a volume subpath on a daemon older than API 1.45, which would silently ignore
/// `VolumeOptions.Subpath` and mount the whole volume.
pub(crate) fn check_subpaths(docker: &Docker, spec: &ContainerSpec) -> Result<(), ExecError> {
    let version = docker.client_version();
    if (version.major_version, version.minor_version) >= (1, 45) {
        return Ok(());
    }
    for mount in &spec.mounts {
        if let MountSource::Volume {
            subpath: Some(_), ..
        } = &mount.source
        {
            return Err(ExecError::SubpathUnsupported {
                target: mount.target.clone(),
                api_version: format!("{}.{}", version.major_version, version.minor_version),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use agentc_policy::Tmpfs;

    use super::*;

    #[test]
    fn the_podman_body_spells_out_what_docker_implies() {
        let mut spec = ContainerSpec::empty("img:1");
        spec.read_only_root = true;
        spec.tmpfs = vec![Tmpfs {
            target: "/run".into(),
            exec: true,
        }];
        let mut request = render_create(&spec).unwrap();
        podman_body(&spec, &mut request);
        let host = request.body.host_config.unwrap();
        let tmpfs = host.tmpfs.unwrap();
        assert_eq!(tmpfs["/run"], "rw,exec,nosuid,nodev,mode=1777");
        assert_eq!(tmpfs["/var/tmp"], "rw,noexec,nosuid,nodev,mode=1777");
        assert_eq!(host.ipc_mode.as_deref(), Some("private"));
        assert_eq!(host.pids_limit, Some(-1));
    }
}
