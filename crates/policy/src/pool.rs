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
//!
//! The keys its egress proxy holds ([`crate::EgressSpec::credentials`]) are read at fill,
//! from the filler's environment: each member is labelled with a keyed fingerprint of each
//! binding's value ([`credential_fingerprints`], never the value nor a plain hash of it), and a
//! claim takes only a member whose fingerprints are those of the claimer's own environment
//! ([`changed_credentials`]), so that no claim gets a proxy holding another user's key, or a
//! key rotated since.

use std::collections::BTreeMap;

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
/// What the label holding a member's fingerprint of one credential binding's value starts
/// with: `io.agentc.pool-credential.NAME` ([`credential_fingerprints`]).
pub const LABEL_POOL_CREDENTIAL: &str = "io.agentc.pool-credential.";
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

/// HMAC-SHA256 (RFC 2104) of `message` under `key`.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// The labels of a member of `container` (the launch at fill) that fingerprint the keys its
/// egress proxy holds: for each credential binding, `io.agentc.pool-credential.NAME` =
/// hex HMAC-SHA256 under `secret` (the user's own random key, never in a label) of the
/// binding's name, variables and their values as the proxy reads them (the values the
/// profile holds, else `env`; an unset variable fingerprints as unset). Empty without a
/// binding. Equal labels mean equal keys for the same user; they say nothing of a value to
/// whoever lacks `secret`.
pub fn credential_fingerprints(
    container: &ContainerSpec,
    env: &BTreeMap<String, String>,
    secret: &[u8],
) -> BTreeMap<String, String> {
    let Some(egress) = &container.egress else {
        return BTreeMap::new();
    };
    let env = egress.proxy.held_secrets.over(env);
    egress
        .credentials
        .iter()
        .map(|binding| {
            let mut message = b"agentc-pool-credential/1\0".to_vec();
            message.extend_from_slice(binding.name.as_bytes());
            for variable in std::iter::once(&binding.variable).chain(&binding.user_variable) {
                message.push(0);
                message.extend_from_slice(variable.as_bytes());
                match env.get(variable) {
                    Some(value) => {
                        message.push(b'=');
                        message.extend_from_slice(value.as_bytes());
                    }
                    None => message.push(b'!'),
                }
            }
            let mac = hmac_sha256(secret, &message);
            (
                format!("{LABEL_POOL_CREDENTIAL}{}", binding.name),
                mac.iter().map(|byte| format!("{byte:02x}")).collect(),
            )
        })
        .collect()
}

