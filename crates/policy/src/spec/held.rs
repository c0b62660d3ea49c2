//! Secrets the profile itself holds: the credentials written in a proxy URL
//! (`http://user:password@proxy:3128`). A launch passes them by name, like any secret
//! ([`super::EnvValue::Secret`]); their values travel beside the spec, in memory only, never
//! in its serialization: no render, digest, lock, label or log holds them.

use std::collections::BTreeMap;
use std::fmt;

/// The values of a container's secret variables that its profile holds
/// ([`super::ContainerSpec::held_secrets`]), by variable name. A backend resolves each of
/// those variables from here before the caller's environment. `Debug` shows the names only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct HeldSecrets(BTreeMap<String, String>);

impl HeldSecrets {
    /// The value the profile holds for `name`, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Whether the profile holds no value.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The variables whose values the profile holds, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Each `(variable, value)`, for a process environment or a create body: never to print.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
    }

    /// `environment` with the held values on top: what a launch resolves its secrets from.
    pub fn over(&self, environment: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let mut merged = environment.clone();
        for (name, value) in self.iter() {
            merged.insert(name.to_string(), value.to_string());
        }
        merged
    }

    /// Holds `value` for `name`.
    pub fn insert(&mut self, name: &str, value: String) {
        self.0.insert(name.to_string(), value);
    }

    /// Holds nothing for `name` any more (the variable was replaced).
    pub(crate) fn remove(&mut self, name: &str) {
        self.0.remove(name);
    }
}

impl fmt::Debug for HeldSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_names_the_variables_and_never_shows_a_value() {
        let mut held = HeldSecrets::default();
        held.insert("AGENTC_UPSTREAM_AUTH", "alice:hunter2".into());
        let shown = format!("{held:?}");
        assert_eq!(shown, r#"{"AGENTC_UPSTREAM_AUTH"}"#);
        let environment = BTreeMap::from([
            ("AGENTC_UPSTREAM_AUTH".to_string(), "other".to_string()),
            ("HOME".to_string(), "/home/dev".to_string()),
        ]);
        let merged = held.over(&environment);
        assert_eq!(merged["AGENTC_UPSTREAM_AUTH"], "alice:hunter2");
        assert_eq!(merged["HOME"], "/home/dev");
        held.remove("AGENTC_UPSTREAM_AUTH");
        assert!(held.is_empty());
    }
}
