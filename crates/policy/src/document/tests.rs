use super::shape::{TABLE_FIELDS, TABLE_LIST_FIELDS};
use super::*;
use crate::load::load;
use crate::load::tests::{err, parts, MINIMAL};
use crate::*;

#[test]
fn a_minimal_profile_loads_with_defaults() {
    let loaded = load("p.toml", MINIMAL).unwrap();
    assert_eq!(loaded.file, "p.toml");
    assert_eq!(loaded.profile.name, "dev");
    assert_eq!(loaded.profile.egress.mode, EgressMode::Allowlist);
    assert_eq!(loaded.position("name"), Some((1, 8)));
    assert_eq!(loaded.position("agent"), Some((2, 9)));
    assert_eq!(loaded.position("egress.mode"), None);
}

#[test]
fn positions_cover_tables_arrays_and_items() {
    let text = format!(
        "{MINIMAL}[egress]\nmode = \"deny\"\ngateway_host = \"gw\"\ngateway_port = 22\n\n\
         [[mounts]]\nsource = \"a\"\ntarget = \"/a\"\n\n[[mounts]]\nsource = \"b\"\n  target = \"/b\"\n"
    );
    let loaded = load("p.toml", &text).unwrap();
    assert_eq!(loaded.position("egress.gateway_port"), Some((6, 16)));
    assert_eq!(loaded.position("mounts[1].target"), Some((14, 12)));
    assert_eq!(loaded.position("mounts[0].source"), Some((9, 10)));
    let Location::Profile {
        field, position, ..
    } = loaded.location("mounts[1].read_only")
    else {
        panic!("profile location expected")
    };
    assert_eq!(field, "mounts[1].read_only");
    assert_eq!(position, loaded.position("mounts[1]"));
    assert!(position.is_some());
}

#[test]
fn columns_count_characters_not_bytes() {
    let text = "# é\nname = \"dev\" # ü\nagent = \"codex\"\nhome_volume = \"v\"\n";
    let loaded = load("p.toml", text).unwrap();
    assert_eq!(loaded.position("name"), Some((2, 8)));
    let text = "name = \"dév\"\nagent = \"codex\"\n";
    let (field, position, _, _) = parts(&err(text));
    assert_eq!((field.as_str(), position), ("name", Some((1, 8))));
}

#[test]
fn profiles_are_normalized_like_agent_containers() {
    let text = "name = \" dev \"\nagent = \"hermes\"\n[provider]\nkind = \" OpenAI \"\n\
         [egress]\nmode = \" DENY \"\nhosts = [\" a.example \"]\n\
         [configuration_import]\nsource = \" c.toml \"\nformat = \".YML\"\non_conflict = \"Replace\"\n";
    let profile = load("p.toml", text).unwrap().profile;
    assert_eq!(profile.name, "dev");
    assert_eq!(profile.provider.unwrap().kind, "openai");
    assert_eq!(profile.egress.mode, EgressMode::Deny);
    assert_eq!(profile.egress.hosts, ["a.example"]);
    let import = profile.configuration_import.unwrap();
    assert_eq!(import.source, "c.toml");
    assert_eq!(import.format, Some(crate::profile::ConfigFormat::Yaml));
    assert_eq!(import.on_conflict, crate::profile::OnConflict::Replace);
}

#[test]
fn syntax_errors_have_a_position() {
    let error = err("name = \"dev\"\nagent = claude\n");
    let (field, position, message, _) = parts(&error);
    assert_eq!(field, "");
    assert_eq!(position.map(|p| p.0), Some(2));
    assert!(message.starts_with("invalid toml: "), "{message}");
    assert!(
        error.with_hint().to_string().starts_with("p.toml:2:"),
        "{error}"
    );
}

