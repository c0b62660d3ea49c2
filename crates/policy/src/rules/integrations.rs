//! The agent integrations: `[packages]`, `[provider]`, `[langfuse]` and
//! `configuration_import`: their checks (which agents support what, and the egress Langfuse
//! needs) and how each agent receives them (variables, arguments, OpenCode's configuration).

use crate::check::Checker;
use crate::context::{EnvBuilder, Resolver};
use crate::error::PolicyError;
use crate::inputs::PathKind;
use crate::presets::{self, Preset};
use crate::profile::{AgentName, ConfigFormat, EgressMode, PackageSet, Profile};
use crate::text::{http_url_host, trim_url};

/// Packages, provider, Langfuse and the configuration import, one field at a time, then what
/// spans them.
pub(crate) fn check(ck: &mut Checker, profile: &Profile) {
    packages(ck, &profile.packages);
    if let Some(provider) = &profile.provider {
        ck.line(
            "provider.kind",
            &provider.kind,
            "the provider, such as `anthropic`",
        );
        if let Some(endpoint) = &provider.endpoint {
            ck.http_url("provider.endpoint", endpoint);
        }
        if let Some(model) = &provider.model {
            ck.line("provider.model", model, "the model name");
        }
        if let Some(name) = &provider.api_key_env {
            ck.env_name("provider.api_key_env", name);
        }
    }
    langfuse(ck, profile);
    configuration_import(ck, profile);
}

fn packages(ck: &mut Checker, packages: &PackageSet) {
    let lists = [
        ("apt", &packages.apt),
        ("npm", &packages.npm),
        ("uv_tools", &packages.uv_tools),
        ("uv_libraries", &packages.uv_libraries),
    ];
    for (list, names) in lists {
        for (index, name) in names.iter().enumerate() {
            // A package name reaches a package manager's command line at build time: one
            // word, never an option (`--index-url=...`, `-y`).
            ck.token(
                &format!("packages.{list}[{index}]"),
                name,
                "one package name",
            );
        }
    }
}

fn langfuse(ck: &mut Checker, profile: &Profile) {
    let langfuse = &profile.langfuse;
    if let Some(url) = &langfuse.base_url {
        ck.http_url("langfuse.base_url", url);
    }
    ck.env_name("langfuse.public_key_env", &langfuse.public_key_env);
    ck.env_name("langfuse.secret_key_env", &langfuse.secret_key_env);
    if let Some(environment) = &langfuse.environment {
        ck.line(
            "langfuse.environment",
            environment,
            "the tracing environment name",
        );
    }
    if let Some(user) = &langfuse.user_id {
        ck.line("langfuse.user_id", user, "the user id attached to traces");
    }
    if langfuse.enabled && langfuse.base_url.is_none() {
        ck.fail_when(
            &["langfuse.enabled"],
            "langfuse.base_url",
            "langfuse.enabled requires langfuse.base_url",
            "add base_url, the langfuse endpoint, such as \"https://cloud.langfuse.com\"",
        );
    }
    if langfuse.public_key_env == langfuse.secret_key_env {
        ck.fail_when(
            &["langfuse.public_key_env"],
            "langfuse.secret_key_env",
            "langfuse.public_key_env and langfuse.secret_key_env must differ",
            "name two different variables, such as LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY",
        );
    }
    if !langfuse.enabled {
        return;
    }
    if profile.agent == AgentName::Custom {
        // Refused as a whole (see `identity`).
        return;
    }
    if !matches!(
        profile.agent,
        AgentName::ClaudeCode | AgentName::Codex | AgentName::Opencode
    ) {
        ck.fail(
            "langfuse.enabled",
            format!(
                "langfuse.enabled is supported only for claude-code, codex and opencode, not {:?}",
                profile.agent.as_str()
            ),
            "remove [langfuse], or use it with a claude-code, codex or opencode profile",
        );
        return;
    }
    let egress = &profile.egress;
    if egress.gateway_host.is_some() {
        return;
    }
    let depends = ["egress.mode", "egress.hosts", "egress.gateway_host"];
    match egress.mode {
        EgressMode::Deny => ck.fail_when(
            &depends,
            "langfuse.base_url",
            "langfuse.enabled needs egress to the langfuse host, but egress.mode is deny",
            "set egress.mode = \"allowlist\" and add the langfuse host to egress.hosts, or \
             configure an egress gateway",
        ),
        EgressMode::Allowlist => {
            let url = langfuse.base_url.as_deref().unwrap_or_default();
            let Ok(host) = http_url_host(url) else {
                return;
            };
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            let allowed = egress.hosts.iter().any(|entry| {
                let entry = entry.trim().to_ascii_lowercase();
                entry == host || entry == bare
            });
            if !allowed {
                ck.fail_when(
                    &depends,
                    "langfuse.base_url",
                    format!("langfuse.base_url host {host} is not in egress.hosts"),
                    format!("add \"{bare}\" to egress.hosts so traces can reach langfuse"),
                );
            }
        }
        EgressMode::Unrestricted => {}
    }
}

