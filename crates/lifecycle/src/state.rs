//! The deployment state of a profile: what `agentc apply` and `agentc rollback` recorded, as a
//! TOML file a person can read.
//!
//! Each apply appends a [`Deployment`]: the image the launches run (tag and image ID), the
//! image a rollback returns to, the spec digests of the launches, and the seed sources copied.
//! A rollback appends one too, pointing back at the previous image; a second rollback without
//! an apply in between is refused. The transitions are pure: the caller moves tags, runs the
//! build and the seeds, and writes the file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{parse_toml, LifecycleError};
use crate::reference::{is_image_id, short_id};

/// The version of the state format this crate writes and reads.
pub const STATE_VERSION: u32 = 1;

/// How many deployments a state keeps; older ones are dropped.
pub const MAX_DEPLOYMENTS: usize = 20;

/// A profile's deployment state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    /// The format's version ([`STATE_VERSION`]).
    pub state_version: u32,
    /// The profile's name.
    pub profile: String,
    /// The deployments, oldest first; the last is the current one.
    #[serde(default, rename = "deployment")]
    pub deployments: Vec<Deployment>,
}

/// What made a deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// `agentc apply`.
    Apply,
    /// `agentc rollback`.
    Rollback,
}

/// One recorded deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deployment {
    /// Its number, counting from 1 for the profile.
    pub number: u64,
    /// What made it.
    pub step: Step,
    /// When (UTC).
    pub at: toml::value::Datetime,
    /// The agentc that made it.
    pub agentc_version: String,
    /// The profile file.
    pub profile_file: String,
    /// The image reference the launches run.
    pub image: String,
    /// The image ID the reference pointed at.
    pub image_id: String,
    /// Whether this apply built the image.
    #[serde(default)]
    pub built: bool,
    /// The image a rollback returns to, kept under `retained_tag`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_image_id: Option<String>,
    /// The tag that keeps the previous image from being lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retained_tag: Option<String>,
    /// The spec digest of each launch, by label (`run`, `seed TARGET`, ...).
    #[serde(default)]
    pub spec_digests: BTreeMap<String, String>,
    /// Each seed target copied, with the content hash of its source at the time.
    #[serde(default)]
    pub seeds: BTreeMap<String, String>,
    /// The home volume the seeds went into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home_volume: Option<String>,
}

/// What an apply is about to record, gathered by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// When (seconds since the Unix epoch).
    pub unix_seconds: u64,
    /// The running agentc's version.
    pub agentc_version: String,
    /// The profile file.
    pub profile_file: String,
    /// The image reference the launches run.
    pub image: String,
    /// Its image ID now.
    pub image_id: String,
    /// Whether the image was built.
    pub built: bool,
    /// The tag that keeps the previous image (`None` for a digest reference).
    pub retained_tag: Option<String>,
    /// Spec digests by launch label.
    pub spec_digests: BTreeMap<String, String>,
    /// Seed targets with the hash of the source copied (including those skipped because
    /// unchanged).
    pub seeds: BTreeMap<String, String>,
    /// The home volume.
    pub home_volume: Option<String>,
}

/// What a rollback does: point `image` at `to`, keeping `from` under `retained_tag`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollbackPlan {
    /// The reference moved.
    pub image: String,
    /// The image ID it points at now (the current deployment's).
    pub from: String,
    /// The image ID it will point at (the previous deployment's).
    pub to: String,
    /// The tag that keeps `from`.
    pub retained_tag: Option<String>,
}

const HINT: &str = "the state is written by `agentc apply`; restore the file from a backup, or \
                    move it away and run `agentc apply` again (the images and volumes are not \
                    touched)";

impl State {
    /// An empty state for a profile.
    pub fn new(profile: &str) -> State {
        State {
            state_version: STATE_VERSION,
            profile: profile.to_string(),
            deployments: Vec::new(),
        }
    }

    /// Reads a state file; a corrupt, truncated or hand-edited one is an error naming the file
    /// and line, and a state of another profile is refused.
    pub fn parse(file: &str, text: &str, profile: &str) -> Result<State, LifecycleError> {
        let state: State = parse_toml(file, text, HINT)?;
        let corrupt = |needle: &str, message: String| {
            LifecycleError::corrupt_at(file, text, needle, message, HINT)
        };
        if state.state_version != STATE_VERSION {
            return Err(corrupt(
                "state_version",
                format!(
                    "state_version {} is not the version this agentc reads ({STATE_VERSION})",
                    state.state_version
                ),
            ));
        }
        if state.profile != profile {
            return Err(LifecycleError::Refused {
                file: file.to_string(),
                message: format!(
                    "the state belongs to profile {:?}, not {profile:?}",
                    state.profile
                ),
                hint: "profiles are told apart by their name: give this profile its own name, \
                       or set AGENTC_STATE_DIR to keep its state elsewhere"
                    .to_string(),
            });
        }
        let mut last = 0;
        for deployment in &state.deployments {
            if deployment.number <= last {
                return Err(corrupt(
                    &format!("number = {}", deployment.number),
                    format!(
                        "deployment {} follows deployment {last}: numbers must increase",
                        deployment.number
                    ),
                ));
            }
            last = deployment.number;
            for id in std::iter::once(&deployment.image_id).chain(&deployment.previous_image_id) {
                if !is_image_id(id) {
                    return Err(corrupt(
                        id,
                        format!(
                            "deployment {}: {id:?} is not an image ID",
                            deployment.number
                        ),
                    ));
                }
            }
        }
        Ok(state)
    }

