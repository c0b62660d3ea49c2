//! Live tests of pausing, snapshots, restores and forks (issue 23), through both backends:
//! the writable layer, a tmpfs and the home volume survive snapshot -> rm -> restore, the
//! restored sandbox hardened and behind its own egress proxy as the profile says; two forks
//! diverge; `restore --name` and `fork --name` name the sandboxes and their companions as
//! `run --name` does and refuse a name in use, leaving nothing, and a restore's launch passes
//! `agentc verify --image SNAPSHOT-IMAGE`; a paused sandbox runs nothing and resumes where it
//! was; a sandbox with secrets as environment values is refused without --allow-secrets, and
//! with it no secret value is in the image (`docker save`, byte for byte) or the archives;
//! `--memory` is refused on Docker with its hint.
//!
//! Each test makes its own outside network (`--internal`: nothing leaves the machine) and
//! launches sandboxes of the busybox test image (or an agent image built from it locally)
//! behind the egress proxy into it; no sandbox sends any request. Everything is named
//! `agentc-t-snap-PID-...` and removed by a guard, also when a test fails.
//!
//! Needs the daemon: skips with a printed reason without one, fails instead when
//! `AGENTC_REQUIRE_DOCKER=1`.

use crate::common;

use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use common::{describe, docker, require_daemon, test_image, text, IMAGES};

/// A test's outside network, state directory and profiles; all of it removed on drop.
struct Lab {
    id: String,
    out: String,
    dir: tempfile::TempDir,
    profiles: Vec<String>,
    volumes: Vec<String>,
}

impl Lab {
    fn new(test: &str) -> Lab {
        let id = format!("agentc-t-snap-{}-{test}", std::process::id());
        let out = format!("{id}-out");
        docker(&["network", "create", "--internal", &out]).expect("create the outside network");
        Lab {
            id,
            out,
            dir: tempfile::tempdir().expect("tempdir"),
            profiles: Vec::new(),
            volumes: Vec::new(),
        }
    }

    /// Writes a profile with a writable root, behind the egress proxy (unless `extra` has an
    /// `[egress]` table of its own): a custom sandbox
    /// running `command` in the busybox image, or (`agent`) a Claude Code run of the agent
    /// image whose `claude` idles, with a home volume of its own and `extra` lines. Returns
    /// (its name, its path).
    fn profile(&mut self, name: &str, agent: bool, command: &str, extra: &str) -> (String, String) {
        let profile = format!("{}-{name}", self.id);
        let launch = if agent {
            let home = format!("{profile}-home");
            self.volumes.push(home.clone());
            format!(
                "agent = \"claude-code\"\nhome_volume = \"{home}\"\n\n[image]\nref = \"{}\"\n",
                agent_image()
            )
        } else {
            format!(
                "agent = \"custom\"\n\n[image]\nref = \"{}\"\ncommand = {command}\n",
                test_image()
            )
        };
        // Behind the egress proxy, unless `extra` says otherwise.
        let egress = if extra.contains("[egress]") {
            String::new()
        } else {
            format!(
                "[egress]\nhosts = [\"allowed.test\"]\noutside_network = \"{}\"\n",
                self.out
            )
        };
        let body = format!(
            "name = \"{profile}\"\n{launch}\n[security]\nread_only_root = false\n\n{egress}{extra}"
        );
        let path = self.dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, body).expect("write the profile");
        self.profiles.push(profile.clone());
        (profile, path.to_string_lossy().into_owned())
    }

    fn state(&self) -> std::path::PathBuf {
        self.dir.path().join("state")
    }

    /// Runs agentc with the lab's state directory and `env` on top.
    fn agentc(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_agentc"))
            .args(args)
            .env("AGENTC_STATE_DIR", self.state())
            .envs(env.iter().copied())
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("agentc runs")
    }

    /// Runs agentc and asserts it succeeded: its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.agentc(args, &[]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            describe(&output)
        );
        text(&output.stdout)
    }

    /// `agentc exec NAME sh -c SCRIPT`: its stdout.
    fn sh(&self, backend: &str, name: &str, script: &str) -> String {
        self.ok(&["exec", "--backend", backend, name, "sh", "-c", script])
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for profile in &self.profiles {
            let filter = format!("label=io.agentc.profile={profile}");
            for container in docker(&["ps", "-aq", "--filter", &filter])
                .unwrap_or_default()
                .split_whitespace()
            {
                let _ = docker(&["rm", "--force", container]);
            }
            for network in docker(&["network", "ls", "-q", "--filter", &filter])
                .unwrap_or_default()
                .split_whitespace()
            {
                let _ = docker(&["network", "rm", network]);
            }
            for volume in docker(&["volume", "ls", "-q", "--filter", &filter])
                .unwrap_or_default()
                .split_whitespace()
            {
                let _ = docker(&["volume", "rm", volume]);
            }
            let snapshot = "label=io.agentc.snapshot";
            for line in docker(&[
                "image",
                "ls",
                "--filter",
                snapshot,
                "--format",
                "{{.ID}} {{.Repository}}",
            ])
            .unwrap_or_default()
            .lines()
            {
                let mut parts = line.split_whitespace();
                let (Some(id), Some(repository)) = (parts.next(), parts.next()) else {
                    continue;
                };
                if repository == format!("agentc-snapshot/{profile}") {
                    let _ = docker(&["image", "rm", "--force", id]);
                }
            }
        }
        for volume in &self.volumes {
            let _ = docker(&["volume", "rm", volume]);
        }
        let _ = docker(&["network", "rm", &self.out]);
    }
}

