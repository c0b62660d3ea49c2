//! Warm pools (issue 22), the pure part: the pool key, a member's name and labels, the
//! member's launch made from the launch `agentc run --detach` resolves, and why a launch
//! cannot be served warm.
//!
//! A member is the profile's detached launch, hardened as `run` would make it (its egress
//! companion included, moved to an isolated network and proxy of its own,
//! [`ContainerSpec::egress_for`]), with two differences only, both made by [`member_spec`]
//! after `resolve` (the spec digest is the run's): its process is [`IDLE_SCRIPT`], not the
//! launch's command, which runs through exec at claim; and the variables the launch passes
//! by name from the caller's environment ([`EnvValue::Secret`]) are left out, so that no
//! value read at fill reaches a later claim (the claim passes them to its exec).

use sha2::{Digest, Sha256};

use crate::spec::{Action, ContainerSpec, EnvValue, LaunchSpec, MountSource};

/// Label holding a member's pool key ([`pool_key`]).
pub const LABEL_POOL: &str = "io.agentc.pool";
/// Label holding a member's state at fill: always [`POOL_STATE_IDLE`]. Labels cannot change
/// on a running container: a claimed member is one whose name no longer starts with
/// [`MEMBER_PREFIX`] (the rename to [`claimed_name`] is the claim).
pub const LABEL_POOL_STATE: &str = "io.agentc.pool-state";
/// Label holding the name a member had at fill, which its egress companion's
/// `io.agentc.egress-for` names; `agentc rm` of the claimed container removes that set too.
pub const LABEL_POOL_MEMBER: &str = "io.agentc.pool-member";
/// The value of [`LABEL_POOL_STATE`] at fill.
pub const POOL_STATE_IDLE: &str = "idle";
/// How every idle member's name starts: `agentc-pool-PROFILE-RANDOM`.
pub const MEMBER_PREFIX: &str = "agentc-pool-";
/// What a member runs until its claim: a shell that sleeps, ends on SIGTERM or SIGINT and
/// runs nothing of the launch. The image needs `sh` and `sleep`.
pub const IDLE_SCRIPT: &str =
    "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $! || exit 0; done";
/// What the pool key's digest starts with; a new version is a new key for every pool.
const KEY_VERSION: &str = "agentc-pool/1";

