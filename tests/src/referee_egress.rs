//! The referee for an egress companion ([`agentc_policy::EgressSpec`]): the CLI backend's
//! `docker network create`, `docker create` of the proxy and `docker network connect` go
//! through the real docker CLI against the stand-in, and what it sent is compared with the API
//! backend's network create body, proxy create request and connect body.

use agentc_policy::{Action, Hint, Hinted, LaunchSpec};
use serde_json::Value;

use crate::canonical::{diff, Difference};
use crate::referee::{is_network_connect_path, is_network_create_path, Referee, RefereeError};

fn render_error(backend: &'static str, error: impl Hinted) -> RefereeError {
    RefereeError::Render {
        backend,
        message: error.with_hint().to_string(),
    }
}

/// The maps of a network create or connect body (`Options`, `Labels`, `IPAM.Options`,
/// `EndpointConfig.DriverOpts`): their entries are kept whatever their value.
const MAPS: &[&str] = &["Options", "Labels", "DriverOpts"];

/// A network create or connect body without the zero values of its struct fields (`null`,
/// `""`, `false`, `0`, `[]`, `{}`), which the docker CLI sends and bollard leaves out.
///
/// Sound for the same reason as [`crate::canonical::ZERO_IS_UNSET`]: the daemon decodes the
/// body into Go structs (`network.CreateRequest`, `network.ConnectOptions` with its
/// `EndpointSettings`), where an absent key leaves the same zero value; for the maps and
/// slices (`IPAM.Options`, `Aliases`, `Links`, `DNSNames`, `DriverOpts`) it only ranges over
/// them or tests their length. The CLI 28 client sends the pointer fields (`EnableIPv4`,
/// `EnableIPv6`, `IPAMConfig`, `ConfigFrom`) only when set, so no non-nil zero is dropped here
/// that the daemon could tell apart.
pub fn without_zeros(value: &Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .iter()
                .filter(|(_, v)| !is_zero(v))
                .map(|(k, v)| {
                    let v = if MAPS.contains(&k.as_str()) {
                        v.clone()
                    } else {
                        without_zeros(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_zeros).collect()),
        other => other.clone(),
    }
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(object) => object.is_empty(),
    }
}

fn prefixed(prefix: &str, differences: Vec<Difference>) -> Vec<Difference> {
    differences
        .into_iter()
        .map(|difference| Difference {
            path: format!("{prefix}.{}", difference.path),
            ..difference
        })
        .collect()
}

impl Referee {
    /// Judges the egress companion of `spec` (none: no differences): each request the docker
    /// CLI sends for the CLI backend's argv against the API backend's, as differences whose
    /// paths start with `network_create`, `proxy` or `network_connect`.
    pub fn judge_egress(&self, spec: &LaunchSpec) -> Result<Vec<Difference>, RefereeError> {
        let Action::Container(container) = &spec.action else {
            return Err(RefereeError::NotAContainer);
        };
        let Some(egress) = &container.egress else {
            return Ok(Vec::new());
        };
        let argvs = agentc_backend_cli::egress::setup_argvs(egress, None)
            .map_err(|e| render_error("cli", e))?;
        let requests = agentc_backend_api::egress::render_egress(egress, None)
            .map_err(|e| render_error("api", e))?;
        let json = |value: Result<Value, serde_json::Error>| {
            value.map_err(|e| render_error("api", Hint::none(e)))
        };
        let mut differences = Vec::new();

        let network = self.send(&argvs[0][1..], &[], is_network_create_path)?;
        let api = json(serde_json::to_value(&requests.network))?;
        let (cli, api) = (without_zeros(&network.body), without_zeros(&api));
        differences.extend(prefixed("network_create", diff(&cli, &api)));

        let proxy = self.create(&argvs[1][2..], &[])?;
        let cli_name = proxy.query.get("name").cloned();
        if cli_name != requests.proxy.name {
            differences.push(Difference {
                path: "proxy.query.name".to_string(),
                cli: cli_name.map(Value::String),
                api: requests.proxy.name.clone().map(Value::String),
            });
        }
        let api = json(serde_json::to_value(&requests.proxy.body))?;
        differences.extend(prefixed("proxy", diff(&proxy.body, &api)));

        let connect = self.send(&argvs[2][1..], &[], is_network_connect_path)?;
        let expected_path = format!("/networks/{}/connect", egress.network.name);
        if !connect.path.ends_with(&expected_path) {
            differences.push(Difference {
                path: "network_connect.path".to_string(),
                cli: Some(Value::String(connect.path.clone())),
                api: Some(Value::String(expected_path)),
            });
        }
        let api = json(serde_json::to_value(&requests.connect))?;
        let (cli, api) = (without_zeros(&connect.body), without_zeros(&api));
        differences.extend(prefixed("network_connect", diff(&cli, &api)));
        Ok(differences)
    }
}
