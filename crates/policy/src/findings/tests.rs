use super::*;
use crate::error::{Location, PolicyError};
use crate::inputs::{DecantSource, Owner, PathKind, PathProbe, RealPaths, ResolveInputs};
use crate::load::load;
use crate::paths::exposes_docker_socket;
use crate::resolve::resolve;
use crate::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn abs(path: &Path) -> String {
    normalize_path(&path.to_string_lossy())
}

/// The disk, plus `/`, `/home`, [`HOME`] (with a `.ssh`) and the workspace as directories on
/// every machine.
struct Disk;

impl PathProbe for Disk {
    fn kind(&self, path: &str) -> PathKind {
        match path {
            "/" | "/home" | HOME | SRC | WORKSPACE | SSH => PathKind::Directory,
            _ => RealPaths.kind(path),
        }
    }
}

const HOME: &str = "/home/dev";
const SRC: &str = "/home/dev/src";
const WORKSPACE: &str = "/home/dev/src/project";
const SSH: &str = "/home/dev/.ssh";

fn inputs(kind: LaunchKind, profile_dir: &str, env: &[(String, String)]) -> ResolveInputs {
    ResolveInputs {
        kind,
        workspace: WORKSPACE.to_string(),
        profile_dir: profile_dir.to_string(),
        home_dir: HOME.to_string(),
        owner: Some(Owner {
            name: "dev".to_string(),
            uid: 1000,
            gid: 1000,
        }),
        image: None,
        seed_target: None,
        agent_args: Vec::new(),
        env: env.iter().cloned().collect::<BTreeMap<_, _>>(),
        decant_sources: vec![DecantSource {
            profile: "claude-minimal".to_string(),
            agent: AgentName::ClaudeCode,
            home_volume: "claude-code-home-dev-1000-claude-minimal".to_string(),
        }],
        instance: Instance::default(),
        build: Default::default(),
    }
}

/// `# env: NAME=VALUE` lines of a fixture.
fn fixture_env(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| line.strip_prefix("# env: "))
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

fn fixtures(folder: &str, prefix: &str) -> Vec<PathBuf> {
    let dir = repo().join("fixtures").join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures folder")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with(prefix))
        })
        .collect();
    files.sort();
    files
}

/// Findings of every container launch of a profile text (run, and Decant when enabled).
fn all_findings(text: &str, profile_dir: &str, env: &[(String, String)]) -> Vec<Finding> {
    let loaded = load("p.toml", text).unwrap_or_else(|error| panic!("{error}"));
    let mut kinds = vec![LaunchKind::Run];
    if loaded.profile.decant.enabled {
        kinds.push(LaunchKind::Decant);
    }
    let mut out = Vec::new();
    for kind in kinds {
        let spec = resolve(&loaded, &inputs(kind, profile_dir, env), &Disk)
            .unwrap_or_else(|error| panic!("{error}"));
        out.extend(findings(&loaded, &spec));
    }
    out
}

const PROFILE_DIR: &str = "/nowhere/profiles";

fn codes_of(text: &str, env: &[(&str, &str)]) -> Vec<&'static str> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    all_findings(text, PROFILE_DIR, &env)
        .into_iter()
        .map(|finding| finding.code.as_str())
        .collect()
}

fn one(text: &str, code: &str) -> Finding {
    let found: Vec<Finding> = all_findings(text, PROFILE_DIR, &[])
        .into_iter()
        .filter(|finding| finding.code == code)
        .collect();
    assert_eq!(found.len(), 1, "{code} once in {found:?}");
    found.into_iter().next().unwrap_or_else(|| unreachable!())
}

#[test]
fn every_finding_fixture_triggers_its_code_at_the_tabled_severity() {
    let files = fixtures("valid", "finding-");
    let mut covered = BTreeSet::new();
    for path in files {
        let stem = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let code = stem.trim_start_matches("finding-").to_string();
        let text = std::fs::read_to_string(&path).expect("fixture");
        let profile_dir = abs(path.parent().expect("folder"));
        let report = all_findings(&text, &profile_dir, &fixture_env(&text));
        let finding = report
            .iter()
            .find(|finding| finding.code == code)
            .unwrap_or_else(|| panic!("{stem} does not report {code}: {report:#?}"));
        assert_eq!(finding.severity(), finding.code.severity(), "{stem}");
        assert!(!finding.message.is_empty() && !finding.hint.is_empty());
        covered.insert(code);
    }
    let all: BTreeSet<String> = FindingCode::ALL
        .iter()
        .map(|code| code.to_string())
        .collect();
    assert_eq!(covered, all, "every code has a fixture");
}

#[test]
fn severities_are_ordered_parsed_and_serialized_in_lower_case() {
    assert!(Severity::Info < Severity::Low && Severity::High < Severity::Critical);
    assert_eq!("HIGH".parse::<Severity>(), Ok(Severity::High));
    assert_eq!(" medium ".parse::<Severity>(), Ok(Severity::Medium));
    let error = "severe".parse::<Severity>().expect_err("not a level");
    assert!(
        error.contains("info, low, medium, high or critical"),
        "{error}"
    );
    assert_eq!(
        serde_json::to_value(Severity::Critical).ok(),
        Some(json!("critical"))
    );
    for severity in Severity::ALL {
        assert_eq!(severity.to_string().parse::<Severity>(), Ok(severity));
    }
}

