//! The session steps on the in-memory engine: what `agentc exec`, `cp`, `port`, `logs`,
//! `egress log`, `stop` and `start` do, without a daemon. The engine keeps no files, so a copy
//! is tested up to the engine's refusal.

use agentc_engine::memory::{MemoryEngine, RunState};
use agentc_engine::session::Captured;

use super::*;
use crate::inventory::tests::two_sandboxes;
use crate::memory_fixtures::block_on;
use crate::EXIT_USAGE;

/// How many calls of `operation` the engine has had.
fn calls_of(client: &Sandboxes<MemoryEngine>, operation: &str) -> usize {
    client
        .port()
        .calls()
        .iter()
        .filter(|call| call.operation == operation)
        .count()
}

/// The state of the container `name`.
fn state_of(client: &Sandboxes<MemoryEngine>, name: &str) -> RunState {
    client.port().world().containers[name].state
}

#[test]
fn cp_sides_are_read_as_docker_cp_reads_them() {
    assert_eq!(
        Side::parse("box:/tmp/x"),
        Side::Container {
            name: "box".into(),
            path: "/tmp/x".into()
        }
    );
    assert_eq!(Side::parse("./a:b"), Side::Host(PathBuf::from("./a:b")));
    assert_eq!(
        Side::parse("/abs/file"),
        Side::Host(PathBuf::from("/abs/file"))
    );
    assert_eq!(Side::parse(":x"), Side::Host(PathBuf::from(":x")));
    assert_eq!(Side::parse("-"), Side::Host(PathBuf::from("-")));
}

#[test]
fn env_entries_are_literals_or_secrets_by_name() {
    assert_eq!(
        env_entry("A=b=c"),
        EnvVar {
            name: "A".into(),
            value: EnvValue::Literal {
                value: "b=c".into()
            }
        }
    );
    assert_eq!(
        env_entry("TOKEN"),
        EnvVar {
            name: "TOKEN".into(),
            value: EnvValue::Secret { required: true }
        }
    );
    assert!(crate::inventory::is_profile_path("./p.toml"));
    assert!(crate::inventory::is_profile_path("p.toml"));
    assert!(!crate::inventory::is_profile_path(
        "agentc-sandbox-dev-1000-p"
    ));
}

#[test]
fn an_exec_gives_back_the_commands_status_and_output_in_a_running_sandbox_only() {
    let client = two_sandboxes();
    client.port().set_exec("echo hi", 3, "hi\n");
    let mut output = Captured::default();
    let exec = Exec {
        name: "boxed".to_string(),
        request: ExecRequest::new(["echo", "hi"]),
        output: &mut output,
    };
    assert_eq!(block_on(exec.run(&client)).expect("it ran"), 3);
    assert_eq!(output.stdout, b"hi\n");
    // One exec: the command ended, so nothing was stopped after it.
    assert_eq!(calls_of(&client, "exec"), 1, "{:?}", client.port().calls());

    // A stopped sandbox runs no command.
    client.port().exit("agentc-sandbox-open", 0);
    let mut output = Captured::default();
    let exec = Exec {
        name: "agentc-sandbox-open".to_string(),
        request: ExecRequest::new(["echo", "hi"]),
        output: &mut output,
    };
    let failure = block_on(exec.run(&client)).unwrap_err();
    assert!(
        failure
            .message
            .starts_with("container agentc-sandbox-open is not running"),
        "{failure}"
    );
    assert!(output.stdout.is_empty(), "{output:?}");
}

#[test]
fn the_shell_prefers_bash_on_a_terminal() {
    let request = shell_request(Some("1000".to_string()));
    assert_eq!(request.command[..2], ["sh", "-c"]);
    assert!(request.command[2].contains("exec bash"), "{request:?}");
    assert_eq!(request.user.as_deref(), Some("1000"));
    assert_eq!(request.stdin, ExecStdin::Terminal);
    assert!(!request.tty, "a TTY only when the caller's stdin is one");
}

#[test]
fn a_copy_needs_one_side_in_a_sandbox_and_the_other_on_the_host() {
    let client = two_sandboxes();
    let copy = |source: &str, destination: &str| {
        let transfer = Transfer {
            source: Side::parse(source),
            destination: Side::parse(destination),
            stream: Some(Box::new(Vec::new())),
        };
        block_on(transfer.run(&client))
    };
    for (source, destination) in [("./a", "./b"), ("boxed:/a", "open:/b"), ("./a", "-")] {
        let failure = copy(source, destination).unwrap_err();
        assert_eq!(
            failure.code, EXIT_USAGE,
            "{source} {destination}: {failure}"
        );
        assert!(
            failure
                .message
                .starts_with("one side of `agentc cp` must be NAME:PATH"),
            "{failure}"
        );
    }
    // A name that is no sandbox is refused before the engine is asked to copy.
    let failure = copy("nothing-here:/a", "./b").unwrap_err();
    assert!(
        failure
            .message
            .contains("no such container or profile nothing-here"),
        "{failure}"
    );
    // Each way, and to a tar stream, the copy reaches the engine (which keeps no files).
    let host = tempfile::tempdir().expect("a directory");
    let file = host.path().join("a");
    std::fs::write(&file, "a\n").expect("a file");
    let file = file.display().to_string();
    let into = host.path().join("b").display().to_string();
    for (source, destination) in [
        ("boxed:/etc/hostname", "-"),
        ("boxed:/etc/hostname", into.as_str()),
        (file.as_str(), "boxed:/tmp"),
    ] {
        let failure = copy(source, destination).unwrap_err();
        assert!(
            failure.message.contains("the memory engine keeps no files"),
            "{source} {destination}: {failure}"
        );
    }
}

