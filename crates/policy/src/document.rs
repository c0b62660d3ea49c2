//! Reading a profile's text: TOML into a spanned document, the position of every value, and
//! the document into typed [`Profile`] values, collecting every shape error (a syntax error,
//! an unknown key, a wrong type, a value that does not parse) instead of stopping at the first.
//!
//! serde stops at the first error, so the shape stage runs it again after each error with the
//! offending value taken out of the document (a required text field gets an empty stand-in),
//! up to [`crate::error::MAX_REPORTED_ERRORS`] errors. Each value taken out is *poisoned*: the
//! rules that read it stay silent (see [`crate::check`]), since their error would only repeat
//! this one.

use std::collections::HashMap;
use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::egress_hosts::EgressHost;
use crate::error::{Location, PolicyError};
use crate::profile::Profile;

mod messages;
mod shape;

use messages::{invalid, syntax_error};
pub(crate) use shape::Removals;
use shape::Shape;

/// A profile that parsed and passed validation, with the positions of its values.
///
/// The profile is normalized as agent-containers normalizes it: names, paths, hosts and
/// package names are trimmed; `provider.kind` is lower case.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedProfile {
    /// The profile file as the user named it (shown in errors).
    pub file: String,
    /// The validated, normalized profile.
    pub profile: Profile,
    /// 1-based (line, column) of every value, keyed by field path.
    positions: HashMap<String, (usize, usize)>,
    /// `profile.egress.hosts`, each parsed once here as the egress proxy reads it.
    egress_hosts: Vec<EgressHost>,
}

impl LoadedProfile {
    /// 1-based (line, column) of the value at a field path like `"egress.gateway_port"` or
    /// `"mounts[2].target"`; `None` when the profile does not write that field.
    pub fn position(&self, field: &str) -> Option<(usize, usize)> {
        self.positions.get(field).copied()
    }

    /// [`Location::Profile`] for a field path, with its position.
    ///
    /// A field the profile does not write (a default) takes the position of its nearest
    /// written ancestor, so `langfuse.base_url` points at the `[langfuse]` table when the URL
    /// is missing.
    pub fn location(&self, field: &str) -> Location {
        let mut path = field;
        let position = loop {
            if let Some(position) = self.position(path) {
                break Some(position);
            }
            match parent_path(path) {
                Some(parent) => path = parent,
                None => break None,
            }
        };
        Location::Profile {
            file: self.file.clone(),
            field: field.to_string(),
            position,
        }
    }

    /// `egress.hosts` as agentc's egress proxy reads it, each entry parsed once when the
    /// profile was loaded (or built with [`LoadedProfile::from_profile`]): what the checks,
    /// the resolver and the renderers read instead of the text. A caller that changes
    /// `profile.egress.hosts` in code builds the loaded profile again.
    pub fn egress_hosts(&self) -> &[EgressHost] {
        &self.egress_hosts
    }

    /// A loaded profile built from a profile value, without positions; for tests and for
    /// callers that construct profiles in code. It is not validated.
    pub fn from_profile(file: &str, profile: Profile) -> LoadedProfile {
        LoadedProfile {
            file: file.to_string(),
            egress_hosts: EgressHost::all(&profile.egress.hosts),
            profile,
            positions: HashMap::new(),
        }
    }
}

/// `mounts[2].target` -> `mounts[2]` -> `mounts` -> `None`.
fn parent_path(path: &str) -> Option<&str> {
    if path.is_empty() {
        return None;
    }
    let cut = path.rfind(['.', '[']).unwrap_or(0);
    Some(&path[..cut])
}

/// Whether `path` is `ancestor` or lies below it (`mounts[1].target` under `mounts[1]` and
/// under `mounts`).
pub(crate) fn is_within(path: &str, ancestor: &str) -> bool {
    path == ancestor
        || (path.starts_with(ancestor)
            && matches!(path.as_bytes().get(ancestor.len()), Some(b'.' | b'[')))
}

/// The largest profile [`crate::load()`] parses (1 MiB). Profiles are a few kilobytes; a
/// larger text is refused before parsing, so a hostile file cannot make the parser, the
/// position index or the error messages spend unbounded time and memory.
pub const MAX_PROFILE_BYTES: usize = 1024 * 1024;

/// The most shape errors searched for; past it the stage stops and says there may be more.
const MAX_SHAPE_ERRORS: usize = 100;

/// A profile read into typed values, with the shape errors met on the way.
pub(crate) struct Parsed {
    /// The profile; values that failed are left out (defaults) or stand-ins.
    pub loaded: LoadedProfile,
    /// The shape errors, in the order found.
    pub errors: Vec<PolicyError>,
    /// What was taken out of the document and where.
    pub removals: Removals,
}

/// Why no profile value could be built.
pub(crate) struct Unreadable {
    /// The errors found.
    pub errors: Vec<PolicyError>,
    /// The search stopped at [`MAX_SHAPE_ERRORS`]; there may be more.
    pub truncated: bool,
}

