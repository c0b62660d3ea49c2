//! Why a launch failed, whichever backend ran it, and the exit status a launch ends with: one
//! error type with its hints, and the mapping of failures and container exit codes to statuses.

use std::borrow::Cow;
use std::ffi::OsString;
use std::fmt;
use std::process::ExitStatus;

use agentc_policy::{Hinted, LABEL_PROFILE};

use crate::argv::ArgvError;
use crate::hints::{daemon_hint, pull_hint};

/// docker's own exit status for a failure before the container ran.
pub const EXIT_DOCKER: i32 = 125;

/// The exit status of a launch the docker command line cannot carry (`EX_DATAERR`, as for an
/// invalid profile).
pub const EXIT_UNLAUNCHABLE: i32 = 65;

/// The exit status when `agentc rm` refuses or cannot find a container.
pub const EXIT_REFUSED: i32 = 1;

/// The signal that interrupted a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// SIGINT (Ctrl-C).
    Sigint,
    /// SIGTERM.
    Sigterm,
}

impl Interrupt {
    /// The conventional shell exit code: 130 for SIGINT, 143 for SIGTERM.
    pub fn exit_code(self) -> i32 {
        match self {
            Interrupt::Sigint => 130,
            Interrupt::Sigterm => 143,
        }
    }
}

impl fmt::Display for Interrupt {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Interrupt::Sigint => "SIGINT",
            Interrupt::Sigterm => "SIGTERM",
        })
    }
}

