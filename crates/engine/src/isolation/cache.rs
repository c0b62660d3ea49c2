//! The isolation probes remembered between launches: a runtime's proven tier, kept per engine
//! (its kind, ID and version) and per runtime (its name, path and arguments, and version as the
//! engine reports them, and the program's file on this machine when the engine is local), in
//! `$XDG_CACHE_HOME/agentc/isolation-probes.json` (else `~/.cache/agentc`).
//!
//! Only proofs are kept, never failures, and detection still runs at every launch: a runtime
//! removed from the engine is not offered whatever the cache says, and any change of the
//! engine or the runtime misses. A launch that fails under a runtime forgets it. A file that
//! cannot be read (corrupt, foreign, another format) counts as empty, with a debug line;
//! writes go through a temporary file and a rename. `AGENTC_ISOLATION_CACHE=off` bypasses it.

use std::path::{Path, PathBuf};

use agentc_policy::IsolationTier;
use serde::{Deserialize, Serialize};

/// The file's format; another is ignored.
const FORMAT: u32 = 1;
/// The file's name under the cache directory.
const FILE: &str = "isolation-probes.json";
/// At most this many entries are kept (the newest).
const MAX_ENTRIES: usize = 64;
/// The variable that bypasses the cache (`off`: neither read nor written).
pub const BYPASS_VARIABLE: &str = "AGENTC_ISOLATION_CACHE";

/// What identifies one runtime of one engine: a probe's proof holds only for an equal key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeKey {
    /// The engine's kind, version and ID.
    pub engine: String,
    /// The runtime's registered name.
    pub runtime: String,
    /// Its program and arguments as the engine reports them.
    pub path: String,
    /// Its version as the engine reports it.
    pub version: String,
    /// The program's file here (device, inode, size, modification time), empty when it is not
    /// found here (a remote engine, a name only the engine's `PATH` resolves).
    pub file: String,
}

/// One remembered proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// What it was proven for.
    #[serde(flatten)]
    pub key: ProbeKey,
    /// The tier the probe proved.
    pub tier: IsolationTier,
    /// What the probe saw.
    pub evidence: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct CacheFile {
    format: u32,
    entries: Vec<Entry>,
}

/// The cache file, or `None` when it is bypassed or there is no cache directory. `env` reads
/// the caller's environment: `XDG_CACHE_HOME`, `HOME` and [`BYPASS_VARIABLE`].
pub fn location(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if env(BYPASS_VARIABLE).is_some_and(|value| value.eq_ignore_ascii_case("off")) {
        return None;
    }
    Some(agentc_egress::image::agentc_cache_dir(env)?.join(FILE))
}

/// The entries of the file; a missing file has none, and an unreadable one (with a debug line)
/// too.
pub fn load(path: &Path) -> Vec<Entry> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(error) => {
            log::debug!(
                "isolation cache {}: unreadable, ignored: {error}",
                path.display()
            );
            return Vec::new();
        }
    };
    match serde_json::from_slice::<CacheFile>(&bytes) {
        Ok(file) if file.format == FORMAT => file.entries,
        Ok(file) => {
            log::debug!(
                "isolation cache {}: format {} is not {FORMAT}, ignored",
                path.display(),
                file.format
            );
            Vec::new()
        }
        Err(error) => {
            log::debug!(
                "isolation cache {}: not agentc's, ignored: {error}",
                path.display()
            );
            Vec::new()
        }
    }
}

/// The proof remembered for `key`, if any.
pub fn lookup<'a>(entries: &'a [Entry], key: &ProbeKey) -> Option<&'a Entry> {
    entries.iter().find(|entry| entry.key == *key)
}

/// `entries` with `entry` in place of any other for the same runtime of the same engine, the
/// newest last, at most 64.
pub fn remember(entries: &mut Vec<Entry>, entry: Entry) {
    entries.retain(|old| {
        !(old.key.engine == entry.key.engine && old.key.runtime == entry.key.runtime)
    });
    entries.push(entry);
    let excess = entries.len().saturating_sub(MAX_ENTRIES);
    entries.drain(..excess);
}

/// Writes the entries through a temporary file renamed over the old one (best effort: a cache
/// that cannot be written only costs the next launch its probes).
pub fn store(path: &Path, entries: &[Entry]) {
    let Some(dir) = path.parent() else {
        return;
    };
    let file = CacheFile {
        format: FORMAT,
        entries: entries.to_vec(),
    };
    let temporary = dir.join(format!(".{FILE}.{}", std::process::id()));
    let written = serde_json::to_vec_pretty(&file)
        .map_err(std::io::Error::other)
        .and_then(|bytes| {
            std::fs::create_dir_all(dir)?;
            std::fs::write(&temporary, bytes)?;
            std::fs::rename(&temporary, path)
        });
    if let Err(error) = written {
        log::debug!("isolation cache {}: not written: {error}", path.display());
        let _ = std::fs::remove_file(&temporary);
    }
}

