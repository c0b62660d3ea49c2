//! The proxy's watch on its workload, so that a proxy whose launch was killed (SIGKILL of
//! agentc at any step) ends by itself instead of running on with nobody behind it.
//!
//! The proxy is told its workload's container name (`--workload=NAME`). It asks the engine's
//! embedded DNS server (the proxy's own resolver, 127.0.0.11 on Docker) for that name every
//! [`Watch::interval`]: the engine answers for a container on the proxy's networks while it
//! runs, and for no other. The watch ends (and the proxy with it) when the workload never
//! answered within [`Watch::appear_within`] of the start (its launch died before creating it),
//! or, with [`WatchMode::Life`] (an attached run, removed when it ends), when it answered once
//! and then stopped answering for [`Watch::gone_after`] in a row. A detached sandbox's proxy
//! ([`WatchMode::Appear`]) stays once its workload appeared: `agentc stop` stops the workload
//! alone and `agentc start` needs its proxy.
//!
//! Ending is the fail-closed side: a workload without its proxy has no way out at all. The
//! decision is [`Watcher::observe`], pure; [`watch`] runs it over [`lookup`].

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

/// Which end of the workload ends the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchMode {
    /// Only a workload that never appeared (a detached sandbox).
    Appear,
    /// A workload that never appeared, or that appeared and is gone (an attached run).
    Life,
}

impl WatchMode {
    /// Reads `appear` or `life` (`--workload-watch`).
    pub fn parse(text: &str) -> Option<WatchMode> {
        match text {
            "appear" => Some(WatchMode::Appear),
            "life" => Some(WatchMode::Life),
            _ => None,
        }
    }

    /// Its spelling on the proxy's command line.
    pub fn as_str(self) -> &'static str {
        match self {
            WatchMode::Appear => "appear",
            WatchMode::Life => "life",
        }
    }
}

/// What the proxy watches and how patiently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watch {
    /// The workload's container name, as the engine's DNS server knows it.
    pub workload: String,
    /// Which end of the workload ends the proxy.
    pub mode: WatchMode,
    /// How long the workload has to appear after the proxy started: the launch creates it
    /// right after the proxy's health check passes.
    pub appear_within: Duration,
    /// How long a workload that appeared may go unanswered before it counts as gone.
    pub gone_after: Duration,
    /// The time between two look-ups.
    pub interval: Duration,
}

impl Watch {
    /// The defaults: 60 s to appear, gone after 10 s unanswered, a look-up every second.
    pub fn new(workload: &str, mode: WatchMode) -> Watch {
        Watch {
            workload: workload.to_string(),
            mode,
            appear_within: Duration::from_secs(60),
            gone_after: Duration::from_secs(10),
            interval: Duration::from_secs(1),
        }
    }
}

/// Why the watch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The workload never appeared.
    NeverAppeared {
        /// Its name.
        workload: String,
        /// How long the proxy waited.
        waited: Duration,
    },
    /// The workload appeared, then went.
    Gone {
        /// Its name.
        workload: String,
    },
}

impl std::fmt::Display for Ended {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::NeverAppeared { workload, waited } => write!(
                formatter,
                "the workload {workload} did not appear within {}s; its launch is gone",
                waited.as_secs()
            ),
            Ended::Gone { workload } => write!(formatter, "the workload {workload} is gone"),
        }
    }
}

/// The watch's state between look-ups.
#[derive(Debug, Clone)]
pub struct Watcher {
    watch: Watch,
    started: Instant,
    /// When the workload last answered, once it has.
    last_seen: Option<Instant>,
}

impl Watcher {
    /// A watch starting at `now`.
    pub fn new(watch: Watch, now: Instant) -> Watcher {
        Watcher {
            watch,
            started: now,
            last_seen: None,
        }
    }

    /// Records a look-up made at `now` (`present`: the workload answered) and says whether the
    /// watch ends.
    pub fn observe(&mut self, present: bool, now: Instant) -> Option<Ended> {
        if present {
            self.last_seen = Some(now);
            return None;
        }
        match self.last_seen {
            None if now.duration_since(self.started) >= self.watch.appear_within => {
                Some(Ended::NeverAppeared {
                    workload: self.watch.workload.clone(),
                    waited: self.watch.appear_within,
                })
            }
            Some(seen)
                if self.watch.mode == WatchMode::Life
                    && now.duration_since(seen) >= self.watch.gone_after =>
            {
                Some(Ended::Gone {
                    workload: self.watch.workload.clone(),
                })
            }
            _ => None,
        }
    }
}

