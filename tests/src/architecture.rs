//! The architecture rules, read from the sources (`tests/tests/architecture.rs` applies them to
//! every crate under `crates/`):
//!
//! - **No module cycle within a crate.** Module `a` depends on module `b` when `a`'s own code
//!   (not its `#[cfg(test)]` items) names `b` through a path that starts with `crate::`,
//!   `super::` or `self::` (in a `use` tree or anywhere in code): the path is resolved to the
//!   longest prefix that is a module of the crate (`crate::resolve::LABEL_PROFILE` names
//!   `resolve`, `super::Item` names the parent). A module's declarations of its children
//!   (`mod x;`) and bare paths to them are not dependencies; re-exports through a parent are
//!   therefore free, and a parent that only declares and re-exports never closes a cycle.
//! - **No source file above [`MAX_LINES`] non-test lines.** Lines inside `#[cfg(test)]` items
//!   do not count (for the usual file, whose tests are one `mod tests` at the bottom, that is
//!   the lines before the first `#[cfg(test)]`), nor do files that are modules only under
//!   `#[cfg(test)]` or that open with `#![cfg(test)]`.
//!
//! The reader is a small tokenizer, not a Rust parser: comments, strings (raw, byte and C
//! strings too), character literals and lifetimes are skipped, so a path in a doc comment or a
//! string is not a dependency; `$crate` and the paths of `pub(in ...)` are not either. Only
//! `#[cfg(test)]` itself marks test code (`#[cfg(any(test, ...))]` does not), and `#[path]`
//! attributes are not followed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

/// The most non-test lines a source file may have.
pub const MAX_LINES: usize = 800;

/// What the rules found in one crate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Each module cycle, once.
    pub cycles: Vec<Cycle>,
    /// Each file above [`MAX_LINES`] non-test lines, by path.
    pub long_files: Vec<LongFile>,
    /// The non-test lines of every file read, by path (for the report, and for tests).
    pub lines: BTreeMap<PathBuf, usize>,
}

/// Modules of one crate that depend on each other in a circle: one strongly connected
/// component of the module graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// The crate root the modules belong to (`src/lib.rs`, `src/main.rs`).
    pub root: PathBuf,
    /// Every module of the component, with its file, sorted by name.
    pub members: Vec<(String, PathBuf)>,
    /// A shortest circle through the first member (the last module depends on the first).
    pub circle: Vec<String>,
    /// Every dependency between members, by the first reference that makes it:
    /// `FILE:LINE: a -> b (crate::b::Item)`. Removing enough of them breaks the cycle.
    pub evidence: Vec<String>,
}

impl fmt::Display for Cycle {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files: Vec<String> = self
            .members
            .iter()
            .map(|(_, file)| file.display().to_string())
            .collect();
        write!(
            formatter,
            "module cycle in {} among {} ({}), such as {} -> {}",
            self.root.display(),
            self.members
                .iter()
                .map(|(name, _)| name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            files.join(", "),
            self.circle.join(" -> "),
            self.circle[0],
        )?;
        for step in &self.evidence {
            write!(formatter, "\n    {step}")?;
        }
        Ok(())
    }
}

/// A source file above [`MAX_LINES`] non-test lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LongFile {
    /// The file.
    pub path: PathBuf,
    /// Its non-test lines.
    pub lines: usize,
}

impl fmt::Display for LongFile {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{}: {} non-test lines (at most {MAX_LINES})",
            self.path.display(),
            self.lines
        )
    }
}

/// Reads every `.rs` file under `crate_dir/src` and applies the rules; paths in the report
/// are relative to `crate_dir` (`src/resolve.rs`).
pub fn check_crate(crate_dir: &Path) -> std::io::Result<Report> {
    let mut files = BTreeMap::new();
    read_sources(&crate_dir.join("src"), Path::new("src"), &mut files)?;
    Ok(check_sources(&files))
}

fn read_sources(
    dir: &Path,
    relative: &Path,
    files: &mut BTreeMap<PathBuf, String>,
) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = entry.path();
        let name = relative.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            read_sources(&path, &name, files)?;
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.insert(name, std::fs::read_to_string(&path)?);
        }
    }
    Ok(())
}

