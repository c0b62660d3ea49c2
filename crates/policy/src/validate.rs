//! The rules of profile v1 that the TOML types alone cannot express.
//!
//! Every rule of agent-containers' `profile.py` is here, plus its render-time Langfuse egress
//! rule and agentc's own fields (`[image]`, `[resources]`, `[logging]`, `[network]`,
//! `[security]`). Rules run in a fixed order and the first failure wins, so a profile always
//! reports the same error. Each error names its field path (with the index of a list item:
//! `mounts[1].target`) in both the location and the message, and carries a hint.
//!
//! Messages never echo the value of an environment-variable-name field: a user who pastes a
//! key where its variable's name belongs must not see the key printed back.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};

use crate::capability::Capability;
use crate::error::PolicyError;
use crate::findings;
use crate::load::{closest, LoadedProfile};
use crate::profile::{
    AgentName, CpuCount, DecantConfig, LangfuseConfig, MountConfig, MountType, PackageSet,
    PortConfig, Profile, SCHEMA_VERSION,
};
use crate::units;

/// Docker's minimum memory limit (6 MiB).
pub const MIN_MEMORY_BYTES: u64 = 6 * 1024 * 1024;
/// The smallest log rotation size agentc accepts (1 KiB).
pub const MIN_LOG_SIZE_BYTES: u64 = 1024;
/// The largest CPU count agentc accepts, in billionths of a CPU.
pub const MAX_NANO_CPUS: u64 = 1024 * 1_000_000_000;
/// The smallest CPU quota docker honours, 0.01 CPU: below it the kernel's CFS quota either
/// truncates to no limit at all or is refused when the container starts.
pub const MIN_NANO_CPUS: u64 = 10_000_000;
/// The largest `resources.pids_limit` agentc accepts (the kernel's `pid_max` limit).
pub const MAX_PIDS_LIMIT: i64 = 4_194_304;
/// The most rotated log files agentc keeps.
pub const MAX_LOG_FILES: i64 = 100;
/// The largest size in bytes (`resources.memory`, `resources.shm_size`, and so the memory
/// swap limit) agentc accepts: 2^53 - 1, just under 8 PiB.
///
/// The docker CLI parses `--memory`, `--memory-swap` and `--shm-size` through a 64-bit float
/// (go-units `RAMInBytes`), which holds every integer only up to 2^53; above it most sizes
/// would silently change. Both backends refuse larger sizes
/// (`agentc-backend-cli` and `agentc-backend-api` render with this same limit), so the
/// policy refuses them first, naming the profile field.
pub const MAX_SIZE_BYTES: u64 = (1 << 53) - 1;

type Outcome = Result<(), PolicyError>;

/// Checks every rule of profile v1; the first failure, in a fixed order, is returned.
///
/// [`crate::load::load`] calls this; call it again after changing a loaded profile in code.
pub fn validate(loaded: &LoadedProfile) -> Result<(), PolicyError> {
    let check = Checker { loaded };
    let profile = &loaded.profile;
    check.identity(profile)?;
    check.agent_scope(profile)?;
    check.packages(&profile.packages)?;
    check.provider(profile)?;
    check.proxy(profile)?;
    check.egress(profile)?;
    check.decant(&profile.decant)?;
    check.langfuse(&profile.langfuse)?;
    check.configuration_import(profile)?;
    for (index, mount) in profile.configuration_mounts.iter().enumerate() {
        check.mount(&format!("configuration_mounts[{index}]"), mount)?;
    }
    for (index, mount) in profile.mounts.iter().enumerate() {
        check.mount(&format!("mounts[{index}]"), mount)?;
    }
    check.mount_overlaps(profile)?;
    check.integrations(profile)?;
    check.image(profile)?;
    check.resources(profile)?;
    check.logging(profile)?;
    check.network(profile)?;
    check.security(profile)?;
    check.dangerous(profile)?;
    Ok(())
}

struct Checker<'a> {
    loaded: &'a LoadedProfile,
}