#[test]
fn deny_fails_at_or_above_the_level_only() {
    let text = "name = \"dev\"\nagent = \"codex\"\n[egress]\nmode = \"unrestricted\"\n";
    let loaded = load("p.toml", text).unwrap_or_else(|e| panic!("{e}"));
    let spec = resolve(&loaded, &inputs(LaunchKind::Run, PROFILE_DIR, &[]), &Disk)
        .unwrap_or_else(|e| panic!("{e}"));
    let report = findings(&loaded, &spec);
    assert_eq!(highest(&report), Some(Severity::High));
    assert!(deny(&report, Severity::High));
    assert!(deny(&report, Severity::Low));
    assert!(!deny(&report, Severity::Critical));
    assert!(!deny(&[], Severity::Info));
    assert_eq!(report_json(&[])["highest"], Value::Null);
    // Most severe first.
    let severities: Vec<Severity> = report.iter().map(|f| f.severity()).collect();
    let mut sorted = severities.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(severities, sorted);
}

#[test]
fn the_json_report_carries_code_severity_field_and_position() {
    let text = "name = \"dev\"\nagent = \"codex\"\n[egress]\nmode = \"unrestricted\"\n";
    let loaded = load("p.toml", text).unwrap_or_else(|e| panic!("{e}"));
    let spec = resolve(&loaded, &inputs(LaunchKind::Run, PROFILE_DIR, &[]), &Disk)
        .unwrap_or_else(|e| panic!("{e}"));
    let report = report_json(&findings(&loaded, &spec));
    assert_eq!(report["highest"], json!("high"));
    assert_eq!(report["counts"]["high"], json!(1));
    assert_eq!(report["counts"]["critical"], json!(0));
    let first = &report["findings"][0];
    assert_eq!(first["code"], json!("egress-unrestricted"));
    assert_eq!(first["severity"], json!("high"));
    assert_eq!(first["field"], json!("egress.mode"));
    assert_eq!(first["line"], json!(4));
    assert_eq!(first["allowed_by"], Value::Null);
    let whole = explain_json(&loaded, &spec);
    assert_eq!(whole["kind"], json!("run"));
    assert_eq!(whole["profile"], json!("dev"));
    assert!(whole["spec"].is_object());
}

#[test]
fn egress_entries_are_classified_precisely() {
    let cases: &[(&str, Option<&str>)] = &[
        ("api.anthropic.com", None),
        ("localhost", None),
        ("192.0.2.10", None),
        ("192.0.2.10/32", None),
        ("2001:db8::1/128", None),
        ("10.0.0.0/8", Some("egress-ip-range")),
        ("2001:db8::/32", Some("egress-ip-range")),
        ("0.0.0.0/0", Some("egress-ip-range")),
        (".example.com", Some("egress-domain")),
        ("*.example.com", Some("egress-domain")),
        ("api*.example.com", Some("egress-domain")),
        ("com", Some("egress-tld")),
        (".io", Some("egress-tld")),
        ("*.dev", Some("egress-tld")),
        ("COM.", Some("egress-tld")),
    ];
    for (entry, want) in cases {
        assert_eq!(
            host_scope(entry).map(|(code, _)| code.as_str()),
            *want,
            "{entry}"
        );
    }
    let codes = codes_of(
        "name = \"dev\"\nagent = \"codex\"\n[egress]\nhosts = [\"a.example.com\", \".example.org\", \"net\", \"10.1.0.0/16\"]\nenforce = \"image\"\n",
        &[],
    );
    for code in ["egress-domain", "egress-tld", "egress-ip-range"] {
        assert_eq!(
            codes.iter().filter(|c| **c == code).count(),
            1,
            "{code}: {codes:?}"
        );
    }
    // A deny profile allows nothing, whatever its list says.
    let codes = codes_of(
        "name = \"dev\"\nagent = \"codex\"\n[egress]\nmode = \"deny\"\nhosts = [\".com\"]\n",
        &[],
    );
    assert!(!codes.contains(&"egress-tld"), "{codes:?}");
}

#[test]
fn gateway_bootstrap_ranges_are_reported() {
    let file = abs(&repo().join("fixtures/files/gateway/mounted-key"));
    let text = format!(
        "name = \"dev\"\nagent = \"claude-code\"\n[egress]\nmode = \"deny\"\n\
         gateway_host = \"gw\"\ngateway_port = 22\n\
         gateway_bootstrap_allow = [\"192.0.2.1\", \"198.51.100.0/24\"]\n\
         [[mounts]]\nsource = {file:?}\ntarget = \"/etc/agent/gateway-key\"\n\
         [[mounts]]\nsource = {file:?}\ntarget = \"/etc/agent/gateway-known-hosts\"\n"
    );
    let finding = one(&text, "egress-ip-range");
    assert_eq!(finding.field(), "egress.gateway_bootstrap_allow[1]");
    assert_eq!(finding.position().map(|p| p.0), Some(7));
}

