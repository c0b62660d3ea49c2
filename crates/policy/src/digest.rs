//! The spec digest (`io.agentc.spec-digest`): one sha256 per launch, computed by
//! [`crate::resolve()`] and nowhere else; everything else reads it from the label
//! ([`LaunchSpec::digest`]): `plan`, `render`, `lock`, `-v`, the running container, `ps`.
//!
//! It is the sha256 of the launch's *portable form* ([`portable_action`]), so one launch has one
//! digest on every machine and in every checkout of a project:
//! - the kind, the profile's name and the action, without the digest label itself; not the
//!   origins (the same launch reached through another override has the same digest);
//! - before the invocation's [`crate::Instance`] is applied: whether the container starts
//!   attached or in the background, its name when the invocation gives it one (`--detach`,
//!   `--count`'s copies, a session), the terminal, and the profile file it came from
//!   (`io.agentc.profile-file`, `io.agentc.profile-sha256`) are left out;
//! - host paths ([`LocalRoots::portable_path`]) written relative to the profile's directory
//!   (`.`, `./certs/ca.pem`, `..`, `../data`) when the two share a directory below the top
//!   level (`/srv/app`, not `/srv`) that does not hold the home directory, else relative to the
//!   home directory (`~/.gitconfig`), else as they are (`/etc/ssl/certs`): a system path is the
//!   same everywhere, a project's files move with it;
//! - the workspace's directory name in its container path (`/workspace/app`, the mount target
//!   and the working directory) written [`WORKSPACE_NAME`]: a worktree or a CI clone under
//!   another directory name mounts the same project.
//!
//! So a workspace that moves outside the project changes the digest (`.` becomes `/elsewhere`
//! or `~/elsewhere`), as does any other bind, while the same project copied elsewhere keeps it.
//! The host user stays in: a home volume's or a sandbox's name holds it, and another user's
//! launch keeps other data.

use sha2::{Digest, Sha256};

use crate::inputs::{PathProbe, ResolveInputs};
use crate::paths::{contains, normalize_path};
use crate::presets::WORKSPACE_ROOT;
use crate::spec::{
    Action, BuildSpec, ContainerSpec, LaunchSpec, MountSource, LABEL_PROFILE_FILE,
    LABEL_PROFILE_SHA256, LABEL_SPEC_DIGEST,
};

/// What the workspace's directory name is written as in the portable form's container paths:
/// `/workspace/{workspace}`.
pub const WORKSPACE_NAME: &str = "{workspace}";

/// The labels outside the digest: the digest itself and the profile record.
const UNDIGESTED_LABELS: [&str; 3] = [LABEL_SPEC_DIGEST, LABEL_PROFILE_FILE, LABEL_PROFILE_SHA256];

/// The directories of this machine and checkout that the portable form writes host paths
/// relative to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalRoots {
    /// The profile's directory (absolute, normalized), then its real path when a symbolic link
    /// leads there (`/tmp` to `/private/tmp`).
    pub profile_dirs: Vec<String>,
    /// The home directory, then its real path when that differs; none when it is `/`.
    pub home_dirs: Vec<String>,
    /// The workspace (absolute, normalized).
    pub workspace: String,
}

impl LocalRoots {
    /// The roots of a resolution: its profile directory, home and workspace, and their real
    /// paths as `paths` reports them.
    pub fn of(inputs: &ResolveInputs, paths: &dyn PathProbe) -> LocalRoots {
        let with_real = |path: &str| -> Vec<String> {
            let path = normalize_path(path);
            let real = paths.canonical(&path).filter(|real| *real != path);
            std::iter::once(path).chain(real).collect()
        };
        let mut home_dirs = with_real(&inputs.home_dir);
        home_dirs.retain(|home| home != "/");
        LocalRoots {
            profile_dirs: with_real(&inputs.profile_dir),
            home_dirs,
            workspace: normalize_path(&inputs.workspace),
        }
    }

    /// A host path (absolute, normalized) as the portable form writes it: relative to the
    /// profile's directory, else to the home directory, else unchanged (see the module's
    /// documentation). [`crate::resolve_host_path`] reads it back, as a profile's path.
    pub fn portable_path(&self, path: &str) -> String {
        if let Some(relative) = self
            .profile_dirs
            .iter()
            .find_map(|dir| self.relative(dir, path))
        {
            return relative;
        }
        for home in &self.home_dirs {
            if path == home {
                return "~".to_string();
            }
            if let Some(rest) = path.strip_prefix(&format!("{home}/")) {
                return format!("~/{rest}");
            }
        }
        path.to_string()
    }

