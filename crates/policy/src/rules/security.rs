//! `[security]`: the hardening every container gets (read-only root, no new privileges, every
//! capability dropped, tmpfs `/tmp` and `/run`), added capabilities, FUSE, the OCI runtime,
//! and the dangerous requests refused unless an `allow_*` field accepts them; their
//! explanation and the `fuse`, `capability-*`, `root-writable` and `docker-socket` (through
//! `DOCKER_HOST`) findings. A stronger runtime (gVisor) lowers no finding: none of them is
//! about the kernel boundary it adds.

use std::collections::BTreeSet;

use crate::capability::Capability;
use crate::check::Checker;
use crate::context::{preset_origin, Resolver};
use crate::explainer::{origin_words, Explainer};
use crate::finding::{FindingCode, Report};
use crate::isolation::{IsolationPrefer, IsolationTier};
use crate::keys;
use crate::paths::{field_dangers, normalize_path, Danger, DOCKER_HOST};
use crate::presets::{self, Preset};
use crate::profile::{AgentName, EgressMode, Profile};
use crate::rules;
use crate::rules::network::denies_network;
use crate::spec::{AppArmor, ContainerSpec, Device, EnvValue, LaunchKind, Origin, Tmpfs};
use crate::text::is_network_name;

/// Capabilities that come close to root on the host or in the kernel.
pub const DANGEROUS_CAPABILITIES: &[Capability] = &[
    Capability::SysAdmin,
    Capability::SysModule,
    Capability::SysRawio,
    Capability::SysPtrace,
    Capability::SysBoot,
    Capability::DacReadSearch,
    Capability::Bpf,
    Capability::Perfmon,
    Capability::MacAdmin,
    Capability::MacOverride,
];

/// Capabilities listed once, and the dangerous requests loading can already see.
pub(crate) fn check(ck: &mut Checker, profile: &Profile) {
    let mut seen = BTreeSet::new();
    for (index, capability) in profile.security.add_capabilities.iter().enumerate() {
        if !seen.insert(*capability) {
            let field = format!("security.add_capabilities[{index}]");
            ck.fail(
                &field,
                format!("{field} repeats {capability}"),
                "list each capability once",
            );
        }
    }
    dangerous(ck, profile);
    runtime(ck, profile);
    isolation(ck, profile);
}

/// Whether a runtime name means gVisor: `runsc`, or a name that says `gvisor` or `runsc`
/// (`runsc-debug`, `gvisor`). Under gVisor an image's own iptables firewall does not run.
pub fn is_gvisor(runtime: &str) -> bool {
    let lower = runtime.to_ascii_lowercase();
    lower.contains("runsc") || lower.contains("gvisor")
}

/// What a runtime is, in words, for `explain` and `verify`.
pub fn runtime_words(runtime: &str) -> &'static str {
    let lower = runtime.to_ascii_lowercase();
    if is_gvisor(&lower) {
        "gVisor: a user-space kernel in front of the host's"
    } else if lower.contains("kata") {
        "Kata Containers: a lightweight virtual machine"
    } else if lower == "runc" || lower.starts_with("io.containerd.runc") || lower == "crun" {
        "the host kernel's namespaces and cgroups"
    } else {
        "a runtime registered with the engine"
    }
}

/// Whether the agent's egress policy is enforced by the image's own firewall (in-container
/// iptables): a preset agent whose egress is an allowlist, or deny through a gateway.
pub(crate) fn image_enforces_egress(profile: &Profile) -> bool {
    profile.agent != AgentName::Custom
        && profile.egress.mode != EgressMode::Unrestricted
        && !denies_network(profile)
}

