//! `agentc pool fill|ls|drain` and the claim of `agentc run` (warm pools, issue 22).
//!
//! A member is the profile's launch exactly as `agentc run --detach` resolves and starts it
//! (through [`launch::execute`], its egress companion included), made a member by
//! [`agentc_policy::pool::member_spec`]: named `agentc-pool-PROFILE-RANDOM`, labelled with
//! the pool key, idling instead of running the launch's command. A claim renames an idle
//! member of the launch's key and runs the launch's command in it through exec: the library's
//! ([`agentc_engine::pool::warm::claim_launch`], written once over [`SandboxClient`]); this
//! module prints what it found and runs an attached command on the terminal.
//!
//! The keys a member's egress proxy holds are read at fill, from the filler's environment:
//! the member carries their fingerprints under the user's own key ([`agentc_host::pool_secret`]), and a
//! claim takes only a member whose fingerprints are those of its own environment; the others
//! are drained, as members of another key are.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::Path;

use agentc_engine::pool::warm::{self, Claimed, Cold, LaunchClaim, WarmStart};
use agentc_engine::pool::{self as engine_pool, short_key, Member};
use agentc_engine::session::{
    ExecRequest, ExecStdin, ProcessStdio, SandboxClient, Sandboxes, SessionError, SessionPort,
};
use agentc_engine::ExecError;
use agentc_host::pool::{self, secret_for, Fill, FillEvent, STALE};
use agentc_host::LaunchRequest;
use agentc_policy::{ContainerSpec, LaunchSpec, LoadedProfile, Start};
use futures_util::FutureExt;

use crate::cli::{PoolCommand, PoolDrainArgs, PoolFillArgs, PoolFormat, PoolLsArgs, PoolMode};
use crate::commands::launch;
use crate::commands::session::{is_profile_path, on_client, session_failure, OnClient, Signals};
use crate::context::{self, Failure, EXIT_INVALID};
use agentc_host::session::run_exec;

/// Runs `agentc pool ...`.
pub fn pool(command: PoolCommand) -> Result<u8, Failure> {
    match command {
        PoolCommand::Fill(crate::cli::Sub(args)) => fill(args),
        PoolCommand::Ls(crate::cli::Sub(args)) => ls(args),
        PoolCommand::Drain(crate::cli::Sub(args)) => drain(args),
    }
}

/// The launch `agentc run --detach PROFILE` resolves, with the claim's `agent_args` and the
/// invocation's `overrides` ([`agentc_host::pool::detached_launch`]).
fn detached_launch(
    loaded: &LoadedProfile,
    profile: &Path,
    image: Option<String>,
    overrides: &BTreeMap<String, String>,
) -> Result<LaunchSpec, Failure> {
    let request = LaunchRequest {
        image,
        overrides: overrides.clone(),
        ..LaunchRequest::new(profile)
    };
    let terminal = std::io::stdin().is_terminal();
    pool::detached_launch(loaded, &request, Start::Detached, None, terminal)
}

/// Runs `agentc pool fill`: the library's fill ([`Fill`], one step over one engine port),
/// printing each member started and what the pool holds.
fn fill(args: PoolFillArgs) -> Result<u8, Failure> {
    let mut print = |event: FillEvent<'_>| match event {
        FillEvent::Note(line) => launch::notify(line),
        FillEvent::Started(started) => println!("{started}"),
    };
    let request = LaunchRequest {
        image: args.image,
        ..LaunchRequest::new(&args.profile)
    };
    let size = usize::from(args.size);
    let fill = Fill::new(request, size, args.pull, launch::launcher(), &mut print)?;
    let filled = on_client(args.backend, fill)?;
    eprintln!("agentc: {filled}");
    Ok(0)
}

/// Lists every pool member.
struct List;

impl OnClient for List {
    type Output = Vec<Member>;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Vec<Member>, Failure> {
        engine_pool::members(client, None)
            .await
            .map_err(session_failure)
    }
}

