//! `agentc pool fill|ls|drain` and the claim of `agentc run` (warm pools, issue 22).
//!
//! A member is the profile's launch exactly as `agentc run --detach` resolves and starts it
//! (through [`launch::execute`], its egress companion included), made a member by
//! [`agentc_policy::pool::member_spec`]: named `agentc-pool-PROFILE-RANDOM`, labelled with
//! the pool key, idling instead of running the launch's command. A claim renames an idle
//! member of the launch's key and runs the launch's command in it through exec
//! ([`agentc_engine::pool`], written once over [`SandboxClient`]).
//!
//! The keys a member's egress proxy holds are read at fill, from the filler's environment:
//! the member carries their fingerprints under the user's own key ([`pool_secret`]), and a
//! claim takes only a member whose fingerprints are those of its own environment; the others
//! are drained, as members of another key are.

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::path::Path;

use agentc_engine::pool::{self, Member, Wanted};
use agentc_engine::session::{
    ExecRequest, ExecStdin, SandboxClient, Sandboxes, SessionError, SessionPort,
};
use agentc_engine::ExecError;
use agentc_policy::pool::{
    claim_command, claim_secrets, cold_reason, credential_fingerprints, member_name, member_spec,
    pool_key,
};
use agentc_policy::{Action, ContainerSpec, EnvValue, Instance, LaunchSpec, LoadedProfile, Start};
use futures_util::FutureExt;

use crate::cli::{
    BackendArg, KindArg, LaunchArgs, PoolCommand, PoolDrainArgs, PoolFillArgs, PoolFormat,
    PoolLsArgs, PoolMode,
};
use crate::commands::session::{
    is_profile_path, on_client, run_exec, session_failure, OnClient, Signals,
};
use crate::commands::{launch, pool_secret};
use crate::context::{self, Failure, EXIT_INVALID};

/// Runs `agentc pool ...`.
pub fn pool(command: PoolCommand) -> Result<u8, Failure> {
    match command {
        PoolCommand::Fill(args) => fill(args),
        PoolCommand::Ls(args) => ls(args),
        PoolCommand::Drain(args) => drain(args),
    }
}

/// The launch `agentc run --detach PROFILE` resolves, with the claim's `agent_args` and the
/// invocation's `overrides`.
fn detached_launch(
    loaded: &LoadedProfile,
    profile: &Path,
    image: Option<String>,
    agent_args: Vec<String>,
    overrides: &BTreeMap<String, String>,
    start: Start,
) -> Result<LaunchSpec, Failure> {
    let args = LaunchArgs {
        profile: profile.to_path_buf(),
        kind: KindArg::Run,
        workspace: None,
        image,
        seed_target: None,
        agent_args,
        overrides: overrides.clone(),
        build_args: Default::default(),
    };
    let detach = start != Start::AsLaunched;
    let instance = Instance {
        start,
        default_name: detach
            .then(|| format!("agentc-run-{}-{}", loaded.profile.name, std::process::id())),
        name: None,
        copy: None,
        stdin_is_terminal: std::io::stdin().is_terminal(),
        profile_record: context::profile_record(profile),
        own_home: false,
    };
    context::resolve_instance(loaded, &args, instance)
}

/// The fingerprints of the keys `container`'s egress proxy reads from `env`
/// ([`credential_fingerprints`] under the user's [`pool_secret`]); none, and the user's key
/// not read, without a credential binding.
fn fingerprints(
    container: &ContainerSpec,
    env: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, Failure> {
    let bound = container
        .egress
        .as_ref()
        .is_some_and(|egress| !egress.credentials.is_empty());
    if !bound {
        return Ok(BTreeMap::new());
    }
    let secret = pool_secret::load_or_create()?;
    Ok(credential_fingerprints(container, env, &secret))
}

/// Why a member was removed as stale, as fill and claim say it.
const STALE: &str = "the profile, image, runtime or a credential's key changed, or it stopped";

/// The pool key of `base` (the launch without the claim's arguments) on this engine.
async fn key_of<C: SandboxClient>(
    client: &C,
    base: &LaunchSpec,
    runtime: Option<&str>,
) -> Result<(String, agentc_engine::session::ImageFacts), SessionError> {
    let image = match &base.action {
        agentc_policy::Action::Container(container) => container.image.clone(),
        agentc_policy::Action::Build(build) => build.tag.clone(),
    };
    let facts = client.image_facts(&image).await?;
    let key = pool_key(base.digest().unwrap_or_default(), &facts.id, runtime);
    Ok((key, facts))
}

/// The first 12 characters of a key, as `pool ls` shows it.
fn short(key: &str) -> &str {
    &key[..key.len().min(12)]
}

/// Phase one of a fill: the key, the stale members drained, the idle members of the key
/// (and of the filler's keys, `credentials`).
struct Prepare<'a> {
    base: &'a LaunchSpec,
    runtime: Option<String>,
    credentials: &'a BTreeMap<String, String>,
    pull: bool,
}

