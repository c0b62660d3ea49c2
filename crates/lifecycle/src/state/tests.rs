use super::*;
use agentc_policy::Hinted;

fn id(digit: char) -> String {
    format!("sha256:{}", digit.to_string().repeat(64))
}

fn applied(image_id: &str) -> Applied {
    Applied {
        unix_seconds: 1_764_480_000,
        agentc_version: "0.1.0".into(),
        profile_file: "/p/dev.toml".into(),
        image: "dev:latest".into(),
        image_id: image_id.into(),
        built: true,
        retained_tag: Some("dev:latest-agentc-previous-dev".into()),
        spec_digests: BTreeMap::from([("run".into(), "d".repeat(64))]),
        seeds: BTreeMap::new(),
        home_volume: None,
    }
}

#[test]
fn dates_are_utc_rfc3339() {
    assert_eq!(utc_datetime(0).to_string(), "1970-01-01T00:00:00Z");
    assert_eq!(
        utc_datetime(951_782_400).to_string(),
        "2000-02-29T00:00:00Z"
    );
    assert_eq!(
        utc_datetime(1_764_480_001).to_string(),
        "2025-11-30T05:20:01Z"
    );
}

#[test]
fn apply_then_rollback_then_refuse_a_second_rollback() {
    let mut state = State::new("dev");
    state.record_apply(applied(&id('1')));
    let error = state
        .rollback_plan("dev.toml")
        .unwrap_err()
        .with_hint()
        .to_string();
    assert!(error.contains("no previous image"), "{error}");
    state.record_apply(applied(&id('2')));
    assert_eq!(state.image_to_retain(), Some(id('2').as_str()));
    let plan = state.rollback_plan("dev.toml").unwrap();
    assert_eq!(
        (plan.from.as_str(), plan.to.as_str()),
        (id('2').as_str(), id('1').as_str())
    );
    state.record_rollback(&plan, 1_764_480_100, "0.1.0");
    let current = state.current().unwrap();
    assert_eq!((current.number, current.step), (3, Step::Rollback));
    assert_eq!(current.image_id, id('1'));
    let error = state
        .rollback_plan("dev.toml")
        .unwrap_err()
        .with_hint()
        .to_string();
    assert!(
        error.contains("a second rollback without a new apply is refused"),
        "{error}"
    );
    assert!(error.contains("\n  hint: run `agentc apply"), "{error}");
    // An apply of the same image keeps what it could return to.
    state.record_apply(applied(&id('1')));
    assert_eq!(state.current().unwrap().previous_image_id, Some(id('2')));
}

#[test]
fn the_state_round_trips_through_its_text_and_keeps_the_last_deployments() {
    let mut state = State::new("dev");
    for digit in "12121212121212121212121".chars() {
        state.record_apply(applied(&id(digit)));
    }
    assert_eq!(state.deployments.len(), MAX_DEPLOYMENTS);
    assert_eq!(state.deployments[0].number, 4);
    let text = state.to_toml();
    assert!(text.starts_with("# agentc deployment state"), "{text}");
    assert!(text.contains("at = 2025-11-30T05:20:00Z"), "{text}");
    assert_eq!(State::parse("s.toml", &text, "dev").unwrap(), state);
}

#[test]
fn corrupt_states_name_the_file_and_line() {
    let mut state = State::new("dev");
    state.record_apply(applied(&id('1')));
    let text = state.to_toml();
    let cases = [
        (text.replace("image_id = ", "image_idd = "), "unknown field"),
        (
            text.replace("number = 1", "number = \"one\""),
            "invalid type",
        ),
        (text[..text.len() / 2].to_string(), ""),
        (
            text.replace("state_version = 1", "state_version = 7"),
            "state_version 7",
        ),
        (text.replace(&id('1'), "sha256:xyz"), "is not an image ID"),
        ("\u{0}\u{1}binary".to_string(), ""),
    ];
    for (bad, expected) in cases {
        let error = State::parse("s.toml", &bad, "dev").unwrap_err();
        let shown = error.with_hint().to_string();
        assert!(shown.starts_with("s.toml"), "{shown}");
        assert!(shown.contains(expected), "{shown}");
        assert!(shown.contains("\n  hint: "), "{shown}");
        assert!(matches!(error, LifecycleError::Corrupt { .. }), "{shown}");
    }
    let error = State::parse(
        "s.toml",
        &text.replace("image_id = ", "image_idd = "),
        "dev",
    )
    .unwrap_err();
    assert!(
        matches!(error, LifecycleError::Corrupt { line: Some(_), .. }),
        "{error}"
    );
    let other = State::parse("s.toml", &text, "prod")
        .unwrap_err()
        .with_hint()
        .to_string();
    assert!(other.contains("belongs to profile \"dev\""), "{other}");
}

#[test]
fn seeds_are_copied_when_new_changed_or_their_volume_is_gone() {
    let mut state = State::new("dev");
    let mut first = applied(&id('1'));
    first.home_volume = Some("home".into());
    first.seeds = BTreeMap::from([("/h/a".into(), "aa".into()), ("/h/b".into(), "bb".into())]);
    state.record_apply(first);
    let sources = BTreeMap::from([
        ("/h/a".to_string(), "aa".to_string()),
        ("/h/b".to_string(), "b2".to_string()),
        ("/h/c".to_string(), "cc".to_string()),
    ]);
    let current = state.current();
    assert_eq!(
        seeds_to_copy(current, &sources, Some("home"), true),
        ["/h/b", "/h/c"]
    );
    assert_eq!(
        seeds_to_copy(current, &sources, Some("home"), false).len(),
        3
    );
    assert_eq!(
        seeds_to_copy(current, &sources, Some("other"), true).len(),
        3
    );
    assert_eq!(seeds_to_copy(None, &sources, Some("home"), true).len(), 3);
}

proptest::proptest! {
    #[test]
    fn no_text_makes_the_state_reader_panic(text in "\\PC{0,400}") {
        let _ = State::parse("s.toml", &text, "dev");
    }
}
