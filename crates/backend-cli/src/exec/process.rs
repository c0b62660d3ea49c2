//! Running a rendered argv as a child process: spawns the docker CLI, stdio inherited, and
//! returns its exit code (the shell's convention for a signal: 128 + its number).
//!
//! [`run`] leaves signals alone: a terminal's SIGINT reaches both the caller and docker (same
//! process group), and the docker CLI forwards it to the container. A caller that wants
//! docker's exit code after Ctrl-C must ignore SIGINT itself while [`run`] waits; a caller
//! that must pass on signals sent to it alone (SIGTERM from a supervisor) uses [`spawn`] and
//! [`wait_forwarding`].

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::process::{Child, Command, ExitStatus};

use agentc_engine::ExecError;

/// Runs `program` with `argv[1..]` (argv as rendered: `argv[0]` is the display name `docker`),
/// stdin, stdout and stderr inherited and the environment inherited (secrets rendered as
/// `--env=NAME` are read from it by docker) with `env` on top (the caller's: where its engine
/// is, the secrets it names), and returns its exit code: the code it exited with, or 128 + the
/// signal number when a signal ended it.
pub fn run(
    program: impl AsRef<OsStr>,
    env: &BTreeMap<String, String>,
    argv: &[String],
) -> Result<i32, ExecError> {
    let program = program.as_ref();
    let mut child = spawn(program, env, argv)?;
    let status = child.wait().map_err(|source| ExecError::Wait {
        program: program.to_owned(),
        source,
    })?;
    Ok(exit_code(status))
}

/// Starts `program` with `argv[1..]` like [`run`] but returns the child, for a caller that
/// forwards signals to it while it waits (see [`wait_forwarding`]).
pub fn spawn(
    program: impl AsRef<OsStr>,
    env: &BTreeMap<String, String>,
    argv: &[String],
) -> Result<Child, ExecError> {
    let program = program.as_ref();
    let Some((_display_name, args)) = argv.split_first() else {
        return Err(ExecError::EmptyArgv);
    };
    Command::new(program)
        .args(args)
        .envs(env)
        .spawn()
        .map_err(|source| ExecError::Spawn {
            program: program.to_owned(),
            source,
        })
}

/// Waits for a child started with [`spawn`], sending it each signal that `pending` reports
/// (polled every 20 ms; `pending` returns a signal number once per delivery), and returns its
/// exit code as [`run`] does. A SIGTERM sent to agentc alone reaches docker this way, and the
/// docker CLI forwards it to the container.
pub fn wait_forwarding(
    mut child: Child,
    mut pending: impl FnMut() -> Option<i32>,
) -> Result<i32, ExecError> {
    loop {
        if let Some(status) = child.try_wait().map_err(|source| ExecError::Wait {
            program: OsString::from("docker"),
            source,
        })? {
            return Ok(exit_code(status));
        }
        if let Some(signal) = pending() {
            #[cfg(unix)]
            // SAFETY: kill has no memory-safety preconditions; the pid is our own child's,
            // which has not been reaped yet (try_wait returned None).
            unsafe {
                libc::kill(child.id() as libc::pid_t, signal);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The shell's convention: the exit code, or 128 + the signal number.
pub(crate) fn exit_code(status: ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_policy::Hinted;

    fn argv(script: &str) -> Vec<String> {
        vec!["docker".into(), "-c".into(), script.into()]
    }

    #[test]
    fn exit_code_is_propagated() {
        assert_eq!(run("sh", &BTreeMap::new(), &argv("exit 3")).unwrap(), 3);
        assert_eq!(run("sh", &BTreeMap::new(), &argv("exit 0")).unwrap(), 0);
    }

    #[test]
    fn signal_becomes_128_plus_signo() {
        assert_eq!(
            run("sh", &BTreeMap::new(), &argv("kill -TERM $$")).unwrap(),
            128 + 15
        );
    }

    #[test]
    fn argv0_is_replaced_by_the_program() {
        assert_eq!(
            run("sh", &BTreeMap::new(), &argv("[ \"$0\" = sh ] && exit 7")).unwrap(),
            7
        );
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let error = run(
            "/nonexistent/agentc-docker",
            &BTreeMap::new(),
            &argv("true"),
        )
        .unwrap_err();
        assert!(matches!(error, ExecError::Spawn { .. }), "{error}");
        assert!(error
            .with_hint()
            .to_string()
            .contains("/nonexistent/agentc-docker"));
    }

    #[test]
    fn the_callers_environment_is_on_top_of_agentcs() {
        let env = BTreeMap::from([("AGENTC_TEST_EXIT".to_string(), "9".to_string())]);
        assert_eq!(run("sh", &env, &argv("exit $AGENTC_TEST_EXIT")).unwrap(), 9);
        // Agentc's own environment is still there beneath it.
        assert_eq!(
            run("sh", &env, &argv("[ -n \"$PATH\" ] && exit 4")).unwrap(),
            4
        );
    }

    #[test]
    fn empty_argv_is_refused() {
        assert!(matches!(
            run("sh", &BTreeMap::new(), &[]),
            Err(ExecError::EmptyArgv)
        ));
    }
}
