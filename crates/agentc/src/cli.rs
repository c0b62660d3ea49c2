//! The command-line surface: clap definitions only, one struct per subcommand.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub mod complete;
mod egress_log;
mod egress_proxy;
mod image;
mod lifecycle;
mod pool;
mod probe;
mod snapshot;
mod sub;
mod verify;
pub use egress_log::{EgressCommand, EgressLogArgs, EgressLogFormat};
pub use egress_proxy::{
    EgressFetchCaArgs, EgressHealthArgs, EgressImageArgs, EgressProxyCommand, EgressServeArgs,
};
pub use image::{ImageCommand, ImageContextArgs};
pub use lifecycle::{
    AgentArg, ApplyArgs, CompletionsArgs, DoctorArgs, EgressArg, InitArgs, LockArgs, PlanArgs,
    RollbackArgs, ShellArg,
};
pub use pool::{PoolCommand, PoolDrainArgs, PoolFillArgs, PoolFormat, PoolLsArgs, PoolMode};
pub use probe::{EgressHostPathArgs, EgressProbeArgs};
pub use snapshot::{
    ForkArgs, PauseArgs, RestoreArgs, SnapshotArgs, SnapshotCommand, SnapshotLsArgs,
    SnapshotRmArgs, TakeArgs,
};
pub use sub::Sub;
pub use verify::{VerifyArgs, VerifyBackendArg};

