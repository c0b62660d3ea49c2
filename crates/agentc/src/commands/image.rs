//! `agentc image context`, and the bundled build contexts written to disk: where `agentc
//! build` finds a preset's context (agentc's cache, one directory per context digest) and how
//! a context is written (each file with its mode, the cache's directory renamed into place
//! whole).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agentc_lifecycle::images::{build_context, BuildContext};
use agentc_policy::LoadedProfile;

use crate::cli::{ImageCommand, ImageContextArgs};
use crate::context::{Failure, EXIT_FAILED, EXIT_INVALID};

/// Runs `agentc image`.
pub fn image(command: ImageCommand) -> Result<u8, Failure> {
    match command {
        ImageCommand::Context(args) => context(args),
    }
}

/// `agentc image context AGENT DIR`: the bundled context written to DIR.
fn context(args: ImageContextArgs) -> Result<u8, Failure> {
    let agent = args.agent.name();
    let context = build_context(agent).ok_or_else(|| {
        Failure::new(
            EXIT_INVALID,
            "a custom sandbox has no bundled image: its profile names an image of your choice\n  hint: pass claude-code, codex, opencode or hermes",
        )
    })?;
    let dir = &args.dir;
    let occupied = std::fs::read_dir(dir)
        .map(|mut entries| entries.next().is_some())
        .unwrap_or(false);
    if occupied && !args.force {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "{}: is not empty; agentc image context writes only into an empty or missing directory\n  hint: choose another directory, or pass --force to replace the context's files there",
                dir.display()
            ),
        ));
    }
    write_context(&context, dir)?;
    for file in &context.files {
        println!("wrote {}", dir.join(file.path).display());
    }
    println!(
        "next: docker build -t {}:latest --build-arg UID=$(id -u) --build-arg GID=$(id -g) {}",
        agent.as_str(),
        dir.display()
    );
    Ok(0)
}

/// The build argument naming the package a bundled image installs.
pub const PACKAGE_ARG: &str = "AGENT_PACKAGE";

/// A build from agentc's bundled context: the context, a package file of this machine to
/// install (`--build-arg AGENT_PACKAGE=FILE`), and the directory of agentc's cache that holds
/// both (`$XDG_CACHE_HOME/agentc/images/AGENT-CONTEXT12[-PACKAGE12]`, else under
/// `~/.cache`), named by their digests so that it is written once and never changes.
#[derive(Debug, Clone)]
pub struct Bundled {
    /// The bundled context.
    pub context: BuildContext,
    /// The package file on this machine and the name it gets under `packages/`.
    pub package: Option<(PathBuf, String)>,
    /// Where both are written.
    pub dir: PathBuf,
}

impl Bundled {
    /// The bundled build of `loaded`'s agent with `build_args` as given; `None` where the
    /// profile has a build context of its own, or no preset. Computing it writes nothing.
    pub fn of(
        loaded: &LoadedProfile,
        build_args: &BTreeMap<String, String>,
    ) -> Result<Option<Bundled>, Failure> {
        if loaded.profile.image.build_context.is_some() {
            return Ok(None);
        }
        let Some(context) = build_context(loaded.profile.agent) else {
            return Ok(None);
        };
        let package = match build_args.get(PACKAGE_ARG) {
            Some(value) if !value.starts_with("packages/") && Path::new(value).is_file() => {
                let path = std::fs::canonicalize(value)
                    .map_err(|error| Failure::usage(format!("{PACKAGE_ARG} {value}: {error}")))?;
                let name = path
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let digest = crate::context::file_sha256(&path).ok_or_else(|| {
                    Failure::usage(format!("{PACKAGE_ARG} {value}: cannot be read"))
                })?;
                Some((path, name, digest))
            }
            _ => None,
        };
        let digest = context.digest();
        let mut leaf = format!("{}-{}", context.agent.as_str(), short(&digest));
        if let Some((_, _, digest)) = &package {
            leaf.push('-');
            leaf.push_str(short(digest));
        }
        Ok(Some(Bundled {
            dir: cache_base()?.join("agentc").join("images").join(leaf),
            context,
            package: package.map(|(path, name, _)| (path, name)),
        }))
    }

