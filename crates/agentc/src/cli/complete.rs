//! Dynamic completion of a session command's NAME (and `rm`'s): the agentc containers the
//! engine has, the profiles they belong to, and profile files, through clap_complete's
//! environment-driven completion (`COMPLETE=bash agentc`, which `agentc completions bash`
//! prints). Asked only while a shell completes a word: one `docker ps` (or `podman ps`) of
//! agentc's containers, no daemon connection of its own.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::process::{Command, Stdio};

use clap_complete::engine::{
    ArgValueCompleter, CompletionCandidate, PathCompleter, ValueCompleter,
};

/// The completer of a NAME argument.
pub fn names() -> ArgValueCompleter {
    ArgValueCompleter::new(complete_name)
}

/// The engine's program, as `AGENTC_ENGINE` chooses it for every command (docker when it is
/// unset or unreadable: a completion has no way to report an error).
fn program() -> &'static str {
    crate::choose_engine(None).unwrap_or_default().program()
}

/// Candidates for `current`: containers and profiles starting with it, then profile files
/// and directories.
fn complete_name(current: &OsStr) -> Vec<CompletionCandidate> {
    let prefix = current.to_string_lossy();
    let mut candidates = Vec::new();
    if !prefix.contains('/') {
        let (containers, profiles) = agentc_containers();
        for (name, profile) in containers {
            if name.starts_with(prefix.as_ref()) {
                candidates.push(
                    CompletionCandidate::new(name).help(Some(format!("profile {profile}").into())),
                );
            }
        }
        for profile in profiles {
            if profile.starts_with(prefix.as_ref()) {
                candidates.push(
                    CompletionCandidate::new(profile)
                        .help(Some("a profile: its one container".into())),
                );
            }
        }
    }
    let files = PathCompleter::any().filter(|path| {
        path.is_dir()
            || path
                .extension()
                .is_some_and(|extension| extension == "toml")
    });
    candidates.extend(files.complete(current));
    candidates
}

/// The engine's agentc containers (name and profile, egress proxies left out) and their
/// profiles; nothing when the engine does not answer.
fn agentc_containers() -> (Vec<(String, String)>, BTreeSet<String>) {
    let output = Command::new(program())
        .args([
            "ps",
            "--all",
            "--filter",
            "label=io.agentc.profile",
            "--format",
            "{{.Names}}\t{{.Label \"io.agentc.profile\"}}\t{{.Label \"io.agentc.kind\"}}",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let Some(output) = output.ok().filter(|output| output.status.success()) else {
        return (Vec::new(), BTreeSet::new());
    };
    parse_ps(&String::from_utf8_lossy(&output.stdout))
}

/// Reads `NAME\tPROFILE\tKIND` lines; egress proxies are companions, not sandboxes.
fn parse_ps(text: &str) -> (Vec<(String, String)>, BTreeSet<String>) {
    let mut containers = Vec::new();
    let mut profiles = BTreeSet::new();
    for line in text.lines() {
        let mut fields = line.split('\t');
        let (Some(name), Some(profile)) = (fields.next(), fields.next()) else {
            continue;
        };
        if fields.next() == Some(agentc_policy::KIND_EGRESS_PROXY) || name.is_empty() {
            continue;
        }
        containers.push((name.to_string(), profile.to_string()));
        if !profile.is_empty() {
            profiles.insert(profile.to_string());
        }
    }
    (containers, profiles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandboxes_and_their_profiles_are_read_and_proxies_left_out() {
        let (containers, profiles) = parse_ps(
            "agentc-sandbox-dev-1000-box\tbox\tsandbox\n\
             agentc-sandbox-dev-1000-box-egress-proxy\tbox\tegress-proxy\n\
             agentc-run-dev-42\tdev\trun\n\
             broken line\n",
        );
        assert_eq!(
            containers,
            [
                ("agentc-sandbox-dev-1000-box".to_string(), "box".to_string()),
                ("agentc-run-dev-42".to_string(), "dev".to_string()),
            ]
        );
        assert_eq!(
            profiles.into_iter().collect::<Vec<_>>(),
            ["box".to_string(), "dev".to_string()]
        );
    }
}
