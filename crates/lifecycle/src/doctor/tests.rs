use super::*;
use crate::lock::Drift;

fn healthy() -> EngineFacts {
    EngineFacts {
        engine: Some(Engine::Docker),
        endpoint: "unix:///var/run/docker.sock".into(),
        unreachable: None,
        version: Some("27.3.1".into()),
        api_version: Some("1.47".into()),
        cli: Some(Ok("27.3.1".into())),
        backend: Some("api (the docker Engine API at unix:///var/run/docker.sock answers)".into()),
        runtimes: vec!["runc".into(), "runsc".into()],
        default_runtime: Some("runc".into()),
        cgroup_version: Some("2".into()),
        security_options: vec![
            "name=apparmor".into(),
            "name=seccomp,profile=builtin".into(),
            "name=userns".into(),
        ],
        max_user_namespaces: Some(63_000),
        isolated_network: Some(Ok(())),
        disk: Some(Ok(("/var/lib/docker".into(), 50 << 30))),
        rlimits_raisable: Some(true),
        gvisor: Some("/usr/bin/runsc".into()),
        egress_leftovers: Some(Ok(Vec::new())),
    }
}

fn status_of(checks: &[Check], id: &str) -> Status {
    checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no {id}"))
        .status
}

#[test]
fn a_healthy_engine_is_all_ok_and_every_listed_check_runs() {
    let checks = engine_checks(&healthy());
    assert_eq!(checks.len(), ENGINE_CHECKS.len());
    assert!(
        checks
            .iter()
            .all(|c| c.status == Status::Ok && c.fix.is_none()),
        "{checks:#?}"
    );
    assert_eq!(
        checks.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ENGINE_CHECKS.iter().map(|(id, _)| *id).collect::<Vec<_>>()
    );
}

#[test]
fn a_socket_that_refuses_this_user_is_told_apart_from_a_stopped_daemon() {
    for engine in [Engine::Docker, Engine::Podman] {
        let facts = EngineFacts {
            engine: Some(engine),
            endpoint: "unix:///var/run/docker.sock".into(),
            unreachable: Some(
                "/var/run/docker.sock: client error (Connect): Permission denied (os error 13)"
                    .into(),
            ),
            ..EngineFacts::default()
        };
        let checks = engine_checks(&facts);
        let engine_check = &checks[0];
        assert_eq!(engine_check.status, Status::Fail);
        assert!(
            engine_check.summary.contains("refuses this user"),
            "{engine_check:?}"
        );
        let fix = engine_check.fix.as_deref().unwrap();
        assert!(fix.contains("usermod -aG docker"), "{fix}");
        assert!(!fix.contains("systemctl start"), "{fix}");
    }
}

#[test]
fn an_unreachable_engine_fails_once_and_leaves_out_what_depends_on_it() {
    let facts = EngineFacts {
        endpoint: "unix:///var/run/docker.sock".into(),
        unreachable: Some("connection refused".into()),
        cli: Some(Err("not found".into())),
        ..EngineFacts::default()
    };
    let report = Report {
        engine: Engine::Docker,
        checks: engine_checks(&facts),
    };
    assert_eq!(
        report
            .checks
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>(),
        ["engine", "docker-cli"]
    );
    assert!(report.failed());
    let text = report.text();
    assert!(text.contains("fail  engine"), "{text}");
    assert!(text.contains("fix: start the daemon"), "{text}");
    assert!(text.ends_with("0 ok, 1 warn, 1 fail\n"), "{text}");
    assert_eq!(report.json()["fail"], 1);
}

#[test]
fn weaker_hosts_warn_and_missing_protections_fail() {
    let mut facts = healthy();
    facts.cgroup_version = Some("1".into());
    facts.security_options = vec!["name=seccomp,profile=unconfined".into()];
    facts.isolated_network = Some(Err("plugin not found".into()));
    facts.disk = Some(Ok(("/var/lib/docker".into(), 512 << 20)));
    facts.api_version = Some("1.40".into());
    let checks = engine_checks(&facts);
    for (id, status) in [
        ("api-version", Status::Fail),
        ("cgroup", Status::Warn),
        ("seccomp", Status::Fail),
        ("apparmor", Status::Warn),
        ("user-namespaces", Status::Warn),
        ("isolated-network", Status::Warn),
        ("disk", Status::Fail),
    ] {
        assert_eq!(status_of(&checks, id), status, "{id}");
        let check = checks.iter().find(|c| c.id == id).unwrap();
        assert!(check.fix.is_some(), "{id} has a fix");
    }
    facts.security_options.clear();
    assert_eq!(status_of(&engine_checks(&facts), "seccomp"), Status::Fail);
}

