//! What the proxy keeps across its own restarts, in its state directory (`--audit-dir`: the
//! volume of its own that holds its audit files, never mounted in the workload, an `emptyDir`
//! on Kubernetes). agentc's launches give the proxy a restart policy (the engine starts it
//! again when it dies: an OOM kill, a crash); these files make the new process the same proxy:
//!
//! - [`CA_STATE_FILE`]: the launch CA, key included (mode 0600, the proxy's user only), so a
//!   proxy started again serves the certificates the workload already trusts
//!   ([`launch_ca`]). A CA made for other hosts, or within an hour of its end, is replaced.
//! - [`REPLAY_STOP_FILE`]: written when the proxy stopped on a credential replay
//!   (`--on-replay=stop`); a proxy started again on the directory refuses to serve and exits
//!   at once with the same status ([`replay_stop`]), so neither the engine's restart policy
//!   nor `agentc start` opens a way out after a replay.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::ca::{LaunchCa, StoredCa};
use crate::error::EgressError;

/// The launch CA as the proxy keeps it ([`StoredCa`], JSON).
pub const CA_STATE_FILE: &str = "launch-ca.json";
/// The mark of a proxy that stopped on a replay: the time it stopped (RFC 3339) and why.
pub const REPLAY_STOP_FILE: &str = "stopped-on-replay";

fn state_error(path: &Path, error: impl std::fmt::Display) -> EgressError {
    EgressError::Ca(format!("{}: {error}", path.display()))
}

/// Writes `text` to `dir/file`, mode 0600, whole under a temporary name and then renamed.
fn write_private(dir: &Path, file: &str, text: &str) -> Result<(), EgressError> {
    let path = dir.join(file);
    let partial = dir.join(format!(".{file}.partial"));
    let _ = std::fs::remove_file(&partial);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)
        .and_then(|mut out| {
            out.write_all(text.as_bytes())?;
            out.sync_all()
        })
        .and_then(|()| std::fs::rename(&partial, &path))
        .map_err(|error| state_error(&path, error))
}

