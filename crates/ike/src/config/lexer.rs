//! The strongswan.conf / swanctl.conf settings syntax, read into a tree of
//! sections and settings, the way strongSwan's `settings_lexer.l` and
//! `settings_parser.y` (5.9.8) read it:
//!
//! ```text
//! name {                 # a section; '{' may follow on the next line
//!     key = a value      # a value runs to the end of the line, '#' or '}'
//!     key = "quoted\tstring with # and }"  # \n \r \t \\ \" escapes
//!     key =              # an empty value: the key is as if unset
//! }
//! ```
//!
//! Names may hold any character except `#{}:.,="` and white space. The
//! parts of a value are joined by a single space (`a   b` is `a b`, and
//! `"x"y` is `x y`), as strongSwan does. Sections of the same name in one
//! parent are merged, as in strongSwan; a key given twice in one section is
//! refused (strongSwan silently keeps the last one).
//!
//! `include PATTERN` reads other files where it stands ([`super::include`]);
//! `name : base[, base2] { }` names the sections `name` inherits from,
//! resolved once the whole tree is read ([`super::template`]).

use std::sync::Arc;

use zeroize::{Zeroize, Zeroizing};

use super::error::Found as Token;
use super::include::Includes;
use super::{ConfigError, ConfigErrorKind};

/// Deepest nesting of sections (swanctl.conf needs 5:
/// `connections.gw.children.net`); bounds the parser's stack.
pub const MAX_DEPTH: usize = 16;

/// A section: its name, where it opened, its settings and subsections in
/// file order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Section {
    /// Its name (empty for the root).
    pub name: String,
    /// The line it opened on (0: not from a file).
    pub line: usize,
    /// The included file it opened in (`None`: the file given to the
    /// parser, or not from a file).
    pub file: Option<Arc<str>>,
    /// The sections it inherits from (`name : a, b.c { }`), absolute
    /// dotted names, left to right.
    pub refs: Vec<String>,
    /// Its `key = value` settings, in order.
    pub settings: Vec<Setting>,
    /// Its subsections, in order.
    pub sections: Vec<Section>,
}

/// One `key = value`; `value` is `None` for `key =`. A value may be a
/// secret (`secrets.ike.secret`): it is wiped when the setting is dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The key.
    pub key: String,
    /// The value (`None`: `key =`).
    pub value: Option<String>,
    /// Its line (0: not from a file).
    pub line: usize,
    /// The included file it is in (`None`: the file given to the parser,
    /// or not from a file).
    pub file: Option<Arc<str>>,
}

/// Where a setting or section is: the file (`None`: the file given to the
/// parser) and the line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Origin {
    /// The included file, if not the main one.
    pub file: Option<Arc<str>>,
    /// The line (0: not from a file).
    pub line: usize,
}

impl From<&Setting> for Origin {
    fn from(s: &Setting) -> Origin {
        s.origin()
    }
}

impl From<&Section> for Origin {
    fn from(s: &Section) -> Origin {
        s.origin()
    }
}

impl Origin {
    /// The file name for an error, `main` when not an included file.
    pub fn file_or<'a>(&'a self, main: &'a str) -> &'a str {
        self.file.as_deref().unwrap_or(main)
    }
}

impl Setting {
    /// Where it was given.
    /// Where it opened.
    pub fn origin(&self) -> Origin {
        Origin {
            file: self.file.clone(),
            line: self.line,
        }
    }
}

impl Drop for Setting {
    fn drop(&mut self) {
        if let Some(v) = &mut self.value {
            v.zeroize();
        }
    }
}

impl Section {
    /// `Ok` if it has no subsections; else an error at the first one,
    /// `path.NAME` (UnknownSection) in its file (`main` unless included):
    /// for the sections that hold settings only.
    pub(crate) fn settings_only(&self, main: &str, path: &str) -> Result<(), ConfigError> {
        match self.sections.first() {
            Some(sub) => {
                let at = sub.origin();
                let key = join(path, &sub.name);
                Err(ConfigError::new(
                    at.file_or(main),
                    at.line,
                    key,
                    crate::config::ConfigErrorKind::UnknownSection,
                ))
            }
            None => Ok(()),
        }
    }

    /// Where it opened.
    pub fn origin(&self) -> Origin {
        Origin {
            file: self.file.clone(),
            line: self.line,
        }
    }

