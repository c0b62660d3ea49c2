//! The credentials the proxy injects (`--credential=`): which header it sets, for which hosts,
//! from which of its environment variables, and the placeholder the workload holds instead.
//!
//! The workload's variable (`ANTHROPIC_API_KEY`) holds a placeholder made at launch; the
//! proxy's environment holds the real value under the same name and the placeholder under
//! [`placeholder_variable`] (`AGENTC_PLACEHOLDER_ANTHROPIC_API_KEY`). Only names ever appear
//! on a command line, in a log line or in an error: never a value.
//!
//! ```
//! use agentc_egress::credential::{Credential, Scheme};
//! let word = "name=anthropic,header=x-api-key,env=ANTHROPIC_API_KEY,host=api.anthropic.com";
//! let credential = Credential::parse(word).unwrap();
//! assert_eq!(credential.scheme, Scheme::Plain);
//! assert!(credential.binds("api.anthropic.com", 443));
//! assert!(!credential.binds("api.anthropic.com", 8443));
//! assert_eq!(credential.to_string(), word);
//! assert_eq!(credential.header_value("sk-ant-real", None), "sk-ant-real");
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::EgressError;

/// The prefix of the proxy's variable that holds a credential variable's placeholder.
pub const PLACEHOLDER_PREFIX: &str = "AGENTC_PLACEHOLDER_";

/// The name of the proxy's variable holding the placeholder of the workload's `variable`.
pub fn placeholder_variable(variable: &str) -> String {
    format!("{PLACEHOLDER_PREFIX}{variable}")
}

/// How the header's value is made from the credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// The value itself (`x-api-key: VALUE`).
    Plain,
    /// `Bearer VALUE`.
    Bearer,
    /// `Basic base64(USER:VALUE)`, the user from a second variable (`user-env=`), or
    /// `base64(VALUE)` when the value is `user:password` itself.
    Basic,
}

impl Scheme {
    /// The spelling on the command line (`plain`, `bearer`, `basic`).
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Plain => "plain",
            Scheme::Bearer => "bearer",
            Scheme::Basic => "basic",
        }
    }
}

/// One credential the proxy sets on requests to its hosts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credential {
    /// Its name (the profile's `[credentials.NAME]`): lower-case letters, digits, `-` and `_`.
    pub name: String,
    /// The header set (lower case): `authorization`, `x-api-key`, ...
    pub header: String,
    /// How its value is made.
    pub scheme: Scheme,
    /// The variable holding the value (in the proxy's environment; the workload's holds a
    /// placeholder).
    pub env: String,
    /// For [`Scheme::Basic`]: the variable holding the user (Langfuse's public key).
    pub user_env: Option<String>,
    /// The hosts and ports that receive it (normalized names; 443 when written without one).
    pub hosts: Vec<(String, u16)>,
}

fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'A'..=b'Z' | b'_'))
        && bytes.all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Whether `name` is a header token agentc sets: lower-case letters, digits and `-`.
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Whether `name` is a credential name: 1 to 63 lower-case letters, digits, `-` and `_`,
/// starting with a letter.
pub fn is_credential_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z'))
        && name.len() <= 63
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// Reads `host` or `host:port` (an exact host name; 443 without a port), as the probe reads
/// its targets ([`crate::probe::Target`]).
pub fn parse_host(text: &str) -> Result<(String, u16), String> {
    if text.contains('*') {
        return Err(format!(
            "`{text}` is a wildcard: a credential is bound to exact host names"
        ));
    }
    let target: crate::probe::Target = text.parse()?;
    Ok((target.host, target.port))
}

