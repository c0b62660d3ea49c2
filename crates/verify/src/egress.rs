//! The egress checks of verify, for a launch whose allowlist is enforced outside it: after the
//! probe, a short-lived container of the proxy's own image (the agentc binary) runs
//! `agentc egress-proxy probe` ([`agentc_egress::probe`]) on the probe's isolated network,
//! with the probe's DNS server and proxy variables, and hardened as the proxy is (read-only,
//! cap-drop ALL, uid 65534, no new privileges, its limits). Its JSON lines become [`Check`]s.
//!
//! This module is pure: which host `egress.allowed` reaches ([`EgressProbe`],
//! [`default_target`]), the check container's spec ([`check_spec`]), what `docker inspect` of
//! the proxy says ([`ProxyFacts`]) and the reading of the output ([`egress_checks`]). The
//! probe's flow runs it through either backend.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use agentc_egress::credential::Credential;
use agentc_egress::probe::credentials::{CREDENTIAL_CHECKS, PLACEHOLDER_VARIABLE};
use agentc_egress::probe::{CheckLine, Outcome, Target, CHECKS, PROXY_VARIABLES};
use agentc_egress::{HostSpec, PROXY_BINARY};
use agentc_policy::{
    ContainerSpec, EgressSpec, EnvValue, EnvVar, Network, CA_BUNDLE_PATH, CA_DIR_TARGET,
    LABEL_KIND, PROXY_PORT,
};

use super::check::Check;

/// The value of `io.agentc.kind` on the check container.
pub const KIND_EGRESS_CHECK: &str = "verify-egress-check";

/// The suffix of the check container's name, after the probe's.
pub const CHECK_SUFFIX: &str = "-egress-check";

/// Which host `egress.allowed` reaches (`agentc verify --egress-probe`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EgressProbe {
    /// The profile's first exact (non-wildcard) host ([`default_target`]).
    #[default]
    Profile,
    /// `none`: `egress.allowed` is skipped; no check reaches beyond the proxy.
    Skip,
    /// This host and port.
    Host(Target),
}

impl FromStr for EgressProbe {
    type Err = String;

    /// `none`, `HOST` (port 443) or `HOST:PORT`.
    fn from_str(text: &str) -> Result<EgressProbe, String> {
        if text.eq_ignore_ascii_case("none") {
            return Ok(EgressProbe::Skip);
        }
        text.parse().map(EgressProbe::Host)
    }
}

impl EgressProbe {
    /// The target for the proxy whose command is `proxy_command`; `Err` with why there is
    /// none (skipped, or no exact host on the allowlist).
    pub fn target(&self, proxy_command: &[String]) -> Result<Target, &'static str> {
        match self {
            EgressProbe::Skip => Err("not probed (--egress-probe none)"),
            EgressProbe::Host(target) => Ok(target.clone()),
            EgressProbe::Profile => default_target(proxy_command).ok_or(
                "not probed: egress.hosts has no exact host (only wildcards); name one with --egress-probe HOST[:PORT]",
            ),
        }
    }
}

/// The allowlist entries of the proxy whose command is `proxy_command` (its `--allow=SPEC`
/// words, in the profile's order).
fn allow_specs(proxy_command: &[String]) -> impl Iterator<Item = HostSpec> + '_ {
    proxy_command
        .iter()
        .filter_map(|arg| arg.strip_prefix("--allow="))
        .filter_map(|spec| HostSpec::parse(spec).ok())
}

/// The keys the proxy whose command is `proxy_command` holds (its `--credential=` words, read
/// by the proxy's own parser), in its order.
pub fn held_credentials(proxy_command: &[String]) -> Vec<Credential> {
    proxy_command
        .iter()
        .filter_map(|arg| arg.strip_prefix("--credential="))
        .filter_map(|word| Credential::parse(word).ok())
        .collect()
}

/// The first exact (non-wildcard) host of the proxy's allowlist (in the profile's order) whose
/// key the proxy does not hold: a bound host's TLS the proxy answers itself (it holds the key
/// and terminates the tunnel), so its answer would not show that upstream was reached. A bound
/// host only when every exact host is bound. A bare host means port 443, `host:port` that port.
pub fn default_target(proxy_command: &[String]) -> Option<Target> {
    let held = held_credentials(proxy_command);
    let exact: Vec<Target> = allow_specs(proxy_command)
        .filter_map(|spec| match spec.pattern {
            agentc_egress::host::HostPattern::Exact(host) => Some(Target {
                host,
                port: spec.port.unwrap_or(443),
            }),
            agentc_egress::host::HostPattern::Subdomains(_)
            | agentc_egress::host::HostPattern::Addresses(_) => None,
        })
        .collect();
    exact
        .iter()
        .find(|target| !held.iter().any(|key| key.binds(&target.host, target.port)))
        .or(exact.first())
        .cloned()
}

