//! proptest strategies for whole profiles: structured values rendered to TOML text, plus the
//! caller's environment (`AGENTC_*` overrides), the agent arguments and the virtual host paths
//! the profile's sources live at.
//!
//! A [`ProfileCase`] is meant to go through `agentc_policy::load` and `resolve` with
//! [`ProfileCase::inputs`] and the [`VirtualSources`] probe: every host source it names exists in
//! [`VirtualSources`] (files under [`VIRTUAL_FILES`], directories under [`VIRTUAL_DIRS`]), so
//! resolving never depends on the machine. The values aim at what is hard for the two
//! backends: path components with commas, quotes, `=`, colons, spaces, non-ASCII text and
//! leading dashes; environment values with `=`, quotes and unicode; commands with newlines;
//! resources and ports at their edges; every agent and every egress mode. Most generated
//! profiles are valid; the few that are not (a size above docker's exact range, a newline in
//! a one-line field) exercise the policy's refusals.

use std::collections::BTreeMap;

use agentc_policy::{AgentName, DecantSource, LaunchKind, PathKind, PathProbe, ResolveInputs};
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use proptest::sample::select;

use crate::fixtures;

/// Where generated file sources live (they all exist as files).
pub const VIRTUAL_FILES: &str = "/srv/agentc-prop/files";
/// Where generated directory sources live (they all exist as directories).
pub const VIRTUAL_DIRS: &str = "/srv/agentc-prop/dirs";
/// The Decant source profile every generated Decant launch reads.
pub const DECANT_SOURCE: &str = "src-claude";

/// Answers `File` under [`VIRTUAL_FILES`], `Directory` under [`VIRTUAL_DIRS`] and for the
/// virtual workspace, and `Missing` for everything else.
#[derive(Debug, Clone, Copy, Default)]
pub struct VirtualSources;

impl PathProbe for VirtualSources {
    fn kind(&self, path: &str) -> PathKind {
        let under = |root: &str| {
            path.strip_prefix(root)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        if under(VIRTUAL_FILES) && path != VIRTUAL_FILES {
            PathKind::File
        } else if under(VIRTUAL_DIRS) || path == fixtures::VIRTUAL_WORKSPACE {
            PathKind::Directory
        } else {
            PathKind::Missing
        }
    }
}

/// One generated profile and the invocation around it.
#[derive(Debug, Clone)]
pub struct ProfileCase {
    /// The profile's agent.
    pub agent: AgentName,
    /// The egress choice: `deny`, `allowlist`, `unrestricted` or `gateway` (allowlist or
    /// deny through an ssh gateway).
    pub egress: &'static str,
    /// The profile as TOML text.
    pub toml: String,
    /// The caller's environment (`AGENTC_*` overrides).
    pub env: BTreeMap<String, String>,
    /// Arguments after `--` on the command line.
    pub agent_args: Vec<String>,
    /// Seed mount targets, one seed launch each.
    pub seed_targets: Vec<String>,
    /// Whether Decant is enabled.
    pub decant: bool,
}

impl ProfileCase {
    /// The resolve inputs of one launch kind, with the virtual machine of
    /// [`crate::fixtures::inputs`], this case's environment and agent arguments.
    pub fn inputs(&self, kind: LaunchKind) -> ResolveInputs {
        let mut inputs = fixtures::inputs(kind);
        inputs.env = self.env.clone();
        inputs.agent_args = self.agent_args.clone();
        if kind == LaunchKind::Decant {
            inputs.decant_sources = vec![DecantSource {
                profile: DECANT_SOURCE.to_string(),
                agent: AgentName::ClaudeCode,
                home_volume: "claude-code-home-dev-src-claude".to_string(),
            }];
        }
        inputs
    }

    /// Every container launch of the case: the run (a sandbox for a custom agent), each seed
    /// and Decant when enabled, with a label for messages.
    pub fn launches(&self) -> Vec<(String, ResolveInputs)> {
        let mut launches = vec![("run".to_string(), self.inputs(LaunchKind::Run))];
        for (index, target) in self.seed_targets.iter().enumerate() {
            let mut seed = self.inputs(LaunchKind::Seed);
            seed.seed_target = Some(target.clone());
            launches.push((format!("seed-{index}"), seed));
        }
        if self.decant {
            launches.push(("decant".to_string(), self.inputs(LaunchKind::Decant)));
        }
        launches
    }
}

/// A TOML basic string: quoted, with `\`, `"` and control characters escaped.
pub fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn toml_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| toml_string(item)).collect();
    format!("[{}]", quoted.join(", "))
}

