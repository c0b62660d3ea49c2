//! The egress companion of a launch through the docker CLI: the proxy image ensured (built
//! from the running agentc binary, `docker import`), the isolated network created, the proxy
//! created, connected at its fixed address, started and health-checked, and the ports it
//! relays checked published, all before the workload is created; and removed again by an [`EgressSet`] when the launch does not keep it.
//!
//! Every step that fails removes what the earlier ones created, so a failed setup leaves
//! nothing behind and the workload is never launched (fail closed). An isolated network that
//! exists already is left alone: the error names whose it is and how to remove it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use agentc_backend_common::egress;
use agentc_backend_common::egress_state::{self, IsolatedNetworkUse, Member};
use agentc_backend_common::{pause, ExecError};
use agentc_policy::{ContainerSpec, EgressSpec, PROXY_IMAGE_PLACEHOLDER};

use super::docker;
use super::signals::pending;
use crate::egress::setup_argvs;

/// How long the proxy has to answer its health check after it started.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(20);

/// The isolated network and the proxy container of one launch, removed on drop unless
/// [`EgressSet::keep`] was called (a detached sandbox keeps them until `agentc rm`).
#[derive(Debug)]
pub struct EgressSet {
    network: String,
    proxy: String,
    /// The proxy's CA volume, when it holds credentials.
    volume: Option<String>,
    keep: bool,
}

impl EgressSet {
    /// Leaves the network and the proxy in place (the sandbox runs on).
    pub fn keep(mut self) {
        self.keep = true;
    }

    /// Removes the proxy, then the network; failures are logged (`agentc rm` finds the rest by
    /// label).
    pub fn remove(&mut self) {
        if self.keep {
            return;
        }
        self.keep = true;
        remove(&self.proxy, &self.network);
        if let Some(volume) = &self.volume {
            remove_volume(volume);
        }
    }
}

impl Drop for EgressSet {
    fn drop(&mut self) {
        self.remove();
    }
}

fn remove(proxy: &str, network: &str) {
    log::debug!("removing the egress proxy {proxy} and the network {network}");
    docker::remove_quietly(proxy);
    if let Err(error) = docker::output(&["network", "rm", network]) {
        log::warn!("could not remove the network {network}: {error}");
    }
}

