//! A fill on the in-memory engine: members started until the pool holds its size, none when
//! it does, and a launch no member could serve refused before the engine is asked.

use agentc_engine::session::Sandboxes;

use super::*;
use crate::memory_fixtures::{block_on, engine, launcher, profile_file};

/// Fills the pool of `request` to `size` over `client`: what it left and the members started.
fn fill(
    client: &Sandboxes<agentc_engine::memory::MemoryEngine>,
    request: &LaunchRequest,
    size: usize,
) -> (Filled, Vec<String>) {
    let mut started = Vec::new();
    let mut events = |event: FillEvent<'_>| {
        if let FillEvent::Started(member) = event {
            started.push(member.name.clone());
        }
    };
    let fill = Fill::new(request.clone(), size, false, launcher(), &mut events).expect("poolable");
    let filled = block_on(fill.run(client)).expect("filled");
    (filled, started)
}

#[test]
fn a_fill_starts_members_until_the_pool_holds_its_size() {
    let (_dir, request) = profile_file("");
    let client = Sandboxes::over(engine(), Default::default());
    let (filled, started) = fill(&client, &request, 2);
    assert_eq!((filled.profile.as_str(), filled.idle), ("warm", 2));
    assert_eq!(started.len(), 2, "{started:?}");
    assert!(
        started
            .iter()
            .all(|name| name.starts_with("agentc-pool-warm-")),
        "{started:?}"
    );
    assert_ne!(started[0], started[1]);
    assert!(filled
        .to_string()
        .starts_with("pool of warm holds 2 idle member(s) (key "));

    // Full already: nothing more; one more asked for: one more, under the same key.
    let (again, none) = fill(&client, &request, 2);
    assert_eq!((again.idle, none.len()), (2, 0));
    let (bigger, one) = fill(&client, &request, 3);
    assert_eq!((bigger.idle, one.len(), bigger.key), (3, 1, filled.key));
}

#[test]
fn a_launch_no_member_could_serve_is_refused_before_the_engine_is_asked() {
    // A fixed host port: only one sandbox could hold it.
    let (_dir, request) = profile_file("\n[network]\npublish = [\"127.0.0.1:18080:8080\"]\n");
    let mut events = |_: FillEvent<'_>| {};
    let refused = match Fill::new(request, 2, false, launcher(), &mut events) {
        Ok(_) => panic!("a fixed host port was pooled"),
        Err(refused) => refused,
    };
    assert_eq!(refused.code, EXIT_INVALID);
    assert!(
        refused.message.contains("profile warm: cannot be pooled:"),
        "{}",
        refused.message
    );
}