    pub(crate) fn add_setting(
        &mut self,
        s: Setting,
        path: &str,
        file: &str,
    ) -> Result<(), ConfigError> {
        if let Some(prev) = self.settings.iter().find(|p| p.key == s.key) {
            return Err(ConfigError::new(
                s.file.as_deref().unwrap_or(file),
                s.line,
                join(path, &s.key),
                ConfigErrorKind::Duplicate {
                    first_line: prev.line,
                },
            ));
        }
        self.settings.push(s);
        Ok(())
    }

    /// Adds `sub`, merging it into an existing section of that name.
    pub(crate) fn add_section(
        &mut self,
        sub: Section,
        path: &str,
        file: &str,
    ) -> Result<(), ConfigError> {
        match self.sections.iter_mut().find(|p| p.name == sub.name) {
            None => {
                self.sections.push(sub);
                Ok(())
            }
            Some(existing) => {
                let here = join(path, &sub.name);
                for r in sub.refs {
                    if !existing.refs.contains(&r) {
                        existing.refs.push(r);
                    }
                }
                for s in sub.settings {
                    existing.add_setting(s, &here, file)?;
                }
                for c in sub.sections {
                    existing.add_section(c, &here, file)?;
                }
                Ok(())
            }
        }
    }
}

/// `a.b` from a path and a name (no dot for the root's children).
pub(crate) fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

// The tokens outside values are [`Found`](super::Found)'s: what an error
// says was found is the token itself.

struct Lexer<'a> {
    file: &'a str,
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: usize,
}

fn is_name_char(c: char) -> bool {
    !matches!(
        c,
        '#' | '{' | '}' | ':' | '.' | ',' | '=' | '"' | '\r' | '\n' | '\t' | ' '
    )
}

impl<'a> Lexer<'a> {
    fn err(&self, key: &str, kind: ConfigErrorKind) -> ConfigError {
        ConfigError::new(self.file, self.line, key.to_string(), kind)
    }

    fn skip_comment(&mut self) {
        while let Some(&c) = self.chars.peek() {
            if c == '\n' {
                break;
            }
            self.chars.next();
        }
    }

    /// The next token outside a value (white space, newlines and comments
    /// skipped). `path` names the section for errors.
    fn token(&mut self, path: &str) -> Result<(Token, usize), ConfigError> {
        loop {
            let Some(&c) = self.chars.peek() else {
                return Ok((Token::Eof, self.line));
            };
            let line = self.line;
            match c {
                '\n' => {
                    self.line += 1;
                    self.chars.next();
                }
                ' ' | '\t' | '\r' => {
                    self.chars.next();
                }
                '#' => self.skip_comment(),
                '{' | '}' | '=' | ':' | '.' | ',' => {
                    self.chars.next();
                    let t = match c {
                        '{' => Token::Open,
                        '}' => Token::Close,
                        '=' => Token::Equals,
                        ':' => Token::Colon,
                        other => Token::Stray(other),
                    };
                    return Ok((t, line));
                }
                '"' => return Err(self.err(path, ConfigErrorKind::QuotedName)),
                _ => {
                    let mut name = String::new();
                    while let Some(&c) = self.chars.peek() {
                        if !is_name_char(c) {
                            break;
                        }
                        name.push(c);
                        self.chars.next();
                    }
                    if name == "include" && self.include_follows() {
                        return Ok((Token::Include, line));
                    }
                    return Ok((Token::Name(name), line));
                }
            }
        }
    }

    /// After the word `include`: strongSwan's `"include"[\t ]+/[^=]`.
    fn include_follows(&mut self) -> bool {
        let mut spaces = false;
        while let Some(&c) = self.chars.peek() {
            if c == ' ' || c == '\t' {
                spaces = true;
                self.chars.next();
            } else {
                return spaces && c != '=';
            }
        }
        false
    }

    /// The pattern after `include`, as strongSwan's `<inc>` state reads
    /// it: up to white space, `#`, `}` or the end of the line (left for
    /// the caller); a quoted part as in values; `\\"`, `\\#`, `\\}` and
    /// `\\ ` escape those characters.
    fn include_pattern(&mut self, key: &str) -> Result<String, ConfigError> {
        let mut pattern = String::new();
        loop {
            match self.chars.peek().copied() {
                None | Some('\n') | Some('#') | Some('}') | Some(' ') | Some('\t') => break,
                Some('\r') => {
                    self.chars.next();
                }
                Some('"') => {
                    self.chars.next();
                    pattern.push_str(&self.quoted(key)?);
                    break;
                }
                Some('\\') => {
                    self.chars.next();
                    match self.chars.peek().copied() {
                        Some(c @ ('"' | '#' | '}' | ' ')) => {
                            self.chars.next();
                            pattern.push(c);
                        }
                        _ => pattern.push('\\'),
                    }
                }
                Some(c) => {
                    self.chars.next();
                    pattern.push(c);
                }
            }
        }
        Ok(pattern)
    }

