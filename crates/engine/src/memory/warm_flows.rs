//! Warm pools on the memory engine: the pool key under an isolation floor (one key for the
//! command line's placed pool and a library caller's [`Pool::of`]), and a launch served by a
//! member ([`claim_launch`]) or started cold, with each reason, and the claimed command
//! started in the background or its member removed.

use std::collections::BTreeMap;

use agentc_policy::pool::pool_key;
use agentc_policy::{Action, Instance, LaunchKind, LaunchSpec, ResolveInputs, Start};

use super::{block_on, MemoryEngine};
use crate::pool::warm::{claim_launch, start_detached, Cold, LaunchClaim, WarmStart};
use crate::pool::{fill, members, Pool};
use crate::port::{EngineError, EngineErrorKind};
use crate::session::{SandboxClient, Sandboxes, SessionError};

const IMAGE: &str = "busybox:memory";
const PROXY_IMAGE: &str = "agentc-egress:memory";
const TOKEN: &str = "GATEWAY_TOKEN";

/// A custom sandbox running `sleep 600`, with `tables` after its image.
fn profile(tables: &str) -> String {
    format!(
        "name = \"warm\"\nagent = \"custom\"\n\n[image]\nref = \"{IMAGE}\"\n\
         command = [\"sleep\", \"600\"]\n\n[workspace]\nmount = false\n\n{tables}"
    )
}

/// Behind the egress proxy, holding one key.
const CREDENTIAL: &str = "[egress]\nhosts = [\"api.example.com\"]\n\n\
                          [credentials.gateway]\nfrom_env = \"GATEWAY_TOKEN\"\n\
                          hosts = [\"api.example.com\"]\nheader = \"Authorization\"\n\
                          scheme = \"bearer\"\n";

/// No network, and an isolation floor of gVisor.
const FLOOR: &str = "[egress]\nmode = \"deny\"\n\n[security]\nisolation = { min = \"gvisor\" }\n";

/// Every path a directory: the profile binds nothing of the host.
struct Directories;

impl agentc_policy::PathProbe for Directories {
    fn kind(&self, _path: &str) -> agentc_policy::PathKind {
        agentc_policy::PathKind::Directory
    }
}

/// The launch in the background of `text`, named `name` when given; its proxy image named so
/// that no agentc executable is imaged.
fn spec(text: &str, name: Option<&str>) -> LaunchSpec {
    let loaded = agentc_policy::load("warm.toml", text).expect("the profile loads");
    let inputs = ResolveInputs {
        instance: Instance {
            start: Start::Session,
            default_name: Some("warm-1".to_string()),
            name: name.map(str::to_string),
            ..Instance::default()
        },
        ..ResolveInputs::new(LaunchKind::Run, "/srv/task", "/srv/profiles", "/home/dev")
    };
    let mut spec = agentc_policy::resolve(&loaded, &inputs, &Directories).expect("it resolves");
    if let Action::Container(container) = &mut spec.action {
        if let Some(egress) = &mut container.egress {
            egress.proxy.image = PROXY_IMAGE.to_string();
        }
    }
    spec
}

fn container(spec: &LaunchSpec) -> &agentc_policy::ContainerSpec {
    match &spec.action {
        Action::Container(container) => container,
        Action::Build(_) => panic!("a container launch"),
    }
}

fn env(key: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(TOKEN.to_string(), key.to_string())])
}

fn engine() -> MemoryEngine {
    MemoryEngine::default()
        .with_image(IMAGE)
        .with_image(PROXY_IMAGE)
}

/// The caller's key for the fingerprints.
fn secret() -> Result<Vec<u8>, String> {
    Ok(b"the caller's key".to_vec())
}

/// [`claim_launch`] of `spec` (its own pool's launch too), unplaced (no floor), from `env`,
/// named `name` when the launch asked for one.
fn claim(
    client: &Sandboxes<MemoryEngine>,
    spec: &LaunchSpec,
    env: &BTreeMap<String, String>,
    name: Option<&str>,
) -> WarmStart {
    let request = LaunchClaim {
        base: spec,
        spec,
        placed: container(spec),
        env,
        secret: &secret,
        name,
    };
    block_on(claim_launch(client, &request)).expect("the claim ran")
}

