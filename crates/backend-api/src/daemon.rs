//! The connection to the daemon and its errors: connecting with a negotiated API version, and
//! turning bollard's errors into [`ExecError`]s that say which step failed.
//!
//! Over a unix socket (the local daemon, `DOCKER_HOST=unix://...`), agentc hands bollard its own
//! pooled HTTP client: one keep-alive connection serves every request of the port (bollard's
//! own unix client keeps no idle connection, so each request would connect anew), and concurrent
//! requests (a fan-out) open more connections of the same pool. The API version is negotiated
//! with `GET /_ping` on that connection, whose `Api-Version` header carries the daemon's version,
//! as the docker CLI does: `GET /version` makes the daemon ask containerd for its components'
//! versions, tens of milliseconds before anything else can happen. What that ping answered (which
//! engine) and the waits its transport sees registered belong to the connection (`Connection`,
//! held by [`crate::port::ApiPort`]), never to the process. Other hosts (`tcp://`, `ssh://`)
//! keep bollard's own client and negotiation.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentc_engine::{Engine, ExecError};
use bollard::errors::Error as BollardError;
use bollard::{ClientVersion, Docker, API_DEFAULT_VERSION};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use hyperlocal::UnixConnector;
use tokio::sync::oneshot;

/// The local daemon's socket when `DOCKER_HOST` names none.
pub const DEFAULT_SOCKET: &str = "/var/run/docker.sock";

/// How long each request may take (bollard's default too).
const REQUEST_TIMEOUT_SECONDS: u64 = 120;

/// How long the daemon may take to answer the `/_ping` that starts every connection.
const PING_TIMEOUT: Duration = Duration::from_secs(30);

/// One connection to an engine's API, as [`open`] made it: the client, the engine it is meant
/// to reach, what the `/_ping` that opened it answered, and the waits its launches await.
#[derive(Debug, Clone)]
pub(crate) struct Connection {
    /// The client.
    pub(crate) docker: Docker,
    /// The engine asked for (`--engine`), which its errors name.
    pub(crate) engine: Engine,
    /// What the opening `/_ping` answered (a unix socket only).
    pub(crate) ping: Option<Ping>,
    /// The waits registered on this connection ([`Waits::registered`]).
    pub(crate) waits: Arc<Waits>,
}

/// Connects to `engine`'s daemon and negotiates the API version (down to the daemon's, such as
/// 1.41). `docker_host` is `DOCKER_HOST` as read by the caller; `None` uses the local socket.
pub(crate) async fn open(
    engine: Engine,
    docker_host: Option<&str>,
) -> Result<Connection, ExecError> {
    let host = docker_host.filter(|host| !host.is_empty());
    let waits = Arc::new(Waits::default());
    let connect_error = |error: BollardError| connect_error(engine, error);
    let (docker, ping) = match unix_socket(host) {
        Some(socket) => connect_unix(engine, socket, &waits).await?,
        None => {
            let docker = match host {
                Some(host) => Docker::connect_with_host(host),
                None => Docker::connect_with_local_defaults(),
            }
            .map_err(connect_error)?;
            (
                docker.negotiate_version().await.map_err(connect_error)?,
                None,
            )
        }
    };
    log::debug!(
        "connected to the daemon at {} (engine api {})",
        if host.is_some() {
            "DOCKER_HOST"
        } else {
            "the local socket"
        },
        version_text(&docker.client_version())
    );
    Ok(Connection {
        docker,
        engine,
        ping,
        waits,
    })
}

/// The unix socket path `DOCKER_HOST` names (`unix:///run/user/1000/docker.sock`), the default
/// socket when it names none; `None` for other schemes.
fn unix_socket(host: Option<&str>) -> Option<&str> {
    match host {
        None => Some(DEFAULT_SOCKET),
        Some(host) => host.strip_prefix("unix://"),
    }
}