/// The address ranges of the proxy's allowlist (its `--allow=CIDR` arguments, a bare address
/// as its /32 or /128), as the check program's `--allowed-range=` arguments.
pub fn allowed_range_args(proxy_command: &[String]) -> Vec<String> {
    allow_specs(proxy_command)
        .filter_map(|spec| match spec.pattern {
            agentc_egress::host::HostPattern::Addresses(range) => {
                Some(format!("--allowed-range={range}"))
            }
            _ => None,
        })
        .collect()
}

/// The command of the check program (`agentc egress-proxy probe`) against the proxy whose own
/// command is `proxy_command`, reached at `proxy` (`IP:PORT`, or a Service's `HOST:PORT`):
/// `--allowed` for `target`, `--bound` for `bound` (a host whose key the proxy holds),
/// `--upstream-all` for a proxy that passes every other destination to its upstream (the
/// denied host goes there too, by the profile's choice), and the allowlist's address ranges.
/// What only one caller knows (`--outside`, `--timeout-ms`) it appends.
pub fn probe_command(
    proxy_command: &[String],
    proxy: &str,
    target: Option<&Target>,
    bound: Option<&str>,
) -> Vec<String> {
    let mut command = vec![
        PROXY_BINARY.to_string(),
        "egress-proxy".to_string(),
        "probe".to_string(),
        format!("--proxy={proxy}"),
    ];
    command.extend(target.map(|target| format!("--allowed={target}")));
    command.extend(bound.map(|host| format!("--bound={host}")));
    if proxy_command.iter().any(|word| word == "--upstream-all") {
        command.push("--upstream-all".to_string());
    }
    command.extend(allowed_range_args(proxy_command));
    command
}

/// What `docker inspect` of the proxy container says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyFacts {
    /// Its image (the check container runs the same).
    pub image: String,
    /// Its address on the isolated network.
    pub address: IpAddr,
    /// Its address on another network (the outside), if it has one.
    pub outside: Option<IpAddr>,
}

impl ProxyFacts {
    /// Reads them from `inspect` (one container's object); `isolated` is the isolated
    /// network's name.
    pub fn from_inspect(inspect: &serde_json::Value, isolated: &str) -> Result<ProxyFacts, String> {
        let image = inspect
            .pointer("/Config/Image")
            .and_then(|image| image.as_str())
            .filter(|image| !image.is_empty())
            .ok_or("the proxy's inspect names no image")?
            .to_string();
        let networks = inspect
            .pointer("/NetworkSettings/Networks")
            .and_then(|networks| networks.as_object())
            .ok_or("the proxy's inspect lists no network")?;
        let address_on = |network: &serde_json::Value| {
            network
                .get("IPAddress")
                .and_then(|address| address.as_str())
                .and_then(|address| address.parse::<IpAddr>().ok())
        };
        let address = networks
            .get(isolated)
            .and_then(address_on)
            .ok_or_else(|| format!("the proxy has no address on {isolated}"))?;
        let outside = networks
            .iter()
            .filter(|(name, _)| name.as_str() != isolated)
            .find_map(|(_, network)| address_on(network));
        Ok(ProxyFacts {
            image,
            address,
            outside,
        })
    }
}

/// The probe's environment (`Config.Env` of its inspect), by name.
fn probe_env(inspect: &serde_json::Value) -> Vec<(String, String)> {
    inspect
        .pointer("/Config/Env")
        .and_then(|env| env.as_array())
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.as_str()?.split_once('='))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

fn literal(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: EnvValue::Literal {
            value: value.to_string(),
        },
    }
}

