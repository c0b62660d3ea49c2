//! The engine a launch runs on, through its command line: the argv for Docker or Podman (the
//! Podman rows of [`agentc_engine::podman`] applied), and the fail-closed runtime
//! check, asked of the engine before anything is created.

use std::collections::BTreeMap;
use std::process::Command;

use agentc_engine::podman::{self, tmpfs_options};
use agentc_engine::{
    check_runtime, docker_info_runtimes, Engine, EngineRuntimes, ExecError, RuntimeFacts, Runtimes,
    PODMAN_RUNTIME_CANDIDATES,
};
use agentc_policy::{ContainerSpec, MountSource};

use super::docker;
use crate::render::container_argv;

/// The runtimes the engine has, as its command line reports them: `docker info` `.Runtimes`
/// (every registered name with its path and arguments), or for Podman whether
/// `podman --runtime NAME info` accepts the one asked about.
pub fn runtimes(
    engine: Engine,
    env: &BTreeMap<String, String>,
    wanted: &str,
) -> Result<Runtimes, ExecError> {
    match engine {
        Engine::Docker => {
            let text = docker::output(engine, env, &["info", "--format", "{{json .Runtimes}}"])?;
            let value: serde_json::Value = serde_json::from_str(text.trim()).map_err(|error| {
                ExecError::InspectUnreadable {
                    engine,
                    name: "docker info .Runtimes".to_string(),
                    message: error.to_string(),
                }
            })?;
            let mut registered = BTreeMap::new();
            if let Some(map) = value.as_object() {
                for (name, entry) in map {
                    let mut path = entry
                        .get("path")
                        .and_then(|path| path.as_str())
                        .unwrap_or_default()
                        .to_string();
                    for arg in entry
                        .get("runtimeArgs")
                        .and_then(|args| args.as_array())
                        .into_iter()
                        .flatten()
                        .filter_map(|arg| arg.as_str())
                    {
                        path.push(' ');
                        path.push_str(arg);
                    }
                    registered.insert(name.clone(), path);
                }
            }
            Ok(Runtimes::Registered(registered))
        }
        Engine::Podman => {
            let output = Command::new("podman")
                .envs(env)
                .args([
                    "--runtime",
                    wanted,
                    "info",
                    "--format",
                    "{{.Host.OCIRuntime.Name}}",
                ])
                .output()
                .map_err(|source| ExecError::CannotRunDocker { engine, source })?;
            Ok(Runtimes::Usable(if output.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&output.stderr)
                    .trim()
                    .trim_start_matches("Error: ")
                    .to_string())
            }))
        }
    }
}

type PodmanInfo = Result<serde_json::Value, (std::process::ExitStatus, String)>;

/// `podman [--runtime NAME] info --format json`: the document, or how podman failed.
fn podman_info(
    env: &BTreeMap<String, String>,
    runtime: Option<&str>,
) -> Result<PodmanInfo, ExecError> {
    let mut command = Command::new("podman");
    command.envs(env);
    if let Some(runtime) = runtime {
        command.args(["--runtime", runtime]);
    }
    let output = command
        .args(["info", "--format", "json"])
        .output()
        .map_err(|source| ExecError::CannotRunDocker {
            engine: Engine::Podman,
            source,
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr)
            .trim()
            .trim_start_matches("Error: ")
            .to_string();
        return Ok(Err((output.status, stderr)));
    }
    serde_json::from_slice(&output.stdout)
        .map(Ok)
        .map_err(|error| ExecError::InspectUnreadable {
            engine: Engine::Podman,
            name: "podman info".to_string(),
            message: error.to_string(),
        })
}

/// The runtime `podman info` reports as its OCI runtime (`host.ociRuntime`).
fn podman_runtime(info: &serde_json::Value) -> RuntimeFacts {
    let runtime = &info["host"]["ociRuntime"];
    let text = |key: &str| runtime[key].as_str().unwrap_or_default().to_string();
    RuntimeFacts {
        path: text("path"),
        version: text("version"),
    }
}

