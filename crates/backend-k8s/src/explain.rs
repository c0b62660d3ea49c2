//! `agentc explain --backend k8s`: the objects, the Pod Security level (with where it was set,
//! and whether it is weaker than restricted), the approximations and the cluster's duties of
//! one rendering, as text or JSON.

use agentc_policy::origin_words;

use crate::notes::NoteKind;
use crate::Rendering;

/// The explanation of a rendering as text, one section per kind of note.
pub fn explain(rendering: &Rendering) -> String {
    let mut out = String::new();
    let namespace = rendering
        .namespace
        .as_deref()
        .unwrap_or("kubectl's current namespace");
    let pod_security = &rendering.pod_security;
    let weaker = if pod_security.is_weaker() {
        ", weaker than restricted: a container may add Docker's default capabilities"
    } else {
        ""
    };
    out.push_str(&format!(
        "kubernetes: {} {} in {namespace}\npod security: {} (every pod checked){weaker}  [{}]\n\nobjects (apply order)\n",
        rendering.kind.as_str(),
        rendering.name,
        pod_security.level.as_str(),
        origin_words(&pod_security.origin),
    ));
    for object in &rendering.objects {
        out.push_str(&format!("  {}/{}\n", object.kind(), object.name()));
    }
    for (kind, title) in [
        (NoteKind::Approximation, "approximations"),
        (NoteKind::ClusterDuty, "left to the cluster"),
    ] {
        out.push_str(&format!("\n{title}\n"));
        let mut any = false;
        for note in rendering.notes.of(kind) {
            any = true;
            let weaker = if note.weaker {
                " (weaker than docker)"
            } else {
                ""
            };
            out.push_str(&format!(
                "  - {}{weaker} [{}]: {}\n",
                note.code, note.field, note.detail
            ));
        }
        if !any {
            out.push_str("  (none)\n");
        }
    }
    out
}

impl Rendering {
    /// The explanation as JSON: `kind`, `name`, `namespace`, `pod_security` (the level),
    /// `pod_security_origin` (as in the launch's `origins`), `objects` (`kind` and `name`) and
    /// `notes`.
    pub fn explain_json(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": self.kind.as_str(),
            "name": self.name,
            "namespace": self.namespace,
            "pod_security": self.pod_security.level.as_str(),
            "pod_security_origin": self.pod_security.origin,
            "objects": self
                .objects
                .iter()
                .map(|object| serde_json::json!({"kind": object.kind(), "name": object.name()}))
                .collect::<Vec<_>>(),
            "notes": self.notes,
        })
    }
}
