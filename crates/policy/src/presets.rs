//! Per-agent constants and agentc's built-in defaults.
//!
//! The agent presets are those of agent-containers' `docker.py` (home paths, image names,
//! commands, capabilities, executable tmpfs, seed users); the defaults beyond it (resource
//! limits for every container) are agentc's own and are marked as such. Nothing here reads
//! the environment or the disk.

use crate::capability::Capability;
use crate::profile::AgentName;

/// What agentc knows about one agent image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// The agent.
    pub agent: AgentName,
    /// The image name: the default image is `<image_name>:latest` and the default home volume
    /// `<image_name>-home-<owner>-<profile>`.
    pub image_name: &'static str,
    /// Where the persistent home volume is mounted.
    pub home_path: &'static str,
    /// The program run after the image (`None`: the image's own command, as for Hermes).
    pub command: Option<&'static str>,
    /// Capabilities added after dropping all of them. NET_ADMIN and NET_RAW let the image's
    /// entrypoint install the egress firewall (not added behind agentc's egress proxy, where
    /// that firewall stands down: `rules/egress/host_path.rs`); SETUID and SETGID let it drop
    /// to the agent user.
    pub capabilities: &'static [Capability],
    /// Whether `/tmp` and `/run` are mounted executable (OpenCode and Hermes run tools from
    /// them).
    pub tmpfs_exec: bool,
    /// The account that owns seeded files in the home volume.
    pub seed_user: &'static str,
    /// Whether `agentc build` passes the owner's `UID` and `GID` as build arguments (the
    /// Hermes image keeps its own fixed account).
    pub build_user_args: bool,
}

const BASE_CAPABILITIES: &[Capability] = &[
    Capability::NetAdmin,
    Capability::NetRaw,
    Capability::Setuid,
    Capability::Setgid,
];

/// Hermes' entrypoint also fixes the ownership of its data directory.
const HERMES_CAPABILITIES: &[Capability] = &[
    Capability::NetAdmin,
    Capability::NetRaw,
    Capability::Setuid,
    Capability::Setgid,
    Capability::Chown,
    Capability::DacOverride,
];

/// Claude Code.
pub const CLAUDE_CODE: Preset = Preset {
    agent: AgentName::ClaudeCode,
    image_name: "claude-code",
    home_path: "/home/claude",
    command: Some("claude"),
    capabilities: BASE_CAPABILITIES,
    tmpfs_exec: false,
    seed_user: "claude",
    build_user_args: true,
};

/// OpenCode.
pub const OPENCODE: Preset = Preset {
    agent: AgentName::Opencode,
    image_name: "opencode",
    home_path: "/home/opencode",
    command: Some("opencode"),
    capabilities: BASE_CAPABILITIES,
    tmpfs_exec: true,
    seed_user: "opencode",
    build_user_args: true,
};

/// Codex.
pub const CODEX: Preset = Preset {
    agent: AgentName::Codex,
    image_name: "codex",
    home_path: "/home/codex",
    command: Some("codex"),
    capabilities: BASE_CAPABILITIES,
    tmpfs_exec: false,
    seed_user: "codex",
    build_user_args: true,
};

/// Hermes.
pub const HERMES: Preset = Preset {
    agent: AgentName::Hermes,
    image_name: "hermes",
    home_path: "/opt/data",
    command: None,
    capabilities: HERMES_CAPABILITIES,
    tmpfs_exec: true,
    seed_user: "hermes",
    build_user_args: false,
};

/// The ids an agent image is built for, for an owner with `owner_uid` and `owner_gid`: the
/// owner's, or 1000:1000 when either is 0 (root's files must not belong to the agent, nor the
/// agent run as root); with whether it fell back.
pub fn build_ids(owner_uid: u32, owner_gid: u32) -> (u32, u32, bool) {
    if owner_uid == 0 || owner_gid == 0 {
        (1000, 1000, true)
    } else {
        (owner_uid, owner_gid, false)
    }
}

/// The label by which an image says it has no egress firewall of its own (`none`: agentc's
/// bundled agent images); a launch that leaves its allowlist to the image's firewall is
/// refused with such an image.
pub const IMAGE_FIREWALL_LABEL: &str = "io.agentc.image.firewall";

/// The preset of an agent; `None` for `custom`, whose profile describes its own image.
pub fn preset(agent: AgentName) -> Option<&'static Preset> {
    match agent {
        AgentName::ClaudeCode => Some(&CLAUDE_CODE),
        AgentName::Opencode => Some(&OPENCODE),
        AgentName::Codex => Some(&CODEX),
        AgentName::Hermes => Some(&HERMES),
        AgentName::Custom => None,
    }
}

