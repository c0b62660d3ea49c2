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
}
