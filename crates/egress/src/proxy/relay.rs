//! The relays of the workload's published ports: a listener per `--relay`, each connection
//! copied to the relay's one fixed target (the workload's address on the isolated network).
//! No allowlist decision: the traffic is inbound and its target fixed by the configuration.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::timeout;

use super::{relay, ClientIo, Shared};
use crate::log::{Event, Kind, Record};
use crate::policy::Reason;

/// Accepts the connections to one published port of the workload and relays each to
/// `target`: no allowlist decision (the connection is inbound, the target fixed), the same
/// connection slots and idle timeout as the proxy's clients, one line per connection.
pub(super) async fn serve_relay(listener: TcpListener, target: SocketAddr, shared: Arc<Shared>) {
    loop {
        let (stream, client) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                eprintln!("agentc egress-proxy: accept failed on a relay: {error}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        match shared.slots.clone().try_acquire_owned() {
            Ok(permit) => {
                tokio::spawn(relay_client(stream, client, target, shared.clone(), permit));
            }
            Err(_) => {
                // Dropping the stream closes it: a relayed protocol has no refusal to send.
                let mut line = Record::new(Kind::Relay, client, Reason::TooManyConnections);
                line.address = Some(target);
                line.detail = Some("the proxy is serving as many connections as it may".into());
                shared.emit(line);
            }
        }
    }
}

/// Connects a relayed client to the workload and copies both ways until both ends closed or
/// the idle timeout; a workload that refuses or does not answer closes the client and is a
/// `connect-failed` line.
async fn relay_client(
    stream: TcpStream,
    client: SocketAddr,
    target: SocketAddr,
    shared: Arc<Shared>,
    _permit: OwnedSemaphorePermit,
) {
    let _ = stream.set_nodelay(true);
    // A relayed connection is one line, when it closes: there is no request to decide.
    let mut line = Record::new(Kind::Relay, client, Reason::Allowed);
    line.event = Event::Close;
    line.address = Some(target);
    let limit = shared.limits.connect_timeout();
    let upstream = match timeout(limit, TcpStream::connect(target)).await {
        Ok(Ok(upstream)) => upstream,
        failed => {
            let detail = match failed {
                Ok(Err(error)) => format!("{target}: {error}"),
                _ => format!("{target}: no answer in {} s", limit.as_secs()),
            };
            let mut line = line.close(Reason::ConnectFailed);
            line.detail = Some(detail);
            shared.emit(line);
            return;
        }
    };
    let _ = upstream.set_nodelay(true);
    relay(
        ClientIo::Tcp(stream),
        Vec::new(),
        super::Conn::Tcp(upstream),
        line,
        &shared,
    )
    .await;
}