/// Why executing a launch failed, through the docker CLI or the Engine API.
///
/// A non-zero exit of the container is not an error: it is the launch's outcome.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// The docker command line cannot carry the spec (the CLI backend renders it before
    /// launching; exit 65).
    #[error(transparent)]
    Argv(#[from] ArgvError),
    /// The backend's renderer refused the spec, such as `agentc_backend_api::RenderError`
    /// (kept whole, so it can be downcast), with its hint ([`ExecError::render`]).
    #[error("{error}")]
    Render {
        /// The renderer's error.
        error: Box<dyn std::error::Error + Send + Sync + 'static>,
        /// What to do about it, the renderer's [`Hinted::hint`].
        hint: Option<String>,
    },
    /// A required secret is not set in the caller's environment. Only its name is kept.
    #[error("required secret {variable} is not set in the environment")]
    MissingSecret {
        /// The variable's name.
        variable: String,
    },
    /// The image is not present on the daemon, and no pull was asked for.
    #[error("image {image} is not present on the {engine} daemon")]
    ImageMissing {
        /// The engine asked.
        engine: crate::Engine,
        /// The image reference.
        image: String,
    },
    /// The launch leaves its egress allowlist to the image's own firewall (the agent presets'
    /// entrypoint iptables), and the image says it has none (`io.agentc.image.firewall=none`,
    /// as agentc's bundled images do): it would run open; nothing was created.
    #[error("image {image} has no egress firewall of its own (label io.agentc.image.firewall=none), and this launch leaves its allowlist to the image's firewall, so it would run open; nothing was created")]
    ImageWithoutFirewall {
        /// The image reference.
        image: String,
    },
    /// Pulling the image failed (registry unreachable, no such repository or tag, credentials
    /// wanted); nothing was created.
    #[error("cannot pull image {image}: {message}")]
    PullFailed {
        /// The image reference.
        image: String,
        /// The daemon's message.
        message: String,
        /// What to do about it.
        hint: &'static str,
    },
    /// A volume subpath needs a newer daemon than the one connected.
    #[error("mount {target} uses a volume subpath, which needs docker engine api 1.45 or later, but the daemon speaks {api_version}")]
    SubpathUnsupported {
        /// The mount's target.
        target: String,
        /// The negotiated API version, such as `1.41`.
        api_version: String,
    },
    /// The daemon could not be reached.
    #[error("cannot connect to the {} daemon: {message}", engine.as_str())]
    Connect {
        /// The engine asked for (`--engine`).
        engine: crate::Engine,
        /// bollard's message.
        message: String,
    },
    /// The daemon answered a request with an error.
    #[error("{engine} daemon refused to {step} (status {status}): {message}")]
    Daemon {
        /// The engine that refused.
        engine: crate::Engine,
        /// What agentc was doing, such as `create the container`.
        step: &'static str,
        /// The HTTP status.
        status: u16,
        /// The daemon's message.
        message: String,
    },
    /// An operation of the [engine port](crate::port) failed at `step`; the engine's own words
    /// are the detail, with the hint the daemon's message calls for.
    #[error("cannot {step}: {source}")]
    Engine {
        /// What agentc was doing, such as `create a volume`.
        step: &'static str,
        /// The engine's refusal.
        source: crate::port::EngineError,
    },
    /// The engine refused an operation, in its own words and with no status to give (the
    /// docker CLI's exit 125, an answer read from the command line or a session's stream); a
    /// launch's container, if created, was removed. The hint is the one the Engine API
    /// backend gives for the same message.
    #[error("{engine} daemon refused to {step}: {message}")]
    Refused {
        /// The engine that refused.
        engine: crate::Engine,
        /// What agentc was doing, such as `create the container`.
        step: &'static str,
        /// The engine's message.
        message: String,
        /// What the refusal is, where agentc acts on it, classified once where the error is
        /// made ([`crate::daemon_text::refusal`]).
        refusal: Option<crate::daemon_text::Refusal>,
    },
    /// The connection to the daemon (or its command line) failed mid-operation.
    #[error("lost the connection to the {engine} daemon while trying to {step}: {message}")]
    ConnectionLost {
        /// The engine whose connection was lost.
        engine: crate::Engine,
        /// What agentc was doing.
        step: &'static str,
        /// bollard's message.
        message: String,
    },
    /// SIGINT or SIGTERM interrupted the operation; what it started was stopped or removed.
    #[error("interrupted by {signal}{}", cleanup.as_ref().map(|cleanup| format!("; {cleanup}")).unwrap_or_default())]
    Interrupted {
        /// The signal.
        signal: Interrupt,
        /// What was cleaned up (`removed container NAME`), or what is left and how to remove
        /// it; `None` when nothing had been started.
        cleanup: Option<String>,
    },
    /// A launch failed or was interrupted, and the container it created could not be removed
    /// (typically because the daemon became unreachable).
    #[error(
        "{}; container {container} could not be removed: {message}",
        cause.with_hint()
    )]
    NotRemoved {
        /// Why the launch ended.
        cause: Box<ExecError>,
        /// The container's name, or its ID when it has none.
        container: String,
        /// Why the removal failed.
        message: String,
    },
    /// No container has this name or ID.
    #[error("no such container {name}")]
    NoSuchContainer {
        /// The name or ID given.
        name: String,
    },
    /// The container exists but agentc did not create it, so agentc refuses to drive it.
    #[error("refusing {name}: it has no {LABEL_PROFILE} label, so agentc did not create it")]
    NotAgentc {
        /// The name or ID given.
        name: String,
    },
    /// The local terminal or stdio failed.
    #[error("terminal i/o failed while trying to {step}: {source}")]
    Terminal {
        /// What agentc was doing.
        step: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An argv to run was empty (it must start with the display name `docker`).
    #[error("cannot run an empty argv")]
    EmptyArgv,
    /// The docker CLI (or the program standing in for it) could not be started for a launch.
    #[error("cannot start {program:?}: {source}")]
    Spawn {
        /// The program that was started.
        program: OsString,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Waiting for a started program failed.
    #[error("cannot wait for {program:?}: {source}")]
    Wait {
        /// The program that was started.
        program: OsString,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The docker CLI could not be run for a query (`docker image inspect`, `docker pull`,
    /// `docker inspect`).
    #[error("cannot run {}: {source}", engine.as_str())]
    CannotRunDocker {
        /// The engine whose CLI it is (`docker` or `podman`, as `--engine` chose).
        engine: crate::Engine,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A docker CLI query exited unsuccessfully.
    #[error("{engine} {command} failed ({status}): {stderr}")]
    DockerFailed {
        /// The engine whose command line it is.
        engine: crate::Engine,
        /// The docker subcommand, such as `inspect`.
        command: String,
        /// How docker exited.
        status: ExitStatus,
        /// What docker wrote on stderr, trimmed.
        stderr: String,
    },
    /// `docker inspect` printed something that is not a container's inspect.
    #[error("cannot read `{engine} inspect {name}`: {message}")]
    InspectUnreadable {
        /// The engine whose command line printed it.
        engine: crate::Engine,
        /// The container's name.
        name: String,
        /// The JSON reader's message.
        message: String,
    },
    /// The egress proxy of an allowlist enforced outside the workload could not be set up;
    /// the workload was not launched and what was created for it was removed (fail closed).
    #[error("cannot {step} for the egress allowlist: {message}")]
    Egress {
        /// What failed (`build the egress proxy image`, `create the isolated network`, ...).
        step: &'static str,
        /// Why.
        message: String,
        /// The engine's refusal, where the engine refused the step, classified once by the
        /// port ([`EngineError::refusal`](crate::port::EngineError::refusal)).
        refusal: Option<crate::daemon_text::Refusal>,
    },
    /// The egress proxy started but docker did not publish a sandbox port on it: its outside
    /// network is `--internal` (docker publishes no port through internal networks only). The
    /// workload was not launched and the companion was removed (fail closed).
    #[error("the egress proxy cannot publish port {port} of the sandbox: it reaches out through {outside}, and {engine} publishes no port through an internal network")]
    PortNotPublished {
        /// The engine.
        engine: crate::Engine,
        /// The sandbox's port (`8080`).
        port: u16,
        /// The outside network, in words (`the network corp`).
        outside: String,
    },
    /// The isolated network of an egress companion exists already: a leftover of a launch
    /// killed before it finished, the network of a sandbox of that name, or another's network
    /// ([`crate::companion::state::existing_network`]). Nothing of the launch was created, nothing
    /// was removed.
    #[error("cannot create the isolated network {network} for the egress allowlist: {found}")]
    EgressNetworkExists {
        /// The network's name.
        network: String,
        /// Whose it is.
        found: String,
        /// How to remove it.
        hint: String,
    },
    /// The launch names a runtime the engine does not have (or cannot apply); nothing was
    /// created.
    #[error(
        "{engine} cannot run runtime {runtime} (security.runtime): {found}; nothing was created"
    )]
    RuntimeMissing {
        /// The runtime the launch names.
        runtime: String,
        /// The engine asked.
        engine: crate::engine::Engine,
        /// What the engine has instead.
        found: String,
        /// How to register it.
        hint: String,
    },
    /// No runtime of the engine meets the launch's isolation floor (`security.isolation.min`,
    /// [`crate::isolation`]); nothing was created.
    #[error("profile {profile:?}: no runtime of the {engine} engine meets security.isolation.min = {min:?}{named} ({words}); nothing was created\n  found: {found}")]
    FloorNotMet {
        /// The launch's profile.
        profile: String,
        /// The engine asked.
        engine: crate::engine::Engine,
        /// The floor (`gvisor`).
        min: String,
        /// What the floor means (`a user-space kernel`).
        words: String,
        /// ` with security.runtime "NAME"` when the profile names the runtime, else empty.
        named: String,
        /// What the engine has, each runtime with its proven tier.
        found: String,
        /// How to get a runtime at the floor.
        hint: String,
    },
    /// Host ports the launch chooses are in use on this machine
    /// ([`crate::host_ports::check_free`]): each named with its profile field and, where this
    /// machine says, the process holding it; nothing was created. Each port is an `error:`
    /// line of its own, followed by its hint; the last port's hint is this error's.
    #[error("{}", crate::host_ports::in_use(.ports))]
    HostPortsInUse {
        /// One error per port, the first saying that nothing was created, each with its hint.
        ports: Vec<agentc_policy::Hint<String>>,
    },
    /// The engine cannot carry a field of the launch faithfully (a row of the Podman
    /// difference table that refuses); nothing was created.
    #[error("{field} cannot be launched on {engine}: {reason}")]
    EngineUnsupported {
        /// The engine.
        engine: crate::engine::Engine,
        /// The spec field path, such as `extra_hosts[0]`.
        field: String,
        /// Why.
        reason: String,
        /// What to change.
        hint: String,
    },
    /// The engine behind the socket is not the one asked for (`--engine`).
    #[error("--engine {wanted} was asked for, but {endpoint} is {found}")]
    EngineMismatch {
        /// The engine asked for.
        wanted: crate::engine::Engine,
        /// The engine that answered.
        found: String,
        /// The socket.
        endpoint: String,
        /// What to do.
        hint: String,
    },
}

impl ExecError {
    /// The renderer's refusal `error`, kept whole with its hint.
    pub fn render<E>(error: E) -> ExecError
    where
        E: Hinted + std::error::Error + Send + Sync + 'static,
    {
        ExecError::Render {
            hint: error.hint().map(Cow::into_owned),
            error: Box::new(error),
        }
    }

    /// A launch interrupted by `signal`, naming the container it removed, if one had been
    /// created.
    pub fn interrupted(signal: Interrupt, removed: Option<&str>) -> ExecError {
        ExecError::Interrupted {
            signal,
            cleanup: removed.map(|container| format!("removed container {container}")),
        }
    }

    /// A failed pull of `image`, with the hint [`pull_hint`] finds in the daemon's message.
    pub fn pull_failed(image: &str, message: &str) -> ExecError {
        ExecError::PullFailed {
            image: image.to_string(),
            message: message.trim().to_string(),
            hint: pull_hint(message),
        }
    }

    /// The process exit status this error maps to: 130/143 for interrupts, 1 for a container
    /// `agentc rm` refuses or cannot find, 65 for a spec the docker command line cannot carry,
    /// 125 (docker's own code for a failure before the container ran) otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            ExecError::Interrupted { signal, .. } => signal.exit_code(),
            ExecError::NotRemoved { cause, .. } => cause.exit_code(),
            ExecError::NotAgentc { .. } | ExecError::NoSuchContainer { .. } => EXIT_REFUSED,
            ExecError::Argv(_)
            | ExecError::RuntimeMissing { .. }
            | ExecError::FloorNotMet { .. }
            | ExecError::ImageWithoutFirewall { .. }
            | ExecError::EngineUnsupported { .. } => EXIT_UNLAUNCHABLE,
            _ => EXIT_DOCKER,
        }
    }
}