/// Whether the DNS server `server` has an address for `name`: an answer with at least one
/// record. NXDOMAIN, an error, no answer within `timeout` are all "no".
pub fn lookup(server: SocketAddr, name: &str, timeout: Duration) -> bool {
    let bind: SocketAddr = if server.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        ([0u16; 8], 0).into()
    };
    let Ok(socket) = UdpSocket::bind(bind) else {
        return false;
    };
    let id = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0x5a5a, |since| since.subsec_nanos() as u16);
    if socket.set_read_timeout(Some(timeout)).is_err()
        || socket
            .send_to(&crate::dns::query(id, name, 1), server)
            .is_err()
    {
        return false;
    }
    let mut buffer = [0u8; crate::dns::MAX_MESSAGE];
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let Ok((length, from)) = socket.recv_from(&mut buffer) else {
            return false;
        };
        if from == server && length >= 12 && buffer[..2] == id.to_be_bytes() {
            return answered(&buffer[..length]);
        }
    }
    false
}

/// Whether a DNS response says NOERROR with at least one answer record.
fn answered(response: &[u8]) -> bool {
    let rcode = response[3] & 0x0f;
    let answers = u16::from_be_bytes([response[6], response[7]]);
    response[2] & 0x80 != 0 && rcode == 0 && answers > 0
}

/// The first `nameserver` of a `resolv.conf`, on port 53.
pub fn nameserver(resolv_conf: &str) -> Option<SocketAddr> {
    resolv_conf.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("nameserver"))
            .then(|| words.next())
            .flatten()
            .and_then(|address| address.parse::<std::net::IpAddr>().ok())
            .map(|ip| SocketAddr::new(ip, 53))
    })
}

/// Watches `watch.workload` through the DNS server `server` until the watch ends, and says
/// why.
pub fn watch(watch: Watch, server: SocketAddr) -> Ended {
    let interval = watch.interval;
    let name = watch.workload.clone();
    let mut watcher = Watcher::new(watch, Instant::now());
    loop {
        let present = lookup(server, &name, Duration::from_secs(2));
        if let Some(ended) = watcher.observe(present, Instant::now()) {
            return ended;
        }
        std::thread::sleep(interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(mode: WatchMode) -> Watch {
        Watch::new("box", mode)
    }

    #[test]
    fn a_workload_that_never_appears_ends_the_watch_after_the_grace_only() {
        for mode in [WatchMode::Appear, WatchMode::Life] {
            let start = Instant::now();
            let mut watcher = Watcher::new(watch(mode), start);
            assert_eq!(
                watcher.observe(false, start + Duration::from_secs(59)),
                None
            );
            let ended = watcher.observe(false, start + Duration::from_secs(60));
            assert!(
                matches!(&ended, Some(Ended::NeverAppeared { workload, .. }) if workload == "box"),
                "{ended:?}"
            );
        }
    }

    #[test]
    fn a_workload_gone_after_it_appeared_ends_a_life_watch_only() {
        let start = Instant::now();
        let at = |secs| start + Duration::from_secs(secs);
        let mut life = Watcher::new(watch(WatchMode::Life), start);
        let mut appear = Watcher::new(watch(WatchMode::Appear), start);
        for watcher in [&mut life, &mut appear] {
            assert_eq!(watcher.observe(true, at(5)), None);
            // A short gap (a DNS hiccup) is not an end.
            assert_eq!(watcher.observe(false, at(14)), None);
        }
        assert_eq!(
            life.observe(false, at(15)),
            Some(Ended::Gone {
                workload: "box".into()
            })
        );
        // A detached sandbox's proxy outlives a stopped workload, also past the grace.
        assert_eq!(appear.observe(false, at(500)), None);
    }

    #[test]
    fn an_answer_resets_the_gap() {
        let start = Instant::now();
        let at = |secs| start + Duration::from_secs(secs);
        let mut life = Watcher::new(watch(WatchMode::Life), start);
        assert_eq!(life.observe(true, at(1)), None);
        assert_eq!(life.observe(false, at(10)), None);
        assert_eq!(life.observe(true, at(11)), None);
        assert_eq!(life.observe(false, at(20)), None);
    }

    #[test]
    fn the_nameserver_is_read_from_resolv_conf() {
        let conf = "search example\nnameserver 127.0.0.11\nnameserver 10.0.0.1\noptions ndots:0\n";
        assert_eq!(nameserver(conf), Some("127.0.0.11:53".parse().unwrap()));
        assert_eq!(nameserver("options ndots:0\n"), None);
    }

    #[test]
    fn only_a_noerror_answer_with_records_is_presence() {
        let mut response = crate::dns::query(7, "box", 1);
        response[2] |= 0x80;
        assert!(!answered(&response), "no records");
        response[7] = 1;
        assert!(answered(&response));
        response[3] |= 3;
        assert!(!answered(&response), "NXDOMAIN");
    }

    #[test]
    fn watch_modes_read_as_written() {
        for mode in [WatchMode::Appear, WatchMode::Life] {
            assert_eq!(WatchMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(WatchMode::parse("forever"), None);
    }
}