/// One path component that is hard to carry: commas, quotes, `=`, colons, spaces, unicode,
/// `$`, backslashes, and possibly a leading dash. Never `.`/`..`, `/`, blank edges or
/// control characters.
pub fn path_component() -> impl Strategy<Value = String> {
    prop_oneof![
        "-?[a-zA-Z0-9,\"'=: üé日本$`\\\\#_.~-]{1,10}",
        Just("-x,y=z:\"q\" ü".to_string()),
        Just("a b,c=d:e".to_string()),
        Just("--mount".to_string()),
    ]
    .prop_map(|text| text.trim().to_string())
    .prop_filter("a usable path component", |text| {
        !text.is_empty() && text != "." && text != ".."
    })
}

/// A value a profile may put in a one-line environment value: `=`, quotes, unicode, spaces,
/// `$`, and rarely a newline (which the policy refuses for one-line fields).
pub fn env_value() -> impl Strategy<Value = String> {
    prop_oneof![
        20 => "[a-zA-Z0-9=,:;'\"$`\\\\ üé✓日_./-]{1,16}",
        2 => Just("a=b=c".to_string()),
        2 => Just("--not-a-flag".to_string()),
        1 => Just("line one\nline two".to_string()),
    ]
    .prop_filter("not blank", |text| !text.trim().is_empty())
}

/// A value without whitespace (a token such as `gateway_user` or a `no_proxy` entry).
pub fn token_value() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9=,:;'\"$`ü✓_.-]{1,12}"
}

/// Arbitrary argument text: newlines, `=`, quotes, leading dashes, unicode, empty.
pub fn argument() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9=,:;'\"$`\\\\ \n\tüé✓_./-]{0,16}",
        Just("-".to_string()),
        Just("--".to_string()),
        Just("--rm".to_string()),
        Just("x=y\nz".to_string()),
    ]
}

/// A size at its edges: docker's minimum, the largest exact float64 integer and just above,
/// and ordinary sizes in every unit.
fn size(minimum: u64) -> impl Strategy<Value = String> {
    let exact_max = (1u64 << 53) - 1;
    prop_oneof![
        4 => Just(format!("{minimum}")),
        4 => Just(if minimum == 1 { "1b".to_string() } else { "6m".to_string() }),
        4 => Just(exact_max.to_string()),
        4 => Just("7p".to_string()),
        4 => Just("4g".to_string()),
        4 => Just("1.5g".to_string()),
        4 => Just("512 MiB".to_string()),
        8 => (minimum..=exact_max).prop_map(|bytes| bytes.to_string()),
        // Beyond docker's exact range: the policy refuses it.
        1 => Just((1u64 << 53).to_string()),
    ]
}

/// `cpus` in all three TOML spellings, at the edges 0.01 (docker's minimum), 0.010000001 (the
/// finest step above it) and 1024.
fn cpus() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0.01".to_string()),
        Just("\"0.010000001\"".to_string()),
        Just("1024".to_string()),
        Just("\"1024\"".to_string()),
        Just("1024.0".to_string()),
        (1i64..=1024).prop_map(|n| n.to_string()),
        (10_000_000u64..=1024 * 1_000_000_000)
            .prop_map(|nano| toml_string(&agentc_policy::format_cpus(nano))),
    ]
}

fn pids() -> impl Strategy<Value = i64> {
    prop_oneof![Just(1i64), Just(4_194_304i64), 1i64..=4_194_304]
}

/// A published port entry in its four spellings.
fn port() -> impl Strategy<Value = (u16, &'static str, String)> {
    (
        prop_oneof![Just(1u16), Just(65535u16), 1u16..=65535],
        select(vec!["number", "text", "tcp", "udp"]),
    )
        .prop_map(|(port, spelling)| match spelling {
            "number" => (port, "tcp", port.to_string()),
            "text" => (port, "tcp", toml_string(&port.to_string())),
            "tcp" => (port, "tcp", toml_string(&format!("{port}/tcp"))),
            _ => (port, "udp", toml_string(&format!("{port}/udp"))),
        })
}