/// Applies the rules to the sources of one crate, keyed by their path relative to the crate
/// (`src/lib.rs`, `src/a/mod.rs`). The roots are `src/lib.rs`, `src/main.rs` and
/// `src/bin/*.rs`; each is its own module tree.
pub fn check_sources(files: &BTreeMap<PathBuf, String>) -> Report {
    let parsed: BTreeMap<&PathBuf, Parsed> = files
        .iter()
        .map(|(path, text)| (path, parse(&tokenize(text), text)))
        .collect();
    let roots: Vec<&PathBuf> = files
        .keys()
        .filter(|path| {
            *path == Path::new("src/lib.rs")
                || *path == Path::new("src/main.rs")
                || path.parent() == Some(Path::new("src/bin"))
        })
        .collect();
    let mut report = Report::default();
    let mut test_files = BTreeSet::new();
    for root in roots {
        let tree = Tree::build(root, &parsed, &mut test_files);
        report.cycles.extend(tree.cycles(root));
    }
    for (path, file) in &parsed {
        let lines = if file.test_only || test_files.contains(*path) {
            0
        } else {
            file.total_lines.saturating_sub(file.test_lines.len())
        };
        report.lines.insert((*path).clone(), lines);
        if lines > MAX_LINES {
            report.long_files.push(LongFile {
                path: (*path).clone(),
                lines,
            });
        }
    }
    report
}

// ---------------------------------------------------------------------------------------------
// Tokens

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Ident,
    Punct,
    Literal,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    text: String,
    line: usize,
}

impl Token {
    fn is(&self, text: &str) -> bool {
        self.kind != Kind::Literal && self.text == text
    }
}

/// Splits source text into identifiers, punctuation (`::` as one token) and literals, with
/// 1-based line numbers; comments are dropped and literals are not looked into.
fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let literal = |tokens: &mut Vec<Token>, line| {
        tokens.push(Token {
            kind: Kind::Literal,
            text: String::new(),
            line,
        })
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' {
            let start = line;
            i = skip_string(&chars, i + 1, &mut line);
            literal(&mut tokens, start);
        } else if c == '\'' {
            if next == Some('\\') {
                // An escaped character literal: up to the closing quote.
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                literal(&mut tokens, line);
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                literal(&mut tokens, line);
            } else {
                // A lifetime or a label.
                i += 1;
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit() {
            while i < chars.len()
                && (is_ident_char(chars[i])
                    || (chars[i] == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)))
            {
                i += 1;
            }
            literal(&mut tokens, line);
        } else if is_ident_start(c) {
            let start = i;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let after = chars.get(i).copied();
            let raw = matches!(word.as_str(), "r" | "br" | "cr");
            if raw && matches!(after, Some('"' | '#')) {
                let mut hashes = 0;
                while chars.get(i + hashes) == Some(&'#') {
                    hashes += 1;
                }
                if chars.get(i + hashes) == Some(&'"') {
                    let start_line = line;
                    i = skip_raw_string(&chars, i + hashes + 1, hashes, &mut line);
                    literal(&mut tokens, start_line);
                    continue;
                }
                // A raw identifier (`r#type`): the identifier after the `#`.
                i += 1;
                let start = i;
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
                tokens.push(Token {
                    kind: Kind::Ident,
                    text: chars[start..i].iter().collect(),
                    line,
                });
            } else if matches!(word.as_str(), "b" | "c") && after == Some('"') {
                let start_line = line;
                i = skip_string(&chars, i + 1, &mut line);
                literal(&mut tokens, start_line);
            } else if word == "b" && after == Some('\'') {
                i += 1;
                if chars.get(i + 1) == Some(&'\\') {
                    i += 2;
                }
                while i + 1 < chars.len() && chars[i + 1] != '\'' {
                    i += 1;
                }
                i += 2;
                literal(&mut tokens, line);
            } else {
                tokens.push(Token {
                    kind: Kind::Ident,
                    text: word,
                    line,
                });
            }
        } else if c == ':' && next == Some(':') {
            tokens.push(Token {
                kind: Kind::Punct,
                text: "::".to_string(),
                line,
            });
            i += 2;
        } else {
            tokens.push(Token {
                kind: Kind::Punct,
                text: c.to_string(),
                line,
            });
            i += 1;
        }
    }
    tokens
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// The index after the closing `"` of a string whose content starts at `i`.
fn skip_string(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                *line += usize::from(chars.get(i + 1) == Some(&'\n'));
                i += 2;
            }
            '"' => return i + 1,
            c => {
                *line += usize::from(c == '\n');
                i += 1;
            }
        }
    }
    i
}

