//! Names and text: the patterns profile values must match, and the helpers that turn a bad
//! value into a readable message (escaping, "did you mean").
//!
//! A leaf: it depends on nothing else in the crate.

use std::net::{IpAddr, Ipv4Addr};

/// Names the first whitespace or control character of `text` (`whitespace (U+0020)`,
/// `a control character (U+0007)`), so that each kind of bad input gets its own message.
pub(crate) fn unprintable(text: &str) -> Option<String> {
    let bad = text.chars().find(|c| c.is_whitespace() || c.is_control())?;
    let code = u32::from(bad);
    Some(if bad.is_control() && !bad.is_whitespace() {
        format!("a control character (U+{code:04X})")
    } else {
        format!("whitespace (U+{code:04X})")
    })
}

/// `text` with control characters escaped (`\u{1b}`), for echoing a key or value in a message.
///
/// Regression (`control_characters_in_echoed_keys_and_values_are_escaped`): an unknown field
/// or agent written with `\u001b` escapes put a raw ESC sequence into the error, which
/// rewrote the terminal of whoever ran `agentc validate` on the profile.
pub(crate) fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `text` with its first character in lower case.
pub(crate) fn lower_first(text: &str) -> String {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) => first.to_lowercase().chain(characters).collect(),
        None => String::new(),
    }
}

/// `^[a-z][a-z0-9_-]{0,62}$`
pub(crate) fn is_profile_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_lowercase()
        && bytes[1..]
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-')
}

/// `^[A-Z_][A-Z0-9_]*$`
pub(crate) fn is_env_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && (bytes[0].is_ascii_uppercase() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
}

/// `^[A-Za-z0-9][A-Za-z0-9_.-]{0,max}$`
fn is_docker_name(text: &str, max_length: usize) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= max_length
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// A docker volume name: `^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$`.
pub(crate) fn is_volume_name(text: &str) -> bool {
    is_docker_name(text, 255)
}

/// A docker network name: `^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`.
pub(crate) fn is_network_name(text: &str) -> bool {
    is_docker_name(text, 128)
}

/// `name|uid[:group|gid]`, each part `[A-Za-z0-9_][A-Za-z0-9_.-]*`, at most 32 characters.
pub(crate) fn is_user_spec(text: &str) -> bool {
    let part = |part: &str| {
        let bytes = part.as_bytes();
        !bytes.is_empty()
            && bytes.len() <= 32
            && (bytes[0].is_ascii_alphanumeric() || bytes[0] == b'_')
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    };
    match text.split_once(':') {
        Some((user, group)) => part(user) && part(group),
        None => part(text),
    }
}

/// An IP address, or a network as `ADDRESS/PREFIX` (an IPv4 prefix may be a dotted netmask),
/// as Python's `ipaddress.ip_network(strict=False)` reads it.
pub(crate) fn is_ip_or_cidr(text: &str) -> bool {
    let (address, prefix) = match text.split_once('/') {
        Some((address, prefix)) => (address, Some(prefix)),
        None => (text, None),
    };
    let Ok(address) = address.parse::<IpAddr>() else {
        return false;
    };
    let Some(prefix) = prefix else {
        return true;
    };
    let max = if address.is_ipv4() { 32 } else { 128 };
    if !prefix.is_empty() && prefix.len() <= 3 && prefix.bytes().all(|b| b.is_ascii_digit()) {
        return prefix.parse::<u32>().is_ok_and(|length| length <= max);
    }
    match (address, prefix.parse::<Ipv4Addr>()) {
        (IpAddr::V4(_), Ok(mask)) => {
            let bits = u32::from(mask);
            bits.leading_ones() + bits.trailing_zeros() == 32
        }
        _ => false,
    }
}

/// The lower-case host of an http(s) URL, or why the text is not one.
pub fn http_url_host(text: &str) -> Result<String, String> {
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("it contains whitespace or control characters".to_string());
    }
    if !text.contains("://") {
        return Err("it does not start with http:// or https://".to_string());
    }
    let url = url::Url::parse(text).map_err(|error| error.to_string())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "the scheme is {:?}, not http or https",
            url.scheme()
        ));
    }
    match url.host_str() {
        Some(host) if !host.is_empty() => Ok(host.to_ascii_lowercase()),
        _ => Err("it has no host".to_string()),
    }
}