impl OnClient for Prepare<'_> {
    type Output = (String, usize);

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<(String, usize), Failure> {
        let container = launch::container_of(self.base)?;
        if self.pull {
            let mut notify = launch::notify;
            agentc_engine::image::ensure_image(client.port(), &container.image, true, &mut notify)
                .await
                .map_err(launch::exec_failure)?;
        }
        let (key, _) = key_of(client, self.base, self.runtime.as_deref())
            .await
            .map_err(session_failure)?;
        let profile = &self.base.profile;
        let wanted = Wanted {
            key: &key,
            credentials: self.credentials,
        };
        let (removed, failed) = pool::drain(client, Some(profile), Some(&wanted))
            .await
            .map_err(session_failure)?;
        for names in removed {
            eprintln!("agentc: removed stale pool member {names} ({STALE})");
        }
        for left in failed {
            eprintln!("agentc: warning: could not remove a stale pool member: {left}");
        }
        let idle = pool::members(client, Some(profile))
            .await
            .map_err(session_failure)?
            .iter()
            .filter(|member| member.idle && member.running() && !member.stale(&wanted))
            .count();
        Ok((key, idle))
    }
}

/// Runs `agentc pool fill`.
fn fill(args: PoolFillArgs) -> Result<u8, Failure> {
    let loaded = context::load_profile(&args.profile)?;
    let base = detached_launch(
        &loaded,
        &args.profile,
        args.image.clone(),
        Vec::new(),
        &BTreeMap::new(),
        Start::Detached,
    )?;
    if let Some(reason) = cold_reason(&base) {
        return Err(Failure::new(
            EXIT_INVALID,
            format!(
                "profile {}: cannot be pooled: {reason}\n  hint: `agentc run` starts it cold",
                loaded.profile.name
            ),
        ));
    }
    // The isolation floor, met once for the fill: the key's runtime and every member's.
    let placed = launch::meet_floor(launch::container_of(&base)?, &base.profile, args.backend)?;
    // The keys the members' proxies read: the filler's, from the environment they launch with.
    let credentials = fingerprints(&placed, &launch::process_env())?;
    let (key, idle) = on_client(
        args.backend,
        Prepare {
            base: &base,
            runtime: placed.runtime.clone(),
            credentials: &credentials,
            pull: args.pull,
        },
    )?;
    let mut placed_base = base.clone();
    placed_base.action = Action::Container(Box::new(placed));
    let size = usize::from(args.size);
    for _ in idle..size {
        let suffix = pool::random_suffix().map_err(session_failure)?;
        let name = member_name(&loaded.profile.name, &suffix);
        let member =
            member_spec(&placed_base, &key, &name, &suffix, &credentials).map_err(|reason| {
                Failure::new(
                    EXIT_INVALID,
                    format!("profile {}: {reason}", loaded.profile.name),
                )
            })?;
        let placed = launch::container_of(&member)?.clone();
        launch::execute_placed(&member, Some(placed), args.backend, false)?;
    }
    eprintln!(
        "agentc: pool of {} holds {} idle member(s) (key {})",
        loaded.profile.name,
        size.max(idle),
        short(&key)
    );
    Ok(0)
}

/// Lists every pool member.
struct List;

impl OnClient for List {
    type Output = Vec<Member>;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Vec<Member>, Failure> {
        pool::members(client, None).await.map_err(session_failure)
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
                        short(&member.key).to_string(),
                        state(member).to_string(),
                        member.state.clone(),
                    ]
                })
                .collect();
            let header = ["NAME", "PROFILE", "KEY", "STATE", "STATUS"].map(str::to_string);
            let mut widths = header.clone().map(|cell| cell.len());
            for row in &rows {
                for (width, cell) in widths.iter_mut().zip(row) {
                    *width = (*width).max(cell.len());
                }
            }
            for row in std::iter::once(&header).chain(&rows) {
                let line: Vec<String> = row
                    .iter()
                    .zip(widths)
                    .map(|(cell, width)| format!("{cell:width$}"))
                    .collect();
                println!("{}", line.join("  ").trim_end());
            }
        }
    }
    Ok(0)
}

/// Drains the idle members of one profile's pool, or of every pool.
struct Drain(Option<String>);

