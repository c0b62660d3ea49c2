//! `agentc explain`: a launch spec in words, each value with where it came from.
//!
//! The text is stable (it is snapshot-tested) and plain: a header naming the profile, the
//! kind and the image; one section per concern (process, filesystem, network, security,
//! resources, logging, environment); then what widens the sandbox and what agentc does beyond
//! the systems it generalizes; last the security report of [`mod@crate::findings`], each finding
//! with its severity, code, field and hint. A secret is only ever named, never shown.

use crate::load::LoadedProfile;
use crate::profile::{AgentName, MountType};
use crate::resolve::{format_size, SUPERSEDED_NETWORK_KEY};
use crate::spec::{
    Action, AppArmor, BuildSpec, ContainerSpec, EnvValue, HostTarget, LaunchKind, LaunchSpec,
    MountSource, Network, Origin,
};
use crate::units::format_cpus;

/// Human-readable explanation of a spec: every value with where it came from.
pub fn explain(profile: &LoadedProfile, spec: &LaunchSpec) -> String {
    let mut out = Explainer {
        spec,
        profile,
        text: String::new(),
    };
    out.header();
    match &spec.action {
        Action::Container(container) => out.container(container),
        Action::Build(build) => out.build(build),
    }
    // The security report ends every explanation (see `crate::findings`).
    out.text.push('\n');
    out.text
        .push_str(&crate::findings::report_text(&crate::findings::findings(
            profile, spec,
        )));
    out.text
}

/// An origin in words: `default`, `preset claude-code`, `profile line 12 (resources.memory)`,
/// `env AGENTC_MEM_LIMIT`, `invocation --workspace`.
pub fn origin_words(origin: &Origin) -> String {
    match origin {
        Origin::Default => "default".to_string(),
        Origin::Preset { agent } => format!("preset {agent}"),
        Origin::Profile {
            field,
            line: Some(line),
            ..
        } => format!("profile line {line} ({field})"),
        Origin::Profile { field, .. } => format!("profile ({field})"),
        Origin::Environment { variable } => format!("env {variable}"),
        Origin::Invocation { input } => format!("invocation {input}"),
    }
}

struct Explainer<'a> {
    spec: &'a LaunchSpec,
    profile: &'a LoadedProfile,
    text: String,
}

