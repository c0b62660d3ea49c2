use super::*;
use crate::error::Location;
use crate::profile::Profile;
use crate::*;

/// The smallest valid profile; tests append the fields under test.
pub(crate) const MINIMAL: &str = "name = \"dev\"\nagent = \"claude-code\"\n";

/// The first error (in file order) a profile text is refused with.
pub(crate) fn err(text: &str) -> PolicyError {
    load("p.toml", text)
        .expect_err("profile should be rejected")
        .first()
        .clone()
}

/// Every error a profile text is refused with, as (field, line, message).
pub(crate) fn all_errors(text: &str) -> Vec<(String, Option<usize>, String)> {
    load("p.toml", text)
        .expect_err("profile should be rejected")
        .errors()
        .iter()
        .map(|error| {
            let (field, position, message, _) = parts(error);
            (field, position.map(|p| p.0), message)
        })
        .collect()
}

/// (field, position, message, hint) of a profile error.
pub(crate) fn parts(error: &PolicyError) -> (String, Option<(usize, usize)>, String, String) {
    match error {
        PolicyError::Invalid {
            location: Location::Profile {
                field, position, ..
            },
            message,
            hint,
        } => (field.clone(), *position, message.clone(), hint.clone()),
        other => panic!("unexpected error {other:?}"),
    }
}

/// (field, position, message, hint) of the error for MINIMAL plus `extra`.
fn reject(extra: &str) -> (String, Option<(usize, usize)>, String, String) {
    parts(&err(&format!("{MINIMAL}{extra}")))
}

fn accept(extra: &str) -> Profile {
    match load("p.toml", &format!("{MINIMAL}{extra}")) {
        Ok(loaded) => loaded.profile,
        Err(error) => panic!("rejected: {error}"),
    }
}

/// Asserts the field, message and line of MINIMAL plus `extra`'s error.
fn assert_rejects(extra: &str, field: &str, message: &str, line: usize) -> String {
    let (actual_field, position, actual_message, hint) = reject(extra);
    assert_eq!(actual_field, field, "field for {extra:?}");
    assert_eq!(actual_message, message, "message for {extra:?}");
    assert_eq!(position.map(|p| p.0), Some(line), "line for {extra:?}");
    assert!(!hint.is_empty());
    hint
}

const CUSTOM: &str = "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"alpine:3\"\n";

fn custom(extra: &str) -> (String, Option<(usize, usize)>, String, String) {
    parts(&err(&format!("{CUSTOM}{extra}")))
}

#[test]
fn the_minimal_profile_is_valid() {
    accept("");
    load("p.toml", CUSTOM).unwrap();
}

#[test]
fn schema_version_must_be_one() {
    let hint = assert_rejects(
        "schema_version = 2\n",
        "schema_version",
        "unsupported schema_version 2; this agentc reads version 1",
        3,
    );
    assert!(hint.contains("schema_version = 1"));
    let error = err("schema_version = 2\nname = \"dev\"\nagent = \"codex\"\n");
    assert_eq!(parts(&error).1, Some((1, 18)));
}

#[test]
fn names_follow_the_profile_name_pattern() {
    for name in ["Dev", "1dev", "dev.x", "", "a b", &"a".repeat(64)] {
        let (field, position, message, _) =
            parts(&err(&format!("name = {name:?}\nagent = \"codex\"\n")));
        assert_eq!(field, "name");
        assert_eq!(position, Some((1, 8)));
        assert!(message.starts_with("name ") && message.ends_with("is not a valid profile name"));
    }
    load(
        "p.toml",
        &format!("name = \"{}\"\nagent = \"codex\"\n", "a".repeat(63)),
    )
    .unwrap();
}

#[test]
fn home_volume_is_a_volume_name() {
    assert_rejects(
        "home_volume = \"a/b\"\n",
        "home_volume",
        "home_volume is not a docker volume name",
        3,
    );
    assert_rejects(
        "home_volume = \"-a\"\n",
        "home_volume",
        "home_volume is not a docker volume name",
        3,
    );
    assert_eq!(
        accept("home_volume = \" my.vol_1 \"\n")
            .home_volume
            .as_deref(),
        Some("my.vol_1")
    );
}

#[test]
fn secret_variables_the_docker_cli_reads_are_refused() {
    assert_rejects(
        "[provider]\nkind = \"openai\"\napi_key_env = \"DOCKER_CONFIG\"\n",
        "provider.api_key_env",
        "provider.api_key_env DOCKER_CONFIG is a variable the docker CLI reads itself",
        5,
    );
    accept("[provider]\nkind = \"openai\"\napi_key_env = \"DOCKERISH_KEY\"\n");
}

#[test]
fn package_names_are_single_line_and_not_blank() {
    assert_rejects(
        "[packages]\napt = [\"git\", \" \"]\n",
        "packages.apt[1]",
        "packages.apt[1] is blank",
        4,
    );
    assert_rejects(
        "[packages]\nnpm = [\"a\\nb\"]\n",
        "packages.npm[0]",
        "packages.npm[0] must be a single line without nul bytes",
        4,
    );
    assert_rejects(
        "[packages]\nuv_tools = [\"a\\u0000\"]\n",
        "packages.uv_tools[0]",
        "packages.uv_tools[0] must be a single line without nul bytes",
        4,
    );
    assert_rejects(
        "[packages]\nuv_libraries = [\"\"]\n",
        "packages.uv_libraries[0]",
        "packages.uv_libraries[0] is blank",
        4,
    );
    assert_rejects(
        "[packages]\nuv_libraries = [\"--index-url=https://evil.example\"]\n",
        "packages.uv_libraries[0]",
        "packages.uv_libraries[0] must not start with '-'",
        4,
    );
    assert_rejects(
        "[packages]\napt = [\"git curl\"]\n",
        "packages.apt[0]",
        "packages.apt[0] must not contain whitespace (U+0020)",
        4,
    );
    accept("[packages]\nnpm = [\"@langfuse/opencode-observability-plugin@latest\"]\nuv_libraries = [\"requests>=2.31\"]\n");
}

#[test]
fn provider_fields_are_checked() {
    assert_rejects(
        "[provider]\nkind = \" \"\n",
        "provider.kind",
        "provider.kind is blank",
        4,
    );
    assert_rejects(
        "[provider]\nkind = \"x\"\nendpoint = \"ftp://h\"\n",
        "provider.endpoint",
        "provider.endpoint is not an http(s) url with a host: the scheme is \"ftp\", not http or https",
        5,
    );
    let (_, _, message, _) = reject("[provider]\nkind = \"x\"\nendpoint = \"https://\"\n");
    assert!(
        message.starts_with("provider.endpoint is not an http(s) url with a host"),
        "{message}"
    );
    let (_, _, message, _) = reject("[provider]\nkind = \"x\"\nendpoint = \"https://a b\"\n");
    assert!(
        message.ends_with("whitespace or control characters"),
        "{message}"
    );
    assert_rejects(
        "[provider]\nkind = \"x\"\nmodel = \"\"\n",
        "provider.model",
        "provider.model is blank",
        5,
    );
    let (field, position, message, hint) =
        reject("[provider]\nkind = \"x\"\napi_key_env = \"sk-secret-value\"\n");
    assert_eq!(field, "provider.api_key_env");
    assert_eq!(position, Some((5, 15)));
    assert_eq!(
        message,
        "provider.api_key_env must be an upper-case environment variable name"
    );
    assert!(!message.contains("sk-secret") && !hint.contains("sk-secret"));
    accept("[provider]\nkind = \"anthropic\"\nendpoint = \"http://10.0.0.1:8080/v1\"\napi_key_env = \"_KEY1\"\n");
}

