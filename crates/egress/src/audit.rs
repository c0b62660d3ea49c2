//! The audit writer: the one place every decision line of the proxy goes through, so that no
//! flood the sandbox can make erases a decision.
//!
//! **Rate limit at the source** ([`Limiter`], pure: time is passed in). Lines are grouped by a
//! key made of what the proxy decided, never of what the client chose: the line's kind, its
//! decision, its reason, and whether it is a priority line ([`is_priority`]); never a host or a
//! query name. In each window of [`WINDOW`] from a key's first line, the first [`BUDGET`] lines
//! of the key ([`PRIORITY_BUDGET`] for priority keys) are written in full; the rest are counted,
//! and one `summary` line ([`crate::log::Summary`]) per key and window says how many were left
//! out, when the first and last of them were, and up to [`MAX_SAMPLES`] of their hosts or query
//! names (each cut to [`SAMPLE_CHARS`] characters). The summary is written when its window ends
//! (a timer, [`Audit::tick`], or the key's next line) and at shutdown ([`Audit::finish`];
//! [`finish_all`] before the proxy exits because its workload is gone).
//!
//! **Kept by priority over floods.** Every line written goes to stdout (the container's log,
//! which the engine rotates) and, with `--audit-dir=DIR`, to the proxy's own files there (a
//! volume of the proxy's own, never mounted in the workload):
//!
//! - `priority.jsonl`: the priority lines (credential use, replays, scrubs) and their
//!   summaries, the first [`PRIORITY_FIRST_BYTES`] for the sandbox's life (never rotated);
//!   then `priority-newest.jsonl` and `priority-newest.1.jsonl`, a ring of two files of
//!   [`PRIORITY_RING_BYTES`] for the newest;
//! - `all.jsonl` and `all.1.jsonl`: every line, a ring of two files of [`ALL_RING_BYTES`].
//!
//! A file is rotated (or, the first priority file, closed) before a line would take it past
//! its size, so the directory never holds more than [`DISK_BOUND`] bytes (24 MiB). A proxy
//! started again on the same directory appends where its files left off.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use crate::error::EgressError;
use crate::log::{next_id, rfc3339, Event, Kind, Record, Summary};

/// Where agentc's launches have the proxy keep its audit files (`--audit-dir`): a volume of
/// the proxy's own (`NAME-egress-audit`; an `emptyDir` on Kubernetes), owned by its user in
/// the proxy image.
pub const AUDIT_DIR: &str = "/var/lib/agentc/egress-audit";

/// The rate limit's window, from a key's first line.
pub const WINDOW: Duration = Duration::from_secs(10);
/// Lines of one key written in full per window.
pub const BUDGET: u32 = 20;
/// Lines of one priority key written in full per window.
pub const PRIORITY_BUDGET: u32 = 200;
/// Hosts or query names a summary names at most.
pub const MAX_SAMPLES: usize = 5;
/// Characters of one sample at most.
pub const SAMPLE_CHARS: usize = 64;

/// The first priority lines, kept for the sandbox's life.
pub const PRIORITY_FILE: &str = "priority.jsonl";
/// The newest priority lines once [`PRIORITY_FILE`] is full.
pub const PRIORITY_NEWEST_FILE: &str = "priority-newest.jsonl";
/// The older half of the newest priority lines.
pub const PRIORITY_NEWEST_OLD_FILE: &str = "priority-newest.1.jsonl";
/// Every line.
pub const ALL_FILE: &str = "all.jsonl";
/// The older half of every line.
pub const ALL_OLD_FILE: &str = "all.1.jsonl";
/// The size of [`PRIORITY_FILE`] at most.
pub const PRIORITY_FIRST_BYTES: u64 = 4 << 20;
/// The size of each file of the newest priority lines at most.
pub const PRIORITY_RING_BYTES: u64 = 2 << 20;
/// The size of each file of every line at most.
pub const ALL_RING_BYTES: u64 = 8 << 20;
/// What the audit directory holds at most: 4 + 2 x 2 + 2 x 8 MiB.
pub const DISK_BOUND: u64 = PRIORITY_FIRST_BYTES + 2 * PRIORITY_RING_BYTES + 2 * ALL_RING_BYTES;