/// The user-namespace fix names the engine in use: Docker's daemon option, or Podman's own
/// ways (rootless, `userns = "auto"`), never Docker's under Podman.
#[test]
fn the_user_namespace_fix_names_the_engine_in_use() {
    for (engine, says, never) in [
        (Engine::Docker, "userns-remap: default", "Podman"),
        (Engine::Podman, "run Podman rootless", "Docker"),
    ] {
        let mut facts = healthy();
        facts.engine = Some(engine);
        facts.security_options = vec!["name=seccomp,profile=default".into()];
        let checks = engine_checks(&facts);
        let check = checks.iter().find(|c| c.id == "user-namespaces").unwrap();
        assert_eq!(check.status, Status::Warn, "{engine:?}");
        let fix = check.fix.as_deref().unwrap_or_default();
        assert!(
            fix.contains(says) && !fix.contains(never),
            "{engine:?}: {fix}"
        );
    }
}

#[test]
fn profile_checks_judge_images_networks_secrets_deployment_and_lock() {
    let id = format!("sha256:{}", "1".repeat(64));
    let facts = ProfileFacts {
        file: "dev.toml".into(),
        images: vec![
            ("dev:latest".into(), false, true),
            ("decant:1".into(), false, false),
            ("box:1".into(), true, false),
        ],
        networks: vec![
            ("lab".into(), false),
            ("corp".into(), true),
            ("scan".into(), true),
        ],
        internal_outside: vec![("corp".into(), vec!["8080/tcp".into()])],
        secrets: vec![("KEY".into(), true, false), ("OPT".into(), false, false)],
        deployment: Some(("dev:latest".into(), id.clone(), None)),
        lock: Some((
            "dev.lock".into(),
            Ok(vec![Drift {
                field: "image dev:latest: id".into(),
                locked: id.clone(),
                current: "(none)".into(),
            }]),
        )),
        runtime: None,
        isolation: Some(Err((
            "no runtime meets min microvm".into(),
            "install Kata Containers".into(),
        ))),
        egress_proxy_image: None,
    };
    let checks = profile_checks(&facts);
    for (check_id, status) in [
        ("image dev:latest", Status::Warn),
        ("image decant:1", Status::Fail),
        ("image box:1", Status::Ok),
        ("network lab", Status::Fail),
        ("network corp", Status::Fail),
        ("network scan", Status::Ok),
        ("secret KEY", Status::Fail),
        ("secret OPT", Status::Warn),
        ("deployment", Status::Warn),
        ("lock", Status::Fail),
        ("isolation", Status::Fail),
    ] {
        assert_eq!(status_of(&checks, check_id), status, "{check_id}");
    }
    assert!(checks.iter().all(|check| check.id != "egress-proxy-image"));
    // The internal outside network run would refuse: one check, its fix consistent with it.
    let corp: Vec<_> = checks.iter().filter(|c| c.id == "network corp").collect();
    assert_eq!(corp.len(), 1, "{corp:?}");
    assert!(
        corp[0].summary.contains("publishes the sandbox's 8080/tcp"),
        "{corp:?}"
    );
    let fix = corp[0].fix.as_deref().unwrap_or_default();
    assert!(
        fix.contains("egress.outside_network") && !fix.contains("enforce"),
        "{fix}"
    );
    let isolation = checks.iter().find(|c| c.id == "isolation").unwrap();
    assert_eq!(isolation.fix.as_deref(), Some("install Kata Containers"));
    let met = profile_checks(&ProfileFacts {
        isolation: Some(Ok("gvisor under runtime runsc".into())),
        ..ProfileFacts::default()
    });
    assert_eq!(status_of(&met, "isolation"), Status::Ok);
    let unapplied = profile_checks(&ProfileFacts::default());
    assert!(unapplied.iter().all(|check| check.id != "isolation"));
    assert_eq!(status_of(&unapplied, "deployment"), Status::Warn);
}

#[test]
fn a_launch_that_creates_an_isolated_network_makes_its_warning_a_failure() {
    let mut facts = healthy();
    facts.isolated_network = Some(Err("no bridge driver".into()));
    let isolated = crate::plan::Part::Network {
        name: "agentc-egress-x".into(),
        created: true,
        internal: true,
        publishes: Vec::new(),
    };
    let mut checks = engine_checks(&facts);
    require_for(&[], &mut checks);
    assert_eq!(status_of(&checks, "isolated-network"), Status::Warn);
    require_for(&[isolated], &mut checks);
    assert_eq!(status_of(&checks, "isolated-network"), Status::Fail);
}