/// The name after `started ` in a launch's output.
fn started(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix("started "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// An agent image whose `claude` idles (`tail -f /dev/null`), built from the test image.
fn agent_image() -> String {
    let base = test_image();
    let _lock = IMAGES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("Dockerfile"),
            format!(
                "FROM {base}\nCOPY claude /bin/claude\n\
                 RUN mkdir -p /home/claude && chown 0:0 /home/claude\n"
            ),
        )
        .unwrap();
        let claude = dir.path().join("claude");
        std::fs::write(&claude, "#!/bin/sh\nexec tail -f /dev/null\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
        let suffix = base.rsplit(':').next().unwrap_or("dev");
        let tag = format!("agentc-test/snapshot-agent:{suffix}-root-home");
        let context = dir.path().to_string_lossy().into_owned();
        docker(&["build", "--pull=false", "-q", "-t", &tag, &context])
            .expect("build the agent image");
        tag
    })
    .clone()
}

/// The `agentc ps --format json` row of `name`.
fn ps_row(lab: &Lab, name: &str) -> serde_json::Value {
    let rows: serde_json::Value =
        serde_json::from_str(&lab.ok(&["ps", "--format", "json"])).expect("ps json");
    rows.as_array()
        .and_then(|rows| rows.iter().find(|row| row["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("{name} not in agentc ps: {rows}"))
}

/// The snapshot `name` from `agentc snapshot ls --format json`.
fn snapshot_row(lab: &Lab, backend: &str, name: &str) -> Option<serde_json::Value> {
    let rows: serde_json::Value = serde_json::from_str(&lab.ok(&[
        "snapshot",
        "ls",
        "--backend",
        backend,
        "--format",
        "json",
    ]))
    .expect("snapshot ls json");
    rows.as_array()?
        .iter()
        .find(|row| row["name"] == name)
        .cloned()
}

#[test]
fn live_layer_tmpfs_and_home_survive_snapshot_rm_restore_through_both_backends() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_layer_tmpfs_and_home_survive_snapshot_rm_restore") {
        return;
    }
    let mut lab = Lab::new("survive");
    for backend in ["cli", "api"] {
        let (profile, path) = lab.profile(backend, true, "", "");
        let out = lab.ok(&["run", &path, "--detach", "--backend", backend]);
        let name = started(&out).remove(0);
        lab.sh(
            backend,
            &name,
            "echo layer > /etc/agentc-layer && echo tmp > /tmp/t1 && mkdir -p '/tmp/a dir' \
             && echo spaced > '/tmp/a dir/f 1' && echo home > /home/claude/h1 && echo dot > /home/claude/.hidden",
        );
        let tag = format!("t-{backend}");
        let out = lab.ok(&["snapshot", "--backend", backend, &name, "--tag", &tag]);
        let snapshot = format!("{profile}:{tag}");
        assert!(out.contains(&format!("snapshot {snapshot} (")), "{out}");
        let row = snapshot_row(&lab, backend, &snapshot).expect("listed by snapshot ls");
        assert_eq!(row["source"], name.as_str(), "{row}");
        assert_eq!(row["secrets"], "none", "{row}");
        let kinds: Vec<String> = row["archives"]
            .as_array()
            .unwrap()
            .iter()
            .map(|archive| {
                format!(
                    "{} {}",
                    archive["kind"].as_str().unwrap(),
                    archive["target"].as_str().unwrap()
                )
            })
            .collect();
        assert!(kinds.contains(&"tmpfs /tmp".to_string()), "{kinds:?}");
        assert!(
            kinds.contains(&"volume /home/claude".to_string()),
            "{kinds:?}"
        );
        let table = lab.ok(&["snapshot", "ls", "--backend", backend]);
        assert!(
            table.starts_with("NAME") && table.contains(&snapshot),
            "{table}"
        );

        // The sandbox and its home volume go; the snapshot brings all three back.
        let original_network = ps_row(&lab, &name)["network"].clone();
        lab.ok(&["rm", "--volumes", &name]);
        let home = format!("{profile}-home");
        assert!(
            docker(&["volume", "inspect", &home]).is_err(),
            "the home volume is gone"
        );
        let out = lab.ok(&["restore", "--backend", backend, &snapshot]);
        let restored = started(&out).remove(0);
        assert_ne!(restored, name, "a fresh name");
        assert!(
            out.contains(&format!("restored {restored} from {snapshot}")),
            "{out}"
        );
        let seen = lab.sh(
            backend,
            &restored,
            "cat /etc/agentc-layer /tmp/t1 '/tmp/a dir/f 1' /home/claude/h1 /home/claude/.hidden",
        );
        assert_eq!(seen, "layer\ntmp\nspaced\nhome\ndot\n", "{backend}");

        // Launched as the profile says: hardened, behind its own egress proxy.
        let row = ps_row(&lab, &restored);
        assert_eq!(row["egress"]["state"], "up", "{row}");
        let inspect = docker(&[
            "inspect",
            "--format",
            "{{json .HostConfig.CapDrop}} {{json .HostConfig.SecurityOpt}} {{.Config.Image}}",
            &restored,
        ])
        .unwrap();
        assert!(inspect.contains("\"ALL\""), "{inspect}");
        assert!(inspect.contains("no-new-privileges"), "{inspect}");
        assert!(
            inspect.contains(&format!("agentc-snapshot/{profile}:{tag}")),
            "{inspect}"
        );
        let network = row["network"].as_str().unwrap_or_default();
        assert!(
            network.ends_with("-egress") && row["network"] != original_network,
            "its own isolated network: {row}"
        );

        // A snapshot of the restored sandbox names its parent.
        lab.ok(&[
            "snapshot",
            "--backend",
            backend,
            &restored,
            "--tag",
            "child",
        ]);
        let child = snapshot_row(&lab, backend, &format!("{profile}:child")).unwrap();
        assert_eq!(child["parent"], snapshot.as_str(), "{child}");

        lab.ok(&["rm", "--volumes", &restored]);
        let out = lab.ok(&[
            "snapshot",
            "rm",
            "--backend",
            backend,
            &snapshot,
            &format!("{profile}:child"),
        ]);
        assert!(
            out.contains(&format!("removed snapshot {snapshot}")),
            "{out}"
        );
        assert!(snapshot_row(&lab, backend, &snapshot).is_none());
        let dir = lab.state().join("snapshots").join(&profile);
        let left: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| d.flatten().collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "archives left: {left:?}");
    }
}

