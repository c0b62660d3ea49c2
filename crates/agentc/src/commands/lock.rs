//! `agentc lock`: writes the profile's lock file from the machine as it is, or, with
//! `--check`, lists the drift between the lock and the machine (exit 65 on any).

use agentc_lifecycle::lock::{compare, Drift, Lock};
use agentc_lifecycle::plan::Launch;
use agentc_policy::LoadedProfile;
use std::collections::BTreeMap;
use std::path::Path;

use crate::cli::{ExplainFormat, LockArgs};
use crate::context::{self, Failure, EXIT_INVALID};
use crate::lifecycle::{gather, store};

/// Runs `agentc lock`.
pub fn lock(args: LockArgs) -> Result<u8, Failure> {
    let loaded = context::load_profile(&args.profile)?;
    let launches = gather::launches(
        &loaded,
        &args.profile,
        args.workspace.as_deref(),
        &BTreeMap::new(),
    )?;
    if args.check {
        return check(&args, &loaded, &launches);
    }
    let mut engine = crate::commands::launch::lifecycle_engine(args.backend)?;
    let (lock, missing) =
        gather::current_lock(&loaded, &launches, &BTreeMap::new(), engine.as_mut())?;
    gather::require_images(&missing, &launches, &loaded, &args.profile)?;
    let path = store::lock_file(&args.profile);
    store::write_atomic(&path, &lock.to_toml())?;
    println!(
        "wrote {}: {}",
        path.display(),
        pinned(lock.launches.len(), lock.images.len(), lock.files.len())
    );
    Ok(0)
}

/// Runs `agentc lock --check`: the drift between the profile's lock file and the machine,
/// printed as text or JSON; refused (exit 65) on any drift or without a lock file.
fn check(args: &LockArgs, loaded: &LoadedProfile, launches: &[Launch]) -> Result<u8, Failure> {
    let Some((path, locked)) = gather::read_lock(&args.profile)? else {
        return Err(Failure::new(
            EXIT_INVALID,
            format!(
                "{}: no lock file to check",
                store::lock_file(&args.profile).display(),
            ),
        )
        .hinted(format!(
            "`agentc lock {}` writes it",
            args.profile.display()
        )));
    };
    let mut engine = crate::commands::launch::lifecycle_engine(args.backend)?;
    let (current, _) = gather::current_lock(loaded, launches, &BTreeMap::new(), engine.as_mut())?;
    let drifts = compare(&locked, &current);
    if args.format == ExplainFormat::Json {
        return check_json(&path, &locked, &drifts);
    }
    if !drifts.is_empty() {
        return Err(gather::drift_failure(&path, &drifts));
    }
    println!(
        "{}: no drift ({})",
        path.display(),
        pinned(
            locked.launches.len(),
            locked.images.len(),
            locked.files.len()
        )
    );
    Ok(0)
}

/// Prints `agentc lock --check`'s JSON report of the lock at `path`; refused (exit 65) when
/// anything drifted.
fn check_json(path: &Path, locked: &Lock, drifts: &[Drift]) -> Result<u8, Failure> {
    let report = serde_json::json!({
        "lock": path.display().to_string(),
        "drift": drifts,
        "launches": locked.launches.len(),
        "images": locked.images.len(),
        "files": locked.files.len(),
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
    if !drifts.is_empty() {
        return Err(Failure::new(
            EXIT_INVALID,
            format!(
                "{}: {} field{} drifted (listed on stdout)",
                path.display(),
                drifts.len(),
                if drifts.len() == 1 { "" } else { "s" }
            ),
        ));
    }
    Ok(0)
}

/// What a lock pins, counted in words: `1 launch, 2 images, 0 files`.
fn pinned(launches: usize, images: usize, files: usize) -> String {
    let counted = |count: usize, one: &str, many: &str| {
        format!("{count} {}", if count == 1 { one } else { many })
    };
    format!(
        "{}, {}, {}",
        counted(launches, "launch", "launches"),
        counted(images, "image", "images"),
        counted(files, "file", "files")
    )
}

#[cfg(test)]
mod tests {
    use super::pinned;

    #[test]
    fn what_a_lock_pins_is_counted_in_plurals() {
        assert_eq!(pinned(1, 1, 0), "1 launch, 1 image, 0 files");
        assert_eq!(pinned(3, 2, 1), "3 launches, 2 images, 1 file");
    }
}
