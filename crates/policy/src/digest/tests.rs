use std::collections::BTreeMap;

use super::*;
use crate::error::{Location, PolicyError};
use crate::hint::Hinted;
use crate::inputs::{Instance, PathKind, ProfileRecord, Start};
use crate::load::load;
use crate::resolve::resolve;
use crate::resolve::tests::FakePaths;
use crate::spec::{LaunchKind, Mount, Origin};

/// A Claude Code profile with a bind beside it, one in the home directory, a system one and a
/// build context beside it.
const PROFILE: &str = r#"name = "dev"
agent = "claude-code"

[image]
build_context = "./image"

[[mounts]]
type = "directory"
source = "./data"
target = "/data"

[[mounts]]
source = "~/.gitconfig"
target = "/home/claude/.gitconfig"

[[mounts]]
type = "directory"
source = "/usr/share/ca-certificates"
target = "/usr/share/ca-certificates"
"#;

/// One checkout: the home directory, the profile's directory and the workspace.
struct Checkout {
    home: &'static str,
    profile_dir: &'static str,
    workspace: &'static str,
}

const ALICE: Checkout = Checkout {
    home: "/home/alice",
    profile_dir: "/home/alice/src/app",
    workspace: "/home/alice/src/app",
};

/// Another user, the project outside the home directory, under another directory name.
const CI: Checkout = Checkout {
    home: "/home/ci",
    profile_dir: "/builds/ci/work/app-2",
    workspace: "/builds/ci/work/app-2",
};

impl Checkout {
    fn inputs(&self, kind: LaunchKind) -> ResolveInputs {
        ResolveInputs {
            workspace: self.workspace.to_string(),
            profile_dir: self.profile_dir.to_string(),
            home_dir: self.home.to_string(),
            ..crate::resolve::tests::inputs(kind)
        }
    }

    fn paths(&self) -> FakePaths {
        let dir = |path: String| (path, PathKind::Directory);
        FakePaths(BTreeMap::from([
            dir(self.workspace.to_string()),
            dir(format!("{}/data", self.profile_dir)),
            dir(format!("{}/image", self.profile_dir)),
            dir("/usr/share/ca-certificates".to_string()),
            (format!("{}/.gitconfig", self.home), PathKind::File),
        ]))
    }

    fn resolve(&self, text: &str, inputs: &ResolveInputs) -> LaunchSpec {
        let loaded = load("dev.toml", text).unwrap_or_else(|error| panic!("{error}"));
        resolve(&loaded, inputs, &self.paths()).unwrap_or_else(|error| panic!("{error}"))
    }

    fn run(&self, text: &str) -> LaunchSpec {
        self.resolve(text, &self.inputs(LaunchKind::Run))
    }

    fn roots(&self) -> LocalRoots {
        LocalRoots::of(&self.inputs(LaunchKind::Run), &self.paths())
    }
}

fn digest(spec: &LaunchSpec) -> String {
    spec.digest()
        .expect("resolve labels the digest")
        .to_string()
}

fn container(spec: &LaunchSpec) -> &ContainerSpec {
    match &spec.action {
        Action::Container(container) => container,
        Action::Build(_) => panic!("container expected"),
    }
}

#[test]
fn one_project_in_two_checkouts_has_one_digest() {
    let (alice, ci) = (ALICE.run(PROFILE), CI.run(PROFILE));
    // The launches differ on the machine: every project path and the workspace's name.
    assert_ne!(alice.action, ci.action);
    assert_eq!(digest(&alice), digest(&ci));
    let build =
        |checkout: &Checkout| checkout.resolve(PROFILE, &checkout.inputs(LaunchKind::Build));
    assert_eq!(digest(&build(&ALICE)), digest(&build(&CI)));
    // The digest is the sha256 of the portable form, which the lock lists.
    assert_eq!(digest(&alice), spec_digest(&alice, &ALICE.roots()));
    assert_eq!(
        portable_action(&alice, &ALICE.roots()),
        portable_action(&ci, &CI.roots())
    );
}

