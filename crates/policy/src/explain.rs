//! `agentc explain`: a launch spec in words, each value with where it came from.
//!
//! The text is stable (it is snapshot-tested) and plain: a header naming the profile, the
//! kind and the image; one section per concern (process, filesystem, network, security,
//! resources, logging, environment), each written by its table (under `rules/`); then what
//! widens the sandbox and what agentc does beyond the systems it generalizes; last the
//! security report of [`crate::findings()`], each finding with its severity, code, field and
//! hint. A secret is only ever named, never shown.

use std::collections::BTreeMap;

use crate::document::LoadedProfile;
use crate::explainer::Explainer;
use crate::finding::report_text;
use crate::keys;
use crate::rules;
use crate::spec::{Action, ContainerSpec, EnvValue, LaunchKind, LaunchSpec};

/// Human-readable explanation of a spec: every value with where it came from.
pub fn explain(profile: &LoadedProfile, spec: &LaunchSpec) -> String {
    let mut out = Explainer {
        spec,
        profile,
        text: String::new(),
    };
    header(&mut out);
    match &spec.action {
        Action::Container(container) => container_sections(&mut out, container),
        Action::Build(build) => {
            rules::image::explain_build(&mut out, build);
            labels(&mut out, &build.labels);
        }
    }
    // The security report ends every explanation.
    out.text.push('\n');
    out.text
        .push_str(&report_text(&crate::findings::findings(profile, spec)));
    out.text
}

fn header(out: &mut Explainer) {
    let spec = out.spec;
    let profile = &out.profile.profile;
    out.line(format!(
        "profile: {} ({}, agent {})",
        spec.profile,
        out.profile.file,
        profile.agent.as_str()
    ));
    out.line(format!("kind: {}", spec.kind.as_str()));
    match &spec.action {
        Action::Container(container) => {
            let from = out.from(keys::IMAGE);
            out.line(format!("image: {}{from}", container.image));
        }
        Action::Build(build) => {
            let from = out.from(keys::BUILD_TAG);
            out.line(format!("image: {} (built){from}", build.tag));
        }
    }
}

fn container_sections(out: &mut Explainer, c: &ContainerSpec) {
    rules::image::explain_process(out, c);
    rules::mounts::explain(out, c);
    rules::network::explain(out, c);
    if matches!(out.spec.kind, LaunchKind::Run | LaunchKind::Sandbox) {
        rules::egress::explain(out);
        rules::credentials::explain(out, c);
        rules::egress::host_path::explain(out, c);
    }
    rules::security::explain(out, c);
    rules::resources::explain(out, c);
    rules::logging::explain(out, c);
    environment(out, c);
    labels(out, &c.labels);
    widens(out, c);
    added_by_agentc(out, c);
}

fn environment(out: &mut Explainer, c: &ContainerSpec) {
    out.section("environment");
    if c.env.is_empty() {
        out.line("  (none)");
    }
    for var in &c.env {
        let from = out.from(&keys::env(&var.name));
        match &var.value {
            EnvValue::Literal { value } => {
                out.line(format!("  {}={value}{from}", var.name));
            }
            EnvValue::Secret { .. } if c.held_secrets.get(&var.name).is_some() => {
                out.line(format!(
                    "  {} (secret: the profile's proxy URL with its credentials, passed by name \
                     at launch, never in argv){from}",
                    var.name
                ));
            }
            EnvValue::Secret { required } => {
                let need = if *required { "" } else { ", optional" };
                out.line(format!(
                    "  {} (secret, passed through from your environment{need}){from}",
                    var.name
                ));
            }
            EnvValue::Placeholder { variable, prefix } => {
                let start = if prefix.is_empty() {
                    String::new()
                } else {
                    format!(" starting {prefix}")
                };
                out.line(format!(
                    "  {} (a placeholder{start}, made at launch; the egress proxy holds {variable}){from}",
                    var.name
                ));
            }
        }
    }
}

fn labels(out: &mut Explainer, labels: &BTreeMap<String, String>) {
    if matches!(out.spec.action, Action::Container(_)) {
        out.section("labels");
    }
    for (name, value) in labels {
        out.item(&format!("label {name}"), value, &keys::label(name));
    }
}

/// Everything that makes this launch wider than agentc's hardened baseline, with its origin.
fn widens(out: &mut Explainer, c: &ContainerSpec) {
    let mut items: Vec<String> = Vec::new();
    rules::egress::widens(out, &mut items);
    rules::egress::host_path::widens(out, c, &mut items);
    rules::security::widens(out, c, &mut items);
    rules::network::widens(out, c, &mut items);
    rules::mounts::widens(out, c, &mut items);
    rules::decant::widens(out, c, &mut items);
    rules::resources::widens(out, c, &mut items);
    rules::logging::widens(out, c, &mut items);
    out.section("widens the sandbox");
    if items.is_empty() {
        out.line("  (nothing)");
    }
    for item in items {
        out.line(format!("  - {item}"));
    }
}

/// What agentc does beyond the systems it generalizes, for this launch.
fn added_by_agentc(out: &mut Explainer, c: &ContainerSpec) {
    let mut notes: Vec<String> = Vec::new();
    rules::network::added_by_agentc(out, c, &mut notes);
    rules::resources::added_by_agentc(out, &mut notes);
    if out.spec.kind == LaunchKind::Sandbox {
        notes.push(
            "the sandbox is hardened: all capabilities dropped, no-new-privileges, tmpfs /tmp and /run"
                .to_string(),
        );
    }
    rules::decant::added_by_agentc(out, &mut notes);
    out.section("added by agentc");
    if notes.is_empty() {
        out.line("  (nothing)");
    }
    for note in notes {
        out.line(format!("  - {note}"));
    }
}

#[cfg(test)]
mod tests;