/// The index after the closing `"###` of a raw string whose content starts at `i`.
fn skip_raw_string(chars: &[char], mut i: usize, hashes: usize, line: &mut usize) -> usize {
    while i < chars.len() {
        if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        *line += usize::from(chars[i] == '\n');
        i += 1;
    }
    i
}

// ---------------------------------------------------------------------------------------------
// One file

/// What one file says about modules, read without knowing the rest of the crate.
#[derive(Debug, Default)]
struct Parsed {
    /// The file opens with `#![cfg(test)]`.
    test_only: bool,
    total_lines: usize,
    /// The lines inside `#[cfg(test)]` items.
    test_lines: BTreeSet<usize>,
    /// Modules declared with `mod NAME;`, relative to the file's own module (inline modules
    /// give several segments), and whether under `#[cfg(test)]`.
    declared: Vec<(Vec<String>, bool)>,
    /// Inline modules (`mod NAME { ... }`) outside test code, relative to the file's module.
    inline: Vec<Vec<String>>,
    /// `crate::`, `super::` and `self::` paths in non-test code: the inline module they are in
    /// (relative), the path's segments and its line.
    paths: Vec<(Vec<String>, Vec<String>, usize)>,
}

fn parse(tokens: &[Token], text: &str) -> Parsed {
    let mut parsed = Parsed {
        total_lines: text.lines().count(),
        ..Parsed::default()
    };
    let mut i = 0;
    scan(tokens, &mut i, &[], false, &mut parsed);
    parsed
}

/// Reads the items of one module body from `tokens[*i]` to its closing brace (or the end).
fn scan(tokens: &[Token], i: &mut usize, module: &[String], braced: bool, out: &mut Parsed) {
    let mut depth = 0usize;
    while *i < tokens.len() {
        let token = &tokens[*i];
        if token.is("{") {
            depth += 1;
        } else if token.is("}") {
            if depth == 0 && braced {
                *i += 1;
                return;
            }
            depth = depth.saturating_sub(1);
        } else if token.is("#") {
            let inner = tokens.get(*i + 1).is_some_and(|t| t.is("!"));
            let open = *i + 1 + usize::from(inner);
            if tokens.get(open).is_some_and(|t| t.is("[")) {
                let end = matching(tokens, open);
                let is_test = is_cfg_test(&tokens[open + 1..end]);
                let start_line = token.line;
                *i = end + 1;
                if is_test && inner && module.is_empty() {
                    out.test_only = true;
                } else if is_test && !inner {
                    let (declared, end_line) = skip_item(tokens, i);
                    out.test_lines.extend(start_line..=end_line);
                    if let Some(name) = declared {
                        out.declared.push((child(module, &name), true));
                    }
                }
                continue;
            }
        } else if token.is("mod") {
            if let Some(name) = tokens.get(*i + 1).filter(|t| t.kind == Kind::Ident) {
                let path = child(module, &name.text);
                match tokens.get(*i + 2) {
                    Some(t) if t.is(";") => {
                        out.declared.push((path, false));
                        *i += 3;
                        continue;
                    }
                    Some(t) if t.is("{") => {
                        *i += 3;
                        out.inline.push(path.clone());
                        scan(tokens, i, &path, true, out);
                        continue;
                    }
                    _ => {}
                }
            }
        } else if is_path_start(tokens, *i) {
            let line = token.line;
            for segments in read_path(tokens, i) {
                out.paths.push((module.to_vec(), segments, line));
            }
            continue;
        }
        *i += 1;
    }
}

fn child(module: &[String], name: &str) -> Vec<String> {
    let mut path = module.to_vec();
    path.push(name.to_string());
    path
}

/// The index of the bracket that closes the one at `open`.
fn matching(tokens: &[Token], open: usize) -> usize {
    let mut depth = 0usize;
    for (index, token) in tokens.iter().enumerate().skip(open) {
        if token.is("(") || token.is("[") || token.is("{") {
            depth += 1;
        } else if token.is(")") || token.is("]") || token.is("}") {
            depth -= 1;
            if depth == 0 {
                return index;
            }
        }
    }
    tokens.len() - 1
}

