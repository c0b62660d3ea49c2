//! Linux capabilities: a closed vocabulary with one canonical spelling.
//!
//! The canonical spelling is the kernel's name without the `CAP_` prefix (`NET_ADMIN`).
//! Parsing is lenient about case and the prefix (`net_admin`, `CAP_NET_ADMIN`); backends
//! choose their own spelling when rendering.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! capabilities {
    ($($variant:ident => $name:literal,)*) => {
        /// A Linux capability.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[allow(missing_docs)]
        pub enum Capability {
            $($variant,)*
        }

        impl Capability {
            /// Every capability, in declaration order.
            pub const ALL: &'static [Capability] = &[$(Capability::$variant,)*];

            /// The canonical name, without the `CAP_` prefix (`NET_ADMIN`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Capability::$variant => $name,)*
                }
            }
        }
    };
}

capabilities! {
    AuditControl => "AUDIT_CONTROL",
    AuditRead => "AUDIT_READ",
    AuditWrite => "AUDIT_WRITE",
    BlockSuspend => "BLOCK_SUSPEND",
    Bpf => "BPF",
    CheckpointRestore => "CHECKPOINT_RESTORE",
    Chown => "CHOWN",
    DacOverride => "DAC_OVERRIDE",
    DacReadSearch => "DAC_READ_SEARCH",
    Fowner => "FOWNER",
    Fsetid => "FSETID",
    IpcLock => "IPC_LOCK",
    IpcOwner => "IPC_OWNER",
    Kill => "KILL",
    Lease => "LEASE",
    LinuxImmutable => "LINUX_IMMUTABLE",
    MacAdmin => "MAC_ADMIN",
    MacOverride => "MAC_OVERRIDE",
    Mknod => "MKNOD",
    NetAdmin => "NET_ADMIN",
    NetBindService => "NET_BIND_SERVICE",
    NetBroadcast => "NET_BROADCAST",
    NetRaw => "NET_RAW",
    Perfmon => "PERFMON",
    Setfcap => "SETFCAP",
    Setgid => "SETGID",
    Setpcap => "SETPCAP",
    Setuid => "SETUID",
    SysAdmin => "SYS_ADMIN",
    SysBoot => "SYS_BOOT",
    SysChroot => "SYS_CHROOT",
    SysModule => "SYS_MODULE",
    SysNice => "SYS_NICE",
    SysPacct => "SYS_PACCT",
    SysPtrace => "SYS_PTRACE",
    SysRawio => "SYS_RAWIO",
    SysResource => "SYS_RESOURCE",
    SysTime => "SYS_TIME",
    SysTtyConfig => "SYS_TTY_CONFIG",
    Syslog => "SYSLOG",
    WakeAlarm => "WAKE_ALARM",
}

impl Capability {
    /// The kernel's bit number for the capability (`CAP_NET_ADMIN` is 12), as in
    /// `include/uapi/linux/capability.h`: bit `N` of the masks in `/proc/PID/status`
    /// (`CapBnd`, `CapEff`, ...) is capability `N`.
    pub fn bit(self) -> u8 {
        match self {
            Capability::Chown => 0,
            Capability::DacOverride => 1,
            Capability::DacReadSearch => 2,
            Capability::Fowner => 3,
            Capability::Fsetid => 4,
            Capability::Kill => 5,
            Capability::Setgid => 6,
            Capability::Setuid => 7,
            Capability::Setpcap => 8,
            Capability::LinuxImmutable => 9,
            Capability::NetBindService => 10,
            Capability::NetBroadcast => 11,
            Capability::NetAdmin => 12,
            Capability::NetRaw => 13,
            Capability::IpcLock => 14,
            Capability::IpcOwner => 15,
            Capability::SysModule => 16,
            Capability::SysRawio => 17,
            Capability::SysChroot => 18,
            Capability::SysPtrace => 19,
            Capability::SysPacct => 20,
            Capability::SysAdmin => 21,
            Capability::SysBoot => 22,
            Capability::SysNice => 23,
            Capability::SysResource => 24,
            Capability::SysTime => 25,
            Capability::SysTtyConfig => 26,
            Capability::Mknod => 27,
            Capability::Lease => 28,
            Capability::AuditWrite => 29,
            Capability::AuditControl => 30,
            Capability::Setfcap => 31,
            Capability::MacOverride => 32,
            Capability::MacAdmin => 33,
            Capability::Syslog => 34,
            Capability::WakeAlarm => 35,
            Capability::BlockSuspend => 36,
            Capability::AuditRead => 37,
            Capability::Perfmon => 38,
            Capability::Bpf => 39,
            Capability::CheckpointRestore => 40,
        }
    }
}

/// A capability name that is not a Linux capability.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown capability {0:?}")]
pub struct UnknownCapability(pub String);