impl Hinted for ExecError {
    /// What to do about it, when agentc knows (the command line prints it on a line of its
    /// own after the message).
    fn hint(&self) -> Option<Cow<'_, str>> {
        let owned = |text: String| Some(Cow::Owned(text));
        let borrowed = |text: &'static str| Some(Cow::Borrowed(text));
        match self {
            ExecError::Argv(error) => error.hint(),
            ExecError::Render { hint, .. } => hint.as_deref().map(Cow::Borrowed),
            ExecError::Interrupted { .. }
            | ExecError::Terminal { .. }
            | ExecError::Wait { .. }
            | ExecError::InspectUnreadable { .. } => None,
            ExecError::HostPortsInUse { ports } => ports.last().and_then(Hinted::hint),
            ExecError::MissingSecret { variable } => {
                owned(format!("export {variable} before launching"))
            }
            ExecError::ImageMissing { engine, .. } => owned(format!(
                "build it with `agentc build PROFILE`, or provide it with `{engine} build` or \
                 `{engine} import`; agentc never pulls unless run with --pull, which pulls it \
                 from its registry"
            )),
            ExecError::ImageWithoutFirewall { .. } => borrowed(
                "let agentc's egress proxy enforce the allowlist (egress.enforce = \"outside\" \
                 with the hosts to allow), or set egress.mode = \"deny\"",
            ),
            ExecError::PullFailed { hint, .. } => borrowed(hint),
            ExecError::SubpathUnsupported { .. } => borrowed("upgrade docker or drop the subpath"),
            ExecError::Connect { engine, message } => borrowed(connect_hint(*engine, message)),
            ExecError::Daemon { message, .. } | ExecError::Refused { message, .. } => {
                daemon_hint(message).map(Cow::Borrowed)
            }
            ExecError::Engine { source, .. } => daemon_hint(&source.detail).map(Cow::Borrowed),
            ExecError::ConnectionLost { message, .. } => borrowed(crate::hints::connection_hint(
                message,
                "check that the daemon is still running; `agentc ps` shows what is left",
            )),
            ExecError::NotRemoved { container, .. } => owned(format!(
                "`agentc rm {container}` removes it once the daemon is reachable again"
            )),
            ExecError::NoSuchContainer { .. } => {
                borrowed("`agentc ps --all` lists agentc's containers")
            }
            ExecError::NotAgentc { .. } => borrowed(
                "agentc drives only its own containers (`agentc ps`); use the engine's own \
                 command line for others",
            ),
            ExecError::EmptyArgv => borrowed("render it with render_argv"),
            ExecError::Spawn { .. } => {
                borrowed("install it (the CLI of the engine --engine names), or point agentc at it")
            }
            ExecError::CannotRunDocker { engine, .. } => owned(format!(
                "install the {} CLI, or use --backend api",
                engine.as_str()
            )),
            ExecError::DockerFailed { stderr, .. } => {
                Some(crate::hints::connection_hint(stderr, ""))
                    .filter(|hint| !hint.is_empty())
                    .map(Cow::Borrowed)
            }
            ExecError::Egress { .. } => borrowed(
                "the sandbox was not launched; set egress.enforce = \"image\" to leave the \
                 allowlist to the image, or `agentc doctor` to check the daemon",
            ),
            ExecError::PortNotPublished { .. } => borrowed(
                "set egress.outside_network to a network that is not --internal (unset: \
                 docker's bridge), or remove [network] publish; `agentc doctor PROFILE` checks \
                 it before a launch",
            ),
            ExecError::EgressNetworkExists { hint, .. }
            | ExecError::RuntimeMissing { hint, .. }
            | ExecError::FloorNotMet { hint, .. }
            | ExecError::EngineUnsupported { hint, .. }
            | ExecError::EngineMismatch { hint, .. } => Some(Cow::Borrowed(hint)),
        }
    }
}

