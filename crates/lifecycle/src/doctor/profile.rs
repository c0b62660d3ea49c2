//! The checks of a profile: what its launches need of this machine (runtime, isolation floor,
//! egress proxy image, images, networks, secrets, deployment, lock), from facts the caller
//! gathered.

use super::{check, Check, Status};
use crate::lock::Drift;
use crate::reference::short_id;

/// What a profile needs of this machine, gathered by the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfileFacts {
    /// The profile file.
    pub file: String,
    /// Each image a container runs: reference, present, built by the profile.
    pub images: Vec<(String, bool, bool)>,
    /// Each existing network a launch joins: name, present.
    pub networks: Vec<(String, bool)>,
    /// Each outside network that is `--internal` although the egress proxy publishes the
    /// sandbox's ports through it (`8080/tcp`): docker publishes none, so `run` refuses.
    pub internal_outside: Vec<(String, Vec<String>)>,
    /// Each secret: name, required, set in this environment.
    pub secrets: Vec<(String, bool, bool)>,
    /// The deployment recorded by `agentc apply`: the image reference, the recorded image
    /// ID, and the ID the reference points at now.
    pub deployment: Option<(String, String, Option<String>)>,
    /// The lock file beside the profile: its path and its drift, or why it cannot be read.
    pub lock: Option<(String, Result<Vec<Drift>, String>)>,
    /// The runtime the profile names (`security.runtime`), and whether the engine can run
    /// it, or why not.
    pub runtime: Option<(String, Result<(), String>)>,
    /// The isolation floor of the launches that have one (`security.isolation`): the runtime
    /// a launch would take and its tier, as the launch's own detection and probes find it, or
    /// what falls short and how to get it.
    pub isolation: Option<Result<String, (String, String)>>,
    /// The egress proxy's image, when a launch runs agentc's proxy (an allowlist enforced
    /// outside): its tag, made from this agentc binary, and whether the engine has it; or why
    /// it cannot be made.
    pub egress_proxy_image: Option<Result<(String, bool), String>>,
}

