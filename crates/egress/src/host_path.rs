//! The host-path check program (`agentc egress-proxy host-path`): run by `agentc verify` in a
//! short-lived container on a sandbox's isolated network with the sandbox's own capabilities,
//! sysctls and (at worst) user, it tries to reach an address of the host (the outside
//! network's gateway, where verify listens) past the proxy, and prints one JSON
//! [`CheckLine`] named [`CHECK`]:
//!
//! - a UDP datagram and a TCP connection to the target, as any process could;
//! - with `NET_ADMIN`: a host route to the target through the interface (`SIOCADDRT`), then the
//!   datagram and the connection again (the host answers ARP on the isolated bridge for its
//!   other addresses);
//! - with `NET_RAW`: an ARP request for the target on the interface (`AF_PACKET`), waiting for
//!   a reply;
//! - IPv6: no address on any interface (not even link-local), and a datagram to the all-nodes
//!   group `ff02::1` on the interface cannot be sent.
//!
//! The line fails when the TCP connection is accepted, an ARP reply comes back, an IPv6
//! address exists or the IPv6 datagram leaves; verify fails it as well when its listener
//! received anything. Each datagram carries [`MARK`], so verify knows it for the program's.
//! It sends to nothing but the target, the interface's ARP broadcast and `ff02::1`.

use std::ffi::CString;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use crate::probe::CheckLine;

/// The check's name.
pub const CHECK: &str = "egress.host-path";

/// How every datagram the program sends starts.
pub const MARK: &str = "agentc-host-path";

/// The capability bits of `/proc/self/status`'s `CapEff`.
const CAP_NET_ADMIN: u32 = 12;
const CAP_NET_RAW: u32 = 13;

/// What the program tried, and what each attempt gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempts {
    /// The interface (the first that is not `lo`).
    pub iface: String,
    /// The plain datagram and connection.
    pub plain: Vec<String>,
    /// The TCP connection succeeded (a way to the host).
    pub connected: bool,
    /// The route attempt: `None` without `NET_ADMIN`.
    pub route: Option<String>,
    /// The ARP attempt: `None` without `NET_RAW`; the replying MAC when one came.
    pub arp: Option<Result<Option<String>, String>>,
    /// The IPv6 addresses of `/proc/net/if_inet6` (interface and address).
    pub ipv6: Vec<String>,
    /// The datagram to `ff02::1`: `Ok` when it was sent.
    pub ipv6_send: Result<(), String>,
}

impl Default for Attempts {
    fn default() -> Attempts {
        Attempts {
            iface: String::new(),
            plain: Vec::new(),
            connected: false,
            route: None,
            arp: None,
            ipv6: Vec::new(),
            ipv6_send: Err("not tried".to_string()),
        }
    }
}

impl Attempts {
    /// The check line: fails on an accepted connection, an ARP reply, an IPv6 address or an
    /// IPv6 datagram sent.
    pub fn line(&self, target: SocketAddrV4) -> CheckLine {
        let mut seen = self.plain.clone();
        let mut pass = !self.connected;
        match &self.route {
            None => seen.push("no NET_ADMIN: no route added".to_string()),
            Some(route) => seen.push(route.clone()),
        }
        match &self.arp {
            None => seen.push("no NET_RAW: no ARP request".to_string()),
            Some(Ok(None)) => seen.push(format!("ARP for {}: no reply", target.ip())),
            Some(Ok(Some(mac))) => {
                pass = false;
                seen.push(format!("ARP for {}: answered by {mac}", target.ip()));
            }
            Some(Err(error)) => seen.push(format!("ARP request: {error}")),
        }
        if self.ipv6.is_empty() {
            seen.push("no IPv6 address".to_string());
        } else {
            pass = false;
            seen.push(format!("IPv6 {}", self.ipv6.join(", ")));
        }
        match &self.ipv6_send {
            Ok(()) => {
                pass = false;
                seen.push(format!("a datagram to ff02::1%{} was sent", self.iface));
            }
            Err(error) => seen.push(format!("ff02::1: {error}")),
        }
        CheckLine {
            check: CHECK.to_string(),
            result: if pass {
                crate::probe::Outcome::Pass
            } else {
                crate::probe::Outcome::Fail
            },
            expected: format!(
                "nothing reaches the host's {} past the proxy (UDP, TCP, a route with NET_ADMIN, \
                 ARP with NET_RAW); no IPv6 address",
                target.ip()
            ),
            seen: seen.join("; "),
            hint: (!pass).then(|| {
                "the sandbox can reach the host's own addresses on its isolated network: it must \
                 hold neither NET_ADMIN nor NET_RAW (egress.allow_net_capabilities, the \
                 egress-host-path finding) and run with IPv6 off"
                    .to_string()
            }),
        }
    }
}