    /// `path` relative to `dir`, when the two share a directory below the top level that
    /// does not hold the home directory.
    fn relative(&self, dir: &str, path: &str) -> Option<String> {
        let dir_parts = components(dir);
        let path_parts = components(path);
        let shared = dir_parts
            .iter()
            .zip(&path_parts)
            .take_while(|(a, b)| a == b)
            .count();
        let common = format!("/{}", dir_parts[..shared].join("/"));
        if shared < 2 || self.home_dirs.iter().any(|home| contains(&common, home)) {
            return None;
        }
        let ups = dir_parts.len() - shared;
        let rest = path_parts[shared..].join("/");
        Some(match (ups, rest.is_empty()) {
            (0, true) => ".".to_string(),
            (0, false) => format!("./{rest}"),
            (_, true) => vec![".."; ups].join("/"),
            (_, false) => format!("{}/{rest}", vec![".."; ups].join("/")),
        })
    }
}

/// The components of an absolute, normalized path (none for `/`).
fn components(path: &str) -> Vec<&str> {
    path.split('/').filter(|part| !part.is_empty()).collect()
}

/// The action of `spec` in its portable form: host paths relative ([`LocalRoots`]), the
/// workspace's directory name written [`WORKSPACE_NAME`], the digest and profile-record labels
/// left out. Not a launch (its paths are not absolute): what the digest covers and what a lock
/// lists for review.
pub fn portable_action(spec: &LaunchSpec, roots: &LocalRoots) -> Action {
    let mut action = spec.action.clone();
    match &mut action {
        Action::Container(container) => portable_container(container, roots),
        Action::Build(build) => portable_build(build, roots),
    }
    action
}

/// The digest of `spec`'s portable form: hex sha256 of the kind, the profile's name and
/// [`portable_action`], serialized with sorted maps.
pub(crate) fn spec_digest(spec: &LaunchSpec, roots: &LocalRoots) -> String {
    let action = portable_action(spec, roots);
    // Serializing plain data with sorted maps cannot fail and is deterministic.
    let bytes = serde_json::to_vec(&(&spec.kind, &spec.profile, &action)).unwrap_or_default();
    Sha256::digest(&bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Every field is named, so that a new one does not compile until it is decided here: a host
/// path is made portable, anything else is digested as it is.
fn portable_container(container: &mut ContainerSpec, roots: &LocalRoots) {
    let ContainerSpec {
        name: _,
        image: _,
        entrypoint: _,
        command: _,
        user: _,
        working_dir,
        init: _,
        env: _,
        mounts,
        tmpfs: _,
        read_only_root: _,
        no_new_privileges: _,
        apparmor: _,
        cap_drop_all: _,
        cap_add: _,
        network: _,
        extra_hosts: _,
        ports: _,
        exposed_ports: _,
        network_aliases: _,
        ipv4_address: _,
        dns: _,
        sysctls: _,
        egress,
        resources: _,
        log: _,
        devices,
        labels,
        runtime: _,
        isolation: _,
        interactive: _,
        tty: _,
        auto_remove: _,
        restart: _,
        detach: _,
        // Never serialized, so never digested: a rotated password is the same launch.
        held_secrets: _,
    } = container;
    let workspace_name = roots.workspace.rsplit('/').next().unwrap_or_default();
    let workspace_target = format!("{WORKSPACE_ROOT}/{workspace_name}");
    let in_workspace = |path: &str| {
        path.strip_prefix(&workspace_target)
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
            .map(|rest| format!("{WORKSPACE_ROOT}/{WORKSPACE_NAME}{rest}"))
    };
    let mut workspace_mounted = false;
    for mount in mounts.iter_mut() {
        let MountSource::Bind { path } = &mut mount.source else {
            continue;
        };
        if *path == roots.workspace && mount.target == workspace_target {
            mount.target = format!("{WORKSPACE_ROOT}/{WORKSPACE_NAME}");
            workspace_mounted = true;
        }
        *path = roots.portable_path(path);
    }
    if workspace_mounted {
        if let Some(dir) = working_dir.as_deref().and_then(in_workspace) {
            *working_dir = Some(dir);
        }
    }
    for device in devices.iter_mut() {
        device.host_path = roots.portable_path(&device.host_path);
    }
    for label in UNDIGESTED_LABELS {
        labels.remove(label);
    }
    if let Some(egress) = egress {
        portable_container(&mut egress.proxy, roots);
    }
}

fn portable_build(build: &mut BuildSpec, roots: &LocalRoots) {
    let BuildSpec {
        tag: _,
        context,
        dockerfile: _,
        named_contexts,
        build_args: _,
        labels,
    } = build;
    *context = roots.portable_path(context);
    for dir in named_contexts.values_mut() {
        *dir = roots.portable_path(dir);
    }
    for label in UNDIGESTED_LABELS {
        labels.remove(label);
    }
}

#[cfg(test)]
mod tests;
