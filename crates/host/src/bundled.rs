//! agentc's bundled build contexts on disk: where a build finds a preset's context (agentc's
//! cache, one directory per digest of the context and of a package file of this machine), how
//! a context is written (each file with its mode, the cache's directory renamed into place
//! whole), and which image is a preset's own. A leaf: a build launch's inputs
//! ([`crate::resolve_build`]) and `agentc build` use it.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agentc_lifecycle::images::{build_context, BuildContext};
use agentc_policy::{Hint, Hinted, LoadedProfile};

/// Why a bundled context cannot be found or written: its `Display` is the message,
/// [`Hinted::hint`] what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundledError {
    /// An input is wrong: a package file that cannot be read, no cache directory.
    Input(Hint<String>),
    /// The context cannot be written.
    Write(Hint<String>),
}

impl std::fmt::Display for BundledError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BundledError::Input(message) | BundledError::Write(message) => message.fmt(formatter),
        }
    }
}

impl Hinted for BundledError {
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            BundledError::Input(message) | BundledError::Write(message) => message.hint(),
        }
    }
}

/// Whether `reference` is the preset's own image of `loaded` (`claude-code:latest`, the
/// profile naming neither an image nor a build context), which `agentc build` (and `agentc
/// apply`, when it is missing) builds from agentc's bundled context.
pub fn is_bundled_image(loaded: &LoadedProfile, reference: &str) -> bool {
    let image = &loaded.profile.image;
    image.reference.is_none()
        && image.build_context.is_none()
        && agentc_lifecycle::images::agent_image(loaded.profile.agent).is_some()
        && agentc_policy::presets::preset(loaded.profile.agent)
            .is_some_and(|preset| reference == format!("{}:latest", preset.image_name))
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
    ) -> Result<Option<Bundled>, BundledError> {
        if loaded.profile.image.build_context.is_some() {
            return Ok(None);
        }
        let Some(context) = build_context(loaded.profile.agent) else {
            return Ok(None);
        };
        let package = match build_args.get(PACKAGE_ARG) {
            Some(value) if !value.starts_with("packages/") && Path::new(value).is_file() => {
                let path = std::fs::canonicalize(value).map_err(|error| {
                    BundledError::Input(Hint::none(format!("{PACKAGE_ARG} {value}: {error}")))
                })?;
                let name = path
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let bytes = std::fs::read(&path).map_err(|error| {
                    BundledError::Input(Hint::none(format!("{PACKAGE_ARG} {value}: {error}")))
                })?;
                let digest = agentc_lifecycle::tree::sha256_hex(&bytes);
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
            dir: cache_dir()?.join("images").join(leaf),
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
    pub fn ensure_written(&self) -> Result<(), BundledError> {
        let dir = &self.dir;
        if dir.join("Dockerfile").is_file() {
            return Ok(());
        }
        let parent = dir.parent().unwrap_or(Path::new("/"));
        let failed = |error: std::io::Error, what: &Path| {
            BundledError::Write(Hint::new(
                format!(
                    "cannot write agentc's bundled build context to {}: {error}",
                    what.display()
                ),
                "make the directory writable, or set XDG_CACHE_HOME to one that is",
            ))
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

/// agentc's cache directory ([`agentc_egress::image::agentc_cache_dir`]).
fn cache_dir() -> Result<PathBuf, BundledError> {
    agentc_egress::image::agentc_cache_dir(|name| std::env::var(name).ok()).ok_or_else(|| {
        BundledError::Input(Hint::new(
            "no cache directory for agentc's bundled build contexts: HOME and XDG_CACHE_HOME are \
             unset"
                .to_string(),
            "set XDG_CACHE_HOME to a directory agentc may write",
        ))
    })
}

/// Writes every file of `context` under `dir` (created when missing) with its mode.
pub fn write_context(context: &BuildContext, dir: &Path) -> Result<(), BundledError> {
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
            BundledError::Write(Hint::none(format!(
                "cannot write {}: {error}",
                path.display()
            )))
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
