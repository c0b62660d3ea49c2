//! argv -> one POSIX shell line, for display and copy-paste (`agentc run --dry-run`).

use agentc_engine::ArgvError;

/// Quotes argv as one shell line (shlex, POSIX `sh` compatible): `shlex::split` of the line
/// returns the argv.
///
/// A NUL byte cannot be written in a shell word; argv from [`crate::render_argv`] never holds
/// one (rendering refuses it), so this infallible form shows any NUL as `␀` (U+2400) and the
/// line is then for display only. Use [`try_shell_line`] to refuse instead.
pub fn shell_line(argv: &[String]) -> String {
    try_shell_line(argv).unwrap_or_else(|_| {
        let shown: Vec<String> = argv
            .iter()
            .map(|word| word.replace('\0', "\u{2400}"))
            .collect();
        shlex::try_join(shown.iter().map(String::as_str)).unwrap_or_default()
    })
}

/// Quotes argv as one shell line, refusing a word that holds a NUL byte
/// ([`ArgvError::Nul`], field `argv[INDEX]`).
pub fn try_shell_line(argv: &[String]) -> Result<String, ArgvError> {
    if let Some(index) = argv.iter().position(|word| word.contains('\0')) {
        return Err(ArgvError::Nul {
            field: format!("argv[{index}]"),
        });
    }
    let mut words = Vec::with_capacity(argv.len());
    for word in argv {
        if is_plain_word(word) {
            words.push(std::borrow::Cow::Borrowed(word.as_str()));
        } else {
            words.push(shlex::try_quote(word).map_err(|_| ArgvError::Nul {
                field: "argv".to_owned(),
            })?);
        }
    }
    Ok(words.join(" "))
}

/// Whether a word means the same to a POSIX shell unquoted: non-empty and made only of
/// `A-Z a-z 0-9 _ @ % + = : , . / -` (Python's `shlex.quote` safe set). shlex quotes `=` and
/// `:` too, which would put quotes around nearly every `--flag=value`.
fn is_plain_word(word: &str) -> bool {
    !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn plain_words_stay_plain_and_specials_are_quoted() {
        let argv = words(&["docker", "run", "--env=A=it's", "a b", ""]);
        let line = shell_line(&argv);
        assert!(line.starts_with("docker run "));
        assert_eq!(shlex::split(&line).unwrap(), argv);
    }

    #[test]
    fn flags_with_equals_and_colons_stay_unquoted() {
        let argv = words(&["docker", "run", "--tmpfs=/run:exec", "--env=A=it's"]);
        assert_eq!(
            shell_line(&argv),
            "docker run --tmpfs=/run:exec \"--env=A=it's\""
        );
    }

    #[test]
    fn nul_is_refused_or_shown() {
        let argv = words(&["docker", "a\0b"]);
        assert_eq!(
            try_shell_line(&argv),
            Err(ArgvError::Nul {
                field: "argv[1]".into()
            })
        );
        assert_eq!(
            shlex::split(&shell_line(&argv)).unwrap(),
            ["docker", "a\u{2400}b"]
        );
    }

    proptest! {
        #[test]
        fn shell_line_round_trips_through_shlex_split(
            argv in proptest::collection::vec("[^\\x00]{0,12}", 0..6)
        ) {
            let line = try_shell_line(&argv).unwrap();
            prop_assert_eq!(shlex::split(&line).unwrap(), argv);
        }
    }
}