/// The audit files, in the order their lines were first written (the oldest priority lines
/// first): what `agentc egress log` reads back.
pub const FILES: [&str; 5] = [
    PRIORITY_FILE,
    PRIORITY_NEWEST_OLD_FILE,
    PRIORITY_NEWEST_FILE,
    ALL_OLD_FILE,
    ALL_FILE,
];

/// Whether a line is a priority line: about a credential (a request that carries one, a
/// replay of a placeholder) or a scrubbed response.
pub fn is_priority(record: &Record) -> bool {
    matches!(record.kind, Kind::CredentialReplay | Kind::Scrub) || record.credential.is_some()
}

/// What lines are counted together: nothing of it is chosen by the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    /// The line's event: a request's decision and its close line are counted apart.
    pub event: Event,
    /// The line's kind.
    pub kind: Kind,
    /// `allow` or `deny`.
    pub decision: &'static str,
    /// The reason code.
    pub reason: &'static str,
    /// Whether its lines are priority lines ([`is_priority`]).
    pub priority: bool,
}

impl Key {
    /// The key of `record`.
    pub fn of(record: &Record) -> Key {
        Key {
            event: record.event,
            kind: record.kind,
            decision: record.decision,
            reason: record.reason,
            priority: is_priority(record),
        }
    }
}

/// What the rate limit left out of one key in one window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suppressed {
    /// The key.
    pub key: Key,
    /// How many lines.
    pub count: u64,
    /// The first one's time.
    pub first_time: String,
    /// The last one's time.
    pub last_time: String,
    /// Their first distinct hosts or query names ([`MAX_SAMPLES`], [`SAMPLE_CHARS`]).
    pub samples: Vec<String>,
}

impl Suppressed {
    /// The summary line, stamped `time`, with a fresh id.
    pub fn summary(self, time: String) -> Summary {
        Summary {
            time,
            id: next_id(),
            event: Event::Summary,
            of: self.key.event,
            kind: self.key.kind,
            decision: self.key.decision,
            reason: self.key.reason,
            count: self.count,
            first_time: self.first_time,
            last_time: self.last_time,
            samples: self.samples,
        }
    }
}

/// Whether a line is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within its key's budget: written in full.
    Pass,
    /// Over it: counted into the key's summary.
    Counted,
}

#[derive(Debug)]
struct Slot {
    start: Instant,
    passed: u32,
    suppressed: Option<Suppressed>,
}

/// The rate limit (pure: the caller says what time it is).
#[derive(Debug)]
pub struct Limiter {
    window: Duration,
    budget: u32,
    priority_budget: u32,
    slots: HashMap<Key, Slot>,
}

impl Default for Limiter {
    fn default() -> Self {
        Limiter::new(WINDOW, BUDGET, PRIORITY_BUDGET)
    }
}

impl Limiter {
    /// A limit of `budget` lines per key (`priority_budget` for priority keys) per `window`.
    pub fn new(window: Duration, budget: u32, priority_budget: u32) -> Limiter {
        Limiter {
            window,
            budget,
            priority_budget,
            slots: HashMap::new(),
        }
    }

    /// Counts `record` at `now`: whether it is written, and the summary of its key's window
    /// that ended before it, if any (written first).
    pub fn admit(&mut self, record: &Record, now: Instant) -> (Verdict, Option<Suppressed>) {
        let key = Key::of(record);
        let budget = if key.priority {
            self.priority_budget
        } else {
            self.budget
        };
        let mut ended = None;
        let slot = self.slots.entry(key).or_insert(Slot {
            start: now,
            passed: 0,
            suppressed: None,
        });
        if now.saturating_duration_since(slot.start) >= self.window {
            ended = slot.suppressed.take();
            slot.start = now;
            slot.passed = 0;
        }
        if slot.passed < budget {
            slot.passed += 1;
            return (Verdict::Pass, ended);
        }
        let counted = slot.suppressed.get_or_insert_with(|| Suppressed {
            key,
            count: 0,
            first_time: record.time.clone(),
            last_time: String::new(),
            samples: Vec::new(),
        });
        counted.count += 1;
        counted.last_time.clone_from(&record.time);
        if let Some(sample) = record.qname.as_deref().or(record.host.as_deref()) {
            let sample: String = sample.chars().take(SAMPLE_CHARS).collect();
            if counted.samples.len() < MAX_SAMPLES && !counted.samples.contains(&sample) {
                counted.samples.push(sample);
            }
        }
        (Verdict::Counted, ended)
    }