/// The runtimes the engine has, as its command line reports them, for the isolation floor:
/// Docker's `docker info` (the same document as `GET /info`, read by
/// [`docker_info_runtimes`]); for Podman each of [`PODMAN_RUNTIME_CANDIDATES`] that
/// `podman --runtime NAME info` finds, with the path and version it reports (the command line
/// takes `--runtime`, so every one found can be launched).
pub fn registered_runtimes(
    engine: Engine,
    env: &BTreeMap<String, String>,
) -> Result<EngineRuntimes, ExecError> {
    match engine {
        Engine::Docker => {
            let text = docker::output(engine, env, &["info", "--format", "{{json .}}"])?;
            let info: serde_json::Value = serde_json::from_str(text.trim()).map_err(|error| {
                ExecError::InspectUnreadable {
                    engine,
                    name: "docker info".to_string(),
                    message: error.to_string(),
                }
            })?;
            Ok(docker_info_runtimes(&info))
        }
        Engine::Podman => {
            let info =
                podman_info(env, None)?.map_err(|(status, stderr)| ExecError::DockerFailed {
                    engine,
                    command: "info".to_string(),
                    status,
                    stderr,
                })?;
            let found = std::thread::scope(|scope| {
                let asked: Vec<_> = PODMAN_RUNTIME_CANDIDATES
                    .iter()
                    .map(|name| (*name, scope.spawn(move || podman_info(env, Some(name)))))
                    .collect();
                asked
                    .into_iter()
                    .map(|(name, asked)| (name, asked.join()))
                    .collect::<Vec<_>>()
            });
            let mut runtimes = BTreeMap::new();
            for (name, answer) in found {
                match answer {
                    Ok(answer) => match answer? {
                        Ok(info) => {
                            runtimes.insert(name.to_string(), podman_runtime(&info));
                        }
                        Err((_, reason)) => log::debug!("podman has no runtime {name}: {reason}"),
                    },
                    Err(_) => log::debug!("asking podman about runtime {name} panicked"),
                }
            }
            let text = |value: &serde_json::Value| value.as_str().unwrap_or_default().to_string();
            Ok(EngineRuntimes {
                engine: format!(
                    "podman {} {} {}",
                    text(&info["version"]["Version"]),
                    text(&info["host"]["hostname"]),
                    text(&info["store"]["graphRoot"])
                ),
                default: info["host"]["ociRuntime"]["name"]
                    .as_str()
                    .map(str::to_string),
                runtimes,
            })
        }
    }
}

/// Refuses a launch whose runtime `engine` does not have; nothing is created before.
pub fn require_runtime(
    engine: Engine,
    env: &BTreeMap<String, String>,
    spec: &ContainerSpec,
) -> Result<(), ExecError> {
    let Some(wanted) = &spec.runtime else {
        return Ok(());
    };
    check_runtime(engine, wanted, &runtimes(engine, env, wanted)?)
}

/// The image's `USER` (`podman image inspect`), for the capability row.
fn image_user(
    engine: Engine,
    env: &BTreeMap<String, String>,
    image: &str,
) -> Result<String, ExecError> {
    Ok(docker::output(
        engine,
        env,
        &["image", "inspect", "--format", "{{.Config.User}}", image],
    )?
    .trim()
    .to_string())
}

/// The argv that launches `spec` on `engine`: the runtime checked first, then, on Docker, the
/// rendered argv; on Podman, the spec adapted ([`podman::adapt`], which needs the image
/// present to read its `USER`) and rendered with Podman's spellings ([`podman_argv`]). The
/// engine is asked with `env` on top of agentc's environment ([`docker::output`]).
pub fn launch_argv(
    engine: Engine,
    env: &BTreeMap<String, String>,
    spec: &ContainerSpec,
) -> Result<Vec<String>, ExecError> {
    require_runtime(engine, env, spec)?;
    match engine {
        Engine::Docker => Ok(container_argv(spec)?),
        Engine::Podman => {
            // SAFETY: geteuid has no preconditions and cannot fail.
            let root = unsafe { libc::geteuid() } == 0;
            let (rootless, cgroup_v1) = podman::host_is_rootless_cgroup_v1(root);
            podman::require_enforced_limits(spec, rootless, cgroup_v1)?;
            let user = match &spec.user {
                Some(_) => None,
                None => Some(image_user(engine, env, &spec.image)?),
            };
            let adapted = podman::adapt(spec, user.as_deref())?;
            Ok(podman_argv(&adapted)?)
        }
    }
}

