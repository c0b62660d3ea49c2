//! Starter profiles for `agentc init`: one commented template per agent, filled from the
//! command line's options, that validates as written.

use agentc_policy::AgentName;

use crate::error::LifecycleError;

/// The egress modes a starter profile offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EgressChoice {
    /// No network at all.
    Deny,
    /// Only the listed hosts (enforced by agentc's egress proxy, outside the container).
    Allowlist,
}

/// What `agentc init` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitOptions {
    /// The agent.
    pub agent: AgentName,
    /// The profile's name.
    pub name: String,
    /// The image reference (required for `custom`).
    pub image: Option<String>,
    /// The egress mode; `None` takes the agent's default (`allowlist` for the presets, `deny`
    /// for `custom` unless hosts are given).
    pub egress: Option<EgressChoice>,
    /// Hosts to allow; empty takes the agent's default hosts under `allowlist`.
    pub hosts: Vec<String>,
}

/// The hosts each agent needs to reach its model provider by default (agent-containers'
/// example allowlists).
pub fn default_hosts(agent: AgentName) -> &'static [&'static str] {
    match agent {
        AgentName::ClaudeCode => &["api.anthropic.com"],
        AgentName::Codex => &["api.openai.com", "auth.openai.com", "chatgpt.com"],
        AgentName::Opencode => &["opencode.ai", "models.dev"],
        AgentName::Hermes | AgentName::Custom => &[],
    }
}

/// A profile name made from a file name's stem, when the stem is one: `claude-dev.toml` is
/// `claude-dev`; `My Profile.toml` is not a name.
pub fn name_from_stem(stem: &str) -> Option<String> {
    is_profile_name(stem).then(|| stem.to_string())
}

/// `^[a-z][a-z0-9_-]{0,62}$`, the profile's `name`.
pub fn is_profile_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z'))
        && name.len() <= 63
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))
}

/// A TOML string literal.
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn list(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|item| quoted(item)).collect();
    format!("[{}]", items.join(", "))
}

/// Where an agent's home is in its image, for the seed example.
fn home(agent: AgentName) -> &'static str {
    match agent {
        AgentName::ClaudeCode => "/home/claude",
        AgentName::Codex => "/home/codex",
        AgentName::Opencode => "/home/opencode",
        AgentName::Hermes => "/opt/data",
        AgentName::Custom => "/home/user",
    }
}

fn title(agent: AgentName) -> &'static str {
    match agent {
        AgentName::ClaudeCode => "Claude Code",
        AgentName::Codex => "Codex",
        AgentName::Opencode => "OpenCode",
        AgentName::Hermes => "Hermes",
        AgentName::Custom => "a custom long-lived sandbox",
    }
}

/// The provider example of each preset: kind, key variable, and the host the key is for.
fn provider(agent: AgentName) -> Option<(&'static str, &'static str, &'static str)> {
    match agent {
        AgentName::ClaudeCode | AgentName::Hermes => {
            Some(("anthropic", "ANTHROPIC_API_KEY", "api.anthropic.com"))
        }
        AgentName::Codex | AgentName::Opencode => {
            Some(("openai", "OPENAI_API_KEY", "api.openai.com"))
        }
        AgentName::Custom => None,
    }
}

/// The commented `[provider]` block, its words saying what this egress does with the key: the
/// proxy holds it when an allowlist with hosts runs it (the key's host among them, or to be
/// added, since the proxy lets only listed hosts through), else the key would enter the
/// sandbox's environment.
fn provider_block(kind: &str, key: &str, host: &str, proxy: bool, hosts: &[String]) -> String {
    let held = if !proxy {
        format!(
            "# name. With this [egress] agentc's egress proxy does not run, so the key would be\n\
             # passed into the sandbox's environment (`agentc explain` lists it there); an\n\
             # allowlist with hosts, {host} among them, has the proxy hold it instead. Without\n"
        )
    } else if hosts.iter().any(|listed| listed == host) {
        "# name, and hands it to the egress proxy, which sets it on requests to the\n\
         # provider's host only: the sandbox holds a placeholder, never the key. Without\n"
            .to_string()
    } else {
        format!(
            "# name, and hands it to the egress proxy, which sets it on requests to the\n\
             # provider's host only: the sandbox holds a placeholder, never the key. Add\n\
             # \"{host}\" to the hosts above with it (the proxy lets only those through). Without\n"
        )
    };
    format!(
        "\n# The model provider. agentc reads its key from your environment at launch, by\n\
         {held}\
         # this block (or a [credentials] table) the agent gets no key at all, and\n\
         # `agentc explain` says so:\n\
         # [provider]\n\
         # kind = \"{kind}\"\n\
         # api_key_env = \"{key}\"\n"
    )
}

