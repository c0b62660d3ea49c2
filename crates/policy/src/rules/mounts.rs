//! `mounts`, `configuration_mounts` and `[workspace]`: host binds and the workspace, checked
//! lexically when loading and against the machine when resolving; the filesystem part of the
//! explanation; and the bind findings (`bind-root`, `docker-socket`, `bind-home`,
//! `bind-workspace-ancestor`, `bind-writable`, `workspace-writable`).

use std::collections::BTreeSet;

use crate::check::Checker;
use crate::context::{invocation, Resolver};
use crate::error::{Location, PolicyError};
use crate::explainer::Explainer;
use crate::finding::{FindingCode, FindingSource, Report};
use crate::inputs::PathKind;
use crate::keys;
use crate::paths::{contains, dangers, normalize_path, Danger, ALL_DANGERS};
use crate::presets;
use crate::profile::{MountConfig, MountType, OnConflict, Profile};
use crate::spec::{ContainerSpec, LaunchKind, Mount, MountSource, Origin};

/// `configuration_mounts` then `mounts` (agent-containers' `effective_mounts`), each with its
/// field path.
pub(crate) fn effective_mounts(profile: &Profile) -> Vec<(String, &MountConfig)> {
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
    configuration.chain(mounts).collect()
}

/// Each mount's fields, and targets that overlap.
pub(crate) fn check(ck: &mut Checker, profile: &Profile) {
    for (prefix, mount) in effective_mounts(profile) {
        check_mount(ck, &prefix, mount);
    }
    overlaps(ck, profile);
}

fn check_mount(ck: &mut Checker, prefix: &str, mount: &MountConfig) {
    ck.line(&format!("{prefix}.source"), &mount.source, "the host path");
    let target_field = format!("{prefix}.target");
    if ck.line(&target_field, &mount.target, "the absolute container path") {
        check_target(ck, &target_field, mount.target.trim());
    }
    if mount.kind != MountType::Seed && mount.on_conflict != OnConflict::Keep {
        let field = format!("{prefix}.on_conflict");
        ck.fail_when(
            &[&format!("{prefix}.type")],
            &field,
            format!("{field} is only supported for seed mounts"),
            "remove on_conflict, or set type = \"seed\" to copy the file into the home volume",
        );
    }
}

fn check_target(ck: &mut Checker, field: &str, target: &str) {
    if !target.starts_with('/') {
        ck.fail(
            field,
            format!("{field} must be an absolute path"),
            "write a container path such as `/home/agent/.config/tool`",
        );
        return;
    }
    if target.trim_end_matches('/').is_empty() {
        ck.fail(
            field,
            format!("{field} must not be the container's root /"),
            "mount onto a directory inside the container, such as `/home/agent/.config/tool`",
        );
        return;
    }
    if !ck.clean_container_path(field, target) {
        return;
    }
    // Regression (`mount_targets_under_proc_sys_or_dev_are_refused`): a bind over the
    // kernel's interfaces (`/proc/sys`, `/sys/fs/cgroup`, `/dev/shm`) was accepted.
    let clean = normalize_path(target);
    if ["/proc", "/sys", "/dev"]
        .iter()
        .any(|root| clean == *root || clean.starts_with(&format!("{root}/")))
    {
        ck.fail(
            field,
            format!("{field} {clean} is inside /proc, /sys or /dev"),
            "mount onto an ordinary directory such as `/home/agent/data`: a mount there would \
             shadow the kernel's interfaces",
        );
    }
}

/// Duplicate or nested targets, which docker would resolve ambiguously.
fn overlaps(ck: &mut Checker, profile: &Profile) {
    let targets: Vec<(String, String)> = effective_mounts(profile)
        .into_iter()
        .map(|(prefix, mount)| {
            (
                format!("{prefix}.target"),
                mount.target.trim().trim_end_matches('/').to_string(),
            )
        })
        .collect();
    let nested = |outer: &str, inner: &str| {
        inner.len() > outer.len()
            && inner.starts_with(outer)
            && inner.as_bytes()[outer.len()] == b'/'
    };
    for (later, (field, target)) in targets.iter().enumerate() {
        let overlapping = targets[..later]
            .iter()
            .find(|(_, other)| target == other || nested(other, target) || nested(target, other));
        if let Some((other_field, other)) = overlapping {
            ck.fail_when(
                &[other_field],
                field,
                format!("mount targets overlap: {other_field} {other} and {field} {target}"),
                "give each mount its own target; a mount inside another mount's target would be \
                 shadowed or shadow it",
            );
        }
    }
}