    /// A value after `=`: parts up to the end of the line, `#` or `}`
    /// (which are left for the caller), joined by single spaces.
    fn value(&mut self, key: &str) -> Result<Option<String>, ConfigError> {
        // Wiped when dropped: the parts of a secret's value.
        let mut parts: Zeroizing<Vec<String>> = Zeroizing::new(Vec::new());
        loop {
            match self.chars.peek().copied() {
                None | Some('\n') | Some('#') | Some('}') => break,
                Some(' ') | Some('\t') | Some('\r') => {
                    self.chars.next();
                }
                Some('"') => {
                    self.chars.next();
                    parts.push(self.quoted(key)?);
                }
                Some(_) => {
                    let mut part = String::new();
                    while let Some(&c) = self.chars.peek() {
                        if matches!(c, '#' | '}' | '"' | '\r' | '\n' | '\t' | ' ') {
                            break;
                        }
                        part.push(c);
                        self.chars.next();
                    }
                    parts.push(part);
                }
            }
        }
        Ok(if parts.is_empty() {
            None
        } else {
            Some(parts.join(" "))
        })
    }

    /// The rest of a quoted string, after its opening `"`.
    fn quoted(&mut self, key: &str) -> Result<String, ConfigError> {
        let start = self.line;
        let mut s = String::new();
        loop {
            let Some(c) = self.chars.next() else {
                return Err(ConfigError::new(
                    self.file,
                    start,
                    key.to_string(),
                    ConfigErrorKind::UnterminatedQuote,
                ));
            };
            match c {
                '"' => return Ok(s),
                '\r' => {}
                '\n' => {
                    self.line += 1;
                    s.push('\n');
                }
                '\\' => match self.chars.next() {
                    Some('n') => s.push('\n'),
                    Some('r') => {
                        // `\` CR LF continues the line, like `\` LF.
                        if self.chars.peek() == Some(&'\n') {
                            self.chars.next();
                            self.line += 1;
                        } else {
                            s.push('\r');
                        }
                    }
                    Some('t') => s.push('\t'),
                    Some('\n') => self.line += 1,
                    Some(other) => s.push(other),
                    None => {
                        return Err(ConfigError::new(
                            self.file,
                            start,
                            key.to_string(),
                            ConfigErrorKind::UnterminatedQuote,
                        ))
                    }
                },
                other => s.push(other),
            }
        }
    }
}

/// Reads `text` into its root section (named `""`), reading the files
/// its `include` statements name relative to `file`'s directory
/// ([`super::include`]). Section references are left for
/// [`super::template::resolve`].
pub(crate) fn parse_tree(file: &str, text: &str) -> Result<Section, ConfigError> {
    let mut includes = Includes::new(file);
    parse_tree_in(file, text, None, &mut includes)
}

/// [`parse_tree`] for one file of an include tree: `origin` is what its
/// settings record as their file (`None` for the main file).
pub(crate) fn parse_tree_in(
    file: &str,
    text: &str,
    origin: Option<Arc<str>>,
    includes: &mut Includes,
) -> Result<Section, ConfigError> {
    let mut p = Parser {
        lx: Lexer {
            file,
            chars: text.chars().peekable(),
            line: 1,
        },
        origin,
        includes,
        root: Section::default(),
        open: Vec::new(),
    };
    loop {
        let path = p.open.last().map(|(_, p)| p.clone()).unwrap_or_default();
        let (tok, line) = p.lx.token(&path)?;
        match tok {
            Token::Eof => return p.finish(),
            Token::Close => p.close(line)?,
            Token::Include => p.include(line, path)?,
            Token::Name(name) => p.named(name, line, path)?,
            other => return Err(p.err(line, path, ConfigErrorKind::ExpectedName { found: other })),
        }
    }
}

/// The tree as it is read: the root, and the sections open below it,
/// innermost last, with their paths.
struct Parser<'a> {
    lx: Lexer<'a>,
    origin: Option<Arc<str>>,
    includes: &'a mut Includes,
    root: Section,
    open: Vec<(Section, String)>,
}

