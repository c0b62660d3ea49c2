//! How the typed values of a profile are read from TOML and described in its JSON Schema:
//! the serde and schemars glue between [`crate::profile`] and the one parser of each value
//! ([`crate::limits`], [`crate::ports`], the lenient enums).
//!
//! A value that does not parse fails its field with a [`ValueError`] (a message and a hint).
//! serde carries only a message, so the two travel encoded in it ([`encode`]) and the loader
//! takes them apart again ([`decode`]), putting the field path in front.

use std::fmt;

use schemars::JsonSchema;
use schemars::{json_schema, Schema, SchemaGenerator};
use serde::de::{self, Deserializer, Unexpected, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::capability::Capability;
use crate::error::ValueError;
use crate::limits::{self, Limit};
use crate::ports::{self, PortSpec};
use crate::text::closest;

pub(crate) mod credentials;
pub use credentials::{CredentialMode, CredentialScheme, ReplayAction};

/// What the agent may reach.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum EgressMode {
    /// No egress: without a gateway the container runs with no network at all.
    Deny,
    /// Only the hosts listed in `egress.hosts` (the default).
    #[default]
    Allowlist,
    /// Anything: no egress policy (reported as a high finding).
    Unrestricted,
}

impl EgressMode {
    /// The mode as written in a profile (`deny`, `allowlist`, `unrestricted`).
    pub fn as_str(self) -> &'static str {
        match self {
            EgressMode::Deny => "deny",
            EgressMode::Allowlist => "allowlist",
            EgressMode::Unrestricted => "unrestricted",
        }
    }
}

/// Where an egress allowlist is enforced (`egress.enforce`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum EgressEnforce {
    /// By agentc's egress proxy, outside the workload: the workload joins an isolated network
    /// whose only way out is the proxy (the default).
    #[default]
    Outside,
    /// By the image's own firewall (`AGENT_ALLOWED_EGRESS`, iptables in the entrypoint); a
    /// custom image has none.
    Image,
}

impl EgressEnforce {
    /// The value as written in a profile (`outside`, `image`).
    pub fn as_str(self) -> &'static str {
        match self {
            EgressEnforce::Outside => "outside",
            EgressEnforce::Image => "image",
        }
    }
}

/// The Pod Security Standards level a profile's Kubernetes rendering meets
/// (`kubernetes.pod_security`), as in the namespace label `pod-security.kubernetes.io/enforce`.
/// Only the Kubernetes backend reads it; the Docker launch does not change.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum PodSecurityLevel {
    /// Prevents known privilege escalations; a container may add Docker's default
    /// capabilities (`CHOWN`, `SETUID`, ...). Weaker than restricted, and reported as such.
    Baseline,
    /// Hardened: non-root, no privilege escalation, seccomp, ALL capabilities dropped but
    /// `NET_BIND_SERVICE` (the default).
    #[default]
    Restricted,
}

impl PodSecurityLevel {
    /// The level as written in a profile and in the namespace label (`baseline`,
    /// `restricted`).
    pub fn as_str(self) -> &'static str {
        match self {
            PodSecurityLevel::Baseline => "baseline",
            PodSecurityLevel::Restricted => "restricted",
        }
    }
}

/// What a copy-once seed or import does when its target exists and differs.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum OnConflict {
    /// Leave the target alone and fail (the default).
    #[default]
    Keep,
    /// Replace it, after a `.agent-containers.bak` backup.
    Replace,
}

impl OnConflict {
    /// The policy as written in a profile (`keep`, `replace`).
    pub fn as_str(self) -> &'static str {
        match self {
            OnConflict::Keep => "keep",
            OnConflict::Replace => "replace",
        }
    }
}

/// The format of an imported configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConfigFormat {
    /// JSON.
    Json,
    /// JSON with comments.
    Jsonc,
    /// TOML.
    Toml,
    /// YAML (`yml` is read as `yaml`).
    Yaml,
}

impl ConfigFormat {
    /// The format's name (`json`, `jsonc`, `toml`, `yaml`).
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigFormat::Json => "json",
            ConfigFormat::Jsonc => "jsonc",
            ConfigFormat::Toml => "toml",
            ConfigFormat::Yaml => "yaml",
        }
    }
}

/// Marks a serde message that carries a [`ValueError`].
const MARK: &str = "\u{1}agentc-value\u{1}";
/// Separates the message from the hint inside a marked serde message.
const SEPARATOR: char = '\u{1}';

/// A serde error carrying a [`ValueError`].
fn encode<E: de::Error>(error: ValueError) -> E {
    E::custom(format!("{MARK}{}{SEPARATOR}{}", error.message, error.hint))
}

