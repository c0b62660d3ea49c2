//! `agentc egress log`'s lines, through either backend: the proxy's container log (which the
//! engine rotates) merged with the proxy's own audit files ([`agentc_egress::audit`], read
//! through the archive endpoint, which reads a stopped container's volume too), so that a
//! decision written before a flood is still shown after one.
//!
//! The merge is pure ([`merge`]): each line once (a line is written identically to both), each
//! source in the order the proxy wrote it, the sources merged by `time`, then `id`.

use std::collections::HashSet;

use agentc_egress::audit::{AUDIT_DIR, DISK_BOUND, FILES};
use agentc_policy::Hinted;
use serde::Deserialize;
use tokio::sync::mpsc::channel;

use super::{
    Captured, LogsRequest, OutputSink, Sandbox, SandboxClient, Sandboxes, SessionError,
    SessionPort, Stream,
};

/// What [`Sandboxes::egress_history`] read: the merged lines, and the container's stderr (the
/// proxy's start line and errors).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressHistory {
    /// The decision lines, merged, without their newlines.
    pub lines: Vec<String>,
    /// The container log's stderr, as it is.
    pub stderr: Vec<u8>,
}

impl EgressHistory {
    /// The Unix second of the last line, from which a followed log goes on (`None` without a
    /// line that says its time).
    pub fn since(&self) -> Option<i64> {
        let last = self.lines.last()?;
        let stamp: Stamp = serde_json::from_str(last).ok()?;
        unix_seconds(&stamp.time?)
    }
}

/// The Unix seconds of an RFC 3339 UTC time of the proxy's lines (`2026-11-30T04:03:11.101Z`).
fn unix_seconds(time: &str) -> Option<i64> {
    let number = |range: std::ops::Range<usize>| time.get(range)?.parse::<i64>().ok();
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    // Howard Hinnant's days_from_civil.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second)
}

#[derive(Deserialize)]
struct Stamp {
    time: Option<String>,
    id: Option<u64>,
}

/// The lines of the container log `container` and of the audit files `audit` (one list of
/// lines per file), each once, the last `tail` when given. Each source keeps its own order
/// (the order the proxy wrote it in); the sources are merged by `time`, then `id`, a tie going
/// to the container log, then to the earlier file. A line of neither form goes with the line
/// before it.
pub fn merge(container: &[u8], audit: &[Vec<String>], tail: Option<u64>) -> Vec<String> {
    let text = String::from_utf8_lossy(container);
    let mut seen: HashSet<&str> = HashSet::new();
    let mut runs: Vec<Vec<((String, u64), &str)>> = Vec::new();
    let sources = std::iter::once(text.lines().collect::<Vec<_>>()).chain(
        audit
            .iter()
            .map(|file| file.iter().map(String::as_str).collect()),
    );
    for source in sources {
        let mut run = Vec::new();
        let mut last = (String::new(), 0u64);
        for line in source {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || !seen.insert(line) {
                continue;
            }
            if let Ok(Stamp {
                time: Some(time),
                id,
            }) = serde_json::from_str::<Stamp>(line)
            {
                last = (time, id.unwrap_or(last.1));
            }
            run.push((last.clone(), line));
        }
        runs.push(run);
    }
    let mut heads = vec![0usize; runs.len()];
    let mut merged: Vec<String> = Vec::new();
    loop {
        let next = (0..runs.len())
            .filter(|&run| heads[run] < runs[run].len())
            .min_by(|&a, &b| {
                let (x, y) = (&runs[a][heads[a]].0, &runs[b][heads[b]].0);
                (&x.0, x.1, a).cmp(&(&y.0, y.1, b))
            });
        let Some(run) = next else {
            break;
        };
        merged.push(runs[run][heads[run]].1.to_string());
        heads[run] += 1;
    }
    let skip = tail.map_or(0, |tail| {
        merged
            .len()
            .saturating_sub(usize::try_from(tail).unwrap_or(usize::MAX))
    });
    merged.split_off(skip)
}

/// The lines of the audit files in the tar stream `tar` (the archive of [`AUDIT_DIR`]), a list
/// per file, in [`FILES`] order; other entries are ignored.
pub fn audit_lines(tar: &[u8]) -> Result<Vec<Vec<String>>, std::io::Error> {
    use std::io::Read;
    let mut files: Vec<(usize, String)> = Vec::new();
    let mut archive = tar::Archive::new(tar);
    for entry in archive.entries()? {
        let mut entry = entry?;
        if entry.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let name = entry
            .path()?
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(order) = FILES.iter().position(|file| *file == name) else {
            continue;
        };
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes)?;
        files.push((order, String::from_utf8_lossy(&bytes).into_owned()));
    }
    files.sort_by_key(|(order, _)| *order);
    Ok(files
        .iter()
        .map(|(_, text)| text.lines().map(String::from).collect())
        .collect())
}

/// An [`OutputSink`] that passes on only the stdout lines not in `seen` (what a followed log
/// repeats of the history printed before it); stderr passes through.
pub struct Unseen<'a> {
    seen: HashSet<String>,
    inner: &'a mut dyn OutputSink,
    partial: Vec<u8>,
}

impl<'a> Unseen<'a> {
    /// The lines of `history` are seen already.
    pub fn new(history: &[String], inner: &'a mut dyn OutputSink) -> Unseen<'a> {
        Unseen {
            seen: history.iter().cloned().collect(),
            inner,
            partial: Vec::new(),
        }
    }
}

impl OutputSink for Unseen<'_> {
    fn write(&mut self, stream: Stream, bytes: &[u8]) -> std::io::Result<()> {
        if stream == Stream::Stderr {
            return self.inner.write(stream, bytes);
        }
        self.partial.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = self.partial.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..end]);
            let text = text.trim_end_matches('\r');
            if !self.seen.remove(text) {
                out.extend_from_slice(&line);
            }
        }
        if out.is_empty() {
            return Ok(());
        }
        self.inner.write(stream, &out)
    }
}