    /// The `AGENT_PACKAGE` the Dockerfile reads for the package file: `packages/NAME`.
    pub fn package_argument(&self) -> Option<String> {
        self.package
            .as_ref()
            .map(|(_, name)| format!("packages/{name}"))
    }

    /// Writes the context (and the package file) into [`Bundled::dir`] when it is not there:
    /// into a directory beside it, renamed into place once whole, so that a build never reads
    /// half a context.
    pub fn ensure_written(&self) -> Result<(), Failure> {
        let dir = &self.dir;
        if dir.join("Dockerfile").is_file() {
            return Ok(());
        }
        let parent = dir.parent().unwrap_or(Path::new("/"));
        let failed = |error: std::io::Error, what: &Path| {
            Failure::new(
                EXIT_FAILED,
                format!(
                    "cannot write agentc's bundled build context to {}: {error}\n  hint: make the directory writable, or set XDG_CACHE_HOME to one that is",
                    what.display()
                ),
            )
        };
        std::fs::create_dir_all(parent).map_err(|error| failed(error, parent))?;
        let partial = parent.join(format!(
            ".{}.partial-{}",
            dir.file_name().unwrap_or_default().to_string_lossy(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&partial);
        let written = write_context(&self.context, &partial).and_then(|()| {
            if let Some((source, name)) = &self.package {
                let target = partial.join("packages").join(name);
                std::fs::copy(source, &target).map_err(|error| failed(error, &target))?;
            }
            Ok(())
        });
        let placed = written.and_then(|()| match std::fs::rename(&partial, dir) {
            Ok(()) => Ok(()),
            // Another agentc wrote the same context first: the same files, keep theirs.
            Err(_) if dir.join("Dockerfile").is_file() => Ok(()),
            Err(error) => Err(failed(error, dir)),
        });
        let _ = std::fs::remove_dir_all(&partial);
        placed
    }
}

/// The first 12 hex digits of a `sha256:` digest.
fn short(digest: &str) -> &str {
    let hex = digest.trim_start_matches("sha256:");
    hex.get(..12).unwrap_or(hex)
}

/// `$XDG_CACHE_HOME`, else `~/.cache`.
fn cache_base() -> Result<PathBuf, Failure> {
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|dir| !dir.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    match std::env::var_os("HOME").filter(|dir| !dir.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".cache")),
        None => Err(Failure::usage(
            "no cache directory for agentc's bundled build contexts: HOME and XDG_CACHE_HOME are unset\n  hint: set XDG_CACHE_HOME to a directory agentc may write",
        )),
    }
}

/// Writes every file of `context` under `dir` (created when missing) with its mode.
fn write_context(context: &BuildContext, dir: &Path) -> Result<(), Failure> {
    for file in &context.files {
        let path = dir.join(file.path);
        let written = (|| {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let mut out = std::fs::File::create(&path)?;
            out.write_all(file.contents.as_bytes())?;
            out.set_permissions(std::fs::Permissions::from_mode(file.mode))
        })();
        written.map_err(|error| {
            Failure::new(
                EXIT_FAILED,
                format!("cannot write {}: {error}", path.display()),
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_policy::AgentName;

    #[test]
    fn a_context_is_written_whole_with_its_modes() {
        let dir = tempfile::tempdir().unwrap();
        let context = build_context(AgentName::Hermes).unwrap();
        write_context(&context, dir.path()).unwrap();
        let mode = |path: &str| {
            std::fs::metadata(dir.path().join(path))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode("agentc-install.sh"), 0o755);
        assert_eq!(mode("Dockerfile"), 0o644);
        let dockerfile = std::fs::read_to_string(dir.path().join("Dockerfile")).unwrap();
        assert!(dockerfile.contains("WORKDIR /opt/data"));
        assert!(dir.path().join("packages/README.md").is_file());
    }
}
