//! The commands that neither launch nor connect: `validate`, `schema`, `explain`, `render`.

use std::io::Write;

use agentc_policy::LaunchSpec;
use agentc_policy::LoadedProfile;
use agentc_policy::{Hint, Hinted};

use crate::cli::{
    Command, ExplainArgs, ExplainBackendArg, ExplainFormat, FormatArg, K8sArgs, K8sKindArg,
    LaunchArgs, ProfileArgs, RenderArgs, RenderBackendArg,
};
use crate::context::{self, Failure};

/// The profile `launch` names, loaded and resolved for `explain` and `render`: for the
/// Kubernetes rendering (`k8s`) without a local user, so that its objects are the same on
/// every machine; otherwise the Kubernetes options are refused first.
fn profile_launch(
    launch: &LaunchArgs,
    k8s: bool,
    options: &K8sArgs,
) -> Result<(LoadedProfile, LaunchSpec), Failure> {
    if !k8s {
        refuse_k8s_options(options)?;
    }
    let loaded = context::load_profile(&launch.profile)?;
    let spec = if k8s {
        context::resolve_launch_unowned(&loaded, launch)?
    } else {
        context::resolve_launch(&loaded, launch)?
    };
    Ok((loaded, spec))
}

/// `agentc explain`: prints the explanation (or its JSON report), then, with `--deny LEVEL`,
/// exits 1 when any finding is at or above LEVEL.
pub fn explain(args: ExplainArgs) -> Result<u8, Failure> {
    let k8s = args.backend == ExplainBackendArg::K8s;
    let (loaded, spec) = profile_launch(&args.launch, k8s, &args.k8s)?;
    if k8s {
        if args.deny.is_some() {
            return Err(Failure::usage(
                "--deny reads the launch's findings: use it without --backend k8s",
            ));
        }
        let rendering = render_k8s(&loaded, &spec, &args.k8s)?;
        let output = match args.format {
            ExplainFormat::Text => agentc_backend_k8s::explain(&rendering),
            ExplainFormat::Json => format!("{}\n", to_pretty_json(&rendering.explain_json())),
        };
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(output.as_bytes());
        let _ = stdout.flush();
        return Ok(0);
    }
    let output = match args.format {
        ExplainFormat::Text => agentc_policy::explain(&loaded, &spec),
        ExplainFormat::Json => format!(
            "{}\n",
            to_pretty_json(&agentc_policy::explain_json(&loaded, &spec))
        ),
    };
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`agentc explain ... | head`) is not an error worth reporting.
    let _ = stdout.write_all(output.as_bytes());
    let _ = stdout.flush();
    let Some(level) = args.deny else {
        return Ok(0);
    };
    let findings = agentc_policy::findings(&loaded, &spec);
    let denied = findings
        .iter()
        .filter(|finding| finding.severity() >= level)
        .count();
    if denied == 0 {
        return Ok(0);
    }
    let highest = agentc_policy::highest(&findings).unwrap_or(level);
    Err(Failure::new(
        context::EXIT_FAILED,
        format!(
            "{}: {denied} finding{} at or above {level} (highest: {highest})",
            loaded.file,
            if denied == 1 { "" } else { "s" },
        ),
    )
    .hinted("change the profile, or allow the finding in your CI with a higher --deny level"))
}

/// Runs one offline subcommand and returns what it prints on success. The launching
/// subcommands are refused (they print as they go and have their own entry points).
pub fn dispatch(command: Command) -> Result<String, Failure> {
    match command {
        Command::Validate(crate::cli::Sub(args)) => validate(&args),
        Command::Schema => {
            let schema = agentc_policy::profile_schema();
            Ok(format!("{}\n", to_pretty_json(&schema)))
        }
        Command::Render(crate::cli::Sub(args)) => render_command(&args),
        _ => Err(Failure::usage(
            "this command has its own entry point and is not dispatched here",
        )),
    }
}