/// The [`ValueError`] carried by a serde message, if it carries one.
pub(crate) fn decode(message: &str) -> Option<ValueError> {
    let rest = message.strip_prefix(MARK)?;
    let (message, hint) = rest.split_once(SEPARATOR)?;
    Some(ValueError::new(message, hint))
}

/// Which TOML types a limit accepts besides a string.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Numbers {
    None,
    Integers,
    IntegersAndFloats,
}

/// Reads a limit's value as text: a string as written (when `strings`), a number as its
/// decimal text (as `numbers` allows).
struct TextVisitor {
    expecting: &'static str,
    strings: bool,
    numbers: Numbers,
}

impl TextVisitor {
    fn integer<E: de::Error>(&self, text: String, unexpected: Unexpected<'_>) -> Result<String, E> {
        match self.numbers {
            Numbers::None => Err(E::invalid_type(unexpected, self)),
            _ => Ok(text),
        }
    }

    /// An integer beyond `i64`, which TOML does not have: out of range, whatever the field.
    fn too_large<E: de::Error>(&self) -> Result<String, E> {
        match self.numbers {
            Numbers::None => Err(E::invalid_type(Unexpected::Other("integer"), self)),
            _ => Err(E::invalid_type(Unexpected::Other("integer"), &"i64")),
        }
    }
}

impl Visitor<'_> for TextVisitor {
    type Value = String;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<String, E> {
        if !self.strings {
            return Err(E::invalid_type(Unexpected::Str(text), &self));
        }
        Ok(text.to_string())
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<String, E> {
        self.integer(value.to_string(), Unexpected::Signed(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<String, E> {
        if i64::try_from(value).is_err() {
            return self.too_large();
        }
        self.integer(value.to_string(), Unexpected::Unsigned(value))
    }

    fn visit_i128<E: de::Error>(self, _: i128) -> Result<String, E> {
        self.too_large()
    }

    fn visit_u128<E: de::Error>(self, _: u128) -> Result<String, E> {
        self.too_large()
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<String, E> {
        if self.numbers != Numbers::IntegersAndFloats {
            return Err(E::invalid_type(Unexpected::Float(value), &self));
        }
        if !value.is_finite() {
            return Err(encode(ValueError::new(
                format!("{value} is not a cpu count: expected a decimal number such as 2 or 1.5"),
                "write a positive number of cpus with at most 9 decimals, such as 2 or \"1.5\"",
            )));
        }
        // `Display` of an f64 is its shortest exact decimal, so `1.5` is read as "1.5".
        Ok(value.to_string())
    }
}

fn text<'de, D: Deserializer<'de>>(
    deserializer: D,
    expecting: &'static str,
    numbers: Numbers,
) -> Result<String, D::Error> {
    deserializer.deserialize_any(TextVisitor {
        expecting,
        strings: true,
        numbers,
    })
}

/// An integer only (a string is a wrong type), as its decimal text.
fn integer<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    deserializer.deserialize_any(TextVisitor {
        expecting: "an integer",
        strings: false,
        numbers: Numbers::Integers,
    })
}

/// `resources.memory`.
pub(crate) fn memory<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Limit<u64>>, D::Error> {
    let text = text(d, "a string", Numbers::None)?;
    limits::memory(&text).map(Some).map_err(encode)
}

/// `resources.shm_size`.
pub(crate) fn shm_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Limit<u64>>, D::Error> {
    let text = text(d, "a string", Numbers::None)?;
    limits::shm_size(&text).map(Some).map_err(encode)
}

/// `resources.cpus`.
pub(crate) fn cpus<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Limit<u64>>, D::Error> {
    let text = text(d, "a number or a string", Numbers::IntegersAndFloats)?;
    limits::cpus(&text).map(Some).map_err(encode)
}

/// `resources.pids_limit`.
pub(crate) fn pids<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Limit<u32>>, D::Error> {
    let text = text(d, "an integer or \"off\"", Numbers::Integers)?;
    limits::pids(&text).map(Some).map_err(encode)
}

/// `logging.max_size`.
pub(crate) fn log_max_size<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Limit<u64>>, D::Error> {
    let text = text(d, "a string", Numbers::None)?;
    limits::log_max_size(&text).map(Some).map_err(encode)
}

/// `logging.max_file`.
pub(crate) fn log_max_file<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let text = integer(d)?;
    limits::log_max_file(&text).map(Some).map_err(encode)
}

/// `egress.wildcard_names_per_minute`.
pub(crate) fn wildcard_names_per_minute<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<u32>, D::Error> {
    let text = integer(d)?;
    limits::wildcard_names_per_minute(&text)
        .map(Some)
        .map_err(encode)
}

/// A TCP port field written as an integer.
pub(crate) fn tcp_port<'de, D: Deserializer<'de>>(d: D) -> Result<u16, D::Error> {
    let text = integer(d)?;
    let number = text.parse::<i128>().unwrap_or(i128::MAX);
    ports::tcp_port(number).map_err(encode)
}

/// An optional TCP port field.
pub(crate) fn optional_tcp_port<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
    tcp_port(d).map(Some)
}

/// `security.add_capabilities`, each read as [`ProfileCapability`] so that a bad item is named
/// by its index.
pub(crate) fn capabilities<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Capability>, D::Error> {
    let items = Vec::<ProfileCapability>::deserialize(d)?;
    Ok(items.into_iter().map(|item| item.0).collect())
}

/// A capability as a profile writes it: `"ALL"` is refused, and an unknown name gets a "did
/// you mean".
struct ProfileCapability(Capability);

impl<'de> Deserialize<'de> for ProfileCapability {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        let bare = name.trim().to_ascii_uppercase();
        if bare == "ALL" || bare == "CAP_ALL" {
            return Err(encode(ValueError::new(
                ": \"ALL\" is not accepted",
                "list each capability the sandbox needs, such as \"NET_ADMIN\"",
            )));
        }
        match name.parse() {
            Ok(capability) => Ok(ProfileCapability(capability)),
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
                Err(encode(ValueError::new(
                    format!("{name:?} is not a linux capability"),
                    hint,
                )))
            }
        }
    }
}