impl OnClient for Drain {
    type Output = (Vec<String>, Vec<String>);

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Self::Output, Failure> {
        pool::drain(client, self.0.as_deref(), None)
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

/// What `agentc run` hands [`try_claim`].
pub struct ClaimRequest<'a> {
    /// The loaded profile.
    pub loaded: &'a LoadedProfile,
    /// Its file.
    pub profile: &'a Path,
    /// `--image`.
    pub image: Option<String>,
    /// The invocation's `AGENTC_*` overrides ([`LaunchArgs::overrides`]).
    pub overrides: &'a BTreeMap<String, String>,
    /// The claim's launch, as `run` resolved it (with the agent arguments).
    pub spec: &'a LaunchSpec,
    /// `--pool`.
    pub mode: PoolMode,
    /// `--backend`.
    pub backend: BackendArg,
    /// `--name`: a member cannot take it (its egress companion is named after the member),
    /// so a named run starts cold.
    pub name: Option<String>,
}

/// What [`try_claim`] found.
pub enum Claimed {
    /// A warm member served the launch: its exit status.
    Warm(u8),
    /// The launch starts cold; with the launch's container as [`launch::meet_floor`]
    /// returned it when the claim met the floor (`None` with `--pool off`), for
    /// [`launch::execute_placed`].
    Cold(Option<Box<ContainerSpec>>),
}

/// The claim of `agentc run`: [`Claimed::Warm`] when a warm member served the launch,
/// [`Claimed::Cold`] when it starts cold (said on stderr when the profile has a pool, or with
/// `--pool require`, which fails instead with exit 65 and a hint).
pub fn try_claim(request: ClaimRequest<'_>) -> Result<Claimed, Failure> {
    if request.mode == PoolMode::Off {
        return Ok(Claimed::Cold(None));
    }
    let base = detached_launch(
        request.loaded,
        request.profile,
        request.image.clone(),
        Vec::new(),
        request.overrides,
        Start::Detached,
    )?;
    let backend = request.backend;
    // The floor of the claim's own launch (the runtime it chooses is the profile's, the same
    // for `base`): the pool key's runtime, and the cold launch's container.
    let placed = launch::meet_floor(
        launch::container_of(request.spec)?,
        &request.spec.profile,
        backend,
    )?;
    let runtime = placed.runtime.clone();
    let warm = on_client(
        backend,
        ClaimJob {
            request,
            base: &base,
            runtime,
        },
    )?;
    Ok(match warm {
        Some(status) => Claimed::Warm(status),
        None => Claimed::Cold(Some(Box::new(placed))),
    })
}

struct ClaimJob<'a> {
    request: ClaimRequest<'a>,
    base: &'a LaunchSpec,
    runtime: Option<String>,
}

