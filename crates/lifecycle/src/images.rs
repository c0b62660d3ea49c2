//! The build contexts agentc ships for its agent presets' images, as data: one Dockerfile
//! template (`images/Dockerfile.in`) filled in per agent, the install step and the entrypoint
//! every image shares, and a `packages/` directory for local package files. The binary writes
//! a context to disk (`agentc image context`, `agentc build`); nothing here touches the disk.

use agentc_policy::{presets, AgentName};
use sha2::{Digest, Sha256};

/// The Dockerfile every bundled image is built from, with `@NAME@` placeholders.
const DOCKERFILE_TEMPLATE: &str = include_str!("../images/Dockerfile.in");
/// The install step: the agent user, its home, the package, no setuid file.
const INSTALL_SCRIPT: &str = include_str!("../images/agentc-install.sh");
/// The entrypoint: refuses a launch that leaves an allowlist to an in-image firewall.
const ENTRYPOINT_SCRIPT: &str = include_str!("../images/agentc-entrypoint.sh");

/// The label `agentc build` sets to the digest of the bundled context it built from.
pub const CONTEXT_LABEL: &str = "io.agentc.image.context";

/// How an agent's package is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackageKind {
    /// `npm install --global`, on a base with Node.js and npm.
    Npm,
    /// `pip install` into a virtual environment, on a base with Python 3.
    Pip,
}

impl PackageKind {
    /// The word the install step takes (`npm`, `pip`).
    pub fn as_str(self) -> &'static str {
        match self {
            PackageKind::Npm => "npm",
            PackageKind::Pip => "pip",
        }
    }
}

/// What one bundled image installs, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentImage {
    /// The agent, whose preset names the image, home and command.
    pub agent: AgentName,
    /// The agent's name in prose.
    pub title: &'static str,
    /// How its package is installed.
    pub kind: PackageKind,
    /// The default `AGENT_PACKAGE`: the package on its public registry.
    pub package: &'static str,
    /// The executable the package installs, and the image's command.
    pub executable: &'static str,
    /// The default `BASE_IMAGE`.
    pub base: &'static str,
}

/// The four bundled images, one for each preset.
pub const AGENT_IMAGES: [AgentImage; 4] = [
    AgentImage {
        agent: AgentName::ClaudeCode,
        title: "Claude Code",
        kind: PackageKind::Npm,
        package: "@anthropic-ai/claude-code",
        executable: "claude",
        base: "node:22-bookworm-slim",
    },
    AgentImage {
        agent: AgentName::Codex,
        title: "Codex",
        kind: PackageKind::Npm,
        package: "@openai/codex",
        executable: "codex",
        base: "node:22-bookworm-slim",
    },
    AgentImage {
        agent: AgentName::Opencode,
        title: "OpenCode",
        kind: PackageKind::Npm,
        package: "opencode-ai",
        executable: "opencode",
        base: "node:22-bookworm-slim",
    },
    AgentImage {
        agent: AgentName::Hermes,
        title: "Hermes",
        kind: PackageKind::Pip,
        package: "hermes-agent",
        executable: "hermes",
        base: "python:3.12-slim-bookworm",
    },
];

/// The bundled image of `agent`; `None` for `custom`, which has no preset.
pub fn agent_image(agent: AgentName) -> Option<&'static AgentImage> {
    AGENT_IMAGES.iter().find(|image| image.agent == agent)
}

/// One file of a build context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// Its path inside the context, `/`-separated.
    pub path: &'static str,
    /// Its contents.
    pub contents: String,
    /// Its mode (0o644, or 0o755 for the scripts).
    pub mode: u32,
}

/// A bundled build context: its files, in the order they are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildContext {
    /// The agent it builds.
    pub agent: AgentName,
    /// Its files.
    pub files: Vec<ContextFile>,
}

impl BuildContext {
    /// `sha256:` and the hex digest of every file's path, mode and contents: what
    /// [`CONTEXT_LABEL`] records and what names the context's directory in agentc's cache.
    pub fn digest(&self) -> String {
        let mut hasher = Sha256::new();
        for file in &self.files {
            hasher.update(file.path.as_bytes());
            hasher.update([0]);
            hasher.update(format!("{:o}", file.mode).as_bytes());
            hasher.update([0]);
            hasher.update((file.contents.len() as u64).to_be_bytes());
            hasher.update(file.contents.as_bytes());
        }
        format!("sha256:{}", crate::tree::hex(&hasher.finalize()))
    }
}

/// The text of `packages/README.md`, which also keeps the directory the Dockerfile copies.
const PACKAGES_README: &str = "# Local package files\n\n\
Put a package file here and build with `--build-arg AGENT_PACKAGE=packages/FILE` to install it\n\
instead of the registry's package: an npm tarball (`npm pack`) for the Node.js agents, a wheel\n\
or an sdist for Hermes. A package from a file is installed offline.\n";