#[test]
fn docker_socket_paths_are_recognized_in_every_spelling() {
    for path in [
        "/var/run/docker.sock",
        "/run/docker.sock",
        "/run",
        "/var/run",
        "/var",
        "/srv/elsewhere/docker.sock",
        "/run/user/1000/docker.sock",
        "/run/user/1000",
        "/run/user",
        "/home/dev/.docker",
        "/home/dev/.docker/run",
        "/home/dev/.docker/desktop",
    ] {
        assert!(exposes_docker_socket(path), "{path}");
    }
    for path in [
        "/srv",
        "/var/lib/data",
        "/run/user/1000/bus/x",
        "/home/dev/docker.socket",
    ] {
        assert!(!exposes_docker_socket(path), "{path}");
    }
    assert_eq!(
        classify_path("//var//run/../run/./docker.sock", None),
        Some(Danger::DockerSocket)
    );
    assert_eq!(classify_path("/..", None), Some(Danger::Root));
    assert_eq!(
        classify_path("/home", Some("/home/dev")),
        Some(Danger::Home)
    );
    assert_eq!(
        classify_path("/home/dev/", Some("/home/dev")),
        Some(Danger::Home)
    );
    assert_eq!(classify_path("/home/dev/src", Some("/home/dev")), None);
    assert_eq!(classify_path("/home", None), None);
    // A home of / (HOME unset) makes nothing a home bind but / itself.
    assert_eq!(classify_path("/srv", Some("/")), None);
}

/// (field, message, hint) of a refusal, at load or at resolve.
fn refusal(text: &str) -> (String, String, String) {
    let error = match load("p.toml", text) {
        Err(errors) => errors.first().clone(),
        Ok(loaded) => match resolve(&loaded, &inputs(LaunchKind::Run, PROFILE_DIR, &[]), &Disk) {
            Err(error) => error,
            Ok(_) => panic!("accepted:\n{text}"),
        },
    };
    match error {
        PolicyError::Invalid {
            location,
            message,
            hint,
            ..
        } => {
            let field = match location {
                Location::Profile { field, .. } => field,
                Location::Invocation { input } => input,
                Location::Environment { variable } => variable,
            };
            (field, message, hint)
        }
        other => panic!("not a refusal: {other}"),
    }
}

const CLAUDE: &str = "name = \"dev\"\nagent = \"claude-code\"\n";

fn with_mount(source: &str, allow: &str) -> String {
    format!(
        "{CLAUDE}[[mounts]]\ntype = \"directory\"\nsource = {source:?}\ntarget = \"/x\"\n{allow}"
    )
}

#[test]
fn the_docker_socket_is_refused_in_any_form_unless_allowed() {
    for (source, message) in [
        ("/var/run/docker.sock", "mounts[0].source exposes the docker socket: /var/run/docker.sock"),
        ("/run", "mounts[0].source exposes the docker socket: /run"),
        ("//run/../run/./docker.sock", "mounts[0].source exposes the docker socket: /run/docker.sock"),
        ("/var", "mounts[0].source exposes the docker socket: /var"),
        (
            "../../../run/docker.sock",
            "mounts[0].source /run/docker.sock resolves to the docker socket or a directory holding it",
        ),
        (
            "~/.docker/run",
            "mounts[0].source /home/dev/.docker/run resolves to the docker socket or a directory holding it",
        ),
    ] {
        let (field, actual, hint) = refusal(&with_mount(source, ""));
        assert_eq!(field, "mounts[0].source", "{source}");
        assert_eq!(actual, message, "{source}");
        assert!(hint.contains("[security] allow_docker_socket = true"), "{hint}");
    }
    let (field, message, hint) = refusal(&format!("{CLAUDE}[proxy]\nca_dir = \"/run\"\n"));
    assert_eq!(field, "proxy.ca_dir");
    assert_eq!(message, "proxy.ca_dir exposes the docker socket: /run");
    assert!(hint.contains("allow_docker_socket"));
    for (extra, field) in [
        (
            "[provider]\nkind = \"anthropic\"\napi_key_env = \"DOCKER_HOST\"\n",
            "provider.api_key_env",
        ),
        (
            "[egress]\nmode = \"unrestricted\"\n[langfuse]\nenabled = true\nbase_url = \"https://lf.example\"\nsecret_key_env = \"DOCKER_HOST\"\n",
            "langfuse.secret_key_env",
        ),
    ] {
        let (actual, message, hint) = refusal(&format!("{CLAUDE}{extra}"));
        assert_eq!(actual, field);
        assert_eq!(message, format!("{field} passes DOCKER_HOST into the container"));
        assert!(hint.contains("allow_docker_socket = true"), "{hint}");
    }
    // `/run` holds the engines' sockets as well (`/run/containerd`): the socket's field alone
    // does not accept it.
    let (_, message, hint) = refusal(&with_mount(
        "/run",
        "[security]\nallow_docker_socket = true\n",
    ));
    assert!(message.contains("container engine's data"), "{message}");
    assert!(hint.contains("allow_engine_data_bind = true"), "{hint}");
    // Accepted when the profile says so, and reported critical naming the field.
    let allowed = with_mount(
        "/run",
        "[security]\nallow_docker_socket = true\nallow_engine_data_bind = true\n",
    );
    let engine = one(&allowed, "bind-engine-data");
    assert_eq!(engine.severity(), Severity::Critical);
    assert_eq!(
        engine.allowed_by.as_deref(),
        Some("security.allow_engine_data_bind")
    );
    assert!(engine.message.ends_with("(line 9)"), "{}", engine.message);
    let finding = one(&allowed, "docker-socket");
    assert_eq!(finding.severity(), Severity::Critical);
    assert_eq!(finding.field(), "mounts[0].source");
    assert_eq!(finding.position().map(|p| p.0), Some(5));
    assert_eq!(
        finding.allowed_by.as_deref(),
        Some("security.allow_docker_socket")
    );
    assert!(
        finding
            .message
            .ends_with("accepted by security.allow_docker_socket (line 8)"),
        "{}",
        finding.message
    );
    let host = format!(
        "{CLAUDE}[provider]\nkind = \"anthropic\"\napi_key_env = \"DOCKER_HOST\"\n\
         [security]\nallow_docker_socket = true\n"
    );
    let finding = one(&host, "docker-socket");
    assert_eq!(finding.field(), "provider.api_key_env");
    assert!(
        finding.message.contains("DOCKER_HOST is passed through"),
        "{}",
        finding.message
    );
}

