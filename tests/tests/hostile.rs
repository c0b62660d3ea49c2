//! Hostile profiles and environments: a table of more than a hundred inputs written by someone
//! who wants agentc to launch something it should not, each run through
//! `agentc_policy::load` and `resolve` with virtual inputs.
//!
//! Every refused case names the [`PolicyError`] variant, its location (profile field path,
//! environment variable or invocation input) and a substring of the message; the binary maps
//! each of them to exit 65 (`crates/agentc/tests/cli.rs` checks that mapping). Every accepted
//! case is rendered by both backends and the CLI argv is read back the way docker's flag
//! parser reads it, so a value can never become a flag. Symlinked sources, which need a real
//! directory, are at the end.

use agentc_conformance::argv::{check_structure, parse_like_pflag};
use agentc_conformance::fixtures::{VIRTUAL_HOME, VIRTUAL_WORKSPACE};
use agentc_policy::Hinted;
use agentc_policy::LoadedProfile;
use agentc_policy::{
    Action, ContainerSpec, LaunchKind, LaunchSpec, Location, MountSource, Owner, PathKind,
    PathProbe, PolicyError, ResolveInputs,
};

const PROFILE_DIR: &str = "/profiles/hostile";
const FILE: &str = "hostile.toml";
const CLAUDE: &str = "name = \"dev\"\nagent = \"claude-code\"\n";
const CUSTOM: &str = "name = \"box\"\nagent = \"custom\"\n";

/// Every path exists: a file when its last component holds a `.`, a directory otherwise.
struct Everything;

impl PathProbe for Everything {
    fn kind(&self, path: &str) -> PathKind {
        let last = path.rsplit('/').next().unwrap_or_default();
        if last.contains('.') {
            PathKind::File
        } else {
            PathKind::Directory
        }
    }
}

