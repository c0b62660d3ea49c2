//! A container launch (`agentc run`), written once over the [engine port](crate::port): the
//! spec's refusals before anything is created, the image made present, the named volumes, the
//! egress companion, then the container run attached to its exit ([`EnginePort::run_attached`])
//! or created and started detached ([`EnginePort::start_launch`]); and the copies of `agentc
//! run --count` ([`launch_copies`]), started whole or not at all.
//!
//! A SIGINT or SIGTERM between the steps, or during the engine's, ends the launch (130, 143)
//! and removes what it created, as does a refused start. An attached launch's companion is
//! removed when its workload ends; a started detached sandbox keeps its companion (`agentc rm`
//! removes them together).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use agentc_policy::ContainerSpec;
use agentc_policy::Hinted;
use bollard::models::ContainerInspectResponse;
use futures_util::{stream, StreamExt};

use crate::companion::{self, EgressSet};
use crate::port::EnginePort;
pub use crate::port::Exited;
pub use crate::signals::Interrupts;
use crate::ExecError;
pub use agentc_egress::image::ProxyExecutable;

/// How many copies [`launch_copies`] starts at once unless told otherwise: enough to keep an
/// engine busy, few enough not to queue behind its own locks.
pub const DEFAULT_JOBS: usize = 8;

/// How a launch is run, beyond its spec.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchOptions {
    /// Pull a missing image (`--pull`); without, a missing image is refused.
    pub pull: bool,
    /// Whether stdin is a terminal: an attached launch with a TTY spec then switches it to
    /// raw mode and has its size follow the local window.
    pub terminal: bool,
    /// The agentc executable the egress proxy's image is made of (unless the spec names an
    /// image): the default, the running executable, is right for the agentc binary; a program
    /// embedding agentc names the agentc binary.
    pub proxy_executable: ProxyExecutable,
}

/// A detached sandbox that started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// The container's ID.
    pub id: String,
    /// The spec it was started from: the caller's, moved to its companion's instance when it
    /// has one (its name, network and DNS).
    pub placed: ContainerSpec,
    /// The egress companion kept with it.
    pub companion: Option<EgressSet>,
}

/// How a launch ended: a detached sandbox started, or an attached one ran to its exit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launched {
    /// The detached sandbox started.
    Started(Box<Started>),
    /// The attached container ended.
    Exited(Exited),
}

/// Launches `spec` through `port`, attached or detached as the spec says; see the module
/// documentation. `notify` is told when the image is pulled (with `options.pull`; without, a
/// missing image is refused). The engine's refusals are worded as the backend words them
/// ([`EnginePort::check_launch`], [`EnginePort::start_launch`], [`EnginePort::run_attached`]).
pub async fn launch<P: EnginePort, S: Interrupts>(
    port: &P,
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
    options: &LaunchOptions,
    notify: &mut (dyn FnMut(&str) + Send),
    signals: &mut S,
) -> Result<Launched, ExecError> {
    prepare(port, spec, env, Some(options.pull), notify, signals).await?;
    let proxy = &options.proxy_executable;
    if spec.detach {
        return start(port, spec, env, proxy, signals)
            .await
            .map(|started| Launched::Started(Box::new(started)));
    }
    let mut placed = spec.clone();
    let set = {
        let mut pending = || signals.pending();
        companion::setup_for(port, &mut placed, env, proxy, &mut pending).await?
    };
    let exited = port
        .run_attached(&placed, env, options.terminal, signals)
        .await;
    if let Some(set) = &set {
        companion::teardown(port, set).await;
    }
    exited.map(Launched::Exited)
}

/// Launches `spec` detached through `port` ([`launch`] of a detached spec, `options.terminal`
/// unused), and returns the started sandbox.
pub async fn launch_detached<P: EnginePort, S: Interrupts>(
    port: &P,
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
    options: &LaunchOptions,
    notify: &mut (dyn FnMut(&str) + Send),
    signals: &mut S,
) -> Result<Started, ExecError> {
    let spec = &ContainerSpec {
        detach: true,
        ..spec.clone()
    };
    prepare(port, spec, env, Some(options.pull), notify, signals).await?;
    start(port, spec, env, &options.proxy_executable, signals).await
}

