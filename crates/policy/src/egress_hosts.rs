//! `egress.hosts` as agentc's egress proxy reads it, parsed once when the profile is loaded
//! ([`crate::LoadedProfile::egress_hosts`]). The checks, the resolver (the proxy's `--allow=`
//! words), `agentc explain`, the findings and the Kubernetes renderer read these entries; none
//! parses the profile's text again.

use std::fmt;

use agentc_egress::{EgressError, HostSpec};

/// One entry of `egress.hosts`: its text as written (trimmed), and the host specs agentc's
/// egress proxy allows for it, or why it allows none.
///
/// A leading-dot entry (`.example.com`, which the image's firewall reads as the domain and its
/// subdomains) is the two specs the proxy knows (`example.com`, `*.example.com`); any other
/// entry is one spec ([`HostSpec::parse`]).
///
/// ```
/// use agentc_policy::EgressHost;
/// let host = EgressHost::new(" .Example.com ");
/// assert_eq!(host.text(), ".Example.com");
/// assert_eq!(host.written(), ["Example.com", "*.Example.com"]);
/// let specs: Vec<String> = host.specs().unwrap().iter().map(|s| s.to_string()).collect();
/// assert_eq!(specs, ["example.com", "*.example.com"]);
/// assert_eq!(
///     EgressHost::new("a_b.com").specs().unwrap_err().to_string(),
///     "invalid host spec `a_b.com`: a character other than letters, digits, '-' and '.' in a host name"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressHost {
    text: String,
    specs: Result<Vec<HostSpec>, HostRefusal>,
    /// A leading-dot entry read as one spec, which the proxy refuses (its `--allow=` word
    /// knows `*.domain`); `None` for any other entry, which is one spec already.
    dotted: Option<Result<HostSpec, HostRefusal>>,
}

/// Why an `egress.hosts` entry is not a host spec the egress proxy takes: the spec it was read
/// as (the entry, or one of a leading-dot entry's two) and the proxy's reason. Its text is the
/// egress crate's ([`EgressError::HostSpec`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRefusal {
    /// The spec refused, as written.
    pub spec: String,
    /// Why the proxy refuses it.
    pub reason: String,
}

impl fmt::Display for HostRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        EgressError::from(self.clone()).fmt(f)
    }
}

impl std::error::Error for HostRefusal {}

impl From<HostRefusal> for EgressError {
    fn from(refusal: HostRefusal) -> EgressError {
        EgressError::HostSpec {
            spec: refusal.spec,
            reason: refusal.reason,
        }
    }
}

impl EgressHost {
    /// Reads one entry (trimmed) as the egress proxy does.
    pub fn new(text: &str) -> EgressHost {
        let text = text.trim().to_string();
        let written = written_specs(&text);
        let specs = written.iter().map(|spec| parse(spec)).collect();
        let dotted = (written.len() > 1).then(|| parse(&text));
        EgressHost {
            text,
            specs,
            dotted,
        }
    }

    /// The entry as written (trimmed): what `AGENT_ALLOWED_EGRESS`, `agentc explain` and the
    /// errors show.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The entry's `--allow` specs as written, before the proxy normalizes them: the entry, or
    /// a leading-dot entry's domain and its `*.` wildcard.
    pub fn written(&self) -> Vec<String> {
        written_specs(&self.text)
    }

    /// The host specs the proxy allows for the entry, or why it allows none (the first of its
    /// specs refused).
    pub fn specs(&self) -> Result<&[HostSpec], &HostRefusal> {
        self.specs.as_deref()
    }

    /// The entry read as one host spec, as the proxy reads an `--allow=` word: what a renderer
    /// that does not expand a leading-dot entry passes (Kubernetes), which refuses such an
    /// entry (the proxy's word for the subdomains is `*.domain`).
    pub fn single(&self) -> Result<&HostSpec, &HostRefusal> {
        match &self.dotted {
            Some(dotted) => dotted.as_ref(),
            None => self.specs().map(|specs| &specs[0]),
        }
    }

