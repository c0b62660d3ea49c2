//! The bound on wildcard look-ups: a name allowed only through a `*.domain` entry is resolved
//! through the host's resolver, so every distinct `<data>.domain` carries its labels to that
//! zone's name servers. [`WildcardLimiter`] lets at most
//! [`Limits::wildcard_names_per_minute`](crate::Limits::wildcard_names_per_minute) distinct
//! names per wildcard domain through in any 60 seconds (a sliding window); a name already
//! admitted in the window is not counted again; a name an exact entry allows is never counted.
//!
//! Memory is bounded by construction: the limiter keeps one set per wildcard domain of the
//! allowlist (fixed at start), and a set holds only admitted names, at most the limit each
//! (refused names are not kept), each at most 253 bytes.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::host::{HostPattern, HostSpec};
use crate::policy::{Deny, Reason};

/// The window the limit counts distinct names in.
pub const WINDOW: Duration = Duration::from_secs(60);

/// The default number of distinct names per wildcard domain per minute.
pub const DEFAULT_NAMES_PER_MINUTE: u32 = 10;

/// The largest limit accepted (the smallest is 1).
pub const MAX_NAMES_PER_MINUTE: u32 = 1000;

/// What the limiter decided for an allowed name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// An exact entry allows the name (or no wildcard entry does): not counted.
    Exact,
    /// A wildcard entry allows it and it may be resolved.
    Wildcard {
        /// The entry's spelling (`*.domain`).
        entry: String,
        /// Whether this name was counted now (false: already admitted in the window).
        new: bool,
        /// Distinct names admitted for the entry in the window, this one included.
        names: usize,
        /// The limit.
        limit: u32,
    },
}

impl Admission {
    /// What the request's decision line says of a wildcard resolution (the entry, and how many
    /// distinct names it resolved this minute), or `None` for a name an exact entry allows.
    pub fn detail(&self) -> Option<String> {
        let Admission::Wildcard {
            entry,
            new,
            names,
            limit,
        } = self
        else {
            return None;
        };
        Some(format!(
            "resolved through {entry}: {} {names} of {limit} distinct names this minute",
            if *new { "name" } else { "a repeat of name" },
        ))
    }
}

/// The per-domain windows of admitted names; see the module documentation.
#[derive(Debug)]
pub struct WildcardLimiter {
    /// Exact entries (a name one allows on its port is not counted).
    exact: Vec<HostSpec>,
    /// Each wildcard domain, in allowlist order, with its entry's spelling.
    domains: Vec<(String, String)>,
    limit: u32,
    /// Per domain: each admitted name and when it was admitted.
    windows: Mutex<HashMap<String, Vec<(String, Instant)>>>,
}