/// What a case must produce.
enum Want {
    /// `PolicyError::Invalid` at this profile field, with this in its message.
    Field(String, String),
    /// `PolicyError::Unlaunchable` at this profile field.
    UnlaunchableField(String, String),
    /// `PolicyError::Invalid` at this environment variable.
    Env(&'static str, String),
    /// `PolicyError::Invalid` at this invocation input.
    Invocation(&'static str, String),
    /// A launch, checked further by the function (after the structural argv check).
    Accepted(fn(&LaunchSpec, &[String])),
}

struct Case {
    name: String,
    profile: String,
    env: Vec<(String, String)>,
    image: Option<String>,
    agent_args: Vec<String>,
    kind: LaunchKind,
    want: Want,
}

fn case(name: impl Into<String>, profile: impl Into<String>, want: Want) -> Case {
    Case {
        name: name.into(),
        profile: profile.into(),
        env: Vec::new(),
        image: None,
        agent_args: Vec::new(),
        kind: LaunchKind::Run,
        want,
    }
}

fn field(field: impl Into<String>, message: impl Into<String>) -> Want {
    Want::Field(field.into(), message.into())
}

/// A TOML basic string holding `value` exactly (control characters as `\uXXXX`).
fn toml_string(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn inputs(case: &Case) -> ResolveInputs {
    ResolveInputs {
        kind: case.kind,
        workspace: VIRTUAL_WORKSPACE.to_string(),
        profile_dir: PROFILE_DIR.to_string(),
        home_dir: VIRTUAL_HOME.to_string(),
        owner: Some(Owner {
            name: "dev".to_string(),
            uid: 1000,
            gid: 1000,
        }),
        image: case.image.clone(),
        seed_target: None,
        agent_args: case.agent_args.clone(),
        env: case.env.iter().cloned().collect(),
        decant_sources: Vec::new(),
        instance: agentc_policy::Instance::default(),
        build: Default::default(),
    }
}

fn container(spec: &LaunchSpec) -> &ContainerSpec {
    match &spec.action {
        Action::Container(container) => container,
        Action::Build(_) => panic!("a container launch was expected"),
    }
}

fn no_control(text: &str) -> bool {
    !text.chars().any(char::is_control)
}

/// Runs one case; returns a description of the mismatch, if any.
fn run(case: &Case) -> Result<(), String> {
    let outcome: Result<(LoadedProfile, LaunchSpec), PolicyError> =
        agentc_policy::load(FILE, &case.profile)
            .map_err(|errors| errors.first().clone())
            .and_then(|loaded| {
                let spec = agentc_policy::resolve(&loaded, &inputs(case), &Everything)?;
                Ok((loaded, spec))
            });
    match (&case.want, outcome) {
        (Want::Accepted(check), Ok((loaded, spec))) => {
            let argv = agentc_backend_cli::render_argv(&spec)
                .map_err(|error| format!("cli render failed: {error}"))?;
            check_structure(&spec, &argv);
            agentc_backend_api::render_json(&spec)
                .map_err(|error| format!("api render failed: {}", error.with_hint()))?;
            let _ = agentc_policy::explain(&loaded, &spec);
            check(&spec, &argv);
            Ok(())
        }
        (Want::Accepted(_), Err(error)) => Err(format!("refused: {}", error.with_hint())),
        (_, Ok(_)) => Err("accepted, but it must be refused".to_string()),
        (want, Err(error)) => {
            let (message, hint) = match &error {
                PolicyError::Invalid { message, hint, .. }
                | PolicyError::Unlaunchable { message, hint, .. } => (message, hint),
                other => return Err(format!("unexpected variant {other:?}")),
            };
            if !no_control(message) || !no_control(hint) {
                return Err(format!("control characters in the error: {error:?}"));
            }
            if message.is_empty() || hint.is_empty() {
                return Err(format!("empty message or hint: {error:?}"));
            }
            let (want_location, want_message, want_unlaunchable) = match want {
                Want::Field(field, message) => (
                    Location::Profile {
                        file: FILE.to_string(),
                        field: field.clone(),
                        position: None,
                    },
                    message,
                    false,
                ),
                Want::UnlaunchableField(field, message) => (
                    Location::Profile {
                        file: FILE.to_string(),
                        field: field.clone(),
                        position: None,
                    },
                    message,
                    true,
                ),
                Want::Env(variable, message) => (
                    Location::Environment {
                        variable: variable.to_string(),
                    },
                    message,
                    false,
                ),
                Want::Invocation(input, message) => (
                    Location::Invocation {
                        input: input.to_string(),
                    },
                    message,
                    false,
                ),
                Want::Accepted(_) => unreachable!(),
            };
            let unlaunchable = matches!(error, PolicyError::Unlaunchable { .. });
            let location = match error.location().clone() {
                Location::Profile { file, field, .. } => Location::Profile {
                    file,
                    field,
                    position: None,
                },
                other => other,
            };
            if location != want_location
                || unlaunchable != want_unlaunchable
                || !message.contains(want_message.as_str())
            {
                return Err(format!(
                    "wanted {} at {want_location:?} with {want_message:?}, got {error:?}",
                    if want_unlaunchable {
                        "Unlaunchable"
                    } else {
                        "Invalid"
                    }
                ));
            }
            Ok(())
        }
    }
}

/// The string fields of a profile, each as (field path, profile with `{}` for the TOML
/// string, message for a value holding NUL / LF / CR in its middle).
fn string_fields() -> Vec<(&'static str, String, &'static str)> {
    let single = "must be a single line without nul bytes";
    let url = "is not an http(s) url with a host: it contains whitespace or control characters";
    let gateway = "[egress]\ngateway_host = \"gw\"\ngateway_port = 22\n";
    vec![
        ("name", "name = {}\nagent = \"codex\"\n".into(), "is not a valid profile name"),
        ("home_volume", format!("{CLAUDE}home_volume = {{}}\n"), "is not a docker volume name"),
        ("packages.apt[0]", format!("{CLAUDE}[packages]\napt = [{{}}]\n"), single),
        ("packages.npm[0]", format!("{CLAUDE}[packages]\nnpm = [{{}}]\n"), single),
        ("packages.uv_tools[0]", format!("{CLAUDE}[packages]\nuv_tools = [{{}}]\n"), single),
        ("provider.kind", format!("{CLAUDE}[provider]\nkind = {{}}\n"), single),
        ("provider.model", format!("{CLAUDE}[provider]\nkind = \"anthropic\"\nmodel = {{}}\n"), single),
        ("provider.endpoint", format!("{CLAUDE}[provider]\nkind = \"anthropic\"\nendpoint = {{}}\n"), url),
        (
            "provider.api_key_env",
            format!("{CLAUDE}[provider]\nkind = \"anthropic\"\napi_key_env = {{}}\n"),
            "must be an upper-case environment variable name",
        ),
        ("proxy.http", format!("{CLAUDE}[proxy]\nhttp = {{}}\n"), url),
        ("proxy.https", format!("{CLAUDE}[proxy]\nhttps = {{}}\n"), url),
        ("proxy.no_proxy[0]", format!("{CLAUDE}[proxy]\nno_proxy = [{{}}]\n"), single),
        ("proxy.ca_file", format!("{CLAUDE}[proxy]\nca_file = {{}}\n"), single),
        ("proxy.ca_dir", format!("{CLAUDE}[proxy]\nca_dir = {{}}\n"), single),
        ("egress.mode", format!("{CLAUDE}[egress]\nmode = {{}}\n"), "is not an egress mode"),
        ("egress.hosts[0]", format!("{CLAUDE}[egress]\nhosts = [{{}}]\n"), single),
        ("egress.gateway_host", format!("{CLAUDE}[egress]\ngateway_host = {{}}\ngateway_port = 22\n"), single),
        ("egress.gateway_user", format!("{CLAUDE}{gateway}gateway_user = {{}}\n"), single),
        (
            "egress.gateway_access_hostname",
            format!("{CLAUDE}{gateway}gateway_access_hostname = {{}}\n"),
            single,
        ),
        (
            "egress.gateway_bootstrap_allow[0]",
            format!("{CLAUDE}{gateway}gateway_bootstrap_allow = [{{}}]\n"),
            single,
        ),
        (
            "egress.gateway_key_file",
            format!("{CLAUDE}{gateway}gateway_key_file = {{}}\ngateway_known_hosts_file = \"k.hosts\"\n"),
            single,
        ),
        (
            "egress.gateway_known_hosts_file",
            format!("{CLAUDE}{gateway}gateway_key_file = \"k.key\"\ngateway_known_hosts_file = {{}}\n"),
            single,
        ),
        ("decant.source_profiles[0]", format!("{CLAUDE}[decant]\nsource_profiles = [{{}}]\n"), single),
        (
            "decant.image",
            format!("{CLAUDE}[decant]\nimage = {{}}\n"),
            "decant.image must not contain ",
        ),
        ("decant.data_volume", format!("{CLAUDE}[decant]\ndata_volume = {{}}\n"), "is not a docker volume name"),
        ("decant.bind_address", format!("{CLAUDE}[decant]\nbind_address = {{}}\n"), single),
        ("langfuse.base_url", format!("{CLAUDE}[langfuse]\nbase_url = {{}}\n"), url),
        (
            "langfuse.public_key_env",
            format!("{CLAUDE}[langfuse]\npublic_key_env = {{}}\n"),
            "must be an upper-case environment variable name",
        ),
        (
            "langfuse.secret_key_env",
            format!("{CLAUDE}[langfuse]\nsecret_key_env = {{}}\n"),
            "must be an upper-case environment variable name",
        ),
        ("langfuse.environment", format!("{CLAUDE}[langfuse]\nenvironment = {{}}\n"), single),
        ("langfuse.user_id", format!("{CLAUDE}[langfuse]\nuser_id = {{}}\n"), single),
        ("configuration_import.source", format!("{CLAUDE}[configuration_import]\nsource = {{}}\n"), single),
        (
            "configuration_import.target",
            format!("{CLAUDE}[configuration_import]\nsource = \"c.json\"\ntarget = {{}}\n"),
            single,
        ),
        (
            "configuration_import.format",
            format!("{CLAUDE}[configuration_import]\nsource = \"c.json\"\nformat = {{}}\n"),
            "is not supported",
        ),
        (
            "configuration_mounts[0].source",
            format!("{CLAUDE}[[configuration_mounts]]\nsource = {{}}\ntarget = \"/home/claude/.x\"\n"),
            single,
        ),
        (
            "configuration_mounts[0].target",
            format!("{CLAUDE}[[configuration_mounts]]\nsource = \"x\"\ntarget = {{}}\n"),
            single,
        ),
        ("mounts[0].source", format!("{CLAUDE}[[mounts]]\nsource = {{}}\ntarget = \"/data\"\n"), single),
        ("mounts[0].target", format!("{CLAUDE}[[mounts]]\nsource = \"x\"\ntarget = {{}}\n"), single),
        (
            "mounts[0].on_conflict",
            format!("{CLAUDE}[[mounts]]\ntype = \"seed\"\nsource = \"x\"\ntarget = \"/home/claude/x\"\non_conflict = {{}}\n"),
            "is not a conflict policy",
        ),
        ("image.ref", format!("{CLAUDE}[image]\nref = {{}}\n"), "image.ref must not contain "),
        ("image.build_context", format!("{CLAUDE}[image]\nbuild_context = {{}}\n"), single),
        ("image.dockerfile", format!("{CLAUDE}[image]\ndockerfile = {{}}\n"), single),
        ("image.user", format!("{CUSTOM}[image]\nref = \"alpine:3\"\nuser = {{}}\n"), "is not a user"),
        ("resources.memory", format!("{CLAUDE}[resources]\nmemory = {{}}\n"), "is not a size"),
        ("resources.shm_size", format!("{CLAUDE}[resources]\nshm_size = {{}}\n"), "is not a size"),
        ("resources.cpus", format!("{CLAUDE}[resources]\ncpus = {{}}\n"), "is not a cpu count"),
        ("logging.max_size", format!("{CLAUDE}[logging]\nmax_size = {{}}\n"), "is not a size"),
        ("network.name", format!("{CUSTOM}[image]\nref = \"alpine:3\"\n[network]\nname = {{}}\n"), "is not a docker network name"),
        ("network.publish[0]", format!("{CLAUDE}[network]\npublish = [{{}}]\n"), "network.publish[0] is not a port"),
        (
            "security.add_capabilities[0]",
            format!("{CLAUDE}[security]\nadd_capabilities = [{{}}]\n"),
            "is not a linux capability",
        ),
    ]
}

/// Control characters in the middle of every string field: NUL, LF, CR, and ESC (which would
/// rewrite the reviewer's terminal when the value is echoed).
fn control_character_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for (path, template, message) in string_fields() {
        for (label, control) in [("nul", '\0'), ("lf", '\n'), ("cr", '\r')] {
            // Sizes and numbers need a digit first to reach the unit parser.
            let value = format!("1{control}1");
            let profile = template.replacen("{}", &toml_string(&value), 1);
            cases.push(case(
                format!("{label} in {path}"),
                profile,
                field(path, message),
            ));
        }
    }
    cases
}

fn numeric_cases() -> Vec<Case> {
    let resources = |body: &str| format!("{CLAUDE}[resources]\n{body}\n");
    let pids = "resources.pids_limit must be between 1 and 4194304";
    let port = "egress.gateway_port must be between 1 and 65535";
    let gateway =
        |port: &str| format!("{CLAUDE}[egress]\ngateway_host = \"gw\"\ngateway_port = {port}\n");
    vec![
        case(
            "pids i64 max",
            resources("pids_limit = 9223372036854775807"),
            field("resources.pids_limit", pids),
        ),
        case(
            "pids i64 min",
            resources("pids_limit = -9223372036854775808"),
            field("resources.pids_limit", pids),
        ),
        case(
            "pids negative",
            resources("pids_limit = -1"),
            field("resources.pids_limit", pids),
        ),
        case(
            "pids zero",
            resources("pids_limit = 0"),
            field("resources.pids_limit", pids),
        ),
        case(
            "pids u64 overflow",
            resources("pids_limit = 18446744073709551616"),
            field("resources.pids_limit", "integer out of range"),
        ),
        case(
            "pids float",
            resources("pids_limit = 1e400"),
            field("resources.pids_limit", "overflowed"),
        ),
        case(
            "gateway port i64 max",
            gateway("9223372036854775807"),
            field("egress.gateway_port", port),
        ),
        case(
            "gateway port negative",
            gateway("-22"),
            field("egress.gateway_port", port),
        ),
        case(
            "gateway port zero",
            gateway("0"),
            field("egress.gateway_port", port),
        ),
        case(
            "decant port 65536",
            format!("{CLAUDE}[decant]\nport = 65536\n"),
            field("decant.port", "decant.port must be between 1 and 65535"),
        ),
        case(
            "log files negative",
            format!("{CLAUDE}[logging]\nmax_file = -3\n"),
            field(
                "logging.max_file",
                "logging.max_file must be between 1 and 100",
            ),
        ),
        case(
            "log files i64 max",
            format!("{CLAUDE}[logging]\nmax_file = 9223372036854775807\n"),
            field(
                "logging.max_file",
                "logging.max_file must be between 1 and 100",
            ),
        ),
        case(
            "memory negative",
            resources("memory = \"-1g\""),
            field("resources.memory", "is not a size"),
        ),
        case(
            "memory beyond i64",
            resources("memory = \"9223372036854775808\""),
            field("resources.memory", "is too large"),
        ),
        case(
            "memory u64 overflow in units",
            resources("memory = \"99999999999999999999999p\""),
            field("resources.memory", "is too large"),
        ),
        case(
            "memory 1e400",
            resources("memory = \"1e400\""),
            field("resources.memory", "unknown unit"),
        ),
        case(
            "memory as float",
            resources("memory = 1e400"),
            field("resources.memory", "overflowed"),
        ),
        case(
            "memory below docker's minimum",
            resources("memory = \"1b\""),
            field("resources.memory", "below docker's minimum of 6m"),
        ),
        case(
            "shm zero",
            resources("shm_size = \"0\""),
            field("resources.shm_size", "must be greater than 0"),
        ),
        case(
            "shm 40 decimals",
            resources(&format!("shm_size = \"1.{}g\"", "1".repeat(40))),
            field("resources.shm_size", "at most 18 decimals"),
        ),
        case(
            "cpus 1e400",
            resources("cpus = 1e400"),
            field("resources.cpus", "overflowed"),
        ),
        case(
            "cpus inf",
            resources("cpus = inf"),
            field("resources.cpus", "is not a cpu count"),
        ),
        case(
            "cpus nan",
            resources("cpus = nan"),
            field("resources.cpus", "is not a cpu count"),
        ),
        case(
            "cpus negative",
            resources("cpus = -1"),
            field("resources.cpus", "is negative"),
        ),
        case(
            "cpus negative text",
            resources("cpus = \"-0.5\""),
            field("resources.cpus", "is negative"),
        ),
        case(
            "cpus i64 max",
            resources("cpus = 9223372036854775807"),
            field("resources.cpus", "is too large for a cpu count"),
        ),
        case(
            "cpus 1025",
            resources("cpus = 1025"),
            field("resources.cpus", "is more than 1024"),
        ),
        case(
            "cpus 30 decimals as text",
            resources("cpus = \"1.000000000000000000000000000001\""),
            field("resources.cpus", "is too precise"),
        ),
        case(
            "cpus 30 decimals as a float round to the nearest double",
            resources("cpus = 1.000000000000000000000000000001"),
            Want::Accepted(|spec, argv| {
                assert_eq!(container(spec).resources.nano_cpus, Some(1_000_000_000));
                assert!(argv.contains(&"--cpus=1".to_string()), "{argv:?}");
            }),
        ),
        case(
            "schema version i64 max",
            format!("schema_version = 9223372036854775807\n{CLAUDE}"),
            field(
                "schema_version",
                "unsupported schema_version 9223372036854775807",
            ),
        ),
        case(
            "published port 65536",
            format!("{CLAUDE}[network]\npublish = [65536]\n"),
            field("network.publish[0]", "network.publish[0] is not a port"),
        ),
        case(
            "published port negative",
            format!("{CLAUDE}[network]\npublish = [-80]\n"),
            field("network.publish[0]", "network.publish[0] is not a port"),
        ),
        case(
            "published port huge text",
            format!("{CLAUDE}[network]\npublish = [\"99999999999999999999999/tcp\"]\n"),
            field("network.publish[0]", "network.publish[0] is not a port"),
        ),
    ]
}

fn path_cases() -> Vec<Case> {
    let mount = |source: &str, target: &str| {
        format!(
            "{CLAUDE}[[mounts]]\nsource = {}\ntarget = {}\n",
            toml_string(source),
            toml_string(target)
        )
    };
    let clean = "must be a clean absolute path without `.`, `..` or empty components";
    let kernel = "is inside /proc, /sys or /dev";
    vec![
        case("relative ../ target", mount("x", "../etc"), field("mounts[0].target", "must be an absolute path")),
        case("dot-dot target", mount("x", "/home/claude/../../etc"), field("mounts[0].target", clean)),
        case("dot target", mount("x", "/data/./x"), field("mounts[0].target", clean)),
        case("double slash target", mount("x", "//home/claude"), field("mounts[0].target", clean)),
        case("root target", mount("x", "/"), field("mounts[0].target", "/")),
        case("double slash root target", mount("x", "//"), field("mounts[0].target", "/")),
        case("proc target", mount("x", "/proc"), field("mounts[0].target", kernel)),
        case("proc pid root target", mount("x", "/proc/1/root"), field("mounts[0].target", kernel)),
        case("sys target", mount("x", "/sys/fs/cgroup"), field("mounts[0].target", kernel)),
        case("dev target", mount("x", "/dev/shm"), field("mounts[0].target", kernel)),
        case("dev target with trailing slash", mount("x", "/dev/"), field("mounts[0].target", kernel)),
        case(
            "dot-dot configuration import target",
            format!("{CLAUDE}[configuration_import]\nsource = \"c.json\"\ntarget = \"/home/claude/../../etc/x.json\"\n"),
            field("configuration_import.target", clean),
        ),
        case(
            "dot-dot seed target",
            format!("{CLAUDE}[[mounts]]\ntype = \"seed\"\nsource = \"s.json\"\ntarget = \"/home/claude/../../etc/passwd\"\n"),
            field("mounts[0].target", clean),
        ),
        case(
            "target shadowing the home volume",
            mount("x", "/home/claude/"),
            field("mounts[0].target", "mount target conflicts with generated mount: /home/claude"),
        ),
        case(
            "dot-dot sources are normalized and shown resolved",
            mount("../../../srv/x.d", "/data"),
            Want::Accepted(|spec, argv| {
                let bind = container(spec)
                    .mounts
                    .iter()
                    .find(|m| m.target == "/data")
                    .expect("the /data mount");
                assert_eq!(bind.source, MountSource::Bind { path: "/srv/x.d".into() });
                assert!(
                    argv.iter().any(|w| w.starts_with("--mount=type=bind,source=/srv/x.d,target=/data")),
                    "{argv:?}"
                );
            }),
        ),
        case(
            "tilde dot-dot sources are normalized",
            mount("~/../../srv/data", "/data"),
            Want::Accepted(|spec, _| {
                assert!(container(spec).mounts.iter().any(|m| m.source
                    == MountSource::Bind { path: "/srv/data".into() }));
            }),
        ),
        case(
            "gateway key outside the profile dir must be a file",
            format!(
                "{CLAUDE}[egress]\ngateway_host = \"gw\"\ngateway_port = 22\n\
                 gateway_key_file = \"../../../../srv/ssh\"\ngateway_known_hosts_file = \"k.hosts\"\n"
            ),
            Want::UnlaunchableField(
                "egress.gateway_key_file".into(),
                "gateway key is not a file: /srv/ssh".into(),
            ),
        ),
        case(
            "the engine's data through a process's root is refused, read-only too",
            mount("/proc/self/root/var/lib/docker/containers", "/c"),
            field(
                "mounts[0].source",
                "/proc/self/root/var/lib/docker/containers holds a container engine's data",
            ),
        ),
        case(
            "a relative climb to the host's /proc is refused",
            mount("../../../../proc/1/environ", "/e"),
            field(
                "mounts[0].source",
                "mounts[0].source /proc/1/environ is one of the host's system directories",
            ),
        ),
        case(
            "a gateway key in ~/.ssh is a credential directory's",
            format!(
                "{CLAUDE}[egress]\ngateway_host = \"gw\"\ngateway_port = 22\n\
                 gateway_key_file = \"~/.ssh/id_ed25519\"\ngateway_known_hosts_file = \"k.hosts\"\n"
            ),
            field(
                "egress.gateway_key_file",
                "is a credential directory",
            ),
        ),
    ]
}

fn document_cases() -> Vec<Case> {
    let deep = "the profile nests tables, arrays or dotted keys too deeply";
    let large = "more than the limit of 1048576 bytes (1 MiB)";
    let ten_mb = 10 * 1024 * 1024;
    vec![
        case(
            "duplicate name",
            format!("{CLAUDE}name = \"x\"\n"),
            field("name", "duplicate key `name`"),
        ),
        case(
            "duplicate table",
            format!("{CLAUDE}[egress]\nmode = \"deny\"\n[egress]\nmode = \"unrestricted\"\n"),
            field("egress", "duplicate key `egress`"),
        ),
        case(
            "duplicate key in a table",
            format!("{CLAUDE}[security]\nfuse = false\nfuse = true\n"),
            field("security.fuse", "duplicate key `fuse`"),
        ),
        case(
            "duplicate key in an array of tables",
            format!("{CLAUDE}[[mounts]]\nsource = \"a\"\ntarget = \"/a\"\ntarget = \"/proc\"\n"),
            field("mounts[0].target", "duplicate key `target`"),
        ),
        case(
            "dotted key redefining a table",
            format!("{CLAUDE}egress.mode = \"deny\"\n[egress]\nmode = \"unrestricted\"\n"),
            field("egress", "duplicate key `egress`"),
        ),
        case(
            "10,000 nested arrays",
            format!("{CLAUDE}x = {}{}\n", "[".repeat(10_000), "]".repeat(10_000)),
            field("", deep),
        ),
        case(
            "10,000 nested inline tables",
            format!(
                "{CLAUDE}x = {}1{}\n",
                "{a=".repeat(10_000),
                "}".repeat(10_000)
            ),
            field("", deep),
        ),
        case(
            "10,000 dotted keys",
            format!("{CLAUDE}{} = 1\n", ["a"; 10_000].join(".")),
            field("", deep),
        ),
        case(
            "10,000 header parts",
            format!("{CLAUDE}[{}]\n", ["a"; 10_000].join(".")),
            field("", deep),
        ),
        case(
            "10 MB comment",
            format!("{CLAUDE}#{}\n", "x".repeat(ten_mb)),
            field("", large),
        ),
        case(
            "10 MB name",
            format!("name = \"{}\"\nagent = \"codex\"\n", "a".repeat(ten_mb)),
            field("", large),
        ),
        case("10 MB of NUL bytes", "\0".repeat(ten_mb), field("", large)),
        case(
            "a NUL byte in the document",
            format!("{CLAUDE}\0\n"),
            field("", "invalid toml"),
        ),
        case(
            "a byte-order mark and CR line ends",
            "\u{feff}name = \"dev\"\r\nagent = \"codex\"\r\n",
            Want::Accepted(|spec, _| assert_eq!(spec.profile, "dev")),
        ),
        case(
            "escape sequence in an unknown field name",
            format!("{CLAUDE}\"x\\u001b[2J\" = 1\n"),
            field("x\\u{1b}[2J", "unknown field"),
        ),
        case(
            "escape sequence in an unknown agent",
            "name = \"dev\"\nagent = \"claude\\u001b[2J\"\n",
            field("agent", "unknown value"),
        ),
        case(
            "escape sequence in a model name",
            format!(
                "{CLAUDE}[provider]\nkind = \"anthropic\"\nmodel = \"m\\u001b]0;pwned\\u0007\"\n"
            ),
            field("provider.model", "control characters"),
        ),
        // The egress proxy names hosts in ASCII only; the image's firewall takes the bytes.
        case(
            "bidi override in a host",
            format!("{CLAUDE}[egress]\nhosts = [\"evil\\u202e.com\"]\n"),
            field("egress.hosts[0]", "non-ASCII characters in a host name"),
        ),
        case(
            "bidi override in a host for the image's firewall",
            format!("{CLAUDE}[egress]\nhosts = [\"evil\\u202e.com\"]\nenforce = \"image\"\n"),
            Want::Accepted(|_, _| {}),
        ),
    ]
}

fn flag_smuggling_cases() -> Vec<Case> {
    let custom = |extra: &str| format!("{CUSTOM}[image]\nref = \"alpine:3\"\n{extra}");
    let dash = "must not start with '-'";
    let mut cases = vec![
        case("image ref --privileged", format!("{CLAUDE}[image]\nref = \"--privileged\"\n"), field("image.ref", dash)),
        case("decant image --privileged", format!("{CLAUDE}[decant]\nimage = \"--privileged\"\n"), field("decant.image", dash)),
        case("user --privileged", custom("user = \"--privileged\"\n"), field("image.user", "is not a user")),
        case("user -u0", custom("user = \"-u0\"\n"), field("image.user", "is not a user")),
        case(
            "network --privileged",
            custom("[network]\nname = \"--privileged\"\n"),
            field("network.name", "is not a docker network name"),
        ),
        case("network host", custom("[network]\nname = \"host\"\n"), field("network.name", "is a docker network mode")),
        case(
            "network container:",
            custom("[network]\nname = \"container:victim\"\n"),
            field("network.name", "must not join another container's network"),
        ),
        case("home volume --privileged", format!("{CLAUDE}home_volume = \"--privileged\"\n"), field("home_volume", "is not a docker volume name")),
        case("name --privileged", "name = \"--privileged\"\nagent = \"codex\"\n", field("name", "is not a valid profile name")),
        case(
            "decant source --privileged",
            format!("{CLAUDE}[decant]\nsource_profiles = [\"--privileged\"]\n"),
            field("decant.source_profiles[0]", "is not a valid profile name"),
        ),
        case("capability ALL", format!("{CLAUDE}[security]\nadd_capabilities = [\"ALL\"]\n"), field("security.add_capabilities[0]", "\"ALL\" is not accepted")),
        case("capability cap_all", format!("{CLAUDE}[security]\nadd_capabilities = [\"cap_all\"]\n"), field("security.add_capabilities[0]", "\"ALL\" is not accepted")),
        case(
            "capability --privileged",
            format!("{CLAUDE}[security]\nadd_capabilities = [\"--privileged\"]\n"),
            field("security.add_capabilities[0]", "is not a linux capability"),
        ),
        case(
            "mount target --privileged",
            format!("{CLAUDE}[[mounts]]\nsource = \"x\"\ntarget = \"--privileged\"\n"),
            field("mounts[0].target", "must be an absolute path"),
        ),
        case(
            "egress host --privileged",
            format!("{CLAUDE}[egress]\nhosts = [\"--privileged\"]\n"),
            field("egress.hosts[0]", dash),
        ),
        case(
            "gateway user -oProxyCommand",
            format!("{CLAUDE}[egress]\ngateway_host = \"gw\"\ngateway_port = 22\ngateway_user = \"-oProxyCommand=id\"\n"),
            field("egress.gateway_user", dash),
        ),
        case(
            "gateway host -oProxyCommand",
            format!("{CLAUDE}[egress]\ngateway_host = \"-oProxyCommand=id\"\ngateway_port = 22\n"),
            field("egress.gateway_host", dash),
        ),
        case(
            "no_proxy --privileged",
            format!("{CLAUDE}[proxy]\nno_proxy = [\"--privileged\"]\n"),
            field("proxy.no_proxy[0]", dash),
        ),
        case(
            "decant bind address --privileged",
            format!("{CLAUDE}[decant]\nbind_address = \"--privileged\"\n"),
            field("decant.bind_address", dash),
        ),
        case(
            "SYS_ADMIN is allowed and rendered as a capability",
            format!("{CLAUDE}[security]\nadd_capabilities = [\"SYS_ADMIN\"]\n"),
            Want::Accepted(|spec, argv| {
                assert!(container(spec).cap_add.iter().any(|c| c.as_str() == "SYS_ADMIN"));
                assert!(argv.contains(&"--cap-add=SYS_ADMIN".to_string()), "{argv:?}");
                assert!(!argv.iter().any(|w| w == "--privileged"), "{argv:?}");
            }),
        ),
        case(
            "entrypoint --privileged stays attached",
            custom("entrypoint = \"--privileged\"\n"),
            Want::Accepted(|_, argv| {
                assert!(argv.contains(&"--entrypoint=--privileged".to_string()), "{argv:?}");
            }),
        ),
        case(
            "command --privileged follows the image",
            custom("command = [\"--privileged\", \"-v\", \"/:/host\"]\n"),
            Want::Accepted(|spec, argv| {
                assert_eq!(container(spec).command, ["--privileged", "-v", "/:/host"]);
                let image = argv.iter().position(|w| w == "alpine:3").expect("image");
                assert_eq!(&argv[image + 1..], ["--privileged", "-v", "/:/host"]);
            }),
        ),
        case(
            "model value --privileged stays inside its --env",
            format!("{CLAUDE}[provider]\nkind = \"anthropic\"\nmodel = \"x --privileged\"\n"),
            Want::Accepted(|_, argv| {
                assert!(argv.iter().any(|w| w.starts_with("--env=") && w.ends_with("=x --privileged")), "{argv:?}");
            }),
        ),
        case(
            "langfuse environment -e stays inside its --env",
            format!("{CLAUDE}[egress]\nhosts = [\"lf.example\"]\n[langfuse]\nenabled = true\nbase_url = \"https://lf.example\"\nenvironment = \"-e\"\n"),
            Want::Accepted(|_, argv| {
                assert!(argv.iter().any(|w| w.starts_with("--env=") && w.ends_with("=-e")), "{argv:?}");
            }),
        ),
        case(
            "mount source --privileged is a path under the profile",
            format!("{CLAUDE}[[mounts]]\nsource = \"--privileged\"\ntarget = \"/data\"\n"),
            Want::Accepted(|_, argv| {
                assert!(
                    argv.iter().any(|w| w.starts_with("--mount=type=bind,source=/profiles/hostile/--privileged,")),
                    "{argv:?}"
                );
            }),
        ),
        case(
            "mount target smuggling csv fields stays one target",
            format!("{CLAUDE}[[mounts]]\nsource = \"x\"\ntarget = \"/data,type=bind,source=/etc\"\n"),
            Want::Accepted(|spec, _| {
                assert!(container(spec).mounts.iter().any(|m| m.target == "/data,type=bind,source=/etc"));
            }),
        ),
        case(
            "mount source smuggling csv fields stays one source",
            format!("{CLAUDE}[[mounts]]\nsource = \"/srv/x\\\",target=/etc,\\\"\"\ntarget = \"/data\"\n"),
            Want::Accepted(|spec, argv| {
                assert!(container(spec).mounts.iter().any(|m| m.target == "/data"));
                assert_eq!(argv.iter().filter(|w| w.contains("target=/etc")).count(), 1, "{argv:?}");
            }),
        ),
    ];
    for (image, message) in [
        ("--privileged", "--image must not start with '-'"),
        (
            "alpine\n--privileged",
            "--image must not contain whitespace or control characters",
        ),
        ("", "--image is empty"),
    ] {
        let mut smuggled = case(
            format!("--image {image:?}"),
            CLAUDE,
            Want::Invocation("--image", message.into()),
        );
        smuggled.image = Some(image.to_string());
        cases.push(smuggled);
    }
    let mut args = case(
        "agent arguments that look like docker flags follow the image",
        CLAUDE,
        Want::Accepted(|spec, argv| {
            let command = &container(spec).command;
            assert!(command.ends_with(&["--privileged".to_string(), "-v=/:/host".to_string()]));
            assert!(argv.ends_with(&["--privileged".to_string(), "-v=/:/host".to_string()]));
        }),
    );
    args.agent_args = vec!["--privileged".into(), "-v=/:/host".into()];
    cases.push(args);
    let mut nul = case(
        "agent argument with a NUL byte",
        CLAUDE,
        Want::Invocation(
            "agent arguments",
            "agent argument 0 contains a nul byte".into(),
        ),
    );
    nul.agent_args = vec!["a\0b".into()];
    cases.push(nul);
    cases
}

fn environment_cases() -> Vec<Case> {
    let env = |variable: &'static str, value: &str, message: &str| {
        let mut case = case(
            format!("{variable}={value:?}"),
            CLAUDE,
            Want::Env(variable, message.to_string()),
        );
        case.env = vec![(variable.to_string(), value.to_string())];
        case
    };
    vec![
        env("AGENTC_NETWORK", "--privileged", "is not a network name"),
        env("AGENTC_NETWORK", "host", "the host network"),
        env("AGENTC_NETWORK", "off", "AGENTC_NETWORK has no `off`"),
        env(
            "AGENTC_NETWORK",
            "container:victim",
            "is not a network name",
        ),
        env("AGENTC_NETWORK", "a\0b", "is not a network name"),
        env("AGENTC_NETWORK", "a\nb", "is not a network name"),
        env("AGENTC_MEM_LIMIT", "-1", "is not a size"),
        env("AGENTC_MEM_LIMIT", "0", "is below docker's minimum of 6m"),
        env(
            "AGENTC_MEM_LIMIT",
            "99999999999999999999999999",
            "is too large",
        ),
        env("AGENTC_MEM_LIMIT", "4g\0", "is not a size"),
        env("AGENTC_MEM_LIMIT", "lots", "is not a size"),
        env("AGENTC_SHM_SIZE", "1e400", "unknown unit"),
        env("AGENTC_CPUS", "-2", "is negative"),
        env("AGENTC_CPUS", "1.0000000001", "is too precise"),
        env("AGENTC_CPUS", "nan", "is not a cpu count"),
        env(
            "AGENTC_CPUS",
            "99999999999999999999999999",
            "is too large for a cpu count",
        ),
        env(
            "AGENTC_PIDS_LIMIT",
            "-1",
            "must be between 1 and 4194304, not -1",
        ),
        env(
            "AGENTC_PIDS_LIMIT",
            "0",
            "must be between 1 and 4194304, not 0",
        ),
        env(
            "AGENTC_PIDS_LIMIT",
            "4294967296",
            "must be between 1 and 4194304, not 4294967296",
        ),
        env("AGENTC_LOG_MAX_SIZE", "\0", "is not a size"),
        env(
            "AGENTC_LOG_MAX_FILE",
            "off",
            "\"off\" is not a whole number",
        ),
        env(
            "AGENTC_LOG_MAX_FILE",
            "-3",
            "must be between 1 and 100, not -3",
        ),
        env(
            "AGENTC_LOG_MAX_FILE",
            "18446744073709551616",
            "is not a whole number",
        ),
    ]
}

fn corpus() -> Vec<Case> {
    let mut cases = control_character_cases();
    cases.extend(numeric_cases());
    cases.extend(path_cases());
    cases.extend(document_cases());
    cases.extend(flag_smuggling_cases());
    cases.extend(environment_cases());
    cases
}

#[test]
fn every_hostile_input_gets_its_own_clear_answer() {
    let cases = corpus();
    assert!(cases.len() >= 100, "only {} cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| run(case).err().map(|why| format!("{}: {why}", case.name)))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} hostile cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn case_names_are_unique() {
    let mut names = std::collections::BTreeSet::new();
    for case in corpus() {
        assert!(
            names.insert(case.name.clone()),
            "duplicate case {}",
            case.name
        );
    }
}

/// A value starting with `-` in every argv position of a valid launch stays inside its own
/// `--flag=value` element or after the image: the argv is read back like pflag reads it.
#[test]
fn leading_dashes_never_become_flags_in_any_argv_position() {
    let profile = format!(
        "{CUSTOM}[image]\nref = \"alpine:3\"\nentrypoint = \"-entry\"\ncommand = [\"-c\", \"--privileged\"]\n\
         user = \"u-1\"\n[workspace]\nmount = true\n[[mounts]]\nsource = \"-src\"\ntarget = \"/-target\"\n\
         [network]\nname = \"n--privileged\"\n"
    );
    let loaded =
        agentc_policy::load(FILE, &profile).unwrap_or_else(|e| panic!("{}", e.with_hint()));
    let mut launch = case("dashes", profile.clone(), Want::Accepted(|_, _| {}));
    launch.agent_args = vec!["-arg".into(), "--network=host".into()];
    let mut inputs = inputs(&launch);
    inputs.workspace = "/home/dev/-workspace".into();
    let spec = agentc_policy::resolve(&loaded, &inputs, &Everything)
        .unwrap_or_else(|e| panic!("{}", e.with_hint()));
    let argv = agentc_backend_cli::render_argv(&spec).unwrap();
    let (options, positional) = parse_like_pflag(&argv);
    let value = |flag: &str| -> Vec<String> {
        options
            .iter()
            .filter(|(name, _)| name == flag)
            .filter_map(|(_, value)| value.clone())
            .collect()
    };
    assert_eq!(value("--entrypoint"), ["-entry"]);
    assert_eq!(value("--workdir"), ["/workspace/-workspace"]);
    assert_eq!(value("--network"), ["n--privileged"]);
    assert!(value("--mount")
        .iter()
        .any(|m| m.contains("source=/profiles/hostile/-src") && m.contains("target=/-target")));
    assert!(value("--mount")
        .iter()
        .any(|m| m.contains("source=/home/dev/-workspace")));
    assert_eq!(
        positional,
        ["alpine:3", "-c", "--privileged", "-arg", "--network=host"]
    );
    // No option of docker's appears twice where a value could have forged it.
    assert_eq!(value("--network").len(), 1);
    assert!(!options.iter().any(|(flag, _)| flag == "--privileged"));
}

/// Every element the CLI renderer can emit for a spec with values starting with `-`, built
/// directly (bypassing the policy), still reads back with values attached.
#[test]
fn renderer_attaches_every_value_even_for_specs_the_policy_would_refuse() {
    let loaded = agentc_policy::load(FILE, CLAUDE).unwrap();
    let spec = agentc_policy::resolve(
        &loaded,
        &inputs(&case("", CLAUDE, field("", ""))),
        &Everything,
    )
    .unwrap();
    let mut spec = spec;
    if let Action::Container(container) = &mut spec.action {
        container.name = Some("--privileged".into());
        container.user = Some("--privileged".into());
        container.working_dir = Some("--privileged".into());
        container.entrypoint = Some("--privileged".into());
        container.env.push(agentc_policy::EnvVar {
            name: "X".into(),
            value: agentc_policy::EnvValue::Literal {
                value: "--privileged".into(),
            },
        });
        container.labels.insert("-l".into(), "--privileged".into());
        container.network = agentc_policy::Network::Named {
            name: "--privileged".into(),
        };
        container.command = vec!["--privileged".into()];
    }
    let argv = agentc_backend_cli::render_argv(&spec).unwrap();
    let (options, positional) = parse_like_pflag(&argv);
    for flag in ["--name", "--user", "--workdir", "--entrypoint", "--network"] {
        assert!(
            options
                .iter()
                .any(|(name, value)| name == flag && value.as_deref() == Some("--privileged")),
            "{flag}: {argv:?}"
        );
    }
    assert_eq!(positional[1..], ["--privileged".to_string()]);
    // An image starting with `-` cannot be positional: the renderer refuses it.
    if let Action::Container(container) = &mut spec.action {
        container.image = "--privileged".into();
    }
    assert!(agentc_backend_cli::render_argv(&spec).is_err());
}

/// Symbolic links in sources are followed as docker follows them. A profile-relative source
/// that is a link leading outside the profile's directory (`config -> /etc`) is refused: the
/// profile would read as mounting one of its own files. A link that stays inside is mounted
/// by its real path, and an absolute source that is a link to a dangerous place (a directory
/// holding the docker socket) is refused by the real path it leads to. A dangling link is a
/// missing source.
#[test]
fn symlinked_sources_are_followed_and_refused_when_they_lead_outside() {
    let dir = tempfile::tempdir().unwrap();
    let profile_dir = dir.path().join("profiles");
    std::fs::create_dir(&profile_dir).unwrap();
    std::os::unix::fs::symlink("/etc", profile_dir.join("config")).unwrap();
    std::os::unix::fs::symlink("/nonexistent-agentc-target", profile_dir.join("dangling")).unwrap();
    std::fs::write(profile_dir.join("notes.txt"), "notes").unwrap();
    std::os::unix::fs::symlink("notes.txt", profile_dir.join("notes-link")).unwrap();
    std::os::unix::fs::symlink("/run", dir.path().join("innocent")).unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir(&workspace).unwrap();
    let real_profile_dir = std::fs::canonicalize(&profile_dir).unwrap();
    let profile_dir_text = profile_dir.to_string_lossy().into_owned();
    let mut inputs = inputs(&case("", CLAUDE, field("", "")));
    inputs.profile_dir = profile_dir_text.clone();
    inputs.workspace = workspace.to_string_lossy().into_owned();
    let mount_of = |source: &str| {
        let text = format!("{CLAUDE}[[mounts]]\nsource = {source:?}\ntarget = \"/data\"\n");
        let loaded = agentc_policy::load(FILE, &text).unwrap();
        agentc_policy::resolve(&loaded, &inputs, &agentc_policy::RealPaths)
    };

    match mount_of("config") {
        Err(PolicyError::Invalid {
            location, message, ..
        }) => {
            assert!(
                matches!(location, Location::Profile { field, .. } if field == "mounts[0].source")
            );
            assert_eq!(
                message,
                format!(
                    "mounts[0].source {profile_dir_text}/config is a symbolic link to /etc, outside the profile's directory"
                )
            );
        }
        other => panic!("a link leading outside the profile must be refused, got {other:?}"),
    }

    let spec = mount_of("notes-link").unwrap();
    let mount = container(&spec)
        .mounts
        .iter()
        .find(|m| m.target == "/data")
        .expect("the /data mount");
    assert_eq!(
        mount.source,
        MountSource::Bind {
            path: format!("{}/notes.txt", real_profile_dir.display())
        }
    );
    assert!(mount.read_only);

    let innocent = dir.path().join("innocent").to_string_lossy().into_owned();
    match mount_of(&innocent) {
        Err(PolicyError::Invalid { message, hint, .. }) => {
            assert_eq!(
                message,
                "mounts[0].source /run resolves to the docker socket or a directory holding it"
            );
            assert!(hint.contains("allow_docker_socket"), "{hint}");
        }
        other => panic!("a link to the docker socket's directory must be refused, got {other:?}"),
    }

    match mount_of("dangling") {
        Err(PolicyError::Unlaunchable {
            location, message, ..
        }) => {
            assert!(
                matches!(location, Location::Profile { field, .. } if field == "mounts[0].source")
            );
            assert_eq!(
                message,
                format!("mount source does not exist: {profile_dir_text}/dangling")
            );
        }
        other => panic!("a dangling link must be unlaunchable, got {other:?}"),
    }
}

/// Environment maps in the corpus never leak into the spec unless they are `AGENTC_*`.
#[test]
fn unrelated_environment_values_never_reach_the_spec() {
    let mut case = case("", CLAUDE, field("", ""));
    case.env = vec![
        ("AGENTC_UNKNOWN".into(), "--privileged".into()),
        ("DOCKER_HOST".into(), "tcp://evil:2375".into()),
        ("ANTHROPIC_API_KEY".into(), "sk-hostile-value".into()),
    ];
    let loaded = agentc_policy::load(FILE, CLAUDE).unwrap();
    let spec = agentc_policy::resolve(&loaded, &inputs(&case), &Everything).unwrap();
    let json = serde_json::to_string(&spec).unwrap();
    for value in ["--privileged", "tcp://evil:2375", "sk-hostile-value"] {
        assert!(!json.contains(value), "{value} reached the spec");
    }
}

/// The argv reader's flag lists are complete: every launch of every valid fixture (which
/// together use every profile field) reads back as the renderer's own flags, its image and its
/// command. A flag the renderer learns is refused here until the lists name it.
#[test]
fn every_valid_fixture_reads_back_like_pflag() {
    use agentc_conformance::fixtures;
    let mut launches = 0;
    for path in fixtures::fixture_files("valid") {
        let loaded = fixtures::load_fixture(&path).expect("a valid fixture loads");
        for launch in fixtures::launches(&loaded) {
            let spec = fixtures::resolve(&loaded, &launch).expect("a valid fixture resolves");
            let argv = agentc_backend_cli::render_argv(&spec).expect("it renders");
            check_structure(&spec, &argv);
            launches += 1;
        }
    }
    assert!(launches >= 80, "only {launches} launches read back");
}
