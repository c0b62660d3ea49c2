//! The JSON Schema of profile v1, generated from [`Profile`] (`agentc schema`).
//!
//! The schema describes the shape of a profile (fields, types, closed vocabularies as enums,
//! numeric ranges, defaults, documentation); the rules that span fields are enforced by
//! [`crate::load()`], not by the schema.

use crate::profile::Profile;

/// The `$id` of the profile v1 schema.
pub const PROFILE_SCHEMA_ID: &str = "https://agentc.dev/schema/profile-v1.json";

/// The JSON Schema (draft 2020-12) of a profile, with a title, `$id` and description.
pub fn profile_schema() -> serde_json::Value {
    let schema = schemars::schema_for!(Profile);
    let mut value = schema.to_value();
    if let Some(object) = value.as_object_mut() {
        object.insert("$id".to_string(), PROFILE_SCHEMA_ID.into());
        object.insert("title".to_string(), "agentc profile v1".into());
        object.insert(
            "description".to_string(),
            "A declarative sandbox profile for agentc: one agent (or custom image), its egress \
             policy, mounts, resources and security. Write it as TOML; unknown fields are errors."
                .into(),
        );
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_is_a_json_object_with_identity() {
        let schema = profile_schema();
        assert_eq!(schema["$id"], PROFILE_SCHEMA_ID);
        assert_eq!(schema["title"], "agentc profile v1");
        assert!(schema["$schema"]
            .as_str()
            .is_some_and(|s| s.contains("json-schema.org")));
        let text = serde_json::to_string_pretty(&schema).unwrap();
        let reparsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(reparsed, schema);
    }

    #[test]
    fn the_schema_mentions_every_top_level_field() {
        let schema = profile_schema();
        let properties = schema["properties"].as_object().expect("properties");
        let fields = [
            "schema_version",
            "name",
            "agent",
            "home_volume",
            "packages",
            "provider",
            "proxy",
            "egress",
            "credentials",
            "decant",
            "langfuse",
            "configuration_import",
            "configuration_mounts",
            "mounts",
            "image",
            "resources",
            "logging",
            "network",
            "security",
            "workspace",
            "kubernetes",
        ];
        for field in fields {
            assert!(properties.contains_key(field), "{field} missing");
        }
        assert_eq!(properties.len(), fields.len());
        assert_eq!(schema["additionalProperties"], false);
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert_eq!(required, ["name", "agent"]);
    }

    #[test]
    fn nested_definitions_are_present() {
        let text = profile_schema().to_string();
        for definition in [
            "EgressConfig",
            "MountConfig",
            "ResourcesConfig",
            "AgentName",
        ] {
            assert!(text.contains(definition), "{definition}");
        }
        assert!(text.contains("custom") && text.contains("claude-code"));
    }
}
