//! `agentc apply` and `agentc rollback`: the library's deployment of a profile and its return
//! to the image before ([`agentc_host::lifecycle::apply`]: recorded in the profile's state
//! file under an exclusive lock, the state written last and atomically), run on this
//! machine's engine through the backend asked for; this module prints what they say.

use agentc_host::lifecycle::apply::{Apply, ApplyEvent, HostDeployer, Rollback};
use agentc_policy::Hinted;

use crate::cli::{ApplyArgs, BackendArg, RollbackArgs};
use crate::commands::launch;
use crate::context::Failure;

/// This process's deployer: its launcher through `backend`.
fn deployer(backend: BackendArg) -> HostDeployer {
    HostDeployer::new(launch::launcher(), backend.into())
}

/// Runs `agentc apply`.
pub fn apply(args: ApplyArgs) -> Result<u8, Failure> {
    let mut print = |event: ApplyEvent<'_>| match event {
        ApplyEvent::Note(line) => launch::notify(line),
        ApplyEvent::Hinted(note) => launch::notify(&note.with_hint().to_string()),
        ApplyEvent::Built(tag) => println!("built {tag}"),
        ApplyEvent::Started(started) => println!("{started}"),
        ApplyEvent::SeedUnchanged(target) => {
            println!("seed {target}: unchanged since the last apply")
        }
        ApplyEvent::Seeded(target) => println!("seeded {target}"),
    };
    let apply = Apply {
        profile: args.profile,
        pull: args.pull,
        events: &mut print,
    };
    let report = apply.run(&mut deployer(args.backend))?;
    println!("{report}");
    Ok(0)
}

/// Runs `agentc rollback`.
pub fn rollback(args: RollbackArgs) -> Result<u8, Failure> {
    let rollback = Rollback {
        profile: args.profile,
    };
    let report = rollback.run(&mut deployer(args.backend))?;
    println!("{report}");
    Ok(0)
}