#[test]
fn live_two_forks_diverge() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_two_forks_diverge") {
        return;
    }
    let mut lab = Lab::new("fork");
    let (profile, path) = lab.profile("box", false, "[\"tail\", \"-f\", \"/dev/null\"]", "");
    let name = started(&lab.ok(&["run", &path, "--backend", "api"])).remove(0);
    lab.sh("api", &name, "echo base > /tmp/base && echo base > /base");
    lab.ok(&["snapshot", "--backend", "api", &name, "--tag", "f"]);
    let out = lab.ok(&[
        "fork",
        "--backend",
        "api",
        &format!("{profile}:f"),
        "--count",
        "2",
    ]);
    let forks = started(&out);
    assert_eq!(forks.len(), 2, "{out}");
    assert!(!forks.contains(&name), "{forks:?}");
    for (fork, word) in forks.iter().zip(["one", "two"]) {
        lab.sh(
            "api",
            fork,
            &format!("echo {word} > /tmp/mine && echo {word} > /mine && rm /base"),
        );
    }
    for (fork, word) in forks.iter().zip(["one", "two"]) {
        let seen = lab.sh(
            "api",
            fork,
            "cat /tmp/base /tmp/mine /mine; ls /base 2>&1 || true",
        );
        assert!(
            seen.starts_with(&format!("base\n{word}\n{word}\n")),
            "{fork}: {seen}"
        );
        assert!(seen.contains("No such file"), "{fork}: {seen}");
    }
    // The source is untouched by either fork.
    assert_eq!(
        lab.sh("cli", &name, "cat /base; ls /mine 2>&1 || true")
            .lines()
            .next(),
        Some("base")
    );
}

/// The named volume `container` mounts at `target`.
fn volume_at(container: &str, target: &str) -> String {
    let format = format!(
        "{{{{range .Mounts}}}}{{{{if eq .Destination \"{target}\"}}}}{{{{.Name}}}}{{{{end}}}}{{{{end}}}}"
    );
    docker(&["inspect", "--format", &format, container])
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Forks of a preset's snapshot each get a home of their own, filled from the snapshot
/// (`NAME-home`), so they diverge there too and the profile's home is untouched; `agentc rm`
/// removes a fork's home with it; `--share-home` mounts the profile's, kept as it is, and
/// says so. Through both backends.
#[test]
fn live_forks_of_a_preset_diverge_in_homes_of_their_own_through_both_backends() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_forks_of_a_preset_diverge_in_homes_of_their_own") {
        return;
    }
    let mut lab = Lab::new("homes");
    for backend in ["cli", "api"] {
        let (profile, path) = lab.profile(&format!("h-{backend}"), true, "", "");
        let home = format!("{profile}-home");
        let name = started(&lab.ok(&["run", &path, "--detach", "--backend", backend])).remove(0);
        lab.sh(backend, &name, "echo base > /home/claude/base");
        let snapshot = format!("{profile}:h");
        lab.ok(&["snapshot", "--backend", backend, &name, "--tag", "h"]);
        let out = lab.ok(&["fork", "--backend", backend, &snapshot, "--count", "2"]);
        let forks = started(&out);
        assert_eq!(forks.len(), 2, "{out}");
        for (fork, word) in forks.iter().zip(["one", "two"]) {
            assert_eq!(volume_at(fork, "/home/claude"), format!("{fork}-home"));
            lab.sh(backend, fork, &format!("echo {word} > /home/claude/mine"));
        }
        for (fork, word) in forks.iter().zip(["one", "two"]) {
            let seen = lab.sh(backend, fork, "cat /home/claude/base /home/claude/mine");
            assert_eq!(seen, format!("base\n{word}\n"), "{backend} {fork}");
        }
        // The profile's home is the source's alone.
        assert_eq!(volume_at(&name, "/home/claude"), home);
        let seen = lab.sh(backend, &name, "ls /home/claude/mine 2>&1 || true");
        assert!(seen.contains("No such file"), "{backend}: {seen}");
        // A fork's home goes with it.
        let removed = lab.ok(&["rm", "--backend", backend, &forks[0]]);
        assert!(
            removed.contains(&format!("removed volume {}-home", forks[0])),
            "{removed}"
        );
        assert!(docker(&["volume", "inspect", &format!("{}-home", forks[0])]).is_err());
        // Asked to share, a restore mounts the profile's home and leaves it as it is.
        let shared = lab.agentc(
            &["restore", "--backend", backend, "--share-home", &snapshot],
            &[],
        );
        assert_eq!(shared.status.code(), Some(0), "{}", describe(&shared));
        let restored = started(&text(&shared.stdout)).remove(0);
        assert_eq!(volume_at(&restored, "/home/claude"), home);
        let said = text(&shared.stderr);
        assert!(
            said.contains(&format!(
                "{restored} mounts the profile's home volume {home}, shared with its other \
                 sandboxes (--share-home)"
            )) && said.contains(&format!(
                "volume {home} existed already (the profile's sandboxes share it); kept as it is"
            )),
            "{}",
            describe(&shared)
        );
        for container in [&name, &forks[1], &restored] {
            lab.ok(&["rm", "--backend", backend, container]);
        }
        assert!(docker(&["volume", "inspect", &format!("{}-home", forks[1])]).is_err());
        assert!(
            docker(&["volume", "inspect", &home]).is_ok(),
            "the profile's home stays"
        );
        lab.ok(&["snapshot", "rm", "--backend", backend, &snapshot]);
    }
}