#[test]
fn podman_and_gvisor_are_judged_with_their_own_fixes() {
    let facts = EngineFacts {
        engine: Some(Engine::Podman),
        endpoint: "unix:///run/podman/podman.sock".into(),
        unreachable: Some("connection refused".into()),
        ..EngineFacts::default()
    };
    let checks = engine_checks(&facts);
    let engine = checks.iter().find(|c| c.id == "engine").unwrap();
    assert!(engine
        .fix
        .as_deref()
        .unwrap()
        .contains("podman system service"));
    // Without the podman command nothing runs; with it, the cli backend does.
    assert_eq!(engine.status, Status::Fail);
    let facts = EngineFacts {
        cli: Some(Ok("4.3.1".into())),
        ..facts
    };
    let checks = engine_checks(&facts);
    let engine = checks.iter().find(|c| c.id == "engine").unwrap();
    assert_eq!(engine.status, Status::Warn);
    assert!(
        engine.summary.ends_with(
            "`--backend api` needs it, the cli backend (the default) runs every command without it"
        ),
        "{}",
        engine.summary
    );
    let facts = EngineFacts {
        engine: Some(Engine::Podman),
        rlimits_raisable: Some(false),
        runtimes: vec!["runc".into(), "kata".into()],
        default_runtime: Some("runc".into()),
        ..healthy()
    };
    let checks = engine_checks(&facts);
    assert_eq!(status_of(&checks, "rlimits"), Status::Warn);
    let runtimes = checks.iter().find(|c| c.id == "runtimes").unwrap();
    assert!(runtimes.summary.contains("ignores HostConfig.Runtime"));
    let facts = EngineFacts {
        gvisor: Some("/usr/bin/runsc --network=host".into()),
        ..healthy()
    };
    assert_eq!(status_of(&engine_checks(&facts), "gvisor"), Status::Warn);
    let profile = ProfileFacts {
        runtime: Some(("kata".into(), Err("it has runc, runsc".into()))),
        ..ProfileFacts::default()
    };
    let checks = profile_checks(&profile);
    assert_eq!(status_of(&checks, "runtime kata"), Status::Fail);
}

#[test]
fn the_egress_proxy_image_is_judged_only_for_a_launch_behind_the_proxy() {
    let judged = |image: Result<(String, bool), String>| {
        let facts = ProfileFacts {
            egress_proxy_image: Some(image),
            ..ProfileFacts::default()
        };
        status_of(&profile_checks(&facts), "egress-proxy-image")
    };
    let tag = "agentc-egress:0123456789ab".to_string();
    assert_eq!(judged(Ok((tag.clone(), true))), Status::Ok);
    // Not imported yet is fine: the first launch imports it.
    assert_eq!(judged(Ok((tag, false))), Status::Ok);
    assert_eq!(
        judged(Err("cannot read /proc/self/exe".into())),
        Status::Fail
    );
}

#[test]
fn leftovers_of_killed_launches_warn_with_the_command_that_removes_each() {
    let mut facts = healthy();
    facts.egress_leftovers = Some(Ok(vec![
        (
            "isolated network box-egress: no container of box uses it".into(),
            "docker rm -f box-egress-proxy && docker network rm box-egress".into(),
        ),
        (
            "egress proxy box-egress-proxy: no container of box is behind it".into(),
            "docker rm -f box-egress-proxy".into(),
        ),
    ]));
    let checks = engine_checks(&facts);
    let found = checks.iter().find(|c| c.id == "egress-leftovers").unwrap();
    assert_eq!(found.status, Status::Warn);
    assert_eq!(
        found.summary,
        "2 leftovers of launches killed before they finished: isolated network box-egress: no \
         container of box uses it; egress proxy box-egress-proxy: no container of box is behind it"
    );
    let fix = found.fix.as_deref().unwrap();
    assert!(
        fix.starts_with(
            "remove them: `docker rm -f box-egress-proxy && docker network rm box-egress`; \
             `docker rm -f box-egress-proxy`"
        ),
        "{fix}"
    );
    // A warning: doctor still exits 0.
    let report = Report {
        engine: Engine::Docker,
        checks,
    };
    assert!(!report.failed());
    facts.egress_leftovers = Some(Ok(Vec::new()));
    assert_eq!(
        status_of(&engine_checks(&facts), "egress-leftovers"),
        Status::Ok
    );
    facts.egress_leftovers = Some(Err("denied".into()));
    assert_eq!(
        status_of(&engine_checks(&facts), "egress-leftovers"),
        Status::Warn
    );
}
