//! Kubernetes name and label syntax, and quantities: leaf rules that depend on nothing.

use sha2::{Digest, Sha256};

/// The longest base name: object names get suffixes such as `-egress` and must stay DNS-1035
/// labels (63 characters) for Services.
pub const MAX_BASE_NAME: usize = 56;

fn alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// A DNS-1123 label: 1 to 63 of `[a-z0-9-]`, starting and ending alphanumeric (namespaces).
pub fn is_dns1123_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 63
        && text.chars().all(|c| alnum(c) || c == '-')
        && text.starts_with(alnum)
        && text.ends_with(alnum)
}

/// A DNS-1035 label: a DNS-1123 label starting with a letter (Services).
pub fn is_dns1035_label(text: &str) -> bool {
    is_dns1123_label(text) && text.starts_with(|c: char| c.is_ascii_lowercase())
}

/// A DNS-1123 subdomain: up to 253 characters of dot-separated DNS-1123 labels (Pods,
/// PersistentVolumeClaims, Secrets).
pub fn is_dns1123_subdomain(text: &str) -> bool {
    !text.is_empty() && text.len() <= 253 && text.split('.').all(is_dns1123_label)
}

fn label_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'
}

/// A label value: empty, or up to 63 of `[A-Za-z0-9_.-]` starting and ending alphanumeric.
pub fn is_label_value(text: &str) -> bool {
    text.is_empty()
        || (text.len() <= 63
            && text.chars().all(label_name_char)
            && text.starts_with(|c: char| c.is_ascii_alphanumeric())
            && text.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

/// A label or annotation key: an optional DNS-1123 subdomain prefix and `/`, then a name as
/// for a non-empty label value.
pub fn is_qualified_name(text: &str) -> bool {
    let (prefix, name) = match text.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, text),
    };
    prefix.is_none_or(is_dns1123_subdomain) && !name.is_empty() && is_label_value(name)
}

/// A DNS-1035 base name for a launch's objects, at most [`MAX_BASE_NAME`] characters:
/// `text` lower-cased, other characters turned into `-`, leading non-letters dropped; when it
/// had to be shortened, the tail is replaced by 8 hex digits of its sha256, so distinct inputs
/// keep distinct names.
pub fn base_name(text: &str) -> String {
    let mut name: String = text
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if alnum(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    while name.contains("--") {
        name = name.replace("--", "-");
    }
    let name = name.trim_start_matches(|c: char| !c.is_ascii_lowercase());
    let name = name.trim_end_matches('-');
    let name = if name.is_empty() { "agentc" } else { name };
    if name.len() <= MAX_BASE_NAME {
        return name.to_string();
    }
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let head = name[..MAX_BASE_NAME - 9].trim_end_matches('-');
    format!("{head}-{hex}")
}

/// `text` itself when it is a valid non-empty label value; otherwise its valid characters
/// (others as `-`, trimmed to start and end alphanumeric, at most 54) and 8 hex digits of its
/// sha256, so distinct texts keep distinct values.
pub fn label_value_for(text: &str) -> String {
    if !text.is_empty() && is_label_value(text) {
        return text.to_string();
    }
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(54)
        .collect();
    let cleaned = cleaned.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    if cleaned.is_empty() {
        hex
    } else {
        format!("{cleaned}-{hex}")
    }
}

/// Bytes as a Kubernetes quantity, exactly: `4Gi`, `512Mi`, `64Ki`, or the plain number.
pub fn bytes_quantity(bytes: u64) -> String {
    for (suffix, factor) in [
        ("Ti", 1u64 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ] {
        if bytes >= factor && bytes % factor == 0 {
            return format!("{}{suffix}", bytes / factor);
        }
    }
    bytes.to_string()
}

/// Billionths of a CPU as a quantity in whole millicores, rounded down (Kubernetes refuses a
/// finer precision): `(quantity, exact)`; `None` below one millicore.
pub fn cpu_quantity(nano_cpus: u64) -> Option<(String, bool)> {
    let millis = nano_cpus / 1_000_000;
    if millis == 0 {
        return None;
    }
    let exact = nano_cpus % 1_000_000 == 0;
    let text = if millis % 1000 == 0 {
        (millis / 1000).to_string()
    } else {
        format!("{millis}m")
    };
    Some((text, exact))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        assert!(is_dns1123_label("agents-01"));
        assert!(!is_dns1123_label("Agents"));
        assert!(!is_dns1123_label("-a"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(is_dns1035_label("a1"));
        assert!(!is_dns1035_label("1a"));
        assert!(is_dns1123_subdomain(
            "claude-code-home-dev-1000-claude-minimal"
        ));
        assert!(is_dns1123_subdomain("a.b-c"));
        assert!(!is_dns1123_subdomain("a_b"));
        assert!(!is_dns1123_subdomain("a..b"));
    }

    #[test]
    fn labels() {
        assert!(is_label_value(""));
        assert!(is_label_value("claude_minimal"));
        assert!(!is_label_value(&"a".repeat(64)));
        assert!(!is_label_value("a b"));
        assert!(is_qualified_name("io.agentc.profile"));
        assert!(is_qualified_name("app.kubernetes.io/name"));
        assert!(!is_qualified_name("a/b/c"));
        assert!(!is_qualified_name("/x"));
    }

    #[test]
    fn base_names_are_dns1035_and_distinct_when_shortened() {
        assert_eq!(
            base_name("agentc-run-claude_minimal"),
            "agentc-run-claude-minimal"
        );
        assert_eq!(base_name("1-Odd__Name-"), "odd-name");
        assert_eq!(base_name(""), "agentc");
        let long_a = base_name(&format!("{}a", "x".repeat(80)));
        let long_b = base_name(&format!("{}b", "x".repeat(80)));
        assert_ne!(long_a, long_b);
        for name in [long_a, long_b] {
            assert!(
                name.len() <= MAX_BASE_NAME && is_dns1035_label(&name),
                "{name}"
            );
        }
    }

    #[test]
    fn label_values_for_any_text() {
        assert_eq!(label_value_for("lab"), "lab");
        let odd = label_value_for("a_");
        assert!(odd.starts_with("a-") && is_label_value(&odd), "{odd}");
        assert_ne!(label_value_for("a_"), label_value_for("a-"));
        assert!(is_label_value(&label_value_for(&"x".repeat(100))));
        assert!(is_label_value(&label_value_for("__")));
    }

    #[test]
    fn quantities() {
        assert_eq!(bytes_quantity(4 << 30), "4Gi");
        assert_eq!(bytes_quantity(256 << 20), "256Mi");
        assert_eq!(bytes_quantity(1000), "1000");
        assert_eq!(bytes_quantity(0), "0");
        assert_eq!(cpu_quantity(1_500_000_000), Some(("1500m".into(), true)));
        assert_eq!(cpu_quantity(2_000_000_000), Some(("2".into(), true)));
        assert_eq!(cpu_quantity(1_000_500_000), Some(("1".into(), false)));
        assert_eq!(cpu_quantity(999_999), None);
    }
}
