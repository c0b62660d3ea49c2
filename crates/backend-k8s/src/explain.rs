//! `agentc explain --backend k8s`: the objects, the Pod Security level, the approximations and
//! the cluster's duties of one rendering, as text or JSON.

use crate::notes::NoteKind;
use crate::Rendering;

/// The explanation of a rendering as text, one section per kind of note.
pub fn explain(rendering: &Rendering) -> String {
    let mut out = String::new();
    let namespace = rendering
        .namespace
        .as_deref()
        .unwrap_or("kubectl's current namespace");
    out.push_str(&format!(
        "kubernetes: {} {} in {namespace}\npod security: {} (every pod checked)\n\nobjects (apply order)\n",
        rendering.kind.as_str(),
        rendering.name,
        rendering.pod_security.as_str(),
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
    /// The explanation as JSON: `kind`, `name`, `namespace`, `pod_security`, `objects`
    /// (`kind` and `name`) and `notes`.
    pub fn explain_json(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": self.kind.as_str(),
            "name": self.name,
            "namespace": self.namespace,
            "pod_security": self.pod_security.as_str(),
            "objects": self
                .objects
                .iter()
                .map(|object| serde_json::json!({"kind": object.kind(), "name": object.name()}))
                .collect::<Vec<_>>(),
            "notes": self.notes,
        })
    }
}