#[test]
fn duplicate_keys_are_named_with_their_position() {
    let (field, position, message, hint) =
        parts(&err("name = \"dev\"\nagent = \"codex\"\nname = \"x\"\n"));
    assert_eq!(field, "name");
    assert_eq!(position, Some((3, 1)));
    assert_eq!(message, "duplicate key `name`");
    assert!(hint.contains("once per table"), "{hint}");
    let (field, position, message, _) = parts(&err(&format!(
        "{MINIMAL}[egress]\nmode = \"deny\"\nmode = \"x\"\n"
    )));
    assert_eq!(field, "egress.mode");
    assert_eq!(position, Some((5, 1)));
    assert_eq!(message, "duplicate key `mode`");
    let text = format!(
        "{MINIMAL}[[mounts]]\nsource = \"a\"\ntarget = \"/a\"\n[[mounts]]\nsource = \"b\"\nsource = \"c\"\n"
    );
    assert_eq!(parts(&err(&text)).0, "mounts[1].source");
}

#[test]
fn tables_defined_twice_are_named() {
    let (field, position, message, _) = parts(&err(&format!(
        "{MINIMAL}[egress]\nmode = \"deny\"\n[egress]\nhosts = []\n"
    )));
    assert_eq!(field, "egress");
    assert_eq!(position, Some((5, 2)));
    assert_eq!(message, "duplicate key `egress`");
}

#[test]
fn arrays_are_not_read_positionally_as_tables() {
    let (field, position, message, hint) = parts(&err(&format!("{MINIMAL}packages = [\"git\"]\n")));
    assert_eq!(field, "packages");
    assert_eq!(position, Some((3, 12)));
    assert_eq!(message, "wrong type: expected a table, found an array");
    assert!(hint.contains("`[packages]`"), "{hint}");
    let (field, _, message, _) = parts(&err(&format!(
        "{MINIMAL}mounts = [[\"bind\", \"a\", \"/a\"]]\n"
    )));
    assert_eq!(field, "mounts[0]");
    assert_eq!(message, "wrong type: expected a table, found an array");
}

#[test]
fn table_fields_match_the_schema() {
    let schema = crate::schema::profile_schema();
    let definitions = &schema["$defs"];
    let is_object = |value: &serde_json::Value| {
        let text = value.to_string();
        text.split("#/$defs/").skip(1).any(|rest| {
            let name = rest.split('"').next().unwrap_or_default();
            definitions[name]["type"] == "object"
        })
    };
    for (name, property) in schema["properties"].as_object().unwrap() {
        let list = property["type"] == "array";
        let expected_table = !list && is_object(property);
        let expected_list = list && is_object(&property["items"]);
        assert_eq!(
            TABLE_FIELDS.contains(&name.as_str()),
            expected_table,
            "{name}"
        );
        assert_eq!(
            TABLE_LIST_FIELDS.contains(&name.as_str()),
            expected_list,
            "{name}"
        );
    }
}

#[test]
fn unknown_fields_suggest_the_close_name() {
    let text = format!("{MINIMAL}[egress]\ngateway_host = \"gw\"\ngateway_prot = 22\n");
    let (field, position, message, hint) = parts(&err(&text));
    assert_eq!(field, "egress.gateway_prot");
    assert_eq!(position, Some((5, 1)));
    assert_eq!(message, "unknown field `gateway_prot`");
    assert_eq!(hint, "did you mean `gateway_port`?");
}

#[test]
fn unknown_fields_without_a_close_name_list_the_accepted_ones() {
    let (field, position, message, hint) = parts(&err(&format!("{MINIMAL}colour = 1\n")));
    assert_eq!(field, "colour");
    assert_eq!(position, Some((3, 1)));
    assert_eq!(message, "unknown field `colour`");
    assert!(
        hint.contains("accepted fields here: schema_version, name, agent"),
        "{hint}"
    );
}

#[test]
fn unknown_fields_in_array_items_name_the_index() {
    let text = format!("{MINIMAL}[[mounts]]\nsource = \"a\"\ntarget = \"/a\"\n[[mounts]]\nsource = \"b\"\ntarget = \"/b\"\nreadonly = true\n");
    let (field, position, message, hint) = parts(&err(&text));
    assert_eq!(field, "mounts[1].readonly");
    assert_eq!(position, Some((9, 1)));
    assert_eq!(message, "unknown field `readonly`");
    assert_eq!(hint, "did you mean `read_only`?");
}