/// Whether `CapEff` of a `/proc/self/status` text holds capability `bit`.
pub fn has_capability(status: &str, bit: u32) -> bool {
    status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << bit) != 0)
}

/// The addresses of `/proc/net/if_inet6`, as `IFACE ADDRESS`.
pub fn inet6_addresses(if_inet6: &str) -> Vec<String> {
    if_inet6
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            Some(format!("{} {}", fields.get(5)?, fields.first()?))
        })
        .collect()
}

/// An ARP request (Ethernet, IPv4) from `mac`/`sender` for `target`.
pub fn arp_request(mac: [u8; 6], sender: Ipv4Addr, target: Ipv4Addr) -> [u8; 28] {
    let mut packet = [0u8; 28];
    packet[..8].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    packet[8..14].copy_from_slice(&mac);
    packet[14..18].copy_from_slice(&sender.octets());
    packet[24..28].copy_from_slice(&target.octets());
    packet
}

/// The sender's MAC of an ARP reply from `target`, or `None` for any other packet.
pub fn arp_reply_from(packet: &[u8], target: Ipv4Addr) -> Option<[u8; 6]> {
    if packet.len() < 28 || packet[..8] != [0, 1, 8, 0, 6, 4, 0, 2] {
        return None;
    }
    (packet[14..18] == target.octets()).then(|| {
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&packet[8..14]);
        mac
    })
}

fn mac_words(mac: &[u8]) -> String {
    mac.iter()
        .map(|byte| format!("{byte:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Runs every attempt (see the module documentation) against `target`, each bounded by
/// `timeout`.
pub fn run(target: SocketAddrV4, timeout: Duration) -> CheckLine {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let status = read("/proc/self/status");
    let iface = interface().unwrap_or_else(|| "eth0".to_string());
    let mut attempts = Attempts {
        iface: iface.clone(),
        ..Attempts::default()
    };
    let (plain, connected) = send_and_connect(target, "plain", timeout);
    attempts.plain = plain;
    attempts.connected = connected;
    if has_capability(&status, CAP_NET_ADMIN) {
        attempts.route = Some(match add_route(&iface, *target.ip()) {
            Ok(()) => {
                let (seen, connected) = send_and_connect(target, "route", timeout);
                attempts.connected |= connected;
                format!(
                    "route {}/32 dev {iface} added; {}",
                    target.ip(),
                    seen.join("; ")
                )
            }
            Err(error) => format!("route {}/32 dev {iface}: {error}", target.ip()),
        });
    }
    if has_capability(&status, CAP_NET_RAW) {
        attempts.arp = Some(arp(&iface, *target.ip(), timeout));
    }
    attempts.ipv6 = inet6_addresses(&read("/proc/net/if_inet6"));
    attempts.ipv6_send = ipv6_all_nodes(&iface, target.port());
    // A fresh link-local address is tentative (duplicate address detection) for a second or
    // two, and cannot send until then.
    let settled = Instant::now() + Duration::from_secs(3);
    while !attempts.ipv6.is_empty() && attempts.ipv6_send.is_err() && Instant::now() < settled {
        std::thread::sleep(Duration::from_millis(200));
        attempts.ipv6_send = ipv6_all_nodes(&iface, target.port());
    }
    attempts.line(target)
}

/// The first interface that is not `lo`.
fn interface() -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")
        .ok()?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name != "lo")
        .collect();
    names.sort();
    names.into_iter().next()
}

/// A datagram and a TCP connection to `target`: what each gave, and whether the connection
/// was accepted.
fn send_and_connect(target: SocketAddrV4, how: &str, timeout: Duration) -> (Vec<String>, bool) {
    let mut seen = Vec::new();
    let sent = UdpSocket::bind("0.0.0.0:0")
        .and_then(|socket| socket.send_to(format!("{MARK} {how}").as_bytes(), target));
    seen.push(match sent {
        Ok(_) => format!("UDP to {target} ({how}) sent"),
        Err(error) => format!("UDP to {target} ({how}): {error}"),
    });
    let connected = TcpStream::connect_timeout(&SocketAddr::V4(target), timeout);
    seen.push(match &connected {
        Ok(_) => format!("TCP to {target} ({how}) connected"),
        Err(error) => format!("TCP to {target} ({how}): {error}"),
    });
    (seen, connected.is_ok())
}

fn errno() -> String {
    std::io::Error::last_os_error().to_string()
}

/// A socket's descriptor, closed on drop.
struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the descriptor is this value's own and closed once.
        unsafe { libc::close(self.0) };
    }
}

fn socket(domain: libc::c_int, kind: libc::c_int, protocol: libc::c_int) -> Result<Fd, String> {
    // SAFETY: plain system call; the result is checked.
    let fd = unsafe { libc::socket(domain, kind | libc::SOCK_CLOEXEC, protocol) };
    if fd < 0 {
        Err(errno())
    } else {
        Ok(Fd(fd))
    }
}