/// Runs `agentc pool ls`.
fn ls(args: PoolLsArgs) -> Result<u8, Failure> {
    let mut members = on_client(args.backend, List)?;
    members.sort_by(|a, b| {
        (&a.sandbox.profile, &a.sandbox.name).cmp(&(&b.sandbox.profile, &b.sandbox.name))
    });
    let state = |member: &Member| if member.idle { "idle" } else { "claimed" };
    match args.format {
        PoolFormat::Json => {
            let rows: Vec<serde_json::Value> = members
                .iter()
                .map(|member| {
                    serde_json::json!({
                        "name": member.sandbox.name,
                        "profile": member.sandbox.profile,
                        "key": member.key,
                        "state": state(member),
                        "status": member.state,
                        "member": member.member_name,
                    })
                })
                .collect();
            println!("{}", serde_json::Value::Array(rows));
        }
        PoolFormat::Table => {
            let rows: Vec<[String; 5]> = members
                .iter()
                .map(|member| {
                    [
                        member.sandbox.name.clone(),
                        member.sandbox.profile.clone(),
                        short_key(&member.key).to_string(),
                        state(member).to_string(),
                        member.state.clone(),
                    ]
                })
                .collect();
            print!(
                "{}",
                crate::table::table(["NAME", "PROFILE", "KEY", "STATE", "STATUS"], &rows)
            );
        }
    }
    Ok(0)
}

/// Drains the idle members of one profile's pool, or of every pool.
struct Drain(Option<String>);

impl OnClient for Drain {
    type Output = (Vec<String>, Vec<String>);

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Self::Output, Failure> {
        engine_pool::drain(client, self.0.as_deref(), None)
            .await
            .map_err(session_failure)
    }
}

/// Runs `agentc pool drain`.
fn drain(args: PoolDrainArgs) -> Result<u8, Failure> {
    let profile = match args.profile {
        Some(profile) if is_profile_path(&profile) => {
            Some(context::load_profile(Path::new(&profile))?.profile.name)
        }
        other => other,
    };
    let (removed, failed) = on_client(args.backend, Drain(profile))?;
    for names in removed {
        println!("removed {names}");
    }
    if failed.is_empty() {
        Ok(0)
    } else {
        Err(Failure::new(
            context::EXIT_DOCKER,
            format!("could not remove every member: {}", failed.join("; ")),
        ))
    }
}

/// What `agentc run` hands [`claim_on`].
pub struct ClaimRequest<'a> {
    /// The loaded profile.
    pub loaded: &'a LoadedProfile,
    /// Its file.
    pub profile: &'a Path,
    /// `--image`.
    pub image: Option<String>,
    /// The invocation's `AGENTC_*` overrides ([`crate::cli::LaunchArgs::overrides`]).
    pub overrides: &'a BTreeMap<String, String>,
    /// The claim's launch, as `run` resolved it (with the agent arguments and the runtime its
    /// isolation floor was met with).
    pub spec: &'a LaunchSpec,
    /// `--pool`.
    pub mode: PoolMode,
    /// `--name`: a member cannot take it (its egress companion is named after the member),
    /// so a named run starts cold.
    pub name: Option<String>,
}

/// The claim of `agentc run` over `client` (the launch's own engine port), for its launch
/// resolved with the runtime its isolation floor was met with: `Some(status)` when a warm member
/// served it, `None` when it starts cold (said on stderr when the profile has a pool; with
/// `--pool require` a failure instead, exit 65 with a hint). The claim is the library's
/// ([`warm::claim_launch`]); this prints what it found and runs the command.
pub async fn claim_on<P: SessionPort>(
    client: &Sandboxes<P>,
    request: ClaimRequest<'_>,
) -> Result<Option<u8>, Failure> {
    if request.mode == PoolMode::Off {
        return Ok(None);
    }
    let placed = launch::container_of(request.spec)?;
    let base = detached_launch(
        request.loaded,
        request.profile,
        request.image.clone(),
        request.overrides,
    )?;
    let job = ClaimJob {
        request,
        base: &base,
        placed,
    };
    job.run(client).await
}