/// A snapshot is named by its tag alone when exactly one snapshot has it (restore, fork,
/// snapshot rm); a tag two snapshots have is refused with both names. Through both backends.
#[test]
fn live_a_bare_tag_names_the_one_snapshot_that_has_it_through_both_backends() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_bare_tag_names_the_one_snapshot_that_has_it") {
        return;
    }
    let mut lab = Lab::new("bare");
    for backend in ["cli", "api"] {
        let tag = format!("bare-{backend}-{}", std::process::id());
        let command = "[\"tail\", \"-f\", \"/dev/null\"]";
        let (first, first_path) = lab.profile(&format!("a-{backend}"), false, command, "");
        let (second, second_path) = lab.profile(&format!("b-{backend}"), false, command, "");
        let mut sources = Vec::new();
        for path in [&first_path, &second_path] {
            let name = started(&lab.ok(&["run", path, "--backend", backend])).remove(0);
            lab.ok(&["snapshot", "--backend", backend, &name, "--tag", &tag]);
            sources.push(name);
        }
        let ambiguous = lab.agentc(&["restore", "--backend", backend, &tag], &[]);
        assert_ne!(ambiguous.status.code(), Some(0), "{}", describe(&ambiguous));
        let said = text(&ambiguous.stderr);
        assert!(
            said.contains(&format!("{tag} names 2 snapshots: "))
                && said.contains(&format!("{first}:{tag}"))
                && said.contains(&format!("{second}:{tag}")),
            "{}",
            describe(&ambiguous)
        );
        // Once one of them is gone, the tag names the other.
        lab.ok(&[
            "snapshot",
            "rm",
            "--backend",
            backend,
            &format!("{first}:{tag}"),
        ]);
        let out = lab.ok(&["restore", "--backend", backend, &tag]);
        let restored = started(&out).remove(0);
        assert!(
            out.contains(&format!("restored {restored} from {second}:{tag}")),
            "{out}"
        );
        lab.ok(&["rm", "--backend", backend, &restored]);
        for source in &sources {
            lab.ok(&["rm", "--backend", backend, source]);
        }
        let removed = lab.ok(&["snapshot", "rm", "--backend", backend, &tag]);
        assert!(
            removed.contains(&format!("removed snapshot {second}:{tag}")),
            "{removed}"
        );
    }
}

/// The names of the containers, networks and volumes labelled for `profile`, sorted.
fn left_of(profile: &str) -> Vec<String> {
    let filter = format!("label=io.agentc.profile={profile}");
    let mut left: Vec<String> = [
        vec!["ps", "-a", "--format", "{{.Names}}", "--filter", &filter],
        vec![
            "network",
            "ls",
            "--format",
            "{{.Name}}",
            "--filter",
            &filter,
        ],
        vec!["volume", "ls", "--format", "{{.Name}}", "--filter", &filter],
    ]
    .iter()
    .flat_map(|args| {
        docker(args)
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    })
    .collect();
    left.sort();
    left
}

