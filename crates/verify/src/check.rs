//! One check of verify: what was asked for, what was seen, and whether they agree.

/// One comparison of the spec with what was observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked (`root filesystem`, `mount /workspace/app`).
    pub what: String,
    /// What the spec asks for.
    pub expected: String,
    /// What the kernel or the daemon reported.
    pub seen: String,
    /// They agree (a skipped check counts as agreeing: it fails nothing).
    pub ok: bool,
    /// Not tried (shown as `skip`, never as a pass).
    pub skipped: bool,
    /// Tried, the policy held, but the fact could not be confirmed (shown as `warn`; `ok`
    /// stays true: it fails nothing). `egress.allowed` when the destination did not answer.
    pub warned: bool,
    /// What to do about a failure, shown under the table.
    pub hint: Option<String>,
    /// The fact this check is about, where another part of verify adjusts it (gVisor's
    /// answers, in `verify::gvisor`); `None` for the rest.
    pub fact: Option<Fact>,
}

impl Check {
    /// `ok`, `warn`, `fail` or `skip`, as the table and `--format json` report it.
    pub fn status(&self) -> &'static str {
        if self.skipped {
            "skip"
        } else if self.warned {
            "warn"
        } else if self.ok {
            "ok"
        } else {
            "fail"
        }
    }

    /// The hint shown for it: a failed or warned check's, none for one that passed.
    pub fn shown_hint(&self) -> Option<&str> {
        if self.ok && !self.warned {
            None
        } else {
            self.hint.as_deref()
        }
    }
}

/// The checks that another part of verify finds again by what they are about, not by their
/// label: each one's label is written only here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fact {
    /// The capability bounding set of PID 1.
    CapabilityBounding,
    /// `NoNewPrivs` of PID 1.
    NoNewPrivileges,
    /// The seccomp mode of PID 1.
    Seccomp,
    /// The cgroup memory limit.
    MemoryLimit,
    /// The cgroup memory+swap limit.
    MemorySwapLimit,
    /// The cgroup pids limit.
    PidsLimit,
    /// The cgroup CPU quota.
    CpuQuota,
    /// The size of `/dev/shm`.
    ShmSize,
}

impl Fact {
    /// The label the table shows.
    pub fn label(self) -> &'static str {
        match self {
            Fact::CapabilityBounding => "capability bounding set",
            Fact::NoNewPrivileges => "no new privileges",
            Fact::Seccomp => "seccomp",
            Fact::MemoryLimit => "memory limit (bytes)",
            Fact::MemorySwapLimit => "memory+swap limit (bytes)",
            Fact::PidsLimit => "pids limit",
            Fact::CpuQuota => "cpu quota (nano cpus)",
            Fact::ShmSize => "/dev/shm size (bytes)",
        }
    }
}

/// A [`Check`] of `fact`, labelled as [`Fact::label`] says.
pub(super) fn fact_check(
    fact: Fact,
    expected: impl Into<String>,
    seen: impl Into<String>,
    ok: bool,
) -> Check {
    Check {
        fact: Some(fact),
        ..check(fact.label(), expected, seen, ok)
    }
}

/// A [`Check`] from its parts.
pub(super) fn check(
    what: impl Into<String>,
    expected: impl Into<String>,
    seen: impl Into<String>,
    ok: bool,
) -> Check {
    Check {
        what: what.into(),
        expected: expected.into(),
        seen: seen.into(),
        ok,
        skipped: false,
        warned: false,
        hint: None,
        fact: None,
    }
}

/// What a check says it saw when the probe could not observe the fact.
pub(super) const NOT_OBSERVED: &str = "not observed";