/// The launch CA for `hosts`: the one kept in `dir` by an earlier start when it still serves
/// ([`LaunchCa::restored`]), else a new one, kept there for the next start. Without a state
/// directory, always a new one. A kept file that cannot be read is replaced, with a line on
/// stderr.
pub fn launch_ca(dir: Option<&Path>, hosts: &[String]) -> Result<LaunchCa, EgressError> {
    let Some(dir) = dir else {
        return LaunchCa::generate(hosts);
    };
    let path = dir.join(CA_STATE_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => {
            let kept = serde_json::from_slice::<StoredCa>(&bytes)
                .ok()
                .and_then(|stored| LaunchCa::restored(&stored, hosts));
            match kept {
                Some(ca) => {
                    eprintln!(
                        "agentc egress-proxy: goes on with the launch CA of its earlier start \
                         ({})",
                        path.display()
                    );
                    return Ok(ca);
                }
                None => eprintln!(
                    "agentc egress-proxy: {} holds no launch CA for these hosts that is valid \
                     for another hour; a new one replaces it (a workload that trusts the old \
                     one reads the new bundle again)",
                    path.display()
                ),
            }
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(state_error(&path, error)),
    }
    let ca = LaunchCa::generate(hosts)?;
    let stored =
        serde_json::to_string(&ca.stored(hosts)).map_err(|error| state_error(&path, error))?;
    write_private(dir, CA_STATE_FILE, &stored)?;
    Ok(ca)
}

/// Marks `dir` as the state of a proxy that stopped on a replay at `at` (RFC 3339).
pub fn mark_replay_stop(dir: &Path, at: &str) -> Result<(), EgressError> {
    write_private(
        dir,
        REPLAY_STOP_FILE,
        &format!("{at} stopped on a credential replay (--on-replay=stop)\n"),
    )
}

/// Marks `dir` (when there is one) as a replay stop now; a mark that cannot be written is said
/// on stderr (the proxy stops all the same).
pub fn note_replay_stop(dir: Option<&Path>) {
    let Some(dir) = dir else { return };
    let now = crate::log::rfc3339(std::time::SystemTime::now());
    if let Err(error) = mark_replay_stop(dir, &now) {
        eprintln!("agentc egress-proxy: cannot mark the replay stop: {error}");
    }
}

/// When `dir` holds the mark of a replay stop: the refusal a proxy started again on it
/// returns ([`EgressError::Replayed`]) instead of serving.
pub fn replay_stop(dir: Option<&Path>) -> Option<EgressError> {
    let path = dir?.join(REPLAY_STOP_FILE);
    let mark = std::fs::read_to_string(&path).ok()?;
    let at = mark.split_whitespace().next().unwrap_or("an earlier start");
    Some(EgressError::Replayed(format!(
        "it stopped at {at} ({}) and stays down, started again or not: the sandbox reaches \
         nothing outside from then on",
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use rustls::client::danger::ServerCertVerifier;

    use super::*;

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("agentc-state-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_second_start_goes_on_with_the_kept_ca_and_its_leaves_chain_to_it() {
        let dir = temp_dir("ca");
        let hosts = vec!["api.test".to_string(), "gw.test".to_string()];
        let first = launch_ca(Some(&dir), &hosts).unwrap();
        let kept = dir.join(CA_STATE_FILE);
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the key is the proxy user's only");
        assert!(!format!("{:?}", first.stored(&hosts)).contains("PRIVATE"));

        let second = launch_ca(Some(&dir), &hosts).unwrap();
        assert_eq!(second.certificate_der(), first.certificate_der());
        assert_eq!(second.certificate_pem(), first.certificate_pem());
        // A leaf of the restored CA names the same issuer key as the first CA's.
        let (a, b) = (
            first.leaf("api.test").unwrap(),
            second.leaf("api.test").unwrap(),
        );
        assert_eq!(a.cert[1], b.cert[1]);
        let mut roots = rustls::RootCertStore::empty();
        roots.add(first.certificate_der().clone()).unwrap();
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            std::sync::Arc::new(roots),
            std::sync::Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .unwrap();
        let name = rustls::pki_types::ServerName::try_from("api.test").unwrap();
        verifier
            .verify_server_cert(
                &b.cert[0],
                &[],
                &name,
                &[],
                rustls::pki_types::UnixTime::now(),
            )
            .expect("the restored CA's leaf is trusted by the first CA's certificate");

        // Other hosts: a new CA, which replaces the kept one.
        let other = launch_ca(Some(&dir), &hosts[..1]).unwrap();
        assert_ne!(other.certificate_der(), first.certificate_der());
        let again = launch_ca(Some(&dir), &hosts[..1]).unwrap();
        assert_eq!(again.certificate_der(), other.certificate_der());

        // A kept file that cannot be read is replaced.
        std::fs::write(&kept, "{not json").unwrap();
        let fresh = launch_ca(Some(&dir), &hosts).unwrap();
        assert_ne!(fresh.certificate_der(), first.certificate_der());
        let read: StoredCa = serde_json::from_slice(&std::fs::read(&kept).unwrap()).unwrap();
        assert_eq!(read.hosts, hosts);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_kept_ca_near_its_end_or_not_yet_valid_is_not_restored() {
        let hosts = vec!["api.test".to_string()];
        let ca = LaunchCa::generate(&hosts).unwrap();
        let stored = ca.stored(&hosts);
        assert!(LaunchCa::restored(&stored, &hosts).is_some());
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let ending = StoredCa {
            not_after: now + 600,
            ..stored.clone()
        };
        assert!(LaunchCa::restored(&ending, &hosts).is_none());
        let early = StoredCa {
            not_before: now + 600,
            ..stored.clone()
        };
        assert!(LaunchCa::restored(&early, &hosts).is_none());
        let bad_key = StoredCa {
            key: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".into(),
            ..stored
        };
        assert!(LaunchCa::restored(&bad_key, &hosts).is_none());
    }

    #[test]
    fn a_replay_stop_is_kept_and_refuses_the_next_start() {
        let dir = temp_dir("replay");
        assert!(replay_stop(Some(&dir)).is_none());
        assert!(replay_stop(None).is_none());
        mark_replay_stop(&dir, "2026-12-04T19:00:00Z").unwrap();
        let refusal = replay_stop(Some(&dir)).unwrap().to_string();
        assert!(
            refusal.contains(
                "credential replay (--on-replay=stop): it stopped at 2026-12-04T19:00:00Z"
            ),
            "{refusal}"
        );
        assert!(refusal.contains("stays down"), "{refusal}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