/// The credential bindings (by name) whose fingerprint in a member's `labels` is not the one
/// `wanted` ([`credential_fingerprints`] of the claimer's environment): the member's proxy
/// holds another key for them (another user's, a key rotated since the fill), or binds a key
/// the claim does not, or lacks one it does. Empty when the member fits.
pub fn changed_credentials(
    wanted: &BTreeMap<String, String>,
    labels: &BTreeMap<String, String>,
) -> Vec<String> {
    let held = labels
        .iter()
        .filter(|(label, _)| label.starts_with(LABEL_POOL_CREDENTIAL));
    let mut changed: Vec<String> = wanted
        .iter()
        .filter(|(label, value)| labels.get(*label) != Some(value))
        .chain(held.filter(|(label, _)| !wanted.contains_key(*label)))
        .map(|(label, _)| label[LABEL_POOL_CREDENTIAL.len()..].to_string())
        .collect();
    changed.sort();
    changed.dedup();
    changed
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
/// `suffix`), labelled with `key`, [`POOL_STATE_IDLE`], its name and `credentials` (the
/// fingerprints of the keys its proxy reads at fill, [`credential_fingerprints`]), running
/// [`IDLE_SCRIPT`] instead of the launch's command, without the variables passed by name
/// ([`claim_secrets`]). Refused for a launch that is not in the background, that
/// [`cold_reason`] keeps cold, or whose names behind the egress proxy (the member's and its
/// [`claimed_name`]) are no DNS labels ([`crate::dns_label_problem`]).
pub fn member_spec(
    spec: &LaunchSpec,
    key: &str,
    name: &str,
    suffix: &str,
    credentials: &BTreeMap<String, String>,
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
    let mut claimed = container.clone();
    claimed.name = Some(claimed_name(name));
    let problem = crate::instance::dns_label_problem(container)
        .or_else(|| crate::instance::dns_label_problem(&claimed));
    if let Some(problem) = problem {
        return Err(format!(
            "{problem}: the egress proxy finds its pool member by name through the engine's \
             DNS, where a name must be one label (shorten the profile's name)"
        ));
    }
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
    for (label, fingerprint) in credentials {
        container.labels.insert(label.clone(), fingerprint.clone());
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
        let member = member_spec(
            &spec(container.clone()),
            "k",
            "agentc-pool-p-ab",
            "ab",
            &BTreeMap::from([(format!("{LABEL_POOL_CREDENTIAL}api"), "f1".to_string())]),
        )
        .unwrap();
        let Action::Container(member) = &member.action else {
            panic!()
        };
        assert_eq!(member.name.as_deref(), Some("agentc-pool-p-ab"));
        assert_eq!(member.command[1], IDLE_SCRIPT);
        assert_eq!(member.env.len(), 1);
        assert_eq!(member.labels[LABEL_POOL], "k");
        assert_eq!(member.labels[LABEL_POOL_STATE], "idle");
        assert_eq!(member.labels["io.agentc.pool-credential.api"], "f1");
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

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    #[test]
    fn hmac_sha256_meets_rfc_4231() {
        // Test cases 1, 2 and 6 (a key longer than the block).
        assert_eq!(
            hex(&hmac_sha256(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    fn with_binding(user: bool) -> ContainerSpec {
        let mut container = ContainerSpec::empty("img:1");
        container.egress = Some(Box::new(crate::EgressSpec {
            network: crate::spec::IsolatedNetwork {
                name: "n".into(),
                subnet: "10.213.0.0/28".into(),
                internal: true,
                options: Default::default(),
                labels: Default::default(),
            },
            outside: crate::spec::Network::Default,
            proxy: Box::new(ContainerSpec::empty("agentc-egress")),
            proxy_address: "10.213.0.2".parse().unwrap(),
            credentials: vec![crate::spec::CredentialSpec {
                name: "api".into(),
                variable: "API_KEY".into(),
                user_variable: user.then(|| "API_USER".to_string()),
                hosts: vec!["api.test".into()],
                header: "x-api-key".into(),
                scheme: None,
            }],
        }));
        container
    }

    #[test]
    fn a_member_behind_the_egress_proxy_needs_names_that_are_dns_labels() {
        let mut container = with_binding(false);
        container.detach = true;
        container.name = Some("n".into());
        let suffix = "0123456789abcdef";
        let fits = member_name(&"p".repeat(33), suffix);
        assert_eq!(fits.len(), 62);
        assert!(member_spec(
            &spec(container.clone()),
            "k",
            &fits,
            suffix,
            &BTreeMap::new()
        )
        .is_ok());
        // A profile name of 40 characters makes a member name of 69 (and a claimed one of 70).
        let long = member_name(&"p".repeat(40), suffix);
        let error = member_spec(
            &spec(container.clone()),
            "k",
            &long,
            suffix,
            &BTreeMap::new(),
        )
        .expect_err("refused");
        assert!(error.contains("more than a DNS label's 63"), "{error}");
        assert!(error.contains("shorten the profile's name"), "{error}");
        // A member name of 63 whose claimed name is 64.
        let edge = member_name(&"p".repeat(63 - 29), suffix);
        assert_eq!(edge.len(), 63);
        let error = member_spec(
            &spec(container.clone()),
            "k",
            &edge,
            suffix,
            &BTreeMap::new(),
        )
        .expect_err("the claimed name is 64");
        assert!(error.contains("agentc-claim-"), "{error}");
        // Without the egress proxy nothing looks the name up.
        container.egress = None;
        assert!(member_spec(&spec(container), "k", &long, suffix, &BTreeMap::new()).is_ok());
    }

    #[test]
    fn a_fingerprint_changes_with_the_value_and_the_secret_and_shows_neither() {
        let env = |key: &str| BTreeMap::from([("API_KEY".to_string(), key.to_string())]);
        let container = with_binding(false);
        let prints = credential_fingerprints(&container, &env("sk-one"), b"secret-1");
        let label = "io.agentc.pool-credential.api";
        assert_eq!(prints.keys().collect::<Vec<_>>(), [label]);
        let print = &prints[label];
        assert_eq!(print.len(), 64);
        assert!(!print.contains("sk-one"));
        assert_ne!(*print, hex(&Sha256::digest(b"sk-one")));
        assert_eq!(
            prints,
            credential_fingerprints(&container, &env("sk-one"), b"secret-1")
        );
        let unset = credential_fingerprints(&container, &BTreeMap::new(), b"secret-1");
        let empty = credential_fingerprints(&container, &env(""), b"secret-1");
        for other in [
            credential_fingerprints(&container, &env("sk-two"), b"secret-1"),
            credential_fingerprints(&container, &env("sk-one"), b"secret-2"),
            credential_fingerprints(&with_binding(true), &env("sk-one"), b"secret-1"),
            unset.clone(),
            empty.clone(),
        ] {
            assert_ne!(prints[label], other[label]);
        }
        assert_ne!(unset, empty);
        // The value the profile holds for the proxy counts before the environment's.
        let mut held = container.clone();
        let proxy = &mut held.egress.as_mut().unwrap().proxy;
        proxy.held_secrets.insert("API_KEY", "sk-held".into());
        assert_eq!(
            credential_fingerprints(&held, &env("sk-one"), b"secret-1"),
            credential_fingerprints(&container, &env("sk-held"), b"secret-1")
        );
        assert!(credential_fingerprints(&ContainerSpec::empty("i"), &env("x"), b"s").is_empty());
    }

    #[test]
    fn a_member_fits_only_with_the_claimers_fingerprints() {
        let label = |name: &str| format!("{LABEL_POOL_CREDENTIAL}{name}");
        let wanted = BTreeMap::from([(label("api"), "aa".to_string())]);
        let mut labels = BTreeMap::from([
            (LABEL_POOL.to_string(), "k".to_string()),
            (label("api"), "aa".to_string()),
        ]);
        assert!(changed_credentials(&wanted, &labels).is_empty());
        labels.insert(label("api"), "bb".into());
        assert_eq!(changed_credentials(&wanted, &labels), ["api"]);
        labels.remove(&label("api"));
        assert_eq!(changed_credentials(&wanted, &labels), ["api"]);
        labels.insert(label("api"), "aa".into());
        labels.insert(label("extra"), "cc".into());
        assert_eq!(changed_credentials(&wanted, &labels), ["extra"]);
        assert!(changed_credentials(&BTreeMap::new(), &BTreeMap::new()).is_empty());
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
        assert!(member_spec(&spec(container), "k", "m", "s", &BTreeMap::new()).is_err());
    }
}