/// The proxy variables of the probe's environment (`Config.Env` of its inspect): only those
/// names are read, so no other value (a secret) is ever copied. Behind a proxy that holds keys,
/// also `SSL_CERT_FILE` and the first key's placeholder (as
/// [`agentc_egress::probe::credentials::PLACEHOLDER_VARIABLE`]), unless the probe holds the real
/// value there (`real`, the caller's environment): then nothing of it is copied.
pub fn proxy_env(
    inspect: &serde_json::Value,
    egress: &EgressSpec,
    real: &std::collections::BTreeMap<String, String>,
) -> Vec<EnvVar> {
    let env = probe_env(inspect);
    let mut copied: Vec<EnvVar> = env
        .iter()
        .filter(|(name, _)| PROXY_VARIABLES.contains(&name.as_str()))
        .map(|(name, value)| literal(name, value))
        .collect();
    if let Some(credential) = egress.credentials.first() {
        copied.push(literal("SSL_CERT_FILE", CA_BUNDLE_PATH));
        let placeholder = env
            .iter()
            .find(|(name, _)| *name == credential.variable)
            .map(|(_, value)| value)
            .filter(|value| real.get(&credential.variable) != Some(*value));
        if let Some(placeholder) = placeholder {
            copied.push(literal(PLACEHOLDER_VARIABLE, placeholder));
        }
    }
    copied
}

/// `credentials.environment`: behind a proxy that holds keys, the probe's environment holds,
/// for each bound variable, a value that is not the caller's (`real`) and starts as the spec's
/// placeholder does; `None` when the proxy holds none. Values never reach the row.
pub fn credential_environment(
    container: &ContainerSpec,
    inspect: &serde_json::Value,
    real: &std::collections::BTreeMap<String, String>,
) -> Option<Check> {
    let egress = container
        .egress
        .as_ref()
        .filter(|e| !e.credentials.is_empty())?;
    let env = probe_env(inspect);
    let mut wrong = Vec::new();
    let mut held = Vec::new();
    for credential in &egress.credentials {
        for variable in std::iter::once(&credential.variable).chain(&credential.user_variable) {
            held.push(variable.clone());
            let prefix = container.env.iter().find_map(|var| match &var.value {
                EnvValue::Placeholder {
                    variable: of,
                    prefix,
                } if of == variable => Some(prefix.clone()),
                _ => None,
            });
            match env.iter().find(|(name, _)| name == variable) {
                None => wrong.push(format!("{variable} unset")),
                Some((_, value)) if real.get(variable) == Some(value) => {
                    wrong.push(format!("{variable} holds the real key"))
                }
                Some((_, value)) if !value.starts_with(prefix.as_deref().unwrap_or_default()) => {
                    wrong.push(format!("{variable} is not a placeholder"))
                }
                Some(_) => {}
            }
        }
    }
    Some(Check {
        what: "credentials.environment".to_string(),
        expected: format!("placeholders in {}, no real key", held.join(", ")),
        seen: if wrong.is_empty() {
            "placeholders only".to_string()
        } else {
            wrong.join(", ")
        },
        ok: wrong.is_empty(),
        skipped: false,
        warned: false,
        fact: None,
        hint: (!wrong.is_empty()).then(|| {
            "the sandbox must hold only the placeholders agentc made at launch: the egress \
             proxy holds the keys ([credentials])"
                .to_string()
        }),
    })
}

/// The check container of the probe `probe_name`: the proxy's hardened spec (`egress.proxy`:
/// user, read-only root, capabilities, no new privileges, limits, log, labels, among them
/// `io.agentc.egress-for=PROBE`, so that it is removed with the probe's companion) running
/// `agentc egress-proxy probe` in the proxy's image, on the isolated `network` with the
/// probe's `dns` servers and proxy variables `env`. No sysctl of the proxy's: it observes the
/// network as the workload's kernel sees it.
pub fn check_spec(
    egress: &EgressSpec,
    probe_name: &str,
    network: &str,
    dns: &[IpAddr],
    env: Vec<EnvVar>,
    facts: &ProxyFacts,
    target: Option<&Target>,
) -> ContainerSpec {
    let mut spec = (*egress.proxy).clone();
    spec.name = Some(format!("{probe_name}{CHECK_SUFFIX}"));
    spec.image = facts.image.clone();
    spec.entrypoint = None;
    // Behind a proxy that holds keys: its first bound host, and its CA read-only, as the
    // sandbox has it.
    let bound = egress.credentials.first().and_then(|c| c.hosts.first());
    spec.command = probe_command(
        &egress.proxy.command,
        &SocketAddr::new(facts.address, PROXY_PORT).to_string(),
        target,
        bound.map(String::as_str),
    );
    if let Some(outside) = facts.outside {
        spec.command.push(format!(
            "--outside={}",
            SocketAddr::new(outside, PROXY_PORT)
        ));
    }
    spec.mounts = egress
        .proxy
        .mounts
        .iter()
        .filter(|mount| mount.target == CA_DIR_TARGET)
        .map(|mount| agentc_policy::Mount {
            read_only: true,
            ..mount.clone()
        })
        .collect();
    spec.network = Network::Named {
        name: network.to_string(),
    };
    spec.network_aliases.clear();
    spec.dns = dns.to_vec();
    spec.env = env;
    spec.sysctls.clear();
    spec.ports.clear();
    spec.exposed_ports.clear();
    spec.egress = None;
    spec.labels
        .insert(LABEL_KIND.to_string(), KIND_EGRESS_CHECK.to_string());
    spec.interactive = false;
    spec.tty = false;
    spec.auto_remove = false;
    spec.detach = true;
    spec
}