/// Turns a declarative sandbox profile into a hardened container launch for AI agents.
#[derive(Debug, Parser)]
#[command(
    name = "agentc",
    version,
    after_help = "Examples:\n  agentc validate fixtures/valid/claude-minimal.toml\n  agentc render fixtures/valid/claude-minimal.toml --backend cli --format shell\n  agentc explain fixtures/valid/sandbox-pentest.toml\n  agentc run fixtures/valid/claude-minimal.toml --workspace ~/src/app\n  agentc verify fixtures/valid/sandbox-minimal.toml\n\nExit status: 0 success, 1 `verify` found a mismatch or `rm` refused a container, 2 usage error, 65 invalid profile or unlaunchable request, 66 unreadable profile file, 125 docker failed before the container ran (daemon unreachable, image missing, pull failed, required secret unset), 130/143 interrupted by SIGINT/SIGTERM (the container was removed). `run` and `seed` otherwise exit with the container's own exit code (137: killed, for example by the out-of-memory killer)."
)]
pub struct Cli {
    /// Log each step on stderr (what is read, resolved, run or sent to the daemon). Secrets
    /// appear by name only, never by value.
    #[arg(long, short = 'v', global = true)]
    pub verbose: bool,
    /// The container engine: `docker` (the default) or `podman` (its command line, or with
    /// `--backend api` its Docker-compatible socket). Default: `AGENTC_ENGINE`, else docker.
    #[arg(long, global = true, value_parser = lifecycle::engine_value())]
    pub engine: Option<agentc_policy::Engine>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Check that a profile is valid and can be launched here.
    #[command(after_help = "Example:\n  agentc validate fixtures/valid/claude-minimal.toml")]
    Validate(Sub<ProfileArgs>),
    /// Print the JSON Schema of profiles, for editors.
    #[command(after_help = "Example:\n  agentc schema > agentc-profile.schema.json")]
    Schema,
    /// Explain a launch: every value with where it came from, and what widens the sandbox.
    #[command(
        after_help = "Examples:\n  agentc explain fixtures/valid/sandbox-pentest.toml --kind run\n  agentc explain fixtures/valid/claude-minimal.toml --format json --deny high\n  agentc explain fixtures/valid/sandbox-minimal.toml --backend k8s\n\nThe explanation ends with the security findings: a stable code, a severity and the profile field that causes each. With --deny LEVEL the command still prints everything, then exits 1 when any finding is at or above LEVEL (for CI of your own repositories). With --backend k8s it explains the Kubernetes rendering instead: its objects, its approximations of the Docker launch and the duties it leaves to the cluster (exit 65 with every refused field when it cannot be rendered)."
    )]
    Explain(Sub<ExplainArgs>),
    /// Render a launch as docker argv, a shell line, or an Engine API body, without running it.
    #[command(
        after_help = "Examples:\n  agentc render fixtures/valid/claude-minimal.toml --backend cli --format shell\n  agentc render fixtures/valid/claude-minimal.toml --backend api --format json --workspace ~/src/app\n  agentc render fixtures/valid/claude-seeds.toml --kind seed --seed-target /home/claude/.claude/settings.json\n  agentc render fixtures/valid/sandbox-minimal.toml --backend k8s --format yaml --k8s-kind sandbox --namespace agents | kubectl apply -f -\n\nThe k8s backend renders NetworkPolicies, PersistentVolumeClaims, the egress proxy and the workload (a Pod or a Sandbox), restricted by Pod Security; what it cannot render faithfully is refused by field (exit 65), and `agentc explain --backend k8s` lists its approximations and cluster duties."
    )]
    Render(Sub<RenderArgs>),
    /// Launch a profile's agent (or a custom profile's long-lived sandbox) and wait for it.
    #[command(
        after_help = "Examples:\n  agentc run fixtures/valid/claude-minimal.toml --workspace ~/src/app\n  agentc run fixtures/valid/codex-minimal.toml --backend api -- --help\n  agentc run fixtures/valid/sandbox-pentest.toml    # custom agents start detached\n  agentc run fixtures/valid/claude-minimal.toml --pull --image registry.example:5000/claude-code:1\n  agentc run fixtures/valid/sandbox-minimal.toml --backend api --detach --count 32 --jobs 8\n\nAn attached run exits with the container's exit code. A detached launch (custom agents, or --detach) prints the container's name and the addresses its published ports are reachable at, then exits 0; `agentc ps` lists it and `agentc rm` removes it. The cli backend runs the `docker` command `agentc render` prints; the api backend talks to the daemon directly. Neither pulls an image unless --pull is given: then a missing image is pulled before anything is created (`docker pull` for the cli backend, the Engine API for the api backend), with progress on stderr; a failed pull exits 125. --pull sends no registry credentials (those of `docker login` are not read): pull a private image with `docker pull` first. Before it launches, each high or critical finding of the launch (those `agentc explain` lists) is printed on stderr, one line each (--no-warnings hides them). --count N starts N detached copies named NAME-1 to NAME-N, --jobs at a time through either backend (the api backend on one daemon connection pool); if any copy fails, none is left running: the started ones are removed and every failure is named."
    )]
    Run(Sub<RunArgs>),
    /// Copy a seed mount's source into the profile's home volume (copy-once).
    #[command(
        after_help = "Examples:\n  agentc seed fixtures/valid/claude-seeds.toml --target /home/claude/.claude/settings.json\n  agentc seed fixtures/valid/claude-seeds.toml --all\n\nAn identical target is left alone; a different one fails with `on_conflict = \"keep\"` (exit 1, the helper says why) and is replaced, after a `.agent-containers.bak` backup, with `on_conflict = \"replace\"`. With --all the seed mounts run in profile order and the first failure stops."
    )]
    Seed(Sub<SeedArgs>),
    /// Build the profile's image from its `[image] build_context` with `docker build`.
    #[command(
        after_help = "Examples:\n  agentc build fixtures/valid/sandbox-build.toml --image agentc/sandbox:dev\n  agentc build claude-dev.toml --build-arg AGENT_VERSION=2.0.14\n\nA profile of an agent preset without `[image] build_context` builds agentc's bundled image of the agent (`agentc image context AGENT DIR` writes it out), for your uid and gid (1000 when you are root). Builds run through the docker CLI only: the Engine API's build endpoint takes one tar context and cannot carry the named build contexts BuildKit gives `docker build --build-context`, so `--backend api` is refused."
    )]
    Build(Sub<BuildArgs>),
    /// The bundled build contexts of the agent presets' images.
    #[command(subcommand)]
    Image(ImageCommand),
    /// List the containers agentc launched (label io.agentc.profile).
    #[command(
        after_help = "Examples:\n  agentc ps\n  agentc ps --all --format json\n  agentc ps --volumes\n\nColumns: the container's name, profile, launch kind and status; ISOLATION, for a sandbox launched with an isolation floor: the tier and runtime it got (`gvisor (runsc)`), `-` otherwise; EGRESS, for a sandbox behind agentc's egress proxy: `up`, `down (REASON [CODE])` when the proxy exited, was killed or is unhealthy (the sandbox then reaches nothing outside; `agentc egress log NAME` says when), `missing` when no proxy serves it, `-` for other containers; its network; where each container port is reachable from the host (PORT -> ADDRESS: 127.0.0.1 for published ports, the container's address on a named network for exposed ones); the first 12 digits of its spec digest; and PROFILE: `current` when the profile file it was launched from (`agentc run`) still has the text it had then, `changed` when it was edited since (the sandbox no longer matches it: rerun it), `missing` when the file is gone, `-` when unknown."
    )]
    Ps(Sub<PsArgs>),
    /// Remove containers agentc launched; any other container is refused.
    #[command(
        after_help = "Examples:\n  agentc rm agentc-sandbox-dev-1000-pentest\n  agentc rm --all\n  agentc rm --profile pentest\n  agentc rm --volumes agentc-sandbox-dev-1000-pentest\n\nA sandbox's egress proxy and isolated network go with it. NAME may also be a sandbox that no longer exists whose launch was killed before it finished: its leftover isolated network and proxy are removed (as `--profile P` removes those of the profile's launches, with every network and CA volume labelled with it). NAME may be a profile file or a profile's name as for `agentc exec`: the profile's one container, running or stopped."
    )]
    Rm(Sub<RmArgs>),
    /// Launch the profile with a probe in place of the agent and check what the kernel reports.
    #[command(
        after_help = "Examples:\n  agentc verify fixtures/valid/sandbox-minimal.toml\n  agentc verify fixtures/valid/claude-minimal.toml --backend cli --workspace ~/src/app\n  agentc verify fixtures/valid/claude-minimal.toml --egress-probe none\n  agentc verify fixtures/valid/sandbox-minimal.toml --backend k8s --k8s-kind sandbox\n\nWith --backend k8s the profile's Kubernetes rendering (the objects `agentc render --backend k8s` prints, with its options) is played by `podman kube play` with the probe as the workload's command, and the rendered pod compared with what the kernel reports; each field Podman does not enforce is a skip row saying why (see docs/kubernetes.md). The probe container is the profile's exact run launch (hardening, mounts, limits, network, labels, environment) with `/bin/sh -c PROBE` as its command; it is removed afterwards, also on error or Ctrl-C. Prints a table of expected vs seen values. With --pull a missing image is pulled first, as `agentc run --pull` does. Behind the egress proxy (an allowlist enforced outside) the egress checks follow: a hardened container of the proxy image on the probe's isolated network checks the proxy variables, an allowed host reached through the proxy, a denied host and an IP literal refused, a direct connection and DNS failing; --egress-probe HOST[:PORT] picks the allowed host (default: the profile's first exact host, port 443), and --egress-probe none skips that one check, the only one that reaches beyond the proxy. Then egress.host-path: verify listens on the outside network's gateway address (this machine) and a container with the sandbox's capabilities and sysctls tries to reach it past the proxy (UDP, TCP, a route with NET_ADMIN, ARP with NET_RAW, IPv6); nothing may arrive. Exit status: 0 every check passed, 1 a check failed or the probe could not report, 125 the probe could not be started. The image needs /bin/sh and busybox or coreutils tools."
    )]
    Verify(Sub<VerifyArgs>),
    /// Run a command in a running agentc container and exit with its exit code.
    #[command(
        after_help = "Examples:\n  agentc exec agentc-sandbox-dev-1000-pentest nmap -sn 10.0.0.0/24\n  agentc exec -it pentest.toml sh\n  agentc exec pentest ls -la    # the profile's name, as `agentc ps` prints it\n  agentc exec --env TOKEN --env MODE=fast --user 1000 --workdir /tmp NAME -- ./job.sh\n\nNAME is a container name or ID from `agentc ps`, a profile file (a path with a `/` or a `.toml` ending) or a profile's name from `agentc ps` when no container has that name (either: its one running container); any other container is refused (exit 1). The command is everything after NAME (options of exec go before NAME), or after `--`. --env NAME passes the variable's value from this environment by name (an unset one is an error); --env NAME=VALUE a literal. With -t the command gets a TTY when stdin is a terminal (as `run` does). Ctrl-C stops the command in the container too (exit 130). Exit status: the command's own, 125 when it could not be started (the container is not running, the daemon failed), 126/127 when the program cannot be run or is not found."
    )]
    Exec(Sub<ExecArgs>),
    /// Copy files and directories between the host and a running agentc container.
    #[command(
        after_help = "Examples:\n  agentc cp ./src agentc-sandbox-dev-1000-pentest:/tmp\n  agentc cp pentest.toml:/tmp/report.txt ./report.txt\n\nOne side is NAME:PATH (NAME as for `agentc exec`). Into an existing directory the source keeps its name; otherwise it is copied under the name given. Modes are kept; files copied in belong to the container's user. A tmpfs (/tmp, /run) and a path past a read-only root are reached by streaming a tar through exec, as `kubectl cp` does: that needs `sh` and `tar` in the image. Nothing is written on the host outside the copied tree."
    )]
    Cp(Sub<CpArgs>),
    /// Show where a container port is reachable from the host.
    #[command(
        after_help = "Examples:\n  agentc port agentc-sandbox-dev-1000-pentest\n  agentc port pentest.toml 8080\n\nA published port is reachable at 127.0.0.1:HOSTPORT; on a named network, at the container's address on that network (IPv6 in brackets). Without PORT every reachable port is listed as `PORT/PROTO -> ADDRESS`."
    )]
    Port(Sub<PortArgs>),
    /// Print a container's logs.
    #[command(
        after_help = "Examples:\n  agentc logs --tail 20 agentc-sandbox-dev-1000-pentest\n  agentc logs --follow --since 10m pentest.toml"
    )]
    Logs(Sub<LogsArgs>),
    /// Read what a sandbox's egress proxy decided (allowlist enforced outside).
    #[command(
        subcommand,
        after_help = "Example:\n  agentc egress log --follow pentest.toml"
    )]
    Egress(EgressCommand),
    /// Warm pools: idle, hardened sandboxes of a profile that `agentc run` claims.
    #[command(
        subcommand,
        after_help = "Example:\n  agentc pool fill pentest.toml --size 4 && agentc run pentest.toml"
    )]
    Pool(PoolCommand),
    /// Stop running agentc containers (kept until `agentc rm`).
    #[command(after_help = "Example:\n  agentc stop --time 2 agentc-sandbox-dev-1000-pentest")]
    Stop(Sub<StopArgs>),
    /// Start stopped agentc containers.
    #[command(after_help = "Example:\n  agentc start agentc-sandbox-dev-1000-pentest")]
    Start(Sub<StartArgs>),
    /// Freeze running agentc containers (cgroup freezer); network and egress proxy stay.
    #[command(
        after_help = "Example:\n  agentc pause pentest\n\nA paused sandbox runs nothing until `agentc resume`; `agentc ps` lists it as paused."
    )]
    Pause(Sub<PauseArgs>),
    /// Thaw paused agentc containers.
    #[command(after_help = "Example:\n  agentc resume pentest")]
    Resume(Sub<PauseArgs>),
    /// Snapshot a sandbox (writable layer, tmpfs mounts, volumes), or list or remove snapshots.
    #[command(
        after_help = "Examples:\n  agentc snapshot pentest --tag before-scan\n  agentc snapshot ls --format json\n  agentc snapshot rm pentest:before-scan\n\nThe tmpfs mounts and writable volumes are archived through exec (the image needs sh and tar) into $AGENTC_STATE_DIR/snapshots; then the sandbox is paused only for the commit of its writable layer to the image agentc-snapshot/PROFILE:TAG. A sandbox given secrets as environment values is refused unless --allow-secrets. See docs/snapshots.md."
    )]
    Snapshot(Sub<SnapshotArgs>),
    /// Start a new sandbox from a snapshot, launched as its profile says.
    #[command(
        after_help = "Example:\n  agentc restore pentest:before-scan\n\nThe profile's own launch (hardening, egress proxy, fresh placeholders) with the snapshot's image, named NAME-N (the first N free); then its tmpfs mounts and the volumes the launch created get the snapshot's contents."
    )]
    Restore(Sub<RestoreArgs>),
    /// Start several sandboxes from one snapshot, each diverging on its own.
    #[command(after_help = "Example:\n  agentc fork pentest:before-scan --count 3")]
    Fork(Sub<ForkArgs>),
    /// Open an interactive shell (bash when the image has it, else sh) in a running agentc
    /// container.
    #[command(after_help = "Example:\n  agentc shell pentest.toml")]
    Shell(Sub<ShellArgs>),
    /// Write a commented starter profile that validates as written (never over a file).
    #[command(
        after_help = "Examples:\n  agentc init claude-dev.toml --agent claude-code\n  agentc init box.toml --agent custom --image debian:stable-slim --egress deny\n  agentc init codex.toml --agent codex --host api.openai.com --host pypi.org\n\nThe profile's name is the file's stem unless --name is given. Presets default to an egress allowlist of their provider's hosts, custom sandboxes to deny (no network). An existing file is left unchanged (exit 1)."
    )]
    Init(Sub<InitArgs>),
    /// Check that this machine can run agentc's launches (and, with a profile, that one).
    #[command(
        after_help = "Examples:\n  agentc doctor\n  agentc doctor claude-dev.toml --format json\n\nEach check prints ok, warn or fail with a fix: the engine and its API version, the docker CLI, runtimes, cgroup version, seccomp, AppArmor, user namespaces, whether an internal network with IPv4 inhibited can be created (one is created and removed), leftovers of killed launches (isolated networks and egress proxies without their sandbox, sandboxes without their proxy: a warning, each with the command that removes it), free disk; with a profile, its images, networks and secrets, its recorded deployment and its lock. Exit status: 0 when nothing fails, 1 otherwise."
    )]
    Doctor(Sub<DoctorArgs>),
    /// List what a profile's launches would create and use, without contacting the engine.
    #[command(
        after_help = "Examples:\n  agentc plan claude-dev.toml\n  agentc plan claude-dev.toml --format json --workspace ~/src/app\n\nEvery container, image build, network, volume, seed, bind, secret and published port of every launch (run, seeds, build, Decant), each launch's findings, and which launches changed since the last `agentc apply`."
    )]
    Plan(Sub<PlanArgs>),
    /// Build the image (keeping the previous one), copy new or changed seeds, and record the deployment.
    #[command(
        after_help = "Examples:\n  agentc apply claude-dev.toml\n  agentc apply box.toml --backend api\n\nWith `[image] build_context` the image is built (docker CLI); the image of the last apply is kept under the tag `REF-agentc-previous-PROFILE` first. Without one the image must be present (or --pull). Seeds are copied when new, changed since the last apply, or their home volume is gone. The deployment is recorded in $AGENTC_STATE_DIR (default $XDG_STATE_HOME/agentc or ~/.local/state/agentc), one apply or rollback at a time (exit 75 when another runs)."
    )]
    Apply(Sub<ApplyArgs>),
    /// Point the profile's image back at the image of the previous apply, and record it.
    #[command(
        after_help = "Example:\n  agentc rollback claude-dev.toml\n\nOne rollback per apply: a second rollback without a new apply is refused (exit 1). The home volume's contents are not rolled back. A lock written before records the other image, so `--locked` launches refuse until `agentc lock` is run again."
    )]
    Rollback(Sub<RollbackArgs>),
    /// Write the profile's lock file (PROFILE.lock), or check it for drift.
    #[command(
        after_help = "Examples:\n  agentc lock claude-dev.toml\n  agentc lock --check claude-dev.toml    # for CI: exit 65 on drift\n\nThe lock records each launch's spec digest and values, the image ID each image reference resolves to (it must be present), the egress policy, the hash of every file the launches mount or trust (a directory by a tree hash; writable mounts by path only), the AGENTC_* overrides, the workspace, the runtime and agentc's version; secrets by name only. `run`, `seed` and `verify` with --locked refuse any drift before anything is created (exit 65), naming each field."
    )]
    Lock(Sub<LockArgs>),
    /// Print shell completions for bash, zsh or fish.
    #[command(
        after_help = "Examples:\n  echo 'source <(agentc completions bash)' >> ~/.bashrc\n  echo 'source <(agentc completions zsh)' >> ~/.zshrc\n  agentc completions fish > ~/.config/fish/completions/agentc.fish\n  agentc completions bash --static > ~/.local/share/bash-completion/completions/agentc\n\nThe script asks agentc for each completion (COMPLETE=SHELL agentc, through clap_complete), so subcommands, flags and values complete as this binary defines them, and a NAME completes to the agentc containers the engine has (one `docker ps`), their profiles, and profile files. With --static the script is self-contained (subcommands and flags only, no call to agentc). Re-source it after upgrading agentc."
    )]
    Completions(Sub<CompletionsArgs>),
    /// Print the man page (roff).
    #[command(after_help = "Example:\n  agentc man > ~/.local/share/man/man1/agentc.1")]
    Man,
    /// Serve the session operations as JSON-RPC 2.0 on stdin and stdout, for harnesses.
    #[command(
        after_help = "Examples:\n  agentc serve --stdio\n  agentc serve --stdio --backend cli\n  agentc serve --schema > agentc-serve.schema.json\n\nOne process, one engine connection: create (a profile's session sandbox, its findings), attach, exec (streamed or captured, with a timeout), read_file, write_file, read_tar, write_tar, endpoint, logs, running, delete, shutdown; one JSON message a line, bytes as base64. When stdin closes, on SIGTERM or SIGINT and on shutdown, the sandboxes it created without keep are deleted with their egress companions. Errors carry the command line's exit status, a kind and the hint. See docs/serve.md; the Python package python/agentc-sandbox is its client."
    )]
    Serve(Sub<ServeArgs>),
    /// The egress proxy of allowlist sandboxes; runs inside its own container (hidden).
    #[command(hide = true, subcommand, name = "egress-proxy")]
    EgressProxy(EgressProxyCommand),
}