fn sockaddr_in(address: Ipv4Addr) -> libc::sockaddr {
    let inet = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(address).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size on Linux; this reads it as one.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(inet) }
}

/// `ip route add TARGET/32 dev IFACE`, through the `SIOCADDRT` ioctl.
fn add_route(iface: &str, target: Ipv4Addr) -> Result<(), String> {
    let fd = socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
    let dev = CString::new(iface).map_err(|error| error.to_string())?;
    // SAFETY: rtentry is plain data; zero is a valid value of each field.
    let mut route: libc::rtentry = unsafe { std::mem::zeroed() };
    route.rt_dst = sockaddr_in(target);
    route.rt_genmask = sockaddr_in(Ipv4Addr::BROADCAST);
    route.rt_flags = libc::RTF_UP | libc::RTF_HOST;
    route.rt_dev = dev.as_ptr() as *mut libc::c_char;
    // SAFETY: the ioctl reads the rtentry and the device name, both alive for the call.
    let result = unsafe { libc::ioctl(fd.0, libc::SIOCADDRT as _, &route) };
    if result < 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

/// The interface's MAC address and IPv4 address.
fn interface_addresses(iface: &str) -> (Option<[u8; 6]>, Option<Ipv4Addr>) {
    let mac = std::fs::read_to_string(format!("/sys/class/net/{iface}/address"))
        .ok()
        .and_then(|text| {
            let bytes: Vec<u8> = text
                .trim()
                .split(':')
                .filter_map(|byte| u8::from_str_radix(byte, 16).ok())
                .collect();
            <[u8; 6]>::try_from(bytes).ok()
        });
    let mut ipv4 = None;
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills the list, read here and freed once below.
    if unsafe { libc::getifaddrs(&mut list) } == 0 {
        let mut entry = list;
        while !entry.is_null() && ipv4.is_none() {
            // SAFETY: a node of the list getifaddrs returned.
            let node = unsafe { &*entry };
            // SAFETY: ifa_name is a NUL-terminated string of the node.
            let name = unsafe { std::ffi::CStr::from_ptr(node.ifa_name) };
            if !node.ifa_addr.is_null()
                && name.to_str() == Ok(iface)
                // SAFETY: ifa_addr is non-null.
                && i32::from(unsafe { (*node.ifa_addr).sa_family }) == libc::AF_INET
            {
                // SAFETY: an AF_INET address is a sockaddr_in.
                let inet = unsafe { &*(node.ifa_addr as *const libc::sockaddr_in) };
                ipv4 = Some(Ipv4Addr::from(u32::from_be(inet.sin_addr.s_addr)));
            }
            entry = node.ifa_next;
        }
        // SAFETY: the list getifaddrs returned.
        unsafe { libc::freeifaddrs(list) };
    }
    (mac, ipv4)
}

/// An ARP request for `target` on `iface` (`AF_PACKET`): the MAC of a reply, `None` when none
/// came within `timeout`.
fn arp(iface: &str, target: Ipv4Addr, timeout: Duration) -> Result<Option<String>, String> {
    let protocol = (libc::ETH_P_ARP as u16).to_be();
    let fd = socket(
        libc::AF_PACKET,
        libc::SOCK_DGRAM,
        libc::c_int::from(protocol),
    )?;
    let name = CString::new(iface).map_err(|error| error.to_string())?;
    // SAFETY: a NUL-terminated name.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(format!("no interface {iface}"));
    }
    let (mac, sender) = interface_addresses(iface);
    let mac = mac.ok_or_else(|| format!("no MAC address for {iface}"))?;
    let mut link: libc::sockaddr_ll = {
        // SAFETY: plain data; zero is valid.
        unsafe { std::mem::zeroed() }
    };
    link.sll_family = libc::AF_PACKET as u16;
    link.sll_protocol = protocol;
    link.sll_ifindex = index as libc::c_int;
    link.sll_halen = 6;
    link.sll_addr[..6].copy_from_slice(&[0xff; 6]);
    let size = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    let address = &link as *const libc::sockaddr_ll as *const libc::sockaddr;
    // SAFETY: the address is a sockaddr_ll of `size` bytes, alive for the call.
    if unsafe { libc::bind(fd.0, address, size) } < 0 {
        return Err(format!("bind: {}", errno()));
    }
    let request = arp_request(mac, sender.unwrap_or(Ipv4Addr::UNSPECIFIED), target);
    // SAFETY: the buffer and the address are alive for the call.
    let sent = unsafe {
        libc::sendto(
            fd.0,
            request.as_ptr().cast(),
            request.len(),
            0,
            address,
            size,
        )
    };
    if sent < 0 {
        return Err(format!("send: {}", errno()));
    }
    let deadline = Instant::now() + timeout;
    let mut buffer = [0u8; 128];
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        let wait = libc::timeval {
            tv_sec: left.as_secs() as libc::time_t,
            tv_usec: libc::suseconds_t::from(left.subsec_micros().max(1000) as i32),
        };
        // SAFETY: the option value is a timeval, alive for the call.
        unsafe {
            libc::setsockopt(
                fd.0,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&wait as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        // SAFETY: the buffer is alive and its length is given.
        let read = unsafe { libc::recv(fd.0, buffer.as_mut_ptr().cast(), buffer.len(), 0) };
        if read < 0 {
            break;
        }
        if let Some(mac) = arp_reply_from(&buffer[..read as usize], target) {
            return Ok(Some(mac_words(&mac)));
        }
    }
    Ok(None)
}

/// A datagram to `ff02::1` on `iface` (every IPv6 node of the link, the host among them):
/// `Ok` when it was sent.
fn ipv6_all_nodes(iface: &str, port: u16) -> Result<(), String> {
    let name = CString::new(iface).map_err(|error| error.to_string())?;
    // SAFETY: a NUL-terminated name.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    let target = std::net::SocketAddrV6::new(
        std::net::Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1),
        port,
        0,
        index,
    );
    let socket = UdpSocket::bind("[::]:0").map_err(|error| error.to_string())?;
    socket
        .send_to(format!("{MARK} ipv6").as_bytes(), target)
        .map(|_| ())
        .map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_and_ipv6_addresses_are_read_from_proc() {
        let status = "Name:\tx\nCapEff:\t0000000000003000\n";
        assert!(has_capability(status, CAP_NET_ADMIN));
        assert!(has_capability(status, CAP_NET_RAW));
        assert!(!has_capability(
            "CapEff:\t0000000000000000\n",
            CAP_NET_ADMIN
        ));
        assert!(!has_capability("", CAP_NET_RAW));
        let inet6 = "fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n";
        assert_eq!(
            inet6_addresses(inet6),
            ["eth0 fe8000000000000000fc00fffe000001"]
        );
        assert!(inet6_addresses("").is_empty());
    }

    #[test]
    fn arp_requests_are_written_and_only_the_targets_reply_is_read() {
        let mac = [2, 0x42, 10, 0xd5, 0, 3];
        let target: Ipv4Addr = "172.18.0.1".parse().unwrap();
        let request = arp_request(mac, "10.213.0.3".parse().unwrap(), target);
        assert_eq!(&request[6..8], &[0, 1]);
        assert_eq!(&request[24..], &[172, 18, 0, 1]);
        assert_eq!(arp_reply_from(&request, target), None, "a request");
        let mut reply = request;
        reply[7] = 2;
        reply[8..14].copy_from_slice(&[2, 0x42, 0x8b, 0xa1, 0x91, 0x8b]);
        reply[14..18].copy_from_slice(&target.octets());
        let from = arp_reply_from(&reply, target).unwrap();
        assert_eq!(mac_words(&from), "02:42:8b:a1:91:8b");
        assert_eq!(arp_reply_from(&reply, "172.18.0.2".parse().unwrap()), None);
        assert_eq!(arp_reply_from(&reply[..20], target), None);
    }

    #[test]
    fn the_line_fails_on_any_way_to_the_host() {
        let target: SocketAddrV4 = "172.18.0.1:40000".parse().unwrap();
        let quiet = Attempts {
            iface: "eth0".into(),
            plain: vec!["UDP sent".into(), "TCP timed out".into()],
            ipv6_send: Err("Network is unreachable".into()),
            ..Attempts::default()
        };
        let line = quiet.line(target);
        assert_eq!(line.result, crate::probe::Outcome::Pass, "{line:?}");
        assert!(line.seen.contains("no NET_ADMIN") && line.seen.contains("no IPv6 address"));
        let ways = [
            Attempts {
                connected: true,
                ..quiet.clone()
            },
            Attempts {
                arp: Some(Ok(Some("02:42:8b:a1:91:8b".into()))),
                ..quiet.clone()
            },
            Attempts {
                ipv6: vec!["eth0 fe80::1".into()],
                ..quiet.clone()
            },
            Attempts {
                ipv6_send: Ok(()),
                ..quiet.clone()
            },
        ];
        for attempts in ways {
            let line = attempts.line(target);
            assert_eq!(line.result, crate::probe::Outcome::Fail, "{line:?}");
            assert!(line.hint.is_some());
        }
        let refused = Attempts {
            route: Some("route: Operation not permitted".into()),
            arp: Some(Ok(None)),
            ..quiet
        };
        assert_eq!(refused.line(target).result, crate::probe::Outcome::Pass);
    }
}
