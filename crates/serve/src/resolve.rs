//! How `agentc serve` makes a launch of a request's profile: read from a file or given as
//! text, the request's mounts and published ports added to it before it is checked and
//! resolved (per-invocation inputs of `resolve`: nothing edits the spec afterwards), resolved
//! as a session's launch with a name of its own; and `verify`, the probe of such a launch.

use std::path::{Path, PathBuf};

use agentc_engine::session::{session_name, SessionPort};
use agentc_policy::profile::{MountConfig, MountType};
use agentc_policy::{Instance, LaunchSpec, LoadedProfile, PortSpec, Protocol, Start};

use super::common::{failure, sandbox_name};
use super::protocol::{CheckOut, MountParam, RpcError, Verified, VerifyParams};
use super::Server;
use agentc_host::{Failure, EXIT_INVALID, EXIT_NO_INPUT, EXIT_USAGE};

/// The launch a request asks for (`create`, `verify`).
pub struct LaunchRequest<'a> {
    /// A profile file.
    pub profile: Option<&'a Path>,
    /// The profile's TOML text.
    pub profile_text: Option<&'a str>,
    /// Where the text's relative paths lead.
    pub profile_dir: Option<&'a Path>,
    /// The container's name.
    pub name: Option<&'a str>,
    /// The image instead of the profile's.
    pub image: Option<&'a str>,
    /// The host workspace directory.
    pub workspace: Option<&'a Path>,
    /// More `[[mounts]]`.
    pub mounts: &'a [MountParam],
    /// More published TCP ports.
    pub publish: &'a [u16],
}

/// Where a request's profile was read from.
enum Origin {
    /// A profile file.
    File(PathBuf),
    /// TOML text, its relative paths leading from this directory.
    Text(PathBuf),
}

fn invalid(message: String, hint: &str) -> RpcError {
    failure(Failure::new(EXIT_INVALID, message).hinted(hint))
}

/// The profile of a request, loaded, and where from.
fn load(request: &LaunchRequest<'_>) -> Result<(LoadedProfile, Origin), RpcError> {
    match (request.profile, request.profile_text) {
        (Some(path), None) => Ok((
            agentc_host::load_profile(path).map_err(failure)?,
            Origin::File(path.to_path_buf()),
        )),
        (None, Some(text)) => {
            let dir = match request.profile_dir {
                Some(dir) => dir.to_path_buf(),
                None => std::env::current_dir().map_err(|error| {
                    failure(Failure::new(
                        EXIT_NO_INPUT,
                        format!("cannot read the working directory: {error}"),
                    ))
                })?,
            };
            let dir = std::fs::canonicalize(&dir).map_err(|error| {
                failure(
                    Failure::new(
                        EXIT_NO_INPUT,
                        format!("profile_dir {}: {error}", dir.display()),
                    )
                    .hinted("give an existing directory"),
                )
            })?;
            let loaded = agentc_policy::load("profile_text", text)
                .map_err(|errors| failure(Failure::invalid_profile(errors)))?;
            Ok((loaded, Origin::Text(dir)))
        }
        _ => Err(invalid(
            "a launch needs exactly one of profile (a path) and profile_text".to_string(),
            "give the profile file's path, or its TOML text",
        )),
    }
}

/// Adds the request's mounts and published ports to the profile, checked by its rules.
fn amend(loaded: &mut LoadedProfile, request: &LaunchRequest<'_>) -> Result<(), RpcError> {
    if request.mounts.is_empty() && request.publish.is_empty() {
        return Ok(());
    }
    for mount in request.mounts {
        loaded.profile.mounts.push(MountConfig {
            kind: MountType::Bind,
            source: mount.source.clone(),
            target: mount.target.clone(),
            read_only: mount.read_only,
            on_conflict: Default::default(),
        });
    }
    for &number in request.publish {
        // A port the profile publishes already counts once.
        let published = loaded.profile.network.publish.iter().any(|port| {
            port.number == number && port.protocol == Protocol::Tcp && port.host_port.is_none()
        });
        if published {
            continue;
        }
        loaded.profile.network.publish.push(PortSpec {
            number,
            protocol: Protocol::Tcp,
            host_ip: None,
            host_port: None,
        });
    }
    agentc_policy::validate(loaded).map_err(|errors| {
        // One error's hint stays a field (`data.hint`); several keep theirs in the message.
        let invalid = Failure::invalid_profile(errors);
        failure(Failure {
            code: EXIT_INVALID,
            message: format!(
                "the profile with the request's mounts and publish is invalid:\n{}",
                invalid.message
            ),
            hint: invalid.hint,
        })
    })
}