/// Forgets every proof of `runtime` (a launch under it failed): the next launch probes it again.
pub fn forget(path: &Path, runtime: &str) {
    let mut entries = load(path);
    let before = entries.len();
    entries.retain(|entry| entry.key.runtime != runtime);
    if entries.len() != before {
        log::debug!("isolation cache: forgot runtime {runtime}");
        store(path, &entries);
    }
}

/// The program's file on this machine, for the key: the first word of `path`, looked up on
/// `PATH` when it has no `/`; empty when it is not found.
pub fn program_file(path: &str, search: Option<&str>) -> String {
    let program = path.split(' ').next().unwrap_or_default();
    if program.is_empty() {
        return String::new();
    }
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![PathBuf::from(program)]
    } else {
        std::env::split_paths(search.unwrap_or_default())
            .map(|dir| dir.join(program))
            .collect()
    };
    candidates
        .iter()
        .find_map(|candidate| agentc_egress::image::file_identity(candidate))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(version: &str) -> ProbeKey {
        ProbeKey {
            engine: "docker 20.10.24 PM7C".into(),
            runtime: "runsc".into(),
            path: "/usr/bin/runsc --network=host".into(),
            version: version.into(),
            file: String::new(),
        }
    }

    fn entry(version: &str) -> Entry {
        Entry {
            key: key(version),
            tier: IsolationTier::Gvisor,
            evidence: "Linux version 4.4.0".into(),
        }
    }

    #[test]
    fn the_cache_lives_under_xdg_cache_home_else_home_and_can_be_bypassed() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| value.to_string())
            }
        };
        assert_eq!(
            location(env(&[("XDG_CACHE_HOME", "/c"), ("HOME", "/h")])),
            Some(PathBuf::from("/c/agentc/isolation-probes.json"))
        );
        assert_eq!(
            location(env(&[("XDG_CACHE_HOME", ""), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.cache/agentc/isolation-probes.json"))
        );
        assert_eq!(location(env(&[])), None);
        assert_eq!(
            location(env(&[("HOME", "/h"), ("AGENTC_ISOLATION_CACHE", "OFF")])),
            None
        );
    }

    #[test]
    fn a_proof_holds_only_for_the_same_engine_and_runtime_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join(FILE);
        assert!(load(&path).is_empty(), "a missing file has no entries");
        let mut entries = Vec::new();
        remember(&mut entries, entry("0.0~20221219.0"));
        store(&path, &entries);
        let loaded = load(&path);
        assert_eq!(loaded, entries);
        assert!(lookup(&loaded, &key("0.0~20221219.0")).is_some());
        assert!(lookup(&loaded, &key("0.0~20240101.0")).is_none());
        let mut other = key("0.0~20221219.0");
        other.engine = "docker 24.0.0 PM7C".into();
        assert!(lookup(&loaded, &other).is_none());
        // A new proof replaces the old one of the same runtime.
        let mut entries = loaded;
        remember(&mut entries, entry("0.0~20240101.0"));
        assert_eq!(entries.len(), 1);
        forget(&path, "runsc");
        store(&path, &[]);
        assert!(load(&path).is_empty());
    }

    #[test]
    fn a_corrupt_or_foreign_file_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        for text in [
            "not json",
            "{\"format\": 1}",
            "{\"format\": 2, \"entries\": []}",
            "[1, 2]",
            "{\"format\": 1, \"entries\": [{\"tier\": \"mainframe\"}]}",
        ] {
            std::fs::write(&path, text).unwrap();
            assert!(load(&path).is_empty(), "{text}");
        }
        std::fs::create_dir(dir.path().join("a-dir")).unwrap();
        assert!(load(&dir.path().join("a-dir")).is_empty());
        // Storing over a corrupt file replaces it.
        store(&path, &[entry("1")]);
        assert_eq!(load(&path).len(), 1);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|entry| entry.ok())
            .filter(|entry| entry.file_name().to_string_lossy().starts_with('.'))
            .collect();
        assert!(leftovers.is_empty(), "no temporary file is left");
    }

    #[test]
    fn at_most_the_newest_entries_are_kept() {
        let mut entries = Vec::new();
        for index in 0..(MAX_ENTRIES + 5) {
            let mut fresh = entry("1");
            fresh.key.runtime = format!("r{index}");
            remember(&mut entries, fresh);
        }
        assert_eq!(entries.len(), MAX_ENTRIES);
        assert_eq!(
            entries.last().unwrap().key.runtime,
            format!("r{}", MAX_ENTRIES + 4)
        );
    }

    #[test]
    fn the_programs_file_is_found_on_the_path_or_by_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("fake-runc");
        std::fs::write(&program, "x").unwrap();
        let search = dir.path().to_string_lossy().into_owned();
        let by_name = program_file("fake-runc --flag", Some(&search));
        assert!(!by_name.is_empty());
        assert_eq!(program_file(&program.to_string_lossy(), None), by_name);
        assert_eq!(program_file("no-such-program", Some(&search)), "");
        std::fs::write(&program, "xy").unwrap();
        assert_ne!(
            program_file("fake-runc", Some(&search)),
            by_name,
            "a changed file misses"
        );
    }
}