#[test]
fn binds_of_root_and_home_are_refused_unless_allowed() {
    let (field, message, hint) = refusal(&with_mount("/", ""));
    assert_eq!(field, "mounts[0].source");
    assert_eq!(
        message,
        "mounts[0].source binds the host's root directory /"
    );
    assert!(hint.contains("[security] allow_root_bind = true"), "{hint}");
    let (_, message, _) = refusal(&with_mount("../../..", ""));
    assert_eq!(message, "mounts[0].source / is the host's root directory");
    for (source, message) in [
        (
            "~",
            "mounts[0].source /home/dev is the whole home directory",
        ),
        (
            "~/",
            "mounts[0].source /home/dev is the whole home directory",
        ),
        (
            "/home/dev/src/..",
            "mounts[0].source /home/dev is the whole home directory",
        ),
        (
            "/home",
            "mounts[0].source /home contains the home directory /home/dev",
        ),
        (
            "~/..",
            "mounts[0].source /home contains the home directory /home/dev",
        ),
    ] {
        let (field, actual, hint) = refusal(&with_mount(source, ""));
        assert_eq!(field, "mounts[0].source", "{source}");
        assert_eq!(actual, message, "{source}");
        assert!(hint.contains("[security] allow_home_bind = true"), "{hint}");
    }
    // A directory inside the home is an ordinary bind (here it fails only for being missing).
    let loaded = load("p.toml", &with_mount("~/missing-dir", "")).unwrap_or_else(|e| panic!("{e}"));
    let error =
        resolve(&loaded, &inputs(LaunchKind::Run, PROFILE_DIR, &[]), &Disk).expect_err("missing");
    assert!(
        matches!(&error, PolicyError::Unlaunchable { message, .. }
            if message == "mount source does not exist: /home/dev/missing-dir"),
        "{error}"
    );
    // The seed helper's source is checked as well.
    let seed = format!(
        "{CLAUDE}[[mounts]]\ntype = \"seed\"\nsource = \"~\"\ntarget = \"/home/claude/all\"\n"
    );
    let loaded = load("p.toml", &seed).unwrap_or_else(|e| panic!("{e}"));
    let mut seed_inputs = inputs(LaunchKind::Seed, PROFILE_DIR, &[]);
    seed_inputs.seed_target = Some("/home/claude/all".to_string());
    let error = resolve(&loaded, &seed_inputs, &Disk).expect_err("refused");
    assert!(
        error.with_hint().to_string().contains("allow_home_bind"),
        "{error}"
    );
    // Accepted when allowed, and reported.
    let root = one(
        &with_mount("/", "[security]\nallow_root_bind = true\n"),
        "bind-root",
    );
    assert_eq!(root.severity(), Severity::Critical);
    assert_eq!(root.allowed_by.as_deref(), Some("security.allow_root_bind"));
    let home = one(
        &with_mount("~", "[security]\nallow_home_bind = true\n"),
        "bind-home",
    );
    assert_eq!(home.severity(), Severity::High);
    assert_eq!(home.field(), "mounts[0].source");
    assert_eq!(home.allowed_by.as_deref(), Some("security.allow_home_bind"));
    assert!(home
        .message
        .contains("accepted by security.allow_home_bind (line 8)"));
}

/// [`Disk`], with each key a directory that is, on the disk, its value.
struct Mapped(BTreeMap<String, String>);

impl PathProbe for Mapped {
    fn kind(&self, path: &str) -> PathKind {
        match self.0.get(path) {
            Some(real) => RealPaths.kind(real),
            None => Disk.kind(path),
        }
    }
}

/// [`Disk`], with `/home/dev/src/link` a link to `/var/lib/docker` (which then exists) and a
/// `/root/.ssh`.
struct Linked;

impl PathProbe for Linked {
    fn kind(&self, path: &str) -> PathKind {
        match path {
            "/var/lib/docker" | "/home/dev/src/link" | "/root/.ssh" => PathKind::Directory,
            _ => Disk.kind(path),
        }
    }

    fn canonical(&self, path: &str) -> Option<String> {
        path.strip_prefix("/home/dev/src/link")
            .map(|rest| format!("/var/lib/docker{rest}"))
    }
}