impl Resolver<'_> {
    /// The workspace bind and working directory, when mounted.
    pub fn workspace(
        &mut self,
        container: &mut ContainerSpec,
        default_mount: bool,
        default_origin: Origin,
    ) -> Result<Option<String>, PolicyError> {
        let mount = self.profile.workspace.mount.unwrap_or(default_mount);
        if !mount {
            if self.profile.workspace.mount.is_some() {
                let origin = self.field_origin("workspace.mount");
                self.set(keys::WORKSPACE, origin);
            }
            return Ok(None);
        }
        let workspace_error = |message: String, hint: &str| PolicyError::Unlaunchable {
            location: Location::Invocation {
                input: "--workspace".to_string(),
            },
            message,
            hint: hint.to_string(),
        };
        if !self.inputs.workspace.starts_with('/') {
            return Err(workspace_error(
                format!(
                    "workspace {:?} is not an absolute path",
                    self.inputs.workspace
                ),
                "pass an absolute --workspace",
            ));
        }
        let path = normalize_path(&self.inputs.workspace);
        let name = path.rsplit('/').next().unwrap_or_default().to_string();
        if name.is_empty() {
            return Err(workspace_error(
                "the root directory cannot be the workspace".to_string(),
                "pass a project directory as --workspace",
            ));
        }
        let allowed_by = self.refuse_dangerous("--workspace", &path)?;
        if self.paths.kind(&path) != PathKind::Directory {
            return Err(workspace_error(
                format!("workspace is not a directory: {path}"),
                "pass an existing directory as --workspace",
            ));
        }
        let target = format!("{}/{name}", presets::WORKSPACE_ROOT);
        container.mounts.push(Mount {
            target: target.clone(),
            read_only: self.profile.workspace.read_only,
            source: MountSource::Bind { path },
        });
        self.set(keys::mount(&target), invocation("--workspace"));
        if let Some(origin) = allowed_by {
            self.set(keys::allowed_by(&target), origin);
        }
        let origin = self.origin_or("workspace.read_only", Origin::Default);
        self.set(keys::mount_read_only(&target), origin);
        if self.profile.workspace.mount.is_some() {
            let origin = self.field_origin("workspace.mount");
            self.set(keys::WORKSPACE, origin);
        } else {
            self.set(keys::WORKSPACE, default_origin);
        }
        container.working_dir = Some(target.clone());
        self.set(keys::WORKING_DIR, invocation("--workspace"));
        Ok(Some(target))
    }

    /// The gateway inputs (required when `gateway`), then the profile's bind and directory
    /// mounts (agent-containers' `_append_mount_args`); seeds are left to `agentc seed`.
    /// `reserved` holds the targets agentc mounts itself.
    pub fn profile_mounts(
        &mut self,
        container: &mut ContainerSpec,
        mut reserved: BTreeSet<String>,
        gateway: bool,
    ) -> Result<(), PolicyError> {
        let mounts = effective_mounts(self.profile);
        self.gateway_inputs(container, &mounts, &mut reserved, gateway)?;
        for (field, mount) in mounts {
            if mount.kind == MountType::Seed {
                continue;
            }
            let target = mount.target.trim_end_matches('/').to_string();
            if reserved.contains(&target) {
                return Err(self.invalid(
                    &format!("{field}.target"),
                    format!("mount target conflicts with generated mount: {target}"),
                    "choose another target; agentc mounts this path itself",
                ));
            }
            reserved.insert(target.clone());
            let source_field = format!("{field}.source");
            let path = self.host_path(&source_field, &mount.source)?;
            let allowed_by = self.refuse_dangerous(&source_field, &path)?;
            let problem = match (self.paths.kind(&path), mount.kind) {
                (PathKind::Missing, _) => Some(format!("mount source does not exist: {path}")),
                (found, MountType::Directory) if found != PathKind::Directory => {
                    Some(format!("mount source is not a directory: {path}"))
                }
                _ => None,
            };
            if let Some(message) = problem {
                return Err(self.unlaunchable(
                    &source_field,
                    message,
                    "create it, or fix the path (relative paths are relative to the profile's directory, ~ is your home)",
                ));
            }
            container.mounts.push(Mount {
                target: target.clone(),
                read_only: mount.read_only,
                source: MountSource::Bind { path },
            });
            let origin = self.field_origin(&field);
            self.set(keys::mount(&target), origin);
            if let Some(origin) = allowed_by {
                self.set(keys::allowed_by(&target), origin);
            }
        }
        Ok(())
    }
}

