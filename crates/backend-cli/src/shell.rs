//! argv -> one POSIX shell line, for display and copy-paste (`agentc run --dry-run`).

use crate::error::RenderError;

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
/// ([`RenderError::Nul`], field `argv[INDEX]`).
pub fn try_shell_line(argv: &[String]) -> Result<String, RenderError> {
    if let Some(index) = argv.iter().position(|word| word.contains('\0')) {
        return Err(RenderError::Nul {
            field: format!("argv[{index}]"),
        });
    }
    shlex::try_join(argv.iter().map(String::as_str)).map_err(|_| RenderError::Nul {
        field: "argv".to_owned(),
    })
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
    fn nul_is_refused_or_shown() {
        let argv = words(&["docker", "a\0b"]);
        assert_eq!(
            try_shell_line(&argv),
            Err(RenderError::Nul {
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