/// The checks of a profile.
pub fn profile_checks(facts: &ProfileFacts) -> Vec<Check> {
    let mut checks = Vec::new();
    // The fixes name the profile as the user gave it, quoted for a shell.
    let profile = shlex::try_quote(&facts.file)
        .map(|quoted| quoted.into_owned())
        .unwrap_or_else(|_| facts.file.clone());
    let quote = |word: &str| {
        shlex::try_quote(word)
            .map(|quoted| quoted.into_owned())
            .unwrap_or_else(|_| word.to_string())
    };
    if let Some((runtime, available)) = &facts.runtime {
        let id = format!("runtime {runtime}");
        checks.push(match available {
            Ok(()) => check(&id, Status::Ok, "the engine has it", None),
            Err(error) => check(
                &id,
                Status::Fail,
                format!("the engine cannot run it: {error}"),
                Some("register it with the engine (docs/engines.md), or remove security.runtime"),
            ),
        });
    }
    match &facts.isolation {
        None => {}
        Some(Ok(chosen)) => checks.push(check("isolation", Status::Ok, chosen.clone(), None)),
        Some(Err((shortfall, hint))) => checks.push(check(
            "isolation",
            Status::Fail,
            format!("{shortfall}: the launch is refused (exit 65) before anything is created"),
            Some(hint),
        )),
    }
    match &facts.egress_proxy_image {
        None => {}
        Some(Ok((tag, true))) => checks.push(check(
            "egress-proxy-image",
            Status::Ok,
            format!("{tag} present (the egress proxy, made from this agentc binary)"),
            None,
        )),
        Some(Ok((tag, false))) => checks.push(check(
            "egress-proxy-image",
            Status::Ok,
            format!("{tag} not imported yet: the first launch makes it from this agentc binary"),
            Some("`agentc egress-proxy image` imports it ahead of the first launch"),
        )),
        Some(Err(error)) => checks.push(check(
            "egress-proxy-image",
            Status::Fail,
            format!("the egress proxy's image cannot be made from this agentc binary: {error}"),
            Some("run agentc from a readable file on the engine's host; a program embedding agentc names the agentc binary as its ProxyExecutable"),
        )),
    }
    for (reference, present, built) in &facts.images {
        let id = format!("image {reference}");
        checks.push(match (present, built) {
            (true, _) => check(&id, Status::Ok, "present", None),
            (false, true) => check(
                &id,
                Status::Warn,
                "not built yet",
                Some(&format!("`agentc apply {profile}` builds it")),
            ),
            (false, false) => check(
                &id,
                Status::Fail,
                "not present: agentc pulls only when asked",
                Some(&format!(
                    "`docker pull {}`, or launch with --pull",
                    quote(reference)
                )),
            ),
        });
    }
    for (name, present) in &facts.networks {
        let id = format!("network {name}");
        let published = facts
            .internal_outside
            .iter()
            .find_map(|(outside, ports)| (outside == name).then_some(ports));
        checks.push(if let (true, Some(ports)) = (*present, published) {
            check(
                &id,
                Status::Fail,
                format!(
                    "--internal, but the egress proxy publishes the sandbox's {} through it, \
                     its outside network: docker publishes no port through an internal \
                     network, so `agentc run` refuses the launch",
                    ports.join(", ")
                ),
                Some(
                    "set egress.outside_network to a network that is not --internal (unset: \
                     docker's bridge), or remove [network] publish",
                ),
            )
        } else if *present {
            check(&id, Status::Ok, "present", None)
        } else {
            check(
                &id,
                Status::Fail,
                "does not exist: the launch joins it and does not create it",
                Some(&format!(
                    "`docker network create {}`, or change [network] name",
                    quote(name)
                )),
            )
        });
    }
    for (name, required, set) in &facts.secrets {
        let id = format!("secret {name}");
        checks.push(match (set, required) {
            (true, _) => check(
                &id,
                Status::Ok,
                "set in this environment (value not read)",
                None,
            ),
            (false, true) => check(
                &id,
                Status::Fail,
                "not set: the launch refuses to start without it",
                Some("export it in the shell that runs agentc"),
            ),
            (false, false) => check(
                &id,
                Status::Warn,
                "not set: the launch passes nothing",
                Some("export it if the agent needs it"),
            ),
        });
    }
    match &facts.deployment {
        None => checks.push(check(
            "deployment",
            Status::Warn,
            "not applied yet",
            Some(&format!(
                "`agentc apply {profile}` builds, seeds and records the deployment"
            )),
        )),
        Some((reference, recorded, now)) if now.as_deref() == Some(recorded.as_str()) => {
            checks.push(check(
                "deployment",
                Status::Ok,
                format!("{reference} is image {} as applied", short_id(recorded)),
                None,
            ))
        }
        Some((reference, recorded, now)) => checks.push(check(
            "deployment",
            Status::Warn,
            format!(
                "{reference} is {} now, but the last apply recorded {}",
                now.as_deref().map_or("absent".to_string(), |id| format!("image {}", short_id(id))),
                short_id(recorded)
            ),
            Some(&format!("`agentc apply {profile}` records the image in use (or an interrupted apply finishes)")),
        )),
    }
    if let Some((file, drift)) = &facts.lock {
        let id = "lock";
        checks.push(match drift {
            Ok(drifts) if drifts.is_empty() => check(id, Status::Ok, format!("{file}: no drift"), None),
            Ok(drifts) => check(
                id,
                Status::Fail,
                format!(
                    "{file}: {} field{} drifted, `--locked` launches are refused: {}",
                    drifts.len(),
                    if drifts.len() == 1 { "" } else { "s" },
                    drifts.iter().map(|d| d.field.as_str()).take(5).collect::<Vec<_>>().join("; ")
                ),
                Some(&format!("`agentc lock --check {profile}` lists each; after review, `agentc lock {profile}` writes it again")),
            ),
            Err(error) => check(
                id,
                Status::Fail,
                format!("cannot be read: {error}"),
                Some(&format!("write it again with `agentc lock {profile}`")),
            ),
        });
    }
    checks
}