    /// The state as a commented TOML document.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string(self).unwrap_or_default();
        format!(
            "# agentc deployment state of profile {:?}, written by `agentc apply` and\n\
             # `agentc rollback`. Read it freely; the commands refuse a hand-edited one that no\n\
             # longer reads.\n\n{body}",
            self.profile
        )
    }

    /// The current deployment: the last recorded.
    pub fn current(&self) -> Option<&Deployment> {
        self.deployments.last()
    }

    fn push(&mut self, mut deployment: Deployment) {
        deployment.number = self.current().map_or(1, |current| current.number + 1);
        self.deployments.push(deployment);
        let excess = self.deployments.len().saturating_sub(MAX_DEPLOYMENTS);
        self.deployments.drain(..excess);
    }

    /// The image an apply keeps under the retained tag before it builds: the current
    /// deployment's.
    pub fn image_to_retain(&self) -> Option<&str> {
        self.current().map(|current| current.image_id.as_str())
    }

    /// Records an apply. The previous image is the current deployment's when the image
    /// changed, else the one it could already return to.
    pub fn record_apply(&mut self, applied: Applied) -> &Deployment {
        let previous_image_id = match self.current() {
            Some(current) if current.image_id != applied.image_id => Some(current.image_id.clone()),
            Some(current) => current.previous_image_id.clone(),
            None => None,
        };
        self.push(Deployment {
            number: 0,
            step: Step::Apply,
            at: utc_datetime(applied.unix_seconds),
            agentc_version: applied.agentc_version,
            profile_file: applied.profile_file,
            image: applied.image,
            image_id: applied.image_id,
            built: applied.built,
            previous_image_id,
            retained_tag: applied.retained_tag,
            spec_digests: applied.spec_digests,
            seeds: applied.seeds,
            home_volume: applied.home_volume,
        });
        self.deployments.last().expect("just pushed")
    }

    /// What a rollback would do, or why it is refused: nothing applied, the last step was a
    /// rollback already, or no previous image is recorded.
    pub fn rollback_plan(&self, file: &str) -> Result<RollbackPlan, LifecycleError> {
        let refused = |message: String, hint: &str| LifecycleError::Refused {
            file: file.to_string(),
            message,
            hint: hint.to_string(),
        };
        let Some(current) = self.current() else {
            return Err(refused(
                format!("profile {:?} has no deployment to roll back", self.profile),
                "run `agentc apply PROFILE` first",
            ));
        };
        if current.step == Step::Rollback {
            return Err(refused(
                format!(
                    "deployment {} is a rollback already; a second rollback without a new apply is refused",
                    current.number
                ),
                "run `agentc apply PROFILE` to deploy again; each apply can be rolled back once",
            ));
        }
        let Some(previous) = &current.previous_image_id else {
            return Err(refused(
                format!(
                    "deployment {} has no previous image to return to (image {} is the only one applied)",
                    current.number,
                    short_id(&current.image_id)
                ),
                "a rollback returns to the image of an earlier apply; apply a changed image first",
            ));
        };
        Ok(RollbackPlan {
            image: current.image.clone(),
            from: current.image_id.clone(),
            to: previous.clone(),
            retained_tag: current.retained_tag.clone(),
        })
    }

    /// Records a rollback done as planned.
    pub fn record_rollback(
        &mut self,
        plan: &RollbackPlan,
        unix_seconds: u64,
        agentc_version: &str,
    ) {
        let current = self.current().cloned();
        let Some(current) = current else {
            return;
        };
        self.push(Deployment {
            number: 0,
            step: Step::Rollback,
            at: utc_datetime(unix_seconds),
            agentc_version: agentc_version.to_string(),
            image_id: plan.to.clone(),
            built: false,
            previous_image_id: Some(plan.from.clone()),
            retained_tag: plan.retained_tag.clone(),
            ..current
        });
    }
}

/// Which seeds an apply copies: those never copied into this home volume, those whose source
/// changed since, and all of them when the volume is gone. `sources` maps each seed target to
/// the hash of its source now.
pub fn seeds_to_copy(
    current: Option<&Deployment>,
    sources: &BTreeMap<String, String>,
    home_volume: Option<&str>,
    volume_exists: bool,
) -> Vec<String> {
    sources
        .iter()
        .filter(|(target, digest)| {
            let Some(current) = current else {
                return true;
            };
            !volume_exists
                || current.home_volume.as_deref() != home_volume
                || current.seeds.get(*target) != Some(*digest)
        })
        .map(|(target, _)| target.clone())
        .collect()
}

/// A UTC date and time, to the second, from seconds since the Unix epoch.
pub fn utc_datetime(unix_seconds: u64) -> toml::value::Datetime {
    let days = (unix_seconds / 86_400) as i64;
    let seconds = unix_seconds % 86_400;
    // Howard Hinnant's days_from_civil, inverted.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let text = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        seconds / 3_600,
        seconds / 60 % 60,
        seconds % 60
    );
    text.parse().expect("a well-formed RFC 3339 date")
}

#[cfg(test)]
mod tests;
