//! `agentc serve`'s `snapshot`, `restore` and `fork`: `agentc snapshot`'s own
//! `take` (`commands::snapshot`), and a restore as a session: the snapshot's
//! profile resolved as a session's launch with the snapshot's image, the library's
//! [`prepare`](snapshot::prepare), the create, then [`put_back`](snapshot::put_back); a failed
//! put-back deletes the new sandbox and the volumes its launch created.

use std::collections::BTreeMap;

use agentc_engine::session::{session_name, Sandbox, SandboxClient, SessionPort};
use agentc_engine::snapshot;
use agentc_policy::{Instance, Start};

use super::common::{failure, invalid, sandbox_name, sandbox_ref, session, session_error};
use super::protocol::*;
use super::{Server, Session};
use agentc_host::snapshots::{archive_dir, snapshot_failure, snapshot_profile, take};
use agentc_host::{container_of as container, LaunchRequest};

/// `snapshot`: the sandbox's writable layer, tmpfs mounts and volumes, as `agentc snapshot`.
pub async fn take_snapshot<P: SessionPort>(
    server: &Server<'_, P>,
    params: SnapshotParams,
) -> Result<SnapshotOut, RpcError> {
    let session = session(server, &params.sandbox).await?;
    let taken = take(server.client(), &session.sandbox, params.tag, false, false)
        .await
        .map_err(failure)?;
    Ok(SnapshotOut {
        snapshot: taken.report.name,
    })
}

/// `restore`: a new session sandbox from a snapshot.
pub async fn restore<P: SessionPort>(
    server: &Server<'_, P>,
    params: RestoreParams,
) -> Result<Restored, RpcError> {
    let sandbox = restore_one(server, &params.snapshot, params.keep, &params.env).await?;
    Ok(Restored {
        sandbox: sandbox_ref(&sandbox),
    })
}

/// `fork`: a snapshot of the sandbox, then `count` new sandboxes from it.
pub async fn fork<P: SessionPort>(
    server: &Server<'_, P>,
    params: ForkParams,
) -> Result<Forked, RpcError> {
    if params.count == 0 || params.count > 64 {
        return Err(invalid(
            format!("fork count {} is not between 1 and 64", params.count),
            "ask for 1 to 64 forks",
        ));
    }
    let parent = session(server, &params.sandbox).await?;
    let taken = take(server.client(), &parent.sandbox, params.tag, false, false)
        .await
        .map_err(failure)?;
    let env = if params.env.is_empty() {
        parent.env.clone()
    } else {
        params.env.clone()
    };
    let mut sandboxes = Vec::new();
    for _ in 0..params.count {
        let made = restore_one(server, &taken.report.name, params.keep, &env).await;
        match made {
            Ok(sandbox) => sandboxes.push(sandbox),
            Err(error) => {
                // Nothing half-forked: the forks made so far go too.
                for sandbox in &sandboxes {
                    server.client().delete(sandbox).await;
                    server.remove_session(&sandbox.name);
                }
                return Err(error);
            }
        }
    }
    Ok(Forked {
        snapshot: taken.report.name,
        sandboxes: sandboxes.iter().map(sandbox_ref).collect(),
    })
}

/// A snapshot error as agentc's JSON-RPC error, with `agentc snapshot`'s exit status.
fn snapshot_error(error: snapshot::SnapshotError) -> RpcError {
    failure(snapshot_failure(error))
}

/// One restored sandbox, recorded as a session.
async fn restore_one<P: SessionPort>(
    server: &Server<'_, P>,
    name: &str,
    keep: bool,
    env: &BTreeMap<String, String>,
) -> Result<Sandbox, RpcError> {
    let client = server.client();
    let record = snapshot::find(client, name).await.map_err(snapshot_error)?;
    let (file, loaded) = snapshot_profile(&record).map_err(failure)?;
    let dir = archive_dir(&record.reference).map_err(failure)?;
    let asked = LaunchRequest {
        image: Some(record.reference.clone()),
        ..LaunchRequest::new(&file)
    };
    let instance = Instance {
        start: Start::Session,
        default_name: Some(session_name(&record.profile)),
        name: Some(sandbox_name(&record.profile)),
        copy: None,
        stdin_is_terminal: false,
        profile_record: agentc_host::profile_record(&file),
        // Each restored or forked session diverges on its own, its home included.
        own_home: true,
        floor: None,
    };
    let spec = agentc_host::resolve_instance(&loaded, &asked, instance).map_err(failure)?;
    let launch = container(&spec).map_err(failure)?;
    let plan = snapshot::prepare(client, &record, &dir, launch)
        .await
        .map_err(snapshot_error)?;
    let sandbox = client.create(&spec).await.map_err(session_error)?;
    match snapshot::put_back(client, &sandbox, &record, &dir, launch, &plan).await {
        Ok(report) => {
            for kept in report.kept {
                log::info!("restore of {}: {kept}", sandbox.name);
            }
            server.add_session(Session {
                sandbox: sandbox.clone(),
                keep,
                env: env.clone(),
                runner: true,
            });
            Ok(sandbox)
        }
        Err(error) => {
            client.delete(&sandbox).await;
            let volumes: Vec<String> = plan.fresh_volumes.iter().cloned().collect();
            if let Err(left) =
                agentc_engine::admin::remove_volumes(client.port(), &volumes, true).await
            {
                log::warn!("could not remove the volumes of {}: {left}", sandbox.name);
            }
            Err(snapshot_error(error))
        }
    }
}