#[test]
fn the_pool_key_carries_the_floors_runtime_and_every_member_runs_under_it() {
    let host = std::fs::read_to_string("/proc/version").unwrap_or_default();
    let port = engine().with_probe("runc", Ok(&host)).with_probe(
        "runsc",
        Ok("Linux version 4.4.0\n[ 0.0] Starting gVisor...\n"),
    );
    port.set_runtimes(crate::EngineRuntimes {
        engine: "memory 1".into(),
        default: Some("runc".into()),
        runtimes: ["runc", "runsc"]
            .map(|name| (name.to_string(), crate::RuntimeFacts::default()))
            .into(),
    });
    let settings = BTreeMap::from([("AGENTC_ISOLATION_CACHE".to_string(), "off".to_string())]);
    let client = Sandboxes::over(port, settings.clone());
    let spec = spec(&profile(FLOOR), None);
    let pool = block_on(Pool::of(&client, &spec, &settings, b"key")).expect("a pool");
    assert_eq!(pool.runtime.as_deref(), Some("runsc"));
    let image = client.port().world().images[IMAGE].id.clone();
    let digest = spec.digest().expect("a digest");
    assert_eq!(pool.key, pool_key(digest, &image, Some("runsc")));
    assert_ne!(pool.key, pool_key(digest, &image, None));
    // The command line's way (the floor met first, then the placed pool) keys it the same.
    let met = block_on(client.meet_floor(container(&spec), &spec.profile)).expect("met");
    let placed = block_on(Pool::placed(
        &client,
        &spec,
        &met.container,
        &settings,
        b"key",
    ));
    assert_eq!(placed.expect("a pool").key, pool.key);
    let created = block_on(fill(&client, &spec, &pool, 1)).expect("filled");
    let world = client.port().world();
    let member = &world.containers[&created[0].name];
    assert_eq!(member.runtime.as_deref(), Some("runsc"));
    assert_eq!(member.labels[agentc_policy::pool::LABEL_POOL], pool.key);
}

#[test]
fn a_launch_claims_a_member_or_says_why_it_starts_cold() {
    let client = Sandboxes::over(engine(), env("gw-one"));
    let before = client.port().world();
    let spec = spec(&profile(CREDENTIAL), None);
    // No member: cold, and no news (`pooled` false); no secret asked for.
    let refuse = || -> Result<Vec<u8>, String> { panic!("the secret is not asked for") };
    let request = LaunchClaim {
        base: &spec,
        spec: &spec,
        placed: container(&spec),
        env: &env("gw-one"),
        secret: &refuse,
        name: None,
    };
    let found = block_on(claim_launch(&client, &request)).expect("the claim ran");
    assert!(
        matches!(&found, WarmStart::Cold { why: Cold::Unfilled(why), pooled: false } if why.contains("no idle member")),
        "{found:?}"
    );
    let pool = block_on(Pool::of(&client, &spec, &env("gw-one"), &secret().unwrap()));
    let pool = pool.expect("a pool");
    block_on(fill(&client, &spec, &pool, 1)).expect("filled");
    // A launch named apart cannot take a member.
    let named = self::spec(&profile(CREDENTIAL), Some("mine"));
    let found = claim(&client, &named, &env("gw-one"), Some("mine"));
    assert!(
        matches!(&found, WarmStart::Cold { why: Cold::Named(name), pooled: true } if name == "mine"),
        "{found:?}"
    );
    // Another key in this environment: the member holding the old one is removed.
    let found = claim(&client, &spec, &env("gw-rotated"), None);
    let WarmStart::Cold { why, pooled: true } = &found else {
        panic!("{found:?}")
    };
    assert_eq!(why, &Cold::CredentialsChanged(vec!["gateway".to_string()]));
    assert!(why
        .reason()
        .starts_with("the credential gateway changed since"));
    assert!(block_on(members(&client, Some("warm"))).unwrap().is_empty());
    // Filled again: claimed, with the launch's command, then started in the background.
    block_on(fill(&client, &spec, &pool, 2)).expect("filled");
    let found = claim(&client, &spec, &env("gw-one"), None);
    let WarmStart::Claimed(claimed) = found else {
        panic!("{found:?}")
    };
    assert_eq!(claimed.command, ["sleep", "600"]);
    assert!(!claimed.member.idle);
    block_on(start_detached(&client, &claimed)).expect("started");
    let exec = client.port().calls();
    assert!(exec.iter().any(|call| call.operation == "exec"), "{exec:?}");
    // A command that does not start removes its member.
    let found = claim(&client, &spec, &env("gw-one"), None);
    let WarmStart::Claimed(second) = found else {
        panic!("{found:?}")
    };
    let missing = EngineError::new(
        EngineErrorKind::Failed,
        "exec: \"sh\": executable file not found",
    );
    client.port().fail_operation("exec", missing);
    let refused = block_on(start_detached(&client, &second)).expect_err("not started");
    assert!(
        matches!(&refused, SessionError::NotStarted { name, .. } if *name == second.member.sandbox.name),
        "{refused}"
    );
    assert_eq!(refused.exit_code(), 125);
    let world = client.port().world();
    assert!(!world.containers.contains_key(&second.member.sandbox.name));
    let report = block_on(client.delete(&claimed.member.sandbox));
    assert!(report.removed && report.left.is_empty(), "{report:?}");
    assert_eq!(
        client.port().world().added_since(&before),
        Vec::<String>::new()
    );
}
