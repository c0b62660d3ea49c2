//! The probe's credential checks (`agentc verify` of a launch whose egress proxy holds keys),
//! neither of which reaches beyond the proxy:
//!
//! - `egress.ca-trusted`: a TLS handshake through the proxy (`CONNECT` to a bound host) with a
//!   rustls client that trusts `SSL_CERT_FILE` alone (the bundle the sandbox gets) verifies
//!   the launch CA's leaf; no request is sent, so the proxy connects no upstream;
//! - `egress.credential-replay`: the sandbox's placeholder (`AGENTC_VERIFY_PLACEHOLDER`, copied
//!   from the probe's environment) in a plain-HTTP request to a host on no allowlist is refused
//!   by the proxy as `credential-replay`, before anything is looked up.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

use super::{classify, exchange, open, CheckLine, ProbeConfig, Reply, Target, DENIED_HOST};

/// The variable holding the placeholder the replay check sends.
pub const PLACEHOLDER_VARIABLE: &str = "AGENTC_VERIFY_PLACEHOLDER";

/// The checks, in the order [`run`] prints them.
pub const CREDENTIAL_CHECKS: [&str; 2] = ["egress.ca-trusted", "egress.credential-replay"];

/// Both checks against the bound host `bound`.
pub fn run(config: &ProbeConfig, bound: &Target, env: &BTreeMap<String, String>) -> Vec<CheckLine> {
    vec![ca_trusted(config, bound, env), replay(config, env)]
}

fn ca_trusted(config: &ProbeConfig, bound: &Target, env: &BTreeMap<String, String>) -> CheckLine {
    let expected = format!(
        "a TLS handshake with {bound} through the proxy verifies against SSL_CERT_FILE alone"
    );
    let hint = "the sandbox does not trust the proxy's launch CA: SSL_CERT_FILE must name \
                /etc/agentc/egress-ca/bundle.pem, on the CA volume the proxy writes at start";
    let seen = handshake(config, bound, env);
    let pass = seen.is_ok();
    CheckLine::new(
        CREDENTIAL_CHECKS[0],
        pass,
        &expected,
        seen.unwrap_or_else(|error| error),
        hint,
    )
}

fn handshake(
    config: &ProbeConfig,
    bound: &Target,
    env: &BTreeMap<String, String>,
) -> Result<String, String> {
    let bundle = env.get("SSL_CERT_FILE").ok_or("SSL_CERT_FILE is unset")?;
    let mut roots = rustls::RootCertStore::empty();
    let certificates =
        CertificateDer::pem_file_iter(bundle).map_err(|error| format!("{bundle}: {error}"))?;
    for certificate in certificates {
        let certificate = certificate.map_err(|error| format!("{bundle}: {error}"))?;
        let _ = roots.add(certificate);
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|error| error.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let mut stream = open(config.proxy, config.timeout)?;
    let authority = bound.to_string();
    let reply = exchange(
        &mut stream,
        &format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n"),
        config.timeout,
    )?;
    if !reply.starts_with(b"HTTP/1.1 200") {
        return Err(format!("CONNECT {authority}: {}", classify(&reply)));
    }
    let name = ServerName::try_from(bound.host.clone()).map_err(|error| error.to_string())?;
    let mut connection =
        rustls::ClientConnection::new(Arc::new(tls), name).map_err(|error| error.to_string())?;
    stream
        .set_read_timeout(Some(config.timeout.min(Duration::from_secs(10))))
        .map_err(|error| error.to_string())?;
    while connection.is_handshaking() {
        connection
            .complete_io(&mut stream)
            .map_err(|error| format!("the handshake with {authority} failed: {error}"))?;
    }
    let _ = connection.writer().flush();
    connection.send_close_notify();
    let _ = connection.complete_io(&mut stream);
    let mut rest = [0u8; 1];
    let _ = stream.read(&mut rest);
    Ok(format!(
        "{authority}: verified against SSL_CERT_FILE ({bundle})"
    ))
}

fn replay(config: &ProbeConfig, env: &BTreeMap<String, String>) -> CheckLine {
    let expected = "a placeholder sent to another host is refused (credential-replay)";
    let hint = "the proxy let the sandbox's placeholder out: look at its decision lines \
                (`agentc egress log`)";
    let Some(placeholder) = env.get(PLACEHOLDER_VARIABLE).filter(|p| !p.is_empty()) else {
        return CheckLine::new(
            CREDENTIAL_CHECKS[1],
            false,
            expected,
            format!("{PLACEHOLDER_VARIABLE} is unset: the sandbox holds no placeholder"),
            hint,
        );
    };
    let request = format!(
        "GET http://{DENIED_HOST}/?key={placeholder} HTTP/1.1\r\nHost: {DENIED_HOST}\r\n\r\n"
    );
    let reply = open(config.proxy, config.timeout)
        .and_then(|mut stream| exchange(&mut stream, &request, config.timeout))
        .map(|bytes| classify(&bytes));
    let pass = matches!(&reply, Ok(Reply::Refused(403, reason)) if reason == "credential-replay");
    let seen = match reply {
        Ok(reply) => format!("GET http://{DENIED_HOST}/ with the placeholder: {reply}"),
        Err(error) => error,
    };
    CheckLine::new(CREDENTIAL_CHECKS[1], pass, expected, seen, hint)
}
