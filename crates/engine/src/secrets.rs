//! Secret resolution from an environment map: what a launch passes to the container for each
//! entry of the spec's environment, and the refusal of a required secret that is unset.
//!
//! A secret the profile itself holds (a proxy URL's credentials,
//! [`ContainerSpec::held_secrets`]) is resolved from there before `env`.
//!
//! The API backend sends the resolved entries in the create body; the CLI backend checks, then
//! hands docker the secrets' values in its environment ([`secret_values`]: the docker CLI reads
//! a bare `--env=NAME` from its own environment, and would silently drop an unset one).

use std::collections::BTreeMap;

use agentc_policy::{ContainerSpec, EnvValue, EnvVar};

use crate::error::ExecError;

/// Resolves the spec's environment for the daemon: literals as `NAME=value`, set secrets as
/// `NAME=value` from `env`, unset optional secrets left out. A required secret that is unset
/// is an error naming the variable.
pub fn resolve_env(
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
) -> Result<Vec<String>, ExecError> {
    if spec.held_secrets.is_empty() {
        return resolve_vars(&spec.env, env);
    }
    resolve_vars(&spec.env, &spec.held_secrets.over(env))
}

/// The value of each of the spec's secrets that is set: from the profile
/// ([`ContainerSpec::held_secrets`]), else from `env`. What the docker CLI's environment
/// must hold for the spec's `--env=NAME` entries; never to print.
pub fn secret_values(
    spec: &ContainerSpec,
    env: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    spec.env
        .iter()
        .filter(|var| matches!(var.value, EnvValue::Secret { .. }))
        .filter_map(|var| {
            let value = spec
                .held_secrets
                .get(&var.name)
                .or_else(|| env.get(&var.name).map(String::as_str))?;
            Some((var.name.clone(), value.to_string()))
        })
        .collect()
}

/// [`resolve_env`] for any list of entries, such as an exec's `--env`.
pub fn resolve_vars(
    vars: &[EnvVar],
    env: &BTreeMap<String, String>,
) -> Result<Vec<String>, ExecError> {
    let mut resolved = Vec::with_capacity(vars.len());
    for var in vars {
        match &var.value {
            EnvValue::Literal { value } => resolved.push(format!("{}={}", var.name, value)),
            EnvValue::Secret { required } => match env.get(&var.name) {
                Some(value) => resolved.push(format!("{}={}", var.name, value)),
                None if *required => {
                    return Err(ExecError::MissingSecret {
                        variable: var.name.clone(),
                    })
                }
                None => {}
            },
            // A launch makes its placeholders first ([`crate::credentials::materialize`]);
            // where none was made (a check before it) the template stands in.
            EnvValue::Placeholder { variable, prefix } => resolved.push(format!(
                "{}={}",
                var.name,
                agentc_policy::placeholder_template(prefix, variable)
            )),
        }
    }
    Ok(resolved)
}

/// The names of the spec's secrets that `env` sets: what a launch passes, for a log line that
/// names them without their values.
pub fn passed_secrets<'a>(spec: &'a ContainerSpec, env: &BTreeMap<String, String>) -> Vec<&'a str> {
    spec.env
        .iter()
        .filter(|var| {
            matches!(var.value, EnvValue::Secret { .. })
                && (env.contains_key(&var.name) || spec.held_secrets.get(&var.name).is_some())
        })
        .map(|var| var.name.as_str())
        .collect()
}

#[cfg(test)]
mod tests {

    use super::*;
    use agentc_policy::Hinted;

    fn spec(env: Vec<EnvVar>) -> ContainerSpec {
        ContainerSpec {
            env,
            ..ContainerSpec::empty("img")
        }
    }

    fn var(name: &str, value: EnvValue) -> EnvVar {
        EnvVar {
            name: name.into(),
            value,
        }
    }

    fn caller_env() -> BTreeMap<String, String> {
        BTreeMap::from([("TOKEN".to_string(), "s3cret-value".to_string())])
    }

    #[test]
    fn secrets_resolve_from_the_caller_env_and_unset_optional_ones_are_dropped() {
        let spec = spec(vec![
            var("A", EnvValue::Literal { value: "1".into() }),
            var("TOKEN", EnvValue::Secret { required: true }),
            var("OPTIONAL", EnvValue::Secret { required: false }),
        ]);
        assert_eq!(
            resolve_env(&spec, &caller_env()).unwrap(),
            vec!["A=1".to_string(), "TOKEN=s3cret-value".to_string()]
        );
        assert_eq!(passed_secrets(&spec, &caller_env()), ["TOKEN"]);
    }

    #[test]
    fn a_secret_the_profile_holds_wins_over_the_callers_and_only_secrets_get_values() {
        let mut spec = spec(vec![
            var("A", EnvValue::Literal { value: "1".into() }),
            var("TOKEN", EnvValue::Secret { required: true }),
            var("HTTP_PROXY", EnvValue::Secret { required: true }),
        ]);
        spec.held_secrets
            .insert("HTTP_PROXY", "http://u:pw@proxy:3128".into());
        // Held for a variable that is not a secret of the spec: never handed out.
        spec.held_secrets.insert("A", "other".into());
        let mut env = caller_env();
        env.insert("HTTP_PROXY".into(), "http://callers-proxy:3128".into());
        assert_eq!(
            resolve_env(&spec, &env).unwrap(),
            [
                "A=1",
                "TOKEN=s3cret-value",
                "HTTP_PROXY=http://u:pw@proxy:3128"
            ]
        );
        let values = secret_values(&spec, &env);
        assert_eq!(
            values,
            BTreeMap::from([
                (
                    "HTTP_PROXY".to_string(),
                    "http://u:pw@proxy:3128".to_string()
                ),
                ("TOKEN".to_string(), "s3cret-value".to_string()),
            ])
        );
        // Unset in the caller's environment, held by the profile: still passed.
        assert_eq!(passed_secrets(&spec, &BTreeMap::new()), ["HTTP_PROXY"]);
        assert!(
            resolve_env(&spec, &BTreeMap::new()).is_err(),
            "TOKEN is unset"
        );
    }

    #[test]
    fn a_missing_required_secret_is_named_without_any_value() {
        let spec = spec(vec![
            var("TOKEN", EnvValue::Secret { required: true }),
            var("API_KEY", EnvValue::Secret { required: true }),
        ]);
        let error = resolve_env(&spec, &caller_env()).unwrap_err();
        let message = error.with_hint().to_string();
        assert!(matches!(&error, ExecError::MissingSecret { variable } if variable == "API_KEY"));
        assert!(message.contains("API_KEY"), "{message}");
        assert!(!message.contains("s3cret-value"), "{message}");
    }
}
