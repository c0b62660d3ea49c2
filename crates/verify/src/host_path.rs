//! The host-path check of verify (`egress.host-path`), for a launch behind the egress proxy:
//! verify listens on UDP and TCP at the outside network's gateway address (an address of this
//! machine, read from the network's IPAM), and a short-lived container of the proxy image runs
//! `agentc egress-proxy host-path` ([`agentc_egress::host_path`]) on the probe's isolated
//! network with the sandbox's capabilities, sysctls, runtime and no-new-privileges, as the
//! sandbox's numeric user or else as root (the worst a name or the image's default can be).
//! It tries a datagram and a connection, a route with `NET_ADMIN`, ARP with `NET_RAW`, and
//! IPv6. The row fails when anything reaches the listener or the program saw a way through;
//! under `egress.allow_net_capabilities` that is expected, and the row says so.

use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, UdpSocket};

use agentc_egress::host_path::{CHECK, MARK};
use agentc_egress::probe::{CheckLine, Outcome};
use agentc_egress::PROXY_BINARY;
use agentc_engine::port::EnginePort;
use agentc_policy::{ContainerSpec, EgressSpec, Network, LABEL_KIND, NET_CAPABILITIES};

use super::check::Check;
use super::check_run::check_output;
use super::egress::ProxyFacts;

/// The value of `io.agentc.kind` on the host-path container.
pub const KIND_HOST_PATH_CHECK: &str = "verify-host-path";

/// The suffix of the host-path container's name, after the probe's.
pub const HOST_PATH_SUFFIX: &str = "-host-path";

/// The user the check runs as: the sandbox's own when it is a numeric non-zero uid (which
/// cannot regain a capability under no-new-privileges), else root, the worst an unset user
/// (the image's default) or a name can be.
pub fn check_user(user: Option<&str>) -> String {
    let numeric = user.filter(|user| {
        let uid = user.split(':').next().unwrap_or_default().trim();
        uid.parse::<u32>().is_ok_and(|uid| uid != 0)
            && user
                .split(':')
                .nth(1)
                .is_none_or(|gid| gid.trim().parse::<u32>().is_ok())
    });
    numeric.unwrap_or("0:0").to_string()
}

/// The host-path container of the probe `probe_name`: the proxy's spec (limits, log, read-only
/// root, labels, among them `io.agentc.egress-for=PROBE`) running `agentc egress-proxy
/// host-path --target=TARGET` in the proxy's `image`, with the sandbox's (`workload`'s)
/// capabilities, no-new-privileges, sysctls, runtime and AppArmor, as [`check_user`], on the
/// isolated `network`.
pub fn host_path_spec(
    egress: &EgressSpec,
    workload: &ContainerSpec,
    probe_name: &str,
    network: &str,
    image: &str,
    target: SocketAddrV4,
) -> ContainerSpec {
    let mut spec = (*egress.proxy).clone();
    spec.name = Some(format!("{probe_name}{HOST_PATH_SUFFIX}"));
    spec.image = image.to_string();
    spec.entrypoint = None;
    spec.command = vec![
        PROXY_BINARY.to_string(),
        "egress-proxy".to_string(),
        "host-path".to_string(),
        format!("--target={target}"),
    ];
    spec.user = Some(check_user(workload.user.as_deref()));
    spec.cap_drop_all = workload.cap_drop_all;
    spec.cap_add = workload.cap_add.clone();
    spec.no_new_privileges = workload.no_new_privileges;
    spec.sysctls = workload.sysctls.clone();
    spec.runtime = workload.runtime.clone();
    spec.apparmor = workload.apparmor;
    spec.network = Network::Named {
        name: network.to_string(),
    };
    spec.network_aliases.clear();
    spec.dns = workload.dns.clone();
    spec.env.clear();
    spec.ports.clear();
    spec.exposed_ports.clear();
    spec.egress = None;
    spec.labels
        .insert(LABEL_KIND.to_string(), KIND_HOST_PATH_CHECK.to_string());
    spec.interactive = false;
    spec.tty = false;
    spec.auto_remove = false;
    spec.detach = true;
    spec
}