/// Reads one of a closed set of lower-case words, in any case and with surrounding spaces.
pub(crate) fn word<'de, D: Deserializer<'de>, T: Copy>(
    d: D,
    words: &[(&str, T)],
    refusal: impl FnOnce(&str) -> ValueError,
) -> Result<T, D::Error> {
    let written = String::deserialize(d)?;
    let normalized = written.trim().to_ascii_lowercase();
    words
        .iter()
        .find(|(word, _)| *word == normalized)
        .map(|(_, value)| *value)
        .ok_or_else(|| encode(refusal(&normalized)))
}

impl<'de> Deserialize<'de> for EgressMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let modes = [
            ("deny", EgressMode::Deny),
            ("allowlist", EgressMode::Allowlist),
            ("unrestricted", EgressMode::Unrestricted),
        ];
        word(d, &modes, |mode| {
            ValueError::new(
                format!("{mode:?} is not an egress mode"),
                "use \"deny\", \"allowlist\" or \"unrestricted\"",
            )
        })
    }
}

impl<'de> Deserialize<'de> for EgressEnforce {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let places = [
            ("outside", EgressEnforce::Outside),
            ("image", EgressEnforce::Image),
        ];
        word(d, &places, |place| {
            ValueError::new(
                format!("{place:?} is not where egress can be enforced"),
                "use \"outside\" (agentc's egress proxy, the default) or \"image\" (the image's \
                 own firewall)",
            )
        })
    }
}

impl<'de> Deserialize<'de> for PodSecurityLevel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let levels = [
            ("baseline", PodSecurityLevel::Baseline),
            ("restricted", PodSecurityLevel::Restricted),
        ];
        word(d, &levels, |level| {
            let hint = if level == "privileged" {
                "agentc renders no privileged pods: use \"restricted\" (the default) or \"baseline\""
            } else {
                "use \"restricted\" (the default) or \"baseline\""
            };
            ValueError::new(format!("{level:?} is not a Pod Security level"), hint)
        })
    }
}

impl<'de> Deserialize<'de> for crate::isolation::IsolationTier {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let tiers = [
            ("container", crate::isolation::IsolationTier::Container),
            ("gvisor", crate::isolation::IsolationTier::Gvisor),
            ("microvm", crate::isolation::IsolationTier::Microvm),
        ];
        word(d, &tiers, |tier| {
            let hint = match tier {
                "runc" | "crun" => "use \"container\" (runc and crun are that tier)".to_string(),
                "runsc" => "use \"gvisor\" (runsc is gVisor)".to_string(),
                "kata" | "firecracker" | "vm" => {
                    "use \"microvm\" (Kata and Firecracker are that tier)".to_string()
                }
                _ => "use \"container\", \"gvisor\" or \"microvm\" (weakest first)".to_string(),
            };
            ValueError::new(format!("{tier:?} is not an isolation tier"), hint)
        })
    }
}

