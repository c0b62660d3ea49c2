//! Warm pools (issue 22), written once over [`SandboxClient`]: a profile's members, the
//! claim of an idle member of a key (one rename, which only one claim of a member can win),
//! and the removal of stale and orphaned members with their egress companions.
//!
//! What a member is and its key come from [`agentc_policy::pool`]. A library caller's warm
//! path is two calls, as on the command line: [`fill`] (the pool of a launch, [`Pool::of`],
//! kept at a size) and [`claim_member`]; `agentc pool fill` starts its members through the
//! launch path `run` takes (the isolation floor met once for the fill). The key is computed in
//! one place, [`Pool::placed`], for the command line and library callers alike, so a pool one
//! fills the other claims from. [`warm`] serves a launch from a member: the claim `agentc run`
//! makes before it starts cold.

pub mod warm;

use std::collections::BTreeMap;

use agentc_policy::pool::{
    changed_credentials, claimed_name, cold_reason, credential_fingerprints, is_idle_name,
    member_name, member_spec, pool_key, LABEL_POOL, LABEL_POOL_CREDENTIAL, LABEL_POOL_MEMBER,
};
use agentc_policy::Hinted;
use agentc_policy::{Action, ContainerSpec, LaunchSpec};

use crate::session::{ImageFacts, Sandbox, SandboxClient, SessionError};

/// A container of a pool, idle or claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its handle (its current name).
    pub sandbox: Sandbox,
    /// Its pool key (`io.agentc.pool`).
    pub key: String,
    /// The name it had at fill, which its egress companion is labelled for.
    pub member_name: String,
    /// Whether it still has its member's name (nobody claimed it).
    pub idle: bool,
    /// The daemon's state (`running`, `exited`, ...).
    pub state: String,
    /// The fingerprints of the keys its egress proxy read at fill, by label
    /// ([`agentc_policy::pool::credential_fingerprints`]).
    pub credentials: BTreeMap<String, String>,
}

/// What a member must carry for a claim (or a fill) to keep it: the launch's pool key and
/// the fingerprints of the keys of the caller's environment.
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    /// The pool key ([`agentc_policy::pool::pool_key`]).
    pub key: &'a str,
    /// The caller's [`agentc_policy::pool::credential_fingerprints`].
    pub credentials: &'a BTreeMap<String, String>,
}

impl Member {
    /// Whether it runs.
    pub fn running(&self) -> bool {
        self.state == "running"
    }

    /// An idle member that stopped (killed, the daemon restarted): no claim can use it.
    pub fn orphaned(&self) -> bool {
        self.idle && matches!(self.state.as_str(), "exited" | "dead")
    }

    /// The credential bindings whose key in its proxy is not the one `wanted` has
    /// ([`changed_credentials`]).
    pub fn changed_credentials(&self, wanted: &Wanted<'_>) -> Vec<String> {
        changed_credentials(wanted.credentials, &self.credentials)
    }

    /// Whether no claim of `wanted` may take it: another key, or another credential.
    pub fn stale(&self, wanted: &Wanted<'_>) -> bool {
        self.key != wanted.key || !self.changed_credentials(wanted).is_empty()
    }
}

/// The pool containers of `profile` (every profile's with `None`), idle and claimed.
pub async fn members<C: SandboxClient>(
    client: &C,
    profile: Option<&str>,
) -> Result<Vec<Member>, SessionError> {
    let listed = client.list_labelled(LABEL_POOL).await?;
    Ok(listed
        .into_iter()
        .filter(|found| profile.is_none_or(|profile| found.sandbox.profile == profile))
        .map(|found| Member {
            idle: is_idle_name(&found.sandbox.name),
            key: found.labels.get(LABEL_POOL).cloned().unwrap_or_default(),
            member_name: found
                .labels
                .get(LABEL_POOL_MEMBER)
                .cloned()
                .unwrap_or_else(|| found.sandbox.name.clone()),
            state: found.state,
            credentials: found
                .labels
                .iter()
                .filter(|(label, _)| label.starts_with(LABEL_POOL_CREDENTIAL))
                .map(|(label, value)| (label.clone(), value.clone()))
                .collect(),
            sandbox: found.sandbox,
        })
        .collect())
}

/// Removes a pool container and its egress companion; returns what it removed, or what is
/// left as an error line.
pub async fn discard<C: SandboxClient>(client: &C, member: &Member) -> Result<Vec<String>, String> {
    let report = client.delete(&member.sandbox).await;
    if !report.left.is_empty() {
        return Err(report.left.join("; "));
    }
    let mut removed = vec![member.sandbox.name.clone()];
    match client.remove_companions(&member.member_name).await {
        Ok(companions) => removed.extend(companions),
        Err(error) => {
            return Err(format!(
                "the egress companion of {}: {}",
                member.member_name,
                error.with_hint()
            ))
        }
    }
    Ok(removed)
}

