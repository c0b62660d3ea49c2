//! What plays of killed verify processes left: a play is named `agentc-verify-PID-N` by the
//! process that runs it, which removes everything on every way out it sees, but not when it is
//! killed by SIGKILL. Before a play, the pods, networks, volumes and network namespaces named
//! for a process that no longer runs are removed ([`reap`]). The secrets a play makes are named
//! by the rendering (a Secret's name, perhaps one of the user's own), so they are not reaped.

use super::podman::{self, Podman};

/// The prefix of every object a play names.
pub const PLAY_PREFIX: &str = "agentc-verify-";

/// The process that named `object` (`agentc-verify-PID-…`), if it is a play's.
pub fn owner(object: &str) -> Option<u32> {
    let rest = object.strip_prefix(PLAY_PREFIX)?;
    let (pid, _) = rest.split_once('-')?;
    pid.parse().ok()
}

/// The play `object` belongs to (`agentc-verify-PID-N`), whose network namespace it uses.
fn play_of(object: &str) -> Option<String> {
    let rest = object.strip_prefix(PLAY_PREFIX)?;
    let mut parts = rest.splitn(3, '-');
    let (pid, n) = (parts.next()?, parts.next()?);
    Some(format!("{PLAY_PREFIX}{pid}-{n}"))
}

/// Whether the process `pid` runs (in this PID namespace).
fn alive(pid: u32) -> bool {
    std::path::Path::new("/proc").join(pid.to_string()).exists()
}

/// Those of `names` that a dead process's play made.
fn dead<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    names
        .into_iter()
        .map(str::trim)
        .filter(|name| owner(name).is_some_and(|pid| !alive(pid)))
        .map(str::to_string)
        .collect()
}

/// Removes what the plays of processes that no longer run left; returns what was removed, and
/// logs what could not be.
pub fn reap() -> Vec<String> {
    let host = Podman::host();
    let list = |args: &[&str]| dead(host.run(args).unwrap_or_default().lines());
    let mut reaped = Vec::new();
    // Pods first, each through its play's namespace when that exists (its network is torn down
    // there), then networks, volumes and the namespaces themselves.
    for pod in list(&["pod", "ps", "--format", "{{.Name}}"]) {
        let executor = match play_of(&pod) {
            Some(play) if podman::namespace_path(&play).exists() => Podman::in_namespace(&play),
            _ => Podman::host(),
        };
        match executor.run(&["pod", "rm", "--force", "--time", "0", &pod]) {
            Ok(_) => reaped.push(format!("pod {pod}")),
            Err(why) => log::warn!("could not remove a killed play's pod: {why}"),
        }
    }
    for (kind, listing) in [
        ("network", ["network", "ls", "--format", "{{.Name}}"]),
        ("volume", ["volume", "ls", "--format", "{{.Name}}"]),
    ] {
        for name in list(&listing) {
            match host.run(&[kind, "rm", "--force", &name]) {
                Ok(_) => reaped.push(format!("{kind} {name}")),
                Err(why) => log::warn!("could not remove a killed play's {kind}: {why}"),
            }
        }
    }
    let namespaces: Vec<String> = std::fs::read_dir("/run/netns")
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .collect();
    for namespace in dead(namespaces.iter().map(String::as_str)) {
        match podman::delete_namespace(&namespace) {
            Ok(()) => reaped.push(format!("network namespace {namespace}")),
            Err(why) => log::warn!("could not remove a killed play's namespace: {why}"),
        }
    }
    for what in &reaped {
        log::info!("removed what a killed verify left: {what}");
    }
    reaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plays_objects_name_their_process_and_play() {
        assert_eq!(owner("agentc-verify-123-0"), Some(123));
        assert_eq!(owner("agentc-verify-123-0-egress-upstream-ca"), Some(123));
        assert_eq!(owner("agentc-verify-x-0"), None);
        assert_eq!(owner("agentc-run-demo"), None);
        assert_eq!(
            play_of("agentc-verify-123-4-egress").as_deref(),
            Some("agentc-verify-123-4")
        );
        assert_eq!(
            play_of("agentc-verify-123-4").as_deref(),
            Some("agentc-verify-123-4")
        );
        // This process runs; a process of PID u32::MAX cannot.
        let listed = format!(
            "agentc-verify-{}-0\nagentc-verify-{}-1-net\nother\n",
            std::process::id(),
            u32::MAX
        );
        assert_eq!(
            dead(listed.lines()),
            vec![format!("agentc-verify-{}-1-net", u32::MAX)]
        );
    }
}