impl Explainer<'_> {
    fn origin(&self, key: &str) -> Option<&Origin> {
        self.spec.origins.get(key)
    }

    /// ` [origin]` for a key, or nothing when the spec records none.
    fn from(&self, key: &str) -> String {
        match self.origin(key) {
            Some(origin) => format!("  [{}]", origin_words(origin)),
            None => String::new(),
        }
    }

    /// Appends one line. Control characters in it (a newline or an escape sequence inside a
    /// command argument or an environment value) are shown escaped, so that a value can
    /// neither forge a line of the explanation nor drive the terminal.
    fn line(&mut self, text: impl AsRef<str>) {
        for c in text.as_ref().chars() {
            if c.is_control() && c != '\t' {
                self.text.extend(c.escape_default());
            } else {
                self.text.push(c);
            }
        }
        self.text.push('\n');
    }

    fn item(&mut self, label: &str, value: impl AsRef<str>, key: &str) {
        let from = self.from(key);
        self.line(format!("  {label}: {}{from}", value.as_ref()));
    }

    fn section(&mut self, title: &str) {
        self.line("");
        self.line(title);
    }

    fn header(&mut self) {
        let spec = self.spec;
        let profile = &self.profile.profile;
        self.line(format!(
            "profile: {} ({}, agent {})",
            spec.profile,
            self.profile.file,
            profile.agent.as_str()
        ));
        self.line(format!("kind: {}", spec.kind.as_str()));
        match &spec.action {
            Action::Container(container) => {
                let from = self.from("image");
                self.line(format!("image: {}{from}", container.image));
            }
            Action::Build(build) => {
                let from = self.from("build.tag");
                self.line(format!("image: {} (built){from}", build.tag));
            }
        }
    }

    fn build(&mut self, build: &BuildSpec) {
        self.section("build");
        self.item("context", &build.context, "build.context");
        let dockerfile = build.dockerfile.as_deref().unwrap_or("Dockerfile");
        self.item("dockerfile", dockerfile, "build.dockerfile");
        for (name, value) in &build.build_args {
            self.item(
                &format!("build arg {name}"),
                value,
                &format!("build.build_args.{name}"),
            );
        }
        for (name, value) in &build.named_contexts {
            self.line(format!("  named context {name}: {value}"));
        }
        self.labels(&build.labels);
    }

    fn labels(&mut self, labels: &std::collections::BTreeMap<String, String>) {
        for (name, value) in labels {
            self.item(&format!("label {name}"), value, &format!("labels.{name}"));
        }
    }

    fn container(&mut self, container: &ContainerSpec) {
        self.process(container);
        self.filesystem(container);
        self.network(container);
        self.security(container);
        self.resources(container);
        self.logging(container);
        self.environment(container);
        self.widens(container);
        self.beyond_the_seeds(container);
    }

    fn process(&mut self, c: &ContainerSpec) {
        self.section("process");
        match &c.name {
            Some(name) => self.item("name", name, "name"),
            None => self.line("  name: chosen by docker"),
        }
        match &c.entrypoint {
            Some(entrypoint) => self.item("entrypoint", entrypoint, "entrypoint"),
            None => self.line("  entrypoint: the image's"),
        }
        if c.init {
            self.item(
                "PID 1",
                "docker's init (reaps zombies, passes signals on)",
                "init",
            );
        } else {
            self.line("  PID 1: the entrypoint, no init");
        }
        if c.command.is_empty() {
            self.line("  command: the image's");
        } else {
            let mut keys: Vec<&str> = Vec::new();
            for key in ["command", "command.provider", "command.args"] {
                if self.origin(key).is_some() {
                    keys.push(key);
                }
            }
            let origins: Vec<String> = keys
                .iter()
                .filter_map(|key| self.origin(key))
                .map(origin_words)
                .collect();
            let command = if c.command.len() == 2 && c.command[0] == "-ceu" {
                // The seed script is long; name it instead of printing it.
                "-ceu <seed copy script>".to_string()
            } else {
                c.command.join(" ")
            };
            let from = if origins.is_empty() {
                String::new()
            } else {
                format!("  [{}]", origins.join("; "))
            };
            self.line(format!("  command: {command}{from}"));
        }
        match &c.user {
            Some(user) => self.item("user", user, "user"),
            None => self.line("  user: the image's"),
        }
        match &c.working_dir {
            Some(dir) => self.item("working directory", dir, "working_dir"),
            None => self.line("  working directory: the image's"),
        }
        let mode = match (c.interactive, c.tty, c.detach) {
            (true, true, _) => "interactive with a terminal",
            (true, false, _) => "interactive",
            (false, _, true) => "detached",
            _ => "attached, not interactive",
        };
        let key = if c.detach { "detach" } else { "interactive" };
        self.item("mode", mode, key);
        let removal = if c.auto_remove {
            "removed on exit"
        } else {
            "kept until removed"
        };
        self.item("lifetime", removal, "auto_remove");
    }

    fn filesystem(&mut self, c: &ContainerSpec) {
        self.section("filesystem");
        let root = if c.read_only_root {
            "read-only"
        } else {
            "writable"
        };
        self.item("root filesystem", root, "read_only_root");
        for tmpfs in &c.tmpfs {
            let exec = if tmpfs.exec { "exec" } else { "noexec" };
            self.item(
                &format!("tmpfs {}", tmpfs.target),
                exec,
                &format!("tmpfs.{}", tmpfs.target),
            );
        }
        for mount in &c.mounts {
            let access = if mount.read_only {
                "read-only"
            } else {
                "writable"
            };
            let source = match &mount.source {
                MountSource::Bind { path } => format!("bind {path}"),
                MountSource::Volume {
                    name,
                    subpath: Some(subpath),
                } => format!("volume {name} (subpath {subpath})"),
                MountSource::Volume {
                    name,
                    subpath: None,
                } => format!("volume {name}"),
            };
            self.item(
                &mount.target,
                format!("{source}, {access}"),
                &format!("mounts.{}", mount.target),
            );
        }
        if self.spec.kind != LaunchKind::Run {
            return;
        }
        let seeds: Vec<(usize, String, String)> = self
            .seed_mounts()
            .into_iter()
            .map(|(field, source, target)| {
                let position = self.profile.position(&field).map(|p| p.0);
                (
                    position.unwrap_or(0),
                    field,
                    format!("{target} from {source}"),
                )
            })
            .collect();
        if !seeds.is_empty() {
            self.line("  seeds (not mounted; copied once into the home by `agentc seed --seed-target TARGET`):");
            for (line, field, text) in seeds {
                let at = if line > 0 {
                    format!("profile line {line} ({field})")
                } else {
                    format!("profile ({field})")
                };
                self.line(format!("    {text}  [{at}]"));
            }
        }
    }

    fn seed_mounts(&self) -> Vec<(String, String, String)> {
        let profile = &self.profile.profile;
        let configuration = profile
            .configuration_mounts
            .iter()
            .enumerate()
            .map(|(index, mount)| (format!("configuration_mounts[{index}]"), mount));
        let mounts = profile
            .mounts
            .iter()
            .enumerate()
            .map(|(index, mount)| (format!("mounts[{index}]"), mount));
        configuration
            .chain(mounts)
            .filter(|(_, mount)| mount.kind == MountType::Seed)
            .map(|(field, mount)| (field, mount.source.clone(), mount.target.clone()))
            .collect()
    }

    fn network(&mut self, c: &ContainerSpec) {
        self.section("network");
        let network = match &c.network {
            Network::Default => "the default bridge".to_string(),
            Network::None => "none (loopback only)".to_string(),
            Network::Named { name } => format!("{name} (named)"),
        };
        self.item("network", network, "network");
        if let Some(origin) = self.origin(SUPERSEDED_NETWORK_KEY) {
            let words = origin_words(origin);
            self.line(format!(
                "  not joined: the network from {words}, because egress mode deny allows none"
            ));
        }
        for host in &c.extra_hosts {
            let target = match &host.target {
                HostTarget::HostGateway => "the host gateway".to_string(),
                HostTarget::Ip { address } => address.to_string(),
            };
            self.item(
                &format!("host {}", host.host),
                target,
                &format!("extra_hosts.{}", host.host),
            );
        }
        for port in &c.ports {
            let host_port = match port.host_port {
                Some(port) => format!("port {port}"),
                None => "a free port the daemon picks".to_string(),
            };
            let key = format!("ports.{}/{}", port.container_port, port.protocol.as_str());
            self.item(
                &format!("port {}/{}", port.container_port, port.protocol.as_str()),
                format!("published on {}, {host_port}", port.host_ip),
                &key,
            );
        }
        if c.ports.is_empty() && self.origin("ports").is_some() {
            let from = self.from("ports");
            self.line(format!(
                "  ports: none published; on a named network the container is reached by name{from}"
            ));
        }
        if matches!(self.spec.kind, LaunchKind::Run | LaunchKind::Sandbox) {
            self.line(format!("  egress: {}", self.egress_words()));
        }
    }

    fn egress_words(&self) -> String {
        let profile = &self.profile.profile;
        let egress = &profile.egress;
        let field = match self.profile.position("egress.mode") {
            Some((line, _)) => format!("profile line {line} (egress.mode)"),
            None => "default".to_string(),
        };
        if profile.agent == AgentName::Custom {
            return match egress.mode.as_str() {
                "deny" => format!("deny, enforced by having no network  [{field}]"),
                _ => format!(
                    "{}, not enforced: a custom image has no egress firewall  [{field}]",
                    egress.mode
                ),
            };
        }
        if let Some(host) = &egress.gateway_host {
            return format!(
                "through the SSH gateway {host}, enforced by the image's firewall  [{field}]"
            );
        }
        match egress.mode.as_str() {
            "deny" => format!("deny, enforced by having no network  [{field}]"),
            "unrestricted" => format!("unrestricted  [{field}]"),
            _ if egress.hosts.is_empty() => {
                format!("allowlist with no hosts, enforced by the image's firewall  [{field}]")
            }
            _ => format!(
                "allowlist {}, enforced by the image's firewall  [{field}]",
                egress.hosts.join(", ")
            ),
        }
    }

    fn security(&mut self, c: &ContainerSpec) {
        self.section("security");
        let nnp = if c.no_new_privileges { "on" } else { "off" };
        self.item("no-new-privileges", nnp, "no_new_privileges");
        let drop = if c.cap_drop_all {
            "drop ALL"
        } else {
            "docker's default set"
        };
        self.item("capabilities", drop, "cap_drop_all");
        for capability in &c.cap_add {
            self.item(
                &format!("add {capability}"),
                "yes",
                &format!("cap_add.{capability}"),
            );
        }
        match c.apparmor {
            Some(AppArmor::Unconfined) => self.item("apparmor", "unconfined", "apparmor"),
            None => self.line("  apparmor: docker's default profile"),
        }
        for device in &c.devices {
            self.item(
                &format!("device {}", device.host_path),
                format!("{} ({})", device.container_path, device.permissions),
                &format!("devices.{}", device.host_path),
            );
        }
    }

    fn resources(&mut self, c: &ContainerSpec) {
        self.section("resources");
        let r = &c.resources;
        let memory = match (r.memory_bytes, r.memory_swap_bytes) {
            (Some(memory), Some(swap)) if memory == swap => {
                format!("{}, no swap", format_size(memory))
            }
            (Some(memory), _) => format_size(memory),
            (None, _) => "unlimited".to_string(),
        };
        self.item("memory", memory, "resources.memory_bytes");
        let shm = r
            .shm_size_bytes
            .map(format_size)
            .unwrap_or_else(|| "docker's default (64m)".to_string());
        self.item("shm size", shm, "resources.shm_size_bytes");
        let cpus = r
            .nano_cpus
            .map(format_cpus)
            .unwrap_or_else(|| "unlimited".to_string());
        self.item("cpus", cpus, "resources.nano_cpus");
        let pids = r
            .pids_limit
            .map(|pids| pids.to_string())
            .unwrap_or_else(|| "unlimited".to_string());
        self.item("processes", pids, "resources.pids_limit");
    }

    fn logging(&mut self, c: &ContainerSpec) {
        self.section("logging");
        match &c.log {
            None => self.item("driver", "docker's default, unbounded", "log"),
            Some(log) => {
                self.item("driver", &log.driver, "log");
                for (name, value) in &log.options {
                    self.item(name, value, &format!("log.{name}"));
                }
            }
        }
    }

    fn environment(&mut self, c: &ContainerSpec) {
        self.section("environment");
        if c.env.is_empty() {
            self.line("  (none)");
        }
        for var in &c.env {
            let from = self.from(&format!("env.{}", var.name));
            match &var.value {
                EnvValue::Literal { value } => {
                    self.line(format!("  {}={value}{from}", var.name));
                }
                EnvValue::Secret { required } => {
                    let need = if *required { "" } else { ", optional" };
                    self.line(format!(
                        "  {} (secret, passed through from your environment{need}){from}",
                        var.name
                    ));
                }
            }
        }
        self.section("labels");
        self.labels(&c.labels);
    }

    fn widens(&mut self, c: &ContainerSpec) {
        let mut items: Vec<String> = Vec::new();
        let profile = &self.profile.profile;
        let words = |key: &str| {
            self.origin(key)
                .map(origin_words)
                .unwrap_or_else(|| "default".to_string())
        };
        if matches!(self.spec.kind, LaunchKind::Run | LaunchKind::Sandbox) {
            if profile.egress.mode == "unrestricted" {
                items.push(format!(
                    "unrestricted egress  [{}]",
                    at(self.profile, "egress.mode")
                ));
            }
            for (key, origin) in &self.spec.origins {
                let Some(capability) = key.strip_prefix("cap_add.") else {
                    continue;
                };
                if let Origin::Profile { field, .. } = origin {
                    if field.starts_with("security.add_capabilities") {
                        items.push(format!(
                            "capability {capability}  [{}]",
                            origin_words(origin)
                        ));
                    }
                }
            }
            if profile.security.fuse {
                items.push(format!(
                    "FUSE: /dev/fuse, SYS_ADMIN and no AppArmor confinement  [{}]",
                    words("apparmor")
                ));
            }
            if !c.read_only_root {
                items.push(format!(
                    "writable root filesystem  [{}]",
                    words("read_only_root")
                ));
            }
            for host in &c.extra_hosts {
                items.push(format!(
                    "{} reaches the host  [{}]",
                    host.host,
                    words(&format!("extra_hosts.{}", host.host))
                ));
            }
            for port in &c.ports {
                let key = format!("ports.{}/{}", port.container_port, port.protocol.as_str());
                items.push(format!(
                    "published port {}/{} on {}  [{}]",
                    port.container_port,
                    port.protocol.as_str(),
                    port.host_ip,
                    words(&key)
                ));
            }
            if let Network::Named { name } = &c.network {
                items.push(format!(
                    "joins the named network {name}  [{}]",
                    words("network")
                ));
            }
        }
        for mount in &c.mounts {
            let key = format!("mounts.{}", mount.target);
            let explicit = matches!(self.origin(&key), Some(Origin::Profile { .. }));
            if matches!(mount.source, MountSource::Bind { .. }) && !mount.read_only && explicit {
                items.push(format!(
                    "writable bind mount {}  [{}]",
                    mount.target,
                    words(&key)
                ));
            }
        }
        if self.spec.kind == LaunchKind::Decant {
            for port in &c.ports {
                if !port.host_ip.is_loopback() {
                    items.push(format!(
                        "Decant listens on {}, beyond this machine  [{}]",
                        port.host_ip,
                        at(self.profile, "decant.bind_address")
                    ));
                }
            }
        }
        for (key, what) in [
            ("resources.memory_bytes", "memory limit"),
            ("resources.pids_limit", "process limit"),
        ] {
            let removed = match key {
                "resources.memory_bytes" => c.resources.memory_bytes.is_none(),
                _ => c.resources.pids_limit.is_none(),
            };
            if removed && self.origin(key).is_some() {
                items.push(format!("{what} removed  [{}]", words(key)));
            }
        }
        if c.log.is_none() {
            items.push(format!("log rotation off  [{}]", words("log")));
        }
        self.section("widens the sandbox");
        if items.is_empty() {
            self.line("  (nothing)");
        }
        for item in items {
            self.line(format!("  - {item}"));
        }
    }

    fn beyond_the_seeds(&mut self, c: &ContainerSpec) {
        let mut notes: Vec<String> = Vec::new();
        if matches!(self.spec.kind, LaunchKind::Run | LaunchKind::Sandbox)
            && c.network == Network::None
        {
            notes.push(
                "egress deny also removes the network, so the kernel enforces what the image's firewall promises"
                    .to_string(),
            );
        }
        let default_memory = matches!(self.origin("resources.memory_bytes"), Some(Origin::Default));
        let default_pids = matches!(self.origin("resources.pids_limit"), Some(Origin::Default));
        if default_memory {
            notes.push(format!(
                "default memory limit {} without swap; AGENTC_MEM_LIMIT=off removes it",
                format_size(crate::presets::DEFAULT_MEMORY_BYTES)
            ));
        }
        if default_pids {
            notes.push(format!(
                "default process limit {}; AGENTC_PIDS_LIMIT=off removes it",
                crate::presets::DEFAULT_PIDS_LIMIT
            ));
        }
        match self.spec.kind {
            LaunchKind::Sandbox => notes.push(
                "the sandbox is hardened: all capabilities dropped, no-new-privileges, tmpfs /tmp and /run"
                    .to_string(),
            ),
            LaunchKind::Decant => notes.push(
                "Decant is not hardened (as in agent-containers) but gets the limits and log rotation"
                    .to_string(),
            ),
            _ => {}
        }
        self.section("beyond the seeds");
        if notes.is_empty() {
            self.line("  (nothing)");
        }
        for note in notes {
            self.line(format!("  - {note}"));
        }
    }
}

