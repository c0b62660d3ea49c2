//! What plays of killed verify processes left: a play is named `agentc-verify-PID-N` by the
//! process that runs it, which removes everything on every way out it sees, but not when it is
//! killed by SIGKILL. Before a play, the pods, networks, volumes and network namespaces named
//! for a process that no longer runs are removed ([`reap`]). A killed play's `podman` commands
//! outlive it (a SIGKILL reaches the process, not its children) and go on making what it
//! asked for, so they are waited for (and killed after [`ORPHAN_GRACE`]) before anything is
//! removed: an object they made after the removal would be left for good. The secrets a play
//! makes are named by the rendering (a Secret's name, perhaps one of the user's own), so they
//! are not reaped.

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

/// Whether `pid` runs and is not a zombie waiting for a parent that does not reap it.
fn runs(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// How long the commands a killed play left running are given to end by
/// themselves before they are killed: a `podman kube play` of a small pod ends in seconds, and
/// one killed halfway leaves Podman's state to its own recovery.
pub const ORPHAN_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// The `podman` commands whose arguments satisfy `names` (a played file's path
/// `…/agentc-verify-PID-N.yaml`, a pod, a network or a container of a play). Podman's
/// container monitors (`conmon`) name the containers too, and are left alone: they are the
/// pods', removed with them.
fn commands_naming(names: impl Fn(&str) -> bool) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != std::process::id())
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.trim_end() == "podman")
        })
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                cmdline
                    .split(|&byte| byte == 0)
                    .filter_map(|arg| std::str::from_utf8(arg).ok())
                    .any(&names)
            })
        })
        .collect()
}

/// Whether `arg` holds the name of an object of a process that no longer runs.
fn names_a_dead_play(arg: &str) -> bool {
    arg.match_indices(PLAY_PREFIX)
        .any(|(at, _)| owner(&arg[at..]).is_some_and(|pid| !alive(pid)))
}

/// Whether `arg` names the play `play` or one of its objects (`agentc-verify-7-1` names
/// neither `agentc-verify-7-10` nor its objects).
fn names_play(arg: &str, play: &str) -> bool {
    arg.match_indices(play)
        .any(|(at, _)| !arg[at + play.len()..].starts_with(|next: char| next.is_ascii_digit()))
}

/// Waits for the processes `found` to end, killing what still runs after `grace`.
fn end(found: &[u32], grace: std::time::Duration) {
    let deadline = std::time::Instant::now() + grace;
    loop {
        let running: Vec<u32> = found.iter().copied().filter(|&pid| runs(pid)).collect();
        if running.is_empty() {
            return;
        }
        if std::time::Instant::now() >= deadline {
            for pid in running {
                log::warn!("killing {pid}, a play's command that did not end");
                // SAFETY: kill(2) on a PID read from /proc; no memory is touched.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Ends the commands a play of this process still runs (`podman kube play` of `play`, or a
/// wait on its pod) when a signal interrupts it, so that its tear-down does not race them:
/// SIGTERM, then SIGKILL after ten seconds.
pub fn end_commands_of(play: &str) {
    let found = commands_naming(|arg| names_play(arg, play));
    for &pid in &found {
        // SAFETY: kill(2) on a PID read from /proc; no memory is touched.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    }
    end(&found, std::time::Duration::from_secs(10));
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
    let orphans = commands_naming(names_a_dead_play);
    if !orphans.is_empty() {
        log::info!(
            "waiting for {} command(s) a killed verify left running",
            orphans.len()
        );
        end(&orphans, ORPHAN_GRACE);
    }
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
        // A command's argument names a play anywhere in it: a played file's path.
        assert!(names_a_dead_play(&format!(
            "/tmp/.tmpAb12/agentc-verify-{}-0.yaml",
            u32::MAX
        )));
        assert!(!names_a_dead_play(&format!(
            "/tmp/.tmpAb12/agentc-verify-{}-0.yaml",
            std::process::id()
        )));
        assert!(!names_a_dead_play("--network=none"));
        assert!(names_play(
            "/tmp/x/agentc-verify-7-1.yaml",
            "agentc-verify-7-1"
        ));
        assert!(names_play("agentc-verify-7-1-egress", "agentc-verify-7-1"));
        assert!(!names_play(
            "agentc-verify-7-10-egress",
            "agentc-verify-7-1"
        ));
    }
}
