//! The named volumes a launch mounts, created before it over the
//! [engine port](crate::port), written once for both backends.

use std::collections::BTreeMap;

use agentc_policy::{ContainerSpec, MountSource, LABEL_PROFILE};

use crate::port::EnginePort;
use crate::ExecError;

/// Creates each named volume the launch mounts that does not exist yet, labelled with the
/// launch's profile (`io.agentc.profile=PROFILE`), so that `agentc ps --volumes` lists it and
/// `agentc rm --volumes` removes it (the engine would create it unlabelled). Existing volumes
/// are left as they are; the egress proxy's CA volume is its companion's, made with the
/// companion's labels.
pub async fn ensure_volumes<P: EnginePort>(
    port: &P,
    spec: &ContainerSpec,
) -> Result<(), ExecError> {
    let Some(profile) = spec.labels.get(LABEL_PROFILE) else {
        return Ok(());
    };
    let ca_volume = spec
        .egress
        .as_ref()
        .and_then(|egress| crate::companion::prepare::ca_volume(egress));
    for mount in &spec.mounts {
        let MountSource::Volume { name, .. } = &mount.source else {
            continue;
        };
        if ca_volume.as_ref() == Some(name) {
            continue;
        }
        if port
            .volume_exists(name)
            .await
            .map_err(|error| error.at("inspect a volume"))?
        {
            continue;
        }
        log::debug!("creating volume {name} labelled {LABEL_PROFILE}={profile}");
        let labels = BTreeMap::from([(LABEL_PROFILE.to_string(), profile.clone())]);
        port.create_volume(name, &labels)
            .await
            .map_err(|error| error.at("create a volume"))?;
    }
    Ok(())
}

/// The volume a container had for itself alone (its [`agentc_policy::LABEL_OWN_VOLUME`]
/// label: a restored or forked sandbox's own home), read from its `labels`.
pub fn own_volume(labels: &BTreeMap<String, String>) -> Option<&str> {
    labels
        .get(agentc_policy::LABEL_OWN_VOLUME)
        .map(String::as_str)
        .filter(|volume| !volume.is_empty())
}

/// Removes the volume a removed container had for itself alone ([`own_volume`]); its name
/// when it was there. One another container still mounts is the engine's conflict.
pub async fn remove_own_volume<P: EnginePort>(
    port: &P,
    labels: &BTreeMap<String, String>,
) -> Result<Option<String>, ExecError> {
    let Some(volume) = own_volume(labels) else {
        return Ok(None);
    };
    match port.remove_volume(volume).await {
        Ok(()) => Ok(Some(volume.to_string())),
        Err(error) if error.is_not_found() => Ok(None),
        Err(error) => Err(error.at("remove the sandbox's own volume")),
    }
}
