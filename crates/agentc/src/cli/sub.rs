//! [`Sub`]: a subcommand's arguments, added when the subcommand is parsed. Every subcommand's
//! arguments are deferred (`#[command(defer = true)]`), so `agentc --version` and an offline
//! command build only the arguments of the subcommand they run, not the whole tree; `Sub`
//! keeps the subcommand's own description when its arguments struct has a doc comment of its
//! own, which clap's deferred step would otherwise put in its place.

use clap::{ArgMatches, Args, Command, FromArgMatches};

/// The arguments `T` of a subcommand, added without replacing the subcommand's description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sub<T>(pub T);

/// Adds `T`'s arguments to `command` through `add`, then gives back the description the
/// subcommand had (its variant's doc comment), when it had one.
fn keeping_about(command: Command, add: fn(Command) -> Command) -> Command {
    let about = command.get_about().cloned();
    let long_about = command.get_long_about().cloned();
    let command = add(command);
    let Some(about) = about else {
        return command;
    };
    let command = command.about(about);
    match long_about {
        Some(long_about) => command.long_about(long_about),
        None => command.long_about(None),
    }
}

impl<T: Args> Args for Sub<T> {
    fn augment_args(command: Command) -> Command {
        keeping_about(command, T::augment_args)
    }

    fn augment_args_for_update(command: Command) -> Command {
        keeping_about(command, T::augment_args_for_update)
    }

    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

impl<T: FromArgMatches> FromArgMatches for Sub<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Sub)
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(matches).map(Sub)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }

    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use crate::cli::Cli;

    /// Every subcommand of `command`, built, with its path.
    fn every_subcommand(command: &clap::Command, path: &str, out: &mut Vec<(String, String)>) {
        for sub in command.get_subcommands() {
            let path = format!("{path} {}", sub.get_name());
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            out.push((path.clone(), about));
            every_subcommand(sub, &path, out);
        }
    }

    #[test]
    fn the_tree_is_valid_and_a_subcommands_arguments_wait_until_it_is_built() {
        Cli::command().debug_assert();
        let unbuilt = Cli::command();
        let run = unbuilt.find_subcommand("run").expect("run");
        assert_eq!(
            run.get_arguments().count(),
            0,
            "run's arguments are deferred"
        );
        let mut built = Cli::command();
        built.build();
        let run = built.find_subcommand("run").expect("run");
        assert!(run.get_arguments().any(|arg| arg.get_id() == "workspace"));
    }

    #[test]
    fn each_subcommand_keeps_its_own_description_once_its_arguments_are_added() {
        let mut command = Cli::command();
        command.build();
        let mut subcommands = Vec::new();
        every_subcommand(&command, "agentc", &mut subcommands);
        let about = |path: &str| {
            subcommands
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, about)| about.clone())
                .unwrap_or_else(|| panic!("no {path}"))
        };
        assert_eq!(
            about("agentc validate"),
            "Check that a profile is valid and can be launched here"
        );
        // Two subcommands of one arguments struct keep their two descriptions.
        assert!(
            about("agentc pause").starts_with("Freeze"),
            "{}",
            about("agentc pause")
        );
        assert!(
            about("agentc resume").starts_with("Thaw"),
            "{}",
            about("agentc resume")
        );
        assert!(
            about("agentc pool fill").starts_with("Start"),
            "{}",
            about("agentc pool fill")
        );
        // No subcommand shows its arguments struct's doc comment (`` `agentc run` ``).
        for (path, about) in &subcommands {
            assert!(
                !about.is_empty() && !about.starts_with('`') && about != "A profile file",
                "{path}: {about:?}"
            );
        }
    }
}