/// The checks from the check container's output (`Ok`) or from why it did not run (`Err`):
/// every one of [`CHECKS`], in that order; one the output lacks fails with the output's end.
/// `allowed_skip` replaces what a skipped `egress.allowed` says it saw. With `credentials` (the
/// proxy holds keys), the credential checks follow.
pub fn egress_checks(
    output: Result<&str, &str>,
    allowed_skip: Option<&str>,
    credentials: bool,
) -> Vec<Check> {
    let lines: Vec<CheckLine> = match output {
        Ok(text) => text.lines().filter_map(CheckLine::parse).collect(),
        Err(_) => Vec::new(),
    };
    let extra: &[&str] = if credentials { &CREDENTIAL_CHECKS } else { &[] };
    CHECKS
        .iter()
        .chain(extra)
        .map(|name| match lines.iter().find(|line| line.check == *name) {
            Some(line) => {
                let seen = match (line.result, allowed_skip) {
                    (Outcome::Skip, Some(why)) => why.to_string(),
                    _ => line.seen.clone(),
                };
                Check {
                    what: line.check.clone(),
                    expected: line.expected.clone(),
                    seen,
                    ok: line.result != Outcome::Fail,
                    skipped: line.result == Outcome::Skip,
                    warned: line.result == Outcome::Warn,
                    fact: None,
                    hint: line.hint.clone(),
                }
            }
            None => Check {
                what: name.to_string(),
                expected: "reported by the egress check container".to_string(),
                seen: match output {
                    Ok(text) => format!("not reported; its output ended: {}", last_line(text)),
                    Err(error) => format!("not run: {error}"),
                },
                ok: false,
                skipped: false,
                warned: false,
                fact: None,
                hint: Some(
                    "the check container runs the proxy image's `agentc egress-proxy probe`: a program embedding agentc must pass a current agentc binary as VerifyInputs' proxy_executable; rerun with -v for the steps"
                        .to_string(),
                ),
            },
        })
        .collect()
}

