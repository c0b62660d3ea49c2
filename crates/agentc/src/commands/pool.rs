//! `agentc pool fill|ls|drain` (warm pools, issue 22): the library's fill
//! ([`agentc_host::pool::Fill`]), listing and drain ([`agentc_engine::pool`]), printed.
//!
//! A member is the profile's launch exactly as `agentc run --detach` resolves and starts it
//! (its egress companion included), made a member by [`agentc_policy::pool::member_spec`]:
//! named `agentc-pool-PROFILE-RANDOM`, labelled with the pool key, idling instead of running
//! the launch's command. `agentc run`'s claim of one is [`agentc_host::run::RunOne`]'s.
//!
//! The keys a member's egress proxy holds are read at fill, from the filler's environment:
//! the member carries their fingerprints under the user's own key
//! ([`agentc_host::pool_secret`]), and a claim takes only a member whose fingerprints are
//! those of its own environment; the others are drained, as members of another key are.

use std::path::Path;

use agentc_engine::pool::{self as engine_pool, short_key, Member};
use agentc_engine::session::{Sandboxes, SessionPort};
use agentc_host::pool::{Fill, FillEvent};
use agentc_host::LaunchRequest;

use crate::cli::{PoolCommand, PoolDrainArgs, PoolFillArgs, PoolFormat, PoolLsArgs};
use crate::commands::launch;
use crate::commands::session::{is_profile_path, on_client, session_failure, OnClient};
use crate::context::{self, Failure};

/// Runs `agentc pool ...`.
pub fn pool(command: PoolCommand) -> Result<u8, Failure> {
    match command {
        PoolCommand::Fill(crate::cli::Sub(args)) => fill(args),
        PoolCommand::Ls(crate::cli::Sub(args)) => ls(args),
        PoolCommand::Drain(crate::cli::Sub(args)) => drain(args),
    }
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