impl<'de> Deserialize<'de> for crate::isolation::IsolationPrefer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let preferences = [
            ("min", crate::isolation::IsolationPrefer::Min),
            ("strongest", crate::isolation::IsolationPrefer::Strongest),
        ];
        word(d, &preferences, |preference| {
            ValueError::new(
                format!("{preference:?} is not an isolation preference"),
                "use \"min\" (the weakest tier that meets the floor, the default) or \
                 \"strongest\"",
            )
        })
    }
}

impl<'de> Deserialize<'de> for OnConflict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let policies = [("keep", OnConflict::Keep), ("replace", OnConflict::Replace)];
        word(d, &policies, |policy| {
            ValueError::new(
                format!("{policy:?} is not a conflict policy"),
                "use \"keep\" or \"replace\"",
            )
        })
    }
}

impl<'de> Deserialize<'de> for ConfigFormat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let written = String::deserialize(d)?;
        let normalized = written.trim().to_ascii_lowercase();
        let normalized = normalized.trim_start_matches('.');
        match normalized {
            "json" => Ok(ConfigFormat::Json),
            "jsonc" => Ok(ConfigFormat::Jsonc),
            "toml" => Ok(ConfigFormat::Toml),
            "yaml" | "yml" => Ok(ConfigFormat::Yaml),
            other => Err(encode(ValueError::new(
                format!("{other:?} is not supported"),
                "use \"json\", \"jsonc\", \"toml\" or \"yaml\", or remove it to infer the format \
                 from the file name",
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for PortSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = text(d, "a port number or a string", Numbers::Integers)?;
        let trimmed = text.trim();
        let parsed = match trimmed.parse::<i128>() {
            // A TOML integer (or a bare number in a string) is a TCP port.
            Ok(number) if !trimmed.starts_with('+') => {
                ports::published_port_number(i64::try_from(number).unwrap_or(i64::MAX))
            }
            _ => ports::published_port(&text),
        };
        parsed.map_err(encode)
    }
}

impl Serialize for PortSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl schemars::JsonSchema for PortSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PortSpec".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A container port: a number (TCP), or \"[[HOST_IP:]HOST_PORT:]PORT[/tcp|/udp]\": published on 127.0.0.1 and a port the daemon picks unless a host port (\"18080:8080\") or address (\"0.0.0.0:18080:8080\", \"[::1]:18080:8080\", \"127.0.0.1::8080\") is written.",
            "anyOf": [
                { "type": "integer", "minimum": 1, "maximum": 65535 },
                { "type": "string", "pattern": "^ *(((\\[[0-9A-Fa-f:.]+\\]|[0-9]{1,3}(\\.[0-9]{1,3}){3}):[0-9]{0,5}|[0-9]{1,5}):)?[0-9]{1,5}(/([tT][cC][pP]|[uU][dD][pP]))? *$" }
            ]
        })
    }
}

/// A size limit as its canonical text (`"4g"`, `"off"`).
pub(crate) fn serialize_size<S: Serializer>(
    value: &Option<Limit<u64>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let text = value.map(|limit| match limit {
        Limit::Off => "off".to_string(),
        Limit::Value(bytes) => limits::format_size(bytes),
    });
    text.serialize(serializer)
}

/// A CPU limit as its canonical text (`"1.5"`, `"off"`).
pub(crate) fn serialize_cpus<S: Serializer>(
    value: &Option<Limit<u64>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let text = value.map(|limit| match limit {
        Limit::Off => "off".to_string(),
        Limit::Value(nano) => limits::format_cpus(nano),
    });
    text.serialize(serializer)
}

/// A count limit as a number, or `"off"`.
pub(crate) fn serialize_count<S: Serializer>(
    value: &Option<Limit<u32>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        None => serializer.serialize_none(),
        Some(Limit::Off) => serializer.serialize_str("off"),
        Some(Limit::Value(count)) => serializer.serialize_u32(*count),
    }
}

const SIZE_PATTERN: &str = "^ *[0-9]+(\\.[0-9]+)? ?([kKmMgGtTpP][iI]?)?[bB]? *$";

/// A size such as `"4g"`, or `"off"`.
pub(crate) fn size_limit_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [
            { "type": "string", "pattern": SIZE_PATTERN, "examples": ["4g", "512m"] },
            { "type": "string", "enum": ["off", "OFF", "Off"] }
        ]
    })
}