#[test]
fn proxy_fields_are_checked() {
    assert_rejects(
        "[proxy]\nhttp = \"proxy:3128\"\n",
        "proxy.http",
        "proxy.http is not an http(s) url with a host: it does not start with http:// or https://",
        4,
    );
    let (field, _, _, _) = reject("[proxy]\nhttps = \"nope\"\n");
    assert_eq!(field, "proxy.https");
    assert_rejects(
        "[proxy]\nno_proxy = [\"a\", \"  \"]\n",
        "proxy.no_proxy[1]",
        "proxy.no_proxy[1] is blank",
        4,
    );
    assert_rejects(
        "[proxy]\nno_proxy = [\"a b\"]\n",
        "proxy.no_proxy[0]",
        "proxy.no_proxy[0] must not contain whitespace (U+0020)",
        4,
    );
    assert_rejects(
        "[proxy]\nca_file = \"\"\n",
        "proxy.ca_file",
        "proxy.ca_file is blank",
        4,
    );
    assert_rejects(
        "[proxy]\nca_dir = \"a\\nb\"\n",
        "proxy.ca_dir",
        "proxy.ca_dir must be a single line without nul bytes",
        4,
    );
    assert_rejects(
        "[proxy]\nca_file = \"a\"\nca_dir = \"b\"\n",
        "proxy",
        "proxy.ca_file and proxy.ca_dir are mutually exclusive",
        3,
    );
}

#[test]
fn egress_mode_is_one_of_three_case_insensitively() {
    let hint = assert_rejects(
        "[egress]\nmode = \"open\"\n",
        "egress.mode",
        "egress.mode \"open\" is not an egress mode",
        4,
    );
    assert!(hint.contains("\"deny\", \"allowlist\" or \"unrestricted\""));
    assert_eq!(
        accept("[egress]\nmode = \"Unrestricted\"\n").egress.mode,
        EgressMode::Unrestricted
    );
}

#[test]
fn egress_hosts_are_named_hosts() {
    assert_rejects(
        "[egress]\nhosts = [\"a\", \"\"]\n",
        "egress.hosts[1]",
        "egress.hosts[1] is blank",
        4,
    );
    let hint = assert_rejects(
        "[egress]\nhosts = [\" * \"]\n",
        "egress.hosts[0]",
        "egress.hosts[0]: '*' is not a hostname",
        4,
    );
    assert!(hint.contains("mode = \"unrestricted\""), "{hint}");
    assert_rejects(
        "[egress]\nhosts = [\"a\\nb\"]\n",
        "egress.hosts[0]",
        "egress.hosts[0] must be a single line without nul bytes",
        4,
    );
    assert_rejects(
        "[egress]\nhosts = [\"a\\tb\"]\n",
        "egress.hosts[0]",
        "egress.hosts[0] must not contain whitespace (U+0009)",
        4,
    );
}

#[test]
fn gateway_fields_are_checked() {
    let gateway = "[egress]\ngateway_host = \"gw\"\ngateway_port = 22\n";
    accept(gateway);
    assert_rejects(
        "[egress]\ngateway_host = \"\"\ngateway_port = 22\n",
        "egress.gateway_host",
        "egress.gateway_host is blank",
        4,
    );
    assert_rejects(
        "[egress]\ngateway_host = \"gw\"\ngateway_port = 0\n",
        "egress.gateway_port",
        "egress.gateway_port must be between 1 and 65535, not 0",
        5,
    );
    assert_rejects(
        "[egress]\ngateway_host = \"gw\"\ngateway_port = 65536\n",
        "egress.gateway_port",
        "egress.gateway_port must be between 1 and 65535, not 65536",
        5,
    );
    assert_rejects(
        &format!("{gateway}gateway_user = \"\"\n"),
        "egress.gateway_user",
        "egress.gateway_user is blank",
        6,
    );
    assert_rejects(
        &format!("{gateway}gateway_access_hostname = \"a b\"\n"),
        "egress.gateway_access_hostname",
        "egress.gateway_access_hostname must not contain whitespace (U+0020)",
        6,
    );
    assert_rejects(
        &format!("{gateway}gateway_bootstrap_allow = [\" \"]\n"),
        "egress.gateway_bootstrap_allow[0]",
        "egress.gateway_bootstrap_allow[0] is blank",
        6,
    );
    assert_rejects(
        &format!("{gateway}gateway_bootstrap_allow = [\"10.0.0.0/8\", \"host.example\"]\n"),
        "egress.gateway_bootstrap_allow[1]",
        "egress.gateway_bootstrap_allow[1] \"host.example\" is not an ip address or cidr",
        6,
    );
    accept(&format!("{gateway}gateway_bootstrap_allow = [\"10.0.0.1\", \"10.0.0.0/8\", \"::1\", \"fd00::/8\", \"10.1.0.0/255.255.0.0\"]\n"));
    assert_rejects(
        &format!("{gateway}gateway_key_file = \"\"\ngateway_known_hosts_file = \"k\"\n"),
        "egress.gateway_key_file",
        "egress.gateway_key_file is blank",
        6,
    );
    assert_rejects(
        &format!("{gateway}gateway_key_file = \"k\"\ngateway_known_hosts_file = \"\\n\"\n"),
        "egress.gateway_known_hosts_file",
        "egress.gateway_known_hosts_file is blank",
        7,
    );
}

#[test]
fn gateway_host_and_port_go_together() {
    assert_rejects(
        "[egress]\ngateway_host = \"gw\"\n",
        "egress.gateway_host",
        "egress.gateway_host requires egress.gateway_port",
        4,
    );
    assert_rejects(
        "[egress]\ngateway_port = 22\n",
        "egress.gateway_port",
        "egress.gateway_port requires egress.gateway_host",
        4,
    );
}

#[test]
fn gateway_options_require_a_gateway_host() {
    let cases = [
        ("gateway_user = \"u\"", "egress.gateway_user"),
        (
            "gateway_access_hostname = \"h\"",
            "egress.gateway_access_hostname",
        ),
        (
            "gateway_bootstrap_allow = [\"10.0.0.1\"]",
            "egress.gateway_bootstrap_allow",
        ),
        (
            "gateway_key_file = \"k\"\ngateway_known_hosts_file = \"h\"",
            "egress.gateway_key_file",
        ),
    ];
    for (option, field) in cases {
        assert_rejects(
            &format!("[egress]\n{option}\n"),
            field,
            &format!("{field} requires egress.gateway_host"),
            4,
        );
    }
}