/// A mount: kind, source components, target component, read-only.
#[derive(Debug, Clone)]
struct MountChoice {
    kind: &'static str,
    source: Vec<String>,
    target: String,
    read_only: bool,
    replace: bool,
}

fn mount_choice() -> impl Strategy<Value = MountChoice> {
    (
        select(vec!["bind-file", "bind-dir", "directory", "seed"]),
        vec(path_component(), 1..3),
        path_component(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(kind, source, target, read_only, replace)| MountChoice {
            kind,
            source,
            target,
            read_only,
            replace,
        })
}

/// Everything about one profile, before it is written as TOML.
#[derive(Debug, Clone)]
struct Choices {
    agent: AgentName,
    egress: &'static str,
    gateway_deny: bool,
    hosts: Vec<String>,
    gateway_user: Option<String>,
    gateway_port: u16,
    gateway_files: (String, String),
    provider: Option<(String, Option<String>, bool)>,
    proxy: Option<(Vec<String>, bool)>,
    langfuse: Option<(Option<String>, Option<String>)>,
    decant: Option<u16>,
    mounts: Vec<MountChoice>,
    memory: Option<String>,
    shm_size: Option<String>,
    cpus: Option<String>,
    pids: Option<i64>,
    init: bool,
    network_name: Option<String>,
    host_gateway: bool,
    publish: Vec<(u16, &'static str, String)>,
    capabilities: Vec<&'static str>,
    fuse: bool,
    read_only_root: bool,
    logging: Option<(String, Option<i64>)>,
    custom: (String, Option<String>, Vec<String>, Option<&'static str>),
    env: BTreeMap<String, String>,
    agent_args: Vec<String>,
}

fn overrides() -> impl Strategy<Value = BTreeMap<String, String>> {
    btree_map(
        select(vec![
            "AGENTC_MEM_LIMIT",
            "AGENTC_SHM_SIZE",
            "AGENTC_CPUS",
            "AGENTC_PIDS_LIMIT",
            "AGENTC_LOG_MAX_SIZE",
        ]),
        select(vec![
            "off",
            "6m",
            "1",
            "1024",
            "0.000000001",
            "9007199254740991",
            "8p",
        ]),
        0..3,
    )
    .prop_map(|map| {
        map.into_iter()
            .filter(|(name, value)| match *name {
                // Each variable gets only the values its grammar knows.
                // `8p` (2^53 bytes) is beyond docker's exact range: both backends refuse it.
                "AGENTC_MEM_LIMIT" => ["off", "6m", "9007199254740991", "8p"].contains(value),
                "AGENTC_SHM_SIZE" => ["off", "1", "9007199254740991", "8p"].contains(value),
                "AGENTC_CPUS" => ["off", "1024", "0.000000001"].contains(value),
                "AGENTC_PIDS_LIMIT" => ["off", "1", "1024"].contains(value),
                _ => ["off", "6m", "1024"].contains(value),
            })
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    })
}

fn choices() -> impl Strategy<Value = Choices> {
    let agent = select(vec![
        AgentName::ClaudeCode,
        AgentName::Opencode,
        AgentName::Codex,
        AgentName::Hermes,
        AgentName::Custom,
    ]);
    let egress = (
        select(vec!["deny", "allowlist", "unrestricted", "gateway"]),
        any::<bool>(),
        vec("[a-z][a-z0-9-]{0,8}\\.example", 0..3),
        option::of(token_value()),
        prop_oneof![Just(1u16), Just(22u16), Just(65535u16)],
        (path_component(), path_component()),
    );
    let integrations = (
        option::of((
            select(vec!["anthropic", "openai", "custom"]).prop_map(str::to_string),
            option::of(env_value()),
            any::<bool>(),
        )),
        option::of((vec(token_value(), 0..3), any::<bool>())),
        option::of((option::of(env_value()), option::of(env_value()))),
        option::of(prop_oneof![Just(1u16), Just(8787u16), Just(65535u16)]),
    );
    let resources = (
        option::of(size(6 * 1024 * 1024)),
        option::of(size(1)),
        option::of(cpus()),
        option::of(pids()),
        any::<bool>(),
    );
    let network = (
        option::of("[a-zA-Z0-9][a-zA-Z0-9_.-]{0,12}"),
        any::<bool>(),
        vec(port(), 0..4),
        proptest::sample::subsequence(
            vec!["NET_ADMIN", "cap_sys_ptrace", "CHOWN", "SYS_ADMIN"],
            0..3,
        ),
        any::<bool>(),
        any::<bool>(),
        option::of((
            select(vec!["off", "1k", "50m", "1.5g"]).prop_map(str::to_string),
            option::of(1i64..=100),
        )),
    );
    let custom = (
        select(vec![
            "busybox",
            "registry.example:5000/team/sandbox:1.2",
            "ghcr.io/a-b/c_d:tag-1",
            "localhost/x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ])
        .prop_map(str::to_string),
        option::of(prop_oneof![
            Just("/bin/sh".to_string()),
            Just("/usr/bin/env -S x=y".to_string()),
            Just("-dash entry\nline".to_string()),
        ]),
        vec(argument(), 0..4),
        option::of(select(vec!["1000:1000", "root", "0", "dev:staff"])),
    );
    (
        agent,
        egress,
        integrations,
        vec(mount_choice(), 0..4),
        resources,
        network,
        custom,
        overrides(),
        vec(argument(), 0..3),
    )
        .prop_map(
            |(
                agent,
                (egress, gateway_deny, hosts, gateway_user, gateway_port, gateway_files),
                (provider, proxy, langfuse, decant),
                mounts,
                (memory, shm_size, cpus, pids, init),
                (network_name, host_gateway, publish, capabilities, fuse, read_only_root, logging),
                custom,
                env,
                agent_args,
            )| Choices {
                agent,
                egress,
                gateway_deny,
                hosts,
                gateway_user,
                gateway_port,
                gateway_files,
                provider,
                proxy,
                langfuse,
                decant,
                mounts,
                memory,
                shm_size,
                cpus,
                pids,
                init,
                network_name,
                host_gateway,
                publish,
                capabilities,
                fuse,
                read_only_root,
                logging,
                custom,
                env,
                agent_args,
            },
        )
}

/// The home directory of an agent preset (seed targets live under it).
fn agent_home(agent: AgentName) -> &'static str {
    agentc_policy::presets::preset(agent)
        .map(|preset| preset.home_path)
        .unwrap_or("/home/agent")
}

/// Writes the choices as a profile. Combinations the policy forbids for other reasons than
/// the values under test (custom agents with agent features, Langfuse without egress) are
/// left out, so that most generated profiles are valid.
fn render(index: u64, choices: Choices) -> ProfileCase {
    let Choices {
        agent,
        egress,
        gateway_deny,
        hosts,
        gateway_user,
        gateway_port,
        gateway_files,
        provider,
        proxy,
        langfuse,
        decant,
        mounts,
        memory,
        shm_size,
        cpus,
        pids,
        init,
        network_name,
        host_gateway,
        publish,
        capabilities,
        fuse,
        read_only_root,
        logging,
        custom,
        env,
        agent_args,
    } = choices;
    let custom_agent = agent == AgentName::Custom;
    let mut toml = format!("name = \"prop-{index}\"\nagent = \"{}\"\n", agent.as_str());
    let mut seed_targets = Vec::new();

    // Agent features (never for custom).
    let langfuse_host = "langfuse.example";
    let langfuse_on =
        !custom_agent && agent != AgentName::Hermes && langfuse.is_some() && egress != "deny";
    let decant_on = !custom_agent
        && matches!(agent, AgentName::ClaudeCode | AgentName::Codex)
        && decant.is_some();
    if !custom_agent {
        if let Some((kind, model, key)) = &provider {
            toml.push_str(&format!("\n[provider]\nkind = {}\n", toml_string(kind)));
            if let Some(model) = model {
                toml.push_str(&format!("model = {}\n", toml_string(model)));
            }
            if *key {
                toml.push_str("api_key_env = \"PROP_API_KEY\"\n");
                toml.push_str("endpoint = \"https://llm.example:8443/v1\"\n");
            }
        }
    }
    if let Some((no_proxy, ca)) = &proxy {
        toml.push_str("\n[proxy]\nhttp = \"http://proxy.example:3128\"\n");
        toml.push_str("https = \"http://proxy.example:3128\"\n");
        toml.push_str(&format!("no_proxy = {}\n", toml_list(no_proxy)));
        if *ca {
            toml.push_str(&format!(
                "ca_file = {}\n",
                toml_string(&format!("{VIRTUAL_FILES}/ca/{}.pem", gateway_files.0))
            ));
        }
    }
    let mode = match egress {
        "gateway" if gateway_deny => "deny",
        "gateway" => "allowlist",
        other => other,
    };
    toml.push_str(&format!("\n[egress]\nmode = \"{mode}\"\n"));
    let mut hosts = if mode == "unrestricted" {
        Vec::new()
    } else {
        hosts
    };
    if langfuse_on && mode == "allowlist" && egress != "gateway" {
        hosts.push(langfuse_host.to_string());
    }
    if !hosts.is_empty() {
        toml.push_str(&format!("hosts = {}\n", toml_list(&hosts)));
        // An allowlist with hosts is enforced outside (agentc's egress proxy) unless the
        // profile asks for what only the image's firewall allows: an upstream proxy, a named
        // network, the host gateway, published ports, or a host the proxy cannot name.
        let proxy_names_all = hosts
            .iter()
            .all(|host| host.split('.').all(|label| !label.ends_with('-')));
        let outside_fits = proxy.is_none()
            && network_name.is_none()
            && !host_gateway
            && publish.is_empty()
            && !env.contains_key("AGENTC_NETWORK")
            && proxy_names_all;
        if mode == "allowlist" && egress != "gateway" && !outside_fits {
            toml.push_str("enforce = \"image\"\n");
        }
    }
    if egress == "gateway" {
        toml.push_str(&format!(
            "gateway_host = \"gw.example\"\ngateway_port = {gateway_port}\n"
        ));
        if let Some(user) = &gateway_user {
            toml.push_str(&format!("gateway_user = {}\n", toml_string(user)));
        }
        toml.push_str("gateway_bootstrap_allow = [\"192.0.2.10\", \"2001:db8::/32\"]\n");
        toml.push_str(&format!(
            "gateway_key_file = {}\ngateway_known_hosts_file = {}\n",
            toml_string(&format!("{VIRTUAL_FILES}/keys/{}", gateway_files.0)),
            toml_string(&format!("{VIRTUAL_FILES}/keys/{}", gateway_files.1)),
        ));
    }
    if langfuse_on {
        let (environment, user_id) = langfuse.clone().unwrap_or_default();
        toml.push_str(&format!(
            "\n[langfuse]\nenabled = true\nbase_url = \"https://{langfuse_host}\"\n"
        ));
        if let Some(environment) = environment {
            toml.push_str(&format!("environment = {}\n", toml_string(&environment)));
        }
        if let Some(user_id) = user_id {
            toml.push_str(&format!("user_id = {}\n", toml_string(&user_id)));
        }
    }
    if decant_on {
        toml.push_str(&format!(
            "\n[decant]\nenabled = true\nsource_profiles = [\"{DECANT_SOURCE}\"]\nport = {}\n",
            decant.unwrap_or(8787)
        ));
    }
    for (position, mount) in mounts.iter().enumerate() {
        let seed = mount.kind == "seed" && !custom_agent;
        let (root, kind) = match mount.kind {
            "bind-file" => (VIRTUAL_FILES, "bind"),
            "bind-dir" => (VIRTUAL_DIRS, "bind"),
            "directory" => (VIRTUAL_DIRS, "directory"),
            _ if seed => (VIRTUAL_FILES, "seed"),
            _ => (VIRTUAL_FILES, "bind"),
        };
        let source = format!("{root}/{}", mount.source.join("/"));
        let target = if seed {
            format!("{}/s{position}-{}", agent_home(agent), mount.target)
        } else {
            format!("/mnt/m{position}/{}", mount.target)
        };
        toml.push_str(&format!(
            "\n[[mounts]]\ntype = \"{kind}\"\nsource = {}\ntarget = {}\nread_only = {}\n",
            toml_string(&source),
            toml_string(&target),
            mount.read_only
        ));
        if seed {
            seed_targets.push(target);
            if mount.replace {
                toml.push_str("on_conflict = \"replace\"\n");
            }
        }
    }
    if custom_agent {
        let (reference, entrypoint, command, user) = &custom;
        toml.push_str(&format!("\n[image]\nref = {}\n", toml_string(reference)));
        if let Some(entrypoint) = entrypoint {
            toml.push_str(&format!("entrypoint = {}\n", toml_string(entrypoint)));
        }
        if !command.is_empty() {
            toml.push_str(&format!("command = {}\n", toml_list(command)));
        }
        if let Some(user) = user {
            toml.push_str(&format!("user = \"{user}\"\n"));
        }
        toml.push_str(&format!("init = {init}\n"));
    } else if init {
        toml.push_str("\n[image]\ninit = true\n");
    }
    let mut resources = String::new();
    if let Some(memory) = &memory {
        resources.push_str(&format!("memory = {}\n", toml_string(memory)));
    }
    if let Some(shm) = &shm_size {
        resources.push_str(&format!("shm_size = {}\n", toml_string(shm)));
    }
    if let Some(cpus) = &cpus {
        resources.push_str(&format!("cpus = {cpus}\n"));
    }
    if let Some(pids) = pids {
        resources.push_str(&format!("pids_limit = {pids}\n"));
    }
    if !resources.is_empty() {
        toml.push_str(&format!("\n[resources]\n{resources}"));
    }
    if let Some((max_size, max_file)) = &logging {
        toml.push_str(&format!("\n[logging]\nmax_size = \"{max_size}\"\n"));
        if let Some(files) = max_file.filter(|_| max_size != "off") {
            toml.push_str(&format!("max_file = {files}\n"));
        }
    }
    // A named network contradicts deny without a gateway and excludes publishing.
    let no_network = mode == "deny" && egress != "gateway";
    let network_name = network_name.filter(|name| {
        let mode_name = ["host", "none", "default"].contains(&name.to_ascii_lowercase().as_str());
        !no_network && !mode_name
    });
    let mut seen = Vec::new();
    let publish: Vec<String> = if network_name.is_some() {
        Vec::new()
    } else {
        publish
            .into_iter()
            .filter(|(port, protocol, _)| {
                let fresh = !seen.contains(&(*port, *protocol));
                seen.push((*port, *protocol));
                fresh
            })
            .map(|(_, _, text)| text)
            .collect()
    };
    // Without a gateway, deny means no network: no host gateway entry, no published ports.
    let host_gateway = host_gateway && !no_network;
    let publish = if no_network { Vec::new() } else { publish };
    toml.push_str(&format!("\n[network]\nhost_gateway = {host_gateway}\n"));
    if let Some(name) = &network_name {
        toml.push_str(&format!("name = {}\n", toml_string(name)));
    }
    if !publish.is_empty() {
        toml.push_str(&format!("publish = [{}]\n", publish.join(", ")));
    }
    let capabilities: Vec<String> = capabilities.iter().map(|c| c.to_string()).collect();
    toml.push_str(&format!(
        "\n[security]\nadd_capabilities = {}\nfuse = {fuse}\nread_only_root = {read_only_root}\n",
        toml_list(&capabilities)
    ));
    ProfileCase {
        agent,
        egress,
        toml,
        env,
        agent_args,
        seed_targets,
        decant: decant_on,
    }
}

/// Generated profiles with their invocation. Profile names are `prop-N`.
pub fn profile_case() -> impl Strategy<Value = ProfileCase> {
    (0u64..1_000_000, choices()).prop_map(|(index, choices)| render(index, choices))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_strings_round_trip_through_the_loader() {
        for text in [
            "plain",
            "a\"b\\c",
            "line\nline\r\t",
            "ü✓ \u{7}",
            "-x,y=z:\"q\" ü",
        ] {
            let document = format!(
                "name = \"p\"\nagent = \"custom\"\n[image]\nref = \"busybox\"\ncommand = {}\n",
                toml_list(&[text.to_string()])
            );
            let loaded = agentc_policy::load("p.toml", &document).expect("valid profile");
            assert_eq!(loaded.profile.image.command, Some(vec![text.to_string()]));
        }
    }

    #[test]
    fn virtual_sources_answer_by_root() {
        assert_eq!(
            VirtualSources.kind("/srv/agentc-prop/files/a,b"),
            PathKind::File
        );
        assert_eq!(
            VirtualSources.kind("/srv/agentc-prop/dirs/x/y"),
            PathKind::Directory
        );
        assert_eq!(
            VirtualSources.kind("/srv/agentc-prop/filesx"),
            PathKind::Missing
        );
        assert_eq!(VirtualSources.kind("/etc/passwd"), PathKind::Missing);
        assert_eq!(
            VirtualSources.kind(fixtures::VIRTUAL_WORKSPACE),
            PathKind::Directory
        );
    }
}