/// What comes before anything is created: the secrets resolved (only names logged), the
/// argv's refusals, the image made present (`pull`: `None` when the caller made it so) and
/// refused where it lacks the firewall the launch leaves egress to, the engine's refusals of
/// the spec, the named volumes; a signal between the steps ends it.
async fn prepare<P: EnginePort, S: Interrupts>(
    port: &P,
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
    pull: Option<bool>,
    notify: &mut (dyn FnMut(&str) + Send),
    signals: &mut S,
) -> Result<(), ExecError> {
    crate::resolve_env(spec, env)?;
    let passed = crate::secrets::passed_secrets(spec, env);
    if !passed.is_empty() {
        log::debug!(
            "secrets passed from this environment, by name: {}",
            passed.join(", ")
        );
    }
    crate::argv::check_container(spec)?;
    if let Some(pull) = pull {
        crate::image::ensure_image(port, &spec.image, pull, notify).await?;
    }
    crate::image::refuse_missing_firewall(port, spec).await?;
    between_steps(signals)?;
    // The runtime asked for and Podman's rows applied before anything is created.
    port.check_launch(spec).await?;
    crate::volumes::ensure_volumes(port, spec).await?;
    between_steps(signals)
}

/// The companion of a prepared detached `spec` (its proxy image made of `proxy` unless the
/// spec names one), then its container created and started, the start raced against a
/// signal; the companion is torn down when the sandbox does not start.
async fn start<P: EnginePort, S: Interrupts>(
    port: &P,
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
    proxy: &ProxyExecutable,
    signals: &mut S,
) -> Result<Started, ExecError> {
    let mut placed = spec.clone();
    let set = {
        let mut pending = || signals.pending();
        companion::setup_for(port, &mut placed, env, proxy, &mut pending).await?
    };
    let name = placed.name.clone();
    let started = tokio::select! {
        started = port.start_launch(&placed, env) => started,
        signal = signals.recv() => {
            // The engine may have created it: only its name finds it again.
            let interrupted = |removed: Option<&str>| ExecError::interrupted(signal, removed);
            match &name {
                Some(name) => match port.remove_container(name).await {
                    Ok(()) => Err(interrupted(Some(name))),
                    Err(error) => Err(ExecError::NotRemoved {
                        cause: Box::new(interrupted(None)),
                        container: name.clone(),
                        message: error.to_string(),
                    }),
                },
                None => Err(interrupted(None)),
            }
        }
    };
    match started {
        Ok(id) => Ok(Started {
            id,
            placed,
            companion: set,
        }),
        Err(error) => {
            if let Some(set) = &set {
                companion::teardown(port, set).await;
            }
            Err(error)
        }
    }
}

/// The inspect of a started sandbox, to show where it can be reached ([`reachable_inspect`]).
pub async fn reachable<P: EnginePort>(
    port: &P,
    started: &Started,
) -> Result<ContainerInspectResponse, ExecError> {
    reachable_inspect(port, &started.id).await
}

/// The inspect of the container `id`, with the host bindings of the ports its egress proxy
/// relays for it added ([`companion::add_relayed_ports`]): what says where its ports are
/// reachable.
pub async fn reachable_inspect<P: EnginePort>(
    port: &P,
    id: &str,
) -> Result<ContainerInspectResponse, ExecError> {
    let mut inspect = port
        .inspect(id)
        .await
        .map_err(|error| error.in_launch(port.engine(), "inspect the started container"))?;
    let name = inspect
        .name
        .as_deref()
        .unwrap_or_default()
        .trim_start_matches('/')
        .to_string();
    companion::add_relayed_ports(port, &name, &mut inspect).await;
    Ok(inspect)
}