#[test]
fn the_portable_form_writes_project_paths_relative_and_keeps_system_paths() {
    let spec = ALICE.run(PROFILE);
    let Action::Container(portable) = portable_action(&spec, &ALICE.roots()) else {
        panic!("container expected")
    };
    let binds: Vec<(&str, &str)> = portable
        .mounts
        .iter()
        .filter_map(|Mount { target, source, .. }| match source {
            MountSource::Bind { path } => Some((target.as_str(), path.as_str())),
            MountSource::Volume { .. } => None,
        })
        .collect();
    assert_eq!(
        binds,
        [
            ("/workspace/{workspace}", "."),
            ("/data", "./data"),
            ("/home/claude/.gitconfig", "~/.gitconfig"),
            ("/usr/share/ca-certificates", "/usr/share/ca-certificates"),
        ]
    );
    assert_eq!(
        portable.working_dir.as_deref(),
        Some("/workspace/{workspace}")
    );
    assert!(!portable.labels.contains_key(LABEL_SPEC_DIGEST));
    // The spec itself is untouched: it is what launches.
    assert_eq!(
        container(&spec).working_dir.as_deref(),
        Some("/workspace/app")
    );
    let build = ALICE.resolve(PROFILE, &ALICE.inputs(LaunchKind::Build));
    let Action::Build(portable) = portable_action(&build, &ALICE.roots()) else {
        panic!("build expected")
    };
    assert_eq!(portable.context, "./image");
}

#[test]
fn a_profile_inside_the_project_sees_the_workspace_above_it() {
    let roots = LocalRoots {
        profile_dirs: vec!["/srv/app/.agentc".into()],
        home_dirs: vec!["/home/dev".into()],
        workspace: "/srv/app".into(),
    };
    let cases = [
        ("/srv/app/.agentc", "."),
        ("/srv/app/.agentc/ca.pem", "./ca.pem"),
        ("/srv/app", ".."),
        ("/srv/app/src", "../src"),
        // Sharing only the top level (`/srv`) or `/` is no relation: kept as written.
        ("/srv/shared", "/srv/shared"),
        ("/srv", "/srv"),
        ("/opt/tools", "/opt/tools"),
        ("/home/dev", "~"),
        ("/home/dev/.ssh/known_hosts", "~/.ssh/known_hosts"),
        ("/home/other", "/home/other"),
    ];
    for (path, portable) in cases {
        assert_eq!(roots.portable_path(path), portable, "{path}");
        // And it reads back as a profile path does.
        assert_eq!(
            crate::paths::resolve_host_path(portable, "/home/dev", "/srv/app/.agentc"),
            path
        );
    }
    // Under the home directory, a path beside the project is the home's, not `../..`.
    let home = LocalRoots {
        profile_dirs: vec!["/home/dev/src/app".into()],
        home_dirs: vec!["/home/dev".into()],
        workspace: "/home/dev/src/app".into(),
    };
    assert_eq!(home.portable_path("/home/dev/src/lib"), "../lib");
    assert_eq!(home.portable_path("/home/dev/notes"), "~/notes");
    // A profile directory reached through a symbolic link is recognised by its real path too.
    let linked = LocalRoots {
        profile_dirs: vec!["/tmp/app".into(), "/private/tmp/app".into()],
        home_dirs: Vec::new(),
        workspace: "/tmp/app".into(),
    };
    assert_eq!(linked.portable_path("/private/tmp/app/data"), "./data");
}

#[test]
fn a_changed_setting_changes_the_digest() {
    let base = digest(&ALICE.run(PROFILE));
    let changed = |text: &str, inputs: &ResolveInputs| digest(&ALICE.resolve(text, inputs));
    let run = ALICE.inputs(LaunchKind::Run);
    // A limit.
    let memory = format!("{PROFILE}\n[resources]\nmemory = \"2g\"\n");
    assert_ne!(changed(&memory, &run), base);
    // A bind that leaves the project for a system path.
    let moved = PROFILE.replace("\"./data\"", "\"/usr/share/ca-certificates\"");
    assert_ne!(changed(&moved, &run), base);
    // The workspace writable or read-only.
    let read_only = format!("{PROFILE}\n[workspace]\nread_only = true\n");
    assert_ne!(changed(&read_only, &run), base);
    // The workspace moved outside the project: another directory of the home.
    let mut outside = run.clone();
    outside.workspace = "/home/alice/src/other".into();
    let mut probe = ALICE.paths();
    probe
        .0
        .insert(outside.workspace.clone(), PathKind::Directory);
    let loaded = load("dev.toml", PROFILE).unwrap();
    let spec = resolve(&loaded, &outside, &probe).unwrap();
    assert_ne!(digest(&spec), base);
    let Action::Container(portable) = portable_action(&spec, &LocalRoots::of(&outside, &probe))
    else {
        panic!("container expected")
    };
    let workspace = portable
        .mounts
        .iter()
        .find(|mount| mount.target == "/workspace/{workspace}")
        .expect("the workspace is mounted");
    assert_eq!(
        workspace.source,
        MountSource::Bind {
            path: "../other".into()
        }
    );
    // The image an invocation names instead of the profile's.
    let mut image = run.clone();
    image.image = Some("claude-code:next".into());
    assert_ne!(changed(PROFILE, &image), base);
}