/// `agentc validate`: the profile loaded and every launch of it resolved; a line saying so,
/// with a note for each thing a launch needs of the engine.
fn validate(args: &ProfileArgs) -> Result<String, Failure> {
    let loaded = context::load_profile(&args.profile)?;
    let launches = context::every_launch(&loaded, &args.profile);
    let mut notes = std::collections::BTreeSet::new();
    for launch in &launches {
        let spec = context::resolve_launch(&loaded, launch)?;
        notes.extend(engine_requirements(&spec));
    }
    let mut out = format!(
        "{}: valid profile {:?} (agent {}; {} launch{} checked)\n",
        loaded.file,
        loaded.profile.name,
        loaded.profile.agent.as_str(),
        launches.len(),
        if launches.len() == 1 { "" } else { "es" },
    );
    for note in notes {
        out.push_str(&format!("  note: {note}\n"));
    }
    Ok(out)
}

/// `agentc render`: the profile's launch rendered for the backend asked for; for k8s, a
/// warning on stderr for each thing that may keep the Pod from starting.
fn render_command(args: &RenderArgs) -> Result<String, Failure> {
    let k8s = args.backend == RenderBackendArg::K8s;
    let (loaded, spec) = profile_launch(&args.launch, k8s, &args.k8s)?;
    if k8s {
        let rendering = render_k8s(&loaded, &spec, &args.k8s)?;
        // A Pod that may not start is worth a line before anyone applies it.
        for note in rendering.notes.start_blockers() {
            let warning = agentc_policy::Hint::new(
                format!("{}: {}", note.field, note.detail),
                "set [image] user to a numeric uid other than 0, such as \"1000:1000\", to \
                 render runAsUser, or make sure the image's USER is one",
            );
            eprintln!("agentc: warning: {}", warning.with_hint());
        }
        return match args.format {
            FormatArg::Json => Ok(format!("{}\n", to_pretty_json(&rendering.to_json()))),
            FormatArg::Yaml => Ok(rendering.to_yaml()),
            FormatArg::Shell => Err(Failure::usage(
                "the k8s backend renders objects: use --format yaml or --format json",
            )),
        };
    }
    render(&spec, args.backend, args.format)
}

/// What a launch needs of the engine that an offline check cannot see, in words: an outside
/// network the egress proxy publishes ports through must not be `--internal` (`agentc doctor`
/// checks it; `run` refuses the launch otherwise).
fn engine_requirements(spec: &LaunchSpec) -> Vec<String> {
    let agentc_policy::Action::Container(container) = &spec.action else {
        return Vec::new();
    };
    let Some(egress) = &container.egress else {
        return Vec::new();
    };
    let relays = egress.relays();
    match &egress.outside {
        agentc_policy::Network::Named { name } if !relays.is_empty() => vec![format!(
            "egress.outside_network {name:?} must not be --internal: the egress proxy publishes \
             {} through it (docker publishes no port through an internal network); \
             `agentc doctor PROFILE` checks it",
            relays
                .iter()
                .map(|relay| format!("{}/tcp", relay.target.port()))
                .collect::<Vec<_>>()
                .join(", ")
        )],
        _ => Vec::new(),
    }
}