impl<P: SessionPort> Sandboxes<P> {
    /// The egress proxy `proxy`'s decision lines, running or stopped: its container log merged
    /// with its audit files ([`merge`]), the last `tail` when given. A proxy without audit files
    /// (an older one) gives its container log alone.
    pub async fn egress_history(
        &self,
        proxy: &Sandbox,
        tail: Option<u64>,
    ) -> Result<EgressHistory, SessionError> {
        let mut captured = Captured::default();
        let request = LogsRequest {
            follow: false,
            tail,
            since: None,
        };
        self.logs(proxy, &request, &mut captured).await?;
        let audit = match self.audit_archive(proxy).await {
            Ok(tar) => audit_lines(&tar).unwrap_or_else(|error| {
                log::debug!("the audit files of {} do not read: {error}", proxy.name);
                Vec::new()
            }),
            Err(error) => {
                log::debug!("no audit files from {}: {}", proxy.name, error.with_hint());
                Vec::new()
            }
        };
        Ok(EgressHistory {
            lines: merge(&captured.stdout, &audit, tail),
            stderr: captured.stderr,
        })
    }

    /// The tar stream of the proxy's audit directory, through the archive endpoint; at most
    /// the directory's bound and a margin for the tar headers.
    async fn audit_archive(&self, proxy: &Sandbox) -> Result<Vec<u8>, SessionError> {
        let (sender, mut receiver) = channel::<Vec<u8>>(16);
        let limit = usize::try_from(DISK_BOUND).unwrap_or(usize::MAX) + (1 << 20);
        let collect = async {
            let mut tar = Vec::new();
            while let Some(chunk) = receiver.recv().await {
                if tar.len() + chunk.len() <= limit {
                    tar.extend_from_slice(&chunk);
                }
            }
            tar
        };
        let (streamed, tar) =
            tokio::join!(self.port().archive_get(proxy, AUDIT_DIR, sender), collect);
        streamed.map(|()| tar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_both_sources_are_merged_once_in_time_and_id_order() {
        let replay = r#"{"time":"2026-12-04T04:00:00.000Z","id":2,"event":"decision","kind":"credential-replay"}"#;
        let early = r#"{"time":"2026-12-04T04:00:00.000Z","id":1,"event":"decision","kind":"dns"}"#;
        let summary = r#"{"time":"2026-12-04T04:00:10.000Z","id":90,"event":"summary","kind":"dns","count":1000000}"#;
        let late =
            r#"{"time":"2026-12-04T04:00:11.000Z","id":91,"event":"decision","kind":"forward"}"#;
        let strings = |lines: &[&str]| lines.iter().map(|l| l.to_string()).collect::<Vec<_>>();
        // The container log lost the replay to rotation; the audit files kept it.
        let container = format!("{summary}\n{late}\n");
        let audit = vec![strings(&[replay]), strings(&[early, replay, summary])];
        assert_eq!(
            merge(container.as_bytes(), &audit, None),
            [early, replay, summary, late]
        );
        assert_eq!(
            merge(container.as_bytes(), &audit, Some(2)),
            [summary, late]
        );
        // A line that is no JSON keeps its place after the line before it.
        let container = format!("{late}\nnot json\n");
        assert_eq!(
            merge(container.as_bytes(), &[strings(&[early])], None),
            [early, late, "not json"]
        );
        // The container log's own order is kept (a close line stamped before a later
        // decision it was written after).
        let close = r#"{"time":"2026-12-04T04:00:11.000Z","id":50,"event":"close"}"#;
        let container = format!("{late}\n{close}\n");
        assert_eq!(
            merge(container.as_bytes(), &[strings(&[late, close])], None),
            [late, close]
        );
    }

    #[test]
    fn the_audit_files_are_read_in_their_order_from_the_archive() {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, text) in [
            ("egress-audit/all.jsonl", "c\n"),
            ("egress-audit/priority.jsonl", "a\n"),
            ("egress-audit/other.txt", "x\n"),
            ("egress-audit/all.1.jsonl", "b\n"),
        ] {
            let mut header = tar::Header::new_gnu();
            header.set_size(text.len() as u64);
            header.set_mode(0o600);
            header.set_cksum();
            builder
                .append_data(&mut header, name, text.as_bytes())
                .unwrap();
        }
        let tar = builder.into_inner().unwrap();
        assert_eq!(
            audit_lines(&tar).unwrap(),
            [
                vec!["a".to_string()],
                vec!["b".to_string()],
                vec!["c".to_string()]
            ]
        );
    }

    #[test]
    fn a_line_time_is_its_unix_second() {
        assert_eq!(unix_seconds("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(
            unix_seconds("2026-11-28T21:23:11.123Z"),
            Some(1_795_900_991)
        );
        assert_eq!(unix_seconds("2000-02-29T00:00:00.000Z"), Some(951_782_400));
        assert_eq!(unix_seconds("yesterday"), None);
    }

    #[test]
    fn a_followed_log_skips_the_lines_printed_before() {
        let mut captured = Captured::default();
        {
            let mut unseen = Unseen::new(&["one".to_string()], &mut captured);
            unseen.write(Stream::Stdout, b"on").unwrap();
            unseen.write(Stream::Stdout, b"e\ntwo\n").unwrap();
            unseen.write(Stream::Stderr, b"start\n").unwrap();
            unseen.write(Stream::Stdout, b"one\n").unwrap();
        }
        assert_eq!(captured.stdout, b"two\none\n");
        assert_eq!(captured.stderr, b"start\n");
    }
}
