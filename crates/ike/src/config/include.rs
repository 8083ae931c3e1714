//! `include PATTERN` in the settings syntax, as strongSwan reads it
//! (strongswan.conf(5), INCLUDING FILES; `settings_lexer.l`'s `<inc>`
//! state, `parser_helper.c`'s `file_include()`/`file_next()`):
//!
//! - a relative pattern is relative to the directory of the file holding
//!   the `include`;
//! - the pattern may hold shell wildcards (`*`, `?`, `[a-z]`, `[!x]`), in
//!   any path component; what matches is read in sorted order, as glob(3)
//!   returns it, and only regular files are read;
//! - a pattern with wildcards that matches nothing includes nothing, as in
//!   strongSwan; a plain path that does not exist is an error (strongSwan
//!   ignores it too, flowsec refuses to lose a file silently);
//! - the settings and sections of an included file are added to the
//!   section the `include` is in.
//!
//! Unlike strongSwan, whose lexer switches to the included file in the
//! middle of its token stream, each included file is read as a whole:
//! a section must open and close in the same file. Includes nest at most
//! [`MAX_INCLUDE_DEPTH`] deep and a file including itself (directly or
//! through others) is an error; strongSwan has neither check.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use zeroize::Zeroizing;

use super::lexer::{parse_tree_in, Section};
use super::{ConfigError, ConfigErrorKind, MAX_FILE_LEN};

/// Deepest nesting of included files (implementation limit; strongSwan's
/// own configurations nest two deep: `swanctl.conf` includes `conf.d/*`).
pub const MAX_INCLUDE_DEPTH: usize = 8;

/// The state of one parse across its included files: which files are
/// being read, to refuse a loop, and how deep.
pub(crate) struct Includes {
    /// The files being read, outermost first, as canonical paths.
    reading: Vec<PathBuf>,
    /// How many includes deep the file being read is (0: the main file).
    depth: usize,
}

impl Includes {
    /// For a parse of `main` (a path; a name that is no file starts no
    /// loop check of its own).
    pub(crate) fn new(main: &str) -> Includes {
        Includes {
            reading: std::fs::canonicalize(main).into_iter().collect(),
            depth: 0,
        }
    }

    /// The root sections of the files `pattern` names, from `include`
    /// on `line` of `file` in the section at `key`.
    pub(crate) fn read(
        &mut self,
        file: &str,
        line: usize,
        key: &str,
        pattern: &str,
    ) -> Result<Vec<Section>, ConfigError> {
        let err = |kind| ConfigError::new(file, line, key.to_string(), kind);
        if pattern.is_empty() {
            return Err(err(ConfigErrorKind::IncludeEmpty));
        }
        if self.depth >= MAX_INCLUDE_DEPTH {
            return Err(err(ConfigErrorKind::IncludeTooDeep));
        }
        let full = relative_to(file, pattern);
        let paths = if has_wildcard(pattern) {
            glob(&full)
        } else {
            match std::fs::metadata(&full) {
                Ok(m) if m.is_file() => vec![full],
                Ok(_) => return Err(err(ConfigErrorKind::IncludeNotFile(show(&full)))),
                Err(e) => return Err(err(ConfigErrorKind::IncludeRead(show(&full), e))),
            }
        };
        let mut roots = Vec::with_capacity(paths.len());
        for path in paths {
            let canonical = std::fs::canonicalize(&path)
                .map_err(|e| err(ConfigErrorKind::IncludeRead(show(&path), e)))?;
            if self.reading.contains(&canonical) {
                return Err(err(ConfigErrorKind::IncludeLoop(show(&path))));
            }
            let name = show(&path);
            let text = read_text(&path)?;
            self.reading.push(canonical);
            self.depth += 1;
            let root = parse_tree_in(&name, &text, Some(Arc::from(name.as_str())), self);
            self.depth -= 1;
            self.reading.pop();
            roots.push(root?);
        }
        Ok(roots)
    }
}

/// A file's text (at most [`MAX_FILE_LEN`] bytes of UTF-8), wiped when
/// dropped: it may hold secrets.
pub(crate) fn read_text(path: &Path) -> Result<Zeroizing<String>, ConfigError> {
    let name = show(path);
    let fail = |kind| ConfigError::new(&name, 0, String::new(), kind);
    let meta = std::fs::metadata(path).map_err(|e| fail(ConfigErrorKind::Read(e)))?;
    if meta.len() > MAX_FILE_LEN {
        return Err(fail(ConfigErrorKind::TooLarge));
    }
    let bytes = Zeroizing::new(std::fs::read(path).map_err(|e| fail(ConfigErrorKind::Read(e)))?);
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        let line = 1 + bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        ConfigError::new(&name, line, String::new(), ConfigErrorKind::NotUtf8)
    })?;
    Ok(Zeroizing::new(text.to_string()))
}