impl Parser<'_> {
    fn err(&self, line: usize, key: String, kind: ConfigErrorKind) -> ConfigError {
        ConfigError::new(self.lx.file, line, key, kind)
    }

    /// At the end of the text: the root, if every section was closed.
    fn finish(self) -> Result<Section, ConfigError> {
        if let Some((s, p)) = self.open.last() {
            return Err(self.err(
                self.lx.line,
                p.clone(),
                ConfigErrorKind::Unclosed {
                    section: s.name.clone(),
                    opened: s.line,
                },
            ));
        }
        Ok(self.root)
    }

    /// `include PATTERN` (on `line`, in the section at `path`): the files
    /// it names, each read whole, add to the innermost open section, as
    /// strongSwan's "settings are added relative to the section the
    /// include statement is in" (strongswan.conf(5), INCLUDING FILES).
    fn include(&mut self, line: usize, path: String) -> Result<(), ConfigError> {
        let pattern = self.lx.include_pattern(&path)?;
        let file = self.lx.file;
        let roots = self.includes.read(file, line, &path, &pattern)?;
        let (sec, path) = self.innermost();
        for root in roots {
            for s in root.settings {
                sec.add_setting(s, path, file)?;
            }
            for c in root.sections {
                sec.add_section(c, path, file)?;
            }
        }
        Ok(())
    }

    /// `}`: the innermost section is whole and goes into its parent.
    fn close(&mut self, line: usize) -> Result<(), ConfigError> {
        let Some((done, _)) = self.open.pop() else {
            return Err(self.err(line, String::new(), ConfigErrorKind::StrayClose));
        };
        let file = self.lx.file;
        let (parent, path) = self.innermost();
        parent.add_section(done, path, file)
    }

    /// After a name (on `line`, in the section at `path`): `{` opens a
    /// section, `=` reads a setting.
    fn named(&mut self, name: String, line: usize, path: String) -> Result<(), ConfigError> {
        let here = join(&path, &name);
        let (next, nline) = self.lx.token(&here)?;
        match next {
            Token::Open => self.open_section(name, line, here, Vec::new())?,
            Token::Equals => {
                let value = self.lx.value(&here)?;
                let setting = Setting {
                    key: name,
                    value,
                    line,
                    file: self.origin.clone(),
                };
                let file = self.lx.file;
                let (sec, path) = self.innermost();
                sec.add_setting(setting, path, file)?;
            }
            Token::Colon => {
                let refs = self.references(&here)?;
                self.open_section(name, line, here, refs)?;
            }
            other => {
                return Err(self.err(
                    nline,
                    here,
                    ConfigErrorKind::ExpectedOpenOrEquals { name, found: other },
                ));
            }
        }
        Ok(())
    }

    /// `{` after `name` (or its references): a section opens.
    fn open_section(
        &mut self,
        name: String,
        line: usize,
        here: String,
        refs: Vec<String>,
    ) -> Result<(), ConfigError> {
        if self.open.len() >= MAX_DEPTH {
            return Err(self.err(line, here, ConfigErrorKind::TooDeep));
        }
        let s = Section {
            name,
            line,
            file: self.origin.clone(),
            refs,
            ..Section::default()
        };
        self.open.push((s, here));
        Ok(())
    }

    /// After `name :`, up to and with the `{`: settings_parser.y's
    /// `references := NAME | references "," NAME`, where settings_lexer.l's
    /// `<ref>` state reads a NAME with dots (`absname := name[.name]*`,
    /// strongswan.conf(5), REFERENCING OTHER SECTIONS).
    fn references(&mut self, here: &str) -> Result<Vec<String>, ConfigError> {
        let mut refs = Vec::new();
        let mut name = String::new();
        loop {
            let (tok, line) = self.lx.token(here)?;
            let expected_name = name.is_empty() || name.ends_with('.');
            match tok {
                Token::Name(n) if expected_name => name.push_str(&n),
                Token::Stray('.') if !expected_name => name.push('.'),
                Token::Stray(',') | Token::Open if !expected_name => {
                    refs.push(std::mem::take(&mut name));
                    if tok == Token::Open {
                        return Ok(refs);
                    }
                }
                found => {
                    return Err(self.err(
                        line,
                        here.to_string(),
                        ConfigErrorKind::BadReference { found },
                    ))
                }
            }
        }
    }

    /// The innermost open section (the root if none is) and its path.
    fn innermost(&mut self) -> (&mut Section, &str) {
        match self.open.last_mut() {
            Some((sec, path)) => (sec, path.as_str()),
            None => (&mut self.root, ""),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value_of(text: &str) -> Option<String> {
        let root = parse_tree("t", text).unwrap();
        root.settings[0].value.clone()
    }

    #[test]
    fn sections_settings_and_lines() {
        let root = parse_tree(
            "t",
            "# comment\na {\n  b = c d   e # tail\n  sub\n  {\n x = 1 }\n}\ny=2",
        )
        .unwrap();
        let a = &root.sections[0];
        assert_eq!(a.name, "a");
        assert_eq!(a.line, 2);
        assert_eq!(
            a.settings[0],
            Setting {
                key: "b".into(),
                value: Some("c d e".into()),
                line: 3,
                file: None,
            }
        );
        assert_eq!(a.sections[0].name, "sub");
        assert_eq!(a.sections[0].settings[0].line, 6);
        assert_eq!(root.settings[0].value.as_deref(), Some("2"));
    }

    #[test]
    fn values_like_strongswan() {
        assert_eq!(value_of("k = \"a # b } c\"").as_deref(), Some("a # b } c"));
        assert_eq!(
            value_of("k = \"x\\ty\\\"z\\\\\"").as_deref(),
            Some("x\ty\"z\\")
        );
        assert_eq!(value_of("k = \"ab\\\ncd\"").as_deref(), Some("abcd"));
        // strongSwan's testing net2net-psk: parts joined by single spaces.
        assert_eq!(
            value_of("k = 'My \"home\" is my \"castle\"!'").as_deref(),
            Some("'My home is my castle !'")
        );
        assert_eq!(value_of("k =\n"), None);
        assert_eq!(value_of("k = a.b,c:d=e"), Some("a.b,c:d=e".into()));
        let root = parse_tree("t", "s { k = v }").unwrap();
        assert_eq!(root.sections[0].settings[0].value.as_deref(), Some("v"));
    }

    #[test]
    fn references_after_colon() {
        let root = parse_tree("t", "a : b, c.d ,e{ }\na : f { }").unwrap();
        assert_eq!(root.sections[0].refs, ["b", "c.d", "e", "f"]);
    }

    #[test]
    fn merges_sections_refuses_duplicate_keys() {
        let root = parse_tree("t", "a { x = 1 }\na { y = 2 }").unwrap();
        assert_eq!(root.sections.len(), 1);
        assert_eq!(root.sections[0].settings.len(), 2);
        let e = parse_tree("t", "a { x = 1 }\na { x = 2 }").unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (2, "a.x"));
        assert!(e.kind.to_string().contains("line 1"), "{e}");
    }

    #[test]
    fn syntax_errors_name_line_and_path() {
        let e = parse_tree("f.conf", "a {\n b {\n").unwrap_err();
        assert_eq!(e.key, "a.b");
        assert!(e.kind.to_string().contains("not closed"));
        let e = parse_tree("f.conf", "a {\n}\n}").unwrap_err();
        assert_eq!(e.line, 3);
        let e = parse_tree("f.conf", "a {\n include /nonexistent/x.conf\n}").unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (2, "a"));
        assert!(e.kind.to_string().contains("cannot include"), "{e}");
        // `include = x` is a setting named include.
        assert!(parse_tree("f", "include = x").is_ok());
        let e = parse_tree("f", "a {\n}\nb : a, { }").unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (3, "b"));
        assert!(e.kind.to_string().contains("references after ':'"), "{e}");
        let e = parse_tree("f", "b : a. { }").unwrap_err();
        assert!(e.kind.to_string().contains("found '{'"), "{e}");
        let e = parse_tree("f", "a {\n k = \"open\n").unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (2, "a.k"));
        assert!(e.kind.to_string().contains("unterminated"));
        let e = parse_tree("f", "a.b = c").unwrap_err();
        assert!(e.kind.to_string().contains("'.'"), "{e}");
        let e = parse_tree("f", "a b").unwrap_err();
        assert!(e.kind.to_string().contains("expected"), "{e}");
        let deep = "a {".repeat(40);
        assert!(parse_tree("f", &deep)
            .unwrap_err()
            .kind
            .to_string()
            .contains("deeper"));
    }
}