#[test]
fn gateway_key_and_known_hosts_go_together() {
    let gateway = "[egress]\ngateway_host = \"gw\"\ngateway_port = 22\n";
    assert_rejects(
        &format!("{gateway}gateway_key_file = \"k\"\n"),
        "egress.gateway_known_hosts_file",
        "egress.gateway_key_file requires egress.gateway_known_hosts_file",
        3,
    );
    assert_rejects(
        &format!("{gateway}gateway_known_hosts_file = \"k\"\n"),
        "egress.gateway_key_file",
        "egress.gateway_known_hosts_file requires egress.gateway_key_file",
        3,
    );
}

#[test]
fn unrestricted_egress_has_no_hosts_and_no_gateway() {
    assert_rejects(
        "[egress]\nmode = \"unrestricted\"\nhosts = [\"a\"]\n",
        "egress.hosts",
        "egress.hosts must be empty when egress.mode is unrestricted",
        5,
    );
    assert_rejects(
        "[egress]\nmode = \"unrestricted\"\ngateway_host = \"gw\"\ngateway_port = 22\n",
        "egress.gateway_host",
        "egress.gateway_host cannot be used when egress.mode is unrestricted",
        5,
    );
}

#[test]
fn decant_fields_are_checked() {
    assert_rejects(
        "[decant]\nsource_profiles = [\" \"]\n",
        "decant.source_profiles[0]",
        "decant.source_profiles[0] is blank",
        4,
    );
    assert_rejects(
        "[decant]\nsource_profiles = [\"ok\", \"Bad\"]\n",
        "decant.source_profiles[1]",
        "decant.source_profiles[1] \"Bad\" is not a valid profile name",
        4,
    );
    assert_rejects(
        "[decant]\nenabled = true\n",
        "decant.source_profiles",
        "decant.enabled requires decant.source_profiles",
        3,
    );
    assert_rejects(
        "[decant]\nimage = \" \"\n",
        "decant.image",
        "decant.image is empty",
        4,
    );
    assert_rejects(
        "[decant]\nimage = \"a b\"\n",
        "decant.image",
        "decant.image must not contain whitespace (U+0020)",
        4,
    );
    assert_rejects(
        "[decant]\nimage = \"--privileged\"\n",
        "decant.image",
        "decant.image must not start with '-'",
        4,
    );
    assert_rejects(
        "[decant]\ndata_volume = \"a:b\"\n",
        "decant.data_volume",
        "decant.data_volume is not a docker volume name",
        4,
    );
    assert_rejects(
        "[decant]\nbind_address = \"\"\n",
        "decant.bind_address",
        "decant.bind_address is blank",
        4,
    );
    assert_rejects(
        "[decant]\nbind_address = \"1.2.3.4 -p\"\n",
        "decant.bind_address",
        "decant.bind_address must not contain whitespace (U+0020)",
        4,
    );
    assert_rejects(
        "[decant]\nport = 70000\n",
        "decant.port",
        "decant.port must be between 1 and 65535, not 70000",
        4,
    );
    let profile =
        accept("[decant]\nenabled = true\nsource_profiles = [\" dev \"]\nimage = \" decant:1 \"\n");
    assert_eq!(profile.decant.source_profiles, ["dev"]);
    assert_eq!(profile.decant.image.as_deref(), Some("decant:1"));
}

#[test]
fn decant_is_limited_to_claude_code_and_codex() {
    let text = "name = \"dev\"\nagent = \"opencode\"\n[decant]\nenabled = true\nsource_profiles = [\"a\"]\n";
    let (field, position, message, _) = parts(&err(text));
    assert_eq!(field, "decant.enabled");
    assert_eq!(position, Some((4, 11)));
    assert_eq!(
        message,
        "decant.enabled is supported only for claude-code and codex, not \"opencode\""
    );
}

#[test]
fn langfuse_fields_are_checked() {
    assert_rejects(
        "[langfuse]\nenabled = true\n",
        "langfuse.base_url",
        "langfuse.enabled requires langfuse.base_url",
        3,
    );
    assert_rejects(
        "[langfuse]\nbase_url = \"langfuse\"\n",
        "langfuse.base_url",
        "langfuse.base_url is not an http(s) url with a host: it does not start with http:// or https://",
        4,
    );
    assert_rejects(
        "[langfuse]\npublic_key_env = \"pk-lf-123\"\n",
        "langfuse.public_key_env",
        "langfuse.public_key_env must be an upper-case environment variable name",
        4,
    );
    assert_rejects(
        "[langfuse]\nsecret_key_env = \"9X\"\n",
        "langfuse.secret_key_env",
        "langfuse.secret_key_env must be an upper-case environment variable name",
        4,
    );
    assert_rejects(
        "[langfuse]\npublic_key_env = \"LANGFUSE_SECRET_KEY\"\n",
        "langfuse.secret_key_env",
        "langfuse.public_key_env and langfuse.secret_key_env must differ",
        3,
    );
    assert_rejects(
        "[langfuse]\nenvironment = \"\"\n",
        "langfuse.environment",
        "langfuse.environment is blank",
        4,
    );
    assert_rejects(
        "[langfuse]\nuser_id = \"\"\n",
        "langfuse.user_id",
        "langfuse.user_id is blank",
        4,
    );
}

#[test]
fn langfuse_is_limited_to_three_agents() {
    let text = "name = \"dev\"\nagent = \"hermes\"\n[langfuse]\nenabled = true\nbase_url = \"https://lf.example\"\n";
    let (field, _, message, _) = parts(&err(text));
    assert_eq!(field, "langfuse.enabled");
    assert_eq!(
        message,
        "langfuse.enabled is supported only for claude-code, codex and opencode, not \"hermes\""
    );
}

#[test]
fn langfuse_needs_egress_to_its_host() {
    let langfuse = "[langfuse]\nenabled = true\nbase_url = \"https://LF.example:3000/x\"\n";
    assert_rejects(
        &format!("{langfuse}[egress]\nmode = \"deny\"\n"),
        "langfuse.base_url",
        "langfuse.enabled needs egress to the langfuse host, but egress.mode is deny",
        5,
    );
    let hint = assert_rejects(
        &format!("{langfuse}[egress]\nhosts = [\"other.example\"]\n"),
        "langfuse.base_url",
        "langfuse.base_url host lf.example is not in egress.hosts",
        5,
    );
    assert_eq!(
        hint,
        "add \"lf.example\" to egress.hosts so traces can reach langfuse"
    );
    accept(&format!("{langfuse}[egress]\nhosts = [\"Lf.Example\"]\n"));
    accept(&format!("{langfuse}[egress]\nmode = \"unrestricted\"\n"));
    accept(&format!(
        "{langfuse}[egress]\nmode = \"deny\"\ngateway_host = \"gw\"\ngateway_port = 22\n"
    ));
    let ipv6 = "[langfuse]\nenabled = true\nbase_url = \"http://[::1]:3000\"\n[egress]\nhosts = [\"::1\"]\nenforce = \"image\"\n";
    accept(ipv6);
}

