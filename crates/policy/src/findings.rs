//! The security report of a launch: what in it widens the sandbox, gathered from every table
//! (under `rules/`), each finding with a stable code, a severity and the profile field that
//! causes it. The vocabulary and the report's forms are in [`crate::finding`].
//!
//! [`findings`] reads a loaded profile and the [`LaunchSpec`] resolved from it, and never fails:
//! a valid spec always has a report (possibly empty).

use serde_json::{json, Value};

use crate::document::LoadedProfile;
use crate::finding::{report_json, Finding, Report};
use crate::rules;
use crate::spec::{Action, LaunchSpec};

/// The findings of one launch, most severe first, then by code and field; the order is stable.
pub fn findings(loaded: &LoadedProfile, spec: &LaunchSpec) -> Vec<Finding> {
    let mut report = Report {
        loaded,
        spec,
        list: Vec::new(),
    };
    if let Action::Container(container) = &spec.action {
        if report.agent_launch() {
            rules::egress::findings(&mut report);
            rules::credentials::findings(&mut report, container);
        }
        rules::mounts::findings(&mut report, container);
        rules::security::docker_host_findings(&mut report, container);
        rules::security::findings(&mut report, container);
        rules::egress::host_path::findings(&mut report, container);
        rules::network::findings(&mut report, container);
        rules::resources::findings(&mut report, container);
        rules::logging::findings(&mut report, container);
    }
    if let Action::Build(build) = &spec.action {
        rules::image::build_findings(&mut report, build);
    }
    rules::decant::findings_elsewhere(&mut report);
    let mut list = report.list;
    list.sort_by(|a, b| {
        b.severity()
            .cmp(&a.severity())
            .then_with(|| a.code.as_str().cmp(b.code.as_str()))
            .then_with(|| a.field().cmp(&b.field()))
    });
    list.dedup();
    list
}

/// The whole `agentc explain --format json` document: the profile, the launch kind, the spec
/// and the report of [`report_json`].
pub fn explain_json(loaded: &LoadedProfile, spec: &LaunchSpec) -> Value {
    let report = findings(loaded, spec);
    let mut value = report_json(&report);
    if let Value::Object(map) = &mut value {
        map.insert("profile".to_string(), json!(spec.profile));
        map.insert("file".to_string(), json!(loaded.file));
        map.insert("kind".to_string(), json!(spec.kind));
        map.insert(
            "spec".to_string(),
            serde_json::to_value(spec).unwrap_or(Value::Null),
        );
    }
    value
}

#[cfg(test)]
mod tests;