#[test]
fn every_instance_of_a_launch_carries_its_digest() {
    let plain = ALICE.run(PROFILE);
    let with = |instance: Instance| {
        let mut inputs = ALICE.inputs(LaunchKind::Run);
        inputs.instance = instance;
        let spec = ALICE.resolve(PROFILE, &inputs);
        assert_eq!(digest(&spec), digest(&plain), "{:?}", inputs.instance);
        spec
    };
    let detached = with(Instance {
        start: Start::Detached,
        default_name: Some("agentc-run-dev-42".into()),
        ..Instance::default()
    });
    let c = container(&detached);
    assert!(c.detach && !c.auto_remove && c.interactive && c.tty);
    assert_eq!(c.name.as_deref(), Some("agentc-run-dev-42"));
    assert_eq!(
        detached.origins[crate::keys::DETACH],
        Origin::Invocation {
            input: "--detach".into()
        }
    );
    let copy = with(Instance {
        start: Start::Detached,
        default_name: Some("agentc-run-dev-42".into()),
        copy: Some(3),
        ..Instance::default()
    });
    assert_eq!(
        container(&copy).name.as_deref(),
        Some("agentc-run-dev-42-3")
    );
    let session = with(Instance {
        start: Start::Session,
        default_name: Some("agentc-session-dev-42-1".into()),
        ..Instance::default()
    });
    let c = container(&session);
    assert!(c.detach && !c.auto_remove && !c.interactive);
    let piped = with(Instance {
        stdin_is_terminal: false,
        ..Instance::default()
    });
    assert!(!container(&piped).tty && container(&piped).interactive);
    // Detached, a launch keeps its TTY for a later `docker attach`.
    let detached_piped = with(Instance {
        start: Start::Detached,
        default_name: Some("x".into()),
        stdin_is_terminal: false,
        ..Instance::default()
    });
    assert!(container(&detached_piped).tty);
    let recorded = with(Instance {
        profile_record: Some(ProfileRecord {
            file: "/home/alice/src/app/dev.toml".into(),
            sha256: "ab".repeat(32),
        }),
        ..Instance::default()
    });
    assert_eq!(
        recorded.labels()[LABEL_PROFILE_FILE],
        "/home/alice/src/app/dev.toml"
    );
    assert_eq!(recorded.labels()[LABEL_PROFILE_SHA256], "ab".repeat(32));
}

#[test]
fn a_copy_behind_the_egress_proxy_gets_a_companion_of_its_own() {
    let text = "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"img:1\"\n\
                [egress]\nmode = \"allowlist\"\nhosts = [\"example.com\"]\n";
    let mut inputs = ALICE.inputs(LaunchKind::Run);
    let plain = ALICE.resolve(text, &inputs);
    let base = container(&plain).name.clone().unwrap();
    inputs.instance.copy = Some(2);
    let copy = ALICE.resolve(text, &inputs);
    assert_eq!(digest(&copy), digest(&plain));
    let c = container(&copy);
    assert_eq!(c.name.as_deref(), Some(format!("{base}-2").as_str()));
    let mut expected = container(&plain).clone();
    expected.egress_for(&format!("{base}-2"), "2");
    assert_eq!(c.egress, expected.egress);
    assert_ne!(c.egress, container(&plain).egress);
}