/// The first IPv4 gateway of a network's inspect (`IPAM.Config[].Gateway`).
pub fn gateway_of(inspect: &serde_json::Value) -> Option<Ipv4Addr> {
    inspect
        .pointer("/IPAM/Config")?
        .as_array()?
        .iter()
        .filter_map(|config| config.get("Gateway")?.as_str()?.parse().ok())
        .next()
}

/// The name `docker network inspect` knows the outside network by.
fn outside_name(egress: &EgressSpec) -> String {
    match &egress.outside {
        Network::Named { name } => name.clone(),
        _ => "bridge".to_string(),
    }
}

/// verify's listener on the host: UDP and TCP on one port of the gateway address.
pub struct HostListener {
    udp: UdpSocket,
    tcp: TcpListener,
    /// Where it listens.
    pub address: SocketAddrV4,
}

impl HostListener {
    /// Listens on a free port of `ip` (UDP and TCP alike); `Err` when `ip` is not an address of
    /// this machine (a remote engine) or no port is free for both.
    pub fn bind(ip: Ipv4Addr) -> Result<HostListener, String> {
        let mut last = String::new();
        for _ in 0..8 {
            let tcp = TcpListener::bind((ip, 0)).map_err(|error| format!("{ip}: {error}"))?;
            let port = tcp.local_addr().map_err(|error| error.to_string())?.port();
            match UdpSocket::bind((ip, port)) {
                Ok(udp) => {
                    for result in [udp.set_nonblocking(true), tcp.set_nonblocking(true)] {
                        result.map_err(|error| error.to_string())?;
                    }
                    return Ok(HostListener {
                        udp,
                        tcp,
                        address: SocketAddrV4::new(ip, port),
                    });
                }
                Err(error) => last = error.to_string(),
            }
        }
        Err(format!("no port of {ip} is free for UDP and TCP: {last}"))
    }

    /// What arrived: each datagram and each accepted connection, with its source.
    pub fn received(&self) -> Vec<String> {
        let mut seen = Vec::new();
        let mut buffer = [0u8; 512];
        loop {
            match self.udp.recv_from(&mut buffer) {
                Ok((n, from)) => {
                    let text = String::from_utf8_lossy(&buffer[..n]);
                    let what: String = text.chars().take(40).collect();
                    seen.push(format!("UDP from {from}: {what:?}"));
                }
                Err(error) if error.kind() == ErrorKind::WouldBlock => break,
                Err(error) => {
                    seen.push(format!("UDP: {error}"));
                    break;
                }
            }
        }
        loop {
            match self.tcp.accept() {
                Ok((_, from)) => seen.push(format!("TCP connection from {from}")),
                Err(error) if error.kind() == ErrorKind::WouldBlock => break,
                Err(error) => {
                    seen.push(format!("TCP: {error}"));
                    break;
                }
            }
        }
        seen
    }
}

/// The capabilities of the sandbox that open the host path (the escape hatch), in words.
fn hatch(workload: &ContainerSpec) -> Option<String> {
    let held: Vec<&str> = NET_CAPABILITIES
        .iter()
        .filter(|capability| workload.cap_add.contains(capability))
        .map(|capability| capability.as_str())
        .collect();
    (!held.is_empty()).then(|| held.join(" and "))
}