impl FromStr for Capability {
    type Err = UnknownCapability;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let upper = text.trim().to_ascii_uppercase();
        let bare = upper.strip_prefix("CAP_").unwrap_or(&upper);
        Capability::ALL
            .iter()
            .copied()
            .find(|capability| capability.as_str() == bare)
            .ok_or_else(|| UnknownCapability(text.to_string()))
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl Serialize for Capability {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Capability {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Capability {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Capability".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Capability::ALL.iter().map(|c| c.as_str()).collect();
        schemars::json_schema!({
            "type": "string",
            "description": "A Linux capability without the CAP_ prefix; parsing also accepts lower case and the prefix.",
            "enum": names,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing_accepts_case_and_prefix_variants() {
        for text in [
            "NET_ADMIN",
            "net_admin",
            "CAP_NET_ADMIN",
            "cap_net_admin",
            " Net_Admin ",
        ] {
            assert_eq!(
                text.parse::<Capability>(),
                Ok(Capability::NetAdmin),
                "{text}"
            );
        }
    }

    #[test]
    fn parsing_rejects_unknown_names_and_all() {
        assert!("NET_ADMINS".parse::<Capability>().is_err());
        assert!("ALL".parse::<Capability>().is_err());
        assert!("".parse::<Capability>().is_err());
    }

    #[test]
    fn every_capability_round_trips_through_its_name() {
        for capability in Capability::ALL {
            assert_eq!(capability.as_str().parse::<Capability>(), Ok(*capability));
        }
    }

    /// The `#define`s of Linux 6.x `include/uapi/linux/capability.h`, verbatim.
    const KERNEL_HEADER: &str = "
#define CAP_CHOWN            0
#define CAP_DAC_OVERRIDE     1
#define CAP_DAC_READ_SEARCH  2
#define CAP_FOWNER           3
#define CAP_FSETID           4
#define CAP_KILL             5
#define CAP_SETGID           6
#define CAP_SETUID           7
#define CAP_SETPCAP          8
#define CAP_LINUX_IMMUTABLE  9
#define CAP_NET_BIND_SERVICE 10
#define CAP_NET_BROADCAST    11
#define CAP_NET_ADMIN        12
#define CAP_NET_RAW          13
#define CAP_IPC_LOCK         14
#define CAP_IPC_OWNER        15
#define CAP_SYS_MODULE       16
#define CAP_SYS_RAWIO        17
#define CAP_SYS_CHROOT       18
#define CAP_SYS_PTRACE       19
#define CAP_SYS_PACCT        20
#define CAP_SYS_ADMIN        21
#define CAP_SYS_BOOT         22
#define CAP_SYS_NICE         23
#define CAP_SYS_RESOURCE     24
#define CAP_SYS_TIME         25
#define CAP_SYS_TTY_CONFIG   26
#define CAP_MKNOD            27
#define CAP_LEASE            28
#define CAP_AUDIT_WRITE      29
#define CAP_AUDIT_CONTROL    30
#define CAP_SETFCAP	     31
#define CAP_MAC_OVERRIDE     32
#define CAP_MAC_ADMIN        33
#define CAP_SYSLOG           34
#define CAP_WAKE_ALARM            35
#define CAP_BLOCK_SUSPEND    36
#define CAP_AUDIT_READ		37
#define CAP_PERFMON		38
#define CAP_BPF			39
#define CAP_CHECKPOINT_RESTORE	40
#define CAP_LAST_CAP         CAP_CHECKPOINT_RESTORE
";

    /// `(NAME, bit)` for every numeric `#define CAP_NAME N` of a capability header.
    fn kernel_bits(header: &str) -> Vec<(String, u8)> {
        header
            .lines()
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                let (Some("#define"), Some(name), Some(number)) =
                    (words.next(), words.next(), words.next())
                else {
                    return None;
                };
                Some((name.strip_prefix("CAP_")?.to_string(), number.parse().ok()?))
            })
            .collect()
    }

    #[test]
    fn bits_are_the_kernel_s_numbering() {
        let kernel = kernel_bits(KERNEL_HEADER);
        assert_eq!(kernel.len(), Capability::ALL.len());
        for (name, bit) in &kernel {
            let capability: Capability = name.parse().unwrap();
            assert_eq!(capability.bit(), *bit, "{name}");
        }
        // Docker's default set, as the kernel prints it in CapBnd for root.
        let mask: u64 = [
            "AUDIT_WRITE",
            "CHOWN",
            "DAC_OVERRIDE",
            "FOWNER",
            "FSETID",
            "KILL",
            "MKNOD",
            "NET_BIND_SERVICE",
            "NET_RAW",
            "SETFCAP",
            "SETGID",
            "SETPCAP",
            "SETUID",
            "SYS_CHROOT",
        ]
        .iter()
        .map(|name| 1u64 << name.parse::<Capability>().unwrap().bit())
        .sum();
        assert_eq!(mask, 0x00000000a80425fb);
    }

    /// On a machine with the kernel headers installed, the installed header agrees too (a newer
    /// kernel may define capabilities agentc does not know yet; those are not compared).
    #[test]
    fn bits_agree_with_the_installed_kernel_header() {
        let Ok(header) = std::fs::read_to_string("/usr/include/linux/capability.h") else {
            return;
        };
        for (name, bit) in kernel_bits(&header) {
            if let Ok(capability) = name.parse::<Capability>() {
                assert_eq!(capability.bit(), bit, "{name}");
            }
        }
    }
}
