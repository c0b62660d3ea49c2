//! The renderer's state, shared by every helper: the launch, the options, the refusals and the
//! notes found so far, and how a spec value's field is named in a refusal or a note.

use agentc_policy::{LaunchSpec, Origin};

use crate::error::RenderError;
use crate::notes::Notes;
use crate::Options;

/// One rendering in progress. Each concern's module adds its helpers to it (`render_process`,
/// `render_security`, ...); the orchestration in the parent module calls them in a fixed order.
pub(super) struct Renderer<'a> {
    /// The launch rendered.
    pub(super) spec: &'a LaunchSpec,
    /// The renderer's options.
    pub(super) options: &'a Options,
    /// Every refusal so far, in the order of the spec's fields.
    pub(super) errors: Vec<RenderError>,
    /// Every approximation and cluster duty so far.
    pub(super) notes: Notes,
}

impl Renderer<'_> {
    /// The profile field (or option, or spec path) a spec value came from.
    pub(super) fn field(&self, key: &str) -> String {
        match self.spec.origins.get(key) {
            Some(Origin::Profile { field, .. }) => field.clone(),
            Some(Origin::Environment { variable }) => variable.clone(),
            Some(Origin::Invocation { input }) => input.clone(),
            Some(Origin::Preset { .. } | Origin::Default) | None => key.to_string(),
        }
    }

    pub(super) fn refuse(
        &mut self,
        field: impl Into<String>,
        message: impl Into<String>,
        hint: &str,
    ) {
        self.errors.push(RenderError::Refused {
            field: field.into(),
            message: message.into(),
            hint: hint.to_string(),
        });
    }

    /// The agent preset that set any value of the spec, if any.
    pub(super) fn preset_agent(&self) -> Option<&str> {
        self.spec.origins.values().find_map(|origin| match origin {
            Origin::Preset { agent } => Some(agent.as_str()),
            _ => None,
        })
    }
}
