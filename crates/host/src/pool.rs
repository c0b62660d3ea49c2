//! Warm pools as `agentc pool fill` and `agentc run`'s claim use them, for the command line and
//! library callers alike: the launch a pool's members are made of (`agentc run --detach`'s,
//! [`detached_launch`]), the user's key for the fingerprints of the keys a member's proxy holds
//! ([`secret_for`]), and a fill as one step over one engine port ([`Fill`]): the floor met once
//! for the key and every member, the pool's stale members drained, and members launched as
//! `agentc run --detach` launches them until the pool holds its size. The pool itself (its key,
//! the claim, drain) is the engine crate's ([`agentc_engine::pool`]).

use agentc_engine::pool::{self, short_key, Pool};
use agentc_engine::session::{Sandboxes, SessionPort};
use agentc_policy::pool::{cold_reason, member_name, member_spec};
use agentc_policy::{ChosenRuntime, ContainerSpec, Instance, LaunchSpec, LoadedProfile, Start};

use crate::backend::{exec_failure, session_failure, OnClient};
use crate::launch::{Launcher, Outcome, StartedSandbox};
use crate::{
    container_of, load_profile, pool_secret, profile_record, resolve_instance, Failure,
    LaunchRequest, EXIT_INVALID,
};

/// Why a member was removed as stale, as a fill and a claim say it.
pub const STALE: &str = "the profile, image, runtime or a credential's key changed, or it stopped";

/// The launch `agentc run --detach` resolves for `request` (its agent arguments and
/// overrides), started as `start`, with the runtime its isolation floor was met with
/// (`floor`): what a pool's members are made of, and what a claim's key is computed from.
pub fn detached_launch(
    loaded: &LoadedProfile,
    request: &LaunchRequest,
    start: Start,
    floor: Option<ChosenRuntime>,
    stdin_is_terminal: bool,
) -> Result<LaunchSpec, Failure> {
    let detach = start != Start::AsLaunched;
    let instance = Instance {
        start,
        default_name: detach
            .then(|| format!("agentc-run-{}-{}", loaded.profile.name, std::process::id())),
        name: None,
        copy: None,
        stdin_is_terminal,
        profile_record: profile_record(&request.profile),
        own_home: false,
        floor,
    };
    resolve_instance(loaded, request, instance)
}

/// The user's key for the fingerprints of the keys `container`'s egress proxy reads
/// ([`pool_secret`]); empty, and the user's key not read, without a credential binding.
pub fn secret_for(container: &ContainerSpec) -> Result<Vec<u8>, Failure> {
    let bound = container
        .egress
        .as_ref()
        .is_some_and(|egress| !egress.credentials.is_empty());
    if !bound {
        return Ok(Vec::new());
    }
    pool_secret::load_or_create()
}

/// What a fill says as it goes.
#[derive(Debug)]
pub enum FillEvent<'a> {
    /// A line for the caller's log: the runtime chosen, an image pulled, a stale member
    /// removed or one that could not be.
    Note(&'a str),
    /// A member started.
    Started(&'a StartedSandbox),
}

/// What a [`Fill`] left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filled {
    /// The profile's name.
    pub profile: String,
    /// How many idle members the pool holds.
    pub idle: usize,
    /// The pool's key.
    pub key: String,
}

impl std::fmt::Display for Filled {
    /// `pool of PROFILE holds N idle member(s) (key KEY)`, the key shortened.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pool of {} holds {} idle member(s) (key {})",
            self.profile,
            self.idle,
            short_key(&self.key)
        )
    }
}

/// `agentc pool fill`: idle members of the profile's pool started until it holds `size`, over
/// one engine port. Made by [`Fill::new`], which refuses (before the engine is asked) a
/// launch no member could serve.
pub struct Fill<'a> {
    loaded: LoadedProfile,
    request: LaunchRequest,
    /// The launch without its floor met.
    unmet: LaunchSpec,
    size: usize,
    pull: bool,
    launcher: Launcher,
    events: &'a mut (dyn FnMut(FillEvent<'_>) + Send),
}