impl OnClient for ClaimJob<'_> {
    type Output = Option<u8>;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Option<u8>, Failure> {
        let ClaimJob {
            request,
            base,
            runtime,
        } = self;
        let profile = request.loaded.profile.name.clone();
        let require = request.mode == PoolMode::Require;
        let fill_hint = format!(
            "  hint: `agentc pool fill {} --size N` starts idle members",
            request.profile.display()
        );
        let cold_hint = |reason: String, hint: &str| -> Result<Option<u8>, Failure> {
            if require {
                Err(Failure::new(
                    EXIT_INVALID,
                    format!("--pool require: no warm start for {profile}: {reason}\n{hint}"),
                ))
            } else {
                eprintln!("agentc: cold start: {reason}");
                Ok(None)
            }
        };
        let cold = |reason: String| cold_hint(reason, &fill_hint);
        // The members' list and the image's inspect (its ID is part of the key) do not
        // depend on each other: asked at once (two `docker` processes side by side through
        // the CLI backend), the claim waits for the slower, not for both.
        let (listed, keyed) = futures_util::future::join(
            pool::members(client, Some(&profile)),
            key_of(client, base, runtime.as_deref()),
        )
        .await;
        let members = match listed {
            Ok(members) => members,
            // With auto, the cold launch reports what is wrong with the engine itself.
            Err(error) if !require => {
                log::debug!("no warm start: cannot list the pool members: {error}");
                return Ok(None);
            }
            Err(error) => return Err(session_failure(error)),
        };
        if members.is_empty() && !require {
            return Ok(None);
        }
        // What no fill can change: the hint says how to start it, not to fill (which refuses).
        let starts_cold = "  hint: this launch cannot be served by a pool member; `agentc run` \
                           without `--pool require` starts it cold";
        if let Some(reason) = cold_reason(request.spec) {
            return cold_hint(reason, starts_cold);
        }
        if let Some(name) = &request.name {
            return cold_hint(
                format!("--name {name}: a pool member keeps the egress companion of its own name"),
                "  hint: drop --name to claim a member (its name is agentc-claim-...), or run \
                 without `--pool require` to start it cold under that name",
            );
        }
        let container = launch::container_of(request.spec)?;
        let (key, facts) = match keyed {
            Ok(found) => found,
            Err(error) => return cold(format!("cannot compute the pool key: {error}")),
        };
        let secrets = claim_secrets(container);
        // A secret the profile holds (a proxy URL's credentials) before the environment's.
        let env = container.held_secrets.over(&launch::process_env());
        if let Some(missing) = secrets.iter().find(|var| {
            matches!(var.value, EnvValue::Secret { required: true }) && !env.contains_key(&var.name)
        }) {
            return Err(Failure::new(
                EXIT_INVALID,
                format!(
                    "the launch passes {} from the environment, which is not set\n  hint: export it before `agentc run`",
                    missing.name
                ),
            ));
        }
        // The keys a member's proxy holds must be the ones this environment has.
        let credentials = match fingerprints(container, &launch::process_env()) {
            Ok(credentials) => credentials,
            Err(failure) => {
                return cold(format!(
                    "cannot fingerprint the egress proxy's keys: {}",
                    failure.message
                ))
            }
        };
        let wanted = Wanted {
            key: &key,
            credentials: &credentials,
        };
        let changed: BTreeSet<String> = members
            .iter()
            .filter(|member| member.idle && member.running() && member.key == key)
            .flat_map(|member| member.changed_credentials(&wanted))
            .collect();
        let mut signals = Signals::new()?;
        let start = usize::from_str_radix(&pool::random_suffix().map_err(session_failure)?, 16)
            .unwrap_or_default();
        let claim = pool::claim(client, members, &wanted, start)
            .await
            .map_err(session_failure)?;
        for name in &claim.drained {
            eprintln!("agentc: removed stale pool member {name} ({STALE})");
        }
        let Some(member) = claim.claimed else {
            if !changed.is_empty() {
                let names: Vec<String> = changed.into_iter().collect();
                return cold_hint(
                    format!(
                        "the credential{} {} changed since the pool was filled (its proxies hold another key: another user's, or one rotated since); those members were removed",
                        if names.len() == 1 { "" } else { "s" },
                        names.join(", ")
                    ),
                    &format!(
                        "  hint: `agentc pool fill {} --size N` fills the pool again with the keys of this environment",
                        request.profile.display()
                    ),
                );
            }
            return cold(format!(
                "the pool of {profile} has no idle member of key {}",
                short(&key)
            ));
        };
        eprintln!(
            "agentc: warm start from pool (member {}, now {})",
            member.member_name, member.sandbox.name
        );
        if let Some(signal) = signals.recv().now_or_never() {
            let _ = pool::discard(client, &member).await;
            return Err(session_failure(SessionError::Launch(
                ExecError::Interrupted {
                    signal,
                    cleanup: Some(format!(
                        "removed the claimed member {}",
                        member.sandbox.name
                    )),
                },
            )));
        }
        let command = claim_command(container, &facts.entrypoint, &facts.cmd);
        if command.is_empty() {
            let _ = pool::discard(client, &member).await;
            return cold("the launch has no command to run".to_string());
        }
        if container.detach {
            // The launch's command in the background, its output in the container's logs.
            let mut exec = ExecRequest::new(
                [
                    "sh",
                    "-c",
                    "if [ -w /proc/1/fd/1 ]; then \"$@\" </dev/null >/proc/1/fd/1 2>/proc/1/fd/2 & else \"$@\" </dev/null >/dev/null 2>&1 & fi",
                    "sh",
                ]
                .into_iter()
                .map(str::to_string)
                .chain(command),
            );
            exec.env = secrets;
            let output = client
                .exec_output(&member.sandbox, &exec)
                .await
                .map_err(session_failure)?;
            if output.exit_code != 0 {
                let _ = pool::discard(client, &member).await;
                return Err(Failure::new(
                    context::EXIT_DOCKER,
                    format!(
                        "could not start the command in {}: {}",
                        member.sandbox.name,
                        String::from_utf8_lossy(&output.stderr).trim()
                    ),
                ));
            }
            let inspect = client
                .inspect(&member.sandbox)
                .await
                .map_err(session_failure)?;
            launch::print_started(&inspect, &container.network);
            return Ok(Some(0));
        }
        // Attached: the command on this terminal, then the member removed, as `--rm` does.
        let mut exec = ExecRequest::new(command);
        exec.env = secrets;
        if container.interactive {
            exec.stdin = ExecStdin::Terminal;
        }
        exec.tty = container.tty && std::io::stdin().is_terminal();
        let status = run_exec(client, &member.sandbox, exec).await;
        if let Err(left) = pool::discard(client, &member).await {
            eprintln!("agentc: warning: could not remove the claimed member: {left}");
        }
        status.map(Some)
    }
}
