//! Apply and rollback on a fake deployer that records each call and what the state file held
//! at that moment: the state is written last, a failed build or seed records nothing, seeds
//! are copied once, a rollback moves the tags back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use agentc_lifecycle::lock::ImageFacts;
use agentc_policy::Hinted;

use super::*;
use crate::container_of;

/// The repository's `fixtures/valid/NAME.toml`.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/valid")
        .join(format!("{name}.toml"))
}

/// A deployer whose engine is a map of image references to IDs, whose builds point the
/// build's tag at the next ID of `build_ids` (or fail with `build_code`), and whose seeds
/// exit `seed_code` and create the home volume.
struct Fake {
    /// The state file, read at each call.
    state: PathBuf,
    /// Each call, with the state file's text when it was made.
    calls: Vec<(String, Option<String>)>,
    images: BTreeMap<String, String>,
    volumes: BTreeSet<String>,
    build_ids: Vec<String>,
    build_code: i32,
    seed_code: u8,
}

impl Fake {
    fn new(state: &Path) -> Fake {
        Fake {
            state: state.to_path_buf(),
            calls: Vec::new(),
            images: BTreeMap::new(),
            volumes: BTreeSet::new(),
            build_ids: Vec::new(),
            build_code: 0,
            seed_code: 0,
        }
    }

    fn record(&mut self, call: String) {
        let state = std::fs::read_to_string(&self.state).ok();
        self.calls.push((call, state));
    }

    /// The calls made, without the state they saw.
    fn names(&self) -> Vec<&str> {
        self.calls.iter().map(|(call, _)| call.as_str()).collect()
    }
}

impl Engine for Fake {
    fn image(&mut self, reference: &str) -> Result<Option<ImageFacts>, Failure> {
        self.record(format!("image {reference}"));
        // An ID names itself, as the engine's inspect does.
        let id = self.images.get(reference).cloned().or_else(|| {
            self.images
                .values()
                .find(|id| id.as_str() == reference)
                .cloned()
        });
        Ok(id.map(|id| ImageFacts {
            id,
            repo_digests: Vec::new(),
        }))
    }

    fn pull(
        &mut self,
        reference: &str,
        notify: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), Failure> {
        self.record(format!("pull {reference}"));
        notify(&format!("pulled {reference}"));
        self.images
            .insert(reference.to_string(), "sha256:pulled".to_string());
        Ok(())
    }

    fn tag(&mut self, source: &str, reference: &str) -> Result<(), Failure> {
        self.record(format!("tag {source} {reference}"));
        let id = self
            .images
            .get(source)
            .cloned()
            .unwrap_or_else(|| source.to_string());
        self.images.insert(reference.to_string(), id);
        Ok(())
    }

    fn volume_exists(&mut self, name: &str) -> Result<bool, Failure> {
        self.record(format!("volume {name}"));
        Ok(self.volumes.contains(name))
    }

    fn network_exists(&mut self, name: &str) -> Result<bool, Failure> {
        self.record(format!("network {name}"));
        Ok(false)
    }

    fn network_internal(&mut self, name: &str) -> Result<Option<bool>, Failure> {
        self.record(format!("network {name}"));
        Ok(None)
    }
}

impl Deployer for Fake {
    fn engine(&mut self) -> Result<&mut dyn Engine, Failure> {
        Ok(self)
    }

    fn build(&mut self, spec: &LaunchSpec) -> Result<i32, Failure> {
        let Action::Build(build) = &spec.action else {
            panic!("a build launch builds");
        };
        self.record(format!("build {}", build.tag));
        if self.build_code == 0 {
            let id = self.build_ids.remove(0);
            self.images.insert(build.tag.clone(), id);
        }
        Ok(self.build_code)
    }