impl Checker<'_> {
    fn fail(
        &self,
        field: &str,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> PolicyError {
        PolicyError::Invalid {
            location: self.loaded.location(field),
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// Non-blank text on one line, without NUL bytes.
    fn line(&self, field: &str, value: &str, what: &str) -> Outcome {
        if value.trim().is_empty() {
            return Err(self.fail(
                field,
                format!("{field} is blank"),
                format!("write {what}, or remove the field"),
            ));
        }
        if value.contains(['\n', '\r', '\0']) {
            return Err(self.fail(
                field,
                format!("{field} must be a single line without nul bytes"),
                format!("write {what} on one line"),
            ));
        }
        // Regression (`escape_sequences_in_text_fields_are_refused`): other control
        // characters (ESC, BEL) passed, and `agentc explain` or a shell line printed them raw,
        // letting a profile rewrite the reviewer's terminal. A tab is harmless and allowed.
        if value.chars().any(|c| c.is_control() && c != '\t') {
            return Err(self.fail(
                field,
                format!("{field} must not contain control characters"),
                format!("write {what} as plain text"),
            ));
        }
        Ok(())
    }

    /// Non-blank text without whitespace or control characters (hosts, addresses).
    fn token(&self, field: &str, value: &str, what: &str) -> Outcome {
        self.line(field, value, what)?;
        if let Some(problem) = unprintable(value.trim()) {
            return Err(self.fail(
                field,
                format!("{field} must not contain {problem}"),
                format!("write {what} as a single word"),
            ));
        }
        // Regression (`hosts_and_users_starting_with_a_dash_are_refused`): no host, address
        // or user name starts with '-', and the tools that receive these values (ssh in the
        // egress gateway, curl) would read one as an option (`-oProxyCommand=...`).
        if value.trim().starts_with('-') {
            return Err(self.fail(
                field,
                format!("{field} must not start with '-'"),
                format!(
                    "write {what}; a value starting with '-' would be read as an option by the \
                     tools that receive it"
                ),
            ));
        }
        Ok(())
    }

    fn env_name(&self, field: &str, value: &str) -> Outcome {
        if !is_env_name(value) {
            return Err(self.fail(
                field,
                format!("{field} must be an upper-case environment variable name"),
                "write the NAME of the variable that holds the secret, such as `API_KEY` \
                 (A-Z, 0-9 and _, not starting with a digit), never the secret itself",
            ));
        }
        // The docker CLI passes `--env=NAME` from its own environment, and reads the DOCKER_*
        // variables itself: setting DOCKER_CONFIG or DOCKER_CONTEXT so that the agent gets a
        // secret would also change what docker does. DOCKER_HOST is refused with its own
        // message (and allow field) by the dangerous-request checks.
        if value.starts_with("DOCKER_") && value != crate::findings::DOCKER_HOST {
            return Err(self.fail(
                field,
                format!("{field} {value} is a variable the docker CLI reads itself"),
                "name a variable of your own for the secret, such as `AGENT_API_KEY`; the \
                 docker CLI would act on this one too",
            ));
        }
        Ok(())
    }

    fn http_url(&self, field: &str, value: &str) -> Outcome {
        if let Err(reason) = http_url_host(value) {
            return Err(self.fail(
                field,
                format!("{field} is not an http(s) url with a host: {reason}"),
                "write a url such as `https://host.example:8443/path`",
            ));
        }
        Ok(())
    }

    fn port(&self, field: &str, port: i64) -> Outcome {
        if !(1..=65535).contains(&port) {
            return Err(self.fail(
                field,
                format!("{field} must be between 1 and 65535, not {port}"),
                "use a tcp port number from 1 to 65535",
            ));
        }
        Ok(())
    }

    fn volume_name(&self, field: &str, value: &str) -> Outcome {
        if !is_volume_name(value) {
            return Err(self.fail(
                field,
                format!("{field} is not a docker volume name"),
                "start with a letter or digit and use only A-Z, a-z, 0-9, _, . or -, \
                 at most 255 characters",
            ));
        }
        Ok(())
    }

    fn image_reference(&self, field: &str, value: &str) -> Outcome {
        if value.is_empty() {
            return Err(self.fail(
                field,
                format!("{field} is empty"),
                "write an image reference such as `ghcr.io/owner/image:tag`",
            ));
        }
        if let Some(problem) = unprintable(value) {
            return Err(self.fail(
                field,
                format!("{field} must not contain {problem}"),
                "write a single image reference such as `ghcr.io/owner/image:tag`",
            ));
        }
        if value.starts_with('-') {
            return Err(self.fail(
                field,
                format!("{field} must not start with '-'"),
                "an image reference starting with '-' would be read as a docker option; \
                 write the image's name",
            ));
        }
        Ok(())
    }

    fn identity(&self, profile: &Profile) -> Outcome {
        if profile.schema_version != SCHEMA_VERSION {
            return Err(self.fail(
                "schema_version",
                format!(
                    "unsupported schema_version {}; this agentc reads version {SCHEMA_VERSION}",
                    profile.schema_version
                ),
                format!("set schema_version = {SCHEMA_VERSION}, or use the agentc that wrote this profile"),
            ));
        }
        if !is_profile_name(profile.name.trim()) {
            return Err(self.fail(
                "name",
                format!("name {:?} is not a valid profile name", profile.name),
                "start with a lower-case letter and use only a-z, 0-9, _ or -, at most 63 characters",
            ));
        }
        if let Some(volume) = &profile.home_volume {
            self.volume_name("home_volume", volume.trim())?;
        }
        Ok(())
    }

    /// What `agent = "custom"` requires and forbids, and the `[image]` fields only it may use.
    fn agent_scope(&self, profile: &Profile) -> Outcome {
        let image = &profile.image;
        if profile.agent != AgentName::Custom {
            let custom_only = [
                ("image.entrypoint", image.entrypoint.is_some()),
                ("image.command", image.command.is_some()),
                ("image.user", image.user.is_some()),
            ];
            if let Some((field, _)) = custom_only.iter().find(|(_, set)| *set) {
                return Err(self.fail(
                    field,
                    format!(
                        "{field} is only for agent \"custom\", not {:?}",
                        profile.agent.as_str()
                    ),
                    "agent images bring their own entrypoint, command and user; remove the \
                     field, or set agent = \"custom\" to run an image of your own",
                ));
            }
            return Ok(());
        }
        if image.reference.is_none() {
            return Err(self.fail(
                "image.ref",
                "agent \"custom\" requires image.ref",
                "add `[image]` with `ref = \"IMAGE:TAG\"`, the image the sandbox runs",
            ));
        }
        const NO_HOME: &str = "custom sandboxes run their own image and have no agent home";
        let forbidden = [
            (
                "home_volume",
                profile.home_volume.is_some(),
                "the home volume",
            ),
            (
                "packages",
                profile.packages != PackageSet::default(),
                "build-time packages",
            ),
            ("provider", profile.provider.is_some(), "a model provider"),
            (
                "langfuse",
                profile.langfuse != LangfuseConfig::default(),
                "langfuse tracing",
            ),
            (
                "decant",
                profile.decant != DecantConfig::default(),
                "decant",
            ),
            (
                "configuration_import",
                profile.configuration_import.is_some(),
                "agent configuration imports",
            ),
            (
                "configuration_mounts",
                !profile.configuration_mounts.is_empty(),
                "agent configuration mounts",
            ),
        ];
        if let Some((field, _, what)) = forbidden.iter().find(|(_, set, _)| *set) {
            let extra = if *field == "packages" {
                "; install packages in the custom image instead"
            } else {
                ""
            };
            return Err(self.fail(
                field,
                format!("{field} is not supported for agent \"custom\""),
                format!("remove {field}: {NO_HOME}, so {what} would have nothing to act on{extra}"),
            ));
        }
        if let Some(index) = profile
            .mounts
            .iter()
            .position(|m| m.kind == MountType::Seed)
        {
            let field = format!("mounts[{index}].type");
            return Err(self.fail(
                &field,
                format!("{field}: seed mounts are not supported for agent \"custom\""),
                format!(
                    "use type = \"bind\": seeds copy into the agent home volume, and {NO_HOME}"
                ),
            ));
        }
        Ok(())
    }

    fn packages(&self, packages: &PackageSet) -> Outcome {
        let lists = [
            ("apt", &packages.apt),
            ("npm", &packages.npm),
            ("uv_tools", &packages.uv_tools),
            ("uv_libraries", &packages.uv_libraries),
        ];
        for (list, names) in lists {
            for (index, name) in names.iter().enumerate() {
                // A package name reaches a package manager's command line at build time:
                // one word, never an option (`--index-url=...`, `-y`).
                self.token(
                    &format!("packages.{list}[{index}]"),
                    name,
                    "one package name",
                )?;
            }
        }
        Ok(())
    }

    fn provider(&self, profile: &Profile) -> Outcome {
        let Some(provider) = &profile.provider else {
            return Ok(());
        };
        self.line(
            "provider.kind",
            &provider.kind,
            "the provider, such as `anthropic`",
        )?;
        if let Some(endpoint) = &provider.endpoint {
            self.http_url("provider.endpoint", endpoint)?;
        }
        if let Some(model) = &provider.model {
            self.line("provider.model", model, "the model name")?;
        }
        if let Some(name) = &provider.api_key_env {
            self.env_name("provider.api_key_env", name)?;
        }
        Ok(())
    }

    fn proxy(&self, profile: &Profile) -> Outcome {
        let Some(proxy) = &profile.proxy else {
            return Ok(());
        };
        if let Some(url) = &proxy.http {
            self.http_url("proxy.http", url)?;
        }
        if let Some(url) = &proxy.https {
            self.http_url("proxy.https", url)?;
        }
        for (index, host) in proxy.no_proxy.iter().enumerate() {
            self.token(
                &format!("proxy.no_proxy[{index}]"),
                host,
                "one host, domain or address",
            )?;
        }
        if let Some(file) = &proxy.ca_file {
            self.line("proxy.ca_file", file, "the path of a CA bundle")?;
        }
        if let Some(dir) = &proxy.ca_dir {
            self.line(
                "proxy.ca_dir",
                dir,
                "the path of a directory of CA certificates",
            )?;
        }
        if proxy.ca_file.is_some() && proxy.ca_dir.is_some() {
            return Err(self.fail(
                "proxy",
                "proxy.ca_file and proxy.ca_dir are mutually exclusive",
                "keep one: a CA bundle file or a directory of certificates",
            ));
        }
        Ok(())
    }

    fn egress(&self, profile: &Profile) -> Outcome {
        let egress = &profile.egress;
        let mode = egress.mode.trim().to_ascii_lowercase();
        if !["deny", "allowlist", "unrestricted"].contains(&mode.as_str()) {
            return Err(self.fail(
                "egress.mode",
                format!("egress.mode {:?} is not an egress mode", egress.mode),
                "use \"deny\", \"allowlist\" or \"unrestricted\"",
            ));
        }
        for (index, host) in egress.hosts.iter().enumerate() {
            let field = format!("egress.hosts[{index}]");
            if host.trim() == "*" {
                return Err(self.fail(
                    &field,
                    format!("{field}: '*' is not a hostname"),
                    "to disable egress filtering entirely, set mode = \"unrestricted\" and remove \
                     the '*' entry; to allow specific hosts, name each one",
                ));
            }
            self.token(&field, host, "one host name")?;
        }
        if let Some(host) = &egress.gateway_host {
            self.token(
                "egress.gateway_host",
                host,
                "the gateway's host name or address",
            )?;
        }
        if let Some(port) = egress.gateway_port {
            self.port("egress.gateway_port", port)?;
        }
        if let Some(user) = &egress.gateway_user {
            self.token("egress.gateway_user", user, "the gateway's ssh user")?;
        }
        if let Some(host) = &egress.gateway_access_hostname {
            self.token(
                "egress.gateway_access_hostname",
                host,
                "the host name of the gateway",
            )?;
        }
        for (index, entry) in egress.gateway_bootstrap_allow.iter().enumerate() {
            let field = format!("egress.gateway_bootstrap_allow[{index}]");
            self.line(&field, entry, "an ip address or cidr")?;
            if !is_ip_or_cidr(entry.trim()) {
                return Err(self.fail(
                    &field,
                    format!("{field} {:?} is not an ip address or cidr", entry.trim()),
                    "write an address such as `192.0.2.10` or a network such as `10.0.0.0/8`",
                ));
            }
        }
        if let Some(file) = &egress.gateway_key_file {
            self.line(
                "egress.gateway_key_file",
                file,
                "the path of the ssh private key",
            )?;
        }
        if let Some(file) = &egress.gateway_known_hosts_file {
            self.line(
                "egress.gateway_known_hosts_file",
                file,
                "the path of the known-hosts file",
            )?;
        }
        match (&egress.gateway_host, egress.gateway_port) {
            (Some(_), None) => {
                return Err(self.fail(
                    "egress.gateway_host",
                    "egress.gateway_host requires egress.gateway_port",
                    "add gateway_port, the gateway's ssh port (usually 22)",
                ))
            }
            (None, Some(_)) => {
                return Err(self.fail(
                    "egress.gateway_port",
                    "egress.gateway_port requires egress.gateway_host",
                    "add gateway_host, or remove gateway_port",
                ))
            }
            _ => {}
        }
        if egress.gateway_host.is_none() {
            let options = [
                ("egress.gateway_user", egress.gateway_user.is_some()),
                (
                    "egress.gateway_access_hostname",
                    egress.gateway_access_hostname.is_some(),
                ),
                (
                    "egress.gateway_bootstrap_allow",
                    !egress.gateway_bootstrap_allow.is_empty(),
                ),
                ("egress.gateway_key_file", egress.gateway_key_file.is_some()),
                (
                    "egress.gateway_known_hosts_file",
                    egress.gateway_known_hosts_file.is_some(),
                ),
            ];
            if let Some((field, _)) = options.iter().find(|(_, set)| *set) {
                return Err(self.fail(
                    field,
                    format!("{field} requires egress.gateway_host"),
                    "gateway options configure an ssh gateway; add gateway_host and gateway_port, \
                     or remove the option",
                ));
            }
        }
        match (&egress.gateway_key_file, &egress.gateway_known_hosts_file) {
            (Some(_), None) => {
                return Err(self.fail(
                    "egress.gateway_known_hosts_file",
                    "egress.gateway_key_file requires egress.gateway_known_hosts_file",
                    "add gateway_known_hosts_file so the gateway's host key is verified",
                ))
            }
            (None, Some(_)) => {
                return Err(self.fail(
                    "egress.gateway_key_file",
                    "egress.gateway_known_hosts_file requires egress.gateway_key_file",
                    "add gateway_key_file, the ssh private key for the gateway",
                ))
            }
            _ => {}
        }
        if mode == "unrestricted" {
            if !egress.hosts.is_empty() {
                return Err(self.fail(
                    "egress.hosts",
                    "egress.hosts must be empty when egress.mode is unrestricted",
                    "remove the hosts, or set mode = \"allowlist\" to allow only them",
                ));
            }
            if egress.gateway_host.is_some() {
                return Err(self.fail(
                    "egress.gateway_host",
                    "egress.gateway_host cannot be used when egress.mode is unrestricted",
                    "remove the gateway, or set mode = \"allowlist\" or \"deny\" to route through it",
                ));
            }
        }
        Ok(())
    }

    fn decant(&self, decant: &DecantConfig) -> Outcome {
        for (index, name) in decant.source_profiles.iter().enumerate() {
            let field = format!("decant.source_profiles[{index}]");
            self.line(&field, name, "a profile name")?;
            if !is_profile_name(name.trim()) {
                return Err(self.fail(
                    &field,
                    format!("{field} {:?} is not a valid profile name", name.trim()),
                    "name a profile NAME whose file NAME.toml sits beside this one (a-z, 0-9, _ \
                     or -, starting with a letter)",
                ));
            }
        }
        if decant.enabled && decant.source_profiles.is_empty() {
            return Err(self.fail(
                "decant.source_profiles",
                "decant.enabled requires decant.source_profiles",
                "list the profiles whose sessions decant reads, such as source_profiles = [\"dev\"]",
            ));
        }
        if let Some(image) = &decant.image {
            self.image_reference("decant.image", image.trim())?;
        }
        if let Some(volume) = &decant.data_volume {
            self.volume_name("decant.data_volume", volume.trim())?;
        }
        self.token(
            "decant.bind_address",
            &decant.bind_address,
            "a host address such as 127.0.0.1",
        )?;
        self.port("decant.port", decant.port)
    }

    fn langfuse(&self, langfuse: &LangfuseConfig) -> Outcome {
        if let Some(url) = &langfuse.base_url {
            self.http_url("langfuse.base_url", url)?;
        }
        self.env_name("langfuse.public_key_env", &langfuse.public_key_env)?;
        self.env_name("langfuse.secret_key_env", &langfuse.secret_key_env)?;
        if let Some(environment) = &langfuse.environment {
            self.line(
                "langfuse.environment",
                environment,
                "the tracing environment name",
            )?;
        }
        if let Some(user) = &langfuse.user_id {
            self.line("langfuse.user_id", user, "the user id attached to traces")?;
        }
        if langfuse.enabled && langfuse.base_url.is_none() {
            return Err(self.fail(
                "langfuse.base_url",
                "langfuse.enabled requires langfuse.base_url",
                "add base_url, the langfuse endpoint, such as \"https://cloud.langfuse.com\"",
            ));
        }
        if langfuse.public_key_env == langfuse.secret_key_env {
            return Err(self.fail(
                "langfuse.secret_key_env",
                "langfuse.public_key_env and langfuse.secret_key_env must differ",
                "name two different variables, such as LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY",
            ));
        }
        Ok(())
    }

    fn configuration_import(&self, profile: &Profile) -> Outcome {
        let Some(import) = &profile.configuration_import else {
            return Ok(());
        };
        self.line(
            "configuration_import.source",
            &import.source,
            "the configuration file's path",
        )?;
        if let Some(target) = &import.target {
            self.line(
                "configuration_import.target",
                target,
                "where to import the configuration",
            )?;
            self.clean_container_path("configuration_import.target", target.trim())?;
        }
        if let Some(format) = &import.format {
            let normalized = crate::load::normalize_format(format);
            if !["json", "jsonc", "toml", "yaml"].contains(&normalized.as_str()) {
                return Err(self.fail(
                    "configuration_import.format",
                    format!("configuration_import.format {format:?} is not supported"),
                    "use \"json\", \"jsonc\", \"toml\" or \"yaml\", or remove it to infer the \
                     format from the file name",
                ));
            }
        }
        if let Some(preset) = crate::presets::preset(profile.agent) {
            self.configuration_import_target(profile, preset, import)?;
        }
        if !is_conflict_policy(&import.on_conflict) {
            return Err(self.fail(
                "configuration_import.on_conflict",
                format!(
                    "configuration_import.on_conflict {:?} is not a conflict policy",
                    import.on_conflict
                ),
                "use \"keep\" or \"replace\"",
            ));
        }
        if !profile.configuration_mounts.is_empty() {
            return Err(self.fail(
                "configuration_import",
                "configuration_import and configuration_mounts are mutually exclusive",
                "keep one way to provide the agent's configuration: import it into the home \
                 volume, or mount the files",
            ));
        }
        Ok(())
    }

    /// agent-containers' `configuration_target`: the import lands inside the agent's home, in
    /// a format the agent reads.
    fn configuration_import_target(
        &self,
        profile: &Profile,
        preset: &crate::presets::Preset,
        import: &crate::profile::ConfigurationImport,
    ) -> Outcome {
        let home = preset.home_path;
        if let Some(target) = &import.target {
            if !target.starts_with(&format!("{home}/")) {
                return Err(self.fail(
                    "configuration_import.target",
                    format!("configuration_import.target must be inside {home}"),
                    format!(
                        "the import is written into the agent's home volume; use a path under \
                         {home}/ or remove target for the agent's default"
                    ),
                ));
            }
        }
        let allowed: &[&str] = match profile.agent {
            crate::AgentName::ClaudeCode | crate::AgentName::Opencode => &["json", "jsonc"],
            crate::AgentName::Codex => &["toml"],
            crate::AgentName::Hermes => &["yaml"],
            crate::AgentName::Custom => return Ok(()),
        };
        if let Some(format) = &import.format {
            let normalized = crate::load::normalize_format(format);
            if !allowed.contains(&normalized.as_str()) {
                return Err(self.fail(
                    "configuration_import.format",
                    format!(
                        "{} reads {} configuration, not {normalized}",
                        profile.agent.as_str(),
                        allowed.join(" or ")
                    ),
                    format!("set format to {:?} or remove it", allowed[0]),
                ));
            }
        }
        Ok(())
    }

    fn mount(&self, prefix: &str, mount: &MountConfig) -> Outcome {
        self.line(&format!("{prefix}.source"), &mount.source, "the host path")?;
        let target_field = format!("{prefix}.target");
        self.line(&target_field, &mount.target, "the absolute container path")?;
        let target = mount.target.trim();
        if !target.starts_with('/') {
            return Err(self.fail(
                &target_field,
                format!("{target_field} must be an absolute path"),
                "write a container path such as `/home/agent/.config/tool`",
            ));
        }
        if target.trim_end_matches('/').is_empty() {
            return Err(self.fail(
                &target_field,
                format!("{target_field} must not be the container's root /"),
                "mount onto a directory inside the container, such as `/home/agent/.config/tool`",
            ));
        }
        self.clean_container_path(&target_field, target)?;
        // Regression (`mount_targets_under_proc_sys_or_dev_are_refused`): a bind over the
        // kernel's interfaces (`/proc/sys`, `/sys/fs/cgroup`, `/dev/shm`) was accepted.
        let clean = crate::resolve::normalize_path(target);
        if ["/proc", "/sys", "/dev"]
            .iter()
            .any(|root| clean == *root || clean.starts_with(&format!("{root}/")))
        {
            return Err(self.fail(
                &target_field,
                format!("{target_field} {clean} is inside /proc, /sys or /dev"),
                "mount onto an ordinary directory such as `/home/agent/data`: a mount there \
                 would shadow the kernel's interfaces",
            ));
        }
        let field = format!("{prefix}.on_conflict");
        if !is_conflict_policy(&mount.on_conflict) {
            return Err(self.fail(
                &field,
                format!("{field} {:?} is not a conflict policy", mount.on_conflict),
                "use \"keep\" or \"replace\"",
            ));
        }
        if mount.kind != MountType::Seed && !mount.on_conflict.trim().eq_ignore_ascii_case("keep") {
            return Err(self.fail(
                &field,
                format!("{field} is only supported for seed mounts"),
                "remove on_conflict, or set type = \"seed\" to copy the file into the home volume",
            ));
        }
        Ok(())
    }

    /// An absolute container path must be clean: no `.`, `..` or empty components (a trailing
    /// `/` is allowed).
    ///
    /// Regression (`mount_targets_with_dot_dot_are_refused`): `/home/claude/../../etc` passed
    /// the absolute-path check, escaped the overlap, reserved-target and inside-the-home
    /// checks (which compare text), and reached docker, which cleans it to `/etc`.
    fn clean_container_path(&self, field: &str, path: &str) -> Outcome {
        let clean = crate::resolve::normalize_path(path);
        if path.starts_with('/') && clean != path.trim_end_matches('/') {
            return Err(self.fail(
                field,
                format!(
                    "{field} must be a clean absolute path without `.`, `..` or empty components"
                ),
                format!("write the path as {clean}"),
            ));
        }
        Ok(())
    }

    /// Duplicate or nested targets, which docker would resolve ambiguously.
    fn mount_overlaps(&self, profile: &Profile) -> Outcome {
        let targets: Vec<(String, &str)> =
            profile
                .configuration_mounts
                .iter()
                .enumerate()
                .map(|(index, mount)| {
                    (
                        format!("configuration_mounts[{index}].target"),
                        mount.target.as_str(),
                    )
                })
                .chain(profile.mounts.iter().enumerate().map(|(index, mount)| {
                    (format!("mounts[{index}].target"), mount.target.as_str())
                }))
                .map(|(field, target)| (field, target.trim().trim_end_matches('/')))
                .collect();
        for (later, (field, target)) in targets.iter().enumerate() {
            for (other_field, other) in &targets[..later] {
                let nested = |outer: &str, inner: &str| {
                    inner.len() > outer.len()
                        && inner.starts_with(outer)
                        && inner.as_bytes()[outer.len()] == b'/'
                };
                if target == other || nested(other, target) || nested(target, other) {
                    return Err(self.fail(
                        field,
                        format!(
                            "mount targets overlap: {other_field} {other} and {field} {target}"
                        ),
                        "give each mount its own target; a mount inside another mount's target \
                         would be shadowed or shadow it",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Which agents support Decant and Langfuse, and the egress Langfuse needs.
    fn integrations(&self, profile: &Profile) -> Outcome {
        if profile.decant.enabled
            && !matches!(profile.agent, AgentName::ClaudeCode | AgentName::Codex)
        {
            return Err(self.fail(
                "decant.enabled",
                format!(
                    "decant.enabled is supported only for claude-code and codex, not {:?}",
                    profile.agent.as_str()
                ),
                "remove [decant], or run it from a claude-code or codex profile",
            ));
        }
        let langfuse = &profile.langfuse;
        if !langfuse.enabled {
            return Ok(());
        }
        if !matches!(
            profile.agent,
            AgentName::ClaudeCode | AgentName::Codex | AgentName::Opencode
        ) {
            return Err(self.fail(
                "langfuse.enabled",
                format!(
                    "langfuse.enabled is supported only for claude-code, codex and opencode, not {:?}",
                    profile.agent.as_str()
                ),
                "remove [langfuse], or use it with a claude-code, codex or opencode profile",
            ));
        }
        if profile.egress.gateway_host.is_some() {
            return Ok(());
        }
        let mode = profile.egress.mode.trim().to_ascii_lowercase();
        if mode == "deny" {
            return Err(self.fail(
                "langfuse.base_url",
                "langfuse.enabled needs egress to the langfuse host, but egress.mode is deny",
                "set egress.mode = \"allowlist\" and add the langfuse host to egress.hosts, or \
                 configure an egress gateway",
            ));
        }
        if mode == "allowlist" {
            let url = langfuse.base_url.as_deref().unwrap_or_default();
            let Ok(host) = http_url_host(url) else {
                return Ok(());
            };
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            let allowed = profile.egress.hosts.iter().any(|entry| {
                let entry = entry.trim().to_ascii_lowercase();
                entry == host || entry == bare
            });
            if !allowed {
                return Err(self.fail(
                    "langfuse.base_url",
                    format!("langfuse.base_url host {host} is not in egress.hosts"),
                    format!("add \"{bare}\" to egress.hosts so traces can reach langfuse"),
                ));
            }
        }
        Ok(())
    }

    fn image(&self, profile: &Profile) -> Outcome {
        let image = &profile.image;
        if let Some(reference) = &image.reference {
            self.image_reference("image.ref", reference)?;
        }
        if let Some(entrypoint) = &image.entrypoint {
            if entrypoint.is_empty() || entrypoint.contains('\0') {
                return Err(self.fail(
                    "image.entrypoint",
                    "image.entrypoint must be a non-empty program without nul bytes",
                    "write the program to run, such as \"/bin/sh\", or remove it to keep the \
                     image's entrypoint",
                ));
            }
        }
        for (index, argument) in image.command.iter().flatten().enumerate() {
            if argument.contains('\0') {
                let field = format!("image.command[{index}]");
                return Err(self.fail(
                    &field,
                    format!("{field} must not contain nul bytes"),
                    "remove the nul byte: a process argument cannot carry one",
                ));
            }
        }
        if let Some(user) = &image.user {
            if !is_user_spec(user) {
                return Err(self.fail(
                    "image.user",
                    format!("image.user {user:?} is not a user"),
                    "write `name`, `uid`, `name:group` or `uid:gid`, such as \"1000:1000\"",
                ));
            }
        }
        if let Some(context) = &image.build_context {
            self.line(
                "image.build_context",
                context,
                "the build context directory",
            )?;
        }
        if let Some(dockerfile) = &image.dockerfile {
            self.line("image.dockerfile", dockerfile, "the Dockerfile's path")?;
        }
        Ok(())
    }

    fn resources(&self, profile: &Profile) -> Outcome {
        let resources = &profile.resources;
        if let Some(memory) = &resources.memory {
            let bytes = units::parse_size(memory).map_err(|reason| {
                self.fail(
                    "resources.memory",
                    format!("resources.memory {reason}"),
                    "write a size such as \"4g\" or \"512m\"",
                )
            })?;
            if bytes < MIN_MEMORY_BYTES {
                return Err(self.fail(
                    "resources.memory",
                    format!("resources.memory {memory:?} is below docker's minimum of 6m"),
                    "give the container at least \"6m\"; agents need far more, such as \"4g\"",
                ));
            }
            self.size_in_range("resources.memory", memory, bytes)?;
        }
        if let Some(size) = &resources.shm_size {
            let bytes = units::parse_size(size).map_err(|reason| {
                self.fail(
                    "resources.shm_size",
                    format!("resources.shm_size {reason}"),
                    "write a size such as \"256m\"",
                )
            })?;
            self.size_in_range("resources.shm_size", size, bytes)?;
            if bytes == 0 {
                return Err(self.fail(
                    "resources.shm_size",
                    "resources.shm_size must be greater than 0",
                    "write a size such as \"256m\", or remove it to keep the default",
                ));
            }
        }
        if let Some(cpus) = &resources.cpus {
            let nano = units::cpus_of(cpus).map_err(|reason| {
                self.fail(
                    "resources.cpus",
                    format!("resources.cpus {reason}"),
                    "write a positive number of cpus with at most 9 decimals, such as 2 or \"1.5\"",
                )
            })?;
            let written = match cpus {
                CpuCount::Text(text) => text.clone(),
                _ => units::format_cpus(nano),
            };
            if nano > MAX_NANO_CPUS {
                return Err(self.fail(
                    "resources.cpus",
                    format!("resources.cpus {written} is more than 1024"),
                    "write at most 1024 cpus",
                ));
            }
            if nano < MIN_NANO_CPUS {
                return Err(self.fail(
                    "resources.cpus",
                    format!("resources.cpus {written} is below docker's minimum of 0.01"),
                    "write at least 0.01 cpus; a smaller quota would silently become no limit",
                ));
            }
        }
        if let Some(limit) = resources.pids_limit {
            if !(1..=MAX_PIDS_LIMIT).contains(&limit) {
                return Err(self.fail(
                    "resources.pids_limit",
                    format!(
                        "resources.pids_limit must be between 1 and {MAX_PIDS_LIMIT}, not {limit}"
                    ),
                    "write a process limit such as 512",
                ));
            }
        }
        Ok(())
    }

    /// A size the docker CLI carries exactly: at most [`MAX_SIZE_BYTES`].
    fn size_in_range(&self, field: &str, written: &str, bytes: u64) -> Outcome {
        if bytes > MAX_SIZE_BYTES {
            return Err(self.fail(
                field,
                format!(
                    "{field} {written:?} is {bytes} bytes, more than the {MAX_SIZE_BYTES} bytes \
                     docker can carry exactly (it parses sizes through a 64-bit float)"
                ),
                "write a size below 8p (2^53 bytes), such as \"7p\" or \"64g\"",
            ));
        }
        Ok(())
    }

    fn logging(&self, profile: &Profile) -> Outcome {
        let logging = &profile.logging;
        let off = logging.max_size.as_deref() == Some("off");
        if let Some(size) = logging.max_size.as_deref().filter(|_| !off) {
            let bytes = units::parse_size(size).map_err(|reason| {
                self.fail(
                    "logging.max_size",
                    format!("logging.max_size {reason}"),
                    "write a size such as \"50m\", or \"off\" to keep the daemon's log driver",
                )
            })?;
            if bytes < MIN_LOG_SIZE_BYTES {
                return Err(self.fail(
                    "logging.max_size",
                    format!("logging.max_size {size:?} is below 1k"),
                    "write a size of at least \"1k\", such as \"50m\"",
                ));
            }
        }
        if let Some(files) = logging.max_file {
            if !(1..=MAX_LOG_FILES).contains(&files) {
                return Err(self.fail(
                    "logging.max_file",
                    format!("logging.max_file must be between 1 and {MAX_LOG_FILES}, not {files}"),
                    "keep a few rotated files, such as 3",
                ));
            }
            if off {
                return Err(self.fail(
                    "logging.max_file",
                    "logging.max_file contradicts logging.max_size = \"off\"",
                    "remove max_file: with max_size = \"off\" logs are not rotated",
                ));
            }
        }
        Ok(())
    }

    fn network(&self, profile: &Profile) -> Outcome {
        let network = &profile.network;
        if let Some(name) = &network.name {
            let lower = name.to_ascii_lowercase();
            if lower.starts_with("container:") {
                return Err(self.fail(
                    "network.name",
                    "network.name must not join another container's network",
                    "name a user-defined network; sharing a container's network namespace would \
                     bypass the sandbox's egress policy",
                ));
            }
            if ["host", "none", "default"].contains(&lower.as_str()) {
                return Err(self.fail(
                    "network.name",
                    format!("network.name {name:?} is a docker network mode, not a network"),
                    "name a user-defined network (docker network create NAME); egress.mode = \
                     \"deny\" already gives no network",
                ));
            }
            if !is_network_name(name) {
                return Err(self.fail(
                    "network.name",
                    format!("network.name {name:?} is not a docker network name"),
                    "start with a letter or digit and use only A-Z, a-z, 0-9, _, . or -, at \
                     most 128 characters",
                ));
            }
        }
        let mut seen = BTreeSet::new();
        for (index, port) in network.publish.iter().enumerate() {
            let field = format!("network.publish[{index}]");
            let (number, protocol) = parse_published_port(port).map_err(|reason| {
                self.fail(
                    &field,
                    format!("{field} is not a port: {reason}"),
                    "write a container port from 1 to 65535 such as 8080, or \"PORT/tcp\" or \
                     \"PORT/udp\" such as \"53/udp\"",
                )
            })?;
            if !seen.insert((number, protocol)) {
                return Err(self.fail(
                    &field,
                    format!("{field} publishes {number}/{protocol} twice"),
                    "remove the duplicate entry",
                ));
            }
        }
        if network.name.is_some() && !network.publish.is_empty() {
            return Err(self.fail(
                "network.publish",
                "network.publish cannot be used with network.name",
                "a container on a named network publishes no ports; reach it by name from that \
                 network, or remove network.name to publish on 127.0.0.1",
            ));
        }
        let deny = profile.egress.mode.trim().eq_ignore_ascii_case("deny");
        if network.name.is_some() && deny && profile.egress.gateway_host.is_none() {
            return Err(self.fail(
                "network.name",
                "network.name contradicts egress.mode = \"deny\" without a gateway",
                "deny without a gateway means no network at all; remove network.name, or set \
                 egress.mode = \"allowlist\"",
            ));
        }
        Ok(())
    }

    fn security(&self, profile: &Profile) -> Outcome {
        let mut seen = BTreeSet::new();
        for (index, name) in profile.security.add_capabilities.iter().enumerate() {
            let field = format!("security.add_capabilities[{index}]");
            let bare = name.trim().to_ascii_uppercase();
            if bare == "ALL" || bare == "CAP_ALL" {
                return Err(self.fail(
                    &field,
                    format!("{field}: \"ALL\" is not accepted"),
                    "list each capability the sandbox needs, such as \"NET_ADMIN\"",
                ));
            }
            let capability: Capability = match name.parse() {
                Ok(capability) => capability,
                Err(_) => {
                    let names: Vec<String> = Capability::ALL
                        .iter()
                        .map(|c| c.as_str().to_string())
                        .collect();
                    let stripped = bare.strip_prefix("CAP_").unwrap_or(&bare);
                    let hint = match closest(stripped, &names) {
                        Some(close) => format!("did you mean \"{close}\"?"),
                        None => format!("use a linux capability: {}", names.join(", ")),
                    };
                    return Err(self.fail(
                        &field,
                        format!("{field} {name:?} is not a linux capability"),
                        hint,
                    ));
                }
            };
            if !seen.insert(capability) {
                return Err(self.fail(
                    &field,
                    format!("{field} repeats {capability}"),
                    "list each capability once",
                ));
            }
        }
        Ok(())
    }
}

/// Dangerous requests, refused unless an explicit `[security] allow_*` field accepts them.
impl Checker<'_> {
    /// The Docker socket in any form and binds of `/`, as far as loading can tell: absolute
    /// host paths (after lexical normalization) and `DOCKER_HOST` among the variables passed
    /// in. Relative and `~` paths, and the home directory, are checked by [`mod@crate::resolve`].
    fn dangerous(&self, profile: &Profile) -> Outcome {
        let security = &profile.security;
        let mut sources: Vec<(String, &str)> = Vec::new();
        for (list, mounts) in [
            ("configuration_mounts", &profile.configuration_mounts),
            ("mounts", &profile.mounts),
        ] {
            for (index, mount) in mounts.iter().enumerate() {
                sources.push((format!("{list}[{index}].source"), mount.source.as_str()));
            }
        }
        let files = [
            (
                "proxy.ca_file",
                profile.proxy.as_ref().and_then(|p| p.ca_file.as_deref()),
            ),
            (
                "proxy.ca_dir",
                profile.proxy.as_ref().and_then(|p| p.ca_dir.as_deref()),
            ),
            (
                "egress.gateway_key_file",
                profile.egress.gateway_key_file.as_deref(),
            ),
            (
                "egress.gateway_known_hosts_file",
                profile.egress.gateway_known_hosts_file.as_deref(),
            ),
            (
                "configuration_import.source",
                profile
                    .configuration_import
                    .as_ref()
                    .map(|i| i.source.as_str()),
            ),
        ];
        for (field, value) in files {
            if let Some(value) = value {
                sources.push((field.to_string(), value));
            }
        }
        for (field, source) in sources {
            let source = source.trim();
            if !source.starts_with('/') {
                continue;
            }
            let path = crate::resolve::normalize_path(source);
            let Some(danger) = findings::classify_path(&path, None) else {
                continue;
            };
            if danger.allowed(security) {
                continue;
            }
            let (message, why) = match danger {
                findings::Danger::Root => (
                    format!("{field} binds the host's root directory /"),
                    "a bind of / hands the agent the whole host; mount only what it needs",
                ),
                _ => (
                    format!("{field} exposes the docker socket: {path}"),
                    "the docker socket makes the agent root on the host; remove the mount",
                ),
            };
            return Err(self.fail(
                &field,
                message,
                format!("{why}, or set {} to accept it", danger.allow_setting()),
            ));
        }
        if !security.allow_docker_socket {
            let mut names = Vec::new();
            if let Some(name) = profile
                .provider
                .as_ref()
                .and_then(|p| p.api_key_env.as_ref())
            {
                names.push(("provider.api_key_env", name));
            }
            if profile.langfuse.enabled {
                names.push(("langfuse.public_key_env", &profile.langfuse.public_key_env));
                names.push(("langfuse.secret_key_env", &profile.langfuse.secret_key_env));
            }
            for (field, name) in names {
                if name.trim() == findings::DOCKER_HOST {
                    return Err(self.fail(
                        field,
                        format!("{field} passes DOCKER_HOST into the container"),
                        format!(
                            "DOCKER_HOST points the agent at your docker daemon, which makes it \
                             root on the host; name the variable that holds the key, or set {} \
                             to accept it",
                            findings::Danger::DockerSocket.allow_setting()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The lower-case host of an http(s) URL, or why the text is not one.
pub fn http_url_host(text: &str) -> Result<String, String> {
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("it contains whitespace or control characters".to_string());
    }
    if !text.contains("://") {
        return Err("it does not start with http:// or https://".to_string());
    }
    let url = url::Url::parse(text).map_err(|error| error.to_string())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "the scheme is {:?}, not http or https",
            url.scheme()
        ));
    }
    match url.host_str() {
        Some(host) if !host.is_empty() => Ok(host.to_ascii_lowercase()),
        _ => Err("it has no host".to_string()),
    }
}

/// `^[a-z][a-z0-9_-]{0,62}$`
/// Names the first whitespace or control character of `text` (`whitespace (U+0020)`,
/// `a control character (U+0007)`), so that each kind of bad input gets its own message.
fn unprintable(text: &str) -> Option<String> {
    let bad = text.chars().find(|c| c.is_whitespace() || c.is_control())?;
    let code = u32::from(bad);
    Some(if bad.is_control() && !bad.is_whitespace() {
        format!("a control character (U+{code:04X})")
    } else {
        format!("whitespace (U+{code:04X})")
    })
}

fn is_profile_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_lowercase()
        && bytes[1..]
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-')
}

/// `^[A-Z_][A-Z0-9_]*$`
fn is_env_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && (bytes[0].is_ascii_uppercase() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
}

/// `^[A-Za-z0-9][A-Za-z0-9_.-]{0,max}$`
fn is_docker_name(text: &str, max_length: usize) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= max_length
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// `^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$`
fn is_volume_name(text: &str) -> bool {
    is_docker_name(text, 255)
}

/// `^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`
fn is_network_name(text: &str) -> bool {
    is_docker_name(text, 128)
}

/// `name|uid[:group|gid]`, each part `[A-Za-z0-9_][A-Za-z0-9_.-]*`, at most 32 characters.
fn is_user_spec(text: &str) -> bool {
    let part = |part: &str| {
        let bytes = part.as_bytes();
        !bytes.is_empty()
            && bytes.len() <= 32
            && (bytes[0].is_ascii_alphanumeric() || bytes[0] == b'_')
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    };
    match text.split_once(':') {
        Some((user, group)) => part(user) && part(group),
        None => part(text),
    }
}

fn is_conflict_policy(text: &str) -> bool {
    matches!(
        text.trim().to_ascii_lowercase().as_str(),
        "keep" | "replace"
    )
}

/// An IP address, or a network as `ADDRESS/PREFIX` (an IPv4 prefix may be a dotted netmask),
/// as Python's `ipaddress.ip_network(strict=False)` reads it.
fn is_ip_or_cidr(text: &str) -> bool {
    let (address, prefix) = match text.split_once('/') {
        Some((address, prefix)) => (address, Some(prefix)),
        None => (text, None),
    };
    let Ok(address) = address.parse::<IpAddr>() else {
        return false;
    };
    let Some(prefix) = prefix else {
        return true;
    };
    let max = if address.is_ipv4() { 32 } else { 128 };
    if !prefix.is_empty() && prefix.len() <= 3 && prefix.bytes().all(|b| b.is_ascii_digit()) {
        return prefix.parse::<u32>().is_ok_and(|length| length <= max);
    }
    match (address, prefix.parse::<Ipv4Addr>()) {
        (IpAddr::V4(_), Ok(mask)) => {
            let bits = u32::from(mask);
            bits.leading_ones() + bits.trailing_zeros() == 32
        }
        _ => false,
    }
}

/// A published container port as (number, protocol): `8080`, `"8080"`, `"53/udp"`.
/// Parses a `network.publish` entry into a port and protocol, or says what is wrong with it.
fn parse_published_port(port: &PortConfig) -> Result<(u16, &'static str), String> {
    let out_of_range = |shown: &dyn std::fmt::Display| {
        format!("port {shown} is out of range; ports are 1 to 65535")
    };
    let (number, protocol) = match port {
        PortConfig::Number(number) => (
            u16::try_from(*number).map_err(|_| out_of_range(number))?,
            "tcp",
        ),
        PortConfig::Text(text) => {
            let (number, protocol) = match text.split_once('/') {
                Some((number, protocol)) => (number, protocol),
                None => (text.as_str(), "tcp"),
            };
            let protocol = match protocol {
                "tcp" => "tcp",
                "udp" => "udp",
                _ => return Err(format!("protocol {protocol:?} is not tcp or udp")),
            };
            if number.contains(':') {
                return Err(
                    "a host address or host port cannot be chosen here; write only the container port"
                        .to_string(),
                );
            }
            if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("{number:?} is not a port number"));
            }
            let parsed = number.parse::<u16>().map_err(|_| out_of_range(&number))?;
            (parsed, protocol)
        }
    };
    if number == 0 {
        return Err(out_of_range(&0));
    }
    Ok((number, protocol))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::load;

    use crate::load::tests::{err, parts, MINIMAL};

    /// (field, position, message, hint) of the error for MINIMAL plus `extra`.
    fn reject(extra: &str) -> (String, Option<(usize, usize)>, String, String) {
        parts(&err(&format!("{MINIMAL}{extra}")))
    }

    fn accept(extra: &str) -> Profile {
        match load("p.toml", &format!("{MINIMAL}{extra}")) {
            Ok(loaded) => loaded.profile,
            Err(error) => panic!("rejected: {error}"),
        }
    }

    /// Asserts the field, message and line of MINIMAL plus `extra`'s error.
    fn assert_rejects(extra: &str, field: &str, message: &str, line: usize) -> String {
        let (actual_field, position, actual_message, hint) = reject(extra);
        assert_eq!(actual_field, field, "field for {extra:?}");
        assert_eq!(actual_message, message, "message for {extra:?}");
        assert_eq!(position.map(|p| p.0), Some(line), "line for {extra:?}");
        assert!(!hint.is_empty());
        hint
    }

    const CUSTOM: &str = "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"alpine:3\"\n";

    fn custom(extra: &str) -> (String, Option<(usize, usize)>, String, String) {
        parts(&err(&format!("{CUSTOM}{extra}")))
    }

    #[test]
    fn the_minimal_profile_is_valid() {
        accept("");
        load("p.toml", CUSTOM).unwrap();
    }

    #[test]
    fn schema_version_must_be_one() {
        let hint = assert_rejects(
            "schema_version = 2\n",
            "schema_version",
            "unsupported schema_version 2; this agentc reads version 1",
            3,
        );
        assert!(hint.contains("schema_version = 1"));
        let error = err("schema_version = 2\nname = \"dev\"\nagent = \"codex\"\n");
        assert_eq!(parts(&error).1, Some((1, 18)));
    }

    #[test]
    fn names_follow_the_profile_name_pattern() {
        for name in ["Dev", "1dev", "dev.x", "", "a b", &"a".repeat(64)] {
            let (field, position, message, _) =
                parts(&err(&format!("name = {name:?}\nagent = \"codex\"\n")));
            assert_eq!(field, "name");
            assert_eq!(position, Some((1, 8)));
            assert!(
                message.starts_with("name ") && message.ends_with("is not a valid profile name")
            );
        }
        load(
            "p.toml",
            &format!("name = \"{}\"\nagent = \"codex\"\n", "a".repeat(63)),
        )
        .unwrap();
    }

    #[test]
    fn home_volume_is_a_volume_name() {
        assert_rejects(
            "home_volume = \"a/b\"\n",
            "home_volume",
            "home_volume is not a docker volume name",
            3,
        );
        assert_rejects(
            "home_volume = \"-a\"\n",
            "home_volume",
            "home_volume is not a docker volume name",
            3,
        );
        assert_eq!(
            accept("home_volume = \" my.vol_1 \"\n")
                .home_volume
                .as_deref(),
            Some("my.vol_1")
        );
    }

    #[test]
    fn secret_variables_the_docker_cli_reads_are_refused() {
        assert_rejects(
            "[provider]\nkind = \"openai\"\napi_key_env = \"DOCKER_CONFIG\"\n",
            "provider.api_key_env",
            "provider.api_key_env DOCKER_CONFIG is a variable the docker CLI reads itself",
            5,
        );
        accept("[provider]\nkind = \"openai\"\napi_key_env = \"DOCKERISH_KEY\"\n");
    }

    #[test]
    fn package_names_are_single_line_and_not_blank() {
        assert_rejects(
            "[packages]\napt = [\"git\", \" \"]\n",
            "packages.apt[1]",
            "packages.apt[1] is blank",
            4,
        );
        assert_rejects(
            "[packages]\nnpm = [\"a\\nb\"]\n",
            "packages.npm[0]",
            "packages.npm[0] must be a single line without nul bytes",
            4,
        );
        assert_rejects(
            "[packages]\nuv_tools = [\"a\\u0000\"]\n",
            "packages.uv_tools[0]",
            "packages.uv_tools[0] must be a single line without nul bytes",
            4,
        );
        assert_rejects(
            "[packages]\nuv_libraries = [\"\"]\n",
            "packages.uv_libraries[0]",
            "packages.uv_libraries[0] is blank",
            4,
        );
        assert_rejects(
            "[packages]\nuv_libraries = [\"--index-url=https://evil.example\"]\n",
            "packages.uv_libraries[0]",
            "packages.uv_libraries[0] must not start with '-'",
            4,
        );
        assert_rejects(
            "[packages]\napt = [\"git curl\"]\n",
            "packages.apt[0]",
            "packages.apt[0] must not contain whitespace (U+0020)",
            4,
        );
        accept("[packages]\nnpm = [\"@langfuse/opencode-observability-plugin@latest\"]\nuv_libraries = [\"requests>=2.31\"]\n");
    }

    #[test]
    fn provider_fields_are_checked() {
        assert_rejects(
            "[provider]\nkind = \" \"\n",
            "provider.kind",
            "provider.kind is blank",
            4,
        );
        assert_rejects(
            "[provider]\nkind = \"x\"\nendpoint = \"ftp://h\"\n",
            "provider.endpoint",
            "provider.endpoint is not an http(s) url with a host: the scheme is \"ftp\", not http or https",
            5,
        );
        let (_, _, message, _) = reject("[provider]\nkind = \"x\"\nendpoint = \"https://\"\n");
        assert!(
            message.starts_with("provider.endpoint is not an http(s) url with a host"),
            "{message}"
        );
        let (_, _, message, _) = reject("[provider]\nkind = \"x\"\nendpoint = \"https://a b\"\n");
        assert!(
            message.ends_with("whitespace or control characters"),
            "{message}"
        );
        assert_rejects(
            "[provider]\nkind = \"x\"\nmodel = \"\"\n",
            "provider.model",
            "provider.model is blank",
            5,
        );
        let (field, position, message, hint) =
            reject("[provider]\nkind = \"x\"\napi_key_env = \"sk-secret-value\"\n");
        assert_eq!(field, "provider.api_key_env");
        assert_eq!(position, Some((5, 15)));
        assert_eq!(
            message,
            "provider.api_key_env must be an upper-case environment variable name"
        );
        assert!(!message.contains("sk-secret") && !hint.contains("sk-secret"));
        accept("[provider]\nkind = \"anthropic\"\nendpoint = \"http://10.0.0.1:8080/v1\"\napi_key_env = \"_KEY1\"\n");
    }

    #[test]
    fn proxy_fields_are_checked() {
        assert_rejects("[proxy]\nhttp = \"proxy:3128\"\n", "proxy.http", "proxy.http is not an http(s) url with a host: it does not start with http:// or https://", 4);
        let (field, _, _, _) = reject("[proxy]\nhttps = \"nope\"\n");
        assert_eq!(field, "proxy.https");
        assert_rejects(
            "[proxy]\nno_proxy = [\"a\", \"  \"]\n",
            "proxy.no_proxy[1]",
            "proxy.no_proxy[1] is blank",
            4,
        );
        assert_rejects(
            "[proxy]\nno_proxy = [\"a b\"]\n",
            "proxy.no_proxy[0]",
            "proxy.no_proxy[0] must not contain whitespace (U+0020)",
            4,
        );
        assert_rejects(
            "[proxy]\nca_file = \"\"\n",
            "proxy.ca_file",
            "proxy.ca_file is blank",
            4,
        );
        assert_rejects(
            "[proxy]\nca_dir = \"a\\nb\"\n",
            "proxy.ca_dir",
            "proxy.ca_dir must be a single line without nul bytes",
            4,
        );
        assert_rejects(
            "[proxy]\nca_file = \"a\"\nca_dir = \"b\"\n",
            "proxy",
            "proxy.ca_file and proxy.ca_dir are mutually exclusive",
            3,
        );
    }

    #[test]
    fn egress_mode_is_one_of_three_case_insensitively() {
        let hint = assert_rejects(
            "[egress]\nmode = \"open\"\n",
            "egress.mode",
            "egress.mode \"open\" is not an egress mode",
            4,
        );
        assert!(hint.contains("\"deny\", \"allowlist\" or \"unrestricted\""));
        assert_eq!(
            accept("[egress]\nmode = \"Unrestricted\"\n").egress.mode,
            "unrestricted"
        );
    }

    #[test]
    fn egress_hosts_are_named_hosts() {
        assert_rejects(
            "[egress]\nhosts = [\"a\", \"\"]\n",
            "egress.hosts[1]",
            "egress.hosts[1] is blank",
            4,
        );
        let hint = assert_rejects(
            "[egress]\nhosts = [\" * \"]\n",
            "egress.hosts[0]",
            "egress.hosts[0]: '*' is not a hostname",
            4,
        );
        assert!(hint.contains("mode = \"unrestricted\""), "{hint}");
        assert_rejects(
            "[egress]\nhosts = [\"a\\nb\"]\n",
            "egress.hosts[0]",
            "egress.hosts[0] must be a single line without nul bytes",
            4,
        );
        assert_rejects(
            "[egress]\nhosts = [\"a\\tb\"]\n",
            "egress.hosts[0]",
            "egress.hosts[0] must not contain whitespace (U+0009)",
            4,
        );
    }

    #[test]
    fn gateway_fields_are_checked() {
        let gateway = "[egress]\ngateway_host = \"gw\"\ngateway_port = 22\n";
        accept(gateway);
        assert_rejects(
            "[egress]\ngateway_host = \"\"\ngateway_port = 22\n",
            "egress.gateway_host",
            "egress.gateway_host is blank",
            4,
        );
        assert_rejects(
            "[egress]\ngateway_host = \"gw\"\ngateway_port = 0\n",
            "egress.gateway_port",
            "egress.gateway_port must be between 1 and 65535, not 0",
            5,
        );
        assert_rejects(
            "[egress]\ngateway_host = \"gw\"\ngateway_port = 65536\n",
            "egress.gateway_port",
            "egress.gateway_port must be between 1 and 65535, not 65536",
            5,
        );
        assert_rejects(
            &format!("{gateway}gateway_user = \"\"\n"),
            "egress.gateway_user",
            "egress.gateway_user is blank",
            6,
        );
        assert_rejects(
            &format!("{gateway}gateway_access_hostname = \"a b\"\n"),
            "egress.gateway_access_hostname",
            "egress.gateway_access_hostname must not contain whitespace (U+0020)",
            6,
        );
        assert_rejects(
            &format!("{gateway}gateway_bootstrap_allow = [\" \"]\n"),
            "egress.gateway_bootstrap_allow[0]",
            "egress.gateway_bootstrap_allow[0] is blank",
            6,
        );
        assert_rejects(
            &format!("{gateway}gateway_bootstrap_allow = [\"10.0.0.0/8\", \"host.example\"]\n"),
            "egress.gateway_bootstrap_allow[1]",
            "egress.gateway_bootstrap_allow[1] \"host.example\" is not an ip address or cidr",
            6,
        );
        accept(&format!("{gateway}gateway_bootstrap_allow = [\"10.0.0.1\", \"10.0.0.0/8\", \"::1\", \"fd00::/8\", \"10.1.0.0/255.255.0.0\"]\n"));
        assert_rejects(
            &format!("{gateway}gateway_key_file = \"\"\ngateway_known_hosts_file = \"k\"\n"),
            "egress.gateway_key_file",
            "egress.gateway_key_file is blank",
            6,
        );
        assert_rejects(
            &format!("{gateway}gateway_key_file = \"k\"\ngateway_known_hosts_file = \"\\n\"\n"),
            "egress.gateway_known_hosts_file",
            "egress.gateway_known_hosts_file is blank",
            7,
        );
    }

    #[test]
    fn gateway_host_and_port_go_together() {
        assert_rejects(
            "[egress]\ngateway_host = \"gw\"\n",
            "egress.gateway_host",
            "egress.gateway_host requires egress.gateway_port",
            4,
        );
        assert_rejects(
            "[egress]\ngateway_port = 22\n",
            "egress.gateway_port",
            "egress.gateway_port requires egress.gateway_host",
            4,
        );
    }

    #[test]
    fn gateway_options_require_a_gateway_host() {
        let cases = [
            ("gateway_user = \"u\"", "egress.gateway_user"),
            (
                "gateway_access_hostname = \"h\"",
                "egress.gateway_access_hostname",
            ),
            (
                "gateway_bootstrap_allow = [\"10.0.0.1\"]",
                "egress.gateway_bootstrap_allow",
            ),
            (
                "gateway_key_file = \"k\"\ngateway_known_hosts_file = \"h\"",
                "egress.gateway_key_file",
            ),
        ];
        for (option, field) in cases {
            assert_rejects(
                &format!("[egress]\n{option}\n"),
                field,
                &format!("{field} requires egress.gateway_host"),
                4,
            );
        }
    }

    #[test]
    fn gateway_key_and_known_hosts_go_together() {
        let gateway = "[egress]\ngateway_host = \"gw\"\ngateway_port = 22\n";
        assert_rejects(
            &format!("{gateway}gateway_key_file = \"k\"\n"),
            "egress.gateway_known_hosts_file",
            "egress.gateway_key_file requires egress.gateway_known_hosts_file",
            3,
        );
        assert_rejects(
            &format!("{gateway}gateway_known_hosts_file = \"k\"\n"),
            "egress.gateway_key_file",
            "egress.gateway_known_hosts_file requires egress.gateway_key_file",
            3,
        );
    }

    #[test]
    fn unrestricted_egress_has_no_hosts_and_no_gateway() {
        assert_rejects(
            "[egress]\nmode = \"unrestricted\"\nhosts = [\"a\"]\n",
            "egress.hosts",
            "egress.hosts must be empty when egress.mode is unrestricted",
            5,
        );
        assert_rejects(
            "[egress]\nmode = \"unrestricted\"\ngateway_host = \"gw\"\ngateway_port = 22\n",
            "egress.gateway_host",
            "egress.gateway_host cannot be used when egress.mode is unrestricted",
            5,
        );
    }

    #[test]
    fn decant_fields_are_checked() {
        assert_rejects(
            "[decant]\nsource_profiles = [\" \"]\n",
            "decant.source_profiles[0]",
            "decant.source_profiles[0] is blank",
            4,
        );
        assert_rejects(
            "[decant]\nsource_profiles = [\"ok\", \"Bad\"]\n",
            "decant.source_profiles[1]",
            "decant.source_profiles[1] \"Bad\" is not a valid profile name",
            4,
        );
        assert_rejects(
            "[decant]\nenabled = true\n",
            "decant.source_profiles",
            "decant.enabled requires decant.source_profiles",
            3,
        );
        assert_rejects(
            "[decant]\nimage = \" \"\n",
            "decant.image",
            "decant.image is empty",
            4,
        );
        assert_rejects(
            "[decant]\nimage = \"a b\"\n",
            "decant.image",
            "decant.image must not contain whitespace (U+0020)",
            4,
        );
        assert_rejects(
            "[decant]\nimage = \"--privileged\"\n",
            "decant.image",
            "decant.image must not start with '-'",
            4,
        );
        assert_rejects(
            "[decant]\ndata_volume = \"a:b\"\n",
            "decant.data_volume",
            "decant.data_volume is not a docker volume name",
            4,
        );
        assert_rejects(
            "[decant]\nbind_address = \"\"\n",
            "decant.bind_address",
            "decant.bind_address is blank",
            4,
        );
        assert_rejects(
            "[decant]\nbind_address = \"1.2.3.4 -p\"\n",
            "decant.bind_address",
            "decant.bind_address must not contain whitespace (U+0020)",
            4,
        );
        assert_rejects(
            "[decant]\nport = 70000\n",
            "decant.port",
            "decant.port must be between 1 and 65535, not 70000",
            4,
        );
        let profile = accept(
            "[decant]\nenabled = true\nsource_profiles = [\" dev \"]\nimage = \" decant:1 \"\n",
        );
        assert_eq!(profile.decant.source_profiles, ["dev"]);
        assert_eq!(profile.decant.image.as_deref(), Some("decant:1"));
    }

    #[test]
    fn decant_is_limited_to_claude_code_and_codex() {
        let text = "name = \"dev\"\nagent = \"opencode\"\n[decant]\nenabled = true\nsource_profiles = [\"a\"]\n";
        let (field, position, message, _) = parts(&err(text));
        assert_eq!(field, "decant.enabled");
        assert_eq!(position, Some((4, 11)));
        assert_eq!(
            message,
            "decant.enabled is supported only for claude-code and codex, not \"opencode\""
        );
    }

    #[test]
    fn langfuse_fields_are_checked() {
        assert_rejects(
            "[langfuse]\nenabled = true\n",
            "langfuse.base_url",
            "langfuse.enabled requires langfuse.base_url",
            3,
        );
        assert_rejects(
            "[langfuse]\nbase_url = \"langfuse\"\n",
            "langfuse.base_url",
            "langfuse.base_url is not an http(s) url with a host: it does not start with http:// or https://",
            4,
        );
        assert_rejects(
            "[langfuse]\npublic_key_env = \"pk-lf-123\"\n",
            "langfuse.public_key_env",
            "langfuse.public_key_env must be an upper-case environment variable name",
            4,
        );
        assert_rejects(
            "[langfuse]\nsecret_key_env = \"9X\"\n",
            "langfuse.secret_key_env",
            "langfuse.secret_key_env must be an upper-case environment variable name",
            4,
        );
        assert_rejects(
            "[langfuse]\npublic_key_env = \"LANGFUSE_SECRET_KEY\"\n",
            "langfuse.secret_key_env",
            "langfuse.public_key_env and langfuse.secret_key_env must differ",
            3,
        );
        assert_rejects(
            "[langfuse]\nenvironment = \"\"\n",
            "langfuse.environment",
            "langfuse.environment is blank",
            4,
        );
        assert_rejects(
            "[langfuse]\nuser_id = \"\"\n",
            "langfuse.user_id",
            "langfuse.user_id is blank",
            4,
        );
    }

    #[test]
    fn langfuse_is_limited_to_three_agents() {
        let text = "name = \"dev\"\nagent = \"hermes\"\n[langfuse]\nenabled = true\nbase_url = \"https://lf.example\"\n";
        let (field, _, message, _) = parts(&err(text));
        assert_eq!(field, "langfuse.enabled");
        assert_eq!(message, "langfuse.enabled is supported only for claude-code, codex and opencode, not \"hermes\"");
    }

    #[test]
    fn langfuse_needs_egress_to_its_host() {
        let langfuse = "[langfuse]\nenabled = true\nbase_url = \"https://LF.example:3000/x\"\n";
        assert_rejects(
            &format!("{langfuse}[egress]\nmode = \"deny\"\n"),
            "langfuse.base_url",
            "langfuse.enabled needs egress to the langfuse host, but egress.mode is deny",
            5,
        );
        let hint = assert_rejects(
            &format!("{langfuse}[egress]\nhosts = [\"other.example\"]\n"),
            "langfuse.base_url",
            "langfuse.base_url host lf.example is not in egress.hosts",
            5,
        );
        assert_eq!(
            hint,
            "add \"lf.example\" to egress.hosts so traces can reach langfuse"
        );
        accept(&format!("{langfuse}[egress]\nhosts = [\"Lf.Example\"]\n"));
        accept(&format!("{langfuse}[egress]\nmode = \"unrestricted\"\n"));
        accept(&format!(
            "{langfuse}[egress]\nmode = \"deny\"\ngateway_host = \"gw\"\ngateway_port = 22\n"
        ));
        let ipv6 = "[langfuse]\nenabled = true\nbase_url = \"http://[::1]:3000\"\n[egress]\nhosts = [\"::1\"]\n";
        accept(ipv6);
    }

    #[test]
    fn configuration_import_fields_are_checked() {
        assert_rejects(
            "[configuration_import]\nsource = \" \"\n",
            "configuration_import.source",
            "configuration_import.source is blank",
            4,
        );
        assert_rejects(
            "[configuration_import]\nsource = \"a\"\ntarget = \"\"\n",
            "configuration_import.target",
            "configuration_import.target is blank",
            5,
        );
        assert_rejects(
            "[configuration_import]\nsource = \"a\"\nformat = \"ini\"\n",
            "configuration_import.format",
            "configuration_import.format \"ini\" is not supported",
            5,
        );
        assert_rejects(
            "[configuration_import]\nsource = \"a\"\non_conflict = \"merge\"\n",
            "configuration_import.on_conflict",
            "configuration_import.on_conflict \"merge\" is not a conflict policy",
            5,
        );
        for format in ["json", "JSONC", ".jsonc"] {
            accept(&format!(
                "[configuration_import]\nsource = \"a\"\nformat = \"{format}\"\n"
            ));
        }
    }

    #[test]
    fn configuration_import_format_and_target_follow_the_agent() {
        for (agent, format) in [("codex", ".toml"), ("hermes", "yml"), ("hermes", "yaml")] {
            let text = format!(
                "name = \"p\"\nagent = \"{agent}\"\n[configuration_import]\nsource = \"a\"\nformat = \"{format}\"\n"
            );
            crate::load::load("p.toml", &text)
                .unwrap_or_else(|error| panic!("{agent} {format}: {error}"));
        }
        let (_, _, message, _) = parts(&err(
            "name = \"p\"\nagent = \"codex\"\n[configuration_import]\nsource = \"a\"\nformat = \"json\"\n",
        ));
        assert_eq!(message, "codex reads toml configuration, not json");
        let (field, _, message, _) = parts(&err(
            "name = \"p\"\nagent = \"opencode\"\n[configuration_import]\nsource = \"a\"\ntarget = \"/etc/x.json\"\n",
        ));
        assert_eq!(field, "configuration_import.target");
        assert_eq!(
            message,
            "configuration_import.target must be inside /home/opencode"
        );
    }

    #[test]
    fn configuration_import_excludes_configuration_mounts() {
        let text = "[configuration_import]\nsource = \"a\"\n[[configuration_mounts]]\nsource = \"b\"\ntarget = \"/b\"\n";
        assert_rejects(
            text,
            "configuration_import",
            "configuration_import and configuration_mounts are mutually exclusive",
            3,
        );
    }

    #[test]
    fn mount_fields_are_checked() {
        let first = "[[mounts]]\nsource = \"a\"\ntarget = \"/a\"\n";
        assert_rejects(
            &format!("{first}[[mounts]]\nsource = \" \"\ntarget = \"/b\"\n"),
            "mounts[1].source",
            "mounts[1].source is blank",
            7,
        );
        assert_rejects(
            &format!("{first}[[mounts]]\nsource = \"b\"\ntarget = \"\"\n"),
            "mounts[1].target",
            "mounts[1].target is blank",
            8,
        );
        assert_rejects(
            &format!("{first}[[mounts]]\nsource = \"b\"\ntarget = \"/b\\u0000\"\n"),
            "mounts[1].target",
            "mounts[1].target must be a single line without nul bytes",
            8,
        );
        assert_rejects(
            &format!("{first}[[mounts]]\nsource = \"b\"\ntarget = \"b\"\n"),
            "mounts[1].target",
            "mounts[1].target must be an absolute path",
            8,
        );
        assert_rejects(
            &format!("{first}[[mounts]]\nsource = \"b\"\ntarget = \" / \"\n"),
            "mounts[1].target",
            "mounts[1].target must not be the container's root /",
            8,
        );
        assert_rejects(
            "[[configuration_mounts]]\nsource = \"b\"\ntarget = \"/b\"\non_conflict = \"skip\"\n",
            "configuration_mounts[0].on_conflict",
            "configuration_mounts[0].on_conflict \"skip\" is not a conflict policy",
            6,
        );
        assert_rejects(
            "[[mounts]]\nsource = \"b\"\ntarget = \"/b\"\non_conflict = \"replace\"\n",
            "mounts[0].on_conflict",
            "mounts[0].on_conflict is only supported for seed mounts",
            6,
        );
        let profile = accept("[[mounts]]\ntype = \"seed\"\nsource = \"b\"\ntarget = \"/b\"\non_conflict = \"REPLACE\"\n");
        assert_eq!(profile.mounts[0].on_conflict, "replace");
    }

    #[test]
    fn escape_sequences_in_text_fields_are_refused() {
        assert_rejects(
            "[provider]\nkind = \"anthropic\"\nmodel = \"m\\u001b]0;x\\u0007\"\n",
            "provider.model",
            "provider.model must not contain control characters",
            5,
        );
        accept("[provider]\nkind = \"anthropic\"\nmodel = \"a\\tb\"\n");
    }

    #[test]
    fn hosts_and_users_starting_with_a_dash_are_refused() {
        let gateway = "[egress]\ngateway_host = \"gw\"\ngateway_port = 22\n";
        assert_rejects(
            &format!("{gateway}gateway_user = \"-oProxyCommand=id\"\n"),
            "egress.gateway_user",
            "egress.gateway_user must not start with '-'",
            6,
        );
        assert_rejects(
            "[egress]\nhosts = [\"-x.example\"]\n",
            "egress.hosts[0]",
            "egress.hosts[0] must not start with '-'",
            4,
        );
        accept("[egress]\nhosts = [\"x-y.example\", \".example.org\"]\n");
    }

    #[test]
    fn mount_targets_with_dot_dot_are_refused() {
        let mount =
            |target: &str| format!("[[mounts]]\nsource = \"/srv\"\ntarget = \"{target}\"\n");
        for (target, clean) in [
            ("/home/claude/../../etc", "/etc"),
            ("/data/./x", "/data/x"),
            ("//data", "/data"),
            ("/data//x/", "/data/x"),
        ] {
            let hint = assert_rejects(
                &mount(target),
                "mounts[0].target",
                "mounts[0].target must be a clean absolute path without `.`, `..` or empty components",
                5,
            );
            assert_eq!(hint, format!("write the path as {clean}"));
        }
        accept(&mount("/data/x/"));
        let import = "[configuration_import]\nsource = \"c.json\"\n\
                      target = \"/home/claude/../../etc/cron.d/x\"\n";
        assert_rejects(
            import,
            "configuration_import.target",
            "configuration_import.target must be a clean absolute path without `.`, `..` or empty components",
            5,
        );
    }

    #[test]
    fn mount_targets_under_proc_sys_or_dev_are_refused() {
        for target in [
            "/proc",
            "/proc/sys",
            "/sys",
            "/sys/fs/cgroup/",
            "/dev",
            "/dev/shm",
        ] {
            let clean = target.trim_end_matches('/');
            let hint = assert_rejects(
                &format!("[[mounts]]\nsource = \"/srv\"\ntarget = \"{target}\"\n"),
                "mounts[0].target",
                &format!("mounts[0].target {clean} is inside /proc, /sys or /dev"),
                5,
            );
            assert!(hint.contains("kernel's interfaces"), "{hint}");
        }
        accept("[[mounts]]\nsource = \"/srv\"\ntarget = \"/devices\"\n");
        accept("[[mounts]]\nsource = \"/srv\"\ntarget = \"/home/claude/proc\"\n");
    }

    #[test]
    fn overlapping_mount_targets_are_rejected() {
        let text = "[[configuration_mounts]]\nsource = \"a\"\ntarget = \"/home/a/\"\n\
                    [[mounts]]\nsource = \"x\"\ntarget = \"/home/a-c\"\n\
                    [[mounts]]\nsource = \"b\"\ntarget = \"/home/a/b\"\n";
        assert_rejects(text, "mounts[1].target", "mount targets overlap: configuration_mounts[0].target /home/a and mounts[1].target /home/a/b", 11);
        let text = "[[mounts]]\nsource = \"a\"\ntarget = \"/x\"\n[[mounts]]\nsource = \"b\"\ntarget = \"/x\"\n";
        assert_rejects(
            text,
            "mounts[1].target",
            "mount targets overlap: mounts[0].target /x and mounts[1].target /x",
            8,
        );
        accept("[[mounts]]\nsource = \"a\"\ntarget = \"/x\"\n[[mounts]]\nsource = \"b\"\ntarget = \"/xy\"\n");
    }

    #[test]
    fn custom_requires_an_image_reference() {
        let (field, position, message, _) = parts(&err("name = \"box\"\nagent = \"custom\"\n"));
        assert_eq!(field, "image.ref");
        assert_eq!(position, None);
        assert_eq!(message, "agent \"custom\" requires image.ref");
    }

    #[test]
    fn custom_forbids_agent_home_features() {
        let cases = [
            ("home_volume = \"v\"\n", "home_volume"),
            ("[packages]\napt = [\"git\"]\n", "packages"),
            ("[provider]\nkind = \"anthropic\"\n", "provider"),
            ("[langfuse]\nenvironment = \"x\"\n", "langfuse"),
            ("[decant]\nport = 9000\n", "decant"),
            (
                "[configuration_import]\nsource = \"a\"\n",
                "configuration_import",
            ),
            (
                "[[configuration_mounts]]\nsource = \"a\"\ntarget = \"/a\"\n",
                "configuration_mounts",
            ),
        ];
        for (extra, field) in cases {
            // Top-level keys must precede the [image] table.
            let text = if extra.starts_with('[') {
                format!("{CUSTOM}{extra}")
            } else {
                format!("{extra}{CUSTOM}")
            };
            let (actual, position, message, hint) = parts(&err(&text));
            assert_eq!(actual, field);
            assert!(position.is_some(), "{field}");
            assert_eq!(
                message,
                format!("{field} is not supported for agent \"custom\"")
            );
            assert!(hint.contains("have no agent home"), "{hint}");
        }
        let (field, position, message, hint) =
            custom("[[mounts]]\ntype = \"seed\"\nsource = \"a\"\ntarget = \"/a\"\n");
        assert_eq!(field, "mounts[0].type");
        assert_eq!(position, Some((6, 8)));
        assert_eq!(
            message,
            "mounts[0].type: seed mounts are not supported for agent \"custom\""
        );
        assert!(hint.contains("have no agent home"), "{hint}");
    }

    #[test]
    fn custom_only_image_fields_are_rejected_for_agents() {
        for field in [
            "entrypoint = \"/bin/sh\"",
            "command = [\"sleep\"]",
            "user = \"1000\"",
        ] {
            let (actual, _, message, _) = reject(&format!("[image]\n{field}\n"));
            let name = field.split(' ').next().unwrap();
            assert_eq!(actual, format!("image.{name}"));
            assert_eq!(
                message,
                format!("image.{name} is only for agent \"custom\", not \"claude-code\"")
            );
        }
    }

    #[test]
    fn image_fields_are_checked() {
        let (field, _, message, _) = parts(&err(
            "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"\"\n",
        ));
        assert_eq!(
            (field.as_str(), message.as_str()),
            ("image.ref", "image.ref is empty")
        );
        let (_, _, message, _) = parts(&err(
            "name = \"box\"\nagent = \"custom\"\n[image]\nref = \" alpine\"\n",
        ));
        assert_eq!(message, "image.ref must not contain whitespace (U+0020)");
        let (_, _, message, _) = parts(&err(
            "name = \"box\"\nagent = \"custom\"\n[image]\nref = \"-v\"\n",
        ));
        assert_eq!(message, "image.ref must not start with '-'");
        let (field, position, message, _) = custom("entrypoint = \"\"\n");
        assert_eq!(
            (field.as_str(), position),
            ("image.entrypoint", Some((5, 14)))
        );
        assert_eq!(
            message,
            "image.entrypoint must be a non-empty program without nul bytes"
        );
        let (field, _, message, _) = custom("command = [\"a\", \"b\\u0000\"]\n");
        assert_eq!(
            (field.as_str(), message.as_str()),
            (
                "image.command[1]",
                "image.command[1] must not contain nul bytes"
            )
        );
        for user in ["", "a b", "1000:", ":1000", "a:b:c", "$x"] {
            let (field, _, message, _) = custom(&format!("user = {user:?}\n"));
            assert_eq!(field, "image.user");
            assert_eq!(message, format!("image.user {user:?} is not a user"));
        }
        for user in ["root", "1000", "1000:1000", "agent:staff", "_svc"] {
            load(
                "p.toml",
                &format!(
                    "{CUSTOM}user = {user:?}\nentrypoint = \"/bin/sh\"\ncommand = [\"-c\", \"\"]\n"
                ),
            )
            .unwrap();
        }
        assert_rejects(
            "[image]\nbuild_context = \"\"\n",
            "image.build_context",
            "image.build_context is blank",
            4,
        );
        assert_rejects(
            "[image]\ndockerfile = \"a\\rb\"\n",
            "image.dockerfile",
            "image.dockerfile must be a single line without nul bytes",
            4,
        );
    }

    #[test]
    fn resources_are_checked() {
        let (field, position, message, _) = reject("[resources]\nmemory = \"lots\"\n");
        assert_eq!(
            (field.as_str(), position),
            ("resources.memory", Some((4, 10)))
        );
        assert!(
            message.starts_with("resources.memory \"lots\" is not a size: expected a number"),
            "{message}"
        );
        assert_rejects(
            "[resources]\nmemory = \"5m\"\n",
            "resources.memory",
            "resources.memory \"5m\" is below docker's minimum of 6m",
            4,
        );
        accept("[resources]\nmemory = \"6m\"\n");
        assert_rejects(
            "[resources]\nshm_size = \"0\"\n",
            "resources.shm_size",
            "resources.shm_size must be greater than 0",
            4,
        );
        let (_, _, message, _) = reject("[resources]\nshm_size = \"1x\"\n");
        assert!(
            message.starts_with("resources.shm_size \"1x\" is not a size: unknown unit"),
            "{message}"
        );
        for cpus in ["0", "-1", "\"0\"", "\"1.0000000001\"", "\"x\""] {
            let (field, _, message, _) = reject(&format!("[resources]\ncpus = {cpus}\n"));
            assert_eq!(field, "resources.cpus");
            assert!(
                message.starts_with("resources.cpus \""),
                "{cpus}: {message}"
            );
        }
        assert_rejects(
            "[resources]\ncpus = 1025\n",
            "resources.cpus",
            "resources.cpus 1025 is more than 1024",
            4,
        );
        assert_rejects(
            "[resources]\ncpus = \"1024.5\"\n",
            "resources.cpus",
            "resources.cpus 1024.5 is more than 1024",
            4,
        );
        accept(
            "[resources]\ncpus = 1.5\nmemory = \"4g\"\nshm_size = \"256m\"\npids_limit = 4194304\n",
        );
        accept("[resources]\ncpus = \"1024\"\n");
        accept("[resources]\ncpus = 0.01\n");
        assert_rejects(
            "[resources]\ncpus = \"0.009999999\"\n",
            "resources.cpus",
            "resources.cpus 0.009999999 is below docker's minimum of 0.01",
            4,
        );
        assert_rejects(
            "[resources]\npids_limit = 0\n",
            "resources.pids_limit",
            "resources.pids_limit must be between 1 and 4194304, not 0",
            4,
        );
        assert_rejects(
            "[resources]\npids_limit = 4194305\n",
            "resources.pids_limit",
            "resources.pids_limit must be between 1 and 4194304, not 4194305",
            4,
        );
    }

    #[test]
    fn sizes_beyond_docker_exact_range_are_rejected() {
        // 2^53 - 1 bytes is the largest size docker's float64 parse carries exactly.
        accept("[resources]\nmemory = \"9007199254740991\"\nshm_size = \"9007199254740991\"\n");
        accept("[resources]\nmemory = \"7p\"\nshm_size = \"7.99p\"\n");
        for (field, written) in [
            ("memory", "8p"),
            ("memory", "9007199254740992"),
            ("memory", "9223372036854775807"),
            ("shm_size", "8p"),
            ("shm_size", "1024p"),
        ] {
            let (path, _, message, hint) =
                reject(&format!("[resources]\n{field} = \"{written}\"\n"));
            assert_eq!(path, format!("resources.{field}"));
            assert!(
                message.starts_with(&format!("resources.{field} \"{written}\" is "))
                    && message
                        .contains("more than the 9007199254740991 bytes docker can carry exactly"),
                "{message}"
            );
            assert!(hint.contains("below 8p"), "{hint}");
        }
        // cpus and pids_limit are bounded far inside the backends' ranges.
        assert!(MAX_NANO_CPUS < i64::MAX as u64);
        assert!(MAX_PIDS_LIMIT < i64::from(u32::MAX));
    }

    #[test]
    fn logging_is_checked() {
        accept("[logging]\nmax_size = \"off\"\n");
        accept("[logging]\nmax_size = \"1k\"\nmax_file = 100\n");
        assert_rejects(
            "[logging]\nmax_size = \"1023\"\n",
            "logging.max_size",
            "logging.max_size \"1023\" is below 1k",
            4,
        );
        let (_, _, message, _) = reject("[logging]\nmax_size = \"OFF!\"\n");
        assert!(
            message.starts_with("logging.max_size \"OFF!\" is not a size"),
            "{message}"
        );
        assert_rejects(
            "[logging]\nmax_file = 0\n",
            "logging.max_file",
            "logging.max_file must be between 1 and 100, not 0",
            4,
        );
        assert_rejects(
            "[logging]\nmax_file = 101\n",
            "logging.max_file",
            "logging.max_file must be between 1 and 100, not 101",
            4,
        );
        assert_rejects(
            "[logging]\nmax_size = \"off\"\nmax_file = 3\n",
            "logging.max_file",
            "logging.max_file contradicts logging.max_size = \"off\"",
            5,
        );
    }

    #[test]
    fn network_name_is_a_user_defined_network() {
        accept("[network]\nname = \"dev-net.1_x\"\n");
        assert_rejects(
            "[network]\nname = \"container:abc\"\n",
            "network.name",
            "network.name must not join another container's network",
            4,
        );
        for mode in ["host", "none", "default", "HOST"] {
            assert_rejects(
                &format!("[network]\nname = \"{mode}\"\n"),
                "network.name",
                &format!("network.name \"{mode}\" is a docker network mode, not a network"),
                4,
            );
        }
        for name in ["", "-x", "a b", &"a".repeat(129)] {
            assert_rejects(
                &format!("[network]\nname = \"{name}\"\n"),
                "network.name",
                &format!("network.name {name:?} is not a docker network name"),
                4,
            );
        }
        assert_rejects(
            "[egress]\nmode = \"deny\"\n[network]\nname = \"n\"\n",
            "network.name",
            "network.name contradicts egress.mode = \"deny\" without a gateway",
            6,
        );
        accept("[egress]\nmode = \"deny\"\ngateway_host = \"gw\"\ngateway_port = 22\n[network]\nname = \"n\"\n");
    }

    #[test]
    fn published_ports_are_ports_without_duplicates() {
        accept("[network]\npublish = [80, \"81\", \"53/udp\", \"53/tcp\", 65535]\n");
        for (port, reason) in [
            ("0", "port 0 is out of range; ports are 1 to 65535"),
            ("65536", "port 65536 is out of range; ports are 1 to 65535"),
            ("-1", "port -1 is out of range; ports are 1 to 65535"),
            ("\"80/sctp\"", "protocol \"sctp\" is not tcp or udp"),
            ("\"80/\"", "protocol \"\" is not tcp or udp"),
            ("\"\"", "\"\" is not a port number"),
            ("\"x\"", "\"x\" is not a port number"),
            ("\"/tcp\"", "\"\" is not a port number"),
            ("\"+80\"", "\"+80\" is not a port number"),
            (
                "\"99999/udp\"",
                "port 99999 is out of range; ports are 1 to 65535",
            ),
            (
                "\"127.0.0.1:8080\"",
                "a host address or host port cannot be chosen here; write only the container port",
            ),
        ] {
            let (field, _, message, _) = reject(&format!("[network]\npublish = [{port}]\n"));
            assert_eq!(field, "network.publish[0]");
            assert_eq!(
                message,
                format!("network.publish[0] is not a port: {reason}"),
                "{port}"
            );
        }
        assert_rejects(
            "[network]\npublish = [80,\n \"80/tcp\"]\n",
            "network.publish[1]",
            "network.publish[1] publishes 80/tcp twice",
            5,
        );
        assert_rejects(
            "[network]\nname = \"n\"\npublish = [80]\n",
            "network.publish",
            "network.publish cannot be used with network.name",
            5,
        );
    }

    #[test]
    fn added_capabilities_are_linux_capabilities() {
        accept("[security]\nadd_capabilities = [\"net_admin\", \"CAP_SYS_PTRACE\"]\n");
        let hint = assert_rejects(
            "[security]\nadd_capabilities = [\"NET_ADMN\"]\n",
            "security.add_capabilities[0]",
            "security.add_capabilities[0] \"NET_ADMN\" is not a linux capability",
            4,
        );
        assert_eq!(hint, "did you mean \"NET_ADMIN\"?");
        let hint = assert_rejects(
            "[security]\nadd_capabilities = [\"everything\"]\n",
            "security.add_capabilities[0]",
            "security.add_capabilities[0] \"everything\" is not a linux capability",
            4,
        );
        assert!(hint.contains("SYS_ADMIN"), "{hint}");
        let hint = assert_rejects(
            "[security]\nadd_capabilities = [\"all\"]\n",
            "security.add_capabilities[0]",
            "security.add_capabilities[0]: \"ALL\" is not accepted",
            4,
        );
        assert!(hint.contains("list each capability"));
        assert_rejects(
            "[security]\nadd_capabilities = [\"NET_RAW\", \"cap_net_raw\"]\n",
            "security.add_capabilities[1]",
            "security.add_capabilities[1] repeats NET_RAW",
            4,
        );
    }

    #[test]
    fn errors_display_file_position_field_and_hint() {
        let error = err(&format!("{MINIMAL}[resources]\npids_limit = 0\n"));
        assert_eq!(
            error.to_string(),
            "p.toml:4:14: resources.pids_limit: resources.pids_limit must be between 1 and 4194304, not 0\n  hint: write a process limit such as 512"
        );
    }

    #[test]
    fn the_first_error_in_rule_order_wins() {
        let text = format!("{MINIMAL}[resources]\npids_limit = 0\n[egress]\nmode = \"x\"\n");
        assert_eq!(parts(&err(&text)).0, "egress.mode");
    }

    #[test]
    fn helpers_match_their_patterns() {
        assert!(is_env_name("_A1") && !is_env_name("a") && !is_env_name("1A") && !is_env_name(""));
        assert!(is_ip_or_cidr("192.0.2.1/32") && !is_ip_or_cidr("192.0.2.1/33"));
        assert!(!is_ip_or_cidr("10.0.0.0/255.0.255.0") && !is_ip_or_cidr("::/129"));
        assert!(!is_ip_or_cidr("010.0.0.1") && !is_ip_or_cidr("10.0.0.0/"));
        assert_eq!(
            http_url_host("https://User@Example.COM:1/p"),
            Ok("example.com".to_string())
        );
    }
}