#[test]
fn live_restore_name_names_the_sandbox_and_its_companion_through_both_backends() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_restore_name_names_the_sandbox_and_its_companion") {
        return;
    }
    let mut lab = Lab::new("named");
    for backend in ["cli", "api"] {
        let (profile, path) = lab.profile(backend, false, "[\"tail\", \"-f\", \"/dev/null\"]", "");
        let source = started(&lab.ok(&["run", &path, "--backend", backend])).remove(0);
        lab.sh(backend, &source, "echo kept > /kept && echo tmp > /tmp/t");
        lab.ok(&["snapshot", "--backend", backend, &source, "--tag", "n"]);
        let snapshot = format!("{profile}:n");
        lab.ok(&["rm", &source]);
        assert!(left_of(&profile).is_empty(), "{:?}", left_of(&profile));

        // The launch a restore makes passes `agentc verify` of the profile with the snapshot's
        // image (the allowlisted host is not probed: nothing answers on the outside network).
        let image = format!("agentc-snapshot/{snapshot}");
        let verify = lab.agentc(
            &[
                "verify",
                &path,
                "--backend",
                backend,
                "--image",
                &image,
                "--egress-probe",
                "none",
            ],
            &[],
        );
        assert_eq!(verify.status.code(), Some(0), "{}", describe(&verify));
        let table = text(&verify.stdout);
        assert!(table.contains(" 0 failed"), "{table}");
        assert!(table.contains("egress.host-path"), "{table}");
        assert!(left_of(&profile).is_empty(), "{:?}", left_of(&profile));

        // Named as asked, with its egress companion named after it.
        let name = format!("{}-restored-{backend}", lab.id);
        let out = lab.ok(&["restore", "--backend", backend, &snapshot, "--name", &name]);
        assert_eq!(started(&out), std::slice::from_ref(&name), "{out}");
        assert!(
            out.contains(&format!("restored {name} from {snapshot}")),
            "{out}"
        );
        assert_eq!(lab.sh(backend, &name, "cat /kept /tmp/t"), "kept\ntmp\n");
        let row = ps_row(&lab, &name);
        assert_eq!(row["egress"]["state"], "up", "{row}");
        assert_eq!(row["network"], format!("{name}-egress").as_str(), "{row}");
        assert_eq!(
            docker(&[
                "inspect",
                "--format",
                "{{.State.Running}}",
                &format!("{name}-egress-proxy")
            ])
            .unwrap(),
            "true"
        );
        let ps = lab.ok(&["ps"]);
        assert!(ps.contains(&name), "{ps}");

        // The name again: refused as run's is, nothing created.
        let before = left_of(&profile);
        let again = lab.agentc(
            &["restore", "--backend", backend, &snapshot, "--name", &name],
            &[],
        );
        assert_eq!(again.status.code(), Some(125), "{}", describe(&again));
        let stderr = text(&again.stderr);
        assert!(
            stderr.contains(&format!("the container name {name} is already in use")),
            "{stderr}"
        );
        assert!(stderr.contains("\n  hint: "), "{stderr}");
        assert_eq!(left_of(&profile), before);
        // Not a container name: refused as run refuses it (exit 65), before anything is created.
        let bad = lab.agentc(
            &[
                "restore",
                "--backend",
                backend,
                &snapshot,
                "--name=-bad/name",
            ],
            &[],
        );
        assert_eq!(bad.status.code(), Some(65), "{}", describe(&bad));
        let stderr = text(&bad.stderr);
        assert!(
            stderr.contains("--name") && stderr.contains("is not a container name"),
            "{stderr}"
        );
        assert_eq!(left_of(&profile), before);

        // A fork under a name: N-1 to N-COUNT, as `run --name N --count K`.
        let fork = format!("{}-fork-{backend}", lab.id);
        let out = lab.ok(&[
            "fork",
            "--backend",
            backend,
            &snapshot,
            "--name",
            &fork,
            "--count",
            "2",
        ]);
        let forks = [format!("{fork}-1"), format!("{fork}-2")];
        assert_eq!(started(&out), forks, "{out}");
        for fork in &forks {
            assert_eq!(
                ps_row(&lab, fork)["network"],
                format!("{fork}-egress").as_str()
            );
        }
        // One more than there are: the taken names are refused at once, N-3 is not made.
        let before = left_of(&profile);
        let more = lab.agentc(
            &[
                "fork",
                "--backend",
                backend,
                &snapshot,
                "--name",
                &fork,
                "--count",
                "3",
            ],
            &[],
        );
        assert_eq!(more.status.code(), Some(125), "{}", describe(&more));
        let stderr = text(&more.stderr);
        assert!(
            stderr.contains(&format!("{fork}-1, {fork}-2 are already in use")),
            "{stderr}"
        );
        assert_eq!(left_of(&profile), before);

        // The snapshot its forks run from: agentc names them (issue 40), and keeps it.
        let in_use = lab.agentc(&["snapshot", "rm", "--backend", backend, &snapshot], &[]);
        assert_eq!(in_use.status.code(), Some(1), "{}", describe(&in_use));
        let stderr = text(&in_use.stderr);
        assert!(
            stderr.contains(&format!("snapshot {snapshot} is the image of "))
                && stderr.contains(&format!("{} (running)", forks[0]))
                && stderr.contains("hint: `agentc rm "),
            "{stderr}"
        );
        assert!(lab.ok(&["snapshot", "ls"]).contains(&snapshot));

        // rm leaves nothing of any of them.
        lab.ok(&["rm", &name, &forks[0], &forks[1]]);
        assert!(left_of(&profile).is_empty(), "{:?}", left_of(&profile));
        lab.ok(&["snapshot", "rm", "--backend", backend, &snapshot]);
    }
}