    /// The summaries of the windows that ended by `now`; their keys start afresh.
    pub fn expire(&mut self, now: Instant) -> Vec<Suppressed> {
        let window = self.window;
        let mut ended: Vec<Suppressed> = Vec::new();
        self.slots.retain(|_, slot| {
            if now.saturating_duration_since(slot.start) < window {
                return true;
            }
            ended.extend(slot.suppressed.take());
            false
        });
        ended.sort_by(|a, b| a.first_time.cmp(&b.first_time));
        ended
    }

    /// Every pending summary (at shutdown); the limiter starts afresh.
    pub fn finish(&mut self) -> Vec<Suppressed> {
        let mut ended: Vec<Suppressed> = self
            .slots
            .drain()
            .filter_map(|(_, slot)| slot.suppressed)
            .collect();
        ended.sort_by(|a, b| a.first_time.cmp(&b.first_time));
        ended
    }
}

/// One file of bounded size: full, it rotates to its older half, or (no older half) takes no
/// more lines.
#[derive(Debug)]
struct Bounded {
    path: PathBuf,
    old: Option<PathBuf>,
    cap: u64,
    file: File,
    size: u64,
}

impl Bounded {
    fn open(dir: &Path, name: &str, old: Option<&str>, cap: u64) -> std::io::Result<Bounded> {
        let path = dir.join(name);
        let file = append(&path)?;
        let size = file.metadata()?.len();
        Ok(Bounded {
            path,
            old: old.map(|old| dir.join(old)),
            cap,
            file,
            size,
        })
    }

    /// Writes `line` (with its newline): `Ok(false)` when it does not fit and the file does
    /// not rotate.
    fn write(&mut self, line: &[u8]) -> std::io::Result<bool> {
        let len = line.len() as u64;
        if len > self.cap {
            return Ok(false);
        }
        if self.size + len > self.cap {
            let Some(old) = &self.old else {
                return Ok(false);
            };
            std::fs::rename(&self.path, old)?;
            self.file = append(&self.path)?;
            self.size = 0;
        }
        self.file.write_all(line)?;
        self.size += len;
        Ok(true)
    }
}

