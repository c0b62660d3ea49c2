//! How the proxy resolves an allowed name: the host's resolver (the product), or a fixed
//! table that records every name asked (in-process tests, which must not send DNS queries
//! anywhere and must see what was looked up).

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

/// Where the proxy's look-ups go.
#[derive(Debug, Clone, Default)]
pub enum Resolver {
    /// `getaddrinfo` through tokio: the host's resolver.
    #[default]
    System,
    /// A fixed table; a name not in it does not resolve. Every name asked is recorded.
    Fixed(Arc<FixedTable>),
}

/// The table of [`Resolver::Fixed`] and the names asked of it.
#[derive(Debug, Default)]
pub struct FixedTable {
    /// Each name's addresses.
    pub names: HashMap<String, Vec<IpAddr>>,
    /// Every name looked up, in order.
    pub asked: Mutex<Vec<String>>,
}

impl FixedTable {
    /// A table answering `addresses` for every name in `names`.
    pub fn new(names: impl IntoIterator<Item = (String, Vec<IpAddr>)>) -> FixedTable {
        FixedTable {
            names: names.into_iter().collect(),
            asked: Mutex::new(Vec::new()),
        }
    }

    /// The names looked up so far.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Resolver {
    /// The addresses of `host` with `port`.
    pub(super) async fn lookup(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        match self {
            Resolver::System => Ok(tokio::net::lookup_host((host, port)).await?.collect()),
            Resolver::Fixed(table) => {
                table
                    .asked
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(host.to_string());
                match table.names.get(host) {
                    Some(ips) => Ok(ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect()),
                    None => Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        "no such name in the fixed table",
                    )),
                }
            }
        }
    }
}