/// The starter profile's text, or why the options cannot make one.
pub fn template(options: &InitOptions) -> Result<String, LifecycleError> {
    let init_error = |option: &str, message: String, hint: &str| LifecycleError::Init {
        option: option.to_string(),
        message,
        hint: hint.to_string(),
    };
    if !is_profile_name(&options.name) {
        return Err(init_error(
            "--name",
            format!("{:?} is not a profile name", options.name),
            "a name is a lower-case letter, then up to 62 lower-case letters, digits, `-` or `_`",
        ));
    }
    let values = options
        .image
        .iter()
        .map(|image| ("--image", image))
        .chain(options.hosts.iter().map(|host| ("--host", host)));
    for (option, value) in values {
        if value.chars().any(char::is_control) {
            return Err(init_error(
                option,
                format!("{value:?} holds a control character"),
                "pass the value on one line, without tabs or escapes",
            ));
        }
    }
    let custom = options.agent == AgentName::Custom;
    if custom && options.image.is_none() {
        return Err(init_error(
            "--image",
            "a custom profile runs an image of your choice and needs --image".to_string(),
            "pass --image REF, such as --image debian:stable-slim",
        ));
    }
    let egress = options
        .egress
        .unwrap_or(if custom && options.hosts.is_empty() {
            EgressChoice::Deny
        } else {
            EgressChoice::Allowlist
        });
    if egress == EgressChoice::Deny && !options.hosts.is_empty() {
        return Err(init_error(
            "--host",
            "--host lists hosts to allow, but egress is deny".to_string(),
            "add --egress allowlist, or leave out --host",
        ));
    }
    let hosts: Vec<String> = if options.hosts.is_empty() {
        default_hosts(options.agent)
            .iter()
            .map(|host| host.to_string())
            .collect()
    } else {
        options.hosts.clone()
    };
    let name = &options.name;
    let agent = options.agent.as_str();
    let mut out = format!(
        "# agentc profile {name:?}: {}, written by `agentc init`.\n\
         #\n\
         #   agentc validate {name}.toml    checks it and every launch it defines\n\
         #   agentc explain {name}.toml     every value with its origin, then the security findings\n\
         #   agentc plan {name}.toml        what its launches would create, offline\n\
         #   agentc doctor {name}.toml      whether this machine can run it\n\
         #\n\
         # Every field is in `agentc schema` and docs/profiles.md (in agentc's repository).\n\n\
         name = {}\nagent = {}\n",
        title(options.agent),
        quoted(name),
        quoted(agent),
    );
    out.push_str("\n[image]\n");
    if custom {
        let image = options.image.as_deref().unwrap_or_default();
        out.push_str(&format!(
            "# The image runs with its entrypoint; `command` keeps it alive as a long-lived\n\
             # sandbox, which `agentc run` starts detached (`agentc ps`, `agentc rm`).\n\
             ref = {}\n\
             command = [\"tail\", \"-f\", \"/dev/null\"]\n\
             # docker's init as PID 1: it passes `agentc stop`'s SIGTERM on (the keep-alive\n\
             # would ignore it as PID 1 and be killed after 10 s) and reaps zombies.\n\
             init = true\n\
             # user = \"1000:1000\"        # the image's user by default\n",
            quoted(image)
        ));
    } else {
        out.push_str(&format!(
            "# The agent's image; `{agent}:latest` unless set. `agentc build` (or `agentc apply`,\n\
             # when it is missing) builds it from agentc's bundled {agent} context, for your uid:\n\
             # the agent as a non-root user, no firewall, no capability (`agentc image context\n\
             # {agent} DIR` writes the context out; `--build-arg AGENT_VERSION=X` pins the agent).\n\
             # To extend it, put a Dockerfile `FROM {agent}:latest` in a directory beside this\n\
             # file, add build_context = \"image\", and set ref to a tag of your own.\n"
        ));
        match &options.image {
            Some(image) => out.push_str(&format!("ref = {}\n", quoted(image))),
            None => out.push_str(&format!("# ref = \"{agent}:latest\"\n")),
        }
        out.push_str("# build_context = \"image\"\n");
    }
    out.push_str("\n[egress]\n");
    match (egress, hosts.is_empty()) {
        (EgressChoice::Deny, _) => out.push_str(
            "# deny: the container has no network at all (the kernel enforces it).\n\
             mode = \"deny\"\n",
        ),
        (EgressChoice::Allowlist, false) => out.push_str(&format!(
            "# allowlist: agentc's egress proxy enforces it outside the container, which joins\n\
             # only an internal network whose one way out is the proxy (`agentc explain` shows\n\
             # it; every request is a line in the proxy's log). enforce = \"image\" hands the\n\
             # list to the image's own firewall instead. \"deny\" gives the container no\n\
             # network; \"unrestricted\" is reported at high severity.\n\
             mode = \"allowlist\"\n\
             hosts = {}\n",
            list(&hosts)
        )),
        (EgressChoice::Allowlist, true) if custom => out.push_str(
            "# An allowlist without hosts is enforced by nothing (a custom image has no\n\
             # firewall): `agentc explain` reports it as not enforced (egress-unenforced). List\n\
             # hosts to have agentc's egress proxy enforce it, or write \"deny\" for no network.\n\
             mode = \"allowlist\"\n\
             hosts = []\n",
        ),
        (EgressChoice::Allowlist, true) => out.push_str(
            "# An allowlist without hosts: agentc's egress proxy does not run, and only the\n\
             # image's own firewall (AGENT_ALLOWED_EGRESS, inside the container) blocks every\n\
             # host. List hosts to have the proxy enforce them outside the container, or write\n\
             # \"deny\" for no network at all.\n\
             mode = \"allowlist\"\n\
             hosts = []\n",
        ),
    }
    if let Some((kind, key, host)) = provider(options.agent) {
        let proxy = egress == EgressChoice::Allowlist && !hosts.is_empty();
        out.push_str(&provider_block(kind, key, host, proxy, &hosts));
    }
    out.push_str(
        "\n# Limits; the defaults are shown. \"off\" removes one, and `agentc explain` reports it.\n\
         [resources]\n\
         # memory = \"4g\"\n\
         # pids_limit = 512\n\
         # cpus = 2\n",
    );
    if custom {
        out.push_str(
            "\n# Ports published on 127.0.0.1 with a random host port (`agentc ps` shows them):\n\
             [network]\n\
             # publish = [8080]\n\
             \n\
             # A custom sandbox mounts no workspace unless asked:\n\
             [workspace]\n\
             # mount = true               # the workspace at /workspace/<directory name>\n",
        );
    } else {
        out.push_str(&format!(
            "\n# The workspace (--workspace, default the current directory) is mounted writable at\n\
             # /workspace/<directory name>:\n\
             [workspace]\n\
             # read_only = true           # to let the agent read but not change it\n\
             \n\
             # Files copied once into the agent's home volume: `agentc apply` copies new and\n\
             # changed ones; a target that differs is never overwritten unless\n\
             # on_conflict = \"replace\" (which keeps a .agent-containers.bak backup):\n\
             # [[mounts]]\n\
             # type = \"seed\"\n\
             # source = \"seeds/AGENTS.md\"\n\
             # target = \"{}/AGENTS.md\"\n",
            home(options.agent)
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