#[test]
fn wrong_types_name_the_field_and_the_expected_type() {
    let text = format!("{MINIMAL}[egress]\ngateway_host = \"gw\"\ngateway_port = \"22\"\n");
    let (field, position, message, hint) = parts(&err(&text));
    assert_eq!(field, "egress.gateway_port");
    assert_eq!(position, Some((5, 16)));
    assert_eq!(message, "wrong type: expected an integer, found a string");
    assert_eq!(hint, "write this field as an integer");

    let text =
        format!("{MINIMAL}[[mounts]]\nsource = \"a\"\ntarget = \"/a\"\nread_only = \"yes\"\n");
    let (field, _, message, _) = parts(&err(&text));
    assert_eq!(field, "mounts[0].read_only");
    assert_eq!(
        message,
        "wrong type: expected a boolean (true or false), found a string"
    );

    let (field, _, message, _) = parts(&err(&format!("{MINIMAL}[egress]\nhosts = \"a\"\n")));
    assert_eq!(field, "egress.hosts");
    assert_eq!(message, "wrong type: expected an array, found a string");
}

#[test]
fn values_of_several_shapes_name_the_shapes_they_take() {
    let (field, position, message, hint) =
        parts(&err(&format!("{MINIMAL}[resources]\ncpus = true\n")));
    assert_eq!(field, "resources.cpus");
    assert_eq!(position, Some((4, 8)));
    assert_eq!(
        message,
        "wrong type: expected a number or a string, found a boolean"
    );
    assert_eq!(hint, "write this field as a number or a string");
    let (field, _, message, _) =
        parts(&err(&format!("{MINIMAL}[network]\npublish = [80, true]\n")));
    assert_eq!(field, "network.publish[1]");
    assert_eq!(
        message,
        "wrong type: expected a port number or a string, found a boolean"
    );
    let (field, _, message, _) = parts(&err(&format!("{MINIMAL}[resources]\npids_limit = 1.5\n")));
    assert_eq!(field, "resources.pids_limit");
    assert_eq!(
        message,
        "wrong type: expected an integer or \"off\", found a float"
    );
}

#[test]
fn missing_fields_are_named() {
    let (field, position, message, hint) = parts(&err("agent = \"codex\"\n"));
    assert_eq!(field, "name");
    assert_eq!(message, "missing required field `name`");
    assert_eq!(hint, "add `name = ...` to the top level of the profile");
    let _ = position;
    let text = format!("{MINIMAL}[[mounts]]\nsource = \"a\"\n");
    let (field, position, message, hint) = parts(&err(&text));
    assert_eq!(field, "mounts[0].target");
    assert_eq!(position.map(|p| p.0), Some(3));
    assert_eq!(message, "missing required field `target`");
    assert_eq!(hint, "add `target = ...` to `mounts[0]`");
}

#[test]
fn unknown_agents_list_the_accepted_values() {
    let (field, position, message, hint) = parts(&err("name = \"dev\"\nagent = \"claude\"\n"));
    assert_eq!(field, "agent");
    assert_eq!(position, Some((2, 9)));
    assert_eq!(message, "unknown value \"claude\"");
    assert!(
        hint.contains("claude-code, opencode, codex, hermes, custom"),
        "{hint}"
    );
}

#[test]
fn profiles_larger_than_one_mebibyte_are_refused_before_parsing() {
    let text = format!("{MINIMAL}# {}\n", "x".repeat(MAX_PROFILE_BYTES));
    let (field, position, message, hint) = parts(&err(&text));
    assert_eq!((field.as_str(), position), ("", None));
    assert_eq!(
        message,
        format!(
            "the profile is {} bytes, more than the limit of 1048576 bytes (1 MiB)",
            text.len()
        )
    );
    assert!(hint.contains("right file"), "{hint}");
    let fits = format!(
        "{MINIMAL}#{}\n",
        "x".repeat(MAX_PROFILE_BYTES - MINIMAL.len() - 2)
    );
    assert_eq!(fits.len(), MAX_PROFILE_BYTES);
    load("p.toml", &fits).unwrap();
}