#[test]
fn live_a_paused_sandbox_runs_nothing_and_resumes_where_it_was() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_a_paused_sandbox_runs_nothing_and_resumes") {
        return;
    }
    let mut lab = Lab::new("pause");
    // Written whole by a rename: a pause between a truncate and its write would show an
    // empty file.
    let counter = "[\"sh\", \"-c\", \"i=0; while :; do i=$((i+1)); echo $i > /counter.new; \
                   mv /counter.new /counter; sleep 0.1; done\"]";
    let (_, path) = lab.profile("box", false, counter, "");
    let name = started(&lab.ok(&["run", &path, "--backend", "cli"])).remove(0);
    for backend in ["cli", "api"] {
        let read = || {
            lab.sh(backend, &name, "cat /counter")
                .trim()
                .parse::<u64>()
                .unwrap()
        };
        let out = lab.ok(&["pause", "--backend", backend, &name]);
        assert_eq!(out.trim(), format!("paused {name}"));
        let row = ps_row(&lab, &name);
        assert_eq!(row["state"], "paused", "{row}");
        assert!(lab.ok(&["ps"]).contains("(Paused)"));
        // Frozen: nothing runs, not even an exec.
        let refused = lab.agentc(&["exec", "--backend", backend, &name, "true"], &[]);
        assert_ne!(refused.status.code(), Some(0), "{}", describe(&refused));
        // agentc's own words, alike through both backends (issue 40), not the engine's.
        assert_eq!(
            text(&refused.stderr).trim(),
            format!("error: container {name} is paused\n  hint: `agentc resume {name}` resumes it"),
            "{backend}"
        );
        // Read past the freezer: docker cp reaches the writable layer of a paused container.
        let peek = || {
            let dir = tempfile::tempdir().unwrap();
            let host = dir.path().join("counter");
            docker(&["cp", &format!("{name}:/counter"), &host.to_string_lossy()]).unwrap();
            std::fs::read_to_string(&host)
                .unwrap()
                .trim()
                .parse::<u64>()
                .unwrap()
        };
        let before = peek();
        std::thread::sleep(Duration::from_millis(3000));
        assert_eq!(peek(), before, "{backend}: the counter moved while paused");
        assert!(lab
            .ok(&["pause", "--backend", backend, &name])
            .contains("already paused"));
        lab.ok(&["resume", "--backend", backend, &name]);
        let after = read();
        // Resumed where it was: 3 s of running would have counted about 30 more.
        assert!(
            after >= before && after < before + 15,
            "{backend}: {before} -> {after}"
        );
        std::thread::sleep(Duration::from_millis(300));
        assert!(read() > after, "{backend}: the counter runs again");
        assert!(lab
            .ok(&["resume", "--backend", backend, &name])
            .contains("not paused"));
    }
}

