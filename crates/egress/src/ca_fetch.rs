//! `agentc egress-proxy fetch-ca`: the launch CA's certificate and the bundle the workload
//! trusts, asked of the proxy ([`crate::request::CA_PATH_PREFIX`]) and written into a directory,
//! for a workload that cannot mount the proxy's volume (the init container of a Kubernetes
//! sandbox pod, which shares an `emptyDir` with the workload). Std only, no runtime.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::credential::{BUNDLE_FILE, CA_FILE};
use crate::error::EgressError;
use crate::request::CA_PATH_PREFIX;

/// The largest file accepted (a bundle of Mozilla's roots is about 220 KB).
const MAX_FILE: usize = 4 << 20;

/// Asks the proxy at `proxy` (`host:port`) for both files until it answers or `wait` has
/// passed (the proxy's pod may start after the workload's), then writes them into `dir`, each
/// whole under a temporary name, then renamed.
pub fn fetch(proxy: &str, dir: &Path, wait: Duration) -> Result<(), EgressError> {
    let deadline = Instant::now() + wait;
    let files = loop {
        match [CA_FILE, BUNDLE_FILE].map(|file| get(proxy, file)) {
            [Ok(ca), Ok(bundle)] => break [(CA_FILE, ca), (BUNDLE_FILE, bundle)],
            [Err(error), _] | [_, Err(error)] => {
                if Instant::now() >= deadline {
                    return Err(error);
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    };
    for (file, text) in files {
        let path = dir.join(file);
        let partial = dir.join(format!(".{file}.partial"));
        std::fs::write(&partial, text)
            .and_then(|()| std::fs::rename(&partial, &path))
            .map_err(|error| EgressError::CaFetch {
                proxy: proxy.to_string(),
                reason: format!("{}: {error}", path.display()),
            })?;
    }
    Ok(())
}

/// One `GET` of `file` on a new connection; its body, which must be PEM certificates.
fn get(proxy: &str, file: &str) -> Result<String, EgressError> {
    let fail = |reason: String| EgressError::CaFetch {
        proxy: proxy.to_string(),
        reason,
    };
    let timeout = Duration::from_secs(5);
    let address = proxy
        .to_socket_addrs()
        .map_err(|error| fail(format!("cannot resolve: {error}")))?
        .next()
        .ok_or_else(|| fail("no address".to_string()))?;
    let mut stream = TcpStream::connect_timeout(&address, timeout)
        .map_err(|error| fail(format!("cannot connect: {error}")))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|error| fail(error.to_string()))?;
    let request = format!(
        "GET {CA_PATH_PREFIX}{file} HTTP/1.1\r\nHost: {proxy}\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|error| fail(format!("cannot send the request: {error}")))?;
    let mut response = Vec::new();
    stream
        .take(MAX_FILE as u64 + 4096)
        .read_to_end(&mut response)
        .map_err(|error| fail(format!("no answer: {error}")))?;
    let response = String::from_utf8(response).map_err(|_| fail("not text".to_string()))?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| fail("an incomplete answer".to_string()))?;
    let status = head.lines().next().unwrap_or_default();
    if !status.starts_with("HTTP/1.1 200") {
        return Err(fail(format!("answered `{status}` for {file}")));
    }
    if body.len() > MAX_FILE || !body.starts_with("-----BEGIN CERTIFICATE-----") {
        return Err(fail(format!("{file} is not a PEM certificate")));
    }
    Ok(body.to_string())
}