impl<'a> Fill<'a> {
    /// The fill of `request`'s profile to `size` idle members (pulling a missing image first
    /// with `pull`); refused (exit 65) when no member could serve its launch.
    pub fn new(
        request: LaunchRequest,
        size: usize,
        pull: bool,
        launcher: Launcher,
        events: &'a mut (dyn FnMut(FillEvent<'_>) + Send),
    ) -> Result<Fill<'a>, Failure> {
        let loaded = load_profile(&request.profile)?;
        let unmet = detached_launch(&loaded, &request, Start::Detached, None, launcher.terminal)?;
        if let Some(reason) = cold_reason(&unmet) {
            return Err(Failure::new(
                EXIT_INVALID,
                format!(
                    "profile {}: cannot be pooled: {reason}",
                    loaded.profile.name
                ),
            )
            .hinted("`agentc run` starts it cold"));
        }
        Ok(Fill {
            loaded,
            request,
            unmet,
            size,
            pull,
            launcher,
            events,
        })
    }

    /// The pool's launch, resolved with the runtime its isolation floor was met with over
    /// `client`'s port (met once for the fill: the key's runtime and every member's), and the
    /// container placed.
    async fn base<P: SessionPort>(
        &mut self,
        client: &Sandboxes<P>,
    ) -> Result<(LaunchSpec, ContainerSpec), Failure> {
        let container = container_of(&self.unmet)?;
        let events = &mut *self.events;
        let met = self
            .launcher
            .meet_floor_on(client.port(), container, &self.unmet.profile, &mut |line| {
                events(FillEvent::Note(line))
            })
            .await?;
        let base = match met.chosen {
            None => self.unmet.clone(),
            floor => detached_launch(
                &self.loaded,
                &self.request,
                Start::Detached,
                floor,
                self.launcher.terminal,
            )?,
        };
        let placed = container_of(&base)?.clone();
        Ok((base, placed))
    }

    /// The pool (its key, [`Pool::placed`]), its stale members drained, and how many idle
    /// members of it there are.
    async fn prepare<P: SessionPort>(
        &mut self,
        client: &Sandboxes<P>,
        base: &LaunchSpec,
        placed: &ContainerSpec,
        secret: &[u8],
    ) -> Result<(Pool, usize), Failure> {
        if self.pull {
            let events = &mut *self.events;
            agentc_engine::image::ensure_image(client.port(), &placed.image, true, &mut |line| {
                events(FillEvent::Note(line))
            })
            .await
            .map_err(exec_failure)?;
        }
        // The keys the members' proxies read: the filler's, from the environment they launch
        // with.
        let pool = Pool::placed(client, base, placed, &self.launcher.env, secret)
            .await
            .map_err(session_failure)?;
        let tended = pool::tend(client, &pool).await.map_err(session_failure)?;
        for names in tended.removed {
            (self.events)(FillEvent::Note(&format!(
                "removed stale pool member {names} ({STALE})"
            )));
        }
        for left in tended.failed {
            (self.events)(FillEvent::Note(&format!(
                "warning: could not remove a stale pool member: {left}"
            )));
        }
        Ok((pool, tended.idle))
    }
}

impl OnClient for Fill<'_> {
    type Output = Filled;

    async fn run<P: SessionPort>(mut self, client: &Sandboxes<P>) -> Result<Filled, Failure> {
        let (base, placed) = self.base(client).await?;
        let secret = secret_for(&placed)?;
        let (pool, idle) = self.prepare(client, &base, &placed, &secret).await?;
        let profile = self.loaded.profile.name.clone();
        for _ in idle..self.size {
            let suffix = pool::random_suffix().map_err(session_failure)?;
            let name = member_name(&profile, &suffix);
            let member = member_spec(&base, &pool.key, &name, &suffix, &pool.credentials).map_err(
                |reason| Failure::new(EXIT_INVALID, format!("profile {profile}: {reason}")),
            )?;
            let container = container_of(&member)?;
            self.launcher.check_host_ports(container, &member)?;
            let events = &mut *self.events;
            let outcome = self
                .launcher
                .launch_on(client.port(), container, false, &mut |line| {
                    events(FillEvent::Note(line))
                })
                .await?;
            match &outcome {
                Outcome::Started(started) => (self.events)(FillEvent::Started(started)),
                Outcome::Exited { status, .. } => {
                    return Err(Failure::new(
                        *status,
                        format!("the pool member {name} did not start"),
                    ))
                }
            }
        }
        Ok(Filled {
            profile,
            idle: self.size.max(idle),
            key: pool.key,
        })
    }
}

#[cfg(test)]
mod tests;