/// The row from the program's output (`Ok`) or why it did not run (`Err`), and what the
/// listener received.
pub fn host_path_check(
    output: Result<&str, &str>,
    received: &[String],
    workload: &ContainerSpec,
) -> Check {
    let line = output
        .ok()
        .and_then(|text| text.lines().filter_map(CheckLine::parse).next())
        .filter(|line| line.check == CHECK);
    let (expected, mut seen, mut ok, hint) = match (&line, output) {
        (Some(line), _) => (
            line.expected.clone(),
            line.seen.clone(),
            line.result != Outcome::Fail,
            line.hint.clone(),
        ),
        (None, Ok(text)) => (
            "reported by the host-path container".to_string(),
            format!(
                "not reported; its output ended: {}",
                text.lines().last().unwrap_or("(nothing)")
            ),
            false,
            None,
        ),
        (None, Err(error)) => (
            "reported by the host-path container".to_string(),
            format!("not run: {error}"),
            false,
            None,
        ),
    };
    let ours: Vec<&String> = received.iter().filter(|what| !what.is_empty()).collect();
    if ours.is_empty() {
        seen.push_str("; the host's listener received nothing");
    } else {
        ok = false;
        let list: Vec<&str> = ours.iter().map(|what| what.as_str()).collect();
        seen.push_str(&format!(
            "; the host's listener received {}",
            list.join(", ")
        ));
    }
    let hint = match hatch(workload) {
        Some(held) if !ok => Some(format!(
            "expected under egress.allow_net_capabilities = true: the sandbox keeps {held}, \
             which opens this path (the egress-host-path finding of `agentc explain`)"
        )),
        _ if !ok => hint.or_else(|| {
            Some(format!(
                "a packet marked {MARK:?} from the sandbox's isolated network reached this \
                 machine past the proxy"
            ))
        }),
        _ => None,
    };
    Check {
        what: CHECK.to_string(),
        expected,
        seen,
        ok,
        skipped: false,
        warned: false,
        fact: None,
        hint,
    }
}

/// The row when it cannot be tried: skipped, with why.
pub fn skipped(why: String) -> Check {
    Check {
        what: CHECK.to_string(),
        expected: "nothing from the sandbox reaches an address of this machine".to_string(),
        seen: format!("not tried: {why}"),
        ok: true,
        skipped: true,
        warned: false,
        fact: None,
        hint: None,
    }
}

/// What the host-path container is made of.
pub struct HostPathRun<'a> {
    /// The probe's egress companion.
    pub egress: &'a EgressSpec,
    /// The sandbox's spec as launched (its user, capabilities, sysctls).
    pub workload: &'a ContainerSpec,
    /// The probe container's name.
    pub probe: &'a str,
    /// The isolated network the probe joined.
    pub network: &'a str,
}