/// Reads profile text into typed values. `Err` when no profile value can be built at all (the
/// text is too large or not TOML), or when the shape errors reach [`MAX_SHAPE_ERRORS`].
pub(crate) fn parse(file: &str, text: &str) -> Result<Parsed, Unreadable> {
    let fail = |error: PolicyError| Unreadable {
        errors: vec![error],
        truncated: false,
    };
    if text.len() > MAX_PROFILE_BYTES {
        return Err(fail(invalid(
            file,
            String::new(),
            None,
            format!(
                "the profile is {} bytes, more than the limit of {MAX_PROFILE_BYTES} bytes (1 MiB)",
                text.len()
            ),
            "a profile is a few kilobytes of toml; check that this is the right file".to_string(),
        )));
    }
    let lines = LineIndex::new(text);
    let mut document =
        DeTable::parse(text).map_err(|error| fail(syntax_error(file, text, &lines, &error)))?;
    let mut spans = Vec::new();
    index_table(document.get_ref(), "", &mut spans);
    let positions = lines.positions(text, spans);

    let mut shape = Shape {
        file,
        text,
        lines: &lines,
        positions: &positions,
        errors: Vec::new(),
        removals: Removals::default(),
    };
    shape.check_table_shapes(document.get_mut());
    let profile = loop {
        let attempt = document.clone();
        let deserializer = toml::de::Deserializer::from(attempt);
        match serde_path_to_error::deserialize::<_, Profile>(deserializer) {
            Ok(profile) => break profile,
            Err(error) => {
                let fixed = shape.record(&error, document.get_mut());
                let truncated = shape.errors.len() >= MAX_SHAPE_ERRORS;
                if !fixed || truncated {
                    return Err(Unreadable {
                        errors: shape.errors,
                        truncated,
                    });
                }
            }
        }
    };
    let mut profile = profile;
    normalize(&mut profile);
    let Shape {
        errors, removals, ..
    } = shape;
    Ok(Parsed {
        loaded: LoadedProfile {
            file: file.to_string(),
            egress_hosts: EgressHost::all(&profile.egress.hosts),
            profile,
            positions,
        },
        errors,
        removals,
    })
}

/// Records the span of every value under `prefix`, depth first.
fn index_table(table: &DeTable<'_>, prefix: &str, out: &mut Vec<(String, Range<usize>)>) {
    for (key, value) in table.iter() {
        let path = if prefix.is_empty() {
            key.get_ref().to_string()
        } else {
            format!("{prefix}.{}", key.get_ref())
        };
        index_value(value, path, out);
    }
}

fn index_value(value: &Spanned<DeValue<'_>>, path: String, out: &mut Vec<(String, Range<usize>)>) {
    match value.get_ref() {
        DeValue::Table(table) => index_table(table, &path, out),
        DeValue::Array(array) => {
            for (index, item) in array.iter().enumerate() {
                index_value(item, format!("{path}[{index}]"), out);
            }
        }
        _ => {}
    }
    out.push((path, value.span()));
}

/// Byte offsets of line starts, for turning spans into 1-based line and column.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(offset, _)| offset + 1))
            .collect();
        LineIndex { starts }
    }

    /// 1-based positions of many spans in one pass over the text.
    ///
    /// Regression (`a_one_line_array_of_many_values_loads_in_linear_time`): computing each
    /// column separately counts the characters from its line's start, which is quadratic for
    /// a one-line array of many values (a 1 MiB line of 200,000 strings counted some 10^11
    /// characters). Spans are visited in offset order and the character count carries over
    /// within a line.
    fn positions(
        &self,
        text: &str,
        mut spans: Vec<(String, Range<usize>)>,
    ) -> HashMap<String, (usize, usize)> {
        spans.sort_by_key(|(_, span)| span.start);
        let mut positions = HashMap::with_capacity(spans.len());
        // (byte offset, line, characters from the line start to that offset)
        let mut cursor = (0usize, 1usize, 0usize);
        for (path, span) in spans {
            let offset = span.start.min(text.len());
            let line = self.starts.partition_point(|start| *start <= offset).max(1);
            let start = self.starts[line - 1];
            if cursor.1 != line || cursor.0 > offset || cursor.0 < start {
                cursor = (start, line, 0);
            }
            let counted = text
                .get(cursor.0..offset)
                .map_or(offset - cursor.0, |part| part.chars().count());
            cursor = (offset, line, cursor.2 + counted);
            positions.insert(path, (line, cursor.2 + 1));
        }
        positions
    }

    /// 1-based line and column (in characters) of a byte offset.
    fn position(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = offset.min(text.len());
        let line = self.starts.partition_point(|start| *start <= offset).max(1);
        let start = self.starts[line - 1];
        let column = text
            .get(start..offset)
            .map_or(offset - start, |prefix| prefix.chars().count());
        (line, column + 1)
    }
}

/// Trims what agent-containers trims, and lower-cases the provider kind.
fn normalize(profile: &mut Profile) {
    fn trim(value: &mut String) {
        let trimmed = value.trim();
        if trimmed.len() != value.len() {
            *value = trimmed.to_string();
        }
    }
    fn trim_option(value: &mut Option<String>) {
        if let Some(value) = value {
            trim(value);
        }
    }
    fn trim_all(values: &mut [String]) {
        values.iter_mut().for_each(trim);
    }

    trim(&mut profile.name);
    trim_option(&mut profile.home_volume);
    let packages = &mut profile.packages;
    for list in [
        &mut packages.apt,
        &mut packages.npm,
        &mut packages.uv_tools,
        &mut packages.uv_libraries,
    ] {
        trim_all(list);
    }
    if let Some(provider) = &mut profile.provider {
        provider.kind = provider.kind.trim().to_ascii_lowercase();
    }
    if let Some(proxy) = &mut profile.proxy {
        trim_all(&mut proxy.no_proxy);
    }
    let egress = &mut profile.egress;
    trim_all(&mut egress.hosts);
    trim_all(&mut egress.gateway_bootstrap_allow);
    let decant = &mut profile.decant;
    trim_all(&mut decant.source_profiles);
    trim_option(&mut decant.image);
    trim_option(&mut decant.data_volume);
    trim(&mut decant.bind_address);
    for mount in profile
        .configuration_mounts
        .iter_mut()
        .chain(profile.mounts.iter_mut())
    {
        trim(&mut mount.source);
        trim(&mut mount.target);
    }
    if let Some(import) = &mut profile.configuration_import {
        trim(&mut import.source);
        trim_option(&mut import.target);
    }
}

#[cfg(test)]
mod tests;
