//! `agentc run` of one launch, for the command line and library callers alike, as one step
//! over one engine port ([`RunOne`]): the launch's isolation floor met and the launch resolved
//! with its runtime, then a warm claim where a pool of the launch's key has an idle member
//! ([`PoolUse`]; the claim itself is the engine crate's [`warm::claim_launch`]), else the cold
//! launch ([`Launcher::launch_on`]). A claimed member runs the launch's command in the
//! background (a detached launch) or attached to the caller's output, then is removed as
//! `--rm` does. What happens is said as [`RunEvent`]s.

use agentc_engine::pool::warm::{self, Claimed, Cold, LaunchClaim, WarmStart};
use agentc_engine::session::{
    ExecRequest, ExecStdin, OutputSink, SandboxClient, Sandboxes, SessionError, SessionPort,
};
use agentc_engine::ExecError;
use agentc_policy::Hinted;
use agentc_policy::{
    ChosenRuntime, ContainerSpec, Hint, Instance, LaunchSpec, LoadedProfile, Start,
};
use futures_util::FutureExt;

use crate::backend::{session_failure, OnClient, Signals};
use crate::launch::{Launcher, Outcome, StartedSandbox};
use crate::pool::{detached_launch, secret_for, STALE};
use crate::session::run_exec;
use crate::{container_of, resolve_instance, Failure, LaunchRequest, EXIT_INVALID};

/// Whether a run claims a warm pool member (`agentc run --pool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PoolUse {
    /// Claim an idle member of the launch's key when there is one, else start cold.
    #[default]
    Auto,
    /// Claim one, or fail (exit 65) with a hint.
    Require,
    /// Always start cold.
    Off,
}

/// What a run says as it goes.
#[derive(Debug)]
pub enum RunEvent<'a> {
    /// A line for the caller's log: the runtime chosen, an image pulled, a cold start's
    /// reason, a warm start, a stale member removed.
    Note(&'a str),
    /// A detached launch (or the member claimed for it) started.
    Started(&'a StartedSandbox),
    /// An attached container ended abnormally: what happened (killed for memory, by a
    /// signal), with what to do about it as its hint when that is known.
    Exited(&'a Hint<String>),
}

/// `agentc run` of one launch: `spec`, resolved by [`resolve_instance`] from `loaded`,
/// `request` and `instance` (without a floor: the floor is met here, and the launch resolved
/// again with its runtime when one is chosen). Returns the exit status: the container's (or
/// the claimed member's command's) for an attached launch, 0 for a started detached one.
pub struct RunOne<'a> {
    /// The profile.
    pub loaded: &'a LoadedProfile,
    /// What was asked for: the profile file, workspace, image, agent arguments, overrides.
    pub request: &'a LaunchRequest,
    /// How this invocation starts it (detached, named, the terminal).
    pub instance: Instance,
    /// The launch resolved from them.
    pub spec: &'a LaunchSpec,
    /// Whether a warm member may serve it.
    pub pool: PoolUse,
    /// Pull a missing image first (`--pull`).
    pub pull: bool,
    /// The caller: its engine, environment, proxy executable and terminal.
    pub launcher: Launcher,
    /// Where an attached claimed member's command writes.
    pub output: &'a mut dyn OutputSink,
    /// Where each event goes.
    pub events: &'a mut (dyn FnMut(RunEvent<'_>) + Send),
}

