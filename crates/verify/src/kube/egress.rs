//! The egress proxy under the play: verify's egress checks (`agentc egress-proxy probe`, the
//! program verify runs beside a container launch) as one more container of the workload pod,
//! so they see the pod's network exactly as the agent does: its interfaces and routes, its
//! resolvers, its proxy variables (which name the proxy's Service) and the CA its init
//! container fetched from the proxy. Pure: it reads the played pods and adds the container.

use agentc_backend_k8s::k8s_openapi::api::core::v1::{
    Capabilities, Container, EnvVar, PodDNSConfig, PodDNSConfigOption, ResourceRequirements,
    SecurityContext, VolumeMount,
};
use agentc_backend_k8s::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use agentc_backend_k8s::play::{Adaptation, Play, PlayedRole};
use agentc_backend_k8s::{CONTAINER_NAME, PROXY_CONTAINER, PROXY_UID};
use agentc_egress::probe::credentials::PLACEHOLDER_VARIABLE;
use agentc_egress::probe::PROXY_VARIABLES;
use agentc_policy::{CA_BUNDLE_PATH, CA_DIR_TARGET};

use super::super::egress::{held_credentials, probe_command, EgressProbe};

/// The name of the check container in the workload pod.
pub const CHECK_CONTAINER: &str = "egress-check";

/// The bound of each of the checks' connections, reads and DNS queries, in milliseconds:
/// everything they reach is on the play's own network.
pub const CHECK_TIMEOUT_MS: u32 = 1000;

/// What the play of an egress proxy adds, for the run and the rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressPlay {
    /// The proxy's pod, played before the workload.
    pub proxy_pod: String,
    /// The proxy's container as Podman names it (`POD-egress-proxy`).
    pub proxy_container: String,
    /// The check container as Podman names it (`WORKLOAD-egress-check`).
    pub check_container: String,
    /// The proxy holds keys: the credential checks follow the others.
    pub credentials: bool,
    /// Why `egress.allowed` is skipped, when it is (no exact host, `--egress-probe none`).
    pub allowed_skip: Option<String>,
}

/// Adds the check container to the workload pod of `play`, which plays the egress proxy
/// `probe` says which allowlisted host `egress.allowed` reaches. `None` when the play has no
/// egress proxy (deny, an empty allowlist, unrestricted).
pub fn add_check(play: &mut Play, probe: &EgressProbe) -> Option<EgressPlay> {
    let proxy = play.egress_proxy()?;
    let proxy_pod = proxy.name.clone();
    let proxy_container = proxy.container(PROXY_CONTAINER);
    let serve = proxy
        .spec()?
        .containers
        .iter()
        .find(|container| container.name == PROXY_CONTAINER)?;
    let image = serve.image.clone();
    let command = serve.command.clone().unwrap_or_default();
    let workload = play
        .pods
        .iter_mut()
        .find(|pod| pod.role == PlayedRole::Workload)?;
    let workload_name = workload.name.clone();
    let check_container = workload.container(CHECK_CONTAINER);
    let spec = workload.pod.spec.as_mut()?;
    let agent = spec
        .containers
        .iter()
        .find(|container| container.name == CONTAINER_NAME)?;
    let agent_env = |name: &str| {
        agent
            .env
            .iter()
            .flatten()
            .find(|var| var.name == name)
            .and_then(|var| var.value.clone())
    };
    // The proxy as the sandbox's variables name it: `http://SERVICE:3128`.
    let named = agent_env("HTTPS_PROXY")
        .map(|url| {
            url.trim_start_matches("http://")
                .trim_end_matches('/')
                .to_string()
        })
        .unwrap_or_else(|| format!("{proxy_pod}:{}", agentc_backend_k8s::PROXY_PORT));
    let target = probe.target(&command);
    // Behind a proxy that holds keys: its first key's variable and first bound host.
    let credential = held_credentials(&command)
        .into_iter()
        .next()
        .and_then(|key| {
            let (host, port) = key.hosts.first()?;
            Some((key.env, format!("{host}:{port}")))
        });
    let mut args = probe_command(
        &command,
        &named,
        target.as_ref().ok(),
        credential.as_ref().map(|(_, host)| host.as_str()),
    );
    args.push(format!("--timeout-ms={CHECK_TIMEOUT_MS}"));
    let mut env: Vec<EnvVar> = PROXY_VARIABLES
        .iter()
        .filter_map(|name| {
            Some(EnvVar {
                name: name.to_string(),
                value: Some(agent_env(name)?),
                value_from: None,
            })
        })
        .collect();
    if let Some((variable, _)) = &credential {
        env.push(literal("SSL_CERT_FILE", CA_BUNDLE_PATH));
        if let Some(placeholder) = agent_env(variable) {
            env.push(literal(PLACEHOLDER_VARIABLE, &placeholder));
        }
    }
    let mounts: Vec<VolumeMount> = agent
        .volume_mounts
        .iter()
        .flatten()
        .filter(|mount| mount.mount_path == CA_DIR_TARGET)
        .map(|mount| VolumeMount {
            read_only: Some(true),
            ..mount.clone()
        })
        .collect();
    let limits: std::collections::BTreeMap<String, Quantity> = [
        ("cpu".to_string(), Quantity("200m".to_string())),
        ("memory".to_string(), Quantity("64Mi".to_string())),
    ]
    .into();
    spec.containers.push(Container {
        name: CHECK_CONTAINER.to_string(),
        image,
        command: Some(args),
        env: Some(env),
        volume_mounts: (!mounts.is_empty()).then_some(mounts),
        resources: Some(ResourceRequirements {
            limits: Some(limits.clone()),
            requests: Some(limits),
            ..ResourceRequirements::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                add: None,
                drop: Some(vec!["ALL".to_string()]),
            }),
            privileged: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_user: Some(PROXY_UID),
            run_as_group: Some(PROXY_UID),
            run_as_non_root: Some(true),
            ..SecurityContext::default()
        }),
        ..Container::default()
    });
    // Podman's resolver on the play's network forwards other names to resolvers it cannot
    // reach, and answers nothing: a lookup gives up after a second, not after ten.
    let dns = spec.dns_config.get_or_insert_with(PodDNSConfig::default);
    let options = dns.options.get_or_insert_with(Vec::new);
    options.retain(|option| !matches!(option.name.as_deref(), Some("timeout" | "attempts")));
    options.extend(
        [("timeout", "1"), ("attempts", "1")].map(|(name, value)| PodDNSConfigOption {
            name: Some(name.to_string()),
            value: Some(value.to_string()),
        }),
    );
    play.adaptations.push(Adaptation {
        field: format!("Pod/{workload_name} spec.dnsConfig.options"),
        change: "timeout:1 attempts:1: a name the play's network does not know waits out \
                 resolvers it cannot reach, a second each instead of five, twice"
            .to_string(),
    });
    play.adaptations.push(Adaptation {
        field: format!("Pod/{workload_name} spec.containers[{CHECK_CONTAINER}]"),
        change: "added: verify's egress checks (`agentc egress-proxy probe`, in the proxy's \
                 image, as uid 65534 with no capability) run in the workload pod's network, \
                 with its proxy variables and the CA its init container fetched"
            .to_string(),
    });
    Some(EgressPlay {
        proxy_pod,
        proxy_container,
        check_container,
        credentials: credential.is_some(),
        allowed_skip: target.err().map(str::to_string),
    })
}

fn literal(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: Some(value.to_string()),
        value_from: None,
    }
}
