//! The architecture of every crate under `crates/`, read from its sources
//! (`agentc_conformance::architecture` has the rules): no module cycle within a crate, and no
//! source file above 800 non-test lines. Integration tests (`crates/*/tests`) and this crate
//! are test code and are not measured.

use std::path::{Path, PathBuf};

use agentc_conformance::architecture::{check_crate, Report, MAX_LINES};

/// Every crate directory under `crates/`, with its report.
fn reports() -> Vec<(PathBuf, Report)> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&crates)
        .expect("crates/ is readable")
        .map(|entry| entry.expect("crates/ is readable").path())
        .filter(|path| path.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 4,
        "found only {dirs:?} under {}",
        crates.display()
    );
    dirs.into_iter()
        .map(|dir| {
            let report = check_crate(&dir)
                .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()));
            let name = PathBuf::from("crates").join(dir.file_name().expect("a directory name"));
            (name, report)
        })
        .collect()
}

/// What one rule found in every crate, one line each, prefixed with the crate's directory.
fn found<T: std::fmt::Display>(select: impl Fn(Report) -> Vec<T>) -> Vec<String> {
    reports()
        .into_iter()
        .flat_map(|(name, report)| {
            select(report)
                .into_iter()
                .map(move |finding| format!("{}: {finding}", name.display()))
        })
        .collect()
}

#[test]
fn no_crate_has_a_module_cycle() {
    let cycles = found(|report| report.cycles);
    assert!(
        cycles.is_empty(),
        "{} module cycle(s); move what the modules share into a leaf module that depends on \
         neither:\n{}",
        cycles.len(),
        cycles.join("\n")
    );
}

#[test]
fn no_source_file_is_above_the_line_limit() {
    let files = found(|report| report.long_files);
    assert!(
        files.is_empty(),
        "{} file(s) above {MAX_LINES} non-test lines; split them by concern:\n{}",
        files.len(),
        files.join("\n")
    );
}

/// Every error hint is written one way, on its own line: `MESSAGE\n  hint: HINT`, as the
/// policy's errors display. A hint in parentheses or after a semicolon is a second format.
#[test]
fn every_hint_has_one_format() {
    let mut wrong = Vec::new();
    for (file, text) in sources() {
        for (index, line) in text.lines().enumerate() {
            if line.contains("(hint: ") || line.contains("; hint: ") {
                wrong.push(format!("{}:{}: {}", file.display(), index + 1, line.trim()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "write hints as `\\n  hint: ...`:\n{}",
        wrong.join("\n")
    );
}

/// The one place that writes a hint's line (`\n  hint: HINT`) after a message: the adapter
/// `agentc_policy::hint::WithHint`.
const HINT_ADAPTER: &str = "crates/policy/src/hint.rs";

/// A hint is a field of its error (`agentc_policy::Hinted::hint`), not text inside its
/// message: no source writes `\n  hint: ` into a message but the adapter that prints the two.
/// An error interpolated into a larger message carries its hint with the adapter
/// (`error.with_hint()`), or hands it on as a field. Test code, which asserts what is printed,
/// is not read.
#[test]
fn a_hint_is_a_field_not_text_in_a_message() {
    let literal = "\\n  hint:";
    let mut wrong = Vec::new();
    for (file, text) in sources() {
        let shown = file.display().to_string();
        let shown = shown.trim_start_matches("../").to_string();
        // Test code states what is printed; an inline test module ends the code read.
        if shown.ends_with("/tests.rs")
            || shown.contains("/tests/")
            || shown.contains("/examples/")
            || shown == "crates/engine/src/memory/flows.rs"
            || shown == HINT_ADAPTER
        {
            continue;
        }
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let count = code.matches(literal).count();
        if count > 0 {
            wrong.push(format!(
                "{shown}: {count} hint(s) written into message text"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "a hint is a field of its error (agentc_policy::Hinted), printed by \
         agentc_policy::hint::WithHint; never `\\n  hint: ` in a message:\n{}",
        wrong.join("\n")
    );
}

/// Every Rust source under `crates/` and `tests/src`, with its text.
fn sources() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    let mut pending = vec![root.join("crates"), root.join("tests/src")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("sources are readable") {
            let path = entry.expect("sources are readable").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file).expect("sources are UTF-8");
            let shown = file
                .strip_prefix(&root)
                .map(Path::to_path_buf)
                .unwrap_or(file);
            (shown, text)
        })
        .collect()
}
