//! What a rendering does differently from the Docker launch, as data: approximations and the
//! duties left to the cluster. `agentc explain --backend k8s` lists them, and the workload
//! object carries them as annotations.

use serde::Serialize;

/// Annotation holding the [`Note`]s of kind [`NoteKind::Approximation`], as a JSON array.
pub const ANNOTATION_APPROXIMATIONS: &str = "io.agentc.approximations";
/// Annotation holding the [`Note`]s of kind [`NoteKind::ClusterDuty`], as a JSON array.
pub const ANNOTATION_CLUSTER_DUTIES: &str = "io.agentc.cluster-duties";

/// The note codes whose cluster duty, left undone, keeps the Pod from starting: `image-user`
/// (the launch keeps the image's user under `runAsNonRoot`, and an image whose `USER` is root
/// or a name is refused by the kubelet).
pub const START_BLOCKERS: &[&str] = &["image-user"];

/// Whether a note is about the rendering or about the cluster it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoteKind {
    /// The rendering differs from the Docker launch (stricter, or weaker in the named way).
    Approximation,
    /// The Docker launch sets it per container; on Kubernetes the cluster must provide it.
    ClusterDuty,
}

/// One difference between the Kubernetes rendering and the Docker launch of the same spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Note {
    /// Approximation or cluster duty.
    pub kind: NoteKind,
    /// A stable code, such as `tmpfs-noexec` or `pids-limit`.
    pub code: &'static str,
    /// The field it is about: a profile field path where the launch records one, else the
    /// spec path (`tmpfs./tmp`).
    pub field: String,
    /// What Docker does, what Kubernetes does instead, and what follows.
    pub detail: String,
    /// Whether the Kubernetes rendering is weaker than Docker's on this point (only ever by
    /// a named, documented loss such as `noexec`).
    pub weaker: bool,
}

/// The notes of one rendering, in the order they were found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Notes(pub Vec<Note>);

impl Notes {
    /// Records an approximation that is at least as strict as Docker.
    pub fn approximation(&mut self, code: &'static str, field: impl Into<String>, detail: String) {
        self.push(NoteKind::Approximation, code, field.into(), detail, false);
    }

    /// Records an approximation that loses a protection Docker has.
    pub fn weaker(&mut self, code: &'static str, field: impl Into<String>, detail: String) {
        self.push(NoteKind::Approximation, code, field.into(), detail, true);
    }

    /// Records a duty left to the cluster.
    pub fn cluster_duty(&mut self, code: &'static str, field: impl Into<String>, detail: String) {
        self.push(NoteKind::ClusterDuty, code, field.into(), detail, false);
    }

    fn push(
        &mut self,
        kind: NoteKind,
        code: &'static str,
        field: String,
        detail: String,
        weaker: bool,
    ) {
        let note = Note {
            kind,
            code,
            field,
            detail,
            weaker,
        };
        if !self.0.contains(&note) {
            self.0.push(note);
        }
    }

    /// The notes of one kind.
    pub fn of(&self, kind: NoteKind) -> impl Iterator<Item = &Note> {
        self.0.iter().filter(move |note| note.kind == kind)
    }

    /// The notes of codes that can keep the Pod from starting ([`START_BLOCKERS`]), which
    /// `agentc render --backend k8s` also prints on stderr.
    pub fn start_blockers(&self) -> impl Iterator<Item = &Note> {
        self.0
            .iter()
            .filter(|note| START_BLOCKERS.contains(&note.code))
    }

    /// Whether a note with this code was recorded.
    pub fn has(&self, code: &str) -> bool {
        self.0.iter().any(|note| note.code == code)
    }

    /// The annotations carrying the notes: one JSON array per kind, absent when empty.
    pub fn annotations(&self) -> Vec<(&'static str, String)> {
        let mut annotations = Vec::new();
        for (kind, key) in [
            (NoteKind::Approximation, ANNOTATION_APPROXIMATIONS),
            (NoteKind::ClusterDuty, ANNOTATION_CLUSTER_DUTIES),
        ] {
            let notes: Vec<&Note> = self.of(kind).collect();
            if !notes.is_empty() {
                // A Vec of plain structs always serializes.
                annotations.push((key, serde_json::to_string(&notes).unwrap_or_default()));
            }
        }
        annotations
    }
}