#[test]
fn live_secrets_are_refused_without_allow_secrets_and_never_stored() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_secrets_are_refused_without_allow_secrets") {
        return;
    }
    let mut lab = Lab::new("secret");
    let secret = format!("sk-ant-agentc-snapshot-test-{}", std::process::id());
    let key = [("AGENTC_T_SNAP_KEY", secret.as_str())];
    let provider = "[provider]\nkind = \"anthropic\"\napi_key_env = \"AGENTC_T_SNAP_KEY\"\n";
    // Without the egress proxy the key is passed as an environment value.
    let (profile, path) = lab.profile(
        "env",
        true,
        "",
        &format!("[egress]\nmode = \"deny\"\n\n{provider}"),
    );
    let out = lab.agentc(&["run", &path, "--detach", "--backend", "api"], &key);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let name = started(&text(&out.stdout)).remove(0);
    assert!(
        lab.sh("api", &name, "env").contains(&secret),
        "the key is an environment value"
    );
    for backend in ["cli", "api"] {
        let refused = lab.agentc(
            &["snapshot", "--backend", backend, &name, "--tag", "s"],
            &[],
        );
        assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
        let stderr = text(&refused.stderr);
        assert!(
            stderr.contains("AGENTC_T_SNAP_KEY") && stderr.contains("--allow-secrets"),
            "{stderr}"
        );
        assert!(!stderr.contains(&secret), "{stderr}");
        assert!(docker(&["image", "inspect", &format!("agentc-snapshot/{profile}:s")]).is_err());
    }
    // --allow-secrets takes it, says so in its labels, and blanks the value in its config.
    lab.ok(&[
        "snapshot",
        "--backend",
        "api",
        &name,
        "--tag",
        "allowed",
        "--allow-secrets",
    ]);
    let row = snapshot_row(&lab, "api", &format!("{profile}:allowed")).unwrap();
    assert_eq!(row["secrets"], "allowed:AGENTC_T_SNAP_KEY", "{row}");
    let image = format!("agentc-snapshot/{profile}:allowed");
    let env = docker(&[
        "image",
        "inspect",
        "--format",
        "{{json .Config.Env}}",
        &image,
    ])
    .unwrap();
    assert!(
        env.contains("\"AGENTC_T_SNAP_KEY=\"") && !env.contains(&secret),
        "{env}"
    );

    // Behind the egress proxy the proxy holds the key: only a placeholder is inside, and
    // neither the image nor the archives hold the key.
    // The provider's host is allowed, so the proxy can set its key there (issue 36).
    let egress = format!(
        "[egress]\nhosts = [\"allowed.test\", \"api.anthropic.com\"]\noutside_network = \"{}\"\n\n{provider}",
        lab.out
    );
    let (profile, path) = lab.profile("proxied", true, "", &egress);
    let out = lab.agentc(&["run", &path, "--detach", "--backend", "api"], &key);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let name = started(&text(&out.stdout)).remove(0);
    let env = lab.sh("api", &name, "env");
    assert!(
        env.contains("AGENTC_T_SNAP_KEY=sk-ant-") && !env.contains(&secret),
        "{env}"
    );
    lab.sh(
        "api",
        &name,
        "env > /tmp/env && env > /home/claude/env && env > /etc/env",
    );
    for backend in ["cli", "api"] {
        let tag = format!("p-{backend}");
        lab.ok(&["snapshot", "--backend", backend, &name, "--tag", &tag]);
        let row = snapshot_row(&lab, backend, &format!("{profile}:{tag}")).unwrap();
        assert_eq!(row["secrets"], "none", "{row}");
        let image = format!("agentc-snapshot/{profile}:{tag}");
        let saved = Command::new("docker")
            .args(["save", &image])
            .output()
            .expect("docker save");
        assert!(saved.status.success() && saved.stdout.len() > 1000);
        assert!(
            !contains(&saved.stdout, secret.as_bytes()),
            "{backend}: the key is in the image"
        );
        let dir = lab.state().join("snapshots").join(&profile).join(&tag);
        let mut archives = 0;
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let bytes = std::fs::read(entry.path()).unwrap();
            assert!(
                !contains(&bytes, secret.as_bytes()),
                "{}",
                entry.path().display()
            );
            archives += usize::from(contains(&bytes, b"AGENTC_T_SNAP_KEY=sk-ant-"));
        }
        assert_eq!(archives, 2, "the placeholder is in both archives");
    }
    // Restored, it is launched as the profile says: a fresh placeholder, the key in its proxy.
    let out = lab.agentc(
        &["restore", "--backend", "api", &format!("{profile}:p-api")],
        &key,
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let restored = started(&text(&out.stdout)).remove(0);
    let old = lab.sh("api", &restored, "grep AGENTC_T_SNAP_KEY /home/claude/env");
    let new = lab.sh("api", &restored, "env | grep AGENTC_T_SNAP_KEY");
    assert!(
        new.starts_with("AGENTC_T_SNAP_KEY=sk-ant-") && new != old,
        "{old} / {new}"
    );
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

#[test]
fn memory_is_refused_on_docker_with_its_hint() {
    let _turn = crate::common::turn(file!());
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["snapshot", "--memory", "any-sandbox"][..],
        &["restore", "--memory", "p:t"][..],
        &["fork", "--memory", "p:t"][..],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_agentc"))
            .args(args)
            .env("AGENTC_STATE_DIR", dir.path())
            .env_remove("AGENTC_ENGINE")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(65),
            "{args:?}: {}",
            describe(&output)
        );
        let stderr = text(&output.stderr);
        for word in ["Docker", "Podman", "CRIU", "checkpoint --export", "gVisor"] {
            assert!(stderr.contains(word), "{args:?}: {word}: {stderr}");
        }
    }
}

/// Runs `podman ARGS`: trimmed stdout, or the error with stderr.
fn podman(args: &[&str]) -> Result<String, String> {
    common::engine_cli("podman", args)
}

/// Why memory snapshots cannot work here (`None`: they must): the test's own probe, the
/// conditions agentc's probe checks (rootful Podman with runc, CRIU >= 4.1 whose `criu
/// check` passes).
fn memory_unavailable() -> Option<String> {
    let info = match podman(&[
        "info",
        "--format",
        "{{.Host.Security.Rootless}} {{.Host.OCIRuntime.Name}}",
    ]) {
        Ok(info) => info,
        Err(error) => return Some(error),
    };
    if info != "false runc" {
        return Some(format!("podman is not rootful with runc: {info}"));
    }
    let criu = |args: &[&str]| Command::new("criu").args(args).output();
    match criu(&["--version"]) {
        Ok(output) => {
            let version = text(&output.stdout);
            let ok = version
                .lines()
                .find_map(|line| line.strip_prefix("Version: "))
                .and_then(|v| {
                    let mut parts = v.trim().split('.').map(|p| p.parse::<u32>().ok());
                    Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
                })
                .is_some_and(|found| found >= (4, 1));
            if !ok {
                return Some(format!("criu is older than 4.1: {version}"));
            }
        }
        Err(error) => return Some(format!("no criu: {error}")),
    }
    match criu(&["check"]) {
        Ok(output) if output.status.success() => None,
        Ok(output) => Some(format!("`criu check` fails: {}", describe(&output))),
        Err(error) => Some(format!("cannot run criu check: {error}")),
    }
}

/// Removes the memory test's containers and snapshot image on drop.
struct PodmanLab {
    names: Vec<String>,
    image: String,
}

impl Drop for PodmanLab {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = podman(&["rm", "--force", "--time=0", name]);
        }
        let _ = podman(&["image", "rm", "--force", &self.image]);
    }
}