/// `security.runtime`: a runtime name, and no gVisor under an egress policy only the image's
/// in-container firewall enforces (gVisor does not run it).
fn runtime(ck: &mut Checker, profile: &Profile) {
    let Some(runtime) = &profile.security.runtime else {
        return;
    };
    if !is_network_name(runtime) {
        ck.fail(
            "security.runtime",
            format!("security.runtime {runtime:?} is not a runtime name"),
            "name a runtime registered with the engine, such as \"runc\", \"runsc\" or \"kata\" \
             (letters, digits, _, . or -)",
        );
        return;
    }
    if is_gvisor(runtime) && image_enforces_egress(profile) {
        ck.fail_when(
            &["egress.mode"],
            "security.runtime",
            format!(
                "security.runtime {runtime:?} is gVisor, under which the image's egress firewall \
                 (in-container iptables) does not run: egress mode {} would not be enforced",
                profile.egress.mode.as_str()
            ),
            "set egress.mode = \"deny\" (no network at all, which gVisor holds), or run this \
             agent under runc",
        );
    }
}

/// `security.isolation`: a named runtime at or above the floor (by its name; the launch's probe
/// proves it), and no floor that may choose gVisor under an egress policy only the image's
/// in-container firewall enforces.
fn isolation(ck: &mut Checker, profile: &Profile) {
    let Some(isolation) = profile.security.isolation else {
        return;
    };
    if let Some(runtime) = &profile.security.runtime {
        if let Some(tier) = IsolationTier::of_runtime(runtime) {
            if tier < isolation.min {
                ck.fail_when(
                    &["security.runtime"],
                    "security.isolation.min",
                    format!(
                        "security.runtime {runtime:?} is {tier} isolation, below the floor \
                         security.isolation.min = {:?}",
                        isolation.min.as_str()
                    ),
                    format!(
                        "name a runtime at or above {} in security.runtime, or remove \
                         security.runtime to let agentc choose one at launch",
                        isolation.min
                    ),
                );
            }
        }
    }
    let may_choose_gvisor = match isolation.prefer {
        IsolationPrefer::Min => isolation.min == IsolationTier::Gvisor,
        IsolationPrefer::Strongest => isolation.min <= IsolationTier::Gvisor,
    };
    let named_other = profile
        .security
        .runtime
        .as_deref()
        .is_some_and(|runtime| !is_gvisor(runtime));
    if may_choose_gvisor && !named_other && image_enforces_egress(profile) {
        ck.fail_when(
            &["egress.mode"],
            "security.isolation",
            format!(
                "security.isolation may run this agent under gVisor, under which the image's \
                 egress firewall (in-container iptables) does not run: egress mode {} would \
                 not be enforced",
                profile.egress.mode.as_str()
            ),
            "set egress.mode = \"deny\" (no network at all, which gVisor holds), \
             isolation = { min = \"microvm\" } (its own kernel runs the firewall), or \
             isolation = { min = \"container\" } with runc",
        );
    }
}

