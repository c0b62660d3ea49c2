//! `agentc run` of one launch on the in-memory engine: cold without a pool (quietly), refused
//! under `--pool require`, and served warm by a member a fill started.

use agentc_engine::memory::MemoryEngine;
use agentc_engine::session::{Captured, Sandboxes};
use agentc_policy::Hinted;

use super::*;
use crate::memory_fixtures::{block_on, engine, launcher, profile_file};
use crate::pool::{Fill, FillEvent};
use crate::{load_profile, profile_record, EXIT_INVALID};

/// Runs the profile of `request` detached with `pool` over `client`: the status (or the
/// failure), the notes and the sandboxes said to have started.
fn run(
    client: &Sandboxes<MemoryEngine>,
    request: &LaunchRequest,
    pool: PoolUse,
) -> (Result<u8, Failure>, Vec<String>, Vec<String>) {
    let loaded = load_profile(&request.profile).expect("the profile loads");
    let instance = Instance {
        start: Start::Detached,
        default_name: Some("agentc-run-warm-test".to_string()),
        stdin_is_terminal: false,
        profile_record: profile_record(&request.profile),
        ..Instance::default()
    };
    let spec = resolve_instance(&loaded, request, instance.clone()).expect("it resolves");
    let (mut notes, mut started) = (Vec::new(), Vec::new());
    let mut events = |event: RunEvent<'_>| match event {
        RunEvent::Note(line) => notes.push(line.to_string()),
        RunEvent::Exited(exited) => notes.push(exited.with_hint().to_string()),
        RunEvent::Started(sandbox) => started.push(sandbox.name.clone()),
    };
    let mut output = Captured::default();
    let step = RunOne {
        loaded: &loaded,
        request,
        instance,
        spec: &spec,
        pool,
        pull: false,
        launcher: launcher(),
        output: &mut output,
        events: &mut events,
    };
    let status = block_on(step.run(client));
    (status, notes, started)
}

#[test]
fn without_a_pool_a_run_starts_cold_quietly_and_pool_require_refuses_it() {
    let (_dir, request) = profile_file("");
    let client = Sandboxes::over(engine(), Default::default());
    let (refused, notes, started) = run(&client, &request, PoolUse::Require);
    let refused = refused.unwrap_err();
    assert_eq!(refused.code, EXIT_INVALID);
    assert!(
        refused
            .message
            .starts_with("--pool require: no warm start for warm: ")
            && refused
                .with_hint()
                .to_string()
                .contains("--size N` starts idle members"),
        "{}",
        refused.with_hint()
    );
    assert!(
        notes.is_empty() && started.is_empty(),
        "{notes:?} {started:?}"
    );
    assert!(
        client.port().world().containers.is_empty(),
        "nothing was created"
    );

    let (status, notes, started) = run(&client, &request, PoolUse::Auto);
    assert_eq!(status.expect("it starts"), 0);
    assert_eq!(started.len(), 1, "{started:?}");
    assert!(notes.is_empty(), "no pool, nothing to say: {notes:?}");
}

#[test]
fn a_member_a_fill_started_serves_a_run_warm_and_off_starts_cold() {
    let (_dir, request) = profile_file("");
    let client = Sandboxes::over(engine(), Default::default());
    let mut quiet = |_: FillEvent<'_>| {};
    let fill = Fill::new(request.clone(), 1, false, launcher(), &mut quiet).expect("poolable");
    assert_eq!(block_on(fill.run(&client)).expect("filled").idle, 1);

    // `--pool off`: cold, the member left idle.
    let (status, _, started) = run(&client, &request, PoolUse::Off);
    assert_eq!((status.expect("it starts"), started.len()), (0, 1));

    let (status, notes, started) = run(&client, &request, PoolUse::Require);
    assert_eq!(status.expect("a member serves it"), 0);
    assert!(
        notes
            .iter()
            .any(|note| note.starts_with("warm start from pool (member agentc-pool-warm-")),
        "{notes:?}"
    );
    assert_eq!(started.len(), 1, "{started:?}");
    // The pool is empty now: another run under `--pool require` is refused.
    let (refused, _, _) = run(&client, &request, PoolUse::Require);
    assert_eq!(refused.unwrap_err().code, EXIT_INVALID);
}