/// Connects over a unix socket with a pooled client shared by every request, and negotiates
/// the version with `/_ping` on it (`GET /version` when the answer carries no `Api-Version`).
async fn connect_unix(
    engine: Engine,
    socket: &str,
    waits: &Arc<Waits>,
) -> Result<(Docker, Option<Ping>), ExecError> {
    let client = Client::builder(TokioExecutor::new()).build(UnixConnector);
    // The authority bollard's requests carry (`unix://HEX`, no port): the same pool key, so
    // the ping's connection is the one they reuse.
    let address = format!("unix://{}", hex(socket));
    let ping = hyper::Request::get(format!("{address}/_ping"))
        .body(bollard::body_full(bytes::Bytes::new()))
        .map_err(|error| ExecError::Connect {
            engine,
            message: error.to_string(),
        })?;
    let answer = async {
        let response = client.request(ping).await?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_string)
        };
        let version = header("api-version").as_deref().and_then(parse_version);
        let ping = Ping {
            libpod_api_version: header("libpod-api-version"),
            server: header("server"),
        };
        // Read the body to its end so that the connection goes back to the pool.
        response.into_body().collect().await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>((version, ping))
    };
    let (server_version, ping) = match tokio::time::timeout(PING_TIMEOUT, answer).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(error)) => {
            return Err(ExecError::Connect {
                engine,
                message: format!("{socket}: {}", error_chain(error.as_ref())),
            })
        }
        Err(_) => {
            return Err(ExecError::Connect {
                engine,
                message: format!(
                    "{socket}: no answer to /_ping within {}s",
                    PING_TIMEOUT.as_secs()
                ),
            })
        }
    };
    let version = match &server_version {
        Some(server) if server < API_DEFAULT_VERSION => server,
        _ => API_DEFAULT_VERSION,
    };
    let waits = Arc::clone(waits);
    let transport = move |request: bollard::BollardRequest| {
        let waited = wait_target(request.uri().path());
        let response = client.request(request);
        let waits = Arc::clone(&waits);
        async move {
            let response = response.await.map_err(BollardError::from)?;
            if let Some(id) = waited {
                waits.confirm(&id);
            }
            Ok(response)
        }
    };
    let docker = Docker::connect_with_custom_transport(
        transport,
        Some(address),
        REQUEST_TIMEOUT_SECONDS,
        version,
    )
    .map_err(|error| connect_error(engine, error))?;
    let docker = match server_version {
        Some(_) => docker,
        None => docker
            .negotiate_version()
            .await
            .map_err(|error| connect_error(engine, error))?,
    };
    Ok((docker, Some(ping)))
}

/// What the `/_ping` of a connection over a unix socket answered, besides the API version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ping {
    /// Podman's `Libpod-Api-Version` header (Docker sends none).
    pub(crate) libpod_api_version: Option<String>,
    /// The `Server` header, such as `Docker/20.10.24+dfsg1 (linux)`.
    pub(crate) server: Option<String>,
}

/// The waits of one connection whose registration a launch awaits, by container ID: see
/// [`Waits::registered`].
#[derive(Debug, Default)]
pub(crate) struct Waits(Mutex<Vec<(String, oneshot::Sender<()>)>>);

impl Waits {
    /// Resolves once the daemon has answered the headers of a `POST /containers/ID/wait` (with
    /// any status), which it sends only after registering the wait: from then on an exit
    /// cannot be missed, as `docker run --rm` relies on. Only connections [`open`]ed over a
    /// unix socket report it; elsewhere the receiver never resolves, so a caller bounds its
    /// wait.
    pub(crate) fn registered(&self, id: &str) -> oneshot::Receiver<()> {
        let (sender, receiver) = oneshot::channel();
        self.lock().push((id.to_string(), sender));
        receiver
    }