#[test]
fn configuration_import_fields_are_checked() {
    assert_rejects(
        "[configuration_import]\nsource = \" \"\n",
        "configuration_import.source",
        "configuration_import.source is blank",
        4,
    );
    assert_rejects(
        "[configuration_import]\nsource = \"a\"\ntarget = \"\"\n",
        "configuration_import.target",
        "configuration_import.target is blank",
        5,
    );
    assert_rejects(
        "[configuration_import]\nsource = \"a\"\nformat = \"ini\"\n",
        "configuration_import.format",
        "configuration_import.format \"ini\" is not supported",
        5,
    );
    assert_rejects(
        "[configuration_import]\nsource = \"a\"\non_conflict = \"merge\"\n",
        "configuration_import.on_conflict",
        "configuration_import.on_conflict \"merge\" is not a conflict policy",
        5,
    );
    for format in ["json", "JSONC", ".jsonc"] {
        accept(&format!(
            "[configuration_import]\nsource = \"a\"\nformat = \"{format}\"\n"
        ));
    }
}

#[test]
fn configuration_import_format_and_target_follow_the_agent() {
    for (agent, format) in [("codex", ".toml"), ("hermes", "yml"), ("hermes", "yaml")] {
        let text = format!(
            "name = \"p\"\nagent = \"{agent}\"\n[configuration_import]\nsource = \"a\"\nformat = \"{format}\"\n"
        );
        crate::load::load("p.toml", &text)
            .unwrap_or_else(|error| panic!("{agent} {format}: {error}"));
    }
    let (_, _, message, _) = parts(&err(
        "name = \"p\"\nagent = \"codex\"\n[configuration_import]\nsource = \"a\"\nformat = \"json\"\n",
    ));
    assert_eq!(message, "codex reads toml configuration, not json");
    let (field, _, message, _) = parts(&err(
        "name = \"p\"\nagent = \"opencode\"\n[configuration_import]\nsource = \"a\"\ntarget = \"/etc/x.json\"\n",
    ));
    assert_eq!(field, "configuration_import.target");
    assert_eq!(
        message,
        "configuration_import.target must be inside /home/opencode"
    );
}

#[test]
fn configuration_import_excludes_configuration_mounts() {
    let text = "[configuration_import]\nsource = \"a\"\n[[configuration_mounts]]\nsource = \"b\"\ntarget = \"/b\"\n";
    assert_rejects(
        text,
        "configuration_import",
        "configuration_import and configuration_mounts are mutually exclusive",
        3,
    );
}

#[test]
fn mount_fields_are_checked() {
    let first = "[[mounts]]\nsource = \"a\"\ntarget = \"/a\"\n";
    assert_rejects(
        &format!("{first}[[mounts]]\nsource = \" \"\ntarget = \"/b\"\n"),
        "mounts[1].source",
        "mounts[1].source is blank",
        7,
    );
    assert_rejects(
        &format!("{first}[[mounts]]\nsource = \"b\"\ntarget = \"\"\n"),
        "mounts[1].target",
        "mounts[1].target is blank",
        8,
    );
    assert_rejects(
        &format!("{first}[[mounts]]\nsource = \"b\"\ntarget = \"/b\\u0000\"\n"),
        "mounts[1].target",
        "mounts[1].target must be a single line without nul bytes",
        8,
    );
    assert_rejects(
        &format!("{first}[[mounts]]\nsource = \"b\"\ntarget = \"b\"\n"),
        "mounts[1].target",
        "mounts[1].target must be an absolute path",
        8,
    );
    assert_rejects(
        &format!("{first}[[mounts]]\nsource = \"b\"\ntarget = \" / \"\n"),
        "mounts[1].target",
        "mounts[1].target must not be the container's root /",
        8,
    );
    assert_rejects(
        "[[configuration_mounts]]\nsource = \"b\"\ntarget = \"/b\"\non_conflict = \"skip\"\n",
        "configuration_mounts[0].on_conflict",
        "configuration_mounts[0].on_conflict \"skip\" is not a conflict policy",
        6,
    );
    assert_rejects(
        "[[mounts]]\nsource = \"b\"\ntarget = \"/b\"\non_conflict = \"replace\"\n",
        "mounts[0].on_conflict",
        "mounts[0].on_conflict is only supported for seed mounts",
        6,
    );
    let profile = accept(
        "[[mounts]]\ntype = \"seed\"\nsource = \"b\"\ntarget = \"/b\"\non_conflict = \"REPLACE\"\n",
    );
    assert_eq!(
        profile.mounts[0].on_conflict,
        crate::profile::OnConflict::Replace
    );
}

#[test]
fn escape_sequences_in_text_fields_are_refused() {
    assert_rejects(
        "[provider]\nkind = \"anthropic\"\nmodel = \"m\\u001b]0;x\\u0007\"\n",
        "provider.model",
        "provider.model must not contain control characters",
        5,
    );
    accept("[provider]\nkind = \"anthropic\"\nmodel = \"a\\tb\"\n");
}

#[test]
fn hosts_and_users_starting_with_a_dash_are_refused() {
    let gateway = "[egress]\ngateway_host = \"gw\"\ngateway_port = 22\n";
    assert_rejects(
        &format!("{gateway}gateway_user = \"-oProxyCommand=id\"\n"),
        "egress.gateway_user",
        "egress.gateway_user must not start with '-'",
        6,
    );
    assert_rejects(
        "[egress]\nhosts = [\"-x.example\"]\n",
        "egress.hosts[0]",
        "egress.hosts[0] must not start with '-'",
        4,
    );
    accept("[egress]\nhosts = [\"x-y.example\", \".example.org\"]\n");
}

#[test]
fn mount_targets_with_dot_dot_are_refused() {
    let mount = |target: &str| format!("[[mounts]]\nsource = \"/srv\"\ntarget = \"{target}\"\n");
    for (target, clean) in [
        ("/home/claude/../../etc", "/etc"),
        ("/data/./x", "/data/x"),
        ("//data", "/data"),
        ("/data//x/", "/data/x"),
    ] {
        let hint = assert_rejects(
            &mount(target),
            "mounts[0].target",
            "mounts[0].target must be a clean absolute path without `.`, `..` or empty components",
            5,
        );
        assert_eq!(hint, format!("write the path as {clean}"));
    }
    accept(&mount("/data/x/"));
    let import = "[configuration_import]\nsource = \"c.json\"\n\
                  target = \"/home/claude/../../etc/cron.d/x\"\n";
    assert_rejects(
        import,
        "configuration_import.target",
        "configuration_import.target must be a clean absolute path without `.`, `..` or empty components",
        5,
    );
}

#[test]
fn mount_targets_under_proc_sys_or_dev_are_refused() {
    for target in [
        "/proc",
        "/proc/sys",
        "/sys",
        "/sys/fs/cgroup/",
        "/dev",
        "/dev/shm",
    ] {
        let clean = target.trim_end_matches('/');
        let hint = assert_rejects(
            &format!("[[mounts]]\nsource = \"/srv\"\ntarget = \"{target}\"\n"),
            "mounts[0].target",
            &format!("mounts[0].target {clean} is inside /proc, /sys or /dev"),
            5,
        );
        assert!(hint.contains("kernel's interfaces"), "{hint}");
    }
    accept("[[mounts]]\nsource = \"/srv\"\ntarget = \"/devices\"\n");
    accept("[[mounts]]\nsource = \"/srv\"\ntarget = \"/home/claude/proc\"\n");
}

