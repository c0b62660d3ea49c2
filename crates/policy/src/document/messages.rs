//! The messages of the shape stage: a TOML syntax error, a duplicate key, and serde's errors
//! (unknown, missing or wrongly typed fields, values that do not parse) in words, each with
//! its field path, position and hint.

use std::collections::HashMap;

use super::{parent_path, LineIndex};
use crate::error::{Location, PolicyError, ValueError};
use crate::text::{closest, lower_first, printable};

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

pub(super) fn invalid(
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
pub(super) fn syntax_error(
    file: &str,
    text: &str,
    lines: &LineIndex,
    error: &toml::de::Error,
) -> PolicyError {
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

/// A wrong type, an unknown field, a missing field or a value that does not parse, at the
/// field path `path` (as written).
pub(super) fn serde_error(
    file: &str,
    text: &str,
    lines: &LineIndex,
    positions: &HashMap<String, (usize, usize)>,
    error: &serde_path_to_error::Error<toml::de::Error>,
    path: &str,
) -> PolicyError {
    let inner = error.inner();
    let path = path.to_string();
    let raw = inner.message().trim().to_string();
    let span_position = inner.span().map(|span| lines.position(text, span.start));

    if let Some(rest) = raw.strip_prefix("unknown field ") {
        let (raw_name, rest) = take_backticked(rest);
        let name = printable(&raw_name);
        let accepted = backticked_list(rest);
        let field = path.clone();
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
        let field = path.clone();
        let table_path = parent_path(&path).unwrap_or_default();
        let position = positions.get(table_path).copied().or(span_position);
        let table = if table_path.is_empty() {
            "the top level of the profile".to_string()
        } else {
            format!("`{table_path}`")
        };
        return invalid(
            file,
            field,
            position,
            format!("missing required field `{name}`"),
            format!("add `{name} = ...` to {table}"),
        );
    }
    // toml gives an item of an array the array's span: the item's own position is better.
    let position = positions.get(&path).copied().or(span_position);
    if let Some(value_error) = crate::values::decode(&raw) {
        let location = Location::Profile {
            file: file.to_string(),
            field: path.clone(),
            position,
        };
        return ValueError::at(value_error, location, &path);
    }
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
pub(super) fn take_backticked(text: &str) -> (String, &str) {
    let Some(rest) = text.strip_prefix('`') else {
        return (String::new(), text);
    };
    match rest.find('`') {
        Some(end) => (rest[..end].to_string(), &rest[end + 1..]),
        None => (rest.to_string(), ""),
    }
}

/// Every `` `item` `` in a serde "expected one of" list.
pub(super) fn backticked_list(text: &str) -> Vec<String> {
    text.split('`')
        .enumerate()
        .filter(|(index, _)| index % 2 == 1)
        .map(|(_, item)| item.to_string())
        .collect()
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