/// Removes the CA volume; the workload an attached run removed (`--rm`) may still hold it for
/// a moment, so it is tried a few times.
fn remove_volume(volume: &str) {
    for attempt in 0..10 {
        match docker::output(&["volume", "rm", "--force", volume]) {
            Ok(_) => return,
            Err(error) if attempt == 9 => {
                log::warn!("could not remove the volume {volume}: {error}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// `docker volume create` of the proxy's CA volume, labelled as the isolated network is.
fn create_volume(egress: &EgressSpec, volume: &str) -> Result<(), ExecError> {
    let mut args: Vec<String> = vec!["volume".into(), "create".into()];
    for (key, value) in &egress.network.labels {
        args.push(format!("--label={key}={value}"));
    }
    args.push(volume.to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    docker::output(&args)
        .map(|_| ())
        .map_err(|error| ExecError::Egress {
            step: egress::CREATE_CA_VOLUME,
            message: error.to_string(),
        })
}

/// The tag of the proxy image: the spec's own when it names one, else the image of the running
/// agentc binary (its tag remembered from an earlier launch, or built and imported).
fn proxy_image(egress: &EgressSpec) -> Result<String, ExecError> {
    if egress.proxy.image != PROXY_IMAGE_PLACEHOLDER {
        return Ok(egress.proxy.image.clone());
    }
    own_proxy_image()
}

/// The tag of the running agentc binary's proxy image, imported unless the engine has it (its
/// tag remembered from an earlier launch); also the image of the isolation probe, which needs
/// nothing of the launch's image.
pub fn own_proxy_image() -> Result<String, ExecError> {
    let fail = |error: agentc_egress::EgressError| ExecError::Egress {
        step: "build the egress proxy image",
        message: error.to_string(),
    };
    if let Some(tag) = agentc_egress::image::cached_proxy_tag() {
        if docker::image_present(&tag)? {
            return Ok(tag);
        }
    }
    let image = agentc_egress::image::proxy_image().map_err(fail)?;
    let tag = agentc_egress::image::ensure_image(&image).map_err(fail)?;
    agentc_egress::image::remember_proxy_tag(&tag);
    Ok(tag)
}

/// Sets up the companion of `spec`, if it has one, moving it first to an instance of its own
/// when the container has no name (each run gets its set), and to another subnet when the
/// daemon says its subnet overlaps another network's ([`ContainerSpec::egress_instance`]).
/// The keys the proxy holds must be set in `env` (they are read from it by the docker CLI, by
/// name).
pub fn setup_for(
    spec: &mut ContainerSpec,
    env: &BTreeMap<String, String>,
) -> Result<Option<EgressSet>, ExecError> {
    if let Some(egress) = &spec.egress {
        agentc_backend_common::resolve_env(&egress.proxy, env)?;
    }
    if !egress::prepare(spec)? {
        return Ok(None);
    }
    let mut attempt = 0;
    loop {
        let Some(companion) = &spec.egress else {
            return Ok(None);
        };
        match setup(companion, env) {
            Ok(set) => return Ok(Some(set)),
            Err(error) => {
                attempt += 1;
                egress::move_if_subnet_taken(spec, error, attempt)?;
            }
        }
    }
}

/// The steps of [`setup`], in order, as its errors name them.
const SETUP_STEPS: [&str; 4] = [
    egress::CREATE_NETWORK,
    "create the egress proxy",
    "connect the egress proxy to the isolated network",
    "start the egress proxy",
];

/// Sets up the egress companion; see the module documentation. The proxy's `docker create`
/// reads its secrets (by name: `--env=NAME`) from its environment: their values from the
/// profile where it holds them, else from `env`, on top of the inherited environment.
pub fn setup(egress: &EgressSpec, env: &BTreeMap<String, String>) -> Result<EgressSet, ExecError> {
    let image = proxy_image(egress)?;
    let argvs = setup_argvs(egress, Some(&image))?;
    let proxy = egress.proxy.name.clone().unwrap_or_default();
    let volume = egress::ca_volume(egress);
    let mut set = EgressSet {
        network: egress.network.name.clone(),
        proxy: proxy.clone(),
        volume: None,
        keep: false,
    };
    // The values of the proxy's `--env=NAME` entries (the keys it holds, the upstream's
    // credentials), for docker's environment.
    let secrets = agentc_backend_common::secrets::secret_values(&egress.proxy, env);
    for (argv, step) in argvs.iter().zip(SETUP_STEPS) {
        let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
        if let Err(error) = docker::output_with_env(&args, &secrets) {
            if step == SETUP_STEPS[0] {
                // Nothing of this launch exists yet: a network of that name is another's.
                set.keep = true;
                if let ExecError::DockerFailed { stderr, .. } = &error {
                    if egress_state::network_exists(stderr) {
                        return Err(existing_network(egress));
                    }
                }
            }
            set.remove();
            return Err(ExecError::Egress {
                step,
                message: error.to_string(),
            });
        }
        if step == SETUP_STEPS[0] {
            if pause::pause_blocking(pause::NETWORK, || pending().is_some()) {
                set.remove();
                return Err(interrupted(step));
            }
            // The CA volume after the network (which a leftover would have stopped), before
            // the proxy that writes it.
            if let Some(volume) = &volume {
                set.volume = Some(volume.clone());
                if let Err(error) = create_volume(egress, volume) {
                    set.remove();
                    return Err(error);
                }
            }
        }
    }
    if let Err(message) = wait_healthy(&proxy) {
        set.remove();
        return Err(ExecError::Egress {
            step: "start the egress proxy",
            message,
        });
    }
    if !egress.relays().is_empty() {
        let published = docker::inspect(&proxy)
            .and_then(|inspect| egress::check_relays_published(egress, &inspect));
        if let Err(error) = published {
            set.remove();
            return Err(error);
        }
    }
    if pause::pause_blocking(pause::PROXY, || pending().is_some()) {
        set.remove();
        return Err(interrupted("start the egress proxy"));
    }
    Ok(set)
}

/// The error of a set-up step a signal cut short (the launch reports the signal).
fn interrupted(step: &'static str) -> ExecError {
    ExecError::Egress {
        step,
        message: "interrupted".to_string(),
    }
}

/// The error of a launch whose isolated network exists already, naming whose it is and how to
/// remove it ([`egress_state::existing_network`]): its labels, the containers on it and the
/// proxy of this launch's name, asked with `docker network inspect`, `docker ps` and
/// `docker inspect`. Nothing is removed.
fn existing_network(egress: &EgressSpec) -> ExecError {
    let name = &egress.network.name;
    let facts = || -> Result<IsolatedNetworkUse, ExecError> {
        let labels = docker::output(&["network", "inspect", "--format", "{{json .Labels}}", name])?;
        let labels: BTreeMap<String, String> = serde_json::from_str::<Option<_>>(labels.trim())
            .ok()
            .flatten()
            .unwrap_or_default();
        let on = format!("network={name}");
        let members = docker::output(&["ps", "-a", "--filter", &on, "--format", MEMBER_FORMAT])?;
        Ok(IsolatedNetworkUse {
            name: name.clone(),
            labels,
            members: members.lines().filter_map(member).collect(),
        })
    };
    let found = match facts() {
        Ok(found) => found,
        Err(error) => {
            return ExecError::Egress {
                step: egress::CREATE_NETWORK,
                message: format!(
                    "the network {name} exists already, and cannot be inspected: {error}"
                ),
            }
        }
    };
    let proxy = egress.proxy.name.as_deref().and_then(|proxy| {
        docker::output(&[
            "inspect",
            "--type",
            "container",
            "--format",
            "{{.Name}}\t{{index .Config.Labels \"io.agentc.kind\"}}\t{{.State.Status}}",
            proxy,
        ])
        .ok()
        .and_then(|line| member(line.trim().trim_start_matches('/')))
    });
    egress_state::existing_network(egress, &found, proxy.as_ref())
}

/// `docker ps --format` of a [`Member`]: name, `io.agentc.kind`, state, tab-separated.
const MEMBER_FORMAT: &str = "{{.Names}}\t{{.Label \"io.agentc.kind\"}}\t{{.State}}";

fn member(line: &str) -> Option<Member> {
    let mut fields = line.split('\t');
    let name = fields.next()?.trim();
    if name.is_empty() {
        return None;
    }
    Some(Member {
        name: name.to_string(),
        kind: fields.next().unwrap_or_default().trim().to_string(),
        state: fields.next().unwrap_or_default().trim().to_string(),
    })
}

/// Runs the proxy's own health check inside it until it passes (or the proxy stopped).
fn wait_healthy(proxy: &str) -> Result<(), String> {
    let started = Instant::now();
    loop {
        let checked = docker::output(&[
            "exec",
            proxy,
            agentc_egress::PROXY_BINARY,
            "egress-proxy",
            "health",
        ]);
        match checked {
            Ok(_) => return Ok(()),
            Err(_) if super::signals::pending().is_some() => return Err("interrupted".to_string()),
            Err(error) if started.elapsed() > HEALTH_TIMEOUT => {
                return Err(format!("not healthy after {HEALTH_TIMEOUT:?}: {error}"))
            }
            Err(ExecError::DockerFailed { stderr, .. })
                if agentc_backend_common::daemon_text::is_not_running(&stderr) =>
            {
                let logs = docker::output(&["logs", "--tail", "5", proxy]).unwrap_or_default();
                return Err(format!("the proxy stopped: {}", logs.trim()));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}