/// Renders a spec through one Docker backend in one format.
fn render(
    spec: &agentc_policy::LaunchSpec,
    backend: RenderBackendArg,
    format: FormatArg,
) -> Result<String, Failure> {
    if let (agentc_engine::Engine::Podman, agentc_policy::Action::Container(container)) =
        (crate::engine(), &spec.action)
    {
        return render_podman(container, backend, format);
    }
    match (backend, format) {
        (RenderBackendArg::Cli, FormatArg::Shell | FormatArg::Json) => {
            let argv = agentc_backend_cli::render_argv(spec)
                .map_err(|error| Failure::from_hinted(context::EXIT_INVALID, &error))?;
            // An allowlist enforced outside: the isolated network and the egress proxy first.
            let mut argvs = match &spec.action {
                agentc_policy::Action::Container(container) => match &container.egress {
                    Some(egress) => agentc_backend_cli::egress::setup_argvs(egress, None)
                        .map_err(|error| Failure::from_hinted(context::EXIT_INVALID, &error))?,
                    None => Vec::new(),
                },
                agentc_policy::Action::Build(_) => Vec::new(),
            };
            Ok(match format {
                FormatArg::Json if argvs.is_empty() => format!("{}\n", to_pretty_json(&argv)),
                FormatArg::Json => {
                    argvs.push(argv);
                    format!("{}\n", to_pretty_json(&argvs))
                }
                _ => {
                    argvs.push(argv);
                    let lines: Vec<String> = argvs
                        .iter()
                        .map(|argv| agentc_backend_cli::shell_line(argv))
                        .collect();
                    format!("{}\n", lines.join("\n"))
                }
            })
        }
        (RenderBackendArg::Api, FormatArg::Json) => {
            let rendered = agentc_backend_api::render_json(spec).map_err(Failure::unlaunchable)?;
            Ok(format!("{}\n", to_pretty_json(&rendered)))
        }
        (RenderBackendArg::Api, FormatArg::Shell) => Err(Failure::usage(
            "the api backend renders JSON only; use --format json, or --backend cli for a shell line",
        )),
        (RenderBackendArg::Cli | RenderBackendArg::Api, FormatArg::Yaml) => Err(Failure::usage(
            "YAML is for the k8s backend; use --format json or shell",
        )),
        (RenderBackendArg::K8s, _) => Err(Failure::usage("the k8s backend is rendered apart")),
    }
}

/// Renders a container launch for Podman (`--engine podman`): the difference table applied
/// (`agentc_engine::podman`), then `podman` argv or the body for its socket. Offline,
/// the image's `USER` is unknown: a launch without `--user` keeps its `--cap-add` here, and a
/// note on stderr says they are dropped at launch when the image's user is not root.
fn render_podman(
    container: &agentc_policy::ContainerSpec,
    backend: RenderBackendArg,
    format: FormatArg,
) -> Result<String, Failure> {
    let adapted = agentc_engine::podman::adapt(container, None)
        .map_err(|error| Failure::from_hinted(context::EXIT_INVALID, &error))?;
    if container.user.is_none() && !adapted.cap_add.is_empty() {
        eprintln!(
            "agentc: note: on podman, --cap-add is dropped at launch when the image's USER is not root (podman would make the capabilities effective; docker keeps them out of reach)"
        );
    }
    match (backend, format) {
        (RenderBackendArg::Cli, FormatArg::Shell | FormatArg::Json) => {
            let argv = agentc_backend_cli::exec::engine::podman_argv(&adapted)
                .map_err(|error| Failure::from_hinted(context::EXIT_INVALID, &error))?;
            Ok(match format {
                FormatArg::Json => format!("{}\n", to_pretty_json(&argv)),
                _ => format!("{}\n", agentc_backend_cli::shell_line(&argv)),
            })
        }
        (RenderBackendArg::Api, FormatArg::Json) => {
            let mut request =
                agentc_backend_api::render_create(&adapted).map_err(Failure::unlaunchable)?;
            agentc_backend_api::engine::podman_body(&adapted, &mut request);
            let rendered = serde_json::json!({"name": request.name, "body": request.body});
            Ok(format!("{}\n", to_pretty_json(&rendered)))
        }
        _ => Err(Failure::usage(
            "with --engine podman, render --backend cli (shell or json) or --backend api (json)",
        )),
    }
}

/// Refuses the Kubernetes options outside `--backend k8s`, where they would be ignored.
pub fn refuse_k8s_options(args: &K8sArgs) -> Result<(), Failure> {
    match args.first_given() {
        Some(option) => Err(Failure::usage(format!(
            "{option} is an option of the Kubernetes rendering: add --backend k8s"
        ))),
        None => Ok(()),
    }
}

/// Renders a spec as Kubernetes objects, with the profile's egress policy and Pod Security
/// level (`[kubernetes] pod_security`); a refusal names every field (exit 65).
fn render_k8s(
    loaded: &LoadedProfile,
    spec: &LaunchSpec,
    args: &K8sArgs,
) -> Result<agentc_backend_k8s::Rendering, Failure> {
    let options = k8s_options(loaded, spec, args)?;
    agentc_backend_k8s::render(spec, &options).map_err(|errors| {
        Failure::unlaunchable(Hint::carrying(
            format!("{}: {errors}", loaded.file),
            &errors,
        ))
    })
}