/// The container a session command drives, and the backend it goes through.
#[derive(Debug, Args)]
pub struct SessionTarget {
    /// Which backend talks to the daemon.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
}

/// `agentc exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The backend.
    #[command(flatten)]
    pub target: SessionTarget,
    /// Pass this process's stdin to the command.
    #[arg(long, short = 'i')]
    pub interactive: bool,
    /// Allocate a TTY (when stdin is a terminal).
    #[arg(long, short = 't')]
    pub tty: bool,
    /// The user (`name`, `uid` or `uid:gid`) [default: the container's].
    #[arg(long, short = 'u')]
    pub user: Option<String>,
    /// The working directory [default: the container's].
    #[arg(long, short = 'w')]
    pub workdir: Option<String>,
    /// NAME (its value from this environment, by name) or NAME=VALUE; repeatable.
    #[arg(long, short = 'e', value_name = "NAME[=VALUE]")]
    pub env: Vec<String>,
    /// A container name or ID from `agentc ps`, a profile file, or a profile's name.
    #[arg(add = complete::names())]
    pub name: String,
    /// The command and its arguments: everything after NAME (as `docker exec` reads it), or
    /// after `--`.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// `agentc cp`.
#[derive(Debug, Args)]
pub struct CpArgs {
    /// The backend.
    #[command(flatten)]
    pub target: SessionTarget,
    /// What to copy: a host path, or NAME:PATH.
    pub source: String,
    /// Where: a host path, NAME:PATH, or `-` (a tar stream on stdout, from NAME:PATH).
    pub destination: String,
}