/// The signal received between two steps, as the launch's error (nothing of the step before
/// is left: what it created is removed on the way out).
fn between_steps<S: Interrupts>(signals: &mut S) -> Result<(), ExecError> {
    match signals.pending() {
        Some(signal) => Err(ExecError::Interrupted {
            signal,
            cleanup: None,
        }),
        None => Ok(()),
    }
}

/// The names of `count` copies of a launch named `base`: `base-1` to `base-COUNT`, so each is
/// unique, and predictable from the base name.
pub fn copy_names(base: &str, count: usize) -> Vec<String> {
    (1..=count).map(|index| format!("{base}-{index}")).collect()
}

/// Why a fleet did not start: every copy that failed, those not started, and what the rollback
/// of the started ones left behind. Its `Display` is that report; [`Hinted::hint`] says what
/// to do next.
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
    /// Copies that had started and could not be removed, with the engine's message: they are
    /// still there (`agentc rm NAME`).
    pub left: Vec<(String, String)>,
}

impl LaunchManyError {
    /// The exit status: the first failure's ([`ExecError::exit_code`]).
    pub fn exit_code(&self) -> i32 {
        self.failed
            .first()
            .map_or(crate::error::EXIT_DOCKER, |(_, error)| error.exit_code())
    }

    /// The error of the whole launch when it failed before any copy was created because the
    /// engine cannot be reached (nothing to say per copy), as a single launch reports it.
    pub fn unreachable(&self) -> Option<&ExecError> {
        match (
            self.failed.as_slice(),
            self.rolled_back.is_empty() && self.left.is_empty(),
        ) {
            ([(_, error @ ExecError::Connect { .. })], true) => Some(error),
            _ => None,
        }
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
            let text = error.with_hint().to_string().replace('\n', "\n    ");
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
        Ok(())
    }
}

impl Hinted for LaunchManyError {
    /// Run again when nothing is left; else remove what is left.
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        Some(std::borrow::Cow::Borrowed(if self.left.is_empty() {
            "nothing of this launch is left; fix the failure and run it again"
        } else {
            "remove what is left with `agentc rm NAME`"
        }))
    }
}

impl std::error::Error for LaunchManyError {}