/// agent-containers' `configuration_target`: the import lands inside the agent's home, in a
/// format the agent reads; it excludes configuration mounts.
fn configuration_import(ck: &mut Checker, profile: &Profile) {
    let Some(import) = &profile.configuration_import else {
        return;
    };
    ck.line(
        "configuration_import.source",
        &import.source,
        "the configuration file's path",
    );
    if let Some(target) = &import.target {
        if ck.line(
            "configuration_import.target",
            target,
            "where to import the configuration",
        ) {
            ck.clean_container_path("configuration_import.target", target.trim());
        }
    }
    if let Some(preset) = presets::preset(profile.agent) {
        let home = preset.home_path;
        if let Some(target) = &import.target {
            if !target.starts_with(&format!("{home}/")) {
                ck.fail(
                    "configuration_import.target",
                    format!("configuration_import.target must be inside {home}"),
                    format!(
                        "the import is written into the agent's home volume; use a path under \
                         {home}/ or remove target for the agent's default"
                    ),
                );
            }
        }
        let allowed: &[ConfigFormat] = match profile.agent {
            AgentName::ClaudeCode | AgentName::Opencode => {
                &[ConfigFormat::Json, ConfigFormat::Jsonc]
            }
            AgentName::Codex => &[ConfigFormat::Toml],
            AgentName::Hermes => &[ConfigFormat::Yaml],
            AgentName::Custom => &[],
        };
        if let Some(format) = import.format.filter(|format| !allowed.contains(format)) {
            let names: Vec<&str> = allowed.iter().map(|format| format.as_str()).collect();
            ck.fail(
                "configuration_import.format",
                format!(
                    "{} reads {} configuration, not {}",
                    profile.agent.as_str(),
                    names.join(" or "),
                    format.as_str()
                ),
                format!("set format to {:?} or remove it", names[0]),
            );
        }
    }
    if !profile.configuration_mounts.is_empty() {
        ck.fail(
            "configuration_import",
            "configuration_import and configuration_mounts are mutually exclusive",
            "keep one way to provide the agent's configuration: import it into the home \
             volume, or mount the files",
        );
    }
}