impl crate::port::EngineError {
    /// This error as a launch's error at `step` ([`ExecError::Engine`]).
    pub fn at(self, step: &'static str) -> ExecError {
        ExecError::Engine { step, source: self }
    }

    /// This error as a launch's error at `step`, as either backend reports it: an engine out
    /// of reach is [`ExecError::Connect`], a command line that is not installed
    /// [`ExecError::CannotRunDocker`] (with its own hint), anything else [`ExecError::Engine`].
    pub fn in_launch(self, engine: crate::Engine, step: &'static str) -> ExecError {
        use crate::port::EngineErrorKind;
        match self.kind {
            EngineErrorKind::Unavailable => ExecError::Connect {
                engine,
                message: self.detail,
            },
            EngineErrorKind::NoProgram => {
                let prefix = format!("cannot run {}: ", engine.program());
                let reason = self.detail.strip_prefix(&prefix).unwrap_or(&self.detail);
                ExecError::CannotRunDocker {
                    engine,
                    source: std::io::Error::other(reason.to_string()),
                }
            }
            _ => self.at(step),
        }
    }

    /// A launch error met inside a port operation (the renderer, the runtime check, Podman's
    /// rows, a secret) as the port's error, its message the detail: the port error it wraps;
    /// [`EngineErrorKind::Unsupported`](crate::port::EngineErrorKind::Unsupported) for what
    /// the engine cannot run as asked (exit 65); else a failure.
    pub fn of_launch(error: ExecError) -> crate::port::EngineError {
        use crate::port::{EngineError, EngineErrorKind};
        match error {
            ExecError::Engine { source, .. } => source,
            error => {
                let kind = if error.exit_code() == EXIT_UNLAUNCHABLE {
                    EngineErrorKind::Unsupported
                } else {
                    EngineErrorKind::Failed
                };
                EngineError::new(kind, error.with_hint().to_string())
            }
        }
    }
}