/// `agentc port`.
#[derive(Debug, Args)]
pub struct PortArgs {
    /// The backend.
    #[command(flatten)]
    pub target: SessionTarget,
    /// A container name or ID from `agentc ps`, a profile file, or a profile's name.
    #[arg(add = complete::names())]
    pub name: String,
    /// The container port, as PORT or PORT/PROTO (tcp or udp).
    pub port: Option<String>,
}

/// `agentc logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The backend.
    #[command(flatten)]
    pub target: SessionTarget,
    /// Keep printing new output until the container stops.
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Only the last N lines.
    #[arg(long, short = 'n', value_name = "N")]
    pub tail: Option<u64>,
    /// Only output since a Unix time in seconds, or a duration ago (30s, 10m, 2h, 1d).
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// A container name or ID from `agentc ps`, a profile file, or a profile's name.
    #[arg(add = complete::names())]
    pub name: String,
}

/// `agentc stop`.
#[derive(Debug, Args)]
pub struct StopArgs {
    /// The backend.
    #[command(flatten)]
    pub target: SessionTarget,
    /// Seconds to wait after SIGTERM before SIGKILL [default: the daemon's, 10].
    #[arg(long, short = 't', value_name = "S")]
    pub time: Option<u32>,
    /// Container names or IDs from `agentc ps`, profile files, or profiles' names.
    #[arg(required = true, add = complete::names())]
    pub names: Vec<String>,
}

