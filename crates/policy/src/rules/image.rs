//! `[image]`: the image reference, a custom agent's entrypoint, command and user, docker's
//! init as PID 1, and the image build (its context judged as a bind is, and its finding when
//! an `allow_*` field accepts it); the process part of the explanation.

use std::collections::BTreeMap;

use crate::check::Checker;
use crate::context::{invocation, preset_origin, Resolver};
use crate::error::{Location, PolicyError};
use crate::explainer::Explainer;
use crate::finding::Report;
use crate::inputs::PathKind;
use crate::keys;
use crate::paths::{dangers, resolve_host_path, ALL_DANGERS};
use crate::presets::Preset;
use crate::profile::Profile;
use crate::spec::{Action, BuildSpec, ContainerSpec, Origin};
use crate::text::is_user_spec;

/// The `[image]` fields one by one.
pub(crate) fn check(ck: &mut Checker, profile: &Profile) {
    let image = &profile.image;
    if let Some(reference) = &image.reference {
        ck.image_reference("image.ref", reference);
    }
    if let Some(entrypoint) = &image.entrypoint {
        if entrypoint.is_empty() || entrypoint.contains('\0') {
            ck.fail(
                "image.entrypoint",
                "image.entrypoint must be a non-empty program without nul bytes",
                "write the program to run, such as \"/bin/sh\", or remove it to keep the \
                 image's entrypoint",
            );
        }
    }
    for (index, argument) in image.command.iter().flatten().enumerate() {
        if argument.contains('\0') {
            let field = format!("image.command[{index}]");
            ck.fail(
                &field,
                format!("{field} must not contain nul bytes"),
                "remove the nul byte: a process argument cannot carry one",
            );
        }
    }
    if let Some(user) = &image.user {
        if !is_user_spec(user) {
            ck.fail(
                "image.user",
                format!("image.user {user:?} is not a user"),
                "write `name`, `uid`, `name:group` or `uid:gid`, such as \"1000:1000\"",
            );
        }
    }
    if let Some(context) = &image.build_context {
        ck.line(
            "image.build_context",
            context,
            "the build context directory",
        );
    }
    if let Some(dockerfile) = &image.dockerfile {
        ck.line("image.dockerfile", dockerfile, "the Dockerfile's path");
    }
}

