//! Warm pools (issue 22), written once over [`SandboxClient`]: a profile's members, the
//! claim of an idle member of a key (one rename, which only one claim of a member can win),
//! and the removal of stale and orphaned members with their egress companions.
//!
//! What a member is and its key come from [`agentc_policy::pool`]; filling a pool is the
//! caller's (a member is the profile's detached launch, started by the launch path `run`
//! takes).

use std::collections::BTreeMap;

use agentc_policy::pool::{
    changed_credentials, claimed_name, is_idle_name, LABEL_POOL, LABEL_POOL_CREDENTIAL,
    LABEL_POOL_MEMBER,
};

use crate::session::{Sandbox, SandboxClient, SessionError};

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
                "the egress companion of {}: {error}",
                member.member_name
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