#[test]
fn overlapping_mount_targets_are_rejected() {
    let text = "[[configuration_mounts]]\nsource = \"a\"\ntarget = \"/home/a/\"\n\
                [[mounts]]\nsource = \"x\"\ntarget = \"/home/a-c\"\n\
                [[mounts]]\nsource = \"b\"\ntarget = \"/home/a/b\"\n";
    assert_rejects(text, "mounts[1].target", "mount targets overlap: configuration_mounts[0].target /home/a and mounts[1].target /home/a/b", 11);
    let text = "[[mounts]]\nsource = \"a\"\ntarget = \"/x\"\n[[mounts]]\nsource = \"b\"\ntarget = \"/x\"\n";
    assert_rejects(
        text,
        "mounts[1].target",
        "mount targets overlap: mounts[0].target /x and mounts[1].target /x",
        8,
    );
    accept("[[mounts]]\nsource = \"a\"\ntarget = \"/x\"\n[[mounts]]\nsource = \"b\"\ntarget = \"/xy\"\n");
}

#[test]
fn custom_requires_an_image_reference() {
    let (field, position, message, _) = parts(&err("name = \"box\"\nagent = \"custom\"\n"));
    assert_eq!(field, "image.ref");
    assert_eq!(position, None);
    assert_eq!(message, "agent \"custom\" requires image.ref");
}

#[test]
fn custom_forbids_agent_home_features() {
    let cases = [
        ("home_volume = \"v\"\n", "home_volume"),
        ("[packages]\napt = [\"git\"]\n", "packages"),
        ("[provider]\nkind = \"anthropic\"\n", "provider"),
        ("[langfuse]\nenvironment = \"x\"\n", "langfuse"),
        ("[decant]\nport = 9000\n", "decant"),
        (
            "[configuration_import]\nsource = \"a\"\n",
            "configuration_import",
        ),
        (
            "[[configuration_mounts]]\nsource = \"a\"\ntarget = \"/a\"\n",
            "configuration_mounts",
        ),
    ];
    for (extra, field) in cases {
        // Top-level keys must precede the [image] table.
        let text = if extra.starts_with('[') {
            format!("{CUSTOM}{extra}")
        } else {
            format!("{extra}{CUSTOM}")
        };
        let (actual, position, message, hint) = parts(&err(&text));
        assert_eq!(actual, field);
        assert!(position.is_some(), "{field}");
        assert_eq!(
            message,
            format!("{field} is not supported for agent \"custom\"")
        );
        assert!(hint.contains("have no agent home"), "{hint}");
    }
    let (field, position, message, hint) =
        custom("[[mounts]]\ntype = \"seed\"\nsource = \"a\"\ntarget = \"/a\"\n");
    assert_eq!(field, "mounts[0].type");
    assert_eq!(position, Some((6, 8)));
    assert_eq!(
        message,
        "mounts[0].type: seed mounts are not supported for agent \"custom\""
    );
    assert!(hint.contains("have no agent home"), "{hint}");
}

#[test]
fn custom_only_image_fields_are_rejected_for_agents() {
    for field in [
        "entrypoint = \"/bin/sh\"",
        "command = [\"sleep\"]",
        "user = \"1000\"",
    ] {
        let (actual, _, message, _) = reject(&format!("[image]\n{field}\n"));
        let name = field.split(' ').next().unwrap();
        assert_eq!(actual, format!("image.{name}"));
        assert_eq!(
            message,
            format!("image.{name} is only for agent \"custom\", not \"claude-code\"")
        );
    }
}

#[test]
fn image_fields_are_checked() {
    let (field, _, message, _) = parts(&err(
        "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"\"\n",
    ));
    assert_eq!(
        (field.as_str(), message.as_str()),
        ("image.ref", "image.ref is empty")
    );
    let (_, _, message, _) = parts(&err(
        "name = \"box\"\nagent = \"custom\"\n[image]\nref = \" alpine\"\n",
    ));
    assert_eq!(message, "image.ref must not contain whitespace (U+0020)");
    let (_, _, message, _) = parts(&err(
        "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"-v\"\n",
    ));
    assert_eq!(message, "image.ref must not start with '-'");
    let (field, position, message, _) = custom("entrypoint = \"\"\n");
    assert_eq!(
        (field.as_str(), position),
        ("image.entrypoint", Some((5, 14)))
    );
    assert_eq!(
        message,
        "image.entrypoint must be a non-empty program without nul bytes"
    );
    let (field, _, message, _) = custom("command = [\"a\", \"b\\u0000\"]\n");
    assert_eq!(
        (field.as_str(), message.as_str()),
        (
            "image.command[1]",
            "image.command[1] must not contain nul bytes"
        )
    );
    for user in ["", "a b", "1000:", ":1000", "a:b:c", "$x"] {
        let (field, _, message, _) = custom(&format!("user = {user:?}\n"));
        assert_eq!(field, "image.user");
        assert_eq!(message, format!("image.user {user:?} is not a user"));
    }
    for user in ["root", "1000", "1000:1000", "agent:staff", "_svc"] {
        load(
            "p.toml",
            &format!(
                "{CUSTOM}user = {user:?}\nentrypoint = \"/bin/sh\"\ncommand = [\"-c\", \"\"]\n"
            ),
        )
        .unwrap();
    }
    assert_rejects(
        "[image]\nbuild_context = \"\"\n",
        "image.build_context",
        "image.build_context is blank",
        4,
    );
    assert_rejects(
        "[image]\ndockerfile = \"a\\rb\"\n",
        "image.dockerfile",
        "image.dockerfile must be a single line without nul bytes",
        4,
    );
}

