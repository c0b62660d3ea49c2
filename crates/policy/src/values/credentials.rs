//! `[credentials]`: its closed vocabularies (`mode`, `on_replay`, `scheme`), read in any case,
//! and the table itself, whose keys are its settings and the names of its bindings
//! (`[credentials] mode = "env"` beside `[credentials.anthropic]`), read, written and described
//! by hand: serde's `flatten` would lose the field paths of the errors.

use std::borrow::Cow;
use std::fmt;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use super::{word, ValueError};
use crate::profile::{CredentialBinding, CredentialsConfig};

/// Where an agent's keys live.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum CredentialMode {
    /// With the allowlist enforced outside: agentc's egress proxy holds each bound key and sets
    /// it on requests to the key's hosts only; the workload's variable holds a placeholder (the
    /// default).
    #[default]
    Proxy,
    /// The real keys in the workload's environment, as before (reported as a finding).
    Env,
}

impl CredentialMode {
    /// As written in a profile (`proxy`, `env`).
    pub fn as_str(self) -> &'static str {
        match self {
            CredentialMode::Proxy => "proxy",
            CredentialMode::Env => "env",
        }
    }
}

/// What the egress proxy does after it refused a placeholder sent where its key is not bound.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ReplayAction {
    /// Refuse the request and log it (`credential-replay`); go on (the default).
    #[default]
    Block,
    /// Refuse it, log it, and stop the proxy: the sandbox has no way out from then on.
    Stop,
}

impl ReplayAction {
    /// As written in a profile (`block`, `stop`).
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayAction::Block => "block",
            ReplayAction::Stop => "stop",
        }
    }
}

/// How a key is written into its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
pub enum CredentialScheme {
    /// `Bearer KEY`.
    Bearer,
    /// `Basic base64(USER:KEY)` (the user from `user_from_env`), or `base64(KEY)` when the key
    /// is `user:password` itself.
    Basic,
}

impl CredentialScheme {
    /// As written in a profile (`Bearer`, `Basic`).
    pub fn as_str(self) -> &'static str {
        match self {
            CredentialScheme::Bearer => "Bearer",
            CredentialScheme::Basic => "Basic",
        }
    }
}

impl<'de> Deserialize<'de> for CredentialMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let modes = [
            ("proxy", CredentialMode::Proxy),
            ("env", CredentialMode::Env),
        ];
        word(d, &modes, |mode| {
            ValueError::new(
                format!("{mode:?} is not a credentials mode"),
                "use \"proxy\" (the egress proxy holds the keys, the default) or \"env\" (the \
                 keys in the sandbox's environment)",
            )
        })
    }
}

impl<'de> Deserialize<'de> for ReplayAction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let actions = [("block", ReplayAction::Block), ("stop", ReplayAction::Stop)];
        word(d, &actions, |action| {
            ValueError::new(
                format!("{action:?} is not what a replay can do"),
                "use \"block\" (the default) or \"stop\"",
            )
        })
    }
}

impl<'de> Deserialize<'de> for CredentialScheme {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let schemes = [
            ("bearer", CredentialScheme::Bearer),
            ("basic", CredentialScheme::Basic),
        ];
        word(d, &schemes, |scheme| {
            ValueError::new(
                format!("{scheme:?} is not an authorization scheme agentc writes"),
                "use \"Bearer\" or \"Basic\", or leave scheme out to send the key as it is",
            )
        })
    }
}

/// The settings of `[credentials]` (its other keys are bindings).
const SETTINGS: [&str; 2] = ["mode", "on_replay"];

impl<'de> Deserialize<'de> for CredentialsConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Table;
        impl<'de> Visitor<'de> for Table {
            type Value = CredentialsConfig;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table of `mode`, `on_replay` and [credentials.NAME] tables")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut config = CredentialsConfig::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "mode" => config.mode = map.next_value()?,
                        "on_replay" => config.on_replay = map.next_value()?,
                        _ => {
                            let binding: CredentialBinding = map.next_value()?;
                            config.bindings.insert(key, binding);
                        }
                    }
                }
                Ok(config)
            }
        }
        d.deserialize_map(Table)
    }
}

impl Serialize for CredentialsConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(SETTINGS.len() + self.bindings.len()))?;
        map.serialize_entry("mode", &self.mode)?;
        map.serialize_entry("on_replay", &self.on_replay)?;
        for (name, binding) in &self.bindings {
            map.serialize_entry(name, binding)?;
        }
        map.end()
    }
}

impl JsonSchema for CredentialsConfig {
    fn schema_name() -> Cow<'static, str> {
        "CredentialsConfig".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mode = generator.subschema_for::<CredentialMode>();
        let on_replay = generator.subschema_for::<ReplayAction>();
        let binding = generator.subschema_for::<CredentialBinding>();
        json_schema!({
            "type": "object",
            "description": "Keys the egress proxy holds and sets for their hosts only: `mode`, \
                            `on_replay`, and one `[credentials.NAME]` table per key.",
            "properties": { "mode": mode, "on_replay": on_replay },
            "additionalProperties": binding
        })
    }
}