#[test]
fn host_paths_that_hand_over_the_host_are_refused_wherever_they_enter() {
    // Mounts, read-only or not, in every spelling; the error names the field, the position and
    // the allow_* setting.
    for (source, allow) in [
        ("/var/lib/docker/containers", "allow_engine_data_bind"),
        ("/var/lib", "allow_engine_data_bind"),
        ("/proc/1/root/var/lib/docker", "allow_engine_data_bind"),
        ("/proc/self/root/etc", "allow_host_system_bind"),
        ("/proc", "allow_host_system_bind"),
        ("/sys/kernel", "allow_host_system_bind"),
        ("/dev", "allow_host_system_bind"),
        ("//etc", "allow_host_system_bind"),
        ("/boot", "allow_host_system_bind"),
        ("/root", "allow_host_system_bind"),
        ("~/.ssh", "allow_credential_dir_bind"),
        ("~/.ssh/id_ed25519", "allow_credential_dir_bind"),
        ("/home/dev/.kube", "allow_credential_dir_bind"),
        ("~/.config/gcloud", "allow_credential_dir_bind"),
        ("~/.aws", "allow_credential_dir_bind"),
        ("~/.gnupg", "allow_credential_dir_bind"),
        ("~/.docker/config.json", "allow_credential_dir_bind"),
        ("~/.local/share/containers", "allow_engine_data_bind"),
    ] {
        for read_only in ["", "read_only = true\n"] {
            let text = format!(
                "{CLAUDE}[[mounts]]\ntype = \"directory\"\nsource = {source:?}\ntarget = \"/x\"\n\
                 {read_only}"
            );
            let (field, message, hint) = refusal(&text);
            assert_eq!(field, "mounts[0].source", "{source}");
            assert!(message.starts_with("mounts[0].source /"), "{message}");
            assert!(
                hint.ends_with(&format!("or set [security] {allow} = true to accept it")),
                "{source}: {hint}"
            );
        }
    }
    let error = load("p.toml", &with_mount("/var/lib/docker", "")).expect_err("refused");
    let error = error.first().with_hint().to_string();
    assert!(
        error.starts_with("p.toml:5:10: mounts[0].source: mounts[0].source /var/lib/docker holds a container engine's data"),
        "{error}"
    );
    // The workspace: inside a credential directory, or a link to the engine's data.
    let loaded = load("p.toml", CLAUDE).unwrap_or_else(|e| panic!("{e}"));
    for (workspace, allow) in [
        ("/home/dev/.ssh", "allow_credential_dir_bind"),
        ("/home/dev/.ssh/keys", "allow_credential_dir_bind"),
        ("/etc/app", "allow_host_system_bind"),
        ("/home/dev/src/link", "allow_engine_data_bind"),
    ] {
        let mut run = inputs(LaunchKind::Run, PROFILE_DIR, &[]);
        run.workspace = workspace.to_string();
        match resolve(&loaded, &run, &Linked) {
            Err(PolicyError::Invalid {
                location: Location::Invocation { input },
                message,
                hint,
            }) => {
                assert_eq!(input, "--workspace");
                assert!(
                    message.starts_with(&format!("the workspace {workspace}")),
                    "{message}"
                );
                assert!(hint.contains(allow), "{workspace}: {hint}");
            }
            other => panic!("{workspace}: {other:?}"),
        }
    }
    // A workspace in the home stays an ordinary workspace, and so does root's own project when
    // the home is /root.
    let spec = resolve(&loaded, &inputs(LaunchKind::Run, PROFILE_DIR, &[]), &Disk);
    assert!(spec.is_ok(), "{spec:?}");
    let mut as_root = inputs(LaunchKind::Run, PROFILE_DIR, &[]);
    as_root.home_dir = "/root".to_string();
    as_root.workspace = "/root".to_string();
    let error = resolve(&loaded, &as_root, &Disk).expect_err("the home itself");
    assert!(
        error.with_hint().to_string().contains("allow_home_bind"),
        "{error}"
    );
    // A mount through a link is judged where the link leads.
    let (field, message, _) = {
        let loaded = load("p.toml", &with_mount("/home/dev/src/link/containers", ""))
            .unwrap_or_else(|e| panic!("{e}"));
        match resolve(&loaded, &inputs(LaunchKind::Run, PROFILE_DIR, &[]), &Linked) {
            Err(PolicyError::Invalid {
                location: Location::Profile { field, .. },
                message,
                hint,
            }) => (field, message, hint),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(field, "mounts[0].source");
    assert!(
        message
            .starts_with("mounts[0].source /var/lib/docker/containers holds a container engine's"),
        "{message}"
    );
    // A seed's source.
    let seed = format!(
        "{CLAUDE}[[mounts]]\ntype = \"seed\"\nsource = \"~/.ssh/id_ed25519\"\n\
         target = \"/home/claude/.ssh/id_ed25519\"\n"
    );
    let loaded = load("p.toml", &seed).unwrap_or_else(|e| panic!("{e}"));
    let mut seed_inputs = inputs(LaunchKind::Seed, PROFILE_DIR, &[]);
    seed_inputs.seed_target = Some("/home/claude/.ssh/id_ed25519".to_string());
    let error = resolve(&loaded, &seed_inputs, &Disk).expect_err("refused");
    assert!(
        error
            .with_hint()
            .to_string()
            .contains("allow_credential_dir_bind = true"),
        "{error}"
    );
    // A build context: absolute as the profile loads, relative or `~` as the launch resolves.
    let custom = "name = \"dev\"\nagent = \"custom\"\n[image]\nref = \"box:1\"\n";
    let (field, _, hint) = refusal(&format!("{custom}build_context = \"/etc\"\n"));
    assert_eq!(field, "image.build_context");
    assert!(hint.contains("allow_host_system_bind = true"), "{hint}");
    let loaded = load("p.toml", &format!("{custom}build_context = \"~/.kube\"\n"))
        .unwrap_or_else(|e| panic!("{e}"));
    let error =
        resolve(&loaded, &inputs(LaunchKind::Build, PROFILE_DIR, &[]), &Disk).expect_err("refused");
    assert!(
        error
            .with_hint()
            .to_string()
            .contains("image.build_context /home/dev/.kube"),
        "{error}"
    );
    // Accepted, the context is the finding of its field (not its bind's).
    let dir = abs(&repo().join("fixtures/files/sandbox-image"));
    let text = format!(
        "{custom}build_context = \"~/.kube/../src/../.kube/../../dev/.kube\"\n\
         [security]\nallow_credential_dir_bind = true\n"
    );
    let loaded = load("p.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    let mut probe = BTreeMap::new();
    probe.insert("/home/dev/.kube".to_string(), dir);
    let spec = resolve(
        &loaded,
        &inputs(LaunchKind::Build, PROFILE_DIR, &[]),
        &Mapped(probe),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let report = findings(&loaded, &spec);
    let found = report
        .iter()
        .find(|f| f.code == "bind-credential-dir")
        .unwrap_or_else(|| panic!("{report:#?}"));
    assert_eq!(found.field(), "image.build_context");
    assert_eq!(found.severity(), Severity::Critical);
    assert_eq!(
        found.allowed_by.as_deref(),
        Some("security.allow_credential_dir_bind")
    );
    // A CA file, and a configuration import.
    let (field, _, hint) = refusal(&format!(
        "{CLAUDE}[proxy]\nhttps = \"http://proxy.example:3128\"\nca_file = \"/etc/ssl/private/key.pem\"\n"
    ));
    assert_eq!(field, "proxy.ca_file");
    assert!(hint.contains("allow_host_system_bind"), "{hint}");
    let (field, _, hint) = refusal(&format!(
        "{CLAUDE}[configuration_import]\nsource = \"~/.aws/config\"\nformat = \"json\"\n"
    ));
    assert_eq!(field, "configuration_import.source");
    assert!(hint.contains("allow_credential_dir_bind"), "{hint}");
}

#[test]
fn an_allowed_host_path_is_a_critical_finding_naming_its_field() {
    for (source, allow, code) in [
        ("/etc", "allow_host_system_bind", "bind-host-system"),
        ("/var/lib", "allow_engine_data_bind", "bind-engine-data"),
        ("~/.ssh", "allow_credential_dir_bind", "bind-credential-dir"),
    ] {
        let finding = one(
            &with_mount(source, &format!("[security]\n{allow} = true\n")),
            code,
        );
        assert_eq!(finding.severity(), Severity::Critical, "{source}");
        assert_eq!(finding.field(), "mounts[0].source");
        assert_eq!(
            finding.allowed_by.as_deref(),
            Some(format!("security.{allow}").as_str())
        );
        assert!(
            finding
                .message
                .ends_with(&format!("accepted by security.{allow} (line 8)")),
            "{}",
            finding.message
        );
    }
    // /root/.ssh needs both fields, and reports both.
    let both = with_mount(
        "/root/.ssh",
        "[security]\nallow_host_system_bind = true\nallow_credential_dir_bind = true\n",
    );
    let loaded = load("p.toml", &both).unwrap_or_else(|e| panic!("{e}"));
    let spec = resolve(&loaded, &inputs(LaunchKind::Run, PROFILE_DIR, &[]), &Linked)
        .unwrap_or_else(|e| panic!("{e}"));
    let codes: Vec<&str> = findings(&loaded, &spec)
        .iter()
        .map(|f| f.code.as_str())
        .collect();
    assert!(
        codes.contains(&"bind-host-system") && codes.contains(&"bind-credential-dir"),
        "{codes:?}"
    );
    let (_, _, hint) = refusal(&with_mount(
        "/root/.ssh",
        "[security]\nallow_host_system_bind = true\n",
    ));
    assert!(hint.contains("allow_credential_dir_bind = true"), "{hint}");
}

#[test]
fn the_home_as_workspace_is_refused_at_the_invocation_unless_allowed() {
    let loaded = load("p.toml", CLAUDE).unwrap_or_else(|e| panic!("{e}"));
    let mut at_home = inputs(LaunchKind::Run, PROFILE_DIR, &[]);
    at_home.workspace = "/home".to_string();
    match resolve(&loaded, &at_home, &Disk) {
        Err(PolicyError::Invalid {
            location: Location::Invocation { input },
            message,
            hint,
        }) => {
            assert_eq!(input, "--workspace");
            assert_eq!(
                message,
                "the workspace /home contains the home directory /home/dev"
            );
            assert!(hint.contains("allow_home_bind = true"));
        }
        other => panic!("{other:?}"),
    }
    let allowed = format!("{CLAUDE}[security]\nallow_home_bind = true\n");
    let loaded = load("p.toml", &allowed).unwrap_or_else(|e| panic!("{e}"));
    let spec = resolve(&loaded, &at_home, &Disk).unwrap_or_else(|e| panic!("{e}"));
    let report = findings(&loaded, &spec);
    let home = report
        .iter()
        .find(|finding| finding.code == "bind-home")
        .unwrap_or_else(|| panic!("{report:?}"));
    assert_eq!(home.field(), "--workspace");
}

#[test]
fn every_dangerous_fixture_is_refused_naming_its_field_and_allow_setting() {
    let files = fixtures("invalid", "dangerous-");
    assert!(files.len() >= 6);
    for path in files {
        let text = std::fs::read_to_string(&path).expect("fixture");
        let expect = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("# expect: "))
            .and_then(|line| line.split_once(" — "))
            .map(|(field, _)| field.to_string())
            .unwrap_or_else(|| panic!("{}: no expect line", path.display()));
        let profile_dir = abs(path.parent().expect("folder"));
        let error = match load("p.toml", &text) {
            Err(errors) => errors.first().clone(),
            Ok(loaded) => resolve(&loaded, &inputs(LaunchKind::Run, &profile_dir, &[]), &Disk)
                .expect_err("refused"),
        };
        let PolicyError::Invalid { location, hint, .. } = &error else {
            panic!("{}: {error}", path.display());
        };
        assert!(
            matches!(location, Location::Profile { field, .. } if *field == expect),
            "{}: {error}",
            path.display()
        );
        assert!(
            hint.contains("[security] allow_"),
            "{}: {hint}",
            path.display()
        );
    }
}

#[test]
fn writable_binds_above_the_workspace_and_elsewhere_are_told_apart() {
    let parent = SRC;
    let text = format!(
        "{CLAUDE}[[mounts]]\ntype = \"directory\"\nsource = {parent:?}\ntarget = \"/up\"\nread_only = false\n\
         [[mounts]]\ntype = \"directory\"\nsource = {:?}\ntarget = \"/down\"\nread_only = false\n\
         [[mounts]]\ntype = \"directory\"\nsource = {parent:?}\ntarget = \"/up-ro\"\n",
        abs(&repo().join("crates"))
    );
    let report = all_findings(&text, PROFILE_DIR, &[]);
    let ancestor: Vec<&Finding> = report
        .iter()
        .filter(|f| f.code == "bind-workspace-ancestor")
        .collect();
    assert_eq!(ancestor.len(), 1, "{report:#?}");
    assert_eq!(ancestor[0].field(), "mounts[0].source");
    let writable: Vec<&Finding> = report
        .iter()
        .filter(|f| f.code == "bind-writable")
        .collect();
    assert_eq!(writable.len(), 1, "{report:#?}");
    assert_eq!(writable[0].field(), "mounts[1].source");
    let door = report
        .iter()
        .find(|f| f.code == "workspace-writable")
        .unwrap_or_else(|| panic!("{report:#?}"));
    assert_eq!(door.severity(), Severity::Low);
    let read_only = format!("{CLAUDE}[workspace]\nread_only = true\n");
    assert!(!codes_of(&read_only, &[]).contains(&"workspace-writable"));
}

#[test]
fn limits_removed_by_the_environment_name_the_variable() {
    let report = all_findings(
        CLAUDE,
        PROFILE_DIR,
        &[
            ("AGENTC_MEM_LIMIT".to_string(), "off".to_string()),
            ("AGENTC_PIDS_LIMIT".to_string(), "OFF".to_string()),
            ("AGENTC_LOG_MAX_SIZE".to_string(), "off".to_string()),
        ],
    );
    let sources: BTreeMap<&str, &crate::FindingSource> = report
        .iter()
        .map(|finding| (finding.code.as_str(), &finding.source))
        .collect();
    for (code, variable) in [
        ("memory-unlimited", "AGENTC_MEM_LIMIT"),
        ("pids-unlimited", "AGENTC_PIDS_LIMIT"),
        ("log-rotation-off", "AGENTC_LOG_MAX_SIZE"),
    ] {
        let expected = crate::FindingSource::Environment {
            variable: variable.to_string(),
        };
        assert_eq!(sources.get(code), Some(&&expected), "{code}");
    }
    let memory = report.iter().find(|f| f.code == "memory-unlimited");
    assert_eq!(
        memory.map(|f| (f.field(), f.position())),
        Some(("$AGENTC_MEM_LIMIT".to_string(), None))
    );
    let text = report_text(&report);
    assert!(
        text.contains("at $AGENTC_MEM_LIMIT: no memory limit"),
        "{text}"
    );
    let defaults = codes_of(CLAUDE, &[]);
    for code in ["memory-unlimited", "pids-unlimited", "log-rotation-off"] {
        assert!(!defaults.contains(&code), "{code}");
    }
}

#[test]
fn capabilities_beyond_the_preset_are_graded_and_preset_ones_are_not() {
    let text = format!("{CLAUDE}[security]\nadd_capabilities = [\"SYS_ADMIN\", \"NET_BIND_SERVICE\", \"NET_ADMIN\"]\n");
    let report = all_findings(&text, PROFILE_DIR, &[]);
    let caps: Vec<(&str, String)> = report
        .iter()
        .filter(|f| f.code.as_str().starts_with("capability"))
        .map(|f| (f.code.as_str(), f.field()))
        .collect();
    // NET_ADMIN is in the Claude Code preset already.
    assert_eq!(
        caps,
        vec![
            (
                "capability-dangerous",
                "security.add_capabilities[0]".to_string()
            ),
            (
                "capability-added",
                "security.add_capabilities[1]".to_string()
            ),
        ]
    );
    assert!(codes_of(CLAUDE, &[])
        .iter()
        .all(|c| !c.starts_with("capability")));
}

#[test]
fn decant_off_loopback_is_reported_on_every_launch_and_loopback_is_not() {
    let public = format!(
        "{CLAUDE}[decant]\nenabled = true\nsource_profiles = [\"claude-minimal\"]\nbind_address = \"::\"\n"
    );
    let report = all_findings(&public, PROFILE_DIR, &[]);
    let fields: Vec<String> = report
        .iter()
        .filter(|f| f.code == "port-public")
        .map(|f| f.field())
        .collect();
    assert_eq!(fields, vec!["decant.bind_address", "decant.bind_address"]);
    let local =
        format!("{CLAUDE}[decant]\nenabled = true\nsource_profiles = [\"claude-minimal\"]\n");
    assert!(!codes_of(&local, &[]).contains(&"port-public"));
    // Agent ports are published on loopback only.
    let ports = format!("{CLAUDE}[network]\npublish = [8080]\n");
    assert!(!codes_of(&ports, &[]).contains(&"port-public"));
}

/// A port the egress proxy publishes for the sandbox (an allowlist enforced outside, or deny
/// with published ports) is reported as the sandbox's own: written out on 0.0.0.0 it is
/// `port-public` at its `network.publish` entry, on loopback it is nothing.
#[test]
fn a_port_the_egress_proxy_publishes_off_loopback_is_public() {
    let sandbox = "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"busybox:1.36\"\n";
    for egress in [
        "[egress]\nmode = \"allowlist\"\nhosts = [\"example.com\"]\n",
        "[egress]\nmode = \"deny\"\n",
        "[egress]\nmode = \"unrestricted\"\n",
    ] {
        let public = format!(
            "{sandbox}{egress}[network]\npublish = [\"18080:8080\", \"0.0.0.0:18081:8081\"]\n"
        );
        let finding = one(&public, "port-public");
        assert_eq!(finding.field(), "network.publish[1]", "{egress}");
        assert!(
            finding
                .message
                .contains("port 8081/tcp is published on 0.0.0.0"),
            "{egress}: {}",
            finding.message
        );
        let local = format!("{sandbox}{egress}[network]\npublish = [\"18080:8080\", 8081]\n");
        assert!(!codes_of(&local, &[]).contains(&"port-public"), "{egress}");
    }
}

#[test]
fn a_hardened_profile_reports_only_the_two_way_door() {
    let codes = codes_of(
        "name = \"dev\"\nagent = \"claude-code\"\n[egress]\nhosts = [\"api.anthropic.com\"]\n",
        &[],
    );
    assert_eq!(codes, vec!["workspace-writable"]);
    let sandbox = codes_of(
        "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"busybox\"\n[egress]\nmode = \"deny\"\n",
        &[],
    );
    assert!(sandbox.is_empty(), "{sandbox:?}");
}

#[test]
fn allowing_ech_is_a_high_finding_at_its_entry() {
    let text = "name = \"dev\"\nagent = \"custom\"\n[image]\nref = \"busybox\"\n[egress]\n\
                hosts = [\"a.example.com\", \"b.example.com\"]\n\
                allow_ech = [\"b.example.com\"]\n";
    let finding = one(text, "egress-ech");
    assert_eq!(finding.severity(), Severity::High);
    assert_eq!(finding.field(), "egress.allow_ech[0]");
    assert_eq!(finding.position().map(|p| p.0), Some(7));
    assert!(finding.message.contains("b.example.com"), "{finding:?}");
}

/// The host's CA store: `/etc/ssl/certs/corp.pem` and a "certificate" there that links to
/// `/etc/shadow`; `/etc/ssl/private/corp.pem` beside them.
struct TrustStore;

impl PathProbe for TrustStore {
    fn kind(&self, path: &str) -> PathKind {
        match path {
            "/etc/ssl/certs/corp.pem"
            | "/etc/ssl/certs/shadow.pem"
            | "/etc/shadow"
            | "/etc/ssl/private/corp.pem" => PathKind::File,
            "/etc/ssl/certs" | "/etc/ssl" | "/etc/pki/ca-trust/source/anchors" => {
                PathKind::Directory
            }
            _ => Disk.kind(path),
        }
    }

    fn canonical(&self, path: &str) -> Option<String> {
        match path {
            "/etc/ssl/certs/shadow.pem" => Some("/etc/shadow".to_string()),
            _ => Some(path.to_string()),
        }
    }
}

#[test]
fn a_ca_bundle_of_the_hosts_trust_store_is_no_host_system_bind() {
    let profile = |key: &str, path: &str| {
        format!("{CLAUDE}[proxy]\nhttps = \"http://proxy.corp:3128/\"\n{key} = {path:?}\n")
    };
    let resolved = |text: &str| {
        let loaded = load("p.toml", text).map_err(|e| e.first().with_hint().to_string())?;
        resolve(
            &loaded,
            &inputs(LaunchKind::Run, PROFILE_DIR, &[]),
            &TrustStore,
        )
        .map_err(|e| e.with_hint().to_string())
    };
    // Public certificates: accepted as the proxy's CA, as a file or the store's directory.
    for (key, path) in [
        ("ca_file", "/etc/ssl/certs/corp.pem"),
        ("ca_dir", "/etc/ssl/certs"),
        ("ca_dir", "/etc/pki/ca-trust/source/anchors"),
    ] {
        let spec = resolved(&profile(key, path));
        assert!(spec.is_ok(), "{key} = {path}: {spec:?}");
    }
    // Beside the store (keys), above it, through /proc, or a link out of it: refused.
    for (key, path) in [
        ("ca_file", "/etc/ssl/private/corp.pem"),
        ("ca_dir", "/etc/ssl"),
        ("ca_file", "/proc/self/root/etc/ssl/certs/corp.pem"),
        ("ca_file", "/etc/ssl/certs/shadow.pem"),
    ] {
        let error = resolved(&profile(key, path)).expect_err(path);
        assert!(
            error.contains(&format!("proxy.{key}")) && error.contains("allow_host_system_bind"),
            "{key} = {path}: {error}"
        );
    }
    // The same store path as a mount is still a bind of /etc.
    let (field, _, hint) = refusal(&with_mount("/etc/ssl/certs", ""));
    assert_eq!(field, "mounts[0].source");
    assert!(hint.contains("allow_host_system_bind"), "{hint}");
}