/// `agentc start`.
#[derive(Debug, Args)]
pub struct StartArgs {
    /// The backend.
    #[command(flatten)]
    pub target: SessionTarget,
    /// Container names or IDs from `agentc ps -a`, profile files, or profiles' names (a
    /// profile's one container, running or stopped).
    #[arg(required = true, add = complete::names())]
    pub names: Vec<String>,
}

/// `agentc shell`.
#[derive(Debug, Args)]
pub struct ShellArgs {
    /// The backend.
    #[command(flatten)]
    pub target: SessionTarget,
    /// The user [default: the container's].
    #[arg(long, short = 'u')]
    pub user: Option<String>,
    /// A container name or ID from `agentc ps`, a profile file, or a profile's name.
    #[arg(add = complete::names())]
    pub name: String,
}

/// A profile file.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// The profile (TOML).
    pub profile: PathBuf,
}

/// A launch of a profile.
#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// The profile (TOML).
    pub profile: PathBuf,
    /// Which launch.
    #[arg(long, value_enum, default_value_t = KindArg::Run)]
    pub kind: KindArg,
    /// The workspace directory mounted into the agent [default: the current directory].
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Use this image instead of the profile's.
    #[arg(long)]
    pub image: Option<String>,
    /// For `--kind seed`: the target of the seed mount to copy.
    #[arg(long)]
    pub seed_target: Option<String>,
    /// Arguments passed to the agent, after `--`.
    #[arg(last = true)]
    pub agent_args: Vec<String>,
    /// `AGENTC_*` overrides this invocation's options give (`run --isolation-min`), in place
    /// of the environment's: inputs of resolve like the rest, never set in the process's
    /// environment.
    #[arg(skip)]
    pub overrides: BTreeMap<String, String>,
    /// `agentc build --build-arg NAME=VALUE`: build arguments of a build launch.
    #[arg(skip)]
    pub build_args: BTreeMap<String, String>,
}