impl Credential {
    /// Reads a `--credential=` word: `name=N,header=H,env=VAR[,scheme=bearer|basic]
    /// [,user-env=VAR],host=HOST[:PORT][,host=...]`.
    pub fn parse(word: &str) -> Result<Credential, EgressError> {
        let fail = |reason: String| EgressError::Credential {
            credential: word.to_string(),
            reason,
        };
        let (mut name, mut header, mut env, mut user_env) = (None, None, None, None);
        let mut scheme = Scheme::Plain;
        let mut hosts = Vec::new();
        for part in word.split(',') {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| fail(format!("`{part}` is not KEY=VALUE")))?;
            match key {
                "name" if is_credential_name(value) => name = Some(value.to_string()),
                "header" if is_header_name(value) => header = Some(value.to_string()),
                "env" if is_env_name(value) => env = Some(value.to_string()),
                "user-env" if is_env_name(value) => user_env = Some(value.to_string()),
                "scheme" => {
                    scheme = match value {
                        "plain" => Scheme::Plain,
                        "bearer" => Scheme::Bearer,
                        "basic" => Scheme::Basic,
                        _ => return Err(fail(format!("unknown scheme `{value}`"))),
                    }
                }
                "host" => hosts.push(parse_host(value).map_err(fail)?),
                _ => return Err(fail(format!("`{part}` is not a valid setting"))),
            }
        }
        let (Some(name), Some(header), Some(env)) = (name, header, env) else {
            return Err(fail("name=, header= and env= are required".into()));
        };
        if hosts.is_empty() {
            return Err(fail("at least one host= is required".into()));
        }
        if user_env.is_some() && scheme != Scheme::Basic {
            return Err(fail("user-env= goes only with scheme=basic".into()));
        }
        Ok(Credential {
            name,
            header,
            scheme,
            env,
            user_env,
            hosts,
        })
    }

    /// Whether requests to `host` (normalized) on `port` get this credential.
    pub fn binds(&self, host: &str, port: u16) -> bool {
        self.hosts.iter().any(|(h, p)| h == host && *p == port)
    }

    /// The variables whose values the workload holds as placeholders: the value's, then the
    /// user's.
    pub fn variables(&self) -> Vec<&str> {
        std::iter::once(self.env.as_str())
            .chain(self.user_env.as_deref())
            .collect()
    }

    /// The header's value for the real `value` (and `user`, for [`Scheme::Basic`]).
    pub fn header_value(&self, value: &str, user: Option<&str>) -> String {
        match self.scheme {
            Scheme::Plain => value.to_string(),
            Scheme::Bearer => format!("Bearer {value}"),
            Scheme::Basic => {
                let pair = match user {
                    Some(user) => format!("{user}:{value}"),
                    None => value.to_string(),
                };
                format!("Basic {}", base64_encode(pair.as_bytes()))
            }
        }
    }
}

impl fmt::Display for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "name={},header={}", self.name, self.header)?;
        if self.scheme != Scheme::Plain {
            write!(f, ",scheme={}", self.scheme.as_str())?;
        }
        write!(f, ",env={}", self.env)?;
        if let Some(user) = &self.user_env {
            write!(f, ",user-env={user}")?;
        }
        for (host, port) in &self.hosts {
            if *port == 443 {
                write!(f, ",host={host}")?;
            } else {
                write!(f, ",host={host}:{port}")?;
            }
        }
        Ok(())
    }
}

/// What the proxy does after it refused a placeholder sent where it does not belong.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnReplay {
    /// Refuse the request (`403`, one `credential-replay` line) and go on (the default).
    #[default]
    Block,
    /// Refuse it, then stop the proxy: the sandbox has no way out from then on
    /// (`--on-replay=stop`; the proxy exits with [`REPLAY_EXIT_CODE`]).
    Stop,
}

/// The proxy's exit status after it stopped on a replay ([`OnReplay::Stop`]).
pub const REPLAY_EXIT_CODE: u8 = 3;

/// The proxy's credential settings: the credentials, where it writes the certificate of its
/// launch CA for the workload (`--ca-dir`), the CA certificates it trusts for upstreams besides
/// Mozilla's (`--upstream-ca`, files or directories of PEM), and what a replay does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CredentialConfig {
    /// The credentials (`--credential=`), names and variables unique.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub credentials: Vec<Credential>,
    /// The directory the proxy writes [`CA_FILE`] and [`BUNDLE_FILE`] into at start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_dir: Option<String>,
    /// Extra CA certificates trusted for upstream servers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub upstream_ca: Vec<String>,
    /// What a replay does.
    pub on_replay: OnReplay,
}

/// Where agentc's launches have the proxy write its CA ([`CredentialConfig::ca_dir`]): a volume
/// the workload mounts read-only at the same path. The proxy image has it, owned by its user.
pub const CA_DIR: &str = "/etc/agentc/egress-ca";

/// The launch CA's certificate in [`CredentialConfig::ca_dir`] (PEM): what
/// `NODE_EXTRA_CA_CERTS` names.
pub const CA_FILE: &str = "ca.pem";
/// Mozilla's roots, the upstream CAs and the launch CA in one PEM bundle: what
/// `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE` and `GIT_SSL_CAINFO` name.
pub const BUNDLE_FILE: &str = "bundle.pem";

impl CredentialConfig {
    /// Whether the proxy injects nothing.
    pub fn is_empty(&self) -> bool {
        self.credentials.is_empty()
    }

