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
