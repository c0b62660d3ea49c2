//! A launch served by a pool member: the claim `agentc run` makes before it starts cold,
//! written once for the command line and library callers ([`claim_launch`]), and the start of
//! the launch's command in the background in the member it claimed ([`start_detached`]).

use std::collections::{BTreeMap, BTreeSet};

use agentc_policy::pool::{claim_command, claim_secrets, cold_reason};
use agentc_policy::Hinted;
use agentc_policy::{ContainerSpec, EnvValue, EnvVar, LaunchSpec};

use super::{discard, members, random_start, short_key, Member, Pool};
use crate::session::{ExecRequest, SandboxClient, SessionError};
use crate::ExecError;

/// What [`claim_launch`] is given.
#[derive(Clone, Copy)]
pub struct LaunchClaim<'a> {
    /// The pool's launch: the profile's launch in the background without the claim's own
    /// arguments (what `agentc pool fill` pools).
    pub base: &'a LaunchSpec,
    /// The claim's own launch, as resolved: its command runs in the member.
    pub spec: &'a LaunchSpec,
    /// `spec`'s container with its isolation floor met ([`SandboxClient::meet_floor`]): the
    /// key's runtime, and what a cold start launches.
    pub placed: &'a ContainerSpec,
    /// The environment the launch's secrets and its proxy's keys are read from (by name).
    pub env: &'a BTreeMap<String, String>,
    /// The caller's own key for the fingerprints of the proxy's keys
    /// ([`agentc_policy::pool::credential_fingerprints`]), or why it has none; asked only
    /// when the profile has members to claim.
    pub secret: &'a (dyn Fn() -> Result<Vec<u8>, String> + Sync),
    /// The name the launch asked for (`--name`): a member cannot take it, since its egress
    /// companion is named after the member.
    pub name: Option<&'a str>,
}

/// Why a launch starts cold rather than in a pool member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cold {
    /// The engine did not list the pool members (what it answered): a cold launch then says
    /// what is wrong with the engine itself.
    Unlisted(String),
    /// No member serves it now, and a fill would change that: why.
    Unfilled(String),
    /// The keys of these credential bindings changed since the pool was filled (another
    /// user's, or rotated); the members that held the old ones were removed.
    CredentialsChanged(Vec<String>),
    /// No pool member can ever serve this launch ([`cold_reason`]): why.
    Unpoolable(String),
    /// The launch asked for a name of its own (`--name`), which a member cannot take.
    Named(String),
}

impl Cold {
    /// Why, in a sentence, for the `cold start:` line.
    pub fn reason(&self) -> String {
        match self {
            Cold::Unlisted(error) => format!("cannot list the pool members: {error}"),
            Cold::Unfilled(reason) | Cold::Unpoolable(reason) => reason.clone(),
            Cold::CredentialsChanged(names) => format!(
                "the credential{} {} changed since the pool was filled (its proxies hold another \
                 key: another user's, or one rotated since); those members were removed",
                if names.len() == 1 { "" } else { "s" },
                names.join(", ")
            ),
            Cold::Named(name) => {
                format!("--name {name}: a pool member keeps the egress companion of its own name")
            }
        }
    }
}

/// A member [`claim_launch`] claimed for a launch: renamed, never returned to the pool.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The member.
    pub member: Member,
    /// The launch's command, to run in it through exec ([`claim_command`]).
    pub command: Vec<String>,
    /// The launch's secrets, passed to that exec by name ([`claim_secrets`]).
    pub secrets: Vec<EnvVar>,
    /// The stale (another key or credential) and stopped members removed on the way.
    pub drained: Vec<String>,
}

/// What [`claim_launch`] found.
#[derive(Debug)]
pub enum WarmStart {
    /// A member serves the launch.
    Claimed(Box<Claimed>),
    /// The launch starts cold.
    Cold {
        /// Why.
        why: Cold,
        /// Whether the profile has pool members at all (`false`: no pool was filled, or the
        /// engine did not list them), so whether the cold start is news.
        pooled: bool,
    },
}

impl std::fmt::Debug for LaunchClaim<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LaunchClaim")
            .field("profile", &self.spec.profile)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Claims an idle member of the launch's pool for `claim.spec`: the profile's members and the