/// Whether the tokens inside `#[...]` are exactly `cfg(test)`.
fn is_cfg_test(inside: &[Token]) -> bool {
    let words: Vec<&str> = inside.iter().map(|t| t.text.as_str()).collect();
    words == ["cfg", "(", "test", ")"]
}

/// Skips one item from `tokens[*i]` (its further attributes, then up to its `;` or its closing
/// brace); returns the module it declares when it is `mod NAME;`, and its last line.
fn skip_item(tokens: &[Token], i: &mut usize) -> (Option<String>, usize) {
    while tokens.get(*i).is_some_and(|t| t.is("#")) && tokens.get(*i + 1).is_some_and(|t| t.is("["))
    {
        *i = matching(tokens, *i + 1) + 1;
    }
    let start = *i;
    let mut depth = 0usize;
    while *i < tokens.len() {
        let token = &tokens[*i];
        if token.is("(") || token.is("[") || token.is("{") {
            depth += 1;
        } else if token.is(")") || token.is("]") || token.is("}") {
            depth = depth.saturating_sub(1);
            if depth == 0 && token.is("}") {
                *i += 1;
                return (None, token.line);
            }
        } else if depth == 0 && token.is(";") {
            let words: Vec<&Token> = tokens[start..*i]
                .iter()
                .filter(|t| !t.is("pub") && !t.is("(") && !t.is(")") && !t.is("crate"))
                .collect();
            let declared = match words.as_slice() {
                [keyword, name] if keyword.is("mod") => Some(name.text.clone()),
                _ => None,
            };
            *i += 1;
            return (declared, token.line);
        }
        *i += 1;
    }
    (None, tokens.last().map_or(0, |t| t.line))
}

/// Whether a `crate::`, `super::` or `self::` path starts at `tokens[i]`, and is not `$crate`
/// nor the path of a `pub(in ...)` visibility.
fn is_path_start(tokens: &[Token], i: usize) -> bool {
    let token = &tokens[i];
    let keyword =
        token.kind == Kind::Ident && matches!(token.text.as_str(), "crate" | "super" | "self");
    let before = |back: usize| i.checked_sub(back).map(|index| &tokens[index]);
    keyword
        && tokens.get(i + 1).is_some_and(|t| t.is("::"))
        && !before(1).is_some_and(|t| t.is("$") || t.is("::"))
        && !(before(1).is_some_and(|t| t.is("in")) && before(2).is_some_and(|t| t.is("(")))
}

/// Reads the path (or `use` tree) at `tokens[*i]`: every full path it names.
fn read_path(tokens: &[Token], i: &mut usize) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    read_tree(tokens, i, Vec::new(), &mut paths);
    paths
}

fn read_tree(tokens: &[Token], i: &mut usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    match tokens.get(*i) {
        Some(t) if t.is("{") => {
            *i += 1;
            while let Some(token) = tokens.get(*i) {
                if token.is("}") {
                    *i += 1;
                    break;
                }
                if token.is(",") {
                    *i += 1;
                    continue;
                }
                let before = *i;
                read_tree(tokens, i, prefix.clone(), out);
                if *i == before {
                    *i += 1;
                }
            }
            return;
        }
        Some(t) if t.is("*") => {
            *i += 1;
            out.push(prefix);
            return;
        }
        Some(t) if t.kind == Kind::Ident => {
            if t.text != "self" || prefix.is_empty() {
                prefix.push(t.text.clone());
            }
            *i += 1;
        }
        _ => return,
    }
    while tokens.get(*i).is_some_and(|t| t.is("::")) {
        match tokens.get(*i + 1) {
            Some(t) if t.is("{") || t.is("*") => {
                *i += 1;
                read_tree(tokens, i, prefix, out);
                return;
            }
            Some(t) if t.kind == Kind::Ident => {
                prefix.push(t.text.clone());
                *i += 2;
            }
            _ => break,
        }
    }
    if tokens.get(*i).is_some_and(|t| t.is("as")) {
        *i += 2;
    }
    out.push(prefix);
}

// ---------------------------------------------------------------------------------------------
// One crate root

/// The modules of one crate root, with their files and dependencies.
struct Tree {
    files: BTreeMap<Vec<String>, PathBuf>,
    /// `from -> to -> first evidence`.
    edges: BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>>,
}

