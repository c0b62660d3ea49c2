//! Reading a rendered `docker` argv back the way docker's pflag reads it, to prove that no
//! value (an image, a user, a path, an environment value) can stand where docker would read a
//! flag.
//!
//! Shared by the hostile corpus (`tests/tests/hostile.rs`, through this crate) and the fuzz
//! harness (`fuzz/fuzz_targets/common.rs`, which includes this file by path, as `fuzz/` is a
//! crate of its own): it depends on `std` and `agentc_policy` only.

use agentc_policy::{Action, LaunchSpec};

/// docker's flags the CLI renderer writes without a value.
const BARE_FLAGS: &[&str] = &[
    "--detach",
    "--interactive",
    "--tty",
    "--rm",
    "--init",
    "--read-only",
    "--force-rm",
];

/// docker's flags the CLI renderer writes with a value, always attached (`--flag=value`).
const VALUE_FLAGS: &[&str] = &[
    "--name",
    "--entrypoint",
    "--user",
    "--workdir",
    "--env",
    "--mount",
    "--tmpfs",
    "--security-opt",
    "--cap-drop",
    "--cap-add",
    "--runtime",
    "--network",
    "--add-host",
    "--publish",
    "--network-alias",
    "--ip",
    "--expose",
    "--dns",
    "--sysctl",
    "--memory",
    "--memory-swap",
    "--shm-size",
    "--cpus",
    "--pids-limit",
    "--log-driver",
    "--log-opt",
    "--device",
    "--label",
    "--tag",
    "--file",
    "--build-context",
    "--build-arg",
];

/// Reads a rendered argv the way docker's pflag does for `docker run` and `docker build`
/// (interspersed options off: options end at the first word that does not start with `-`)
/// and returns (options, positional words).
///
/// Panics unless every option is one of the renderer's own flags, bare or with its value
/// attached, so no value (an image, a user, a path, an environment value) stands alone where
/// docker would read it as a flag.
pub fn parse_like_pflag(argv: &[String]) -> (Vec<(String, Option<String>)>, Vec<String>) {
    assert_eq!(argv.first().map(String::as_str), Some("docker"));
    assert!(matches!(argv[1].as_str(), "run" | "build"), "{argv:?}");
    let mut options = Vec::new();
    let mut index = 2;
    while index < argv.len() && argv[index].starts_with('-') && argv[index] != "-" {
        let word = &argv[index];
        assert_ne!(word, "--", "the renderer never ends options with `--`");
        match word.split_once('=') {
            Some((flag, value)) => {
                assert!(
                    VALUE_FLAGS.contains(&flag),
                    "argv[{index}] {word:?}: not a flag of the renderer"
                );
                options.push((flag.to_string(), Some(value.to_string())));
            }
            None => {
                assert!(
                    BARE_FLAGS.contains(&word.as_str()),
                    "argv[{index}] {word:?}: a value-taking flag without an attached value, or \
                     a value read as a flag"
                );
                options.push((word.clone(), None));
            }
        }
        index += 1;
    }
    (options, argv[index..].to_vec())
}

/// The structural check of a rendered launch: options are the renderer's, the image is the
/// first positional word and the command follows it unchanged; a build ends with its context.
pub fn check_structure(spec: &LaunchSpec, argv: &[String]) {
    let (_, positional) = parse_like_pflag(argv);
    match &spec.action {
        Action::Container(container) => {
            assert_eq!(argv[1], "run", "{argv:?}");
            assert_eq!(positional.first(), Some(&container.image), "{argv:?}");
            assert_eq!(&positional[1..], container.command.as_slice(), "{argv:?}");
        }
        Action::Build(build) => {
            assert_eq!(argv[1], "build", "{argv:?}");
            assert_eq!(positional, std::slice::from_ref(&build.context), "{argv:?}")
        }
    }
}