impl RunOne<'_> {
    /// The launch resolved with the runtime its floor was met with.
    fn resolve_met(&self, floor: ChosenRuntime) -> Result<LaunchSpec, Failure> {
        let instance = Instance {
            floor: Some(floor),
            ..self.instance.clone()
        };
        resolve_instance(self.loaded, self.request, instance)
    }

    /// The claim of the launch `spec` (resolved with its floor's runtime) over `client`:
    /// `Some(status)` when a warm member served it, `None` when it starts cold (said when the
    /// profile has a pool; with [`PoolUse::Require`] a failure instead, exit 65 with a hint).
    async fn claim<P: SessionPort>(
        &mut self,
        client: &Sandboxes<P>,
        spec: &LaunchSpec,
    ) -> Result<Option<u8>, Failure> {
        if self.pool == PoolUse::Off {
            return Ok(None);
        }
        let placed = container_of(spec)?;
        // The pool's key is of the launch as a fill resolves it: no agent arguments, no
        // workspace of the invocation's.
        let base_request = LaunchRequest {
            image: self.request.image.clone(),
            overrides: self.request.overrides.clone(),
            ..LaunchRequest::new(&self.request.profile)
        };
        let base = detached_launch(
            self.loaded,
            &base_request,
            Start::Detached,
            None,
            self.launcher.terminal,
        )?;
        // Listen before the claim renames a member: a signal then is never lost, and the
        // member claimed is removed again.
        let mut signals = Signals::new()?;
        let secret = move || secret_for(placed).map_err(|failure| failure.with_hint().to_string());
        let found = warm::claim_launch(
            client,
            &LaunchClaim {
                base: &base,
                spec,
                placed,
                env: &self.launcher.env,
                secret: &secret,
                name: self.instance.name.as_deref(),
            },
        )
        .await
        .map_err(session_failure)?;
        let claimed = match found {
            WarmStart::Cold { why, pooled } => return self.cold(&why, pooled),
            WarmStart::Claimed(claimed) => claimed,
        };
        for name in &claimed.drained {
            self.note(&format!("removed stale pool member {name} ({STALE})"));
        }
        let member = &claimed.member;
        self.note(&format!(
            "warm start from pool (member {}, now {})",
            member.member_name, member.sandbox.name
        ));
        if let Some(signal) = signals.recv().now_or_never() {
            let _ = agentc_engine::pool::discard(client, member).await;
            let cleanup = Some(format!(
                "removed the claimed member {}",
                member.sandbox.name
            ));
            let interrupted = ExecError::Interrupted { signal, cleanup };
            return Err(session_failure(SessionError::Launch(interrupted)));
        }
        self.run_claimed(client, placed, &claimed).await.map(Some)
    }

    /// A cold start: said when the profile has pool members (`pooled`), or with
    /// [`PoolUse::Require`] the failure (exit 65) with a hint.
    fn cold(&mut self, why: &Cold, pooled: bool) -> Result<Option<u8>, Failure> {
        let path = self.request.profile.display();
        let hint = match why {
            // What no fill can change: the hint says how to start it, not to fill.
            Cold::Unpoolable(_) => "this launch cannot be served by a pool member; `agentc run` \
                                    without `--pool require` starts it cold"
                .to_string(),
            Cold::Named(_) => "drop --name to claim a member (its name is agentc-claim-...), or \
                               run without `--pool require` to start it cold under that name"
                .to_string(),
            Cold::Unlisted(_) => "`agentc doctor` checks the engine".to_string(),
            Cold::CredentialsChanged(_) => format!(
                "`agentc pool fill {path} --size N` fills the pool again with the keys of this \
                 environment"
            ),
            _ => format!("`agentc pool fill {path} --size N` starts idle members"),
        };
        let reason = why.reason();
        if self.pool == PoolUse::Require {
            let profile = &self.loaded.profile.name;
            return Err(Failure::new(
                EXIT_INVALID,
                format!("--pool require: no warm start for {profile}: {reason}"),
            )
            .hinted(hint));
        }
        if pooled {
            self.note(&format!("cold start: {reason}"));
        } else {
            // No pool: nothing to say; the cold launch reports what is wrong with the engine.
            log::debug!("no warm start: {reason}");
        }
        Ok(None)
    }

    /// The launch's command run in the member `claimed`: for a detached launch in the
    /// background (said as a started launch is), else attached to the caller's output, the
    /// member then removed as `--rm` does.
    async fn run_claimed<P: SessionPort>(
        &mut self,
        client: &Sandboxes<P>,
        container: &ContainerSpec,
        claimed: &Claimed,
    ) -> Result<u8, Failure> {
        let member = &claimed.member;
        if container.detach {
            // What is said of it first: the exec's attach takes its connection to the Engine
            // API for itself, so a request after it would open another.
            let inspect = client
                .inspect(&member.sandbox)
                .await
                .map_err(session_failure)?;
            // The launch's command in the background, its output in the container's logs.
            warm::start_detached(client, claimed)
                .await
                .map_err(session_failure)?;
            let started = StartedSandbox::from_inspect(&inspect, &container.network);
            (self.events)(RunEvent::Started(&started));
            return Ok(0);
        }
        // Attached: the command on the caller's output, then the member removed.
        let mut exec = ExecRequest::new(claimed.command.iter().cloned());
        exec.env = claimed.secrets.clone();
        if container.interactive {
            exec.stdin = ExecStdin::Terminal;
        }
        exec.tty = container.tty && self.launcher.terminal;
        let status = run_exec(client, &member.sandbox, exec, &mut *self.output).await;
        if let Err(left) = agentc_engine::pool::discard(client, member).await {
            self.note(&format!(
                "warning: could not remove the claimed member: {left}"
            ));
        }
        status
    }

    fn note(&mut self, line: &str) {
        (self.events)(RunEvent::Note(line));
    }
}

impl OnClient for RunOne<'_> {
    type Output = u8;

    async fn run<P: SessionPort>(mut self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        let container = container_of(self.spec)?;
        // The floor, met once: the pool key's runtime, and the cold launch's.
        let events = &mut *self.events;
        let met = self
            .launcher
            .meet_floor_on(client.port(), container, &self.spec.profile, &mut |line| {
                events(RunEvent::Note(line))
            })
            .await?;
        let resolved = met
            .chosen
            .map(|floor| self.resolve_met(floor))
            .transpose()?;
        let spec = resolved.as_ref().unwrap_or(self.spec);
        if let Some(status) = self.claim(client, spec).await? {
            return Ok(status);
        }
        let placed = container_of(spec)?;
        self.launcher.check_host_ports(placed, spec)?;
        let events = &mut *self.events;
        let outcome = self
            .launcher
            .launch_on(client.port(), placed, self.pull, &mut |line| {
                events(RunEvent::Note(line))
            })
            .await?;
        match &outcome {
            Outcome::Started(started) => (self.events)(RunEvent::Started(started)),
            Outcome::Exited {
                explanation: Some(explanation),
                ..
            } => (self.events)(RunEvent::Exited(explanation)),
            Outcome::Exited { .. } => {}
        }
        Ok(outcome.status())
    }
}

#[cfg(test)]
mod tests;