impl Tree {
    fn build(
        root: &Path,
        parsed: &BTreeMap<&PathBuf, Parsed>,
        test_files: &mut BTreeSet<PathBuf>,
    ) -> Tree {
        let mut files = BTreeMap::new();
        let mut pending = vec![(Vec::new(), root.to_path_buf(), true)];
        let mut references = Vec::new();
        while let Some((module, file, mod_rs)) = pending.pop() {
            let Some(source) = parsed.get(&file) else {
                continue;
            };
            if source.test_only {
                test_files.insert(file.clone());
                continue;
            }
            files.insert(module.clone(), file.clone());
            for inline in &source.inline {
                files.insert(join(&module, inline), file.clone());
            }
            let dir = if mod_rs {
                file.parent().unwrap_or(Path::new("")).to_path_buf()
            } else {
                file.with_extension("")
            };
            for (relative, test) in &source.declared {
                let mut child_dir = dir.clone();
                for segment in &relative[..relative.len() - 1] {
                    child_dir.push(segment);
                }
                let name = &relative[relative.len() - 1];
                let flat = child_dir.join(format!("{name}.rs"));
                let nested = child_dir.join(name).join("mod.rs");
                let (child_file, child_mod_rs) = if parsed.contains_key(&flat) {
                    (flat, false)
                } else {
                    (nested, true)
                };
                if *test {
                    test_files.insert(child_file);
                } else {
                    pending.push((join(&module, relative), child_file, child_mod_rs));
                }
            }
            for (inline, segments, line) in &source.paths {
                references.push((join(&module, inline), segments.clone(), file.clone(), *line));
            }
        }
        let known: BTreeSet<Vec<String>> = files.keys().cloned().collect();
        let mut edges: BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>> = BTreeMap::new();
        for (from, segments, file, line) in references {
            let Some(to) = resolve(&from, &segments, &known) else {
                continue;
            };
            if to != from {
                let evidence = format!(
                    "{}:{line}: {} -> {} ({})",
                    file.display(),
                    name(&from),
                    name(&to),
                    segments.join("::")
                );
                edges.entry(from).or_default().entry(to).or_insert(evidence);
            }
        }
        Tree { files, edges }
    }

    /// One cycle per strongly connected component of two or more modules.
    fn cycles(&self, root: &Path) -> Vec<Cycle> {
        let mut cycles = Vec::new();
        for component in self.components() {
            if component.len() < 2 {
                continue;
            }
            let members: BTreeSet<&Vec<String>> = component.iter().collect();
            let circle = self.circle(&component[0], &members);
            let evidence = component
                .iter()
                .flat_map(|from| {
                    self.edges
                        .get(from)
                        .into_iter()
                        .flat_map(|targets| targets.iter())
                        .filter(|(to, _)| members.contains(to))
                        .map(|(_, evidence)| evidence.clone())
                })
                .collect();
            cycles.push(Cycle {
                root: root.to_path_buf(),
                members: component
                    .iter()
                    .map(|module| (name(module), self.files[module].clone()))
                    .collect(),
                circle: circle.iter().map(|module| name(module)).collect(),
                evidence,
            });
        }
        cycles
    }

