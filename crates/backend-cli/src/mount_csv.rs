//! docker's `--mount` value syntax: one record of Go `encoding/csv`.
//!
//! The docker CLI (`opts/mount.go`, `MountOpt.Set`) reads the value with
//! `csv.NewReader(..).Read()` using the defaults (comma `,`, no comment character,
//! `LazyQuotes = false`, `TrimLeadingSpace = false`), then splits each field at its first `=`.
//! So a field is written bare unless it holds `,` `"` CR or LF (or starts or ends with a space
//! or tab, quoted for readability), in which case the whole field is wrapped in double quotes
//! and inner quotes are doubled. Go's reader turns CR LF into LF even inside a quoted field,
//! so a value holding CR LF cannot be carried; the shared checks
//! ([`agentc_engine::check_container`]) refuse it before anything is rendered.

/// Encodes one `key=value` field of a `--mount` record.
pub(crate) fn field(key: &str, value: &str) -> String {
    let text = format!("{key}={value}");
    let needs_quotes = text.contains([',', '"', '\n', '\r'])
        || text.starts_with([' ', '\t'])
        || text.ends_with([' ', '\t']);
    if needs_quotes {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

#[cfg(test)]
pub(crate) mod go_csv {
    //! A test-only reimplementation of Go's `encoding/csv` `Reader.Read` (default options),
    //! following `src/encoding/csv/reader.go`, used to check that rendered `--mount` values
    //! parse back to the fields they were built from.

    /// `readLine`: splits after each LF, drops a lone trailing CR at end of input, and turns a
    /// trailing CR LF into LF.
    fn lines(input: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = input;
        while !rest.is_empty() {
            let (line, tail) = match rest.find('\n') {
                Some(i) => rest.split_at(i + 1),
                None => (rest, ""),
            };
            let mut line = line.to_owned();
            if tail.is_empty() && !line.ends_with('\n') && line.ends_with('\r') {
                line.pop();
            }
            if line.ends_with("\r\n") {
                line.truncate(line.len() - 2);
                line.push('\n');
            }
            out.push(line);
            rest = tail;
        }
        out
    }

    fn strip_nl(s: &str) -> &str {
        s.strip_suffix('\n').unwrap_or(s)
    }

    /// Reads the first record, or an error message.
    pub(crate) fn read_record(input: &str) -> Result<Vec<String>, String> {
        let mut lines = lines(input).into_iter();
        // Skip empty lines.
        let mut line = loop {
            match lines.next() {
                None => return Err("EOF".into()),
                Some(l) if l == "\n" => continue,
                Some(l) => break l,
            }
        };
        let mut fields = Vec::new();
        'field: loop {
            if !line.starts_with('"') {
                let (field, rest) = match line.find(',') {
                    Some(i) => (line[..i].to_owned(), Some(line[i + 1..].to_owned())),
                    None => (strip_nl(&line).to_owned(), None),
                };
                if field.contains('"') {
                    return Err("bare quote".into());
                }
                fields.push(field);
                match rest {
                    Some(r) => {
                        line = r;
                        continue 'field;
                    }
                    None => break 'field,
                }
            }
            let mut buf = String::new();
            line = line[1..].to_owned();
            loop {
                if let Some(i) = line.find('"') {
                    buf.push_str(&line[..i]);
                    line = line[i + 1..].to_owned();
                    if line.starts_with('"') {
                        buf.push('"');
                        line = line[1..].to_owned();
                    } else if let Some(r) = line.strip_prefix(',') {
                        line = r.to_owned();
                        fields.push(std::mem::take(&mut buf));
                        continue 'field;
                    } else if line.is_empty() || line == "\n" {
                        fields.push(std::mem::take(&mut buf));
                        break 'field;
                    } else {
                        return Err("extraneous quote".into());
                    }
                } else if !line.is_empty() {
                    buf.push_str(&line);
                    match lines.next() {
                        Some(next) => line = next,
                        None => return Err("unterminated quote".into()),
                    }
                } else {
                    return Err("unterminated quote".into());
                }
            }
        }
        Ok(fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_fields_stay_bare() {
        assert_eq!(field("target", "/a b/c=d:e"), "target=/a b/c=d:e");
    }

    #[test]
    fn special_fields_are_quoted_whole_with_doubled_quotes() {
        assert_eq!(field("source", "/a,b"), "\"source=/a,b\"");
        assert_eq!(field("source", "/a\"b"), "\"source=/a\"\"b\"");
        assert_eq!(field("source", "/a\nb"), "\"source=/a\nb\"");
        assert_eq!(field("source", "/a\rb"), "\"source=/a\rb\"");
        assert_eq!(field("source", "/ab "), "\"source=/ab \"");
    }

    #[test]
    fn go_reader_model_matches_go_behaviour() {
        use go_csv::read_record;
        assert_eq!(read_record("a,\"b,c\",d").unwrap(), ["a", "b,c", "d"]);
        assert_eq!(read_record("a\nb").unwrap(), ["a"]);
        assert_eq!(read_record("\"a\r\nb\"").unwrap(), ["a\nb"]);
        assert_eq!(read_record("a\r").unwrap(), ["a"]);
        assert!(read_record("a\"b").is_err());
        assert!(read_record("\"a\"b").is_err());
        assert_eq!(read_record("\"a\"\"b\"").unwrap(), ["a\"b"]);
    }
}