/// Launches every spec detached through `port`, at most `jobs` at a time (at least one), and
/// returns the started sandboxes in the order given (`options.terminal` unused). Each image is
/// made present once for the fleet first (pulled with `options.pull`), and the first copy is launched alone before the others. The specs are meant to be named, such as the copies of
/// [`copy_names`] (an unnamed one is reported as `copy N`). Each launch in flight listens for
/// SIGINT and SIGTERM through a listener of its own ([`Interrupts::another`]), and `signals`
/// is asked before each copy starts. On any failure or signal no further copy starts, the started ones are
/// removed with their companions, and the error says what happened to each.
pub async fn launch_copies<'a, P: EnginePort, S: Interrupts>(
    port: &P,
    specs: &'a [ContainerSpec],
    env: &BTreeMap<String, String>,
    options: &LaunchOptions,
    jobs: usize,
    notify: &mut (dyn FnMut(&str) + Send),
    signals: &mut S,
) -> Result<Vec<Started>, LaunchManyError> {
    let name_of = |index: usize| {
        specs[index]
            .name
            .clone()
            .unwrap_or_else(|| format!("copy {}", index + 1))
    };
    // Each image once for the whole fleet, before anything is created.
    let mut images: Vec<&str> = Vec::new();
    for spec in specs {
        if !images.contains(&spec.image.as_str()) {
            images.push(&spec.image);
        }
    }
    for image in images {
        let ready = match crate::image::ensure_image(port, image, options.pull, notify).await {
            Ok(()) => between_steps(signals),
            Err(error) => Err(error),
        };
        if let Err(error) = ready {
            return Err(LaunchManyError {
                count: specs.len(),
                failed: vec![(name_of(0), error)],
                not_started: (1..specs.len()).map(name_of).collect(),
                rolled_back: Vec::new(),
                left: Vec::new(),
            });
        }
    }
    let stop = AtomicBool::new(false);
    let fleet = Mutex::new(signals);
    let (stop, fleet) = (&stop, &fleet);
    let launch_copy = |(index, spec): (usize, &'a ContainerSpec)| async move {
        if stop.load(Ordering::SeqCst) {
            return (index, None);
        }
        let listened = match fleet.lock() {
            Ok(mut signals) => match signals.pending() {
                Some(signal) => Err(ExecError::Interrupted {
                    signal,
                    cleanup: None,
                }),
                None => signals.another(),
            },
            Err(_) => Err(ExecError::Terminal {
                step: "listen for SIGINT and SIGTERM",
                source: std::io::Error::other("a copy's launch panicked"),
            }),
        };
        let result = match listened {
            Err(error) => Err(error),
            Ok(mut signals) => {
                let spec = &ContainerSpec {
                    detach: true,
                    ..spec.clone()
                };
                match prepare(port, spec, env, None, &mut |_| {}, &mut signals).await {
                    Ok(()) => start(port, spec, env, &options.proxy_executable, &mut signals).await,
                    Err(error) => Err(error),
                }
            }
        };
        if result.is_err() {
            stop.store(true, Ordering::SeqCst);
        }
        (index, Some(result))
    };
    // The first copy alone: a refusal that holds for every copy (a runtime, Podman's egress)
    // is then one failure and the rest not started, whatever the timing; the others follow
    // `jobs` at a time.
    let mut copies = specs.iter().enumerate();
    let mut results: Vec<(usize, Option<Result<Started, ExecError>>)> = Vec::new();
    if let Some(first) = copies.next() {
        results.push(launch_copy(first).await);
    }
    let rest: Vec<_> = stream::iter(copies)
        .map(launch_copy)
        .buffer_unordered(jobs.max(1))
        .collect()
        .await;
    results.extend(rest);
    results.sort_by_key(|(index, _)| *index);
    if !stop.load(Ordering::SeqCst) {
        return Ok(results
            .into_iter()
            .filter_map(|(_, result)| result?.ok())
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
            Some(Ok(sandbox)) => started.push((name_of(index), sandbox)),
        }
    }
    log::debug!(
        "{} copies failed: removing the {} started",
        error.failed.len(),
        started.len()
    );
    let removals: Vec<(String, Result<(), String>)> = stream::iter(started)
        .map(|(name, sandbox)| async move {
            let removed = port
                .remove_container(&sandbox.id)
                .await
                .map_err(|error| error.to_string());
            if let Some(set) = &sandbox.companion {
                companion::teardown(port, set).await;
            }
            (name, removed)
        })
        .buffer_unordered(jobs.max(1))
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
                    engine: crate::Engine::Docker,
                    image: "img:1".to_string(),
                },
            )],
            not_started: vec!["box-4".to_string()],
            rolled_back: vec!["box-1".to_string()],
            left: vec![("box-3".to_string(), "daemon gone".to_string())],
        };
        let text = error.with_hint().to_string();
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
        assert!(error.unreachable().is_none());
    }

    #[test]
    fn attached_exits_are_explained() {
        let exited = |exit_code, oom_killed| Exited {
            exit_code,
            id: "c0ffee".into(),
            oom_killed,
        };
        let text = |exited: Exited| {
            exited
                .explanation()
                .map(|explanation| explanation.with_hint().to_string())
                .unwrap_or_default()
        };
        assert!(text(exited(137, Some(true))).contains("out-of-memory killer (exit"));
        assert!(text(exited(137, Some(false))).contains("SIGKILL"));
        assert!(text(exited(137, None)).contains("SIGKILL; the out-of-memory killer"));
        assert_eq!(exited(3, None).explanation(), None);
    }
}