#[test]
fn resources_are_checked() {
    let (field, position, message, _) = reject("[resources]\nmemory = \"lots\"\n");
    assert_eq!(
        (field.as_str(), position),
        ("resources.memory", Some((4, 10)))
    );
    assert!(
        message.starts_with("resources.memory \"lots\" is not a size: expected a number"),
        "{message}"
    );
    assert_rejects(
        "[resources]\nmemory = \"5m\"\n",
        "resources.memory",
        "resources.memory \"5m\" is below docker's minimum of 6m",
        4,
    );
    accept("[resources]\nmemory = \"6m\"\n");
    assert_rejects(
        "[resources]\nshm_size = \"0\"\n",
        "resources.shm_size",
        "resources.shm_size must be greater than 0",
        4,
    );
    let (_, _, message, _) = reject("[resources]\nshm_size = \"1x\"\n");
    assert!(
        message.starts_with("resources.shm_size \"1x\" is not a size: unknown unit"),
        "{message}"
    );
    for cpus in ["0", "-1", "\"0\"", "\"1.0000000001\"", "\"x\""] {
        let (field, _, message, _) = reject(&format!("[resources]\ncpus = {cpus}\n"));
        assert_eq!(field, "resources.cpus");
        assert!(
            message.starts_with("resources.cpus \""),
            "{cpus}: {message}"
        );
    }
    assert_rejects(
        "[resources]\ncpus = 1025\n",
        "resources.cpus",
        "resources.cpus 1025 is more than 1024",
        4,
    );
    assert_rejects(
        "[resources]\ncpus = \"1024.5\"\n",
        "resources.cpus",
        "resources.cpus 1024.5 is more than 1024",
        4,
    );
    accept("[resources]\ncpus = 1.5\nmemory = \"4g\"\nshm_size = \"256m\"\npids_limit = 4194304\n");
    accept("[resources]\ncpus = \"1024\"\n");
    accept("[resources]\ncpus = 0.01\n");
    assert_rejects(
        "[resources]\ncpus = \"0.009999999\"\n",
        "resources.cpus",
        "resources.cpus 0.009999999 is below docker's minimum of 0.01",
        4,
    );
    assert_rejects(
        "[resources]\npids_limit = 0\n",
        "resources.pids_limit",
        "resources.pids_limit must be between 1 and 4194304, not 0",
        4,
    );
    assert_rejects(
        "[resources]\npids_limit = 4194305\n",
        "resources.pids_limit",
        "resources.pids_limit must be between 1 and 4194304, not 4194305",
        4,
    );
}

#[test]
fn sizes_beyond_docker_exact_range_are_rejected() {
    // 2^53 - 1 bytes is the largest size docker's float64 parse carries exactly.
    accept("[resources]\nmemory = \"9007199254740991\"\nshm_size = \"9007199254740991\"\n");
    accept("[resources]\nmemory = \"7p\"\nshm_size = \"7.99p\"\n");
    for (field, written) in [
        ("memory", "8p"),
        ("memory", "9007199254740992"),
        ("memory", "9223372036854775807"),
        ("shm_size", "8p"),
        ("shm_size", "1024p"),
    ] {
        let (path, _, message, hint) = reject(&format!("[resources]\n{field} = \"{written}\"\n"));
        assert_eq!(path, format!("resources.{field}"));
        assert!(
            message.starts_with(&format!("resources.{field} \"{written}\" is "))
                && message
                    .contains("more than the 9007199254740991 bytes docker can carry exactly"),
            "{message}"
        );
        assert!(hint.contains("below 8p"), "{hint}");
    }
    // cpus and pids_limit are bounded far inside the backends' ranges.
    const { assert!(MAX_NANO_CPUS < i64::MAX as u64) };
    const { assert!(MAX_PIDS_LIMIT < i32::MAX as u32) };
}

#[test]
fn logging_is_checked() {
    accept("[logging]\nmax_size = \"off\"\n");
    accept("[logging]\nmax_size = \"1k\"\nmax_file = 100\n");
    assert_rejects(
        "[logging]\nmax_size = \"1023\"\n",
        "logging.max_size",
        "logging.max_size \"1023\" is below 1k",
        4,
    );
    let (_, _, message, _) = reject("[logging]\nmax_size = \"OFF!\"\n");
    assert!(
        message.starts_with("logging.max_size \"OFF!\" is not a size"),
        "{message}"
    );
    assert_rejects(
        "[logging]\nmax_file = 0\n",
        "logging.max_file",
        "logging.max_file must be between 1 and 100, not 0",
        4,
    );
    assert_rejects(
        "[logging]\nmax_file = 101\n",
        "logging.max_file",
        "logging.max_file must be between 1 and 100, not 101",
        4,
    );
    assert_rejects(
        "[logging]\nmax_size = \"off\"\nmax_file = 3\n",
        "logging.max_file",
        "logging.max_file contradicts logging.max_size = \"off\"",
        5,
    );
}

#[test]
fn network_name_is_a_user_defined_network() {
    accept("[network]\nname = \"dev-net.1_x\"\n");
    assert_rejects(
        "[network]\nname = \"container:abc\"\n",
        "network.name",
        "network.name must not join another container's network",
        4,
    );
    for mode in ["host", "none", "default", "HOST"] {
        assert_rejects(
            &format!("[network]\nname = \"{mode}\"\n"),
            "network.name",
            &format!("network.name \"{mode}\" is a docker network mode, not a network"),
            4,
        );
    }
    for name in ["", "-x", "a b", &"a".repeat(129)] {
        assert_rejects(
            &format!("[network]\nname = \"{name}\"\n"),
            "network.name",
            &format!("network.name {name:?} is not a docker network name"),
            4,
        );
    }
    assert_rejects(
        "[egress]\nmode = \"deny\"\n[network]\nname = \"n\"\n",
        "network.name",
        "network.name contradicts egress.mode = \"deny\" without a gateway",
        6,
    );
    accept("[egress]\nmode = \"deny\"\ngateway_host = \"gw\"\ngateway_port = 22\n[network]\nname = \"n\"\n");
}

#[test]
fn published_ports_are_ports_without_duplicates() {
    accept("[network]\npublish = [80, \"81\", \"53/udp\", \"53/tcp\", 65535]\n");
    for (port, reason) in [
        ("0", "port 0 is out of range; ports are 1 to 65535"),
        ("65536", "port 65536 is out of range; ports are 1 to 65535"),
        ("-1", "port -1 is out of range; ports are 1 to 65535"),
        ("\"80/sctp\"", "protocol \"sctp\" is not tcp or udp"),
        ("\"80/\"", "protocol \"\" is not tcp or udp"),
        ("\"\"", "\"\" is not a port number"),
        ("\"x\"", "\"x\" is not a port number"),
        ("\"/tcp\"", "\"\" is not a port number"),
        ("\"+80\"", "\"+80\" is not a port number"),
        (
            "\"99999/udp\"",
            "port 99999 is out of range; ports are 1 to 65535",
        ),
        (
            "\"127.0.0.1:8080\"",
            "a host address needs HOST_PORT:PORT after it (or ADDRESS::PORT for a port the \
             daemon picks)",
        ),
        (
            "\"70000:80\"",
            "host port: port 70000 is out of range; ports are 1 to 65535",
        ),
    ] {
        let (field, _, message, _) = reject(&format!("[network]\npublish = [{port}]\n"));
        assert_eq!(field, "network.publish[0]");
        assert_eq!(
            message,
            format!("network.publish[0] is not a port: {reason}"),
            "{port}"
        );
    }
    assert_rejects(
        "[network]\npublish = [80,\n \"80/tcp\"]\n",
        "network.publish[1]",
        "network.publish[1] publishes 80/tcp twice",
        5,
    );
    // On a named network the ports are exposed there (as with AGENTC_NETWORK).
    accept("[network]\nname = \"n\"\npublish = [80]\n");
    // A host port or address of the profile's choosing; each container port and each host
    // binding once.
    accept("[network]\npublish = [\"18080:8080\", \"0.0.0.0:18081:8081\", \"[::1]::53/udp\", \"53\"]\n");
    assert_rejects(
        "[network]\npublish = [\"18080:80\",\n \"18080:81\"]\n",
        "network.publish[1]",
        "network.publish[1] binds host port 18080/tcp on 127.0.0.1 a second time",
        5,
    );
    assert_rejects(
        "[network]\npublish = [\"18080:80\",\n \"18081:80\"]\n",
        "network.publish[1]",
        "network.publish[1] publishes 80/tcp twice",
        5,
    );
    accept("[network]\npublish = [\"18080:80\", \"127.0.0.2:18080:81\", \"18080:80/udp\"]\n");
    assert_rejects(
        "[network]\nname = \"n\"\npublish = [\"18080:80\"]\n",
        "network.publish[0]",
        "network.publish[0] chooses where the host publishes 80/tcp, but on a named network the \
         sandbox's ports are exposed there, not published on the host",
        5,
    );
}