    /// The daemon answered a wait for `id`: its receivers resolve.
    fn confirm(&self, id: &str) {
        let mut waits = self.lock();
        while let Some(index) = waits.iter().position(|(waited, _)| waited == id) {
            let (_, sender) = waits.swap_remove(index);
            let _ = sender.send(());
        }
        // Forget waits whose launch stopped listening.
        waits.retain(|(_, sender)| !sender.is_closed());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, oneshot::Sender<()>)>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The container ID of a wait request's path (`/containers/ID/wait`, with or without a
/// version prefix).
fn wait_target(path: &str) -> Option<String> {
    let (_, rest) = path.split_once("/containers/")?;
    let id = rest.strip_suffix("/wait")?;
    (!id.is_empty() && !id.contains('/')).then(|| id.to_string())
}

/// `1.41` as a [`ClientVersion`].
fn parse_version(text: &str) -> Option<ClientVersion> {
    let (major, minor) = text.trim().split_once('.')?;
    Some(ClientVersion {
        major_version: major.parse().ok()?,
        minor_version: minor.parse().ok()?,
    })
}

fn version_text(version: &ClientVersion) -> String {
    format!("{}.{}", version.major_version, version.minor_version)
}

/// The socket path as the host of a `unix://` URI (hex, as hyperlocal reads it).
fn hex(socket: &str) -> String {
    socket.bytes().map(|byte| format!("{byte:02x}")).collect()
}

/// An error and its causes on one line (hyper's errors name the cause only in `source`).
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn connect_error(engine: Engine, error: BollardError) -> ExecError {
    ExecError::Connect {
        engine,
        message: error.to_string(),
    }
}

/// The HTTP status of a daemon refusal, if the error is one.
pub(crate) fn status(error: &BollardError) -> Option<u16> {
    match error {
        BollardError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

/// Whether the daemon answered 404 (no such container or image).
pub(crate) fn is_not_found(error: &BollardError) -> bool {
    status(error) == Some(404)
}

/// A refusal of `engine`'s daemon as [`ExecError::Daemon`], any other failure as a lost
/// connection, both naming `step`.
pub(crate) fn daemon_error(engine: Engine, step: &'static str, error: BollardError) -> ExecError {
    match error {
        BollardError::DockerResponseServerError {
            status_code,
            message,
        } => ExecError::Daemon {
            engine,
            step,
            status: status_code,
            message,
        },
        other => ExecError::ConnectionLost {
            engine,
            step,
            message: other.to_string(),
        },
    }
}

/// Waits (up to 10 s) until the daemon has removed a container; a container already gone
/// answers 404, which ends the wait as well.
pub(crate) async fn wait_removed(docker: &Docker, id: &str) {
    use futures_util::StreamExt;
    let removed = bollard::query_parameters::WaitContainerOptionsBuilder::new()
        .condition("removed")
        .build();
    let mut removal = docker.wait_container(id, Some(removed));
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), removal.next()).await;
}

/// Force-removes a container; a container already gone (404) or already being removed by
/// `AutoRemove` (409) is not an error.
pub(crate) async fn remove_quietly(docker: &Docker, id: &str) -> Result<(), BollardError> {
    let options = bollard::query_parameters::RemoveContainerOptionsBuilder::new()
        .force(true)
        .build();
    match docker.remove_container(id, Some(options)).await {
        Ok(()) => Ok(()),
        Err(error) if is_not_found(&error) || status(&error) == Some(409) => Ok(()),
        Err(error) => Err(error),
    }
}

/// How many removals `agentc rm` runs at once on a daemon of Engine API 1.42 or later: enough
/// to overlap the daemon's work, few enough to spare it a storm of simultaneous exits.
pub const REMOVE_JOBS: usize = 8;

/// How many removals run at once on an older daemon (API below 1.42, Docker 20.10 and before):
/// one, because concurrent removals of containers on one network can deadlock its network
/// controller for good (moby/moby#42545, fixed in Docker 23), which hangs every later request.
pub const REMOVE_JOBS_OLD_DAEMON: usize = 1;

/// The removals `agentc rm` runs at once on this connection's daemon.
pub(crate) fn remove_jobs(docker: &Docker) -> usize {
    let version = docker.client_version();
    if (version.major_version, version.minor_version) >= (1, 42) {
        REMOVE_JOBS
    } else {
        REMOVE_JOBS_OLD_DAEMON
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_host_names_the_socket() {
        assert_eq!(unix_socket(None), Some(DEFAULT_SOCKET));
        assert_eq!(
            unix_socket(Some("unix:///run/user/1000/docker.sock")),
            Some("/run/user/1000/docker.sock")
        );
        assert_eq!(unix_socket(Some("tcp://127.0.0.1:2375")), None);
        assert_eq!(unix_socket(Some("ssh://me@host")), None);
    }

    #[test]
    fn api_versions_parse() {
        let version = parse_version("1.41").unwrap();
        assert_eq!((version.major_version, version.minor_version), (1, 41));
        assert!(parse_version("1").is_none());
        assert!(parse_version("one.two").is_none());
        assert!(&parse_version("1.41").unwrap() < API_DEFAULT_VERSION);
    }

    #[test]
    fn wait_paths_name_their_container() {
        assert_eq!(wait_target("/containers/abc/wait").as_deref(), Some("abc"));
        assert_eq!(
            wait_target("/v1.41/containers/abc/wait").as_deref(),
            Some("abc")
        );
        assert_eq!(wait_target("/containers/abc/start"), None);
        assert_eq!(wait_target("/containers//wait"), None);
    }

    #[test]
    fn a_confirmed_wait_resolves_its_receiver_only() {
        let waits = Waits::default();
        let mut first = waits.registered("confirm-test-1");
        let mut second = waits.registered("confirm-test-2");
        waits.confirm("confirm-test-1");
        assert_eq!(first.try_recv(), Ok(()));
        assert!(second.try_recv().is_err());
    }

    #[test]
    fn socket_paths_become_hex_hosts() {
        assert_eq!(hex("/a.sock"), "2f612e736f636b");
    }
}
