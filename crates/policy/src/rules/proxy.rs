//! `[proxy]`: the HTTP(S) proxy variables, the bypass list and the CA trust the agent images
//! bake in (the CA file or directory must exist). A proxy URL with credentials
//! (`http://user:password@proxy:3128`) makes its variables secrets the profile holds
//! ([`crate::HeldSecrets`]).

use crate::check::Checker;
use crate::context::{EnvBuilder, Resolver};
use crate::error::PolicyError;
use crate::inputs::PathKind;
use crate::presets;
use crate::profile::Profile;
use crate::text::trim_url;

/// The proxy fields one by one; a CA file and a CA directory exclude each other.
pub(crate) fn check(ck: &mut Checker, profile: &Profile) {
    let Some(proxy) = &profile.proxy else {
        return;
    };
    if let Some(url) = &proxy.http {
        ck.http_url("proxy.http", url);
    }
    if let Some(url) = &proxy.https {
        ck.http_url("proxy.https", url);
    }
    for (index, host) in proxy.no_proxy.iter().enumerate() {
        ck.token(
            &format!("proxy.no_proxy[{index}]"),
            host,
            "one host, domain or address",
        );
    }
    if let Some(file) = &proxy.ca_file {
        ck.line("proxy.ca_file", file, "the path of a CA bundle");
    }
    if let Some(dir) = &proxy.ca_dir {
        ck.line(
            "proxy.ca_dir",
            dir,
            "the path of a directory of CA certificates",
        );
    }
    if proxy.ca_file.is_some() && proxy.ca_dir.is_some() {
        ck.fail_when(
            &["proxy.ca_file", "proxy.ca_dir"],
            "proxy",
            "proxy.ca_file and proxy.ca_dir are mutually exclusive",
            "keep one: a CA bundle file or a directory of certificates",
        );
    }
}

impl Resolver<'_> {
    /// Proxy variables and, for agent images (`ca_trust`), CA trust pointers (the CA itself is
    /// baked into the image's bundle by the build; here it must still exist).
    pub fn proxy_env(&self, env: &mut EnvBuilder, ca_trust: bool) -> Result<(), PolicyError> {
        let Some(proxy) = &self.profile.proxy else {
            return Ok(());
        };
        // A URL with credentials is a secret the profile holds: passed by name, its value
        // beside the spec, never in argv.
        let variables = [
            (&proxy.http, "proxy.http", ["HTTP_PROXY", "http_proxy"]),
            (&proxy.https, "proxy.https", ["HTTPS_PROXY", "https_proxy"]),
        ];
        for (url, field, names) in variables {
            let Some(url) = url else { continue };
            let value = trim_url(url);
            for name in names {
                if super::egress::upstream::credentials(url).is_some() {
                    env.held(name, value.clone(), field);
                } else {
                    env.literal(name, &value, field);
                }
            }
        }
        if !proxy.no_proxy.is_empty() {
            let value = proxy.no_proxy.join(",");
            env.literal("NO_PROXY", &value, "proxy.no_proxy");
            env.literal("no_proxy", &value, "proxy.no_proxy");
        }
        if proxy.http.is_some() || proxy.https.is_some() {
            let field = if proxy.http.is_some() {
                "proxy.http"
            } else {
                "proxy.https"
            };
            env.literal("NODE_USE_ENV_PROXY", "1", field);
        }
        if !ca_trust {
            return Ok(());
        }
        if let Some(file) = &proxy.ca_file {
            self.require_path("proxy.ca_file", file, PathKind::File, "proxy CA")?;
        }
        if let Some(dir) = &proxy.ca_dir {
            self.require_path(
                "proxy.ca_dir",
                dir,
                PathKind::Directory,
                "proxy CA directory",
            )?;
        }
        let field = match (&proxy.ca_file, &proxy.ca_dir) {
            (Some(_), _) => "proxy.ca_file",
            (None, Some(_)) => "proxy.ca_dir",
            (None, None) => return Ok(()),
        };
        for name in ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"] {
            env.literal(name, presets::CA_BUNDLE_TARGET, field);
        }
        Ok(())
    }
}
