//! The launch CA: made when the proxy starts, its key only in the proxy's memory, valid for
//! [`CA_VALIDITY_DAYS`] and name-constrained to the hosts with a bound credential (so it cannot
//! vouch for any other name, even if its key leaked); a leaf per host, made on first use and
//! kept. What the workload trusts is written to the credential settings' `ca_dir`: the CA's
//! certificate ([`CA_FILE`]) and a bundle of Mozilla's roots, the profile's upstream CAs and the
//! launch CA ([`BUNDLE_FILE`]). Also the upstream side's trust: Mozilla's roots (compiled in)
//! and the profile's CAs ([`upstream_roots`]).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
    GeneralSubtree, IsCa, Issuer, KeyPair, KeyUsagePurpose, NameConstraints,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::sign::CertifiedKey;
use rustls::RootCertStore;
use serde::{Deserialize, Serialize};

use crate::credential::{BUNDLE_FILE, CA_FILE};
use crate::error::EgressError;

/// How long a launch CA (and its leaves) is valid.
pub const CA_VALIDITY_DAYS: i64 = 30;

fn ca_error(error: impl std::fmt::Display) -> EgressError {
    EgressError::Ca(error.to_string())
}

/// One launch's CA and the leaves it made.
pub struct LaunchCa {
    issuer: Issuer<'static, KeyPair>,
    der: CertificateDer<'static>,
    pem: String,
    window: (time::OffsetDateTime, time::OffsetDateTime),
    leaves: Mutex<HashMap<String, Arc<CertifiedKey>>>,
}

impl std::fmt::Debug for LaunchCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is never shown.
        f.debug_struct("LaunchCa").finish_non_exhaustive()
    }
}

