//! A [`LaunchSpec`] rendered as JSON for `agentc render --backend api`, `agentc explain` and
//! snapshots: the create request ([`crate::render`]) and, before it, the egress companion's
//! requests ([`crate::egress`]).

use agentc_policy::spec::{Action, LaunchSpec};
use serde_json::json;

use crate::egress::egress_json;
use crate::render::{render_build, render_create, CreateRequest, RenderError};

/// Renders a launch as JSON: `{"name": ..., "body": ...}` for a container (the body exactly as
/// sent; with an `"egress"` object of the requests before it when the allowlist is enforced
/// outside, [`crate::egress`]), `{"query": {...}, "context": DIR}` for a build (the classic `POST /build` query).
pub fn render_json(spec: &LaunchSpec) -> Result<serde_json::Value, RenderError> {
    let LaunchSpec {
        kind: _,
        profile: _,
        action,
        origins: _,
    } = spec;
    match action {
        Action::Container(container) => {
            let CreateRequest { name, body } = render_create(container)?;
            let body = serde_json::to_value(&body).map_err(|error| RenderError::Json {
                message: error.to_string(),
            })?;
            match &container.egress {
                Some(egress) => Ok(json!({
                    "egress": egress_json(egress)?,
                    "name": name,
                    "body": body,
                })),
                None => Ok(json!({ "name": name, "body": body })),
            }
        }
        Action::Build(build) => render_build(build),
    }
}