impl Resolver<'_> {
    /// The configuration import's source must be a file: it is imported before the run.
    pub fn import_source(&self) -> Result<(), PolicyError> {
        if let Some(import) = &self.profile.configuration_import {
            self.require_path(
                "configuration_import.source",
                &import.source,
                PathKind::File,
                "configuration import source",
            )?;
        }
        Ok(())
    }

    /// The provider key (a secret), endpoint and model variables, and OpenCode's config.
    pub fn provider_env(&self, env: &mut EnvBuilder, preset: &Preset) -> Result<(), PolicyError> {
        let profile = self.profile;
        let provider = profile.provider.as_ref();
        if let Some(name) = provider.and_then(|provider| provider.api_key_env.as_ref()) {
            env.secret(name, "provider.api_key_env");
        }
        match (preset.agent, provider) {
            (AgentName::ClaudeCode, Some(provider)) => {
                if let Some(endpoint) = &provider.endpoint {
                    env.literal(
                        "ANTHROPIC_BASE_URL",
                        &trim_url(endpoint),
                        "provider.endpoint",
                    );
                }
                if let Some(model) = &provider.model {
                    env.literal("ANTHROPIC_MODEL", model, "provider.model");
                }
            }
            (AgentName::Hermes, Some(provider)) => {
                if let Some(endpoint) = &provider.endpoint {
                    let kind = &provider.kind;
                    let name = presets::hermes_base_url_env(kind).ok_or_else(|| {
                        self.invalid(
                            "provider.kind",
                            format!(
                                "provider endpoint mapping is not implemented for hermes provider {kind:?}"
                            ),
                            "use provider kind anthropic, openai or custom with an endpoint",
                        )
                    })?;
                    env.literal(name, &trim_url(endpoint), "provider.endpoint");
                }
            }
            _ => {}
        }
        let wants_opencode_config = profile.langfuse.enabled
            || provider
                .is_some_and(|provider| provider.endpoint.is_some() || provider.model.is_some());
        if preset.agent == AgentName::Opencode && wants_opencode_config {
            let field = if provider.is_some() {
                "provider"
            } else {
                "langfuse.enabled"
            };
            env.literal(
                "AGENT_OPENCODE_CONFIG_JSON",
                &crate::rules::integrations::opencode::config(profile),
                field,
            );
        }
        Ok(())
    }

    /// Langfuse tracing variables; the keys are secrets passed through by name.
    pub fn langfuse_env(&self, env: &mut EnvBuilder, preset: &Preset) {
        let config = &self.profile.langfuse;
        let Some(base_url) = config.base_url.as_deref().filter(|_| config.enabled) else {
            return;
        };
        let opencode = preset.agent == AgentName::Opencode;
        env.literal("TRACE_TO_LANGFUSE", "true", "langfuse.enabled");
        env.secret(&config.public_key_env, "langfuse.public_key_env");
        env.literal(
            "AGENT_LANGFUSE_PUBLIC_KEY_ENV",
            &config.public_key_env,
            "langfuse.public_key_env",
        );
        env.secret(&config.secret_key_env, "langfuse.secret_key_env");
        env.literal(
            "AGENT_LANGFUSE_SECRET_KEY_ENV",
            &config.secret_key_env,
            "langfuse.secret_key_env",
        );
        let base_name = if opencode {
            "LANGFUSE_BASEURL"
        } else {
            "LANGFUSE_BASE_URL"
        };
        env.literal(base_name, &trim_url(base_url), "langfuse.base_url");
        if let Some(environment) = &config.environment {
            let name = if opencode {
                "LANGFUSE_ENVIRONMENT"
            } else {
                "LANGFUSE_TRACING_ENVIRONMENT"
            };
            env.literal(name, environment, "langfuse.environment");
        }
        if let Some(user) = &config.user_id {
            env.literal("LANGFUSE_USER_ID", user, "langfuse.user_id");
        }
    }

    /// Provider settings carried as agent arguments (Codex and Hermes).
    pub fn provider_args(&self, preset: &Preset) -> Vec<String> {
        let profile = self.profile;
        let provider = profile.provider.as_ref();
        let mut args: Vec<String> = Vec::new();
        let mut push = |items: &[&str]| args.extend(items.iter().map(|item| item.to_string()));
        match preset.agent {
            AgentName::Codex => {
                if profile.langfuse.enabled {
                    push(&[
                        "--config",
                        "features.hooks=true",
                        "--config",
                        "plugins.\"tracing@codex-observability-plugin\".enabled=true",
                    ]);
                }
                let Some(provider) = provider else {
                    return args;
                };
                if let Some(model) = &provider.model {
                    push(&["--model", model]);
                }
                if let Some(endpoint) = &provider.endpoint {
                    let url = toml_string(&trim_url(endpoint));
                    let kind = &provider.kind;
                    if kind == "openai" {
                        push(&["--config", &format!("openai_base_url=\"{url}\"")]);
                    } else {
                        let id = "agent_containers";
                        push(&[
                            "--config",
                            &format!("model_provider=\"{id}\""),
                            "--config",
                            &format!("model_providers.{id}.name=\"{kind}\""),
                            "--config",
                            &format!("model_providers.{id}.base_url=\"{url}\""),
                            "--config",
                            &format!("model_providers.{id}.wire_api=\"responses\""),
                        ]);
                    }
                }
            }
            AgentName::Hermes => {
                if let Some(provider) = provider {
                    if !provider.kind.is_empty() {
                        push(&["--provider", &provider.kind]);
                    }
                    if let Some(model) = &provider.model {
                        push(&["--model", model]);
                    }
                }
            }
            _ => {}
        }
        args
    }
}

/// Escapes a value embedded in a Codex TOML string override.
fn toml_string(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
}

pub(crate) mod opencode;