/// The bundled build context of `agent`; `None` for `custom`.
pub fn build_context(agent: AgentName) -> Option<BuildContext> {
    let image = agent_image(agent)?;
    let preset = presets::preset(agent)?;
    let (runtime, ext) = match image.kind {
        PackageKind::Npm => ("Node.js and npm", "tgz"),
        PackageKind::Pip => ("Python 3 and its venv module", "whl"),
    };
    // A preset with a command (`claude`) runs it after the entrypoint; one without (Hermes)
    // runs the image's, so its arguments follow the executable in the entrypoint.
    let entry = "\"/usr/local/lib/agentc/agentc-entrypoint.sh\"";
    let (entrypoint, cmd) = match preset.command {
        Some(_) => (format!("[{entry}]"), format!("[\"{}\"]", image.executable)),
        None => (
            format!("[{entry}, \"{}\"]", image.executable),
            "[]".to_string(),
        ),
    };
    let dockerfile = [
        ("@TITLE@", image.title),
        ("@AGENT@", agent.as_str()),
        ("@USER@", preset.seed_user),
        ("@HOME@", preset.home_path),
        ("@RUNTIME@", runtime),
        ("@BASE@", image.base),
        ("@KIND@", image.kind.as_str()),
        ("@PACKAGE@", image.package),
        ("@EXT@", ext),
        ("@EXECUTABLE@", image.executable),
        ("@ENTRYPOINT@", &entrypoint),
        ("@CMD@", &cmd),
    ]
    .iter()
    .fold(DOCKERFILE_TEMPLATE.to_string(), |text, (from, to)| {
        text.replace(from, to)
    });
    Some(BuildContext {
        agent,
        files: vec![
            ContextFile {
                path: "Dockerfile",
                contents: dockerfile,
                mode: 0o644,
            },
            ContextFile {
                path: "agentc-install.sh",
                contents: INSTALL_SCRIPT.to_string(),
                mode: 0o755,
            },
            ContextFile {
                path: "agentc-entrypoint.sh",
                contents: ENTRYPOINT_SCRIPT.to_string(),
                mode: 0o755,
            },
            ContextFile {
                path: "packages/README.md",
                contents: PACKAGES_README.to_string(),
                mode: 0o644,
            },
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_has_a_context_and_custom_none() {
        for agent in [
            AgentName::ClaudeCode,
            AgentName::Codex,
            AgentName::Opencode,
            AgentName::Hermes,
        ] {
            let context = build_context(agent).unwrap();
            let dockerfile = &context.files[0].contents;
            let placeholder = dockerfile.split('@').skip(1).any(|rest| {
                rest.split_once('@').is_some_and(|(word, _)| {
                    !word.is_empty() && word.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
                })
            });
            assert!(!placeholder, "{agent:?}: {dockerfile}");
            let preset = presets::preset(agent).unwrap();
            assert!(dockerfile.contains(&format!("WORKDIR {}\n", preset.home_path)));
            let image = agent_image(agent).unwrap();
            // The executable runs with the invocation's arguments either way.
            let runs = match preset.command {
                Some(_) => format!("CMD [\"{}\"]", image.executable),
                None => format!("agentc-entrypoint.sh\", \"{}\"]\nCMD []", image.executable),
            };
            assert!(dockerfile.contains(&runs), "{agent:?}: {dockerfile}");
            assert!(dockerfile.contains(&format!(" AGENT_PACKAGE={} ", image.package)));
            // The preset's command is the executable the package installs.
            if let Some(command) = preset.command {
                assert_eq!(command, image.executable);
            }
        }
        assert!(build_context(AgentName::Custom).is_none());
    }

    #[test]
    fn the_images_run_as_the_build_ids_with_no_firewall_or_baked_ca() {
        let context = build_context(AgentName::ClaudeCode).unwrap();
        let dockerfile = &context.files[0].contents;
        assert!(dockerfile.contains("USER ${UID}:${GID}\n"));
        let firewall = agentc_policy::presets::IMAGE_FIREWALL_LABEL;
        assert!(dockerfile.contains(&format!("{firewall}=\"none\"")));
        for absent in ["iptables", "NET_ADMIN", "update-ca-certificates", "ca.pem"] {
            assert!(!dockerfile.contains(absent), "{absent}");
        }
        let install = &context.files[1].contents;
        assert!(install.contains("-perm /6000 -exec chmod ug-s"));
    }

    #[test]
    fn the_digest_changes_with_any_file_and_not_otherwise() {
        let one = build_context(AgentName::Codex).unwrap();
        assert_eq!(
            one.digest(),
            build_context(AgentName::Codex).unwrap().digest()
        );
        assert_ne!(
            one.digest(),
            build_context(AgentName::ClaudeCode).unwrap().digest()
        );
        let mut changed = one.clone();
        changed.files[2].mode = 0o644;
        assert_ne!(one.digest(), changed.digest());
        assert!(one.digest().starts_with("sha256:") && one.digest().len() == 71);
    }
}
