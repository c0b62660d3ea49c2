//! The placeholders of a launch: each [`EnvValue::Placeholder`] of the workload and of its
//! egress proxy made into a literal before anything is rendered or created, the same value for
//! every entry of one variable, random (from the operating system) for every launch. The spec
//! itself never holds one: its digest stays that of the profile.

use std::collections::BTreeMap;

use agentc_policy::{ContainerSpec, EnvValue};

use crate::error::ExecError;

/// The random characters after a placeholder's prefix.
pub const PLACEHOLDER_LENGTH: usize = 48;

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// `prefix` and [`PLACEHOLDER_LENGTH`] random letters and digits.
pub fn placeholder(prefix: &str) -> Result<String, ExecError> {
    let mut bytes = [0u8; PLACEHOLDER_LENGTH];
    getrandom::fill(&mut bytes).map_err(|error| ExecError::Egress {
        step: "make the credential placeholders",
        message: error.to_string(),
        refusal: None,
    })?;
    // 248 is the largest multiple of 62 below 256: redraw above it, so every character is as
    // likely as any other.
    let mut out = String::from(prefix);
    let mut pool = bytes.to_vec();
    while out.len() < prefix.len() + PLACEHOLDER_LENGTH {
        match pool.pop() {
            Some(byte) if byte < 248 => out.push(ALPHABET[usize::from(byte) % 62] as char),
            Some(_) => {}
            None => {
                let mut more = [0u8; PLACEHOLDER_LENGTH];
                getrandom::fill(&mut more).map_err(|error| ExecError::Egress {
                    step: "make the credential placeholders",
                    message: error.to_string(),
                    refusal: None,
                })?;
                pool.extend_from_slice(&more);
            }
        }
    }
    Ok(out)
}

/// Makes every placeholder of `spec` and of its egress proxy a literal (one value per
/// variable); returns the variables made, by name (no value leaves this function but in the
/// spec).
pub fn materialize(spec: &mut ContainerSpec) -> Result<Vec<String>, ExecError> {
    let mut made: BTreeMap<String, String> = BTreeMap::new();
    let mut envs = vec![&mut spec.env];
    if let Some(egress) = spec.egress.as_mut() {
        envs.push(&mut egress.proxy.env);
    }
    for env in envs {
        for var in env.iter_mut() {
            let EnvValue::Placeholder { variable, prefix } = &var.value else {
                continue;
            };
            let value = match made.get(variable) {
                Some(value) => value.clone(),
                None => {
                    let value = placeholder(prefix)?;
                    made.insert(variable.clone(), value.clone());
                    value
                }
            };
            var.value = EnvValue::Literal { value };
        }
    }
    Ok(made.into_keys().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_policy::{EgressSpec, EnvVar};

    fn placeholder_var(name: &str, variable: &str) -> EnvVar {
        EnvVar {
            name: name.into(),
            value: EnvValue::Placeholder {
                variable: variable.into(),
                prefix: "sk-ant-".into(),
            },
        }
    }

    #[test]
    fn one_value_per_variable_new_every_launch() {
        let mut spec = ContainerSpec::empty("img");
        spec.env = vec![placeholder_var("ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY")];
        let mut proxy = ContainerSpec::empty("agentc-egress");
        proxy.env = vec![placeholder_var(
            "AGENTC_PLACEHOLDER_ANTHROPIC_API_KEY",
            "ANTHROPIC_API_KEY",
        )];
        spec.egress = Some(Box::new(EgressSpec {
            network: agentc_policy::IsolatedNetwork {
                name: "n".into(),
                subnet: "10.213.0.0/28".into(),
                internal: true,
                options: Default::default(),
                labels: Default::default(),
            },
            outside: agentc_policy::Network::Default,
            proxy: Box::new(proxy),
            proxy_address: "10.213.0.2".parse().unwrap(),
            credentials: Vec::new(),
        }));
        let template = spec.clone();
        assert_eq!(materialize(&mut spec).unwrap(), ["ANTHROPIC_API_KEY"]);
        let value = |env: &[EnvVar]| match &env[0].value {
            EnvValue::Literal { value } => value.clone(),
            other => panic!("{other:?}"),
        };
        let workload = value(&spec.env);
        assert_eq!(workload, value(&spec.egress.as_ref().unwrap().proxy.env));
        assert!(workload.starts_with("sk-ant-") && workload.len() == 7 + PLACEHOLDER_LENGTH);
        let mut again = template;
        materialize(&mut again).unwrap();
        assert_ne!(value(&again.env), workload);
    }
}