fn append(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

#[derive(Debug)]
struct Files {
    dir: PathBuf,
    priority_first: Bounded,
    priority_newest: Bounded,
    all: Bounded,
    /// Whether a failed write was reported on stderr already.
    failed: bool,
}

impl Files {
    fn open(dir: &Path) -> std::io::Result<Files> {
        std::fs::create_dir_all(dir)?;
        Ok(Files {
            dir: dir.to_path_buf(),
            priority_first: Bounded::open(dir, PRIORITY_FILE, None, PRIORITY_FIRST_BYTES)?,
            priority_newest: Bounded::open(
                dir,
                PRIORITY_NEWEST_FILE,
                Some(PRIORITY_NEWEST_OLD_FILE),
                PRIORITY_RING_BYTES,
            )?,
            all: Bounded::open(dir, ALL_FILE, Some(ALL_OLD_FILE), ALL_RING_BYTES)?,
            failed: false,
        })
    }

    fn write(&mut self, line: &[u8], priority: bool) {
        let mut written = self.all.write(line).map(|_| ());
        if priority {
            let kept = match self.priority_first.write(line) {
                Ok(true) => Ok(()),
                Ok(false) => self.priority_newest.write(line).map(|_| ()),
                Err(error) => Err(error),
            };
            written = written.and(kept);
        }
        if let Err(error) = written {
            if !self.failed {
                self.failed = true;
                eprintln!(
                    "agentc egress-proxy: cannot write the audit files in {}: {error}",
                    self.dir.display()
                );
            }
        }
    }
}

#[derive(Debug)]
struct State {
    limiter: Limiter,
    files: Option<Files>,
    stdout: bool,
}

impl State {
    fn write(&mut self, mut line: String, priority: bool) {
        line.push('\n');
        if self.stdout {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(line.as_bytes());
            let _ = stdout.flush();
        }
        if let Some(files) = self.files.as_mut() {
            files.write(line.as_bytes(), priority);
        }
    }

    fn summaries(&mut self, ended: Vec<Suppressed>) {
        for suppressed in ended {
            let priority = suppressed.key.priority;
            let line = suppressed.summary(rfc3339(SystemTime::now())).to_line();
            self.write(line, priority);
        }
    }
}

/// The audit writer: the rate limit, stdout and the audit files behind one lock (lines from
/// concurrent tasks never interleave, and each is written in one write per file).
#[derive(Debug)]
pub struct Audit {
    state: Mutex<State>,
}

impl Audit {
    /// The writer of a proxy: stdout, and the files in `dir` when given (created when
    /// missing; an error when they cannot be opened: the proxy does not run without the audit
    /// it was asked for).
    pub fn open(dir: Option<&Path>) -> Result<Audit, EgressError> {
        Audit::with(dir, true, Limiter::default())
    }

    /// The writer with `limiter`, writing to stdout only when `stdout` (tests).
    pub fn with(dir: Option<&Path>, stdout: bool, limiter: Limiter) -> Result<Audit, EgressError> {
        let files = dir
            .map(|dir| {
                Files::open(dir).map_err(|source| EgressError::Audit {
                    path: dir.display().to_string(),
                    source,
                })
            })
            .transpose()?;
        Ok(Audit {
            state: Mutex::new(State {
                limiter,
                files,
                stdout,
            }),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Writes `record` unless its key is over budget (then counts it), after the summary of its
    /// key's window that ended, if any.
    pub fn emit(&self, record: &Record) {
        self.emit_at(record, Instant::now());
    }

    /// [`Audit::emit`] at `now`.
    pub fn emit_at(&self, record: &Record, now: Instant) {
        let mut state = self.state();
        let (verdict, ended) = state.limiter.admit(record, now);
        state.summaries(ended.into_iter().collect());
        if verdict == Verdict::Pass {
            state.write(record.to_line(), is_priority(record));
        }
    }

    /// Writes the summaries of the windows that ended (the proxy's timer calls it each second).
    pub fn tick(&self) {
        self.tick_at(Instant::now());
    }

    /// [`Audit::tick`] at `now`.
    pub fn tick_at(&self, now: Instant) {
        let mut state = self.state();
        let ended = state.limiter.expire(now);
        state.summaries(ended);
    }

    /// Writes every pending summary (at shutdown).
    pub fn finish(&self) {
        let mut state = self.state();
        let ended = state.limiter.finish();
        state.summaries(ended);
    }
}

/// The audit writers of this process's proxies, so that a proxy that exits from elsewhere (its
/// workload gone, [`crate::watch`]) writes their pending summaries first ([`finish_all`]).
static OPEN: Mutex<Vec<std::sync::Weak<Audit>>> = Mutex::new(Vec::new());

/// Registers `audit` for [`finish_all`].
pub fn register(audit: &std::sync::Arc<Audit>) {
    let mut open = OPEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    open.retain(|weak| weak.strong_count() > 0);
    open.push(std::sync::Arc::downgrade(audit));
}

/// Writes every pending summary of the registered writers (before the process exits).
pub fn finish_all() {
    let open = OPEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    for audit in open.iter().filter_map(std::sync::Weak::upgrade) {
        audit.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Reason;

    fn dns(name: &str) -> Record {
        let mut record = Record::new(
            Kind::Dns,
            "10.0.0.3:5353".parse().unwrap(),
            Reason::DnsQuery,
        );
        record.qname = Some(name.to_string());
        record
    }

    fn replay() -> Record {
        let mut record = Record::new(
            Kind::CredentialReplay,
            "10.0.0.3:40000".parse().unwrap(),
            Reason::CredentialReplay,
        );
        record.credential = Some("api".into());
        record
    }

    #[test]
    fn a_key_passes_its_budget_then_is_counted_into_one_summary_per_window() {
        let mut limiter = Limiter::new(Duration::from_secs(10), 3, 5);
        let t0 = Instant::now();
        let verdicts: Vec<Verdict> = (0..10)
            .map(|i| limiter.admit(&dns(&format!("q{i}.test.")), t0).0)
            .collect();
        assert_eq!(verdicts.iter().filter(|v| **v == Verdict::Pass).count(), 3);
        assert_eq!(verdicts[3..], [Verdict::Counted; 7]);
        // Nothing ends before the window does.
        assert!(limiter.expire(t0 + Duration::from_secs(9)).is_empty());
        let ended = limiter.expire(t0 + Duration::from_secs(10));
        assert_eq!(ended.len(), 1);
        let summary = &ended[0];
        assert_eq!(summary.count, 7);
        assert_eq!(
            (summary.key.kind, summary.key.decision, summary.key.reason),
            (Kind::Dns, "deny", "dns-query")
        );
        assert_eq!(summary.samples.len(), MAX_SAMPLES);
        assert_eq!(summary.samples[0], "q3.test.");
        // A new window: the budget again.
        let later = t0 + Duration::from_secs(11);
        assert_eq!(limiter.admit(&dns("x.test."), later).0, Verdict::Pass);
        assert!(limiter.finish().is_empty());
    }

    #[test]
    fn a_flood_of_one_key_leaves_other_keys_and_priority_lines_their_budget() {
        let mut limiter = Limiter::new(Duration::from_secs(10), 2, 4);
        let t0 = Instant::now();
        for i in 0..100_000 {
            limiter.admit(&dns(&format!("flood{i}.test.")), t0);
        }
        assert_eq!(limiter.admit(&replay(), t0).0, Verdict::Pass);
        let refused = Record::new(
            Kind::Forward,
            "10.0.0.3:1".parse().unwrap(),
            Reason::HostNotAllowed,
        );
        assert_eq!(limiter.admit(&refused, t0).0, Verdict::Pass);
        // A request that carries a credential is a priority line: a key of its own.
        let mut bound = Record::new(
            Kind::Request,
            "10.0.0.3:2".parse().unwrap(),
            Reason::Allowed,
        );
        let plain = Record::new(
            Kind::Request,
            "10.0.0.3:2".parse().unwrap(),
            Reason::Allowed,
        );
        bound.credential = Some("api".into());
        for _ in 0..2 {
            assert_eq!(limiter.admit(&plain, t0).0, Verdict::Pass);
        }
        assert_eq!(limiter.admit(&plain, t0).0, Verdict::Counted);
        for _ in 0..4 {
            assert_eq!(limiter.admit(&bound, t0).0, Verdict::Pass);
        }
        let summaries = limiter.finish();
        let flood = summaries
            .iter()
            .find(|s| s.key.kind == Kind::Dns)
            .expect("the flood's summary");
        assert_eq!(flood.count, 99_998);
    }

    #[test]
    fn the_next_line_after_a_window_writes_its_summary_first() {
        let mut limiter = Limiter::new(Duration::from_secs(10), 1, 1);
        let t0 = Instant::now();
        limiter.admit(&dns("a.test."), t0);
        limiter.admit(&dns("b.test."), t0 + Duration::from_secs(1));
        let (verdict, ended) = limiter.admit(&dns("c.test."), t0 + Duration::from_secs(10));
        assert_eq!(verdict, Verdict::Pass);
        let ended = ended.expect("the ended window's summary");
        assert_eq!(
            (ended.count, ended.samples.as_slice()),
            (1, &["b.test.".to_string()][..])
        );
    }

    #[test]
    fn samples_are_cut_and_never_more_than_the_bound() {
        let mut limiter = Limiter::new(Duration::from_secs(10), 0, 0);
        let t0 = Instant::now();
        let long = "é".repeat(300);
        limiter.admit(&dns(&long), t0);
        limiter.admit(&dns(&long), t0);
        let ended = limiter.finish();
        assert_eq!(ended[0].count, 2);
        assert_eq!(ended[0].samples, vec!["é".repeat(SAMPLE_CHARS)]);
    }

    #[test]
    fn a_registered_writer_writes_its_pending_summaries_before_an_exit() {
        let dir = tempfile::tempdir().unwrap();
        let audit = std::sync::Arc::new(
            Audit::with(Some(dir.path()), false, Limiter::new(WINDOW, 1, 1)).unwrap(),
        );
        register(&audit);
        let now = Instant::now();
        audit.emit_at(&dns("a.test."), now);
        audit.emit_at(&dns("b.test."), now);
        assert_eq!(lines(dir.path(), ALL_FILE).len(), 1);
        finish_all();
        let all = lines(dir.path(), ALL_FILE);
        assert_eq!(all.len(), 2);
        assert!(all[1].contains("\"event\":\"summary\"") && all[1].contains("\"count\":1"));
    }

    fn lines(dir: &Path, name: &str) -> Vec<String> {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }

    #[test]
    fn the_files_keep_the_first_priority_lines_within_the_disk_bound() {
        let dir = tempfile::tempdir().unwrap();
        let audit = Audit::with(
            Some(dir.path()),
            false,
            Limiter::new(WINDOW, BUDGET, u32::MAX),
        )
        .unwrap();
        let t0 = Instant::now();
        audit.emit_at(&replay(), t0);
        let first = lines(dir.path(), PRIORITY_FILE);
        assert_eq!(first.len(), 1);
        assert!(first[0].contains("\"kind\":\"credential-replay\""));
        // A flood of DNS lines over many windows, and of priority lines past the first file.
        let mut now = t0;
        for i in 0..200_000u64 {
            if i % 10_000 == 0 {
                now += WINDOW;
                audit.tick_at(now);
            }
            audit.emit_at(&dns(&format!("{i}.{}.test.", "x".repeat(40))), now);
        }
        now += WINDOW;
        audit.tick_at(now);
        let summaries: u64 = lines(dir.path(), ALL_FILE)
            .iter()
            .chain(lines(dir.path(), ALL_OLD_FILE).iter())
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|value| value["event"] == "summary" && value["kind"] == "dns")
            .map(|value| value["count"].as_u64().unwrap())
            .sum();
        // Every window's summary is there: 20 lines of 10,000 in full, the rest counted.
        assert_eq!(summaries, 200_000 - 20 * 20);
        let mut bound = replay();
        bound.kind = Kind::Request;
        bound.detail = Some("y".repeat(400));
        for _ in 0..40_000 {
            audit.emit_at(&bound, now);
        }
        audit.finish();
        // The first replay line is still the first line kept.
        assert_eq!(lines(dir.path(), PRIORITY_FILE)[0], first[0]);
        let mut total = 0;
        for name in FILES {
            let size = std::fs::metadata(dir.path().join(name)).map_or(0, |m| m.len());
            total += size;
        }
        assert!(std::fs::metadata(dir.path().join(PRIORITY_NEWEST_OLD_FILE)).is_ok());
        assert!(total <= DISK_BOUND, "{total}");
        assert!(
            std::fs::metadata(dir.path().join(PRIORITY_FILE))
                .unwrap()
                .len()
                <= PRIORITY_FIRST_BYTES
        );
        // A proxy started again appends: the first line stays first.
        let again = Audit::with(Some(dir.path()), false, Limiter::default()).unwrap();
        again.emit_at(&replay(), now);
        assert_eq!(lines(dir.path(), PRIORITY_FILE)[0], first[0]);
    }

    #[test]
    fn an_audit_directory_that_cannot_be_made_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let error = Audit::open(Some(&file.join("audit"))).unwrap_err();
        assert!(error.to_string().contains("audit"), "{error}");
    }
}