/// Removes the idle members of `profile` (every profile's with `None`) that `keep` does not
/// want ([`Member::stale`]: another key or another credential; all of them with `None`),
/// and the orphaned ones (stopped); claimed members are left alone. Returns the names
/// removed, and the failures.
pub async fn drain<C: SandboxClient>(
    client: &C,
    profile: Option<&str>,
    keep: Option<&Wanted<'_>>,
) -> Result<(Vec<String>, Vec<String>), SessionError> {
    let mut removed = Vec::new();
    let mut failed = Vec::new();
    for member in members(client, profile).await? {
        let stale = keep.is_none_or(|keep| member.stale(keep));
        if member.idle && (stale || member.orphaned()) {
            match discard(client, &member).await {
                Ok(names) => removed.push(names.join(", ")),
                Err(left) => failed.push(left),
            }
        }
    }
    Ok((removed, failed))
}

/// What [`claim`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The claimed member, renamed ([`claimed_name`]) and so never returned to the pool;
    /// `None` when no idle member of the key was left.
    pub claimed: Option<Member>,
    /// The stale (another key or credential) and orphaned members removed on the way.
    pub drained: Vec<String>,
}

/// Claims an idle, running member `wanted` keeps (its pool key, the fingerprints of the
/// claimer's keys) among `found` (a profile's [`members`], listed by the caller): drains the
/// stale (another key or credential) and
/// orphaned members first, then renames a member to [`claimed_name`]; a rename that another
/// claim won answers `None` and the next member is tried, so two claims never get one
/// member. `start` picks where among the members to begin (a random number spreads
/// concurrent claims).
pub async fn claim<C: SandboxClient>(
    client: &C,
    mut found: Vec<Member>,
    wanted: &Wanted<'_>,
    start: usize,
) -> Result<Claim, SessionError> {
    let mut drained = Vec::new();
    let mut idle = Vec::new();
    for member in found.drain(..).filter(|member| member.idle) {
        if member.stale(wanted) || member.orphaned() {
            if let Ok(names) = discard(client, &member).await {
                drained.extend(names.into_iter().take(1));
            }
        } else if member.running() {
            idle.push(member);
        }
    }
    let count = idle.len();
    for index in 0..count {
        let member = &idle[(start + index) % count];
        let to = claimed_name(&member.sandbox.name);
        if let Some(sandbox) = client.rename(&member.sandbox, &to).await? {
            let mut claimed = member.clone();
            claimed.sandbox = sandbox;
            claimed.idle = false;
            return Ok(Claim {
                claimed: Some(claimed),
                drained,
            });
        }
    }
    Ok(Claim {
        claimed: None,
        drained,
    })
}

/// The pool of one launch: its profile, its key (the spec digest, the image's ID, the runtime
/// its isolation floor chose: [`pool_key`]) and the fingerprints of the keys its egress proxy
/// reads ([`credential_fingerprints`]), what every member of it carries and every claim asks
/// for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    /// The profile's name.
    pub profile: String,
    /// The pool key.
    pub key: String,
    /// The fingerprints of the keys a member's proxy holds, by label.
    pub credentials: BTreeMap<String, String>,
    /// The runtime the launch runs under (its isolation floor's choice, or
    /// `security.runtime`): part of the key, and every member's.
    pub runtime: Option<String>,
    /// The image's ID, entrypoint and command (a claim runs the launch's command).
    pub image: ImageFacts,
}

impl Pool {
    /// The pool of `spec` (a launch in the background, resolved with `Start::Detached` or
    /// `Start::Session`) on `client`'s engine: its isolation floor met first
    /// ([`SandboxClient::meet_floor`]), then [`Pool::placed`]. `env` is what the proxy reads
    /// its keys from, `secret` the caller's own random key for their fingerprints (never in a
    /// label; agentc's is in its state directory).
    pub async fn of<C: SandboxClient>(
        client: &C,
        spec: &LaunchSpec,
        env: &BTreeMap<String, String>,
        secret: &[u8],
    ) -> Result<Pool, SessionError> {
        let container = poolable(spec)?;
        let placed = client.meet_floor(container, &spec.profile).await?.container;
        Pool::placed(client, spec, &placed, env, secret).await
    }

    /// The pool of `spec` whose container the caller placed already: `placed` is the
    /// container of `spec`, or of another launch of the same profile (a claim's, with its own
    /// arguments), with its isolation floor met ([`SandboxClient::meet_floor`]). The image
    /// must be present.
    pub async fn placed<C: SandboxClient>(
        client: &C,
        spec: &LaunchSpec,
        placed: &ContainerSpec,
        env: &BTreeMap<String, String>,
        secret: &[u8],
    ) -> Result<Pool, SessionError> {
        let mut pool = Pool::keyed(client, spec, placed).await?;
        pool.credentials = credential_fingerprints(placed, env, secret);
        Ok(pool)
    }