    /// Reads the `--credential` words, `--ca-dir`, `--upstream-ca` and `--on-replay`; names and
    /// variables must be unique, and a credential needs `--ca-dir`.
    pub fn from_args(
        words: &[impl AsRef<str>],
        ca_dir: Option<&str>,
        upstream_ca: &[impl AsRef<str>],
        on_replay: Option<&str>,
    ) -> Result<CredentialConfig, EgressError> {
        let mut config = CredentialConfig {
            ca_dir: ca_dir.map(str::to_string),
            upstream_ca: upstream_ca.iter().map(|p| p.as_ref().to_string()).collect(),
            ..CredentialConfig::default()
        };
        config.on_replay = match on_replay {
            None | Some("block") => OnReplay::Block,
            Some("stop") => OnReplay::Stop,
            Some(other) => {
                return Err(EgressError::Credential {
                    credential: format!("--on-replay={other}"),
                    reason: "expected block or stop".into(),
                })
            }
        };
        for word in words {
            let credential = Credential::parse(word.as_ref())?;
            let taken = config.credentials.iter().any(|c| {
                c.name == credential.name
                    || c.variables()
                        .iter()
                        .any(|v| credential.variables().contains(v))
            });
            if taken {
                return Err(EgressError::Credential {
                    credential: word.as_ref().to_string(),
                    reason: "its name or a variable is another credential's".into(),
                });
            }
            config.credentials.push(credential);
        }
        if !config.credentials.is_empty() && config.ca_dir.is_none() {
            return Err(EgressError::Credential {
                credential: "--credential".into(),
                reason: "credentials need --ca-dir, where the workload reads the proxy's CA".into(),
            });
        }
        Ok(config)
    }

    /// The command-line words, in order: each `--credential=`, `--ca-dir=`, each
    /// `--upstream-ca=`, `--on-replay=stop` when set.
    pub fn args(&self) -> Vec<String> {
        let mut args: Vec<String> = self
            .credentials
            .iter()
            .map(|c| format!("--credential={c}"))
            .collect();
        if let Some(dir) = &self.ca_dir {
            args.push(format!("--ca-dir={dir}"));
        }
        args.extend(
            self.upstream_ca
                .iter()
                .map(|p| format!("--upstream-ca={p}")),
        );
        if self.on_replay == OnReplay::Stop {
            args.push("--on-replay=stop".into());
        }
        args
    }

    /// Whether `word` is one [`CredentialConfig::args`] writes (a renderer that copies the
    /// credential settings from one proxy command to another picks them by this).
    pub fn is_arg(word: &str) -> bool {
        [
            "--credential=",
            "--ca-dir=",
            "--upstream-ca=",
            "--on-replay=",
        ]
        .iter()
        .any(|prefix| word.starts_with(prefix))
    }

    /// The credentials bound to `host` (normalized) on `port`.
    pub fn bound(&self, host: &str, port: u16) -> Vec<&Credential> {
        self.credentials
            .iter()
            .filter(|c| c.binds(host, port))
            .collect()
    }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn base64_encode(input: &[u8]) -> String {
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (index, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if index <= chunk.len() {
                out.push(BASE64[(n >> shift & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard or URL-safe base64, padded or not; `None` when it is not base64.
pub fn base64_decode(input: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32)
    };
    let trimmed = input.trim().trim_end_matches('=');
    let mut out = Vec::with_capacity(trimmed.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in trimmed.bytes() {
        acc = (acc << 6) | value(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits & 0xff) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_read_back_and_bad_ones_name_the_problem() {
        let word = "name=langfuse,header=authorization,scheme=basic,env=LANGFUSE_SECRET_KEY,\
                    user-env=LANGFUSE_PUBLIC_KEY,host=cloud.langfuse.com,host=eu.test:8443";
        let credential = Credential::parse(word).unwrap();
        assert_eq!(credential.to_string(), word);
        assert_eq!(
            credential.variables(),
            ["LANGFUSE_SECRET_KEY", "LANGFUSE_PUBLIC_KEY"]
        );
        assert!(credential.binds("eu.test", 8443));
        assert_eq!(
            credential.header_value("sk-lf-1", Some("pk-lf-2")),
            format!("Basic {}", base64_encode(b"pk-lf-2:sk-lf-1"))
        );
        for (bad, needle) in [
            ("name=a,header=x,env=A", "host="),
            ("name=a,header=x,env=A,host=*.x.test", "wildcard"),
            ("name=a,header=x,env=A,host=10.0.0.1", "not a host name"),
            ("name=a,header=X,env=A,host=a.test", "not a valid setting"),
            ("name=a,header=x,env=a,host=a.test", "not a valid setting"),
            (
                "name=a,header=x,env=A,user-env=B,host=a.test",
                "scheme=basic",
            ),
            (
                "name=a,header=x,env=A,scheme=digest,host=a.test",
                "unknown scheme",
            ),
        ] {
            let error = Credential::parse(bad).unwrap_err().to_string();
            assert!(error.contains(needle), "{bad}: {error}");
        }
    }

    #[test]
    fn base64_round_trips() {
        for input in [&b""[..], b"f", b"fo", b"foo", b"foob", b"pk-lf-1:sk-lf-2"] {
            let encoded = base64_encode(input);
            assert_eq!(base64_decode(&encoded).unwrap(), input);
        }
        assert_eq!(base64_encode(b"foob"), "Zm9vYg==");
        assert!(base64_decode("a b").is_none());
    }

    #[test]
    fn bearer_sets_the_scheme() {
        let credential =
            Credential::parse("name=openai,header=authorization,scheme=bearer,env=K,host=a.test")
                .unwrap();
        assert_eq!(credential.header_value("sk-1", None), "Bearer sk-1");
    }
}