/// The host paths that hand over the host ([`crate::paths::dangers`]) and `DOCKER_HOST`, as far
/// as loading can tell: absolute host paths (after lexical normalization) and `DOCKER_HOST`
/// among the variables passed in. Relative and `~` paths, links, the home directory and
/// `/root` (which may be the home) are checked when resolving.
fn dangerous(ck: &mut Checker, profile: &Profile) {
    let security = &profile.security;
    let mut sources: Vec<(String, &str)> = Vec::new();
    for (list, mounts) in [
        ("configuration_mounts", &profile.configuration_mounts),
        ("mounts", &profile.mounts),
    ] {
        for (index, mount) in mounts.iter().enumerate() {
            sources.push((format!("{list}[{index}].source"), mount.source.as_str()));
        }
    }
    let proxy = profile.proxy.as_ref();
    let files = [
        ("proxy.ca_file", proxy.and_then(|p| p.ca_file.as_deref())),
        ("proxy.ca_dir", proxy.and_then(|p| p.ca_dir.as_deref())),
        (
            "egress.gateway_key_file",
            profile.egress.gateway_key_file.as_deref(),
        ),
        (
            "egress.gateway_known_hosts_file",
            profile.egress.gateway_known_hosts_file.as_deref(),
        ),
        (
            "configuration_import.source",
            profile
                .configuration_import
                .as_ref()
                .map(|i| i.source.as_str()),
        ),
        (
            "image.build_context",
            profile.image.build_context.as_deref(),
        ),
    ];
    for (field, value) in files {
        if let Some(value) = value {
            sources.push((field.to_string(), value));
        }
    }
    for (field, source) in sources {
        let source = source.trim();
        if !source.starts_with('/') {
            continue;
        }
        let path = normalize_path(source);
        let Some(danger) = field_dangers(&field, &path, None)
            .into_iter()
            .find(|danger| !danger.allowed(security))
        else {
            continue;
        };
        let message = match danger {
            Danger::Root => format!("{field} binds the host's root directory /"),
            Danger::DockerSocket => format!("{field} exposes the docker socket: {path}"),
            other => format!("{field} {path} {}", other.what()),
        };
        ck.fail(
            &field,
            message,
            format!(
                "{}, or set {} to accept it",
                danger.why(),
                danger.allow_setting()
            ),
        );
    }
    if security.allow_docker_socket {
        return;
    }
    let mut names = Vec::new();
    if let Some(name) = profile
        .provider
        .as_ref()
        .and_then(|p| p.api_key_env.as_ref())
    {
        names.push(("provider.api_key_env", name));
    }
    if profile.langfuse.enabled {
        names.push(("langfuse.public_key_env", &profile.langfuse.public_key_env));
        names.push(("langfuse.secret_key_env", &profile.langfuse.secret_key_env));
    }
    for (field, name) in names {
        if name.trim() == DOCKER_HOST {
            ck.fail(
                field,
                format!("{field} passes DOCKER_HOST into the container"),
                format!(
                    "DOCKER_HOST points the agent at your docker daemon, which makes it root on \
                     the host; name the variable that holds the key, or set {} to accept it",
                    Danger::DockerSocket.allow_setting()
                ),
            );
        }
    }
}

impl Resolver<'_> {
    /// Read-only root, no-new-privileges, every capability dropped, tmpfs `/tmp` and `/run`.
    pub fn harden(&mut self, container: &mut ContainerSpec, preset: Option<&Preset>) {
        container.no_new_privileges = true;
        self.set(keys::NO_NEW_PRIVILEGES, Origin::Default);
        container.cap_drop_all = true;
        self.set(keys::CAP_DROP_ALL, Origin::Default);
        container.read_only_root = self.profile.security.read_only_root;
        let origin = self.origin_or("security.read_only_root", Origin::Default);
        self.set(keys::READ_ONLY_ROOT, origin);
        let exec = preset.is_some_and(|preset| preset.tmpfs_exec);
        for target in presets::TMPFS_TARGETS {
            container.tmpfs.push(Tmpfs {
                target: target.to_string(),
                exec,
            });
            let origin = match preset {
                Some(preset) if exec => preset_origin(preset),
                _ => Origin::Default,
            };
            self.set(keys::tmpfs(target), origin);
        }
    }

    /// Preset capabilities, `security.add_capabilities`, FUSE and the runtime.
    pub fn security(&mut self, container: &mut ContainerSpec, preset: Option<&Preset>) {
        if let Some(runtime) = &self.profile.security.runtime {
            container.runtime = Some(runtime.clone());
            let origin = self.field_origin("security.runtime");
            self.set(keys::RUNTIME, origin);
        }
        if let Some(min) = self.overrides.isolation_min {
            // The invocation's floor (`--isolation-min`): the profile's preference kept; a
            // lower floor than the profile's is the finding `isolation-lowered`.
            let prefer = self
                .profile
                .security
                .isolation
                .map(|isolation| isolation.prefer)
                .unwrap_or_default();
            container.isolation = Some(crate::isolation::Isolation { min, prefer });
            self.set(
                keys::ISOLATION,
                crate::context::env_origin(crate::overrides::ISOLATION_MIN),
            );
        } else if let Some(isolation) = self.profile.security.isolation {
            container.isolation = Some(isolation);
            let origin = self.field_origin("security.isolation");
            self.set(keys::ISOLATION, origin);
        }
        if let Some(preset) = preset {
            for capability in preset.capabilities {
                if rules::egress::host_path::drops_preset_capability(self.profile, *capability) {
                    continue; // behind the egress proxy: see host_path
                }
                container.cap_add.insert(*capability);
                self.set(keys::cap_add(*capability), preset_origin(preset));
            }
        }
        for (index, capability) in self.profile.security.add_capabilities.iter().enumerate() {
            if container.cap_add.insert(*capability) {
                let origin = self.field_origin(&format!("security.add_capabilities[{index}]"));
                self.set(keys::cap_add(*capability), origin);
            }
        }
        if self.profile.security.fuse {
            let origin = self.field_origin("security.fuse");
            container.devices.push(Device {
                host_path: "/dev/fuse".to_string(),
                container_path: "/dev/fuse".to_string(),
                permissions: "rwm".to_string(),
            });
            self.set(keys::device("/dev/fuse"), origin.clone());
            if container.cap_add.insert(Capability::SysAdmin) {
                self.set(keys::cap_add(Capability::SysAdmin), origin.clone());
            }
            container.apparmor = Some(AppArmor::Unconfined);
            self.set(keys::APPARMOR, origin);
        }
    }
}

