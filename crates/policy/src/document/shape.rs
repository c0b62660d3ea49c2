//! The shape stage: serde run again after each error with the offending value taken out of
//! the document, and the bookkeeping that names every later error as the profile writes it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::messages::{backticked_list, invalid, serde_error, take_backticked};
use super::LineIndex;
use crate::error::PolicyError;
use crate::text::{closest, printable};

/// What the shape stage took out of the document: the poisoned paths (as written), and the
/// items taken out of each array, so that a path in the profile value (whose arrays are
/// shorter) can be named as written.
#[derive(Debug, Default)]
pub(crate) struct Removals {
    /// Field paths of the values taken out or replaced.
    pub poisoned: BTreeSet<String>,
    /// Original indices taken out of each array, keyed by the array's path as written.
    removed: BTreeMap<String, Vec<usize>>,
}

impl Removals {
    /// The path as written of a field path in the profile value.
    pub fn original_field(&self, field: &str) -> String {
        if self.removed.is_empty() {
            return field.to_string();
        }
        display(&self.original(&parse_field(field)))
    }

    /// The path as written for a path in the shortened document: each array index is
    /// counted again with the items taken out before it.
    fn original(&self, current: &[Segment]) -> Vec<Segment> {
        let mut out: Vec<Segment> = Vec::with_capacity(current.len());
        for segment in current {
            match segment {
                Segment::Key(key) => out.push(Segment::Key(key.clone())),
                Segment::Index(index) => {
                    let mut removed = self
                        .removed
                        .get(&display(&out))
                        .cloned()
                        .unwrap_or_default();
                    removed.sort_unstable();
                    let mut original = *index;
                    for taken in removed {
                        if taken <= original {
                            original += 1;
                        }
                    }
                    out.push(Segment::Index(original));
                }
            }
        }
        out
    }
}

/// A field path written by this crate's rules (`mounts[1].target`) as segments.
fn parse_field(field: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    for part in field.split('.') {
        let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !key.is_empty() {
            out.push(Segment::Key(key.to_string()));
        }
        while let Some((index, after)) = rest
            .strip_prefix('[')
            .and_then(|inner| inner.split_once(']'))
        {
            match index.parse() {
                Ok(index) => out.push(Segment::Index(index)),
                Err(_) => out.push(Segment::Key(format!("[{index}]"))),
            }
            rest = after;
        }
    }
    out
}

/// Top-level fields whose value is a table.
pub(super) const TABLE_FIELDS: &[&str] = &[
    "packages",
    "provider",
    "proxy",
    "egress",
    "credentials",
    "decant",
    "langfuse",
    "configuration_import",
    "image",
    "resources",
    "logging",
    "network",
    "security",
    "workspace",
    "kubernetes",
];

/// Top-level fields whose value is an array of tables.
pub(super) const TABLE_LIST_FIELDS: &[&str] = &["configuration_mounts", "mounts"];

/// The required text fields: when one is missing or unreadable, an empty stand-in lets the
/// rest of the profile be checked.
fn is_required_text(path: &str) -> bool {
    if matches!(
        path,
        "name" | "provider.kind" | "configuration_import.source"
    ) {
        return true;
    }
    let credential_env = path
        .strip_prefix("credentials.")
        .and_then(|rest| rest.strip_suffix(".from_env"))
        .is_some_and(|name| !name.contains('.'));
    if credential_env {
        return true;
    }
    ["mounts[", "configuration_mounts["].iter().any(|list| {
        path.strip_prefix(list)
            .and_then(|rest| rest.split_once("]."))
            .is_some_and(|(index, field)| {
                index.bytes().all(|b| b.is_ascii_digit()) && matches!(field, "source" | "target")
            })
    })
}

/// One segment of a field path.
#[derive(Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// The segments of the path serde was at.
fn serde_segments(path: &serde_path_to_error::Path) -> Vec<Segment> {
    path.iter()
        .filter_map(|segment| match segment {
            serde_path_to_error::Segment::Seq { index } => Some(Segment::Index(*index)),
            serde_path_to_error::Segment::Map { key } => Some(Segment::Key(key.clone())),
            serde_path_to_error::Segment::Enum { variant } => Some(Segment::Key(variant.clone())),
            serde_path_to_error::Segment::Unknown => None,
        })
        .collect()
}

/// `mounts`, `[1]`, `target` -> `mounts[1].target`, with control characters escaped.
fn display(segments: &[Segment]) -> String {
    let mut out = String::new();
    for segment in segments {
        match segment {
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&printable(key));
            }
            Segment::Index(index) => out.push_str(&format!("[{index}]")),
        }
    }
    out
}

/// The shape stage's state: the errors so far and what was taken out of the document.
pub(super) struct Shape<'a> {
    pub(super) file: &'a str,
    pub(super) text: &'a str,
    pub(super) lines: &'a LineIndex,
    pub(super) positions: &'a HashMap<String, (usize, usize)>,
    pub(super) errors: Vec<PolicyError>,
    pub(super) removals: Removals,
}