/// The filesystem section: the root, tmpfs mounts, mounts, and (for a run) the seeds.
pub(crate) fn explain(out: &mut Explainer, c: &ContainerSpec) {
    out.section("filesystem");
    let root = if c.read_only_root {
        "read-only"
    } else {
        "writable"
    };
    out.item("root filesystem", root, keys::READ_ONLY_ROOT);
    for tmpfs in &c.tmpfs {
        let exec = if tmpfs.exec { "exec" } else { "noexec" };
        out.item(
            &format!("tmpfs {}", tmpfs.target),
            exec,
            &keys::tmpfs(&tmpfs.target),
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
        out.item(
            &mount.target,
            format!("{source}, {access}"),
            &keys::mount(&mount.target),
        );
    }
    if out.spec.kind != LaunchKind::Run {
        return;
    }
    let seeds: Vec<String> = effective_mounts(&out.profile.profile)
        .into_iter()
        .filter(|(_, mount)| mount.kind == MountType::Seed)
        .map(|(field, mount)| {
            let at = match out.profile.position(&field) {
                Some((line, _)) => format!("profile line {line} ({field})"),
                None => format!("profile ({field})"),
            };
            format!("    {} from {}  [{at}]", mount.target, mount.source)
        })
        .collect();
    if !seeds.is_empty() {
        out.line(
            "  seeds (not mounted; copied once into the home by `agentc seed --seed-target TARGET`):",
        );
        for seed in seeds {
            out.line(seed);
        }
    }
}

/// What widens the sandbox here: writable binds the profile asks for.
pub(crate) fn widens(out: &Explainer, c: &ContainerSpec, items: &mut Vec<String>) {
    for mount in &c.mounts {
        let key = keys::mount(&mount.target);
        let explicit = matches!(out.origin(&key), Some(Origin::Profile { .. }));
        if matches!(mount.source, MountSource::Bind { .. }) && !mount.read_only && explicit {
            items.push(format!(
                "writable bind mount {}  [{}]",
                mount.target,
                out.words(&key)
            ));
        }
    }
}

/// The workspace path, whether it is read-only, and its target, when the launch mounts it.
fn workspace_of(report: &Report, c: &ContainerSpec) -> Option<(String, bool, String)> {
    c.mounts.iter().find_map(|mount| {
        match (&mount.source, report.origin(&keys::mount(&mount.target))) {
            (MountSource::Bind { path }, Some(Origin::Invocation { input }))
                if input == "--workspace" =>
            {
                Some((path.clone(), mount.read_only, mount.target.clone()))
            }
            _ => None,
        }
    })
}

/// The bind findings.
pub(crate) fn findings(report: &mut Report, c: &ContainerSpec) {
    let workspace = workspace_of(report, c);
    for mount in &c.mounts {
        let MountSource::Bind { path } = &mount.source else {
            continue;
        };
        let key = keys::mount(&mount.target);
        let mut at = report.field_of(&key, "mounts");
        if let FindingSource::Field { field, position } = &mut at {
            if field.starts_with("mounts[") || field.starts_with("configuration_mounts[") {
                *field = format!("{field}.source");
                *position = report.position(field).or(*position);
            }
        }
        let allowed_by = match report.origin(&keys::allowed_by(&mount.target)) {
            Some(Origin::Profile { field, .. }) => Some(field.clone()),
            _ => None,
        };
        let access = if mount.read_only {
            "read-only"
        } else {
            "writable"
        };
        let target = &mount.target;
        // The dangers the path shows by itself, and the one its `allow_*` field was recorded
        // for where that needs the home (the home, `/root`).
        let mut found = dangers(path, None);
        if let Some(danger) = ALL_DANGERS
            .iter()
            .find(|danger| allowed_by.as_deref() == Some(danger.allow_field()))
        {
            if !found.contains(danger) {
                found.push(*danger);
            }
        }
        for danger in &found {
            bind_finding(report, at.clone(), *danger, path, access, target);
        }
        if !found.is_empty() {
            continue;
        }
        let is_workspace = workspace
            .as_ref()
            .is_some_and(|(_, _, workspace_target)| workspace_target == target);
        if is_workspace || mount.read_only {
            continue;
        }
        let above = workspace
            .as_ref()
            .is_some_and(|(workspace, _, _)| workspace != path && contains(path, workspace));
        if above {
            report.push(
                FindingCode::BindWorkspaceAncestor,
                at,
                format!(
                    "{path}, a directory above the workspace, is mounted writable at \
                     {target}: the agent can change other projects and the files around \
                     them"
                ),
                "mount the workspace alone, or mount the directory read-only",
            );
        } else if matches!(report.origin(&key), Some(Origin::Profile { .. })) {
            report.push(
                FindingCode::BindWritable,
                at,
                format!("{path} is mounted writable at {target}"),
                "set read_only = true unless the agent must write there",
            );
        }
    }
    if let Some((path, false, target)) = workspace {
        let position = report.position("workspace.read_only");
        report.push(
            FindingCode::WorkspaceWritable,
            ("workspace.read_only".to_string(), position),
            format!(
                "the workspace {path} is mounted writable at {target}: the two-way door, as files \
                 the agent writes (git hooks, scripts, build files) run later on the host"
            ),
            "review changes before running them on the host, or set [workspace] read_only = true \
             for agents that only read",
        );
    }
}

/// The finding of a bind of `path` that `danger`'s `allow_*` field accepted.
fn bind_finding(
    report: &mut Report,
    at: FindingSource,
    danger: Danger,
    path: &str,
    access: &str,
    target: &str,
) {
    let (message, hint) = match danger {
        Danger::Root => (
            format!(
                "the host's root directory is mounted {access} at {target}, with every home, \
                 key and the docker socket in it"
            ),
            "mount only the directories the agent needs, and remove allow_root_bind",
        ),
        Danger::DockerSocket => (
            format!(
                "{path} exposes the docker socket at {target}: whoever reaches it is root on \
                 the host"
            ),
            "remove the mount and allow_docker_socket; give the agent a rootless or remote \
             daemon of its own if it must run containers",
        ),
        Danger::Home => (
            format!(
                "the home directory {path} is mounted {access} at {target}, with the keys and \
                 tokens in it"
            ),
            "mount only the project and the files the agent needs, and remove allow_home_bind",
        ),
        Danger::EngineData => (
            format!(
                "{path}, a container engine's data or sockets, is mounted {access} at {target}: \
                 every container's configuration and environment (the egress proxy's keys \
                 among them) is readable there"
            ),
            "remove the mount and allow_engine_data_bind",
        ),
        Danger::HostSystem => (
            format!(
                "{path}, in the host's system directories, is mounted {access} at {target}: \
                 the host's processes and their environment, devices or configuration are \
                 readable there"
            ),
            "mount a copy of the file the agent needs instead, and remove \
             allow_host_system_bind",
        ),
        Danger::CredentialDir => (
            format!(
                "{path}, a credential directory, is mounted {access} at {target}: your keys and \
                 tokens are readable there"
            ),
            "give the agent a key of its own, and remove allow_credential_dir_bind",
        ),
    };
    report.push_allowed(danger.finding_code(), at, danger, message, hint);
}