    /// Tarjan's strongly connected components.
    fn components(&self) -> Vec<Vec<Vec<String>>> {
        struct State<'a> {
            index: BTreeMap<&'a Vec<String>, usize>,
            low: BTreeMap<&'a Vec<String>, usize>,
            stack: Vec<&'a Vec<String>>,
            on_stack: BTreeSet<&'a Vec<String>>,
            components: Vec<Vec<Vec<String>>>,
        }
        fn visit<'a>(tree: &'a Tree, node: &'a Vec<String>, state: &mut State<'a>) {
            let number = state.index.len();
            state.index.insert(node, number);
            state.low.insert(node, number);
            state.stack.push(node);
            state.on_stack.insert(node);
            for next in tree.edges.get(node).into_iter().flat_map(BTreeMap::keys) {
                if !state.index.contains_key(next) {
                    visit(tree, next, state);
                    let low = state.low[node].min(state.low[next]);
                    state.low.insert(node, low);
                } else if state.on_stack.contains(next) {
                    let low = state.low[node].min(state.index[next]);
                    state.low.insert(node, low);
                }
            }
            if state.low[node] == state.index[node] {
                let mut component = Vec::new();
                while let Some(member) = state.stack.pop() {
                    state.on_stack.remove(member);
                    component.push(member.clone());
                    if member == node {
                        break;
                    }
                }
                component.sort();
                state.components.push(component);
            }
        }
        let mut state = State {
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            components: Vec::new(),
        };
        for node in self.files.keys() {
            if !state.index.contains_key(node) {
                visit(self, node, &mut state);
            }
        }
        state.components.sort();
        state.components
    }

    /// A shortest circle from `start` back to itself inside `members` (breadth-first).
    fn circle(&self, start: &Vec<String>, members: &BTreeSet<&Vec<String>>) -> Vec<Vec<String>> {
        let mut previous: BTreeMap<&Vec<String>, &Vec<String>> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        while let Some(node) = queue.pop_front() {
            for next in self.edges.get(node).into_iter().flat_map(BTreeMap::keys) {
                if !members.contains(next) {
                    continue;
                }
                if next == start {
                    let mut circle = vec![node.clone()];
                    let mut at = node;
                    while at != start {
                        at = previous[at];
                        circle.push(at.clone());
                    }
                    circle.reverse();
                    return circle;
                }
                if !previous.contains_key(next) {
                    previous.insert(next, node);
                    queue.push_back(next);
                }
            }
        }
        vec![start.clone()]
    }
}

fn join(module: &[String], relative: &[String]) -> Vec<String> {
    module.iter().chain(relative).cloned().collect()
}

/// `crate` for the root, else the module path (`verify::probe`).
fn name(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_string()
    } else {
        module.join("::")
    }
}