#[test]
fn live_memory_a_counter_keeps_counting_after_snapshot_rm_restore_on_podman() {
    let _turn = crate::common::turn(file!());
    let test = "live_memory_a_counter_keeps_counting_after_snapshot_rm_restore_on_podman";
    let required = std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() == Ok("1");
    if let Err(reason) = podman(&["info", "--format", "{{.Host.OCIRuntime.Name}}"]) {
        assert!(
            !required,
            "{test}: AGENTC_REQUIRE_DOCKER=1 but no Podman: {reason}"
        );
        eprintln!("skipping {test}: no Podman ({reason})");
        return;
    }
    if !require_daemon(test) {
        return;
    }
    // The busybox test image, built by Docker, copied into Podman.
    let image = test_image();
    if podman(&["image", "exists", &image]).is_err() {
        let script = format!("docker save {image} | podman load -q");
        let output = Command::new("sh").args(["-c", &script]).output().unwrap();
        assert!(output.status.success(), "{}", describe(&output));
    }
    let dir = tempfile::tempdir().unwrap();
    let id = format!("agentc-t-snap-{}-mem", std::process::id());
    let profile = dir.path().join("mem.toml");
    // Root uid (the image's own user): CRIU restores a non-root process's RLIMIT_NOFILE only
    // with CAP_SYS_RESOURCE, which some hosts' container engines lack (docs/snapshots.md).
    std::fs::write(
        &profile,
        format!(
            "name = \"{id}\"\nagent = \"custom\"\n\n[image]\nref = \"{image}\"\ncommand = \
             [\"sh\", \"-c\", \"i=0; while true; do i=$((i+1)); echo $i > /tmp/count; sleep \
             0.1; done\"]\n"
        ),
    )
    .unwrap();
    let (name, restored) = (format!("{id}-a"), format!("{id}-b"));
    let _lab = PodmanLab {
        names: vec![name.clone(), restored.clone()],
        image: format!("agentc-snapshot/{id}:m1"),
    };
    let agentc = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_agentc"))
            .args(["--engine", "podman"])
            .args(args)
            .env("AGENTC_STATE_DIR", dir.path().join("state"))
            .stdin(Stdio::null())
            .output()
            .expect("agentc runs")
    };
    let ok = |args: &[&str]| {
        let output = agentc(args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            describe(&output)
        );
        text(&output.stdout)
    };
    let profile = profile.to_string_lossy().into_owned();
    ok(&["run", "--detach", "--name", &name, &profile]);
    let count = |name: &str| -> u64 {
        let out = ok(&["exec", name, "cat", "/tmp/count"]);
        out.trim()
            .parse()
            .unwrap_or_else(|_| panic!("count of {name}: {out:?}"))
    };
    let mut before = 0;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(100));
        let out = agentc(&["exec", &name, "cat", "/tmp/count"]).stdout;
        before = text(&out).trim().parse().unwrap_or(0);
        if before >= 20 {
            break;
        }
    }
    assert!(
        before >= 20,
        "the counter of {name} does not count: {before}"
    );

    if let Some(why) = memory_unavailable() {
        eprintln!("{test}: memory snapshots cannot work here ({why}): checking their refusal");
        let output = agentc(&["snapshot", &name, "--memory", "--tag", "m1"]);
        assert_eq!(output.status.code(), Some(65), "{}", describe(&output));
        let stderr = text(&output.stderr);
        for word in [
            "--memory",
            "CRIU >= 4.1",
            "rootful",
            "runc",
            "setup-criu.sh",
        ] {
            assert!(stderr.contains(word), "{word}: {stderr}");
        }
        return;
    }
    let inspect = |name: &str| {
        podman(&[
            "inspect",
            name,
            "--format",
            "{{.Config.User}}|{{.HostConfig.ReadonlyRootfs}}|{{.HostConfig.CapDrop}}|\
             {{.HostConfig.SecurityOpt}}|{{.HostConfig.Memory}}|{{.HostConfig.PidsLimit}}|\
             {{.HostConfig.Tmpfs}}",
        ])
        .unwrap()
    };
    let hardening = inspect(&name);
    assert!(hardening.contains("no-new-privileges"), "{hardening}");
    let said = ok(&["snapshot", &name, "--memory", "--tag", "m1"]);
    assert!(said.contains("memory checkpoint"), "{said}");
    let snapshotted = count(&name);
    assert!(
        snapshotted >= before,
        "{name} went on: {before} -> {snapshotted}"
    );
    ok(&["rm", &name]);
    let said = ok(&[
        "restore",
        &format!("{id}:m1"),
        "--memory",
        "--name",
        &restored,
    ]);
    assert!(said.contains("with its memory"), "{said}");
    // The shell's counter goes on from where it was (a relaunch would start again at 1).
    let first = count(&restored);
    assert!(
        first >= before,
        "{restored} restarted its counter: {first} < {before}"
    );
    std::thread::sleep(Duration::from_millis(600));
    let later = count(&restored);
    assert!(
        later > first,
        "{restored} does not count: {first} -> {later}"
    );
    assert_eq!(inspect(&restored), hardening, "the restore's confinement");
    ok(&["rm", &restored]);
    ok(&["snapshot", "rm", &format!("{id}:m1")]);
}