/// A spec (already [`podman::adapt`]ed) as `podman run` argv: Docker's argv with `podman` as
/// the program, explicit tmpfs options, `ro` for read-only volumes, and
/// `--read-only-tmpfs=false`, `--ipc=private` and `--pids-limit=-1` (when off) before the
/// image.
pub fn podman_argv(spec: &ContainerSpec) -> Result<Vec<String>, agentc_engine::ArgvError> {
    let mut argv = container_argv(spec)?;
    argv[0] = Engine::Podman.program().to_string();
    let tmpfs: BTreeMap<String, String> = spec
        .tmpfs
        .iter()
        .map(|tmpfs| {
            (
                crate::render::tmpfs_flag(tmpfs),
                format!("--tmpfs={}:{}", tmpfs.target, tmpfs_options(tmpfs.exec)),
            )
        })
        .collect();
    let read_only_volumes = spec
        .mounts
        .iter()
        .any(|mount| mount.read_only && matches!(mount.source, MountSource::Volume { .. }));
    let image_at = argv.len() - spec.command.len() - 1;
    for element in argv.iter_mut().take(image_at) {
        if let Some(podman) = tmpfs.get(element.as_str()) {
            *element = podman.clone();
        } else if read_only_volumes
            && element.starts_with("--mount=type=volume,")
            && element.ends_with(",readonly")
        {
            element.truncate(element.len() - ",readonly".len());
            element.push_str(",ro");
        }
    }
    let mut extra = Vec::new();
    if spec.read_only_root {
        extra.push("--read-only-tmpfs=false".to_string());
    }
    extra.push("--ipc=private".to_string());
    if spec.resources.pids_limit.is_none() {
        extra.push("--pids-limit=-1".to_string());
    }
    argv.splice(image_at..image_at, extra);
    Ok(argv)
}

/// [`launch_argv`] from async code: the engine's commands it runs are blocking, so it runs on
/// the runtime's blocking threads.
pub(crate) async fn launch_argv_as(
    engine: Engine,
    env: &BTreeMap<String, String>,
    spec: &ContainerSpec,
) -> Result<Vec<String>, ExecError> {
    let (env, spec) = (env.clone(), spec.clone());
    tokio::task::spawn_blocking(move || launch_argv(engine, &env, &spec))
        .await
        .map_err(|error| ExecError::Render {
            error: Box::new(error),
            hint: None,
        })?
}

#[cfg(test)]
mod tests {
    use agentc_policy::{Mount, Tmpfs};

    use super::*;

    #[test]
    fn podman_argv_spells_out_what_docker_implies() {
        let mut spec = ContainerSpec::empty("img:1");
        spec.read_only_root = true;
        spec.tmpfs = vec![
            Tmpfs {
                target: "/tmp".into(),
                exec: false,
            },
            Tmpfs {
                target: "/run".into(),
                exec: true,
            },
        ];
        spec.mounts = vec![Mount {
            target: "/home/a".into(),
            read_only: true,
            source: MountSource::Volume {
                name: "home".into(),
                subpath: None,
            },
        }];
        spec.command = vec!["sh".into(), "-c".into(), "true".into()];
        let argv = podman_argv(&spec).unwrap();
        assert_eq!(
            argv,
            [
                "podman",
                "run",
                "--mount=type=volume,source=home,target=/home/a,ro",
                "--tmpfs=/tmp:rw,noexec,nosuid,nodev,mode=1777",
                "--tmpfs=/run:rw,exec,nosuid,nodev,mode=1777",
                "--read-only",
                "--read-only-tmpfs=false",
                "--ipc=private",
                "--pids-limit=-1",
                "img:1",
                "sh",
                "-c",
                "true"
            ]
        );
        spec.resources.pids_limit = Some(64);
        spec.read_only_root = false;
        let argv = podman_argv(&spec).unwrap();
        assert!(!argv.contains(&"--pids-limit=-1".to_string()));
        assert!(!argv.contains(&"--read-only-tmpfs=false".to_string()));
    }
}