#[test]
fn added_capabilities_are_linux_capabilities() {
    accept("[security]\nadd_capabilities = [\"net_admin\", \"CAP_SYS_PTRACE\"]\n");
    let hint = assert_rejects(
        "[security]\nadd_capabilities = [\"NET_ADMN\"]\n",
        "security.add_capabilities[0]",
        "security.add_capabilities[0] \"NET_ADMN\" is not a linux capability",
        4,
    );
    assert_eq!(hint, "did you mean \"NET_ADMIN\"?");
    let hint = assert_rejects(
        "[security]\nadd_capabilities = [\"everything\"]\n",
        "security.add_capabilities[0]",
        "security.add_capabilities[0] \"everything\" is not a linux capability",
        4,
    );
    assert!(hint.contains("SYS_ADMIN"), "{hint}");
    let hint = assert_rejects(
        "[security]\nadd_capabilities = [\"all\"]\n",
        "security.add_capabilities[0]",
        "security.add_capabilities[0]: \"ALL\" is not accepted",
        4,
    );
    assert!(hint.contains("list each capability"));
    assert_rejects(
        "[security]\nadd_capabilities = [\"NET_RAW\", \"cap_net_raw\"]\n",
        "security.add_capabilities[1]",
        "security.add_capabilities[1] repeats NET_RAW",
        4,
    );
}

#[test]
fn errors_display_file_position_field_and_hint() {
    let error = err(&format!("{MINIMAL}[resources]\npids_limit = 0\n"));
    assert_eq!(
        error.with_hint().to_string(),
        "p.toml:4:14: resources.pids_limit: resources.pids_limit must be between 1 and 4194304, not 0\n  hint: write a process limit such as 512, or \"off\" for no limit"
    );
}

#[test]
fn every_independent_error_is_reported_in_file_order() {
    // Unknown keys, wrong types, bad values and rule errors, across tables, in one run.
    let text = format!(
        "{MINIMAL}colour = 1\n[resources]\npids_limit = 0\nmemory = \"lots\"\n\
         [egress]\nmode = \"x\"\nenforce = \"image\"\nhosts = [\"*\", \"ok.example\", \"-x\"]\n\
         [network]\nhost_gateway = \"yes\"\npublish = [80, 80]\n\
         [[mounts]]\nsource = \"a\"\ntarget = \"relative\"\n"
    );
    assert_eq!(
        all_errors(&text),
        [
            (
                "colour".to_string(),
                Some(3),
                "unknown field `colour`".to_string()
            ),
            (
                "resources.pids_limit".to_string(),
                Some(5),
                "resources.pids_limit must be between 1 and 4194304, not 0".to_string()
            ),
            (
                "resources.memory".to_string(),
                Some(6),
                "resources.memory \"lots\" is not a size: expected a number followed by an \
                 optional unit b, k, m, g, t or p"
                    .to_string()
            ),
            (
                "egress.mode".to_string(),
                Some(8),
                "egress.mode \"x\" is not an egress mode".to_string()
            ),
            (
                "egress.hosts[0]".to_string(),
                Some(10),
                "egress.hosts[0]: '*' is not a hostname".to_string()
            ),
            (
                "egress.hosts[2]".to_string(),
                Some(10),
                "egress.hosts[2] must not start with '-'".to_string()
            ),
            (
                "network.host_gateway".to_string(),
                Some(12),
                "wrong type: expected a boolean (true or false), found a string".to_string()
            ),
            (
                "network.publish[1]".to_string(),
                Some(13),
                "network.publish[1] publishes 80/tcp twice".to_string()
            ),
            (
                "mounts[0].target".to_string(),
                Some(16),
                "mounts[0].target must be an absolute path".to_string()
            ),
        ]
    );
}

#[test]
fn an_error_in_an_array_item_keeps_the_other_items_indices() {
    let text = format!(
        "{MINIMAL}[network]\npublish = [\"x\", 80, \"53/sctp\", 80, 0]\n\
         [security]\nadd_capabilities = [\"NET_RAW\", \"nope\", \"net_raw\"]\n"
    );
    let fields: Vec<String> = all_errors(&text)
        .into_iter()
        .map(|(field, _, _)| field)
        .collect();
    assert_eq!(
        fields,
        [
            "network.publish[0]",
            "network.publish[2]",
            "network.publish[3]",
            "network.publish[4]",
            "security.add_capabilities[1]",
            "security.add_capabilities[2]",
        ]
    );
}

#[test]
fn errors_that_depend_on_a_broken_value_wait_for_it() {
    // The misspelled `gateway_prot` is the port the profile meant: no "requires gateway_port".
    let text = format!("{MINIMAL}[egress]\ngateway_host = \"gw\"\ngateway_prot = 22\n");
    assert_eq!(
        all_errors(&text),
        [(
            "egress.gateway_prot".to_string(),
            Some(5),
            "unknown field `gateway_prot`".to_string()
        )]
    );
    // A port of the wrong type is not reported missing as well.
    let text = format!("{MINIMAL}[egress]\ngateway_host = \"gw\"\ngateway_port = \"22\"\n");
    assert_eq!(all_errors(&text).len(), 1);
    // A missing required field gets a stand-in: the other mount's error is still found.
    let text = format!(
        "{MINIMAL}[[mounts]]\nsource = \"a\"\n[[mounts]]\nsource = \"b\"\ntarget = \"/proc/x\"\n"
    );
    let fields: Vec<String> = all_errors(&text)
        .into_iter()
        .map(|(field, _, _)| field)
        .collect();
    assert_eq!(fields, ["mounts[0].target", "mounts[1].target"]);
    // Without an agent, the shape errors are reported and the rules wait.
    let text = "name = \"Bad Name\"\nagent = \"claude\"\ncolour = 1\n";
    let fields: Vec<String> = all_errors(text)
        .into_iter()
        .map(|(field, _, _)| field)
        .collect();
    assert_eq!(fields, ["agent", "colour"]);
}

#[test]
fn reports_are_capped() {
    let keys: String = (0..30)
        .map(|index| format!("unknown{index} = 1\n"))
        .collect();
    let errors = load("p.toml", &format!("{MINIMAL}{keys}")).unwrap_err();
    assert_eq!(errors.errors().len(), MAX_REPORTED_ERRORS);
    assert!(errors.omitted() > 0, "{errors}");
    assert_eq!(errors.omitted(), 10);
    assert!(!errors.is_truncated());
    assert!(errors
        .with_hint()
        .to_string()
        .ends_with("... and 10 more errors (fix these first)"));
    let keys: String = (0..150)
        .map(|index| format!("unknown{index} = 1\n"))
        .collect();
    let errors = load("p.toml", &format!("{MINIMAL}{keys}")).unwrap_err();
    assert!(errors.is_truncated());
    assert!(errors
        .with_hint()
        .to_string()
        .contains("... and at least 80 more errors"));
}