    fn build_preset(
        &mut self,
        _loaded: &LoadedProfile,
        _profile: &Path,
        image: &str,
        _events: &mut (dyn FnMut(ApplyEvent<'_>) + Send),
    ) -> Result<Option<i32>, Failure> {
        self.record(format!("preset {image}"));
        Ok(None)
    }

    fn seed(
        &mut self,
        spec: &LaunchSpec,
        _events: &mut (dyn FnMut(ApplyEvent<'_>) + Send),
    ) -> Result<u8, Failure> {
        let container = container_of(spec)?;
        self.record(format!("seed {}", container.name.as_deref().unwrap_or("?")));
        if self.seed_code == 0 {
            for mount in &container.mounts {
                if let agentc_policy::MountSource::Volume { name, .. } = &mount.source {
                    self.volumes.insert(name.clone());
                }
            }
        }
        Ok(self.seed_code)
    }
}

/// The state file of `name` in `dir`, read as [`store::locked_state`] reads it.
fn read_state(path: &Path, name: &str) -> State {
    match store::read_text(path).unwrap() {
        Some(text) => State::parse(&path.display().to_string(), &text, name).unwrap(),
        None => State::new(name),
    }
}

/// Applies `profile` on `fake` with its state at `fake.state`: the report or failure, and the
/// events said, as lines.
fn apply(
    profile: &Path,
    fake: &mut Fake,
    pull: bool,
) -> (Result<ApplyReport, Failure>, Vec<String>) {
    let deploying = Deploying::read(profile).unwrap();
    let state = read_state(&fake.state, &deploying.loaded.profile.name);
    let mut said = Vec::new();
    let mut events = |event: ApplyEvent<'_>| {
        said.push(match event {
            ApplyEvent::Note(line) => format!("note {line}"),
            ApplyEvent::Hinted(note) => format!("note {}", note.with_hint()),
            ApplyEvent::Built(tag) => format!("built {tag}"),
            ApplyEvent::Started(started) => format!("started {}", started.name),
            ApplyEvent::SeedUnchanged(target) => format!("unchanged {target}"),
            ApplyEvent::Seeded(target) => format!("seeded {target}"),
        })
    };
    let apply = Apply {
        profile: profile.to_path_buf(),
        pull,
        events: &mut events,
    };
    let state_path = fake.state.clone();
    let result = apply.locked(deploying, state_path, state, fake);
    (result, said)
}

/// Rolls `profile` back on `fake`.
fn rollback(profile: &Path, fake: &mut Fake) -> Result<RollbackReport, Failure> {
    let loaded = load_profile(profile).unwrap();
    let name = loaded.profile.name.clone();
    let state = read_state(&fake.state, &name);
    let path = fake.state.clone();
    Rollback {
        profile: profile.to_path_buf(),
    }
    .locked(name, &path, state, fake)
}

const BUILT: &str = "agentc-fixtures/sandbox-build:dev";
const RETAINED: &str = "agentc-fixtures/sandbox-build:dev-agentc-previous-sandbox-build";
const FIRST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const SECOND: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

#[test]
fn an_apply_writes_its_state_after_every_engine_call_and_a_rollback_returns_to_the_image_before() {
    let dir = tempfile::tempdir().unwrap();
    let profile = fixture("sandbox-build");
    let mut fake = Fake::new(&dir.path().join("profiles/sandbox-build.toml"));
    fake.build_ids = vec![FIRST.to_string(), SECOND.to_string()];

    let (first, said) = apply(&profile, &mut fake, false);
    let first = first.unwrap();
    assert!(said.is_empty(), "{said:?}");
    assert_eq!(
        fake.names(),
        [format!("build {BUILT}"), format!("image {BUILT}")]
    );
    assert!(fake.calls.iter().all(|(_, state)| state.is_none()));
    assert_eq!((first.number, first.built), (1, true));
    assert_eq!(first.previous, None);
    assert_eq!(
        first.to_string(),
        format!(
            "applied profile \"sandbox-build\": deployment 1, {BUILT} is image {} (built)\n\
             no previous image to roll back to yet\nstate: {}",
            agentc_lifecycle::reference::short_id(FIRST),
            fake.state.display()
        )
    );
    let after_first = std::fs::read_to_string(&fake.state).unwrap();

    fake.calls.clear();
    let (second, _) = apply(&profile, &mut fake, false);
    let second = second.unwrap();
    // The current image kept before the build moves the tag, and again once recorded.
    assert_eq!(
        fake.names(),
        [
            format!("image {FIRST}"),
            format!("tag {FIRST} {RETAINED}"),
            format!("build {BUILT}"),
            format!("image {BUILT}"),
            format!("image {FIRST}"),
            format!("tag {FIRST} {RETAINED}"),
        ]
    );
    assert!(fake
        .calls
        .iter()
        .all(|(_, state)| state.as_deref() == Some(after_first.as_str())));
    assert_eq!(second.number, 2);
    assert_eq!(second.previous.as_deref(), Some(FIRST));
    assert!(second.to_string().contains(&format!(
        "kept as {RETAINED}: `agentc rollback {}` returns to it",
        profile.display()
    )));

    fake.calls.clear();
    let back = rollback(&profile, &mut fake).unwrap();
    assert_eq!(
        fake.names(),
        [
            format!("image {FIRST}"),
            format!("image {SECOND}"),
            format!("tag {SECOND} {RETAINED}"),
            format!("tag {FIRST} {BUILT}"),
        ]
    );
    assert_eq!((back.to.as_str(), back.from.as_str()), (FIRST, SECOND));
    assert_eq!(fake.images[BUILT], FIRST);
    let state = read_state(&fake.state, "sandbox-build");
    assert_eq!(state.current().unwrap().image_id, FIRST);
    assert_eq!(state.current().unwrap().number, back.number);
}

#[test]
fn a_failed_build_leaves_the_previous_state_and_moves_no_tag_back() {
    let dir = tempfile::tempdir().unwrap();
    let profile = fixture("sandbox-build");
    let mut fake = Fake::new(&dir.path().join("sandbox-build.toml"));
    fake.build_ids = vec![FIRST.to_string()];
    apply(&profile, &mut fake, false).0.unwrap();
    let before = std::fs::read_to_string(&fake.state).unwrap();

    fake.calls.clear();
    fake.build_code = 2;
    let failure = apply(&profile, &mut fake, false).0.unwrap_err();
    assert_eq!(failure.code, 2);
    assert!(
        failure.message.contains("nothing was recorded"),
        "{}",
        failure.message
    );
    assert_eq!(std::fs::read_to_string(&fake.state).unwrap(), before);
    assert_eq!(
        fake.names(),
        [
            format!("image {FIRST}"),
            format!("tag {FIRST} {RETAINED}"),
            format!("build {BUILT}"),
        ]
    );
}

#[test]
fn a_missing_image_is_refused_without_pull_and_pulled_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let profile = fixture("sandbox-minimal");
    let mut fake = Fake::new(&dir.path().join("sandbox-minimal.toml"));
    let refused = apply(&profile, &mut fake, false).0.unwrap_err();
    assert_eq!(refused.code, EXIT_DOCKER);
    assert!(
        refused
            .with_hint()
            .to_string()
            .contains("`agentc apply --pull`"),
        "{}",
        refused.with_hint()
    );
    assert!(!fake.state.exists());
    assert!(!fake.names().iter().any(|call| call.starts_with("pull")));

    let (report, said) = apply(&profile, &mut fake, true);
    let report = report.unwrap();
    assert!(fake.names().contains(&"pull busybox:1.36"));
    // What the pull says is the caller's to print, as it goes.
    assert!(
        said.contains(&"note pulled busybox:1.36".to_string()),
        "{said:?}"
    );
    assert_eq!(
        (report.built, report.image_id.as_str()),
        (false, "sha256:pulled")
    );
    assert!(fake.state.exists());
}

#[test]
fn seeds_are_copied_when_new_and_not_again_while_the_home_volume_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let profile = fixture("claude-seeds");
    let mut fake = Fake::new(&dir.path().join("claude-seeds.toml"));
    fake.images
        .insert("claude-code:latest".to_string(), FIRST.to_string());

    let (_, said) = apply(&profile, &mut fake, false);
    let seeded: Vec<&String> = said
        .iter()
        .filter(|line| line.starts_with("seeded "))
        .collect();
    assert_eq!(seeded.len(), 3, "{said:?}");
    assert_eq!(
        fake.names()
            .iter()
            .filter(|call| call.starts_with("seed "))
            .count(),
        3
    );

    fake.calls.clear();
    let (again, said) = apply(&profile, &mut fake, false);
    again.unwrap();
    assert_eq!(
        said,
        [
            "unchanged /home/claude/.claude/CLAUDE.md",
            "unchanged /home/claude/.claude/settings.json",
            "unchanged /home/claude/.claude/skills",
        ]
    );
    assert!(!fake.names().iter().any(|call| call.starts_with("seed ")));
}

#[test]
fn a_failed_seed_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let profile = fixture("claude-seeds");
    let mut fake = Fake::new(&dir.path().join("claude-seeds.toml"));
    fake.images
        .insert("claude-code:latest".to_string(), FIRST.to_string());
    fake.seed_code = 3;
    let (result, said) = apply(&profile, &mut fake, false);
    let failure = result.unwrap_err();
    assert_eq!(failure.code, 3);
    assert!(failure.message.contains("the seed helper failed (exit 3)"));
    assert!(said.is_empty(), "{said:?}");
    assert!(!fake.state.exists());
}

#[test]
fn a_rollback_to_an_image_that_is_gone_is_refused_and_moves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let profile = fixture("sandbox-build");
    let mut fake = Fake::new(&dir.path().join("sandbox-build.toml"));
    fake.build_ids = vec![FIRST.to_string(), SECOND.to_string()];
    apply(&profile, &mut fake, false).0.unwrap();
    apply(&profile, &mut fake, false).0.unwrap();
    let before = std::fs::read_to_string(&fake.state).unwrap();
    fake.images.retain(|_, id| id != FIRST);

    fake.calls.clear();
    let refused = rollback(&profile, &mut fake).unwrap_err();
    assert_eq!(refused.code, EXIT_FAILED);
    assert!(
        refused
            .message
            .contains("is gone, so there is nothing to roll back to"),
        "{}",
        refused.message
    );
    assert_eq!(fake.names(), [format!("image {FIRST}")]);
    assert_eq!(std::fs::read_to_string(&fake.state).unwrap(), before);
}