/// A container's exit code as a process exit status: docker's are 0..=255, and anything else
/// wraps as a shell would.
pub fn exit_status(code: i64) -> u8 {
    u8::try_from(code.rem_euclid(256)).unwrap_or(1)
}

/// What to do when the engine's API cannot be reached.
fn connect_hint(engine: crate::Engine, message: &str) -> &'static str {
    crate::hints::connection_hint(message, engine_hint(engine))
}

/// How to reach a daemon that does not answer.
fn engine_hint(engine: crate::Engine) -> &'static str {
    match engine {
        crate::Engine::Docker => "is docker running? DOCKER_HOST selects another daemon",
        crate::Engine::Podman => {
            "Podman answers the Engine API only while its service runs: start it with `podman \
             system service --time=0 &` (or `systemctl start podman.socket`; rootless: \
             `systemctl --user start podman.socket`); CONTAINER_HOST selects another socket. \
             `--backend api` needs it; through the cli backend (the default) every command runs \
             without it"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The daemon's messages, as moby words them (the first three seen on engine 20.10).
    #[test]
    fn daemon_refusals_a_valid_profile_can_meet_get_a_hint() {
        let hinted = [
            (
                "Conflict. The container name \"/x\" is already in use by container \"0123\". You have to remove (or rename) that container to be able to reuse that name.",
                "`agentc run --name N PROFILE` starts another",
            ),
            (
                "Range of CPUs is from 0.01 to 2.00, as there are only 2 CPUs available",
                "resources.cpus (or AGENTC_CPUS)",
            ),
            (
                "invalid mount config for type \"bind\": bind source path does not exist: /gone",
                "must exist on the daemon's host",
            ),
            ("network agentc-net not found", "docker network create"),
            (
                "error gathering device information while adding custom device \"/dev/fuse\": no such file or directory",
                "drop security.fuse",
            ),
        ];
        for (message, expected) in hinted {
            let error = ExecError::Daemon {
                engine: crate::Engine::Docker,
                step: "create the container",
                status: 400,
                message: message.to_string(),
            };
            let text = error.with_hint().to_string();
            let hint = text.split_once("\n  hint: ").map(|(_, hint)| hint);
            assert!(hint.is_some_and(|hint| hint.contains(expected)), "{text}");
            assert!(text.contains(message), "{text}");
        }
        let plain = ExecError::Daemon {
            engine: crate::Engine::Docker,
            step: "start the container",
            status: 500,
            message: "something else".to_string(),
        };
        assert_eq!(
            plain.with_hint().to_string(),
            "docker daemon refused to start the container (status 500): something else"
        );
    }

    #[test]
    fn a_socket_that_refuses_this_user_gets_its_own_hint() {
        let denied =
            "/var/run/docker.sock: client error (Connect): Permission denied (os error 13)";
        for engine in [crate::Engine::Docker, crate::Engine::Podman] {
            let connect = ExecError::Connect {
                engine,
                message: denied.into(),
            }
            .with_hint()
            .to_string();
            assert!(connect.contains("usermod -aG docker"), "{connect}");
            assert!(!connect.contains("is docker running"), "{connect}");
        }
        let stopped = ExecError::Connect {
            engine: crate::Engine::Docker,
            message: "No such file or directory (os error 2)".into(),
        }
        .with_hint()
        .to_string();
        assert!(stopped.contains("is docker running?"), "{stopped}");
        let cli = "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: dial unix /var/run/docker.sock: connect: permission denied";
        let lost = ExecError::ConnectionLost {
            engine: crate::Engine::Docker,
            step: "inspect the image",
            message: cli.into(),
        }
        .with_hint()
        .to_string();
        assert!(lost.contains("usermod -aG docker"), "{lost}");
        let failed = ExecError::DockerFailed {
            engine: crate::Engine::Docker,
            command: "image".into(),
            status: std::os::unix::process::ExitStatusExt::from_raw(256),
            stderr: cli.into(),
        }
        .with_hint()
        .to_string();
        assert!(
            failed.ends_with(crate::hints::SOCKET_PERMISSION),
            "{failed}"
        );
        let other = ExecError::DockerFailed {
            engine: crate::Engine::Docker,
            command: "image".into(),
            status: std::os::unix::process::ExitStatusExt::from_raw(256),
            stderr: "no such image".into(),
        }
        .with_hint()
        .to_string();
        assert!(!other.contains("hint"), "{other}");
    }

    #[test]
    fn interrupts_map_to_shell_exit_codes() {
        let error = ExecError::Interrupted {
            signal: Interrupt::Sigterm,
            cleanup: Some("removed container abc".into()),
        };
        assert_eq!(error.exit_code(), 143);
        assert_eq!(
            error.with_hint().to_string(),
            "interrupted by SIGTERM; removed container abc"
        );
        assert_eq!(Interrupt::Sigint.exit_code(), 130);
        let missing = ExecError::ImageMissing {
            engine: crate::Engine::Podman,
            image: "claude-code:latest".into(),
        };
        assert_eq!(missing.exit_code(), 125);
        let text = missing.with_hint().to_string();
        assert!(text.contains("agentc build PROFILE"), "{text}");
        assert!(text.contains("on the podman daemon"), "{text}");
        assert!(text.contains("`podman build` or `podman import`"), "{text}");
    }

    #[test]
    fn a_launch_error_in_a_port_operation_keeps_its_kind_and_words() {
        use crate::port::{EngineError, EngineErrorKind};
        let unsupported = ExecError::EngineUnsupported {
            engine: crate::Engine::Podman,
            field: "extra_hosts[0]".into(),
            reason: "r".into(),
            hint: "h".into(),
        };
        let text = unsupported.with_hint().to_string();
        let error = EngineError::of_launch(unsupported);
        assert_eq!(error.kind, EngineErrorKind::Unsupported);
        assert_eq!(error.detail, text);
        let missing = ExecError::ImageMissing {
            engine: crate::Engine::Docker,
            image: "x".into(),
        };
        assert_eq!(
            EngineError::of_launch(missing).kind,
            EngineErrorKind::Failed
        );
        let wrapped = EngineError::new(EngineErrorKind::Conflict, "name in use").at("create");
        assert_eq!(
            EngineError::of_launch(wrapped),
            EngineError::new(EngineErrorKind::Conflict, "name in use")
        );
    }

    #[test]
    fn refusals_of_rm_exit_1_and_unlaunchable_specs_65() {
        let refused = ExecError::NotAgentc { name: "db".into() };
        assert_eq!(refused.exit_code(), 1);
        assert_eq!(
            refused.with_hint().to_string(),
            "refusing db: it has no io.agentc.profile label, so agentc did not create it\n  hint: agentc drives only its own containers (`agentc ps`); use the engine's own command line for others"
        );
        assert_eq!(
            ExecError::NoSuchContainer { name: "x".into() }.exit_code(),
            1
        );
        let argv = ExecError::from(ArgvError::Nul {
            field: "user".into(),
        });
        assert_eq!(argv.exit_code(), 65);
        assert!(argv
            .with_hint()
            .to_string()
            .starts_with("user contains a NUL byte"));
    }

    #[test]
    fn a_failed_pull_names_the_image_and_exits_125() {
        let error = ExecError::pull_failed("127.0.0.1:1/x:1", " dial tcp: connection refused\n");
        assert_eq!(error.exit_code(), 125);
        assert_eq!(
            error.with_hint().to_string(),
            "cannot pull image 127.0.0.1:1/x:1: dial tcp: connection refused\n  hint: the registry is unreachable from the docker daemon: check that it is running and the host and port in the image reference"
        );
    }

    #[test]
    fn exit_codes_wrap_like_a_shell() {
        assert_eq!(exit_status(0), 0);
        assert_eq!(exit_status(7), 7);
        assert_eq!(exit_status(137), 137);
        assert_eq!(exit_status(-1), 255);
        assert_eq!(exit_status(256), 0);
    }
}