/// `agentc explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The launch.
    #[command(flatten)]
    pub launch: LaunchArgs,
    /// Output format: `text` (the explanation, ending with the findings) or `json` (the
    /// findings report with the spec).
    #[arg(long, value_enum, default_value_t = ExplainFormat::Text)]
    pub format: ExplainFormat,
    /// Exit 1 when any finding is at or above LEVEL: info, low, medium, high or critical.
    #[arg(long, value_name = "LEVEL")]
    pub deny: Option<agentc_policy::Severity>,
    /// What to explain: the launch and its findings (`docker`), or its Kubernetes rendering's
    /// objects, approximations and cluster duties (`k8s`).
    #[arg(long, value_enum, default_value_t = ExplainBackendArg::Docker)]
    pub backend: ExplainBackendArg,
    /// The Kubernetes rendering's options (with `--backend k8s`).
    #[command(flatten)]
    pub k8s: K8sArgs,
}

/// What `agentc explain` explains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExplainBackendArg {
    /// The launch, for either Docker backend.
    Docker,
    /// The Kubernetes rendering.
    K8s,
}

/// Options of the Kubernetes rendering (`--backend k8s`).
#[derive(Debug, Args, Default)]
pub struct K8sArgs {
    /// The object that runs the workload: a Pod, or an agent-sandbox Sandbox.
    #[arg(long, value_enum, value_name = "KIND")]
    pub k8s_kind: Option<K8sKindArg>,
    /// The namespace of every object [default: kubectl's current namespace].
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// The base name of the objects [default: from the profile and the launch kind].
    #[arg(long, value_name = "NAME")]
    pub k8s_name: Option<String>,
    /// An existing PersistentVolumeClaim holding the workspace (a Pod cannot bind a host
    /// directory).
    #[arg(long, value_name = "PVC")]
    pub workspace_claim: Option<String>,
    /// The image of agentc's egress proxy, required for an egress allowlist with hosts.
    #[arg(long, value_name = "REF")]
    pub egress_proxy_image: Option<String>,
    /// A free address of the cluster's Service range for the egress proxy: the workload then
    /// resolves names only through the proxy (dnsPolicy None) instead of the cluster DNS.
    #[arg(long, value_name = "IP")]
    pub egress_proxy_ip: Option<std::net::IpAddr>,
    /// The RuntimeClass an isolation tier maps to, for a profile's `[security] isolation`
    /// floor (repeatable): defaults gvisor=gvisor and microvm=kata; container maps to the
    /// cluster's default; `TIER=` removes a mapping.
    #[arg(long, value_name = "TIER=NAME")]
    pub runtime_class: Vec<String>,
    /// With `--k8s-kind pool`: the SandboxWarmPool's replicas [default: 1].
    #[arg(long, value_name = "N")]
    pub pool_size: Option<u16>,
}