/// A URL without its trailing slashes, as agent-containers passes endpoints on.
pub(crate) fn trim_url(url: &str) -> String {
    url.trim_end_matches('/').to_string()
}

/// The accepted name closest to a misspelled one, if it is close enough to be a typo.
pub(crate) fn closest(name: &str, accepted: &[String]) -> Option<String> {
    let name = name.to_ascii_lowercase();
    accepted
        .iter()
        .map(|candidate| {
            (
                edit_distance(&name, &candidate.to_ascii_lowercase()),
                candidate,
            )
        })
        .filter(|(distance, candidate)| {
            *distance <= 2.max(candidate.len() / 4) && *distance < candidate.len().max(name.len())
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate.clone())
}

/// Levenshtein distance with adjacent transpositions counted as one edit.
fn edit_distance(left: &str, right: &str) -> usize {
    let left: Vec<char> = left.chars().collect();
    let right: Vec<char> = right.chars().collect();
    let width = right.len() + 1;
    let mut table = vec![0usize; (left.len() + 1) * width];
    for (index, cell) in table.iter_mut().enumerate().take(width) {
        *cell = index;
    }
    for row in 0..=left.len() {
        table[row * width] = row;
    }
    for row in 1..=left.len() {
        for column in 1..=right.len() {
            let cost = usize::from(left[row - 1] != right[column - 1]);
            let mut best = (table[(row - 1) * width + column] + 1)
                .min(table[row * width + column - 1] + 1)
                .min(table[(row - 1) * width + column - 1] + cost);
            if row > 1
                && column > 1
                && left[row - 1] == right[column - 2]
                && left[row - 2] == right[column - 1]
            {
                best = best.min(table[(row - 2) * width + column - 2] + 1);
            }
            table[row * width + column] = best;
        }
    }
    table[left.len() * width + right.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_match_their_patterns() {
        assert!(is_env_name("_A1") && !is_env_name("a") && !is_env_name("1A") && !is_env_name(""));
        assert!(is_ip_or_cidr("192.0.2.1/32") && !is_ip_or_cidr("192.0.2.1/33"));
        assert!(!is_ip_or_cidr("10.0.0.0/255.0.255.0") && !is_ip_or_cidr("::/129"));
        assert!(!is_ip_or_cidr("010.0.0.1") && !is_ip_or_cidr("10.0.0.0/"));
        assert!(is_ip_or_cidr("10.0.0.0/255.0.0.0") && is_ip_or_cidr("2001:db8::/32"));
        assert_eq!(
            http_url_host("https://User@Example.COM:1/p"),
            Ok("example.com".to_string())
        );
        assert!(is_user_spec("1000:1000") && is_user_spec("agent") && !is_user_spec("a b"));
        assert!(is_network_name("scan-net") && !is_network_name("-x"));
        assert!(is_profile_name("dev") && !is_profile_name("Dev"));
    }

    #[test]
    fn close_names_tolerate_typos_but_not_unrelated_words() {
        let accepted: Vec<String> = ["gateway_port", "gateway_host", "mode"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            closest("gateway_prot", &accepted).as_deref(),
            Some("gateway_port")
        );
        assert_eq!(closest("MODE", &accepted).as_deref(), Some("mode"));
        assert_eq!(closest("colour", &accepted), None);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn unprintable_characters_are_named_and_escaped() {
        assert_eq!(unprintable("a b").as_deref(), Some("whitespace (U+0020)"));
        assert_eq!(
            unprintable("a\u{7}").as_deref(),
            Some("a control character (U+0007)")
        );
        assert_eq!(printable("x\u{1b}[2J"), "x\\u{1b}[2J");
        assert_eq!(lower_first("Duplicate"), "duplicate");
    }
}