/// The security section.
pub(crate) fn explain(out: &mut Explainer, c: &ContainerSpec) {
    out.section("security");
    let nnp = if c.no_new_privileges { "on" } else { "off" };
    out.item("no-new-privileges", nnp, keys::NO_NEW_PRIVILEGES);
    let drop = if c.cap_drop_all {
        "drop ALL"
    } else {
        "docker's default set"
    };
    out.item("capabilities", drop, keys::CAP_DROP_ALL);
    for capability in &c.cap_add {
        out.item(
            &format!("add {capability}"),
            "yes",
            &keys::cap_add(*capability),
        );
    }
    match c.apparmor {
        Some(AppArmor::Unconfined) => out.item("apparmor", "unconfined", keys::APPARMOR),
        None => out.line(
            "  apparmor: the engine's default profile, where the host has AppArmor (`agentc doctor` says)",
        ),
    }
    if let Some(isolation) = c.isolation {
        out.item(
            "isolation",
            format!(
                "{} or stronger ({}); prefer {}: {}",
                isolation.min,
                isolation.min.words(),
                isolation.prefer.as_str(),
                match isolation.prefer {
                    IsolationPrefer::Min => "the weakest tier that meets it",
                    IsolationPrefer::Strongest => "the strongest tier the engine has",
                }
            ),
            keys::ISOLATION,
        );
        if c.runtime.is_none() {
            out.line(
                "  the runtime is chosen at launch from the engine's runtimes, each proven by a \
                 probe; none at the floor: refused before anything is created",
            );
        }
    }
    if let Some(runtime) = &c.runtime {
        out.item(
            "runtime",
            format!("{runtime} ({})", runtime_words(runtime)),
            keys::RUNTIME,
        );
        if is_gvisor(runtime) {
            if c.cap_add.contains(&Capability::NetRaw) {
                out.line("  under gVisor: NET_RAW is removed (runsc runs without --net-raw)");
            }
            out.line(
                "  under gVisor: the engine's seccomp profile is not applied inside (gVisor \
                 filters its own calls to the host); limits hold the whole sandbox",
            );
        }
    }
    for device in &c.devices {
        out.item(
            &format!("device {}", device.host_path),
            format!("{} ({})", device.container_path, device.permissions),
            &keys::device(&device.host_path),
        );
    }
}

/// What widens the sandbox here (agent launches): added capabilities, FUSE, a writable root.
pub(crate) fn widens(out: &Explainer, c: &ContainerSpec, items: &mut Vec<String>) {
    if !matches!(out.spec.kind, LaunchKind::Run | LaunchKind::Sandbox) {
        return;
    }
    for (key, origin) in &out.spec.origins {
        if keys::cap_add_name(key).is_none() {
            continue;
        }
        if let Origin::Profile { field, .. } = origin {
            if field.starts_with("security.add_capabilities") {
                let capability = keys::cap_add_name(key).unwrap_or_default();
                items.push(format!(
                    "capability {capability}  [{}]",
                    origin_words(origin)
                ));
            }
        }
    }
    if out.profile.profile.security.fuse {
        items.push(format!(
            "FUSE: /dev/fuse, SYS_ADMIN and no AppArmor confinement  [{}]",
            out.words(keys::APPARMOR)
        ));
    }
    if !c.read_only_root {
        items.push(format!(
            "writable root filesystem  [{}]",
            out.words(keys::READ_ONLY_ROOT)
        ));
    }
}

