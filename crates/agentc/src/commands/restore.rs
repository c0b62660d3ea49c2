//! `agentc restore` and `agentc fork`: the library's restore ([`agentc_host::restore::Restore`],
//! one step over one engine port: the snapshot's profile launched as `agentc run --detach`
//! launches it, with the snapshot's image, its contents put back), run through the backend
//! asked for; this module prints what it says as it goes.

use agentc_host::restore::{Restore, RestoreEvent};

use crate::cli::RestoreArgs;
use crate::commands::launch;
use crate::commands::session::on_client;
use crate::context::Failure;

/// Runs `agentc restore` and `agentc fork` (`count` sandboxes).
pub fn restore(args: RestoreArgs, count: u16) -> Result<u8, Failure> {
    let backend = super::snapshot::memory_backend(args.target.backend, args.memory);
    let mut print = |event: RestoreEvent<'_>| match event {
        RestoreEvent::Note(line) => launch::notify(line),
        RestoreEvent::Started(started) => println!("{started}"),
        RestoreEvent::PutBack {
            name,
            snapshot,
            report,
        } => println!(
            "restored {name} from {snapshot}: {} path(s), {} bytes",
            report.restored.len(),
            report.bytes
        ),
        RestoreEvent::Memory {
            name,
            snapshot,
            millis,
        } => println!("restored {name} from {snapshot} with its memory in {millis} ms"),
    };
    let restore = Restore {
        snapshot: args.snapshot,
        count,
        name: args.name,
        workspace: args.workspace,
        share_home: args.share_home,
        memory: args.memory,
        launcher: launch::launcher(),
        events: &mut print,
    };
    on_client(backend, restore)?;
    Ok(0)
}