impl WildcardLimiter {
    /// A limiter for the allowlist `allow` admitting `limit` distinct names per wildcard
    /// domain per [`WINDOW`].
    pub fn new(allow: &[HostSpec], limit: u32) -> WildcardLimiter {
        let mut domains: Vec<(String, String)> = Vec::new();
        let mut exact = Vec::new();
        for spec in allow {
            match &spec.pattern {
                HostPattern::Exact(_) | HostPattern::Addresses(_) => exact.push(spec.clone()),
                HostPattern::Subdomains(domain) => {
                    if !domains.iter().any(|(d, _)| d == domain) {
                        domains.push((domain.clone(), format!("*.{domain}")));
                    }
                }
            }
        }
        WildcardLimiter {
            exact,
            domains,
            limit,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Decides whether the allowed, normalized `host` on `port` may be resolved at `now`:
    /// `Err` (reason `wildcard-rate`) when it is allowed only through a wildcard whose domain
    /// has admitted [`WildcardLimiter::new`]'s limit of other names in the last [`WINDOW`].
    /// The most specific (longest) matching wildcard domain counts the name.
    pub fn admit(&self, host: &str, port: u16, now: Instant) -> Result<Admission, Deny> {
        if self.exact.iter().any(|spec| spec.matches(host, port)) {
            return Ok(Admission::Exact);
        }
        let Some((domain, entry)) = self
            .domains
            .iter()
            .filter(|(domain, _)| {
                host.strip_suffix(domain.as_str())
                    .is_some_and(|prefix| prefix.len() > 1 && prefix.ends_with('.'))
            })
            .max_by_key(|(domain, _)| domain.len())
        else {
            return Ok(Admission::Exact);
        };
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        let names = windows.entry(domain.clone()).or_default();
        names.retain(|(_, at)| now.saturating_duration_since(*at) < WINDOW);
        let limit = self.limit;
        if names.iter().any(|(name, _)| name == host) {
            return Ok(Admission::Wildcard {
                entry: entry.clone(),
                new: false,
                names: names.len(),
                limit,
            });
        }
        if names.len() >= limit as usize {
            let oldest = names.iter().map(|(_, at)| *at).min().unwrap_or(now);
            let wait = WINDOW.saturating_sub(now.saturating_duration_since(oldest));
            return Err(Deny::new(
                Reason::WildcardRate,
                format!(
                    "{host}: {entry} already had its {limit} distinct names resolved in the \
                     last minute (each is a DNS query to that zone's name servers); another \
                     is admitted in {} s",
                    wait.as_secs().max(1)
                ),
            ));
        }
        names.push((host.to_string(), now));
        Ok(Admission::Wildcard {
            entry: entry.clone(),
            new: true,
            names: names.len(),
            limit,
        })
    }

    /// The names held, over all domains (what bounds the limiter's memory).
    pub fn held(&self) -> usize {
        let windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        windows.values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(limit: u32) -> WildcardLimiter {
        let allow = [
            "exact.wild.test",
            "*.wild.test",
            "*.deep.wild.test",
            "*.other.test:8443",
        ]
        .map(|spec| HostSpec::parse(spec).unwrap());
        WildcardLimiter::new(&allow, limit)
    }

    fn name(i: usize) -> String {
        format!("n{i}.wild.test")
    }

    #[test]
    fn the_eleventh_distinct_name_in_a_minute_is_refused() {
        let limiter = limiter(DEFAULT_NAMES_PER_MINUTE);
        let t0 = Instant::now();
        for i in 0..10 {
            let admitted = limiter.admit(&name(i), 443, t0).unwrap();
            assert!(
                matches!(admitted, Admission::Wildcard { new: true, names, .. } if names == i + 1),
                "{admitted:?}"
            );
        }
        let refused = limiter.admit(&name(10), 443, t0).unwrap_err();
        assert_eq!(refused.reason, Reason::WildcardRate);
        assert!(refused.detail.contains("*.wild.test"), "{refused}");
        // Still refused 59 s later; the other domain has its own budget.
        let later = t0 + Duration::from_secs(59);
        assert!(limiter.admit(&name(11), 80, later).is_err());
        assert!(limiter.admit("a.other.test", 8443, later).is_ok());
    }

    #[test]
    fn repeats_are_not_counted_again() {
        let limiter = limiter(3);
        let t0 = Instant::now();
        for _ in 0..20 {
            for i in 0..3 {
                let admitted = limiter.admit(&name(i), 443, t0).unwrap();
                assert!(matches!(admitted, Admission::Wildcard { names: _, .. }));
            }
        }
        let repeat = limiter.admit(&name(1), 80, t0).unwrap();
        assert!(
            matches!(
                repeat,
                Admission::Wildcard {
                    new: false,
                    names: 3,
                    ..
                }
            ),
            "{repeat:?}"
        );
        assert!(limiter.admit(&name(3), 443, t0).is_err());
    }

    #[test]
    fn a_new_window_admits_again() {
        let limiter = limiter(2);
        let t0 = Instant::now();
        limiter.admit(&name(0), 443, t0).unwrap();
        limiter
            .admit(&name(1), 443, t0 + Duration::from_secs(30))
            .unwrap();
        assert!(limiter
            .admit(&name(2), 443, t0 + Duration::from_secs(59))
            .is_err());
        // The first name left the window at 60 s: one slot, then full again.
        let t60 = t0 + Duration::from_secs(60);
        limiter.admit(&name(2), 443, t60).unwrap();
        assert!(limiter.admit(&name(3), 443, t60).is_err());
        // At 90 s the second left too.
        limiter
            .admit(&name(3), 443, t0 + Duration::from_secs(90))
            .unwrap();
    }

    #[test]
    fn exact_names_are_never_counted() {
        let limiter = limiter(1);
        let t0 = Instant::now();
        limiter.admit(&name(0), 443, t0).unwrap();
        for _ in 0..50 {
            assert_eq!(
                limiter.admit("exact.wild.test", 443, t0).unwrap(),
                Admission::Exact
            );
        }
        assert!(limiter.admit(&name(1), 443, t0).is_err());
        assert_eq!(limiter.held(), 1);
        assert!(Admission::Exact.detail().is_none());
    }

    #[test]
    fn the_most_specific_domain_counts_and_memory_stays_bounded() {
        let limiter = limiter(5);
        let t0 = Instant::now();
        for i in 0..5 {
            limiter
                .admit(&format!("n{i}.deep.wild.test"), 443, t0)
                .unwrap();
        }
        assert!(limiter.admit("x.deep.wild.test", 443, t0).is_err());
        // The parent wildcard still has its own five.
        limiter.admit(&name(0), 443, t0).unwrap();
        // Ten thousand distinct names over ten minutes: never more than the limit per domain.
        for i in 0..10_000u64 {
            let now = t0 + Duration::from_millis(i * 60);
            let _ = limiter.admit(&format!("{i}.wild.test"), 443, now);
            let _ = limiter.admit(&format!("{i}.deep.wild.test"), 443, now);
            let _ = limiter.admit(&format!("{i}.other.test"), 8443, now);
            assert!(limiter.held() <= 15, "{}", limiter.held());
        }
    }

    #[test]
    fn an_admission_says_its_entry_and_count() {
        let limiter = limiter(10);
        let now = Instant::now();
        let admitted = limiter.admit(&name(0), 443, now).unwrap();
        assert_eq!(
            admitted.detail().unwrap(),
            "resolved through *.wild.test: name 1 of 10 distinct names this minute"
        );
        let again = limiter.admit(&name(0), 443, now).unwrap();
        assert!(again.detail().unwrap().contains("a repeat of name 1 of 10"));
    }
}
