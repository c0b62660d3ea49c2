//! Loading a profile: TOML text in, a validated [`LoadedProfile`] out.
//!
//! The text is parsed once into a spanned document, which gives every value's position; the
//! same document is then deserialized into [`Profile`] (with `serde_path_to_error` naming the
//! field of a type error), normalized, and checked by [`crate::validate`]. Every failure is a
//! [`PolicyError::Invalid`] at a [`Location::Profile`] naming the file, the field path and,
//! where the TOML span is known, the 1-based line and column.

use std::collections::HashMap;
use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::error::{Location, PolicyError};
use crate::profile::Profile;

/// A profile that parsed and passed validation, with the positions of its values.
///
/// The profile is normalized as agent-containers normalizes it: names, paths, hosts and
/// package names are trimmed; `provider.kind`, `egress.mode` and every `on_conflict` are lower
/// case; `configuration_import.format` is lower case without a leading dot, with `yml` read as
/// `yaml`.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedProfile {
    /// The profile file as the user named it (shown in errors).
    pub file: String,
    /// The validated, normalized profile.
    pub profile: Profile,
    /// 1-based (line, column) of every value, keyed by field path.
    positions: HashMap<String, (usize, usize)>,
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

    /// A loaded profile built from a profile value, without positions; for tests and for
    /// callers that construct profiles in code. It is not validated.
    pub fn from_profile(file: &str, profile: Profile) -> LoadedProfile {
        LoadedProfile {
            file: file.to_string(),
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

/// The largest profile [`load`] parses (1 MiB). Profiles are a few kilobytes; a larger text
/// is refused before parsing, so a hostile file cannot make the parser, the position index or
/// the error messages spend unbounded time and memory.
pub const MAX_PROFILE_BYTES: usize = 1024 * 1024;

/// Parses and validates one profile. `file` is the name shown in errors.
///
/// A text larger than [`MAX_PROFILE_BYTES`] is refused before parsing; nesting deeper than the
/// TOML parser's recursion limit is a clear error, not a stack overflow.
pub fn load(file: &str, text: &str) -> Result<LoadedProfile, PolicyError> {
    if text.len() > MAX_PROFILE_BYTES {
        return Err(invalid(
            file,
            String::new(),
            None,
            format!(
                "the profile is {} bytes, more than the limit of {MAX_PROFILE_BYTES} bytes (1 MiB)",
                text.len()
            ),
            "a profile is a few kilobytes of toml; check that this is the right file".to_string(),
        ));
    }
    let lines = LineIndex::new(text);
    let document =
        DeTable::parse(text).map_err(|error| syntax_error(file, text, &lines, &error))?;

    let mut spans = Vec::new();
    index_table(document.get_ref(), "", &mut spans);
    let positions = lines.positions(text, spans);

    check_table_shapes(file, document.get_ref(), &positions)?;
    let deserializer = toml::de::Deserializer::from(document);
    let mut profile: Profile = serde_path_to_error::deserialize(deserializer)
        .map_err(|error| serde_error(file, text, &lines, &positions, &error))?;
    normalize(&mut profile);

    let loaded = LoadedProfile {
        file: file.to_string(),
        profile,
        positions,
    };
    crate::validate::validate(&loaded)?;
    Ok(loaded)
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

/// Top-level fields whose value is a table.
const TABLE_FIELDS: &[&str] = &[
    "packages",
    "provider",
    "proxy",
    "egress",
    "decant",
    "langfuse",
    "configuration_import",
    "image",
    "resources",
    "logging",
    "network",
    "security",
    "workspace",
];

/// Top-level fields whose value is an array of tables.
const TABLE_LIST_FIELDS: &[&str] = &["configuration_mounts", "mounts"];

/// Rejects an array where a table belongs: serde would otherwise read `packages = ["git"]`
/// positionally, as if it were `apt = "git"`.
fn check_table_shapes(
    file: &str,
    root: &DeTable<'_>,
    positions: &HashMap<String, (usize, usize)>,
) -> Result<(), PolicyError> {
    let array_error = |field: String, name: &str| {
        let position = positions.get(&field).copied();
        invalid(
            file,
            field,
            position,
            "wrong type: expected a table, found an array".to_string(),
            format!("write `{name}` as a table: a `[{name}]` header followed by its fields"),
        )
    };
    for name in TABLE_FIELDS {
        if let Some(value) = root.get(*name) {
            if matches!(value.get_ref(), DeValue::Array(_)) {
                return Err(array_error(name.to_string(), name));
            }
        }
    }
    for name in TABLE_LIST_FIELDS {
        if let Some(DeValue::Array(items)) = root.get(*name).map(Spanned::get_ref) {
            for (index, item) in items.iter().enumerate() {
                if matches!(item.get_ref(), DeValue::Array(_)) {
                    return Err(array_error(
                        format!("{name}[{index}]"),
                        &format!("[{name}]"),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The field path of a duplicate key at `offset`: the key under the table header above it, or
/// the header itself when a table is defined twice.
fn duplicate_field(text: &str, offset: usize, key: &str) -> String {
    let before = text.get(..offset).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |index| index + 1);
    let line_end = text[line_start..]
        .find('\n')
        .map_or(text.len(), |index| line_start + index);
    let mut table = String::new();
    let mut array_counts: HashMap<String, usize> = HashMap::new();
    for line in text[..line_end].lines() {
        let line = line.trim();
        if let Some(name) = line
            .strip_prefix("[[")
            .and_then(|rest| rest.split_once("]]"))
        {
            let name = header_path(name.0);
            let count = array_counts.entry(name.clone()).or_insert(0);
            table = format!("{name}[{count}]");
            *count += 1;
        } else if let Some(name) = line.strip_prefix('[').and_then(|rest| rest.split_once(']')) {
            table = header_path(name.0);
        }
    }
    let line = text[line_start..line_end].trim_start();
    if line.starts_with('[') {
        return table;
    }
    let key = header_path(key);
    if table.is_empty() {
        key
    } else {
        format!("{table}.{key}")
    }
}

/// `" egress . \"x\" "` -> `egress.x`
fn header_path(header: &str) -> String {
    header
        .split('.')
        .map(|part| part.trim().trim_matches(['"', '\'']))
        .collect::<Vec<_>>()
        .join(".")
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
    /// characters). Spans
    /// are visited in offset order and the character count carries over within a line.
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

fn invalid(
    file: &str,
    field: String,
    position: Option<(usize, usize)>,
    message: String,
    hint: String,
) -> PolicyError {
    PolicyError::Invalid {
        location: Location::Profile {
            file: file.to_string(),
            field,
            position,
        },
        message,
        hint,
    }
}

/// A TOML syntax error, a duplicate key or a redefined table.
fn syntax_error(file: &str, text: &str, lines: &LineIndex, error: &toml::de::Error) -> PolicyError {
    let span = error.span();
    let position = span.clone().map(|span| lines.position(text, span.start));
    let snippet = span
        .and_then(|span| text.get(span))
        .map(|snippet| snippet.trim().to_string())
        .filter(|snippet| !snippet.is_empty() && snippet.len() <= 64 && !snippet.contains('\n'));
    let raw = lower_first(error.message().trim());
    if raw.contains("recursion limit") || raw.contains("max recursion depth") {
        // toml's parser stops at a fixed depth instead of overflowing the stack.
        return invalid(
            file,
            String::new(),
            position,
            "the profile nests tables, arrays or dotted keys too deeply".to_string(),
            "profiles nest at most a few levels (`[[mounts]]`, `[egress]`); remove the deeply \
             nested value"
                .to_string(),
        );
    }
    if raw.starts_with("duplicate key") {
        let key = printable(&snippet.unwrap_or_default());
        let field = error
            .span()
            .map(|span| duplicate_field(text, span.start, &key))
            .unwrap_or_default();
        return invalid(
            file,
            field,
            position,
            format!("duplicate key `{key}`"),
            format!("write `{key}` once per table; remove or rename the repeated key"),
        );
    }
    invalid(
        file,
        String::new(),
        position,
        format!("invalid toml: {}", printable(&raw.replace('\n', " "))),
        "fix the toml syntax at this position: strings need double quotes, tables are written \
         `[name]` and arrays of tables `[[name]]`"
            .to_string(),
    )
}

/// A wrong type, an unknown field, a missing field or an unknown value.
fn serde_error(
    file: &str,
    text: &str,
    lines: &LineIndex,
    positions: &HashMap<String, (usize, usize)>,
    error: &serde_path_to_error::Error<toml::de::Error>,
) -> PolicyError {
    let inner = error.inner();
    let path = error.path().to_string();
    let path = if path == "." { String::new() } else { path };
    let raw = inner.message().trim().to_string();
    let span_position = inner.span().map(|span| lines.position(text, span.start));
    let join = |name: &str| {
        if path.is_empty() {
            name.to_string()
        } else {
            format!("{path}.{name}")
        }
    };

    if let Some(rest) = raw.strip_prefix("unknown field ") {
        let (raw_name, rest) = take_backticked(rest);
        let name = printable(&raw_name);
        let accepted = backticked_list(rest);
        let field = if path.ends_with(&raw_name) && !raw_name.is_empty() {
            printable(&path)
        } else {
            join(&name)
        };
        let hint = match closest(&name, &accepted) {
            Some(close) => format!("did you mean `{close}`?"),
            None if accepted.is_empty() => {
                "remove this field: the table takes no fields".to_string()
            }
            None => format!("remove it; accepted fields here: {}", accepted.join(", ")),
        };
        let position = span_position.or_else(|| positions.get(&field).copied());
        return invalid(
            file,
            field,
            position,
            format!("unknown field `{name}`"),
            hint,
        );
    }
    if let Some(rest) = raw.strip_prefix("missing field ") {
        let (name, _) = take_backticked(rest);
        let field = join(&name);
        let position = positions.get(&path).copied().or(span_position);
        let table = if path.is_empty() {
            "the top level of the profile".to_string()
        } else {
            format!("`{path}`")
        };
        return invalid(
            file,
            field,
            position,
            format!("missing required field `{name}`"),
            format!("add `{name} = ...` to {table}"),
        );
    }
    let position = span_position.or_else(|| positions.get(&path).copied());
    if let Some(rest) = raw.strip_prefix("unknown variant ") {
        let (value, rest) = take_backticked(rest);
        let value = printable(&value);
        let accepted = backticked_list(rest);
        let hint = match closest(&value, &accepted) {
            Some(close) => format!(
                "did you mean \"{close}\"? accepted values: {}",
                accepted.join(", ")
            ),
            None => format!("use one of: {}", accepted.join(", ")),
        };
        return invalid(
            file,
            path,
            position,
            format!("unknown value \"{value}\""),
            hint,
        );
    }
    if raw.contains("did not match any variant of untagged enum CpuCount") {
        return invalid(
            file,
            path,
            position,
            "expected a cpu count, a number or a string".to_string(),
            "write a count of cpus such as `cpus = 2` or `cpus = \"1.5\"`".to_string(),
        );
    }
    if raw.contains("did not match any variant of untagged enum PortConfig") {
        return invalid(
            file,
            path,
            position,
            "expected a port, a number or a string".to_string(),
            "write a container port such as `8080` or `\"53/udp\"`".to_string(),
        );
    }
    if let Some(rest) = raw.strip_prefix("invalid type: ") {
        if let Some((found, expected)) = rest.rsplit_once(", expected ") {
            let expected = describe_expected(expected);
            if expected == "an integer" && describe_found(found) == expected {
                // An integer beyond i64 (toml reads it as u64 or i128): not a type error.
                return invalid(
                    file,
                    path,
                    position,
                    "integer out of range: it does not fit a signed 64-bit integer".to_string(),
                    "write a much smaller number; `agentc schema` describes each field's range"
                        .to_string(),
                );
            }
            return invalid(
                file,
                path,
                position,
                format!(
                    "wrong type: expected {expected}, found {}",
                    describe_found(found)
                ),
                format!("write this field as {expected}"),
            );
        }
    }
    invalid(
        file,
        path,
        position,
        printable(&lower_first(&raw).replace('\n', " ")),
        "fix this value; `agentc schema` prints every field and its type".to_string(),
    )
}

/// `` `name`, rest `` -> (`name`, `, rest`).
fn take_backticked(text: &str) -> (String, &str) {
    let Some(rest) = text.strip_prefix('`') else {
        return (String::new(), text);
    };
    match rest.find('`') {
        Some(end) => (rest[..end].to_string(), &rest[end + 1..]),
        None => (rest.to_string(), ""),
    }
}

/// Every `` `item` `` in a serde "expected one of" list.
fn backticked_list(text: &str) -> Vec<String> {
    text.split('`')
        .enumerate()
        .filter(|(index, _)| index % 2 == 1)
        .map(|(_, item)| item.to_string())
        .collect()
}

/// The accepted name closest to a misspelled one, if it is close enough to be a typo.
pub(crate) fn closest(name: &str, accepted: &[String]) -> Option<String> {
    let name = name.to_ascii_lowercase();
    accepted
        .iter()
        .map(|candidate| {
            (
                edit_distance(&name, &candidate.to_ascii_lowercase()),
                candidate,
            )
        })
        .filter(|(distance, candidate)| {
            *distance <= 2.max(candidate.len() / 4) && *distance < candidate.len().max(name.len())
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate.clone())
}

/// Levenshtein distance with adjacent transpositions counted as one edit.
fn edit_distance(left: &str, right: &str) -> usize {
    let left: Vec<char> = left.chars().collect();
    let right: Vec<char> = right.chars().collect();
    let width = right.len() + 1;
    let mut table = vec![0usize; (left.len() + 1) * width];
    for (index, cell) in table.iter_mut().enumerate().take(width) {
        *cell = index;
    }
    for row in 0..=left.len() {
        table[row * width] = row;
    }
    for row in 1..=left.len() {
        for column in 1..=right.len() {
            let cost = usize::from(left[row - 1] != right[column - 1]);
            let mut best = (table[(row - 1) * width + column] + 1)
                .min(table[row * width + column - 1] + 1)
                .min(table[(row - 1) * width + column - 1] + cost);
            if row > 1
                && column > 1
                && left[row - 1] == right[column - 2]
                && left[row - 2] == right[column - 1]
            {
                best = best.min(table[(row - 2) * width + column - 2] + 1);
            }
            table[row * width + column] = best;
        }
    }
    table[left.len() * width + right.len()]
}

fn describe_expected(expected: &str) -> String {
    let expected = expected.trim();
    match expected {
        "i64" | "u64" | "i32" | "u32" | "u16" | "an integer" => "an integer".to_string(),
        "f64" | "a float" => "a number".to_string(),
        "a boolean" | "bool" => "a boolean (true or false)".to_string(),
        "a string" => "a string".to_string(),
        "a sequence" => "an array".to_string(),
        _ if expected.starts_with("struct ") || expected == "a map" => "a table".to_string(),
        _ if expected.starts_with("enum ") => "a string".to_string(),
        _ => expected.to_string(),
    }
}

fn describe_found(found: &str) -> String {
    let found = found.trim();
    if found.starts_with("string") {
        "a string".to_string()
    } else if found.starts_with("integer") {
        "an integer".to_string()
    } else if found.starts_with("floating point") {
        "a float".to_string()
    } else if found.starts_with("boolean") {
        "a boolean".to_string()
    } else if found == "sequence" {
        "an array".to_string()
    } else if found == "map" {
        "a table".to_string()
    } else {
        found.to_string()
    }
}

/// `text` with control characters escaped (`\u{1b}`), for echoing a key or value in a message.
///
/// Regression (`control_characters_in_echoed_keys_and_values_are_escaped`): an unknown field
/// or agent written with `\u001b` escapes put a raw ESC sequence into the error, which
/// rewrote the terminal of whoever ran `agentc validate` on the profile.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn lower_first(text: &str) -> String {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) => first.to_lowercase().chain(characters).collect(),
        None => String::new(),
    }
}

/// Trims and lower-cases what agent-containers trims and lower-cases.
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
    fn lower(value: &mut String) {
        *value = value.trim().to_ascii_lowercase();
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
        lower(&mut provider.kind);
    }
    if let Some(proxy) = &mut profile.proxy {
        trim_all(&mut proxy.no_proxy);
    }
    let egress = &mut profile.egress;
    lower(&mut egress.mode);
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
        lower(&mut mount.on_conflict);
    }
    if let Some(import) = &mut profile.configuration_import {
        trim(&mut import.source);
        trim_option(&mut import.target);
        lower(&mut import.on_conflict);
        if let Some(format) = &mut import.format {
            *format = normalize_format(format);
        }
    }
}

/// `".YML"` -> `"yaml"`; other formats lower case without a leading dot.
pub(crate) fn normalize_format(format: &str) -> String {
    let normalized = format.trim().to_ascii_lowercase();
    let normalized = normalized.trim_start_matches('.');
    if normalized == "yml" {
        "yaml".to_string()
    } else {
        normalized.to_string()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The smallest valid profile; tests append the fields under test.
    pub(crate) const MINIMAL: &str = "name = \"dev\"\nagent = \"claude-code\"\n";

    /// The error a profile text is refused with.
    pub(crate) fn err(text: &str) -> PolicyError {
        load("p.toml", text).expect_err("profile should be rejected")
    }

    /// (field, position, message, hint) of a profile error.
    pub(crate) fn parts(error: &PolicyError) -> (String, Option<(usize, usize)>, String, String) {
        match error {
            PolicyError::Invalid {
                location:
                    Location::Profile {
                        field, position, ..
                    },
                message,
                hint,
            } => (field.clone(), *position, message.clone(), hint.clone()),
            other => panic!("unexpected error {other:?}"),
        }
    }

    #[test]
    fn a_minimal_profile_loads_with_defaults() {
        let loaded = load("p.toml", MINIMAL).unwrap();
        assert_eq!(loaded.file, "p.toml");
        assert_eq!(loaded.profile.name, "dev");
        assert_eq!(loaded.profile.egress.mode, "allowlist");
        assert_eq!(loaded.position("name"), Some((1, 8)));
        assert_eq!(loaded.position("agent"), Some((2, 9)));
        assert_eq!(loaded.position("egress.mode"), None);
    }

    #[test]
    fn positions_cover_tables_arrays_and_items() {
        let text = format!(
            "{MINIMAL}[egress]\nmode = \"deny\"\ngateway_host = \"gw\"\ngateway_port = 22\n\n\
             [[mounts]]\nsource = \"a\"\ntarget = \"/a\"\n\n[[mounts]]\nsource = \"b\"\n  target = \"/b\"\n"
        );
        let loaded = load("p.toml", &text).unwrap();
        assert_eq!(loaded.position("egress.gateway_port"), Some((6, 16)));
        assert_eq!(loaded.position("mounts[1].target"), Some((14, 12)));
        assert_eq!(loaded.position("mounts[0].source"), Some((9, 10)));
        let Location::Profile {
            field, position, ..
        } = loaded.location("mounts[1].read_only")
        else {
            panic!("profile location expected")
        };
        assert_eq!(field, "mounts[1].read_only");
        assert_eq!(position, loaded.position("mounts[1]"));
        assert!(position.is_some());
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let text = "# é\nname = \"dev\" # ü\nagent = \"codex\"\nhome_volume = \"v\"\n";
        let loaded = load("p.toml", text).unwrap();
        assert_eq!(loaded.position("name"), Some((2, 8)));
        let text = "name = \"dév\"\nagent = \"codex\"\n";
        let (field, position, _, _) = parts(&err(text));
        assert_eq!((field.as_str(), position), ("name", Some((1, 8))));
    }

    #[test]
    fn profiles_are_normalized_like_agent_containers() {
        let text = "name = \" dev \"\nagent = \"hermes\"\n[provider]\nkind = \" OpenAI \"\n\
             [egress]\nmode = \" DENY \"\nhosts = [\" a.example \"]\n\
             [configuration_import]\nsource = \" c.toml \"\nformat = \".YML\"\non_conflict = \"Replace\"\n";
        let profile = load("p.toml", text).unwrap().profile;
        assert_eq!(profile.name, "dev");
        assert_eq!(profile.provider.unwrap().kind, "openai");
        assert_eq!(profile.egress.mode, "deny");
        assert_eq!(profile.egress.hosts, ["a.example"]);
        let import = profile.configuration_import.unwrap();
        assert_eq!(import.source, "c.toml");
        assert_eq!(import.format.as_deref(), Some("yaml"));
        assert_eq!(import.on_conflict, "replace");
    }

    #[test]
    fn syntax_errors_have_a_position() {
        let error = err("name = \"dev\"\nagent = claude\n");
        let (field, position, message, _) = parts(&error);
        assert_eq!(field, "");
        assert_eq!(position.map(|p| p.0), Some(2));
        assert!(message.starts_with("invalid toml: "), "{message}");
        assert!(error.to_string().starts_with("p.toml:2:"), "{error}");
    }

    #[test]
    fn duplicate_keys_are_named_with_their_position() {
        let (field, position, message, hint) =
            parts(&err("name = \"dev\"\nagent = \"codex\"\nname = \"x\"\n"));
        assert_eq!(field, "name");
        assert_eq!(position, Some((3, 1)));
        assert_eq!(message, "duplicate key `name`");
        assert!(hint.contains("once per table"), "{hint}");
        let (field, position, message, _) = parts(&err(&format!(
            "{MINIMAL}[egress]\nmode = \"deny\"\nmode = \"x\"\n"
        )));
        assert_eq!(field, "egress.mode");
        assert_eq!(position, Some((5, 1)));
        assert_eq!(message, "duplicate key `mode`");
        let text = format!(
            "{MINIMAL}[[mounts]]\nsource = \"a\"\ntarget = \"/a\"\n[[mounts]]\nsource = \"b\"\nsource = \"c\"\n"
        );
        assert_eq!(parts(&err(&text)).0, "mounts[1].source");
    }

    #[test]
    fn tables_defined_twice_are_named() {
        let (field, position, message, _) = parts(&err(&format!(
            "{MINIMAL}[egress]\nmode = \"deny\"\n[egress]\nhosts = []\n"
        )));
        assert_eq!(field, "egress");
        assert_eq!(position, Some((5, 2)));
        assert_eq!(message, "duplicate key `egress`");
    }

    #[test]
    fn arrays_are_not_read_positionally_as_tables() {
        let (field, position, message, hint) =
            parts(&err(&format!("{MINIMAL}packages = [\"git\"]\n")));
        assert_eq!(field, "packages");
        assert_eq!(position, Some((3, 12)));
        assert_eq!(message, "wrong type: expected a table, found an array");
        assert!(hint.contains("`[packages]`"), "{hint}");
        let (field, _, message, _) = parts(&err(&format!(
            "{MINIMAL}mounts = [[\"bind\", \"a\", \"/a\"]]\n"
        )));
        assert_eq!(field, "mounts[0]");
        assert_eq!(message, "wrong type: expected a table, found an array");
    }

    #[test]
    fn table_fields_match_the_schema() {
        let schema = crate::schema::profile_schema();
        let definitions = &schema["$defs"];
        let is_object = |value: &serde_json::Value| {
            let text = value.to_string();
            text.split("#/$defs/").skip(1).any(|rest| {
                let name = rest.split('"').next().unwrap_or_default();
                definitions[name]["type"] == "object"
            })
        };
        for (name, property) in schema["properties"].as_object().unwrap() {
            let list = property["type"] == "array";
            let expected_table = !list && is_object(property);
            let expected_list = list && is_object(&property["items"]);
            assert_eq!(
                TABLE_FIELDS.contains(&name.as_str()),
                expected_table,
                "{name}"
            );
            assert_eq!(
                TABLE_LIST_FIELDS.contains(&name.as_str()),
                expected_list,
                "{name}"
            );
        }
    }

    #[test]
    fn unknown_fields_suggest_the_close_name() {
        let text = format!("{MINIMAL}[egress]\ngateway_host = \"gw\"\ngateway_prot = 22\n");
        let (field, position, message, hint) = parts(&err(&text));
        assert_eq!(field, "egress.gateway_prot");
        assert_eq!(position, Some((5, 1)));
        assert_eq!(message, "unknown field `gateway_prot`");
        assert_eq!(hint, "did you mean `gateway_port`?");
    }

    #[test]
    fn unknown_fields_without_a_close_name_list_the_accepted_ones() {
        let (field, position, message, hint) = parts(&err(&format!("{MINIMAL}colour = 1\n")));
        assert_eq!(field, "colour");
        assert_eq!(position, Some((3, 1)));
        assert_eq!(message, "unknown field `colour`");
        assert!(
            hint.contains("accepted fields here: schema_version, name, agent"),
            "{hint}"
        );
    }

    #[test]
    fn unknown_fields_in_array_items_name_the_index() {
        let text = format!("{MINIMAL}[[mounts]]\nsource = \"a\"\ntarget = \"/a\"\n[[mounts]]\nsource = \"b\"\ntarget = \"/b\"\nreadonly = true\n");
        let (field, position, message, hint) = parts(&err(&text));
        assert_eq!(field, "mounts[1].readonly");
        assert_eq!(position, Some((9, 1)));
        assert_eq!(message, "unknown field `readonly`");
        assert_eq!(hint, "did you mean `read_only`?");
    }

    #[test]
    fn wrong_types_name_the_field_and_the_expected_type() {
        let text = format!("{MINIMAL}[egress]\ngateway_host = \"gw\"\ngateway_port = \"22\"\n");
        let (field, position, message, hint) = parts(&err(&text));
        assert_eq!(field, "egress.gateway_port");
        assert_eq!(position, Some((5, 16)));
        assert_eq!(message, "wrong type: expected an integer, found a string");
        assert_eq!(hint, "write this field as an integer");

        let text =
            format!("{MINIMAL}[[mounts]]\nsource = \"a\"\ntarget = \"/a\"\nread_only = \"yes\"\n");
        let (field, _, message, _) = parts(&err(&text));
        assert_eq!(field, "mounts[0].read_only");
        assert_eq!(
            message,
            "wrong type: expected a boolean (true or false), found a string"
        );

        let (field, _, message, _) = parts(&err(&format!("{MINIMAL}[egress]\nhosts = \"a\"\n")));
        assert_eq!(field, "egress.hosts");
        assert_eq!(message, "wrong type: expected an array, found a string");
    }

    #[test]
    fn untagged_values_get_a_readable_message() {
        let (field, position, message, _) =
            parts(&err(&format!("{MINIMAL}[resources]\ncpus = true\n")));
        assert_eq!(field, "resources.cpus");
        assert_eq!(position, Some((4, 8)));
        assert_eq!(message, "expected a cpu count, a number or a string");
        let (field, _, message, _) =
            parts(&err(&format!("{MINIMAL}[network]\npublish = [80, true]\n")));
        assert_eq!(field, "network.publish[1]");
        assert_eq!(message, "expected a port, a number or a string");
    }

    #[test]
    fn missing_fields_are_named() {
        let (field, position, message, hint) = parts(&err("agent = \"codex\"\n"));
        assert_eq!(field, "name");
        assert_eq!(message, "missing required field `name`");
        assert_eq!(hint, "add `name = ...` to the top level of the profile");
        let _ = position;
        let text = format!("{MINIMAL}[[mounts]]\nsource = \"a\"\n");
        let (field, position, message, hint) = parts(&err(&text));
        assert_eq!(field, "mounts[0].target");
        assert_eq!(position.map(|p| p.0), Some(3));
        assert_eq!(message, "missing required field `target`");
        assert_eq!(hint, "add `target = ...` to `mounts[0]`");
    }

    #[test]
    fn unknown_agents_list_the_accepted_values() {
        let (field, position, message, hint) = parts(&err("name = \"dev\"\nagent = \"claude\"\n"));
        assert_eq!(field, "agent");
        assert_eq!(position, Some((2, 9)));
        assert_eq!(message, "unknown value \"claude\"");
        assert!(
            hint.contains("claude-code, opencode, codex, hermes, custom"),
            "{hint}"
        );
    }

    #[test]
    fn profiles_larger_than_one_mebibyte_are_refused_before_parsing() {
        let text = format!("{MINIMAL}# {}\n", "x".repeat(MAX_PROFILE_BYTES));
        let (field, position, message, hint) = parts(&err(&text));
        assert_eq!((field.as_str(), position), ("", None));
        assert_eq!(
            message,
            format!(
                "the profile is {} bytes, more than the limit of 1048576 bytes (1 MiB)",
                text.len()
            )
        );
        assert!(hint.contains("right file"), "{hint}");
        let fits = format!(
            "{MINIMAL}#{}\n",
            "x".repeat(MAX_PROFILE_BYTES - MINIMAL.len() - 2)
        );
        assert_eq!(fits.len(), MAX_PROFILE_BYTES);
        load("p.toml", &fits).unwrap();
    }

    #[test]
    fn deep_nesting_is_a_clear_error_not_a_stack_overflow() {
        for text in [
            format!(
                "{MINIMAL}x = {}{}\n",
                "[".repeat(10_000),
                "]".repeat(10_000)
            ),
            format!(
                "{MINIMAL}x = {}1{}\n",
                "{a=".repeat(10_000),
                "}".repeat(10_000)
            ),
            format!("{MINIMAL}{} = 1\n", ["a"; 10_000].join(".")),
            format!("{MINIMAL}[{}]\n", ["a"; 10_000].join(".")),
        ] {
            let (field, _, message, hint) = parts(&err(&text));
            assert_eq!(field, "");
            assert_eq!(
                message,
                "the profile nests tables, arrays or dotted keys too deeply"
            );
            assert!(hint.contains("nest at most"), "{hint}");
        }
    }

    #[test]
    fn integers_beyond_i64_are_out_of_range_not_a_wrong_type() {
        let text = format!("{MINIMAL}[resources]\npids_limit = 18446744073709551616\n");
        let (field, position, message, _) = parts(&err(&text));
        assert_eq!(field, "resources.pids_limit");
        assert_eq!(position, Some((4, 14)));
        assert_eq!(
            message,
            "integer out of range: it does not fit a signed 64-bit integer"
        );
    }

    #[test]
    fn a_one_line_array_of_many_values_loads_in_linear_time() {
        let values = vec!["\"a\""; 200_000].join(",");
        let text = format!("{MINIMAL}[packages]\napt = [{values}]\n");
        assert!(text.len() < MAX_PROFILE_BYTES);
        let started = std::time::Instant::now();
        let loaded = load("p.toml", &text).unwrap();
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "took {:?}",
            started.elapsed()
        );
        assert_eq!(loaded.position("packages.apt[0]"), Some((4, 8)));
        assert_eq!(loaded.position("packages.apt[2]"), Some((4, 16)));
        assert_eq!(
            loaded.position("packages.apt[199999]"),
            Some((4, 8 + 4 * 199_999))
        );
    }

    #[test]
    fn control_characters_in_echoed_keys_and_values_are_escaped() {
        let (field, _, message, _) = parts(&err(&format!("{MINIMAL}\"x\\u001b[2J\" = 1\n")));
        assert_eq!(field, "x\\u{1b}[2J");
        assert_eq!(message, "unknown field `x\\u{1b}[2J`");
        let (field, _, message, _) = parts(&err("name = \"dev\"\nagent = \"claude\\u001b[2J\"\n"));
        assert_eq!(field, "agent");
        assert_eq!(message, "unknown value \"claude\\u{1b}[2J\"");
    }

    proptest::proptest! {
        #[test]
        fn positions_match_the_one_at_a_time_computation(text in "(name = \"dév\"\n|agent = \"codex\"\n|x = \\[1, \"é\", 3\\]\n|y = \\{ a = \"ü\", b = 2 \\}\n|# ö\n){0,8}") {
            if let Ok(document) = DeTable::parse(&text) {
                let lines = LineIndex::new(&text);
                let mut spans = Vec::new();
                index_table(document.get_ref(), "", &mut spans);
                let expected: HashMap<String, (usize, usize)> = spans
                    .iter()
                    .map(|(path, span)| (path.clone(), lines.position(&text, span.start)))
                    .collect();
                proptest::prop_assert_eq!(lines.positions(&text, spans), expected);
            }
        }

        #[test]
        fn arbitrary_text_never_panics(text in "(name|agent|\\[egress\\]|\\[\\[mounts\\]\\]|mode|=|\"|é|\n| |x|1|\\[|\\]){0,40}") {
            let _ = load("p.toml", &text);
        }
    }

    #[test]
    fn close_names_tolerate_typos_but_not_unrelated_words() {
        let accepted: Vec<String> = ["gateway_port", "gateway_host", "mode"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            closest("gateway_prot", &accepted).as_deref(),
            Some("gateway_port")
        );
        assert_eq!(closest("MODE", &accepted).as_deref(), Some("mode"));
        assert_eq!(closest("colour", &accepted), None);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