    /// [`Pool::placed`] without the fingerprints of the proxy's keys (`credentials` empty):
    /// a claim computes them only when there is a member to claim.
    pub(crate) async fn keyed<C: SandboxClient>(
        client: &C,
        spec: &LaunchSpec,
        placed: &ContainerSpec,
    ) -> Result<Pool, SessionError> {
        poolable(spec)?;
        let image = client.image_facts(&placed.image).await?;
        let runtime = placed.runtime.clone();
        Ok(Pool {
            profile: spec.profile.clone(),
            key: pool_key(
                spec.digest().unwrap_or_default(),
                &image.id,
                runtime.as_deref(),
            ),
            credentials: BTreeMap::new(),
            runtime,
            image,
        })
    }

    /// What its members must carry.
    pub fn wanted(&self) -> Wanted<'_> {
        Wanted {
            key: &self.key,
            credentials: &self.credentials,
        }
    }
}

/// The container of a launch a pool can serve, or why not.
fn poolable(spec: &LaunchSpec) -> Result<&agentc_policy::ContainerSpec, SessionError> {
    if let Some(reason) = cold_reason(spec) {
        return Err(SessionError::invalid(
            format!("profile {}: cannot be pooled: {reason}", spec.profile),
            "create the sandbox cold (SandboxClient::create)",
        ));
    }
    match &spec.action {
        Action::Container(container) => Ok(container),
        Action::Build(_) => Err(SessionError::invalid(
            format!(
                "profile {}: a build launch starts no container",
                spec.profile
            ),
            "pool a run or sandbox launch",
        )),
    }
}

/// Eight random hexadecimal digits from the operating system: a member's suffix, or where a
/// claim begins among the members.
pub fn random_suffix() -> Result<String, SessionError> {
    let mut bytes = [0u8; 4];
    getrandom::fill(&mut bytes).map_err(|error| {
        SessionError::invalid(
            format!("no random bytes for a pool member's name: {error}"),
            "the operating system's random source must be readable",
        )
    })?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Where a claim begins among the members: a random number, so that concurrent claims spread.
fn random_start() -> Result<usize, SessionError> {
    Ok(usize::from_str_radix(&random_suffix()?, 16).unwrap_or_default())
}

/// The first 12 characters of a pool key, as `agentc pool ls` and a cold start show it.
pub fn short_key(key: &str) -> &str {
    &key[..key.len().min(12)]
}

/// What [`tend`] did to a pool before a fill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tended {
    /// The stale and stopped members removed, each with its companion ([`drain`]).
    pub removed: Vec<String>,
    /// What could not be removed.
    pub failed: Vec<String>,
    /// How many idle running members of the pool are left.
    pub idle: usize,
}

/// Drains `pool`'s profile of its stale and stopped members ([`drain`]) and counts its idle
/// running members: the first step of a fill, the command line's and [`fill`]'s.
pub async fn tend<C: SandboxClient>(client: &C, pool: &Pool) -> Result<Tended, SessionError> {
    let wanted = pool.wanted();
    let (removed, failed) = drain(client, Some(&pool.profile), Some(&wanted)).await?;
    let idle = members(client, Some(&pool.profile))
        .await?
        .iter()
        .filter(|member| member.idle && member.running() && !member.stale(&wanted))
        .count();
    Ok(Tended {
        removed,
        failed,
        idle,
    })
}

/// Keeps `pool` (the pool of `spec`, [`Pool::of`]) at `size` idle running members: drains its
/// profile's stale and stopped members first, then creates the missing ones
/// ([`member_spec`]: the launch idling, named `agentc-pool-PROFILE-RANDOM`, its egress
/// companion its own); returns the members created. Nothing is created when `spec` cannot be
/// pooled.
pub async fn fill<C: SandboxClient>(
    client: &C,
    spec: &LaunchSpec,
    pool: &Pool,
    size: usize,
) -> Result<Vec<Sandbox>, SessionError> {
    poolable(spec)?;
    let tended = tend(client, pool).await?;
    let mut created = Vec::new();
    for _ in tended.idle..size {
        let suffix = random_suffix()?;
        let name = member_name(&pool.profile, &suffix);
        let mut member =
            member_spec(spec, &pool.key, &name, &suffix, &pool.credentials).map_err(|reason| {
                SessionError::invalid(
                    format!("profile {}: {reason}", pool.profile),
                    "create the sandbox cold (SandboxClient::create)",
                )
            })?;
        // Every member under the key's runtime (its floor then only checks that runtime).
        if let (Action::Container(container), Some(runtime)) = (&mut member.action, &pool.runtime) {
            container.runtime.get_or_insert_with(|| runtime.clone());
        }
        created.push(client.create(&member).await?);
    }
    Ok(created)
}

/// Claims an idle member of `pool` ([`claim`], from a random member on, so that concurrent
/// claims spread): the member renamed and never returned to the pool, or `None` when none is
/// idle. The stale members met are removed on the way. Run the launch's command in it through
/// exec ([`agentc_policy::pool::claim_command`]), and delete it as any sandbox.
pub async fn claim_member<C: SandboxClient>(
    client: &C,
    pool: &Pool,
) -> Result<Option<Member>, SessionError> {
    let found = members(client, Some(&pool.profile)).await?;
    Ok(claim(client, found, &pool.wanted(), random_start()?)
        .await?
        .claimed)
}