#[test]
fn deep_nesting_is_a_clear_error_not_a_stack_overflow() {
    for text in [
        format!(
            "{MINIMAL}x = {}{}\n",
            "[".repeat(10_000),
            "]".repeat(10_000)
        ),
        format!(
            "{MINIMAL}x = {}1{}\n",
            "{a=".repeat(10_000),
            "}".repeat(10_000)
        ),
        format!("{MINIMAL}{} = 1\n", ["a"; 10_000].join(".")),
        format!("{MINIMAL}[{}]\n", ["a"; 10_000].join(".")),
    ] {
        let (field, _, message, hint) = parts(&err(&text));
        assert_eq!(field, "");
        assert_eq!(
            message,
            "the profile nests tables, arrays or dotted keys too deeply"
        );
        assert!(hint.contains("nest at most"), "{hint}");
    }
}

#[test]
fn integers_beyond_i64_are_out_of_range_not_a_wrong_type() {
    let text = format!("{MINIMAL}[resources]\npids_limit = 18446744073709551616\n");
    let (field, position, message, _) = parts(&err(&text));
    assert_eq!(field, "resources.pids_limit");
    assert_eq!(position, Some((4, 14)));
    assert_eq!(
        message,
        "integer out of range: it does not fit a signed 64-bit integer"
    );
}

#[test]
fn a_one_line_array_of_many_values_loads_in_linear_time() {
    let values = vec!["\"a\""; 200_000].join(",");
    let text = format!("{MINIMAL}[packages]\napt = [{values}]\n");
    assert!(text.len() < MAX_PROFILE_BYTES);
    let started = std::time::Instant::now();
    let loaded = load("p.toml", &text).unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(loaded.position("packages.apt[0]"), Some((4, 8)));
    assert_eq!(loaded.position("packages.apt[2]"), Some((4, 16)));
    assert_eq!(
        loaded.position("packages.apt[199999]"),
        Some((4, 8 + 4 * 199_999))
    );
}

#[test]
fn control_characters_in_echoed_keys_and_values_are_escaped() {
    let (field, _, message, _) = parts(&err(&format!("{MINIMAL}\"x\\u001b[2J\" = 1\n")));
    assert_eq!(field, "x\\u{1b}[2J");
    assert_eq!(message, "unknown field `x\\u{1b}[2J`");
    let (field, _, message, _) = parts(&err("name = \"dev\"\nagent = \"claude\\u001b[2J\"\n"));
    assert_eq!(field, "agent");
    assert_eq!(message, "unknown value \"claude\\u{1b}[2J\"");
}

proptest::proptest! {
    #[test]
    fn positions_match_the_one_at_a_time_computation(text in "(name = \"dév\"\n|agent = \"codex\"\n|x = \\[1, \"é\", 3\\]\n|y = \\{ a = \"ü\", b = 2 \\}\n|# ö\n){0,8}") {
        if let Ok(document) = DeTable::parse(&text) {
            let lines = LineIndex::new(&text);
            let mut spans = Vec::new();
            index_table(document.get_ref(), "", &mut spans);
            let expected: HashMap<String, (usize, usize)> = spans
                .iter()
                .map(|(path, span)| (path.clone(), lines.position(&text, span.start)))
                .collect();
            proptest::prop_assert_eq!(lines.positions(&text, spans), expected);
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "(name|agent|\\[egress\\]|\\[\\[mounts\\]\\]|mode|=|\"|é|\n| |x|1|\\[|\\]){0,40}") {
        let _ = load("p.toml", &text);
    }
}
