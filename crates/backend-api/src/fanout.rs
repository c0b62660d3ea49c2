//! Many detached launches at once (`agentc run --detach --count N`): each image is inspected
//! once, then every copy goes through [`crate::launch()`] on the same daemon connection (one pool, see [`crate::daemon`]), at most `jobs`
//! at a time. A fleet starts whole or not at all: after the first failure no further copy is
//! started, the copies already started are removed, and the error names every copy that failed
//! and anything that could not be removed.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use agentc_backend_common::ExecError;
use agentc_policy::ContainerSpec;
use bollard::Docker;
use futures_util::{stream, StreamExt};

use crate::admin::remove_quietly;
use crate::launch::{check_image, launch_checked, LaunchOptions, Outcome};
use crate::signals::Signals;

/// How many launches [`launch_many`] runs at once unless told otherwise: enough to keep a
/// daemon busy, few enough not to queue behind its own locks.
pub const DEFAULT_JOBS: usize = 8;

/// The names of `count` copies of a launch named `base`: `base-1` to `base-COUNT`, so each is
/// unique, and predictable from the base name.
pub fn copy_names(base: &str, count: usize) -> Vec<String> {
    (1..=count).map(|index| format!("{base}-{index}")).collect()
}

/// One started copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launched {
    /// The container's name.
    pub name: String,
    /// How its launch ended (detached: exit code 0 and the container's ID).
    pub outcome: Outcome,
}

/// Why a fleet did not start: every copy that failed, those not started, and what the rollback
/// of the started ones left behind.
#[derive(Debug)]
pub struct LaunchManyError {
    /// How many copies were asked for.
    pub count: usize,
    /// Each copy that failed, by name, in launch order.
    pub failed: Vec<(String, ExecError)>,
    /// Copies not started because an earlier one failed.
    pub not_started: Vec<String>,
    /// Copies that had started and were removed again.
    pub rolled_back: Vec<String>,
    /// Copies that had started and could not be removed, with the daemon's message: they are
    /// still there (`agentc rm NAME`).
    pub left: Vec<(String, String)>,
}

impl LaunchManyError {
    /// The exit status: the first failure's ([`ExecError::exit_code`]).
    pub fn exit_code(&self) -> i32 {
        self.failed
            .first()
            .map_or(agentc_backend_common::error::EXIT_DOCKER, |(_, error)| {
                error.exit_code()
            })
    }
}

impl fmt::Display for LaunchManyError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{} of {} copies failed to launch",
            self.failed.len(),
            self.count
        )?;
        for (name, error) in &self.failed {
            // A multi-line error (with its hint) stays indented under its copy.
            let text = error.to_string().replace('\n', "\n    ");
            write!(formatter, "\n  {name}: {text}")?;
        }
        if !self.not_started.is_empty() {
            write!(
                formatter,
                "\n  not started: {}",
                self.not_started.join(", ")
            )?;
        }
        if !self.rolled_back.is_empty() {
            write!(
                formatter,
                "\n  removed again: {}",
                self.rolled_back.join(", ")
            )?;
        }
        for (name, message) in &self.left {
            write!(formatter, "\n  left behind: {name} ({message})")?;
        }
        let hint = if self.left.is_empty() {
            "nothing of this launch is left; fix the failure and run it again"
        } else {
            "remove what is left with `agentc rm NAME`"
        };
        write!(formatter, "\n  hint: {hint}")
    }
}

impl std::error::Error for LaunchManyError {}