/// Default memory limit of every container agentc launches: 4 GiB, with swap equal to it
/// (no swap). Beyond the seeds, which leave memory unbounded unless asked; `AGENTC_MEM_LIMIT=off`
/// removes it.
pub const DEFAULT_MEMORY_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// Default process limit of every container agentc launches, against fork bombs. Beyond the
/// seeds; `AGENTC_PIDS_LIMIT=off` removes it.
pub const DEFAULT_PIDS_LIMIT: u32 = 512;

/// The log driver used for rotation (the sandbox seed's choice).
pub const LOG_DRIVER: &str = "json-file";

/// Default size at which the json-file log rotates (50m).
pub const DEFAULT_LOG_MAX_SIZE_BYTES: u64 = 50 * 1024 * 1024;

/// Default number of rotated log files kept; the disk cap is size times files.
pub const DEFAULT_LOG_MAX_FILE: u32 = 3;

/// Where the workspace is mounted: `/workspace/<directory name>`.
pub const WORKSPACE_ROOT: &str = "/workspace";

/// Where the gateway's SSH private key is mounted (read-only).
pub const GATEWAY_KEY_TARGET: &str = "/etc/agent/gateway-key";

/// Where the gateway's known-hosts file is mounted (read-only).
pub const GATEWAY_KNOWN_HOSTS_TARGET: &str = "/etc/agent/gateway-known-hosts";

/// The CA bundle that agent images trust; the proxy CA is baked into it at build time, and
/// profile mounts may not shadow it.
pub const CA_BUNDLE_TARGET: &str = "/etc/ssl/certs/ca-certificates.crt";

/// tmpfs mounts of every hardened container (the root filesystem is read-only).
pub const TMPFS_TARGETS: &[&str] = &["/tmp", "/run"];

/// The mode of every tmpfs agentc mounts (`mode=1777`: writable by any user, sticky), so that
/// a non-root agent can write `/tmp` and `/run` whatever the image's directories' modes.
/// Runtimes that take the directory's mode over the option (runc before 1.1.8, crun before
/// 1.12) do not honour it; `agentc verify` shows it (its tmpfs rows write as the container's
/// user), and agentc's bundled images ship both directories 1777.
pub const TMPFS_MODE: &str = "1777";

/// The extra host mapped to the host gateway by `[network] host_gateway`.
pub const HOST_GATEWAY_NAME: &str = "host.docker.internal";

/// Where a seed launch mounts the seed source (read-only).
pub const SEED_SOURCE_TARGET: &str = "/tmp/agent-seed";

/// Capabilities of the seed helper: it runs as root with a read-only source and must create
/// and chown the target in a home that may be mode 0700 and owned by another uid. The
/// workload itself never receives DAC_OVERRIDE.
pub const SEED_CAPABILITIES: &[Capability] = &[Capability::Chown, Capability::DacOverride];

/// The seed helper's script (agent-containers' `_SEED_COPY_SCRIPT`), run as `/bin/sh -ceu`.
///
/// It reads `SEED_TARGET`, `SEED_USER`, `SEED_HOME` and `SEED_ON_CONFLICT`: missing parent
/// directories are created owned like the home and mode 0700; an identical target is left
/// alone; a different one fails under `keep` and is replaced (after a `.agent-containers.bak`
/// backup) under `replace`; the copy does not preserve host metadata and is chowned to the
/// seed user.
///
/// One deliberate change from agent-containers: a created directory is `chmod`ed before it
/// is `chown`ed. The helper holds CHOWN and DAC_OVERRIDE but not FOWNER, so once a directory
/// belongs to the agent user root may no longer change its mode; agent-containers' order
/// fails with "Operation not permitted" whenever a seed target's parent is missing.
pub const SEED_COPY_SCRIPT: &str = r#"set -eu
hash_tree() {
    if [ -d "$1" ]; then
        # Symlinks are deliberately not covered; seeds compare regular files
        # and their relative paths, matching the copy semantics below.
        ( cd "$1" && find . -type f -print0 | sort -z             | xargs -0 -r sha256sum | sha256sum | cut -d' ' -f1 )
    else
        sha256sum < "$1" | cut -d' ' -f1
    fi
}