fn last_line(text: &str) -> String {
    let line = text.lines().rev().find(|line| !line.trim().is_empty());
    let line: String = line.unwrap_or("(nothing)").chars().take(200).collect();
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_egress::probe::CheckLine;

    fn command(allow: &[&str]) -> Vec<String> {
        let mut argv = vec![
            PROXY_BINARY.to_string(),
            "egress-proxy".to_string(),
            "serve".to_string(),
            "--listen=0.0.0.0:3128".to_string(),
        ];
        argv.extend(allow.iter().map(|spec| format!("--allow={spec}")));
        argv.push("--allow-cidr=10.0.0.0/8".to_string());
        argv
    }

    #[test]
    fn the_default_target_is_the_first_exact_host_a_bare_one_on_443() {
        let argv = command(&[
            "*.githubusercontent.com",
            "api.anthropic.com",
            "b.example:80",
        ]);
        assert_eq!(
            default_target(&argv).unwrap().to_string(),
            "api.anthropic.com:443"
        );
        let argv = command(&["*.example.com:8443", "registry.npmjs.org:8080", "x.test"]);
        assert_eq!(
            default_target(&argv).unwrap().to_string(),
            "registry.npmjs.org:8080"
        );
        assert_eq!(default_target(&command(&["*.example.com"])), None);
        assert_eq!(default_target(&command(&[])), None);
    }

    #[test]
    fn the_flag_names_a_host_or_none() {
        assert_eq!("none".parse::<EgressProbe>(), Ok(EgressProbe::Skip));
        assert_eq!(
            "Allowed.Test:80".parse::<EgressProbe>(),
            Ok(EgressProbe::Host(Target {
                host: "allowed.test".into(),
                port: 80
            }))
        );
        assert!("10.0.0.1".parse::<EgressProbe>().is_err());
        assert!("*.x.test".parse::<EgressProbe>().is_err());
        let argv = command(&["*.w.test", "a.test"]);
        assert_eq!(
            EgressProbe::Profile.target(&argv).unwrap().to_string(),
            "a.test:443"
        );
        assert!(EgressProbe::Skip.target(&argv).is_err());
        let wildcards = EgressProbe::Profile.target(&command(&["*.w.test"]));
        assert!(wildcards.unwrap_err().contains("--egress-probe"));
        // A host whose key the proxy holds is answered by the proxy itself: the next one.
        let mut bound = command(&["api.anthropic.com", "gw.test:8443", "registry.npmjs.org"]);
        bound.push("--credential=name=a,header=x-api-key,env=K,host=api.anthropic.com".to_string());
        bound.push("--credential=name=g,header=authorization,env=G,host=gw.test:8443".to_string());
        assert_eq!(
            default_target(&bound).unwrap().to_string(),
            "registry.npmjs.org:443"
        );
        bound.retain(|word| word != "--allow=registry.npmjs.org");
        assert_eq!(
            default_target(&bound).unwrap().to_string(),
            "api.anthropic.com:443"
        );
    }

    #[test]
    fn the_check_is_told_the_proxy_its_target_its_bound_host_and_its_ranges() {
        let mut argv = command(&["api.test", "10.0.0.0/8"]);
        argv.push(
            "--credential=name=gw,header=authorization,scheme=bearer,env=GATEWAY_TOKEN,host=gw.test:8443"
                .to_string(),
        );
        let held = held_credentials(&argv);
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].env, "GATEWAY_TOKEN");
        assert_eq!(held[0].hosts, vec![("gw.test".to_string(), 8443)]);
        let target: Target = "api.test".parse().unwrap();
        assert_eq!(
            probe_command(
                &argv,
                "run-egress:3128",
                Some(&target),
                Some("gw.test:8443")
            ),
            [
                PROXY_BINARY,
                "egress-proxy",
                "probe",
                "--proxy=run-egress:3128",
                "--allowed=api.test:443",
                "--bound=gw.test:8443",
                "--allowed-range=10.0.0.0/8",
            ]
        );
        argv.push("--upstream-all".to_string());
        assert!(probe_command(&argv, "10.0.0.2:3128", None, None)
            .contains(&"--upstream-all".to_string()));
    }

    #[test]
    fn the_allowlists_address_ranges_are_told_to_the_check() {
        let argv = command(&["api.test", "10.0.0.0/8", "192.0.2.10", "*.w.test"]);
        assert_eq!(
            allowed_range_args(&argv),
            vec![
                "--allowed-range=10.0.0.0/8".to_string(),
                "--allowed-range=192.0.2.10/32".to_string(),
            ]
        );
        assert!(allowed_range_args(&command(&["api.test"])).is_empty());
    }

    fn line(check: &str, result: Outcome) -> String {
        CheckLine {
            check: check.to_string(),
            result,
            expected: "e".to_string(),
            seen: "s".to_string(),
            hint: (result == Outcome::Fail).then(|| "h".to_string()),
        }
        .to_line()
    }

    #[test]
    fn every_check_is_reported_and_a_missing_one_fails() {
        let mut output = String::from("agentc egress-proxy: starting\n");
        for check in CHECKS {
            let result = match check {
                "egress.allowed" => Outcome::Skip,
                "egress.dns" => Outcome::Fail,
                _ => Outcome::Pass,
            };
            if check != "egress.direct" {
                output.push_str(&line(check, result));
                output.push('\n');
            }
        }
        let checks = egress_checks(Ok(&output), Some("why skipped"), false);
        let names: Vec<&str> = checks.iter().map(|check| check.what.as_str()).collect();
        assert_eq!(names, CHECKS);
        let find = |name: &str| checks.iter().find(|check| check.what == name).unwrap();
        let allowed = find("egress.allowed");
        assert!(allowed.ok && allowed.skipped);
        assert_eq!(allowed.seen, "why skipped");
        let dns = find("egress.dns");
        assert!(!dns.ok && !dns.skipped);
        assert_eq!(dns.hint.as_deref(), Some("h"));
        assert!(find("egress.denied").ok);
        let direct = find("egress.direct");
        assert!(!direct.ok);
        assert!(direct.seen.contains("not reported"), "{}", direct.seen);
        let failed = egress_checks(Err("cannot create"), None, false);
        assert!(failed
            .iter()
            .all(|check| !check.ok && check.seen == "not run: cannot create"));
    }

    /// An `egress.allowed` the proxy let through to a host that did not answer is a `warn`
    /// row: it fails nothing (an offline machine passes verify), unlike a refusal.
    #[test]
    fn a_warned_allowed_check_fails_nothing_and_a_refused_one_fails() {
        let output = |allowed: Outcome| {
            CHECKS
                .iter()
                .map(|check| match *check {
                    "egress.allowed" => line(check, allowed),
                    _ => line(check, Outcome::Pass),
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let allowed = |checks: Vec<Check>| {
            checks
                .into_iter()
                .find(|check| check.what == "egress.allowed")
                .unwrap()
        };
        let warned = allowed(egress_checks(Ok(&output(Outcome::Warn)), None, false));
        assert!(warned.ok && warned.warned && !warned.skipped, "{warned:?}");
        let refused = allowed(egress_checks(Ok(&output(Outcome::Fail)), None, false));
        assert!(!refused.ok && !refused.warned, "{refused:?}");
    }

    #[test]
    fn the_proxy_is_read_from_its_inspect() {
        let inspect = serde_json::json!({
            "Config": {"Image": "agentc-egress:0123456789ab"},
            "NetworkSettings": {"Networks": {
                "outside-net": {"IPAddress": "172.30.0.3"},
                "box-egress": {"IPAddress": "10.213.4.2"}
            }}
        });
        let facts = ProxyFacts::from_inspect(&inspect, "box-egress").unwrap();
        assert_eq!(facts.image, "agentc-egress:0123456789ab");
        assert_eq!(facts.address.to_string(), "10.213.4.2");
        assert_eq!(facts.outside.unwrap().to_string(), "172.30.0.3");
        assert!(ProxyFacts::from_inspect(&inspect, "other").is_err());
    }

    #[test]
    fn only_the_proxy_variables_are_copied() {
        let inspect = serde_json::json!({"Config": {"Env": [
            "HTTP_PROXY=http://10.213.4.2:3128", "API_KEY=secret", "https_proxy=http://10.213.4.2:3128",
            "NO_PROXY=localhost"
        ]}});
        let mut egress = EgressSpec {
            network: agentc_policy::IsolatedNetwork {
                name: "box-egress".into(),
                subnet: "10.213.4.0/28".into(),
                internal: true,
                options: Default::default(),
                labels: Default::default(),
            },
            outside: Network::Default,
            proxy: Box::new(ContainerSpec::empty("agentc-egress")),
            proxy_address: "10.213.4.2".parse().unwrap(),
            credentials: Vec::new(),
        };
        let real = std::collections::BTreeMap::new();
        let names: Vec<String> = proxy_env(&inspect, &egress, &real)
            .into_iter()
            .map(|var| var.name)
            .collect();
        assert_eq!(names, ["HTTP_PROXY", "https_proxy"]);
        // Behind a proxy that holds API_KEY: its placeholder is copied, never a real value.
        egress.credentials.push(agentc_policy::CredentialSpec {
            name: "api".into(),
            variable: "API_KEY".into(),
            user_variable: None,
            hosts: vec!["api.example.com".into()],
            header: "x-api-key".into(),
            scheme: None,
        });
        let names: Vec<String> = proxy_env(&inspect, &egress, &real)
            .into_iter()
            .map(|var| format!("{}={:?}", var.name, var.value))
            .collect();
        assert!(
            names
                .iter()
                .any(|n| n.starts_with("AGENTC_VERIFY_PLACEHOLDER=")),
            "{names:?}"
        );
        let real =
            std::collections::BTreeMap::from([("API_KEY".to_string(), "secret".to_string())]);
        let names: Vec<String> = proxy_env(&inspect, &egress, &real)
            .into_iter()
            .map(|var| var.name)
            .collect();
        assert_eq!(names, ["HTTP_PROXY", "https_proxy", "SSL_CERT_FILE"]);
        let mut container = ContainerSpec::empty("img");
        container.egress = Some(Box::new(egress));
        let row = credential_environment(&container, &inspect, &real).unwrap();
        assert!(
            !row.ok && row.seen == "API_KEY holds the real key",
            "{row:?}"
        );
        assert!(credential_environment(&ContainerSpec::empty("img"), &inspect, &real).is_none());
    }
}
