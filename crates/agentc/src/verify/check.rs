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
    }
}

/// What a check says it saw when the probe could not observe the fact.
pub(super) const NOT_OBSERVED: &str = "not observed";
