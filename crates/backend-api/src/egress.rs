//! The egress companion through the Engine API, rendered: the requests that come before the workload's
//! create when its allowlist is enforced outside it ([`EgressSpec`]), each the body the docker
//! CLI sends for the CLI backend's argv (the CLI backend's `egress` module has the argv;
//! the referee compares them):
//!
//! - `POST /networks/create` (`docker network create --internal --subnet= --opt= --label=`):
//!   `{Name, Driver: "bridge", Internal, IPAM: {Driver: "default", Config: [{Subnet}]},
//!   Options, Labels}`;
//! - `POST /containers/create?name=PROXY` (`docker create`): [`render_create`] of the proxy;
//! - `POST /networks/{name}/connect` (`docker network connect --ip=`):
//!   `{Container, EndpointConfig: {IPAMConfig: {IPv4Address}}}`;
//! - `POST /containers/PROXY/start`.

use std::collections::{BTreeMap, HashMap};

use agentc_policy::{EgressSpec, IsolatedNetwork};
use bollard::models::{
    EndpointIpamConfig, EndpointSettings, Ipam, IpamConfig, NetworkConnectRequest,
    NetworkCreateRequest,
};
use serde_json::json;

use crate::render::{render_create, CreateRequest, RenderError};

/// The `POST /networks/create` body of the isolated network.
pub fn network_create_body(network: &IsolatedNetwork) -> NetworkCreateRequest {
    let IsolatedNetwork {
        name,
        subnet,
        internal,
        options,
        labels,
    } = network;
    let map = |map: &BTreeMap<String, String>| -> Option<HashMap<String, String>> {
        (!map.is_empty()).then(|| map.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    };
    NetworkCreateRequest {
        name: name.clone(),
        driver: Some("bridge".to_owned()),
        internal: internal.then_some(true),
        ipam: Some(Ipam {
            driver: Some("default".to_owned()),
            config: Some(vec![IpamConfig {
                subnet: Some(subnet.clone()),
                ..Default::default()
            }]),
            options: None,
        }),
        options: map(options),
        labels: map(labels),
        ..Default::default()
    }
}

/// The rendered egress companion: the network's create body, the proxy's create request
/// (its image replaced by `proxy_image` when given) and its connect body.
#[derive(Debug, Clone, PartialEq)]
pub struct EgressRequests {
    /// `POST /networks/create`.
    pub network: NetworkCreateRequest,
    /// `POST /containers/create` of the proxy.
    pub proxy: CreateRequest,
    /// `POST /networks/{network.name}/connect` of the proxy.
    pub connect: NetworkConnectRequest,
}

/// Renders the egress companion's requests; see the module documentation.
pub fn render_egress(
    egress: &EgressSpec,
    proxy_image: Option<&str>,
) -> Result<EgressRequests, RenderError> {
    let proxy = agentc_engine::companion::prepare::proxy_as_created(egress, proxy_image)?;
    let EgressSpec {
        network,
        outside: _,
        proxy: _,
        proxy_address,
        // The bindings are the proxy's `--credential=` words and its environment.
        credentials: _,
    } = egress;
    let proxy = render_create(&proxy)?;
    let connect = NetworkConnectRequest {
        container: proxy.name.clone().unwrap_or_default(),
        endpoint_config: Some(EndpointSettings {
            ipam_config: Some(EndpointIpamConfig {
                ipv4_address: Some(proxy_address.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        }),
    };
    Ok(EgressRequests {
        network: network_create_body(network),
        proxy,
        connect,
    })
}

/// The egress companion as JSON, for `agentc render --backend api`.
pub(crate) fn egress_json(egress: &EgressSpec) -> Result<serde_json::Value, RenderError> {
    let EgressRequests {
        network,
        proxy,
        connect,
    } = render_egress(egress, None)?;
    let json_error = |error: serde_json::Error| RenderError::Json {
        message: error.to_string(),
    };
    Ok(json!({
        "network_create": serde_json::to_value(&network).map_err(json_error)?,
        "proxy": {
            "name": proxy.name,
            "body": serde_json::to_value(&proxy.body).map_err(json_error)?,
        },
        "network_connect": {
            "network": egress.network.name,
            "body": serde_json::to_value(&connect).map_err(json_error)?,
        },
    }))
}