impl Resolver<'_> {
    /// The image of an agent launch: `--image`, `image.ref`, or the preset's `<name>:latest`.
    pub fn agent_image(&mut self, preset: Option<&Preset>) -> Result<String, PolicyError> {
        if let Some(image) = &self.inputs.image {
            self.set(keys::IMAGE, invocation("--image"));
            return Ok(image.clone());
        }
        if let Some(reference) = &self.profile.image.reference {
            self.set(keys::IMAGE, self.field_origin("image.ref"));
            return Ok(reference.clone());
        }
        match preset {
            Some(preset) => {
                self.set(keys::IMAGE, preset_origin(preset));
                Ok(format!("{}:latest", preset.image_name))
            }
            None => Err(self.invalid(
                "image.ref",
                "a custom agent needs an image reference".to_string(),
                "set [image] ref = \"IMAGE\" or pass --image",
            )),
        }
    }

    /// docker's init as PID 1 of the agent's container: as the profile says (`image.init`),
    /// else for an agent `preset` (whose agent, PID 1 without it, ignores `agentc stop`'s
    /// SIGTERM), not for a custom sandbox.
    pub fn init_process(&mut self, container: &mut ContainerSpec, preset: Option<&Preset>) {
        match (self.profile.image.init, preset) {
            (Some(init), _) => {
                container.init = init;
                self.set(keys::INIT, self.field_origin("image.init"));
            }
            (None, Some(preset)) => {
                container.init = true;
                self.set(keys::INIT, preset_origin(preset));
            }
            (None, None) => {}
        }
    }

    /// A custom sandbox's entrypoint, command and user, as the profile writes them.
    pub fn custom_process(&mut self, container: &mut ContainerSpec) {
        let image = &self.profile.image;
        if let Some(entrypoint) = &image.entrypoint {
            container.entrypoint = Some(entrypoint.clone());
            self.set(keys::ENTRYPOINT, self.field_origin("image.entrypoint"));
        }
        if let Some(command) = &image.command {
            container.command = command.clone();
            self.set(keys::COMMAND, self.field_origin("image.command"));
        }
        self.agent_args(container);
        if let Some(user) = &image.user {
            container.user = Some(user.clone());
            self.set(keys::USER, self.field_origin("image.user"));
        }
    }

    /// The invocation's agent arguments, after the command.
    pub fn agent_args(&mut self, container: &mut ContainerSpec) {
        if !self.inputs.agent_args.is_empty() {
            container
                .command
                .extend(self.inputs.agent_args.iter().cloned());
            self.set(keys::COMMAND_ARGS, invocation("agent arguments"));
        }
    }

    /// The image build: the same tag a run uses, from the profile's `image.build_context`,
    /// else (an agent preset's) from agentc's bundled context the caller wrote
    /// (`inputs.build.bundled_context`). Build arguments: the agent user's `UID` and `GID`
    /// (the owner's, 1000 for root) where the image is built for them, then
    /// `inputs.build.args` over them.
    pub fn build(&mut self, preset: Option<&Preset>) -> Result<Action, PolicyError> {
        let profile = self.profile;
        let tag = self.agent_image(preset)?;
        let origin = self.origins.remove(keys::IMAGE).unwrap_or(Origin::Default);
        self.set(keys::BUILD_TAG, origin);
        let (context, bundled) = match (&profile.image.build_context, preset) {
            (Some(context), _) => (self.profile_context(context)?, false),
            (None, Some(preset)) => {
                let Some(context) = self.inputs.build.bundled_context.clone() else {
                    return Err(self.unlaunchable(
                        "image.build_context",
                        format!(
                            "the profile has no build context, and agentc's bundled {} context \
                             was not given",
                            preset.agent.as_str()
                        ),
                        "run `agentc build PROFILE`, which writes it; a library caller passes \
                         the directory it wrote agentc_lifecycle::images::build_context to as \
                         ResolveInputs.build.bundled_context",
                    ));
                };
                self.set(keys::BUILD_CONTEXT, preset_origin(preset));
                (context, true)
            }
            (None, None) => {
                return Err(self.unlaunchable(
                    "image.build_context",
                    "the profile has no build context".to_string(),
                    "set [image] build_context to the directory holding the Dockerfile",
                ))
            }
        };
        if profile.image.dockerfile.is_some() {
            self.set(
                keys::BUILD_DOCKERFILE,
                self.field_origin("image.dockerfile"),
            );
        }
        let mut build_args = BTreeMap::new();
        if let Some(preset) = preset.filter(|preset| bundled || preset.build_user_args) {
            let Some(owner) = &self.inputs.owner else {
                return Err(PolicyError::Unlaunchable {
                    location: Location::Invocation {
                        input: "user".to_string(),
                    },
                    message: format!(
                        "the {} image is built for your uid and gid, and this resolution has no \
                         user",
                        preset.agent.as_str()
                    ),
                    hint: "build it with agentc build on the machine that runs the agent"
                        .to_string(),
                });
            };
            let (uid, gid, root) = crate::presets::build_ids(owner.uid, owner.gid);
            let origin = if root {
                invocation("user root, so 1000")
            } else {
                invocation("user")
            };
            build_args.insert("UID".to_string(), uid.to_string());
            build_args.insert("GID".to_string(), gid.to_string());
            self.set(keys::build_arg("UID"), origin.clone());
            self.set(keys::build_arg("GID"), origin);
        }
        for (name, value) in &self.inputs.build.args {
            build_args.insert(name.clone(), value.clone());
            self.set(keys::build_arg(name), invocation("--build-arg"));
        }
        Ok(Action::Build(BuildSpec {
            tag,
            context,
            dockerfile: profile.image.dockerfile.clone(),
            named_contexts: BTreeMap::new(),
            build_args,
            labels: BTreeMap::new(),
        }))
    }

    /// The profile's own build context: resolved, judged as a bind is, and a directory.
    fn profile_context(&mut self, context: &str) -> Result<String, PolicyError> {
        let context = resolve_host_path(context, &self.inputs.home_dir, &self.inputs.profile_dir);
        // The whole context goes to the engine, and a Dockerfile may copy any of it into the
        // image: the same host paths are refused as for a bind.
        if let Some(origin) = self.refuse_dangerous("image.build_context", &context)? {
            self.set(keys::BUILD_CONTEXT_ALLOWED_BY, origin);
        }
        if self.paths.kind(&context) != PathKind::Directory {
            return Err(self.unlaunchable(
                "image.build_context",
                format!("build context is not a directory: {context}"),
                "create it, or fix the path (relative paths are relative to the profile's directory)",
            ));
        }
        self.set(
            keys::BUILD_CONTEXT,
            self.field_origin("image.build_context"),
        );
        Ok(context)
    }
}

