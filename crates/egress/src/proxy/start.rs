//! What the proxy's start says (its first line) and what ends it (SIGTERM or SIGINT).

/// The start line's counts in words: `1 allowlist entry, 0 allowed ranges, 2 relays`.
pub(super) fn counts(entries: usize, ranges: usize, relays: usize) -> String {
    let counted = |count: usize, one: &str, many: &str| {
        format!("{count} {}", if count == 1 { one } else { many })
    };
    format!(
        "{}, {}, {}",
        counted(entries, "allowlist entry", "allowlist entries"),
        counted(ranges, "allowed range", "allowed ranges"),
        counted(relays, "relay", "relays")
    )
}

/// Resolves on SIGTERM or SIGINT.
pub(super) async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
