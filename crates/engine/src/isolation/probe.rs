//! One isolation probe: a container under the runtime being proven, with no network, that
//! prints the kernel it sees. It needs nothing of the launch's image: it is the agentc
//! binary's own image (the egress proxy's, imported once and remembered) running `agentc
//! egress-proxy kernel`; only when that image cannot be made (a caller without the agentc
//! binary) does it run the launch's image with [`PROBE_SCRIPT`], which then needs `/bin/sh`,
//! `cat` and `dmesg`.

use std::collections::BTreeMap;

use agentc_egress::image::ProxyExecutable;
use agentc_policy::Hinted;
use agentc_policy::{ContainerSpec, Network};

use crate::port::EnginePort;

/// The label every probe container carries (`io.agentc.probe=isolation`).
pub const LABEL_PROBE: &str = "io.agentc.probe";
/// The label naming the profile a probe container was run for, so that a caller can count
/// its own probes (`docker events --filter label=io.agentc.probe.profile=NAME`).
pub const LABEL_PROBE_PROFILE: &str = "io.agentc.probe.profile";

/// What the probe container runs in the launch's image when agentc's own image cannot be made:
/// the kernel it sees, then gVisor's boot log or a VM's.
pub const PROBE_SCRIPT: &str = "cat /proc/version; dmesg 2>/dev/null | head -n 5";

/// What a probe container runs: the image, its entrypoint and its arguments.
fn probe_command(own: Result<String, String>, image: &str) -> (String, String, Vec<String>) {
    match own {
        Ok(tag) => (
            tag,
            agentc_egress::config::PROXY_BINARY.to_string(),
            vec!["egress-proxy".to_string(), "kernel".to_string()],
        ),
        Err(reason) => {
            log::debug!("isolation probe in the launch's image {image}: agentc's own image cannot be made: {reason}");
            (
                image.to_string(),
                "/bin/sh".to_string(),
                vec!["-c".to_string(), PROBE_SCRIPT.to_string()],
            )
        }
    }
}

/// The labels of a probe container run for `profile`.
pub fn labels(profile: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_PROBE.to_string(), "isolation".to_string()),
        (LABEL_PROBE_PROFILE.to_string(), profile.to_string()),
    ])
}

/// One probe container through `port`: agentc's own image made of `proxy` (imported through
/// the same port) or the launch's `image`, no network, labelled for `profile`, under `runtime`;
/// created and started, waited for, its stdout read, and removed whatever happened. What it
/// printed, or why it failed.
pub async fn probe<P: EnginePort>(
    port: &P,
    runtime: &str,
    image: &str,
    profile: &str,
    proxy: Option<&ProxyExecutable>,
) -> Result<String, String> {
    let own = match proxy {
        Some(proxy) => crate::companion::own_proxy_image(port, proxy)
            .await
            .map_err(|error| error.with_hint().to_string()),
        None => Err("no agentc executable was named or found".to_string()),
    };
    let (image, entrypoint, args) = probe_command(own, image);
    let mut spec = ContainerSpec::empty(image);
    spec.entrypoint = Some(entrypoint);
    spec.command = args;
    spec.network = Network::None;
    spec.labels = labels(profile);
    spec.runtime = Some(runtime.to_string());
    let id = port
        .run_detached(&spec, &BTreeMap::new())
        .await
        .map_err(|error| last_line(&error.detail, "the probe container did not start"))?;
    let ran = async {
        let code = port.wait(&id).await.map_err(|error| error.to_string())?;
        if code == 0 {
            port.logs(&id, false)
                .await
                .map_err(|error| error.to_string())
        } else {
            let said = port.logs(&id, true).await.unwrap_or_default();
            Err(last_line(
                &said,
                &format!("the probe container exited {code}"),
            ))
        }
    }
    .await;
    if let Err(error) = port.remove_container(&id).await {
        log::debug!("removing probe container {id}: {error}");
    }
    ran
}

/// The last line of `text`, or `otherwise` when it has none.
fn last_line(text: &str, otherwise: &str) -> String {
    text.trim()
        .lines()
        .last()
        .map(str::to_string)
        .unwrap_or_else(|| otherwise.to_string())
}