/// The module a path starting with `crate`, `super` or `self` names from module `from`: the
/// longest prefix of it that is a known module.
fn resolve(
    from: &[String],
    segments: &[String],
    known: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let mut rest = segments.iter().peekable();
    let mut base: Vec<String> = match rest.next()?.as_str() {
        "crate" => Vec::new(),
        "self" => from.to_vec(),
        "super" => from.split_last()?.1.to_vec(),
        _ => return None,
    };
    while rest.peek().is_some_and(|segment| *segment == "super") {
        rest.next();
        base.pop()?;
    }
    for segment in rest {
        let candidate = child(&base, segment);
        if !known.contains(&candidate) {
            break;
        }
        base = candidate;
    }
    Some(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(files: &[(&str, &str)]) -> BTreeMap<PathBuf, String> {
        files
            .iter()
            .map(|(path, text)| (PathBuf::from(path), (*text).to_string()))
            .collect()
    }

    fn cycles(files: &[(&str, &str)]) -> Vec<Vec<String>> {
        check_sources(&sources(files))
            .cycles
            .into_iter()
            .map(|cycle| cycle.members.into_iter().map(|(name, _)| name).collect())
            .collect()
    }

    #[test]
    fn a_known_cycle_is_found_and_names_its_files() {
        let files = [
            ("src/lib.rs", "mod a;\nmod b;\nmod c;\n"),
            ("src/a.rs", "use crate::b::Thing;\npub fn g() {}\n"),
            ("src/b.rs", "pub struct Thing;\nfn f() { crate::a::g() }\n"),
            ("src/c.rs", "use crate::a::g;\n"),
        ];
        let report = check_sources(&sources(&files));
        assert_eq!(report.cycles.len(), 1, "{report:?}");
        let text = report.cycles[0].to_string();
        assert_eq!(
            text,
            "module cycle in src/lib.rs among a, b (src/a.rs, src/b.rs), such as a -> b -> a\n    \
             src/a.rs:1: a -> b (crate::b::Thing)\n    \
             src/b.rs:2: b -> a (crate::a::g)"
        );
    }

    #[test]
    fn a_test_module_is_ignored() {
        let files = [
            ("src/lib.rs", "mod a;\nmod b;\n"),
            ("src/a.rs", "use crate::b::X;\n"),
            (
                "src/b.rs",
                "pub struct X;\n#[cfg(test)]\nmod tests {\n    use crate::a;\n    use super::super::a::*;\n}\n#[cfg(test)]\nfn helper() { crate::a::f() }\n",
            ),
        ];
        assert_eq!(cycles(&files), Vec::<Vec<String>>::new());
        let report = check_sources(&sources(&files));
        assert_eq!(report.lines[Path::new("src/b.rs")], 1);
    }

    #[test]
    fn super_and_self_paths_resolve_in_directory_modules() {
        let files = [
            ("src/lib.rs", "pub mod verify;\n"),
            (
                "src/verify/mod.rs",
                "pub mod compare;\npub mod probe;\npub use probe::run;\n",
            ),
            ("src/verify/probe.rs", "use super::compare::Check;\n"),
            (
                "src/verify/compare.rs",
                "pub struct Check;\nfn f() { super::probe::run() }\n",
            ),
        ];
        assert_eq!(
            cycles(&files),
            vec![vec![
                "verify::compare".to_string(),
                "verify::probe".to_string()
            ]]
        );
        // Re-exports through the parent and `super::Item` in a child are not a cycle.
        let files = [
            ("src/lib.rs", "pub mod verify;\n"),
            (
                "src/verify/mod.rs",
                "mod probe;\npub use probe::run;\npub struct Check;\n",
            ),
            (
                "src/verify/probe.rs",
                "use super::Check;\npub fn run() {}\n",
            ),
        ];
        assert_eq!(cycles(&files), Vec::<Vec<String>>::new());
    }

    #[test]
    fn comments_strings_and_literals_are_not_paths() {
        let a = r####"
//! See [`crate::b::X`].
/* crate::b::X /* nested crate::b::X */ */
const S: &str = "crate::b::X \" crate::b::X";
const R: &str = r#"crate::b::X " crate::b::X"#;
const B: &[u8] = br"crate::b::X";
const C: char = '"';
const D: char = '\'';
const E: u8 = b'"';
fn f<'a>(x: &'a str) -> &'a str { 'outer: loop { break 'outer x; } }
macro_rules! m { () => { $crate::b::X } }
pub(crate) struct P;
pub(in crate::b) struct Q;
"####;
        let files = [
            ("src/lib.rs", "mod a;\nmod b;\n"),
            ("src/a.rs", a),
            ("src/b.rs", "pub struct X;\nuse crate::a::P;\n"),
        ];
        assert_eq!(cycles(&files), Vec::<Vec<String>>::new());
        // The string above spans no extra lines: the line numbers after it stay right.
        let tokens = tokenize("\"a\nb\"\nx");
        assert_eq!(tokens.last().map(|t| t.line), Some(3));
    }

    #[test]
    fn grouped_use_trees_name_each_module() {
        let files = [
            ("src/lib.rs", "mod a;\nmod b;\nmod c;\n"),
            ("src/a.rs", "use crate::{b::X, c::{self, Y as Z}};\n"),
            ("src/b.rs", "pub struct X;\n"),
            ("src/c.rs", "use crate::a;\n"),
        ];
        assert_eq!(cycles(&files), vec![vec!["a".to_string(), "c".to_string()]]);
    }

    #[test]
    fn inline_modules_are_modules_and_test_declared_files_are_test_code() {
        let files = [
            (
                "src/lib.rs",
                "mod a;\nmod b;\n#[cfg(test)]\nmod recorded;\n",
            ),
            ("src/a.rs", "pub mod inner {\n    use crate::b::X;\n}\n"),
            ("src/b.rs", "pub struct X;\nuse crate::a::inner;\n"),
            (
                "src/recorded.rs",
                "use crate::a;\nconst LONG: &str = \"\";\n",
            ),
        ];
        assert_eq!(
            cycles(&files),
            vec![vec!["a::inner".to_string(), "b".to_string()]]
        );
        let report = check_sources(&sources(&files));
        assert_eq!(report.lines[Path::new("src/recorded.rs")], 0);
    }

    #[test]
    fn files_are_measured_without_their_tests() {
        let code = "fn f() {}\n".repeat(MAX_LINES);
        let tests = "#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n";
        let long = format!("{code}{tests}");
        let longer = format!("{code}fn g() {{}}\n");
        let files = [
            ("src/lib.rs", "mod long;\nmod longer;\n"),
            ("src/long.rs", long.as_str()),
            ("src/longer.rs", longer.as_str()),
        ];
        let report = check_sources(&sources(&files));
        assert_eq!(report.lines[Path::new("src/long.rs")], MAX_LINES);
        assert_eq!(
            report.long_files,
            vec![LongFile {
                path: PathBuf::from("src/longer.rs"),
                lines: MAX_LINES + 1
            }]
        );
    }
}
