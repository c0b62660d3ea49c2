//! The Pod Security level a rendering meets and where it was set: the profile's
//! `kubernetes.pod_security` (restricted by default). The checker of each level is
//! [`crate::pss`]'s.

use agentc_policy::{LoadedProfile, Origin, PodSecurityLevel};

/// The profile field that sets the level.
pub const POD_SECURITY_FIELD: &str = "kubernetes.pod_security";

/// The Pod Security level the pods of a rendering meet, with its origin, which
/// `agentc explain --backend k8s` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSecurity {
    /// The level.
    pub level: PodSecurityLevel,
    /// Where it came from: the profile line of `kubernetes.pod_security`, or the default.
    pub origin: Origin,
}

impl Default for PodSecurity {
    /// Restricted, agentc's default.
    fn default() -> Self {
        PodSecurity {
            level: PodSecurityLevel::Restricted,
            origin: Origin::Default,
        }
    }
}

impl PodSecurity {
    /// The level a loaded profile sets, with its line; restricted by default.
    pub fn from_profile(loaded: &LoadedProfile) -> PodSecurity {
        let level = loaded.profile.kubernetes.pod_security;
        let origin = match loaded.position(POD_SECURITY_FIELD) {
            Some((line, column)) => Origin::Profile {
                field: POD_SECURITY_FIELD.to_string(),
                line: Some(line),
                column: Some(column),
            },
            None => Origin::Default,
        };
        PodSecurity { level, origin }
    }

    /// A level set in code, such as by a test, with no recorded origin beyond the default.
    pub fn at(level: PodSecurityLevel) -> PodSecurity {
        PodSecurity {
            level,
            origin: Origin::Default,
        }
    }

    /// Whether the level is weaker than restricted.
    pub fn is_weaker(&self) -> bool {
        self.level != PodSecurityLevel::Restricted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_sets_the_level_and_its_line() {
        let loaded = agentc_policy::load(
            "p.toml",
            "name = \"p\"\nagent = \"claude-code\"\n\n[kubernetes]\npod_security = \"Baseline\"\n",
        )
        .expect("valid");
        let pod_security = PodSecurity::from_profile(&loaded);
        assert_eq!(pod_security.level, PodSecurityLevel::Baseline);
        assert!(pod_security.is_weaker());
        assert_eq!(
            agentc_policy::origin_words(&pod_security.origin),
            "profile line 5 (kubernetes.pod_security)"
        );
    }

    #[test]
    fn without_the_table_the_level_is_the_restricted_default() {
        let loaded =
            agentc_policy::load("p.toml", "name = \"p\"\nagent = \"codex\"\n").expect("valid");
        assert_eq!(PodSecurity::from_profile(&loaded), PodSecurity::default());
        assert!(!PodSecurity::default().is_weaker());
    }
}