#[test]
fn ports_are_read_before_the_sandbox_is_looked_up() {
    let client = two_sandboxes();
    let before = client.port().calls().len();
    let ports = Ports {
        name: "nothing-here".to_string(),
        port: Some("http".to_string()),
    };
    let failure = block_on(ports.run(&client)).unwrap_err();
    assert!(failure.message.contains("http"), "{failure}");
    assert_eq!(client.port().calls().len(), before, "{failure}");
    // The sandbox publishes nothing.
    let ports = Ports {
        name: "open".to_string(),
        port: None,
    };
    assert_eq!(block_on(ports.run(&client)).expect("its ports"), []);
}

#[test]
fn logs_read_a_stopped_sandbox_and_refuse_a_since_that_is_no_time() {
    let client = two_sandboxes();
    let before = client.port().calls().len();
    let mut output = Captured::default();
    let logs = Logs {
        name: "boxed".to_string(),
        follow: false,
        tail: None,
        since: Some("yesterday".to_string()),
        output: &mut output,
    };
    let failure = block_on(logs.run(&client)).unwrap_err();
    assert!(
        failure.message.contains("--since \"yesterday\""),
        "{failure}"
    );
    assert_eq!(client.port().calls().len(), before, "{failure}");

    client.port().exit("agentc-sandbox-open", 0);
    let logs = Logs {
        name: "open".to_string(),
        follow: true,
        tail: Some(5),
        since: Some("10m".to_string()),
        output: &mut output,
    };
    assert_eq!(block_on(logs.run(&client)).expect("its logs"), None);
    assert!(calls_of(&client, "logs") > 0, "{:?}", client.port().calls());
}

/// The egress log of `name`, and what it wrote.
fn egress_log(
    client: &Sandboxes<MemoryEngine>,
    name: &str,
    follow: bool,
) -> (Result<Option<Interrupt>, Failure>, Captured) {
    let mut output = Captured::default();
    let log = EgressLog {
        name: name.to_string(),
        follow,
        tail: None,
        output: &mut output,
    };
    (block_on(log.run(client)), output)
}

#[test]
fn the_egress_log_is_refused_for_a_sandbox_not_behind_the_proxy() {
    let client = two_sandboxes();
    let (ended, output) = egress_log(&client, "open", false);
    let failure = ended.unwrap_err();
    assert_eq!(failure.code, EXIT_FAILED);
    assert!(
        failure.message.starts_with(
            "agentc-sandbox-open is not behind agentc's egress proxy, so it has no egress log"
        ),
        "{failure}"
    );
    assert_eq!(output, Captured::default());
}

#[test]
fn the_egress_log_of_a_serving_proxy_ends_well_and_of_a_stopped_one_says_it_is_down() {
    let client = two_sandboxes();
    for follow in [false, true] {
        let (ended, output) = egress_log(&client, "boxed", follow);
        assert_eq!(ended.expect("the log"), None, "follow {follow}");
        assert_eq!(output, Captured::default());
    }
    client.port().exit("agentc-sandbox-boxed-egress-proxy", 137);
    let (ended, _) = egress_log(&client, "boxed", true);
    let failure = ended.unwrap_err();
    assert_eq!(failure.code, EXIT_FAILED);
    assert!(
        failure.message.starts_with(
            "egress of agentc-sandbox-boxed is down: its egress proxy \
             agentc-sandbox-boxed-egress-proxy exited with code 137"
        ),
        "{failure}"
    );
}

#[test]
fn stop_and_start_find_every_name_first_and_tell_of_each() {
    let client = two_sandboxes();
    let mut told = Vec::new();
    let stop = Stop {
        names: vec!["boxed".to_string(), "nothing-here".to_string()],
        time: Some(0),
        stopped: |sandbox: &Sandbox| told.push(sandbox.name.clone()),
    };
    let failure = block_on(stop.run(&client)).unwrap_err();
    assert!(
        failure
            .message
            .contains("no such container or profile nothing-here"),
        "{failure}"
    );
    assert!(told.is_empty(), "{told:?}");
    assert_eq!(state_of(&client, "agentc-sandbox-boxed"), RunState::Running);

    let stop = Stop {
        names: vec!["boxed".to_string(), "agentc-sandbox-open".to_string()],
        time: Some(0),
        stopped: |sandbox: &Sandbox| told.push(sandbox.name.clone()),
    };
    block_on(stop.run(&client)).expect("both stopped");
    assert_eq!(told, ["agentc-sandbox-boxed", "agentc-sandbox-open"]);
    for name in ["agentc-sandbox-boxed", "agentc-sandbox-open"] {
        assert!(
            matches!(state_of(&client, name), RunState::Exited(_)),
            "{name}: {:?}",
            state_of(&client, name)
        );
    }

    let mut told = Vec::new();
    let start = Start {
        names: vec!["agentc-sandbox-open".to_string()],
        started: |sandbox: &Sandbox| told.push(sandbox.name.clone()),
    };
    block_on(start.run(&client)).expect("started");
    assert_eq!(told, ["agentc-sandbox-open"]);
    assert_eq!(state_of(&client, "agentc-sandbox-open"), RunState::Running);
    assert!(matches!(
        state_of(&client, "agentc-sandbox-boxed"),
        RunState::Exited(_)
    ));
}
