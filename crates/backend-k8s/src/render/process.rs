//! The process of the workload container and the pod's identity: entrypoint and arguments,
//! working directory, terminal, `--init`, `--rm`, and the user the pod runs as (the pod
//! security context's `runAsNonRoot`, `runAsUser`, `runAsGroup` and `fsGroup`).

use agentc_policy::LaunchKind;
use k8s_openapi::api::core::v1::{Container, PodSecurityContext, PodSpec};

use super::context::Renderer;

/// The uid and gid the agent presets' images run their agent as: `claude`, `opencode` and
/// `codex` are built with `UID=1000`, Hermes keeps its own 10000.
pub fn preset_uid(agent: &str) -> Option<i64> {
    match agent {
        "claude-code" | "opencode" | "codex" => Some(1000),
        "hermes" => Some(10000),
        _ => None,
    }
}

/// The process fields of a container, for [`Renderer::render_process`].
pub(super) struct Process<'a> {
    pub(super) entrypoint: &'a Option<String>,
    pub(super) command: &'a [String],
    pub(super) user: &'a Option<String>,
    pub(super) working_dir: &'a Option<String>,
    pub(super) init: bool,
    pub(super) interactive: bool,
    pub(super) tty: bool,
    pub(super) auto_remove: bool,
}

impl Renderer<'_> {
    /// Entrypoint, command, user, working directory, init and the terminal:
    /// `--entrypoint` / the arguments after the image → `command` / `args`; `--user` →
    /// `runAsUser`/`runAsGroup` (numeric only) with `runAsNonRoot`; `--workdir` →
    /// `workingDir`; `--init` → `shareProcessNamespace`; `--interactive`, `--tty` → `stdin`,
    /// `stdinOnce`, `tty`; `--rm` → `restartPolicy: Never` (a Pod is not removed on exit).
    pub(super) fn render_process(
        &mut self,
        pod: &mut PodSpec,
        main: &mut Container,
        process: Process<'_>,
    ) {
        let Process {
            entrypoint,
            command,
            user,
            working_dir,
            init,
            interactive,
            tty,
            auto_remove,
        } = process;
        if let Some(entrypoint) = entrypoint {
            if entrypoint.is_empty() {
                let field = self.field("entrypoint");
                self.refuse(
                    field,
                    "an empty entrypoint (docker's reset to none) has no Kubernetes spelling",
                    "name the program to run, or leave the entrypoint unset",
                );
            }
            main.command = Some(vec![entrypoint.clone()]);
        }
        if !command.is_empty() {
            main.args = Some(command.to_vec());
        }
        main.working_dir = working_dir.clone();
        main.stdin = interactive.then_some(true);
        main.stdin_once = interactive.then_some(true);
        main.tty = tty.then_some(true);
        if init {
            pod.share_process_namespace = Some(true);
            let field = self.field("init");
            self.notes.approximation(
                "init",
                field,
                "docker's --init runs tini as PID 1; here the pod shares one process namespace, \
                 so the pause container is PID 1 and reaps zombies, and the agent (not PID 1) \
                 gets default signal handling; the pod has no other container to expose"
                    .to_string(),
            );
        }
        if auto_remove {
            self.notes.approximation(
                "auto-remove",
                self.field("auto_remove"),
                "docker --rm removes the container on exit; a finished Pod stays (restartPolicy \
                 Never) until deleted with kubectl delete"
                    .to_string(),
            );
        }
        let mut context = PodSecurityContext {
            run_as_non_root: Some(true),
            ..PodSecurityContext::default()
        };
        match user {
            Some(user) => {
                let field = self.field("user");
                match parse_user(user) {
                    Ok((0, _)) => self.refuse(
                        field,
                        format!("user {user:?} is root, which Pod Security forbids"),
                        "run as a numeric non-root uid, such as \"1000:1000\"",
                    ),
                    Ok((uid, gid)) => {
                        context.run_as_user = Some(uid);
                        context.run_as_group = gid;
                        context.fs_group = gid;
                    }
                    Err(()) => self.refuse(
                        field,
                        format!(
                            "user {user:?} is not numeric: Kubernetes cannot check that a named \
                             user is not root"
                        ),
                        "set [image] user to the numeric uid (and gid), such as \"1000:1000\"",
                    ),
                }
            }
            None => match self.preset_agent().and_then(preset_uid) {
                Some(uid) if self.spec.kind == LaunchKind::Run => {
                    context.run_as_user = Some(uid);
                    context.run_as_group = Some(uid);
                    context.fs_group = Some(uid);
                    self.notes.approximation(
                        "preset-user",
                        "user",
                        format!(
                            "Docker starts the agent image's entrypoint as root, which installs \
                             its firewall and switches to the agent user; here the container \
                             starts as uid {uid}, gid {uid}, the preset image's agent user \
                             (images agentc builds get UID=1000; Hermes keeps 10000), and owns \
                             its volumes through fsGroup"
                        ),
                    );
                }
                _ => self.notes.cluster_duty(
                    "image-user",
                    if self.spec.kind == LaunchKind::Sandbox {
                        "image.user"
                    } else {
                        "user"
                    },
                    "the launch keeps the image's user: runAsNonRoot makes the kubelet refuse to \
                     start it unless the image's USER is a numeric uid other than 0"
                        .to_string(),
                ),
            },
        }
        if context.fs_group.is_some() {
            // Regroup a volume only when its root does not match, not on every start: a home
            // or a workspace can hold many files.
            context.fs_group_change_policy = Some("OnRootMismatch".to_string());
        }
        pod.security_context = Some(context);
    }
}

/// `uid` or `uid:gid`, numeric.
pub(super) fn parse_user(user: &str) -> Result<(i64, Option<i64>), ()> {
    let number = |text: &str| -> Result<i64, ()> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(());
        }
        text.parse::<u32>().map(i64::from).map_err(|_| ())
    };
    match user.split_once(':') {
        Some((uid, gid)) => Ok((number(uid)?, Some(number(gid)?))),
        None => Ok((number(user)?, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users() {
        assert_eq!(parse_user("1000"), Ok((1000, None)));
        assert_eq!(parse_user("1000:100"), Ok((1000, Some(100))));
        assert_eq!(parse_user("0"), Ok((0, None)));
        for bad in ["root", "1000:staff", "", ":", "-1", "4294967296", "+1"] {
            assert_eq!(parse_user(bad), Err(()), "{bad:?}");
        }
    }
}
