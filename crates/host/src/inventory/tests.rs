//! The listing and removal on the in-memory engine: what `agentc ps` and `agentc rm` do,
//! without a daemon.

use std::collections::BTreeMap;

use agentc_engine::memory::MemoryEngine;
use agentc_engine::session::{SandboxClient, Sandboxes};
use agentc_policy::Start;

use super::*;
use crate::memory_fixtures::{block_on, engine, launch};

/// A client over an engine holding both images, with `boxed` (behind the proxy) and `open`
/// (on the default bridge) started (also the session steps' engine).
pub(crate) fn two_sandboxes() -> Sandboxes<MemoryEngine> {
    let client = Sandboxes::over(engine(), BTreeMap::new());
    for (name, open) in [("boxed", false), ("open", true)] {
        block_on(client.create(&launch(name, open, Start::Session))).expect("the sandbox starts");
    }
    client
}

fn summary(profile: &str, kind: &str, state: &str) -> Summary {
    Summary {
        id: "0123456789abcdef0123".into(),
        name: format!("{profile}-{kind}"),
        image: "i".into(),
        profile: profile.into(),
        state: state.into(),
        status: String::new(),
        labels: [(LABEL_KIND.to_string(), kind.to_string())].into(),
    }
}

#[test]
fn filters_match_by_profile_kind_and_status() {
    let read = |filters: &[&str]| {
        Filters::parse(&filters.iter().map(|f| f.to_string()).collect::<Vec<_>>())
    };
    let none = read(&[]).unwrap();
    assert!(none.matches(&summary("a", "sandbox", "running"), false));
    assert!(!none.matches(&summary("a", "sandbox", "exited"), false));
    // A paused sandbox is up (frozen), so listed as a running one is (issue 23).
    assert!(none.matches(&summary("a", "sandbox", "paused"), false));
    assert!(none.matches(&summary("a", "sandbox", "exited"), true));
    let profile = read(&["profile=a", "profile=b"]).unwrap();
    assert!(profile.matches(&summary("b", "run", "running"), false));
    assert!(!profile.matches(&summary("c", "run", "running"), false));
    let both = read(&["profile=a", "kind=egress-proxy"]).unwrap();
    assert!(both.matches(&summary("a", "egress-proxy", "running"), false));
    assert!(!both.matches(&summary("a", "sandbox", "running"), false));
    // A status filter lists stopped containers without --all.
    let exited = read(&["status=exited"]).unwrap();
    assert!(exited.matches(&summary("a", "sandbox", "exited"), false));
    assert!(!exited.matches(&summary("a", "sandbox", "running"), true));
    for (bad, says) in [
        ("profile", "is not KEY=VALUE"),
        ("name=x", "unknown key \"name\""),
        (
            "status=up",
            "no container is in state \"up\"; the states are created, running",
        ),
    ] {
        let error = read(&[bad]).unwrap_err();
        assert!(error.contains(says), "{bad}: {error}");
    }
}

#[test]
fn the_listing_shows_each_sandbox_its_network_and_its_proxys_state() {
    let client = two_sandboxes();
    let listing = block_on(List::default().run(&client)).expect("a listing");
    let rows: BTreeMap<&str, &Row> = listing
        .rows
        .iter()
        .map(|row| (row.name.as_str(), row))
        .collect();
    assert_eq!(
        rows.keys().copied().collect::<Vec<_>>(),
        [
            "agentc-sandbox-boxed",
            "agentc-sandbox-boxed-egress-proxy",
            "agentc-sandbox-open"
        ],
    );
    let boxed = rows["agentc-sandbox-boxed"];
    assert_eq!(
        (boxed.profile.as_str(), boxed.kind.as_str()),
        ("boxed", "sandbox")
    );
    assert_eq!(boxed.network, "agentc-sandbox-boxed-egress");
    assert!(
        matches!(&boxed.egress, Some(EgressState::Up { proxy, .. }) if proxy == "agentc-sandbox-boxed-egress-proxy"),
        "{boxed:?}"
    );
    assert_eq!(boxed.profile_state, ProfileState::Unknown);
    // The proxy itself and a sandbox on the default bridge have no egress state.
    assert_eq!(rows["agentc-sandbox-boxed-egress-proxy"].egress, None);
    assert_eq!(
        (
            rows["agentc-sandbox-open"].network.as_str(),
            &rows["agentc-sandbox-open"].egress
        ),
        ("default", &None)
    );
    assert!(listing.volumes.is_empty(), "volumes were not asked for");

    // Filtered by kind, with the volumes: the proxy's two volumes are the profile's.
    let list = List {
        filters: Filters::parse(&["kind=sandbox".to_string()]).unwrap(),
        volumes: true,
        ..List::default()
    };
    let listing = block_on(list.run(&client)).expect("a listing");
    let names: Vec<&str> = listing.rows.iter().map(|row| row.name.as_str()).collect();
    assert_eq!(names, ["agentc-sandbox-boxed", "agentc-sandbox-open"]);
    assert!(
        !listing.volumes.is_empty()
            && listing
                .volumes
                .iter()
                .all(|(_, profile)| profile == "boxed"),
        "{:?}",
        listing.volumes
    );
}