    /// The host specs the proxy allows for `hosts`, in order; an entry it refuses adds none
    /// (it is refused by field when the profile is checked).
    pub fn allowed(hosts: &[EgressHost]) -> Vec<HostSpec> {
        hosts
            .iter()
            .filter_map(|host| host.specs().ok())
            .flatten()
            .cloned()
            .collect()
    }

    /// The entries of a list of texts, in order.
    pub fn all(texts: &[impl AsRef<str>]) -> Vec<EgressHost> {
        texts
            .iter()
            .map(|text| EgressHost::new(text.as_ref()))
            .collect()
    }
}

impl From<&str> for EgressHost {
    fn from(text: &str) -> EgressHost {
        EgressHost::new(text)
    }
}

impl From<String> for EgressHost {
    fn from(text: String) -> EgressHost {
        EgressHost::new(&text)
    }
}

/// One spec as the proxy reads it, or why it refuses it.
fn parse(spec: &str) -> Result<HostSpec, HostRefusal> {
    HostSpec::parse(spec).map_err(|error| HostRefusal {
        spec: spec.to_string(),
        reason: match error {
            EgressError::HostSpec { reason, .. } => reason,
            other => other.to_string(),
        },
    })
}

/// The `--allow` specs of one entry as written: a leading-dot entry (`.example.com`) is the
/// domain and its `*.` wildcard; any other entry is itself.
fn written_specs(host: &str) -> Vec<String> {
    match host.strip_prefix('.') {
        Some(domain) if !domain.starts_with('.') && !domain.is_empty() => {
            vec![domain.to_string(), format!("*.{domain}")]
        }
        _ => vec![host.to_string()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_parsed_once_into_the_specs_the_proxy_allows() {
        let host = EgressHost::new("  API.Example.com.:8443 ");
        assert_eq!(host.text(), "API.Example.com.:8443");
        assert_eq!(host.written(), ["API.Example.com.:8443"]);
        let specs = host.specs().expect("a host spec");
        assert_eq!(specs, [HostSpec::parse("api.example.com:8443").unwrap()]);
        assert_eq!(specs[0].to_string(), "api.example.com:8443");

        assert_eq!(host.single(), Ok(&specs[0]));
        let domain = EgressHost::new(".example.org");
        // As one `--allow=` word, a leading-dot entry is refused.
        let single = domain.single().unwrap_err();
        assert_eq!(single.spec, ".example.org");
        assert_eq!(single.reason, "an empty label in a host name");
        let specs: Vec<String> = domain
            .specs()
            .unwrap()
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(specs, ["example.org", "*.example.org"]);
        for (text, kind) in [
            ("10.1.2.0/24:8000", true),
            ("[fd00::1]:443", true),
            ("a.example", false),
        ] {
            let host = EgressHost::new(text);
            assert_eq!(host.specs().unwrap()[0].is_addresses(), kind, "{text}");
            assert_eq!(host.specs().unwrap()[0].to_string(), text);
        }
    }

    #[test]
    fn a_refused_entry_keeps_the_proxys_reason_and_adds_no_spec() {
        let refused = EgressHost::new("0x0a000001");
        let refusal = refused.specs().unwrap_err();
        assert_eq!(refusal.spec, "0x0a000001");
        let error = HostSpec::parse("0x0a000001").unwrap_err();
        assert_eq!(refusal.to_string(), error.to_string());
        assert_eq!(
            EgressError::from(refusal.clone()).to_string(),
            error.to_string()
        );
        // A leading-dot entry is refused by the first of its specs that the proxy refuses.
        let dotted = EgressHost::new(".a_b.com");
        assert_eq!(dotted.specs().unwrap_err().spec, "a_b.com");
        for text in [
            "",
            "*",
            "..a.com",
            "a.*.com",
            "http://a.com",
            "a.com:0",
            "10.0.0.1/8",
        ] {
            assert!(
                EgressHost::new(text).specs().is_err(),
                "{text:?} is refused"
            );
        }
        let hosts = EgressHost::all(&["a.example", "0x0a000001", ".b.example"]);
        let allowed: Vec<String> = EgressHost::allowed(&hosts)
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(allowed, ["a.example", "b.example", "*.b.example"]);
    }
}