impl K8sArgs {
    /// The first option given, to refuse them outside `--backend k8s`.
    pub fn first_given(&self) -> Option<&'static str> {
        [
            (self.k8s_kind.is_some(), "--k8s-kind"),
            (self.namespace.is_some(), "--namespace"),
            (self.k8s_name.is_some(), "--k8s-name"),
            (self.workspace_claim.is_some(), "--workspace-claim"),
            (self.egress_proxy_image.is_some(), "--egress-proxy-image"),
            (self.egress_proxy_ip.is_some(), "--egress-proxy-ip"),
            (!self.runtime_class.is_empty(), "--runtime-class"),
            (self.pool_size.is_some(), "--pool-size"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }
}

/// The object that runs a Kubernetes workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum K8sKindArg {
    /// A bare Pod.
    Pod,
    /// An agent-sandbox `Sandbox` (agents.x-k8s.io/v1beta1).
    Sandbox,
    /// A warm pool: SandboxTemplate, SandboxWarmPool and SandboxClaim (extensions.agents.x-k8s.io).
    Pool,
}

/// Output formats of `agentc explain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExplainFormat {
    /// Human-readable text.
    Text,
    /// JSON for machines.
    Json,
}

/// `agentc render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The launch.
    #[command(flatten)]
    pub launch: LaunchArgs,
    /// Which backend renders it.
    #[arg(long, value_enum, default_value_t = RenderBackendArg::Cli)]
    pub backend: RenderBackendArg,
    /// Output format: `shell` (cli backend only), `json`, or `yaml` (k8s backend only).
    #[arg(long, value_enum, default_value_t = FormatArg::Shell)]
    pub format: FormatArg,
    /// The Kubernetes rendering's options (with `--backend k8s`).
    #[command(flatten)]
    pub k8s: K8sArgs,
}

/// The backends `agentc render` renders through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RenderBackendArg {
    /// The `docker` command line.
    Cli,
    /// The Docker Engine API.
    Api,
    /// Kubernetes objects: a Pod or an agent-sandbox Sandbox, for `kubectl apply -f -`.
    K8s,
}

/// `agentc run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The profile (TOML).
    pub profile: PathBuf,
    /// Which backend launches it.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// The workspace directory mounted into the agent [default: the current directory].
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Use this image instead of the profile's.
    #[arg(long)]
    pub image: Option<String>,
    /// Start in the background and print where it is reachable (custom agents always do).
    #[arg(long)]
    pub detach: bool,
    /// The isolation floor for this launch in place of the profile's
    /// (`security.isolation.min`): container, gvisor or microvm. The same as
    /// AGENTC_ISOLATION_MIN; a floor below the profile's is reported as the high finding
    /// isolation-lowered, and a lock of the profile drifts.
    #[arg(long, value_name = "TIER", value_parser = ["container", "gvisor", "microvm"])]
    pub isolation_min: Option<String>,
    /// Name the container N instead of the profile's name, so that a second sandbox of one
    /// profile can run beside the first (its egress companion becomes N-egress and
    /// N-egress-proxy; with --count the copies are N-1 to N-COUNT). Behind the egress proxy
    /// the sandbox's name must be a DNS label (at most 63 characters with a copy's -K, no dots).
    #[arg(long, value_name = "N")]
    pub name: Option<String>,
    /// Pull the image from its registry when the daemon lacks it, before creating anything
    /// (progress on stderr; no registry credentials are sent).
    #[arg(long)]
    pub pull: bool,
    /// Refuse to launch unless the profile's lock file (PROFILE.lock) matches this machine
    /// exactly; any drift exits 65 before anything is created.
    #[arg(long)]
    pub locked: bool,
    /// Start this many detached copies, named NAME-1 to NAME-N (implies --detach; either
    /// backend).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub count: u16,
    /// With --count: how many copies are launched at once (either backend).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: u16,
    /// Do not print the high and critical findings of the launch on stderr before it starts
    /// (`agentc explain PROFILE` lists them all).
    #[arg(long)]
    pub no_warnings: bool,
    /// Claim a warm member of the profile's pool (`agentc pool fill`): auto, require, off.
    #[arg(long, value_enum, default_value_t = PoolMode::Auto)]
    pub pool: PoolMode,
    /// Arguments passed to the agent, after `--`.
    #[arg(last = true)]
    pub agent_args: Vec<String>,
}

/// `agentc seed`.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["target", "all"]))]
pub struct SeedArgs {
    /// The profile (TOML).
    pub profile: PathBuf,
    /// The target of the seed mount to copy, as written in the profile.
    #[arg(long)]
    pub target: Option<String>,
    /// Copy every seed mount, in profile order.
    #[arg(long)]
    pub all: bool,
    /// Which backend launches the helper.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Use this image for the helper instead of the profile's.
    #[arg(long)]
    pub image: Option<String>,
    /// Pull the image from its registry when the daemon lacks it, before creating anything.
    #[arg(long)]
    pub pull: bool,
    /// Refuse to launch unless the profile's lock file (PROFILE.lock) matches this machine
    /// exactly; any drift exits 65 before anything is created.
    #[arg(long)]
    pub locked: bool,
}