impl Shape<'_> {
    /// Rejects an array where a table belongs: serde would otherwise read `packages = ["git"]`
    /// positionally, as if it were `apt = "git"`. Each such array is taken out.
    pub(super) fn check_table_shapes(&mut self, root: &mut DeTable<'_>) {
        let mut wrong: Vec<(Vec<Segment>, String)> = Vec::new();
        for name in TABLE_FIELDS {
            if let Some(value) = root.get(*name) {
                if matches!(value.get_ref(), DeValue::Array(_)) {
                    wrong.push((vec![Segment::Key(name.to_string())], name.to_string()));
                }
            }
        }
        for name in TABLE_LIST_FIELDS {
            if let Some(DeValue::Array(items)) = root.get(*name).map(Spanned::get_ref) {
                for (index, item) in items.iter().enumerate() {
                    if matches!(item.get_ref(), DeValue::Array(_)) {
                        let path = vec![Segment::Key(name.to_string()), Segment::Index(index)];
                        wrong.push((path, format!("[{name}]")));
                    }
                }
            }
        }
        for (path, name) in wrong.into_iter().rev() {
            let field = display(&path);
            let position = self.positions.get(&field).copied();
            self.errors.push(invalid(
                self.file,
                field.clone(),
                position,
                "wrong type: expected a table, found an array".to_string(),
                format!("write `{name}` as a table: a `[{name}]` header followed by its fields"),
            ));
            self.take_out(root, &path, &path, None);
        }
        self.errors.reverse();
    }

    /// Records one serde error and takes its value out of the document. `false` when the
    /// error cannot be worked around (a document-level error, a missing field without a
    /// stand-in, or a path that cannot be found), which ends the shape stage.
    pub(super) fn record(
        &mut self,
        error: &serde_path_to_error::Error<toml::de::Error>,
        root: &mut DeTable<'_>,
    ) -> bool {
        let mut current = serde_segments(error.path());
        let raw = error.inner().message().trim().to_string();
        let (unknown, missing) = (
            raw.strip_prefix("unknown field ")
                .map(|rest| take_backticked(rest).0),
            raw.strip_prefix("missing field ")
                .map(|rest| take_backticked(rest).0),
        );
        let mut suggestion = None;
        if let Some(name) = unknown.or(missing.clone()) {
            // serde names an unknown or missing field inside the table it was reading; its
            // path may or may not end with the field already.
            if current.last() != Some(&Segment::Key(name.clone())) {
                current.push(Segment::Key(name));
            }
            if let Some(rest) = raw.strip_prefix("unknown field ") {
                let accepted = backticked_list(take_backticked(rest).1);
                let (written, _) = take_backticked(rest);
                suggestion = closest(&printable(&written), &accepted);
            }
        }
        let original = self.removals.original(&current);
        let field = display(&original);
        let mapped = serde_error(
            self.file,
            self.text,
            self.lines,
            self.positions,
            error,
            &field,
        );
        let already = self.removals.poisoned.contains(&field);
        if !(missing.is_some() && already) {
            self.errors.push(mapped);
        }
        if field.is_empty() {
            return false;
        }
        if let Some(meant) = suggestion {
            // The misspelled field is what the profile meant to set: rules that need it stay
            // silent rather than report it missing.
            let mut meant_path = original.clone();
            meant_path.pop();
            meant_path.push(Segment::Key(meant));
            self.removals.poisoned.insert(display(&meant_path));
        }
        // Without an agent nothing else can be checked; "custom" stands in so that the
        // remaining shape errors are still found (the rules do not run: see `crate::load`).
        let stand_in = if field == "agent" {
            Some(DeValue::String("custom".into()))
        } else {
            is_required_text(&field).then(|| DeValue::String("".into()))
        };
        if stand_in.is_none() && missing.is_some() {
            return false;
        }
        self.take_out(root, &current, &original, stand_in)
    }

    /// Takes the value at `current` (a path in the document as it is now) out, or replaces it
    /// with `stand_in`, and poisons `original`.
    fn take_out(
        &mut self,
        root: &mut DeTable<'_>,
        current: &[Segment],
        original: &[Segment],
        stand_in: Option<DeValue<'static>>,
    ) -> bool {
        self.removals.poisoned.insert(display(original));
        let Some(edit) = edit_table(root, current, stand_in) else {
            return false;
        };
        if let (Edit::RemovedItem, Some((Segment::Index(index), array))) =
            (edit, original.split_last())
        {
            self.removals
                .removed
                .entry(display(array))
                .or_default()
                .push(*index);
        }
        true
    }
}
/// What an edit of the document did.
enum Edit {
    /// A key was removed or given a stand-in.
    Key,
    /// An array item was removed.
    RemovedItem,
}

fn edit_table<'a>(
    table: &mut DeTable<'a>,
    path: &[Segment],
    stand_in: Option<DeValue<'a>>,
) -> Option<Edit> {
    let (Segment::Key(key), rest) = path.split_first()? else {
        return None;
    };
    if rest.is_empty() {
        return match stand_in {
            Some(value) => {
                let span = table.get(key.as_str()).map(Spanned::span).unwrap_or(0..0);
                table.insert(
                    Spanned::new(span.clone(), key.clone().into()),
                    Spanned::new(span, value),
                );
                Some(Edit::Key)
            }
            None => table.remove(key.as_str()).map(|_| Edit::Key),
        };
    }
    edit_value(table.get_mut(key.as_str())?.get_mut(), rest, stand_in)
}

fn edit_value<'a>(
    value: &mut DeValue<'a>,
    path: &[Segment],
    stand_in: Option<DeValue<'a>>,
) -> Option<Edit> {
    match value {
        DeValue::Table(table) => edit_table(table, path, stand_in),
        DeValue::Array(items) => {
            let (Segment::Index(index), rest) = path.split_first()? else {
                return None;
            };
            if !rest.is_empty() {
                return edit_value(items.get_mut(*index)?.get_mut(), rest, stand_in);
            }
            if *index >= items.len() {
                return None;
            }
            // `DeArray` is a slice to its users: rebuild it without the item.
            let old = std::mem::replace(items, toml::de::DeArray::new());
            *items = old
                .into_iter()
                .enumerate()
                .filter(|(at, _)| at != index)
                .map(|(_, item)| item)
                .collect();
            Some(Edit::RemovedItem)
        }
        _ => None,
    }
}