/// The build section of a build launch.
pub(crate) fn explain_build(out: &mut Explainer, build: &BuildSpec) {
    out.section("build");
    out.item("context", &build.context, keys::BUILD_CONTEXT);
    let dockerfile = build.dockerfile.as_deref().unwrap_or("Dockerfile");
    out.item("dockerfile", dockerfile, keys::BUILD_DOCKERFILE);
    for (name, value) in &build.build_args {
        out.item(&format!("build arg {name}"), value, &keys::build_arg(name));
    }
    for (name, value) in &build.named_contexts {
        out.line(format!("  named context {name}: {value}"));
    }
}

/// The process section: name, entrypoint, PID 1, command, user, working directory, mode and
/// lifetime.
pub(crate) fn explain_process(out: &mut Explainer, c: &ContainerSpec) {
    out.section("process");
    match &c.name {
        Some(name) => out.item("name", name, keys::NAME),
        None => out.line("  name: chosen by docker"),
    }
    match &c.entrypoint {
        Some(entrypoint) => out.item("entrypoint", entrypoint, keys::ENTRYPOINT),
        None => out.line("  entrypoint: the image's"),
    }
    if c.init {
        out.item(
            "PID 1",
            "docker's init (reaps zombies, passes signals on)",
            keys::INIT,
        );
    } else {
        out.item("PID 1", "the entrypoint, no init", keys::INIT);
    }
    if c.command.is_empty() {
        out.line("  command: the image's");
    } else {
        let origins: Vec<String> = [keys::COMMAND, keys::COMMAND_PROVIDER, keys::COMMAND_ARGS]
            .iter()
            .filter_map(|key| out.origin(key))
            .map(crate::explainer::origin_words)
            .collect();
        let command = if c.command.len() == 2 && c.command[0] == "-ceu" {
            // The seed script is long; name it instead of printing it.
            "-ceu <seed copy script>".to_string()
        } else {
            c.command.join(" ")
        };
        let from = if origins.is_empty() {
            String::new()
        } else {
            format!("  [{}]", origins.join("; "))
        };
        out.line(format!("  command: {command}{from}"));
    }
    match &c.user {
        Some(user) => out.item("user", user, keys::USER),
        None => out.line("  user: the image's"),
    }
    match &c.working_dir {
        Some(dir) => out.item("working directory", dir, keys::WORKING_DIR),
        None => out.line("  working directory: the image's"),
    }
    let mode = match (c.interactive, c.tty, c.detach) {
        (true, true, _) => "interactive with a terminal",
        (true, false, _) => "interactive",
        (false, _, true) => "detached",
        _ => "attached, not interactive",
    };
    let key = if c.detach {
        keys::DETACH
    } else {
        keys::INTERACTIVE
    };
    out.item("mode", mode, key);
    let removal = if c.auto_remove {
        "removed on exit"
    } else {
        "kept until removed"
    };
    out.item("lifetime", removal, keys::AUTO_REMOVE);
}

/// The build context's finding: a context an `allow_*` field accepted is as critical as a bind
/// of it (`bind-root`, `bind-host-system`, ...), since a Dockerfile may copy any of it into the
/// image.
pub(crate) fn build_findings(report: &mut Report, build: &BuildSpec) {
    let Some(Origin::Profile { field: allow, .. }) = report.origin(keys::BUILD_CONTEXT_ALLOWED_BY)
    else {
        return;
    };
    let allow = allow.clone();
    let mut found = dangers(&build.context, None);
    if let Some(danger) = ALL_DANGERS.iter().find(|d| d.allow_field() == allow) {
        if !found.contains(danger) {
            found.push(*danger);
        }
    }
    let at = report.field_of(keys::BUILD_CONTEXT, "image.build_context");
    for danger in found {
        report.push_allowed(
            danger.finding_code(),
            at.clone(),
            danger,
            format!(
                "the build context {} {}: the engine receives all of it, and the Dockerfile may \
                 copy any of it into the image",
                build.context,
                danger.what()
            ),
            "build from a directory that holds only what the image needs",
        );
    }
}