fn show(path: &Path) -> String {
    path.display().to_string()
}

/// `pattern` as parser_helper.c's `file_include()` bases it: absolute as
/// given, else in the directory of `file`.
fn relative_to(file: &str, pattern: &str) -> PathBuf {
    let p = Path::new(pattern);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    match Path::new(file).parent() {
        Some(dir) => dir.join(p),
        None => p.to_path_buf(),
    }
}

fn has_wildcard(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The regular files matching `pattern`, component by component, each
/// directory's matches sorted (glob(3) without `GLOB_NOSORT`).
fn glob(pattern: &Path) -> Vec<PathBuf> {
    let mut found = vec![PathBuf::new()];
    for comp in pattern.components() {
        let Component::Normal(part) = comp else {
            found.iter_mut().for_each(|f| f.push(comp));
            continue;
        };
        let part = part.to_string_lossy();
        if !has_wildcard(&part) {
            found.iter_mut().for_each(|f| f.push(&*part));
            continue;
        }
        let pat: Vec<char> = part.chars().collect();
        let mut next = Vec::new();
        for dir in &found {
            let at = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            let Ok(entries) = std::fs::read_dir(at) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                // glob(3): a leading '.' is matched only by a '.'.
                .filter(|n| !n.starts_with('.') || pat.first() == Some(&'.'))
                .filter(|n| wildmatch(&pat, &n.chars().collect::<Vec<_>>()))
                .collect();
            names.sort();
            next.extend(names.into_iter().map(|n| dir.join(n)));
        }
        found = next;
    }
    found.retain(|p| p.is_file());
    found
}

/// fnmatch(3) without flags: `*`, `?`, `[...]` (`!` or `^` negates,
/// `a-z` ranges), `\` quotes the next character.
fn wildmatch(p: &[char], n: &[char]) -> bool {
    match p.first() {
        None => n.is_empty(),
        Some('*') => (0..=n.len()).any(|i| wildmatch(&p[1..], &n[i..])),
        Some('?') => !n.is_empty() && wildmatch(&p[1..], &n[1..]),
        Some('[') => match (n.first(), class(&p[1..])) {
            (Some(&c), Some((set, negate, rest))) => {
                set.matches(c) != negate && wildmatch(rest, &n[1..])
            }
            (None, _) => false,
            (Some(_), None) => n[0] == '[' && wildmatch(&p[1..], &n[1..]),
        },
        Some('\\') if p.len() > 1 => n.first() == Some(&p[1]) && wildmatch(&p[2..], &n[1..]),
        Some(c) => n.first() == Some(c) && wildmatch(&p[1..], &n[1..]),
    }
}

/// The inside of a `[...]`: its characters and ranges.
struct Class<'a>(&'a [char]);

impl Class<'_> {
    fn matches(&self, c: char) -> bool {
        let s = self.0;
        let mut i = 0;
        while i < s.len() {
            if i + 2 < s.len() && s[i + 1] == '-' {
                if (s[i]..=s[i + 2]).contains(&c) {
                    return true;
                }
                i += 3;
            } else {
                if s[i] == c {
                    return true;
                }
                i += 1;
            }
        }
        false
    }
}

/// After a `[`: the class, whether it is negated, and what follows its
/// `]` (a `]` first in the class is one of its characters); `None` if it
/// is not closed.
fn class(p: &[char]) -> Option<(Class<'_>, bool, &[char])> {
    let negate = matches!(p.first(), Some('!' | '^'));
    let body = if negate { &p[1..] } else { p };
    let close = 1 + body.get(1..)?.iter().position(|&c| c == ']')?;
    Some((Class(&body[..close]), negate, &body[close + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, n: &str) -> bool {
        wildmatch(
            &p.chars().collect::<Vec<_>>(),
            &n.chars().collect::<Vec<_>>(),
        )
    }

    #[test]
    fn wildcards_like_fnmatch() {
        assert!(m("*.conf", "a.conf"));
        assert!(m("*.conf", ".conf"));
        assert!(!m("*.conf", "a.conf~"));
        assert!(m("a?c", "abc"));
        assert!(!m("a?c", "ac"));
        assert!(m("[a-c]x", "bx"));
        assert!(!m("[!a-c]x", "bx"));
        assert!(m("[^a-c]x", "dx"));
        assert!(m("[]]", "]"));
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "a"));
        assert!(m("[x", "[x"));
        assert!(m("*a*b*", "xxaxxbxx"));
    }
}