#[test]
fn names_behind_the_egress_proxy_are_dns_labels_or_refused_where_chosen() {
    let text = "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"img:1\"\n\
                [egress]\nmode = \"allowlist\"\nhosts = [\"example.com\"]\n";
    let attempt = |name: Option<String>, copy: Option<u16>, text: &str| {
        let loaded = load("dev.toml", text).unwrap();
        let mut inputs = ALICE.inputs(LaunchKind::Run);
        inputs.instance = Instance {
            start: Start::Detached,
            name,
            copy,
            default_name: Some("agentc-run-box-77".into()),
            ..Instance::default()
        };
        resolve(&loaded, &inputs, &ALICE.paths())
    };
    // 63 characters are one label; the proxy's own `NAME-egress-proxy` is nobody's to look up.
    let fits = attempt(Some("n".repeat(63)), None, text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(container(&fits).name.as_ref().map(String::len), Some(63));
    let refused =
        |name: Option<String>, copy: Option<u16>, text: &str| match attempt(name, copy, text) {
            Err(PolicyError::Invalid {
                location,
                message,
                hint,
            }) => (location, message, hint),
            other => panic!("{other:?}"),
        };
    let (location, message, hint) = refused(Some("n".repeat(64)), None, text);
    assert_eq!(
        location,
        Location::Invocation {
            input: "--name".into()
        }
    );
    assert!(message.contains("\", 64 characters"), "{message}");
    assert!(message.contains("at most 63 characters"), "{message}");
    assert_eq!(hint, "use a --name of at most 63 characters");
    // A copy's number counts: NAME-10.
    assert!(attempt(Some("n".repeat(61)), Some(2), text).is_ok());
    let (_, _, hint) = refused(Some("n".repeat(61)), Some(10), text);
    assert_eq!(
        hint,
        "use a --name of at most 60 characters (agentc adds 3 to it for this copy)"
    );
    // Dots make several labels, or an empty one.
    for dotted in ["a.b", "a..b", "box."] {
        let (_, message, hint) = refused(Some(dotted.into()), None, text);
        assert!(message.contains("holds a dot"), "{dotted}: {message}");
        assert!(hint.contains("letters, digits, `_` and `-`"), "{hint}");
    }
    // The default names hold the profile's name: refused at its field.
    let long = "p".repeat(60);
    let long_text = text.replace("name = \"box\"", &format!("name = \"{long}\""));
    let (location, _, hint) = refused(None, Some(1), &long_text);
    assert!(
        matches!(&location, Location::Profile { field, .. } if field == "name"),
        "{location:?}"
    );
    assert!(hint.contains("shorten the profile's name"), "{hint}");
    // Without the egress proxy nothing looks the names up: docker's own limit holds.
    let deny = text.replace(
        "mode = \"allowlist\"\nhosts = [\"example.com\"]",
        "mode = \"deny\"",
    );
    assert!(attempt(Some("n".repeat(100)), None, &deny).is_ok());
    assert!(attempt(Some("a.b".into()), None, &deny).is_ok());
}

#[test]
fn a_named_instance_gets_the_name_and_a_companion_named_after_it() {
    let text = "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"img:1\"\n\
                [egress]\nmode = \"allowlist\"\nhosts = [\"example.com\"]\n";
    let mut inputs = ALICE.inputs(LaunchKind::Run);
    let plain = ALICE.resolve(text, &inputs);
    inputs.instance.name = Some("box-second".into());
    let named = ALICE.resolve(text, &inputs);
    assert_eq!(digest(&named), digest(&plain));
    let c = container(&named);
    assert_eq!(c.name.as_deref(), Some("box-second"));
    let egress = c.egress.as_ref().unwrap();
    assert_eq!(egress.network.name, "box-second-egress");
    assert_eq!(
        egress.proxy.name.as_deref(),
        Some("box-second-egress-proxy")
    );
    assert_eq!(
        egress.proxy.labels[crate::spec::LABEL_EGRESS_FOR],
        "box-second"
    );
    // Its own subnet, so it runs beside the profile's own sandbox.
    let plain_egress = container(&plain).egress.as_ref().unwrap();
    assert_ne!(egress.network.subnet, plain_egress.network.subnet);
    assert_eq!(
        named.origins[crate::keys::NAME],
        Origin::Invocation {
            input: "--name".into()
        }
    );
    // With copies: N-1, N-2, each with its set.
    inputs.instance.copy = Some(2);
    let copy = ALICE.resolve(text, &inputs);
    let c = container(&copy);
    assert_eq!(c.name.as_deref(), Some("box-second-2"));
    assert_eq!(
        c.egress.as_ref().unwrap().network.name,
        "box-second-2-egress"
    );
}

#[test]
fn an_instance_that_cannot_hold_is_refused() {
    let refused = |instance: Instance, kind: LaunchKind| {
        let mut inputs = ALICE.inputs(kind);
        inputs.instance = instance;
        let loaded = load("dev.toml", PROFILE).unwrap();
        resolve(&loaded, &inputs, &ALICE.paths())
            .expect_err("refused")
            .with_hint()
            .to_string()
    };
    let unnamed = refused(
        Instance {
            start: Start::Detached,
            ..Instance::default()
        },
        LaunchKind::Run,
    );
    assert!(unnamed.contains("needs a name"), "{unnamed}");
    let attached_copy = refused(
        Instance {
            copy: Some(1),
            ..Instance::default()
        },
        LaunchKind::Run,
    );
    assert!(attached_copy.contains("attached"), "{attached_copy}");
    for bad in ["-x", "a b", "a/b", "", "é", &"n".repeat(129)] {
        let named = refused(
            Instance {
                name: Some(bad.to_string()),
                ..Instance::default()
            },
            LaunchKind::Run,
        );
        assert!(named.contains("is not a container name"), "{bad}: {named}");
        assert!(named.contains("--name"), "{named}");
    }
    let build = refused(
        Instance {
            start: Start::Session,
            default_name: Some("x".into()),
            ..Instance::default()
        },
        LaunchKind::Build,
    );
    assert!(build.contains("starts no container"), "{build}");
}