#[test]
fn egress_wildcard_names_per_minute_is_bounded_and_read_by_the_proxy_only() {
    let wild = "[egress]\nhosts = [\"*.example.com\"]\n";
    let profile = accept(&format!("{wild}wildcard_names_per_minute = 1000\n"));
    assert_eq!(profile.egress.wildcard_names_per_minute, Some(1000));
    assert_eq!(accept(wild).egress.wildcard_names_per_minute, None);
    for (value, message) in [
        (
            "0",
            "egress.wildcard_names_per_minute must be between 1 and 1000, not 0",
        ),
        (
            "1001",
            "egress.wildcard_names_per_minute must be between 1 and 1000, not 1001",
        ),
        (
            "-3",
            "egress.wildcard_names_per_minute must be between 1 and 1000, not -3",
        ),
    ] {
        let hint = assert_rejects(
            &format!("{wild}wildcard_names_per_minute = {value}\n"),
            "egress.wildcard_names_per_minute",
            message,
            5,
        );
        assert!(hint.contains("from 1 to 1000"), "{hint}");
    }
    for value in ["\"10\"", "2.5", "true"] {
        let (field, position, message, _) =
            reject(&format!("{wild}wildcard_names_per_minute = {value}\n"));
        assert_eq!(
            field, "egress.wildcard_names_per_minute",
            "{value}: {message}"
        );
        assert_eq!(position.map(|p| p.0), Some(5), "{value}");
    }
    // Only agentc's egress proxy reads it.
    let (field, _, message, _) = reject(&format!(
        "{wild}enforce = \"image\"\nwildcard_names_per_minute = 20\n"
    ));
    assert_eq!(field, "egress.wildcard_names_per_minute");
    assert!(
        message.contains("read only by agentc's egress proxy"),
        "{message}"
    );
}

#[test]
fn a_provider_key_the_egress_proxy_cannot_deliver_is_refused_by_field() {
    // Issue 36: never a placeholder that goes nowhere.
    let key = "[provider]\nkind = \"anthropic\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n";
    let hosts = "[egress]\nhosts = [\"github.com\"]\n";
    for (endpoint, why) in [
        ("http://gw.corp.test:8080/v1", "it is plain http"),
        ("https://10.1.2.3:8443/v1", "its host is an IP address"),
        ("https://[fd00::1]/v1", "its host is an IP address"),
        ("https://*.corp.test/v1", "its host is a wildcard"),
    ] {
        let text = format!("{key}endpoint = \"{endpoint}\"\n{hosts}");
        let (field, position, message, hint) = reject(&text);
        assert_eq!(field, "provider.endpoint", "{endpoint}: {message}");
        assert!(position.is_some(), "{endpoint}");
        assert!(
            message.starts_with("provider.endpoint cannot receive the key of provider.api_key_env")
                && message.contains(why),
            "{endpoint}: {message}"
        );
        assert!(!message.contains("ANTHROPIC_API_KEY"), "{message}");
        assert!(hint.contains("mode = \"env\""), "{hint}");
    }
    // The default host of a known provider that the allowlist does not allow.
    let (field, _, message, hint) = reject(&format!("{key}{hosts}"));
    assert_eq!(field, "provider.api_key_env");
    assert_eq!(
        message,
        "provider.api_key_env names the key of api.anthropic.com, which agentc's egress proxy \
         does not let through (egress.hosts does not allow it): the key would go nowhere"
    );
    assert!(
        hint.contains("add \"api.anthropic.com\" to egress.hosts"),
        "{hint}"
    );
    // Langfuse's base URL in plain HTTP, the same.
    let (field, _, message, _) = reject(
        "[egress]\nhosts = [\"lf.corp.test\"]\n[langfuse]\nenabled = true\n\
         base_url = \"http://lf.corp.test:3000\"\n",
    );
    assert_eq!(field, "langfuse.base_url");
    assert!(message.contains("it is plain http"), "{message}");
}

#[test]
fn a_provider_key_is_not_refused_where_the_user_keeps_it_or_no_proxy_holds_it() {
    let key = "[provider]\nkind = \"anthropic\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n\
               endpoint = \"http://10.1.2.3:8000/v1\"\n";
    // Kept in the sandbox's environment by the profile's own word (reported).
    accept(&format!(
        "{key}[egress]\nhosts = [\"10.1.2.3\"]\n[credentials]\nmode = \"env\"\n"
    ));
    // The image's firewall, or no allowlist: no proxy holds keys (agent-containers' way).
    accept(&format!(
        "{key}[egress]\nhosts = [\"10.1.2.3\"]\nenforce = \"image\"\n"
    ));
    accept(&format!("{key}[egress]\nmode = \"unrestricted\"\n"));
    // A table of the profile's own takes the variable.
    accept(&format!(
        "{key}[egress]\nhosts = [\"10.1.2.3\", \"gw.corp.test\"]\n[credentials.gw]\n\
         from_env = \"ANTHROPIC_API_KEY\"\nhosts = [\"gw.corp.test\"]\n"
    ));
    // An https endpoint by name, at its own port, that egress.hosts does not name.
    accept(
        "[provider]\nkind = \"openai\"\napi_key_env = \"OPENAI_API_KEY\"\n\
         endpoint = \"https://gw.corp.test:8443/v1\"\n[egress]\nhosts = [\"github.com\"]\n",
    );
}

#[test]
fn a_credentials_table_may_bind_any_host_the_egress_proxy_lets_through() {
    // An endpoint the profile names, at its own port, though egress.hosts does not name it.
    accept(
        "[provider]\nkind = \"custom\"\nendpoint = \"https://gw.corp.test:8443/v1\"\n\
         [egress]\nhosts = [\"github.com\"]\n[credentials.gw]\nfrom_env = \"GW_KEY\"\n\
         hosts = [\"gw.corp.test:8443\"]\n",
    );
    // Behind an upstream that egress.hosts names, every destination is passed to it.
    accept(
        "[proxy]\nhttps = \"http://proxy.corp.test:3128\"\n[egress]\n\
         hosts = [\"proxy.corp.test\"]\n[credentials.gh]\nfrom_env = \"GH_TOKEN\"\n\
         hosts = [\"api.github.com\"]\n",
    );
    // Not at another port of that endpoint, nor without the upstream.
    let (field, _, message, _) = reject(
        "[provider]\nkind = \"custom\"\nendpoint = \"https://gw.corp.test:8443/v1\"\n\
         [egress]\nhosts = [\"github.com\"]\n[credentials.gw]\nfrom_env = \"GW_KEY\"\n\
         hosts = [\"gw.corp.test:9443\"]\n",
    );
    assert_eq!(field, "credentials.gw.hosts[0]", "{message}");
}