struct ClaimJob<'a> {
    request: ClaimRequest<'a>,
    base: &'a LaunchSpec,
    placed: &'a ContainerSpec,
}

impl ClaimJob<'_> {
    /// A cold start: said on stderr when the profile has pool members (`pooled`), or with
    /// `--pool require` the failure (exit 65) with a hint.
    fn cold(&self, why: &Cold, pooled: bool) -> Result<Option<u8>, Failure> {
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
        if self.request.mode == PoolMode::Require {
            let profile = &self.request.loaded.profile.name;
            return Err(Failure::new(
                EXIT_INVALID,
                format!("--pool require: no warm start for {profile}: {reason}\n  hint: {hint}"),
            ));
        }
        if pooled {
            eprintln!("agentc: cold start: {reason}");
        } else {
            // No pool: nothing to say; the cold launch reports what is wrong with the engine.
            log::debug!("no warm start: {reason}");
        }
        Ok(None)
    }

    /// The claim over `client`, printed; the command run in the member claimed.
    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Option<u8>, Failure> {
        // Listen before the claim renames a member: a signal then is never lost, and the
        // member claimed is removed again.
        let mut signals = Signals::new()?;
        let placed = self.placed;
        let secret = move || secret_for(placed).map_err(|failure| failure.message);
        let env = launch::process_env();
        let found = warm::claim_launch(
            client,
            &LaunchClaim {
                base: self.base,
                spec: self.request.spec,
                placed: self.placed,
                env: &env,
                secret: &secret,
                name: self.request.name.as_deref(),
            },
        )
        .await
        .map_err(session_failure)?;
        let claimed = match found {
            WarmStart::Cold { why, pooled } => return self.cold(&why, pooled),
            WarmStart::Claimed(claimed) => claimed,
        };
        for name in &claimed.drained {
            eprintln!("agentc: removed stale pool member {name} ({STALE})");
        }
        let member = &claimed.member;
        eprintln!(
            "agentc: warm start from pool (member {}, now {})",
            member.member_name, member.sandbox.name
        );
        if let Some(signal) = signals.recv().now_or_never() {
            let _ = engine_pool::discard(client, member).await;
            let cleanup = Some(format!(
                "removed the claimed member {}",
                member.sandbox.name
            ));
            let interrupted = ExecError::Interrupted { signal, cleanup };
            return Err(session_failure(SessionError::Launch(interrupted)));
        }
        self.run_claimed(client, &claimed).await
    }

    /// The launch's command run in the member `claimed`: for a detached launch in the
    /// background (printed as a started launch is), else on this terminal, the member then
    /// removed as `--rm` does.
    async fn run_claimed<P: SessionPort>(
        &self,
        client: &Sandboxes<P>,
        claimed: &Claimed,
    ) -> Result<Option<u8>, Failure> {
        let member = &claimed.member;
        let container = launch::container_of(self.request.spec)?;
        if container.detach {
            // What is printed of it first: the exec's attach takes its connection to the Engine
            // API for itself, so a request after it would open another.
            let inspect = client
                .inspect(&member.sandbox)
                .await
                .map_err(session_failure)?;
            // The launch's command in the background, its output in the container's logs.
            warm::start_detached(client, claimed)
                .await
                .map_err(session_failure)?;
            launch::print_started(&inspect, &container.network);
            return Ok(Some(0));
        }
        // Attached: the command on this terminal, then the member removed, as `--rm` does.
        let mut exec = ExecRequest::new(claimed.command.iter().cloned());
        exec.env = claimed.secrets.clone();
        if container.interactive {
            exec.stdin = ExecStdin::Terminal;
        }
        exec.tty = container.tty && std::io::stdin().is_terminal();
        let status = run_exec(client, &member.sandbox, exec, &mut ProcessStdio).await;
        if let Err(left) = engine_pool::discard(client, member).await {
            eprintln!("agentc: warning: could not remove the claimed member: {left}");
        }
        status.map(Some)
    }
}
