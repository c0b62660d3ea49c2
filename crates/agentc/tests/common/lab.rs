//! The lab of the live behaviour matrices (`faults.rs`, `command_matrix.rs`): a test's own
//! `--internal` outside network, home volume, profiles and temporary directory, all removed on
//! drop; `agentc` run in it (to its end, or spawned to be signalled); what is left labelled
//! with a profile. A lab is on one engine (`docker`, or `podman`: agentc runs with
//! `AGENTC_ENGINE` set to it, and what is left is listed by that engine's command).

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{engine_cli, test_image};

/// A test's outside network, home volume and profiles; all of it removed on drop.
pub struct Lab {
    /// The engine the lab's objects are on and agentc runs with: `docker` or `podman`.
    pub engine: &'static str,
    /// `agentc-t-FILE-PID-TEST`: the prefix of everything the lab names.
    pub id: String,
    /// The outside network (`--internal`: nothing leaves the machine).
    pub out: String,
    /// The home volume of the lab's agent profiles.
    pub home: String,
    /// Where profiles, files and agentc's stderr are written; agentc runs here.
    pub dir: tempfile::TempDir,
    profiles: Vec<String>,
}

impl Lab {
    /// A lab of test file `file`, test `test` on Docker: its outside network and home volume
    /// created.
    pub fn new(file: &str, test: &str) -> Lab {
        Lab::on("docker", file, test)
    }

    /// A lab of test file `file`, test `test` on `engine` (`docker` or `podman`).
    pub fn on(engine: &'static str, file: &str, test: &str) -> Lab {
        let id = format!("agentc-t-{file}-{}-{test}", std::process::id());
        let out = format!("{id}-out");
        let home = format!("{id}-home");
        engine_cli(engine, &["network", "create", "--internal", &out])
            .expect("create the outside network");
        engine_cli(engine, &["volume", "create", &home]).expect("create the home volume");
        Lab {
            engine,
            id,
            out,
            home,
            dir: tempfile::tempdir().expect("tempdir"),
            profiles: Vec::new(),
        }
    }