#[test]
fn a_stopped_sandbox_is_listed_only_when_asked_for_and_ids_only_asks_nothing_more() {
    let client = two_sandboxes();
    client.port().exit("agentc-sandbox-open", 0);
    let names = |list: List| -> Vec<String> {
        let listing = block_on(list.run(&client)).expect("a listing");
        listing.rows.into_iter().map(|row| row.name).collect()
    };
    assert!(!names(List::default()).contains(&"agentc-sandbox-open".to_string()));
    let all = List {
        all: true,
        ..List::default()
    };
    assert!(names(all).contains(&"agentc-sandbox-open".to_string()));
    let exited = List {
        filters: Filters::parse(&["status=exited".to_string()]).unwrap(),
        ..List::default()
    };
    assert_eq!(names(exited), ["agentc-sandbox-open"]);

    let before = client.port().calls().len();
    let quiet = List {
        ids_only: true,
        ..List::default()
    };
    let listing = block_on(quiet.run(&client)).expect("a listing");
    let asked = client.port().calls().len() - before;
    assert_eq!(listing.rows.len(), 2, "{:?}", listing.rows);
    assert!(listing
        .rows
        .iter()
        .all(|row| row.network.is_empty() && row.egress.is_none()));
    assert_eq!(
        asked,
        1,
        "one listing and no inspect: {:?}",
        client.port().calls()
    );
}

#[test]
fn a_profiles_name_removes_its_one_sandbox_with_its_companion_and_volumes() {
    let client = two_sandboxes();
    let removal = Removal {
        target: RemoveTarget::Names(vec!["boxed".to_string()]),
        volumes: true,
        images: Vec::new(),
    };
    let removed = block_on(removal.run(&client)).expect("removed");
    // The sandbox, and its egress companion with it: the proxy, its network and its volume.
    assert_eq!(
        removed.containers,
        [
            "agentc-sandbox-boxed",
            "agentc-sandbox-boxed-egress-proxy",
            "network agentc-sandbox-boxed-egress",
            "volume agentc-sandbox-boxed-egress-audit",
        ]
    );
    let world = client.port().world();
    let left: Vec<&String> = world
        .containers
        .keys()
        .chain(world.networks.keys())
        .chain(world.volumes.keys())
        .filter(|name| name.starts_with("agentc-sandbox-boxed"))
        .collect();
    assert!(
        left.is_empty(),
        "left of boxed: {left:?}; removed {removed:?}"
    );
    assert!(
        world.containers.contains_key("agentc-sandbox-open"),
        "{world:?}"
    );

    // A name that is neither a container nor a profile's is refused, naming it.
    let removal = Removal {
        target: RemoveTarget::Names(vec!["nothing-here".to_string()]),
        volumes: false,
        images: Vec::new(),
    };
    let failure = block_on(removal.run(&client)).unwrap_err();
    assert!(
        failure
            .message
            .contains("no such container or profile nothing-here"),
        "{}",
        failure.message
    );
    assert!(client
        .port()
        .world()
        .containers
        .contains_key("agentc-sandbox-open"));
}