/// `profile line N (field)` for a field the profile wrote, else `default`.
fn at(profile: &LoadedProfile, field: &str) -> String {
    match profile.position(field) {
        Some((line, _)) => format!("profile line {line} ({field})"),
        None => "default".to_string(),
    }
}

#[cfg(test)]
mod escaping_tests {
    use super::*;
    use crate::inputs::{Owner, PathKind, PathProbe, ResolveInputs};
    use crate::spec::LaunchKind;

    struct Everything;
    impl PathProbe for Everything {
        fn kind(&self, _: &str) -> PathKind {
            PathKind::Directory
        }
    }

    #[test]
    fn control_characters_in_values_are_escaped() {
        let text = "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"img:1\"\n\
                    command = [\"sh\", \"-c\", \"echo a\\nforged: line\\u001b[2J\"]\n";
        let loaded = crate::load::load("p.toml", text).unwrap();
        let inputs = ResolveInputs {
            kind: LaunchKind::Run,
            workspace: "/w/project".into(),
            profile_dir: "/p".into(),
            home_dir: "/home/dev".into(),
            owner: Owner {
                name: "dev".into(),
                uid: 1000,
                gid: 1000,
            },
            image: None,
            seed_target: None,
            agent_args: Vec::new(),
            env: Default::default(),
            decant_sources: Vec::new(),
        };
        let spec = crate::resolve::resolve(&loaded, &inputs, &Everything).unwrap();
        let explained = explain(&loaded, &spec);
        assert!(
            explained.contains("command: sh -c echo a\\nforged: line\\u{1b}[2J"),
            "{explained}"
        );
        assert!(!explained.lines().any(|line| line.starts_with("forged")));
        assert!(!explained.contains('\u{1b}'));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::{DecantSource, PathKind, ResolveInputs};
    use crate::load::load;
    use crate::resolve::resolve;
    use crate::resolve::tests::FakePaths;
    use std::collections::BTreeMap;

    /// resolve's virtual machine (alice's workspace), with the files these profiles point at.
    fn paths() -> FakePaths {
        crate::resolve::tests::paths(&[
            ("/home/alice/profiles/data", PathKind::Directory),
            ("/home/alice/images", PathKind::Directory),
            ("/home/alice/profiles/ca.pem", PathKind::File),
            ("/home/alice/profiles/seed.json", PathKind::File),
        ])
    }

    fn inputs(kind: LaunchKind, env: &[(&str, &str)]) -> ResolveInputs {
        ResolveInputs {
            seed_target: Some("/home/claude/.claude/settings.json".to_string()),
            agent_args: vec!["--resume".to_string()],
            env: env
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect::<BTreeMap<_, _>>(),
            decant_sources: vec![DecantSource {
                profile: "dev".to_string(),
                agent: AgentName::ClaudeCode,
                home_volume: "claude-code-home-alice-1000-dev".to_string(),
            }],
            ..crate::resolve::tests::inputs(kind)
        }
    }

    fn explained(text: &str, kind: LaunchKind, env: &[(&str, &str)]) -> String {
        let loaded = load("dev.toml", text).unwrap_or_else(|error| panic!("{error}"));
        let spec = resolve(&loaded, &inputs(kind, env), &paths())
            .unwrap_or_else(|error| panic!("{error}"));
        // The digest changes with every spec change; keep snapshots about the explanation.
        explain(&loaded, &spec).replace(&spec_digest_label(&spec), "<digest>")
    }

    fn spec_digest_label(spec: &LaunchSpec) -> String {
        crate::resolve::spec_digest(spec)
    }

    const CLAUDE: &str = r#"name = "dev"
agent = "claude-code"

[provider]
kind = "anthropic"
api_key_env = "ANTHROPIC_API_KEY"

[egress]
hosts = ["api.anthropic.com"]

[proxy]
https = "http://proxy.corp:3128"
ca_file = "ca.pem"

[resources]
memory = "6g"

[security]
add_capabilities = ["SYS_PTRACE"]

[network]
publish = [8080]

[[mounts]]
type = "directory"
source = "data"
target = "/data"
read_only = false

[[mounts]]
type = "seed"
source = "seed.json"
target = "/home/claude/.claude/settings.json"
"#;

    #[test]
    fn origins_read_as_words() {
        assert_eq!(origin_words(&Origin::Default), "default");
        assert_eq!(
            origin_words(&Origin::Preset {
                agent: "codex".into()
            }),
            "preset codex"
        );
        assert_eq!(
            origin_words(&Origin::Profile {
                field: "resources.memory".into(),
                line: Some(12),
                column: Some(10)
            }),
            "profile line 12 (resources.memory)"
        );
        assert_eq!(
            origin_words(&Origin::Environment {
                variable: "AGENTC_MEM_LIMIT".into()
            }),
            "env AGENTC_MEM_LIMIT"
        );
        assert_eq!(
            origin_words(&Origin::Invocation {
                input: "--workspace".into()
            }),
            "invocation --workspace"
        );
    }

    #[test]
    fn a_claude_code_run_explained() {
        let text = explained(CLAUDE, LaunchKind::Run, &[("AGENTC_PIDS_LIMIT", "off")]);
        assert!(text.contains("ANTHROPIC_API_KEY (secret, passed through from your environment)"));
        assert!(
            text.contains("  memory: 6g, no swap  [profile line 16 (resources.memory)]"),
            "{text}"
        );
        assert!(
            text.contains("  - process limit removed  [env AGENTC_PIDS_LIMIT]"),
            "{text}"
        );
        assert!(
            text.contains(
                "  - capability SYS_PTRACE  [profile line 19 (security.add_capabilities[0])]"
            ),
            "{text}"
        );
        assert!(
            text.contains("  - writable bind mount /data  [profile line 24 (mounts[0])]"),
            "{text}"
        );
        insta::assert_snapshot!(text);
    }

    #[test]
    fn a_deny_run_explains_the_missing_network() {
        let text = explained(
            "name = \"dev\"\nagent = \"codex\"\n[egress]\nmode = \"deny\"\n",
            LaunchKind::Run,
            &[("AGENTC_NETWORK", "lab")],
        );
        assert!(
            text.contains("  network: none (loopback only)  [profile line 4 (egress.mode)]"),
            "{text}"
        );
        assert!(
            text.contains("not joined: the network from env AGENTC_NETWORK"),
            "{text}"
        );
        assert!(
            text.contains("egress deny also removes the network"),
            "{text}"
        );
        assert!(text.contains("widens the sandbox\n  (nothing)\n"), "{text}");
    }

    #[test]
    fn a_custom_sandbox_explained() {
        let text = explained(
            "name = \"lab\"\nagent = \"custom\"\n[image]\nref = \"strix:1\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n\
             [network]\nname = \"strix\"\nhost_gateway = true\n[security]\nfuse = true\nread_only_root = false\n",
            LaunchKind::Run,
            &[],
        );
        assert!(
            text.contains("not enforced: a custom image has no egress firewall"),
            "{text}"
        );
        insta::assert_snapshot!(text);
    }

    #[test]
    fn seed_decant_and_build_explained() {
        let seed = explained(CLAUDE, LaunchKind::Seed, &[]);
        assert!(seed.contains("command: -ceu <seed copy script>"), "{seed}");
        insta::assert_snapshot!("seed", seed);
        let decant = format!("{CLAUDE}\n[decant]\nenabled = true\nsource_profiles = [\"dev\"]\nbind_address = \"0.0.0.0\"\n");
        let decant = explained(&decant, LaunchKind::Decant, &[]);
        assert!(
            decant.contains("Decant listens on 0.0.0.0, beyond this machine"),
            "{decant}"
        );
        insta::assert_snapshot!("decant", decant);
        let build = format!("{CLAUDE}\n[image]\nbuild_context = \"../images\"\n");
        insta::assert_snapshot!("build", explained(&build, LaunchKind::Build, &[]));
    }
}
