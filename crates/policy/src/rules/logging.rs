//! `[logging]`: json-file rotation (default 50m x 3, then the profile, then the environment;
//! `off` keeps the daemon's default logging), its explanation and the `log-rotation-off`
//! finding.

use std::collections::BTreeMap;

use crate::check::Checker;
use crate::context::{env_origin, Resolver};
use crate::explainer::Explainer;
use crate::finding::{FindingCode, Report};
use crate::keys;
use crate::limits::{format_size, Limit};
use crate::overrides;
use crate::presets;
use crate::profile::Profile;
use crate::spec::{ContainerSpec, LogConfig, Origin};

/// `max_file` has no meaning when rotation is off.
pub(crate) fn check(ck: &mut Checker, profile: &Profile) {
    let logging = &profile.logging;
    if logging.max_file.is_some() && logging.max_size == Some(Limit::Off) {
        ck.fail_when(
            &["logging.max_size"],
            "logging.max_file",
            "logging.max_file contradicts logging.max_size = \"off\"",
            "remove max_file: with max_size = \"off\" logs are not rotated",
        );
    }
}

impl Resolver<'_> {
    /// json-file rotation: default 50m x 3, then `[logging]`, then the environment; a max size
    /// of `off` keeps the daemon's default logging.
    pub fn logging(&mut self, container: &mut ContainerSpec) {
        let logging = &self.profile.logging;
        let mut size = (Some(presets::DEFAULT_LOG_MAX_SIZE_BYTES), Origin::Default);
        if let Some(limit) = logging.max_size {
            size = (limit.value(), self.field_origin("logging.max_size"));
        }
        if let Some(limit) = self.overrides.log_max_size_bytes {
            size = (limit.value(), env_origin(overrides::LOG_MAX_SIZE));
        }
        let mut files = (presets::DEFAULT_LOG_MAX_FILE, Origin::Default);
        if let Some(count) = logging.max_file {
            files = (count, self.field_origin("logging.max_file"));
        }
        if let Some(count) = self.overrides.log_max_file {
            files = (count, env_origin(overrides::LOG_MAX_FILE));
        }
        match size.0 {
            None => {
                container.log = None;
                self.set(keys::LOG, size.1);
            }
            Some(bytes) => {
                let options = BTreeMap::from([
                    ("max-size".to_string(), format_size(bytes)),
                    ("max-file".to_string(), files.0.to_string()),
                ]);
                container.log = Some(LogConfig {
                    driver: presets::LOG_DRIVER.to_string(),
                    options,
                });
                self.set(keys::LOG, Origin::Default);
                self.set(keys::log_option("max-size"), size.1);
                self.set(keys::log_option("max-file"), files.1);
            }
        }
    }
}

/// The logging section.
pub(crate) fn explain(out: &mut Explainer, c: &ContainerSpec) {
    out.section("logging");
    match &c.log {
        None => out.item("driver", "docker's default, unbounded", keys::LOG),
        Some(log) => {
            out.item("driver", &log.driver, keys::LOG);
            for (name, value) in &log.options {
                out.item(name, value, &keys::log_option(name));
            }
        }
    }
}

/// What widens the sandbox here: rotation off.
pub(crate) fn widens(out: &Explainer, c: &ContainerSpec, items: &mut Vec<String>) {
    if c.log.is_none() {
        items.push(format!("log rotation off  [{}]", out.words(keys::LOG)));
    }
}

/// `log-rotation-off`.
pub(crate) fn findings(report: &mut Report, c: &ContainerSpec) {
    if c.log.is_none() {
        let at = report.field_of(keys::LOG, "logging.max_size");
        report.push(
            FindingCode::LogRotationOff,
            at,
            "log rotation is off: the container's log grows without bound on the host's disk"
                .to_string(),
            "remove logging.max_size = \"off\" and AGENTC_LOG_MAX_SIZE=off",
        );
    }
}