/// pool key ([`Pool::placed`] of `claim.base` under `claim.placed`'s runtime) asked; then the
/// launch checked (poolable, unnamed, its required secrets set in `claim.env`), the stale
/// members removed and one member renamed ([`super::claim`]). A member that has no command to
/// run is removed again. A required secret missing from `claim.env` is the error a cold launch
/// would meet ([`ExecError::MissingSecret`]).
pub async fn claim_launch<C: SandboxClient>(
    client: &C,
    claim: &LaunchClaim<'_>,
) -> Result<WarmStart, SessionError> {
    let profile = &claim.spec.profile;
    // The members' list and the image's inspect (its ID is part of the key) do not depend on
    // each other: through the command line they are asked at once (two `docker` processes side
    // by side), so the claim waits for the slower, not for both; through the Engine API one
    // after the other, over the one connection the launch uses (a request there takes about a
    // millisecond, a second connection as long). The key's fingerprints come after.
    let listing = members(client, Some(profile));
    let keying = Pool::keyed(client, claim.base, claim.placed);
    let (listed, keyed) = if client.asks_side_by_side() {
        futures_util::future::join(listing, keying).await
    } else {
        let listed = listing.await;
        (listed, keying.await)
    };
    let found = match listed {
        Ok(found) => found,
        Err(error) => {
            let why = Cold::Unlisted(error.with_hint().to_string());
            return Ok(WarmStart::Cold { why, pooled: false });
        }
    };
    let pooled = !found.is_empty();
    let cold = |why| Ok(WarmStart::Cold { why, pooled });
    if let Some(reason) = cold_reason(claim.spec) {
        return cold(Cold::Unpoolable(reason));
    }
    if let Some(name) = claim.name {
        return cold(Cold::Named(name.to_string()));
    }
    let mut pool = match keyed {
        Ok(pool) => pool,
        Err(error) => {
            return cold(Cold::Unfilled(format!(
                "cannot compute the pool key: {}",
                error.with_hint()
            )))
        }
    };
    let short = short_key(&pool.key);
    let empty = format!("the pool of {profile} has no idle member of key {short}");
    if !pooled {
        return cold(Cold::Unfilled(empty));
    }
    let container = claim.placed;
    let secrets = claim_secrets(container);
    // A secret the profile holds (a proxy URL's credentials) before the environment's.
    let env = container.held_secrets.over(claim.env);
    if let Some(missing) = secrets.iter().find(|var| {
        matches!(var.value, EnvValue::Secret { required: true }) && !env.contains_key(&var.name)
    }) {
        let variable = missing.name.clone();
        return Err(SessionError::Launch(ExecError::MissingSecret { variable }));
    }
    // The keys a member's proxy holds must be the ones this environment has.
    pool.credentials = match (claim.secret)() {
        Ok(secret) => agentc_policy::pool::credential_fingerprints(container, claim.env, &secret),
        Err(why) => {
            let why = format!("cannot fingerprint the egress proxy's keys: {why}");
            return cold(Cold::Unfilled(why));
        }
    };
    let wanted = pool.wanted();
    let changed: BTreeSet<String> = found
        .iter()
        .filter(|member| member.idle && member.running() && member.key == pool.key)
        .flat_map(|member| member.changed_credentials(&wanted))
        .collect();
    let taken = super::claim(client, found, &wanted, random_start()?).await?;
    let Some(member) = taken.claimed else {
        if !changed.is_empty() {
            return cold(Cold::CredentialsChanged(changed.into_iter().collect()));
        }
        return cold(Cold::Unfilled(empty));
    };
    let command = claim_command(container, &pool.image.entrypoint, &pool.image.cmd);
    if command.is_empty() {
        let _ = discard(client, &member).await;
        return cold(Cold::Unfilled(
            "the launch has no command to run".to_string(),
        ));
    }
    Ok(WarmStart::Claimed(Box::new(Claimed {
        member,
        command,
        secrets,
        drained: taken.drained,
    })))
}

/// Starts the launch's command in the member `claimed` in the background, its output in the
/// member's logs (as a detached launch's is), its secrets passed by name, through a detached
/// exec ([`SandboxClient::exec_detached`]: through the Engine API no stream takes a connection);
/// a command the engine does not start removes the member ([`SessionError::NotStarted`]).
pub async fn start_detached<C: SandboxClient>(
    client: &C,
    claimed: &Claimed,
) -> Result<(), SessionError> {
    let mut exec = ExecRequest::new(
        [
            "sh",
            "-c",
            "if [ -w /proc/1/fd/1 ]; then exec \"$@\" </dev/null >/proc/1/fd/1 2>/proc/1/fd/2; \
             else exec \"$@\" </dev/null >/dev/null 2>&1; fi",
            "sh",
        ]
        .into_iter()
        .map(str::to_string)
        .chain(claimed.command.iter().cloned()),
    );
    exec.env = claimed.secrets.clone();
    let sandbox = &claimed.member.sandbox;
    let Err(error) = client.exec_detached(sandbox, &exec).await else {
        return Ok(());
    };
    let _ = discard(client, &claimed.member).await;
    Err(SessionError::NotStarted {
        name: sandbox.name.clone(),
        message: error.with_hint().to_string(),
    })
}