/// The pool key: hex sha256 of the launch's spec digest (the launch without the claim's
/// arguments, [`crate::digest`]: the same for every instance), the image's ID (a rebuilt or
/// re-pulled tag is a new key) and the runtime chosen for it (`runc` when none is).
pub fn pool_key(spec_digest: &str, image_id: &str, runtime: Option<&str>) -> String {
    let mut hasher = Sha256::new();
    for part in [
        KEY_VERSION,
        spec_digest,
        image_id,
        runtime.unwrap_or("default"),
    ] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A member's name: `agentc-pool-PROFILE-RANDOM`.
pub fn member_name(profile: &str, random: &str) -> String {
    format!("{MEMBER_PREFIX}{profile}-{random}")
}

/// The name a claim renames the member `member` to: `agentc-claim-PROFILE-RANDOM`, the
/// member's own suffix, so that every claim of one member asks for one name and the daemon
/// lets only the first have it (a rename to a name taken, or of a name gone, fails).
pub fn claimed_name(member: &str) -> String {
    match member.strip_prefix(MEMBER_PREFIX) {
        Some(rest) => format!("agentc-claim-{rest}"),
        None => format!("{member}-claimed"),
    }
}

/// Whether a container name is an idle member's (a claimed one was renamed).
pub fn is_idle_name(name: &str) -> bool {
    name.trim_start_matches('/').starts_with(MEMBER_PREFIX)
}

/// Why `spec` cannot be served from a pool, when it cannot: a per-claim input the pool
/// cannot deliver after start. Docker cannot add a bind mount to a running container, so a
/// launch that binds the host workspace starts cold.
pub fn cold_reason(spec: &LaunchSpec) -> Option<String> {
    let Action::Container(container) = &spec.action else {
        return Some("the launch builds an image".to_string());
    };
    let workspace = container.mounts.iter().find(|mount| {
        matches!(mount.source, MountSource::Bind { .. })
            && mount
                .target
                .strip_prefix(crate::presets::WORKSPACE_ROOT)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    if let Some(mount) = workspace {
        return Some(format!(
            "the profile binds a host workspace at {} (set [workspace] mount = false to pool it)",
            mount.target
        ));
    }
    if container.ports.iter().any(|port| port.host_port.is_some())
        || container
            .egress
            .iter()
            .flat_map(|egress| &egress.proxy.ports)
            .any(|port| port.host_port.is_some())
    {
        return Some(
            "the profile publishes on a fixed host port, which only one member can hold"
                .to_string(),
        );
    }
    None
}

/// The variables of `container` passed by name from the caller's environment: what a
/// member leaves out and a claim passes to its exec.
pub fn claim_secrets(container: &ContainerSpec) -> Vec<crate::spec::EnvVar> {
    container
        .env
        .iter()
        .filter(|var| matches!(var.value, EnvValue::Secret { .. }))
        .cloned()
        .collect()
}

/// The member's launch made from `spec`, the launch `agentc run --detach` resolves (in the
/// background, kept): named `name` (its egress companion moved to a set of its own, suffixed
/// `suffix`), labelled with `key`, [`POOL_STATE_IDLE`] and its name, running
/// [`IDLE_SCRIPT`] instead of the launch's command, without the variables passed by name
/// ([`claim_secrets`]). Refused for a launch that is not in the background, or that
/// [`cold_reason`] keeps cold.
pub fn member_spec(
    spec: &LaunchSpec,
    key: &str,
    name: &str,
    suffix: &str,
) -> Result<LaunchSpec, String> {
    if let Some(reason) = cold_reason(spec) {
        return Err(reason);
    }
    let mut member = spec.clone();
    let Action::Container(container) = &mut member.action else {
        return Err("the launch builds an image".to_string());
    };
    if !container.detach || container.auto_remove {
        return Err("a member starts in the background and is kept".to_string());
    }
    container.egress_for(name, suffix);
    container.name = Some(name.to_string());
    container.entrypoint = Some("sh".to_string());
    container.command = vec!["-c".to_string(), IDLE_SCRIPT.to_string()];
    container
        .env
        .retain(|var| !matches!(var.value, EnvValue::Secret { .. }));
    for (label, value) in [
        (LABEL_POOL, key),
        (LABEL_POOL_STATE, POOL_STATE_IDLE),
        (LABEL_POOL_MEMBER, name),
    ] {
        container
            .labels
            .insert(label.to_string(), value.to_string());
    }
    Ok(member)
}

/// The command a claim runs through exec in `container` (the claim's launch): its
/// entrypoint and command as docker would run them, the image's `Entrypoint` and `Cmd`
/// (`image_entrypoint`, `image_cmd`) where the launch keeps them (an entrypoint of the launch
/// drops the image's `Cmd`, as docker does). Empty when there is nothing to run.
pub fn claim_command(
    container: &ContainerSpec,
    image_entrypoint: &[String],
    image_cmd: &[String],
) -> Vec<String> {
    let entrypoint: Vec<String> = match &container.entrypoint {
        Some(entrypoint) => vec![entrypoint.clone()],
        None => image_entrypoint.to_vec(),
    };
    let command: Vec<String> = if !container.command.is_empty() {
        container.command.clone()
    } else if container.entrypoint.is_some() {
        Vec::new()
    } else {
        image_cmd.to_vec()
    };
    entrypoint.into_iter().chain(command).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{EnvVar, LaunchKind, Mount};

    fn spec(container: ContainerSpec) -> LaunchSpec {
        LaunchSpec {
            kind: LaunchKind::Sandbox,
            profile: "p".into(),
            action: Action::Container(Box::new(container)),
            origins: Default::default(),
        }
    }

    #[test]
    fn the_key_changes_with_the_digest_the_image_and_the_runtime() {
        let key = pool_key("d1", "sha256:a", None);
        assert_eq!(key.len(), 64);
        assert_eq!(key, pool_key("d1", "sha256:a", None));
        for other in [
            pool_key("d2", "sha256:a", None),
            pool_key("d1", "sha256:b", None),
            pool_key("d1", "sha256:a", Some("runsc")),
        ] {
            assert_ne!(key, other);
        }
    }

    #[test]
    fn a_member_idles_without_secrets_and_is_labelled() {
        let mut container = ContainerSpec::empty("img:1");
        container.detach = true;
        container.name = Some("agentc-sandbox-u-p".into());
        container.command = vec!["serve".into()];
        container.env = vec![
            EnvVar {
                name: "TOKEN".into(),
                value: EnvValue::Secret { required: true },
            },
            EnvVar {
                name: "MODE".into(),
                value: EnvValue::Literal { value: "x".into() },
            },
        ];
        let member = member_spec(&spec(container.clone()), "k", "agentc-pool-p-ab", "ab").unwrap();
        let Action::Container(member) = &member.action else {
            panic!()
        };
        assert_eq!(member.name.as_deref(), Some("agentc-pool-p-ab"));
        assert_eq!(member.command[1], IDLE_SCRIPT);
        assert_eq!(member.env.len(), 1);
        assert_eq!(member.labels[LABEL_POOL], "k");
        assert_eq!(member.labels[LABEL_POOL_STATE], "idle");
        assert!(is_idle_name(member.name.as_deref().unwrap()));
        assert_eq!(claimed_name("agentc-pool-p-ab"), "agentc-claim-p-ab");
        assert!(!is_idle_name(&claimed_name("agentc-pool-p-ab")));
        assert_eq!(claim_secrets(&container).len(), 1);
        assert_eq!(
            claim_command(&container, &["/ep".into()], &["c".into()]),
            ["/ep", "serve"]
        );
        container.command.clear();
        assert_eq!(
            claim_command(&container, &["/ep".into()], &["c".into()]),
            ["/ep", "c"]
        );
        container.entrypoint = Some("/own".into());
        assert_eq!(
            claim_command(&container, &["/ep".into()], &["c".into()]),
            ["/own"]
        );
    }

    #[test]
    fn a_workspace_bind_or_an_attached_launch_is_no_member() {
        let mut container = ContainerSpec::empty("img:1");
        container.detach = true;
        container.name = Some("n".into());
        container.mounts.push(Mount {
            source: MountSource::Bind {
                path: "/home/u/app".into(),
            },
            target: "/workspace/app".into(),
            read_only: false,
        });
        let reason = cold_reason(&spec(container.clone())).unwrap();
        assert!(reason.contains("host workspace"), "{reason}");
        container.mounts.clear();
        assert_eq!(cold_reason(&spec(container.clone())), None);
        container.detach = false;
        assert!(member_spec(&spec(container), "k", "m", "s").is_err());
    }
}