impl LaunchCa {
    /// A new CA (P-256) that may sign only for `hosts` (each name and its subdomains).
    pub fn generate(hosts: &[String]) -> Result<LaunchCa, EgressError> {
        let now = time::OffsetDateTime::now_utc();
        let window = (
            now - time::Duration::hours(1),
            now + time::Duration::days(CA_VALIDITY_DAYS),
        );
        let params = ca_params(hosts, window)?;
        let key = KeyPair::generate().map_err(ca_error)?;
        let certificate = params.self_signed(&key).map_err(ca_error)?;
        Ok(LaunchCa {
            der: certificate.der().clone(),
            pem: certificate.pem(),
            issuer: Issuer::new(params, key),
            window,
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The CA a proxy started before on the same state directory made ([`LaunchCa::stored`]),
    /// when it may still serve: made for the same `hosts`, and valid for at least another
    /// hour. `None` otherwise (a new CA is made then).
    pub fn restored(stored: &StoredCa, hosts: &[String]) -> Option<LaunchCa> {
        let window = (
            time::OffsetDateTime::from_unix_timestamp(stored.not_before).ok()?,
            time::OffsetDateTime::from_unix_timestamp(stored.not_after).ok()?,
        );
        let now = time::OffsetDateTime::now_utc();
        if stored.hosts != hosts || window.1 < now + time::Duration::hours(1) || window.0 > now {
            return None;
        }
        let key = KeyPair::from_pem(&stored.key).ok()?;
        let der = CertificateDer::from_pem_slice(stored.certificate.as_bytes()).ok()?;
        let params = ca_params(hosts, window).ok()?;
        Some(LaunchCa {
            der,
            pem: stored.certificate.clone(),
            issuer: Issuer::new(params, key),
            window,
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// What a proxy started again on the same state directory needs to go on with this CA
    /// (its key included: kept only where the proxy's user can read it).
    pub fn stored(&self, hosts: &[String]) -> StoredCa {
        StoredCa {
            hosts: hosts.to_vec(),
            not_before: self.window.0.unix_timestamp(),
            not_after: self.window.1.unix_timestamp(),
            certificate: self.pem.clone(),
            key: self.issuer.key().serialize_pem(),
        }
    }

    /// The CA's certificate, PEM.
    pub fn certificate_pem(&self) -> &str {
        &self.pem
    }

    /// The CA's certificate, DER.
    pub fn certificate_der(&self) -> &CertificateDer<'static> {
        &self.der
    }

    /// The leaf for `host` (a normalized name), with the CA in its chain; made once.
    pub fn leaf(&self, host: &str) -> Result<Arc<CertifiedKey>, EgressError> {
        let mut leaves = self
            .leaves
            .lock()
            .map_err(|_| ca_error("the leaf cache is poisoned"))?;
        if let Some(leaf) = leaves.get(host) {
            return Ok(leaf.clone());
        }
        let mut params = CertificateParams::new(vec![host.to_string()]).map_err(ca_error)?;
        let mut name = DistinguishedName::new();
        name.push(DnType::CommonName, host);
        params.distinguished_name = name;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        (params.not_before, params.not_after) = self.window;
        let key = KeyPair::generate().map_err(ca_error)?;
        let certificate = params.signed_by(&key, &self.issuer).map_err(ca_error)?;
        let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let signer = rustls::crypto::ring::sign::any_supported_type(&private).map_err(ca_error)?;
        let leaf = Arc::new(CertifiedKey::new(
            vec![certificate.der().clone(), self.der.clone()],
            signer,
        ));
        leaves.insert(host.to_string(), leaf.clone());
        Ok(leaf)
    }

    /// The bundle the workload trusts ([`BUNDLE_FILE`]), PEM: Mozilla's roots, then `upstream`
    /// (the profile's CA certificates), then the launch CA.
    pub fn bundle(&self, upstream: &[CertificateDer<'static>]) -> String {
        let mut bundle = String::new();
        for root in webpki_root_certs::TLS_SERVER_ROOT_CERTS
            .iter()
            .chain(upstream)
        {
            bundle.push_str(&pem("CERTIFICATE", root.as_ref()));
        }
        bundle.push_str(&self.pem);
        bundle
    }

    /// Writes [`CA_FILE`] and [`LaunchCa::bundle`] ([`BUNDLE_FILE`]) into `dir` (which must
    /// exist). Each file is written whole under a temporary name, then renamed.
    pub fn write(&self, dir: &Path, bundle: &str) -> Result<(), EgressError> {
        for (file, text) in [(CA_FILE, self.pem.as_str()), (BUNDLE_FILE, bundle)] {
            let path = dir.join(file);
            let partial = dir.join(format!(".{file}.partial"));
            std::fs::write(&partial, text)
                .and_then(|()| std::fs::rename(&partial, &path))
                .map_err(|error| ca_error(format!("{}: {error}", path.display())))?;
        }
        Ok(())
    }
}

/// The CA's parameters: its name, constraint to `hosts` and validity `window`; the same for a
/// CA made and one restored, so the leaves a restored CA signs chain to the same certificate.
fn ca_params(
    hosts: &[String],
    window: (time::OffsetDateTime, time::OffsetDateTime),
) -> Result<CertificateParams, EgressError> {
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(ca_error)?;
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, "agentc egress proxy launch CA");
    name.push(DnType::OrganizationName, "agentc");
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.name_constraints = Some(NameConstraints {
        permitted_subtrees: hosts
            .iter()
            .map(|host| GeneralSubtree::DnsName(host.clone()))
            .collect(),
        excluded_subtrees: Vec::new(),
    });
    (params.not_before, params.not_after) = window;
    Ok(params)
}

/// A launch CA as the proxy keeps it in its state directory ([`crate::state`]), so that a
/// proxy started again (after a crash, by the engine's restart policy) goes on with the CA the
/// workload already trusts.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredCa {
    /// The hosts it may sign for, in the order the CA was made with.
    pub hosts: Vec<String>,
    /// Its validity, Unix seconds.
    pub not_before: i64,
    /// The end of its validity, Unix seconds.
    pub not_after: i64,
    /// Its certificate, PEM.
    pub certificate: String,
    /// Its private key, PKCS#8 PEM.
    pub key: String,
}

impl std::fmt::Debug for StoredCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is never shown.
        f.debug_struct("StoredCa")
            .field("hosts", &self.hosts)
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

/// One PEM block.
fn pem(label: &str, der: &[u8]) -> String {
    let encoded = crate::credential::base64_encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in encoded.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The certificates of the PEM files `paths` (a directory: each file in it, in name order)
/// that are CA certificates rustls can use; one that is not (not DER inside the armour, not a
/// certificate) is left out with a line on stderr, so that no client of the bundle chokes on it.
pub fn read_certificates(paths: &[String]) -> Result<Vec<CertificateDer<'static>>, EgressError> {
    let mut files = Vec::new();
    for path in paths {
        let path = Path::new(path);
        if path.is_dir() {
            let mut entries: Vec<_> = std::fs::read_dir(path)
                .map_err(|error| ca_error(format!("{}: {error}", path.display())))?
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|entry| entry.is_file())
                .collect();
            entries.sort();
            files.extend(entries);
        } else {
            files.push(path.to_path_buf());
        }
    }
    let mut certificates = Vec::new();
    for file in files {
        let bytes = std::fs::read(&file)
            .map_err(|error| ca_error(format!("{}: {error}", file.display())))?;
        for certificate in CertificateDer::pem_slice_iter(&bytes) {
            let certificate = certificate.map_err(|error| {
                ca_error(format!(
                    "{}: not a PEM certificate: {error}",
                    file.display()
                ))
            })?;
            if RootCertStore::empty().add(certificate.clone()).is_ok() {
                certificates.push(certificate);
            } else {
                eprintln!(
                    "agentc egress-proxy: {}: a certificate that cannot be read is left out",
                    file.display()
                );
            }
        }
    }
    Ok(certificates)
}

/// What the proxy trusts for upstream servers: Mozilla's roots and `extra`.
pub fn upstream_roots(extra: &[CertificateDer<'static>]) -> RootCertStore {
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned());
    roots.add_parsable_certificates(extra.iter().cloned());
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_chain_to_the_ca_and_are_made_once() {
        let ca = LaunchCa::generate(&["api.test".to_string()]).unwrap();
        assert!(ca
            .certificate_pem()
            .starts_with("-----BEGIN CERTIFICATE-----"));
        let leaf = ca.leaf("api.test").unwrap();
        assert_eq!(leaf.cert.len(), 2);
        assert!(Arc::ptr_eq(&leaf, &ca.leaf("api.test").unwrap()));
        let other = LaunchCa::generate(&["api.test".to_string()]).unwrap();
        assert_ne!(other.certificate_der(), ca.certificate_der());
        let dir = std::env::temp_dir().join(format!("agentc-ca-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        ca.write(&dir, &ca.bundle(&[])).unwrap();
        let bundle = std::fs::read_to_string(dir.join(BUNDLE_FILE)).unwrap();
        assert!(bundle.ends_with(ca.certificate_pem()));
        let read = read_certificates(&[dir.join(BUNDLE_FILE).display().to_string()]).unwrap();
        assert_eq!(
            read.len(),
            webpki_root_certs::TLS_SERVER_ROOT_CERTS.len() + 1
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