/// A CPU count: a number or a string such as `"1.5"`, or `"off"`.
pub(crate) fn cpus_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [
            { "type": "number", "minimum": 0.01, "maximum": 1024 },
            { "type": "string", "pattern": "^ *[0-9]*\\.?[0-9]+ *$" },
            { "type": "string", "enum": ["off", "OFF", "Off"] }
        ]
    })
}

/// A process count, or `"off"`.
pub(crate) fn pids_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [
            { "type": "integer", "minimum": 1, "maximum": limits::MAX_PIDS_LIMIT },
            { "type": "string", "enum": ["off", "OFF", "Off"] }
        ]
    })
}

/// A number of rotated log files.
pub(crate) fn log_files_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "integer", "minimum": 1, "maximum": limits::MAX_LOG_FILES })
}

/// Distinct wildcard names per minute.
pub(crate) fn wildcard_names_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "integer",
        "minimum": 1,
        "maximum": agentc_egress::wildcard::MAX_NAMES_PER_MINUTE
    })
}

/// A TCP port.
pub(crate) fn tcp_port_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "integer", "minimum": 1, "maximum": 65535 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_errors_travel_through_serde_messages() {
        let error: toml::de::Error = encode(ValueError::new("is bad", "fix it"));
        assert_eq!(
            decode(error.message()),
            Some(ValueError::new("is bad", "fix it"))
        );
        assert_eq!(decode("invalid type: string"), None);
    }

    #[derive(Deserialize)]
    struct Probe {
        #[serde(default, deserialize_with = "cpus")]
        cpus: Option<Limit<u64>>,
        #[serde(default)]
        mode: Option<EgressMode>,
        #[serde(default)]
        port: Option<PortSpec>,
        #[serde(default)]
        level: Option<PodSecurityLevel>,
    }

    fn probe(text: &str) -> Result<Probe, String> {
        toml::from_str::<Probe>(text).map_err(|error| error.message().to_string())
    }

    #[test]
    fn cpu_counts_of_every_toml_shape_are_exact() {
        let nano = |text: &str| probe(text).unwrap().cpus.unwrap();
        assert_eq!(nano("cpus = 2"), Limit::Value(2_000_000_000));
        assert_eq!(nano("cpus = 1.5"), Limit::Value(1_500_000_000));
        assert_eq!(nano("cpus = 0.1"), Limit::Value(100_000_000));
        assert_eq!(nano("cpus = \"0.25\""), Limit::Value(250_000_000));
        assert_eq!(nano("cpus = \"Off\""), Limit::Off);
        for bad in ["cpus = -1", "cpus = nan", "cpus = inf", "cpus = 1e-10"] {
            let message = probe(bad).err().unwrap();
            assert!(decode(&message).is_some(), "{bad}: {message}");
        }
        let wrong = probe("cpus = true").err().unwrap();
        assert!(wrong.contains("expected a number or a string"), "{wrong}");
    }

    #[test]
    fn words_and_ports_read_leniently() {
        assert_eq!(
            probe("mode = \" DENY \"").unwrap().mode,
            Some(EgressMode::Deny)
        );
        let refused = decode(&probe("mode = \"block\"").err().unwrap()).unwrap();
        assert_eq!(refused.message, "\"block\" is not an egress mode");
        assert_eq!(
            probe("port = \"53/UDP\"")
                .unwrap()
                .port
                .unwrap()
                .to_string(),
            "53/udp"
        );
        assert_eq!(
            probe("port = 8080").unwrap().port.unwrap().to_string(),
            "8080/tcp"
        );
        let zero = decode(&probe("port = 0").err().unwrap()).unwrap();
        assert!(zero.message.contains("out of range"), "{}", zero.message);
    }

    #[test]
    fn pod_security_levels_read_in_any_case() {
        let level = |text: &str| probe(text).map(|probe| probe.level);
        assert_eq!(
            level("level = \" Baseline \""),
            Ok(Some(PodSecurityLevel::Baseline))
        );
        assert_eq!(
            level("level = \"RESTRICTED\""),
            Ok(Some(PodSecurityLevel::Restricted))
        );
        assert_eq!(PodSecurityLevel::default(), PodSecurityLevel::Restricted);
        let privileged = decode(&probe("level = \"privileged\"").err().unwrap()).unwrap();
        assert_eq!(
            privileged.message,
            "\"privileged\" is not a Pod Security level"
        );
        assert!(
            privileged.hint.contains("no privileged pods"),
            "{}",
            privileged.hint
        );
        let unknown = decode(&probe("level = \"strict\"").err().unwrap()).unwrap();
        assert_eq!(
            unknown.hint,
            "use \"restricted\" (the default) or \"baseline\""
        );
    }
}