/// The request's profile resolved as a session's launch: in the background, kept until
/// deleted, without stdin, named as asked or `PROFILE-sPID-N`.
pub fn session_launch(
    request: &LaunchRequest<'_>,
) -> Result<(LoadedProfile, LaunchSpec), RpcError> {
    let (mut loaded, origin) = load(request)?;
    amend(&mut loaded, request)?;
    let asked = agentc_host::LaunchRequest {
        workspace: request.workspace.map(Path::to_path_buf),
        image: request.image.map(str::to_string),
        ..agentc_host::LaunchRequest::new(match &origin {
            Origin::File(path) => path.clone(),
            Origin::Text(dir) => dir.join("profile_text"),
        })
    };
    let profile = loaded.profile.name.clone();
    let instance = Instance {
        start: Start::Session,
        default_name: Some(session_name(&profile)),
        // A custom sandbox would keep its profile's one name: each session gets its own.
        name: Some(
            request
                .name
                .map(str::to_string)
                .unwrap_or_else(|| sandbox_name(&profile)),
        ),
        copy: None,
        stdin_is_terminal: false,
        profile_record: request.profile.and_then(agentc_host::profile_record),
        own_home: false,
        floor: None,
    };
    let inputs = match origin {
        Origin::File(_) => agentc_host::launch_inputs(&loaded, &asked, instance),
        Origin::Text(dir) => agentc_host::launch_inputs_in(&loaded, &asked, instance, dir),
    }
    .map_err(failure)?;
    let spec = agentc_host::resolve_inputs(&loaded, &inputs).map_err(failure)?;
    Ok((loaded, spec))
}

/// `verify`: the launch's probe over the server's engine port and the comparison with what
/// the kernel reports, as `agentc verify` makes them.
pub async fn verify<P: SessionPort>(
    server: &Server<'_, P>,
    params: VerifyParams,
) -> Result<Verified, RpcError> {
    let egress_probe = match params.egress_probe.as_deref() {
        None => agentc_verify::EgressProbe::Profile,
        Some(text) => text
            .parse()
            .map_err(|error| failure(Failure::new(EXIT_USAGE, format!("egress_probe {error}"))))?,
    };
    let (_, spec) = session_launch(&LaunchRequest {
        profile: params.profile.as_deref(),
        profile_text: params.profile_text.as_deref(),
        profile_dir: params.profile_dir.as_deref(),
        name: None,
        image: params.image.as_deref(),
        workspace: params.workspace.as_deref(),
        mounts: &params.mounts,
        publish: &params.publish,
    })?;
    // The secrets the probe's launch reads are the client's, as `create`'s are.
    let inputs = agentc_verify::VerifyInputs {
        egress_probe: &egress_probe,
        ..agentc_verify::VerifyInputs::new(server.client().env(), &server.proxy)
    };
    let checks = agentc_verify::verify_on(server.client().port(), &spec, &inputs)
        .await
        .map_err(|error| failure(agentc_host::backend::verify_failure(error)))?;
    Ok(Verified {
        profile: spec.profile.clone(),
        passed: checks.iter().all(|check| check.ok),
        checks: checks
            .iter()
            .map(|check| CheckOut {
                check: check.what.clone(),
                status: check.status().to_string(),
                expected: check.expected.clone(),
                seen: check.seen.clone(),
                hint: check.shown_hint().map(str::to_string),
            })
            .collect(),
    })
}