/// Launches every spec through [`crate::launch()`], at most `jobs` at a time (at least one), on
/// `docker`'s one connection pool, and returns them in the order given. The specs are meant to
/// be detached (an attached one holds its slot until its container exits) and named, such as
/// the copies of [`copy_names`] (an unnamed one is reported as `copy N`). On any failure, or SIGINT/SIGTERM during the launches, no
/// further copy starts, the started ones are removed, and the error says what happened to each.
pub async fn launch_many(
    docker: &Docker,
    specs: &[ContainerSpec],
    options: &LaunchOptions,
    jobs: usize,
) -> Result<Vec<Launched>, LaunchManyError> {
    // Each image once for the whole fleet, before anything is created.
    let mut images: Vec<&ContainerSpec> = Vec::new();
    for spec in specs {
        if images.iter().all(|seen| seen.image != spec.image) {
            images.push(spec);
        }
    }
    let checked = async {
        let mut signals = Signals::new()?;
        for spec in &images {
            check_image(docker, spec, &mut signals).await?;
        }
        Ok::<_, ExecError>(())
    };
    if let Err(error) = checked.await {
        let mut names = specs.iter().enumerate().map(|(index, spec)| {
            spec.name
                .clone()
                .unwrap_or_else(|| format!("copy {}", index + 1))
        });
        return Err(LaunchManyError {
            count: specs.len(),
            failed: names.next().map(|name| (name, error)).into_iter().collect(),
            not_started: names.collect(),
            rolled_back: Vec::new(),
            left: Vec::new(),
        });
    }
    let stop = AtomicBool::new(false);
    let stop = &stop;
    let mut results: Vec<(usize, Option<Result<Outcome, ExecError>>)> =
        stream::iter(specs.iter().enumerate())
            .map(|(index, spec)| async move {
                if stop.load(Ordering::SeqCst) {
                    return (index, None);
                }
                let result = launch_checked(docker, spec, options, true).await;
                if result.is_err() {
                    stop.store(true, Ordering::SeqCst);
                }
                (index, Some(result))
            })
            .buffer_unordered(jobs.max(1))
            .collect()
            .await;
    results.sort_by_key(|(index, _)| *index);
    let name_of = |index: usize| {
        specs[index]
            .name
            .clone()
            .unwrap_or_else(|| format!("copy {}", index + 1))
    };
    if !stop.load(Ordering::SeqCst) {
        return Ok(results
            .into_iter()
            .filter_map(|(index, result)| {
                Some(Launched {
                    name: name_of(index),
                    outcome: result?.ok()?,
                })
            })
            .collect());
    }
    let mut error = LaunchManyError {
        count: specs.len(),
        failed: Vec::new(),
        not_started: Vec::new(),
        rolled_back: Vec::new(),
        left: Vec::new(),
    };
    let mut started = Vec::new();
    for (index, result) in results {
        match result {
            None => error.not_started.push(name_of(index)),
            Some(Err(failure)) => error.failed.push((name_of(index), failure)),
            Some(Ok(outcome)) => started.push((name_of(index), outcome.container_id)),
        }
    }
    log::debug!(
        "{} copies failed: removing the {} started",
        error.failed.len(),
        started.len()
    );
    let removals: Vec<(String, Result<(), String>)> = stream::iter(started)
        .map(|(name, id)| async move {
            let removed = remove_quietly(docker, &id)
                .await
                .map_err(|error| error.to_string());
            (name, removed)
        })
        .buffer_unordered(jobs.max(1).min(crate::admin::remove_jobs(docker)))
        .collect()
        .await;
    for (name, removed) in removals {
        match removed {
            Ok(()) => error.rolled_back.push(name),
            Err(message) => error.left.push((name, message)),
        }
    }
    error.rolled_back.sort();
    error.left.sort();
    Err(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_numbered_from_one() {
        assert_eq!(copy_names("box", 3), ["box-1", "box-2", "box-3"]);
        assert!(copy_names("box", 0).is_empty());
    }

    #[test]
    fn the_error_names_every_copy_and_says_what_is_left() {
        let error = LaunchManyError {
            count: 4,
            failed: vec![(
                "box-2".to_string(),
                ExecError::ImageMissing {
                    image: "img:1".to_string(),
                },
            )],
            not_started: vec!["box-4".to_string()],
            rolled_back: vec!["box-1".to_string()],
            left: vec![("box-3".to_string(), "daemon gone".to_string())],
        };
        let text = error.to_string();
        assert!(
            text.starts_with("1 of 4 copies failed to launch\n  box-2: "),
            "{text}"
        );
        assert!(text.contains("not started: box-4"), "{text}");
        assert!(text.contains("removed again: box-1"), "{text}");
        assert!(text.contains("left behind: box-3 (daemon gone)"), "{text}");
        assert!(
            text.ends_with("hint: remove what is left with `agentc rm NAME`"),
            "{text}"
        );
        assert_eq!(error.exit_code(), 125);
    }
}