impl HostPathRun<'_> {
    fn container_name(&self) -> String {
        format!("{}{HOST_PATH_SUFFIX}", self.probe)
    }

    fn spec(
        &self,
        proxy_inspect: &serde_json::Value,
        outside_inspect: &serde_json::Value,
    ) -> Result<(ContainerSpec, HostListener), Check> {
        let facts = ProxyFacts::from_inspect(proxy_inspect, self.network).map_err(skipped)?;
        let outside = outside_name(self.egress);
        let gateway = gateway_of(outside_inspect)
            .ok_or_else(|| skipped(format!("the outside network {outside} has no IPv4 gateway")))?;
        let listener = HostListener::bind(gateway).map_err(|error| {
            skipped(format!(
                "cannot listen on the outside network's gateway {gateway}, which is not an \
                 address of this machine (a remote engine?): {error}"
            ))
        })?;
        let spec = host_path_spec(
            self.egress,
            self.workload,
            self.probe,
            self.network,
            &facts.image,
            listener.address,
        );
        Ok((spec, listener))
    }

    /// Runs the check over the engine `port` (started, waited for, its output read); the container is removed
    /// before returning. A step before the container (an inspect, the listener) that fails
    /// makes the row skipped, saying why.
    pub async fn run<P: EnginePort>(&self, port: &P) -> Check {
        let proxy = format!("{}-proxy", self.network);
        let outside = outside_name(self.egress);
        let proxy_inspect = match port.inspect_json(&proxy).await {
            Ok(inspect) => inspect,
            Err(error) => return skipped(format!("cannot inspect {proxy}: {error}")),
        };
        let outside_inspect = match port.network_inspect_json(&outside).await {
            Ok(inspect) => inspect,
            Err(error) => return skipped(format!("cannot inspect network {outside}: {error}")),
        };
        let (spec, listener) = match self.spec(&proxy_inspect, &outside_inspect) {
            Ok(prepared) => prepared,
            Err(check) => return check,
        };
        let output = check_output(port, &spec).await;
        let name = self.container_name();
        if let Err(error) = port.remove_container(&name).await {
            log::warn!("could not remove {name}: {error}");
        }
        host_path_check(
            output.as_deref().map_err(String::as_str),
            &listener.received(),
            self.workload,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_policy::Capability;
    use std::collections::BTreeMap;

    #[test]
    fn the_check_runs_as_a_numeric_user_or_else_as_root() {
        assert_eq!(check_user(Some("1000:1000")), "1000:1000");
        assert_eq!(check_user(Some("1000")), "1000");
        for worst in [
            None,
            Some("0"),
            Some("0:0"),
            Some("agent"),
            Some("1000:staff"),
        ] {
            assert_eq!(check_user(worst), "0:0", "{worst:?}");
        }
    }

    #[test]
    fn the_gateway_is_the_first_ipv4_of_the_ipam() {
        let inspect = serde_json::json!({"IPAM": {"Config": [
            {"Subnet": "fd00::/64", "Gateway": "fd00::1"},
            {"Subnet": "172.18.0.0/16", "Gateway": "172.18.0.1"}
        ]}});
        assert_eq!(gateway_of(&inspect), Some(Ipv4Addr::new(172, 18, 0, 1)));
        assert_eq!(
            gateway_of(&serde_json::json!({"IPAM": {"Config": []}})),
            None
        );
    }

    #[test]
    fn the_row_fails_on_anything_received_and_names_the_hatch() {
        let workload = ContainerSpec::empty("busybox");
        let pass = CheckLine {
            check: CHECK.to_string(),
            result: Outcome::Pass,
            expected: "e".to_string(),
            seen: "s".to_string(),
            hint: None,
        }
        .to_line();
        let row = host_path_check(Ok(&pass), &[], &workload);
        assert!(row.ok && !row.skipped, "{row:?}");
        assert!(row.seen.ends_with("the host's listener received nothing"));
        let got = ["UDP from 10.213.0.3:5000: \"agentc-host-path route\"".to_string()];
        let row = host_path_check(Ok(&pass), &got, &workload);
        assert!(!row.ok && row.hint.is_some(), "{row:?}");
        let mut hatched = workload.clone();
        hatched.cap_add.insert(Capability::NetRaw);
        let row = host_path_check(Ok(&pass), &got, &hatched);
        assert!(row.hint.unwrap().contains("egress.allow_net_capabilities"));
        let row = host_path_check(Ok("garbage"), &[], &workload);
        assert!(!row.ok && row.seen.contains("not reported"));
        let row = host_path_check(Err("cannot create"), &[], &workload);
        assert!(!row.ok && row.seen.starts_with("not run: cannot create"));
    }

    #[test]
    fn the_container_has_the_sandboxs_privileges_and_the_proxys_image() {
        let mut workload = ContainerSpec::empty("busybox");
        workload.cap_drop_all = true;
        workload.no_new_privileges = true;
        workload.cap_add.insert(Capability::NetAdmin);
        workload
            .sysctls
            .insert("net.ipv6.conf.all.disable_ipv6".into(), "1".into());
        let egress = EgressSpec {
            network: agentc_policy::IsolatedNetwork {
                name: "box-egress".into(),
                subnet: "10.213.0.0/28".into(),
                internal: true,
                options: BTreeMap::new(),
                labels: BTreeMap::new(),
            },
            outside: Network::Default,
            proxy: Box::new(ContainerSpec::empty("placeholder")),
            proxy_address: Ipv4Addr::new(10, 213, 0, 2),
            credentials: Vec::new(),
        };
        let target = SocketAddrV4::new(Ipv4Addr::new(172, 18, 0, 1), 40000);
        let spec = host_path_spec(
            &egress,
            &workload,
            "box-verify",
            "box-egress",
            "img",
            target,
        );
        assert_eq!(spec.name.as_deref(), Some("box-verify-host-path"));
        assert_eq!(spec.image, "img");
        assert_eq!(spec.command.last().unwrap(), "--target=172.18.0.1:40000");
        assert_eq!(spec.user.as_deref(), Some("0:0"));
        assert_eq!(spec.cap_add, workload.cap_add);
        assert_eq!(spec.sysctls, workload.sysctls);
        assert!(spec.no_new_privileges && spec.cap_drop_all && spec.detach);
        assert_eq!(outside_name(&egress), "bridge");
    }
}