/// `DOCKER_HOST` passed into the container.
pub(crate) fn docker_host_findings(report: &mut Report, c: &ContainerSpec) {
    for var in &c.env {
        if var.name != DOCKER_HOST {
            continue;
        }
        let at = report.field_of(&keys::env(DOCKER_HOST), "provider.api_key_env");
        let how = match var.value {
            EnvValue::Secret { .. } => "passed through from your environment",
            EnvValue::Literal { .. } => "set",
            // A placeholder points at nothing: the proxy holds the value, for its hosts only.
            EnvValue::Placeholder { .. } => continue,
        };
        report.push_allowed(
            FindingCode::DockerSocket,
            at,
            Danger::DockerSocket,
            format!("{DOCKER_HOST} is {how}: it points the agent at your docker daemon"),
            "do not pass DOCKER_HOST into the sandbox, and remove allow_docker_socket",
        );
    }
}

/// `fuse`, `capability-dangerous`, `capability-added` and `root-writable`.
pub(crate) fn findings(report: &mut Report, c: &ContainerSpec) {
    let profile = &report.loaded.profile;
    if let (Some(written), Some(launched)) = (profile.security.isolation, c.isolation) {
        if launched.min < written.min {
            let position = report.position("security.isolation");
            report.push(
                FindingCode::IsolationLowered,
                ("security.isolation.min".to_string(), position),
                format!(
                    "the invocation lowers the isolation floor from {} to {} ({}): the sandbox \
                     may run weaker than its profile demands",
                    written.min,
                    launched.min,
                    crate::overrides::ISOLATION_MIN
                ),
                "unset AGENTC_ISOLATION_MIN (drop --isolation-min) to keep the profile's floor",
            );
        }
    }
    let profile = &report.loaded.profile;
    if profile.security.fuse && c.devices.iter().any(|d| d.host_path == "/dev/fuse") {
        let position = report.position("security.fuse");
        report.push(
            FindingCode::Fuse,
            ("security.fuse".to_string(), position),
            "fuse adds /dev/fuse, SYS_ADMIN and AppArmor unconfined: the kernel's mount surface \
             and most of root's powers"
                .to_string(),
            "remove security.fuse unless the sandbox must mount FUSE file systems",
        );
    }
    for capability in &c.cap_add {
        let key = keys::cap_add(*capability);
        let Some(Origin::Profile { field, .. }) = report.origin(&key) else {
            continue;
        };
        if !field.starts_with("security.add_capabilities") {
            continue;
        }
        let at = report.field_of(&key, "security.add_capabilities");
        if DANGEROUS_CAPABILITIES.contains(capability) {
            report.push(
                FindingCode::CapabilityDangerous,
                at,
                format!("capability {capability} is added: it comes close to root on the host"),
                "remove it; grant the narrowest capability the tool needs",
            );
        } else {
            report.push(
                FindingCode::CapabilityAdded,
                at,
                format!("capability {capability} is added beyond the agent preset"),
                "remove it unless the agent needs it",
            );
        }
    }
    if !c.read_only_root {
        let at = report.field_of(keys::READ_ONLY_ROOT, "decant.enabled");
        if report.spec.kind == LaunchKind::Decant {
            report.push(
                FindingCode::RootWritable,
                at,
                "decant's root filesystem is writable: the companion is not hardened, as in \
                 agent-containers"
                    .to_string(),
                "run decant only while you browse sessions; it reads the home volumes read-only",
            );
        } else {
            report.push(
                FindingCode::RootWritable,
                at,
                "the root filesystem is writable: the agent can change the image's programs for \
                 the rest of the container's life"
                    .to_string(),
                "keep security.read_only_root = true and write to tmpfs or mounts",
            );
        }
    }
}