/// `agentc build`.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The profile (TOML).
    pub profile: PathBuf,
    /// Tag the image with this reference instead of the profile's.
    #[arg(long)]
    pub image: Option<String>,
    /// A build argument, `NAME=VALUE` (repeatable): for a preset's bundled image `BASE_IMAGE`,
    /// `AGENT_PACKAGE` and `AGENT_VERSION` (`agentc image context AGENT DIR` lists them).
    #[arg(long = "build-arg", value_name = "NAME=VALUE", value_parser = parse_build_arg)]
    pub build_args: Vec<(String, String)>,
    /// Which backend builds it (only `cli` can).
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
}

/// `agentc ps`.
#[derive(Debug, Args)]
pub struct PsArgs {
    /// Also list stopped containers.
    #[arg(long, short = 'a')]
    pub all: bool,
    /// Output format: `table`, or `json` (an array of objects, one per container).
    #[arg(long, value_enum, default_value_t = PsFormat::Table)]
    pub format: PsFormat,
    /// Also list agentc's volumes (home volumes and the others its launches created).
    #[arg(long, conflicts_with = "quiet")]
    pub volumes: bool,
    /// Print only the containers' IDs (12 characters), one a line, as `docker ps -q`.
    #[arg(long, short = 'q', conflicts_with = "format")]
    pub quiet: bool,
    /// Only the containers that match: `profile=P`, `kind=K` (run, sandbox, seed, decant,
    /// egress-proxy, ...) or `status=S` (the daemon's state: created, running, paused,
    /// restarting, removing, exited, dead; a status filter lists stopped containers without
    /// --all). Repeated: one key's values are alternatives, different keys must all match.
    #[arg(long, value_name = "KEY=VALUE")]
    pub filter: Vec<String>,
    /// Which backend asks the engine.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
}

/// Output formats of `agentc ps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PsFormat {
    /// An aligned table.
    Table,
    /// JSON for machines.
    Json,
}

/// `agentc rm`.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("which").required(true).multiple(true).args(["names", "all", "profile"]))]
pub struct RmArgs {
    /// Names or IDs of agentc containers, profile files, or profile names.
    #[arg(add = complete::names())]
    pub names: Vec<String>,
    /// Remove every container agentc launched.
    #[arg(long)]
    pub all: bool,
    /// Remove everything agentc made for this profile, a profile's name or its file (label
    /// io.agentc.profile=NAME): its containers, their egress proxies, and the networks and CA
    /// volumes made per launch (`--all` is implied; its other volumes, such as home volumes,
    /// only with --volumes).
    #[arg(long, conflicts_with = "names")]
    pub profile: Option<String>,
    /// Also remove agentc's volumes they mount (with --all: every agentc volume), such as
    /// home volumes: what the agent kept there is lost.
    #[arg(long)]
    pub volumes: bool,
    /// With --profile: also remove what `agentc apply` keeps for it, its deployment state
    /// (what `rollback` reads) and the previous images it kept for a rollback (the tags
    /// REF-agentc-previous-PROFILE); the profile's image and its lock file stay.
    #[arg(long, requires = "profile")]
    pub state: bool,
    /// Which backend asks the engine.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
}

/// The launch kinds a user can ask for (`sandbox` is what `run` becomes for custom agents).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// The agent (or, for `agent = "custom"`, the long-lived sandbox).
    Run,
    /// The copy-once seed helper.
    Seed,
    /// The image build.
    Build,
    /// The Decant companion.
    Decant,
}

/// `agentc serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Speak JSON-RPC 2.0 on stdin and stdout, one message a line.
    #[arg(long, conflicts_with = "schema")]
    pub stdio: bool,
    /// Print the JSON Schema of every method's params and result, and exit.
    #[arg(long)]
    pub schema: bool,
    /// Which backend talks to the daemon (one connection for the server's life).
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
}

/// The backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// Docker's Engine API where it answers (`DOCKER_HOST`, else the docker command's current
    /// context), the command line otherwise and for Podman; `--verbose` and `agentc doctor`
    /// say which.
    Auto,
    /// The `docker` command line.
    Cli,
    /// The Docker Engine API.
    Api,
}

/// Output formats of `agentc render`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// One shell-quoted command line.
    Shell,
    /// JSON: an argv array (cli), `{"name": ..., "body": ...}` (api) or a `v1` `List` (k8s).
    Json,
    /// A multi-document YAML stream (k8s).
    Yaml,
}

/// A `--build-arg` value: `NAME=VALUE` with a name docker accepts.
fn parse_build_arg(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not NAME=VALUE"))?;
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
        && !name.as_bytes()[0].is_ascii_digit();
    if !valid {
        return Err(format!(
            "{name:?} is not a build argument name (letters, digits and _, not first a digit)"
        ));
    }
    Ok((name.to_string(), value.to_string()))
}