home="$SEED_HOME"
owner=$(stat -c '%u:%g' "$home")
SEED_UID=$(id -u "$SEED_USER")
SEED_GID=$(id -g "$SEED_USER")
dir=$(dirname "$SEED_TARGET")
missing=""
probe="$dir"
while [ "$probe" != "$home" ] && [ "$probe" != "/" ] && [ ! -d "$probe" ]; do
  missing="$probe
$missing"
  probe=$(dirname "$probe")
done
mkdir -p "$dir"
printf '%s\n' "$missing" | while IFS= read -r created; do
  [ -n "$created" ] || continue
  chmod 700 "$created"
  chown "$owner" "$created"
done
if [ -e "$SEED_TARGET" ]; then
    source_digest=$(hash_tree /tmp/agent-seed)
    target_digest=$(hash_tree "$SEED_TARGET")
    if [ "$source_digest" = "$target_digest" ]; then
        exit 0
    fi
    if [ "$SEED_ON_CONFLICT" = "keep" ]; then
        echo "seed target already differs: $SEED_TARGET (set on_conflict = replace to replace it)" >&2
        exit 1
    fi
    rm -rf "$SEED_TARGET.agent-containers.bak"
    cp -R "$SEED_TARGET" "$SEED_TARGET.agent-containers.bak"
    chown -R "$SEED_UID:$SEED_GID" "$SEED_TARGET.agent-containers.bak"
    rm -rf "$SEED_TARGET"
fi
# Do not preserve host-side metadata from a bind-mounted source. The source's
# ownership, mode, or timestamps may not be preservable under the helper's
# deliberately minimal capability set.
cp -R --no-preserve=mode,ownership,timestamps /tmp/agent-seed "$SEED_TARGET"
chown -R "$SEED_UID:$SEED_GID" "$SEED_TARGET"
"#;

/// Decant's database, mounted from a named volume.
pub const DECANT_DATA_TARGET: &str = "/var/lib/decant";

/// The port Decant listens on inside its container.
pub const DECANT_CONTAINER_PORT: u16 = 3000;

/// Decant's command: serve on every container interface (only the published port reaches
/// the host), polling every 45 seconds instead of watching the read-only sources.
pub const DECANT_COMMAND: &[&str] = &[
    "serve",
    "--host",
    "0.0.0.0",
    "--port",
    "3000",
    "--no-fs-watch",
    "--interval-ms",
    "45000",
];

/// Provider kinds whose endpoint Hermes reads, and the variable it reads it from.
pub fn hermes_base_url_env(provider_kind: &str) -> Option<&'static str> {
    match provider_kind {
        "anthropic" => Some("ANTHROPIC_BASE_URL"),
        "custom" | "openai" => Some("OPENAI_BASE_URL"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_has_no_preset_and_every_other_agent_has_its_own() {
        assert!(preset(AgentName::Custom).is_none());
        for agent in [
            AgentName::ClaudeCode,
            AgentName::Opencode,
            AgentName::Codex,
            AgentName::Hermes,
        ] {
            assert_eq!(preset(agent).map(|p| p.agent), Some(agent));
        }
    }

    #[test]
    fn root_builds_for_1000_and_anyone_else_for_themselves() {
        assert_eq!(build_ids(0, 0), (1000, 1000, true));
        assert_eq!(build_ids(1001, 0), (1000, 1000, true));
        assert_eq!(build_ids(1001, 1002), (1001, 1002, false));
    }

    #[test]
    fn only_hermes_gets_chown_and_dac_override() {
        for preset in [&CLAUDE_CODE, &OPENCODE, &CODEX] {
            assert!(!preset.capabilities.contains(&Capability::DacOverride));
        }
        assert!(HERMES.capabilities.contains(&Capability::Chown));
        assert!(HERMES.capabilities.contains(&Capability::DacOverride));
    }

    #[test]
    fn seed_script_matches_the_python_string_value() {
        // The Python source writes `'%s\\n'` (the two characters `\n` in the script) and ends a
        // line with a backslash, which the non-raw Python literal turns into a continuation.
        assert!(SEED_COPY_SCRIPT.contains(r"printf '%s\n' "));
        assert!(SEED_COPY_SCRIPT.contains("| sort -z             | xargs -0 -r sha256sum"));
        assert!(SEED_COPY_SCRIPT.starts_with("set -eu\nhash_tree() {\n"));
        assert!(SEED_COPY_SCRIPT.ends_with("chown -R \"$SEED_UID:$SEED_GID\" \"$SEED_TARGET\"\n"));
    }
}