    /// Writes the profile `{id}-{name}` with `body` after its name line; removed with the lab.
    /// Returns (its name, its path).
    pub fn write_profile(&mut self, name: &str, body: &str) -> (String, String) {
        let profile = format!("{}-{name}", self.id);
        let path = self.dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, format!("name = \"{profile}\"\n{body}")).expect("write the profile");
        self.profiles.push(profile.clone());
        (profile, path.to_string_lossy().into_owned())
    }

    /// Writes a profile behind the egress proxy: a Claude Code run (attached) or a custom
    /// sandbox idling in the busybox test image (detached). Returns (its name, its path).
    pub fn profile(&mut self, name: &str, attached: bool) -> (String, String) {
        let agent = if attached {
            format!("agent = \"claude-code\"\nhome_volume = \"{}\"\n", self.home)
        } else {
            format!(
                "agent = \"custom\"\n\n[image]\nref = \"{}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n",
                test_image()
            )
        };
        let body = format!(
            "{agent}\n[egress]\nhosts = [\"allowed.test\"]\noutside_network = \"{}\"\n",
            self.out
        );
        self.write_profile(name, &body)
    }

    /// Everything labelled with `profile`: containers, networks and volumes (the lab's home
    /// volume, which the profile keeps, aside), in that order, each sorted.
    pub fn left(&self, profile: &str) -> Vec<String> {
        let filter = format!("label=io.agentc.profile={profile}");
        let list = |args: &[&str]| -> Vec<String> {
            let mut names: Vec<String> = self
                .cli(args)
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .filter(|name| !name.is_empty() && *name != self.home)
                .collect();
            names.sort();
            names
        };
        let mut left = list(&["ps", "-a", "--format", "{{.Names}}", "--filter", &filter]);
        left.extend(
            list(&[
                "network",
                "ls",
                "--format",
                "{{.Name}}",
                "--filter",
                &filter,
            ])
            .into_iter()
            .map(|name| format!("network {name}")),
        );
        left.extend(
            list(&["volume", "ls", "--format", "{{.Name}}", "--filter", &filter])
                .into_iter()
                .map(|name| format!("volume {name}")),
        );
        left
    }

    /// Waits up to `limit` for nothing labelled with `profile` to be left; what is left then.
    pub fn settled(&self, profile: &str, limit: Duration) -> Vec<String> {
        let started = Instant::now();
        loop {
            let left = self.left(profile);
            if left.is_empty() || started.elapsed() > limit {
                return left;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Runs the lab's engine's command (`docker ARGS` or `podman ARGS`).
    pub fn cli(&self, args: &[&str]) -> Result<String, String> {
        engine_cli(self.engine, args)
    }

    /// `agentc ARGS` in the lab's directory, stdin closed, with `env`, to its end.
    pub fn agentc(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_agentc"))
            .args(args)
            .env("AGENTC_ENGINE", self.engine)
            .envs(env.iter().copied())
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("agentc runs")
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Podman's `rm --force` waits for the stop timeout first: `--time=0` kills at once.
        let remove: &[&str] = if self.engine == "podman" {
            &["rm", "--force", "--time=0"]
        } else {
            &["rm", "--force"]
        };
        for profile in &self.profiles {
            let filter = format!("label=io.agentc.profile={profile}");
            let containers = self
                .cli(&["ps", "-aq", "--filter", &filter])
                .unwrap_or_default();
            for container in containers.split_whitespace() {
                let _ = self.cli(&[remove, &[container]].concat());
            }
            let networks = self
                .cli(&["network", "ls", "-q", "--filter", &filter])
                .unwrap_or_default();
            for network in networks.split_whitespace() {
                let _ = self.cli(&["network", "rm", network]);
            }
            let volumes = self
                .cli(&["volume", "ls", "-q", "--filter", &filter])
                .unwrap_or_default();
            for volume in volumes.split_whitespace() {
                let _ = self.cli(&["volume", "rm", "--force", volume]);
            }
        }
        let _ = self.cli(&["network", "rm", &self.out]);
        let _ = self.cli(&["volume", "rm", "--force", &self.home]);
    }
}

/// `agentc ARGS` in the lab's directory, stdin closed, with `env`; its stderr written to a
/// file of the lab, so that a test can wait for a line while it runs.
pub struct Launch {
    child: Child,
    stderr: PathBuf,
}

impl Launch {
    /// Spawns agentc; `tag` names its stderr file (unique within the lab).
    pub fn spawn(lab: &Lab, args: &[&str], env: &[(&str, &str)], tag: &str) -> Launch {
        let stderr = lab.dir.path().join(format!("{tag}.stderr"));
        let file = std::fs::File::create(&stderr).expect("stderr file");
        let child = Command::new(env!("CARGO_BIN_EXE_agentc"))
            .args(args)
            .env("AGENTC_ENGINE", lab.engine)
            .envs(env.iter().copied())
            .current_dir(lab.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(file)
            .spawn()
            .expect("agentc runs");
        Launch { child, stderr }
    }

    /// What agentc wrote on stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits (up to 150 s) until agentc printed `line`, or ended.
    pub fn wait_for(&mut self, line: &str) -> bool {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(150) {
            if self.stderr().contains(line) {
                return true;
            }
            if self.child.try_wait().ok().flatten().is_some() {
                return self.stderr().contains(line);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// Sends `signal` to agentc.
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) on our own child's pid, which has not been reaped.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, signal);
        }
    }

    /// Waits for agentc to end: (its exit code, or 128 + the signal that ended it; stderr).
    pub fn end(self) -> (i32, String) {
        use std::os::unix::process::ExitStatusExt;
        let stderr = self.stderr.clone();
        let output = self.child.wait_with_output().expect("agentc ends");
        let code = output
            .status
            .code()
            .or_else(|| output.status.signal().map(|signal| 128 + signal))
            .unwrap_or(-1);
        (code, std::fs::read_to_string(stderr).unwrap_or_default())
    }
}

/// The class of an interrupted command's message.
pub fn interrupted_class(stderr: &str) -> &'static str {
    if stderr.contains("error: interrupted by SIGINT") {
        "interrupted by SIGINT"
    } else if stderr.contains("error: interrupted by SIGTERM") {
        "interrupted by SIGTERM"
    } else {
        "other"
    }
}