/// The Kubernetes rendering's options: the command line's (`K8sArgs`) and the profile's
/// egress policy, Pod Security level and upstream CA files.
pub fn k8s_options(
    loaded: &LoadedProfile,
    spec: &LaunchSpec,
    args: &K8sArgs,
) -> Result<agentc_backend_k8s::Options, Failure> {
    Ok(agentc_backend_k8s::Options {
        kind: match args.k8s_kind {
            Some(K8sKindArg::Sandbox) => agentc_backend_k8s::ObjectKind::Sandbox,
            Some(K8sKindArg::Pool) => agentc_backend_k8s::ObjectKind::Pool {
                replicas: args.pool_size.unwrap_or(1),
            },
            Some(K8sKindArg::Pod) | None => agentc_backend_k8s::ObjectKind::Pod,
        },
        namespace: args.namespace.clone(),
        name: args.k8s_name.clone(),
        workspace_claim: args.workspace_claim.clone(),
        pod_security: agentc_backend_k8s::PodSecurity::from_profile(loaded),
        egress_proxy_image: args.egress_proxy_image.clone(),
        egress_proxy_ip: args.egress_proxy_ip,
        egress: agentc_backend_k8s::EgressPolicy::from_profile(loaded),
        runtime_classes: agentc_backend_k8s::RuntimeClasses::with_overrides(&args.runtime_class)
            .map_err(Failure::usage)?,
        upstream_ca: upstream_ca_files(spec)?,
    })
}

/// The certificates of the profile's CA that the egress proxy trusts for its upstreams (the
/// file or directory Docker's proxy mounts at [`agentc_policy::UPSTREAM_CA_TARGET`]), read for
/// the Kubernetes rendering's ConfigMap ([`read_ca_files`]). Empty when the proxy trusts no
/// profile CA.
fn upstream_ca_files(spec: &LaunchSpec) -> Result<agentc_backend_k8s::CaFiles, Failure> {
    let agentc_policy::Action::Container(container) = &spec.action else {
        return Ok(agentc_backend_k8s::CaFiles::new());
    };
    let source = container.egress.iter().find_map(|egress| {
        egress
            .proxy
            .mounts
            .iter()
            .find_map(|mount| match &mount.source {
                agentc_policy::MountSource::Bind { path }
                    if mount.target == agentc_policy::UPSTREAM_CA_TARGET =>
                {
                    Some(std::path::PathBuf::from(path))
                }
                _ => None,
            })
    });
    match source {
        Some(source) => read_ca_files(&source),
        None => Ok(agentc_backend_k8s::CaFiles::new()),
    }
}

/// A CA file, or each regular file of a CA directory (in name order), by file name: the
/// ConfigMap data of the Kubernetes rendering's upstream CA. An error names the file.
pub fn read_ca_files(source: &std::path::Path) -> Result<agentc_backend_k8s::CaFiles, Failure> {
    let unreadable = |path: &std::path::Path, why: String| {
        Failure::unlaunchable(Hint::none(format!(
            "cannot read the proxy CA {} for the Kubernetes rendering: {why}",
            path.display()
        )))
        .hinted(
            "the egress proxy Pod trusts it from a ConfigMap of the rendering; make it a \
             readable PEM file (or a directory of them)",
        )
    };
    let paths: Vec<std::path::PathBuf> = if source.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(source)
            .map_err(|error| unreadable(source, error.to_string()))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.is_file())
            .collect();
        entries.sort();
        entries
    } else {
        vec![source.to_path_buf()]
    };
    let mut files = agentc_backend_k8s::CaFiles::new();
    for path in paths {
        let name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = std::fs::read(&path).map_err(|error| unreadable(&path, error.to_string()))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| unreadable(&path, "it is not UTF-8 text (PEM)".to_string()))?;
        files.insert(name, text);
    }
    Ok(files)
}

fn to_pretty_json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    // Serializing plain data (strings, maps, numbers) cannot fail.
    serde_json::to_string_pretty(value).unwrap_or_default()
}
